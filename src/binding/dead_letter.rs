//! `appendDeadLetter`, `listDeadLetters`, `replayDeadLetters`: a workspace's dead-letter queue
//! (`crate::dead_letter`), for the OpenClaw plugin and `loa dead-letter`.

use std::path::PathBuf;

use napi::bindgen_prelude::*;
use napi::{Env, Unknown};
use napi_derive::napi;

use super::args::{self, field, optional_f64, optional_string_array, required_object};
use super::fs::CoreTask;
use super::{guard, to_napi};
use crate::dead_letter as core;
use crate::error::{LoaError, Result};
use crate::memory::{Entry, MemoryKind, MemoryStore, StoreOptions};
use crate::redact::RedactOptions;

/// Where a workspace's dead-letter queue is (`<workspaceDir>/.loa/dead-letter.jsonl`).
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field
pub struct DeadLetterOptions {
  pub workspace_dir: String,
  /// How long to wait for another writer of the queue. Default 5000.
  pub lock_timeout_ms: Option<u32>,
  /// How `appendDeadLetter` redacts the entry: pass the options the `MemoryStore` captures with.
  pub redaction: Option<super::memory::MemoryRedactionOptions>,
}

/// Options of `replayDeadLetters`: the workspace layout, gates and redaction of the stores it
/// opens (one per session found in the queue), as in `MemoryStoreOptions` without `sessionId`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field
pub struct DeadLetterReplayOptions {
  pub workspace_dir: String,
  pub grimoires_dir: Option<String>,
  pub wal_dir: Option<String>,
  /// How long to wait for the queue's lock and for each session's WAL lock. A session another
  /// store holds open fails this replay (its letters stay) once this has passed. Default
  /// `wal.lockTimeoutMs` (5000) for sessions, 5000 for the queue.
  pub lock_timeout_ms: Option<u32>,
  pub gates: Option<super::gates::GateOptions>,
  pub redaction: Option<super::memory::MemoryRedactionOptions>,
}

/// Why a capture failed, as `appendDeadLetter` is told (an `Error` with a `code` will do).
#[napi(object)]
pub struct DeadLetterError {
  /// `E_IO`, `E_WAL_LOCKED`, ...
  pub code: String,
  /// Redacted, at most 1 KiB.
  pub message: String,
}

/// A capture that failed, for `appendDeadLetter`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field
pub struct DeadLetterInput {
  /// The WAL session the capture was made in; the replay stores it there.
  pub session_id: String,
  /// The entry as it was given to `MemoryStore.capture` (the queue redacts it).
  pub entry: super::memory::MemoryEntry,
  /// Attempts already made. Default 1.
  pub attempts: Option<u32>,
  #[napi(ts_type = "{ code?: string; message?: string }")]
  pub error: Option<DeadLetterError>,
}

/// The entry of a dead letter, redacted.
#[napi(object)]
pub struct DeadLetterEntry {
  #[napi(js_name = "type", ts_type = "MemoryType")]
  pub memory_type: String,
  /// Redacted; null when redaction policy blocked the entry.
  pub content: Option<String>,
  pub tags: Vec<String>,
  pub agent_id: Option<String>,
  pub confidence: Option<f64>,
  /// When it was captured (UTC); a replay keeps it.
  pub timestamp: Option<String>,
  #[napi(ts_type = "Record<string, unknown>")]
  pub metadata: Option<serde_json::Value>,
}

/// A redacted value's kind and keyed fingerprint (never the value).
#[napi(object)]
pub struct DeadLetterFinding {
  /// `content`, `tags[0]`, `metadata.<key>`, ...
  pub field: String,
  pub kind: String,
  pub fingerprint: String,
}

/// One capture in the dead-letter queue.
#[napi(object)]
pub struct DeadLetter {
  /// sha256 of the session id and the redacted entry: the same capture always has the same id.
  pub id: String,
  pub session_id: String,
  pub entry: DeadLetterEntry,
  /// True when redaction policy blocked the entry: nothing of it can be stored.
  pub blocked: bool,
  pub findings: Vec<DeadLetterFinding>,
  /// Capture attempts so far, replays included.
  pub attempts: u32,
  /// The last error.
  pub error: Option<DeadLetterError>,
  pub first_failed_at: String,
  pub last_attempt_at: String,
}

