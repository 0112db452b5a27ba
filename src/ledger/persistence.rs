//! The persistence protocol (seed 004): L1 JSON state, L2 MEMORY.md lines, the read priority
//! and newest-wins conflict resolution.
//!
//! **L1** (`<state_dir>/<name>.json`, `"version": 1`): one workflow's state, written
//! synchronously and atomically under `state.lock`, its status change checked by
//! [`transition_status`] first (an illegal one writes nothing). A file that does not parse is
//! moved aside to `<name>.json.corrupt-<timestamp>` and reported (`E_STATE_CORRUPT`), never
//! read as empty nor overwritten; a file of another version is reported and left untouched.
//!
//! **L2** (MEMORY.md): one line per learning, completion or checkpoint,
//! `- <ts> [<kind>:<name>:<status>] <text>` (`:<name>:<status>` optional), appended under
//! `MEMORY.md.lock` and written atomically. Lines of any other shape are someone else's and are
//! kept byte for byte. MEMORY.md holds at most `max_entries` of the ledger's lines: past it, the
//! oldest are handed to an overflow sink (the ledger stores them as one decision memory, which
//! consolidation renders into the Decision Log) and removed only once the sink has stored
//! them; if it fails they stay, over the cap, and the append reports why. Nothing is dropped.
//!
//! **Read priority**: the conversation (the caller's), then L1, then L2. When both L1 and L2
//! hold the workflow, the newest `lastUpdated` wins (timestamps parsed, never compared as
//! strings); on a tie L1 wins. When they differ by more than `stale_after_ms` (default five
//! minutes) the resolution carries a warning naming the stale side.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{invalid, LoaError, Result};
use crate::fsutil::StateDir;
use crate::lock::lock_in;
use crate::memory::notes::one_line;
use crate::redact::{FieldRedactor, RedactOptions};
use crate::timestamp::{format_ms, parse_ms};

use super::status::{transition_status, Status};

/// The version of L1 state files written and read.
pub const STATE_VERSION: u32 = 1;
/// Largest L1 state file read.
pub const MAX_STATE_BYTES: u64 = 4 * 1024 * 1024;
/// Largest MEMORY.md read.
pub const MAX_MEMORY_MD_BYTES: u64 = 4 * 1024 * 1024;
/// Longest text of one MEMORY.md line, in bytes (`E_TOO_LARGE` beyond: a line is never cut).
pub const MAX_LINE_TEXT_BYTES: usize = 2048;
/// Default number of the ledger's lines MEMORY.md keeps.
pub const DEFAULT_MAX_ENTRIES: usize = 200;
/// The marker line of a MEMORY.md the ledger created (format version 1).
pub const MEMORY_MD_HEADER: &str =
  "# MEMORY.md\n\n<!-- loa:memory v1: one line per learning, completion or checkpoint -->\n\n";

/// Checks a state name (`E_INVALID_ARGUMENT`, without echoing it).
pub fn check_name(name: &str) -> Result<()> {
  let ok = !name.is_empty()
    && name.len() <= 64
    && name.as_bytes()[0].is_ascii_alphanumeric()
    && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'));
  if ok {
    Ok(())
  } else {
    invalid("a state name must be 1 to 64 of a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit")
  }
}

/// An L1 state file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowState {
  pub version: u32,
  pub status: Status,
  /// RFC 3339.
  pub last_updated: String,
  #[serde(default)]
  pub data: Map<String, Value>,
}

/// The L1 state directory.
#[derive(Debug)]
pub struct L1Store {
  dir: StateDir,
  lock_timeout: Duration,
  redaction: RedactOptions,
}

impl L1Store {
  /// L1 state kept in `dir`; `data` written is redacted with the default options.
  pub fn new(dir: StateDir, lock_timeout: Duration) -> L1Store {
    L1Store { dir, lock_timeout, redaction: RedactOptions::default() }
  }

  /// The same store, `data` written redacted with `redaction`.
  pub fn with_redaction(self, redaction: RedactOptions) -> L1Store {
    L1Store { redaction, ..self }
  }

