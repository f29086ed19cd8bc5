//! Data block headers and the padding after a block's last entry
//! (DataBlockHeaderImpl, StreamingDataBlockHeaderImpl, BlockAwareSegmentInputStreamImpl).
//!
//! All integers are big-endian. Pulsar always writes a 128-byte header
//! (`headerLength` = 128) and readers skip to `headerLength`, so any length
//! that holds the fields and fits in the block is accepted.

use super::{Object, OffloadError, Result};

/// Bytes Pulsar reserves for a block header; entries start here.
pub const BLOCK_HEADER_SIZE: usize = 128;
/// `[i32 entry length][i64 entry id]` before each entry.
pub const ENTRY_HEADER_SIZE: usize = 12;
/// The padding pattern after a block's last entry, repeated from its first byte.
pub const PADDING: [u8; 4] = [0xFE, 0xDC, 0xDE, 0xAD];

/// Ledger-based data block magic (`DataBlockHeaderImpl.MAGIC_WORD`).
pub const LEDGER_BLOCK_MAGIC: u32 = 0xFBDB_ABCB;
/// Streaming data block magic (`StreamingDataBlockHeaderImpl.MAGIC_WORD`).
pub const STREAMING_BLOCK_MAGIC: u32 = 0x26A6_6D32;

/// The two block layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// `<uuid>-ledger-<id>` objects: one ledger, no ledger id in the header.
    Ledger,
    /// PIP-76 `<uuid>` objects: the header carries the ledger id.
    Streaming,
}

impl BlockKind {
    pub fn magic(self) -> u32 {
        match self {
            BlockKind::Ledger => LEDGER_BLOCK_MAGIC,
            BlockKind::Streaming => STREAMING_BLOCK_MAGIC,
        }
    }

    /// Bytes of the header that hold fields (the rest up to `headerLength` is zero).
    pub fn fields_size(self) -> usize {
        match self {
            BlockKind::Ledger => 28,
            BlockKind::Streaming => 36,
        }
    }

    fn from_magic(magic: u32) -> Option<Self> {
        match magic {
            LEDGER_BLOCK_MAGIC => Some(BlockKind::Ledger),
            STREAMING_BLOCK_MAGIC => Some(BlockKind::Streaming),
            _ => None,
        }
    }
}

/// One block header, as read from (or to be written to) the data object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    pub kind: BlockKind,
    pub header_length: i64,
    /// Total bytes of the block, header included.
    pub block_length: i64,
    pub first_entry_id: i64,
    /// Only streaming blocks carry one.
    pub ledger_id: Option<i64>,
}

pub(crate) fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub(crate) fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub(crate) fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl BlockHeader {
    /// Parses the header at the start of `buf`; `offset` is where `buf`
    /// starts in the data object (for error messages).
    ///
    /// Checks what a reader needs to trust the block's framing: the magic,
    /// a header length that holds the fields, and a block length no smaller
    /// than the header. Whether the block fits in the object is the caller's
    /// concern (a truncated last block still has readable entries).
    pub fn parse(buf: &[u8], offset: u64) -> Result<Self> {
        let truncated = |needed: usize| OffloadError::Truncated {
            what: "block header",
            object: Object::Data,
            offset,
            needed: needed as u64,
            available: buf.len() as u64,
        };
        if buf.len() < 4 {
            return Err(truncated(4));
        }
        let magic = be_u32(buf, 0);
        let kind = BlockKind::from_magic(magic).ok_or(OffloadError::BadMagic {
            what: "block header",
            object: Object::Data,
            offset,
            found: magic,
            expected: "0xfbdbabcb (ledger) or 0x26a66d32 (streaming)",
        })?;
        let used = kind.fields_size();
        if buf.len() < used {
            return Err(truncated(used));
        }
        let header = BlockHeader {
            kind,
            header_length: be_i64(buf, 4),
            block_length: be_i64(buf, 12),
            first_entry_id: be_i64(buf, 20),
            ledger_id: (kind == BlockKind::Streaming).then(|| be_i64(buf, 28)),
        };
        let invalid = |reason: String| OffloadError::Invalid {
            what: "block header",
            object: Object::Data,
            offset,
            reason,
        };
        if header.header_length < used as i64 {
            return Err(invalid(format!(
                "header length {} is smaller than its {used} bytes of fields",
                header.header_length
            )));
        }
        if header.block_length < header.header_length {
            return Err(invalid(format!(
                "block length {} is smaller than the header length {}",
                header.block_length, header.header_length
            )));
        }
        if header.first_entry_id < 0 {
            return Err(invalid(format!(
                "first entry id {} is negative",
                header.first_entry_id
            )));
        }
        if header.ledger_id.is_some_and(|l| l < 0) {
            return Err(invalid(format!(
                "ledger id {} is negative",
                header.ledger_id.unwrap_or_default()
            )));
        }
        Ok(header)
    }

    /// A header as Pulsar writes it: 128 bytes, fields then zeros.
    pub fn new(kind: BlockKind, block_length: i64, first_entry_id: i64, ledger_id: i64) -> Self {
        BlockHeader {
            kind,
            header_length: BLOCK_HEADER_SIZE as i64,
            block_length,
            first_entry_id,
            ledger_id: (kind == BlockKind::Streaming).then_some(ledger_id),
        }
    }

    /// The 128 header bytes (`header_length` must be 128, as Pulsar writes it).
    pub fn to_bytes(&self) -> [u8; BLOCK_HEADER_SIZE] {
        let mut out = [0u8; BLOCK_HEADER_SIZE];
        out[0..4].copy_from_slice(&self.kind.magic().to_be_bytes());
        out[4..12].copy_from_slice(&self.header_length.to_be_bytes());
        out[12..20].copy_from_slice(&self.block_length.to_be_bytes());
        out[20..28].copy_from_slice(&self.first_entry_id.to_be_bytes());
        if let Some(ledger) = self.ledger_id {
            out[28..36].copy_from_slice(&ledger.to_be_bytes());
        }
        out
    }
}

