//! The one way this crate touches its state files.
//!
//! Every file the library keeps (WAL segments and locks, NOTES.md, learnings.json, manifests,
//! audit segments, keys, consolidation state, dead letters, their temp files) is reached through
//! a [`StateDir`]: a directory handle reached from a root the caller chose without following any
//! symlink below it. Files are opened relative to that handle with `O_NOFOLLOW | O_NONBLOCK`, and
//! anything but a regular file (a symlink, FIFO, device, socket or directory) is refused with
//! `E_NOT_REGULAR_FILE` before a byte is read or written through it. So:
//!
//! - a symlink named like a state file can neither leak a file from elsewhere into the workspace
//!   nor make a repair truncate a file outside it;
//! - a FIFO or device cannot hang an open or grow memory without bound (`O_NONBLOCK` on open,
//!   then the type check, then reads bounded by a documented maximum: `E_TOO_LARGE`);
//! - directories are created with `mkdirat` below a handle that is already known to be inside the
//!   root, so containment is checked before any side effect, never after.
//!
//! Whole-file writes are atomic ([`StateDir::write_atomic`]): a temp file whose name fits
//! `NAME_MAX` whatever the target's name, fsync, rename, directory fsync. A crash between the two
//! leaves a temp file named `.<target prefix>.loa-tmp-<pid>-<n>`; [`StateDir::clean_stale_temps`]
//! removes those of dead processes when the directory is next opened under its lock.
//!
//! Writes and fsyncs go through [`StateFile`], whose methods are also where tests inject `EIO` or
//! `ENOSPC` ([`faults`], compiled into test builds only).

use std::ffi::{CStr, OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::FileExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::error::{LoaError, Result};

/// Default permission bits of files written by [`write_file_atomic`] (before the umask).
pub const DEFAULT_FILE_MODE: u32 = 0o644;
/// Permission bits of directories the library creates (before the umask).
pub const DEFAULT_DIR_MODE: u32 = 0o755;
/// The longest file name the library writes (Linux `NAME_MAX`, and the common limit elsewhere).
pub const NAME_MAX: usize = 255;
/// A temp file of a process that is still alive is left alone unless it is older than this
/// (the process id may have been reused by an unrelated process).
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(3600);

/// What kind of non-regular file was found where a regular file belongs.
pub fn kind_name(file_type: FileType) -> &'static str {
  match file_type {
    FileType::RegularFile => "file",
    FileType::Directory => "directory",
    FileType::Symlink => "symlink",
    FileType::Fifo => "fifo",
    FileType::Socket => "socket",
    FileType::CharacterDevice => "character device",
    FileType::BlockDevice => "block device",
    FileType::Unknown => "unknown file type",
  }
}

fn not_regular(path: &Path, file_type: FileType) -> LoaError {
  LoaError::NotRegularFile { path: path.display().to_string(), kind: kind_name(file_type) }
}

/// How [`StateDir::open_file`] opens a file.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenMode {
  pub write: bool,
  /// Create if missing (with `mode`).
  pub create: bool,
  /// Fail with `EEXIST` if it exists.
  pub create_new: bool,
  pub append: bool,
  /// Permission bits for a created file, before the umask. Default [`DEFAULT_FILE_MODE`].
  pub mode: Option<u32>,
}

impl OpenMode {
  pub const READ: OpenMode = OpenMode { write: false, create: false, create_new: false, append: false, mode: None };
  pub const READ_WRITE: OpenMode =
    OpenMode { write: true, create: false, create_new: false, append: false, mode: None };
  pub const CREATE: OpenMode = OpenMode { write: true, create: true, create_new: false, append: false, mode: None };
  pub const CREATE_NEW: OpenMode = OpenMode { write: true, create: true, create_new: true, append: false, mode: None };
  pub const APPEND: OpenMode = OpenMode { write: true, create: true, create_new: false, append: true, mode: None };

  pub fn with_mode(self, mode: u32) -> OpenMode {
    OpenMode { mode: Some(mode), ..self }
  }
}

/// What [`StateDir::quarantine`] puts between a corrupt file's name and the time it was moved.
const QUARANTINE_MARK: &str = ".corrupt-";

/// What [`StateDir::entries`] reports for each name, without following symlinks.
#[derive(Debug, Clone)]
pub struct DirEntry {
  pub name: OsString,
  pub file_type: FileType,
}

impl DirEntry {
  pub fn name_str(&self) -> Option<&str> {
    self.name.to_str()
  }
  pub fn is_file(&self) -> bool {
    self.file_type == FileType::RegularFile
  }
  pub fn is_dir(&self) -> bool {
    self.file_type == FileType::Directory
  }
}

/// A directory the library keeps state in, opened without following symlinks below its root.
#[derive(Debug)]
pub struct StateDir {
  fd: OwnedFd,
  path: PathBuf,
}

fn io_err(context: &str, path: &Path, e: impl Into<io::Error>) -> LoaError {
  LoaError::io(context, path, e.into())
}

/// Checks one path component given to [`StateDir`] methods: a plain name, no `/`, no NUL, not
/// `.` or `..`, at most [`NAME_MAX`] bytes.
fn check_name(name: &OsStr) -> Result<()> {
  let bytes = name.as_bytes();
  if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') || bytes.contains(&0) {
    return Err(LoaError::InvalidArgument("a state file name must be one plain path component".into()));
  }
  if bytes.len() > NAME_MAX {
    return Err(LoaError::InvalidArgument(format!(
      "a file name is {} bytes, over the limit of {NAME_MAX}",
      bytes.len()
    )));
  }
  Ok(())
}

