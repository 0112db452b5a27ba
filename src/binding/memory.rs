//! The `MemoryStore` class: capture -> consolidate -> read back.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::{Env, Unknown};
use napi_derive::napi;

use super::args::{field, optional_f64, optional_string_array, required_object};
use super::fs::CoreTask;
use super::gates::{gate_result_to_js, parse_gate_overrides, GateResult, MemoryType};
use super::{args, guard, to_napi};
use crate::error::{LoaError, Result};
use crate::memory as core;
use crate::redact::RedactOptions;

/// How `capture` redacts (see `redact`).
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field
pub struct MemoryRedactionOptions {
  /// Exact values never redacted (e.g. a project's public contact address).
  pub allowlist: Option<Vec<String>>,
  /// Key of the fingerprints (HMAC-SHA256). Without one, a random key per process.
  #[napi(ts_type = "string | Buffer | Uint8Array")]
  pub key: Option<Buffer>,
  /// Stable pseudonyms (`[EMAIL_3f2a9c]`) instead of `[REDACTED:EMAIL]`; needs `key`.
  pub pseudonymize: Option<bool>,
}

/// Options of `MemoryStore.open`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field
pub struct MemoryStoreOptions {
  /// The workspace; `.loa.config.yaml` in it supplies every default.
  pub workspace_dir: String,
  /// Relative to the workspace. Default: `grimoiresDir` of the configuration (`grimoires/loa`),
  /// with NOTES.md and learnings.json at `memory.notesPath` / `memory.learningsPath`. When given,
  /// both live directly in it.
  pub grimoires_dir: Option<String>,
  /// Relative to the workspace. Default: `wal.dir` of the configuration (`.loa/wal`).
  pub wal_dir: Option<String>,
  /// This session's id (1-128 of `A-Z a-z 0-9 . _ -`). One open store per session at a time:
  /// a second one waits for the first to close.
  pub session_id: String,
  /// How long to wait for another store of the same session. Default `wal.lockTimeoutMs` (5000).
  pub lock_timeout_ms: Option<u32>,
  /// Overrides of the configured gate thresholds.
  pub gates: Option<super::gates::GateOptions>,
  pub redaction: Option<MemoryRedactionOptions>,
}

/// Where a workspace's memory lives, for `consolidateMemory`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field
pub struct MemoryWorkspaceOptions {
  pub workspace_dir: String,
  /// As in `MemoryStoreOptions`.
  pub grimoires_dir: Option<String>,
  /// As in `MemoryStoreOptions`.
  pub wal_dir: Option<String>,
  /// How long to wait for a concurrent consolidation. Default `wal.lockTimeoutMs` (5000).
  pub lock_timeout_ms: Option<u32>,
}

/// What `capture` is given.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field
pub struct MemoryEntry {
  #[napi(js_name = "type", ts_type = "MemoryType")]
  pub memory_type: String,
  /// At most 1 MiB. Redacted before anything else happens to it.
  pub content: String,
  pub agent_id: Option<String>,
  /// 0..1; without one the entry counts as 0.6.
  pub confidence: Option<f64>,
  /// At most 64 tags of at most 256 bytes; redacted like the content.
  pub tags: Option<Vec<String>>,
  /// RFC 3339 with any offset; default now. Stored in UTC.
  pub timestamp: Option<String>,
  /// Any JSON object (at most 64 KiB); every string in it, keys included, is redacted.
  #[napi(ts_type = "Record<string, unknown>")]
  pub metadata: Option<serde_json::Value>,
}

/// A redaction finding of one field of a captured entry. Never contains the value.
#[napi(object)]
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

/// What `capture` decided.
#[napi(object)]
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

/// What `consolidate` did.
#[napi(object)]
pub struct MemoryConsolidation {
  /// Files the WAL consolidation wrote or deleted in the grimoire.
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
}

/// A session, as `recentSessions` reports it.
#[napi(object)]
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

/// A learning, as `activeLearnings` reports it.
#[napi(object)]
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

