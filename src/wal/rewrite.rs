//! Rewriting records already in a session's log: how a memory is forgotten from the WAL itself.
//!
//! An append-only log keeps everything ever written, so forgetting a memory must rewrite the
//! segments that hold it. Only a holder of the session's lock ([`SessionLock`]: taken directly,
//! or handed over by [`super::Wal::suspend`]) may do it, so no writer is appending meanwhile.
//! A record is never dropped: it is replaced by a record of the caller's choosing with the same
//! seq and timestamp (a tombstone), so seqs stay gap-free, what consolidation recorded as applied
//! stays true, and replay order is unchanged.
//!
//! Each affected segment is written whole to a temp file, fsynced and renamed over the old one,
//! then the directory is fsynced ([`StateDir::write_atomic`]): a crash leaves either the old
//! segment or the new one, never a mix. The plan is made (every affected segment read and
//! checked) before the first rename, so damage found anywhere (`E_WAL_CORRUPT`) changes
//! nothing. A torn tail (bytes of an append that was never acknowledged) and space written ahead
//! are not carried over. Temp files are left only by a crash, and removed by the next
//! consolidation under its lock.

use std::path::Path;
use std::time::Duration;

use super::format::{self, Record, Tail};
use super::reader::{read_segment, segments_in, validate_session_id, SESSIONS_DIR};
use super::LOCK_FILE;
use crate::error::{LoaError, Result};
use crate::fsutil::StateDir;
use crate::lock::{lock_in, LockGuard};

/// A session's exclusive lock, held: no [`super::Wal`] of the session can be open meanwhile.
#[derive(Debug)]
pub struct SessionLock {
  pub(super) dir: StateDir,
  pub(super) guard: LockGuard,
  pub(super) session_id: String,
}

/// A segment to replace, with its new bytes.
#[derive(Debug)]
pub struct SegmentRewrite {
  name: String,
  bytes: Vec<u8>,
  /// Records replaced in it.
  pub replaced: usize,
}

impl SessionLock {
  /// Takes the lock of `session_id` under the WAL directory `dir` (creating the session
  /// directory if needed, never through a symlink), waiting up to `timeout`, then
  /// `E_WAL_LOCKED`. A zero timeout tries once.
  pub fn take(dir: &Path, session_id: &str, timeout: Duration) -> Result<SessionLock> {
    validate_session_id(session_id)?;
    let root = StateDir::create_root(dir)?;
    let sdir = root.create_subdir(SESSIONS_DIR)?.create_subdir(session_id)?;
    let guard = lock_in(&sdir, LOCK_FILE, timeout, &format!("WAL session '{session_id}'"))?;
    Ok(SessionLock { dir: sdir, guard, session_id: session_id.to_string() })
  }

  pub fn session_id(&self) -> &str {
    &self.session_id
  }

  /// Reads every segment and works out the new bytes of those where `replace` returns a
  /// replacement for some record (it must keep the record's seq and timestamp). Changes
  /// nothing. A segment damaged anywhere but its tail is `E_WAL_CORRUPT`.
  pub fn plan(&self, replace: &mut dyn FnMut(&Record) -> Option<Record>) -> Result<Vec<SegmentRewrite>> {
    let mut plan = Vec::new();
    for segment in segments_in(&self.dir)? {
      let Some((scan, _)) = read_segment(&self.dir, &segment)? else { continue };
      if let Tail::Corrupt { offset, reason } = &scan.tail {
        return Err(LoaError::WalCorrupt {
          segment: segment.path.display().to_string(),
          offset: *offset,
          reason: reason.clone(),
        });
      }
      let Some(header) = scan.header else { continue };
      let mut replaced = 0;
      let mut bytes = format::encode_header(&header).to_vec();
      for record in &scan.records {
        match replace(record) {
          Some(new) => {
            if new.seq != record.seq || new.ts_ms != record.ts_ms || new.session_id != record.session_id {
              return Err(LoaError::Internal("a replacement record must keep seq, ts and session".into()));
            }
            format::validate_fields(&new.op, new.path.as_deref(), new.meta.as_deref(), new.data.as_deref())?;
            format::encode_record(&new, &mut bytes);
            replaced += 1;
          }
          None => format::encode_record(record, &mut bytes),
        }
      }
      if replaced > 0 {
        plan.push(SegmentRewrite { name: segment.name, bytes, replaced });
      }
    }
    Ok(plan)
  }

  /// Replaces the planned segments, each atomically. Returns the records replaced.
  pub fn apply(&self, plan: Vec<SegmentRewrite>) -> Result<usize> {
    let mut replaced = 0;
    for rewrite in plan {
      self.dir.write_atomic(&rewrite.name, &rewrite.bytes, None)?;
      replaced += rewrite.replaced;
    }
    Ok(replaced)
  }
}
