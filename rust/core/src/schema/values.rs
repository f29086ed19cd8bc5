//! One message's payload → an Avro value, per schema type.
//!
//! - AVRO: a raw Avro datum (no header), read with its writer schema and
//!   resolved to the reader schema under Avro's rules (apache-avro), after
//!   [`guard::check_datum`] bounded its lengths;
//! - JSON: UTF-8 JSON text, read by field name against the reader schema's
//!   Avro definition (defaults for absent fields, base64 for bytes, as
//!   Jackson writes them);
//! - the primitives, in Pulsar's layouts (`pulsar-client` `*Schema.java`):
//!   STRING UTF-8; BOOLEAN one byte (0 false); INT8/16/32/64, FLOAT, DOUBLE
//!   big-endian; DATE, TIME, TIMESTAMP an 8-byte epoch-millisecond count;
//!   INSTANT 8-byte seconds + 4-byte nanoseconds; LOCAL_DATE an 8-byte epoch
//!   day; LOCAL_TIME an 8-byte nanosecond of day; LOCAL_DATE_TIME both;
//!   BYTES and NONE the bytes;
//! - PROTOBUF_NATIVE: the protobuf-encoded root message ([`super::protobuf`]);
//! - KEY_VALUE: INLINE payloads are `[i32 length][key][i32 length][value]`
//!   (-1 for null); SEPARATED ones hold the value, the key being the
//!   message key (base64 when `key_b64_encoded`).

use apache_avro::schema::{ResolvedSchema, Schema};
use apache_avro::types::Value;
use base64::Engine as _;
use serde_json::Value as Json;

use super::guard::{check_datum, Names, MAX_DEPTH};
use super::info::{split_key_value, SchemaType, SchemaVersion};
use super::protobuf::ProtoDef;
use super::SchemaError;

/// How one schema version's payloads are read.
#[derive(Debug, Clone)]
pub(crate) enum Codec {
    Avro(AvroDef),
    Json(AvroDef),
    Primitive(SchemaType),
    KeyValue {
        key: Box<Codec>,
        value: Box<Codec>,
        separated: bool,
    },
    ProtobufNative(ProtoDef),
}

/// A parsed Avro definition with its named types.
#[derive(Debug, Clone)]
pub(crate) struct AvroDef {
    pub schema: Schema,
    pub names: Names,
}

impl AvroDef {
    fn parse(definition: &[u8], what: &str) -> Result<Self, SchemaError> {
        let text = std::str::from_utf8(definition).map_err(|e| {
            SchemaError::Definition(format!("{what} schema definition is not UTF-8: {e}"))
        })?;
        let schema = Schema::parse_str(text).map_err(|e| {
            SchemaError::Definition(format!(
                "{what} schema definition is not an Avro schema: {e}"
            ))
        })?;
        let names = ResolvedSchema::try_from(&schema)
            .map_err(|e| SchemaError::Definition(format!("{what} schema definition: {e}")))?
            .get_names()
            .iter()
            .map(|(n, s)| (n.clone(), (*s).clone()))
            .collect();
        Ok(AvroDef { schema, names })
    }
}

impl Codec {
    pub fn new(version: &SchemaVersion) -> Result<Codec, SchemaError> {
        let what = version.schema_type.name();
        Ok(match version.schema_type {
            SchemaType::Avro => Codec::Avro(AvroDef::parse(&version.definition, what)?),
            SchemaType::Json => Codec::Json(AvroDef::parse(&version.definition, what)?),
            SchemaType::KeyValue => {
                let parts = split_key_value(version)?;
                Codec::KeyValue {
                    key: Box::new(Codec::new(&parts.key)?),
                    value: Box::new(Codec::new(&parts.value)?),
                    separated: parts.separated,
                }
            }
            SchemaType::ProtobufNative => {
                Codec::ProtobufNative(ProtoDef::parse(&version.definition)?)
            }
            SchemaType::Protobuf => {
                // Its definition is an Avro schema derived from the .proto: the field numbers of
                // nested messages are not in it, so the payload cannot be read faithfully.
                return Err(SchemaError::Definition(
                    "PROTOBUF schemas (an Avro description of the .proto, without the nested field \
                     numbers) are not decoded into columns; read the raw value, or write the topic \
                     with a PROTOBUF_NATIVE schema"
                        .into(),
                ));
            }
            other => Codec::Primitive(other),
        })
    }