fn parse_workspace_options(options: Unknown) -> Result<core::StoreOptions> {
  let o = required_object(options, "options")?;
  let workspace = PathBuf::from(
    args::optional_string(&o, "workspaceDir")?
      .ok_or_else(|| LoaError::InvalidArgument("`workspaceDir` must be a string".into()))?,
  );
  let overrides = crate::config::MemoryOverrides {
    grimoires_dir: args::optional_string(&o, "grimoiresDir")?,
    wal_dir: args::optional_string(&o, "walDir")?,
    lock_timeout_ms: args::optional_u64(&o, "lockTimeoutMs")?,
    ..Default::default()
  };
  crate::config::store_options(&workspace, &overrides)
}

fn parse_options(options: Unknown) -> Result<core::StoreOptions> {
  let o = required_object(options, "options")?;
  let workspace = PathBuf::from(
    args::optional_string(&o, "workspaceDir")?
      .ok_or_else(|| LoaError::InvalidArgument("`workspaceDir` must be a string".into()))?,
  );
  let mut overrides = crate::config::MemoryOverrides {
    grimoires_dir: args::optional_string(&o, "grimoiresDir")?,
    wal_dir: args::optional_string(&o, "walDir")?,
    lock_timeout_ms: None,
    ..Default::default()
  };
  let session_id = args::optional_string(&o, "sessionId")?
    .ok_or_else(|| LoaError::InvalidArgument("`sessionId` must be a string".into()))?;
  overrides.lock_timeout_ms = args::optional_u64(&o, "lockTimeoutMs")?;
  if let Some(g) = field(&o, "gates")? {
    overrides.gates = parse_gate_overrides(&required_object(g, "gates")?)?;
  }
  let mut parsed = core::StoreOptions { session_id, ..crate::config::store_options(&workspace, &overrides)? };
  if let Some(r) = field(&o, "redaction")? {
    let r = required_object(r, "redaction")?;
    parsed.redaction = RedactOptions {
      allowlist: optional_string_array(&r, "allowlist")?.unwrap_or_default(),
      key: args::optional_bytes(&r, "key")?,
      pseudonymize: args::optional_bool(&r, "pseudonymize")?.unwrap_or(false),
    };
  }
  Ok(parsed)
}

fn parse_entry(env: &Env, entry: Unknown) -> Result<core::Entry> {
  let e = required_object(entry, "entry")?;
  let metadata = args::optional_json_object(env, &e, "metadata")?
    .map(|text| serde_json::from_str(&text).map_err(|err| LoaError::Internal(err.to_string())))
    .transpose()?;
  Ok(core::Entry {
    kind: memory_kind(args::field(&e, "type")?)?,
    content: args::optional_string(&e, "content")?
      .ok_or_else(|| LoaError::InvalidArgument("`content` must be a string".into()))?,
    agent_id: args::optional_string(&e, "agentId")?,
    confidence: optional_f64(&e, "confidence")?,
    tags: optional_string_array(&e, "tags")?.unwrap_or_default(),
    timestamp: args::optional_string(&e, "timestamp")?,
    metadata,
  })
}

impl From<MemoryType> for core::MemoryKind {
  fn from(kind: MemoryType) -> core::MemoryKind {
    match kind {
      MemoryType::interaction => core::MemoryKind::Interaction,
      MemoryType::decision => core::MemoryKind::Decision,
      MemoryType::learning => core::MemoryKind::Learning,
      MemoryType::error => core::MemoryKind::Error,
      MemoryType::milestone => core::MemoryKind::Milestone,
    }
  }
}

/// The `type` of an entry: one of the `MemoryType` strings, else `E_INVALID_ARGUMENT` (the
/// message never repeats the value, which is caller data).
fn memory_kind(value: Option<Unknown>) -> Result<core::MemoryKind> {
  let wrong = || {
    LoaError::InvalidArgument(
      "`type` must be one of 'interaction', 'decision', 'learning', 'error', 'milestone'".into(),
    )
  };
  let value = value.ok_or_else(wrong)?;
  // SAFETY: `value` is a live handle of the current call's scope, read by napi's own
  // conversion of the string enum, which checks its type first.
  unsafe { MemoryType::from_napi_value(value.value().env, value.raw()) }
    .map(core::MemoryKind::from)
    .map_err(|_| wrong())
}

