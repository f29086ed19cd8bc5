//! PROTOBUF_NATIVE: a protobuf message → typed values → Arrow columns.
//!
//! The schema definition (`SchemaInfo.schema`) is Pulsar's
//! `ProtobufNativeSchemaData` as JSON: `{"fileDescriptorSet": <base64 of a
//! FileDescriptorSet holding the root's file and everything it imports>,
//! "rootMessageTypeName": <the root message's full name>,
//! "rootFileDescriptorName": <the file that declares it>}`; a payload is the
//! root message, protobuf-encoded.
//!
//! A payload is decoded with its writer version's descriptors
//! (`prost-reflect`; prost checks every length against the bytes left before
//! it allocates, and stops at 100 nested messages), then projected onto the
//! reader version's fields **by name**: a field the writer's version lacks,
//! or that is not on the wire, is absent (see below, by the reader's field);
//! a field whose kind changed between versions makes the row an error row
//! unless the change only widens (int32 → int64, uint32 → uint64/int64,
//! float → double, enum → string).
//!
//! | protobuf | Arrow |
//! | --- | --- |
//! | double, float, bool | Float64, Float32, Boolean |
//! | int32, sint32, sfixed32 / int64, sint64, sfixed64 | Int32 / Int64 |
//! | uint32, fixed32 / uint64, fixed64 | UInt32 / UInt64 |
//! | string, bytes | Utf8, Binary |
//! | enum | Utf8: the value's name (a number the enum lacks: its decimal text) |
//! | message (well-known types included) | Struct of its fields |
//! | repeated T | List(T) |
//! | map<K, V> | Map(K, V) (entries sorted by key) |
//! | a message inside itself (recursion), nesting past [`MAX_DEPTH`] | Utf8: the value as JSON |
//!
//! Absent fields: a field without presence (a proto3 scalar, enum, repeated
//! or map field) gives its default, as protobuf does; a field with presence
//! (a message, `optional`, a `oneof` member, any proto2 singular) gives null.
//!
//! One file on purpose (about 600 lines): its three sections (the
//! definition's column shapes, decoding a payload into values of those
//! shapes, and the Arrow columns built from them) are the three parts of the
//! one mapping in the table above, joined by `Shape` and `PValue`; a kind
//! added or changed touches all three together.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Float32Builder, Float64Builder, Int32Builder, Int64Builder,
    StringBuilder, UInt32Builder, UInt64Builder,
};
use arrow_array::{new_null_array, ArrayRef, ListArray, MapArray, StructArray};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields};
use base64::Engine as _;
use prost_reflect::{
    DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor,
    ReflectMessage, Value,
};
use serde_json::Value as Json;

use super::guard::MAX_DEPTH;
use super::SchemaError;

/// A PROTOBUF_NATIVE definition: the root message and its columns' shapes.
#[derive(Debug, Clone)]
pub(crate) struct ProtoDef {
    pub root: MessageDescriptor,
    /// The root's fields, in declaration order, with their column shapes.
    pub fields: Arc<Vec<(FieldDescriptor, Shape)>>,
}

/// How a protobuf field becomes an Arrow column.
#[derive(Debug, Clone)]
pub(crate) enum Shape {
    Bool,
    I32,
    I64,
    U32,
    U64,
    F32,
    F64,
    Utf8,
    Binary,
    /// An enum: its value's name.
    Enum,
    Struct(Arc<Vec<(FieldDescriptor, Shape)>>),
    List(Box<Shape>),
    Map(Box<Shape>, Box<Shape>),
    /// A recursive or too deeply nested message: JSON text.
    Json,
}

/// A decoded value in the reader's shape.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PValue {
    Null,
    Bool(bool),
    I32(i32),
    I64(i64),
    U32(u32),
    U64(u64),
    F32(f32),
    F64(f64),
    Str(String),
    Bytes(Vec<u8>),
    /// The reader message's fields, in its declaration order.
    Msg(Vec<PValue>),
    List(Vec<PValue>),
    Map(Vec<(PValue, PValue)>),
}

