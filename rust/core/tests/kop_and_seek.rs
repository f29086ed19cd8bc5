//! KoP Kafka entries through `Decoder`, and stamp + seek against linear references.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BinaryArray, Int64Array, RecordBatch};
use proptest::prelude::*;
use pulsar_entries_core::decode::decode_record_batch;
use pulsar_entries_core::format::broker::{Interceptors, Stamper};
use pulsar_entries_core::processor::kafka::codec::KafkaCodec;
use pulsar_entries_core::processor::kafka::encode::{
    encode_kop_entry, encode_record_batch, KafkaBatchOptions, KafkaRecordInput,
};
use pulsar_entries_core::seek::{
    entry_timestamp, find_position_by_offset, find_position_by_time, EntryTable,
};
use pulsar_entries_core::{encode_entry, DecodeOptions, EncodeOptions, MessageInput};

fn table(data: &[Vec<u8>]) -> RecordBatch {
    let n = data.len() as i64;
    RecordBatch::try_from_iter(vec![
        (
            "ledger_id",
            Arc::new(Int64Array::from(vec![3; n as usize])) as ArrayRef,
        ),
        (
            "entry_id",
            Arc::new(Int64Array::from((0..n).collect::<Vec<_>>())) as ArrayRef,
        ),
        (
            "data",
            Arc::new(BinaryArray::from_iter_values(
                data.iter().map(Vec::as_slice),
            )) as ArrayRef,
        ),
    ])
    .unwrap()
}

fn decode(data: &[Vec<u8>]) -> RecordBatch {
    let batches = decode_record_batch(&table(data), DecodeOptions::default()).unwrap();
    assert_eq!(batches.len(), 1, "small inputs decode into one batch");
    batches[0].clone()
}

fn codec() -> impl Strategy<Value = KafkaCodec> {
    prop::sample::select(KafkaCodec::ALL.to_vec())
}

