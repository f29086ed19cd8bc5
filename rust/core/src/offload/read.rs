//! Data object → Arrow rows `(ledger_id, entry_id, data, error)`.
//!
//! The walk follows the block headers (each gives its own length), so a data
//! object is readable without its index; the index, when given, adds three
//! things: where to resume after a damaged header, a check that each block
//! sits where the index says, and the entry ranges every block must hold, so
//! entries missing from the data are reported instead of silently absent.
//!
//! Within a block, entries are read the way Pulsar's read handle reads them:
//! a negative length at an entry boundary is the padding (or the next
//! block's magic), i.e. the end of the block. Everything in this module is
//! bounded by the input slice: lengths are checked against it before use and
//! nothing is allocated from a size read out of the data.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;

use super::block::{be_i32, be_i64, be_u32, padding_mismatch, BlockHeader};
use super::block::{ENTRY_HEADER_SIZE, LEDGER_BLOCK_MAGIC, STREAMING_BLOCK_MAGIC};
use super::index::{BlockRange, OffloadIndex};

/// Output rows buffered before a record batch is cut (keeps the binary
/// column's 32-bit offsets far from overflow and batches a sane size).
const FLUSH_BYTES: usize = 64 << 20;

/// Schema of the read output: the entry table storage readers give
/// ([`crate::decode::entries::entry_table_schema`]).
pub fn offload_schema() -> SchemaRef {
    crate::decode::entries::entry_table_schema()
}

/// Entries `first..=last` of one ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryRange {
    pub ledger_id: i64,
    pub first_entry_id: i64,
    pub last_entry_id: i64,
}

#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// The ledger of ledger-based blocks (their headers carry none; the
    /// object name does). Rows of such blocks get −1 when it is unknown.
    pub ledger_id: Option<i64>,
    /// Keep only entries in these ranges and report every id of a range that
    /// the data does not hold. `None`: keep everything; with an index, the
    /// ranges of the blocks the slice covers are checked.
    pub ranges: Option<Vec<EntryRange>>,
}

/// Output builder, cutting record batches as it goes.
struct Rows {
    ledger: Int64Builder,
    entry: Int64Builder,
    data: BinaryBuilder,
    error: StringBuilder,
    pending: usize,
    batches: Vec<RecordBatch>,
}

impl Rows {
    fn new() -> Self {
        Rows {
            ledger: Int64Builder::new(),
            entry: Int64Builder::new(),
            data: BinaryBuilder::new(),
            error: StringBuilder::new(),
            pending: 0,
            batches: Vec::new(),
        }
    }

    fn push(&mut self, ledger: i64, entry: i64, data: Option<&[u8]>, error: Option<&str>) {
        let size = data.map_or(0, <[u8]>::len) + error.map_or(0, str::len);
        if self.pending > 0 && self.pending + size > FLUSH_BYTES {
            self.flush();
        }
        self.ledger.append_value(ledger);
        self.entry.append_value(entry);
        self.data.append_option(data);
        self.error.append_option(error);
        self.pending += size;
    }

    fn flush(&mut self) {
        if arrow_array::builder::ArrayBuilder::is_empty(&self.ledger) {
            return;
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.ledger.finish()),
            Arc::new(self.entry.finish()),
            Arc::new(self.data.finish()),
            Arc::new(self.error.finish()),
        ];
        let batch = RecordBatch::try_new(offload_schema(), columns)
            .expect("columns match the offload schema");
        self.batches.push(batch);
        self.pending = 0;
    }

    fn finish(mut self) -> Vec<RecordBatch> {
        self.flush();
        self.batches
    }
}

/// Which entries to keep, and which ids were seen (for the gap report).
struct Expect {
    ranges: Option<Vec<EntryRange>>,
    seen: Vec<(i64, i64)>,
}

impl Expect {
    fn wants(&self, ledger: i64, entry: i64) -> bool {
        self.ranges.as_ref().is_none_or(|rs| {
            rs.iter().any(|r| {
                r.ledger_id == ledger && (r.first_entry_id..=r.last_entry_id).contains(&entry)
            })
        })
    }

