//! BEAUVOIR.md as a document: sections found by CommonMark headings, lists by list items.

use std::ops::Range;

use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use serde::Serialize;

/// The sections read, as their `## ` headings are normally written.
pub const SECTIONS: &[&str] = &[
  "Identity",
  "Core Principles",
  "Operational Stance",
  "Interaction Style",
  "Boundaries",
  "Self-Evolution",
  "Recovery Protocol",
];

/// One core principle: `**Name** - description` (or a `### Name` sub-section), or plain text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Principle {
  pub name: Option<String>,
  pub description: String,
}

/// What BEAUVOIR.md says, section by section. Text is kept as the Markdown it was written in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IdentityDocument {
  pub identity: String,
  pub principles: Vec<Principle>,
  pub operational_stance: String,
  /// The section's list items.
  pub interaction_style: Vec<String>,
  /// The section's text when it is not (only) a list.
  pub interaction_style_text: String,
  pub wont_do: Vec<String>,
  pub always_do: Vec<String>,
  pub self_evolution: String,
  pub recovery_protocol: String,
  /// Known sections found, by their canonical names ([`SECTIONS`]), in document order.
  pub sections: Vec<String>,
}

#[derive(Debug)]
struct Heading {
  level: usize,
  text: String,
  /// From the heading's first byte to the end of its line(s).
  range: Range<usize>,
}

/// Lower-case letters and digits only: `Won't Do`, `Won’t do:` and `WONT DO` are one key.
fn key(text: &str) -> String {
  text.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

fn headings(text: &str) -> Vec<Heading> {
  let mut out = Vec::new();
  let mut current: Option<Heading> = None;
  for (event, range) in Parser::new(text).into_offset_iter() {
    match event {
      Event::Start(Tag::Heading { level, .. }) => {
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

/// The byte range of the body under heading `i`: up to the next heading of the same or a
/// higher level.
fn body(text: &str, hs: &[Heading], i: usize) -> Range<usize> {
  let end = hs[i + 1..].iter().find(|h| h.level <= hs[i].level).map_or(text.len(), |h| h.range.start);
  hs[i].range.end.min(end)..end
}

/// Top-level list items of `text`, each on one line with its marker removed.
fn list_items(text: &str) -> Vec<String> {
  let mut out = Vec::new();
  let mut depth = 0usize;
  let mut start = None;
  for (event, range) in Parser::new(text).into_offset_iter() {
    match event {
      Event::Start(Tag::List(_)) => depth += 1,
      Event::End(TagEnd::List(_)) => depth = depth.saturating_sub(1),
      Event::Start(Tag::Item) if depth == 1 => start = Some(range.start),
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

/// Text of a section other than its list items and sub-headings' bodies: the paragraphs.
fn prose(text: &str) -> String {
  text.trim().to_string()
}

fn principle(item: &str) -> Principle {
  if let Some(rest) = item.strip_prefix("**") {
    if let Some(end) = rest.find("**") {
      let name = rest[..end].trim().trim_end_matches([':', '.']).trim().to_string();
      let description =
        rest[end + 2..].trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '-' | '–' | '—' | ':')).trim();
      if !name.is_empty() {
        return Principle { name: Some(name), description: description.to_string() };
      }
    }
  }
  Principle { name: None, description: item.to_string() }
}

/// Parses BEAUVOIR.md. Unknown sections are ignored; a known section written twice keeps its
/// first occurrence. Never fails: what is not there stays empty.
pub fn parse_beauvoir(text: &str) -> IdentityDocument {
  let hs = headings(text);
  let mut doc = IdentityDocument::default();
  // The level of the section headings: the shallowest level at which a known section appears
  // (usually `##`, under a `# Name` title).
  let known = |h: &Heading| SECTIONS.iter().position(|s| key(s) == key(&h.text));
  let Some(level) = hs.iter().filter(|h| known(h).is_some()).map(|h| h.level).min() else { return doc };
  for (i, h) in hs.iter().enumerate() {
    if h.level != level {
      continue;
    }
    let Some(which) = known(h) else { continue };
    let name = SECTIONS[which];
    if doc.sections.iter().any(|s| s == name) {
      continue;
    }
    doc.sections.push(name.to_string());
    let range = body(text, &hs, i);
    let b = &text[range.clone()];
    // Sub-headings of this section (one level down).
    let subs: Vec<(usize, &Heading)> =
      hs.iter().enumerate().filter(|(j, s)| *j > i && s.level == level + 1 && s.range.start < range.end).collect();
    let sub_text = |j: usize| &text[body(text, &hs, j)];
    match name {
      "Identity" => doc.identity = prose(b),
      "Operational Stance" => doc.operational_stance = prose(b),
      "Self-Evolution" => doc.self_evolution = prose(b),
      "Recovery Protocol" => doc.recovery_protocol = prose(b),
      "Interaction Style" => {
        doc.interaction_style = list_items(b);
        if doc.interaction_style.is_empty() {
          doc.interaction_style_text = prose(b);
        }
      }
      "Core Principles" => {
        let own_end = subs.first().map_or(range.end, |(_, s)| s.range.start);
        doc.principles = list_items(&text[range.start..own_end]).iter().map(|i| principle(i)).collect();
        for (j, s) in &subs {
          let sub_body = sub_text(*j);
          let first =
            sub_body.trim().split("\n\n").next().unwrap_or("").split_whitespace().collect::<Vec<_>>().join(" ");
          doc.principles.push(Principle { name: Some(s.text.clone()), description: first });
        }
      }
      "Boundaries" => {
        for (j, s) in &subs {
          match key(&s.text).as_str() {
            "wontdo" | "willnotdo" | "wont" | "never" => doc.wont_do.extend(list_items(sub_text(*j))),
            "alwaysdo" | "always" => doc.always_do.extend(list_items(sub_text(*j))),
            _ => {}
          }
        }
      }
      _ => {}
    }
  }
  doc
}
