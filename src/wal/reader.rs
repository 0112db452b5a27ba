//! Reading a WAL directory without changing it: listing sessions and segments, replay, merged
//! reads across sessions and verification.
//!
//! Layout: `<dir>/sessions/<sessionId>/<first seq, 20 digits>.wal`, one directory per session
//! with its lock file `LOCK`. Readers never truncate or repair anything; only a writer that
//! holds the session lock truncates a torn tail, and only in the newest segment.

use std::fs;
use std::path::{Path, PathBuf};

use super::format::{scan_segment, Record, SegmentScan, Tail};
use crate::error::{invalid, LoaError, Result};

pub const SESSIONS_DIR: &str = "sessions";
pub const SEGMENT_SUFFIX: &str = ".wal";

/// A segment file and the first seq its name promises.
#[derive(Debug, Clone)]
pub struct SegmentFile {
  pub path: PathBuf,
  pub first_seq: u64,
}

pub fn segment_file_name(first_seq: u64) -> String {
  format!("{first_seq:020}{SEGMENT_SUFFIX}")
}

fn parse_segment_name(name: &str) -> Option<u64> {
  let digits = name.strip_suffix(SEGMENT_SUFFIX)?;
  if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
    return None;
  }
  digits.parse().ok()
}

/// Session ids become directory names, so they are restricted to a portable, traversal-free set.
pub fn validate_session_id(id: &str) -> Result<()> {
  let ok = !id.is_empty()
    && id.len() <= super::format::MAX_SESSION_ID_BYTES
    && !id.starts_with('.')
    && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
  if ok {
    Ok(())
  } else {
    invalid("sessionId must be 1-128 characters of A-Z a-z 0-9 . _ - and not start with '.'")
  }
}

pub fn session_dir(dir: &Path, session_id: &str) -> PathBuf {
  dir.join(SESSIONS_DIR).join(session_id)
}

/// Session ids present under `dir`, sorted. A missing directory has no sessions.
pub fn list_sessions(dir: &Path) -> Result<Vec<String>> {
  let root = dir.join(SESSIONS_DIR);
  let entries = match fs::read_dir(&root) {
    Ok(entries) => entries,
    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
    Err(e) => return Err(LoaError::io("list", &root, e)),
  };
  let mut sessions = Vec::new();
  for entry in entries {
    let entry = entry.map_err(|e| LoaError::io("list", &root, e))?;
    if let Some(name) = entry.file_name().to_str() {
      if validate_session_id(name).is_ok() && entry.path().is_dir() {
        sessions.push(name.to_string());
      }
    }
  }
  sessions.sort();
  Ok(sessions)
}

/// Segment files of one session, oldest first.
pub fn list_segments(session_dir: &Path) -> Result<Vec<SegmentFile>> {
  let entries = match fs::read_dir(session_dir) {
    Ok(entries) => entries,
    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
    Err(e) => return Err(LoaError::io("list", session_dir, e)),
  };
  let mut segments = Vec::new();
  for entry in entries {
    let entry = entry.map_err(|e| LoaError::io("list", session_dir, e))?;
    if let Some(first_seq) = entry.file_name().to_str().and_then(parse_segment_name) {
      segments.push(SegmentFile { path: entry.path(), first_seq });
    }
  }
  segments.sort_by_key(|s| s.first_seq);
  Ok(segments)
}

pub fn read_segment(segment: &SegmentFile) -> Result<SegmentScan> {
  let bytes = fs::read(&segment.path).map_err(|e| LoaError::io("read", &segment.path, e))?;
  Ok(scan_segment(&bytes))
}

/// A problem found in a segment, as reported by [`verify_dir`].
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentProblem {
  pub session_id: String,
  pub segment: PathBuf,
  pub offset: u64,
  /// For torn tails: how many bytes an opening writer will cut.
  pub bytes: u64,
  pub reason: String,
}

/// Everything found in one session: its records in seq order plus the damage seen.
#[derive(Debug, Default)]
pub struct SessionRead {
  pub records: Vec<Record>,
  pub segments: usize,
  pub bytes: u64,
  pub torn_tail: Option<SegmentProblem>,
  pub corrupt: Vec<SegmentProblem>,
}

