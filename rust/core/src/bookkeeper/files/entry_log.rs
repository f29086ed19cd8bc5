//! Entry logs in the default and the direct-I/O format (spec bookkeeper.md
//! §4): the `BKLO` header, the ledgers map a rotated log ends with, and the
//! scan of its records.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};

use super::record::{read_at, FoundEntry, HEADER_LEN, MIN_ENTRY};

const DIRECT_ALIGNMENT: u64 = 4096;
/// The direct-I/O logger's dummy record at offset 1,024: size 3,068 then ledger -1.
const DIRECT_DUMMY_SIZE: i32 = 3068;

/// The layout of an entry log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// `DefaultEntryLogger`: padding (size ≤ 0) is skipped one byte at a time.
    Default,
    /// `DirectEntryLogger`: a negative size (0xF0 padding) skips to the next
    /// 4 KiB boundary, a size of 0 ends the data.
    Direct,
}

/// What a scan of one entry log found.
#[derive(Debug, Clone, Default)]
pub struct LogScan {
    pub format: Option<LogFormat>,
    pub entries: Vec<FoundEntry>,
    /// Damaged places, each naming the file and the offset.
    pub errors: Vec<String>,
}

/// The fields of an entry log's `BKLO` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogHeader {
    /// 1 when the log can carry a ledgers map, 0 for the oldest logs.
    pub version: i32,
    /// Where the ledgers map starts; 0 until the log is rotated.
    pub map_offset: i64,
    /// How many ledgers the map names.
    pub ledger_count: i32,
}

/// The most ledgers one ledgers-map record holds (`LEDGERS_MAP_MAX_BATCH_SIZE`).
const MAP_BATCH: usize = 10_000;
/// A ledgers-map record: ledger -1, entry -2, count, then (ledger, bytes) pairs.
const MAP_RECORD_HEAD: usize = 8 + 8 + 4;
const MAP_RECORD_MAX: usize = MAP_RECORD_HEAD + 16 * MAP_BATCH;

/// Reads the header of an entry log (`None` for an empty, preallocated log).
pub fn read_log_header<R: Read + Seek>(r: &mut R) -> Result<Option<LogHeader>, String> {
    let len = r
        .seek(SeekFrom::End(0))
        .map_err(|e| format!("cannot read: {e}"))?;
    if len == 0 {
        return Ok(None);
    }
    let mut head = [0u8; 24];
    match read_at(r, 0, &mut head) {
        Ok(true) if &head[0..4] == b"BKLO" => Ok(Some(LogHeader {
            version: i32::from_be_bytes(head[4..8].try_into().expect("4")),
            map_offset: i64::from_be_bytes(head[8..16].try_into().expect("8")),
            ledger_count: i32::from_be_bytes(head[16..20].try_into().expect("4")),
        })),
        Ok(_) => Err("not an entry log (no BKLO header at offset 0)".into()),
        Err(e) => Err(format!("cannot read: {e}")),
    }
}

/// The ledgers map a rotated entry log ends with: ledger id → bytes its
/// records take (entry sizes plus their 4-byte size fields). `None` when the
/// log has none (an old version-0 log, or the log being written when the
/// bookie stopped); an error names the damaged offset.
pub fn read_ledgers_map<R: Read + Seek>(
    r: &mut R,
    file: &str,
) -> Result<Option<BTreeMap<i64, i64>>, String> {
    let Some(h) = read_log_header(r).map_err(|e| format!("{file}: {e}"))? else {
        return Ok(None);
    };
    if h.version < 1 || h.map_offset == 0 {
        return Ok(None);
    }
    let len = r
        .seek(SeekFrom::End(0))
        .map_err(|e| format!("{file}: cannot read: {e}"))?;
    if h.map_offset < HEADER_LEN as i64 || h.map_offset as u64 >= len || h.ledger_count < 0 {
        return Err(format!(
            "{file}: header names a ledgers map at offset {} with {} ledgers, outside the file of {len} bytes",
            h.map_offset, h.ledger_count
        ));
    }
    let mut map = BTreeMap::new();
    let mut pos = h.map_offset as u64;
    let mut word = [0u8; 4];
    while pos < len {
        match read_at(r, pos, &mut word) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(format!("{file}: read failed at offset {pos}: {e}")),
        }
        let size = i32::from_be_bytes(word);
        if size <= 0 {
            break; // The end of the map: preallocated zeros or the direct logger's 0xF0 padding.
        }
        let size = size as usize;
        if !(MAP_RECORD_HEAD..=MAP_RECORD_MAX).contains(&size)
            || !(size - MAP_RECORD_HEAD).is_multiple_of(16)
            || pos + 4 + size as u64 > len
        {
            return Err(format!(
                "{file}: ledgers-map record at offset {pos} of {size} bytes is not a ledgers map"
            ));
        }
        let mut rec = vec![0u8; size];
        match read_at(r, pos + 4, &mut rec) {
            Ok(true) => {}
            Ok(false) => {
                return Err(format!(
                    "{file}: ledgers-map record at offset {pos} is cut short"
                ))
            }
            Err(e) => return Err(format!("{file}: read failed at offset {pos}: {e}")),
        }
        let l = i64::from_be_bytes(rec[0..8].try_into().expect("8"));
        let e = i64::from_be_bytes(rec[8..16].try_into().expect("8"));
        let count = i32::from_be_bytes(rec[16..20].try_into().expect("4"));
        if l != -1 || e != -2 || count < 0 || count as usize * 16 != size - MAP_RECORD_HEAD {
            return Err(format!(
                "{file}: ledgers-map record at offset {pos} holds ledger {l} entry {e} count {count}, not a ledgers map"
            ));
        }
        for pair in rec[MAP_RECORD_HEAD..].chunks_exact(16) {
            let ledger = i64::from_be_bytes(pair[0..8].try_into().expect("8"));
            let bytes = i64::from_be_bytes(pair[8..16].try_into().expect("8"));
            *map.entry(ledger).or_insert(0i64) =
                map.get(&ledger).copied().unwrap_or(0).saturating_add(bytes);
        }
        pos += 4 + size as u64;
    }
    if map.len() != h.ledger_count as usize || map.is_empty() {
        return Err(format!(
            "{file}: the ledgers map at offset {} names {} ledgers, the header says {}",
            h.map_offset,
            map.len(),
            h.ledger_count
        ));
    }
    Ok(Some(map))
}

