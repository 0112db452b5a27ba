//! Forgetting: a memory removed from every file of the workspace, provably.
//!
//! After [`run`] returns, no file under the workspace holds the memory's text, any sentence of
//! it, or a word of it that no other memory holds, nor its id (the sha256 of its content, which
//! would confirm a guess):
//!
//! 1. **WAL.** Every session whose segments hold the memory is rewritten (see
//!    [`crate::wal::rewrite`]): the record is replaced by a tombstone record (op `tombstone`,
//!    meta `{"tombstone": "<keyed id>"}`, same seq and time, no path, no data), each segment
//!    atomically. This needs each such session's lock: the caller's own session is suspended
//!    (its lock handed over, never released, see [`crate::wal::Wal::suspend`]) and resumed
//!    after; another session's lock is tried once, and when a live writer holds it the call
//!    fails with `E_WAL_LOCKED` before anything is changed. The memory consolidation lock is
//!    held throughout, so no consolidation runs meanwhile.
//! 2. **Consolidation state.** The path's entry in `consolidation.json`, and every line of
//!    `conflicts.jsonl` and the WAL's `dead-letter.jsonl` naming it.
//! 3. **Derived files.** The record file `memory/<id>.json`, its entry in learnings.json,
//!    NOTES.md's two regions (rendered again from the remaining memories), the memory summary,
//!    the search index (base rewritten without it, log emptied: no term only it held stays
//!    in the vocabulary), and a decision's copies in the ledger's beads (see
//!    [`crate::ledger::beads::forget_memories`]).
//! 4. **Tombstone and audit.** A tombstone (see [`super::tombstone`]) is recorded, and an event
//!    `memory.forget` (actor `user`; `system` for expiry) with the tombstone ids and counts is
//!    appended to the workspace's hash-chained audit log (`audit.dir`). The audit log is opened
//!    and its end checked before anything changes, so a log that cannot be continued (another
//!    key, damage) fails the call with nothing changed.
//!
//! 5. **Copies kept beside the live files** (see [`super::traces`]): recovery's evidence and
//!    staging directories, quarantined files, the dead-letter queue; and the Markdown files the
//!    memory was imported from (see [`super::import::forget_imported`]).
//! 6. **The signed manifest**, which listed `memory/<id>.json`: sealed again when the caller
//!    gave a key ring, else rewritten without the entry and without its signature.
//!
//! Every rewrite is atomic (temp file, fsync, rename, directory fsync); the old bytes are no
//! longer in any file once the call returns. What this does not reach is listed in
//! `docs/search.md` (copies made elsewhere, blocks the file system has freed but not
//! overwritten).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::audit::{Actor, AuditEvent, AuditLog, AuditOptions};
use crate::error::{LoaError, Result};
use crate::fsutil::{OpenMode, StateDir};
use crate::lock::lock_file;
use crate::search::SearchIndex;
use crate::timestamp::{format_ms, now_ms};
use crate::wal::format::Record;
use crate::wal::reader::{list_sessions, read_session};
use crate::wal::{self, SessionLock, Wal, WalOptions};

use super::admit::{content_id_of, memory_id_of};
use super::layout::Layout;
use super::seal::SealRequest;
use super::types::{record_name_hash, record_path, ForgetOutcome, MEMORY_DIR};
use super::{learnings, tombstone, traces};

/// The session of the store that forgets, if any: its log is suspended while its segments are
/// rewritten.
#[derive(Clone, Copy)]
pub(super) struct Own<'a> {
  pub wal: &'a Mutex<Option<Arc<Wal>>>,
  pub options: &'a WalOptions,
}

/// Why memories are forgotten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reason {
  Forget,
  Expired,
}

impl Reason {
  fn as_str(self) -> &'static str {
    match self {
      Reason::Forget => "forget",
      Reason::Expired => "expired",
    }
  }

  /// Whether a log another process holds is left for later (expiry) rather than failing the
  /// call with `E_WAL_LOCKED` before anything changes (a forget the caller asked for).
  fn defers_locked_logs(self) -> bool {
    self == Reason::Expired
  }
}

