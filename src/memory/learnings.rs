//! The learnings store: `learnings.json`, one entry per learning, merged by id.
//!
//! **Version 2** ([`Learnings`]) keeps the entries in 256 shards beside a small head, so that a
//! consolidation rewrites only the shards of the learnings that arrived; each shard has the
//! version 1 shape below (with `"version": 2`) and the same rules. A version 1 file is read and
//! migrated. The rest of this page describes the entries and the version 1 file.
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
//! - a `version` other than 1 or 2 (a newer format this library does not know). A file without
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
  parse_as(bytes, VERSION)
}

/// Parses a file of the version `expected` (a file without `version` is version 1).
fn parse_as(bytes: &[u8], expected: u64) -> std::result::Result<Store, Problem> {
  let text = std::str::from_utf8(bytes).map_err(|_| Problem::Corrupt("not valid UTF-8".into()))?;
  let members: RawMembers = serde_json::from_str(text).map_err(|e| Problem::Corrupt(e.to_string()))?;
  let mut top = unique(members, "")?;
  let version = match top.get("version") {
    Some(v) => v.parse::<u64>(),
    None => Some(VERSION),
  };
  if version != Some(expected) {
    return Err(Problem::Refused(format!(
      "`version` is not {VERSION} or {SHARDED_VERSION}, the versions this library reads"
    )));
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

  /// Removes the entries with these ids (forgetting); returns how many there were.
  pub fn remove(&mut self, ids: &std::collections::HashSet<&str>) -> usize {
    let before = self.entries.len();
    self.entries.retain(|e| !ids.contains(e.id.as_str()));
    before - self.entries.len()
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

/// The version of a sharded store's head and shards.
pub const SHARDED_VERSION: u64 = 2;
/// How many of the best active learnings the head keeps in its `top` list.
pub const TOP_KEEP: usize = 64;
/// Top-level members of a version 2 head the pipeline owns.
const HEAD_FIELDS: [&str; 4] = ["version", "count", "top", "shards"];

/// The directory of a sharded store's shards: `<name>.d` beside the head.
pub fn shard_dir_name(name: &OsStr) -> std::ffi::OsString {
  let mut dir = name.to_os_string();
  dir.push(".d");
  dir
}

/// The shard of an entry: the first byte of its id when the id is a sha256 in hex (every id the
/// pipeline writes), else the first byte of the sha256 of the id.
fn shard_of(id: &str) -> u8 {
  if id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
    u8::from_str_radix(&id[..2], 16).unwrap_or(0)
  } else {
    use sha2::Digest;
    sha2::Sha256::digest(id.as_bytes())[0]
  }
}

fn now_missing(sdir: &StateDir, shard: u8) -> Result<bool> {
  Ok(sdir.kind_of(shard_file(shard))?.is_none())
}

fn shard_file(shard: u8) -> String {
  format!("{shard:02x}.json")
}

/// An active learning's place in the order `activeLearnings` uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopEntry {
  pub id: String,
  pub importance: f64,
  /// createdAt in ms (0 when it does not parse).
  pub created: i64,
}

impl TopEntry {
  fn of(entry: &StoredEntry) -> Option<TopEntry> {
    let learning = entry.learning();
    (learning.status == "active").then(|| TopEntry {
      id: learning.id,
      importance: learning.importance,
      created: crate::timestamp::parse_rfc3339_ms(&learning.created_at, "createdAt").unwrap_or(0),
    })
  }

  /// Best first: importance, then recency, then id.
  fn order(a: &TopEntry, b: &TopEntry) -> std::cmp::Ordering {
    b.importance.total_cmp(&a.importance).then_with(|| b.created.cmp(&a.created)).then_with(|| a.id.cmp(&b.id))
  }
}

/// What the head remembers of a shard it wrote: a shard whose size or modification time differ
/// was changed by someone else and is read again.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ShardStat {
  pub size: u64,
  pub mtime_ns: i64,
  pub count: u64,
}

