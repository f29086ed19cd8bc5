//! The bookie wire protocol, read side only (spec bookkeeper.md §3.1-§3.3).
//!
//! Every frame is `[i32 big-endian length][body]`. A reader needs:
//! - v2 READENTRY (opcode 2): one entry, or entry -1 for the bookie's last;
//! - v2 BATCH_READ_ENTRY (opcode 7, BookKeeper ≥ 4.17): consecutive entries;
//! - v3 READ_LAC (a protobuf `Request`): the last-add-confirmed of an open
//!   ledger, which v2 cannot ask for.
//!
//! No request here can fence: the v2 flags are always 0 (`DO_FENCING` is
//! 0x0001 and would need the master key, which this module never writes), and
//! the v3 request carries no `ReadRequest` at all. A connection starts in v3
//! and switches to v2 for good on its first v2 frame, so READ_LAC goes on a
//! connection of its own.

use prost::Message;

use super::BookKeeperError;
use crate::proto::bookkeeper as pb;

/// v2 protocol version in the packet header.
const V2: u32 = 2;
/// v2 READENTRY opcode.
pub const OP_READ_ENTRY: u8 = 2;
/// v2 BATCH_READ_ENTRY opcode.
pub const OP_BATCH_READ_ENTRY: u8 = 7;
/// v3 READ_LAC operation type.
const V3_READ_LAC: i32 = 7;
/// v3 START_TLS operation type.
const V3_START_TLS: i32 = 9;

/// v2 and v3 return codes a reader tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rc {
    Ok,
    NoLedger,
    NoEntry,
    TooManyRequests,
    Other(i32),
}

impl Rc {
    fn v2(rc: i32) -> Self {
        match rc {
            0 => Rc::Ok,
            1 => Rc::NoLedger,
            2 => Rc::NoEntry,
            106 => Rc::TooManyRequests,
            x => Rc::Other(x),
        }
    }

    fn v3(rc: i32) -> Self {
        match rc {
            0 => Rc::Ok,
            402 => Rc::NoLedger,
            403 => Rc::NoEntry,
            506 => Rc::TooManyRequests,
            x => Rc::Other(x),
        }
    }

    /// EUA: the bookie refused this client as unauthenticated or not
    /// authorized.
    pub fn is_unauthorized(self) -> bool {
        matches!(self, Rc::Other(102 | 502))
    }

    /// A readable description, with BookKeeper's name for the code.
    pub fn describe(self) -> String {
        match self {
            Rc::Ok => "EOK".into(),
            Rc::NoLedger => "no such ledger (ENOLEDGER)".into(),
            Rc::NoEntry => "no such entry (ENOENTRY)".into(),
            Rc::TooManyRequests => "too many requests (ETOOMANYREQUESTS)".into(),
            Rc::Other(x) => {
                let name = match x {
                    100 | 404 => "EBADREQ",
                    101 | 501 => "EIO",
                    102 | 502 => "EUA (authentication required)",
                    103 | 503 => "EBADVERSION",
                    104 | 504 => "EFENCED",
                    105 | 505 => "EREADONLY",
                    107 | 507 => "EUNKNOWNLEDGERSTATE",
                    _ => "unknown",
                };
                format!("error code {x} ({name})")
            }
        }
    }
}

fn v2_header(op: u8) -> u32 {
    // Flags are always 0: never DO_FENCING, never RECOVERY_ADD.
    (V2 << 24) | (u32::from(op) << 16)
}

/// A v2 READENTRY frame (length prefix included). `entry_id` -1 asks for the
/// bookie's last entry of the ledger.
pub fn read_entry_request(ledger_id: i64, entry_id: i64) -> [u8; 24] {
    let mut b = [0u8; 24];
    b[0..4].copy_from_slice(&20u32.to_be_bytes());
    b[4..8].copy_from_slice(&v2_header(OP_READ_ENTRY).to_be_bytes());
    b[8..16].copy_from_slice(&ledger_id.to_be_bytes());
    b[16..24].copy_from_slice(&entry_id.to_be_bytes());
    b
}

