//! Chunk reassembly over real decode output: the spec's rules, regressions
//! shaped after Pulsar's reported bugs, and property tests over random
//! chunkings (every codec, interleaving, duplicates, restarts, gaps) including
//! the partitioned (Spark-shaped) path.
//!
//! One test crate in three files: this one is the harness the others share
//! (encode → decode → reassemble → `Row`, and the accounting check that every
//! chunk row lands in exactly one output row); [`scenarios`] holds the spec's
//! rules and the regressions, [`properties`] the property tests.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, BinaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use proptest::prelude::*;
use pulsar_entries_core::chunks::{
    finish_leftovers, finished_schema, leftover_schema, output_schema, reassemble,
    reassemble_partition, reassemble_table, ReassemblyOptions, ROLE_COLUMN, WATERMARK_COLUMN,
};
use pulsar_entries_core::format::encode::frame_entry;
use pulsar_entries_core::proto;
use pulsar_entries_core::{
    encode_chunked, encode_entry, Codec, DecodeOptions, Decoder, EncodeOptions, EntryId, Key,
    MessageInput,
};

mod properties;
mod scenarios;

const T0: u64 = 1_700_000_000_000;

/// One stored entry and where it sits.
#[derive(Clone)]
struct Entry {
    data: Vec<u8>,
}

fn decode(entries: &[Entry]) -> RecordBatch {
    let mut d = Decoder::new(DecodeOptions::default());
    for (i, e) in entries.iter().enumerate() {
        d.decode_entry(
            EntryId {
                ledger_id: 10 + (i / 1000) as i64,
                entry_id: (i % 1000) as i64,
                partition: -1,
            },
            Some(&e.data),
        );
    }
    let batches = d.finish();
    assert_eq!(batches.len(), 1);
    batches[0].clone()
}

fn pos(i: usize) -> (i64, i64) {
    (10 + (i / 1000) as i64, (i % 1000) as i64)
}

fn opts(producer: &str, seq: u64, codec: Codec, publish: u64) -> EncodeOptions {
    EncodeOptions {
        producer_name: producer.into(),
        sequence_id: seq,
        publish_time: publish,
        compression: codec,
        ..Default::default()
    }
}

fn chunks(value: &[u8], producer: &str, seq: u64, codec: Codec, size: usize) -> Vec<Entry> {
    let msg = MessageInput {
        value: Some(value.to_vec()),
        key: Some(Key::Text(format!("key-{seq}"))),
        properties: vec![("p".into(), producer.into())],
        ..Default::default()
    };
    encode_chunked(&msg, &opts(producer, seq, codec, T0 + seq), size)
        .unwrap()
        .into_iter()
        .map(|data| Entry { data })
        .collect()
}

fn single(value: &[u8], publish: u64) -> Entry {
    let msg = MessageInput {
        value: Some(value.to_vec()),
        ..Default::default()
    };
    Entry {
        data: encode_entry(&[msg], &opts("plain", 0, Codec::None, publish)).unwrap(),
    }
}

fn payload(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Half compressible, half noise.
            if i % 2 == 0 {
                (i / 64) as u8
            } else {
                x as u8
            }
        })
        .collect()
}

/// An output row, in comparable form.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    ledger: i64,
    entry: i64,
    status: Option<String>,
    uuid: Option<String>,
    first: Option<(i64, i64)>,
    chunks: Option<Vec<(i64, i64)>>,
    value: Option<Vec<u8>>,
    error: Option<String>,
    broker_index: Option<i64>,
    key: Option<String>,
    chunk_id: Option<i32>,
}

