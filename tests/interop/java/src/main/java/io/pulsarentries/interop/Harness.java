package io.pulsarentries.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;

/**
 * Command-line entry point of the interop harness.
 *
 * <pre>
 *   generate   print a JSON array of test cases built and re-parsed by Pulsar's own code
 *   parse      read a JSON array of entry hex strings from stdin, print Pulsar's view of each
 *   stamp      read {"start_index", "timestamp", "index", "entries": [hex]} from stdin, print each
 *              entry as a broker with Pulsar's entry-metadata interceptors stores it
 *   chunks     print chunked messages built with Pulsar's classes, with their chunk message ids
 *   msgid      read a JSON array of message-id requests from stdin (serialize / parse / compare)
 *   rebatch    RawBatchConverter.rebatchMessage over [{ledger_id, entry_id, entry, retain, retain_null_key}]
 *   compact    two-phase compaction of {entries, order, retain_null_key} with Pulsar's pieces
 *   ledger-records / parse-records   RawMessageImpl.serialize / deserializeFrom
 *   compress   Pulsar's CompressionCodec over {codec, inputs: [base64]} (see {@link Codecs})
 *   offload-write / offload-read
 *              tiered-storage offload objects written / read by Pulsar's offloader classes
 *              (a JSON request on stdin, see {@link OffloadHarness})
 * </pre>
 *
 * stdout carries only JSON; logs and diagnostics go to stderr.
 */
public final class Harness {

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();

    private Harness() {
    }

    public static void main(String[] args) throws Exception {
        // Must run before any Pulsar/netty class creates a logger.
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");

        String cmd = args.length == 1 ? args[0] : "";
        switch (cmd) {
            case "generate" -> generate(System.out);
            case "parse" -> parse(System.in.readAllBytes(), System.out);
            case "stamp" -> printArray(System.out,
                    Stamper.stamp(MAPPER.readTree(new String(System.in.readAllBytes(), StandardCharsets.UTF_8))));
            case "chunks" -> printArray(System.out, ChunkTools.chunks());
            case "msgid" -> printArray(System.out,
                    ChunkTools.messageIds(MAPPER.readTree(new String(System.in.readAllBytes(), StandardCharsets.UTF_8))));
            case "rebatch" -> printArray(System.out, Compaction.rebatch(stdinJson()));
            case "compact" -> printArray(System.out, Compaction.compact(stdinJson()));
            case "ledger-records" -> printArray(System.out, Compaction.ledgerRecords(stdinJson()));
            case "parse-records" -> printArray(System.out, Compaction.parseRecords(stdinJson()));
            case "compress" -> printArray(System.out, Codecs.compress(stdinJson()));
            // The offloader leaves non-daemon threads (e.g. its offsets-cache evictor) behind.
            case "offload-write", "offload-read" -> {
                int status = 0;
                // jclouds' transient provider prints to System.out: keep stdout for the JSON alone.
                PrintStream out = System.out;
                System.setOut(System.err);
                try {
                    // One request object, or an array of them (one JVM start for many cases).
                    JsonNode req = readRequest();
                    List<ObjectNode> results = new ArrayList<>();
                    for (JsonNode r : req.isArray() ? req : List.of(req)) {
                        results.add(cmd.equals("offload-write") ? OffloadHarness.write(r) : OffloadHarness.read(r));
                    }
                    if (req.isArray()) {
                        printArray(out, results);
                    } else {
                        printObject(out, results.get(0));
                    }
                } catch (Throwable t) {
                    t.printStackTrace();
                    status = 1;
                }
                System.exit(status);
            }
            default -> {
                System.err.println("usage: Harness generate | parse | stamp | chunks | msgid | rebatch | compact"
                        + " | ledger-records | parse-records | compress | offload-write | offload-read"
                        + "  (all but generate and chunks read JSON on stdin)");
                System.exit(2);
            }
        }
    }

    private static void generate(PrintStream out) throws IOException {
        List<ObjectNode> results = new ArrayList<>();
        for (CaseGenerator.Case c : new CaseGenerator().generate()) {
            ObjectNode parsed = EntryParser.parse(c.entry());
            checkRoundTrip(c, parsed);
            ObjectNode node = JsonNodeFactory.instance.objectNode();
            node.put("name", c.name());
            node.setAll(parsed);
            results.add(node);
        }
        printArray(out, results);
    }

    private static JsonNode stdinJson() throws IOException {
        return MAPPER.readTree(new String(System.in.readAllBytes(), StandardCharsets.UTF_8));
    }

