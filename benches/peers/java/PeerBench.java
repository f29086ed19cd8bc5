import com.scurrilous.circe.checksum.Crc32cIntChecksum;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.FileInputStream;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;
import org.apache.pulsar.common.api.proto.KeyValue;
import org.apache.pulsar.common.api.proto.MessageMetadata;
import org.apache.pulsar.common.api.proto.SingleMessageMetadata;
import org.apache.pulsar.common.compression.CompressionCodec;
import org.apache.pulsar.common.compression.CompressionCodecProvider;
import org.apache.pulsar.common.protocol.Commands;

/**
 * The Java side of the peer benchmark (benches/peers/run.py): Apache Pulsar 4.2.4's own read path over
 * stored entries, driven line by line on stdin.
 *
 * <pre>
 *   load NAME PATH          -> "ok ENTRIES"
 *   check NAME MODE         -> "totals MESSAGES VALUE_BYTES KEY_BYTES PROPERTIES CRC32"
 *   time NAME MODE REPS     -> "time CPU_NS WALL_NS"
 * </pre>
 *
 * MODE "all": per message the key, the properties (as a map, as a consumer's Message exposes
 * them), the event time and the value copied to a byte[]; "proj": ledger id, entry id, batch
 * index, key, value and publish time only. Per entry: skipBrokerEntryMetadataIfExist, the CRC32C
 * check, parseMessageMetadata, the codec's decode, deSerializeSingleMessageInBatch per record.
 */
public final class PeerBench {

    /** Per-message output of one decode, folded so that nothing can be optimised away. */
    static final class Sink {
        long messages;
        long valueBytes;
        long keyBytes;
        long properties;
        long fold;
        CRC32 crc;  // only when checking
        byte[] last;

        void message(long ledger, long entry, int index, String key, Map<String, String> props,
                long eventTime, long publishTime, byte[] value) {
            messages++;
            valueBytes += value.length;
            if (key != null) {
                keyBytes += crc == null ? key.length() : key.getBytes(StandardCharsets.UTF_8).length;
            }
            if (props != null) {
                properties += props.size();
            }
            fold += ledger ^ entry ^ index ^ eventTime ^ publishTime;
            if (value.length > 0) {
                fold += value[value.length >> 1];
            }
            last = value;
            if (crc != null) {
                crc.update(value);
            }
        }
    }

    private static final class Corpus {
        final List<byte[]> entries = new ArrayList<>();
    }

    private final Map<String, Corpus> corpora = new HashMap<>();
    private final MessageMetadata md = new MessageMetadata();
    private final SingleMessageMetadata smm = new SingleMessageMetadata();

    static Map<String, String> propertiesOf(List<KeyValue> list) {
        if (list.isEmpty()) {
            return Map.of();
        }
        Map<String, String> m = new HashMap<>(list.size() * 2);
        for (KeyValue kv : list) {
            m.put(kv.getKey(), kv.getValue());
        }
        return m;
    }

    static byte[] copy(ByteBuf b) {
        byte[] out = new byte[b.readableBytes()];
        b.getBytes(b.readerIndex(), out);
        return out;
    }

