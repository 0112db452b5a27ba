//! Where a workspace keeps its memory, and how each place is reached.
//!
//! Every directory below the workspace is reached through [`StateDir::descend`], one component
//! at a time without following a symlink, and created (when the store needs it) with `mkdirat`
//! below a handle already known to be inside the workspace. A symlinked directory on the way is
//! `E_PATH_OUTSIDE_ROOT` before anything is created below it. Directories are re-resolved for
//! each operation, so a store never keeps writing into a directory that was moved away.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{invalid, Result};
use crate::fsutil::{relative_components, StateDir};

use super::types::{StoreOptions, MEMORY_DIR};

/// A state file: the directory it lives in (relative to the workspace; empty for the
/// workspace itself) and its name.
#[derive(Debug, Clone)]
pub(crate) struct FileSpot {
  pub dir: PathBuf,
  pub name: OsString,
}

/// The resolved places of a workspace's memory.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
  /// The workspace, as the caller named it (symlinks in it are the caller's choice).
  pub workspace: PathBuf,
  /// Relative to the workspace, checked: no `..`, not absolute.
  pub grimoire: PathBuf,
  pub wal: PathBuf,
  pub notes: FileSpot,
  pub learnings: FileSpot,
  pub lock_timeout: Duration,
  /// Relative to the workspace, checked.
  pub keys: PathBuf,
  pub audit: PathBuf,
  pub audit_segment_max_bytes: u64,
  /// The WAL's fsync policy, which the search index's own log follows.
  pub sync: crate::wal::SyncMode,
  pub sharing: super::types::Sharing,
  pub search: super::types::SearchSettings,
  /// The signed manifest's file name in the grimoire (see [`super::seal`]).
  pub manifest_name: Option<String>,
  /// The recovery state directory (relative, checked): captures are refused while it says
  /// degraded.
  pub recovery_state: PathBuf,
  /// The replicate state directory (relative, checked) when replication is configured: its
  /// `shipped.json` limits retention.
  pub replication_state: Option<PathBuf>,
  /// How captures are redacted: a forget finds a memory's block in an imported Markdown file
  /// by redacting and hashing each block as the import did.
  pub redaction: crate::redact::RedactOptions,
}

/// A relative path as the configuration or the caller gave it, checked (`E_PATH_OUTSIDE_ROOT`
/// for absolute paths and `..`).
fn checked(relative: &str) -> Result<PathBuf> {
  Ok(relative_components(Path::new(relative))?.into_iter().collect())
}

fn file_spot(relative: &str) -> Result<FileSpot> {
  let mut parts = relative_components(Path::new(relative))?;
  let name = parts.pop().expect("relative_components is never empty");
  Ok(FileSpot { dir: parts.into_iter().collect(), name })
}

/// The checks a workspace directory passes before anything is read or created in it:
/// `E_INVALID_ARGUMENT` when it is empty or not a directory.
pub fn check_workspace(workspace: &Path) -> Result<()> {
  if workspace.as_os_str().is_empty() {
    return invalid("workspaceDir must not be empty");
  }
  if !workspace.is_dir() {
    return invalid(format!("workspaceDir {} is not a directory", workspace.display()));
  }
  Ok(())
}

impl Layout {
  /// Resolves (and checks: no absolute path, no `..`) the places `options` names. Touches
  /// nothing; see [`create`](Self::create).
  pub fn resolve(options: &StoreOptions) -> Result<Layout> {
    check_workspace(&options.workspace_dir)?;
    Ok(Layout {
      workspace: options.workspace_dir.clone(),
      grimoire: checked(&options.grimoire_dir)?,
      wal: checked(&options.wal_dir)?,
      notes: file_spot(&options.notes_path)?,
      learnings: file_spot(&options.learnings_path)?,
      lock_timeout: options.wal.lock_timeout,
      keys: checked(&options.keys_dir)?,
      audit: checked(&options.audit_dir)?,
      audit_segment_max_bytes: options.audit_segment_max_bytes,
      sync: options.wal.sync,
      sharing: options.sharing.clone(),
      search: options.search.clone(),
      manifest_name: options.manifest_name.clone(),
      recovery_state: checked(&options.recovery_state_dir)?,
      replication_state: options.replication_state_dir.as_deref().map(checked).transpose()?,
      redaction: options.redaction.clone(),
    })
  }

  /// Creates the grimoire, the WAL directory and the directories of NOTES.md and
  /// learnings.json, never through a symlink.
  pub fn create(&self) -> Result<()> {
    let root = self.root()?;
    for dir in [&self.grimoire, &self.wal, &self.notes.dir, &self.learnings.dir] {
      self.dir_in(&root, dir, true)?;
    }
    Ok(())
  }

  pub fn root(&self) -> Result<StateDir> {
    StateDir::open_root(&self.workspace)
  }

  /// The directory `relative` below `root` (`root` itself when empty); `None` when missing
  /// and not `create`.
  pub fn dir_in(&self, root: &StateDir, relative: &Path, create: bool) -> Result<Option<StateDir>> {
    if relative.as_os_str().is_empty() {
      return root.try_clone().map(Some);
    }
    root.descend(relative, create)
  }

  pub fn dir(&self, relative: &Path, create: bool) -> Result<Option<StateDir>> {
    self.dir_in(&self.root()?, relative, create)
  }

  /// The grimoire's `memory/` directory, if it exists (a symlink is `E_PATH_OUTSIDE_ROOT`).
  pub fn memory_dir(&self) -> Result<Option<StateDir>> {
    match self.dir(&self.grimoire, false)? {
      Some(grimoire) => grimoire.subdir(MEMORY_DIR),
      None => Ok(None),
    }
  }

  /// Paths for the WAL functions (which reach their own files through `fsutil` themselves)
  /// and for messages.
  pub fn grimoire_path(&self) -> PathBuf {
    self.workspace.join(&self.grimoire)
  }

  pub fn wal_path(&self) -> PathBuf {
    self.workspace.join(&self.wal)
  }
}
