//! The write-ahead log: append-only, checksummed, segmented, one writer per session.
//!
//! A [`Wal`] owns one session's log under a directory. Appends are queued and written by a
//! dedicated writer thread, which takes everything queued since its last write, writes it in
//! one `write` and makes it durable with one `fdatasync` (group commit). Seqs are assigned in
//! queue order, so the order callers appended in is the order of seqs. Callers are answered
//! through a callback once their record is durable under the chosen [`SyncMode`]; the Node
//! binding resolves a promise from it, so appends never block the JavaScript thread.
//!
//! Every file of the log is reached through [`StateDir`]: `sessions/<id>` is created and opened
//! without following a symlink (`E_PATH_OUTSIDE_ROOT`, and nothing is created outside), `LOCK`
//! and segments are opened with `O_NOFOLLOW | O_NONBLOCK`, and a symlink, FIFO, device, socket or
//! directory where one belongs is `E_NOT_REGULAR_FILE`: never opened, read, truncated or written
//! through. The newest segment is read at most [`MAX_SEGMENT_BYTES`] before its torn tail is cut,
//! through the very handle that is then written, so what is repaired is what was read.
//!
//! Failures keep the log exact: a failed write is cut back so the segment holds exactly the
//! records that were acknowledged. A failed fsync fails the records it covered with the disk's
//! own error (`E_IO` with its `osError`), and the log is not left closed: the kernel may have
//! dropped the pages it could not write, so before the next write the segment is cut back to its
//! last durable record, that cut is made durable, and appending continues in a new segment whose
//! first seq is the next after the last durable record. Until the disk takes writes again, each
//! append fails with that disk's `E_IO` and the next one tries again.

pub mod checkpoint;
pub mod consolidate;
pub mod format;
pub mod reader;
pub mod rewrite;
pub mod shipped;
pub mod state;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use format::{Record, SegmentHeader, Tail, SEGMENT_HEADER_LEN};
use reader::{read_session_dir, records_after, segment_file_name, segments_in, validate_session_id};

use crate::error::{invalid, LoaError, Result};
use crate::fsutil::{OpenMode, StateDir, StateFile};
use crate::lock::{lock_file, LockGuard};

pub use consolidate::{
  consolidate, consolidate_with, forget_paths, paths_written_by, Admission, AppliedPath, Conflict, ConflictSide,
  ConsolidateOptions, Consolidation, DeadLetter,
};
pub use reader::{read_dir_merged, replay_session, verify_dir, SegmentProblem, Verification, MAX_SEGMENT_BYTES};
pub use rewrite::{SegmentRewrite, SessionLock};

/// When an append counts as done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
  /// After `fdatasync`: the record survives power loss. Concurrent appends share one fsync.
  Always,
  /// After `write`: the record survives a process crash; an fsync follows within
  /// [`BATCH_SYNC_INTERVAL`], so power loss can cost at most that window.
  Batch,
  /// After `write`: fsync only when a segment is sealed and on close.
  None,
}

impl SyncMode {
  pub fn parse(text: &str) -> Result<Self> {
    match text {
      "always" => Ok(SyncMode::Always),
      "batch" => Ok(SyncMode::Batch),
      "none" => Ok(SyncMode::None),
      _ => invalid("sync must be 'always', 'batch' or 'none'"),
    }
  }
  pub fn as_str(self) -> &'static str {
    match self {
      SyncMode::Always => "always",
      SyncMode::Batch => "batch",
      SyncMode::None => "none",
    }
  }
}

