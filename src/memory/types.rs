//! The memory pipeline's data: what `capture` is given and answers, what a stored memory is,
//! and what the reads report. No I/O here.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::context::ContextConfig;
use crate::error::{invalid, LoaError, Result};
use crate::gates::{GateConfig, GateResult};
use crate::redact::{FieldFinding, FieldRedactor, RedactOptions};
use crate::settings::uint;
use crate::timestamp::parse_rfc3339_ms;
use crate::wal::WalOptions;

/// Directory of memory records inside the grimoire.
pub const MEMORY_DIR: &str = "memory";
/// Largest `content` accepted by `capture`, in bytes.
pub const MAX_CONTENT_BYTES: usize = 1024 * 1024;
/// Largest `metadata` (as JSON) accepted by `capture`, in bytes.
pub const MAX_METADATA_BYTES: usize = 64 * 1024;
pub const MAX_TAGS: usize = 64;
pub const MAX_TAG_BYTES: usize = 256;
/// Sessions listed in NOTES.md (the most recent); older ones stay in the memory records.
pub const NOTES_MAX_SESSIONS: usize = 10;
/// Decisions listed in NOTES.md (the most recent); older ones stay in the memory records.
pub const NOTES_MAX_DECISIONS: usize = 50;
/// Largest NOTES.md read (`E_TOO_LARGE` beyond; the file is left alone). The pipeline's own
/// regions hold at most 50 decisions of at most 1 MiB each.
pub const MAX_NOTES_BYTES: u64 = 64 * 1024 * 1024;
/// Largest learnings.json read (`E_TOO_LARGE` beyond; the file is left alone).
pub const MAX_LEARNINGS_BYTES: u64 = 64 * 1024 * 1024;
/// Largest memory record file (`memory/<id>.json`) read: 1 MiB of content and 64 KiB of
/// metadata, even with every character escaped, fit well below it.
pub const MAX_RECORD_BYTES: u64 = 8 * 1024 * 1024;

/// The five kinds of memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryKind {
  Interaction,
  Decision,
  Learning,
  Error,
  Milestone,
}

impl MemoryKind {
  pub const ALL: [MemoryKind; 5] =
    [MemoryKind::Interaction, MemoryKind::Decision, MemoryKind::Learning, MemoryKind::Error, MemoryKind::Milestone];

  pub fn as_str(self) -> &'static str {
    match self {
      MemoryKind::Interaction => "interaction",
      MemoryKind::Decision => "decision",
      MemoryKind::Learning => "learning",
      MemoryKind::Error => "error",
      MemoryKind::Milestone => "milestone",
    }
  }

  /// The kind named `text`; anything else is `E_INVALID_ARGUMENT` (the message never repeats
  /// the text, which is caller data).
  pub fn parse(text: &str) -> Result<MemoryKind> {
    MemoryKind::ALL
      .into_iter()
      .find(|k| k.as_str() == text)
      .map_or_else(|| invalid("`type` must be one of 'interaction', 'decision', 'learning', 'error', 'milestone'"), Ok)
  }
}

impl fmt::Display for MemoryKind {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str(self.as_str())
  }
}

