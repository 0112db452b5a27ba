//! The audit log: a hash-chained, append-only record of security-relevant events.
//!
//! One entry per line, each the RFC 8785 canonical JSON of
//! `{ seq, ts, action, actor, details?, alg, prev, hash }`, where `hash` is SHA-256 (or
//! HMAC-SHA256 under a key) of `AUDIT_DOMAIN || JCS(entry without "hash")`. The entry includes
//! `prev`, the hash of the entry before (64 zeros for seq 1), so each hash covers the previous
//! hash and every field of the entry, nested `details` included (the originals hashed a
//! sorted-keys `JSON.stringify`, which dropped `details`).
//!
//! Segments are `<dir>/<seq of their first entry, 20 digits>.jsonl`. The chain runs through
//! them: the first entry of a segment records the last hash of the one before in its `prev`.
//! Names come from the sequence, which is allocated under the lock, so two rotations can never
//! pick the same name (the originals named segments by millisecond and overwrote one when two
//! rotations shared a millisecond; their chain also restarted at every segment, so `verify`
//! failed at line 0 after the first rotation).
//!
//! Appends take an exclusive `flock` on `<dir>/.lock` (several processes may log), re-read the
//! chain's tail if another process moved it, write the line with one `write` in append mode and
//! `fdatasync` before returning. A crash can leave a torn last line (bytes without the final
//! newline): it was never acknowledged, so the next writer cuts it off and reports it.
//! Anything else wrong (an edited, deleted, reordered or inserted line, a missing segment, a
//! wrong key) is reported by [`verify`] and never skipped; appending refuses to continue a chain
//! whose last entry does not verify (`E_SIGNATURE_INVALID`): a human decides.
//!
//! Without an HMAC key, whoever can edit the files can recompute every hash after an edit; the
//! chain then only shows accidental damage and edits by someone who did not bother. With a key
//! (kept elsewhere), they cannot. Removing whole entries from the end is invisible to any chain:
//! pass a remembered [`AuditLog::head`] to [`verify`] to check against it.

mod verify;

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use hmac::{Hmac, Mac};
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

pub use verify::{verify, AuditProblem, AuditVerification};

use crate::error::{LoaError, Result};
use crate::fsutil::{create_dir_durable, sync_dir};
use crate::jcs;
use crate::lock::lock_exclusive;

/// Prefix of every hashed entry.
pub const AUDIT_DOMAIN: &[u8] = b"loa-core/audit/v1\0";
/// `prev` of the first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// Largest entry line, newline included.
pub const MAX_ENTRY_BYTES: usize = 1024 * 1024;
/// Smallest `max_segment_bytes` accepted.
pub const MIN_SEGMENT_BYTES: u64 = 1024;
/// Shortest HMAC key accepted.
pub const MIN_HMAC_KEY_BYTES: usize = 16;
const LOCK: &str = ".lock";

/// Who caused an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
  System,
  User,
  Automated,
}

impl Actor {
  pub fn parse(text: &str) -> Result<Actor> {
    match text {
      "system" => Ok(Actor::System),
      "user" => Ok(Actor::User),
      "automated" => Ok(Actor::Automated),
      _ => crate::error::invalid("`actor` must be 'system', 'user' or 'automated'"),
    }
  }

  pub fn as_str(self) -> &'static str {
    match self {
      Actor::System => "system",
      Actor::User => "user",
      Actor::Automated => "automated",
    }
  }
}

/// An event to append.
#[derive(Debug, Clone)]
pub struct AuditEvent {
  /// What happened, e.g. `manifest.sign` or `key.revoke`. 1-256 bytes, no control characters.
  pub action: String,
  pub actor: Actor,
  /// Any JSON; covered by the hash like every other field.
  pub details: Option<Value>,
}

/// Options of [`AuditLog::open`].
#[derive(Clone)]
pub struct AuditOptions {
  /// A new segment is started when the next line would take the current one past this size.
  /// Default 10 MiB (`audit.segment_max_bytes`), minimum 1024.
  pub max_segment_bytes: u64,
  /// HMAC-SHA256 key (at least 16 bytes); `None` = plain SHA-256.
  pub hmac_key: Option<Zeroizing<Vec<u8>>>,
  /// How long an append waits for another process's append. Default 5 s.
  pub lock_timeout: Duration,
}

impl Default for AuditOptions {
  fn default() -> Self {
    AuditOptions { max_segment_bytes: 10 * 1024 * 1024, hmac_key: None, lock_timeout: Duration::from_secs(5) }
  }
}

impl std::fmt::Debug for AuditOptions {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_struct("AuditOptions")
      .field("max_segment_bytes", &self.max_segment_bytes)
      .field("hmac_key", &self.hmac_key.as_ref().map(|_| "<set>"))
      .field("lock_timeout", &self.lock_timeout)
      .finish()
  }
}

