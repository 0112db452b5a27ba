//! Filling a staging directory from a restore source, and swapping it in.
//!
//! Every source writes into a fresh staging directory beside the live grimoire (same parent, so
//! on the same file system and a rename away); nothing here touches the live grimoire except
//! [`swap_in`].

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{LoaError, Result};
use crate::fsutil::{relative_components, StateDir};

use super::{GitSource, ReplicaSource, TemplateFile};

/// Limits of what one restore may write.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
  pub max_file_bytes: u64,
  pub max_files: usize,
}

impl Limits {
  /// Counts one more restored file: `E_TOO_LARGE` past `max_files` (the one check every source
  /// makes before it writes a file).
  fn count_file(self, so_far: usize) -> Result<usize> {
    let files = so_far + 1;
    if files > self.max_files {
      return Err(LoaError::TooLarge {
        what: "the restore source".into(),
        size: files as u64,
        limit: self.max_files as u64,
      });
    }
    Ok(files)
  }
}

/// The name of a new staging directory for the grimoire named `live`.
pub(crate) fn staging_name(live: &OsStr) -> OsString {
  static COUNTER: AtomicU64 = AtomicU64::new(0);
  let n = COUNTER.fetch_add(1, Ordering::Relaxed);
  marked(live, &format!("{STAGING_MARK}{}-{n}", std::process::id()))
}

/// Marks of the directories recovery leaves beside the grimoire.
pub(crate) const STAGING_MARK: &str = "loa-staging-";
pub(crate) const EVIDENCE_MARK: &str = "loa-evidence-";
pub(crate) const LEFTOVER_MARK: &str = "loa-leftover-";

/// `.<live>.<suffix>`, with `live` cut so that the name fits `NAME_MAX`.
pub(crate) fn marked(live: &OsStr, suffix: &str) -> OsString {
  use std::os::unix::ffi::{OsStrExt, OsStringExt};
  let keep = crate::fsutil::NAME_MAX.saturating_sub(suffix.len() + 2).min(live.len());
  let mut name = vec![b'.'];
  name.extend_from_slice(&live.as_bytes()[..keep]);
  name.push(b'.');
  name.extend_from_slice(suffix.as_bytes());
  OsString::from_vec(name)
}

/// A free name `.<live>.<mark><timestamp>[-k]` in `parent`.
pub(crate) fn free_name(parent: &StateDir, live: &OsStr, mark: &str) -> Result<OsString> {
  let stamp = crate::timestamp::format_ms_compact(crate::timestamp::now_ms());
  for k in 0..1000u32 {
    let suffix = if k == 0 { format!("{mark}{stamp}") } else { format!("{mark}{stamp}-{k}") };
    let name = marked(live, &suffix);
    if parent.kind_of(&name)?.is_none() {
      return Ok(name);
    }
  }
  Err(LoaError::Internal("no free name beside the grimoire".into()))
}

/// Writes `content` at the relative `path` below `root`, creating directories on the way.
fn write_rel(root: &StateDir, path: &str, content: &[u8]) -> Result<()> {
  let parts = relative_components(Path::new(path))?;
  let (name, dirs) = parts.split_last().ok_or_else(|| LoaError::InvalidArgument("empty path".into()))?;
  let dir = if dirs.is_empty() {
    root.try_clone()?
  } else {
    root.descend(&dirs.iter().collect::<std::path::PathBuf>(), true)?.expect("created")
  };
  if dir.kind_of(name)?.is_some() {
    return Err(LoaError::InvalidArgument("a restore source lists one path twice".into()));
  }
  dir.write_atomic(name, content, None)
}