/// Where a workspace's memory lives and how a store of it behaves, every setting resolved: the
/// binding and the CLI build it with `config::store_options` from `.loa.config.yaml` and the
/// caller's overrides (this part never reads the configuration itself). The default is what an
/// absent configuration file gives.
#[derive(Debug, Clone)]
pub struct StoreOptions {
  pub workspace_dir: PathBuf,
  /// The session a [`MemoryStore`](super::MemoryStore) opens (unused by the calls that open
  /// none).
  pub session_id: String,
  /// The grimoire, relative to the workspace (`grimoires/loa`).
  pub grimoire_dir: String,
  /// The WAL directory, relative to the workspace (`.loa/wal`).
  pub wal_dir: String,
  /// NOTES.md and learnings.json, relative to the workspace.
  pub notes_path: String,
  pub learnings_path: String,
  /// Lock timeout, segment limits and fsync policy of the session's WAL (its `session_id` is
  /// replaced by the store's); the lock timeout also bounds the wait for a concurrent
  /// consolidation.
  pub wal: WalOptions,
  /// The quality gates' thresholds.
  pub gates: GateConfig,
  pub retry: RetryConfig,
  /// The defaults of `build_context`.
  pub context: ContextConfig,
  pub redaction: RedactOptions,
  /// Ranking of `search` (recency half-life and floor).
  pub search: SearchSettings,
  /// Which agents see which other agents' memories.
  pub sharing: Sharing,
  /// The key directory, relative to the workspace (`.loa/keys`): the tombstone key lives there.
  pub keys_dir: String,
  /// The audit log `forget` appends to, relative to the workspace (`.loa/audit`), and its
  /// segment size.
  pub audit_dir: String,
  pub audit_segment_max_bytes: u64,
  /// The file name of the grimoire's signed manifest, which a sealed consolidation writes
  /// (`signing.manifest_path`; `None` when the configuration puts it outside the grimoire).
  pub manifest_name: Option<String>,
  /// The recovery state directory, relative to the workspace (`.loa/recovery`): while the
  /// `state.json` there says degraded, captures are refused with `E_DEGRADED`
  /// ([`crate::recovery::ensure_not_degraded`]). It must be the `stateDir` recovery runs with.
  pub recovery_state_dir: String,
  /// When replication is configured (`replication.bucket`): the replicate binary's state
  /// directory, relative to the workspace (`.loa/replicate`), whose `shipped.json` says what
  /// has been shipped; consolidation's retention then keeps every segment not shipped yet
  /// ([`crate::wal::shipped`]). `None` (the default): retention does not wait for replication.
  pub replication_state_dir: Option<String>,
}

impl Default for StoreOptions {
  fn default() -> Self {
    StoreOptions {
      workspace_dir: PathBuf::new(),
      session_id: String::new(),
      grimoire_dir: DEFAULT_GRIMOIRE_DIR.into(),
      wal_dir: DEFAULT_WAL_DIR.into(),
      notes_path: format!("{DEFAULT_GRIMOIRE_DIR}/NOTES.md"),
      learnings_path: format!("{DEFAULT_GRIMOIRE_DIR}/learnings.json"),
      wal: WalOptions::default(),
      gates: GateConfig::default(),
      retry: RetryConfig::default(),
      context: ContextConfig::default(),
      redaction: RedactOptions::default(),
      search: SearchSettings::default(),
      sharing: Sharing::default(),
      keys_dir: DEFAULT_KEYS_DIR.into(),
      audit_dir: DEFAULT_AUDIT_DIR.into(),
      audit_segment_max_bytes: DEFAULT_AUDIT_SEGMENT_MAX_BYTES,
      manifest_name: Some(super::seal::DEFAULT_MANIFEST_NAME.into()),
      recovery_state_dir: crate::recovery::DEFAULT_STATE_DIR.into(),
      replication_state_dir: None,
    }
  }
}

/// Default grimoire, relative to the workspace.
pub const DEFAULT_GRIMOIRE_DIR: &str = "grimoires/loa";
/// Default WAL directory, relative to the workspace.
pub const DEFAULT_WAL_DIR: &str = ".loa/wal";
/// Default key directory, relative to the workspace.
pub const DEFAULT_KEYS_DIR: &str = ".loa/keys";
/// Default audit log directory, relative to the workspace, and its segment size.
pub const DEFAULT_AUDIT_DIR: &str = ".loa/audit";
pub const DEFAULT_AUDIT_SEGMENT_MAX_BYTES: u64 = 10 * 1024 * 1024;

/// Retry policy of failed memory captures (YAML section `memory.retry`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct RetryConfig {
  /// Total tries, the first included. Default 3 (seed 002 §6, SPEC). 1 means no retry.
  #[serde(deserialize_with = "uint::<_, _, 1, 100>")]
  pub max_attempts: u64,
  /// Exponential backoff: after the n-th failed try, wait `backoffBaseMs * 2^n` ms before the next
  /// (seed 002: 2 s, then 4 s). Default 1000.
  #[serde(deserialize_with = "uint::<_, _, 0, 3_600_000>")]
  pub backoff_base_ms: u64,
}

