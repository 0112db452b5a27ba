//! Ledger synthesis (seed 001): many agents, machines or branches each write their own event
//! files; anyone can synthesise the same `current.md` from them, in any order, at any time, and
//! get the same bytes. Nothing is ever merged by git: two sessions add two different files.
//!
//! A handoffs directory holds
//!
//! ```text
//! events/<ts>_<agent>.md     one per session end, handoff or checkpoint (event.rs)
//! events/*.json              the Lossless Ledger's session_handoff records, read as events
//! archive/<YYYY-MM-DD>/      events folded into the base, kept for humans
//! base.json                  the signed merged state of every archived event
//! current.md                 the generated view
//! .synth.lock                held by a synthesiser while it reads and writes
//! ```
//!
//! Guarantees:
//! - The merge ([`merge`]) is a join: commutative, associative, idempotent (property-tested), so
//!   the order events are found in, and how they are grouped, never changes a byte of the output.
//! - The output holds no wall-clock time: only the events' own instants, `event_count` and
//!   `latest_ts`. Archiving folds events into `base.json` before moving them, and the merge of
//!   the base with the live events is the merge of all of them: the same bytes after archiving,
//!   also after a crash between the two steps (an event in both counts once).
//! - `base.json` is signed (Ed25519 over `SYNTH_BASE_DOMAIN || JCS(base without signature)`);
//!   one that does not verify stops synthesis with `E_SIGNATURE_INVALID`, it is never used.
//! - Names never collide: an event appears under its name only if the name was free (a hard
//!   link from a fsynced temp file), else the next `~<n>` suffix is tried.
//! - Reads are bounded, no symlink is followed, non-regular files are refused, and a malformed
//!   event is skipped and reported with its file name and a reason that holds none of its text.

pub mod event;
pub mod merge;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use event::{CheckpointItem, Event};
pub use merge::State;

use crate::error::{LoaError, Result};
use crate::fsutil::{is_temp_name, StateDir};
use crate::jcs;
use crate::lock::lock_in;
use crate::sign::keys::{KeyPolicy, KeyRing};
use crate::sign::manifest::TrustedKey;
use crate::sign::{sign_with_domain, verify_with_domain, SYNTH_BASE_DOMAIN};
use crate::timestamp::{format_ms, format_ms_compact};

/// The version in current.md's footer.
pub const CURRENT_VERSION: u32 = 1;
/// The version of base.json.
pub const BASE_VERSION: u32 = 1;
/// The events directory, in the handoffs directory.
pub const EVENTS_DIR: &str = "events";
/// The archive directory, in the handoffs directory.
pub const ARCHIVE_DIR: &str = "archive";
/// The generated view.
pub const CURRENT_FILE: &str = "current.md";
/// The signed base snapshot.
pub const BASE_FILE: &str = "base.json";
/// The synthesiser's lock file.
pub const LOCK_FILE: &str = ".synth.lock";
/// Most event files one synthesis reads (`E_TOO_LARGE` beyond: archive first).
pub const MAX_EVENTS: usize = 1_000_000;
/// Largest current.md compared by `check`.
pub const MAX_CURRENT_BYTES: u64 = 256 * 1024 * 1024;
/// Largest base.json read.
pub const MAX_BASE_BYTES: u64 = 512 * 1024 * 1024;
/// Default days an event stays live before `archive` folds it into the base.
pub const DEFAULT_RETENTION_DAYS: u64 = 7;
/// Most `~<n>` suffixes tried for one event name.
const MAX_NAME_TRIES: u32 = 10_000;
const DAY_MS: i64 = 86_400_000;

/// Where an event was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
  /// Its file name in `events/`.
  pub file: String,
  pub path: PathBuf,
}

/// Writes `event` into `<dir>/events/` as `<ts>_<agent>.md` (`ts` compact UTC, e.g.
/// `20260110T130352000Z`), or `<ts>_<agent>~<n>.md` when that name is taken, its texts
/// redacted first with the default options ([`Event::redact`]). Creates the directories.
/// Atomic: the file appears complete or not at all.
pub fn write_event(dir: &Path, event: &Event) -> Result<Written> {
  let mut event = event.clone();
  event.redact(&crate::redact::RedactOptions::default());
  let event = &event;
  let bytes = event.encode()?;
  let ts = event.validate()?;
  let root = StateDir::create_root(dir)?;
  let events = root.create_subdir(EVENTS_DIR)?;
  let stem = format!("{}_{}", format_ms_compact(ts), event.agent);
  let names = (1..=MAX_NAME_TRIES).map(|n| if n == 1 { format!("{stem}.md") } else { format!("{stem}~{n}.md") });
  match events.write_new(names, &bytes, None)? {
    Some(file) => {
      let file = file.to_string_lossy().into_owned();
      Ok(Written { path: events.child_path(&file), file })
    }
    None => Err(LoaError::WalLocked { what: format!("every name of {MAX_NAME_TRIES} for the event"), waited_ms: 0 }),
  }
}

