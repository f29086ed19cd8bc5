//! Entry tables for the offload writers: the `(ledger_id, entry_id, data)`
//! rows a table holds, and the one-ledger check of a ledger-based object.

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};

use super::write::StreamingLedger;
use crate::decode::binary::binary_values;
use crate::error::{EntryError, Result};

/// `(ledger_id, entry_id, data)` rows of an entry table; `ledger_id` fills a
/// missing column (or a null in it).
pub fn entry_rows(
    batches: &[RecordBatch],
    ledger_id: Option<i64>,
) -> Result<Vec<(i64, i64, &[u8])>> {
    let schema = |text: &str| EntryError::Schema(text.to_string());
    let mut rows = Vec::new();
    for batch in batches {
        let col = |name: &str| batch.column_by_name(name);
        let entry = col("entry_id").ok_or_else(|| schema("entries need an `entry_id` column"))?;
        let entry = entry
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| schema("`entry_id` must be int64"))?;
        let ledger = match col("ledger_id") {
            Some(l) => Some(
                l.as_primitive_opt::<Int64Type>()
                    .ok_or_else(|| schema("`ledger_id` must be int64"))?,
            ),
            None => None,
        };
        let data = col("data").ok_or_else(|| schema("entries need a `data` column"))?;
        let data = binary_values(data.as_ref(), "`data`")?;
        for (i, bytes) in data.into_iter().enumerate() {
            let l = match (ledger, ledger_id) {
                (Some(l), _) if !l.is_null(i) => l.value(i),
                (_, Some(id)) => id,
                _ => return Err(schema("entries have no ledger_id (column or argument)")),
            };
            match bytes {
                Some(bytes) if !entry.is_null(i) => rows.push((l, entry.value(i), bytes)),
                _ => {
                    return Err(schema(&format!(
                        "row {i}: entry_id and data must not be null"
                    )))
                }
            }
        }
    }
    Ok(rows)
}

/// The one ledger a ledger-based object holds, starting at entry 0; its id
/// must be `ledger_id` when that is given.
pub fn single_ledger<'l, 'a>(
    ledgers: &'l [StreamingLedger<'a>],
    ledger_id: Option<i64>,
) -> Result<&'l StreamingLedger<'a>> {
    let ledger = match ledgers {
        [l] if ledger_id.is_none_or(|id| id == l.ledger_id) => l,
        [] => return Err(EntryError::Options("no entries to write".into())),
        [l] => {
            return Err(EntryError::Options(format!(
                "the entries' ledger_id column says {}, not ledger_id={}",
                l.ledger_id,
                ledger_id.unwrap_or_default()
            )))
        }
        _ => {
            return Err(EntryError::Options(format!(
                "a ledger-based object holds one ledger; the entries hold ledgers {:?}",
                ledgers.iter().map(|l| l.ledger_id).collect::<Vec<_>>()
            )))
        }
    };
    if ledger.first_entry_id != 0 {
        return Err(EntryError::Options(format!(
            "a ledger-based object starts at entry 0 (Pulsar offloads whole ledgers); these start at {}",
            ledger.first_entry_id
        )));
    }
    Ok(ledger)
}

/// A UUID's text form from its two halves (Java's `UUID.toString()`).
pub fn uuid_text(msb: i64, lsb: i64) -> String {
    let v = ((msb as u64 as u128) << 64) | lsb as u64 as u128;
    let h = format!("{v:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}
