//! The `AuditLog` class and `verifyAuditLog`.

use std::path::PathBuf;
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::{Env, Unknown};
use napi_derive::napi;
use zeroize::Zeroizing;

use super::{args, guard, json, to_napi};
use crate::audit::{self as core, Actor, AuditEvent, AuditOptions, Head};
use crate::error::{LoaError, Result};

/// Options of `AuditLog.open`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field in `args`
pub struct AuditLogOpenOptions {
  /// A new segment starts when the next entry would take the current one past this size; the
  /// chain continues across segments. Default 10 MiB (`audit.segmentMaxBytes`), minimum 1024.
  pub max_segment_bytes: Option<f64>,
  /// HMAC-SHA256 key (at least 16 bytes), kept away from the log, so that whoever can edit the
  /// files cannot recompute the chain. Every later open and verification needs the same key.
  pub hmac_key: Option<Buffer>,
  /// How long an append waits for another process's append (`E_WAL_LOCKED`). Default 5000.
  pub lock_timeout_ms: Option<u32>,
}

/// An event to record.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field in `args`
pub struct AuditEventInput {
  /// What happened, e.g. `'manifest.verify.failed'`. 1-256 bytes, no control characters.
  pub action: String,
  #[napi(ts_type = "'system' | 'user' | 'automated'")]
  pub actor: String,
  /// Any JSON value (see `canonicalizeJson` for what that admits); covered by the entry's hash.
  #[napi(ts_type = "unknown")]
  pub details: Option<serde_json::Value>,
}

/// The end of the chain: the last entry's seq and hash. Remember it elsewhere to detect
/// entries cut off the end later (`verify({ expectedHead })`).
#[napi(object)]
pub struct AuditHead {
  pub seq: f64,
  /// SHA-256 (or HMAC-SHA256) of the entry, 64 hex characters.
  pub hash: String,
}

/// A torn last line: an append a crash interrupted (never acknowledged).
#[napi(object)]
pub struct AuditTornTail {
  /// Segment file name.
  pub segment: String,
  /// 1-based line number of the torn line.
  pub line: f64,
  pub bytes: f64,
}

/// One thing wrong with the log.
#[napi(object)]
pub struct AuditProblem {
  /// Segment file name (`''` for the log as a whole).
  pub segment: String,
  /// 1-based line (0 for a segment or the log as a whole).
  pub line: f64,
  /// `malformed`, `format` (bytes not canonical), `hash` (entry edited), `chain` (lines deleted,
  /// inserted or reordered), `seq`, `segment` (misnamed, empty, or not a regular file), `key`
  /// (HMAC key missing or not used), `head` (does not reach or match `expectedHead`),
  /// `truncated` (the log ends before its signed checkpoint: `E_AUDIT_TRUNCATED`), `checkpoint`
  /// (the checkpoint is damaged, its signature does not verify with `keys`, or the entry at its
  /// seq has another hash).
  #[napi(
    ts_type = "'malformed' | 'format' | 'hash' | 'chain' | 'seq' | 'segment' | 'key' | 'head' | 'truncated' | 'checkpoint'"
  )]
  pub kind: String,
  pub detail: String,
}

/// What a verification of the audit log found.
#[napi(object)]
pub struct AuditVerification {
  /// No problem. A torn tail alone leaves it true.
  pub ok: bool,
  /// Complete lines read.
  pub entries: f64,
  pub segments: f64,
  /// The last entry, if any.
  pub head: Option<AuditHead>,
  pub problems: Vec<AuditProblem>,
  /// A torn last line (cut off by the next writer), if any.
  pub torn_tail: Option<AuditTornTail>,
  /// The log's signed checkpoint, if it has a readable one.
  pub checkpoint: Option<AuditCheckpoint>,
}

/// Who signed a checkpoint, and the signature (Ed25519 over
/// `"loa-core/audit-checkpoint/v1\0"` + the RFC 8785 bytes of the checkpoint without it).
#[napi(object)]
pub struct AuditCheckpointSignature {
  #[napi(ts_type = "'ed25519'")]
  pub algorithm: String,
  pub key_id: String,
  /// 64 bytes, 128 lower-case hex characters.
  pub value: String,
}

