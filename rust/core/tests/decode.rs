//! Entries → Arrow: row shapes, error rows and count reconciliation, plus
//! property tests (encode → decode round trip, single-bit flips).
//!
//! One file on purpose (about 600 lines): the row-shape tests and the property
//! tests check the same contract (one row per message, one error row per bad
//! entry) through the same `entries` / `decode` helpers.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampMillisecondType};
use arrow_array::{Array, BinaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use proptest::prelude::*;
use pulsar_entries_core::format::encode::frame_entry;
use pulsar_entries_core::proto;
use pulsar_entries_core::{
    encode_entry, message_schema, Codec, DecodeOptions, Decoder, EncodeOptions, EntryId, Key,
    MessageInput,
};

fn entries(data: &[Vec<u8>]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("entry_id", DataType::Int64, false),
        Field::new("data", DataType::Binary, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(vec![7; data.len()])),
            Arc::new(Int64Array::from_iter_values(0..data.len() as i64)),
            Arc::new(BinaryArray::from_iter_values(data.iter())),
        ],
    )
    .unwrap()
}

fn decode(data: &[Vec<u8>], opts: DecodeOptions) -> RecordBatch {
    let mut d = Decoder::new(opts);
    d.decode_record_batch(&entries(data)).unwrap();
    let batches = d.finish();
    arrow_select_concat(&batches)
}

fn arrow_select_concat(batches: &[RecordBatch]) -> RecordBatch {
    assert_eq!(batches.len(), 1, "small inputs decode into one batch");
    batches[0].clone()
}

fn col<'a>(b: &'a RecordBatch, name: &str) -> &'a Arc<dyn Array> {
    b.column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
}

fn errors(b: &RecordBatch) -> Vec<Option<String>> {
    col(b, "error")
        .as_string::<i32>()
        .iter()
        .map(|s| s.map(str::to_owned))
        .collect()
}

fn msg(value: &[u8]) -> MessageInput {
    MessageInput {
        value: Some(value.to_vec()),
        ..Default::default()
    }
}

fn opts() -> EncodeOptions {
    EncodeOptions {
        producer_name: "p".into(),
        publish_time: 1_700_000_000_000,
        ..Default::default()
    }
}

#[test]
fn schema_has_the_documented_columns() {
    let names: Vec<_> = message_schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    for required in [
        "ledger_id",
        "entry_id",
        "partition",
        "batch_index",
        "num_messages",
        "producer_name",
        "sequence_id",
        "publish_time",
        "event_time",
        "key",
        "key_b64_encoded",
        "ordering_key",
        "properties",
        "value",
        "compacted_out",
        "schema_version",
        "compression",
        "uncompressed_size",
        "encrypted",
        "broker_timestamp",
        "broker_index",
        "uuid",
        "chunk_id",
        "num_chunks",
        "total_chunk_size",
        "marker_type",
        "txnid_most_bits",
        "txnid_least_bits",
        "error",
    ] {
        assert!(
            names.iter().any(|n| n == required),
            "missing column {required}"
        );
    }
}