/// A v2 BATCH_READ_ENTRY frame: up to `max_count` entries from `start`, at
/// most `max_size` bytes of response frame (the first entry always comes).
/// The body is header, ledger, start, request id, max count and max size:
/// 4 + 8 + 8 + 8 + 4 + 8 = 40 bytes (the spec's "36" does not add up).
pub fn batch_read_request(
    ledger_id: i64,
    start: i64,
    request_id: i64,
    max_count: i32,
    max_size: i64,
) -> [u8; 44] {
    let mut b = [0u8; 44];
    b[0..4].copy_from_slice(&40u32.to_be_bytes());
    b[4..8].copy_from_slice(&v2_header(OP_BATCH_READ_ENTRY).to_be_bytes());
    b[8..16].copy_from_slice(&ledger_id.to_be_bytes());
    b[16..24].copy_from_slice(&start.to_be_bytes());
    b[24..32].copy_from_slice(&request_id.to_be_bytes());
    b[32..36].copy_from_slice(&max_count.to_be_bytes());
    b[36..44].copy_from_slice(&max_size.to_be_bytes());
    b
}

/// A v3 READ_LAC frame (length prefix included).
pub fn read_lac_request(ledger_id: i64, txn_id: u64) -> Vec<u8> {
    let req = pb::Request {
        header: pb::BkPacketHeader {
            version: 3,
            operation: V3_READ_LAC,
            txn_id,
            priority: None,
        },
        read_lac_request: Some(pb::ReadLacRequest { ledger_id }),
        start_tls_request: None,
    };
    v3_frame(&req)
}

/// A v3 START_TLS frame (length prefix included): BookKeeper's client sends
/// it first on a connection that is to carry TLS, in v2 mode too.
pub fn start_tls_request(txn_id: u64) -> Vec<u8> {
    let req = pb::Request {
        header: pb::BkPacketHeader {
            version: 3,
            operation: V3_START_TLS,
            txn_id,
            priority: None,
        },
        read_lac_request: None,
        start_tls_request: Some(pb::StartTlsRequest {}),
    };
    v3_frame(&req)
}

fn v3_frame(req: &pb::Request) -> Vec<u8> {
    let body = req.encode_to_vec();
    let mut b = Vec::with_capacity(4 + body.len());
    b.extend_from_slice(&(body.len() as u32).to_be_bytes());
    b.extend_from_slice(&body);
    b
}

/// The bookie's answer to START_TLS: its request id and return code.
pub fn decode_start_tls(frame: &[u8]) -> Result<(u64, Rc), BookKeeperError> {
    let r = pb::Response::decode(frame)
        .map_err(|e| BookKeeperError::Protocol(format!("invalid v3 response to START_TLS: {e}")))?;
    if r.header.operation != V3_START_TLS {
        return Err(BookKeeperError::Protocol(format!(
            "v3 response to operation {}, expected START_TLS",
            r.header.operation
        )));
    }
    Ok((r.header.txn_id, Rc::v3(r.status)))
}

/// A decoded v2 response. `body` ranges index into the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum V2Response {
    /// READENTRY: `entry` is the stored entry when `rc` is OK.
    Read {
        rc: Rc,
        ledger_id: i64,
        entry_id: i64,
        entry: std::ops::Range<usize>,
    },
    /// BATCH_READ_ENTRY: the stored entries, in order from `start`.
    Batch {
        rc: Rc,
        ledger_id: i64,
        start: i64,
        request_id: i64,
        entries: Vec<std::ops::Range<usize>>,
    },
}

fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be_i64(b: &[u8], at: usize) -> Option<i64> {
    Some(i64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Decodes one v2 response frame body (without its length prefix).
pub fn decode_v2(frame: &[u8]) -> Result<V2Response, BookKeeperError> {
    let short =
        || BookKeeperError::Protocol(format!("v2 response of {} bytes is too short", frame.len()));
    let header = be_i32(frame, 0).ok_or_else(short)? as u32;
    let op = ((header >> 16) & 0xff) as u8;
    let version = header >> 24;
    if version != V2 {
        return Err(BookKeeperError::Protocol(format!(
            "response has protocol version {version}, expected 2"
        )));
    }
    let rc = Rc::v2(be_i32(frame, 4).ok_or_else(short)?);
    let ledger_id = be_i64(frame, 8).ok_or_else(short)?;
    match op {
        OP_READ_ENTRY => {
            let entry_id = be_i64(frame, 16).ok_or_else(short)?;
            Ok(V2Response::Read {
                rc,
                ledger_id,
                entry_id,
                entry: 24..frame.len(),
            })
        }
        OP_BATCH_READ_ENTRY => {
            let start = be_i64(frame, 16).ok_or_else(short)?;
            let request_id = be_i64(frame, 24).ok_or_else(short)?;
            let mut entries = Vec::new();
            let mut at = 32;
            while at < frame.len() {
                let len = be_i32(frame, at).ok_or_else(|| {
                    BookKeeperError::Protocol(format!(
                        "batch response cut inside an entry length at byte {at}"
                    ))
                })?;
                let len = usize::try_from(len)
                    .ok()
                    .filter(|&l| at + 4 + l <= frame.len())
                    .ok_or_else(|| {
                        BookKeeperError::Protocol(format!(
                            "batch response entry {} claims {len} bytes at byte {at}, {} remain",
                            entries.len(),
                            frame.len() - at - 4
                        ))
                    })?;
                entries.push(at + 4..at + 4 + len);
                at += 4 + len;
            }
            Ok(V2Response::Batch {
                rc,
                ledger_id,
                start,
                request_id,
                entries,
            })
        }
        other => Err(BookKeeperError::Protocol(format!(
            "unexpected v2 opcode {other} in a response"
        ))),
    }
}

/// A decoded v3 READ_LAC response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LacResponse {
    pub rc: Rc,
    pub txn_id: u64,
    pub ledger_id: i64,
    /// `[i64 ledger][i64 lac][digest]`, the last explicit LAC, if any.
    pub lac_body: Option<Vec<u8>>,
    /// The bookie's last stored entry, if any.
    pub last_entry: Option<Vec<u8>>,
}

/// Decodes one v3 response frame body (without its length prefix).
pub fn decode_lac(frame: &[u8]) -> Result<LacResponse, BookKeeperError> {
    let r = pb::Response::decode(frame)
        .map_err(|e| BookKeeperError::Protocol(format!("invalid v3 response: {e}")))?;
    if r.header.operation != V3_READ_LAC {
        return Err(BookKeeperError::Protocol(format!(
            "v3 response to operation {}, expected READ_LAC",
            r.header.operation
        )));
    }
    let lac = r.read_lac_response;
    let status = lac.as_ref().map_or(
        r.status,
        |l| if r.status == 0 { l.status } else { r.status },
    );
    Ok(LacResponse {
        rc: Rc::v3(status),
        txn_id: r.header.txn_id,
        ledger_id: lac.as_ref().map_or(-1, |l| l.ledger_id),
        lac_body: lac.as_ref().and_then(|l| l.lac_body.clone()),
        last_entry: lac.and_then(|l| l.last_entry_body),
    })
}

/// Reads one length-prefixed frame, refusing lengths over `max_frame`
/// before allocating.
pub fn read_frame(r: &mut impl std::io::Read, max_frame: usize) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = i32::from_be_bytes(len);
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= max_frame)
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("bookie sent a frame of {len} bytes; the limit is {max_frame}"),
            )
        })?;
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_tls_is_v3_operation_9_and_its_answer_is_read_back() {
        let b = start_tls_request(42);
        let req = pb::Request::decode(&b[4..]).unwrap();
        assert_eq!(
            u32::from_be_bytes(b[0..4].try_into().unwrap()) as usize,
            b.len() - 4
        );
        assert_eq!(
            (req.header.version, req.header.operation, req.header.txn_id),
            (3, 9, 42)
        );
        assert!(req.start_tls_request.is_some() && req.read_lac_request.is_none());
        let answer = |operation, status| {
            pb::Response {
                header: pb::BkPacketHeader {
                    version: 3,
                    operation,
                    txn_id: 42,
                    priority: None,
                },
                status,
                read_lac_response: None,
                start_tls_response: Some(pb::StartTlsResponse {}),
            }
            .encode_to_vec()
        };
        assert_eq!(decode_start_tls(&answer(9, 0)).unwrap(), (42, Rc::Ok));
        // A bookie without TLS answers EBADREQ; one whose authorizer refused the certificate, EIO.
        assert_eq!(decode_start_tls(&answer(9, 404)).unwrap().1, Rc::Other(404));
        assert!(decode_start_tls(&answer(7, 0)).is_err());
        // A v2 READENTRY answer is not a START_TLS answer.
        assert!(decode_start_tls(&[2, 2, 0, 0, 0, 0, 0, 0]).is_err());
        assert!(
            Rc::v2(102).is_unauthorized()
                && Rc::v3(502).is_unauthorized()
                && !Rc::v3(501).is_unauthorized()
        );
    }

    #[test]
    fn read_request_bytes_never_fence() {
        let b = read_entry_request(5, 7);
        assert_eq!(
            b.to_vec(),
            [
                &[0, 0, 0, 20][..],
                &[0x02, 0x02, 0x00, 0x00],
                &5i64.to_be_bytes(),
                &7i64.to_be_bytes()
            ]
            .concat()
        );
        // No DO_FENCING flag, and no master key (which would make the frame 40 bytes).
        assert_eq!(u16::from_be_bytes([b[6], b[7]]) & 0x0001, 0);
        let b = batch_read_request(5, 0, 9, 100, 1 << 20);
        assert_eq!(&b[0..8], &[0, 0, 0, 40, 0x02, 0x07, 0x00, 0x00]);
        assert_eq!(&b[36..44], &(1i64 << 20).to_be_bytes());
    }

    #[test]
    fn read_lac_request_matches_bookkeeper_s_encoding() {
        // Request{header{version 3, READ_LAC, txnId 7}, readLacRequest{ledgerId 0}}:
        // the header fields as in the spec's verified READ request, then tag 104.
        let b = read_lac_request(0, 7);
        assert_eq!(
            b[4..].to_vec(),
            vec![0x0a, 0x06, 0x08, 0x03, 0x10, 0x07, 0x18, 0x07, 0xc2, 0x06, 0x02, 0x08, 0x00]
        );
        assert_eq!(
            u32::from_be_bytes(b[..4].try_into().unwrap()) as usize,
            b.len() - 4
        );
    }

    #[test]
    fn decodes_v2_read_and_batch_responses() {
        let mut f = vec![];
        f.extend_from_slice(&0x0202_0000u32.to_be_bytes());
        f.extend_from_slice(&0i32.to_be_bytes());
        f.extend_from_slice(&3i64.to_be_bytes());
        f.extend_from_slice(&4i64.to_be_bytes());
        f.extend_from_slice(b"abc");
        let r = decode_v2(&f).unwrap();
        assert_eq!(
            r,
            V2Response::Read {
                rc: Rc::Ok,
                ledger_id: 3,
                entry_id: 4,
                entry: 24..27
            }
        );

        let mut f = vec![];
        f.extend_from_slice(&0x0207_0000u32.to_be_bytes());
        f.extend_from_slice(&0i32.to_be_bytes());
        f.extend_from_slice(&3i64.to_be_bytes());
        f.extend_from_slice(&10i64.to_be_bytes());
        f.extend_from_slice(&99i64.to_be_bytes());
        for e in [&b"xy"[..], b"z"] {
            f.extend_from_slice(&(e.len() as i32).to_be_bytes());
            f.extend_from_slice(e);
        }
        let r = decode_v2(&f).unwrap();
        assert_eq!(
            r,
            V2Response::Batch {
                rc: Rc::Ok,
                ledger_id: 3,
                start: 10,
                request_id: 99,
                entries: vec![36..38, 42..43]
            }
        );
        // An entry claiming more bytes than the frame has is an error, not a panic.
        let n = f.len();
        f[n - 5..n - 1].copy_from_slice(&1000i32.to_be_bytes());
        assert!(decode_v2(&f)
            .unwrap_err()
            .to_string()
            .contains("claims 1000 bytes"));
        f[n - 5..n - 1].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(decode_v2(&f).is_err());
        assert!(decode_v2(&f[..10])
            .unwrap_err()
            .to_string()
            .contains("too short"));
    }

    #[test]
    fn frames_are_bounded_before_allocation() {
        let mut src: &[u8] = &[0x7f, 0xff, 0xff, 0xff, 1, 2];
        let e = read_frame(&mut src, 1 << 20).unwrap_err();
        assert!(e.to_string().contains("limit"), "{e}");
        let mut src: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        assert!(read_frame(&mut src, 1 << 20).is_err());
        let mut src: &[u8] = &[0, 0, 0, 2, 9, 8];
        assert_eq!(read_frame(&mut src, 16).unwrap(), vec![9, 8]);
    }

    #[test]
    fn return_codes_are_named() {
        assert_eq!(Rc::v2(2), Rc::NoEntry);
        assert_eq!(Rc::v3(403), Rc::NoEntry);
        assert!(Rc::v2(104).describe().contains("EFENCED"));
        assert!(Rc::v3(502).describe().contains("EUA"));
    }
}
