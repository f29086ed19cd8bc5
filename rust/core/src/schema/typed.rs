//! A decoded message table → the same rows with the topic's schema as typed
//! columns.
//!
//! The latest schema version is the reader schema; each message is read with
//! the version its `schema_version` names (8 bytes, big-endian; none: the
//! latest) and resolved to the reader schema. A message that cannot be read
//! keeps its row and its `value` bytes, with the reason in `error`.
//!
//! Columns: the input's columns in their order (`value` only when
//! [`TypedOptions::value_column`]; `error` added when absent), then the typed
//! ones:
//! - a record schema's fields (a PROTOBUF_NATIVE root message's fields), one
//!   column each, under the field's name, or `__value.<name>` where the name
//!   is one of the input's columns;
//! - any other value schema: one column, `__value__`;
//! - KeyValue: the key's fields as `__key.<name>` (a non-record key:
//!   `__key__`), then the value's as above.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use apache_avro::schema::Schema;
use apache_avro::types::Value;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryArray, BooleanArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema as ArrowSchema, TimeUnit};
use base64::Engine as _;

use super::columns::{to_array, unwrap, Cx};
use super::info::{SchemaType, TopicSchema};
use super::protobuf::{proto_columns, proto_value, PValue};
use super::values::{avro_value, json_value, primitive_schema, primitive_value, AvroDef, Codec};
use super::SchemaError;

/// Options of the typed decode.
#[derive(Debug, Clone, Copy)]
pub struct TypedOptions {
    /// Keep the raw `value` bytes beside the typed columns.
    pub value_column: bool,
    /// Read each message with the version its `schema_version` names; when
    /// false every message is read with the latest (a schema the user gave).
    pub by_version: bool,
}

impl Default for TypedOptions {
    fn default() -> Self {
        TypedOptions {
            value_column: true,
            by_version: true,
        }
    }
}

/// One side of a message, decoded: an Avro value (AVRO, JSON, the
/// primitives) or a protobuf one (PROTOBUF_NATIVE).
enum Decoded {
    Avro(Value),
    Proto(PValue),
}

/// One row's decoded sides.
#[derive(Default)]
struct Row {
    key: Option<Decoded>,
    value: Option<Decoded>,
    error: Option<String>,
}

fn decode_side(
    writer: &Codec,
    reader: &Codec,
    same: bool,
    bytes: &[u8],
) -> Result<Decoded, String> {
    let avro = |v: Result<Value, String>| v.map(Decoded::Avro);
    match (writer, reader) {
        (Codec::Avro(w), Codec::Avro(r)) => avro(avro_value(w, (!same).then_some(r), bytes)),
        (Codec::Json(_), Codec::Json(r)) => avro(json_value(r, bytes)),
        (Codec::Primitive(w), Codec::Primitive(r)) if same_primitive(*w, *r) => {
            avro(primitive_value(*r, bytes))
        }
        (Codec::ProtobufNative(w), Codec::ProtobufNative(r)) => {
            proto_value(w, r, bytes).map(Decoded::Proto)
        }
        _ => Err(format!(
            "written with a {} schema, the reader schema is {}",
            writer.type_name(),
            reader.type_name()
        )),
    }
}

fn same_primitive(a: SchemaType, b: SchemaType) -> bool {
    let bytes = |t| matches!(t, SchemaType::Bytes | SchemaType::None);
    a == b || (bytes(a) && bytes(b))
}

fn inline_part<'a>(payload: &'a [u8], at: &mut usize) -> Result<Option<&'a [u8]>, String> {
    let head = payload
        .get(*at..*at + 4)
        .ok_or_else(|| format!("KeyValue payload of {} bytes is truncated", payload.len()))?;
    let len = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    *at += 4;
    if len < 0 {
        return Ok(None);
    }
    let part = payload.get(*at..*at + len as usize).ok_or_else(|| {
        format!(
            "KeyValue payload of {} bytes is truncated: a part of {len} bytes at offset {at}",
            payload.len()
        )
    })?;
    *at += len as usize;
    Ok(Some(part))
}

