//! The memory pipeline: from "the agent finished a turn" to "a clean, worthwhile memory is
//! durably stored and can be read back".
//!
//! [`MemoryStore::capture`]: redaction (a blocked entry is refused; only the kinds and
//! fingerprints of its findings are recorded, as an `audit` record in the WAL) -> the six quality
//! gates ([`crate::gates`]) on the redacted text -> one WAL record `write memory/<id>.json`, where
//! `id` is the full sha256 of the normalised content. It returns once the record is durable. Only
//! redacted text is ever written: content, tags, agent id and every string (keys too) of
//! `metadata` go through the redactor, and errors never carry content.
//!
//! [`MemoryStore::consolidate`]: applies the WAL of every session into the grimoire with
//! [`crate::wal::consolidate`] (so memory records are files `memory/<id>.json`, written
//! atomically, last write wins per path, cross-session overwrites logged), then derives from all
//! memory records the learnings store (`learnings.json`, merged by id, see [`learnings`]) and the
//! two regions of NOTES.md the pipeline owns (see [`notes`]). Derived files are written only when
//! their bytes change, L1 (JSON) before L2 (markdown), each atomically; a second run changes
//! nothing. Because memories are content-addressed, the same normalised content is stored once
//! even when two sessions capture it at the same time.

pub mod learnings;
pub mod notes;

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::load_config;
use crate::error::{invalid, LoaError, Result};
use crate::fsutil::{create_dir_durable, ensure_inside, join_relative, write_file_atomic};
use crate::gates::{self, Candidate, GateConfig, GateResult, MEMORY_TYPES};
use crate::lock::lock_exclusive;
use crate::redact::{redact, RedactOptions};
use crate::timestamp::{format_ms, now_ms, parse_rfc3339_ms};
use crate::wal::reader::{list_sessions, read_session};
use crate::wal::{self, AppendRequest, ConsolidateOptions, Wal, WalOptions};

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
const LOCK_FILE: &str = "memory-consolidate.lock";

/// Threshold overrides of the quality gates; `None` keeps the configured value.
#[derive(Debug, Clone, Default)]
pub struct GateOverrides {
  pub min_confidence: Option<f64>,
  pub speculation_min_confidence: Option<f64>,
  pub min_content_length: Option<u64>,
  pub repetition_min_unique_ratio: Option<f64>,
  pub repetition_min_words: Option<u64>,
  pub max_age_ms: Option<u64>,
  pub instruction_boost: Option<f64>,
}

impl GateOverrides {
  pub fn apply(&self, mut base: GateConfig) -> GateConfig {
    base.min_confidence = self.min_confidence.unwrap_or(base.min_confidence);
    base.speculation_min_confidence = self.speculation_min_confidence.unwrap_or(base.speculation_min_confidence);
    base.min_content_length = self.min_content_length.unwrap_or(base.min_content_length);
    base.repetition_min_unique_ratio = self.repetition_min_unique_ratio.unwrap_or(base.repetition_min_unique_ratio);
    base.repetition_min_words = self.repetition_min_words.unwrap_or(base.repetition_min_words);
    base.max_age_ms = self.max_age_ms.or(base.max_age_ms);
    base.instruction_boost = self.instruction_boost.unwrap_or(base.instruction_boost);
    base
  }
}

/// Options of [`MemoryStore::open`].
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
  pub workspace_dir: PathBuf,
  /// Relative to the workspace; default `grimoiresDir` of `.loa.config.yaml` (`grimoires/loa`).
  /// When given, NOTES.md and learnings.json live directly in it.
  pub grimoires_dir: Option<String>,
  /// Relative to the workspace; default `wal.dir` of the configuration (`.loa/wal`).
  pub wal_dir: Option<String>,
  pub session_id: String,
  pub gates: GateOverrides,
  pub redaction: RedactOptions,
  /// How long to wait for another writer of the same session; default `wal.lockTimeoutMs`.
  pub lock_timeout_ms: Option<u64>,
}

/// What `capture` is given.
#[derive(Debug, Clone, Default)]
pub struct Entry {
  pub memory_type: String,
  pub content: String,
  pub agent_id: Option<String>,
  pub confidence: Option<f64>,
  pub tags: Vec<String>,
  /// RFC 3339, any offset; default: now.
  pub timestamp: Option<String>,
  /// A JSON object.
  pub metadata: Option<Value>,
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

/// A stored memory: the JSON of `memory/<id>.json` and of the WAL record that carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryRecord {
  pub version: u32,
  /// Full sha256 (hex) of the normalised (redacted) content.
  pub id: String,
  #[serde(rename = "type")]
  pub memory_type: String,
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
}

