//! Avro schemas → Arrow types, and resolved Avro values → Arrow arrays.
//!
//! | Avro | Arrow |
//! | --- | --- |
//! | null, boolean, int, long, float, double | Null, Boolean, Int32, Int64, Float32, Float64 |
//! | bytes, string, enum, uuid | Binary, Utf8, Utf8 (the symbol), Utf8 |
//! | fixed(n), duration | FixedSizeBinary(n), FixedSizeBinary(12) |
//! | decimal(p ≤ 38, s) | Decimal128(p, s); wider: Utf8 (the unscaled integer's digits are lost otherwise) |
//! | date, time-millis, time-micros | Date32, Time32(ms), Time64(µs) |
//! | timestamp-{millis,micros,nanos} | Timestamp(unit, "UTC"); local-timestamp-*: Timestamp(unit) |
//! | record, array, map | Struct, List, Map (string keys) |
//! | union of null and one type | that type, nullable |
//! | any other union, a recursive reference | Utf8: the value as JSON text |

use std::sync::Arc;

use apache_avro::schema::{Name, Schema};
use apache_avro::types::Value;
use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Date32Builder, Decimal128Builder, FixedSizeBinaryBuilder,
    Float32Builder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
    Time32MillisecondBuilder, Time64MicrosecondBuilder, TimestampMicrosecondBuilder,
    TimestampMillisecondBuilder, TimestampNanosecondBuilder,
};
use arrow_array::{new_null_array, Array, ArrayRef, ListArray, MapArray, StructArray};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields, TimeUnit};

use super::guard::Names;

/// The UTC zone of Avro's timestamps.
const UTC: &str = "UTC";

/// How a schema becomes an Arrow column.
enum Shape<'a> {
    Null,
    Boolean,
    Int32,
    Int64,
    Float32,
    Float64,
    Binary,
    Utf8,
    Fixed(i32),
    Decimal(u8, i8),
    Date32,
    Time32Ms,
    Time64Us,
    Timestamp(TimeUnit, bool),
    Struct(&'a [apache_avro::schema::RecordField], &'a Name),
    List(&'a Schema),
    Map(&'a Schema),
    /// A union of null and one other type.
    Nullable(&'a Schema),
    JsonText,
}

/// Types being expanded (a reference to one of them is recursive).
pub(crate) struct Cx<'a> {
    pub names: &'a Names,
    stack: Vec<Name>,
}

impl<'a> Cx<'a> {
    pub fn new(names: &'a Names) -> Self {
        Cx {
            names,
            stack: Vec::new(),
        }
    }
}

fn shape<'a>(schema: &'a Schema, cx: &Cx<'a>) -> Shape<'a> {
    match schema {
        Schema::Null => Shape::Null,
        Schema::Boolean => Shape::Boolean,
        Schema::Int => Shape::Int32,
        Schema::Long => Shape::Int64,
        Schema::Float => Shape::Float32,
        Schema::Double => Shape::Float64,
        Schema::Bytes => Shape::Binary,
        Schema::String | Schema::Enum(_) | Schema::Uuid | Schema::BigDecimal => Shape::Utf8,
        Schema::Fixed(f) => i32::try_from(f.size).map_or(Shape::Binary, Shape::Fixed),
        Schema::Duration => Shape::Fixed(12),
        Schema::Decimal(d) => match (u8::try_from(d.precision), i8::try_from(d.scale)) {
            (Ok(p), Ok(s)) if (1..=38).contains(&p) && s as u8 <= p => Shape::Decimal(p, s),
            _ => Shape::Utf8,
        },
        Schema::Date => Shape::Date32,
        Schema::TimeMillis => Shape::Time32Ms,
        Schema::TimeMicros => Shape::Time64Us,
        Schema::TimestampMillis => Shape::Timestamp(TimeUnit::Millisecond, true),
        Schema::TimestampMicros => Shape::Timestamp(TimeUnit::Microsecond, true),
        Schema::TimestampNanos => Shape::Timestamp(TimeUnit::Nanosecond, true),
        Schema::LocalTimestampMillis => Shape::Timestamp(TimeUnit::Millisecond, false),
        Schema::LocalTimestampMicros => Shape::Timestamp(TimeUnit::Microsecond, false),
        Schema::LocalTimestampNanos => Shape::Timestamp(TimeUnit::Nanosecond, false),
        Schema::Record(r) => {
            if cx.stack.contains(&r.name) {
                Shape::JsonText
            } else {
                Shape::Struct(&r.fields, &r.name)
            }
        }
        Schema::Array(a) => Shape::List(&a.items),
        Schema::Map(m) => Shape::Map(&m.types),
        Schema::Union(u) => {
            let v = u.variants();
            match v {
                [Schema::Null, other] | [other, Schema::Null] => Shape::Nullable(other),
                [one] => shape(one, cx),
                _ => Shape::JsonText,
            }
        }
        Schema::Ref { name } => {
            if cx.stack.contains(name) {
                Shape::JsonText
            } else {
                match cx.names.get(name) {
                    Some(target) => shape(target, cx),
                    None => Shape::JsonText,
                }
            }
        }
    }
}

/// The named type a `Ref` (or the schema itself) stands for.
fn deref<'a>(schema: &'a Schema, cx: &Cx<'a>) -> &'a Schema {
    match schema {
        Schema::Ref { name } => cx.names.get(name).unwrap_or(schema),
        other => other,
    }
}

/// The Arrow type of an Avro schema's values, and whether they can be null.
pub(crate) fn arrow_type<'a>(schema: &'a Schema, cx: &mut Cx<'a>) -> (DataType, bool) {
    let schema = deref(schema, cx);
    let dt = match shape(schema, cx) {
        Shape::Null => return (DataType::Null, true),
        Shape::Nullable(inner) => return (arrow_type(inner, cx).0, true),
        Shape::Boolean => DataType::Boolean,
        Shape::Int32 => DataType::Int32,
        Shape::Int64 => DataType::Int64,
        Shape::Float32 => DataType::Float32,
        Shape::Float64 => DataType::Float64,
        Shape::Binary => DataType::Binary,
        Shape::Utf8 | Shape::JsonText => DataType::Utf8,
        Shape::Fixed(n) => DataType::FixedSizeBinary(n),
        Shape::Decimal(p, s) => DataType::Decimal128(p, s),
        Shape::Date32 => DataType::Date32,
        Shape::Time32Ms => DataType::Time32(TimeUnit::Millisecond),
        Shape::Time64Us => DataType::Time64(TimeUnit::Microsecond),
        Shape::Timestamp(unit, utc) => DataType::Timestamp(unit, utc.then(|| UTC.into())),
        Shape::Struct(fields, name) => {
            cx.stack.push(name.clone());
            let out = struct_fields(fields, cx);
            cx.stack.pop();
            DataType::Struct(out)
        }
        Shape::List(items) => {
            let (t, _) = arrow_type(items, cx);
            DataType::List(Arc::new(Field::new("item", t, true)))
        }
        Shape::Map(values) => {
            let (t, _) = arrow_type(values, cx);
            DataType::Map(Arc::new(map_entries(t, true)), false)
        }
    };
    (dt, false)
}