fn definition_error(why: impl std::fmt::Display) -> SchemaError {
    SchemaError::Definition(format!("PROTOBUF_NATIVE schema definition: {why}"))
}

impl ProtoDef {
    /// Parses Pulsar's `ProtobufNativeSchemaData` JSON.
    pub fn parse(definition: &[u8]) -> Result<Self, SchemaError> {
        let json: serde_json::Map<String, Json> = serde_json::from_slice(definition).map_err(|e| {
            definition_error(format!(
                "not the JSON of {{fileDescriptorSet, rootMessageTypeName, rootFileDescriptorName}}: {e}"
            ))
        })?;
        let text = |name: &str| -> Result<&str, SchemaError> {
            json.get(name)
                .and_then(Json::as_str)
                .ok_or_else(|| definition_error(format!("no {name} text")))
        };
        let set = base64::engine::general_purpose::STANDARD
            .decode(text("fileDescriptorSet")?)
            .map_err(|e| definition_error(format!("fileDescriptorSet is not base64: {e}")))?;
        let root_name = text("rootMessageTypeName")?;
        let root_file = text("rootFileDescriptorName")?;
        let pool = DescriptorPool::decode(set.as_slice())
            .map_err(|e| definition_error(format!("invalid fileDescriptorSet: {e}")))?;
        let root = pool.get_message_by_name(root_name).ok_or_else(|| {
            definition_error(format!(
                "root message {root_name:?} is not in the descriptor set"
            ))
        })?;
        if root.parent_file().name() != root_file {
            return Err(definition_error(format!(
                "root message {root_name:?} is declared in {:?}, not in rootFileDescriptorName {root_file:?}",
                root.parent_file().name()
            )));
        }
        Ok(Self::from_root(root))
    }

    /// The definition of `root` (its descriptors' pool holds its imports).
    pub fn from_root(root: MessageDescriptor) -> Self {
        let mut stack = vec![root.full_name().to_string()];
        let fields = Arc::new(message_fields(&root, &mut stack));
        ProtoDef { root, fields }
    }
}

fn message_fields(m: &MessageDescriptor, stack: &mut Vec<String>) -> Vec<(FieldDescriptor, Shape)> {
    m.fields()
        .map(|f| {
            let shape = field_shape(&f, stack);
            (f, shape)
        })
        .collect()
}

fn field_shape(f: &FieldDescriptor, stack: &mut Vec<String>) -> Shape {
    if f.is_map() {
        if let Kind::Message(entry) = f.kind() {
            let key = kind_shape(&entry.map_entry_key_field().kind(), stack);
            let value = kind_shape(&entry.map_entry_value_field().kind(), stack);
            return Shape::Map(Box::new(key), Box::new(value));
        }
    }
    let item = kind_shape(&f.kind(), stack);
    if f.is_list() {
        Shape::List(Box::new(item))
    } else {
        item
    }
}

fn kind_shape(kind: &Kind, stack: &mut Vec<String>) -> Shape {
    match kind {
        Kind::Double => Shape::F64,
        Kind::Float => Shape::F32,
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Shape::I32,
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Shape::I64,
        Kind::Uint32 | Kind::Fixed32 => Shape::U32,
        Kind::Uint64 | Kind::Fixed64 => Shape::U64,
        Kind::Bool => Shape::Bool,
        Kind::String => Shape::Utf8,
        Kind::Bytes => Shape::Binary,
        Kind::Enum(_) => Shape::Enum,
        Kind::Message(m) => {
            let name = m.full_name();
            if stack.iter().any(|s| s == name) || stack.len() >= MAX_DEPTH {
                return Shape::Json;
            }
            stack.push(name.to_string());
            let fields = message_fields(m, stack);
            stack.pop();
            Shape::Struct(Arc::new(fields))
        }
    }
}

