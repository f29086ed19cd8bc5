package io.pulsarentries.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import org.apache.pulsar.common.allocator.PulsarByteBufAllocator;
import org.apache.pulsar.common.api.proto.CompressionType;
import org.apache.pulsar.common.compression.CompressionCodec;
import org.apache.pulsar.common.compression.CompressionCodecProvider;

/**
 * The {@code compress} command: payloads compressed by Pulsar's own {@link CompressionCodec}
 * (what a producer or the broker's RawBatchConverter writes), for byte-level comparison.
 *
 * <p>Request {@code {"codec": "snappy", "inputs": ["<base64>", ...]}}; answer one
 * {@code {"compressed": "<base64>", "path": ...}} per input. Each input is encoded twice, from
 * a pooled direct buffer (producers' buffers: the codec's memory-address path) and from a heap
 * buffer (its ByteBuffer path); the two must agree, else the element carries an {@code error}.
 * Each encoded payload is also decoded back with the same codec and checked.
 */
final class Codecs {

    private Codecs() {
    }

    static List<ObjectNode> compress(JsonNode req) throws IOException {
        CompressionType type = CompressionType.valueOf(req.get("codec").asText().toUpperCase(Locale.ROOT));
        CompressionCodec codec = CompressionCodecProvider.getCompressionCodec(type);
        Base64.Decoder b64in = Base64.getDecoder();
        Base64.Encoder b64out = Base64.getEncoder();
        List<ObjectNode> out = new ArrayList<>();
        for (JsonNode item : req.get("inputs")) {
            byte[] input = b64in.decode(item.asText());
            ObjectNode node = JsonNodeFactory.instance.objectNode();
            ByteBuf direct = PulsarByteBufAllocator.DEFAULT.directBuffer(Math.max(input.length, 1));
            direct.writeBytes(input);
            byte[] fromDirect = encode(codec, direct);
            byte[] fromHeap = encode(codec, Unpooled.wrappedBuffer(input));
            node.put("compressed", b64out.encodeToString(fromDirect));
            if (!Arrays.equals(fromDirect, fromHeap)) {
                node.put("error", "direct and heap encodings differ");
            }
            ByteBuf packed = Unpooled.wrappedBuffer(fromDirect);
            ByteBuf back = codec.decode(packed, input.length);
            if (!Arrays.equals(ByteBufUtil.getBytes(back), input)) {
                node.put("error", "Pulsar's own decode does not give the input back");
            }
            back.release();
            packed.release();
            out.add(node);
        }
        return out;
    }

    private static byte[] encode(CompressionCodec codec, ByteBuf raw) {
        ByteBuf encoded = codec.encode(raw);
        byte[] bytes = ByteBufUtil.getBytes(encoded);
        encoded.release();
        raw.release();
        return bytes;
    }
}
