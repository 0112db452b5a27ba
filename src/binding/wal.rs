//! The `Wal` class and the directory-level functions `readWal`, `verifyWal`, `consolidateWal`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::{Env, Unknown};
use napi_derive::napi;

use super::fs::CoreTask;
use super::promises::{settle_now, Deferred, PromiseBatcher};
use super::{args, guard, js_error, to_napi};
use crate::wal::{self as core, format::Record, AppendRequest, ConsolidateOptions, SyncMode, WalOptions};

/// Options of `Wal.open`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field in `args`
pub struct WalOpenOptions {
  /// Whose log this is. One writer per session at a time; sessions are merged on
  /// consolidation. 1-128 characters of `A-Z a-z 0-9 . _ -`. Default `'default'`.
  pub session_id: Option<String>,
  /// How long to wait for another writer of the same session to let go before failing with
  /// `E_WAL_LOCKED`. Default 5000.
  pub lock_timeout_ms: Option<u32>,
  /// Start a new segment once the current one would exceed this size. Default 10 MiB, minimum
  /// 4096, maximum 256 MiB (the largest segment readers accept). A single record larger than
  /// this gets a segment of its own.
  pub segment_max_bytes: Option<f64>,
  /// Start a new segment once the current one is this old. Default one hour.
  pub segment_max_age_ms: Option<f64>,
  /// When `append` resolves: `'always'` after fdatasync (survives power loss; concurrent appends
  /// share one fsync), `'batch'` after write with an fsync within 100 ms, `'none'` after write
  /// with fsync only at segment rotation and close. Default `'always'`.
  #[napi(ts_type = "'always' | 'batch' | 'none'")]
  pub sync: Option<String>,
}

/// A record to append.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field in `args`
pub struct WalAppendRecord {
  /// What the record means, e.g. `'write'` or `'delete'` (the two ops consolidation applies to
  /// `path`) or any other name of yours (kept in the log, not applied). 1-256 bytes.
  pub op: String,
  /// File the record concerns, relative to the consolidation target; no `..`, not absolute.
  pub path: Option<String>,
  /// Payload; stored as exact bytes (a string is stored as UTF-8) and returned as a Buffer.
  #[napi(ts_type = "Buffer | Uint8Array | string")]
  pub data: Option<Buffer>,
  /// Any JSON-serialisable object, stored as JSON.
  #[napi(ts_type = "Record<string, unknown>")]
  pub meta: Option<serde_json::Value>,
}

/// A record read back from the log.
#[napi(object)]
pub struct WalRecord {
  /// Position in its session's log: 1, 2, 3, ... never reused, even after a crash.
  pub seq: f64,
  /// When it was appended, in milliseconds since the Unix epoch; never decreases within a session.
  pub ts: f64,
  pub session_id: String,
  pub op: String,
  pub path: Option<String>,
  pub data: Option<Buffer>,
  #[napi(ts_type = "Record<string, unknown>")]
  pub meta: Option<serde_json::Value>,
}

/// Options of `Wal.replay`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field in `args`
pub struct WalReplayOptions {
  /// Only records with a greater seq. Default 0 (all).
  pub since_seq: Option<f64>,
  /// At most this many records.
  pub limit: Option<u32>,
}

/// Damage found in a segment, or something that is not a segment where one belongs.
#[napi(object)]
pub struct WalSegmentProblem {
  pub session_id: String,
  /// Path of the segment file (or of the session directory, for a session that cannot be read).
  pub segment: String,
  /// Byte offset where the damage starts.
  pub offset: f64,
  /// For torn tails, how many bytes an opening writer cuts off.
  pub bytes: f64,
  pub reason: String,
  /// What `readWal` and `replay` throw for it: `E_WAL_CORRUPT` for damaged bytes,
  /// `E_NOT_REGULAR_FILE` for a symlink, FIFO, device, socket or directory named like a segment
  /// (never opened), `E_PATH_OUTSIDE_ROOT` for a symlinked `sessions` or session directory,
  /// `E_TOO_LARGE` for a segment over 256 MiB, `E_IO` for one the OS refused to read.
  #[napi(ts_type = "LoaErrorCode")]
  pub code: String,
}