    /// A short name for error texts.
    pub fn type_name(&self) -> &'static str {
        match self {
            Codec::Avro(_) => "AVRO",
            Codec::Json(_) => "JSON",
            Codec::Primitive(t) => t.name(),
            Codec::KeyValue { .. } => "KEY_VALUE",
            Codec::ProtobufNative(_) => "PROTOBUF_NATIVE",
        }
    }
}

/// A primitive type's Avro stand-in: the schema its values are built with.
pub(crate) fn primitive_schema(t: SchemaType) -> Schema {
    match t {
        SchemaType::String => Schema::String,
        SchemaType::Boolean => Schema::Boolean,
        SchemaType::Int8 | SchemaType::Int16 | SchemaType::Int32 => Schema::Int,
        SchemaType::Int64 | SchemaType::LocalTime => Schema::Long,
        SchemaType::Float => Schema::Float,
        SchemaType::Double => Schema::Double,
        SchemaType::Date | SchemaType::Time | SchemaType::Timestamp => Schema::TimestampMillis,
        SchemaType::Instant => Schema::TimestampNanos,
        SchemaType::LocalDate => Schema::Date,
        SchemaType::LocalDateTime => Schema::LocalTimestampNanos,
        _ => Schema::Bytes,
    }
}

fn fixed<const N: usize>(t: SchemaType, bytes: &[u8]) -> Result<[u8; N], String> {
    bytes.try_into().map_err(|_| {
        format!(
            "{} payload of {} bytes, expected {N}",
            t.name(),
            bytes.len()
        )
    })
}

const NANOS_PER_DAY: i64 = 86_400_000_000_000;

/// A primitive payload as its Avro stand-in value.
pub(crate) fn primitive_value(t: SchemaType, bytes: &[u8]) -> Result<Value, String> {
    let long = |b: &[u8]| -> Result<i64, String> { Ok(i64::from_be_bytes(fixed::<8>(t, b)?)) };
    Ok(match t {
        SchemaType::String => Value::String(String::from_utf8_lossy(bytes).into_owned()),
        SchemaType::Boolean => Value::Boolean(fixed::<1>(t, bytes)?[0] != 0),
        SchemaType::Int8 => Value::Int(i32::from(i8::from_be_bytes(fixed::<1>(t, bytes)?))),
        SchemaType::Int16 => Value::Int(i32::from(i16::from_be_bytes(fixed::<2>(t, bytes)?))),
        SchemaType::Int32 => Value::Int(i32::from_be_bytes(fixed::<4>(t, bytes)?)),
        SchemaType::Int64 => Value::Long(long(bytes)?),
        SchemaType::Float => Value::Float(f32::from_be_bytes(fixed::<4>(t, bytes)?)),
        SchemaType::Double => Value::Double(f64::from_be_bytes(fixed::<8>(t, bytes)?)),
        SchemaType::Date | SchemaType::Time | SchemaType::Timestamp => {
            Value::TimestampMillis(long(bytes)?)
        }
        SchemaType::Instant => {
            let b = fixed::<12>(t, bytes)?;
            let secs = i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            let nanos = i32::from_be_bytes([b[8], b[9], b[10], b[11]]);
            if !(0..1_000_000_000).contains(&nanos) {
                return Err(format!(
                    "INSTANT nanosecond field {nanos} is out of 0..10^9"
                ));
            }
            let n = secs
                .checked_mul(1_000_000_000)
                .and_then(|s| s.checked_add(i64::from(nanos)))
                .ok_or_else(|| {
                    format!("INSTANT {secs} s is outside a nanosecond timestamp's range")
                })?;
            Value::TimestampNanos(n)
        }
        SchemaType::LocalDate => {
            let day = long(bytes)?;
            Value::Date(
                i32::try_from(day)
                    .map_err(|_| format!("LOCAL_DATE epoch day {day} is out of range"))?,
            )
        }
        SchemaType::LocalTime => {
            let n = long(bytes)?;
            if !(0..NANOS_PER_DAY).contains(&n) {
                return Err(format!("LOCAL_TIME nanosecond of day {n} is out of range"));
            }
            Value::Long(n)
        }
        SchemaType::LocalDateTime => {
            let b = fixed::<16>(t, bytes)?;
            let day = i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            let nod = i64::from_be_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]);
            if !(0..NANOS_PER_DAY).contains(&nod) {
                return Err(format!(
                    "LOCAL_DATE_TIME nanosecond of day {nod} is out of range"
                ));
            }
            let n = day
                .checked_mul(NANOS_PER_DAY)
                .and_then(|d| d.checked_add(nod))
                .ok_or_else(|| {
                    format!("LOCAL_DATE_TIME day {day} is outside a nanosecond timestamp's range")
                })?;
            Value::LocalTimestampNanos(n)
        }
        _ => Value::Bytes(bytes.to_vec()),
    })
}

