//! BEAUVOIR.md as a document: sections found by CommonMark headings and recognised by meaning,
//! their bodies kept as the Markdown they were written in.
//!
//! Why by meaning: identity documents are written by people, and the original generator's exact
//! heading comparison dropped `## Core Principles (Why I Behave This Way)` and
//! `### What I Won't Do` without a word. A heading is normalised ([`heading_key`]) and looked up
//! in one small synonym table ([`SYNONYMS`]); whatever is not recognised is still carried.
//!
//! Cost: one CommonMark pass over the document, then one pass over each section's body
//! (the bodies are disjoint), so time is linear in the input.

use std::ops::Range;

use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use serde::Serialize;

/// The sections SOUL.md carries, in its order, by their canonical names.
pub const SECTIONS: &[&str] = &[
  "Identity",
  "Core Principles",
  "Operational Stance",
  "Interaction Style",
  "Boundaries",
  "Self-Evolution",
  "Recovery Protocol",
];

/// What a heading means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
  /// An index into [`SECTIONS`].
  Section(usize),
  /// A list of what the agent will not do: part of Boundaries.
  WontDo,
  /// A list of what the agent always does: part of Boundaries.
  AlwaysDo,
}

const BOUNDARIES: usize = 4;

/// Normalised headings ([`heading_key`]) and what they mean. Filler words (`what`, `i`, `my`,
/// ...) are removed before the lookup, so `What I Won't Do` is `wont do` and `Who I Am` is
/// `who am`.
pub const SYNONYMS: &[(&str, &str)] = &[
  ("identity", "Identity"),
  ("who am", "Identity"),
  ("who you are", "Identity"),
  ("about me", "Identity"),
  ("persona", "Identity"),
  ("core principles", "Core Principles"),
  ("principles", "Core Principles"),
  ("guiding principles", "Core Principles"),
  ("core behaviors", "Core Principles"),
  ("core behaviours", "Core Principles"),
  ("behaviors", "Core Principles"),
  ("behaviours", "Core Principles"),
  ("core values", "Core Principles"),
  ("values", "Core Principles"),
  ("core beliefs", "Core Principles"),
  ("beliefs", "Core Principles"),
  ("tenets", "Core Principles"),
  ("operational stance", "Operational Stance"),
  ("stance", "Operational Stance"),
  ("operating mode", "Operational Stance"),
  ("operational mode", "Operational Stance"),
  ("how work", "Operational Stance"),
  ("modus operandi", "Operational Stance"),
  ("interaction style", "Interaction Style"),
  ("communication style", "Interaction Style"),
  ("style", "Interaction Style"),
  ("tone", "Interaction Style"),
  ("voice", "Interaction Style"),
  ("tone voice", "Interaction Style"),
  ("how communicate", "Interaction Style"),
  ("communication", "Interaction Style"),
  ("boundaries", "Boundaries"),
  ("limits", "Boundaries"),
  ("constraints", "Boundaries"),
  ("guardrails", "Boundaries"),
  ("wont do", "Won't Do"),
  ("will not do", "Won't Do"),
  ("wont", "Won't Do"),
  ("never", "Won't Do"),
  ("never do", "Won't Do"),
  ("will never do", "Won't Do"),
  ("dont", "Won't Do"),
  ("dont do", "Won't Do"),
  ("do not", "Won't Do"),
  ("do not do", "Won't Do"),
  ("must not", "Won't Do"),
  ("must never", "Won't Do"),
  ("hard limits", "Won't Do"),
  ("always do", "Always Do"),
  ("always", "Always Do"),
  ("will always do", "Always Do"),
  ("must always", "Always Do"),
  ("must do", "Always Do"),
  ("self evolution", "Self-Evolution"),
  ("evolution", "Self-Evolution"),
  ("how evolve", "Self-Evolution"),
  ("growth", "Self-Evolution"),
  ("self improvement", "Self-Evolution"),
  ("recovery protocol", "Recovery Protocol"),
  ("recovery", "Recovery Protocol"),
  ("startup protocol", "Recovery Protocol"),
  ("on startup", "Recovery Protocol"),
  ("continuity", "Recovery Protocol"),
];

const FILLERS: &[&str] = &["what", "i", "my", "the", "our", "we", "things", "a", "an"];

/// One core principle: a `### N. Title` sub-section (name = title without its numbering,
/// description = its whole body as written), a list item `**Name** - description` /
/// `**Name**: description`, or a plain item (no name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Principle {
  pub name: Option<String>,
  pub description: String,
}