/// How long `sync: 'batch'` may leave written records without an fsync.
pub const BATCH_SYNC_INTERVAL: Duration = Duration::from_millis(100);
/// The active segment is extended with zeros this much at a time. Overwriting blocks that are
/// already allocated and written lets `fdatasync` flush data alone; appending past the end of a
/// file also makes it commit the file's new size, which on ext4 costs a journal commit per append
/// (about a third of the latency of a small durable append). Readers treat an all-zero tail as
/// unused space, never as damage.
pub const PREALLOCATE_CHUNK: u64 = 512 * 1024;
/// Smallest accepted `segmentMaxBytes`: a header plus one small record.
pub const MIN_SEGMENT_BYTES: u64 = 4096;
/// Largest accepted `segmentMaxBytes`: readers refuse segments over [`MAX_SEGMENT_BYTES`], so no
/// writer makes one (a single record, at most 8 MiB, always fits below it).
pub const MAX_SEGMENT_MAX_BYTES: u64 = MAX_SEGMENT_BYTES;
const LOCK_FILE: &str = "LOCK";

/// Options of [`Wal::open`].
#[derive(Debug, Clone)]
pub struct WalOptions {
  pub session_id: String,
  pub lock_timeout: Duration,
  pub segment_max_bytes: u64,
  pub segment_max_age: Duration,
  pub sync: SyncMode,
}

impl Default for WalOptions {
  fn default() -> Self {
    WalOptions {
      session_id: "default".into(),
      lock_timeout: Duration::from_millis(5000),
      segment_max_bytes: 10 * 1024 * 1024,
      segment_max_age: Duration::from_secs(3600),
      sync: SyncMode::Always,
    }
  }
}

/// What a caller wants appended; seq, timestamp and session are added by the log.
#[derive(Debug, Clone, Default)]
pub struct AppendRequest {
  pub op: String,
  pub path: Option<String>,
  /// JSON text of an object.
  pub meta: Option<String>,
  pub data: Option<Vec<u8>>,
}

/// Called once with the seq of a durable record, or the reason it was not stored.
pub type AppendCallback = Box<dyn FnOnce(Result<u64>) + Send>;

/// A snapshot of a Wal's state, for `stats()`.
#[derive(Debug, Clone)]
pub struct WalStats {
  pub session_id: String,
  pub segments: usize,
  pub bytes: u64,
  /// Highest seq written by this session (0 when empty).
  pub last_seq: u64,
  pub appended: u64,
  pub active_segment: PathBuf,
  pub sync: SyncMode,
  /// The torn tail cut off when this Wal was opened, if there was one.
  pub truncated_tail: Option<SegmentProblem>,
}

struct Pending {
  request: AppendRequest,
  reply: AppendCallback,
}

#[derive(Default)]
struct Queue {
  pending: Vec<Pending>,
  closing: bool,
  /// Set when the writer stopped for good (closed, a failed background fsync of `sync: 'batch'`, panic).
  closed: Option<String>,
}

struct Shared {
  queue: Mutex<Queue>,
  wakeup: Condvar,
  progress: Mutex<Progress>,
}

#[derive(Clone)]
struct Progress {
  last_seq: u64,
  appended: u64,
  active_segment: PathBuf,
  active_len: u64,
}

/// One session's write-ahead log, open for appending. Holds the session's exclusive lock until
/// closed or dropped.
pub struct Wal {
  /// `sessions/<id>`, opened without following symlinks.
  session: StateDir,
  options: WalOptions,
  shared: Arc<Shared>,
  writer: Mutex<Option<JoinHandle<LockGuard>>>,
  truncated_tail: Option<SegmentProblem>,
}

impl Wal {
  /// Opens (creating if needed) the log of `options.session_id` under `dir`: takes the session
  /// lock (waiting up to `lock_timeout`), cuts a torn tail off the newest segment and continues
  /// after the highest seq on disk. Fails with `E_WAL_CORRUPT` if the newest segment is damaged
  /// anywhere but its tail, `E_NOT_REGULAR_FILE` if it (or `LOCK`) is not a regular file,
  /// `E_TOO_LARGE` if it is over [`MAX_SEGMENT_BYTES`], `E_PATH_OUTSIDE_ROOT` if `sessions` or
  /// the session directory is a symlink, and then changes nothing on disk.
  pub fn open(dir: &Path, options: WalOptions) -> Result<Wal> {
    validate_session_id(&options.session_id)?;
    if options.segment_max_bytes < MIN_SEGMENT_BYTES {
      return invalid(format!("segmentMaxBytes must be at least {MIN_SEGMENT_BYTES}"));
    }
    if options.segment_max_bytes > MAX_SEGMENT_MAX_BYTES {
      return invalid(format!("segmentMaxBytes must be at most {MAX_SEGMENT_MAX_BYTES}"));
    }
    if options.segment_max_age.is_zero() {
      return invalid("segmentMaxAgeMs must be positive");
    }
    let lock = SessionLock::take(dir, &options.session_id, options.lock_timeout)?;
    Wal::open_locked(lock, options)
  }

