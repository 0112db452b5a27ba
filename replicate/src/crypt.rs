//! Client-side encryption of everything shipped (`replication.encryption_key_file`).
//!
//! Each object body is sealed with XChaCha20-Poly1305 under the 256-bit key of the key file,
//! with a fresh random 192-bit nonce (random nonces of that size never collide in practice) and
//! the object's key below the prefix as associated data, so that an object moved to another key,
//! cut, extended or replaced by a plain one does not open. The bucket sees sizes, key names
//! (origins, session ids, seqs, event names, content digests) and timing; nothing else.
//!
//! Stored form: `LOAENC\0\x01` (8 bytes; the last is the format version), the nonce (24 bytes),
//! then the ciphertext with its 16-byte tag. A reader with a key refuses anything else
//! (`E_REPLICA_CORRUPT`), a plain object included; a reader without a key cannot parse a sealed
//! index and refuses it the same way.
//!
//! The key file lies outside the workspace (whoever can read the workspace must not read the
//! replica through it) and outside the bucket; it holds 64 hex digits (a trailing newline is
//! allowed), is read without following a symlink at its last component, and must not be
//! readable by group or others (`E_KEY_INVALID`). Make one with `openssl rand -hex 32 > key` and
//! `chmod 600 key`; every machine sharing the bucket needs the same key.

use std::path::Path;

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use loa_core::{LoaError, Result};
use zeroize::Zeroizing;

/// The magic and format version of a sealed object.
pub const MAGIC: &[u8; 8] = b"LOAENC\0\x01";
const NONCE_LEN: usize = 24;
const TAG_LEN: usize = 16;
/// Bytes a sealed object has beyond its plaintext.
pub const OVERHEAD: u64 = (MAGIC.len() + NONCE_LEN + TAG_LEN) as u64;
const AAD_DOMAIN: &[u8] = b"loa-replicate object\0";

/// The cipher of a key file.
pub struct Sealer {
  cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for Sealer {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.write_str("Sealer(..)")
  }
}

fn key_invalid(reason: &str) -> LoaError {
  LoaError::KeyInvalid(format!("replication.encryption_key_file: {reason}"))
}

impl Sealer {
  /// Reads the key file at `path` (absolute, or relative to the current directory), which must
  /// not lie inside `workspace`.
  pub fn load(path: &Path, workspace: &Path) -> Result<Sealer> {
    let absolute = std::path::absolute(path).map_err(|e| LoaError::io("resolve", path, e))?;
    let canonical_ws = std::fs::canonicalize(workspace).map_err(|e| LoaError::io("resolve", workspace, e))?;
    let canonical_key = absolute
      .parent()
      .and_then(|p| std::fs::canonicalize(p).ok())
      .map(|p| p.join(absolute.file_name().unwrap_or_default()))
      .unwrap_or(absolute.clone());
    if canonical_key.starts_with(&canonical_ws) {
      return Err(LoaError::ConfigInvalid {
        key: "replication.encryption_key_file".into(),
        reason: "the key file must lie outside the workspace".into(),
      });
    }
    let (dir, name) = loa_core::fsutil::open_parent(&absolute)?;
    let file = dir.open_file(&name, loa_core::fsutil::OpenMode::READ)?;
    let mode = {
      use std::os::unix::fs::PermissionsExt;
      file.file().metadata().map_err(|e| LoaError::io("stat", &absolute, e))?.permissions().mode()
    };
    if mode & 0o077 != 0 {
      return Err(key_invalid("the key file is readable by group or others (chmod 600 it)"));
    }
    let text = Zeroizing::new(file.read_to_end_bounded(1024)?);
    let trimmed: &[u8] = text.strip_suffix(b"\n").unwrap_or(&text);
    if trimmed.len() != 64 {
      return Err(key_invalid("must hold 64 hex digits (openssl rand -hex 32)"));
    }
    let mut key = Zeroizing::new([0u8; 32]);
    hex::decode_to_slice(trimmed, key.as_mut_slice())
      .map_err(|_| key_invalid("must hold 64 hex digits (openssl rand -hex 32)"))?;
    let cipher = XChaCha20Poly1305::new_from_slice(key.as_slice()).map_err(|_| key_invalid("not a 256-bit key"))?;
    Ok(Sealer { cipher })
  }

  #[cfg(test)]
  fn from_key(key: &[u8; 32]) -> Sealer {
    Sealer { cipher: XChaCha20Poly1305::new_from_slice(key).unwrap() }
  }

