//! One session's handle on a workspace's memory: capture (redaction, gates, WAL append) and
//! the calls that read or consolidate through the same workspace.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use crate::error::{LoaError, Result};
use crate::fsutil::StateDir;
use crate::gates::{self, Candidate, GateConfig};
use crate::redact::{redact, RedactOptions};
use crate::search::{Document, SearchIndex};
use crate::timestamp::{format_ms, now_ms, parse_rfc3339_ms};
use crate::wal::reader::{list_sessions, read_session};
use crate::wal::{self, AppendRequest, Wal, WalOptions};

use super::consolidate;
use super::forget;
use super::import::{ImportOptions, ImportReport};
use super::layout::Layout;
use super::markdown::{MarkdownRead, ReadOptions};
use super::seal::SealRequest;
use super::search::{self as msearch, Searcher};
use super::types::{
  record_name_hash, record_path, CaptureFinding, CaptureOptions, CaptureOutcome, CaptureTry, ConsolidateOutcome,
  ContextRequest, Entry, ForgetOptions, ForgetOutcome, ForgetSelector, Learning, MemoryKind, MemoryRecord,
  MemorySearchResults, RedactedEntry, RedactionNote, SearchOptions, SessionEntry, StoreOptions, RECORD_VERSION,
};
use super::view::MemoryView;

/// One session's handle on a workspace's memory. Holds the session's WAL lock until closed.
/// A read-only store ([`MemoryStore::open_read_only`]) holds no session and writes nothing.
pub struct MemoryStore {
  layout: Layout,
  session_id: String,
  gates: GateConfig,
  redaction: RedactOptions,
  max_attempts: u64,
  backoff_base_ms: u64,
  wal: Mutex<Option<Arc<Wal>>>,
  /// Ids of the memories this store captured (the duplicate gate asks the index, and the
  /// record files, for the others): reserved before the append, so two concurrent captures of
  /// the same content cannot both pass.
  reserved: Mutex<HashSet<String>>,
  /// Whether opening reconciled the index with every memory (the sources stamp did not match).
  reconciled_at_open: bool,
  view: MemoryView,
  /// The workspace's search index (shared with every other store of the workspace); `None` in
  /// a read-only store, which searches an index built in memory instead.
  pub(super) index: Option<SearchIndex>,
  /// Opened with [`MemoryStore::open_read_only`]: no session, no index files, writes refused.
  read_only: bool,
  /// Whether a read-only store was closed (a writable one says it with `wal`).
  closed: AtomicBool,
  /// Set when an index update failed after a capture: the next search reconciles first.
  pub(super) index_stale: AtomicBool,
  /// Captures hold it shared; forgetting holds it exclusively while it rewrites this
  /// session's log (see `forget`).
  gate: RwLock<()>,
  wal_options: WalOptions,
  /// Whether recovery left the workspace degraded (captures refused), read cheaply per capture.
  degraded: crate::recovery::DegradedProbe,
}

/// [`MemoryStore::consolidate`] without opening a session: for tools (`loa consolidate`) that
/// capture nothing. `options.session_id` is ignored.
pub fn consolidate_workspace(options: &StoreOptions) -> Result<ConsolidateOutcome> {
  consolidate_workspace_with(options, None)
}

/// [`consolidate_workspace`]; with `seal`, the run ends by signing the grimoire (see
/// [`super::seal`]).
pub fn consolidate_workspace_with(options: &StoreOptions, seal: Option<&SealRequest>) -> Result<ConsolidateOutcome> {
  let layout = Layout::resolve(options)?;
  layout.create()?;
  consolidate::run(&layout, None, None, seal).map(|o| o.outcome)
}

