//! The `MemoryStore` class and the workspace functions `consolidateMemory` and
//! `buildMemoryContext`: capture -> consolidate -> read back.
//!
//! A workspace's settings come from its `.loa.config.yaml` with the caller's overrides
//! (`config::store_options`); they are read when the store opens (on the thread pool for the
//! async calls), never on argument conversion.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::{Env, Unknown};
use napi_derive::napi;

use super::convert::{
  arg, js_from, object, opt_arg, opt_object, string_union, Bool, Bytes, Choice, Given, Int, JsonObject, List, Num, Obj,
  Str, Text,
};
use super::gates::{GateOptions, GateResult};
use super::sign::Ring;
use super::tokens::TokenEncoding;
use super::{glue, guard, sync, sync_twin, to_napi, CoreTask, RawJs};
use crate::config::{store_options, MemoryOverrides};
use crate::error::Result;
use crate::memory::{self as core, MemoryKind, StoreOptions};
use crate::redact::RedactOptions;

string_union! {
  "The five kinds of memory."
  MemoryType <=> MemoryKind {
    interaction = Interaction,
    decision = Decision,
    learning = Learning,
    error = Error,
    milestone = Milestone,
  }
}

/// How `capture` redacts (see `redact`).
#[napi(object, object_to_js = false)]
pub struct MemoryRedactionOptions {
  /// Exact values never redacted (e.g. a project's public contact address).
  #[napi(ts_type = "Array<string>")]
  pub allowlist: Option<Option<List<Str>>>,
  /// Key of the fingerprints (HMAC-SHA256). Without one, a random key per process.
  #[napi(ts_type = "string | Buffer | Uint8Array")]
  pub key: Option<Option<Bytes>>,
  /// Stable pseudonyms (`[EMAIL_3f2a9c]`) instead of `[REDACTED:EMAIL]`; needs `key`.
  #[napi(ts_type = "boolean")]
  pub pseudonymize: Option<Option<Bool>>,
}

impl From<MemoryRedactionOptions> for RedactOptions {
  fn from(r: MemoryRedactionOptions) -> RedactOptions {
    RedactOptions {
      allowlist: r.allowlist.given().unwrap_or_default(),
      key: r.key.flatten().map(|k| k.0),
      pseudonymize: r.pseudonymize.given().unwrap_or(false),
    }
  }
}

/// Options of `MemoryStore.open`.
#[napi(object, object_to_js = false)]
pub struct MemoryStoreOptions {
  /// The workspace; `.loa.config.yaml` in it supplies every default.
  #[napi(ts_type = "string")]
  pub workspace_dir: Str,
  /// Relative to the workspace. Default: `grimoiresDir` of the configuration (`grimoires/loa`),
  /// with NOTES.md and learnings.json at `memory.notesPath` / `memory.learningsPath`. When given,
  /// both live directly in it.
  #[napi(ts_type = "string")]
  pub grimoires_dir: Option<Option<Str>>,
  /// Relative to the workspace. Default: `wal.dir` of the configuration (`.loa/wal`).
  #[napi(ts_type = "string")]
  pub wal_dir: Option<Option<Str>>,
  /// This session's id (1-128 of `A-Z a-z 0-9 . _ -`). One open store per session at a time:
  /// a second one waits for the first to close.
  #[napi(ts_type = "string")]
  pub session_id: Str,
  /// How long to wait for another store of the same session. Default `wal.lockTimeoutMs` (5000).
  #[napi(ts_type = "number")]
  pub lock_timeout_ms: Option<Option<Int>>,
  /// Overrides of the configured gate thresholds.
  #[napi(ts_type = "GateOptions")]
  pub gates: Option<Option<Obj<GateOptions>>>,
  #[napi(ts_type = "MemoryRedactionOptions")]
  pub redaction: Option<Option<Obj<MemoryRedactionOptions>>>,
  /// Open for reading only (`search`, `get`, `buildContext`, `recentSessions`, ...), on a disk
  /// that may be full or read-only: no session is opened (`sessionId` is not used and no lock is
  /// taken, so it opens beside any other store), nothing is created or written, and searches use
  /// an index built in memory from the memories. Every write (`capture`, `consolidate`,
  /// `forget`, `importMarkdown`) throws `E_READ_ONLY`. Default `false`.
  #[napi(ts_type = "boolean")]
  pub read_only: Option<Option<Bool>>,
}

