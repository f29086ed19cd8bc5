//! Seek by broker time and by continuous offset over entries in topic order.
//!
//! Both are binary searches that read only the `0e 02` prefix (and, for
//! time, the MessageMetadata when there is no broker timestamp): never a
//! payload. They touch O(log n) entries; [`Position::entries_read`] says how
//! many.
//!
//! * Time (spec compaction.md §13): Pulsar's `resetCursor(timestamp)` finds
//!   the newest entry whose entry time (`broker_timestamp`, else
//!   `publish_time`) is strictly before T and answers the entry after it; with
//!   no such entry, the first entry. An entry that cannot be read counts as
//!   not earlier, as in `PersistentMessageFinder`.
//! * Offset (spec chunks-processors-offload.md §3.4): KoP's search with
//!   predicate `index < offset`; an entry without an index, or unreadable,
//!   does not match (`OffsetSearchPredicate`).

use arrow_array::{Array, BinaryArray, BinaryViewArray, Int64Array, LargeBinaryArray, RecordBatch};
use arrow_schema::DataType;

use crate::error::{EntryError, Result};
use crate::format::frame::{split_broker_entry_metadata, EntryView};

enum DataColumn {
    Binary(BinaryArray),
    Large(LargeBinaryArray),
    View(BinaryViewArray),
}

impl DataColumn {
    fn get(&self, i: usize) -> Option<&[u8]> {
        match self {
            DataColumn::Binary(a) => (!a.is_null(i)).then(|| a.value(i)),
            DataColumn::Large(a) => (!a.is_null(i)).then(|| a.value(i)),
            DataColumn::View(a) => (!a.is_null(i)).then(|| a.value(i)),
        }
    }
}

struct Part {
    start: usize,
    ledger: Int64Array,
    entry: Int64Array,
    data: DataColumn,
}

/// Random access to the rows of an entry table held as record batches.
pub struct EntryTable {
    parts: Vec<Part>,
    len: usize,
}

fn id_column(batch: &RecordBatch, name: &str) -> Result<Int64Array> {
    let col = batch
        .column_by_name(name)
        .ok_or_else(|| EntryError::Schema(format!("input has no `{name}` column")))?;
    let col = arrow_cast::cast(col, &DataType::Int64)
        .map_err(|e| EntryError::Schema(format!("`{name}`: {e}")))?;
    Ok(col.as_any().downcast_ref::<Int64Array>().unwrap().clone())
}

impl EntryTable {
    pub fn new(batches: &[RecordBatch]) -> Result<Self> {
        let mut parts = Vec::with_capacity(batches.len());
        let mut start = 0;
        for b in batches {
            if b.num_rows() == 0 {
                continue;
            }
            let data = b
                .column_by_name("data")
                .ok_or_else(|| EntryError::Schema("input has no `data` column".into()))?;
            let data = match data.data_type() {
                DataType::Binary => {
                    DataColumn::Binary(data.as_any().downcast_ref::<BinaryArray>().unwrap().clone())
                }
                DataType::LargeBinary => DataColumn::Large(
                    data.as_any()
                        .downcast_ref::<LargeBinaryArray>()
                        .unwrap()
                        .clone(),
                ),
                DataType::BinaryView => DataColumn::View(
                    data.as_any()
                        .downcast_ref::<BinaryViewArray>()
                        .unwrap()
                        .clone(),
                ),
                other => {
                    return Err(EntryError::Schema(format!(
                        "`data` must be binary or large_binary, not {other}"
                    )))
                }
            };
            parts.push(Part {
                start,
                ledger: id_column(b, "ledger_id")?,
                entry: id_column(b, "entry_id")?,
                data,
            });
            start += b.num_rows();
        }
        Ok(EntryTable { parts, len: start })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn part(&self, row: usize) -> (&Part, usize) {
        let i = self.parts.partition_point(|p| p.start <= row) - 1;
        (&self.parts[i], row - self.parts[i].start)
    }

    pub fn data(&self, row: usize) -> Option<&[u8]> {
        let (p, i) = self.part(row);
        p.data.get(i)
    }

    /// Checks the rows are in topic order (`(ledger_id, entry_id)` never
    /// decreasing), as the binary searches need: on unsorted rows they would
    /// answer silently wrong. Reads only the ids.
    pub fn check_order(&self) -> Result<()> {
        let mut last: Option<(i64, i64)> = None;
        for p in &self.parts {
            for i in 0..p.ledger.len() {
                if p.ledger.is_null(i) || p.entry.is_null(i) {
                    continue;
                }
                let id = (p.ledger.value(i), p.entry.value(i));
                if let Some(prev) = last {
                    if id < prev {
                        return Err(EntryError::Order(format!(
                            "entries are not in topic order: {}:{} comes after {}:{}; \
                             sort by ledger_id, entry_id first (one partition at a time)",
                            id.0, id.1, prev.0, prev.1
                        )));
                    }
                }
                last = Some(id);
            }
        }
        Ok(())
    }

    /// `(ledger_id, entry_id)` of a row (−1 for a null id).
    pub fn id(&self, row: usize) -> (i64, i64) {
        let (p, i) = self.part(row);
        let get = |a: &Int64Array| if a.is_null(i) { -1 } else { a.value(i) };
        (get(&p.ledger), get(&p.entry))
    }
}

/// Where a seek lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Row in the entry table; equal to its length when past the last entry.
    pub row: usize,
    /// The entry at `row`; past the end, the last entry's ledger and its
    /// entry id + 1, as Pulsar's `Position.getNext()`.
    pub ledger_id: i64,
    pub entry_id: i64,
    /// For an offset seek: the message's index in the entry, when the entry
    /// holds the offset.
    pub batch_index: Option<i32>,
    /// Entries whose bytes the search read.
    pub entries_read: usize,
}

