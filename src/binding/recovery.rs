//! `recover` (boot-time integrity check and restore), `generateSoul` (BEAUVOIR.md -> SOUL.md)
//! and `heal` (the state zone), each a promise export with a sync twin. The JS shapes are
//! declared once here and converted into the `recovery` and `identity` parts' options by one
//! `TryFrom`; a wrong field is one `E_INVALID_ARGUMENT` naming it, and the promise exports
//! reject, never throw.

use std::path::PathBuf;
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::{sys, Env, Unknown};
use napi_derive::napi;

use super::convert::{js_from, object, refuse, string_union, type_name, Bool, Choice, Given, Int, List, Obj, Str};
use super::sign::PublicKey;
use super::{sync_twin, CoreTask};
use crate::error::{LoaError, Result};
use crate::identity as soul;
use crate::recovery::{self as core, heal as core_heal};
use crate::sign::manifest::TrustedKey;

string_union! {
  "A place the grimoire can be restored from: a mounted backup directory, the object store replica (`loa replicate`), a git branch, or the built-in template (a fresh start)."
  RecoverySource <=> core::RecoverySource {
    mount = Mount,
    replica = Replica,
    git = Git,
    template = Template,
  }
}

string_union! {
  "How far the live grimoire can be trusted: verified against a signed manifest and a pinned key, exactly the template, or neither."
  RecoveryTrust <=> core::Trust {
    signed = Signed,
    template = Template,
    none = None,
  }
}

string_union! {
  "A state of the recovery state machine; a run ends `running` or `degraded`."
  RecoveryState <=> core::RecoveryState {
    start = Start,
    check_integrity = CheckIntegrity,
    restore = Restore,
    running = Running,
    degraded = Degraded,
  }
}

/// A pinned public key: 64 hex characters, or a `KeyInfo` (revoked and expired ones are
/// skipped, as `verifyManifest` does).
pub struct PinnedKey(Option<TrustedKey>);

type_name!(PinnedKey, "string | KeyInfo", Unknown);

impl FromNapiValue for PinnedKey {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    let mut kind = sys::ValueType::napi_undefined;
    if sys::napi_typeof(env, value, &mut kind) == sys::Status::napi_ok && kind == sys::ValueType::napi_string {
      let Str(hex) = Str::from_napi_value(env, value)?;
      let key = TrustedKey::from_hex(&hex).map_err(|_| refuse("must be 64 hex characters or a KeyInfo"))?;
      return Ok(PinnedKey(Some(key)));
    }
    PublicKey::from_napi_value(env, value).map(|k| PinnedKey(k.0))
  }
}

fn pinned(keys: List<PinnedKey>) -> Vec<TrustedKey> {
  keys.0.into_iter().filter_map(|k| k.0).collect()
}

/// The git restore source of `recover`. Passed by the caller, never read from the workspace (a
/// remote written there could point at a repository an attacker controls).
#[napi(object, object_to_js = false)]
pub struct RecoveryGitSource {
  /// Repository URL or path, given to `git fetch` as one argument (never through a shell).
  #[napi(ts_type = "string")]
  pub remote: Str,
  /// Branch holding the signed grimoire.
  #[napi(ts_type = "string")]
  pub branch: Str,
  /// Path of the grimoire inside the repository (`.` for its root). Default: the first place of
  /// the fetched commit holding the manifest among the grimoire's place relative to the git
  /// work tree the workspace lies in (so a workspace that is itself the repository needs no
  /// path), the grimoire path (`grimoires/loa`), and the root.
  #[napi(ts_type = "string")]
  pub path: Option<Option<Str>>,
}

