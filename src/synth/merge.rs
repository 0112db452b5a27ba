//! The merge: a state-based CRDT whose join is commutative, associative and idempotent, so any
//! set of events, merged in any order and in any grouping, gives one state and one rendering.
//!
//! | section | rule |
//! |---|---|
//! | `now` | last writer wins by (ts, agent, file), then the text |
//! | `this_session`, `open_questions` | union keyed by the full SHA-256 of the normalised item; each keeps its earliest ts |
//! | `decisions` | per key, last writer wins by (ts, agent, file), then the text |
//! | `checkpoints` | per phase, the latest by (`updated`, ts, agent, file), then the status |
//!
//! Every tie is broken by a total order on the values themselves, never by arrival: that is
//! what makes the join commutative even for two events with the same instant and agent.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::event::{normalise, Event};
use crate::timestamp::{format_ms, parse_ms};

/// Who wrote a value, when: the order of last-writer-wins. `ts` is compared as an instant
/// (milliseconds since the epoch), never as text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Stamp {
  pub ts: i64,
  pub agent: String,
  pub file: String,
}

/// A value with the stamp of its writer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Stamped {
  pub stamp: Stamp,
  pub value: String,
}

/// An item of a grow-only set: its text and the earliest instant it was written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Item {
  pub ts: i64,
  pub text: String,
}

/// A phase's status, ordered by when it was reached, then by who wrote it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Phase {
  pub updated: i64,
  pub stamp: Stamp,
  pub status: String,
}

/// The merged state of any number of events.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
  /// The identity of every event merged in (see [`event_id`]): merging one twice counts once.
  pub events: BTreeSet<String>,
  pub latest_ts: Option<i64>,
  pub now: Option<Stamped>,
  /// Hex SHA-256 of the normalised item -> the item.
  pub this_session: BTreeMap<String, Item>,
  /// Normalised key -> the winning decision.
  pub decisions: BTreeMap<String, Stamped>,
  /// Normalised phase -> its latest status.
  pub checkpoints: BTreeMap<String, Phase>,
  pub open_questions: BTreeMap<String, Item>,
}

/// The identity of an event file: SHA-256 over its name, a NUL and its bytes. A file rewritten
/// under the same name is another event; the same file seen twice is one.
pub fn event_id(file: &str, bytes: &[u8]) -> String {
  let mut hash = Sha256::new();
  hash.update(file.as_bytes());
  hash.update([0]);
  hash.update(bytes);
  hex::encode(hash.finalize())
}

fn item_key(text: &str) -> String {
  hex::encode(Sha256::digest(text.as_bytes()))
}

fn max_into<K: Ord, V: Ord>(map: &mut BTreeMap<K, V>, key: K, value: V) {
  match map.get_mut(&key) {
    Some(old) if *old >= value => {}
    Some(old) => *old = value,
    None => {
      map.insert(key, value);
    }
  }
}

fn min_into<K: Ord, V: Ord>(map: &mut BTreeMap<K, V>, key: K, value: V) {
  match map.get_mut(&key) {
    Some(old) if *old <= value => {}
    Some(old) => *old = value,
    None => {
      map.insert(key, value);
    }
  }
}

fn add_items(set: &mut BTreeMap<String, Item>, items: &[String], ts: i64) {
  for item in items {
    let text = normalise(item);
    if !text.is_empty() {
      min_into(set, item_key(&text), Item { ts, text });
    }
  }
}

impl State {
  /// The state of one event (already validated: `ts_ms` is its parsed `ts`) read from `file`
  /// with identity `id`.
  pub fn of_event(id: String, file: &str, ts_ms: i64, event: &Event) -> State {
    let stamp = Stamp { ts: ts_ms, agent: event.agent.clone(), file: file.to_string() };
    let mut state = State { latest_ts: Some(ts_ms), ..State::default() };
    state.events.insert(id);
    if let Some(now) = event.now.as_deref().map(normalise).filter(|n| !n.is_empty()) {
      state.now = Some(Stamped { stamp: stamp.clone(), value: now });
    }
    add_items(&mut state.this_session, &event.this_session, ts_ms);
    add_items(&mut state.open_questions, &event.open_questions, ts_ms);
    for (key, value) in &event.decisions {
      let key = normalise(key);
      if !key.is_empty() {
        max_into(&mut state.decisions, key, Stamped { stamp: stamp.clone(), value: normalise(value) });
      }
    }
    for c in &event.checkpoints {
      let phase = normalise(&c.phase);
      let updated = c.updated.as_deref().and_then(parse_ms).unwrap_or(ts_ms);
      if !phase.is_empty() {
        max_into(&mut state.checkpoints, phase, Phase { updated, stamp: stamp.clone(), status: normalise(&c.status) });
      }
    }
    state
  }

