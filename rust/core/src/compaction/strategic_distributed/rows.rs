//! The rows the stages exchange ([`row_schema`]): their kinds, a builder and
//! typed access to a batch of them as an engine hands it back.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int32Builder, Int64Builder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::decode::entries::int_column;
use crate::error::{EntryError, Result};

use crate::compaction::compactor::EntryKey;
use crate::compaction::Position;

/// A chunk 0 that restarts its message: earlier partitions' assembly of it is abandoned.
pub const KIND_RESTART: i32 = 0;
/// A chunk the partition could not finish (its entry bytes in `value`).
pub const KIND_CHUNK: i32 = 1;
/// A complete keyed message (`value` null for a tombstone).
pub const KIND_MESSAGE: i32 = 2;
/// A plan for one entry: a slot to keep (`batch_index`, merged `value`), or
/// the whole entry with a `note`.
pub const KIND_PLAN: i32 = 3;

/// Schema of the rows exchanged between the stages. `chunks` packs the
/// positions of a chunked message's chunks as big-endian `(ledger_id,
/// entry_id)` pairs.
pub fn row_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("kind", DataType::Int32, false),
        Field::new("partition", DataType::Int32, false),
        Field::new("key", DataType::Utf8, true),
        Field::new("uuid", DataType::Utf8, true),
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("entry_id", DataType::Int64, false),
        Field::new("batch_index", DataType::Int32, false),
        Field::new("value", DataType::Binary, true),
        Field::new("chunks", DataType::Binary, true),
        Field::new("note", DataType::Utf8, true),
    ]))
}

#[derive(Default)]
pub(super) struct RowBuilder {
    pub(super) kind: Int32Builder,
    pub(super) partition: Int32Builder,
    pub(super) key: StringBuilder,
    pub(super) uuid: StringBuilder,
    pub(super) ledger: Int64Builder,
    pub(super) entry: Int64Builder,
    pub(super) index: Int32Builder,
    pub(super) value: BinaryBuilder,
    pub(super) chunks: BinaryBuilder,
    pub(super) note: StringBuilder,
}

impl RowBuilder {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push(
        &mut self,
        kind: i32,
        partition: i32,
        key: Option<&str>,
        uuid: Option<&str>,
        position: Position,
        value: Option<&[u8]>,
        chunks: Option<&[Position]>,
        note: Option<&str>,
    ) {
        self.kind.append_value(kind);
        self.partition.append_value(partition);
        self.key.append_option(key);
        self.uuid.append_option(uuid);
        self.ledger.append_value(position.ledger_id);
        self.entry.append_value(position.entry_id);
        self.index.append_value(position.batch_index);
        self.value.append_option(value);
        self.chunks.append_option(chunks.map(pack_positions));
        self.note.append_option(note);
    }

    pub(super) fn plan(
        &mut self,
        entry: EntryKey,
        slot: i32,
        value: Option<&[u8]>,
        note: Option<&str>,
    ) {
        let position = Position::new(entry.1, entry.2, slot);
        self.push(KIND_PLAN, entry.0, None, None, position, value, None, note);
    }

    pub(super) fn finish(&mut self) -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.kind.finish()),
            Arc::new(self.partition.finish()),
            Arc::new(self.key.finish()),
            Arc::new(self.uuid.finish()),
            Arc::new(self.ledger.finish()),
            Arc::new(self.entry.finish()),
            Arc::new(self.index.finish()),
            Arc::new(self.value.finish()),
            Arc::new(self.chunks.finish()),
            Arc::new(self.note.finish()),
        ];
        RecordBatch::try_new(row_schema(), columns).expect("columns match the row schema")
    }
}

pub(super) fn pack_positions(positions: &[Position]) -> Vec<u8> {
    let mut out = Vec::with_capacity(positions.len() * 16);
    for p in positions {
        out.extend_from_slice(&p.ledger_id.to_be_bytes());
        out.extend_from_slice(&p.entry_id.to_be_bytes());
    }
    out
}

pub(super) fn unpack_positions(raw: &[u8]) -> Result<Vec<Position>> {
    if !raw.len().is_multiple_of(16) {
        return Err(EntryError::Data(format!(
            "`chunks` holds {} bytes, not a multiple of 16",
            raw.len()
        )));
    }
    Ok(raw
        .chunks_exact(16)
        .map(|c| {
            let ledger = i64::from_be_bytes(c[..8].try_into().expect("8 bytes"));
            let entry = i64::from_be_bytes(c[8..].try_into().expect("8 bytes"));
            Position::new(ledger, entry, -1)
        })
        .collect())
}

