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
//!
//! It trusts no claim it has no evidence for. A ledger is read in windows
//! ([`BookieClient::read_window`]) whose size is bounded in entries and bytes,
//! so a `lastEntryId` or a last-add-confirmed of 10^12 allocates nothing:
//! reading stops once [`ABSENT_RUN`] entries in a row are on no bookie
//! (every replica answered "no such entry"), and the rest of the claimed
//! range is one error row; after [`FAILED_RUN`] entries in a row that no
//! replica served, one row stands for the rest of their ensemble. Each
//! request has one deadline (the request timeout, re-armed against what is
//! left of it on every socket read, so a bookie trickling bytes cannot
//! stretch it), and the caller may give one for the whole operation. A
//! connection cut mid-read is reopened, with backoff, within the deadline. A
//! bookie that cannot be reached or does not answer in time is *down* for
//! [`DOWN_FOR`]: skipped while another replica is left, and otherwise probed
//! with [`PROBE`] to answer, once per ledger and at most every
//! [`PROBE_EVERY`] after a failed probe. An interrupt check, when set, is
//! polled at least every [`POLL`] while waiting.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{self, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::digest::Digester;
use super::ledger::{LedgerMetadata, LedgerState};
use super::protocol::{self, Rc, V2Response};
use super::tls::BookieTls;
pub use super::transport::{human, Connector, Transport, POLL};
use super::transport::{io_why, is_drop, Stop, Timed};
use super::BookKeeperError;

/// How the client talks to bookies.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// The pause before reconnecting after a dropped connection, doubled at
    /// each of the (at most three) attempts.
    pub reconnect_backoff: Duration,
    /// TLS to every bookie (START_TLS, then a handshake), or plaintext.
    pub tls: Option<BookieTls>,
}

impl ClientOptions {
    /// The defaults: 30 s per request, 5 s to connect, 64 requests in flight,
    /// frames up to 5 MiB + 64 KiB, 100 ms before reconnecting.
    pub const DEFAULT: Self = Self {
        connect_timeout: Duration::from_millis(5_000),
        request_timeout: Duration::from_millis(30_000),
        pipeline_depth: 64,
        max_frame_bytes: 5 * 1024 * 1024 + 64 * 1024,
        reconnect_backoff: Duration::from_millis(100),
        tls: None,
    };

    /// Options from milliseconds and counts, checked ([`Self::validate`]);
    /// the reconnect backoff is the default.
    pub fn try_new(
        request_timeout_ms: u64,
        connect_timeout_ms: u64,
        pipeline_depth: usize,
        max_frame_bytes: usize,
    ) -> Result<Self, BookKeeperError> {
        Self::DEFAULT
            .with_request_timeout(Duration::from_millis(request_timeout_ms))
            .with_connect_timeout(Duration::from_millis(connect_timeout_ms))
            .with_pipeline_depth(pipeline_depth)
            .with_max_frame_bytes(max_frame_bytes)
            .checked()
    }

    /// Both timeouts and the pipeline depth positive, frames of at least 64 bytes.
    pub fn validate(&self) -> Result<(), BookKeeperError> {
        if self.request_timeout.is_zero()
            || self.connect_timeout.is_zero()
            || self.pipeline_depth == 0
            || self.max_frame_bytes < 64
        {
            return Err(BookKeeperError::Options(
                "timeout_ms, connect_timeout_ms and pipeline_depth must be positive, max_frame_bytes at least 64".into(),
            ));
        }
        Ok(())
    }

    /// `self`, once [`Self::validate`] accepts it.
    pub fn checked(self) -> Result<Self, BookKeeperError> {
        self.validate().map(|()| self)
    }

    #[must_use]
    pub fn with_request_timeout(mut self, v: Duration) -> Self {
        self.request_timeout = v;
        self
    }

    #[must_use]
    pub fn with_connect_timeout(mut self, v: Duration) -> Self {
        self.connect_timeout = v;
        self
    }

    #[must_use]
    pub fn with_pipeline_depth(mut self, v: usize) -> Self {
        self.pipeline_depth = v;
        self
    }

    #[must_use]
    pub fn with_max_frame_bytes(mut self, v: usize) -> Self {
        self.max_frame_bytes = v;
        self
    }

    #[must_use]
    pub fn with_tls(mut self, tls: Option<BookieTls>) -> Self {
        self.tls = tls;
        self
    }