    /// An error row standing for entry `entry` (which then is not reported missing).
    fn entry_error(&mut self, rows: &mut Rows, ledger: i64, entry: i64, msg: &str) {
        if self.wants(ledger, entry) {
            self.seen.push((ledger, entry));
            rows.push(ledger, entry, None, Some(msg));
        }
    }

    /// One error row per run of ids a range expects and the data lacked.
    fn report_missing(mut self, rows: &mut Rows) {
        let Some(ranges) = self.ranges.take() else {
            return;
        };
        self.seen.sort_unstable();
        self.seen.dedup();
        for r in ranges {
            let start = self
                .seen
                .partition_point(|&s| s < (r.ledger_id, r.first_entry_id));
            let mut next = r.first_entry_id;
            let mut report = |from: i64, to: i64| {
                let n = (to as i128 - from as i128 + 1) as u128;
                let msg = if n == 1 {
                    format!("entry {from} of ledger {} is missing from the data object: the index places it in the blocks read, none holds it", r.ledger_id)
                } else {
                    format!("entries {from}..={to} ({n} entries) of ledger {} are missing from the data object: the index places them in the blocks read, none holds them", r.ledger_id)
                };
                rows.push(r.ledger_id, from, None, Some(&msg));
            };
            for &(l, e) in &self.seen[start..] {
                if l != r.ledger_id || e > r.last_entry_id {
                    break;
                }
                if e > next {
                    report(next, e - 1);
                }
                next = e.saturating_add(1);
            }
            if next <= r.last_entry_id {
                report(next, r.last_entry_id);
            }
        }
    }
}

/// Ranges of the index blocks a slice `[base, base + len)` covers. A slice
/// that reaches the end of the data object also covers blocks the index
/// places at or past the end (Pulsar's offloader indexes an empty block it
/// does not count in the object length when an entry exceeds the block size).
fn covered_ranges(
    index: &OffloadIndex,
    ledger_id: Option<i64>,
    base: u64,
    len: u64,
) -> Vec<EntryRange> {
    let end = base.saturating_add(len);
    let to_the_end = end >= index.data_object_length as u64;
    index
        .blocks(ledger_id)
        .into_iter()
        .filter(|b| b.offset >= base && (b.offset < end || to_the_end))
        .filter_map(|b: BlockRange| {
            let last = b.last_entry_id?;
            (last >= b.first_entry_id).then(|| EntryRange {
                ledger_id: b.ledger_id.unwrap_or(-1),
                first_entry_id: b.first_entry_id,
                last_entry_id: last,
            })
        })
        .collect()
}

/// Sorts ranges and merges the overlapping or adjacent ones of a ledger, so
/// a missing run spanning blocks is reported once.
fn merge(mut ranges: Vec<EntryRange>) -> Vec<EntryRange> {
    ranges.sort_by_key(|r| (r.ledger_id, r.first_entry_id));
    let mut out: Vec<EntryRange> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last)
                if last.ledger_id == r.ledger_id
                    && r.first_entry_id <= last.last_entry_id.saturating_add(1) =>
            {
                last.last_entry_id = last.last_entry_id.max(r.last_entry_id);
            }
            _ => out.push(r),
        }
    }
    out
}

/// Reads a slice of a data object: the whole object (`base_offset` 0) or a
/// run of whole blocks starting at `base_offset` (from [`OffloadIndex::blocks`]).
///
/// Returns the rows in data order, then one error row per missing run of
/// expected entries. Rows with an error have `data` null, except an entry
/// whose framing is intact but whose id is not the one its position implies
/// (its bytes are kept, under the id stored with it).
pub fn read_object(
    data: &[u8],
    base_offset: u64,
    index: Option<&OffloadIndex>,
    opts: &ReadOptions,
) -> Vec<RecordBatch> {
    let mut rows = Rows::new();
    let ranges = opts.ranges.clone().or_else(|| {
        index.map(|i| covered_ranges(i, opts.ledger_id, base_offset, data.len() as u64))
    });
    let mut expect = Expect {
        ranges: ranges.map(merge),
        seen: Vec::new(),
    };
    let walker = Walker {
        data,
        base: base_offset,
        blocks: index.map(|i| i.blocks(None)),
        default_ledger: opts.ledger_id.unwrap_or(-1),
    };
    walker.walk(&mut rows, &mut expect);
    expect.report_missing(&mut rows);
    rows.finish()
}