/// Reads every segment of a session. A torn tail in the newest segment is an unfinished (or
/// in-progress) write and is left out; any other damage is listed in `corrupt`, and records
/// after it in the same segment are not returned.
pub fn read_session(dir: &Path, session_id: &str) -> Result<SessionRead> {
  let sdir = session_dir(dir, session_id);
  let segments = list_segments(&sdir)?;
  let mut out = SessionRead { segments: segments.len(), ..Default::default() };
  let mut last_seq = 0u64;
  for (index, segment) in segments.iter().enumerate() {
    let scan = read_segment(segment)?;
    out.bytes += fs::metadata(&segment.path).map(|m| m.len()).unwrap_or(0);
    let is_newest = index + 1 == segments.len();
    let problem = |offset: u64, bytes: u64, reason: String| SegmentProblem {
      session_id: session_id.to_string(),
      segment: segment.path.clone(),
      offset,
      bytes,
      reason,
    };
    if let Some(header) = scan.header {
      if header.first_seq != segment.first_seq {
        out.corrupt.push(problem(
          0,
          0,
          format!("header says first seq {} but the file is named {}", header.first_seq, segment.first_seq),
        ));
        continue;
      }
    }
    for record in scan.records {
      if record.seq <= last_seq {
        out.corrupt.push(problem(0, 0, format!("seq {} repeats or goes backwards", record.seq)));
        break;
      }
      if record.session_id != session_id {
        out.corrupt.push(problem(0, 0, format!("record {} belongs to session {}", record.seq, record.session_id)));
        break;
      }
      last_seq = record.seq;
      out.records.push(record);
    }
    match scan.tail {
      Tail::Clean => {}
      Tail::Torn { offset, bytes } if is_newest => {
        out.torn_tail = Some(problem(offset, bytes, "torn tail (unfinished write)".into()))
      }
      Tail::Torn { offset, bytes } => {
        out.corrupt.push(problem(offset, bytes, "sealed segment ends in a torn record".into()))
      }
      Tail::Corrupt { offset, reason } => out.corrupt.push(problem(offset, 0, reason)),
    }
  }
  Ok(out)
}

fn corrupt_error(problem: &SegmentProblem) -> LoaError {
  LoaError::WalCorrupt {
    segment: problem.segment.display().to_string(),
    offset: problem.offset,
    reason: problem.reason.clone(),
  }
}

/// Records of one session in seq order, from `since_seq` (exclusive) on, at most `limit`.
/// Fails with `E_WAL_CORRUPT` (segment and offset in the message) on any damage other than a torn
/// tail of the newest segment.
pub fn replay_session(dir: &Path, session_id: &str, since_seq: u64, limit: Option<usize>) -> Result<Vec<Record>> {
  let read = read_session(dir, session_id)?;
  if let Some(problem) = read.corrupt.first() {
    return Err(corrupt_error(problem));
  }
  let records = read.records.into_iter().filter(|r| r.seq > since_seq);
  Ok(match limit {
    Some(n) => records.take(n).collect(),
    None => records.collect(),
  })
}

/// Every session's records merged in (ts, sessionId, seq) order.
pub fn read_dir_merged(dir: &Path) -> Result<Vec<Record>> {
  let mut all = Vec::new();
  for session in list_sessions(dir)? {
    all.extend(replay_session(dir, &session, 0, None)?);
  }
  all.sort_by(|a, b| merge_key(a).cmp(&merge_key(b)));
  Ok(all)
}

/// The total order used to merge sessions and to decide "last write wins".
pub fn merge_key(r: &Record) -> (i64, &str, u64) {
  (r.ts_ms, r.session_id.as_str(), r.seq)
}

/// Result of [`verify_dir`].
#[derive(Debug, Default)]
pub struct Verification {
  pub records: usize,
  pub sessions: usize,
  pub segments: usize,
  pub bytes: u64,
  pub truncated_tails: Vec<SegmentProblem>,
  pub corrupt: Vec<SegmentProblem>,
}

impl Verification {
  /// Torn tails are the expected residue of a crash and are repaired by the next writer; only
  /// corruption makes a log not ok.
  pub fn ok(&self) -> bool {
    self.corrupt.is_empty()
  }
}

/// Checks every segment of every session under `dir`, reporting instead of throwing.
pub fn verify_dir(dir: &Path) -> Result<Verification> {
  if !dir.is_dir() {
    return invalid(format!("{} is not a directory", dir.display()));
  }
  let mut v = Verification::default();
  for session in list_sessions(dir)? {
    let read = read_session(dir, &session)?;
    v.sessions += 1;
    v.records += read.records.len();
    v.segments += read.segments;
    v.bytes += read.bytes;
    v.truncated_tails.extend(read.torn_tail);
    v.corrupt.extend(read.corrupt);
  }
  Ok(v)
}
