//! Dead letters: captures the disk refused, kept until they can be stored, then stored once.
//!
//! A capture that fails (disk full, permissions, a file where the WAL directory belongs) must not
//! be lost, and must not stay parked for ever either. The caller (the OpenClaw plugin, after its
//! retries) hands the entry to [`DeadLetterQueue::append`], which redacts it exactly as
//! [`MemoryStore::capture`](crate::memory::MemoryStore::capture) would (content, tags, every
//! string and number of the metadata, keys included: nothing unredacted reaches the disk; the
//! agent id is an identifier, checked and kept as given) and appends
//! one line to `<workspace>/.loa/dead-letter.jsonl` (or to the directory given to
//! [`DeadLetterQueue::in_dir`], e.g. on another filesystem than the one that refused the capture).
//! [`DeadLetterQueue::replay`] later captures each entry again, in the session it came from, and
//! removes the ones that are settled. An append the disk refuses leaves nothing behind: no half
//! line, and no queue file it created (never an empty `dead-letter.jsonl`).
//!
//! Guarantees:
//! - **Idempotent replay.** Each letter has a stable id (sha256 of the canonical JSON of its
//!   session id and redacted entry, timestamp included), and a memory's id is the hash of its
//!   normalised content, which the store's duplicate gate checks against everything in the
//!   grimoire and every session's WAL. A letter whose capture is already stored (an earlier
//!   replay killed before it could rewrite the file, or the original capture landed after all)
//!   is answered `duplicate` and removed: replaying stores it at most once, whatever crashes.
//! - **Nothing lost.** The file is rewritten only after every store of the replay is closed (its
//!   records durable), atomically (temp file, fsync, rename, directory fsync). A letter that
//!   still fails stays, with its attempt count, last error and time updated; lines that cannot
//!   be read (damaged, or written by a newer version) are kept byte for byte and reported.
//! - **State file rules.** Everything goes through [`crate::fsutil::StateDir`]: no symlink is
//!   followed below the workspace, anything but a regular file is `E_NOT_REGULAR_FILE`, reads are
//!   bounded by [`MAX_FILE_BYTES`] (and an append that would pass it is refused, so the file can
//!   always be read back), appends are fsynced, and all writers take `dead-letter.lock`.
//!
//! - **Forgotten means gone from here too.** Forgetting a memory removes its letters (and any
//!   line holding its id or text, unreadable ones included) under the same lock (see
//!   `DeadLetterQueue::forget_memories`).
//!
//! Settled letters are those stored now (`stored`), already stored (`duplicate`), refused by the
//! quality gates as judged now (`rejected`: the store would never take them; the temporal gate
//! with `maxAgeMs` sees the capture's original timestamp), and blocked by redaction policy
//! (`blocked`: only the kinds and fingerprints of the findings were kept, nothing to store).
//!
//! Line format (version 1), one JSON object per line:
//! `{"v":1,"id":"<sha256>","sessionId":"…","entry":{"type":"…","content":"…"|null,"tags":[…],
//! "agentId":"…","confidence":0.9,"timestamp":"…","metadata":{…}},"blocked":false,
//! "findings":[{"field":"content","kind":"email","fingerprint":"…"}],"attempts":3,
//! "error":{"code":"E_IO","message":"…"},"firstFailedAt":"…","lastAttemptAt":"…"}`.
//! Reading rule: version 1 is read; a line without `v` is the plugin's earlier format (read, and
//! written back as version 1); a line with a higher `v` is kept untouched and reported.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::{invalid, LoaError, Result};
use crate::fsutil::{OpenMode, StateDir, StateFile};
use crate::gates::Gate;
use crate::memory::{Entry, MemoryKind, MemoryStore, RedactedEntry, MAX_CONTENT_BYTES, MAX_METADATA_BYTES};
use crate::redact::{redact, RedactOptions};
use crate::timestamp::{format_ms, now_ms, parse_rfc3339_ms};

