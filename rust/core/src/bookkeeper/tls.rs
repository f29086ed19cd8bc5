//! TLS to bookies, asked for as BookKeeper's own client asks: a v3
//! START_TLS request on the fresh connection (in v2 mode too), the bookie's
//! EOK, then a TLS handshake on the same socket; every frame after that,
//! v2 or v3, travels inside TLS.
//!
//! The bookie's certificate is checked against the CA bundle given. Its
//! host name is checked only when asked: BookKeeper's client does not check
//! it by default (`hostnameVerificationEnabled=false`), and bookies register
//! by address. A client certificate and key are sent when given, for bookies
//! that require client authentication (`tlsClientAuthentication=true`) or
//! authorize by certificate role (`BookieAuthZFactory`). rustls with the
//! `ring` provider; no OpenSSL.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore,
    SignatureScheme,
};

use super::protocol::{self, Rc};
use super::transport::{human, io_why, Transport, POLL};
use super::BookKeeperError;

/// The largest START_TLS answer accepted (it is a few bytes).
const MAX_START_TLS_FRAME: usize = 64 * 1024;

/// How connections to bookies are secured: the CA bundle that signs the
/// bookies' certificates, an optional client certificate and key, and
/// whether the bookie's host name is checked. Cheap to clone.
#[derive(Clone)]
pub struct BookieTls {
    config: Arc<ClientConfig>,
    /// What it was built from (file names, never key bytes), for `Debug`
    /// and equality.
    what: String,
    client_certificate: bool,
    verify_hostname: bool,
    files: Option<TlsFiles>,
}

/// The PEM files a [`BookieTls`] was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub ca: std::path::PathBuf,
    pub certificate: Option<std::path::PathBuf>,
    pub key: Option<std::path::PathBuf>,
}

impl fmt::Debug for BookieTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BookieTls({})", self.what)
    }
}

impl PartialEq for BookieTls {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.config, &other.config) || self.what == other.what
    }
}

impl Eq for BookieTls {}

fn options(why: impl fmt::Display) -> BookKeeperError {
    BookKeeperError::Options(format!("bookie TLS: {why}"))
}

fn read_file(what: &str, path: &Path) -> Result<Vec<u8>, BookKeeperError> {
    std::fs::read(path)
        .map_err(|e| options(format!("cannot read the {what} {}: {e}", path.display())))
}

impl BookieTls {
    /// From PEM bytes: `ca` holds one or more CA certificates; `client` is
    /// a certificate chain and its unencrypted private key (PKCS#8, PKCS#1
    /// or SEC1). Errors name what was wrong, never the bytes.
    pub fn from_pem(
        ca: &[u8],
        client: Option<(&[u8], &[u8])>,
        verify_hostname: bool,
    ) -> Result<Self, BookKeeperError> {
        Self::build(ca, client, verify_hostname, "from PEM bytes".into())
    }

    /// From PEM files, as Pulsar names them: `bookkeeperTLSTrustCertsFilePath`,
    /// `bookkeeperTLSCertificateFilePath` and `bookkeeperTLSKeyFilePath`.
    /// The certificate and the key come together or not at all.
    pub fn from_files(
        ca: &Path,
        certificate: Option<&Path>,
        key: Option<&Path>,
        verify_hostname: bool,
    ) -> Result<Self, BookKeeperError> {
        let ca_pem = read_file("CA bundle", ca)?;
        let mut what = format!("ca={}", ca.display());
        let client = match (certificate, key) {
            (None, None) => None,
            (Some(c), Some(k)) => {
                what.push_str(&format!(
                    ", certificate={}, key={}",
                    c.display(),
                    k.display()
                ));
                Some((
                    read_file("client certificate", c)?,
                    read_file("client key", k)?,
                ))
            }
            _ => {
                return Err(options(
                    "a client certificate and its key go together: give both or neither",
                ))
            }
        };
        if verify_hostname {
            what.push_str(", hostname verified");
        }
        let mut tls = Self::build(
            &ca_pem,
            client.as_ref().map(|(c, k)| (c.as_slice(), k.as_slice())),
            verify_hostname,
            what,
        )?;
        tls.files = Some(TlsFiles {
            ca: ca.to_path_buf(),
            certificate: certificate.map(Path::to_path_buf),
            key: key.map(Path::to_path_buf),
        });
        Ok(tls)
    }

