//! A read-only BookKeeper client (spec bookkeeper.md §3.5, §3.6).
//!
//! It reads the entries of one ledger from the bookies its metadata names,
//! over the v2 protocol with pipelined READENTRY requests, and finds the
//! last-add-confirmed of an OPEN ledger with v3 READ_LAC. For each entry it
//! tries the write set in order and moves on after an error, a timeout or a
//! digest mismatch; an entry no replica can serve becomes one error naming
//! every replica's failure.
//!
//! It never disturbs the cluster: no request fences (see [`super::protocol`]),
//! no master key is ever sent, nothing past the last-add-confirmed of an OPEN
//! ledger is read, and an IN_RECOVERY ledger is not touched.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{self, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::digest::Digester;
use super::ledger::{LedgerMetadata, LedgerState};
use super::protocol::{self, Rc, V2Response};
use super::BookKeeperError;

/// How the client talks to bookies.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Time to connect to one bookie.
    pub connect_timeout: Duration,
    /// Time one request may wait for its response.
    pub request_timeout: Duration,
    /// Requests in flight on one connection.
    pub pipeline_depth: usize,
    /// The largest response frame accepted, checked before allocating. A
    /// bookie's own default (`nettyMaxFrameSizeBytes`) is 5 MiB.
    pub max_frame_bytes: usize,
}

impl ClientOptions {
    /// Options from milliseconds and counts, checked: both timeouts and the
    /// pipeline depth positive, frames of at least 64 bytes.
    pub fn checked(
        request_timeout_ms: u64,
        connect_timeout_ms: u64,
        pipeline_depth: usize,
        max_frame_bytes: usize,
    ) -> Result<Self, BookKeeperError> {
        if request_timeout_ms == 0
            || connect_timeout_ms == 0
            || pipeline_depth == 0
            || max_frame_bytes < 64
        {
            return Err(BookKeeperError::Options(
                "timeout_ms, connect_timeout_ms and pipeline_depth must be positive, max_frame_bytes at least 64".into(),
            ));
        }
        Ok(Self {
            connect_timeout: Duration::from_millis(connect_timeout_ms),
            request_timeout: Duration::from_millis(request_timeout_ms),
            pipeline_depth,
            max_frame_bytes,
        })
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            pipeline_depth: 64,
            max_frame_bytes: 5 * 1024 * 1024 + 64 * 1024,
        }
    }
}

/// One entry read from a ledger: its payload (the Pulsar entry, digest
/// checked and BookKeeper header removed), or why no replica served it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadEntry {
    pub ledger_id: i64,
    pub entry_id: i64,
    pub data: Result<Vec<u8>, String>,
}

/// Turns a bookie id from the ledger metadata into a socket address
/// (`host:port`). The default takes the id itself, which is what legacy and
/// standalone bookies register as.
pub type Resolver = dyn Fn(&str) -> Result<String, String> + Send + Sync;

/// Connections to bookies, reused across ledgers.
pub struct BookieClient {
    opts: ClientOptions,
    resolver: Box<Resolver>,
    v2: HashMap<String, TcpStream>,
    next_txn: u64,
}

