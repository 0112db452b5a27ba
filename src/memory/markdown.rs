//! The memories as Markdown files an agent can cite and read by line: what OpenClaw's
//! `memory_get` and a memory search manager's `readFile` serve, and what a search hit points
//! into (`path`, `startLine`, `endLine`).
//!
//! The view is derived and read-only: no file of it exists on disk, each is rendered from one
//! memory record when asked for. One file per memory, so that a path is stable for as long as
//! the memory exists (its id is the hash of its content, its owner never changes) and its line
//! numbers never shift when other memories arrive, and so that reading one, or locating a hit,
//! costs one record read whatever the number of memories kept (a file per month would have to
//! read and render every memory of that month for each hit):
//!
//! ```text
//! memory/shared/<id>.md              a memory of the whole workspace (captured without agentId)
//! memory/agents/<agent>/<id>.md      a memory of one agent
//! ```
//!
//! `<agent>` is the agent id itself when it is 1 to 64 of `A-Z a-z 0-9 . _ -` starting with a
//! letter or digit, else `_` and 16 hex digits of its sha256 (so any agent id, whatever its
//! characters, maps to one directory name that cannot be a path trick). A path of this shape
//! whose memory does not exist, has expired, or is not visible to the reading agent reads as
//! not found (`None`), so a path confirms nothing about memories the reader may not see. Any
//! other path is an error before anything is read: absolute, with `..`, `\` or a NUL,
//! `E_PATH_OUTSIDE_ROOT`; otherwise not of the view's shape, `E_INVALID_ARGUMENT`.

use sha2::{Digest, Sha256};

use crate::error::{invalid, LoaError, Result};

use super::types::{record_name_hash, MemoryRecord, MEMORY_DIR};

/// Directory of the workspace's own memories in the view (below `memory/`).
pub const SHARED_DIR: &str = "shared";
/// Directory of the agents' memories in the view (below `memory/`).
pub const AGENTS_DIR: &str = "agents";
/// Longest path accepted by [`parse_path`], in bytes.
pub const MAX_VIEW_PATH_BYTES: usize = 512;
/// Most lines one read returns when the caller does not say.
pub const DEFAULT_READ_LINES: u64 = 2000;

/// The directory name of `agent` in the view.
pub fn agent_segment(agent: &str) -> String {
  let plain = !agent.is_empty()
    && agent.len() <= 64
    && agent.as_bytes()[0].is_ascii_alphanumeric()
    && agent.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
  if plain {
    return agent.to_string();
  }
  let digest = Sha256::digest(agent.as_bytes());
  format!("_{}", hex::encode(&digest[..8]))
}

/// The view path of `record`.
pub fn path_of(record: &MemoryRecord) -> String {
  match &record.agent_id {
    None => format!("{MEMORY_DIR}/{SHARED_DIR}/{}.md", record.id),
    Some(agent) => format!("{MEMORY_DIR}/{AGENTS_DIR}/{}/{}.md", agent_segment(agent), record.id),
  }
}

/// What a well-formed view path names: the memory's id and its owner's directory name
/// (`None`: the workspace's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewPath {
  pub id: String,
  pub agent_segment: Option<String>,
}

/// Checks that `path` is a path of the view (see the module docs) and says which memory it
/// names. A leading `./` is accepted.
pub fn parse_path(path: &str) -> Result<ViewPath> {
  if path.is_empty() {
    return invalid("`path` must not be empty");
  }
  if path.len() > MAX_VIEW_PATH_BYTES {
    return Err(LoaError::TooLarge {
      what: "memory path".into(),
      size: path.len() as u64,
      limit: MAX_VIEW_PATH_BYTES as u64,
    });
  }
  if path.starts_with('/') || path.contains('\\') || path.contains('\0') || path.split('/').any(|c| c == "..") {
    return Err(LoaError::PathOutsideRoot(format!(
      "{path:?} is not a memory file: memory paths are relative, without `..` or `\\`"
    )));
  }
  let rest = path.strip_prefix("./").unwrap_or(path);
  let parts: Vec<&str> = rest.split('/').collect();
  let named = |name: &str| {
    name.strip_suffix(".md").filter(|h| record_name_hash(&format!("{h}.json")).is_some()).map(str::to_string)
  };
  let parsed = match parts.as_slice() {
    [MEMORY_DIR, SHARED_DIR, name] => named(name).map(|id| ViewPath { id, agent_segment: None }),
    [MEMORY_DIR, AGENTS_DIR, agent, name] if is_segment(agent) => {
      named(name).map(|id| ViewPath { id, agent_segment: Some((*agent).to_string()) })
    }
    _ => None,
  };
  parsed.map_or_else(
    || {
      invalid(format!(
        "`path` must name a memory file, `{MEMORY_DIR}/{SHARED_DIR}/<id>.md` or `{MEMORY_DIR}/{AGENTS_DIR}/<agent>/<id>.md` (as search results give it)"
      ))
    },
    Ok,
  )
}

