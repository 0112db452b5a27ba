//! `appendDeadLetter`, `listDeadLetters`, `replayDeadLetters`: a workspace's dead-letter queue
//! (`crate::dead_letter`), for the OpenClaw plugin and `loa dead-letter`.

use napi::bindgen_prelude::*;
use napi::{sys, Env, Unknown, ValueType};
use napi_derive::napi;

use super::convert::{js_from, member, object, type_of, Given, Int, Json, Obj, Str};
use super::gates::{GateName, GateOptions};
use super::memory::{MemoryEntry, MemoryRedactionOptions, Workspace};
use super::{sync, sync_twin, CoreTask};
use crate::dead_letter as core;
use crate::error::Result;
use crate::redact::RedactOptions;

/// Where a workspace's dead-letter queue is (`<workspaceDir>/.loa/dead-letter.jsonl`, or
/// `<deadLetterDir>/dead-letter.jsonl`).
#[napi(object, object_to_js = false)]
pub struct DeadLetterOptions {
  #[napi(ts_type = "string")]
  pub workspace_dir: Str,
  /// Keep the queue in this directory instead of `<workspaceDir>/.loa`, e.g. on another
  /// filesystem, so that a capture the workspace's disk refused (full, failing, read-only) can
  /// still be kept. Relative: below the workspace, reached without following symlinks (`..` is
  /// refused). Absolute: used as given. Created when missing. Pass the same to
  /// `replayDeadLetters`.
  #[napi(ts_type = "string")]
  pub dead_letter_dir: Option<Option<Str>>,
  /// How long to wait for another writer of the queue. Default 5000.
  #[napi(ts_type = "number")]
  pub lock_timeout_ms: Option<Option<Int>>,
  /// How `appendDeadLetter` redacts the entry: pass the options the `MemoryStore` captures with.
  #[napi(ts_type = "MemoryRedactionOptions")]
  pub redaction: Option<Option<Obj<MemoryRedactionOptions>>>,
}

/// A queue, and how it redacts what it is given.
struct Queue {
  queue: core::DeadLetterQueue,
  redaction: RedactOptions,
}

impl From<DeadLetterOptions> for Queue {
  fn from(o: DeadLetterOptions) -> Queue {
    Queue {
      queue: core::DeadLetterQueue::new(o.workspace_dir.0, o.lock_timeout_ms.given())
        .in_dir(o.dead_letter_dir.flatten().map(|d| d.0.into())),
      redaction: o.redaction.flatten().map(|r| r.0.into()).unwrap_or_default(),
    }
  }
}

/// Options of `replayDeadLetters`: the workspace layout, gates and redaction of the stores it
/// opens (one per session found in the queue), as in `MemoryStoreOptions` without `sessionId`.
#[napi(object, object_to_js = false)]
pub struct DeadLetterReplayOptions {
  #[napi(ts_type = "string")]
  pub workspace_dir: Str,
  #[napi(ts_type = "string")]
  pub grimoires_dir: Option<Option<Str>>,
  #[napi(ts_type = "string")]
  pub wal_dir: Option<Option<Str>>,
  /// Where the queue is kept, as given to `appendDeadLetter` (default `<workspaceDir>/.loa`).
  #[napi(ts_type = "string")]
  pub dead_letter_dir: Option<Option<Str>>,
  /// How long to wait for the queue's lock and for each session's WAL lock. A session another
  /// store holds open fails this replay (its letters stay) once this has passed. Default
  /// `wal.lockTimeoutMs` (5000) for sessions, 5000 for the queue.
  #[napi(ts_type = "number")]
  pub lock_timeout_ms: Option<Option<Int>>,
  #[napi(ts_type = "GateOptions")]
  pub gates: Option<Option<Obj<GateOptions>>>,
  #[napi(ts_type = "MemoryRedactionOptions")]
  pub redaction: Option<Option<Obj<MemoryRedactionOptions>>>,
}

/// A replay: the queue, and the stores of the sessions in it (each opened with the workspace's
/// settings when its turn comes).
struct Replay {
  queue: core::DeadLetterQueue,
  workspace: Workspace,
  redaction: RedactOptions,
}

impl From<DeadLetterReplayOptions> for Replay {
  fn from(o: DeadLetterReplayOptions) -> Replay {
    let workspace = Workspace::new(o.workspace_dir, o.grimoires_dir, o.wal_dir, o.lock_timeout_ms, o.gates);
    Replay {
      queue: core::DeadLetterQueue::new(workspace.dir.clone(), workspace.overrides.lock_timeout_ms)
        .in_dir(o.dead_letter_dir.flatten().map(|d| d.0.into())),
      workspace,
      redaction: o.redaction.flatten().map(|r| r.0.into()).unwrap_or_default(),
    }
  }
}

