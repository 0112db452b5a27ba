//! Reading a WAL directory without changing it: listing sessions and segments, replay, merged
//! reads across sessions and verification.
//!
//! Layout: `<dir>/sessions/<sessionId>/<first seq, 20 digits>.wal`, one directory per session
//! with its lock file `LOCK`. Readers never truncate or repair anything; only a writer that
//! holds the session lock truncates a torn tail, and only in the newest segment.
//!
//! Everything is reached through [`StateDir`] handles: `sessions` and each session directory are
//! opened without following a symlink (a symlink there is `E_PATH_OUTSIDE_ROOT`), and an entry
//! named like a segment that is not a regular file (symlink, FIFO, device, socket, directory) is
//! `E_NOT_REGULAR_FILE` and is never opened: its type comes from the directory listing. A segment
//! is read whole, at most [`MAX_SEGMENT_BYTES`] (`E_TOO_LARGE` beyond, also for a file that grows
//! while it is read), and readers take no lock: a record the writer appends while a segment is
//! read is a torn tail or a record, never damage ([`read_segment_file`] says how that is told).
//!
//! Damage is collected per session ([`SessionRead::corrupt`]) rather than thrown, so that
//! [`verify_dir`] can report all of it; [`replay_session`] and [`read_dir_merged`] throw the first
//! problem with its own code. A segment that disappears between listing and opening was removed
//! by retention, which only removes segments whose records are all consolidated: it is skipped.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::FileType;

use super::format::{last_record_end, scan_segment, Record, SegmentScan, Tail};
use crate::error::{invalid, LoaError, Result};
use crate::fsutil::{kind_name, OpenMode, StateDir, StateFile};

pub const SESSIONS_DIR: &str = "sessions";
pub const SEGMENT_SUFFIX: &str = ".wal";
/// The largest segment file readers accept (256 MiB). Writers never make one larger:
/// `segmentMaxBytes` is capped at this, and a single record (at most 8 MiB) always fits.
pub const MAX_SEGMENT_BYTES: u64 = 256 * 1024 * 1024;

/// An entry of a session directory named like a segment, and the first seq its name promises.
#[derive(Debug, Clone)]
pub struct SegmentFile {
  /// File name within the session directory.
  pub name: String,
  /// Full path, for messages.
  pub path: PathBuf,
  pub first_seq: u64,
  /// Type as listed (symlinks not followed).
  pub file_type: FileType,
}

impl SegmentFile {
  pub fn is_regular(&self) -> bool {
    self.file_type == FileType::RegularFile
  }

