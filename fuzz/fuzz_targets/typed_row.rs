//! What the `typed` and `typed_protobuf` targets check of one message: its
//! payload as a row naming schema version `named`, through `typed_batch`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch};
use pulsar_entries_core::schema::{typed_batch, TopicSchema, TypedOptions};

/// Types one row and checks that it is kept (one output row, its `value` the
/// payload) and is either typed or an error row without typed values.
/// Returns whether it is an error row.
pub fn check(payload: &[u8], named: i64, schema: &TopicSchema) -> bool {
    let value: BinaryArray = vec![Some(payload)].into_iter().collect();
    let version_bytes = named.to_be_bytes();
    let versions: BinaryArray = vec![Some(&version_bytes[..])].into_iter().collect();
    let batch = RecordBatch::try_from_iter([
        ("value", Arc::new(value) as ArrayRef),
        ("schema_version", Arc::new(versions) as ArrayRef),
    ])
    .expect("a valid batch");
    let out = typed_batch(&batch, schema, &TypedOptions::default()).expect("the schemas are valid");
    assert_eq!(out.num_rows(), 1);
    assert_eq!(
        out.column_by_name("value")
            .expect("value kept")
            .as_binary::<i32>()
            .value(0),
        payload
    );
    let error = out.column_by_name("error").expect("an error column");
    if error.is_valid(0) {
        // An error row has no typed values.
        for (f, c) in out.schema().fields().iter().zip(out.columns()) {
            if !matches!(f.name().as_str(), "value" | "schema_version" | "error") {
                assert!(c.is_null(0), "{} set on an error row", f.name());
            }
        }
    }
    error.is_valid(0)
}
