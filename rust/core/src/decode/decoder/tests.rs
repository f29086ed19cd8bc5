//! Unit tests of the decoder.

use super::*;
use crate::decode::columns::ValueColumn;
use crate::format::encode::{encode_entry, frame_entry, EncodeOptions, Key, MessageInput};
use crate::processor::{PayloadProcessor, Selector};
use crate::proto;
use arrow_array::{Array, BinaryArray, Int32Array, Int64Array};
use prost::Message as _;

/// The built-in processor behind the generic `process` + `emit` path.
struct Generic(PulsarProcessor, Selector);

impl PayloadProcessor for Generic {
    fn name(&self) -> &str {
        PulsarProcessor::NAME
    }
    fn selector(&self) -> &Selector {
        &self.1
    }
    fn process(&self, ctx: &EntryContext<'_>, payload: &[u8], sink: Sink<'_>) -> Result<()> {
        self.0.process(ctx, payload, sink)
    }
}

fn input(entries: &[Vec<u8>]) -> RecordBatch {
    let n = entries.len() as i64;
    RecordBatch::try_from_iter([
        (
            "ledger_id",
            Arc::new(Int64Array::from(vec![3; n as usize])) as ArrayRef,
        ),
        (
            "entry_id",
            Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
        ),
        (
            "data",
            Arc::new(BinaryArray::from_iter_values(entries.iter())) as ArrayRef,
        ),
    ])
    .unwrap()
}

/// Re-frames `entry` with its MessageMetadata changed by `f`.
fn remeta(entry: &[u8], f: impl FnOnce(&mut proto::MessageMetadata)) -> Vec<u8> {
    let v = EntryView::parse(entry, true).unwrap();
    let mut md =
        proto::MessageMetadata::decode(&entry[v.metadata_offset..v.payload_offset]).unwrap();
    f(&mut md);
    let bem = v.broker_entry_metadata.map(|b| proto::BrokerEntryMetadata {
        broker_timestamp: b.broker_timestamp,
        index: b.index,
    });
    frame_entry(&md, v.payload, true, bem.as_ref())
}

fn corpus() -> Vec<Vec<u8>> {
    let mut out = vec![];
    let mut seq = 0u64;
    for codec in Codec::ALL {
        for n in [1usize, 3, 20] {
            let messages: Vec<MessageInput> = (0..n)
                .map(|i| MessageInput {
                    value: (i % 7 != 3)
                        .then(|| format!("value {i} {}", "x".repeat(i * 13)).into_bytes()),
                    key: match i % 4 {
                        0 => None,
                        1 => Some(Key::Binary(vec![0, 1, i as u8])),
                        _ => Some(Key::Text(format!("k{i}"))),
                    },
                    properties: (0..i % 3)
                        .map(|j| (format!("p{j}"), format!("v{i}.{j}")))
                        .collect(),
                    event_time: (i % 2 == 0).then_some(1_000 + i as u64),
                    sequence_id: (i % 5 == 4).then_some(99),
                    ordering_key: (i % 3 == 1).then(|| vec![7, i as u8]),
                })
                .collect();
            seq += 100;
            let opts = EncodeOptions {
                batch: Some(true),
                compression: codec,
                sequence_id: seq,
                broker_index: (n != 3).then_some(seq * 10),
                broker_timestamp: (n == 20).then_some(5),
                ..Default::default()
            };
            let e = encode_entry(&messages, &opts).unwrap();
            out.push(e.clone());
            // Header fallbacks: null values and null keys for all records.
            out.push(remeta(&e, |md| {
                md.null_value = Some(true);
                md.null_partition_key = Some(true);
                md.event_time = Some(77);
            }));
            // Transactions, committed by a marker later in the input.
            out.push(remeta(&e, |md| {
                md.txnid_most_bits = Some(1);
                md.txnid_least_bits = Some(n as u64);
            }));
            // Retained-only compacted shape (PIP-429): indexes from the header.
            out.push(remeta(&e, |md| {
                md.num_messages_in_batch = Some(n as i32 + 2);
                md.compacted_batch_indexes = (0..n as i32).map(|i| i + 2).collect();
            }));
            // A bad record count: one error row, then the next entry reuses the scratch.
            out.push(remeta(&e, |md| {
                md.num_messages_in_batch = Some(n as i32 + 1)
            }));
            if codec != Codec::None {
                out.push(remeta(&e, |md| {
                    md.uncompressed_size = Some(md.uncompressed_size.unwrap() + 1)
                }));
            }
        }
    }
    let marker = encode_entry(&[MessageInput::default()], &EncodeOptions::default()).unwrap();
    out.push(remeta(&marker, |md| {
        md.marker_type = Some(21);
        md.txnid_most_bits = Some(1);
        md.txnid_least_bits = Some(3);
    }));
    out
}