/// Copies every regular file below the mount directory into `staging`. A symlink, FIFO or other
/// special file in the source fails the source (a restore must be faithful or not happen).
pub(crate) fn stage_mount(mount: &Path, staging: &StateDir, limits: Limits) -> Result<usize> {
  let root = StateDir::open_root(mount)?;
  let mut stack: Vec<(StateDir, String)> = vec![(root, String::new())];
  let mut files = 0usize;
  while let Some((dir, prefix)) = stack.pop() {
    for entry in dir.entries()? {
      let Some(name) = entry.name_str() else {
        return Err(LoaError::InvalidArgument("the mount holds a file name that is not UTF-8".into()));
      };
      if crate::fsutil::is_temp_name(&entry.name) {
        continue; // an interrupted write on the source side; never part of a signed state
      }
      let rel = if prefix.is_empty() { name.to_string() } else { format!("{prefix}/{name}") };
      if entry.is_dir() {
        let sub = dir
          .subdir(&entry.name)?
          .ok_or_else(|| LoaError::io("open", &dir.child_path(&entry.name), std::io::ErrorKind::NotFound.into()))?;
        stack.push((sub, rel));
      } else if entry.is_file() {
        files = limits.count_file(files)?;
        let bytes = dir
          .read(&entry.name, limits.max_file_bytes)?
          .ok_or_else(|| LoaError::io("read", &dir.child_path(&entry.name), std::io::ErrorKind::NotFound.into()))?;
        write_rel(staging, &rel, &bytes)?;
      } else {
        return Err(LoaError::NotRegularFile {
          path: dir.child_path(&entry.name).display().to_string(),
          kind: crate::fsutil::kind_name(entry.file_type),
        });
      }
    }
  }
  Ok(files)
}

/// Writes the template files into `staging`.
pub(crate) fn stage_template(template: &[TemplateFile], staging: &StateDir) -> Result<usize> {
  for file in template {
    write_rel(staging, &file.path, &file.content)?;
  }
  Ok(template.len())
}

/// A `git` command with an argument vector (never a shell), without the user's or system's
/// configuration, prompts or the `ext::` transport, and with no variable that would point it
/// at another repository.
fn git(git_dir: &Path) -> Command {
  let mut cmd = git_base();
  cmd.arg("--git-dir").arg(git_dir);
  cmd
}

/// `git` with the environment of [`git`], before any repository is named.
pub(crate) fn git_base() -> Command {
  let mut cmd = Command::new("git");
  for var in [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
  ] {
    cmd.env_remove(var);
  }
  cmd
    .env("GIT_CONFIG_NOSYSTEM", "1")
    .env("GIT_CONFIG_GLOBAL", "/dev/null")
    .env("GIT_TERMINAL_PROMPT", "0")
    .env("GIT_ASKPASS", "true")
    // Paths given to git are paths, never patterns (`*` in a directory name matches itself).
    .env("GIT_LITERAL_PATHSPECS", "1")
    .args(["-c", "protocol.ext.allow=never", "-c", "core.hooksPath=/dev/null"])
    .stdin(Stdio::null());
  cmd
}

/// Runs a git command to completion; its output is returned, at most `max` bytes. stderr is
/// dropped: it may quote the remote's URL, which can hold credentials.
pub(crate) fn run(mut cmd: Command, what: &str, max: u64) -> Result<Vec<u8>> {
  let mut child = cmd
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .map_err(|e| LoaError::io(format!("run git ({what})"), Path::new("git"), e))?;
  let mut out = Vec::new();
  let read = child.stdout.take().expect("piped").take(max + 1).read_to_end(&mut out);
  if read.is_err() || out.len() as u64 > max {
    let _ = child.kill();
    let _ = child.wait();
    return match read {
      Err(e) => Err(LoaError::io(format!("read git output ({what})"), Path::new("git"), e)),
      Ok(_) => Err(LoaError::TooLarge { what: format!("git output ({what})"), size: out.len() as u64, limit: max }),
    };
  }
  let status = child.wait().map_err(|e| LoaError::io(format!("wait for git ({what})"), Path::new("git"), e))?;
  if !status.success() {
    return Err(LoaError::Io {
      context: format!("git {what} failed ({status})"),
      source: std::io::Error::other("git exited unsuccessfully"),
    });
  }
  Ok(out)
}

/// Checks the remote and branch before they become arguments: neither may look like an option,
/// and the branch must be a plain ref name.
pub(crate) fn check_git_source(source: &GitSource) -> Result<()> {
  if source.remote.is_empty() || source.remote.starts_with('-') || source.remote.contains('\0') {
    return crate::error::invalid("`git.remote` must be a repository URL or path, not starting with '-'");
  }
  if source.remote.starts_with("ext::") {
    return crate::error::invalid("`git.remote` must not use the ext:: transport");
  }
  let b = &source.branch;
  let bad = b.is_empty()
    || b.starts_with('-')
    || b.starts_with('/')
    || b.ends_with('/')
    || b.ends_with(".lock")
    || b.contains("..")
    || b.contains("//")
    || b.contains("@{")
    || b.bytes().any(|c| c <= b' ' || matches!(c, b'~' | b'^' | b':' | b'?' | b'*' | b'[' | b'\\' | 0x7f));
  if bad {
    return crate::error::invalid("`git.branch` must be a plain branch name");
  }
  if let Some(path) = source.path.as_deref().filter(|p| *p != ".") {
    relative_components(Path::new(path))?;
  }
  Ok(())
}