/// A signed head of the chain, as `AuditLog.checkpoint` writes it to `checkpoint.json`.
#[napi(object)]
pub struct AuditCheckpoint {
  #[napi(ts_type = "1")]
  pub version: u32,
  /// The last entry's seq when it was made (0 for an empty log).
  pub seq: f64,
  /// That entry's hash.
  pub hash: String,
  /// When it was made (RFC 3339, UTC).
  pub ts: String,
  #[napi(ts_type = "'sha256' | 'hmac-sha256'")]
  pub alg: String,
  pub signature: AuditCheckpointSignature,
}

/// Options of `AuditLog.verify` / `verifyAuditLog`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field in `args`
pub struct VerifyAuditLogOptions {
  /// The HMAC key the log was written with (`verifyAuditLog` only; a log verifies with its own).
  pub hmac_key: Option<Buffer>,
  /// A head remembered earlier: the chain must still contain that seq with that hash.
  pub expected_head: Option<AuditHead>,
  /// Keys to check the checkpoint's signature with (`keyRing.verificationKeys()` or the
  /// `KeyRing`). Without them the checkpoint's seq and hash are still compared with the log.
  #[napi(ts_type = "KeyInfo[] | KeyRing")]
  pub keys: Option<serde_json::Value>,
}

fn head_to_js(h: Head) -> AuditHead {
  AuditHead { seq: h.seq as f64, hash: h.hash }
}

fn torn_to_js(t: core::TornTail) -> AuditTornTail {
  AuditTornTail { segment: t.segment, line: t.line as f64, bytes: t.bytes as f64 }
}

fn checkpoint_to_js(c: core::Checkpoint) -> AuditCheckpoint {
  AuditCheckpoint {
    version: c.version,
    seq: c.seq as f64,
    hash: c.hash,
    ts: c.ts,
    alg: c.alg,
    signature: AuditCheckpointSignature {
      algorithm: c.signature.algorithm,
      key_id: c.signature.key_id,
      value: c.signature.value,
    },
  }
}

fn verification_to_js(v: core::AuditVerification) -> AuditVerification {
  AuditVerification {
    ok: v.ok,
    entries: v.entries as f64,
    segments: v.segments as f64,
    head: v.head.map(head_to_js),
    problems: v
      .problems
      .into_iter()
      .map(|p| AuditProblem { segment: p.segment, line: p.line as f64, kind: p.kind, detail: p.detail })
      .collect(),
    torn_tail: v.torn_tail.map(torn_to_js),
    checkpoint: v.checkpoint.map(checkpoint_to_js),
  }
}

/// `keys` of the verification options: `KeyInfo[]` or a `KeyRing`; absent means unchecked.
fn trusted_keys(env: &Env, o: &Object) -> Result<Option<Vec<crate::sign::manifest::TrustedKey>>> {
  let Some(keys) = args::field(o, "keys")? else { return Ok(None) };
  super::sign::trusted_keys(env, keys).map(Some)
}

fn verify_options<'k>(env: &Env, options: Option<Unknown>, key: Option<&'k [u8]>) -> Result<core::VerifyOptions<'k>> {
  let mut parsed = core::VerifyOptions { hmac_key: key, ..Default::default() };
  if let Some(o) = args::optional_object(options, "options")? {
    parsed.expected_head = expected_head(&o)?;
    parsed.trusted_keys = trusted_keys(env, &o)?;
  }
  Ok(parsed)
}

fn hmac_key(o: &Object) -> Result<Option<Zeroizing<Vec<u8>>>> {
  let Some(value) = args::field(o, "hmacKey")? else { return Ok(None) };
  if matches!(value.get_type(), Ok(napi::ValueType::String)) {
    return crate::error::invalid("`hmacKey` must be a Buffer or Uint8Array (not a string)");
  }
  Ok(Some(Zeroizing::new(args::bytes(value, "hmacKey")?)))
}