impl MemoryRecord {
  fn ts_ms(&self) -> i64 {
    parse_rfc3339_ms(&self.timestamp, "timestamp").unwrap_or(0)
  }

  fn is_learning(&self) -> bool {
    self.memory_type == "learning" || self.tags.iter().any(|t| t == "instruction")
  }

  fn learning_entry(&self) -> Map<String, Value> {
    let mut e = Map::new();
    e.insert("id".into(), self.id.clone().into());
    e.insert("type".into(), self.memory_type.clone().into());
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
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConsolidateOutcome {
  /// Files the WAL consolidation wrote or deleted in the grimoire (memory records, and anything
  /// else written through the same WAL).
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
}

/// One session, as `recentSessions` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEntry {
  pub session_id: String,
  pub started_at: String,
  pub last_active_at: String,
  pub memories: u64,
  /// Memories per type.
  pub types: BTreeMap<String, u64>,
  /// Contents of the session's newest memories (at most 3), newest first.
  pub latest: Vec<String>,
  /// `memory` (records, consolidated or still in the WAL) or `notes` (only NOTES.md knows it).
  pub source: String,
}

/// One learning, as `activeLearnings` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Learning {
  pub id: String,
  pub memory_type: String,
  pub content: String,
  pub importance: f64,
  pub confidence: Option<f64>,
  pub tags: Vec<String>,
  pub session_id: String,
  pub agent_id: Option<String>,
  pub created_at: String,
  pub status: String,
}

#[derive(Debug, Clone)]
struct Paths {
  grimoire: PathBuf,
  memory_dir: PathBuf,
  wal_dir: PathBuf,
  notes: PathBuf,
  learnings: PathBuf,
}

/// One session's handle on a workspace's memory. Holds the session's WAL lock until closed.
pub struct MemoryStore {
  paths: Paths,
  session_id: String,
  gates: GateConfig,
  redaction: RedactOptions,
  max_attempts: u64,
  backoff_base_ms: u64,
  lock_timeout: Duration,
  wal: Mutex<Option<Arc<Wal>>>,
  /// Content hashes of every stored or captured memory (the duplicate gate's set).
  known: Mutex<HashSet<String>>,
  view: MemoryView,
}

fn is_record_name(name: &str) -> Option<&str> {
  let hash = name.strip_suffix(".json")?;
  (hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))).then_some(hash)
}

fn record_path(id: &str) -> String {
  format!("{MEMORY_DIR}/{id}.json")
}

fn ensure_dir_inside(workspace: &Path, dir: &Path) -> Result<()> {
  create_dir_durable(dir)?;
  ensure_inside(workspace, dir)
}

struct Layout {
  paths: Paths,
  config: crate::config::Config,
  lock_timeout: Duration,
}

/// Resolves and creates the directories of a workspace's memory (the session id is not used).
fn layout(options: &StoreOptions) -> Result<Layout> {
  let workspace = &options.workspace_dir;
  if !workspace.is_dir() {
    return invalid(format!("workspaceDir {} is not a directory", workspace.display()));
  }
  let config = load_config(workspace)?.config;
  let grimoire = join_relative(workspace, options.grimoires_dir.as_deref().unwrap_or(&config.grimoires_dir))?;
  let wal_dir = join_relative(workspace, options.wal_dir.as_deref().unwrap_or(&config.wal.dir))?;
  let (notes, learnings) = match options.grimoires_dir {
    Some(_) => (grimoire.join("NOTES.md"), grimoire.join("learnings.json")),
    None => {
      (join_relative(workspace, &config.memory.notes_path)?, join_relative(workspace, &config.memory.learnings_path)?)
    }
  };
  ensure_dir_inside(workspace, &grimoire)?;
  ensure_dir_inside(workspace, &wal_dir)?;
  for file in [&notes, &learnings] {
    ensure_dir_inside(workspace, file.parent().unwrap_or(workspace))?;
  }
  let memory_dir = grimoire.join(MEMORY_DIR);
  let lock_timeout = Duration::from_millis(options.lock_timeout_ms.unwrap_or(config.wal.lock_timeout_ms));
  Ok(Layout { paths: Paths { grimoire, memory_dir, wal_dir, notes, learnings }, config, lock_timeout })
}

/// [`MemoryStore::consolidate`] without opening a session: for tools (`loa consolidate`) that
/// capture nothing. `options.session_id` is ignored.
pub fn consolidate_workspace(options: &StoreOptions) -> Result<ConsolidateOutcome> {
  let Layout { paths, lock_timeout, .. } = layout(options)?;
  consolidate_paths(&paths, lock_timeout)
}

