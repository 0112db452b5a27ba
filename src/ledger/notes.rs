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
//! A file the original framework or a person wrote has no markers: its lists sit under their
//! headings (seed 000 §5.1). Those are read as they are, and an edit replaces an entry on its own
//! line or adds one after the section's last entry, in that entry's style (`layout.rs`);
//! the region above is only created for a section that has no list of its own. A key in both
//! is read once, with the region's value (the ledger wrote it last), and the next edit leaves
//! one line for it.
//!
//! Regions are found and placed by the same parser as consolidation's (pulldown-cmark: a `## `
//! line in a code fence is text, not a heading), so every byte outside the ledger's regions is
//! kept as it was; the only bytes ever added outside them are a missing heading and the blank
//! lines that separate an inserted region. The Decision Log is read, never written here: its
//! managed entries come from decision memories (see [`super::decision`]), and human entries
//! are read as they are. Writes are atomic and taken under the memory consolidation lock, so a
//! ledger edit and a consolidation never interleave a read-modify-write of the file.

use std::collections::HashMap;

use pulldown_cmark::{Event, Parser, Tag, TagEnd};

use crate::error::{LoaError, Result};
use crate::fsutil::StateDir;
use crate::memory::notes::{self as mnotes, one_line, section_range, set_region};
use crate::memory::MAX_NOTES_BYTES;

use super::decision::{list_item, parse_entries, DecisionEntry};
use super::layout::{self, apply, lines_after, Columns, IdentifierItem, KeyValue, Line, QuestionLine};
use super::notes_log;

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

/// How keys, identifiers and questions are compared when merging: one line, ASCII case folded.
fn norm(text: &str) -> String {
  one_line(text).to_ascii_lowercase()
}

/// `items` with one entry per key: what comes first keeps its place, and the marked region's
/// entry (`region`, read after the file's own lines) replaces the file's value for its key.
fn merge<T>(found: Vec<T>, region: Vec<T>, key: impl Fn(&T) -> String) -> Vec<T> {
  let mut out: Vec<T> = Vec::new();
  let mut at: HashMap<String, usize> = HashMap::new();
  for item in found {
    let k = key(&item);
    if let std::collections::hash_map::Entry::Vacant(e) = at.entry(k) {
      e.insert(out.len());
      out.push(item);
    }
  }
  for item in region {
    match at.get(&key(&item)) {
      Some(&i) => out[i] = item,
      None => {
        at.insert(key(&item), out.len());
        out.push(item);
      }
    }
  }
  out
}

/// The ledger's identifiers region: a table of the rows.
fn identifiers_body(rows: &[IdentifierRow]) -> String {
  let mut body = String::new();
  if !rows.is_empty() {
    body.push_str("| Identifier | Purpose | Last Verified |\n|------------|---------|---------------|\n");
    for r in rows.iter().take(MAX_SECTION_ITEMS) {
      body.push_str(&format!("| {} | {} | {} |\n", cell(&r.identifier), cell(&r.purpose), cell(&r.last_verified)));
    }
  }
  body
}

/// `value` with the entry's continuation lines (a wrapped list item), blanks collapsed.
fn continued(value: &mut String, text: &str, line: &Line) {
  for word in text[line.content.end..line.text_end].split_whitespace() {
    if !value.is_empty() {
      value.push(' ');
    }
    value.push_str(word);
  }
}

/// An Active Context line's entry (`\*` in a bold key read as `*`).
fn context_of(s: &str) -> Option<(ContextItem, KeyValue)> {
  let kv = layout::key_value(s)?;
  let key = if kv.bold { s[kv.key.clone()].replace("\\*", "*") } else { s[kv.key.clone()].to_string() };
  Some((ContextItem { key, value: s[kv.value.clone()].to_string() }, kv))
}

/// A Pending Questions line's question.
fn question_of(s: &str) -> Option<(Question, QuestionLine)> {
  let q = layout::question(s)?;
  Some((Question { text: s[q.text.clone()].to_string(), done: q.done }, q))
}

/// An identifier kept as a list item.
fn identifier_item_of(s: &str) -> Option<(IdentifierRow, IdentifierItem)> {
  let it = layout::identifier_item(s)?;
  let row = IdentifierRow {
    identifier: s[it.identifier.clone()].trim().to_string(),
    purpose: s[it.purpose.clone()].to_string(),
    last_verified: String::new(),
  };
  Some((row, it))
}

/// An identifiers table row (none without an identifier).
fn row_of(s: &str, cols: &Columns) -> Option<IdentifierRow> {
  let cells = layout::split_cells(s);
  let get = |i: Option<usize>| i.and_then(|i| cells.get(i)).cloned().unwrap_or_default();
  let identifier = layout::bare_identifier(&get(Some(cols.identifier))).to_string();
  (!identifier.is_empty()).then(|| IdentifierRow {
    identifier,
    purpose: get(cols.purpose),
    last_verified: get(cols.last_verified),
  })
}

/// Where new entries of a list go and how they are written (in the style of its last entry).
/// Returns the line they go after and one rendered line per entry.
type Append<'a, T> = Box<dyn Fn(&[&T]) -> (Line, Vec<String>) + 'a>;

/// The entry a line reads as.
type Parse<'a, T> = Box<dyn Fn(&str) -> Option<T> + 'a>;

/// The new content of the line holding an entry (`old`, `line`) for `new`, or `None`.
type Rewrite<'a, T> = Box<dyn Fn(&T, &Line, &T) -> Option<String> + 'a>;

