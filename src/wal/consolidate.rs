//! Consolidation: applying every session's log to a target directory, last write wins.
//!
//! Records with a `path` and op `write` (data becomes the file) or `delete` are applied; other
//! ops are kept in the log but not applied. The winner for a path is the record with the
//! greatest (ts, sessionId, seq), across this run and all earlier ones: the winner of each path
//! is remembered in the consolidation state (`consolidation.json` and its shards in
//! `consolidation/`, see [`super::state`]), so a late record from a slow session never
//! overwrites a newer file. A run reads and rewrites only the shards its records' paths fall in:
//! its cost grows with the records that arrived since the last run, not with every path ever
//! applied. When a record from one session loses to a record from another, both sides
//! (session, seq, ts, sha256 of the data) go to `conflicts.jsonl`. Successive writes within one
//! session are ordinary updates, not conflicts.
//!
//! A record that cannot be applied because of what it names (its target is a directory,
//! symlink or FIFO, a parent is a file or a symlink, a name the file system refuses as too long,
//! a path that is not a plain relative path) goes to `dead-letter.jsonl` (the whole record, its
//! data hex-encoded, with the error code and reason) and is reported in
//! [`Consolidation::dead_letters`] (path, session, seq and code, never data); the run goes on with
//! the rest and the record counts as handled, so it is not retried for ever. Failures of the disk
//! itself (`ENOSPC`, `EIO`, permissions) fail the run instead, with nothing recorded as applied,
//! so the next run retries.
//!
//! **Admission.** [`consolidate`] applies each record's `path` as given: the generic semantics of
//! the `Wal` API. [`consolidate_with`] first hands every new record to the caller's
//! [`Admission`] rule, which may let it through as it is, put in its place the record it
//! derives from it (its own path and data: memory consolidation recomputes a memory's file
//! from its content, see `crate::memory`), pass over it (a record that writes nothing), or
//! refuse it. A refused record is reported in [`Consolidation::dead_letters`] with its code and
//! goes to `dead-letter.jsonl` without its data or meta (only their sha256): what a refused
//! record carries was vetted by nobody, and nothing refused is kept beyond its segment. It
//! counts as handled, and never becomes a path's winner.
//!
//! Every file is reached through [`StateDir`]: the target directory's subdirectories are created
//! and opened without following a symlink (so nothing is ever created outside the target),
//! target files are written atomically and never through a symlink, and `consolidation.json`
//! (read at most [`MAX_STATE_BYTES`]), its shards (at most [`MAX_SHARD_BYTES`] each),
//! `conflicts.jsonl`, `dead-letter.jsonl` and `consolidate.lock` must be regular files
//! (`E_NOT_REGULAR_FILE`; the head and the logs are checked before anything is changed, the
//! shards a run needs are all read before anything is changed). Under the lock, stale temp files
//! of crashed atomic writes are removed from the WAL directory, the shard directory and every
//! target directory written.
//!
//! Crash safety: files are written atomically first, then the conflict and dead-letter logs, then
//! the changed shards (each atomically), then the head (atomically), which commits the run. A
//! crash in between makes the next run roll back what the uncommitted run left in the shards and
//! apply the same records again, which yields the same files (the two logs may repeat lines).
//! Segments are removed (retention) only after the state that records them as applied is
//! durable, never the newest segment of a session, and, when the caller passes what replication
//! has shipped ([`ConsolidateOptions::shipped`]), never one holding a record not shipped yet.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::fs::FileType;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::format::Record;
use super::reader::{
  merge_key, open_existing_dir, read_session_in, records_after, segments_in, session_ids, SESSIONS_DIR,
};
use super::state::State;
pub use super::state::{MAX_SHARD_BYTES, MAX_STATE_BYTES, SHARD_DIR, STATE_FILE};
use crate::error::{invalid, LoaError, Result};
use crate::fsutil::{kind_name, relative_components, OpenMode, StateDir};
use crate::lock::lock_in;

pub const CONFLICT_LOG: &str = "conflicts.jsonl";
pub const DEAD_LETTER_LOG: &str = "dead-letter.jsonl";
pub(super) const LOCK_FILE: &str = "consolidate.lock";

#[derive(Debug, Clone)]
pub struct ConsolidateOptions {
  /// Remove segments whose every record has been applied (never a session's newest segment).
  pub prune: bool,
  /// How long to wait for another consolidation of the same directory.
  pub lock_timeout: Duration,
  /// Before the first write into a target directory, remove stale temp files from it. A
  /// caller that knows a directory holds none (and that it is large) turns it off.
  pub clean_targets: bool,
  /// When replication is configured: the highest seq per session that replication has
  /// shipped (see [`super::shipped`]). Retention then also keeps every segment holding a record
  /// above its session's mark (a session without one keeps all its segments). `None`: no
  /// such limit.
  pub shipped: Option<BTreeMap<String, u64>>,
}