/// A section of BEAUVOIR.md that is none of [`SECTIONS`]: carried into SOUL.md as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OtherSection {
  /// The heading as written (inline Markdown kept).
  pub title: String,
  pub body: String,
}

/// What BEAUVOIR.md says. Every text is the Markdown it was written in, sub-headings re-levelled
/// to sit under a `## ` section; a section written twice is joined, never dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IdentityDocument {
  /// Text before the first section, under the document's title (which is not kept).
  pub preamble: String,
  /// The body of each of [`SECTIONS`], by index; empty when absent.
  pub texts: [String; 7],
  /// Core Principles, one by one (also carried in `texts[1]`).
  pub principles: Vec<Principle>,
  /// Every item of every Won't Do list, on one line (also carried in `texts[4]`).
  pub wont_do: Vec<String>,
  /// Every item of every Always Do list, on one line (also carried in `texts[4]`).
  pub always_do: Vec<String>,
  /// Sections not recognised, in document order.
  pub other_sections: Vec<OtherSection>,
  /// Known sections with a heading in BEAUVOIR.md, by canonical name, in document order.
  pub sections: Vec<String>,
}

impl IdentityDocument {
  /// The text of a known section by its canonical name (`"Core Principles"`).
  pub fn text(&self, name: &str) -> &str {
    SECTIONS.iter().position(|s| *s == name).map_or("", |i| &self.texts[i])
  }
}

#[derive(Debug)]
struct Heading {
  level: usize,
  /// Plain text (inline markup removed), trimmed.
  text: String,
  /// From the heading's first byte to the end of its line(s).
  range: Range<usize>,
}

/// Removes parenthesised/bracketed asides, then keeps lower-case letters and digits as words
/// (apostrophes vanish: `Won’t` is `wont`); drops leading numbering (`2.`, `IV)`) and filler
/// words.
pub fn heading_key(text: &str) -> String {
  let text = without_numbering(text);
  let mut depth = 0usize;
  let mut flat = String::with_capacity(text.len());
  for c in text.chars() {
    match c {
      '(' | '[' => depth += 1,
      ')' | ']' => depth = depth.saturating_sub(1),
      '\'' | '’' | '‘' | '`' => {}
      c if depth == 0 && c.is_alphanumeric() => flat.extend(c.to_lowercase()),
      _ if depth == 0 => flat.push(' '),
      _ => {}
    }
  }
  let words: Vec<&str> = flat.split_whitespace().skip_while(|w| w.chars().all(|c| c.is_ascii_digit())).collect();
  words.into_iter().filter(|w| !FILLERS.contains(w)).collect::<Vec<_>>().join(" ")
}

fn kind_of_key(key: &str) -> Option<Kind> {
  let (_, name) = SYNONYMS.iter().find(|(k, _)| *k == key)?;
  Some(match *name {
    "Won't Do" => Kind::WontDo,
    "Always Do" => Kind::AlwaysDo,
    n => Kind::Section(SECTIONS.iter().position(|s| *s == n).expect("table names a section")),
  })
}

/// What a heading means: its whole key, else the part before a separator or a conjunction
/// (`Core Principles — why`, `Boundaries: hard rules`, `Tone & Voice`, `Identity and Purpose`).
fn classify(text: &str) -> Option<Kind> {
  if let Some(k) = kind_of_key(&heading_key(text)) {
    return Some(k);
  }
  let lower = text.to_lowercase();
  let cut =
    [":", " — ", " – ", " - ", " | ", " and ", "&", "/", ",", "+"].iter().filter_map(|s| lower.find(s)).min()?;
  kind_of_key(&heading_key(&lower[..cut]))
}

/// Headings outside containers (a `## ` inside a fence, a block quote or a list item is not a
/// section boundary), in document order.
fn headings(text: &str) -> Vec<Heading> {
  let mut out = Vec::new();
  let mut current: Option<Heading> = None;
  let mut containers = 0usize;
  for (event, range) in Parser::new(text).into_offset_iter() {
    match event {
      Event::Start(Tag::BlockQuote(_) | Tag::Item | Tag::FootnoteDefinition(_)) => containers += 1,
      Event::End(TagEnd::BlockQuote(_) | TagEnd::Item | TagEnd::FootnoteDefinition) => {
        containers = containers.saturating_sub(1)
      }
      Event::Start(Tag::Heading { level, .. }) if containers == 0 => {
        current = Some(Heading { level: level as usize, text: String::new(), range: range.clone() })
      }
      Event::End(TagEnd::Heading(_)) => {
        if let Some(mut h) = current.take() {
          h.range.end = range.end;
          h.text = h.text.trim().to_string();
          out.push(h);
        }
      }
      Event::Text(t) | Event::Code(t) => {
        if let Some(h) = current.as_mut() {
          h.text.push_str(&t);
        }
      }
      _ => {}
    }
  }
  out
}

