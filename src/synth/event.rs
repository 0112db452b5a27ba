//! One event file: YAML front matter (`v`, `ts`, `agent`, `branch`, `type`, `reason`) between
//! `---` lines, then a YAML body with the five sections (seed 001). The Lossless Ledger's
//! `session_handoff` trajectory record (one JSON object, docs/ledger.md) is read as an event too.
//!
//! Decoding is bounded ([`MAX_EVENT_BYTES`]) and linear: the front matter is cut at its closing
//! line by one scan, each part is read by the crate's YAML reader ([`crate::yaml`]: nesting at
//! most [`MAX_FLOW_DEPTH`], aliases expanding it by at most 4 KiB), and a failure says which
//! part and which line, never what the file holds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{invalid, LoaError, Result};
use crate::ledger::trajectory::{self, Event as TrajectoryEvent, Record};
use crate::redact::{FieldRedactor, RedactOptions};
use crate::timestamp::{format_ms, parse_ms};

/// The version written in the front matter (`v: 1`). A file without `v` is version 1 (the
/// seed's files have none); any other version is malformed.
pub const EVENT_VERSION: u32 = 1;
/// Largest event file read (`E_TOO_LARGE` on write, reported malformed on read).
pub const MAX_EVENT_BYTES: u64 = 256 * 1024;
/// Longest text of one item (a line of `this_session`, a decision, ...), in bytes.
pub const MAX_ITEM_BYTES: usize = 4096;
/// Most items in one section of one event.
pub const MAX_ITEMS: usize = 1000;

/// A checkpoint line: the status a phase reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointItem {
  /// The phase: a number (`5`) or a name (`review`).
  #[serde(deserialize_with = "scalar_string")]
  pub phase: String,
  pub status: String,
  /// When the phase reached it (RFC 3339); the event's `ts` when absent.
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub updated: Option<String>,
}

/// One session's account, as written and read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
  /// RFC 3339, any offset.
  pub ts: String,
  /// 1-64 of `A-Z a-z 0-9 . _ -`, starting with a letter or digit.
  pub agent: String,
  pub branch: Option<String>,
  /// `session_end`, `handoff`, `checkpoint`, ...: free text, one line.
  pub kind: String,
  pub reason: Option<String>,
  /// What the agent is doing now (last writer wins).
  pub now: Option<String>,
  /// What was done (a grow-only set).
  pub this_session: Vec<String>,
  /// Key -> decision (last writer wins per key).
  pub decisions: BTreeMap<String, String>,
  /// Phases and their status (the last per phase wins).
  pub checkpoints: Vec<CheckpointItem>,
  /// Questions still open (a grow-only set).
  pub open_questions: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct FrontMatter {
  #[serde(default, skip_serializing_if = "Option::is_none")]
  v: Option<u32>,
  #[serde(deserialize_with = "scalar_string")]
  ts: String,
  #[serde(deserialize_with = "scalar_string")]
  agent: String,
  #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_scalar_string")]
  branch: Option<String>,
  #[serde(rename = "type", deserialize_with = "scalar_string")]
  kind: String,
  #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_scalar_string")]
  reason: Option<String>,
}

/// The body's sections; any other key makes the event malformed (a typo would otherwise lose a
/// section silently).
#[derive(Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Body {
  #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "opt_scalar_string")]
  now: Option<String>,
  #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "string_list")]
  this_session: Vec<String>,
  #[serde(default, skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "string_map")]
  decisions: BTreeMap<String, String>,
  #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_empty")]
  checkpoints: Vec<CheckpointItem>,
  #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "string_list")]
  open_questions: Vec<String>,
}

/// A YAML scalar (string, number, bool) as its text: `phase: 5` and `phase: "5"` are one phase,
/// and a timestamp written without quotes stays the text it was.
#[derive(Deserialize)]
#[serde(untagged)]
enum Scalar {
  Text(String),
  Int(i64),
  Uint(u64),
  Float(f64),
  Bool(bool),
}

impl Scalar {
  fn text(self) -> String {
    match self {
      Scalar::Text(s) => s,
      Scalar::Int(n) => n.to_string(),
      Scalar::Uint(n) => n.to_string(),
      Scalar::Float(n) => n.to_string(),
      Scalar::Bool(b) => b.to_string(),
    }
  }
}

