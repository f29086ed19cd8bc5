package io.pulsarentries.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.client.LedgerMetadataBuilder;
import org.apache.bookkeeper.client.api.DigestType;
import org.apache.bookkeeper.client.api.LastConfirmedAndEntry;
import org.apache.bookkeeper.client.api.LedgerEntries;
import org.apache.bookkeeper.client.api.LedgerEntry;
import org.apache.bookkeeper.client.api.LedgerMetadata;
import org.apache.bookkeeper.client.api.ReadHandle;
import org.apache.bookkeeper.client.impl.LedgerEntriesImpl;
import org.apache.bookkeeper.client.impl.LedgerEntryImpl;
import org.apache.bookkeeper.common.util.OrderedScheduler;
import org.apache.bookkeeper.mledger.Entry;
import org.apache.bookkeeper.mledger.LedgerOffloaderStatsDisable;
import org.apache.bookkeeper.mledger.impl.EntryImpl;
import org.apache.bookkeeper.mledger.offload.jcloud.DataBlockHeader;
import org.apache.bookkeeper.mledger.offload.jcloud.OffloadIndexBlock;
import org.apache.bookkeeper.mledger.offload.jcloud.OffloadIndexBlockBuilder;
import org.apache.bookkeeper.mledger.offload.jcloud.OffloadIndexBlockV2;
import org.apache.bookkeeper.mledger.offload.jcloud.OffloadIndexBlockV2Builder;
import org.apache.bookkeeper.mledger.offload.jcloud.OffloadIndexEntry;
import org.apache.bookkeeper.mledger.offload.jcloud.impl.BlobStoreBackedReadHandleImpl;
import org.apache.bookkeeper.mledger.offload.jcloud.impl.BlobStoreBackedReadHandleImplV2;
import org.apache.bookkeeper.mledger.offload.jcloud.impl.BlobStoreManagedLedgerOffloader;
import org.apache.bookkeeper.mledger.offload.jcloud.impl.BufferedOffloadStream;
import org.apache.bookkeeper.mledger.offload.jcloud.impl.DataBlockHeaderImpl;
import org.apache.bookkeeper.mledger.offload.jcloud.impl.DataBlockUtils;
import org.apache.bookkeeper.mledger.offload.jcloud.impl.OffsetsCache;
import org.apache.bookkeeper.mledger.offload.jcloud.impl.StreamingDataBlockHeaderImpl;
import org.apache.bookkeeper.mledger.offload.jcloud.provider.TieredStorageConfiguration;
import org.apache.bookkeeper.mledger.proto.MLDataFormats;
import org.apache.bookkeeper.net.BookieId;
import org.jclouds.blobstore.BlobStore;
import org.jclouds.blobstore.domain.Blob;

/**
 * Tiered-storage offload interop: writes and reads offload objects with Apache Pulsar's own
 * blob-store offloader classes over jclouds' in-memory "transient" blob store.
 *
 * <pre>
 *   offload-write   stdin: {"out_dir", "uuid", "variant": "ledger"|"streaming", "ledgers": [...], ...}
 *                   writes the data and index objects into out_dir under Pulsar's object names
 *   offload-read    stdin: {"data": path, "index": path, "variant", "ledger_ids": [...]}
 *                   Pulsar's view: index fields, every block header, and the entries read back
 *                   through Pulsar's read handle
 * </pre>
 *
 * <p>Ledger-based objects are written by {@code BlobStoreManagedLedgerOffloader.offload} itself
 * (block sizing, multipart parts, index and object metadata all Pulsar's) from an in-memory
 * {@link ReadHandle}. Streaming (PIP-76) objects cannot be driven through the offloader here:
 * its {@code streamingOffload} needs a live ManagedLedger, no Pulsar release calls it, and its
 * block loop leaves the first entry out of the block size. The harness therefore chains Pulsar's
 * streaming block stream ({@code BufferedOffloadStream}) and index builder
 * ({@code OffloadIndexBlockV2Builder}) itself, with one block per run of {@code min_block_size}
 * bytes of entries.
 */