const LOCK_FILE: &str = "memory-consolidate.lock";

/// The op of the record that replaces a forgotten memory's record in the WAL (same seq and
/// time, no path, no data): what a machine mirroring another's log looks for (see
/// [`super::forget_records`]).
pub const TOMBSTONE_OP: &str = "tombstone";

/// The record that replaces `record` (a memory's write) in a log once the memory is forgotten:
/// same seq, time and session, op [`TOMBSTONE_OP`], meta `{"tombstone": "<keyed id>"}`, no path,
/// no data. One definition, so that a copy of the log rewritten elsewhere (the replica, see
/// [`super::Forgotten`]) holds exactly the records the local log does.
pub(super) fn tombstone_record(record: &Record, tombstone: &str) -> Record {
  Record {
    seq: record.seq,
    ts_ms: record.ts_ms,
    session_id: record.session_id.clone(),
    op: TOMBSTONE_OP.into(),
    path: None,
    meta: Some(serde_json::json!({ "tombstone": tombstone }).to_string()),
    data: None,
  }
}

/// Forgets the memories `ids` (see the module docs). `index`: the store's open index, else the
/// workspace's index directory is opened if it exists. The caller holds no consolidation lock.
pub(super) fn run(
  layout: &Layout,
  own: Option<Own>,
  index: Option<&SearchIndex>,
  ids: &[String],
  reason: Reason,
  audit_key: Option<&zeroize::Zeroizing<Vec<u8>>>,
  seal: Option<&SealRequest>,
) -> Result<ForgetOutcome> {
  let root = layout.root()?;
  let wal_dir =
    layout.dir_in(&root, &layout.wal, true)?.ok_or_else(|| LoaError::Internal("WAL dir vanished".into()))?;
  let consolidation = wal_dir.open_file(LOCK_FILE, OpenMode::CREATE)?;
  lock_file(consolidation.file(), layout.lock_timeout, "memory consolidation")?;
  run_locked(layout, own, index, ids, reason, audit_key, seal)
}

/// Forgets the memories that the records `seqs` of `session` wrote: those records still in the
/// session's log, and, for records consolidation applied (and retention may have pruned since),
/// the memory paths whose winner they are in the consolidation state. For replication: another
/// machine forgot them and its log, mirrored here as `session`, now holds tombstone records at
/// those seqs. The lookup and the forgetting happen under the memory consolidation lock, so no
/// consolidation applies one of those records in between. A memory another record (of any
/// session) wrote later, with the same content, is the same memory and is forgotten too.
pub(super) fn run_for_records(
  layout: &Layout,
  session: &str,
  seqs: &HashSet<u64>,
  audit_key: Option<&zeroize::Zeroizing<Vec<u8>>>,
) -> Result<ForgetOutcome> {
  wal::reader::validate_session_id(session)?;
  let root = layout.root()?;
  let wal_dir =
    layout.dir_in(&root, &layout.wal, true)?.ok_or_else(|| LoaError::Internal("WAL dir vanished".into()))?;
  let consolidation = wal_dir.open_file(LOCK_FILE, OpenMode::CREATE)?;
  lock_file(consolidation.file(), layout.lock_timeout, "memory consolidation")?;
  let wal_path = layout.wal_path();
  let mut ids: Vec<String> = Vec::new();
  if list_sessions(&wal_path)?.iter().any(|s| s == session) {
    for record in read_session(&wal_path, session)?.records {
      if seqs.contains(&record.seq) {
        ids.extend(memory_id_of(&record));
      }
    }
  }
  for path in wal::paths_written_by(&wal_path, session, seqs)? {
    let id = path.strip_prefix(MEMORY_DIR).and_then(|p| p.strip_prefix('/')).and_then(record_name_hash);
    ids.extend(id.map(str::to_string));
  }
  if ids.is_empty() {
    return Ok(ForgetOutcome { applied: true, ..Default::default() });
  }
  run_locked(layout, None, None, &ids, Reason::Forget, audit_key, None)
}