/// For each heading, the index of the next heading of the same or a higher level (or `len`):
/// one pass with a stack, so linear however the levels are nested.
fn section_ends(hs: &[Heading]) -> Vec<usize> {
  let mut ends = vec![hs.len(); hs.len()];
  let mut open: Vec<usize> = Vec::new();
  for (i, h) in hs.iter().enumerate() {
    while let Some(&j) = open.last() {
      if hs[j].level >= h.level {
        ends[j] = i;
        open.pop();
      } else {
        break;
      }
    }
    open.push(i);
  }
  ends
}

/// The heading's content as written (inline Markdown kept): an ATX line without its `#`s, or a
/// setext heading's lines joined.
fn heading_source(text: &str, h: &Heading) -> String {
  let raw = text[h.range.clone()].trim_end();
  if raw.contains('\n') {
    let lines: Vec<&str> = raw.lines().collect();
    return lines[..lines.len() - 1].iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
  }
  let t = raw.trim_start().trim_start_matches('#');
  let t = t.trim();
  let closing = t.trim_end_matches('#');
  if closing.is_empty() || closing.ends_with([' ', '\t']) {
    closing.trim().to_string()
  } else {
    t.to_string()
  }
}

/// The text from `range`, every heading inside it moved `shift` levels (kept within 1..=6;
/// nothing else changes), with leading and trailing thematic breaks (the `---` separators
/// between sections) removed.
fn carry(text: &str, hs: &[Heading], inside: Range<usize>, range: Range<usize>, shift: isize) -> String {
  let mut out = String::with_capacity(range.len());
  let mut at = range.start;
  if shift != 0 {
    for h in &hs[inside] {
      out.push_str(&text[at..h.range.start]);
      let level = (h.level as isize + shift).clamp(1, 6) as usize;
      out.push_str(&"#".repeat(level));
      out.push(' ');
      out.push_str(&heading_source(text, h));
      out.push('\n');
      at = h.range.end;
    }
  }
  out.push_str(&text[at..range.end]);
  trim_rules(&out).to_string()
}

/// Top-level blocks of `text`: their ranges, and whether each is a list or a thematic break.
fn blocks(text: &str) -> Vec<(Range<usize>, Block)> {
  let mut out = Vec::new();
  let mut depth = 0usize;
  for (event, range) in Parser::new(text).into_offset_iter() {
    match event {
      Event::Start(tag) => {
        if depth == 0 {
          let kind = if matches!(tag, Tag::List(_)) { Block::List } else { Block::Other };
          out.push((range, kind));
        }
        depth += 1;
      }
      Event::End(_) => depth = depth.saturating_sub(1),
      Event::Rule if depth == 0 => out.push((range, Block::Rule)),
      _ if depth == 0 => out.push((range, Block::Other)),
      _ => {}
    }
  }
  out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
  List,
  Rule,
  Other,
}

/// `text` without the thematic breaks at its start and end (the `---` between sections); only
/// whitespace besides them is removed, so a link definition (which is no block) stays.
fn trim_rules(text: &str) -> &str {
  let bs = blocks(text);
  let (mut from, mut to) = (0, text.len());
  for (r, k) in &bs {
    if *k != Block::Rule || !text[from..r.start].trim().is_empty() {
      break;
    }
    from = r.end;
  }
  for (r, k) in bs.iter().rev() {
    if *k != Block::Rule || !text[r.end.min(to)..to].trim().is_empty() || r.start < from {
      break;
    }
    to = r.start;
  }
  text[from..to].trim()
}

