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
use pulsar_entries_core::bookkeeper::client::MAX_WINDOW;
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
    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }
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
            // Once the input is used up, the bookie holds nothing more.
            let choice = if s.done() { 4 } else { s.byte() };
            let (rc, l, e, data): (i32, i64, i64, Vec<u8>) = match choice % 10 {
                0..=3 => {
                    let payload = s.slice((choice / 10) as usize % 16);
                    (
                        0,
                        LEDGER,
                        entry,
                        stored(&self.digester, entry, entry - 1, &payload),
                    )
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
                start_tls_response: None,
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
            // Nothing more to say: the bookie hangs up. (A bookie that stays silent would make
            // each case wait out a real timeout; tests/bookkeeper_client.rs covers stalls.)
            return Ok(0);
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
    let digest = [
        DigestType::Crc32c,
        DigestType::Crc32,
        DigestType::Hmac,
        DigestType::Dummy,
    ][flags as usize % 4];
    let e = 1 + (flags as usize >> 2) % 3;
    let w = 1 + s.byte() as usize % e;
    let state = if flags & 0x40 == 0 {
        LedgerState::Closed
    } else {
        LedgerState::Open
    };
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
        request_timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(1),
        pipeline_depth: 4,
        max_frame_bytes: 1 << 16,
        reconnect_backoff: Duration::ZERO,
        tls: None,
    };
    let mut client = BookieClient::with_connector(opts, Box::new(connect));
    let Ok(bound) = client.last_readable(&meta) else {
        return;
    };
    // Window by window, as the readers do: at most 4 windows of 64 KiB.
    let mut rows = Vec::new();
    let mut next = Some(first);
    for _ in 0..4 {
        let Some(from) = next else { break };
        let Ok(w) = client.read_window(&meta, from, bound, 1 << 16) else {
            return;
        };
        assert!(w.entries.len() as i64 <= MAX_WINDOW);
        let bytes: usize = w
            .entries
            .iter()
            .map(|r| r.data.as_ref().map_or(0, Vec::len))
            .sum();
        // The budget, overshot by at most the requests in flight (4 pipelines of 4 frames).
        assert!(bytes <= (1 << 16) + 16 * (1 << 16), "{bytes}");
        rows.extend(w.entries);
        next = w.next;
    }
    if bound < first {
        assert!(rows.is_empty());
        return;
    }
    // The rows cover `first..` without a gap or an overlap, in order, never past the bound: a
    // row per entry, or one row for a range (`entries X..=Y: not read: ...`).
    let mut expect = first;
    for r in &rows {
        assert_eq!(r.ledger_id, LEDGER);
        assert_eq!(r.entry_id, expect);
        let end = match &r.data {
            Ok(_) => r.entry_id,
            Err(why) => covered(why).map_or(r.entry_id, |(a, b)| {
                assert_eq!(a, r.entry_id, "{why}");
                b
            }),
        };
        assert!(end <= bound);
        expect = end.saturating_add(1);
    }
    match next {
        Some(n) => assert_eq!(n, expect),
        None => assert!(rows.is_empty() || expect > bound || expect == i64::MAX),
    }
});

/// The range `X..=Y` a row's `entries X..=Y: not read` stands for.
fn covered(why: &str) -> Option<(i64, i64)> {
    let rest = why.split_once(" entries ")?.1;
    let (range, _) = rest.split_once(": not read")?;
    let (a, b) = range.split_once("..=")?;
    Some((a.parse().ok()?, b.parse().ok()?))
}
