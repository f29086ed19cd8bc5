//! One fuzz input = the bytes of one stored entry.
//!
//! Feeds them through `EntryView::parse` (checksum verified and not) and
//! through `Decoder::decode_entry` (twice per decoder, so buffer reuse is
//! exercised), then checks the decoder's contract:
//! - never a panic;
//! - no rows only for a skipped marker; a bad entry is exactly one error row;
//! - every column has one value per row, and `error` nulls + non-nulls = rows;
//! - a batch gives `num_messages_in_batch` rows (or the compacted count);
//!   a KoP `entry.format=kafka` entry (Kafka processor) gives one row per
//!   data record, none when it holds only control batches;
//! - decoding the same bytes again with the same decoder gives the same rows
//!   (`txn_status` aside: a marker in the second copy may settle the first).
#![no_main]

use arrow_array::{Array, BinaryArray, Int32Array, RecordBatch, StringArray};
use libfuzzer_sys::fuzz_target;
use pulsar_entries_core::{Codec, DecodeOptions, Decoder, EntryId, EntryView};

/// Kept small so that a tiny input claiming a huge LZ4 payload (which the
/// decoder allocates and zero-fills up front) does not slow the fuzzer down.
const MAX_UNCOMPRESSED: usize = 1 << 20;

fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> &'a T {
    batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_any()
        .downcast_ref::<T>()
        .unwrap_or_else(|| panic!("column {name} has an unexpected type"))
}

fn check_view(data: &[u8], view: &EntryView<'_>) {
    assert!(view.md_size_offset + 4 == view.metadata_offset);
    assert!(view.metadata_offset <= view.payload_offset);
    assert_eq!(view.payload_offset + view.payload.len(), data.len());
    assert!(data.ends_with(view.without_broker_entry_metadata()));
    let _ = view.entry_timestamp();
    let md = &view.metadata;
    // Repeated fields are counted at parse time and re-read lazily: they must agree.
    assert_eq!(md.properties.iter().count(), md.properties.len());
    assert_eq!(md.replicate_to().count(), md.replicate_to_count());
    assert_eq!(md.compacted_batch_indexes().count(), md.compacted_batch_indexes_count());
    if md.compacted_batch_indexes_count() > 0 {
        assert_eq!(md.compacted_batch_indexes().last(), md.last_compacted_batch_index);
    }
    let keys: Vec<_> = md.encryption_keys().collect();
    assert_eq!(keys.len(), md.encryption_keys_count());
    for k in &keys {
        assert_eq!(k.metadata.iter().count(), k.metadata.len());
    }
}

fn decode_and_check(data: &[u8], verify_checksum: bool, keep_markers: bool) {
    let opts = DecodeOptions {
        verify_checksum,
        keep_markers,
        max_uncompressed_size: MAX_UNCOMPRESSED,
        ..DecodeOptions::default()
    };
    let id = EntryId {
        ledger_id: 3,
        entry_id: 5,
        partition: -1,
    };
    let mut decoder = Decoder::new(opts);
    decoder.decode_entry(id, Some(data));
    let per_entry = decoder.pending_rows();
    // Same bytes again through the same (now warm) decompressor and builders.
    decoder.decode_entry(id, Some(data));
    assert_eq!(decoder.pending_rows(), 2 * per_entry);
    let batches = decoder.finish();
    let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(total, 2 * per_entry);
    assert_eq!(batches.len(), 1, "a small entry never fills a record batch");
    let batch = &batches[0];
    for col in batch.columns() {
        assert_eq!(col.len(), total);
    }
    let error = column::<StringArray>(batch, "error");
    assert_eq!(error.null_count() + (error.len() - error.null_count()), total);

    // The two decodes of the same bytes are identical, column by column.
    let (first, second) = (batch.slice(0, per_entry), batch.slice(per_entry, per_entry));
    let schema = batch.schema();
    for ((a, b), f) in first.columns().iter().zip(second.columns()).zip(schema.fields()) {
        if f.name() != "txn_status" {
            assert_eq!(a.to_data(), b.to_data(), "second decode of {} differs from the first", f.name());
        }
    }

    let parsed = EntryView::parse(data, verify_checksum);
    let view = match parsed {
        Err(e) => {
            // Unreadable framing/metadata: one error row, no metadata columns.
            assert_eq!(per_entry, 1);
            assert_eq!(error.value(0), e.to_string());
            assert!(column::<StringArray>(batch, "producer_name").is_null(0));
            return;
        }
        Ok(view) => view,
    };
    let md = &view.metadata;
    let kafka = md.marker_type.is_none()
        && !md.is_encrypted()
        && !md.is_chunk()
        && md
            .properties
            .iter()
            .any(|(k, v)| k == "entry.format" && v.eq_ignore_ascii_case("kafka"));
    if per_entry == 0 {
        // (A batch declaring `num_messages_in_batch = 0` used to land here:
        // fuzz/README.md, finding 1; it is an error row since 61110e8.)
        assert!(
            (md.marker_type.is_some() || kafka) && !keep_markers,
            "no rows for an entry that is neither a marker nor KoP control records"
        );
        return;
    }
    assert!(!(md.marker_type.is_some() && !keep_markers), "a skipped marker produced rows");
    let errors = (0..per_entry).filter(|&i| error.is_valid(i)).count();
    if errors > 0 {
        assert_eq!((errors, per_entry), (1, 1), "an error row must be the entry's only row");
        assert_eq!(column::<StringArray>(batch, "producer_name").value(0), md.producer_name);
        return;
    }
    let producer = column::<StringArray>(batch, "producer_name");
    let num_messages = column::<Int32Array>(batch, "num_messages");
    let batch_index = column::<Int32Array>(batch, "batch_index");
    for i in 0..per_entry {
        assert_eq!(producer.value(i), md.producer_name);
        assert_eq!(num_messages.value(i), md.num_messages());
    }
    let opaque = md.marker_type.is_some() || md.is_encrypted() || md.is_chunk();
    if kafka {
        let processor = column::<StringArray>(batch, "processor");
        assert!((0..per_entry).all(|i| processor.value(i) == "kafka"));
    } else if opaque || !md.is_batch() {
        assert_eq!(per_entry, 1);
        assert_eq!(batch_index.value(0), -1);
        let value = column::<BinaryArray>(batch, "value");
        let stored_plain = opaque || Codec::from_proto(md.compression.unwrap_or(0)) == Some(Codec::None);
        if stored_plain && md.null_value != Some(true) {
            assert_eq!(value.value(0), view.payload);
        }
    } else {
        let n = md.num_messages() as usize;
        let retained = md.compacted_batch_indexes_count();
        if retained == 0 {
            assert_eq!(per_entry, n);
            for i in 0..per_entry {
                assert_eq!(batch_index.value(i), i as i32);
            }
        } else {
            assert!(per_entry == n || per_entry == retained, "{per_entry} rows, n {n}, retained {retained}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let verified = EntryView::parse(data, true);
    let unverified = EntryView::parse(data, false);
    if let Ok(v) = &verified {
        check_view(data, v);
        if let Some(stored) = v.checksum {
            assert_eq!(v.computed_checksum(), stored);
        }
        assert!(unverified.is_ok(), "parses with the checksum verified but not without");
    }
    if let Ok(v) = &unverified {
        check_view(data, v);
    }
    decode_and_check(data, true, false);
    decode_and_check(data, false, true);
});