fn scalar_string<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<String, D::Error> {
  Scalar::deserialize(d).map(Scalar::text)
}

fn opt_scalar_string<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<String>, D::Error> {
  Option::<Scalar>::deserialize(d).map(|s| s.map(Scalar::text))
}

fn string_list<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<String>, D::Error> {
  Ok(Option::<Vec<Scalar>>::deserialize(d)?.unwrap_or_default().into_iter().map(Scalar::text).collect())
}

fn string_map<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<BTreeMap<String, String>, D::Error> {
  let map = Option::<BTreeMap<String, Scalar>>::deserialize(d)?;
  Ok(map.unwrap_or_default().into_iter().map(|(k, v)| (k, v.text())).collect())
}

fn null_as_empty<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> std::result::Result<Vec<T>, D::Error> {
  Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// One line of text as stored: whitespace runs (newlines included) become one space, ends
/// trimmed, Unicode NFC, so that the same words written twice are one item and no item can
/// start a line of its own in current.md.
pub fn normalise(text: &str) -> String {
  use unicode_normalization::UnicodeNormalization;
  let mut out = String::with_capacity(text.len());
  for word in text.split_whitespace() {
    if !out.is_empty() {
      out.push(' ');
    }
    out.extend(word.nfc());
  }
  out
}

fn check_line(text: &str, what: &str) -> Result<()> {
  if text.len() > MAX_ITEM_BYTES {
    return Err(LoaError::TooLarge { what: what.into(), size: text.len() as u64, limit: MAX_ITEM_BYTES as u64 });
  }
  Ok(())
}

impl Event {
  /// Every text the caller gave redacted: `branch`, `type`, `reason`, `now`, each item of
  /// `this_session` and `open_questions`, each decision and its key (two keys that redact
  /// alike both stay, the second as `<key>~2`: see [`crate::redact::fields`]), checkpoint
  /// phases and statuses. `ts` and `agent` are checked names and stay.
  pub fn redact(&mut self, options: &RedactOptions) {
    let mut r = FieldRedactor::new(options);
    r.opt_mut("branch", &mut self.branch);
    r.text_mut("type", &mut self.kind);
    r.opt_mut("reason", &mut self.reason);
    r.opt_mut("now", &mut self.now);
    r.list_mut("this_session", &mut self.this_session);
    r.list_mut("open_questions", &mut self.open_questions);
    let decisions = std::mem::take(&mut self.decisions);
    self.decisions = r
      .keys("decisions", decisions)
      .into_iter()
      .map(|(key, value)| {
        let value = r.text(&format!("decisions.{key}"), &value);
        (key, value)
      })
      .collect();
    for (i, c) in self.checkpoints.iter_mut().enumerate() {
      r.text_mut(&format!("checkpoints[{i}].phase"), &mut c.phase);
      r.text_mut(&format!("checkpoints[{i}].status"), &mut c.status);
    }
  }

  /// Checks everything the synthesiser relies on: a parseable `ts`, a plain `agent`, a
  /// non-empty `type`, items within bounds, checkpoint times parseable. The error names the
  /// field, never its value.
  pub fn validate(&self) -> Result<i64> {
    let ts = parse_ms(&self.ts).ok_or_else(|| {
      LoaError::InvalidArgument("`ts` must be an RFC 3339 timestamp such as 2026-01-02T10:00:00Z".into())
    })?;
    trajectory::check_agent(&self.agent)?;
    if normalise(&self.kind).is_empty() {
      return invalid("`type` must not be empty");
    }
    for (what, text) in [("type", Some(&self.kind)), ("branch", self.branch.as_ref()), ("reason", self.reason.as_ref())]
    {
      if let Some(text) = text {
        check_line(text, what)?;
      }
    }
    if let Some(now) = &self.now {
      check_line(now, "now")?;
    }
    let sections = [
      ("this_session", self.this_session.len()),
      ("decisions", self.decisions.len()),
      ("checkpoints", self.checkpoints.len()),
      ("open_questions", self.open_questions.len()),
    ];
    for (what, n) in sections {
      if n > MAX_ITEMS {
        return Err(LoaError::TooLarge {
          what: format!("`{what}` ({n} items)"),
          size: n as u64,
          limit: MAX_ITEMS as u64,
        });
      }
    }
    for item in self.this_session.iter().chain(&self.open_questions) {
      check_line(item, "an item")?;
    }
    for (key, value) in &self.decisions {
      check_line(key, "a decision key")?;
      check_line(value, "a decision")?;
      if normalise(key).is_empty() {
        return invalid("a decision key must not be empty");
      }
    }
    for c in &self.checkpoints {
      check_line(&c.phase, "a checkpoint phase")?;
      check_line(&c.status, "a checkpoint status")?;
      if normalise(&c.phase).is_empty() {
        return invalid("a checkpoint phase must not be empty");
      }
      if let Some(updated) = &c.updated {
        if parse_ms(updated).is_none() {
          return invalid("a checkpoint's `updated` must be an RFC 3339 timestamp");
        }
      }
    }
    Ok(ts)
  }

  /// The file's bytes: front matter (`ts` in the canonical UTC form), a blank line, the body.
  pub fn encode(&self) -> Result<Vec<u8>> {
    let ts = self.validate()?;
    let front = FrontMatter {
      v: Some(EVENT_VERSION),
      ts: format_ms(ts),
      agent: self.agent.clone(),
      branch: self.branch.clone(),
      kind: self.kind.clone(),
      reason: self.reason.clone(),
    };
    let body = Body {
      now: self.now.clone(),
      this_session: self.this_session.clone(),
      decisions: self.decisions.clone(),
      checkpoints: self.checkpoints.clone(),
      open_questions: self.open_questions.clone(),
    };
    let yaml = |v: &dyn erased::Yaml| v.to_yaml();
    let mut out = b"---\n".to_vec();
    out.extend(yaml(&front)?.into_bytes());
    out.extend_from_slice(b"---\n");
    let body_text = yaml(&body)?;
    if body_text.trim() != "{}" {
      out.push(b'\n');
      out.extend(body_text.into_bytes());
    }
    if out.len() as u64 > MAX_EVENT_BYTES {
      return Err(LoaError::TooLarge { what: "the event".into(), size: out.len() as u64, limit: MAX_EVENT_BYTES });
    }
    Ok(out)
  }

  /// Reads an event file's bytes (`json`: the file is a `session_handoff` record). The error is
  /// a reason without any of the file's text.
  pub fn decode(bytes: &[u8], json: bool) -> std::result::Result<Event, String> {
    if bytes.len() as u64 > MAX_EVENT_BYTES {
      return Err(format!("{} bytes, over the limit of {MAX_EVENT_BYTES}", bytes.len()));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "not valid UTF-8".to_string())?;
    let event = if json { from_handoff(text)? } else { from_markdown(text)? };
    event.validate().map_err(|e| match e {
      LoaError::InvalidArgument(m) => m,
      other => other.to_string(),
    })?;
    Ok(event)
  }
}

/// Serialising through one function keeps the YAML writer in one place.
mod erased {
  pub trait Yaml {
    fn to_yaml(&self) -> crate::Result<String>;
  }
  impl<T: serde::Serialize> Yaml for T {
    fn to_yaml(&self) -> crate::Result<String> {
      crate::yaml::to_string(self).map_err(|e| crate::LoaError::Internal(format!("YAML writer: {e}")))
    }
  }
}

/// Deepest nesting of collections (block or flow) a part may have ([`crate::yaml::MAX_DEPTH`]).
pub const MAX_FLOW_DEPTH: usize = crate::yaml::MAX_DEPTH;

/// How event YAML is read ([`crate::yaml`]): at most an event's size, nested at most
/// [`MAX_FLOW_DEPTH`] levels, and aliases may not make it larger than its own text plus 4 KiB.
/// Event files arrive from other machines; what one adds to `current.md` is then bounded by its
/// size, however its values refer to each other.
const EVENT_YAML: crate::yaml::Limits = crate::yaml::Limits {
  max_bytes: MAX_EVENT_BYTES as usize,
  max_depth: MAX_FLOW_DEPTH,
  expansion_factor: 1,
  expansion_slack: 4096,
};

/// The reason for a part that was not read; `line_offset` is how many lines of the file come
/// before the part.
fn yaml_error(part: &str, e: &crate::yaml::Error, line_offset: usize) -> String {
  use crate::yaml::Error;
  let at = e.line().map(|l| format!(" (line {})", l + line_offset)).unwrap_or_default();
  match e {
    Error::Syntax(_) => format!("{part} is not a valid event{at}"),
    Error::TooDeep { limit, .. } => format!("{part} is nested deeper than {limit} levels{at}"),
    Error::Expansion { .. } | Error::RecursiveAlias { .. } => {
      format!("{part} expands through its aliases beyond its own size{at}")
    }
    Error::TooLarge { size, limit } => format!("{part} is {size} bytes, over the limit of {limit}"),
  }
}

/// Splits `---\n<front>\n---\n<body>`; the closing line is found in one pass.
fn from_markdown(text: &str) -> std::result::Result<Event, String> {
  let text = text.strip_prefix('\u{feff}').unwrap_or(text);
  let rest = text
    .strip_prefix("---\n")
    .or_else(|| text.strip_prefix("---\r\n"))
    .ok_or_else(|| "no front matter (the file must start with a `---` line)".to_string())?;
  let mut offset = 0;
  let mut close = None;
  for line in rest.split_inclusive('\n') {
    if line.trim_end_matches(['\n', '\r']) == "---" {
      close = Some((offset, offset + line.len()));
      break;
    }
    offset += line.len();
  }
  let (front_end, body_start) = close.ok_or_else(|| "the front matter has no closing `---` line".to_string())?;
  let front_text = &rest[..front_end];
  let body_text = &rest[body_start..];
  let front: FrontMatter =
    crate::yaml::from_str(front_text, &EVENT_YAML).map_err(|e| yaml_error("the front matter", &e, 1))?;
  if let Some(v) = front.v {
    if v != EVENT_VERSION {
      return Err(format!("version {v} is not one this library reads ({EVENT_VERSION})"));
    }
  }
  // Lines before the body: the two `---` lines and the front matter's.
  let body_line = 2 + front_text.matches('\n').count();
  let body: Body = if body_text.trim().is_empty() {
    Body::default()
  } else {
    crate::yaml::from_str(body_text, &EVENT_YAML).map_err(|e| yaml_error("the body", &e, body_line))?
  };
  Ok(Event {
    ts: front.ts,
    agent: front.agent,
    branch: front.branch,
    kind: front.kind,
    reason: front.reason,
    now: body.now,
    this_session: body.this_session,
    decisions: body.decisions,
    checkpoints: body.checkpoints,
    open_questions: body.open_questions,
  })
}

/// The Lossless Ledger's handoff (`phase: session_handoff`, docs/ledger.md) as an event of type
/// `session_handoff`: what it names goes to `this_session`, its readiness to `reason`.
fn from_handoff(text: &str) -> std::result::Result<Event, String> {
  // The trajectory's own line reader: a record without `v` (the seed's) is version 1, another
  // version is refused, in one place for every reader of trajectory records.
  let record: Record = trajectory::parse_record(text.trim().as_bytes())?;
  let TrajectoryEvent::SessionHandoff { session_id, bead_id, notes_refs, next_session_ready, .. } = record.event else {
    return Err("a trajectory record other than `session_handoff`".into());
  };
  let mut this_session = vec![match &bead_id {
    Some(bead) => format!("session {session_id} handed off (bead {bead})"),
    None => format!("session {session_id} handed off"),
  }];
  this_session.extend(notes_refs.iter().map(|r| format!("notes: {r}")));
  Ok(Event {
    ts: record.ts,
    agent: record.agent,
    branch: None,
    kind: "session_handoff".into(),
    reason: Some(if next_session_ready { "next_session_ready" } else { "next_session_not_ready" }.into()),
    now: None,
    this_session,
    decisions: BTreeMap::new(),
    checkpoints: Vec::new(),
    open_questions: Vec::new(),
  })
}