final class OffloadHarness {

    private static final HexFormat HEX = HexFormat.of();
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;
    private static final String BUCKET = "pulsar-entries-interop";
    static final String MANAGED_LEDGER_NAME = "public/default/persistent/offload-interop";

    private OffloadHarness() {
    }

    // ------------------------------------------------------------------------------ write

    static ObjectNode write(JsonNode req) throws Exception {
        Path outDir = Path.of(req.get("out_dir").asText());
        Files.createDirectories(outDir);
        UUID uuid = UUID.fromString(req.get("uuid").asText());
        String variant = req.path("variant").asText("ledger");
        return switch (variant) {
            case "ledger" -> writeLedger(req, outDir, uuid);
            case "streaming" -> writeStreaming(req, outDir, uuid);
            default -> throw new IllegalArgumentException("unknown variant " + variant);
        };
    }

    private static ObjectNode writeLedger(JsonNode req, Path outDir, UUID uuid) throws Exception {
        JsonNode ledger = req.get("ledgers").get(0);
        long ledgerId = ledger.get("ledger_id").asLong();
        List<byte[]> entries = hexList(ledger.get("entries"));
        InMemoryLedger handle = new InMemoryLedger(ledgerId, entries, req.path("ctime").asLong(1_700_000_000_000L));

        Map<String, String> conf = new HashMap<>();
        conf.put("managedLedgerOffloadDriver", "transient");
        conf.put("managedLedgerOffloadBucket", BUCKET);
        conf.put("managedLedgerOffloadMaxBlockSizeInBytes", String.valueOf(req.get("max_block_size").asInt()));
        TieredStorageConfiguration config = TieredStorageConfiguration.create(conf);
        Map<String, String> userMetadata = Map.of("S3ManagedLedgerOffloaderSoftwareVersion".toLowerCase(), "4.0.8");
        OrderedScheduler scheduler = OrderedScheduler.newSchedulerBuilder().numThreads(1).name("offload").build();
        try {
            BlobStoreManagedLedgerOffloader offloader = BlobStoreManagedLedgerOffloader.create(
                    config, userMetadata, scheduler, scheduler, LedgerOffloaderStatsDisable.INSTANCE,
                    new OffsetsCache());
            offloader.offload(handle, uuid, Map.of("ManagedLedgerName", MANAGED_LEDGER_NAME))
                    .get(60, TimeUnit.SECONDS);
            // The transient provider keeps one store per offloader; read it back through the
            // offloader's own read path as a first check, and take the objects from its store.
            BlobStore store = offloaderStore(offloader);
            String dataKey = DataBlockUtils.dataBlockOffloadKey(ledgerId, uuid);
            String indexKey = DataBlockUtils.indexBlockOffloadKey(ledgerId, uuid);
            ObjectNode out = JSON.objectNode();
            out.put("data", saveBlob(store, dataKey, outDir).toString());
            out.put("index", saveBlob(store, indexKey, outDir).toString());
            out.set("data_user_metadata", userMetadataJson(store, dataKey));
            out.set("index_user_metadata", userMetadataJson(store, indexKey));
            return out;
        } finally {
            scheduler.shutdownNow();
        }
    }

    /** The offloader keeps its stores in a private map; its transient store is only reachable there. */
    private static BlobStore offloaderStore(BlobStoreManagedLedgerOffloader offloader) throws Exception {
        java.lang.reflect.Field f = BlobStoreManagedLedgerOffloader.class.getDeclaredField("blobStores");
        f.setAccessible(true);
        Map<?, ?> stores = (Map<?, ?>) f.get(offloader);
        if (stores.size() != 1) {
            throw new IllegalStateException("expected one blob store in the offloader, found " + stores.size());
        }
        return (BlobStore) stores.values().iterator().next();
    }