  /// Opens the log of a session whose lock the caller holds (see [`Wal::suspend`]).
  pub fn resume(lock: SessionLock, options: WalOptions) -> Result<Wal> {
    if lock.session_id != options.session_id {
      return invalid("the session lock is for another session");
    }
    Wal::open_locked(lock, options)
  }

  fn open_locked(lock: SessionLock, options: WalOptions) -> Result<Wal> {
    let SessionLock { dir: sdir, guard: lock, .. } = lock;
    let (active, next_seq, last_ts, truncated_tail) = open_newest_segment(&sdir, &options)?;
    let shared = Arc::new(Shared {
      queue: Mutex::new(Queue::default()),
      wakeup: Condvar::new(),
      progress: Mutex::new(Progress {
        last_seq: next_seq - 1,
        appended: 0,
        active_segment: active.path().to_path_buf(),
        active_len: active.len,
      }),
    });
    let writer = Writer {
      session_dir: sdir.try_clone()?,
      options: options.clone(),
      active,
      next_seq,
      last_ts,
      dirty: false,
      reopen: false,
      lock,
    };
    let thread_shared = Arc::clone(&shared);
    let handle = std::thread::Builder::new()
      .name(format!("loa-wal-{}", options.session_id))
      .spawn(move || writer.run(&thread_shared))
      .map_err(|e| LoaError::Io { context: "start WAL writer thread".into(), source: e })?;
    Ok(Wal { session: sdir, options, shared, writer: Mutex::new(Some(handle)), truncated_tail })
  }

  /// Queues a record; `reply` runs on the writer thread once it is durable (or failed). Invalid
  /// input is answered immediately, before a seq is spent.
  pub fn append_with(&self, request: AppendRequest, reply: AppendCallback) {
    if let Err(e) =
      format::validate_fields(&request.op, request.path.as_deref(), request.meta.as_deref(), request.data.as_deref())
    {
      return reply(Err(e));
    }
    let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(reason) = &queue.closed {
      let reason = reason.clone();
      drop(queue);
      return reply(Err(LoaError::WalClosed(reason)));
    }
    if queue.closing {
      drop(queue);
      return reply(Err(LoaError::WalClosed("close() was called".into())));
    }
    queue.pending.push(Pending { request, reply });
    drop(queue);
    self.shared.wakeup.notify_one();
  }

  /// Appends and waits until the record is durable; returns its seq.
  pub fn append(&self, request: AppendRequest) -> Result<u64> {
    let (tx, rx) = mpsc::sync_channel(1);
    self.append_with(
      request,
      Box::new(move |result| {
        let _ = tx.send(result);
      }),
    );
    rx.recv().unwrap_or_else(|_| Err(LoaError::Internal("WAL writer stopped without answering".into())))
  }

  /// This session's records in seq order after `since_seq`, at most `limit`.
  pub fn replay(&self, since_seq: u64, limit: Option<usize>) -> Result<Vec<Record>> {
    records_after(read_session_dir(&self.session, &self.options.session_id)?, since_seq, limit)
  }

