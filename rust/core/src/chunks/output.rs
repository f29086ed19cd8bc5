//! Output: outcomes → rows of the output schema.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int64Builder, ListBuilder, StringBuilder};
use arrow_array::{
    new_null_array, Array, ArrayRef, BinaryArray, Int64Array, RecordBatch, StringArray,
};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::SchemaRef;
use arrow_select::concat::concat_batches;
use arrow_select::interleave::interleave;

use super::options::added_fields;
use super::state::{arrow_err, Event, Outcome, Sink};
use crate::error::{EntryError, Result};

/// Input rows plus the added columns, all null.
pub(super) fn passthrough(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut cols = batch.columns().to_vec();
    for f in added_fields() {
        cols.push(new_null_array(f.data_type(), batch.num_rows()));
    }
    RecordBatch::try_new(schema.clone(), cols).map_err(arrow_err)
}

/// Values at least this large are handed to Arrow without a copy, in a
/// batch of their own.
pub(super) const LARGE_VALUE: usize = 64 * 1024;

/// The outcome rows, in the output schema. Values are copied once into a
/// pre-sized buffer.
pub(super) fn outcome_batch(
    input: &SchemaRef,
    out: &SchemaRef,
    outcomes: &[Outcome],
) -> Result<RecordBatch> {
    let bytes: usize = outcomes
        .iter()
        .map(|o| o.value.as_ref().map_or(0, Vec::len))
        .sum();
    let mut values = BinaryBuilder::with_capacity(outcomes.len(), bytes);
    for o in outcomes {
        values.append_option(o.value.as_deref());
    }
    outcome_rows(input, out, outcomes, Arc::new(values.finish()))
}

/// One outcome whose value becomes the Arrow buffer as is (no copy).
pub(super) fn large_outcome_batch(
    input: &SchemaRef,
    out: &SchemaRef,
    mut o: Outcome,
) -> Result<RecordBatch> {
    let value = o.value.take().expect("large outcomes have a value");
    let len =
        i32::try_from(value.len()).map_err(|_| EntryError::Data("a message over 2 GiB".into()))?;
    let array = BinaryArray::new(
        OffsetBuffer::new(ScalarBuffer::from(vec![0, len])),
        Buffer::from_vec(value),
        None,
    );
    outcome_rows(input, out, std::slice::from_ref(&o), Arc::new(array))
}

pub(super) fn outcome_rows(
    input: &SchemaRef,
    out: &SchemaRef,
    outcomes: &[Outcome],
    values: ArrayRef,
) -> Result<RecordBatch> {
    let templates: Vec<&RecordBatch> = outcomes.iter().map(|o| &o.template).collect();
    let base = concat_batches(input, templates).map_err(arrow_err)?;
    let n = outcomes.len();
    let last = |o: &Outcome| *o.held.last().expect("an outcome holds a chunk");
    let mut cols = base.columns().to_vec();
    let mut set = |name: &str, array: ArrayRef| -> Result<()> {
        if let Some((i, f)) = input.column_with_name(name) {
            cols[i] = if array.data_type() == f.data_type() {
                array
            } else {
                arrow_cast::cast(&array, f.data_type()).map_err(arrow_err)?
            };
        }
        Ok(())
    };
    set(
        "ledger_id",
        Arc::new(Int64Array::from_iter_values(
            outcomes.iter().map(|o| last(o).0),
        )),
    )?;
    set(
        "entry_id",
        Arc::new(Int64Array::from_iter_values(
            outcomes.iter().map(|o| last(o).1),
        )),
    )?;
    set("value", values)?;
    set(
        "error",
        Arc::new(StringArray::from_iter(
            outcomes.iter().map(|o| o.error.as_deref()),
        )),
    )?;
    set(
        "broker_timestamp",
        Arc::new(Int64Array::from_iter(outcomes.iter().map(|o| o.broker_ts))),
    )?;
    set(
        "broker_index",
        Arc::new(Int64Array::from_iter(
            outcomes.iter().map(|o| o.broker_index),
        )),
    )?;
    // Message.getIndex() of a chunked message is its last chunk's index; a
    // chunk is a single-message entry, whose offset is its broker index.
    set(
        "offset",
        Arc::new(Int64Array::from_iter(
            outcomes.iter().map(|o| o.broker_index),
        )),
    )?;
    let mut status = StringBuilder::with_capacity(n, n * 10);
    let mut ledgers = ListBuilder::new(Int64Builder::new());
    let mut entries = ListBuilder::new(Int64Builder::new());
    for o in outcomes {
        status.append_value(o.status);
        for &(l, e) in &o.held {
            ledgers.values().append_value(l);
            entries.values().append_value(e);
        }
        ledgers.append(true);
        entries.append(true);
    }
    cols.push(Arc::new(Int64Array::from_iter_values(
        outcomes.iter().map(|o| o.held[0].0),
    )));
    cols.push(Arc::new(Int64Array::from_iter_values(
        outcomes.iter().map(|o| o.held[0].1),
    )));
    cols.push(Arc::new(status.finish()));
    cols.push(Arc::new(ledgers.finish()));
    cols.push(Arc::new(entries.finish()));
    RecordBatch::try_new(out.clone(), cols).map_err(arrow_err)
}

