//! Position lookups over entry tables (spec compaction.md §11–12): the last
//! message of a compacted ledger, GetLastMessageId over a topic's entries,
//! the greatest entry position, and the publish-time search. These are the
//! table-level drivers of [`super::position`].

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::builder::{Int32Builder, StringBuilder};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::position::{
    entry_summary, last_in_compacted_entry, last_in_topic_entry, MessagePosition, Source,
    MARKER_TXN_ABORT,
};
use crate::decode::binary::binary_values;
use crate::decode::entries::EntryRows;
use crate::error::{EntryError, ErrorKind};

/// A lookup's failure: a core error, or entries that hold no position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    #[error(transparent)]
    Entry(#[from] EntryError),
    /// The entry that must answer has no data, or every slot of the last
    /// compacted batch is compacted out: the stored data is at fault.
    #[error("{0}")]
    NoPosition(String),
}

impl LookupError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            LookupError::Entry(e) => e.kind(),
            LookupError::NoPosition(_) => ErrorKind::Data,
        }
    }
}

pub type Result<T, E = LookupError> = std::result::Result<T, E>;

/// The name of a [`Source`], as the Python API reports it.
pub fn source_name(s: Source) -> &'static str {
    match s {
        Source::NotBatched => "not-batched",
        Source::CompactedBatchIndexes => "compacted-batch-indexes",
        Source::Encrypted => "encrypted",
        Source::Scan => "scan",
    }
}

/// Every row of entry batches, for lookups by row.
struct Rows<'a> {
    rows: Vec<EntryRows<'a>>,
}

impl<'a> Rows<'a> {
    fn new(batches: &'a [RecordBatch]) -> Result<Self> {
        Ok(Rows {
            rows: batches
                .iter()
                .map(EntryRows::new)
                .collect::<Result<_, _>>()?,
        })
    }

    fn iter(&self) -> impl DoubleEndedIterator<Item = (&EntryRows<'a>, usize)> + '_ {
        self.rows
            .iter()
            .flat_map(|r| (0..r.len()).map(move |i| (r, i)))
    }

    /// The row with the greatest `(ledger_id, entry_id)`.
    fn max_position(&self) -> Option<(&EntryRows<'a>, usize)> {
        self.iter()
            .filter(|(r, i)| !r.id_is_null(*i))
            .max_by_key(|(r, i)| {
                let id = r.id(*i);
                (id.ledger_id, id.entry_id)
            })
    }
}

/// The last message of a compacted ledger's entries (PIP-429 rules), read
/// from the entry with the greatest position, or `None` without entries.
/// Only that entry's metadata is read, except when its batch must be scanned.
pub fn compacted_last_position(
    batches: &[RecordBatch],
    max_uncompressed_size: usize,
) -> Result<Option<(MessagePosition, Source)>> {
    let rows = Rows::new(batches)?;
    let Some((r, i)) = rows.max_position() else {
        return Ok(None);
    };
    let id = r.id(i);
    let data = r.data(i).ok_or_else(|| {
        LookupError::NoPosition(format!(
            "the last compacted entry {}:{} has no data",
            id.ledger_id, id.entry_id
        ))
    })?;
    last_in_compacted_entry(id.ledger_id, id.entry_id, data, max_uncompressed_size)
        .map(Some)
        .map_err(|e| match e.kind() {
            // Every slot compacted out: the entry, not the caller, is at fault.
            ErrorKind::InputSchema => LookupError::NoPosition(e.to_string()),
            _ => e.into(),
        })
}

/// `(last_batch_index int32, source string, error string)`.
pub fn last_batch_index_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("last_batch_index", DataType::Int32, true),
        Field::new("source", DataType::Utf8, true),
        Field::new("error", DataType::Utf8, true),
    ]))
}

