//! Consolidation: the WAL of every session applied into the grimoire (memory records only,
//! each written from its content, see [`super::admit`]), then the two derived
//! files (learnings.json, then NOTES.md) brought up to date, then memories past their
//! `expiresAt` forgotten. One run at a time per WAL directory (`memory-consolidate.lock`,
//! `flock`ed).
//!
//! **Incremental.** A run's cost grows with the records that arrived since the last run, not
//! with every memory ever kept: the WAL consolidation reports the paths it applied, and only
//! those memory records are read. What NOTES.md and expiry need of all the others is kept in
//! `memory-summary.json` in the grimoire (see [`Summary`]): per session its first and last
//! time, count, kinds and newest memory; the 50 newest decisions; the memories that expire.
//! NOTES.md is rendered from it, reading only the records it shows (at most 60). The summary is
//! derived state: when it is missing, damaged, of another version, or does not reflect the
//! previous run (its WAL watermarks are not those the WAL consolidation started from: a run
//! was cut short between the two), or when a run overwrote or deleted a memory, it is rebuilt
//! from every record (and the run reports `rebuilt`). learnings.json is merged with the new
//! learnings only, and rebuilt from every record when it is missing.
//!
//! **Versions.** `memory-summary.json` carries `"version": 1`; a summary of any other version
//! (or none) is rebuilt, never read.
//!
//! Under that lock, and before anything is applied: temp files that a writer killed in the
//! middle of an atomic write left behind are removed (only those of processes that no longer
//! exist, see [`StateDir::clean_stale_temps`]), the memory record directory is checked to be a
//! real directory inside the workspace, and learnings.json is read and checked, so a state file
//! that cannot be used stops the run before it changes anything.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{LoaError, Result};
use crate::fsutil::{OpenMode, StateDir, StateFile};
use crate::lock::lock_file;
use crate::search::SearchIndex;
use crate::timestamp::{format_ms, now_ms};
use crate::wal::{self, ConsolidateOptions};

use super::forget::{self, Own, Reason};
use super::layout::Layout;
use super::learnings;
use super::notes;
use super::seal::SealRequest;
use super::types::{
  record_name_hash, ConsolidateOutcome, MemoryKind, MemoryRecord, RefusedRecord, MAX_NOTES_BYTES, MAX_RECORD_BYTES,
  MEMORY_DIR, NOTES_MAX_DECISIONS, NOTES_MAX_SESSIONS,
};
use super::view::{aggregate_sessions, read_records};

/// The summary of every consolidated memory, in the grimoire.
pub const SUMMARY_FILE: &str = "memory-summary.json";
/// Version of `memory-summary.json` written and read.
pub const SUMMARY_VERSION: u32 = 2;
/// How many of a session's newest memories the summary names (what a session's line in a
/// context shows).
pub const RECENT_PER_SESSION: usize = 3;
const MAX_SUMMARY_BYTES: u64 = 256 * 1024 * 1024;

/// What NOTES.md and expiry need of every consolidated memory (see the module docs). Ids are
/// memory ids; `(ms, id)` pairs order by time, then id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
  pub version: u32,
  /// The WAL consolidation watermarks (highest seq applied per session) this summary reflects.
  pub watermarks: BTreeMap<String, u64>,
  pub memories: u64,
  /// Memories that belong in learnings.json.
  #[serde(default)]
  pub learnings: u64,
  pub sessions: BTreeMap<String, SessionSummary>,
  /// The newest [`NOTES_MAX_DECISIONS`] decisions, oldest first.
  pub decisions: Vec<(i64, String)>,
  /// Every memory with an expiry: (expiry ms, id).
  pub expiring: Vec<(i64, String)>,
  /// The memory directory's modification time (ns) when the run that wrote this summary ended:
  /// when it differs, something wrote there since (a run cut short may have left temp files),
  /// and the next run looks for stale temp files in it. Listing it every run would cost a
  /// read of every name in it.
  #[serde(default)]
  pub memory_dir_mtime_ns: Option<i128>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
  pub first: i64,
  pub last: i64,
  pub count: u64,
  pub kinds: BTreeMap<MemoryKind, u64>,
  /// The newest memory (ties: the smallest id).
  pub latest: (i64, String),
  /// The [`RECENT_PER_SESSION`] newest memories, newest first (ties: the smallest id first).
  #[serde(default)]
  pub recent: Vec<(i64, String)>,
}