impl From<core::MemoryKind> for MemoryType {
  fn from(kind: core::MemoryKind) -> MemoryType {
    match kind {
      core::MemoryKind::Interaction => MemoryType::interaction,
      core::MemoryKind::Decision => MemoryType::decision,
      core::MemoryKind::Learning => MemoryType::learning,
      core::MemoryKind::Error => MemoryType::error,
      core::MemoryKind::Milestone => MemoryType::milestone,
    }
  }
}

fn capture_to_js(c: core::CaptureOutcome) -> CaptureResult {
  CaptureResult {
    accepted: c.accepted,
    id: c.id,
    seq: c.seq.map(|s| s as f64),
    gates: c.gates.into_iter().map(gate_result_to_js).collect(),
    findings: c
      .findings
      .into_iter()
      .map(|f| CaptureFinding {
        field: f.field,
        kind: f.kind,
        start: f.start as u32,
        end: f.end as u32,
        method: f.method,
        fingerprint: f.fingerprint,
      })
      .collect(),
    blocked: c.blocked,
    score: c.score,
    tags: c.tags,
  }
}

fn consolidation_to_js(c: core::ConsolidateOutcome) -> MemoryConsolidation {
  MemoryConsolidation {
    applied: c.applied as u32,
    notes_updated: c.notes_updated,
    learnings: c.learnings as u32,
    conflicts: c.conflicts as u32,
    memories: c.memories as u32,
    learnings_total: c.learnings_total as u32,
  }
}

fn limit_of(limit: Unknown) -> Result<usize> {
  let n = unsafe { f64::from_napi_value(limit.value().env, limit.raw()) }
    .map_err(|_| LoaError::InvalidArgument("`limit` must be a non-negative integer".into()))?;
  if n.is_finite() && n >= 0.0 && n.fract() == 0.0 {
    Ok(n.min(u32::MAX as f64) as usize)
  } else {
    Err(LoaError::InvalidArgument("`limit` must be a non-negative integer".into()))
  }
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
  inner: Arc<core::MemoryStore>,
}

#[napi]
impl MemoryStore {
  /// Opens the memory of a workspace for one session: reads `.loa.config.yaml`, creates the
  /// grimoire and WAL directories and takes the session's WAL lock, waiting up to
  /// `lockTimeoutMs` for another store of the same session (`E_WAL_LOCKED`). Directories must
  /// stay inside the workspace (`E_PATH_OUTSIDE_ROOT`).
  #[napi(factory, ts_args_type = "options: MemoryStoreOptions")]
  pub fn open(env: Env, options: Unknown) -> napi::Result<MemoryStore> {
    let store = to_napi(&env, guard(|| core::MemoryStore::open(parse_options(options)?)))?;
    Ok(MemoryStore { inner: Arc::new(store) })
  }

  /// Same as `open`, without blocking the event loop while waiting for the session lock.
  #[napi(ts_args_type = "options: MemoryStoreOptions", ts_return_type = "Promise<MemoryStore>")]
  pub fn open_async(env: Env, options: Unknown) -> AsyncTask<CoreTask<MemoryStore>> {
    CoreTask::after(&env, guard(|| parse_options(options)), |options| {
      core::MemoryStore::open(options).map(|s| MemoryStore { inner: Arc::new(s) })
    })
  }

  /// Redaction -> quality gates -> WAL append; resolves once the memory is durable. A blocked
  /// entry (redaction policy, e.g. a private key) is refused with `blocked: true` and only its
  /// findings' kinds and fingerprints are recorded; an entry that fails a gate resolves with
  /// `accepted: false` and every gate's reason. Nothing unredacted is ever written, and errors
  /// never carry content. Rejects with `E_INVALID_ARGUMENT`/`E_TOO_LARGE` for a bad entry,
  /// `E_WAL_CLOSED` after `close()`, `E_IO` when the disk refuses (after `memory.retry` tries).
  #[napi(ts_args_type = "entry: MemoryEntry", ts_return_type = "Promise<CaptureResult>")]
  pub fn capture(&self, env: Env, entry: Unknown) -> AsyncTask<CoreTask<CaptureResult>> {
    let inner = Arc::clone(&self.inner);
    CoreTask::after(&env, guard(|| parse_entry(&env, entry)), move |entry| inner.capture(entry).map(capture_to_js))
  }

