//! Arrow types and builders shared by the output schemas.

use std::sync::Arc;

use arrow_array::builder::{MapBuilder, MapFieldNames, StringBuilder, TimestampMillisecondBuilder};
use arrow_schema::{DataType, Field, Fields, TimeUnit};

/// Pulsar times are milliseconds since the epoch, in UTC.
pub fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

pub fn timestamp_builder() -> TimestampMillisecondBuilder {
    TimestampMillisecondBuilder::new().with_timezone("UTC")
}

/// `map<string, string>` with pyarrow's field names, for message properties.
pub fn properties_type() -> DataType {
    let entries = Field::new(
        "entries",
        DataType::Struct(Fields::from(vec![
            Field::new("key", DataType::Utf8, false),
            Field::new("value", DataType::Utf8, true),
        ])),
        false,
    );
    DataType::Map(Arc::new(entries), false)
}

pub fn properties_builder() -> MapBuilder<StringBuilder, StringBuilder> {
    properties_builder_with(0)
}

/// [`properties_builder`] with room for `rows` maps.
pub fn properties_builder_with(rows: usize) -> MapBuilder<StringBuilder, StringBuilder> {
    let names = MapFieldNames {
        entry: "entries".into(),
        key: "key".into(),
        value: "value".into(),
    };
    MapBuilder::with_capacity(
        Some(names),
        StringBuilder::new(),
        StringBuilder::new(),
        rows,
    )
}
