//! Entry tables ↔ compacted-ledger record tables: the Arrow side of
//! [`super::ledger_record`], one row per entry.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int32Builder, Int64Builder, StringBuilder};
use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::ledger_record::{from_record, message_id, to_record};
use crate::decode::entries::EntryRows;
use crate::error::{EntryError, Result};

/// `(ledger_id, entry_id, record)`: what [`to_ledger_records`] gives.
pub fn records_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("entry_id", DataType::Int64, false),
        Field::new("record", DataType::Binary, true),
    ]))
}

/// `(ledger_id, entry_id, partition, data, error)`: what
/// [`from_ledger_records`] gives.
pub fn parsed_records_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ledger_id", DataType::Int64, true),
        Field::new("entry_id", DataType::Int64, true),
        Field::new("partition", DataType::Int32, false),
        Field::new("data", DataType::Binary, true),
        Field::new("error", DataType::Utf8, true),
    ]))
}

/// Entries → compacted-ledger records `[u32 idLen][MessageIdData][u32 len][entry]`.
/// The id always holds the partition, -1 without a `partition` column, as the
/// broker's compactor writes it for a non-partitioned topic. A null `data`
/// gives a null record; a null id is an input-schema error.
pub fn to_ledger_records(batch: &RecordBatch) -> Result<RecordBatch> {
    let rows = EntryRows::new(batch)?;
    let (mut ledger, mut entry, mut record) = (
        Int64Builder::new(),
        Int64Builder::new(),
        BinaryBuilder::new(),
    );
    for i in 0..rows.len() {
        if rows.id_is_null(i) {
            return Err(EntryError::Schema(format!(
                "entry row {i} has a null ledger_id or entry_id"
            )));
        }
        let id = rows.id(i);
        ledger.append_value(id.ledger_id);
        entry.append_value(id.entry_id);
        match rows.data(i) {
            Some(data) => record.append_value(to_record(
                &message_id(id.ledger_id, id.entry_id, Some(id.partition)),
                data,
            )?),
            None => record.append_null(),
        }
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(ledger.finish()),
        Arc::new(entry.finish()),
        Arc::new(record.finish()),
    ];
    Ok(RecordBatch::try_new(records_schema(), columns).expect("records schema"))
}