/// Size and modification time of a shard file (never through a symlink; anything but a
/// regular file is `E_NOT_REGULAR_FILE`).
fn stat_of(dir: &StateDir, name: &str) -> Result<Option<(u64, i64)>> {
  let Some(file) = dir.open_file_if_exists(name, crate::fsutil::OpenMode::READ)? else { return Ok(None) };
  let mtime = file
    .modified()
    .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
    .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
  Ok(Some((file.len()?, mtime)))
}

/// The learnings store, version 2: `learnings.json` is a small head (its own foreign members,
/// the number of entries, the [`TOP_KEEP`] best active learnings and what it wrote of each
/// shard), and the entries live in 256 shards `learnings.json.d/<xx>.json`, each of the
/// version 1 shape with `"version": 2`. A consolidation reads and rewrites only the shards its
/// new learnings fall in, then the head; a reader of the best few reads the head and those
/// entries' shards. A version 1 file is read and migrated (every shard written, then the head
/// replaces it).
#[derive(Debug)]
pub struct Learnings {
  head: Members,
  shards: BTreeMap<u8, Store>,
  dirty: std::collections::BTreeSet<u8>,
  stats: BTreeMap<u8, ShardStat>,
  top: Vec<TopEntry>,
  count: u64,
  /// `top` may have lost entries that others outside it should replace: rebuilt at save.
  rescan: bool,
  /// Read from a version 1 file (or new): the head is written at save even if no shard changed.
  head_dirty: bool,
  /// A shard the head recorded is gone (moved aside as corrupt): what it held must be derived
  /// again from the memory records.
  lost: bool,
}

impl Default for Learnings {
  fn default() -> Self {
    Learnings {
      head: Members::new(),
      shards: BTreeMap::new(),
      dirty: Default::default(),
      stats: BTreeMap::new(),
      top: Vec::new(),
      count: 0,
      rescan: false,
      head_dirty: true,
      lost: false,
    }
  }
}

fn problem_error(dir: &StateDir, name: &OsStr, problem: Problem, quarantine: bool) -> LoaError {
  match problem {
    Problem::Corrupt(reason) => corrupt(dir, name, reason, quarantine),
    Problem::Refused(reason) => LoaError::StateCorrupt {
      path: dir.child_path(name).display().to_string(),
      reason: format!("{reason}; left untouched (fix it by hand, then consolidate again)"),
    },
  }
}

impl Learnings {
  /// Reads the store `name` in `dir` (see [`load`] for errors; a damaged shard is
  /// `E_STATE_CORRUPT` naming it, moved aside with `quarantine`). `None` when there is none.
  /// Shards another writer changed since the head was written are read now and the `top`
  /// list corrected.
  pub fn open(dir: &StateDir, name: &OsStr, quarantine: bool) -> Result<Option<Learnings>> {
    let Some(bytes) = dir.read(name, MAX_LEARNINGS_BYTES)? else {
      // Shards without a head (it was moved aside as corrupt, or lost): read them all, so
      // nothing they hold, foreign members included, is lost; the head is written anew.
      if dir.subdir(shard_dir_name(name))?.is_none() {
        return Ok(None);
      }
      let mut store = Learnings { lost: true, ..Learnings::default() };
      store.refresh_changed(dir, name, quarantine)?;
      return Ok(Some(store));
    };
    let version = match serde_json::from_slice::<serde_json::Value>(&bytes) {
      Ok(Value::Object(map)) => map.get("version").and_then(Value::as_u64),
      _ => None,
    };
    if version != Some(SHARDED_VERSION) {
      let old = parse(&bytes).map_err(|p| problem_error(dir, name, p, quarantine))?;
      return Ok(Some(Learnings::migrate(old)));
    }
    let mut head = parse_as(&bytes, SHARDED_VERSION).map_err(|p| problem_error(dir, name, p, quarantine))?;
    if !head.entries.is_empty() {
      let p = Problem::Corrupt("a version 2 head holds no `learnings`; they live in its shards".into());
      return Err(problem_error(dir, name, p, quarantine));
    }
    let field = |key: &str| head.top.get(key).cloned();
    let count = field("count").and_then(|m| m.parse::<u64>());
    let top = field("top").and_then(|m| m.parse::<Vec<TopEntry>>());
    let stats = field("shards").and_then(|m| m.parse::<BTreeMap<String, ShardStat>>());
    let (Some(count), Some(top), Some(stats)) = (count, top, stats) else {
      let p = Problem::Corrupt("`count`, `top` or `shards` is missing or of the wrong shape".into());
      return Err(problem_error(dir, name, p, quarantine));
    };
    let mut stat_map = BTreeMap::new();
    for (key, stat) in stats {
      match u8::from_str_radix(&key, 16) {
        Ok(shard) if key.len() == 2 => {
          stat_map.insert(shard, stat);
        }
        _ => {
          return Err(problem_error(dir, name, Problem::Corrupt(format!("`shards.{}`", shown_key(&key))), quarantine))
        }
      }
    }
    for key in HEAD_FIELDS {
      head.top.remove(key);
    }
    let mut store = Learnings {
      head: head.top,
      shards: BTreeMap::new(),
      dirty: Default::default(),
      stats: stat_map,
      top,
      count,
      rescan: false,
      head_dirty: false,
      lost: false,
    };
    store.refresh_changed(dir, name, quarantine)?;
    Ok(Some(store))
  }

