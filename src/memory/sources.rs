//! What lets a store open without reading every memory: a stamp, kept beside the search index,
//! of what the memories' sources looked like when the index was last known to hold exactly
//! them (see `docs/search.md`, "Opening a store").
//!
//! The sources are the memory directory (one record file per memory) and every session's WAL.
//! Listing the first and reading the second is what reconciling the index costs, in proportion
//! to the number of memories; checking the stamp costs a `stat` of the memory directory, a
//! listing of the WAL's sessions and of each session's segments, and a read of a few bytes of
//! each session's newest segment, whatever the number of memories.
//!
//! - **Memory directory**: its device, inode and ctime (nanoseconds). Any file added, removed or
//!   renamed in it (by a consolidation, a forget, a restore or a hand) changes its ctime, which
//!   no one can set back. A stamp written no later than that ctime (git's racy-index rule: a
//!   change in the same clock tick after the stamp would leave it equal) does not count.
//! - **Each session's log**: its segment names, the inode of the newest, and where its last
//!   record ends. Only the session's owner appends, at that end, and whatever it appends starts
//!   with a record magic, so bytes there that are not zero (the writer's preallocation) mean a
//!   record the stamp does not know of, whether the writer indexed it or died first. A forget's
//!   rewrite, a rotation, retention or a lost segment change the names or the inode.
//! - **The index**: its base generation and log (see [`crate::search::IndexPosition`]); a log
//!   removed, cut or replaced, or a base of another generation not written from this one, makes
//!   the stamp invalid.
//!
//! Who writes it, each only when it knows the index holds exactly what it records: a store that
//! reconciled at open (the sources observed before they were read), a store closing (its own
//! session's entry, when every capture of it reached the index), a store's consolidation (the
//! memory directory's entry, when the stamp matched it before the run). Anything else leaves it
//! stale, and the next open reconciles as it always did.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{LoaError, Result};
use crate::fsutil::{OpenMode, StateDir};
use crate::search::{SearchIndex, SourcesStamp};
use crate::wal::format::{scan_segment, SEGMENT_HEADER_LEN};
use crate::wal::reader::{open_wal_dir, segments_in, session_ids, SESSIONS_DIR};

use super::layout::Layout;

/// The memory directory as a stamp sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DirStamp {
  dev: u64,
  ino: u64,
  /// As a decimal string: JSON numbers lose precision past 2^53.
  ctime_ns: String,
}

impl DirStamp {
  fn ctime(&self) -> i128 {
    self.ctime_ns.parse().unwrap_or(i128::MAX)
  }
}

/// One session's log as a stamp sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SessionStamp {
  segments: Vec<String>,
  ino: u64,
  end: u64,
}

/// What the index was found in step with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Sources {
  memory_dir: Option<DirStamp>,
  sessions: BTreeMap<String, SessionStamp>,
}

fn parse(stamp: &SourcesStamp) -> Option<Sources> {
  serde_json::from_value(stamp.sources.clone()).ok()
}

fn to_value(sources: &Sources) -> Option<serde_json::Value> {
  serde_json::to_value(sources).ok()
}

/// The memory directory's stamp now; `None` when there is none.
pub(super) fn memory_dir(layout: &Layout) -> Result<Option<DirStamp>> {
  let Some(dir) = layout.memory_dir()? else { return Ok(None) };
  let stat = rustix::fs::fstat(dir.fd()).map_err(|e| LoaError::io("stat", dir.path(), e.into()))?;
  Ok(Some(DirStamp {
    dev: stat.st_dev as u64,
    ino: stat.st_ino as u64,
    ctime_ns: (i128::from(stat.st_ctime) * 1_000_000_000 + i128::from(stat.st_ctime_nsec)).to_string(),
  }))
}

/// The WAL's `sessions` directory, when there is one.
fn sessions_dir(layout: &Layout) -> Result<Option<StateDir>> {
  let Some(root) = open_wal_dir(&layout.wal_path())? else { return Ok(None) };
  root.subdir(SESSIONS_DIR)
}

/// A session's segment names and its newest segment, opened (`None` without segments); `None`
/// when it is not a readable session.
type Segments = (Vec<String>, Option<crate::fsutil::StateFile>);

fn segments(sessions: &StateDir, id: &str) -> Result<Option<Segments>> {
  let Some(sdir) = sessions.subdir(id)? else { return Ok(None) };
  let segments = segments_in(&sdir)?;
  let file = match segments.last() {
    None => None,
    Some(newest) if newest.is_regular() => Some(sdir.open_file(&newest.name, OpenMode::READ)?),
    Some(_) => return Ok(None),
  };
  Ok(Some((segments.into_iter().map(|s| s.name).collect(), file)))
}

fn ino(file: &crate::fsutil::StateFile) -> Result<u64> {
  let stat = rustix::fs::fstat(file.file()).map_err(|e| LoaError::io("stat", file.path(), e.into()))?;
  Ok(stat.st_ino as u64)
}