/// Compacted-ledger records (a binary `record` column) → entries with their
/// ids. A bad or null record gives a row with `error` set (and its bytes in
/// `data`); the other rows are unaffected.
pub fn from_ledger_records(batch: &RecordBatch) -> Result<RecordBatch> {
    let col = batch
        .column_by_name("record")
        .ok_or_else(|| EntryError::Schema("input has no `record` column".into()))?;
    let col = match col.data_type() {
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
            arrow_cast::cast(col, &DataType::Binary)
                .map_err(|e| EntryError::Schema(format!("`record`: {e}")))?
        }
        other => {
            return Err(EntryError::Schema(format!(
                "`record` must be binary, not {other}"
            )))
        }
    };
    let col = col.as_any().downcast_ref::<BinaryArray>().expect("binary");
    let get = |i: usize| (!col.is_null(i)).then(|| col.value(i));
    let mut ledger = Int64Builder::new();
    let mut entry = Int64Builder::new();
    let mut partition = Int32Builder::new();
    let mut data = BinaryBuilder::new();
    let mut error = StringBuilder::new();
    for i in 0..batch.num_rows() {
        let parsed = match get(i) {
            None => Err("record is null".to_string()),
            Some(r) => from_record(r).map_err(|e| e.to_string()),
        };
        match parsed {
            Ok((id, bytes)) => {
                ledger.append_value(id.ledger_id as i64);
                entry.append_value(id.entry_id as i64);
                partition.append_value(id.partition.unwrap_or(-1));
                data.append_value(bytes);
                error.append_null();
            }
            Err(e) => {
                ledger.append_null();
                entry.append_null();
                partition.append_value(-1);
                data.append_option(get(i));
                error.append_value(e);
            }
        }
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(ledger.finish()),
        Arc::new(entry.finish()),
        Arc::new(partition.finish()),
        Arc::new(data.finish()),
        Arc::new(error.finish()),
    ];
    Ok(RecordBatch::try_new(parsed_records_schema(), columns).expect("parsed records schema"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use arrow_array::{Int32Array, Int64Array, StringArray};

    fn entries(partition: bool, data: Vec<Option<&[u8]>>) -> RecordBatch {
        let n = data.len() as i64;
        let mut fields = vec![
            Field::new("ledger_id", DataType::Int64, true),
            Field::new("entry_id", DataType::Int64, true),
            Field::new("data", DataType::Binary, true),
        ];
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![7; n as usize])),
            Arc::new(Int64Array::from((0..n).collect::<Vec<_>>())),
            Arc::new(BinaryArray::from(data)),
        ];
        if partition {
            fields.push(Field::new("partition", DataType::Int32, false));
            cols.push(Arc::new(Int32Array::from(vec![3; n as usize])));
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
    }

    #[test]
    fn records_round_trip_with_partition_and_null_data() {
        let input = entries(true, vec![Some(b"abc"), None, Some(b"")]);
        let records = to_ledger_records(&input).unwrap();
        assert_eq!(records.num_rows(), 3);
        assert!(records.column(2).is_null(1));
        let rec = records
            .column(2)
            .as_any()
            .downcast_ref::<BinaryArray>()
            .unwrap();
        // [u32 idLen][MessageIdData][u32 3]["abc"]
        let first = rec.value(0);
        let id_len = u32::from_be_bytes(first[..4].try_into().unwrap()) as usize;
        assert_eq!(&first[4 + id_len..], b"\0\0\0\x03abc");

        let back = from_ledger_records(&records).unwrap();
        let ledger = back
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        let entry = back
            .column(1)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        let part = back
            .column(2)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        let data = back
            .column(3)
            .as_any()
            .downcast_ref::<BinaryArray>()
            .unwrap();
        let error = back
            .column(4)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!((ledger.value(0), entry.value(0), part.value(0)), (7, 0, 3));
        assert_eq!(data.value(0), b"abc");
        assert!(error.is_null(0));
        assert_eq!(error.value(1), "record is null");
        assert!(ledger.is_null(1) && data.is_null(1));
        assert_eq!((entry.value(2), data.value(2)), (2, &b""[..]));
    }

    #[test]
    fn bad_records_are_row_errors_and_bad_input_is_a_schema_error() {
        let no_partition = to_ledger_records(&entries(false, vec![Some(b"x")])).unwrap();
        // The broker writes `partition: -1` (field 3, a 10-byte negative varint) for a
        // non-partitioned topic: `[u32 idLen] 08 ledger 10 entry 18 ff..01`.
        let rec = no_partition
            .column(2)
            .as_any()
            .downcast_ref::<BinaryArray>()
            .unwrap()
            .value(0);
        let id_len = u32::from_be_bytes(rec[..4].try_into().unwrap()) as usize;
        assert!(rec[4..4 + id_len]
            .ends_with(&[0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]));
        let back = from_ledger_records(&no_partition).unwrap();
        let part = back
            .column(2)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        assert_eq!(part.value(0), -1);

        let schema = Arc::new(Schema::new(vec![Field::new(
            "record",
            DataType::Binary,
            true,
        )]));
        let junk: ArrayRef = Arc::new(BinaryArray::from(vec![&b"\0\0\0\x09ab"[..]]));
        let bad = RecordBatch::try_new(schema, vec![junk]).unwrap();
        let out = from_ledger_records(&bad).unwrap();
        let error = out
            .column(4)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert!(
            error.value(0).contains("truncated MessageIdData"),
            "{}",
            error.value(0)
        );
        let data = out
            .column(3)
            .as_any()
            .downcast_ref::<BinaryArray>()
            .unwrap();
        assert_eq!(data.value(0), b"\0\0\0\x09ab");

        let e = from_ledger_records(&entries(false, vec![Some(b"x")])).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InputSchema);
        let ints = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(
                "record",
                DataType::Int64,
                true,
            )])),
            vec![Arc::new(Int64Array::from(vec![1]))],
        )
        .unwrap();
        assert!(from_ledger_records(&ints)
            .unwrap_err()
            .to_string()
            .contains("must be binary"));
    }

    #[test]
    fn a_null_id_is_an_input_schema_error() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("ledger_id", DataType::Int64, true),
            Field::new("entry_id", DataType::Int64, true),
            Field::new("data", DataType::Binary, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![None, Some(1)])),
                Arc::new(Int64Array::from(vec![Some(0), Some(1)])),
                Arc::new(BinaryArray::from(vec![Some(&b"a"[..]), Some(b"b")])),
            ],
        )
        .unwrap();
        let e = to_ledger_records(&batch).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InputSchema);
        assert!(e.to_string().contains("entry row 0 has a null"), "{e}");
    }
}