/// Directory of the queue, relative to the workspace.
pub const DIR: &str = ".loa";
/// The queue itself, in [`DIR`].
pub const FILE_NAME: &str = "dead-letter.jsonl";
/// Taken by every writer of the queue (append, replay), in [`DIR`].
pub const LOCK_NAME: &str = "dead-letter.lock";
/// Version of the line format written.
pub const FORMAT_VERSION: u32 = 1;
/// Largest queue file read or grown to (64 MiB): `E_TOO_LARGE` beyond.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// How long a writer waits for another one when the caller does not say.
pub const DEFAULT_LOCK_TIMEOUT_MS: u64 = 5000;
/// Longest error message kept with a letter (in bytes; cut at a character boundary).
const MAX_ERROR_MESSAGE_BYTES: usize = 1024;

/// The entry as the queue keeps it: already redacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LetterEntry {
  #[serde(rename = "type")]
  pub memory_type: String,
  /// Redacted content; `None` when redaction policy blocked the entry.
  pub content: Option<String>,
  #[serde(default, skip_serializing_if = "Vec::is_empty")]
  pub tags: Vec<String>,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub agent_id: Option<String>,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub confidence: Option<f64>,
  /// When the capture was made (canonical UTC), so that a replay keeps the original time.
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub timestamp: Option<String>,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub metadata: Option<Value>,
}

/// Kind and keyed fingerprint of a value redacted from the entry; never the value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LetterFinding {
  #[serde(default = "content_field")]
  pub field: String,
  pub kind: String,
  pub fingerprint: String,
}

fn content_field() -> String {
  "content".into()
}

/// The error that put a letter in the queue, or of its last replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LetterError {
  pub code: String,
  pub message: String,
}

/// One dead letter (format version 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeadLetter {
  #[serde(rename = "v")]
  pub version: u32,
  /// sha256 (hex) of the canonical JSON of `{sessionId, entry}`: the same capture always has the
  /// same id.
  pub id: String,
  pub session_id: String,
  pub entry: LetterEntry,
  pub blocked: bool,
  #[serde(default)]
  pub findings: Vec<LetterFinding>,
  /// Capture attempts so far, the replays included.
  pub attempts: u32,
  #[serde(default)]
  pub error: Option<LetterError>,
  pub first_failed_at: String,
  pub last_attempt_at: String,
}

/// The plugin's line format before versioning (`at` instead of the two times, no id).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LegacyLetter {
  session_id: String,
  entry: LetterEntry,
  #[serde(default)]
  blocked: bool,
  #[serde(default)]
  findings: Vec<LetterFinding>,
  #[serde(default)]
  attempts: u32,
  #[serde(default)]
  error: Option<LetterError>,
  #[serde(default)]
  at: Option<String>,
}

/// What [`DeadLetterQueue::append`] is given: the entry as it was given to `capture`
/// (unredacted: the queue redacts it), and why it failed.
#[derive(Debug, Clone)]
pub struct NewDeadLetter {
  pub session_id: String,
  pub entry: Entry,
  /// Attempts already made (at least 1 is recorded).
  pub attempts: u32,
  pub error: Option<LetterError>,
}

/// A line of the queue that is not a letter this version can replay. Kept byte for byte.
#[derive(Debug, Clone, PartialEq)]
pub struct UnreadableLine {
  /// 1-based line number.
  pub line: usize,
  /// Why (never the line's content).
  pub reason: String,
}

/// The queue's content.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
  /// In file order; a letter written twice (same id) is listed once.
  pub letters: Vec<DeadLetter>,
  pub unreadable: Vec<UnreadableLine>,
}

/// What replaying one letter did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
  /// Captured now; removed from the queue.
  Stored,
  /// The store already holds this memory; removed.
  Duplicate,
  /// The quality gates refuse it; removed.
  Rejected,
  /// Redaction policy blocked it (nothing of it can be stored); removed.
  Blocked,
  /// Still failing; kept, with its attempt count and error updated.
  Failed,
}

impl Outcome {
  pub fn as_str(self) -> &'static str {
    match self {
      Outcome::Stored => "stored",
      Outcome::Duplicate => "duplicate",
      Outcome::Rejected => "rejected",
      Outcome::Blocked => "blocked",
      Outcome::Failed => "failed",
    }
  }

  fn settled(self) -> bool {
    self != Outcome::Failed
  }
}

