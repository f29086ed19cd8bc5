//! The Rust side of the peer benchmark (`benches/peers/run.py`): our decoder
//! and the floors, driven line by line on stdin (the same protocol as
//! `benches/peers/java/PeerBench.java`):
//!
//! ```text
//!   load NAME PATH          -> "ok ENTRIES"
//!   check NAME MODE         -> "totals MESSAGES VALUE_BYTES KEY_BYTES PROPERTIES CRC32"
//!   time NAME MODE REPS     -> "time CPU_NS WALL_NS"
//! ```
//!
//! MODE: `all` (`Decoder`, every column), `proj` (the columns `ledger_id,
//! entry_id, batch_index, key, value, publish_time`), and the floors
//! `memcpy` (every entry's bytes copied once into a reused buffer), `crc32c`
//! (the checksum over every entry's checksummed bytes), `codec` (every
//! payload decompressed into a reused buffer; payloads located before timing),
//! `parse` (what any decoder must do before it writes a row: every entry
//! framed and checksummed, its MessageMetadata parsed, its payload
//! decompressed into a reused buffer and split into records, each record's
//! SingleMessageMetadata parsed) and `values` (`parse`, then every value
//! copied into one reused buffer with its end offset: the `value` column
//! alone, into memory that stays resident).
//!
//! Not a criterion bench: `cargo bench --bench peers --no-run` builds it with
//! the bench profile and run.py drives the binary.

use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use std::sync::Arc;
use std::time::Instant;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryArray, Int64Array, RecordBatch};
use pulsar_entries_core::format::batch::{split_batch, RecordBuf};
use pulsar_entries_core::format::compression::Decompressor;
use pulsar_entries_core::{
    Codec, DecodeOptions, Decoder, EntryView, DEFAULT_MAX_UNCOMPRESSED_SIZE,
};

// The allocator the Python extension ships with (rust/python/src/lib.rs):
// it keeps freed pages for reuse, so a decode does not fault its output
// buffers in afresh each time.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PROJECTION: [&str; 6] = [
    "ledger_id",
    "entry_id",
    "batch_index",
    "key",
    "value",
    "publish_time",
];

struct Corpus {
    entries: Vec<Vec<u8>>,
    input: RecordBatch,
    /// (codec, start, end, uncompressed size) of each entry's payload.
    payloads: Vec<(Codec, usize, usize, u32)>,
    /// Offset of the checksummed bytes (after the `0e 01` magic and CRC).
    crc_from: Vec<usize>,
}

