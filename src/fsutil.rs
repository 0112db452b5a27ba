//! Durable file-system primitives: atomic whole-file writes, directory fsync and path
//! containment.
//!
//! A rename is only durable once the directory that holds it has been fsynced, and a newly
//! created file is only findable after a crash once its directory entry is on disk. The originals
//! skipped both; every whole-file write in this crate goes through [`write_file_atomic`].

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{LoaError, Result};

/// Default permission bits of files written by [`write_file_atomic`] (before the umask).
pub const DEFAULT_FILE_MODE: u32 = 0o644;

/// fsyncs a directory so that entries created, renamed or removed in it survive a crash.
pub fn sync_dir(dir: &Path) -> Result<()> {
  let handle = File::open(dir).map_err(|e| LoaError::io("open directory", dir, e))?;
  handle.sync_all().map_err(|e| LoaError::io("fsync directory", dir, e))
}

/// Creates `dir` and any missing parents, fsyncing each parent whose entry list changed.
pub fn create_dir_durable(dir: &Path) -> Result<()> {
  if dir.is_dir() {
    return Ok(());
  }
  if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
    create_dir_durable(parent)?;
  }
  match fs::create_dir(dir) {
    Ok(()) => {}
    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => return Ok(()),
    Err(e) => return Err(LoaError::io("create directory", dir, e)),
  }
  sync_dir(dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")))
}

/// Writes `data` to `path` so that after a crash the file holds either its old content or the
/// new one, never a mixture: temp file in the same directory, write, fsync, rename over `path`,
/// fsync the directory. The parent directory must exist. `mode` applies to the new file.
pub fn write_file_atomic(path: &Path, data: &[u8], mode: Option<u32>) -> Result<()> {
  static COUNTER: AtomicU64 = AtomicU64::new(0);
  let file_name =
    path.file_name().ok_or_else(|| LoaError::InvalidArgument(format!("{} does not name a file", path.display())))?;
  let dir = match path.parent() {
    Some(p) if !p.as_os_str().is_empty() => p,
    _ => Path::new("."),
  };
  let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
  let mut temp_name = std::ffi::OsString::from(".");
  temp_name.push(file_name);
  temp_name.push(format!(".tmp-{}-{}", std::process::id(), unique));
  let temp = dir.join(temp_name);

  let result = (|| {
    let mut file = OpenOptions::new()
      .write(true)
      .create_new(true)
      .mode(mode.unwrap_or(DEFAULT_FILE_MODE))
      .open(&temp)
      .map_err(|e| LoaError::io("create temporary file for", path, e))?;
    file.write_all(data).map_err(|e| LoaError::io("write", &temp, e))?;
    file.sync_all().map_err(|e| LoaError::io("fsync", &temp, e))?;
    drop(file);
    fs::rename(&temp, path).map_err(|e| LoaError::io("rename into place", path, e))?;
    sync_dir(dir)
  })();
  if result.is_err() {
    // Best effort: the temp file is ours alone, and leaving it would only waste space.
    let _ = fs::remove_file(&temp);
  }
  result
}

/// Checks that `relative` is a plain relative path (no root, no `..`, no empty or `.`-only
/// result) and joins it to `root`. Symlinks are checked separately by [`ensure_inside`], because
/// they can only be resolved once the parent directories exist.
pub fn join_relative(root: &Path, relative: &str) -> Result<PathBuf> {
  let outside = || LoaError::PathOutsideRoot(relative.to_string());
  if relative.is_empty() || relative.contains('\0') {
    return Err(LoaError::InvalidArgument("path must be a non-empty string without NUL".into()));
  }
  let mut clean = PathBuf::new();
  for component in Path::new(relative).components() {
    match component {
      Component::Normal(part) => clean.push(part),
      Component::CurDir => {}
      Component::ParentDir | Component::RootDir | Component::Prefix(_) => return Err(outside()),
    }
  }
  if clean.as_os_str().is_empty() {
    return Err(outside());
  }
  Ok(root.join(clean))
}

/// Fails with `E_PATH_OUTSIDE_ROOT` when `path` (which must exist) resolves outside `root`
/// once every symlink is followed.
pub fn ensure_inside(root: &Path, path: &Path) -> Result<()> {
  let real_root = root.canonicalize().map_err(|e| LoaError::io("resolve", root, e))?;
  let real = path.canonicalize().map_err(|e| LoaError::io("resolve", path, e))?;
  if real.starts_with(&real_root) {
    Ok(())
  } else {
    Err(LoaError::PathOutsideRoot(path.display().to_string()))
  }
}

