//! Consolidation: applying every session's log to a target directory, last write wins.
//!
//! Records with a `path` and op `write` (data becomes the file) or `delete` are applied; other
//! ops are kept in the log but not applied. The winner for a path is the record with the
//! greatest (ts, sessionId, seq), across this run and all earlier ones: the winner of each path
//! is remembered in `consolidation.json`, so a late record from a slow session never overwrites
//! a newer file. When a record from one session loses to a record from another, both sides
//! (session, seq, ts, sha256 of the data) go to `conflicts.jsonl`. Successive writes within one
//! session are ordinary updates, not conflicts.
//!
//! Crash safety: files are written atomically first, then the conflict log, then the state file
//! (atomically). A crash in between makes the next run apply the same records again, which
//! yields the same files. Segments are removed (retention) only after the state that records
//! them as applied is durable, and never the newest segment of a session.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::format::Record;
use super::reader::{list_segments, list_sessions, merge_key, replay_session, session_dir};
use crate::error::{LoaError, Result};
use crate::fsutil::{create_dir_durable, ensure_inside, join_relative, sync_dir, write_file_atomic};
use crate::lock::lock_exclusive;

pub const STATE_FILE: &str = "consolidation.json";
pub const CONFLICT_LOG: &str = "conflicts.jsonl";
const LOCK_FILE: &str = "consolidate.lock";

#[derive(Debug, Clone)]
pub struct ConsolidateOptions {
  /// Remove segments whose every record has been applied (never a session's newest segment).
  pub prune: bool,
  /// How long to wait for another consolidation of the same directory.
  pub lock_timeout: Duration,
}

impl Default for ConsolidateOptions {
  fn default() -> Self {
    ConsolidateOptions { prune: true, lock_timeout: Duration::from_millis(5000) }
  }
}

/// One side of a conflict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConflictSide {
  pub session_id: String,
  pub seq: u64,
  pub ts: i64,
  pub op: String,
  /// sha256 (hex) of the record's data; of the empty string for deletes.
  pub hash: String,
}

/// Two sessions wrote the same path; `winner` is what the target holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Conflict {
  pub path: String,
  pub winner: ConflictSide,
  pub overwritten: ConflictSide,
}

/// What a consolidation did.
#[derive(Debug, Clone, Default)]
pub struct Consolidation {
  /// Files written or deleted in the target.
  pub applied: usize,
  /// New records read from the log (all ops).
  pub records: usize,
  pub conflicts: Vec<Conflict>,
  /// Segment files removed by retention.
  pub pruned_segments: usize,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct State {
  version: u32,
  /// Highest seq applied, per session.
  sessions: BTreeMap<String, u64>,
  /// Current winner of every path ever applied.
  paths: BTreeMap<String, ConflictSide>,
}

fn side_of(record: &Record) -> ConflictSide {
  let data = record.data.as_deref().unwrap_or_default();
  ConflictSide {
    session_id: record.session_id.clone(),
    seq: record.seq,
    ts: record.ts_ms,
    op: record.op.clone(),
    hash: hex::encode(Sha256::digest(data)),
  }
}

fn side_key(side: &ConflictSide) -> (i64, &str, u64) {
  (side.ts, side.session_id.as_str(), side.seq)
}

fn load_state(path: &Path) -> Result<State> {
  match fs::read(path) {
    Ok(bytes) => serde_json::from_slice(&bytes)
      .map_err(|e| LoaError::StateCorrupt { path: path.display().to_string(), reason: e.to_string() }),
    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State { version: 1, ..Default::default() }),
    Err(e) => Err(LoaError::io("read", path, e)),
  }
}

/// Applies all sessions' new records under `wal_dir` to `target_dir`.
pub fn consolidate(wal_dir: &Path, target_dir: &Path, options: &ConsolidateOptions) -> Result<Consolidation> {
  if !wal_dir.is_dir() {
    return crate::error::invalid(format!("{} is not a directory", wal_dir.display()));
  }
  let _lock = lock_exclusive(&wal_dir.join(LOCK_FILE), options.lock_timeout, "WAL consolidation")?;
  let state_path = wal_dir.join(STATE_FILE);
  let mut state = load_state(&state_path)?;

  // Read everything first: a corrupt session aborts before anything is changed.
  let mut records = Vec::new();
  let mut watermarks = state.sessions.clone();
  for session in list_sessions(wal_dir)? {
    let since = state.sessions.get(&session).copied().unwrap_or(0);
    let new = replay_session(wal_dir, &session, since, None)?;
    if let Some(last) = new.last() {
      watermarks.insert(session.clone(), last.seq);
    }
    records.extend(new);
  }
  records.sort_by(|a, b| merge_key(a).cmp(&merge_key(b)));

  let mut outcome = Consolidation { records: records.len(), ..Default::default() };
  let mut changed: BTreeMap<&str, &Record> = BTreeMap::new();
  for record in &records {
    let Some(path) = record.path.as_deref() else { continue };
    if record.op != "write" && record.op != "delete" {
      continue;
    }
    let side = side_of(record);
    let current = state.paths.get(path);
    let newer = current.is_none_or(|c| side_key(&side) > side_key(c));
    if newer {
      if let Some(previous) = current.filter(|c| c.session_id != side.session_id) {
        outcome.conflicts.push(Conflict { path: path.into(), winner: side.clone(), overwritten: previous.clone() });
      }
      state.paths.insert(path.to_string(), side);
      changed.insert(path, record);
    } else if let Some(current) = current.filter(|c| c.session_id != side.session_id) {
      outcome.conflicts.push(Conflict { path: path.into(), winner: current.clone(), overwritten: side });
    }
  }

  create_dir_durable(target_dir)?;
  for (path, record) in &changed {
    apply(target_dir, path, record)?;
    outcome.applied += 1;
  }
  if !outcome.conflicts.is_empty() {
    append_conflicts(&wal_dir.join(CONFLICT_LOG), &outcome.conflicts)?;
  }
  state.version = 1;
  state.sessions = watermarks;
  let json = serde_json::to_vec_pretty(&state).map_err(|e| LoaError::Internal(e.to_string()))?;
  write_file_atomic(&state_path, &json, None)?;

  if options.prune {
    outcome.pruned_segments = prune(wal_dir, &state.sessions)?;
  }
  Ok(outcome)
}