fn map_entries(value: DataType, nullable: bool) -> Field {
    Field::new(
        "entries",
        DataType::Struct(Fields::from(vec![
            Field::new("key", DataType::Utf8, false),
            Field::new("value", value, nullable),
        ])),
        false,
    )
}

fn struct_fields<'a>(fields: &'a [apache_avro::schema::RecordField], cx: &mut Cx<'a>) -> Fields {
    Fields::from(
        fields
            .iter()
            .map(|f| {
                let (t, _) = arrow_type(&f.schema, cx);
                // A struct's child may be null where the struct is (a null row).
                Field::new(&f.name, t, true)
            })
            .collect::<Vec<_>>(),
    )
}

/// A value without its union wrapper; `None` for null.
pub(crate) fn unwrap(v: &Value) -> Option<&Value> {
    match v {
        Value::Union(_, inner) => unwrap(inner),
        Value::Null => None,
        other => Some(other),
    }
}

fn json_text(v: &Value) -> Option<String> {
    serde_json::Value::try_from(v.clone())
        .ok()
        .map(|j| j.to_string())
}

fn decimal_i128(v: &Value) -> Option<i128> {
    let bytes = match v {
        Value::Decimal(d) => Vec::<u8>::try_from(d).ok()?,
        Value::Bytes(b) | Value::Fixed(_, b) => b.clone(),
        _ => return None,
    };
    if bytes.is_empty() || bytes.len() > 16 {
        return (bytes.is_empty()).then_some(0);
    }
    let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0 };
    let mut full = [fill; 16];
    full[16 - bytes.len()..].copy_from_slice(&bytes);
    Some(i128::from_be_bytes(full))
}

fn decimal_text(v: &Value) -> Option<String> {
    match v {
        Value::BigDecimal(d) => Some(d.to_string()),
        Value::String(s) => Some(s.clone()),
        Value::Decimal(d) => {
            let bytes = Vec::<u8>::try_from(d).ok()?;
            decimal_i128(&Value::Bytes(bytes)).map(|i| i.to_string())
        }
        _ => None,
    }
}

macro_rules! primitive {
    ($builder:ty, $vals:expr, $pat:pat => $out:expr) => {{
        let mut b = <$builder>::with_capacity($vals.len());
        for v in $vals {
            match v.and_then(unwrap) {
                Some($pat) => b.append_value($out),
                _ => b.append_null(),
            }
        }
        Arc::new(b.finish()) as ArrayRef
    }};
}