    #[must_use]
    pub fn with_reconnect_backoff(mut self, v: Duration) -> Self {
        self.reconnect_backoff = v;
        self
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Consecutive entries that no bookie holds after which the rest of a claimed
/// range is taken as absent (one error row) instead of being asked for.
pub const ABSENT_RUN: i64 = 64;
/// The time a bookie found down has to answer when it is asked again (for a
/// ledger it has not failed on, with no other replica left to ask).
pub const PROBE: Duration = Duration::from_secs(1);
/// How long a bookie whose probe failed is not probed again.
pub const PROBE_EVERY: Duration = Duration::from_secs(10);
/// Consecutive entries that no replica served, for any reason, after which
/// the rest of a claimed range is one error row instead of a row each.
pub const FAILED_RUN: i64 = 1024;
/// Entries one window asks for at most.
pub const MAX_WINDOW: i64 = 4096;
/// How long a bookie that could not be reached, or did not answer in time,
/// is skipped before it is tried again.
pub const DOWN_FOR: Duration = Duration::from_secs(30);
/// The request id of START_TLS, apart from those of READ_LAC.
const START_TLS_TXN: u64 = 1 << 62;
/// Reconnections to one bookie for one batch of requests after a dropped
/// connection.
const RECONNECTS: u32 = 3;

/// One entry read from a ledger: its payload (the Pulsar entry, digest
/// checked and BookKeeper header removed), or why no replica served it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadEntry {
    pub ledger_id: i64,
    pub entry_id: i64,
    pub data: Result<Vec<u8>, String>,
}

/// One window of a ledger read by [`BookieClient::read_window`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// A row per entry read or failed, in entry order; the last row may stand
    /// for the rest of the range (see [`ABSENT_RUN`]).
    pub entries: Vec<ReadEntry>,
    /// The entry to continue from, or `None` when the range is done.
    pub next: Option<i64>,
}

/// Turns a bookie id from the ledger metadata into a socket address
/// (`host:port`). The default takes the id itself, which is what legacy and
/// standalone bookies register as.
pub type Resolver = dyn Fn(&str) -> Result<String, String> + Send + Sync;

/// Asked while the client waits: `true` stops the read with
/// [`BookKeeperError::Interrupted`].
pub type Interrupt = dyn Fn() -> bool + Send + Sync;

/// Connections to bookies, reused across ledgers.
pub struct BookieClient {
    opts: ClientOptions,
    resolver: Box<Resolver>,
    v2: HashMap<String, Box<dyn Transport>>,
    next_txn: u64,
    connector: Option<Box<Connector>>,
    /// Bookies not to ask before the instant, and why.
    down: HashMap<String, Down>,
    /// The time a request may take now (shorter while probing a down bookie).
    request_timeout: Duration,
    /// Whether a bookie found down is being asked again.
    probing: bool,
    /// The last-add-confirmed last found for each OPEN ledger: no window
    /// reads past it.
    lac_seen: HashMap<i64, i64>,
    interrupt: Option<Box<Interrupt>>,
    deadline: Option<Instant>,
    last_poll: Instant,
}