impl std::fmt::Debug for BookieClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BookieClient")
            .field("opts", &self.opts)
            .field("connections", &self.v2.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl BookieClient {
    /// A client resolving bookie ids as `host:port`.
    pub fn new(opts: ClientOptions) -> Self {
        Self::with_resolver(opts, Box::new(|id: &str| Ok(id.to_string())))
    }

    /// A client with its own bookie-id resolver (e.g. from the bookies'
    /// registration nodes).
    pub fn with_resolver(opts: ClientOptions, resolver: Box<Resolver>) -> Self {
        Self {
            opts,
            resolver,
            v2: HashMap::new(),
            next_txn: 1,
        }
    }

    /// A client resolving the bookie ids in `addresses` to their `host:port`,
    /// and any other id as `host:port` itself.
    pub fn with_addresses(
        opts: ClientOptions,
        addresses: std::collections::HashMap<String, String>,
    ) -> Self {
        let resolve = move |id: &str| Ok(addresses.get(id).map_or(id, String::as_str).to_string());
        Self::with_resolver(opts, Box::new(resolve))
    }

    /// The readable upper bound of a ledger: `last_entry_id` of a CLOSED
    /// ledger, the last-add-confirmed of an OPEN one (-1: nothing readable).
    pub fn last_readable(&mut self, meta: &LedgerMetadata) -> Result<i64, BookKeeperError> {
        match meta.state {
            LedgerState::Closed => Ok(meta.last_entry_id),
            LedgerState::InRecovery => Err(BookKeeperError::Io(format!(
                "ledger {} is in recovery (another client fenced it); not read until it is closed",
                meta.ledger_id
            ))),
            LedgerState::Open => self.read_lac(meta),
        }
    }

    /// Reads entries `first..=last` of a ledger, bounded by
    /// [`Self::last_readable`]. Every requested entry up to that bound gives
    /// one [`ReadEntry`], in entry order.
    pub fn read_ledger(
        &mut self,
        meta: &LedgerMetadata,
        first: i64,
        last: Option<i64>,
    ) -> Result<Vec<ReadEntry>, BookKeeperError> {
        let bound = self.last_readable(meta)?;
        let last = last.map_or(bound, |l| l.min(bound));
        if first < 0 {
            return Err(BookKeeperError::Options(format!(
                "first entry {first} is negative"
            )));
        }
        if last < first {
            return Ok(Vec::new());
        }
        let digester = Digester::new(meta.digest, &meta.password);
        let mut done: BTreeMap<i64, Vec<u8>> = BTreeMap::new();
        let mut failures: HashMap<i64, Vec<String>> = HashMap::new();
        let mut todo: Vec<i64> = (first..=last).collect();
        for attempt in 0..meta.write_quorum {
            if todo.is_empty() {
                break;
            }
            // Group this attempt's entries by the bookie to ask.
            let mut by_bookie: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
            for &e in &todo {
                by_bookie
                    .entry(meta.write_set(e)[attempt])
                    .or_default()
                    .push(e);
            }
            let mut retry = Vec::new();
            for (bookie, entries) in by_bookie {
                for (e, result) in self.read_from(bookie, meta.ledger_id, &entries, &digester) {
                    match result {
                        Ok(payload) => {
                            done.insert(e, payload);
                        }
                        Err(why) => {
                            failures
                                .entry(e)
                                .or_default()
                                .push(format!("{bookie}: {why}"));
                            retry.push(e);
                        }
                    }
                }
            }
            retry.sort_unstable();
            todo = retry;
        }
        Ok((first..=last)
            .map(|e| ReadEntry {
                ledger_id: meta.ledger_id,
                entry_id: e,
                data: done.remove(&e).ok_or_else(|| {
                    let f = failures.remove(&e).unwrap_or_default();
                    format!(
                        "ledger {} entry {e}: no replica served it ({})",
                        meta.ledger_id,
                        f.join("; ")
                    )
                }),
            })
            .collect())
    }

    /// The last-add-confirmed of an OPEN ledger, from v3 READ_LAC to every
    /// bookie of its last ensemble: the largest of the explicit LAC and the
    /// LAC carried by each bookie's last entry, once enough bookies answered
    /// (BookKeeper's coverage rule). -1 when the ledger is empty.
    pub fn read_lac(&mut self, meta: &LedgerMetadata) -> Result<i64, BookKeeperError> {
        let seg = meta.segments.last().expect("metadata has an ensemble");
        let digester = Digester::new(meta.digest, &meta.password);
        let mut lac = -1i64;
        let mut answered = vec![false; seg.bookies.len()];
        let mut errors = Vec::new();
        for (i, bookie) in seg.bookies.iter().enumerate() {
            match self.read_lac_from(bookie, meta.ledger_id, &digester) {
                Ok(v) => {
                    answered[i] = true;
                    lac = lac.max(v);
                }
                Err(e) => errors.push(format!("{bookie}: {e}")),
            }
        }
        // Covered when, in every write-quorum window, fewer than the ack
        // quorum failed to answer.
        let e = seg.bookies.len();
        let covered = (0..e).all(|start| {
            (0..meta.write_quorum)
                .filter(|k| !answered[(start + k) % e])
                .count()
                < meta.ack_quorum
        });
        if !covered {
            return Err(BookKeeperError::Io(format!(
                "last-add-confirmed of open ledger {} unknown: too few bookies answered ({})",
                meta.ledger_id,
                errors.join("; ")
            )));
        }
        Ok(lac)
    }

    fn read_lac_from(
        &mut self,
        bookie: &str,
        ledger_id: i64,
        digester: &Digester,
    ) -> Result<i64, String> {
        // READ_LAC is v3: it gets a connection of its own, closed afterwards,
        // since the v2 reads switch their connection to v2 for good.
        let mut conn = self.connect(bookie)?;
        let txn = self.next_txn;
        self.next_txn += 1;
        conn.write_all(&protocol::read_lac_request(ledger_id, txn))
            .map_err(|e| format!("sending READ_LAC: {e}"))?;
        conn.set_read_timeout(Some(self.opts.request_timeout))
            .map_err(|e| e.to_string())?;
        let frame =
            protocol::read_frame(&mut conn, self.opts.max_frame_bytes).map_err(|e| io_why(&e))?;
        let r = protocol::decode_lac(&frame).map_err(|e| e.to_string())?;
        if r.txn_id != txn {
            return Err(format!(
                "READ_LAC answer for request {} instead of {txn}",
                r.txn_id
            ));
        }
        match r.rc {
            Rc::Ok => {}
            Rc::NoLedger | Rc::NoEntry => return Ok(-1),
            rc => return Err(rc.describe()),
        }
        let mut lac = -1i64;
        if let Some(body) = &r.lac_body {
            lac = lac.max(verify_lac(body, ledger_id, digester)?);
        }
        if let Some(entry) = &r.last_entry {
            let h = digester
                .verify(entry, ledger_id, None)
                .map_err(|e| e.to_string())?;
            lac = lac.max(h.last_add_confirmed);
        }
        Ok(lac)
    }

    fn connect(&self, bookie: &str) -> Result<TcpStream, String> {
        let addr = (self.resolver)(bookie)?;
        let addrs: Vec<_> = addr
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {addr}: {e}"))?
            .collect();
        let mut last = format!("{addr} resolves to no address");
        for a in addrs {
            match TcpStream::connect_timeout(&a, self.opts.connect_timeout) {
                Ok(s) => {
                    s.set_nodelay(true).ok();
                    s.set_write_timeout(Some(self.opts.request_timeout)).ok();
                    return Ok(s);
                }
                Err(e) => last = format!("cannot connect to {a}: {}", io_why(&e)),
            }
        }
        Err(last)
    }

    /// Reads `entries` of one ledger from one bookie, pipelined. Every entry
    /// gets a result; a broken connection fails the entries still pending.
    fn read_from(
        &mut self,
        bookie: &str,
        ledger_id: i64,
        entries: &[i64],
        digester: &Digester,
    ) -> Vec<(i64, Result<Vec<u8>, String>)> {
        let mut out = Vec::with_capacity(entries.len());
        let mut conn = match self.v2.remove(bookie) {
            Some(c) => c,
            None => match self.connect(bookie) {
                Ok(c) => c,
                Err(why) => return entries.iter().map(|&e| (e, Err(why.clone()))).collect(),
            },
        };
        let mut queue: VecDeque<i64> = entries.iter().copied().collect();
        let mut in_flight: VecDeque<(i64, Instant)> = VecDeque::new();
        let depth = self.opts.pipeline_depth.max(1);
        let broken = loop {
            // Fill the window.
            let mut batch = Vec::new();
            while in_flight.len() < depth {
                let Some(e) = queue.pop_front() else { break };
                batch.extend_from_slice(&protocol::read_entry_request(ledger_id, e));
                in_flight.push_back((e, Instant::now() + self.opts.request_timeout));
            }
            if !batch.is_empty() {
                if let Err(e) = conn.write_all(&batch) {
                    break Some(format!("sending reads: {}", io_why(&e)));
                }
            }
            let Some(&(_, deadline)) = in_flight.front() else {
                break None;
            };
            let wait = deadline.saturating_duration_since(Instant::now());
            if wait.is_zero() {
                break Some(format!("no answer within {:?}", self.opts.request_timeout));
            }
            if let Err(e) = conn.set_read_timeout(Some(wait)) {
                break Some(e.to_string());
            }
            let frame = match protocol::read_frame(&mut conn, self.opts.max_frame_bytes) {
                Ok(f) => f,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    break Some(format!("no answer within {:?}", self.opts.request_timeout))
                }
                Err(e) => break Some(io_why(&e)),
            };
            let (rc, l, e, range) = match protocol::decode_v2(&frame) {
                Ok(V2Response::Read {
                    rc,
                    ledger_id,
                    entry_id,
                    entry,
                }) => (rc, ledger_id, entry_id, entry),
                Ok(other) => break Some(format!("unexpected response {other:?}")),
                Err(err) => break Some(err.to_string()),
            };
            // v2 has no request ids: match on (ledger, entry).
            let Some(pos) = in_flight.iter().position(|&(x, _)| x == e) else {
                break Some(format!(
                    "answer for ledger {l} entry {e}, which was not asked for"
                ));
            };
            if l != ledger_id {
                break Some(format!(
                    "answer for ledger {l} where ledger {ledger_id} was asked"
                ));
            }
            in_flight.remove(pos);
            let result = match rc {
                Rc::Ok => {
                    let stored = &frame[range];
                    digester
                        .verify(stored, ledger_id, Some(e))
                        .map(|h| stored[h.payload_offset..].to_vec())
                        .map_err(|err| err.to_string())
                }
                rc => Err(rc.describe()),
            };
            out.push((e, result));
        };
        match broken {
            None => {
                self.v2.insert(bookie.to_string(), conn);
            }
            Some(why) => {
                // The connection is in an unknown state: drop it, fail what is pending.
                for (e, _) in in_flight {
                    out.push((e, Err(why.clone())));
                }
                for e in queue {
                    out.push((e, Err(format!("not sent: {why}"))));
                }
            }
        }
        out
    }
}

