//! Decision Log entries: one format, written by consolidation and read by the ledger.
//!
//! ```markdown
//! #### 2026-01-15T14:30:00.000Z - Token Expiry Handling
//! **Decision**: Use sliding window expiration with 15-minute grace period
//! **Rationale**: Balances security with UX
//! **Evidence**:
//! - `export function isTokenExpired(token, graceMs = 900000)` [${PROJECT_ROOT}/src/auth/jwt.ts:52]
//! **Test Scenarios**:
//! 1. Token expires exactly at boundary -> grace period applies
//! ```
//!
//! One owner per NOTES.md region: the decisions region is rendered by memory consolidation from
//! the decision memories, so the ledger never writes it. A decision the ledger records is a
//! memory of kind `decision` whose `metadata.ledger` holds the fields below ([`DecisionFields`]);
//! it goes through redaction, the quality gates and the WAL like any memory, and consolidation
//! renders its fields with [`render_fields`]. Entries a human wrote in the Decision Log, outside
//! the region, are read the same way and never rewritten.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::memory::notes::one_line;
use crate::timestamp::parse_ms;

/// The key of `metadata` under which a decision memory carries its ledger fields.
pub const METADATA_KEY: &str = "ledger";
/// Most evidence lines and test scenarios rendered per decision.
pub const MAX_ITEMS: usize = 32;

/// What a decision carries besides its text (`metadata.ledger` of a decision memory).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DecisionFields {
  /// Why; one line in NOTES.md.
  pub rationale: Option<String>,
  /// Citations, ideally `` `quote` [${PROJECT_ROOT}/path:line] ``.
  pub evidence: Vec<String>,
  /// EDD scenarios ("input -> expected").
  pub test_scenarios: Vec<String>,
}

impl DecisionFields {
  /// The fields of a decision memory's metadata; `None` when it has none or they do not parse
  /// (then the entry is rendered without them, as before the ledger existed).
  pub fn of_metadata(metadata: Option<&Value>) -> Option<DecisionFields> {
    let value = metadata?.get(METADATA_KEY)?;
    serde_json::from_value(value.clone()).ok()
  }

  /// The metadata object that carries these fields.
  pub fn to_metadata(&self) -> Value {
    let mut map = serde_json::Map::new();
    map.insert(METADATA_KEY.into(), serde_json::to_value(self).unwrap_or(Value::Null));
    Value::Object(map)
  }
}

/// The lines after `**Decision**:` for a memory's metadata (empty when it has no ledger fields),
/// each ending in `\n`. Every value is put on one line with `<` escaped ([`one_line`]), so no
/// field can close the region or start a heading.
pub fn render_fields(metadata: Option<&Value>) -> String {
  let Some(fields) = DecisionFields::of_metadata(metadata) else { return String::new() };
  let mut out = String::new();
  if let Some(r) = fields.rationale.as_deref().filter(|r| !r.trim().is_empty()) {
    out.push_str(&format!("**Rationale**: {}\n", one_line(r)));
  }
  let items = |v: &[String]| v.iter().filter(|e| !e.trim().is_empty()).take(MAX_ITEMS).cloned().collect::<Vec<_>>();
  let evidence = items(&fields.evidence);
  if !evidence.is_empty() {
    out.push_str("**Evidence**:\n");
    for e in evidence {
      out.push_str(&format!("- {}\n", one_line(&e)));
    }
  }
  let scenarios = items(&fields.test_scenarios);
  if !scenarios.is_empty() {
    out.push_str("**Test Scenarios**:\n");
    for (i, t) in scenarios.iter().enumerate() {
      out.push_str(&format!("{}. {}\n", i + 1, one_line(t)));
    }
  }
  out
}

/// One entry of the Decision Log as read back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DecisionEntry {
  /// The heading text (`2026-01-15T14:30:00Z - Token Expiry Handling`).
  pub heading: String,
  /// The heading's leading timestamp, parsed (any RFC 3339 offset), when it has one.
  pub ts_ms: Option<i64>,
  /// The heading after the timestamp and ` - `.
  pub title: String,
  pub decision: String,
  pub rationale: Option<String>,
  pub evidence: Vec<String>,
  pub test_scenarios: Vec<String>,
  /// Who decided (a table's `Agent` / `Decided By` column, a block's `Agent` bullet).
  pub agent: Option<String>,
  /// Columns of a Decision Log table, or bullets of a `**Decision: X**` block, with no field of
  /// their own: `(name, value)` as written.
  pub extra: Vec<(String, String)>,
  /// The entry's markdown as written (heading included), for level-2 recall.
  pub text: String,
}

#[derive(Clone, Copy, PartialEq)]
enum Field {
  None,
  Evidence,
  Scenarios,
}

/// Splits a heading into its timestamp and title.
fn split_heading(heading: &str) -> (Option<i64>, String) {
  let heading = heading.trim();
  let first = heading.split_whitespace().next().unwrap_or("");
  match parse_ms(first) {
    Some(ms) => {
      let rest = heading[first.len()..].trim_start();
      let rest = rest.strip_prefix('-').or_else(|| rest.strip_prefix('—')).unwrap_or(rest);
      (Some(ms), rest.trim().to_string())
    }
    None => (None, heading.to_string()),
  }
}

