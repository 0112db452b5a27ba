//! NOTES.md as the original framework's install and self-heal scripts write it: a Decision Log
//! that is a table, `**Decision: X**` blocks or dated bullets rather than `####` entries, a
//! Session Continuity that is a session-log table, and top-level `## Active Sub-Goals`,
//! `## Discovered Technical Debt` and `## Blockers & Dependencies` lists.
//!
//! ```markdown
//! ## Session Continuity
//! | Timestamp | Agent | Summary |
//! |-----------|-------|---------|
//! | 2026-02-02 | claude-opus-4.5 | Updated Loa v1.7.2 -> v1.16.0 |
//!
//! ## Decision Log
//! | Date | Decision | Rationale |
//! |------|----------|-----------|
//! | 2026-02-02 | R2 + Git dual persistence | Hot state in R2, cold backup to git |
//!
//! **Decision: Follow beads integration pattern for ck**
//! - **Rationale**: one pattern for every integration
//! - **Source**: docs/integration.md:72-94
//!
//! - **2026-04-13:** Drop the legacy importer
//! ```
//!
//! Columns and bullet keys are found by name ([`mnotes::heading_means`]), in any order, and
//! every column or key with no field of its own is kept in `extra`. Found by the same parser
//! as the rest of the ledger: a line in a code fence or an HTML comment is not an entry.
//!
//! Writing: a Decision Log kept as a table gets one row per decision memory, in the table's
//! columns; the row carries the memory's id in an HTML comment in its last cell (invisible when
//! rendered), which makes the row consolidation's own, exactly like its marked region: rewritten
//! never, removed when the memory is forgotten or falls out of the newest decisions shown, and
//! never added twice. A row without the comment is the human's and is never touched. A log of
//! `**Decision: X**` blocks or of dated bullets gets its marked region rendered in that style.
//! Every scan is one pass of the parser over the section, so costs are linear.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::memory::notes::{self as mnotes, one_line};
use crate::timestamp::parse_ms;

use super::decision::DecisionEntry;
use super::layout::{self, apply, lines_after, Line};

/// The comment that marks a Decision Log table row as consolidation's own.
const ROW_MARK: &str = "<!-- loa:decision ";

/// Most characters of a memory id a row's mark carries (as in the `####` entries' `**Id**`).
const ID_LEN: usize = 12;

/// One row of a Session Continuity session-log table (`| Timestamp | Agent | Summary |`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionLogRow {
  pub timestamp: String,
  pub agent: String,
  pub summary: String,
  /// Columns with no field of their own, as `(header, cell)`.
  pub extra: Vec<(String, String)>,
}

/// What a column or a bullet key of a Decision Log (or session log) holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
  Timestamp,
  Date,
  Decision,
  Title,
  Rationale,
  Agent,
  Evidence,
  Scenarios,
  Summary,
  Other,
}

fn role(name: &str) -> Role {
  let is = |names: &[&str]| names.iter().any(|n| mnotes::heading_means(name, n));
  if is(&["Timestamp", "Time", "When", "Datetime"]) {
    Role::Timestamp
  } else if is(&["Date", "Day"]) {
    Role::Date
  } else if is(&["Decision", "Decisions"]) {
    Role::Decision
  } else if is(&["Title", "Topic", "Subject"]) {
    Role::Title
  } else if is(&["Rationale", "Reason", "Reasons", "Reasoning", "Why"]) {
    Role::Rationale
  } else if is(&["Agent", "Decided By", "Author", "By", "Who", "Owner"]) {
    Role::Agent
  } else if is(&["Evidence"]) {
    Role::Evidence
  } else if is(&["Test Scenarios", "Test Scenario", "Tests"]) {
    Role::Scenarios
  } else if is(&["Summary", "Notes", "Outcome", "Work Done", "Progress"]) {
    Role::Summary
  } else {
    Role::Other
  }
}

/// An instant written as RFC 3339 or as a bare date (`2026-02-02`, read as midnight UTC).
pub(crate) fn parse_when(text: &str) -> Option<i64> {
  let t = text.trim().trim_matches(|c: char| c == '*' || c == '_' || c == '`').trim();
  if t.len() > 64 {
    return None;
  }
  if let Some(ms) = parse_ms(t) {
    return Some(ms);
  }
  let b = t.as_bytes();
  let date =
    b.len() == 10 && b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() });
  date.then(|| parse_ms(&format!("{t}T00:00:00Z"))).flatten()
}

/// The last cell of a row without consolidation's row mark, and the id the mark carries: only
/// a mark that ends the cell, with a hexadecimal id, counts (a comment a person quotes inside
/// a cell does not make the row consolidation's).
fn unmark(cell: &str) -> (String, Option<String>) {
  let Some(at) = cell.rfind(ROW_MARK) else { return (cell.to_string(), None) };
  let Some(id) = cell[at + ROW_MARK.len()..].strip_suffix("-->").map(str::trim) else {
    return (cell.to_string(), None);
  };
  if id.is_empty() || id.len() > ID_LEN || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
    return (cell.to_string(), None);
  }
  (cell[..at].trim().to_string(), Some(id.to_string()))
}

/// The decision table of the Decision Log: its first table outside the marked regions with a
/// `Decision` column, with each column's role.
struct DecisionTable {
  roles: Vec<Role>,
  table: layout::Table,
}