    void decodeEntry(byte[] data, long ledger, long entryId, boolean all, Sink sink) throws IOException {
        ByteBuf buf = Unpooled.wrappedBuffer(data);
        try {
            Commands.skipBrokerEntryMetadataIfExist(buf);
            if (Commands.hasChecksum(buf)) {
                int stored = Commands.readChecksum(buf);
                int computed = Crc32cIntChecksum.computeChecksum(buf);
                if (stored != computed) {
                    throw new IOException("checksum mismatch in entry " + entryId);
                }
            }
            Commands.parseMessageMetadata(buf, md);
            long publishTime = md.getPublishTime();
            CompressionCodec codec = CompressionCodecProvider.getCompressionCodec(md.getCompression());
            ByteBuf payload = codec.decode(buf, md.getUncompressedSize());
            try {
                if (!md.hasNumMessagesInBatch()) {
                    String key = md.hasPartitionKey() ? md.getPartitionKey() : null;
                    Map<String, String> props = all ? propertiesOf(md.getPropertiesList()) : null;
                    long eventTime = all && md.hasEventTime() ? md.getEventTime() : 0L;
                    sink.message(ledger, entryId, -1, key, props, eventTime, publishTime, copy(payload));
                    return;
                }
                int n = md.getNumMessagesInBatch();
                for (int i = 0; i < n; i++) {
                    ByteBuf value = Commands.deSerializeSingleMessageInBatch(payload, smm, i, n);
                    try {
                        String key = smm.hasPartitionKey() ? smm.getPartitionKey() : null;
                        Map<String, String> props = all ? propertiesOf(smm.getPropertiesList()) : null;
                        long eventTime = all && smm.hasEventTime() ? smm.getEventTime() : 0L;
                        sink.message(ledger, entryId, i, key, props, eventTime, publishTime, copy(value));
                    } finally {
                        value.release();
                    }
                }
            } finally {
                payload.release();
            }
        } finally {
            buf.release();
        }
    }

    long decodeAll(Corpus c, boolean all, Sink sink) throws IOException {
        List<byte[]> entries = c.entries;
        for (int i = 0; i < entries.size(); i++) {
            decodeEntry(entries.get(i), 1L, i, all, sink);
        }
        return sink.fold;
    }

    static Corpus read(String path) throws IOException {
        Corpus c = new Corpus();
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(path), 1 << 20))) {
            while (true) {
                int len;
                try {
                    len = in.readInt();
                } catch (EOFException e) {
                    break;
                }
                byte[] e = new byte[len];
                in.readFully(e);
                c.entries.add(e);
            }
        }
        return c;
    }

    /**
     * CPU time of the whole process (every thread: the decode, the JIT compilers, the GC) in ns,
     * from each thread's /proc schedstat. OperatingSystemMXBean.getProcessCpuTime() counts in
     * 10 ms ticks here, too coarse for a measurement of a few hundred ms.
     */
    static long processCpuNs() throws IOException {
        long sum = 0;
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
            for (Path t : tasks) {
                try {
                    String s = Files.readString(t.resolve("schedstat"));
                    sum += Long.parseLong(s.substring(0, s.indexOf(' ')));
                } catch (NoSuchFileException e) {
                    // the thread ended meanwhile
                }
            }
        }
        return sum;
    }

    public static void main(String[] args) throws Exception {
        PeerBench bench = new PeerBench();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        long keep = 0;
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split(" ");
            switch (w[0]) {
                case "load" -> {
                    Corpus c = read(w[2]);
                    bench.corpora.put(w[1], c);
                    System.out.println("ok " + c.entries.size());
                }
                case "check" -> {
                    Sink s = new Sink();
                    s.crc = new CRC32();
                    bench.decodeAll(bench.corpora.get(w[1]), w[2].equals("all"), s);
                    System.out.println("totals " + s.messages + " " + s.valueBytes + " " + s.keyBytes + " "
                            + (w[2].equals("all") ? s.properties : -1) + " " + s.crc.getValue());
                }
                case "time" -> {
                    Corpus c = bench.corpora.get(w[1]);
                    boolean all = w[2].equals("all");
                    int reps = Integer.parseInt(w[3]);
                    long cpu0 = processCpuNs();
                    long wall0 = System.nanoTime();
                    for (int r = 0; r < reps; r++) {
                        keep += bench.decodeAll(c, all, new Sink());
                    }
                    long wall = System.nanoTime() - wall0;
                    long cpu = processCpuNs() - cpu0;
                    System.out.println("time " + cpu + " " + wall);
                }
                case "quit" -> {
                    System.err.println("fold " + keep);
                    return;
                }
                default -> throw new IllegalArgumentException("unknown command: " + line);
            }
            System.out.flush();
        }
    }
}