/// Where a workspace's memory lives, for `consolidateMemory`.
#[napi(object, object_to_js = false)]
pub struct MemoryWorkspaceOptions {
  #[napi(ts_type = "string")]
  pub workspace_dir: Str,
  /// As in `MemoryStoreOptions`.
  #[napi(ts_type = "string")]
  pub grimoires_dir: Option<Option<Str>>,
  /// As in `MemoryStoreOptions`.
  #[napi(ts_type = "string")]
  pub wal_dir: Option<Option<Str>>,
  /// How long to wait for a concurrent consolidation. Default `wal.lockTimeoutMs` (5000).
  #[napi(ts_type = "number")]
  pub lock_timeout_ms: Option<Option<Int>>,
}

/// A workspace and what the caller overrides of its configured memory settings.
pub(crate) struct Workspace {
  pub dir: PathBuf,
  pub overrides: MemoryOverrides,
}

impl Workspace {
  /// The workspace and the overrides of the fields `MemoryWorkspaceOptions` shares with
  /// `MemoryStoreOptions` and `DeadLetterReplayOptions`.
  pub fn new(
    dir: Str,
    grimoires_dir: Option<Option<Str>>,
    wal_dir: Option<Option<Str>>,
    lock_timeout_ms: Option<Option<Int>>,
    gates: Option<Option<Obj<GateOptions>>>,
  ) -> Workspace {
    let overrides = MemoryOverrides {
      grimoires_dir: grimoires_dir.given(),
      wal_dir: wal_dir.given(),
      lock_timeout_ms: lock_timeout_ms.given(),
      gates: gates.flatten().map(|g| g.0.into()).unwrap_or_default(),
    };
    Workspace { dir: PathBuf::from(dir.0), overrides }
  }

  /// The store options: `.loa.config.yaml` read, the overrides applied.
  pub fn options(&self) -> Result<StoreOptions> {
    store_options(&self.dir, &self.overrides)
  }

  /// The store of `session_id`, redacting with `redaction`.
  pub fn open_store(&self, session_id: String, redaction: RedactOptions) -> Result<core::MemoryStore> {
    core::MemoryStore::open(StoreOptions { session_id, redaction, ..self.options()? })
  }

  /// A read-only store of the workspace (see `MemoryStoreOptions.readOnly`).
  pub fn open_read_only(&self, session_id: String, redaction: RedactOptions) -> Result<core::MemoryStore> {
    core::MemoryStore::open_read_only(StoreOptions { session_id, redaction, ..self.options()? })
  }
}

impl From<MemoryWorkspaceOptions> for Workspace {
  fn from(o: MemoryWorkspaceOptions) -> Workspace {
    Workspace::new(o.workspace_dir, o.grimoires_dir, o.wal_dir, o.lock_timeout_ms, None)
  }
}

/// What opening a store takes: the workspace, the session, how to redact.
struct Session {
  workspace: Workspace,
  session_id: String,
  redaction: RedactOptions,
  read_only: bool,
}

impl From<MemoryStoreOptions> for Session {
  fn from(o: MemoryStoreOptions) -> Session {
    Session {
      workspace: Workspace::new(o.workspace_dir, o.grimoires_dir, o.wal_dir, o.lock_timeout_ms, o.gates),
      session_id: o.session_id.0,
      redaction: o.redaction.flatten().map(|r| r.0.into()).unwrap_or_default(),
      read_only: o.read_only.flatten().is_some_and(|b| b.0),
    }
  }
}

impl Session {
  fn open(self) -> Result<MemoryStore> {
    let store = if self.read_only {
      self.workspace.open_read_only(self.session_id, self.redaction)?
    } else {
      self.workspace.open_store(self.session_id, self.redaction)?
    };
    Ok(MemoryStore { inner: Arc::new(store) })
  }
}