fn decision_table(text: &str) -> Option<DecisionTable> {
  let scan = layout::scan(text, mnotes::DECISION_LOG)?;
  scan.tables.into_iter().find_map(|table| {
    let roles: Vec<Role> = table.header.iter().map(|h| role(h)).collect();
    roles.contains(&Role::Decision).then_some(DecisionTable { roles, table })
  })
}

/// A table row's entry and the id of the memory it shows, when consolidation wrote it.
fn row_entry(text: &str, t: &DecisionTable, line: &Line) -> Option<(DecisionEntry, Option<String>)> {
  let raw = &text[line.content.clone()];
  let mut e = DecisionEntry::default();
  let mut when = String::new();
  let mut mark = None;
  let cells = layout::split_cells(raw);
  let last = cells.len().saturating_sub(1);
  for (i, c) in cells.into_iter().enumerate() {
    let c = if i == last {
      let (c, id) = unmark(&c);
      mark = id;
      c
    } else {
      c
    };
    let header = t.table.header.get(i).cloned().unwrap_or_default();
    match t.roles.get(i).copied().unwrap_or(Role::Other) {
      Role::Timestamp | Role::Date if when.is_empty() => when = c,
      Role::Decision if e.decision.is_empty() => e.decision = c,
      Role::Title if e.title.is_empty() => e.title = c,
      Role::Rationale if e.rationale.is_none() => e.rationale = Some(c).filter(|c| !c.is_empty()),
      Role::Agent if e.agent.is_none() => e.agent = Some(c).filter(|c| !c.is_empty()),
      Role::Evidence if !c.is_empty() => e.evidence.push(c),
      Role::Scenarios if !c.is_empty() => e.test_scenarios.push(c),
      _ => e.extra.push((header, c)),
    }
  }
  if e.decision.is_empty() && e.title.is_empty() {
    return None;
  }
  finish(&mut e, &when);
  e.text = raw.trim_end().to_string();
  Some((e, mark))
}

/// Fills the heading, title and time of an entry that has no heading of its own.
fn finish(e: &mut DecisionEntry, when: &str) {
  if e.title.is_empty() {
    e.title = e.decision.clone();
  }
  if e.decision.is_empty() {
    e.decision = e.title.clone();
  }
  e.ts_ms = parse_when(when);
  e.heading = if when.is_empty() { e.title.clone() } else { format!("{when} - {}", e.title) };
}

/// Sets one field of an entry from a `- **Key**: value` bullet of a `**Decision: X**` block.
fn block_field(e: &mut DecisionEntry, when: &mut String, key: &str, value: String) {
  match role(key) {
    Role::Timestamp | Role::Date if when.is_empty() => *when = value,
    Role::Rationale if e.rationale.is_none() => e.rationale = Some(value),
    Role::Agent if e.agent.is_none() => e.agent = Some(value),
    Role::Evidence => e.evidence.push(value),
    Role::Scenarios => e.test_scenarios.push(value),
    _ => e.extra.push((key.to_string(), value)),
  }
}

/// `X` of a `**Decision: X**` line (also `__Decision — X__`), `\*` read as `*`.
fn bold_decision(line: &str) -> Option<String> {
  let t = line.trim();
  for marker in ["**", "__"] {
    let Some(rest) = t.strip_prefix(marker) else { continue };
    let close = rest.rfind(marker)?;
    let inner = rest[..close].trim();
    let word = inner.get(..8)?;
    if !word.eq_ignore_ascii_case("decision") {
      return None;
    }
    let after = inner[8..].trim_start();
    let sep = [':', '—', '–', '-'].into_iter().find(|c| after.starts_with(*c))?;
    let x = after[sep.len_utf8()..].trim().replace("\\*", "*");
    return (!x.is_empty()).then_some(x);
  }
  None
}

/// The key of a dated bullet (`- **2026-04-13:** text`), when its key is a date or an instant.
fn dated(line: &str) -> Option<(layout::KeyValue, i64)> {
  let kv = layout::key_value(line)?;
  let ms = parse_when(&line[kv.key.clone()])?;
  Some((kv, ms))
}

/// What a Decision Log holds besides `####` entries, each with where it starts in `text`.
struct Prose {
  entries: Vec<(usize, DecisionEntry)>,
  /// Whether a `**Decision: X**` block was found.
  blocks: bool,
  /// The last dated bullet's line (for the style of new ones).
  last_dated: Option<Line>,
}

fn line_start(text: &str, at: usize) -> usize {
  text[..at].rfind('\n').map_or(0, |i| i + 1)
}

fn line_at(text: &str, start: usize) -> Line {
  let end = text[start..].find('\n').map_or(text.len(), |i| start + i + 1);
  let content_end = text[start..end].trim_end_matches(['\n', '\r']).len() + start;
  Line { content: start..content_end, text_end: content_end, end }
}

