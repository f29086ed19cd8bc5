//! The typed decode: a topic's schema versions → typed Arrow columns: Avro (versions resolved,
//! nested types, bounded lengths), JSON, and bad definitions.

use apache_avro::types::Value;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::Array;
use arrow_schema::{DataType, TimeUnit};
use pulsar_entries_core::schema::{typed_batch, SchemaType, TopicSchema, TypedOptions};

#[path = "support/typed.rs"]
mod support;
use support::*;

#[test]
fn avro_versions_resolve_to_the_latest_and_bad_datums_become_error_rows() {
    let schema = TopicSchema {
        versions: vec![
            version(0, SchemaType::Avro, V1.as_bytes(), &[]),
            version(1, SchemaType::Avro, V2.as_bytes(), &[]),
        ],
    };
    let some = |s: &str| Value::Union(1, Box::new(Value::String(s.into())));
    let garbage = vec![0xff_u8; 3];
    let msgs = [
        msg(
            &avro(V1, &[("id", Value::Long(1)), ("item", some("apple"))]),
            Some(0),
        ),
        msg(
            &avro(
                V2,
                &[
                    ("id", Value::Long(2)),
                    ("item", Value::Union(0, Box::new(Value::Null))),
                    ("qty", Value::Int(3)),
                ],
            ),
            Some(1),
        ),
        msg(&garbage, Some(1)),
        msg(
            &avro(V1, &[("id", Value::Long(4)), ("item", some("pear"))]),
            Some(9),
        ),
        msg(
            &avro(
                V2,
                &[
                    ("id", Value::Long(5)),
                    ("item", some("fig")),
                    ("qty", Value::Int(1)),
                ],
            ),
            None,
        ),
    ];
    let out = typed_batch(&table(&msgs), &schema, &TypedOptions::default()).unwrap();
    let out_schema = out.schema();
    let names: Vec<&str> = out_schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(
        names,
        [
            "entry_id",
            "key",
            "key_b64_encoded",
            "value",
            "schema_version",
            "error",
            "id",
            "item",
            "qty"
        ]
    );
    let id = out
        .column_by_name("id")
        .unwrap()
        .as_primitive::<Int64Type>();
    let item = out.column_by_name("item").unwrap().as_string::<i32>();
    let qty = out
        .column_by_name("qty")
        .unwrap()
        .as_primitive::<Int32Type>();
    assert_eq!(
        id.iter().collect::<Vec<_>>(),
        [Some(1), Some(2), None, None, Some(5)]
    );
    assert_eq!(
        item.iter().collect::<Vec<_>>(),
        [Some("apple"), None, None, None, Some("fig")]
    );
    // v1 has no qty: the reader schema's default.
    assert_eq!(
        qty.iter().collect::<Vec<_>>(),
        [Some(7), Some(3), None, None, Some(1)]
    );
    let e = errors(&out);
    assert_eq!(e[0], None);
    assert_eq!(e[1], None);
    assert!(e[2].as_deref().unwrap().contains("Avro"), "{:?}", e[2]);
    assert!(
        e[3].as_deref().unwrap().contains("schema version 9"),
        "{:?}",
        e[3]
    );
    assert_eq!(e[4], None);
    // The undecodable message keeps its bytes.
    assert_eq!(
        out.column_by_name("value")
            .unwrap()
            .as_binary::<i32>()
            .value(2),
        garbage.as_slice()
    );

    let without = typed_batch(
        &table(&msgs),
        &schema,
        &TypedOptions {
            value_column: false,
            by_version: true,
        },
    )
    .unwrap();
    assert!(without.column_by_name("value").is_none());
    assert_eq!(without.num_columns(), out.num_columns() - 1);
}

#[test]
fn a_huge_array_count_is_an_error_row_not_an_allocation() {
    let def = r#"{"type":"record","name":"R","fields":[{"name":"xs","type":{"type":"array","items":"long"}}]}"#;
    let schema = TopicSchema {
        versions: vec![version(0, SchemaType::Avro, def.as_bytes(), &[])],
    };
    // A block count of 2^40 items in 6 bytes.
    let mut bytes = Vec::new();
    let mut n: u64 = (1u64 << 40) << 1;
    while n >= 0x80 {
        bytes.push((n as u8) | 0x80);
        n >>= 7;
    }
    bytes.push(n as u8);
    let good = {
        let mut b = vec![4u8, 2, 4, 0]; // 2 items: 1, 2
        b.truncate(4);
        b
    };
    let out = typed_batch(
        &table(&[msg(&bytes, Some(0)), msg(&good, Some(0))]),
        &schema,
        &TypedOptions::default(),
    )
    .unwrap();
    let e = errors(&out);
    assert!(e[0].as_deref().unwrap().contains("items"), "{:?}", e[0]);
    assert_eq!(e[1], None);
    let xs = out.column_by_name("xs").unwrap().as_list::<i32>();
    assert!(xs.is_null(0));
    let row = xs.value(1);
    assert_eq!(row.as_primitive::<Int64Type>().values(), &[1, 2]);
}