impl MemoryStore {
  /// Opens the memory of `options.workspace_dir` for one session: reads `.loa.config.yaml`,
  /// creates the grimoire and WAL directories, takes the session's WAL lock (waiting up to the
  /// lock timeout) and collects the hashes of stored memories for the duplicate gate.
  pub fn open(options: StoreOptions) -> Result<MemoryStore> {
    wal::reader::validate_session_id(&options.session_id)?;
    let Layout { paths, config, lock_timeout } = layout(&options)?;
    let gates = options.gates.apply(config.memory.quality_gates.clone());
    gates.validate()?;
    let wal_options = WalOptions {
      session_id: options.session_id.clone(),
      lock_timeout,
      segment_max_bytes: config.wal.segment_max_bytes,
      segment_max_age: Duration::from_millis(config.wal.segment_max_age_ms),
      sync: config.wal.sync,
    };
    let wal = Wal::open(&paths.wal_dir, wal_options)?;
    let known = known_hashes(&paths)?;
    Ok(MemoryStore {
      paths: paths.clone(),
      session_id: options.session_id,
      gates,
      redaction: options.redaction,
      max_attempts: config.memory.retry.max_attempts.max(1),
      backoff_base_ms: config.memory.retry.backoff_base_ms,
      lock_timeout,
      wal: Mutex::new(Some(Arc::new(wal))),
      known: Mutex::new(known),
      view: MemoryView { paths: paths.clone(), context: config.context },
    })
  }

  pub fn session_id(&self) -> &str {
    &self.session_id
  }

  pub fn is_closed(&self) -> bool {
    self.wal.lock().unwrap_or_else(|p| p.into_inner()).is_none()
  }

  /// Makes queued records durable and releases the session lock. Idempotent.
  pub fn close(&self) -> Result<()> {
    let wal = self.wal.lock().unwrap_or_else(|p| p.into_inner()).take();
    match wal {
      Some(wal) => wal.close(),
      None => Ok(()),
    }
  }

  fn wal(&self) -> Result<Arc<Wal>> {
    self
      .wal
      .lock()
      .unwrap_or_else(|p| p.into_inner())
      .clone()
      .ok_or_else(|| LoaError::WalClosed("the MemoryStore was closed".into()))
  }

  fn redact_field(&self, field: &str, text: &str, findings: &mut Vec<CaptureFinding>, blocked: &mut bool) -> String {
    let r = redact(text, &self.redaction);
    *blocked |= r.blocked;
    findings.extend(r.findings.into_iter().map(|f| CaptureFinding {
      field: field.to_string(),
      kind: f.kind,
      start: f.start,
      end: f.end,
      method: f.method,
      fingerprint: f.fingerprint,
    }));
    r.text
  }

  fn redact_value(&self, field: &str, value: &Value, findings: &mut Vec<CaptureFinding>, blocked: &mut bool) -> Value {
    match value {
      Value::String(s) => Value::String(self.redact_field(field, s, findings, blocked)),
      Value::Array(items) => Value::Array(
        items
          .iter()
          .enumerate()
          .map(|(i, v)| self.redact_value(&format!("{field}[{i}]"), v, findings, blocked))
          .collect(),
      ),
      Value::Object(map) => {
        let mut out = Map::new();
        for (key, v) in map {
          let clean_key = self.redact_field(&format!("{field}.<key>"), key, findings, blocked);
          let path = format!("{field}.{clean_key}");
          out.insert(clean_key, self.redact_value(&path, v, findings, blocked));
        }
        Value::Object(out)
      }
      other => other.clone(),
    }
  }

