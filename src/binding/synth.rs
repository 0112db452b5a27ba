//! Ledger synthesis (`src/synth/`, docs/synthesis.md): `writeLedgerEvent` and
//! `synthesizeLedger`, each a promise with a synchronous twin.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::{Env, Unknown};
use napi_derive::napi;

use super::convert::{arg, js_from, object, objects, opt_object, Bool, Given, Int, JsonObject, List, Obj, Str};
use super::{sync_twin, CoreTask};
use crate::error::{invalid, LoaError, Result};
use crate::synth as core;
use crate::timestamp::{format_ms, now_ms};

/// One line of `checkpoints`: the status a phase reached.
#[napi(object, object_to_js = false)]
pub struct LedgerEventCheckpoint {
  /// A number (`"5"`) or a name (`"review"`).
  #[napi(ts_type = "string")]
  pub phase: Str,
  #[napi(ts_type = "string")]
  pub status: Str,
  /// RFC 3339, any offset: when the phase reached it. Default the event's `ts`.
  #[napi(ts_type = "string")]
  pub updated: Option<Option<Str>>,
}

impl From<LedgerEventCheckpoint> for core::CheckpointItem {
  fn from(c: LedgerEventCheckpoint) -> core::CheckpointItem {
    core::CheckpointItem { phase: c.phase.0, status: c.status.0, updated: c.updated.given() }
  }
}

/// One session's account for `writeLedgerEvent` (seed 001's event file).
#[napi(object, object_to_js = false)]
pub struct LedgerEventInput {
  /// The agent: 1-64 of `A-Z a-z 0-9 . _ -`, starting with a letter or digit.
  #[napi(ts_type = "string")]
  pub agent: Str,
  /// What ended: `session_end`, `handoff`, `checkpoint`, ... Default `session_end`.
  #[napi(js_name = "type", ts_type = "string")]
  pub kind: Option<Option<Str>>,
  /// RFC 3339, any offset. Default now.
  #[napi(ts_type = "string")]
  pub ts: Option<Option<Str>>,
  /// The git branch the session worked on.
  #[napi(ts_type = "string")]
  pub branch: Option<Option<Str>>,
  /// Why it ended (`clear`, `compact`, ...).
  #[napi(ts_type = "string")]
  pub reason: Option<Option<Str>>,
  /// What the agent is doing now (the newest event's wins).
  #[napi(ts_type = "string")]
  pub now: Option<Option<Str>>,
  /// What was done (merged as a set across events).
  #[napi(ts_type = "Array<string>")]
  pub this_session: Option<Option<List<Str>>>,
  /// Key -> decision (per key, the newest event's wins).
  #[napi(ts_type = "Record<string, string>")]
  pub decisions: Option<Option<JsonObject>>,
  /// Phases and their status (the latest per phase wins).
  #[napi(ts_type = "Array<LedgerEventCheckpoint>")]
  pub checkpoints: Option<Option<List<Obj<LedgerEventCheckpoint>>>>,
  /// Questions still open (merged as a set).
  #[napi(ts_type = "Array<string>")]
  pub open_questions: Option<Option<List<Str>>>,
}

fn decisions(map: Option<JsonObject>) -> Result<BTreeMap<String, String>> {
  let mut out = BTreeMap::new();
  for (key, value) in map.map(|m| m.0).unwrap_or_default() {
    match value {
      serde_json::Value::String(text) => {
        out.insert(key, text);
      }
      _ => return invalid("each value of `event.decisions` must be a string"),
    }
  }
  Ok(out)
}

impl TryFrom<LedgerEventInput> for core::Event {
  type Error = LoaError;