    private static ObjectNode writeStreaming(JsonNode req, Path outDir, UUID uuid) throws Exception {
        int minBlockSize = req.get("min_block_size").asInt();
        OffloadIndexBlockV2Builder index = OffloadIndexBlockV2Builder.create();
        index.withDataBlockHeaderLength(StreamingDataBlockHeaderImpl.getDataStartOffset());
        ByteArrayOutputStream data = new ByteArrayOutputStream();
        int partId = 1;
        for (JsonNode ledger : req.get("ledgers")) {
            long ledgerId = ledger.get("ledger_id").asLong();
            long firstEntryId = ledger.path("first_entry_id").asLong(0);
            List<byte[]> entries = hexList(ledger.get("entries"));
            int i = 0;
            while (i < entries.size()) {
                // One block: entries of this ledger until min_block_size bytes of entries are in.
                List<Entry> block = new ArrayList<>();
                int entryBytes = 0;
                long beginEntryId = firstEntryId + i;
                do {
                    entryBytes += entries.get(i).length;
                    block.add(EntryImpl.create(ledgerId, firstEntryId + i, entries.get(i)));
                    i++;
                } while (i < entries.size() && entryBytes < minBlockSize);
                int blockSize = BufferedOffloadStream.calculateBlockSize(minBlockSize, block.size(), entryBytes);
                try (BufferedOffloadStream stream = new BufferedOffloadStream(blockSize, block, ledgerId,
                        beginEntryId)) {
                    byte[] bytes = stream.readAllBytes();
                    if (bytes.length != blockSize) {
                        throw new IllegalStateException("block stream gave " + bytes.length + " bytes, block size "
                                + blockSize);
                    }
                    data.write(bytes);
                }
                index.addBlock(ledgerId, beginEntryId, partId++, blockSize);
            }
            long lastEntryId = firstEntryId + entries.size() - 1;
            long size = entries.stream().mapToLong(e -> e.length).sum();
            index.addLedgerMeta(ledgerId, MLDataFormats.ManagedLedgerInfo.LedgerInfo.newBuilder()
                    .setLedgerId(ledgerId).setEntries(lastEntryId + 1).setSize(size)
                    .setTimestamp(req.path("ctime").asLong(1_700_000_000_000L)).build());
        }
        index.withDataObjectLength(data.size());
        Path dataPath = outDir.resolve(uuid.toString());
        Path indexPath = outDir.resolve(DataBlockUtils.indexBlockOffloadKey(uuid));
        Files.write(dataPath, data.toByteArray());
        try (OffloadIndexBlockV2 built = index.buildV2(); InputStream in = built.toStream()) {
            Files.write(indexPath, in.readAllBytes());
        }
        ObjectNode out = JSON.objectNode();
        out.put("data", dataPath.toString());
        out.put("index", indexPath.toString());
        return out;
    }

    // ------------------------------------------------------------------------------- read

