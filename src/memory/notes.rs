//! NOTES.md editing: the pipeline owns two marked regions and nothing else.
//!
//! ```markdown
//! ## Session Continuity
//! <!-- CRITICAL: Load this section FIRST after /clear (~100 tokens) -->
//!
//! <!-- loa:begin sessions -->
//! - **`agent-1`** · 2026-01-02T10:00:00.000Z → 2026-01-02T10:05:00.000Z · 3 memories (decision 1, learning 2) · latest: ...
//! <!-- loa:end sessions -->
//!
//! ### Active Context
//! ...
//! ### Decision Log
//! (human entries, kept)
//! <!-- loa:begin decisions -->
//! #### 2026-01-02T10:00:00.000Z - Use sliding window expiry
//! **Decision**: ...
//! <!-- loa:end decisions -->
//! ```
//!
//! The document is parsed with `pulldown-cmark` to find headings (ATX and setext) and the marker
//! comments as real HTML blocks, so a heading or a marker inside a fenced code block is text, not
//! structure. A region that exists is replaced in place; a missing one is inserted by section
//! heading: sessions right after the intro of "Session Continuity" (before its first
//! sub-heading), decisions at the end of "Decision Log". Missing headings are appended. Every byte
//! outside the two regions is kept as it was; the only bytes ever added outside them are a
//! missing heading and the blank lines that separate an inserted region from its neighbours.
//!
//! Entry text is put on one line with `<` escaped as `&lt;`, so no content can close a region,
//! open a new one, start a heading or an HTML block.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

pub const SESSIONS: &str = "sessions";
pub const DECISIONS: &str = "decisions";
pub const SESSION_CONTINUITY: &str = "Session Continuity";
pub const DECISION_LOG: &str = "Decision Log";
/// Regions the ledger (`crate::ledger::notes`) owns, each inside the Session Continuity
/// sub-section of the same title: inserted and levelled exactly like the decisions region.
pub const ACTIVE_CONTEXT: &str = "active-context";
pub const IDENTIFIERS: &str = "identifiers";
pub const PENDING_QUESTIONS: &str = "pending-questions";

/// The sub-section of Session Continuity a region lives in.
pub fn section_title(region: &str) -> &'static str {
  match region {
    ACTIVE_CONTEXT => "Active Context",
    IDENTIFIERS => "Lightweight Identifiers",
    PENDING_QUESTIONS => "Pending Questions",
    SESSIONS => SESSION_CONTINUITY,
    _ => DECISION_LOG,
  }
}

/// NOTES.md as created when there is none (the schema of seed 000 §5.1).
pub const TEMPLATE: &str = "# Agent Working Memory (NOTES.md)

## Session Continuity
<!-- CRITICAL: Load this section FIRST after /clear (~100 tokens) -->

### Active Context

### Decision Log
<!-- Decisions survive context wipes - permanent record -->

### Pending Questions
<!-- Carry forward across sessions -->
";

#[derive(Debug, Clone)]
struct Heading {
  level: usize,
  text: String,
  /// Start of the heading's first line.
  start: usize,
}

#[derive(Debug, Clone)]
struct Region {
  name: String,
  /// From the start of the begin marker's line to the end of the end marker's line (newline
  /// included).
  range: Range<usize>,
}

#[derive(Debug, Default)]
struct Outline {
  headings: Vec<Heading>,
  regions: Vec<Region>,
}

fn line_start(text: &str, at: usize) -> usize {
  text[..at].rfind('\n').map_or(0, |i| i + 1)
}

fn line_end(text: &str, at: usize) -> usize {
  text[at..].find('\n').map_or(text.len(), |i| at + i + 1)
}

enum Marker {
  Begin(String),
  End(String),
}

fn marker(html: &str) -> Option<Marker> {
  let inner = html.trim().strip_prefix("<!--")?.strip_suffix("-->")?.trim();
  let rest = inner.strip_prefix("loa:")?;
  let (kind, name) = rest.split_once(' ')?;
  let name = name.trim();
  if name.is_empty() || name.contains(char::is_whitespace) {
    return None;
  }
  match kind {
    "begin" => Some(Marker::Begin(name.to_string())),
    "end" => Some(Marker::End(name.to_string())),
    _ => None,
  }
}

