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

/// Reads the copy the DbLedgerStorage `locations` index points to: `pos` is
/// the offset of the stored entry in the log (after its 4-byte size), and the
/// record there must hold `ledger_id`/`entry_id`. An error names the file and
/// offset and says what is there instead.
pub fn read_at_location<R: Read + Seek>(
    r: &mut R,
    file: &str,
    pos: u64,
    ledger_id: i64,
    entry_id: i64,
) -> Result<FoundEntry, String> {
    let what = format!(
        "the locations index puts ledger {ledger_id} entry {entry_id} at {file} offset {pos}"
    );
    let len = r
        .seek(SeekFrom::End(0))
        .map_err(|e| format!("{what}: cannot read: {e}"))?;
    if pos < HEADER_LEN + 4 || pos > len {
        return Err(format!(
            "{what}, outside the entry records of the {len}-byte file"
        ));
    }
    let mut head = [0u8; 20];
    match read_at(r, pos - 4, &mut head) {
        Ok(true) => {}
        Ok(false) => return Err(format!("{what}, past the end of the {len}-byte file")),
        Err(e) => return Err(format!("{what}: read failed: {e}")),
    }
    let size = i32::from_be_bytes(head[0..4].try_into().expect("4"));
    let l = i64::from_be_bytes(head[4..12].try_into().expect("8"));
    let e = i64::from_be_bytes(head[12..20].try_into().expect("8"));
    if size < MIN_ENTRY as i32 || pos + size as u64 > len {
        return Err(format!(
            "{what}, where the record size is {size} (the file ends at {len})"
        ));
    }
    if (l, e) != (ledger_id, entry_id) {
        return Err(format!(
            "{what}, where the record holds ledger {l} entry {e}"
        ));
    }
    let mut stored = vec![0u8; size as usize];
    match read_at(r, pos, &mut stored) {
        Ok(true) => {}
        Ok(false) => return Err(format!("{what}, past the end of the file")),
        Err(e) => return Err(format!("{what}: read failed: {e}")),
    }
    Ok(FoundEntry {
        ledger_id,
        entry_id,
        file: file.to_string(),
        offset: pos,
        stored,
    })
}

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

/// One ledger directory's files (`<ledgerDir>/current`).
#[derive(Debug, Clone, Default)]
pub struct LedgerDirFiles {
    /// The directory, for messages.
    pub dir: String,
    /// Its entry logs, `<hex log id>.log`.
    pub logs: Vec<String>,
    /// The DbLedgerStorage `locations` index rows `(ledger, entry, location)`
    /// of the wanted ledgers, when the index could be read; `location` is
    /// `log id << 32 | offset after the record's size`.
    pub index: Option<Vec<(i64, i64, u64)>>,
}

/// What [`read_bookie`] found.
#[derive(Debug, Clone, Default)]
pub struct BookieRead {
    /// Each wanted ledger's rows, in the order the ledgers were given.
    pub rows: Vec<ReadEntry>,
    /// Damaged places in the files and disagreements of the index with the
    /// logs, each naming a file and offset.
    pub errors: Vec<String>,
    /// The ledgers whose entry logs were scanned (all of them when no
    /// directory has an index).
    pub scanned: Vec<i64>,
    /// The ledgers whose journal records were read.
    pub journaled: Vec<i64>,
}

/// The log id of `<hex>.log`.
fn log_id(path: &str) -> Option<u64> {
    let name = path.rsplit(['/', '\\']).next()?;
    u64::from_str_radix(name.strip_suffix(".log")?, 16).ok()
}

/// Rows that are not a ledger's complete, valid range.
fn incomplete(rows: &[ReadEntry]) -> bool {
    rows.iter().any(|r| r.data.is_err())
}