impl AuditOptions {
  pub fn validate(&self) -> Result<()> {
    if self.max_segment_bytes < MIN_SEGMENT_BYTES {
      return crate::error::invalid(format!("`maxSegmentBytes` must be at least {MIN_SEGMENT_BYTES}"));
    }
    if self.hmac_key.as_ref().is_some_and(|k| k.len() < MIN_HMAC_KEY_BYTES) {
      return crate::error::invalid(format!("`hmacKey` must be at least {MIN_HMAC_KEY_BYTES} bytes"));
    }
    Ok(())
  }
}

/// Where the chain ends: the last entry's seq and hash (seq 0 and [`GENESIS`] when empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Head {
  pub seq: u64,
  pub hash: String,
}

/// A torn last line that was cut off (or, for a read-only verification, would be).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TornTail {
  /// File name of the segment.
  pub segment: String,
  /// 1-based line number the torn bytes would have been.
  pub line: u64,
  pub bytes: u64,
}

/// The cached end of the chain, valid while the newest segment keeps this name, length and
/// modification time (any other writer, or an editor, changes one of them).
#[derive(Debug, Clone)]
struct Tail {
  segment: Option<PathBuf>,
  len: u64,
  modified: Option<std::time::SystemTime>,
  head: Head,
}

/// An open audit log. Appends from several handles and processes interleave safely.
#[derive(Debug)]
pub struct AuditLog {
  dir: PathBuf,
  options: AuditOptions,
  tail: Mutex<Option<Tail>>,
  truncated: Mutex<Option<TornTail>>,
}

/// Segment file name of the segment whose first entry is `seq`.
pub fn segment_name(seq: u64) -> String {
  format!("{seq:020}.jsonl")
}

/// The seq a segment file name stands for, if it is one.
pub fn parse_segment_name(name: &str) -> Option<u64> {
  let digits = name.strip_suffix(".jsonl")?;
  if digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()) {
    digits.parse().ok()
  } else {
    None
  }
}

/// The segments of `dir`, oldest first.
pub fn list_segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
  let mut out = Vec::new();
  for entry in fs::read_dir(dir).map_err(|e| LoaError::io("list", dir, e))? {
    let entry = entry.map_err(|e| LoaError::io("list", dir, e))?;
    if let Some(seq) = entry.file_name().to_str().and_then(parse_segment_name) {
      out.push((seq, entry.path()));
    }
  }
  out.sort();
  Ok(out)
}

/// The hash of an entry (given without its `hash` member).
pub fn entry_hash(body: &Value, key: Option<&[u8]>) -> Result<String> {
  let canonical = jcs::to_vec(body)?;
  Ok(match key {
    Some(key) => {
      let mut mac =
        <Hmac<Sha256> as Mac>::new_from_slice(key).map_err(|_| LoaError::InvalidArgument("bad HMAC key".into()))?;
      mac.update(AUDIT_DOMAIN);
      mac.update(&canonical);
      hex::encode(mac.finalize().into_bytes())
    }
    None => {
      let mut hasher = Sha256::new();
      hasher.update(AUDIT_DOMAIN);
      hasher.update(&canonical);
      hex::encode(hasher.finalize())
    }
  })
}

fn alg_name(key: Option<&[u8]>) -> &'static str {
  if key.is_some() {
    "hmac-sha256"
  } else {
    "sha256"
  }
}

/// Reads the end of `path` backwards: returns the length up to and including the last newline,
/// the last complete line (without its newline) and the number of bytes after it (a torn tail).
/// Only the tail is read, so an append after another process's append stays cheap.
fn read_tail(path: &Path) -> Result<(u64, Option<Vec<u8>>, u64)> {
  let mut file = File::open(path).map_err(|e| LoaError::io("open", path, e))?;
  let len = file.metadata().map_err(|e| LoaError::io("stat", path, e))?.len();
  let mut window = 64 * 1024u64;
  loop {
    let start = len.saturating_sub(window);
    let mut bytes = vec![0u8; (len - start) as usize];
    file.seek(SeekFrom::Start(start)).map_err(|e| LoaError::io("seek", path, e))?;
    file.read_exact(&mut bytes).map_err(|e| LoaError::io("read", path, e))?;
    let Some(last_nl) = bytes.iter().rposition(|&b| b == b'\n') else {
      if start == 0 {
        return Ok((0, None, len));
      }
      window *= 2;
      continue;
    };
    let complete = start + last_nl as u64 + 1;
    match bytes[..last_nl].iter().rposition(|&b| b == b'\n') {
      Some(prev_nl) => return Ok((complete, Some(bytes[prev_nl + 1..last_nl].to_vec()), len - complete)),
      None if start == 0 => return Ok((complete, Some(bytes[..last_nl].to_vec()), len - complete)),
      None => window *= 2,
    }
  }
}

