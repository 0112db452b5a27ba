//! The copies of a forgotten memory that the project keeps outside its live state files.
//!
//! [`super::forget`] rewrites the live files (WAL, consolidation state, records, derived files).
//! Besides them the project itself keeps copies that a forget must reach too, each handled by
//! what it is for:
//!
//! - **The signed manifest** lists `memory/<id>.json`, and the id confirms a guess of the
//!   content. With a key ring the grimoire is sealed again (the manifest is rewritten and
//!   signed as a consolidation seals it); without one the manifest is rewritten without the
//!   entry and without its signature, which no longer matched it (see [`manifest`]).
//! - **Recovery's directories beside the grimoire** (evidence of a replaced grimoire,
//!   leftovers of an interrupted run, staging) and its git scratch directories: each is a whole
//!   copy of a grimoire, whose files (NOTES.md, learnings, the index) hold the memory among
//!   others. Editing them would destroy what they are kept to prove, so one that holds the
//!   memory is removed whole (listed in the outcome and in the audit event). The recovery lock
//!   is held meanwhile, so no recovery run is using them.
//! - **Quarantined files** (`<name>.corrupt-<stamp>`, see [`crate::fsutil::is_quarantine_name`]):
//!   kept for a human to look at; one that holds the memory is removed.
//! - **The dead-letter queue**: its letters holding the memory are removed (see
//!   [`crate::dead_letter::forget`]).
//!
//! "Holds the memory": a file's name or bytes contain the id (hex) or the stored (redacted)
//! content, raw or as a JSON string body (see [`Needles`]). Files are scanned in bounded chunks,
//! so the cost is linear in the bytes of the copies, and only copies are scanned, never the
//! live files (those are rewritten by structure, not by search).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use aho_corasick::AhoCorasick;

use crate::error::{LoaError, Result};
use crate::fsutil::{is_quarantine_name, OpenMode, StateDir};

use super::layout::Layout;

/// What a copy of a forgotten memory is recognised by: its id and its stored content (raw,
/// and as the body of a JSON string, as record files, learnings and letters hold it).
pub(super) struct Needles {
  matcher: Option<AhoCorasick>,
  longest: usize,
}

const CHUNK: usize = 1 << 20;

impl Needles {
  pub fn new(ids: &[String], contents: &[String]) -> Result<Needles> {
    let mut patterns: Vec<Vec<u8>> = ids.iter().map(|id| id.as_bytes().to_vec()).collect();
    for content in contents {
      let content = content.trim();
      if content.is_empty() {
        continue;
      }
      patterns.push(content.as_bytes().to_vec());
      let json = serde_json::to_string(content).map_err(|e| LoaError::Internal(e.to_string()))?;
      let body = json.as_bytes()[1..json.len() - 1].to_vec();
      if body != content.as_bytes() {
        patterns.push(body);
      }
    }
    patterns.retain(|p| !p.is_empty());
    let longest = patterns.iter().map(Vec::len).max().unwrap_or(0);
    let matcher = if patterns.is_empty() {
      None
    } else {
      Some(AhoCorasick::new(&patterns).map_err(|e| LoaError::Internal(e.to_string()))?)
    };
    Ok(Needles { matcher, longest })
  }

  pub fn in_bytes(&self, bytes: &[u8]) -> bool {
    self.matcher.as_ref().is_some_and(|m| m.is_match(bytes))
  }

  /// Whether the regular file `name` of `dir` holds a needle: read in chunks of 1 MiB, each
  /// overlapping the previous by one needle's length, so the cost is linear in its size.
  /// Anything else than a regular file is never opened (false).
  pub fn in_file(&self, dir: &StateDir, name: &OsStr) -> Result<bool> {
    if self.matcher.is_none() {
      return Ok(false);
    }
    if name.to_str().is_some_and(|n| self.in_bytes(n.as_bytes())) {
      return Ok(true);
    }
    let file = match dir.open_file_if_exists(name, OpenMode::READ) {
      Ok(Some(file)) => file,
      Ok(None) | Err(LoaError::NotRegularFile { .. }) => return Ok(false),
      Err(e) => return Err(e),
    };
    let size = file.len()?;
    let keep = self.longest.saturating_sub(1);
    let mut buf = vec![0u8; CHUNK + keep];
    let (mut offset, mut carried) = (0u64, 0usize);
    while offset < size {
      let n = file.read_at(&mut buf[carried..], offset)?;
      if n == 0 {
        break;
      }
      let filled = carried + n;
      if self.in_bytes(&buf[..filled]) {
        return Ok(true);
      }
      offset += n as u64;
      carried = keep.min(filled);
      buf.copy_within(filled - carried..filled, 0);
    }
    Ok(false)
  }

  /// Whether any file below `dir` (its names included) holds a needle. Directories are never
  /// followed through a symlink; the walk keeps an explicit stack.
  pub fn in_tree(&self, dir: &StateDir) -> Result<bool> {
    let mut stack = vec![dir.try_clone()?];
    while let Some(d) = stack.pop() {
      for entry in d.entries()? {
        if entry.name_str().is_some_and(|n| self.in_bytes(n.as_bytes())) {
          return Ok(true);
        }
        if entry.is_dir() {
          if let Some(sub) = d.subdir(&entry.name)? {
            stack.push(sub);
          }
        } else if entry.is_file() && self.in_file(&d, &entry.name)? {
          return Ok(true);
        }
      }
    }
    Ok(false)
  }
}

