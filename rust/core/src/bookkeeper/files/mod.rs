//! A bookie's files, read offline (spec bookkeeper.md §4): entry logs in the
//! default and the direct-I/O format, and the rules that pick one valid copy
//! of each entry.
//!
//! An entry log is a 1,024-byte `BKLO` header (4,096 bytes for the direct-I/O
//! logger, which leaves a dummy record at 1,024 for old scanners), then
//! `[i32 size][stored entry]` records; the stored entry is the one a bookie
//! returns on a read (ledger id, entry id, LAC, length, digest, payload).
//! Records of ledger -1 hold the ledgers map and are skipped.
//!
//! The files are read by `entry_log` (the scan and the ledgers map),
//! `index` (reads where the `locations` index points) and `journal`;
//! this module picks one valid copy of each entry from what they found.

mod blocks;
mod entry_log;
mod index;
mod journal;
mod record;
#[cfg(test)]
mod test_support;

use std::collections::BTreeMap;
use std::io;
use std::mem::take;

use arrow_array::RecordBatch;

use super::client::ReadEntry;
use super::digest::Digester;
use super::entries_batch;
use super::ledger::{LedgerMetadata, LedgerState};
use super::transport::POLL;

pub use entry_log::{
    read_ledgers_map, read_log_header, scan_entry_log, scan_entry_log_checked, LogFormat,
    LogHeader, LogScan,
};
pub use index::read_at_location;
pub use journal::{scan_journal, JournalScan};
pub use record::FoundEntry;

/// An interrupt check asked at most every [`POLL`]; once it said `true`, it
/// stays `true`.
struct Interrupt<'a> {
    check: &'a (dyn Fn() -> bool + Sync),
    last: std::sync::Mutex<std::time::Instant>,
    fired: std::sync::atomic::AtomicBool,
}

impl<'a> Interrupt<'a> {
    fn new(check: &'a (dyn Fn() -> bool + Sync)) -> Self {
        Self {
            check,
            // Asked at the first read.
            last: std::sync::Mutex::new(
                std::time::Instant::now()
                    .checked_sub(POLL)
                    .unwrap_or_else(std::time::Instant::now),
            ),
            fired: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn fired(&self) -> bool {
        use std::sync::atomic::Ordering;
        if self.fired.load(Ordering::Relaxed) {
            return true;
        }
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() >= POLL {
            *last = std::time::Instant::now();
            if (self.check)() {
                self.fired.store(true, Ordering::Relaxed);
                return true;
            }
        }
        false
    }
}

/// A file whose reads fail once the read is interrupted.
struct Interruptible<'a, F> {
    inner: F,
    stop: &'a Interrupt<'a>,
}

impl<F: io::Read> io::Read for Interruptible<'_, F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.stop.fired() {
            return Err(io::Error::other("interrupted"));
        }
        self.inner.read(buf)
    }
}

impl<F: io::Seek> io::Seek for Interruptible<'_, F> {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos)
    }
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

impl BookieRead {
    /// The rows as one entry table ([`entries_batch`]): an error row per
    /// damaged place first (ledger and entry id -1), then each ledger's rows.
    pub fn into_batch(self) -> RecordBatch {
        let errors = self.errors.into_iter().map(|e| ReadEntry {
            ledger_id: -1,
            entry_id: -1,
            data: Err(e),
        });
        entries_batch(&errors.chain(self.rows).collect::<Vec<_>>())
    }

    /// [`into_batch`](Self::into_batch), the ledgers scanned for and the
    /// ledgers read from journals.
    pub fn into_parts(mut self) -> (RecordBatch, Vec<i64>, Vec<i64>) {
        let (scanned, journaled) = (take(&mut self.scanned), take(&mut self.journaled));
        (self.into_batch(), scanned, journaled)
    }
}

/// The log id of `<hex>.log`.
fn log_id(path: &str) -> Option<u64> {
    let name = path.rsplit(['/', '\\']).next()?;
    u64::from_str_radix(name.strip_suffix(".log")?, 16).ok()
}

/// At most this many items of a list go into an error text.
const LISTED: usize = 5;

/// `items` joined with "; ", the first [`LISTED`] of them and then how many
/// more: an error text stays a few hundred bytes however many copies (or
/// bookies) failed, instead of growing with their number.
fn bounded_list(items: &[String]) -> String {
    let mut text = items[..items.len().min(LISTED)].join("; ");
    if items.len() > LISTED {
        text.push_str(&format!("; and {} more", items.len() - LISTED));
    }
    text
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
    read_bookie_with(dirs, journals, metas, &|| false)
}

