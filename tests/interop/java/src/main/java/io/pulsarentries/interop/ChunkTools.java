package io.pulsarentries.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.impl.BatchMessageIdImpl;
import org.apache.pulsar.client.impl.ChunkMessageIdImpl;
import org.apache.pulsar.client.impl.MessageIdImpl;
import org.apache.pulsar.common.api.proto.CompressionType;
import org.apache.pulsar.common.api.proto.MessageMetadata;
import org.apache.pulsar.common.compression.CompressionCodecProvider;
import org.apache.pulsar.common.protocol.Commands;
import org.apache.pulsar.common.protocol.Commands.ChecksumType;

/**
 * Chunked messages and message ids through Pulsar's own classes.
 *
 * <ul>
 *   <li>{@link #chunks()}: chunk entries built the way {@code ProducerImpl.serializeAndSendMessage}
 *       does (compress the whole payload once with {@code CompressionCodecProvider}, slice the
 *       compressed bytes, re-serialise the same metadata per chunk with {@code uuid},
 *       {@code num_chunks_from_msg}, {@code total_chunk_msg_size}, {@code chunk_id}, frame each with
 *       {@code Commands.serializeMetadataAndPayload}), plus the {@code ChunkMessageIdImpl} of the
 *       message. The split loop is the one piece that is not Pulsar's code: {@code ProducerImpl}
 *       needs a live connection to run.</li>
 *   <li>{@link #messageIds(JsonNode)}: {@code MessageIdImpl}, {@code BatchMessageIdImpl},
 *       {@code ChunkMessageIdImpl}: {@code toByteArray}, {@code fromByteArray}, {@code toString},
 *       {@code equals}, {@code compareTo}.</li>
 * </ul>
 */
final class ChunkTools {

    private static final HexFormat HEX = HexFormat.of();
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;
    private static final CompressionType[] CODECS = {
        CompressionType.NONE, CompressionType.LZ4, CompressionType.ZLIB, CompressionType.ZSTD, CompressionType.SNAPPY,
    };

    private ChunkTools() {
    }

    static List<ObjectNode> chunks() {
        Random rnd = new Random(0xC4_0C_5L);
        List<ObjectNode> out = new ArrayList<>();
        long ledger = 40;
        for (CompressionType codec : CODECS) {
            for (int[] shape : new int[][] {{60_000, 10_000}, {150_000, 32_768}, {5_001, 1_000}}) {
                byte[] value = new byte[shape[0]];
                // Half text, half noise: every codec still needs several chunks.
                for (int i = 0; i < value.length; i++) {
                    value[i] = i % 2 == 0 ? (byte) ('a' + (i / 97) % 26) : (byte) rnd.nextInt(256);
                }
                String producer = "java-" + codec.name().toLowerCase();
                long sequenceId = 1000 + out.size();
                Msg msg = Msg.of(value).key("key-" + out.size()).property("codec", codec.name())
                        .eventTime(1_699_000_000_000L + out.size()).seq(sequenceId);
                out.add(chunked(producer + "-" + shape[0], msg, producer, codec, shape[1], ledger++));
            }
        }
        return out;
    }

    private static ObjectNode chunked(String name, Msg msg, String producer, CompressionType codec, int chunkSize,
            long ledger) {
        MessageMetadata md = msg.toMetadata();
        md.setProducerName(producer);
        md.setPublishTime(1_700_000_000_000L + ledger);
        ByteBuf payload = Unpooled.wrappedBuffer(msg.payload());
        ByteBuf compressed = CompressionCodecProvider.getCompressionCodec(codec).encode(payload);
        if (codec != CompressionType.NONE) {
            md.setCompression(codec);
        }
        md.setUncompressedSize(msg.payload().length);
        int total = compressed.readableBytes();
        int chunks = Math.max(1, (total + chunkSize - 1) / chunkSize);
        md.setUuid(producer + "-" + msg.sequenceId);
        md.setNumChunksFromMsg(chunks);
        md.setTotalChunkMsgSize(total);
        List<String> entries = new ArrayList<>();
        for (int k = 0; k < chunks; k++) {
            md.setChunkId(k);
            int from = k * chunkSize;
            ByteBuf slice = compressed.retainedSlice(from, Math.min(chunkSize, total - from));
            ByteBuf entry = Commands.serializeMetadataAndPayload(ChecksumType.Crc32c, md, slice);
            entries.add(HEX.formatHex(ByteBufUtil.getBytes(entry)));
            entry.release();
        }
        compressed.release();
        ChunkMessageIdImpl id = new ChunkMessageIdImpl(new MessageIdImpl(ledger, 0, -1),
                new MessageIdImpl(ledger, chunks - 1, -1));
        ObjectNode node = JSON.objectNode();
        node.put("name", name);
        node.put("codec", codec.name().toLowerCase());
        node.put("ledger_id", ledger);
        node.put("value", HEX.formatHex(msg.payload()));
        node.putArray("entries").addAll(entries.stream().map(JSON::textNode).toList());
        node.put("message_id", HEX.formatHex(id.toByteArray()));
        node.put("message_id_str", id.toString());
        // The inputs, so a test can rebuild the same message with its own encoder.
        node.put("producer_name", producer);
        node.put("sequence_id", msg.sequenceId);
        node.put("publish_time", md.getPublishTime());
        node.put("key", msg.key);
        node.put("event_time", msg.eventTime);
        node.putObject("properties").put("codec", codec.name());
        node.put("chunk_size", chunkSize);
        return node;
    }