fn outline(text: &str) -> Outline {
  let mut out = Outline::default();
  let mut current: Option<Heading> = None;
  // Open begin markers waiting for their end: (name, start of begin line).
  // Keyed by name, so that a file of many distinct unmatched markers costs linear time.
  let mut open: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
  for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
    match event {
      Event::Start(Tag::Heading { level, .. }) => {
        current = Some(Heading { level: level as usize, text: String::new(), start: line_start(text, range.start) })
      }
      Event::End(TagEnd::Heading(_)) => {
        if let Some(mut h) = current.take() {
          h.text = h.text.trim().to_string();
          out.headings.push(h);
        }
      }
      Event::Text(t) | Event::Code(t) if current.is_some() => current.as_mut().unwrap().text.push_str(&t),
      Event::Html(html) => match marker(&html) {
        Some(Marker::Begin(name)) => {
          // A second begin of the same name before an end orphans the first one: it stays
          // foreign text, so an unmatched marker can never make a region swallow other text.
          open.insert(name, line_start(text, range.start));
        }
        Some(Marker::End(name)) => {
          if let Some(start) = open.remove(&name) {
            out.regions.push(Region { name, range: start..line_end(text, range.start) });
          }
        }
        None => {}
      },
      _ => {}
    }
  }
  // Headings inside owned regions (decision entries) are not structure.
  // One binary search per heading, however many regions a hostile file holds.
  let spans = disjoint(out.regions.iter().map(|r| r.range.clone()).collect());
  out.headings.retain(|h| !in_spans(&spans, h.start));
  out
}

/// `ranges` as disjoint ranges sorted by start (overlapping and nested ones merged).
fn disjoint(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
  ranges.sort_by_key(|r| r.start);
  let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
  for r in ranges {
    match merged.last_mut() {
      Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
      _ => merged.push(r),
    }
  }
  merged
}

/// Whether `at` is inside one of `spans` (disjoint, sorted: see [`marked_regions`]).
pub fn in_spans(spans: &[Range<usize>], at: usize) -> bool {
  let i = spans.partition_point(|r| r.start <= at);
  i > 0 && spans[i - 1].contains(&at)
}

/// The line end `text` is written with: CRLF if it holds one, else LF.
pub(crate) fn newline_of(text: &str) -> &'static str {
  if text.contains("\r\n") {
    "\r\n"
  } else {
    "\n"
  }
}

fn same_heading(a: &str, b: &str) -> bool {
  heading_means(a, b)
}

/// Whether heading text `heading` names the section `title`, by meaning rather than by exact
/// text: compared word by word without case and punctuation, after any leading numbering
/// (`2.`, `2)`, `IV.` is not numbering) and emoji, and with anything after the title's words
/// allowed (`Core Principles (Why I Behave This Way)` names `Core Principles`,
/// `ACTIVE CONTEXT:` names `Active Context`, `3. Pending Questions` names `Pending Questions`).
/// Linear in the heading's length, and stops at the first word that differs.
pub fn heading_means(heading: &str, title: &str) -> bool {
  fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty())
  }
  let same = |a: &str, b: &str| a.chars().flat_map(char::to_lowercase).eq(b.chars().flat_map(char::to_lowercase));
  let mut found = words(heading).skip_while(|w| w.bytes().all(|b| b.is_ascii_digit()));
  words(title).all(|wanted| found.next().is_some_and(|w| same(w, wanted)))
}

/// The blank-line separation needed before inserting at `at`.
fn separator_before(text: &str, at: usize, nl: &str) -> String {
  let before = &text[..at];
  if before.is_empty() || before.ends_with("\n\n") || before.ends_with("\r\n\r\n") {
    String::new()
  } else if before.ends_with('\n') {
    nl.to_string()
  } else {
    format!("{nl}{nl}")
  }
}

fn insert(text: &str, at: usize, block: &str, nl: &str) -> String {
  let mut out = String::with_capacity(text.len() + block.len() + 4);
  out.push_str(&text[..at]);
  out.push_str(&separator_before(text, at, nl));
  out.push_str(block);
  if at < text.len() {
    out.push_str(nl);
  }
  out.push_str(&text[at..]);
  out
}

fn region_text(name: &str, body: &str, nl: &str) -> String {
  let body = if nl == "\n" { body.to_string() } else { body.replace('\n', nl) };
  format!("<!-- loa:begin {name} -->{nl}{body}<!-- loa:end {name} -->{nl}")
}

