//! The table-level passes the Python bindings call: position lookups, keyed
//! messages, stamping and message-id columns, over entries built by
//! `encode_entry`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BinaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use pulsar_entries_core::compaction::keyed::{keyed_messages, keyed_schema};
use pulsar_entries_core::compaction::lookup::{
    compacted_last_position, find_by_publish_time, last_batch_indexes, max_entry_position,
    topic_last_position, LookupError,
};
use pulsar_entries_core::compaction::CompactOptions;
use pulsar_entries_core::decode::message_id_columns::with_message_ids;
use pulsar_entries_core::format::broker::{Interceptors, Stamper};
use pulsar_entries_core::stamp::{stamp_batches, StampError, Timestamps};
use pulsar_entries_core::{
    encode_entry, DecodeOptions, EncodeOptions, EntryView, ErrorKind, Key, MessageInput,
};

fn entry(keys: &[&str], publish_time: u64) -> Vec<u8> {
    let messages: Vec<MessageInput> = keys
        .iter()
        .map(|k| MessageInput {
            value: Some(format!("v-{k}").into_bytes()),
            key: Some(Key::Text(k.to_string())),
            ..Default::default()
        })
        .collect();
    let opts = EncodeOptions {
        publish_time,
        ..Default::default()
    };
    encode_entry(&messages, &opts).unwrap()
}

fn table(ids: &[(i64, i64)], data: Vec<Option<Vec<u8>>>) -> RecordBatch {
    let ledger: ArrayRef = Arc::new(Int64Array::from_iter_values(ids.iter().map(|i| i.0)));
    let entry: ArrayRef = Arc::new(Int64Array::from_iter_values(ids.iter().map(|i| i.1)));
    let data: ArrayRef = Arc::new(BinaryArray::from_iter(data));
    RecordBatch::try_from_iter(vec![
        ("ledger_id", ledger),
        ("entry_id", entry),
        ("data", data),
    ])
    .unwrap()
}

#[test]
fn lookups_over_entries() {
    let batch = table(
        &[(1, 0), (1, 1), (2, 0)],
        vec![
            Some(entry(&["a"], 10)),
            Some(entry(&["b", "c"], 20)),
            Some(entry(&["d", "e", "f"], 30)),
        ],
    );
    let batches = [batch.clone()];
    assert_eq!(max_entry_position(&batches).unwrap(), Some((2, 0)));
    assert_eq!(max_entry_position(&[]).unwrap(), None);

    let (p, _) = compacted_last_position(&batches, 1 << 20).unwrap().unwrap();
    assert_eq!(
        (p.ledger_id, p.entry_id, p.batch_index, p.publish_time),
        (2, 0, 2, 30)
    );
    let p = topic_last_position(&batches).unwrap().unwrap();
    assert_eq!((p.ledger_id, p.entry_id, p.batch_index), (2, 0, 2));

    assert_eq!(find_by_publish_time(&batches, 0).unwrap(), Some((1, 0)));
    assert_eq!(find_by_publish_time(&batches, 11).unwrap(), Some((1, 1)));
    assert_eq!(find_by_publish_time(&batches, 30).unwrap(), Some((2, 0)));
    assert_eq!(find_by_publish_time(&batches, 31).unwrap(), None);

    let idx = last_batch_indexes(batch.column(2).as_ref(), 1 << 20).unwrap();
    let index = idx.column(0).as_primitive::<Int32Type>();
    assert_eq!(
        index.iter().collect::<Vec<_>>(),
        vec![Some(-1), Some(1), Some(2)]
    );
    assert_eq!(idx.column(1).as_string::<i32>().value(0), "not-batched");
    assert!(idx.column(2).is_null(0));
}

#[test]
fn lookup_errors_have_kinds() {
    let null_last = table(&[(1, 0), (1, 1)], vec![Some(entry(&["a"], 1)), None]);
    let e = compacted_last_position(std::slice::from_ref(&null_last), 1 << 20).unwrap_err();
    assert!(matches!(e, LookupError::NoPosition(_)));
    assert_eq!(e.kind(), ErrorKind::Data);
    assert!(e.to_string().contains("1:1 has no data"), "{e}");
    let e = find_by_publish_time(&[null_last], 5).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Data);
    let idx = last_batch_indexes(&BinaryArray::from(vec![None, Some(&b"x"[..])]), 1 << 20).unwrap();
    assert_eq!(
        idx.column(2).as_string::<i32>().value(0),
        "no entry data (null)"
    );
    assert!(idx
        .column(2)
        .as_string::<i32>()
        .value(1)
        .contains("truncated"));
    let no_data = RecordBatch::try_from_iter(vec![(
        "ledger_id",
        Arc::new(Int64Array::from(vec![1])) as ArrayRef,
    )])
    .unwrap();
    assert_eq!(
        max_entry_position(&[no_data]).unwrap_err().kind(),
        ErrorKind::InputSchema
    );
}