/// Moves a corrupt state file aside to `<name>.corrupt-<timestamp>` (with `-1`, `-2`, ... added
/// if that name is taken; an existing file is never replaced), fsyncs the directory and returns
/// the new path. The bytes are kept exactly as they were, for a human to look at: a corrupt state
/// file is never read as empty and never overwritten (SPEC item 14).
pub fn quarantine(path: &Path) -> Result<PathBuf> {
  let dir = match path.parent() {
    Some(p) if !p.as_os_str().is_empty() => p,
    _ => Path::new("."),
  };
  let name = path
    .file_name()
    .ok_or_else(|| LoaError::InvalidArgument(format!("{} does not name a file", path.display())))?
    .to_string_lossy()
    .into_owned();
  let stamp = crate::timestamp::format_ms_compact(crate::timestamp::now_ms());
  for attempt in 0..1000 {
    let suffix = if attempt == 0 { String::new() } else { format!("-{attempt}") };
    let target = dir.join(format!("{name}.corrupt-{stamp}{suffix}"));
    // link + unlink instead of rename: link refuses to replace an existing file.
    match fs::hard_link(path, &target) {
      Ok(()) => {
        fs::remove_file(path).map_err(|e| LoaError::io("remove quarantined", path, e))?;
        sync_dir(dir)?;
        return Ok(target);
      }
      Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
      Err(_) if !target.exists() => {
        // File systems without hard links: a rename to a name just checked to be free.
        fs::rename(path, &target).map_err(|e| LoaError::io("move aside", path, e))?;
        sync_dir(dir)?;
        return Ok(target);
      }
      Err(e) => return Err(LoaError::io("move aside", path, e)),
    }
  }
  Err(LoaError::Internal(format!("no free quarantine name for {}", path.display())))
}

#[cfg(test)]
mod tests {
  use super::*;
  use std::os::unix::fs::PermissionsExt;

  #[test]
  fn atomic_write_replaces_and_leaves_no_temp() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("state.json");
    write_file_atomic(&target, b"one", None).unwrap();
    write_file_atomic(&target, b"two", Some(0o600)).unwrap();
    assert_eq!(fs::read(&target).unwrap(), b"two");
    assert_eq!(fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o600);
    let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("state.json")]);
  }

  #[test]
  fn atomic_write_into_missing_directory_is_io_error_and_target_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let err = write_file_atomic(&dir.path().join("nope/x"), b"x", None).unwrap_err();
    assert_eq!(err.code(), "E_IO");
  }

  #[test]
  fn relative_paths_cannot_escape() {
    let root = Path::new("/r");
    assert_eq!(join_relative(root, "a/./b").unwrap(), Path::new("/r/a/b"));
    for bad in ["../x", "a/../../x", "/etc/passwd", "a/..", "."] {
      assert_eq!(join_relative(root, bad).unwrap_err().code(), "E_PATH_OUTSIDE_ROOT", "{bad}");
    }
    assert_eq!(join_relative(root, "").unwrap_err().code(), "E_INVALID_ARGUMENT");
  }

  #[test]
  fn quarantine_keeps_bytes_and_never_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("learnings.json");
    fs::write(&path, b"{bad").unwrap();
    let first = quarantine(&path).unwrap();
    assert!(!path.exists());
    assert_eq!(fs::read(&first).unwrap(), b"{bad");
    assert!(first.file_name().unwrap().to_str().unwrap().starts_with("learnings.json.corrupt-"));
    fs::write(&path, b"{worse").unwrap();
    let second = quarantine(&path).unwrap();
    assert_ne!(first, second);
    assert_eq!(fs::read(&first).unwrap(), b"{bad");
    assert_eq!(fs::read(&second).unwrap(), b"{worse");
  }

  #[test]
  fn symlink_escape_is_detected() {
    let root = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), root.path().join("link")).unwrap();
    let err = ensure_inside(root.path(), &root.path().join("link")).unwrap_err();
    assert_eq!(err.code(), "E_PATH_OUTSIDE_ROOT");
    ensure_inside(root.path(), root.path()).unwrap();
  }
}
