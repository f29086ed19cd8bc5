//! Builders of stored entries, logs and journals for the tests of these files.

use std::collections::BTreeMap;

use crate::bookkeeper::{DigestType, Digester, LedgerMetadata, LedgerState, Segment};

pub(super) fn stored(d: &Digester, ledger: i64, entry: i64, lac: i64, payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for v in [ledger, entry, lac, 10 * (entry + 1)] {
        h.extend_from_slice(&v.to_be_bytes());
    }
    let digest = d.compute(&h, payload);
    [h, digest, payload.to_vec()].concat()
}

pub(super) fn record(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
    out.extend_from_slice(bytes);
}

pub(super) fn header(size: usize) -> Vec<u8> {
    let mut h = b"BKLO".to_vec();
    h.resize(size, 0);
    h
}

pub(super) fn meta(state: LedgerState, last: i64) -> LedgerMetadata {
    LedgerMetadata {
        ledger_id: 3,
        ensemble_size: 1,
        write_quorum: 1,
        ack_quorum: 1,
        state,
        last_entry_id: last,
        length: 0,
        digest: DigestType::Crc32c,
        password: vec![],
        segments: vec![Segment {
            first_entry_id: 0,
            bookies: vec!["b".into()],
        }],
        custom: vec![],
    }
}

/// A rotated default log: header v1 patched with the map's offset and
/// count, then the ledgers map records.
pub(super) fn rotated(records: &[Vec<u8>]) -> Vec<u8> {
    let mut log = header(1024);
    let mut map: BTreeMap<i64, i64> = BTreeMap::new();
    for r in records {
        record(&mut log, r);
        let l = i64::from_be_bytes(r[0..8].try_into().unwrap());
        *map.entry(l).or_default() += r.len() as i64 + 4;
    }
    let at = log.len() as i64;
    let mut m = [(-1i64).to_be_bytes(), (-2i64).to_be_bytes()].concat();
    m.extend_from_slice(&(map.len() as i32).to_be_bytes());
    for (l, b) in &map {
        m.extend_from_slice(&l.to_be_bytes());
        m.extend_from_slice(&b.to_be_bytes());
    }
    record(&mut log, &m);
    log[4..8].copy_from_slice(&1i32.to_be_bytes());
    log[8..16].copy_from_slice(&at.to_be_bytes());
    log[16..20].copy_from_slice(&(map.len() as i32).to_be_bytes());
    log
}

pub(super) fn journal(version: i32, records: &[Vec<u8>], pad_to: usize) -> Vec<u8> {
    let mut j = Vec::new();
    if version > 1 {
        j.extend_from_slice(b"BKLG");
        j.extend_from_slice(&version.to_be_bytes());
        j.resize(if version >= 5 { 512 } else { 8 }, 0);
    }
    for r in records {
        record(&mut j, r);
        if version >= 5 {
            // A padding record (length -0x100, `Journal.PADDING_MASK`) up to the
            // next `pad_to` boundary.
            let pad = (pad_to - (j.len() + 8) % pad_to) % pad_to;
            j.extend_from_slice(&(-0x100i32).to_be_bytes());
            j.extend_from_slice(&(pad as i32).to_be_bytes());
            j.resize(j.len() + pad, 0);
        }
    }
    j.resize(j.len() + 4096, 0); // preallocated
    j
}
