package io.pulsarentries.realpulsar;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pulsar.client.api.CompressionType;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.transaction.Transaction;

/**
 * The Java side of {@code benches/bench_read_topic.py}: writes the benchmark topic, and drains it
 * with a Java {@link Reader} through the broker, on request, in one warm JVM.
 *
 * <pre>
 *   ReaderBench produce &lt;serviceUrl&gt; &lt;topic&gt; &lt;messages&gt; &lt;valueBytes&gt; &lt;batchMessages&gt; &lt;seed&gt; [keys [txnSize]]
 *       writes &lt;messages&gt; JSON-like values of &lt;valueBytes&gt; bytes each (seeded), batched
 *       (up to &lt;batchMessages&gt; a batch), LZ4, with &lt;keys&gt; distinct keys (0: none), in committed
 *       transactions of &lt;txnSize&gt; messages (0: none); prints one JSON line with the totals.
 *   ReaderBench serve &lt;serviceUrl&gt; &lt;topic&gt; &lt;expectedMessages&gt;
 *       prints "ready", then for each line "drain" on stdin drains the topic with a fresh Reader
 *       from the earliest position (readNext on this thread, each value copied to a byte[]) until
 *       &lt;expectedMessages&gt; arrived, and prints one JSON line: messages, value bytes, entries,
 *       wall seconds, this JVM's CPU seconds, and whether the broker still had more. "quit" ends.
 * </pre>
 *
 * The client runs one IO thread and one listener thread. Logging goes to stderr.
 */
public final class ReaderBench {
    private static final String[] WORDS = {
        "alpha", "beta", "gamma", "sensor", "temperature", "ok", "warn", "error", "user", "order", "payment",
        "eu-west-1", "us-east-2", "true", "false", "null", "checkout",
    };