/// Every session's stamp now, reading each newest segment to find where its records end: for a
/// store about to reconcile (observed before the sources are read, so that anything appended
/// meanwhile is past the end recorded). A session that cannot be read is left out: the next
/// open reconciles.
pub(super) fn observe(layout: &Layout) -> Result<Sources> {
  let mut out = Sources { memory_dir: memory_dir(layout)?, sessions: BTreeMap::new() };
  let Some(sessions) = sessions_dir(layout)? else { return Ok(out) };
  for id in session_ids(&sessions)? {
    let Ok(Some((names, file))) = segments(&sessions, &id) else { continue };
    let Some(file) = file else {
      out.sessions.insert(id, SessionStamp { segments: names, ino: 0, end: 0 });
      continue;
    };
    let Ok(bytes) = file.read_to_end_bounded(crate::wal::MAX_SEGMENT_BYTES) else { continue };
    let scan = scan_segment(&bytes);
    if !matches!(scan.tail, crate::wal::format::Tail::Clean) || scan.valid_len < SEGMENT_HEADER_LEN as u64 {
      continue;
    }
    out.sessions.insert(id, SessionStamp { segments: names, ino: ino(&file)?, end: scan.valid_len });
  }
  Ok(out)
}

/// One session's stamp from where its owner knows its log ends (`segment`, the file name of
/// the segment it appends to, and `end`); `None` when that is not the newest segment.
pub(super) fn own_session(layout: &Layout, id: &str, segment: &str, end: u64) -> Result<Option<SessionStamp>> {
  let Some(sessions) = sessions_dir(layout)? else { return Ok(None) };
  let Some((names, Some(file))) = segments(&sessions, id)? else { return Ok(None) };
  if names.last().map(String::as_str) != Some(segment) {
    return Ok(None);
  }
  Ok(Some(SessionStamp { segments: names, ino: ino(&file)?, end }))
}

/// True when the sources are as `stamp` recorded them (see the module docs). Costs no more
/// than a `stat` and a listing per session, whatever the number of memories.
pub(super) fn unchanged(layout: &Layout, stamp: &SourcesStamp) -> Result<bool> {
  let Some(recorded) = parse(stamp) else { return Ok(false) };
  let now = memory_dir(layout)?;
  if now != recorded.memory_dir {
    return Ok(false);
  }
  if let Some(dir) = &recorded.memory_dir {
    if stamp.written_ns <= dir.ctime() {
      return Ok(false);
    }
  }
  let Some(sessions) = sessions_dir(layout)? else { return Ok(recorded.sessions.is_empty()) };
  let ids = session_ids(&sessions)?;
  let mut matched = 0;
  for id in &ids {
    let Some((names, file)) = segments(&sessions, id)? else { return Ok(false) };
    let (expected_end, expected) = match recorded.sessions.get(id) {
      Some(expected) => {
        if names != expected.segments {
          return Ok(false);
        }
        matched += 1;
        (expected.end, Some(expected))
      }
      // A session the stamp does not know of (one just opened, by this store or another) is
      // in step only while it holds no record.
      None if names.len() <= 1 => (SEGMENT_HEADER_LEN as u64, None),
      None => return Ok(false),
    };
    let Some(file) = file else { continue };
    if let Some(expected) = expected {
      if ino(&file)? != expected.ino {
        return Ok(false);
      }
    }
    // Nothing past the recorded end: the file ends there, or the writer's zero fill.
    let mut next = [0u8; 12];
    let n = file.read_at(&mut next, expected_end)?;
    if next[..n].iter().any(|&b| b != 0) {
      return Ok(false);
    }
  }
  // Every recorded session is still there (a lost log is a change).
  Ok(matched == recorded.sessions.len())
}

/// After a reconcile from sources observed as `observed`: records them, unless the memory
/// directory changed while it was being read (the next open then reconciles again).
pub(super) fn stamp_reconciled(layout: &Layout, index: &SearchIndex, observed: Sources) -> Result<()> {
  if memory_dir(layout)? != observed.memory_dir {
    return index.forget_sources_stamp();
  }
  let value = to_value(&observed);
  index.update_sources_stamp(|_| value)
}

/// A store closing records its own session as it leaves it, when the stamp is otherwise
/// valid (the other entries stay what they were).
pub(super) fn stamp_session(index: &SearchIndex, id: &str, session: SessionStamp) -> Result<()> {
  index.update_sources_stamp(|current| {
    let mut sources = parse(&current?)?;
    sources.sessions.insert(id.to_string(), session);
    to_value(&sources)
  })
}

/// After a consolidation that found the memory directory as stamped (`before`) and left it as
/// it is now: records it.
pub(super) fn stamp_memory_dir(layout: &Layout, index: &SearchIndex, before: Option<DirStamp>) -> Result<()> {
  let after = memory_dir(layout)?;
  index.update_sources_stamp(|current| {
    let current = current?;
    let racy = before.as_ref().is_some_and(|d| current.written_ns <= d.ctime());
    let mut sources = parse(&current)?;
    if sources.memory_dir != before || racy {
      return None;
    }
    sources.memory_dir = after;
    to_value(&sources)
  })
}
