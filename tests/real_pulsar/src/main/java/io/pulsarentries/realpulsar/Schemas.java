package io.pulsarentries.realpulsar;

import static io.pulsarentries.realpulsar.Corpus.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.schema.GenericRecord;
import org.apache.pulsar.client.api.schema.GenericRecordBuilder;
import org.apache.pulsar.client.api.schema.GenericSchema;
import org.apache.pulsar.common.schema.KeyValue;
import org.apache.pulsar.common.schema.KeyValueEncodingType;
import org.apache.pulsar.common.schema.SchemaInfo;
import org.apache.pulsar.common.schema.SchemaType;

/**
 * Topics with schemas, written by the Java client's typed producers, and what an
 * {@code AUTO_CONSUME} Reader makes of them (the ground truth of the typed decode):
 *
 * <ul>
 *   <li>{@code schema-avro}: AVRO, version 0, then version 1 adding {@code qty} (default 7),
 *       then one message from a producer without a schema whose bytes no version decodes;
 *   <li>{@code schema-json}: JSON of a POJO;
 *   <li>{@code schema-int64}: INT64;
 *   <li>{@code schema-kv-inline}: KeyValue(STRING, JSON) INLINE;
 *   <li>{@code schema-kv-separated}: KeyValue(INT32, AVRO) SEPARATED.
 * </ul>
 */
final class Schemas {
    private Schemas() {}

    static final String AVRO_V1 = "{\"type\":\"record\",\"name\":\"Order\",\"namespace\":\"io.pulsarentries\","
            + "\"fields\":[{\"name\":\"id\",\"type\":\"long\"},"
            + "{\"name\":\"item\",\"type\":[\"null\",\"string\"],\"default\":null},"
            + "{\"name\":\"price\",\"type\":\"double\"},"
            + "{\"name\":\"tags\",\"type\":{\"type\":\"array\",\"items\":\"string\"}}";
    static final String AVRO_V0_DEF = AVRO_V1 + "]}";
    static final String AVRO_V1_DEF = AVRO_V1 + ",{\"name\":\"qty\",\"type\":\"int\",\"default\":7}]}";

    /** The JSON schema's POJO (its Avro definition comes from these fields). */
    public static class Item {
        public long id;
        public String name;
        public double price;
        public boolean active;

        public Item() {}

        Item(int i) {
            id = 1000L + i;
            name = i % 3 == 2 ? null : "item-" + i;
            price = i * 0.5;
            active = i % 2 == 0;
        }
    }

    static GenericSchema<GenericRecord> avro(String def) {
        return Schema.generic(SchemaInfo.builder()
                .name("Order")
                .type(SchemaType.AVRO)
                .schema(def.getBytes(StandardCharsets.UTF_8))
                .build());
    }

    static GenericRecord order(GenericSchema<GenericRecord> s, int i, boolean withQty) {
        GenericRecordBuilder b = s.newRecordBuilder()
                .set("id", (long) i)
                .set("item", i % 4 == 3 ? null : "item-" + i)
                .set("price", i * 1.25)
                .set("tags", List.of("t" + i, "x"));
        if (withQty) {
            b.set("qty", i % 5);
        }
        return b.build();
    }

    static <T> void sendAll(Producer<T> p, List<T> values) throws Exception {
        List<CompletableFuture<MessageId>> sent = new ArrayList<>();
        for (T v : values) {
            sent.add(p.sendAsync(v));
        }
        p.flush();
        for (CompletableFuture<MessageId> f : sent) {
            f.get(60, TimeUnit.SECONDS);
        }
    }

