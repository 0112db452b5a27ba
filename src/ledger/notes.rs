//! The NOTES.md manager: the Session Continuity section, read and edited by heading.
//!
//! NOTES.md is shared: a human writes in it, memory consolidation owns two marked regions
//! (`sessions`, `decisions`; see [`crate::memory::notes`]), and the ledger owns three more, one
//! in each sub-section of `## Session Continuity` whose title it bears:
//!
//! ```markdown
//! ### Active Context
//! <!-- loa:begin active-context -->
//! - **Current Bead**: bd-x7y8
//! <!-- loa:end active-context -->
//! ### Lightweight Identifiers
//! <!-- loa:begin identifiers -->
//! | Identifier | Purpose | Last Verified |
//! ...
//! ### Pending Questions
//! <!-- loa:begin pending-questions -->
//! - [ ] Should grace period be configurable per-client?
//! ```
//!
//! Regions are found and placed by the same parser as consolidation's (pulldown-cmark: a `## `
//! line in a code fence is text, not a heading), so every byte outside the ledger's regions is
//! kept as it was; the only bytes ever added outside them are a missing heading and the blank
//! lines that separate an inserted region. The Decision Log is read, never written here: its
//! managed entries come from decision memories (see [`super::decision`]), and human entries
//! are read as they are. Writes are atomic and taken under the memory consolidation lock, so a
//! ledger edit and a consolidation never interleave a read-modify-write of the file.

use pulldown_cmark::{Event, Parser, Tag, TagEnd};

use crate::error::{LoaError, Result};
use crate::fsutil::StateDir;
use crate::memory::notes::{self as mnotes, one_line, section_range, set_region};
use crate::memory::MAX_NOTES_BYTES;

use super::decision::{list_item, parse_entries, DecisionEntry};

/// Most items kept in each list the ledger writes (older ones past it are dropped from the
/// region; the caller keeps the full record in the trajectory and the beads).
pub const MAX_SECTION_ITEMS: usize = 200;

/// One line of Active Context: `- **Key**: value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextItem {
  pub key: String,
  pub value: String,
}

/// One row of the Lightweight Identifiers table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentifierRow {
  /// `${PROJECT_ROOT}/path:45-67` (see [`super::identifier`]).
  pub identifier: String,
  pub purpose: String,
  pub last_verified: String,
}

/// One Pending Question: `- [ ] text` (or `- [x] text` when answered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
  pub text: String,
  pub done: bool,
}

/// A NOTES.md text with the ledger's view of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotesDoc {
  text: String,
}

fn cell(text: &str) -> String {
  one_line(text).replace('|', "\\|")
}

fn split_cells(row: &str) -> Vec<String> {
  let inner = row.trim().trim_start_matches('|');
  let inner = inner.strip_suffix('|').filter(|s| !s.ends_with('\\')).unwrap_or(inner);
  let mut cells = Vec::new();
  let mut current = String::new();
  let mut chars = inner.chars().peekable();
  while let Some(c) = chars.next() {
    match c {
      '\\' if chars.peek() == Some(&'|') => {
        current.push('|');
        chars.next();
      }
      '|' => cells.push(std::mem::take(&mut current).trim().to_string()),
      _ => current.push(c),
    }
  }
  cells.push(current.trim().to_string());
  cells
}

impl NotesDoc {
  /// Wraps a NOTES.md text.
  pub fn new(text: impl Into<String>) -> NotesDoc {
    NotesDoc { text: text.into() }
  }

  /// The template (seed 000 §5.1) for a workspace without NOTES.md.
  pub fn template() -> NotesDoc {
    NotesDoc::new(mnotes::TEMPLATE)
  }

  /// The whole text.
  pub fn text(&self) -> &str {
    &self.text
  }

  /// The section titled `title` (heading line to the next heading of its level or higher).
  pub fn section(&self, title: &str) -> Option<&str> {
    section_range(&self.text, title).map(|r| &self.text[r])
  }

  /// `## Session Continuity`, found by heading wherever it is in the file.
  pub fn session_continuity(&self) -> Option<&str> {
    self.section(mnotes::SESSION_CONTINUITY)
  }

  fn region_lines(&self, region: &str) -> Vec<String> {
    mnotes::region_body(&self.text, region)
      .map(|b| b.lines().map(|l| l.trim_end_matches('\r').to_string()).collect())
      .unwrap_or_default()
  }

  fn set(&mut self, region: &str, body: String) {
    self.text = set_region(&self.text, region, &|_| body.clone());
  }