impl RowBuilder {
    /// Moves `other`'s rows after this builder's.
    pub(super) fn append(&mut self, other: &mut RowBuilder) {
        let batch = other.finish();
        let rows = RowColumns::new(&batch).expect("own schema");
        for i in 0..batch.num_rows() {
            rows.copy_to(i, self);
        }
    }
}

/// Typed access to a batch of [`row_schema`] rows (as an engine hands them
/// back: binary or large binary, string or large string).
pub(super) struct RowColumns {
    pub(super) kind: ArrayRef,
    pub(super) partition: ArrayRef,
    pub(super) key: ArrayRef,
    pub(super) uuid: ArrayRef,
    pub(super) ledger: ArrayRef,
    pub(super) entry: ArrayRef,
    pub(super) index: ArrayRef,
    pub(super) value: ArrayRef,
    pub(super) chunks: ArrayRef,
    pub(super) note: ArrayRef,
}

pub(super) fn column(batch: &RecordBatch, name: &str, to: &DataType) -> Result<ArrayRef> {
    let col = batch
        .column_by_name(name)
        .ok_or_else(|| EntryError::Schema(format!("input has no `{name}` column")))?;
    if col.data_type() == to {
        return Ok(col.clone());
    }
    arrow_cast::cast(col, to).map_err(|e| EntryError::Schema(format!("`{name}`: {e}")))
}

impl RowColumns {
    pub(super) fn new(batch: &RecordBatch) -> Result<Self> {
        Ok(RowColumns {
            kind: int_column(batch, "kind", &DataType::Int32)?,
            partition: int_column(batch, "partition", &DataType::Int32)?,
            key: column(batch, "key", &DataType::Utf8)?,
            uuid: column(batch, "uuid", &DataType::Utf8)?,
            ledger: int_column(batch, "ledger_id", &DataType::Int64)?,
            entry: int_column(batch, "entry_id", &DataType::Int64)?,
            index: int_column(batch, "batch_index", &DataType::Int32)?,
            value: column(batch, "value", &DataType::Binary)?,
            chunks: column(batch, "chunks", &DataType::Binary)?,
            note: column(batch, "note", &DataType::Utf8)?,
        })
    }

    pub(super) fn int32(a: &ArrayRef, i: usize) -> i32 {
        a.as_primitive::<Int32Type>().value(i)
    }

    pub(super) fn kind(&self, i: usize) -> i32 {
        Self::int32(&self.kind, i)
    }
    pub(super) fn partition(&self, i: usize) -> i32 {
        Self::int32(&self.partition, i)
    }
    pub(super) fn position(&self, i: usize) -> Position {
        Position::new(
            self.ledger.as_primitive::<Int64Type>().value(i),
            self.entry.as_primitive::<Int64Type>().value(i),
            Self::int32(&self.index, i),
        )
    }
    pub(super) fn string(a: &ArrayRef, i: usize) -> Option<&str> {
        let a = a.as_string::<i32>();
        (!a.is_null(i)).then(|| a.value(i))
    }
    pub(super) fn binary(a: &ArrayRef, i: usize) -> Option<&[u8]> {
        let a = a.as_binary::<i32>();
        (!a.is_null(i)).then(|| a.value(i))
    }
    pub(super) fn key(&self, i: usize) -> Option<&str> {
        Self::string(&self.key, i)
    }
    pub(super) fn uuid(&self, i: usize) -> Option<&str> {
        Self::string(&self.uuid, i)
    }
    pub(super) fn value(&self, i: usize) -> Option<&[u8]> {
        Self::binary(&self.value, i)
    }
    pub(super) fn chunks(&self, i: usize) -> Option<&[u8]> {
        Self::binary(&self.chunks, i)
    }
    pub(super) fn note(&self, i: usize) -> Option<&str> {
        Self::string(&self.note, i)
    }

    pub(super) fn copy_to(&self, i: usize, out: &mut RowBuilder) {
        let p = self.position(i);
        out.kind.append_value(self.kind(i));
        out.partition.append_value(self.partition(i));
        out.key.append_option(self.key(i));
        out.uuid.append_option(self.uuid(i));
        out.ledger.append_value(p.ledger_id);
        out.entry.append_value(p.entry_id);
        out.index.append_value(p.batch_index);
        out.value.append_option(self.value(i));
        out.chunks.append_option(self.chunks(i));
        out.note.append_option(self.note(i));
    }
}