impl Default for RetryConfig {
  fn default() -> Self {
    RetryConfig { max_attempts: 3, backoff_base_ms: 1000 }
  }
}

/// What `capture` is given.
#[derive(Debug, Clone)]
pub struct Entry {
  pub kind: MemoryKind,
  pub content: String,
  pub agent_id: Option<String>,
  pub confidence: Option<f64>,
  pub tags: Vec<String>,
  /// RFC 3339, any offset; default: now.
  pub timestamp: Option<String>,
  /// A JSON object.
  pub metadata: Option<Value>,
}

/// An entry's caller text as it is stored: content, tags and metadata redacted, with what was
/// found. The agent id is not among them: it is an identifier, checked and kept as given.
#[derive(Debug)]
pub(crate) struct RedactedEntry {
  pub content: String,
  pub tags: Vec<String>,
  pub metadata: Option<Value>,
  pub findings: Vec<FieldFinding>,
  /// Redaction policy refuses to store something the entry holds (a private key).
  pub blocked: bool,
}

impl Entry {
  /// Redacts what the entry holds of the caller's text, as capture and the dead-letter queue
  /// both store it (one walk for both, so a dead letter never keeps more than a capture would).
  pub(crate) fn redacted(&self, options: &RedactOptions) -> RedactedEntry {
    let mut redactor = FieldRedactor::new(options);
    let content = redactor.text("content", &self.content);
    let mut tags = self.tags.clone();
    redactor.list_mut("tags", &mut tags);
    let metadata = self.metadata.as_ref().map(|m| redactor.value("metadata", m));
    RedactedEntry { content, tags, metadata, findings: redactor.findings, blocked: redactor.blocked }
  }

  pub fn new(kind: MemoryKind, content: impl Into<String>) -> Entry {
    Entry {
      kind,
      content: content.into(),
      agent_id: None,
      confidence: None,
      tags: Vec::new(),
      timestamp: None,
      metadata: None,
    }
  }

  /// Checks sizes and ranges. Messages name the field, never its value: the value is
  /// unredacted.
  pub fn validate(&self) -> Result<()> {
    if self.content.len() > MAX_CONTENT_BYTES {
      return Err(LoaError::TooLarge {
        what: "memory content".into(),
        size: self.content.len() as u64,
        limit: MAX_CONTENT_BYTES as u64,
      });
    }
    if let Some(c) = self.confidence {
      if !(0.0..=1.0).contains(&c) {
        return invalid("`confidence` must be a number between 0 and 1");
      }
    }
    if self.tags.len() > MAX_TAGS || self.tags.iter().any(|t| t.is_empty() || t.len() > MAX_TAG_BYTES) {
      return invalid(format!("`tags` must be at most {MAX_TAGS} non-empty strings of at most {MAX_TAG_BYTES} bytes"));
    }
    if let Some(agent) = &self.agent_id {
      check_agent_id(agent)?;
    }
    if let Some(meta) = &self.metadata {
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
    Ok(())
  }
}

/// Longest agent id, in bytes.
pub const MAX_AGENT_ID_BYTES: usize = 128;

/// Checks an agent id, wherever one comes in (capture, search, get, contexts, imports, dead
/// letters): 1 to [`MAX_AGENT_ID_BYTES`] of `A-Z a-z 0-9 . _ - : @ +`, starting with a letter
/// or digit, without `..`. Anything else is `E_INVALID_ARGUMENT`, whose message never repeats
/// the id. An agent id is an identifier, not content: it is stored as given (never through
/// redaction, which would turn two e-mail-like ids into one placeholder) and compared exactly.
pub fn check_agent_id(agent: &str) -> Result<()> {
  let ok = !agent.is_empty()
    && agent.len() <= MAX_AGENT_ID_BYTES
    && agent.as_bytes()[0].is_ascii_alphanumeric()
    && agent.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b':' | b'@' | b'+'))
    && !agent.contains("..");
  if ok {
    return Ok(());
  }
  invalid(format!(
    "`agentId` must be 1 to {MAX_AGENT_ID_BYTES} of the characters A-Z a-z 0-9 . _ - : @ +, starting with a letter or digit, with no two dots in a row"
  ))
}