/// Options of `recover`. Defaults come from the workspace's `.loa.config.yaml` (`recovery`,
/// `signing`, `audit`, `grimoires_dir`), then these fields, then the environment:
/// `LOA_RECOVERY_WINDOW_MS` / `LOA_RECOVERY_MAX_ATTEMPTS` win over both.
#[napi(object, object_to_js = false)]
pub struct RecoverOptions {
  /// The workspace (the grimoire and the recovery state live below it).
  #[napi(ts_type = "string")]
  pub workspace_dir: Str,
  /// The only keys whose signatures are trusted, pinned outside the workspace: public keys as
  /// 64 hex characters, or `KeyInfo`s (`keyRing.verificationKeys()` of a ring kept elsewhere).
  /// At least one. A key whose private key file sits in the workspace's key ring is refused
  /// (`E_KEY_INVALID`): whoever can write the workspace could re-sign with it.
  #[napi(ts_type = "Array<string | KeyInfo>")]
  pub trusted_keys: List<PinnedKey>,
  /// The grimoire, workspace-relative. Default: the configuration's `grimoires_dir`.
  #[napi(ts_type = "string")]
  pub grimoire_dir: Option<Option<Str>>,
  /// The signed manifest's file name inside the grimoire. Default from `signing.manifest_path`.
  #[napi(ts_type = "string")]
  pub manifest_name: Option<Option<Str>>,
  /// Recovery state (attempts, degraded mode), workspace-relative. Default `.loa/recovery`.
  #[napi(ts_type = "string")]
  pub state_dir: Option<Option<Str>>,
  /// Sources in the order tried. Default from `recovery.sources` (`mount`, `replica`, `git`,
  /// `template`).
  #[napi(ts_type = "Array<RecoverySource>")]
  pub sources: Option<Option<List<Choice<RecoverySource>>>>,
  /// The mount source's directory: a mounted backup holding a signed copy of the grimoire.
  #[napi(ts_type = "string")]
  pub mount_dir: Option<Option<Str>>,
  /// The object store source: the `loa-replicate` binary, which fetches the sealed grimoire
  /// this workspace shipped (docs/replication.md). Without it, `replica` in `sources` fails
  /// and the next source is tried.
  #[napi(ts_type = "string")]
  pub replica_program: Option<Option<Str>>,
  /// The git source. Without it, `git` in `sources` fails and the next source is tried.
  #[napi(ts_type = "RecoveryGitSource")]
  pub git: Option<Option<Obj<RecoveryGitSource>>>,
  /// Loop detection window in milliseconds. Default 120000.
  #[napi(ts_type = "number")]
  pub window_ms: Option<Option<Int>>,
  /// Runs within the window after which no restore is attempted (degraded). Default 5.
  #[napi(ts_type = "number")]
  pub max_attempts: Option<Option<Int>>,
  /// Consecutive degraded runs after which the result is `critical`. Default 3.
  #[napi(ts_type = "number")]
  pub degraded_alert_cycles: Option<Option<Int>>,
  /// Check only: nothing is written (no attempt recorded, no restore, no audit event).
  #[napi(ts_type = "boolean")]
  pub check_only: Option<Option<Bool>>,
  /// How long to wait for another run's lock. Default 5000.
  #[napi(ts_type = "number")]
  pub lock_timeout_ms: Option<Option<Int>>,
  /// Evidence and leftover directories kept beside the grimoire; the oldest beyond this many
  /// are removed at the end of each run (each removal an audit event). Default 10.
  #[napi(ts_type = "number")]
  pub max_evidence: Option<Option<Int>>,
}

impl TryFrom<RecoverOptions> for core::RecoveryOptions {
  type Error = LoaError;

  fn try_from(o: RecoverOptions) -> Result<core::RecoveryOptions> {
    let workspace = PathBuf::from(o.workspace_dir.0);
    let mut options = crate::config::load_config(&workspace)?.config.recovery_options(&workspace)?;
    options.trusted_keys = pinned(o.trusted_keys);
    o.grimoire_dir.set(&mut options.grimoire_dir);
    o.manifest_name.set(&mut options.manifest_name);
    o.state_dir.set(&mut options.state_dir);
    o.sources.set(&mut options.sources);
    if let Some(dir) = Given::<String>::given(o.mount_dir) {
      options.mount_dir = Some(PathBuf::from(dir));
    }
    if let Some(program) = Given::<String>::given(o.replica_program) {
      options.replica = Some(core::ReplicaSource { program: PathBuf::from(program) });
    }
    options.git =
      o.git.flatten().map(|Obj(g)| core::GitSource { remote: g.remote.0, branch: g.branch.0, path: g.path.given() });
    o.window_ms.set(&mut options.window_ms);
    o.max_attempts.set(&mut options.max_attempts);
    o.degraded_alert_cycles.set(&mut options.degraded_alert_cycles);
    options.check_only = o.check_only.given().unwrap_or(false);
    if let Some(ms) = o.lock_timeout_ms.given() {
      options.lock_timeout = Duration::from_millis(ms);
    }
    if let Some(n) = Given::<u64>::given(o.max_evidence) {
      options.max_evidence = usize::try_from(n).unwrap_or(usize::MAX);
    }
    options.apply_env()?;
    Ok(options)
  }
}

