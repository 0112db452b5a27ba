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
//! A file that does not parse, or whose shape is wrong, is corrupt: it is never read as empty and
//! never overwritten. [`load`] with `quarantine` moves it aside to `<name>.corrupt-<timestamp>`
//! and fails with `E_STATE_CORRUPT`; the next consolidation rebuilds the store from the memory
//! records, so nothing is lost.

use std::fs;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{LoaError, Result};
use crate::fsutil::quarantine;

pub const VERSION: u64 = 1;
/// Fields of an entry the pipeline writes and updates; every other field is left alone.
pub const OWNED_FIELDS: [&str; 9] =
  ["id", "type", "content", "importance", "confidence", "tags", "sessionId", "agentId", "createdAt"];

/// The parsed store: a JSON object whose `learnings` is an array of objects with a string `id`.
#[derive(Debug, Clone, PartialEq)]
pub struct Store {
  pub doc: Map<String, Value>,
}

impl Default for Store {
  fn default() -> Self {
    let mut doc = Map::new();
    doc.insert("version".into(), Value::from(VERSION));
    doc.insert("learnings".into(), Value::Array(Vec::new()));
    Store { doc }
  }
}

fn check_shape(value: Value) -> std::result::Result<Map<String, Value>, String> {
  let Value::Object(mut doc) = value else { return Err("the top level is not an object".into()) };
  match doc.get("learnings") {
    None => {
      doc.insert("learnings".into(), Value::Array(Vec::new()));
    }
    Some(Value::Array(entries)) => {
      for (i, entry) in entries.iter().enumerate() {
        if !entry.get("id").is_some_and(Value::is_string) {
          return Err(format!("learnings[{i}] has no string `id`"));
        }
      }
    }
    Some(_) => return Err("`learnings` is not an array".into()),
  }
  Ok(doc)
}

/// Reads the store. `None` when the file does not exist. A corrupt file fails with
/// `E_STATE_CORRUPT`; with `quarantine` it is first moved aside (the error names where).
pub fn load(path: &Path, quarantine_corrupt: bool) -> Result<Option<Store>> {
  let bytes = match fs::read(path) {
    Ok(bytes) => bytes,
    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
    Err(e) => return Err(LoaError::io("read", path, e)),
  };
  let parsed = serde_json::from_slice::<Value>(&bytes).map_err(|e| e.to_string()).and_then(check_shape);
  match parsed {
    Ok(doc) => Ok(Some(Store { doc })),
    Err(reason) => Err(corrupt(path, reason, quarantine_corrupt)),
  }
}

/// The `E_STATE_CORRUPT` error for `path`, after moving it aside when asked to.
pub fn corrupt(path: &Path, reason: String, quarantine_corrupt: bool) -> LoaError {
  let display = path.display().to_string();
  if !quarantine_corrupt {
    return LoaError::StateCorrupt {
      path: display,
      reason: format!("{reason}; left untouched (consolidation moves it aside)"),
    };
  }
  match quarantine(path) {
    Ok(moved) => LoaError::StateCorrupt {
      path: display,
      reason: format!("{reason}; moved aside to {} and will be rebuilt by the next consolidation", moved.display()),
    },
    Err(e) => e,
  }
}

impl Store {
  pub fn entries(&self) -> &[Value] {
    self.doc.get("learnings").and_then(Value::as_array).map_or(&[], Vec::as_slice)
  }

  fn entries_mut(&mut self) -> &mut Vec<Value> {
    if !self.doc.get("learnings").is_some_and(Value::is_array) {
      self.doc.insert("learnings".into(), Value::Array(Vec::new()));
    }
    self.doc.get_mut("learnings").and_then(Value::as_array_mut).expect("learnings is an array")
  }

  /// Merges generated entries (objects with at least `id`); returns how many were added or
  /// changed. Owned fields missing from a generated entry are removed from the stored one.
  pub fn merge(&mut self, generated: &[Map<String, Value>]) -> usize {
    let mut changed = 0;
    for new in generated {
      let Some(id) = new.get("id").and_then(Value::as_str) else { continue };
      let entries = self.entries_mut();
      match entries.iter_mut().find(|e| e.get("id").and_then(Value::as_str) == Some(id)) {
        None => {
          entries.push(Value::Object(new.clone()));
          changed += 1;
        }
        Some(Value::Object(existing)) => {
          let mut differs = false;
          for field in OWNED_FIELDS {
            match new.get(field) {
              Some(value) if existing.get(field) != Some(value) => {
                existing.insert(field.to_string(), value.clone());
                differs = true;
              }
              None if existing.contains_key(field) => {
                existing.remove(field);
                differs = true;
              }
              _ => {}
            }
          }
          changed += differs as usize;
        }
        Some(_) => {}
      }
    }
    changed
  }

  /// Pretty JSON with sorted keys and a final newline.
  pub fn to_bytes(&self) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(&Value::Object(self.doc.clone())).unwrap_or_default();
    bytes.push(b'\n');
    bytes
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  fn entry(id: &str, content: &str) -> Map<String, Value> {
    json!({ "id": id, "content": content, "importance": 0.8 }).as_object().unwrap().clone()
  }

  #[test]
  fn merge_is_idempotent_and_keeps_foreign_fields() {
    let mut store = Store::default();
    assert_eq!(store.merge(&[entry("a", "one"), entry("b", "two")]), 2);
    assert_eq!(store.merge(&[entry("a", "one"), entry("b", "two")]), 0);
    let Value::Object(first) = &mut store.entries_mut()[0] else { panic!() };
    first.insert("status".into(), json!("retired"));
    store.doc.insert("owner".into(), json!("human"));
    assert_eq!(store.merge(&[entry("a", "one, revised")]), 1);
    assert_eq!(store.entries()[0]["status"], "retired");
    assert_eq!(store.entries()[0]["content"], "one, revised");
    let bytes = store.to_bytes();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("learnings.json");
    fs::write(&path, &bytes).unwrap();
    let loaded = load(&path, true).unwrap().unwrap();
    assert_eq!(loaded, store);
    assert_eq!(loaded.to_bytes(), bytes);
  }

  #[test]
  fn corrupt_file_is_reported_and_moved_aside_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("learnings.json");
    assert_eq!(load(&path, true).unwrap(), None);
    let mut bytes = Store::default().to_bytes();
    bytes[3] = b'#';
    for (content, why) in [
      (bytes.clone(), "one bad byte"),
      (b"[]".to_vec(), "not an object"),
      (br#"{"learnings":[{"x":1}]}"#.to_vec(), "no id"),
    ] {
      fs::write(&path, &content).unwrap();
      let err = load(&path, false).unwrap_err();
      assert_eq!(err.code(), "E_STATE_CORRUPT", "{why}");
      assert_eq!(fs::read(&path).unwrap(), content, "reading never moves: {why}");
      let err = load(&path, true).unwrap_err();
      assert_eq!(err.code(), "E_STATE_CORRUPT");
      assert!(!path.exists(), "{why}");
      let moved: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
      assert!(moved.iter().any(|m| fs::read(m).unwrap() == content), "{why}: bytes kept");
      assert!(err.to_string().contains(".corrupt-"), "{err}");
    }
  }
}
