//! The consolidation state, version 2: a small head file and the per-path winners sharded by a
//! hash of the path, so that a run reads and rewrites only the shards its records fall in.
//!
//! ```text
//! consolidation.json          {"version": 2, "run": 7, "sessions": {"<session>": <highest seq applied>}}
//! consolidation/<xxx>.json     {"version": 2, "paths": {"<path>": {<winner>, "run": 7, "prev"?: {<winner>}}}}
//! ```
//!
//! `<xxx>` is the first 12 bits of sha256(path) in hex (4,096 shards). The head's `run` is the number
//! of the last run that committed; a run numbered `run + 1` writes its changed shards first,
//! each atomically, and commits by writing the head last (atomically). An entry written by a run
//! that never committed (its `run` is greater than the head's) is not believed: it is rolled back
//! on load to `prev`, the winner it replaced (or to no entry at all). So a crash anywhere leaves
//! the state exactly as the last committed run left it, and the next run redoes the same records
//! with the same outcome, as version 1's single file did. Every shard a crashed run wrote holds a
//! path of a record the redo reads again (segments are pruned only after a commit), so the redo
//! loads and rewrites each of them: a stale entry is never taken for a committed one.
//!
//! **Version 1** (`consolidation.json` holding `sessions` and every path's winner in one file,
//! read and rewritten whole each run) is read and migrated: every shard is written from it, then
//! the version 2 head replaces it. A crash during the migration leaves the version 1 file in
//! place and the next run migrates again. Any other version is `E_STATE_CORRUPT`, left untouched.
//!
//! Every file is reached through [`StateDir`]: the shard directory never through a symlink
//! (`E_PATH_OUTSIDE_ROOT`), shard files only as regular files (`E_NOT_REGULAR_FILE`), each read
//! at most [`MAX_SHARD_BYTES`] (`E_TOO_LARGE`). A shard that does not parse is `E_STATE_CORRUPT`
//! and is left untouched: the winners are not derived state (the segments they came from may be
//! gone), so a human decides. All needed shards are read before anything is changed.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::consolidate::ConflictSide;
use crate::error::{LoaError, Result};
use crate::fsutil::StateDir;

pub const STATE_FILE: &str = "consolidation.json";
/// Directory of the shards, beside the head.
pub const SHARD_DIR: &str = "consolidation";
/// The largest head or version 1 `consolidation.json` read (256 MiB): `E_TOO_LARGE` beyond.
pub const MAX_STATE_BYTES: u64 = 256 * 1024 * 1024;
/// The largest shard read or written (64 MiB, roughly 200,000 paths in one shard, 50 million in
/// all): `E_TOO_LARGE` beyond, and the run changes nothing.
pub const MAX_SHARD_BYTES: u64 = 64 * 1024 * 1024;
/// The version of the head and the shards this library writes.
pub const STATE_VERSION: u32 = 2;
/// How many shards the paths are spread over (4,096: about 25 paths, 6 KB, per shard at 100,000
/// paths).
pub(super) const SHARDS: u16 = 4096;

