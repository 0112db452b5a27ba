//! One session's handle on a workspace's memory: capture (redaction, gates, WAL append) and
//! the calls that read or consolidate through the same workspace.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::{LoaError, Result};
use crate::fsutil::StateDir;
use crate::gates::{self, Candidate, GateConfig};
use crate::redact::{redact, RedactOptions};
use crate::timestamp::{format_ms, now_ms, parse_rfc3339_ms};
use crate::wal::reader::{list_sessions, read_session};
use crate::wal::{self, AppendRequest, Wal, WalOptions};

use super::consolidate;
use super::layout::Layout;
use super::types::{
  record_name_hash, record_path, CaptureFinding, CaptureOutcome, ConsolidateOutcome, ContextRequest, Entry, Learning,
  MemoryRecord, RedactionNote, SessionEntry, StoreOptions,
};
use super::view::{record_hash_of, MemoryView};

/// One session's handle on a workspace's memory. Holds the session's WAL lock until closed.
pub struct MemoryStore {
  layout: Layout,
  session_id: String,
  gates: GateConfig,
  redaction: RedactOptions,
  max_attempts: u64,
  backoff_base_ms: u64,
  wal: Mutex<Option<Arc<Wal>>>,
  /// Content hashes of every stored or captured memory (the duplicate gate's set).
  known: Mutex<HashSet<String>>,
  view: MemoryView,
}

/// [`MemoryStore::consolidate`] without opening a session: for tools (`loa consolidate`) that
/// capture nothing. `options.session_id` is ignored.
pub fn consolidate_workspace(options: &StoreOptions) -> Result<ConsolidateOutcome> {
  let layout = Layout::resolve(options)?;
  layout.create()?;
  consolidate::run(&layout)
}

impl MemoryStore {
  /// Opens the memory of `options.workspace_dir` for one session: creates the grimoire and WAL
  /// directories (never through a symlink: a symlinked directory on the way is
  /// `E_PATH_OUTSIDE_ROOT` before anything is created), takes the session's WAL lock (waiting up to the lock timeout) and collects the hashes of stored memories for the
  /// duplicate gate.
  pub fn open(options: StoreOptions) -> Result<MemoryStore> {
    wal::reader::validate_session_id(&options.session_id)?;
    let layout = Layout::resolve(&options)?;
    options.gates.validate()?;
    layout.create()?;
    let wal_options = WalOptions { session_id: options.session_id.clone(), ..options.wal.clone() };
    let wal = Wal::open(&layout.wal_path(), wal_options)?;
    let known = known_hashes(&layout)?;
    Ok(MemoryStore {
      session_id: options.session_id,
      gates: options.gates,
      redaction: options.redaction,
      max_attempts: options.retry.max_attempts.max(1),
      backoff_base_ms: options.retry.backoff_base_ms,
      wal: Mutex::new(Some(Arc::new(wal))),
      known: Mutex::new(known),
      view: MemoryView::from_layout(layout.clone(), options.context),
      layout,
    })
  }

  pub fn session_id(&self) -> &str {
    &self.session_id
  }

  /// The read side of this store's workspace.
  pub fn view(&self) -> &MemoryView {
    &self.view
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
    entry.validate()?;
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
      let meta = serde_json::json!({ "event": "memory_blocked", "type": entry.kind, "findings": notes });
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
      memory_type: Some(entry.kind.as_str().to_string()),
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
      kind: entry.kind,
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
      meta: Some(serde_json::json!({ "memory": entry.kind }).to_string()),
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
  /// NOTES.md. See [`super::consolidate`].
  pub fn consolidate(&self) -> Result<ConsolidateOutcome> {
    consolidate::run(&self.layout)
  }

  /// See [`MemoryView::recent_sessions`] (captures not yet consolidated included).
  pub fn recent_sessions(&self, limit: usize) -> Result<Vec<SessionEntry>> {
    self.view.recent_sessions(limit)
  }

  /// See [`MemoryView::active_learnings`].
  pub fn active_learnings(&self, limit: usize) -> Result<Vec<Learning>> {
    self.view.active_learnings(limit)
  }

  /// See [`MemoryView::build_context`].
  pub fn build_context(&self, options: &ContextRequest) -> Result<crate::context::BuiltContext> {
    self.view.build_context(options)
  }
}

impl Drop for MemoryStore {
  fn drop(&mut self) {
    let _ = self.close();
  }
}

/// Hashes of memories in the grimoire and in every session's WAL (by name: ids are hashes).
fn known_hashes(layout: &Layout) -> Result<HashSet<String>> {
  let mut known = HashSet::new();
  if let Some(dir) = layout.memory_dir()? {
    known.extend(record_hashes(&dir)?);
  }
  let wal_dir = layout.wal_path();
  for session in list_sessions(&wal_dir)? {
    for record in read_session(&wal_dir, &session)?.records {
      if let Some(hash) = record_hash_of(&record) {
        known.insert(hash.to_string());
      }
    }
  }
  Ok(known)
}

fn record_hashes(dir: &StateDir) -> Result<Vec<String>> {
  Ok(dir.entries()?.iter().filter_map(|e| e.name_str().and_then(record_name_hash)).map(str::to_string).collect())
}