#[test]
fn keyed_messages_rows_and_errors() {
    let batch = table(
        &[(1, 0), (1, 1), (1, 2)],
        vec![Some(entry(&["a", "b"], 5)), None, Some(b"junk".to_vec())],
    );
    let out = keyed_messages(&[batch], CompactOptions::default()).unwrap();
    assert_eq!(out.len(), 1);
    let b = &out[0];
    assert_eq!(b.schema(), keyed_schema());
    assert_eq!(b.num_rows(), 4);
    let key = b.column(4).as_string::<i32>();
    let value = b.column(5).as_binary::<i32>();
    let error = b.column(8).as_string::<i32>();
    assert_eq!((key.value(0), value.value(0)), ("a", &b"v-a"[..]));
    assert_eq!((key.value(1), value.value(1)), ("b", &b"v-b"[..]));
    assert_eq!(b.column(3).as_primitive::<Int32Type>().value(1), 1);
    assert_eq!(b.column(6).as_primitive::<Int64Type>().value(0), 5);
    assert!(error.is_null(0) && error.is_null(1));
    assert_eq!(error.value(2), "entry data is null");
    assert!(key.is_null(2) && key.is_null(3));
    assert!(error.value(3).contains("truncated"), "{}", error.value(3));
    assert_eq!(b.column(2).as_primitive::<Int64Type>().value(3), 2);
}

#[test]
fn stamp_batches_in_table_order() {
    let batch = table(
        &[(1, 0), (1, 1)],
        vec![Some(entry(&["a"], 1)), Some(entry(&["b", "c"], 2))],
    );
    let mut stamper = Stamper::new(-1, Interceptors::default()).unwrap();
    let times = Timestamps::PerEntry(vec![100, 200]);
    let (schema, out) = stamp_batches(
        &batch.schema(),
        std::slice::from_ref(&batch),
        &mut stamper,
        &times,
    )
    .unwrap();
    assert_eq!(schema.field(2).data_type(), &DataType::Binary);
    let data = out[0].column(2).as_binary::<i32>();
    let first = EntryView::parse(data.value(0), true).unwrap();
    let second = EntryView::parse(data.value(1), true).unwrap();
    let (a, b) = (
        first.broker_entry_metadata.unwrap(),
        second.broker_entry_metadata.unwrap(),
    );
    assert_eq!((a.index, a.broker_timestamp), (Some(0), Some(100)));
    assert_eq!((b.index, b.broker_timestamp), (Some(2), Some(200)));

    let mut stamper = Stamper::new(-1, Interceptors::default()).unwrap();
    let wrong = Timestamps::PerEntry(vec![1]);
    let e = stamp_batches(&batch.schema(), &[batch], &mut stamper, &wrong).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Options);

    let bad = table(&[(4, 7)], vec![Some(b"\x00\x00\x00\x09ab".to_vec())]);
    let e = stamp_batches(&bad.schema(), &[bad], &mut stamper, &Timestamps::Fixed(1)).unwrap_err();
    assert!(matches!(e, StampError::Row { .. }));
    assert_eq!(e.kind(), ErrorKind::Data);
    assert!(
        e.to_string()
            .starts_with("row 0 (ledger 4, entry 7): truncated"),
        "{e}"
    );
    let null = table(&[(4, 8)], vec![None]);
    let e = stamp_batches(&null.schema(), &[null], &mut stamper, &Timestamps::Clock).unwrap_err();
    assert_eq!(
        e.to_string(),
        "row 0 (ledger 4, entry 8): entry data is null"
    );
}

#[test]
fn message_id_columns_appended_once() {
    let batch = table(&[(1, 0)], vec![Some(entry(&["a", "b"], 1))]);
    let decoded =
        pulsar_entries_core::decode::decode_record_batch(&batch, DecodeOptions::default()).unwrap();
    let schema = decoded[0].schema();
    let (out_schema, out) = with_message_ids(&schema, &decoded).unwrap();
    let n = out_schema.fields().len();
    assert_eq!(out_schema.field(n - 1).name(), "message_id_str");
    let text = out[0].column(n - 1).as_string::<i32>();
    assert_eq!(text.value(1), "1:0:-1:1");
    let e = with_message_ids(&out_schema, &out).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InputSchema);
    let e = with_message_ids(
        &Schema::new(vec![Field::new("x", DataType::Int8, true)]),
        &[],
    );
    assert!(e.is_ok(), "an empty input needs no id columns");
}