/// Offset of the first byte in `bytes` that breaks the padding pattern (which
/// starts at `bytes[0]`), or `None` when it is all padding.
pub fn padding_mismatch(bytes: &[u8]) -> Option<usize> {
    bytes
        .iter()
        .enumerate()
        .find(|&(i, &b)| b != PADDING[i % 4])
        .map(|(i, _)| i)
}

/// Appends `n` padding bytes, the pattern starting at the first one.
pub fn push_padding(out: &mut Vec<u8>, n: usize) {
    out.extend(PADDING.iter().cycle().take(n));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledger_header_layout_matches_pulsar() {
        let h = BlockHeader::new(BlockKind::Ledger, 4460, 7, 99);
        let b = h.to_bytes();
        assert_eq!(&b[..4], &[0xFB, 0xDB, 0xAB, 0xCB]);
        assert_eq!(&b[4..12], &128i64.to_be_bytes());
        assert_eq!(&b[12..20], &4460i64.to_be_bytes());
        assert_eq!(&b[20..28], &7i64.to_be_bytes());
        assert!(b[28..].iter().all(|&x| x == 0), "no ledger id, zeros");
        assert_eq!(BlockHeader::parse(&b, 0).unwrap(), h);
        assert_eq!(h.ledger_id, None);
    }

    #[test]
    fn streaming_header_carries_the_ledger_id() {
        let h = BlockHeader::new(BlockKind::Streaming, 1 << 20, 0, 1234);
        let b = h.to_bytes();
        assert_eq!(&b[..4], &[0x26, 0xA6, 0x6D, 0x32]);
        assert_eq!(&b[28..36], &1234i64.to_be_bytes());
        assert!(b[36..].iter().all(|&x| x == 0));
        assert_eq!(BlockHeader::parse(&b, 0).unwrap().ledger_id, Some(1234));
    }

    #[test]
    fn rejects_bad_headers_with_offsets() {
        let good = BlockHeader::new(BlockKind::Ledger, 200, 0, 0).to_bytes();
        let err = BlockHeader::parse(&good[..10], 4096)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "truncated block header at data-object offset 4096: needs 28 bytes, 10 available"
        );
        let mut bad = good;
        bad[0] = 0;
        let err = BlockHeader::parse(&bad, 0).unwrap_err().to_string();
        assert!(
            err.starts_with("bad block header magic at data-object offset 0: 0x00dbabcb"),
            "{err}"
        );
        let mut short = good;
        short[4..12].copy_from_slice(&20i64.to_be_bytes());
        assert!(BlockHeader::parse(&short, 0)
            .unwrap_err()
            .to_string()
            .contains("header length 20 is smaller than its 28 bytes"));
        let mut tiny = good;
        tiny[12..20].copy_from_slice(&100i64.to_be_bytes());
        assert!(BlockHeader::parse(&tiny, 0)
            .unwrap_err()
            .to_string()
            .contains("block length 100 is smaller than the header length 128"));
        let mut neg = good;
        neg[20..28].copy_from_slice(&(-1i64).to_be_bytes());
        assert!(BlockHeader::parse(&neg, 0)
            .unwrap_err()
            .to_string()
            .contains("first entry id -1 is negative"));
    }

    #[test]
    fn padding_starts_its_pattern_at_the_first_byte() {
        let mut v = Vec::new();
        push_padding(&mut v, 7);
        assert_eq!(v, [0xFE, 0xDC, 0xDE, 0xAD, 0xFE, 0xDC, 0xDE]);
        assert_eq!(padding_mismatch(&v), None);
        // Read as an int32 at an entry boundary, padding is negative: the end-of-block signal.
        assert!(be_i32(&v, 0) < 0);
        v[5] = 0;
        assert_eq!(padding_mismatch(&v), Some(5));
    }
}