/// What `Wal.stats` reports.
#[napi(object)]
pub struct WalStats {
  pub session_id: String,
  /// Segment files of this session on disk now.
  pub segments: u32,
  /// Their total size.
  pub bytes: f64,
  /// Highest seq of this session (0 when empty).
  pub last_seq: f64,
  /// Records appended through this handle.
  pub appended: f64,
  /// Path of the segment being written.
  pub active_segment: String,
  #[napi(ts_type = "'always' | 'batch' | 'none'")]
  pub sync: String,
  /// The torn tail cut off when this Wal was opened (left by a crash), if any.
  pub truncated_tail: Option<WalSegmentProblem>,
}

/// What `verifyWal` found.
#[napi(object)]
pub struct WalVerification {
  /// False when any segment is corrupt. Torn tails alone leave it true: they are the normal
  /// residue of a crash and the next writer cuts them off.
  pub ok: bool,
  pub records: u32,
  pub sessions: u32,
  pub segments: u32,
  pub bytes: f64,
  pub truncated_tails: Vec<WalSegmentProblem>,
  pub corrupt: Vec<WalSegmentProblem>,
}

/// One side of a conflict.
#[napi(object)]
pub struct WalConflictSide {
  pub session_id: String,
  pub seq: f64,
  pub ts: f64,
  pub op: String,
  /// sha256 (hex) of the record's data.
  pub hash: String,
}

/// Two sessions wrote the same path; `winner` (greatest ts, then sessionId, then seq) is what
/// the target holds, `overwritten` is logged in `conflicts.jsonl`.
#[napi(object)]
pub struct WalConflict {
  pub path: String,
  pub winner: WalConflictSide,
  pub overwritten: WalConflictSide,
}

/// Options of `consolidateWal`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field in `args`
pub struct ConsolidateWalOptions {
  /// Remove segments whose records have all been applied (never a session's newest). Default true.
  pub prune: Option<bool>,
  /// How long to wait for a concurrent consolidation of the same directory. Default 5000.
  pub lock_timeout_ms: Option<u32>,
}

/// A record `consolidateWal` could not apply because of what it names (its target is a
/// directory, symlink or FIFO, a parent is a file or a symlink, a name too long for the file
/// system). The whole record is kept in `<dir>/dead-letter.jsonl`; this report carries no data.
#[napi(object)]
pub struct WalDeadLetter {
  pub path: String,
  pub session_id: String,
  pub seq: f64,
  /// `E_NOT_REGULAR_FILE`, `E_PATH_OUTSIDE_ROOT`, `E_INVALID_ARGUMENT` or `E_IO`.
  #[napi(ts_type = "LoaErrorCode")]
  pub code: String,
  /// The error message (it names paths, never record data).
  pub reason: String,
}

/// What `consolidateWal` did.
#[napi(object)]
pub struct WalConsolidation {
  /// Files written or deleted in the target directory.
  pub applied: u32,
  /// New records read (all ops).
  pub records: u32,
  pub conflicts: Vec<WalConflict>,
  /// Segment files removed by retention.
  pub pruned_segments: u32,
  /// Records that could not be applied, now in `dead-letter.jsonl`; they count as handled and
  /// are not retried.
  pub dead_letters: Vec<WalDeadLetter>,
}

fn record_to_js(record: Record) -> WalRecord {
  WalRecord {
    seq: record.seq as f64,
    ts: record.ts_ms as f64,
    session_id: record.session_id,
    op: record.op,
    path: record.path,
    data: record.data.map(Buffer::from),
    // Meta was validated as JSON when appended and is covered by the record checksum.
    meta: record.meta.and_then(|m| serde_json::from_str(&m).ok()),
  }
}

fn problem_to_js(p: core::SegmentProblem) -> WalSegmentProblem {
  WalSegmentProblem {
    session_id: p.session_id,
    segment: p.segment.display().to_string(),
    offset: p.offset as f64,
    bytes: p.bytes as f64,
    reason: p.reason,
    code: p.code.into(),
  }
}

fn side_to_js(s: core::ConflictSide) -> WalConflictSide {
  WalConflictSide { session_id: s.session_id, seq: s.seq as f64, ts: s.ts as f64, op: s.op, hash: s.hash }
}

