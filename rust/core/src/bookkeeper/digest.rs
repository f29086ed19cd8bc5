//! The entry as a bookie stores and returns it, and its digest (spec
//! bookkeeper.md §3.4).
//!
//! Every read response, batch element, entry-log record and journal record
//! holds the same bytes:
//! `[i64 ledger][i64 entry][i64 lac][i64 cumulative length][digest][payload]`.
//! The digest covers the 32 header bytes followed by the payload; its own bytes
//! are excluded.

use hmac::{Hmac, Mac};
use sha1::{Digest, Sha1};

use super::BookKeeperError;

/// Bytes before the digest: ledger id, entry id, LAC, cumulative length.
pub const ENTRY_HEADER_LEN: usize = 32;

/// A ledger's digest type, as its metadata records it (`DigestType` in
/// BookKeeper's `DataFormats.proto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DigestType {
    /// `java.util.zip.CRC32`, stored as a big-endian u64 whose top half is 0.
    Crc32,
    /// HMAC-SHA1 keyed with SHA1("mac" ‖ password), 20 bytes.
    Hmac,
    /// CRC-32C (Castagnoli), a big-endian u32: Pulsar's default.
    Crc32c,
    /// No digest.
    Dummy,
}

impl DigestType {
    /// The metadata's enum value (CRC32=1, HMAC=2, CRC32C=3, DUMMY=4).
    pub fn from_metadata(value: i32) -> Option<Self> {
        match value {
            1 => Some(Self::Crc32),
            2 => Some(Self::Hmac),
            3 => Some(Self::Crc32c),
            4 => Some(Self::Dummy),
            _ => None,
        }
    }

    /// Length of the digest trailer in bytes.
    pub fn len(self) -> usize {
        match self {
            Self::Crc32 => 8,
            Self::Hmac => 20,
            Self::Crc32c => 4,
            Self::Dummy => 0,
        }
    }

    /// Whether the digest has no bytes (DUMMY).
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The name BookKeeper uses.
    pub fn name(self) -> &'static str {
        match self {
            Self::Crc32 => "CRC32",
            Self::Hmac => "HMAC",
            Self::Crc32c => "CRC32C",
            Self::Dummy => "DUMMY",
        }
    }
}

/// Computes and checks a ledger's digests. Built once per ledger: for HMAC
/// it holds the derived key.
#[derive(Clone)]
pub struct Digester {
    kind: DigestType,
    mac_key: [u8; 20],
}

impl std::fmt::Debug for Digester {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key derives from the ledger password: never print it.
        f.debug_struct("Digester")
            .field("kind", &self.kind)
            .finish()
    }
}

impl Digester {
    /// A digester for `kind`; `password` is the ledger's raw password (only
    /// HMAC uses it).
    pub fn new(kind: DigestType, password: &[u8]) -> Self {
        let mut mac_key = [0u8; 20];
        if kind == DigestType::Hmac {
            let mut h = Sha1::new();
            h.update(b"mac");
            h.update(password);
            mac_key.copy_from_slice(&h.finalize());
        }
        Self { kind, mac_key }
    }

    /// The digest type.
    pub fn kind(&self) -> DigestType {
        self.kind
    }

    /// The digest of `header ‖ payload`, as stored (big-endian).
    pub fn compute(&self, header: &[u8], payload: &[u8]) -> Vec<u8> {
        match self.kind {
            DigestType::Crc32c => {
                let crc = crc32c::crc32c_append(crc32c::crc32c(header), payload);
                crc.to_be_bytes().to_vec()
            }
            DigestType::Crc32 => {
                let mut h = crc32fast::Hasher::new();
                h.update(header);
                h.update(payload);
                u64::from(h.finalize()).to_be_bytes().to_vec()
            }
            DigestType::Hmac => {
                let mut m = <Hmac<Sha1> as Mac>::new_from_slice(&self.mac_key)
                    .expect("HMAC takes a key of any length");
                m.update(header);
                m.update(payload);
                m.finalize().into_bytes().to_vec()
            }
            DigestType::Dummy => Vec::new(),
        }
    }