/// What `capture` is given.
#[napi(object, object_to_js = false)]
pub struct MemoryEntry {
  #[napi(js_name = "type", ts_type = "MemoryType")]
  pub memory_type: Choice<MemoryType>,
  /// At most 1 MiB. Redacted before anything else happens to it.
  #[napi(ts_type = "string")]
  pub content: Str,
  /// The agent the memory belongs to (default: the whole workspace's, every agent sees it).
  /// An identifier, stored as given and never redacted: 1 to 128 of `A-Z a-z 0-9 . _ - : @ +`,
  /// starting with a letter or digit, without `..` (else `E_INVALID_ARGUMENT`).
  #[napi(ts_type = "string")]
  pub agent_id: Option<Option<Str>>,
  /// 0..1; without one the entry counts as 0.6.
  #[napi(ts_type = "number")]
  pub confidence: Option<Option<Num>>,
  /// At most 64 tags of at most 256 bytes; redacted like the content.
  #[napi(ts_type = "Array<string>")]
  pub tags: Option<Option<List<Str>>>,
  /// RFC 3339 with any offset; default now. Stored in UTC.
  #[napi(ts_type = "string")]
  pub timestamp: Option<Option<Str>>,
  /// Any JSON object (at most 64 KiB). Every string and number in it, keys included, is
  /// redacted: a number that redacts (a card number) is stored as the redacted string, and
  /// two keys that redact alike are both kept (`[REDACTED:EMAIL]`, `[REDACTED:EMAIL]~2`).
  #[napi(ts_type = "Record<string, unknown>")]
  pub metadata: Option<Option<JsonObject>>,
}

impl From<MemoryEntry> for core::Entry {
  fn from(e: MemoryEntry) -> core::Entry {
    core::Entry {
      kind: e.memory_type.into(),
      content: e.content.0,
      agent_id: e.agent_id.given(),
      confidence: e.confidence.given(),
      tags: e.tags.given().unwrap_or_default(),
      timestamp: e.timestamp.given(),
      metadata: e.metadata.flatten().map(|m| serde_json::Value::Object(m.0)),
    }
  }
}

/// A redaction finding of one field of a captured entry. Never contains the value.
#[napi(object, object_from_js = false)]
pub struct CaptureFinding {
  /// `content`, `agentId`, `tags[0]`, `metadata.contact`, ...
  pub field: String,
  /// `email`, `phone`, `credit_card`, `private_key`, ...
  pub kind: String,
  /// UTF-16 offsets into that field.
  pub start: u32,
  pub end: u32,
  pub method: String,
  /// Keyed hash of the value: the same value gives the same fingerprint under one key.
  pub fingerprint: String,
}

js_from!(|f: core::CaptureFinding| CaptureFinding { field, kind, start: u32, end: u32, method, fingerprint });

/// What `capture` decided.
#[napi(object, object_from_js = false)]
pub struct CaptureResult {
  /// True when the memory is durably in the WAL.
  pub accepted: bool,
  /// The memory's id (sha256 of its normalised, redacted content) when accepted.
  pub id: Option<String>,
  /// Its WAL seq when accepted.
  pub seq: Option<f64>,
  /// The six gate verdicts; empty when the entry was blocked.
  pub gates: Vec<GateResult>,
  pub findings: Vec<CaptureFinding>,
  /// True when redaction policy refused the entry (e.g. it holds a private key). Nothing of it
  /// was stored except an audit record of the findings' kinds and fingerprints.
  pub blocked: bool,
  /// Importance from the gates (0..1).
  pub score: f64,
  pub tags: Vec<String>,
}

js_from!(|c: core::CaptureOutcome| CaptureResult {
  accepted,
  id,
  seq: Option<f64>,
  gates => each,
  findings => each,
  blocked,
  score,
  tags,
});