/// The PIP-429 last batch index of each compacted entry of a binary array.
/// A null entry, or one whose index cannot be found, gives a null index and
/// an `error`; the other rows are unaffected.
pub fn last_batch_indexes(data: &dyn Array, max_uncompressed_size: usize) -> Result<RecordBatch> {
    let (mut index, mut source, mut error) = (
        Int32Builder::new(),
        StringBuilder::new(),
        StringBuilder::new(),
    );
    for entry in binary_values(data, "entry data")? {
        match entry.map(|d| last_in_compacted_entry(0, 0, d, max_uncompressed_size)) {
            Some(Ok((p, s))) => {
                index.append_value(p.batch_index);
                source.append_value(source_name(s));
                error.append_null();
            }
            Some(Err(e)) => {
                index.append_null();
                source.append_null();
                error.append_value(e.to_string());
            }
            None => {
                index.append_null();
                source.append_null();
                error.append_value("no entry data (null)");
            }
        }
    }
    let columns: Vec<Arc<dyn Array>> = vec![
        Arc::new(index.finish()),
        Arc::new(source.finish()),
        Arc::new(error.finish()),
    ];
    Ok(RecordBatch::try_new(last_batch_index_schema(), columns).expect("schema"))
}

/// The managed-ledger answer of GetLastMessageId for a topic's entries: the
/// last dispatchable entry — not a marker, and not part of a transaction
/// aborted by a `TXN_ABORT` marker among the entries — or `None`. An entry
/// whose metadata cannot be read counts as dispatchable (batch index −1,
/// publish time 0).
pub fn topic_last_position(batches: &[RecordBatch]) -> Result<Option<MessagePosition>> {
    let rows = Rows::new(batches)?;
    let mut aborted = HashSet::new();
    for (r, i) in rows.iter() {
        if let Some(s) = r.data(i).and_then(|d| entry_summary(d).ok()) {
            if let (Some(MARKER_TXN_ABORT), Some(t)) = (s.marker_type, s.txn) {
                aborted.insert(t);
            }
        }
    }
    for (r, i) in rows.iter().rev() {
        if r.id_is_null(i) {
            continue;
        }
        let id = r.id(i);
        let data = r.data(i).unwrap_or_default();
        match entry_summary(data) {
            Ok(s) if s.marker_type.is_some() => continue,
            Ok(s) if s.txn.is_some_and(|t| aborted.contains(&t)) => continue,
            Ok(_) => return Ok(Some(last_in_topic_entry(id.ledger_id, id.entry_id, data)?)),
            Err(_) => {
                return Ok(Some(MessagePosition {
                    ledger_id: id.ledger_id,
                    entry_id: id.entry_id,
                    batch_index: -1,
                    publish_time: 0,
                }))
            }
        }
    }
    Ok(None)
}

/// The greatest `(ledger_id, entry_id)` among entries, or `None`.
pub fn max_entry_position(batches: &[RecordBatch]) -> Result<Option<(i64, i64)>> {
    let rows = Rows::new(batches)?;
    Ok(rows.max_position().map(|(r, i)| {
        let id = r.id(i);
        (id.ledger_id, id.entry_id)
    }))
}

/// `findEntryByPublishTime`: binary search over the entries in table order
/// (the compacted ledger's order) for the lowest one whose batch-level
/// `publish_time` ≥ `publish_time`. Assumes publish times grow along the
/// ledger, as the broker does.
pub fn find_by_publish_time(
    batches: &[RecordBatch],
    publish_time: u64,
) -> Result<Option<(i64, i64)>> {
    let rows = Rows::new(batches)?;
    let all: Vec<_> = rows.iter().collect();
    let (mut lo, mut hi) = (0i64, all.len() as i64 - 1);
    let mut found = None;
    while lo <= hi {
        let mid = lo + (hi - lo) / 2;
        let (r, i) = all[mid as usize];
        let data = r.data(i).ok_or_else(|| {
            LookupError::NoPosition(format!("compacted entry at row {mid} has no data"))
        })?;
        if entry_summary(data)?.publish_time >= publish_time {
            found = Some(mid as usize);
            hi = mid - 1;
        } else {
            lo = mid + 1;
        }
    }
    Ok(found.map(|m| {
        let (r, i) = all[m];
        let id = r.id(i);
        (id.ledger_id, id.entry_id)
    }))
}