/// The `**Decision: X**` blocks and dated bullets of the section at `range` (marked regions
/// included: the decisions region is written in the log's style).
fn prose(text: &str, range: Range<usize>) -> Prose {
  let base = range.start;
  let section = &text[range];
  let mut out = Prose { entries: Vec::new(), blocks: false, last_dated: None };
  let mut depth = 0usize;
  let mut quotes = 0usize;
  // The block whose bullets a list right after it carries: (entry index, its `when`).
  let mut block: Option<(usize, String)> = None;
  let mut in_block_list = false;
  // The dated bullet being read: entry index, where its text may continue, where it stops.
  let mut item: Option<(usize, usize, Option<usize>)> = None;
  for (event, r) in Parser::new_ext(section, Options::ENABLE_TABLES).into_offset_iter() {
    let top = depth == 0 && quotes == 0;
    match event {
      Event::Start(Tag::BlockQuote(_)) => quotes += 1,
      Event::End(TagEnd::BlockQuote(_)) => quotes = quotes.saturating_sub(1),
      Event::Start(Tag::Paragraph) if top => {
        if let Some((i, when)) = block.take() {
          finish(&mut out.entries[i].1, &when);
        }
        let line = line_at(section, line_start(section, r.start));
        if let Some(x) = bold_decision(&section[line.content.clone()]) {
          out.blocks = true;
          let e = DecisionEntry { decision: x.clone(), title: x, ..Default::default() };
          out.entries.push((base + line.content.start, e));
          block = Some((out.entries.len() - 1, String::new()));
        }
      }
      Event::End(TagEnd::Paragraph) if top => {
        if let Some((i, _)) = &block {
          let start = out.entries[*i].0 - base;
          out.entries[*i].1.text = section[start..r.end].trim_end().to_string();
        }
      }
      Event::Start(Tag::Heading { .. } | Tag::CodeBlock(_) | Tag::Table(_) | Tag::HtmlBlock) | Event::Rule if top => {
        if let Some((i, when)) = block.take() {
          finish(&mut out.entries[i].1, &when);
        }
      }
      Event::Start(Tag::List(_)) => {
        depth += 1;
        if depth == 1 && quotes == 0 {
          in_block_list = block.is_some();
        }
        if depth == 2 {
          if let Some((_, _, stop)) = item.as_mut() {
            stop.get_or_insert(line_start(section, r.start));
          }
        }
      }
      Event::End(TagEnd::List(_)) => {
        depth = depth.saturating_sub(1);
        if depth == 0 && in_block_list {
          in_block_list = false;
          if let Some((i, when)) = block.take() {
            let start = out.entries[i].0 - base;
            out.entries[i].1.text = section[start..r.end].trim_end().to_string();
            finish(&mut out.entries[i].1, &when);
          }
        }
      }
      Event::Start(Tag::Item) if depth == 1 && quotes == 0 => {
        let line = line_at(section, line_start(section, r.start));
        let s = &section[line.content.clone()];
        if in_block_list {
          if let (Some((i, when)), Some(kv)) = (block.as_mut(), layout::key_value(s)) {
            let key = s[kv.key.clone()].replace("\\*", "*");
            block_field(&mut out.entries[*i].1, when, &key, s[kv.value.clone()].to_string());
          }
        } else if let Some((kv, ms)) = dated(s) {
          let decision = s[kv.value.clone()].to_string();
          let when = s[kv.key.clone()].to_string();
          let mut e = DecisionEntry { decision: decision.clone(), title: decision, ..Default::default() };
          finish(&mut e, &when);
          e.ts_ms = Some(ms);
          out.entries.push((base + line.content.start, e));
          out.last_dated = Some(Line {
            content: base + line.content.start..base + line.content.end,
            text_end: base + line.text_end,
            end: base + line.end,
          });
          item = Some((out.entries.len() - 1, line.end, None));
        }
      }
      Event::End(TagEnd::Item) if depth == 1 => {
        if let Some((i, from, stop)) = item.take() {
          let to = stop.unwrap_or(r.end).max(from).min(section.len());
          let from = from.min(to);
          let start = out.entries[i].0 - base;
          let e = &mut out.entries[i].1;
          for word in section[from..to].split_whitespace() {
            e.decision.push(' ');
            e.decision.push_str(word);
          }
          e.decision = e.decision.trim().to_string();
          e.title = e.decision.clone();
          e.text = section[start..r.end.max(start)].trim_end().to_string();
        }
      }
      _ => {}
    }
  }
  if let Some((i, when)) = block.take() {
    finish(&mut out.entries[i].1, &when);
  }
  out
}

/// The Decision Log entries that are not `####` entries (table rows, blocks, dated bullets),
/// each with where it starts in `text`.
pub(crate) fn other_entries(text: &str) -> Vec<(usize, DecisionEntry)> {
  let Some(range) = mnotes::section_range(text, mnotes::DECISION_LOG) else { return Vec::new() };
  let mut out = prose(text, range).entries;
  if let Some(t) = decision_table(text) {
    out.extend(t.table.rows.iter().filter_map(|line| Some((line.content.start, row_entry(text, &t, line)?.0))));
  }
  out
}

