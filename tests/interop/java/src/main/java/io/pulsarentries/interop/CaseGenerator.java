package io.pulsarentries.interop;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.function.BiPredicate;
import java.util.function.Consumer;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.RawMessage;
import org.apache.pulsar.client.impl.BatchMessageIdImpl;
import org.apache.pulsar.client.impl.RawBatchConverter;
import org.apache.pulsar.client.impl.RawMessageImpl;
import org.apache.pulsar.common.allocator.PulsarByteBufAllocator;
import org.apache.pulsar.common.api.proto.CompressionType;
import org.apache.pulsar.common.api.proto.MessageIdData;
import org.apache.pulsar.common.api.proto.MessageMetadata;
import org.apache.pulsar.common.compression.CompressionCodec;
import org.apache.pulsar.common.compression.CompressionCodecProvider;
import org.apache.pulsar.common.intercept.AppendBrokerTimestampMetadataInterceptor;
import org.apache.pulsar.common.intercept.AppendIndexMetadataInterceptor;
import org.apache.pulsar.common.intercept.BrokerEntryMetadataInterceptor;
import org.apache.pulsar.common.protocol.Commands;
import org.apache.pulsar.common.protocol.Commands.ChecksumType;
import org.apache.pulsar.common.protocol.Markers;

/**
 * Builds the {@code generate} test cases. Every byte of every entry is produced by Pulsar's
 * own classes; this class only decides what goes in, mirroring what the Java producer
 * ({@code ProducerImpl}, {@code BatchMessageContainerImpl}) and the broker
 * ({@code ManagedLedgerInterceptorImpl}) do with it.
 *
 * <p>Deliberate differences from a live 4.x producer, to get codec coverage:
 * <ul>
 *   <li>the payload is compressed whenever a codec is chosen; the live producer skips
 *       compression for bodies of at most {@code compressMinMsgBodySize} (4 KiB by default),
 *       leaving no {@code compression} field;</li>
 *   <li>"batch of one" keeps the batch framing ({@code num_messages_in_batch = 1}); a live
 *       4.x producer sends a lone batched message as a non-batched entry, but older Java
 *       clients and other clients do write such entries.</li>
 * </ul>
 * Everything that is not Pulsar's output (publish times, sequence ids, payloads) is
 * deterministic; only the broker timestamp and the marker publish times come from the clock.
 */
final class CaseGenerator {

    /** A generated entry plus the messages that went in (null for markers), for a sanity check. */
    record Case(String name, byte[] entry, List<Msg> inputs) {
    }

    private static final CompressionType[] CODECS = {
        CompressionType.NONE, CompressionType.LZ4, CompressionType.ZLIB, CompressionType.ZSTD, CompressionType.SNAPPY,
    };

    private static final String[] WORDS = {
        "pulsar", "bookkeeper", "ledger", "entry", "batch", "topic", "cursor", "broker", "schema", "key",
        "value", "compaction", "retention", "message", "producer", "consumer", "partition", "tenant", "namespace",
        "offload", "checksum", "metadata", "payload", "dispatch", "acknowledge", "subscription", "geo", "replica",
    };

    private final Random rnd = new Random(0x5EED_2024L);
    private final List<Case> cases = new ArrayList<>();
    private long publishTime = 1_700_000_000_000L;
    private long nextSequenceId = 0;

    // One broker-side index counter for the whole run, as a managed ledger would keep.
    private final AppendIndexMetadataInterceptor indexInterceptor = new AppendIndexMetadataInterceptor();
    private final AppendBrokerTimestampMetadataInterceptor timestampInterceptor =
            new AppendBrokerTimestampMetadataInterceptor();

    CaseGenerator() {
        indexInterceptor.recoveryIndexGenerator(999); // as if 1000 messages were already stored
    }

