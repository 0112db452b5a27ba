//! The Session Continuity lists as the seed (000 §5.1) and people write them, outside the
//! ledger's marked regions: found by the markdown parser, read, and edited one line at a time.
//!
//! ```markdown
//! ### Active Context
//! - **Current Bead**: bd-x7y8 (Implementing JWT refresh)
//! ### Lightweight Identifiers
//! | Identifier | Purpose | Last Verified |
//! |------------|---------|---------------|
//! | ${PROJECT_ROOT}/src/auth/jwt.ts:45-67 | Token validation logic | 14:25:00Z |
//! ### Pending Questions
//! - [ ] Should grace period be configurable per-client?
//! ```
//!
//! A section is found by its heading's meaning ([`mnotes::heading_means`]: any level, any
//! case, numbering and trailing words allowed). Only top-level list items and table rows the
//! parser sees count: a line in a code fence, an HTML comment or a marked region is not an
//! entry. Tolerated variants: `-`, `*`, `+` and numbered bullets; keys in `**bold**`,
//! `__bold__` or plain, with the colon inside or outside the bold; `:`, `—`, `–` or ` - ` as
//! separator; table columns found by header name in any order, extra columns kept; escaped
//! pipes; trailing spaces; CRLF. Every scan is one pass over the section (each line is looked
//! at a bounded number of times), so a 100,000-row table or a 1 MiB line costs linear time.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::memory::notes as mnotes;

/// Where one entry is, in absolute byte offsets of the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
  /// Its first line, without the terminator.
  pub content: Range<usize>,
  /// The end of its text (the first line's content end, or the last continuation line's): a
  /// list item's text can wrap onto the lines below it.
  pub text_end: usize,
  /// Where the entry ends, terminator included (after a nested list or block of the item).
  pub end: usize,
}

impl Line {
  /// The terminator of the entry's last line (`\r\n`, `\n`, or none at the end of the file).
  pub fn newline(&self, text: &str) -> &'static str {
    let before = &text[..self.end];
    if before.ends_with("\r\n") {
      "\r\n"
    } else if before.ends_with('\n') {
      "\n"
    } else {
      ""
    }
  }

  fn single(l: Line, base: usize) -> Line {
    Line { content: l.content.start + base..l.content.end + base, text_end: l.content.end + base, end: l.end + base }
  }
}

/// The line holding the last non-blank byte of `text[from..to]` (the line at `from` when all
/// of it is blank).
fn last_line(text: &str, from: usize, to: usize) -> Line {
  let last = text[from..to].trim_end().char_indices().next_back().map_or(from, |(i, _)| from + i);
  line_at(text, line_start(text, last).max(from))
}

/// A table of the section.
#[derive(Debug, Clone)]
pub(crate) struct Table {
  pub header: Vec<String>,
  pub rows: Vec<Line>,
  /// The table's last line (the delimiter row when it has no data rows).
  pub last: Line,
}

/// What a section holds outside the marked regions.
#[derive(Debug, Default)]
pub(crate) struct Scan {
  /// Top-level list items, first line of each.
  pub items: Vec<Line>,
  pub tables: Vec<Table>,
}

fn line_at(text: &str, start: usize) -> Line {
  let end = text[start..].find('\n').map_or(text.len(), |i| start + i + 1);
  let mut content_end = if end > start && text.as_bytes()[end - 1] == b'\n' { end - 1 } else { end };
  if content_end > start && text.as_bytes()[content_end - 1] == b'\r' {
    content_end -= 1;
  }
  Line { content: start..content_end, text_end: content_end, end }
}

