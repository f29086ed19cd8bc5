//! The formats of the metadata-store nodes a reader needs (spec
//! bookkeeper.md §1.1, §1.3-§1.5, §2.5).

use prost::Message;

use super::MetadataError;
use crate::format::compression::{Codec, Decompressor};
use crate::proto::bookkeeper as pb;
use crate::proto::offload::LedgerInfo;

/// The largest managed-ledger info accepted after decompression: the
/// envelope's claimed size is checked against it before allocating.
const MAX_INFO_BYTES: usize = 256 * 1024 * 1024;

/// The envelope magic of compressed managed-ledger and cursor info.
const ENVELOPE_MAGIC: [u8; 2] = [0x47, 0x78];

/// A value from the RocksDB metadata store of a standalone: strips the
/// `MetaValue` header (`int32 headerSize` first, 41 bytes in format 1).
pub fn strip_rocksdb_header(value: &[u8]) -> Result<&[u8], MetadataError> {
    let size = value
        .get(..4)
        .map(|b| i32::from_be_bytes(b.try_into().expect("4 bytes")))
        .ok_or_else(|| {
            MetadataError::Node(format!(
                "RocksDB value of {} bytes has no header",
                value.len()
            ))
        })?;
    usize::try_from(size)
        .ok()
        .filter(|&s| s >= 8 && s <= value.len())
        .map(|s| &value[s..])
        .ok_or_else(|| {
            MetadataError::Node(format!(
                "RocksDB value header claims {size} bytes, the value has {}",
                value.len()
            ))
        })
}

/// Removes the 0x4778 compression envelope if present (spec §1.3).
fn unwrap_envelope<'a>(
    bytes: &'a [u8],
    buf: &'a mut Decompressor,
    what: &str,
) -> Result<&'a [u8], MetadataError> {
    if bytes.len() < 6 || bytes[..2] != ENVELOPE_MAGIC {
        return Ok(bytes);
    }
    let bad = |why: String| MetadataError::Node(format!("compressed {what}: {why}"));
    let md_size = i32::from_be_bytes(bytes[2..6].try_into().expect("4 bytes"));
    let md_end = usize::try_from(md_size)
        .ok()
        .and_then(|s| s.checked_add(6))
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| bad(format!("header size {md_size} exceeds the node")))?;
    let md =
        pb::ManagedLedgerInfoMetadata::decode(&bytes[6..md_end]).map_err(|e| bad(e.to_string()))?;
    let codec = Codec::from_proto(md.compression_type)
        .ok_or_else(|| bad(format!("unknown compression type {}", md.compression_type)))?;
    let size = u32::try_from(md.uncompressed_size)
        .map_err(|_| bad(format!("size {}", md.uncompressed_size)))?;
    buf.decompress(codec, &bytes[md_end..], size, MAX_INFO_BYTES, md_end)
        .map_err(|e| bad(e.to_string()))
}

/// Where a ledger's entries can be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OffloadState {
    /// In BookKeeper only.
    BookKeeper,
    /// Offloaded to tiered storage; `bookkeeper_deleted` tells whether the
    /// BookKeeper copy is gone.
    Offloaded {
        uid_msb: i64,
        uid_lsb: i64,
        bookkeeper_deleted: bool,
        driver: String,
        driver_properties: Vec<(String, String)>,
    },
}

/// One ledger of a managed ledger, in topic order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerEntry {
    pub ledger_id: i64,
    /// Entry count as stored: 0 for the ledger being written (its count is
    /// known from BookKeeper's last-add-confirmed only).
    pub entries: i64,
    pub size: i64,
    /// Close time in ms; 0 while open.
    pub timestamp: i64,
    pub offload: OffloadState,
}

/// A topic's (or partition's) managed ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedLedger {
    pub ledgers: Vec<LedgerEntry>,
    /// Set when the topic was terminated.
    pub terminated_at: Option<(i64, i64)>,
    pub properties: Vec<(String, String)>,
}

