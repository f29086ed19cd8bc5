package io.pulsarentries.interop;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.scurrilous.circe.checksum.Crc32cIntChecksum;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.util.HexFormat;
import java.util.List;
import org.apache.pulsar.common.api.proto.BrokerEntryMetadata;
import org.apache.pulsar.common.api.proto.KeyValue;
import org.apache.pulsar.common.api.proto.MessageMetadata;
import org.apache.pulsar.common.api.proto.SingleMessageMetadata;
import org.apache.pulsar.common.compression.CompressionCodec;
import org.apache.pulsar.common.compression.CompressionCodecProvider;
import org.apache.pulsar.common.protocol.Commands;

/**
 * Decodes one stored entry with Pulsar's own read path and renders it as JSON.
 *
 * <p>The steps follow the Java consumer ({@code ConsumerImpl.messageReceived} and
 * {@code receiveIndividualMessagesFromBatch}) with one deliberate difference: the
 * broker-entry-metadata prefix is stripped <em>before</em> the checksum test. The consumer
 * checks for the CRC magic first and so silently skips verification when the prefix is
 * delivered to it; a stored-entry reader must strip the prefix first (spec §1.5).
 */
final class EntryParser {

    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;
    private static final HexFormat HEX = HexFormat.of();

    private EntryParser() {
    }

    /** Parses {@code entry}; any exception propagates to the caller (which reports it). */
    static ObjectNode parse(byte[] entry) throws IOException {
        ByteBuf buf = Unpooled.wrappedBuffer(entry);
        try {
            return parse(buf, entry);
        } finally {
            buf.release();
        }
    }

    private static ObjectNode parse(ByteBuf buf, byte[] entry) throws IOException {
        ObjectNode out = JSON.objectNode();
        out.put("entry", HEX.formatHex(entry));

        // [0e 02 | size | BrokerEntryMetadata] -- optional, outside the CRC.
        BrokerEntryMetadata bem = Commands.parseBrokerEntryMetadataIfExist(buf);
        out.set("broker_entry_metadata", bem == null ? JSON.nullNode() : brokerEntryMetadataJson(bem));

        // [0e 01 | crc32c] -- optional; the CRC covers everything after itself.
        boolean hasChecksum = Commands.hasChecksum(buf);
        out.put("has_checksum", hasChecksum);
        if (hasChecksum) {
            int stored = Commands.readChecksum(buf);
            int computed = Crc32cIntChecksum.computeChecksum(buf); // does not move the reader index
            out.put("checksum_valid", stored == computed);
        } else {
            out.putNull("checksum_valid");
        }

        // [md_size | MessageMetadata] -- the reader index is left at the payload.
        MessageMetadata md = new MessageMetadata();
        Commands.parseMessageMetadata(buf, md);
        out.set("metadata", metadataJson(md));
        out.set("messages", messagesJson(md, buf));
        return out;
    }

    /**
     * Splits the payload into the messages a consumer would see, or returns [] / null for
     * entries that a consumer never splits.
     */
    private static com.fasterxml.jackson.databind.JsonNode messagesJson(MessageMetadata md, ByteBuf payload)
            throws IOException {
        ArrayNode messages = JSON.arrayNode();
        if (md.hasMarkerType()) {
            // Markers are server-only (never dispatched); their payload is not a user message.
            return messages;
        }
        if (md.getEncryptionKeysCount() > 0) {
            // Ciphertext: neither decompressible nor splittable without the private key.
            return JSON.nullNode();
        }
        if (md.hasNumChunksFromMsg() && md.getNumChunksFromMsg() > 1) {
            // A chunk is a slice of the compressed stream; only the reassembled message decodes.
            return JSON.nullNode();
        }

        CompressionCodec codec = CompressionCodecProvider.getCompressionCodec(md.getCompression());
        ByteBuf uncompressed = codec.decode(payload, md.getUncompressedSize());
        try {
            // Batch iff the field is present, whatever its value (1 included).
            if (!md.hasNumMessagesInBatch()) {
                messages.add(singleMessageJson(md, uncompressed));
                return messages;
            }
            int batchSize = md.getNumMessagesInBatch();
            SingleMessageMetadata smm = new SingleMessageMetadata();
            for (int i = 0; i < batchSize; i++) {
                ByteBuf value = Commands.deSerializeSingleMessageInBatch(uncompressed, smm, i, batchSize);
                try {
                    messages.add(batchMessageJson(i, smm, value));
                } finally {
                    value.release();
                }
            }
            return messages;
        } finally {
            uncompressed.release();
        }
    }