/// The places a grimoire is looked for in a fetched commit when the caller gave no path, in
/// order: where it sits relative to the git work tree the workspace lies in (the common case: the
/// workspace, or a directory above it, is the repository the remote names), the workspace's own
/// grimoire path from the repository root, and the root itself. The work tree is found by
/// looking for `.git` in the workspace and its parents, without running git there: the
/// workspace's repository configuration is not trusted to run anything.
pub(crate) fn grimoire_candidates(workspace: &Path, grimoire_dir: &str) -> Vec<String> {
  let mut out = Vec::new();
  if let Ok(ws) = std::fs::canonicalize(workspace) {
    let top = ws.ancestors().find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok());
    if let Some(rel) = top.and_then(|top| ws.strip_prefix(top).ok()).and_then(Path::to_str) {
      let joined = if rel.is_empty() { grimoire_dir.to_string() } else { format!("{rel}/{grimoire_dir}") };
      if relative_components(Path::new(&joined)).is_ok() {
        out.push(joined);
      }
    }
  }
  for c in [grimoire_dir, "."] {
    if !out.iter().any(|o| o == c) {
      out.push(c.to_string());
    }
  }
  out
}

/// `path/name` inside a tree (`name` alone for the root `.`).
fn in_tree(path: &str, name: &str) -> String {
  match path.trim_end_matches('/') {
    "." | "" => name.to_string(),
    p => format!("{p}/{name}"),
  }
}

/// Whether the fetched commit holds a regular blob at `path`.
fn has_blob(scratch: &Path, path: &str) -> Result<bool> {
  let mut ls = git(scratch);
  ls.args(["ls-tree", "-z", "--full-tree", "refs/loa/restore", "--"]).arg(path);
  let out = run(ls, "ls-tree", 1 << 16)?;
  Ok(out.split(|&b| b == 0).any(|r| r.starts_with(b"100644 blob ") || r.starts_with(b"100755 blob ")))
}

/// Directories of the fetched commit that hold a file named `manifest` (`.` for the root), at
/// most three, each a plain path that redaction leaves alone: what `--git-path` could be. One
/// pass over the listing.
fn manifest_dirs(scratch: &Path, manifest: &str) -> Result<Vec<String>> {
  let mut ls = git(scratch);
  ls.args(["ls-tree", "-r", "-z", "--name-only", "--full-tree", "refs/loa/restore"]);
  let listing = run(ls, "ls-tree", 64 << 20)?;
  let plain =
    |p: &str| p.len() <= 256 && p.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'));
  let mut dirs = Vec::new();
  for name in listing.split(|&b| b == 0).filter_map(|r| std::str::from_utf8(r).ok()) {
    let dir = match name.rsplit_once('/') {
      Some((dir, file)) if file == manifest => dir,
      None if name == manifest => ".",
      _ => continue,
    };
    // A name that redaction would change (one that looks like a key or an address) is not
    // repeated in an error.
    let secret = || crate::redact::redact(dir, &crate::redact::RedactOptions::default()).text != dir;
    if plain(dir) && !dirs.iter().any(|d| d == dir) && !secret() {
      dirs.push(dir.to_string());
      if dirs.len() == 3 {
        break;
      }
    }
  }
  Ok(dirs)
}

/// The grimoire's path in the fetched commit: the caller's `path` when it holds `manifest`,
/// else (no path given) the first of `candidates` that does. When none does, an
/// `E_INVALID_ARGUMENT` that names the paths of the commit that would work, and never a local
/// directory.
fn locate(scratch: &Path, source: &GitSource, candidates: &[String], manifest: &str) -> Result<String> {
  let tried: Vec<String> = match &source.path {
    Some(path) => vec![path.clone()],
    None => candidates.to_vec(),
  };
  for path in &tried {
    if has_blob(scratch, &in_tree(path, manifest))? {
      return Ok(path.clone());
    }
  }
  let which = match &source.path {
    Some(_) => "at the given git path".to_string(),
    None => format!(
      "at any default git path ({})",
      tried.iter().filter(|t| t.len() <= 256).map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
    ),
  };
  let dirs = manifest_dirs(scratch, manifest)?;
  let hint = if dirs.is_empty() {
    format!("no `{manifest}` anywhere in that commit: it holds no signed grimoire")
  } else {
    let paths: Vec<String> = dirs.iter().map(|d| format!("`--git-path {d}`")).collect();
    format!("{} would work", paths.join(" or "))
  };
  Err(LoaError::InvalidArgument(format!("the git branch holds no `{manifest}` {which}; {hint}")))
}