/// How one list is read from and written to the file's own lines.
struct Layout<'a, T> {
  /// The entries written outside the marked region, in file order, with their lines.
  found: Vec<(T, Line)>,
  /// `None` when the section holds no list of its own (then the marked region is used).
  append: Option<Append<'a, T>>,
  /// The entry a rendered line reads back as: a new entry whose line would not read back as
  /// itself (a key the section's style cannot hold) goes into the marked region instead, so
  /// that the next edit finds it again.
  parse: Parse<'a, T>,
  key: fn(&T) -> String,
  /// The new content of the line holding `old` for `new`, or `None` when it stays as it is.
  rewrite: Rewrite<'a, T>,
  /// The marked region's body for the entries it holds.
  body: fn(&[T]) -> String,
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

  /// The section titled `title` (heading line to the next heading of its level or higher),
  /// found by the heading's meaning ([`mnotes::heading_means`]).
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

  fn scan(&self, region: &str) -> layout::Scan {
    layout::scan(&self.text, mnotes::section_title(region)).unwrap_or_default()
  }

  /// Sets a list to `items`: in the file's own layout (`edit_layout`), or as the ledger's
  /// region when the section has no list of its own.
  fn set_list<T: Clone>(&mut self, region: &str, items: &[T], layout: for<'a> fn(&'a NotesDoc) -> Layout<'a, T>) {
    let doc = self.clone();
    if !self.edit_layout(region, items, layout(&doc)) {
      let body = (layout(&doc).body)(items);
      self.set(region, body);
    }
  }

  /// Applies `items` (one per key; a later one for a key replaces an earlier one) to a list the
  /// file keeps in its own layout: an entry found is rewritten in place (a second line for the
  /// same key is removed), a new one goes after the list's last entry in its style, or into the
  /// marked region when the file has one. Returns `false`, changing nothing, when the section
  /// has no list of its own.
  fn edit_layout<T: Clone>(&mut self, region: &str, items: &[T], layout: Layout<'_, T>) -> bool {
    let Some(append) = layout.append else { return false };
    let key = layout.key;
    let mut unique: Vec<&T> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for item in items {
      match at.get(&key(item)) {
        Some(&i) => unique[i] = item,
        None => {
          at.insert(key(item), unique.len());
          unique.push(item);
        }
      }
    }
    let mut lines_of: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, (item, _)) in layout.found.iter().enumerate() {
      lines_of.entry(key(item)).or_default().push(i);
    }
    let mut splices = Vec::new();
    let mut new = Vec::new();
    for item in unique {
      let Some(lines) = lines_of.get(&key(item)) else {
        new.push(item);
        continue;
      };
      let (old, line) = &layout.found[lines[0]];
      if let Some(content) = (layout.rewrite)(old, line, item) {
        splices.push((line.content.start..line.text_end, content));
        for &i in &lines[1..] {
          let dup = &layout.found[i].1;
          splices.push((dup.content.start..dup.end, String::new()));
        }
      }
    }
    let has_region = mnotes::region_range(&self.text, region).is_some();
    let mut to_region: Vec<T> = Vec::new();
    if has_region {
      to_region = new.into_iter().cloned().collect();
    } else {
      let room = MAX_SECTION_ITEMS.saturating_sub(layout.found.len());
      let new: Vec<&T> = new.iter().copied().take(room).collect();
      if !new.is_empty() {
        let (after, rendered) = append(&new);
        let mut lines = Vec::new();
        for (item, line) in new.into_iter().zip(rendered) {
          if (layout.parse)(&line).is_some_and(|back| key(&back) == key(item)) {
            lines.push(line);
          } else {
            to_region.push(item.clone());
          }
        }
        if !lines.is_empty() {
          let (at, inserted) = lines_after(&self.text, &after, &lines);
          splices.push((at..at, inserted));
        }
      }
    }
    self.text = apply(&self.text, splices);
    if has_region || !to_region.is_empty() {
      self.set(region, (layout.body)(&to_region));
    }
    true
  }

  // ---- Active Context -------------------------------------------------------------------

  fn context_layout(&self) -> Layout<'_, ContextItem> {
    let text = &self.text;
    let found: Vec<(ContextItem, Line, KeyValue)> = self
      .scan(mnotes::ACTIVE_CONTEXT)
      .items
      .into_iter()
      .filter_map(|line| {
        let (mut item, kv) = context_of(&text[line.content.clone()])?;
        continued(&mut item.value, text, &line);
        Some((item, line, kv))
      })
      .collect();
    let append = found.last().map(|(_, last, kv)| {
      let (last, kv) = (last.clone(), kv.clone());
      Box::new(move |new: &[&ContextItem]| {
        let s = &text[last.content.clone()];
        let body = layout::bullet_end(s).unwrap_or(0);
        let marker = &s[body..kv.key.start];
        let mut mid = s[kv.key.end..kv.value.start].to_string();
        if !mid.ends_with([' ', '\t']) {
          mid.push(' ');
        }
        let rendered: Vec<String> = new
          .iter()
          .enumerate()
          .map(|(n, item)| {
            let bullet = layout::next_bullet(s, body, n + 1);
            let key = one_line(&item.key);
            let value = one_line(&item.value);
            if kv.bold {
              format!("{bullet}{marker}{}{mid}{value}", key.replace('*', "\\*"))
            } else if layout::plain_safe(&key)
              && layout::key_value(&format!("- {key}{mid}x")).is_some_and(|k| k.key == (2..2 + key.len()))
            {
              format!("{bullet}{key}{mid}{value}")
            } else {
              // A key the plain style cannot hold (a separator in it, or a start that would open
              // a heading, quote or nested list inside the item) goes in bold.
              format!("{bullet}**{}**: {value}", key.replace('*', "\\*"))
            }
          })
          .collect();
        (last.clone(), rendered)
      }) as Append<'_, ContextItem>
    });
    Layout {
      found: found.into_iter().map(|(item, line, _)| (item, line)).collect(),
      append,
      parse: Box::new(|s| context_of(s).map(|(item, _)| item)),
      key: |c| norm(&c.key),
      rewrite: Box::new(move |old, line, new| {
        if old.value == new.value {
          return None;
        }
        let s = &text[line.content.clone()];
        let kv = layout::key_value(s)?;
        let gap = if kv.value.start == s.len() && !s.ends_with([' ', '\t']) { " " } else { "" };
        Some(format!("{}{gap}{}{}", &s[..kv.value.start], one_line(&new.value), &s[kv.value.end..]))
      }),
      body: |items| {
        items
          .iter()
          .take(MAX_SECTION_ITEMS)
          .map(|i| format!("- **{}**: {}\n", one_line(&i.key).replace('*', "\\*"), one_line(&i.value)))
          .collect()
      },
    }
  }

  fn region_context(&self) -> Vec<ContextItem> {
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

  /// The Active Context items: the section's own `- **Key**: value` lines (in any of the
  /// layouts `layout.rs` reads) and the ledger's region, one per key (the region's value wins
  /// for a key that is in both).
  pub fn active_context(&self) -> Vec<ContextItem> {
    let found = self.context_layout().found.into_iter().map(|(item, _)| item).collect();
    merge(found, self.region_context(), |c| norm(&c.key))
  }

  /// Sets the Active Context items: a key the section already has is rewritten on its own
  /// line, in its style; other keys go after the section's last entry in the same style, or
  /// into the ledger's region when the file has one or the section has no entries. Entries
  /// of the file not named in `items` stay as they are.
  pub fn set_active_context(&mut self, items: &[ContextItem]) {
    self.set_list(mnotes::ACTIVE_CONTEXT, items, NotesDoc::context_layout);
  }

  // ---- Lightweight Identifiers ------------------------------------------------------------

  fn identifier_layout(&self) -> Layout<'_, IdentifierRow> {
    let text = &self.text;
    let scan = self.scan(mnotes::IDENTIFIERS);
    let table = scan.tables.into_iter().find_map(|t| Some((Columns::of(&t.header)?, t)));
    if table.is_none() {
      return self.identifier_list_layout(scan.items);
    }
    let found: Vec<(IdentifierRow, Line)> = table
      .iter()
      .flat_map(|(cols, t)| {
        t.rows.iter().filter_map(move |line| Some((row_of(&text[line.content.clone()], cols)?, line.clone())))
      })
      .collect();
    let width = |t: &layout::Table, cols: &Columns| {
      t.header
        .len()
        .max(cols.identifier + 1)
        .max(cols.purpose.map_or(0, |p| p + 1))
        .max(cols.last_verified.map_or(0, |v| v + 1))
    };
    let fill = |cells: &mut [String], cols: &Columns, row: &IdentifierRow| {
      if let Some(p) = cols.purpose {
        cells[p] = cell(&row.purpose);
      }
      if let Some(v) = cols.last_verified {
        cells[v] = cell(&row.last_verified);
      }
    };
    let cols = table.as_ref().map(|(c, _)| *c);
    let append = table.clone().map(|(cols, t)| {
      Box::new(move |new: &[&IdentifierRow]| {
        let like = &text[t.last.content.clone()];
        let rendered: Vec<String> = new
          .iter()
          .map(|row| {
            let mut cells = vec![String::new(); width(&t, &cols)];
            cells[cols.identifier] = cell(&row.identifier);
            fill(&mut cells, &cols, row);
            layout::render_row(like, &cells)
          })
          .collect();
        (t.last.clone(), rendered)
      }) as Append<'_, IdentifierRow>
    });
    Layout {
      found,
      append,
      parse: Box::new(move |s| row_of(s, &cols?)),
      key: |r| r.identifier.trim().to_string(),
      rewrite: Box::new(move |old, line, new| {
        let (cols, t) = table.as_ref()?;
        if old.purpose == new.purpose && old.last_verified == new.last_verified {
          return None;
        }
        let s = &text[line.content.clone()];
        let mut cells: Vec<String> = layout::split_cells(s).iter().map(|c| c.replace('|', "\\|")).collect();
        cells.resize(cells.len().max(width(t, cols)), String::new());
        fill(&mut cells, cols, new);
        Some(layout::render_row(s, &cells))
      }),
      body: identifiers_body,
    }
  }

  /// Identifiers kept as a list (`- ${PROJECT_ROOT}/path:1-2 - purpose`), for a section with
  /// no identifiers table. A list has no `Last Verified`: it is read empty and not written.
  fn identifier_list_layout(&self, items: Vec<Line>) -> Layout<'_, IdentifierRow> {
    let text = &self.text;
    let found: Vec<(IdentifierRow, Line, IdentifierItem)> = items
      .into_iter()
      .filter_map(|line| {
        let (mut row, it) = identifier_item_of(&text[line.content.clone()])?;
        continued(&mut row.purpose, text, &line);
        Some((row, line, it))
      })
      .collect();
    let append = found.last().map(|(_, last, it)| {
      let (last, it) = (last.clone(), it.clone());
      Box::new(move |new: &[&IdentifierRow]| {
        let s = &text[last.content.clone()];
        let tick = if it.ticked { "`" } else { "" };
        let after = it.identifier.end + tick.len();
        let sep = if it.purpose.start > after { &s[after..it.purpose.start] } else { " - " };
        let rendered: Vec<String> = new
          .iter()
          .enumerate()
          .map(|(n, row)| {
            let bullet = layout::next_bullet(s, it.body, n + 1);
            let purpose = one_line(&row.purpose);
            let sep = if purpose.is_empty() { "" } else { sep };
            format!("{bullet}{tick}{}{tick}{sep}{purpose}", one_line(&row.identifier))
          })
          .collect();
        (last.clone(), rendered)
      }) as Append<'_, IdentifierRow>
    });
    Layout {
      found: found.into_iter().map(|(row, line, _)| (row, line)).collect(),
      append,
      parse: Box::new(|s| identifier_item_of(s).map(|(row, _)| row)),
      key: |r| r.identifier.trim().to_string(),
      rewrite: Box::new(move |old, line, new| {
        if old.purpose == new.purpose {
          return None;
        }
        let s = &text[line.content.clone()];
        let it = layout::identifier_item(s)?;
        let purpose = one_line(&new.purpose);
        Some(if it.purpose.is_empty() {
          format!("{} - {purpose}{}", &s[..it.purpose.start].trim_end(), &s[it.purpose.end..])
        } else {
          format!("{}{purpose}{}", &s[..it.purpose.start], &s[it.purpose.end..])
        })
      }),
      body: identifiers_body,
    }
  }

  fn region_identifiers(&self) -> Vec<IdentifierRow> {
    self
      .region_lines(mnotes::IDENTIFIERS)
      .iter()
      .filter(|l| l.trim_start().starts_with('|'))
      .skip(2) // header and delimiter rows
      .filter_map(|l| {
        let cells = layout::split_cells(l);
        let get = |i: usize| cells.get(i).cloned().unwrap_or_default();
        (!get(0).is_empty()).then(|| IdentifierRow { identifier: get(0), purpose: get(1), last_verified: get(2) })
      })
      .collect()
  }

  /// The Lightweight Identifiers rows: the section's own table (columns found by header
  /// name: `Identifier`, `Purpose`, `Last Verified`) and the ledger's region, one row per
  /// identifier (the region's wins).
  pub fn identifiers(&self) -> Vec<IdentifierRow> {
    let found = self.identifier_layout().found.into_iter().map(|(row, _)| row).collect();
    merge(found, self.region_identifiers(), |r| r.identifier.trim().to_string())
  }

  /// Sets the Lightweight Identifiers rows: a row the section's table already has is rewritten
  /// in place (its identifier cell and extra columns as written), others are added at the
  /// table's end, or kept in the ledger's region when the file has one or no table.
  pub fn set_identifiers(&mut self, rows: &[IdentifierRow]) {
    self.set_list(mnotes::IDENTIFIERS, rows, NotesDoc::identifier_layout);
  }

  // ---- Pending Questions ------------------------------------------------------------------

  fn question_layout(&self) -> Layout<'_, Question> {
    let text = &self.text;
    let found: Vec<(Question, Line, QuestionLine)> = self
      .scan(mnotes::PENDING_QUESTIONS)
      .items
      .into_iter()
      .filter_map(|line| {
        let (mut item, q) = question_of(&text[line.content.clone()])?;
        continued(&mut item.text, text, &line);
        Some((item, line, q))
      })
      .collect();
    let append = found.last().map(|(_, last, q)| {
      let (last, q) = (last.clone(), q.clone());
      Box::new(move |new: &[&Question]| {
        let s = &text[last.content.clone()];
        let rendered: Vec<String> = new
          .iter()
          .enumerate()
          .map(|(n, item)| {
            let bullet = layout::next_bullet(s, q.body, n + 1);
            // Without a check box only text that cannot open a block inside the item.
            let mark = match (item.done, q.mark.is_some() || !layout::plain_safe(&item.text)) {
              (true, _) => "[x] ",
              (false, true) => "[ ] ",
              (false, false) => "",
            };
            format!("{bullet}{mark}{}", one_line(&item.text))
          })
          .collect();
        (last.clone(), rendered)
      }) as Append<'_, Question>
    });
    Layout {
      found: found.into_iter().map(|(item, line, _)| (item, line)).collect(),
      append,
      parse: Box::new(|s| question_of(s).map(|(q, _)| q)),
      key: |q| norm(&q.text),
      rewrite: Box::new(move |old, line, new| {
        if old.done == new.done {
          return None;
        }
        let s = &text[line.content.clone()];
        let q = layout::question(s)?;
        // A question wrapped onto the lines below keeps them: only its check mark changes.
        let rest = &text[line.content.end..line.text_end];
        Some(match q.mark {
          Some(m) => format!("{}{}{}{rest}", &s[..m], if new.done { 'x' } else { ' ' }, &s[m + 1..]),
          None => format!("{}[x] {}{rest}", &s[..q.body], &s[q.body..]),
        })
      }),
      body: |questions| {
        questions
          .iter()
          .take(MAX_SECTION_ITEMS)
          .map(|q| format!("- [{}] {}\n", if q.done { "x" } else { " " }, one_line(&q.text)))
          .collect()
      },
    }
  }

  fn region_questions(&self) -> Vec<Question> {
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

  /// The Pending Questions: the section's own items (`- [ ] text`, `- [x] text`, or a plain
  /// bullet, open) and the ledger's region, one per text (the region's wins).
  pub fn pending_questions(&self) -> Vec<Question> {
    let found = self.question_layout().found.into_iter().map(|(q, _)| q).collect();
    merge(found, self.region_questions(), |q| norm(&q.text))
  }

  /// Sets the Pending Questions: a question the section already has gets its check mark set
  /// in place (a plain bullet answered gains `[x] `), a new one goes after the last in the
  /// same style, or into the ledger's region when the file has one or the section has none.
  pub fn set_pending_questions(&mut self, questions: &[Question]) {
    self.set_list(mnotes::PENDING_QUESTIONS, questions, NotesDoc::question_layout);
  }

  /// Every entry of the Decision Log, human-written and managed, in file order: `####`
  /// entries, the rows of a decision table (columns by name), `**Decision: X**` blocks with
  /// their bullets, and dated bullets (`- **2026-04-13:** text`); see [`notes_log`].
  pub fn decisions(&self) -> Vec<DecisionEntry> {
    let Some(range) = section_range(&self.text, mnotes::DECISION_LOG) else { return Vec::new() };
    let section = &self.text[range.clone()];
    let headings = entry_headings(section);
    let mut all: Vec<(usize, DecisionEntry)> =
      headings.iter().map(|h| range.start + h.0).zip(parse_entries(section, &headings)).collect();
    all.extend(notes_log::other_entries(&self.text));
    all.sort_by_key(|(at, _)| *at);
    all.into_iter().map(|(_, e)| e).collect()
  }

  /// The rows of the Session Continuity session-log table (`| Timestamp | Agent | Summary |`),
  /// as the original framework's scripts write it; empty when there is none.
  pub fn session_log(&self) -> Vec<notes_log::SessionLogRow> {
    notes_log::session_log(&self.text)
  }

  /// The items of `## Active Sub-Goals`, as written.
  pub fn sub_goals(&self) -> Vec<String> {
    notes_log::list_items(&self.text, &["Active Sub-Goals", "Active Subgoals", "Sub-Goals", "Subgoals"])
  }

  /// The items of `## Discovered Technical Debt`, as written.
  pub fn technical_debt(&self) -> Vec<String> {
    notes_log::list_items(&self.text, &["Discovered Technical Debt", "Technical Debt", "Tech Debt"])
  }

  /// The items of `## Blockers & Dependencies`, as written.
  pub fn blockers(&self) -> Vec<String> {
    notes_log::list_items(&self.text, &["Blockers"])
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
  use crate::ledger::tests::Rng;

  const FOREIGN: &str = "# Agent Working Memory (NOTES.md)

Intro by a human, trailing spaces   
kept.

## Session Continuity
<!-- CRITICAL: Load this section FIRST after /clear (~100 tokens) -->

### Active Context
Human note, written by hand: prose, not a list (the seed's list layout is tested below).

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
A human question, in prose?

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

  /// What the random edits write: pieces of markdown and of the ledger's own markers.
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
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15, &PIECES, 6);
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
      let once = doc.clone();
      doc.set_active_context(&once.active_context());
      doc.set_identifiers(&once.identifiers());
      doc.set_pending_questions(&once.pending_questions());
      assert_eq!(doc, once, "round {round}: setting what is there changes nothing");
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

  /// The seed's NOTES.md (seed 000 §5.1), as vendored with its provenance.
  const SEED: &str = include_str!("../../testdata/seeds/examples/NOTES.md");

  /// What `update_continuity` does with a doc: merge by key, then set.
  fn merge_context(doc: &mut NotesDoc, key: &str, value: &str) {
    let mut all = doc.active_context();
    all.retain(|c| !c.key.eq_ignore_ascii_case(key));
    all.push(ContextItem { key: key.into(), value: value.into() });
    doc.set_active_context(&all);
  }

  /// The lines of `after` that differ from `before`, which must have as many.
  fn changed_lines(before: &str, after: &str) -> Vec<(String, String)> {
    let (a, b): (Vec<&str>, Vec<&str>) = (before.split('\n').collect(), after.split('\n').collect());
    assert_eq!(a.len(), b.len(), "line count changed:\n{after}");
    a.iter().zip(&b).filter(|(x, y)| x != y).map(|(x, y)| (x.to_string(), y.to_string())).collect()
  }

  #[test]
  fn the_seed_notes_are_read_completely() {
    let doc = NotesDoc::new(SEED);
    let ctx = |k: &str, v: &str| ContextItem { key: k.into(), value: v.into() };
    assert_eq!(
      doc.active_context(),
      vec![
        ctx("Current Bead", "bd-x7y8 (Implementing JWT refresh)"),
        ctx("Last Checkpoint", "2024-01-15T14:30:00Z"),
        ctx("Reasoning State", "Validating token expiry edge cases"),
      ]
    );
    let row =
      |i: &str, p: &str, v: &str| IdentifierRow { identifier: i.into(), purpose: p.into(), last_verified: v.into() };
    assert_eq!(
      doc.identifiers(),
      vec![
        row("${PROJECT_ROOT}/src/auth/jwt.ts:45-67", "Token validation logic", "14:25:00Z"),
        row("${PROJECT_ROOT}/src/auth/refresh.ts:12-34", "Refresh flow", "14:28:00Z"),
      ]
    );
    assert_eq!(
      doc.pending_questions(),
      vec![Question { text: "Should grace period be configurable per-client?".into(), done: false }]
    );
    let d = doc.decisions();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].title, "Token Expiry Handling");
    assert_eq!(d[0].ts_ms, crate::timestamp::parse_ms("2024-01-15T14:30:00Z"));
    assert_eq!(d[0].decision, "Use sliding window expiration with 15-minute grace period");
    assert_eq!(d[0].rationale.as_deref(), Some("Balances security (short expiry) with UX (no mid-session logouts)"));
    assert_eq!(
      d[0].evidence,
      vec!["`export function isTokenExpired(token: Token, graceMs = 900000)` [${PROJECT_ROOT}/src/auth/jwt.ts:52]"]
    );
    assert_eq!(
      d[0].test_scenarios,
      vec![
        "Token expires exactly at boundary -> grace period applies",
        "Token expires beyond grace -> forced refresh",
        "Refresh token also expired -> full re-authentication",
      ]
    );
  }

  #[test]
  fn a_seed_entry_is_replaced_in_place_and_nothing_else_moves() {
    let mut doc = NotesDoc::new(SEED);
    merge_context(&mut doc, "current bead", "bd-a1b2");
    assert_eq!(
      changed_lines(SEED, doc.text()),
      vec![("- **Current Bead**: bd-x7y8 (Implementing JWT refresh)".into(), "- **Current Bead**: bd-a1b2".into())]
    );
    assert_eq!(doc.text().matches("Current Bead").count(), 1);
    // Setting what is there changes nothing, for each list.
    let before = doc.clone();
    doc.set_active_context(&before.active_context());
    doc.set_identifiers(&before.identifiers());
    doc.set_pending_questions(&before.pending_questions());
    assert_eq!(doc, before);
    // An empty value and a key new to the section.
    merge_context(&mut doc, "Reasoning State", "");
    merge_context(&mut doc, "Phase: two", "review");
    assert!(
      doc.text().contains("- **Reasoning State**: \n- **Phase: two**: review\n\n### Lightweight Identifiers"),
      "{}",
      doc.text()
    );
    assert_eq!(doc.active_context().len(), 4);
    assert_eq!(doc.active_context()[2], ContextItem { key: "Reasoning State".into(), value: String::new() });
  }

  #[test]
  fn seed_layout_variants_are_read_and_edited_in_their_own_style() {
    let text = "# Notes\r\n\r\n# session continuity (load first)\r\n\r\n## 1. ACTIVE CONTEXT:\r\n\
      * Current Bead - bd-1   \r\n\
      * __Phase__ — build\r\n\
      <!-- - **Commented**: not an entry -->\r\n\
      ```\r\n- **Fenced**: not an entry\r\n## Pending Questions\r\n```\r\n\
      \r\n## lightweight identifiers\r\n\r\n\
      | Purpose | Notes | `Identifier` |\r\n|---|---|---|\r\n\
      | a \\| b | kept | `${PROJECT_ROOT}/src/a.rs:1-2` |\r\n\
      \r\n## Open things\r\n- not a question\r\n\r\n## Pending Questions\r\n1. Plain numbered?\r\n2. [X] Done one\r\n";
    let mut doc = NotesDoc::new(text);
    let keys: Vec<String> = doc.active_context().into_iter().map(|c| format!("{}={}", c.key, c.value)).collect();
    assert_eq!(keys, ["Current Bead=bd-1", "Phase=build"]);
    assert_eq!(
      doc.identifiers(),
      vec![IdentifierRow {
        identifier: "${PROJECT_ROOT}/src/a.rs:1-2".into(),
        purpose: "a | b".into(),
        last_verified: String::new()
      }]
    );
    assert_eq!(
      doc.pending_questions(),
      vec![Question { text: "Plain numbered?".into(), done: false }, Question { text: "Done one".into(), done: true }]
    );
    merge_context(&mut doc, "Current Bead", "bd-2");
    merge_context(&mut doc, "Next", "ship");
    doc.set_pending_questions(&[
      Question { text: "plain numbered?".into(), done: true },
      Question { text: "New?".into(), done: false },
    ]);
    doc.set_identifiers(&[
      IdentifierRow {
        identifier: "${PROJECT_ROOT}/src/a.rs:1-2".into(),
        purpose: "c | d".into(),
        last_verified: "now".into(),
      },
      IdentifierRow {
        identifier: "${PROJECT_ROOT}/src/b.rs:3".into(),
        purpose: "new".into(),
        last_verified: "now".into(),
      },
    ]);
    let want = text
      .replace("* Current Bead - bd-1   \r\n", "* Current Bead - bd-2   \r\n")
      .replace("* __Phase__ — build\r\n", "* __Phase__ — build\r\n* __Next__ — ship\r\n")
      .replace(
        "1. Plain numbered?\r\n2. [X] Done one\r\n",
        "1. [x] Plain numbered?\r\n2. [X] Done one\r\n3. [ ] New?\r\n",
      )
      .replace(
        "| a \\| b | kept | `${PROJECT_ROOT}/src/a.rs:1-2` |\r\n",
        "| c \\| d | kept | `${PROJECT_ROOT}/src/a.rs:1-2` |\r\n| new |  | ${PROJECT_ROOT}/src/b.rs:3 |\r\n",
      );
    assert_eq!(doc.text(), want);
    assert!(!doc.text().contains("loa:begin"));
    assert_eq!(doc.identifiers().len(), 2);
    assert_eq!(doc.pending_questions().len(), 3);
  }

  #[test]
  fn duplicates_are_never_shown_and_an_edit_leaves_one() {
    let text = "## Active Context\n- **Current Bead**: bd-1\n- Current bead: bd-0\n\n<!-- loa:begin active-context -->\n- **Phase**: b\n<!-- loa:end active-context -->\n\n### Pending Questions\n- [ ] Q?\n\n<!-- loa:begin pending-questions -->\n- [x] q?\n<!-- loa:end pending-questions -->\n";
    let mut doc = NotesDoc::new(text);
    // The file's first line for a key, the region's value for a key in both.
    let ctx = doc.active_context();
    assert_eq!(ctx.len(), 2);
    assert_eq!(ctx[0].value, "bd-1");
    assert_eq!(doc.pending_questions(), vec![Question { text: "q?".into(), done: true }]);
    merge_context(&mut doc, "Current Bead", "bd-2");
    merge_context(&mut doc, "New", "n");
    let t = doc.text();
    assert_eq!(t.matches("urrent ").count(), 1, "{t}");
    assert!(
      t.contains("- **Current Bead**: bd-2\n\n<!-- loa:begin active-context -->\n- **Phase**: b\n- **New**: n\n"),
      "{t}"
    );
    // The question the region answered is answered in place; the region keeps nothing twice.
    let qs = doc.pending_questions();
    doc.set_pending_questions(&qs);
    assert!(doc.text().contains("- [x] Q?\n\n<!-- loa:begin pending-questions -->\n<!-- loa:end"), "{}", doc.text());
  }

  #[test]
  fn the_last_line_without_a_line_end_and_empty_sections() {
    let mut doc = NotesDoc::new("### Pending Questions\n- [ ] a");
    doc.set_pending_questions(&[Question { text: "b".into(), done: false }]);
    assert_eq!(doc.text(), "### Pending Questions\n- [ ] a\n- [ ] b");
    // A section with no entry of its own gets the ledger's region, as before.
    let mut doc = NotesDoc::new("### Active Context\nprose only\n");
    doc.set_active_context(&[ContextItem { key: "K".into(), value: "v".into() }]);
    assert!(doc.text().contains("<!-- loa:begin active-context -->\n- **K**: v\n"), "{}", doc.text());
  }

  #[test]
  fn random_edits_of_the_seed_keep_one_entry_per_key_and_every_foreign_line() {
    let mut doc = NotesDoc::new(SEED);
    let entry_lines = |t: &str| -> Vec<String> {
      t.lines().filter(|l| l.starts_with("- ") || l.starts_with("| ${")).map(str::to_string).collect()
    };
    let foreign: Vec<&str> = SEED.lines().filter(|l| !entry_lines(SEED).iter().any(|e| e == l)).collect();
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d, &PIECES, 6);
    const KEYS: [&str; 5] = ["Current Bead", "last checkpoint", "Reasoning State", "Phase", "Next Step"];
    for round in 0..60 {
      match rng.next() % 3 {
        0 => {
          let key = if rng.next().is_multiple_of(4) { rng.text() } else { KEYS[(rng.next() % 5) as usize].to_string() };
          let value = rng.text();
          merge_context(&mut doc, &key, &value);
        }
        1 => {
          let mut qs = doc.pending_questions();
          let text = if rng.next().is_multiple_of(3) { rng.text() } else { format!("q{}", rng.next() % 4) };
          let q = Question { text, done: rng.next().is_multiple_of(2) };
          match qs.iter_mut().find(|old| norm(&old.text) == norm(&q.text)) {
            Some(old) => old.done = q.done,
            None => qs.push(q),
          }
          doc.set_pending_questions(&qs);
        }
        _ => {
          let mut rows = doc.identifiers();
          let id = format!("${{PROJECT_ROOT}}/src/f{}.rs:1", rng.next() % 3);
          rows.retain(|r| r.identifier != id);
          rows.push(IdentifierRow { identifier: id, purpose: rng.text(), last_verified: rng.text() });
          doc.set_identifiers(&rows);
        }
      }
      let ctx = doc.active_context();
      let mut keys: Vec<String> = ctx.iter().map(|c| c.key.to_ascii_lowercase()).collect();
      keys.sort();
      keys.dedup();
      assert_eq!(keys.len(), ctx.len(), "round {round}: {ctx:?}");
      let mut at = 0;
      for line in &foreign {
        at += doc.text()[at..].find(line).unwrap_or_else(|| panic!("round {round}: lost {line:?}\n{}", doc.text()))
          + line.len();
      }
      assert_eq!(doc.decisions().len(), 1, "round {round}");
      let once = doc.clone();
      doc.set_active_context(&once.active_context());
      doc.set_identifiers(&once.identifiers());
      doc.set_pending_questions(&once.pending_questions());
      assert_eq!(doc, once, "round {round}: setting what is there changes nothing");
    }
  }

  #[test]
  fn hostile_sizes_stay_linear_and_bounded() {
    // A 100,000-row table and a 1 MiB line: read and edited in one pass each.
    let mut text =
      String::from("### Lightweight Identifiers\n| Identifier | Purpose | Last Verified |\n|---|---|---|\n");
    for i in 0..100_000 {
      text.push_str(&format!("| ${{PROJECT_ROOT}}/src/f{i}.rs:1 | p | t |\n"));
    }
    text.push_str(&format!(
      "\n### Active Context\n- **Big**: {}\n- {}\n",
      "x".repeat(1 << 20),
      "y".repeat(1 << 20) + ": x"
    ));
    let mut doc = NotesDoc::new(text);
    assert_eq!(doc.identifiers().len(), 100_000);
    assert_eq!(doc.active_context().len(), 1);
    let mut rows = doc.identifiers();
    rows.push(IdentifierRow {
      identifier: "${PROJECT_ROOT}/new.rs:1".into(),
      purpose: "n".into(),
      last_verified: "t".into(),
    });
    doc.set_identifiers(&rows);
    // Past MAX_SECTION_ITEMS nothing new is added: the section does not grow without bound.
    assert_eq!(doc.identifiers().len(), 100_000);
    merge_context(&mut doc, "Big", "small");
    assert_eq!(doc.active_context()[0].value, "small");
  }

  #[test]
  fn identifiers_kept_as_a_list_are_read_and_edited_as_a_list() {
    // New ones go after the last identifier, in its style (here: no code span, ` - `).
    let text = "### Lightweight Identifiers\n- `${PROJECT_ROOT}/src/a.ts:1-5` — Token logic\n- ${PROJECT_ROOT}/src/b.ts:2\n- prose, not an identifier\n\n### Pending Questions\n";
    let mut doc = NotesDoc::new(text);
    let rows = doc.identifiers();
    assert_eq!(rows.len(), 2);
    assert_eq!(
      (rows[0].identifier.as_str(), rows[0].purpose.as_str()),
      ("${PROJECT_ROOT}/src/a.ts:1-5", "Token logic")
    );
    assert_eq!((rows[1].identifier.as_str(), rows[1].purpose.as_str()), ("${PROJECT_ROOT}/src/b.ts:2", ""));
    let mut all = rows.clone();
    all[0].purpose = "Token checks".into();
    all[0].last_verified = "now".into();
    all[1].purpose = "Second".into();
    all.push(IdentifierRow {
      identifier: "${PROJECT_ROOT}/src/c.ts:3".into(),
      purpose: "Third".into(),
      last_verified: "now".into(),
    });
    doc.set_identifiers(&all);
    assert_eq!(
      doc.text(),
      "### Lightweight Identifiers\n- `${PROJECT_ROOT}/src/a.ts:1-5` — Token checks\n- ${PROJECT_ROOT}/src/b.ts:2 - Second\n- ${PROJECT_ROOT}/src/c.ts:3 - Third\n- prose, not an identifier\n\n### Pending Questions\n"
    );
    assert_eq!(doc.identifiers().len(), 3);
  }

  #[test]
  fn an_entry_the_style_cannot_hold_goes_to_the_region_and_edits_settle() {
    let text = "### Active Context\n- __Phase__: build\n\n### Pending Questions\n- Plain one?\n";
    let mut doc = NotesDoc::new(text);
    let odd = [
      ContextItem { key: "snake__case".into(), value: "v".into() },
      ContextItem { key: "## Heading".into(), value: "<!-- loa:end active-context -->".into() },
      ContextItem { key: "Next".into(), value: "ship".into() },
    ];
    let questions = [
      Question { text: "## Not a heading?".into(), done: false },
      Question { text: "1. not nested?".into(), done: false },
      Question { text: "New?".into(), done: false },
    ];
    for round in 0..3 {
      let mut all = doc.active_context();
      all.retain(|c| !odd.iter().any(|o| norm(&o.key) == norm(&c.key)));
      all.extend(odd.iter().cloned());
      doc.set_active_context(&all);
      let mut qs = doc.pending_questions();
      qs.retain(|q| !questions.iter().any(|o| norm(&o.text) == norm(&q.text)));
      qs.extend(questions.iter().cloned());
      doc.set_pending_questions(&qs);
      let keys: Vec<String> = doc.active_context().iter().map(|c| norm(&c.key)).collect();
      assert_eq!(keys, ["phase", "## heading", "next", "snake__case"], "round {round}:\n{}", doc.text());
      assert_eq!(doc.pending_questions().len(), 4, "round {round}:\n{}", doc.text());
      let once = doc.clone();
      doc.set_active_context(&once.active_context());
      doc.set_pending_questions(&once.pending_questions());
      assert_eq!(doc, once, "round {round}: setting what is there changes nothing");
    }
    // What the section's style holds went after its last entry; a key it cannot hold (`__` in
    // a `__bold__` key) into the region; text that would open a block got a check box.
    assert_eq!(
      doc.text(),
      "### Active Context\n- __Phase__: build\n- __## Heading__: &lt;!-- loa:end active-context -->\n- __Next__: ship\n\n\
       <!-- loa:begin active-context -->\n- **snake__case**: v\n<!-- loa:end active-context -->\n\n\
       ### Pending Questions\n- Plain one?\n- [ ] ## Not a heading?\n- [ ] 1. not nested?\n- New?\n"
    );
  }

  #[test]
  fn wrapped_items_and_nested_lists_stay_whole() {
    let text = "### Active Context\n- **Reasoning State**: validating token\n  expiry edge cases\n- **Phase**: build\n  - a nested note\n  - another\n\n### Pending Questions\n- [ ] A question wrapped\n  over two lines?\n";
    let mut doc = NotesDoc::new(text);
    let ctx = doc.active_context();
    assert_eq!(ctx[0].value, "validating token expiry edge cases");
    assert_eq!(ctx[1].value, "build");
    assert_eq!(doc.pending_questions()[0].text, "A question wrapped over two lines?");
    merge_context(&mut doc, "Reasoning State", "done");
    merge_context(&mut doc, "Next", "ship");
    doc.set_pending_questions(&[Question { text: "A question wrapped over two lines?".into(), done: true }]);
    assert_eq!(
      doc.text(),
      "### Active Context\n- **Reasoning State**: done\n- **Phase**: build\n  - a nested note\n  - another\n- **Next**: ship\n\n### Pending Questions\n- [x] A question wrapped\n  over two lines?\n"
    );
  }
}
