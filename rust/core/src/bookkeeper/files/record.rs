//! What every file of a bookie shares: the entry found, and positioned reads.

use std::io::{self, Read, Seek, SeekFrom};

pub(super) const HEADER_LEN: u64 = 1024;
/// The smallest real stored entry: ledger id and entry id.
pub(super) const MIN_ENTRY: usize = 16;

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

pub(super) fn read_at<R: Read + Seek>(r: &mut R, at: u64, buf: &mut [u8]) -> io::Result<bool> {
    r.seek(SeekFrom::Start(at))?;
    match r.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}