    static ObjectNode read(JsonNode req) throws Exception {
        byte[] data = Files.readAllBytes(Path.of(req.get("data").asText()));
        byte[] indexBytes = Files.readAllBytes(Path.of(req.get("index").asText()));
        String variant = req.path("variant").asText("ledger");
        ObjectNode out = JSON.objectNode();

        // 1. The index through Pulsar's parser (dispatches on the magic: v1 or v2).
        ObjectNode indexJson = JSON.objectNode();
        Object parsed = OffloadIndexBlockV2Builder.create().fromStream(new ByteArrayInputStream(indexBytes));
        List<long[]> blocks = new ArrayList<>(); // {ledgerId, firstEntryId, offset}
        if (parsed instanceof OffloadIndexBlock v1) {
            indexJson.put("version", 1);
            indexJson.put("data_object_length", v1.getDataObjectLength());
            indexJson.put("data_header_length", v1.getDataBlockHeaderLength());
            indexJson.put("entry_count", v1.getEntryCount());
            LedgerMetadata md = v1.getLedgerMetadata();
            indexJson.set("ledger_metadata", metadataJson(md));
            long ledgerId = req.get("ledger_ids").get(0).asLong();
            ArrayNode list = indexJson.putArray("blocks");
            // getIndexEntryForEntry is the lookup the read handle uses: walk it over every entry.
            long previous = Long.MIN_VALUE;
            for (long e = 0; e <= md.getLastEntryId(); e++) {
                OffloadIndexEntry ie = v1.getIndexEntryForEntry(e);
                if (ie.getEntryId() != previous) {
                    previous = ie.getEntryId();
                    list.add(indexEntryJson(ledgerId, ie));
                    blocks.add(new long[] {-1, ie.getEntryId(), ie.getOffset()});
                }
            }
            v1.close();
        } else {
            OffloadIndexBlockV2 v2 = (OffloadIndexBlockV2) parsed;
            indexJson.put("version", 2);
            indexJson.put("data_object_length", v2.getDataObjectLength());
            indexJson.put("data_header_length", v2.getDataBlockHeaderLength());
            indexJson.put("entry_count", v2.getEntryCount());
            ArrayNode ledgers = indexJson.putArray("ledgers");
            ArrayNode list = indexJson.putArray("blocks");
            for (JsonNode id : req.get("ledger_ids")) {
                long ledgerId = id.asLong();
                LedgerMetadata md = v2.getLedgerMetadata(ledgerId);
                ObjectNode l = ledgers.addObject();
                l.put("ledger_id", ledgerId);
                l.put("last_entry_id", md.getLastEntryId());
                l.put("length", md.getLength());
                long start = ((org.apache.bookkeeper.mledger.offload.jcloud.impl.OffloadIndexBlockV2Impl) v2)
                        .getStartEntryId(ledgerId);
                l.put("start_entry_id", start);
                long previous = Long.MIN_VALUE;
                for (long e = start; e <= md.getLastEntryId(); e++) {
                    OffloadIndexEntry ie = v2.getIndexEntryForEntry(ledgerId, e);
                    if (ie.getEntryId() != previous) {
                        previous = ie.getEntryId();
                        list.add(indexEntryJson(ledgerId, ie));
                        blocks.add(new long[] {ledgerId, ie.getEntryId(), ie.getOffset()});
                    }
                }
            }
            v2.close();
        }
        out.set("index", indexJson);

        // 2. Every block header at the offsets the index gives, through Pulsar's header parsers.
        ArrayNode headers = out.putArray("headers");
        for (long[] b : blocks) {
            int offset = Math.toIntExact(b[2]);
            InputStream in = new ByteArrayInputStream(data, offset, data.length - offset);
            ObjectNode h = headers.addObject();
            h.put("offset", offset);
            if ("streaming".equals(variant)) {
                StreamingDataBlockHeaderImpl header = StreamingDataBlockHeaderImpl.fromStream(in);
                headerJson(h, header);
                h.put("ledger_id", header.getLedgerId());
            } else {
                headerJson(h, DataBlockHeaderImpl.fromStream(in));
            }
        }

        // 3. The entries through Pulsar's read handle over a blob store holding the two objects.
        OrderedScheduler scheduler = OrderedScheduler.newSchedulerBuilder().numThreads(1).name("read").build();
        try {
            BlobStore store = transientStore();
            String dataKey = Path.of(req.get("data").asText()).getFileName().toString();
            String indexKey = Path.of(req.get("index").asText()).getFileName().toString();
            putBlob(store, dataKey, data);
            putBlob(store, indexKey, indexBytes);
            ObjectNode entries = out.putObject("entries");
            for (JsonNode id : req.get("ledger_ids")) {
                long ledgerId = id.asLong();
                ReadHandle handle = "streaming".equals(variant)
                        ? BlobStoreBackedReadHandleImplV2.open(scheduler.chooseThread(ledgerId), store, BUCKET,
                                List.of(dataKey), List.of(indexKey), DataBlockUtils.VERSION_CHECK, ledgerId,
                                1024 * 1024, LedgerOffloaderStatsDisable.INSTANCE, MANAGED_LEDGER_NAME)
                        : BlobStoreBackedReadHandleImpl.open(scheduler.chooseThread(ledgerId), store, BUCKET,
                                dataKey, indexKey, DataBlockUtils.VERSION_CHECK, ledgerId, 1024 * 1024,
                                LedgerOffloaderStatsDisable.INSTANCE, MANAGED_LEDGER_NAME, new OffsetsCache());
                long first = req.has("first_entry_id") ? req.get("first_entry_id").asLong() : firstEntry(req, ledgerId);
                long last = req.has("last_entry_id") ? req.get("last_entry_id").asLong()
                        : handle.getLastAddConfirmed();
                ObjectNode l = entries.putObject(Long.toString(ledgerId));
                l.put("last_add_confirmed", handle.getLastAddConfirmed());
                l.put("length", handle.getLength());
                l.put("first_entry_id", first);
                ArrayNode list = l.putArray("entries");
                try (LedgerEntries read = handle.readAsync(first, last).get(60, TimeUnit.SECONDS)) {
                    long expected = first;
                    for (LedgerEntry e : read) {
                        if (e.getEntryId() != expected++) {
                            throw new IllegalStateException("read handle returned entry " + e.getEntryId());
                        }
                        list.add(HEX.formatHex(e.getEntryBytes()));
                    }
                }
                handle.closeAsync().get(60, TimeUnit.SECONDS);
            }
        } finally {
            scheduler.shutdownNow();
        }
        return out;
    }

