//! The typed decode of PROTOBUF_NATIVE: Pulsar's `ProtobufNativeSchemaData` definitions (a
//! FileDescriptorSet built here with prost-types), messages encoded with prost-reflect, and their
//! columns: scalars, absent fields, nested messages, repeated, maps, enums, a recursive type,
//! several schema versions, and payloads that are error rows.

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::{DataType, Field, Fields};
use base64::Engine as _;
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, Value};
use prost_types::field_descriptor_proto::Type;
use prost_types::{FileDescriptorProto, FileDescriptorSet};
use pulsar_entries_core::schema::{typed_batch, SchemaType, TopicSchema, TypedOptions};

#[path = "support/typed.rs"]
mod support;
use support::*;

#[path = "support/protobuf_defs.rs"]
mod defs;
use defs::*;

fn schema_of(versions: &[(i64, Vec<u8>)]) -> TopicSchema {
    TopicSchema {
        versions: versions
            .iter()
            .map(|(v, d)| version(*v, SchemaType::ProtobufNative, d, &[]))
            .collect(),
    }
}

/// A cell as text (Arrow's display), `None` for null.
fn cell(b: &RecordBatch, name: &str, row: usize) -> Option<String> {
    let c: &ArrayRef = b
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"));
    if c.is_null(row) {
        return None;
    }
    let f = ArrayFormatter::try_new(c.as_ref(), &FormatOptions::default()).unwrap();
    Some(f.value(row).to_string())
}

fn cells(b: &RecordBatch, row: usize, names: &[&str]) -> Vec<Option<String>> {
    names.iter().map(|n| cell(b, n, row)).collect()
}

fn s(x: &str) -> Option<String> {
    Some(x.to_string())
}

#[test]
fn every_kind_of_field_becomes_its_column() {
    let def = definition(&v0_file(), "shop.Order");
    let p = pool(&v0_file());
    let full = full_order(&p).encode_to_vec();
    let mut unknown_enum = order(&p);
    unknown_enum.set_field_by_name("status", Value::EnumNumber(7));
    let msgs = [
        msg(&full, Some(0)),
        msg(&[], Some(0)),
        msg(&unknown_enum.encode_to_vec(), Some(0)),
    ];
    let out = typed_batch(
        &table(&msgs),
        &schema_of(&[(0, def)]),
        &TypedOptions::default(),
    )
    .unwrap();
    assert_eq!(errors(&out), vec![None, None, None]);

    let line_t = DataType::Struct(Fields::from(vec![
        Field::new("sku", DataType::Utf8, true),
        Field::new("qty", DataType::UInt32, true),
    ]));
    let map_t = |k: DataType, v: DataType| {
        DataType::Map(
            std::sync::Arc::new(Field::new(
                "entries",
                DataType::Struct(Fields::from(vec![
                    Field::new("key", k, false),
                    Field::new("value", v, true),
                ])),
                false,
            )),
            false,
        )
    };
    let list_t = |t: DataType| DataType::List(std::sync::Arc::new(Field::new("item", t, true)));
    let expected: Vec<(&str, DataType)> = vec![
        ("id", DataType::Int64),
        ("name", DataType::Utf8),
        ("price", DataType::Float64),
        ("active", DataType::Boolean),
        ("blob", DataType::Binary),
        ("status", DataType::Utf8),
        ("main", line_t.clone()),
        ("lines", list_t(line_t.clone())),
        ("deltas", list_t(DataType::Int32)),
        ("counts", map_t(DataType::Utf8, DataType::Int64)),
        ("maybe", DataType::Int32),
        ("big", DataType::UInt64),
        ("small", DataType::UInt32),
        ("ratio", DataType::Float32),
        (
            "head",
            // Node inside Node: the recursive field is JSON text.
            DataType::Struct(Fields::from(vec![
                Field::new("v", DataType::Int32, true),
                Field::new("next", DataType::Utf8, true),
            ])),
        ),
        (
            "total",
            DataType::Struct(Fields::from(vec![
                Field::new("currency", DataType::Utf8, true),
                Field::new("cents", DataType::Int64, true),
            ])),
        ),
        ("by_slot", map_t(DataType::Int32, line_t)),
    ];
    let out_schema = out.schema();
    let typed: Vec<(&str, DataType)> = out_schema
        .fields()
        .iter()
        .skip(6)
        .map(|f| (f.name().as_str(), f.data_type().clone()))
        .collect();
    assert_eq!(typed, expected);

    let names: Vec<&str> = expected.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        cells(&out, 0, &names),
        vec![
            s("-42"),
            s("fig"),
            s("2.5"),
            s("true"),
            s("0001ff"),
            s("DONE"),
            s("{sku: a, qty: 1}"),
            s("[{sku: b, qty: 2}, {sku: c, qty: 3}]"),
            s("[-1, 0, 7]"),
            s("{a: 1, z: 26}"),
            // `optional` set to its default is present.
            s("0"),
            s("18446744073709551615"),
            s("4000000000"),
            s("0.25"),
            s(r#"{v: 1, next: {"next":{"v":3},"v":2}}"#),
            s("{currency: EUR, cents: -250}"),
            s("{-3: {sku: y, qty: 1}, 9: {sku: x, qty: 1}}"),
        ]
    );
    // Nothing on the wire: proto3 scalars, enums, repeated and map fields give their defaults,
    // messages and `optional` fields null.
    assert_eq!(
        cells(&out, 1, &names),
        vec![
            s("0"),
            s(""),
            s("0.0"),
            s("false"),
            s(""),
            s("UNKNOWN"),
            None,
            s("[]"),
            s("[]"),
            s("{}"),
            None,
            s("0"),
            s("0"),
            s("0.0"),
            None,
            None,
            s("{}"),
        ]
    );
    // An enum number the enum does not declare: its decimal text.
    assert_eq!(cell(&out, "status", 2), s("7"));
    // The raw bytes stay beside the columns.
    assert_eq!(cell(&out, "value", 0), Some(hex::encode(&full)));
}

