//! End-to-end encrypted messages, decrypted as Pulsar's Java consumer does
//! (`MessageCryptoBc`, spec: `../shared/spec` on MessageMetadata's
//! `encryption_keys` and `encryption_param`).
//!
//! A producer encrypts each entry's payload (after compression, before
//! chunking) with a random AES data key in GCM mode: the IV is the metadata's
//! `encryption_param` (12 bytes) and the 16-byte tag follows the ciphertext.
//! The data key is stored once per consumer key in `encryption_keys`, wrapped
//! with that key's public half: RSA-OAEP with SHA-1 and MGF1-SHA-1 for RSA
//! keys; for EC keys, BouncyCastle's `ECIES` cipher as Pulsar builds it
//! (`IESParameterSpec(null, null, 128)`, see [`ecies_decrypt`]). The consumer
//! tries the message's keys in order and uses the first whose private half it
//! holds and which unwraps.

use std::fmt;

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm, Nonce};
use hmac::{Hmac, Mac};
use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::pkcs8::DecodePrivateKey;
use rsa::{Oaep, RsaPrivateKey};
use sha1::{Digest, Sha1};

use super::metadata::MessageMetadataView;
use crate::error::{EntryError, Result};

/// The name that stands for every key name (a key reader that gives the
/// same private key whatever the producer called it).
pub const ANY_KEY: &str = "*";

/// Bytes of the GCM IV Pulsar's producer writes as `encryption_param`.
const IV_LEN: usize = 12;

enum PrivateKey {
    Rsa(Box<RsaPrivateKey>),
    Ec(EcKey),
}

/// Private keys by name, as a `CryptoKeyReader` gives them. Its `Debug`
/// shows the names only, never key material.
#[derive(Default)]
pub struct CryptoKeys {
    keys: Vec<(String, PrivateKey)>,
}

impl fmt::Debug for CryptoKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CryptoKeys")
            .field("names", &self.names().collect::<Vec<_>>())
            .finish()
    }
}

fn options(text: String) -> EntryError {
    EntryError::Options(text)
}

impl CryptoKeys {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the private key `name` from PEM text: PKCS#1 (`RSA PRIVATE KEY`)
    /// or PKCS#8 (`PRIVATE KEY`). An EC key is kept, to say why it cannot
    /// decrypt. An error names the key, never its contents.
    pub fn add_pem(&mut self, name: &str, pem: &[u8]) -> Result<()> {
        if name.is_empty() {
            return Err(options("crypto key: a key name is empty".into()));
        }
        if self.keys.iter().any(|(n, _)| n == name) {
            return Err(options(format!("crypto key {name:?} is given twice")));
        }
        let text = std::str::from_utf8(pem)
            .map_err(|_| options(format!("crypto key {name:?}: not PEM text")))?;
        // `openssl ecparam -genkey` (Pulsar's documented way) writes an EC PARAMETERS block first.
        let label = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("-----BEGIN "))
            .filter_map(|l| l.strip_suffix("-----"))
            .find(|l| *l != EC_PARAMETERS)
            .ok_or_else(|| options(format!("crypto key {name:?}: no PEM block found")))?;
        let bad = |what: &str| options(format!("crypto key {name:?}: {what}"));
        let der = pem_body(text, label).ok_or_else(|| bad("the PEM block is not valid base64"))?;
        let key = match label {
            "RSA PRIVATE KEY" => RsaPrivateKey::from_pkcs1_der(&der)
                .map(|k| PrivateKey::Rsa(Box::new(k)))
                .map_err(|_| bad("not a valid PKCS#1 RSA key"))?,
            "PRIVATE KEY" => match RsaPrivateKey::from_pkcs8_der(&der) {
                Ok(k) => PrivateKey::Rsa(Box::new(k)),
                Err(_) => PrivateKey::Ec(
                    EcKey::from_pkcs8(&der)
                        .map_err(|why| bad(&format!("not an RSA or EC private key ({why})")))?,
                ),
            },
            "EC PRIVATE KEY" => PrivateKey::Ec(
                EcKey::from_sec1(&der, None)
                    .map_err(|why| bad(&format!("not a valid EC key ({why})")))?,
            ),
            other => {
                return Err(options(format!(
                    "crypto key {name:?}: a {other} PEM block is not a private key \
                     (expected RSA PRIVATE KEY, EC PRIVATE KEY or PRIVATE KEY)"
                )))
            }
        };
        self.keys.push((name.to_string(), key));
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The key names, in the order they were added.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|(n, _)| n.as_str())
    }

    fn key(&self, name: &str) -> Option<&PrivateKey> {
        let find = |n: &str| self.keys.iter().find(|(k, _)| k == n).map(|(_, v)| v);
        find(name).or_else(|| find(ANY_KEY))
    }

    /// The payload of an encrypted entry, decrypted. The error says why it
    /// could not be: no key held for any of the message's key names, a key
    /// that did not unwrap the data key, a bad IV, or a payload whose tag
    /// does not verify.
    pub fn decrypt(
        &self,
        md: &MessageMetadataView<'_>,
        payload: &[u8],
    ) -> std::result::Result<Vec<u8>, String> {
        let iv = md
            .encryption_param
            .ok_or("cannot decrypt: the metadata has no encryption_param (the IV)")?;
        if iv.len() != IV_LEN {
            return Err(format!(
                "cannot decrypt: encryption_param is {} bytes, not a {IV_LEN}-byte AES-GCM IV",
                iv.len()
            ));
        }
        // As Java's consumer does, every data key the message's names unwrap is
        // tried on the payload, in order, until one opens it: a producer that
        // replaced its data key while wrapping it can leave names wrapping
        // different keys.
        let mut tried = Vec::new();
        for k in md.encryption_keys() {
            let data_key = match self.key(k.key) {
                None => {
                    tried.push(format!("{:?}: no private key given", k.key));
                    continue;
                }
                Some(PrivateKey::Ec(ec)) => ecies_decrypt(ec, k.value).ok_or("EC"),
                Some(PrivateKey::Rsa(rsa)) => rsa
                    .decrypt(Oaep::new::<sha1::Sha1>(), k.value)
                    .map_err(|_| "RSA"),
            };
            let key = match data_key {
                Ok(key) => key,
                Err(kind) => {
                    tried.push(format!(
                        "{:?}: the {kind} key did not unwrap the data key (another key pair?)",
                        k.key
                    ));
                    continue;
                }
            };
            match open(&key, iv, payload) {
                Ok(plain) => return Ok(plain),
                Err(why) => tried.push(format!("{:?}: {why}", k.key)),
            }
        }
        Err(format!("cannot decrypt: {}", tried.join("; ")))
    }
}

