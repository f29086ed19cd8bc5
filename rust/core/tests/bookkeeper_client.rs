//! The read-only BookKeeper client against fake bookies on 127.0.0.1 that
//! speak the v2 read and v3 READ_LAC protocol: replica failover, digest
//! mismatches, timeouts, the last-add-confirmed bound of open ledgers, and
//! that no request ever fences.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use prost::Message;
use pulsar_entries_core::bookkeeper::{
    entries_batch, BookieClient, ClientOptions, DigestType, Digester, LedgerMetadata, LedgerState,
    Segment,
};
use pulsar_entries_core::proto::bookkeeper as pb;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Serve,
    /// Accepts connections, reads requests, never answers.
    Silent,
}

type Store = HashMap<(i64, i64), Vec<u8>>;

/// What a fake bookie holds and saw, shared with its connection threads.
#[derive(Clone, Default)]
struct State {
    /// (ledger, entry) -> stored bytes.
    store: Arc<Mutex<Store>>,
    explicit_lac: Arc<Mutex<Option<Vec<u8>>>>,
    /// Every request this bookie received: (frame length, header word).
    seen: Arc<Mutex<Vec<(usize, u32)>>>,
}

struct Bookie {
    addr: String,
    state: State,
}

fn stored(d: &Digester, ledger: i64, entry: i64, lac: i64, payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for v in [ledger, entry, lac, 100 * (entry + 1)] {
        h.extend_from_slice(&v.to_be_bytes());
    }
    let digest = d.compute(&h, payload);
    [h, digest, payload.to_vec()].concat()
}

fn read_frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let mut b = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut b).ok()?;
    Some(b)
}

fn serve(mut s: TcpStream, mode: Mode, st: State) {
    let State {
        store,
        explicit_lac: explicit,
        seen,
    } = st;
    while let Some(frame) = read_frame(&mut s) {
        let header = u32::from_be_bytes(frame[0..4].try_into().unwrap());
        seen.lock().unwrap().push((frame.len(), header));
        if mode == Mode::Silent {
            continue;
        }
        if frame[0] == 0x02 {
            // v2 READENTRY.
            assert_eq!(frame[1], 2, "only READENTRY is expected");
            let ledger = i64::from_be_bytes(frame[4..12].try_into().unwrap());
            let entry = i64::from_be_bytes(frame[12..20].try_into().unwrap());
            let data = store.lock().unwrap().get(&(ledger, entry)).cloned();
            let mut out = Vec::new();
            out.extend_from_slice(&0x0202_0000u32.to_be_bytes());
            out.extend_from_slice(&(if data.is_some() { 0i32 } else { 2 }).to_be_bytes());
            out.extend_from_slice(&ledger.to_be_bytes());
            out.extend_from_slice(&entry.to_be_bytes());
            out.extend_from_slice(&data.unwrap_or_default());
            let mut f = (out.len() as u32).to_be_bytes().to_vec();
            f.extend_from_slice(&out);
            if s.write_all(&f).is_err() {
                return;
            }
        } else {
            // v3: READ_LAC only.
            let req = pb::Request::decode(&frame[..]).expect("v3 request");
            let ledger = req.read_lac_request.expect("READ_LAC").ledger_id;
            let last = store
                .lock()
                .unwrap()
                .iter()
                .filter(|((l, _), _)| *l == ledger)
                .max_by_key(|((_, e), _)| *e)
                .map(|(_, v)| v.clone());
            let resp = pb::Response {
                header: req.header,
                status: 0,
                read_lac_response: Some(pb::ReadLacResponse {
                    status: 0,
                    ledger_id: ledger,
                    lac_body: explicit.lock().unwrap().clone(),
                    last_entry_body: last,
                }),
            };
            let body = resp.encode_to_vec();
            let mut f = (body.len() as u32).to_be_bytes().to_vec();
            f.extend_from_slice(&body);
            if s.write_all(&f).is_err() {
                return;
            }
        }
    }
}

fn bookie(mode: Mode) -> Bookie {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let b = Bookie {
        addr,
        state: State::default(),
    };
    let shared = b.state.clone();
    thread::spawn(move || {
        for s in l.incoming().flatten() {
            let shared = shared.clone();
            thread::spawn(move || serve(s, mode, shared));
        }
    });
    b
}