/// Name prefixes of the directories recovery keeps beside the grimoire `live`, and of its git
/// scratch directories in its state directory.
fn is_recovery_copy(name: &OsStr, live: &OsStr) -> bool {
  use std::os::unix::ffi::OsStrExt;
  let marks = [
    crate::recovery::source::STAGING_MARK,
    crate::recovery::source::EVIDENCE_MARK,
    crate::recovery::source::LEFTOVER_MARK,
  ];
  let name = name.as_bytes();
  let Some(rest) = name.strip_prefix(b".") else { return false };
  marks.iter().any(|mark| {
    let needle = format!(".{mark}");
    match memchr::memmem::rfind(rest, needle.as_bytes()) {
      // `.<live, perhaps cut to fit NAME_MAX>.<mark>...`
      Some(at) => live.as_bytes().starts_with(&rest[..at]),
      None => false,
    }
  })
}

/// Removes the copies recovery keeps that hold the memory (see the module docs). Returns them,
/// workspace-relative.
pub(super) fn sweep_recovery_copies(layout: &Layout, root: &StateDir, needles: &Needles) -> Result<Vec<String>> {
  let mut removed = Vec::new();
  let state = layout.dir_in(root, &layout.recovery_state, false)?;
  // No recovery run may be staging, verifying or swapping while its copies are looked at.
  let _lock = match &state {
    Some(dir) => Some(crate::recovery::lock_state(dir, layout.lock_timeout)?),
    None => None,
  };
  let parts: Vec<OsString> = layout.grimoire.iter().map(OsStr::to_os_string).collect();
  if let Some((live, parent_parts)) = parts.split_last() {
    let parent_rel: PathBuf = parent_parts.iter().collect();
    if let Some(parent) = layout.dir_in(root, &parent_rel, false)? {
      for entry in parent.entries()? {
        if !entry.is_dir() || !is_recovery_copy(&entry.name, live) {
          continue;
        }
        if let Some(dir) = parent.subdir(&entry.name)? {
          if needles.in_tree(&dir)? {
            parent.remove_tree(&entry.name)?;
            parent.sync()?;
            removed.push(shown(&parent_rel, &entry.name));
          }
        }
      }
    }
  }
  if let Some(state) = &state {
    for entry in state.entries()? {
      let scratch = entry.name_str().is_some_and(|n| n.starts_with(crate::recovery::GIT_SCRATCH_PREFIX));
      if !entry.is_dir() || !scratch {
        continue;
      }
      if let Some(dir) = state.subdir(&entry.name)? {
        if needles.in_tree(&dir)? {
          state.remove_tree(&entry.name)?;
          state.sync()?;
          removed.push(shown(&layout.recovery_state, &entry.name));
        }
      }
    }
  }
  Ok(removed)
}

/// Removes the quarantined files (`*.corrupt-*`) that hold the memory, below every state
/// directory of the workspace: the grimoire, the WAL, the NOTES.md and learnings directories,
/// the recovery state, the audit log, and the dead-letter queue's directory. Returns them,
/// workspace-relative.
pub(super) fn sweep_quarantined(layout: &Layout, root: &StateDir, needles: &Needles) -> Result<Vec<String>> {
  let mut removed = Vec::new();
  walk_quarantined(layout, root, |dir, name, rel| {
    if !needles.in_file(dir, name)? {
      return Ok(false);
    }
    dir.remove_file(name)?;
    removed.push(shown(rel, name));
    Ok(true)
  })?;
  Ok(removed)
}

/// The quarantined files (`*.corrupt-*`) below every state directory of the workspace (those
/// [`sweep_quarantined`] walks), workspace-relative and sorted. Reads directory entries only.
pub(super) fn quarantined_files(layout: &Layout, root: &StateDir) -> Result<Vec<String>> {
  let mut found = Vec::new();
  walk_quarantined(layout, root, |_, name, rel| {
    found.push(shown(rel, name));
    Ok(false)
  })?;
  found.sort();
  Ok(found)
}