/// Reads a whole ledger-based or streaming object given its bytes and, when
/// available, its index object's bytes. An index that cannot be parsed is
/// reported in one error row and the data is read from its headers alone.
pub fn read_ledger(data: &[u8], index: Option<&[u8]>, opts: &ReadOptions) -> Vec<RecordBatch> {
    let parsed = index.map(OffloadIndex::parse);
    match parsed {
        Some(Err(e)) => {
            let mut rows = Rows::new();
            let msg = format!("index object unreadable ({e}); entries read from the block headers alone, missing entries cannot be detected");
            rows.push(opts.ledger_id.unwrap_or(-1), -1, None, Some(&msg));
            let mut out = rows.finish();
            out.extend(read_object(data, 0, None, opts));
            out
        }
        Some(Ok(index)) => {
            // The whole object: every block the index lists must be there.
            let opts = ReadOptions {
                ranges: opts
                    .ranges
                    .clone()
                    .or_else(|| Some(covered_ranges(&index, opts.ledger_id, 0, u64::MAX))),
                ..opts.clone()
            };
            read_object(data, 0, Some(&index), &opts)
        }
        None => read_object(data, 0, None, opts),
    }
}

struct Walker<'a> {
    data: &'a [u8],
    base: u64,
    /// The index's blocks, in data-object order.
    blocks: Option<Vec<BlockRange>>,
    default_ledger: i64,
}