/// An address nothing listens on.
fn dead_address() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap().to_string();
    drop(l);
    a
}

fn meta(state: LedgerState, last: i64, bookies: &[&str]) -> LedgerMetadata {
    LedgerMetadata {
        ledger_id: 7,
        ensemble_size: 3,
        write_quorum: 2,
        ack_quorum: 2,
        state,
        last_entry_id: last,
        length: 0,
        digest: DigestType::Crc32c,
        password: vec![],
        segments: vec![Segment {
            first_entry_id: 0,
            bookies: bookies.iter().map(|s| s.to_string()).collect(),
        }],
        custom: vec![],
    }
}

/// Writes entries 0..n of ledger 7 onto the bookies of each entry's write set.
fn populate(m: &LedgerMetadata, bookies: &[&Bookie], n: i64) {
    let d = Digester::new(m.digest, &m.password);
    for e in 0..n {
        for addr in m.write_set(e) {
            if let Some(b) = bookies.iter().find(|b| b.addr == addr) {
                let bytes = stored(&d, 7, e, e - 1, format!("entry-{e}").as_bytes());
                b.state.store.lock().unwrap().insert((7, e), bytes);
            }
        }
    }
}

fn opts() -> ClientOptions {
    ClientOptions {
        request_timeout: Duration::from_millis(400),
        connect_timeout: Duration::from_millis(400),
        pipeline_depth: 4,
        ..ClientOptions::default()
    }
}

fn payloads(rows: &[pulsar_entries_core::bookkeeper::ReadEntry]) -> Vec<String> {
    rows.iter()
        .map(|r| match &r.data {
            Ok(d) => String::from_utf8(d.clone()).unwrap(),
            Err(e) => format!("ERR {e}"),
        })
        .collect()
}

#[test]
fn reads_a_closed_ledger_and_never_fences() {
    let (a, b, c) = (
        bookie(Mode::Serve),
        bookie(Mode::Serve),
        bookie(Mode::Serve),
    );
    let m = meta(LedgerState::Closed, 19, &[&a.addr, &b.addr, &c.addr]);
    populate(&m, &[&a, &b, &c], 20);
    let rows = BookieClient::new(opts()).read_ledger(&m, 0, None).unwrap();
    assert_eq!(
        payloads(&rows),
        (0..20).map(|e| format!("entry-{e}")).collect::<Vec<_>>()
    );
    for bk in [&a, &b, &c] {
        for &(len, header) in bk.state.seen.lock().unwrap().iter() {
            assert_eq!(len, 20, "a v2 read without master key");
            assert_eq!(header & 0xffff, 0, "no flags: never DO_FENCING");
        }
    }
    // Ranges are honoured and bounded by the ledger's last entry.
    let rows = BookieClient::new(opts())
        .read_ledger(&m, 15, Some(40))
        .unwrap();
    assert_eq!(
        rows.iter().map(|r| r.entry_id).collect::<Vec<_>>(),
        vec![15, 16, 17, 18, 19]
    );
    let batch = entries_batch(&rows);
    assert_eq!(batch.num_rows(), 5);
    assert_eq!(batch.column(3).null_count(), 5);
}

#[test]
fn fails_over_from_a_dead_bookie_and_a_corrupt_copy() {
    let (a, c) = (bookie(Mode::Serve), bookie(Mode::Serve));
    let dead = dead_address();
    let m = meta(LedgerState::Closed, 29, &[&a.addr, &dead, &c.addr]);
    populate(&m, &[&a, &c], 30);
    // Corrupt bookie c's copy of entry 5: c comes first in its write set (5 % 3 = 2), then a.
    if let Some(x) = c
        .state
        .store
        .lock()
        .unwrap()
        .get_mut(&(7, 5))
        .unwrap()
        .last_mut()
    {
        *x ^= 0xff;
    }
    let rows = BookieClient::new(opts()).read_ledger(&m, 0, None).unwrap();
    assert_eq!(
        payloads(&rows),
        (0..30).map(|e| format!("entry-{e}")).collect::<Vec<_>>()
    );
}

