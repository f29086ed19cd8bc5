//! What a reader of a live cluster inspects, as value trees: a topic's
//! store paths, its managed ledger, a ledger node.

use super::{Dict, Value};
use crate::bookkeeper::{LedgerMetadata, LedgerState};
use crate::metadata_store::{ManagedLedger, OffloadState, TopicName};
use crate::schema::StoredSchema;

fn string_dict<'a>(pairs: &'a [(String, String)]) -> Dict<'a> {
    let mut d = Dict::default();
    for (k, v) in pairs {
        d.set(k.as_str(), v.as_str());
    }
    d
}

/// The store paths of a topic: `topic, base, partition, managed_ledger,
/// compaction_cursor, partitioned_metadata, schema`.
pub fn topic_paths_value(t: &TopicName) -> Dict<'static> {
    let mut d = Dict::default();
    d.set("topic", t.full()).set("base", t.base().full());
    d.set("partition", t.partition())
        .set("managed_ledger", t.managed_ledger_path());
    d.set("compaction_cursor", t.cursor_path("__compaction"));
    d.set("partitioned_metadata", t.partitioned_metadata_path())
        .set("schema", t.schema_path());
    d
}

/// A managed ledger: `ledgers` in order (`ledger_id, entries, size,
/// timestamp, offload`), `terminated_at`, `properties`.
pub fn managed_ledger_value(ml: &ManagedLedger) -> Dict<'_> {
    fn ledger(l: &crate::metadata_store::LedgerEntry) -> Value<'_> {
        let mut d = Dict::default();
        d.set("ledger_id", l.ledger_id).set("entries", l.entries);
        d.set("size", l.size).set("timestamp", l.timestamp);
        let offload = match &l.offload {
            OffloadState::BookKeeper => None,
            OffloadState::Offloaded {
                uid_msb,
                uid_lsb,
                bookkeeper_deleted,
                driver,
                driver_properties,
            } => {
                let mut o = Dict::default();
                o.set("uid_msb", *uid_msb).set("uid_lsb", *uid_lsb);
                o.set("bookkeeper_deleted", *bookkeeper_deleted)
                    .set("driver", driver.as_str());
                o.set("driver_properties", string_dict(driver_properties));
                Some(o)
            }
        };
        d.set("offload", offload);
        Value::Dict(d)
    }
    let terminated = ml
        .terminated_at
        .map(|(l, e)| Value::Tuple(vec![l.into(), e.into()]));
    let mut d = Dict::default();
    d.set(
        "ledgers",
        Value::List(ml.ledgers.iter().map(ledger).collect()),
    );
    d.set("terminated_at", terminated)
        .set("properties", string_dict(&ml.properties));
    d
}

/// A ledger node, without its password: `ledger_id, state, last_entry_id,
/// length, ensemble_size, write_quorum, ack_quorum, digest_type, ensembles
/// ((first entry, bookies) pairs), custom_metadata`.
pub fn ledger_metadata_value(m: &LedgerMetadata) -> Dict<'_> {
    let state = match m.state {
        LedgerState::Open => "OPEN",
        LedgerState::InRecovery => "IN_RECOVERY",
        LedgerState::Closed => "CLOSED",
    };
    let mut d = Dict::default();
    d.set("ledger_id", m.ledger_id).set("state", state);
    d.set("last_entry_id", m.last_entry_id)
        .set("length", m.length);
    d.set("ensemble_size", m.ensemble_size)
        .set("write_quorum", m.write_quorum);
    d.set("ack_quorum", m.ack_quorum)
        .set("digest_type", m.digest.name());
    fn segment(s: &crate::bookkeeper::Segment) -> Value<'_> {
        let bookies = s.bookies.iter().map(|b| Value::from(b.as_str()));
        Value::Tuple(vec![
            s.first_entry_id.into(),
            Value::List(bookies.collect()),
        ])
    }
    d.set(
        "ensembles",
        Value::List(m.segments.iter().map(segment).collect()),
    );
    let mut custom = Dict::default();
    for (k, v) in &m.custom {
        custom.set(k.as_str(), v.as_slice());
    }
    d.set("custom_metadata", custom);
    d
}