#[test]
fn good_and_bad_entries_reconcile() {
    let batch = encode_entry(
        &[msg(b"a"), msg(b"b"), msg(b"c")],
        &EncodeOptions {
            compression: Codec::Lz4,
            ..opts()
        },
    )
    .unwrap();
    let single = encode_entry(&[msg(b"solo")], &opts()).unwrap();
    let mut corrupt = batch.clone();
    let n = corrupt.len();
    corrupt[n - 2] ^= 0x40;
    let inputs = vec![
        batch,
        single,
        corrupt,
        vec![],
        b"\x00\x00\x00\xffjunk".to_vec(),
    ];
    let out = decode(&inputs, DecodeOptions::default());
    // 3 + 1 messages, then exactly one error row per bad entry.
    assert_eq!(out.num_rows(), 7);
    let errs = errors(&out);
    assert_eq!(errs.iter().filter(|e| e.is_none()).count(), 4);
    let entry_ids: Vec<_> = col(&out, "entry_id")
        .as_primitive::<Int64Type>()
        .values()
        .to_vec();
    assert_eq!(entry_ids, vec![0, 0, 0, 1, 2, 3, 4]);
    assert!(
        errs[4].as_deref().unwrap().starts_with("checksum mismatch"),
        "{:?}",
        errs[4]
    );
    assert_eq!(
        errs[5].as_deref().unwrap(),
        "truncated metadata size at entry offset 0: needs 4 bytes, 0 available"
    );
    assert!(
        errs[6]
            .as_deref()
            .unwrap()
            .contains("MessageMetadata at entry offset 4"),
        "{:?}",
        errs[6]
    );
    // The metadata of an entry that failed later is still reported.
    let batch_index = col(&out, "batch_index").as_primitive::<Int32Type>();
    assert!(batch_index.is_null(4));
    assert_eq!(batch_index.value(0), 0);
    assert_eq!(batch_index.value(3), -1);
}

#[test]
fn a_bad_record_inside_a_batch_gives_one_error_row_with_its_metadata() {
    let good = encode_entry(
        &[msg(b"one"), msg(b"two")],
        &EncodeOptions {
            checksum: false,
            ..opts()
        },
    )
    .unwrap();
    // Cut the last payload byte: record 1's payload_size now overruns.
    let cut = good[..good.len() - 1].to_vec();
    let out = decode(&[cut], DecodeOptions::default());
    assert_eq!(out.num_rows(), 1);
    let err = errors(&out)[0].clone().unwrap();
    assert!(
        err.starts_with("batch record 1 at batch-buffer offset"),
        "{err}"
    );
    assert!(
        err.contains("payload_size 3 exceeds the 2 bytes left"),
        "{err}"
    );
    assert_eq!(col(&out, "producer_name").as_string::<i32>().value(0), "p");
    assert_eq!(
        col(&out, "num_messages")
            .as_primitive::<Int32Type>()
            .value(0),
        2
    );
}

#[test]
fn null_data_is_an_error_row() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("entry_id", DataType::Int64, false),
        Field::new("data", DataType::LargeBinary, true),
    ]));
    let input = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(vec![1, 1])),
            Arc::new(Int64Array::from(vec![5, 6])),
            Arc::new(arrow_array::LargeBinaryArray::from_opt_vec(vec![
                None,
                Some(&encode_entry(&[msg(b"x")], &opts()).unwrap()[..]),
            ])),
        ],
    )
    .unwrap();
    let mut d = Decoder::new(DecodeOptions::default());
    d.decode_record_batch(&input).unwrap();
    let out = d.finish().remove(0);
    assert_eq!(errors(&out), vec![Some("entry data is null".into()), None]);
}

#[test]
fn markers_are_skipped_unless_kept() {
    let md = proto::MessageMetadata {
        producer_name: "pulsar.txn.marker".into(),
        sequence_id: 5,
        publish_time: 1_700_000_000_000,
        marker_type: Some(21),
        txnid_least_bits: Some(2),
        txnid_most_bits: Some(1),
        ..Default::default()
    };
    let marker = frame_entry(&md, &[], true, None);
    // Spec vector E4.
    assert_eq!(
        hex::encode(&marker),
        "0e01c6b8e8fd000000250a1170756c7361722e74786e2e6d61726b657210051880d095ffbc31a00115b00102b80101"
    );
    let data = vec![marker.clone(), encode_entry(&[msg(b"x")], &opts()).unwrap()];
    assert_eq!(decode(&data, DecodeOptions::default()).num_rows(), 1);
    let kept = decode(
        &data,
        DecodeOptions {
            keep_markers: true,
            ..Default::default()
        },
    );
    assert_eq!(kept.num_rows(), 2);
    let marker_type = col(&kept, "marker_type").as_primitive::<Int32Type>();
    assert_eq!((marker_type.value(0), marker_type.is_null(1)), (21, true));
    assert_eq!(
        col(&kept, "txnid_most_bits")
            .as_primitive::<Int64Type>()
            .value(0),
        1
    );
    assert_eq!(
        col(&kept, "txnid_least_bits")
            .as_primitive::<Int64Type>()
            .value(0),
        2
    );
}