  /// A version 1 store spread over shards in memory; everything is written at save.
  fn migrate(old: Store) -> Learnings {
    let mut store = Learnings { head: old.top, ..Learnings::default() };
    store.head.remove("version");
    for shard in 0..=u8::MAX {
      store.shards.insert(shard, Store::sharded());
    }
    store.count = old.entries.len() as u64;
    for entry in old.entries {
      store.shards.get_mut(&shard_of(&entry.id)).expect("all shards").entries.push(entry);
    }
    store.dirty.extend(0..=u8::MAX);
    store.rescan = true;
    store
  }

  /// Reads the shards whose files are not what the head recorded, and corrects `count` and
  /// `top` for them.
  fn refresh_changed(&mut self, dir: &StateDir, name: &OsStr, quarantine: bool) -> Result<()> {
    let Some(sdir) = dir.subdir(shard_dir_name(name))? else {
      if !self.stats.is_empty() {
        // Every shard is gone: nothing is left to rank.
        self.lost = true;
        self.count = 0;
        self.top.clear();
        self.stats.clear();
        self.head_dirty = true;
      }
      return Ok(());
    };
    let mut changed = Vec::new();
    for shard in 0..=u8::MAX {
      let now = stat_of(&sdir, &shard_file(shard))?;
      let recorded = self.stats.get(&shard).map(|s| (s.size, s.mtime_ns));
      if now != recorded {
        changed.push(shard);
      }
    }
    let full = self.top.len() >= TOP_KEEP;
    for shard in changed {
      let before = self.stats.remove(&shard).map_or(0, |s| s.count);
      self.lost |= now_missing(&sdir, shard)? && before > 0;
      self.load_shard(dir, name, shard, quarantine)?;
      let entries = &self.shards[&shard].entries;
      self.count = self.count.saturating_sub(before) + entries.len() as u64;
      let lost = self.top.iter().any(|t| shard_of(&t.id) == shard);
      self.top.retain(|t| shard_of(&t.id) != shard);
      if lost && full {
        self.rescan = true;
      }
      let found: Vec<TopEntry> = entries.iter().filter_map(TopEntry::of).collect();
      self.top.extend(found);
      // Recorded again at save, with the shard's new stat.
      self.dirty.insert(shard);
      self.head_dirty = true;
    }
    self.top.sort_by(TopEntry::order);
    self.top.truncate(TOP_KEEP);
    Ok(())
  }

