//! The entry-table input shape shared by every Arrow entry point:
//! `ledger_id` (int64), `entry_id` (int64), `data` (binary, large binary or
//! binary view) and an optional `partition` (int32).

use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, Int32Array, Int64Array, LargeBinaryArray,
    RecordBatch,
};
use arrow_schema::DataType;

use crate::error::{EntryError, Result};
use crate::processor::api::EntryId;

/// The entry table that storage readers (tiered storage, bookies, bookie
/// files) give: the decode input columns plus `error`, which names what
/// failed for a row whose `data` is null.
pub fn entry_table_schema() -> arrow_schema::SchemaRef {
    static SCHEMA: std::sync::OnceLock<arrow_schema::SchemaRef> = std::sync::OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            std::sync::Arc::new(arrow_schema::Schema::new(vec![
                arrow_schema::Field::new("ledger_id", DataType::Int64, false),
                arrow_schema::Field::new("entry_id", DataType::Int64, false),
                arrow_schema::Field::new("data", DataType::Binary, true),
                arrow_schema::Field::new("error", DataType::Utf8, true),
            ]))
        })
        .clone()
}

enum Data<'a> {
    Binary(&'a BinaryArray),
    Large(&'a LargeBinaryArray),
    View(&'a BinaryViewArray),
}

/// Row access to one input batch of entries, with ids cast to their types.
pub struct EntryRows<'a> {
    ledger: ArrayRef,
    entry: ArrayRef,
    partition: Option<ArrayRef>,
    data: Data<'a>,
    len: usize,
}

/// The one column named `name`: two columns of that name are an error (which
/// one is meant cannot be told).
pub(crate) fn unique_column<'a>(
    input: &'a RecordBatch,
    name: &str,
) -> Result<Option<&'a ArrayRef>> {
    let schema = input.schema();
    let mut found = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.name() == name)
        .map(|(i, _)| i);
    let first = found.next();
    if found.next().is_some() {
        return Err(EntryError::Schema(format!(
            "input has more than one `{name}` column"
        )));
    }
    Ok(first.map(|i| input.column(i)))
}

/// An integer column cast to `to` (int32 ids are accepted for int64); a
/// value out of `to`'s range is an error, never a silent null.
pub(crate) fn int_column(input: &RecordBatch, name: &str, to: &DataType) -> Result<ArrayRef> {
    let col = unique_column(input, name)?
        .ok_or_else(|| EntryError::Schema(format!("input has no `{name}` column")))?;
    if col.data_type() == to {
        return Ok(col.clone());
    }
    if !col.data_type().is_integer() {
        return Err(EntryError::Schema(format!(
            "`{name}` must be an integer column, not {}",
            col.data_type()
        )));
    }
    let strict = arrow_cast::CastOptions {
        safe: false,
        ..Default::default()
    };
    arrow_cast::cast_with_options(col, to, &strict)
        .map_err(|e| EntryError::Schema(format!("`{name}` has a value out of range for {to}: {e}")))
}

impl<'a> EntryRows<'a> {
    pub fn new(input: &'a RecordBatch) -> Result<Self> {
        let ledger = int_column(input, "ledger_id", &DataType::Int64)?;
        let entry = int_column(input, "entry_id", &DataType::Int64)?;
        let partition = match unique_column(input, "partition")? {
            Some(_) => Some(int_column(input, "partition", &DataType::Int32)?),
            None => None,
        };
        let data = unique_column(input, "data")?
            .ok_or_else(|| EntryError::Schema("input has no `data` column".into()))?;
        let data = match data.data_type() {
            DataType::Binary => Data::Binary(data.as_any().downcast_ref().unwrap()),
            DataType::LargeBinary => Data::Large(data.as_any().downcast_ref().unwrap()),
            DataType::BinaryView => Data::View(data.as_any().downcast_ref().unwrap()),
            other => {
                return Err(EntryError::Schema(format!(
                    "`data` must be binary or large_binary, not {other}"
                )))
            }
        };
        Ok(EntryRows {
            ledger,
            entry,
            partition,
            data,
            len: input.num_rows(),
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn has_partition(&self) -> bool {
        self.partition.is_some()
    }

    /// The ids of row `i`; null ids read as −1 (null partition as −1, "none").
    pub fn id(&self, i: usize) -> EntryId {
        let int64 = |a: &ArrayRef| {
            let a = a.as_any().downcast_ref::<Int64Array>().unwrap();
            if a.is_null(i) {
                -1
            } else {
                a.value(i)
            }
        };
        EntryId {
            ledger_id: int64(&self.ledger),
            entry_id: int64(&self.entry),
            partition: self.partition.as_ref().map_or(-1, |p| {
                let p = p.as_any().downcast_ref::<Int32Array>().unwrap();
                if p.is_null(i) {
                    -1
                } else {
                    p.value(i)
                }
            }),
        }
    }

    /// True when either id of row `i` is null.
    pub fn id_is_null(&self, i: usize) -> bool {
        self.ledger.is_null(i) || self.entry.is_null(i)
    }

    /// The entry bytes of row `i`, `None` for a null cell.
    pub fn data(&self, i: usize) -> Option<&'a [u8]> {
        match self.data {
            Data::Binary(a) => (!a.is_null(i)).then(|| a.value(i)),
            Data::Large(a) => (!a.is_null(i)).then(|| a.value(i)),
            Data::View(a) => (!a.is_null(i)).then(|| a.value(i)),
        }
    }
}