/// Top-level list items of `text`, each on one line with its marker removed.
fn list_items(text: &str) -> Vec<String> {
  let mut out = Vec::new();
  let mut depth = 0usize;
  let mut containers = 0usize;
  let mut start = None;
  for (event, range) in Parser::new(text).into_offset_iter() {
    match event {
      Event::Start(Tag::BlockQuote(_)) => containers += 1,
      Event::End(TagEnd::BlockQuote(_)) => containers = containers.saturating_sub(1),
      Event::Start(Tag::List(_)) => depth += 1,
      Event::End(TagEnd::List(_)) => depth = depth.saturating_sub(1),
      Event::Start(Tag::Item) if depth == 1 && containers == 0 => start = Some(range.start),
      Event::End(TagEnd::Item) if depth == 1 => {
        if let Some(s) = start.take() {
          let item = strip_marker(&text[s..range.end]);
          let line = item.split_whitespace().collect::<Vec<_>>().join(" ");
          if !line.is_empty() {
            out.push(line);
          }
        }
      }
      _ => {}
    }
  }
  out
}

fn strip_marker(item: &str) -> &str {
  let t = item.trim_start();
  if let Some(rest) = t.strip_prefix(['-', '*', '+']) {
    return rest;
  }
  let digits = t.bytes().take_while(u8::is_ascii_digit).count();
  match t[digits..].strip_prefix(['.', ')']) {
    Some(rest) if digits > 0 => rest,
    _ => t,
  }
}

/// A heading's title without its numbering: `1. Understand Before Acting`, `2) X`, `3 - Y`,
/// `IV. Z`, `(5) W`. A number not followed by punctuation or a dash is part of the title
/// (`2026 Goals`).
fn without_numbering(title: &str) -> &str {
  let t = title.trim_start();
  let t = t.strip_prefix('(').unwrap_or(t);
  let arabic = t.bytes().take_while(u8::is_ascii_digit).count();
  let roman = t.bytes().take_while(|b| b"IVXLCivxlc".contains(b)).count();
  let number = if arabic > 0 { arabic } else { roman };
  if number == 0 {
    return title;
  }
  let after = &t[number..];
  let punct = after.trim_start_matches(['.', ')', ':']);
  let rest = if punct.len() < after.len() {
    punct.trim_start().trim_start_matches(['-', '–', '—'])
  } else if arabic > 0 {
    match after.trim_start().strip_prefix(['-', '–', '—']) {
      Some(r) if after.starts_with(char::is_whitespace) => r,
      _ => return title,
    }
  } else {
    return title;
  };
  match rest.trim() {
    "" => title,
    r => r,
  }
}

fn principle(item: &str) -> Principle {
  for mark in ["**", "__"] {
    let Some(rest) = item.strip_prefix(mark) else { continue };
    let Some(end) = rest.find(mark) else { continue };
    let name = rest[..end].trim().trim_end_matches([':', '.']).trim().to_string();
    let description =
      rest[end + 2..].trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '-' | '–' | '—' | ':')).trim();
    if !name.is_empty() {
      return Principle { name: Some(name), description: description.to_string() };
    }
  }
  Principle { name: None, description: item.to_string() }
}

fn join(into: &mut String, text: &str) {
  if text.is_empty() {
    return;
  }
  if !into.is_empty() {
    into.push_str("\n\n");
  }
  into.push_str(text);
}

/// The level of the section headings: the level at which most headings name a known section
/// (the shallowest on a tie; Won't Do / Always Do lists may sit at any level), so a document
/// written with `#` sections, or titled `# Identity`, is read as its author meant.
fn section_level(hs: &[Heading]) -> Option<usize> {
  let mut counts = [0usize; 7];
  for h in hs {
    if let Some(Kind::Section(_)) = classify(&h.text) {
      counts[h.level.min(6)] += 1;
    }
  }
  let best = *counts.iter().max()?;
  (best > 0).then(|| counts.iter().position(|c| *c == best).expect("max is present"))
}

