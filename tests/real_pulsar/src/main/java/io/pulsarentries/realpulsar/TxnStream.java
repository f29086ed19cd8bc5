package io.pulsarentries.realpulsar;

import static io.pulsarentries.realpulsar.Corpus.NODES;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.transaction.Transaction;

/**
 * Transactions written while a stream reads the topic, for the streaming source's test: until
 * {@code stopFile} exists, transaction after transaction of {@code PER_TXN} messages about
 * {@code PAUSE_MS} apart (so each stays open for about a second and micro-batches cut through it),
 * every third aborted; the one open at the stop is committed. Values are {@code tx<n>}, keys
 * {@code t0..t2}, so they spread over the partitions. Writes what was committed and aborted, and
 * any error the client saw.
 */
final class TxnStream {
    static final int PER_TXN = 12;
    static final long PAUSE_MS = 80;

    private TxnStream() {}

    static ObjectNode produce(PulsarClient client, String topic, File stopFile) throws Exception {
        ObjectNode out = NODES.objectNode();
        ArrayNode committed = out.putArray("committed");
        ArrayNode aborted = out.putArray("aborted");
        ArrayNode errors = out.putArray("errors");
        int n = 0;
        int ended = 0;
        try (Producer<byte[]> producer = client.newProducer(Schema.BYTES).topic(topic)
                .producerName("txn-stream").enableBatching(false)
                .autoUpdatePartitionsInterval(1, TimeUnit.SECONDS)
                .sendTimeout(0, TimeUnit.SECONDS).create()) {
            boolean stop = false;
            while (!stop) {
                Transaction txn = client.newTransaction().withTransactionTimeout(1, TimeUnit.MINUTES).build()
                        .get(60, TimeUnit.SECONDS);
                List<String> values = new ArrayList<>();
                try {
                    for (int j = 0; j < PER_TXN; j++) {
                        String value = "tx" + n++;
                        producer.newMessage(txn).key("t" + n % 3).value(value.getBytes(StandardCharsets.UTF_8))
                                .send();
                        values.add(value);
                        Thread.sleep(PAUSE_MS);
                    }
                    stop = stopFile.exists();
                    ended++;
                    if (!stop && ended % 3 == 0) {
                        txn.abort().get(60, TimeUnit.SECONDS);
                        values.forEach(aborted::add);
                    } else {
                        txn.commit().get(60, TimeUnit.SECONDS);
                        values.forEach(committed::add);
                    }
                } catch (Exception e) {
                    errors.add(e.toString());
                    stop = true;
                }
            }
        }
        return out;
    }
}