#[test]
fn bad_payloads_are_error_rows_that_keep_their_bytes() {
    let def = definition(&v0_file(), "shop.Order");
    let p = pool(&v0_file());
    let full = full_order(&p).encode_to_vec();
    let truncated = full[..full.len() - 3].to_vec();
    // Field 2 (name) claims 2^31 bytes and holds three: refused before anything is allocated.
    let huge_length = vec![0x12, 0x80, 0x80, 0x80, 0x80, 0x08, b'a', b'b', b'c'];
    // Field 3 (price, a double) with the varint wire type.
    let wrong_wire = vec![0x18, 0x01];
    // A Node chain nested 300 deep in `head`: past the decoder's recursion limit.
    let mut deep = order(&p);
    let mut node = sub(&p, "shop.Node", &[("v", Value::I32(0))]);
    for i in 1..300 {
        node = sub(&p, "shop.Node", &[("v", Value::I32(i)), ("next", node)]);
    }
    deep.set_field_by_name("head", node);
    let deep = deep.encode_to_vec();
    let msgs = [
        msg(&truncated, Some(0)),
        msg(&huge_length, Some(0)),
        msg(&wrong_wire, Some(0)),
        msg(&deep, Some(0)),
        msg(&full, Some(0)),
        msg(&full, Some(5)),
    ];
    let out = typed_batch(
        &table(&msgs),
        &schema_of(&[(0, def)]),
        &TypedOptions::default(),
    )
    .unwrap();
    let errs = errors(&out);
    for (i, m) in msgs.iter().enumerate().take(4) {
        let e = errs[i]
            .as_deref()
            .unwrap_or_else(|| panic!("row {i} decoded"));
        assert!(
            e.contains("protobuf message does not match its writer schema"),
            "{e}"
        );
        assert_eq!(cell(&out, "id", i), None);
        assert_eq!(
            cell(&out, "value", i),
            Some(hex::encode(m.value.as_ref().unwrap()))
        );
    }
    assert!(
        errs[3].as_deref().unwrap().contains("recursion"),
        "{:?}",
        errs[3]
    );
    assert_eq!(errs[4], None);
    assert_eq!(cell(&out, "id", 4), s("-42"));
    assert!(errs[5].as_deref().unwrap().contains("schema version 5"));
}