impl StateDir {
  /// Opens the root a caller named (following symlinks in `root` itself: the caller chose it).
  /// It must exist and be a directory. An empty path is refused rather than read as the
  /// current directory.
  pub fn open_root(root: &Path) -> Result<StateDir> {
    if root.as_os_str().is_empty() {
      return Err(LoaError::InvalidArgument("a directory path must not be empty".into()));
    }
    if root.as_os_str().as_bytes().contains(&0) {
      return Err(LoaError::InvalidArgument("a directory path must not contain NUL".into()));
    }
    let fd = rustix::fs::open(root, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
      .map_err(|e| io_err("open directory", root, e))?;
    Ok(StateDir { fd, path: root.to_path_buf() })
  }

  /// Opens `root`, creating it and its missing parents first (each created directory's parent
  /// fsynced). The parents are the caller's choice and may hold symlinks.
  pub fn create_root(root: &Path) -> Result<StateDir> {
    if root.as_os_str().is_empty() {
      return Err(LoaError::InvalidArgument("a directory path must not be empty".into()));
    }
    match StateDir::open_root(root) {
      Ok(dir) => Ok(dir),
      Err(LoaError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
        create_dir_durable(root)?;
        StateDir::open_root(root)
      }
      Err(e) => Err(e),
    }
  }

  /// The path this handle was opened as, for messages.
  pub fn path(&self) -> &Path {
    &self.path
  }

  pub fn fd(&self) -> BorrowedFd<'_> {
    self.fd.as_fd()
  }

  /// The path of `name` in this directory, for messages.
  pub fn child_path(&self, name: impl AsRef<OsStr>) -> PathBuf {
    self.path.join(name.as_ref())
  }

  /// Opens the subdirectory `name` without following a symlink. `None` when it does not exist.
  /// A symlink is `E_PATH_OUTSIDE_ROOT` (it could lead anywhere), any other non-directory
  /// `E_NOT_REGULAR_FILE`.
  pub fn subdir(&self, name: impl AsRef<OsStr>) -> Result<Option<StateDir>> {
    let name = name.as_ref();
    check_name(name)?;
    let path = self.child_path(name);
    match rustix::fs::openat(
      &self.fd,
      name,
      OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
      Mode::empty(),
    ) {
      Ok(fd) => Ok(Some(StateDir { fd, path })),
      Err(rustix::io::Errno::NOENT) => Ok(None),
      Err(e @ (rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR)) => match self.kind_of(name)? {
        Some(FileType::Symlink) => Err(LoaError::PathOutsideRoot(format!("{} is a symlink", path.display()))),
        // A regular file where a directory belongs: the OS's ENOTDIR says it best.
        Some(FileType::Directory | FileType::RegularFile) | None => Err(io_err("open directory", &path, e)),
        Some(other) => Err(LoaError::NotRegularFile { path: path.display().to_string(), kind: kind_name(other) }),
      },
      Err(e) => Err(io_err("open directory", &path, e)),
    }
  }

  /// Opens the subdirectory `name`, creating it (and fsyncing this directory) when missing.
  pub fn create_subdir(&self, name: impl AsRef<OsStr>) -> Result<StateDir> {
    self.create_subdir_mode(name, DEFAULT_DIR_MODE)
  }

  /// [`create_subdir`](Self::create_subdir) with the permission bits of a created directory.
  pub fn create_subdir_mode(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<StateDir> {
    let name = name.as_ref();
    if let Some(dir) = self.subdir(name)? {
      return Ok(dir);
    }
    match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(mode as _)) {
      Ok(()) => self.sync()?,
      Err(rustix::io::Errno::EXIST) => {}
      Err(e) => return Err(io_err("create directory", &self.child_path(name), e)),
    }
    self
      .subdir(name)?
      .ok_or_else(|| io_err("open directory", &self.child_path(name), io::Error::from(io::ErrorKind::NotFound)))
  }

  /// Descends along a relative path (see [`relative_components`]), each step without following
  /// a symlink; with `create`, missing directories are made on the way. `None` when a directory
  /// is missing and `create` is false.
  pub fn descend(&self, relative: &Path, create: bool) -> Result<Option<StateDir>> {
    let parts = relative_components(relative)?;
    let mut current: Option<StateDir> = None;
    for part in parts {
      let base = current.as_ref().unwrap_or(self);
      let next = if create { Some(base.create_subdir(&part)?) } else { base.subdir(&part)? };
      match next {
        Some(dir) => current = Some(dir),
        None => return Ok(None),
      }
    }
    match current {
      Some(dir) => Ok(Some(dir)),
      None => self.try_clone().map(Some),
    }
  }

  /// Another handle to the same directory.
  pub fn try_clone(&self) -> Result<StateDir> {
    let fd = self.fd.try_clone().map_err(|e| io_err("duplicate handle of", &self.path, e))?;
    Ok(StateDir { fd, path: self.path.clone() })
  }