/// Checks an explicit-LAC body `[i64 ledger][i64 lac][digest of those 16 bytes]`.
fn verify_lac(body: &[u8], ledger_id: i64, digester: &Digester) -> Result<i64, String> {
    let dlen = digester.kind().len();
    if body.len() != 16 + dlen {
        return Err(format!(
            "explicit LAC of {} bytes, expected {}",
            body.len(),
            16 + dlen
        ));
    }
    let l = i64::from_be_bytes(body[0..8].try_into().expect("8 bytes"));
    let lac = i64::from_be_bytes(body[8..16].try_into().expect("8 bytes"));
    if l != ledger_id {
        return Err(format!(
            "explicit LAC names ledger {l} where ledger {ledger_id} was asked"
        ));
    }
    if digester.compute(&body[..16], &[]) != body[16..] {
        return Err(format!(
            "explicit LAC {} digest mismatch",
            digester.kind().name()
        ));
    }
    Ok(lac)
}

fn io_why(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => "the bookie closed the connection".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_resolve_known_ids_and_keep_the_rest() {
        let map = [("b1".to_string(), "10.0.0.1:3181".to_string())].into();
        let client = BookieClient::with_addresses(ClientOptions::default(), map);
        assert_eq!((client.resolver)("b1").unwrap(), "10.0.0.1:3181");
        assert_eq!((client.resolver)("h:3181").unwrap(), "h:3181");
    }

    #[test]
    fn checked_options_refuse_zeros_and_tiny_frames() {
        let o = ClientOptions::checked(1_500, 1_000, 8, 64).unwrap();
        assert_eq!(o.request_timeout, Duration::from_millis(1_500));
        assert_eq!(o.connect_timeout, Duration::from_millis(1_000));
        assert_eq!((o.pipeline_depth, o.max_frame_bytes), (8, 64));
        for bad in [(0, 1, 1, 64), (1, 0, 1, 64), (1, 1, 0, 64), (1, 1, 1, 63)] {
            let e = ClientOptions::checked(bad.0, bad.1, bad.2, bad.3).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::Options, "{bad:?}");
        }
    }
}