/// One letter's replay, for reports (ids and codes only, never content).
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayResult {
  pub id: String,
  pub session_id: String,
  pub outcome: Outcome,
  /// The memory's id when stored.
  pub memory_id: Option<String>,
  /// Gates that refused it, when rejected.
  pub failed_gates: Vec<Gate>,
  /// The error, when it failed again.
  pub error: Option<LetterError>,
  pub attempts: u32,
}

/// What [`DeadLetterQueue::replay`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayReport {
  pub results: Vec<ReplayResult>,
  /// Letters still in the queue afterwards (the failed ones).
  pub remaining: usize,
  /// Lines kept untouched because they cannot be read.
  pub unreadable: Vec<UnreadableLine>,
}

impl ReplayReport {
  /// How many letters had `outcome`.
  pub fn count(&self, outcome: Outcome) -> usize {
    self.results.iter().filter(|r| r.outcome == outcome).count()
  }
}

/// The dead-letter queue of one workspace (`<workspace>/.loa/dead-letter.jsonl`).
#[derive(Debug, Clone)]
pub struct DeadLetterQueue {
  workspace: PathBuf,
  /// Where the queue's files are kept instead of `<workspace>/.loa` (see [`DeadLetterQueue::in_dir`]).
  dir: Option<PathBuf>,
  lock_timeout: Duration,
}

/// One non-empty line of the queue file.
struct Parsed {
  /// 1-based.
  number: usize,
  /// The line as read (without its newline): what is written back for an unreadable line.
  raw: Vec<u8>,
  letter: Option<DeadLetter>,
  /// The last line, without a newline: an append cut short (or still in progress).
  incomplete: bool,
}

impl DeadLetterQueue {
  /// The queue of `workspace` (which must exist when the queue is used). `lock_timeout_ms`:
  /// how long a writer waits for another; default [`DEFAULT_LOCK_TIMEOUT_MS`].
  pub fn new(workspace: impl Into<PathBuf>, lock_timeout_ms: Option<u64>) -> DeadLetterQueue {
    DeadLetterQueue {
      workspace: workspace.into(),
      dir: None,
      lock_timeout: Duration::from_millis(lock_timeout_ms.unwrap_or(DEFAULT_LOCK_TIMEOUT_MS)),
    }
  }

  /// Keeps the queue (its file and lock) in `dir` instead of `<workspace>/.loa`: a capture the
  /// workspace's disk refused can then wait on another filesystem. A relative `dir` is below the
  /// workspace, reached without following any symlink (`..` is refused); an absolute one is the
  /// caller's choice (symlinks in it are followed, like a workspace path). Created when missing.
  pub fn in_dir(mut self, dir: Option<PathBuf>) -> DeadLetterQueue {
    self.dir = dir;
    self
  }

  /// Where the queue is kept, for messages.
  pub fn path(&self) -> PathBuf {
    match &self.dir {
      None => self.workspace.join(DIR).join(FILE_NAME),
      Some(dir) => self.workspace.join(dir).join(FILE_NAME),
    }
  }

