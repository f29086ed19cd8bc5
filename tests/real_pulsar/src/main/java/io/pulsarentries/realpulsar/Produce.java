package io.pulsarentries.realpulsar;

import static io.pulsarentries.realpulsar.Corpus.*;
import static io.pulsarentries.realpulsar.CorpusKeys.*;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.CompressionType;
import org.apache.pulsar.client.api.CryptoKeyReader;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.TypedMessageBuilder;
import org.apache.pulsar.client.api.transaction.Transaction;

/**
 * {@code Corpus produce}: the Java topics of the corpus (see {@link Corpus}), and what the producers
 * were told (message ids).
 */
final class Produce {
    private Produce() {}

    static final CompressionType[] CODECS = {
        CompressionType.NONE, CompressionType.LZ4, CompressionType.ZLIB, CompressionType.ZSTD, CompressionType.SNAPPY,
    };

    static ObjectNode produce(PulsarClient client, PulsarAdmin admin, File dir) throws Exception {
        ObjectNode result = NODES.objectNode();
        result.set("java-mixed", produceMixed(client, NS + "java-mixed"));
        result.set("java-chunked", produceChunked(client, NS + "java-chunked"));
        result.set("java-txn", produceTransactions(client, NS + "java-txn"));
        admin.topics().createPartitionedTopic(NS + "java-partitioned", 3);
        result.set("java-partitioned", producePartitioned(client, NS + "java-partitioned"));
        result.set("java-tombstoned", produceTombstoned(client, NS + "java-tombstoned"));
        result.set("java-encrypted", produceEncrypted(client, NS + "java-encrypted", newKeys(dir)));
        result.set("schemas", Schemas.produce(client));
        return result;
    }

    static byte[] text(String s, int repeat) {
        return s.repeat(repeat).getBytes(StandardCharsets.UTF_8);
    }

    /** Every codec, batched and not: keys (some absent), null values, properties, event times. */
    static ArrayNode produceMixed(PulsarClient client, String topic) throws Exception {
        List<Producer<byte[]>> producers = new ArrayList<>();
        List<CompletableFuture<MessageId>> sent = new ArrayList<>();
        List<String> labels = new ArrayList<>();
        for (CompressionType codec : CODECS) {
            for (boolean batching : new boolean[] {true, false}) {
                String name = "java-" + codec.name().toLowerCase() + (batching ? "-batched" : "-single");
                Producer<byte[]> p = client.newProducer(Schema.BYTES)
                        .topic(topic)
                        .producerName(name)
                        .compressionType(codec)
                        .enableBatching(batching)
                        .batchingMaxMessages(8)
                        .batchingMaxPublishDelay(50, TimeUnit.MILLISECONDS)
                        .create();
                producers.add(p);
                for (int i = 0; i < 20; i++) {
                    TypedMessageBuilder<byte[]> m = p.newMessage();
                    boolean keyed = i % 5 != 4;
                    if (keyed) {
                        m.key("k" + (i % 7));
                    }
                    if (keyed && i % 6 == 5) {
                        m.value(null); // a tombstone
                    } else {
                        m.value(text(name + "#" + i + ";", 1 + i % 4 * 8));
                    }
                    if (i % 3 == 0) {
                        m.property("i", Integer.toString(i)).property("producer", name);
                    }
                    if (i % 2 == 0) {
                        m.eventTime(EVENT_TIME_BASE + i);
                    }
                    sent.add(m.sendAsync());
                    labels.add(name + "#" + i);
                }
                p.flush();
            }
        }
        ArrayNode ids = NODES.arrayNode();
        for (int i = 0; i < sent.size(); i++) {
            ObjectNode o = id(sent.get(i).get(60, TimeUnit.SECONDS));
            o.put("label", labels.get(i));
            ids.add(o);
        }
        for (Producer<byte[]> p : producers) {
            p.close();
        }
        return ids;
    }