/// The payload decrypted with AES-GCM under `key` (AES-128 or AES-256) and the 12-byte `iv`.
fn open(key: &[u8], iv: &[u8], payload: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let nonce = Nonce::from_slice(iv);
    let out = match key.len() {
        16 => Aes128Gcm::new_from_slice(key).map(|c| c.decrypt(nonce, payload)),
        32 => Aes256Gcm::new_from_slice(key).map(|c| c.decrypt(nonce, payload)),
        n => {
            return Err(format!(
                "the data key is {n} bytes, not an AES-128 or AES-256 key"
            ))
        }
    };
    match out {
        Ok(Ok(plain)) => Ok(plain),
        _ => {
            Err("the AES-GCM tag does not verify with its data key (payload or key altered)".into())
        }
    }
}

const EC_PARAMETERS: &str = "EC PARAMETERS";

/// The DER bytes of a PEM text's first block labelled `label`.
fn pem_body(text: &str, label: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let (begin, end) = (
        format!("-----BEGIN {label}-----"),
        format!("-----END {label}-----"),
    );
    let mut inside = false;
    let mut b64 = String::new();
    for line in text.lines().map(str::trim) {
        if line == begin {
            inside = true;
        } else if inside && line == end {
            break;
        } else if inside && !line.contains(':') {
            b64.push_str(line);
        }
    }
    base64::engine::general_purpose::STANDARD.decode(b64).ok()
}

/// One DER element of `input`: its tag, contents and what follows it.
fn der(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |a, &b| (a << 8) | b as usize);
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const OCTETS: u8 = 0x04;
const OID: u8 = 0x06;

/// The curves Pulsar's EC keys are made on, by what names them in a key.
#[derive(Clone, Copy)]
enum Curve {
    P256,
    P384,
    P521,
    K256,
}