  /// The type of `name` without following a symlink; `None` when it does not exist.
  pub fn kind_of(&self, name: impl AsRef<OsStr>) -> Result<Option<FileType>> {
    let name = name.as_ref();
    check_name(name)?;
    match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
      Ok(stat) => Ok(Some(FileType::from_raw_mode(stat.st_mode))),
      Err(rustix::io::Errno::NOENT) => Ok(None),
      Err(e) => Err(io_err("stat", &self.child_path(name), e)),
    }
  }

  /// Opens the regular file `name`. Never follows a symlink, never blocks on a FIFO, and
  /// refuses anything but a regular file with `E_NOT_REGULAR_FILE` (naming its kind). A missing
  /// file (without `create`) is `E_IO` with `osError: 'ENOENT'`; see [`open_file_if_exists`].
  ///
  /// [`open_file_if_exists`]: Self::open_file_if_exists
  pub fn open_file(&self, name: impl AsRef<OsStr>, how: OpenMode) -> Result<StateFile> {
    let name = name.as_ref();
    check_name(name)?;
    let path = self.child_path(name);
    let mut flags = OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    flags |= if how.write { OFlags::RDWR } else { OFlags::RDONLY };
    if how.create {
      flags |= OFlags::CREATE;
    }
    if how.create_new {
      flags |= OFlags::EXCL;
    }
    if how.append {
      flags |= OFlags::APPEND;
    }
    let mode = Mode::from_raw_mode(how.mode.unwrap_or(DEFAULT_FILE_MODE) as _);
    let fd = match rustix::fs::openat(&self.fd, name, flags, mode) {
      Ok(fd) => fd,
      Err(
        e @ (rustix::io::Errno::LOOP | rustix::io::Errno::MLINK | rustix::io::Errno::ISDIR | rustix::io::Errno::NXIO),
      ) => {
        return Err(match self.kind_of(name)? {
          Some(kind) if kind != FileType::RegularFile => not_regular(&path, kind),
          _ => io_err("open", &path, e),
        })
      }
      Err(e) => return Err(io_err(if how.create_new { "create" } else { "open" }, &path, e)),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| io_err("stat", &path, e))?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::RegularFile {
      return Err(not_regular(&path, kind));
    }
    // O_NONBLOCK only guarded the open against FIFOs; regular files ignore it, but clear it so
    // the descriptor behaves like any other.
    let keep = rustix::fs::fcntl_getfl(&fd).map_err(|e| io_err("fcntl", &path, e))? & !OFlags::NONBLOCK;
    rustix::fs::fcntl_setfl(&fd, keep).map_err(|e| io_err("fcntl", &path, e))?;
    Ok(StateFile { file: File::from(fd), path })
  }

  /// [`open_file`](Self::open_file), with `None` for a file that does not exist.
  pub fn open_file_if_exists(&self, name: impl AsRef<OsStr>, how: OpenMode) -> Result<Option<StateFile>> {
    match self.open_file(name, how) {
      Ok(file) => Ok(Some(file)),
      Err(e) if e.is_not_found() => Ok(None),
      Err(e) => Err(e),
    }
  }

  /// Reads the whole regular file `name`, at most `max` bytes (`E_TOO_LARGE` beyond, also for a
  /// file that grows while it is read). `None` when it does not exist.
  pub fn read(&self, name: impl AsRef<OsStr>, max: u64) -> Result<Option<Vec<u8>>> {
    match self.open_file_if_exists(name, OpenMode::READ)? {
      Some(file) => file.read_to_end_bounded(max).map(Some),
      None => Ok(None),
    }
  }

  /// Writes `data` to `name` so that after a crash the file holds either its old content or the
  /// new one, never a mixture: a temp file in this directory, write, fsync, rename over `name`,
  /// fsync this directory. An existing `name` that is not a regular file is refused
  /// (`E_NOT_REGULAR_FILE`), never replaced. `mode` applies to the new file.
  pub fn write_atomic(&self, name: impl AsRef<OsStr>, data: &[u8], mode: Option<u32>) -> Result<()> {
    let name = name.as_ref();
    check_name(name)?;
    if let Some(kind) = self.kind_of(name)? {
      if kind != FileType::RegularFile {
        return Err(not_regular(&self.child_path(name), kind));
      }
    }
    let temp = temp_name(name);
    let result = self.write_temp(&temp, data, mode).and_then(|()| {
      self.rename(&temp, name)?;
      self.sync()
    });
    if result.is_err() {
      // Best effort: the temp file is ours alone, and leaving it would only waste space.
      let _ = rustix::fs::unlinkat(&self.fd, temp.as_os_str(), AtFlags::empty());
    }
    result
  }

  /// The first steps of [`write_atomic`](Self::write_atomic) and [`write_new`](Self::write_new):
  /// the complete `data` in the fresh file `temp` (never an existing one), fsynced. The caller
  /// moves it into place and removes it on failure.
  fn write_temp(&self, temp: &OsStr, data: &[u8], mode: Option<u32>) -> Result<()> {
    let how = OpenMode::CREATE_NEW.with_mode(mode.unwrap_or(DEFAULT_FILE_MODE));
    let mut file = self.open_file(temp, how)?;
    file.write_all(data)?;
    file.sync_all()
  }

  /// Like [`write_atomic`](Self::write_atomic), but never replaces anything: the complete file
  /// appears under the first of `names` that is free (a hard link from one fsynced temp file,
  /// which the kernel refuses with `EEXIST` atomically), so two writers racing for one name
  /// cannot both win, and a taken name costs one `linkat`, not another write. `Ok(None)` when
  /// every name was taken; nothing is left behind.
  pub fn write_new<N: AsRef<OsStr>>(
    &self,
    names: impl IntoIterator<Item = N>,
    data: &[u8],
    mode: Option<u32>,
  ) -> Result<Option<OsString>> {
    let mut names = names.into_iter().peekable();
    let Some(first) = names.peek() else { return Ok(None) };
    let temp = temp_name(first.as_ref());
    let result = (|| {
      self.write_temp(&temp, data, mode)?;
      for name in names {
        let name = name.as_ref();
        check_name(name)?;
        match rustix::fs::linkat(&self.fd, temp.as_os_str(), &self.fd, name, AtFlags::empty()) {
          Ok(()) => return Ok(Some(name.to_owned())),
          Err(rustix::io::Errno::EXIST) => continue,
          Err(e) => return Err(io_err("link into place", &self.child_path(name), e)),
        }
      }
      Ok(None)
    })();
    // The temp name goes in every case: on success the data lives on under its name.
    let _ = rustix::fs::unlinkat(&self.fd, temp.as_os_str(), AtFlags::empty());
    if matches!(result, Ok(Some(_))) {
      self.sync()?;
    }
    result
  }

  /// Moves `from` of this directory to `to` in `target` (another directory on the same file
  /// system), without replacing anything there: `Ok(false)` when `to` exists. Does not fsync.
  pub fn move_to(&self, from: impl AsRef<OsStr>, target: &StateDir, to: impl AsRef<OsStr>) -> Result<bool> {
    let (from, to) = (from.as_ref(), to.as_ref());
    check_name(from)?;
    check_name(to)?;
    if target.kind_of(to)?.is_some() {
      return Ok(false);
    }
    rustix::fs::renameat(&self.fd, from, &target.fd, to).map_err(|e| io_err("move", &target.child_path(to), e))?;
    Ok(true)
  }

  /// Renames `from` to `to` within this directory (replacing `to`). Does not fsync.
  pub fn rename(&self, from: impl AsRef<OsStr>, to: impl AsRef<OsStr>) -> Result<()> {
    let (from, to) = (from.as_ref(), to.as_ref());
    check_name(from)?;
    check_name(to)?;
    #[cfg(any(test, feature = "fault-injection"))]
    faults::check(&self.child_path(to), faults::Op::Rename)
      .map_err(|e| io_err("rename into place", &self.child_path(to), e))?;
    rustix::fs::renameat(&self.fd, from, &self.fd, to).map_err(|e| io_err("rename into place", &self.child_path(to), e))
  }

  /// Swaps the entries `a` and `b` of this directory in one atomic step (`renameat2` with
  /// `RENAME_EXCHANGE`): both must exist, and at every instant each name holds one of the two
  /// (files or directories). Does not fsync. A file system without the flag answers `E_IO`
  /// with `EINVAL`; callers then fall back to two renames.
  pub fn exchange(&self, a: impl AsRef<OsStr>, b: impl AsRef<OsStr>) -> Result<()> {
    let (a, b) = (a.as_ref(), b.as_ref());
    check_name(a)?;
    check_name(b)?;
    #[cfg(any(test, feature = "fault-injection"))]
    faults::check(&self.child_path(b), faults::Op::Rename).map_err(|e| io_err("exchange", &self.child_path(b), e))?;
    rustix::fs::renameat_with(&self.fd, a, &self.fd, b, rustix::fs::RenameFlags::EXCHANGE)
      .map_err(|e| io_err("exchange", &self.child_path(b), e))
  }

  /// Removes the directory `name` and everything below it, never following a symlink (a
  /// symlink inside is removed as an entry, its target untouched). Returns false when `name`
  /// did not exist; a `name` that is not a directory is refused. Each directory is walked
  /// once and entries are removed as they are listed, so the work is linear in the tree.
  /// Does not fsync this directory.
  pub fn remove_tree(&self, name: impl AsRef<OsStr>) -> Result<bool> {
    let name = name.as_ref();
    let Some(sub) = self.subdir(name)? else { return Ok(false) };
    // Depth-first with an explicit stack, so a deep tree cannot overflow the call stack.
    let mut stack: Vec<(StateDir, Vec<DirEntry>)> = vec![(sub.try_clone()?, sub.entries()?)];
    while let Some((dir, mut pending)) = stack.pop() {
      match pending.pop() {
        Some(entry) if entry.is_dir() => {
          let child = dir
            .subdir(&entry.name)?
            .ok_or_else(|| io_err("remove", &dir.child_path(&entry.name), io::Error::from(io::ErrorKind::NotFound)))?;
          let entries = child.entries()?;
          stack.push((dir, pending));
          stack.push((child, entries));
        }
        Some(entry) => {
          dir.remove_file(&entry.name)?;
          stack.push((dir, pending));
        }
        None => {
          // `dir` is empty now: remove it from its parent (the next frame down, or `self`).
          let (parent, last) = match stack.last() {
            Some((parent, _)) => (parent, dir.path.file_name().map(OsStr::to_os_string)),
            None => (self, Some(name.to_os_string())),
          };
          let last = last.ok_or_else(|| LoaError::Internal("a directory without a name".into()))?;
          rustix::fs::unlinkat(&parent.fd, last.as_os_str(), AtFlags::REMOVEDIR)
            .map_err(|e| io_err("remove directory", &dir.path, e))?;
        }
      }
    }
    Ok(true)
  }

  /// Removes the file `name` (never a directory). Returns false when it did not exist. Does
  /// not fsync.
  pub fn remove_file(&self, name: impl AsRef<OsStr>) -> Result<bool> {
    let name = name.as_ref();
    check_name(name)?;
    match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
      Ok(()) => Ok(true),
      Err(rustix::io::Errno::NOENT) => Ok(false),
      Err(e) => Err(io_err("remove", &self.child_path(name), e)),
    }
  }

  /// Every entry of this directory but `.` and `..`, with its type (not following symlinks),
  /// sorted by name so that callers see a stable order.
  pub fn entries(&self) -> Result<Vec<DirEntry>> {
    let mut dir = rustix::fs::Dir::read_from(&self.fd).map_err(|e| io_err("list", &self.path, e))?;
    let mut out = Vec::new();
    while let Some(entry) = dir.read() {
      let entry = entry.map_err(|e| io_err("list", &self.path, e))?;
      let raw: &CStr = entry.file_name();
      let bytes = raw.to_bytes();
      if bytes == b"." || bytes == b".." {
        continue;
      }
      let name = OsString::from_vec(bytes.to_vec());
      let mut file_type = entry.file_type();
      if file_type == FileType::Unknown {
        // Some file systems do not report types in directory listings.
        match self.kind_of(&name)? {
          Some(kind) => file_type = kind,
          None => continue, // removed since listing
        }
      }
      out.push(DirEntry { name, file_type });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
  }

  /// fsyncs this directory so that entries created, renamed or removed in it survive a crash.
  pub fn sync(&self) -> Result<()> {
    #[cfg(any(test, feature = "fault-injection"))]
    faults::check(&self.path, faults::Op::SyncDir).map_err(|e| io_err("fsync directory", &self.path, e))?;
    rustix::fs::fsync(&self.fd).map_err(|e| io_err("fsync directory", &self.path, e))
  }

  /// Removes temp files of [`write_atomic`](Self::write_atomic) left by a crash: those of
  /// processes that no longer exist, and any older than [`STALE_TEMP_AGE`]. Call it with the
  /// directory's lock held. Returns how many were removed.
  pub fn clean_stale_temps(&self) -> Result<usize> {
    let mut removed = 0;
    for entry in self.entries()? {
      let Some(pid) = temp_owner(&entry.name) else { continue };
      if !entry.is_file() {
        continue;
      }
      let stale = pid != std::process::id() && !process_alive(pid) || self.older_than(&entry.name, STALE_TEMP_AGE);
      if stale && self.remove_file(&entry.name)? {
        removed += 1;
      }
    }
    if removed > 0 {
      self.sync()?;
    }
    Ok(removed)
  }

  fn older_than(&self, name: &OsStr, age: Duration) -> bool {
    let Ok(stat) = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) else { return false };
    let modified = SystemTime::UNIX_EPOCH + Duration::from_secs(stat.st_mtime.max(0) as u64);
    SystemTime::now().duration_since(modified).map(|d| d >= age).unwrap_or(false)
  }

  /// Moves the corrupt file `name` aside to `<name>.corrupt-<timestamp>` (with `-1`, `-2`, ...
  /// added if that name is taken; an existing file is never replaced), fsyncs the directory and
  /// returns the new path. The bytes are kept exactly as they were, for a human to look at: a
  /// corrupt state file is never read as empty and never overwritten (SPEC item 14).
  pub fn quarantine(&self, name: impl AsRef<OsStr>) -> Result<PathBuf> {
    let name = name.as_ref();
    check_name(name)?;
    let path = self.child_path(name);
    match self.kind_of(name)? {
      Some(FileType::RegularFile) => {}
      Some(kind) => return Err(not_regular(&path, kind)),
      None => return Err(io_err("move aside", &path, io::Error::from(io::ErrorKind::NotFound))),
    }
    let stamp = crate::timestamp::format_ms_compact(crate::timestamp::now_ms());
    let base = truncate_name(name.as_bytes(), NAME_MAX - 40);
    for attempt in 0..1000u32 {
      let suffix = if attempt == 0 { String::new() } else { format!("-{attempt}") };
      let mut target = base.clone();
      target.extend_from_slice(format!("{QUARANTINE_MARK}{stamp}{suffix}").as_bytes());
      let target = OsString::from_vec(target);
      // link + unlink instead of rename: link refuses to replace an existing file.
      match rustix::fs::linkat(&self.fd, name, &self.fd, target.as_os_str(), AtFlags::empty()) {
        Ok(()) => {
          self.remove_file(name)?;
          self.sync()?;
          return Ok(self.child_path(&target));
        }
        Err(rustix::io::Errno::EXIST) => continue,
        Err(_) if self.kind_of(&target)?.is_none() => {
          // File systems without hard links: a rename to a name just checked to be free.
          self.rename(name, &target)?;
          self.sync()?;
          return Ok(self.child_path(&target));
        }
        Err(e) => return Err(io_err("move aside", &path, e)),
      }
    }
    Err(LoaError::Internal(format!("no free quarantine name for {}", path.display())))
  }
}