struct MessageKey<'a> {
    key: Option<&'a str>,
    b64: bool,
}

/// One message read with `writer` (`same`: it is the reader schema).
fn decode_row(
    writer: &Codec,
    reader: &Codec,
    same: bool,
    payload: Option<&[u8]>,
    key: MessageKey<'_>,
) -> Row {
    let result = (|| -> Result<(Option<Decoded>, Option<Decoded>), String> {
        match (writer, reader) {
            (
                Codec::KeyValue {
                    key: wk,
                    value: wv,
                    separated,
                },
                Codec::KeyValue {
                    key: rk, value: rv, ..
                },
            ) => {
                let (kb, vb): (Option<Vec<u8>>, Option<&[u8]>) = if *separated {
                    let kb = match key.key {
                        None => None,
                        Some(k) if key.b64 => Some(
                            base64::engine::general_purpose::STANDARD
                                .decode(k)
                                .map_err(|e| format!("message key is not base64: {e}"))?,
                        ),
                        Some(k) => Some(k.as_bytes().to_vec()),
                    };
                    (kb, payload)
                } else {
                    match payload {
                        None => (None, None),
                        Some(p) => {
                            let mut at = 0;
                            let k = inline_part(p, &mut at)?;
                            let v = inline_part(p, &mut at)?;
                            (k.map(<[u8]>::to_vec), v)
                        }
                    }
                };
                let k = kb
                    .map(|b| decode_side(wk, rk, same, &b).map_err(|e| format!("key: {e}")))
                    .transpose()?;
                let v = vb
                    .map(|b| decode_side(wv, rv, same, b).map_err(|e| format!("value: {e}")))
                    .transpose()?;
                Ok((k, v))
            }
            _ => Ok((
                None,
                payload
                    .map(|p| decode_side(writer, reader, same, p))
                    .transpose()?,
            )),
        }
    })();
    match result {
        Ok((key, value)) => Row {
            key,
            value,
            error: None,
        },
        Err(e) => Row {
            error: Some(e),
            ..Row::default()
        },
    }
}

/// The typed columns of one side (key or value) of the reader schema.
fn side_columns(
    codec: &Codec,
    decoded: &[Option<&Decoded>],
    single: &str,
    field_name: &dyn Fn(&str) -> String,
) -> Vec<(Field, ArrayRef)> {
    if let Codec::ProtobufNative(def) = codec {
        let vals: Vec<Option<&PValue>> = decoded
            .iter()
            .map(|d| match d {
                Some(Decoded::Proto(v)) => Some(v),
                _ => None,
            })
            .collect();
        return proto_columns(def, &vals, field_name);
    }
    let vals: Vec<Option<&Value>> = decoded
        .iter()
        .map(|d| match d {
            Some(Decoded::Avro(v)) => Some(v),
            _ => None,
        })
        .collect();
    let vals = vals.as_slice();
    match codec {
        Codec::Avro(def) | Codec::Json(def) => avro_columns(def, vals, single, field_name),
        Codec::Primitive(t) => {
            let schema = primitive_schema(*t);
            let names = Default::default();
            let mut cx = Cx::new(&names);
            let array = to_array(&schema, &mut cx, vals);
            let target = match t {
                SchemaType::Int8 => Some(DataType::Int8),
                SchemaType::Int16 => Some(DataType::Int16),
                SchemaType::LocalTime => Some(DataType::Time64(TimeUnit::Nanosecond)),
                _ => None,
            };
            let array = match target {
                // The values fit their type by construction (decoded from 1, 2 or 8 bytes).
                Some(dt) => arrow_cast::cast(&array, &dt).unwrap_or(array),
                None => array,
            };
            vec![(Field::new(single, array.data_type().clone(), true), array)]
        }
        Codec::KeyValue { .. } | Codec::ProtobufNative(_) => Vec::new(),
    }
}