    /** A non-batched entry: all per-message fields live in the MessageMetadata. */
    private static ObjectNode singleMessageJson(MessageMetadata md, ByteBuf value) {
        ObjectNode m = JSON.objectNode();
        m.put("batch_index", -1);
        putMessageFields(m,
                md.hasPartitionKey() ? md.getPartitionKey() : null,
                md.hasPartitionKeyB64Encoded() && md.isPartitionKeyB64Encoded(),
                md.hasOrderingKey() ? md.getOrderingKey() : null,
                md.getPropertiesList(),
                md.hasEventTime() ? md.getEventTime() : 0L,
                md.hasSequenceId() ? md.getSequenceId() : null,
                md.hasNullValue() && md.isNullValue(),
                md.hasNullPartitionKey() && md.isNullPartitionKey(),
                false,
                value);
        return m;
    }

    /** One record of a batch: per-message fields come from its SingleMessageMetadata. */
    private static ObjectNode batchMessageJson(int index, SingleMessageMetadata smm, ByteBuf value) {
        ObjectNode m = JSON.objectNode();
        m.put("batch_index", index);
        putMessageFields(m,
                smm.hasPartitionKey() ? smm.getPartitionKey() : null,
                smm.hasPartitionKeyB64Encoded() && smm.isPartitionKeyB64Encoded(),
                smm.hasOrderingKey() ? smm.getOrderingKey() : null,
                smm.getPropertiesList(),
                smm.hasEventTime() ? smm.getEventTime() : 0L,
                smm.hasSequenceId() ? smm.getSequenceId() : null,
                smm.hasNullValue() && smm.isNullValue(),
                smm.hasNullPartitionKey() && smm.isNullPartitionKey(),
                smm.hasCompactedOut() && smm.isCompactedOut(),
                value);
        return m;
    }

    private static void putMessageFields(ObjectNode m, String key, boolean keyB64, byte[] orderingKey,
            List<KeyValue> properties, long eventTime, Long sequenceId, boolean nullValue,
            boolean nullPartitionKey, boolean compactedOut, ByteBuf value) {
        putNullable(m, "key", key);
        m.put("key_b64", keyB64);
        putNullable(m, "ordering_key", orderingKey == null ? null : HEX.formatHex(orderingKey));
        m.set("properties", propertiesJson(properties));
        // Pulsar treats event_time 0 as "not set" (Message.getEventTime() returns 0 for both).
        if (eventTime != 0) {
            m.put("event_time", eventTime);
        } else {
            m.putNull("event_time");
        }
        if (sequenceId != null) {
            m.put("sequence_id", sequenceId.longValue());
        } else {
            m.putNull("sequence_id");
        }
        m.put("null_value", nullValue);
        m.put("null_partition_key", nullPartitionKey);
        m.put("compacted_out", compactedOut);
        m.put("value", HEX.formatHex(ByteBufUtil.getBytes(value)));
    }