/// Calls `visit(dir, name, dir's workspace-relative path)` for each quarantined file below the
/// workspace's state directories, each directory once (one below another is walked as part of
/// it); a directory where `visit` returned true (it removed something) is synced after.
fn walk_quarantined(
  layout: &Layout,
  root: &StateDir,
  mut visit: impl FnMut(&StateDir, &OsStr, &Path) -> Result<bool>,
) -> Result<()> {
  let mut tops: Vec<PathBuf> = vec![
    layout.grimoire.clone(),
    layout.wal.clone(),
    layout.notes.dir.clone(),
    layout.learnings.dir.clone(),
    layout.recovery_state.clone(),
    layout.audit.clone(),
    PathBuf::from(crate::dead_letter::DIR),
  ];
  // The workspace itself is not a state directory (the project's own files live there).
  tops.retain(|t| !t.as_os_str().is_empty());
  tops.sort();
  tops.dedup();
  let tops: Vec<PathBuf> = tops.iter().filter(|t| !tops.iter().any(|o| o != *t && t.starts_with(o))).cloned().collect();
  for top in tops {
    let Some(dir) = layout.dir_in(root, &top, false)? else { continue };
    let mut stack: Vec<(StateDir, PathBuf)> = vec![(dir, top)];
    while let Some((d, rel)) = stack.pop() {
      let mut changed = false;
      for entry in d.entries()? {
        if entry.is_dir() {
          if let Some(sub) = d.subdir(&entry.name)? {
            stack.push((sub, rel.join(&entry.name)));
          }
        } else if entry.is_file() && is_quarantine_name(&entry.name) {
          changed |= visit(&d, &entry.name, &rel)?;
        }
      }
      if changed {
        d.sync()?;
      }
    }
  }
  Ok(())
}

fn shown(rel: &Path, name: &OsStr) -> String {
  rel.join(name).to_string_lossy().into_owned()
}

/// The manifest without the entries of the forgotten memories (`memory/<id>.json`) and
/// without its signature, which covered them. Returns whether the file changed. A manifest
/// that cannot be read as one (damaged, not canonical) is removed when it holds the memory:
/// nothing could verify it anyway.
pub(super) fn strip_manifest(layout: &Layout, grimoire: &StateDir, ids: &[String], needles: &Needles) -> Result<bool> {
  let Some(name) = layout.manifest_name.as_deref() else { return Ok(false) };
  if grimoire.kind_of(name)?.is_none() {
    return Ok(false);
  }
  let path = grimoire.child_path(name);
  let value = match crate::sign::manifest::read_manifest(&path) {
    Ok(value) => value,
    Err(LoaError::NotRegularFile { .. }) => return Ok(false),
    Err(LoaError::StateCorrupt { .. }) | Err(LoaError::TooLarge { .. }) => {
      if needles.in_file(grimoire, OsStr::new(name))? {
        grimoire.remove_file(name)?;
        grimoire.sync()?;
        return Ok(true);
      }
      return Ok(false);
    }
    Err(e) => return Err(e),
  };
  let mut object = value.as_object().cloned().unwrap_or_default();
  let names: Vec<String> = ids.iter().map(|id| super::types::record_path(id)).collect();
  let mut changed = false;
  if let Some(serde_json::Value::Array(files)) = object.get_mut("files") {
    let before = files.len();
    files.retain(|f| !f.get("path").and_then(|p| p.as_str()).is_some_and(|p| names.iter().any(|n| n == p)));
    changed = files.len() != before;
  }
  if !changed && !needles.in_bytes(&crate::jcs::to_vec(&serde_json::Value::Object(object.clone()))?) {
    return Ok(false);
  }
  object.remove("signature");
  crate::sign::manifest::write_manifest(&path, &serde_json::Value::Object(object))?;
  Ok(true)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn needles_are_found_across_chunk_boundaries_and_as_json_bodies() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = StateDir::open_root(tmp.path()).unwrap();
    let needles = Needles::new(&["ab".repeat(32)], &["say \"hi\" to zebracorn".into()]).unwrap();
    let mut bytes = vec![b'x'; CHUNK - 5];
    bytes.extend_from_slice(&"ab".repeat(32).into_bytes());
    dir.write_atomic("across", &bytes, None).unwrap();
    assert!(needles.in_file(&dir, OsStr::new("across")).unwrap());
    dir.write_atomic("json", br#"{"content":"say \"hi\" to zebracorn"}"#, None).unwrap();
    assert!(needles.in_file(&dir, OsStr::new("json")).unwrap());
    dir.write_atomic("other", &vec![b'a'; CHUNK * 2 + 7], None).unwrap();
    assert!(!needles.in_file(&dir, OsStr::new("other")).unwrap());
  }

  #[test]
  fn quarantined_names_are_those_quarantine_gives() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = StateDir::open_root(tmp.path()).unwrap();
    dir.write_atomic("state.json", b"{", None).unwrap();
    let moved = dir.quarantine("state.json").unwrap();
    assert!(is_quarantine_name(moved.file_name().unwrap()));
    for name in ["state.json", ".corrupt-1", "notes.corrupt-draft", "a.corrupt-"] {
      assert!(!is_quarantine_name(OsStr::new(name)), "{name}");
    }
  }

  #[test]
  fn recovery_copies_are_told_by_their_marks() {
    let live = OsStr::new("loa");
    assert!(is_recovery_copy(OsStr::new(".loa.loa-evidence-20261128T120000Z"), live));
    assert!(is_recovery_copy(OsStr::new(".loa.loa-leftover-20261128T120000Z-1"), live));
    assert!(is_recovery_copy(OsStr::new(".loa.loa-staging-12-0"), live));
    assert!(!is_recovery_copy(OsStr::new(".other.loa-evidence-1"), live));
    assert!(!is_recovery_copy(OsStr::new("loa"), live));
  }
}