fn rows(batches: &[RecordBatch]) -> Vec<Row> {
    let mut out = Vec::new();
    for b in batches {
        let i64s = |n: &str| {
            b.column_by_name(n)
                .unwrap()
                .as_primitive::<Int64Type>()
                .clone()
        };
        let strs = |n: &str| b.column_by_name(n).unwrap().as_string::<i32>().clone();
        let (ledger, entry) = (i64s("ledger_id"), i64s("entry_id"));
        let (fl, fe, bi) = (
            i64s("first_chunk_ledger_id"),
            i64s("first_chunk_entry_id"),
            i64s("broker_index"),
        );
        let (status, uuid, error, key) = (strs("status"), strs("uuid"), strs("error"), strs("key"));
        let value = b
            .column_by_name("value")
            .unwrap()
            .as_binary::<i32>()
            .clone();
        let chunk_id = b
            .column_by_name("chunk_id")
            .unwrap()
            .as_primitive::<arrow_array::types::Int32Type>()
            .clone();
        let cl = b
            .column_by_name("chunk_ledger_ids")
            .unwrap()
            .as_list::<i32>()
            .clone();
        let ce = b
            .column_by_name("chunk_entry_ids")
            .unwrap()
            .as_list::<i32>()
            .clone();
        let opt_s =
            |a: &arrow_array::StringArray, i: usize| a.is_valid(i).then(|| a.value(i).to_owned());
        for i in 0..b.num_rows() {
            let chunks = cl.is_valid(i).then(|| {
                let l = cl.value(i);
                let e = ce.value(i);
                let l = l.as_primitive::<Int64Type>();
                let e = e.as_primitive::<Int64Type>();
                l.values()
                    .iter()
                    .copied()
                    .zip(e.values().iter().copied())
                    .collect()
            });
            out.push(Row {
                ledger: ledger.value(i),
                entry: entry.value(i),
                status: opt_s(&status, i),
                uuid: opt_s(&uuid, i),
                first: fl.is_valid(i).then(|| (fl.value(i), fe.value(i))),
                chunks,
                value: value.is_valid(i).then(|| value.value(i).to_vec()),
                error: opt_s(&error, i),
                broker_index: bi.is_valid(i).then(|| bi.value(i)),
                key: opt_s(&key, i),
                chunk_id: chunk_id.is_valid(i).then(|| chunk_id.value(i)),
            });
        }
    }
    out
}

fn run(entries: &[Entry], o: ReassemblyOptions) -> Vec<Row> {
    rows(&reassemble(&[decode(entries)], o).unwrap())
}

fn unlimited() -> ReassemblyOptions {
    ReassemblyOptions {
        max_pending: None,
        expire_after_ms: None,
        ..Default::default()
    }
}

fn chunked_rows(rows: &[Row]) -> Vec<&Row> {
    rows.iter().filter(|r| r.status.is_some()).collect()
}

fn statuses(rows: &[Row]) -> Vec<&str> {
    chunked_rows(rows)
        .iter()
        .map(|r| r.status.as_deref().unwrap())
        .collect()
}

/// Every input chunk row appears in exactly one output row's chunk ids.
fn assert_accounted(entries: &[Entry], rows: &[Row]) {
    let decoded = rows_of_decode(entries);
    let mut inputs: Vec<(i64, i64)> = decoded
        .iter()
        .filter(|r| r.uuid.is_some() && r.error.is_none())
        .map(|r| (r.ledger, r.entry))
        .collect();
    let mut outputs: Vec<(i64, i64)> = rows
        .iter()
        .filter_map(|r| r.chunks.clone())
        .flatten()
        .collect();
    inputs.sort();
    outputs.sort();
    assert_eq!(inputs, outputs, "every chunk is accounted for exactly once");
    let plain_in = decoded
        .iter()
        .filter(|r| r.uuid.is_none() || r.error.is_some())
        .count();
    let plain_out = rows.iter().filter(|r| r.status.is_none()).count();
    assert_eq!(plain_in, plain_out, "non-chunk rows pass through");
}

fn rows_of_decode(entries: &[Entry]) -> Vec<Row2> {
    let b = decode(entries);
    let uuid = b.column_by_name("uuid").unwrap().as_string::<i32>().clone();
    let error = b
        .column_by_name("error")
        .unwrap()
        .as_string::<i32>()
        .clone();
    let ledger = b
        .column_by_name("ledger_id")
        .unwrap()
        .as_primitive::<Int64Type>()
        .clone();
    let entry = b
        .column_by_name("entry_id")
        .unwrap()
        .as_primitive::<Int64Type>()
        .clone();
    (0..b.num_rows())
        .map(|i| Row2 {
            ledger: ledger.value(i),
            entry: entry.value(i),
            uuid: uuid.is_valid(i).then(|| uuid.value(i).to_owned()),
            error: error.is_valid(i).then(|| error.value(i).to_owned()),
        })
        .collect()
}

struct Row2 {
    ledger: i64,
    entry: i64,
    uuid: Option<String>,
    error: Option<String>,
}