fn parse_open_options(options: Option<Unknown>) -> crate::Result<WalOptions> {
  let mut parsed = WalOptions::default();
  let Some(o) = args::optional_object(options, "options")? else { return Ok(parsed) };
  if let Some(id) = args::optional_string(&o, "sessionId")? {
    parsed.session_id = id;
  }
  if let Some(ms) = args::optional_u64(&o, "lockTimeoutMs")? {
    parsed.lock_timeout = Duration::from_millis(ms);
  }
  if let Some(bytes) = args::optional_u64(&o, "segmentMaxBytes")? {
    parsed.segment_max_bytes = bytes;
  }
  if let Some(ms) = args::optional_u64(&o, "segmentMaxAgeMs")? {
    parsed.segment_max_age = Duration::from_millis(ms);
  }
  if let Some(sync) = args::optional_string(&o, "sync")? {
    parsed.sync = SyncMode::parse(&sync)?;
  }
  Ok(parsed)
}

fn parse_record(env: &Env, rec: Unknown) -> crate::Result<AppendRequest> {
  let o = args::optional_object(Some(rec), "record")?
    .ok_or_else(|| crate::LoaError::InvalidArgument("`record` must be an object".into()))?;
  Ok(AppendRequest {
    op: args::optional_string(&o, "op")?
      .ok_or_else(|| crate::LoaError::InvalidArgument("`op` must be a string".into()))?,
    path: args::optional_string(&o, "path")?,
    meta: args::optional_json_object(env, &o, "meta")?,
    data: args::optional_bytes(&o, "data")?,
  })
}

/// One session's write-ahead log, open for appending.
///
/// ```ts
/// const wal = Wal.open('.loa/wal', { sessionId: 'agent-1' })
/// const seq = await wal.append({ op: 'write', path: 'NOTES.md', data: '# Notes' })
/// wal.close()
/// ```
#[napi]
pub struct Wal {
  inner: Arc<core::Wal>,
  /// Created on the first `append` (it needs the JS thread), released on close.
  promises: std::cell::OnceCell<PromiseBatcher>,
}

impl Wal {
  fn wrap(wal: core::Wal) -> Wal {
    Wal { inner: Arc::new(wal), promises: std::cell::OnceCell::new() }
  }

  fn shut_down(&self) -> crate::Result<()> {
    // The writer thread settles its last promises before `close` returns; only then may the
    // thread-safe function that delivers them be released.
    let result = self.inner.close();
    if let Some(promises) = self.promises.get() {
      promises.release();
    }
    result
  }
}

impl Drop for Wal {
  fn drop(&mut self) {
    let _ = self.shut_down();
  }
}

#[napi]
impl Wal {
  /// Opens (creating if needed) the log of one session under `dir`. Waits up to
  /// `lockTimeoutMs` for another writer of the same session (`E_WAL_LOCKED`), cuts off a torn
  /// tail left by a crash (see `stats().truncatedTail`) and continues after the highest seq on
  /// disk. Fails with `E_WAL_CORRUPT` if the newest segment is damaged anywhere but its tail,
  /// `E_NOT_REGULAR_FILE` if it (or the session's `LOCK`) is a symlink, FIFO, device, socket or
  /// directory (never opened), `E_TOO_LARGE` if it is over 256 MiB, `E_PATH_OUTSIDE_ROOT` if
  /// `sessions` or the session directory is a symlink, `E_INVALID_ARGUMENT` for an empty `dir`;
  /// in each case changing nothing.
  #[napi(factory, ts_args_type = "dir: string, options?: WalOpenOptions")]
  pub fn open(env: Env, dir: Unknown, options: Option<Unknown>) -> napi::Result<Wal> {
    let wal = to_napi(
      &env,
      guard(|| {
        let dir = PathBuf::from(args::string(dir, "dir")?);
        core::Wal::open(&dir, parse_open_options(options)?)
      }),
    )?;
    Ok(Wal::wrap(wal))
  }

  /// Same as `open`, without blocking the event loop while it waits for the session lock or
  /// reads the newest segment.
  #[napi(ts_args_type = "dir: string, options?: WalOpenOptions", ts_return_type = "Promise<Wal>")]
  pub fn open_async(env: Env, dir: Unknown, options: Option<Unknown>) -> AsyncTask<CoreTask<Wal>> {
    let args = guard(|| Ok((PathBuf::from(args::string(dir, "dir")?), parse_open_options(options)?)));
    CoreTask::after(&env, args, |(dir, options)| core::Wal::open(&dir, options).map(Wal::wrap))
  }