/// An Avro datum written with `writer`, resolved to `reader` (`None`: the
/// writer is the reader, nothing to resolve).
pub(crate) fn avro_value(
    writer: &AvroDef,
    reader: Option<&AvroDef>,
    bytes: &[u8],
) -> Result<Value, String> {
    check_datum(&writer.schema, &writer.names, bytes)?;
    let mut cursor = bytes;
    let value = apache_avro::from_avro_datum(&writer.schema, &mut cursor, None)
        .map_err(|e| format!("Avro datum does not match its writer schema: {e}"))?;
    match reader {
        None => Ok(value),
        Some(r) => value
            .resolve(&r.schema)
            .map_err(|e| format!("Avro datum cannot be resolved to the reader schema: {e}")),
    }
}

/// JSON text read against `reader`'s Avro definition.
pub(crate) fn json_value(reader: &AvroDef, bytes: &[u8]) -> Result<Value, String> {
    let json: Json =
        serde_json::from_slice(bytes).map_err(|e| format!("payload is not JSON: {e}"))?;
    from_json(&reader.schema, &reader.names, &json, 0)
}

fn default_value(
    schema: &Schema,
    names: &Names,
    default: &Json,
    depth: usize,
) -> Result<Value, String> {
    // A union's default is of its first branch (Avro specification).
    match schema {
        Schema::Union(u) => match u.variants().first() {
            Some(first) => {
                let v = from_json(first, names, default, depth + 1)?;
                Ok(Value::Union(0, Box::new(v)))
            }
            None => Err("default of an empty union".into()),
        },
        other => from_json(other, names, default, depth + 1),
    }
}