    /// Checks one stored entry: its length, its ids and its digest. Returns
    /// the header and where the payload starts. `entry_id` `None` skips the
    /// entry-id check (a read of the last entry, whose id is not known
    /// beforehand).
    pub fn verify(
        &self,
        bytes: &[u8],
        ledger_id: i64,
        entry_id: Option<i64>,
    ) -> Result<StoredEntry, BookKeeperError> {
        let dlen = self.kind.len();
        if bytes.len() < ENTRY_HEADER_LEN + dlen {
            return Err(BookKeeperError::Data(format!(
                "stored entry of {} bytes is shorter than its {}-byte header and {} digest",
                bytes.len(),
                ENTRY_HEADER_LEN,
                self.kind.name()
            )));
        }
        let header = StoredEntry::header(bytes, ENTRY_HEADER_LEN + dlen);
        if header.ledger_id != ledger_id {
            return Err(BookKeeperError::Data(format!(
                "entry names ledger {} where ledger {ledger_id} was read",
                header.ledger_id
            )));
        }
        if let Some(e) = entry_id {
            if header.entry_id != e {
                return Err(BookKeeperError::Data(format!(
                    "entry names entry {} where entry {e} of ledger {ledger_id} was read",
                    header.entry_id
                )));
            }
        }
        let stored = &bytes[ENTRY_HEADER_LEN..ENTRY_HEADER_LEN + dlen];
        let computed = self.compute(
            &bytes[..ENTRY_HEADER_LEN],
            &bytes[ENTRY_HEADER_LEN + dlen..],
        );
        if stored != computed.as_slice() {
            return Err(BookKeeperError::Data(match self.kind {
                // The computed HMAC is the valid tag of the bytes received:
                // printing it would let whoever reads the error forge the
                // entry. Only the fact and the stored tag's length are told.
                DigestType::Hmac => format!(
                    "HMAC-SHA1 digest mismatch on ledger {} entry {} (stored tag of {} bytes)",
                    header.ledger_id,
                    header.entry_id,
                    stored.len()
                ),
                // A CRC is no secret: both values help tell damage apart.
                _ => format!(
                    "{} digest mismatch on ledger {} entry {}: stored {}, computed {}",
                    self.kind.name(),
                    header.ledger_id,
                    header.entry_id,
                    hex(stored),
                    hex(&computed)
                ),
            }));
        }
        Ok(header)
    }
}

/// The header of a verified stored entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredEntry {
    pub ledger_id: i64,
    pub entry_id: i64,
    /// The writer's last-add-confirmed when it sent this entry.
    pub last_add_confirmed: i64,
    /// Cumulative ledger length in payload bytes, this entry included.
    pub length: i64,
    /// Where the payload (the Pulsar entry) starts in the stored bytes.
    pub payload_offset: usize,
}

impl StoredEntry {
    fn header(bytes: &[u8], payload_offset: usize) -> Self {
        let at = |i: usize| i64::from_be_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        Self {
            ledger_id: at(0),
            entry_id: at(8),
            last_add_confirmed: at(16),
            length: at(24),
            payload_offset,
        }
    }
}