  fn try_from(e: LedgerEventInput) -> Result<core::Event> {
    let event = core::Event {
      ts: e.ts.given().unwrap_or_else(|| format_ms(now_ms())),
      agent: e.agent.0,
      branch: e.branch.given(),
      kind: e.kind.given().unwrap_or_else(|| "session_end".into()),
      reason: e.reason.given(),
      now: e.now.given(),
      this_session: e.this_session.given().unwrap_or_default(),
      decisions: decisions(e.decisions.flatten())?,
      checkpoints: objects(e.checkpoints),
      open_questions: e.open_questions.given().unwrap_or_default(),
    };
    event.validate()?;
    Ok(event)
  }
}

/// Where `writeLedgerEvent` put the event.
#[napi(object, object_from_js = false)]
pub struct LedgerEventWritten {
  /// Its name in `<dir>/events/`: `<ts>_<agent>.md`, or `<ts>_<agent>~<n>.md` when that was
  /// taken.
  pub file: String,
  pub path: String,
}

js_from!(|w: core::Written| LedgerEventWritten { file, path = w.path.display().to_string() });

/// `synthesizeLedger`'s options.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct SynthesizeLedgerOptions {
  /// Compare only: `stale` says whether current.md differs from what synthesis gives. Writes
  /// nothing and takes no lock.
  #[napi(ts_type = "boolean")]
  pub check: Option<Option<Bool>>,
  /// Fold events older than `retentionDays` into the signed base.json (needs `keysDir`) and
  /// move them to `archive/<day>/`. current.md keeps the same bytes.
  #[napi(ts_type = "boolean")]
  pub archive: Option<Option<Bool>>,
  /// Days an event stays live before `archive` folds it. Default 7.
  #[napi(ts_type = "number")]
  pub retention_days: Option<Option<Int>>,
  /// The key ring that signs base.json (archive) and verifies it (whenever it exists).
  #[napi(ts_type = "string")]
  pub keys_dir: Option<Option<Str>>,
  /// Commit current.md with git when it changed (an argument vector, never a shell).
  #[napi(ts_type = "boolean")]
  pub commit: Option<Option<Bool>>,
  /// How long to wait for another synthesiser's `.synth.lock`, in ms. Default 5000.
  #[napi(ts_type = "number")]
  pub lock_timeout_ms: Option<Option<Int>>,
}

impl TryFrom<SynthesizeLedgerOptions> for core::SynthOptions {
  type Error = LoaError;

  fn try_from(o: SynthesizeLedgerOptions) -> Result<core::SynthOptions> {
    let defaults = core::SynthOptions::default();
    let retention_days = o.retention_days.given().unwrap_or(defaults.retention_days);
    if retention_days > 36_500 {
      return invalid("`options.retentionDays` must be at most 36500");
    }
    let lock_timeout_ms: u64 = o.lock_timeout_ms.given().unwrap_or(defaults.lock_timeout.as_millis() as u64);
    Ok(core::SynthOptions {
      check: o.check.given().unwrap_or(false),
      archive: o.archive.given().unwrap_or(false),
      retention_days,
      keys_dir: o.keys_dir.given().map(|d: String| PathBuf::from(d)),
      commit: o.commit.given().unwrap_or(false),
      lock_timeout: Duration::from_millis(lock_timeout_ms.min(600_000)),
      ..defaults
    })
  }
}

/// A live event that went into current.md.
#[napi(object, object_from_js = false)]
pub struct LedgerSynthSource {
  pub file: String,
  pub agent: String,
  /// RFC 3339, UTC.
  pub ts: String,
  /// The event's `type`.
  #[napi(js_name = "type")]
  pub kind: String,
  pub branch: Option<String>,
}

js_from!(|s: core::Source| LedgerSynthSource { file, agent, ts, kind, branch });

/// A file of `events/` left out, and why (never its content).
#[napi(object, object_from_js = false)]
pub struct LedgerSynthSkipped {
  /// Its name, or a description when the name is not one the library writes.
  pub file: String,
  pub reason: String,
}

js_from!(|s: core::Skipped| LedgerSynthSkipped { file, reason });

