//! Stage 3, [`rebuild()`]: entries joined with their plans → compacted entries.

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, GenericListArray, OffsetSizeTrait, RecordBatch, StructArray};
use arrow_schema::{DataType, SchemaRef};

use crate::decode::entries::EntryRows;
use crate::error::{EntryError, Result};
use crate::format::compression::Decompressor;

use super::rows::column;
use crate::compaction::compactor::{output_schema, Output};
use crate::compaction::strategic::{write_entry, Slot};
use crate::compaction::CompactOptions;

/// Phase two over entries joined with their plans: `ledger_id`, `entry_id`,
/// `partition`, `data`, `note` (the entry is kept whole with it) and `slots`
/// (a list of `(batch_index, value)` structs, `value` a merged value or null).
/// Returns the compacted entries with a `partition` column.
pub fn rebuild(batch: &RecordBatch, opts: &CompactOptions) -> Result<Vec<RecordBatch>> {
    let rows = EntryRows::new(batch)?;
    let note = column(batch, "note", &DataType::Utf8)?;
    let note = note.as_string::<i32>();
    let slots = batch
        .column_by_name("slots")
        .ok_or_else(|| EntryError::Schema("input has no `slots` column".into()))?;
    let slots = SlotLists::new(slots)?;
    let mut decompressor = Decompressor::default();
    let mut out = Output::new(true);
    for i in 0..rows.len() {
        if rows.id_is_null(i) {
            return Err(EntryError::Schema(format!(
                "entry row {i} has a null ledger_id or entry_id"
            )));
        }
        let id = rows.id(i);
        let key = (id.partition, id.ledger_id, id.entry_id);
        let data = rows.data(i);
        if !note.is_null(i) {
            out.push(key, data, Some(note.value(i)));
            continue;
        }
        let Some(data) = data else { continue };
        let mut plan = slots.get(i)?;
        plan.sort_by_key(|s| s.0);
        plan.dedup_by_key(|s| s.0);
        if plan.is_empty() {
            continue;
        }
        let r = write_entry(&mut decompressor, data, &plan, opts);
        out.push_rewritten(key, data, r);
    }
    Ok(out.finish())
}

/// Schema of [`rebuild`]'s output.
pub fn rebuild_schema() -> SchemaRef {
    output_schema(true)
}

/// A `slots` column: list (or large list) of `(batch_index, value)` structs.
pub(super) enum SlotLists<'a> {
    Small(&'a GenericListArray<i32>),
    Large(&'a GenericListArray<i64>),
    Null,
}

impl<'a> SlotLists<'a> {
    pub(super) fn new(col: &'a ArrayRef) -> Result<Self> {
        match col.data_type() {
            DataType::List(_) => Ok(SlotLists::Small(col.as_list::<i32>())),
            DataType::LargeList(_) => Ok(SlotLists::Large(col.as_list::<i64>())),
            DataType::Null => Ok(SlotLists::Null),
            other => Err(EntryError::Schema(format!(
                "`slots` must be a list of (batch_index, value) structs, not {other}"
            ))),
        }
    }

    pub(super) fn get(&self, i: usize) -> Result<Vec<Slot>> {
        match self {
            SlotLists::Small(l) => slots_of(*l, i),
            SlotLists::Large(l) => slots_of(*l, i),
            SlotLists::Null => Ok(Vec::new()),
        }
    }
}

pub(super) fn slots_of<O: OffsetSizeTrait>(
    list: &GenericListArray<O>,
    i: usize,
) -> Result<Vec<Slot>> {
    if list.is_null(i) {
        return Ok(Vec::new());
    }
    let items = list.value(i);
    let items: &StructArray = items
        .as_struct_opt()
        .ok_or_else(|| EntryError::Schema("`slots` items must be structs".into()))?;
    let field = |name: &str, to: &DataType| -> Result<ArrayRef> {
        let col = items
            .column_by_name(name)
            .ok_or_else(|| EntryError::Schema(format!("`slots` items have no `{name}`")))?;
        arrow_cast::cast(col, to).map_err(|e| EntryError::Schema(format!("`slots.{name}`: {e}")))
    };
    let index = field("batch_index", &DataType::Int32)?;
    let index = index.as_primitive::<Int32Type>();
    let value = field("value", &DataType::Binary)?;
    let value = value.as_binary::<i32>();
    Ok((0..items.len())
        .filter(|&j| !index.is_null(j))
        .map(|j| {
            let v = (!value.is_null(j)).then(|| value.value(j).to_vec());
            (index.value(j), v)
        })
        .collect())
}