  /// `E_NOT_REGULAR_FILE` for this entry.
  pub fn not_regular(&self) -> LoaError {
    LoaError::NotRegularFile { path: self.path.display().to_string(), kind: kind_name(self.file_type) }
  }
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

/// Where a session's segments live, for messages (open it with [`open_wal_dir`] and
/// [`StateDir::subdir`]).
pub fn session_dir(dir: &Path, session_id: &str) -> PathBuf {
  dir.join(SESSIONS_DIR).join(session_id)
}

/// Opens the WAL directory a caller named (symlinks in that path are the caller's choice);
/// `None` when it does not exist. An empty path is `E_INVALID_ARGUMENT`.
pub fn open_wal_dir(dir: &Path) -> Result<Option<StateDir>> {
  match StateDir::open_root(dir) {
    Ok(root) => Ok(Some(root)),
    Err(e) if e.is_not_found() => Ok(None),
    Err(e) => Err(e),
  }
}

/// Names in `sessions/` that are sessions: a valid session id that is a directory, or a symlink
/// pretending to be one (reading it then reports `E_PATH_OUTSIDE_ROOT`). Other entries (files,
/// FIFOs, names starting with `.`) are not sessions and are never opened. Sorted.
pub fn session_ids(sessions: &StateDir) -> Result<Vec<String>> {
  let mut ids = Vec::new();
  for entry in sessions.entries()? {
    let Some(name) = entry.name_str() else { continue };
    if validate_session_id(name).is_ok() && (entry.is_dir() || entry.file_type == FileType::Symlink) {
      ids.push(name.to_string());
    }
  }
  Ok(ids)
}

/// Session ids present under the WAL directory `dir`, sorted. A missing directory has no
/// sessions; `sessions` as a symlink is `E_PATH_OUTSIDE_ROOT`.
pub fn list_sessions(dir: &Path) -> Result<Vec<String>> {
  let Some(root) = open_wal_dir(dir)? else { return Ok(Vec::new()) };
  match root.subdir(SESSIONS_DIR)? {
    Some(sessions) => session_ids(&sessions),
    None => Ok(Vec::new()),
  }
}

/// Entries of a session directory named like segments, oldest first, whatever their type.
pub fn segments_in(sdir: &StateDir) -> Result<Vec<SegmentFile>> {
  let mut segments = Vec::new();
  for entry in sdir.entries()? {
    let Some(name) = entry.name_str() else { continue };
    if let Some(first_seq) = parse_segment_name(name) {
      segments.push(SegmentFile {
        name: name.to_string(),
        path: sdir.child_path(name),
        first_seq,
        file_type: entry.file_type,
      });
    }
  }
  segments.sort_by_key(|s| s.first_seq);
  Ok(segments)
}

/// Reads and scans one segment: `None` when it disappeared since it was listed (retention
/// removed it, which it only does once every record in it is consolidated). A segment entry
/// that is not a regular file is `E_NOT_REGULAR_FILE` and is never opened.
pub fn read_segment(sdir: &StateDir, segment: &SegmentFile) -> Result<Option<(SegmentScan, u64)>> {
  if !segment.is_regular() {
    return Err(segment.not_regular());
  }
  let Some(file) = sdir.open_file_if_exists(&segment.name, OpenMode::READ)? else { return Ok(None) };
  let (bytes, scan) = read_segment_file(&file)?;
  Ok(Some((scan, bytes.len() as u64)))
}

/// Reads the segment open as `file` whole (at most [`MAX_SEGMENT_BYTES`], `E_TOO_LARGE` beyond)
/// and scans it, telling a write in progress from damage. Returns the bytes the scan was made of.
///
/// A `read` is not atomic against a `write` of the same bytes: the kernel copies a file in parts
/// (a page fault on the buffer, a preemption between them), and a writer appending meanwhile can
/// land a record ahead of the reader while bytes behind it were read before they were written:
/// zeros of the space written ahead. So one read of a live segment can show zeros, or part of a
/// record, followed by a whole valid record: damage by the look of it, a write in progress in
/// fact. What settles it is the writer's contract: it only ever writes forward, each byte of a
/// record once, into space nothing else writes, and it writes a record only after every record
/// before it. Once a valid record has been read whole, every byte before it was final. So when
/// the scan finds damage followed by a valid record, the range from the damage to the end of the
/// last valid record is read again, through the same handle (the same file, even if it was
/// renamed or removed meanwhile), and the segment is scanned again with those bytes: damage still
/// there lies in bytes that can no longer change, and is reported with its offset. The bytes past
/// that range stay those of the first read, where no valid record follows, so whatever the writer
/// added meanwhile can only read as a torn tail (left out, as an append in progress), never as
/// corruption. One extra read, of at most the segment, and only for a segment that looked damaged.
pub fn read_segment_file(file: &StateFile) -> Result<(Vec<u8>, SegmentScan)> {
  let mut bytes = file.read_to_end_bounded(MAX_SEGMENT_BYTES)?;
  let scan = scan_segment(&bytes);
  let Tail::Corrupt { offset, .. } = scan.tail else { return Ok((bytes, scan)) };
  let from = offset as usize;
  let Some(settled) = last_record_end(&bytes, from) else { return Ok((bytes, scan)) };
  let mut again = vec![0u8; settled - from];
  let n = file.read_at(&mut again, offset)?;
  if n < again.len() {
    // Cut back since the first read (a failed append removed): nothing after the cut exists now.
    bytes.truncate(from + n);
  }
  bytes[from..from + n].copy_from_slice(&again[..n]);
  let scan = scan_segment(&bytes);
  Ok((bytes, scan))
}

/// A problem found in a session: damaged bytes in a segment, or something that is not a
/// segment (or not a session directory) where one belongs.
#[derive(Debug, Clone)]
pub struct SegmentProblem {
  pub session_id: String,
  /// The segment (or session directory) concerned.
  pub segment: PathBuf,
  pub offset: u64,
  /// For torn tails: how many bytes an opening writer will cut.
  pub bytes: u64,
  pub reason: String,
  /// The code a reader throws for it: `E_WAL_CORRUPT` for damaged bytes, else the code of what
  /// stopped the segment from being read (`E_NOT_REGULAR_FILE`, `E_PATH_OUTSIDE_ROOT`,
  /// `E_TOO_LARGE`, `E_IO`).
  pub code: &'static str,
  cause: Option<Arc<LoaError>>,
}

impl SegmentProblem {
  pub(crate) fn damage(session_id: &str, segment: &Path, offset: u64, bytes: u64, reason: String) -> SegmentProblem {
    SegmentProblem {
      session_id: session_id.to_string(),
      segment: segment.to_path_buf(),
      offset,
      bytes,
      reason,
      code: "E_WAL_CORRUPT",
      cause: None,
    }
  }

