//! One fuzz input = a selector byte, then a message payload. The selector
//! picks a topic schema (an Avro record of nested types with two versions,
//! the same as JSON, KeyValue INLINE, or a primitive) and the schema version
//! the message names. `typed_batch` never panics, keeps the row (one output
//! row, its `value` the input bytes), and a row is either typed or carries an
//! error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pulsar_entries_core::schema::{SchemaType, SchemaVersion, TopicSchema};

mod typed_row;

const V0: &str = r#"{"type":"record","name":"R","fields":[
  {"name":"id","type":"long"},
  {"name":"tags","type":{"type":"array","items":"string"}},
  {"name":"attrs","type":{"type":"map","values":["null","double"]}},
  {"name":"next","type":["null","R"],"default":null},
  {"name":"kind","type":{"type":"enum","name":"K","symbols":["A","B"]}},
  {"name":"at","type":{"type":"long","logicalType":"timestamp-micros"}},
  {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
  {"name":"raw","type":{"type":"fixed","name":"F","size":4}}]}"#;
const V1: &str = r#"{"type":"record","name":"R","fields":[
  {"name":"id","type":"long"},
  {"name":"tags","type":{"type":"array","items":"string"}},
  {"name":"attrs","type":{"type":"map","values":["null","double"]}},
  {"name":"next","type":["null","R"],"default":null},
  {"name":"kind","type":{"type":"enum","name":"K","symbols":["A","B"]}},
  {"name":"at","type":{"type":"long","logicalType":"timestamp-micros"}},
  {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
  {"name":"raw","type":{"type":"fixed","name":"F","size":4}},
  {"name":"extra","type":"string","default":"none"}]}"#;

fn version(v: i64, t: SchemaType, def: &[u8], props: &[(&str, &str)]) -> SchemaVersion {
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

fn schema(selector: u8) -> TopicSchema {
    let versions = match selector % 4 {
        0 => vec![
            version(0, SchemaType::Avro, V0.as_bytes(), &[]),
            version(1, SchemaType::Avro, V1.as_bytes(), &[]),
        ],
        1 => vec![version(0, SchemaType::Json, V1.as_bytes(), &[])],
        2 => {
            let mut def = 0i32.to_be_bytes().to_vec();
            def.extend_from_slice(&(V0.len() as i32).to_be_bytes());
            def.extend_from_slice(V0.as_bytes());
            let props = [("key.schema.type", "STRING"), ("value.schema.type", "AVRO")];
            vec![version(0, SchemaType::KeyValue, &def, &props)]
        }
        _ => {
            let t = [
                SchemaType::Instant,
                SchemaType::LocalDateTime,
                SchemaType::LocalTime,
                SchemaType::Int16,
                SchemaType::String,
                SchemaType::Double,
            ][usize::from(selector / 4) % 6];
            vec![version(0, t, b"", &[])]
        }
    };
    TopicSchema { versions }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, payload)) = data.split_first() else {
        return;
    };
    let named = (selector >> 6) as i64; // versions 0..=3: 2 and 3 are unknown
    typed_row::check(payload, named, &schema(selector));
});
