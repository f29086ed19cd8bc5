//! Entry logs in the default and the direct-I/O format (spec bookkeeper.md
//! §4): the `BKLO` header, the ledgers map a rotated log ends with, and the
//! scan of its records.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};

use super::blocks::{Blocks, BLOCK};
use super::record::{read_at, FoundEntry, HEADER_LEN, MIN_ENTRY};
use crate::bookkeeper::digest::ENTRY_HEADER_LEN;

const DIRECT_ALIGNMENT: u64 = 4096;
/// The direct-I/O logger's dummy record at offset 1,024: size 3,068 then ledger -1.
const DIRECT_DUMMY_SIZE: i32 = 3068;

/// The layout of an entry log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// `DefaultEntryLogger`: zero padding is skipped (BookKeeper steps over
    /// it a byte at a time; the scan skips the run and resumes where a record
    /// parses); a negative size is damage.
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

/// Scans one entry log, keeping the entries of the ledgers `want` accepts;
/// [`scan_entry_log_checked`] without a digest check.
pub fn scan_entry_log<R: Read + Seek>(r: R, file: &str, want: &dyn Fn(i64) -> bool) -> LogScan {
    scan_entry_log_checked(r, file, want, &|_, _| None)
}

/// Scans one entry log, keeping the entries of the ledgers `want` accepts.
/// `check(ledger, stored entry)` says whether an entry's digest verifies
/// (`None` when it cannot tell); the scan uses it to tell a damaged body
/// from a damaged size, and to resume only at records that verify.
///
/// Sizes are checked against the file's length before anything is read.
/// Runs of zero padding are skipped a block at a time. A damaged place (a
/// size too big for the file, negative, too small for an entry header, or
/// a header whose ids cannot be an entry's) is one error naming the file,
/// the offset and why; the scan then resumes at the next offset where an
/// entry record of a wanted ledger parses (and verifies, when `check` can
/// tell), so every intact entry after the damage is kept. When the record
/// at the damaged offset verifies up to that next record (only its size was
/// damaged), its entry is kept too.
///
/// A rotated log's ledgers map is read first: a log whose map names none of
/// the wanted ledgers is not scanned, a record of a ledger the map does not
/// name is damage, and for each wanted ledger it names the bytes the scan
/// found must add up to the map's count (a mismatch is an error naming the
/// log; not checked after damage, whose error already says what was lost).
/// A damaged map is an error, and the log is scanned.
pub fn scan_entry_log_checked<R: Read + Seek>(
    mut r: R,
    file: &str,
    want: &dyn Fn(i64) -> bool,
    check: &dyn Fn(i64, &[u8]) -> Option<bool>,
) -> LogScan {
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
    // No entry record starts at or after a rotated log's map.
    let map_at = match (&map, read_log_header(&mut r)) {
        (Some(_), Ok(Some(h))) => h.map_offset as u64,
        _ => len,
    };
    let mut s = Scanner {
        b: Blocks::new(r, file, len),
        file,
        len,
        map_at,
        format,
        known: map.as_ref(),
        want,
        check,
        budget: len.saturating_mul(3).saturating_add(BLOCK as u64),
    };
    let mut bytes: BTreeMap<i64, i64> = BTreeMap::new();
    let damaged = match s.run(&mut scan, &mut bytes) {
        Ok(damaged) => damaged,
        Err(e) => {
            scan.errors.push(e);
            true
        }
    };
    if let (Some(m), false) = (&map, damaged) {
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

/// What is at a scan position.
enum Step {
    /// The end of the data.
    End,
    /// Padding: go on at this offset.
    Skip(u64),
    /// A record that parses: its size (after the 4-byte size field), ledger
    /// and entry ids.
    Record { size: u64, ledger: i64, entry: i64 },
    /// Damage starting at this offset, and why.
    Bad(u64, String),
}

/// A wanted entry whose digest failed, kept by the scan in case only its
/// body is damaged.
struct Failed {
    pos: u64,
    end: u64,
    ledger: i64,
    entry: i64,
    /// Its index in the scan's entries.
    index: usize,
}

struct Scanner<'a, R> {
    b: Blocks<'a, R>,
    file: &'a str,
    len: u64,
    /// Where the ledgers map starts (the file's length without one).
    map_at: u64,
    format: LogFormat,
    /// The ledgers the log's map names, when it has one.
    known: Option<&'a BTreeMap<i64, i64>>,
    want: &'a dyn Fn(i64) -> bool,
    check: &'a dyn Fn(i64, &[u8]) -> Option<bool>,
    /// Bytes the scan may still digest-check: three times the file, which
    /// an intact log (each entry checked once) never reaches. A file crafted
    /// full of overlapping near-records that fail their digests would
    /// otherwise cost a check of each, quadratic; once it is spent, a header
    /// that parses suffices and the scan stays linear.
    budget: u64,
}

fn be_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes(b[0..4].try_into().expect("4"))
}