impl Curve {
    /// From a named curve's OID, or explicit parameters (as `openssl ecparam
    /// -param_enc explicit`, Pulsar's documented way, writes them) by their prime.
    fn from_params(tag: u8, body: &[u8]) -> Result<Curve, &'static str> {
        const P256_OID: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
        const P384_OID: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];
        const P521_OID: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x23];
        const K256_OID: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x0a];
        match tag {
            OID => match body {
                P256_OID => Ok(Curve::P256),
                P384_OID => Ok(Curve::P384),
                P521_OID => Ok(Curve::P521),
                K256_OID => Ok(Curve::K256),
                _ => Err("a curve other than P-256, P-384, P-521 or secp256k1"),
            },
            SEQUENCE => {
                // ECParameters: version, fieldID { prime-field OID, prime }, curve, base, order...
                let (_, _, rest) = der(body).ok_or("explicit curve parameters cut short")?;
                let (_, field, _) = der(rest).ok_or("explicit curve parameters cut short")?;
                let (_, _, rest) = der(field).ok_or("explicit curve parameters cut short")?;
                let (_, prime, _) = der(rest).ok_or("explicit curve parameters cut short")?;
                let prime: Vec<u8> = prime.iter().copied().skip_while(|&b| b == 0).collect();
                let hex: String = prime.iter().map(|b| format!("{b:02x}")).collect();
                match hex.as_str() {
                    "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff" => Ok(Curve::P256),
                    "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000ffffffff" => {
                        Ok(Curve::P384)
                    }
                    "fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f" => Ok(Curve::K256),
                    // 2^521 - 1: 0x01 and 65 bytes of 0xff.
                    h if h.len() == 132 && h.starts_with("01") && h[2..].bytes().all(|c| c == b'f') => {
                        Ok(Curve::P521)
                    }
                    _ => Err("explicit parameters of a curve other than P-256, P-384, P-521 or secp256k1"),
                }
            }
            _ => Err("unreadable curve parameters"),
        }
    }
}

/// An EC private key on one of the supported curves.
enum EcKey {
    P256(p256::SecretKey),
    P384(p384::SecretKey),
    P521(p521::SecretKey),
    K256(k256::SecretKey),
}

impl EcKey {
    /// A SEC1 `ECPrivateKey` (the `EC PRIVATE KEY` PEM block, or inside PKCS#8),
    /// its curve from its own parameters or from `outer` (PKCS#8's).
    fn from_sec1(der_bytes: &[u8], outer: Option<Curve>) -> Result<EcKey, &'static str> {
        let cut = "cut short";
        let (tag, body, _) = der(der_bytes).ok_or(cut)?;
        if tag != SEQUENCE {
            return Err("not a SEC1 ECPrivateKey");
        }
        let (_, _, rest) = der(body).filter(|e| e.0 == INTEGER).ok_or(cut)?;
        let (tag, scalar, mut rest) = der(rest).ok_or(cut)?;
        if tag != OCTETS {
            return Err("no private scalar");
        }
        let mut curve = outer;
        while let Some((tag, inner, next)) = der(rest) {
            if tag == 0xa0 {
                let (t, params, _) = der(inner).ok_or(cut)?;
                curve = Some(Curve::from_params(t, params)?);
            }
            rest = next;
        }
        let bad = |_| "the private scalar is not valid on its curve";
        Ok(match curve.ok_or("no curve named")? {
            Curve::P256 => EcKey::P256(p256::SecretKey::from_slice(scalar).map_err(bad)?),
            Curve::P384 => EcKey::P384(p384::SecretKey::from_slice(scalar).map_err(bad)?),
            Curve::P521 => EcKey::P521(p521::SecretKey::from_slice(scalar).map_err(bad)?),
            Curve::K256 => EcKey::K256(k256::SecretKey::from_slice(scalar).map_err(bad)?),
        })
    }

    /// A PKCS#8 `PrivateKeyInfo` of an EC key.
    fn from_pkcs8(der_bytes: &[u8]) -> Result<EcKey, &'static str> {
        const EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
        let cut = "cut short";
        let (_, body, _) = der(der_bytes).filter(|e| e.0 == SEQUENCE).ok_or(cut)?;
        let (_, _, rest) = der(body).filter(|e| e.0 == INTEGER).ok_or(cut)?;
        let (_, alg, rest) = der(rest).filter(|e| e.0 == SEQUENCE).ok_or(cut)?;
        let (_, oid, params) = der(alg).filter(|e| e.0 == OID).ok_or(cut)?;
        if oid != EC_PUBLIC_KEY {
            return Err("neither RSA nor EC");
        }
        let curve = match der(params) {
            Some((t, p, _)) => Some(Curve::from_params(t, p)?),
            None => None,
        };
        let (_, inner, _) = der(rest).filter(|e| e.0 == OCTETS).ok_or(cut)?;
        EcKey::from_sec1(inner, curve)
    }

    /// Bytes of a field element: the length of the shared secret and of a point's coordinates.
    fn field_size(&self) -> usize {
        match self {
            EcKey::P256(_) | EcKey::K256(_) => 32,
            EcKey::P384(_) => 48,
            EcKey::P521(_) => 66,
        }
    }

    /// The x-coordinate of this key times the point `sec1` (ECDH, as BouncyCastle's
    /// `ECDHBasicAgreement`), or None when `sec1` is not a point of the curve.
    fn shared_x(&self, sec1: &[u8]) -> Option<Vec<u8>> {
        macro_rules! agree {
            ($crate_:ident, $k:expr) => {{
                let public = $crate_::PublicKey::from_sec1_bytes(sec1).ok()?;
                let shared =
                    $crate_::ecdh::diffie_hellman($k.to_nonzero_scalar(), public.as_affine());
                Some(shared.raw_secret_bytes().to_vec())
            }};
        }
        match self {
            EcKey::P256(k) => agree!(p256, k),
            EcKey::P384(k) => agree!(p384, k),
            EcKey::P521(k) => agree!(p521, k),
            EcKey::K256(k) => agree!(k256, k),
        }
    }
}

