package io.pulsarentries.realpulsar;

import static io.pulsarentries.realpulsar.CorpusKeys.*;
import static io.pulsarentries.realpulsar.Produce.produce;
import static io.pulsarentries.realpulsar.Truth.truth;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.PropertyAccessor;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.api.BookKeeper;
import org.apache.bookkeeper.client.api.DigestType;
import org.apache.bookkeeper.client.api.LedgerEntries;
import org.apache.bookkeeper.client.api.LedgerEntry;
import org.apache.bookkeeper.client.api.ReadHandle;
import org.apache.bookkeeper.conf.ClientConfiguration;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.AuthenticationFactory;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.TopicMessageId;

/**
 * The Java-client side of the real-Pulsar test corpus, and the ground truth.
 *
 * <pre>
 *   Corpus produce &lt;serviceUrl&gt; &lt;webUrl&gt; &lt;out.json&gt;
 *       writes the Java topics (every codec x batching, keys, null values, properties, event
 *       times, chunked messages, committed and aborted transactions, a partitioned topic, a topic
 *       whose every key ends in a tombstone, end-to-end encrypted messages) and
 *       records what the producers were told (message ids).
 *   Corpus truth &lt;serviceUrl&gt; &lt;webUrl&gt; &lt;out.json&gt; &lt;topic[:compacted][:seek]&gt;...
 *       for each topic (in parallel): internal-stats; what a Reader receives from the earliest
 *       position, plain and (with ":compacted") readCompacted plus getLastMessageIds of that
 *       compacted reader; (with ":seek") the first message a Reader receives after
 *       seek-by-timestamp, for a few timestamps.
 *   Corpus encrypted &lt;serviceUrl&gt; &lt;webUrl&gt; &lt;out.json&gt; &lt;topic&gt;
 *       end-to-end encrypted messages of every codec, batched, single and chunked, with the keys
 *       in out's directory ({@link EncryptedTopic}).
 *   Corpus txnstream &lt;serviceUrl&gt; &lt;webUrl&gt; &lt;out.json&gt; &lt;topic&gt; &lt;stopFile&gt;
 *       transactions, committed and aborted, until stopFile exists ({@link TxnStream}).
 *   Corpus ledger &lt;zkPort&gt; &lt;ledgerId&gt; &lt;out.json&gt;
 *       the raw entries of one closed ledger, read with BookKeeper's client through ZooKeeper
 *       metadata (a standalone in ZooKeeper mode), without recovery (never fences): e.g. the
 *       broker's compacted ledger, whose entries are its records.
 * </pre>
 *
 * The commands live in {@link Produce}, {@link Truth} (with the keys of {@link CorpusKeys}) and
 * {@link #ledger} below, with the JSON shapes they share.
 *
 * Messages use Schema.BYTES. JSON bytes are base64. Logging goes to stderr.
 */
public final class Corpus {
    static final ObjectMapper JSON = new ObjectMapper()
            .setVisibility(PropertyAccessor.FIELD, JsonAutoDetect.Visibility.ANY)
            .enable(SerializationFeature.INDENT_OUTPUT);
    static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    static final String NS = "persistent://public/default/";
    /** Event times: a fixed base, so tests can recognise them. */
    static final long EVENT_TIME_BASE = 1_700_000_000_000L;

