//! The public API: in-process reassembly, and the partition pass plus
//! leftover step that reproduce it on a partitioned input.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use arrow_select::concat::concat_batches;
use arrow_select::take::take_record_batch;

use super::columns::Cols;
use super::options::{
    check_input_schema, output_schema, ReassemblyOptions, ROLE_COLUMN, WATERMARK_COLUMN,
};
use super::output::{assemble, outcome_batches};
use super::state::{arrow_err, Machine, Mode, Sink};
use crate::error::{EntryError, Result};

/// Runs one input batch (of the stream's schema) through the state machine,
/// with publish time as the clock.
pub(super) fn feed(machine: &mut Machine, input: &SchemaRef, batch: &RecordBatch) -> Result<Sink> {
    if batch.schema().fields() != input.fields() {
        return Err(EntryError::Schema(
            "every input batch must have the schema of the first".into(),
        ));
    }
    let cols = Cols::read(batch, "publish_time")?;
    let mut sink = Sink::default();
    machine.push(batch, &cols, &mut sink)?;
    Ok(sink)
}

/// Streaming reassembly over decoded batches, in topic order.
pub struct Reassembler {
    pub(super) machine: Machine,
    pub(super) input: SchemaRef,
    pub(super) output: SchemaRef,
}

impl Reassembler {
    pub fn new(input: SchemaRef, opts: ReassemblyOptions) -> Result<Self> {
        check_input_schema(&input)?;
        Ok(Reassembler {
            machine: Machine::new(opts, Mode::InProcess)?,
            output: output_schema(&input),
            input,
        })
    }

    pub fn schema(&self) -> SchemaRef {
        self.output.clone()
    }

    /// The rows decided while reading `batch` (its non-chunk rows, and every
    /// message completed, reported or ignored on the way), in order.
    pub fn push(&mut self, batch: &RecordBatch) -> Result<Vec<RecordBatch>> {
        let mut sink = feed(&mut self.machine, &self.input, batch)?;
        assemble(batch, &self.input, &self.output, &mut sink)
    }

    /// Reports the messages still pending at the end of the input.
    pub fn finish(&mut self) -> Result<Vec<RecordBatch>> {
        let mut sink = Sink::default();
        self.machine.finish(&HashMap::new(), &mut sink);
        outcome_batches(&self.input, &self.output, sink.outcomes)
    }
}

/// Reassembles decoded batches (topic order) in one call.
pub fn reassemble(batches: &[RecordBatch], opts: ReassemblyOptions) -> Result<Vec<RecordBatch>> {
    let Some(first) = batches.first() else {
        return Ok(vec![]);
    };
    Ok(reassemble_table(first.schema(), batches, opts)?.0)
}

/// [`reassemble`] of a table with schema `input` (which may have no
/// batches), and the output schema.
pub fn reassemble_table(
    input: SchemaRef,
    batches: &[RecordBatch],
    opts: ReassemblyOptions,
) -> Result<(Vec<RecordBatch>, SchemaRef)> {
    let mut r = Reassembler::new(input, opts)?;
    let mut out = Vec::new();
    for b in batches {
        out.extend(r.push(b)?);
    }
    out.extend(r.finish()?);
    out.retain(|b| b.num_rows() > 0);
    Ok((out, r.schema()))
}

/// The partition pass of a distributed reassembly.
pub struct PartitionResult {
    /// Final output rows: non-chunk rows and every message decided here.
    pub done: Vec<RecordBatch>,
    /// Chunk rows whose message is decided by [`finish_leftovers`]: the input
    /// columns plus `_watermark` (stream time when read) and `_role` (`chunk`,
    /// or `restart` for a value-less chunk-0 marker that ends an earlier
    /// partition's message with the same uuid).
    pub leftovers: RecordBatch,
}

/// Schema of [`PartitionResult::leftovers`].
pub fn leftover_schema(input: &Schema) -> SchemaRef {
    let mut fields: Vec<Field> = input.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(WATERMARK_COLUMN, DataType::Int64, false));
    fields.push(Field::new(ROLE_COLUMN, DataType::Utf8, false));
    Arc::new(Schema::new_with_metadata(fields, input.metadata().clone()))
}