/// One step of the recovery state machine.
#[napi(object, object_from_js = false)]
pub struct RecoveryTransition {
  pub from: RecoveryState,
  pub to: RecoveryState,
  /// The source concerned, for restore steps.
  pub source: Option<RecoverySource>,
  /// Why, for humans (no file content).
  pub detail: String,
}

js_from!(|t: core::Transition| RecoveryTransition { from => into, to => into, source => each, detail });

/// What `recover` found and did.
#[napi(object, object_from_js = false)]
pub struct RecoveryResult {
  /// `running` or `degraded`.
  pub state: RecoveryState,
  /// The CLI's exit status: 0 running, 1 degraded (an error, 2, rejects instead).
  pub exit_code: u32,
  pub trust: RecoveryTrust,
  /// The source the live grimoire was restored from in this run; `null`: none (it verified, or
  /// nothing could be restored, or check only).
  pub restored_from: Option<RecoverySource>,
  /// Integrity problems found by the check (`path: kind`); empty when it passed.
  pub problems: Vec<String>,
  /// Why each source that was tried failed (`source: reason`).
  pub source_failures: Vec<String>,
  pub transitions: Vec<RecoveryTransition>,
  /// Where replaced grimoires and leftovers of interrupted runs were moved (workspace-relative).
  pub evidence: Vec<String>,
  /// Evidence directories removed in this run: the oldest beyond `maxEvidence`
  /// (workspace-relative).
  pub evidence_removed: Vec<String>,
  /// A corrupt recovery state file moved aside in this run (workspace-relative).
  pub quarantined_state: Option<String>,
  /// Runs within the window, this one included.
  pub attempts_in_window: f64,
  /// The attempts reached `maxAttempts`: no restore was tried.
  pub loop_detected: bool,
  /// Consecutive runs that ended degraded, this one included.
  pub degraded_cycles: f64,
  /// `degradedCycles` reached `degradedAlertCycles`: a human must look.
  pub critical: bool,
  pub check_only: bool,
}

js_from!(|r: core::RecoveryOutcome| RecoveryResult {
  exit_code = r.exit_code() as u32,
  state => into,
  trust => into,
  restored_from => each,
  problems,
  source_failures,
  transitions => each,
  evidence,
  evidence_removed,
  quarantined_state,
  attempts_in_window: f64,
  loop_detected,
  degraded_cycles: f64,
  critical,
  check_only,
});

fn recover_args(options: Unknown) -> Result<core::RecoveryOptions> {
  object::<RecoverOptions, _>(options, "options")
}

fn run_recover(options: core::RecoveryOptions) -> Result<RecoveryResult> {
  core::recover(&options).map(Into::into)
}

/// Boot-time recovery (docs/recovery.md): checks the grimoire against its signed manifest and
/// the pinned keys; when it does not verify (or is missing), restores it from the sources in
/// order through a verified staging copy (the replaced grimoire is kept as evidence), and gives
/// up, `degraded`, after `maxAttempts` runs within `windowMs`. Tampered state never ends
/// `running`. Rejects (exit 2) for bad options and for failures that leave nothing decided
/// (lock, state directory, audit log).
#[napi(ts_args_type = "options: RecoverOptions", ts_return_type = "Promise<RecoveryResult>")]
pub fn recover(env: Env, options: Unknown) -> AsyncTask<CoreTask<RecoveryResult>> {
  CoreTask::after(&env, || recover_args(options), run_recover)
}

