package io.pulsarentries.realpulsar;

import static io.pulsarentries.realpulsar.Corpus.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumDescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumValueDescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.MessageOptions;
import com.google.protobuf.DescriptorProtos.OneofDescriptorProto;
import com.google.protobuf.Descriptors;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.DynamicMessage;
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
import org.apache.pulsar.client.impl.schema.ProtobufNativeSchemaUtils;
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
 *   <li>{@code schema-kv-separated}: KeyValue(INT32, AVRO) SEPARATED;
 *   <li>{@code schema-protobuf-native}: PROTOBUF_NATIVE ({@code pe.shop.Order}, whose file imports
 *       another), version 0, then version 1 adding {@code note}, then one message of version 1 whose
 *       bytes are a truncated Order.
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
        produceProtobufNative(client, out);
        return out;
    }

    // ------------------------------------------------------------------ PROTOBUF_NATIVE

    static FieldDescriptorProto.Builder pfield(String name, int number, FieldDescriptorProto.Type type) {
        return FieldDescriptorProto.newBuilder()
                .setName(name)
                .setNumber(number)
                .setType(type)
                .setLabel(FieldDescriptorProto.Label.LABEL_OPTIONAL);
    }

    static FieldDescriptorProto.Builder pmessage(String name, int number, String typeName, boolean repeated) {
        return pfield(name, number, FieldDescriptorProto.Type.TYPE_MESSAGE)
                .setTypeName(typeName)
                .setLabel(repeated
                        ? FieldDescriptorProto.Label.LABEL_REPEATED
                        : FieldDescriptorProto.Label.LABEL_OPTIONAL);
    }

    /**
     * {@code pe.shop.Order} (proto3, built without protoc), in {@code pe/shop/order.proto}, which imports
     * {@code pe/common/money.proto}:
     *
     * <pre>
     * enum Status { UNKNOWN = 0; NEW = 1; DONE = 2; }
     * message Line { string sku = 1; uint32 qty = 2; }
     * message Order {
     *   int64 id = 1; string name = 2; double price = 3; bool active = 4; bytes blob = 5;
     *   Status status = 6; Line main = 7; repeated Line lines = 8; repeated sint32 deltas = 9;
     *   map&lt;string, int64&gt; counts = 10; optional int32 maybe = 11; uint64 big = 12;
     *   fixed32 small = 13; float ratio = 14; pe.common.Money total = 15;
     *   string note = 16;   // version 1
     * }
     * </pre>
     */
    static Descriptors.Descriptor orderDescriptor(boolean withNote) throws Exception {
        FileDescriptorProto money = FileDescriptorProto.newBuilder()
                .setName("pe/common/money.proto")
                .setPackage("pe.common")
                .setSyntax("proto3")
                .addMessageType(DescriptorProto.newBuilder()
                        .setName("Money")
                        .addField(pfield("currency", 1, FieldDescriptorProto.Type.TYPE_STRING))
                        .addField(pfield("cents", 2, FieldDescriptorProto.Type.TYPE_SINT64)))
                .build();
        Descriptors.FileDescriptor moneyFile = Descriptors.FileDescriptor.buildFrom(money,
                new Descriptors.FileDescriptor[0]);
        DescriptorProto.Builder order = DescriptorProto.newBuilder()
                .setName("Order")
                .addField(pfield("id", 1, FieldDescriptorProto.Type.TYPE_INT64))
                .addField(pfield("name", 2, FieldDescriptorProto.Type.TYPE_STRING))
                .addField(pfield("price", 3, FieldDescriptorProto.Type.TYPE_DOUBLE))
                .addField(pfield("active", 4, FieldDescriptorProto.Type.TYPE_BOOL))
                .addField(pfield("blob", 5, FieldDescriptorProto.Type.TYPE_BYTES))
                .addField(pfield("status", 6, FieldDescriptorProto.Type.TYPE_ENUM).setTypeName(".pe.shop.Status"))
                .addField(pmessage("main", 7, ".pe.shop.Line", false))
                .addField(pmessage("lines", 8, ".pe.shop.Line", true))
                .addField(pfield("deltas", 9, FieldDescriptorProto.Type.TYPE_SINT32)
                        .setLabel(FieldDescriptorProto.Label.LABEL_REPEATED))
                .addField(pmessage("counts", 10, ".pe.shop.Order.CountsEntry", true))
                .addField(pfield("maybe", 11, FieldDescriptorProto.Type.TYPE_INT32)
                        .setProto3Optional(true)
                        .setOneofIndex(0))
                .addField(pfield("big", 12, FieldDescriptorProto.Type.TYPE_UINT64))
                .addField(pfield("small", 13, FieldDescriptorProto.Type.TYPE_FIXED32))
                .addField(pfield("ratio", 14, FieldDescriptorProto.Type.TYPE_FLOAT))
                .addField(pmessage("total", 15, ".pe.common.Money", false))
                .addNestedType(DescriptorProto.newBuilder()
                        .setName("CountsEntry")
                        .addField(pfield("key", 1, FieldDescriptorProto.Type.TYPE_STRING))
                        .addField(pfield("value", 2, FieldDescriptorProto.Type.TYPE_INT64))
                        .setOptions(MessageOptions.newBuilder().setMapEntry(true)))
                .addOneofDecl(OneofDescriptorProto.newBuilder().setName("_maybe"));
        if (withNote) {
            order.addField(pfield("note", 16, FieldDescriptorProto.Type.TYPE_STRING));
        }
        EnumDescriptorProto.Builder status = EnumDescriptorProto.newBuilder().setName("Status");
        String[] names = {"UNKNOWN", "NEW", "DONE"};
        for (int i = 0; i < names.length; i++) {
            status.addValue(EnumValueDescriptorProto.newBuilder().setName(names[i]).setNumber(i));
        }
        FileDescriptorProto shop = FileDescriptorProto.newBuilder()
                .setName("pe/shop/order.proto")
                .setPackage("pe.shop")
                .setSyntax("proto3")
                .addDependency("pe/common/money.proto")
                .addEnumType(status)
                .addMessageType(DescriptorProto.newBuilder()
                        .setName("Line")
                        .addField(pfield("sku", 1, FieldDescriptorProto.Type.TYPE_STRING))
                        .addField(pfield("qty", 2, FieldDescriptorProto.Type.TYPE_UINT32)))
                .addMessageType(order)
                .build();
        return Descriptors.FileDescriptor.buildFrom(shop, new Descriptors.FileDescriptor[] {moneyFile})
                .findMessageTypeByName("Order");
    }

    /** Raw protobuf bytes under a PROTOBUF_NATIVE schema: the registered SchemaInfo is Pulsar's own. */
    static final class ProtobufNativeBytes implements Schema<byte[]> {
        private final SchemaInfo info;

        ProtobufNativeBytes(Descriptors.Descriptor descriptor) {
            info = SchemaInfo.builder()
                    .name("Order")
                    .type(SchemaType.PROTOBUF_NATIVE)
                    .schema(ProtobufNativeSchemaUtils.serialize(descriptor))
                    .properties(Map.of())
                    .build();
        }

        @Override
        public byte[] encode(byte[] message) {
            return message;
        }

        @Override
        public byte[] decode(byte[] bytes, byte[] schemaVersion) {
            return bytes;
        }

        @Override
        public SchemaInfo getSchemaInfo() {
            return info;
        }

        @Override
        public Schema<byte[]> clone() {
            return this;
        }
    }

    static DynamicMessage protoMessage(Descriptors.Descriptor d, Object... fieldsAndValues) {
        DynamicMessage.Builder b = DynamicMessage.newBuilder(d);
        for (int i = 0; i < fieldsAndValues.length; i += 2) {
            FieldDescriptor f = d.findFieldByName((String) fieldsAndValues[i]);
            Object v = fieldsAndValues[i + 1];
            if (f.isRepeated()) {
                for (Object x : (List<?>) v) {
                    b.addRepeatedField(f, x);
                }
            } else {
                b.setField(f, v);
            }
        }
        return b.build();
    }

    /** Order {@code i}: odd fields set or left out by {@code i}, so that absent fields occur too. */
    static byte[] protoOrder(Descriptors.Descriptor d, int i, boolean v1) {
        Descriptors.Descriptor line = d.getFile().findMessageTypeByName("Line");
        Descriptors.Descriptor money = d.findFieldByName("total").getMessageType();
        Descriptors.Descriptor entry = d.findFieldByName("counts").getMessageType();
        Descriptors.EnumDescriptor status = d.getFile().findEnumTypeByName("Status");
        DynamicMessage.Builder b = DynamicMessage.newBuilder(d)
                .setField(d.findFieldByName("id"), (long) i * 1_000_000_007L - 3)
                .setField(d.findFieldByName("status"), status.findValueByNumber(i % 3))
                .setField(d.findFieldByName("ratio"), i * 0.25f);
        if (i % 3 != 0) {
            b.setField(d.findFieldByName("name"), "order-" + i)
                    .setField(d.findFieldByName("price"), i * 1.5)
                    .setField(d.findFieldByName("active"), i % 2 == 0)
                    .setField(d.findFieldByName("blob"), ByteString.copyFrom(new byte[] {(byte) i, 0, (byte) 0xff}))
                    .setField(d.findFieldByName("main"), protoMessage(line, "sku", "m" + i, "qty", i));
        }
        for (int j = 0; j < i % 4; j++) {
            b.addRepeatedField(d.findFieldByName("lines"), protoMessage(line, "sku", "l" + j, "qty", j * 7));
            b.addRepeatedField(d.findFieldByName("deltas"), j - i);
            b.addRepeatedField(d.findFieldByName("counts"),
                    protoMessage(entry, "key", "k" + (i + j), "value", (long) j * -11));
        }
        if (i % 2 == 1) {
            b.setField(d.findFieldByName("maybe"), i % 4 == 1 ? 0 : i);
        }
        if (i % 4 == 1) {
            // 2^64 - 1 and 4e9: past the signed ranges of Java's long and int.
            b.setField(d.findFieldByName("big"), -1L);
            b.setField(d.findFieldByName("small"), (int) 4_000_000_000L);
        } else {
            b.setField(d.findFieldByName("big"), (long) i);
            b.setField(d.findFieldByName("small"), i * 3);
        }
        if (i % 5 != 2) {
            b.setField(d.findFieldByName("total"), protoMessage(money, "currency", "EUR", "cents", -50L * i));
        }
        if (v1) {
            b.setField(d.findFieldByName("note"), i % 2 == 0 ? "" : "note " + i);
        }
        return b.build().toByteArray();
    }

    static void produceProtobufNative(PulsarClient client, ObjectNode out) throws Exception {
        String topic = NS + "schema-protobuf-native";
        Descriptors.Descriptor v0 = orderDescriptor(false);
        Descriptors.Descriptor v1 = orderDescriptor(true);
        try (Producer<byte[]> p = client.newProducer(new ProtobufNativeBytes(v0)).topic(topic)
                .batchingMaxMessages(4).create()) {
            List<byte[]> values = new ArrayList<>();
            for (int i = 0; i < 9; i++) {
                values.add(protoOrder(v0, i, false));
            }
            sendAll(p, values);
        }
        try (Producer<byte[]> p = client.newProducer(new ProtobufNativeBytes(v1)).topic(topic)
                .batchingMaxMessages(4).create()) {
            List<byte[]> values = new ArrayList<>();
            for (int i = 9; i < 16; i++) {
                values.add(protoOrder(v1, i, true));
            }
            // Field 2 (name) claims 16 bytes and holds one: no version decodes it.
            values.add(new byte[] {0x12, 0x10, 'x'});
            sendAll(p, values);
        }
        out.put("schema-protobuf-native", true);
    }

    /**
     * A protobuf message as JSON, every field of its descriptor: a field with presence that is unset as
     * null, any other as its value or default; enums by name, bytes base64, maps as objects,
     * uint32/fixed32 and uint64/fixed64 as unsigned numbers.
     */
    static JsonNode proto(com.google.protobuf.MessageOrBuilder m) {
        ObjectNode o = NODES.objectNode();
        for (FieldDescriptor f : m.getDescriptorForType().getFields()) {
            if (f.hasPresence() && !m.hasField(f)) {
                o.putNull(f.getName());
            } else if (f.isMapField()) {
                ObjectNode map = NODES.objectNode();
                FieldDescriptor key = f.getMessageType().findFieldByName("key");
                FieldDescriptor value = f.getMessageType().findFieldByName("value");
                for (Object e : (List<?>) m.getField(f)) {
                    com.google.protobuf.Message entry = (com.google.protobuf.Message) e;
                    map.set(String.valueOf(entry.getField(key)), protoScalar(value, entry.getField(value)));
                }
                o.set(f.getName(), map);
            } else if (f.isRepeated()) {
                ArrayNode a = NODES.arrayNode();
                for (Object x : (List<?>) m.getField(f)) {
                    a.add(protoScalar(f, x));
                }
                o.set(f.getName(), a);
            } else {
                o.set(f.getName(), protoScalar(f, m.getField(f)));
            }
        }
        return o;
    }

    static JsonNode protoScalar(FieldDescriptor f, Object v) {
        switch (f.getJavaType()) {
            case MESSAGE:
                return proto((com.google.protobuf.MessageOrBuilder) v);
            case ENUM:
                return NODES.textNode(((Descriptors.EnumValueDescriptor) v).getName());
            case BYTE_STRING:
                return NODES.textNode(Base64.getEncoder().encodeToString(((ByteString) v).toByteArray()));
            case INT:
                boolean unsigned32 = f.getType() == FieldDescriptor.Type.UINT32
                        || f.getType() == FieldDescriptor.Type.FIXED32;
                return NODES.numberNode(unsigned32 ? Integer.toUnsignedLong((Integer) v) : (long) (Integer) v);
            case LONG:
                boolean unsigned64 = f.getType() == FieldDescriptor.Type.UINT64
                        || f.getType() == FieldDescriptor.Type.FIXED64;
                return unsigned64
                        ? NODES.numberNode(new java.math.BigInteger(Long.toUnsignedString((Long) v)))
                        : NODES.numberNode((Long) v);
            default:
                return json(v);
        }
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
                if (m.getData() == null) {
                    // A tombstone (a null value): no data, no value.
                    o.putNull("data");
                    o.putNull("value");
                    out.add(o);
                    continue;
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
        if (v instanceof com.google.protobuf.MessageOrBuilder) {
            return proto((com.google.protobuf.MessageOrBuilder) v);
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