/// The Arrow array of `vals` (one per row, `None` for a null row), which are
/// values of `schema` (resolved, so each has the schema's shape; a value that
/// does not is null).
pub(crate) fn to_array<'a>(
    schema: &'a Schema,
    cx: &mut Cx<'a>,
    vals: &[Option<&Value>],
) -> ArrayRef {
    let schema = deref(schema, cx);
    match shape(schema, cx) {
        Shape::Null => new_null_array(&DataType::Null, vals.len()),
        Shape::Nullable(inner) => to_array(inner, cx, vals),
        Shape::Boolean => primitive!(BooleanBuilder, vals, Value::Boolean(x) => *x),
        Shape::Int32 => primitive!(Int32Builder, vals, Value::Int(x) => *x),
        Shape::Int64 => primitive!(Int64Builder, vals, Value::Long(x) => *x),
        Shape::Float32 => primitive!(Float32Builder, vals, Value::Float(x) => *x),
        Shape::Float64 => primitive!(Float64Builder, vals, Value::Double(x) => *x),
        Shape::Binary => {
            let mut b = BinaryBuilder::with_capacity(vals.len(), 0);
            for v in vals {
                match v.and_then(unwrap) {
                    Some(Value::Bytes(x)) | Some(Value::Fixed(_, x)) => b.append_value(x),
                    _ => b.append_null(),
                }
            }
            Arc::new(b.finish())
        }
        Shape::Utf8 => {
            let mut b = StringBuilder::with_capacity(vals.len(), 0);
            for v in vals {
                match v.and_then(unwrap) {
                    Some(Value::String(s)) | Some(Value::Enum(_, s)) => b.append_value(s),
                    Some(Value::Uuid(u)) => b.append_value(u.to_string()),
                    Some(other) => match decimal_text(other) {
                        Some(s) => b.append_value(s),
                        None => b.append_null(),
                    },
                    None => b.append_null(),
                }
            }
            Arc::new(b.finish())
        }
        Shape::JsonText => {
            let mut b = StringBuilder::with_capacity(vals.len(), 0);
            for v in vals {
                match v.and_then(unwrap).and_then(json_text) {
                    Some(s) => b.append_value(s),
                    None => b.append_null(),
                }
            }
            Arc::new(b.finish())
        }
        Shape::Fixed(n) => {
            let mut b = FixedSizeBinaryBuilder::with_capacity(vals.len(), n);
            for v in vals {
                let bytes: Option<Vec<u8>> = match v.and_then(unwrap) {
                    Some(Value::Fixed(_, x)) | Some(Value::Bytes(x)) => Some(x.clone()),
                    Some(Value::Duration(d)) => Some(<[u8; 12]>::from(*d).to_vec()),
                    _ => None,
                };
                match bytes {
                    Some(x) if x.len() == n as usize => {
                        // The length is checked: appending cannot fail.
                        let _ = b.append_value(&x);
                    }
                    _ => b.append_null(),
                }
            }
            Arc::new(b.finish())
        }
        Shape::Decimal(p, s) => {
            let mut b = Decimal128Builder::with_capacity(vals.len());
            for v in vals {
                match v.and_then(unwrap).and_then(decimal_i128) {
                    Some(x) => b.append_value(x),
                    None => b.append_null(),
                }
            }
            match b.finish().with_precision_and_scale(p, s) {
                Ok(a) => Arc::new(a),
                Err(_) => new_null_array(&DataType::Decimal128(p, s), vals.len()),
            }
        }
        Shape::Date32 => primitive!(Date32Builder, vals, Value::Date(x) => *x),
        Shape::Time32Ms => primitive!(Time32MillisecondBuilder, vals, Value::TimeMillis(x) => *x),
        Shape::Time64Us => primitive!(Time64MicrosecondBuilder, vals, Value::TimeMicros(x) => *x),
        Shape::Timestamp(unit, utc) => {
            let tz: Option<Arc<str>> = utc.then(|| UTC.into());
            match unit {
                TimeUnit::Millisecond => {
                    let a = primitive!(TimestampMillisecondBuilder, vals,
                        Value::TimestampMillis(x) | Value::LocalTimestampMillis(x) => *x);
                    retz(a, tz)
                }
                TimeUnit::Microsecond => {
                    let a = primitive!(TimestampMicrosecondBuilder, vals,
                        Value::TimestampMicros(x) | Value::LocalTimestampMicros(x) => *x);
                    retz(a, tz)
                }
                _ => {
                    let a = primitive!(TimestampNanosecondBuilder, vals,
                        Value::TimestampNanos(x) | Value::LocalTimestampNanos(x) => *x);
                    retz(a, tz)
                }
            }
        }
        Shape::Struct(fields, name) => {
            cx.stack.push(name.clone());
            let rows: Vec<Option<&Vec<(String, Value)>>> = vals
                .iter()
                .map(|v| match v.and_then(unwrap) {
                    Some(Value::Record(r)) => Some(r),
                    _ => None,
                })
                .collect();
            let arrow_fields = struct_fields(fields, cx);
            let mut children = Vec::with_capacity(fields.len());
            for (i, f) in fields.iter().enumerate() {
                let child: Vec<Option<&Value>> = rows
                    .iter()
                    .map(|r| {
                        r.and_then(|r| {
                            // Resolved records keep the schema's field order.
                            match r.get(i) {
                                Some((n, v)) if *n == f.name => Some(v),
                                _ => r.iter().find(|(n, _)| *n == f.name).map(|(_, v)| v),
                            }
                        })
                    })
                    .collect();
                children.push(to_array(&f.schema, cx, &child));
            }
            cx.stack.pop();
            let nulls = NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>());
            if fields.is_empty() {
                return Arc::new(StructArray::new_empty_fields(rows.len(), Some(nulls)));
            }
            match StructArray::try_new(arrow_fields.clone(), children, Some(nulls)) {
                Ok(a) => Arc::new(a),
                Err(_) => new_null_array(&DataType::Struct(arrow_fields), vals.len()),
            }
        }
        Shape::List(items) => {
            let rows: Vec<Option<&Vec<Value>>> = vals
                .iter()
                .map(|v| match v.and_then(unwrap) {
                    Some(Value::Array(a)) => Some(a),
                    _ => None,
                })
                .collect();
            let flat: Vec<Option<&Value>> = rows
                .iter()
                .flatten()
                .flat_map(|a| a.iter().map(Some))
                .collect();
            let (t, _) = arrow_type(items, cx);
            let child = to_array(items, cx, &flat);
            let offsets = OffsetBuffer::from_lengths(rows.iter().map(|r| r.map_or(0, Vec::len)));
            let nulls = NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>());
            let field = Arc::new(Field::new("item", t, true));
            match ListArray::try_new(field.clone(), offsets, child, Some(nulls)) {
                Ok(a) => Arc::new(a),
                Err(_) => new_null_array(&DataType::List(field), vals.len()),
            }
        }
        Shape::Map(values) => {
            let rows: Vec<Option<Vec<(&String, &Value)>>> = vals
                .iter()
                .map(|v| match v.and_then(unwrap) {
                    Some(Value::Map(m)) => {
                        let mut e: Vec<(&String, &Value)> = m.iter().collect();
                        // HashMap order is arbitrary: sort the keys for a stable output.
                        e.sort_by(|a, b| a.0.cmp(b.0));
                        Some(e)
                    }
                    _ => None,
                })
                .collect();
            let keys: Vec<&str> = rows
                .iter()
                .flatten()
                .flat_map(|e| e.iter().map(|(k, _)| k.as_str()))
                .collect();
            let flat: Vec<Option<&Value>> = rows
                .iter()
                .flatten()
                .flat_map(|e| e.iter().map(|(_, v)| Some(*v)))
                .collect();
            let (t, _) = arrow_type(values, cx);
            let value_array = to_array(values, cx, &flat);
            let entries_field = map_entries(t, true);
            let DataType::Struct(entry_fields) = entries_field.data_type().clone() else {
                return new_null_array(&DataType::Null, vals.len());
            };
            let key_array: ArrayRef = Arc::new(arrow_array::StringArray::from(keys));
            let entries = StructArray::try_new(entry_fields, vec![key_array, value_array], None);
            let offsets =
                OffsetBuffer::from_lengths(rows.iter().map(|r| r.as_ref().map_or(0, Vec::len)));
            let nulls = NullBuffer::from(rows.iter().map(Option::is_some).collect::<Vec<_>>());
            let field = Arc::new(entries_field);
            match entries
                .and_then(|e| MapArray::try_new(field.clone(), offsets, e, Some(nulls), false))
            {
                Ok(a) => Arc::new(a),
                Err(_) => new_null_array(&DataType::Map(field, false), vals.len()),
            }
        }
    }
}

fn retz(a: ArrayRef, tz: Option<Arc<str>>) -> ArrayRef {
    use arrow_array::{
        TimestampMicrosecondArray, TimestampMillisecondArray, TimestampNanosecondArray,
    };
    let any = a.as_any();
    if let Some(x) = any.downcast_ref::<TimestampMillisecondArray>() {
        return Arc::new(x.clone().with_timezone_opt(tz));
    }
    if let Some(x) = any.downcast_ref::<TimestampMicrosecondArray>() {
        return Arc::new(x.clone().with_timezone_opt(tz));
    }
    if let Some(x) = any.downcast_ref::<TimestampNanosecondArray>() {
        return Arc::new(x.clone().with_timezone_opt(tz));
    }
    a
}