impl Default for ConsolidateOptions {
  fn default() -> Self {
    ConsolidateOptions { prune: true, lock_timeout: Duration::from_millis(5000), clean_targets: true, shipped: None }
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

/// A record that could not be applied and went to `dead-letter.jsonl`. Carries no record data.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetter {
  pub path: String,
  pub session_id: String,
  pub seq: u64,
  /// The error code that stopped it (`E_NOT_REGULAR_FILE`, `E_PATH_OUTSIDE_ROOT`,
  /// `E_INVALID_ARGUMENT`, `E_IO` for a name the file system refuses).
  pub code: &'static str,
  /// The error message (names paths, never data).
  pub reason: String,
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
  /// Records that could not be applied (see the module docs), in the order they were met.
  pub dead_letters: Vec<DeadLetter>,
  /// The paths written or deleted in the target by this run, sorted: what a caller deriving
  /// state from the target must look at again (nothing else changed).
  pub applied_paths: Vec<AppliedPath>,
  /// Highest seq applied per session before this run (as `consolidation.json` recorded it)
  /// and after it: a caller that keeps derived state remembers `watermarks_after`, and when
  /// what it remembers is not `watermarks_before`, it missed a run and must rebuild.
  pub watermarks_before: BTreeMap<String, u64>,
  pub watermarks_after: BTreeMap<String, u64>,
}

/// A path a consolidation wrote or deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedPath {
  pub path: String,
  /// `write` or `delete`.
  pub op: String,
  /// An earlier run had already applied a record to this path.
  pub replaced: bool,
}

/// What [`consolidate_with`] does with one new record.
#[derive(Debug)]
pub enum Admission {
  /// Apply this record: the one read, or one derived from it (same seq, time and session; the
  /// path and data are what is written). Only `write` and `delete` records change the target.
  Apply(Record),
  /// Leave it in the log, apply nothing (a record that writes nothing: an audit record, a
  /// tombstone).
  Skip,
  /// Refuse it: reported as a dead letter with this error's code and message (which must not
  /// carry the record's data), nothing written.
  Refuse(Record, LoaError),
}

/// The generic rule of [`consolidate`]: every record as it is.
fn as_given(record: Record) -> Admission {
  Admission::Apply(record)
}

/// A line of `dead-letter.jsonl`: the whole record, so that nothing is lost when retention
/// removes its segment; for a refused record, everything but its data and meta, which are
/// only hashed.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeadLetterLine<'a> {
  path: &'a str,
  session_id: &'a str,
  seq: u64,
  ts: i64,
  op: &'a str,
  code: &'a str,
  reason: &'a str,
  /// The record's `meta` as the JSON text it was stored as.
  #[serde(skip_serializing_if = "Option::is_none")]
  meta_json: Option<&'a str>,
  /// The record's data, hex-encoded.
  #[serde(skip_serializing_if = "Option::is_none")]
  data_hex: Option<String>,
  /// For a refused record: the sha256 (hex) of its data, which is not kept.
  #[serde(skip_serializing_if = "Option::is_none")]
  data_sha256: Option<String>,
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

/// Fails with `E_NOT_REGULAR_FILE` when `name` exists in `dir` as anything but a regular file.
fn ensure_regular_or_absent(dir: &StateDir, name: &str) -> Result<()> {
  match dir.kind_of(name)? {
    Some(kind) if kind != FileType::RegularFile => {
      Err(LoaError::NotRegularFile { path: dir.child_path(name).display().to_string(), kind: kind_name(kind) })
    }
    _ => Ok(()),
  }
}

/// Applies all sessions' new records under `wal_dir` to `target_dir`, each record's path as
/// given.
pub fn consolidate(wal_dir: &Path, target_dir: &Path, options: &ConsolidateOptions) -> Result<Consolidation> {
  consolidate_with(wal_dir, target_dir, options, &as_given)
}