/// A schema-ledger entry for `version`: `version, deleted, timestamp,
/// schema_id, type, schema, properties` (a deleted version has type `NONE`,
/// an empty schema and no properties).
pub fn schema_entry_value(version: i64, stored: &StoredSchema) -> Dict<'_> {
    let mut d = Dict::default();
    d.set("version", version)
        .set("deleted", stored.schema.is_none());
    d.set("timestamp", stored.timestamp)
        .set("schema_id", stored.schema_id.as_str());
    match &stored.schema {
        Some(s) => d
            .set("type", s.schema_type.name())
            .set("schema", s.definition.as_slice()),
        None => d.set("type", "NONE").set("schema", &b""[..]),
    };
    let properties = match &stored.schema {
        Some(s) => string_dict(&s.properties),
        None => Dict::default(),
    };
    d.set("properties", properties);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_entries_as_dicts_deleted_or_not() {
        let props = [
            ("b".to_string(), "2".to_string()),
            ("a".to_string(), "1".to_string()),
        ];
        let version = crate::schema::SchemaVersion::from_parts(3, "string", vec![], props);
        let version = version.unwrap();
        assert_eq!(version.properties[0].0, "a", "properties in key order");
        let stored = StoredSchema {
            schema: Some(version),
            schema_id: "id".into(),
            timestamp: 7,
            index: vec![],
        };
        let d = schema_entry_value(3, &stored);
        let keys: Vec<&str> = d.0.iter().map(|(k, _)| k.as_ref()).collect();
        let all = [
            "version",
            "deleted",
            "timestamp",
            "schema_id",
            "type",
            "schema",
            "properties",
        ];
        assert_eq!(keys, all);
        assert_eq!(d.get("type"), Some(&Value::from("STRING")));
        assert_eq!(d.get("deleted"), Some(&Value::Bool(false)));
        let deleted = StoredSchema {
            schema: None,
            ..stored
        };
        let d = schema_entry_value(4, &deleted);
        assert_eq!(d.get("type"), Some(&Value::from("NONE")));
        assert_eq!(d.get("properties"), Some(&Value::Dict(Dict::default())));
        assert!(crate::schema::SchemaVersion::from_parts(1, "nope", vec![], []).is_err());
    }

    #[test]
    fn topic_paths_name_every_path() {
        let t = TopicName::parse("persistent://t/ns/orders-partition-3").unwrap();
        let d = topic_paths_value(&t);
        let keys: Vec<&str> = d.0.iter().map(|(k, _)| k.as_ref()).collect();
        let expected = [
            "topic",
            "base",
            "partition",
            "managed_ledger",
            "compaction_cursor",
            "partitioned_metadata",
            "schema",
        ];
        assert_eq!(keys, expected);
        assert_eq!(d.get("partition"), Some(&Value::Int(3)));
        assert_eq!(
            d.get("base"),
            Some(&Value::from("persistent://t/ns/orders"))
        );
    }

    #[test]
    fn managed_ledger_keeps_order_and_offload_state() {
        let ml = ManagedLedger {
            ledgers: vec![
                crate::metadata_store::LedgerEntry {
                    ledger_id: 5,
                    entries: 10,
                    size: 100,
                    timestamp: 1,
                    offload: OffloadState::Offloaded {
                        uid_msb: 1,
                        uid_lsb: 2,
                        bookkeeper_deleted: true,
                        driver: "S3".into(),
                        driver_properties: vec![("bucket".into(), "b".into())],
                    },
                },
                crate::metadata_store::LedgerEntry {
                    ledger_id: 7,
                    entries: 0,
                    size: 0,
                    timestamp: 0,
                    offload: OffloadState::BookKeeper,
                },
            ],
            terminated_at: Some((7, 3)),
            properties: vec![],
        };
        let d = managed_ledger_value(&ml);
        let Some(Value::List(ledgers)) = d.get("ledgers") else {
            panic!("a list of ledgers")
        };
        let (Value::Dict(first), Value::Dict(second)) = (&ledgers[0], &ledgers[1]) else {
            panic!("dicts")
        };
        assert_eq!(first.get("ledger_id"), Some(&Value::Int(5)));
        let Some(Value::Dict(o)) = first.get("offload") else {
            panic!("an offload dict")
        };
        assert_eq!(o.get("bookkeeper_deleted"), Some(&Value::Bool(true)));
        let mut props = Dict::default();
        props.set("bucket", "b");
        assert_eq!(o.get("driver_properties"), Some(&Value::Dict(props)));
        assert_eq!(second.get("offload"), Some(&Value::None));
        let terminated = Value::Tuple(vec![Value::Int(7), Value::Int(3)]);
        assert_eq!(d.get("terminated_at"), Some(&terminated));
        assert_eq!(d.get("properties"), Some(&Value::Dict(Dict::default())));
    }
}
