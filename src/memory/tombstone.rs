//! Tombstones: the record that a memory was forgotten, without what it said.
//!
//! A memory's id is the sha256 of its normalised content, so keeping the id after forgetting
//! would let anyone who guesses the text confirm it. A tombstone's id is instead
//! HMAC-SHA256(key, `"loa-tombstone-v1\0" || memory id`) under a key of the workspace's own
//! (`tombstone.key` in `signing.keys_dir`, 32 random bytes as hex, created on first use with
//! mode 0600 in a directory of mode 0700, through [`StateDir`] like every state file): without
//! the key, a tombstone confirms nothing. With it, the workspace itself can tell that a memory
//! it is about to import or receive again was forgotten.
//!
//! `tombstones.jsonl` in the grimoire holds one line per tombstone:
//! `{"v":1,"id":"<hmac hex>","at":"<RFC 3339 UTC>","reason":"forget"|"expired"}` and nothing
//! else (no content, no memory id, no agent). Reading rule: lines of version 1 are read; lines
//! of another version, or that do not parse, are kept as they are and ignored.
//!
//! [`Forgotten`] reads this record for copies of the log kept elsewhere: replication's push
//! rewrites the segments it shipped before retention removed them here (docs/replication.md).

use std::collections::HashSet;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::error::{LoaError, Result};
use crate::fsutil::{relative_components, StateDir};

use super::layout::Layout;

pub const KEY_FILE: &str = "tombstone.key";
pub const TOMBSTONES_FILE: &str = "tombstones.jsonl";
/// Version of the tombstone line format written.
pub const VERSION: u32 = 1;
const DOMAIN: &[u8] = b"loa-tombstone-v1\0";
const MAX_KEY_FILE_BYTES: u64 = 4096;
/// Largest tombstones.jsonl read (`E_TOO_LARGE` beyond); about a million tombstones.
const MAX_TOMBSTONES_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, Serialize, Deserialize)]
struct Line {
  v: u32,
  id: String,
  at: String,
  reason: String,
}

/// The keys directory, created (mode 0700 for its last component) when `create`.
fn keys_dir(layout: &Layout, create: bool) -> Result<Option<StateDir>> {
  let mut parts = relative_components(&layout.keys)?;
  let last = parts.pop().expect("relative_components is never empty");
  let parent: std::path::PathBuf = parts.into_iter().collect();
  let Some(parent) = layout.dir(&parent, create)? else { return Ok(None) };
  if create {
    parent.create_subdir_mode(&last, 0o700).map(Some)
  } else {
    parent.subdir(&last)
  }
}

/// The workspace's tombstone key; created when missing and `create`.
pub(super) fn key(layout: &Layout, create: bool) -> Result<Option<Zeroizing<Vec<u8>>>> {
  let Some(dir) = keys_dir(layout, create)? else { return Ok(None) };
  let bad = |reason: &str| LoaError::StateCorrupt {
    path: dir.child_path(KEY_FILE).display().to_string(),
    reason: reason.to_string(),
  };
  if let Some(bytes) = dir.read(KEY_FILE, MAX_KEY_FILE_BYTES)? {
    let bytes = Zeroizing::new(bytes);
    let text = std::str::from_utf8(&bytes).map_err(|_| bad("not hex"))?.trim();
    let key = Zeroizing::new(hex::decode(text).map_err(|_| bad("not hex"))?);
    if key.len() < 16 {
      return Err(bad("shorter than 16 bytes"));
    }
    return Ok(Some(key));
  }
  if !create {
    return Ok(None);
  }
  let mut key = Zeroizing::new(vec![0u8; 32]);
  getrandom::fill(key.as_mut_slice()).map_err(|e| LoaError::Internal(format!("no randomness from the OS: {e}")))?;
  let text = Zeroizing::new(format!("{}\n", hex::encode(key.as_slice())));
  dir.write_atomic(KEY_FILE, text.as_bytes(), Some(0o600))?;
  Ok(Some(key))
}

/// The keyed id of the tombstone of memory `id`.
pub(super) fn tombstone_id(key: &[u8], id: &str) -> String {
  let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes keys of any length");
  mac.update(DOMAIN);
  mac.update(id.as_bytes());
  hex::encode(mac.finalize().into_bytes())
}

