//! The typed decode of the other schema kinds: the primitives in Pulsar's byte layouts,
//! KeyValue INLINE and SEPARATED, and the schema registry's stored records.

use apache_avro::types::Value;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::Array;
use arrow_schema::{DataType, TimeUnit};
use prost::Message;
use pulsar_entries_core::proto::bookkeeper::{
    SchemaEntry, SchemaIndexEntry, SchemaKeyValuePair, SchemaLocator, SchemaPositionInfo,
    StoredSchemaInfo,
};
use pulsar_entries_core::schema::{
    decode_schema_entry, decode_schema_locator, typed_batch, SchemaLocation, SchemaType,
    TopicSchema, TypedOptions,
};

#[path = "support/typed.rs"]
mod support;
use support::*;

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
