//! A topic's schema versions and the schema types Pulsar writes.
//!
//! Type numbers are Pulsar's `SchemaType` values (`pulsar-client-api`
//! `SchemaType.java`, 4.2.4); the registry stores each as value + 1
//! (`SchemaRegistryServiceImpl.Functions`), negative values as `NONE`.

use super::SchemaError;

/// The schema types the typed decode reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaType {
    None,
    String,
    Json,
    Protobuf,
    Avro,
    Boolean,
    Int8,
    Int16,
    Int32,
    Int64,
    Float,
    Double,
    Date,
    Time,
    Timestamp,
    KeyValue,
    Instant,
    LocalDate,
    LocalTime,
    LocalDateTime,
    ProtobufNative,
    Bytes,
}

const TYPES: &[(SchemaType, i32, &str)] = &[
    (SchemaType::None, 0, "NONE"),
    (SchemaType::String, 1, "STRING"),
    (SchemaType::Json, 2, "JSON"),
    (SchemaType::Protobuf, 3, "PROTOBUF"),
    (SchemaType::Avro, 4, "AVRO"),
    (SchemaType::Boolean, 5, "BOOLEAN"),
    (SchemaType::Int8, 6, "INT8"),
    (SchemaType::Int16, 7, "INT16"),
    (SchemaType::Int32, 8, "INT32"),
    (SchemaType::Int64, 9, "INT64"),
    (SchemaType::Float, 10, "FLOAT"),
    (SchemaType::Double, 11, "DOUBLE"),
    (SchemaType::Date, 12, "DATE"),
    (SchemaType::Time, 13, "TIME"),
    (SchemaType::Timestamp, 14, "TIMESTAMP"),
    (SchemaType::KeyValue, 15, "KEY_VALUE"),
    (SchemaType::Instant, 16, "INSTANT"),
    (SchemaType::LocalDate, 17, "LOCAL_DATE"),
    (SchemaType::LocalTime, 18, "LOCAL_TIME"),
    (SchemaType::LocalDateTime, 19, "LOCAL_DATE_TIME"),
    (SchemaType::ProtobufNative, 20, "PROTOBUF_NATIVE"),
    (SchemaType::Bytes, -1, "BYTES"),
];

impl SchemaType {
    /// Pulsar's name for the type (`AVRO`, `KEY_VALUE`, ...).
    pub fn name(self) -> &'static str {
        TYPES.iter().find(|t| t.0 == self).map_or("NONE", |t| t.2)
    }

    /// The type a Pulsar name (case-insensitive) stands for.
    pub fn from_name(name: &str) -> Result<Self, SchemaError> {
        let upper = name.trim().to_ascii_uppercase();
        let upper = if upper == "KEYVALUE" {
            "KEY_VALUE".to_string()
        } else {
            upper
        };
        TYPES
            .iter()
            .find(|t| t.2 == upper)
            .map(|t| t.0)
            .ok_or_else(|| SchemaError::Definition(format!("unknown schema type {name:?}")))
    }

    /// The type of Pulsar's `SchemaType` value.
    pub fn from_value(value: i32) -> Result<Self, SchemaError> {
        TYPES
            .iter()
            .find(|t| t.1 == value)
            .map(|t| t.0)
            .ok_or_else(|| SchemaError::Definition(format!("unknown schema type number {value}")))
    }

    /// The type of a number stored in the registry's `SchemaInfo` (value + 1).
    pub fn from_stored(number: i32) -> Result<Self, SchemaError> {
        Self::from_value(number.saturating_sub(1))
    }

    /// Whether the definition is an Avro schema (AVRO, JSON).
    pub fn is_avro_defined(self) -> bool {
        matches!(self, SchemaType::Avro | SchemaType::Json)
    }
}

/// One version of a topic's schema, in Pulsar's `SchemaInfo` shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaVersion {
    /// The registry's version number (what messages carry in `schema_version`).
    pub version: i64,
    pub schema_type: SchemaType,
    /// The definition bytes: an Avro schema's JSON for AVRO and JSON, empty for
    /// primitives, KeyValue's two definitions (see [`split_key_value`]).
    pub definition: Vec<u8>,
    pub properties: Vec<(String, String)>,
}

