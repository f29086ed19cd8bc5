//! One fuzz input = the bytes of one stored entry.
//!
//! Lean: one long-lived decoder per mode (checksum verified and markers
//! skipped; not verified and markers kept), each decoding the input once, so
//! the fuzzer measures decoding, not harness allocation (issue 16, item 15).
//! Checks the decoder's contract:
//! - never a panic;
//! - no rows only for a skipped marker or KoP control records; a bad entry is
//!   exactly one error row (the parse error's text when framing/metadata is
//!   unreadable);
//! - every column has one value per row;
//! - a batch gives `num_messages_in_batch` rows (or the PIP-429 compacted
//!   count) with positional `batch_index`; a non-batched plain entry's `value`
//!   is its payload; a KoP `entry.format=kafka` entry's rows name the Kafka
//!   processor;
//! - a parse that succeeds with the checksum verified also succeeds without
//!   it, the stored CRC matches, and repeated fields re-read lazily agree with
//!   the counts taken at parse time.
#![no_main]

use std::cell::RefCell;

use arrow_array::{Array, BinaryArray, Int32Array, RecordBatch, StringArray};
use libfuzzer_sys::fuzz_target;
use pulsar_entries_core::{Codec, DecodeOptions, Decoder, EntryId, EntryView, Lossy};

/// Kept small so that inputs claiming a huge payload stay cheap to refuse.
const MAX_UNCOMPRESSED: usize = 1 << 20;

thread_local! {
    /// `(verify_checksum, keep_markers)` = (true, false) and (false, true).
    static DECODERS: RefCell<[(bool, Decoder); 2]> = RefCell::new([
        (true, decoder(true, false)),
        (false, decoder(false, true)),
    ]);
}

fn decoder(verify_checksum: bool, keep_markers: bool) -> Decoder {
    Decoder::new(DecodeOptions {
        verify_checksum,
        keep_markers,
        max_uncompressed_size: MAX_UNCOMPRESSED,
        ..DecodeOptions::default()
    })
}

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
    let md = &view.metadata;
    assert_eq!(md.properties.iter().count(), md.properties.len());
    assert_eq!(md.replicate_to().count(), md.replicate_to_count());
    assert_eq!(
        md.compacted_batch_indexes().count(),
        md.compacted_batch_indexes_count()
    );
    assert_eq!(md.encryption_keys().count(), md.encryption_keys_count());
}

fn check_rows(
    data: &[u8],
    view: Result<EntryView<'_>, String>,
    keep_markers: bool,
    batches: &[RecordBatch],
) {
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let Some(batch) = batches.first() else {
        panic!("finish gave no batch");
    };
    assert_eq!(batches.len(), 1, "one small entry fills one batch");
    for col in batch.columns() {
        assert_eq!(col.len(), rows);
    }
    let error = column::<StringArray>(batch, "error");
    let view = match view {
        Err(e) => {
            assert_eq!(rows, 1);
            assert_eq!(error.value(0), e);
            assert!(column::<StringArray>(batch, "producer_name").is_null(0));
            return;
        }
        Ok(v) => v,
    };
    let md = &view.metadata;
    let kafka = md.marker_type.is_none()
        && !md.is_encrypted()
        && !md.is_chunk()
        && md
            .properties
            .iter()
            .any(|(k, v)| k == "entry.format" && v.eq_ignore_ascii_case("kafka"));
    if rows == 0 {
        assert!(
            (md.marker_type.is_some() || kafka) && !keep_markers,
            "no rows for an entry that is neither a marker nor KoP control records"
        );
        return;
    }
    assert!(
        !(md.marker_type.is_some() && !keep_markers),
        "a skipped marker produced rows"
    );
    if error.null_count() < rows {
        assert_eq!(rows, 1, "an error row must be the entry's only row");
        return;
    }
    let batch_index = column::<Int32Array>(batch, "batch_index");
    let opaque = md.marker_type.is_some() || md.is_encrypted() || md.is_chunk();
    if kafka {
        let processor = column::<StringArray>(batch, "processor");
        assert!((0..rows).all(|i| processor.value(i) == "kafka"));
    } else if opaque || !md.is_batch() {
        assert_eq!(rows, 1);
        assert_eq!(batch_index.value(0), -1);
        let stored_plain =
            opaque || Codec::from_proto(md.compression.unwrap_or(0)) == Some(Codec::None);
        if stored_plain && md.null_value != Some(true) {
            assert_eq!(column::<BinaryArray>(batch, "value").value(0), view.payload);
        }
    } else {
        let n = md.num_messages() as usize;
        let retained = md.compacted_batch_indexes_count();
        if retained == 0 {
            assert_eq!(rows, n);
            assert!((0..rows).all(|i| batch_index.value(i) == i as i32));
        } else {
            assert!(
                rows == n || rows == retained,
                "{rows} rows, n {n}, retained {retained}"
            );
        }
    }
    let _ = data;
}

fuzz_target!(|data: &[u8]| {
    // As the decoders parse (UTF-8 errors replaced, the default).
    let lossy = Lossy::default();
    let verified = EntryView::parse_with(data, true, Some(&lossy));
    let unverified = EntryView::parse_with(data, false, Some(&lossy));
    if let Ok(strict) = EntryView::parse(data, true) {
        // Valid text parses the same either way.
        assert!(verified
            .as_ref()
            .is_ok_and(|v| v.metadata.producer_name == strict.metadata.producer_name));
    }
    if let Ok(v) = &verified {
        check_view(data, v);
        if let Some(stored) = v.checksum {
            assert_eq!(v.computed_checksum(), stored);
        }
        assert!(
            unverified.is_ok(),
            "parses with the checksum verified but not without"
        );
    }
    if let Ok(v) = &unverified {
        check_view(data, v);
    }
    let id = EntryId {
        ledger_id: 3,
        entry_id: 5,
        partition: -1,
    };
    DECODERS.with(|d| {
        for (verify, decoder) in d.borrow_mut().iter_mut() {
            decoder.decode_entry(id, Some(data));
            let batches = decoder.finish();
            let view = if *verify { &verified } else { &unverified };
            let view = view.as_ref().map(Clone::clone).map_err(|e| e.to_string());
            check_rows(data, view, !*verify, &batches);
        }
    });
});
