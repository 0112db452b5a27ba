//! Self-healing of the state zone (seed 000 §4.6): NOTES.md, the beads directory and the
//! trajectory directory are brought back when missing, from the workspace's git `HEAD` first and
//! from the template second, and the run goes on ("never halt on missing state zone files").
//!
//! Rules: a non-empty file is never overwritten (an empty NOTES.md counts as missing); a
//! directory is restored file by file (each tracked file that is missing or empty), never
//! replaced; `check_only` writes nothing and reports what would be healed from where. Git is run
//! with an argument vector (`ls-tree -r -z HEAD -- <path>`, then `cat-file blob <id>`), never a
//! shell, and only regular blobs are taken. Integrity of what comes back is not this module's
//! business: the next [`super::recover`] verifies the grimoire against its signed manifest.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::source::{git_base, run};
use crate::error::Result;
use crate::fsutil::{relative_components, StateDir};

/// Where a healed file came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HealSource {
  /// `git show HEAD:<path>` (the blob of `HEAD`).
  Git,
  /// The template (NOTES.md's template, or an empty directory).
  Template,
}

/// What happened to one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HealItem {
  /// Workspace-relative path.
  pub path: String,
  /// `None`: nothing to do; otherwise healed (or, check-only, would be) from there.
  pub from: Option<HealSource>,
  /// Why this path could not be healed (its error code and message); exit 2.
  pub error: Option<String>,
}

/// The report of [`heal`]. Exit codes: 0 healthy, 1 healed (or would heal), 2 an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HealReport {
  pub items: Vec<HealItem>,
  pub check_only: bool,
  /// Whether `git` could read `HEAD` of the workspace.
  pub git_available: bool,
}

impl HealReport {
  pub fn exit_code(&self) -> i32 {
    if self.items.iter().any(|i| i.error.is_some()) {
      2
    } else if self.items.iter().any(|i| i.from.is_some()) {
      1
    } else {
      0
    }
  }
}

/// Options of [`heal`]; paths are workspace-relative.
#[derive(Debug, Clone)]
pub struct HealOptions {
  pub workspace_dir: PathBuf,
  pub notes_path: String,
  pub beads_dir: String,
  pub trajectory_dir: String,
  /// NOTES.md's template.
  pub notes_template: String,
  pub check_only: bool,
  /// Largest file taken from git. Default 16 MiB.
  pub max_file_bytes: u64,
}

impl Default for HealOptions {
  fn default() -> Self {
    HealOptions {
      workspace_dir: PathBuf::new(),
      notes_path: "grimoires/loa/NOTES.md".into(),
      beads_dir: ".beads".into(),
      trajectory_dir: "grimoires/loa/a2a/trajectory".into(),
      notes_template: crate::memory::notes::TEMPLATE.into(),
      check_only: false,
      max_file_bytes: 16 << 20,
    }
  }
}

/// Tracked regular files of `HEAD` below `path` (workspace-relative), with their blob ids.
/// `None` when git cannot read `HEAD` here (no git, no repository, no commit).
fn tracked(workspace: &Path, path: &str) -> Option<Vec<(String, String)>> {
  let mut ls = git_base();
  ls.arg("-C").arg(workspace).args(["ls-tree", "-r", "-z", "HEAD", "--"]).arg(path);
  let out = run(ls, "ls-tree", 64 << 20).ok()?;
  let mut files = Vec::new();
  for record in out.split(|&b| b == 0).filter(|r| !r.is_empty()) {
    let text = std::str::from_utf8(record).ok()?;
    let (meta, rel) = text.split_once('\t')?;
    let mut meta = meta.split(' ');
    if let (Some("100644" | "100755"), Some("blob"), Some(id)) = (meta.next(), meta.next(), meta.next()) {
      files.push((rel.to_string(), id.to_string()));
    }
  }
  Some(files)
}

fn blob(workspace: &Path, id: &str, max: u64) -> Result<Vec<u8>> {
  let mut cat = git_base();
  cat.arg("-C").arg(workspace).args(["cat-file", "blob", id]);
  run(cat, "cat-file", max)
}