    fn build(
        ca: &[u8],
        client: Option<(&[u8], &[u8])>,
        verify_hostname: bool,
        what: String,
    ) -> Result<Self, BookKeeperError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca) {
            let cert = cert.map_err(|e| options(format!("the CA bundle is not PEM: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| options(format!("a CA certificate cannot be used: {e}")))?;
        }
        if roots.is_empty() {
            return Err(options("the CA bundle holds no certificate"));
        }
        let verifier =
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| options(format!("the CA bundle cannot be used: {e}")))?;
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(options)?;
        let builder = if verify_hostname {
            builder.with_webpki_verifier(verifier)
        } else {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyName(verifier)))
        };
        let config = match client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = CertificateDer::pem_slice_iter(cert)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| options(format!("the client certificate is not PEM: {e}")))?;
                if chain.is_empty() {
                    return Err(options("the client certificate file holds no certificate"));
                }
                let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| {
                    options(format!(
                        "the client key is not an unencrypted PEM private key (PKCS#8, PKCS#1 or SEC1): {e}"
                    ))
                })?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    let hint = if format!("{e:?}").contains("UnsupportedCertVersion") {
                        " (an X.509 version 1 certificate: issue it with extensions, as version 3)"
                    } else {
                        ""
                    };
                    options(format!("the client certificate and key: {e}{hint}"))
                })?
            }
        };
        Ok(Self {
            config: Arc::new(config),
            what,
            client_certificate: client.is_some(),
            verify_hostname,
            files: None,
        })
    }

    /// Whether a client certificate is sent.
    pub fn has_client_certificate(&self) -> bool {
        self.client_certificate
    }

    /// Whether the bookie's host name is checked against its certificate.
    pub fn verifies_hostname(&self) -> bool {
        self.verify_hostname
    }

    /// The files it was read from ([`Self::from_files`]).
    pub fn files(&self) -> Option<&TlsFiles> {
        self.files.as_ref()
    }

    /// Asks the bookie at `addr` (`host:port`, connected as `tcp`) for TLS
    /// and completes the handshake by `deadline`.
    pub(super) fn start(
        &self,
        mut tcp: TcpStream,
        addr: &str,
        txn_id: u64,
        deadline: Instant,
    ) -> Result<TlsStream, String> {
        let mut io = Deadlined {
            tcp: &mut tcp,
            deadline,
        };
        io.write_all(&protocol::start_tls_request(txn_id))
            .map_err(|e| format!("{addr}: sending START_TLS: {}", io_why(&e)))?;
        let frame = protocol::read_frame(&mut io, MAX_START_TLS_FRAME).map_err(|e| {
            if e.kind() == io::ErrorKind::TimedOut {
                format!("{addr}: no answer to START_TLS in time")
            } else {
                format!(
                    "{addr}: START_TLS: {} (does the bookie serve TLS?)",
                    io_why(&e)
                )
            }
        })?;
        let (txn, rc) = protocol::decode_start_tls(&frame).map_err(|e| format!("{addr}: {e}"))?;
        if txn != txn_id {
            return Err(format!(
                "{addr}: START_TLS answer for request {txn} instead of {txn_id}"
            ));
        }
        if rc != Rc::Ok {
            return Err(format!(
                "{addr}: the bookie does not serve TLS (START_TLS answered {})",
                rc.describe()
            ));
        }
        let host = addr
            .rsplit_once(':')
            .map_or(addr, |(h, _)| h)
            .trim_start_matches('[')
            .trim_end_matches(']');
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| format!("{addr}: not a TLS server name: {e}"))?;
        let mut conn = ClientConnection::new(self.config.clone(), name)
            .map_err(|e| format!("{addr}: TLS: {e}"))?;
        while conn.is_handshaking() {
            if let Err(e) = conn.complete_io(&mut io) {
                return Err(if e.kind() == io::ErrorKind::TimedOut {
                    format!(
                        "{addr}: TLS handshake not done within {}",
                        human(deadline.saturating_duration_since(Instant::now()))
                    )
                } else {
                    format!("{addr}: TLS handshake failed: {}", tls_why(&e))
                });
            }
        }
        Ok(TlsStream {
            conn,
            tcp,
            answered: false,
            client_certificate: self.client_certificate,
        })
    }
}