/// A line of the queue that is not a letter this version can replay (damaged, cut short, or
/// written by a newer version). Kept byte for byte.
#[napi(object)]
pub struct DeadLetterUnreadable {
  /// 1-based line number.
  pub line: u32,
  /// Why; never the line's content.
  pub reason: String,
}

/// What `listDeadLetters` found.
#[napi(object)]
pub struct DeadLetterList {
  /// The queue file (it may not exist).
  pub path: String,
  pub letters: Vec<DeadLetter>,
  pub unreadable: Vec<DeadLetterUnreadable>,
}

/// What replaying one letter did.
#[napi(object)]
pub struct DeadLetterReplayResult {
  pub id: String,
  pub session_id: String,
  /// `stored` now; `duplicate`: the store already held it; `rejected` by the quality gates;
  /// `blocked` by redaction policy (nothing to store); all four leave the queue. `failed`:
  /// still failing, kept with `attempts` and `error` updated.
  #[napi(ts_type = "'stored' | 'duplicate' | 'rejected' | 'blocked' | 'failed'")]
  pub outcome: String,
  /// The memory's id, when stored.
  pub memory_id: Option<String>,
  /// The gates that refused it, when rejected or duplicate.
  #[napi(ts_type = "GateName[]")]
  pub failed_gates: Vec<String>,
  pub error: Option<DeadLetterError>,
  pub attempts: u32,
}

/// What `replayDeadLetters` did. Counts and ids only, never content.
#[napi(object)]
pub struct DeadLetterReplay {
  pub stored: u32,
  pub duplicates: u32,
  pub rejected: u32,
  pub blocked: u32,
  pub failed: u32,
  /// Letters still queued (the failed ones).
  pub remaining: u32,
  pub results: Vec<DeadLetterReplayResult>,
  /// Lines kept untouched because they cannot be read.
  pub unreadable: Vec<DeadLetterUnreadable>,
}

fn parse_redaction(o: &Object) -> Result<RedactOptions> {
  let Some(r) = field(o, "redaction")? else { return Ok(RedactOptions::default()) };
  let r = required_object(r, "redaction")?;
  Ok(RedactOptions {
    allowlist: optional_string_array(&r, "allowlist")?.unwrap_or_default(),
    key: args::optional_bytes(&r, "key")?,
    pseudonymize: args::optional_bool(&r, "pseudonymize")?.unwrap_or(false),
  })
}

fn workspace_dir(o: &Object) -> Result<PathBuf> {
  args::optional_string(o, "workspaceDir")?
    .map(PathBuf::from)
    .ok_or_else(|| LoaError::InvalidArgument("`workspaceDir` must be a string".into()))
}

fn parse_queue(options: Unknown) -> Result<(core::DeadLetterQueue, RedactOptions)> {
  let o = required_object(options, "options")?;
  let queue = core::DeadLetterQueue::new(workspace_dir(&o)?, args::optional_u64(&o, "lockTimeoutMs")?);
  Ok((queue, parse_redaction(&o)?))
}

fn parse_replay(
  options: Unknown,
) -> Result<(core::DeadLetterQueue, PathBuf, crate::config::MemoryOverrides, RedactOptions)> {
  let o = required_object(options, "options")?;
  let lock_timeout_ms = args::optional_u64(&o, "lockTimeoutMs")?;
  let workspace = workspace_dir(&o)?;
  let mut overrides = crate::config::MemoryOverrides {
    grimoires_dir: args::optional_string(&o, "grimoiresDir")?,
    wal_dir: args::optional_string(&o, "walDir")?,
    lock_timeout_ms,
    ..Default::default()
  };
  let redaction = parse_redaction(&o)?;
  if let Some(g) = field(&o, "gates")? {
    overrides.gates = super::gates::parse_gate_overrides(&required_object(g, "gates")?)?;
  }
  Ok((core::DeadLetterQueue::new(workspace.clone(), lock_timeout_ms), workspace, overrides, redaction))
}