  /// The state `name`, or `None` (see the module docs for damaged files).
  pub fn read(&self, name: &str) -> Result<Option<WorkflowState>> {
    check_name(name)?;
    let file = format!("{name}.json");
    let Some(bytes) = self.dir.read(&file, MAX_STATE_BYTES)? else { return Ok(None) };
    let path = self.dir.child_path(&file).display().to_string();
    let value: Value = match serde_json::from_slice(&bytes) {
      Ok(v) => v,
      Err(_) => {
        let moved = self.dir.quarantine(&file)?;
        return Err(LoaError::StateCorrupt { path, reason: format!("not JSON; moved aside to {}", moved.display()) });
      }
    };
    match value.get("version").and_then(Value::as_u64) {
      Some(v) if v == u64::from(STATE_VERSION) => {}
      other => {
        return Err(LoaError::StateCorrupt {
          path,
          reason: format!("version {other:?} is not one this library reads ({STATE_VERSION}); left untouched"),
        })
      }
    }
    match serde_json::from_value::<WorkflowState>(value) {
      Ok(state) if parse_ms(&state.last_updated).is_some() => Ok(Some(state)),
      _ => {
        let moved = self.dir.quarantine(&file)?;
        Err(LoaError::StateCorrupt { path, reason: format!("not a state file; moved aside to {}", moved.display()) })
      }
    }
  }

  /// Writes `status` and `data` as state `name` at `now_ms`, after checking the transition from
  /// the stored status (a new state starts from any status). `data` is redacted first, every
  /// string and number of it and its keys (see [`crate::redact::fields`]: a number that
  /// redacts becomes the redacted string). Durable on return.
  pub fn write(&self, name: &str, status: Status, data: Map<String, Value>, now_ms: i64) -> Result<WorkflowState> {
    check_name(name)?;
    let data = match FieldRedactor::new(&self.redaction).value("data", &Value::Object(data)) {
      Value::Object(map) => map,
      _ => unreachable!("an object redacts to an object"),
    };
    let _guard = lock_in(&self.dir, "state.lock", self.lock_timeout, "the state directory")?;
    if let Some(current) = self.read(name)? {
      transition_status(current.status, status)?;
    }
    let state = WorkflowState { version: STATE_VERSION, status, last_updated: format_ms(now_ms), data };
    let mut bytes = serde_json::to_vec_pretty(&state).map_err(|e| LoaError::Internal(e.to_string()))?;
    bytes.push(b'\n');
    // A file the reader would refuse is never written.
    if bytes.len() as u64 > MAX_STATE_BYTES {
      return Err(LoaError::TooLarge { what: "L1 state".into(), size: bytes.len() as u64, limit: MAX_STATE_BYTES });
    }
    self.dir.write_atomic(format!("{name}.json"), &bytes, None)?;
    Ok(state)
  }
}

/// What a MEMORY.md line records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
  /// A learning or pattern (conditional write).
  Learning,
  /// A workflow reached a terminal phase (mandatory).
  Completion,
  /// A major phase transition (mandatory, one line).
  Checkpoint,
}

impl LineKind {
  /// The name as written in a line's tag.
  pub fn as_str(self) -> &'static str {
    match self {
      LineKind::Learning => "learning",
      LineKind::Completion => "completion",
      LineKind::Checkpoint => "checkpoint",
    }
  }
  fn parse(s: &str) -> Option<LineKind> {
    [LineKind::Learning, LineKind::Completion, LineKind::Checkpoint].into_iter().find(|k| k.as_str() == s)
  }
}

/// One of the ledger's MEMORY.md lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryLine {
  pub ts_ms: i64,
  pub kind: LineKind,
  /// The workflow (state name) it is about.
  pub name: Option<String>,
  pub status: Option<Status>,
  pub text: String,
}

impl MemoryLine {
  /// The seed's mandatory completion line: `Completed {workflow} for {context}: {outcome}`.
  pub fn completion(ts_ms: i64, name: &str, workflow: &str, context: &str, outcome: &str) -> MemoryLine {
    MemoryLine {
      ts_ms,
      kind: LineKind::Completion,
      name: Some(name.to_string()),
      status: Some(Status::Completed),
      text: format!("Completed {workflow} for {context}: {outcome}"),
    }
  }