    List<Case> generate() throws IOException {
        for (CompressionType codec : CODECS) {
            String c = codec.name().toLowerCase();
            int[] singleSizes = {1_000, 20_000, 5_000, 60_000, 100_000};
            Msg single = Msg.of(text(singleSizes[codec.ordinal()]))
                    .key("user-" + codec.ordinal())
                    .property("source", "interop")
                    .property("codec", c)
                    .eventTime(1_699_999_999_000L + codec.ordinal());
            addSingle(c + "-single", single, codec, ChecksumType.Crc32c, md -> { });
            addBatch(c + "-batch10", mixedMessages(10), codec, ChecksumType.Crc32c, md -> { });
            Msg lone = Msg.of(text(300)).key("only").property("n", "1").eventTime(1_699_000_000_000L)
                    .seq(nextSequenceId++);
            addBatch(c + "-batch1", List.of(lone), codec, ChecksumType.Crc32c, md -> { });
            addBatch(c + "-batch200", mixedMessages(200), codec, ChecksumType.Crc32c, md -> { });
        }

        // Incompressible payloads up to ~100 KB (codecs fall back to literal/raw blocks).
        addSingle("lz4-single-random-100k", Msg.of(random(100_000)).key("rnd"), CompressionType.LZ4,
                ChecksumType.Crc32c, md -> { });
        addSingle("zstd-single-random-100k", Msg.of(random(100_000)).key("rnd"), CompressionType.ZSTD,
                ChecksumType.Crc32c, md -> { });
        addSingle("snappy-single-random-70k", Msg.of(random(70_000)), CompressionType.SNAPPY,
                ChecksumType.Crc32c, md -> { });

        // Checksum-less form (ChecksumType.None: pre-v6 brokers, KoP).
        addSingle("none-single-no-checksum", Msg.of(text(700)).key("plain"), CompressionType.NONE,
                ChecksumType.None, md -> { });
        addBatch("lz4-batch10-no-checksum", mixedMessages(10), CompressionType.LZ4, ChecksumType.None, md -> { });

        // Empty and null payloads. Java's ZLIB gives zero bytes for empty input.
        addSingle("zlib-single-empty", Msg.of(new byte[0]).key("empty"), CompressionType.ZLIB,
                ChecksumType.Crc32c, md -> { });
        addSingle("lz4-single-empty", Msg.of(new byte[0]), CompressionType.LZ4, ChecksumType.Crc32c, md -> { });
        addSingle("none-single-null-value", Msg.of(null).key("tombstone"), CompressionType.NONE,
                ChecksumType.Crc32c, md -> { });
        addSingle("none-single-null-key", Msg.of(text(50)).nullKey(), CompressionType.NONE,
                ChecksumType.Crc32c, md -> { });
        addSingle("snappy-single-binary-key", Msg.of(text(3_000)).keyBytes(new byte[] {0, 1, -1, -2, 127, -128})
                .orderingKey(new byte[] {9, 8, 7}), CompressionType.SNAPPY, ChecksumType.Crc32c, md -> { });

        // Rarely set header fields on a non-batched message.
        addSingle("lz4-single-replicated-schema-txn-delayed",
                Msg.of(text(2_000)).key("order-17").orderingKey("group-a".getBytes(StandardCharsets.UTF_8))
                        .property("trace", "abc123"),
                CompressionType.LZ4, ChecksumType.Crc32c, md -> md
                        .setReplicatedFrom("us-west")
                        .setSchemaVersion(new byte[] {0, 0, 0, 0, 0, 0, 0, 3})
                        .setTxnidLeastBits(77)
                        .setTxnidMostBits(3)
                        .setDeliverAtTime(1_700_000_060_000L));
        // A transactional batch with a schema version: copied into the header by
        // Commands.initBatchMessageMetadata / BatchMessageContainerImpl.
        addBatch("snappy-batch10-txn-schema", mixedMessages(10), CompressionType.SNAPPY, ChecksumType.Crc32c,
                md -> md.setReplicatedFrom("eu-central")
                        .setSchemaVersion(new byte[] {0, 0, 0, 0, 0, 0, 0, 1})
                        .setTxnidLeastBits(1234)
                        .setTxnidMostBits(1));

        // Broker entry metadata prefixed by Pulsar's broker-side interceptors.
        addWithBrokerMetadata("bem-timestamp-none-single",
                buildSingle(Msg.of(text(400)).key("ts-only"), CompressionType.NONE, ChecksumType.Crc32c, md -> { }),
                true, false);
        addWithBrokerMetadata("bem-index-zlib-batch10",
                buildBatch(mixedMessages(10), CompressionType.ZLIB, ChecksumType.Crc32c, md -> { }), false, true);
        addWithBrokerMetadata("bem-both-zstd-batch200",
                buildBatch(mixedMessages(200), CompressionType.ZSTD, ChecksumType.Crc32c, md -> { }), true, true);
        addWithBrokerMetadata("bem-both-lz4-single-no-checksum",
                buildSingle(Msg.of(text(6_000)).key("no-crc"), CompressionType.LZ4, ChecksumType.None, md -> { }),
                true, true);

        // Batches rewritten by the broker's compactor (RawBatchConverter.rebatchMessage): in
        // 4.2.x dropped members stay as {payload_size 0, compacted_out} placeholders and the
        // header gains compacted_batch_indexes (field 31) and uncompressed_size (even for NONE).
        addCompacted("compacted-none-batch10",
                buildBatch(mixedMessages(10), CompressionType.NONE, ChecksumType.Crc32c, md -> { }));
        addCompacted("compacted-zstd-batch200",
                buildBatch(mixedMessages(200), CompressionType.ZSTD, ChecksumType.Crc32c, md -> { }));
        addCompacted("compacted-lz4-batch10-bem", withBrokerMetadata(
                buildBatch(mixedMessages(10), CompressionType.LZ4, ChecksumType.Crc32c, md -> { }), true, true));

        // Server-side markers (always Crc32c; producer names pulsar.txn.marker / pulsar.marker).
        addMarker("marker-txn-commit", Markers.newTxnCommitMarker(5, 1, 2));
        addMarker("marker-txn-abort", Markers.newTxnAbortMarker(6, 1, 3));
        addMarker("marker-replicated-subscription-snapshot-request",
                Markers.newReplicatedSubscriptionsSnapshotRequest("snapshot-1", "us-east"));
        return cases;
    }