  /// Synchronous twin of `capture`: blocks until the memory is durable.
  #[napi(ts_args_type = "entry: MemoryEntry")]
  pub fn capture_sync(&self, env: Env, entry: Unknown) -> napi::Result<CaptureResult> {
    to_napi(&env, guard(|| self.inner.capture(parse_entry(&env, entry)?).map(capture_to_js)))
  }

  /// Applies the WAL of every session into the grimoire: memory records (`memory/<id>.json`),
  /// learnings.json, and the two regions of NOTES.md the pipeline owns (session continuity and
  /// decision log); all other text of NOTES.md is kept byte for byte. Idempotent: a second run
  /// writes nothing. A corrupt learnings.json or memory record is moved aside to
  /// `<name>.corrupt-<timestamp>` and the run rejects with `E_STATE_CORRUPT`; the next run
  /// rebuilds from the memory records.
  #[napi(ts_return_type = "Promise<MemoryConsolidation>")]
  pub fn consolidate(&self) -> AsyncTask<CoreTask<MemoryConsolidation>> {
    let inner = Arc::clone(&self.inner);
    AsyncTask::new(CoreTask::new(move || inner.consolidate().map(consolidation_to_js)))
  }

  /// Synchronous twin of `consolidate`.
  #[napi]
  pub fn consolidate_sync(&self, env: Env) -> napi::Result<MemoryConsolidation> {
    to_napi(&env, guard(|| self.inner.consolidate().map(consolidation_to_js)))
  }

  /// The context for the next prompt, as `buildContext` builds it, from this workspace's memory:
  /// the `context.recentSessions` newest sessions (each summarised by its latest memories) and the
  /// `context.activeLearnings` top learnings, within `context.tokenBudget` tokens unless
  /// `options` says otherwise. `text` is null when there is nothing to remember.
  #[napi(ts_args_type = "options?: MemoryContextOptions", ts_return_type = "BuiltContext")]
  pub fn build_context(&self, env: Env, options: Option<Unknown>) -> napi::Result<Unknown<'_>> {
    let built = guard(|| self.inner.build_context(&parse_context_request(options)?));
    match built.and_then(|built| unsafe { super::context::built_to_js(&env, &built) }) {
      Ok(value) => Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), value) }),
      Err(e) => Err(super::js_error(&env, &e)),
    }
  }

  /// The `limit` most recent sessions, newest first, from the memory records (consolidated or
  /// still in the WAL) and NOTES.md.
  #[napi(ts_args_type = "limit: number")]
  pub fn recent_sessions(&self, env: Env, limit: Unknown) -> napi::Result<Vec<SessionEntry>> {
    let sessions = to_napi(&env, guard(|| self.inner.recent_sessions(limit_of(limit)?)))?;
    Ok(
      sessions
        .into_iter()
        .map(|s| SessionEntry {
          session_id: s.session_id,
          started_at: s.started_at,
          last_active_at: s.last_active_at,
          memories: s.memories as u32,
          types: s.kinds.into_iter().map(|(k, v)| (k.as_str().to_string(), v as u32)).collect(),
          latest: s.latest,
          source: s.source.as_str().to_string(),
        })
        .collect(),
    )
  }

  /// The `limit` most important active learnings (then newest first). Throws
  /// `E_STATE_CORRUPT` if learnings.json is corrupt (it is left in place for `consolidate`).
  #[napi(ts_args_type = "limit: number")]
  pub fn active_learnings(&self, env: Env, limit: Unknown) -> napi::Result<Vec<Learning>> {
    let learnings = to_napi(&env, guard(|| self.inner.active_learnings(limit_of(limit)?)))?;
    Ok(
      learnings
        .into_iter()
        .map(|l| Learning {
          id: l.id,
          memory_type: l.kind.into(),
          content: l.content,
          importance: l.importance,
          confidence: l.confidence,
          tags: l.tags,
          session_id: l.session_id,
          agent_id: l.agent_id,
          created_at: l.created_at,
          status: l.status,
        })
        .collect(),
    )
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
    to_napi(&env, guard(|| self.inner.close()))
  }
}

