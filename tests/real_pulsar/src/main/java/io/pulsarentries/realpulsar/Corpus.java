package io.pulsarentries.realpulsar;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.PropertyAccessor;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.api.BookKeeper;
import org.apache.bookkeeper.client.api.DigestType;
import org.apache.bookkeeper.client.api.LedgerEntries;
import org.apache.bookkeeper.client.api.LedgerEntry;
import org.apache.bookkeeper.client.api.ReadHandle;
import org.apache.bookkeeper.conf.ClientConfiguration;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.CompressionType;
import org.apache.pulsar.client.api.ConsumerCryptoFailureAction;
import org.apache.pulsar.client.api.CryptoKeyReader;
import org.apache.pulsar.client.api.EncryptionKeyInfo;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.ReaderBuilder;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.TopicMessageId;
import org.apache.pulsar.client.api.TypedMessageBuilder;
import org.apache.pulsar.client.api.transaction.Transaction;
import org.apache.pulsar.common.policies.data.PersistentTopicInternalStats;

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
 *   Corpus ledger &lt;zkPort&gt; &lt;ledgerId&gt; &lt;out.json&gt;
 *       the raw entries of one closed ledger, read with BookKeeper's client through ZooKeeper
 *       metadata (a standalone in ZooKeeper mode), without recovery (never fences): e.g. the
 *       broker's compacted ledger, whose entries are its records.
 * </pre>
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
        try (PulsarClient client = PulsarClient.builder()
                        .serviceUrl(serviceUrl)
                        .enableTransaction(true)
                        .operationTimeout(60, TimeUnit.SECONDS)
                        .build();
                PulsarAdmin admin = PulsarAdmin.builder().serviceHttpUrl(webUrl).build()) {
            switch (args[0]) {
                case "produce":
                    result = produce(client, admin, out.getAbsoluteFile().getParentFile());
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

    // ------------------------------------------------------------------------------- produce

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

    /** The RSA pair of the encrypted topic, as PEM files in the working directory (truth decrypts with it). */
    static final String PUBLIC_PEM = "corpus-rsa.pub.pem";
    static final String PRIVATE_PEM = "corpus-rsa.pem";

    /** The end-to-end encryption keys; null until produce made them or truth found them. */
    static CryptoKeyReader keys;

    static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n"
                + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }

    /** A fresh RSA pair, written to {@code dir}: the public key as X.509, the private one as PKCS#1 (what
     * Pulsar's MessageCryptoBc reads). */
    static CryptoKeyReader newKeys(File dir) throws Exception {
        KeyPairGenerator gen = KeyPairGenerator.getInstance("RSA");
        gen.initialize(2048);
        KeyPair pair = gen.generateKeyPair();
        byte[] pkcs1 = org.bouncycastle.asn1.pkcs.PrivateKeyInfo.getInstance(pair.getPrivate().getEncoded())
                .parsePrivateKey().toASN1Primitive().getEncoded();
        Files.writeString(new File(dir, PUBLIC_PEM).toPath(), pem("PUBLIC KEY", pair.getPublic().getEncoded()));
        Files.writeString(new File(dir, PRIVATE_PEM).toPath(), pem("RSA PRIVATE KEY", pkcs1));
        return storedKeys(dir);
    }

    /** The keys {@link #newKeys} wrote to {@code dir}, or null. */
    static CryptoKeyReader storedKeys(File dir) throws Exception {
        File pub = new File(dir, PUBLIC_PEM);
        File priv = new File(dir, PRIVATE_PEM);
        if (!pub.exists() || !priv.exists()) {
            return null;
        }
        byte[] pubBytes = Files.readAllBytes(pub.toPath());
        byte[] privBytes = Files.readAllBytes(priv.toPath());
        return new CryptoKeyReader() {
            @Override
            public EncryptionKeyInfo getPublicKey(String keyName, Map<String, String> metadata) {
                return new EncryptionKeyInfo(pubBytes, null);
            }

            @Override
            public EncryptionKeyInfo getPrivateKey(String keyName, Map<String, String> metadata) {
                return new EncryptionKeyInfo(privBytes, null);
            }
        };
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

    // ------------------------------------------------------------------------------- truth

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

    /** One topic's ground truth; spec is {@code name[:compacted][:seek]}. */
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
