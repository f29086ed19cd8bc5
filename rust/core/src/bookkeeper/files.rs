//! A bookie's files, read offline (spec bookkeeper.md §4): entry logs in the
//! default and the direct-I/O format, and the rules that pick one valid copy
//! of each entry.
//!
//! An entry log is a 1,024-byte `BKLO` header (4,096 bytes for the direct-I/O
//! logger, which leaves a dummy record at 1,024 for old scanners), then
//! `[i32 size][stored entry]` records; the stored entry is the one a bookie
//! returns on a read (ledger id, entry id, LAC, length, digest, payload).
//! Records of ledger -1 hold the ledgers map and are skipped.

use std::collections::BTreeMap;
use std::io::{self, Read, Seek, SeekFrom};

use super::client::ReadEntry;
use super::digest::Digester;
use super::ledger::{LedgerMetadata, LedgerState};

const HEADER_LEN: u64 = 1024;
const DIRECT_ALIGNMENT: u64 = 4096;
/// The direct-I/O logger's dummy record at offset 1,024: size 3,068 then ledger -1.
const DIRECT_DUMMY_SIZE: i32 = 3068;
/// The smallest real stored entry: ledger id and entry id.
const MIN_ENTRY: usize = 16;

/// The layout of an entry log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// `DefaultEntryLogger`: padding (size ≤ 0) is skipped one byte at a time.
    Default,
    /// `DirectEntryLogger`: a negative size (0xF0 padding) skips to the next
    /// 4 KiB boundary, a size of 0 ends the data.
    Direct,
}

/// One stored entry found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundEntry {
    pub ledger_id: i64,
    pub entry_id: i64,
    /// Where it was: file name and the offset of the stored entry (after its size).
    pub file: String,
    pub offset: u64,
    pub stored: Vec<u8>,
}

/// What a scan of one entry log found.
#[derive(Debug, Clone, Default)]
pub struct LogScan {
    pub format: Option<LogFormat>,
    pub entries: Vec<FoundEntry>,
    /// Damaged places, each naming the file and the offset.
    pub errors: Vec<String>,
}

fn read_at<R: Read + Seek>(r: &mut R, at: u64, buf: &mut [u8]) -> io::Result<bool> {
    r.seek(SeekFrom::Start(at))?;
    match r.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// Scans one entry log, keeping the entries of the ledgers `want` accepts.
/// Sizes are checked against the file's length before anything is read, and
/// a damaged record ends the scan with an error naming its offset.
pub fn scan_entry_log<R: Read + Seek>(mut r: R, file: &str, want: &dyn Fn(i64) -> bool) -> LogScan {
    let mut scan = LogScan::default();
    let len = match r.seek(SeekFrom::End(0)) {
        Ok(l) => l,
        Err(e) => {
            scan.errors.push(format!("{file}: cannot read: {e}"));
            return scan;
        }
    };
    if len == 0 {
        return scan; // A preallocated log not yet written.
    }
    let mut magic = [0u8; 4];
    match read_at(&mut r, 0, &mut magic) {
        Ok(true) if &magic == b"BKLO" => {}
        Ok(_) => {
            scan.errors.push(format!(
                "{file}: not an entry log (no BKLO header at offset 0)"
            ));
            return scan;
        }
        Err(e) => {
            scan.errors.push(format!("{file}: cannot read: {e}"));
            return scan;
        }
    }
    let mut head = [0u8; 12];
    let format = match read_at(&mut r, HEADER_LEN, &mut head) {
        Ok(true)
            if i32::from_be_bytes(head[0..4].try_into().expect("4")) == DIRECT_DUMMY_SIZE
                && i64::from_be_bytes(head[4..12].try_into().expect("8")) == -1 =>
        {
            LogFormat::Direct
        }
        _ => LogFormat::Default,
    };
    scan.format = Some(format);
    let mut pos = HEADER_LEN;
    let mut word = [0u8; 4];
    loop {
        match read_at(&mut r, pos, &mut word) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                scan.errors
                    .push(format!("{file}: read failed at offset {pos}: {e}"));
                break;
            }
        }
        let size = i32::from_be_bytes(word);
        if size <= 0 {
            match format {
                LogFormat::Default => pos += 1,
                LogFormat::Direct if size == 0 => break,
                LogFormat::Direct => pos = (pos / DIRECT_ALIGNMENT + 1) * DIRECT_ALIGNMENT,
            }
            continue;
        }
        let size = size as u64;
        let at = pos + 4;
        if at + size > len {
            scan.errors.push(format!(
                "{file}: record at offset {pos} claims {size} bytes, the file ends {} bytes later; the rest of the log is not read",
                len - at
            ));
            break;
        }
        if (size as usize) < MIN_ENTRY {
            scan.errors.push(format!(
                "{file}: record at offset {pos} of {size} bytes is shorter than an entry header"
            ));
            pos = at + size;
            continue;
        }
        let mut ids = [0u8; 16];
        if let Err(e) = read_at(&mut r, at, &mut ids) {
            scan.errors
                .push(format!("{file}: read failed at offset {at}: {e}"));
            break;
        }
        let ledger_id = i64::from_be_bytes(ids[0..8].try_into().expect("8"));
        let entry_id = i64::from_be_bytes(ids[8..16].try_into().expect("8"));
        if ledger_id >= 0 && entry_id >= 0 && want(ledger_id) {
            let mut stored = vec![0u8; size as usize];
            if let Err(e) = read_at(&mut r, at, &mut stored) {
                scan.errors
                    .push(format!("{file}: read failed at offset {at}: {e}"));
                break;
            }
            scan.entries.push(FoundEntry {
                ledger_id,
                entry_id,
                file: file.to_string(),
                offset: at,
                stored,
            });
        }
        pos = at + size;
    }
    scan
}