/// What `synthesizeLedger` did.
#[napi(object, object_from_js = false)]
pub struct LedgerSynthReport {
  /// `<dir>/current.md`.
  pub current_path: String,
  /// current.md was written with new bytes.
  pub changed: bool,
  /// `check`: current.md is missing or differs (the CLI exits 1).
  pub stale: bool,
  /// Events in the output: the base's and the live ones.
  pub event_count: f64,
  /// The newest event's `ts` (RFC 3339, UTC).
  pub latest_ts: Option<String>,
  /// The winning `now`.
  pub now: Option<String>,
  /// The live events read, oldest first.
  pub sources: Vec<LedgerSynthSource>,
  /// Events taken from the signed base.json.
  pub base_events: f64,
  pub skipped: Vec<LedgerSynthSkipped>,
  /// Events folded into the base and moved to the archive by this call.
  pub archived: f64,
  /// current.md was committed with git.
  pub committed: bool,
  /// current.md's text.
  pub text: String,
}

js_from!(|r: core::SynthReport| LedgerSynthReport {
  current_path = r.current_path.display().to_string(),
  changed,
  stale,
  event_count: f64,
  latest_ts,
  now,
  sources => each,
  base_events: f64,
  skipped => each,
  archived: f64,
  committed,
  text,
});

fn event_args(dir: Unknown, event: Unknown) -> Result<(PathBuf, core::Event)> {
  Ok((PathBuf::from(arg::<Str>(dir, "dir")?.0), object::<LedgerEventInput, core::Event>(event, "event")?))
}

fn synth_args(dir: Unknown, options: Option<Unknown>) -> Result<(PathBuf, core::SynthOptions)> {
  Ok((
    PathBuf::from(arg::<Str>(dir, "dir")?.0),
    opt_object::<SynthesizeLedgerOptions, core::SynthOptions>(options, "options")?,
  ))
}

/// Writes one event file into `<dir>/events/` (created if needed), atomically, under a name no
/// other writer holds (same millisecond, same agent: `~2`, `~3`, ...). `dir` is the handoffs
/// directory that `synthesizeLedger` reads.
#[napi(ts_args_type = "dir: string, event: LedgerEventInput", ts_return_type = "Promise<LedgerEventWritten>")]
pub fn write_ledger_event(env: Env, dir: Unknown, event: Unknown) -> AsyncTask<CoreTask<LedgerEventWritten>> {
  CoreTask::after(&env, || event_args(dir, event), |(d, e)| core::write_event(&d, &e).map(Into::into))
}

/// Synchronous twin of `writeLedgerEvent`.
#[napi(ts_args_type = "dir: string, event: LedgerEventInput")]
pub fn write_ledger_event_sync(env: Env, dir: Unknown, event: Unknown) -> napi::Result<LedgerEventWritten> {
  sync_twin(&env, || event_args(dir, event), |(d, e)| core::write_event(&d, &e).map(Into::into))
}

/// Synthesises `<dir>/current.md` from the signed `base.json` and every event of `events/`,
/// under `.synth.lock`: the same bytes whatever the order or grouping the events are found in
/// (no wall-clock time in it). Malformed events are skipped and listed in `skipped`. With
/// `check`, compares instead of writing.
#[napi(ts_args_type = "dir: string, options?: SynthesizeLedgerOptions", ts_return_type = "Promise<LedgerSynthReport>")]
pub fn synthesize_ledger(env: Env, dir: Unknown, options: Option<Unknown>) -> AsyncTask<CoreTask<LedgerSynthReport>> {
  CoreTask::after(&env, || synth_args(dir, options), |(d, o)| core::synthesize(&d, &o).map(Into::into))
}

/// Synchronous twin of `synthesizeLedger`.
#[napi(ts_args_type = "dir: string, options?: SynthesizeLedgerOptions")]
pub fn synthesize_ledger_sync(env: Env, dir: Unknown, options: Option<Unknown>) -> napi::Result<LedgerSynthReport> {
  sync_twin(&env, || synth_args(dir, options), |(d, o)| core::synthesize(&d, &o).map(Into::into))
}
