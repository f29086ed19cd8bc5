//! The read-only BookKeeper layer on arbitrary bytes: bookie response frames
//! (v2 READENTRY / BATCH_READ_ENTRY, v3 READ_LAC), stored entries under every
//! digest, ledger metadata nodes, managed-ledger and cursor nodes, and entry
//! logs (records, ledgers maps, index locations; scans with and without digest
//! checks) and journals. Nothing may panic; what parses must be
//! self-consistent.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use pulsar_entries_core::bookkeeper::{files, protocol, DigestType, Digester, LedgerMetadata};
use pulsar_entries_core::metadata_store as ms;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match selector % 8 {
        0 => {
            if let Ok(r) = protocol::decode_v2(rest) {
                // Every range a response names lies inside the frame.
                match r {
                    protocol::V2Response::Read { entry, .. } => assert!(entry.end <= rest.len()),
                    protocol::V2Response::Batch { entries, .. } => {
                        for e in entries {
                            assert!(e.start <= e.end && e.end <= rest.len());
                        }
                    }
                }
            }
            let _ = protocol::decode_lac(rest);
            let _ = protocol::read_frame(&mut Cursor::new(rest), 1 << 16);
        }
        1 => {
            for kind in [
                DigestType::Crc32c,
                DigestType::Crc32,
                DigestType::Hmac,
                DigestType::Dummy,
            ] {
                let d = Digester::new(kind, b"");
                if let Ok(h) = d.verify(rest, 0, None) {
                    assert!(h.payload_offset <= rest.len());
                    // What verifies must recompute to the same digest.
                    let n = kind.len();
                    assert_eq!(
                        d.compute(&rest[..32], &rest[32 + n..]),
                        rest[32..32 + n].to_vec()
                    );
                }
            }
        }
        2 => {
            if let Ok(m) = LedgerMetadata::parse(1, rest) {
                assert!(m.write_quorum <= m.ensemble_size && m.ack_quorum <= m.write_quorum);
                for e in [0, 1, m.last_entry_id.max(0), i64::MAX] {
                    assert_eq!(m.write_set(e).len(), m.write_quorum);
                }
            }
        }
        3 => {
            let _ = ms::managed_ledger_info(rest);
            if let Ok(c) = ms::cursor_info(rest) {
                let _ = ms::compacted_ledger(&c, Some(rest));
            }
            let _ = ms::strip_rocksdb_header(rest);
        }
        4 => {
            let _ = ms::partition_count(rest);
            let _ = ms::bookie_address("b:1", rest);
            if let Ok(s) = std::str::from_utf8(rest) {
                let _ = ms::TopicName::parse(s).map(|t| (t.managed_ledger_path(), t.base().full()));
            }
        }
        6 => {
            // A header whose map offset, count and version come from the input.
            let mut log = b"BKLO".to_vec();
            log.extend_from_slice(&rest[..rest.len().min(20)]);
            log.resize(1024, 0);
            log.extend_from_slice(rest);
            if let Ok(Some(map)) = files::read_ledgers_map(&mut Cursor::new(&log), "f.log") {
                assert!(!map.is_empty());
            }
            let scan = files::scan_entry_log(Cursor::new(&log), "f.log", &|l| l % 2 == 0);
            assert!(scan.entries.iter().all(|e| e.ledger_id % 2 == 0));
            for pos in [1028u64, 1030, rest.len() as u64, u32::MAX as u64] {
                if let Ok(e) = files::read_at_location(&mut Cursor::new(&log), "f.log", pos, 1, 2) {
                    assert_eq!((e.ledger_id, e.entry_id, e.offset), (1, 2, pos));
                    assert!(pos as usize + e.stored.len() <= log.len());
                }
            }
        }
        7 => {
            let scan = files::scan_journal(Cursor::new(rest), "f.txn", &|_| true);
            assert!((1..=6).contains(&scan.version));
            for e in &scan.entries {
                assert!(e.offset as usize + e.stored.len() <= rest.len() && e.entry_id >= 0);
            }
        }
        _ => {
            let mut log = b"BKLO".to_vec();
            log.resize(1024, 0);
            log.extend_from_slice(rest);
            let scan = files::scan_entry_log(Cursor::new(&log), "f.log", &|_| true);
            for e in &scan.entries {
                assert!(e.offset as usize + e.stored.len() <= log.len());
            }
            // With digests checked, the resync after damage and the recovery of
            // an entry whose size was damaged run too: what they keep is still
            // inside the file and of a wanted ledger.
            let d = Digester::new(DigestType::Crc32c, b"");
            let check = |l: i64, b: &[u8]| Some(d.verify(b, l, None).is_ok());
            let even = |l: i64| l % 2 == 0;
            let scan = files::scan_entry_log_checked(Cursor::new(&log), "f.log", &even, &check);
            for e in &scan.entries {
                assert!(e.ledger_id % 2 == 0 && e.offset as usize + e.stored.len() <= log.len());
            }
        }
    }
});