#[test]
fn builtin_batches_decode_exactly_like_the_generic_processor_path() {
    let entries = corpus();
    let data = input(&entries);
    let generic = Processors::new(vec![Arc::new(Generic(
        PulsarProcessor::new(),
        Selector::Any,
    ))]);
    let mut fast = Decoder::with_processors(DecodeOptions::default(), Processors::default());
    let mut slow = Decoder::with_processors(DecodeOptions::default(), generic);
    fast.decode_record_batch(&data).unwrap();
    slow.decode_record_batch(&data).unwrap();
    let (fast, slow) = (fast.finish(), slow.finish());
    assert_eq!(fast.len(), 1);
    assert_eq!(fast, slow);
    let b = &fast[0];
    let errors = b.column_by_name("error").unwrap();
    assert!(
        errors.null_count() < b.num_rows(),
        "the corpus has bad entries"
    );
    assert!(errors.null_count() > b.num_rows() / 2);
    let status = b.column_by_name("txn_status").unwrap();
    assert!(status
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap()
        .iter()
        .any(|s| s == Some("committed")));
}

/// Non-batched entries of every codec and metadata shape, mixed with batches
/// (so that runs of nulls and of `false` are broken and resumed).
fn singles_corpus() -> Vec<Vec<u8>> {
    let mut out = vec![];
    for (c, codec) in Codec::ALL.into_iter().enumerate() {
        for i in 0..12usize {
            let message = MessageInput {
                value: (i % 5 != 3)
                    .then(|| format!("value {i} {}", "y".repeat(i * 31)).into_bytes()),
                key: match i % 4 {
                    0 => None,
                    1 => Some(Key::Binary(vec![0, 1, i as u8])),
                    _ => Some(Key::Text(format!("k{i}"))),
                },
                properties: (0..i % 3)
                    .map(|j| (format!("p{j}"), format!("v{i}.{j}")))
                    .collect(),
                event_time: match i % 3 {
                    0 => None,
                    1 => Some(0),
                    _ => Some(1_000 + i as u64),
                },
                sequence_id: (i % 5 == 4).then_some(99),
                ordering_key: (i % 3 == 1).then(|| vec![7, i as u8]),
            };
            let opts = EncodeOptions {
                batch: Some(false),
                compression: codec,
                sequence_id: (c * 100 + i) as u64,
                publish_time: 1_000 + i as u64,
                broker_index: (i % 2 == 0).then_some((c * 100 + i) as u64),
                broker_timestamp: (i % 4 == 0).then_some(5 + i as u64),
                ..Default::default()
            };
            let e = encode_entry(std::slice::from_ref(&message), &opts).unwrap();
            out.push(e.clone());
            match i % 6 {
                0 => out.push(remeta(&e, |md| {
                    md.null_value = Some(true);
                    md.null_partition_key = Some(true);
                })),
                1 => out.push(remeta(&e, |md| {
                    md.txnid_most_bits = Some(2);
                    md.txnid_least_bits = Some(i as u64);
                    md.replicated_from = Some("west".into());
                    md.deliver_at_time = Some(77);
                    md.schema_version = Some(vec![0, 0, 1]);
                })),
                2 if codec != Codec::None => out.push(remeta(&e, |md| {
                    md.uncompressed_size = Some(md.uncompressed_size.unwrap() + 1)
                })),
                3 => out.push(remeta(&e, |md| md.compression = Some(99))),
                _ => {}
            }
            if i == 5 {
                let batch = encode_entry(
                    &[message.clone(), MessageInput::default()],
                    &EncodeOptions {
                        batch: Some(true),
                        compression: codec,
                        ..Default::default()
                    },
                )
                .unwrap();
                out.push(batch);
            }
        }
    }
    let marker = encode_entry(&[MessageInput::default()], &EncodeOptions::default()).unwrap();
    out.push(remeta(&marker, |md| {
        md.marker_type = Some(21);
        md.txnid_most_bits = Some(2);
        md.txnid_least_bits = Some(1);
    }));
    out
}