/// The session-log rows of Session Continuity: the rows of its first table with a `Summary`
/// column (also `Notes`, `Outcome`) that is neither a decision nor an identifiers table.
pub(crate) fn session_log(text: &str) -> Vec<SessionLogRow> {
  let Some(scan) = layout::scan(text, mnotes::SESSION_CONTINUITY) else { return Vec::new() };
  let Some((roles, table)) = scan.tables.into_iter().find_map(|t| {
    let roles: Vec<Role> = t.header.iter().map(|h| role(h)).collect();
    let log =
      roles.contains(&Role::Summary) && !roles.contains(&Role::Decision) && layout::Columns::of(&t.header).is_none();
    log.then_some((roles, t))
  }) else {
    return Vec::new();
  };
  table
    .rows
    .iter()
    .filter_map(|line| {
      let mut row = SessionLogRow::default();
      for (i, c) in layout::split_cells(&text[line.content.clone()]).into_iter().enumerate() {
        match roles.get(i).copied().unwrap_or(Role::Other) {
          Role::Timestamp | Role::Date if row.timestamp.is_empty() => row.timestamp = c,
          Role::Agent if row.agent.is_empty() => row.agent = c,
          Role::Summary if row.summary.is_empty() => row.summary = c,
          _ => row.extra.push((table.header.get(i).cloned().unwrap_or_default(), c)),
        }
      }
      let empty = row.timestamp.is_empty() && row.agent.is_empty() && row.summary.is_empty();
      (!empty || row.extra.iter().any(|(_, c)| !c.is_empty())).then_some(row)
    })
    .collect()
}

/// The top-level list items of the first section titled by one of `titles`, each as written
/// after its bullet (a wrapped item read whole, blanks collapsed).
pub(crate) fn list_items(text: &str, titles: &[&str]) -> Vec<String> {
  let Some(scan) = titles.iter().find_map(|t| layout::scan(text, t)) else { return Vec::new() };
  scan
    .items
    .iter()
    .filter_map(|line| {
      let s = &text[line.content.clone()];
      let body = layout::bullet_end(s)?;
      let mut item = s[body..].trim_end().to_string();
      for word in text[line.content.end..line.text_end].split_whitespace() {
        item.push(' ');
        item.push_str(word);
      }
      (!item.is_empty()).then_some(item)
    })
    .collect()
}

/// A decision memory as consolidation writes it into a Decision Log in the file's own style.
#[derive(Debug, Clone)]
pub struct LogDecision {
  /// The memory id (its first [`ID_LEN`] characters mark the row).
  pub id: String,
  /// RFC 3339.
  pub timestamp: String,
  /// The decision, already redacted.
  pub decision: String,
  pub rationale: Option<String>,
  pub evidence: Vec<String>,
  pub test_scenarios: Vec<String>,
  /// For an `Agent` column: the memory's agent, else its session.
  pub agent: String,
  pub session_id: String,
}

fn cell(text: &str) -> String {
  one_line(text).replace('|', "\\|")
}

fn short_id(id: &str) -> &str {
  id.get(..ID_LEN).unwrap_or(id)
}

/// The text with `decisions` written into its Decision Log in the log's own style; `None` when
/// the log keeps `####` entries (or has none): then consolidation's region is rendered as
/// before. Applying it twice gives the same text.
pub fn write_decisions(text: &str, decisions: &[LogDecision]) -> Option<String> {
  let range = mnotes::section_range(text, mnotes::DECISION_LOG)?;
  if let Some(t) = decision_table(text) {
    let (out, marked) = write_rows(text, &t, decisions);
    // Rows it cannot read back (no known input) fall back to the region.
    let back: HashSet<String> = decision_table(&out)
      .map(|t| t.table.rows.iter().filter_map(|l| row_entry(&out, &t, l)?.1).collect())
      .unwrap_or_default();
    return marked.iter().all(|id| back.contains(id)).then_some(out);
  }
  let p = prose(text, range);
  let rendered = if p.blocks {
    let render = |_| decisions.iter().map(render_block).collect::<Vec<_>>().join("\n");
    mnotes::set_region(text, mnotes::DECISIONS, &render)
  } else if let Some(last) = &p.last_dated {
    let like = text[last.content.clone()].to_string();
    let render = |_| decisions.iter().map(|d| render_dated(&like, d)).collect::<String>();
    mnotes::set_region(text, mnotes::DECISIONS, &render)
  } else {
    return None;
  };
  // Each decision must read back from the style it was written in.
  let back: HashSet<String> = other_entries(&rendered).into_iter().map(|(_, e)| one_line(&e.decision)).collect();
  decisions.iter().all(|d| back.contains(&one_line(&d.decision))).then_some(rendered)
}