#[test]
fn encrypted_batches_are_one_opaque_row() {
    let md = proto::MessageMetadata {
        producer_name: "p".into(),
        sequence_id: 0,
        publish_time: 1,
        partition_key: Some("k".into()),
        num_messages_in_batch: Some(3),
        compression: Some(1),
        uncompressed_size: Some(999),
        encryption_keys: vec![proto::EncryptionKeys {
            key: "rsa".into(),
            value: vec![1; 16],
            metadata: vec![],
        }],
        encryption_param: Some(vec![7; 12]),
        ..Default::default()
    };
    // Ciphertext that would be "Invalid unknown tag type" if parsed as records.
    let ciphertext = vec![0x0b; 40];
    let entry = frame_entry(&md, &ciphertext, true, None);
    let out = decode(&[entry], DecodeOptions::default());
    assert_eq!(out.num_rows(), 1);
    assert_eq!(errors(&out), vec![None]);
    assert!(col(&out, "encrypted").as_boolean().value(0));
    assert_eq!(
        col(&out, "value").as_binary::<i32>().value(0),
        &ciphertext[..]
    );
    assert_eq!(
        col(&out, "num_messages")
            .as_primitive::<Int32Type>()
            .value(0),
        3
    );
    assert_eq!(
        col(&out, "batch_index")
            .as_primitive::<Int32Type>()
            .value(0),
        -1
    );
    assert_eq!(col(&out, "key").as_string::<i32>().value(0), "k");
}

#[test]
fn chunks_expose_their_fields_and_stay_compressed() {
    let whole = compress_text(5000);
    let compressed =
        pulsar_entries_core::format::compression::compress(Codec::Zstd, &whole).unwrap();
    let half = compressed.len() / 2;
    let chunk = |id: i32, part: &[u8]| {
        let md = proto::MessageMetadata {
            producer_name: "p".into(),
            sequence_id: 9,
            publish_time: 1,
            compression: Some(3),
            uncompressed_size: Some(whole.len() as u32),
            uuid: Some("p-9".into()),
            num_chunks_from_msg: Some(2),
            total_chunk_msg_size: Some(compressed.len() as i32),
            chunk_id: Some(id),
            ..Default::default()
        };
        frame_entry(&md, part, true, None)
    };
    let out = decode(
        &[chunk(0, &compressed[..half]), chunk(1, &compressed[half..])],
        DecodeOptions::default(),
    );
    assert_eq!(out.num_rows(), 2);
    assert_eq!(errors(&out), vec![None, None]);
    assert_eq!(col(&out, "uuid").as_string::<i32>().value(1), "p-9");
    assert_eq!(
        col(&out, "chunk_id")
            .as_primitive::<Int32Type>()
            .values()
            .to_vec(),
        vec![0, 1]
    );
    assert_eq!(
        col(&out, "num_chunks").as_primitive::<Int32Type>().value(0),
        2
    );
    assert_eq!(
        col(&out, "total_chunk_size")
            .as_primitive::<Int32Type>()
            .value(0),
        compressed.len() as i32
    );
    let values = col(&out, "value").as_binary::<i32>();
    assert_eq!([values.value(0), values.value(1)].concat(), compressed);
}

fn compress_text(n: usize) -> Vec<u8> {
    (0..n).map(|i| b"pulsar entries "[i % 15]).collect()
}