  fn dir(&self, create: bool) -> Result<Option<StateDir>> {
    match &self.dir {
      Some(dir) if dir.is_absolute() => {
        if create {
          return StateDir::create_root(dir).map(Some);
        }
        match StateDir::open_root(dir) {
          Ok(d) => Ok(Some(d)),
          Err(LoaError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(None),
          Err(e) => Err(e),
        }
      }
      Some(dir) => StateDir::open_root(&self.workspace)?.descend(dir, create),
      None => {
        let root = StateDir::open_root(&self.workspace)?;
        if create {
          root.create_subdir_mode(DIR, 0o700).map(Some)
        } else {
          root.subdir(DIR)
        }
      }
    }
  }

  /// Takes the queue's lock; held until the returned file is dropped.
  fn lock(&self, dir: &StateDir) -> Result<StateFile> {
    let file = dir.open_file(LOCK_NAME, OpenMode::CREATE.with_mode(0o600))?;
    crate::lock::lock_file(file.file(), self.lock_timeout, "the dead-letter queue")?;
    Ok(file)
  }

  /// Redacts `letter` (with `redaction`, as the store would) and appends it durably (one line,
  /// fsynced). Returns the letter as stored. Refuses with `E_TOO_LARGE` when the queue would
  /// pass [`MAX_FILE_BYTES`], and with `E_INVALID_ARGUMENT` for an entry no store could take
  /// (a session id the WAL refuses, an oversized field).
  pub fn append(&self, letter: NewDeadLetter, redaction: &RedactOptions) -> Result<DeadLetter> {
    let letter = build_letter(letter, redaction)?;
    let mut line = serde_json::to_vec(&letter).map_err(|e| LoaError::Internal(e.to_string()))?;
    line.push(b'\n');
    let dir = self.dir(true)?.ok_or_else(|| LoaError::Internal("queue directory vanished".into()))?;
    let _lock = self.lock(&dir)?;
    let created = dir.kind_of(FILE_NAME)?.is_none();
    let mut file = dir.open_file(FILE_NAME, OpenMode::APPEND.with_mode(0o600))?;
    let len = file.len()?;
    // A line cut short by a crash stays a line of its own (reported as unreadable), never glued
    // to this one.
    let mut last = [0u8; 1];
    let separate = len > 0 && file.read_at(&mut last, len - 1)? == 1 && last[0] != b'\n';
    let size = len + line.len() as u64 + u64::from(separate);
    if size > MAX_FILE_BYTES {
      return Err(LoaError::TooLarge { what: self.path().display().to_string(), size, limit: MAX_FILE_BYTES });
    }
    if separate {
      line.insert(0, b'\n');
    }
    let written = file.write_all(&line).and_then(|()| file.sync_data());
    if let Err(e) = written {
      // Best effort (we hold the lock, so the tail is ours): no half line stays behind, and a
      // file this append created goes again, so that a refusing disk is not left with an empty
      // queue that looks like a written one.
      if created {
        drop(file);
        if matches!(dir.remove_file(FILE_NAME), Ok(true)) {
          let _ = dir.sync();
        }
      } else {
        let _ = file.set_len(len).and_then(|()| file.sync_data());
      }
      return Err(e);
    }
    if created {
      dir.sync()?;
    }
    Ok(letter)
  }

  /// The letters in the queue (empty when there is none), without taking the lock.
  pub fn list(&self) -> Result<Listing> {
    let Some(dir) = self.dir(false)? else { return Ok(Listing::default()) };
    let Some(data) = dir.read(FILE_NAME, MAX_FILE_BYTES)? else { return Ok(Listing::default()) };
    Ok(listing(&parse(&data)))
  }

  /// Captures every letter again through a [`MemoryStore`] of its own session (`open_store`
  /// opens the store of a session id: the workspace's layout, gates and redaction are the
  /// caller's; a session whose store does not open fails its letters, not the replay), then
  /// rewrites the queue without the settled letters. See the module documentation.
  pub fn replay(&self, open_store: &dyn Fn(&str) -> Result<MemoryStore>) -> Result<ReplayReport> {
    let Some(dir) = self.dir(false)? else { return Ok(ReplayReport::default()) };
    // No queue, nothing to do: answered without taking (or creating) the lock.
    if dir.kind_of(FILE_NAME)?.is_none() {
      return Ok(ReplayReport::default());
    }
    let _lock = self.lock(&dir)?;
    dir.clean_stale_temps()?;
    let Some(data) = dir.read(FILE_NAME, MAX_FILE_BYTES)? else { return Ok(ReplayReport::default()) };
    let lines = parse(&data);
    let Listing { letters, unreadable } = listing(&lines);

    let mut by_session: BTreeMap<&str, Vec<&DeadLetter>> = BTreeMap::new();
    for letter in &letters {
      by_session.entry(letter.session_id.as_str()).or_default().push(letter);
    }
    let mut results: BTreeMap<String, ReplayResult> = BTreeMap::new();
    let now = format_ms(now_ms());
    for (session_id, session_letters) in by_session {
      let opened = open_store(session_id);
      let mut session_results: Vec<ReplayResult> = match &opened {
        Ok(store) => session_letters.iter().map(|l| replay_one(store, l)).collect(),
        Err(e) => session_letters.iter().map(|l| failed(l, e)).collect(),
      };
      // The queue forgets a letter only once its record is durable: close before rewriting.
      if let Ok(store) = opened {
        if let Err(e) = store.close() {
          for r in session_results.iter_mut().filter(|r| r.outcome == Outcome::Stored) {
            *r = failed_result(r, &e);
          }
        }
      }
      for r in session_results {
        results.insert(r.id.clone(), r);
      }
    }

    let mut out = Vec::with_capacity(data.len());
    let mut kept = HashSet::new();
    for line in &lines {
      let Some(letter) = &line.letter else {
        out.extend_from_slice(&line.raw);
        out.push(b'\n');
        continue;
      };
      let result = &results[&letter.id];
      if result.outcome.settled() || !kept.insert(letter.id.clone()) {
        continue;
      }
      let mut updated = letter.clone();
      updated.attempts = result.attempts;
      updated.error = result.error.clone();
      updated.last_attempt_at = now.clone();
      match serde_json::to_vec(&updated) {
        Ok(bytes) => out.extend_from_slice(&bytes),
        Err(_) => out.extend_from_slice(&line.raw),
      }
      out.push(b'\n');
    }
    if out.is_empty() {
      if dir.remove_file(FILE_NAME)? {
        dir.sync()?;
      }
    } else if out != data {
      dir.write_atomic(FILE_NAME, &out, Some(0o600))?;
    }
    let results: Vec<ReplayResult> = letters.iter().filter_map(|l| results.get(&l.id).cloned()).collect::<Vec<_>>();
    Ok(ReplayReport { remaining: kept.len(), results, unreadable })
  }
}

impl DeadLetterQueue {
  /// Removes the letters of the memories `ids` (a letter's content hashes to one of them, as
  /// a capture's id is computed) and any other line `holds` says holds one of them (an
  /// unreadable line too: a forget wins over keeping it byte for byte), rewriting the queue
  /// atomically under its lock. Returns how many lines were removed. What
  /// [`MemoryStore::forget`](crate::memory::MemoryStore::forget) calls.
  pub(crate) fn forget_memories(&self, ids: &HashSet<&str>, holds: &dyn Fn(&[u8]) -> bool) -> Result<usize> {
    let Some(dir) = self.dir(false)? else { return Ok(0) };
    if dir.kind_of(FILE_NAME)?.is_none() {
      return Ok(0);
    }
    let _lock = self.lock(&dir)?;
    let Some(data) = dir.read(FILE_NAME, MAX_FILE_BYTES)? else { return Ok(0) };
    let mut out = Vec::with_capacity(data.len());
    let mut removed = 0;
    for line in parse(&data) {
      let named = line.letter.as_ref().and_then(|l| l.entry.content.as_deref()).map(crate::gates::content_hash);
      if named.is_some_and(|id| ids.contains(id.as_str())) || holds(line.raw.as_slice()) {
        removed += 1;
        continue;
      }
      out.extend_from_slice(&line.raw);
      if !line.incomplete {
        out.push(b'\n');
      }
    }
    if removed == 0 {
      return Ok(0);
    }
    if out.is_empty() {
      dir.remove_file(FILE_NAME)?;
      dir.sync()?;
    } else {
      dir.write_atomic(FILE_NAME, &out, Some(0o600))?;
    }
    // An interrupted rewrite's temp file would hold the old lines.
    dir.clean_stale_temps()?;
    Ok(removed)
  }
}

fn replay_one(store: &MemoryStore, letter: &DeadLetter) -> ReplayResult {
  let result = |outcome, memory_id, failed_gates| ReplayResult {
    id: letter.id.clone(),
    session_id: letter.session_id.clone(),
    outcome,
    memory_id,
    failed_gates,
    error: None,
    attempts: letter.attempts.saturating_add(1),
  };
  let Some(content) = letter.entry.content.clone().filter(|_| !letter.blocked) else {
    return result(Outcome::Blocked, None, Vec::new());
  };
  let Ok(kind) = MemoryKind::parse(&letter.entry.memory_type) else {
    return result(Outcome::Blocked, None, Vec::new());
  };
  let entry = Entry {
    kind,
    content,
    agent_id: letter.entry.agent_id.clone(),
    confidence: letter.entry.confidence,
    tags: letter.entry.tags.clone(),
    timestamp: letter.entry.timestamp.clone(),
    metadata: letter.entry.metadata.clone(),
  };
  // One try: a letter the disk refuses again stays queued for the next replay, and the thread
  // running the replay (a shared pool's, under Node) never sleeps.
  match store.capture_once(&entry, &Default::default()) {
    Ok(o) if o.accepted => result(Outcome::Stored, o.id, Vec::new()),
    Ok(o) if o.blocked => result(Outcome::Blocked, None, Vec::new()),
    Ok(o) => {
      let refused: Vec<Gate> = o.gates.iter().filter(|g| !g.pass).map(|g| g.name).collect();
      if refused.contains(&Gate::Duplicate) {
        result(Outcome::Duplicate, None, refused)
      } else {
        result(Outcome::Rejected, None, refused)
      }
    }
    Err(e) => failed(letter, &e),
  }
}

fn failed(letter: &DeadLetter, error: &LoaError) -> ReplayResult {
  ReplayResult {
    id: letter.id.clone(),
    session_id: letter.session_id.clone(),
    outcome: Outcome::Failed,
    memory_id: None,
    failed_gates: Vec::new(),
    error: Some(letter_error(error.code(), &error.to_string())),
    attempts: letter.attempts.saturating_add(1),
  }
}

fn failed_result(r: &ReplayResult, error: &LoaError) -> ReplayResult {
  ReplayResult {
    outcome: Outcome::Failed,
    memory_id: None,
    error: Some(letter_error(error.code(), &error.to_string())),
    ..r.clone()
  }
}

/// An error as kept with a letter: the code, and the message cut to a bounded length.
pub fn letter_error(code: &str, message: &str) -> LetterError {
  let mut end = message.len().min(MAX_ERROR_MESSAGE_BYTES);
  while !message.is_char_boundary(end) {
    end -= 1;
  }
  LetterError { code: code.chars().take(64).collect(), message: message[..end].to_string() }
}

/// Splits the file into its non-empty lines, each read as a letter when it is one.
fn parse(data: &[u8]) -> Vec<Parsed> {
  let ends_clean = data.last().is_none_or(|&b| b == b'\n');
  let pieces: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
  let count = pieces.len();
  let mut out = Vec::new();
  for (i, piece) in pieces.into_iter().enumerate() {
    if piece.iter().all(u8::is_ascii_whitespace) {
      continue;
    }
    let incomplete = i + 1 == count && !ends_clean;
    out.push(Parsed {
      number: i + 1,
      raw: piece.to_vec(),
      letter: if incomplete { None } else { parse_letter(piece) },
      incomplete,
    });
  }
  out
}

fn parse_letter(bytes: &[u8]) -> Option<DeadLetter> {
  let value = serde_json::from_slice::<Value>(bytes).ok()?;
  match value.as_object()?.get("v") {
    Some(v) if v.as_u64() == Some(u64::from(FORMAT_VERSION)) => {
      let letter = serde_json::from_value::<DeadLetter>(value).ok()?;
      // An id that is not the hash of what it names would defeat de-duplication.
      (letter_id(&letter.session_id, &letter.entry).ok()? == letter.id).then_some(letter)
    }
    Some(_) => None,
    None => {
      let old = serde_json::from_value::<LegacyLetter>(value).ok()?;
      let at = old.at.unwrap_or_else(|| format_ms(now_ms()));
      Some(DeadLetter {
        version: FORMAT_VERSION,
        id: letter_id(&old.session_id, &old.entry).ok()?,
        session_id: old.session_id,
        blocked: old.blocked || old.entry.content.is_none(),
        entry: old.entry,
        findings: old.findings,
        attempts: old.attempts,
        error: old.error,
        first_failed_at: at.clone(),
        last_attempt_at: at,
      })
    }
  }
}

/// Why a line is not a letter (never its content).
fn unreadable_reason(line: &Parsed) -> String {
  if line.incomplete {
    return "incomplete last line (an append was interrupted, or is in progress)".into();
  }
  match serde_json::from_slice::<Value>(&line.raw) {
    Err(_) => "not JSON".into(),
    Ok(Value::Object(o)) => match o.get("v").and_then(Value::as_u64) {
      Some(v) if v > u64::from(FORMAT_VERSION) => {
        format!("format version {v}, newer than this version of @loa/core reads; kept untouched")
      }
      _ => "not a dead letter (a field is missing or of the wrong type, or its id does not match)".into(),
    },
    Ok(_) => "not a JSON object".into(),
  }
}

fn listing(lines: &[Parsed]) -> Listing {
  let mut out = Listing::default();
  let mut seen = HashSet::new();
  for line in lines {
    match &line.letter {
      Some(letter) => {
        if seen.insert(letter.id.clone()) {
          out.letters.push(letter.clone());
        }
      }
      None => out.unreadable.push(UnreadableLine { line: line.number, reason: unreadable_reason(line) }),
    }
  }
  out
}

/// The stable id of a capture: sha256 (hex) of the canonical JSON (RFC 8785) of
/// `{"entry": …, "sessionId": …}`.
pub fn letter_id(session_id: &str, entry: &LetterEntry) -> Result<String> {
  let mut object = Map::new();
  object.insert("sessionId".into(), Value::String(session_id.to_string()));
  object.insert("entry".into(), serde_json::to_value(entry).map_err(|e| LoaError::Internal(e.to_string()))?);
  let canonical = crate::jcs::to_vec(&Value::Object(object))?;
  Ok(hex::encode(Sha256::digest(&canonical)))
}

fn build_letter(letter: NewDeadLetter, options: &RedactOptions) -> Result<DeadLetter> {
  crate::wal::reader::validate_session_id(&letter.session_id)?;
  let entry = &letter.entry;
  if let Some(agent) = &entry.agent_id {
    crate::memory::check_agent_id(agent)?;
  }
  if entry.content.len() > MAX_CONTENT_BYTES {
    return Err(LoaError::TooLarge {
      what: "memory content".into(),
      size: entry.content.len() as u64,
      limit: MAX_CONTENT_BYTES as u64,
    });
  }
  if let Some(meta) = &entry.metadata {
    if !meta.is_object() {
      return invalid("`metadata` must be a plain object");
    }
    let size = meta.to_string().len();
    if size > MAX_METADATA_BYTES {
      return Err(LoaError::TooLarge {
        what: "memory metadata".into(),
        size: size as u64,
        limit: MAX_METADATA_BYTES as u64,
      });
    }
  }
  if entry.confidence.is_some_and(|c| !c.is_finite()) {
    return invalid("`confidence` must be a finite number");
  }
  let timestamp = match &entry.timestamp {
    Some(t) => parse_rfc3339_ms(t, "timestamp")?,
    None => now_ms(),
  };

  let RedactedEntry { content, tags, metadata, findings, blocked } = entry.redacted(options);
  // An identifier (checked above), kept as the capture will store it: never redacted.
  let agent_id = entry.agent_id.clone();
  let stored = if blocked {
    // Refused by policy: only what kind of value it held (and its fingerprint) is kept.
    LetterEntry {
      memory_type: entry.kind.as_str().to_string(),
      content: None,
      tags: Vec::new(),
      agent_id: None,
      confidence: entry.confidence,
      timestamp: Some(format_ms(timestamp)),
      metadata: None,
    }
  } else {
    LetterEntry {
      memory_type: entry.kind.as_str().to_string(),
      content: Some(content),
      tags,
      agent_id,
      confidence: entry.confidence,
      timestamp: Some(format_ms(timestamp)),
      metadata,
    }
  };
  let error = letter.error.map(|e| {
    let message = redact(&e.message, options).text;
    letter_error(&e.code, &message)
  });
  let now = format_ms(now_ms());
  Ok(DeadLetter {
    version: FORMAT_VERSION,
    id: letter_id(&letter.session_id, &stored)?,
    session_id: letter.session_id,
    entry: stored,
    blocked,
    findings: findings
      .into_iter()
      .map(|f| LetterFinding { field: f.field, kind: f.finding.kind, fingerprint: f.finding.fingerprint })
      .collect(),
    attempts: letter.attempts.max(1),
    error,
    first_failed_at: now.clone(),
    last_attempt_at: now,
  })
}

#[cfg(test)]
mod tests;