  pub fn stats(&self) -> Result<WalStats> {
    let progress = self.shared.progress.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let segments = segments_in(&self.session)?;
    // Space written ahead in the active segment is not counted: `bytes` is what records use.
    let mut bytes = 0;
    for s in segments.iter().filter(|s| s.is_regular()) {
      bytes += if s.path == progress.active_segment {
        progress.active_len
      } else {
        match self.session.open_file_if_exists(&s.name, OpenMode::READ) {
          Ok(Some(file)) => file.len().unwrap_or(0),
          _ => 0, // removed by retention meanwhile
        }
      };
    }
    Ok(WalStats {
      session_id: self.options.session_id.clone(),
      segments: segments.len(),
      bytes,
      last_seq: progress.last_seq,
      appended: progress.appended,
      active_segment: progress.active_segment,
      sync: self.options.sync,
      truncated_tail: self.truncated_tail.clone(),
    })
  }

  pub fn session_id(&self) -> &str {
    &self.options.session_id
  }

  /// The segment being appended to and the end of its last record written (after
  /// [`close`](Self::close): where the log ends).
  pub fn position(&self) -> (PathBuf, u64) {
    let progress = self.shared.progress.lock().unwrap_or_else(|p| p.into_inner());
    (progress.active_segment.clone(), progress.active_len)
  }

  pub fn is_closed(&self) -> bool {
    let queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
    queue.closing || queue.closed.is_some()
  }

  /// Writes and syncs everything queued, then releases the lock. Idempotent.
  pub fn close(&self) -> Result<()> {
    self.stop().map(drop)
  }

  /// Like [`close`](Self::close), but hands the session lock to the caller instead of
  /// releasing it: no other writer can open the session until the lock is dropped or given back
  /// to [`Wal::resume`]. `E_WAL_CLOSED` when the log was already closed.
  pub fn suspend(&self) -> Result<SessionLock> {
    match self.stop()? {
      Some(guard) => {
        Ok(SessionLock { dir: self.session.try_clone()?, guard, session_id: self.options.session_id.clone() })
      }
      None => Err(LoaError::WalClosed("the log was closed".into())),
    }
  }

  fn stop(&self) -> Result<Option<LockGuard>> {
    {
      let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
      queue.closing = true;
    }
    self.shared.wakeup.notify_all();
    let handle = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
    match handle {
      Some(handle) => handle.join().map(Some).map_err(|_| LoaError::Internal("WAL writer thread panicked".into())),
      None => Ok(None),
    }
  }
}

impl Drop for Wal {
  fn drop(&mut self) {
    let _ = self.close();
  }
}

struct ActiveSegment {
  file: StateFile,
  header: SegmentHeader,
  /// End of the last record: where the next one goes.
  len: u64,
  /// File size: `len` plus zero-filled space written ahead of time (see [`PREALLOCATE_CHUNK`]).
  allocated: u64,
}

impl ActiveSegment {
  fn has_records(&self) -> bool {
    self.len > SEGMENT_HEADER_LEN as u64
  }

  fn path(&self) -> &Path {
    self.file.path()
  }
}

use crate::timestamp::now_ms;

/// Finds where the session continues: repairs a torn tail of the newest segment, or creates the
/// first segment. Returns the active segment, the next seq, the last timestamp and what was cut.
fn open_newest_segment(
  sdir: &StateDir,
  options: &WalOptions,
) -> Result<(ActiveSegment, u64, i64, Option<SegmentProblem>)> {
  let segments = segments_in(sdir)?;
  let Some(newest) = segments.last() else {
    return Ok((create_segment(sdir, 1)?, 1, 0, None));
  };
  if !newest.is_regular() {
    return Err(newest.not_regular());
  }
  // One handle for reading, repairing and appending: what is cut is exactly what was read.
  let file = sdir.open_file(&newest.name, OpenMode::READ_WRITE)?;
  let bytes = file.read_to_end_bounded(MAX_SEGMENT_BYTES)?;
  let scan = format::scan_segment(&bytes);
  let corrupt =
    |offset: u64, reason: String| LoaError::WalCorrupt { segment: newest.path.display().to_string(), offset, reason };
  if let Some(header) = scan.header {
    if header.first_seq != newest.first_seq {
      return Err(corrupt(0, "header does not match the file name".into()));
    }
  }
  let mut truncated = None;
  match scan.tail {
    Tail::Clean => {}
    Tail::Corrupt { offset, reason } => return Err(corrupt(offset, reason)),
    Tail::Torn { offset, bytes } => {
      let reason = "torn tail (unfinished write) truncated on open".into();
      truncated = Some(SegmentProblem::damage(&options.session_id, &newest.path, offset, bytes, reason));
    }
  }
  lock_file(file.file(), Duration::ZERO, "active WAL segment")?;
  let header = match scan.header {
    Some(header) => {
      if truncated.is_some() {
        file.set_len(scan.valid_len)?;
        file.sync_data()?;
      }
      header
    }
    None => {
      // The crash interrupted the creation of this segment: nothing was ever acknowledged in it.
      let header = SegmentHeader { created_ms: now_ms(), first_seq: newest.first_seq };
      file.set_len(0)?;
      write_header(&file, &header)?;
      header
    }
  };
  let last = scan.records.last();
  let next_seq = last.map_or(newest.first_seq, |r| r.seq + 1).max(newest.first_seq);
  let last_ts = last.map_or(0, |r| r.ts_ms);
  let len = if scan.header.is_some() { scan.valid_len } else { SEGMENT_HEADER_LEN as u64 };
  let allocated = file.len()?;
  Ok((ActiveSegment { file, header, len, allocated }, next_seq, last_ts, truncated))
}