fn expected_head(o: &Object) -> Result<Option<Head>> {
  let Some(head) = args::optional_object(args::field(o, "expectedHead")?, "expectedHead")? else {
    return Ok(None);
  };
  let seq = args::optional_u64(&head, "seq")?
    .ok_or_else(|| LoaError::InvalidArgument("`expectedHead.seq` must be a number".into()))?;
  let hash = args::optional_string(&head, "hash")?
    .ok_or_else(|| LoaError::InvalidArgument("`expectedHead.hash` must be a string".into()))?;
  Ok(Some(Head { seq, hash }))
}

fn parse_open_options(options: Option<Unknown>) -> Result<AuditOptions> {
  let mut parsed = AuditOptions::default();
  if let Some(o) = args::optional_object(options, "options")? {
    if let Some(n) = args::optional_u64(&o, "maxSegmentBytes")? {
      parsed.max_segment_bytes = n;
    }
    parsed.hmac_key = hmac_key(&o)?;
    if let Some(ms) = args::optional_u64(&o, "lockTimeoutMs")? {
      parsed.lock_timeout = Duration::from_millis(ms);
    }
  }
  Ok(parsed)
}

/// A hash-chained, append-only audit log in a directory of segments
/// (`<first seq, 20 digits>.jsonl`). Each entry's hash covers the previous hash and the RFC 8785
/// form of the whole entry, `details` included; the chain runs on across segments. Appends are
/// `flock`ed (several processes may log) and fsynced before `append` returns.
///
/// ```ts
/// const log = AuditLog.open('.loa/audit', { hmacKey })
/// const { seq, hash } = log.append({ action: 'manifest.sign', actor: 'system', details: { keyId } })
/// const { ok, problems } = log.verify()
/// ```
#[napi]
pub struct AuditLog {
  inner: core::AuditLog,
}

#[napi]
impl AuditLog {
  /// Opens (creating `dir` if needed) the log. Cuts off a torn last line left by a crash (see
  /// `truncatedTail`). Throws `E_SIGNATURE_INVALID` if the last entry does not verify under
  /// `hmacKey` (wrong key, or edited: nothing is appended to a chain that does not verify),
  /// `E_AUDIT_CORRUPT` if it (or the checkpoint) cannot be read, `E_AUDIT_TRUNCATED` if the log
  /// ends before its checkpoint, `E_NOT_REGULAR_FILE` for a symlink, FIFO or directory named
  /// like a segment, the lock or the checkpoint (never read, truncated or written through).
  #[napi(factory, ts_args_type = "dir: string, options?: AuditLogOpenOptions")]
  pub fn open(env: Env, dir: Unknown, options: Option<Unknown>) -> napi::Result<AuditLog> {
    let inner = to_napi(
      &env,
      guard(|| core::AuditLog::open(&PathBuf::from(args::string(dir, "dir")?), parse_open_options(options)?)),
    )?;
    Ok(AuditLog { inner })
  }

  /// The directory of the log.
  #[napi(getter)]
  pub fn dir(&self) -> String {
    self.inner.dir().display().to_string()
  }

  /// The torn last line this handle cut off (when opening, or when another process had crashed
  /// mid-append), if any.
  #[napi(getter)]
  pub fn truncated_tail(&self) -> Option<AuditTornTail> {
    self.inner.truncated_tail().map(torn_to_js)
  }

