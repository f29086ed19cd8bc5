//! The PROTOBUF_NATIVE definitions of `typed_protobuf.rs`: `FileDescriptorProto`s built with
//! prost-types (an order with every kind of field, an imported `Money`, two schema versions),
//! Pulsar's `ProtobufNativeSchemaData` JSON around them, and messages encoded with prost-reflect.

use base64::Engine as _;
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MapKey, Value};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, EnumValueDescriptorProto, FieldDescriptorProto,
    FileDescriptorProto, FileDescriptorSet, MessageOptions, OneofDescriptorProto,
};

pub fn field(
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

pub fn one(name: &str, number: i32, ty: Type) -> FieldDescriptorProto {
    field(name, number, ty, Label::Optional, None)
}

pub fn msg_field(name: &str, number: i32, type_name: &str, label: Label) -> FieldDescriptorProto {
    field(name, number, Type::Message, label, Some(type_name))
}

pub fn message(name: &str, fields: Vec<FieldDescriptorProto>) -> DescriptorProto {
    DescriptorProto {
        name: Some(name.into()),
        field: fields,
        ..Default::default()
    }
}

/// `money.proto` (imported): `message Money { string currency = 1; sint64 cents = 2; }`.
pub fn money_file() -> FileDescriptorProto {
    FileDescriptorProto {
        name: Some("money.proto".into()),
        package: Some("shop.common".into()),
        syntax: Some("proto3".into()),
        message_type: vec![message(
            "Money",
            vec![
                one("currency", 1, Type::String),
                one("cents", 2, Type::Sint64),
            ],
        )],
        ..Default::default()
    }
}

/// `order.proto`, version 0 (`extra` adds version 1's fields):
///
/// ```proto
/// enum Status { UNKNOWN = 0; NEW = 1; DONE = 2; }
/// message Line { string sku = 1; uint32 qty = 2; }
/// message Node { int32 v = 1; Node next = 2; }
/// message Order {
///   int64 id = 1; string name = 2; double price = 3; bool active = 4; bytes blob = 5;
///   Status status = 6; Line main = 7; repeated Line lines = 8; repeated sint32 deltas = 9;
///   map<string, int64> counts = 10; optional int32 maybe = 11; uint64 big = 12;
///   fixed32 small = 13; float ratio = 14; Node head = 15; shop.common.Money total = 16;
///   map<int32, Line> by_slot = 17;
/// }
/// ```
pub fn order_file(extra: Vec<FieldDescriptorProto>, price_type: Type) -> FileDescriptorProto {
    let map_entry = |name: &str, key: Type, value: FieldDescriptorProto| DescriptorProto {
        name: Some(name.into()),
        field: vec![one("key", 1, key), value],
        options: Some(MessageOptions {
            map_entry: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut maybe = one("maybe", 11, Type::Int32);
    maybe.proto3_optional = Some(true);
    maybe.oneof_index = Some(0);
    let mut fields = vec![
        one("id", 1, Type::Int64),
        one("name", 2, Type::String),
        one("price", 3, price_type),
        one("active", 4, Type::Bool),
        one("blob", 5, Type::Bytes),
        field(
            "status",
            6,
            Type::Enum,
            Label::Optional,
            Some(".shop.Status"),
        ),
        msg_field("main", 7, ".shop.Line", Label::Optional),
        msg_field("lines", 8, ".shop.Line", Label::Repeated),
        field("deltas", 9, Type::Sint32, Label::Repeated, None),
        msg_field("counts", 10, ".shop.Order.CountsEntry", Label::Repeated),
        maybe,
        one("big", 12, Type::Uint64),
        one("small", 13, Type::Fixed32),
        one("ratio", 14, Type::Float),
        msg_field("head", 15, ".shop.Node", Label::Optional),
        msg_field("total", 16, ".shop.common.Money", Label::Optional),
        msg_field("by_slot", 17, ".shop.Order.BySlotEntry", Label::Repeated),
    ];
    fields.extend(extra);
    let mut order = message("Order", fields);
    order.nested_type = vec![
        map_entry("CountsEntry", Type::String, one("value", 2, Type::Int64)),
        map_entry(
            "BySlotEntry",
            Type::Int32,
            msg_field("value", 2, ".shop.Line", Label::Optional),
        ),
    ];
    order.oneof_decl = vec![OneofDescriptorProto {
        name: Some("_maybe".into()),
        ..Default::default()
    }];
    FileDescriptorProto {
        name: Some("shop/order.proto".into()),
        package: Some("shop".into()),
        syntax: Some("proto3".into()),
        dependency: vec!["money.proto".into()],
        message_type: vec![
            message(
                "Line",
                vec![one("sku", 1, Type::String), one("qty", 2, Type::Uint32)],
            ),
            message(
                "Node",
                vec![
                    one("v", 1, Type::Int32),
                    msg_field("next", 2, ".shop.Node", Label::Optional),
                ],
            ),
            order,
        ],
        enum_type: vec![EnumDescriptorProto {
            name: Some("Status".into()),
            value: ["UNKNOWN", "NEW", "DONE"]
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

pub fn v0_file() -> FileDescriptorProto {
    order_file(vec![], Type::Double)
}

pub fn v1_file() -> FileDescriptorProto {
    order_file(vec![one("note", 18, Type::String)], Type::Double)
}

/// The FileDescriptorSet (root file first, its import after it, as a set may list them).
pub fn set_bytes(root: &FileDescriptorProto) -> Vec<u8> {
    FileDescriptorSet {
        file: vec![root.clone(), money_file()],
    }
    .encode_to_vec()
}

/// Pulsar's `ProtobufNativeSchemaData` JSON for `root` (as Jackson writes it).
pub fn definition(root: &FileDescriptorProto, root_message: &str) -> Vec<u8> {
    serde_json::json!({
        "fileDescriptorSet": base64::engine::general_purpose::STANDARD.encode(set_bytes(root)),
        "rootMessageTypeName": root_message,
        "rootFileDescriptorName": root.name(),
    })
    .to_string()
    .into_bytes()
}

pub fn pool(root: &FileDescriptorProto) -> DescriptorPool {
    DescriptorPool::decode(set_bytes(root).as_slice()).unwrap()
}

pub fn order(pool: &DescriptorPool) -> DynamicMessage {
    DynamicMessage::new(pool.get_message_by_name("shop.Order").unwrap())
}

pub fn sub(pool: &DescriptorPool, name: &str, fields: &[(&str, Value)]) -> Value {
    let mut m = DynamicMessage::new(pool.get_message_by_name(name).unwrap());
    for (k, v) in fields {
        m.set_field_by_name(k, v.clone());
    }
    Value::Message(m)
}

pub fn line(pool: &DescriptorPool, sku: &str, qty: u32) -> Value {
    sub(
        pool,
        "shop.Line",
        &[("sku", Value::String(sku.into())), ("qty", Value::U32(qty))],
    )
}

/// A full order of version 0.
pub fn full_order(pool: &DescriptorPool) -> DynamicMessage {
    let mut m = order(pool);
    m.set_field_by_name("id", Value::I64(-42));
    m.set_field_by_name("name", Value::String("fig".into()));
    m.set_field_by_name("price", Value::F64(2.5));
    m.set_field_by_name("active", Value::Bool(true));
    m.set_field_by_name("blob", Value::Bytes(vec![0u8, 1, 255].into()));
    m.set_field_by_name("status", Value::EnumNumber(2));
    m.set_field_by_name("main", line(pool, "a", 1));
    m.set_field_by_name(
        "lines",
        Value::List(vec![line(pool, "b", 2), line(pool, "c", 3)]),
    );
    m.set_field_by_name(
        "deltas",
        Value::List(vec![Value::I32(-1), Value::I32(0), Value::I32(7)]),
    );
    m.set_field_by_name(
        "counts",
        Value::Map(
            [("z", 26), ("a", 1)]
                .into_iter()
                .map(|(k, v)| (MapKey::String(k.into()), Value::I64(v)))
                .collect(),
        ),
    );
    m.set_field_by_name("maybe", Value::I32(0));
    m.set_field_by_name("big", Value::U64(u64::MAX));
    m.set_field_by_name("small", Value::U32(4_000_000_000));
    m.set_field_by_name("ratio", Value::F32(0.25));
    let n3 = sub(pool, "shop.Node", &[("v", Value::I32(3))]);
    let n2 = sub(pool, "shop.Node", &[("v", Value::I32(2)), ("next", n3)]);
    m.set_field_by_name(
        "head",
        sub(pool, "shop.Node", &[("v", Value::I32(1)), ("next", n2)]),
    );
    m.set_field_by_name(
        "total",
        sub(
            pool,
            "shop.common.Money",
            &[
                ("currency", Value::String("EUR".into())),
                ("cents", Value::I64(-250)),
            ],
        ),
    );
    m.set_field_by_name(
        "by_slot",
        Value::Map(
            [(9, "x"), (-3, "y")]
                .into_iter()
                .map(|(k, s)| (MapKey::I32(k), line(pool, s, 1)))
                .collect(),
        ),
    );
    m
}