    /** Presence-preserving view of MessageMetadata: a key appears iff the field was on the wire. */
    static ObjectNode metadataJson(MessageMetadata md) {
        ObjectNode o = JSON.objectNode();
        if (md.hasProducerName()) {
            o.put("producer_name", md.getProducerName());
        }
        if (md.hasSequenceId()) {
            o.put("sequence_id", md.getSequenceId());
        }
        if (md.hasPublishTime()) {
            o.put("publish_time", md.getPublishTime());
        }
        if (md.getPropertiesCount() > 0) {
            o.set("properties", propertiesJson(md.getPropertiesList()));
        }
        if (md.hasReplicatedFrom()) {
            o.put("replicated_from", md.getReplicatedFrom());
        }
        if (md.hasPartitionKey()) {
            o.put("partition_key", md.getPartitionKey());
        }
        if (md.getReplicateTosCount() > 0) {
            ArrayNode a = o.putArray("replicate_to");
            md.getReplicateTosList().forEach(a::add);
        }
        if (md.hasCompression()) {
            o.put("compression", md.getCompression().name());
        }
        if (md.hasUncompressedSize()) {
            o.put("uncompressed_size", Integer.toUnsignedLong(md.getUncompressedSize())); // uint32
        }
        if (md.hasNumMessagesInBatch()) {
            o.put("num_messages_in_batch", md.getNumMessagesInBatch());
        }
        if (md.hasEventTime()) {
            o.put("event_time", md.getEventTime());
        }
        if (md.getEncryptionKeysCount() > 0) {
            o.put("encryption_keys_count", md.getEncryptionKeysCount());
        }
        if (md.hasEncryptionAlgo()) {
            o.put("encryption_algo", md.getEncryptionAlgo());
        }
        if (md.hasEncryptionParam()) {
            o.put("encryption_param", HEX.formatHex(md.getEncryptionParam()));
        }
        if (md.hasSchemaVersion()) {
            o.put("schema_version", HEX.formatHex(md.getSchemaVersion()));
        }
        if (md.hasPartitionKeyB64Encoded()) {
            o.put("partition_key_b64_encoded", md.isPartitionKeyB64Encoded());
        }
        if (md.hasOrderingKey()) {
            o.put("ordering_key", HEX.formatHex(md.getOrderingKey()));
        }
        if (md.hasDeliverAtTime()) {
            o.put("deliver_at_time", md.getDeliverAtTime());
        }
        if (md.hasMarkerType()) {
            o.put("marker_type", md.getMarkerType());
        }
        if (md.hasTxnidLeastBits()) {
            o.put("txnid_least_bits", md.getTxnidLeastBits());
        }
        if (md.hasTxnidMostBits()) {
            o.put("txnid_most_bits", md.getTxnidMostBits());
        }
        if (md.hasHighestSequenceId()) {
            o.put("highest_sequence_id", md.getHighestSequenceId());
        }
        if (md.hasNullValue()) {
            o.put("null_value", md.isNullValue());
        }
        if (md.hasUuid()) {
            o.put("uuid", md.getUuid());
        }
        if (md.hasNumChunksFromMsg()) {
            o.put("num_chunks_from_msg", md.getNumChunksFromMsg());
        }
        if (md.hasTotalChunkMsgSize()) {
            o.put("total_chunk_msg_size", md.getTotalChunkMsgSize());
        }
        if (md.hasChunkId()) {
            o.put("chunk_id", md.getChunkId());
        }
        if (md.hasNullPartitionKey()) {
            o.put("null_partition_key", md.isNullPartitionKey());
        }
        // Fields 31/32 exist in pulsar-common 4.2.x (PIP-429 compaction, schema id).
        if (md.getCompactedBatchIndexesCount() > 0) {
            ArrayNode a = o.putArray("compacted_batch_indexes");
            for (int i = 0; i < md.getCompactedBatchIndexesCount(); i++) {
                a.add(md.getCompactedBatchIndexeAt(i));
            }
        }
        if (md.hasSchemaId()) {
            o.put("schema_id", HEX.formatHex(md.getSchemaId()));
        }
        return o;
    }

    private static ObjectNode brokerEntryMetadataJson(BrokerEntryMetadata bem) {
        ObjectNode o = JSON.objectNode();
        if (bem.hasBrokerTimestamp()) {
            o.put("broker_timestamp", bem.getBrokerTimestamp());
        } else {
            o.putNull("broker_timestamp");
        }
        if (bem.hasIndex()) {
            o.put("index", bem.getIndex());
        } else {
            o.putNull("index");
        }
        return o;
    }

    private static ArrayNode propertiesJson(List<KeyValue> properties) {
        ArrayNode a = JSON.arrayNode();
        for (KeyValue kv : properties) {
            a.addArray().add(kv.getKey()).add(kv.getValue());
        }
        return a;
    }

    private static void putNullable(ObjectNode o, String name, String value) {
        if (value == null) {
            o.putNull(name);
        } else {
            o.put(name, value);
        }
    }
}
