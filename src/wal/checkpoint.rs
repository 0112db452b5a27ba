//! The WAL checkpoint: a copy of a WAL directory's consolidation state (the head
//! `consolidation.json` and its shards, see [`super::state`]), taken whole under the
//! consolidation lock, as replication ships it, and written back into a WAL directory that has
//! no state of its own (a workspace restored from a replica).
//!
//! Both sides check what they handle: the head must be a version 2 head whose session ids are
//! plain session ids; each shard must be named `<xxx>.json` (three lowercase hex digits), be a
//! version 2 shard, and hold only paths that fall in that shard and are plain relative paths.
//! Anything else is `E_STATE_CORRUPT` and nothing is written.
//!
//! **Consistency with the WAL.** A restored head must not claim records the WAL does not hold:
//! a session's next record would get a seq the head calls applied and never be applied. So
//! [`restore_checkpoint`] lowers each session's watermark to the last seq the WAL directory
//! holds for it (dropping the session when it holds none), and reports which it lowered. The
//! winners stay: they describe what the grimoire restored with the checkpoint holds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use rustix::fs::FileType;

use super::consolidate::LOCK_FILE;
use super::reader::{read_segment, segments_in, validate_session_id, SESSIONS_DIR};
use super::state::{
  shard_name, shard_of, Head, Shard, MAX_SHARD_BYTES, MAX_STATE_BYTES, SHARDS, SHARD_DIR, STATE_FILE, STATE_VERSION,
};
use crate::error::{LoaError, Result};
use crate::fsutil::{kind_name, relative_components, StateDir};
use crate::lock::lock_in;

/// A consolidation state as bytes: the head and every shard, by name (`<xxx>.json`), sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
  pub head: Vec<u8>,
  pub shards: Vec<(String, Vec<u8>)>,
}

/// What [`restore_checkpoint`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restored {
  /// Written; the sessions whose watermark was lowered to what the WAL holds (see the module
  /// docs).
  Written { lowered: Vec<String> },
  /// The WAL directory has a consolidation state (a head or a shard): nothing was written.
  StateExists,
}

fn corrupt(what: &str, reason: impl Into<String>) -> LoaError {
  LoaError::StateCorrupt { path: format!("checkpoint {what}"), reason: reason.into() }
}

/// The shard number of a shard file name, if it is one.
fn shard_number(name: &str) -> Option<u16> {
  let stem = name.strip_suffix(".json")?;
  if stem.len() != 3 || !stem.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
    return None;
  }
  u16::from_str_radix(stem, 16).ok().filter(|&n| n < SHARDS && shard_name(n) == name)
}

fn parse_head(bytes: &[u8]) -> Result<Head> {
  #[derive(serde::Deserialize)]
  struct Versioned {
    version: u32,
  }
  let version: Versioned = serde_json::from_slice(bytes).map_err(|e| corrupt(STATE_FILE, e.to_string()))?;
  if version.version != STATE_VERSION {
    return Err(corrupt(STATE_FILE, format!("version {} is not version {STATE_VERSION}", version.version)));
  }
  let head: Head = serde_json::from_slice(bytes).map_err(|e| corrupt(STATE_FILE, e.to_string()))?;
  if head.sessions.keys().any(|s| validate_session_id(s).is_err()) {
    return Err(corrupt(STATE_FILE, "a session id is not a plain session id"));
  }
  Ok(head)
}

impl Checkpoint {
  /// Checks the head and every shard (see the module docs) and returns the head.
  pub fn check(&self) -> Result<()> {
    self.checked_head().map(|_| ())
  }

  /// The highest seq applied per session, as the (checked) head records it.
  pub fn sessions(&self) -> Result<BTreeMap<String, u64>> {
    Ok(parse_head(&self.head)?.sessions)
  }

