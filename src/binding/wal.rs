//! The `Wal` class and the directory-level functions `readWal`, `verifyWal`, `consolidateWal`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::{Env, Unknown};
use napi_derive::napi;

use super::convert::{
  js_from, object, opt_object, path, string_union, Bool, Bytes, Choice, Given, Int, Json, JsonObject, Str,
};
use super::promises::{settle_now, Deferred, PromiseBatcher};
use super::{clear_pending_exception, guard, js_error, sync, sync_twin, CoreTask, RawJs};
use crate::wal::{self as core, format::Record, AppendRequest, ConsolidateOptions, SyncMode, WalOptions};

string_union! {
  "fsync policy of the WAL: before every append, group commit, or never explicitly."
  WalSync <=> SyncMode {
    always = Always,
    batch = Batch,
    none = None,
  }
}

/// Options of `Wal.open`.
#[napi(object, object_to_js = false)]
pub struct WalOpenOptions {
  /// Whose log this is. One writer per session at a time; sessions are merged on
  /// consolidation. 1-128 characters of `A-Z a-z 0-9 . _ -`. Default `'default'`.
  #[napi(ts_type = "string")]
  pub session_id: Option<Option<Str>>,
  /// How long to wait for another writer of the same session to let go before failing with
  /// `E_WAL_LOCKED`. Default 5000.
  #[napi(ts_type = "number")]
  pub lock_timeout_ms: Option<Option<Int>>,
  /// Start a new segment once the current one would exceed this size. Default 10 MiB, minimum
  /// 4096, maximum 256 MiB (the largest segment readers accept). A single record larger than
  /// this gets a segment of its own.
  #[napi(ts_type = "number")]
  pub segment_max_bytes: Option<Option<Int>>,
  /// Start a new segment once the current one is this old. Default one hour.
  #[napi(ts_type = "number")]
  pub segment_max_age_ms: Option<Option<Int>>,
  /// When `append` resolves: `'always'` after fdatasync (survives power loss; concurrent appends
  /// share one fsync), `'batch'` after write with an fsync within 100 ms, `'none'` after write
  /// with fsync only at segment rotation and close. Default `'always'`.
  #[napi(ts_type = "WalSync")]
  pub sync: Option<Option<Choice<WalSync>>>,
}

impl From<WalOpenOptions> for WalOptions {
  fn from(o: WalOpenOptions) -> WalOptions {
    let d = WalOptions::default();
    WalOptions {
      session_id: o.session_id.given().unwrap_or(d.session_id),
      lock_timeout: o.lock_timeout_ms.given().map_or(d.lock_timeout, Duration::from_millis),
      segment_max_bytes: o.segment_max_bytes.given().unwrap_or(d.segment_max_bytes),
      segment_max_age: o.segment_max_age_ms.given().map_or(d.segment_max_age, Duration::from_millis),
      sync: o.sync.given().unwrap_or(d.sync),
    }
  }
}

/// A record to append.
#[napi(object, object_to_js = false)]
pub struct WalAppendRecord {
  /// What the record means, e.g. `'write'` or `'delete'` (the two ops consolidation applies to
  /// `path`) or any other name of yours (kept in the log, not applied). 1-256 bytes.
  #[napi(ts_type = "string")]
  pub op: Str,
  /// File the record concerns, relative to the consolidation target; no `..`, not absolute.
  #[napi(ts_type = "string")]
  pub path: Option<Option<Str>>,
  /// Payload; stored as exact bytes (a string is stored as UTF-8) and returned as a Buffer.
  #[napi(ts_type = "Buffer | Uint8Array | string")]
  pub data: Option<Option<Bytes>>,
  /// Any JSON-serialisable object, stored as JSON.
  #[napi(ts_type = "Record<string, unknown>")]
  pub meta: Option<Option<JsonObject>>,
}

impl From<WalAppendRecord> for AppendRequest {
  fn from(r: WalAppendRecord) -> AppendRequest {
    AppendRequest {
      op: r.op.0,
      path: r.path.given(),
      meta: r.meta.flatten().map(|m| serde_json::Value::Object(m.0).to_string()),
      data: r.data.flatten().map(|d| d.0),
    }
  }
}

/// A record read back from the log.
#[napi(object, object_from_js = false)]
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
  pub meta: Option<Json>,
}

// Meta was checked to be JSON when appended and is covered by the record checksum.
js_from!(|r: Record| WalRecord {
  seq: f64,
  ts = r.ts_ms as f64,
  session_id,
  op,
  path,
  data = r.data.map(Buffer::from),
  meta = r.meta.and_then(|m| serde_json::from_str(&m).ok()).map(Json),
});