  /// Appends an event and returns its seq and hash once it is on disk (fsynced). Waits for
  /// other processes' appends (`E_WAL_LOCKED` after `lockTimeoutMs`).
  #[napi(ts_args_type = "event: AuditEventInput", ts_return_type = "AuditHead")]
  pub fn append(&self, env: Env, event: Unknown) -> napi::Result<AuditHead> {
    to_napi(
      &env,
      guard(|| {
        let o = args::optional_object(Some(event), "event")?
          .ok_or_else(|| LoaError::InvalidArgument("`event` must be an object".into()))?;
        let action = args::optional_string(&o, "action")?
          .ok_or_else(|| LoaError::InvalidArgument("`action` must be a string".into()))?;
        let actor = Actor::parse(&args::optional_string(&o, "actor")?.unwrap_or_default())?;
        let details: Unknown = o.get_named_property("details").map_err(|_| args::unreadable(env.raw(), "details"))?;
        let details = if matches!(details.get_type(), Ok(napi::ValueType::Undefined)) {
          None
        } else {
          Some(json::from_js(&env, details, "details")?)
        };
        self.inner.append(&AuditEvent { action, actor, details })
      }),
    )
    .map(head_to_js)
  }

  /// Where the chain ends now.
  #[napi]
  pub fn head(&self, env: Env) -> napi::Result<AuditHead> {
    to_napi(&env, guard(|| self.inner.head())).map(head_to_js)
  }

  /// Verifies every entry of every segment with this log's key (read-only). Every problem is
  /// listed, none skipped; a torn last line is reported in `tornTail` and leaves `ok` true. A
  /// log shorter than its checkpoint is a `truncated` problem.
  #[napi(ts_args_type = "options?: { expectedHead?: AuditHead, keys?: KeyInfo[] | KeyRing }")]
  pub fn verify(&self, env: Env, options: Option<Unknown>) -> napi::Result<AuditVerification> {
    to_napi(&env, guard(|| self.inner.verify_with(&verify_options(&env, options, None)?))).map(verification_to_js)
  }

  /// Signs the current head (seq, hash, time) with the key ring's signing key and stores it as
  /// the log's checkpoint (`checkpoint.json` beside the segments, written atomically). From then
  /// on a log that ends before it is `E_AUDIT_TRUNCATED`: `open` and `append` refuse it, `verify`
  /// reports it. Since the checkpoint can be deleted together with the entries, also anchor the
  /// head in a signed manifest (`createManifest(root, { auditDir })`). Throws
  /// `E_AUDIT_TRUNCATED` when the log is already shorter than its previous checkpoint,
  /// `E_KEY_NOT_FOUND` without a signing key.
  #[napi(ts_args_type = "keyRing: KeyRing")]
  pub fn checkpoint(&self, env: Env, key_ring: Unknown) -> napi::Result<AuditCheckpoint> {
    to_napi(
      &env,
      guard(|| {
        let ring = super::sign::ring_arg(&env, &key_ring, "keyRing")?;
        self.inner.checkpoint(&ring.inner)
      }),
    )
    .map(checkpoint_to_js)
  }
}

/// Verifies the audit log in `dir` without opening it for appending: never writes, never
/// takes the lock, never throws for damage (an unreadable directory is `E_IO`). Anything named
/// like a segment that is not a regular file is reported and never opened; a log shorter than
/// its checkpoint is a `truncated` problem.
#[napi(ts_args_type = "dir: string, options?: VerifyAuditLogOptions")]
pub fn verify_audit_log(env: Env, dir: Unknown, options: Option<Unknown>) -> napi::Result<AuditVerification> {
  to_napi(
    &env,
    guard(|| {
      let dir = PathBuf::from(args::string(dir, "dir")?);
      let options = args::optional_object(options, "options")?;
      let key = match &options {
        Some(o) => hmac_key(o)?,
        None => None,
      };
      if key.as_ref().is_some_and(|k| k.len() < core::MIN_HMAC_KEY_BYTES) {
        return crate::error::invalid(format!("`hmacKey` must be at least {} bytes", core::MIN_HMAC_KEY_BYTES));
      }
      let mut parsed = core::VerifyOptions { hmac_key: key.as_ref().map(|k| k.as_slice()), ..Default::default() };
      if let Some(o) = &options {
        parsed.expected_head = expected_head(o)?;
        parsed.trusted_keys = trusted_keys(&env, o)?;
      }
      core::verify_with(&dir, &parsed)
    }),
  )
  .map(verification_to_js)
}