#[test]
fn versions_are_projected_onto_the_latest_by_field_name() {
    let v0 = definition(&v0_file(), "shop.Order");
    let v1 = definition(&v1_file(), "shop.Order");
    let p0 = pool(&v0_file());
    let p1 = pool(&v1_file());
    let old = full_order(&p0).encode_to_vec();
    let mut new = order(&p1);
    new.set_field_by_name("id", Value::I64(7));
    new.set_field_by_name("note", Value::String("hello".into()));
    let new = new.encode_to_vec();
    let msgs = [msg(&old, Some(0)), msg(&new, Some(1)), msg(&new, None)];
    let schema = schema_of(&[(0, v0.clone()), (1, v1)]);
    let out = typed_batch(&table(&msgs), &schema, &TypedOptions::default()).unwrap();
    assert_eq!(errors(&out), vec![None, None, None]);
    assert_eq!(out.schema().fields().last().unwrap().name(), "note");
    // Written with version 0: `note` is absent, a proto3 string without presence: "".
    assert_eq!(
        cells(&out, 0, &["id", "note", "status"]),
        vec![s("-42"), s(""), s("DONE")]
    );
    assert_eq!(
        cells(&out, 1, &["id", "note", "main"]),
        vec![s("7"), s("hello"), None]
    );
    assert_eq!(cells(&out, 2, &["id", "note"]), vec![s("7"), s("hello")]);

    // A field whose kind changed (price: double in version 0, string in version 2) makes the old
    // messages error rows; widening (float → double) is not a change.
    let mut v2 = order_file(vec![], Type::String);
    let ratio = v2.message_type[2]
        .field
        .iter_mut()
        .find(|f| f.name() == "ratio")
        .unwrap();
    ratio.r#type = Some(Type::Double as i32);
    let p2 = pool(&v2);
    let mut current = order(&p2);
    current.set_field_by_name("price", Value::String("cheap".into()));
    let mut only_ratio = order(&p0);
    only_ratio.set_field_by_name("ratio", Value::F32(0.5));
    let msgs = [
        msg(&old, Some(0)),
        msg(&current.encode_to_vec(), Some(2)),
        msg(&only_ratio.encode_to_vec(), Some(0)),
    ];
    let schema = schema_of(&[(0, v0), (2, definition(&v2, "shop.Order"))]);
    let out = typed_batch(&table(&msgs), &schema, &TypedOptions::default()).unwrap();
    let errs = errors(&out);
    assert_eq!(
        errs[0].as_deref(),
        Some("field price: written as double, read as string")
    );
    assert_eq!(errs[1], None);
    assert_eq!(cell(&out, "price", 1), s("cheap"));
    // Only `ratio` set, and price 0.0 on the wire is absent: nothing mismatches.
    assert_eq!(errs[2], None);
    assert_eq!(cells(&out, 2, &["ratio", "price"]), vec![s("0.5"), s("")]);
    assert_eq!(
        out.column_by_name("ratio").unwrap().data_type(),
        &DataType::Float64
    );
}

#[test]
fn bad_definitions_and_protobuf_schemas_are_clear_errors() {
    let p = pool(&v0_file());
    let msgs = [msg(&full_order(&p).encode_to_vec(), Some(0))];
    let bad = |def: &[u8]| {
        typed_batch(
            &table(&msgs),
            &schema_of(&[(0, def.to_vec())]),
            &TypedOptions::default(),
        )
        .unwrap_err()
        .to_string()
    };
    assert!(bad(b"not json").contains("PROTOBUF_NATIVE schema definition"));
    assert!(bad(&definition(&v0_file(), "shop.Missing"))
        .contains("\"shop.Missing\" is not in the descriptor set"));
    let mut wrong_file: serde_json::Value =
        serde_json::from_slice(&definition(&v0_file(), "shop.Order")).unwrap();
    wrong_file["rootFileDescriptorName"] = "money.proto".into();
    assert!(bad(wrong_file.to_string().as_bytes()).contains("not in rootFileDescriptorName"));
    // A set without the import its root file needs.
    let alone = FileDescriptorSet {
        file: vec![v0_file()],
    }
    .encode_to_vec();
    let missing_import = serde_json::json!({
        "fileDescriptorSet": base64::engine::general_purpose::STANDARD.encode(alone),
        "rootMessageTypeName": "shop.Order",
        "rootFileDescriptorName": "shop/order.proto",
    });
    assert!(bad(missing_import.to_string().as_bytes()).contains("invalid fileDescriptorSet"));

    // PROTOBUF (an Avro description of the .proto) is refused, not decoded as something else.
    let schema = TopicSchema {
        versions: vec![version(
            0,
            SchemaType::Protobuf,
            br#"{"type":"record","name":"Order","fields":[]}"#,
            &[],
        )],
    };
    let e = typed_batch(&table(&msgs), &schema, &TypedOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("PROTOBUF schemas") && e.contains("not decoded"),
        "{e}"
    );
}