    /** Runs each request of a JSON array; a failing request reports {"error"} in place. */
    static List<ObjectNode> messageIds(JsonNode requests) {
        List<ObjectNode> out = new ArrayList<>();
        for (JsonNode r : requests) {
            try {
                out.add(switch (r.get("op").asText()) {
                    case "serialize" -> serialize(r);
                    case "parse" -> describe(MessageIdImpl.fromByteArray(HEX.parseHex(r.get("bytes").asText())));
                    case "compare" -> compare(r);
                    default -> throw new IllegalArgumentException("unknown op " + r.get("op"));
                });
            } catch (Exception e) {
                ObjectNode err = JSON.objectNode();
                err.put("error", e.getClass().getName() + ": " + e.getMessage());
                out.add(err);
            }
        }
        return out;
    }

    private static MessageIdImpl build(JsonNode r) {
        if (r.get("kind").asText().equals("chunk")) {
            return new ChunkMessageIdImpl(build(r.get("first")), build(r.get("last")));
        }
        long ledger = r.get("ledger_id").asLong();
        long entry = r.get("entry_id").asLong();
        int partition = r.path("partition").asInt(-1);
        return switch (r.get("kind").asText()) {
            case "plain" -> new MessageIdImpl(ledger, entry, partition);
            case "batch" -> r.hasNonNull("batch_size")
                    ? new BatchMessageIdImpl(ledger, entry, partition, r.get("batch_index").asInt(),
                            r.get("batch_size").asInt(), null)
                    : new BatchMessageIdImpl(ledger, entry, partition, r.get("batch_index").asInt());
            default -> throw new IllegalArgumentException("unknown kind " + r.get("kind"));
        };
    }

    private static ObjectNode serialize(JsonNode r) {
        MessageIdImpl id = build(r);
        ObjectNode node = JSON.objectNode();
        node.put("bytes", HEX.formatHex(id.toByteArray()));
        node.put("string", id.toString());
        return node;
    }

    private static ObjectNode describe(MessageId id) {
        ObjectNode node = JSON.objectNode();
        node.put("class", id.getClass().getSimpleName());
        node.put("string", id.toString());
        node.put("bytes", HEX.formatHex(id.toByteArray()));
        if (id instanceof MessageIdImpl m) {
            node.put("ledger_id", m.getLedgerId());
            node.put("entry_id", m.getEntryId());
            node.put("partition", m.getPartitionIndex());
            node.put("batch_index", m.getBatchIndex());
            node.put("batch_size", m.getBatchSize());
        }
        if (id instanceof ChunkMessageIdImpl c) {
            node.set("first", describe(c.getFirstChunkMessageId()));
        }
        return node;
    }

    private static ObjectNode compare(JsonNode r) throws Exception {
        MessageId a = MessageIdImpl.fromByteArray(HEX.parseHex(r.get("a").asText()));
        MessageId b = MessageIdImpl.fromByteArray(HEX.parseHex(r.get("b").asText()));
        ObjectNode node = JSON.objectNode();
        node.put("equals", a.equals(b));
        node.put("compare", Integer.signum(a.compareTo(b)));
        node.put("same_hash", a.hashCode() == b.hashCode());
        return node;
    }
}
