//! End-to-end encrypted messages, decrypted as Pulsar's Java consumer does
//! (`MessageCryptoBc`, spec: `../shared/spec` on MessageMetadata's
//! `encryption_keys` and `encryption_param`).
//!
//! A producer encrypts each entry's payload (after compression, before
//! chunking) with a random AES data key in GCM mode: the IV is the metadata's
//! `encryption_param` (12 bytes) and the 16-byte tag follows the ciphertext.
//! The data key is stored once per consumer key in `encryption_keys`, wrapped
//! with that key's public half: RSA-OAEP with SHA-1 and MGF1-SHA-1 for RSA
//! keys. The consumer tries the message's keys in order and uses the first
//! whose private half it holds and which unwraps.
//!
//! EC keys (BouncyCastle's ECIES) are recognised and refused with a reason:
//! a message wrapped only for them stays encrypted.

use std::fmt;

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm, Nonce};
use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::pkcs8::DecodePrivateKey;
use rsa::{Oaep, RsaPrivateKey};

use super::metadata::MessageMetadataView;
use crate::error::{EntryError, Result};

/// The name that stands for every key name (a key reader that gives the
/// same private key whatever the producer called it).
pub const ANY_KEY: &str = "*";

/// Bytes of the GCM IV Pulsar's producer writes as `encryption_param`.
const IV_LEN: usize = 12;

enum PrivateKey {
    Rsa(Box<RsaPrivateKey>),
    /// A key this reader cannot use, and why.
    Unsupported(&'static str),
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
        let label = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("-----BEGIN "))
            .and_then(|l| l.strip_suffix("-----"))
            .ok_or_else(|| options(format!("crypto key {name:?}: no PEM block found")))?;
        let key = match label {
            "RSA PRIVATE KEY" => RsaPrivateKey::from_pkcs1_pem(text)
                .map(|k| PrivateKey::Rsa(Box::new(k)))
                .map_err(|_| options(format!("crypto key {name:?}: not a valid PKCS#1 RSA key")))?,
            "PRIVATE KEY" => match RsaPrivateKey::from_pkcs8_pem(text) {
                Ok(k) => PrivateKey::Rsa(Box::new(k)),
                Err(rsa::pkcs8::Error::PublicKey(_)) | Err(rsa::pkcs8::Error::KeyMalformed) => {
                    PrivateKey::Unsupported(EC_UNSUPPORTED)
                }
                Err(_) => {
                    return Err(options(format!(
                        "crypto key {name:?}: not a valid PKCS#8 private key"
                    )))
                }
            },
            "EC PRIVATE KEY" => PrivateKey::Unsupported(EC_UNSUPPORTED),
            other => {
                return Err(options(format!(
                    "crypto key {name:?}: a {other} PEM block is not a private key \
                     (expected RSA PRIVATE KEY or PRIVATE KEY)"
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
        let mut tried = Vec::new();
        let mut data_key = None;
        for k in md.encryption_keys() {
            match self.key(k.key) {
                None => tried.push(format!("{:?}: no private key given", k.key)),
                Some(PrivateKey::Unsupported(why)) => tried.push(format!("{:?}: {why}", k.key)),
                Some(PrivateKey::Rsa(rsa)) => {
                    match rsa.decrypt(Oaep::new::<sha1::Sha1>(), k.value) {
                        Ok(key) => {
                            data_key = Some(key);
                            break;
                        }
                        Err(_) => tried.push(format!(
                            "{:?}: the RSA key did not unwrap the data key (another key pair?)",
                            k.key
                        )),
                    }
                }
            }
        }
        let Some(key) = data_key else {
            return Err(format!("cannot decrypt: {}", tried.join("; ")));
        };
        let iv = md
            .encryption_param
            .ok_or("cannot decrypt: the metadata has no encryption_param (the IV)")?;
        if iv.len() != IV_LEN {
            return Err(format!(
                "cannot decrypt: encryption_param is {} bytes, not a {IV_LEN}-byte AES-GCM IV",
                iv.len()
            ));
        }
        let nonce = Nonce::from_slice(iv);
        let out = match key.len() {
            16 => Aes128Gcm::new_from_slice(&key).map(|c| c.decrypt(nonce, payload)),
            32 => Aes256Gcm::new_from_slice(&key).map(|c| c.decrypt(nonce, payload)),
            n => {
                return Err(format!(
                    "cannot decrypt: the data key is {n} bytes, not an AES-128 or AES-256 key"
                ))
            }
        };
        match out {
            Ok(Ok(plain)) => Ok(plain),
            _ => Err(
                "cannot decrypt: the AES-GCM tag does not verify (payload or data key altered)"
                    .into(),
            ),
        }
    }
}

const EC_UNSUPPORTED: &str =
    "an EC key: data keys wrapped with ECIES are not supported yet (use an RSA key pair)";

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
        keys.add_pem(
            "ec",
            b"-----BEGIN EC PRIVATE KEY-----\nAA==\n-----END EC PRIVATE KEY-----\n",
        )
        .unwrap();
        assert_eq!(format!("{keys:?}"), "CryptoKeys { names: [\"ec\"] }");
        assert!(keys
            .add_pem("ec", b"x")
            .unwrap_err()
            .to_string()
            .contains("twice"));
    }
}