/// KDF2 with SHA-1 (ISO 18033-2, BouncyCastle's `KDF2BytesGenerator`): `len`
/// bytes of SHA-1(`z` || counter), the counter a 4-byte big-endian from 1.
fn kdf2_sha1(z: &[u8], len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 20);
    let mut counter = 1u32;
    while out.len() < len {
        let mut h = Sha1::new();
        h.update(z);
        h.update(counter.to_be_bytes());
        out.extend_from_slice(&h.finalize());
        counter += 1;
    }
    out.truncate(len);
    out
}

/// The data key wrapped by BouncyCastle's `ECIES` cipher with Pulsar's
/// `IESParameterSpec(null, null, 128)`: `V || C || T`, where `V` is the
/// sender's ephemeral public key (a SEC1 point), `Z` the x-coordinate of the
/// shared point, `K = KDF2-SHA1(V || Z)` of `len(C) + 16` bytes, the MAC key
/// its first 16 bytes and the XOR stream the rest, and `T` the HMAC-SHA1 of
/// `C` followed by 8 zero bytes (the length tag of no encoding vector). None
/// when the tag does not verify (another key) or the input is malformed.
fn ecies_decrypt(key: &EcKey, data: &[u8]) -> Option<Vec<u8>> {
    const MAC_KEY: usize = 16;
    const TAG: usize = 20;
    let fs = key.field_size();
    let v_len = match data.first()? {
        0x02 | 0x03 => fs + 1,
        0x04 => 2 * fs + 1,
        _ => return None,
    };
    if data.len() < v_len + TAG {
        return None;
    }
    let (v, rest) = data.split_at(v_len);
    let (c, t) = rest.split_at(rest.len() - TAG);
    let z = key.shared_x(v)?;
    let k = kdf2_sha1(&[v, &z].concat(), c.len() + MAC_KEY);
    let (mac_key, stream) = k.split_at(MAC_KEY);
    let mut mac = <Hmac<Sha1> as Mac>::new_from_slice(mac_key).ok()?;
    mac.update(c);
    mac.update(&[0u8; 8]);
    mac.verify_slice(t).ok()?;
    Some(c.iter().zip(stream).map(|(a, b)| a ^ b).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_keys_are_named_errors_that_show_no_key_text() {
        let mut keys = CryptoKeys::new();
        let err = keys
            .add_pem(
                "k",
                b"-----BEGIN RSA PRIVATE KEY-----\nc2VjcmV0\n-----END RSA PRIVATE KEY-----\n",
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"k\"") && err.contains("PKCS#1"), "{err}");
        assert!(!err.contains("c2VjcmV0"), "{err}");
        let err = keys.add_pem("k", b"no pem here").unwrap_err().to_string();
        assert!(err.contains("no PEM block"), "{err}");
        let err = keys
            .add_pem(
                "k",
                b"-----BEGIN PUBLIC KEY-----\nAA==\n-----END PUBLIC KEY-----\n",
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a private key"), "{err}");
        let err = keys
            .add_pem(
                "ec",
                b"-----BEGIN EC PRIVATE KEY-----\nAA==\n-----END EC PRIVATE KEY-----\n",
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a valid EC key"), "{err}");
        assert_eq!(format!("{keys:?}"), "CryptoKeys { names: [] }");
    }

    /// BouncyCastle's ECIES as Pulsar's producer wraps a data key for `public`,
    /// with a fixed ephemeral scalar (a test has no need of a random one).
    fn ecies_wrap(public: &p256::PublicKey, ephemeral: u8, data_key: &[u8]) -> Vec<u8> {
        use p256::elliptic_curve::sec1::ToEncodedPoint;
        let eph = p256::SecretKey::from_slice(&[ephemeral; 32]).unwrap();
        let v = eph.public_key().to_encoded_point(false).as_bytes().to_vec();
        let z = p256::ecdh::diffie_hellman(eph.to_nonzero_scalar(), public.as_affine());
        let k = kdf2_sha1(
            &[&v[..], &z.raw_secret_bytes()[..]].concat(),
            data_key.len() + 16,
        );
        let c: Vec<u8> = data_key.iter().zip(&k[16..]).map(|(a, b)| a ^ b).collect();
        let mut mac = <Hmac<Sha1> as Mac>::new_from_slice(&k[..16]).unwrap();
        mac.update(&c);
        mac.update(&[0u8; 8]);
        [v, c, mac.finalize().into_bytes().to_vec()].concat()
    }

    #[test]
    fn names_that_wrap_different_data_keys_are_each_tried_on_the_payload() {
        // A Java producer that replaces its data key while sending (its key task and
        // `encrypt` share no lock) can list a name wrapping the old key before one
        // wrapping the key the payload was encrypted with.
        let secret = p256::SecretKey::from_slice(&[3u8; 32]).unwrap();
        let (old, new) = ([1u8; 32], [2u8; 32]);
        let iv = [9u8; IV_LEN];
        let payload = Aes256Gcm::new_from_slice(&new)
            .unwrap()
            .encrypt(Nonce::from_slice(&iv), &b"the message"[..])
            .unwrap();
        let md = crate::proto::MessageMetadata {
            producer_name: "p".into(),
            encryption_keys: vec![
                crate::proto::EncryptionKeys {
                    key: "first".into(),
                    value: ecies_wrap(&secret.public_key(), 5, &old),
                    metadata: vec![],
                },
                crate::proto::EncryptionKeys {
                    key: "second".into(),
                    value: ecies_wrap(&secret.public_key(), 6, &new),
                    metadata: vec![],
                },
            ],
            encryption_param: Some(iv.to_vec()),
            ..Default::default()
        };
        let raw = prost::Message::encode_to_vec(&md);
        let view = MessageMetadataView::parse(&raw, 0).unwrap();
        let key = || PrivateKey::Ec(EcKey::P256(secret.clone()));
        let mut both = CryptoKeys::new();
        both.keys.push(("first".into(), key()));
        both.keys.push(("second".into(), key()));
        assert_eq!(both.decrypt(&view, &payload).unwrap(), b"the message");
        let mut any = CryptoKeys::new();
        any.keys.push((ANY_KEY.into(), key()));
        assert_eq!(any.decrypt(&view, &payload).unwrap(), b"the message");
        // Holding the first name only, the row says which name failed and how.
        let mut first = CryptoKeys::new();
        first.keys.push(("first".into(), key()));
        let err = first.decrypt(&view, &payload).unwrap_err();
        assert_eq!(
            err,
            "cannot decrypt: \"first\": the AES-GCM tag does not verify with its data key \
             (payload or key altered); \"second\": no private key given"
        );
    }

    #[test]
    fn kdf2_and_ecies_framing() {
        // KDF2-SHA1 of "abc": SHA-1("abc" || 00000001) || SHA-1("abc" || 00000002) ...
        let out = kdf2_sha1(b"abc", 25);
        let mut h = Sha1::new();
        h.update(b"abc\x00\x00\x00\x01");
        assert_eq!(&out[..20], &h.finalize()[..]);
        assert_eq!(out.len(), 25);
        // Malformed wrapped keys are None, never a panic.
        let key = EcKey::P256(p256::SecretKey::from_slice(&[7u8; 32]).unwrap());
        for bad in [
            &b""[..],
            &[0x04; 10],
            &[0x05; 100],
            &[0x02; 40],
            &[0x04; 200],
        ] {
            assert!(ecies_decrypt(&key, bad).is_none());
        }
    }
}