    // ---- message sets ------------------------------------------------------------------------

    /**
     * Deterministic mix of message shapes, cycling through: string key, binary key, empty value,
     * null value, ordering key, null key, no sequence id, unicode, larger random value, empty key.
     */
    private List<Msg> mixedMessages(int n) {
        List<Msg> msgs = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            long seq = nextSequenceId++;
            Msg m = switch (i % 10) {
                case 0 -> Msg.of(text(20 + rnd.nextInt(200))).key("key-" + i)
                        .property("idx", Integer.toString(i)).property("kind", "text")
                        .eventTime(1_699_000_000_000L + i);
                case 1 -> Msg.of(random(1 + rnd.nextInt(300))).keyBytes(random(8));
                case 2 -> Msg.of(new byte[0]);
                case 3 -> Msg.of(null).key("tombstone-" + i);
                case 4 -> Msg.of(text(rnd.nextInt(500))).key("key-" + i)
                        .orderingKey(("ord-" + (i % 3)).getBytes(StandardCharsets.UTF_8))
                        .property("a", "1").property("b", "2").property("c", "");
                case 5 -> Msg.of(text(64)).nullKey();
                // Producers since 2.x always copy the sequence id; older/hand-built batches may not.
                case 6 -> Msg.of(text(10 + rnd.nextInt(100))).key("no-seq");
                case 7 -> Msg.of("héllo wörld ✓ ".repeat(1 + rnd.nextInt(20)).getBytes(StandardCharsets.UTF_8))
                        .key("ключ-" + i).property("emoji", "🎉").eventTime(1_699_000_500_000L + i);
                case 8 -> Msg.of(random(rnd.nextInt(n > 10 ? 1_000 : 6_000)));
                default -> Msg.of(text(rnd.nextInt(300))).key("");
            };
            if (i % 10 != 6) {
                m.seq(seq);
            }
            msgs.add(m);
        }
        return msgs;
    }

    private byte[] text(int size) {
        StringBuilder sb = new StringBuilder(size + 16);
        while (sb.length() < size) {
            sb.append(WORDS[rnd.nextInt(WORDS.length)]).append(rnd.nextInt(8) == 0 ? ".\n" : " ");
        }
        sb.setLength(size);
        return sb.toString().getBytes(StandardCharsets.US_ASCII);
    }

    private byte[] random(int size) {
        byte[] b = new byte[size];
        rnd.nextBytes(b);
        return b;
    }

    // ---- entry construction (Pulsar code does the work) --------------------------------------

    private void addSingle(String name, Msg msg, CompressionType codec, ChecksumType checksum,
            Consumer<MessageMetadata> extra) {
        add(name, buildSingle(msg, codec, checksum, extra));
    }

    private void addBatch(String name, List<Msg> msgs, CompressionType codec, ChecksumType checksum,
            Consumer<MessageMetadata> extra) {
        add(name, buildBatch(msgs, codec, checksum, extra));
    }

    private void add(String name, Built built) {
        cases.add(new Case(name, built.entry(), built.inputs()));
    }

    private record Built(byte[] entry, List<Msg> inputs, int numMessages) {
    }

    /** A non-batched message, as ProducerImpl.sendAsync + updateMessageMetadata build it. */
    private Built buildSingle(Msg msg, CompressionType codec, ChecksumType checksum,
            Consumer<MessageMetadata> extra) {
        if (msg.sequenceId == null) {
            msg.seq(nextSequenceId++); // the producer always assigns one
        }
        MessageMetadata md = msg.toMetadata();
        extra.accept(md);
        md.setProducerName("interop-" + codec.name().toLowerCase());
        md.setPublishTime(publishTime++);

        ByteBuf payload = directBuffer(msg.payload());
        ByteBuf compressed = compress(codec, payload);
        if (codec != CompressionType.NONE) {
            md.setCompression(codec);
        }
        md.setUncompressedSize(msg.payload().length); // written even without compression
        return new Built(serialize(checksum, md, compressed), List.of(msg), 1);
    }

    /**
     * A batch, as BatchMessageContainerImpl builds it: header initialised from the first message
     * (Commands.initBatchMessageMetadata), each message framed by
     * Commands.serializeSingleMessageInBatchWithPayload, the whole buffer compressed, then
     * num_messages_in_batch / sequence ids / txn ids set on the header.
     */
    private Built buildBatch(List<Msg> msgs, CompressionType codec, ChecksumType checksum,
            Consumer<MessageMetadata> extra) {
        String producer = "interop-batch-" + codec.name().toLowerCase();
        long batchPublishTime = publishTime++;
        List<MessageMetadata> mds = new ArrayList<>(msgs.size());
        for (Msg m : msgs) {
            MessageMetadata md = m.toMetadata();
            md.setProducerName(producer).setPublishTime(batchPublishTime);
            mds.add(md);
        }
        // Header-level extras (replication, schema, transaction) belong to the first message
        // and reach the batch header through initBatchMessageMetadata / the container.
        extra.accept(mds.get(0));

        MessageMetadata header = new MessageMetadata();
        MessageMetadata first = mds.get(0);
        header.setSequenceId(first.hasSequenceId() ? first.getSequenceId() : 0);
        long lowestSequenceId = Commands.initBatchMessageMetadata(header, first);

        ByteBuf batch = PulsarByteBufAllocator.DEFAULT.buffer();
        for (int i = 0; i < msgs.size(); i++) {
            ByteBuf payload = directBuffer(msgs.get(i).payload());
            Commands.serializeSingleMessageInBatchWithPayload(mds.get(i), payload, batch);
            payload.release();
        }
        int uncompressedSize = batch.readableBytes();
        ByteBuf compressed = compress(codec, batch);
        if (codec != CompressionType.NONE) {
            // Only set for compressed batches, unlike non-batched messages.
            header.setCompression(codec);
            header.setUncompressedSize(uncompressedSize);
        }
        header.setNumMessagesInBatch(msgs.size()); // present even for a batch of one
        header.setSequenceId(lowestSequenceId);
        MessageMetadata last = mds.get(mds.size() - 1);
        header.setHighestSequenceId(last.hasSequenceId() ? last.getSequenceId() : lowestSequenceId);
        if (first.hasTxnidMostBits()) {
            header.setTxnidMostBits(first.getTxnidMostBits());
        }
        if (first.hasTxnidLeastBits()) {
            header.setTxnidLeastBits(first.getTxnidLeastBits());
        }
        return new Built(serialize(checksum, header, compressed), msgs, msgs.size());
    }

    private void addWithBrokerMetadata(String name, Built built, boolean timestamp, boolean index) {
        add(name, withBrokerMetadata(built, timestamp, index));
    }

    /** Prefix with BrokerEntryMetadata the way ManagedLedgerInterceptorImpl.beforeAddEntry does. */
    private Built withBrokerMetadata(Built built, boolean timestamp, boolean index) {
        Set<BrokerEntryMetadataInterceptor> interceptors = new LinkedHashSet<>();
        if (timestamp) {
            interceptors.add(timestampInterceptor);
        }
        if (index) {
            interceptors.add(indexInterceptor);
        }
        ByteBuf entry = Unpooled.wrappedBuffer(built.entry());
        ByteBuf withPrefix = Commands.addBrokerEntryMetadata(entry, interceptors, built.numMessages());
        byte[] bytes = ByteBufUtil.getBytes(withPrefix);
        withPrefix.release();
        return new Built(bytes, built.inputs(), built.numMessages());
    }

    /**
     * Runs a batch through the compactor's rewrite. The filter plays the role of "is this the
     * latest message for its key": keyed members at batch indexes divisible by 3 are dropped.
     * The converter itself also drops keyed members with an empty payload (tombstones) and
     * keeps key-less ones.
     */
    private void addCompacted(String name, Built built) throws IOException {
        BiPredicate<String, MessageId> latestForKey = (key, id) -> ((BatchMessageIdImpl) id).getBatchIndex() % 3 != 0;
        ByteBuf stored = Unpooled.wrappedBuffer(built.entry());
        RawMessage raw = new RawMessageImpl(new MessageIdData().setLedgerId(7).setEntryId(cases.size()), stored);
        stored.release(); // RawMessageImpl holds its own reference
        Optional<RawMessage> rewritten = RawBatchConverter.rebatchMessage(raw, latestForKey);
        raw.close();
        if (rewritten.isEmpty()) {
            throw new IllegalStateException(name + ": compaction dropped every message");
        }
        byte[] bytes = ByteBufUtil.getBytes(rewritten.get().getHeadersAndPayload());
        rewritten.get().close();
        add(name, new Built(bytes, built.inputs(), built.numMessages()));
    }

    private void addMarker(String name, ByteBuf marker) {
        byte[] bytes = ByteBufUtil.getBytes(marker);
        marker.release();
        cases.add(new Case(name, bytes, null));
    }

    private static ByteBuf compress(CompressionType codec, ByteBuf raw) {
        CompressionCodec c = CompressionCodecProvider.getCompressionCodec(codec);
        ByteBuf out = c.encode(raw); // NONE returns the same buffer, retained
        raw.release();
        return out;
    }

    private static byte[] serialize(ChecksumType checksum, MessageMetadata md, ByteBuf payload) {
        ByteBuf entry = Commands.serializeMetadataAndPayload(checksum, md, payload);
        payload.release();
        byte[] bytes = ByteBufUtil.getBytes(entry);
        entry.release();
        return bytes;
    }

    /** Producers hand Pulsar pooled direct buffers; use the same allocator so codecs take that path. */
    private static ByteBuf directBuffer(byte[] data) {
        ByteBuf buf = PulsarByteBufAllocator.DEFAULT.buffer(Math.max(data.length, 1));
        buf.writeBytes(data);
        return buf;
    }
}