impl Replay {
  fn run(self) -> Result<DeadLetterReplay> {
    let open = |session: &str| self.workspace.open_store(session.to_string(), self.redaction.clone());
    self.queue.replay(&open).map(Into::into)
  }
}

/// Why a capture failed, as `appendDeadLetter` is told (an `Error` with a `code` will do).
#[napi(object, object_from_js = false)]
pub struct DeadLetterError {
  /// `E_IO`, `E_WAL_LOCKED`, ...
  pub code: String,
  /// Redacted, at most 1 KiB.
  pub message: String,
}

js_from!(|e: core::LetterError| DeadLetterError { code, message });

/// A string member taken only when it is a string (`undefined` otherwise).
struct StrIfAny(Option<String>);

impl FromNapiValue for StrIfAny {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    match type_of(env, value)? {
      ValueType::String => Str::from_napi_value(env, value).map(|s| StrIfAny(Some(s.0))),
      _ => Ok(StrIfAny(None)),
    }
  }
}

/// The `error` of a `DeadLetterInput`: any object with `code` and `message` (an `Error` will do);
/// only strings are taken, so that an `Error` whose `code` is a number still gets a code.
pub struct Failure(core::LetterError);

impl FromNapiValue for Failure {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    let text = |key| member::<StrIfAny>(env, value, "DeadLetterError", key).map(|s| s.and_then(|s| s.0));
    let code = text(c"code")?.unwrap_or_else(|| "E_UNKNOWN".into());
    let message = text(c"message")?.unwrap_or_default();
    Ok(Failure(core::LetterError { code, message }))
  }
}

/// A capture that failed, for `appendDeadLetter`.
#[napi(object, object_to_js = false)]
pub struct DeadLetterInput {
  /// The WAL session the capture was made in; the replay stores it there.
  #[napi(ts_type = "string")]
  pub session_id: Str,
  /// The entry as it was given to `MemoryStore.capture` (the queue redacts it).
  #[napi(ts_type = "MemoryEntry")]
  pub entry: Obj<MemoryEntry>,
  /// Attempts already made. Default 1.
  #[napi(ts_type = "number")]
  pub attempts: Option<Option<Int>>,
  #[napi(ts_type = "{ code?: string; message?: string }")]
  pub error: Option<Option<Obj<Failure>>>,
}

impl From<DeadLetterInput> for core::NewDeadLetter {
  fn from(l: DeadLetterInput) -> core::NewDeadLetter {
    core::NewDeadLetter {
      session_id: l.session_id.0,
      entry: l.entry.0.into(),
      attempts: l.attempts.given().map_or(1, |n: u64| n.min(u64::from(u32::MAX)) as u32),
      error: l.error.flatten().map(|e| e.0 .0),
    }
  }
}

/// The entry of a dead letter, redacted.
#[napi(object, object_from_js = false)]
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
  pub metadata: Option<Json>,
}

js_from!(|e: core::LetterEntry| DeadLetterEntry {
  memory_type,
  content,
  tags,
  agent_id,
  confidence,
  timestamp,
  metadata = e.metadata.map(Json),
});

/// A redacted value's kind and keyed fingerprint (never the value).
#[napi(object, object_from_js = false)]
pub struct DeadLetterFinding {
  /// `content`, `tags[0]`, `metadata.<key>`, ...
  pub field: String,
  pub kind: String,
  pub fingerprint: String,
}

/// One capture in the dead-letter queue.
#[napi(object, object_from_js = false)]
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

js_from!(|f: core::LetterFinding| DeadLetterFinding { field, kind, fingerprint });

js_from!(|l: core::DeadLetter| DeadLetter {
  id,
  session_id,
  entry => into,
  blocked,
  findings => each,
  attempts,
  error => each,
  first_failed_at,
  last_attempt_at,
});

/// A line of the queue that is not a letter this version can replay (damaged, cut short, or
/// written by a newer version). Kept byte for byte.
#[napi(object, object_from_js = false)]
pub struct DeadLetterUnreadable {
  /// 1-based line number.
  pub line: u32,
  /// Why; never the line's content.
  pub reason: String,
}

js_from!(|u: core::UnreadableLine| DeadLetterUnreadable { line: u32, reason });

/// What `listDeadLetters` found.
#[napi(object, object_from_js = false)]
pub struct DeadLetterList {
  /// The queue file (it may not exist).
  pub path: String,
  pub letters: Vec<DeadLetter>,
  pub unreadable: Vec<DeadLetterUnreadable>,
}

/// What replaying one letter did.
#[napi(object, object_from_js = false)]
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
  pub failed_gates: Vec<GateName>,
  pub error: Option<DeadLetterError>,
  pub attempts: u32,
}

