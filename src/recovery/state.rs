//! The recovery state file: loop-detection attempts and degraded mode, persisted so that a crash
//! loop across process restarts is seen (SPEC item 11: in memory it could never fire).
//!
//! `<state_dir>/state.json`, canonical JSON written atomically under `<state_dir>/.lock`:
//!
//! ```json
//! { "version": 1, "attempts": [1764150000000], "degraded": false, "degradedCycles": 0,
//!   "degradedSince": null, "trust": "signed", "updatedAt": 1764150000123 }
//! ```
//!
//! A file that does not parse is moved aside (`state.json.corrupt-<timestamp>`) and reported,
//! never read as empty and overwritten in place (SPEC item 14); recovery then starts from a fresh
//! state.

use serde::{Deserialize, Serialize};

use super::Trust;
use crate::error::{scrub_quoted, LoaError, Result};
use crate::fsutil::StateDir;

/// Version of `state.json` this code writes and reads.
pub const STATE_VERSION: u32 = 1;
/// Name of the state file in the recovery state directory.
pub const STATE_FILE: &str = "state.json";
/// Largest `state.json` read.
pub const MAX_STATE_BYTES: u64 = 1024 * 1024;
/// Most attempt timestamps kept, whatever the window: bounds the file.
pub const MAX_ATTEMPTS_KEPT: usize = 1000;

/// What `state.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PersistedState {
  pub version: u32,
  /// Start times (ms since the epoch) of recovery runs inside the loop window, oldest first.
  pub attempts: Vec<i64>,
  /// Whether the last run ended in degraded mode (memory writes refused with `E_DEGRADED`).
  pub degraded: bool,
  /// Consecutive runs that ended degraded.
  pub degraded_cycles: u64,
  /// When degraded mode was entered (ms), `None` when not degraded.
  pub degraded_since: Option<i64>,
  /// Trust of the state the last run left live.
  pub trust: Trust,
  /// When the file was last written (ms).
  pub updated_at: i64,
}

impl Default for PersistedState {
  fn default() -> Self {
    PersistedState {
      version: STATE_VERSION,
      attempts: Vec::new(),
      degraded: false,
      degraded_cycles: 0,
      degraded_since: None,
      trust: Trust::None,
      updated_at: 0,
    }
  }
}

/// Reads the state file of `dir`. Missing: the default. Corrupt: moved aside, and the path it
/// went to is returned with the default.
pub fn load(dir: &StateDir) -> Result<(PersistedState, Option<std::path::PathBuf>)> {
  let Some(bytes) = dir.read(STATE_FILE, MAX_STATE_BYTES)? else {
    return Ok((PersistedState::default(), None));
  };
  match parse(&bytes) {
    Ok(state) => Ok((state, None)),
    Err(_) => {
      let moved = dir.quarantine(STATE_FILE)?;
      Ok((PersistedState::default(), Some(moved)))
    }
  }
}

/// Reads the state file without any write (a corrupt file is an error here).
pub fn peek(dir: &StateDir) -> Result<PersistedState> {
  match dir.read(STATE_FILE, MAX_STATE_BYTES)? {
    Some(bytes) => parse(&bytes)
      .map_err(|reason| LoaError::StateCorrupt { path: dir.child_path(STATE_FILE).display().to_string(), reason }),
    None => Ok(PersistedState::default()),
  }
}

fn parse(bytes: &[u8]) -> std::result::Result<PersistedState, String> {
  let state: PersistedState = serde_json::from_slice(bytes).map_err(|e| scrub_quoted(&e.to_string()))?;
  if state.version != STATE_VERSION {
    return Err(format!("unsupported version {}", state.version));
  }
  if state.attempts.len() > MAX_ATTEMPTS_KEPT {
    return Err(format!("more than {MAX_ATTEMPTS_KEPT} attempts"));
  }
  Ok(state)
}

/// Writes the state file atomically (canonical JSON and a newline).
pub fn save(dir: &StateDir, state: &PersistedState) -> Result<()> {
  let value = serde_json::to_value(state).map_err(|e| LoaError::Internal(e.to_string()))?;
  let mut bytes = crate::jcs::to_vec(&value)?;
  bytes.push(b'\n');
  dir.write_atomic(STATE_FILE, &bytes, None)
}

impl PersistedState {
  /// Drops attempts outside `[now - window_ms, now]` (a clock set back makes future ones stale
  /// too) and keeps at most [`MAX_ATTEMPTS_KEPT`].
  pub fn prune(&mut self, now: i64, window_ms: u64) {
    let since = now.saturating_sub(i64::try_from(window_ms).unwrap_or(i64::MAX));
    self.attempts.retain(|&t| t >= since && t <= now);
    self.attempts.sort_unstable();
    let excess = self.attempts.len().saturating_sub(MAX_ATTEMPTS_KEPT - 1);
    self.attempts.drain(..excess);
  }
}

/// What the memory store asks before every capture: is the workspace degraded? (SPEC: memory
/// writes are refused with `E_DEGRADED` in degraded mode.)
///
/// How a store finds the state: `<workspace>/<state_dir>/state.json`, `state_dir` being
/// [`crate::memory::StoreOptions::recovery_state_dir`] (default `.loa/recovery`, the default of
/// recovery itself). Cheap: one `open` (no symlink followed, regular files only) and one `fstat`
/// per capture; the file is parsed again only when its identity changed (every write of it is
/// an atomic rename, so a new write is a new inode). Safe: a state file that cannot be read or
/// parsed refuses the capture with its own code (`E_STATE_CORRUPT`, `E_NOT_REGULAR_FILE`, ...)
/// rather than letting writes through on state nobody can read; no state file (recovery never
/// ran) is not degraded.
#[derive(Debug, Default)]
pub struct DegradedProbe {
  /// `(dev, ino, size, mtime s, mtime ns, ctime s, ctime ns)` of the file last parsed, and its
  /// answer.
  last: std::sync::Mutex<Option<([i64; 7], bool)>>,
}

impl DegradedProbe {
  /// Whether the state file below `workspace` says degraded (see the type's docs).
  pub fn is_degraded(&self, workspace: &StateDir, state_dir: &std::path::Path) -> Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let Some(dir) = workspace.descend(state_dir, false)? else { return Ok(false) };
    let Some(file) = dir.open_file_if_exists(STATE_FILE, crate::fsutil::OpenMode::READ)? else { return Ok(false) };
    let m = file.file().metadata().map_err(|e| LoaError::io("stat", file.path(), e))?;
    let id = [m.dev() as i64, m.ino() as i64, m.size() as i64, m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()];
    let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((seen, degraded)) = *last {
      if seen == id {
        return Ok(degraded);
      }
    }
    let bytes = file.read_to_end_bounded(MAX_STATE_BYTES)?;
    let state =
      parse(&bytes).map_err(|reason| LoaError::StateCorrupt { path: file.path().display().to_string(), reason })?;
    *last = Some((id, state.degraded));
    Ok(state.degraded)
  }
}