  /// The join: `a.merge(b)` is `b.merge(a)`, grouping does not matter, and merging a state into
  /// itself changes nothing.
  pub fn merge(&mut self, other: &State) {
    self.events.extend(other.events.iter().cloned());
    self.latest_ts = self.latest_ts.max(other.latest_ts);
    if let Some(now) = &other.now {
      if self.now.as_ref().is_none_or(|mine| mine < now) {
        self.now = Some(now.clone());
      }
    }
    for (k, v) in &other.this_session {
      min_into(&mut self.this_session, k.clone(), v.clone());
    }
    for (k, v) in &other.open_questions {
      min_into(&mut self.open_questions, k.clone(), v.clone());
    }
    for (k, v) in &other.decisions {
      max_into(&mut self.decisions, k.clone(), v.clone());
    }
    for (k, v) in &other.checkpoints {
      max_into(&mut self.checkpoints, k.clone(), v.clone());
    }
  }

  /// [`merge`](Self::merge) taking `other` by value (no clones of what is moved in).
  pub fn absorb(&mut self, other: State) {
    if self.events.is_empty() && self.latest_ts.is_none() {
      *self = other;
      return;
    }
    self.merge(&other);
  }

  /// current.md: the five sections in a fixed order, each sorted, then the metadata footer
  /// (`event_count`, `latest_ts`). Nothing in it depends on when or where it was made.
  pub fn render(&self) -> String {
    let mut out = String::from(
      "# Ledger\n\n<!-- Generated by `loa ledger synth` from the event files; edit those, not this file. -->\n\n## Now\n\n",
    );
    match &self.now {
      Some(now) => {
        let _ = writeln!(out, "> {}\n\n_{} at {}_", now.value, now.stamp.agent, format_ms(now.stamp.ts));
      }
      None => out.push_str("_none_\n"),
    }
    section_items(&mut out, "This Session", &self.this_session);
    out.push_str("\n## Decisions\n\n");
    if self.decisions.is_empty() {
      out.push_str("_none_\n");
    }
    for (key, d) in &self.decisions {
      let _ = writeln!(out, "- **{key}**: {} _({}, {})_", d.value, d.stamp.agent, format_ms(d.stamp.ts));
    }
    out.push_str("\n## Checkpoints\n\n");
    if self.checkpoints.is_empty() {
      out.push_str("_none_\n");
    }
    let mut phases: Vec<(&String, &Phase)> = self.checkpoints.iter().collect();
    phases.sort_by(|a, b| phase_order(a.0).cmp(&phase_order(b.0)));
    for (phase, p) in phases {
      let _ = writeln!(out, "- phase {phase}: {} ({}, {})", p.status, p.stamp.agent, format_ms(p.updated));
    }
    section_items(&mut out, "Open Questions", &self.open_questions);
    let latest = self.latest_ts.map_or_else(|| "null".to_string(), format_ms);
    let _ = write!(
      out,
      "\n---\n_synthesized:\n  version: {}\n  event_count: {}\n  latest_ts: {latest}\n---\n",
      super::CURRENT_VERSION,
      self.events.len()
    );
    out
  }
}

/// Numbers first, in numeric order (`2` before `10`), then names.
fn phase_order(phase: &str) -> (u8, u128, &str) {
  match phase.parse::<u128>() {
    Ok(n) if phase.bytes().all(|b| b.is_ascii_digit()) => (0, n, phase),
    _ => (1, 0, phase),
  }
}

fn section_items(out: &mut String, title: &str, set: &BTreeMap<String, Item>) {
  let _ = write!(out, "\n## {title}\n\n");
  if set.is_empty() {
    out.push_str("_none_\n");
    return;
  }
  let mut items: Vec<&Item> = set.values().collect();
  items.sort();
  for item in items {
    let _ = writeln!(out, "- {}", item.text);
  }
}
