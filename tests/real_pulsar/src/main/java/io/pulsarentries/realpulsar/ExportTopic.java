package io.pulsarentries.realpulsar;

import static io.pulsarentries.realpulsar.Corpus.NODES;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.schema.GenericRecord;
import org.apache.pulsar.client.api.schema.GenericSchema;
import org.apache.pulsar.client.api.transaction.Transaction;

/**
 * A topic for the table export tests, written in phases by the Java client's AVRO producers
 * (the {@code Order} schema of {@link Schemas}):
 *
 * <ul>
 *   <li>phase {@code v0}: keyed orders of schema version 0 (batched), a chunked order, a committed
 *       and an aborted transaction whose messages interleave with plain ones, a tombstone;
 *   <li>phase {@code v1}: keyed orders of version 1 (adds {@code qty}), a chunked one, a
 *       committed transaction, tombstones, then one message no version decodes (a producer
 *       without a schema).
 * </ul>
 * Keys are {@code k0..k5}; a key's value is rewritten several times, so an upsert keeps only the
 * last. Each order's {@code id} is unique (the phase's base plus a counter).
 */
final class ExportTopic {
    private ExportTopic() {}

    static ObjectNode produce(PulsarClient client, String topic, String phase) throws Exception {
        boolean v1 = phase.equals("v1");
        int base = v1 ? 1000 : 0;
        GenericSchema<GenericRecord> schema = Schemas.avro(v1 ? Schemas.AVRO_V1_DEF : Schemas.AVRO_V0_DEF);
        ObjectNode out = NODES.objectNode();
        ArrayNode committed = out.putArray("committed");
        ArrayNode aborted = out.putArray("aborted");
        try (Producer<GenericRecord> batched = client.newProducer(schema).topic(topic)
                        .producerName("export-batched-" + phase).enableBatching(true)
                        .batchingMaxMessages(4).batchingMaxPublishDelay(20, TimeUnit.MILLISECONDS)
                        .sendTimeout(0, TimeUnit.SECONDS).create();
                Producer<GenericRecord> chunker = client.newProducer(schema).topic(topic)
                        .producerName("export-chunker-" + phase).enableBatching(false).enableChunking(true)
                        .chunkMaxMessageSize(20_000).create()) {
            List<CompletableFuture<MessageId>> sent = new ArrayList<>();
            for (int i = 0; i < 24; i++) {
                sent.add(batched.newMessage().key("k" + i % 6).value(Schemas.order(schema, base + i, v1)).sendAsync());
            }
            batched.flush();
            // A chunked order: its item string spans several chunks.
            var builder = schema.newRecordBuilder().set("id", (long) base + 500)
                    .set("item", "x".repeat(70_000)).set("price", 1.5).set("tags", List.of("big"));
            if (v1) {
                builder.set("qty", 3);
            }
            GenericRecord big = builder.build();
            sent.add(chunker.newMessage().key("big").value(big).sendAsync());
            // Transactions: one committed, one aborted (one more committed in v1), each with a plain
            // message sent between its messages and its decision.
            for (int t = 0; t < (v1 ? 1 : 2); t++) {
                Transaction txn = client.newTransaction().withTransactionTimeout(2, TimeUnit.MINUTES).build().get();
                List<CompletableFuture<MessageId>> mine = new ArrayList<>();
                for (int j = 0; j < 3; j++) {
                    mine.add(batched.newMessage(txn).key("k" + (j + t) % 6)
                            .value(Schemas.order(schema, base + 600 + t * 10 + j, v1)).sendAsync());
                }
                batched.flush();
                sent.add(chunker.newMessage().key("k" + (t + 3) % 6)
                        .value(Schemas.order(schema, base + 700 + t, v1)).sendAsync());
                ArrayNode ids = NODES.arrayNode();
                for (CompletableFuture<MessageId> f : mine) {
                    ids.add(f.get(60, TimeUnit.SECONDS).toString());
                }
                if (t == 0) {
                    txn.commit().get(60, TimeUnit.SECONDS);
                    committed.add(ids);
                } else {
                    txn.abort().get(60, TimeUnit.SECONDS);
                    aborted.add(ids);
                }
            }
            // Tombstones: a null value deletes its key from a compacted view.
            sent.add(chunker.newMessage().key(v1 ? "k1" : "k5").value(null).sendAsync());
            if (v1) {
                sent.add(chunker.newMessage().key("k2").value(null).sendAsync());
            }
            for (CompletableFuture<MessageId> f : sent) {
                f.get(60, TimeUnit.SECONDS);
            }
        }
        if (v1) {
            try (Producer<byte[]> p = client.newProducer(Schema.BYTES).topic(topic).create()) {
                p.newMessage().key("bad").value(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, 'x'}).send();
            }
        }
        return out;
    }
}
