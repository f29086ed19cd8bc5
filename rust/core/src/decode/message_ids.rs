//! Message ids for the rows of a decoded or reassembled table.

use arrow_array::builder::{BinaryBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch, StringArray};
use arrow_schema::DataType;

use crate::error::{EntryError, Result};
use crate::format::message_id::{AnyMessageId, ChunkMessageId, MessageId};

/// The id of every row of a decoded or reassembled table, as serialized bytes
/// and as Java prints it.
///
/// - a reassembled chunked message (`first_chunk_ledger_id` set): a
///   [`ChunkMessageId`] from its first to its last chunk;
/// - a batch member (`batch_index` ≥ 0): a batch id with `batch_size` =
///   `num_messages`, as Java's consumer builds it;
/// - any other row (single messages, unassembled chunks, error rows): the
///   entry's position;
/// - rows with a `status` other than `complete` (incomplete, expired, evicted
///   or duplicate chunks): null, since they are not messages.
pub fn message_id_arrays(batch: &RecordBatch) -> Result<(BinaryArray, StringArray)> {
    let col = |name: &str, to: &DataType| -> Result<Option<ArrayRef>> {
        match batch.column_by_name(name) {
            None => Ok(None),
            Some(c) if c.data_type() == to => Ok(Some(c.clone())),
            Some(c) => arrow_cast::cast(c, to)
                .map(Some)
                .map_err(|e| EntryError::Schema(format!("column `{name}`: {e}"))),
        }
    };
    let need = |name: &str, to: &DataType| -> Result<ArrayRef> {
        col(name, to)?.ok_or_else(|| EntryError::Schema(format!("input has no `{name}` column")))
    };
    let ledger = need("ledger_id", &DataType::Int64)?;
    let entry = need("entry_id", &DataType::Int64)?;
    let ledger = ledger.as_primitive::<Int64Type>();
    let entry = entry.as_primitive::<Int64Type>();
    let partition = col("partition", &DataType::Int32)?;
    let batch_index = col("batch_index", &DataType::Int32)?;
    let num_messages = col("num_messages", &DataType::Int32)?;
    let first_ledger = col("first_chunk_ledger_id", &DataType::Int64)?;
    let first_entry = col("first_chunk_entry_id", &DataType::Int64)?;
    let status = col("status", &DataType::Utf8)?;
    let i32_at = |a: &Option<ArrayRef>, i: usize| {
        a.as_ref()
            .map(|a| a.as_primitive::<Int32Type>())
            .filter(|a| a.is_valid(i))
            .map(|a| a.value(i))
    };
    let i64_at = |a: &Option<ArrayRef>, i: usize| {
        a.as_ref()
            .map(|a| a.as_primitive::<Int64Type>())
            .filter(|a| a.is_valid(i))
            .map(|a| a.value(i))
    };
    let mut bytes = BinaryBuilder::with_capacity(batch.num_rows(), batch.num_rows() * 12);
    let mut text = StringBuilder::with_capacity(batch.num_rows(), batch.num_rows() * 16);
    for i in 0..batch.num_rows() {
        let not_a_message = status
            .as_ref()
            .map(|s| s.as_string::<i32>())
            .is_some_and(|s| s.is_valid(i) && s.value(i) != "complete");
        if not_a_message || ledger.is_null(i) || entry.is_null(i) {
            bytes.append_null();
            text.append_null();
            continue;
        }
        let p = i32_at(&partition, i).unwrap_or(-1);
        let last = MessageId::new(ledger.value(i), entry.value(i), p);
        let id: AnyMessageId = match (i64_at(&first_ledger, i), i64_at(&first_entry, i)) {
            (Some(fl), Some(fe)) => ChunkMessageId::new(MessageId::new(fl, fe, p), last).into(),
            _ => match i32_at(&batch_index, i).filter(|&b| b >= 0) {
                Some(b) => MessageId::batch(
                    last.ledger_id,
                    last.entry_id,
                    p,
                    b,
                    i32_at(&num_messages, i),
                )
                .into(),
                None => last.into(),
            },
        };
        bytes.append_value(id.serialize());
        text.append_value(id.to_string());
    }
    Ok((bytes.finish(), text.finish()))
}