  /// The seed's checkpoint line at a major phase transition:
  /// `Active {workflow} workflow: {completed} completed, {next_verb} {context}`.
  pub fn checkpoint(
    ts_ms: i64,
    name: &str,
    status: Status,
    workflow: &str,
    completed: &str,
    next_verb: &str,
    context: &str,
  ) -> MemoryLine {
    MemoryLine {
      ts_ms,
      kind: LineKind::Checkpoint,
      name: Some(name.to_string()),
      status: Some(status),
      text: format!("Active {workflow} workflow: {completed} completed, {next_verb} {context}"),
    }
  }

  /// The line with its text redacted (name and status are checked names, not free text).
  pub fn redacted(&self, options: &RedactOptions) -> MemoryLine {
    MemoryLine { text: FieldRedactor::new(options).text("text", &self.text), ..self.clone() }
  }

  /// Whether [`MemoryMd::append`] takes the line: text at most [`MAX_LINE_TEXT_BYTES`]
  /// (`E_TOO_LARGE`, a line is never cut), a valid name.
  pub fn check(&self) -> Result<()> {
    if self.text.len() > MAX_LINE_TEXT_BYTES {
      return Err(LoaError::TooLarge {
        what: "MEMORY.md line".into(),
        size: self.text.len() as u64,
        limit: MAX_LINE_TEXT_BYTES as u64,
      });
    }
    match &self.name {
      Some(name) => check_name(name),
      None => Ok(()),
    }
  }

  /// The line as written (with its newline).
  pub fn render(&self) -> String {
    let mut tag = self.kind.as_str().to_string();
    if let Some(name) = &self.name {
      tag.push(':');
      tag.push_str(name);
      if let Some(status) = self.status {
        tag.push(':');
        tag.push_str(status.as_str());
      }
    }
    format!("- {} [{tag}] {}\n", format_ms(self.ts_ms), one_line(&self.text))
  }

  /// Parses a line [`render`](Self::render) writes; `None` for any other line.
  pub fn parse(line: &str) -> Option<MemoryLine> {
    let rest = line.trim_end_matches(['\n', '\r']).strip_prefix("- ")?;
    let (ts, rest) = rest.split_once(' ')?;
    let ts_ms = parse_ms(ts)?;
    let rest = rest.strip_prefix('[')?;
    let (tag, text) = rest.split_once("] ")?;
    let mut parts = tag.split(':');
    let kind = LineKind::parse(parts.next()?)?;
    let name = parts.next().map(str::to_string);
    if name.as_deref().is_some_and(|n| check_name(n).is_err()) {
      return None;
    }
    let status = match parts.next() {
      Some(s) => Some(Status::parse(s).ok()?),
      None => None,
    };
    if parts.next().is_some() {
      return None;
    }
    Some(MemoryLine { ts_ms, kind, name, status, text: text.to_string() })
  }
}

/// What an append did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AppendOutcome {
  /// Lines handed to the overflow sink and removed.
  pub overflowed: usize,
  /// Why lines past the cap are still there (the sink failed), if it did.
  pub overflow_error: Option<String>,
}

/// MEMORY.md (L2).
#[derive(Debug)]
pub struct MemoryMd {
  dir: StateDir,
  name: String,
  max_entries: usize,
  lock_timeout: Duration,
  redaction: RedactOptions,
}

impl MemoryMd {
  /// MEMORY.md named `name` in `dir`, keeping at most `max_entries` (at least 1) of the
  /// ledger's lines; lines appended are redacted with the default options.
  pub fn new(dir: StateDir, name: impl Into<String>, max_entries: usize, lock_timeout: Duration) -> MemoryMd {
    MemoryMd {
      dir,
      name: name.into(),
      max_entries: max_entries.max(1),
      lock_timeout,
      redaction: RedactOptions::default(),
    }
  }

  /// The same MEMORY.md, lines appended redacted with `redaction`.
  pub fn with_redaction(self, redaction: RedactOptions) -> MemoryMd {
    MemoryMd { redaction, ..self }
  }

  fn read_text(&self) -> Result<Option<String>> {
    let Some(bytes) = self.dir.read(&self.name, MAX_MEMORY_MD_BYTES)? else { return Ok(None) };
    String::from_utf8(bytes).map(Some).map_err(|_| LoaError::StateCorrupt {
      path: self.dir.child_path(&self.name).display().to_string(),
      reason: "not valid UTF-8; left untouched".into(),
    })
  }