/// The bookie's certificate chain checked against the CA bundle, its name
/// not (BookKeeper's default).
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // webpki checks the chain before the name: a name error means the
        // chain is good.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// A TCP stream whose reads end at a deadline (the START_TLS exchange and
/// the handshake).
struct Deadlined<'a> {
    tcp: &'a mut TcpStream,
    deadline: Instant,
}

impl Read for Deadlined<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline"));
            }
            self.tcp.set_read_timeout(Some(left.min(POLL)))?;
            match self.tcp.read(buf) {
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                r => return r,
            }
        }
    }
}

impl Write for Deadlined<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tcp.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tcp.flush()
    }
}

/// What a TLS failure reads as, with what to do about the usual ones.
fn tls_why(e: &io::Error) -> String {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::AlertReceived(alert)) => format!(
            "the bookie refused the connection (TLS alert {alert:?}): it may require a client certificate it trusts"
        ),
        Some(rustls::Error::InvalidCertificate(why)) => format!(
            "the bookie's certificate is not trusted ({why:?}): is the CA bundle the one that signed it?"
        ),
        Some(other) => other.to_string(),
        None => io_why(e),
    }
}

/// A connection to a bookie inside TLS.
pub(super) struct TlsStream {
    conn: ClientConnection,
    tcp: TcpStream,
    /// Whether the bookie sent anything inside TLS yet.
    answered: bool,
    client_certificate: bool,
}

impl TlsStream {
    fn fail(e: io::Error) -> io::Error {
        if e.get_ref().is_some_and(|i| i.is::<rustls::Error>()) {
            io::Error::new(e.kind(), tls_why(&e))
        } else {
            e
        }
    }

    /// With TLS 1.3 the bookie checks the client's certificate after the
    /// handshake ended on this side: a refusal is an alert or a closed
    /// connection at the first read, which says so.
    fn unanswered(&self, e: io::Error) -> io::Error {
        let dropped = matches!(
            e.kind(),
            io::ErrorKind::UnexpectedEof
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe
        );
        if self.answered || !dropped {
            return e;
        }
        let why = if self.client_certificate {
            "the bookie closed the TLS connection before answering: it may not trust this client certificate"
        } else {
            "the bookie closed the TLS connection before answering: it may require a client certificate it trusts"
        };
        io::Error::new(io::ErrorKind::ConnectionAborted, why)
    }

    fn read_plain(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.conn.reader().read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                r => return r,
            }
            // No plaintext yet: read a record (this is where the socket's
            // read timeout applies), then answer what it asks (alerts,
            // key updates).
            let n = self.conn.read_tls(&mut self.tcp)?;
            let state = self.conn.process_new_packets();
            while self.conn.wants_write() {
                if self.conn.write_tls(&mut self.tcp)? == 0 {
                    break;
                }
            }
            state.map_err(|e| Self::fail(io::Error::new(io::ErrorKind::InvalidData, e)))?;
            if n == 0 {
                return match self.conn.reader().read(buf) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        Err(io::ErrorKind::UnexpectedEof.into())
                    }
                    r => r,
                };
            }
        }
    }
}

impl Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.read_plain(buf) {
            Ok(0) if !buf.is_empty() => Err(self.unanswered(io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => {
                self.answered = true;
                Ok(n)
            }
            Err(e) => Err(self.unanswered(e)),
        }
    }
}

impl TlsStream {
    fn write_plain(&mut self, buf: &[u8]) -> io::Result<usize> {
        // rustls buffers a bounded amount of plaintext: what it took is
        // sent before returning, and a full buffer is drained, then retried.
        for _ in 0..2 {
            let n = self.conn.writer().write(buf)?;
            while self.conn.wants_write() {
                if self.conn.write_tls(&mut self.tcp)? == 0 {
                    return Err(io::ErrorKind::WriteZero.into());
                }
            }
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
        }
        Err(io::ErrorKind::WriteZero.into())
    }
}