/// [`consolidate`], every new record first passed through `admit` (see the module docs): what
/// it applies is what `admit` returns, never the record read.
pub fn consolidate_with(
  wal_dir: &Path,
  target_dir: &Path,
  options: &ConsolidateOptions,
  admit: &dyn Fn(Record) -> Admission,
) -> Result<Consolidation> {
  if target_dir.as_os_str().is_empty() {
    return invalid("the target directory path must not be empty");
  }
  let root = open_existing_dir(wal_dir)?;
  let _lock = lock_in(&root, LOCK_FILE, options.lock_timeout, "WAL consolidation")?;
  // Everything that must be a regular file is checked before anything is changed.
  for name in [STATE_FILE, CONFLICT_LOG, DEAD_LETTER_LOG] {
    ensure_regular_or_absent(&root, name)?;
  }
  let mut state = State::load(&root)?;
  // Temp files of an interrupted state write; housekeeping, so a failure to list is no failure.
  let _ = root.clean_stale_temps();
  if let Some(shards) = root.subdir(SHARD_DIR)? {
    let _ = shards.clean_stale_temps();
  }

  // Read everything first: a corrupt session aborts before anything is changed.
  let mut records = Vec::new();
  let mut watermarks = state.sessions.clone();
  let sessions = root.subdir(SESSIONS_DIR)?;
  if let Some(sessions) = &sessions {
    for session in session_ids(sessions)? {
      let since = state.sessions.get(&session).copied().unwrap_or(0);
      let new = records_after(read_session_in(sessions, &session)?, since, None)?;
      if let Some(last) = new.last() {
        watermarks.insert(session.clone(), last.seq);
      }
      records.extend(new);
    }
  }
  records.sort_by(|a, b| merge_key(a).cmp(&merge_key(b)));
  let read = records.len();
  let mut dead_lines = Vec::new();
  let mut refused = Vec::new();
  let mut admitted = Vec::with_capacity(records.len());
  for record in records {
    match admit(record) {
      Admission::Apply(record) => admitted.push(record),
      Admission::Skip => {}
      Admission::Refuse(record, error) => {
        let letter = DeadLetter {
          path: record.path.clone().unwrap_or_default(),
          session_id: record.session_id.clone(),
          seq: record.seq,
          code: error.code(),
          reason: error.to_string(),
        };
        dead_lines.extend(dead_letter_line(&record, &letter, false)?);
        refused.push(letter);
      }
    }
  }
  let records = admitted;
  // Every shard this run needs is read (and checked) before anything is changed.
  state.load_shards(&root, records.iter().filter_map(|r| r.path.as_deref()))?;

  let mut outcome = Consolidation {
    records: read,
    watermarks_before: state.sessions.clone(),
    dead_letters: refused,
    ..Default::default()
  };
  let mut changed: BTreeMap<&str, &Record> = BTreeMap::new();
  let mut replaced: HashSet<&str> = HashSet::new();
  for record in &records {
    let Some(path) = record.path.as_deref() else { continue };
    if record.op != "write" && record.op != "delete" {
      continue;
    }
    let side = side_of(record);
    let current = state.winner(path);
    let newer = current.as_ref().is_none_or(|c| side_key(&side) > side_key(c));
    if newer {
      if current.is_some() {
        replaced.insert(path);
      }
      if let Some(previous) = current.filter(|c| c.session_id != side.session_id) {
        outcome.conflicts.push(Conflict { path: path.into(), winner: side.clone(), overwritten: previous });
      }
      state.set(path, side);
      changed.insert(path, record);
    } else if let Some(current) = current.filter(|c| c.session_id != side.session_id) {
      outcome.conflicts.push(Conflict { path: path.into(), winner: current.clone(), overwritten: side });
    }
  }

  let target = StateDir::create_root(target_dir)?;
  let mut cleaned = HashSet::new();
  for (path, record) in &changed {
    match apply(&target, path, record, &mut cleaned, options.clean_targets) {
      Ok(()) => {
        outcome.applied += 1;
        outcome.applied_paths.push(AppliedPath {
          path: path.to_string(),
          op: record.op.clone(),
          replaced: replaced.contains(path),
        });
      }
      // The dead-lettered record stays the path's winner: it is the newest word on that path,
      // and the next record for it is judged against it like against any other.
      Err(e) if cannot_apply(&e) => {
        let letter = DeadLetter {
          path: path.to_string(),
          session_id: record.session_id.clone(),
          seq: record.seq,
          code: e.code(),
          reason: e.to_string(),
        };
        dead_lines.extend(dead_letter_line(record, &letter, true)?);
        outcome.dead_letters.push(letter);
      }
      Err(e) => return Err(e),
    }
  }
  if !outcome.conflicts.is_empty() {
    let mut text = Vec::new();
    for conflict in &outcome.conflicts {
      serde_json::to_writer(&mut text, conflict).map_err(|e| LoaError::Internal(e.to_string()))?;
      text.push(b'\n');
    }
    append_lines(&root, CONFLICT_LOG, &text)?;
  }
  if !dead_lines.is_empty() {
    append_lines(&root, DEAD_LETTER_LOG, &dead_lines)?;
  }
  outcome.watermarks_after = watermarks.clone();
  // A run that read nothing new commits nothing (the head would be the same).
  if read > 0 || state.has_changes() || root.kind_of(STATE_FILE)?.is_none() {
    state.commit(&root, watermarks, true)?;
  }

  if options.prune {
    if let Some(sessions) = &sessions {
      outcome.pruned_segments = prune(sessions, &state.sessions, options.shipped.as_ref())?;
    }
  }
  Ok(outcome)
}