  /// The ledger's lines, in file order.
  pub fn lines(&self) -> Result<Vec<MemoryLine>> {
    Ok(self.read_text()?.map(|t| t.lines().filter_map(MemoryLine::parse).collect()).unwrap_or_default())
  }

  /// Appends `line`, its text redacted (see the module docs for the cap). `overflow` receives
  /// the oldest lines past the cap and must return only once they are stored durably
  /// elsewhere.
  pub fn append(
    &self,
    line: &MemoryLine,
    overflow: &mut dyn FnMut(&[MemoryLine]) -> Result<()>,
  ) -> Result<AppendOutcome> {
    let line = &line.redacted(&self.redaction);
    line.check()?;
    let _guard = lock_in(&self.dir, format!("{}.lock", self.name), self.lock_timeout, "MEMORY.md")?;
    let mut text = self.read_text()?.unwrap_or_else(|| MEMORY_MD_HEADER.to_string());
    if !text.is_empty() && !text.ends_with('\n') {
      text.push('\n');
    }
    text.push_str(&line.render());
    let ours: Vec<(usize, MemoryLine)> =
      line_spans(&text).filter_map(|(start, l)| Some((start, MemoryLine::parse(l)?))).collect();
    let mut outcome = AppendOutcome::default();
    let excess = ours.len().saturating_sub(self.max_entries);
    if excess > 0 {
      let oldest: Vec<MemoryLine> = ours[..excess].iter().map(|(_, l)| l.clone()).collect();
      match overflow(&oldest) {
        Ok(()) => {
          let drop: std::collections::HashSet<usize> = ours[..excess].iter().map(|(s, _)| *s).collect();
          text = line_spans(&text).filter(|(s, _)| !drop.contains(s)).map(|(_, l)| l).collect();
          outcome.overflowed = excess;
        }
        Err(e) => outcome.overflow_error = Some(format!("{}: {e}", e.code())),
      }
    }
    // A file the reader would refuse is never written: it would make every later read (and
    // so recovery of every workflow) fail on the line that pushed it over.
    if text.len() as u64 > MAX_MEMORY_MD_BYTES {
      return Err(LoaError::TooLarge { what: "MEMORY.md".into(), size: text.len() as u64, limit: MAX_MEMORY_MD_BYTES });
    }
    self.dir.write_atomic(&self.name, text.as_bytes(), None)?;
    Ok(outcome)
  }
}

/// Each line of `text` with its newline, and where it starts.
fn line_spans(text: &str) -> impl Iterator<Item = (usize, &str)> {
  text.split_inclusive('\n').scan(0usize, |at, line| {
    let start = *at;
    *at += line.len();
    Some((start, line))
  })
}

/// The summary of MEMORY.md lines moved out past the cap: one decision's text, every line kept
/// whole.
pub fn overflow_summary(lines: &[MemoryLine]) -> String {
  let first = lines.first().map_or(String::new(), |l| format_ms(l.ts_ms));
  let last = lines.last().map_or(String::new(), |l| format_ms(l.ts_ms));
  let mut out = format!("MEMORY.md overflow: {} entries from {first} to {last} moved here.", lines.len());
  for l in lines {
    out.push('\n');
    out.push_str(l.render().trim_end());
  }
  out
}

/// One source of a workflow's state.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
  /// `l1`, `memory.md`, ...
  pub source: String,
  pub status: Status,
  pub updated_ms: i64,
}

/// The outcome of newest-wins.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
  pub winner: Candidate,
  /// Sources older than the winner.
  pub stale: Vec<String>,
  /// Set when a source is more than `stale_after_ms` behind the winner.
  pub warning: Option<String>,
}

/// Newest wins; on a tie the earlier candidate (higher read priority). `None` when empty.
pub fn newest_wins(candidates: &[Candidate], stale_after_ms: u64) -> Option<Resolution> {
  let mut winner = candidates.first()?;
  for c in &candidates[1..] {
    if c.updated_ms > winner.updated_ms {
      winner = c;
    }
  }
  let stale: Vec<&Candidate> = candidates.iter().filter(|c| c.updated_ms < winner.updated_ms).collect();
  let oldest = stale.iter().min_by_key(|c| c.updated_ms);
  let warning = oldest.filter(|o| (winner.updated_ms - o.updated_ms) as u64 > stale_after_ms).map(|o| {
    let minutes = (winner.updated_ms - o.updated_ms) / 60_000;
    format!("state may be stale: {} was last updated {minutes} min before {}", o.source, winner.source)
  });
  Some(Resolution { winner: winner.clone(), stale: stale.iter().map(|c| c.source.clone()).collect(), warning })
}