/// A redaction finding of one field of the entry (offsets into that field, UTF-16).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaptureFinding {
  /// `content`, `agentId`, `tags[2]`, `metadata.customer.email`, ...
  pub field: String,
  pub kind: String,
  pub start: usize,
  pub end: usize,
  pub method: String,
  pub fingerprint: String,
}

/// Kind and fingerprint of a redacted value, as kept in a memory record and in audit records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RedactionNote {
  pub field: String,
  pub kind: String,
  pub method: String,
  pub fingerprint: String,
}

/// What one try of a capture came to ([`super::MemoryStore::try_capture`]).
#[derive(Debug, Clone, PartialEq)]
pub enum CaptureTry {
  /// The capture's answer (stored, refused by a gate, or blocked).
  Done(CaptureOutcome),
  /// The disk refused (`E_IO`) and the retry policy allows another try after this delay.
  RetryAfter(std::time::Duration),
}

#[derive(Debug, Clone, PartialEq)]
pub struct CaptureOutcome {
  pub accepted: bool,
  pub id: Option<String>,
  pub seq: Option<u64>,
  /// Empty when the entry was blocked (the gates never saw it).
  pub gates: Vec<GateResult>,
  pub findings: Vec<CaptureFinding>,
  pub blocked: bool,
  pub score: f64,
  pub tags: Vec<String>,
}

/// The version of a stored memory's JSON that this library writes and reads. A record of
/// another version is never read as if it were this one (see `view::read_records`).
pub const RECORD_VERSION: u32 = 1;

/// A stored memory: the JSON of `memory/<id>.json` and of the WAL record that carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryRecord {
  pub version: u32,
  /// Full sha256 (hex) of the normalised (redacted) content.
  pub id: String,
  #[serde(rename = "type")]
  pub kind: MemoryKind,
  /// Redacted.
  pub content: String,
  pub session_id: String,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub agent_id: Option<String>,
  /// Canonical UTC, `2026-01-02T10:00:00.000Z`.
  pub timestamp: String,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub confidence: Option<f64>,
  /// Importance from the gates (0..1).
  pub score: f64,
  pub tags: Vec<String>,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub metadata: Option<Value>,
  #[serde(default)]
  pub redactions: Vec<RedactionNote>,
  /// Canonical UTC; once past, the memory is no longer returned by searches and is forgotten
  /// (see [`MemoryStore::forget`](super::MemoryStore::forget)) at the next consolidation.
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub expires_at: Option<String>,
}

impl MemoryRecord {
  /// The bytes of its record file (`memory/<id>.json`) and of the WAL record that carries it:
  /// one definition, so that what consolidation writes for a record it parsed is byte for byte
  /// what capture wrote.
  pub(super) fn file_bytes(&self) -> Result<Vec<u8>> {
    let mut data = serde_json::to_vec_pretty(self).map_err(|e| LoaError::Internal(e.to_string()))?;
    data.push(b'\n');
    Ok(data)
  }