/// Fetches `branch` of `remote` into a scratch bare repository `scratch` (which must not
/// exist), finds the grimoire in that commit ([`locate`]: the given `path`, else the first of
/// `candidates` holding `manifest`), then writes every blob below it into `staging`. Only
/// regular blobs are accepted; a symlink or submodule entry fails the source.
pub(crate) fn stage_git(
  source: &GitSource,
  candidates: &[String],
  manifest: &str,
  scratch: &Path,
  staging: &StateDir,
  limits: Limits,
) -> Result<usize> {
  check_git_source(source)?;
  let mut init = Command::new("git");
  init
    .env("GIT_CONFIG_NOSYSTEM", "1")
    .env("GIT_CONFIG_GLOBAL", "/dev/null")
    .args(["init", "-q", "--bare"])
    .arg(scratch);
  run(init, "init", 1 << 16)?;
  let refspec = format!("+refs/heads/{}:refs/loa/restore", source.branch);
  let mut fetch = git(scratch);
  fetch.args(["fetch", "-q", "--no-tags", "--depth", "1", "--"]).arg(&source.remote).arg(&refspec);
  run(fetch, "fetch", 1 << 16)?;
  let path = locate(scratch, source, candidates, manifest)?;
  let mut ls = git(scratch);
  ls.args(["ls-tree", "-r", "-z", "--full-tree", "refs/loa/restore"]);
  if path != "." {
    ls.arg("--").arg(&path);
  }
  let listing = run(ls, "ls-tree", 64 << 20)?;
  let prefix = if path == "." { String::new() } else { format!("{}/", path.trim_end_matches('/')) };
  let mut files = 0usize;
  for record in listing.split(|&b| b == 0).filter(|r| !r.is_empty()) {
    let text = std::str::from_utf8(record)
      .map_err(|_| LoaError::InvalidArgument("the git tree holds a path that is not UTF-8".into()))?;
    let (meta, path) = text.split_once('\t').ok_or_else(|| LoaError::Internal("unexpected ls-tree output".into()))?;
    let mut meta = meta.split(' ');
    let (mode, kind, object) = (meta.next(), meta.next(), meta.next());
    let (Some(mode), Some("blob"), Some(object)) = (mode, kind, object) else {
      return Err(LoaError::InvalidArgument("the git tree holds a submodule where state files belong".into()));
    };
    if mode != "100644" && mode != "100755" {
      return Err(LoaError::InvalidArgument("the git tree holds a symlink where state files belong".into()));
    }
    if !object.bytes().all(|b| b.is_ascii_hexdigit()) || object.len() < 40 {
      return Err(LoaError::Internal("unexpected ls-tree object id".into()));
    }
    let Some(rel) = path.strip_prefix(&prefix) else { continue };
    files = limits.count_file(files)?;
    let mut cat = git(scratch);
    cat.args(["cat-file", "blob", object]);
    let content = run(cat, "cat-file", limits.max_file_bytes)?;
    write_rel(staging, rel, &content)?;
  }
  Ok(files)
}

