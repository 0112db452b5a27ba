//! Tiered recall of NOTES.md after `/clear` or compaction (seed 000 §4.1).
//!
//! - **Level 1**: the `## Session Continuity` section, found by heading wherever it is (the
//!   original took `head -50`, which misses it once the file grows), in a compact reading view,
//!   cut to `level1_tokens` counted with the exact tokenizer. The view spends the budget on
//!   content: HTML comments (the region markers, the template's notes) are left out, runs of
//!   blank lines become one, the ledger's decisions come newest first without their
//!   bookkeeping line (`**Session**: ... · **Id**: ...`), and consolidation's session lines come
//!   last. The file itself is not touched. The cut is deterministic: at the last line end that
//!   fits, or inside the first line when not even one line fits; the result is counted again
//!   and never exceeds the budget.
//! - **Level 2**: the Decision Log's entries (managed and human-written) ranked for a query by
//!   the crate's search ([`crate::search::MemoryIndex`]: BM25 normalised to [0, 1], with the
//!   search's recency decay so that of two equal matches the newer decision comes first), the
//!   top `k`, joined and cut to `level2_tokens`. The store's persistent index holds only
//!   decision memories; an index built per call over the parsed entries also finds the human
//!   entries, and a decision log is small (consolidation keeps 50 entries).
//! - **Level 3**: the whole file.

use pulldown_cmark::{Event, Options, Parser};

use crate::error::Result;
use crate::memory::notes as mnotes;
use crate::memory::MemoryKind;
use crate::search::{Document, MemoryIndex, SearchOptions};
use crate::tokens::{encoder, TokenEncoding};

use super::decision::DecisionEntry;
use super::notes::NotesDoc;

/// Level 1 or 3 text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recalled {
  pub text: String,
  /// Exact tokens of `text`.
  pub tokens: usize,
  /// Whether the text was cut to the budget.
  pub truncated: bool,
  /// Whether the section (level 1) exists.
  pub found: bool,
}

/// `text` cut to at most `budget` tokens (see the module docs). Returns the text and its count.
pub fn truncate_to_tokens(text: &str, budget: usize, encoding: TokenEncoding) -> (String, usize, bool) {
  let enc = encoder(encoding);
  if let Some(n) = enc.count_until(text, budget) {
    return (text.to_string(), n, false);
  }
  let mut limit = budget;
  loop {
    let end = enc.prefix_len(text, limit);
    let cut = &text[..end];
    let cut = match cut.rfind('\n') {
      Some(i) if i > 0 => &cut[..=i],
      _ => cut,
    };
    let n = enc.count(cut);
    if n <= budget || limit == 0 {
      return (cut.to_string(), n, true);
    }
    // Counted alone the prefix may come out a token or two over; shrink by the excess and
    // retry (strictly less each time).
    limit = limit.saturating_sub((n - budget).max(1));
  }
}

/// Level 1: the Session Continuity section's reading view (see the module docs) within
/// `tokens`. At the default budget every token counts: the markers and comments alone took
/// about half of it, and consolidation's session lines (written first in the section) and the
/// oldest decisions (the log is in time order) would fill the rest before the newest decision.
pub fn level1(doc: &NotesDoc, tokens: u64, encoding: TokenEncoding) -> Recalled {
  let Some(section) = doc.session_continuity() else {
    return Recalled { text: String::new(), tokens: 0, truncated: false, found: false };
  };
  let view = compact(&decisions_newest_first(&sessions_last(section)));
  let (text, n, truncated) = truncate_to_tokens(&view, usize::try_from(tokens).unwrap_or(usize::MAX), encoding);
  Recalled { text, tokens: n, truncated, found: true }
}