/// Scans one opened file: the entries found and the errors.
type ScanFile<'s> =
    dyn Fn(Interruptible<'_, std::fs::File>, &str) -> (Vec<FoundEntry>, Vec<String>) + 's;

/// [`read_bookie`], stopped by `interrupt`: it is asked at least every
/// [`crate::bookkeeper::transport::POLL`] while files are read, and once it
/// answers `true` every later read of a file fails at once, so the read
/// ends within about that time (its result is then to be dropped).
pub fn read_bookie_with(
    dirs: &[LedgerDirFiles],
    journals: &[String],
    metas: &[LedgerMetadata],
    interrupt: &(dyn Fn() -> bool + Sync),
) -> BookieRead {
    use std::collections::{BTreeSet, HashMap};
    let mut out = BookieRead::default();
    let wanted: BTreeSet<i64> = metas.iter().map(|m| m.ledger_id).collect();
    let mut found: Vec<FoundEntry> = Vec::new();
    let mut suspect: BTreeSet<i64> = BTreeSet::new();
    let stop = Interrupt::new(interrupt);
    let open = |path: &str| {
        std::fs::File::open(path)
            .map(|f| Interruptible {
                inner: f,
                stop: &stop,
            })
            .map_err(|e| format!("{path}: cannot open: {e}"))
    };
    // The scan checks digests to tell a damaged size from a damaged body and
    // to resume after damage only where an entry verifies.
    let digesters: HashMap<i64, Digester> = metas
        .iter()
        .map(|m| (m.ledger_id, Digester::new(m.digest, &m.password)))
        .collect();
    let check =
        |l: i64, stored: &[u8]| digesters.get(&l).map(|d| d.verify(stored, l, None).is_ok());
    // Every file of `paths` opened and scanned (entry logs or journals): what
    // each holds goes to `found`, its errors (or why it cannot be opened) to `errors`.
    let scan_files = |paths: &[String],
                      found: &mut Vec<FoundEntry>,
                      errors: &mut Vec<String>,
                      scan: &ScanFile<'_>| {
        for path in paths {
            match open(path) {
                Ok(f) => {
                    let (entries, errs) = scan(f, path);
                    found.extend(entries);
                    errors.extend(errs);
                }
                Err(e) => errors.push(e),
            }
        }
    };
    let scan_logs = |logs: &[String],
                     want: &BTreeSet<i64>,
                     found: &mut Vec<FoundEntry>,
                     errors: &mut Vec<String>| {
        scan_files(logs, found, errors, &|f, path| {
            let s = scan_entry_log_checked(f, path, &|l| want.contains(&l), &check);
            (s.entries, s.errors)
        })
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
        let mut handles: HashMap<u64, Result<Interruptible<std::fs::File>, String>> =
            HashMap::new();
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
            scan_files(journals, &mut found, &mut out.errors, &|f, path| {
                let s = scan_journal(io::BufReader::new(f), path, &|l| again.contains(&l));
                (s.entries, s.errors)
            });
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
                        bounded_list(f)
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
    use super::test_support::{journal, meta, rotated, stored};
    use super::*;
    use crate::bookkeeper::DigestType;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;

    #[test]
    fn a_read_is_one_entry_table_with_its_error_rows_first() {
        let read = BookieRead {
            rows: vec![
                ReadEntry {
                    ledger_id: 3,
                    entry_id: 0,
                    data: Ok(b"a".to_vec()),
                },
                ReadEntry {
                    ledger_id: 3,
                    entry_id: 1,
                    data: Err("ledger 3 entry 1: not in the bookie files".into()),
                },
            ],
            errors: vec!["0.log offset 1028: bad record".into()],
            scanned: vec![3],
            journaled: vec![],
        };
        let batch = read.into_batch();
        let ids = |i| {
            batch
                .column(i)
                .as_primitive::<Int64Type>()
                .values()
                .to_vec()
        };
        assert_eq!(ids(0), [-1, 3, 3]);
        assert_eq!(ids(1), [-1, 0, 1]);
        let data = batch.column(2).as_binary::<i32>();
        assert!(data.is_null(0) && data.value(1) == b"a" && data.is_null(2));
        let error = batch.column(3).as_string::<i32>();
        assert_eq!(error.value(0), "0.log offset 1028: bad record");
        assert!(error.is_null(1));
        assert_eq!(error.value(2), "ledger 3 entry 1: not in the bookie files");
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

    /// However many copies of an entry fail (one per entry log of a
    /// bookie with 16,000 of them), its error row names the first few and
    /// counts the rest: a few hundred bytes, not one line per copy.
    #[test]
    fn an_error_row_lists_a_few_failed_copies_and_counts_the_rest() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let mut bad = stored(&d, 3, 0, -1, b"a");
        *bad.last_mut().unwrap() ^= 1;
        let found: Vec<FoundEntry> = (0..16_000)
            .map(|i| FoundEntry {
                ledger_id: 3,
                entry_id: 0,
                file: format!("/data/bookkeeper/ledgers/current/{i:x}.log"),
                offset: 1028,
                stored: bad.clone(),
            })
            .collect();
        let rows = collect_ledger(
            &meta(LedgerState::Closed, 0),
            &found.iter().collect::<Vec<_>>(),
        );
        let e = rows[0].data.as_ref().unwrap_err();
        assert!(e.len() < 2048, "{} bytes", e.len());
        assert!(
            e.contains("current/0.log offset 1028: CRC32C digest mismatch")
                && e.contains("current/4.log offset 1028")
                && !e.contains("current/5.log")
                && e.ends_with("; and 15995 more)"),
            "{e}"
        );
        assert_eq!(bounded_list(&["a".into(), "b".into()]), "a; b");
    }

    /// A damaged record size in a directory without an index no longer
    /// loses the entries after it: one error names the file and offset, and
    /// every entry (the damaged record's too: its bytes still verify) is a row.
    #[test]
    fn read_bookie_resumes_after_a_damaged_size() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let dir = scratch("resume");
        let recs: Vec<_> = (0..8)
            .map(|e| stored(&d, 3, e, e - 1, format!("payload {e}").as_bytes()))
            .collect();
        let mut log = rotated(&recs);
        let third = 1024 + (recs[0].len() + 4) * 2;
        log[third..third + 4].copy_from_slice(&(1i32 << 28).to_be_bytes());
        let path = dir.join("0.log");
        std::fs::write(&path, &log).unwrap();
        let files = LedgerDirFiles {
            dir: dir.display().to_string(),
            logs: vec![path.to_str().unwrap().to_string()],
            index: None,
        };
        let r = read_bookie(&[files], &[], &[meta(LedgerState::Closed, 7)]);
        let rows: Vec<_> = r.rows.iter().map(|r| r.data.clone()).collect();
        let want: Vec<Result<Vec<u8>, String>> = (0..8)
            .map(|e| Ok(format!("payload {e}").into_bytes()))
            .collect();
        assert_eq!(rows, want, "{:?}", r.errors);
        assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
        assert!(
            r.errors[0].contains(&format!(
                "0.log: record at offset {third} claims 268435456 bytes"
            )),
            "{:?}",
            r.errors
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_interrupt_stops_the_file_reads() {
        let d = Digester::new(DigestType::Crc32c, b"");
        let dir = scratch("interrupt");
        let recs: Vec<_> = (0..8)
            .map(|e| stored(&d, 3, e, e - 1, format!("payload {e}").as_bytes()))
            .collect();
        let path = dir.join("0.log");
        std::fs::write(&path, rotated(&recs)).unwrap();
        let files = || LedgerDirFiles {
            dir: dir.display().to_string(),
            logs: vec![path.to_str().unwrap().to_string()],
            index: None,
        };
        let metas = [meta(LedgerState::Closed, 7)];
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let never = || {
            asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            false
        };
        let r = read_bookie_with(&[files()], &[], &metas, &never);
        assert_eq!(r.rows.iter().filter(|r| r.data.is_ok()).count(), 8);
        assert!(
            asked.load(std::sync::atomic::Ordering::Relaxed) >= 1,
            "asked at the first read"
        );
        let r = read_bookie_with(&[files()], &[], &metas, &|| true);
        assert_eq!(r.rows.iter().filter(|r| r.data.is_ok()).count(), 0);
        assert!(
            r.errors.iter().any(|e| e.contains("interrupted")),
            "{:?}",
            r.errors
        );
        std::fs::remove_dir_all(&dir).unwrap();
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