/// How to synthesise.
#[derive(Debug, Clone)]
pub struct SynthOptions {
  /// Compare instead of writing: `stale` says whether current.md differs from what synthesis
  /// gives. Takes no lock and writes nothing.
  pub check: bool,
  /// Fold events older than `retention_days` into base.json (signed with the key ring) and move
  /// them to `archive/<day>/`.
  pub archive: bool,
  pub retention_days: u64,
  /// "Now" for `archive` (milliseconds since the epoch). Never reaches the output.
  pub now_ms: i64,
  /// The key ring that signs (archive) and verifies base.json. Needed when base.json exists or
  /// `archive` is set.
  pub keys_dir: Option<PathBuf>,
  /// Commit current.md with git when it changed (`git add` and `git commit`, run with an
  /// argument vector in the handoffs directory, never through a shell).
  pub commit: bool,
  /// How long to wait for another synthesiser's lock.
  pub lock_timeout: Duration,
}

impl Default for SynthOptions {
  fn default() -> Self {
    SynthOptions {
      check: false,
      archive: false,
      retention_days: DEFAULT_RETENTION_DAYS,
      now_ms: crate::timestamp::now_ms(),
      keys_dir: None,
      commit: false,
      lock_timeout: Duration::from_secs(5),
    }
  }
}

/// One live event that went into the output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
  pub file: String,
  pub agent: String,
  /// Canonical UTC form.
  pub ts: String,
  pub kind: String,
  pub branch: Option<String>,
}

/// A file of `events/` left out, and why (never its content).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
  /// Its name, or a description of it when the name is not one this library writes.
  pub file: String,
  pub reason: String,
}

/// What a synthesis did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthReport {
  pub current_path: PathBuf,
  /// current.md was (re)written with new bytes.
  pub changed: bool,
  /// `check`: current.md is missing or differs.
  pub stale: bool,
  /// Events in the output (the base's and the live ones).
  pub event_count: u64,
  pub latest_ts: Option<String>,
  /// The winning `now`, if any.
  pub now: Option<String>,
  /// The live events read, by (ts, agent, file).
  pub sources: Vec<Source>,
  /// Events taken from base.json.
  pub base_events: u64,
  pub skipped: Vec<Skipped>,
  /// Events folded into the base and moved to the archive by this run.
  pub archived: u64,
  pub committed: bool,
  /// current.md's text.
  pub text: String,
}