/// `section` with the sessions region (markers included) moved after everything else.
fn sessions_last(section: &str) -> String {
  let Some(range) = mnotes::region_range(section, mnotes::SESSIONS) else {
    return section.to_string();
  };
  let mut out = String::with_capacity(section.len() + 1);
  out.push_str(&section[..range.start]);
  out.push_str(&section[range.end..]);
  if !out.is_empty() && !out.ends_with('\n') {
    out.push('\n');
  }
  out.push_str(&section[range]);
  out
}

/// The start of the bookkeeping line consolidation writes under each decision.
const BOOKKEEPING: &str = "**Session**: `";

/// `section` with the entries of the managed decisions region newest first and without their
/// bookkeeping lines. Consolidation writes the region in time order, one heading per entry, and
/// its content is one line each with `<` escaped, so a line starting with `#` is an entry's
/// heading and nothing else.
fn decisions_newest_first(section: &str) -> String {
  let Some(range) = mnotes::region_range(section, mnotes::DECISIONS) else {
    return section.to_string();
  };
  let mut preamble = String::new();
  let mut entries: Vec<String> = Vec::new();
  for line in section[range.clone()].split_inclusive('\n') {
    let trimmed = line.trim_end();
    if trimmed.starts_with('#') {
      entries.push(String::new());
    }
    if trimmed.is_empty() || trimmed.starts_with(BOOKKEEPING) {
      continue;
    }
    match entries.last_mut() {
      Some(entry) => entry.push_str(line),
      // The begin marker (dropped later with the other comments).
      None => preamble.push_str(line),
    }
  }
  // The end marker closes the last entry: keep it last.
  let end = entries.last_mut().and_then(|e| {
    let at = e.trim_end().rfind('\n').map(|i| i + 1)?;
    let tail = e[at..].to_string();
    tail.trim_start().starts_with("<!--").then(|| {
      e.truncate(at);
      tail
    })
  });
  entries.reverse();
  let mut out = String::with_capacity(section.len());
  out.push_str(&section[..range.start]);
  out.push_str(&preamble);
  for e in &entries {
    out.push_str(e);
    if !e.ends_with('\n') {
      out.push('\n');
    }
  }
  out.push_str(end.as_deref().unwrap_or(""));
  out.push_str(&section[range.end..]);
  out
}

/// `text` without the lines that hold only an HTML comment (found as HTML by the markdown
/// parser, so a comment in a code fence stays), with each run of blank lines made one and none
/// after a heading.
fn compact(text: &str) -> String {
  let mut dropped: Vec<std::ops::Range<usize>> = Vec::new();
  for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
    if let Event::Html(html) = event {
      let t = html.trim();
      let start = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
      let end = text[range.start..].find('\n').map_or(text.len(), |i| range.start + i + 1);
      let whole_line = text[start..end].trim() == t;
      if whole_line && t.starts_with("<!--") && t.ends_with("-->") && t.matches("-->").count() == 1 {
        dropped.push(start..end);
      }
    }
  }
  let mut out = String::with_capacity(text.len());
  let mut at = 0;
  // A blank line after another, or after a heading (which needs none), is left out.
  let mut skip_blank = true;
  for line in text.split_inclusive('\n') {
    let start = at;
    at += line.len();
    if dropped.iter().any(|r| r.start == start) {
      continue;
    }
    let blank = line.trim().is_empty();
    if blank && skip_blank {
      continue;
    }
    skip_blank = blank || line.starts_with('#');
    out.push_str(line);
  }
  while out.ends_with("\n\n") {
    out.pop();
  }
  out
}

/// Level 3: the whole file.
pub fn level3(doc: &NotesDoc, encoding: TokenEncoding) -> Recalled {
  let text = doc.text().to_string();
  let tokens = encoder(encoding).count(&text);
  Recalled { text, tokens, truncated: false, found: true }
}

/// One decision found at level 2.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionHit {
  pub entry: DecisionEntry,
  /// Normalised score in [0, 1].
  pub score: f64,
}