/// A list item's text (`- x`, `* x`, `1. x`, `- [ ] x` keep their text), or `None`.
pub(crate) fn list_item(line: &str) -> Option<&str> {
  let t = line.trim_start();
  if let Some(rest) = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")).or_else(|| t.strip_prefix("+ ")) {
    return Some(rest.trim());
  }
  let digits = t.bytes().take_while(u8::is_ascii_digit).count();
  if digits > 0 && digits <= 9 {
    let rest = &t[digits..];
    if let Some(r) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
      return Some(r.trim());
    }
  }
  None
}

/// `**Name**: value` -> (name, value).
fn bold_field(line: &str) -> Option<(&str, &str)> {
  let rest = line.trim_start().strip_prefix("**")?;
  let (name, rest) = rest.split_once("**")?;
  let value = rest.strip_prefix(':')?;
  Some((name.trim(), value.trim()))
}

/// Parses entries from the text of a Decision Log section, given where each entry heading
/// starts (byte offsets into `section`, found by the markdown parser) and each heading's text.
pub(crate) fn parse_entries(section: &str, headings: &[(usize, String)]) -> Vec<DecisionEntry> {
  let mut out = Vec::with_capacity(headings.len());
  for (i, (start, heading)) in headings.iter().enumerate() {
    let mut end = headings.get(i + 1).map_or(section.len(), |h| h.0);
    // A region marker is not part of an entry (the last entry of a region would otherwise carry
    // `<!-- loa:end decisions -->` into level-2 recall): the entry stops at the first one.
    // Written entries escape `<`, so a line that starts with one is a marker.
    let mut at = *start;
    for (n, line) in section[*start..end].split_inclusive('\n').enumerate() {
      if n > 0 && line.trim_start().starts_with("<!-- loa:") {
        end = at;
        break;
      }
      at += line.len();
    }
    let text = &section[*start..end];
    let (ts_ms, title) = split_heading(heading);
    let mut entry = DecisionEntry { heading: heading.clone(), ts_ms, title, ..Default::default() };
    let mut field = Field::None;
    // The first line is the heading itself.
    for line in text.lines().skip(1) {
      let line = line.trim_end_matches('\r');
      if let Some((name, value)) = bold_field(line) {
        field = Field::None;
        match name.to_ascii_lowercase().as_str() {
          "decision" => entry.decision = value.to_string(),
          "rationale" => entry.rationale = Some(value.to_string()),
          "evidence" => {
            field = Field::Evidence;
            if !value.is_empty() {
              entry.evidence.push(value.to_string());
            }
          }
          "test scenarios" => {
            field = Field::Scenarios;
            if !value.is_empty() {
              entry.test_scenarios.push(value.to_string());
            }
          }
          _ => {}
        }
        continue;
      }
      if let Some(item) = list_item(line) {
        match field {
          Field::Evidence => entry.evidence.push(item.to_string()),
          Field::Scenarios => entry.test_scenarios.push(item.to_string()),
          Field::None => {}
        }
      } else if line.trim().starts_with("<!--") {
        // Region markers and comments end a list.
        field = Field::None;
      }
    }
    entry.text = text.trim_end().to_string();
    out.push(entry);
  }
  out
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  #[test]
  fn fields_render_on_one_line_each_and_parse_back() {
    let fields = DecisionFields {
      rationale: Some("Balances\nsecurity <!-- loa:end decisions -->".into()),
      evidence: vec!["`fn a()` [${PROJECT_ROOT}/src/a.rs:3]".into(), "  ".into()],
      test_scenarios: vec!["boundary -> grace".into(), "beyond -> refresh".into()],
    };
    let meta = fields.to_metadata();
    let body = format!("#### 2026-01-15T14:30:00+02:00 - Expiry\n**Decision**: Slide\n{}", render_fields(Some(&meta)));
    assert!(!body.contains("<!--"));
    let entries = parse_entries(&body, &[(0, "2026-01-15T14:30:00+02:00 - Expiry".into())]);
    let e = &entries[0];
    assert_eq!(e.title, "Expiry");
    assert_eq!(e.ts_ms, parse_ms("2026-01-15T12:30:00Z"));
    assert_eq!(e.decision, "Slide");
    assert_eq!(e.rationale.as_deref(), Some("Balances security &lt;!-- loa:end decisions -->"));
    assert_eq!(e.evidence, vec!["`fn a()` [${PROJECT_ROOT}/src/a.rs:3]"]);
    assert_eq!(e.test_scenarios, vec!["boundary -> grace", "beyond -> refresh"]);
    assert_eq!(render_fields(Some(&json!({"other": 1}))), "");
    assert_eq!(render_fields(Some(&json!({"ledger": "not an object"}))), "");
    assert_eq!(render_fields(None), "");
  }

  #[test]
  fn an_entry_stops_at_a_region_marker() {
    let body = "#### 2026-01-15T14:30:00Z - A\n**Decision**: a\n<!-- loa:end decisions -->\n\n### Pending Questions\n";
    let entries = parse_entries(body, &[(0, "2026-01-15T14:30:00Z - A".into())]);
    assert_eq!(entries[0].text, "#### 2026-01-15T14:30:00Z - A\n**Decision**: a");
  }

  #[test]
  fn headings_without_timestamps_keep_their_text() {
    assert_eq!(split_heading("Plain title"), (None, "Plain title".into()));
    assert_eq!(list_item("12. twelve"), Some("twelve"));
    assert_eq!(list_item("1234567890. no"), None);
    assert_eq!(list_item("text"), None);
  }
}