#[test]
fn compacted_placeholders_are_flagged_rows() {
    // A batch of 3 where index 1 was compacted out (legacy placeholder shape).
    let records: Vec<u8> = [(&b"a"[..], false), (&b""[..], true), (&b"c"[..], false)]
        .iter()
        .flat_map(|(payload, out)| {
            let smm = proto::SingleMessageMetadata {
                payload_size: payload.len() as i32,
                compacted_out: out.then_some(true),
                partition_key: Some("k".into()),
                ..Default::default()
            };
            let mut r = (prost::Message::encoded_len(&smm) as u32)
                .to_be_bytes()
                .to_vec();
            r.extend(prost::Message::encode_to_vec(&smm));
            r.extend_from_slice(payload);
            r
        })
        .collect();
    let md = proto::MessageMetadata {
        producer_name: "p".into(),
        sequence_id: 0,
        publish_time: 1,
        num_messages_in_batch: Some(3),
        compacted_batch_indexes: vec![0, 2],
        ..Default::default()
    };
    let out = decode(
        &[frame_entry(&md, &records, true, None)],
        DecodeOptions::default(),
    );
    assert_eq!(out.num_rows(), 3);
    let flags: Vec<_> = col(&out, "compacted_out")
        .as_boolean()
        .iter()
        .map(Option::unwrap)
        .collect();
    assert_eq!(flags, vec![false, true, false]);
}

#[test]
fn broker_metadata_and_timestamps() {
    let e = encode_entry(
        &[MessageInput {
            event_time: Some(1234),
            ..msg(b"v")
        }],
        &EncodeOptions {
            broker_timestamp: Some(1_700_000_000_123),
            broker_index: Some(41),
            ..opts()
        },
    )
    .unwrap();
    let out = decode(&[e], DecodeOptions::default());
    let ts = |name| {
        col(&out, name)
            .as_primitive::<TimestampMillisecondType>()
            .value(0)
    };
    assert_eq!(ts("broker_timestamp"), 1_700_000_000_123);
    assert_eq!(ts("publish_time"), 1_700_000_000_000);
    assert_eq!(ts("event_time"), 1234);
    assert_eq!(
        col(&out, "broker_index")
            .as_primitive::<Int64Type>()
            .value(0),
        41
    );
    assert_eq!(
        col(&out, "publish_time").data_type(),
        &DataType::Timestamp(arrow_schema::TimeUnit::Millisecond, Some("UTC".into()))
    );
}

#[test]
fn size_limit_gives_an_error_row_not_an_allocation() {
    let e = encode_entry(
        &[msg(&[b'x'; 10_000])],
        &EncodeOptions {
            compression: Codec::Zstd,
            ..opts()
        },
    )
    .unwrap();
    let out = decode(
        &[e],
        DecodeOptions {
            max_uncompressed_size: 4096,
            ..Default::default()
        },
    );
    let err = errors(&out)[0].clone().unwrap();
    assert!(
        err.starts_with("uncompressed_size 10000 exceeds the limit of 4096 bytes"),
        "{err}"
    );
}

#[test]
fn decoder_cuts_large_outputs_into_several_batches() {
    let big = encode_entry(&[msg(&vec![1u8; 9 << 20])], &opts()).unwrap();
    let data = vec![big; 9];
    let mut d = Decoder::new(DecodeOptions::default());
    for (i, e) in data.iter().enumerate() {
        d.decode_entry(
            EntryId {
                ledger_id: 1,
                entry_id: i as i64,
                partition: -1,
            },
            Some(e),
        );
    }
    let batches = d.finish();
    assert!(batches.len() >= 2);
    assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 9);
}

// ---------------------------------------------------------------- properties

fn arb_message() -> impl Strategy<Value = MessageInput> {
    (
        proptest::option::weighted(0.9, proptest::collection::vec(any::<u8>(), 0..300)),
        prop_oneof![
            Just(None),
            "[a-z0-9]{0,8}".prop_map(|s| Some(Key::Text(s))),
            proptest::collection::vec(any::<u8>(), 0..8).prop_map(|b| Some(Key::Binary(b))),
        ],
        proptest::collection::vec(("[a-z]{1,4}", "[ -~]{0,6}"), 0..3),
        proptest::option::of(1u64..4_000_000_000_000),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..6)),
    )
        .prop_map(
            |(value, key, properties, event_time, ordering_key)| MessageInput {
                value,
                key,
                properties,
                event_time,
                sequence_id: None,
                ordering_key,
            },
        )
}