impl Walker<'_> {
    fn at(&self, pos: usize) -> u64 {
        self.base + pos as u64
    }

    /// Where the next block starts after a damaged header at `pos`: the
    /// index's next block, else the next plausible header in the bytes.
    fn resync(&self, pos: usize) -> Option<usize> {
        if let Some(blocks) = &self.blocks {
            let here = self.at(pos);
            return blocks
                .iter()
                .map(|b| b.offset)
                .filter(|&o| o > here && o < self.at(self.data.len()))
                .min()
                .map(|o| (o - self.base) as usize);
        }
        (pos + 1..self.data.len().saturating_sub(3)).find(|&p| {
            matches!(
                be_u32(self.data, p),
                LEDGER_BLOCK_MAGIC | STREAMING_BLOCK_MAGIC
            ) && BlockHeader::parse(&self.data[p..], 0).is_ok()
        })
    }

    /// The index's entry for a block starting at `offset`, when it has one.
    fn check_against_index(&self, offset: u64, header: &BlockHeader) -> Option<String> {
        let blocks = self.blocks.as_ref()?;
        match blocks.iter().find(|b| b.offset == offset) {
            None => Some(format!(
                "block at data-object offset {offset} (first entry {}) is not in the index",
                header.first_entry_id
            )),
            Some(b) if b.first_entry_id != header.first_entry_id => Some(format!(
                "block at data-object offset {offset}: header says first entry {}, index says {}",
                header.first_entry_id, b.first_entry_id
            )),
            Some(b) if b.ledger_id.is_some() && header.ledger_id != b.ledger_id => Some(format!(
                "block at data-object offset {offset}: header says ledger {:?}, index says {:?}",
                header.ledger_id, b.ledger_id
            )),
            _ => None,
        }
    }

    fn walk(&self, rows: &mut Rows, expect: &mut Expect) {
        let mut pos = 0usize;
        while pos < self.data.len() {
            let offset = self.at(pos);
            let header = match BlockHeader::parse(&self.data[pos..], offset) {
                Ok(h) => h,
                Err(e) => {
                    let next = self.resync(pos);
                    let skipped = next.unwrap_or(self.data.len()) - pos;
                    let msg = match next {
                        Some(n) => format!("{e}; skipped {skipped} bytes to the next block at data-object offset {}", self.at(n)),
                        None => format!("{e}; no further block found, {skipped} bytes to the end of the data skipped"),
                    };
                    rows.push(self.default_ledger, -1, None, Some(&msg));
                    match next {
                        Some(n) => {
                            pos = n;
                            continue;
                        }
                        None => return,
                    }
                }
            };
            let ledger = header.ledger_id.unwrap_or(self.default_ledger);
            if let Some(msg) = self.check_against_index(offset, &header) {
                rows.push(ledger, header.first_entry_id, None, Some(&msg));
            }
            let available = (self.data.len() - pos) as u64;
            // Both lengths were checked non-negative and ordered by the parser.
            let declared = header.block_length as u64;
            let block_end = pos + declared.min(available) as usize;
            if declared > available {
                let msg = format!(
                    "truncated block at data-object offset {offset}: its header declares {declared} bytes, {available} available"
                );
                rows.push(ledger, header.first_entry_id, None, Some(&msg));
            }
            let start = pos + (header.header_length as u64).min((block_end - pos) as u64) as usize;
            self.entries(&header, ledger, offset, start..block_end, rows, expect);
            pos = block_end;
        }
    }

    /// The entries of one block, `start..end` of the slice.
    fn entries(
        &self,
        header: &BlockHeader,
        ledger: i64,
        block_at: u64,
        span: std::ops::Range<usize>,
        rows: &mut Rows,
        expect: &mut Expect,
    ) {
        let (start, end) = (span.start, span.end);
        let d = self.data;
        let mut p = start;
        let mut k: i64 = 0;
        loop {
            let expected = header.first_entry_id.saturating_add(k);
            let left = end - p;
            if left < 4 || be_i32(d, p) < 0 {
                // End of the entries: what remains must be the padding.
                if let Some(bad) = padding_mismatch(&d[p..end]) {
                    let msg = format!(
                        "block at data-object offset {block_at}: {} bytes after its last entry (from data-object offset {}) are not FE DC DE AD padding, first difference at data-object offset {}",
                        end - p,
                        self.at(p),
                        self.at(p + bad)
                    );
                    rows.push(ledger, expected, None, Some(&msg));
                }
                return;
            }
            if left < ENTRY_HEADER_SIZE {
                let msg = format!(
                    "truncated entry header at data-object offset {}: needs {ENTRY_HEADER_SIZE} bytes, {left} left in the block at data-object offset {block_at}",
                    self.at(p)
                );
                expect.entry_error(rows, ledger, expected, &msg);
                return;
            }
            let len = be_i32(d, p) as usize;
            let id = be_i64(d, p + 4);
            if len > left - ENTRY_HEADER_SIZE {
                let msg = format!(
                    "entry {id} at data-object offset {}: length {len} runs past the end of the block at data-object offset {block_at} ({} bytes left); the rest of the block is unreadable",
                    self.at(p),
                    left - ENTRY_HEADER_SIZE
                );
                expect.entry_error(rows, ledger, expected, &msg);
                return;
            }
            let body = &d[p + ENTRY_HEADER_SIZE..p + ENTRY_HEADER_SIZE + len];
            if id != expected {
                let msg = format!(
                    "entry at data-object offset {} has id {id}, but its position (entry {k} of the block at data-object offset {block_at}, which starts at entry {}) makes it {expected}",
                    self.at(p),
                    header.first_entry_id
                );
                // Kept by position: this block is where that entry should be.
                if expect.wants(ledger, expected) {
                    rows.push(ledger, id, Some(body), Some(&msg));
                }
            } else if expect.wants(ledger, id) {
                expect.seen.push((ledger, id));
                rows.push(ledger, id, Some(body), None);
            }
            p += ENTRY_HEADER_SIZE + len;
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests;