/// A regular file of the library's state, opened through [`StateDir`]. Its write and sync
/// methods are the only ones parts use, so tests can make them fail ([`faults`]).
#[derive(Debug)]
pub struct StateFile {
  file: File,
  path: PathBuf,
}

impl StateFile {
  pub fn path(&self) -> &Path {
    &self.path
  }

  /// The file itself, for reading and locking (writes go through the methods below).
  pub fn file(&self) -> &File {
    &self.file
  }

  pub fn len(&self) -> Result<u64> {
    self.file.metadata().map(|m| m.len()).map_err(|e| io_err("stat", &self.path, e))
  }

  pub fn is_empty(&self) -> Result<bool> {
    self.len().map(|n| n == 0)
  }

  pub fn modified(&self) -> Option<SystemTime> {
    self.file.metadata().and_then(|m| m.modified()).ok()
  }

  /// Reads from the current position to the end, at most `max` bytes (`E_TOO_LARGE` beyond).
  pub fn read_to_end_bounded(&self, max: u64) -> Result<Vec<u8>> {
    let size = self.len()?;
    if size > max {
      return Err(too_large(&self.path, size, max));
    }
    let mut out = Vec::with_capacity(size as usize);
    #[cfg(any(test, feature = "fault-injection"))]
    if let Some((at, then)) = faults::take_split(&self.path) {
      (&self.file).take(at.min(max + 1)).read_to_end(&mut out).map_err(|e| io_err("read", &self.path, e))?;
      then();
    }
    let rest = max + 1 - out.len() as u64;
    (&self.file).take(rest).read_to_end(&mut out).map_err(|e| io_err("read", &self.path, e))?;
    if out.len() as u64 > max {
      return Err(too_large(&self.path, out.len() as u64, max));
    }
    Ok(out)
  }

