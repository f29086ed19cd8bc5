//! Journal files (`<hex id>.txn`, spec bookkeeper.md §4.5).

use std::io::{Read, Seek, SeekFrom};

use super::record::{read_at, FoundEntry, MIN_ENTRY};

/// The journal's `BKLG` header is padded to this many bytes from version 5 on.
const JOURNAL_HEADER_V5: u64 = 512;
/// The journal's padding record (`Journal.PADDING_MASK`), version 5 on.
const JOURNAL_PADDING: i32 = -0x100;
const JOURNAL_MAX_VERSION: i32 = 6;

/// What a scan of one journal file found.
#[derive(Debug, Clone, Default)]
pub struct JournalScan {
    /// The journal format version (1 when the file has no `BKLG` header).
    pub version: i32,
    /// Data entries of the wanted ledgers; meta records (master key, fence,
    /// force, explicit LAC: entry ids below 0) are skipped.
    pub entries: Vec<FoundEntry>,
    pub errors: Vec<String>,
}

/// Scans one journal file (`<hex id>.txn`, spec bookkeeper.md §4.5): a
/// `BKLG` + version header (512 bytes from version 5, 8 before, none in
/// version 1), then `[i32 len][record]`; a record is the stored entry as the
/// client sent it. A zero length ends the data; from version 5 a length of
/// -0x100 is followed by the length of zero padding to skip.
pub fn scan_journal<R: Read + Seek>(
    mut r: R,
    file: &str,
    want: &dyn Fn(i64) -> bool,
) -> JournalScan {
    let mut scan = JournalScan {
        version: 1,
        ..Default::default()
    };
    let len = match r.seek(SeekFrom::End(0)) {
        Ok(l) => l,
        Err(e) => {
            scan.errors.push(format!("{file}: cannot read: {e}"));
            return scan;
        }
    };
    let mut head = [0u8; 8];
    let mut pos = 0u64;
    match read_at(&mut r, 0, &mut head) {
        Ok(true) if &head[0..4] == b"BKLG" => {
            let v = i32::from_be_bytes(head[4..8].try_into().expect("4"));
            if !(1..=JOURNAL_MAX_VERSION).contains(&v) {
                scan.errors.push(format!(
                    "{file}: journal format version {v} at offset 4 is not one of 1 to {JOURNAL_MAX_VERSION}"
                ));
                return scan;
            }
            scan.version = v;
            pos = if v >= 5 { JOURNAL_HEADER_V5 } else { 8 };
        }
        Ok(_) => {}
        Err(e) => {
            scan.errors.push(format!("{file}: cannot read: {e}"));
            return scan;
        }
    }
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
        if size == 0 {
            break;
        }
        if size < 0 {
            if size != JOURNAL_PADDING || scan.version < 5 {
                scan.errors.push(format!(
                    "{file}: record at offset {pos} has a negative length {size}; the rest of the journal is not read"
                ));
                break;
            }
            match read_at(&mut r, pos + 4, &mut word) {
                Ok(true) => {}
                _ => break,
            }
            let pad = i32::from_be_bytes(word);
            if pad < 0 || pos + 8 + pad as u64 > len {
                scan.errors.push(format!(
                    "{file}: padding record at offset {pos} claims {pad} bytes, past the end of the {len}-byte file"
                ));
                break;
            }
            pos += 8 + pad as u64;
            continue;
        }
        let size = size as u64;
        let at = pos + 4;
        if at + size > len {
            scan.errors.push(format!(
                "{file}: record at offset {pos} claims {size} bytes, the file ends {} bytes later; the rest of the journal is not read",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookkeeper::files::collect_ledger;
    use crate::bookkeeper::files::test_support::{journal, meta, stored};
    use crate::bookkeeper::{DigestType, Digester, LedgerState};
    use std::io::Cursor;

    #[test]
    fn journals_of_each_version_give_their_data_entries() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let mut key = [3i64.to_be_bytes(), (-0x1000i64).to_be_bytes()].concat();
        key.extend_from_slice(&20i32.to_be_bytes());
        key.extend_from_slice(&[7; 20]);
        let fence = [3i64.to_be_bytes(), (-0x2000i64).to_be_bytes()].concat();
        let recs = [
            key,
            stored(&d, 3, 0, -1, b"a"),
            stored(&d, 9, 0, -1, b"other"),
            stored(&d, 3, 1, 0, b"b"),
            fence,
        ];
        for version in [1, 4, 5, 6] {
            let j = journal(version, &recs, 4096);
            let scan = scan_journal(Cursor::new(&j), "1a.txn", &|l| l == 3);
            assert_eq!(scan.version, version);
            assert!(scan.errors.is_empty(), "v{version}: {:?}", scan.errors);
            assert_eq!(
                scan.entries.iter().map(|e| e.entry_id).collect::<Vec<_>>(),
                vec![0, 1],
                "v{version}"
            );
            let rows = collect_ledger(
                &meta(LedgerState::Closed, 1),
                &scan.entries.iter().collect::<Vec<_>>(),
            );
            assert!(rows.iter().all(|r| r.data.is_ok()));
        }
        // A padding record is no record before version 5.
        let j = journal(6, &recs, 512);
        let mut v4 = journal(4, &recs[..1], 512);
        v4.truncate(8 + 4 + recs[0].len());
        v4.extend_from_slice(&JOURNAL_PADDING.to_be_bytes());
        v4.extend_from_slice(&8i32.to_be_bytes());
        v4.resize(v4.len() + 8, 0);
        let scan = scan_journal(Cursor::new(&v4), "1a.txn", &|_| true);
        assert!(
            scan.errors
                .iter()
                .any(|e| e.contains("negative length -256")),
            "{:?}",
            scan.errors
        );
        let mut v9 = j.clone();
        v9[4..8].copy_from_slice(&9i32.to_be_bytes());
        assert!(scan_journal(Cursor::new(&v9), "x.txn", &|_| true).errors[0].contains("version 9"));
        // A record cut short, and a padding record past the end.
        let cut = j[..512 + 4 + 20].to_vec();
        let scan = scan_journal(Cursor::new(&cut), "c.txn", &|_| true);
        assert!(
            scan.errors
                .iter()
                .any(|e| e.contains("c.txn: record at offset")),
            "{:?}",
            scan.errors
        );
        let mut pad = j[..512].to_vec();
        pad.extend_from_slice(&JOURNAL_PADDING.to_be_bytes());
        pad.extend_from_slice(&i32::MAX.to_be_bytes());
        let scan = scan_journal(Cursor::new(&pad), "p.txn", &|_| true);
        assert!(
            scan.errors[0].contains("padding record at offset 512"),
            "{:?}",
            scan.errors
        );
    }
}