/// Sets the body of region `name`, rendered by `render(entry_heading_level)`. Returns the new
/// text (equal to `text` when nothing changed).
///
/// The result always holds the region where the next call finds it again, so that applying
/// the same body twice gives the same bytes, whatever foreign markdown surrounds it: a region
/// inserted at its usual place is checked by parsing the result, and when that place is inside
/// a construct the foreign text leaves open (an unclosed code fence, an HTML block that runs to
/// the end of the document), the region goes to the very start of the document instead, where
/// nothing is open yet. If even that would not hold (no known input does this), the text is
/// returned unchanged rather than growing on every run.
pub fn set_region(text: &str, name: &str, render: &dyn Fn(usize) -> String) -> String {
  let nl = newline_of(text);
  let o = outline(text);
  if let Some(region) = o.regions.iter().find(|r| r.name == name) {
    return replace_region(text, &o, region, render, nl);
  }
  let inserted = insert_region(text, &o, name, render, nl);
  if settled(&inserted, name, render) {
    return inserted;
  }
  // Entry headings of a region before any heading sit at level 3 (see `replace_region`).
  let at_start = insert(text, 0, &region_text(name, &render(3), nl), nl);
  if settled(&at_start, name, render) {
    return at_start;
  }
  text.to_string()
}

/// True when `text` holds region `name` and setting its body again changes nothing.
fn settled(text: &str, name: &str, render: &dyn Fn(usize) -> String) -> bool {
  let o = outline(text);
  o.regions
    .iter()
    .find(|r| r.name == name)
    .is_some_and(|region| replace_region(text, &o, region, render, newline_of(text)) == text)
}

/// Replaces the body of an existing region in place.
fn replace_region(text: &str, o: &Outline, region: &Region, render: &dyn Fn(usize) -> String, nl: &str) -> String {
  // Entries sit one level below the section the region is in: the nearest heading before it
  // with the section's title, else the nearest heading before it.
  let title = section_title(&region.name);
  let before = || o.headings.iter().rev().filter(|h| h.start < region.range.start);
  let level = before().find(|h| same_heading(&h.text, title)).or_else(|| before().next()).map_or(2, |h| h.level) + 1;
  let new = region_text(&region.name, &render(level.min(6)), nl);
  format!("{}{}{}", &text[..region.range.start], new, &text[region.range.end..])
}

/// Inserts a missing region at its usual place (see the module docs).
fn insert_region(text: &str, o: &Outline, name: &str, render: &dyn Fn(usize) -> String, nl: &str) -> String {
  let next_heading_after = |index: usize, max_level: Option<usize>| {
    o.headings[index + 1..].iter().find(|h| max_level.is_none_or(|m| h.level <= m)).map_or(text.len(), |h| h.start)
  };
  let continuity = o.headings.iter().position(|h| same_heading(&h.text, SESSION_CONTINUITY));
  if name == SESSIONS {
    return match continuity {
      Some(i) => {
        insert(text, next_heading_after(i, None), &region_text(name, &render(o.headings[i].level + 1), nl), nl)
      }
      None => {
        let block = format!("## {SESSION_CONTINUITY}{nl}{nl}{}", region_text(name, &render(3), nl));
        insert(text, text.len(), &block, nl)
      }
    };
  }
  let title = section_title(name);
  match o.headings.iter().position(|h| same_heading(&h.text, title)) {
    Some(i) => {
      let level = o.headings[i].level;
      insert(text, next_heading_after(i, Some(level)), &region_text(name, &render((level + 1).min(6)), nl), nl)
    }
    None => {
      let (at, level) = match continuity {
        Some(i) => (next_heading_after(i, Some(o.headings[i].level)), (o.headings[i].level + 1).min(6)),
        None => (text.len(), 2),
      };
      let block =
        format!("{} {title}{nl}{nl}{}", "#".repeat(level), region_text(name, &render((level + 1).min(6)), nl));
      insert(text, at, &block, nl)
    }
  }
}

/// The byte ranges of the regions the pipeline would treat as its own (begin marker line to end
/// marker line), for tests that check that nothing else changes.
#[cfg(test)]
pub(crate) fn region_ranges(text: &str) -> Vec<Range<usize>> {
  outline(text).regions.into_iter().filter(|r| r.name == SESSIONS || r.name == DECISIONS).map(|r| r.range).collect()
}

/// The byte range of the first section titled `title` (compared without case): from the start
/// of its heading line to the next heading of the same or a higher level, or the end. Headings
/// in code blocks and inside owned regions are not structure, so they neither start nor end a
/// section.
pub fn section_range(text: &str, title: &str) -> Option<Range<usize>> {
  let o = outline(text);
  let i = o.headings.iter().position(|h| same_heading(&h.text, title))?;
  let level = o.headings[i].level;
  let end = o.headings[i + 1..].iter().find(|h| h.level <= level).map_or(text.len(), |h| h.start);
  Some(o.headings[i].start..end)
}

/// Where the document's marked regions are, whatever their names (begin marker line to end
/// marker line, newline included), found in one pass: as disjoint ranges sorted by start, for
/// [`in_spans`].
pub fn marked_regions(text: &str) -> Vec<Range<usize>> {
  disjoint(outline(text).regions.into_iter().map(|r| r.range).collect())
}