/// Synchronous twin of `recover`.
#[napi(ts_args_type = "options: RecoverOptions")]
pub fn recover_sync(env: Env, options: Unknown) -> napi::Result<RecoveryResult> {
  sync_twin(&env, || recover_args(options), run_recover)
}

/// Options of `generateSoul`.
#[napi(object, object_to_js = false)]
pub struct GenerateSoulOptions {
  /// The workspace.
  #[napi(ts_type = "string")]
  pub workspace_dir: Str,
  /// Workspace-relative BEAUVOIR.md. Default `grimoires/loa/BEAUVOIR.md`.
  #[napi(ts_type = "string")]
  pub beauvoir_path: Option<Option<Str>>,
  /// Workspace-relative SOUL.md. Default `SOUL.md`.
  #[napi(ts_type = "string")]
  pub soul_path: Option<Option<Str>>,
  /// Where the generation record is kept, workspace-relative. Default `.loa/identity`.
  #[napi(ts_type = "string")]
  pub state_dir: Option<Option<Str>>,
  /// Pinned public keys (64 hex characters or `KeyInfo`s). Given, BEAUVOIR.md must be listed
  /// with its SHA-256 in the signed manifest (`manifestPath`) that verifies under them, or
  /// nothing is generated (`E_SIGNATURE_INVALID`). Absent: BEAUVOIR.md is not checked.
  #[napi(ts_type = "Array<string | KeyInfo>")]
  pub trusted_keys: Option<Option<List<PinnedKey>>>,
  /// The workspace-relative signed manifest covering BEAUVOIR.md. Default
  /// `grimoires/loa/manifest.json`.
  #[napi(ts_type = "string")]
  pub manifest_path: Option<Option<Str>>,
  /// BEAUVOIR.md's path as listed in the manifest (relative to the manifest's root). Default
  /// `BEAUVOIR.md`.
  #[napi(ts_type = "string")]
  pub manifest_entry: Option<Option<Str>>,
  /// Report what would happen, write nothing.
  #[napi(ts_type = "boolean")]
  pub check_only: Option<Option<Bool>>,
}

impl TryFrom<GenerateSoulOptions> for soul::SoulOptions {
  type Error = LoaError;

  fn try_from(o: GenerateSoulOptions) -> Result<soul::SoulOptions> {
    let d = soul::SoulOptions::default();
    let integrity = match o.trusted_keys.flatten() {
      Some(keys) => soul::Integrity::Manifest {
        manifest_path: o.manifest_path.given().unwrap_or_else(|| "grimoires/loa/manifest.json".into()),
        entry: o.manifest_entry.given().unwrap_or_else(|| "BEAUVOIR.md".into()),
        keys: pinned(keys),
      },
      None => soul::Integrity::Unchecked,
    };
    Ok(soul::SoulOptions {
      workspace_dir: o.workspace_dir.0.into(),
      beauvoir_path: o.beauvoir_path.given().unwrap_or(d.beauvoir_path),
      soul_path: o.soul_path.given().unwrap_or(d.soul_path),
      state_dir: o.state_dir.given().unwrap_or(d.state_dir),
      integrity,
      check_only: o.check_only.given().unwrap_or(false),
    })
  }
}

string_union! {
  "What `generateSoul` found or did: `generated` (SOUL.md written), `up_to_date`, `stale` (check only: would be written), `hand_edited` (SOUL.md holds bytes not generated by us: left alone)."
  SoulStatus <=> soul::SoulStatus {
    generated = Generated,
    up_to_date = UpToDate,
    stale = Stale,
    hand_edited = HandEdited,
  }
}

/// The report of `generateSoul`.
#[napi(object, object_from_js = false)]
pub struct SoulReport {
  pub status: SoulStatus,
  pub beauvoir_sha256: String,
  /// SHA-256 of the SOUL.md generated from the current BEAUVOIR.md.
  pub soul_sha256: String,
  /// Known sections SOUL.md carries with their content, by canonical name (`Identity`,
  /// `Core Principles`, `Operational Stance`, `Interaction Style`, `Boundaries`,
  /// `Self-Evolution`, `Recovery Protocol`), in SOUL.md's order. Read off what was written:
  /// a heading with nothing under it is not listed.
  pub sections: Vec<String>,
  /// Known sections SOUL.md does not carry (absent or empty in BEAUVOIR.md).
  pub missing_sections: Vec<String>,
  /// Headings of BEAUVOIR.md's sections that are none of the known ones (by meaning: see
  /// docs/recovery.md). They are carried into SOUL.md as written, after the known ones; listed
  /// here so that a misspelt section heading is seen.
  pub unrecognized_sections: Vec<String>,
}