fn avro_columns(
    def: &AvroDef,
    vals: &[Option<&Value>],
    single: &str,
    field_name: &dyn Fn(&str) -> String,
) -> Vec<(Field, ArrayRef)> {
    let mut cx = Cx::new(&def.names);
    let schema = match &def.schema {
        Schema::Ref { name } => def.names.get(name).unwrap_or(&def.schema),
        s => s,
    };
    match schema {
        Schema::Record(r) => r
            .fields
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let child: Vec<Option<&Value>> = vals
                    .iter()
                    .map(|v| match v.and_then(unwrap) {
                        Some(Value::Record(fields)) => match fields.get(i) {
                            Some((n, x)) if *n == f.name => Some(x),
                            _ => fields.iter().find(|(n, _)| *n == f.name).map(|(_, x)| x),
                        },
                        _ => None,
                    })
                    .collect();
                let array = to_array(&f.schema, &mut cx, &child);
                (
                    Field::new(field_name(&f.name), array.data_type().clone(), true),
                    array,
                )
            })
            .collect(),
        other => {
            let array = to_array(other, &mut cx, vals);
            vec![(Field::new(single, array.data_type().clone(), true), array)]
        }
    }
}

fn binary_column<'a>(
    batch: &'a RecordBatch,
    name: &str,
) -> Result<Option<&'a BinaryArray>, SchemaError> {
    match batch.column_by_name(name) {
        None => Ok(None),
        Some(c) => c.as_binary_opt::<i32>().map(Some).ok_or_else(|| {
            SchemaError::Input(format!(
                "column {name:?} must be binary, not {}",
                c.data_type()
            ))
        }),
    }
}

fn string_column<'a>(
    batch: &'a RecordBatch,
    name: &str,
) -> Result<Option<&'a StringArray>, SchemaError> {
    match batch.column_by_name(name) {
        None => Ok(None),
        Some(c) => c.as_string_opt::<i32>().map(Some).ok_or_else(|| {
            SchemaError::Input(format!(
                "column {name:?} must be a string, not {}",
                c.data_type()
            ))
        }),
    }
}

fn bool_column<'a>(
    batch: &'a RecordBatch,
    name: &str,
) -> Result<Option<&'a BooleanArray>, SchemaError> {
    match batch.column_by_name(name) {
        None => Ok(None),
        Some(c) => c.as_boolean_opt().map(Some).ok_or_else(|| {
            SchemaError::Input(format!(
                "column {name:?} must be boolean, not {}",
                c.data_type()
            ))
        }),
    }
}

/// [`typed_batch`] over every non-empty batch of a message table with
/// schema `input`, and the output schema (known without any batch).
pub fn typed_batches(
    input: arrow_schema::SchemaRef,
    batches: &[RecordBatch],
    schema: &TopicSchema,
    options: &TypedOptions,
) -> Result<(Vec<RecordBatch>, arrow_schema::SchemaRef), SchemaError> {
    let output = typed_batch(&RecordBatch::new_empty(input), schema, options)?.schema();
    let filled = batches.iter().filter(|b| b.num_rows() > 0);
    let out = filled.map(|b| typed_batch(b, schema, options));
    Ok((out.collect::<Result<_, _>>()?, output))
}

