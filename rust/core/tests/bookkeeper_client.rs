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
    /// Answers one byte at a time, a byte every 300 ms.
    Trickle,
    /// Closes its first connection after answering two reads; serves the next ones.
    DropOnce,
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
    /// Connections accepted.
    connections: Arc<Mutex<usize>>,
    /// A ledger whose reads are never answered.
    ignored: Arc<Mutex<Option<i64>>>,
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

fn send(s: &mut TcpStream, mode: Mode, f: &[u8]) -> bool {
    if mode == Mode::Trickle {
        for b in f {
            if s.write_all(&[*b]).is_err() {
                return false;
            }
            thread::sleep(Duration::from_millis(300));
        }
        return true;
    }
    s.write_all(f).is_ok()
}

fn serve(mut s: TcpStream, mode: Mode, st: State) {
    let State {
        store,
        explicit_lac: explicit,
        seen,
        connections,
        ignored,
    } = st;
    let nth = {
        let mut c = connections.lock().unwrap();
        *c += 1;
        *c
    };
    let mut answered = 0;
    while let Some(frame) = read_frame(&mut s) {
        if mode == Mode::DropOnce && nth == 1 && answered == 2 {
            return;
        }
        answered += 1;
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
            if *ignored.lock().unwrap() == Some(ledger) {
                continue;
            }
            let data = store.lock().unwrap().get(&(ledger, entry)).cloned();
            let mut out = Vec::new();
            out.extend_from_slice(&0x0202_0000u32.to_be_bytes());
            out.extend_from_slice(&(if data.is_some() { 0i32 } else { 2 }).to_be_bytes());
            out.extend_from_slice(&ledger.to_be_bytes());
            out.extend_from_slice(&entry.to_be_bytes());
            out.extend_from_slice(&data.unwrap_or_default());
            let mut f = (out.len() as u32).to_be_bytes().to_vec();
            f.extend_from_slice(&out);
            if !send(&mut s, mode, &f) {
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
                start_tls_response: None,
            };
            let body = resp.encode_to_vec();
            let mut f = (body.len() as u32).to_be_bytes().to_vec();
            f.extend_from_slice(&body);
            if !send(&mut s, mode, &f) {
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
    // Serves for the test's life; the test process ends it.
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
    // A window asked past the LAC stops at it, for a fresh client too (it asks the LAC first).
    for mut c in [BookieClient::new(opts()), BookieClient::new(opts())] {
        let w = c.read_window(&m, 0, 1_000, usize::MAX).unwrap();
        assert_eq!(w.entries.last().unwrap().entry_id, 8);
        assert_eq!(w.next, None);
    }
    // (The bookies hold entry 9: a read past the LAC would have returned it.)
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

fn explicit(lac: i64) -> Vec<u8> {
    let d = Digester::new(DigestType::Crc32c, b"");
    let mut body = [7i64.to_be_bytes(), lac.to_be_bytes()].concat();
    body.extend(d.compute(&body, &[]));
    body
}

fn three(mode: Mode) -> (Bookie, Bookie, Bookie) {
    (bookie(mode), bookie(mode), bookie(mode))
}

#[test]
fn a_huge_claimed_lac_or_last_entry_allocates_nothing_and_ends_in_one_row() {
    // A CRC32C digest is not authentication: any bookie can claim any LAC.
    for claim in [1_000_000_000_000i64, i64::MAX] {
        let (a, b, c) = three(Mode::Serve);
        let m = meta(LedgerState::Open, -1, &[&a.addr, &b.addr, &c.addr]);
        populate(&m, &[&a, &b, &c], 10);
        for bk in [&a, &b, &c] {
            *bk.state.explicit_lac.lock().unwrap() = Some(explicit(claim));
        }
        let mut client = BookieClient::new(opts());
        assert_eq!(client.read_lac(&m).unwrap(), claim);
        let rows = client.read_ledger(&m, 0, None).unwrap();
        let good = rows.iter().filter(|r| r.data.is_ok()).count();
        assert_eq!(good, 10, "every entry held is read");
        // Then ABSENT_RUN entries no bookie has, each a row, then one row for the rest.
        let absent = pulsar_entries_core::bookkeeper::client::ABSENT_RUN as usize;
        assert_eq!(rows.len(), 10 + absent + 1, "claim {claim}");
        let last = rows.last().unwrap();
        assert_eq!(last.entry_id, 10 + absent as i64);
        let why = last.data.as_ref().unwrap_err();
        assert!(
            why.contains(&format!("..={claim}")) && why.contains("beyond what the bookies hold"),
            "{why}"
        );
    }
    // A CLOSED ledger whose metadata claims 10^12 entries: the same.
    let (a, b, c) = three(Mode::Serve);
    let m = meta(
        LedgerState::Closed,
        1_000_000_000_000,
        &[&a.addr, &b.addr, &c.addr],
    );
    populate(&m, &[&a, &b, &c], 4);
    let mut client = BookieClient::new(opts());
    let rows = client.read_ledger(&m, 0, None).unwrap();
    assert_eq!(rows.iter().filter(|r| r.data.is_ok()).count(), 4);
    assert!(rows.len() < 100, "{} rows", rows.len());
    // With the managed ledger's count as evidence, the bound is the count, and the conflict is said.
    let (last, note) = client.bounded_last(&m, Some(4)).unwrap();
    assert_eq!(last, 3);
    assert!(note.unwrap().contains("counts 4 entries"));
    assert_eq!(
        client.bounded_last(&m, None).unwrap(),
        (1_000_000_000_000, None)
    );
}

#[test]
fn windows_are_bounded_in_entries_and_bytes() {
    let (a, b, c) = three(Mode::Serve);
    let m = meta(LedgerState::Closed, 199, &[&a.addr, &b.addr, &c.addr]);
    populate(&m, &[&a, &b, &c], 200);
    let mut client = BookieClient::new(opts());
    let mut next = Some(0);
    let mut seen = Vec::new();
    let mut windows = 0;
    while let Some(from) = next {
        // Each payload is 7-9 bytes: a 40-byte budget stops a window after a few entries.
        let w = client.read_window(&m, from, 199, 40).unwrap();
        assert!(
            !w.entries.is_empty() && w.entries.len() <= 8,
            "{}",
            w.entries.len()
        );
        seen.extend(w.entries.iter().map(|r| r.entry_id));
        next = w.next;
        windows += 1;
    }
    assert_eq!(seen, (0..200).collect::<Vec<_>>());
    assert!(windows >= 25, "{windows}");
}

#[test]
fn a_trickling_bookie_is_held_to_one_deadline_per_request() {
    // 2 s of request timeout; the bookie sends a byte every 300 ms, so one frame
    // (60+ bytes) would take 18 s with a per-read timeout.
    let (a, b) = (bookie(Mode::Trickle), bookie(Mode::Serve));
    let mut m = meta(LedgerState::Closed, 3, &[&a.addr, &b.addr]);
    m.ensemble_size = 2;
    populate(&m, &[&a, &b], 4);
    let o = ClientOptions {
        request_timeout: Duration::from_secs(2),
        ..opts()
    };
    let t = Instant::now();
    let rows = BookieClient::new(o.clone())
        .read_ledger(&m, 0, None)
        .unwrap();
    let took = t.elapsed();
    assert_eq!(
        payloads(&rows),
        ["entry-0", "entry-1", "entry-2", "entry-3"]
    );
    assert!(took < Duration::from_secs(6), "took {took:?}");
    // With no healthy replica the error says it timed out, and after how long.
    let mut m1 = meta(LedgerState::Closed, 0, &[&a.addr]);
    (m1.ensemble_size, m1.write_quorum, m1.ack_quorum) = (1, 1, 1);
    let t = Instant::now();
    let rows = BookieClient::new(o.clone())
        .read_ledger(&m1, 0, None)
        .unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    let why = rows[0].data.as_ref().unwrap_err();
    assert!(why.contains("no answer within 2 s"), "{why}");
    assert!(!why.contains("os error"), "{why}");
    // READ_LAC too.
    let mut open = m1.clone();
    open.state = LedgerState::Open;
    let t = Instant::now();
    let e = BookieClient::new(o)
        .read_lac(&open)
        .unwrap_err()
        .to_string();
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert!(e.contains("READ_LAC: no answer within 2 s"), "{e}");
}

#[test]
fn a_dead_bookie_is_not_asked_again_for_every_ledger() {
    let (s, b) = (bookie(Mode::Silent), bookie(Mode::Serve));
    let mut client = BookieClient::new(ClientOptions {
        request_timeout: Duration::from_secs(1),
        ..opts()
    });
    let t = Instant::now();
    for ledger in 0..20 {
        let mut m = meta(LedgerState::Closed, 1, &[&s.addr, &b.addr]);
        (m.ledger_id, m.ensemble_size) = (ledger, 2);
        let d = Digester::new(m.digest, &m.password);
        for e in 0..2 {
            let bytes = stored(&d, ledger, e, e - 1, format!("entry-{e}").as_bytes());
            b.state.store.lock().unwrap().insert((ledger, e), bytes);
        }
        let rows = client.read_ledger(&m, 0, None).unwrap();
        assert_eq!(payloads(&rows), ["entry-0", "entry-1"], "ledger {ledger}");
    }
    // One timeout for the silent bookie, not twenty.
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
}

#[test]
fn a_dropped_connection_is_reopened_and_the_ledger_read_whole() {
    let a = bookie(Mode::DropOnce);
    let mut m = meta(LedgerState::Closed, 9, &[&a.addr]);
    (m.ensemble_size, m.write_quorum, m.ack_quorum) = (1, 1, 1);
    populate(&m, &[&a], 10);
    let rows = BookieClient::new(opts()).read_ledger(&m, 0, None).unwrap();
    assert_eq!(
        payloads(&rows),
        (0..10).map(|e| format!("entry-{e}")).collect::<Vec<_>>()
    );
    assert_eq!(*a.state.connections.lock().unwrap(), 2);
}

#[test]
fn an_interrupt_stops_a_read_within_a_second() {
    let s = bookie(Mode::Silent);
    let mut m = meta(LedgerState::Closed, 3, &[&s.addr]);
    (m.ensemble_size, m.write_quorum, m.ack_quorum) = (1, 1, 1);
    let mut client = BookieClient::new(ClientOptions {
        request_timeout: Duration::from_secs(30),
        ..opts()
    });
    let start = Instant::now();
    client.set_interrupt(Some(Box::new(move || {
        start.elapsed() > Duration::from_millis(500)
    })));
    let e = client.read_ledger(&m, 0, None).unwrap_err();
    assert!(
        start.elapsed() < Duration::from_millis(1500),
        "took {:?}",
        start.elapsed()
    );
    assert!(
        matches!(
            e,
            pulsar_entries_core::bookkeeper::BookKeeperError::Interrupted(_)
        ),
        "{e}"
    );
}

#[test]
fn an_operation_deadline_bounds_the_whole_read() {
    let s = bookie(Mode::Silent);
    let mut client = BookieClient::new(ClientOptions {
        request_timeout: Duration::from_secs(30),
        ..opts()
    });
    client.set_deadline(Some(Instant::now() + Duration::from_secs(1)));
    let t = Instant::now();
    for ledger in 0..5 {
        let mut m = meta(LedgerState::Closed, 3, &[&s.addr]);
        (m.ledger_id, m.ensemble_size, m.write_quorum, m.ack_quorum) = (ledger, 1, 1, 1);
        let rows = client.read_ledger(&m, 0, None).unwrap();
        assert!(rows.iter().all(|r| r.data.is_err()));
    }
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "took {:?}",
        t.elapsed()
    );
}

#[test]
fn hand_built_metadata_with_no_ensemble_is_an_error_not_a_panic() {
    let mut m = meta(LedgerState::Open, -1, &["a:1", "b:2", "c:3"]);
    m.segments.clear();
    let mut client = BookieClient::new(opts());
    assert!(client
        .read_lac(&m)
        .unwrap_err()
        .to_string()
        .contains("no ensemble"));
    m.state = LedgerState::Closed;
    assert!(client.read_ledger(&m, 0, None).is_err());
    let mut m = meta(LedgerState::Closed, 3, &["a:1"]);
    m.ensemble_size = 3;
    assert!(client
        .read_ledger(&m, 0, None)
        .unwrap_err()
        .to_string()
        .contains("ensemble size"));
    assert_eq!(
        meta(LedgerState::Closed, 3, &["a", "b", "c"])
            .write_set(i64::MAX)
            .len(),
        2
    );
}

#[test]
fn error_texts_stay_short_for_huge_ensembles() {
    let base = dead_address();
    let many: Vec<String> = (0..16_000).map(|i| format!("{base}#{i}")).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let mut m = meta(LedgerState::Closed, 0, &refs);
    (m.ensemble_size, m.write_quorum, m.ack_quorum) = (16_000, 16_000, 1);
    let mut client = BookieClient::with_resolver(
        opts(),
        Box::new(|id: &str| Err(format!("unknown bookie {id}"))),
    );
    let rows = client.read_ledger(&m, 0, None).unwrap();
    let why = rows[0].data.as_ref().unwrap_err();
    assert!(why.len() < 4096, "{} bytes", why.len());
    assert!(why.contains("and 15992 more"), "{why}");
}

#[test]
fn a_dead_ensemble_under_a_huge_claim_is_bounded_and_the_next_ensemble_is_read() {
    let a = bookie(Mode::Serve);
    let dead = dead_address();
    // Entries 0..=2^40 on a dead bookie, then an ensemble that holds 10 entries.
    let split = 1i64 << 40;
    let mut m = meta(LedgerState::Closed, split + 9, &[&dead]);
    (m.ensemble_size, m.write_quorum, m.ack_quorum) = (1, 1, 1);
    m.segments.push(Segment {
        first_entry_id: split,
        bookies: vec![a.addr.clone()],
    });
    let d = Digester::new(m.digest, &m.password);
    for e in split..split + 10 {
        let bytes = stored(&d, 7, e, e - 1, format!("entry-{}", e - split).as_bytes());
        a.state.store.lock().unwrap().insert((7, e), bytes);
    }
    let t = Instant::now();
    let rows = BookieClient::new(opts()).read_ledger(&m, 0, None).unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
    let failed_run = pulsar_entries_core::bookkeeper::client::FAILED_RUN as usize;
    // A row per entry up to FAILED_RUN, then one row for the rest of the dead ensemble.
    let summary = rows[failed_run].data.as_ref().unwrap_err();
    assert!(
        summary.contains(&format!("entries {failed_run}..={}: not read", split - 1)),
        "{summary}"
    );
    let good: Vec<i64> = rows
        .iter()
        .filter(|r| r.data.is_ok())
        .map(|r| r.entry_id)
        .collect();
    assert_eq!(good, (split..split + 10).collect::<Vec<_>>());
    assert_eq!(rows.len(), failed_run + 1 + 10);
}

#[test]
fn a_bookie_silent_on_one_ledger_still_serves_the_next() {
    let (a, b, c) = three(Mode::Serve);
    let mut client = BookieClient::new(opts());
    let m7 = meta(LedgerState::Closed, 5, &[&a.addr, &b.addr, &c.addr]);
    populate(&m7, &[&a, &b, &c], 6);
    let mut m8 = m7.clone();
    m8.ledger_id = 8;
    let d = Digester::new(m8.digest, &m8.password);
    for e in 0..6 {
        for bk in [&a, &b, &c] {
            let bytes = stored(&d, 8, e, e - 1, format!("entry-{e}").as_bytes());
            bk.state.store.lock().unwrap().insert((8, e), bytes);
        }
    }
    for bk in [&a, &b, &c] {
        *bk.state.ignored.lock().unwrap() = Some(7);
    }
    let t = Instant::now();
    let rows = client.read_ledger(&m7, 0, None).unwrap();
    assert_eq!(rows.len(), 6, "a row per entry");
    assert!(rows.iter().all(|r| r.data.is_err()));
    // Each bookie waits out one timeout (400 ms), then one probe at most.
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "took {:?}",
        t.elapsed()
    );
    // The bookies were marked down on ledger 7, but answer ledger 8: a probe finds them up.
    let rows = client.read_ledger(&m8, 0, None).unwrap();
    assert_eq!(
        payloads(&rows),
        (0..6).map(|e| format!("entry-{e}")).collect::<Vec<_>>()
    );
}

#[test]
fn a_stalled_cluster_costs_a_timeout_and_a_probe_per_bookie_not_per_ledger() {
    // Every bookie accepts and never answers (a stalling proxy in front of the cluster).
    let (a, b, c) = three(Mode::Silent);
    let mut client = BookieClient::new(opts());
    let t = Instant::now();
    for ledger in 0..12 {
        let mut m = meta(LedgerState::Closed, 2, &[&a.addr, &b.addr, &c.addr]);
        m.ledger_id = ledger;
        let rows = client.read_ledger(&m, 0, None).unwrap();
        assert_eq!(rows.len(), 3, "a row per entry");
        assert!(rows.iter().all(|r| r.data.is_err()));
    }
    // 400 ms timeouts: one per bookie on the first ledger, one failed probe each on the next,
    // then nothing until PROBE_EVERY; 12 ledgers x 3 bookies x 400 ms would be 14 s.
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
}
