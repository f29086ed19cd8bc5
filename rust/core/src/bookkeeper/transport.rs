//! The bytes under the BookKeeper client: a [`Transport`] (a TCP stream, or
//! an in-memory one in tests and the fuzzer), reads that end at a deadline
//! however slowly the peer sends ([`Timed`]), and how I/O failures read.

use std::io;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The longest wait between two interrupt checks.
pub const POLL: Duration = Duration::from_millis(200);

/// A connection to a bookie: a TCP stream, or anything that reads and
/// writes bytes with a read timeout (tests and the fuzzer use in-memory
/// ones).
pub trait Transport: io::Read + io::Write + Send {
    /// The longest one `read` may wait; `None`: forever.
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()>;
}

impl Transport for TcpStream {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        TcpStream::set_read_timeout(self, timeout)
    }
}

/// Opens a connection to a bookie id within a time; the default resolves
/// the id and connects over TCP.
pub type Connector = dyn Fn(&str, Duration) -> Result<Box<dyn Transport>, String> + Send + Sync;

/// Why a wait ended early.
pub(super) enum Stop {
    TimedOut,
    Interrupted,
}

/// A stream whose reads end at a deadline, whatever the peer trickles: each
/// `read` waits at most what is left (and at most [`POLL`], to check the
/// interrupt between).
pub(super) struct Timed<'a> {
    pub(super) conn: &'a mut dyn Transport,
    pub(super) deadline: Instant,
    pub(super) check: &'a mut dyn FnMut() -> bool,
    pub(super) stop: Option<Stop>,
}

impl io::Read for Timed<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if (self.check)() {
                self.stop = Some(Stop::Interrupted);
                return Err(io::Error::other("interrupted"));
            }
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.stop = Some(Stop::TimedOut);
                return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline"));
            }
            self.conn.set_read_timeout(Some(left.min(POLL)))?;
            match self.conn.read(buf) {
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    continue
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
        }
    }
}

/// How a duration reads in a message: `2 s`, `1.5 s`, `400 ms`.
pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

pub(super) fn is_drop(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
    )
}

pub(super) fn io_why(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => "the bookie closed the connection".into(),
        _ => e.to_string(),
    }
}