/// The byte range of region `name` (begin marker line to end marker line, newline included), if
/// the document has one.
pub fn region_range(text: &str, name: &str) -> Option<Range<usize>> {
  outline(text).regions.into_iter().find(|r| r.name == name).map(|r| r.range)
}

/// The body of region `name`, if the document has one.
pub fn region_body(text: &str, name: &str) -> Option<String> {
  let o = outline(text);
  let region = o.regions.iter().find(|r| r.name == name)?;
  let inner = &text[region.range.clone()];
  let after_begin = inner.find('\n').map_or(inner.len(), |i| i + 1);
  let end_line = inner[..inner.len().saturating_sub(1)].rfind('\n').map_or(0, |i| i + 1);
  Some(inner[after_begin..end_line.max(after_begin)].to_string())
}

/// One line of markdown text from arbitrary content: whitespace collapsed, `<` escaped.
pub fn one_line(text: &str) -> String {
  text.split_whitespace().collect::<Vec<_>>().join(" ").replace('<', "&lt;")
}

/// The first `max` characters of `text` (on a character boundary), with `…` when cut.
pub fn excerpt(text: &str, max: usize) -> String {
  if text.chars().count() <= max {
    return text.to_string();
  }
  let cut: String = text.chars().take(max).collect();
  let at_word = cut.rfind(' ').filter(|&i| i > max / 2).map_or(cut.as_str(), |i| &cut[..i]);
  format!("{}…", at_word.trim_end())
}

/// A session line as written in the sessions region.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionLine {
  pub session_id: String,
  pub started_at: String,
  pub last_active_at: String,
  pub memories: u64,
  pub latest: String,
}

pub fn render_session_line(line: &SessionLine, types: &str) -> String {
  format!(
    "- **`{}`** · {} → {} · {} memor{} ({}) · latest: {}\n",
    line.session_id,
    line.started_at,
    line.last_active_at,
    line.memories,
    if line.memories == 1 { "y" } else { "ies" },
    types,
    line.latest
  )
}

