//! Removals the WAL still owes: bytes of expired memories in the log of a session another
//! process holds open.
//!
//! Expiry runs inside every consolidation, and a memory may expire while the session that
//! captured it is still open in another process (another chat). Forgetting it from that
//! session's log needs the session's lock, which the other process holds for as long as it
//! runs; waiting for it would stall the consolidation, and failing would leave the WAL applied
//! but the grimoire unsealed. So expiry removes the memory from everything it can reach now (the
//! grimoire's files, the index, the consolidation state, every log it can lock) and, for each
//! session it could not lock, records here which memories that log still holds. The memory is
//! hidden from every read from the moment it expires whatever this file says (reads judge
//! `expiresAt`); this file only says which bytes are still to be removed.
//!
//! Every consolidation starts (under the consolidation lock, before anything is applied) by
//! trying again: a session whose lock is free now, or that is the consolidating store's own
//! (its log suspended as `forget` does), has those records replaced by tombstone records (see
//! [`super::forget`]), and its entry goes. A session that no longer exists (retention removed
//! its segments) has nothing left to remove.
//!
//! `<wal>/forget-pending.json`, written atomically: `{"version": 1, "sessions": {"<session id>":
//! ["<tombstone id>", ...]}}`. Memories are named by their keyed tombstone ids (see
//! [`super::tombstone`]), never by content or plain id: the file confirms nothing without the
//! tombstone key. A file of another version, or damaged, is moved aside (`*.corrupt-*`) and read
//! as empty: what it listed stays hidden (expired) but is then left in those logs until
//! retention removes their segments.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{LoaError, Result};
use crate::fsutil::StateDir;
use crate::wal::format::Record;
use crate::wal::reader::list_sessions;
use crate::wal::{SessionLock, Wal};

use super::admit::content_id_of;
use super::forget::{tombstone_record, Own};
use super::layout::Layout;
use super::tombstone;

/// The file, in the WAL directory.
pub const PENDING_FILE: &str = "forget-pending.json";
/// Version of the file written and read.
pub const PENDING_VERSION: u32 = 1;
const MAX_PENDING_BYTES: u64 = 64 * 1024 * 1024;

/// Session id -> keyed tombstone ids of the memories its log still holds.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Pending {
  version: u32,
  sessions: BTreeMap<String, BTreeSet<String>>,
}

fn load(wal_dir: &StateDir) -> Result<Pending> {
  let Some(bytes) = wal_dir.read(PENDING_FILE, MAX_PENDING_BYTES)? else { return Ok(Pending::default()) };
  match serde_json::from_slice::<Pending>(&bytes) {
    Ok(p) if p.version == PENDING_VERSION => Ok(p),
    _ => {
      wal_dir.quarantine(PENDING_FILE)?;
      Ok(Pending::default())
    }
  }
}

fn save(wal_dir: &StateDir, pending: &Pending) -> Result<()> {
  if pending.sessions.is_empty() {
    if wal_dir.remove_file(PENDING_FILE)? {
      wal_dir.sync()?;
    }
    return Ok(());
  }
  let mut bytes = serde_json::to_vec(&Pending { version: PENDING_VERSION, sessions: pending.sessions.clone() })
    .map_err(|e| LoaError::Internal(e.to_string()))?;
  bytes.push(b'\n');
  wal_dir.write_atomic(PENDING_FILE, &bytes, None)
}

/// Records that the logs of `sessions` still hold the memories of these tombstones. The caller
/// holds the consolidation lock.
pub(super) fn defer(wal_dir: &StateDir, sessions: &[(String, Vec<String>)]) -> Result<()> {
  if sessions.iter().all(|(_, t)| t.is_empty()) {
    return Ok(());
  }
  let mut pending = load(wal_dir)?;
  for (session, tombstones) in sessions {
    pending.sessions.entry(session.clone()).or_default().extend(tombstones.iter().cloned());
  }
  save(wal_dir, &pending)
}