  fn load_shard(&mut self, dir: &StateDir, name: &OsStr, shard: u8, quarantine: bool) -> Result<()> {
    if self.shards.contains_key(&shard) {
      return Ok(());
    }
    let file = shard_file(shard);
    let loaded = match dir.subdir(shard_dir_name(name))? {
      Some(sdir) => match sdir.read(&file, MAX_LEARNINGS_BYTES)? {
        Some(bytes) => {
          let store =
            parse_as(&bytes, SHARDED_VERSION).map_err(|p| problem_error(&sdir, OsStr::new(&file), p, quarantine))?;
          if let Some(bad) = store.entries.iter().find(|e| shard_of(&e.id) != shard) {
            let p = Problem::Corrupt(format!("entry `{}` belongs in another shard", shown_key(&bad.id)));
            return Err(problem_error(&sdir, OsStr::new(&file), p, quarantine));
          }
          store
        }
        None => Store::sharded(),
      },
      None => Store::sharded(),
    };
    self.shards.insert(shard, loaded);
    Ok(())
  }

  /// Whether entries may be missing (a shard was moved aside or lost, or the head was): the
  /// caller derives them again from every memory record.
  pub fn lost_entries(&self) -> bool {
    self.lost
  }

  /// How many entries the store holds.
  pub fn total(&self) -> usize {
    self.count as usize
  }

  /// Merges generated entries (see [`Store::merge`]), reading only their shards; returns how
  /// many were added or changed.
  pub fn merge(&mut self, dir: &StateDir, name: &OsStr, generated: &[Map<String, Value>]) -> Result<usize> {
    let mut changed = 0;
    for new in generated {
      let Some(id) = new.get("id").and_then(Value::as_str) else { continue };
      let shard = shard_of(id);
      self.load_shard(dir, name, shard, true)?;
      let store = self.shards.get_mut(&shard).expect("loaded");
      let existed = store.entries.iter().any(|e| e.id == id);
      if store.merge(std::slice::from_ref(new)) == 0 {
        continue;
      }
      changed += 1;
      self.dirty.insert(shard);
      if !existed {
        self.count += 1;
      }
      let entry = store.entries.iter().find(|e| e.id == id).expect("merged");
      let was_top = self.top.iter().position(|t| t.id == id);
      if let Some(at) = was_top {
        self.top.remove(at);
        // A top entry that changed may now rank below one that is not in the list.
        self.rescan |= self.top.len() + 1 >= TOP_KEEP;
      }
      if let Some(t) = TopEntry::of(entry) {
        let at = self.top.partition_point(|x| TopEntry::order(x, &t).is_lt());
        self.top.insert(at, t);
        self.top.truncate(TOP_KEEP);
      }
    }
    Ok(changed)
  }

  /// Removes the entries with these ids (forgetting); returns how many there were.
  pub fn remove(&mut self, dir: &StateDir, name: &OsStr, ids: &std::collections::HashSet<&str>) -> Result<usize> {
    let mut removed = 0;
    let shards: std::collections::BTreeSet<u8> = ids.iter().map(|id| shard_of(id)).collect();
    for shard in shards {
      self.load_shard(dir, name, shard, false)?;
      let n = self.shards.get_mut(&shard).expect("loaded").remove(ids);
      if n > 0 {
        removed += n;
        self.dirty.insert(shard);
      }
    }
    if removed > 0 {
      self.count = self.count.saturating_sub(removed as u64);
      let before = self.top.len();
      self.top.retain(|t| !ids.contains(t.id.as_str()));
      if self.top.len() != before && before >= TOP_KEEP {
        self.rescan = true;
      }
    }
    Ok(removed)
  }

