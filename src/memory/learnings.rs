//! The learnings store: `learnings.json`, one entry per learning, merged by id.
//!
//! ```json
//! { "learnings": [ { "id": "<sha256>", "content": "...", "importance": 0.8, ... } ], "version": 1 }
//! ```
//!
//! The pipeline owns the fields it writes (see [`OWNED_FIELDS`]); any other field of an entry
//! (for example `"status": "retired"`, set by a human or another tool) and any other top-level key
//! is kept. Entries are never removed. Keys are written sorted, so the same content always gives
//! the same bytes.
//!
//! **Foreign values are kept exactly.** Another tool may write numbers no double holds
//! (`123456789012345678901234567890`, `1e400`, `0.1000000000000000055511151231257827`): every
//! value is kept as the exact JSON text it was read as, and only an owned field whose value
//! changes is ever written anew. So a foreign value is never rounded, and one out-of-range
//! number no longer makes the whole file unreadable.
//!
//! What the store refuses, precisely, leaving the file in place and unchanged
//! (`E_STATE_CORRUPT`, naming the key path; the next consolidation works once it is fixed):
//! - a duplicate key at the top level or in an entry (`owner`, `learnings[3].status`): JSON
//!   parsers disagree about which of the two counts, so picking one would silently change the
//!   file's meaning. Duplicate keys deeper inside a foreign value are part of that value's
//!   exact text and are kept as they are;
//! - a `version` other than 1 (a newer format this library does not know). A file without
//!   `version` is read as version 1.
//!
//! A file that is not JSON at all, or whose shape is wrong (the top level is not an object,
//! `learnings` is not an array of objects with a string `id`), is corrupt: it is never read as
//! empty and never overwritten. [`load`] with `quarantine` moves it aside to
//! `<name>.corrupt-<timestamp>` and fails with `E_STATE_CORRUPT`; the next consolidation
//! rebuilds the store from the memory records, so nothing is lost.
//!
//! The file is read as a regular file (never through a symlink) of at most
//! [`MAX_LEARNINGS_BYTES`](super::MAX_LEARNINGS_BYTES).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::types::{Learning, MemoryKind, MAX_LEARNINGS_BYTES};
use crate::error::{LoaError, Result};
use crate::fsutil::StateDir;
use crate::gates::DEFAULT_CONFIDENCE;

pub const VERSION: u64 = 1;
/// Fields of an entry the pipeline writes and updates; every other field is left alone.
pub const OWNED_FIELDS: [&str; 9] =
  ["id", "type", "content", "importance", "confidence", "tags", "sessionId", "agentId", "createdAt"];

/// One member's value: as read (exact text), or as the pipeline set it.
#[derive(Debug, Clone)]
enum Member {
  Raw(Box<RawValue>),
  Owned(Value),
}

impl Member {
  /// The value, when it is one a `Value` can hold (a number out of range is not).
  fn value(&self) -> Option<Value> {
    match self {
      Member::Raw(raw) => serde_json::from_str(raw.get()).ok(),
      Member::Owned(v) => Some(v.clone()),
    }
  }

  fn parse<T: for<'de> Deserialize<'de>>(&self) -> Option<T> {
    match self {
      Member::Raw(raw) => serde_json::from_str(raw.get()).ok(),
      Member::Owned(v) => T::deserialize(v).ok(),
    }
  }
}

impl Serialize for Member {
  fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
    match self {
      Member::Raw(raw) => raw.serialize(s),
      Member::Owned(v) => v.serialize(s),
    }
  }
}

type Members = BTreeMap<String, Member>;

/// One entry of the store.
#[derive(Debug, Clone)]
pub struct StoredEntry {
  id: String,
  members: Members,
}

impl StoredEntry {
  pub fn id(&self) -> &str {
    &self.id
  }

  /// The value of `key`, when it is one a `Value` can hold.
  pub fn get(&self, key: &str) -> Option<Value> {
    self.members.get(key).and_then(Member::value)
  }

  /// The exact JSON text of `key` as stored (for values as read) or as it will be written.
  pub fn text(&self, key: &str) -> Option<String> {
    match self.members.get(key)? {
      Member::Raw(raw) => Some(raw.get().to_string()),
      Member::Owned(v) => serde_json::to_string(v).ok(),
    }
  }

  fn string(&self, key: &str) -> Option<String> {
    self.members.get(key).and_then(Member::parse::<String>)
  }

  fn number(&self, key: &str) -> Option<f64> {
    self.members.get(key).and_then(Member::parse::<f64>)
  }