#[test]
fn nested_types_become_nested_columns() {
    let def = r#"{"type":"record","name":"R","fields":[
      {"name":"tags","type":{"type":"array","items":"string"}},
      {"name":"attrs","type":{"type":"map","values":"int"}},
      {"name":"inner","type":{"type":"record","name":"In","fields":[{"name":"x","type":"double"}]}},
      {"name":"color","type":{"type":"enum","name":"C","symbols":["RED","BLUE"]}},
      {"name":"either","type":["int","string"]},
      {"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
      {"name":"key","type":"string"}]}"#;
    let schema = TopicSchema {
        versions: vec![version(3, SchemaType::Avro, def.as_bytes(), &[])],
    };
    let datum = avro(
        def,
        &[
            (
                "tags",
                Value::Array(vec![Value::String("a".into()), Value::String("b".into())]),
            ),
            (
                "attrs",
                Value::Map([("k".to_string(), Value::Int(5))].into_iter().collect()),
            ),
            (
                "inner",
                Value::Record(vec![("x".into(), Value::Double(1.5))]),
            ),
            ("color", Value::Enum(1, "BLUE".into())),
            (
                "either",
                Value::Union(1, Box::new(Value::String("s".into()))),
            ),
            ("at", Value::TimestampMillis(1_700_000_000_000)),
            ("key", Value::String("field named key".into())),
        ],
    );
    let out = typed_batch(
        &table(&[msg(&datum, Some(3))]),
        &schema,
        &TypedOptions::default(),
    )
    .unwrap();
    assert_eq!(errors(&out), [None]);
    let s = out.schema();
    assert!(matches!(
        s.field_with_name("tags").unwrap().data_type(),
        DataType::List(_)
    ));
    assert!(matches!(
        s.field_with_name("attrs").unwrap().data_type(),
        DataType::Map(_, _)
    ));
    assert!(matches!(
        s.field_with_name("inner").unwrap().data_type(),
        DataType::Struct(_)
    ));
    assert_eq!(
        s.field_with_name("color").unwrap().data_type(),
        &DataType::Utf8
    );
    assert_eq!(
        s.field_with_name("either").unwrap().data_type(),
        &DataType::Utf8
    );
    assert_eq!(
        s.field_with_name("at").unwrap().data_type(),
        &DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
    );
    // The message's own `key` column stays; the field is renamed.
    assert_eq!(
        out.column_by_name("__value.key")
            .unwrap()
            .as_string::<i32>()
            .value(0),
        "field named key"
    );
    assert_eq!(
        out.column_by_name("color")
            .unwrap()
            .as_string::<i32>()
            .value(0),
        "BLUE"
    );
    assert_eq!(
        out.column_by_name("either")
            .unwrap()
            .as_string::<i32>()
            .value(0),
        "\"s\""
    );
    let inner = out.column_by_name("inner").unwrap().as_struct();
    assert_eq!(
        inner
            .column(0)
            .as_primitive::<arrow_array::types::Float64Type>()
            .value(0),
        1.5
    );
    let attrs = out.column_by_name("attrs").unwrap().as_map();
    assert_eq!(attrs.keys().as_string::<i32>().value(0), "k");
    assert_eq!(attrs.values().as_primitive::<Int32Type>().value(0), 5);
}

#[test]
fn json_payloads_are_read_by_field_name() {
    let schema = TopicSchema {
        versions: vec![version(0, SchemaType::Json, V2.as_bytes(), &[])],
    };
    let msgs = [
        msg(br#"{"id": 1, "item": "x", "qty": 2}"#, Some(0)),
        msg(br#"{"id": 2}"#, Some(0)),
        msg(b"not json", Some(0)),
        msg(br#"{"item": "no id"}"#, Some(0)),
    ];
    let out = typed_batch(&table(&msgs), &schema, &TypedOptions::default()).unwrap();
    let id = out
        .column_by_name("id")
        .unwrap()
        .as_primitive::<Int64Type>();
    let qty = out
        .column_by_name("qty")
        .unwrap()
        .as_primitive::<Int32Type>();
    assert_eq!(
        id.iter().collect::<Vec<_>>(),
        [Some(1), Some(2), None, None]
    );
    assert_eq!(
        qty.iter().collect::<Vec<_>>(),
        [Some(2), Some(7), None, None]
    );
    let e = errors(&out);
    assert_eq!(&e[..2], &[None, None]);
    assert!(e[2].as_deref().unwrap().contains("not JSON"));
    assert!(e[3].as_deref().unwrap().contains("\"id\""), "{:?}", e[3]);
}

#[test]
fn a_bad_reader_definition_is_an_options_error_and_a_bad_old_version_an_error_row() {
    let bad = TopicSchema {
        versions: vec![version(0, SchemaType::Avro, b"{not avro", &[])],
    };
    let err = typed_batch(&table(&[]), &bad, &TypedOptions::default()).unwrap_err();
    assert_eq!(err.kind(), pulsar_entries_core::ErrorKind::Options);
    let schema = TopicSchema {
        versions: vec![
            version(0, SchemaType::Avro, b"{not avro", &[]),
            version(1, SchemaType::Avro, V1.as_bytes(), &[]),
        ],
    };
    let out = typed_batch(
        &table(&[msg(b"\x02\x00", Some(0))]),
        &schema,
        &TypedOptions::default(),
    )
    .unwrap();
    assert!(errors(&out)[0]
        .as_deref()
        .unwrap()
        .contains("schema version 0"));
    // No versions at all.
    assert!(typed_batch(
        &table(&[]),
        &TopicSchema::default(),
        &TypedOptions::default()
    )
    .is_err());
}