  /// Redacts, gates and durably appends one memory. Not accepted (gates) and blocked
  /// (redaction policy) are answers, not errors; errors are bad arguments, a closed store and
  /// the disk refusing (after `memory.retry.maxAttempts` tries for `E_IO`).
  pub fn capture(&self, entry: Entry) -> Result<CaptureOutcome> {
    validate_entry(&entry)?;
    let timestamp_ms = entry.timestamp.as_deref().map(|t| parse_rfc3339_ms(t, "timestamp")).transpose()?;
    let wal = self.wal()?;

    let mut findings = Vec::new();
    let mut blocked = false;
    let content = self.redact_field("content", &entry.content, &mut findings, &mut blocked);
    let tags: Vec<String> = entry
      .tags
      .iter()
      .enumerate()
      .map(|(i, t)| self.redact_field(&format!("tags[{i}]"), t, &mut findings, &mut blocked))
      .collect();
    let agent_id = entry.agent_id.as_deref().map(|a| self.redact_field("agentId", a, &mut findings, &mut blocked));
    let metadata = entry.metadata.as_ref().map(|m| self.redact_value("metadata", m, &mut findings, &mut blocked));
    let notes: Vec<RedactionNote> = findings
      .iter()
      .map(|f| RedactionNote {
        field: f.field.clone(),
        kind: f.kind.clone(),
        method: f.method.clone(),
        fingerprint: f.fingerprint.clone(),
      })
      .collect();

    if blocked {
      // Refused. The audit record holds what was found and its keyed fingerprint, nothing else.
      let meta = serde_json::json!({ "event": "memory_blocked", "type": entry.memory_type, "findings": notes });
      self.append_with_retry(
        &wal,
        AppendRequest { op: "audit".into(), path: None, meta: Some(meta.to_string()), data: None },
      )?;
      return Ok(CaptureOutcome {
        accepted: false,
        id: None,
        seq: None,
        gates: Vec::new(),
        findings,
        blocked: true,
        score: 0.0,
        tags: Vec::new(),
      });
    }

    let now = now_ms();
    let candidate = Candidate {
      content: content.clone(),
      memory_type: Some(entry.memory_type.clone()),
      confidence: entry.confidence,
      timestamp_ms,
      session_id: Some(self.session_id.clone()),
      tags,
    };
    let id = gates::content_hash(&content);
    let evaluation = {
      let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
      let evaluation = gates::evaluate(&candidate, &self.gates, &|h| known.contains(h), now);
      if evaluation.pass {
        // Reserved under the lock, so two concurrent captures of the same content cannot both pass.
        known.insert(id.clone());
      }
      evaluation
    };
    if !evaluation.pass {
      return Ok(CaptureOutcome {
        accepted: false,
        id: None,
        seq: None,
        gates: evaluation.gates,
        findings,
        blocked: false,
        score: evaluation.score,
        tags: evaluation.tags,
      });
    }
    let record = MemoryRecord {
      version: 1,
      id: id.clone(),
      memory_type: entry.memory_type.clone(),
      content,
      session_id: self.session_id.clone(),
      agent_id,
      timestamp: format_ms(timestamp_ms.unwrap_or(now)),
      confidence: entry.confidence,
      score: evaluation.score,
      tags: evaluation.tags.clone(),
      metadata,
      redactions: notes,
    };
    let mut data = serde_json::to_vec_pretty(&record).map_err(|e| LoaError::Internal(e.to_string()))?;
    data.push(b'\n');
    let request = AppendRequest {
      op: "write".into(),
      path: Some(record_path(&id)),
      meta: Some(serde_json::json!({ "memory": entry.memory_type }).to_string()),
      data: Some(data),
    };
    match self.append_with_retry(&wal, request) {
      Ok(seq) => Ok(CaptureOutcome {
        accepted: true,
        id: Some(id),
        seq: Some(seq),
        gates: evaluation.gates,
        findings,
        blocked: false,
        score: evaluation.score,
        tags: evaluation.tags,
      }),
      Err(e) => {
        self.known.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        Err(e)
      }
    }
  }

  /// Appends, retrying `E_IO` failures with exponential backoff (`backoffBaseMs * 2^n` after the
  /// n-th failed try) up to `maxAttempts` tries in all.
  fn append_with_retry(&self, wal: &Wal, request: AppendRequest) -> Result<u64> {
    let mut attempt = 1;
    loop {
      match wal.append(request.clone()) {
        Ok(seq) => return Ok(seq),
        Err(e) if e.code() == "E_IO" && attempt < self.max_attempts => {
          std::thread::sleep(Duration::from_millis(self.backoff_base_ms.saturating_mul(1 << attempt.min(20))));
          attempt += 1;
        }
        Err(e) => return Err(e),
      }
    }
  }

  /// Applies the WAL of every session into the grimoire and updates learnings.json and
  /// NOTES.md. See the module documentation.
  pub fn consolidate(&self) -> Result<ConsolidateOutcome> {
    consolidate_paths(&self.paths, self.lock_timeout)
  }
}

/// Read access to a workspace's memory without opening a session (no lock, nothing written):
/// what `MemoryStore` reads through, and what tools such as `loa context` use directly.
#[derive(Debug, Clone)]
pub struct MemoryView {
  paths: Paths,
  /// The workspace's `context` settings: budget, share, encoding, how many items to consider.
  context: crate::context::ContextConfig,
}