/// How many (session, memory) removals are still owed.
pub(super) fn count(wal_dir: &StateDir) -> Result<usize> {
  Ok(load(wal_dir)?.sessions.values().map(BTreeSet::len).sum())
}

/// Removes what earlier runs deferred from every listed log that can be locked now (see the
/// module docs). The caller holds the consolidation lock; `own` is its store's session.
pub(super) fn complete(layout: &Layout, wal_dir: &StateDir, own: Option<Own>) -> Result<()> {
  complete_sessions(layout, wal_dir, own, false)
}

/// As a store closes: what its own log still owes is removed while it still holds the lock,
/// when no consolidation runs (the consolidation lock is tried once, never waited for). Best
/// effort: anything left is removed by the next consolidation, which reports its errors.
pub(super) fn complete_own_at_close(layout: &Layout, own: Own) {
  let Ok(Some(wal_dir)) = layout.dir(&layout.wal, false) else { return };
  if !matches!(wal_dir.kind_of(PENDING_FILE), Ok(Some(_))) {
    return;
  }
  let Ok(file) = wal_dir.open_file(super::consolidate::LOCK_FILE, crate::fsutil::OpenMode::CREATE) else { return };
  if crate::lock::lock_file(file.file(), Duration::ZERO, "memory consolidation").is_err() {
    return;
  }
  let _ = complete_sessions(layout, &wal_dir, Some(own), true);
}

fn complete_sessions(layout: &Layout, wal_dir: &StateDir, own: Option<Own>, only_own: bool) -> Result<()> {
  let mut pending = load(wal_dir)?;
  if pending.sessions.is_empty() {
    return Ok(());
  }
  let wal_path = layout.wal_path();
  let existing: BTreeSet<String> = list_sessions(&wal_path)?.into_iter().collect();
  let key = tombstone::key(layout, false)?;
  let own_session = own.as_ref().map(|o| o.options.session_id.as_str());
  let sessions: Vec<String> =
    pending.sessions.keys().filter(|s| !only_own || own_session == Some(s.as_str())).cloned().collect();
  for session in sessions {
    let (Some(key), true) = (&key, existing.contains(&session)) else {
      // Gone (or no key to match with, so nothing this file names can be found): nothing left.
      pending.sessions.remove(&session);
      continue;
    };
    let tombstones = pending.sessions.get(&session).cloned().unwrap_or_default();
    let mut replace = |record: &Record| -> Option<Record> {
      let tomb = tombstone::tombstone_id(key, &content_id_of(record)?);
      tombstones.contains(&tomb).then(|| tombstone_record(record, &tomb))
    };
    let own_wal = match &own {
      Some(o) if own_session == Some(session.as_str()) => o.wal.lock().unwrap_or_else(|p| p.into_inner()).clone(),
      _ => None,
    };
    let done = match (own_wal, &own) {
      (Some(wal), Some(own)) => rewrite_own(own, &wal, &mut replace),
      _ => match SessionLock::take(&wal_path, &session, Duration::ZERO) {
        Ok(lock) => lock.plan(&mut replace).and_then(|plan| lock.apply(plan)).map(drop),
        // Still held by its process: tried again by the next run.
        Err(e) if e.code() == "E_WAL_LOCKED" => continue,
        Err(e) => Err(e),
      },
    };
    done?;
    pending.sessions.remove(&session);
  }
  save(wal_dir, &pending)
}

/// Rewrites the calling store's own log: suspended (its lock handed over, never released),
/// rewritten, resumed.
fn rewrite_own(own: &Own, wal: &Wal, replace: &mut dyn FnMut(&Record) -> Option<Record>) -> Result<()> {
  let lock = wal.suspend()?;
  let done = lock.plan(replace).and_then(|plan| lock.apply(plan));
  let mut slot = own.wal.lock().unwrap_or_else(|p| p.into_inner());
  match Wal::resume(lock, own.options.clone()) {
    Ok(wal) => *slot = Some(std::sync::Arc::new(wal)),
    Err(e) => {
      *slot = None;
      return Err(e);
    }
  }
  done.map(drop)
}