/// What `consolidate` did.
#[napi(object, object_from_js = false)]
pub struct MemoryConsolidation {
  /// Memory record files the WAL consolidation wrote in the grimoire.
  pub applied: u32,
  /// True when NOTES.md changed.
  pub notes_updated: bool,
  /// Learnings added to or changed in learnings.json by this run.
  pub learnings: u32,
  /// Cross-session overwrites of the same path (also in the WAL's `conflicts.jsonl`).
  pub conflicts: u32,
  /// Memory records in the grimoire now.
  pub memories: u32,
  /// Entries in learnings.json now.
  pub learnings_total: u32,
  /// Memories past their `expiresAt`, forgotten by this run (as `forget` does).
  pub expired: u32,
  /// Expired memories whose records are still in the log of a session another process holds
  /// open (counted once per session holding one). They are hidden from every read already
  /// (search, get, contexts, sessions, learnings, NOTES.md); a later consolidation removes them
  /// from that log once its lock is free, so this consolidation never fails for them.
  pub pending_removals: u32,
  /// True when the summary of all memories (`memory-summary.json`) was rebuilt from every
  /// record (first run, damaged or stale summary) rather than updated with this run's.
  pub rebuilt: bool,
  /// The grimoire's signed manifest, when the run was given a key ring to seal with.
  pub sealed: Option<SealedGrimoire>,
  /// WAL records this run did not apply; each counts as handled and is not tried again.
  /// Consolidation writes only the record file of the memory a record's content derives, so a
  /// record naming any other file (NOTES.md, SOUL.md, another memory's id) is refused here,
  /// whether a local process or another origin of the replica wrote it.
  pub refused: Vec<MemoryRefusedRecord>,
}

/// A WAL record a memory consolidation did not apply. Carries no record content.
#[napi(object, object_from_js = false)]
pub struct MemoryRefusedRecord {
  /// The session whose log holds it (`<origin>.<session>` for one pulled from another origin).
  pub session_id: String,
  pub seq: f64,
  /// `E_RECORD_REFUSED` (it would write something other than its memory's record file, or is
  /// no memory capture could have stored), or `E_NOT_REGULAR_FILE`, `E_PATH_OUTSIDE_ROOT`,
  /// `E_IO` (its record file cannot be written there).
  #[napi(ts_type = "LoaErrorCode")]
  pub code: String,
  /// Which check failed; it names no value the record carries.
  pub reason: String,
}

js_from!(|r: core::RefusedRecord| MemoryRefusedRecord { session_id, seq: f64, code => into, reason });

js_from!(|c: core::ConsolidateOutcome| MemoryConsolidation {
  applied: u32,
  notes_updated,
  learnings: u32,
  conflicts: u32,
  memories: u32,
  learnings_total: u32,
  expired: u32,
  pending_removals: u32,
  rebuilt,
  sealed => each,
  refused => each,
});

/// The manifest a sealed consolidation signed: every file of the grimoire but the search
/// index's log (which captures append to between seals) and the manifest itself.
#[napi(object, object_from_js = false)]
pub struct SealedGrimoire {
  /// Path of the signed manifest (`signing.manifest_path`, `grimoires/loa/manifest.json`).
  pub manifest: String,
  /// The key that signed it: pin its public key in recovery's `trustedKeys`.
  pub key_id: String,
  /// Files covered, and their total size in bytes.
  pub files: u32,
  pub bytes: f64,
}

js_from!(|s: core::Sealed| SealedGrimoire {
  manifest = s.manifest.display().to_string(),
  key_id,
  files: u32,
  bytes = s.bytes as f64,
});

/// The optional `sealWith` argument of the consolidations.
pub(super) fn seal_request(seal_with: Option<Unknown>) -> Result<Option<core::SealRequest>> {
  Ok(opt_arg::<Ring>(seal_with, "sealWith")?.map(|ring| core::SealRequest { ring: ring.0 }))
}

/// A session, as `recentSessions` reports it.
#[napi(object, object_from_js = false)]
pub struct SessionEntry {
  pub session_id: String,
  /// Timestamps of its oldest and newest memory (UTC, RFC 3339).
  pub started_at: String,
  pub last_active_at: String,
  pub memories: u32,
  /// Memories per type.
  pub types: HashMap<String, u32>,
  /// Contents of its newest memories (at most 3), newest first.
  pub latest: Vec<String>,
  /// `'memory'`: from memory records (consolidated or still in the WAL); `'notes'`: only
  /// NOTES.md still lists it.
  #[napi(ts_type = "'memory' | 'notes'")]
  pub source: String,
}

js_from!(|s: core::SessionEntry| SessionEntry {
  session_id,
  started_at,
  last_active_at,
  memories: u32,
  types = s.kinds.into_iter().map(|(k, v)| (k.as_str().to_string(), v as u32)).collect(),
  latest,
  source = s.source.as_str().to_string(),
});

