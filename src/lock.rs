//! Exclusive `flock` with a timeout.
//!
//! Only kernel locks: they vanish with the process that held them, so a writer killed with
//! SIGKILL never blocks the next one (a PID-file fallback in the originals did, when the PID was
//! reused). Locks are per open file description, so two handles in one process exclude each
//! other exactly like two processes do.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{LoaError, Result};

/// An open lock file, locked exclusively until dropped.
#[derive(Debug)]
pub struct LockGuard {
  _file: File,
}

/// Opens (creating if needed) `path` and takes an exclusive lock, polling until `timeout`.
/// `what` names the lock in the `E_WAL_LOCKED` error.
pub fn lock_exclusive(path: &Path, timeout: Duration, what: &str) -> Result<LockGuard> {
  let file = OpenOptions::new()
    .read(true)
    .write(true)
    .create(true)
    .truncate(false)
    .open(path)
    .map_err(|e| LoaError::io("open lock file", path, e))?;
  lock_file(&file, timeout, what)?;
  Ok(LockGuard { _file: file })
}

/// Locks an already open file, polling until `timeout`.
pub fn lock_file(file: &File, timeout: Duration, what: &str) -> Result<()> {
  let started = Instant::now();
  let mut pause = Duration::from_millis(1);
  loop {
    match file.try_lock() {
      Ok(()) => return Ok(()),
      Err(TryLockError::WouldBlock) => {}
      Err(TryLockError::Error(e)) => return Err(LoaError::Io { context: format!("lock {what}"), source: e }),
    }
    let waited = started.elapsed();
    if waited >= timeout {
      return Err(LoaError::WalLocked { what: what.to_string(), waited_ms: waited.as_millis() as u64 });
    }
    std::thread::sleep(pause.min(timeout - waited));
    pause = (pause * 2).min(Duration::from_millis(25));
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn second_handle_in_same_process_times_out_then_succeeds_after_release() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("LOCK");
    let first = lock_exclusive(&path, Duration::from_millis(10), "test").unwrap();
    let started = Instant::now();
    let err = lock_exclusive(&path, Duration::from_millis(80), "test").unwrap_err();
    assert_eq!(err.code(), "E_WAL_LOCKED");
    assert!(started.elapsed() >= Duration::from_millis(80));
    drop(first);
    lock_exclusive(&path, Duration::from_millis(10), "test").unwrap();
  }
}