impl Summary {
  pub(super) fn add(&mut self, r: &MemoryRecord) {
    let ts = r.ts_ms();
    self.memories += 1;
    self.learnings += u64::from(r.is_learning());
    let s = self.sessions.entry(r.session_id.clone()).or_insert_with(|| SessionSummary {
      first: ts,
      last: ts,
      latest: (ts, r.id.clone()),
      ..Default::default()
    });
    s.first = s.first.min(ts);
    s.last = s.last.max(ts);
    s.count += 1;
    *s.kinds.entry(r.kind).or_default() += 1;
    if ts > s.latest.0 || (ts == s.latest.0 && r.id < s.latest.1) {
      s.latest = (ts, r.id.clone());
    }
    let at = s.recent.partition_point(|(t, id)| *t > ts || (*t == ts && *id < r.id));
    if at < RECENT_PER_SESSION {
      s.recent.insert(at, (ts, r.id.clone()));
      s.recent.truncate(RECENT_PER_SESSION);
    }
    if r.kind == MemoryKind::Decision {
      let key = (ts, r.id.clone());
      let at = self.decisions.partition_point(|d| *d < key);
      self.decisions.insert(at, key);
      let skip = self.decisions.len().saturating_sub(NOTES_MAX_DECISIONS);
      self.decisions.drain(..skip);
    }
    if let Some(at) = r.expires_ms() {
      self.expiring.push((at, r.id.clone()));
    }
  }

  fn of(records: &[MemoryRecord]) -> Summary {
    let mut s = Summary { version: SUMMARY_VERSION, ..Default::default() };
    for r in records {
      s.add(r);
    }
    s
  }
}

pub(super) fn load_summary(grimoire: &StateDir) -> Option<Summary> {
  let bytes = grimoire.read(SUMMARY_FILE, MAX_SUMMARY_BYTES).ok()??;
  serde_json::from_slice::<Summary>(&bytes).ok().filter(|s| s.version == SUMMARY_VERSION)
}

fn write_summary(grimoire: &StateDir, summary: &Summary) -> Result<()> {
  let mut bytes = serde_json::to_vec(summary).map_err(|e| LoaError::Internal(e.to_string()))?;
  bytes.push(b'\n');
  grimoire.write_atomic(SUMMARY_FILE, &bytes, None)
}

/// One record file by id (`None` when missing or unreadable).
pub(super) fn read_one(dir: &StateDir, id: &str) -> Option<MemoryRecord> {
  let name = format!("{id}.json");
  record_name_hash(&name)?;
  let bytes = dir.read(&name, MAX_RECORD_BYTES).ok()??;
  serde_json::from_slice::<MemoryRecord>(&bytes).ok().filter(|r| r.id == id)
}

/// What [`run`] did, with the memories it forgot (expired).
pub(crate) struct RunOutcome {
  pub outcome: ConsolidateOutcome,
  pub forgotten: Vec<String>,
}

/// The consolidation lock in the WAL directory; the ledger takes it too for its NOTES.md edits.
pub(crate) const LOCK_FILE: &str = "memory-consolidate.lock";

/// Takes the consolidation lock of the WAL directory `wal`: the lock file is opened without
/// following a symlink, so it can never create or lock a file elsewhere.
fn lock(wal: &StateDir, layout: &Layout) -> Result<StateFile> {
  let file = wal.open_file(LOCK_FILE, OpenMode::CREATE)?;
  lock_file(file.file(), layout.lock_timeout, "memory consolidation")?;
  Ok(file)
}