  /// Whether this is a memory capture could have stored: this version, its id the hash of its
  /// content (computed as capture computes it), its session id and times readable, its numbers
  /// in range, its metadata an object. Sizes are bounded by the record's (redaction may have
  /// lengthened a field past what capture accepts from its caller). The error says which check
  /// failed, never a value.
  pub(super) fn check(&self) -> std::result::Result<(), &'static str> {
    if self.version != RECORD_VERSION {
      return Err("its memory is not of record version 1");
    }
    if self.id != crate::gates::content_hash(&self.content) {
      return Err("its id is not the hash of its content");
    }
    if crate::wal::reader::validate_session_id(&self.session_id).is_err() {
      return Err("its sessionId is not a session id");
    }
    if parse_rfc3339_ms(&self.timestamp, "timestamp").is_err() {
      return Err("its timestamp is not an RFC 3339 time");
    }
    if self.expires_at.as_deref().is_some_and(|t| parse_rfc3339_ms(t, "expiresAt").is_err()) {
      return Err("its expiresAt is not an RFC 3339 time");
    }
    if self.confidence.is_some_and(|c| !(0.0..=1.0).contains(&c)) || !(0.0..=1.0).contains(&self.score) {
      return Err("its confidence or score is not between 0 and 1");
    }
    if self.metadata.as_ref().is_some_and(|m| !m.is_object()) {
      return Err("its metadata is not an object");
    }
    Ok(())
  }

  /// When it expires, in ms since the Unix epoch (`None`: never; an unreadable value counts as
  /// already expired, so a damaged record errs towards forgetting).
  pub(super) fn expires_ms(&self) -> Option<i64> {
    self.expires_at.as_deref().map(|t| parse_rfc3339_ms(t, "expiresAt").unwrap_or(i64::MIN))
  }

  pub(super) fn is_expired(&self, now_ms: i64) -> bool {
    self.expires_ms().is_some_and(|at| at <= now_ms)
  }

  pub(super) fn ts_ms(&self) -> i64 {
    parse_rfc3339_ms(&self.timestamp, "timestamp").unwrap_or(0)
  }

  /// The order memories were captured in: their time, then their id for equal times. Listings
  /// and the search index's rebuilds use it (the index takes memories added one after the other
  /// in a session as neighbours, see `search::rank`).
  pub(super) fn capture_order(&self, other: &MemoryRecord) -> std::cmp::Ordering {
    self.ts_ms().cmp(&other.ts_ms()).then_with(|| self.id.cmp(&other.id))
  }

  pub(super) fn is_learning(&self) -> bool {
    self.kind == MemoryKind::Learning || self.tags.iter().any(|t| t == "instruction")
  }

  /// The fields of learnings.json the pipeline owns, for this memory.
  pub(super) fn learning_entry(&self) -> Map<String, Value> {
    let mut e = Map::new();
    e.insert("id".into(), self.id.clone().into());
    e.insert("type".into(), self.kind.as_str().into());
    e.insert("content".into(), self.content.clone().into());
    e.insert("importance".into(), self.score.into());
    if let Some(c) = self.confidence {
      e.insert("confidence".into(), c.into());
    }
    e.insert("tags".into(), self.tags.clone().into());
    e.insert("sessionId".into(), self.session_id.clone().into());
    if let Some(a) = &self.agent_id {
      e.insert("agentId".into(), a.clone().into());
    }
    e.insert("createdAt".into(), self.timestamp.clone().into());
    e
  }

  pub(super) fn as_learning(&self) -> Learning {
    Learning {
      id: self.id.clone(),
      kind: self.kind,
      content: self.content.clone(),
      importance: self.score,
      confidence: self.confidence,
      tags: self.tags.clone(),
      session_id: self.session_id.clone(),
      agent_id: self.agent_id.clone(),
      created_at: self.timestamp.clone(),
      status: "active".into(),
    }
  }
}

/// `id` when `name` is a record file name `<64 hex>.json`.
pub(super) fn record_name_hash(name: &str) -> Option<&str> {
  let hash = name.strip_suffix(".json")?;
  (hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))).then_some(hash)
}

/// The grimoire-relative path of a record.
pub(super) fn record_path(id: &str) -> String {
  format!("{MEMORY_DIR}/{id}.json")
}

/// A WAL record consolidation did not apply: refused (`E_RECORD_REFUSED`: it would write
/// something other than its memory's record file, see `admit`), or its memory's record file
/// cannot be written (`E_NOT_REGULAR_FILE`, `E_PATH_OUTSIDE_ROOT`, `E_IO`). Never its content.
#[derive(Debug, Clone, PartialEq)]
pub struct RefusedRecord {
  /// The session whose log holds it (`<origin>.<session>` for one pulled from another origin).
  pub session_id: String,
  pub seq: u64,
  pub code: &'static str,
  /// Which check failed (names no value the record carries).
  pub reason: String,
}