/// A learning, as `activeLearnings` reports it.
#[napi(object, object_from_js = false)]
pub struct Learning {
  pub id: String,
  #[napi(js_name = "type")]
  pub memory_type: MemoryType,
  pub content: String,
  /// The gate score (0..1); instructions rank high.
  pub importance: f64,
  pub confidence: Option<f64>,
  pub tags: Vec<String>,
  pub session_id: String,
  pub agent_id: Option<String>,
  pub created_at: String,
  /// `'active'` unless learnings.json says otherwise.
  pub status: String,
}

js_from!(|l: core::Learning| Learning {
  id,
  memory_type = l.kind.into(),
  content,
  importance,
  confidence,
  tags,
  session_id,
  agent_id,
  created_at,
  status,
});

/// Options of `MemoryStore.buildContext`; each overrides the workspace's `context` setting.
#[napi(object, object_to_js = false)]
pub struct MemoryContextOptions {
  /// Tokens for the whole text, header included. Default `context.tokenBudget` (2000).
  #[napi(ts_type = "number")]
  pub budget: Option<Option<Int>>,
  /// Share of the room that sessions get first (the rest goes to learnings). Default
  /// `1 - context.learningsShare` (0.7).
  #[napi(ts_type = "number")]
  pub session_share: Option<Option<Num>>,
  #[napi(ts_type = "TokenEncoding")]
  pub encoding: Option<Option<Choice<TokenEncoding>>>,
  /// Fraction of the budget kept free for a model whose tokenizer is not public.
  #[napi(ts_type = "number")]
  pub safety_margin: Option<Option<Num>>,
  /// How many recent sessions to consider. Default `context.recentSessions` (5).
  #[napi(ts_type = "number")]
  pub sessions: Option<Option<Int>>,
  /// How many active learnings to consider. Default `context.activeLearnings` (3).
  #[napi(ts_type = "number")]
  pub learnings: Option<Option<Int>>,
  /// The prompt (or any words): the context is then the memories that best match it, searched
  /// as `search` does, as many as the budget holds (the last one cut to fill it), each quoted
  /// as a JSON string under a header saying they are untrusted data; `sessions`, `learnings`
  /// and `sessionShare` are not used. `text` is null when nothing matches.
  #[napi(ts_type = "string")]
  pub query: Option<Option<Text>>,
  /// The agent the context is for: with `query`, only memories it may see are searched (its
  /// own, those `memory.sharing` shares with it, and the workspace's). Default: every memory.
  #[napi(ts_type = "string")]
  pub agent_id: Option<Option<Str>>,
}

impl From<MemoryContextOptions> for core::ContextRequest {
  fn from(o: MemoryContextOptions) -> core::ContextRequest {
    core::ContextRequest {
      budget: o.budget.given(),
      session_share: o.session_share.given(),
      encoding: o.encoding.given(),
      safety_margin: o.safety_margin.given(),
      sessions: o.sessions.given(),
      learnings: o.learnings.given(),
      query: o.query.given(),
      agent_id: o.agent_id.given(),
    }
  }
}

pub(super) fn context_request(options: Option<Unknown>) -> Result<core::ContextRequest> {
  opt_object::<MemoryContextOptions, _>(options, "options")
}

fn session(options: Unknown) -> Result<Session> {
  object::<MemoryStoreOptions, _>(options, "options")
}

fn workspace(options: Unknown, name: &str) -> Result<Workspace> {
  object::<MemoryWorkspaceOptions, _>(options, name)
}

/// When a captured memory expires: `capture`'s second argument.
#[napi(object, object_to_js = false)]
pub struct MemoryCaptureOptions {
  /// RFC 3339: once past, the memory is no longer returned by searches, `get` or contexts,
  /// and the next consolidation forgets it as `forget` does.
  #[napi(ts_type = "string")]
  pub expires_at: Option<Option<Str>>,
  /// Milliseconds after the memory's timestamp when it expires (the earlier of the two wins
  /// when both are given). Must be positive.
  #[napi(ts_type = "number")]
  pub ttl_ms: Option<Option<Int>>,
}

impl From<MemoryCaptureOptions> for core::CaptureOptions {
  fn from(o: MemoryCaptureOptions) -> core::CaptureOptions {
    core::CaptureOptions { expires_at: o.expires_at.given(), ttl_ms: o.ttl_ms.given() }
  }
}