/// Runs one consolidation (see the module docs). `own`: the calling store's session (its log
/// is suspended if an expired memory must be forgotten from it); `index`: its open index;
/// `seal`: sign the grimoire at the end, still under the lock (see [`super::seal`]).
pub(crate) fn run(
  layout: &Layout,
  own: Option<Own>,
  index: Option<&SearchIndex>,
  seal: Option<&SealRequest>,
) -> Result<RunOutcome> {
  let root = layout.root()?;
  let dir = |relative, create| -> Result<StateDir> {
    layout.dir_in(&root, relative, create)?.ok_or_else(|| LoaError::Internal("directory vanished".into()))
  };
  let wal_dir = dir(&layout.wal, true)?;
  let _lock = lock(&wal_dir, layout)?;
  if let Some(request) = seal {
    super::seal::preflight(layout, request)?;
  }
  let grimoire = dir(&layout.grimoire, true)?;
  let notes_dir = dir(&layout.notes.dir, true)?;
  let learnings_dir = dir(&layout.learnings.dir, true)?;
  let memory_dir = grimoire.subdir(MEMORY_DIR)?;
  let loaded_summary = load_summary(&grimoire);
  // The memory directory holds a file per memory: it is listed for stale temp files only when
  // something other than a completed run changed it (see `Summary::memory_dir_mtime_ns`).
  let memory_mtime = memory_dir.as_ref().map(dir_mtime_ns).transpose()?;
  let clean_memory = loaded_summary.as_ref().is_none_or(|s| s.memory_dir_mtime_ns != memory_mtime);
  let memory_dir_to_clean = memory_dir.as_ref().filter(|_| clean_memory);
  for d in [Some(&grimoire), Some(&notes_dir), Some(&learnings_dir), memory_dir_to_clean].into_iter().flatten() {
    d.clean_stale_temps()?;
  }
  // State files are checked before anything is applied: a corrupt one is moved aside and
  // reported, a refused one left alone and reported, and this run changes nothing else.
  let store = learnings::Learnings::open(&learnings_dir, &layout.learnings.name, true)?;
  if let Some(kind) = notes_dir.kind_of(&layout.notes.name)? {
    if kind != rustix::fs::FileType::RegularFile {
      return Err(LoaError::NotRegularFile {
        path: notes_dir.child_path(&layout.notes.name).display().to_string(),
        kind: crate::fsutil::kind_name(kind),
      });
    }
  }

  // Expired memories earlier runs could not remove from a log another process held: removed
  // now where the lock is free (before anything is applied, so a failure changes nothing).
  super::pending::complete(layout, &wal_dir, own)?;

  // With replication configured, retention keeps what has not been shipped (read now: the
  // marks only grow, so reading them early only keeps more).
  let shipped = layout.replication_state.as_ref().map(|dir| wal::shipped::shipped_marks(&root, dir));
  // Every record passes the memory admission rule: what is written is only ever the record
  // file its memory's content derives (see `super::admit`), never a path a record names.
  let applied = wal::consolidate_with(
    &layout.wal_path(),
    &layout.grimoire_path(),
    &ConsolidateOptions { prune: true, lock_timeout: layout.lock_timeout, clean_targets: clean_memory, shipped },
    &super::admit::admit,
  )?;
  let memory_dir = grimoire.subdir(MEMORY_DIR)?;
  let mut outcome = ConsolidateOutcome {
    applied: applied.applied,
    conflicts: applied.conflicts.len(),
    refused: applied.dead_letters.iter().map(RefusedRecord::from).collect(),
    ..Default::default()
  };

  // The summary, updated with this run's records, or rebuilt from every record.
  let previous = loaded_summary.filter(|s| s.watermarks == applied.watermarks_before);
  let full = previous.is_none()
    || applied.applied_paths.iter().any(|p| p.replaced || p.op != "write")
    || (store.is_none() && previous.as_ref().is_some_and(|s| s.learnings > 0))
    || store.as_ref().is_some_and(learnings::Learnings::lost_entries);
  let (mut summary, new_records) = match (previous, full) {
    (Some(mut summary), false) => {
      let mut new = Vec::new();
      if let Some(dir) = &memory_dir {
        for p in &applied.applied_paths {
          let Some(id) = p.path.strip_prefix(MEMORY_DIR).and_then(|r| r.strip_prefix('/')).and_then(record_name_hash)
          else {
            continue;
          };
          if let Some(record) = read_one(dir, id) {
            summary.add(&record);
            new.push(record);
          }
        }
      }
      (summary, new)
    }
    _ => {
      outcome.rebuilt = true;
      let records = match &memory_dir {
        Some(dir) => read_records(dir, true)?,
        None => Vec::new(),
      };
      (Summary::of(&records), records)
    }
  };
  summary.watermarks = applied.watermarks_after.clone();
  summary.memory_dir_mtime_ns = memory_dir.as_ref().map(dir_mtime_ns).transpose()?;
  outcome.memories = summary.memories as usize;

  let generated: Vec<Map<String, Value>> =
    new_records.iter().filter(|r| r.is_learning()).map(MemoryRecord::learning_entry).collect();
  let existed = store.is_some();
  let mut store = store.unwrap_or_default();
  outcome.learnings = store.merge(&learnings_dir, &layout.learnings.name, &generated)?;
  if existed || !generated.is_empty() {
    store.save(&learnings_dir, &layout.learnings.name)?;
  }
  outcome.learnings_total = store.total();

  let existing_notes = read_notes(&notes_dir, layout)?;

  // Expiry, before NOTES.md is rendered, so that an expired memory's text is never written
  // there: memories whose `expiresAt` has passed are forgotten like `forget` does, except
  // that a log another process holds is left for a later run (see `super::pending`) instead
  // of failing this one after the WAL was applied.
  let now = now_ms();
  let expired: Vec<String> = summary.expiring.iter().filter(|(at, _)| *at <= now).map(|(_, id)| id.clone()).collect();
  let mut forgotten = Vec::new();
  if !expired.is_empty() {
    forget::run_locked(layout, own, index, &expired, Reason::Expired, None, None)?;
    outcome.expired = expired.len();
    // Forgetting wrote the summary of what remains, still with the previous run's watermarks:
    // until this run completes below, the next one rebuilds.
    summary = load_summary(&grimoire).ok_or_else(|| LoaError::Internal("the memory summary vanished".into()))?;
    summary.watermarks = applied.watermarks_after.clone();
    summary.memory_dir_mtime_ns = memory_dir.as_ref().map(dir_mtime_ns).transpose()?;
    outcome.memories = summary.memories as usize;
    forgotten = expired;
  }

  // Forgetting renders NOTES.md's regions again itself when the file exists.
  let current_notes = if forgotten.is_empty() { existing_notes.clone() } else { read_notes(&notes_dir, layout)? };
  outcome.notes_updated = current_notes != existing_notes;
  if outcome.applied > 0 || outcome.rebuilt || current_notes.is_none() {
    if let Some(updated) = notes_of_summary(current_notes.as_deref(), &summary, memory_dir.as_ref()) {
      if current_notes.as_deref() != Some(updated.as_str()) {
        notes_dir.write_atomic(&layout.notes.name, updated.as_bytes(), None)?;
        outcome.notes_updated = true;
      }
    }
  }
  // Last: a summary with this run's watermarks says the run completed.
  write_summary(&grimoire, &summary)?;
  if let Some(request) = seal {
    outcome.sealed = Some(super::seal::seal(layout, index, request)?);
  }
  outcome.pending_removals = super::pending::count(&wal_dir)?;
  Ok(RunOutcome { outcome, forgotten })
}