  /// Writes the changed shards, then the head. Returns whether anything was written.
  pub fn save(&mut self, dir: &StateDir, name: &OsStr) -> Result<bool> {
    if self.rescan {
      for shard in 0..=u8::MAX {
        self.load_shard(dir, name, shard, false)?;
      }
      self.count = self.shards.values().map(|s| s.entries.len() as u64).sum();
      self.top = self.shards.values().flat_map(|s| s.entries.iter().filter_map(TopEntry::of)).collect();
      self.top.sort_by(TopEntry::order);
      self.top.truncate(TOP_KEEP);
      self.rescan = false;
    }
    if self.dirty.is_empty() && !self.head_dirty {
      return Ok(false);
    }
    let mut encoded = Vec::new();
    for &shard in &self.dirty {
      let store = &self.shards[&shard];
      let bytes = if store.entries.is_empty() { None } else { Some(store.to_bytes()) };
      if bytes.as_ref().is_some_and(|b| b.len() as u64 > MAX_LEARNINGS_BYTES) {
        return Err(LoaError::TooLarge {
          what: dir.child_path(shard_dir_name(name)).join(shard_file(shard)).display().to_string(),
          size: bytes.map_or(0, |b| b.len() as u64),
          limit: MAX_LEARNINGS_BYTES,
        });
      }
      encoded.push((shard, bytes, store.entries.len() as u64));
    }
    if !encoded.is_empty() {
      let sdir = dir.create_subdir(shard_dir_name(name))?;
      let _ = sdir.clean_stale_temps(); // housekeeping under the caller's lock
      for (shard, bytes, count) in encoded {
        let file = shard_file(shard);
        match bytes {
          Some(bytes) => {
            sdir.write_atomic(&file, &bytes, None)?;
            let (size, mtime_ns) = stat_of(&sdir, &file)?.unwrap_or((bytes.len() as u64, 0));
            self.stats.insert(shard, ShardStat { size, mtime_ns, count });
          }
          None => {
            if sdir.remove_file(&file)? {
              sdir.sync()?;
            }
            self.stats.remove(&shard);
          }
        }
      }
    }
    self.dirty.clear();
    let mut head = Store { top: self.head.clone(), entries: Vec::new() };
    head.top.insert("version".into(), Member::Owned(Value::from(SHARDED_VERSION)));
    head.top.insert("count".into(), Member::Owned(Value::from(self.count)));
    let top = serde_json::to_value(&self.top).map_err(|e| LoaError::Internal(e.to_string()))?;
    head.top.insert("top".into(), Member::Owned(top));
    let stats: BTreeMap<String, ShardStat> = self.stats.iter().map(|(k, v)| (format!("{k:02x}"), *v)).collect();
    let stats = serde_json::to_value(&stats).map_err(|e| LoaError::Internal(e.to_string()))?;
    head.top.insert("shards".into(), Member::Owned(stats));
    dir.write_atomic(name, &head.head_bytes(), None)?;
    self.head_dirty = false;
    Ok(true)
  }

  /// The `limit` best active learnings (as [`StoredEntry::learning`] reads them), best first;
  /// reads only their shards when `limit` is within the head's `top` list.
  pub fn active(&mut self, dir: &StateDir, name: &OsStr, limit: usize) -> Result<Vec<Learning>> {
    let complete = self.top.len() < TOP_KEEP || limit <= self.top.len();
    if !complete || self.rescan {
      for shard in 0..=u8::MAX {
        self.load_shard(dir, name, shard, false)?;
      }
      let mut all: Vec<TopEntry> =
        self.shards.values().flat_map(|s| s.entries.iter().filter_map(TopEntry::of)).collect();
      all.sort_by(TopEntry::order);
      all.truncate(limit);
      self.top = all;
    }
    let mut out = Vec::new();
    for t in self.top.clone().into_iter().take(limit) {
      let shard = shard_of(&t.id);
      self.load_shard(dir, name, shard, false)?;
      if let Some(e) = self.shards[&shard].entries.iter().find(|e| e.id == t.id) {
        out.push(e.learning());
      }
    }
    Ok(out)
  }

  /// Whether `id` is in the store (reads its shard).
  pub fn contains(&mut self, dir: &StateDir, name: &OsStr, id: &str) -> Result<bool> {
    let shard = shard_of(id);
    self.load_shard(dir, name, shard, false)?;
    Ok(self.shards[&shard].entries.iter().any(|e| e.id == id))
  }
}

impl Store {
  /// An empty shard of a version 2 store.
  fn sharded() -> Store {
    let mut top = Members::new();
    top.insert("version".into(), Member::Owned(Value::from(SHARDED_VERSION)));
    Store { top, entries: Vec::new() }
  }

  /// A head's bytes: its top-level members only, pretty, sorted, with a final newline.
  fn head_bytes(&self) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(&self.top).expect("the head serialises");
    bytes.push(b'\n');
    bytes
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