/// One ledger's entries from every copy found, as [`ReadEntry`] rows in entry
/// order (spec §4.6): each copy's digest is checked and a valid one kept (the
/// highest LAC field when valid copies differ); nothing above a CLOSED
/// ledger's last entry, or above an OPEN one's last-add-confirmed as the
/// copies show it, is returned; an entry the range promises but no valid copy
/// holds is an error row naming each copy's failure.
pub fn collect_ledger(meta: &LedgerMetadata, found: &[&FoundEntry]) -> Vec<ReadEntry> {
    let digester = Digester::new(meta.digest, &meta.password);
    let mut best: BTreeMap<i64, (i64, usize, &FoundEntry)> = BTreeMap::new();
    let mut failures: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    let mut lac = -1i64;
    for f in found {
        match digester.verify(&f.stored, meta.ledger_id, Some(f.entry_id)) {
            Ok(h) => {
                lac = lac.max(h.last_add_confirmed);
                let better = best
                    .get(&f.entry_id)
                    .is_none_or(|(l, _, _)| h.last_add_confirmed > *l);
                if better {
                    best.insert(f.entry_id, (h.last_add_confirmed, h.payload_offset, f));
                }
            }
            Err(e) => failures
                .entry(f.entry_id)
                .or_default()
                .push(format!("{} offset {}: {e}", f.file, f.offset)),
        }
    }
    let last = match meta.state {
        LedgerState::Closed => meta.last_entry_id,
        // An open (or crashed, in-recovery) ledger: what the copies confirm.
        LedgerState::Open | LedgerState::InRecovery => lac,
    };
    (0..=last)
        .map(|e| ReadEntry {
            ledger_id: meta.ledger_id,
            entry_id: e,
            data: match best.get(&e) {
                Some((_, off, f)) => Ok(f.stored[*off..].to_vec()),
                None => Err(match failures.get(&e) {
                    Some(f) => format!(
                        "ledger {} entry {e}: no valid copy in the bookie files ({})",
                        meta.ledger_id,
                        f.join("; ")
                    ),
                    None => format!(
                        "ledger {} entry {e}: not in the bookie files",
                        meta.ledger_id
                    ),
                }),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookkeeper::{DigestType, Segment};
    use std::io::Cursor;

    fn stored(d: &Digester, ledger: i64, entry: i64, lac: i64, payload: &[u8]) -> Vec<u8> {
        let mut h = Vec::new();
        for v in [ledger, entry, lac, 10 * (entry + 1)] {
            h.extend_from_slice(&v.to_be_bytes());
        }
        let digest = d.compute(&h, payload);
        [h, digest, payload.to_vec()].concat()
    }

    fn record(out: &mut Vec<u8>, bytes: &[u8]) {
        out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
        out.extend_from_slice(bytes);
    }

    fn header(size: usize) -> Vec<u8> {
        let mut h = b"BKLO".to_vec();
        h.resize(size, 0);
        h
    }

    fn meta(state: LedgerState, last: i64) -> LedgerMetadata {
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

    #[test]
    fn default_log_with_padding_map_and_other_ledgers() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let mut log = header(1024);
        record(&mut log, &stored(&d, 3, 0, -1, b"a"));
        record(&mut log, &stored(&d, 9, 0, -1, b"other ledger"));
        log.extend_from_slice(&[0, 0, 0, 0, 0]); // padding, skipped byte by byte
        record(&mut log, &stored(&d, 3, 1, 0, b"b"));
        // A ledgers-map record: ledger -1.
        record(
            &mut log,
            &[(-1i64).to_be_bytes(), (-2i64).to_be_bytes()].concat(),
        );
        let scan = scan_entry_log(Cursor::new(&log), "0.log", &|l| l == 3);
        assert_eq!(scan.format, Some(LogFormat::Default));
        assert!(scan.errors.is_empty(), "{:?}", scan.errors);
        assert_eq!(
            scan.entries.iter().map(|e| e.entry_id).collect::<Vec<_>>(),
            vec![0, 1]
        );
        assert_eq!(scan.entries[0].offset, 1028, "after the record's size");
        let rows = collect_ledger(
            &meta(LedgerState::Closed, 1),
            &scan.entries.iter().collect::<Vec<_>>(),
        );
        assert_eq!(
            rows.iter()
                .map(|r| r.data.clone().unwrap())
                .collect::<Vec<_>>(),
            vec![b"a".to_vec(), b"b".to_vec()]
        );
    }

    #[test]
    fn direct_log_skips_to_4k_boundaries_and_stops_at_zero() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let mut log = header(1024);
        log.extend_from_slice(&DIRECT_DUMMY_SIZE.to_be_bytes());
        log.extend_from_slice(&(-1i64).to_be_bytes());
        log.resize(4096, 0);
        record(&mut log, &stored(&d, 3, 0, -1, b"a"));
        log.resize(8192, 0xF0);
        record(&mut log, &stored(&d, 3, 1, 0, b"b"));
        log.resize(12288, 0);
        record(
            &mut log,
            &stored(&d, 3, 2, 1, b"never: after the end of data"),
        );
        let scan = scan_entry_log(Cursor::new(&log), "1.log", &|_| true);
        assert_eq!(scan.format, Some(LogFormat::Direct));
        assert_eq!(
            scan.entries.iter().map(|e| e.entry_id).collect::<Vec<_>>(),
            vec![0, 1]
        );
        assert_eq!(scan.entries[1].offset, 8196);
    }

    #[test]
    fn damage_is_reported_with_file_and_offset() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let mut log = header(1024);
        record(&mut log, &stored(&d, 3, 0, -1, b"a"));
        log.extend_from_slice(&1_000_000i32.to_be_bytes());
        log.extend_from_slice(b"short");
        let scan = scan_entry_log(Cursor::new(&log), "2.log", &|_| true);
        assert_eq!(scan.entries.len(), 1);
        assert!(
            scan.errors[0].contains("2.log: record at offset 1065 claims 1000000 bytes"),
            "{:?}",
            scan.errors
        );
        let scan = scan_entry_log(Cursor::new(b"nope".to_vec()), "x.log", &|_| true);
        assert!(scan.errors[0].contains("no BKLO header"));
        assert!(
            scan_entry_log(Cursor::new(Vec::new()), "empty.log", &|_| true)
                .errors
                .is_empty()
        );
    }

    #[test]
    fn copies_are_checked_deduplicated_and_bounded() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let f = |entry, lac, payload: &[u8], file: &str| FoundEntry {
            ledger_id: 3,
            entry_id: entry,
            file: file.into(),
            offset: 1028,
            stored: stored(&d, 3, entry, lac, payload),
        };
        let mut corrupt = f(1, 0, b"b", "0.log");
        *corrupt.stored.last_mut().unwrap() ^= 1;
        let found = [
            f(0, -1, b"a", "0.log"),
            corrupt,
            f(1, 0, b"b", "1.log"), // a valid copy of entry 1 elsewhere
            f(2, 1, b"c", "1.log"),
            f(2, 2, b"c", "2.log"), // a recovery rewrite: higher LAC preferred
            f(3, 2, b"unacknowledged", "2.log"),
        ];
        let refs: Vec<_> = found.iter().collect();
        let rows = collect_ledger(&meta(LedgerState::Closed, 2), &refs);
        assert_eq!(rows.len(), 3, "nothing past the closed ledger's last entry");
        assert!(rows.iter().all(|r| r.data.is_ok()));
        // Open: bounded by the highest LAC the copies carry (2).
        let rows = collect_ledger(&meta(LedgerState::Open, -1), &refs);
        assert_eq!(rows.len(), 3);
        // Entry 1's only copy corrupt, entry 4 missing.
        let rows = collect_ledger(
            &meta(LedgerState::Closed, 4),
            &[&found[0], &found[1], &found[3]],
        );
        let errs: Vec<_> = rows.iter().filter_map(|r| r.data.as_ref().err()).collect();
        assert!(
            errs[0].contains("entry 1: no valid copy") && errs[0].contains("0.log offset 1028"),
            "{errs:?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.contains("entry 4: not in the bookie files")),
            "{errs:?}"
        );
    }
}
