//! Compaction: the in-process compactor and the distributed building blocks
//! (candidates → per-key fold → rebuild) agree on random topics, and both are
//! incremental.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::builder::{Int32Builder, ListBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BinaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use proptest::prelude::*;
use pulsar_entries_core::compaction::compactor::{aborted_in, compact_batches};
use pulsar_entries_core::compaction::distributed::{candidates, rebuild, SurvivorFolder};
use pulsar_entries_core::compaction::strategic::StrategicCompactor;
use pulsar_entries_core::compaction::strategic_distributed::{PartitionPass, KIND_MESSAGE};
use pulsar_entries_core::compaction::strategy::LatestWins;
use pulsar_entries_core::compaction::{CompactOptions, Order};
use pulsar_entries_core::{encode_entry, Codec, EncodeOptions, Key, MessageInput};

/// `(key number, value, event time)`.
type Message = (Option<u8>, Option<Vec<u8>>, Option<u64>);

#[derive(Debug, Clone)]
struct Spec {
    batch: bool,
    codec: Codec,
    messages: Vec<Message>,
}

fn spec() -> impl Strategy<Value = Spec> {
    let message = (
        prop::option::weighted(0.85, 0u8..4),
        prop::option::weighted(0.85, prop::collection::vec(any::<u8>(), 0..8)),
        prop::option::of(0u64..4),
    );
    (
        any::<bool>(),
        prop::sample::select(Codec::ALL.to_vec()),
        prop::collection::vec(message, 1..6),
    )
        .prop_map(|(batch, codec, mut messages)| {
            if !batch {
                messages.truncate(1);
            }
            Spec {
                batch,
                codec,
                messages,
            }
        })
}

fn entries(specs: &[Spec]) -> RecordBatch {
    let data: Vec<Vec<u8>> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let messages: Vec<MessageInput> = s
                .messages
                .iter()
                .map(|(k, v, et)| MessageInput {
                    key: k.map(|k| Key::Text(format!("k{k}"))),
                    value: v.clone(),
                    event_time: *et,
                    ..Default::default()
                })
                .collect();
            encode_entry(
                &messages,
                &EncodeOptions {
                    batch: Some(s.batch),
                    compression: s.codec,
                    publish_time: i as u64,
                    ..Default::default()
                },
            )
            .unwrap()
        })
        .collect();
    let n = data.len();
    RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("ledger_id", DataType::Int64, false),
            Field::new("entry_id", DataType::Int64, false),
            Field::new("data", DataType::Binary, true),
        ])),
        vec![
            Arc::new(Int64Array::from(vec![3; n])),
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
            Arc::new(BinaryArray::from_iter_values(data.iter())),
        ],
    )
    .unwrap()
}