  /// Reads `buf.len()` bytes at `offset` (short at the end of the file); returns how many.
  pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
      match self.file.read_at(&mut buf[filled..], offset + filled as u64) {
        Ok(0) => break,
        Ok(n) => filled += n,
        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
        Err(e) => return Err(io_err("read", &self.path, e)),
      }
    }
    Ok(filled)
  }

  pub fn write_all(&mut self, data: &[u8]) -> Result<()> {
    #[cfg(any(test, feature = "fault-injection"))]
    faults::check(&self.path, faults::Op::Write).map_err(|e| io_err("write", &self.path, e))?;
    io::Write::write_all(&mut self.file, data).map_err(|e| io_err("write", &self.path, e))
  }

  pub fn write_all_at(&self, data: &[u8], offset: u64) -> Result<()> {
    #[cfg(any(test, feature = "fault-injection"))]
    faults::check(&self.path, faults::Op::Write).map_err(|e| io_err("write", &self.path, e))?;
    self.file.write_all_at(data, offset).map_err(|e| io_err("write", &self.path, e))
  }

  pub fn set_len(&self, len: u64) -> Result<()> {
    #[cfg(any(test, feature = "fault-injection"))]
    faults::check(&self.path, faults::Op::Truncate).map_err(|e| io_err("truncate", &self.path, e))?;
    self.file.set_len(len).map_err(|e| io_err("truncate", &self.path, e))
  }

  pub fn sync_data(&self) -> Result<()> {
    #[cfg(any(test, feature = "fault-injection"))]
    faults::check(&self.path, faults::Op::Sync).map_err(|e| io_err("fsync", &self.path, e))?;
    self.file.sync_data().map_err(|e| io_err("fsync", &self.path, e))
  }

  pub fn sync_all(&self) -> Result<()> {
    #[cfg(any(test, feature = "fault-injection"))]
    faults::check(&self.path, faults::Op::Sync).map_err(|e| io_err("fsync", &self.path, e))?;
    self.file.sync_all().map_err(|e| io_err("fsync", &self.path, e))
  }
}