/// Forgets `paths` in the consolidation's own files: their entries in `consolidation.json`
/// (which would otherwise keep each path's winner, with a hash of its data, for ever), and every
/// line of `conflicts.jsonl` and `dead-letter.jsonl` that names one of them (a dead letter
/// holds the record's data). Each file that changes is rewritten atomically, under the
/// consolidation lock. Returns how many entries and lines were removed. The segments themselves
/// are rewritten by their session's lock holder (see [`super::rewrite`]).
pub fn forget_paths(wal_dir: &Path, paths: &[String], lock_timeout: Duration) -> Result<usize> {
  let Some(root) = super::reader::open_wal_dir(wal_dir)? else { return Ok(0) };
  if paths.is_empty() {
    return Ok(0);
  }
  let _lock = lock_in(&root, LOCK_FILE, lock_timeout, "WAL consolidation")?;
  for name in [STATE_FILE, CONFLICT_LOG, DEAD_LETTER_LOG] {
    ensure_regular_or_absent(&root, name)?;
  }
  let mut removed = 0;
  if root.kind_of(STATE_FILE)?.is_some() {
    let mut state = State::load(&root)?;
    state.load_shards(&root, paths.iter().map(String::as_str))?;
    removed += paths.iter().filter(|p| state.remove(p)).count();
    if state.has_changes() {
      let sessions = state.sessions.clone();
      state.commit(&root, sessions, false)?;
    }
  }
  for name in [CONFLICT_LOG, DEAD_LETTER_LOG] {
    let Some(bytes) = root.read(name, MAX_STATE_BYTES)? else { continue };
    let mut kept = Vec::with_capacity(bytes.len());
    let mut dropped = 0;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
      // A plain substring test: a damaged line that names the path goes too.
      if paths.iter().any(|p| memchr::memmem::find(line, p.as_bytes()).is_some()) {
        dropped += 1;
      } else {
        kept.extend_from_slice(line);
      }
    }
    if dropped > 0 {
      root.write_atomic(name, &kept, None)?;
      removed += dropped;
    }
  }
  Ok(removed)
}

/// The paths whose current winner is a `write` record of `session_id` with one of `seqs`:
/// what those records put in the target, found after the records themselves may be gone
/// (pruned). Reads every shard of the consolidation state (a run's cost grows with every path
/// ever applied), so it is for rare events, such as another machine forgetting what those
/// records wrote. Changes nothing; no state yet is no paths.
pub fn paths_written_by(wal_dir: &Path, session_id: &str, seqs: &HashSet<u64>) -> Result<Vec<String>> {
  let Some(root) = super::reader::open_wal_dir(wal_dir)? else { return Ok(Vec::new()) };
  if seqs.is_empty() || root.kind_of(STATE_FILE)?.is_none() {
    return Ok(Vec::new());
  }
  ensure_regular_or_absent(&root, STATE_FILE)?;
  let mut state = State::load(&root)?;
  state.load_all_shards(&root)?;
  let mut paths: Vec<String> = state
    .winners()
    .filter(|(_, w)| w.op == "write" && w.session_id == session_id && seqs.contains(&w.seq))
    .map(|(p, _)| p.to_string())
    .collect();
  paths.sort();
  Ok(paths)
}

/// Errors that come from what a record names rather than from the disk: retrying cannot help.
fn cannot_apply(error: &LoaError) -> bool {
  match error {
    LoaError::NotRegularFile { .. } | LoaError::PathOutsideRoot(_) | LoaError::InvalidArgument(_) => true,
    LoaError::Io { source, .. } => {
      matches!(source.raw_os_error(), Some(libc::ENAMETOOLONG | libc::ENOTDIR | libc::EISDIR | libc::ELOOP))
    }
    _ => false,
  }
}