/// The text with consolidation's rows of the table brought up to `decisions`, and the ids of
/// the rows it must then hold (a decision a human row already states gets no row).
fn write_rows(text: &str, t: &DecisionTable, decisions: &[LogDecision]) -> (String, Vec<String>) {
  let wanted: HashMap<&str, &LogDecision> = decisions.iter().map(|d| (short_id(&d.id), d)).collect();
  let mut mine: HashSet<String> = HashSet::new();
  let mut human: HashSet<String> = HashSet::new();
  let mut splices: Vec<(Range<usize>, String)> = Vec::new();
  for line in &t.table.rows {
    match row_entry(text, t, line) {
      Some((_, Some(id))) => {
        if wanted.contains_key(id.as_str()) {
          mine.insert(id);
        } else {
          // Forgotten, expired, or no longer among the newest shown: consolidation's row goes.
          splices.push((line.content.start..line.end, String::new()));
        }
      }
      Some((e, None)) => {
        human.insert(one_line(&e.decision).to_lowercase());
      }
      None => {}
    }
  }
  let like = text[t.table.last.content.clone()].to_string();
  let width = t.roles.len().max(1);
  let marked: Vec<String> = decisions
    .iter()
    .filter(|d| !human.contains(&one_line(&d.decision).to_lowercase()))
    .map(|d| short_id(&d.id).to_string())
    .collect();
  let rows: Vec<String> = decisions
    .iter()
    .filter(|d| !mine.contains(short_id(&d.id)) && !human.contains(&one_line(&d.decision).to_lowercase()))
    .map(|d| {
      let mut cells: Vec<String> = t
        .roles
        .iter()
        .map(|r| match r {
          Role::Timestamp => cell(&d.timestamp),
          Role::Date => cell(d.timestamp.get(..10).unwrap_or(&d.timestamp)),
          Role::Decision | Role::Title => cell(&d.decision),
          Role::Rationale => cell(d.rationale.as_deref().unwrap_or("")),
          Role::Agent => cell(&d.agent),
          Role::Evidence => cell(&d.evidence.join("; ")),
          Role::Scenarios => cell(&d.test_scenarios.join("; ")),
          Role::Summary | Role::Other => String::new(),
        })
        .collect();
      cells.resize(width, String::new());
      let last = cells.last_mut().expect("at least one cell");
      let gap = if last.is_empty() { "" } else { " " };
      last.push_str(&format!("{gap}{ROW_MARK}{} -->", short_id(&d.id)));
      layout::render_row(&like, &cells)
    })
    .collect();
  if !rows.is_empty() {
    let (at, inserted) = lines_after(text, &t.table.last, &rows);
    splices.push((at..at, inserted));
  }
  let mut out = apply(text, splices);
  // The `####` region an earlier version wrote would show each decision twice.
  if mnotes::region_range(&out, mnotes::DECISIONS).is_some() {
    out = mnotes::set_region(&out, mnotes::DECISIONS, &|_| String::new());
  }
  (out, marked)
}

/// A `**Decision: X**` block with its bullets.
fn render_block(d: &LogDecision) -> String {
  let mut out = format!("**Decision: {}**\n", one_line(&d.decision).replace('*', "\\*"));
  out.push_str(&format!("- **Date**: {}\n", one_line(&d.timestamp)));
  if let Some(r) = d.rationale.as_deref().filter(|r| !r.trim().is_empty()) {
    out.push_str(&format!("- **Rationale**: {}\n", one_line(r)));
  }
  for e in d.evidence.iter().filter(|e| !e.trim().is_empty()).take(super::decision::MAX_ITEMS) {
    out.push_str(&format!("- **Evidence**: {}\n", one_line(e)));
  }
  for t in d.test_scenarios.iter().filter(|t| !t.trim().is_empty()).take(super::decision::MAX_ITEMS) {
    out.push_str(&format!("- **Test Scenario**: {}\n", one_line(t)));
  }
  out.push_str(&format!("- **Session**: `{}` · **Id**: `{}`\n", one_line(&d.session_id), short_id(&d.id)));
  out
}