    /** Chunked messages from two producers at once (their chunks interleave), among small ones. */
    static ArrayNode produceChunked(PulsarClient client, String topic) throws Exception {
        Random random = new Random(42);
        List<CompletableFuture<MessageId>> sent = new ArrayList<>();
        List<String> labels = new ArrayList<>();
        List<Producer<byte[]>> producers = new ArrayList<>();
        for (CompressionType codec : new CompressionType[] {CompressionType.NONE, CompressionType.LZ4}) {
            producers.add(client.newProducer(Schema.BYTES)
                    .topic(topic)
                    .producerName("java-chunker-" + codec.name().toLowerCase())
                    .compressionType(codec)
                    .enableBatching(false)
                    .enableChunking(true)
                    .create());
        }
        for (int i = 0; i < 6; i++) {
            for (int p = 0; p < producers.size(); p++) {
                boolean big = i % 2 == 0;
                byte[] value;
                if (big) {
                    value = new byte[150_000 + 10_000 * i];
                    random.nextBytes(value); // incompressible: stays chunked under LZ4
                } else {
                    value = text("small-" + p + "-" + i, 3);
                }
                TypedMessageBuilder<byte[]> m = producers.get(p).newMessage()
                        .key("c" + (i % 3))
                        .value(value)
                        .property("size", Integer.toString(value.length))
                        .eventTime(EVENT_TIME_BASE + 1000 + i);
                sent.add(m.sendAsync());
                labels.add(producers.get(p).getProducerName() + "#" + i);
            }
        }
        ArrayNode ids = NODES.arrayNode();
        for (int i = 0; i < sent.size(); i++) {
            ObjectNode o = id(sent.get(i).get(60, TimeUnit.SECONDS));
            o.put("label", labels.get(i));
            ids.add(o);
        }
        for (Producer<byte[]> p : producers) {
            p.close();
        }
        return ids;
    }

    /** Keyed messages in committed and aborted transactions, batched and not, plus plain ones. */
    static ObjectNode produceTransactions(PulsarClient client, String topic) throws Exception {
        Producer<byte[]> batched = client.newProducer(Schema.BYTES)
                .topic(topic)
                .producerName("java-txn-batched")
                .compressionType(CompressionType.LZ4)
                .enableBatching(true)
                .batchingMaxPublishDelay(20, TimeUnit.MILLISECONDS)
                .sendTimeout(0, TimeUnit.SECONDS)
                .create();
        Producer<byte[]> single = client.newProducer(Schema.BYTES)
                .topic(topic)
                .producerName("java-txn-single")
                .enableBatching(false)
                .sendTimeout(0, TimeUnit.SECONDS)
                .create();
        ObjectNode result = NODES.objectNode();
        ArrayNode committed = result.putArray("committed");
        ArrayNode aborted = result.putArray("aborted");
        ArrayNode plain = result.putArray("plain");
        for (int t = 0; t < 6; t++) {
            Transaction txn = client.newTransaction().withTransactionTimeout(2, TimeUnit.MINUTES).build().get();
            List<CompletableFuture<MessageId>> futures = new ArrayList<>();
            for (int j = 0; j < 3; j++) {
                futures.add(batched.newMessage(txn).key("t" + (j + t) % 4)
                        .value(text("txn" + t + "-b" + j, 4)).property("txn", Integer.toString(t)).sendAsync());
                futures.add(single.newMessage(txn).key("t" + (j + t + 1) % 4)
                        .value(text("txn" + t + "-s" + j, 4)).eventTime(EVENT_TIME_BASE + 2000 + t).sendAsync());
            }
            batched.flush();
            ArrayNode ids = NODES.arrayNode();
            for (CompletableFuture<MessageId> f : futures) {
                ids.add(id(f.get(60, TimeUnit.SECONDS)));
            }
            boolean commit = t % 2 == 0;
            if (commit) {
                txn.commit().get(60, TimeUnit.SECONDS);
                committed.add(ids);
            } else {
                txn.abort().get(60, TimeUnit.SECONDS);
                aborted.add(ids);
            }
            // A message outside any transaction between them.
            plain.add(id(single.newMessage().key("t" + t % 4).value(text("plain" + t, 4)).send()));
        }
        batched.close();
        single.close();
        return result;
    }