/// Reads workflow `name` in the documented priority (L1, then MEMORY.md's newest line naming
/// it with a status) and resolves a disagreement newest-wins. A layer that does not exist
/// (`None`: its directory is missing) knows nothing.
pub fn recover(
  l1: Option<&L1Store>,
  l2: Option<&MemoryMd>,
  name: &str,
  stale_after_ms: u64,
) -> Result<Option<Resolution>> {
  check_name(name)?;
  let mut candidates = Vec::new();
  if let Some(state) = l1.map(|l1| l1.read(name)).transpose()?.flatten() {
    let ms = parse_ms(&state.last_updated).unwrap_or(i64::MIN);
    candidates.push(Candidate { source: "l1".into(), status: state.status, updated_ms: ms });
  }
  let lines = l2.map(MemoryMd::lines).transpose()?.unwrap_or_default();
  let newest_line =
    lines.into_iter().filter(|l| l.name.as_deref() == Some(name) && l.status.is_some()).max_by_key(|l| l.ts_ms);
  if let Some(line) = newest_line {
    candidates.push(Candidate {
      source: "memory.md".into(),
      status: line.status.unwrap_or(Status::Created),
      updated_ms: line.ts_ms,
    });
  }
  Ok(newest_wins(&candidates, stale_after_ms))
}

#[cfg(test)]
mod tests {
  use super::*;

  fn dir(tmp: &tempfile::TempDir) -> StateDir {
    StateDir::open_root(tmp.path()).unwrap()
  }

  #[test]
  fn l1_state_enforces_transitions_and_never_overwrites_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let l1 = L1Store::new(dir(&tmp), Duration::from_secs(5));
    l1.write("initiative", Status::Created, Map::new(), 1_000).unwrap();
    l1.write("initiative", Status::InProgress, Map::new(), 2_000).unwrap();
    l1.write("initiative", Status::Completed, Map::new(), 3_000).unwrap();
    let err = l1.write("initiative", Status::InProgress, Map::new(), 4_000).unwrap_err();
    assert_eq!(err.code(), "E_ILLEGAL_TRANSITION");
    assert_eq!(l1.read("initiative").unwrap().unwrap().status, Status::Completed);
    assert_eq!(l1.write("../x", Status::Created, Map::new(), 0).unwrap_err().code(), "E_INVALID_ARGUMENT");
    // One corrupt byte: moved aside and reported, never read as empty.
    let path = tmp.path().join("initiative.json");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[0] = b'#';
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(l1.read("initiative").unwrap_err().code(), "E_STATE_CORRUPT");
    assert!(!path.exists());
    let moved: Vec<_> = std::fs::read_dir(tmp.path())
      .unwrap()
      .filter_map(|e| e.ok())
      .filter(|e| e.file_name().to_string_lossy().contains("corrupt"))
      .collect();
    assert_eq!(std::fs::read(moved[0].path()).unwrap(), bytes);
    // Another version: left untouched.
    std::fs::write(&path, br#"{"version":2,"status":"created","lastUpdated":"2026-01-01T00:00:00Z"}"#).unwrap();
    assert_eq!(l1.read("initiative").unwrap_err().code(), "E_STATE_CORRUPT");
    assert!(path.exists());
  }

