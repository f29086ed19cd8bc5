//! The functions over Arrow tables: the seeks, the stamp, message ids, the
//! compaction lookups and ledger records, and the stateless steps of the
//! Spark pipelines (compaction and chunk reassembly).

use std::collections::HashSet;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::{list, tuple, CallError, Result};
use crate::chunks;
use crate::compaction::compactor::{aborted_in, output_schema};
use crate::compaction::distributed::{self, candidate_schema};
use crate::compaction::keyed::{keyed_messages as keyed, keyed_schema};
use crate::compaction::lookup::{self, source_name};
use crate::compaction::position::MessagePosition;
use crate::compaction::records::{self, parsed_records_schema, records_schema};
use crate::compaction::strategic_distributed as sd;
use crate::compaction::CompactOptions;
use crate::decode::message_id_columns::with_message_ids as add_ids;
use crate::kwargs::{ArgsError, Kwargs};
use crate::seek::{self, EntryTable, Position};
use crate::stamp::stamp_batches;
use crate::value::Value;

/// The batches of the table argument `name`.
fn input<'v>(kw: &mut Kwargs<'v>, name: &str) -> Result<&'v [RecordBatch]> {
    Ok(kw.required_table(name)?.1)
}

fn table(batches: Vec<RecordBatch>, schema: SchemaRef) -> Value<'static> {
    Value::Table(schema, batches)
}

/// `f` over each batch, the outputs as one table of `schema`.
fn per_batch<B, E>(
    batches: &[RecordBatch],
    schema: SchemaRef,
    f: impl Fn(&RecordBatch) -> std::result::Result<B, E>,
) -> Result<Value<'static>>
where
    B: IntoIterator<Item = RecordBatch>,
    CallError: From<E>,
{
    let out = batches
        .iter()
        .map(f)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(table(out.into_iter().flatten().collect(), schema))
}

/// [`Kwargs::compact`] in publish order (with `retain_null_key` when `retain`).
fn publish(kw: &mut Kwargs<'_>, retain: bool) -> Result<CompactOptions, ArgsError> {
    kw.compact(false, retain)
}

// ---------------------------------------------------------------- entries

pub(super) fn stamp<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let (schema, batches) = kw.required_table("entries")?;
    let (mut stamper, times) = kw.stamp()?;
    let (schema, out) = stamp_batches(schema, batches, &mut stamper, &times)?;
    Ok(table(out, schema))
}

fn position(p: Position) -> Value<'static> {
    let (row, entries_read) = (p.row, p.entries_read);
    tuple([
        row.into(),
        p.ledger_id.into(),
        p.entry_id.into(),
        p.batch_index.into(),
        entries_read.into(),
    ])
}

pub(super) fn find_position_by_time<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let entries = EntryTable::new(input(kw, "entries")?)?;
    Ok(position(seek::find_position_by_time(
        &entries,
        kw.required("time")?,
    )?))
}

pub(super) fn find_position_by_offset<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let entries = EntryTable::new(input(kw, "entries")?)?;
    Ok(position(seek::find_position_by_offset(
        &entries,
        kw.required("offset")?,
    )?))
}

pub(super) fn with_message_ids<'v>(kw: &mut Kwargs<'v>) -> Result<Value<'v>> {
    let (schema, batches) = kw.required_table("table")?;
    let (schema, out) = add_ids(schema, batches)?;
    Ok(table(out, schema))
}

// ---------------------------------------------------------------- compaction


/// `(ledger, entry, batch index, publish time)`, then `extra`.
fn message_position(p: &MessagePosition, extra: Option<&'static str>) -> Value<'static> {
    let ids = [p.ledger_id.into(), p.entry_id.into(), p.batch_index.into()];
    tuple(
        ids.into_iter()
            .chain([p.publish_time.into()])
            .chain(extra.map(Value::from)),
    )
}



fn entry_position(found: Option<(i64, i64)>) -> Value<'static> {
    found
        .map(|(ledger, entry)| tuple([ledger.into(), entry.into()]))
        .into()
}









// ---------------------------------------------------------------- chunks