fn write_header(file: &StateFile, header: &SegmentHeader) -> Result<()> {
  file.write_all_at(&format::encode_header(header), 0)?;
  file.sync_all()
}

/// Creates a new segment whose first record will have `first_seq`: header written and fsynced,
/// then the directory fsynced so the file itself survives a crash.
fn create_segment(sdir: &StateDir, first_seq: u64) -> Result<ActiveSegment> {
  let name = segment_file_name(first_seq);
  let file = sdir.open_file(&name, OpenMode::CREATE_NEW)?;
  let header = SegmentHeader { created_ms: now_ms(), first_seq };
  let result = write_header(&file, &header).and_then(|_| sdir.sync());
  if let Err(e) = result {
    // A half-created segment would only be repaired on the next open; remove it now so this
    // writer can retry cleanly.
    drop(file);
    let _ = sdir.remove_file(&name);
    return Err(e);
  }
  lock_file(file.file(), Duration::ZERO, "new WAL segment")?;
  let len = SEGMENT_HEADER_LEN as u64;
  Ok(ActiveSegment { file, header, len, allocated: len })
}

/// State owned by the writer thread.
struct Writer {
  session_dir: StateDir,
  options: WalOptions,
  active: ActiveSegment,
  next_seq: u64,
  last_ts: i64,
  /// Written but not yet fsynced (batch and none modes).
  dirty: bool,
  /// Set when a failed fsync left the active segment's state past its last durable record
  /// unknown: the next write first reopens the log (see [`Writer::reopen`]).
  reopen: bool,
  /// The session lock, handed back when the thread ends (see [`Wal::suspend`]).
  lock: LockGuard,
}