    static ObjectNode produce(PulsarClient client) throws Exception {
        ObjectNode out = NODES.objectNode();
        GenericSchema<GenericRecord> v0 = avro(AVRO_V0_DEF);
        GenericSchema<GenericRecord> v1 = avro(AVRO_V1_DEF);
        try (Producer<GenericRecord> p = client.newProducer(v0).topic(NS + "schema-avro")
                .batchingMaxMessages(5).create()) {
            List<GenericRecord> values = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                values.add(order(v0, i, false));
            }
            sendAll(p, values);
        }
        try (Producer<GenericRecord> p = client.newProducer(v1).topic(NS + "schema-avro")
                .batchingMaxMessages(5).create()) {
            List<GenericRecord> values = new ArrayList<>();
            for (int i = 12; i < 24; i++) {
                values.add(order(v1, i, true));
            }
            sendAll(p, values);
        }
        // A producer without a schema may write to the topic (schemaValidationEnforced is off): its
        // message names no schema version, and its bytes are no Order.
        try (Producer<byte[]> p = client.newProducer(Schema.BYTES).topic(NS + "schema-avro").create()) {
            p.send(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, 'x'});
            out.put("schema-avro-undecodable", true);
        } catch (Exception e) {
            out.put("schema-avro-undecodable", e.toString());
        }

        try (Producer<Item> p = client.newProducer(Schema.JSON(Item.class)).topic(NS + "schema-json")
                .batchingMaxMessages(4).create()) {
            List<Item> values = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                values.add(new Item(i));
            }
            sendAll(p, values);
        }
        try (Producer<Long> p = client.newProducer(Schema.INT64).topic(NS + "schema-int64")
                .batchingMaxMessages(5).create()) {
            List<Long> values = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                values.add(i * 1_000_003L - 5);
            }
            sendAll(p, values);
        }
        Schema<KeyValue<String, Item>> inline =
                Schema.KeyValue(Schema.STRING, Schema.JSON(Item.class), KeyValueEncodingType.INLINE);
        try (Producer<KeyValue<String, Item>> p = client.newProducer(inline).topic(NS + "schema-kv-inline")
                .batchingMaxMessages(3).create()) {
            List<KeyValue<String, Item>> values = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                values.add(new KeyValue<>("k" + i, new Item(i)));
            }
            sendAll(p, values);
        }
        Schema<KeyValue<Integer, GenericRecord>> separated =
                Schema.KeyValue(Schema.INT32, v0, KeyValueEncodingType.SEPARATED);
        try (Producer<KeyValue<Integer, GenericRecord>> p = client.newProducer(separated)
                .topic(NS + "schema-kv-separated").batchingMaxMessages(3).create()) {
            List<KeyValue<Integer, GenericRecord>> values = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                values.add(new KeyValue<>(i * 7, order(v0, i, false)));
            }
            sendAll(p, values);
        }
        return out;
    }

    /** What an AUTO_CONSUME Reader receives: per message its id, key, schema version, bytes and value (or error). */
    static ArrayNode typedMessages(PulsarClient client, String topic) throws Exception {
        ArrayNode out = NODES.arrayNode();
        try (Reader<GenericRecord> reader = client.newReader(Schema.AUTO_CONSUME())
                .topic(topic)
                .startMessageId(MessageId.earliest)
                .create()) {
            while (reader.hasMessageAvailable()) {
                Message<GenericRecord> m = reader.readNext(20, TimeUnit.SECONDS);
                if (m == null) {
                    break;
                }
                ObjectNode o = id(m.getMessageId());
                if (m.hasKey()) {
                    o.put("key", m.getKey());
                } else {
                    o.putNull("key");
                }
                byte[] version = m.getSchemaVersion();
                if (version != null && version.length == 8) {
                    o.put("schema_version", ByteBuffer.wrap(version).getLong());
                } else {
                    o.putNull("schema_version");
                }
                o.put("data", Base64.getEncoder().encodeToString(m.getData()));
                try {
                    o.set("value", json(m.getValue()));
                } catch (Exception e) {
                    o.put("error", e.toString());
                }
                out.add(o);
            }
        }
        return out;
    }

    /** A decoded value as JSON: records as objects of their fields, KeyValue as {key, value}. */
    static JsonNode json(Object v) {
        if (v == null) {
            return NODES.nullNode();
        }
        if (v instanceof GenericRecord) {
            GenericRecord r = (GenericRecord) v;
            SchemaType t = r.getSchemaType();
            if (t == SchemaType.AVRO || t == SchemaType.JSON) {
                ObjectNode o = NODES.objectNode();
                for (org.apache.pulsar.client.api.schema.Field f : r.getFields()) {
                    o.set(f.getName(), json(r.getField(f)));
                }
                return o;
            }
            return json(r.getNativeObject());
        }
        if (v instanceof KeyValue) {
            ObjectNode o = NODES.objectNode();
            o.set("key", json(((KeyValue<?, ?>) v).getKey()));
            o.set("value", json(((KeyValue<?, ?>) v).getValue()));
            return o;
        }
        if (v instanceof org.apache.avro.generic.GenericRecord) {
            org.apache.avro.generic.GenericRecord r = (org.apache.avro.generic.GenericRecord) v;
            ObjectNode o = NODES.objectNode();
            for (org.apache.avro.Schema.Field f : r.getSchema().getFields()) {
                o.set(f.name(), json(r.get(f.name())));
            }
            return o;
        }
        if (v instanceof JsonNode) {
            return (JsonNode) v;
        }
        if (v instanceof CharSequence) {
            return NODES.textNode(v.toString());
        }
        if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
            return NODES.numberNode(((Number) v).longValue());
        }
        if (v instanceof Float || v instanceof Double) {
            return NODES.numberNode(((Number) v).doubleValue());
        }
        if (v instanceof java.math.BigInteger) {
            return NODES.numberNode((java.math.BigInteger) v);
        }
        if (v instanceof java.math.BigDecimal) {
            return NODES.numberNode((java.math.BigDecimal) v);
        }
        if (v instanceof Boolean) {
            return NODES.booleanNode((Boolean) v);
        }
        if (v instanceof byte[]) {
            return NODES.textNode(Base64.getEncoder().encodeToString((byte[]) v));
        }
        if (v instanceof ByteBuffer) {
            ByteBuffer b = ((ByteBuffer) v).duplicate();
            byte[] bytes = new byte[b.remaining()];
            b.get(bytes);
            return NODES.textNode(Base64.getEncoder().encodeToString(bytes));
        }
        if (v instanceof Collection) {
            ArrayNode a = NODES.arrayNode();
            for (Object x : (Collection<?>) v) {
                a.add(json(x));
            }
            return a;
        }
        if (v instanceof Map) {
            ObjectNode o = NODES.objectNode();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                o.set(String.valueOf(e.getKey()), json(e.getValue()));
            }
            return o;
        }
        return NODES.textNode(v.toString());
    }
}