    private static long firstEntry(JsonNode req, long ledgerId) {
        JsonNode starts = req.path("start_entry_ids");
        return starts.has(Long.toString(ledgerId)) ? starts.get(Long.toString(ledgerId)).asLong() : 0;
    }

    // ---------------------------------------------------------------------------- helpers

    private static BlobStore transientStore() {
        Map<String, String> conf = Map.of("managedLedgerOffloadDriver", "transient",
                "managedLedgerOffloadBucket", BUCKET);
        return TieredStorageConfiguration.create(new HashMap<>(conf)).getBlobStore();
    }

    private static void putBlob(BlobStore store, String key, byte[] bytes) {
        Map<String, String> md = new HashMap<>();
        md.put(DataBlockUtils.METADATA_FORMAT_VERSION_KEY.toLowerCase(), "1");
        Blob blob = store.blobBuilder(key).payload(bytes).contentLength(bytes.length).userMetadata(md).build();
        store.putBlob(BUCKET, blob);
    }

    private static Path saveBlob(BlobStore store, String key, Path outDir) throws IOException {
        Blob blob = store.getBlob(BUCKET, key);
        if (blob == null) {
            throw new IOException("the offloader wrote no object " + key);
        }
        Path path = outDir.resolve(key);
        try (InputStream in = blob.getPayload().openStream()) {
            Files.write(path, in.readAllBytes());
        }
        return path;
    }

    private static ObjectNode userMetadataJson(BlobStore store, String key) {
        ObjectNode node = JSON.objectNode();
        new TreeMap<>(store.blobMetadata(BUCKET, key).getUserMetadata()).forEach(node::put);
        return node;
    }

    private static ObjectNode indexEntryJson(long ledgerId, OffloadIndexEntry ie) {
        ObjectNode n = JSON.objectNode();
        n.put("ledger_id", ledgerId);
        n.put("first_entry_id", ie.getEntryId());
        n.put("part_id", ie.getPartId());
        n.put("offset", ie.getOffset());
        n.put("data_offset", ie.getDataOffset());
        return n;
    }

    private static void headerJson(ObjectNode h, DataBlockHeader header) {
        h.put("header_length", header.getHeaderLength());
        h.put("block_length", header.getBlockLength());
        h.put("first_entry_id", header.getFirstEntryId());
    }

    private static ObjectNode metadataJson(LedgerMetadata md) {
        ObjectNode n = JSON.objectNode();
        n.put("ensemble_size", md.getEnsembleSize());
        n.put("write_quorum_size", md.getWriteQuorumSize());
        n.put("ack_quorum_size", md.getAckQuorumSize());
        n.put("last_entry_id", md.getLastEntryId());
        n.put("length", md.getLength());
        n.put("digest_type", String.valueOf(md.getDigestType()));
        n.put("ctime", md.getCtime());
        n.put("closed", md.isClosed());
        ObjectNode custom = n.putObject("custom_metadata");
        new TreeMap<>(md.getCustomMetadata()).forEach((k, v) -> custom.put(k, new String(v, StandardCharsets.UTF_8)));
        ObjectNode ensembles = n.putObject("ensembles");
        md.getAllEnsembles().forEach((first, bookies) -> {
            ArrayNode a = ensembles.putArray(Long.toString(first));
            bookies.forEach(b -> a.add(b.toString()));
        });
        return n;
    }