impl From<&crate::wal::DeadLetter> for RefusedRecord {
  fn from(d: &crate::wal::DeadLetter) -> RefusedRecord {
    RefusedRecord { session_id: d.session_id.clone(), seq: d.seq, code: d.code, reason: d.reason.clone() }
  }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConsolidateOutcome {
  /// Memory record files the WAL consolidation wrote in the grimoire.
  pub applied: usize,
  pub notes_updated: bool,
  /// Learnings added to or changed in the store by this run.
  pub learnings: usize,
  /// Cross-session overwrites of the same path (also in the WAL's `conflicts.jsonl`).
  pub conflicts: usize,
  /// Memory records in the grimoire after this run.
  pub memories: usize,
  /// Entries in the learnings store after this run.
  pub learnings_total: usize,
  /// Memories past their `expiresAt`, forgotten by this run.
  pub expired: usize,
  /// Expired memories whose records are still in the log of a session another process holds
  /// open (counted once per session holding one): hidden from every read already, and removed
  /// from that log by a later run once its lock is free.
  pub pending_removals: usize,
  /// The summary of all memories (`memory-summary.json`) had to be rebuilt from every record
  /// (first run, damaged or stale summary) instead of updated with this run's records.
  pub rebuilt: bool,
  /// The signed manifest written at the end of the run, when it was asked to seal.
  pub sealed: Option<super::seal::Sealed>,
  /// WAL records this run did not apply (each counts as handled: it is not tried again).
  pub refused: Vec<RefusedRecord>,
}

/// Where a session entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionSource {
  /// Memory records, consolidated or still in the WAL.
  Memory,
  /// Only NOTES.md still lists it.
  Notes,
}

impl SessionSource {
  pub fn as_str(self) -> &'static str {
    match self {
      SessionSource::Memory => "memory",
      SessionSource::Notes => "notes",
    }
  }
}

/// One session, as `recentSessions` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEntry {
  pub session_id: String,
  pub started_at: String,
  pub last_active_at: String,
  pub memories: u64,
  /// Memories per kind.
  pub kinds: BTreeMap<MemoryKind, u64>,
  /// Contents of the session's newest memories (at most 3), newest first.
  pub latest: Vec<String>,
  pub source: SessionSource,
}

/// One learning, as `activeLearnings` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Learning {
  pub id: String,
  /// An entry of learnings.json whose `type` is missing or not a memory kind counts as a
  /// learning (it is in the learnings store); the file itself is never changed for it.
  pub kind: MemoryKind,
  pub content: String,
  pub importance: f64,
  pub confidence: Option<f64>,
  pub tags: Vec<String>,
  pub session_id: String,
  pub agent_id: Option<String>,
  pub created_at: String,
  pub status: String,
}

/// Overrides of the workspace's `context` settings for `build_context`.
#[derive(Debug, Clone, Default)]
pub struct ContextRequest {
  pub budget: Option<u64>,
  pub session_share: Option<f64>,
  pub encoding: Option<crate::tokens::TokenEncoding>,
  pub safety_margin: Option<f64>,
  /// How many recent sessions to consider (default `context.recentSessions`).
  pub sessions: Option<u64>,
  /// How many active learnings to consider (default `context.activeLearnings`).
  pub learnings: Option<u64>,
  /// With a query, the context is the memories that best match it (searched as
  /// [`MemoryStore::search`](super::MemoryStore::search) does), as many as the budget holds,
  /// each quoted as untrusted data; `sessions`, `learnings` and `session_share` are then not
  /// used. Without one, recent sessions and active learnings as before.
  pub query: Option<String>,
  /// The agent the context is for: with a query, only memories it may see are searched (its
  /// own, those `memory.sharing` shares with it, and the workspace's). `None`: every memory.
  pub agent_id: Option<String>,
}

/// Options of [`MemoryStore::capture_with`](super::MemoryStore::capture_with).
#[derive(Debug, Clone, Default)]
pub struct CaptureOptions {
  /// RFC 3339: when the memory expires.
  pub expires_at: Option<String>,
  /// Milliseconds after the memory's timestamp when it expires (the earlier of the two wins
  /// when both are given).
  pub ttl_ms: Option<u64>,
}