#[test]
fn builtin_single_messages_decode_exactly_like_the_generic_processor_path() {
    let entries = singles_corpus();
    let mut cells: Vec<Option<Vec<u8>>> = entries.into_iter().map(Some).collect();
    cells.insert(3, None);
    let data = cells_input(&cells);
    for keep_markers in [false, true] {
        let opts = DecodeOptions {
            keep_markers,
            ..Default::default()
        };
        let generic = Processors::new(vec![Arc::new(Generic(
            PulsarProcessor::new(),
            Selector::Any,
        ))]);
        let mut fast = Decoder::with_processors(opts, Processors::default());
        let mut slow = Decoder::with_processors(opts, generic);
        fast.decode_record_batch(&data).unwrap();
        slow.decode_record_batch(&data).unwrap();
        let (fast, slow) = (fast.finish(), slow.finish());
        assert_eq!(fast.len(), 1);
        assert_eq!(fast, slow);
        let b = &fast[0];
        let column = |name: &str| b.column_by_name(name).unwrap().clone();
        let errors = column("error");
        assert!(
            errors.null_count() < b.num_rows(),
            "the corpus has bad entries"
        );
        let batch_index = column("batch_index");
        let batch_index = batch_index.as_any().downcast_ref::<Int32Array>().unwrap();
        assert!(
            batch_index.iter().filter(|i| *i == Some(-1)).count() > 40,
            "most rows are single messages"
        );
        for name in [
            "key",
            "value",
            "event_time",
            "ordering_key",
            "offset",
            "broker_timestamp",
        ] {
            let c = column(name);
            assert!(
                c.null_count() > 0 && c.null_count() < c.len(),
                "{name} mixes values and nulls"
            );
        }
        let status = column("txn_status");
        let status = status.as_any().downcast_ref::<StringArray>().unwrap();
        assert!(status.iter().any(|s| s == Some("committed")));
    }
}

#[test]
fn value_column_reuses_scratch_and_gives_capacity_back() {
    let mut v = ValueColumn::with_capacity(1 << 20);
    v.append_copy(Some(b"abc"));
    v.data.extend_from_slice(b"__xyz");
    v.commit(3 + 2, 3);
    v.append_copy(None);
    v.append_copy(Some(b"d"));
    let a = v.finish();
    assert_eq!(
        a.iter().collect::<Vec<_>>(),
        vec![Some(&b"abc"[..]), Some(b"xyz"), None, Some(b"d")]
    );
    assert!(a.get_buffer_memory_size() < 4096);
}

/// Entries of every shape the decoder handles: the batch corpus above (all
/// codecs, header fallbacks, transactions + a commit marker, retained-only
/// batches, bad entries), single-message entries, chunks, an encrypted
/// entry, KoP entries (plain, compressed, with headers, a control batch),
/// garbage, an entry with no processor's metadata and a null cell.
fn projection_corpus() -> (Vec<Option<Vec<u8>>>, Vec<Vec<u8>>) {
    use crate::processor::kafka::codec::KafkaCodec;
    use crate::processor::kafka::encode::{
        encode_control_batch, encode_kop_entry, encode_record_batch, KafkaBatchOptions,
        KafkaRecordInput,
    };
    let mut entries: Vec<Vec<u8>> = corpus();
    for (i, codec) in Codec::ALL.into_iter().enumerate() {
        let m = MessageInput {
            value: Some(format!("single {i}").repeat(i + 1).into_bytes()),
            key: Some(Key::Text(format!("key{i}"))),
            properties: vec![("a".into(), format!("{i}"))],
            event_time: Some(5 + i as u64),
            ..Default::default()
        };
        let opts = EncodeOptions {
            compression: codec,
            broker_index: (i % 2 == 0).then_some(40 + i as u64),
            ..Default::default()
        };
        entries.push(encode_entry(std::slice::from_ref(&m), &opts).unwrap());
        entries.extend(crate::format::encode::encode_chunked(&m, &opts, 4).unwrap());
    }
    let plain = encode_entry(&[MessageInput::default()], &EncodeOptions::default()).unwrap();
    entries.push(remeta(&plain, |md| {
        md.encryption_keys = vec![proto::EncryptionKeys {
            key: "k".into(),
            value: vec![1, 2],
            metadata: vec![],
        }];
    }));
    entries.push(remeta(&plain, |md| {
        md.replicated_from = Some("east".into())
    }));
    for codec in KafkaCodec::ALL {
        let records: Vec<KafkaRecordInput> = (0..4)
            .map(|i| KafkaRecordInput {
                key: (i % 2 == 0).then(|| format!("kk{i}").into_bytes()),
                value: (i != 3).then(|| format!("kafka value {i}").into_bytes()),
                headers: (0..i % 3)
                    .map(|j| (format!("h{j}"), (j != 1).then(|| vec![j as u8])))
                    .collect(),
                timestamp: Some(1_000 + i as i64),
                offset_delta: None,
            })
            .collect();
        let opts = KafkaBatchOptions {
            base_offset: 10,
            compression: codec,
            ..Default::default()
        };
        let batch = encode_record_batch(&records, &opts).unwrap();
        entries.push(encode_kop_entry(&[&batch], 123).unwrap());
    }
    let control = encode_control_batch(true, 7, 0, 20, 5, 0).unwrap();
    entries.push(encode_kop_entry(&[&control], 124).unwrap());
    entries.push(b"not an entry".to_vec());
    let mut cells: Vec<Option<Vec<u8>>> = entries.iter().cloned().map(Some).collect();
    cells.insert(7, None);
    (cells, entries)
}