/// The dead-letter line of a record that could not be applied: the whole record (`whole`), or,
/// for a refused one, its data only hashed and its meta left out.
fn dead_letter_line(record: &Record, letter: &DeadLetter, whole: bool) -> Result<Vec<u8>> {
  let data = record.data.as_deref();
  let line = DeadLetterLine {
    path: &letter.path,
    session_id: &letter.session_id,
    seq: letter.seq,
    ts: record.ts_ms,
    op: &record.op,
    code: letter.code,
    reason: &letter.reason,
    meta_json: record.meta.as_deref().filter(|_| whole),
    data_hex: data.filter(|_| whole).map(hex::encode),
    data_sha256: data.filter(|_| !whole).map(|d| hex::encode(Sha256::digest(d))),
  };
  let mut out = serde_json::to_vec(&line).map_err(|e| LoaError::Internal(e.to_string()))?;
  out.push(b'\n');
  Ok(out)
}

/// Writes or deletes `path` below `target`, never through a symlink. Before the first write into
/// a directory, stale temp files of crashed atomic writes are removed from it.
fn apply(target: &StateDir, path: &str, record: &Record, cleaned: &mut HashSet<PathBuf>, clean: bool) -> Result<()> {
  let mut parts = relative_components(Path::new(path))?;
  let name: OsString = parts.pop().ok_or_else(|| LoaError::Internal("empty path components".into()))?;
  let parent: PathBuf = parts.iter().collect();
  let create = record.op != "delete";
  let dir = if parts.is_empty() { Some(target.try_clone()?) } else { target.descend(&parent, create)? };
  let Some(dir) = dir else { return Ok(()) }; // deleting below a directory that does not exist
  if record.op == "delete" {
    return match dir.kind_of(&name)? {
      None => Ok(()),
      Some(FileType::RegularFile) => {
        dir.remove_file(&name)?;
        dir.sync()
      }
      Some(kind) => {
        Err(LoaError::NotRegularFile { path: dir.child_path(&name).display().to_string(), kind: kind_name(kind) })
      }
    };
  }
  if clean && cleaned.insert(parent) {
    let _ = dir.clean_stale_temps(); // housekeeping: a failure here is not the record's
  }
  dir.write_atomic(&name, record.data.as_deref().unwrap_or_default(), None)
}

/// Appends whole lines to the append-only log `name`: durable before returning, and on failure
/// cut back so no partial line stays (a partial line left by a crash is ended first).
fn append_lines(root: &StateDir, name: &str, lines: &[u8]) -> Result<()> {
  let created = root.kind_of(name)?.is_none();
  let mut file = root.open_file(name, OpenMode::APPEND)?;
  let before = file.len()?;
  let mut text = Vec::with_capacity(lines.len() + 1);
  if before > 0 {
    let mut last = [0u8];
    file.read_at(&mut last, before - 1)?;
    if last[0] != b'\n' {
      text.push(b'\n');
    }
  }
  text.extend_from_slice(lines);
  if let Err(e) = file.write_all(&text).and_then(|_| file.sync_data()) {
    let _ = file.set_len(before);
    return Err(e);
  }
  if created {
    root.sync()?;
  }
  Ok(())
}

/// Removes sealed segments whose records are all applied (and, with `shipped`, all shipped). A
/// segment is sealed once a newer one exists, and its records are exactly the seqs below the
/// next segment's first seq.
fn prune(
  sessions: &StateDir,
  applied: &BTreeMap<String, u64>,
  shipped: Option<&BTreeMap<String, u64>>,
) -> Result<usize> {
  let mut removed = 0;
  for (session, &applied_to) in applied {
    let watermark = match shipped {
      Some(marks) => applied_to.min(marks.get(session).copied().unwrap_or(0)),
      None => applied_to,
    };
    let Some(sdir) = sessions.subdir(session)? else { continue };
    let segments = segments_in(&sdir)?;
    let mut removed_here = 0;
    for pair in segments.windows(2) {
      let (sealed, next) = (&pair[0], &pair[1]);
      if next.first_seq.saturating_sub(1) > watermark {
        break;
      }
      if !sealed.is_regular() {
        continue; // not ours to remove
      }
      if sdir.remove_file(&sealed.name)? {
        removed_here += 1;
      }
    }
    if removed_here > 0 {
      sdir.sync()?;
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
    std::fs::create_dir_all(&sdir).unwrap();
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
    std::fs::write(sdir.join(reader::segment_file_name(1)), bytes).unwrap();
    consolidate(wal_dir, target, &ConsolidateOptions::default()).unwrap()
  }
}