impl SchemaVersion {
    /// A version from plain values: the type by its name (as
    /// [`SchemaType::from_name`]), the properties in key order.
    pub fn from_parts(
        version: i64,
        type_name: &str,
        definition: Vec<u8>,
        properties: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, SchemaError> {
        let mut properties: Vec<_> = properties.into_iter().collect();
        properties.sort();
        let schema_type = SchemaType::from_name(type_name)?;
        Ok(SchemaVersion {
            version,
            schema_type,
            definition,
            properties,
        })
    }

    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// All the versions of a topic's schema; the highest version is the reader
/// schema.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicSchema {
    pub versions: Vec<SchemaVersion>,
}

impl TopicSchema {
    /// The reader schema: the highest version.
    pub fn latest(&self) -> Option<&SchemaVersion> {
        self.versions.iter().max_by_key(|v| v.version)
    }
}

/// KeyValue's two halves, with the encoding of its messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValueParts {
    pub key: SchemaVersion,
    pub value: SchemaVersion,
    /// SEPARATED: the key is the message key; INLINE: both are in the payload.
    pub separated: bool,
}

fn read_part(bytes: &[u8], at: &mut usize) -> Result<Vec<u8>, SchemaError> {
    let short = || SchemaError::Definition("KeyValue schema definition is truncated".into());
    let len_bytes = bytes.get(*at..*at + 4).ok_or_else(short)?;
    let len = i32::from_be_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]);
    *at += 4;
    if len < 0 {
        return Ok(Vec::new());
    }
    let part = bytes.get(*at..*at + len as usize).ok_or_else(short)?;
    *at += len as usize;
    Ok(part.to_vec())
}

fn json_properties(text: Option<&str>) -> Vec<(String, String)> {
    let Some(text) = text else { return Vec::new() };
    match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text) {
        Ok(map) => map
            .into_iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => (k, s),
                other => (k, other.to_string()),
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// A KeyValue schema's halves: the definition is `[i32 length][key
/// definition][i32 length][value definition]` (big-endian, -1 for none), the
/// halves' types and properties are in `key.schema.type`,
/// `key.schema.properties`, `value.schema.*`, the encoding in
/// `kv.encoding.type` (INLINE when absent).
pub fn split_key_value(kv: &SchemaVersion) -> Result<KeyValueParts, SchemaError> {
    let mut at = 0;
    let key_def = read_part(&kv.definition, &mut at)?;
    let value_def = read_part(&kv.definition, &mut at)?;
    let half = |prefix: &str, definition: Vec<u8>| -> Result<SchemaVersion, SchemaError> {
        let type_name = kv
            .property(&format!("{prefix}.schema.type"))
            .ok_or_else(|| {
                SchemaError::Definition(format!("KeyValue schema without {prefix}.schema.type"))
            })?;
        let schema_type = SchemaType::from_name(type_name)?;
        if schema_type == SchemaType::KeyValue {
            return Err(SchemaError::Definition(
                "a KeyValue schema inside a KeyValue schema is not supported".into(),
            ));
        }
        Ok(SchemaVersion {
            version: kv.version,
            schema_type,
            definition,
            properties: json_properties(kv.property(&format!("{prefix}.schema.properties"))),
        })
    };
    let separated = match kv.property("kv.encoding.type") {
        None => false,
        Some(e) if e.eq_ignore_ascii_case("INLINE") => false,
        Some(e) if e.eq_ignore_ascii_case("SEPARATED") => true,
        Some(e) => {
            return Err(SchemaError::Definition(format!(
                "unknown KeyValue encoding {e:?} (INLINE or SEPARATED)"
            )))
        }
    };
    Ok(KeyValueParts {
        key: half("key", key_def)?,
        value: half("value", value_def)?,
        separated,
    })
}