/// A file name as it may appear in a report: ours, or described without its bytes.
fn shown_name(name: &[u8]) -> String {
  let plain = !name.is_empty()
    && name.len() <= 160
    && name[0] != b'.'
    && name.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'~'));
  match std::str::from_utf8(name) {
    Ok(text) if plain => text.to_string(),
    _ => format!("a file name of {} bytes", name.len()),
  }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Base {
  version: u32,
  state: State,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  signature: Option<BaseSignature>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BaseSignature {
  algorithm: String,
  key_id: String,
  value: String,
}

fn base_body(base: &Base) -> Result<(Vec<u8>, serde_json::Map<String, Value>)> {
  let value = serde_json::to_value(base).map_err(|e| LoaError::Internal(e.to_string()))?;
  let Value::Object(map) = value else { return Err(LoaError::Internal("a base is an object".into())) };
  Ok((jcs::object_to_vec_without(&map, "signature")?, map))
}

fn open_ring(options: &SynthOptions, why: &str) -> Result<KeyRing> {
  let dir = options
    .keys_dir
    .as_deref()
    .ok_or_else(|| LoaError::KeyNotFound(format!("{why}: no key ring was given (keysDir)")))?;
  KeyRing::open(dir, KeyPolicy::default(), true)
}

fn read_base(root: &StateDir, options: &SynthOptions) -> Result<State> {
  let Some(bytes) = root.read(BASE_FILE, MAX_BASE_BYTES)? else { return Ok(State::default()) };
  let path = root.child_path(BASE_FILE).display().to_string();
  let corrupt = |reason: String| LoaError::StateCorrupt { path: path.clone(), reason };
  let text = std::str::from_utf8(&bytes).map_err(|_| corrupt("not UTF-8".into()))?;
  let base: Base = serde_json::from_str(text)
    .map_err(|e| corrupt(format!("not a base snapshot: {}", crate::error::scrub_quoted(&e.to_string()))))?;
  if base.version != BASE_VERSION {
    return Err(corrupt(format!("version {} is not one this library reads ({BASE_VERSION})", base.version)));
  }
  let signature = base.signature.as_ref().ok_or_else(|| LoaError::SignatureInvalid(format!("{path} is not signed")))?;
  let keys = TrustedKey::from_ring(&open_ring(options, "base.json must be verified")?)?;
  let key = keys.iter().find(|k| k.key_id == signature.key_id).ok_or_else(|| {
    LoaError::SignatureInvalid(format!("{path} is signed by a key that is not among the verification keys"))
  })?;
  let value =
    hex::decode(&signature.value).map_err(|_| LoaError::SignatureInvalid(format!("{path}: signature is not hex")))?;
  let (body, _) = base_body(&base)?;
  if signature.algorithm != "ed25519" {
    return Err(LoaError::SignatureInvalid(format!("{path}: unsupported signature algorithm")));
  }
  verify_with_domain(&key.public_key, SYNTH_BASE_DOMAIN, &body, &value)
    .map_err(|why| LoaError::SignatureInvalid(format!("{path}: {why}")))?;
  Ok(base.state)
}

fn write_base(root: &StateDir, state: State, ring: &KeyRing) -> Result<()> {
  let (info, key) = ring.signing_key(true)?;
  let mut base = Base { version: BASE_VERSION, state, signature: None };
  let (body, _) = base_body(&base)?;
  base.signature = Some(BaseSignature {
    algorithm: "ed25519".into(),
    key_id: info.key_id,
    value: hex::encode(sign_with_domain(&key, SYNTH_BASE_DOMAIN, &body)),
  });
  let (_, map) = base_body(&base)?;
  let mut bytes = jcs::to_vec(&Value::Object(map))?;
  bytes.push(b'\n');
  root.write_atomic(BASE_FILE, &bytes, None)
}

/// A live event as read.
struct Live {
  name: std::ffi::OsString,
  ts: i64,
  state: State,
  /// `None` for an event already folded into the base (an archive cut short before the move).
  source: Option<Source>,
}

/// One listed file's outcome.
enum Read {
  Live(Box<Live>),
  Skipped(Skipped),
  Gone,
}

/// Reads and decodes one event file.
fn read_one(events: &StateDir, name: &std::ffi::OsStr, base: &State) -> Read {
  let name_bytes = std::os::unix::ffi::OsStrExt::as_bytes(name);
  let json = name_bytes.ends_with(b".json");
  let shown = || shown_name(name_bytes);
  let bytes = match events.read(name, event::MAX_EVENT_BYTES) {
    Ok(Some(bytes)) => bytes,
    Ok(None) => return Read::Gone, // archived by someone else since listing
    Err(e) => return Read::Skipped(Skipped { file: shown(), reason: format!("{}: unreadable", e.code()) }),
  };
  let file = String::from_utf8_lossy(name_bytes).into_owned();
  let id = merge::event_id(&file, &bytes);
  if base.events.contains(&id) {
    // Already folded into the base (an archive interrupted before the move): counted once.
    return Read::Live(Box::new(Live { name: name.to_owned(), ts: i64::MIN, state: State::default(), source: None }));
  }
  match Event::decode(&bytes, json) {
    Ok(event) => {
      let ts = event.validate().expect("decode validated it");
      let state = State::of_event(id, &file, ts, &event);
      let source = Source {
        file: file.clone(),
        agent: event.agent.clone(),
        ts: format_ms(ts),
        kind: event::normalise(&event.kind),
        branch: event.branch.as_deref().map(event::normalise),
      };
      Read::Live(Box::new(Live { name: name.to_owned(), ts, state, source: Some(source) }))
    }
    Err(reason) => Read::Skipped(Skipped { file: shown(), reason }),
  }
}

/// Files below this many are read on the calling thread alone.
const PARALLEL_FROM: usize = 512;

/// Reads every event of `events/`: decoded ones, the skipped with reasons, and the merge of the
/// decoded ones. Files are decoded on up to 8 threads, each merging its share: the merge is
/// associative and commutative, so how the work is split never changes the result.
fn read_events(events: &StateDir, base: &State) -> Result<(Vec<Live>, Vec<Skipped>, State)> {
  let mut names = Vec::new();
  let mut skipped = Vec::new();
  for entry in events.entries()? {
    let name_bytes = std::os::unix::ffi::OsStrExt::as_bytes(entry.name.as_os_str());
    if name_bytes.first() == Some(&b'.') || is_temp_name(&entry.name) {
      continue; // hidden files and writers' temp files are not events
    }
    if !name_bytes.ends_with(b".json") && !name_bytes.ends_with(b".md") {
      continue;
    }
    if names.len() + skipped.len() >= MAX_EVENTS {
      return Err(LoaError::TooLarge {
        what: format!("{} (event files; archive some)", events.path().display()),
        size: (names.len() + skipped.len() + 1) as u64,
        limit: MAX_EVENTS as u64,
      });
    }
    if entry.is_file() {
      names.push(entry.name);
    } else {
      skipped.push(Skipped { file: shown_name(name_bytes), reason: "not a regular file".into() });
    }
  }
  let threads = if names.len() < PARALLEL_FROM {
    1
  } else {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8)
  };
  let chunk = names.len().div_ceil(threads).max(1);
  let work = |part: &[std::ffi::OsString]| {
    let mut merged = State::default();
    let reads: Vec<Read> = part
      .iter()
      .map(|name| {
        let read = read_one(events, name, base);
        if let Read::Live(live) = &read {
          merged.merge(&live.state);
        }
        read
      })
      .collect();
    (reads, merged)
  };
  let parts: Vec<(Vec<Read>, State)> = if threads == 1 {
    vec![work(&names)]
  } else {
    std::thread::scope(|scope| {
      let handles: Vec<_> = names.chunks(chunk).map(|part| scope.spawn(move || work(part))).collect();
      handles.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    })
  };
  let mut live = Vec::with_capacity(names.len());
  let mut merged = State::default();
  for (reads, part) in parts {
    merged.absorb(part);
    for read in reads {
      match read {
        Read::Live(l) => live.push(*l),
        Read::Skipped(s) => skipped.push(s),
        Read::Gone => {}
      }
    }
  }
  // Listed in name order whatever the split.
  skipped.sort_by(|a, b| a.file.cmp(&b.file));
  Ok((live, skipped, merged))
}