/// Who may see whose memories (YAML section `memory.sharing`): each key is an agent id (or
/// `*`, every agent), its list the agents whose memories it sees besides its own (`*`: every
/// agent's). Memories captured without an agent id belong to the workspace and every agent
/// sees them. An agent not named sees its own memories and the workspace's only. Every id is
/// `*` or an agent id [`check_agent_id`] accepts, compared exactly (a configuration naming
/// anything else is refused when read).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Sharing(pub BTreeMap<String, Vec<String>>);

impl<'de> Deserialize<'de> for Sharing {
  fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Sharing, D::Error> {
    let map = BTreeMap::<String, Vec<String>>::deserialize(deserializer)?;
    let bad = map.iter().flat_map(|(k, v)| std::iter::once(k).chain(v)).any(|a| a != "*" && check_agent_id(a).is_err());
    if bad {
      return Err(serde::de::Error::custom(
        "every reader and owner must be * or an agent id (1 to 128 of A-Z a-z 0-9 . _ - : @ +, starting with a letter or digit)",
      ));
    }
    Ok(Sharing(map))
  }
}

impl Sharing {
  /// The agents whose memories `agent` may see; `None`: every agent's.
  pub fn visible_to(&self, agent: &str) -> Option<Vec<String>> {
    let mut out = vec![agent.to_string()];
    for key in [agent, "*"] {
      for other in self.0.get(key).into_iter().flatten() {
        if other == "*" {
          return None;
        }
        if !out.contains(other) {
          out.push(other.clone());
        }
      }
    }
    Some(out)
  }
}

/// How memories are ranked (YAML section `memory.search`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct SearchSettings {
  /// Age, in days, at which the decaying part of a memory's recency factor has halved.
  /// Default 365.
  #[serde(deserialize_with = "crate::settings::uint::<_, _, 1, 365000>")]
  pub half_life_days: u64,
  /// What a very old memory keeps of its score, 0..1. Default 0.7.
  #[serde(deserialize_with = "crate::settings::fraction")]
  pub recency_floor: f64,
}

impl Default for SearchSettings {
  fn default() -> Self {
    let r = crate::search::Recency::default();
    SearchSettings { half_life_days: r.half_life_ms / crate::search::DAY_MS, recency_floor: r.floor }
  }
}

impl SearchSettings {
  pub fn rank(&self) -> crate::search::RankConfig {
    crate::search::RankConfig {
      recency: Some(crate::search::Recency {
        half_life_ms: self.half_life_days.saturating_mul(crate::search::DAY_MS),
        floor: self.recency_floor,
      }),
      ..Default::default()
    }
  }
}

/// What [`MemoryStore::search`](super::MemoryStore::search) is asked besides its words.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOptions {
  /// Most hits, 1 to 1000. Default 10.
  pub limit: usize,
  /// Hits scoring below this (0..1) are left out. Default 0.
  pub min_score: f64,
  /// Only memories of these kinds; `None`: every kind.
  pub kinds: Option<Vec<MemoryKind>>,
  /// The agent searching: only its memories, those `memory.sharing` shares with it and the
  /// workspace's are searched (and counted by the ranking). `None`: every memory, for tools
  /// acting for the whole workspace.
  pub agent_id: Option<String>,
  /// RFC 3339: only memories captured at or after it.
  pub since: Option<String>,
  /// The time recency is measured from and expiry judged at (ms since the Unix epoch);
  /// default: now.
  pub now_ms: Option<i64>,
}

impl Default for SearchOptions {
  fn default() -> Self {
    SearchOptions {
      limit: crate::search::DEFAULT_LIMIT,
      min_score: 0.0,
      kinds: None,
      agent_id: None,
      since: None,
      now_ms: None,
    }
  }
}

/// One memory found.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryHit {
  pub id: String,
  /// `relevance × recency × importance`, in [0, 1].
  pub score: f64,
  pub kind: MemoryKind,
  /// Redacted, as stored.
  pub content: String,
  pub session_id: String,
  pub agent_id: Option<String>,
  /// Canonical UTC.
  pub timestamp: String,
  pub tags: Vec<String>,
  pub expires_at: Option<String>,
  /// Why it came back: the BM25 part, the matched terms, the recency and importance factors.
  pub explain: crate::search::Explain,
  /// Its file in the Markdown view of the memories (see `markdown`), and the lines of its
  /// content there (1-based, inclusive): what `memory_get` reads.
  pub path: String,
  pub start_line: usize,
  pub end_line: usize,
}