    private static void parse(byte[] stdin, PrintStream out) throws IOException {
        JsonNode input = MAPPER.readTree(new String(stdin, StandardCharsets.UTF_8));
        if (input == null || !input.isArray()) {
            throw new IllegalArgumentException("parse expects a JSON array of hex strings on stdin");
        }
        List<ObjectNode> results = new ArrayList<>();
        for (JsonNode item : input) {
            String hex = item.asText();
            try {
                results.add(EntryParser.parse(HEX.parseHex(hex)));
            } catch (Exception | AssertionError e) {
                // One bad entry must not hide the others: report it in place and continue.
                ObjectNode err = JsonNodeFactory.instance.objectNode();
                err.put("entry", hex);
                err.put("error", e.getClass().getName() + ": " + e.getMessage());
                results.add(err);
            }
        }
        printArray(out, results);
    }

    private static JsonNode readRequest() throws IOException {
        JsonNode req = MAPPER.readTree(new String(System.in.readAllBytes(), StandardCharsets.UTF_8));
        if (req == null || !(req.isObject() || req.isArray())) {
            throw new IllegalArgumentException("expected a JSON object or array on stdin");
        }
        return req;
    }

    private static void printObject(PrintStream out, ObjectNode node) throws IOException {
        out.println(MAPPER.writeValueAsString(node));
        out.flush();
    }

    /** One element per line: diff-friendly and still a single JSON document. */
    private static void printArray(PrintStream out, List<ObjectNode> items) throws IOException {
        StringBuilder sb = new StringBuilder("[\n");
        for (int i = 0; i < items.size(); i++) {
            sb.append(MAPPER.writeValueAsString(items.get(i))).append(i + 1 < items.size() ? ",\n" : "\n");
        }
        sb.append("]\n");
        out.print(sb);
        out.flush();
    }

    /**
     * Guards the harness itself: what Pulsar's decode path reports must be what we asked
     * Pulsar's encode path to write. A failure here is a harness (or Pulsar) bug, never a
     * pulsar-entries bug, so it aborts generation.
     */
    private static void checkRoundTrip(CaseGenerator.Case c, ObjectNode parsed) {
        if (parsed.get("has_checksum").asBoolean()) {
            require(c, parsed.get("checksum_valid").asBoolean(), "checksum invalid");
        }
        JsonNode messages = parsed.get("messages");
        if (c.inputs() == null) {
            require(c, messages.isArray() && messages.isEmpty(), "marker should have no messages");
            return;
        }
        require(c, messages.size() == c.inputs().size(), "message count " + messages.size());
        boolean batched = parsed.get("metadata").has("num_messages_in_batch");
        for (int i = 0; i < messages.size(); i++) {
            Msg in = c.inputs().get(i);
            JsonNode m = messages.get(i);
            String where = "message " + i + ": ";
            require(c, m.get("batch_index").asInt() == (batched ? i : -1), where + "batch_index");
            if (m.get("compacted_out").asBoolean()) {
                // Compaction placeholder: no key, no value, nothing left to compare.
                require(c, m.get("value").asText().isEmpty(), where + "placeholder value");
                continue;
            }
            require(c, m.get("value").asText().equals(HEX.formatHex(in.payload())), where + "value");
            require(c, m.get("null_value").asBoolean() == (in.value == null), where + "null_value");
            require(c, m.get("null_partition_key").asBoolean() == in.nullKey, where + "null_partition_key");
            String expectedKey = in.nullKey ? null
                    : in.keyBytes != null ? Base64.getEncoder().encodeToString(in.keyBytes) : in.key;
            require(c, Objects.equals(textOrNull(m.get("key")), expectedKey), where + "key");
            require(c, m.get("key_b64").asBoolean() == (!in.nullKey && in.keyBytes != null), where + "key_b64");
            require(c, Objects.equals(textOrNull(m.get("ordering_key")),
                    in.orderingKey == null ? null : HEX.formatHex(in.orderingKey)), where + "ordering_key");
            ArrayNode props = JsonNodeFactory.instance.arrayNode();
            in.properties.forEach((k, v) -> props.addArray().add(k).add(v));
            require(c, m.get("properties").equals(props), where + "properties");
            JsonNode et = m.get("event_time");
            require(c, in.eventTime == null ? et.isNull() : et.asLong() == in.eventTime, where + "event_time");
            JsonNode seq = m.get("sequence_id");
            require(c, in.sequenceId == null ? seq.isNull() : seq.asLong() == in.sequenceId, where + "sequence_id");
        }
    }

    private static String textOrNull(JsonNode n) {
        return n == null || n.isNull() ? null : n.asText();
    }

    private static void require(CaseGenerator.Case c, boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("case " + c.name() + ": Pulsar round trip mismatch: " + what);
        }
    }
}