/// The schema of what [`finish_leftovers`] gives for leftovers of schema
/// `leftovers`: the reassembly output of its columns without `_watermark`
/// and `_role`.
pub fn finished_schema(leftovers: &Schema) -> SchemaRef {
    let hidden = [WATERMARK_COLUMN, ROLE_COLUMN];
    let keep: Vec<Field> = leftovers
        .fields()
        .iter()
        .filter(|f| !hidden.contains(&f.name().as_str()))
        .map(|f| f.as_ref().clone())
        .collect();
    output_schema(&Schema::new(keep))
}

/// The partition pass of a distributed reassembly, streaming: one partition of
/// a topic-ordered input (a contiguous range of each topic partition) is
/// reassembled as far as it can be on its own, batch by batch.
///
/// `seeds` is the stream time (largest `publish_time`) of everything before
/// this partition, per topic partition: with it, every decision made here is
/// the one [`reassemble`] makes over the whole input. Messages still open at
/// the partition's end, and chunks continuing an earlier partition's message,
/// are handed on as leftovers. Memory is that of the in-process pass: the
/// pending messages' chunks, not the partition.
pub struct PartitionReassembler {
    pub(super) machine: Machine,
    pub(super) input: SchemaRef,
    pub(super) output: SchemaRef,
}

impl PartitionReassembler {
    pub fn new(
        input: SchemaRef,
        opts: ReassemblyOptions,
        seeds: &HashMap<i32, i64>,
    ) -> Result<Self> {
        check_input_schema(&input)?;
        let mut machine = Machine::new(opts, Mode::Partition)?;
        machine.seeds = seeds.clone();
        Ok(PartitionReassembler {
            machine,
            output: output_schema(&input),
            input,
        })
    }

    /// Schema of the final rows ([`output_schema`] of the input).
    pub fn schema(&self) -> SchemaRef {
        self.output.clone()
    }

    /// Schema of the leftovers ([`leftover_schema`] of the input).
    pub fn leftover_schema(&self) -> SchemaRef {
        leftover_schema(&self.input)
    }

    /// The rows decided while reading `batch`, and the rows it hands on.
    pub fn push(&mut self, batch: &RecordBatch) -> Result<PartitionResult> {
        let mut sink = feed(&mut self.machine, &self.input, batch)?;
        let rows = std::mem::take(&mut sink.leftovers);
        let mut done = assemble(batch, &self.input, &self.output, &mut sink)?;
        done.retain(|b| b.num_rows() > 0);
        Ok(PartitionResult {
            done,
            leftovers: leftover_batch(&self.input, rows)?,
        })
    }

    /// End of the partition: the messages still open are handed on.
    pub fn finish(&mut self) -> Result<PartitionResult> {
        let mut sink = Sink::default();
        self.machine.finish(&HashMap::new(), &mut sink);
        let rows = std::mem::take(&mut sink.leftovers);
        let mut done = outcome_batches(&self.input, &self.output, sink.outcomes)?;
        done.retain(|b| b.num_rows() > 0);
        Ok(PartitionResult {
            done,
            leftovers: leftover_batch(&self.input, rows)?,
        })
    }
}

/// [`PartitionReassembler`] over a whole partition at once.
pub fn reassemble_partition(
    batches: &[RecordBatch],
    opts: ReassemblyOptions,
    seeds: &HashMap<i32, i64>,
) -> Result<PartitionResult> {
    let Some(first) = batches.first() else {
        return Err(EntryError::Schema(
            "reassemble_partition needs at least one batch (it fixes the schema)".into(),
        ));
    };
    let input = first.schema();
    let mut r = PartitionReassembler::new(input.clone(), opts, seeds)?;
    let mut done = Vec::new();
    let mut left = Vec::new();
    for batch in batches {
        let part = r.push(batch)?;
        done.extend(part.done);
        left.push(part.leftovers);
    }
    let part = r.finish()?;
    done.extend(part.done);
    left.push(part.leftovers);
    let leftovers = concat_batches(&leftover_schema(&input), &left).map_err(arrow_err)?;
    Ok(PartitionResult { done, leftovers })
}