/// The answer to a search.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySearchResults {
  /// Best first.
  pub hits: Vec<MemoryHit>,
  /// The query's terms as used, each with its frequency in the memories searched.
  pub terms: Vec<crate::search::QueryTerm>,
  /// Distinct query terms beyond the first 64, not used.
  pub dropped_terms: usize,
}

/// Which memories [`MemoryStore::forget`](super::MemoryStore::forget) removes.
#[derive(Debug, Clone, PartialEq)]
pub enum ForgetSelector {
  /// One memory, by id (a memory that does not exist is no error: nothing is forgotten).
  Id(String),
  /// The memories a search finds. Without `confirm`, nothing is changed and the memories that
  /// would be forgotten are returned; with it, they are forgotten.
  Query { query: String, options: SearchOptions, confirm: bool },
}

/// Options of [`MemoryStore::forget`](super::MemoryStore::forget).
#[derive(Debug, Clone, Default)]
pub struct ForgetOptions {
  /// The HMAC key of the workspace's audit log (`audit.dir`), when it is keyed.
  pub audit_hmac_key: Option<zeroize::Zeroizing<Vec<u8>>>,
  /// Seal the grimoire again once the memories are gone, as a sealed consolidation does: the
  /// manifest listed them (`memory/<id>.json`), and without a ring it can only be rewritten
  /// unsigned.
  pub seal: Option<super::seal::SealRequest>,
}

/// What [`MemoryStore::forget`](super::MemoryStore::forget) did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ForgetOutcome {
  /// False for a query without `confirm`: nothing was changed.
  pub applied: bool,
  /// The memories selected (for an unconfirmed query: those that would be forgotten).
  pub matched: Vec<MemoryHit>,
  /// Keyed ids of the tombstones recorded (HMAC-SHA256 of the memory id under the workspace's
  /// tombstone key, hex); one per forgotten memory.
  pub tombstones: Vec<String>,
  /// WAL records replaced by tombstone records.
  pub wal_records: usize,
  /// Derived files changed (record files, learnings.json, NOTES.md, consolidation state,
  /// the manifest).
  pub files_changed: usize,
  /// The grimoire sealed again after the forget, when a key ring was given (see
  /// [`ForgetOptions::seal`]).
  pub sealed: Option<super::seal::Sealed>,
  /// True when the grimoire's manifest was rewritten without the forgotten memories and
  /// without its signature (no key ring given, or the workspace is degraded): until the next
  /// sealed consolidation, recovery finds it unsigned (see `docs/search.md`).
  pub manifest_unsigned: bool,
  /// Copies the project kept that held a forgotten memory and were removed: recovery's
  /// evidence, leftover, staging and git scratch directories, quarantined `*.corrupt-*` files
  /// (workspace-relative paths).
  pub copies_removed: Vec<String>,
  /// Lines of the dead-letter queue (`.loa/dead-letter.jsonl`) removed.
  pub dead_letters: usize,
  /// Markdown files (memory-core's `MEMORY.md`, `memory/*.md`) a forgotten memory was
  /// imported from: its block removed from each, or reported as possibly still there.
  pub imported: Vec<ImportedCopy>,
}

/// A Markdown file a forgotten memory was imported from (see
/// [`MemoryStore::import_markdown`](super::MemoryStore::import_markdown)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedCopy {
  /// The file: relative to the workspace when it is inside it, else absolute; only the name
  /// the record gives (`MEMORY.md`) when its directory is not known.
  pub file: String,
  /// The first line (1-based) of the memory's block in the file, when it was found there.
  pub line: Option<usize>,
  /// True: the block's lines were removed (the file rewritten atomically, every other byte
  /// kept). False: the memory's text could not be located there (the file changed since the
  /// import, or was being written), so the file may still hold it.
  pub removed: bool,
}