#[test]
fn an_entry_no_replica_serves_is_one_error_row_naming_each_failure() {
    let a = bookie(Mode::Serve);
    let (d1, d2) = (dead_address(), dead_address());
    let m = meta(LedgerState::Closed, 8, &[&a.addr, &d1, &d2]);
    populate(&m, &[&a], 9);
    let rows = BookieClient::new(opts()).read_ledger(&m, 0, None).unwrap();
    assert_eq!(rows.len(), 9, "every entry gives a row");
    for r in &rows {
        // Entries whose write set {e%3, e%3+1} misses bookie a (index 0) are lost: e % 3 == 1.
        if r.entry_id % 3 == 1 {
            let e = r.data.as_ref().unwrap_err();
            assert!(e.contains("no replica served it"), "{e}");
            assert!(
                e.contains(&d1) && e.contains(&d2),
                "names both replicas: {e}"
            );
        } else {
            assert_eq!(
                r.data.as_deref().unwrap(),
                format!("entry-{}", r.entry_id).as_bytes()
            );
        }
    }
}

#[test]
fn a_silent_bookie_times_out_and_the_other_replica_serves() {
    let (a, s, c) = (
        bookie(Mode::Serve),
        bookie(Mode::Silent),
        bookie(Mode::Serve),
    );
    let m = meta(LedgerState::Closed, 11, &[&a.addr, &s.addr, &c.addr]);
    populate(&m, &[&a, &c], 12);
    let t = Instant::now();
    let rows = BookieClient::new(opts()).read_ledger(&m, 0, None).unwrap();
    assert_eq!(
        payloads(&rows),
        (0..12).map(|e| format!("entry-{e}")).collect::<Vec<_>>()
    );
    // One timeout for the silent bookie's group, not one per entry.
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
}

#[test]
fn open_ledgers_are_read_up_to_the_last_add_confirmed() {
    let (a, b, c) = (
        bookie(Mode::Serve),
        bookie(Mode::Serve),
        bookie(Mode::Serve),
    );
    let m = meta(LedgerState::Open, -1, &[&a.addr, &b.addr, &c.addr]);
    // Entry e carries LAC e-1, so the bookies' last entry (9) says LAC 8.
    populate(&m, &[&a, &b, &c], 10);
    let mut client = BookieClient::new(opts());
    assert_eq!(client.read_lac(&m).unwrap(), 8);
    let rows = client.read_ledger(&m, 0, None).unwrap();
    assert_eq!(rows.last().unwrap().entry_id, 8, "entry 9 is past the LAC");
    // An explicit LAC (the broker's WRITE_LAC) makes the last entry readable.
    let d = Digester::new(DigestType::Crc32c, b"");
    let mut body = [7i64.to_be_bytes(), 9i64.to_be_bytes()].concat();
    body.extend(d.compute(&body, &[]));
    for bk in [&a, &b, &c] {
        *bk.state.explicit_lac.lock().unwrap() = Some(body.clone());
    }
    assert_eq!(client.read_lac(&m).unwrap(), 9);
    assert_eq!(client.read_ledger(&m, 0, None).unwrap().len(), 10);
    // A bad explicit-LAC digest is not believed: with too few valid answers the LAC is unknown.
    let mut bad = body.clone();
    *bad.last_mut().unwrap() ^= 1;
    for bk in [&a, &b, &c] {
        *bk.state.explicit_lac.lock().unwrap() = Some(bad.clone());
    }
    let e = client.read_lac(&m).unwrap_err().to_string();
    assert!(
        e.contains("too few bookies answered") && e.contains("digest mismatch"),
        "{e}"
    );
}

#[test]
fn in_recovery_ledgers_are_not_touched() {
    let a = bookie(Mode::Serve);
    let m = meta(LedgerState::InRecovery, -1, &[&a.addr, &a.addr, &a.addr]);
    let e = BookieClient::new(opts())
        .read_ledger(&m, 0, None)
        .unwrap_err();
    assert!(e.to_string().contains("in recovery"), "{e}");
    assert!(
        a.state.seen.lock().unwrap().is_empty(),
        "no request was sent"
    );
}