fn parse_letter(env: &Env, letter: Unknown) -> Result<core::NewDeadLetter> {
  let l = required_object(letter, "letter")?;
  let session_id = args::optional_string(&l, "sessionId")?.ok_or_else(|| args::wrong("sessionId", "a string"))?;
  let e = required_object(field(&l, "entry")?.ok_or_else(|| args::wrong("entry", "an object"))?, "entry")?;
  let metadata = args::optional_json_object(env, &e, "metadata")?
    .map(|text| serde_json::from_str(&text).map_err(|err| LoaError::Internal(err.to_string())))
    .transpose()?;
  let entry = Entry {
    kind: MemoryKind::parse(&args::optional_string(&e, "type")?.ok_or_else(|| args::wrong("type", "a string"))?)?,
    content: args::optional_string(&e, "content")?.ok_or_else(|| args::wrong("content", "a string"))?,
    agent_id: args::optional_string(&e, "agentId")?,
    confidence: optional_f64(&e, "confidence")?,
    tags: optional_string_array(&e, "tags")?.unwrap_or_default(),
    timestamp: args::optional_string(&e, "timestamp")?,
    metadata,
  };
  let attempts = args::optional_u64(&l, "attempts")?.unwrap_or(1).min(u64::from(u32::MAX)) as u32;
  let error = match field(&l, "error")? {
    None => None,
    Some(value) => {
      let err = required_object(value, "error")?;
      // Only strings are taken: an `Error` whose `code` is a number still gets a code.
      let text = |key| -> Result<Option<String>> {
        match field(&err, key)? {
          Some(v) if v.get_type().ok() == Some(napi::ValueType::String) => args::string(v, key).map(Some),
          _ => Ok(None),
        }
      };
      let code = text("code")?.unwrap_or_else(|| "E_UNKNOWN".into());
      let message = text("message")?.unwrap_or_default();
      Some(core::LetterError { code, message })
    }
  };
  Ok(core::NewDeadLetter { session_id, entry, attempts, error })
}

fn error_to_js(e: core::LetterError) -> DeadLetterError {
  DeadLetterError { code: e.code, message: e.message }
}

fn letter_to_js(l: core::DeadLetter) -> DeadLetter {
  DeadLetter {
    id: l.id,
    session_id: l.session_id,
    entry: DeadLetterEntry {
      memory_type: l.entry.memory_type,
      content: l.entry.content,
      tags: l.entry.tags,
      agent_id: l.entry.agent_id,
      confidence: l.entry.confidence,
      timestamp: l.entry.timestamp,
      metadata: l.entry.metadata,
    },
    blocked: l.blocked,
    findings: l
      .findings
      .into_iter()
      .map(|f| DeadLetterFinding { field: f.field, kind: f.kind, fingerprint: f.fingerprint })
      .collect(),
    attempts: l.attempts,
    error: l.error.map(error_to_js),
    first_failed_at: l.first_failed_at,
    last_attempt_at: l.last_attempt_at,
  }
}

fn unreadable_to_js(lines: Vec<core::UnreadableLine>) -> Vec<DeadLetterUnreadable> {
  lines
    .into_iter()
    .map(|u| DeadLetterUnreadable { line: u.line.min(u32::MAX as usize) as u32, reason: u.reason })
    .collect()
}

fn replay_to_js(r: core::ReplayReport) -> DeadLetterReplay {
  let count = |o| r.count(o) as u32;
  DeadLetterReplay {
    stored: count(core::Outcome::Stored),
    duplicates: count(core::Outcome::Duplicate),
    rejected: count(core::Outcome::Rejected),
    blocked: count(core::Outcome::Blocked),
    failed: count(core::Outcome::Failed),
    remaining: r.remaining as u32,
    results: r
      .results
      .into_iter()
      .map(|x| DeadLetterReplayResult {
        id: x.id,
        session_id: x.session_id,
        outcome: x.outcome.as_str().to_string(),
        memory_id: x.memory_id,
        failed_gates: x.failed_gates,
        error: x.error.map(error_to_js),
        attempts: x.attempts,
      })
      .collect(),
    unreadable: unreadable_to_js(r.unreadable),
  }
}