  /// The Active Context items the ledger wrote.
  pub fn active_context(&self) -> Vec<ContextItem> {
    self
      .region_lines(mnotes::ACTIVE_CONTEXT)
      .iter()
      .filter_map(|l| {
        let rest = list_item(l)?.strip_prefix("**")?;
        let (key, value) = rest.split_once("**:")?;
        Some(ContextItem { key: key.trim().replace("\\*", "*"), value: value.trim().to_string() })
      })
      .collect()
  }

  /// Replaces the ledger's Active Context items.
  pub fn set_active_context(&mut self, items: &[ContextItem]) {
    let body: String = items
      .iter()
      .take(MAX_SECTION_ITEMS)
      .map(|i| format!("- **{}**: {}\n", one_line(&i.key).replace('*', "\\*"), one_line(&i.value)))
      .collect();
    self.set(mnotes::ACTIVE_CONTEXT, body);
  }

  /// The Lightweight Identifiers rows the ledger wrote.
  pub fn identifiers(&self) -> Vec<IdentifierRow> {
    self
      .region_lines(mnotes::IDENTIFIERS)
      .iter()
      .filter(|l| l.trim_start().starts_with('|'))
      .skip(2) // header and delimiter rows
      .filter_map(|l| {
        let cells = split_cells(l);
        let get = |i: usize| cells.get(i).cloned().unwrap_or_default();
        (!get(0).is_empty()).then(|| IdentifierRow { identifier: get(0), purpose: get(1), last_verified: get(2) })
      })
      .collect()
  }

  /// Replaces the ledger's Lightweight Identifiers table.
  pub fn set_identifiers(&mut self, rows: &[IdentifierRow]) {
    let mut body = String::new();
    if !rows.is_empty() {
      body.push_str("| Identifier | Purpose | Last Verified |\n|------------|---------|---------------|\n");
      for r in rows.iter().take(MAX_SECTION_ITEMS) {
        body.push_str(&format!("| {} | {} | {} |\n", cell(&r.identifier), cell(&r.purpose), cell(&r.last_verified)));
      }
    }
    self.set(mnotes::IDENTIFIERS, body);
  }

  /// The Pending Questions the ledger wrote.
  pub fn pending_questions(&self) -> Vec<Question> {
    self
      .region_lines(mnotes::PENDING_QUESTIONS)
      .iter()
      .filter_map(|l| {
        let item = list_item(l)?;
        if let Some(t) = item.strip_prefix("[ ]") {
          Some(Question { text: t.trim().to_string(), done: false })
        } else {
          let t = item.strip_prefix("[x]").or_else(|| item.strip_prefix("[X]"))?;
          Some(Question { text: t.trim().to_string(), done: true })
        }
      })
      .collect()
  }

  /// Replaces the ledger's Pending Questions.
  pub fn set_pending_questions(&mut self, questions: &[Question]) {
    let body: String = questions
      .iter()
      .take(MAX_SECTION_ITEMS)
      .map(|q| format!("- [{}] {}\n", if q.done { "x" } else { " " }, one_line(&q.text)))
      .collect();
    self.set(mnotes::PENDING_QUESTIONS, body);
  }

  /// Every entry of the Decision Log, human-written and managed, in file order.
  pub fn decisions(&self) -> Vec<DecisionEntry> {
    let Some(section) = self.section(mnotes::DECISION_LOG) else { return Vec::new() };
    parse_entries(section, &entry_headings(section))
  }
}

/// Where each heading below the section's own starts (the start of its line) and its text.
fn entry_headings(section: &str) -> Vec<(usize, String)> {
  let mut out = Vec::new();
  let mut section_level = None;
  let mut current: Option<(usize, String)> = None;
  for (event, range) in Parser::new(section).into_offset_iter() {
    match event {
      Event::Start(Tag::Heading { level, .. }) => {
        let level = level as usize;
        match section_level {
          None => section_level = Some(level),
          Some(l) if level > l => {
            let start = section[..range.start].rfind('\n').map_or(0, |i| i + 1);
            current = Some((start, String::new()));
          }
          _ => {}
        }
      }
      Event::Text(t) | Event::Code(t) => {
        if let Some((_, text)) = current.as_mut() {
          text.push_str(&t);
        }
      }
      Event::End(TagEnd::Heading(_)) => {
        if let Some((start, text)) = current.take() {
          out.push((start, text.trim().to_string()));
        }
      }
      _ => {}
    }
  }
  out
}

/// NOTES.md on disk: read bounded, written atomically.
#[derive(Debug)]
pub struct NotesFile {
  dir: StateDir,
  name: String,
}

impl NotesFile {
  /// NOTES.md named `name` in `dir`.
  pub fn new(dir: StateDir, name: impl Into<String>) -> NotesFile {
    NotesFile { dir, name: name.into() }
  }