fn line_start(text: &str, at: usize) -> usize {
  text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// The section titled `title` (by meaning) scanned for entries; `None` when there is no such
/// section.
pub(crate) fn scan(text: &str, title: &str) -> Option<Scan> {
  let range = mnotes::section_range(text, title)?;
  let base = range.start;
  let section = &text[range];
  let regions = mnotes::marked_regions(section);
  let outside = |at: usize| !mnotes::in_spans(&regions, at);
  let mut out = Scan::default();
  let mut depth = 0usize;
  let mut table: Option<Table> = None;
  let mut last_start = None;
  // The depth-1 item being read: its index, whether its text has ended, paragraphs seen.
  let mut open: Option<(usize, bool, u32)> = None;
  for (event, r) in Parser::new_ext(section, Options::ENABLE_TABLES).into_offset_iter() {
    if let Some((i, ended, paragraphs)) = open.as_mut() {
      // The item's text ends where a block of its own starts (a nested list, code, a quote, a
      // second paragraph): those lines stay as they are when the entry is rewritten.
      let block = match &event {
        Event::Start(Tag::Paragraph) => {
          *paragraphs += 1;
          *paragraphs > 1
        }
        Event::Start(
          Tag::List(_) | Tag::CodeBlock(_) | Tag::BlockQuote(_) | Tag::Table(_) | Tag::Heading { .. } | Tag::HtmlBlock,
        )
        | Event::Rule => true,
        _ => false,
      };
      if block && !*ended && depth == 1 {
        *ended = true;
        let item = &mut out.items[*i];
        let stop = line_start(section, r.start).max(item.content.start - base);
        item.text_end =
          last_line(section, item.content.start - base, stop).content.end.max(item.content.end - base) + base;
      }
    }
    match event {
      Event::Start(Tag::List(_)) => depth += 1,
      Event::End(TagEnd::List(_)) => depth = depth.saturating_sub(1),
      Event::Start(Tag::Item) if depth == 1 => {
        let start = line_start(section, r.start);
        // Two items never start on one line at depth 1; the check keeps each line once.
        if outside(start) && last_start != Some(start) {
          last_start = Some(start);
          out.items.push(Line::single(line_at(section, start), base));
          open = Some((out.items.len() - 1, false, 0));
        }
      }
      Event::End(TagEnd::Item) if depth == 1 => {
        if let Some((i, ended, _)) = open.take() {
          let item = &mut out.items[i];
          let last = last_line(section, item.content.start - base, r.end.max(item.content.start - base));
          item.end = last.end.max(item.end - base) + base;
          if !ended {
            item.text_end = last.content.end.max(item.content.end - base) + base;
          }
        }
      }
      Event::Start(Tag::Table(_)) => {
        table = Some(Table { header: Vec::new(), rows: Vec::new(), last: Line { content: 0..0, text_end: 0, end: 0 } })
      }
      Event::Start(Tag::TableHead) => {
        if let Some(t) = table.as_mut() {
          let head = line_at(section, line_start(section, r.start));
          t.header = split_cells(&section[head.content.clone()]);
          // The delimiter row is the line after the header.
          let delimiter = line_at(section, head.end.min(section.len()));
          t.last = Line::single(delimiter, base);
        }
      }
      Event::Start(Tag::TableRow) => {
        if let Some(t) = table.as_mut() {
          let row = line_at(section, line_start(section, r.start));
          let row = Line::single(row, base);
          t.last = row.clone();
          if outside(row.content.start - base) {
            t.rows.push(row);
          }
        }
      }
      Event::End(TagEnd::Table) => {
        if let Some(t) = table.take() {
          if outside(t.last.content.start.saturating_sub(base)) {
            out.tables.push(t);
          }
        }
      }
      _ => {}
    }
  }
  Some(out)
}

/// The cells of a table row, `\|` read as `|`, each trimmed.
pub(crate) fn split_cells(row: &str) -> Vec<String> {
  let inner = row.trim().strip_prefix('|').unwrap_or(row.trim());
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

/// Where a list item's text starts in `line`: after the indentation, the bullet (`-`, `*`, `+`,
/// `1.`, `1)`) and the blanks after it.
pub(crate) fn bullet_end(line: &str) -> Option<usize> {
  let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
  let rest = &line[indent..];
  let bullet = if rest.starts_with(['-', '*', '+']) {
    1
  } else {
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 9 || !matches!(rest.as_bytes().get(digits), Some(b'.' | b')')) {
      return None;
    }
    digits + 1
  };
  let tail = &rest[bullet..];
  if !tail.is_empty() && !tail.starts_with([' ', '\t']) {
    return None;
  }
  Some(indent + bullet + (tail.len() - tail.trim_start_matches([' ', '\t']).len()))
}

/// Whether `text` can follow a bullet as it is: it starts with a letter or digit and not with
/// a number and `.`/`)`, so it cannot open a heading, a quote, a code block, a thematic break
/// or a nested list inside the item (which would end the section or hide the entry).
pub(crate) fn plain_safe(text: &str) -> bool {
  let t = text.trim_start();
  let digits = t.bytes().take_while(u8::is_ascii_digit).count();
  t.chars().next().is_some_and(char::is_alphanumeric)
    && !matches!(t.as_bytes().get(digits), Some(b'.' | b')') if digits > 0)
}

/// `- **Key**: value` and its variants, as offsets into the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyValue {
  pub key: Range<usize>,
  /// The value, trailing blanks excluded (empty, at the end of the separator, when there is
  /// none).
  pub value: Range<usize>,
  /// Whether the key is in bold.
  pub bold: bool,
}

/// Longest key read from a line without bold: past it, a colon is prose, not a separator.
const MAX_PLAIN_KEY: usize = 100;

/// The key and value of an Active Context line.
pub(crate) fn key_value(line: &str) -> Option<KeyValue> {
  let body = bullet_end(line)?;
  let text = &line[body..];
  let trimmed_end = body + text.trim_end().len();
  let skip_blanks = |at: usize| at + (line[at..].len() - line[at..].trim_start_matches([' ', '\t']).len());
  for marker in ["**", "__"] {
    let Some(rest) = text.strip_prefix(marker) else { continue };
    let close = rest.find(marker)?;
    let inner = &rest[..close];
    let after = body + marker.len() + close + marker.len();
    // Blanks inside the bold are not part of the key.
    let key_start = body + marker.len() + (inner.len() - inner.trim_start().len());
    let inner_trimmed = inner.trim();
    if let Some(key) = inner_trimmed.strip_suffix(':') {
      let key = key.trim_end();
      if key.is_empty() {
        return None;
      }
      let value = skip_blanks(after).min(trimmed_end.max(after));
      return Some(KeyValue {
        key: key_start..key_start + key.len(),
        value: value..trimmed_end.max(value),
        bold: true,
      });
    }
    if inner_trimmed.is_empty() {
      return None;
    }
    let at = skip_blanks(after);
    let sep = ['：', ':', '—', '–', '-'].into_iter().find(|c| line[at..].starts_with(*c))?;
    let value = skip_blanks(at + sep.len_utf8()).min(trimmed_end.max(at + sep.len_utf8()));
    return Some(KeyValue {
      key: key_start..key_start + inner_trimmed.len(),
      value: value..trimmed_end.max(value),
      bold: true,
    });
  }
  // Without bold: the first separator within the key's length.
  let mut sep = None;
  for (i, c) in text.char_indices() {
    if i > MAX_PLAIN_KEY {
      break;
    }
    let next_blank = || text[i + c.len_utf8()..].chars().next().is_none_or(char::is_whitespace);
    match c {
      ':' | '：' if next_blank() => sep = Some((i, c.len_utf8())),
      '—' | '–' => sep = Some((i, c.len_utf8())),
      ' ' if text[i..].starts_with(" - ") => sep = Some((i, 2)),
      '`' | '[' | '<' => break,
      _ => {}
    }
    if sep.is_some() {
      break;
    }
  }
  let (i, len) = sep?;
  let key = text[..i].trim_end();
  if key.is_empty() {
    return None;
  }
  let value = skip_blanks(body + i + len).min(trimmed_end.max(body + i + len));
  Some(KeyValue { key: body..body + key.len(), value: value..trimmed_end.max(value), bold: false })
}

/// A Pending Questions line: its text and, for a task item, where its check mark is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QuestionLine {
  pub text: Range<usize>,
  /// The byte between the brackets of `[ ]` / `[x]`, when the item has one.
  pub mark: Option<usize>,
  pub done: bool,
  /// Where the item's text starts (after the bullet).
  pub body: usize,
}

