//! The audit log: a hash-chained, append-only record of security-relevant events.
//!
//! One entry per line, each the RFC 8785 canonical JSON of
//! `{ v, seq, ts, action, actor, details?, alg, prev, hash }`, where `v` is the entry format
//! version ([`ENTRY_VERSION`], 1; a line without `v` was written before the member existed and is
//! read as version 1, a higher `v` is reported as `malformed` and never continued), and `hash` is SHA-256 (or
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
//! (kept elsewhere), they cannot.
//!
//! Removing whole entries from the end is invisible to any chain. Three anchors show it:
//! - [`AuditLog::checkpoint`] signs the head (seq, hash, time) with a key ring's signing key and
//!   keeps it in `checkpoint.json` beside the segments (version 1, canonical JSON, written
//!   atomically). A log that ends before its checkpoint is `E_AUDIT_TRUNCATED`: [`AuditLog::open`]
//!   refuses to append to it, and [`verify`] reports it (problem kind `truncated`);
//! - since the checkpoint can be deleted together with the entries, a signed manifest can carry
//!   the head as well (`createManifest(root, { auditDir })`, see
//!   [`crate::sign::manifest`]): it is covered by the manifest's signature, kept away from the
//!   log, and `verifyManifest` checks that the log still reaches it;
//! - a head remembered anywhere else can be passed to [`verify`] as `expected_head`.
//!
//! Files in the directory are opened without following symlinks and only as regular files: a
//! symlink, FIFO or directory named like a segment, the lock or the checkpoint is
//! `E_NOT_REGULAR_FILE` for appends (never read, truncated or written through) and a problem of
//! kind `segment` for [`verify`]. Reads are bounded: verification streams each segment line by
//! line (a line over [`MAX_ENTRY_BYTES`] is `malformed`) up to the size it had when opened, and
//! the checkpoint is read up to [`MAX_CHECKPOINT_BYTES`]. Temp files of an interrupted
//! checkpoint write are removed under the lock by the next append or checkpoint.

mod checkpoint;
mod verify;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use hmac::{Hmac, Mac};
use rustix::fs::FileType;
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

pub use checkpoint::{read_checkpoint, Checkpoint, CheckpointSignature, CHECKPOINT_FILE, MAX_CHECKPOINT_BYTES};
pub(crate) use verify::verify_in;
pub use verify::{verify, verify_with, AuditProblem, AuditVerification, VerifyOptions};

use crate::error::{LoaError, Result};
use crate::fsutil::{create_dir_durable, kind_name, OpenMode, StateDir, StateFile};
use crate::jcs;
use crate::lock::lock_file;

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
    check_hmac_key(self.hmac_key.as_deref().map(Vec::as_slice))
  }
}