impl Writer {
  fn run(mut self, shared: &Shared) -> LockGuard {
    loop {
      let batch = {
        let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        loop {
          if !queue.pending.is_empty() {
            break std::mem::take(&mut queue.pending);
          }
          if queue.closing {
            let final_sync = self.finish();
            queue.closed = Some(match final_sync {
              Ok(()) => "close() was called".into(),
              Err(e) => format!("final fsync failed: {e}"),
            });
            return self.lock;
          }
          if self.dirty && self.options.sync == SyncMode::Batch {
            let (guard, timeout) =
              shared.wakeup.wait_timeout(queue, BATCH_SYNC_INTERVAL).unwrap_or_else(|p| p.into_inner());
            queue = guard;
            if timeout.timed_out() && queue.pending.is_empty() {
              if let Err(e) = self.sync() {
                queue.closed = Some(format!("fsync failed: {e}"));
              }
            }
          } else {
            queue = shared.wakeup.wait(queue).unwrap_or_else(|p| p.into_inner());
          }
        }
      };
      let (requests, replies): (Vec<_>, Vec<_>) = batch.into_iter().map(|p| (p.request, p.reply)).unzip();
      let outcome = catch_unwind(AssertUnwindSafe(|| self.write_batch(&requests)));
      let results = match outcome {
        Ok(results) => results,
        Err(_) => {
          let reason = "WAL writer panicked; reopen the log".to_string();
          shared.queue.lock().unwrap_or_else(|p| p.into_inner()).closed = Some(reason.clone());
          requests.iter().map(|_| Err(LoaError::Internal(reason.clone()))).collect()
        }
      };
      {
        let mut progress = shared.progress.lock().unwrap_or_else(|p| p.into_inner());
        for seq in results.iter().flatten() {
          progress.last_seq = progress.last_seq.max(*seq);
          progress.appended += 1;
        }
        progress.active_segment = self.active.path().to_path_buf();
        progress.active_len = self.active.len;
      }
      for (reply, result) in replies.into_iter().zip(results) {
        reply(result);
      }
      if shared.queue.lock().unwrap_or_else(|p| p.into_inner()).closed.is_some() {
        return self.lock;
      }
    }
  }

  /// On close and before rotation: trims space written ahead, so a closed or sealed segment ends
  /// at its last record, and makes everything durable.
  fn finish(&mut self) -> Result<()> {
    if self.active.allocated > self.active.len {
      self.active.file.set_len(self.active.len)?;
      self.active.allocated = self.active.len;
      self.dirty = true;
    }
    if self.dirty {
      self.sync()?;
    }
    Ok(())
  }

  fn sync(&mut self) -> Result<()> {
    self.active.file.sync_data()?;
    self.dirty = false;
    Ok(())
  }

  fn needs_rotation(&self, extra: u64, now: i64) -> bool {
    if !self.active.has_records() && extra == 0 {
      return false;
    }
    let age = now.saturating_sub(self.active.header.created_ms).max(0) as u128;
    age >= self.options.segment_max_age.as_millis() || self.active.len + extra > self.options.segment_max_bytes
  }

  /// Writes a batch, rotating segments as needed; one result per request, in order.
  fn write_batch(&mut self, requests: &[AppendRequest]) -> Vec<Result<u64>> {
    let mut results: Vec<Result<u64>> = Vec::with_capacity(requests.len());
    if self.reopen {
      if let Err(e) = self.reopen() {
        return fail_rest(results, requests.len(), e);
      }
    }
    let mut buffer = Vec::new();
    let mut buffered_from = 0; // index of the first request in `buffer`
    let mut index = 0;
    while index < requests.len() {
      let request = &requests[index];
      let now = now_ms();
      let ts_ms = now.max(self.last_ts);
      let record = Record {
        seq: self.next_seq,
        ts_ms,
        session_id: self.options.session_id.clone(),
        op: request.op.clone(),
        path: request.path.clone(),
        meta: request.meta.clone(),
        data: request.data.clone(),
      };
      let mark = buffer.len();
      format::encode_record(&record, &mut buffer);
      let record_len = (buffer.len() - mark) as u64;
      if self.needs_rotation(mark as u64 + record_len, now) && (self.active.has_records() || mark > 0) {
        buffer.truncate(mark);
        if let Err(e) = self.flush(&buffer, buffered_from, &mut results).and_then(|_| self.rotate()) {
          return fail_rest(results, requests.len(), e);
        }
        buffer.clear();
        buffered_from = index;
        continue; // re-encode into the fresh segment (same seq)
      }
      self.next_seq += 1;
      self.last_ts = ts_ms;
      index += 1;
    }
    if let Err(e) = self.flush(&buffer, buffered_from, &mut results) {
      return fail_rest(results, requests.len(), e);
    }
    results
  }