fn apply(target_dir: &Path, path: &str, record: &Record) -> Result<()> {
  let full = join_relative(target_dir, path)?;
  let parent = full.parent().unwrap_or(target_dir);
  if record.op == "delete" {
    if parent.exists() {
      ensure_inside(target_dir, parent)?;
    }
    return match fs::remove_file(&full) {
      Ok(()) => sync_dir(parent),
      Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
      Err(e) => Err(LoaError::io("delete", &full, e)),
    };
  }
  create_dir_durable(parent)?;
  // The parent may be (or pass through) a symlink planted in the target: resolve and check.
  ensure_inside(target_dir, parent)?;
  if fs::symlink_metadata(&full).map(|m| m.file_type().is_symlink()).unwrap_or(false) {
    return Err(LoaError::PathOutsideRoot(path.to_string()));
  }
  write_file_atomic(&full, record.data.as_deref().unwrap_or_default(), None)
}

fn append_conflicts(path: &Path, conflicts: &[Conflict]) -> Result<()> {
  let mut text = Vec::new();
  for conflict in conflicts {
    serde_json::to_writer(&mut text, conflict).map_err(|e| LoaError::Internal(e.to_string()))?;
    text.push(b'\n');
  }
  let created = !path.exists();
  let mut file = OpenOptions::new().create(true).append(true).open(path).map_err(|e| LoaError::io("open", path, e))?;
  file.write_all(&text).map_err(|e| LoaError::io("append to", path, e))?;
  file.sync_data().map_err(|e| LoaError::io("fsync", path, e))?;
  if created {
    sync_dir(path.parent().unwrap_or(Path::new(".")))?;
  }
  Ok(())
}

/// Removes sealed segments whose records are all applied. A segment is sealed once a newer one
/// exists, and its records are exactly the seqs below the next segment's first seq.
fn prune(wal_dir: &Path, applied: &BTreeMap<String, u64>) -> Result<usize> {
  let mut removed = 0;
  for (session, &watermark) in applied {
    let sdir = session_dir(wal_dir, session);
    let segments = list_segments(&sdir)?;
    let mut removed_here = 0;
    for pair in segments.windows(2) {
      let (sealed, next) = (&pair[0], &pair[1]);
      if next.first_seq.saturating_sub(1) > watermark {
        break;
      }
      match fs::remove_file(&sealed.path) {
        Ok(()) => removed_here += 1,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(LoaError::io("remove applied segment", &sealed.path, e)),
      }
    }
    if removed_here > 0 {
      sync_dir(&sdir)?;
      removed += removed_here;
    }
  }
  Ok(removed)
}

#[cfg(test)]
pub(crate) mod tests_support {
  use super::*;
  use crate::wal::{format, reader};

  /// Writes a record for `notes/shared.md` into a third session whose timestamp is older than
  /// everything else, then consolidates.
  pub fn late_record_loses(wal_dir: &Path, target: &Path) -> Consolidation {
    let sdir = reader::session_dir(wal_dir, "c");
    crate::fsutil::create_dir_durable(&sdir).unwrap();
    let mut bytes = format::encode_header(&format::SegmentHeader { created_ms: 1, first_seq: 1 }).to_vec();
    let record = Record {
      seq: 1,
      ts_ms: 1,
      session_id: "c".into(),
      op: "write".into(),
      path: Some("notes/shared.md".into()),
      meta: None,
      data: Some(b"from c (ancient)".to_vec()),
    };
    format::encode_record(&record, &mut bytes);
    fs::write(sdir.join(reader::segment_file_name(1)), bytes).unwrap();
    consolidate(wal_dir, target, &ConsolidateOptions::default()).unwrap()
  }
}