  /// The file's text; `None` when it does not exist. Not UTF-8 is `E_STATE_CORRUPT` (the file
  /// is left untouched); over [`MAX_NOTES_BYTES`] `E_TOO_LARGE`.
  pub fn read(&self) -> Result<Option<NotesDoc>> {
    let Some(bytes) = self.dir.read(&self.name, MAX_NOTES_BYTES)? else { return Ok(None) };
    String::from_utf8(bytes).map(|t| Some(NotesDoc::new(t))).map_err(|_| LoaError::StateCorrupt {
      path: self.dir.child_path(&self.name).display().to_string(),
      reason: "not valid UTF-8; left untouched".into(),
    })
  }

  /// The file, or the template when there is none.
  pub fn load(&self) -> Result<NotesDoc> {
    Ok(self.read()?.unwrap_or_else(NotesDoc::template))
  }

  /// Reads, applies `edit`, and writes atomically when the text changed. Returns whether it
  /// wrote. The caller holds the NOTES.md lock (see [`super::Ledger`]).
  pub fn edit(&self, edit: impl FnOnce(&mut NotesDoc)) -> Result<bool> {
    let before = self.read()?;
    let mut doc = before.clone().unwrap_or_else(NotesDoc::template);
    edit(&mut doc);
    if before.as_ref() == Some(&doc) {
      return Ok(false);
    }
    self.dir.write_atomic(&self.name, doc.text.as_bytes(), None)?;
    Ok(true)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  const FOREIGN: &str = "# Agent Working Memory (NOTES.md)

Intro by a human, trailing spaces   
kept.

## Session Continuity
<!-- CRITICAL: Load this section FIRST after /clear (~100 tokens) -->

### Active Context
- **Human note**: written by hand

```markdown
## Session Continuity
### Active Context
<!-- loa:begin active-context -->
not a region: inside a code fence
<!-- loa:end active-context -->
```

### Lightweight Identifiers
Some prose about identifiers.

### Decision Log
<!-- Decisions survive context wipes - permanent record -->

#### 2024-01-15T14:30:00Z - Token Expiry Handling
**Decision**: Use sliding window expiration with 15-minute grace period
**Rationale**: Balances security (short expiry) with UX
**Evidence**:
- `export function isTokenExpired(token: Token, graceMs = 900000)` [${PROJECT_ROOT}/src/auth/jwt.ts:52]
**Test Scenarios**:
1. Token expires exactly at boundary -> grace period applies
2. Token expires beyond grace -> forced refresh

### Pending Questions
- [ ] A human question

## Active Sub-Goals
Setext heading below
====================

## Discovered Technical Debt
\tTabbed text, unicode: ünïcödé ✓
";

  /// The text with every ledger region (marker lines included) cut out.
  fn outside(text: &str) -> String {
    let mut out = text.to_string();
    for name in [mnotes::ACTIVE_CONTEXT, mnotes::IDENTIFIERS, mnotes::PENDING_QUESTIONS] {
      let begin = format!("<!-- loa:begin {name} -->\n");
      let end = format!("<!-- loa:end {name} -->\n");
      // The real region is the last begin marker (the fenced one comes first in FOREIGN).
      let a = out.rfind(&begin).unwrap();
      let b = out[a..].find(&end).unwrap() + a + end.len();
      out.replace_range(a..b, "");
    }
    out
  }

  /// A small deterministic generator (xorshift), so the test needs no crate and can fail
  /// reproducibly.
  struct Rng(u64);
  impl Rng {
    fn next(&mut self) -> u64 {
      self.0 ^= self.0 << 13;
      self.0 ^= self.0 >> 7;
      self.0 ^= self.0 << 17;
      self.0
    }
    fn text(&mut self) -> String {
      const PIECES: [&str; 14] = [
        "plain",
        "## Heading",
        "\n",
        "<!-- loa:end identifiers -->",
        "|",
        "```",
        "**bold**",
        "- [ ]",
        "é✓",
        "  ",
        "\\",
        "#### 2026-01-01T00:00:00Z - fake",
        "---",
        "<div>",
      ];
      (0..1 + self.next() % 6).map(|_| PIECES[(self.next() % PIECES.len() as u64) as usize]).collect()
    }
  }

  #[test]
  fn foreign_text_survives_a_hundred_random_edits_byte_for_byte() {
    let mut doc = NotesDoc::new(FOREIGN);
    doc.set_active_context(&[ContextItem { key: "Current Bead".into(), value: "bd-1".into() }]);
    doc.set_identifiers(&[]);
    doc.set_pending_questions(&[]);
    let baseline = outside(doc.text());
    // Every foreign line is still there, in order, after the insertions.
    let mut at = 0;
    for line in FOREIGN.lines() {
      at += baseline[at..].find(line).unwrap_or_else(|| panic!("lost line {line:?}")) + line.len();
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..100 {
      match rng.next() % 3 {
        0 => {
          let items: Vec<ContextItem> =
            (0..rng.next() % 4).map(|_| ContextItem { key: rng.text(), value: rng.text() }).collect();
          doc.set_active_context(&items);
          assert_eq!(doc.active_context().len(), items.len(), "round {round}");
        }
        1 => {
          let rows: Vec<IdentifierRow> = (0..rng.next() % 4)
            .map(|_| IdentifierRow {
              identifier: format!("${{PROJECT_ROOT}}/{}", rng.text()),
              purpose: rng.text(),
              last_verified: rng.text(),
            })
            .collect();
          doc.set_identifiers(&rows);
          assert_eq!(doc.identifiers().len(), rows.len(), "round {round}");
        }
        _ => {
          let qs: Vec<Question> =
            (0..rng.next() % 4).map(|_| Question { text: rng.text(), done: rng.next().is_multiple_of(2) }).collect();
          doc.set_pending_questions(&qs);
          assert_eq!(doc.pending_questions().len(), qs.len(), "round {round}");
        }
      }
      assert_eq!(outside(doc.text()), baseline, "round {round}");
      // The human decision entry is still read as it was written.
      assert_eq!(doc.decisions().len(), 1, "round {round}");
    }
  }

  #[test]
  fn sections_are_found_by_heading_not_by_line_count() {
    let padding = "filler line\n".repeat(500);
    let doc = NotesDoc::new(format!("# Notes\n\n## Other\n{padding}\n{FOREIGN}"));
    let sc = doc.session_continuity().unwrap();
    assert!(sc.starts_with("## Session Continuity\n"));
    // The fenced `## Session Continuity` neither starts nor ends the section.
    assert!(sc.contains("### Pending Questions") && !sc.contains("## Active Sub-Goals"));
    let d = doc.decisions();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].title, "Token Expiry Handling");
    assert_eq!(d[0].evidence.len(), 1);
    assert_eq!(d[0].test_scenarios.len(), 2);
    assert!(NotesDoc::new("# nothing\n").session_continuity().is_none());
  }