js_from!(|r: soul::SoulReport| SoulReport {
  status => into,
  beauvoir_sha256,
  soul_sha256,
  sections,
  missing_sections,
  unrecognized_sections
});

fn soul_args(options: Unknown) -> Result<soul::SoulOptions> {
  object::<GenerateSoulOptions, _>(options, "options")
}

fn run_soul(options: soul::SoulOptions) -> Result<SoulReport> {
  soul::generate_soul(&options).map(Into::into)
}

/// Generates SOUL.md from BEAUVOIR.md (docs/recovery.md): checks BEAUVOIR.md against the signed
/// manifest when keys are given, parses it and brings SOUL.md up to date. A SOUL.md edited by
/// hand is left alone (`hand_edited`).
#[napi(ts_args_type = "options: GenerateSoulOptions", ts_return_type = "Promise<SoulReport>")]
pub fn generate_soul(env: Env, options: Unknown) -> AsyncTask<CoreTask<SoulReport>> {
  CoreTask::after(&env, || soul_args(options), run_soul)
}

/// Synchronous twin of `generateSoul`.
#[napi(ts_args_type = "options: GenerateSoulOptions")]
pub fn generate_soul_sync(env: Env, options: Unknown) -> napi::Result<SoulReport> {
  sync_twin(&env, || soul_args(options), run_soul)
}

/// Options of `heal`; paths are workspace-relative.
#[napi(object, object_to_js = false)]
pub struct HealOptions {
  /// The workspace.
  #[napi(ts_type = "string")]
  pub workspace_dir: Str,
  /// Default `grimoires/loa/NOTES.md`.
  #[napi(ts_type = "string")]
  pub notes_path: Option<Option<Str>>,
  /// Default `.beads`.
  #[napi(ts_type = "string")]
  pub beads_dir: Option<Option<Str>>,
  /// Default `grimoires/loa/a2a/trajectory`.
  #[napi(ts_type = "string")]
  pub trajectory_dir: Option<Option<Str>>,
  /// Report what would be healed, write nothing.
  #[napi(ts_type = "boolean")]
  pub check_only: Option<Option<Bool>>,
}

impl TryFrom<HealOptions> for core_heal::HealOptions {
  type Error = LoaError;

  fn try_from(o: HealOptions) -> Result<core_heal::HealOptions> {
    let d = core_heal::HealOptions::default();
    Ok(core_heal::HealOptions {
      workspace_dir: o.workspace_dir.0.into(),
      notes_path: o.notes_path.given().unwrap_or(d.notes_path),
      beads_dir: o.beads_dir.given().unwrap_or(d.beads_dir),
      trajectory_dir: o.trajectory_dir.given().unwrap_or(d.trajectory_dir),
      check_only: o.check_only.given().unwrap_or(false),
      ..d
    })
  }
}

string_union! {
  "Where `heal` took a file from: the blob of git's `HEAD`, or the template."
  HealSource <=> core_heal::HealSource {
    git = Git,
    template = Template,
  }
}

/// What `heal` did to one path.
#[napi(object, object_from_js = false)]
pub struct HealItem {
  /// Workspace-relative path.
  pub path: String,
  /// `null`: nothing to do; otherwise healed (or, check only, would be) from there.
  pub from: Option<HealSource>,
  /// Why this path could not be healed (its error code and message).
  pub error: Option<String>,
}

js_from!(|i: core_heal::HealItem| HealItem { path, from => each, error });

/// The report of `heal`.
#[napi(object, object_from_js = false)]
pub struct HealReport {
  pub items: Vec<HealItem>,
  /// The CLI's exit status: 0 healthy, 1 healed (or would heal), 2 a path could not be healed.
  pub exit_code: u32,
  pub check_only: bool,
  /// Whether `git` could read `HEAD` of the workspace.
  pub git_available: bool,
}

