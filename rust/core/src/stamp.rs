//! The broker's entry-metadata interceptors over a whole entry table: every
//! entry's `0e 02` prefix added or replaced in table order (the Arrow side of
//! [`crate::format::broker::Stamper`]).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use arrow_array::{Array, ArrayRef, BinaryArray, Int64Array, LargeBinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::decode::binary::binary_values;
use crate::error::{EntryError, ErrorKind};
use crate::format::broker::Stamper;

/// Broker timestamps: the clock at each entry, one value, or one per entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Timestamps {
    Clock,
    Fixed(u64),
    PerEntry(Vec<u64>),
}

/// A time in milliseconds that must not be negative; `name` names the option
/// in the error.
pub fn non_negative_ms(name: &str, value: i64) -> Result<u64, EntryError> {
    u64::try_from(value)
        .map_err(|_| EntryError::Options(format!("{name} must be >= 0, got {value}")))
}

impl Timestamps {
    /// One stamping time for every entry (ms, not negative).
    pub fn fixed(ms: i64) -> Result<Self, EntryError> {
        Ok(Timestamps::Fixed(non_negative_ms("timestamps", ms)?))
    }

    /// One stamping time per entry, in table order (ms, none negative).
    pub fn per_entry(ms: &[i64]) -> Result<Self, EntryError> {
        let each = ms.iter().map(|&t| non_negative_ms("timestamps", t));
        Ok(Timestamps::PerEntry(each.collect::<Result<_, _>>()?))
    }
}

/// A stamping failure; a row's error names the row and its entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StampError {
    #[error(transparent)]
    Entry(#[from] EntryError),
    #[error("{at}: {source}")]
    Row { at: String, source: EntryError },
    #[error("{at}: entry data is null")]
    NullData { at: String },
}

impl StampError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            StampError::Entry(e) | StampError::Row { source: e, .. } => e.kind(),
            StampError::NullData { .. } => ErrorKind::InputSchema,
        }
    }
}

/// Now, in ms since the epoch (0 before it).
pub fn clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The output schema: the input's, `data` becoming `binary` (or staying
/// `large_binary`); and the index of `data`.
pub fn stamp_schema(input: &Schema) -> Result<(SchemaRef, usize), EntryError> {
    let at = input
        .index_of("data")
        .map_err(|_| EntryError::Schema("input has no `data` column".into()))?;
    let data_type = match input.field(at).data_type() {
        DataType::LargeBinary => DataType::LargeBinary,
        DataType::Binary | DataType::BinaryView => DataType::Binary,
        other => {
            return Err(EntryError::Schema(format!(
                "`data` must be binary or large_binary, not {other}"
            )))
        }
    };
    let mut fields: Vec<Field> = input.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields[at] = Field::new("data", data_type, input.field(at).is_nullable());
    let schema = Schema::new_with_metadata(fields, input.metadata().clone());
    Ok((Arc::new(schema), at))
}

/// Stamps every entry of `batches` (of schema `input`) in table order.
pub fn stamp_batches(
    input: &Schema,
    batches: &[RecordBatch],
    stamper: &mut Stamper,
    times: &Timestamps,
) -> Result<(SchemaRef, Vec<RecordBatch>), StampError> {
    let (schema, at) = stamp_schema(input)?;
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    if let Timestamps::PerEntry(v) = times {
        if v.len() != rows {
            let text = format!("{rows} entries but {} timestamps", v.len());
            return Err(EntryError::Options(text).into());
        }
    }
    let mut first_row = 0;
    let mut out = Vec::with_capacity(batches.len());
    for b in batches {
        let id_col = |name: &str| {
            b.column_by_name(name)
                .and_then(|c| arrow_cast::cast(c, &DataType::Int64).ok())
        };
        let (ledger, entry) = (id_col("ledger_id"), id_col("entry_id"));
        let at_row = |i: usize| {
            let get = |c: &Option<ArrayRef>| {
                c.as_ref()
                    .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
                    .filter(|a| !a.is_null(i))
                    .map_or(-1, |a| a.value(i))
            };
            let (l, e) = (get(&ledger), get(&entry));
            format!("row {} (ledger {l}, entry {e})", first_row + i)
        };
        let data = b.column(at);
        let mut stamped = Vec::with_capacity(b.num_rows());
        for (i, value) in binary_values(data.as_ref(), "`data`")?
            .into_iter()
            .enumerate()
        {
            let entry = value.ok_or_else(|| StampError::NullData { at: at_row(i) })?;
            let t = match times {
                Timestamps::Clock => clock_ms(),
                Timestamps::Fixed(t) => *t,
                Timestamps::PerEntry(v) => v[first_row + i],
            };
            let bytes = stamper.stamp(entry, t).map_err(|source| StampError::Row {
                at: at_row(i),
                source,
            })?;
            stamped.push(bytes);
        }
        let column: ArrayRef = if data.data_type() == &DataType::LargeBinary {
            Arc::new(LargeBinaryArray::from_iter_values(stamped))
        } else {
            Arc::new(BinaryArray::from_iter_values(stamped))
        };
        let mut columns = b.columns().to_vec();
        columns[at] = column;
        out.push(
            RecordBatch::try_new(schema.clone(), columns)
                .map_err(|e| EntryError::Schema(e.to_string()))?,
        );
        first_row += b.num_rows();
    }
    Ok((schema, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_not_negative() {
        assert_eq!(non_negative_ms("t", 5), Ok(5));
        assert_eq!(Timestamps::fixed(7), Ok(Timestamps::Fixed(7)));
        assert_eq!(
            Timestamps::per_entry(&[1, 2]),
            Ok(Timestamps::PerEntry(vec![1, 2]))
        );
        for bad in [Timestamps::fixed(-1), Timestamps::per_entry(&[1, -2])] {
            let e = bad.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Options);
            assert!(e.to_string().contains("timestamps must be >= 0"), "{e}");
        }
    }
}