  fn aad(object: &str) -> Vec<u8> {
    [AAD_DOMAIN, object.as_bytes()].concat()
  }

  /// The stored form of `plaintext` at `object` (its key below the prefix).
  pub fn seal(&self, object: &str, plaintext: &[u8]) -> Result<Vec<u8>> {
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::fill(&mut nonce).map_err(|e| LoaError::Internal(format!("no randomness from the OS: {e}")))?;
    let aad = Self::aad(object);
    let sealed = self
      .cipher
      .encrypt(XNonce::from_slice(&nonce), Payload { msg: plaintext, aad: &aad })
      .map_err(|_| LoaError::Internal("encryption failed".into()))?;
    Ok([MAGIC.as_slice(), &nonce, &sealed].concat())
  }

  /// The plaintext of the stored `bytes` at `object`; `E_REPLICA_CORRUPT` (naming `shown`)
  /// unless it is a sealed object of this key at this key name, untouched.
  pub fn open(&self, object: &str, shown: &str, bytes: &[u8]) -> Result<Vec<u8>> {
    let corrupt = |reason: &str| LoaError::ReplicaCorrupt { key: shown.to_string(), reason: reason.into() };
    if (bytes.len() as u64) < OVERHEAD || !bytes.starts_with(MAGIC) {
      return Err(corrupt("not an encrypted object (replication.encryption_key_file is set)"));
    }
    let nonce = XNonce::from_slice(&bytes[MAGIC.len()..MAGIC.len() + NONCE_LEN]);
    let aad = Self::aad(object);
    self
      .cipher
      .decrypt(nonce, Payload { msg: &bytes[MAGIC.len() + NONCE_LEN..], aad: &aad })
      .map_err(|_| corrupt("does not decrypt: another key, another object's body, or tampered"))
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn sealed_objects_open_only_with_their_key_at_their_name() {
    let a = Sealer::from_key(&[7; 32]);
    let b = Sealer::from_key(&[8; 32]);
    let sealed = a.seal("origins/m/index.json", b"{}").unwrap();
    assert_eq!(sealed.len() as u64, 2 + OVERHEAD);
    assert_eq!(a.open("origins/m/index.json", "k", &sealed).unwrap(), b"{}");
    // Fresh nonce every time.
    assert_ne!(a.seal("origins/m/index.json", b"{}").unwrap(), sealed);
    let code = |r: Result<Vec<u8>>| r.unwrap_err().code();
    assert_eq!(code(b.open("origins/m/index.json", "k", &sealed)), "E_REPLICA_CORRUPT");
    assert_eq!(code(a.open("origins/n/index.json", "k", &sealed)), "E_REPLICA_CORRUPT");
    assert_eq!(code(a.open("origins/m/index.json", "k", b"{}")), "E_REPLICA_CORRUPT");
    let mut flipped = sealed.clone();
    *flipped.last_mut().unwrap() ^= 1;
    assert_eq!(code(a.open("origins/m/index.json", "k", &flipped)), "E_REPLICA_CORRUPT");
    assert_eq!(code(a.open("origins/m/index.json", "k", &sealed[..sealed.len() - 1])), "E_REPLICA_CORRUPT");
  }

  #[test]
  fn key_files_are_checked() {
    use std::os::unix::fs::PermissionsExt;
    let outside = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let write = |path: &Path, text: &str, mode: u32| {
      std::fs::write(path, text).unwrap();
      std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let good = outside.path().join("key");
    write(&good, &format!("{}\n", "ab".repeat(32)), 0o600);
    assert!(Sealer::load(&good, ws.path()).is_ok());
    write(&good, &"ab".repeat(32), 0o644);
    assert_eq!(Sealer::load(&good, ws.path()).unwrap_err().code(), "E_KEY_INVALID");
    write(&good, "short", 0o600);
    assert_eq!(Sealer::load(&good, ws.path()).unwrap_err().code(), "E_KEY_INVALID");
    let inside = ws.path().join("key");
    write(&inside, &"ab".repeat(32), 0o600);
    assert_eq!(Sealer::load(&inside, ws.path()).unwrap_err().code(), "E_CONFIG_INVALID");
    let link = outside.path().join("link");
    std::os::unix::fs::symlink(&inside, &link).unwrap();
    assert!(Sealer::load(&link, ws.path()).is_err(), "a symlinked key file was followed");
  }
}
