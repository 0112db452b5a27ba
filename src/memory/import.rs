//! Importing a workspace's Markdown memory (`MEMORY.md` and `memory/*.md`, the files OpenClaw's
//! memory-core keeps) as memories, so that a user who switches to loa loses nothing.
//!
//! Each file is cut into blocks: a top-level list item (with its continuation and nested
//! lines), or a paragraph (lines up to a blank line); headings only separate blocks, and a
//! fenced code block stays whole inside the block it belongs to. Each block is captured like
//! any memory ([`MemoryStore::capture`](super::MemoryStore::capture)): redacted (a blocked one
//! is refused and reported), then through the six quality gates (filler and fragments are
//! rejected). Blocks of `MEMORY.md` are learnings; blocks of `memory/<name>.md` are
//! interactions, dated by the file name when it is `YYYY-MM-DD.md`.
//!
//! Importing is idempotent: a memory's id is the hash of its normalised content, so a block
//! already stored is a duplicate and stored once however often the import runs, and a block
//! whose memory was forgotten (its tombstone is recorded) is never imported again.
//!
//! Forgetting reaches these files: the directory is recorded ([`REGISTRY`]) and a forgotten
//! memory's block is removed from the file it is in ([`forget_imported`]), since the user asked
//! for it to go; a block that cannot be found any more is reported, never passed over in
//! silence.
//!
//! The directory is the caller's (symlinks in its own path are followed); inside it, only
//! regular files are read (a symlink or anything else named like a memory file is skipped and
//! reported), each at most [`MAX_IMPORT_FILE_BYTES`], as UTF-8.

use std::path::Path;

use crate::error::{LoaError, Result};
use crate::fsutil::StateDir;

/// Largest Markdown file imported; larger ones are skipped and reported.
pub const MAX_IMPORT_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Most files of `memory/` imported in one run (the rest are reported as skipped).
pub const MAX_IMPORT_FILES: usize = 10_000;

/// Options of [`MemoryStore::import_markdown`](super::MemoryStore::import_markdown).
#[derive(Debug, Clone)]
pub struct ImportOptions {
  /// Confidence given to imported blocks (0..1). Default 0.8: above the confidence gate, and
  /// above the speculation gate's threshold.
  pub confidence: f64,
  /// The agent the imported memories belong to; `None`: the workspace's.
  pub agent_id: Option<String>,
}