/// The question of a Pending Questions line (a task item or a plain bullet).
pub(crate) fn question(line: &str) -> Option<QuestionLine> {
  let body = bullet_end(line)?;
  let text = &line[body..];
  let end = body + text.trim_end().len();
  let (mark, done, start) = match text.as_bytes() {
    [b'[', m @ (b' ' | b'x' | b'X'), b']', rest @ ..] if rest.first().is_none_or(|b| *b == b' ' || *b == b'\t') => {
      let start = body + 3;
      (Some(body + 1), *m != b' ', start + (line[start..].len() - line[start..].trim_start().len()))
    }
    _ => (None, false, body),
  };
  (end > start).then_some(QuestionLine { text: start..end, mark, done, body })
}

/// A Lightweight Identifiers bullet, for a section that keeps them as a list rather than a
/// table: `- ${PROJECT_ROOT}/src/a.ts:1-5 - purpose` (the identifier in a code span or not;
/// `:`, `—`, `–` or `-` before the purpose, or nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IdentifierItem {
  /// The identifier, without backticks.
  pub identifier: Range<usize>,
  /// Whether it is in a code span.
  pub ticked: bool,
  /// The purpose (empty, at the end of the line, when there is none).
  pub purpose: Range<usize>,
  /// Where the item's text starts.
  pub body: usize,
}