/// Scans one entry log, keeping the entries of the ledgers `want` accepts.
/// Sizes are checked against the file's length before anything is read, and
/// a damaged record ends the scan with an error naming its offset.
///
/// A rotated log's ledgers map is read first: a log whose map names none of
/// the wanted ledgers is not scanned, and for each wanted ledger it names,
/// the bytes the scan found must add up to the map's count (a mismatch is an
/// error naming the log). A damaged map is an error, and the log is scanned.
pub fn scan_entry_log<R: Read + Seek>(mut r: R, file: &str, want: &dyn Fn(i64) -> bool) -> LogScan {
    let mut scan = LogScan::default();
    let map = match read_ledgers_map(&mut r, file) {
        Ok(m) => m,
        Err(e) => {
            let fatal = e.contains("no BKLO header") || e.contains("cannot read");
            scan.errors.push(e);
            if fatal {
                return scan;
            }
            None
        }
    };
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
    if let Some(m) = &map {
        if !m.keys().any(|l| *l >= 0 && want(*l)) {
            return scan;
        }
    }
    let mut bytes: BTreeMap<i64, i64> = BTreeMap::new();
    let mut cut = false;
    let mut pos = HEADER_LEN;
    let mut word = [0u8; 4];
    loop {
        match read_at(&mut r, pos, &mut word) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                scan.errors
                    .push(format!("{file}: read failed at offset {pos}: {e}"));
                cut = true;
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
            cut = true;
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
            cut = true;
            break;
        }
        let ledger_id = i64::from_be_bytes(ids[0..8].try_into().expect("8"));
        let entry_id = i64::from_be_bytes(ids[8..16].try_into().expect("8"));
        if ledger_id >= 0 && want(ledger_id) {
            *bytes.entry(ledger_id).or_default() += size as i64 + 4;
        }
        if ledger_id >= 0 && entry_id >= 0 && want(ledger_id) {
            let mut stored = vec![0u8; size as usize];
            if let Err(e) = read_at(&mut r, at, &mut stored) {
                scan.errors
                    .push(format!("{file}: read failed at offset {at}: {e}"));
                cut = true;
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
    if let (Some(m), false) = (&map, cut) {
        let wanted = m.keys().chain(bytes.keys()).filter(|l| want(**l));
        for l in wanted.copied().collect::<std::collections::BTreeSet<_>>() {
            let (expect, got) = (
                m.get(&l).copied().unwrap_or(0),
                bytes.get(&l).copied().unwrap_or(0),
            );
            if expect != got {
                scan.errors.push(format!(
                    "{file}: the ledgers map gives ledger {l} {expect} bytes, the records found hold {got}"
                ));
            }
        }
    }
    scan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookkeeper::files::collect_ledger;
    use crate::bookkeeper::files::test_support::{header, meta, record, rotated, stored};
    use crate::bookkeeper::{DigestType, Digester, LedgerState};
    use std::io::Cursor;

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
    fn ledgers_map_is_read_used_to_skip_and_checked() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let recs = [
            stored(&d, 3, 0, -1, b"a"),
            stored(&d, 9, 0, -1, b"other"),
            stored(&d, 3, 1, 0, b"b"),
        ];
        let log = rotated(&recs);
        let map = read_ledgers_map(&mut Cursor::new(&log), "0.log")
            .unwrap()
            .unwrap();
        assert_eq!(
            map,
            BTreeMap::from([
                (3, (recs[0].len() + recs[2].len() + 8) as i64),
                (9, recs[1].len() as i64 + 4)
            ])
        );
        // Ledger 5 is not in the map: the log is not scanned at all.
        let skipped = scan_entry_log(Cursor::new(&log), "0.log", &|l| l == 5);
        assert!(skipped.entries.is_empty() && skipped.errors.is_empty());
        assert_eq!(skipped.format, Some(LogFormat::Default));
        let scan = scan_entry_log(Cursor::new(&log), "0.log", &|l| l == 3);
        assert!(scan.errors.is_empty(), "{:?}", scan.errors);
        assert_eq!(scan.entries.len(), 2);
        // The active log (no map yet) and a version-0 log have none.
        let mut active = log.clone();
        active[8..20].fill(0);
        assert_eq!(
            read_ledgers_map(&mut Cursor::new(&active), "0.log"),
            Ok(None)
        );
        let mut v0 = log.clone();
        v0[4..8].fill(0);
        assert_eq!(read_ledgers_map(&mut Cursor::new(&v0), "0.log"), Ok(None));

        // A record the map counts for ledger 3 but that now says ledger 9
        // (damage the digest alone would not show): the byte counts disagree.
        let mut lost = log.clone();
        let second_of_3 = 1024 + 4 + recs[0].len() + 4 + recs[1].len() + 4;
        lost[second_of_3..second_of_3 + 8].copy_from_slice(&9i64.to_be_bytes());
        let scan = scan_entry_log(Cursor::new(&lost), "0.log", &|l| l == 3);
        assert_eq!(scan.entries.len(), 1);
        assert!(
            scan.errors
                .iter()
                .any(|e| e.contains("0.log: the ledgers map gives ledger 3")),
            "{:?}",
            scan.errors
        );

        // A damaged map: an error naming its offset, and the log is scanned anyway.
        let map_at = i64::from_be_bytes(log[8..16].try_into().unwrap()) as usize;
        let mut bad = log.clone();
        bad[map_at + 4..map_at + 12].copy_from_slice(&7i64.to_be_bytes());
        let scan = scan_entry_log(Cursor::new(&bad), "0.log", &|l| l == 3);
        assert_eq!(scan.entries.len(), 2);
        assert!(
            scan.errors[0].contains(&format!("record at offset {map_at}"))
                && scan.errors[0].contains("not a ledgers map"),
            "{:?}",
            scan.errors
        );
        let mut beyond = log.clone();
        beyond[8..16].copy_from_slice(&(1i64 << 40).to_be_bytes());
        assert!(read_ledgers_map(&mut Cursor::new(&beyond), "0.log")
            .unwrap_err()
            .contains("outside the file"));
        let mut count = log.clone();
        count[16..20].copy_from_slice(&3i32.to_be_bytes());
        assert!(read_ledgers_map(&mut Cursor::new(&count), "0.log")
            .unwrap_err()
            .contains("the header says 3"));
    }

    /// A direct-I/O log as `DirectEntryLogger` leaves it on close: a 4 KiB
    /// header with the dummy record, entries, 0xF0 padding to 4 KiB, then the
    /// ledgers map on an aligned offset, padded again.
    #[test]
    fn direct_log_with_its_ledgers_map() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let mut log = header(1024);
        log[4..8].copy_from_slice(&1i32.to_be_bytes());
        log.extend_from_slice(&DIRECT_DUMMY_SIZE.to_be_bytes());
        log.extend_from_slice(&(-1i64).to_be_bytes());
        log.resize(4096, 0);
        let a = stored(&d, 3, 0, -1, b"a");
        let b = stored(&d, 3, 1, 0, b"b");
        record(&mut log, &a);
        record(&mut log, &b);
        log.resize(8192, 0xF0);
        let mut m = [(-1i64).to_be_bytes(), (-2i64).to_be_bytes()].concat();
        m.extend_from_slice(&1i32.to_be_bytes());
        m.extend_from_slice(&3i64.to_be_bytes());
        m.extend_from_slice(&((a.len() + b.len() + 8) as i64).to_be_bytes());
        record(&mut log, &m);
        log.resize(12288, 0xF0);
        log[8..16].copy_from_slice(&8192i64.to_be_bytes());
        log[16..20].copy_from_slice(&1i32.to_be_bytes());
        assert_eq!(
            read_ledgers_map(&mut Cursor::new(&log), "5.log")
                .unwrap()
                .unwrap()
                .len(),
            1
        );
        let scan = scan_entry_log(Cursor::new(&log), "5.log", &|l| l == 3);
        assert_eq!(scan.format, Some(LogFormat::Direct));
        assert!(scan.errors.is_empty(), "{:?}", scan.errors);
        assert_eq!(
            scan.entries
                .iter()
                .map(|e| (e.entry_id, e.offset))
                .collect::<Vec<_>>(),
            vec![(0, 4100), (1, 4100 + a.len() as u64 + 4)]
        );
    }
}