/// Appends tombstones (atomically: the file is rewritten whole with the new lines).
pub(super) fn record(grimoire: &StateDir, ids: &[String], at: &str, reason: &str) -> Result<()> {
  if ids.is_empty() {
    return Ok(());
  }
  let mut bytes = grimoire.read(TOMBSTONES_FILE, MAX_TOMBSTONES_BYTES)?.unwrap_or_default();
  if bytes.last().is_some_and(|b| *b != b'\n') {
    bytes.push(b'\n');
  }
  for id in ids {
    let line = Line { v: VERSION, id: id.clone(), at: at.to_string(), reason: reason.to_string() };
    serde_json::to_writer(&mut bytes, &line).map_err(|e| LoaError::Internal(e.to_string()))?;
    bytes.push(b'\n');
  }
  grimoire.write_atomic(TOMBSTONES_FILE, &bytes, None)
}

/// The keyed ids of every tombstone (version 1 lines).
pub(super) fn all(grimoire: &StateDir) -> Result<HashSet<String>> {
  let Some(bytes) = grimoire.read(TOMBSTONES_FILE, MAX_TOMBSTONES_BYTES)? else { return Ok(HashSet::new()) };
  Ok(
    bytes
      .split(|&b| b == b'\n')
      .filter_map(|line| serde_json::from_slice::<Line>(line).ok())
      .filter(|l| l.v == VERSION)
      .map(|l| l.id)
      .collect(),
  )
}

/// What this workspace forgot, for rewriting copies of its log kept elsewhere: the replica's
/// segments that retention removed here after they were shipped (docs/replication.md). Read
/// from the durable record forgetting leaves (`tombstones.jsonl` and the tombstone key), so it
/// needs no memory id: a record is matched by computing its memory's keyed tombstone id.
pub struct Forgotten {
  key: Option<Zeroizing<Vec<u8>>>,
  tombstones: HashSet<String>,
  /// Memories held here now (record files and the records still in the WAL): written again
  /// after they were forgotten, so their records elsewhere are not forgotten (another machine
  /// forgetting by id would lose the memory this one holds).
  present: HashSet<String>,
}

impl Forgotten {
  /// Reads the workspace's tombstones and key; changes and creates nothing. A workspace that
  /// never forgot gives an empty set (and reads nothing more).
  pub fn load(options: &crate::memory::StoreOptions) -> Result<Forgotten> {
    let layout = Layout::resolve(options)?;
    let root = layout.root()?;
    let tombstones = match layout.dir_in(&root, &layout.grimoire, false)? {
      Some(grimoire) => all(&grimoire)?,
      None => HashSet::new(),
    };
    if tombstones.is_empty() {
      return Ok(Forgotten { key: None, tombstones, present: HashSet::new() });
    }
    let key = key(&layout, false)?;
    let present = super::store::known_hashes(&layout)?;
    Ok(Forgotten { key, tombstones, present })
  }

  /// The keyed ids of every tombstone recorded (version 1 lines of `tombstones.jsonl`).
  pub fn tombstones(&self) -> &HashSet<String> {
    &self.tombstones
  }

  /// The tombstone id of memory `id`, when that memory is forgotten (its tombstone is among
  /// `among`) and not held here again.
  fn forgotten_among(&self, id: &str, among: &HashSet<String>) -> Option<String> {
    let key = self.key.as_ref()?;
    if self.present.contains(id) {
      return None;
    }
    let tombstone = tombstone_id(key, id);
    among.contains(&tombstone).then_some(tombstone)
  }

  /// The record that replaces `record` when it wrote a memory whose tombstone is among `among`
  /// (and which is not held here again): exactly the tombstone record `forget` writes in the
  /// local log, same seq, so a machine mirroring the copy forgets the memory as it would from
  /// the local log.
  pub fn replace(
    &self,
    record: &crate::wal::format::Record,
    among: &HashSet<String>,
  ) -> Option<crate::wal::format::Record> {
    let id = super::admit::content_id_of(record)?;
    let tombstone = self.forgotten_among(&id, among)?;
    Some(super::forget::tombstone_record(record, &tombstone))
  }

  /// Whether the grimoire-relative `path` is the record file (`memory/<id>.json`) of a
  /// forgotten memory not held here again: a sealed copy of the grimoire listing it still
  /// holds the memory.
  pub fn is_forgotten_record_file(&self, path: &str) -> bool {
    let id = path
      .strip_prefix(super::types::MEMORY_DIR)
      .and_then(|p| p.strip_prefix('/'))
      .and_then(super::types::record_name_hash);
    id.is_some_and(|id| self.forgotten_among(id, &self.tombstones).is_some())
  }
}