fn from_json(schema: &Schema, names: &Names, json: &Json, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("JSON value nests deeper than {MAX_DEPTH} levels"));
    }
    let mismatch = || {
        let text = json.to_string();
        let shown: String = text.chars().take(60).collect();
        format!("JSON value {shown} is not a {schema:?}")
            .chars()
            .take(200)
            .collect::<String>()
    };
    let int = |j: &Json| j.as_i64();
    Ok(match schema {
        Schema::Null => match json {
            Json::Null => Value::Null,
            _ => return Err(mismatch()),
        },
        Schema::Boolean => Value::Boolean(json.as_bool().ok_or_else(mismatch)?),
        Schema::Int => Value::Int(
            int(json)
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(mismatch)?,
        ),
        Schema::Long => Value::Long(int(json).ok_or_else(mismatch)?),
        Schema::Float => Value::Float(json.as_f64().ok_or_else(mismatch)? as f32),
        Schema::Double => Value::Double(json.as_f64().ok_or_else(mismatch)?),
        Schema::Bytes => match json {
            Json::String(s) => Value::Bytes(
                base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|_| mismatch())?,
            ),
            _ => return Err(mismatch()),
        },
        Schema::String | Schema::Uuid | Schema::BigDecimal => match json {
            Json::String(s) => Value::String(s.clone()),
            _ => return Err(mismatch()),
        },
        Schema::Enum(e) => match json {
            Json::String(s) => match e.symbols.iter().position(|x| x == s) {
                Some(i) => Value::Enum(i as u32, s.clone()),
                None => return Err(format!("JSON enum symbol {s:?} is not in {:?}", e.symbols)),
            },
            _ => return Err(mismatch()),
        },
        Schema::Fixed(f) => match json {
            Json::String(s) => {
                let b = base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|_| mismatch())?;
                if b.len() != f.size {
                    return Err(mismatch());
                }
                Value::Fixed(f.size, b)
            }
            _ => return Err(mismatch()),
        },
        Schema::Date => Value::Date(
            int(json)
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(mismatch)?,
        ),
        Schema::TimeMillis => Value::TimeMillis(
            int(json)
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(mismatch)?,
        ),
        Schema::TimeMicros => Value::TimeMicros(int(json).ok_or_else(mismatch)?),
        Schema::TimestampMillis => Value::TimestampMillis(int(json).ok_or_else(mismatch)?),
        Schema::TimestampMicros => Value::TimestampMicros(int(json).ok_or_else(mismatch)?),
        Schema::TimestampNanos => Value::TimestampNanos(int(json).ok_or_else(mismatch)?),
        Schema::LocalTimestampMillis => {
            Value::LocalTimestampMillis(int(json).ok_or_else(mismatch)?)
        }
        Schema::LocalTimestampMicros => {
            Value::LocalTimestampMicros(int(json).ok_or_else(mismatch)?)
        }
        Schema::LocalTimestampNanos => Value::LocalTimestampNanos(int(json).ok_or_else(mismatch)?),
        Schema::Decimal(_) | Schema::Duration => return Err(mismatch()),
        Schema::Array(a) => match json {
            Json::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|j| from_json(&a.items, names, j, depth + 1))
                    .collect::<Result<_, _>>()?,
            ),
            _ => return Err(mismatch()),
        },
        Schema::Map(m) => match json {
            Json::Object(o) => Value::Map(
                o.iter()
                    .map(|(k, j)| Ok((k.clone(), from_json(&m.types, names, j, depth + 1)?)))
                    .collect::<Result<_, String>>()?,
            ),
            _ => return Err(mismatch()),
        },
        Schema::Union(u) => {
            if json.is_null() {
                match u.variants().iter().position(|s| matches!(s, Schema::Null)) {
                    Some(i) => Value::Union(i as u32, Box::new(Value::Null)),
                    None => return Err(mismatch()),
                }
            } else {
                let mut last = mismatch();
                let mut found = None;
                for (i, branch) in u.variants().iter().enumerate() {
                    if matches!(branch, Schema::Null) {
                        continue;
                    }
                    match from_json(branch, names, json, depth + 1) {
                        Ok(v) => {
                            found = Some(Value::Union(i as u32, Box::new(v)));
                            break;
                        }
                        Err(e) => last = e,
                    }
                }
                found.ok_or(last)?
            }
        }
        Schema::Record(r) => match json {
            Json::Object(o) => {
                let mut fields = Vec::with_capacity(r.fields.len());
                for f in &r.fields {
                    let v = match o.get(&f.name) {
                        Some(j) => from_json(&f.schema, names, j, depth + 1)?,
                        None => match &f.default {
                            Some(d) => default_value(&f.schema, names, d, depth)?,
                            None => match &f.schema {
                                Schema::Union(u) if u.is_nullable() => Value::Null,
                                _ => {
                                    return Err(format!(
                                    "JSON object has no field {:?} and the schema gives no default",
                                    f.name
                                ))
                                }
                            },
                        },
                    };
                    fields.push((f.name.clone(), v));
                }
                Value::Record(fields)
            }
            _ => return Err(mismatch()),
        },
        Schema::Ref { name } => {
            let target = names
                .get(name)
                .ok_or_else(|| format!("Avro schema names an unknown type {name}"))?;
            from_json(target, names, json, depth + 1)?
        }
    })
}
