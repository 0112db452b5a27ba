//! The `AuditLog` class and `verifyAuditLog`.

use std::time::Duration;

use napi::{Env, Unknown};
use napi_derive::napi;
use zeroize::Zeroizing;

use super::convert::{arg, js_from, object, opt_object, path, Binary, Given, Int, Json, Obj, Str};
use super::sign::{Keys, Ring};
use super::sync;
use crate::audit::{self as core, Actor, AuditEvent, AuditOptions, Head};
use crate::error::{LoaError, Result};

/// Options of `AuditLog.open`.
#[napi(object, object_to_js = false)]
pub struct AuditLogOpenOptions {
  /// A new segment starts when the next entry would take the current one past this size; the
  /// chain continues across segments. Default 10 MiB (`audit.segmentMaxBytes`), minimum 1024.
  #[napi(ts_type = "number")]
  pub max_segment_bytes: Option<Option<Int>>,
  /// HMAC-SHA256 key (at least 16 bytes), kept away from the log, so that whoever can edit the
  /// files cannot recompute the chain. Every later open and verification needs the same key.
  #[napi(ts_type = "Buffer")]
  pub hmac_key: Option<Option<Binary>>,
  /// How long an append waits for another process's append (`E_WAL_LOCKED`). Default 5000.
  #[napi(ts_type = "number")]
  pub lock_timeout_ms: Option<Option<Int>>,
}

impl From<AuditLogOpenOptions> for AuditOptions {
  fn from(o: AuditLogOpenOptions) -> AuditOptions {
    let d = AuditOptions::default();
    AuditOptions {
      max_segment_bytes: o.max_segment_bytes.given().unwrap_or(d.max_segment_bytes),
      hmac_key: o.hmac_key.flatten().map(|k| k.0),
      lock_timeout: o.lock_timeout_ms.given().map_or(d.lock_timeout, Duration::from_millis),
    }
  }
}

/// An event to record.
#[napi(object, object_to_js = false)]
pub struct AuditEventInput {
  /// What happened, e.g. `'manifest.verify.failed'`. 1-256 bytes, no control characters.
  #[napi(ts_type = "string")]
  pub action: Str,
  #[napi(ts_type = "'system' | 'user' | 'automated'")]
  pub actor: Str,
  /// Any JSON value (see `canonicalizeJson` for what that admits); covered by the entry's hash.
  /// `null` is recorded as `null`.
  #[napi(ts_type = "unknown")]
  pub details: Option<Json>,
}

impl TryFrom<AuditEventInput> for AuditEvent {
  type Error = LoaError;

  fn try_from(e: AuditEventInput) -> Result<AuditEvent> {
    Ok(AuditEvent { action: e.action.0, actor: Actor::parse(&e.actor.0)?, details: e.details.map(|d| d.0) })
  }
}

/// The end of the chain: the last entry's seq and hash. Remember it elsewhere to detect
/// entries cut off the end later (`verify({ expectedHead })`).
#[napi(object)]
pub struct AuditHead {
  #[napi(ts_type = "number")]
  pub seq: Int,
  /// SHA-256 (or HMAC-SHA256) of the entry, 64 hex characters.
  #[napi(ts_type = "string")]
  pub hash: Str,
}

impl From<Head> for AuditHead {
  fn from(h: Head) -> AuditHead {
    AuditHead { seq: Int(h.seq), hash: Str(h.hash) }
  }
}

impl From<AuditHead> for Head {
  fn from(h: AuditHead) -> Head {
    Head { seq: h.seq.0, hash: h.hash.0 }
  }
}

/// A torn last line: an append a crash interrupted (never acknowledged).
#[napi(object, object_from_js = false)]
pub struct AuditTornTail {
  /// Segment file name.
  pub segment: String,
  /// 1-based line number of the torn line.
  pub line: f64,
  pub bytes: f64,
}

js_from!(|t: core::TornTail| AuditTornTail { segment, line: f64, bytes: f64 });

/// One thing wrong with the log.
#[napi(object, object_from_js = false)]
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

js_from!(|p: core::AuditProblem| AuditProblem { segment, line: f64, kind, detail });

/// What a verification of the audit log found.
#[napi(object, object_from_js = false)]
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

js_from!(|v: core::AuditVerification| AuditVerification {
  ok,
  entries: f64,
  segments: f64,
  head => each,
  problems => each,
  torn_tail => each,
  checkpoint => each,
});

/// Who signed a checkpoint, and the signature (Ed25519 over
/// `"loa-core/audit-checkpoint/v1\0"` + the RFC 8785 bytes of the checkpoint without it).
#[napi(object, object_from_js = false)]
pub struct AuditCheckpointSignature {
  #[napi(ts_type = "'ed25519'")]
  pub algorithm: String,
  pub key_id: String,
  /// 64 bytes, 128 lower-case hex characters.
  pub value: String,
}

/// A signed head of the chain, as `AuditLog.checkpoint` writes it to `checkpoint.json`.
#[napi(object, object_from_js = false)]
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