fn record() -> impl Strategy<Value = KafkaRecordInput> {
    (
        prop::option::of(prop::collection::vec(any::<u8>(), 0..12)),
        prop::option::of(prop::collection::vec(any::<u8>(), 0..200)),
        prop::collection::vec(
            (
                "[a-z]{1,6}",
                prop::option::of(prop::collection::vec(any::<u8>(), 0..8)),
            ),
            0..3,
        ),
        0i64..10_000,
    )
        .prop_map(|(key, value, headers, ts)| KafkaRecordInput {
            key,
            value,
            headers,
            timestamp: Some(1_700_000_000_000 + ts),
            offset_delta: None,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Records written with our encoder in any codec, several batches per
    /// entry, decode back exactly, with offsets continuing across batches.
    #[test]
    fn kop_entries_round_trip(batches in prop::collection::vec((prop::collection::vec(record(), 1..20), codec()), 1..4),
                              start in -1i64..1000) {
        let encoded: Vec<Vec<u8>> = batches.iter().map(|(recs, c)| encode_record_batch(recs, &KafkaBatchOptions {
            compression: *c, ..Default::default() }).unwrap()).collect();
        let refs: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
        let entry = encode_kop_entry(&refs, 5).unwrap();
        let mut stamper = Stamper::new(start, Interceptors::default()).unwrap();
        let stamped = stamper.stamp(&entry, 9).unwrap();
        let out = decode(&[stamped]);
        let all: Vec<&KafkaRecordInput> = batches.iter().flat_map(|(r, _)| r).collect();
        prop_assert_eq!(out.num_rows(), all.len());
        prop_assert_eq!(out.column_by_name("error").unwrap().null_count(), all.len());
        let values = out.column_by_name("value").unwrap().as_binary::<i32>();
        let keys = out.column_by_name("ordering_key").unwrap().as_binary::<i32>();
        let offsets = out.column_by_name("offset").unwrap().as_primitive::<Int64Type>();
        for (i, r) in all.iter().enumerate() {
            prop_assert_eq!((!values.is_null(i)).then(|| values.value(i)), r.value.as_deref());
            prop_assert_eq!((!keys.is_null(i)).then(|| keys.value(i)), r.key.as_deref());
            prop_assert_eq!(offsets.value(i), start + 1 + i as i64);
        }
        prop_assert_eq!(stamper.index(), start + all.len() as i64);
    }

    /// A KoP entry with any byte changed never panics: it decodes cleanly or
    /// gives exactly one error row.
    #[test]
    fn damaged_kop_entries_give_one_error_row(recs in prop::collection::vec(record(), 1..10), c in codec(),
                                              at in any::<prop::sample::Index>(), xor in 1u8..=255) {
        let batch = encode_record_batch(&recs, &KafkaBatchOptions { compression: c, ..Default::default() }).unwrap();
        let mut entry = encode_kop_entry(&[&batch], 5).unwrap();
        let i = at.index(entry.len());
        entry[i] ^= xor;
        let out = decode(&[entry]);
        let errors = out.num_rows() - out.column_by_name("error").unwrap().null_count();
        prop_assert!(errors == 0 || (errors == 1 && out.num_rows() == 1), "{} rows, {} errors", out.num_rows(), errors);
    }

    /// Seek by time equals a linear scan whenever entry times are ordered
    /// (broker-stamped), whatever the producers' clocks say.
    #[test]
    fn seek_by_time_matches_linear_scan(steps in prop::collection::vec((0u64..20, -50_000i64..50_000, 1usize..5), 1..60),
                                        probe in -5i64..1_000) {
        let mut stamper = Stamper::new(-1, Interceptors::default()).unwrap();
        let mut broker = 1_700_000_000_000u64;
        let mut data = Vec::new();
        for (dt, skew, n) in &steps {
            broker += dt;
            let e = encode_entry(&vec![MessageInput::default(); *n], &EncodeOptions {
                batch: Some(true),
                publish_time: (broker as i64 + skew) as u64,
                ..Default::default()
            }).unwrap();
            data.push(stamper.stamp(&e, broker).unwrap());
        }
        let t = EntryTable::new(&[table(&data)]).unwrap();
        let time = 1_700_000_000_000 + probe;
        let times: Vec<i64> = data.iter().map(|d| entry_timestamp(d).unwrap() as i64).collect();
        let linear = times.iter().rposition(|&ts| ts < time).map_or(0, |r| r + 1);
        let pos = find_position_by_time(&t, time).unwrap();
        prop_assert_eq!(pos.row, linear);
        prop_assert!(pos.entries_read <= 2 + (data.len().max(1)).ilog2() as usize + 1);
        // Offset seek: the entry whose index range holds the offset.
        let offset = probe.rem_euclid(stamper.index() + 2);
        let pos = find_position_by_offset(&t, offset).unwrap();
        let mut last = -1i64;
        let mut expect = (data.len(), None);
        for (row, (_, _, n)) in steps.iter().enumerate() {
            let first = last + 1;
            last += *n as i64;
            if (first..=last).contains(&offset) {
                expect = (row, Some((offset - first) as i32));
                break;
            }
        }
        prop_assert_eq!((pos.row, pos.batch_index), expect);
    }
}

/// Pulsar transactions: messages carry the txn id; the broker's TXN_COMMIT
/// (21) / TXN_ABORT (22) marker for that id settles their status.
#[test]
fn pulsar_transaction_status_comes_from_markers() {
    use arrow_array::StringArray;
    use pulsar_entries_core::format::encode::frame_entry;
    use pulsar_entries_core::proto;

    let txn_entry = |least: u64, value: &[u8]| {
        let md = proto::MessageMetadata {
            producer_name: "p".into(),
            publish_time: 1,
            uncompressed_size: Some(value.len() as u32),
            txnid_most_bits: Some(1),
            txnid_least_bits: Some(least),
            ..Default::default()
        };
        frame_entry(&md, value, true, None)
    };
    let marker = |kind: i32, least: u64| {
        let md = proto::MessageMetadata {
            producer_name: "pulsar.txn.marker".into(),
            publish_time: 2,
            marker_type: Some(kind),
            txnid_most_bits: Some(1),
            txnid_least_bits: Some(least),
            ..Default::default()
        };
        frame_entry(&md, b"", true, None)
    };
    let plain = encode_entry(&[MessageInput::default()], &EncodeOptions::default()).unwrap();
    let data = vec![
        txn_entry(2, b"c"),
        txn_entry(3, b"a"),
        txn_entry(4, b"o"),
        plain,
        marker(21, 2),
        marker(22, 3),
    ];
    let out = decode(&data);
    let status = out
        .column_by_name("txn_status")
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    let got: Vec<Option<&str>> = (0..status.len())
        .map(|i| (!status.is_null(i)).then(|| status.value(i)))
        .collect();
    assert_eq!(
        got,
        vec![Some("committed"), Some("aborted"), Some("unknown"), None]
    );
}

/// The seeks are binary searches: on rows out of topic order they would
/// answer silently wrong, so they refuse them (as compaction does).
#[test]
fn seeks_refuse_entries_out_of_topic_order() {
    let data: Vec<Vec<u8>> = (0..3)
        .map(|i| {
            encode_entry(
                &[MessageInput::default()],
                &EncodeOptions {
                    publish_time: 1_000 + i,
                    ..Default::default()
                },
            )
            .unwrap()
        })
        .collect();
    let sorted = table(&data);
    let swapped = RecordBatch::try_new(
        sorted.schema(),
        vec![
            sorted.column(0).clone(),
            Arc::new(Int64Array::from(vec![0, 2, 1])) as ArrayRef,
            sorted.column(2).clone(),
        ],
    )
    .unwrap();
    let t = EntryTable::new(&[swapped]).unwrap();
    for err in [
        find_position_by_time(&t, 1_001).unwrap_err(),
        find_position_by_offset(&t, 0).unwrap_err(),
    ] {
        assert_eq!(err.kind(), pulsar_entries_core::ErrorKind::Order);
        assert!(err.to_string().contains("3:1 comes after 3:2"), "{err}");
    }
    let t = EntryTable::new(&[sorted]).unwrap();
    assert_eq!(find_position_by_time(&t, 1_001).unwrap().row, 1);
}

/// A null id is an error row, never a message at −1; an id out of range and
/// a second `data` column are input errors.
#[test]
fn null_ids_duplicate_columns_and_out_of_range_ids() {
    let e = encode_entry(&[MessageInput::default()], &EncodeOptions::default()).unwrap();
    let data = Arc::new(BinaryArray::from_iter_values([e.as_slice(), e.as_slice()])) as ArrayRef;
    let ids = |v: Vec<Option<i64>>| Arc::new(Int64Array::from(v)) as ArrayRef;
    let batch = RecordBatch::try_from_iter(vec![
        ("ledger_id", ids(vec![Some(7), None])),
        ("entry_id", ids(vec![Some(0), Some(1)])),
        ("data", data.clone()),
    ])
    .unwrap();
    let out = &decode_record_batch(&batch, DecodeOptions::default()).unwrap()[0];
    let errors = out.column_by_name("error").unwrap().as_string::<i32>();
    assert!(errors.is_null(0));
    assert_eq!(errors.value(1), "ledger_id or entry_id is null");
    let twice = RecordBatch::try_from_iter(vec![
        ("ledger_id", ids(vec![Some(7), Some(7)])),
        ("entry_id", ids(vec![Some(0), Some(1)])),
        ("data", data.clone()),
        ("data", data.clone()),
    ])
    .unwrap();
    let err = decode_record_batch(&twice, DecodeOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains("more than one `data` column"),
        "{err}"
    );
    let huge = Arc::new(arrow_array::UInt64Array::from(vec![7, u64::MAX])) as ArrayRef;
    let out_of_range = RecordBatch::try_from_iter(vec![
        ("ledger_id", huge),
        ("entry_id", ids(vec![Some(0), Some(1)])),
        ("data", data),
    ])
    .unwrap();
    let err = decode_record_batch(&out_of_range, DecodeOptions::default()).unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
}

/// Found by the `decode_entry` fuzz target: a KoP entry whose payload holds no
/// Kafka record (here an empty payload, with a broker prefix) gave no row at
/// all, so the entry vanished from the output. It is one error row now.
#[test]
fn a_kop_entry_without_records_is_one_error_row() {
    let entry = [
        0x0e, 0x02, 0x00, 0x00, 0x00, 0x09, 0x08, 0x81, 0xd0, 0x95, 0xff, 0xbc, 0x31, 0x10, 0x03,
        0x00, 0x00, 0x00, 0x24, 0x0a, 0x00, 0x10, 0x00, 0x18, 0x80, 0xd0, 0x95, 0xff, 0xbc, 0x31,
        0x22, 0x15, 0x0a, 0x0c, b'e', b'n', b't', b'r', b'y', b'.', b'f', b'o', b'r', b'm', b'a',
        b't', 0x12, 0x05, b'k', b'a', b'f', b'k', b'a', 0x58, 0x00,
    ]
    .to_vec();
    for keep_markers in [false, true] {
        let opts = DecodeOptions {
            keep_markers,
            ..DecodeOptions::default()
        };
        let batches = decode_record_batch(&table(std::slice::from_ref(&entry)), opts).unwrap();
        assert_eq!(batches.len(), 1);
        let out = &batches[0];
        assert_eq!(out.num_rows(), 1, "keep_markers={keep_markers}");
        let error = out.column_by_name("error").unwrap().as_string::<i32>();
        assert!(
            error.is_valid(0) && error.value(0).contains("no Kafka record in the payload"),
            "{:?}",
            error.is_valid(0).then(|| error.value(0))
        );
    }
}