fn capture_args(entry: Unknown, options: Option<Unknown>) -> Result<(core::Entry, core::CaptureOptions)> {
  Ok((object::<MemoryEntry, _>(entry, "entry")?, opt_object::<MemoryCaptureOptions, _>(options, "options")?))
}

/// What one try of `capture` resolves with: the answer, or the milliseconds to wait before the
/// next try (see `memory_glue.js`).
type CaptureTryAnswer = Either<CaptureResult, f64>;

const GLUE: glue::Script = glue::Script { name: "memory", source: include_str!("memory_glue.js") };

/// A limit argument (the number of items wanted).
fn limit(limit: Unknown) -> Result<usize> {
  Ok(arg::<Int>(limit, "limit")?.0.min(u64::from(u32::MAX)) as usize)
}

/// A built context as the `BuiltContext` object (made by `context`'s JavaScript helper).
pub(super) fn built_to_js(env: &Env, built: Result<crate::context::BuiltContext>) -> napi::Result<RawJs> {
  // SAFETY: on the JS thread with its env.
  to_napi(env, built.and_then(|built| unsafe { super::context::built_to_js(env, &built) })).map(RawJs)
}

/// One session's handle on a workspace's agent memory.
///
/// ```ts
/// const store = await MemoryStore.openAsync({ workspaceDir: '.', sessionId: 'agent-1' })
/// const r = await store.capture({ type: 'learning', content: 'The API rate limit is 100 rps' })
/// if (r.accepted) await store.consolidate()
/// store.close()
/// ```
#[napi]
pub struct MemoryStore {
  pub(super) inner: Arc<core::MemoryStore>,
}

#[napi]
impl MemoryStore {
  /// Opens the memory of a workspace for one session: reads `.loa.config.yaml`, creates the
  /// grimoire and WAL directories and takes the session's WAL lock, waiting up to
  /// `lockTimeoutMs` for another store of the same session (`E_WAL_LOCKED`). Directories must
  /// stay inside the workspace (`E_PATH_OUTSIDE_ROOT`).
  #[napi(factory, ts_args_type = "options: MemoryStoreOptions")]
  pub fn open(env: Env, options: Unknown) -> napi::Result<MemoryStore> {
    sync_twin(&env, || session(options), Session::open)
  }

  /// Same as `open`, without blocking the event loop while waiting for the session lock.
  #[napi(ts_args_type = "options: MemoryStoreOptions", ts_return_type = "Promise<MemoryStore>")]
  pub fn open_async(env: Env, options: Unknown) -> AsyncTask<CoreTask<MemoryStore>> {
    CoreTask::after(&env, || session(options), Session::open)
  }