/// Forgets, in the workspace of `options` and without opening a session, the memories that
/// the WAL records `seqs` of `session` wrote, whether those records are still in the log or
/// were consolidated (and pruned) already; like [`MemoryStore::forget`] otherwise (every file,
/// the WAL, the search index, a tombstone and a `memory.forget` audit event). For replication:
/// another machine forgot them, and its log, mirrored here as `session`, holds tombstone
/// records at those seqs now. `options.session_id` is ignored; seqs that wrote no memory are
/// skipped, and nothing to forget changes nothing.
pub fn forget_records(
  options: &StoreOptions,
  session: &str,
  seqs: &HashSet<u64>,
  forget_options: &ForgetOptions,
) -> Result<ForgetOutcome> {
  let layout = Layout::resolve(options)?;
  layout.create()?;
  forget::run_for_records(&layout, session, seqs, forget_options.audit_hmac_key.as_ref())
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
    let opened = layout.create().and_then(|()| {
      let wal_options = WalOptions { session_id: options.session_id.clone(), ..options.wal.clone() };
      let wal = Wal::open(&layout.wal_path(), wal_options.clone())?;
      let (index, reconciled) = msearch::open_index(&layout)?;
      Ok((wal_options, wal, index, reconciled))
    });
    let (wal_options, wal, index, reconciled) = opened.map_err(suggest_read_only)?;
    Ok(MemoryStore {
      session_id: options.session_id,
      gates: options.gates,
      redaction: options.redaction,
      max_attempts: options.retry.max_attempts.max(1),
      backoff_base_ms: options.retry.backoff_base_ms,
      wal: Mutex::new(Some(Arc::new(wal))),
      reserved: Mutex::new(HashSet::new()),
      reconciled_at_open: reconciled,
      view: MemoryView::from_layout(layout.clone(), options.context),
      index: Some(index),
      read_only: false,
      closed: AtomicBool::new(false),
      index_stale: AtomicBool::new(false),
      gate: RwLock::new(()),
      wal_options,
      degraded: Default::default(),
      layout,
    })
  }

  /// Opens the memory of `options.workspace_dir` for reading only, on a disk that may be full
  /// or read-only: no directory or file is created, no session or lock is taken (so it works
  /// beside any open store, and `options.session_id` names nothing), and searches use an index
  /// built in memory from the memories (record files and every session's WAL), never the
  /// index files, which are neither read nor repaired. Every write (capture, consolidate,
  /// forget, import) is `E_READ_ONLY`.
  pub fn open_read_only(options: StoreOptions) -> Result<MemoryStore> {
    let layout = Layout::resolve(&options)?;
    let wal_options = WalOptions { session_id: options.session_id.clone(), ..options.wal.clone() };
    Ok(MemoryStore {
      session_id: options.session_id,
      gates: options.gates,
      redaction: options.redaction,
      max_attempts: 1,
      backoff_base_ms: 0,
      wal: Mutex::new(None),
      reserved: Mutex::new(HashSet::new()),
      reconciled_at_open: false,
      view: MemoryView::from_layout(layout.clone(), options.context),
      index: None,
      read_only: true,
      closed: AtomicBool::new(false),
      index_stale: AtomicBool::new(false),
      gate: RwLock::new(()),
      wal_options,
      degraded: Default::default(),
      layout,
    })
  }

  /// Whether this store was opened with [`open_read_only`](Self::open_read_only).
  pub fn is_read_only(&self) -> bool {
    self.read_only
  }

  /// `E_READ_ONLY` for a read-only store: checked before a write touches anything.
  fn writable(&self, what: &str) -> Result<()> {
    if self.read_only {
      return Err(LoaError::ReadOnly(format!("{what} needs a store opened without `readOnly`")));
    }
    Ok(())
  }

  pub fn session_id(&self) -> &str {
    &self.session_id
  }

  /// The id a capture of `content` gets in this store (the hash of its text as this store
  /// redacts it), whether or not it is stored: what a copy of the memory made elsewhere (a
  /// bead's decision) records, so that forgetting the memory finds the copy.
  pub fn memory_id_of(&self, content: &str) -> String {
    gates::content_hash(&redact(content, &self.redaction).text)
  }

  /// The read side of this store's workspace.
  pub fn view(&self) -> &MemoryView {
    &self.view
  }

  pub fn is_closed(&self) -> bool {
    if self.read_only {
      return self.closed.load(Ordering::SeqCst);
    }
    self.wal.lock().unwrap_or_else(|p| p.into_inner()).is_none()
  }

  /// Makes queued records durable and releases the session lock. Idempotent. Before that, the
  /// records of expired memories another process's consolidation could not remove from this
  /// session's log (it held the lock) are removed, when no consolidation runs at that moment
  /// (see `pending`).
  pub fn close(&self) -> Result<()> {
    if self.read_only {
      self.closed.store(true, Ordering::SeqCst);
      return Ok(());
    }
    // Never waits: with a capture or consolidation of this store running, it is left to the
    // next consolidation.
    if let (false, Ok(_gate)) = (self.is_closed(), self.gate.try_write()) {
      super::pending::complete_own_at_close(&self.layout, forget::Own { wal: &self.wal, options: &self.wal_options });
    }
    let wal = self.wal.lock().unwrap_or_else(|p| p.into_inner()).take();
    match wal {
      Some(wal) => {
        wal.close()?;
        self.stamp_own_session(&wal);
        Ok(())
      }
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

  /// Redacts, gates and durably appends one memory. Not accepted (gates) and blocked
  /// (redaction policy) are answers, not errors; errors are bad arguments, a closed store,
  /// `E_DEGRADED` while recovery's state says degraded (see
  /// [`crate::recovery::DegradedProbe`]) and the disk refusing (after
  /// `memory.retry.maxAttempts` tries for `E_IO`).
  ///
  /// Between tries it sleeps the calling thread (see [`try_capture`](Self::try_capture) for a
  /// caller that must not block, such as a thread pool).
  pub fn capture(&self, entry: Entry) -> Result<CaptureOutcome> {
    self.capture_with(entry, &CaptureOptions::default())
  }

  /// [`capture`](Self::capture) with an expiry: once past it, the memory is no longer
  /// returned by searches or contexts, and the next consolidation forgets it as
  /// [`forget`](Self::forget) does.
  pub fn capture_with(&self, entry: Entry, options: &CaptureOptions) -> Result<CaptureOutcome> {
    let mut attempt = 1;
    loop {
      match self.try_capture(&entry, options, attempt)? {
        CaptureTry::Done(outcome) => return Ok(outcome),
        CaptureTry::RetryAfter(delay) => std::thread::sleep(delay),
      }
      attempt += 1;
    }
  }

  /// Try number `attempt` (from 1) of [`capture_with`](Self::capture_with), without waiting:
  /// when the disk refused (`E_IO`) and `memory.retry.maxAttempts` allows another try, the
  /// answer is how long to wait before it, and the caller waits however suits it (the Node
  /// binding with a timer on the event loop, so no thread-pool thread sleeps). Each try is a
  /// whole capture (redaction, gates, append): nothing of a failed one was stored.
  pub fn try_capture(&self, entry: &Entry, options: &CaptureOptions, attempt: u64) -> Result<CaptureTry> {
    match self.capture_once(entry, options) {
      Ok(outcome) => Ok(CaptureTry::Done(outcome)),
      Err(e) => match self.retry_delay(attempt, &e) {
        Some(delay) => Ok(CaptureTry::RetryAfter(delay)),
        None => Err(e),
      },
    }
  }

  /// The retry policy: after failed try number `attempt`, how long to wait before the next, or
  /// `None` when `error` is final (not `E_IO`, or no tries left). Exponential backoff:
  /// `backoffBaseMs * 2^attempt`.
  fn retry_delay(&self, attempt: u64, error: &LoaError) -> Option<Duration> {
    if error.code() != "E_IO" || attempt >= self.max_attempts {
      return None;
    }
    Some(Duration::from_millis(self.backoff_base_ms.saturating_mul(1 << attempt.min(20))))
  }

  /// One try of [`capture_with`](Self::capture_with), failing fast when the disk refuses: for
  /// callers that run on a shared thread pool and let their own caller try again (import,
  /// dead-letter replay, decisions of a synthesis checkpoint).
  pub fn capture_once(&self, entry: &Entry, options: &CaptureOptions) -> Result<CaptureOutcome> {
    entry.validate()?;
    let timestamp_ms = entry.timestamp.as_deref().map(|t| parse_rfc3339_ms(t, "timestamp")).transpose()?;
    let explicit_expiry = options.expires_at.as_deref().map(|t| parse_rfc3339_ms(t, "expiresAt")).transpose()?;
    if options.ttl_ms == Some(0) {
      return crate::error::invalid("`ttlMs` must be positive");
    }
    self.writable("capture")?;
    let _gate = self.gate.read().unwrap_or_else(|p| p.into_inner());
    let wal = self.wal()?;
    // Degraded mode (recovery could not verify the grimoire): nothing is written, not even the
    // audit record of a blocked capture.
    if self.degraded.is_degraded(&self.layout.root()?, &self.layout.recovery_state)? {
      return Err(crate::recovery::degraded_error());
    }

    let RedactedEntry { content, tags, metadata, findings, blocked } = entry.redacted(&self.redaction);
    // An identifier, checked by `validate`, never content: redacting it would pool every
    // e-mail-like id under one placeholder owner.
    let agent_id = entry.agent_id.clone();
    let findings: Vec<CaptureFinding> = findings
      .into_iter()
      .map(|f| CaptureFinding {
        field: f.field,
        kind: f.finding.kind,
        start: f.finding.start,
        end: f.finding.end,
        method: f.finding.method,
        fingerprint: f.finding.fingerprint,
      })
      .collect();
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
      wal.append(AppendRequest { op: "audit".into(), path: None, meta: Some(meta.to_string()), data: None })?;
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
      let mut reserved = self.reserved.lock().unwrap_or_else(|p| p.into_inner());
      let evaluation = gates::evaluate(&candidate, &self.gates, &|h| reserved.contains(h) || self.is_stored(h), now);
      if evaluation.pass {
        // Reserved under the lock, so two concurrent captures of the same content cannot both pass.
        reserved.insert(id.clone());
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
    let at = timestamp_ms.unwrap_or(now);
    let ttl_expiry = options.ttl_ms.map(|ttl| at.saturating_add(i64::try_from(ttl).unwrap_or(i64::MAX)));
    let expires = match (explicit_expiry, ttl_expiry) {
      (Some(a), Some(b)) => Some(a.min(b)),
      (a, b) => a.or(b),
    };
    let record = MemoryRecord {
      version: RECORD_VERSION,
      id: id.clone(),
      kind: entry.kind,
      content,
      session_id: self.session_id.clone(),
      agent_id,
      timestamp: format_ms(at),
      confidence: entry.confidence,
      score: evaluation.score,
      tags: evaluation.tags.clone(),
      metadata,
      redactions: notes,
      expires_at: expires.map(format_ms),
    };
    let data = record.file_bytes()?;
    let request = AppendRequest {
      op: "write".into(),
      path: Some(record_path(&id)),
      meta: Some(serde_json::json!({ "memory": entry.kind }).to_string()),
      data: Some(data),
    };
    match wal.append(request) {
      Ok(seq) => {
        // The memory is durable; the index is derived from it. A failed index update is
        // repaired before the next search, never a failed capture.
        if self.index.as_ref().is_some_and(|index| index.add(&Document::from_record(&record)).is_err()) {
          self.index_stale.store(true, Ordering::SeqCst);
        }
        Ok(CaptureOutcome {
          accepted: true,
          id: Some(id),
          seq: Some(seq),
          gates: evaluation.gates,
          findings,
          blocked: false,
          score: evaluation.score,
          tags: evaluation.tags,
        })
      }
      Err(e) => {
        self.reserved.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        Err(e)
      }
    }
  }

  /// Applies the WAL of every session into the grimoire and updates learnings.json and
  /// NOTES.md, then forgets the memories whose `expiresAt` has passed. See
  /// [`super::consolidate`].
  pub fn consolidate(&self) -> Result<ConsolidateOutcome> {
    self.consolidate_with(None)
  }

  /// [`consolidate`](Self::consolidate); with `seal`, the run ends by signing the grimoire
  /// (see [`super::seal`]).
  pub fn consolidate_with(&self, seal: Option<&SealRequest>) -> Result<ConsolidateOutcome> {
    self.writable("consolidate")?;
    let _gate = self.gate.write().unwrap_or_else(|p| p.into_inner());
    let own = forget::Own { wal: &self.wal, options: &self.wal_options };
    let before = super::sources::memory_dir(&self.layout)?;
    let outcome = consolidate::run(&self.layout, Some(own), self.index.as_ref(), seal)?;
    if let Some(index) = &self.index {
      // The run changed the memory directory, and knows how: the next open need not list it.
      let _ = super::sources::stamp_memory_dir(&self.layout, index, before);
      // Folded here, half-way to the bound, rather than by the capture that would cross it
      // (a fold rewrites the whole base). The index is derived: a failure is left to the next.
      if index.compaction_due().unwrap_or(false) {
        let _ = index.compact();
      }
    }
    self.after_forget(&outcome.forgotten);
    Ok(outcome.outcome)
  }

  /// Forgets memories: by id, or those a search finds (with `confirm`; without it nothing is
  /// changed and the memories that would be forgotten are returned). Removes them from the WAL
  /// itself (this session's log and every other session's that holds them; a session another
  /// process has open fails the call with `E_WAL_LOCKED` before anything is changed), from
  /// every derived file and from the search index, records a tombstone whose id is keyed (no
  /// content) and appends a `memory.forget` event to the audit log. See `docs/search.md` for
  /// what it guarantees and what it cannot reach.
  pub fn forget(&self, selector: &ForgetSelector, options: &ForgetOptions) -> Result<ForgetOutcome> {
    let (ids, matched) = match selector {
      ForgetSelector::Id(id) => (vec![id.clone()], Vec::new()),
      ForgetSelector::Query { query, options: search, confirm } => {
        let hits = self.search(query, search)?.hits;
        if !confirm {
          return Ok(ForgetOutcome { applied: false, matched: hits, ..Default::default() });
        }
        (hits.iter().map(|h| h.id.clone()).collect(), hits)
      }
    };
    self.writable("forget")?;
    let _gate = self.gate.write().unwrap_or_else(|p| p.into_inner());
    let own = forget::Own { wal: &self.wal, options: &self.wal_options };
    let known = known_hashes(&self.layout)?;
    let ids: Vec<String> = ids.into_iter().filter(|id| known.contains(id)).collect();
    let mut outcome = forget::run(
      &self.layout,
      Some(own),
      self.index.as_ref(),
      &ids,
      forget::Reason::Forget,
      options.audit_hmac_key.as_ref(),
      options.seal.as_ref(),
    )?;
    self.after_forget(&ids);
    outcome.matched = matched;
    Ok(outcome)
  }

  /// Imports the Markdown memory of `dir` (`MEMORY.md` and `memory/*.md`) as memories,
  /// redacted and gated like every capture, idempotently (see [`super::import`]). Memories
  /// that were forgotten are not imported again.
  pub fn import_markdown(&self, dir: &std::path::Path, options: &ImportOptions) -> Result<ImportReport> {
    if !(options.confidence.is_finite() && (0.0..=1.0).contains(&options.confidence)) {
      return crate::error::invalid("`confidence` must be a number between 0 and 1");
    }
    if let Some(agent) = &options.agent_id {
      super::types::check_agent_id(agent)?;
    }
    self.writable("import")?;
    let mut report = ImportReport::default();
    let sources = super::import::sources(dir, &mut report)?;
    if !sources.is_empty() {
      // Remembered, so that forgetting one of these memories reaches its block in the file.
      let wal_dir =
        self.layout.dir(&self.layout.wal, true)?.ok_or_else(|| LoaError::Internal("WAL dir vanished".into()))?;
      let _lock = crate::lock::lock_in(
        &wal_dir,
        super::consolidate::LOCK_FILE,
        self.layout.lock_timeout,
        "memory consolidation",
      )?;
      super::import::register(&self.layout.workspace, &wal_dir, dir)?;
    }
    let grimoire =
      self.layout.dir(&self.layout.grimoire, true)?.ok_or_else(|| LoaError::Internal("grimoire vanished".into()))?;
    let tombstones = super::tombstone::all(&grimoire)?;
    let key = if tombstones.is_empty() { None } else { super::tombstone::key(&self.layout, false)? };
    for source in sources {
      for block in super::import::blocks(&source.text) {
        report.blocks += 1;
        if let Some(key) = &key {
          let id = gates::content_hash(&redact(&block, &self.redaction).text);
          if tombstones.contains(&super::tombstone::tombstone_id(key, &id)) {
            report.forgotten += 1;
            continue;
          }
        }
        let kind = if source.learning { MemoryKind::Learning } else { MemoryKind::Interaction };
        let entry = Entry {
          confidence: Some(options.confidence),
          agent_id: options.agent_id.clone(),
          timestamp: source.date.clone(),
          metadata: Some(serde_json::json!({ "importedFrom": source.name })),
          ..Entry::new(kind, block)
        };
        let outcome = self.capture_once(&entry, &CaptureOptions::default())?;
        if outcome.accepted {
          report.imported += 1;
        } else if outcome.blocked {
          report.blocked += 1;
        } else if outcome.gates.iter().any(|g| g.name == crate::gates::Gate::Duplicate && !g.pass) {
          report.duplicates += 1;
        } else {
          report.rejected += 1;
        }
      }
    }
    Ok(report)
  }

  fn after_forget(&self, ids: &[String]) {
    let mut reserved = self.reserved.lock().unwrap_or_else(|p| p.into_inner());
    for id in ids {
      reserved.remove(id);
    }
  }

  /// The duplicate gate's question for content hash `id`: is a memory with this id stored? The
  /// index holds every memory that has not expired (kept in step at open, by every capture and
  /// forget, in every process), and an expired one not yet forgotten still has its record file.
  /// When the index cannot answer (damaged, the disk refusing), every memory is listed.
  fn is_stored(&self, id: &str) -> bool {
    #[cfg(test)]
    if RACING.with(|r| r.get()) {
      return false;
    }
    if let Some(index) = &self.index {
      match index.contains(id) {
        Ok(true) => return true,
        Ok(false) => {}
        Err(_) => return known_hashes(&self.layout).is_ok_and(|known| known.contains(id)),
      }
    }
    let name = format!("{id}.json");
    if record_name_hash(&name).is_none() {
      return false;
    }
    matches!(self.layout.memory_dir().and_then(|dir| dir.map(|d| d.kind_of(&name)).transpose()), Ok(Some(Some(_))))
  }

  /// Whether opening this store reconciled its index with every memory (listing the memory
  /// directory and reading every session's log), because the sources stamp beside the index
  /// did not match what is on disk; `false` when the stamp matched (or for a read-only store).
  pub fn reconciled_at_open(&self) -> bool {
    self.reconciled_at_open
  }

  /// At close: this session's log ends where the WAL says, and every capture of this store
  /// reached the index; recorded in the sources stamp so that the next open need not read it.
  fn stamp_own_session(&self, wal: &Wal) {
    let Some(index) = &self.index else { return };
    if self.index_stale.load(Ordering::SeqCst) {
      return;
    }
    let (segment, end) = wal.position();
    let Some(name) = segment.file_name().and_then(|n| n.to_str()) else { return };
    if let Ok(Some(stamp)) = super::sources::own_session(&self.layout, &self.session_id, name, end) {
      let _ = super::sources::stamp_session(index, &self.session_id, stamp);
    }
  }

  /// See [`MemoryView::recent_sessions`] (captures not yet consolidated included).
  pub fn recent_sessions(&self, limit: usize) -> Result<Vec<SessionEntry>> {
    self.view.recent_sessions(limit)
  }

  /// See [`MemoryView::active_learnings`].
  pub fn active_learnings(&self, limit: usize) -> Result<Vec<Learning>> {
    self.view.active_learnings(limit)
  }

  /// See [`MemoryView::build_context`]; with a query, searched through this store's index.
  pub fn build_context(&self, options: &ContextRequest) -> Result<crate::context::BuiltContext> {
    self.build_context_explained(options).map(|(built, _)| built)
  }

  /// [`build_context`](Self::build_context), with what each of its items stands for.
  pub fn build_context_explained(
    &self,
    options: &ContextRequest,
  ) -> Result<(crate::context::BuiltContext, super::view::ContextSources)> {
    match &options.query {
      Some(query) => self.view.query_context(&self.searcher()?, query, options),
      None => self.view.build_context_explained(options),
    }
  }

  /// See [`super::inventory`].
  pub fn inventory(&self, options: &super::inventory::InventoryOptions) -> Result<super::inventory::Inventory> {
    self.view.inventory(options)
  }

  /// The memories that best answer `query`, best first, each with why it came back (see
  /// [`crate::search::rank`]). A query is literal words (no operators); an empty one is
  /// `E_INVALID_ARGUMENT`, one over 32 KiB `E_TOO_LARGE`; a query of only stop words or
  /// punctuation finds nothing. Memories past their `expiresAt` are never returned. With
  /// `agent_id`, only memories that agent may see are searched and counted.
  pub fn search(&self, query: &str, options: &SearchOptions) -> Result<MemorySearchResults> {
    msearch::search(&self.layout, &self.searcher()?, query, options)
  }

  /// The memory `id`, if it exists, is not expired, and (with `agent_id`) is visible to that
  /// agent.
  pub fn get(&self, id: &str, agent_id: Option<&str>) -> Result<Option<MemoryRecord>> {
    self.view.get(id, agent_id)
  }

  /// See [`MemoryView::read_markdown`].
  pub fn read_markdown(&self, path: &str, options: &ReadOptions) -> Result<Option<MarkdownRead>> {
    self.view.read_markdown(path, options)
  }

  /// What a search reads: the index files, repaired first when an update of them failed
  /// earlier; or an index built in memory from the memories when the store is read-only or the
  /// disk refuses that repair (a full or read-only disk: a failed repair write is not a failed
  /// search, and the repair is tried again at the next one).
  fn searcher(&self) -> Result<Searcher<'_>> {
    let Some(index) = &self.index else { return Searcher::for_view(&self.layout) };
    match self.fresh_index(index) {
      Ok(()) => Ok(Searcher::Disk(index)),
      Err(e) if e.code() == "E_IO" => Searcher::for_view(&self.layout),
      Err(e) => Err(e),
    }
  }

  /// Repairs the index first when an update of it failed earlier.
  fn fresh_index(&self, index: &SearchIndex) -> Result<()> {
    if self.index_stale.swap(false, Ordering::SeqCst) {
      let known = known_hashes(&self.layout)?;
      if let Err(e) = msearch::reconcile(&self.layout, index, &known) {
        self.index_stale.store(true, Ordering::SeqCst);
        return Err(e);
      }
    }
    Ok(())
  }
}

impl Drop for MemoryStore {
  fn drop(&mut self) {
    let _ = self.close();
  }
}

#[cfg(test)]
thread_local! {
  static RACING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with this thread's captures gated as if no other store had stored anything yet: as
/// when two processes capture the same content at the same moment (neither gate sees the
/// other's memory), which leaves the same memory in two sessions' logs.
#[cfg(test)]
pub(super) fn racing<R>(f: impl FnOnce() -> R) -> R {
  RACING.with(|r| r.set(true));
  let out = f();
  RACING.with(|r| r.set(false));
  out
}

/// An `EROFS` on opening a writable store says how to read the memories anyway.
fn suggest_read_only(e: LoaError) -> LoaError {
  let erofs = e.os_error_name() == Some("EROFS");
  match e {
    LoaError::Io { context, source } if erofs => LoaError::Io {
      context: format!(
        "{context} (the filesystem is read-only: open the store with `readOnly: true` to read its memories)"
      ),
      source,
    },
    e => e,
  }
}

/// Hashes of memories in the grimoire and in every session's WAL (by name: ids are hashes).
pub(super) fn known_hashes(layout: &Layout) -> Result<HashSet<String>> {
  let mut known = HashSet::new();
  if let Some(dir) = layout.memory_dir()? {
    known.extend(record_hashes(&dir)?);
  }
  let wal_dir = layout.wal_path();
  for session in list_sessions(&wal_dir)? {
    for record in read_session(&wal_dir, &session)?.records {
      // A write the consolidation would apply names its memory's record file, so a record
      // naming a file already listed adds nothing: it is not parsed and hashed again (most of
      // what the WAL retains was consolidated; hashing it again was most of an open).
      let listed = record
        .path
        .as_deref()
        .and_then(|p| p.strip_prefix(super::types::MEMORY_DIR)?.strip_prefix('/'))
        .and_then(record_name_hash)
        .is_some_and(|id| known.contains(id));
      if listed {
        continue;
      }
      if let Some(hash) = super::admit::memory_id_of(&record) {
        known.insert(hash);
      }
    }
  }
  Ok(known)
}

fn record_hashes(dir: &StateDir) -> Result<Vec<String>> {
  Ok(dir.entries()?.iter().filter_map(|e| e.name_str().and_then(record_name_hash)).map(str::to_string).collect())
}
