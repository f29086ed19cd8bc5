package io.pulsarentries.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.commons.lang3.tuple.Pair;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.RawMessage;
import org.apache.pulsar.client.impl.BatchMessageIdImpl;
import org.apache.pulsar.client.impl.RawBatchConverter;
import org.apache.pulsar.client.impl.RawMessageImpl;
import org.apache.pulsar.common.api.proto.MessageIdData;
import org.apache.pulsar.common.api.proto.MessageMetadata;
import org.apache.pulsar.common.protocol.Commands;
import org.apache.pulsar.common.protocol.Markers;
import org.apache.pulsar.compaction.MessageCompactionData;

/**
 * Compaction with Pulsar's own classes, for the {@code rebatch}, {@code compact},
 * {@code ledger-records} and {@code parse-records} commands.
 *
 * <p>The broker's compactor classes ({@code PublishingOrderCompactor},
 * {@code EventTimeOrderCompactor}) need a running broker (BookKeeper, a raw reader), so the
 * {@code compact} command reproduces their two-phase loop here, step for step as in
 * pulsar-broker 4.2.4, while every piece that touches bytes is Pulsar's: metadata parsing
 * ({@code Commands}), marker detection ({@code Markers.isServerOnlyMarker}), batch detection
 * and member extraction ({@code RawBatchConverter.isReadableBatch},
 * {@code extractMessageCompactionData}), the batch rewrite ({@code RawBatchConverter.rebatchMessage})
 * and the ledger record ({@code RawMessageImpl.serialize}).
 */
final class Compaction {

    private static final HexFormat HEX = HexFormat.of();

    private Compaction() {
    }

    private static RawMessage raw(JsonNode e) {
        // The ids the broker's compactor reads always carry a partition: -1 for a
        // non-partitioned topic (seen in a real 4.2.4 broker's compacted ledger).
        MessageIdData id = new MessageIdData().setLedgerId(e.get("ledger_id").asLong())
                .setEntryId(e.get("entry_id").asLong())
                .setPartition(e.hasNonNull("partition") ? e.get("partition").asInt() : -1);
        ByteBuf stored = Unpooled.wrappedBuffer(HEX.parseHex(e.get("entry").asText()));
        RawMessage m = new RawMessageImpl(id, stored);
        stored.release();
        return m;
    }

    private static MessageMetadata metadata(RawMessage m) {
        MessageMetadata md = new MessageMetadata();
        Commands.parseMessageMetadata(m.getHeadersAndPayload(), md);
        return md;
    }

    private static String hex(ByteBuf b) {
        return HEX.formatHex(ByteBufUtil.getBytes(b));
    }

    /**
     * {@code rebatch}: each item {ledger_id, entry_id, entry, retain: [batch indexes],
     * retain_null_key} goes through {@code RawBatchConverter.rebatchMessage} with the filter
     * "batch index is in retain"; the output is {entry: hex or null} or {error}.
     */
    static List<ObjectNode> rebatch(JsonNode input) {
        List<ObjectNode> out = new ArrayList<>();
        for (JsonNode item : input) {
            ObjectNode node = JsonNodeFactory.instance.objectNode();
            Set<Integer> retain = new HashSet<>();
            item.get("retain").forEach(i -> retain.add(i.asInt()));
            RawMessage m = raw(item);
            try {
                Optional<RawMessage> r = RawBatchConverter.rebatchMessage(m, metadata(m),
                        (key, id) -> retain.contains(((BatchMessageIdImpl) id).getBatchIndex()),
                        item.path("retain_null_key").asBoolean(false));
                if (r.isPresent()) {
                    node.put("entry", hex(r.get().getHeadersAndPayload()));
                    r.get().close();
                } else {
                    node.putNull("entry");
                }
            } catch (Exception | AssertionError e) {
                node.put("error", e.getClass().getName() + ": " + e.getMessage());
            } finally {
                m.close();
            }
            out.add(node);
        }
        return out;
    }

    /** {@code AbstractTwoPhaseCompactor.extractKeyAndSize} (4.2.4) for a non-batched entry. */
    private static Pair<String, Integer> keyAndSize(RawMessage m, MessageMetadata md) {
        if (!md.hasPartitionKey()) {
            return null;
        }
        int size;
        if (md.hasNullValue() && md.isNullValue()) {
            size = 0;
        } else if (md.hasUncompressedSize()) {
            size = md.getUncompressedSize();
        } else {
            ByteBuf b = m.getHeadersAndPayload();
            Commands.skipMessageMetadata(b);
            size = b.readableBytes();
        }
        return Pair.of(md.getPartitionKey(), size);
    }

    /** A key's survivor and its event time (the event-time compactor keeps both). */
    private record Latest(MessageId id, long eventTime) {
    }