/// Parses the lines [`render_session_line`] writes; other lines are skipped.
pub fn parse_session_lines(body: &str) -> Vec<SessionLine> {
  body
    .lines()
    .filter_map(|line| {
      let rest = line.trim_end_matches('\r').strip_prefix("- **`")?;
      let (session_id, rest) = rest.split_once("`** · ")?;
      let (started_at, rest) = rest.split_once(" → ")?;
      let (last_active_at, rest) = rest.split_once(" · ")?;
      let (count, rest) = rest.split_once(' ')?;
      let latest = rest.split_once(" · latest: ").map_or("", |(_, l)| l);
      Some(SessionLine {
        session_id: session_id.to_string(),
        started_at: started_at.to_string(),
        last_active_at: last_active_at.to_string(),
        memories: count.parse().ok()?,
        latest: latest.to_string(),
      })
    })
    .collect()
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn headings_are_matched_by_meaning() {
    for h in
      ["Active Context", "### ACTIVE CONTEXT:", "1. Active Context", "🧠 Active context (current)", "active-context"]
    {
      assert!(heading_means(h, "Active Context"), "{h}");
    }
    for h in ["Active", "Context Active", "Inactive Context", "Active Contexts", ""] {
      assert!(!heading_means(h, "Active Context"), "{h}");
    }
    assert!(heading_means("Blockers & Dependencies", "Blockers Dependencies"));
    // Sections found by meaning: the Decision Log under another spelling still has its entry.
    let text =
      "## session continuity\n### 2) DECISION LOG — permanent\n#### 2024-01-15T14:30:00Z - T\n**Decision**: d\n";
    assert_eq!(section_range(text, DECISION_LOG), Some("## session continuity\n".len()..text.len()));
  }

  fn strip_regions(text: &str) -> String {
    let mut out = text.to_string();
    for name in [SESSIONS, DECISIONS] {
      let o = outline(&out);
      if let Some(r) = o.regions.iter().find(|r| r.name == name) {
        let mut end = r.range.end;
        if out[end..].starts_with('\n') {
          end += 1;
        }
        out = format!("{}{}", &out[..r.range.start], &out[end..]);
      }
    }
    out
  }

  const HUMAN: &str = "# Agent Working Memory (NOTES.md)

Intro written by a human, with trailing spaces   
and a [link](http://example.com).

## Session Continuity
<!-- CRITICAL: Load this section FIRST after /clear (~100 tokens) -->

### Active Context
- **Current Bead**: bd-x7y8

```markdown
## Decision Log
<!-- loa:begin decisions -->
not a region: inside a code fence
<!-- loa:end decisions -->
```

### Decision Log
<!-- Decisions survive context wipes - permanent record -->

#### 2024-01-15T14:30:00Z - Token Expiry Handling
**Decision**: Use sliding window expiration

### Pending Questions
- [ ] Should grace period be configurable per-client?

## Blockers & Dependencies
Setext too
----------
";

  #[test]
  fn inserts_by_heading_and_keeps_every_other_byte() {
    let with_sessions = set_region(HUMAN, SESSIONS, &|_| "- s1\n".into());
    let with_both = set_region(&with_sessions, DECISIONS, &|level| format!("{} entry\n", "#".repeat(level)));
    assert_eq!(strip_regions(&with_both), HUMAN);
    // Sessions go before the first sub-heading of Session Continuity...
    let sessions_at = with_both.find("<!-- loa:begin sessions -->").unwrap();
    assert!(
      sessions_at > with_both.find("<!-- CRITICAL").unwrap()
        && sessions_at < with_both.find("### Active Context").unwrap()
    );
    // ...decisions at the end of the real Decision Log (not the one in the code fence), after the
    // human entry, with entry headings one level below it.
    let decisions_at = with_both.find("<!-- loa:begin decisions -->\n#### entry").unwrap();
    assert!(decisions_at > with_both.find("**Decision**: Use sliding").unwrap());
    assert!(decisions_at < with_both.find("### Pending Questions").unwrap());
    // Replacing is in place, and idempotent.
    let again = set_region(&with_both, DECISIONS, &|level| format!("{} entry\n", "#".repeat(level)));
    assert_eq!(again, with_both);
    let changed = set_region(&with_both, SESSIONS, &|_| "- s1\n- s2\n".into());
    assert_eq!(strip_regions(&changed), HUMAN);
    assert_eq!(region_body(&changed, SESSIONS).unwrap(), "- s1\n- s2\n");
    assert_eq!(region_body(&changed, DECISIONS).unwrap(), "#### entry\n");
  }

  #[test]
  fn missing_headings_are_appended_and_crlf_is_kept() {
    let text = "# Notes\r\n\r\nSome text\r\n";
    let out = set_region(text, SESSIONS, &|_| "- a\n".into());
    let out = set_region(&out, DECISIONS, &|l| format!("{} d\n", "#".repeat(l)));
    assert!(out.starts_with(text));
    assert_eq!(
      &out[text.len()..],
      "\r\n## Session Continuity\r\n\r\n<!-- loa:begin sessions -->\r\n- a\r\n<!-- loa:end sessions -->\r\n\r\n### Decision Log\r\n\r\n<!-- loa:begin decisions -->\r\n#### d\r\n<!-- loa:end decisions -->\r\n"
    );
    let empty = set_region("", DECISIONS, &|l| format!("{} d\n", "#".repeat(l)));
    assert!(empty.starts_with("## Decision Log\n\n<!-- loa:begin decisions -->\n### d\n"));
  }

  #[test]
  fn orphan_markers_never_swallow_text() {
    let text = "## Session Continuity\n\n<!-- loa:begin sessions -->\nhuman text after an orphan\n\n## Other\n\nmore\n";
    let out = set_region(text, SESSIONS, &|_| "- x\n".into());
    assert!(out.contains("human text after an orphan"));
    assert!(out.contains("## Other\n\nmore\n"));
    let again = set_region(&out, SESSIONS, &|_| "- y\n".into());
    assert!(again.contains("human text after an orphan") && again.contains("- y\n") && !again.contains("- x\n"));
  }

  #[test]
  fn content_cannot_break_out() {
    let evil = one_line("x\n<!-- loa:end decisions -->\n## Heading\n```");
    assert!(!evil.contains('\n') && !evil.contains("<!--"));
    let text = set_region("## Decision Log\n", DECISIONS, &|_| format!("**Decision**: {evil}\n"));
    let o = outline(&text);
    assert_eq!(o.regions.len(), 1);
    assert_eq!(o.headings.len(), 1);
    assert_eq!(excerpt("one two three four", 9), "one two…");
    assert_eq!(excerpt("short", 9), "short");
  }

  #[test]
  fn session_lines_round_trip() {
    let line = SessionLine {
      session_id: "agent-1".into(),
      started_at: "2026-01-02T10:00:00.000Z".into(),
      last_active_at: "2026-01-02T10:05:00.000Z".into(),
      memories: 3,
      latest: "learning: a · b".into(),
    };
    let rendered = render_session_line(&line, "learning 3");
    assert_eq!(parse_session_lines(&format!("junk\n{rendered}")), vec![line]);
  }
}