/// Complete lines in the first `upto` bytes of `path` (for messages only).
fn count_lines(path: &Path, upto: u64) -> u64 {
  let Ok(file) = File::open(path) else { return 0 };
  let mut bytes = Vec::new();
  if file.take(upto).read_to_end(&mut bytes).is_err() {
    return 0;
  }
  bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

impl AuditLog {
  /// Opens (creating `dir` if needed) the log, cutting off a torn last line, and checks that
  /// its last entry verifies under `options.hmac_key`.
  pub fn open(dir: &Path, options: AuditOptions) -> Result<AuditLog> {
    options.validate()?;
    create_dir_durable(dir)?;
    let log = AuditLog { dir: dir.to_path_buf(), options, tail: Mutex::new(None), truncated: Mutex::new(None) };
    let _lock = log.lock()?;
    log.refresh()?;
    Ok(log)
  }

  pub fn dir(&self) -> &Path {
    &self.dir
  }

  fn key(&self) -> Option<&[u8]> {
    self.options.hmac_key.as_ref().map(|k| k.as_slice())
  }

  fn lock(&self) -> Result<crate::lock::LockGuard> {
    lock_exclusive(&self.dir.join(LOCK), self.options.lock_timeout, "audit log")
  }

  /// The torn tail this handle cut off most recently, if any.
  pub fn truncated_tail(&self) -> Option<TornTail> {
    self.truncated.lock().unwrap_or_else(|e| e.into_inner()).clone()
  }

  /// Where the chain ends now (as far as this handle knows after its last open or append).
  pub fn head(&self) -> Result<Head> {
    let _lock = self.lock()?;
    Ok(self.refresh()?.head)
  }

  /// Brings the cached tail up to date. Must hold the lock.
  fn refresh(&self) -> Result<Tail> {
    let segments = list_segments(&self.dir)?;
    let mut cache = self.tail.lock().unwrap_or_else(|e| e.into_inner());
    if let (Some(cached), Some((_, newest))) = (cache.as_ref(), segments.last()) {
      let meta = fs::metadata(newest).ok();
      if cached.segment.as_deref() == Some(newest.as_path())
        && meta.as_ref().map(|m| m.len()) == Some(cached.len)
        && meta.and_then(|m| m.modified().ok()) == cached.modified
        && cached.modified.is_some()
      {
        return Ok(cached.clone());
      }
    }
    *cache = None;
    let tail = self.read_chain_end(&segments)?;
    *cache = Some(tail.clone());
    Ok(tail)
  }

  /// Finds the last entry (walking back over an empty newest segment), cutting a torn tail.
  fn read_chain_end(&self, segments: &[(u64, PathBuf)]) -> Result<Tail> {
    let Some((newest_seq, newest)) = segments.last() else {
      return Ok(Tail { segment: None, len: 0, modified: None, head: Head { seq: 0, hash: GENESIS.into() } });
    };
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let (complete, last, torn) = read_tail(newest)?;
    if torn > 0 {
      let lines = count_lines(newest, complete);
      let file = OpenOptions::new().write(true).open(newest).map_err(|e| LoaError::io("open", newest, e))?;
      file.set_len(complete).map_err(|e| LoaError::io("truncate torn tail of", newest, e))?;
      file.sync_all().map_err(|e| LoaError::io("fsync", newest, e))?;
      *self.truncated.lock().unwrap_or_else(|e| e.into_inner()) =
        Some(TornTail { segment: name(newest), line: lines + 1, bytes: torn });
    }
    let head = match last {
      Some(line) => self.check_last_entry(&line, &name(newest), || count_lines(newest, complete))?,
      None => {
        // An empty newest segment (a writer died right after creating it): the chain ends in
        // the segment before, and the next entry must be this segment's first.
        let before = &segments[..segments.len() - 1];
        let head = self.read_chain_end(before)?.head;
        if head.seq + 1 != *newest_seq {
          return Err(LoaError::AuditCorrupt {
            segment: name(newest),
            line: 1,
            reason: format!("empty segment for seq {newest_seq}, but the chain ends at seq {}", head.seq),
          });
        }
        head
      }
    };
    let modified = fs::metadata(newest).and_then(|m| m.modified()).ok();
    Ok(Tail { segment: Some(newest.clone()), len: complete, modified, head })
  }

  /// Parses and verifies the newest entry: the chain may only continue from a valid end.
  fn check_last_entry(&self, line: &[u8], segment: &str, line_no: impl Fn() -> u64) -> Result<Head> {
    let corrupt = |reason: String| LoaError::AuditCorrupt { segment: segment.to_string(), line: line_no(), reason };
    let text = std::str::from_utf8(line).map_err(|_| corrupt("not UTF-8".into()))?;
    let value = jcs::parse_strict(text).map_err(|e| corrupt(e.to_string()))?;
    let (Some(seq), Some(stored)) =
      (value.get("seq").and_then(Value::as_u64), value.get("hash").and_then(Value::as_str))
    else {
      return Err(corrupt("entry has no seq or hash".into()));
    };
    let stored = stored.to_string();
    let mut body = value.clone();
    body.as_object_mut().ok_or_else(|| corrupt("entry is not an object".into()))?.remove("hash");
    let alg = body.get("alg").and_then(Value::as_str).unwrap_or("");
    if alg != alg_name(self.key()) {
      return Err(LoaError::SignatureInvalid(format!(
        "the last audit entry ({segment} line {}) uses {alg:?} but this log was opened for {:?}",
        line_no(),
        alg_name(self.key())
      )));
    }
    if entry_hash(&body, self.key())? != stored {
      return Err(LoaError::SignatureInvalid(format!(
        "the last audit entry ({segment} line {}) does not verify: wrong hmacKey, or the entry was changed (run `loa audit verify`)",
        line_no()
      )));
    }
    Ok(Head { seq, hash: stored })
  }

  /// Appends an event; returns once it is durable.
  pub fn append(&self, event: &AuditEvent) -> Result<Head> {
    if event.action.is_empty() || event.action.len() > 256 || event.action.chars().any(char::is_control) {
      return crate::error::invalid("`action` must be 1-256 bytes without control characters");
    }
    let _lock = self.lock()?;
    let result = self.append_locked(event);
    if result.is_err() {
      // Whatever happened on disk, re-read it next time.
      *self.tail.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
    result
  }

  fn append_locked(&self, event: &AuditEvent) -> Result<Head> {
    let tail = self.refresh()?;
    let seq = tail.head.seq + 1;
    let mut body = Map::new();
    body.insert("seq".into(), Value::from(seq));
    body.insert("ts".into(), Value::String(crate::timestamp::format_ms(crate::timestamp::now_ms())));
    body.insert("action".into(), Value::String(event.action.clone()));
    body.insert("actor".into(), Value::String(event.actor.as_str().into()));
    if let Some(details) = &event.details {
      body.insert("details".into(), details.clone());
    }
    body.insert("alg".into(), Value::String(alg_name(self.key()).into()));
    body.insert("prev".into(), Value::String(tail.head.hash.clone()));
    let mut body = Value::Object(body);
    let hash = entry_hash(&body, self.key())?;
    body.as_object_mut().expect("object").insert("hash".into(), Value::String(hash.clone()));
    let mut line = jcs::to_vec(&body)?;
    line.push(b'\n');
    if line.len() > MAX_ENTRY_BYTES {
      return Err(LoaError::TooLarge {
        what: "audit entry".into(),
        size: line.len() as u64,
        limit: MAX_ENTRY_BYTES as u64,
      });
    }
    let (segment, len) = match &tail.segment {
      Some(path) if tail.len == 0 || tail.len + line.len() as u64 <= self.options.max_segment_bytes => {
        (path.clone(), tail.len)
      }
      _ => {
        // First segment, or rotation: a new file named by this entry's seq, which no other
        // segment can have (seqs are allocated under the lock).
        let path = self.dir.join(segment_name(seq));
        OpenOptions::new()
          .write(true)
          .create_new(true)
          .open(&path)
          .map_err(|e| LoaError::io("create audit segment", &path, e))?;
        sync_dir(&self.dir)?;
        (path, 0)
      }
    };
    let mut file = OpenOptions::new().append(true).open(&segment).map_err(|e| LoaError::io("open", &segment, e))?;
    file.write_all(&line).map_err(|e| LoaError::io("append to", &segment, e))?;
    file.sync_data().map_err(|e| LoaError::io("fsync", &segment, e))?;
    let modified = file.metadata().and_then(|m| m.modified()).ok();
    let head = Head { seq, hash };
    *self.tail.lock().unwrap_or_else(|e| e.into_inner()) =
      Some(Tail { segment: Some(segment), len: len + line.len() as u64, modified, head: head.clone() });
    Ok(head)
  }

  /// Verifies the whole log with this handle's key (read-only; see [`verify`]).
  pub fn verify(&self, expected_head: Option<&Head>) -> Result<AuditVerification> {
    verify(&self.dir, self.key(), expected_head)
  }
}

#[cfg(test)]
mod tests;