js_from!(|r: core_heal::HealReport| HealReport {
  exit_code = r.exit_code() as u32,
  items => each,
  check_only,
  git_available,
});

fn heal_args(options: Unknown) -> Result<core_heal::HealOptions> {
  object::<HealOptions, _>(options, "options")
}

fn run_heal(options: core_heal::HealOptions) -> Result<HealReport> {
  core_heal::heal(&options).map(Into::into)
}

/// Heals the state zone (docs/recovery.md): a missing or empty NOTES.md, beads directory or
/// trajectory directory comes back from git's `HEAD`, else from the template; a non-empty file
/// is never overwritten. Rejects only for bad options or an unreadable workspace; a path that
/// cannot be healed is an item with `error` (exit 2).
#[napi(ts_args_type = "options: HealOptions", ts_return_type = "Promise<HealReport>")]
pub fn heal(env: Env, options: Unknown) -> AsyncTask<CoreTask<HealReport>> {
  CoreTask::after(&env, || heal_args(options), run_heal)
}

/// Synchronous twin of `heal`.
#[napi(ts_args_type = "options: HealOptions")]
pub fn heal_sync(env: Env, options: Unknown) -> napi::Result<HealReport> {
  sync_twin(&env, || heal_args(options), run_heal)
}

/// Options of `recoveryStatus`.
#[napi(object, object_to_js = false)]
pub struct RecoveryStatusOptions {
  /// The workspace.
  #[napi(ts_type = "string")]
  pub workspace_dir: Str,
  /// The recovery state directory, workspace-relative. Default `.loa/recovery`.
  #[napi(ts_type = "string")]
  pub state_dir: Option<Option<Str>>,
}

impl TryFrom<RecoveryStatusOptions> for core::StatusOptions {
  type Error = LoaError;

  fn try_from(o: RecoveryStatusOptions) -> Result<core::StatusOptions> {
    Ok(core::StatusOptions {
      workspace_dir: o.workspace_dir.0.into(),
      state_dir: o.state_dir.given().unwrap_or_else(|| core::DEFAULT_STATE_DIR.into()),
    })
  }
}

/// The persisted recovery state of a workspace, as the last `recover` run left it.
#[napi(object, object_from_js = false)]
pub struct RecoveryStatus {
  /// The last run ended degraded: memory writes are refused (`E_DEGRADED`) and the plugin
  /// bootstraps with the template identity until a run ends `running`.
  pub degraded: bool,
  /// Consecutive runs that ended degraded.
  pub degraded_cycles: f64,
  /// When degraded mode was entered (ms since the epoch); `null` when not degraded.
  pub degraded_since: Option<f64>,
  /// Trust of the grimoire the last run left live (`none` when recovery never ran).
  pub trust: RecoveryTrust,
  /// Start times (ms) of the runs inside the loop-detection window.
  pub attempts: Vec<f64>,
  /// When the state was last written (ms); 0 when recovery never ran here.
  pub updated_at: f64,
}

js_from!(|s: core::PersistedState| RecoveryStatus {
  degraded_since = s.degraded_since.map(|t| t as f64),
  attempts = s.attempts.iter().map(|&t| t as f64).collect(),
  degraded,
  degraded_cycles: f64,
  trust => into,
  updated_at: f64,
});

fn status_args(options: Unknown) -> Result<core::StatusOptions> {
  object::<RecoveryStatusOptions, _>(options, "options")
}

fn run_status(options: core::StatusOptions) -> Result<RecoveryStatus> {
  core::status(&options).map(Into::into)
}

/// The persisted recovery state of a workspace (docs/recovery.md), read without writing
/// anything: whether it is degraded, for how many runs, and the trust of its grimoire. One small
/// file read, no verification (that is `recover`'s). A state file that does not parse is
/// `E_STATE_CORRUPT`.
#[napi(ts_args_type = "options: RecoveryStatusOptions")]
pub fn recovery_status_sync(env: Env, options: Unknown) -> napi::Result<RecoveryStatus> {
  sync_twin(&env, || status_args(options), run_status)
}