/// `(entry_id, data)` of every output row.
fn rows(batches: &[RecordBatch]) -> Vec<(i64, Vec<u8>)> {
    batches
        .iter()
        .flat_map(|b| {
            let ids = b
                .column_by_name("entry_id")
                .unwrap()
                .as_primitive::<Int64Type>()
                .clone();
            let data = b.column_by_name("data").unwrap().as_binary::<i32>().clone();
            (0..b.num_rows())
                .map(|i| (ids.value(i), data.value(i).to_vec()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The distributed path, run on one machine: candidates, a sort by
/// (partition, key, position), the per-key fold, a group by entry, rebuild.
fn distributed(input: &RecordBatch, opts: &CompactOptions, reduce: bool) -> Vec<RecordBatch> {
    // Aborted transactions over the whole topic first, as an engine collects them.
    let aborted = aborted_in(std::slice::from_ref(input)).unwrap();
    // Candidates per slice of 3 entries, as an engine's batches would be.
    let slices: Vec<RecordBatch> = (0..input.num_rows())
        .step_by(3)
        .map(|s| {
            candidates(
                &input.slice(s, 3.min(input.num_rows() - s)),
                opts,
                reduce,
                &aborted,
            )
            .unwrap()
        })
        .collect();
    let cands = if slices.is_empty() {
        candidates(input, opts, reduce, &aborted).unwrap()
    } else {
        arrow_select::concat::concat_batches(&slices[0].schema(), &slices).unwrap()
    };
    let key = cands
        .column_by_name("key")
        .unwrap()
        .as_string::<i32>()
        .clone();
    let entry = cands
        .column_by_name("entry_id")
        .unwrap()
        .as_primitive::<Int64Type>()
        .clone();
    let index = cands
        .column_by_name("batch_index")
        .unwrap()
        .as_primitive::<Int32Type>()
        .clone();
    let mut order: Vec<usize> = (0..cands.num_rows()).collect();
    order.sort_by_key(|&i| {
        (
            key.is_valid(i).then(|| key.value(i).to_owned()),
            entry.value(i),
            index.value(i),
        )
    });
    let take = arrow_array::UInt32Array::from_iter_values(order.iter().map(|&i| i as u32));
    let columns: Vec<ArrayRef> = cands
        .columns()
        .iter()
        .map(|c| arrow_select::take::take(c, &take, None).unwrap())
        .collect();
    let sorted = RecordBatch::try_new(cands.schema(), columns).unwrap();
    // Feed the fold in small slices: a key's run may span batches.
    let mut folder = SurvivorFolder::new(opts.order);
    let mut survivors = Vec::new();
    for start in (0..sorted.num_rows()).step_by(3) {
        let len = 3.min(sorted.num_rows() - start);
        survivors.push(folder.push(&sorted.slice(start, len)).unwrap());
    }
    survivors.push(folder.finish());
    let mut retained: BTreeMap<i64, Vec<i32>> = BTreeMap::new();
    for s in &survivors {
        let e = s
            .column_by_name("entry_id")
            .unwrap()
            .as_primitive::<Int64Type>();
        let i = s
            .column_by_name("batch_index")
            .unwrap()
            .as_primitive::<Int32Type>();
        for r in 0..s.num_rows() {
            retained.entry(e.value(r)).or_default().push(i.value(r));
        }
    }
    let ids: Vec<usize> = retained.keys().map(|&e| e as usize).collect();
    let take = arrow_array::UInt32Array::from_iter_values(ids.iter().map(|&i| i as u32));
    let mut list = ListBuilder::new(Int32Builder::new());
    for v in retained.values() {
        list.append_value(v.iter().map(|&i| Some(i)));
    }
    let mut columns: Vec<ArrayRef> = input
        .columns()
        .iter()
        .map(|c| arrow_select::take::take(c, &take, None).unwrap())
        .collect();
    columns.push(Arc::new(list.finish()));
    let mut fields: Vec<Field> = input
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new(
        "retained",
        DataType::List(Arc::new(Field::new_list_field(DataType::Int32, true))),
        true,
    ));
    let joined = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
    rebuild(&joined, opts).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn distributed_path_equals_in_process(
        specs in prop::collection::vec(spec(), 0..12),
        event_time in any::<bool>(),
        retain_null_key in any::<bool>(),
        reduce in any::<bool>(),
    ) {
        let opts = CompactOptions {
            order: if event_time { Order::EventTime } else { Order::Publish },
            retain_null_key,
            ..Default::default()
        };
        let input = entries(&specs);
        let local = rows(&compact_batches(std::slice::from_ref(&input), opts).unwrap());
        // Reducing candidates is valid in publishing order only.
        let reduce = reduce && !event_time;
        prop_assert_eq!(local, rows(&distributed(&input, &opts, reduce)));
    }

    #[test]
    fn incremental_runs_equal_one_run(
        specs in prop::collection::vec(spec(), 1..12),
        cut in any::<prop::sample::Index>(),
        event_time in any::<bool>(),
    ) {
        let opts = CompactOptions {
            order: if event_time { Order::EventTime } else { Order::Publish },
            ..Default::default()
        };
        let input = entries(&specs);
        let whole = rows(&compact_batches(std::slice::from_ref(&input), opts).unwrap());
        let at = cut.index(input.num_rows());
        let first = compact_batches(&[input.slice(0, at)], opts).unwrap();
        let mut again: Vec<RecordBatch> = first
            .iter()
            .map(|b| b.project(&[0, 1, 2]).unwrap())
            .map(|b| {
                RecordBatch::try_new(input.schema(), b.columns().to_vec()).unwrap()
            })
            .collect();
        again.push(input.slice(at, input.num_rows() - at));
        prop_assert_eq!(whole, rows(&compact_batches(&again, opts).unwrap()));
    }
}

#[test]
fn placeholders_are_the_spec_bytes() {
    let input = entries(&[
        Spec {
            batch: true,
            codec: Codec::None,
            messages: vec![
                (Some(0), Some(b"a".to_vec()), None),
                (Some(1), Some(b"b".to_vec()), None),
            ],
        },
        Spec {
            batch: false,
            codec: Codec::None,
            messages: vec![(Some(0), Some(b"c".to_vec()), None)],
        },
    ]);
    let out = rows(&compact_batches(&[input], CompactOptions::default()).unwrap());
    assert_eq!(out.iter().map(|r| r.0).collect::<Vec<_>>(), vec![0, 1]);
    let hex: String = out[0].1.iter().map(|b| format!("{b:02x}")).collect();
    // Slot 0 became `{payload_size 0, compacted_out true}`: 0000000418002001.
    assert!(hex.contains("0000000418002001"), "{hex}");
    // Field 31 = [1], written unpacked (tag f8 01).
    assert!(hex.contains("f80101"), "{hex}");
}

/// A non-batched entry without checksum, from owned metadata.
fn raw_entry(md: pulsar_entries_core::proto::MessageMetadata, payload: &[u8]) -> Vec<u8> {
    use prost::Message as _;
    let m = md.encode_to_vec();
    [(m.len() as u32).to_be_bytes().to_vec(), m, payload.to_vec()].concat()
}

fn txn_entry(
    seq: u64,
    key: Option<&str>,
    value: &[u8],
    txn: Option<u64>,
    marker: Option<i32>,
) -> Vec<u8> {
    raw_entry(
        pulsar_entries_core::proto::MessageMetadata {
            producer_name: "p".into(),
            sequence_id: seq,
            publish_time: 1_000 + seq,
            partition_key: key.map(str::to_string),
            uncompressed_size: Some(value.len() as u32),
            marker_type: marker,
            txnid_most_bits: txn,
            txnid_least_bits: txn,
            ..Default::default()
        },
        value,
    )
}

#[test]
fn aborted_transactions_never_become_a_key_s_value() {
    // The broker's compactor skips the messages of aborted transactions, so
    // a key keeps its last committed value (a real 4.2.4 broker does so).
    const COMMIT: i32 = 21;
    const ABORT: i32 = 22;
    let data = [
        txn_entry(0, Some("k"), b"committed", None, None),
        txn_entry(1, Some("k"), b"aborted", Some(1), None),
        txn_entry(2, Some("j"), b"aborted", Some(1), None),
        txn_entry(3, None, b"", Some(1), Some(ABORT)),
        txn_entry(4, Some("m"), b"in a committed txn", Some(2), None),
        txn_entry(5, None, b"", Some(2), Some(COMMIT)),
    ];
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("ledger_id", DataType::Int64, false),
            Field::new("entry_id", DataType::Int64, false),
            Field::new("data", DataType::Binary, true),
        ])),
        vec![
            Arc::new(Int64Array::from(vec![9; data.len()])) as ArrayRef,
            Arc::new(Int64Array::from_iter_values(0..data.len() as i64)),
            Arc::new(BinaryArray::from_iter_values(data.iter())),
        ],
    )
    .unwrap();
    let entry_ids = |out: &[RecordBatch]| -> Vec<i64> {
        out.iter()
            .flat_map(|b| {
                b.column_by_name("entry_id")
                    .unwrap()
                    .as_primitive::<Int64Type>()
                    .values()
                    .to_vec()
            })
            .collect()
    };
    let opts = CompactOptions::default();
    let out = compact_batches(std::slice::from_ref(&batch), opts).unwrap();
    assert_eq!(
        entry_ids(&out),
        vec![0, 4],
        "k keeps its committed value, j has none, m is committed"
    );
    // The distributed path (the aborted set collected over the whole topic first) agrees.
    for reduce in [false, true] {
        assert_eq!(entry_ids(&distributed(&batch, &opts, reduce)), vec![0, 4]);
    }
    // So does the strategic compactor; without the aborted set it would keep them.
    let aborted = aborted_in(std::slice::from_ref(&batch)).unwrap();
    let strategic = |aborted: std::collections::HashSet<(u64, u64)>| {
        let mut c = StrategicCompactor::new(opts, LatestWins)
            .unwrap()
            .with_aborted_transactions(aborted);
        c.observe(&batch).unwrap();
        entry_ids(&c.write(&batch).unwrap())
    };
    assert_eq!(strategic(aborted.clone()), vec![0, 4]);
    assert_eq!(strategic(Default::default()), vec![1, 2, 4]);
    // And the strategic partition pass of the distributed strategic path emits no message of theirs.
    let mut pass = PartitionPass::new(opts)
        .unwrap()
        .with_aborted_transactions(aborted);
    let rows = pass.push(&batch).unwrap();
    let kinds = rows
        .column_by_name("kind")
        .unwrap()
        .as_primitive::<Int32Type>()
        .values()
        .to_vec();
    let messages: Vec<i64> = entry_ids(std::slice::from_ref(&rows))
        .into_iter()
        .zip(kinds)
        .filter(|(_, k)| *k == KIND_MESSAGE)
        .map(|(e, _)| e)
        .collect();
    assert_eq!(messages, vec![0, 4]);
}