  /// The entry as `activeLearnings` reports it. A `type` that is not a memory kind reads as
  /// `learning`; values that are missing or of another type read as their defaults.
  pub fn learning(&self) -> Learning {
    let tags = self
      .members
      .get("tags")
      .and_then(Member::parse::<Vec<Box<RawValue>>>)
      .map(|items| items.iter().filter_map(|t| serde_json::from_str::<String>(t.get()).ok()).collect())
      .unwrap_or_default();
    Learning {
      id: self.id.clone(),
      kind: self.string("type").and_then(|t| MemoryKind::parse(&t).ok()).unwrap_or(MemoryKind::Learning),
      content: self.string("content").unwrap_or_default(),
      importance: self.number("importance").unwrap_or(DEFAULT_CONFIDENCE),
      confidence: self.number("confidence"),
      tags,
      session_id: self.string("sessionId").unwrap_or_default(),
      agent_id: self.string("agentId"),
      created_at: self.string("createdAt").unwrap_or_default(),
      status: self.string("status").unwrap_or_else(|| "active".into()),
    }
  }
}

/// The parsed store.
#[derive(Debug, Clone)]
pub struct Store {
  /// Top-level members other than `learnings`.
  top: Members,
  entries: Vec<StoredEntry>,
}

impl Default for Store {
  fn default() -> Self {
    let mut top = Members::new();
    top.insert("version".into(), Member::Owned(Value::from(VERSION)));
    Store { top, entries: Vec::new() }
  }
}

/// Why a file cannot be used.
enum Problem {
  /// Not JSON, or the wrong shape: moved aside (with `quarantine`) and rebuilt.
  Corrupt(String),
  /// Understood, but using it would change what it means: left in place for a human.
  Refused(String),
}

/// The members of a JSON object in file order, duplicates included.
struct RawMembers(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for RawMembers {
  fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
      type Value = RawMembers;
      fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
      }
      fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<RawMembers, A::Error> {
        let mut out = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
          let value: Box<RawValue> = map.next_value()?;
          out.push((key, value));
        }
        Ok(RawMembers(out))
      }
    }
    d.deserialize_map(V)
  }
}

/// A key as named in a message: at most 64 characters, control characters replaced. Keys of
/// this file are field names, not content; the cap keeps a pathological one out of logs.
fn shown_key(key: &str) -> String {
  let mut out: String = key.chars().take(64).map(|c| if c.is_control() { '?' } else { c }).collect();
  if key.chars().count() > 64 {
    out.push('…');
  }
  out
}

fn unique(members: RawMembers, prefix: &str) -> std::result::Result<Members, Problem> {
  let mut out = Members::new();
  for (key, value) in members.0 {
    if out.contains_key(&key) {
      let path = if prefix.is_empty() { shown_key(&key) } else { format!("{prefix}.{}", shown_key(&key)) };
      return Err(Problem::Refused(format!("duplicate key `{path}`")));
    }
    out.insert(key, Member::Raw(value));
  }
  Ok(out)
}

fn parse(bytes: &[u8]) -> std::result::Result<Store, Problem> {
  let text = std::str::from_utf8(bytes).map_err(|_| Problem::Corrupt("not valid UTF-8".into()))?;
  let members: RawMembers = serde_json::from_str(text).map_err(|e| Problem::Corrupt(e.to_string()))?;
  let mut top = unique(members, "")?;
  if let Some(version) = top.get("version") {
    if version.parse::<u64>() != Some(VERSION) {
      return Err(Problem::Refused(format!("`version` is not {VERSION}, the only version this library reads")));
    }
  }
  let list: Vec<RawMembers> = match top.remove("learnings") {
    None => Vec::new(),
    Some(member) => member.parse().ok_or_else(|| Problem::Corrupt("`learnings` is not an array of objects".into()))?,
  };
  let mut entries = Vec::with_capacity(list.len());
  for (i, raw) in list.into_iter().enumerate() {
    let members = unique(raw, &format!("learnings[{i}]"))?;
    let id = members
      .get("id")
      .and_then(Member::parse::<String>)
      .ok_or_else(|| Problem::Corrupt(format!("learnings[{i}] has no string `id`")))?;
    entries.push(StoredEntry { id, members });
  }
  Ok(Store { top, entries })
}