impl MemoryView {
  /// Resolves the workspace's memory layout from `.loa.config.yaml` and `options` (the session
  /// id is not used).
  pub fn open(options: &StoreOptions) -> Result<MemoryView> {
    let Layout { paths, config, .. } = layout(options)?;
    Ok(MemoryView { paths, context: config.context })
  }

  /// Memory records of all sessions: consolidated ones, plus those still only in the WAL.
  /// Unreadable record files are skipped here (consolidation reports them).
  fn all_records(&self) -> Result<Vec<MemoryRecord>> {
    let mut records = read_records(&self.paths.memory_dir, false)?;
    let mut ids: HashSet<String> = records.iter().map(|r| r.id.clone()).collect();
    for record in pending_records(&self.paths.wal_dir)? {
      if ids.insert(record.id.clone()) {
        records.push(record);
      }
    }
    Ok(records)
  }

  /// Sessions newest first (by their newest memory), from the memory records (consolidated or
  /// not) and, for sessions only it still lists, from NOTES.md.
  pub fn recent_sessions(&self, limit: usize) -> Result<Vec<SessionEntry>> {
    let records = self.all_records()?;
    let mut sessions: Vec<(i64, SessionEntry)> = aggregate_sessions(&records)
      .into_iter()
      .map(|s| {
        let last = s.last;
        (last, s.into_entry())
      })
      .collect();
    if let Ok(text) = fs::read_to_string(&self.paths.notes) {
      if let Some(body) = notes::region_body(&text, notes::SESSIONS) {
        for line in notes::parse_session_lines(&body) {
          if sessions.iter().any(|(_, s)| s.session_id == line.session_id) {
            continue;
          }
          let last = parse_rfc3339_ms(&line.last_active_at, "lastActiveAt").unwrap_or(0);
          sessions.push((
            last,
            SessionEntry {
              session_id: line.session_id,
              started_at: line.started_at,
              last_active_at: line.last_active_at,
              memories: line.memories,
              types: BTreeMap::new(),
              latest: if line.latest.is_empty() { Vec::new() } else { vec![line.latest] },
              source: "notes".into(),
            },
          ));
        }
      }
    }
    sessions.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.session_id.cmp(&b.1.session_id)));
    Ok(sessions.into_iter().take(limit).map(|(_, s)| s).collect())
  }

  /// Active learnings (no `status`, or `"active"`), by importance, then recency, then id: from
  /// learnings.json plus learnings still only in the WAL. A corrupt learnings.json fails with
  /// `E_STATE_CORRUPT` and is left in place (consolidation moves it aside).
  pub fn active_learnings(&self, limit: usize) -> Result<Vec<Learning>> {
    let store = learnings::load(&self.paths.learnings, false)?.unwrap_or_default();
    let mut out: Vec<(i64, Learning)> = Vec::new();
    let mut ids = HashSet::new();
    for entry in store.entries() {
      let Some(learning) = learning_from_json(entry) else { continue };
      ids.insert(learning.id.clone());
      if learning.status == "active" {
        out.push((parse_rfc3339_ms(&learning.created_at, "createdAt").unwrap_or(0), learning));
      }
    }
    for record in self.all_records()? {
      if record.is_learning() && !ids.contains(&record.id) {
        if let Some(learning) = learning_from_json(&Value::Object(record.learning_entry())) {
          ids.insert(learning.id.clone());
          out.push((record.ts_ms(), learning));
        }
      }
    }
    out.sort_by(|a, b| {
      b.1.importance.total_cmp(&a.1.importance).then_with(|| b.0.cmp(&a.0)).then_with(|| a.1.id.cmp(&b.1.id))
    });
    Ok(out.into_iter().take(limit).map(|(_, l)| l).collect())
  }

  /// The context for the next prompt: the `context.recentSessions` newest sessions and the
  /// `context.activeLearnings` top learnings, packed by [`crate::context::build_context`] within
  /// the configured budget (`options` overrides what it sets; its defaults are the workspace's).
  pub fn build_context(&self, options: &ContextRequest) -> Result<crate::context::BuiltContext> {
    let mut packing = crate::context::ContextOptions::from_config(&self.context);
    if let Some(budget) = options.budget {
      packing.budget = budget;
    }
    if let Some(share) = options.session_share {
      packing.session_share = share;
    }
    if let Some(encoding) = options.encoding {
      packing.encoding = encoding;
    }
    if let Some(margin) = options.safety_margin {
      packing.safety_margin = margin;
    }
    let sessions_limit = options.sessions.unwrap_or(self.context.recent_sessions) as usize;
    let learnings_limit = options.learnings.unwrap_or(self.context.active_learnings) as usize;
    let active = self.active_learnings(learnings_limit)?;
    // A memory shown as a learning is not repeated in its session's summary.
    let shown: HashSet<&str> = active.iter().map(|l| l.content.as_str()).collect();
    let sessions: Vec<crate::context::Session> = self
      .recent_sessions(sessions_limit)?
      .into_iter()
      .filter_map(|s| {
        let latest: Vec<&str> = s.latest.iter().map(String::as_str).filter(|c| !shown.contains(c)).collect();
        (!latest.is_empty()).then(|| crate::context::Session {
          timestamp: s.last_active_at.clone(),
          summary: latest.join("\n"),
          importance: None,
        })
      })
      .collect();
    let learnings: Vec<crate::context::Learning> = active
      .into_iter()
      .map(|l| crate::context::Learning {
        trigger: learning_trigger(&l),
        solution: l.content,
        importance: Some(l.importance),
        last_used: Some(l.created_at),
      })
      .collect();
    crate::context::build_context(&sessions, &learnings, &packing)
  }
}

