//! Signed checkpoints: the head of the chain (seq, hash, time) signed with a key ring's signing
//! key, so that entries cut off the end are detected (`E_AUDIT_TRUNCATED`).
//!
//! `checkpoint.json` beside the segments holds the newest one, written atomically as the
//! RFC 8785 canonical JSON of
//! `{ version: 1, seq, hash, ts, alg, signature: { algorithm: "ed25519", keyId, value } }`, where
//! the signature is Ed25519 over `AUDIT_CHECKPOINT_DOMAIN || JCS(checkpoint without
//! "signature")`. A reader accepts version 1 only, in canonical form only (so no byte can change
//! unnoticed), with no unknown member anywhere.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Head;
use crate::error::{LoaError, Result};
use crate::fsutil::StateDir;
use crate::jcs;
use crate::sign::keys::KeyRing;
use crate::sign::manifest::TrustedKey;
use crate::sign::{sign_with_domain, verify_with_domain, AUDIT_CHECKPOINT_DOMAIN};

/// The file name of the checkpoint, in the log's directory.
pub const CHECKPOINT_FILE: &str = "checkpoint.json";
/// Largest checkpoint file read (one is about 300 bytes).
pub const MAX_CHECKPOINT_BYTES: u64 = 64 * 1024;
const VERSION: u32 = 1;

/// A signed head of the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Checkpoint {
  pub version: u32,
  /// The last entry's seq when the checkpoint was made (0 for an empty log).
  pub seq: u64,
  /// That entry's hash ([`super::GENESIS`] for an empty log).
  pub hash: String,
  /// When it was made (RFC 3339, UTC).
  pub ts: String,
  /// The log's hash algorithm (`sha256` or `hmac-sha256`).
  pub alg: String,
  pub signature: CheckpointSignature,
}

/// Ed25519 over the domain prefix and the canonical checkpoint without this member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckpointSignature {
  pub algorithm: String,
  pub key_id: String,
  /// 64 bytes, 128 lower-case hex characters.
  pub value: String,
}

fn is_hex(text: &str, len: usize) -> bool {
  text.len() == len && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Checkpoint {
  /// Signs `head` with `ring`'s signing key (rotated first if due).
  pub fn sign(head: &Head, alg: &str, ring: &KeyRing) -> Result<Checkpoint> {
    let (info, key) = ring.signing_key(true)?;
    let mut checkpoint = Checkpoint {
      version: VERSION,
      seq: head.seq,
      hash: head.hash.clone(),
      ts: crate::timestamp::format_ms(crate::timestamp::now_ms()),
      alg: alg.to_string(),
      signature: CheckpointSignature { algorithm: "ed25519".into(), key_id: info.key_id, value: String::new() },
    };
    checkpoint.signature.value = hex::encode(sign_with_domain(&key, AUDIT_CHECKPOINT_DOMAIN, &checkpoint.body()?));
    Ok(checkpoint)
  }

  /// What the signature covers.
  fn body(&self) -> Result<Vec<u8>> {
    let value = serde_json::to_value(self).map_err(|e| LoaError::Internal(e.to_string()))?;
    let Value::Object(map) = value else { return Err(LoaError::Internal("a checkpoint is an object".into())) };
    jcs::object_to_vec_without(&map, "signature")
  }

  /// The key id whose signature verifies, or why it does not.
  pub fn verify_signature(&self, keys: &[TrustedKey]) -> std::result::Result<String, String> {
    if self.signature.algorithm != "ed25519" {
      return Err("unsupported signature algorithm".into());
    }
    let id = &self.signature.key_id;
    let key = keys
      .iter()
      .find(|k| &k.key_id == id)
      .ok_or(format!("signed by key {id}, which is not among the verification keys (unknown, expired or revoked)"))?;
    let bytes = hex::decode(&self.signature.value).map_err(|_| "signature value is not hex".to_string())?;
    let body = self.body().map_err(|e| e.to_string())?;
    verify_with_domain(&key.public_key, AUDIT_CHECKPOINT_DOMAIN, &body, &bytes)
      .map_err(|why| format!("{why} (key {id})"))?;
    Ok(id.clone())
  }

  /// `E_AUDIT_TRUNCATED` when a log whose chain ends at `head` does not reach this checkpoint;
  /// `E_SIGNATURE_INVALID` when it ends exactly there with another hash (rewritten).
  pub fn check_reached_by(&self, head: &Head) -> Result<()> {
    if head.seq < self.seq {
      return Err(LoaError::AuditTruncated {
        log_seq: head.seq,
        anchored_seq: self.seq,
        anchor: CHECKPOINT_FILE.into(),
      });
    }
    if head.seq == self.seq && head.hash != self.hash {
      return Err(LoaError::SignatureInvalid(format!(
        "the audit entry at seq {} is not the one its checkpoint signed (the log was rewritten)",
        self.seq
      )));
    }
    Ok(())
  }

  /// Writes it atomically as canonical JSON and a newline.
  pub(super) fn write(&self, dir: &StateDir) -> Result<()> {
    let value = serde_json::to_value(self).map_err(|e| LoaError::Internal(e.to_string()))?;
    let mut bytes = jcs::to_vec(&value)?;
    bytes.push(b'\n');
    dir.write_atomic(CHECKPOINT_FILE, &bytes, None)
  }

  fn parse(bytes: &[u8]) -> std::result::Result<Checkpoint, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
    let value = jcs::parse_strict(text).map_err(|e| e.to_string())?;
    let canonical = jcs::to_vec(&value).map_err(|e| e.to_string())?;
    if bytes.strip_suffix(b"\n").unwrap_or(bytes) != canonical.as_slice() {
      return Err("not in canonical form (changed after it was written?)".into());
    }
    let checkpoint = Checkpoint::deserialize(&value).map_err(|e| e.to_string())?;
    if checkpoint.version != VERSION {
      return Err(format!("unsupported version {}", checkpoint.version));
    }
    if !is_hex(&checkpoint.hash, 64)
      || !is_hex(&checkpoint.signature.value, 128)
      || crate::timestamp::parse_ms(&checkpoint.ts).is_none()
    {
      return Err("malformed hash, signature or timestamp".into());
    }
    Ok(checkpoint)
  }
}

/// The checkpoint of the log in `dir`, if it has one. A damaged one is `E_AUDIT_CORRUPT`; one
/// that is not a regular file `E_NOT_REGULAR_FILE`.
pub fn read_checkpoint(dir: &StateDir) -> Result<Option<Checkpoint>> {
  let Some(bytes) = dir.read(CHECKPOINT_FILE, MAX_CHECKPOINT_BYTES)? else { return Ok(None) };
  Checkpoint::parse(&bytes).map(Some).map_err(|reason| LoaError::AuditCorrupt {
    segment: CHECKPOINT_FILE.into(),
    line: 0,
    reason,
  })
}
