//! Every core error answers `kind()`: one representative failure per kind,
//! raised through the public API, with its message text unchanged.

use std::io::{self, Write};
use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch};
use pulsar_entries_core::chunks::{Reassembler, ReassemblyOptions};
use pulsar_entries_core::compaction::compactor::compact_batches;
use pulsar_entries_core::compaction::CompactOptions;
use pulsar_entries_core::decode::decode_record_batch;
use pulsar_entries_core::error::FormatError;
use pulsar_entries_core::offload::{write_streaming, StreamingLedger};
use pulsar_entries_core::{
    encode_entry, message_schema, Codec, DecodeOptions, EncodeOptions, EntryError, EntryView,
    ErrorKind, Key, MessageInput,
};

fn entries(ids: &[(i64, i64)], data: Vec<Vec<u8>>) -> RecordBatch {
    RecordBatch::try_from_iter(vec![
        (
            "ledger_id",
            Arc::new(Int64Array::from_iter_values(ids.iter().map(|p| p.0))) as ArrayRef,
        ),
        (
            "entry_id",
            Arc::new(Int64Array::from_iter_values(ids.iter().map(|p| p.1))) as ArrayRef,
        ),
        (
            "data",
            Arc::new(BinaryArray::from_iter_values(data.iter())) as ArrayRef,
        ),
    ])
    .unwrap()
}

fn entry(key: &str) -> Vec<u8> {
    let message = MessageInput {
        key: Some(Key::Text(key.into())),
        value: Some(b"v".to_vec()),
        ..Default::default()
    };
    encode_entry(&[message], &EncodeOptions::default()).unwrap()
}

#[test]
fn a_missing_column_is_an_input_schema_error() {
    let no_data = RecordBatch::try_from_iter(vec![(
        "ledger_id",
        Arc::new(Int64Array::from(vec![1])) as ArrayRef,
    )])
    .unwrap();
    let e = decode_record_batch(&no_data, DecodeOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InputSchema);
    assert!(matches!(e, EntryError::Schema(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        "input schema: input has no `entry_id` column"
    );
}

#[test]
fn a_bad_option_value_is_an_options_error() {
    let e = "brotli".parse::<Codec>().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Options);
    assert!(
        e.to_string().contains("unknown compression \"brotli\""),
        "{e}"
    );

    let opts = ReassemblyOptions {
        max_pending: Some(0),
        ..Default::default()
    };
    let e = Reassembler::new(message_schema(), opts)
        .err()
        .expect("max_pending 0 is rejected");
    assert_eq!(e.kind(), ErrorKind::Options);
    assert!(
        e.to_string().contains("max_pending must be at least 1"),
        "{e}"
    );
}

#[test]
fn unsorted_rows_are_an_order_error() {
    let input = entries(&[(1, 2), (1, 1)], vec![entry("a"), entry("b")]);
    let e = compact_batches(&[input], CompactOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Order);
    assert!(matches!(e, EntryError::Order(_)), "{e:?}");
    assert!(
        e.to_string().contains("entries are not in topic order"),
        "{e}"
    );
}

#[test]
fn malformed_bytes_are_a_data_error_from_the_format_layer() {
    let good = entry("k");
    let e = EntryView::parse(&good[..good.len() / 2], true).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Data);
    let EntryError::Format(inner) = &e else {
        panic!("not a format error: {e:?}")
    };
    assert_eq!(inner.kind(), ErrorKind::Data);
    assert!(matches!(inner, FormatError::Truncated { .. }), "{inner:?}");
    // The wrapper adds nothing to the format layer's text.
    assert_eq!(e.to_string(), inner.to_string());

    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    let e = EntryView::parse(&flipped, true).unwrap_err();
    assert!(
        matches!(e, EntryError::Format(FormatError::ChecksumMismatch { .. })),
        "{e:?}"
    );
    assert_eq!(e.kind(), ErrorKind::Data);
}

/// A writer whose every write fails.
struct Broken;

impl Write for Broken {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::other("disk on fire"))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn offload_errors_have_kinds_too() {
    let data = entry("k");
    let ledgers = [StreamingLedger {
        ledger_id: 1,
        first_entry_id: 0,
        entries: vec![&data[..]],
    }];
    let e = write_streaming(&mut Broken, &ledgers, 1 << 16, 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(e.to_string().contains("disk on fire"), "{e}");

    let e = write_streaming(&mut Vec::new(), &[], usize::MAX, 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Options);
}