  fn checked_head(&self) -> Result<Head> {
    let head = parse_head(&self.head)?;
    let mut seen = BTreeSet::new();
    for (name, bytes) in &self.shards {
      let Some(number) = shard_number(name).filter(|n| seen.insert(*n)) else {
        return Err(corrupt("shard", "a shard name is not <xxx>.json or is listed twice"));
      };
      if bytes.len() as u64 > MAX_SHARD_BYTES {
        return Err(corrupt(name, "over the shard size limit"));
      }
      let shard: Shard = serde_json::from_slice(bytes).map_err(|e| corrupt(name, e.to_string()))?;
      if shard.version != STATE_VERSION {
        return Err(corrupt(name, format!("version {} is not version {STATE_VERSION}", shard.version)));
      }
      for path in shard.paths.keys() {
        if shard_of(path) != number || relative_components(Path::new(path)).is_err() {
          return Err(corrupt(name, "holds a path that is not a plain relative path of this shard"));
        }
      }
    }
    Ok(head)
  }
}

/// A copy of the consolidation state of the WAL directory `wal`, taken under its consolidation
/// lock (so no run commits halfway through it); `None` when it has no head. Temp files in the
/// shard directory are not part of it; a shard name that is not a regular file is
/// `E_NOT_REGULAR_FILE`; sizes are bounded as consolidation bounds them; the copy is checked
/// ([`Checkpoint::check`]).
pub fn read_checkpoint(wal: &StateDir, lock_timeout: Duration) -> Result<Option<Checkpoint>> {
  let _lock = lock_in(wal, LOCK_FILE, lock_timeout, "WAL consolidation")?;
  let Some(head) = wal.read(STATE_FILE, MAX_STATE_BYTES)? else { return Ok(None) };
  let mut shards = Vec::new();
  if let Some(dir) = wal.subdir(SHARD_DIR)? {
    for entry in dir.entries()? {
      let Some(name) = entry.name_str().filter(|n| shard_number(n).is_some()) else { continue };
      if entry.file_type != FileType::RegularFile {
        return Err(LoaError::NotRegularFile {
          path: dir.child_path(name).display().to_string(),
          kind: kind_name(entry.file_type),
        });
      }
      // Gone since listed: a run removed an emptied shard, which the head then no longer needs.
      let Some(bytes) = dir.read(name, MAX_SHARD_BYTES)? else { continue };
      shards.push((name.to_string(), bytes));
    }
  }
  shards.sort();
  let checkpoint = Checkpoint { head, shards };
  checkpoint.check()?;
  Ok(Some(checkpoint))
}

/// The last seq the WAL directory holds for `session` (0 for none).
fn last_seq(sessions: Option<&StateDir>, session: &str) -> Result<u64> {
  let Some(sessions) = sessions else { return Ok(0) };
  let Some(sdir) = sessions.subdir(session)? else { return Ok(0) };
  for segment in segments_in(&sdir)?.iter().rev() {
    if let Some((scan, _)) = read_segment(&sdir, segment)? {
      if let Some(record) = scan.records.last() {
        return Ok(record.seq);
      }
    }
  }
  Ok(0)
}