js_from!(|x: core::ReplayResult| DeadLetterReplayResult {
  id,
  session_id,
  outcome = x.outcome.as_str().to_string(),
  memory_id,
  failed_gates => each,
  error => each,
  attempts,
});

/// What `replayDeadLetters` did. Counts and ids only, never content.
#[napi(object, object_from_js = false)]
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

impl From<core::ReplayReport> for DeadLetterReplay {
  fn from(r: core::ReplayReport) -> DeadLetterReplay {
    let count = |o| r.count(o) as u32;
    DeadLetterReplay {
      stored: count(core::Outcome::Stored),
      duplicates: count(core::Outcome::Duplicate),
      rejected: count(core::Outcome::Rejected),
      blocked: count(core::Outcome::Blocked),
      failed: count(core::Outcome::Failed),
      remaining: r.remaining as u32,
      results: r.results.into_iter().map(Into::into).collect(),
      unreadable: r.unreadable.into_iter().map(Into::into).collect(),
    }
  }
}

fn queue(options: Unknown) -> Result<Queue> {
  object::<DeadLetterOptions, _>(options, "options")
}

fn append_args(options: Unknown, letter: Unknown) -> Result<(Queue, core::NewDeadLetter)> {
  Ok((queue(options)?, object::<DeadLetterInput, _>(letter, "letter")?))
}

fn append((q, letter): (Queue, core::NewDeadLetter)) -> Result<DeadLetter> {
  q.queue.append(letter, &q.redaction).map(Into::into)
}

fn replay(options: Unknown) -> Result<Replay> {
  object::<DeadLetterReplayOptions, _>(options, "options")
}

/// Puts a capture that could not be stored into the workspace's dead-letter queue
/// (`.loa/dead-letter.jsonl`), redacted first exactly as `MemoryStore.capture` redacts (with
/// `options.redaction`): content, tags and every string of the metadata (the agent id is an
/// identifier, checked as `capture` checks it and kept as given). Resolves
/// once the line is durable. `replayDeadLetters` stores it later, once. Rejects with
/// `E_NOT_REGULAR_FILE` when something else sits where the queue belongs, `E_PATH_OUTSIDE_ROOT`
/// when `.loa` (or a directory of a relative `deadLetterDir`) is a symlink, `E_TOO_LARGE` when
/// the queue would pass 64 MiB, `E_IO` (with `osError`) when the disk refuses this too; a queue
/// file this call created is then removed again, never left empty.
#[napi(ts_args_type = "options: DeadLetterOptions, letter: DeadLetterInput", ts_return_type = "Promise<DeadLetter>")]
pub fn append_dead_letter(env: Env, options: Unknown, letter: Unknown) -> AsyncTask<CoreTask<DeadLetter>> {
  CoreTask::after(&env, || append_args(options, letter), append)
}

/// Synchronous twin of `appendDeadLetter`.
#[napi(ts_args_type = "options: DeadLetterOptions, letter: DeadLetterInput")]
pub fn append_dead_letter_sync(env: Env, options: Unknown, letter: Unknown) -> napi::Result<DeadLetter> {
  sync_twin(&env, || append_args(options, letter), append)
}

/// The captures waiting in a workspace's dead-letter queue (none when there is no queue),
/// read without a lock and without changing anything.
#[napi(ts_args_type = "options: DeadLetterOptions")]
pub fn list_dead_letters(env: Env, options: Unknown) -> napi::Result<DeadLetterList> {
  sync(&env, || {
    let q = queue(options)?.queue;
    let listing = q.list()?;
    Ok(DeadLetterList {
      path: q.path().display().to_string(),
      letters: listing.letters.into_iter().map(Into::into).collect(),
      unreadable: listing.unreadable.into_iter().map(Into::into).collect(),
    })
  })
}

/// Captures every queued letter again, each in the session it came from, and removes those that
/// are settled: stored now, already stored (a replay never stores a capture twice, even after a
/// crash half way), refused by the gates, or blocked. Letters that still fail stay, with their
/// attempt count and error updated; unreadable lines stay byte for byte. The queue is rewritten
/// atomically once every store is closed. Holds the queue's lock throughout.
#[napi(ts_args_type = "options: DeadLetterReplayOptions", ts_return_type = "Promise<DeadLetterReplay>")]
pub fn replay_dead_letters(env: Env, options: Unknown) -> AsyncTask<CoreTask<DeadLetterReplay>> {
  CoreTask::after(&env, || replay(options), Replay::run)
}

/// Synchronous twin of `replayDeadLetters`.
#[napi(ts_args_type = "options: DeadLetterReplayOptions")]
pub fn replay_dead_letters_sync(env: Env, options: Unknown) -> napi::Result<DeadLetterReplay> {
  sync_twin(&env, || replay(options), Replay::run)
}