  /// Redaction -> quality gates -> WAL append; resolves once the memory is durable. A blocked
  /// entry (redaction policy, e.g. a private key) is refused with `blocked: true` and only its
  /// findings' kinds and fingerprints are recorded; an entry that fails a gate resolves with
  /// `accepted: false` and every gate's reason. Nothing unredacted is ever written, and errors
  /// never carry content. Rejects with `E_INVALID_ARGUMENT`/`E_TOO_LARGE` for a bad entry,
  /// `E_WAL_CLOSED` after `close()`, `E_IO` with the disk's `osError` (`ENOSPC`, `EIO`,
  /// `EROFS`, ...) when the disk refuses all `memory.retry.maxAttempts` tries.
  ///
  /// Each try runs on the libuv thread pool; the waits between tries
  /// (`memory.retry.backoffBaseMs * 2^n`) are timers on the event loop, so no pool thread is
  /// held while the disk refuses and the rest of the process (`fs`, `crypto`, `zlib`) keeps
  /// going. After a failed fsync the store reopens its log by itself once the disk takes
  /// writes again: the same store keeps capturing.
  ///
  /// `options` may give the memory an expiry (`expiresAt`, `ttlMs`).
  #[napi(
    ts_args_type = "entry: MemoryEntry, options?: MemoryCaptureOptions",
    ts_return_type = "Promise<CaptureResult>"
  )]
  pub fn capture(&self, env: Env, entry: Unknown, options: Option<Unknown>) -> napi::Result<RawJs> {
    let inner = Arc::clone(&self.inner);
    let args = Arc::new(guard(|| capture_args(entry, options)));
    super::clear_pending_exception(env.raw());
    // One try per call, on the thread pool; the glue calls it again after the delay it answers.
    let try_once = move |ctx: FunctionCallContext| -> napi::Result<RawJs> {
      let attempt = u64::from(ctx.get::<u32>(0)?);
      let (inner, args) = (Arc::clone(&inner), Arc::clone(&args));
      let task = CoreTask::new(move || {
        let (entry, options) = args.as_ref().as_ref().map_err(|e| e.duplicate())?;
        Ok(match inner.try_capture(entry, options, attempt)? {
          core::CaptureTry::Done(outcome) => CaptureTryAnswer::A(outcome.into()),
          core::CaptureTry::RetryAfter(delay) => CaptureTryAnswer::B(delay.as_millis() as f64),
        })
      });
      Ok(RawJs(ctx.env.spawn(task)?.promise_object().raw()))
    };
    let try_once: Function<u32, RawJs> = env.create_function_from_closure("captureTry", try_once)?;
    // SAFETY: on the JS thread with the env of this call; `try_once` is a handle of this call.
    to_napi(&env, unsafe {
      glue::load(&env, &GLUE).and_then(|helpers| glue::call(env.raw(), helpers, c"retry", &[try_once.raw()]))
    })
    .map(RawJs)
  }

  /// Synchronous twin of `capture`: blocks until the memory is durable. Between the tries of
  /// `memory.retry` it sleeps the calling thread (the event loop, when called from it): use
  /// `capture` where the process must stay responsive while the disk refuses.
  #[napi(ts_args_type = "entry: MemoryEntry, options?: MemoryCaptureOptions")]
  pub fn capture_sync(&self, env: Env, entry: Unknown, options: Option<Unknown>) -> napi::Result<CaptureResult> {
    sync_twin(&env, || capture_args(entry, options), |(e, o)| self.inner.capture_with(e, &o)).map(Into::into)
  }

  /// Applies the WAL of every session into the grimoire: memory records (`memory/<id>.json`),
  /// learnings.json, and the two regions of NOTES.md the pipeline owns (session continuity and
  /// decision log); all other text of NOTES.md is kept byte for byte. Idempotent: a second run
  /// writes nothing. A corrupt learnings.json or memory record is moved aside to
  /// `<name>.corrupt-<timestamp>` and the run rejects with `E_STATE_CORRUPT`; the next run
  /// rebuilds from the memory records.
  ///
  /// With `sealWith`, the run ends by signing the grimoire with that ring's signing key
  /// (`LOA_SIGNING_KEY` when set), under the consolidation lock: the search index is folded
  /// into one file and a manifest of every file is signed and written to
  /// `signing.manifest_path`, which recovery verifies against its pinned keys. Captures never
  /// need the key (what they append is left out of the seal); other writes to the grimoire
  /// leave the manifest stale until the next sealed run. A ring without a signing key
  /// (`E_KEY_NOT_FOUND`) or a manifest path outside the grimoire (`E_CONFIG_INVALID`) is
  /// refused before anything is consolidated. Sealing reads every file of the grimoire.
  #[napi(ts_args_type = "sealWith?: KeyRing", ts_return_type = "Promise<MemoryConsolidation>")]
  pub fn consolidate(&self, env: Env, seal_with: Option<Unknown>) -> AsyncTask<CoreTask<MemoryConsolidation>> {
    let inner = Arc::clone(&self.inner);
    CoreTask::after(&env, || seal_request(seal_with), move |seal| inner.consolidate_with(seal.as_ref()).map(Into::into))
  }

  /// Synchronous twin of `consolidate`.
  #[napi(ts_args_type = "sealWith?: KeyRing")]
  pub fn consolidate_sync(&self, env: Env, seal_with: Option<Unknown>) -> napi::Result<MemoryConsolidation> {
    sync(&env, || self.inner.consolidate_with(seal_request(seal_with)?.as_ref())).map(Into::into)
  }

  /// The context for the next prompt, as `buildContext` builds it, from this workspace's memory:
  /// the `context.recentSessions` newest sessions (each summarised by its latest memories) and the
  /// `context.activeLearnings` top learnings, within `context.tokenBudget` tokens unless
  /// `options` says otherwise. `text` is null when there is nothing to remember.
  #[napi(ts_args_type = "options?: MemoryContextOptions", ts_return_type = "BuiltContext")]
  pub fn build_context(&self, env: Env, options: Option<Unknown>) -> napi::Result<RawJs> {
    built_to_js(&env, guard(|| self.inner.build_context(&context_request(options)?)))
  }

  /// The `limit` most recent sessions, newest first, from the memory records (consolidated or
  /// still in the WAL) and NOTES.md.
  #[napi(ts_args_type = "limit: number")]
  pub fn recent_sessions(&self, env: Env, limit: Unknown) -> napi::Result<Vec<SessionEntry>> {
    sync(&env, || self.inner.recent_sessions(self::limit(limit)?)).map(|s| s.into_iter().map(Into::into).collect())
  }

  /// The `limit` most important active learnings (then newest first). Throws
  /// `E_STATE_CORRUPT` if learnings.json is corrupt (it is left in place for `consolidate`).
  #[napi(ts_args_type = "limit: number")]
  pub fn active_learnings(&self, env: Env, limit: Unknown) -> napi::Result<Vec<Learning>> {
    sync(&env, || self.inner.active_learnings(self::limit(limit)?)).map(|l| l.into_iter().map(Into::into).collect())
  }

  #[napi(getter)]
  pub fn session_id(&self) -> String {
    self.inner.session_id().to_string()
  }

  /// True once `close()` was called.
  #[napi(getter)]
  pub fn closed(&self) -> bool {
    self.inner.is_closed()
  }

  /// Makes pending records durable and releases the session lock. Later captures reject with
  /// `E_WAL_CLOSED`. Calling it again does nothing.
  #[napi]
  pub fn close(&self, env: Env) -> napi::Result<()> {
    sync(&env, || self.inner.close())
  }
}