fn read_corpus(path: &str) -> Corpus {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .expect("corpus file");
    let mut entries = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        entries.push(bytes[at + 4..at + 4 + len].to_vec());
        at += 4 + len;
    }
    let n = entries.len() as i64;
    let input = RecordBatch::try_from_iter([
        (
            "ledger_id",
            Arc::new(Int64Array::from(vec![1; n as usize])) as ArrayRef,
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
    .expect("input batch");
    let mut payloads = Vec::new();
    let mut crc_from = Vec::new();
    for e in &entries {
        let v = EntryView::parse(e, true).expect("a valid entry");
        let codec = Codec::from_proto(v.metadata.compression.unwrap_or(0)).expect("codec");
        let start = v.payload.as_ptr() as usize - e.as_ptr() as usize;
        let size = v
            .metadata
            .uncompressed_size
            .unwrap_or(v.payload.len() as u32);
        payloads.push((codec, start, start + v.payload.len(), size));
        // [0e 02 size BEM] [0e 01 crc32c] [checksummed...]
        let mut p = 0;
        if e[0..2] == [0x0e, 0x02] {
            p = 6 + u32::from_be_bytes(e[2..6].try_into().unwrap()) as usize;
        }
        crc_from.push(p + 6);
    }
    Corpus {
        entries,
        input,
        payloads,
        crc_from,
    }
}

fn decode(c: &Corpus, proj: bool) -> Vec<RecordBatch> {
    let mut decoder = Decoder::new(DecodeOptions::default());
    if proj {
        decoder
            .project(&PROJECTION)
            .expect("projection columns exist");
    }
    decoder.decode_record_batch(&c.input).expect("input shape");
    decoder.finish()
}

/// (messages, value bytes, key bytes, properties or -1, CRC-32 of the values).
fn totals(batches: &[RecordBatch], proj: bool) -> (u64, u64, u64, i64, u32) {
    let (mut messages, mut values, mut keys, mut props) = (0, 0, 0, 0i64);
    let mut crc = crc32fast::Hasher::new();
    for b in batches {
        let names: Vec<String> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        if proj {
            assert_eq!(names, PROJECTION, "projected schema");
        }
        if let Some(err) = b.column_by_name("error") {
            assert_eq!(err.null_count(), err.len(), "no error rows");
        }
        messages += b.num_rows() as u64;
        let value = b.column_by_name("value").unwrap().as_binary::<i32>();
        for v in value.iter().flatten() {
            values += v.len() as u64;
            crc.update(v);
        }
        let key = b.column_by_name("key").unwrap().as_string::<i32>();
        keys += key.iter().flatten().map(|k| k.len() as u64).sum::<u64>();
        if let Some(p) = b.column_by_name("properties") {
            props += p.as_map().entries().len() as i64;
        }
    }
    (
        messages,
        values,
        keys,
        if proj { -1 } else { props },
        crc.finalize(),
    )
}

/// Buffers the floors reuse from pass to pass.
#[derive(Default)]
struct Scratch {
    buf: Vec<u8>,
    dec: Decompressor,
    values: Vec<u8>,
    offsets: Vec<i32>,
    records: RecordBuf,
}

fn floor(c: &Corpus, mode: &str, st: &mut Scratch) -> u64 {
    let Scratch {
        buf,
        dec,
        values,
        offsets,
        records,
    } = st;
    let mut fold = 0u64;
    match mode {
        "memcpy" => {
            for e in &c.entries {
                buf.clear();
                buf.extend_from_slice(e);
                fold += u64::from(buf[buf.len() / 2]);
            }
        }
        "crc32c" => {
            for (e, &from) in c.entries.iter().zip(&c.crc_from) {
                fold += u64::from(crc32c::crc32c(&e[from..]));
            }
        }
        "codec" => {
            for (e, &(codec, start, end, size)) in c.entries.iter().zip(&c.payloads) {
                let input = &e[start..end];
                let n = dec
                    .decompress_at(
                        codec,
                        input,
                        size,
                        DEFAULT_MAX_UNCOMPRESSED_SIZE,
                        start,
                        buf,
                        0,
                    )
                    .expect("decompress");
                fold += u64::from(buf[n / 2]);
            }
        }
        "parse" | "values" => {
            let copy = mode == "values";
            values.clear();
            offsets.clear();
            for e in &c.entries {
                let v = EntryView::parse(e, true).expect("a valid entry");
                let md = &v.metadata;
                let codec = Codec::from_proto(md.compression.unwrap_or(0)).expect("codec");
                let payload: &[u8] = if codec == Codec::None {
                    v.payload
                } else {
                    let size = md.uncompressed_size.expect("uncompressed size");
                    let n = dec
                        .decompress_at(
                            codec,
                            v.payload,
                            size,
                            DEFAULT_MAX_UNCOMPRESSED_SIZE,
                            v.payload_offset,
                            buf,
                            0,
                        )
                        .expect("decompress");
                    &buf[..n]
                };
                if !md.is_batch() {
                    fold += payload.len() as u64;
                    if copy {
                        values.extend_from_slice(payload);
                        offsets.push(values.len() as i32);
                    }
                    continue;
                }
                records.with(|list| {
                    split_batch(payload, md, list).expect("a valid batch");
                    fold += list.len() as u64;
                    if copy {
                        for r in list.iter() {
                            values.extend_from_slice(r.payload);
                            offsets.push(values.len() as i32);
                        }
                    }
                });
            }
            fold += values.len() as u64 + offsets.len() as u64;
        }
        _ => panic!("unknown mode {mode}"),
    }
    fold
}

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
}

/// CPU time of the whole process (`CLOCK_PROCESS_CPUTIME_ID`), in ns.
fn process_cpu_ns() -> u64 {
    let mut t = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; clock 2 is CLOCK_PROCESS_CPUTIME_ID on Linux.
    let rc = unsafe { clock_gettime(2, &mut t) };
    assert_eq!(rc, 0, "clock_gettime");
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn main() {
    let mut corpora: HashMap<String, Corpus> = HashMap::new();
    let mut scratch = Scratch::default();
    let mut keep = 0u64;
    let stdout = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("stdin");
        let w: Vec<&str> = line.split_whitespace().collect();
        let reply = match w.as_slice() {
            ["load", name, path] => {
                let c = read_corpus(path);
                let n = c.entries.len();
                corpora.insert(name.to_string(), c);
                format!("ok {n}")
            }
            ["check", name, mode] => {
                let proj = *mode == "proj";
                let (m, v, k, p, crc) = totals(&decode(&corpora[*name], proj), proj);
                format!("totals {m} {v} {k} {p} {crc}")
            }
            ["time", name, mode, reps] => {
                let c = &corpora[*name];
                let reps: usize = reps.parse().expect("reps");
                let cpu0 = process_cpu_ns();
                let wall0 = Instant::now();
                for _ in 0..reps {
                    match *mode {
                        "all" | "proj" => {
                            let out = decode(c, *mode == "proj");
                            keep += out.iter().map(|b| b.num_rows() as u64).sum::<u64>();
                        }
                        m => keep += floor(c, m, &mut scratch),
                    }
                }
                let wall = wall0.elapsed().as_nanos();
                let cpu = process_cpu_ns() - cpu0;
                format!("time {cpu} {wall}")
            }
            ["quit"] => break,
            _ => panic!("unknown command: {line}"),
        };
        let mut out = stdout.lock();
        writeln!(out, "{reply}")
            .and_then(|()| out.flush())
            .expect("stdout");
    }
    eprintln!("fold {keep}");
}
