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
  let mut out = Vec::new();
  let mut current = String::new();
  let mut in_fence = false;
  let flush = |current: &mut String, out: &mut Vec<String>| {
    let block = current.trim();
    if !block.is_empty() {
      let block = block.strip_prefix("- ").or_else(|| block.strip_prefix("* ")).unwrap_or(block);
      out.push(block.trim().to_string());
    }
    current.clear();
  };
  for line in text.lines() {
    if in_fence {
      current.push_str(line);
      current.push('\n');
      in_fence = !is_fence(line);
      continue;
    }
    if is_fence(line) {
      in_fence = true;
      current.push_str(line);
      current.push('\n');
      continue;
    }
    if line.trim().is_empty() || line.starts_with('#') {
      flush(&mut current, &mut out);
      continue;
    }
    if is_item_start(line) {
      flush(&mut current, &mut out);
    }
    current.push_str(line);
    current.push('\n');
  }
  flush(&mut current, &mut out);
  out
}