fn arb_codec() -> impl Strategy<Value = Codec> {
    prop::sample::select(Codec::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn encode_decode_round_trip(
        messages in proptest::collection::vec(arb_message(), 1..20),
        codec in arb_codec(),
        force_batch in any::<bool>(),
        checksum in any::<bool>(),
        seq in 0u64..1_000_000,
    ) {
        let batch = force_batch || messages.len() > 1;
        let opts = EncodeOptions { batch: Some(batch), compression: codec, checksum, sequence_id: seq, ..opts() };
        let messages = if batch { messages } else { messages[..1].to_vec() };
        let entry = encode_entry(&messages, &opts).unwrap();
        let out = decode(&[entry], DecodeOptions::default());
        prop_assert_eq!(out.num_rows(), messages.len());
        prop_assert!(errors(&out).iter().all(Option::is_none));
        let values = col(&out, "value").as_binary::<i32>();
        let keys = col(&out, "key").as_string::<i32>();
        let b64 = col(&out, "key_b64_encoded").as_boolean();
        let seqs = col(&out, "sequence_id").as_primitive::<Int64Type>();
        let event = col(&out, "event_time").as_primitive::<TimestampMillisecondType>();
        let ordering = col(&out, "ordering_key").as_binary::<i32>();
        let props = col(&out, "properties").as_map();
        for (i, m) in messages.iter().enumerate() {
            prop_assert_eq!(values.is_null(i), m.value.is_none());
            if let Some(v) = &m.value {
                prop_assert_eq!(values.value(i), &v[..]);
            }
            match &m.key {
                None => prop_assert!(keys.is_null(i)),
                Some(Key::Text(s)) => { prop_assert_eq!(keys.value(i), s.as_str()); prop_assert!(!b64.value(i)); }
                Some(Key::Binary(b)) => {
                    use base64::Engine as _;
                    prop_assert_eq!(keys.value(i), base64::engine::general_purpose::STANDARD.encode(b));
                    prop_assert!(b64.value(i));
                }
            }
            prop_assert_eq!(seqs.value(i) as u64, seq + i as u64);
            prop_assert_eq!(event.is_null(i), m.event_time.is_none());
            if let Some(t) = m.event_time { prop_assert_eq!(event.value(i) as u64, t); }
            prop_assert_eq!(ordering.is_null(i), m.ordering_key.is_none());
            let entry_props = props.value(i);
            let k = entry_props.column(0).as_string::<i32>();
            let v = entry_props.column(1).as_string::<i32>();
            let got: Vec<_> = (0..k.len()).map(|j| (k.value(j).to_owned(), v.value(j).to_owned())).collect();
            prop_assert_eq!(got, m.properties.clone());
        }
    }

    #[test]
    fn every_single_bit_flip_in_a_checksummed_entry_is_an_error_row(
        messages in proptest::collection::vec(arb_message(), 1..4),
        codec in arb_codec(),
        broker in any::<bool>(),
    ) {
        let opts = EncodeOptions {
            compression: codec,
            batch: Some(true),
            broker_timestamp: broker.then_some(5),
            broker_index: broker.then_some(6),
            ..opts()
        };
        let entry = encode_entry(&messages, &opts).unwrap();
        // Bits of the broker prefix are outside the CRC by design; flip the rest.
        let start = if broker { entry.len() - pulsar_entries_core::EntryView::parse(&entry, true).unwrap().without_broker_entry_metadata().len() } else { 0 };
        let mut flipped = Vec::new();
        for byte in start..entry.len() {
            for bit in 0..8 {
                let mut e = entry.clone();
                e[byte] ^= 1 << bit;
                flipped.push(e);
            }
        }
        let out = decode(&flipped, DecodeOptions::default());
        // Exactly one (error) row per corrupted entry: nothing lost, nothing decoded.
        prop_assert_eq!(out.num_rows(), flipped.len());
        prop_assert!(errors(&out).iter().all(Option::is_some));
    }
}