  fn unreadable(session_id: &str, segment: &Path, error: LoaError) -> SegmentProblem {
    SegmentProblem {
      session_id: session_id.to_string(),
      segment: segment.to_path_buf(),
      offset: 0,
      bytes: 0,
      reason: error.to_string(),
      code: error.code(),
      cause: Some(Arc::new(error)),
    }
  }

  /// The error a reader throws for this problem.
  pub fn to_error(&self) -> LoaError {
    match &self.cause {
      Some(cause) => cause.duplicate(),
      None => LoaError::WalCorrupt {
        segment: self.segment.display().to_string(),
        offset: self.offset,
        reason: self.reason.clone(),
      },
    }
  }
}

/// Everything found in one session: its records in seq order plus the damage seen.
#[derive(Debug, Default)]
pub struct SessionRead {
  pub records: Vec<Record>,
  /// Segment files read.
  pub segments: usize,
  pub bytes: u64,
  pub torn_tail: Option<SegmentProblem>,
  pub corrupt: Vec<SegmentProblem>,
}

/// Reads every segment of the session directory `sdir`. A torn tail in the newest segment is an
/// unfinished (or in-progress) write and is left out; any other damage is listed in `corrupt`,
/// and records after it in the same segment are not returned. Fails only when the directory
/// cannot be listed.
pub fn read_session_dir(sdir: &StateDir, session_id: &str) -> Result<SessionRead> {
  let segments = segments_in(sdir)?;
  let mut out = SessionRead::default();
  let mut last_seq = 0u64;
  for (index, segment) in segments.iter().enumerate() {
    let is_newest = index + 1 == segments.len();
    let damage = |offset: u64, bytes: u64, reason: String| {
      SegmentProblem::damage(session_id, &segment.path, offset, bytes, reason)
    };
    let (scan, len) = match read_segment(sdir, segment) {
      Ok(Some(read)) => read,
      Ok(None) => continue,
      Err(e) => {
        out.corrupt.push(SegmentProblem::unreadable(session_id, &segment.path, e));
        continue;
      }
    };
    out.segments += 1;
    out.bytes += len;
    if let Some(header) = scan.header {
      if header.first_seq != segment.first_seq {
        out.corrupt.push(damage(
          0,
          0,
          format!("header says first seq {} but the file is named {}", header.first_seq, segment.first_seq),
        ));
        continue;
      }
    }
    for record in scan.records {
      if record.seq <= last_seq {
        out.corrupt.push(damage(0, 0, format!("seq {} repeats or goes backwards", record.seq)));
        break;
      }
      if record.session_id != session_id {
        out.corrupt.push(damage(0, 0, format!("record {} belongs to another session", record.seq)));
        break;
      }
      last_seq = record.seq;
      out.records.push(record);
    }
    match scan.tail {
      Tail::Clean => {}
      Tail::Torn { offset, bytes } if is_newest => {
        out.torn_tail = Some(damage(offset, bytes, "torn tail (unfinished write)".into()))
      }
      Tail::Torn { offset, bytes } => {
        out.corrupt.push(damage(offset, bytes, "sealed segment ends in a torn record".into()))
      }
      Tail::Corrupt { offset, reason } => out.corrupt.push(damage(offset, 0, reason)),
    }
  }
  Ok(out)
}

/// [`read_session_dir`] of `sessions/<session_id>`. A session directory that cannot be opened
/// (a symlink, not a directory, unreadable) is reported in `corrupt`; a missing one is empty.
pub fn read_session_in(sessions: &StateDir, session_id: &str) -> Result<SessionRead> {
  let path = sessions.child_path(session_id);
  let opened = validate_session_id(session_id).and_then(|_| sessions.subdir(session_id));
  match opened {
    Ok(Some(sdir)) => match read_session_dir(&sdir, session_id) {
      Ok(read) => Ok(read),
      Err(e) => Ok(unreadable_session(session_id, &path, e)),
    },
    Ok(None) => Ok(SessionRead::default()),
    Err(e) => Ok(unreadable_session(session_id, &path, e)),
  }
}

fn unreadable_session(session_id: &str, path: &Path, error: LoaError) -> SessionRead {
  SessionRead { corrupt: vec![SegmentProblem::unreadable(session_id, path, error)], ..Default::default() }
}

/// [`read_session_in`] for the WAL directory a caller named.
pub fn read_session(dir: &Path, session_id: &str) -> Result<SessionRead> {
  let Some(root) = open_wal_dir(dir)? else { return Ok(SessionRead::default()) };
  match root.subdir(SESSIONS_DIR) {
    Ok(Some(sessions)) => read_session_in(&sessions, session_id),
    Ok(None) => Ok(SessionRead::default()),
    Err(e) => Ok(unreadable_session(session_id, &root.child_path(SESSIONS_DIR), e)),
  }
}

/// The records of a session read, from `since_seq` (exclusive) on, at most `limit`; the first
/// problem (other than a torn tail of the newest segment) is thrown with its code.
pub fn records_after(read: SessionRead, since_seq: u64, limit: Option<usize>) -> Result<Vec<Record>> {
  if let Some(problem) = read.corrupt.first() {
    return Err(problem.to_error());
  }
  let records = read.records.into_iter().filter(|r| r.seq > since_seq);
  Ok(match limit {
    Some(n) => records.take(n).collect(),
    None => records.collect(),
  })
}

/// Records of one session in seq order, from `since_seq` (exclusive) on, at most `limit`.
/// Fails with `E_WAL_CORRUPT` (segment and offset in the message) on any damage other than a torn
/// tail of the newest segment, and with the problem's own code for a segment that cannot be read.
pub fn replay_session(dir: &Path, session_id: &str, since_seq: u64, limit: Option<usize>) -> Result<Vec<Record>> {
  records_after(read_session(dir, session_id)?, since_seq, limit)
}

/// Every session's records merged in (ts, sessionId, seq) order. A missing directory has none;
/// any problem is thrown (see [`replay_session`]).
pub fn read_dir_merged(dir: &Path) -> Result<Vec<Record>> {
  let Some(root) = open_wal_dir(dir)? else { return Ok(Vec::new()) };
  let Some(sessions) = root.subdir(SESSIONS_DIR)? else { return Ok(Vec::new()) };
  let mut all = Vec::new();
  for session in session_ids(&sessions)? {
    all.extend(records_after(read_session_in(&sessions, &session)?, 0, None)?);
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
  /// corruption (or something that is not a segment where one belongs) makes a log not ok.
  pub fn ok(&self) -> bool {
    self.corrupt.is_empty()
  }
}

/// Opens a directory a caller named that must exist: a missing path or one that is not a
/// directory is `E_INVALID_ARGUMENT`.
pub(crate) fn open_existing_dir(dir: &Path) -> Result<StateDir> {
  match StateDir::open_root(dir) {
    Ok(root) => Ok(root),
    Err(LoaError::Io { source, .. })
      if source.kind() == std::io::ErrorKind::NotFound || source.raw_os_error() == Some(libc::ENOTDIR) =>
    {
      invalid(format!("{} is not a directory", dir.display()))
    }
    Err(e) => Err(e),
  }
}

/// Checks every segment of every session under `dir`, reporting damage (and anything that is not
/// a segment or session directory where one belongs) instead of throwing. Throws only for a
/// `dir` that is not a directory or cannot be listed.
pub fn verify_dir(dir: &Path) -> Result<Verification> {
  let root = open_existing_dir(dir)?;
  let mut v = Verification::default();
  let sessions = match root.subdir(SESSIONS_DIR) {
    Ok(Some(sessions)) => sessions,
    Ok(None) => return Ok(v),
    Err(e) => {
      v.corrupt.push(SegmentProblem::unreadable("", &root.child_path(SESSIONS_DIR), e));
      return Ok(v);
    }
  };
  for session in session_ids(&sessions)? {
    let read = read_session_in(&sessions, &session)?;
    v.sessions += 1;
    v.records += read.records.len();
    v.segments += read.segments;
    v.bytes += read.bytes;
    v.truncated_tails.extend(read.torn_tail);
    v.corrupt.extend(read.corrupt);
  }
  Ok(v)
}
