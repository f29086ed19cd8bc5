//! One fuzz input = a selector byte, then a protobuf payload. The topic has
//! a PROTOBUF_NATIVE schema with two versions (version 1 adds a field and
//! widens another); the message's root holds every kind of field the typed
//! decode turns into a column: scalars of each wire type, an enum, a nested
//! message, repeated scalars and messages, two maps, a proto3 `optional` and
//! a recursive message. The selector names version 0 to 3 (2 and 3 unknown).
//! `typed_batch` never panics, keeps the row (one output row, its `value`
//! the input bytes), and a row is either typed or carries an error.
#![no_main]

use std::sync::OnceLock;

use base64::Engine as _;
use libfuzzer_sys::fuzz_target;
use prost::Message as _;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, EnumValueDescriptorProto, FieldDescriptorProto,
    FileDescriptorProto, FileDescriptorSet, MessageOptions, OneofDescriptorProto,
};
use pulsar_entries_core::schema::{SchemaType, SchemaVersion, TopicSchema};

mod typed_row;

fn field(
    name: &str,
    number: i32,
    ty: Type,
    label: Label,
    type_name: Option<&str>,
) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(number),
        label: Some(label as i32),
        r#type: Some(ty as i32),
        type_name: type_name.map(Into::into),
        ..Default::default()
    }
}

fn scalar(name: &str, number: i32, ty: Type) -> FieldDescriptorProto {
    field(name, number, ty, Label::Optional, None)
}

fn child(name: &str, number: i32, type_name: &str, label: Label) -> FieldDescriptorProto {
    field(name, number, Type::Message, label, Some(type_name))
}

fn message(name: &str, fields: Vec<FieldDescriptorProto>) -> DescriptorProto {
    DescriptorProto {
        name: Some(name.into()),
        field: fields,
        ..Default::default()
    }
}

fn map_entry(name: &str, key: Type, value: FieldDescriptorProto) -> DescriptorProto {
    DescriptorProto {
        name: Some(name.into()),
        field: vec![scalar("key", 1, key), value],
        options: Some(MessageOptions {
            map_entry: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `fz.proto`: `Item { string sku = 1; uint32 qty = 2; }`, `Node { int32 v = 1; Node next = 2; }`,
/// `enum Kind { NONE = 0; A = 1; B = 2; }` and the root `Root` (fields 1-17; version 1 makes
/// `ratio` a double where version 0 has a float, and adds `note = 18`).
fn file(version: u8) -> FileDescriptorProto {
    let mut maybe = scalar("maybe", 11, Type::Int32);
    maybe.proto3_optional = Some(true);
    maybe.oneof_index = Some(0);
    let mut fields = vec![
        scalar("id", 1, Type::Int64),
        scalar("name", 2, Type::String),
        scalar(
            "ratio",
            3,
            if version == 0 {
                Type::Float
            } else {
                Type::Double
            },
        ),
        scalar("on", 4, Type::Bool),
        scalar("blob", 5, Type::Bytes),
        field("kind", 6, Type::Enum, Label::Optional, Some(".fz.Kind")),
        child("item", 7, ".fz.Item", Label::Optional),
        child("items", 8, ".fz.Item", Label::Repeated),
        field("deltas", 9, Type::Sint32, Label::Repeated, None),
        child("counts", 10, ".fz.Root.CountsEntry", Label::Repeated),
        maybe,
        scalar("big", 12, Type::Uint64),
        scalar("small", 13, Type::Fixed32),
        scalar("wide", 14, Type::Sfixed64),
        child("head", 15, ".fz.Node", Label::Optional),
        child("by_slot", 16, ".fz.Root.BySlotEntry", Label::Repeated),
        field("flags", 17, Type::Bool, Label::Repeated, None),
    ];
    if version > 0 {
        fields.push(scalar("note", 18, Type::String));
    }
    let mut root = message("Root", fields);
    root.nested_type = vec![
        map_entry("CountsEntry", Type::String, scalar("value", 2, Type::Int64)),
        map_entry(
            "BySlotEntry",
            Type::Int32,
            child("value", 2, ".fz.Item", Label::Optional),
        ),
    ];
    root.oneof_decl = vec![OneofDescriptorProto {
        name: Some("_maybe".into()),
        ..Default::default()
    }];
    FileDescriptorProto {
        name: Some("fz.proto".into()),
        package: Some("fz".into()),
        syntax: Some("proto3".into()),
        message_type: vec![
            message(
                "Item",
                vec![
                    scalar("sku", 1, Type::String),
                    scalar("qty", 2, Type::Uint32),
                ],
            ),
            message(
                "Node",
                vec![
                    scalar("v", 1, Type::Int32),
                    child("next", 2, ".fz.Node", Label::Optional),
                ],
            ),
            root,
        ],
        enum_type: vec![EnumDescriptorProto {
            name: Some("Kind".into()),
            value: ["NONE", "A", "B"]
                .iter()
                .zip(0..)
                .map(|(n, i)| EnumValueDescriptorProto {
                    name: Some((*n).into()),
                    number: Some(i),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Pulsar's `ProtobufNativeSchemaData` JSON for a version.
fn definition(version: u8) -> Vec<u8> {
    let set = FileDescriptorSet {
        file: vec![file(version)],
    }
    .encode_to_vec();
    format!(
        r#"{{"fileDescriptorSet":"{}","rootMessageTypeName":"fz.Root","rootFileDescriptorName":"fz.proto"}}"#,
        base64::engine::general_purpose::STANDARD.encode(set)
    )
    .into_bytes()
}

fn schema() -> &'static TopicSchema {
    static SCHEMA: OnceLock<TopicSchema> = OnceLock::new();
    SCHEMA.get_or_init(|| TopicSchema {
        versions: (0..2u8)
            .map(|v| SchemaVersion {
                version: i64::from(v),
                schema_type: SchemaType::ProtobufNative,
                definition: definition(v),
                properties: Default::default(),
            })
            .collect(),
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, payload)) = data.split_first() else {
        return;
    };
    let named = i64::from(selector % 4); // versions 0..=3: 2 and 3 are unknown
    let error = typed_row::check(payload, named, schema());
    assert!(
        error || named <= 1,
        "a message naming unknown version {named} was typed"
    );
});