impl std::fmt::Debug for BookieClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BookieClient")
            .field("opts", &self.opts)
            .field("connections", &self.v2.keys().collect::<Vec<_>>())
            .field("down", &self.down.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// What one replica said about one entry.
enum Answer {
    Data(Vec<u8>),
    /// The bookie does not have it (ENOENTRY / ENOLEDGER).
    Absent(String),
    Failed(String),
}

/// What one pipelined exchange with one bookie ended with.
enum Broken {
    /// The connection dropped: worth reconnecting.
    Dropped(String),
    /// No answer in time, or an answer that is not the protocol: the bookie
    /// is not asked again for a while.
    Bad(String),
    Interrupted,
}

/// A bookie that could not be reached or did not answer in time.
struct Down {
    /// Not asked before this, unless to probe it (see [`BookieClient::standing`]).
    until: Instant,
    why: String,
    /// The ledgers it failed on (the last 64): not probed again for those.
    failed: Vec<i64>,
    /// Not probed before this: a failed probe waits [`PROBE_EVERY`].
    probe_after: Instant,
}

enum Standing {
    Up,
    /// Down, but ask it (with [`PROBE`]) when no other replica is left.
    Probe(String),
    Skip(String),
}

impl BookieClient {
    /// A client resolving bookie ids as `host:port`.
    pub fn new(opts: ClientOptions) -> Self {
        Self::with_resolver(opts, Box::new(|id: &str| Ok(id.to_string())))
    }

    /// A client with its own bookie-id resolver (e.g. from the bookies'
    /// registration nodes).
    pub fn with_resolver(opts: ClientOptions, resolver: Box<Resolver>) -> Self {
        let request_timeout = opts.request_timeout;
        Self {
            opts,
            resolver,
            v2: HashMap::new(),
            next_txn: 1,
            connector: None,
            down: HashMap::new(),
            request_timeout,
            probing: false,
            lac_seen: HashMap::new(),
            interrupt: None,
            deadline: None,
            last_poll: Instant::now(),
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

    /// A client whose connections come from `connect` (bookie id, time
    /// allowed) instead of TCP.
    pub fn with_connector(opts: ClientOptions, connect: Box<Connector>) -> Self {
        let mut c = Self::new(opts);
        c.connector = Some(connect);
        c
    }

    /// Sets the check polled while waiting (at least every [`POLL`]); when it
    /// answers `true` the read stops with [`BookKeeperError::Interrupted`].
    pub fn set_interrupt(&mut self, check: Option<Box<Interrupt>>) {
        self.interrupt = check;
    }

    /// Sets a deadline for everything the client does until it is changed:
    /// no request waits past it, and the entries not read by then are error
    /// rows saying so.
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    /// Drops every connection and forgets what was learnt (bookies found
    /// down, last-add-confirmed values): as new, with the same options.
    pub fn reset(&mut self) {
        self.v2.clear();
        self.down.clear();
        self.lac_seen.clear();
        self.request_timeout = self.opts.request_timeout;
        self.probing = false;
    }

    fn interrupted(&mut self) -> bool {
        match &self.interrupt {
            Some(check) if self.last_poll.elapsed() >= POLL / 2 => {
                self.last_poll = Instant::now();
                check()
            }
            _ => false,
        }
    }

    /// The deadline of a request sent now.
    fn request_deadline(&self) -> Instant {
        let d = Instant::now() + self.request_timeout;
        self.deadline.map_or(d, |op| op.min(d))
    }

    fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Why a wait that hit `deadline` ended: the request's own timeout or the
    /// operation's deadline.
    fn timeout_why(&self, what: &str) -> String {
        if self.past_deadline() {
            format!("{what}: the operation's deadline passed")
        } else {
            let which = if self.probing {
                "probing a bookie found down"
            } else {
                "the request timeout"
            };
            format!(
                "{what}: no answer within {} ({which})",
                human(self.request_timeout)
            )
        }
    }

    fn mark_down(&mut self, bookie: &str, ledger_id: Option<i64>, why: &str) {
        let probing = self.probing;
        let d = self.down.entry(bookie.to_string()).or_insert_with(|| Down {
            until: Instant::now(),
            why: String::new(),
            failed: Vec::new(),
            probe_after: Instant::now(),
        });
        d.until = Instant::now() + DOWN_FOR;
        if probing {
            d.probe_after = Instant::now() + PROBE_EVERY;
        }
        d.why = why.to_string();
        if let Some(l) = ledger_id {
            if !d.failed.contains(&l) {
                if d.failed.len() >= 64 {
                    d.failed.remove(0);
                }
                d.failed.push(l);
            }
        }
    }

    /// Runs `f` as a probe of a bookie found down: with at most [`PROBE`] to
    /// answer, and a failure delays the next probe by [`PROBE_EVERY`].
    fn probe<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let full = self.request_timeout;
        self.request_timeout = full.min(PROBE);
        self.probing = true;
        let out = f(self);
        self.probing = false;
        self.request_timeout = full;
        out
    }

    /// How to treat `bookie` for `ledger_id` now: ask it, probe it (down, but
    /// not yet tried on this ledger), or skip it (and why).
    fn standing(&mut self, bookie: &str, ledger_id: i64) -> Standing {
        match self.down.get(bookie) {
            None => Standing::Up,
            Some(d) if Instant::now() >= d.until => {
                self.down.remove(bookie);
                Standing::Up
            }
            Some(d) if d.failed.contains(&ledger_id) || Instant::now() < d.probe_after => {
                Standing::Skip(format!("not asked: found down recently ({})", d.why))
            }
            Some(d) => Standing::Probe(format!("not asked: found down recently ({})", d.why)),
        }
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

    /// The last entry to read, bounded by evidence: a CLOSED ledger's
    /// `lastEntryId`, no further than the managed ledger's count of its
    /// entries (`entries`, when known), and an OPEN ledger's
    /// last-add-confirmed. When the two disagree, the second value says so
    /// (one error row for the caller); the read itself stops at entries no
    /// bookie holds (see [`Self::read_window`]).
    pub fn bounded_last(
        &mut self,
        meta: &LedgerMetadata,
        entries: Option<i64>,
    ) -> Result<(i64, Option<String>), BookKeeperError> {
        let last = self.last_readable(meta)?;
        match entries {
            Some(n)
                if n >= 0 && meta.state == LedgerState::Closed && n.saturating_sub(1) != last =>
            {
                let kept = last.min(n - 1);
                Ok((
                    kept,
                    Some(format!(
                        "ledger {}: its metadata says the last entry is {last} where the managed ledger counts {n} entries; read up to entry {kept}",
                        meta.ledger_id
                    )),
                ))
            }
            _ => Ok((last, None)),
        }
    }

    /// Reads entries `first..=last` of a ledger, bounded by
    /// [`Self::last_readable`], window after window. Every requested entry up
    /// to that bound gives one [`ReadEntry`], in entry order, except a run of
    /// entries no bookie holds: after [`ABSENT_RUN`] of them, one row stands
    /// for the rest of the claimed range. The result holds what the bookies
    /// really sent, never a claimed count.
    pub fn read_ledger(
        &mut self,
        meta: &LedgerMetadata,
        first: i64,
        last: Option<i64>,
    ) -> Result<Vec<ReadEntry>, BookKeeperError> {
        let bound = self.last_readable(meta)?;
        let last = last.map_or(bound, |l| l.min(bound));
        let mut out = Vec::new();
        let mut next = Some(first);
        while let Some(from) = next {
            let w = self.read_window(meta, from, last, usize::MAX)?;
            out.extend(w.entries);
            next = w.next;
        }
        Ok(out)
    }

    /// Reads one window of entries from `first` towards `last` (inclusive;
    /// never past a CLOSED ledger's last entry, nor past the last-add-confirmed
    /// of an OPEN one last found, asked now if it never was): at most [`MAX_WINDOW`]
    /// entries, and no more once `max_bytes` of payload have arrived (the
    /// requests in flight then still complete). [`Window::next`] says where to
    /// go on. Nothing is allocated for entries not yet asked for.
    pub fn read_window(
        &mut self,
        meta: &LedgerMetadata,
        first: i64,
        last: i64,
        max_bytes: usize,
    ) -> Result<Window, BookKeeperError> {
        if first < 0 {
            return Err(BookKeeperError::Options(format!(
                "first entry {first} is negative"
            )));
        }
        if meta.state == LedgerState::InRecovery {
            return Err(BookKeeperError::Io(format!(
                "ledger {} is in recovery (another client fenced it); not read until it is closed",
                meta.ledger_id
            )));
        }
        meta.check_ensembles()?;
        // Whatever the caller asks, never past what the ledger confirms.
        let bound = match meta.state {
            LedgerState::Open => match self.lac_seen.get(&meta.ledger_id) {
                Some(&lac) => lac,
                None => self.read_lac(meta)?,
            },
            _ => meta.last_entry_id,
        };
        let last = last.min(bound);
        let mut out = Vec::new();
        if last < first {
            return Ok(Window {
                entries: out,
                next: None,
            });
        }
        let digester = Digester::new(meta.digest, &meta.password);
        // The window so far, then one row standing for entries `from..=to`, not read.
        let ledger_id = meta.ledger_id;
        let rest = |mut entries: Vec<ReadEntry>, from: i64, to: i64, why: String| {
            entries.push(ReadEntry {
                ledger_id,
                entry_id: from,
                data: Err(format!(
                    "ledger {ledger_id} entries {from}..={to}: not read: {why}"
                )),
            });
            Window {
                entries,
                next: None,
            }
        };
        let mut bytes = 0usize;
        let mut absent_run = 0i64;
        let mut failed_run = 0i64;
        let mut from = first;
        let end = last.min(first.saturating_add(MAX_WINDOW - 1));
        // Sub-windows of one pipeline each, grown while entries are small.
        let mut step = (self.opts.pipeline_depth as i64).max(1);
        while from <= end {
            if self.past_deadline() {
                return Ok(rest(
                    out,
                    from,
                    last,
                    "the operation's deadline passed".into(),
                ));
            }
            let to = end.min(from.saturating_add(step - 1));
            let rows = self.read_span(meta, from, to, &digester)?;
            for (e, answer) in rows {
                match answer {
                    Ok(data) => {
                        absent_run = 0;
                        failed_run = 0;
                        bytes = bytes.saturating_add(data.len());
                        out.push(ReadEntry {
                            ledger_id: meta.ledger_id,
                            entry_id: e,
                            data: Ok(data),
                        });
                    }
                    Err((why, absent)) => {
                        absent_run = if absent { absent_run + 1 } else { 0 };
                        if absent_run > ABSENT_RUN {
                            let claim = if meta.state == LedgerState::Closed {
                                "the ledger metadata's lastEntryId"
                            } else {
                                "the bookies' last-add-confirmed"
                            };
                            let why = format!("{ABSENT_RUN} entries in a row before them are on no bookie, so the claimed last entry {last} ({claim}) is beyond what the bookies hold");
                            return Ok(rest(out, e, last, why));
                        }
                        failed_run += 1;
                        if failed_run > FAILED_RUN {
                            // The rest of this ensemble's entries; the next ensemble is read.
                            let to = meta.ensemble_last(e).min(last);
                            let why = format!("{FAILED_RUN} entries in a row before them could not be read from any replica of their ensemble ({why})");
                            let mut w = rest(out, e, to, why);
                            w.next = (to < last).then(|| to + 1);
                            return Ok(w);
                        }
                        out.push(ReadEntry {
                            ledger_id: meta.ledger_id,
                            entry_id: e,
                            data: Err(why),
                        });
                    }
                }
            }
            from = to.saturating_add(1);
            if to == i64::MAX || bytes >= max_bytes {
                break;
            }
            // Size the next step to what is left of the byte budget.
            let avg = bytes / out.len().max(1);
            let left = max_bytes.saturating_sub(bytes);
            let fit = left
                .checked_div(avg)
                .map_or(MAX_WINDOW, |n| n.max(1) as i64);
            step = fit.clamp(1, (self.opts.pipeline_depth as i64).max(1) * 4);
        }
        let next = (from <= last).then_some(from);
        Ok(Window { entries: out, next })
    }

    /// Entries `first..=last` (a span of at most a few pipelines), each tried
    /// on its write set in order: its payload, or why not and whether every
    /// replica said it does not have it.
    #[allow(clippy::type_complexity)]
    fn read_span(
        &mut self,
        meta: &LedgerMetadata,
        first: i64,
        last: i64,
        digester: &Digester,
    ) -> Result<Vec<(i64, Result<Vec<u8>, (String, bool)>)>, BookKeeperError> {
        let mut done: BTreeMap<i64, Vec<u8>> = BTreeMap::new();
        let mut failures: HashMap<i64, (Vec<String>, usize)> = HashMap::new();
        let mut absent: HashMap<i64, usize> = HashMap::new();
        let mut todo: Vec<i64> = (first..=last).collect();
        for attempt in 0..meta.write_quorum {
            if todo.is_empty() {
                break;
            }
            // Group this attempt's entries by the bookie to ask.
            let mut by_bookie: BTreeMap<String, Vec<i64>> = BTreeMap::new();
            for &e in &todo {
                by_bookie
                    .entry(meta.replica(e, attempt).to_string())
                    .or_default()
                    .push(e);
            }
            let mut retry = Vec::new();
            let last_attempt = attempt + 1 == meta.write_quorum;
            for (bookie, entries) in by_bookie {
                let answers = match self.standing(&bookie, meta.ledger_id) {
                    Standing::Up => self.read_from(&bookie, meta.ledger_id, &entries, digester)?,
                    // Other replicas are left: they are asked instead.
                    Standing::Probe(why) | Standing::Skip(why) if !last_attempt => entries
                        .iter()
                        .map(|&e| (e, Answer::Failed(why.clone())))
                        .collect(),
                    Standing::Skip(why) => entries
                        .iter()
                        .map(|&e| (e, Answer::Failed(why.clone())))
                        .collect(),
                    Standing::Probe(_) => {
                        // The last replica left: asked again, with a short timeout.
                        self.probe(|c| c.read_from(&bookie, meta.ledger_id, &entries, digester))?
                    }
                };
                if answers
                    .iter()
                    .any(|(_, a)| matches!(a, Answer::Data(_) | Answer::Absent(_)))
                {
                    // It answers: no longer down.
                    self.down.remove(&bookie);
                }
                for (e, answer) in answers {
                    match answer {
                        Answer::Data(payload) => {
                            done.insert(e, payload);
                        }
                        Answer::Absent(why) => {
                            *absent.entry(e).or_default() += 1;
                            push_failure(&mut failures, e, &bookie, &why);
                            retry.push(e);
                        }
                        Answer::Failed(why) => {
                            push_failure(&mut failures, e, &bookie, &why);
                            retry.push(e);
                        }
                    }
                }
            }
            retry.sort_unstable();
            retry.dedup();
            todo = retry;
        }
        Ok((first..=last)
            .map(|e| {
                let answer = done.remove(&e).ok_or_else(|| {
                    let (listed, total) = failures.remove(&e).unwrap_or_default();
                    let more = total.saturating_sub(listed.len());
                    let tail = if more > 0 {
                        format!("; and {more} more")
                    } else {
                        String::new()
                    };
                    let none_has = absent.get(&e).copied().unwrap_or(0) >= meta.write_quorum;
                    (
                        format!(
                            "ledger {} entry {e}: no replica served it ({}{tail})",
                            meta.ledger_id,
                            listed.join("; ")
                        ),
                        none_has,
                    )
                });
                (e, answer)
            })
            .collect())
    }

    /// The last-add-confirmed of an OPEN ledger, from v3 READ_LAC to every
    /// bookie of its last ensemble: the largest of the explicit LAC and the
    /// LAC carried by each bookie's last entry, once enough bookies answered
    /// (BookKeeper's coverage rule). -1 when the ledger is empty.
    pub fn read_lac(&mut self, meta: &LedgerMetadata) -> Result<i64, BookKeeperError> {
        meta.check_ensembles()?;
        let Some(seg) = meta.segments.last() else {
            return Err(BookKeeperError::Metadata(format!(
                "ledger {}: no ensemble",
                meta.ledger_id
            )));
        };
        let digester = Digester::new(meta.digest, &meta.password);
        let mut lac = -1i64;
        let mut answered = vec![false; seg.bookies.len()];
        let mut errors = Vec::new();
        for (i, bookie) in seg.bookies.iter().enumerate() {
            let got = match self.standing(bookie, meta.ledger_id) {
                Standing::Skip(why) => Err(why),
                Standing::Up => self.read_lac_from(bookie, meta.ledger_id, &digester)?,
                Standing::Probe(_) => {
                    self.probe(|c| c.read_lac_from(bookie, meta.ledger_id, &digester))?
                }
            };
            match got {
                Ok(v) => {
                    self.down.remove(bookie);
                    answered[i] = true;
                    lac = lac.max(v);
                }
                Err(e) => {
                    if errors.len() < MAX_LISTED {
                        errors.push(format!("{bookie}: {e}"));
                    }
                }
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
        if covered {
            if self.lac_seen.len() >= 100_000 {
                self.lac_seen.clear();
            }
            self.lac_seen.insert(meta.ledger_id, lac);
        }
        if !covered {
            let failed = answered.iter().filter(|a| !**a).count();
            let more = failed.saturating_sub(errors.len());
            let tail = if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            };
            return Err(BookKeeperError::Io(format!(
                "last-add-confirmed of open ledger {} unknown: too few bookies answered ({}{tail})",
                meta.ledger_id,
                errors.join("; ")
            )));
        }
        Ok(lac)
    }

    /// One bookie's last-add-confirmed, or why not; `Err` only when interrupted.
    fn read_lac_from(
        &mut self,
        bookie: &str,
        ledger_id: i64,
        digester: &Digester,
    ) -> Result<Result<i64, String>, BookKeeperError> {
        let r = self.lac_from(bookie, ledger_id, digester);
        if r.as_ref().is_err_and(|e| e.is_empty()) {
            return Err(BookKeeperError::Interrupted(format!(
                "interrupted while asking {bookie} for the last-add-confirmed of ledger {ledger_id}"
            )));
        }
        Ok(r)
    }

    /// [`Self::read_lac_from`]'s work; an empty error means interrupted.
    fn lac_from(
        &mut self,
        bookie: &str,
        ledger_id: i64,
        digester: &Digester,
    ) -> Result<i64, String> {
        // READ_LAC is v3: it gets a connection of its own, closed afterwards,
        // since the v2 reads switch their connection to v2 for good.
        let mut conn = match self.connect(bookie) {
            Ok(c) => c,
            Err(why) => {
                self.mark_down(bookie, Some(ledger_id), &why);
                return Err(why);
            }
        };
        let txn = self.next_txn;
        self.next_txn += 1;
        if let Err(e) = conn.write_all(&protocol::read_lac_request(ledger_id, txn)) {
            return Err(format!("sending READ_LAC: {}", io_why(&e)));
        }
        let deadline = self.request_deadline();
        let (frame, stop) = self.timed_frame(conn.as_mut(), deadline);
        let frame = match (frame, stop) {
            (_, Some(Stop::Interrupted)) => return Err(String::new()),
            (_, Some(Stop::TimedOut)) => {
                let why = self.timeout_why("READ_LAC");
                self.mark_down(bookie, Some(ledger_id), &why);
                return Err(why);
            }
            (Err(e), None) => return Err(io_why(&e)),
            (Ok(f), None) => f,
        };
        if refused_after_tls(&frame) {
            let why = self.unauthorized_why();
            self.mark_down(bookie, Some(ledger_id), &why);
            return Err(why);
        }
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
            rc if rc.is_unauthorized() => {
                let why = self.unauthorized_why();
                self.mark_down(bookie, Some(ledger_id), &why);
                return Err(why);
            }
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

    /// One frame from `conn` by `deadline`, checking the interrupt meanwhile.
    fn timed_frame(
        &mut self,
        conn: &mut dyn Transport,
        deadline: Instant,
    ) -> (io::Result<Vec<u8>>, Option<Stop>) {
        let max = self.opts.max_frame_bytes;
        let interrupt = self.interrupt.as_deref();
        let mut last_poll = self.last_poll;
        let mut check = || match interrupt {
            Some(f) if last_poll.elapsed() >= POLL / 2 => {
                last_poll = Instant::now();
                f()
            }
            _ => false,
        };
        let mut timed = Timed {
            conn,
            deadline,
            check: &mut check,
            stop: None,
        };
        let frame = protocol::read_frame(&mut timed, max);
        let stop = timed.stop.take();
        self.last_poll = last_poll;
        (frame, stop)
    }

    /// Why a bookie answered EUA, with what to do about it.
    fn unauthorized_why(&self) -> String {
        match &self.opts.tls {
            None => "TLS is required: the bookie refused a plaintext client as unauthenticated (EUA); \
                     give the bookie TLS options (a CA bundle, and the client certificate and key it authorizes)"
                .into(),
            Some(t) if !t.has_client_certificate() => {
                "the bookie refused a client without a certificate (EUA): give the client certificate and key it authorizes"
                    .into()
            }
            Some(_) => "the bookie did not authorize this client certificate (EUA): its role is not one the bookie allows"
                .into(),
        }
    }

    fn connect(&self, bookie: &str) -> Result<Box<dyn Transport>, String> {
        if let Some(connect) = &self.connector {
            let left = self
                .request_deadline()
                .saturating_duration_since(Instant::now());
            return connect(bookie, self.opts.connect_timeout.min(left));
        }
        let addr = (self.resolver)(bookie)?;
        let addrs: Vec<_> = addr
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {addr}: {e}"))?
            .take(8)
            .collect();
        let mut last = format!("{addr} resolves to no address");
        for a in addrs {
            let left = self
                .request_deadline()
                .saturating_duration_since(Instant::now());
            let wait = self.opts.connect_timeout.min(left);
            if wait.is_zero() {
                return Err(format!(
                    "cannot connect to {a}: the operation's deadline passed"
                ));
            }
            match TcpStream::connect_timeout(&a, wait) {
                Ok(s) => {
                    s.set_nodelay(true).ok();
                    s.set_write_timeout(Some(self.opts.request_timeout)).ok();
                    let Some(tls) = &self.opts.tls else {
                        return Ok(Box::new(s));
                    };
                    let left = self
                        .request_deadline()
                        .saturating_duration_since(Instant::now());
                    let by = Instant::now() + self.opts.connect_timeout.min(left);
                    return match tls.start(s, &addr, START_TLS_TXN, by) {
                        Ok(t) => Ok(Box::new(t)),
                        Err(why) => Err(why),
                    };
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    last = format!("cannot connect to {a}: no answer within {}", human(wait))
                }
                Err(e) => last = format!("cannot connect to {a}: {}", io_why(&e)),
            }
        }
        Err(last)
    }

    /// Reads `entries` of one ledger from one bookie, pipelined. Every entry
    /// gets an answer. A dropped connection is reopened (with backoff, at
    /// most [`RECONNECTS`] times, within the deadline) for the entries still
    /// pending; a bookie that does not answer in time, or cannot be reached,
    /// is marked down.
    fn read_from(
        &mut self,
        bookie: &str,
        ledger_id: i64,
        entries: &[i64],
        digester: &Digester,
    ) -> Result<Vec<(i64, Answer)>, BookKeeperError> {
        let mut out = Vec::with_capacity(entries.len());
        let mut pending: VecDeque<i64> = entries.iter().copied().collect();
        let mut reconnects = 0u32;
        loop {
            let mut conn = match self.v2.remove(bookie) {
                Some(c) => c,
                None => match self.connect(bookie) {
                    Ok(c) => c,
                    Err(why) => {
                        self.mark_down(bookie, Some(ledger_id), &why);
                        out.extend(
                            pending
                                .into_iter()
                                .map(|e| (e, Answer::Failed(why.clone()))),
                        );
                        return Ok(out);
                    }
                },
            };
            match self.exchange(conn.as_mut(), ledger_id, &mut pending, digester, &mut out) {
                None => {
                    self.v2.insert(bookie.to_string(), conn);
                    return Ok(out);
                }
                Some(Broken::Interrupted) => {
                    return Err(BookKeeperError::Interrupted(format!(
                        "interrupted while reading ledger {ledger_id} from {bookie}"
                    )))
                }
                Some(Broken::Dropped(why)) if reconnects < RECONNECTS && !pending.is_empty() => {
                    // Back off, then reconnect for what is pending.
                    reconnects += 1;
                    let pause = self.opts.reconnect_backoff * (1 << (reconnects - 1));
                    if Instant::now() + pause >= self.request_deadline() {
                        out.extend(pending.drain(..).map(|e| (e, Answer::Failed(why.clone()))));
                        return Ok(out);
                    }
                    self.sleep(pause)?;
                }
                Some(Broken::Dropped(why)) | Some(Broken::Bad(why)) => {
                    // Not asked again for a while: the next ledgers go to the other replicas at once.
                    self.mark_down(bookie, Some(ledger_id), &why);
                    out.extend(pending.drain(..).map(|e| (e, Answer::Failed(why.clone()))));
                    return Ok(out);
                }
            }
        }
    }

    fn sleep(&mut self, d: Duration) -> Result<(), BookKeeperError> {
        let until = Instant::now() + d;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            std::thread::sleep(left.min(POLL));
            if self.interrupted() {
                return Err(BookKeeperError::Interrupted(
                    "interrupted while waiting to reconnect".into(),
                ));
            }
        }
    }

    /// Pipelines `pending` over `conn` until each has an answer (pushed onto
    /// `out` and removed from `pending`) or the exchange breaks: then what is
    /// still in `pending` had no answer.
    fn exchange(
        &mut self,
        conn: &mut dyn Transport,
        ledger_id: i64,
        pending: &mut VecDeque<i64>,
        digester: &Digester,
        out: &mut Vec<(i64, Answer)>,
    ) -> Option<Broken> {
        let depth = self.opts.pipeline_depth.max(1);
        // Entries asked for and not answered, in request order, with their deadline.
        let mut in_flight: VecDeque<(i64, Instant)> = VecDeque::new();
        let mut sent = 0usize;
        loop {
            if self.interrupted() {
                return Some(Broken::Interrupted);
            }
            // Fill the window.
            let mut batch = Vec::new();
            while in_flight.len() < depth && sent < pending.len() {
                let e = pending[sent];
                sent += 1;
                batch.extend_from_slice(&protocol::read_entry_request(ledger_id, e));
                in_flight.push_back((e, self.request_deadline()));
            }
            if !batch.is_empty() {
                if let Err(e) = conn.write_all(&batch) {
                    return Some(Broken::Dropped(format!("sending reads: {}", io_why(&e))));
                }
            }
            let &(_, deadline) = in_flight.front()?;
            let frame = match self.timed_frame(conn, deadline) {
                (_, Some(Stop::Interrupted)) => return Some(Broken::Interrupted),
                (_, Some(Stop::TimedOut)) => return Some(Broken::Bad(self.timeout_why("read"))),
                (Err(e), None) if is_drop(&e) => return Some(Broken::Dropped(io_why(&e))),
                (Err(e), None) => return Some(Broken::Bad(io_why(&e))),
                (Ok(f), None) => f,
            };
            let (rc, l, e, range) = match protocol::decode_v2(&frame) {
                Ok(V2Response::Read {
                    rc,
                    ledger_id,
                    entry_id,
                    entry,
                }) => (rc, ledger_id, entry_id, entry),
                Ok(_) => {
                    return Some(Broken::Bad(
                        "unexpected response (not a READENTRY answer)".into(),
                    ))
                }
                Err(_) if refused_after_tls(&frame) => {
                    return Some(Broken::Bad(self.unauthorized_why()))
                }
                Err(err) => return Some(Broken::Bad(err.to_string())),
            };
            if l != ledger_id {
                return Some(Broken::Bad(format!(
                    "answer for ledger {l} where ledger {ledger_id} was asked"
                )));
            }
            // v2 has no request ids: match on (ledger, entry).
            let Some(pos) = in_flight.iter().position(|&(x, _)| x == e) else {
                return Some(Broken::Bad(format!(
                    "answer for ledger {l} entry {e}, which was not asked for"
                )));
            };
            in_flight.remove(pos);
            if let Some(i) = pending.iter().position(|&x| x == e) {
                pending.remove(i);
                sent -= 1;
            }
            let answer = match rc {
                Rc::Ok => {
                    let stored = &frame[range];
                    match digester.verify(stored, ledger_id, Some(e)) {
                        Ok(h) => Answer::Data(stored[h.payload_offset..].to_vec()),
                        Err(err) => Answer::Failed(err.to_string()),
                    }
                }
                rc @ (Rc::NoEntry | Rc::NoLedger) => Answer::Absent(rc.describe()),
                rc if rc.is_unauthorized() => {
                    // The connection is refused, not the entry: no other
                    // read on it can succeed.
                    let why = self.unauthorized_why();
                    out.push((e, Answer::Failed(why.clone())));
                    return Some(Broken::Bad(why));
                }
                rc => Answer::Failed(rc.describe()),
            };
            out.push((e, answer));
        }
    }
}

/// Whether `frame` is the v3 START_TLS answer with an error that a bookie
/// sends inside TLS after the handshake when its authorization provider
/// (`BookieAuthZFactory`) refused the client's certificate.
fn refused_after_tls(frame: &[u8]) -> bool {
    matches!(protocol::decode_start_tls(frame), Ok((_, rc)) if rc != Rc::Ok)
}

/// Reasons listed in one error text at most (the rest are counted).
const MAX_LISTED: usize = 8;

fn push_failure(
    failures: &mut HashMap<i64, (Vec<String>, usize)>,
    e: i64,
    bookie: &str,
    why: &str,
) {
    let (list, total) = failures.entry(e).or_default();
    *total += 1;
    if list.len() < MAX_LISTED {
        list.push(format!("{bookie}: {why}"));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_default_build_and_check() {
        let d = ClientOptions::default();
        assert_eq!(d, ClientOptions::DEFAULT);
        assert_eq!(
            (d.request_timeout.as_millis(), d.connect_timeout.as_millis()),
            (30_000, 5_000)
        );
        assert_eq!((d.pipeline_depth, d.max_frame_bytes), (64, 5_308_416));
        let built = d.clone().with_pipeline_depth(3).with_max_frame_bytes(64);
        assert_eq!(built.clone().checked(), Ok(built));
        assert!(d.with_request_timeout(Duration::ZERO).validate().is_err());
    }

    #[test]
    fn addresses_resolve_known_ids_and_keep_the_rest() {
        let map = [("b1".to_string(), "10.0.0.1:3181".to_string())].into();
        let client = BookieClient::with_addresses(ClientOptions::default(), map);
        assert_eq!((client.resolver)("b1").unwrap(), "10.0.0.1:3181");
        assert_eq!((client.resolver)("h:3181").unwrap(), "h:3181");
    }

    #[test]
    fn checked_options_refuse_zeros_and_tiny_frames() {
        let o = ClientOptions::try_new(1_500, 1_000, 8, 64).unwrap();
        assert_eq!(o.request_timeout, Duration::from_millis(1_500));
        assert_eq!(o.connect_timeout, Duration::from_millis(1_000));
        assert_eq!((o.pipeline_depth, o.max_frame_bytes), (8, 64));
        for bad in [(0, 1, 1, 64), (1, 0, 1, 64), (1, 1, 0, 64), (1, 1, 1, 63)] {
            let e = ClientOptions::try_new(bad.0, bad.1, bad.2, bad.3).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::Options, "{bad:?}");
        }
    }
}