#[test]
fn a_root_field_named_like_a_message_column_is_prefixed() {
    // `message Keyed { string key = 1; int32 n = 2; }`: `key` is also the message key's column.
    let file = FileDescriptorProto {
        name: Some("k.proto".into()),
        package: Some("k".into()),
        syntax: Some("proto3".into()),
        message_type: vec![message(
            "Keyed",
            vec![one("key", 1, Type::String), one("n", 2, Type::Int32)],
        )],
        ..Default::default()
    };
    let set = FileDescriptorSet { file: vec![file] }.encode_to_vec();
    let pool = DescriptorPool::decode(set.as_slice()).unwrap();
    let def = serde_json::json!({
        "fileDescriptorSet": base64::engine::general_purpose::STANDARD.encode(&set),
        "rootMessageTypeName": "k.Keyed",
        "rootFileDescriptorName": "k.proto",
    })
    .to_string();
    let mut m = DynamicMessage::new(pool.get_message_by_name("k.Keyed").unwrap());
    m.set_field_by_name("key", Value::String("inner".into()));
    m.set_field_by_name("n", Value::I32(3));
    let mut row = msg(&m.encode_to_vec(), Some(0));
    row.key = Some("outer".into());
    let schema = TopicSchema {
        versions: vec![version(0, SchemaType::ProtobufNative, def.as_bytes(), &[])],
    };
    let out = typed_batch(
        &table(&[row]),
        &schema,
        &TypedOptions {
            value_column: false,
            by_version: true,
        },
    )
    .unwrap();
    assert!(out.column_by_name("value").is_none());
    assert_eq!(
        cells(&out, 0, &["key", "__value.key", "n"]),
        vec![s("outer"), s("inner"), s("3")]
    );
}

#[test]
fn a_key_value_schema_with_a_protobuf_native_value() {
    // KeyValue(STRING, PROTOBUF_NATIVE) INLINE: `[i32 length][key][i32 length][value]`.
    let def = definition(&v0_file(), "shop.Order");
    let mut kv_def = 0i32.to_be_bytes().to_vec();
    kv_def.extend_from_slice(&(def.len() as i32).to_be_bytes());
    kv_def.extend_from_slice(&def);
    let p = pool(&v0_file());
    let mut m = order(&p);
    m.set_field_by_name("id", Value::I64(11));
    m.set_field_by_name("status", Value::EnumNumber(1));
    let value = m.encode_to_vec();
    let mut payload = 2i32.to_be_bytes().to_vec();
    payload.extend_from_slice(b"k1");
    payload.extend_from_slice(&(value.len() as i32).to_be_bytes());
    payload.extend_from_slice(&value);
    let schema = TopicSchema {
        versions: vec![version(
            0,
            SchemaType::KeyValue,
            &kv_def,
            &[
                ("key.schema.type", "STRING"),
                ("value.schema.type", "PROTOBUF_NATIVE"),
            ],
        )],
    };
    let out = typed_batch(
        &table(&[
            msg(&payload, Some(0)),
            msg(&payload[..payload.len() - 2], Some(0)),
        ]),
        &schema,
        &TypedOptions::default(),
    )
    .unwrap();
    assert_eq!(errors(&out)[0], None);
    assert_eq!(
        cells(&out, 0, &["__key__", "id", "status", "main"]),
        vec![s("k1"), s("11"), s("NEW"), None]
    );
    // The inline value part is cut short: an error row.
    assert!(errors(&out)[1].as_deref().unwrap().contains("truncated"));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Any bytes, and any one-byte change of a full order: the row stays (its bytes with it), and is
    /// either decoded or an error row; nothing panics.
    #[test]
    fn any_payload_keeps_its_row(
        noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
        at in 0usize..1000,
        byte in proptest::prelude::any::<u8>(),
    ) {
        let def = definition(&v1_file(), "shop.Order");
        let p = pool(&v0_file());
        let mut changed = full_order(&p).encode_to_vec();
        let i = at % changed.len();
        changed[i] = byte;
        let msgs = [msg(&noise, Some(0)), msg(&changed, Some(1))];
        let schema = schema_of(&[(0, definition(&v0_file(), "shop.Order")), (1, def)]);
        let out = typed_batch(&table(&msgs), &schema, &TypedOptions::default()).unwrap();
        proptest::prop_assert_eq!(out.num_rows(), 2);
        let errs = errors(&out);
        for (row, m) in msgs.iter().enumerate() {
            proptest::prop_assert_eq!(cell(&out, "value", row), Some(hex::encode(m.value.as_ref().unwrap())));
            // A decoded row has its `big` column (a uint64 without presence: never null).
            proptest::prop_assert_eq!(errs[row].is_none(), cell(&out, "big", row).is_some());
        }
    }
}