  #[test]
  fn round_trips_and_placement() {
    let mut doc = NotesDoc::template();
    doc.set_active_context(&[
      ContextItem { key: "Reasoning State".into(), value: "a | b".into() },
      ContextItem { key: "**x**".into(), value: "y **: z".into() },
    ]);
    doc.set_identifiers(&[IdentifierRow {
      identifier: "${PROJECT_ROOT}/src/a.rs:1-2".into(),
      purpose: "x | y".into(),
      last_verified: "now".into(),
    }]);
    doc.set_pending_questions(&[
      Question { text: "why?".into(), done: false },
      Question { text: "done".into(), done: true },
    ]);
    assert_eq!(doc.active_context()[0].value, "a | b");
    assert_eq!(doc.active_context()[1], ContextItem { key: "**x**".into(), value: "y **: z".into() });
    assert_eq!(doc.identifiers()[0].purpose, "x | y");
    assert_eq!(doc.pending_questions()[1], Question { text: "done".into(), done: true });
    let t = doc.text();
    let pos = |s: &str| t.find(s).unwrap();
    assert!(pos("### Active Context") < pos("loa:begin active-context"));
    assert!(pos("loa:begin active-context") < pos("### Decision Log"));
    assert!(pos("### Lightweight Identifiers") < pos("loa:begin identifiers"));
    assert!(pos("### Pending Questions") < pos("loa:begin pending-questions"));
    // Setting the same content twice is a no-op.
    let before = doc.clone();
    doc.set_pending_questions(&before.pending_questions());
    assert_eq!(doc, before);
  }

  #[test]
  fn file_writes_are_atomic_and_bad_files_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = StateDir::open_root(tmp.path()).unwrap();
    let file = NotesFile::new(dir.try_clone().unwrap(), "NOTES.md");
    assert!(file.read().unwrap().is_none());
    assert!(file.edit(|d| d.set_pending_questions(&[Question { text: "q".into(), done: false }])).unwrap());
    assert!(!file.edit(|d| d.set_pending_questions(&[Question { text: "q".into(), done: false }])).unwrap());
    assert_eq!(file.load().unwrap().pending_questions().len(), 1);
    std::fs::write(tmp.path().join("NOTES.md"), b"\xff\xfe").unwrap();
    assert_eq!(file.edit(|_| {}).unwrap_err().code(), "E_STATE_CORRUPT");
    assert_eq!(std::fs::read(tmp.path().join("NOTES.md")).unwrap(), b"\xff\xfe");
  }
}