/// The identifier item of a line, when the line is one (its first word is a
/// `${PROJECT_ROOT}/...` identifier).
pub(crate) fn identifier_item(line: &str) -> Option<IdentifierItem> {
  let body = bullet_end(line)?;
  let text = &line[body..];
  let end = body + text.trim_end().len();
  let (identifier, ticked, after) = match text.strip_prefix('`') {
    Some(rest) => {
      let close = rest.find('`')?;
      (body + 1..body + 1 + close, true, body + close + 2)
    }
    None => {
      let word = text.find(char::is_whitespace).unwrap_or(text.len());
      let id = text[..word].trim_end_matches([':', ',', ';']);
      (body..body + id.len(), false, body + id.len())
    }
  };
  if !line[identifier.clone()].trim_start().starts_with(super::identifier::PREFIX) {
    return None;
  }
  let rest = &line[after..end.max(after)];
  let mut at = after + (rest.len() - rest.trim_start().len());
  if let Some(sep) = ['—', '–', '-', ':'].into_iter().find(|c| line[at..].starts_with(*c)) {
    at += sep.len_utf8();
  }
  let at = (at + (line[at..].len() - line[at..].trim_start().len())).min(end.max(after));
  Some(IdentifierItem { identifier, ticked, purpose: at..end.max(at), body })
}

/// Which column of an identifiers table holds what, found by header name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Columns {
  pub identifier: usize,
  pub purpose: Option<usize>,
  pub last_verified: Option<usize>,
}

impl Columns {
  /// The columns of a table whose header names an identifier column; `None` for other tables.
  pub fn of(header: &[String]) -> Option<Columns> {
    let find = |names: &[&str]| header.iter().position(|h| names.iter().any(|n| mnotes::heading_means(h, n)));
    Some(Columns {
      identifier: find(&["Identifier", "Identifiers", "Path", "Reference", "Location"])?,
      purpose: find(&["Purpose", "Description", "What", "Why"]),
      last_verified: find(&["Last Verified", "Verified", "Last Checked", "Checked"]),
    })
  }
}

/// An identifier cell as the ledger compares it: without the code span it may be written in.
pub(crate) fn bare_identifier(cell: &str) -> &str {
  let t = cell.trim();
  t.strip_prefix('`').and_then(|s| s.strip_suffix('`')).map_or(t, str::trim)
}