  /// Appends a record; resolves with its seq once it is durable under the `sync` mode. Never
  /// blocks the event loop: records are written by a background thread, and appends made
  /// while a write is in flight are committed together with one fsync. Seqs follow call order.
  /// Rejects with `E_INVALID_ARGUMENT`, `E_PATH_OUTSIDE_ROOT` or `E_TOO_LARGE` for bad input
  /// (nothing is written), `E_IO` when the disk refuses (the log keeps exactly the records
  /// that resolved), `E_WAL_CLOSED` after `close()`.
  #[napi(ts_args_type = "record: WalAppendRecord", ts_return_type = "Promise<number>")]
  pub fn append(&self, env: Env, record: Unknown) -> napi::Result<Unknown<'_>> {
    // The record is read before any promise exists: a getter or Proxy that throws becomes a
    // rejection, never a throw beside a pending promise.
    let request = guard(|| parse_record(&env, record));
    if self.promises.get().is_some_and(PromiseBatcher::is_released) {
      // Closed: answer on this thread, the background channel is gone.
      return self.rejected(&env, crate::LoaError::WalClosed("close() was called".into()));
    }
    let request = match request {
      Ok(request) => request,
      Err(e) => return self.rejected(&env, e),
    };
    let promises = match self.promises.get() {
      Some(p) => p,
      None => {
        let created = PromiseBatcher::new(&env)?;
        self.promises.get_or_init(|| created)
      }
    };
    let (deferred, promise) = promises.create(&env)?;
    let batcher = PromiseBatcher::clone_handle(promises);
    self.inner.append_with(request, Box::new(move |result| batcher.settle(deferred, result)));
    Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), promise) })
  }

  fn rejected(&self, env: &Env, error: crate::LoaError) -> napi::Result<Unknown<'_>> {
    super::clear_pending_exception(env.raw());
    let mut deferred = std::ptr::null_mut();
    let mut promise = std::ptr::null_mut();
    let status = unsafe { napi::sys::napi_create_promise(env.raw(), &mut deferred, &mut promise) };
    if status != napi::sys::Status::napi_ok {
      return Err(js_error(env, &error));
    }
    settle_now(env, Deferred::from_raw(deferred), Err(error));
    Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), promise) })
  }

  /// Synchronous twin of `append`: blocks until the record is durable, returns its seq.
  #[napi(ts_args_type = "record: WalAppendRecord")]
  pub fn append_sync(&self, env: Env, record: Unknown) -> napi::Result<f64> {
    to_napi(&env, guard(|| self.inner.append(parse_record(&env, record)?))).map(|seq| seq as f64)
  }

  /// This session's records on disk, in seq order. Throws `E_WAL_CORRUPT` (with `segment` and
  /// `offset`) if any segment is damaged; reading never modifies the log.
  #[napi(ts_args_type = "options?: WalReplayOptions")]
  pub fn replay(&self, env: Env, options: Option<Unknown>) -> napi::Result<Vec<WalRecord>> {
    let records = to_napi(
      &env,
      guard(|| {
        let (mut since, mut limit) = (0, None);
        if let Some(o) = args::optional_object(options, "options")? {
          since = args::optional_u64(&o, "sinceSeq")?.unwrap_or(0);
          limit = args::optional_u64(&o, "limit")?.map(|l| l as usize);
        }
        self.inner.replay(since, limit)
      }),
    )?;
    Ok(records.into_iter().map(record_to_js).collect())
  }

  /// Size and progress of this session's log.
  #[napi]
  pub fn stats(&self, env: Env) -> napi::Result<WalStats> {
    let s = to_napi(&env, guard(|| self.inner.stats()))?;
    Ok(WalStats {
      session_id: s.session_id,
      segments: s.segments as u32,
      bytes: s.bytes as f64,
      last_seq: s.last_seq as f64,
      appended: s.appended as f64,
      active_segment: s.active_segment.display().to_string(),
      sync: s.sync.as_str().into(),
      truncated_tail: s.truncated_tail.map(problem_to_js),
    })
  }

  /// True once `close()` was called (or a failed fsync stopped the log).
  #[napi(getter)]
  pub fn closed(&self) -> bool {
    self.inner.is_closed()
  }

  /// Waits for queued appends to become durable, then releases the session lock. Later
  /// appends reject with `E_WAL_CLOSED`. Calling it again does nothing.
  #[napi]
  pub fn close(&self, env: Env) -> napi::Result<()> {
    to_napi(&env, guard(|| self.shut_down()))
  }
}

