//! Positioned reads of a file through one block of memory: a read that falls
//! inside the block costs no system call, and runs of zero bytes are skipped
//! a block at a time.

use std::io::{Read, Seek, SeekFrom};

/// Bytes read at once.
pub(super) const BLOCK: usize = 1 << 20;

pub(super) struct Blocks<'f, R> {
    r: R,
    file: &'f str,
    /// The file's length, fixed when the scan starts.
    len: u64,
    buf: Vec<u8>,
    /// The file offset of `buf[0]`.
    start: u64,
    /// Reads done on the file (block refills and direct reads of records
    /// larger than a block): the work a scan costs, for the tests.
    pub(super) reads: u64,
}

impl<'f, R: Read + Seek> Blocks<'f, R> {
    pub(super) fn new(r: R, file: &'f str, len: u64) -> Self {
        Self {
            r,
            file,
            len,
            buf: Vec::new(),
            start: 0,
            reads: 0,
        }
    }

    fn failed(&self, at: u64, e: std::io::Error) -> String {
        format!("{}: read failed at offset {at}: {e}", self.file)
    }

    /// Reads up to `want` bytes at `at` into `into`, fewer only at the end of
    /// the file (it may have shrunk since its length was taken).
    fn read_into(&mut self, at: u64, into: &mut Vec<u8>, want: usize) -> Result<(), String> {
        self.reads += 1;
        into.clear();
        into.resize(want, 0);
        self.r
            .seek(SeekFrom::Start(at))
            .map_err(|e| self.failed(at, e))?;
        let mut filled = 0;
        while filled < want {
            match self.r.read(&mut into[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.failed(at + filled as u64, e)),
            }
        }
        into.truncate(filled);
        Ok(())
    }

    /// Makes the block start at `at` unless it already holds `at..at + n`.
    fn hold(&mut self, at: u64, n: usize) -> Result<(), String> {
        let end = self.start + self.buf.len() as u64;
        if at >= self.start && at + n as u64 <= end {
            return Ok(());
        }
        let want = (self.len - at).min(BLOCK as u64) as usize;
        let mut buf = std::mem::take(&mut self.buf);
        let got = self.read_into(at, &mut buf, want);
        self.buf = buf;
        self.start = at;
        if got.is_err() {
            self.buf.clear();
        }
        got
    }

    /// The `n` bytes at `at` (`n` at most [`BLOCK`]), or `None` past the end
    /// of the file.
    pub(super) fn get(&mut self, at: u64, n: usize) -> Result<Option<&[u8]>, String> {
        debug_assert!(n <= BLOCK);
        if at.checked_add(n as u64).is_none_or(|end| end > self.len) {
            return Ok(None);
        }
        self.hold(at, n)?;
        let off = (at - self.start) as usize;
        Ok(self.buf.get(off..off + n))
    }

    /// The `n` bytes at `at` as a vector of their own, or `None` past the
    /// end of the file. `n` is checked against the file's length before
    /// anything is allocated.
    pub(super) fn vec(&mut self, at: u64, n: u64) -> Result<Option<Vec<u8>>, String> {
        if at.checked_add(n).is_none_or(|end| end > self.len) {
            return Ok(None);
        }
        if n <= BLOCK as u64 {
            return Ok(self.get(at, n as usize)?.map(<[u8]>::to_vec));
        }
        let mut v = Vec::new();
        self.read_into(at, &mut v, n as usize)?;
        Ok((v.len() as u64 == n).then_some(v))
    }

    /// The offset of the first byte that is not zero at or after `from`, or
    /// `None` when only zeros follow.
    pub(super) fn next_nonzero(&mut self, from: u64) -> Result<Option<u64>, String> {
        let mut at = from;
        while at < self.len {
            self.hold(at, 1)?;
            let off = (at - self.start) as usize;
            let window = &self.buf[off.min(self.buf.len())..];
            if window.is_empty() {
                return Ok(None); // The file shrank.
            }
            if let Some(i) = first_nonzero(window) {
                return Ok(Some(at + i as u64));
            }
            at += window.len() as u64;
        }
        Ok(None)
    }
}

/// The index of the first byte that is not zero, 64 bytes at a time.
fn first_nonzero(b: &[u8]) -> Option<usize> {
    let mut skipped = 0;
    for chunk in b.chunks_exact(64) {
        let any = chunk.chunks_exact(8).fold(0u64, |a, w| {
            a | u64::from_ne_bytes(w.try_into().expect("8"))
        });
        if any != 0 {
            break;
        }
        skipped += 64;
    }
    b[skipped..]
        .iter()
        .position(|&x| x != 0)
        .map(|i| skipped + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn reads_in_and_across_blocks_and_skips_zeros() {
        let mut data = vec![0u8; BLOCK * 2 + 100];
        data[BLOCK + 7] = 1;
        data[BLOCK * 2 + 99] = 2;
        let len = data.len() as u64;
        let mut b = Blocks::new(Cursor::new(&data), "f", len);
        assert_eq!(b.next_nonzero(0), Ok(Some(BLOCK as u64 + 7)));
        assert_eq!(b.next_nonzero(BLOCK as u64 + 8), Ok(Some(len - 1)));
        assert_eq!(b.get(len - 2, 2), Ok(Some(&[0u8, 2][..])));
        assert_eq!(b.get(len - 1, 2), Ok(None));
        assert_eq!(b.get(u64::MAX, 2), Ok(None));
        let across = b.vec(BLOCK as u64 + 6, 3).unwrap().unwrap();
        assert_eq!(across, [0, 1, 0]);
        let big = b.vec(1, BLOCK as u64 + 10).unwrap().unwrap();
        assert_eq!((big.len(), big[BLOCK + 6]), (BLOCK + 10, 1));
        assert_eq!(b.vec(1, len), Ok(None));
        assert_eq!(first_nonzero(&[0; 200]), None);
        let mut z = [0u8; 200];
        z[130] = 9;
        assert_eq!(first_nonzero(&z), Some(130));
    }
}