/// A directory name [`agent_segment`] can produce.
fn is_segment(name: &str) -> bool {
  match name.strip_prefix('_') {
    Some(hex) => hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
    None => agent_segment(name) == name,
  }
}

/// Whether `record` is the memory `path` names (its owner included).
pub fn names(path: &ViewPath, record: &MemoryRecord) -> bool {
  record.id == path.id && path.agent_segment == record.agent_id.as_deref().map(agent_segment)
}

/// The Markdown file of one memory, with where its content lies (1-based, inclusive).
#[derive(Debug, Clone, PartialEq)]
pub struct MarkdownFile {
  pub path: String,
  pub text: String,
  pub start_line: usize,
  pub end_line: usize,
  pub total_lines: usize,
}

/// Renders `record`: a heading, its facts as a list, a blank line, then the content as stored
/// (redacted). Lines are separated by `\n`; the content's own lines are its `\n`-separated
/// parts.
pub fn render(record: &MemoryRecord) -> MarkdownFile {
  let mut head = vec![
    format!("# Memory {}", record.id),
    String::new(),
    format!("- type: {}", record.kind),
    format!("- time: {}", record.timestamp),
    format!("- agent: {}", record.agent_id.as_deref().unwrap_or("(workspace)")),
    format!("- session: {}", record.session_id),
  ];
  if !record.tags.is_empty() {
    head.push(format!("- tags: {}", record.tags.join(", ")));
  }
  if let Some(expires) = &record.expires_at {
    head.push(format!("- expires: {expires}"));
  }
  head.push(String::new());
  let start_line = head.len() + 1;
  let content_lines = record.content.split('\n').count();
  let mut text = head.join("\n");
  text.push('\n');
  text.push_str(&record.content);
  text.push('\n');
  let end_line = start_line + content_lines - 1;
  MarkdownFile { path: path_of(record), text, start_line, end_line, total_lines: end_line }
}

/// Which lines of a view file to read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadOptions {
  /// First line, 1-based. Default 1.
  pub from: Option<u64>,
  /// Most lines. Default [`DEFAULT_READ_LINES`].
  pub lines: Option<u64>,
  /// The agent reading: a memory it may not see reads as not found. `None`: every memory.
  pub agent_id: Option<String>,
}

/// Lines of a view file.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkdownRead {
  pub path: String,
  /// The lines read, joined by `\n` (no trailing newline); empty past the end.
  pub text: String,
  /// The first line read.
  pub from: u64,
  /// How many lines were read.
  pub lines: u64,
  pub total_lines: u64,
  /// The line after the last one read, when there are more.
  pub next_from: Option<u64>,
}

impl ReadOptions {
  pub(super) fn validate(&self) -> Result<()> {
    if self.from == Some(0) {
      return invalid("`from` must be a line number, 1 or more");
    }
    if self.lines == Some(0) {
      return invalid("`lines` must be 1 or more");
    }
    Ok(())
  }
}

