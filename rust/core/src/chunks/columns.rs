//! Column access: the input columns reassembly reads, cast once per batch.

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray,
};
use arrow_schema::DataType;

use super::options::ROLE_COLUMN;
use crate::error::{EntryError, Result};

pub(super) enum Values<'a> {
    Binary(&'a BinaryArray),
    Large(&'a arrow_array::LargeBinaryArray),
    View(&'a arrow_array::BinaryViewArray),
}

impl Values<'_> {
    pub(super) fn get(&self, i: usize) -> &[u8] {
        // A null value (null_value flag) on a chunk still stands for its bytes: none.
        match self {
            Values::Binary(a) if a.is_valid(i) => a.value(i),
            Values::Large(a) if a.is_valid(i) => a.value(i),
            Values::View(a) if a.is_valid(i) => a.value(i),
            _ => &[],
        }
    }
}

pub(super) fn cast_to(batch: &RecordBatch, name: &str, to: &DataType) -> Result<Option<ArrayRef>> {
    let Some(col) = batch.column_by_name(name) else {
        return Ok(None);
    };
    if col.data_type() == to {
        return Ok(Some(col.clone()));
    }
    arrow_cast::cast(col, to)
        .map(Some)
        .map_err(|e| EntryError::Schema(format!("column `{name}`: {e}")))
}

pub(super) fn need(col: Option<ArrayRef>, name: &str) -> Result<ArrayRef> {
    col.ok_or_else(|| EntryError::Schema(format!("input has no `{name}` column")))
}

/// The input columns reassembly reads, in uniform types.
pub(super) struct Cols {
    pub(super) ledger: Int64Array,
    pub(super) entry: Int64Array,
    pub(super) partition: Option<Int32Array>,
    pub(super) publish: Int64Array,
    /// Stream time source: `publish_time`, or `_watermark` for leftovers.
    pub(super) time: Int64Array,
    pub(super) uuid: StringArray,
    pub(super) chunk_id: Int32Array,
    pub(super) num_chunks: Int32Array,
    pub(super) total: Int32Array,
    pub(super) value: ArrayRef,
    pub(super) compression: StringArray,
    pub(super) uncompressed: Int64Array,
    pub(super) error: ArrayRef,
    pub(super) encrypted: Option<BooleanArray>,
    pub(super) broker_ts: Option<Int64Array>,
    pub(super) broker_index: Option<Int64Array>,
    pub(super) role: Option<StringArray>,
}

impl Cols {
    pub(super) fn read(batch: &RecordBatch, time_column: &str) -> Result<Cols> {
        let i64s = |name: &str| -> Result<Option<Int64Array>> {
            Ok(cast_to(batch, name, &DataType::Int64)?
                .map(|a| a.as_primitive::<Int64Type>().clone()))
        };
        let i32s = |name: &str| -> Result<Option<Int32Array>> {
            Ok(cast_to(batch, name, &DataType::Int32)?
                .map(|a| a.as_primitive::<Int32Type>().clone()))
        };
        let strs = |name: &str| -> Result<Option<StringArray>> {
            Ok(cast_to(batch, name, &DataType::Utf8)?.map(|a| a.as_string::<i32>().clone()))
        };
        let value = need(batch.column_by_name("value").cloned(), "value")?;
        if !matches!(
            value.data_type(),
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView
        ) {
            return Err(EntryError::Schema(format!(
                "`value` must be binary, large_binary or binary_view, not {}",
                value.data_type()
            )));
        }
        let req_i64 = |name: &str| {
            i64s(name)?.ok_or_else(|| EntryError::Schema(format!("input has no `{name}` column")))
        };
        let req_i32 = |name: &str| {
            i32s(name)?.ok_or_else(|| EntryError::Schema(format!("input has no `{name}` column")))
        };
        let req_str = |name: &str| {
            strs(name)?.ok_or_else(|| EntryError::Schema(format!("input has no `{name}` column")))
        };
        Ok(Cols {
            ledger: req_i64("ledger_id")?,
            entry: req_i64("entry_id")?,
            partition: i32s("partition")?,
            publish: req_i64("publish_time")?,
            time: req_i64(time_column)?,
            uuid: req_str("uuid")?,
            chunk_id: req_i32("chunk_id")?,
            num_chunks: req_i32("num_chunks")?,
            total: req_i32("total_chunk_size")?,
            value,
            compression: req_str("compression")?,
            uncompressed: req_i64("uncompressed_size")?,
            error: need(batch.column_by_name("error").cloned(), "error")?,
            encrypted: cast_to(batch, "encrypted", &DataType::Boolean)?
                .map(|a| a.as_boolean().clone()),
            broker_ts: i64s("broker_timestamp")?,
            broker_index: i64s("broker_index")?,
            role: strs(ROLE_COLUMN)?,
        })
    }

    pub(super) fn values(&self) -> Values<'_> {
        match self.value.data_type() {
            DataType::Binary => Values::Binary(self.value.as_binary::<i32>()),
            DataType::LargeBinary => Values::Large(self.value.as_binary::<i64>()),
            _ => Values::View(self.value.as_binary_view()),
        }
    }

    pub(super) fn opt_i64(a: &Int64Array, i: usize) -> Option<i64> {
        a.is_valid(i).then(|| a.value(i))
    }

    /// A row is a chunk when decode marked it as one and it carries no error.
    pub(super) fn is_chunk(&self, i: usize) -> bool {
        self.error.is_null(i)
            && self.uuid.is_valid(i)
            && self.chunk_id.is_valid(i)
            && self.num_chunks.is_valid(i)
            && self.num_chunks.value(i) > 1
    }

    pub(super) fn partition(&self, i: usize) -> i32 {
        self.partition
            .as_ref()
            .filter(|p| p.is_valid(i))
            .map_or(-1, |p| p.value(i))
    }
}