/// Synthesises `<dir>/current.md` from `<dir>/base.json` and `<dir>/events/` (see the module
/// docs). The directory must exist unless `check` is set (a missing one is stale then).
pub fn synthesize(dir: &Path, options: &SynthOptions) -> Result<SynthReport> {
  let root = if options.check {
    match StateDir::open_root(dir) {
      Ok(root) => root,
      Err(e) if e.is_not_found() => {
        let text = State::default().render();
        return Ok(report_of(dir, &State::default(), Vec::new(), 0, Vec::new(), text, true));
      }
      Err(e) => return Err(e),
    }
  } else {
    StateDir::create_root(dir)?
  };
  let _lock =
    if options.check { None } else { Some(lock_in(&root, LOCK_FILE, options.lock_timeout, "ledger synthesis")?) };
  let base = read_base(&root, options)?;
  let events = if options.check { root.subdir(EVENTS_DIR)? } else { Some(root.create_subdir(EVENTS_DIR)?) };
  let (mut live, skipped, merged) = match &events {
    Some(events) => read_events(events, &base)?,
    None => (Vec::new(), Vec::new(), State::default()),
  };
  let base_events = base.events.len() as u64;
  let mut state = base.clone();
  state.absorb(merged);
  let text = state.render();
  let current = root.read(CURRENT_FILE, MAX_CURRENT_BYTES)?;
  let differs = current.as_deref() != Some(text.as_bytes());
  if options.check {
    let sources = sorted_sources(&live);
    let mut report = report_of(dir, &state, sources, base_events, skipped, text, differs);
    report.changed = false;
    return Ok(report);
  }
  if differs {
    root.write_atomic(CURRENT_FILE, text.as_bytes(), None)?;
  }
  let mut archived = 0;
  if options.archive {
    let events = events.as_ref().expect("created above");
    let cutoff = options.now_ms.saturating_sub((options.retention_days as i64).saturating_mul(DAY_MS));
    let (old, keep): (Vec<Live>, Vec<Live>) = live.into_iter().partition(|l| l.ts < cutoff);
    live = keep;
    if !old.is_empty() {
      let ring = open_ring(options, "archiving signs base.json")?;
      let mut folded = base;
      let mut fresh = 0;
      for l in &old {
        if l.source.is_some() {
          fresh += 1;
        }
        folded.merge(&l.state);
      }
      if fresh > 0 {
        write_base(&root, folded, &ring)?;
      }
      let archive = root.create_subdir(ARCHIVE_DIR)?;
      for l in &old {
        // An event already in the base has no parsed ts here: its day is its name's.
        let day = match l.source {
          Some(_) => format_ms(l.ts)[..10].to_string(),
          None => day_of_name(std::os::unix::ffi::OsStrExt::as_bytes(l.name.as_os_str())),
        };
        let day_dir = archive.create_subdir(&day)?;
        if events.move_to(&l.name, &day_dir, &l.name)? {
          day_dir.sync()?;
        } else {
          // The archive has a file of that name: this copy is folded in the base, so it goes.
          events.remove_file(&l.name)?;
        }
        archived += 1;
      }
      events.sync()?;
    }
  }
  let sources = sorted_sources(&live);
  let mut report = report_of(dir, &state, sources, base_events, skipped, text, false);
  report.changed = differs;
  report.archived = archived;
  if options.commit && differs {
    report.committed = git_commit(dir)?;
  }
  Ok(report)
}