impl Write for TlsStream {
    /// A bookie that refuses the client's certificate after a TLS 1.3
    /// handshake may reset the connection before the first request is
    /// sent: that reads as the refusal, as it does at the first read.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_plain(buf).map_err(|e| self.unanswered(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tcp.flush()
    }
}

impl Transport for TlsStream {
    fn set_read_timeout(&mut self, timeout: Option<std::time::Duration>) -> io::Result<()> {
        self.tcp.set_read_timeout(timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(r: Result<BookieTls, BookKeeperError>) -> String {
        match r {
            Err(e) => e.to_string(),
            Ok(t) => panic!("accepted: {t:?}"),
        }
    }

    #[test]
    fn bad_files_are_option_errors_that_show_no_bytes() {
        let dir = std::env::temp_dir().join(format!("pe-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let junk = dir.join("junk.pem");
        std::fs::write(
            &junk,
            "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWJ5dGVz\n-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        let e = err(BookieTls::from_files(&junk, None, None, false));
        assert!(e.contains("the CA bundle holds no certificate"), "{e}");
        let e = err(BookieTls::from_files(
            &dir.join("missing.pem"),
            None,
            None,
            false,
        ));
        assert!(
            e.contains("cannot read the CA bundle") && e.contains("missing.pem"),
            "{e}"
        );
        let e = err(BookieTls::from_files(&junk, Some(&junk), None, false));
        assert!(e.contains("give both or neither"), "{e}");
        let e = err(BookieTls::from_pem(b"not pem at all", None, false));
        assert!(e.starts_with("invalid option: bookie TLS:"), "{e}");
        assert!(!e.contains("c2VjcmV0"));
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A bookie that refuses the client after the handshake may reset the
    /// connection before the client's first request is out (TLS 1.3: the
    /// client's handshake ends before the bookie has read its Finished).
    /// The write that meets the reset reads as that refusal, not as a bare
    /// OS error. Here the fake bookie answers START_TLS, sends its handshake
    /// flight, then closes with the client's Finished unread (a reset).
    #[test]
    fn a_reset_before_the_bookie_answered_reads_as_the_refusal() {
        use crate::proto::bookkeeper as pb;
        use prost::Message;
        use rustls::{ServerConfig, ServerConnection};
        use std::net::TcpListener;
        use std::time::Duration;

        let ca = include_bytes!("testdata/ca.pem");
        let chain = CertificateDer::pem_slice_iter(include_bytes!("testdata/bookie.pem"))
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(include_bytes!("testdata/bookie.key")).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let bookie = std::thread::spawn(move || {
            let (mut tcp, _) = listener.accept().unwrap();
            tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut len = [0u8; 4];
            tcp.read_exact(&mut len).unwrap();
            let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
            tcp.read_exact(&mut body).unwrap();
            let request = pb::Request::decode(&body[..]).unwrap();
            let answer = pb::Response {
                header: request.header,
                status: 0,
                read_lac_response: None,
                start_tls_response: Some(pb::StartTlsResponse {}),
            }
            .encode_to_vec();
            tcp.write_all(&(answer.len() as u32).to_be_bytes()).unwrap();
            tcp.write_all(&answer).unwrap();
            let mut conn = ServerConnection::new(Arc::new(config)).unwrap();
            while !conn.wants_write() {
                conn.read_tls(&mut tcp).unwrap();
                conn.process_new_packets().unwrap();
            }
            while conn.wants_write() {
                conn.write_tls(&mut tcp).unwrap();
            }
            // The client's Finished arrives and stays unread: closing now resets.
            std::thread::sleep(Duration::from_millis(300));
        });
        let tls = BookieTls::from_pem(ca, None, false).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let tcp = TcpStream::connect(&addr).unwrap();
        let mut stream = tls.start(tcp, &addr, 1, deadline).unwrap();
        bookie.join().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let e = stream
            .write_all(&protocol::start_tls_request(2))
            .and_then(|()| stream.flush())
            .expect_err("the bookie reset the connection");
        assert_eq!(e.kind(), io::ErrorKind::ConnectionAborted, "{e}");
        assert_eq!(
            e.to_string(),
            "the bookie closed the TLS connection before answering: it may require a client certificate it trusts"
        );
    }
}