fn ledger_entry(l: LedgerInfo) -> LedgerEntry {
    let offload = match l.offload_context {
        Some(c) if c.complete == Some(true) => OffloadState::Offloaded {
            uid_msb: c.uid_msb.unwrap_or(0),
            uid_lsb: c.uid_lsb.unwrap_or(0),
            bookkeeper_deleted: c.bookkeeper_deleted == Some(true),
            driver: c
                .driver_metadata
                .as_ref()
                .map(|d| d.name.clone())
                .unwrap_or_default(),
            driver_properties: c
                .driver_metadata
                .map(|d| {
                    d.properties
                        .into_iter()
                        .map(|kv| (kv.key, kv.value))
                        .collect()
                })
                .unwrap_or_default(),
        },
        _ => OffloadState::BookKeeper,
    };
    LedgerEntry {
        ledger_id: l.ledger_id,
        entries: l.entries.unwrap_or(0),
        size: l.size.unwrap_or(0),
        timestamp: l.timestamp.unwrap_or(0),
        offload,
    }
}

/// Parses a `/managed-ledgers/...` topic node: binary `ManagedLedgerInfo`,
/// optionally in the compression envelope. An empty node is a managed
/// ledger with no ledgers yet. Ledgers come out in topic order.
pub fn managed_ledger_info(node: &[u8]) -> Result<ManagedLedger, MetadataError> {
    let mut buf = Decompressor::default();
    let bytes = unwrap_envelope(node, &mut buf, "managed-ledger info")?;
    let info = pb::ManagedLedgerInfo::decode(bytes)
        .map_err(|e| MetadataError::Node(format!("invalid ManagedLedgerInfo protobuf: {e}")))?;
    let mut ledgers: Vec<LedgerEntry> = info.ledger_info.into_iter().map(ledger_entry).collect();
    ledgers.sort_by_key(|l| l.ledger_id);
    Ok(ManagedLedger {
        ledgers,
        terminated_at: info.terminated_position.map(|p| (p.ledger_id, p.entry_id)),
        properties: info
            .properties
            .into_iter()
            .map(|kv| (kv.key, kv.value))
            .collect(),
    })
}

/// A cursor node, as far as a reader needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorInfo {
    /// The cursor's own ledger; when ≥ 0 its last entry (a `PositionInfo`)
    /// holds the authoritative position and properties.
    pub cursors_ledger_id: i64,
    pub mark_delete: Option<(i64, i64)>,
    pub properties: Vec<(String, i64)>,
}

/// The compaction cursor's property naming the compacted ledger.
pub const COMPACTED_TOPIC_LEDGER: &str = "CompactedTopicLedger";

/// Parses a cursor node (`.../<topic>/<subscription>`), envelope or not.
pub fn cursor_info(node: &[u8]) -> Result<CursorInfo, MetadataError> {
    let mut buf = Decompressor::default();
    let bytes = unwrap_envelope(node, &mut buf, "cursor info")?;
    let c = pb::ManagedCursorInfo::decode(bytes)
        .map_err(|e| MetadataError::Node(format!("invalid ManagedCursorInfo protobuf: {e}")))?;
    Ok(CursorInfo {
        cursors_ledger_id: c.cursors_ledger_id,
        mark_delete: c.mark_delete_ledger_id.zip(c.mark_delete_entry_id),
        properties: c
            .properties
            .into_iter()
            .map(|p| (p.name, p.value))
            .collect(),
    })
}

/// What the compaction cursor says: the compacted ledger and the compaction
/// horizon (the cursor's mark-delete position: the last entry compaction
/// read; a `readCompacted` reader reads the topic after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compaction {
    pub ledger_id: Option<i64>,
    pub horizon: Option<(i64, i64)>,
}

/// The compaction state from the `__compaction` cursor: from the last entry
/// of its cursor ledger (a `PositionInfo`) when given, else from the node.
pub fn compacted_ledger(
    cursor: &CursorInfo,
    last_position_entry: Option<&[u8]>,
) -> Result<Compaction, MetadataError> {
    if let Some(entry) = last_position_entry {
        let p = pb::PositionInfo::decode(entry).map_err(|e| {
            MetadataError::Node(format!("invalid cursor PositionInfo protobuf: {e}"))
        })?;
        return Ok(Compaction {
            ledger_id: p
                .properties
                .iter()
                .find(|x| x.name == COMPACTED_TOPIC_LEDGER)
                .map(|x| x.value),
            horizon: Some((p.ledger_id, p.entry_id)),
        });
    }
    Ok(Compaction {
        ledger_id: cursor
            .properties
            .iter()
            .find(|(n, _)| n == COMPACTED_TOPIC_LEDGER)
            .map(|(_, v)| *v),
        horizon: cursor.mark_delete,
    })
}

