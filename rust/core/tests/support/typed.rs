//! Helpers of the typed-decode tests (`typed.rs`, `typed_kinds.rs`): schema
//! versions, message tables and Avro datums.

#![allow(dead_code)]

use std::sync::Arc;

use apache_avro::types::{Record, Value};
use apache_avro::Schema;
use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, BinaryArray, BooleanArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema as ArrowSchema};
use pulsar_entries_core::schema::{SchemaType, SchemaVersion};

pub const V1: &str = r#"{"type":"record","name":"Order","namespace":"t","fields":[
  {"name":"id","type":"long"},
  {"name":"item","type":["null","string"],"default":null}]}"#;
pub const V2: &str = r#"{"type":"record","name":"Order","namespace":"t","fields":[
  {"name":"id","type":"long"},
  {"name":"item","type":["null","string"],"default":null},
  {"name":"qty","type":"int","default":7}]}"#;

pub fn version(v: i64, t: SchemaType, def: &[u8], props: &[(&str, &str)]) -> SchemaVersion {
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

pub struct Msg {
    pub value: Option<Vec<u8>>,
    pub version: Option<i64>,
    pub key: Option<String>,
    pub b64: bool,
}

pub fn msg(value: &[u8], version: Option<i64>) -> Msg {
    Msg {
        value: Some(value.to_vec()),
        version,
        key: None,
        b64: false,
    }
}

pub fn table(msgs: &[Msg]) -> RecordBatch {
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

pub fn avro(schema: &str, fields: &[(&str, Value)]) -> Vec<u8> {
    let s = Schema::parse_str(schema).unwrap();
    let mut r = Record::new(&s).unwrap();
    for (k, v) in fields {
        r.put(k, v.clone());
    }
    apache_avro::to_avro_datum(&s, r).unwrap()
}

pub fn errors(b: &RecordBatch) -> Vec<Option<String>> {
    b.column_by_name("error")
        .unwrap()
        .as_string::<i32>()
        .iter()
        .map(|s| s.map(str::to_string))
        .collect()
}