js_from!(|s: core::CheckpointSignature| AuditCheckpointSignature { algorithm, key_id, value });

js_from!(|c: core::Checkpoint| AuditCheckpoint { version, seq: f64, hash, ts, alg, signature => into });

/// Options of `AuditLog.verify` / `verifyAuditLog`.
#[napi(object, object_to_js = false)]
pub struct VerifyAuditLogOptions {
  /// The HMAC key the log was written with (`verifyAuditLog` only; a log verifies with its own).
  #[napi(ts_type = "Buffer")]
  pub hmac_key: Option<Option<Binary>>,
  /// A head remembered earlier: the chain must still contain that seq with that hash.
  #[napi(ts_type = "AuditHead")]
  pub expected_head: Option<Option<Obj<AuditHead>>>,
  /// Keys to check the checkpoint's signature with (`keyRing.verificationKeys()` or the
  /// `KeyRing`). Without them the checkpoint's seq and hash are still compared with the log.
  #[napi(ts_type = "KeyInfo[] | KeyRing")]
  pub keys: Option<Option<Keys>>,
}

/// What a verification is given (the keys of a ring are read when it runs).
#[derive(Default)]
struct Verifying {
  hmac_key: Option<Zeroizing<Vec<u8>>>,
  expected_head: Option<Head>,
  keys: Option<Keys>,
}

impl TryFrom<VerifyAuditLogOptions> for Verifying {
  type Error = LoaError;

  fn try_from(o: VerifyAuditLogOptions) -> Result<Verifying> {
    let hmac_key = o.hmac_key.flatten().map(|k| k.0);
    core::check_hmac_key(hmac_key.as_deref().map(Vec::as_slice))?;
    Ok(Verifying { hmac_key, expected_head: o.expected_head.flatten().map(|h| h.0.into()), keys: o.keys.flatten() })
  }
}

impl Verifying {
  fn run(
    self,
    verify: impl FnOnce(&core::VerifyOptions) -> Result<core::AuditVerification>,
  ) -> Result<AuditVerification> {
    let options = core::VerifyOptions {
      hmac_key: self.hmac_key.as_ref().map(|k| k.as_slice()),
      expected_head: self.expected_head,
      trusted_keys: self.keys.map(Keys::trusted).transpose()?,
    };
    verify(&options).map(Into::into)
  }
}

fn verifying(options: Option<Unknown>) -> Result<Verifying> {
  opt_object::<VerifyAuditLogOptions, _>(options, "options")
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
    sync(&env, || {
      let options = opt_object::<AuditLogOpenOptions, _>(options, "options")?;
      core::AuditLog::open(&path(dir, "dir")?, options).map(|inner| AuditLog { inner })
    })
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
    self.inner.truncated_tail().map(Into::into)
  }

  /// Appends an event and returns its seq and hash once it is on disk (fsynced). Waits for
  /// other processes' appends (`E_WAL_LOCKED` after `lockTimeoutMs`).
  #[napi(ts_args_type = "event: AuditEventInput", ts_return_type = "AuditHead")]
  pub fn append(&self, env: Env, event: Unknown) -> napi::Result<AuditHead> {
    sync(&env, || self.inner.append(&object::<AuditEventInput, _>(event, "event")?)).map(Into::into)
  }

  /// Where the chain ends now.
  #[napi]
  pub fn head(&self, env: Env) -> napi::Result<AuditHead> {
    sync(&env, || self.inner.head()).map(Into::into)
  }

  /// Verifies every entry of every segment with this log's key (read-only). Every problem is
  /// listed, none skipped; a torn last line is reported in `tornTail` and leaves `ok` true. A
  /// log shorter than its checkpoint is a `truncated` problem.
  #[napi(ts_args_type = "options?: { expectedHead?: AuditHead, keys?: KeyInfo[] | KeyRing }")]
  pub fn verify(&self, env: Env, options: Option<Unknown>) -> napi::Result<AuditVerification> {
    // The log verifies with its own key: an `hmacKey` given here is not used.
    sync(&env, || Verifying { hmac_key: None, ..verifying(options)? }.run(|o| self.inner.verify_with(o)))
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
    sync(&env, || self.inner.checkpoint(&arg::<Ring>(key_ring, "keyRing")?.0)).map(Into::into)
  }
}

/// Verifies the audit log in `dir` without opening it for appending: never writes, never
/// takes the lock, never throws for damage (an unreadable directory is `E_IO`). Anything named
/// like a segment that is not a regular file is reported and never opened; a log shorter than
/// its checkpoint is a `truncated` problem.
#[napi(ts_args_type = "dir: string, options?: VerifyAuditLogOptions")]
pub fn verify_audit_log(env: Env, dir: Unknown, options: Option<Unknown>) -> napi::Result<AuditVerification> {
  sync(&env, || {
    let dir = path(dir, "dir")?;
    verifying(options)?.run(|o| core::verify_with(&dir, o))
  })
}