/// Options of `Wal.replay`.
#[napi(object, object_to_js = false)]
pub struct WalReplayOptions {
  /// Only records with a greater seq. Default 0 (all).
  #[napi(ts_type = "number")]
  pub since_seq: Option<Option<Int>>,
  /// At most this many records.
  #[napi(ts_type = "number")]
  pub limit: Option<Option<Int>>,
}

/// `(sinceSeq, limit)`.
impl From<WalReplayOptions> for (u64, Option<usize>) {
  fn from(o: WalReplayOptions) -> (u64, Option<usize>) {
    (o.since_seq.given().unwrap_or(0), o.limit.given().map(|l: u64| l as usize))
  }
}

/// Damage found in a segment, or something that is not a segment where one belongs.
#[napi(object, object_from_js = false)]
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

js_from!(|p: core::SegmentProblem| WalSegmentProblem {
  session_id,
  segment = p.segment.display().to_string(),
  offset: f64,
  bytes: f64,
  reason,
  code => into,
});

/// What `Wal.stats` reports.
#[napi(object, object_from_js = false)]
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
  pub sync: WalSync,
  /// The torn tail cut off when this Wal was opened (left by a crash), if any.
  pub truncated_tail: Option<WalSegmentProblem>,
}

js_from!(|s: core::WalStats| WalStats {
  session_id,
  segments: u32,
  bytes: f64,
  last_seq: f64,
  appended: f64,
  active_segment = s.active_segment.display().to_string(),
  sync => into,
  truncated_tail => each,
});

/// What `verifyWal` found.
#[napi(object, object_from_js = false)]
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

js_from!(|v: core::reader::Verification| WalVerification {
  ok = v.ok(),
  records: u32,
  sessions: u32,
  segments: u32,
  bytes: f64,
  truncated_tails => each,
  corrupt => each,
});

/// One side of a conflict.
#[napi(object, object_from_js = false)]
pub struct WalConflictSide {
  pub session_id: String,
  pub seq: f64,
  pub ts: f64,
  pub op: String,
  /// sha256 (hex) of the record's data.
  pub hash: String,
}

js_from!(|s: core::ConflictSide| WalConflictSide { session_id, seq: f64, ts: f64, op, hash });

/// Two sessions wrote the same path; `winner` (greatest ts, then sessionId, then seq) is what
/// the target holds, `overwritten` is logged in `conflicts.jsonl`.
#[napi(object, object_from_js = false)]
pub struct WalConflict {
  pub path: String,
  pub winner: WalConflictSide,
  pub overwritten: WalConflictSide,
}

js_from!(|c: core::Conflict| WalConflict { path, winner => into, overwritten => into });

/// Options of `consolidateWal`.
#[napi(object, object_to_js = false)]
pub struct ConsolidateWalOptions {
  /// Remove segments whose records have all been applied (never a session's newest). Default true.
  #[napi(ts_type = "boolean")]
  pub prune: Option<Option<Bool>>,
  /// How long to wait for a concurrent consolidation of the same directory. Default 5000.
  #[napi(ts_type = "number")]
  pub lock_timeout_ms: Option<Option<Int>>,
}

impl From<ConsolidateWalOptions> for ConsolidateOptions {
  fn from(o: ConsolidateWalOptions) -> ConsolidateOptions {
    let d = ConsolidateOptions::default();
    ConsolidateOptions {
      prune: o.prune.given().unwrap_or(d.prune),
      lock_timeout: o.lock_timeout_ms.given().map_or(d.lock_timeout, Duration::from_millis),
      ..d
    }
  }
}

/// A record `consolidateWal` could not apply because of what it names (its target is a
/// directory, symlink or FIFO, a parent is a file or a symlink, a name too long for the file
/// system). The whole record is kept in `<dir>/dead-letter.jsonl`; this report carries no data.
#[napi(object, object_from_js = false)]
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

js_from!(|d: core::consolidate::DeadLetter| WalDeadLetter { path, session_id, seq: f64, code => into, reason });

/// What `consolidateWal` did.
#[napi(object, object_from_js = false)]
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

js_from!(|c: core::Consolidation| WalConsolidation {
  applied: u32,
  records: u32,
  conflicts => each,
  pruned_segments: u32,
  dead_letters => each,
});