impl Default for ImportOptions {
  fn default() -> Self {
    ImportOptions { confidence: 0.8, agent_id: None }
  }
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportReport {
  /// Files read (relative to the directory: `MEMORY.md`, `memory/2026-01-02.md`).
  pub files: Vec<String>,
  /// Files not read, with the reason (not a regular file, too large, not UTF-8).
  pub skipped: Vec<(String, String)>,
  pub blocks: usize,
  /// Stored now.
  pub imported: usize,
  /// Already stored (an earlier import, or captured).
  pub duplicates: usize,
  /// Refused by the quality gates.
  pub rejected: usize,
  /// Refused by the redaction policy.
  pub blocked: usize,
  /// Forgotten earlier (a tombstone holds their id): not brought back.
  pub forgotten: usize,
}

/// One file to import: its name for reports, its text, and the date its name gives.
pub(super) struct Source {
  pub name: String,
  pub text: String,
  pub learning: bool,
  pub date: Option<String>,
}

fn read_text(dir: &StateDir, name: &str, shown: String, report: &mut ImportReport) -> Result<Option<String>> {
  match dir.read(name, MAX_IMPORT_FILE_BYTES) {
    Ok(None) => Ok(None),
    Ok(Some(bytes)) => match String::from_utf8(bytes) {
      Ok(text) => Ok(Some(text)),
      Err(_) => {
        report.skipped.push((shown, "not UTF-8".into()));
        Ok(None)
      }
    },
    Err(e @ (LoaError::NotRegularFile { .. } | LoaError::TooLarge { .. })) => {
      report.skipped.push((shown, e.to_string()));
      Ok(None)
    }
    Err(e) => Err(e),
  }
}

/// The memory files of `dir`, in order: `MEMORY.md`, then `memory/*.md` by name.
pub(super) fn sources(dir: &Path, report: &mut ImportReport) -> Result<Vec<Source>> {
  let root = StateDir::open_root(dir)?;
  let mut out = Vec::new();
  if let Some(text) = read_text(&root, "MEMORY.md", "MEMORY.md".into(), report)? {
    report.files.push("MEMORY.md".into());
    out.push(Source { name: "MEMORY.md".into(), text, learning: true, date: None });
  }
  let memory = match root.subdir("memory") {
    Ok(m) => m,
    Err(e @ LoaError::PathOutsideRoot(_)) => {
      report.skipped.push(("memory".into(), e.to_string()));
      None
    }
    Err(e) => return Err(e),
  };
  if let Some(memory) = memory {
    let mut seen = 0;
    for entry in memory.entries()? {
      let Some(name) = entry.name_str() else { continue };
      if !name.ends_with(".md") || name.starts_with('.') {
        continue;
      }
      let shown = format!("memory/{name}");
      seen += 1;
      if seen > MAX_IMPORT_FILES {
        report.skipped.push((shown, format!("more than {MAX_IMPORT_FILES} files")));
        continue;
      }
      if let Some(text) = read_text(&memory, name, shown.clone(), report)? {
        let stem = &name[..name.len() - 3];
        let date = (stem.len() == 10
          && crate::timestamp::parse_rfc3339_ms(&format!("{stem}T00:00:00Z"), "date").is_ok())
        .then(|| format!("{stem}T00:00:00Z"));
        report.files.push(shown.clone());
        out.push(Source { name: shown, text, learning: false, date });
      }
    }
  }
  Ok(out)
}

fn is_fence(line: &str) -> bool {
  let t = line.trim_start();
  t.starts_with("```") || t.starts_with("~~~")
}

fn is_item_start(line: &str) -> bool {
  let b = line.as_bytes();
  if b.len() >= 2 && matches!(b[0], b'-' | b'*' | b'+') && b[1] == b' ' {
    return true;
  }
  let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
  (1..=9).contains(&digits) && b.len() > digits + 1 && matches!(b[digits], b'.' | b')') && b[digits + 1] == b' '
}

/// The blocks of a Markdown text (see the module docs). Linear in the text's length.
pub fn blocks(text: &str) -> Vec<String> {
  spans(text).into_iter().map(|b| b.text).collect()
}

/// A block and the lines it was cut from (0-based, `first..=last`, as `str::lines` counts).
pub(super) struct Block {
  pub text: String,
  pub first: usize,
  pub last: usize,
}

/// [`blocks`], each with its lines.
pub(super) fn spans(text: &str) -> Vec<Block> {
  let mut out = Vec::new();
  let mut current = String::new();
  let mut first = None;
  let mut last = 0;
  let mut in_fence = false;
  let flush = |current: &mut String, first: &mut Option<usize>, last: usize, out: &mut Vec<Block>| {
    let block = current.trim();
    if let (false, Some(at)) = (block.is_empty(), *first) {
      let block = block.strip_prefix("- ").or_else(|| block.strip_prefix("* ")).unwrap_or(block);
      out.push(Block { text: block.trim().to_string(), first: at, last });
    }
    current.clear();
    *first = None;
  };
  for (n, line) in text.lines().enumerate() {
    if in_fence {
      current.push_str(line);
      current.push('\n');
      last = n;
      in_fence = !is_fence(line);
      continue;
    }
    if line.trim().is_empty() || line.starts_with('#') {
      flush(&mut current, &mut first, last, &mut out);
      continue;
    }
    if is_item_start(line) && !is_fence(line) {
      flush(&mut current, &mut first, last, &mut out);
    }
    if is_fence(line) {
      in_fence = true;
    }
    first.get_or_insert(n);
    current.push_str(line);
    current.push('\n');
    last = n;
  }
  flush(&mut current, &mut first, last, &mut out);
  out
}

/// `text` without its lines `first..=last` of each span (0-based, as [`spans`] gives them);
/// every other byte is kept.
pub(super) fn without_lines(text: &str, spans: &[(usize, usize)]) -> String {
  let mut out = String::with_capacity(text.len());
  for (n, line) in text.split_inclusive('\n').enumerate() {
    if !spans.iter().any(|&(first, last)| (first..=last).contains(&n)) {
      out.push_str(line);
    }
  }
  out
}

/// The directories Markdown memory was imported from, so that a forget can reach the blocks
/// there (see `docs/search.md`): `<wal dir>/memory-imports.json`, `{"version": 1, "dirs":
/// [...]}`, each directory relative to the workspace when inside it, else absolute. Another
/// version is read as holding no directory (and replaced at the next import).
pub(super) const REGISTRY: &str = "memory-imports.json";
const REGISTRY_VERSION: u64 = 1;
const MAX_REGISTRY_BYTES: u64 = 1 << 20;
/// Most directories remembered; the oldest go first.
const MAX_REGISTERED: usize = 64;

/// The directories recorded in the registry of `wal_dir`.
pub(super) fn registered(wal_dir: &StateDir) -> Result<Vec<String>> {
  let Some(bytes) = (match wal_dir.read(REGISTRY, MAX_REGISTRY_BYTES) {
    Ok(b) => b,
    Err(LoaError::TooLarge { .. }) => None,
    Err(e) => return Err(e),
  }) else {
    return Ok(Vec::new());
  };
  let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
  if value.get("version").and_then(|v| v.as_u64()) != Some(REGISTRY_VERSION) {
    return Ok(Vec::new());
  }
  let dirs = value.get("dirs").and_then(|d| d.as_array()).cloned().unwrap_or_default();
  Ok(dirs.iter().filter_map(|d| d.as_str().map(str::to_string)).collect())
}

/// Records `dir` (imported from) in the registry of `wal_dir`. The caller holds the memory
/// consolidation lock, which every forget holds too.
pub(super) fn register(workspace: &Path, wal_dir: &StateDir, dir: &Path) -> Result<()> {
  let real = std::fs::canonicalize(dir).map_err(|e| LoaError::io("resolve", dir, e))?;
  let base = std::fs::canonicalize(workspace).map_err(|e| LoaError::io("resolve", workspace, e))?;
  let shown = match real.strip_prefix(&base) {
    Ok(inside) => inside.to_string_lossy().into_owned(),
    Err(_) => real.to_string_lossy().into_owned(),
  };
  let mut dirs = registered(wal_dir)?;
  if dirs.contains(&shown) {
    return Ok(());
  }
  dirs.push(shown);
  let excess = dirs.len().saturating_sub(MAX_REGISTERED);
  dirs.drain(..excess);
  let body = serde_json::json!({ "version": REGISTRY_VERSION, "dirs": dirs });
  let bytes = serde_json::to_vec(&body).map_err(|e| LoaError::Internal(e.to_string()))?;
  wal_dir.write_atomic(REGISTRY, &bytes, None)
}

/// A registered directory as a path: relative ones below the workspace.
pub(super) fn resolve_registered(workspace: &Path, dir: &str) -> std::path::PathBuf {
  let path = Path::new(dir);
  if path.is_absolute() {
    path.to_path_buf()
  } else {
    workspace.join(path)
  }
}

/// Removes the blocks of the memories `wanted` from the Markdown files of every registered
/// import directory: each block is redacted and hashed as the import did, and the lines of a
/// block whose hash is a wanted id are removed, the file rewritten atomically with every other
/// byte kept. A file that changed between reading and rewriting is left as it is and reported
/// as still holding it. `named`: the files (`importedFrom`) the forgotten records say they came
/// from; one where nothing was removed is reported as possibly still holding the memory. The
/// caller holds the memory consolidation lock.
pub(super) fn forget_imported(
  layout: &super::layout::Layout,
  wal_dir: &StateDir,
  wanted: &std::collections::HashSet<&str>,
  named: &[String],
) -> Result<Vec<super::types::ImportedCopy>> {
  use super::types::ImportedCopy;
  let mut out: Vec<ImportedCopy> = Vec::new();
  let mut reached: Vec<String> = Vec::new();
  for registered_dir in registered(wal_dir)? {
    let path = resolve_registered(&layout.workspace, &registered_dir);
    let Ok(root) = StateDir::open_root(&path) else { continue };
    let mut report = ImportReport::default();
    let Ok(found) = sources(&path, &mut report) else { continue };
    for source in found {
      let hits: Vec<Block> = spans(&source.text)
        .into_iter()
        .filter(|b| {
          let id = crate::gates::content_hash(&crate::redact::redact(&b.text, &layout.redaction).text);
          wanted.contains(id.as_str())
        })
        .collect();
      if hits.is_empty() {
        continue;
      }
      let shown = Path::new(&registered_dir).join(&source.name).to_string_lossy().into_owned();
      let (dir, name) = match source.name.strip_prefix("memory/") {
        Some(name) => (root.subdir("memory")?, name),
        None => (Some(root.try_clone()?), source.name.as_str()),
      };
      let lines: Vec<(usize, usize)> = hits.iter().map(|b| (b.first, b.last)).collect();
      // Rewritten only if it still holds exactly what was read: memory-core may be writing it.
      let unchanged = match &dir {
        Some(dir) => dir.read(name, MAX_IMPORT_FILE_BYTES)?.is_some_and(|now| now == source.text.as_bytes()),
        None => false,
      };
      if let (true, Some(dir)) = (unchanged, &dir) {
        dir.write_atomic(name, without_lines(&source.text, &lines).as_bytes(), None)?;
      }
      reached.push(source.name.clone());
      out.extend(hits.iter().map(|b| ImportedCopy {
        file: shown.clone(),
        line: Some(b.first + 1),
        removed: unchanged,
      }));
    }
  }
  for name in named {
    if !reached.contains(name) && !out.iter().any(|c| c.file == *name) {
      out.push(ImportedCopy { file: name.clone(), line: None, removed: false });
    }
  }
  Ok(out)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn spans_name_the_lines_of_each_block_and_removing_them_keeps_every_other_byte() {
    let text = "# Notes\n\n- first item\n  continued\n- second item\n\nA paragraph\nof two lines\r\n\n```\ncode\n```\n";
    let spans = spans(text);
    let got: Vec<(&str, usize, usize)> = spans.iter().map(|b| (b.text.as_str(), b.first, b.last)).collect();
    assert_eq!(
      got,
      [
        ("first item\n  continued", 2, 3),
        ("second item", 4, 4),
        ("A paragraph\nof two lines", 6, 7),
        ("```\ncode\n```", 9, 11)
      ]
    );
    assert_eq!(blocks(text), spans.iter().map(|b| b.text.clone()).collect::<Vec<_>>());
    assert_eq!(without_lines(text, &[(4, 4)]), text.replace("- second item\n", ""));
    assert_eq!(without_lines(text, &[(6, 7)]), text.replace("A paragraph\nof two lines\r\n", ""));
  }
}