    private static List<byte[]> hexList(JsonNode array) {
        List<byte[]> out = new ArrayList<>();
        array.forEach(n -> out.add(HEX.parseHex(n.asText())));
        return out;
    }

    /**
     * A closed BookKeeper ledger held in memory: what the offloader reads from. Metadata as a
     * broker creates it (2 bookies, write/ack quorum 2, CRC32C, managed-ledger custom metadata).
     */
    static final class InMemoryLedger implements ReadHandle {
        private final long id;
        private final List<byte[]> entries;
        private final LedgerMetadata metadata;
        private final long length;

        InMemoryLedger(long id, List<byte[]> entries, long ctime) {
            this.id = id;
            this.entries = entries;
            this.length = entries.stream().mapToLong(e -> e.length).sum();
            Map<String, byte[]> custom = new LinkedHashMap<>();
            custom.put("application", "pulsar".getBytes(StandardCharsets.UTF_8));
            custom.put("component", "managed-ledger".getBytes(StandardCharsets.UTF_8));
            custom.put("pulsar/managed-ledger", MANAGED_LEDGER_NAME.getBytes(StandardCharsets.UTF_8));
            this.metadata = LedgerMetadataBuilder.create()
                    .withId(id)
                    .withEnsembleSize(2).withWriteQuorumSize(2).withAckQuorumSize(2)
                    .withDigestType(DigestType.CRC32C).withPassword(new byte[0])
                    .newEnsembleEntry(0, List.of(BookieId.parse("bookie-1:3181"), BookieId.parse("bookie-2:3181")))
                    .withCustomMetadata(custom)
                    .withCreationTime(ctime).storingCreationTime(true)
                    .withLastEntryId(entries.size() - 1).withLength(length)
                    .withClosedState()
                    .build();
        }

        @Override
        public CompletableFuture<LedgerEntries> readAsync(long first, long last) {
            if (first < 0 || last >= entries.size() || first > last) {
                return CompletableFuture.failedFuture(new IllegalArgumentException(first + ".." + last));
            }
            List<LedgerEntry> out = new ArrayList<>();
            for (long e = first; e <= last; e++) {
                byte[] bytes = entries.get((int) e);
                ByteBuf buf = Unpooled.wrappedBuffer(bytes);
                out.add(LedgerEntryImpl.create(id, e, bytes.length, buf));
            }
            return CompletableFuture.completedFuture(LedgerEntriesImpl.create(out));
        }

        @Override
        public CompletableFuture<LedgerEntries> readUnconfirmedAsync(long first, long last) {
            return readAsync(first, last);
        }

        @Override
        public CompletableFuture<Long> readLastAddConfirmedAsync() {
            return CompletableFuture.completedFuture(getLastAddConfirmed());
        }

        @Override
        public CompletableFuture<Long> tryReadLastAddConfirmedAsync() {
            return readLastAddConfirmedAsync();
        }

        @Override
        public long getLastAddConfirmed() {
            return entries.size() - 1;
        }

        @Override
        public long getLength() {
            return length;
        }

        @Override
        public boolean isClosed() {
            return true;
        }

        @Override
        public CompletableFuture<LastConfirmedAndEntry> readLastAddConfirmedAndEntryAsync(long entryId,
                long timeOutInMillis, boolean parallel) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException());
        }

        @Override
        public long getId() {
            return id;
        }

        @Override
        public CompletableFuture<Void> closeAsync() {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public LedgerMetadata getLedgerMetadata() {
            return metadata;
        }
    }
}
