//! The schema registry's stored records (spec bookkeeper.md §1.6): the
//! `SchemaLocator` node at `/schemas/<tenant>/<ns>/<topic>` and the
//! `SchemaEntry` each schema-ledger entry holds, with its `SchemaInfo`.

use prost::Message;

use super::info::{SchemaType, SchemaVersion};
use super::SchemaError;
use crate::proto::bookkeeper::{SchemaEntry, SchemaIndexEntry, SchemaLocator, StoredSchemaInfo};

/// Where one schema version is stored: an entry of a schema ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SchemaLocation {
    pub version: i64,
    pub ledger_id: i64,
    pub entry_id: i64,
}

fn location(e: &SchemaIndexEntry) -> SchemaLocation {
    SchemaLocation {
        version: e.version,
        ledger_id: e.position.ledger_id,
        entry_id: e.position.entry_id,
    }
}

fn merged(entries: impl IntoIterator<Item = SchemaLocation>) -> Vec<SchemaLocation> {
    let mut out: Vec<SchemaLocation> = entries.into_iter().collect();
    out.sort();
    out.dedup_by_key(|l| l.version);
    out
}

/// The versions a `SchemaLocator` node lists (its index and its latest
/// entry), by version.
pub fn decode_schema_locator(bytes: &[u8]) -> Result<Vec<SchemaLocation>, SchemaError> {
    let locator = SchemaLocator::decode(bytes)
        .map_err(|e| SchemaError::Record(format!("invalid SchemaLocator protobuf: {e}")))?;
    Ok(merged(
        std::iter::once(location(&locator.info)).chain(locator.index.iter().map(location)),
    ))
}

/// One stored schema version: the `SchemaInfo` of a `SchemaEntry`, and the
/// index the entry carries (the versions stored before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSchema {
    /// `None` for a deleted schema (a tombstone version).
    pub schema: Option<SchemaVersion>,
    pub schema_id: String,
    pub timestamp: i64,
    pub index: Vec<SchemaLocation>,
}

/// A schema ledger's entry for `version`: a `SchemaEntry` whose
/// `schema_data` is the registry's `SchemaInfo`.
pub fn decode_schema_entry(version: i64, bytes: &[u8]) -> Result<StoredSchema, SchemaError> {
    let entry = SchemaEntry::decode(bytes)
        .map_err(|e| SchemaError::Record(format!("invalid SchemaEntry protobuf: {e}")))?;
    let info = StoredSchemaInfo::decode(entry.schema_data.as_slice()).map_err(|e| {
        SchemaError::Record(format!("invalid SchemaInfo protobuf in a SchemaEntry: {e}"))
    })?;
    let schema = if info.deleted {
        None
    } else {
        Some(SchemaVersion {
            version,
            schema_type: SchemaType::from_stored(info.r#type)?,
            definition: info.schema,
            properties: info.props.into_iter().map(|p| (p.key, p.value)).collect(),
        })
    };
    Ok(StoredSchema {
        schema,
        schema_id: info.schema_id,
        timestamp: info.timestamp,
        index: merged(entry.index.iter().map(location)),
    })
}