fn cells_input(cells: &[Option<Vec<u8>>]) -> RecordBatch {
    let n = cells.len() as i64;
    RecordBatch::try_from_iter([
        (
            "ledger_id",
            Arc::new(Int64Array::from(vec![3; n as usize])) as ArrayRef,
        ),
        (
            "entry_id",
            Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
        ),
        (
            "data",
            Arc::new(BinaryArray::from_iter(cells.iter().map(|c| c.as_deref()))) as ArrayRef,
        ),
    ])
    .unwrap()
}

fn decode_with(
    input: &RecordBatch,
    keep_markers: bool,
    columns: Option<&[&str]>,
) -> Vec<RecordBatch> {
    let opts = DecodeOptions {
        keep_markers,
        ..Default::default()
    };
    let mut d = Decoder::new(opts);
    if let Some(columns) = columns {
        d.project(columns).unwrap();
    }
    d.decode_record_batch(input).unwrap();
    let schema = d.schema();
    let out = d.finish();
    for b in &out {
        assert_eq!(b.schema(), schema);
    }
    out
}

#[test]
fn projected_decode_equals_the_full_decodes_columns() {
    let (cells, _) = projection_corpus();
    let input = cells_input(&cells);
    let schema = message_schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let mut sets: Vec<Vec<&str>> = names.iter().map(|n| vec![*n]).collect();
    sets.push(vec![
        "ledger_id",
        "entry_id",
        "batch_index",
        "key",
        "value",
        "publish_time",
    ]);
    sets.push(vec![
        "publish_time",
        "value",
        "key",
        "batch_index",
        "entry_id",
        "ledger_id",
    ]);
    sets.push(vec![
        "error",
        "txn_status",
        "properties",
        "headers",
        "offset",
    ]);
    sets.push(names.iter().rev().copied().collect());
    sets.push(vec![]);
    for keep_markers in [false, true] {
        let full = decode_with(&input, keep_markers, None);
        assert_eq!(full.len(), 1);
        let full = &full[0];
        let errors = full.column_by_name("error").unwrap();
        assert!(
            errors.null_count() < full.num_rows() - 5,
            "several error rows"
        );
        assert!(full
            .column_by_name("processor")
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .iter()
            .any(|p| p == Some("kafka")));
        assert!(full.column_by_name("chunk_id").unwrap().null_count() < full.num_rows());
        for set in &sets {
            let got = decode_with(&input, keep_markers, Some(set));
            let want = full
                .project(
                    &set.iter()
                        .map(|n| schema.index_of(n).unwrap())
                        .collect::<Vec<_>>(),
                )
                .unwrap();
            let rows: usize = got.iter().map(RecordBatch::num_rows).sum();
            assert_eq!(rows, full.num_rows(), "{set:?}");
            let got = arrow_select::concat::concat_batches(&want.schema(), &got).unwrap();
            assert_eq!(got, want, "columns {set:?}, keep_markers {keep_markers}");
        }
    }
}

#[test]
fn projection_rejects_unknown_and_repeated_columns() {
    let mut d = Decoder::new(DecodeOptions::default());
    let e = d.project(&["key", "nope"]).unwrap_err().to_string();
    assert!(e.contains("unknown decode column \"nope\""), "{e}");
    let e = d.project(&["key", "key"]).unwrap_err().to_string();
    assert!(e.contains("requested twice"), "{e}");
    d.project(&["key"]).unwrap();
    d.decode_record_batch(&input(&corpus())).unwrap();
    assert!(d.project(&["value"]).is_err(), "after decoding");
}