/// [`run`] for a caller that already holds the memory consolidation lock.
pub(super) fn run_locked(
  layout: &Layout,
  own: Option<Own>,
  index: Option<&SearchIndex>,
  ids: &[String],
  reason: Reason,
  audit_key: Option<&zeroize::Zeroizing<Vec<u8>>>,
  seal: Option<&SealRequest>,
) -> Result<ForgetOutcome> {
  let mut ids: Vec<String> =
    ids.iter().filter(|id| record_name_hash(&format!("{id}.json")).is_some()).cloned().collect();
  ids.sort();
  ids.dedup();
  let mut outcome = ForgetOutcome { applied: true, ..Default::default() };
  if ids.is_empty() {
    return Ok(outcome);
  }
  let wanted: HashSet<&str> = ids.iter().map(String::as_str).collect();
  // A seal that cannot be made fails the call before anything changes; a degraded workspace
  // is never sealed (its grimoire did not verify), so its manifest is left unsigned instead.
  let seal = match seal.map(|request| super::seal::preflight(layout, request)) {
    Some(Ok(())) => seal,
    Some(Err(LoaError::Degraded(_))) | None => None,
    Some(Err(e)) => return Err(e),
  };
  // What the copies kept outside the live files are recognised by (the stored content), and
  // the Markdown files the memories were imported from: read before anything changes.
  let mut seen = Seen::default();
  if let Some(memory_dir) = layout.memory_dir()? {
    for id in &ids {
      if let Ok(Some(bytes)) = memory_dir.read(format!("{id}.json"), super::types::MAX_RECORD_BYTES) {
        seen.note(&bytes);
      }
    }
  }
  // 1. The WAL: find the sessions holding the memories, take their locks, plan, then apply.
  let wal_path = layout.wal_path();
  let own_session = own.as_ref().map(|o| o.options.session_id.clone());
  let mut affected = Vec::new();
  // Expiry only: the memories each session's log holds, for a session another process holds.
  let mut held: HashMap<String, Vec<String>> = HashMap::new();
  for session in list_sessions(&wal_path)? {
    let read = read_session(&wal_path, &session)?;
    let mut hashes: Vec<String> = Vec::new();
    for record in read.records.iter() {
      let Some(hash) = content_id_of(record).filter(|h| wanted.contains(h.as_str())) else { continue };
      hashes.push(hash);
      seen.note(record.data.as_deref().unwrap_or_default());
    }
    if !hashes.is_empty() {
      held.insert(session.clone(), hashes);
      affected.push(session);
    }
  }
  let mut locks: Vec<SessionLock> = Vec::new();
  let mut deferred: Vec<String> = Vec::new();
  let mut suspended = false;
  for session in &affected {
    if own_session.as_deref() == Some(session.as_str()) {
      continue;
    }
    match SessionLock::take(&wal_path, session, Duration::ZERO) {
      Ok(lock) => locks.push(lock),
      // An expired memory in a log another process has open: removed from everything else
      // now, from that log by a later run (see `super::pending`); forgetting by request fails.
      Err(e) if reason.defers_locked_logs() && e.code() == "E_WAL_LOCKED" => deferred.push(session.clone()),
      Err(e) => return Err(e),
    }
  }
  let key = tombstone::key(layout, true)?.expect("created");
  let tomb_of = |id: &str| tombstone::tombstone_id(&key, id);

  // Before any change (the locks are held, nothing is written yet): the key, and an audit log
  // that can take the event.
  let audit_dir = layout.workspace.join(&layout.audit);
  let audit = AuditLog::open(
    &audit_dir,
    AuditOptions {
      max_segment_bytes: layout.audit_segment_max_bytes,
      hmac_key: audit_key.cloned(),
      lock_timeout: layout.lock_timeout,
    },
  )?;
  audit.head()?;

  if let (Some(own), true) = (&own, own_session.as_ref().is_some_and(|s| affected.contains(s))) {
    let wal = own.wal.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if let Some(wal) = wal {
      locks.push(wal.suspend()?);
      suspended = true;
    }
  }
  let resume = |locks: &mut Vec<SessionLock>| -> Result<()> {
    if let (true, Some(own)) = (suspended, &own) {
      let at = locks.iter().position(|l| Some(l.session_id()) == own_session.as_deref());
      if let Some(at) = at {
        let lock = locks.remove(at);
        let mut slot = own.wal.lock().unwrap_or_else(|p| p.into_inner());
        match Wal::resume(lock, own.options.clone()) {
          Ok(wal) => *slot = Some(Arc::new(wal)),
          Err(e) => {
            *slot = None;
            return Err(e);
          }
        }
      }
    }
    Ok(())
  };
  if !deferred.is_empty() {
    // Recorded before anything changes: a run cut short after this still leaves the removal owed.
    let owed: Vec<(String, Vec<String>)> =
      deferred.iter().map(|s| (s.clone(), held.get(s).into_iter().flatten().map(|h| tomb_of(h)).collect())).collect();
    if let Err(e) =
      layout.root().and_then(|root| wal_dir_of(layout, &root)).and_then(|dir| super::pending::defer(&dir, &owed))
    {
      resume(&mut locks)?;
      return Err(e);
    }
  }
  let mut replace = |record: &Record| -> Option<Record> {
    let hash = content_id_of(record)?;
    wanted.contains(hash.as_str()).then(|| tombstone_record(record, &tomb_of(&hash)))
  };
  let mut plans = Vec::new();
  for lock in &locks {
    match lock.plan(&mut replace) {
      Ok(plan) => plans.push(plan),
      Err(e) => {
        resume(&mut locks)?;
        return Err(e);
      }
    }
  }
  let mut failure = None;
  for (lock, plan) in locks.iter().zip(plans) {
    match lock.apply(plan) {
      Ok(n) => outcome.wal_records += n,
      Err(e) => {
        failure = Some(e);
        break;
      }
    }
  }
  resume(&mut locks)?;
  drop(locks);
  if let Some(e) = failure {
    return Err(e);
  }

  // 2. The consolidation's own files.
  let paths: Vec<String> = ids.iter().map(|id| record_path(id)).collect();
  outcome.files_changed += wal::forget_paths(&wal_path, &paths, layout.lock_timeout)?;

  // 3. Derived files.
  let root = layout.root()?;
  let grimoire =
    layout.dir_in(&root, &layout.grimoire, true)?.ok_or_else(|| LoaError::Internal("grimoire vanished".into()))?;
  if let Some(memory_dir) = grimoire.subdir(MEMORY_DIR)? {
    let mut removed = 0;
    for id in &ids {
      if memory_dir.remove_file(format!("{id}.json"))? {
        removed += 1;
      }
    }
    if removed > 0 {
      memory_dir.sync()?;
      outcome.files_changed += removed;
    }
    memory_dir.clean_stale_temps()?;
  }
  match index {
    Some(index) => {
      super::search::remove_from_index(layout, index, wanted.iter().copied())?;
    }
    None => {
      if let Some(dir) = grimoire.subdir(super::search::INDEX_DIR)? {
        let known = super::store::known_hashes(layout)?;
        let index = super::search::open_index_in(layout, dir, &known)?;
        super::search::remove_from_index(layout, &index, wanted.iter().copied())?;
      }
    }
  }
  if let Some(dir) = layout.dir_in(&root, &layout.learnings.dir, false)? {
    if let Some(mut store) = learnings::Learnings::open(&dir, &layout.learnings.name, false)? {
      if store.remove(&dir, &layout.learnings.name, &wanted)? > 0 {
        store.save(&dir, &layout.learnings.name)?;
        outcome.files_changed += 1;
      }
    }
  }
  if super::consolidate::rederive(layout, &root, &grimoire)? {
    outcome.files_changed += 1;
  }
  outcome.files_changed += forget_bead_copies(&root, &wanted, layout)?;

  // 4. The copies the project keeps besides the live files (see `traces`).
  let needles = traces::Needles::new(&ids, &seen.contents)?;
  outcome.copies_removed.extend(traces::sweep_recovery_copies(layout, &root, &needles)?);
  outcome.copies_removed.extend(traces::sweep_quarantined(layout, &root, &needles)?);
  let letters =
    crate::dead_letter::DeadLetterQueue::new(&layout.workspace, Some(layout.lock_timeout.as_millis() as u64));
  outcome.dead_letters = letters.forget_memories(&wanted, &|line| needles.in_bytes(line))?;
  outcome.imported = super::import::forget_imported(layout, &wal_dir_of(layout, &root)?, &wanted, &seen.imported_from)?;

  // 5. Tombstones and the audit event.
  outcome.tombstones = ids.iter().map(|id| tomb_of(id)).collect();
  let at = format_ms(now_ms());
  tombstone::record(&grimoire, &outcome.tombstones, &at, reason.as_str())?;
  audit.append(&AuditEvent {
    action: "memory.forget".into(),
    actor: if reason == Reason::Forget { Actor::User } else { Actor::System },
    details: Some(serde_json::json!({
      "reason": reason.as_str(),
      "tombstones": outcome.tombstones,
      "walRecords": outcome.wal_records,
      "filesChanged": outcome.files_changed,
      "copiesRemoved": outcome.copies_removed,
      "deadLetters": outcome.dead_letters,
      "importedFilesEdited": outcome.imported.iter().filter(|c| c.removed).count(),
    })),
  })?;
  // 6. The manifest listed the memories: sealed again, or rewritten without them, unsigned.
  match seal {
    Some(request) => outcome.sealed = Some(super::seal::seal(layout, index, request)?),
    None => {
      if traces::strip_manifest(layout, &grimoire, &ids, &needles)? {
        outcome.manifest_unsigned = true;
        outcome.files_changed += 1;
      }
    }
  }
  for dir in [Some(&grimoire), Some(&wal_dir_of(layout, &root)?)].into_iter().flatten() {
    dir.clean_stale_temps()?;
  }
  Ok(outcome)
}