/// Every outcome as output batches: large values zero-copy, one batch each;
/// the rest together.
pub(super) fn outcome_batches(
    input: &SchemaRef,
    out: &SchemaRef,
    outcomes: Vec<Outcome>,
) -> Result<Vec<RecordBatch>> {
    let (large, small): (Vec<Outcome>, Vec<Outcome>) = outcomes
        .into_iter()
        .partition(|o| o.value.as_ref().is_some_and(|v| v.len() >= LARGE_VALUE));
    let mut batches = Vec::new();
    if !small.is_empty() {
        batches.push(outcome_batch(input, out, &small)?);
    }
    for o in large {
        batches.push(large_outcome_batch(input, out, o)?);
    }
    Ok(batches)
}

/// Segments of small rows above which one step's rows are copied into a
/// single batch instead of being returned as many small slices.
pub(super) const MAX_SEGMENTS: usize = 32;

/// Lays out one step's rows in event order: runs of input rows stay
/// zero-copy slices, large reassembled values stay zero-copy batches, and
/// the remaining outcomes share one batch; when that would make too many
/// small batches, everything is copied into one.
pub(super) fn assemble(
    batch: &RecordBatch,
    input: &SchemaRef,
    out: &SchemaRef,
    sink: &mut Sink,
) -> Result<Vec<RecordBatch>> {
    let rows = passthrough(batch, out)?;
    // Sources: 0 = input rows, 1 = small outcomes, 2.. = one large outcome each.
    let outcomes = std::mem::take(&mut sink.outcomes);
    let mut place = Vec::with_capacity(outcomes.len()); // outcome -> (source, row)
    let (mut large, mut small) = (Vec::new(), Vec::new());
    for o in outcomes {
        if o.value.as_ref().is_some_and(|v| v.len() >= LARGE_VALUE) {
            place.push((2 + large.len(), 0));
            large.push(o);
        } else {
            place.push((1, small.len()));
            small.push(o);
        }
    }
    let mut sources = vec![rows];
    sources.push(if small.is_empty() {
        RecordBatch::new_empty(out.clone())
    } else {
        outcome_batch(input, out, &small)?
    });
    for o in large {
        sources.push(large_outcome_batch(input, out, o)?);
    }
    let indices: Vec<(usize, usize)> = sink
        .events
        .iter()
        .map(|e| match e {
            Event::Row(i) => (0, *i),
            Event::Outcome(k) => place[*k],
        })
        .collect();
    sink.events.clear();
    // Runs of consecutive rows of one source: (source, start, len).
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for &(src, i) in &indices {
        match runs.last_mut() {
            Some((s, start, len)) if *s == src && *start + *len == i => *len += 1,
            _ => runs.push((src, i, 1)),
        }
    }
    if runs.iter().filter(|r| r.0 < 2).count() <= MAX_SEGMENTS {
        return Ok(runs
            .iter()
            .map(|&(s, start, len)| sources[s].slice(start, len))
            .collect());
    }
    let cols = (0..out.fields().len())
        .map(|c| {
            let arrays: Vec<&dyn Array> = sources.iter().map(|b| b.column(c).as_ref()).collect();
            interleave(&arrays, &indices)
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(arrow_err)?;
    Ok(vec![
        RecordBatch::try_new(out.clone(), cols).map_err(arrow_err)?
    ])
}