pub(super) fn leftover_batch(
    input: &SchemaRef,
    rows: Vec<(RecordBatch, i64, &'static str)>,
) -> Result<RecordBatch> {
    let schema = leftover_schema(input);
    let base = concat_batches(input, rows.iter().map(|(b, _, _)| b)).map_err(arrow_err)?;
    let mut cols = base.columns().to_vec();
    cols.push(Arc::new(Int64Array::from_iter_values(
        rows.iter().map(|r| r.1),
    )));
    cols.push(Arc::new(StringArray::from_iter_values(
        rows.iter().map(|r| r.2),
    )));
    RecordBatch::try_new(schema, cols).map_err(arrow_err)
}

/// Finishes the leftovers of every partition: groups them by
/// `(partition, uuid)`, orders each group by position, and decides each
/// message as [`reassemble`] would. Rows of one uuid must all be present
/// (e.g. after a shuffle keyed by partition and uuid); groups are independent.
///
/// `final_watermarks` is the stream time at the end of the whole input per
/// topic partition (its largest `publish_time`).
///
/// One decision needs the whole stream and is not reproduced: evicting a
/// message that spans a partition boundary because `max_pending` others
/// started after it (see the module notes).
pub fn finish_leftovers(
    batches: &[RecordBatch],
    opts: ReassemblyOptions,
    final_watermarks: &HashMap<i32, i64>,
) -> Result<Vec<RecordBatch>> {
    let Some(first) = batches.first() else {
        return Ok(vec![]);
    };
    let schema = first.schema();
    for name in [WATERMARK_COLUMN, ROLE_COLUMN] {
        if schema.column_with_name(name).is_none() {
            return Err(EntryError::Schema(format!(
                "leftovers have no `{name}` column: pass the leftovers of reassemble_partition"
            )));
        }
    }
    let all = concat_batches(&schema, batches).map_err(arrow_err)?;
    // The original columns, without the two bookkeeping ones.
    let keep: Vec<usize> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.name() != WATERMARK_COLUMN && f.name() != ROLE_COLUMN)
        .map(|(i, _)| i)
        .collect();
    let input = Arc::new(schema.project(&keep).map_err(arrow_err)?);
    check_input_schema(&input)?;
    let output = output_schema(&input);
    let cols = Cols::read(&all, WATERMARK_COLUMN)?;
    // Group rows by (partition, uuid), each in position order.
    let mut order: Vec<usize> = (0..all.num_rows()).filter(|&i| cols.is_chunk(i)).collect();
    order.sort_by(|&a, &b| {
        (
            cols.partition(a),
            cols.uuid.value(a),
            cols.ledger.value(a),
            cols.entry.value(a),
        )
            .cmp(&(
                cols.partition(b),
                cols.uuid.value(b),
                cols.ledger.value(b),
                cols.entry.value(b),
            ))
    });
    let projected = all.project(&keep).map_err(arrow_err)?;
    let sorted = take_record_batch(
        &projected,
        &UInt32Array::from_iter_values(order.iter().map(|&i| i as u32)),
    )
    .map_err(arrow_err)?;
    let sorted_time = take_record_batch(
        &all,
        &UInt32Array::from_iter_values(order.iter().map(|&i| i as u32)),
    )
    .map_err(arrow_err)?;
    let scols = Cols::read(&sorted_time, WATERMARK_COLUMN)?;
    let opts = ReassemblyOptions {
        max_pending: None,
        ..opts
    };
    let mut out = Vec::new();
    let mut start = 0;
    while start < sorted.num_rows() {
        let key = (scols.partition(start), scols.uuid.value(start));
        let mut end = start + 1;
        while end < sorted.num_rows() && (scols.partition(end), scols.uuid.value(end)) == key {
            end += 1;
        }
        let group = sorted.slice(start, end - start);
        let group_cols = Cols::read(&sorted_time.slice(start, end - start), WATERMARK_COLUMN)?;
        let mut machine = Machine::new(opts, Mode::Finish)?;
        let mut sink = Sink::default();
        machine.push(&group, &group_cols, &mut sink)?;
        machine.finish(final_watermarks, &mut sink);
        out.extend(outcome_batches(&input, &output, sink.outcomes)?);
        start = end;
    }
    Ok(out)
}