/// The WAL checkpoint (consolidation state) of the workspace `options` describe, and what
/// `with` returns, both taken while no consolidation (nor seal) of the workspace runs: its
/// consolidation lock is held throughout. A sealed grimoire that `with` reads and finds as it
/// was sealed is then exactly the one this state describes. The checkpoint is `Ok(None)` when
/// there is no WAL directory or no state yet (`with` then runs without the lock), and its own
/// error when the state cannot be read (`with` still runs); the call fails only when the lock
/// cannot be taken or `with` fails.
pub fn checkpoint_with<T>(
  options: &super::StoreOptions,
  with: impl FnOnce() -> Result<T>,
) -> Result<(Result<Option<wal::checkpoint::Checkpoint>>, T)> {
  let layout = Layout::resolve(options)?;
  let root = layout.root()?;
  let Some(wal_dir) = layout.dir_in(&root, &layout.wal, false)? else { return Ok((Ok(None), with()?)) };
  let _lock = lock(&wal_dir, &layout)?;
  let checkpoint = wal::checkpoint::read_checkpoint(&wal_dir, layout.lock_timeout);
  Ok((checkpoint, with()?))
}

/// The modification time of a directory, in ns since the epoch.
pub(super) fn dir_mtime_ns(dir: &StateDir) -> Result<i128> {
  let st = rustix::fs::fstat(dir.fd()).map_err(|e| LoaError::io("stat", dir.path(), std::io::Error::from(e)))?;
  Ok(i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec))
}