/// The Arrow type of a shape's values.
pub(crate) fn data_type(shape: &Shape) -> DataType {
    match shape {
        Shape::Bool => DataType::Boolean,
        Shape::I32 => DataType::Int32,
        Shape::I64 => DataType::Int64,
        Shape::U32 => DataType::UInt32,
        Shape::U64 => DataType::UInt64,
        Shape::F32 => DataType::Float32,
        Shape::F64 => DataType::Float64,
        Shape::Utf8 | Shape::Enum | Shape::Json => DataType::Utf8,
        Shape::Binary => DataType::Binary,
        Shape::Struct(fields) => DataType::Struct(struct_fields(fields)),
        Shape::List(item) => DataType::List(Arc::new(Field::new("item", data_type(item), true))),
        Shape::Map(k, v) => DataType::Map(Arc::new(map_entries(k, v)), false),
    }
}

fn struct_fields(fields: &[(FieldDescriptor, Shape)]) -> Fields {
    Fields::from(
        fields
            .iter()
            .map(|(f, s)| Field::new(f.name(), data_type(s), true))
            .collect::<Vec<_>>(),
    )
}

fn map_entries(k: &Shape, v: &Shape) -> Field {
    Field::new(
        "entries",
        DataType::Struct(Fields::from(vec![
            Field::new("key", data_type(k), false),
            Field::new("value", data_type(v), true),
        ])),
        false,
    )
}

// ------------------------------------------------------------ decoding

/// A payload written with `writer`, projected onto `reader`'s fields.
pub(crate) fn proto_value(
    writer: &ProtoDef,
    reader: &ProtoDef,
    bytes: &[u8],
) -> Result<PValue, String> {
    let message = DynamicMessage::decode(writer.root.clone(), bytes)
        .map_err(|e| format!("protobuf message does not match its writer schema: {e}"))?;
    project(&message, &reader.fields, "")
}

fn path(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

fn project(
    message: &DynamicMessage,
    fields: &[(FieldDescriptor, Shape)],
    prefix: &str,
) -> Result<PValue, String> {
    let desc = message.descriptor();
    let mut out = Vec::with_capacity(fields.len());
    for (rf, shape) in fields {
        let at = path(prefix, rf.name());
        let written = desc.get_field_by_name(rf.name());
        if let Some(wf) = &written {
            if wf.is_map() != rf.is_map() || wf.is_list() != rf.is_list() {
                return Err(format!(
                    "field {at}: {} in the writer's schema, {} in the reader's",
                    cardinality(wf),
                    cardinality(rf)
                ));
            }
        }
        let v = match written.filter(|wf| message.has_field(wf)) {
            Some(wf) => convert(&message.get_field(&wf), &wf.kind(), shape, &at)?,
            // Absent (not on the wire, or not in the writer's version): what the reader's
            // field is when absent.
            None if rf.supports_presence() => PValue::Null,
            None => convert(&rf.default_value(), &rf.kind(), shape, &at)?,
        };
        out.push(v);
    }
    Ok(PValue::Msg(out))
}

fn cardinality(f: &FieldDescriptor) -> &'static str {
    if f.is_map() {
        "a map"
    } else if f.is_list() {
        "repeated"
    } else {
        "singular"
    }
}

fn kind_name(kind: &Kind) -> String {
    match kind {
        Kind::Message(m) => format!("message {}", m.full_name()),
        Kind::Enum(e) => format!("enum {}", e.full_name()),
        other => format!("{other:?}").to_ascii_lowercase(),
    }
}

fn shape_name(shape: &Shape) -> &'static str {
    match shape {
        Shape::Bool => "bool",
        Shape::I32 => "a 32-bit integer",
        Shape::I64 => "a 64-bit integer",
        Shape::U32 => "an unsigned 32-bit integer",
        Shape::U64 => "an unsigned 64-bit integer",
        Shape::F32 => "float",
        Shape::F64 => "double",
        Shape::Utf8 => "string",
        Shape::Binary => "bytes",
        Shape::Enum => "an enum",
        Shape::Struct(_) => "a message",
        Shape::List(_) => "a list",
        Shape::Map(..) => "a map",
        Shape::Json => "a message",
    }
}