/// Every session's records under `dir`, merged in (ts, sessionId, seq) order; a missing `dir`
/// has none. Throws `E_WAL_CORRUPT` on damage other than a torn tail, `E_NOT_REGULAR_FILE` for a
/// symlink, FIFO, device, socket or directory named like a segment (never opened),
/// `E_PATH_OUTSIDE_ROOT` for a symlinked `sessions` or session directory, `E_TOO_LARGE` for a
/// segment over 256 MiB; never modifies the log. A segment removed by a concurrent
/// consolidation's retention was consolidated and is skipped.
#[napi(ts_args_type = "dir: string")]
pub fn read_wal(env: Env, dir: Unknown) -> napi::Result<Vec<WalRecord>> {
  let records = to_napi(&env, guard(|| core::read_dir_merged(&PathBuf::from(args::string(dir, "dir")?))))?;
  Ok(records.into_iter().map(record_to_js).collect())
}

/// Checks every segment of every session under `dir` and reports what it found (each problem
/// with the `code` a reader would throw), without throwing for damage and without modifying or
/// opening anything but regular files. Throws only when `dir` is not a directory
/// (`E_INVALID_ARGUMENT`) or cannot be listed (`E_IO`).
#[napi(ts_args_type = "dir: string")]
pub fn verify_wal(env: Env, dir: Unknown) -> napi::Result<WalVerification> {
  let v = to_napi(&env, guard(|| core::verify_dir(&PathBuf::from(args::string(dir, "dir")?))))?;
  Ok(WalVerification {
    ok: v.ok(),
    records: v.records as u32,
    sessions: v.sessions as u32,
    segments: v.segments as u32,
    bytes: v.bytes as f64,
    truncated_tails: v.truncated_tails.into_iter().map(problem_to_js).collect(),
    corrupt: v.corrupt.into_iter().map(problem_to_js).collect(),
  })
}

/// Applies every session's new records under `dir` to `targetDir`: `write` records become files
/// (written atomically), `delete` records remove them; per path the last write wins, judged by
/// (ts, sessionId, seq) across all runs. Cross-session overwrites are returned and appended to
/// `<dir>/conflicts.jsonl`. A record that cannot be applied because of what it names goes to
/// `<dir>/dead-letter.jsonl` and `deadLetters`, and the rest are applied. Then removes segments
/// whose records are all applied. Nothing is written through a symlink or created outside
/// `targetDir`.
#[napi(ts_args_type = "dir: string, targetDir: string, options?: ConsolidateWalOptions")]
pub fn consolidate_wal(
  env: Env,
  dir: Unknown,
  target_dir: Unknown,
  options: Option<Unknown>,
) -> napi::Result<WalConsolidation> {
  let c = to_napi(
    &env,
    guard(|| {
      let dir = PathBuf::from(args::string(dir, "dir")?);
      let target = PathBuf::from(args::string(target_dir, "targetDir")?);
      let mut opts = ConsolidateOptions::default();
      if let Some(o) = args::optional_object(options, "options")? {
        opts.prune = args::optional_bool(&o, "prune")?.unwrap_or(true);
        if let Some(ms) = args::optional_u64(&o, "lockTimeoutMs")? {
          opts.lock_timeout = Duration::from_millis(ms);
        }
      }
      core::consolidate(&dir, &target, &opts)
    }),
  )?;
  Ok(WalConsolidation {
    applied: c.applied as u32,
    records: c.records as u32,
    conflicts: c
      .conflicts
      .into_iter()
      .map(|c| WalConflict { path: c.path, winner: side_to_js(c.winner), overwritten: side_to_js(c.overwritten) })
      .collect(),
    pruned_segments: c.pruned_segments as u32,
    dead_letters: c
      .dead_letters
      .into_iter()
      .map(|d| WalDeadLetter {
        path: d.path,
        session_id: d.session_id,
        seq: d.seq as f64,
        code: d.code.into(),
        reason: d.reason,
      })
      .collect(),
  })
}