/// After memories were forgotten: the summary and NOTES.md's regions rendered again from every
/// remaining record. Returns whether NOTES.md changed.
pub(super) fn rederive(layout: &Layout, root: &StateDir, grimoire: &StateDir) -> Result<bool> {
  let records = match grimoire.subdir(MEMORY_DIR)? {
    Some(dir) => read_records(&dir, false)?,
    None => Vec::new(),
  };
  let mut summary = Summary::of(&records);
  summary.watermarks = load_summary(grimoire).map(|s| s.watermarks).unwrap_or_default();
  write_summary(grimoire, &summary)?;
  let Some(notes_dir) = layout.dir_in(root, &layout.notes.dir, false)? else { return Ok(false) };
  let existing = read_notes(&notes_dir, layout)?;
  if existing.is_none() {
    return Ok(false);
  }
  // Memories expired since the last consolidation (forgotten by the next) are not shown.
  let now = now_ms();
  let live: Vec<MemoryRecord> = records.iter().filter(|r| !r.is_expired(now)).cloned().collect();
  match render_notes(existing.as_deref(), &live) {
    Some(updated) if existing.as_deref() != Some(updated.as_str()) => {
      notes_dir.write_atomic(&layout.notes.name, updated.as_bytes(), None)?;
      Ok(true)
    }
    _ => Ok(false),
  }
}

/// NOTES.md rendered from the summary: the same text [`render_notes`] gives for every record,
/// reading only the records it shows.
fn notes_of_summary(existing: Option<&str>, summary: &Summary, dir: Option<&StateDir>) -> Option<String> {
  let mut shown: Vec<MemoryRecord> = Vec::new();
  let mut seen = HashSet::new();
  let mut sessions: Vec<(&String, &SessionSummary)> = summary.sessions.iter().collect();
  sessions.sort_by(|a, b| b.1.last.cmp(&a.1.last).then_with(|| a.0.cmp(b.0)));
  let wanted =
    sessions.iter().take(NOTES_MAX_SESSIONS).map(|(_, s)| &s.latest.1).chain(summary.decisions.iter().map(|d| &d.1));
  for id in wanted {
    if seen.insert(id.clone()) {
      if let Some(r) = dir.and_then(|d| read_one(d, id)) {
        shown.push(r);
      }
    }
  }
  render_notes_with(existing, summary.memories == 0, &sessions_lines(&sessions, &shown), &shown)
}

/// The session lines of NOTES.md from summaries (newest first) and the records they show.
fn sessions_lines(
  sessions: &[(&String, &SessionSummary)],
  shown: &[MemoryRecord],
) -> Vec<(notes::SessionLine, String)> {
  sessions
    .iter()
    .take(NOTES_MAX_SESSIONS)
    .map(|(id, s)| {
      let latest = shown.iter().find(|r| r.id == s.latest.1);
      let kinds: BTreeMap<&str, u64> = s.kinds.iter().map(|(k, n)| (k.as_str(), *n)).collect();
      let kinds = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ");
      let line = notes::SessionLine {
        session_id: (*id).clone(),
        started_at: format_ms(s.first),
        last_active_at: format_ms(s.last),
        memories: s.count,
        latest: latest
          .map(|r| format!("{}: {}", r.kind, notes::excerpt(&notes::one_line(&r.content), 120)))
          .unwrap_or_default(),
      };
      (line, kinds)
    })
    .collect()
}

/// NOTES.md as text; `None` when there is none. Not UTF-8 is `E_STATE_CORRUPT` and the file is
/// left untouched; a symlink or other non-regular file `E_NOT_REGULAR_FILE`; over
/// [`MAX_NOTES_BYTES`] `E_TOO_LARGE`.
fn read_notes(dir: &StateDir, layout: &Layout) -> Result<Option<String>> {
  let Some(bytes) = dir.read(&layout.notes.name, MAX_NOTES_BYTES)? else { return Ok(None) };
  String::from_utf8(bytes).map(Some).map_err(|_| LoaError::StateCorrupt {
    path: dir.child_path(&layout.notes.name).display().to_string(),
    reason: "not valid UTF-8; left untouched".into(),
  })
}