/// The newest row where `pred` holds, assuming it holds for a prefix of the
/// rows (Pulsar's `OpFindNewest`: check first, check last, then bisect).
fn find_newest(n: usize, mut pred: impl FnMut(usize) -> bool) -> Option<usize> {
    if n == 0 || !pred(0) {
        return None;
    }
    if pred(n - 1) {
        return Some(n - 1);
    }
    // Invariant: pred(lo) holds, pred(hi) does not.
    let (mut lo, mut hi) = (0, n - 1);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

fn position(table: &EntryTable, row: usize, entries_read: usize) -> Position {
    let (ledger_id, entry_id) = if row < table.len() {
        table.id(row)
    } else {
        let (l, e) = table.id(table.len() - 1);
        (l, e + 1)
    };
    Position {
        row,
        ledger_id,
        entry_id,
        batch_index: None,
        entries_read,
    }
}

/// Entry time: the broker timestamp, else the publish time.
pub fn entry_timestamp(data: &[u8]) -> Result<u64> {
    let (bem, _) = split_broker_entry_metadata(data)?;
    if let Some(t) = bem.and_then(|b| b.broker_timestamp) {
        return Ok(t);
    }
    Ok(EntryView::parse(data, false)?.metadata.publish_time)
}

/// Pulsar's seek by timestamp (`time_ms` in milliseconds).
pub fn find_position_by_time(table: &EntryTable, time_ms: i64) -> Result<Position> {
    if table.is_empty() {
        return Err(EntryError::Schema(
            "cannot seek in an empty entry table".into(),
        ));
    }
    table.check_order()?;
    let mut reads = 0;
    let newest = find_newest(table.len(), |row| {
        reads += 1;
        table
            .data(row)
            .and_then(|d| entry_timestamp(d).ok())
            .is_some_and(|t| (t as i128) < i128::from(time_ms))
    });
    Ok(position(table, newest.map_or(0, |r| r + 1), reads))
}

/// KoP's seek by continuous offset: the entry holding `offset` and the
/// message's index in it.
pub fn find_position_by_offset(table: &EntryTable, offset: i64) -> Result<Position> {
    if table.is_empty() {
        return Err(EntryError::Schema(
            "cannot seek in an empty entry table".into(),
        ));
    }
    table.check_order()?;
    let index_of = |row: usize| {
        table
            .data(row)
            .and_then(|d| split_broker_entry_metadata(d).ok())
            .and_then(|(bem, _)| bem?.index)
    };
    let mut reads = 0;
    let newest = find_newest(table.len(), |row| {
        reads += 1;
        index_of(row).is_some_and(|i| (i as i128) < i128::from(offset))
    });
    let row = newest.map_or(0, |r| r + 1);
    let mut pos = position(table, row, reads);
    if row < table.len() {
        pos.entries_read += 1;
        if let Some(view) = table
            .data(row)
            .and_then(|d| EntryView::parse(d, false).ok())
        {
            if let Some(index) = view.broker_entry_metadata.and_then(|b| b.index) {
                let base = index as i64 - (i64::from(view.metadata.num_messages()) - 1);
                if (base..=index as i64).contains(&offset) {
                    pos.batch_index = i32::try_from(offset - base).ok();
                }
            }
        }
    }
    Ok(pos)
}
