package io.pulsarentries.realpulsar;

import static io.pulsarentries.realpulsar.Corpus.*;
import static io.pulsarentries.realpulsar.CorpusKeys.*;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.ConsumerCryptoFailureAction;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.ReaderBuilder;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.TopicMessageId;
import org.apache.pulsar.common.policies.data.PersistentTopicInternalStats;

/**
 * {@code Corpus truth}: each topic's ground truth (see {@link Corpus}), read with the Java client and
 * the admin API.
 */
final class Truth {
    private Truth() {}

    static ObjectNode truth(PulsarClient client, PulsarAdmin admin, List<String> specs) throws Exception {
        // Topics are independent: read them in parallel (most of the time is spent waiting).
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(6, Math.max(1, specs.size())));
        try {
            List<Future<ObjectNode>> futures = new ArrayList<>();
            for (String spec : specs) {
                futures.add(pool.submit(() -> topicTruth(client, admin, spec)));
            }
            ObjectNode result = NODES.objectNode();
            for (int i = 0; i < specs.size(); i++) {
                result.set(specs.get(i).split(":")[0], futures.get(i).get(10, TimeUnit.MINUTES));
            }
            return result;
        } finally {
            pool.shutdownNow();
        }
    }

    /** One topic's ground truth; spec is {@code name[:compacted][:seek][:typed]}. */
    static ObjectNode topicTruth(PulsarClient client, PulsarAdmin admin, String spec) throws Exception {
        List<String> parts = List.of(spec.split(":"));
        String name = parts.get(0);
        boolean compacted = parts.contains("compacted");
        String topic = NS + name;
        ObjectNode t = NODES.objectNode();
        PersistentTopicInternalStats stats = admin.topics().getInternalStats(topic);
        t.set("internal_stats", JSON.valueToTree(stats));
        ArrayNode plain = readAll(client, topic, false);
        t.set("messages", plain);
        if (compacted) {
            t.set("compacted_messages", readAll(client, topic, true));
            try (Reader<byte[]> reader = reader(client, topic, true)) {
                ArrayNode last = t.putArray("compacted_last_message_ids");
                for (TopicMessageId id : reader.getLastMessageIds()) {
                    last.add(id(id));
                }
            }
        }
        if (parts.contains("seek")) {
            t.set("seeks", seeks(client, topic, plain));
        }
        if (parts.contains("typed")) {
            t.set("typed_messages", Schemas.typedMessages(client, topic));
        }
        return t;
    }

    static Reader<byte[]> reader(PulsarClient client, String topic, boolean compacted) throws Exception {
        ReaderBuilder<byte[]> b = client.newReader(Schema.BYTES)
                .topic(topic)
                .startMessageId(MessageId.earliest)
                .readCompacted(compacted)
                .maxPendingChunkedMessage(64)
                .receiverQueueSize(200);
        if (keys != null) {
            // Decrypted, so that a batch arrives as its messages: undecrypted it would be one message, and a
            // compacted reader, told the batch's last index by the broker, would wait for the others.
            b = b.cryptoKeyReader(keys).cryptoFailureAction(ConsumerCryptoFailureAction.FAIL);
        }
        return b.create();
    }

    static ArrayNode readAll(PulsarClient client, String topic, boolean compacted) throws Exception {
        ArrayNode out = NODES.arrayNode();
        try (Reader<byte[]> reader = reader(client, topic, compacted)) {
            while (reader.hasMessageAvailable()) {
                Message<byte[]> m = reader.readNext(20, TimeUnit.SECONDS);
                if (m == null) {
                    // A compacted reader can stall on the broker's compacted chunks; record it.
                    ObjectNode stall = NODES.objectNode();
                    stall.put("stalled", true);
                    out.add(stall);
                    break;
                }
                out.add(message(m));
            }
        }
        return out;
    }

    /**
     * Seek by timestamp: the first message a fresh Reader receives after seek(t), for a few t
     * taken from the messages' broker publish times (the time the broker seeks by).
     */
    static ArrayNode seeks(PulsarClient client, String topic, ArrayNode messages) throws Exception {
        TreeSet<Long> times = new TreeSet<>();
        int n = messages.size();
        if (n > 0) {
            times.add(entryTime(messages.get(0)) - 1); // before everything: the first message
            for (int i : new int[] {n / 3, (2 * n) / 3}) {
                long t = entryTime(messages.get(i));
                times.add(t); // an entry's own time: that entry (or an earlier one with the same time)
                times.add(t + 1); // just after it
            }
            times.add(entryTime(messages.get(n - 1)) + 1); // after everything: nothing
        }
        long lastTime = n > 0 ? entryTime(messages.get(n - 1)) : Long.MIN_VALUE;
        ArrayNode out = NODES.arrayNode();
        for (long t : times) {
            ObjectNode o = out.addObject();
            o.put("timestamp", t);
            try (Reader<byte[]> reader = reader(client, topic, false)) {
                reader.seek(t);
                // Up to the last message's time a message must come (wait long, the machine may be
                // busy); past it, none should, and a short wait shows that.
                Message<byte[]> m = reader.readNext(t <= lastTime ? 30 : 2, TimeUnit.SECONDS);
                o.set("first", m == null ? NODES.nullNode() : message(m));
            }
        }
        return out;
    }
}