fn open_args(dir: Unknown, options: Option<Unknown>) -> crate::Result<(PathBuf, WalOptions)> {
  Ok((path(dir, "dir")?, opt_object::<WalOpenOptions, _>(options, "options")?))
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

  /// A promise already rejected with `error` (built on this thread).
  fn rejected(&self, env: &Env, error: crate::LoaError) -> napi::Result<RawJs> {
    clear_pending_exception(env.raw());
    let mut deferred = std::ptr::null_mut();
    let mut promise = std::ptr::null_mut();
    // SAFETY: on the JS thread with its env; both out-pointers are written by the call.
    let status = unsafe { napi::sys::napi_create_promise(env.raw(), &mut deferred, &mut promise) };
    if status != napi::sys::Status::napi_ok {
      return Err(js_error(env, &error));
    }
    settle_now(env, Deferred::from_raw(deferred), Err(error));
    Ok(RawJs(promise))
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
    sync_twin(&env, || open_args(dir, options), |(dir, options)| core::Wal::open(&dir, options).map(Wal::wrap))
  }

  /// Same as `open`, without blocking the event loop while it waits for the session lock or
  /// reads the newest segment.
  #[napi(ts_args_type = "dir: string, options?: WalOpenOptions", ts_return_type = "Promise<Wal>")]
  pub fn open_async(env: Env, dir: Unknown, options: Option<Unknown>) -> AsyncTask<CoreTask<Wal>> {
    CoreTask::after(&env, || open_args(dir, options), |(dir, options)| core::Wal::open(&dir, options).map(Wal::wrap))
  }

  /// Appends a record; resolves with its seq once it is durable under the `sync` mode. Never
  /// blocks the event loop: records are written by a background thread, and appends made
  /// while a write is in flight are committed together with one fsync. Seqs follow call order.
  /// Rejects with `E_INVALID_ARGUMENT`, `E_PATH_OUTSIDE_ROOT` or `E_TOO_LARGE` for bad input
  /// (nothing is written), `E_IO` when the disk refuses (the log keeps exactly the records
  /// that resolved), `E_WAL_CLOSED` after `close()`.
  #[napi(ts_args_type = "record: WalAppendRecord", ts_return_type = "Promise<number>")]
  pub fn append(&self, env: Env, record: Unknown) -> napi::Result<RawJs> {
    // The record is converted before any promise exists: a getter or Proxy that throws becomes a
    // rejection, never a throw beside a pending promise. The promises of all appends are
    // settled in batches through one thread-safe function (`promises`), not one per promise.
    let request = guard(|| object::<WalAppendRecord, _>(record, "record"));
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
    Ok(RawJs(promise))
  }

  /// Synchronous twin of `append`: blocks until the record is durable, returns its seq.
  #[napi(ts_args_type = "record: WalAppendRecord")]
  pub fn append_sync(&self, env: Env, record: Unknown) -> napi::Result<f64> {
    sync(&env, || self.inner.append(object::<WalAppendRecord, _>(record, "record")?)).map(|seq| seq as f64)
  }

  /// This session's records on disk, in seq order. Throws `E_WAL_CORRUPT` (with `segment` and
  /// `offset`) if any segment is damaged; reading never modifies the log.
  #[napi(ts_args_type = "options?: WalReplayOptions")]
  pub fn replay(&self, env: Env, options: Option<Unknown>) -> napi::Result<Vec<WalRecord>> {
    sync(&env, || {
      let (since, limit) = opt_object::<WalReplayOptions, (_, _)>(options, "options")?;
      self.inner.replay(since, limit)
    })
    .map(|records| records.into_iter().map(Into::into).collect())
  }

  /// Size and progress of this session's log.
  #[napi]
  pub fn stats(&self, env: Env) -> napi::Result<WalStats> {
    sync(&env, || self.inner.stats()).map(Into::into)
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
    sync(&env, || self.shut_down())
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
  sync(&env, || core::read_dir_merged(&path(dir, "dir")?)).map(|records| records.into_iter().map(Into::into).collect())
}

/// Checks every segment of every session under `dir` and reports what it found (each problem
/// with the `code` a reader would throw), without throwing for damage and without modifying or
/// opening anything but regular files. Throws only when `dir` is not a directory
/// (`E_INVALID_ARGUMENT`) or cannot be listed (`E_IO`).
#[napi(ts_args_type = "dir: string")]
pub fn verify_wal(env: Env, dir: Unknown) -> napi::Result<WalVerification> {
  sync(&env, || core::verify_dir(&path(dir, "dir")?)).map(Into::into)
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
  sync(&env, || {
    let dir = path(dir, "dir")?;
    let target = path(target_dir, "targetDir")?;
    core::consolidate(&dir, &target, &opt_object::<ConsolidateWalOptions, _>(options, "options")?)
  })
  .map(Into::into)
}