    /**
     * {@code compact}: {entries: [{ledger_id, entry_id, entry}], order: publish|event_time,
     * retain_null_key} → the compacted entries [{ledger_id, entry_id, entry, record}].
     */
    static List<ObjectNode> compact(JsonNode input) throws IOException {
        boolean eventTime = "event_time".equals(input.path("order").asText("publish"));
        boolean retainNullKey = input.path("retain_null_key").asBoolean(false);
        Map<String, Latest> latestForKey = new HashMap<>();

        // Phase one (PublishingOrderCompactor / EventTimeOrderCompactor.compactMessage and
        // compactBatchMessage).
        for (JsonNode e : input.get("entries")) {
            RawMessage m = raw(e);
            try {
                MessageMetadata md = metadata(m);
                if (Markers.isServerOnlyMarker(md)) {
                    continue;
                }
                if (RawBatchConverter.isReadableBatch(md)) {
                    for (MessageCompactionData c : RawBatchConverter.extractMessageCompactionData(m, md)) {
                        if (c.key() == null) {
                            continue;
                        }
                        Latest prev = latestForKey.get(c.key());
                        boolean newer = !eventTime || prev == null || c.eventTime() > prev.eventTime();
                        if (newer) {
                            if (c.payloadSize() > 0) {
                                latestForKey.put(c.key(), new Latest(c.messageId(), c.eventTime()));
                            } else {
                                latestForKey.remove(c.key());
                            }
                        }
                    }
                } else {
                    Pair<String, Integer> ks = keyAndSize(m, md);
                    if (ks == null) {
                        continue;
                    }
                    Latest prev = latestForKey.get(ks.getLeft());
                    long et = md.getEventTime();
                    boolean newer = !eventTime || prev == null || et >= prev.eventTime();
                    if (newer) {
                        if (ks.getRight() > 0) {
                            latestForKey.put(ks.getLeft(), new Latest(m.getMessageId(), et));
                        } else {
                            latestForKey.remove(ks.getLeft());
                        }
                    }
                }
            } finally {
                m.close();
            }
        }

        // Phase two (AbstractTwoPhaseCompactor.phaseTwoLoop).
        List<ObjectNode> out = new ArrayList<>();
        for (JsonNode e : input.get("entries")) {
            RawMessage m = raw(e);
            try {
                MessageMetadata md = metadata(m);
                MessageId id = m.getMessageId();
                Optional<RawMessage> toAdd = Optional.empty();
                if (Markers.isServerOnlyMarker(md)) {
                    toAdd = Optional.empty();
                } else if (RawBatchConverter.isReadableBatch(md)) {
                    toAdd = RawBatchConverter.rebatchMessage(m, md, (key, subid) -> {
                        Latest l = latestForKey.get(key);
                        return l != null && subid.equals(l.id());
                    }, retainNullKey);
                } else {
                    Pair<String, Integer> ks = keyAndSize(m, md);
                    if (ks == null) {
                        toAdd = retainNullKey ? Optional.of(m) : Optional.empty();
                    } else {
                        Latest l = latestForKey.get(ks.getLeft());
                        if (l != null && l.id().equals(id)) {
                            toAdd = Optional.of(m);
                        }
                    }
                }
                if (toAdd.isPresent()) {
                    RawMessage w = toAdd.get();
                    ObjectNode node = JsonNodeFactory.instance.objectNode();
                    node.put("ledger_id", e.get("ledger_id").asLong());
                    node.put("entry_id", e.get("entry_id").asLong());
                    node.put("entry", hex(w.getHeadersAndPayload()));
                    ByteBuf record = w.serialize();
                    node.put("record", hex(record));
                    record.release();
                    if (w != m) {
                        w.close();
                    }
                    out.add(node);
                }
            } finally {
                m.close();
            }
        }
        return out;
    }

    /** {@code ledger-records}: [{ledger_id, entry_id, partition?, entry}] → [record hex] via RawMessageImpl. */
    static List<ObjectNode> ledgerRecords(JsonNode input) {
        List<ObjectNode> out = new ArrayList<>();
        for (JsonNode e : input) {
            RawMessage m = raw(e);
            ByteBuf record = m.serialize();
            ObjectNode node = JsonNodeFactory.instance.objectNode();
            node.put("record", hex(record));
            record.release();
            m.close();
            out.add(node);
        }
        return out;
    }

    /** {@code parse-records}: [record hex] → [{ledger_id, entry_id, partition, entry}] via RawMessageImpl. */
    static List<ObjectNode> parseRecords(JsonNode input) {
        List<ObjectNode> out = new ArrayList<>();
        for (JsonNode r : input) {
            ObjectNode node = JsonNodeFactory.instance.objectNode();
            ByteBuf buf = Unpooled.wrappedBuffer(HEX.parseHex(r.asText()));
            try {
                RawMessage m = RawMessageImpl.deserializeFrom(buf);
                MessageIdData id = m.getMessageIdData();
                node.put("ledger_id", id.getLedgerId());
                node.put("entry_id", id.getEntryId());
                node.put("partition", id.hasPartition() ? id.getPartition() : -1);
                node.put("entry", hex(m.getHeadersAndPayload()));
                m.close();
            } catch (Exception | AssertionError e) {
                node.put("error", e.getClass().getName() + ": " + e.getMessage());
            } finally {
                buf.release();
            }
            out.add(node);
        }
        return out;
    }
}