/// A dated bullet in the style of `like` (bullet, bold or not, separator; a bare date when
/// `like` has one).
fn render_dated(like: &str, d: &LogDecision) -> String {
  let (body, kv) = match (layout::bullet_end(like), layout::key_value(like)) {
    (Some(b), Some(kv)) => (b, kv),
    _ => return format!("- **{}:** {}\n", d.timestamp.get(..10).unwrap_or(&d.timestamp), one_line(&d.decision)),
  };
  let bullet = layout::next_bullet(like, body, 1);
  let marker = &like[body..kv.key.start];
  let mut mid = like[kv.key.end..kv.value.start].to_string();
  if !mid.ends_with([' ', '\t']) {
    mid.push(' ');
  }
  let key_len = kv.key.len();
  let when = if key_len <= 10 { d.timestamp.get(..10).unwrap_or(&d.timestamp) } else { &d.timestamp };
  // A bulleted list continues its number only within one list; the region starts a new one.
  let bullet = if bullet.trim_start().starts_with(|c: char| c.is_ascii_digit()) { "1. ".to_string() } else { bullet };
  format!("{bullet}{marker}{when}{mid}{}\n", one_line(&d.decision))
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::ledger::notes::{ContextItem, IdentifierRow, NotesDoc, Question};
  use crate::ledger::tests::Rng;

  const INSTALL: &str = include_str!("../../testdata/notes/install-layout.md");
  const BLOCKS: &str = include_str!("../../testdata/notes/decision-blocks.md");
  const DATED: &str = include_str!("../../testdata/notes/dated-bullets.md");

  fn day(d: &str) -> Option<i64> {
    parse_ms(&format!("{d}T00:00:00Z"))
  }

  fn decision(id: &str, text: &str) -> LogDecision {
    LogDecision {
      id: format!("{id}{}", "0".repeat(64 - id.len())),
      timestamp: "2026-03-01T09:30:00.000Z".into(),
      decision: text.into(),
      rationale: Some("because | it\nholds".into()),
      evidence: vec!["`fn a()` [${PROJECT_ROOT}/src/a.rs:3]".into()],
      test_scenarios: vec!["a -> b".into()],
      agent: "agent-7".into(),
      session_id: "s-1".into(),
    }
  }

  #[test]
  fn the_install_layout_is_read_completely() {
    let doc = NotesDoc::new(INSTALL);
    let d = doc.decisions();
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].decision, "Keep CLAUDE.md as symlink to AGENTS.md");
    assert_eq!(d[0].title, d[0].decision);
    assert_eq!(d[0].rationale.as_deref(), Some("Project uses AGENTS.md for all agent instructions"));
    assert_eq!(d[0].ts_ms, day("2026-02-02"));
    assert_eq!(d[0].heading, "2026-02-02 - Keep CLAUDE.md as symlink to AGENTS.md");
    assert_eq!(
      d[0].text,
      "| 2026-02-02 | Keep CLAUDE.md as symlink to AGENTS.md | Project uses AGENTS.md for all agent instructions |"
    );
    assert_eq!(d[1].decision, "R2 + Git dual persistence");
    assert_eq!(d[1].rationale.as_deref(), Some("Hot state in R2, cold backup to git for durability"));
    assert_eq!(
      doc.session_log(),
      vec![SessionLogRow {
        timestamp: "2026-02-02".into(),
        agent: "claude-opus-4.5".into(),
        summary: "Updated Loa v1.7.2 -> v1.16.0, resolved merge conflicts".into(),
        extra: vec![],
      }]
    );
    assert_eq!(
      doc.sub_goals(),
      vec!["**PRD complete**: Loa Cloud Stack v0.2.0", "Next: `/implement sprint-1` to begin Foundation sprint"]
    );
    assert!(doc.technical_debt().is_empty());
    assert!(doc.blockers().is_empty());
    // The session log is not an identifiers table, nor are its rows decisions.
    assert!(doc.identifiers().is_empty());
  }

  #[test]
  fn decision_blocks_and_lists_are_read_completely() {
    let doc = NotesDoc::new(BLOCKS);
    let d = doc.decisions();
    assert_eq!(d.len(), 2, "{d:#?}");
    assert_eq!(d[0].decision, "Follow the plugin registry pattern for the indexer");
    assert_eq!(d[0].rationale.as_deref(), Some("every integration registers the same way, so one loader serves all"));
    assert_eq!(
      d[0].extra,
      vec![
        ("Pattern".to_string(), "registry keyed by capability name".to_string()),
        ("Source".to_string(), "docs/integrations.md:72-94".to_string())
      ]
    );
    assert!(d[0].text.starts_with("**Decision: Follow") && d[0].text.ends_with("docs/integrations.md:72-94"));
    assert_eq!(d[1].decision, "Keep the index on local disk");
    assert_eq!(d[1].agent.as_deref(), Some("platform-agent"));
    assert_eq!(d[1].ts_ms, None);
    assert_eq!(
      doc.sub_goals(),
      vec!["Wire the search index into the CLI", "Port the importer; it must keep every column of the old export"]
    );
    assert_eq!(
      doc.technical_debt(),
      vec![
        "`scan.rs` walks the tree twice (see [issue](https://example.invalid/12))",
        "[ ] Config loader ignores `XDG_CONFIG_HOME`"
      ]
    );
    assert_eq!(doc.blockers(), vec!["Waiting on the storage team's quota increase"]);
    // A session log with a header only has no rows.
    assert!(doc.session_log().is_empty());
  }

  #[test]
  fn dated_bullets_and_a_session_log_with_more_columns() {
    let doc = NotesDoc::new(DATED);
    let d = doc.decisions();
    assert_eq!(d.len(), 2, "{d:#?}");
    assert_eq!(d[0].decision, "Export as JSON Lines, one record per line, so a partial file is still readable");
    assert_eq!(d[0].ts_ms, day("2026-04-12"));
    assert_eq!(d[1].decision, "Drop the legacy CSV exporter");
    assert!(d[1].text.contains("nested note"));
    let log = doc.session_log();
    assert_eq!(log.len(), 2);
    assert_eq!(log[1].summary, "Exporter tests green");
    assert_eq!(log[1].timestamp, "2026-04-13");
    assert_eq!(log[1].extra, vec![("Branch".to_string(), "feat/export".to_string())]);
    assert_eq!(doc.blockers(), vec!["None"]);
  }

  #[test]
  fn decision_tables_in_other_columns_and_layout_variants() {
    let text = "## Decision Log\r\n\r\n| Timestamp | Agent | Decision | Rationale |\r\n|---|---|---|---|\r\n\
      | 2026-01-05T10:00:00Z | planner | Use `a \\| b` | fast   |\r\n\
      \r\n## Decision Log (old)\r\n";
    let d = NotesDoc::new(text).decisions();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].decision, "Use `a | b`");
    assert_eq!(d[0].agent.as_deref(), Some("planner"));
    assert_eq!(d[0].ts_ms, parse_ms("2026-01-05T10:00:00Z"));
    let text = "### 2. DECISION LOG:\n\nDecision | Rationale | Date | Decided By\n--- | --- | --- | ---\n\
      **Ship it** | ready | 2026-01-06 | lead\n";
    let d = NotesDoc::new(text).decisions();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].decision, "**Ship it**");
    assert_eq!(d[0].agent.as_deref(), Some("lead"));
    assert_eq!(d[0].ts_ms, day("2026-01-06"));
    // Bold blocks with other separators, `__` bold, a dated bullet with a full instant.
    let text = "## Decision Log\n__Decision — Use a queue__\n* **Rationale:** bursts\n\n\
      1. 2026-01-07T08:00:00Z - Retry three times\n- 2026-13-40: not a date\n";
    let d = NotesDoc::new(text).decisions();
    assert_eq!(d.len(), 2, "{d:#?}");
    assert_eq!((d[0].decision.as_str(), d[0].rationale.as_deref()), ("Use a queue", Some("bursts")));
    assert_eq!((d[1].decision.as_str(), d[1].ts_ms), ("Retry three times", parse_ms("2026-01-07T08:00:00Z")));
  }

  #[test]
  fn a_decision_goes_into_the_table_as_a_row_and_only_its_row_changes() {
    let d = decision("ab12", "Use a | pipe\nand a newline <b>");
    let out = write_decisions(INSTALL, std::slice::from_ref(&d)).expect("a table log");
    let want = INSTALL.replace(
      "cold backup to git for durability |\n",
      "cold backup to git for durability |\n\
       | 2026-03-01 | Use a \\| pipe and a newline &lt;b> | because \\| it holds <!-- loa:decision ab1200000000 --> |\n",
    );
    assert_eq!(out, want);
    let read = NotesDoc::new(out.clone()).decisions();
    assert_eq!(read.len(), 3);
    assert_eq!(read[2].decision, "Use a | pipe and a newline &lt;b>");
    assert_eq!(read[2].rationale.as_deref(), Some("because | it holds"));
    // Idempotent; once the memory is gone (forgotten), its row goes and nothing else changes.
    assert_eq!(write_decisions(&out, std::slice::from_ref(&d)).as_deref(), Some(out.as_str()));
    assert_eq!(write_decisions(&out, &[]).as_deref(), Some(INSTALL));
    // A comment a person quotes in a cell does not make the row consolidation's.
    let quoted =
      INSTALL.replace("for durability |", "for durability `<!-- loa:decision 0123 -->` | <!-- loa:decision zz -->");
    assert_eq!(write_decisions(&quoted, &[]).as_deref(), Some(quoted.as_str()));
    // A decision a human row already states gets no second row.
    let same = decision("cd34", "r2 + git dual persistence");
    assert_eq!(write_decisions(INSTALL, &[same]).as_deref(), Some(INSTALL));
  }

  #[test]
  fn table_rows_keep_the_table_columns_and_drop_an_old_region() {
    let text = "## Decision Log\n| Timestamp | Agent | Decision | Rationale | Decided By |\n|---|---|---|---|---|\n\
      | 2026-01-01T00:00:00Z | a | Old | r | me |\n\n<!-- loa:begin decisions -->\n#### 2026-03-01T09:30:00.000Z - X\n**Decision**: X\n<!-- loa:end decisions -->\n";
    let out = write_decisions(text, &[decision("ef56", "X")]).unwrap();
    assert!(
      out.contains(
        "| Old | r | me |\n| 2026-03-01T09:30:00.000Z | agent-7 | X | because \\| it holds | agent-7 <!-- loa:decision ef5600000000 --> |\n"
      ),
      "{out}"
    );
    assert!(out.contains("<!-- loa:begin decisions -->\n<!-- loa:end decisions -->"), "{out}");
    assert_eq!(NotesDoc::new(out).decisions().len(), 2);
  }

  #[test]
  fn new_rows_take_the_line_end_of_the_table_s_last_row() {
    let row = "| 2026-03-01 | X <!-- loa:decision ef5600000000 --> |";
    let d = [decision("ef56", "X")];
    // The last row's own line end, CRLF or LF.
    for nl in ["\r\n", "\n"] {
      let text =
        format!("## Decision Log{nl}| Date | Decision |{nl}|---|---|{nl}| 2026-01-01 | Old |{nl}{nl}## Next{nl}");
      let want = text.replace(&format!("| Old |{nl}"), &format!("| Old |{nl}{row}{nl}"));
      assert_eq!(write_decisions(&text, &d).as_deref(), Some(want.as_str()));
    }
    // A last row that ends the file without one: each new row starts with the document's.
    for nl in ["\r\n", "\n"] {
      let text = format!("## Decision Log{nl}| Date | Decision |{nl}|---|---|{nl}| 2026-01-01 | Old |");
      assert_eq!(write_decisions(&text, &d), Some(format!("{text}{nl}{row}")));
    }
  }

  #[test]
  fn blocks_and_dated_logs_get_their_region_in_their_style() {
    let d = decision("ab12", "Cache ** the index");
    let out = write_decisions(BLOCKS, std::slice::from_ref(&d)).unwrap();
    assert!(out.starts_with(BLOCKS.trim_end_matches('\n')), "{out}");
    assert!(out.contains("**Decision: Cache \\*\\* the index**\n- **Date**: 2026-03-01T09:30:00.000Z\n- **Rationale**: because | it holds\n"), "{out}");
    let read = NotesDoc::new(out.clone()).decisions();
    assert_eq!(read.len(), 3);
    assert_eq!(read[2].decision, "Cache ** the index");
    assert_eq!(read[2].evidence, vec!["`fn a()` [${PROJECT_ROOT}/src/a.rs:3]"]);
    assert_eq!(read[2].test_scenarios, vec!["a -> b"]);
    assert_eq!(write_decisions(&out, std::slice::from_ref(&d)).as_deref(), Some(out.as_str()));

    let out = write_decisions(DATED, std::slice::from_ref(&d)).unwrap();
    assert!(
      out.contains("<!-- loa:begin decisions -->\n- **2026-03-01:** Cache ** the index\n<!-- loa:end decisions -->"),
      "{out}"
    );
    let read = NotesDoc::new(out.clone()).decisions();
    assert_eq!(read.len(), 3);
    assert_eq!((read[2].decision.as_str(), read[2].ts_ms), ("Cache ** the index", day("2026-03-01")));
    assert_eq!(write_decisions(&out, std::slice::from_ref(&d)).as_deref(), Some(out.as_str()));
    // A log of `####` entries (the seed's) or no log: the caller's region, as before.
    assert!(write_decisions(include_str!("../../testdata/seeds/examples/NOTES.md"), std::slice::from_ref(&d)).is_none());
    assert!(write_decisions("# Notes\n", &[d]).is_none());
  }

  /// What the random edits write: pieces of markdown, tables and the region's end marker.
  const PIECES: [&str; 12] = [
    "plain",
    "## Heading",
    "\n",
    "|",
    "```",
    "**bold**",
    "- [ ]",
    "é✓",
    "<!-- loa:end decisions -->",
    "\\",
    "---",
    ":",
  ];

  #[test]
  fn random_edits_of_these_layouts_keep_every_foreign_line() {
    for (name, layout) in [("install", INSTALL), ("blocks", BLOCKS), ("dated", DATED)] {
      for text in [layout.to_string(), layout.replace('\n', "\r\n")] {
        let mut rng = Rng::new(0x2545_f491_4f6c_dd1d, &PIECES, 5);
        let mut doc = NotesDoc::new(text.clone());
        let foreign: Vec<&str> = text.lines().collect();
        let human = doc.decisions().len();
        let pool: Vec<LogDecision> =
          (0..6).map(|i| decision(&format!("{i:02x}"), &format!("d{i} {}", rng.text()))).collect();
        for round in 0..40 {
          match rng.next() % 4 {
            0 => {
              let mut all = doc.active_context();
              all.push(ContextItem { key: format!("k{}", rng.next() % 3), value: rng.text() });
              all.dedup_by(|a, b| a.key == b.key);
              doc.set_active_context(&all);
            }
            1 => {
              let mut qs = doc.pending_questions();
              qs.push(Question { text: format!("q{}?", rng.next() % 3), done: rng.next().is_multiple_of(2) });
              qs.dedup_by(|a, b| a.text == b.text);
              doc.set_pending_questions(&qs);
            }
            2 => {
              let rows = vec![IdentifierRow {
                identifier: format!("${{PROJECT_ROOT}}/src/f{}.rs:1", rng.next() % 2),
                purpose: rng.text(),
                last_verified: "now".into(),
              }];
              doc.set_identifiers(&rows);
            }
            _ => {
              let shown: Vec<LogDecision> = pool.iter().filter(|_| rng.next().is_multiple_of(2)).cloned().collect();
              let next = write_decisions(doc.text(), &shown).unwrap_or_else(|| panic!("{name}: style lost"));
              assert_eq!(write_decisions(&next, &shown).as_deref(), Some(next.as_str()), "{name} round {round}");
              doc = NotesDoc::new(next);
              assert_eq!(doc.decisions().len(), human + shown.len(), "{name} round {round}:\n{}", doc.text());
            }
          }
          let mut at = 0;
          for line in &foreign {
            at += doc.text()[at..]
              .find(line)
              .unwrap_or_else(|| panic!("{name} round {round}: lost {line:?}\n{}", doc.text()))
              + line.len();
          }
          assert_eq!(doc.session_log(), NotesDoc::new(text.clone()).session_log(), "{name} round {round}");
          assert_eq!(doc.sub_goals(), NotesDoc::new(text.clone()).sub_goals(), "{name} round {round}");
        }
        // Every decision forgotten: the file is back to what the human wrote, plus the
        // ledger's own regions.
        let cleared = write_decisions(doc.text(), &[]).unwrap();
        assert_eq!(NotesDoc::new(cleared).decisions().len(), human, "{name}");
      }
    }
  }

  #[test]
  fn a_huge_decision_table_is_read_in_one_pass() {
    let mut text = String::from("## Decision Log\n| Date | Decision | Rationale |\n|---|---|---|\n");
    for i in 0..100_000 {
      text.push_str(&format!("| 2026-01-01 | d{i} | r |\n"));
    }
    text.push_str(&format!("\n- **2026-01-02:** {}\n", "x".repeat(1 << 20)));
    let doc = NotesDoc::new(text.clone());
    assert_eq!(doc.decisions().len(), 100_001);
    let out = write_decisions(&text, &[decision("aa", "new")]).unwrap();
    assert_eq!(NotesDoc::new(out).decisions().len(), 100_002);
  }
}