fn consolidation_args(options: Unknown, seal_with: Option<Unknown>) -> Result<(Workspace, Option<core::SealRequest>)> {
  Ok((workspace(options, "options")?, seal_request(seal_with)?))
}

fn consolidate_workspace((w, seal): (Workspace, Option<core::SealRequest>)) -> Result<MemoryConsolidation> {
  core::consolidate_workspace_with(&w.options()?, seal.as_ref()).map(Into::into)
}

/// `MemoryStore.prototype.consolidate` without opening a session (for tools that capture
/// nothing, such as `loa consolidate`); `sealWith` as there.
#[napi(
  ts_args_type = "options: MemoryWorkspaceOptions, sealWith?: KeyRing",
  ts_return_type = "Promise<MemoryConsolidation>"
)]
pub fn consolidate_memory(
  env: Env,
  options: Unknown,
  seal_with: Option<Unknown>,
) -> AsyncTask<CoreTask<MemoryConsolidation>> {
  CoreTask::after(&env, || consolidation_args(options, seal_with), consolidate_workspace)
}

/// Synchronous twin of `consolidateMemory`.
#[napi(ts_args_type = "options: MemoryWorkspaceOptions, sealWith?: KeyRing")]
pub fn consolidate_memory_sync(
  env: Env,
  options: Unknown,
  seal_with: Option<Unknown>,
) -> napi::Result<MemoryConsolidation> {
  sync_twin(&env, || consolidation_args(options, seal_with), consolidate_workspace)
}

/// `MemoryStore.prototype.buildContext` without opening a session: reads the workspace's memory
/// (consolidated, and captures still in the WAL) and takes no lock, writes nothing. For tools
/// such as `loa context`.
#[napi(
  ts_args_type = "workspace: MemoryWorkspaceOptions, options?: MemoryContextOptions",
  ts_return_type = "BuiltContext"
)]
pub fn build_memory_context(env: Env, workspace: Unknown, options: Option<Unknown>) -> napi::Result<RawJs> {
  built_to_js(
    &env,
    guard(|| {
      let workspace = self::workspace(workspace, "workspace")?;
      let request = context_request(options)?;
      core::MemoryView::open(&workspace.options()?)?.build_context(&request)
    }),
  )
}
