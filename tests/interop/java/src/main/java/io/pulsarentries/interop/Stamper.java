package io.pulsarentries.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.pulsar.common.api.proto.MessageMetadata;
import org.apache.pulsar.common.intercept.AppendBrokerTimestampMetadataInterceptor;
import org.apache.pulsar.common.intercept.AppendIndexMetadataInterceptor;
import org.apache.pulsar.common.intercept.BrokerEntryMetadataInterceptor;
import org.apache.pulsar.common.protocol.Commands;

/**
 * Broker-side stamping with Pulsar's own interceptors: for each entry (in order), what a
 * broker configured with {@code AppendBrokerTimestampMetadataInterceptor} and/or
 * {@code AppendIndexMetadataInterceptor} stores. The prefix is added with
 * {@code Commands.addBrokerEntryMetadata(buf, interceptors, numberOfMessages)}, skipped for a
 * count ≤ 0 as {@code ManagedLedgerInterceptorImpl.beforeAddEntry} does.
 *
 * <p>Input (stdin): {@code {"start_index": -1, "timestamp": true, "index": true, "entries": [hex]}}.
 * Output: one {@code {"entry": hex, "count": n}} per input entry.
 */
final class Stamper {
    private static final HexFormat HEX = HexFormat.of();

    private Stamper() {
    }

    /**
     * The message count a 4.2.4 broker passes: the producer's batch size for published entries;
     * 1 for what the broker appends itself through {@code asyncAddEntry(buf, callback, ctx)}
     * (transaction markers, and transactional messages via {@code TopicTransactionBuffer}).
     */
    static int brokerCount(MessageMetadata md) {
        if (md.hasMarkerType() || md.hasTxnidMostBits() || md.hasTxnidLeastBits()) {
            return 1;
        }
        return md.hasNumMessagesInBatch() ? md.getNumMessagesInBatch() : 1;
    }

    static List<ObjectNode> stamp(JsonNode request) {
        AppendIndexMetadataInterceptor index = new AppendIndexMetadataInterceptor();
        index.recoveryIndexGenerator(request.path("start_index").asLong(-1));
        Set<BrokerEntryMetadataInterceptor> interceptors = new LinkedHashSet<>();
        if (request.path("timestamp").asBoolean(true)) {
            interceptors.add(new AppendBrokerTimestampMetadataInterceptor());
        }
        if (request.path("index").asBoolean(true)) {
            interceptors.add(index);
        }
        List<ObjectNode> out = new ArrayList<>();
        for (JsonNode hex : request.get("entries")) {
            ByteBuf stored = Unpooled.wrappedBuffer(HEX.parseHex(hex.asText()));
            // What the producer sent: the entry without any earlier broker prefix.
            Commands.skipBrokerEntryMetadataIfExist(stored);
            ByteBuf sent = stored.slice();
            MessageMetadata md = Commands.parseMessageMetadata(sent.duplicate());
            int count = brokerCount(md);
            ByteBuf result = count <= 0 ? sent.retain() : Commands.addBrokerEntryMetadata(sent.retain(), interceptors, count);
            ObjectNode node = JsonNodeFactory.instance.objectNode();
            node.put("entry", HEX.formatHex(ByteBufUtil.getBytes(result)));
            node.put("count", count);
            result.release();
            stored.release();
            out.add(node);
        }
        return out;
    }
}