#[derive(Debug, Deserialize)]
struct Versioned {
  version: u32,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Head {
  pub(super) version: u32,
  pub(super) run: u64,
  pub(super) sessions: BTreeMap<String, u64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct V1 {
  sessions: BTreeMap<String, u64>,
  paths: BTreeMap<String, ConflictSide>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Entry {
  session_id: String,
  seq: u64,
  ts: i64,
  op: String,
  hash: String,
  /// The run that set this winner.
  run: u64,
  /// The winner this one replaced, kept until the run that set it is committed.
  #[serde(default, skip_serializing_if = "Option::is_none")]
  prev: Option<ConflictSide>,
}

impl Entry {
  fn new(side: ConflictSide, run: u64, prev: Option<ConflictSide>) -> Entry {
    Entry { session_id: side.session_id, seq: side.seq, ts: side.ts, op: side.op, hash: side.hash, run, prev }
  }

  fn side(&self) -> ConflictSide {
    ConflictSide {
      session_id: self.session_id.clone(),
      seq: self.seq,
      ts: self.ts,
      op: self.op.clone(),
      hash: self.hash.clone(),
    }
  }
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Shard {
  pub(super) version: u32,
  pub(super) paths: BTreeMap<String, Entry>,
}

/// The shard of a path: the first 12 bits of sha256(path).
pub(super) fn shard_of(path: &str) -> u16 {
  let digest = Sha256::digest(path.as_bytes());
  (u16::from(digest[0]) << 4) | u16::from(digest[1] >> 4)
}

pub(super) fn shard_name(shard: u16) -> String {
  format!("{shard:03x}.json")
}

fn corrupt(dir: &StateDir, name: &str, reason: impl Into<String>) -> LoaError {
  LoaError::StateCorrupt { path: dir.child_path(name).display().to_string(), reason: reason.into() }
}

/// The state of one consolidation directory, loaded as far as a run needs it.
pub struct State {
  /// The last committed run.
  run: u64,
  /// Highest seq applied per session, as committed.
  pub sessions: BTreeMap<String, u64>,
  shards: BTreeMap<u16, Shard>,
  dirty: BTreeSet<u16>,
  /// Read from a version 1 file: every shard is in `shards`, and all are written at commit.
  migrated: bool,
}

impl State {
  /// Reads the head (migrating a version 1 file in memory). No shard is read yet.
  pub fn load(root: &StateDir) -> Result<State> {
    let fresh =
      || State { run: 0, sessions: BTreeMap::new(), shards: BTreeMap::new(), dirty: BTreeSet::new(), migrated: false };
    let Some(bytes) = root.read(STATE_FILE, MAX_STATE_BYTES)? else { return Ok(fresh()) };
    let version = serde_json::from_slice::<Versioned>(&bytes).map_err(|e| corrupt(root, STATE_FILE, e.to_string()))?;
    match version.version {
      STATE_VERSION => {
        let head: Head = serde_json::from_slice(&bytes).map_err(|e| corrupt(root, STATE_FILE, e.to_string()))?;
        Ok(State { run: head.run, sessions: head.sessions, ..fresh() })
      }
      1 => {
        let old: V1 = serde_json::from_slice(&bytes).map_err(|e| corrupt(root, STATE_FILE, e.to_string()))?;
        let mut state = State { sessions: old.sessions, migrated: true, ..fresh() };
        for shard in 0..SHARDS {
          state.shards.insert(shard, Shard { version: STATE_VERSION, paths: BTreeMap::new() });
        }
        for (path, side) in old.paths {
          let shard = state.shards.get_mut(&shard_of(&path)).expect("every shard is present");
          shard.paths.insert(path, Entry::new(side, 0, None));
        }
        state.dirty.extend(0..SHARDS);
        Ok(state)
      }
      // Another version's state may mean something else: refused, left untouched, never rewritten.
      other => Err(corrupt(
        root,
        STATE_FILE,
        format!(
          "version {other} is not version {STATE_VERSION} (or 1, which is migrated), the versions this library reads"
        ),
      )),
    }
  }

  /// Reads the shards `paths` fall in (each once), rolling back what an uncommitted run left.
  pub fn load_shards<'a>(&mut self, root: &StateDir, paths: impl IntoIterator<Item = &'a str>) -> Result<()> {
    self.load_shard_numbers(root, paths.into_iter().map(shard_of))
  }

  /// Reads every shard (a missing one is empty): for the rare caller that must look at every
  /// winner, such as [`super::consolidate::paths_written_by`].
  pub fn load_all_shards(&mut self, root: &StateDir) -> Result<()> {
    self.load_shard_numbers(root, 0..SHARDS)
  }

  fn load_shard_numbers(&mut self, root: &StateDir, shards: impl IntoIterator<Item = u16>) -> Result<()> {
    let wanted: BTreeSet<u16> = shards.into_iter().filter(|s| !self.shards.contains_key(s)).collect();
    if wanted.is_empty() {
      return Ok(());
    }
    let dir = root.subdir(SHARD_DIR)?;
    for shard in wanted {
      let name = shard_name(shard);
      let bytes = match &dir {
        Some(dir) => dir.read(&name, MAX_SHARD_BYTES)?,
        None => None,
      };
      let Some(bytes) = bytes else {
        self.shards.insert(shard, Shard { version: STATE_VERSION, paths: BTreeMap::new() });
        continue;
      };
      let dir = dir.as_ref().expect("read from it");
      let mut loaded: Shard = serde_json::from_slice(&bytes).map_err(|e| corrupt(dir, &name, e.to_string()))?;
      if loaded.version != STATE_VERSION {
        return Err(corrupt(dir, &name, format!("version {} is not version {STATE_VERSION}", loaded.version)));
      }
      let mut rolled_back = false;
      loaded.paths.retain(|_, entry| {
        if entry.run <= self.run {
          return true;
        }
        rolled_back = true;
        match entry.prev.take() {
          Some(prev) => {
            *entry = Entry::new(prev, self.run, None);
            true
          }
          None => false,
        }
      });
      if rolled_back {
        self.dirty.insert(shard);
      }
      self.shards.insert(shard, loaded);
    }
    Ok(())
  }

  /// The current winner of `path` (its shard must be loaded).
  pub fn winner(&self, path: &str) -> Option<ConflictSide> {
    self.shards.get(&shard_of(path))?.paths.get(path).map(Entry::side)
  }

  /// Every winner of the loaded shards, as (path, winner).
  pub fn winners(&self) -> impl Iterator<Item = (&str, ConflictSide)> {
    self.shards.values().flat_map(|s| s.paths.iter().map(|(p, e)| (p.as_str(), e.side())))
  }

  /// Makes `side` the winner of `path` in the run being made (its shard must be loaded).
  pub fn set(&mut self, path: &str, side: ConflictSide) {
    let shard = shard_of(path);
    let next = self.run + 1;
    let paths = &mut self.shards.entry(shard).or_default().paths;
    let prev = match paths.get(path) {
      // Set earlier in this run: what it replaced is still the committed winner.
      Some(e) if e.run == next => e.prev.clone(),
      Some(e) => Some(e.side()),
      None => None,
    };
    paths.insert(path.to_string(), Entry::new(side, next, prev));
    self.dirty.insert(shard);
  }

  /// Forgets `path` (its shard must be loaded); whether it had a winner.
  pub fn remove(&mut self, path: &str) -> bool {
    let shard = shard_of(path);
    let removed = self.shards.get_mut(&shard).is_some_and(|s| s.paths.remove(path).is_some());
    if removed {
      self.dirty.insert(shard);
    }
    removed
  }

  /// Writes the changed shards, then (the commit) the head with `sessions`. With `new_run`
  /// false (forgetting), entries keep their runs and the head its run number.
  pub fn commit(&mut self, root: &StateDir, sessions: BTreeMap<String, u64>, new_run: bool) -> Result<()> {
    let run = if new_run { self.run + 1 } else { self.run };
    // Everything is encoded and checked before the first write.
    let mut encoded = Vec::with_capacity(self.dirty.len());
    for &shard in &self.dirty {
      let Some(content) = self.shards.get_mut(&shard) else { continue };
      content.version = STATE_VERSION;
      if new_run {
        // What this run replaced is kept until the head below commits it; entries committed
        // earlier need their `prev` no more.
        for entry in content.paths.values_mut() {
          if entry.run <= self.run {
            entry.prev = None;
          }
        }
      }
      let bytes = if content.paths.is_empty() {
        None
      } else {
        let mut bytes = serde_json::to_vec(content).map_err(|e| LoaError::Internal(e.to_string()))?;
        bytes.push(b'\n');
        if bytes.len() as u64 > MAX_SHARD_BYTES {
          return Err(LoaError::TooLarge {
            what: root.child_path(SHARD_DIR).join(shard_name(shard)).display().to_string(),
            size: bytes.len() as u64,
            limit: MAX_SHARD_BYTES,
          });
        }
        Some(bytes)
      };
      encoded.push((shard, bytes));
    }
    let head = Head { version: STATE_VERSION, run, sessions };
    let mut head_bytes = serde_json::to_vec_pretty(&head).map_err(|e| LoaError::Internal(e.to_string()))?;
    head_bytes.push(b'\n');
    if !encoded.is_empty() {
      let dir = root.create_subdir(SHARD_DIR)?;
      for (shard, bytes) in &encoded {
        match bytes {
          Some(bytes) => dir.write_atomic(shard_name(*shard), bytes, None)?,
          None => {
            if dir.remove_file(shard_name(*shard))? {
              dir.sync()?;
            }
          }
        }
      }
    }
    root.write_atomic(STATE_FILE, &head_bytes, None)?;
    self.run = run;
    self.sessions = head.sessions;
    self.dirty.clear();
    self.migrated = false;
    Ok(())
  }

  /// Whether anything would be written by [`commit`](Self::commit) besides the head.
  pub fn has_changes(&self) -> bool {
    !self.dirty.is_empty() || self.migrated
  }
}

/// The highest seq applied per session, as the head in `root` (a WAL directory) records it
/// (version 1 or 2); empty when there is no head. Reads no shard and changes nothing.
pub fn watermarks(root: &StateDir) -> Result<BTreeMap<String, u64>> {
  #[derive(Deserialize)]
  struct Sessions {
    version: u32,
    sessions: BTreeMap<String, u64>,
  }
  let Some(bytes) = root.read(STATE_FILE, MAX_STATE_BYTES)? else { return Ok(BTreeMap::new()) };
  let head: Sessions = serde_json::from_slice(&bytes).map_err(|e| corrupt(root, STATE_FILE, e.to_string()))?;
  if head.version != 1 && head.version != STATE_VERSION {
    return Err(corrupt(root, STATE_FILE, format!("version {} is not one this library reads", head.version)));
  }
  Ok(head.sessions)
}