/// What a learning is about, for the `trigger: solution` line: its tags, else its type.
fn learning_trigger(learning: &Learning) -> String {
  if learning.tags.is_empty() {
    learning.memory_type.clone()
  } else {
    learning.tags.join(", ")
  }
}

/// Overrides of the workspace's `context` settings for [`MemoryStore::build_context`].
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
}

impl std::ops::Deref for MemoryStore {
  type Target = MemoryView;
  /// A store reads like a view of its workspace: `recent_sessions`, `active_learnings`,
  /// `build_context` (captures not yet consolidated included).
  fn deref(&self) -> &MemoryView {
    &self.view
  }
}

impl Drop for MemoryStore {
  fn drop(&mut self) {
    let _ = self.close();
  }
}

/// The consolidation itself; one at a time per WAL directory (`memory-consolidate.lock`).
fn consolidate_paths(paths: &Paths, lock_timeout: Duration) -> Result<ConsolidateOutcome> {
  let _lock = lock_exclusive(&paths.wal_dir.join(LOCK_FILE), lock_timeout, "memory consolidation")?;
  // State files are checked before anything is applied: a corrupt one is moved aside and
  // reported, and this run changes nothing else.
  let store = learnings::load(&paths.learnings, true)?;
  let applied = wal::consolidate(&paths.wal_dir, &paths.grimoire, &ConsolidateOptions { prune: true, lock_timeout })?;
  let records = read_records(&paths.memory_dir, true)?;

  let mut outcome = ConsolidateOutcome {
    applied: applied.applied,
    conflicts: applied.conflicts.len(),
    memories: records.len(),
    ..Default::default()
  };
  let generated: Vec<Map<String, Value>> =
    records.iter().filter(|r| r.is_learning()).map(MemoryRecord::learning_entry).collect();
  let existed = store.is_some();
  let mut store = store.unwrap_or_default();
  let before = store.to_bytes();
  outcome.learnings = store.merge(&generated);
  outcome.learnings_total = store.entries().len();
  let after = store.to_bytes();
  if after != before || (!existed && !generated.is_empty()) {
    write_file_atomic(&paths.learnings, &after, None)?;
  }

  let existing = match fs::read(&paths.notes) {
    Ok(bytes) => Some(String::from_utf8(bytes).map_err(|_| LoaError::StateCorrupt {
      path: paths.notes.display().to_string(),
      reason: "not valid UTF-8; left untouched".into(),
    })?),
    Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
    Err(e) => return Err(LoaError::io("read", &paths.notes, e)),
  };
  if let Some(updated) = render_notes(existing.as_deref(), &records) {
    if existing.as_deref() != Some(updated.as_str()) {
      write_file_atomic(&paths.notes, updated.as_bytes(), None)?;
      outcome.notes_updated = true;
    }
  }
  Ok(outcome)
}