    private ReaderBench() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: ReaderBench produce <serviceUrl> <topic> <messages> <valueBytes> <batch> <seed> [keys [txnSize]]"
                    + " | ReaderBench serve <serviceUrl> <topic> <expectedMessages>");
            System.exit(2);
        }
        int txnSize = args[0].equals("produce") && args.length > 8 ? Integer.parseInt(args[8]) : 0;
        try (PulsarClient client = PulsarClient.builder()
                .serviceUrl(args[1])
                .enableTransaction(txnSize > 0)
                .ioThreads(1)
                .listenerThreads(1)
                .operationTimeout(60, TimeUnit.SECONDS)
                .build()) {
            switch (args[0]) {
                case "produce":
                    produce(client, args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                            Integer.parseInt(args[5]), Long.parseLong(args[6]),
                            args.length > 7 ? Integer.parseInt(args[7]) : 0, txnSize);
                    break;
                case "serve":
                    serve(client, args[2], Long.parseLong(args[3]));
                    break;
                default:
                    System.err.println("unknown command " + args[0]);
                    System.exit(2);
            }
        }
        System.exit(0);
    }

    /** A JSON-like value of exactly {@code n} bytes (ASCII). */
    static byte[] value(Random rng, int n) {
        StringBuilder sb = new StringBuilder(n + 64);
        sb.append("{\"id\":").append(rng.nextInt(1_000_000_000))
                .append(",\"ts\":").append(1_700_000_000_000L + rng.nextInt(100_000_000))
                .append(",\"user\":\"u").append(rng.nextInt(100_000))
                .append("\",\"amount\":").append(rng.nextInt(10_000)).append('.').append(rng.nextInt(100))
                .append(",\"events\":[");
        while (sb.length() < n) {
            sb.append("{\"k\":\"").append(WORDS[rng.nextInt(WORDS.length)])
                    .append("\",\"v\":").append(rng.nextInt(1_000_000))
                    .append(",\"s\":\"").append(WORDS[rng.nextInt(WORDS.length)]).append("\"},");
        }
        sb.setLength(n);
        return sb.toString().getBytes(StandardCharsets.US_ASCII);
    }

    /** {@code keys} > 0: message i has the key {@code k<i % keys>}; 0: no keys. */
    /** {@code txnSize} > 0: the messages are sent in transactions of that many, each committed. */
    static void produce(PulsarClient client, String topic, int messages, int valueBytes, int batch, long seed, int keys,
            int txnSize) throws Exception {
        Random rng = new Random(seed);
        long started = System.nanoTime();
        AtomicLong failed = new AtomicLong();
        AtomicReference<Throwable> firstError = new AtomicReference<>();
        long bytes = 0;
        try (Producer<byte[]> producer = client.newProducer(Schema.BYTES)
                .topic(topic)
                .producerName("reader-bench")
                .compressionType(CompressionType.LZ4)
                .enableBatching(true)
                .batchingMaxMessages(batch)
                .batchingMaxBytes(4 * 1024 * 1024)
                .batchingMaxPublishDelay(20, TimeUnit.MILLISECONDS)
                .blockIfQueueFull(true)
                .sendTimeout(txnSize > 0 ? 0 : 120, TimeUnit.SECONDS)
                .create()) {
            CompletableFuture<MessageId> last = null;
            Transaction txn = null;
            for (int i = 0; i < messages; i++) {
                byte[] v = value(rng, valueBytes);
                bytes += v.length;
                if (txnSize > 0 && txn == null) {
                    txn = client.newTransaction().withTransactionTimeout(1, TimeUnit.MINUTES).build()
                            .get(60, TimeUnit.SECONDS);
                }
                var message = txn != null ? producer.newMessage(txn) : producer.newMessage();
                last = keys > 0 ? message.key("k" + (i % keys)).value(v).sendAsync() : message.value(v).sendAsync();
                if (txn != null && (i + 1) % txnSize == 0) {
                    producer.flush();
                    txn.commit().get(60, TimeUnit.SECONDS);
                    txn = null;
                }
                last.whenComplete((id, e) -> {
                    if (e != null) {
                        failed.incrementAndGet();
                        firstError.compareAndSet(null, e);
                    }
                });
            }
            producer.flush();
            if (txn != null) {
                txn.commit().get(60, TimeUnit.SECONDS);
            }
            if (last != null) {
                last.get(120, TimeUnit.SECONDS);
            }
        }
        if (failed.get() != 0) {
            throw new IllegalStateException(failed.get() + " sends failed", firstError.get());
        }
        System.out.printf("{\"messages\": %d, \"value_bytes\": %d, \"seconds\": %.3f}%n",
                messages, bytes, (System.nanoTime() - started) / 1e9);
        System.out.flush();
    }

    static double cpuSeconds() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                        .getProcessCpuTime()
                / 1e9;
    }

    static void serve(PulsarClient client, String topic, long expected) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.equals("quit")) {
                return;
            }
            if (!line.equals("drain")) {
                System.out.println("{\"error\": \"unknown request\"}");
                System.out.flush();
                continue;
            }
            System.out.println(drain(client, topic, expected));
            System.out.flush();
        }
    }

    /** One timed drain: a fresh Reader from the earliest position, until {@code expected} messages. */
    static String drain(PulsarClient client, String topic, long expected) throws Exception {
        double cpu0 = cpuSeconds();
        long t0 = System.nanoTime();
        long messages = 0;
        long bytes = 0;
        long entries = 0;
        long lastLedger = Long.MIN_VALUE;
        long lastEntry = Long.MIN_VALUE;
        boolean timedOut = false;
        try (Reader<byte[]> reader = client.newReader(Schema.BYTES)
                .topic(topic)
                .startMessageId(MessageId.earliest)
                .create()) {
            while (messages < expected) {
                Message<byte[]> msg = reader.readNext(30, TimeUnit.SECONDS);
                if (msg == null) {
                    timedOut = true;
                    break;
                }
                byte[] data = msg.getData();
                messages++;
                bytes += data.length;
                MessageIdAdv id = (MessageIdAdv) msg.getMessageId();
                if (id.getLedgerId() != lastLedger || id.getEntryId() != lastEntry) {
                    entries++;
                    lastLedger = id.getLedgerId();
                    lastEntry = id.getEntryId();
                }
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            double cpu = cpuSeconds() - cpu0;
            // Outside the timing: the broker has nothing past what was counted.
            boolean more = !timedOut && reader.hasMessageAvailable();
            return String.format(
                    "{\"messages\": %d, \"value_bytes\": %d, \"entries\": %d, \"seconds\": %.6f,"
                            + " \"cpu_seconds\": %.6f, \"more\": %b, \"timed_out\": %b}",
                    messages, bytes, entries, seconds, cpu, more, timedOut);
        }
    }
}