  #[test]
  fn memory_md_is_never_written_past_the_size_its_reader_takes() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("MEMORY.md");
    let theirs = format!("# Mine\n{}\n", "x".repeat(MAX_MEMORY_MD_BYTES as usize - 100));
    std::fs::write(&path, &theirs).unwrap();
    let md = MemoryMd::new(dir(&tmp), "MEMORY.md", 10, Duration::from_secs(5));
    let line = MemoryLine { ts_ms: 1_000, kind: LineKind::Learning, name: None, status: None, text: "y".repeat(2000) };
    let err = md.append(&line, &mut |_| Ok(())).unwrap_err();
    assert_eq!(err.code(), "E_TOO_LARGE");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), theirs, "MEMORY.md changed");
    assert_eq!(md.lines().unwrap(), Vec::new(), "MEMORY.md no longer reads");
    // A line that still fits is appended.
    let short = MemoryLine { text: "short".into(), ..line };
    md.append(&short, &mut |_| Ok(())).unwrap();
    assert_eq!(md.lines().unwrap(), vec![short]);
  }

  #[test]
  fn memory_md_overflow_is_handed_over_never_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("MEMORY.md"), "# Mine\n\nHuman line, kept.\n- not ours\n").unwrap();
    let md = MemoryMd::new(dir(&tmp), "MEMORY.md", 3, Duration::from_secs(5));
    let mut moved: Vec<MemoryLine> = Vec::new();
    for i in 0..5 {
      let line = MemoryLine {
        ts_ms: i * 1000,
        kind: LineKind::Checkpoint,
        name: Some("apex".into()),
        status: Some(Status::InProgress),
        text: format!("step {i}\nwith <b>"),
      };
      let out = md
        .append(&line, &mut |lines| {
          moved.extend_from_slice(lines);
          Ok(())
        })
        .unwrap();
      assert_eq!(out.overflowed, usize::from(i >= 3));
    }
    assert_eq!(
      moved.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(),
      vec!["step 0 with &lt;b>", "step 1 with &lt;b>"]
    );
    let text = std::fs::read_to_string(tmp.path().join("MEMORY.md")).unwrap();
    assert!(text.starts_with("# Mine\n\nHuman line, kept.\n- not ours\n"));
    assert_eq!(md.lines().unwrap().len(), 3);
    // A failing sink: nothing removed, the reason reported.
    let line = MemoryLine { ts_ms: 9000, kind: LineKind::Learning, name: None, status: None, text: "x".into() };
    let out = md.append(&line, &mut |_| Err(LoaError::Internal("down".into()))).unwrap();
    assert_eq!(out.overflowed, 0);
    assert!(out.overflow_error.unwrap().starts_with("E_INTERNAL"));
    assert_eq!(md.lines().unwrap().len(), 4);
    assert!(overflow_summary(&moved).contains("step 1"));
    let long = MemoryLine { text: "x".repeat(MAX_LINE_TEXT_BYTES + 1), ..line };
    assert_eq!(md.append(&long, &mut |_| Ok(())).unwrap_err().code(), "E_TOO_LARGE");
  }

  #[test]
  fn newest_wins_with_a_warning_past_five_minutes() {
    let c = |s: &str, ms: i64| Candidate { source: s.into(), status: Status::InProgress, updated_ms: ms };
    let r = newest_wins(&[c("l1", 0), c("memory.md", 300_000)], 300_000).unwrap();
    assert_eq!((r.winner.source.as_str(), r.warning.is_none()), ("memory.md", true));
    let r = newest_wins(&[c("l1", 0), c("memory.md", 300_001)], 300_000).unwrap();
    assert!(r.warning.unwrap().contains("l1"));
    let tie = newest_wins(&[c("l1", 5), c("memory.md", 5)], 300_000).unwrap();
    assert_eq!((tie.winner.source.as_str(), tie.stale.len()), ("l1", 0));
    assert!(newest_wins(&[], 1).is_none());

    let tmp = tempfile::tempdir().unwrap();
    let l1 = L1Store::new(dir(&tmp), Duration::from_secs(5));
    let md = MemoryMd::new(dir(&tmp), "MEMORY.md", 10, Duration::from_secs(5));
    l1.write("apex", Status::Created, Map::new(), 0).unwrap();
    let line = MemoryLine {
      ts_ms: 3_600_000,
      kind: LineKind::Checkpoint,
      name: Some("apex".into()),
      status: Some(Status::Blocked),
      text: "blocked".into(),
    };
    md.append(&line, &mut |_| Ok(())).unwrap();
    let r = recover(Some(&l1), Some(&md), "apex", 300_000).unwrap().unwrap();
    assert_eq!((r.winner.status, r.winner.source.as_str()), (Status::Blocked, "memory.md"));
    assert!(r.warning.is_some());
  }
}