/// The master key BookKeeper derives from a ledger password:
/// SHA1("ledger" ‖ password). A reader never sends it (only fencing reads and
/// adds carry it); it appears in bookie journal and index records.
pub fn master_key(password: &[u8]) -> [u8; 20] {
    let mut h = Sha1::new();
    h.update(b"ledger");
    h.update(password);
    h.finalize().into()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    // Vectors read from a live BookKeeper 4.17.3 bookie (spec §3.4).
    const CRC32C_L0_E2: &str = "0000000000000000 0000000000000002 0000000000000001 000000000000002a 3e277f57 6372633332632d656e7472792d32";
    const CRC32_L1_E0: &str = "0000000000000001 0000000000000000 ffffffffffffffff 000000000000000d 0000000036a03472 63726333322d656e7472792d30";
    const HMAC_L2_E0: &str = "0000000000000002 0000000000000000 ffffffffffffffff 000000000000000b 7fa04b5f4e0546b6b2df8a8017c4d95badab7988 6d61632d656e7472792d30";

    #[test]
    fn crc32c_vector() {
        let b = unhex(CRC32C_L0_E2);
        let d = Digester::new(DigestType::Crc32c, b"");
        let e = d.verify(&b, 0, Some(2)).unwrap();
        assert_eq!((e.last_add_confirmed, e.length), (1, 42));
        assert_eq!(&b[e.payload_offset..], b"crc32c-entry-2");
    }

    #[test]
    fn crc32_vector() {
        let b = unhex(CRC32_L1_E0);
        let e = Digester::new(DigestType::Crc32, b"")
            .verify(&b, 1, Some(0))
            .unwrap();
        assert_eq!((e.last_add_confirmed, e.length), (-1, 13));
        assert_eq!(&b[e.payload_offset..], b"crc32-entry-0");
    }

    #[test]
    fn hmac_vector_needs_the_password() {
        let b = unhex(HMAC_L2_E0);
        let e = Digester::new(DigestType::Hmac, b"secret")
            .verify(&b, 2, Some(0))
            .unwrap();
        assert_eq!(&b[e.payload_offset..], b"mac-entry-0");
        let err = Digester::new(DigestType::Hmac, b"wrong")
            .verify(&b, 2, Some(0))
            .unwrap_err();
        assert!(
            err.to_string().contains("HMAC-SHA1 digest mismatch"),
            "{err}"
        );
    }

    /// The tag a mismatch error would have to show to help is the valid tag
    /// of the bytes received: with it anyone reading errors could forge the
    /// entry. Neither it nor the key leaves in any format.
    #[test]
    fn hmac_mismatch_error_never_shows_the_computed_tag() {
        let mut b = unhex(HMAC_L2_E0);
        let n = b.len();
        b[n - 1] ^= 1; // a changed payload: its valid tag is now a secret
        let d = Digester::new(DigestType::Hmac, b"secret");
        let tag = d.compute(&b[..32], &b[52..]);
        let err = d.verify(&b, 2, Some(0)).unwrap_err().to_string();
        assert!(
            err.contains("HMAC-SHA1 digest mismatch on ledger 2 entry 0"),
            "{err}"
        );
        assert!(err.contains("stored tag of 20 bytes"), "{err}");
        let upper: String = hex(&tag).to_uppercase();
        let decimal: Vec<String> = tag.iter().map(|x| x.to_string()).collect();
        for shown in [
            hex(&tag),
            upper,
            format!("{tag:?}"),
            decimal.join(", "),
            decimal.join(" "),
            hex(&tag[..4]),
        ] {
            assert!(!err.contains(&shown), "{err} shows {shown}");
        }
        // Base64 of the tag (standard alphabet), without pulling a crate in.
        let b64 = |bytes: &[u8]| {
            const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            bytes
                .chunks(3)
                .flat_map(|c| {
                    let v =
                        c.iter().fold(0u32, |a, x| a << 8 | u32::from(*x)) << (8 * (3 - c.len()));
                    (0..=c.len()).map(move |i| A[(v >> (18 - 6 * i) & 63) as usize] as char)
                })
                .collect::<String>()
        };
        assert!(!err.contains(&b64(&tag)[..16]), "{err}");
        // Nor the stored tag (not secret, but not needed either) nor the key.
        assert!(!err.contains(&hex(&b[32..52])), "{err}");
        let debug = format!("{d:?}");
        let key = Sha1::new()
            .chain_update(b"mac")
            .chain_update(b"secret")
            .finalize();
        assert!(
            !debug.contains(&hex(&key)) && !debug.contains("secret"),
            "{debug}"
        );
        assert!(
            !debug.contains(&format!("{:?}", &key[..4]).trim_end_matches(']').to_string()),
            "{debug}"
        );
        // CRC mismatches keep both values: they are no secret.
        let mut c = unhex(CRC32C_L0_E2);
        c[40] ^= 1;
        let err = Digester::new(DigestType::Crc32c, b"")
            .verify(&c, 0, Some(2))
            .unwrap_err()
            .to_string();
        assert!(err.contains("stored 3e277f57, computed "), "{err}");
    }

    #[test]
    fn flipped_payload_bit_and_wrong_ids_are_caught() {
        let mut b = unhex(CRC32C_L0_E2);
        let d = Digester::new(DigestType::Crc32c, b"");
        assert!(d
            .verify(&b, 1, Some(2))
            .unwrap_err()
            .to_string()
            .contains("ledger 0 where ledger 1"));
        assert!(d
            .verify(&b, 0, Some(3))
            .unwrap_err()
            .to_string()
            .contains("entry 2 where entry 3"));
        assert!(d.verify(&b, 0, None).is_ok());
        let n = b.len();
        b[n - 1] ^= 1;
        assert!(d
            .verify(&b, 0, Some(2))
            .unwrap_err()
            .to_string()
            .contains("CRC32C digest mismatch"));
        assert!(d
            .verify(&b[..35], 0, Some(2))
            .unwrap_err()
            .to_string()
            .contains("shorter"));
    }

    #[test]
    fn dummy_has_no_trailer() {
        let mut b = unhex(CRC32C_L0_E2);
        b.drain(32..36);
        let e = Digester::new(DigestType::Dummy, b"")
            .verify(&b, 0, Some(2))
            .unwrap();
        assert_eq!(&b[e.payload_offset..], b"crc32c-entry-2");
    }

    #[test]
    fn master_keys() {
        assert_eq!(
            hex(&master_key(b"")),
            "850bf1071c5e3d8c24235676f8816ae0cbe2f14f"
        );
        assert_eq!(
            hex(&master_key(b"secret")),
            "e793cbc379107648537183605cd361d3bb789a39"
        );
    }
}