/// Decodes the `value` column of a decoded message table with the topic's
/// schema (see the module docs for the columns).
pub fn typed_batch(
    messages: &RecordBatch,
    schema: &TopicSchema,
    options: &TypedOptions,
) -> Result<RecordBatch, SchemaError> {
    let latest = schema
        .latest()
        .ok_or_else(|| SchemaError::Definition("the topic schema has no versions".into()))?;
    let reader = Codec::new(latest)?;
    let mut writers: BTreeMap<i64, Result<Codec, String>> = BTreeMap::new();
    for v in &schema.versions {
        let codec = if v.version == latest.version {
            Ok(reader.clone())
        } else {
            Codec::new(v).map_err(|e| format!("schema version {}: {e}", v.version))
        };
        writers.insert(v.version, codec);
    }

    let value = binary_column(messages, "value")?
        .ok_or_else(|| SchemaError::Input("the message table has no \"value\" column".into()))?;
    let versions = binary_column(messages, "schema_version")?;
    let keys = string_column(messages, "key")?;
    let b64 = bool_column(messages, "key_b64_encoded")?;
    let errors = string_column(messages, "error")?;

    let n = messages.num_rows();
    let mut rows: Vec<Row> = Vec::with_capacity(n);
    for i in 0..n {
        let prior = errors.and_then(|e| e.is_valid(i).then(|| e.value(i)));
        let payload = value.is_valid(i).then(|| value.value(i));
        if prior.is_some() && payload.is_none() {
            // The entry itself could not be decoded: nothing to type.
            rows.push(Row::default());
            continue;
        }
        let named = versions.filter(|v| options.by_version && v.is_valid(i));
        let version = match named.map(|v| v.value(i)) {
            None | Some([]) => Ok(latest.version),
            Some(b) => <[u8; 8]>::try_from(b)
                .map(i64::from_be_bytes)
                .map_err(|_| format!("schema version of {} bytes, expected 8", b.len())),
        };
        let writer = version.and_then(|v| match writers.get(&v) {
            Some(Ok(c)) => Ok((c, v == latest.version)),
            Some(Err(e)) => Err(e.clone()),
            None => Err(format!(
                "schema version {v} is not among the topic's versions {:?}",
                writers.keys().collect::<Vec<_>>()
            )),
        });
        let key = MessageKey {
            key: keys.and_then(|k| k.is_valid(i).then(|| k.value(i))),
            b64: b64.is_some_and(|b| b.is_valid(i) && b.value(i)),
        };
        rows.push(match writer {
            Ok((w, same)) => decode_row(w, &reader, same, payload, key),
            Err(e) => Row {
                error: Some(e),
                ..Row::default()
            },
        });
    }

    // The input's columns, `value` only when asked for, `error` merged.
    let taken: HashSet<String> = messages
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let merged_error: ArrayRef = Arc::new(
        (0..n)
            .map(|i| {
                let prior = errors.and_then(|e| e.is_valid(i).then(|| e.value(i).to_string()));
                prior.or_else(|| rows[i].error.clone())
            })
            .collect::<StringArray>(),
    );
    let mut fields: Vec<Field> = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for (f, c) in messages.schema().fields().iter().zip(messages.columns()) {
        if f.name() == "value" && !options.value_column {
            continue;
        }
        if f.name() == "error" {
            fields.push(Field::new("error", DataType::Utf8, true));
            columns.push(merged_error.clone());
        } else {
            fields.push(f.as_ref().clone());
            columns.push(c.clone());
        }
    }
    if errors.is_none() {
        fields.push(Field::new("error", DataType::Utf8, true));
        columns.push(merged_error);
    }

    let value_name = |name: &str| {
        if taken.contains(name) {
            format!("__value.{name}")
        } else {
            name.to_string()
        }
    };
    let mut typed: Vec<(Field, ArrayRef)> = Vec::new();
    let value_side = match &reader {
        Codec::KeyValue { key, value, .. } => {
            let kv: Vec<Option<&Decoded>> = rows.iter().map(|r| r.key.as_ref()).collect();
            typed.extend(side_columns(key, &kv, "__key__", &|f| format!("__key.{f}")));
            value.as_ref()
        }
        other => other,
    };
    let vv: Vec<Option<&Decoded>> = rows.iter().map(|r| r.value.as_ref()).collect();
    typed.extend(side_columns(value_side, &vv, "__value__", &value_name));
    for (f, c) in typed {
        fields.push(f);
        columns.push(c);
    }
    RecordBatch::try_new(Arc::new(ArrowSchema::new(fields)), columns)
        .map_err(|e| SchemaError::Input(format!("typed columns: {e}")))
}