fn be_i64(b: &[u8]) -> i64 {
    i64::from_be_bytes(b[0..8].try_into().expect("8"))
}

impl<R: Read + Seek> Scanner<'_, R> {
    /// Scans from the first record; `Ok(true)` when damage was met.
    fn run(&mut self, scan: &mut LogScan, bytes: &mut BTreeMap<i64, i64>) -> Result<bool, String> {
        let file = self.file;
        let mut damaged = false;
        let mut pos = HEADER_LEN;
        let mut failed: Option<Failed> = None;
        loop {
            match self.step(pos)? {
                Step::End => break,
                Step::Skip(next) => pos = next,
                Step::Record {
                    size,
                    ledger,
                    entry,
                } => {
                    let at = pos + 4;
                    failed = None;
                    if ledger >= 0 && (self.want)(ledger) {
                        *bytes.entry(ledger).or_default() += size as i64 + 4;
                        let stored = self.b.vec(at, size)?.ok_or_else(|| {
                            format!("{file}: record at offset {pos} is cut short")
                        })?;
                        if self.verify(ledger, &stored) == Some(false) {
                            // A damaged body, or a size too big: then the
                            // entry verifies up to a record boundary inside,
                            if let Some((e, stop)) = self.recover(pos, at + size - 1)? {
                                damaged = true;
                                scan.errors.push(format!(
                                    "{file}: record at offset {pos} claims {size} bytes, but its entry verifies up to offset {stop}: its size is damaged; the entry is kept and the scan goes on at offset {stop}"
                                ));
                                scan.entries.push(e);
                                pos = stop;
                                continue;
                            }
                            // or an entry record that verifies starts inside.
                            if let Some(q) = self.resume(pos + 1, at + size)? {
                                damaged = true;
                                let why = format!(
                                    "record at offset {pos} claims {size} bytes but fails its digest, and an entry record starts inside it at offset {q}"
                                );
                                self.damage(scan, pos, Some(q), &why)?;
                                pos = q;
                                continue;
                            }
                            failed = Some(Failed {
                                pos,
                                end: at + size,
                                ledger,
                                entry,
                                index: scan.entries.len(),
                            });
                        }
                        scan.entries.push(FoundEntry {
                            ledger_id: ledger,
                            entry_id: entry,
                            file: file.to_string(),
                            offset: at,
                            stored,
                        });
                    }
                    pos = at + size;
                }
                Step::Bad(at, why) => {
                    damaged = true;
                    let q = self.resume(at + 1, self.map_at)?;
                    let end = q.unwrap_or(self.map_at.min(self.len));
                    // A size too small: the entry before, which failed its
                    // digest, verifies up to a record boundary before `end`.
                    if let Some(f) = failed.take().filter(|f| f.end <= at) {
                        if let Some((e, stop)) = self.recover(f.pos, end)? {
                            if (e.ledger_id, e.entry_id) == (f.ledger, f.entry) {
                                scan.errors.push(format!(
                                    "{file}: record at offset {} claims {} bytes, but its entry verifies up to offset {stop}: its size is damaged; the entry is kept and the scan goes on at offset {stop}",
                                    f.pos,
                                    f.end - f.pos - 4
                                ));
                                scan.entries[f.index] = e;
                                pos = stop;
                                continue;
                            }
                        }
                    }
                    match self.damage(scan, at, q, &why)? {
                        Some(next) => pos = next,
                        None => break,
                    }
                }
            }
        }
        Ok(damaged)
    }

    /// One error for the damage from `at` to `next` (the end of the records
    /// when `None`), keeping the entry at `at` when it verifies up to a
    /// record boundary before `next` (only its size was damaged). Returns
    /// where the scan goes on.
    fn damage(
        &mut self,
        scan: &mut LogScan,
        at: u64,
        next: Option<u64>,
        why: &str,
    ) -> Result<Option<u64>, String> {
        let file = self.file;
        let end = next.unwrap_or(self.map_at.min(self.len));
        if let Some((e, stop)) = self.recover(at, end)? {
            scan.errors.push(format!(
                "{file}: {why}; its entry (ledger {} entry {}) verifies up to offset {stop} and is kept, and the scan goes on there",
                e.ledger_id, e.entry_id
            ));
            scan.entries.push(e);
            return Ok(Some(stop));
        }
        scan.errors.push(match next {
            Some(q) => format!(
                "{file}: {why}; the {} bytes from offset {at} are skipped and the scan goes on at offset {q}, where the next entry record parses",
                q - at
            ),
            None => format!(
                "{file}: {why}; no entry record parses in the {} bytes from offset {at} to the end of the records",
                end.saturating_sub(at)
            ),
        });
        Ok(next)
    }

    /// The entry of a wanted ledger whose size field at `pos` is damaged,
    /// when its bytes verify up to `end` or up to an earlier offset where a
    /// record parses (the records of other ledgers may lie between): the
    /// entry and where it ends. Digest checks are charged to the budget.
    fn recover(&mut self, pos: u64, end: u64) -> Result<Option<(FoundEntry, u64)>, String> {
        let at = pos + 4;
        let first = at + ENTRY_HEADER_LEN as u64;
        if end < first {
            return Ok(None);
        }
        let Some(h) = self.b.get(at, ENTRY_HEADER_LEN)? else {
            return Ok(None);
        };
        let (ledger, entry) = (be_i64(&h[0..8]), be_i64(&h[8..16]));
        if ledger < 0 || entry < 0 || !(self.want)(ledger) {
            return Ok(None);
        }
        let mut stop = first;
        while stop <= end {
            if stop == end || self.record(stop)?.is_ok() {
                if self.budget < stop - at {
                    return Ok(None);
                }
                let Some(stored) = self.b.vec(at, stop - at)? else {
                    return Ok(None);
                };
                if self.verify(ledger, &stored) == Some(true) {
                    let e = FoundEntry {
                        ledger_id: ledger,
                        entry_id: entry,
                        file: self.file.to_string(),
                        offset: at,
                        stored,
                    };
                    return Ok(Some((e, stop)));
                }
            }
            stop += 1;
        }
        Ok(None)
    }

    /// `check`, charged to the budget; `None` once it is spent.
    fn verify(&mut self, ledger: i64, stored: &[u8]) -> Option<bool> {
        let n = stored.len() as u64;
        if self.budget < n {
            return None;
        }
        self.budget -= n;
        (self.check)(ledger, stored)
    }

    /// What is at `pos`.
    fn step(&mut self, pos: u64) -> Result<Step, String> {
        let Some(word) = self.b.get(pos, 4)? else {
            return Ok(Step::End);
        };
        let size = be_i32(word);
        if size == 0 {
            if self.format == LogFormat::Direct {
                return Ok(Step::End);
            }
            // Zero padding: a record may start in the 3 bytes before the
            // first byte that is not zero (its size's high bytes are zero).
            let Some(z) = self.b.next_nonzero(pos)? else {
                return Ok(Step::End);
            };
            let from = pos.max(z.saturating_sub(3));
            for c in from..=z {
                if self.record(c)?.is_ok() {
                    return Ok(Step::Skip(c));
                }
            }
            let why = format!(
                "zero padding from offset {pos} ends at offset {z} in bytes that are not a record"
            );
            return Ok(Step::Bad(from, why));
        }
        if size < 0 {
            if self.format == LogFormat::Direct {
                // The direct logger's 0xF0 padding up to the next 4 KiB boundary.
                let next = (pos / DIRECT_ALIGNMENT + 1) * DIRECT_ALIGNMENT;
                let n = (next - pos).min(4) as usize;
                if word[..n].iter().all(|&b| b == 0xF0) {
                    return Ok(Step::Skip(next));
                }
            }
            let why = format!("record at offset {pos} has a negative size {size}");
            return Ok(Step::Bad(pos, why));
        }
        Ok(match self.record(pos)? {
            Ok((size, ledger, entry)) => Step::Record {
                size,
                ledger,
                entry,
            },
            Err(why) => Step::Bad(pos, why),
        })
    }

    /// Whether a record whose size field is at `pos` parses: its size fits in
    /// the file and holds an entry header, and the header is a ledgers-map
    /// record (ledger -1) or an entry's (ledger and entry ids, LAC and
    /// length in range, a ledger the log's map names).
    #[allow(clippy::type_complexity)]
    fn record(&mut self, pos: u64) -> Result<Result<(u64, i64, i64), String>, String> {
        let len = self.len;
        let Some(word) = self.b.get(pos, 4)? else {
            return Ok(Err(format!("record at offset {pos} is cut short")));
        };
        let size = be_i32(word);
        if size <= 0 {
            return Ok(Err(format!("record at offset {pos} has a size of {size}")));
        }
        let (size, at) = (size as u64, pos + 4);
        if at + size > len {
            return Ok(Err(format!(
                "record at offset {pos} claims {size} bytes, the file ends {} bytes later",
                len.saturating_sub(at)
            )));
        }
        if size < MIN_ENTRY as u64 {
            return Ok(Err(format!(
                "record at offset {pos} of {size} bytes is shorter than an entry header"
            )));
        }
        let n = (size as usize).min(ENTRY_HEADER_LEN);
        let Some(h) = self.b.get(at, n)? else {
            return Ok(Err(format!("record at offset {pos} is cut short")));
        };
        let (ledger, entry) = (be_i64(&h[0..8]), be_i64(&h[8..16]));
        if ledger == -1 {
            return Ok(Ok((size, ledger, entry))); // The ledgers map, or the direct logger's dummy.
        }
        if n < ENTRY_HEADER_LEN {
            return Ok(Err(format!(
                "record at offset {pos} of {size} bytes is shorter than an entry header"
            )));
        }
        let (lac, length) = (be_i64(&h[16..24]), be_i64(&h[24..32]));
        if ledger < 0 || entry < 0 || lac < -1 || length < 0 {
            return Ok(Err(format!(
                "record at offset {pos} holds ledger {ledger} entry {entry} (LAC {lac}, length {length}), not an entry"
            )));
        }
        if self.known.is_some_and(|m| !m.contains_key(&ledger)) {
            return Ok(Err(format!(
                "record at offset {pos} holds ledger {ledger}, which the log's ledgers map does not name"
            )));
        }
        Ok(Ok((size, ledger, entry)))
    }

    /// The first offset in `from..to` where an entry record of a wanted
    /// ledger parses and its digest verifies (or cannot be checked).
    /// Linear: zero runs are skipped a block at a time, each other offset
    /// costs a header check, and digest checks stop once the budget is spent
    /// (a header that parses then suffices).
    fn resume(&mut self, from: u64, to: u64) -> Result<Option<u64>, String> {
        let to = to.min(self.map_at);
        let mut p = from;
        while p < to {
            let Some(h) = self.b.get(p, 4 + ENTRY_HEADER_LEN)? else {
                return Ok(None); // Too close to the end for an entry.
            };
            let size = be_i32(h);
            if size == 0 {
                match self.b.next_nonzero(p)? {
                    Some(z) => {
                        p = (p + 1).max(z.saturating_sub(3));
                        continue;
                    }
                    None => return Ok(None),
                }
            }
            let (ledger, entry) = (be_i64(&h[4..12]), be_i64(&h[12..20]));
            let (lac, length) = (be_i64(&h[20..28]), be_i64(&h[28..36]));
            let fits = size >= ENTRY_HEADER_LEN as i32 && p + 4 + size as u64 <= self.len;
            if !fits || ledger < 0 || entry < 0 || lac < -1 || length < 0 {
                p += 1;
                continue;
            }
            if self.known.is_some_and(|m| !m.contains_key(&ledger)) || !(self.want)(ledger) {
                p += 1;
                continue;
            }
            let size = size as u64;
            if self.budget < size {
                return Ok(Some(p));
            }
            let Some(stored) = self.b.vec(p + 4, size)? else {
                return Ok(None);
            };
            if self.verify(ledger, &stored) != Some(false) {
                return Ok(Some(p));
            }
            p += 1;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookkeeper::files::collect_ledger;
    use crate::bookkeeper::files::test_support::{header, meta, record, rotated, stored};
    use crate::bookkeeper::{DigestType, Digester, LedgerState};
    use std::io::Cursor;
    use std::io::SeekFrom;

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

    /// Ten entries of ledger 3 with one of ledger 9 between each (a rotated
    /// log, so the map names both), and the offset of each record's size.
    fn ten(d: &Digester) -> (Vec<Vec<u8>>, Vec<u8>, Vec<usize>) {
        let mut recs = Vec::new();
        for e in 0..10i64 {
            let payload = format!("entry {e} of ledger three, some words to carry");
            recs.push(stored(d, 3, e, e - 1, payload.as_bytes()));
            recs.push(stored(d, 9, e, e - 1, b"the other ledger's entry"));
        }
        let log = rotated(&recs);
        let mut at = 1024;
        let pos = recs
            .iter()
            .map(|r| {
                let p = at;
                at += r.len() + 4;
                p
            })
            .collect();
        (recs, log, pos)
    }

    fn checker(d: &Digester) -> impl Fn(i64, &[u8]) -> Option<bool> + '_ {
        move |l, b| Some(d.verify(b, l, None).is_ok())
    }

    /// Ledger 3's entries a scan returns, by entry id, with their bytes.
    fn of_3(scan: &LogScan) -> BTreeMap<i64, Vec<u8>> {
        let mut m = BTreeMap::new();
        for e in scan.entries.iter().filter(|e| e.ledger_id == 3) {
            assert!(
                m.insert(e.entry_id, e.stored.clone()).is_none(),
                "twice: {}",
                e.entry_id
            );
        }
        m
    }

    /// One damaged size no longer ends the scan: one error names the offset
    /// and why, every other entry is kept, and the damaged record's own entry
    /// too when its bytes verify up to the next record (only its size was hit).
    #[test]
    fn a_damaged_size_is_one_error_and_the_scan_resumes() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let (recs, log, pos) = ten(&d);
        let want: BTreeMap<i64, Vec<u8>> =
            (0..10).map(|e| (e, recs[2 * e as usize].clone())).collect();
        let k = 4; // ledger 3 entry 2
        let size = recs[k].len() as i32;
        for (bad, why) in [
            (1 << 30, "claims 1073741824 bytes"),
            (-5, "negative size -5"),
            (5, "shorter than an entry header"),
            (20, "shorter than an entry header"),
            (size + 37, "its size is damaged"),
            (size - 7, "its size is damaged"),
            (size + recs[k + 1].len() as i32 + 4, "its size is damaged"),
        ] {
            let mut damaged = log.clone();
            damaged[pos[k]..pos[k] + 4].copy_from_slice(&bad.to_be_bytes());
            let scan =
                scan_entry_log_checked(Cursor::new(&damaged), "7.log", &|l| l == 3, &checker(&d));
            assert_eq!(of_3(&scan), want, "size {bad}: {:?}", scan.errors);
            assert_eq!(scan.errors.len(), 1, "size {bad}: {:?}", scan.errors);
            let e = &scan.errors[0];
            assert!(
                e.starts_with(&format!("7.log: record at offset {} ", pos[k])) && e.contains(why),
                "size {bad}: {e}"
            );
            assert!(
                e.contains(&format!("offset {}", pos[k + 1]))
                    || e.contains(&format!("offset {}", pos[k + 2])),
                "{e}"
            );
            // Through read_bookie's digest check, every row is the entry.
            let rows = collect_ledger(
                &meta(LedgerState::Closed, 9),
                &scan
                    .entries
                    .iter()
                    .filter(|e| e.ledger_id == 3)
                    .collect::<Vec<_>>(),
            );
            assert!(rows.iter().all(|r| r.data.is_ok()), "size {bad}: {rows:?}");
        }
        // Without a digest check the resync still finds the next record by
        // its header: all but the damaged entry.
        for bad in [1i32 << 30, -5, 5] {
            let mut damaged = log.clone();
            damaged[pos[k]..pos[k] + 4].copy_from_slice(&bad.to_be_bytes());
            let scan = scan_entry_log(Cursor::new(&damaged), "7.log", &|l| l == 3);
            let mut all_but = want.clone();
            all_but.remove(&2);
            assert_eq!(of_3(&scan), all_but, "size {bad}: {:?}", scan.errors);
            assert_eq!(scan.errors.len(), 1, "{:?}", scan.errors);
            assert!(
                scan.errors[0].contains(&format!("offset {}", pos[k])),
                "{:?}",
                scan.errors
            );
        }
        // The active log (no ledgers map) resumes the same way.
        let mut active = log.clone();
        active[8..20].fill(0);
        let map_at = i64::from_be_bytes(log[8..16].try_into().unwrap()) as usize;
        active.truncate(map_at);
        active[pos[k]..pos[k] + 4].copy_from_slice(&(1i32 << 30).to_be_bytes());
        let scan = scan_entry_log_checked(Cursor::new(&active), "7.log", &|l| l == 3, &checker(&d));
        assert_eq!(
            (of_3(&scan), scan.errors.len()),
            (want, 1),
            "{:?}",
            scan.errors
        );
        // Damage in the last record: nothing parses after it.
        let last = pos[pos.len() - 1];
        let mut end = log.clone();
        end[last..last + 4].copy_from_slice(&(-1i32).to_be_bytes());
        let scan = scan_entry_log_checked(Cursor::new(&end), "7.log", &|l| l == 3, &checker(&d));
        assert_eq!(of_3(&scan).len(), 10);
        assert!(
            scan.errors[0].contains("no entry record parses"),
            "{:?}",
            scan.errors
        );
    }

    /// A damaged body keeps the record (the size is right, the next record
    /// parses): the digest check names its file and offset, nothing else is
    /// lost. A damaged header (ids that cannot be an entry's, or a ledger the
    /// map does not name) is one error naming the offset, and the scan resumes.
    #[test]
    fn damaged_bodies_and_headers() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let (recs, log, pos) = ten(&d);
        let k = 6; // ledger 3 entry 3
        let mut body = log.clone();
        body[pos[k] + 4 + recs[k].len() - 5] ^= 0x40;
        let scan = scan_entry_log_checked(Cursor::new(&body), "7.log", &|l| l == 3, &checker(&d));
        assert!(scan.errors.is_empty(), "{:?}", scan.errors);
        assert_eq!(of_3(&scan).len(), 10);
        let rows = collect_ledger(
            &meta(LedgerState::Closed, 9),
            &scan.entries.iter().collect::<Vec<_>>(),
        );
        let bad: Vec<_> = rows.iter().filter_map(|r| r.data.as_ref().err()).collect();
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(
            bad[0].contains("entry 3: no valid copy")
                && bad[0].contains(&format!("7.log offset {}", pos[k] + 4))
                && bad[0].contains("digest mismatch"),
            "{bad:?}"
        );
        for (field, value, why) in [
            (8, -3i64, "entry -3"),                 // entry id
            (16, -9, "LAC -9"),                     // LAC
            (0, 0x0123_4567_89ab, "does not name"), // a ledger not in the map
            (0, -77, "ledger -77"),
        ] {
            let mut head = log.clone();
            let at = pos[k] + 4 + field;
            head[at..at + 8].copy_from_slice(&value.to_be_bytes());
            let scan =
                scan_entry_log_checked(Cursor::new(&head), "7.log", &|l| l == 3, &checker(&d));
            let got = of_3(&scan);
            assert_eq!(got.len(), 9, "{value}: {:?}", scan.errors);
            assert!(!got.contains_key(&3));
            assert_eq!(scan.errors.len(), 1, "{:?}", scan.errors);
            assert!(
                scan.errors[0].starts_with(&format!("7.log: record at offset {} ", pos[k]))
                    && scan.errors[0].contains(why)
                    && scan.errors[0].contains(&format!("goes on at offset {}", pos[k + 2])),
                "{:?}",
                scan.errors
            );
        }
    }

    /// The search after damage only resumes where an entry verifies: a
    /// record-like header inside the damaged record's payload (a fake entry
    /// whose size would swallow the real records after it) is passed over.
    #[test]
    fn a_fake_record_inside_the_damage_hides_nothing() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let mut fake = 200i32.to_be_bytes().to_vec();
        for v in [3i64, 77, 5, 10] {
            fake.extend_from_slice(&v.to_be_bytes());
        }
        fake.extend_from_slice(&[1, 2, 3, 4]);
        let recs: Vec<_> = (0..6)
            .map(|e| {
                let payload = if e == 1 {
                    fake.clone()
                } else {
                    format!("e{e}").into_bytes()
                };
                stored(&d, 3, e, e - 1, &payload)
            })
            .collect();
        let mut log = rotated(&recs);
        let second = 1024 + recs[0].len() + 4;
        log[second..second + 4].copy_from_slice(&(1i32 << 30).to_be_bytes());
        let scan = scan_entry_log_checked(Cursor::new(&log), "7.log", &|l| l == 3, &checker(&d));
        let got = of_3(&scan);
        assert_eq!(
            got.keys().copied().collect::<Vec<_>>(),
            (0..6).collect::<Vec<_>>(),
            "{:?}",
            scan.errors
        );
        assert_eq!(scan.errors.len(), 1, "{:?}", scan.errors);
    }

    /// A log crafted full of overlapping record headers of a wanted ledger
    /// that fail their digests (one every 40 bytes, each claiming 512 KiB)
    /// would cost a digest check of 512 KiB per header, quadratic: the
    /// checks are bounded by three times the file, and the scan ends.
    #[test]
    fn digest_checks_are_bounded_on_a_crafted_log() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let mut log = header(1024);
        record(&mut log, &stored(&d, 3, 0, -1, b"a"));
        log.extend_from_slice(&(-5i32).to_be_bytes());
        while log.len() < (2 << 20) {
            log.extend_from_slice(&(512i32 << 10).to_be_bytes());
            for v in [3i64, 1, 0, 0] {
                log.extend_from_slice(&v.to_be_bytes());
            }
            log.extend_from_slice(&[7; 4]);
        }
        let checked = std::cell::Cell::new(0u64);
        let check = |l: i64, b: &[u8]| {
            checked.set(checked.get() + b.len() as u64);
            Some(d.verify(b, l, None).is_ok())
        };
        let scan = scan_entry_log_checked(Cursor::new(&log), "x.log", &|l| l == 3, &check);
        assert!(scan.entries.iter().any(|e| e.entry_id == 0));
        assert!(!scan.errors.is_empty());
        let bound = 3 * log.len() as u64 + (1 << 20);
        assert!(checked.get() <= bound, "{} bytes checked", checked.get());
    }

    /// A reader that counts its reads.
    struct Counting<R> {
        inner: R,
        reads: std::rc::Rc<std::cell::Cell<u64>>,
    }

    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.reads.set(self.reads.get() + 1);
            self.inner.read(buf)
        }
    }

    impl<R: Seek> Seek for Counting<R> {
        fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
            self.inner.seek(pos)
        }
    }

    /// Zero padding is skipped a block at a time, not read 4 bytes per byte:
    /// 8 MiB of it costs a few reads, and the records after it (whose sizes
    /// have zero high bytes, so the padding seems to end inside them) are
    /// found with no error.
    #[test]
    fn zero_padding_is_skipped_in_blocks() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let big = vec![b'x'; 700]; // a size of 0x2e0 or so: two zero high bytes
        let mut log = header(1024);
        record(&mut log, &stored(&d, 3, 0, -1, &big));
        log.resize(log.len() + (8 << 20) + 3, 0);
        record(&mut log, &stored(&d, 3, 1, 0, &big));
        log.resize(log.len() + 5, 0);
        record(&mut log, &stored(&d, 3, 2, 1, b"small"));
        log.resize(log.len() + 4096, 0); // preallocated tail
        let reads = std::rc::Rc::new(std::cell::Cell::new(0));
        let r = Counting {
            inner: Cursor::new(&log),
            reads: reads.clone(),
        };
        let scan = scan_entry_log_checked(r, "0.log", &|l| l == 3, &checker(&d));
        assert!(scan.errors.is_empty(), "{:?}", scan.errors);
        assert_eq!(
            of_3(&scan).keys().copied().collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        // 9 one-MiB blocks and the header's reads; the old scan made two per byte.
        assert!(reads.get() < 40, "{} reads", reads.get());
    }

    /// Not a check: prints how long a scan over `PE_ZEROS_MIB` MiB of zero
    /// padding (64 by default) in a file takes
    /// (`cargo test ... measure_zero_padding_scan -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn measure_zero_padding_scan() {
        let mib: usize = std::env::var("PE_ZEROS_MIB")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(64);
        let d = Digester::new(DigestType::Crc32c, b"");
        let mut log = header(1024);
        record(&mut log, &stored(&d, 3, 0, -1, b"a"));
        log.resize(log.len() + (mib << 20), 0);
        record(&mut log, &stored(&d, 3, 1, 0, b"b"));
        let path = std::env::temp_dir().join(format!("pe-zeros-{}.log", std::process::id()));
        std::fs::write(&path, &log).unwrap();
        let t = std::time::Instant::now();
        let f = std::fs::File::open(&path).unwrap();
        let scan = scan_entry_log(std::io::BufReader::new(f), "z.log", &|l| l == 3);
        let el = t.elapsed();
        std::fs::remove_file(&path).unwrap();
        println!(
            "{mib} MiB of zeros: {el:?} ({:.4} s/MiB), {} entries, {} errors",
            el.as_secs_f64() / mib as f64,
            scan.entries.len(),
            scan.errors.len()
        );
    }
}