/// `MemoryStore.prototype.consolidate` without opening a session (for tools that capture
/// nothing, such as `loa consolidate`).
#[napi(ts_args_type = "options: MemoryWorkspaceOptions", ts_return_type = "Promise<MemoryConsolidation>")]
pub fn consolidate_memory(env: Env, options: Unknown) -> AsyncTask<CoreTask<MemoryConsolidation>> {
  CoreTask::after(&env, guard(|| parse_workspace_options(options)), |options| {
    core::consolidate_workspace(&options).map(consolidation_to_js)
  })
}

/// Synchronous twin of `consolidateMemory`.
#[napi(ts_args_type = "options: MemoryWorkspaceOptions")]
pub fn consolidate_memory_sync(env: Env, options: Unknown) -> napi::Result<MemoryConsolidation> {
  to_napi(&env, guard(|| core::consolidate_workspace(&parse_workspace_options(options)?).map(consolidation_to_js)))
}

/// `MemoryStore.prototype.buildContext` without opening a session: reads the workspace's memory
/// (consolidated, and captures still in the WAL) and takes no lock, writes nothing. For tools
/// such as `loa context`.
#[napi(
  ts_args_type = "workspace: MemoryWorkspaceOptions, options?: MemoryContextOptions",
  ts_return_type = "BuiltContext"
)]
pub fn build_memory_context<'a>(
  env: Env,
  workspace: Unknown<'a>,
  options: Option<Unknown<'a>>,
) -> napi::Result<Unknown<'a>> {
  let built = guard(|| {
    core::MemoryView::open(&parse_workspace_options(workspace)?)?.build_context(&parse_context_request(options)?)
  });
  match built.and_then(|built| unsafe { super::context::built_to_js(&env, &built) }) {
    Ok(value) => Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), value) }),
    Err(e) => Err(super::js_error(&env, &e)),
  }
}

/// Options of `MemoryStore.buildContext`; each overrides the workspace's `context` setting.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field below
pub struct MemoryContextOptions {
  /// Tokens for the whole text, header included. Default `context.tokenBudget` (2000).
  pub budget: Option<u32>,
  /// Share of the room that sessions get first (the rest goes to learnings). Default
  /// `1 - context.learningsShare` (0.7).
  pub session_share: Option<f64>,
  #[napi(ts_type = "'o200k_base' | 'cl100k_base'")]
  pub encoding: Option<String>,
  /// Fraction of the budget kept free for a model whose tokenizer is not public.
  pub safety_margin: Option<f64>,
  /// How many recent sessions to consider. Default `context.recentSessions` (5).
  pub sessions: Option<u32>,
  /// How many active learnings to consider. Default `context.activeLearnings` (3).
  pub learnings: Option<u32>,
}

fn parse_context_request(options: Option<Unknown>) -> Result<core::ContextRequest> {
  let mut request = core::ContextRequest::default();
  let Some(o) = args::optional_object(options, "options")? else { return Ok(request) };
  request.budget = args::optional_u64(&o, "budget")?;
  request.session_share = args::optional_f64(&o, "sessionShare")?;
  request.encoding =
    args::optional_string(&o, "encoding")?.map(|e| crate::tokens::TokenEncoding::parse(&e)).transpose()?;
  request.safety_margin = args::optional_f64(&o, "safetyMargin")?;
  request.sessions = args::optional_u64(&o, "sessions")?;
  request.learnings = args::optional_u64(&o, "learnings")?;
  Ok(request)
}