/// The lines `options` asks for of `file`.
pub(super) fn slice(file: &MarkdownFile, options: &ReadOptions) -> MarkdownRead {
  let from = options.from.unwrap_or(1);
  let want = options.lines.unwrap_or(DEFAULT_READ_LINES);
  let total = file.total_lines as u64;
  let body = file.text.strip_suffix('\n').unwrap_or(&file.text);
  let skip = usize::try_from(from - 1).unwrap_or(usize::MAX);
  let take = usize::try_from(want).unwrap_or(usize::MAX);
  let picked: Vec<&str> = body.split('\n').skip(skip).take(take).collect();
  let lines = picked.len() as u64;
  let last = from.saturating_add(lines);
  MarkdownRead {
    path: file.path.clone(),
    text: picked.join("\n"),
    from,
    lines,
    total_lines: total,
    next_from: (lines > 0 && last <= total).then_some(last),
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::memory::types::{MemoryKind, RECORD_VERSION};

  fn record(agent: Option<&str>, content: &str) -> MemoryRecord {
    MemoryRecord {
      version: RECORD_VERSION,
      id: crate::gates::content_hash(content),
      kind: MemoryKind::Decision,
      content: content.into(),
      session_id: "s1".into(),
      agent_id: agent.map(str::to_string),
      timestamp: "2026-01-02T10:00:00.000Z".into(),
      confidence: None,
      score: 0.8,
      tags: vec!["instruction".into()],
      metadata: None,
      redactions: Vec::new(),
      expires_at: None,
    }
  }

  #[test]
  fn paths_round_trip_and_odd_agents_are_hashed() {
    for agent in
      [None, Some("main"), Some("a.b_c-1"), Some("../etc"), Some("x/y"), Some(""), Some("é"), Some(".hidden")]
    {
      let r = record(agent, "We deploy on Fridays.");
      let path = path_of(&r);
      let parsed = parse_path(&path).unwrap();
      assert!(names(&parsed, &r), "{path}");
      assert!(!path.contains(".."), "{path}");
      assert_eq!(path.split('/').count(), if agent.is_some() { 4 } else { 3 });
    }
    assert_eq!(agent_segment("main"), "main");
    assert!(agent_segment("../etc").starts_with('_'));
    assert_eq!(agent_segment(&"a".repeat(65)).len(), 17);
    // Another owner's directory does not name the memory.
    let r = record(Some("main"), "We deploy on Fridays.");
    let other = parse_path(&format!("memory/agents/other/{}.md", r.id)).unwrap();
    assert!(!names(&other, &r));
    assert!(!names(&parse_path(&format!("memory/shared/{}.md", r.id)).unwrap(), &r));
  }

  #[test]
  fn other_paths_are_coded_errors() {
    let id = "a".repeat(64);
    for bad in ["/etc/passwd", "../x", "memory/../NOTES.md", "memory\\shared\\x.md", "a\0b"] {
      assert_eq!(parse_path(bad).unwrap_err().code(), "E_PATH_OUTSIDE_ROOT", "{bad:?}");
    }
    for bad in [
      "".to_string(),
      "NOTES.md".into(),
      "MEMORY.md".into(),
      "memory".into(),
      "memory/shared".into(),
      format!("memory/shared/{id}.json"),
      format!("memory/shared/{}.md", "A".repeat(64)),
      format!("memory/shared/{}.md", &id[..63]),
      format!("memory/agents/{id}.md"),
      format!("memory/agents/.x/{id}.md"),
      format!("memory/agents/_zz/{id}.md"),
      format!("memory/agents/main/sub/{id}.md"),
      format!("grimoires/loa/memory/{id}.json"),
    ] {
      assert_eq!(parse_path(&bad).unwrap_err().code(), "E_INVALID_ARGUMENT", "{bad:?}");
    }
    assert_eq!(parse_path(&"m".repeat(MAX_VIEW_PATH_BYTES + 1)).unwrap_err().code(), "E_TOO_LARGE");
    assert!(parse_path(&format!("./memory/shared/{id}.md")).is_ok());
  }

  #[test]
  fn content_lines_are_addressed_and_sliced() {
    let r = record(Some("main"), "first line\nsecond line\n\nfourth # not a heading");
    let file = render(&r);
    let lines: Vec<&str> = file.text.strip_suffix('\n').unwrap().split('\n').collect();
    assert_eq!(lines.len(), file.total_lines);
    assert_eq!(lines[file.start_line - 1], "first line");
    assert_eq!(lines[file.end_line - 1], "fourth # not a heading");
    assert!(lines[0].contains(&r.id));

    let all = slice(&file, &ReadOptions::default());
    assert_eq!(all.text, file.text.trim_end_matches('\n'));
    assert_eq!((all.from, all.lines, all.next_from), (1, file.total_lines as u64, None));
    let part = slice(&file, &ReadOptions { from: Some(file.start_line as u64), lines: Some(2), ..Default::default() });
    assert_eq!(part.text, "first line\nsecond line");
    assert_eq!(part.next_from, Some(file.start_line as u64 + 2));
    let past = slice(&file, &ReadOptions { from: Some(1_000_000), ..Default::default() });
    assert_eq!((past.text.as_str(), past.lines, past.next_from), ("", 0, None));
    let huge = slice(&file, &ReadOptions { from: Some(u64::MAX), lines: Some(u64::MAX), ..Default::default() });
    assert_eq!(huge.lines, 0);
    assert!(ReadOptions { from: Some(0), ..Default::default() }.validate().is_err());
    assert!(ReadOptions { lines: Some(0), ..Default::default() }.validate().is_err());
  }
}