/// The new NOTES.md, or `None` when there is nothing to write and no file yet.
pub(super) fn render_notes(existing: Option<&str>, records: &[MemoryRecord]) -> Option<String> {
  let sessions = aggregate_sessions(records);
  let lines: Vec<(notes::SessionLine, String)> = sessions
    .iter()
    .take(NOTES_MAX_SESSIONS)
    .map(|s| {
      let latest =
        s.records.first().map(|r| format!("{}: {}", r.kind, notes::excerpt(&notes::one_line(&r.content), 120)));
      let kinds: BTreeMap<&str, u64> = s.kinds.iter().map(|(k, n)| (k.as_str(), *n)).collect();
      let kinds = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ");
      let line = notes::SessionLine {
        session_id: s.id.clone(),
        started_at: format_ms(s.first),
        last_active_at: format_ms(s.last),
        memories: s.records.len() as u64,
        latest: latest.unwrap_or_default(),
      };
      (line, kinds)
    })
    .collect();
  render_notes_with(existing, records.is_empty(), &lines, records)
}

/// NOTES.md with its two regions: `lines` (sessions, newest first) and the newest decisions of
/// `records`.
fn render_notes_with(
  existing: Option<&str>,
  no_records: bool,
  lines: &[(notes::SessionLine, String)],
  records: &[MemoryRecord],
) -> Option<String> {
  if no_records && existing.is_none() {
    return None;
  }
  let mut decisions: Vec<&MemoryRecord> = records.iter().filter(|r| r.kind == MemoryKind::Decision).collect();
  decisions.sort_by(|a, b| a.ts_ms().cmp(&b.ts_ms()).then_with(|| a.id.cmp(&b.id)));
  let skip = decisions.len().saturating_sub(NOTES_MAX_DECISIONS);
  let decisions = &decisions[skip..];

  let mut text = existing.unwrap_or(notes::TEMPLATE).to_string();
  let has_region = |text: &str, name| notes::region_body(text, name).is_some();
  if !lines.is_empty() || has_region(&text, notes::SESSIONS) {
    let body: String = lines.iter().map(|(l, kinds)| notes::render_session_line(l, kinds)).collect();
    text = notes::set_region(&text, notes::SESSIONS, &|_| body.clone());
  }
  // A Decision Log the file keeps as a table, blocks or dated bullets gets its decisions in that
  // style; one of `####` entries (or none) gets the region below.
  let in_style: Vec<crate::ledger::notes_log::LogDecision> = decisions
    .iter()
    .map(|d| {
      let fields = crate::ledger::decision::DecisionFields::of_metadata(d.metadata.as_ref()).unwrap_or_default();
      crate::ledger::notes_log::LogDecision {
        id: d.id.clone(),
        timestamp: d.timestamp.clone(),
        decision: d.content.clone(),
        rationale: fields.rationale,
        evidence: fields.evidence,
        test_scenarios: fields.test_scenarios,
        agent: d.agent_id.clone().unwrap_or_else(|| d.session_id.clone()),
        session_id: d.session_id.clone(),
      }
    })
    .collect();
  if let Some(updated) = crate::ledger::notes_log::write_decisions(&text, &in_style) {
    text = updated;
  } else if !decisions.is_empty() || has_region(&text, notes::DECISIONS) {
    let render = |level: usize| {
      decisions
        .iter()
        .map(|d| {
          let first_line = d.content.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
          let confidence = d.confidence.map_or("-".to_string(), |c| c.to_string());
          format!(
            "{} {} - {}\n**Decision**: {}\n{}**Session**: `{}` · **Confidence**: {} · **Id**: `{}`\n",
            "#".repeat(level),
            d.timestamp,
            notes::excerpt(&notes::one_line(first_line), 60),
            notes::one_line(&d.content),
            // Rationale, evidence and test scenarios of decisions the ledger recorded.
            crate::ledger::decision::render_fields(d.metadata.as_ref()),
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
