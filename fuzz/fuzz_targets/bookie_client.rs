//! The BookKeeper client against a hostile bookie: an in-memory transport
//! answers each READENTRY / READ_LAC request with frames the input chooses
//! (a well-formed entry under the ledger's digest, a wrong entry id or
//! ledger, an error code, a truncated or oversized frame, garbage, a dropped
//! connection), and the ledger metadata claims a `lastEntryId` or the bookies
//! a last-add-confirmed anywhere up to `i64::MAX`. Nothing may panic or
//! allocate by a claim (run under a 1 GiB address-space limit), and the rows
//! reconcile: one row per entry from the first, in order, each entry at most
//! once, never past the bound, and a short read only after a run of entries
//! no bookie holds.
#![no_main]

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use prost::Message;
use pulsar_entries_core::bookkeeper::client::ABSENT_RUN;
use pulsar_entries_core::bookkeeper::{
    BookieClient, ClientOptions, DigestType, Digester, LedgerMetadata, LedgerState, Segment,
    Transport,
};
use pulsar_entries_core::proto::bookkeeper as pb;

const LEDGER: i64 = 7;

/// The input, read a byte at a time; zeros once it runs out.
struct Script {
    bytes: Vec<u8>,
    at: usize,
}

impl Script {
    fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }
    fn i64(&mut self) -> i64 {
        i64::from_be_bytes(std::array::from_fn(|_| self.byte()))
    }
    fn slice(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = (body.len() as u32).to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

fn stored(d: &Digester, entry: i64, lac: i64, payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for v in [LEDGER, entry, lac, 0] {
        h.extend_from_slice(&v.to_be_bytes());
    }
    let digest = d.compute(&h, payload);
    [h, digest, payload.to_vec()].concat()
}

/// One bookie's connection: requests written are answered from the script.
struct Conn {
    script: Arc<Mutex<Script>>,
    digester: Arc<Digester>,
    out: VecDeque<u8>,
    inbuf: Vec<u8>,
    closed: bool,
}

impl Conn {
    fn answer(&mut self, req: &[u8]) {
        let mut s = self.script.lock().unwrap();
        if req.first() == Some(&0x02) && req.len() >= 20 {
            let entry = i64::from_be_bytes(req[12..20].try_into().unwrap());
            let choice = s.byte();
            let (rc, l, e, data): (i32, i64, i64, Vec<u8>) = match choice % 10 {
                0..=3 => {
                    let payload = s.slice((choice / 10) as usize % 16);
                    (0, LEDGER, entry, stored(&self.digester, entry, entry - 1, &payload))
                }
                4 => (2, LEDGER, entry, vec![]),
                5 => (1, LEDGER, entry, vec![]),
                6 => (0, LEDGER, s.i64(), vec![0; 40]),
                7 => (0, s.i64(), entry, vec![]),
                8 => {
                    // Raw bytes: any frame length, any body.
                    let n = s.byte() as usize % 48;
                    self.out.extend(s.slice(n));
                    return;
                }
                _ => {
                    self.closed = true;
                    return;
                }
            };
            let mut body = Vec::new();
            body.extend_from_slice(&0x0202_0000u32.to_be_bytes());
            body.extend_from_slice(&rc.to_be_bytes());
            body.extend_from_slice(&l.to_be_bytes());
            body.extend_from_slice(&e.to_be_bytes());
            body.extend_from_slice(&data);
            self.out.extend(frame(&body));
        } else if let Ok(r) = pb::Request::decode(req) {
            // READ_LAC: an explicit LAC the input claims, with a valid digest.
            let claim = s.i64();
            let mut lac = [LEDGER.to_be_bytes(), claim.to_be_bytes()].concat();
            lac.extend(self.digester.compute(&lac, &[]));
            let status = if s.byte() % 8 == 0 { 1 } else { 0 };
            let resp = pb::Response {
                header: r.header,
                status,
                read_lac_response: Some(pb::ReadLacResponse {
                    status,
                    ledger_id: LEDGER,
                    lac_body: Some(lac),
                    last_entry_body: None,
                }),
            };
            self.out.extend(frame(&resp.encode_to_vec()));
        } else {
            self.closed = true;
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.out.is_empty() {
            if self.closed {
                return Ok(0);
            }
            // Nothing to say: the read times out at once.
            return Err(io::Error::new(io::ErrorKind::WouldBlock, "no data"));
        }
        let n = buf.len().min(self.out.len());
        for (i, b) in self.out.drain(..n).enumerate() {
            buf[i] = b;
        }
        Ok(n)
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "closed"));
        }
        self.inbuf.extend_from_slice(buf);
        while self.inbuf.len() >= 4 {
            let len = u32::from_be_bytes(self.inbuf[..4].try_into().unwrap()) as usize;
            if self.inbuf.len() < 4 + len {
                break;
            }
            let req: Vec<u8> = self.inbuf.drain(..4 + len).skip(4).collect();
            self.answer(&req);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Transport for Conn {
    fn set_read_timeout(&mut self, _: Option<Duration>) -> io::Result<()> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let mut s = Script {
        bytes: data.to_vec(),
        at: 0,
    };
    let flags = s.byte();
    let digest = [DigestType::Crc32c, DigestType::Crc32, DigestType::Hmac, DigestType::Dummy]
        [flags as usize % 4];
    let e = 1 + (flags as usize >> 2) % 3;
    let w = 1 + s.byte() as usize % e;
    let state = if flags & 0x40 == 0 { LedgerState::Closed } else { LedgerState::Open };
    let claim = s.i64().max(-1);
    let first = (s.byte() % 8) as i64;
    let meta = LedgerMetadata {
        ledger_id: LEDGER,
        ensemble_size: e,
        write_quorum: w,
        ack_quorum: 1,
        state,
        last_entry_id: claim,
        length: 0,
        digest,
        password: b"pw".to_vec(),
        segments: vec![Segment {
            first_entry_id: 0,
            bookies: (0..e).map(|i| format!("b{i}")).collect(),
        }],
        custom: vec![],
    };
    let digester = Arc::new(Digester::new(digest, b"pw"));
    let script = Arc::new(Mutex::new(s));
    let connect = {
        let script = script.clone();
        let digester = digester.clone();
        move |_: &str, _: Duration| -> Result<Box<dyn Transport>, String> {
            if script.lock().unwrap().byte() == 0xff {
                return Err("refused".into());
            }
            Ok(Box::new(Conn {
                script: script.clone(),
                digester: digester.clone(),
                out: VecDeque::new(),
                inbuf: Vec::new(),
                closed: false,
            }))
        }
    };
    let opts = ClientOptions {
        // A silent bookie (nothing queued) makes the read wait out this.
        request_timeout: Duration::from_millis(2),
        connect_timeout: Duration::from_secs(1),
        pipeline_depth: 4,
        max_frame_bytes: 1 << 16,
        reconnect_backoff: Duration::ZERO,
    };
    let mut client = BookieClient::with_connector(opts, Box::new(connect));
    let Ok(bound) = client.last_readable(&meta) else {
        return;
    };
    let Ok(rows) = client.read_ledger(&meta, first, None) else {
        return;
    };
    if bound < first {
        assert!(rows.is_empty());
        return;
    }
    // One row per entry from `first`, in order, never past the bound.
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.entry_id, first + i as i64);
        assert!(r.entry_id <= bound);
        assert_eq!(r.ledger_id, LEDGER);
    }
    let read_to = rows.last().map_or(first - 1, |r| r.entry_id);
    if read_to < bound {
        // Short: the last row stands for the rest, after a run of absent entries.
        let why = rows.last().and_then(|r| r.data.as_ref().err()).expect("an error row");
        assert!(why.contains("beyond what the bookies hold"), "{why}");
        assert!(rows.len() as i64 > ABSENT_RUN);
    }
});