/// A bookie's ledgers read from its files (spec bookkeeper.md §4.6).
///
/// Where a directory has the `locations` index, each entry is read where
/// the index puts it. A ledger is also scanned for in every entry log when
/// the index disagrees with a log about it (an error naming the file and
/// offset), when a copy the index gives fails its digest or an entry of its
/// range is missing, and when it is not closed (its end is then what the
/// copies confirm, and a crash may have left entries the index lacks), so
/// the index never loses an entry a scan would find. Directories without an
/// index are scanned for every wanted ledger. The `journals` (`*.txn`) are
/// read last, for the ledgers still incomplete or not closed: entries a
/// bookie journaled but had not flushed when it stopped.
pub fn read_bookie(
    dirs: &[LedgerDirFiles],
    journals: &[String],
    metas: &[LedgerMetadata],
) -> BookieRead {
    use std::collections::{BTreeSet, HashMap};
    let mut out = BookieRead::default();
    let wanted: BTreeSet<i64> = metas.iter().map(|m| m.ledger_id).collect();
    let mut found: Vec<FoundEntry> = Vec::new();
    let mut suspect: BTreeSet<i64> = BTreeSet::new();
    let open =
        |path: &str| std::fs::File::open(path).map_err(|e| format!("{path}: cannot open: {e}"));
    let scan_logs = |logs: &[String],
                     want: &BTreeSet<i64>,
                     found: &mut Vec<FoundEntry>,
                     errors: &mut Vec<String>| {
        for path in logs {
            match open(path) {
                Ok(f) => {
                    let s = scan_entry_log(io::BufReader::new(f), path, &|l| want.contains(&l));
                    found.extend(s.entries);
                    errors.extend(s.errors);
                }
                Err(e) => errors.push(e),
            }
        }
    };
    for d in dirs {
        let Some(index) = &d.index else {
            scan_logs(&d.logs, &wanted, &mut found, &mut out.errors);
            continue;
        };
        let by_id: HashMap<u64, &String> = d
            .logs
            .iter()
            .filter_map(|p| Some((log_id(p)?, p)))
            .collect();
        let mut handles: HashMap<u64, Result<std::fs::File, String>> = HashMap::new();
        for &(l, e, location) in index {
            if !wanted.contains(&l) {
                continue;
            }
            let (id, pos) = (location >> 32, location & 0xffff_ffff);
            let Some(path) = by_id.get(&id) else {
                out.errors.push(format!(
                    "the locations index of {} puts ledger {l} entry {e} in entry log {id:x}.log, which is not there",
                    d.dir
                ));
                suspect.insert(l);
                continue;
            };
            let got = match handles.entry(id).or_insert_with(|| open(path)) {
                Ok(f) => read_at_location(f, path, pos, l, e),
                Err(err) => Err(err.clone()),
            };
            match got {
                Ok(f) => found.push(f),
                Err(err) => {
                    out.errors.push(err);
                    suspect.insert(l);
                }
            }
        }
    }
    let rows_of = |found: &[FoundEntry], m: &LedgerMetadata| {
        let mine: Vec<_> = found
            .iter()
            .filter(|f| f.ledger_id == m.ledger_id)
            .collect();
        collect_ledger(m, &mine)
    };
    let indexed: Vec<&LedgerDirFiles> = dirs.iter().filter(|d| d.index.is_some()).collect();
    let needs_more = |found: &[FoundEntry], m: &LedgerMetadata| {
        m.state != LedgerState::Closed || incomplete(&rows_of(found, m))
    };
    if indexed.is_empty() {
        out.scanned = wanted.iter().copied().collect();
    } else {
        let rescan: BTreeSet<i64> = metas
            .iter()
            .filter(|m| suspect.contains(&m.ledger_id) || needs_more(&found, m))
            .map(|m| m.ledger_id)
            .collect();
        if !rescan.is_empty() {
            // The index copies already found are found again: keep one of each place.
            let mut more = Vec::new();
            for d in &indexed {
                scan_logs(&d.logs, &rescan, &mut more, &mut out.errors);
            }
            let seen: BTreeSet<(String, u64)> =
                found.iter().map(|f| (f.file.clone(), f.offset)).collect();
            found.extend(
                more.into_iter()
                    .filter(|f| !seen.contains(&(f.file.clone(), f.offset))),
            );
        }
        let scanned: BTreeSet<i64> = if dirs.len() > indexed.len() {
            wanted.clone()
        } else {
            rescan
        };
        out.scanned = scanned.into_iter().collect();
    }
    if !journals.is_empty() {
        let again: BTreeSet<i64> = metas
            .iter()
            .filter(|m| needs_more(&found, m))
            .map(|m| m.ledger_id)
            .collect();
        if !again.is_empty() {
            for path in journals {
                match open(path) {
                    Ok(f) => {
                        let s = scan_journal(io::BufReader::new(f), path, &|l| again.contains(&l));
                        found.extend(s.entries);
                        out.errors.extend(s.errors);
                    }
                    Err(e) => out.errors.push(e),
                }
            }
            out.journaled = again.into_iter().collect();
        }
    }
    for m in metas {
        out.rows.extend(rows_of(&found, m));
    }
    out
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

    /// A rotated default log: header v1 patched with the map's offset and
    /// count, then the ledgers map records.
    fn rotated(records: &[Vec<u8>]) -> Vec<u8> {
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

    #[test]
    fn a_location_must_hold_the_entry_the_index_names() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let mut log = header(1024);
        let a = stored(&d, 3, 0, -1, b"a");
        record(&mut log, &a);
        record(&mut log, &stored(&d, 3, 1, 0, b"b"));
        let second = 1024 + 4 + a.len() as u64 + 4;
        let mut c = Cursor::new(&log);
        let got = read_at_location(&mut c, "0.log", second, 3, 1).unwrap();
        assert_eq!((got.entry_id, got.offset), (1, second));
        let e = read_at_location(&mut c, "0.log", 1028, 3, 1).unwrap_err();
        assert!(
            e.contains("0.log offset 1028") && e.contains("holds ledger 3 entry 0"),
            "{e}"
        );
        let e = read_at_location(&mut c, "0.log", 1 << 31, 3, 1).unwrap_err();
        assert!(e.contains("outside the entry records"), "{e}");
        let e = read_at_location(&mut c, "0.log", 1030, 3, 1).unwrap_err();
        assert!(
            e.contains("record size") || e.contains("holds ledger"),
            "{e}"
        );
        let e = read_at_location(&mut c, "0.log", 12, 3, 1).unwrap_err();
        assert!(e.contains("outside the entry records"), "{e}");
    }

    fn journal(version: i32, records: &[Vec<u8>], pad_to: usize) -> Vec<u8> {
        let mut j = Vec::new();
        if version > 1 {
            j.extend_from_slice(b"BKLG");
            j.extend_from_slice(&version.to_be_bytes());
            j.resize(if version >= 5 { 512 } else { 8 }, 0);
        }
        for r in records {
            record(&mut j, r);
            if version >= 5 {
                // A padding record up to the next `pad_to` boundary.
                let pad = (pad_to - (j.len() + 8) % pad_to) % pad_to;
                j.extend_from_slice(&JOURNAL_PADDING.to_be_bytes());
                j.extend_from_slice(&(pad as i32).to_be_bytes());
                j.resize(j.len() + pad, 0);
            }
        }
        j.resize(j.len() + 4096, 0); // preallocated
        j
    }

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

    /// A scratch directory for one test.
    fn scratch(name: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("pe-files-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    #[test]
    fn read_bookie_uses_the_index_and_falls_back_to_the_scan_and_the_journal() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let dir = scratch("bookie");
        let recs: Vec<_> = (0..4)
            .map(|e| stored(&d, 3, e, e - 1, format!("p{e}").as_bytes()))
            .collect();
        let log = rotated(&recs);
        let log_path = dir.join("a.log");
        std::fs::write(&log_path, &log).unwrap();
        let path = log_path.to_str().unwrap().to_string();
        let mut at = 1028u64;
        let mut index = Vec::new();
        for (e, r) in recs.iter().enumerate() {
            index.push((3i64, e as i64, (0xa << 32) | at));
            at += r.len() as u64 + 4;
        }
        let files = |index: Vec<(i64, i64, u64)>| LedgerDirFiles {
            dir: dir.display().to_string(),
            logs: vec![path.clone()],
            index: Some(index),
        };
        let ok = |r: &BookieRead| {
            r.rows
                .iter()
                .map(|r| r.data.clone().unwrap())
                .collect::<Vec<_>>()
        };
        let want: Vec<Vec<u8>> = (0..4).map(|e| format!("p{e}").into_bytes()).collect();

        // The index alone: nothing scanned.
        let r = read_bookie(
            &[files(index.clone())],
            &[],
            &[meta(LedgerState::Closed, 3)],
        );
        assert_eq!(ok(&r), want);
        assert!(r.errors.is_empty() && r.scanned.is_empty(), "{r:?}");
        // No index: every log scanned, same entries.
        let scan_only = LedgerDirFiles {
            index: None,
            ..files(vec![])
        };
        let r = read_bookie(&[scan_only], &[], &[meta(LedgerState::Closed, 3)]);
        assert_eq!((ok(&r), r.scanned.clone()), (want.clone(), vec![3]));

        // The index points entry 2 at entry 1's record, and lacks entry 3:
        // an error naming the file and offset, and the scan finds both.
        let mut wrong = index.clone();
        wrong[2].2 = index[1].2;
        wrong.pop();
        let r = read_bookie(&[files(wrong)], &[], &[meta(LedgerState::Closed, 3)]);
        assert_eq!(ok(&r), want);
        assert_eq!(r.scanned, vec![3]);
        assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
        let off = index[1].2 & 0xffff_ffff;
        assert!(
            r.errors[0].contains(&format!("a.log offset {off}"))
                && r.errors[0].contains("ledger 3 entry 2"),
            "{:?}",
            r.errors
        );
        // An index naming a log that is not there.
        let mut gone = index.clone();
        gone[0].2 = (0xb << 32) | 1028;
        let r = read_bookie(&[files(gone)], &[], &[meta(LedgerState::Closed, 3)]);
        assert_eq!(ok(&r), want);
        assert!(
            r.errors[0].contains("entry log b.log, which is not there"),
            "{:?}",
            r.errors
        );

        // Entries 4 and 5 only in the journal (journaled, not flushed):
        // read for a closed ledger that ends at 5 and for an open one.
        let more: Vec<_> = (4..6)
            .map(|e| stored(&d, 3, e, e - 1, format!("p{e}").as_bytes()))
            .collect();
        let jpath = dir.join("19a.txn");
        std::fs::write(&jpath, journal(6, &[recs.clone(), more].concat(), 512)).unwrap();
        let j = vec![jpath.to_str().unwrap().to_string()];
        let mut want6 = want.clone();
        want6.extend((4..6).map(|e| format!("p{e}").into_bytes()));
        let r = read_bookie(&[files(index.clone())], &j, &[meta(LedgerState::Closed, 5)]);
        assert_eq!((ok(&r), r.journaled.clone()), (want6.clone(), vec![3]));
        let r = read_bookie(&[files(index.clone())], &j, &[meta(LedgerState::Open, -1)]);
        // Open: up to the highest LAC a copy carries (entry 5 confirms 4).
        assert_eq!(ok(&r), want6[..5].to_vec());
        // Without the journal the closed ledger's entries 4 and 5 are error rows.
        let r = read_bookie(&[files(index)], &[], &[meta(LedgerState::Closed, 5)]);
        assert_eq!(r.rows.iter().filter(|r| r.data.is_err()).count(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