/// Refuses an HMAC key shorter than [`MIN_HMAC_KEY_BYTES`].
pub fn check_hmac_key(key: Option<&[u8]>) -> Result<()> {
  if key.is_some_and(|k| k.len() < MIN_HMAC_KEY_BYTES) {
    return crate::error::invalid(format!("`hmacKey` must be at least {MIN_HMAC_KEY_BYTES} bytes"));
  }
  Ok(())
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
  segment: Option<OsString>,
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
/// The entry format version written by this code (the `v` member of every line).
pub const ENTRY_VERSION: u64 = 1;

/// True when an entry's `v` is one this code reads: absent (lines written before the member
/// existed, which are version 1) or [`ENTRY_VERSION`].
pub(crate) fn version_supported(entry: &Value) -> bool {
  match entry.get("v") {
    None => true,
    Some(v) => v.as_u64() == Some(ENTRY_VERSION),
  }
}

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

/// One entry of the directory named like a segment.
#[derive(Debug, Clone)]
pub(crate) struct SegmentEntry {
  pub seq: u64,
  pub name: OsString,
  pub file_type: FileType,
}

impl SegmentEntry {
  pub fn name_lossy(&self) -> String {
    self.name.to_string_lossy().into_owned()
  }

  pub fn not_regular(&self, dir: &StateDir) -> LoaError {
    LoaError::NotRegularFile { path: dir.child_path(&self.name).display().to_string(), kind: kind_name(self.file_type) }
  }
}

/// Everything in `dir` named like a segment, oldest first, whatever its type (callers refuse
/// or report what is not a regular file).
pub(crate) fn segment_entries(dir: &StateDir) -> Result<Vec<SegmentEntry>> {
  let mut out: Vec<SegmentEntry> = dir
    .entries()?
    .into_iter()
    .filter_map(|e| {
      let seq = e.name_str().and_then(parse_segment_name)?;
      Some(SegmentEntry { seq, name: e.name, file_type: e.file_type })
    })
    .collect();
  out.sort_by_key(|e| e.seq);
  Ok(out)
}

/// The segments of `dir`, oldest first (anything named like one, whatever its type).
pub fn list_segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
  let handle = StateDir::open_root(dir)?;
  Ok(segment_entries(&handle)?.into_iter().map(|e| (e.seq, handle.child_path(&e.name))).collect())
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

/// Reads the end of `file` backwards: returns the length up to and including the last newline,
/// the last complete line (without its newline) and the number of bytes after it (a torn tail).
/// Only the tail is read (at most one entry line more than the window), so an append after
/// another process's append stays cheap.
fn read_tail(file: &StateFile) -> Result<(u64, Option<Vec<u8>>, u64)> {
  let len = file.len()?;
  let mut window = 64 * 1024u64;
  loop {
    let start = len.saturating_sub(window);
    let mut bytes = vec![0u8; (len - start) as usize];
    let got = file.read_at(&mut bytes, start)?;
    bytes.truncate(got);
    let Some(last_nl) = bytes.iter().rposition(|&b| b == b'\n') else {
      if start == 0 {
        return Ok((0, None, len));
      }
      if window > 2 * MAX_ENTRY_BYTES as u64 {
        // No newline in the last 2 MiB: not a torn entry line, but damage.
        return Err(LoaError::AuditCorrupt {
          segment: file.path().display().to_string(),
          line: 0,
          reason: "no line break in the last 2 MiB".into(),
        });
      }
      window *= 2;
      continue;
    };
    let complete = start + last_nl as u64 + 1;
    match bytes[..last_nl].iter().rposition(|&b| b == b'\n') {
      Some(prev_nl) => return Ok((complete, Some(bytes[prev_nl + 1..last_nl].to_vec()), len - complete)),
      None if start == 0 => return Ok((complete, Some(bytes[..last_nl].to_vec()), len - complete)),
      None if window > 2 * MAX_ENTRY_BYTES as u64 => {
        return Err(LoaError::AuditCorrupt {
          segment: file.path().display().to_string(),
          line: 0,
          reason: format!("the last line is longer than {MAX_ENTRY_BYTES} bytes"),
        })
      }
      None => window *= 2,
    }
  }
}

/// Complete lines in the first `upto` bytes of `file` (for messages only), read in chunks.
fn count_lines(file: &StateFile, upto: u64) -> u64 {
  let mut buffer = vec![0u8; 64 * 1024];
  let (mut at, mut lines) = (0u64, 0u64);
  while at < upto {
    let want = (upto - at).min(buffer.len() as u64) as usize;
    let Ok(n) = file.read_at(&mut buffer[..want], at) else { return lines };
    if n == 0 {
      break;
    }
    lines += memchr::memchr_iter(b'\n', &buffer[..n]).count() as u64;
    at += n as u64;
  }
  lines
}

/// Opens the segment `entry` for reading and writing, refusing anything but a regular file.
fn open_segment(dir: &StateDir, entry: &SegmentEntry, how: OpenMode) -> Result<StateFile> {
  if entry.file_type != FileType::RegularFile {
    return Err(entry.not_regular(dir));
  }
  dir.open_file(&entry.name, how)
}

impl AuditLog {
  /// Opens (creating `dir` if needed) the log, cutting off a torn last line, and checks that
  /// its last entry verifies under `options.hmac_key` and that the log reaches its checkpoint
  /// (`E_AUDIT_TRUNCATED` otherwise).
  pub fn open(dir: &Path, options: AuditOptions) -> Result<AuditLog> {
    options.validate()?;
    create_dir_durable(dir)?;
    let log = AuditLog { dir: dir.to_path_buf(), options, tail: Mutex::new(None), truncated: Mutex::new(None) };
    let handle = log.root()?;
    let _lock = log.lock(&handle)?;
    handle.clean_stale_temps()?;
    log.refresh(&handle)?;
    Ok(log)
  }

  pub fn dir(&self) -> &Path {
    &self.dir
  }

  fn root(&self) -> Result<StateDir> {
    StateDir::open_root(&self.dir)
  }

  fn key(&self) -> Option<&[u8]> {
    self.options.hmac_key.as_ref().map(|k| k.as_slice())
  }

  /// Takes the log's lock; the lock file is never created or opened through a symlink.
  fn lock(&self, dir: &StateDir) -> Result<StateFile> {
    let file = dir.open_file(LOCK, OpenMode::CREATE)?;
    lock_file(file.file(), self.options.lock_timeout, "audit log")?;
    Ok(file)
  }

  /// The torn tail this handle cut off most recently, if any.
  pub fn truncated_tail(&self) -> Option<TornTail> {
    self.truncated.lock().unwrap_or_else(|e| e.into_inner()).clone()
  }

  /// Where the chain ends now (as far as this handle knows after its last open or append).
  pub fn head(&self) -> Result<Head> {
    let dir = self.root()?;
    let _lock = self.lock(&dir)?;
    Ok(self.refresh(&dir)?.head)
  }

  fn forget_tail(&self) {
    *self.tail.lock().unwrap_or_else(|e| e.into_inner()) = None;
  }

  /// Brings the cached tail up to date. Must hold the lock.
  fn refresh(&self, dir: &StateDir) -> Result<Tail> {
    let segments = segment_entries(dir)?;
    let mut cache = self.tail.lock().unwrap_or_else(|e| e.into_inner());
    if let (Some(cached), Some(newest)) = (cache.as_ref(), segments.last()) {
      if newest.file_type == FileType::RegularFile && cached.segment.as_deref() == Some(newest.name.as_os_str()) {
        let stat = rustix::fs::statat(dir.fd(), &newest.name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).ok();
        let modified = stat.as_ref().map(|s| {
          std::time::UNIX_EPOCH + Duration::new(s.st_mtime.max(0) as u64, s.st_mtime_nsec.clamp(0, 999_999_999) as u32)
        });
        if stat.as_ref().map(|s| s.st_size as u64) == Some(cached.len) && modified == cached.modified {
          return Ok(cached.clone());
        }
      }
    }
    *cache = None;
    let tail = self.read_chain_end(dir, &segments)?;
    if let Some(checkpoint) = read_checkpoint(dir)? {
      checkpoint.check_reached_by(&tail.head)?;
    }
    *cache = Some(tail.clone());
    Ok(tail)
  }

  /// Finds the last entry (walking back over an empty newest segment), cutting a torn tail.
  fn read_chain_end(&self, dir: &StateDir, segments: &[SegmentEntry]) -> Result<Tail> {
    let Some(newest) = segments.last() else {
      return Ok(Tail { segment: None, len: 0, modified: None, head: Head { seq: 0, hash: GENESIS.into() } });
    };
    let file = open_segment(dir, newest, OpenMode::READ_WRITE)?;
    let (complete, last, torn) = read_tail(&file)?;
    if torn > 0 {
      let lines = count_lines(&file, complete);
      file.set_len(complete)?;
      file.sync_all()?;
      *self.truncated.lock().unwrap_or_else(|e| e.into_inner()) =
        Some(TornTail { segment: newest.name_lossy(), line: lines + 1, bytes: torn });
    }
    let head = match last {
      Some(line) => self.check_last_entry(&line, &newest.name_lossy(), || count_lines(&file, complete))?,
      None => {
        // An empty newest segment (a writer died right after creating it): the chain ends in
        // the segment before, and the next entry must be this segment's first.
        let before = &segments[..segments.len() - 1];
        let head = self.read_chain_end(dir, before)?.head;
        if head.seq + 1 != newest.seq {
          return Err(LoaError::AuditCorrupt {
            segment: newest.name_lossy(),
            line: 1,
            reason: format!("empty segment for seq {}, but the chain ends at seq {}", newest.seq, head.seq),
          });
        }
        head
      }
    };
    let modified = file.modified();
    Ok(Tail { segment: Some(newest.name.clone()), len: complete, modified, head })
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
    if !version_supported(&value) {
      return Err(corrupt(format!("entry format version is not {ENTRY_VERSION}")));
    }
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

  /// Appends an event; returns once it is durable. If the disk refuses (a failed write or
  /// fsync), the line is cut off again and a segment this append created is removed, so no
  /// partial or unacknowledged line stays visible; the error is `E_IO`.
  pub fn append(&self, event: &AuditEvent) -> Result<Head> {
    if event.action.is_empty() || event.action.len() > 256 || event.action.chars().any(char::is_control) {
      return crate::error::invalid("`action` must be 1-256 bytes without control characters");
    }
    let dir = self.root()?;
    let _lock = self.lock(&dir)?;
    dir.clean_stale_temps()?;
    let result = self.append_locked(&dir, event);
    if result.is_err() {
      // Whatever happened on disk, re-read it next time.
      self.forget_tail();
    }
    result
  }

  fn append_locked(&self, dir: &StateDir, event: &AuditEvent) -> Result<Head> {
    let tail = self.refresh(dir)?;
    let seq = tail.head.seq + 1;
    let mut body = Map::new();
    body.insert("v".into(), Value::from(ENTRY_VERSION));
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
    let (name, len, mut file, created) = match &tail.segment {
      Some(name) if tail.len == 0 || tail.len + line.len() as u64 <= self.options.max_segment_bytes => {
        (name.clone(), tail.len, dir.open_file(name, OpenMode::READ_WRITE)?, false)
      }
      _ => {
        // First segment, or rotation: a new file named by this entry's seq, which no other
        // segment can have (seqs are allocated under the lock).
        let name = OsString::from(segment_name(seq));
        let file = dir.open_file(&name, OpenMode::CREATE_NEW)?;
        if let Err(e) = dir.sync() {
          let _ = dir.remove_file(&name);
          return Err(e);
        }
        (name, 0, file, true)
      }
    };
    // The line goes at the end of the complete lines read under the lock (never after bytes
    // another process left half-written: those were cut off by `refresh`).
    let written = file.write_all_at(&line, len).and_then(|()| file.sync_data());
    if let Err(e) = written {
      self.roll_back(dir, &name, &mut file, len, created);
      return Err(e);
    }
    let modified = file.modified();
    let head = Head { seq, hash };
    *self.tail.lock().unwrap_or_else(|e| e.into_inner()) =
      Some(Tail { segment: Some(name), len: len + line.len() as u64, modified, head: head.clone() });
    Ok(head)
  }

  /// Undoes a failed append, best effort: the segment is cut back to what it held (a new one
  /// is removed). If even that fails, the next `refresh` finds either a torn tail (cut then) or
  /// a complete line that was never acknowledged.
  fn roll_back(&self, dir: &StateDir, name: &OsStr, file: &mut StateFile, len: u64, created: bool) {
    if created {
      if dir.remove_file(name).is_ok() {
        let _ = dir.sync();
      }
    } else if file.set_len(len).is_ok() {
      let _ = file.sync_all();
    }
  }

  /// Signs the current head with `ring`'s signing key and stores it as the log's checkpoint
  /// (`checkpoint.json`, atomically). From then on a log that ends before it is
  /// `E_AUDIT_TRUNCATED`. Refuses (`E_AUDIT_TRUNCATED`) when the log is already shorter than
  /// its previous checkpoint.
  pub fn checkpoint(&self, ring: &crate::sign::keys::KeyRing) -> Result<Checkpoint> {
    let dir = self.root()?;
    let _lock = self.lock(&dir)?;
    dir.clean_stale_temps()?;
    let result = self.refresh(&dir).and_then(|tail| {
      let checkpoint = Checkpoint::sign(&tail.head, alg_name(self.key()), ring)?;
      checkpoint.write(&dir)?;
      Ok(checkpoint)
    });
    if result.is_err() {
      self.forget_tail();
    }
    result
  }

  /// Verifies the whole log with this handle's key (read-only; see [`verify`]).
  pub fn verify(&self, expected_head: Option<&Head>) -> Result<AuditVerification> {
    verify(&self.dir, self.key(), expected_head)
  }

  /// [`verify`] with every option; the HMAC key is this handle's.
  pub fn verify_with(&self, options: &VerifyOptions) -> Result<AuditVerification> {
    verify_with(&self.dir, &VerifyOptions { hmac_key: self.key(), ..options.clone() })
  }
}

#[cfg(test)]
mod tests;
