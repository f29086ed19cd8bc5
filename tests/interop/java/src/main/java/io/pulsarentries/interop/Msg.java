package io.pulsarentries.interop;

import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.pulsar.common.api.proto.MessageMetadata;

/**
 * One message as an application would hand it to a Java producer (the inputs of
 * {@code TypedMessageBuilder}); {@link #toMetadata()} turns it into the per-message
 * MessageMetadata the same way {@code TypedMessageBuilderImpl} and {@code ProducerImpl} do.
 */
final class Msg {
    /** Payload; {@code null} means a null value (null_value = true, empty payload). */
    byte[] value;
    String key;
    byte[] keyBytes;
    boolean nullKey;
    byte[] orderingKey;
    final Map<String, String> properties = new LinkedHashMap<>();
    Long eventTime;
    /** Producer sequence id; {@code null} leaves it unset (older producers, hand-built batches). */
    Long sequenceId;

    static Msg of(byte[] value) {
        Msg m = new Msg();
        m.value = value;
        return m;
    }

    Msg key(String k) {
        this.key = k;
        return this;
    }

    Msg keyBytes(byte[] k) {
        this.keyBytes = k;
        return this;
    }

    Msg nullKey() {
        this.nullKey = true;
        return this;
    }

    Msg orderingKey(byte[] k) {
        this.orderingKey = k;
        return this;
    }

    Msg property(String k, String v) {
        properties.put(k, v);
        return this;
    }

    Msg eventTime(long t) {
        this.eventTime = t;
        return this;
    }

    Msg seq(Long s) {
        this.sequenceId = s;
        return this;
    }

    byte[] payload() {
        return value == null ? new byte[0] : value;
    }

    /** Per-message metadata with the key/value flags exactly as the Java client sets them. */
    MessageMetadata toMetadata() {
        MessageMetadata md = new MessageMetadata();
        if (sequenceId != null) {
            md.setSequenceId(sequenceId);
        }
        if (nullKey) {
            md.setNullPartitionKey(true);
        } else if (keyBytes != null) {
            // TypedMessageBuilder.keyBytes(): base64 text plus the b64 flag.
            md.setPartitionKey(Base64.getEncoder().encodeToString(keyBytes));
            md.setPartitionKeyB64Encoded(true);
        } else if (key != null) {
            // TypedMessageBuilder.key(): the flag is written (false) alongside every string key.
            md.setPartitionKey(key);
            md.setPartitionKeyB64Encoded(false);
        }
        if (orderingKey != null) {
            md.setOrderingKey(orderingKey);
        }
        properties.forEach((k, v) -> md.addProperty().setKey(k).setValue(v));
        if (eventTime != null) {
            md.setEventTime(eventTime);
        }
        if (value == null) {
            md.setNullValue(true);
        }
        return md;
    }
}