/// The copies the ledger's checkpoint made of decision memories in its beads
/// (`.beads/<id>.yaml`: the decision entries and their test scenarios).
fn forget_bead_copies(root: &StateDir, wanted: &HashSet<&str>, layout: &Layout) -> Result<usize> {
  crate::ledger::beads::forget_memories(root, wanted, layout.lock_timeout)
}

/// What the forgotten memories' records said, collected before they are removed.
#[derive(Default)]
struct Seen {
  contents: Vec<String>,
  imported_from: Vec<String>,
}

impl Seen {
  /// Notes a memory record's JSON (a record file, or a WAL record's data); anything else is
  /// ignored.
  fn note(&mut self, bytes: &[u8]) {
    let Ok(record) = serde_json::from_slice::<super::types::MemoryRecord>(bytes) else { return };
    let from = record.metadata.as_ref().and_then(|m| m.get("importedFrom")).and_then(|f| f.as_str());
    if let Some(from) = from {
      if !self.imported_from.iter().any(|f| f == from) {
        self.imported_from.push(from.to_string());
      }
    }
    if !self.contents.contains(&record.content) {
      self.contents.push(record.content);
    }
  }
}

fn wal_dir_of(layout: &Layout, root: &StateDir) -> Result<StateDir> {
  layout.dir_in(root, &layout.wal, false)?.ok_or_else(|| LoaError::Internal("WAL dir vanished".into()))
}