/// Writes `checkpoint` as the consolidation state of the WAL directory `wal`, which must have
/// none (else [`Restored::StateExists`], nothing written): checked first, then under the
/// consolidation lock the shards (each atomically), then the head (atomically, the commit), its
/// watermarks lowered to what the WAL holds (see the module docs).
pub fn restore_checkpoint(wal: &StateDir, checkpoint: &Checkpoint, lock_timeout: Duration) -> Result<Restored> {
  let mut head = checkpoint.checked_head()?;
  let _lock = lock_in(wal, LOCK_FILE, lock_timeout, "WAL consolidation")?;
  if wal.kind_of(STATE_FILE)?.is_some() {
    return Ok(Restored::StateExists);
  }
  if let Some(dir) = wal.subdir(SHARD_DIR)? {
    if dir.entries()?.iter().any(|e| e.name_str().is_none_or(|n| shard_number(n).is_some())) {
      return Ok(Restored::StateExists);
    }
  }
  let sessions = wal.subdir(SESSIONS_DIR)?;
  let mut lowered = Vec::new();
  let mut marks = BTreeMap::new();
  for (session, &mark) in &head.sessions {
    let last = last_seq(sessions.as_ref(), session)?;
    if last < mark {
      lowered.push(session.clone());
    }
    if last.min(mark) > 0 {
      marks.insert(session.clone(), last.min(mark));
    }
  }
  let head_bytes = if lowered.is_empty() {
    checkpoint.head.clone()
  } else {
    head.sessions = marks;
    let mut bytes = serde_json::to_vec_pretty(&head).map_err(|e| LoaError::Internal(e.to_string()))?;
    bytes.push(b'\n');
    bytes
  };
  if !checkpoint.shards.is_empty() {
    let dir = wal.create_subdir(SHARD_DIR)?;
    for (name, bytes) in &checkpoint.shards {
      dir.write_atomic(name, bytes, None)?;
    }
  }
  wal.write_atomic(STATE_FILE, &head_bytes, None)?;
  Ok(Restored::Written { lowered })
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::wal::format::{encode_header, encode_record, Record, SegmentHeader};
  use crate::wal::{consolidate, ConsolidateOptions};

  fn segment(wal: &Path, session: &str, first: u64, last: u64) {
    let dir = wal.join(SESSIONS_DIR).join(session);
    std::fs::create_dir_all(&dir).unwrap();
    let mut bytes = encode_header(&SegmentHeader { created_ms: 1, first_seq: first }).to_vec();
    for seq in first..=last {
      let record = Record {
        seq,
        ts_ms: 1_700_000_000_000 + seq as i64,
        session_id: session.into(),
        op: "write".into(),
        path: Some(format!("notes/{session}-{seq}.md")),
        meta: None,
        data: Some(format!("note {seq}").into_bytes()),
      };
      encode_record(&record, &mut bytes);
    }
    std::fs::write(dir.join(crate::wal::reader::segment_file_name(first)), bytes).unwrap();
  }

  fn state_files(wal: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![(STATE_FILE.to_string(), std::fs::read(wal.join(STATE_FILE)).unwrap())];
    for e in std::fs::read_dir(wal.join(SHARD_DIR)).unwrap() {
      let e = e.unwrap();
      out.push((e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap()));
    }
    out.sort();
    out
  }

  #[test]
  fn a_checkpoint_restores_the_state_byte_for_byte_and_consolidation_then_has_nothing_to_do() {
    let ws = tempfile::tempdir().unwrap();
    let wal = ws.path().join("wal");
    segment(&wal, "a", 1, 3);
    segment(&wal, "b", 1, 2);
    let target = ws.path().join("target");
    consolidate(&wal, &target, &ConsolidateOptions { prune: false, ..Default::default() }).unwrap();
    let dir = StateDir::open_root(&wal).unwrap();
    let checkpoint = read_checkpoint(&dir, Duration::from_secs(1)).unwrap().unwrap();
    assert_eq!(checkpoint.sessions().unwrap(), BTreeMap::from([("a".into(), 3), ("b".into(), 2)]));
    assert!(!checkpoint.shards.is_empty());

    // Elsewhere, the same WAL without state: the checkpoint is written as it was.
    let other = tempfile::tempdir().unwrap();
    let wal2 = other.path().join("wal");
    segment(&wal2, "a", 1, 3);
    segment(&wal2, "b", 1, 2);
    let dir2 = StateDir::open_root(&wal2).unwrap();
    let restored = restore_checkpoint(&dir2, &checkpoint, Duration::from_secs(1)).unwrap();
    assert_eq!(restored, Restored::Written { lowered: vec![] });
    assert_eq!(state_files(&wal2), state_files(&wal));
    let run = consolidate(&wal2, &other.path().join("target"), &ConsolidateOptions::default()).unwrap();
    assert_eq!((run.records, run.applied), (0, 0));
    // A second restore finds the state and writes nothing.
    assert_eq!(restore_checkpoint(&dir2, &checkpoint, Duration::from_secs(1)).unwrap(), Restored::StateExists);
  }

  #[test]
  fn watermarks_beyond_the_wal_are_lowered_to_what_it_holds() {
    let ws = tempfile::tempdir().unwrap();
    let wal = ws.path().join("wal");
    segment(&wal, "a", 1, 3);
    segment(&wal, "b", 1, 2);
    consolidate(&wal, &ws.path().join("t"), &ConsolidateOptions { prune: false, ..Default::default() }).unwrap();
    let checkpoint = read_checkpoint(&StateDir::open_root(&wal).unwrap(), Duration::from_secs(1)).unwrap().unwrap();
    let other = tempfile::tempdir().unwrap();
    let wal2 = other.path().join("wal");
    segment(&wal2, "a", 1, 2);
    let dir2 = StateDir::open_root(&wal2).unwrap();
    let restored = restore_checkpoint(&dir2, &checkpoint, Duration::from_secs(1)).unwrap();
    assert_eq!(restored, Restored::Written { lowered: vec!["a".into(), "b".into()] });
    assert_eq!(crate::wal::state::watermarks(&dir2).unwrap(), BTreeMap::from([("a".into(), 2)]));
  }

  #[test]
  fn hostile_checkpoints_are_refused_and_nothing_is_written() {
    let head = br#"{"version":2,"run":1,"sessions":{"a":1}}"#.to_vec();
    let shard_for = |path: &str| {
      let name = shard_name(shard_of(path));
      let body = format!(
        r#"{{"version":2,"paths":{{"{path}":{{"sessionId":"a","seq":1,"ts":1,"op":"write","hash":"00","run":1}}}}}}"#
      );
      (name, body.into_bytes())
    };
    let good = shard_for("notes/a.md");
    let wrong_shard = (shard_name((shard_of("notes/a.md") + 1) % SHARDS), good.1.clone());
    let cases = [
      Checkpoint { head: br#"{"version":3,"run":1,"sessions":{}}"#.to_vec(), shards: vec![] },
      Checkpoint { head: br#"{"version":2,"run":1,"sessions":{"../x":1}}"#.to_vec(), shards: vec![] },
      Checkpoint { head: br#"{"version":2,"run":1,"sessions":{},"x":1}"#.to_vec(), shards: vec![] },
      Checkpoint { head: head.clone(), shards: vec![("../000.json".into(), good.1.clone())] },
      Checkpoint { head: head.clone(), shards: vec![wrong_shard] },
      Checkpoint { head: head.clone(), shards: vec![shard_for("../escape.md")] },
      Checkpoint { head: head.clone(), shards: vec![shard_for("/etc/passwd")] },
      Checkpoint { head: head.clone(), shards: vec![good.clone(), good.clone()] },
      Checkpoint { head: head.clone(), shards: vec![(good.0.clone(), b"{\"version\":1,\"paths\":{}}".to_vec())] },
    ];
    let ws = tempfile::tempdir().unwrap();
    let dir = StateDir::open_root(ws.path()).unwrap();
    for (i, case) in cases.iter().enumerate() {
      let err = restore_checkpoint(&dir, case, Duration::from_secs(1)).unwrap_err();
      assert_eq!(err.code(), "E_STATE_CORRUPT", "case {i}");
    }
    assert!(std::fs::read_dir(ws.path()).unwrap().all(|e| e.unwrap().file_name() == LOCK_FILE));
    // The good one is accepted.
    let ok = Checkpoint { head, shards: vec![good] };
    assert!(matches!(restore_checkpoint(&dir, &ok, Duration::from_secs(1)).unwrap(), Restored::Written { .. }));
  }

  #[test]
  fn a_shard_that_is_not_a_regular_file_is_refused() {
    let ws = tempfile::tempdir().unwrap();
    let wal = ws.path().join("wal");
    segment(&wal, "a", 1, 1);
    consolidate(&wal, &ws.path().join("t"), &ConsolidateOptions { prune: false, ..Default::default() }).unwrap();
    let shard = std::fs::read_dir(wal.join(SHARD_DIR)).unwrap().next().unwrap().unwrap().path();
    std::fs::remove_file(&shard).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", &shard).unwrap();
    let err = read_checkpoint(&StateDir::open_root(&wal).unwrap(), Duration::from_secs(1)).unwrap_err();
    assert_eq!(err.code(), "E_NOT_REGULAR_FILE");
  }
}
