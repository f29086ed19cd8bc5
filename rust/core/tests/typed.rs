//! The typed decode: a topic's schema versions → typed Arrow columns.

use std::sync::Arc;

use apache_avro::types::{Record, Value};
use apache_avro::Schema;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BinaryArray, BooleanArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema as ArrowSchema, TimeUnit};
use prost::Message;
use pulsar_entries_core::proto::bookkeeper::{
    SchemaEntry, SchemaIndexEntry, SchemaKeyValuePair, SchemaLocator, SchemaPositionInfo,
    StoredSchemaInfo,
};
use pulsar_entries_core::schema::{
    decode_schema_entry, decode_schema_locator, typed_batch, SchemaLocation, SchemaType,
    SchemaVersion, TopicSchema, TypedOptions,
};

const V1: &str = r#"{"type":"record","name":"Order","namespace":"t","fields":[
  {"name":"id","type":"long"},
  {"name":"item","type":["null","string"],"default":null}]}"#;
const V2: &str = r#"{"type":"record","name":"Order","namespace":"t","fields":[
  {"name":"id","type":"long"},
  {"name":"item","type":["null","string"],"default":null},
  {"name":"qty","type":"int","default":7}]}"#;

fn version(v: i64, t: SchemaType, def: &[u8], props: &[(&str, &str)]) -> SchemaVersion {
    SchemaVersion {
        version: v,
        schema_type: t,
        definition: def.to_vec(),
        properties: props
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

struct Msg {
    value: Option<Vec<u8>>,
    version: Option<i64>,
    key: Option<String>,
    b64: bool,
}

fn msg(value: &[u8], version: Option<i64>) -> Msg {
    Msg {
        value: Some(value.to_vec()),
        version,
        key: None,
        b64: false,
    }
}

fn table(msgs: &[Msg]) -> RecordBatch {
    let value: BinaryArray = msgs.iter().map(|m| m.value.as_deref()).collect();
    let version_bytes: Vec<Option<[u8; 8]>> = msgs
        .iter()
        .map(|m| m.version.map(i64::to_be_bytes))
        .collect();
    let versions: BinaryArray = version_bytes
        .iter()
        .map(|v| v.as_ref().map(|b| b.as_slice()))
        .collect();
    let keys: StringArray = msgs.iter().map(|m| m.key.as_deref()).collect();
    let b64: BooleanArray = msgs.iter().map(|m| Some(m.b64)).collect();
    let errors: StringArray = msgs.iter().map(|_| None::<&str>).collect();
    let ids: arrow_array::Int64Array = (0..msgs.len() as i64).map(Some).collect();
    RecordBatch::try_new(
        Arc::new(ArrowSchema::new(vec![
            Field::new("entry_id", DataType::Int64, true),
            Field::new("key", DataType::Utf8, true),
            Field::new("key_b64_encoded", DataType::Boolean, true),
            Field::new("value", DataType::Binary, true),
            Field::new("schema_version", DataType::Binary, true),
            Field::new("error", DataType::Utf8, true),
        ])),
        vec![
            Arc::new(ids) as ArrayRef,
            Arc::new(keys),
            Arc::new(b64),
            Arc::new(value),
            Arc::new(versions),
            Arc::new(errors),
        ],
    )
    .unwrap()
}

fn avro(schema: &str, fields: &[(&str, Value)]) -> Vec<u8> {
    let s = Schema::parse_str(schema).unwrap();
    let mut r = Record::new(&s).unwrap();
    for (k, v) in fields {
        r.put(k, v.clone());
    }
    apache_avro::to_avro_datum(&s, r).unwrap()
}

fn errors(b: &RecordBatch) -> Vec<Option<String>> {
    b.column_by_name("error")
        .unwrap()
        .as_string::<i32>()
        .iter()
        .map(|s| s.map(str::to_string))
        .collect()
}

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
fn primitives_follow_pulsars_byte_layouts() {
    let one = |t: SchemaType, payloads: &[&[u8]]| {
        let schema = TopicSchema {
            versions: vec![version(0, t, b"", &[])],
        };
        let msgs: Vec<Msg> = payloads.iter().map(|p| msg(p, Some(0))).collect();
        typed_batch(&table(&msgs), &schema, &TypedOptions::default()).unwrap()
    };
    let out = one(SchemaType::Int64, &[&42i64.to_be_bytes(), &[1, 2, 3]]);
    let v = out
        .column_by_name("__value__")
        .unwrap()
        .as_primitive::<Int64Type>();
    assert_eq!(v.iter().collect::<Vec<_>>(), [Some(42), None]);
    assert!(errors(&out)[1].as_deref().unwrap().contains("expected 8"));

    let out = one(SchemaType::Int8, &[&[0xfe]]);
    let v = out.column_by_name("__value__").unwrap();
    assert_eq!(v.data_type(), &DataType::Int8);
    assert_eq!(
        v.as_primitive::<arrow_array::types::Int8Type>().value(0),
        -2
    );

    let out = one(SchemaType::String, &["héllo".as_bytes()]);
    assert_eq!(
        out.column_by_name("__value__")
            .unwrap()
            .as_string::<i32>()
            .value(0),
        "héllo"
    );

    let mut instant = 1_700_000_000i64.to_be_bytes().to_vec();
    instant.extend_from_slice(&123_456_789i32.to_be_bytes());
    let out = one(SchemaType::Instant, &[&instant]);
    let v = out.column_by_name("__value__").unwrap();
    assert_eq!(
        v.data_type(),
        &DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
    );
    assert_eq!(
        v.as_primitive::<arrow_array::types::TimestampNanosecondType>()
            .value(0),
        1_700_000_000_123_456_789
    );

    let mut ldt = 19_000i64.to_be_bytes().to_vec();
    ldt.extend_from_slice(&3_600_000_000_000i64.to_be_bytes());
    let out = one(SchemaType::LocalDateTime, &[&ldt]);
    let v = out.column_by_name("__value__").unwrap();
    assert_eq!(
        v.data_type(),
        &DataType::Timestamp(TimeUnit::Nanosecond, None)
    );
    assert_eq!(
        v.as_primitive::<arrow_array::types::TimestampNanosecondType>()
            .value(0),
        19_000 * 86_400_000_000_000 + 3_600_000_000_000
    );

    let out = one(SchemaType::LocalTime, &[&5_000_000_000i64.to_be_bytes()]);
    assert_eq!(
        out.column_by_name("__value__").unwrap().data_type(),
        &DataType::Time64(TimeUnit::Nanosecond)
    );
    let out = one(SchemaType::Boolean, &[&[1], &[0]]);
    let v = out.column_by_name("__value__").unwrap().as_boolean();
    assert_eq!(v.iter().collect::<Vec<_>>(), [Some(true), Some(false)]);
    let out = one(SchemaType::Double, &[&2.5f64.to_be_bytes()]);
    assert_eq!(
        out.column_by_name("__value__")
            .unwrap()
            .as_primitive::<arrow_array::types::Float64Type>()
            .value(0),
        2.5
    );
}

fn kv_definition(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut d = (key.len() as i32).to_be_bytes().to_vec();
    d.extend_from_slice(key);
    d.extend_from_slice(&(value.len() as i32).to_be_bytes());
    d.extend_from_slice(value);
    d
}

#[test]
fn key_value_inline_and_separated() {
    let props_inline = [
        ("key.schema.type", "STRING"),
        ("value.schema.type", "AVRO"),
        ("kv.encoding.type", "INLINE"),
    ];
    let schema = TopicSchema {
        versions: vec![version(
            0,
            SchemaType::KeyValue,
            &kv_definition(b"", V1.as_bytes()),
            &props_inline,
        )],
    };
    let value = avro(
        V1,
        &[
            ("id", Value::Long(8)),
            ("item", Value::Union(0, Box::new(Value::Null))),
        ],
    );
    let mut payload = 3i32.to_be_bytes().to_vec();
    payload.extend_from_slice(b"k-8");
    payload.extend_from_slice(&(value.len() as i32).to_be_bytes());
    payload.extend_from_slice(&value);
    let mut null_key = (-1i32).to_be_bytes().to_vec();
    null_key.extend_from_slice(&(value.len() as i32).to_be_bytes());
    null_key.extend_from_slice(&value);
    let out = typed_batch(
        &table(&[
            msg(&payload, Some(0)),
            msg(&null_key, Some(0)),
            msg(&payload[..5], Some(0)),
        ]),
        &schema,
        &TypedOptions::default(),
    )
    .unwrap();
    let k = out.column_by_name("__key__").unwrap().as_string::<i32>();
    assert_eq!(k.iter().collect::<Vec<_>>(), [Some("k-8"), None, None]);
    let id = out
        .column_by_name("id")
        .unwrap()
        .as_primitive::<Int64Type>();
    assert_eq!(id.iter().collect::<Vec<_>>(), [Some(8), Some(8), None]);
    let e = errors(&out);
    assert_eq!(&e[..2], &[None, None]);
    assert!(e[2].as_deref().unwrap().contains("truncated"), "{:?}", e[2]);

    // SEPARATED: the key is the message key, base64 for a non-string key schema.
    let props_sep = [
        ("key.schema.type", "INT64"),
        ("value.schema.type", "AVRO"),
        ("kv.encoding.type", "SEPARATED"),
    ];
    let schema = TopicSchema {
        versions: vec![version(
            0,
            SchemaType::KeyValue,
            &kv_definition(b"", V1.as_bytes()),
            &props_sep,
        )],
    };
    use base64::Engine as _;
    let key = base64::engine::general_purpose::STANDARD.encode(77i64.to_be_bytes());
    let m = Msg {
        value: Some(value.clone()),
        version: Some(0),
        key: Some(key),
        b64: true,
    };
    let out = typed_batch(&table(&[m]), &schema, &TypedOptions::default()).unwrap();
    assert_eq!(errors(&out), [None]);
    assert_eq!(
        out.column_by_name("__key__")
            .unwrap()
            .as_primitive::<Int64Type>()
            .value(0),
        77
    );
    assert_eq!(
        out.column_by_name("id")
            .unwrap()
            .as_primitive::<Int64Type>()
            .value(0),
        8
    );

    // A record key: its fields under __key.
    let props_rec = [
        ("key.schema.type", "AVRO"),
        ("value.schema.type", "INT32"),
        ("kv.encoding.type", "INLINE"),
    ];
    let schema = TopicSchema {
        versions: vec![version(
            0,
            SchemaType::KeyValue,
            &kv_definition(V1.as_bytes(), b""),
            &props_rec,
        )],
    };
    let key = avro(
        V1,
        &[
            ("id", Value::Long(1)),
            ("item", Value::Union(0, Box::new(Value::Null))),
        ],
    );
    let mut payload = (key.len() as i32).to_be_bytes().to_vec();
    payload.extend_from_slice(&key);
    payload.extend_from_slice(&4i32.to_be_bytes());
    payload.extend_from_slice(&9i32.to_be_bytes());
    let out = typed_batch(
        &table(&[msg(&payload, Some(0))]),
        &schema,
        &TypedOptions::default(),
    )
    .unwrap();
    assert_eq!(errors(&out), [None]);
    assert_eq!(
        out.column_by_name("__key.id")
            .unwrap()
            .as_primitive::<Int64Type>()
            .value(0),
        1
    );
    assert_eq!(
        out.column_by_name("__value__")
            .unwrap()
            .as_primitive::<Int32Type>()
            .value(0),
        9
    );
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

#[test]
fn registry_records_decode() {
    let idx = |v: i64, l: i64, e: i64| SchemaIndexEntry {
        version: v,
        position: SchemaPositionInfo {
            ledger_id: l,
            entry_id: e,
        },
        hash: vec![1, 2],
    };
    let locator = SchemaLocator {
        info: idx(1, 20, 0),
        index: vec![idx(0, 10, 0), idx(1, 20, 0)],
    };
    let locs = decode_schema_locator(&locator.encode_to_vec()).unwrap();
    assert_eq!(
        locs,
        [
            SchemaLocation {
                version: 0,
                ledger_id: 10,
                entry_id: 0
            },
            SchemaLocation {
                version: 1,
                ledger_id: 20,
                entry_id: 0
            },
        ]
    );
    let info = StoredSchemaInfo {
        schema_id: "public/default/orders".into(),
        user: "".into(),
        r#type: 5, // AVRO (4) + 1
        schema: V1.as_bytes().to_vec(),
        timestamp: 1234,
        deleted: false,
        props: vec![SchemaKeyValuePair {
            key: "a".into(),
            value: "b".into(),
        }],
    };
    let entry = SchemaEntry {
        schema_data: info.encode_to_vec(),
        index: vec![idx(0, 10, 0)],
    };
    let stored = decode_schema_entry(1, &entry.encode_to_vec()).unwrap();
    let s = stored.schema.unwrap();
    assert_eq!(s.schema_type, SchemaType::Avro);
    assert_eq!(s.version, 1);
    assert_eq!(s.definition, V1.as_bytes());
    assert_eq!(s.properties, [("a".to_string(), "b".to_string())]);
    assert_eq!(stored.schema_id, "public/default/orders");
    // KEY_VALUE is 15 + 1; a BYTES schema is stored as NONE (1).
    let kv = StoredSchemaInfo {
        r#type: 16,
        ..info.clone()
    };
    let e = SchemaEntry {
        schema_data: kv.encode_to_vec(),
        index: vec![],
    };
    assert_eq!(
        decode_schema_entry(0, &e.encode_to_vec())
            .unwrap()
            .schema
            .unwrap()
            .schema_type,
        SchemaType::KeyValue
    );
    assert!(decode_schema_locator(b"\xff\xff").is_err());
    assert!(decode_schema_entry(0, b"\x12\x03ab").is_err());
}