/// Reads the store `name` in `dir`. `None` when the file does not exist. A corrupt file fails
/// with `E_STATE_CORRUPT`; with `quarantine_corrupt` it is first moved aside (the error names
/// where). A refused one (see the module docs) fails with `E_STATE_CORRUPT` and stays where it
/// is. Not a regular file: `E_NOT_REGULAR_FILE`; over the size limit: `E_TOO_LARGE`.
pub fn load(dir: &StateDir, name: &OsStr, quarantine_corrupt: bool) -> Result<Option<Store>> {
  let Some(bytes) = dir.read(name, MAX_LEARNINGS_BYTES)? else { return Ok(None) };
  match parse(&bytes) {
    Ok(store) => Ok(Some(store)),
    Err(Problem::Corrupt(reason)) => Err(corrupt(dir, name, reason, quarantine_corrupt)),
    Err(Problem::Refused(reason)) => Err(LoaError::StateCorrupt {
      path: dir.child_path(name).display().to_string(),
      reason: format!("{reason}; left untouched (fix it by hand, then consolidate again)"),
    }),
  }
}

/// Decodes the bytes of a learnings store, as [`load`] does but without a file: a corrupt or
/// refused store is `E_STATE_CORRUPT`. For tools and fuzzing.
pub fn decode(bytes: &[u8]) -> Result<Store> {
  parse(bytes).map_err(|problem| {
    let reason = match problem {
      Problem::Corrupt(r) | Problem::Refused(r) => r,
    };
    LoaError::StateCorrupt { path: "learnings.json".into(), reason }
  })
}

/// The `E_STATE_CORRUPT` error for `name` in `dir`, after moving it aside when asked to.
pub fn corrupt(dir: &StateDir, name: &OsStr, reason: String, quarantine_corrupt: bool) -> LoaError {
  let display = dir.child_path(name).display().to_string();
  if !quarantine_corrupt {
    return LoaError::StateCorrupt {
      path: display,
      reason: format!("{reason}; left untouched (consolidation moves it aside)"),
    };
  }
  match dir.quarantine(name) {
    Ok(moved) => LoaError::StateCorrupt {
      path: display,
      reason: format!("{reason}; moved aside to {} and will be rebuilt by the next consolidation", moved.display()),
    },
    Err(e) => e,
  }
}

impl Store {
  pub fn entries(&self) -> &[StoredEntry] {
    &self.entries
  }

  /// The exact JSON text of a top-level member.
  pub fn top_text(&self, key: &str) -> Option<String> {
    match self.top.get(key)? {
      Member::Raw(raw) => Some(raw.get().to_string()),
      Member::Owned(v) => serde_json::to_string(v).ok(),
    }
  }

  /// Merges generated entries (objects with at least `id`); returns how many were added or
  /// changed. Owned fields missing from a generated entry are removed from the stored one; an
  /// owned field whose stored value equals the generated one keeps its exact text.
  pub fn merge(&mut self, generated: &[Map<String, Value>]) -> usize {
    let mut changed = 0;
    for new in generated {
      let Some(id) = new.get("id").and_then(Value::as_str) else { continue };
      match self.entries.iter_mut().find(|e| e.id == id) {
        None => {
          let members = new.iter().map(|(k, v)| (k.clone(), Member::Owned(v.clone()))).collect();
          self.entries.push(StoredEntry { id: id.to_string(), members });
          changed += 1;
        }
        Some(existing) => {
          let mut differs = false;
          for field in OWNED_FIELDS {
            match new.get(field) {
              Some(value) if existing.members.get(field).and_then(Member::value).as_ref() != Some(value) => {
                existing.members.insert(field.to_string(), Member::Owned(value.clone()));
                differs = true;
              }
              None if existing.members.contains_key(field) => {
                existing.members.remove(field);
                differs = true;
              }
              _ => {}
            }
          }
          changed += differs as usize;
        }
      }
    }
    changed
  }

  /// Pretty JSON with sorted keys and a final newline; values as read are written as their
  /// exact text.
  pub fn to_bytes(&self) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(self).expect("the store serialises");
    bytes.push(b'\n');
    bytes
  }
}

struct EntryList<'a>(&'a [StoredEntry]);

impl Serialize for EntryList<'_> {
  fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(self.0.iter().map(|e| &e.members))
  }
}