/// Parses BEAUVOIR.md. Never fails: what is not there stays empty. Nothing under a heading is
/// dropped: known sections are joined by meaning, others kept in `other_sections`.
pub fn parse_beauvoir(text: &str) -> IdentityDocument {
  // Editors on Windows start a file with a byte order mark, which would hide its first heading.
  let text = text.strip_prefix('\u{feff}').unwrap_or(text);
  let hs = headings(text);
  let ends = section_ends(&hs);
  let mut doc = IdentityDocument::default();
  let Some(level) = section_level(&hs) else { return doc };
  // SOUL.md's sections are `##`: headings inside a section move by this much.
  let shift = 2 - level as isize;

  let mut boundary_parts = String::new();
  let first = hs.iter().position(|h| h.level <= level);
  let preamble_end = first.map_or(text.len(), |i| hs[i].range.start);
  let mut preamble = carry(text, &hs, 0..0, 0..preamble_end, 0);
  let mut i = first.unwrap_or(hs.len());
  let mut titled = false;
  while i < hs.len() {
    let h = &hs[i];
    let next = (i + 1..hs.len()).find(|&j| hs[j].level <= level).unwrap_or(hs.len());
    let body = h.range.end..hs.get(next).map_or(text.len(), |n| n.range.start);
    let inside = i + 1..next;
    let kind = classify(&h.text);
    if h.level < level && kind.is_none() && !titled && doc.sections.is_empty() && doc.other_sections.is_empty() {
      // The document's title: SOUL.md has its own; what follows it is the preamble.
      titled = true;
      join(&mut preamble, &carry(text, &hs, inside, body, shift));
      i = next;
      continue;
    }
    match kind {
      Some(Kind::Section(s)) => {
        if !doc.sections.iter().any(|n| n == SECTIONS[s]) {
          doc.sections.push(SECTIONS[s].to_string());
        }
        let carried = carry(text, &hs, inside.clone(), body.clone(), shift);
        if s == 1 {
          read_principles(text, &hs, inside.clone(), body.clone(), &ends, &mut doc.principles);
        }
        if s == BOUNDARIES {
          read_boundary_lists(text, &hs, inside.clone(), &ends, &mut doc);
        }
        join(&mut doc.texts[s], &carried);
      }
      Some(list @ (Kind::WontDo | Kind::AlwaysDo)) => {
        if !doc.sections.iter().any(|n| n == SECTIONS[BOUNDARIES]) {
          doc.sections.push(SECTIONS[BOUNDARIES].to_string());
        }
        // A list written as a section of its own sits under Boundaries, one level down.
        let carried = carry(text, &hs, inside.clone(), body.clone(), shift + 1);
        let items = list_items(&text[body.clone()]);
        if list == Kind::WontDo {
          doc.wont_do.extend(items)
        } else {
          doc.always_do.extend(items)
        }
        if !carried.is_empty() {
          let title = heading_source(text, h);
          join(&mut boundary_parts, &format!("### {title}\n\n{carried}"));
        }
      }
      None => doc
        .other_sections
        .push(OtherSection { title: heading_source(text, h), body: carry(text, &hs, inside, body, shift) }),
    }
    i = next;
  }
  doc.preamble = std::mem::take(&mut preamble);
  join(&mut doc.texts[BOUNDARIES], &boundary_parts);
  doc
}

/// Principles of a Core Principles section: its own list items (before its first sub-heading),
/// then each sub-section (`### 1. Title`) with its whole body.
fn read_principles(
  text: &str,
  hs: &[Heading],
  inside: Range<usize>,
  body: Range<usize>,
  ends: &[usize],
  out: &mut Vec<Principle>,
) {
  let own_end = hs.get(inside.start).filter(|_| !inside.is_empty()).map_or(body.end, |h| h.range.start);
  out.extend(list_items(&text[body.start..own_end]).iter().map(|i| principle(i)));
  let mut j = inside.start;
  while j < inside.end {
    let end = ends[j].min(inside.end);
    let sub_end = hs.get(end).map_or(body.end, |h| h.range.start.min(body.end));
    let description = carry(text, hs, j + 1..end, hs[j].range.end..sub_end, 0);
    out.push(Principle { name: Some(without_numbering(&hs[j].text).to_string()), description });
    j = end;
  }
}

/// Items of the Won't Do / Always Do lists anywhere under a Boundaries section (a list nested in
/// another recognised list is read once, as part of the outer one).
fn read_boundary_lists(text: &str, hs: &[Heading], inside: Range<usize>, ends: &[usize], doc: &mut IdentityDocument) {
  let mut j = inside.start;
  while j < inside.end {
    match classify(&hs[j].text) {
      Some(list @ (Kind::WontDo | Kind::AlwaysDo)) => {
        let end = ends[j].min(inside.end);
        let stop = hs.get(end).map_or(text.len(), |h| h.range.start);
        let items = list_items(&text[hs[j].range.end..stop]);
        if list == Kind::WontDo {
          doc.wont_do.extend(items)
        } else {
          doc.always_do.extend(items)
        }
        j = end;
      }
      _ => j += 1,
    }
  }
}