/// The partition count in an `/admin/partitioned-topics/...` node (JSON
/// `{"partitions": N, ...}`).
pub fn partition_count(node: &[u8]) -> Result<i32, MetadataError> {
    let v: serde_json::Value = serde_json::from_slice(node)
        .map_err(|e| MetadataError::Node(format!("partitioned-topic metadata is not JSON: {e}")))?;
    v.get("partitions")
        .and_then(serde_json::Value::as_i64)
        .and_then(|n| i32::try_from(n).ok())
        .filter(|&n| n >= 0)
        .ok_or_else(|| {
            MetadataError::Node(format!(
                "partitioned-topic metadata has no valid `partitions`: {v}"
            ))
        })
}

/// A bookie's RPC address from its registration node
/// (`/ledgers/available[/readonly]/<id>`): the `bookie-rpc` endpoint; empty
/// data means a legacy registration whose id is `host:port`.
pub fn bookie_address(bookie_id: &str, node: &[u8]) -> Result<String, MetadataError> {
    if node.is_empty() {
        return Ok(bookie_id.to_string());
    }
    let info = pb::BookieServiceInfoFormat::decode(node).map_err(|e| {
        MetadataError::Node(format!("bookie {bookie_id}: invalid registration: {e}"))
    })?;
    info.endpoints
        .iter()
        .find(|e| e.protocol == "bookie-rpc")
        .map(|e| format!("{}:{}", e.host, e.port))
        .ok_or_else(|| {
            MetadataError::Node(format!(
                "bookie {bookie_id}: registration has no bookie-rpc endpoint"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::offload::{KeyValue, OffloadContext, OffloadDriverMetadata};

    fn info() -> pb::ManagedLedgerInfo {
        pb::ManagedLedgerInfo {
            ledger_info: vec![
                LedgerInfo {
                    ledger_id: 12,
                    entries: None,
                    size: None,
                    timestamp: Some(0),
                    ..Default::default()
                },
                LedgerInfo {
                    ledger_id: 5,
                    entries: Some(40),
                    size: Some(4000),
                    timestamp: Some(1_700_000_000_000),
                    offload_context: Some(OffloadContext {
                        uid_msb: Some(1),
                        uid_lsb: Some(2),
                        complete: Some(true),
                        bookkeeper_deleted: Some(false),
                        driver_metadata: Some(OffloadDriverMetadata {
                            name: "S3".into(),
                            properties: vec![KeyValue {
                                key: "bucket".into(),
                                value: "b".into(),
                            }],
                        }),
                        ..Default::default()
                    }),
                },
            ],
            terminated_position: None,
            properties: vec![],
        }
    }

    #[test]
    fn ledgers_in_order_with_offload_state() {
        let ml = managed_ledger_info(&info().encode_to_vec()).unwrap();
        assert_eq!(
            ml.ledgers.iter().map(|l| l.ledger_id).collect::<Vec<_>>(),
            vec![5, 12]
        );
        assert_eq!(
            ml.ledgers[1].entries, 0,
            "the open ledger's count is not stored"
        );
        match &ml.ledgers[0].offload {
            OffloadState::Offloaded {
                uid_lsb,
                driver,
                driver_properties,
                ..
            } => {
                assert_eq!((*uid_lsb, driver.as_str()), (2, "S3"));
                assert_eq!(
                    driver_properties[0],
                    ("bucket".to_string(), "b".to_string())
                );
            }
            o => panic!("{o:?}"),
        }
        assert!(
            managed_ledger_info(&[]).unwrap().ledgers.is_empty(),
            "a fresh node is empty"
        );
    }

    #[test]
    fn the_compression_envelope_is_opened() {
        let plain = info().encode_to_vec();
        for codec in [
            Codec::None,
            Codec::Lz4,
            Codec::Zlib,
            Codec::Zstd,
            Codec::Snappy,
        ] {
            let md = pb::ManagedLedgerInfoMetadata {
                compression_type: codec.to_proto(),
                uncompressed_size: plain.len() as i32,
            }
            .encode_to_vec();
            let body = crate::format::compression::compress(codec, &plain).unwrap();
            let node = [
                &ENVELOPE_MAGIC[..],
                &(md.len() as i32).to_be_bytes(),
                &md,
                &body,
            ]
            .concat();
            let ml = managed_ledger_info(&node).unwrap();
            assert_eq!(ml.ledgers.len(), 2, "{codec:?}");
        }
        // A claimed size past the bound is refused before allocating.
        let md = pb::ManagedLedgerInfoMetadata {
            compression_type: 3,
            uncompressed_size: i32::MAX,
        }
        .encode_to_vec();
        let node = [
            &ENVELOPE_MAGIC[..],
            &(md.len() as i32).to_be_bytes(),
            &md,
            &[0u8; 8],
        ]
        .concat();
        assert!(managed_ledger_info(&node)
            .unwrap_err()
            .to_string()
            .contains("exceeds the limit"));
        let node = [&ENVELOPE_MAGIC[..], &1000i32.to_be_bytes(), &md].concat();
        assert!(managed_ledger_info(&node)
            .unwrap_err()
            .to_string()
            .contains("header size 1000"));
    }

    #[test]
    fn rocksdb_values_lose_their_41_byte_header() {
        let mut v = 41i32.to_be_bytes().to_vec();
        v.extend_from_slice(&[0u8; 37]);
        v.extend_from_slice(b"data");
        assert_eq!(strip_rocksdb_header(&v).unwrap(), b"data");
        assert!(strip_rocksdb_header(&v[..3]).is_err());
        v[0..4].copy_from_slice(&999i32.to_be_bytes());
        assert!(strip_rocksdb_header(&v)
            .unwrap_err()
            .to_string()
            .contains("claims 999"));
    }

    #[test]
    fn compacted_ledger_from_node_or_cursor_ledger() {
        let c = pb::ManagedCursorInfo {
            cursors_ledger_id: -1,
            mark_delete_ledger_id: Some(5),
            mark_delete_entry_id: Some(9),
            properties: vec![pb::LongProperty {
                name: COMPACTED_TOPIC_LEDGER.into(),
                value: 77,
            }],
            ..Default::default()
        };
        let ci = cursor_info(&c.encode_to_vec()).unwrap();
        assert_eq!(ci.mark_delete, Some((5, 9)));
        assert_eq!(
            compacted_ledger(&ci, None).unwrap(),
            Compaction {
                ledger_id: Some(77),
                horizon: Some((5, 9))
            }
        );
        let p = pb::PositionInfo {
            ledger_id: 6,
            entry_id: 1,
            properties: vec![pb::LongProperty {
                name: COMPACTED_TOPIC_LEDGER.into(),
                value: 99,
            }],
            ..Default::default()
        };
        assert_eq!(
            compacted_ledger(&ci, Some(&p.encode_to_vec())).unwrap(),
            Compaction {
                ledger_id: Some(99),
                horizon: Some((6, 1))
            }
        );
    }

    #[test]
    fn partitions_and_bookie_addresses() {
        assert_eq!(
            partition_count(br#"{"partitions":3,"deleted":false}"#).unwrap(),
            3
        );
        assert!(partition_count(b"{}").is_err());
        assert!(partition_count(b"\xff")
            .unwrap_err()
            .to_string()
            .contains("not JSON"));
        assert_eq!(
            bookie_address("127.0.0.1:3181", b"").unwrap(),
            "127.0.0.1:3181"
        );
        let reg = pb::BookieServiceInfoFormat {
            endpoints: vec![endpoint("http", 8000), endpoint("bookie-rpc", 3181)],
            properties: Default::default(),
        };
        assert_eq!(
            bookie_address("bk-1", &reg.encode_to_vec()).unwrap(),
            "127.0.0.2:3181"
        );
        let reg = pb::BookieServiceInfoFormat {
            endpoints: vec![endpoint("http", 8000)],
            properties: Default::default(),
        };
        assert!(bookie_address("bk-1", &reg.encode_to_vec())
            .unwrap_err()
            .to_string()
            .contains("no bookie-rpc"));
    }

    fn endpoint(protocol: &str, port: i32) -> pb::bookie_service_info_format::Endpoint {
        pb::bookie_service_info_format::Endpoint {
            id: protocol.into(),
            port,
            host: "127.0.0.2".into(),
            protocol: protocol.into(),
            auth: vec![],
            extensions: vec![],
        }
    }
}