/// `20260110T130352000Z_agent.md` -> `2026-01-10`; `unknown` for any other name.
fn day_of_name(b: &[u8]) -> String {
  if b.len() >= 8 && b[..8].iter().all(u8::is_ascii_digit) {
    let d = |r: std::ops::Range<usize>| String::from_utf8_lossy(&b[r]).into_owned();
    format!("{}-{}-{}", d(0..4), d(4..6), d(6..8))
  } else {
    "unknown".into()
  }
}

fn sorted_sources(live: &[Live]) -> Vec<Source> {
  let mut rows: Vec<(i64, &Source)> = live.iter().filter_map(|l| Some((l.ts, l.source.as_ref()?))).collect();
  rows.sort_by(|a, b| (a.0, &a.1.agent, &a.1.file).cmp(&(b.0, &b.1.agent, &b.1.file)));
  rows.into_iter().map(|(_, s)| s.clone()).collect()
}

fn report_of(
  dir: &Path,
  state: &State,
  sources: Vec<Source>,
  base_events: u64,
  skipped: Vec<Skipped>,
  text: String,
  stale: bool,
) -> SynthReport {
  SynthReport {
    current_path: dir.join(CURRENT_FILE),
    changed: false,
    stale,
    event_count: state.events.len() as u64,
    latest_ts: state.latest_ts.map(format_ms),
    now: state.now.as_ref().map(|n| n.value.clone()),
    sources,
    base_events,
    skipped,
    archived: 0,
    committed: false,
    text,
  }
}

/// `git add -- current.md` and `git commit -m ... -- current.md` in `dir`, each an argument
/// vector (no shell). `false` when git had nothing to commit.
fn git_commit(dir: &Path) -> Result<bool> {
  let run = |args: &[&str]| -> Result<std::process::Output> {
    Command::new("git")
      .arg("-C")
      .arg(dir)
      .args(args)
      .env("GIT_TERMINAL_PROMPT", "0")
      .output()
      .map_err(|e| LoaError::Io { context: "run git".into(), source: e })
  };
  let failed = |what: &str, out: &std::process::Output| LoaError::Io {
    context: format!("git {what} in {}", dir.display()),
    source: std::io::Error::other(format!("git exited with {}", out.status)),
  };
  let add = run(&["add", "--", CURRENT_FILE])?;
  if !add.status.success() {
    return Err(failed("add", &add));
  }
  let staged = run(&["diff", "--cached", "--quiet", "--", CURRENT_FILE])?;
  if staged.status.success() {
    return Ok(false);
  }
  let commit = run(&["commit", "--quiet", "-m", "ledger: synthesise current.md", "--", CURRENT_FILE])?;
  if !commit.status.success() {
    return Err(failed("commit", &commit));
  }
  Ok(true)
}

#[cfg(test)]
mod tests;