/// Runs the replica's program to fetch this workspace's sealed grimoire from the object store
/// into `staging` (which it must find empty), within `limits`. The program checks every object
/// against its recorded sha256; the caller then verifies the staged copy against the pinned
/// keys, so a program or bucket that lies can only fail the source. Its output is dropped but
/// for the code of its error line (`loa: E_CODE: ...`), which becomes the failure's reason.
pub(crate) fn stage_replica(
  source: &ReplicaSource,
  workspace: &Path,
  staging: &StateDir,
  limits: Limits,
) -> Result<()> {
  let mut cmd = Command::new(&source.program);
  cmd
    .arg("stage")
    .arg("--workspace")
    .arg(workspace)
    .arg("--out")
    .arg(staging.path())
    .arg("--max-files")
    .arg(limits.max_files.to_string())
    .arg("--max-file-bytes")
    .arg(limits.max_file_bytes.to_string())
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
  let program = source.program.as_path();
  let mut child = cmd.spawn().map_err(|e| LoaError::io("run the replica program", program, e))?;
  let mut err = Vec::new();
  let _ = child.stderr.take().expect("piped").take(4096).read_to_end(&mut err);
  let status = child.wait().map_err(|e| LoaError::io("wait for the replica program", program, e))?;
  if status.success() {
    return Ok(());
  }
  // Only a code from our own table is repeated; anything else the program printed is not.
  let text = String::from_utf8_lossy(&err);
  let code = text
    .split(|c: char| !(c.is_ascii_uppercase() || c == '_'))
    .find(|w| crate::error::ERROR_CODES.contains(w))
    .unwrap_or("no error code");
  Err(LoaError::ReplicaUnavailable(format!("the replica program failed ({status}; {code})")))
}

/// The evidence and leftover directories beside the grimoire `live` in `parent`, oldest first
/// (by the time in their names; names this code did not make are not listed).
pub(crate) fn kept_aside(parent: &StateDir, live: &OsStr) -> Result<Vec<OsString>> {
  use std::os::unix::ffi::OsStrExt;
  let mut found: Vec<(u64, u32, OsString)> = Vec::new();
  for entry in parent.entries()? {
    if !entry.is_dir() {
      continue;
    }
    let Some(name) = entry.name_str() else { continue };
    for mark in [EVIDENCE_MARK, LEFTOVER_MARK] {
      let Some((head, tail)) = name.rsplit_once(&format!(".{mark}")) else { continue };
      // `.<live, perhaps cut>` before the mark, `<stamp>[-k]` after it.
      let Some(cut) = head.strip_prefix('.') else { continue };
      if !live.as_bytes().starts_with(cut.as_bytes()) {
        continue;
      }
      let (stamp, k) = tail.split_once('-').unwrap_or((tail, "0"));
      let digits: String = stamp.chars().filter(char::is_ascii_digit).collect();
      if let (Ok(at), Ok(k)) = (digits.parse::<u64>(), k.parse::<u32>()) {
        found.push((at, k, entry.name.clone()));
      }
    }
  }
  found.sort();
  Ok(found.into_iter().map(|(_, _, name)| name).collect())
}

/// What a swap did, for the report.
#[derive(Debug)]
pub(crate) struct Swapped {
  /// Where the previous live grimoire went (`None` when there was none).
  pub evidence: Option<OsString>,
}

/// Puts the verified `staging` in place of `live` (both in `parent`). Steps, and what a crash
/// at each leaves (see docs/recovery.md):
/// 1. `renameat2(staging, live, RENAME_EXCHANGE)`: one atomic step; before it the live grimoire
///    is untouched, after it the restored one is live and the staging name holds the old one.
///    Without a live grimoire, a plain rename instead.
/// 2. rename the staging name (now the old grimoire) to a free evidence name;
/// 3. fsync the parent.
///
/// A file system without `RENAME_EXCHANGE` (`EINVAL`): live -> evidence, then staging -> live.
/// A crash between the two leaves no live grimoire and the verified copy under its staging
/// name; the next run moves it aside as a leftover, sees the grimoire missing, verifies the
/// leftover against the pinned keys again and renames it into place
/// (`Run::complete_interrupted_swap`): the swap is completed, never left half done.
pub(crate) fn swap_in(parent: &StateDir, live: &OsStr, staging: &OsStr) -> Result<Swapped> {
  #[cfg(test)]
  super::tests::hooks::before_swap();
  if parent.kind_of(live)?.is_none() {
    parent.rename(staging, live)?;
    parent.sync()?;
    return Ok(Swapped { evidence: None });
  }
  let evidence = free_name(parent, live, EVIDENCE_MARK)?;
  match parent.exchange(staging, live) {
    Ok(()) => {
      parent.sync()?;
      parent.rename(staging, &evidence)?;
    }
    Err(e) if e.os_error_name() == Some("EINVAL") => {
      parent.rename(live, &evidence)?;
      parent.sync()?;
      #[cfg(test)]
      super::tests::hooks::between_fallback_renames();
      parent.rename(staging, live)?;
    }
    Err(e) => return Err(e),
  }
  parent.sync()?;
  Ok(Swapped { evidence: Some(evidence) })
}
