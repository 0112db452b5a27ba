//! Exclusive `flock` with a timeout.
//!
//! Only kernel locks: they vanish with the process that held them, so a writer killed with
//! SIGKILL never blocks the next one (a PID-file fallback in the originals did, when the PID was
//! reused). Locks are per open file description, so two handles in one process exclude each
//! other exactly like two processes do.
//!
//! Lock files are state files like any other: opened through [`StateDir`] without following a
//! symlink, and refused with `E_NOT_REGULAR_FILE` when something else (a symlink, FIFO, device,
//! socket or directory) sits where the lock file belongs. Locking never truncates or writes the
//! file, so a lock file that is somebody's hard link loses nothing.

use std::ffi::OsStr;
use std::fs::{File, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{LoaError, Result};
use crate::fsutil::{open_parent, OpenMode, StateDir, StateFile};

/// An open lock file, locked exclusively until dropped.
#[derive(Debug)]
pub struct LockGuard {
  _file: StateFile,
}

/// Opens (creating if needed) the lock file `name` in `dir` and takes an exclusive lock,
/// polling until `timeout`. `what` names the lock in the `E_WAL_LOCKED` error.
pub fn lock_in(dir: &StateDir, name: impl AsRef<OsStr>, timeout: Duration, what: &str) -> Result<LockGuard> {
  let file = dir.open_file(name, OpenMode::CREATE)?;
  lock_file(file.file(), timeout, what)?;
  Ok(LockGuard { _file: file })
}

/// [`lock_in`] for a caller-named lock file path: its parent directory must exist (symlinks in
/// the parent's path are the caller's choice and followed; the lock file itself never is).
pub fn lock_exclusive(path: &Path, timeout: Duration, what: &str) -> Result<LockGuard> {
  let (dir, name) = open_parent(path)?;
  lock_in(&dir, name, timeout, what)
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
  use std::os::unix::fs::symlink;

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

  /// A lock file planted as a symlink (to a file, a directory, nowhere), a FIFO or a directory
  /// is refused, and neither the symlink's target nor anything else outside is touched.
  #[test]
  fn a_lock_file_that_is_not_a_regular_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    symlink(&victim, dir.path().join("to-file")).unwrap();
    symlink(outside.path(), dir.path().join("to-dir")).unwrap();
    symlink(outside.path().join("missing"), dir.path().join("dangling")).unwrap();
    std::fs::create_dir(dir.path().join("a-dir")).unwrap();
    rustix::fs::mknodat(
      rustix::fs::CWD,
      dir.path().join("a-fifo"),
      rustix::fs::FileType::Fifo,
      rustix::fs::Mode::from_raw_mode(0o600),
      0,
    )
    .unwrap();
    for name in ["to-file", "to-dir", "dangling", "a-dir", "a-fifo"] {
      let err = lock_exclusive(&dir.path().join(name), Duration::ZERO, "test").unwrap_err();
      assert_eq!(err.code(), "E_NOT_REGULAR_FILE", "{name}: {err}");
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(!outside.path().join("missing").exists());
  }
}