fn too_large(path: &Path, size: u64, limit: u64) -> LoaError {
  LoaError::TooLarge { what: path.display().to_string(), size, limit }
}

const TEMP_MARK: &[u8] = b".loa-tmp-";
/// At most this much of the target's name goes into its temp name (for a human reading a
/// listing); the rest of the name is fixed-size, so the whole stays far below `NAME_MAX`.
const TEMP_PREFIX_MAX: usize = 64;

/// The longest prefix of `name` of at most `max` bytes that ends on a UTF-8 character boundary
/// (bytes that are not UTF-8 are cut anywhere).
fn truncate_name(name: &[u8], max: usize) -> Vec<u8> {
  if name.len() <= max {
    return name.to_vec();
  }
  let mut end = max;
  if let Ok(text) = std::str::from_utf8(name) {
    while !text.is_char_boundary(end) {
      end -= 1;
    }
  }
  name[..end].to_vec()
}

/// `.<up to 64 bytes of the target's name>.loa-tmp-<pid>-<counter>`: unique in this process,
/// recognisably ours ([`temp_owner`]), and at most 1 + 64 + 9 + 10 + 1 + 20 = 105 bytes.
fn temp_name(target: &OsStr) -> OsString {
  static COUNTER: AtomicU64 = AtomicU64::new(0);
  let mut name = vec![b'.'];
  name.extend(truncate_name(target.as_bytes(), TEMP_PREFIX_MAX));
  name.extend_from_slice(TEMP_MARK);
  name.extend_from_slice(format!("{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)).as_bytes());
  OsString::from_vec(name)
}

/// The process id in a temp file name of ours (`…loa-tmp-<pid>-<n>`, or the older
/// `.<name>.tmp-<pid>-<n>`), or `None` for any other name.
pub fn temp_owner(name: &OsStr) -> Option<u32> {
  let bytes = name.as_bytes();
  if bytes.first() != Some(&b'.') {
    return None;
  }
  let digits = |s: &[u8]| !s.is_empty() && s.len() <= 20 && s.iter().all(u8::is_ascii_digit);
  let rest = if let Some(at) = memchr::memmem::rfind(bytes, TEMP_MARK) {
    &bytes[at + TEMP_MARK.len()..]
  } else if let Some(at) = memchr::memmem::rfind(bytes, b".tmp-") {
    &bytes[at + 5..]
  } else {
    return None;
  };
  let dash = rest.iter().position(|&b| b == b'-')?;
  let (pid, counter) = (&rest[..dash], &rest[dash + 1..]);
  if !digits(pid) || !digits(counter) {
    return None;
  }
  std::str::from_utf8(pid).ok()?.parse().ok()
}

/// True when `name` is one [`StateDir::quarantine`] gives a corrupt file it moves aside
/// (`<name>.corrupt-<stamp>[-k]`).
pub fn is_quarantine_name(name: &OsStr) -> bool {
  let bytes = name.as_bytes();
  memchr::memmem::rfind(bytes, QUARANTINE_MARK.as_bytes()).is_some_and(|at| {
    let stamp = &bytes[at + QUARANTINE_MARK.len()..];
    at > 0 && !stamp.is_empty() && stamp[0].is_ascii_digit()
  })
}

/// True when `name` is a temp file name of [`StateDir::write_atomic`].
pub fn is_temp_name(name: &OsStr) -> bool {
  temp_owner(name).is_some()
}

fn process_alive(pid: u32) -> bool {
  let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else { return false };
  // EPERM means it exists but belongs to someone else.
  !matches!(rustix::process::test_kill_process(pid), Err(rustix::io::Errno::SRCH))
}

/// Splits a relative path into plain components: no root, no `..`, no empty result, each
/// component at most [`NAME_MAX`] bytes without NUL. `.` components are dropped.
pub fn relative_components(relative: &Path) -> Result<Vec<OsString>> {
  let text = relative.as_os_str().as_bytes();
  if text.is_empty() {
    return Err(LoaError::InvalidArgument("a relative path must not be empty".into()));
  }
  if text.contains(&0) {
    return Err(LoaError::InvalidArgument("a path must not contain NUL".into()));
  }
  let outside = || LoaError::PathOutsideRoot("a relative path must not be absolute or contain `..`".into());
  let mut parts = Vec::new();
  for component in relative.components() {
    match component {
      Component::Normal(part) => {
        if part.len() > NAME_MAX {
          return Err(LoaError::InvalidArgument(format!(
            "a path component is {} bytes, over the limit of {NAME_MAX}",
            part.len()
          )));
        }
        parts.push(part.to_os_string());
      }
      Component::CurDir => {}
      Component::ParentDir | Component::RootDir | Component::Prefix(_) => return Err(outside()),
    }
  }
  if parts.is_empty() {
    return Err(outside());
  }
  Ok(parts)
}

/// Opens the parent directory of a caller-named file path as a root and returns it with the
/// file name: the way a function that takes a file path reaches it through [`StateDir`].
pub fn open_parent(path: &Path) -> Result<(StateDir, OsString)> {
  let name = path
    .file_name()
    .filter(|n| !n.is_empty())
    .ok_or_else(|| LoaError::InvalidArgument("the path does not name a file".into()))?;
  check_name(name)?;
  let dir = match path.parent() {
    Some(p) if !p.as_os_str().is_empty() => p,
    _ => Path::new("."),
  };
  Ok((StateDir::open_root(dir)?, name.to_os_string()))
}

/// fsyncs a directory so that entries created, renamed or removed in it survive a crash.
pub fn sync_dir(dir: &Path) -> Result<()> {
  StateDir::open_root(dir)?.sync()
}

/// Creates `dir` and any missing parents, fsyncing each parent whose entry list changed. For
/// roots a caller named; below a root, use [`StateDir::descend`].
pub fn create_dir_durable(dir: &Path) -> Result<()> {
  if dir.as_os_str().is_empty() {
    return Err(LoaError::InvalidArgument("a directory path must not be empty".into()));
  }
  if dir.is_dir() {
    return Ok(());
  }
  if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
    create_dir_durable(parent)?;
  }
  match std::fs::create_dir(dir) {
    Ok(()) => {}
    Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => return Ok(()),
    Err(e) => return Err(LoaError::io("create directory", dir, e)),
  }
  sync_dir(dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")))
}

/// A permission mode a caller gave (`0o600`): at most `0o7777`.
pub fn file_mode(mode: u64) -> Result<u32> {
  match u32::try_from(mode) {
    Ok(mode) if mode <= 0o7777 => Ok(mode),
    _ => crate::error::invalid("`mode` must be a permission mode such as 0o600"),
  }
}

/// Writes `data` to the caller-named `path` atomically (see [`StateDir::write_atomic`]). The
/// parent directory must exist; `path` must not be a symlink or other non-regular file.
pub fn write_file_atomic(path: &Path, data: &[u8], mode: Option<u32>) -> Result<()> {
  let (dir, name) = open_parent(path)?;
  dir.write_atomic(&name, data, mode)
}

/// Reads the caller-named regular file `path`, at most `max` bytes, without following a symlink
/// in its last component. `None` when it does not exist.
pub fn read_file_bounded(path: &Path, max: u64) -> Result<Option<Vec<u8>>> {
  let (dir, name) = open_parent(path)?;
  dir.read(&name, max)
}

/// Checks that `relative` is a plain relative path (see [`relative_components`]) and joins it
/// to `root`. For naming only: open what it names through [`StateDir::descend`].
pub fn join_relative(root: &Path, relative: &str) -> Result<PathBuf> {
  let parts = relative_components(Path::new(relative))?;
  let mut out = root.to_path_buf();
  out.extend(parts);
  Ok(out)
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

/// Moves the caller-named corrupt file `path` aside (see [`StateDir::quarantine`]).
pub fn quarantine(path: &Path) -> Result<PathBuf> {
  let (dir, name) = open_parent(path)?;
  dir.quarantine(&name)
}

/// Failures that tests make the file layer report, to prove that nothing acknowledged is lost
/// and no partial file is visible when the disk refuses, and reads that tests split around a
/// concurrent write, to prove that a reader tells a write in progress from damage. Compiled into test builds only (and
/// with the `fault-injection` feature); rules are global because WAL writes happen on a writer
/// thread, and scoped by path prefix so that tests running in parallel do not meet each
/// other's faults.
#[cfg(any(test, feature = "fault-injection"))]
pub mod faults {
  use std::io;
  use std::path::{Path, PathBuf};
  use std::sync::Mutex;

  /// Which operation fails.
  #[derive(Debug, Clone, Copy, PartialEq, Eq)]
  pub enum Op {
    Write,
    Sync,
    Truncate,
    Rename,
    SyncDir,
  }

  struct Rule {
    prefix: PathBuf,
    op: Op,
    errno: i32,
    /// Operations of this kind to let through first.
    skip: u32,
    /// How many times to fail after that (`u32::MAX`: until cleared).
    times: u32,
  }

  static RULES: Mutex<Vec<Rule>> = Mutex::new(Vec::new());

  /// A whole-file read to split in two (see [`split_read`]).
  struct Split {
    prefix: PathBuf,
    at: u64,
    then: Box<dyn FnOnce() + Send>,
  }

  static SPLITS: Mutex<Vec<Split>> = Mutex::new(Vec::new());

  /// The next whole-file read ([`super::StateFile::read_to_end_bounded`]) of a state file under
  /// `prefix` reads its first `at` bytes, runs `then`, and only then reads the rest: what a
  /// reader sees when the kernel answers its read in two parts and another thread writes the file
  /// in between (a `read` is not atomic against a concurrent `write` of the same bytes). Fires
  /// once; the returned guard removes it if it has not fired.
  pub fn split_read(prefix: &Path, at: u64, then: Box<dyn FnOnce() + Send>) -> Guard {
    SPLITS.lock().unwrap_or_else(|p| p.into_inner()).push(Split { prefix: prefix.to_path_buf(), at, then });
    Guard(prefix.to_path_buf())
  }

  pub(crate) fn take_split(path: &Path) -> Option<(u64, Box<dyn FnOnce() + Send>)> {
    let mut splits = SPLITS.lock().unwrap_or_else(|p| p.into_inner());
    let index = splits.iter().position(|s| path.starts_with(&s.prefix))?;
    let split = splits.remove(index);
    Some((split.at, split.then))
  }

  /// From now on, the `op` on any state file under `prefix` fails with `errno` (e.g.
  /// `libc::EIO`, `ENOSPC`) after `skip` successes, `times` times. The returned guard removes
  /// every rule of `prefix` when dropped.
  pub fn inject(prefix: &Path, op: Op, errno: i32, skip: u32, times: u32) -> Guard {
    RULES.lock().unwrap_or_else(|p| p.into_inner()).push(Rule { prefix: prefix.to_path_buf(), op, errno, skip, times });
    Guard(prefix.to_path_buf())
  }

  /// Removes the rules of its prefix when dropped.
  pub struct Guard(PathBuf);

  impl Drop for Guard {
    fn drop(&mut self) {
      RULES.lock().unwrap_or_else(|p| p.into_inner()).retain(|r| r.prefix != self.0);
      SPLITS.lock().unwrap_or_else(|p| p.into_inner()).retain(|s| s.prefix != self.0);
    }
  }

  pub(crate) fn check(path: &Path, op: Op) -> io::Result<()> {
    let mut rules = RULES.lock().unwrap_or_else(|p| p.into_inner());
    for rule in rules.iter_mut() {
      if rule.op != op || !path.starts_with(&rule.prefix) {
        continue;
      }
      if rule.skip > 0 {
        rule.skip -= 1;
        continue;
      }
      if rule.times > 0 {
        if rule.times != u32::MAX {
          rule.times -= 1;
        }
        return Err(io::Error::from_raw_os_error(rule.errno));
      }
    }
    Ok(())
  }
}

#[cfg(test)]
mod tests;