/// Level 2's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Level2 {
  /// Best first, at most `k`.
  pub hits: Vec<DecisionHit>,
  /// The hits' markdown, joined by a blank line and cut to the budget.
  pub text: String,
  pub tokens: usize,
  pub truncated: bool,
}

/// Level 2: the top `k` decision entries for `query` (see the module docs). `now_ms` is the
/// time recency is measured from.
pub fn level2(
  doc: &NotesDoc,
  query: &str,
  k: usize,
  tokens: u64,
  encoding: TokenEncoding,
  now_ms: i64,
) -> Result<Level2> {
  let entries = doc.decisions();
  let mut index = MemoryIndex::new(Default::default());
  for (i, e) in entries.iter().enumerate() {
    index.add(&Document {
      id: i.to_string(),
      text: e.text.clone(),
      kind: MemoryKind::Decision,
      agent_id: None,
      timestamp_ms: e.ts_ms.unwrap_or(0),
      instruction: false,
      session: None,
    })?;
  }
  let mut options = SearchOptions::new(now_ms);
  options.limit = k.clamp(1, crate::search::MAX_LIMIT);
  let results = index.search(query, &options)?;
  let hits: Vec<DecisionHit> = results
    .hits
    .into_iter()
    .filter_map(|h| Some(DecisionHit { entry: entries.get(h.id.parse::<usize>().ok()?)?.clone(), score: h.score }))
    .collect();
  let joined = hits.iter().map(|h| h.entry.text.as_str()).collect::<Vec<_>>().join("\n\n");
  let (text, n, truncated) = truncate_to_tokens(&joined, usize::try_from(tokens).unwrap_or(usize::MAX), encoding);
  Ok(Level2 { hits, text, tokens: n, truncated })
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::timestamp::parse_rfc3339_ms;

  fn notes(padding: usize) -> NotesDoc {
    let filler = "Some long foreign text line that is not part of the ledger at all.\n".repeat(padding);
    NotesDoc::new(format!(
      "# Notes\n\n## Foreign\n{filler}\n## Session Continuity\n\n### Active Context\n- **Current Bead**: bd-1\n- **Reasoning State**: validating expiry\n\n### Decision Log\n\n#### 2026-01-01T10:00:00Z - Token expiry\n**Decision**: Sliding window expiry with grace period\n\n#### 2026-01-02T10:00:00Z - Database\n**Decision**: Use SQLite for the cache\n**Rationale**: no server to run\n\n#### 2026-01-03T10:00:00Z - Logging\n**Decision**: JSON logs to stderr\n\n## After\n{filler}"
    ))
  }

  #[test]
  fn level1_brings_the_ledger_before_consolidations_session_lines() {
    let sessions: String =
      (0..40).map(|i| format!("- session-{i:02}: 12 memories, last active 2026-01-{:02}\n", i % 28 + 1)).collect();
    let text = mnotes::set_region(notes(0).text(), mnotes::SESSIONS, &|_| sessions.clone());
    let doc = NotesDoc::new(text);
    let section = doc.session_continuity().unwrap();
    assert!(
      section.find("session-00").unwrap() < section.find("Current Bead").unwrap(),
      "consolidation writes its lines first"
    );
    let enc = TokenEncoding::O200kBase;
    let r = level1(&doc, 100, enc);
    assert!(r.text.starts_with("## Session Continuity"));
    assert!(r.text.contains("**Current Bead**: bd-1") && r.text.contains("Sliding window expiry"), "{}", r.text);
    assert!(!r.text.contains("session-00"));
    assert!(r.tokens <= 100);
    let full = level1(&doc, 100_000, enc);
    assert!(!full.truncated && full.text.contains("session-39"));
    assert!(full.text.ends_with("session-39: 12 memories, last active 2026-01-12\n"), "{}", full.text);
  }

  #[test]
  fn level1_spends_its_budget_on_content_newest_decision_first() {
    let text = mnotes::TEMPLATE.to_string();
    let text = mnotes::set_region(&text, mnotes::SESSIONS, &|_| "- **`s1`** · one session line\n".into());
    let entry = |level: usize, day: u32, what: &str| {
      format!(
        "{} 2026-01-{day:02}T10:00:00.000Z - {what}\n**Decision**: {what}\n**Session**: `s1` · **Confidence**: 1 · **Id**: `0123456789ab`\n",
        "#".repeat(level)
      )
    };
    let text = mnotes::set_region(&text, mnotes::DECISIONS, &|level| {
      [entry(level, 1, "Old choice of logging"), entry(level, 2, "Use SQLite for the cache")].join("\n")
    });
    let text =
      crate::memory::notes::set_region(&text, mnotes::ACTIVE_CONTEXT, &|_| "- **Current Task**: caching\n".into());
    let text = text.replace("### Pending Questions", "### Pending Questions\n\n```\n<!-- kept: in a fence -->\n```");
    let doc = NotesDoc::new(text.clone());
    let enc = TokenEncoding::O200kBase;
    let full = level1(&doc, 100_000, enc);
    assert!(
      !full.text.contains("loa:") && !full.text.contains("CRITICAL") && !full.text.contains("**Session**"),
      "{}",
      full.text
    );
    assert!(full.text.contains("<!-- kept: in a fence -->"), "{}", full.text);
    assert!(!full.text.contains("\n\n\n"), "{}", full.text);
    let newest = full.text.find("Use SQLite").unwrap();
    assert!(newest < full.text.find("Old choice").unwrap(), "{}", full.text);
    assert!(full.text.find("Current Task").unwrap() < newest);
    assert!(full.text.find("one session line").unwrap() > full.text.find("Old choice").unwrap());
    // The file is the file: only the view changed.
    assert_eq!(doc.text(), text);
    // A budget of 60 carries the Active Context line and the newest decision.
    let small = level1(&doc, 60, enc);
    assert!(small.tokens <= 60);
    assert!(
      small.text.contains("- **Current Task**: caching")
        && small.text.contains("**Decision**: Use SQLite for the cache"),
      "{}",
      small.text
    );
  }

  #[test]
  fn level1_is_found_by_heading_and_cut_to_the_exact_budget() {
    let doc = notes(300);
    let enc = TokenEncoding::O200kBase;
    let full = level1(&doc, 100_000, enc);
    assert!(full.found && !full.truncated);
    assert!(full.text.starts_with("## Session Continuity") && !full.text.contains("## After"));
    for budget in [1u64, 5, 17, 40] {
      let r = level1(&doc, budget, enc);
      assert!(r.truncated);
      assert!(r.tokens <= budget as usize, "{budget}: {}", r.tokens);
      assert_eq!(r.tokens, crate::tokens::count_tokens(&r.text, enc));
      assert!(full.text.starts_with(&r.text));
    }
    // Cut at a line end when one fits.
    assert!(level1(&doc, 17, enc).text.ends_with('\n'));
    assert!(!level1(&NotesDoc::new("# x\n"), 100, enc).found);
  }

  #[test]
  fn level2_ranks_decisions_and_level3_is_everything() {
    let doc = notes(3);
    let now = parse_rfc3339_ms("2026-01-04T00:00:00Z", "t").unwrap();
    let r = level2(&doc, "which database for the cache", 2, 500, TokenEncoding::O200kBase, now).unwrap();
    assert_eq!(r.hits[0].entry.title, "Database");
    assert!(r.hits.len() <= 2 && r.hits[0].score > 0.0 && r.hits[0].score <= 1.0);
    assert!(r.text.contains("SQLite"));
    let small = level2(&doc, "expiry database logs", 3, 10, TokenEncoding::O200kBase, now).unwrap();
    assert!(small.truncated && small.tokens <= 10);
    assert_eq!(level3(&doc, TokenEncoding::O200kBase).text, doc.text());
  }
}