fn validate_entry(entry: &Entry) -> Result<()> {
  // Messages name the field, never its value: the value is unredacted.
  if !MEMORY_TYPES.contains(&entry.memory_type.as_str()) {
    return invalid("`type` must be one of 'interaction', 'decision', 'learning', 'error', 'milestone'");
  }
  if entry.content.len() > MAX_CONTENT_BYTES {
    return Err(LoaError::TooLarge {
      what: "memory content".into(),
      size: entry.content.len() as u64,
      limit: MAX_CONTENT_BYTES as u64,
    });
  }
  if let Some(c) = entry.confidence {
    if !(0.0..=1.0).contains(&c) {
      return invalid("`confidence` must be a number between 0 and 1");
    }
  }
  if entry.tags.len() > MAX_TAGS || entry.tags.iter().any(|t| t.is_empty() || t.len() > MAX_TAG_BYTES) {
    return invalid(format!("`tags` must be at most {MAX_TAGS} non-empty strings of at most {MAX_TAG_BYTES} bytes"));
  }
  if entry.agent_id.as_ref().is_some_and(|a| a.len() > MAX_TAG_BYTES) {
    return invalid(format!("`agentId` must be at most {MAX_TAG_BYTES} bytes"));
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
  Ok(())
}

/// Hashes of memories in the grimoire and in every session's WAL (by path: ids are hashes).
fn known_hashes(paths: &Paths) -> Result<HashSet<String>> {
  let mut known = HashSet::new();
  match fs::read_dir(&paths.memory_dir) {
    Ok(entries) => {
      for entry in entries.flatten() {
        if let Some(hash) = entry.file_name().to_str().and_then(is_record_name) {
          known.insert(hash.to_string());
        }
      }
    }
    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
    Err(e) => return Err(LoaError::io("list", &paths.memory_dir, e)),
  }
  for session in list_sessions(&paths.wal_dir)? {
    for record in read_session(&paths.wal_dir, &session)?.records {
      if let Some(hash) = record_hash_of(&record) {
        known.insert(hash.to_string());
      }
    }
  }
  Ok(known)
}

fn record_hash_of(record: &wal::format::Record) -> Option<&str> {
  if record.op != "write" {
    return None;
  }
  record.path.as_deref()?.strip_prefix(MEMORY_DIR)?.strip_prefix('/').and_then(is_record_name)
}

/// Memory records still in the WAL (any session, consolidated or not), read without locking or
/// changing anything; damaged parts of a log are skipped (`loa wal verify` reports them).
fn pending_records(wal_dir: &Path) -> Result<Vec<MemoryRecord>> {
  let mut out = Vec::new();
  for session in list_sessions(wal_dir)? {
    for record in read_session(wal_dir, &session)?.records {
      if let (Some(hash), Some(data)) = (record_hash_of(&record), record.data.as_deref()) {
        if let Ok(parsed) = serde_json::from_slice::<MemoryRecord>(data) {
          if parsed.id == hash {
            out.push(parsed);
          }
        }
      }
    }
  }
  Ok(out)
}

/// Every record file `memory/<id>.json`, sorted by (timestamp, id). A file that does not parse
/// (or whose id is not its name) is corrupt: with `quarantine` it is moved aside and the call
/// fails with `E_STATE_CORRUPT`; without, it is skipped.
fn read_records(memory_dir: &Path, quarantine: bool) -> Result<Vec<MemoryRecord>> {
  let entries = match fs::read_dir(memory_dir) {
    Ok(entries) => entries,
    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
    Err(e) => return Err(LoaError::io("list", memory_dir, e)),
  };
  let mut names: Vec<String> = entries.flatten().filter_map(|e| e.file_name().to_str().map(str::to_string)).collect();
  names.sort();
  let mut records = Vec::new();
  for name in names {
    let Some(hash) = is_record_name(&name) else { continue };
    let path = memory_dir.join(&name);
    let bytes = match fs::read(&path) {
      Ok(b) => b,
      Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
      Err(e) => return Err(LoaError::io("read", &path, e)),
    };
    let parsed = serde_json::from_slice::<MemoryRecord>(&bytes).map_err(|e| e.to_string()).and_then(|r| {
      if r.id == hash {
        Ok(r)
      } else {
        Err("its id is not its file name".into())
      }
    });
    match parsed {
      Ok(record) => records.push(record),
      Err(reason) if quarantine => return Err(learnings::corrupt(&path, reason, true)),
      Err(_) => {}
    }
  }
  records.sort_by(|a, b| a.ts_ms().cmp(&b.ts_ms()).then_with(|| a.id.cmp(&b.id)));
  Ok(records)
}

fn learning_from_json(entry: &Value) -> Option<Learning> {
  let s = |k: &str| entry.get(k).and_then(Value::as_str).map(str::to_string);
  Some(Learning {
    id: s("id")?,
    memory_type: s("type").unwrap_or_else(|| "learning".into()),
    content: s("content").unwrap_or_default(),
    importance: entry.get("importance").and_then(Value::as_f64).unwrap_or(gates::DEFAULT_CONFIDENCE),
    confidence: entry.get("confidence").and_then(Value::as_f64),
    tags: entry
      .get("tags")
      .and_then(Value::as_array)
      .map(|t| t.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
      .unwrap_or_default(),
    session_id: s("sessionId").unwrap_or_default(),
    agent_id: s("agentId"),
    created_at: s("createdAt").unwrap_or_default(),
    status: s("status").unwrap_or_else(|| "active".into()),
  })
}

struct SessionAgg<'a> {
  id: String,
  first: i64,
  last: i64,
  types: BTreeMap<String, u64>,
  /// Newest first.
  records: Vec<&'a MemoryRecord>,
}

impl SessionAgg<'_> {
  fn into_entry(self) -> SessionEntry {
    SessionEntry {
      session_id: self.id,
      started_at: format_ms(self.first),
      last_active_at: format_ms(self.last),
      memories: self.records.len() as u64,
      types: self.types,
      latest: self.records.iter().take(3).map(|r| r.content.clone()).collect(),
      source: "memory".into(),
    }
  }
}