  /// Writes `buffer` (records `first..` of the batch) and syncs per mode, pushing their seqs.
  /// On failure the segment is cut back to where it was, so the log holds exactly the records
  /// that were acknowledged, and the unused seqs are handed out again.
  fn flush(&mut self, buffer: &[u8], first: usize, results: &mut Vec<Result<u64>>) -> Result<()> {
    if buffer.is_empty() {
      return Ok(());
    }
    let count = count_records(buffer);
    let first_seq = self.next_seq - count as u64;
    debug_assert_eq!(results.len(), first);
    let before = self.active.len;
    let end = before + buffer.len() as u64;
    if end > self.active.allocated {
      self.preallocate(end);
    }
    if let Err(e) = self.active.file.write_all_at(buffer, before) {
      self.cut_back(before);
      self.next_seq = first_seq;
      return Err(e);
    }
    self.active.len = end;
    self.active.allocated = self.active.allocated.max(end);
    self.dirty = true;
    if self.options.sync == SyncMode::Always {
      if let Err(e) = self.sync() {
        // After a failed fsync the kernel may have dropped the dirty pages: what this file holds
        // past `before` is unknown. These records get the fsync's own error (with its
        // `osError`); the next write reopens the log after the last durable record.
        self.active.len = before;
        self.cut_back(before);
        self.next_seq = first_seq;
        self.reopen = true;
        return Err(e);
      }
    }
    results.extend((0..count as u64).map(|i| Ok(first_seq + i)));
    Ok(())
  }

  /// Zero-fills the active segment up to at least `end` (usually a chunk beyond it, never past
  /// `segment_max_bytes` unless one record needs more). Best effort: when the disk refuses (full,
  /// file size limit), the partial fill is cut back and the record write itself extends the
  /// file, so running out of space fails exactly the records that do not fit.
  fn preallocate(&mut self, end: u64) {
    let target = (self.active.allocated + PREALLOCATE_CHUNK).min(self.options.segment_max_bytes).max(end);
    let zeros = vec![0u8; 64 * 1024];
    let mut at = self.active.allocated;
    while at < target {
      let n = (target - at).min(zeros.len() as u64) as usize;
      if self.active.file.write_all_at(&zeros[..n], at).is_err() {
        let _ = self.active.file.set_len(self.active.allocated);
        return;
      }
      at += n as u64;
    }
    self.active.allocated = target;
  }

  /// Removes a failed write (and any space written ahead) so the file ends at `len`.
  fn cut_back(&mut self, len: u64) {
    if self.active.file.set_len(len).is_ok() {
      self.active.allocated = len;
    }
  }

  /// After a failed fsync: cuts the active segment back to its last durable record and makes
  /// that cut durable, so no record that was not acknowledged can surface later (a crash's torn
  /// tail is cut the same way on open), then continues in a new segment whose first seq follows
  /// the last durable record: the old file's cached pages are not trusted to be what is on disk.
  /// A segment without records is kept (it is only its header). Fails with the disk's error
  /// while the disk still refuses, leaving the flag set so that the next write tries again.
  fn reopen(&mut self) -> Result<()> {
    self.active.file.set_len(self.active.len)?;
    self.active.allocated = self.active.len;
    self.active.file.sync_all()?;
    self.dirty = false;
    if self.active.has_records() {
      self.active = create_segment(&self.session_dir, self.next_seq)?;
    }
    self.reopen = false;
    Ok(())
  }

  /// Seals the active segment (trimmed to its records, fsynced) and starts a new one.
  fn rotate(&mut self) -> Result<()> {
    self.finish()?;
    let next = create_segment(&self.session_dir, self.next_seq)?;
    self.active = next; // dropping the old file releases its segment lock
    Ok(())
  }
}

fn count_records(buffer: &[u8]) -> usize {
  let mut count = 0;
  let mut offset = 0;
  while offset < buffer.len() {
    let len = u32::from_le_bytes(buffer[offset + 4..offset + 8].try_into().unwrap()) as usize;
    offset += format::FRAME_HEADER_LEN + len;
    count += 1;
  }
  count
}

fn fail_rest(mut results: Vec<Result<u64>>, total: usize, error: LoaError) -> Vec<Result<u64>> {
  while results.len() < total {
    results.push(Err(error.duplicate()));
  }
  results
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_state;