/// A table row with `cells` (escaped), in the row style `like` has (leading and trailing pipe).
pub(crate) fn render_row(like: &str, cells: &[String]) -> String {
  let t = like.trim();
  let lead = if t.starts_with('|') || like.is_empty() { "| " } else { "" };
  let trail = if (t.ends_with('|') && !t.ends_with("\\|")) || like.is_empty() { " |" } else { "" };
  format!("{lead}{}{trail}", cells.join(" | "))
}

/// The bullet (indentation and blanks included) of the entry `by` places after `line`, whose
/// text starts at `body`: `-`, `*`, `+` as they are, a number plus `by`.
pub(crate) fn next_bullet(line: &str, body: usize, by: usize) -> String {
  let lead = &line[..body];
  let indent = lead.len() - lead.trim_start_matches([' ', '\t']).len();
  let digits = lead[indent..].bytes().take_while(u8::is_ascii_digit).count();
  match lead[indent..indent + digits].parse::<u64>() {
    Ok(n) if digits > 0 => format!("{}{}{}", &lead[..indent], n.saturating_add(by as u64), &lead[indent + digits..]),
    _ => lead.to_string(),
  }
}

/// `text` with each range replaced (ranges sorted here; an insertion is an empty range; a range
/// overlapping an earlier one is dropped): how the Session Continuity lists (`notes`) and the
/// Decision Log table (`notes_log`) are edited, every byte outside the ranges kept.
pub(crate) fn apply(text: &str, mut splices: Vec<(Range<usize>, String)>) -> String {
  if splices.is_empty() {
    return text.to_string();
  }
  splices.sort_by_key(|(r, _)| (r.start, r.end));
  let mut out = String::with_capacity(text.len() + splices.iter().map(|(_, s)| s.len()).sum::<usize>());
  let mut at = 0;
  for (range, with) in splices {
    if range.start < at {
      continue;
    }
    out.push_str(&text[at..range.start]);
    out.push_str(&with);
    at = range.end;
  }
  out.push_str(&text[at..]);
  out
}

/// Where to insert the new lines `rendered` after the entry `last`, and the text to insert:
/// each line in the line end `last` has (or the document's, when `last` ends the file without
/// one, which the first new line then starts with).
pub(crate) fn lines_after(text: &str, last: &Line, rendered: &[String]) -> (usize, String) {
  let own = last.newline(text);
  let nl = if own.is_empty() { mnotes::newline_of(text) } else { own };
  let mut out = String::new();
  for line in rendered {
    if own.is_empty() {
      out.push_str(nl);
      out.push_str(line);
    } else {
      out.push_str(line);
      out.push_str(nl);
    }
  }
  (last.end, out)
}

#[cfg(test)]
mod tests {
  use super::*;

  fn kv(line: &str) -> Option<(String, String, bool)> {
    key_value(line).map(|k| (line[k.key].to_string(), line[k.value].to_string(), k.bold))
  }

  #[test]
  fn context_lines_in_every_layout() {
    let want = |k: &str, v: &str, b| Some((k.to_string(), v.to_string(), b));
    assert_eq!(
      kv("- **Current Bead**: bd-x7y8 (Implementing JWT refresh)"),
      want("Current Bead", "bd-x7y8 (Implementing JWT refresh)", true)
    );
    assert_eq!(kv("* **Current Bead:** bd-1   "), want("Current Bead", "bd-1", true));
    assert_eq!(kv("  + __Phase__ — review"), want("Phase", "review", true));
    assert_eq!(kv("1. **Phase** - review"), want("Phase", "review", true));
    assert_eq!(kv("- Last Checkpoint: 2024-01-15T14:30:00Z"), want("Last Checkpoint", "2024-01-15T14:30:00Z", false));
    assert_eq!(kv("- Reasoning State — a: b"), want("Reasoning State", "a: b", false));
    assert_eq!(kv("- Current Bead - bd-1"), want("Current Bead", "bd-1", false));
    assert_eq!(kv("- **Empty**:"), want("Empty", "", true));
    assert_eq!(kv("- ** Spaced ** : v"), want("Spaced", "v", true));
    assert_eq!(kv("- see http://example.com"), None);
    assert_eq!(kv("- `a: b` quoted"), None);
    assert_eq!(kv("- just prose"), None);
    assert_eq!(kv("-not a bullet: x"), None);
    assert_eq!(kv("- **bold** but no separator"), None);
    assert_eq!(kv("- **unclosed: x"), None);
    // A long line stays linear: the key is looked for in its first hundred bytes only.
    let long = format!("- {}: x", "a".repeat(1 << 20));
    assert_eq!(kv(&long), None);
  }