/// Whether the workspace-relative file is missing or empty (a non-regular file is an error).
fn needs_file(workspace: &StateDir, rel: &str) -> Result<bool> {
  let parts = relative_components(Path::new(rel))?;
  let (name, dirs) = parts.split_last().expect("non-empty");
  let dir = if dirs.is_empty() {
    Some(workspace.try_clone()?)
  } else {
    workspace.descend(&dirs.iter().collect::<PathBuf>(), false)?
  };
  let Some(dir) = dir else { return Ok(true) };
  match dir.open_file_if_exists(name, crate::fsutil::OpenMode::READ)? {
    Some(file) => file.is_empty(),
    None => Ok(true),
  }
}

/// Writes `content` to the workspace-relative `rel` unless it holds bytes by now.
fn write_new(workspace: &StateDir, rel: &str, content: &[u8]) -> Result<()> {
  if !needs_file(workspace, rel)? {
    return Ok(()); // filled meanwhile: never overwrite a non-empty file
  }
  let parts = relative_components(Path::new(rel))?;
  let (name, dirs) = parts.split_last().expect("non-empty");
  let dir = if dirs.is_empty() {
    workspace.try_clone()?
  } else {
    workspace.descend(&dirs.iter().collect::<PathBuf>(), true)?.expect("created")
  };
  dir.write_atomic(name, content, None)
}

/// Heals NOTES.md, the beads directory and the trajectory directory (see the module docs).
/// `Err` only for bad options or an unreadable workspace; a path that cannot be healed is an
/// item with an `error`.
pub fn heal(options: &HealOptions) -> Result<HealReport> {
  for p in [&options.notes_path, &options.beads_dir, &options.trajectory_dir] {
    relative_components(Path::new(p))?;
  }
  let workspace = StateDir::open_root(&options.workspace_dir)?;
  let ws = options.workspace_dir.as_path();
  let git_available = {
    let mut head = git_base();
    head.arg("-C").arg(ws).args(["rev-parse", "--verify", "-q", "HEAD"]);
    run(head, "rev-parse", 4096).is_ok()
  };
  let mut report = HealReport { items: Vec::new(), check_only: options.check_only, git_available };

  // NOTES.md: git, then the template.
  let item = (|| -> Result<Option<HealSource>> {
    if !needs_file(&workspace, &options.notes_path)? {
      return Ok(None);
    }
    let from_git = match tracked(ws, &options.notes_path) {
      Some(files) => match files.iter().find(|(p, _)| *p == options.notes_path) {
        Some((_, id)) => Some(blob(ws, id, options.max_file_bytes)?).filter(|b| !b.is_empty()),
        None => None,
      },
      None => None,
    };
    let (source, content) = match from_git {
      Some(bytes) => (HealSource::Git, bytes),
      None => (HealSource::Template, options.notes_template.clone().into_bytes()),
    };
    if !options.check_only {
      write_new(&workspace, &options.notes_path, &content)?;
    }
    Ok(Some(source))
  })();
  report.items.push(item_of(&options.notes_path, item));

  // Directories: each tracked file that is missing or empty from git; a missing directory with
  // nothing in git is created empty (the template).
  for dir in [&options.beads_dir, &options.trajectory_dir] {
    let mut items = Vec::new();
    let result = (|| -> Result<Option<HealSource>> {
      let exists = workspace.descend(Path::new(dir.as_str()), false)?.is_some();
      for (path, id) in tracked(ws, dir).unwrap_or_default() {
        let healed = (|| -> Result<Option<HealSource>> {
          if !needs_file(&workspace, &path)? {
            return Ok(None);
          }
          if !options.check_only {
            write_new(&workspace, &path, &blob(ws, &id, options.max_file_bytes)?)?;
          }
          Ok(Some(HealSource::Git))
        })();
        let item = item_of(&path, healed);
        if item.from.is_some() || item.error.is_some() {
          items.push(item);
        }
      }
      let now_exists = exists || workspace.descend(Path::new(dir.as_str()), false)?.is_some();
      if now_exists || (!items.is_empty() && options.check_only) {
        return Ok(None);
      }
      if !options.check_only {
        workspace.descend(Path::new(dir.as_str()), true)?;
      }
      Ok(Some(HealSource::Template))
    })();
    report.items.push(item_of(dir, result));
    report.items.extend(items);
  }
  Ok(report)
}

#[cfg(test)]
mod tests;

fn item_of(path: &str, result: Result<Option<HealSource>>) -> HealItem {
  match result {
    Ok(from) => HealItem { path: path.to_string(), from, error: None },
    Err(e) => HealItem { path: path.to_string(), from: None, error: Some(format!("{}: {e}", e.code())) },
  }
}