/// One value of a writer field (`wkind`: its kind; a map's is its entry
/// message) in the reader's `shape`.
fn convert(value: &Value, wkind: &Kind, shape: &Shape, at: &str) -> Result<PValue, String> {
    let mismatch = || {
        format!(
            "field {at}: written as {}, read as {}",
            kind_name(wkind),
            shape_name(shape)
        )
    };
    Ok(match (shape, value) {
        (Shape::Json, v) => PValue::Str(json_of(v, wkind, 0)?.to_string()),
        (Shape::List(item), Value::List(items)) => PValue::List(
            items
                .iter()
                .map(|x| convert(x, wkind, item, at))
                .collect::<Result<_, _>>()?,
        ),
        (Shape::Map(ks, vs), Value::Map(entries)) => {
            let Kind::Message(entry) = wkind else {
                return Err(mismatch());
            };
            let wkey = entry.map_entry_key_field();
            let wval = entry.map_entry_value_field();
            let sorted: BTreeMap<&MapKey, &Value> = entries.iter().collect();
            let mut out = Vec::with_capacity(sorted.len());
            for (k, v) in sorted {
                let key = convert(&map_key_value(k), &wkey.kind(), ks, at)?;
                let value = convert(v, &wval.kind(), vs, at)?;
                out.push((key, value));
            }
            PValue::Map(out)
        }
        (Shape::Struct(fields), Value::Message(m)) => project(m, fields, at)?,
        (Shape::Bool, Value::Bool(b)) => PValue::Bool(*b),
        (Shape::I32, Value::I32(x)) => PValue::I32(*x),
        (Shape::I64, Value::I64(x)) => PValue::I64(*x),
        (Shape::I64, Value::I32(x)) => PValue::I64(i64::from(*x)),
        (Shape::I64, Value::U32(x)) => PValue::I64(i64::from(*x)),
        (Shape::U32, Value::U32(x)) => PValue::U32(*x),
        (Shape::U64, Value::U64(x)) => PValue::U64(*x),
        (Shape::U64, Value::U32(x)) => PValue::U64(u64::from(*x)),
        (Shape::F32, Value::F32(x)) => PValue::F32(*x),
        (Shape::F64, Value::F64(x)) => PValue::F64(*x),
        (Shape::F64, Value::F32(x)) => PValue::F64(f64::from(*x)),
        (Shape::Utf8, Value::String(s)) => PValue::Str(s.clone()),
        (Shape::Binary, Value::Bytes(b)) => PValue::Bytes(b.to_vec()),
        (Shape::Enum | Shape::Utf8, Value::EnumNumber(n)) => PValue::Str(enum_name(wkind, *n)),
        _ => return Err(mismatch()),
    })
}

fn map_key_value(k: &MapKey) -> Value {
    match k {
        MapKey::Bool(b) => Value::Bool(*b),
        MapKey::I32(x) => Value::I32(*x),
        MapKey::I64(x) => Value::I64(*x),
        MapKey::U32(x) => Value::U32(*x),
        MapKey::U64(x) => Value::U64(*x),
        MapKey::String(s) => Value::String(s.clone()),
    }
}

/// An enum number's name; a number the enum does not declare (proto3 enums
/// are open) as its decimal text.
fn enum_name(kind: &Kind, n: i32) -> String {
    match kind {
        Kind::Enum(e) => e
            .get_value(n)
            .map_or_else(|| n.to_string(), |v| v.name().to_string()),
        _ => n.to_string(),
    }
}