/// Puts a capture that could not be stored into the workspace's dead-letter queue
/// (`.loa/dead-letter.jsonl`), redacted first exactly as `MemoryStore.capture` redacts (with
/// `options.redaction`): content, tags, agent id and every string of the metadata. Resolves
/// once the line is durable. `replayDeadLetters` stores it later, once. Rejects with
/// `E_NOT_REGULAR_FILE` when something else sits where the queue belongs, `E_PATH_OUTSIDE_ROOT`
/// when `.loa` is a symlink, `E_TOO_LARGE` when the queue would pass 64 MiB, `E_IO` when the
/// disk refuses this too.
#[napi(ts_args_type = "options: DeadLetterOptions, letter: DeadLetterInput", ts_return_type = "Promise<DeadLetter>")]
pub fn append_dead_letter(env: Env, options: Unknown, letter: Unknown) -> AsyncTask<CoreTask<DeadLetter>> {
  AsyncTask::new(match guard(|| Ok((parse_queue(options)?, parse_letter(&env, letter)?))) {
    Ok(((queue, redaction), letter)) => CoreTask::new(move || queue.append(letter, &redaction).map(letter_to_js)),
    Err(e) => CoreTask::new(move || Err(e)),
  })
}

/// Synchronous twin of `appendDeadLetter`.
#[napi(ts_args_type = "options: DeadLetterOptions, letter: DeadLetterInput")]
pub fn append_dead_letter_sync(env: Env, options: Unknown, letter: Unknown) -> napi::Result<DeadLetter> {
  to_napi(
    &env,
    guard(|| {
      let (queue, redaction) = parse_queue(options)?;
      queue.append(parse_letter(&env, letter)?, &redaction).map(letter_to_js)
    }),
  )
}

/// The captures waiting in a workspace's dead-letter queue (none when there is no queue),
/// read without a lock and without changing anything.
#[napi(ts_args_type = "options: DeadLetterOptions")]
pub fn list_dead_letters(env: Env, options: Unknown) -> napi::Result<DeadLetterList> {
  to_napi(
    &env,
    guard(|| {
      let (queue, _) = parse_queue(options)?;
      let listing = queue.list()?;
      Ok(DeadLetterList {
        path: queue.path().display().to_string(),
        letters: listing.letters.into_iter().map(letter_to_js).collect(),
        unreadable: unreadable_to_js(listing.unreadable),
      })
    }),
  )
}

/// Captures every queued letter again, each in the session it came from, and removes those that
/// are settled: stored now, already stored (a replay never stores a capture twice, even after a
/// crash half way), refused by the gates, or blocked. Letters that still fail stay, with their
/// attempt count and error updated; unreadable lines stay byte for byte. The queue is rewritten
/// atomically once every store is closed. Holds the queue's lock throughout.
#[napi(ts_args_type = "options: DeadLetterReplayOptions", ts_return_type = "Promise<DeadLetterReplay>")]
pub fn replay_dead_letters(options: Unknown) -> AsyncTask<CoreTask<DeadLetterReplay>> {
  AsyncTask::new(match guard(|| parse_replay(options)) {
    Ok((queue, ws, overrides, redaction)) => CoreTask::new(move || replay(&queue, &ws, &overrides, &redaction)),
    Err(e) => CoreTask::new(move || Err(e)),
  })
}

/// Synchronous twin of `replayDeadLetters`.
#[napi(ts_args_type = "options: DeadLetterReplayOptions")]
pub fn replay_dead_letters_sync(env: Env, options: Unknown) -> napi::Result<DeadLetterReplay> {
  to_napi(
    &env,
    guard(|| {
      let (queue, ws, overrides, redaction) = parse_replay(options)?;
      replay(&queue, &ws, &overrides, &redaction)
    }),
  )
}

fn replay(
  queue: &core::DeadLetterQueue,
  workspace: &std::path::Path,
  overrides: &crate::config::MemoryOverrides,
  redaction: &RedactOptions,
) -> Result<DeadLetterReplay> {
  let open = |session: &str| {
    let options = crate::config::store_options(workspace, overrides)?;
    MemoryStore::open(StoreOptions { session_id: session.to_string(), redaction: redaction.clone(), ..options })
  };
  queue.replay(&open).map(replay_to_js)
}