    /** A partitioned topic (3 partitions), batched ZSTD, keys routed by hash. */
    static ArrayNode producePartitioned(PulsarClient client, String topic) throws Exception {
        Producer<byte[]> p = client.newProducer(Schema.BYTES)
                .topic(topic)
                .producerName("java-partitioned")
                .compressionType(CompressionType.ZSTD)
                .enableBatching(true)
                .batchingMaxMessages(5)
                .batchingMaxPublishDelay(20, TimeUnit.MILLISECONDS)
                .create();
        List<CompletableFuture<MessageId>> sent = new ArrayList<>();
        for (int i = 0; i < 90; i++) {
            TypedMessageBuilder<byte[]> m = p.newMessage().key("p" + (i % 11)).value(text("part-" + i, 5));
            if (i % 4 == 0) {
                m.property("i", Integer.toString(i));
            }
            sent.add(m.sendAsync());
            if (i % 15 == 14) {
                p.flush();
            }
        }
        p.flush();
        ArrayNode ids = NODES.arrayNode();
        for (CompletableFuture<MessageId> f : sent) {
            ids.add(id(f.get(60, TimeUnit.SECONDS)));
        }
        p.close();
        return ids;
    }

    /** Batched keyed values, then a tombstone for every key: compaction leaves nothing live. */
    static ArrayNode produceTombstoned(PulsarClient client, String topic) throws Exception {
        Producer<byte[]> p = client.newProducer(Schema.BYTES)
                .topic(topic)
                .producerName("java-tombstoned")
                .compressionType(CompressionType.ZLIB)
                .enableBatching(true)
                .batchingMaxMessages(4)
                .batchingMaxPublishDelay(20, TimeUnit.MILLISECONDS)
                .create();
        List<CompletableFuture<MessageId>> sent = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            for (int k = 0; k < 5; k++) {
                sent.add(p.newMessage().key("d" + k).value(text("r" + round + "-d" + k, 3)).sendAsync());
            }
        }
        for (int k = 0; k < 5; k++) {
            sent.add(p.newMessage().key("d" + k).value(null).sendAsync());
        }
        p.flush();
        ArrayNode ids = NODES.arrayNode();
        for (CompletableFuture<MessageId> f : sent) {
            ids.add(id(f.get(60, TimeUnit.SECONDS)));
        }
        p.close();
        return ids;
    }

    /** End-to-end encrypted keyed messages, batched and not. */
    static ArrayNode produceEncrypted(PulsarClient client, String topic, CryptoKeyReader keys) throws Exception {
        List<CompletableFuture<MessageId>> sent = new ArrayList<>();
        List<Producer<byte[]>> producers = new ArrayList<>();
        for (boolean batching : new boolean[] {true, false}) {
            producers.add(client.newProducer(Schema.BYTES)
                    .topic(topic)
                    .producerName("java-encrypted-" + (batching ? "batched" : "single"))
                    .addEncryptionKey("corpus-key")
                    .cryptoKeyReader(keys)
                    .compressionType(CompressionType.LZ4)
                    .enableBatching(batching)
                    .batchingMaxMessages(3)
                    .batchingMaxPublishDelay(20, TimeUnit.MILLISECONDS)
                    .create());
        }
        // Single messages first, then the batches: the topic (and its compacted ledger) ends in an encrypted
        // batch, whose last message id the broker gives as its last index without decrypting it.
        for (Producer<byte[]> p : List.of(producers.get(1), producers.get(0))) {
            for (int i = 0; i < 12; i++) {
                sent.add(p.newMessage().key("e" + (i % 4)).value(text(p.getProducerName() + "#" + i, 4)).sendAsync());
            }
            p.flush();
        }
        ArrayNode ids = NODES.arrayNode();
        for (CompletableFuture<MessageId> f : sent) {
            ids.add(id(f.get(60, TimeUnit.SECONDS)));
        }
        for (Producer<byte[]> p : producers) {
            p.close();
        }
        return ids;
    }
}
