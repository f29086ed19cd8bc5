//! A decoded table with its message ids appended: `message_id` (serialized,
//! binary) and `message_id_str` (Java's text form), from
//! [`crate::decode::message_ids::message_id_arrays`].

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::decode::message_ids::message_id_arrays;
use crate::error::{EntryError, Result};

/// The output schema: `input` plus the two id columns, which it must lack.
pub fn with_message_ids_schema(input: &Schema) -> Result<SchemaRef> {
    let mut fields: Vec<Field> = input.fields().iter().map(|f| f.as_ref().clone()).collect();
    for name in ["message_id", "message_id_str"] {
        if input.column_with_name(name).is_some() {
            return Err(EntryError::Schema(format!(
                "the table already has a `{name}` column"
            )));
        }
    }
    fields.push(Field::new("message_id", DataType::Binary, true));
    fields.push(Field::new("message_id_str", DataType::Utf8, true));
    Ok(Arc::new(Schema::new(fields)))
}

/// Every batch with its message ids appended.
pub fn with_message_ids(
    input: &Schema,
    batches: &[RecordBatch],
) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let schema = with_message_ids_schema(input)?;
    let out = batches
        .iter()
        .map(|b| {
            let (bytes, text) = message_id_arrays(b)?;
            let mut cols = b.columns().to_vec();
            cols.push(Arc::new(bytes));
            cols.push(Arc::new(text));
            RecordBatch::try_new(schema.clone(), cols)
                .map_err(|e| EntryError::Schema(e.to_string()))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((schema, out))
}
