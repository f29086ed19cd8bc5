package io.pulsarentries.realpulsar;

import static io.pulsarentries.realpulsar.Corpus.NODES;
import static io.pulsarentries.realpulsar.Corpus.id;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.CompressionType;
import org.apache.pulsar.client.api.CryptoKeyReader;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.ProducerBuilder;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;

/**
 * {@code Corpus encrypted <serviceUrl> <webUrl> <out.json> <topic>}: end-to-end encrypted messages
 * for the decryption tests, with the RSA pair of {@link CorpusKeys} found in out's directory.
 *
 * <p>Every codec, batched (4 a batch) and not, then two chunked messages (LZ4, about 35 KB each in
 * 10 KB chunks). Each message's data key is wrapped for two key names, {@code enc-key} and
 * {@code other-key} (the metadata lists them in that order), both with the same public key, so a
 * reader holding only the second must look past the first.
 */
final class EncryptedTopic {
    private EncryptedTopic() {}

    static ObjectNode produce(PulsarClient client, String topic, File dir) throws Exception {
        CryptoKeyReader keys = CorpusKeys.storedKeys(dir);
        if (keys == null) {
            throw new IllegalStateException("no " + CorpusKeys.PRIVATE_PEM + " in " + dir);
        }
        ObjectNode out = NODES.objectNode();
        ArrayNode ids = out.putArray("ids");
        List<CompletableFuture<MessageId>> sent = new ArrayList<>();
        List<Producer<byte[]>> producers = new ArrayList<>();
        try {
            for (CompressionType codec : new CompressionType[] {
                    CompressionType.NONE, CompressionType.LZ4, CompressionType.ZLIB, CompressionType.ZSTD,
                    CompressionType.SNAPPY}) {
                for (boolean batching : new boolean[] {true, false}) {
                    Producer<byte[]> p = encrypted(client, topic, keys)
                            .producerName("enc-" + codec.name().toLowerCase() + (batching ? "-batched" : "-single"))
                            .compressionType(codec)
                            .enableBatching(batching)
                            .batchingMaxMessages(4)
                            .batchingMaxPublishDelay(20, TimeUnit.MILLISECONDS)
                            .create();
                    producers.add(p);
                    awaitWrappedDataKey(p);
                    for (int i = 0; i < 8; i++) {
                        String value = p.getProducerName() + "#" + i + " " + "payload ".repeat(1 + i * 7);
                        sent.add(p.newMessage().key("k" + (i % 3)).property("i", Integer.toString(i))
                                .value(value.getBytes(StandardCharsets.UTF_8)).sendAsync());
                    }
                    p.flush();
                }
            }
            Producer<byte[]> chunker = encrypted(client, topic, keys)
                    .producerName("enc-chunked")
                    .compressionType(CompressionType.LZ4)
                    .enableBatching(false)
                    .enableChunking(true)
                    .chunkMaxMessageSize(10_000)
                    .create();
            producers.add(chunker);
            awaitWrappedDataKey(chunker);
            for (int i = 0; i < 2; i++) {
                // Random-looking bytes do not compress: the message stays several chunks long.
                byte[] big = new byte[35_000];
                new java.util.Random(42 + i).nextBytes(big);
                sent.add(chunker.newMessage().key("big" + i).value(big).sendAsync());
            }
            chunker.flush();
            for (CompletableFuture<MessageId> f : sent) {
                ids.add(id(f.get(60, TimeUnit.SECONDS)));
            }
        } finally {
            for (Producer<byte[]> p : producers) {
                p.close();
            }
        }
        return out;
    }

    /**
     * Waits until the producer's first data key is wrapped for every key name. Pulsar 4.2.4's
     * producer makes a fresh data key on a background task as soon as it exists, and
     * {@code MessageCryptoBc.encrypt} does not wait for it (neither method holds a lock): a message
     * sent meanwhile can list names that wrap different data keys (seen with P-521 keys, whose
     * wrapping is slow). A Java Reader holding every name still reads it; a reader holding one name
     * may not. The corpus tests the one-name reader, so it sends nothing before the wraps are made.
     */
    static void awaitWrappedDataKey(Producer<byte[]> producer) throws Exception {
        java.lang.reflect.Field crypto = producer.getClass().getDeclaredField("msgCrypto");
        crypto.setAccessible(true);
        Object bc = crypto.get(producer);
        java.lang.reflect.Field map = bc.getClass().getDeclaredField("encryptedDataKeyMap");
        map.setAccessible(true);
        java.util.Map<?, ?> wrapped = (java.util.Map<?, ?>) map.get(bc);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (wrapped.size() < 2) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the producer wrapped no data key in 60 s");
            }
            Thread.sleep(5);
        }
    }

    static ProducerBuilder<byte[]> encrypted(PulsarClient client, String topic, CryptoKeyReader keys) {
        return client.newProducer(Schema.BYTES)
                .topic(topic)
                .addEncryptionKey("other-key")
                .addEncryptionKey("enc-key")
                .cryptoKeyReader(keys)
                .sendTimeout(0, TimeUnit.SECONDS);
    }
}