  #[test]
  fn plain_text_that_cannot_open_a_block() {
    for ok in ["Should we?", "q0", "2FA enabled?", "Ünïcode"] {
      assert!(plain_safe(ok), "{ok}");
    }
    for bad in ["## Heading", "> quote", "1. nested", "2) nested", "- nested", "```", "---", "", "[x] x", "*x*"] {
      assert!(!plain_safe(bad), "{bad}");
    }
  }

  #[test]
  fn questions_keep_their_check_mark() {
    let q = |line: &str| question(line).map(|q| (line[q.text].to_string(), q.done, q.mark.is_some()));
    assert_eq!(
      q("- [ ] Should grace period be configurable per-client?"),
      Some(("Should grace period be configurable per-client?".into(), false, true))
    );
    assert_eq!(q("* [x] Done one  "), Some(("Done one".into(), true, true)));
    assert_eq!(q("1. [X] Numbered"), Some(("Numbered".into(), true, true)));
    assert_eq!(q("- A plain bullet"), Some(("A plain bullet".into(), false, false)));
    assert_eq!(q("- [ ]"), None);
    assert_eq!(q("- [link](x) text"), Some(("[link](x) text".into(), false, false)));
  }

  #[test]
  fn identifier_items_in_a_list() {
    let i = |line: &str| {
      identifier_item(line).map(|it| (line[it.identifier].to_string(), line[it.purpose].to_string(), it.ticked))
    };
    let id = "${PROJECT_ROOT}/src/a.ts:1-5";
    assert_eq!(i(&format!("- `{id}` - Token logic")), Some((id.into(), "Token logic".into(), true)));
    assert_eq!(i(&format!("* {id}: Token logic  ")), Some((id.into(), "Token logic".into(), false)));
    assert_eq!(i(&format!("1. {id} — a - b")), Some((id.into(), "a - b".into(), false)));
    assert_eq!(i(&format!("- {id}")), Some((id.into(), String::new(), false)));
    assert_eq!(i("- src/a.ts - not an identifier"), None);
    assert_eq!(i("- `unclosed ${PROJECT_ROOT}/a"), None);
  }

  #[test]
  fn identifier_columns_by_header_name() {
    let cols = |h: &[&str]| Columns::of(&h.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(
      cols(&["Identifier", "Purpose", "Last Verified"]),
      Some(Columns { identifier: 0, purpose: Some(1), last_verified: Some(2) })
    );
    assert_eq!(
      cols(&["Last verified", "Notes", "**Identifier**", "purpose"]),
      Some(Columns { identifier: 2, purpose: Some(3), last_verified: Some(0) })
    );
    assert_eq!(cols(&["Name", "Value"]), None);
    assert_eq!(split_cells(r"| a \| b | `c` |"), vec!["a | b", "`c`"]);
    assert_eq!(bare_identifier(" `${PROJECT_ROOT}/a.rs:1` "), "${PROJECT_ROOT}/a.rs:1");
    assert_eq!(render_row("| a | b |", &["x".into(), "y".into()]), "| x | y |");
    assert_eq!(render_row("a | b", &["x".into(), "y".into()]), "x | y");
    assert_eq!(next_bullet("  9. x", 5, 1), "  10. ");
    assert_eq!(next_bullet("1) x", 3, 2), "3) ");
    assert_eq!(next_bullet("* x", 2, 1), "* ");
  }
}