/// A value as JSON (the fields a message has set, under their proto names;
/// 64-bit integers as numbers, bytes as base64, enums by name).
fn json_of(value: &Value, kind: &Kind, depth: usize) -> Result<Json, String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "protobuf message nests deeper than {MAX_DEPTH} levels"
        ));
    }
    Ok(match value {
        Value::Bool(b) => Json::Bool(*b),
        Value::I32(x) => Json::from(*x),
        Value::I64(x) => Json::from(*x),
        Value::U32(x) => Json::from(*x),
        Value::U64(x) => Json::from(*x),
        Value::F32(x) => serde_json::Number::from_f64(f64::from(*x))
            .map_or_else(|| Json::String(x.to_string()), Json::Number),
        Value::F64(x) => serde_json::Number::from_f64(*x)
            .map_or_else(|| Json::String(x.to_string()), Json::Number),
        Value::String(s) => Json::String(s.clone()),
        Value::Bytes(b) => Json::String(base64::engine::general_purpose::STANDARD.encode(b)),
        Value::EnumNumber(n) => Json::String(enum_name(kind, *n)),
        Value::List(items) => Json::Array(
            items
                .iter()
                .map(|x| json_of(x, kind, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Value::Map(entries) => {
            let Kind::Message(entry) = kind else {
                return Err("a protobuf map without its entry type".into());
            };
            let vkind = entry.map_entry_value_field().kind();
            let sorted: BTreeMap<&MapKey, &Value> = entries.iter().collect();
            let mut o = serde_json::Map::new();
            for (k, v) in sorted {
                let key = match k {
                    MapKey::Bool(b) => b.to_string(),
                    MapKey::I32(x) => x.to_string(),
                    MapKey::I64(x) => x.to_string(),
                    MapKey::U32(x) => x.to_string(),
                    MapKey::U64(x) => x.to_string(),
                    MapKey::String(s) => s.clone(),
                };
                o.insert(key, json_of(v, &vkind, depth + 1)?);
            }
            Json::Object(o)
        }
        Value::Message(m) => {
            let mut o = serde_json::Map::new();
            for f in m.descriptor().fields() {
                if m.has_field(&f) {
                    o.insert(
                        f.name().to_string(),
                        json_of(&m.get_field(&f), &f.kind(), depth + 1)?,
                    );
                }
            }
            Json::Object(o)
        }
    })
}

// ------------------------------------------------------------ columns

/// The columns of the root message's fields (`name` gives each column's
/// name), for one decoded value per row (`None`: a null row).
pub(crate) fn proto_columns(
    def: &ProtoDef,
    vals: &[Option<&PValue>],
    field_name: &dyn Fn(&str) -> String,
) -> Vec<(Field, ArrayRef)> {
    def.fields
        .iter()
        .enumerate()
        .map(|(i, (f, shape))| {
            let child: Vec<Option<&PValue>> = vals.iter().map(|v| field_of(*v, i)).collect();
            let array = to_array(shape, &child);
            (
                Field::new(field_name(f.name()), array.data_type().clone(), true),
                array,
            )
        })
        .collect()
}

fn field_of(v: Option<&PValue>, i: usize) -> Option<&PValue> {
    match v {
        Some(PValue::Msg(fields)) => fields.get(i).filter(|x| !matches!(x, PValue::Null)),
        _ => None,
    }
}

macro_rules! scalars {
    ($builder:expr, $vals:expr, $pat:pat => $out:expr) => {{
        let mut b = $builder;
        for v in $vals {
            match v {
                Some($pat) => b.append_value($out),
                _ => b.append_null(),
            }
        }
        Arc::new(b.finish()) as ArrayRef
    }};
}

fn nulls_of<T>(rows: &[Option<T>]) -> NullBuffer {
    NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>())
}

/// The Arrow array of `vals` (values in `shape`, `None` or `Null` for null).
fn to_array(shape: &Shape, vals: &[Option<&PValue>]) -> ArrayRef {
    let vals: Vec<Option<&PValue>> = vals
        .iter()
        .map(|v| v.filter(|x| !matches!(x, PValue::Null)))
        .collect();
    let n = vals.len();
    match shape {
        Shape::Bool => scalars!(BooleanBuilder::with_capacity(n), &vals, PValue::Bool(x) => *x),
        Shape::I32 => scalars!(Int32Builder::with_capacity(n), &vals, PValue::I32(x) => *x),
        Shape::I64 => scalars!(Int64Builder::with_capacity(n), &vals, PValue::I64(x) => *x),
        Shape::U32 => scalars!(UInt32Builder::with_capacity(n), &vals, PValue::U32(x) => *x),
        Shape::U64 => scalars!(UInt64Builder::with_capacity(n), &vals, PValue::U64(x) => *x),
        Shape::F32 => scalars!(Float32Builder::with_capacity(n), &vals, PValue::F32(x) => *x),
        Shape::F64 => scalars!(Float64Builder::with_capacity(n), &vals, PValue::F64(x) => *x),
        Shape::Utf8 | Shape::Enum | Shape::Json => {
            scalars!(StringBuilder::with_capacity(n, 0), &vals, PValue::Str(x) => x.as_str())
        }
        Shape::Binary => {
            scalars!(BinaryBuilder::with_capacity(n, 0), &vals, PValue::Bytes(x) => x.as_slice())
        }
        Shape::Struct(fields) => {
            let rows: Vec<Option<&Vec<PValue>>> = vals
                .iter()
                .map(|v| match v {
                    Some(PValue::Msg(f)) => Some(f),
                    _ => None,
                })
                .collect();
            let nulls = nulls_of(&rows);
            if fields.is_empty() {
                return Arc::new(StructArray::new_empty_fields(n, Some(nulls)));
            }
            let children: Vec<ArrayRef> = fields
                .iter()
                .enumerate()
                .map(|(i, (_, s))| {
                    let child: Vec<Option<&PValue>> =
                        rows.iter().map(|r| r.and_then(|r| r.get(i))).collect();
                    to_array(s, &child)
                })
                .collect();
            let dt = struct_fields(fields);
            StructArray::try_new(dt.clone(), children, Some(nulls)).map_or_else(
                |_| new_null_array(&DataType::Struct(dt), n),
                |a| Arc::new(a),
            )
        }
        Shape::List(item) => {
            let rows: Vec<Option<&Vec<PValue>>> = vals
                .iter()
                .map(|v| match v {
                    Some(PValue::List(items)) => Some(items),
                    _ => None,
                })
                .collect();
            let flat: Vec<Option<&PValue>> = rows
                .iter()
                .flatten()
                .flat_map(|a| a.iter().map(Some))
                .collect();
            let child = to_array(item, &flat);
            let offsets = OffsetBuffer::from_lengths(rows.iter().map(|r| r.map_or(0, Vec::len)));
            let field = Arc::new(Field::new("item", data_type(item), true));
            ListArray::try_new(field.clone(), offsets, child, Some(nulls_of(&rows))).map_or_else(
                |_| new_null_array(&DataType::List(field), n),
                |a| Arc::new(a),
            )
        }
        Shape::Map(ks, vs) => {
            let rows: Vec<Option<&Vec<(PValue, PValue)>>> = vals
                .iter()
                .map(|v| match v {
                    Some(PValue::Map(e)) => Some(e),
                    _ => None,
                })
                .collect();
            let keys: Vec<Option<&PValue>> = rows
                .iter()
                .flatten()
                .flat_map(|e| e.iter().map(|(k, _)| Some(k)))
                .collect();
            let values: Vec<Option<&PValue>> = rows
                .iter()
                .flatten()
                .flat_map(|e| e.iter().map(|(_, v)| Some(v)))
                .collect();
            let entries_field = map_entries(ks, vs);
            let field = Arc::new(entries_field.clone());
            let DataType::Struct(entry_fields) = entries_field.data_type().clone() else {
                return new_null_array(&DataType::Map(field, false), n);
            };
            let entries = StructArray::try_new(
                entry_fields,
                vec![to_array(ks, &keys), to_array(vs, &values)],
                None,
            );
            let offsets = OffsetBuffer::from_lengths(rows.iter().map(|r| r.map_or(0, Vec::len)));
            entries
                .and_then(|e| {
                    MapArray::try_new(field.clone(), offsets, e, Some(nulls_of(&rows)), false)
                })
                .map_or_else(
                    |_| new_null_array(&DataType::Map(field, false), n),
                    |a| Arc::new(a),
                )
        }
    }
}