    private Corpus() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: Corpus produce|truth <serviceUrl> <webUrl> <out.json> [topic[:compacted][:seek]...]"
                    + " | Corpus ledger <zkPort> <ledgerId> <out.json>");
            System.exit(2);
        }
        if (args[0].equals("ledger")) {
            JSON.writeValue(new File(args[3]), ledger(Integer.parseInt(args[1]), Long.parseLong(args[2])));
            System.exit(0);
        }
        String serviceUrl = args[1];
        String webUrl = args[2];
        File out = new File(args[3]);
        ObjectNode result;
        // A broker that requires token authentication: the token comes in the environment.
        String token = System.getenv("CORPUS_AUTH_TOKEN");
        var clientBuilder = PulsarClient.builder()
                .serviceUrl(serviceUrl)
                .enableTransaction(token == null)
                .operationTimeout(60, TimeUnit.SECONDS);
        var adminBuilder = PulsarAdmin.builder().serviceHttpUrl(webUrl);
        if (token != null) {
            clientBuilder.authentication(AuthenticationFactory.token(token));
            adminBuilder.authentication(AuthenticationFactory.token(token));
        }
        try (PulsarClient client = clientBuilder.build();
                PulsarAdmin admin = adminBuilder.build()) {
            switch (args[0]) {
                case "produce":
                    result = produce(client, admin, out.getAbsoluteFile().getParentFile());
                    break;
                case "export":
                    result = ExportTopic.produce(client, args[4], args[5]);
                    break;
                case "txnstream":
                    result = TxnStream.produce(client, args[4], new File(args[5]));
                    break;
                case "encrypted":
                    result = EncryptedTopic.produce(client, args[4], out.getAbsoluteFile().getParentFile());
                    break;
                case "truth":
                    List<String> topics = new ArrayList<>(List.of(args).subList(4, args.length));
                    keys = storedKeys(out.getAbsoluteFile().getParentFile());
                    result = truth(client, admin, topics);
                    break;
                default:
                    System.err.println("unknown command " + args[0]);
                    System.exit(2);
                    return;
            }
        }
        JSON.writeValue(out, result);
        // Client threads (netty, timers) may linger; the work is done.
        System.exit(0);
    }

    // ------------------------------------------------------------------------------- ledger

    static ObjectNode ledger(int zkPort, long ledgerId) throws Exception {
        ClientConfiguration conf = new ClientConfiguration();
        conf.setMetadataServiceUri("zk+hierarchical://127.0.0.1:" + zkPort + "/ledgers");
        ObjectNode out = NODES.objectNode();
        try (BookKeeper bk = BookKeeper.newBuilder(conf).build();
                ReadHandle handle = bk.newOpenLedgerOp()
                        .withLedgerId(ledgerId)
                        .withRecovery(false)
                        .withDigestType(DigestType.CRC32)
                        .withPassword(new byte[0])
                        .execute()
                        .get(60, TimeUnit.SECONDS)) {
            out.put("ledger_id", ledgerId);
            out.put("last_add_confirmed", handle.getLastAddConfirmed());
            out.put("digest_type", handle.getLedgerMetadata().getDigestType().name());
            ObjectNode custom = out.putObject("custom_metadata");
            for (Map.Entry<String, byte[]> e : handle.getLedgerMetadata().getCustomMetadata().entrySet()) {
                custom.put(e.getKey(), new String(e.getValue(), StandardCharsets.UTF_8));
            }
            ArrayNode entries = out.putArray("entries");
            if (handle.getLastAddConfirmed() >= 0) {
                try (LedgerEntries read = handle.read(0, handle.getLastAddConfirmed())) {
                    for (LedgerEntry e : read) {
                        ObjectNode o = entries.addObject();
                        o.put("entry_id", e.getEntryId());
                        o.put("data", Base64.getEncoder().encodeToString(e.getEntryBytes()));
                    }
                }
            }
        }
        return out;
    }

    static long entryTime(com.fasterxml.jackson.databind.JsonNode m) {
        return m.path("broker_publish_time").asLong(m.path("publish_time").asLong());
    }

    // ------------------------------------------------------------------------------- JSON

    static ObjectNode id(MessageId id) {
        ObjectNode o = NODES.objectNode();
        o.put("repr", id.toString());
        if (id instanceof MessageIdAdv) {
            MessageIdAdv a = (MessageIdAdv) id;
            o.put("ledger_id", a.getLedgerId());
            o.put("entry_id", a.getEntryId());
            o.put("partition", a.getPartitionIndex());
            o.put("batch_index", a.getBatchIndex());
            o.put("batch_size", a.getBatchSize());
            MessageIdAdv first = a.getFirstChunkMessageId();
            if (first != null) {
                ObjectNode f = o.putObject("first_chunk");
                f.put("ledger_id", first.getLedgerId());
                f.put("entry_id", first.getEntryId());
                f.put("partition", first.getPartitionIndex());
            }
        }
        if (id instanceof TopicMessageId) {
            o.put("topic", ((TopicMessageId) id).getOwnerTopic());
        }
        return o;
    }

    static ObjectNode message(Message<byte[]> m) {
        ObjectNode o = id(m.getMessageId());
        o.put("producer_name", m.getProducerName());
        o.put("sequence_id", m.getSequenceId());
        if (m.hasKey()) {
            o.put("key", m.getKey());
        } else {
            o.putNull("key");
        }
        o.put("key_b64_encoded", m.hasBase64EncodedKey());
        if (m.hasOrderingKey()) {
            o.put("ordering_key", Base64.getEncoder().encodeToString(m.getOrderingKey()));
        }
        // A null value (tombstone) has neither a value nor data.
        byte[] data = m.getData();
        o.put("null_value", m.getValue() == null);
        if (data == null) {
            o.putNull("value");
        } else {
            o.put("value", Base64.getEncoder().encodeToString(data));
        }
        o.put("size", m.size());
        ObjectNode props = o.putObject("properties");
        for (Map.Entry<String, String> e : m.getProperties().entrySet()) {
            props.put(e.getKey(), e.getValue());
        }
        o.put("publish_time", m.getPublishTime());
        o.put("event_time", m.getEventTime());
        if (m.getBrokerPublishTime().isPresent()) {
            o.put("broker_publish_time", m.getBrokerPublishTime().get());
        } else {
            o.putNull("broker_publish_time");
        }
        if (m.getIndex().isPresent()) {
            o.put("index", m.getIndex().get());
        } else {
            o.putNull("index");
        }
        o.put("redelivery_count", m.getRedeliveryCount());
        return o;
    }
}