impl Serialize for Store {
  fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(self.top.len() + 1))?;
    let mut listed = false;
    for (key, value) in &self.top {
      if !listed && key.as_str() > "learnings" {
        map.serialize_entry("learnings", &EntryList(&self.entries))?;
        listed = true;
      }
      map.serialize_entry(key, value)?;
    }
    if !listed {
      map.serialize_entry("learnings", &EntryList(&self.entries))?;
    }
    map.end()
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;
  use std::fs;
  use std::path::Path;

  fn entry(id: &str, content: &str) -> Map<String, Value> {
    json!({ "id": id, "content": content, "importance": 0.8 }).as_object().unwrap().clone()
  }

  fn name() -> &'static OsStr {
    OsStr::new("learnings.json")
  }

  #[test]
  fn merge_is_idempotent_and_keeps_foreign_fields() {
    let dir = tempfile::tempdir().unwrap();
    let state = StateDir::open_root(dir.path()).unwrap();
    let mut store = Store::default();
    assert_eq!(store.merge(&[entry("a", "one"), entry("b", "two")]), 2);
    assert_eq!(store.merge(&[entry("a", "one"), entry("b", "two")]), 0);
    // A human retires the first and adds a top-level key.
    let mut doc: Value = serde_json::from_slice(&store.to_bytes()).unwrap();
    doc["learnings"][0]["status"] = json!("retired");
    doc["owner"] = json!("human");
    fs::write(dir.path().join(name()), serde_json::to_vec(&doc).unwrap()).unwrap();
    let mut store = load(&state, name(), true).unwrap().unwrap();
    assert_eq!(store.merge(&[entry("a", "one, revised")]), 1);
    assert_eq!(store.entries()[0].get("status"), Some(json!("retired")));
    assert_eq!(store.entries()[0].get("content"), Some(json!("one, revised")));
    assert_eq!(store.top_text("owner").as_deref(), Some("\"human\""));
    let bytes = store.to_bytes();
    fs::write(dir.path().join(name()), &bytes).unwrap();
    let loaded = load(&state, name(), true).unwrap().unwrap();
    assert_eq!(loaded.to_bytes(), bytes, "reading and writing back changes nothing");
  }

  #[test]
  fn corrupt_file_is_reported_and_moved_aside_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let state = StateDir::open_root(dir.path()).unwrap();
    let path = dir.path().join(name());
    assert!(load(&state, name(), true).unwrap().is_none());
    let mut bytes = Store::default().to_bytes();
    bytes[3] = b'#';
    for (content, why) in [
      (bytes.clone(), "one bad byte"),
      (b"[]".to_vec(), "not an object"),
      (br#"{"learnings":[{"x":1}]}"#.to_vec(), "no id"),
      (br#"{"learnings":{}}"#.to_vec(), "not an array"),
      (b"{\"learnings\":[],\"x\":\"\xff\"}".to_vec(), "not UTF-8"),
    ] {
      fs::write(&path, &content).unwrap();
      let err = load(&state, name(), false).unwrap_err();
      assert_eq!(err.code(), "E_STATE_CORRUPT", "{why}");
      assert_eq!(fs::read(&path).unwrap(), content, "reading never moves: {why}");
      let err = load(&state, name(), true).unwrap_err();
      assert_eq!(err.code(), "E_STATE_CORRUPT");
      assert!(!path.exists(), "{why}");
      let moved: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
      assert!(moved.iter().any(|m| fs::read(m).unwrap() == content), "{why}: bytes kept");
      assert!(err.to_string().contains(".corrupt-"), "{err}");
      for m in moved {
        fs::remove_file(m).unwrap();
      }
    }
  }

  #[test]
  fn refused_files_stay_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let state = StateDir::open_root(dir.path()).unwrap();
    for (content, needle) in [
      (r#"{"learnings":[],"version":2}"#, "`version`"),
      (r#"{"learnings":[],"version":"1"}"#, "`version`"),
      (r#"{"a":1,"a":1,"learnings":[]}"#, "`a`"),
      (r#"{"learnings":[{"id":"x","id":"y"}]}"#, "`learnings[0].id`"),
    ] {
      fs::write(dir.path().join(name()), content).unwrap();
      let err = load(&state, name(), true).unwrap_err();
      assert_eq!(err.code(), "E_STATE_CORRUPT");
      assert!(err.to_string().contains(needle), "{err}");
      assert_eq!(fs::read_to_string(dir.path().join(name())).unwrap(), content);
    }
    // Duplicates inside a foreign value are part of its exact text.
    let nested = r#"{"learnings":[{"id":"x","extra":{"k":1,"k":2}}]}"#;
    fs::write(dir.path().join(name()), nested).unwrap();
    let store = load(&state, name(), true).unwrap().unwrap();
    assert_eq!(store.entries()[0].text("extra").as_deref(), Some(r#"{"k":1,"k":2}"#));
    assert!(Path::new(&dir.path().join(name())).exists());
  }
}