/// Sessions of `records`, newest first (ties by session id).
fn aggregate_sessions(records: &[MemoryRecord]) -> Vec<SessionAgg<'_>> {
  let mut by_id: BTreeMap<&str, SessionAgg> = BTreeMap::new();
  let mut sorted: Vec<&MemoryRecord> = records.iter().collect();
  sorted.sort_by(|a, b| b.ts_ms().cmp(&a.ts_ms()).then_with(|| a.id.cmp(&b.id)));
  for r in sorted {
    let ts = r.ts_ms();
    let agg = by_id.entry(&r.session_id).or_insert_with(|| SessionAgg {
      id: r.session_id.clone(),
      first: ts,
      last: ts,
      types: BTreeMap::new(),
      records: Vec::new(),
    });
    agg.first = agg.first.min(ts);
    agg.last = agg.last.max(ts);
    *agg.types.entry(r.memory_type.clone()).or_default() += 1;
    agg.records.push(r);
  }
  let mut sessions: Vec<SessionAgg> = by_id.into_values().collect();
  sessions.sort_by(|a, b| b.last.cmp(&a.last).then_with(|| a.id.cmp(&b.id)));
  sessions
}

/// The new NOTES.md, or `None` when there is nothing to write and no file yet.
fn render_notes(existing: Option<&str>, records: &[MemoryRecord]) -> Option<String> {
  if records.is_empty() && existing.is_none() {
    return None;
  }
  let sessions = aggregate_sessions(records);
  let mut decisions: Vec<&MemoryRecord> = records.iter().filter(|r| r.memory_type == "decision").collect();
  decisions.sort_by(|a, b| a.ts_ms().cmp(&b.ts_ms()).then_with(|| a.id.cmp(&b.id)));
  let skip = decisions.len().saturating_sub(NOTES_MAX_DECISIONS);
  let decisions = &decisions[skip..];

  let mut text = existing.unwrap_or(notes::TEMPLATE).to_string();
  let has_region = |text: &str, name| notes::region_body(text, name).is_some();
  if !sessions.is_empty() || has_region(&text, notes::SESSIONS) {
    let body: String = sessions
      .iter()
      .take(NOTES_MAX_SESSIONS)
      .map(|s| {
        let latest = s
          .records
          .first()
          .map(|r| format!("{}: {}", r.memory_type, notes::excerpt(&notes::one_line(&r.content), 120)));
        let types = s.types.iter().map(|(t, n)| format!("{t} {n}")).collect::<Vec<_>>().join(", ");
        let line = notes::SessionLine {
          session_id: s.id.clone(),
          started_at: format_ms(s.first),
          last_active_at: format_ms(s.last),
          memories: s.records.len() as u64,
          latest: latest.unwrap_or_default(),
        };
        notes::render_session_line(&line, &types)
      })
      .collect();
    text = notes::set_region(&text, notes::SESSIONS, &|_| body.clone());
  }
  if !decisions.is_empty() || has_region(&text, notes::DECISIONS) {
    let render = |level: usize| {
      decisions
        .iter()
        .map(|d| {
          let first_line = d.content.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
          let confidence = d.confidence.map_or("-".to_string(), |c| c.to_string());
          format!(
            "{} {} - {}\n**Decision**: {}\n**Session**: `{}` · **Confidence**: {} · **Id**: `{}`\n",
            "#".repeat(level),
            d.timestamp,
            notes::excerpt(&notes::one_line(first_line), 60),
            notes::one_line(&d.content),
            d.session_id,
            confidence,
            &d.id[..12]
          )
        })
        .collect::<Vec<_>>()
        .join("\n")
    };
    text = notes::set_region(&text, notes::DECISIONS, &render);
  }
  Some(text)
}

#[cfg(test)]
mod tests;
