//! Boot-time recovery of the grimoire: verify, restore from a trusted source, or run degraded.
//!
//! ```text
//! START -> CHECK_INTEGRITY --ok--> RUNNING
//!               | not ok
//!               v
//!          RESTORE(mount) -> RESTORE(git) -> RESTORE(template)      (configured order)
//!            each: stage -> verify -> swap --ok--> RUNNING
//!               | none succeeded
//!               v
//!            DEGRADED
//! ```
//!
//! What this module guarantees (SPEC items 11 and 12, issue 15):
//!
//! - **Nothing is trusted from inside the workspace.** Verification uses only the public keys the
//!   caller passes in [`RecoveryOptions::trusted_keys`] (pinned outside the state root: plugin
//!   configuration, a path outside the workspace). The key ring in `.loa/keys` is never
//!   consulted, so tampering plus re-signing with a key planted there is still detected.
//! - **A restore never damages live state.** Every source (mount directory, git, template) is
//!   written into a fresh staging directory beside the grimoire, verified there (manifest
//!   signature against the pinned keys and every file's size and SHA-256; for the template, the
//!   exact template content), then swapped in with one `renameat2(RENAME_EXCHANGE)`. A source
//!   that fails at any point, or a process killed before the exchange, leaves the live grimoire
//!   exactly as it was.
//! - **Tampered files are never re-signed.** Nothing here signs. The replaced grimoire is kept,
//!   whole, as evidence beside the live one (`.<name>.loa-evidence-<timestamp>`).
//! - **Template only for missing files.** The template is used when the integrity check found
//!   files missing and nothing else wrong (or no grimoire at all), or after tampering once no
//!   trusted source could restore, in which case the tampered grimoire is moved aside as evidence
//!   and the run ends DEGRADED. A template state is marked [`Trust::Template`].
//! - **Loops are seen across restarts.** Each run's start time is persisted
//!   (`<state_dir>/state.json`, see [`state`]); with `max_attempts` runs in `window_ms`, no restore
//!   is attempted (only the read-only check) and the run is DEGRADED unless the state verifies.
//!   A RUNNING result clears the attempts and leaves degraded mode.
//! - **Every transition is an audit event** (`recovery.<to>`, details `from`, `to`, `source`)
//!   when an audit directory is given; an audit failure fails the run (exit 2).

pub mod heal;
pub mod source;
pub mod state;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::audit::{Actor, AuditEvent, AuditLog, AuditOptions};
use crate::error::{LoaError, Result};
use crate::fsutil::{relative_components, StateDir};
use crate::lock::lock_in;
use crate::sign::manifest::{read_manifest, verify_manifest, ProblemKind, TrustedKey};

pub use state::{DegradedProbe, PersistedState};

/// Environment override of [`RecoveryOptions::window_ms`].
pub const ENV_WINDOW_MS: &str = "LOA_RECOVERY_WINDOW_MS";
/// Environment override of [`RecoveryOptions::max_attempts`].
pub const ENV_MAX_ATTEMPTS: &str = "LOA_RECOVERY_MAX_ATTEMPTS";
/// Default recovery state directory, relative to the workspace.
pub const DEFAULT_STATE_DIR: &str = ".loa/recovery";
const LOCK_FILE: &str = ".lock";
/// Name prefix of the scratch directories a git restore fetches into, in the state directory.
pub(crate) const GIT_SCRATCH_PREFIX: &str = "git-scratch-";

/// Takes the lock every recovery run (not check-only) holds in its state directory `dir`: a
/// forget that removes recovery's copies of a memory takes it, so no run is using them.
pub(crate) fn lock_state(dir: &StateDir, timeout: Duration) -> Result<crate::lock::LockGuard> {
  lock_in(dir, LOCK_FILE, timeout, "the recovery state")
}
/// Default of [`RecoveryOptions::max_evidence`].
pub const DEFAULT_MAX_EVIDENCE: usize = 10;

/// A place the grimoire can be restored from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RecoverySource {
  /// A mounted backup (seed 002's R2 bucket): a directory holding a signed copy of the grimoire.
  #[serde(alias = "r2")]
  Mount,
  /// The object store replica (`loa replicate`, docs/replication.md): the sealed grimoire this
  /// workspace's origin shipped, fetched by the `loa-replicate` binary into the staging
  /// directory, then verified like every source.
  Replica,
  /// A branch of a git remote holding a signed copy of the grimoire.
  Git,
  /// The built-in templates (fresh start).
  Template,
}

impl RecoverySource {
  pub fn as_str(self) -> &'static str {
    match self {
      RecoverySource::Mount => "mount",
      RecoverySource::Replica => "replica",
      RecoverySource::Git => "git",
      RecoverySource::Template => "template",
    }
  }
}

/// How far the live state can be trusted.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
  /// Verified against a signed manifest and a pinned key.
  Signed,
  /// Exactly the template files: a fresh start, nothing remembered.
  Template,
  /// Neither: the state did not verify.
  None,
}

/// Where a run ended. Exit codes: 0 running, 1 degraded (2 is an error, `Err`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryState {
  Start,
  CheckIntegrity,
  Restore,
  Running,
  Degraded,
}

impl RecoveryState {
  pub fn as_str(self) -> &'static str {
    match self {
      RecoveryState::Start => "start",
      RecoveryState::CheckIntegrity => "check_integrity",
      RecoveryState::Restore => "restore",
      RecoveryState::Running => "running",
      RecoveryState::Degraded => "degraded",
    }
  }
}

/// The object store restore source: the program that fetches the replica's sealed grimoire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaSource {
  /// The `loa-replicate` binary, run with an argument vector (never a shell): `stage
  /// --workspace <ws> --out <staging> --max-files N --max-file-bytes N`. Given by the caller,
  /// never read from the workspace.
  pub program: PathBuf,
}

/// A git restore source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSource {
  /// Repository URL or path, passed to `git fetch` as one argument (never through a shell).
  pub remote: String,
  /// Branch holding the signed grimoire.
  pub branch: String,
  /// Path of the grimoire inside the repository (`.` for its root). `None`: the first place of
  /// the fetched commit holding the manifest among where the grimoire sits relative to the git
  /// work tree the workspace lies in, the workspace's grimoire path, and the root (see
  /// docs/recovery.md).
  pub path: Option<String>,
}

/// One file of the template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateFile {
  /// Path relative to the grimoire.
  pub path: String,
  pub content: Vec<u8>,
}

/// Options of [`recover`].
#[derive(Debug, Clone)]
pub struct RecoveryOptions {
  pub workspace_dir: PathBuf,
  /// The grimoire, relative to the workspace (`grimoires/loa`).
  pub grimoire_dir: String,
  /// The signed manifest's file name inside the grimoire (`manifest.json`); the manifest must
  /// exclude itself.
  pub manifest_name: String,
  /// Recovery state (attempts, degraded mode), relative to the workspace (`.loa/recovery`).
  /// Outside the grimoire, so a restore never replaces it.
  pub state_dir: String,
  /// Audit log directory relative to the workspace (`.loa/audit`); `None`: no audit events.
  pub audit_dir: Option<String>,
  /// The only keys whose signatures are trusted. Pinned by the caller outside the state root;
  /// at least one.
  pub trusted_keys: Vec<TrustedKey>,
  /// The workspace's key ring directory (`.loa/keys`). A pinned key whose private key file
  /// (`<keyId>.key`) is there is refused (`E_KEY_INVALID`): whoever can write the workspace can
  /// read it and re-sign tampered files with it, so it anchors nothing. `None`: not checked.
  pub workspace_keys_dir: Option<String>,
  /// Sources in the order tried.
  pub sources: Vec<RecoverySource>,
  /// The mount source's directory (absolute, or relative to the current directory).
  pub mount_dir: Option<PathBuf>,
  /// The object store source; without it `replica` in `sources` fails and the next is tried.
  pub replica: Option<ReplicaSource>,
  pub git: Option<GitSource>,
  /// The template files; empty means no template can be restored.
  pub template: Vec<TemplateFile>,
  /// Loop detection window. Default 120000 ms.
  pub window_ms: u64,
  /// Runs within the window after which no restore is attempted. Default 5.
  pub max_attempts: u64,
  /// Consecutive degraded runs after which the outcome is `critical`. Default 3.
  pub degraded_alert_cycles: u64,
  /// Check only: nothing is written (no attempt recorded, no restore, no audit event).
  pub check_only: bool,
  pub lock_timeout: Duration,
  /// Largest file a source may restore. Default 64 MiB.
  pub max_file_bytes: u64,
  /// Most files a source may restore. Default 100000.
  pub max_files: usize,
  /// Evidence and leftover directories kept beside the grimoire: at the end of every run (not
  /// check-only) the oldest beyond this many are removed, each removal an audit event. Default
  /// 10; at least 1.
  pub max_evidence: usize,
}

impl Default for RecoveryOptions {
  fn default() -> Self {
    RecoveryOptions {
      workspace_dir: PathBuf::new(),
      grimoire_dir: "grimoires/loa".into(),
      manifest_name: "manifest.json".into(),
      state_dir: DEFAULT_STATE_DIR.into(),
      audit_dir: Some(".loa/audit".into()),
      trusted_keys: Vec::new(),
      workspace_keys_dir: Some(crate::memory::DEFAULT_KEYS_DIR.into()),
      sources: vec![RecoverySource::Mount, RecoverySource::Replica, RecoverySource::Git, RecoverySource::Template],
      mount_dir: None,
      replica: None,
      git: None,
      template: default_template(),
      window_ms: 120_000,
      max_attempts: 5,
      degraded_alert_cycles: 3,
      check_only: false,
      lock_timeout: Duration::from_secs(5),
      max_file_bytes: 64 << 20,
      max_files: 100_000,
      max_evidence: DEFAULT_MAX_EVIDENCE,
    }
  }
}

/// The built-in template: NOTES.md as the memory part creates it.
pub fn default_template() -> Vec<TemplateFile> {
  vec![TemplateFile { path: "NOTES.md".into(), content: crate::memory::notes::TEMPLATE.as_bytes().to_vec() }]
}

impl RecoveryOptions {
  /// Applies `LOA_RECOVERY_WINDOW_MS` and `LOA_RECOVERY_MAX_ATTEMPTS` when set (they win over
  /// the configuration file). A value that is not a positive integer is `E_INVALID_ARGUMENT`.
  pub fn apply_env(&mut self) -> Result<()> {
    self.apply_env_from(|name| std::env::var_os(name))
  }

  /// [`apply_env`](Self::apply_env) with the variables from `get` (tests pass a map).
  pub fn apply_env_from(&mut self, get: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<()> {
    let read = |name: &str, max: u64| -> Result<Option<u64>> {
      let Some(value) = get(name) else { return Ok(None) };
      match value.to_str().and_then(|v| v.trim().parse::<u64>().ok()) {
        Some(n) if (1..=max).contains(&n) => Ok(Some(n)),
        _ => crate::error::invalid(format!("{name} must be an integer from 1 to {max}")),
      }
    };
    if let Some(n) = read(ENV_WINDOW_MS, 1 << 53)? {
      self.window_ms = n;
    }
    if let Some(n) = read(ENV_MAX_ATTEMPTS, 1000)? {
      self.max_attempts = n;
    }
    Ok(())
  }

  fn validate(&self) -> Result<()> {
    if self.trusted_keys.is_empty() {
      return crate::error::invalid("`trustedKeys` must hold at least one pinned public key");
    }
    relative_components(Path::new(&self.grimoire_dir))?;
    relative_components(Path::new(&self.state_dir))?;
    if let Some(dir) = &self.audit_dir {
      relative_components(Path::new(dir))?;
    }
    if relative_components(Path::new(&self.manifest_name))?.len() != 1 {
      return crate::error::invalid("`manifestName` must be a file name inside the grimoire");
    }
    for t in &self.template {
      relative_components(Path::new(&t.path))?;
    }
    if self.window_ms == 0 || self.max_attempts == 0 || self.degraded_alert_cycles == 0 || self.max_evidence == 0 {
      return crate::error::invalid(
        "`windowMs`, `maxAttempts`, `degradedAlertCycles` and `maxEvidence` must be positive",
      );
    }
    if let Some(git) = &self.git {
      source::check_git_source(git)?;
    }
    Ok(())
  }
}

/// One step of the state machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Transition {
  pub from: RecoveryState,
  pub to: RecoveryState,
  /// The source concerned, for restore steps.
  pub source: Option<RecoverySource>,
  /// Why, for humans (no file content).
  pub detail: String,
}

/// What [`recover`] found and did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryOutcome {
  /// `Running` or `Degraded`.
  pub state: RecoveryState,
  pub trust: Trust,
  /// The source the live grimoire was restored from in this run.
  pub restored_from: Option<RecoverySource>,
  /// Integrity problems found by the check (`path: kind`), empty when it passed.
  pub problems: Vec<String>,
  /// Why each source that was tried failed (`source: reason`).
  pub source_failures: Vec<String>,
  pub transitions: Vec<Transition>,
  /// Where replaced grimoires and leftovers of interrupted runs were moved (workspace-relative).
  pub evidence: Vec<String>,
  /// Evidence directories removed in this run, the oldest beyond `max_evidence`
  /// (workspace-relative).
  pub evidence_removed: Vec<String>,
  /// A corrupt state file moved aside in this run (workspace-relative).
  pub quarantined_state: Option<String>,
  /// Runs in the window, this one included.
  pub attempts_in_window: u64,
  pub loop_detected: bool,
  /// Consecutive runs that ended degraded, this one included.
  pub degraded_cycles: u64,
  /// `degraded_cycles` reached `degraded_alert_cycles`: a human must look.
  pub critical: bool,
  pub check_only: bool,
}

impl RecoveryOutcome {
  /// 0 running, 1 degraded.
  pub fn exit_code(&self) -> i32 {
    if self.state == RecoveryState::Running {
      0
    } else {
      1
    }
  }
}

/// Result of the integrity check.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Integrity {
  Healthy(Trust),
  /// Files (or the whole grimoire) missing and nothing else wrong.
  Missing(Vec<String>),
  Tampered(Vec<String>),
}

/// Runs the state machine once (see the module docs). `Err` (exit 2) for bad options and for
/// failures that leave nothing decided (lock, state directory, audit log).
pub fn recover(options: &RecoveryOptions) -> Result<RecoveryOutcome> {
  options.validate()?;
  let workspace = StateDir::open_root(&options.workspace_dir)?;
  check_anchor(&workspace, options)?;
  let grimoire_parts = relative_components(Path::new(&options.grimoire_dir))?;
  let (live_name, parent_parts) = grimoire_parts.split_last().expect("validated");
  let parent_rel: PathBuf = parent_parts.iter().collect();
  let parent = if parent_parts.is_empty() {
    Some(workspace.try_clone()?)
  } else {
    workspace.descend(&parent_rel, !options.check_only)?
  };
  let mut run = Run::new(options, &workspace)?;
  let state_dir = workspace.descend(Path::new(&options.state_dir), !options.check_only)?;
  let _lock = match (&state_dir, options.check_only) {
    (Some(dir), false) => Some(lock_in(dir, LOCK_FILE, options.lock_timeout, "the recovery state")?),
    _ => None,
  };

  let now = crate::timestamp::now_ms();
  let mut persisted = match (&state_dir, options.check_only) {
    (Some(dir), false) => {
      let (s, moved) = state::load(dir)?;
      run.outcome.quarantined_state = moved.map(|p| rel_display(&options.state_dir, &p));
      s
    }
    (Some(dir), true) => state::peek(dir)?,
    (None, _) => PersistedState::default(),
  };
  persisted.prune(now, options.window_ms);
  run.outcome.loop_detected = persisted.attempts.len() as u64 >= options.max_attempts;
  if !options.check_only {
    persisted.attempts.push(now);
    persisted.updated_at = now;
    state::save(state_dir.as_ref().expect("created"), &persisted)?;
    if let Some(parent) = &parent {
      run.move_leftovers(parent, live_name, &parent_rel)?;
    }
  }
  run.outcome.attempts_in_window = persisted.attempts.len() as u64;

  run.step(RecoveryState::Start, RecoveryState::CheckIntegrity, None, "verifying the grimoire")?;
  let integrity = match &parent {
    Some(p) => check_integrity(p, live_name, options)?,
    None => Integrity::Missing(vec![options.grimoire_dir.clone()]),
  };
  let (final_state, trust) = match integrity {
    Integrity::Healthy(trust) => {
      run.step(RecoveryState::CheckIntegrity, RecoveryState::Running, None, "the grimoire verifies")?;
      (RecoveryState::Running, trust)
    }
    Integrity::Missing(problems) | Integrity::Tampered(problems) if options.check_only => {
      run.outcome.problems = problems;
      (RecoveryState::Degraded, Trust::None)
    }
    Integrity::Missing(problems) | Integrity::Tampered(problems) if run.outcome.loop_detected => {
      run.outcome.problems = problems;
      let detail = format!("{} runs in {} ms: no restore attempted", persisted.attempts.len(), options.window_ms);
      run.step(RecoveryState::CheckIntegrity, RecoveryState::Degraded, None, &detail)?;
      (RecoveryState::Degraded, Trust::None)
    }
    other => {
      let tampered = matches!(other, Integrity::Tampered(_));
      let (Integrity::Missing(problems) | Integrity::Tampered(problems)) = other else { unreachable!() };
      run.outcome.problems = problems;
      let parent = parent.as_ref().expect("created when not check-only");
      let completed = match parent.kind_of(live_name)? {
        None => run.complete_interrupted_swap(parent, live_name, &parent_rel)?,
        Some(_) => None,
      };
      match completed {
        Some(done) => done,
        None => run.restore(parent, live_name, &parent_rel, tampered)?,
      }
    }
  };
  if let (Some(parent), false) = (&parent, options.check_only) {
    run.prune_evidence(parent, live_name, &parent_rel)?;
  }

  run.outcome.state = final_state;
  run.outcome.trust = trust;
  if !options.check_only {
    if final_state == RecoveryState::Running {
      persisted.attempts.clear();
      persisted.degraded = false;
      persisted.degraded_cycles = 0;
      persisted.degraded_since = None;
    } else {
      persisted.degraded = true;
      persisted.degraded_cycles = persisted.degraded_cycles.saturating_add(1);
      persisted.degraded_since.get_or_insert(now);
    }
    persisted.trust = trust;
    persisted.updated_at = crate::timestamp::now_ms();
    state::save(state_dir.as_ref().expect("created"), &persisted)?;
  } else if final_state == RecoveryState::Degraded {
    persisted.degraded_cycles = persisted.degraded_cycles.saturating_add(1);
  }
  run.outcome.degraded_cycles = if final_state == RecoveryState::Running { 0 } else { persisted.degraded_cycles };
  run.outcome.critical = run.outcome.degraded_cycles >= options.degraded_alert_cycles;
  Ok(run.outcome)
}

/// Refuses pinned keys whose private half sits in the workspace's key ring (see
/// [`RecoveryOptions::workspace_keys_dir`]).
fn check_anchor(workspace: &StateDir, options: &RecoveryOptions) -> Result<()> {
  let Some(dir) = &options.workspace_keys_dir else { return Ok(()) };
  let Some(keys) = workspace.descend(Path::new(dir), false)? else { return Ok(()) };
  for key in &options.trusted_keys {
    if keys.kind_of(format!("{}.key", key.key_id))?.is_some() {
      return Err(LoaError::KeyInvalid(format!(
        "pinned key {} has its private key inside the workspace ({dir}): it cannot anchor trust; sign with a key kept outside the workspace",
        key.key_id
      )));
    }
  }
  Ok(())
}

/// Where [`status`] reads the persisted recovery state.
#[derive(Debug, Clone)]
pub struct StatusOptions {
  pub workspace_dir: PathBuf,
  /// The recovery state directory, relative to the workspace (`.loa/recovery`).
  pub state_dir: String,
}

/// The persisted recovery state of a workspace (reads only, nothing created): the default state
/// when recovery never ran there; `E_STATE_CORRUPT` for a state file that does not parse (it is
/// left for the next run of [`recover`] to move aside). What hooks ask before they trust the
/// grimoire (degraded mode: the template identity, no memory writes).
pub fn status(options: &StatusOptions) -> Result<PersistedState> {
  let workspace = StateDir::open_root(&options.workspace_dir)?;
  match workspace.descend(Path::new(&options.state_dir), false)? {
    Some(dir) => state::peek(&dir),
    None => Ok(PersistedState::default()),
  }
}

/// Whether the workspace is in degraded mode (reads only).
pub fn is_degraded(workspace_dir: &Path, state_dir: &str) -> Result<bool> {
  let workspace = StateDir::open_root(workspace_dir)?;
  match workspace.descend(Path::new(state_dir), false)? {
    Some(dir) => Ok(state::peek(&dir)?.degraded),
    None => Ok(false),
  }
}

/// `E_DEGRADED` when the workspace is in degraded mode: the check memory writes make first.
pub fn ensure_not_degraded(workspace_dir: &Path, state_dir: &str) -> Result<()> {
  if is_degraded(workspace_dir, state_dir)? {
    return Err(degraded_error());
  }
  Ok(())
}

/// The error of a memory write refused in degraded mode.
pub fn degraded_error() -> LoaError {
  LoaError::Degraded(
    "recovery left the workspace in degraded mode; memory writes are refused until it verifies (run `loa recover`)"
      .into(),
  )
}

fn rel_display(base: &str, path: &Path) -> String {
  match path.file_name() {
    Some(name) => format!("{base}/{}", name.to_string_lossy()),
    None => base.to_string(),
  }
}

/// The integrity check (read-only).
fn check_integrity(parent: &StateDir, live: &OsString, options: &RecoveryOptions) -> Result<Integrity> {
  let Some(grimoire) = parent.subdir(live)? else {
    return Ok(Integrity::Missing(vec![format!("{}: missing", options.grimoire_dir)]));
  };
  let root = grimoire.path().to_path_buf();
  match grimoire.kind_of(&options.manifest_name)? {
    None => {
      if matches_template(&grimoire, &options.template, options.max_file_bytes)? {
        return Ok(Integrity::Healthy(Trust::Template));
      }
      if grimoire.entries()?.iter().all(|e| crate::fsutil::is_temp_name(&e.name)) {
        return Ok(Integrity::Missing(vec![format!("{}: empty", options.grimoire_dir)]));
      }
      Ok(Integrity::Tampered(vec![format!("{}: signature (no manifest)", options.manifest_name)]))
    }
    Some(_) => {
      let value = match read_manifest(&root.join(&options.manifest_name)) {
        Ok(v) => v,
        Err(e) => return Ok(Integrity::Tampered(vec![format!("{}: signature ({})", options.manifest_name, e.code())])),
      };
      let v = verify_manifest(&root, &value, &options.trusted_keys, Some(1))?;
      if v.ok {
        return Ok(Integrity::Healthy(Trust::Signed));
      }
      let problems: Vec<String> = v.problems.iter().map(|p| format!("{}: {}", p.path, problem_kind(p.kind))).collect();
      if v.problems.iter().all(|p| p.kind == ProblemKind::Missing) {
        Ok(Integrity::Missing(problems))
      } else {
        Ok(Integrity::Tampered(problems))
      }
    }
  }
}

fn problem_kind(kind: ProblemKind) -> &'static str {
  match kind {
    ProblemKind::Missing => "missing",
    ProblemKind::Modified => "modified",
    ProblemKind::Unexpected => "unexpected",
    ProblemKind::Signature => "signature",
    ProblemKind::Path => "path",
    ProblemKind::Truncated => "truncated",
  }
}

/// True when `dir` holds exactly the template files with the template's content (temp files of
/// interrupted writes aside) and the template is not empty.
fn matches_template(dir: &StateDir, template: &[TemplateFile], max: u64) -> Result<bool> {
  if template.is_empty() {
    return Ok(false);
  }
  let mut found = 0usize;
  let mut stack: Vec<(StateDir, String)> = vec![(dir.try_clone()?, String::new())];
  while let Some((d, prefix)) = stack.pop() {
    for entry in d.entries()? {
      if crate::fsutil::is_temp_name(&entry.name) {
        continue;
      }
      let Some(name) = entry.name_str() else { return Ok(false) };
      let rel = if prefix.is_empty() { name.to_string() } else { format!("{prefix}/{name}") };
      if entry.is_dir() {
        match d.subdir(&entry.name)? {
          Some(sub) => stack.push((sub, rel)),
          None => return Ok(false),
        }
        continue;
      }
      if !entry.is_file() {
        return Ok(false);
      }
      let Some(t) = template.iter().find(|t| t.path == rel) else { return Ok(false) };
      let limit = max.min(t.content.len() as u64 + 1);
      match d.read(&entry.name, limit) {
        Ok(Some(bytes)) if bytes == t.content => found += 1,
        Ok(_) | Err(LoaError::TooLarge { .. }) => return Ok(false),
        Err(e) => return Err(e),
      }
    }
  }
  Ok(found == template.len())
}

/// One run's bookkeeping: its outcome and audit log.
struct Run<'a> {
  options: &'a RecoveryOptions,
  audit: Option<AuditLog>,
  outcome: RecoveryOutcome,
  /// Staging directories of interrupted runs moved aside in this run, oldest first.
  leftovers: Vec<OsString>,
}

impl<'a> Run<'a> {
  fn new(options: &'a RecoveryOptions, workspace: &StateDir) -> Result<Run<'a>> {
    let audit = match (&options.audit_dir, options.check_only) {
      (Some(dir), false) => {
        workspace.descend(Path::new(dir), true)?;
        Some(AuditLog::open(&options.workspace_dir.join(dir), AuditOptions::default())?)
      }
      _ => None,
    };
    Ok(Run {
      options,
      audit,
      leftovers: Vec::new(),
      outcome: RecoveryOutcome {
        state: RecoveryState::Start,
        trust: Trust::None,
        restored_from: None,
        problems: Vec::new(),
        source_failures: Vec::new(),
        transitions: Vec::new(),
        evidence: Vec::new(),
        evidence_removed: Vec::new(),
        quarantined_state: None,
        attempts_in_window: 0,
        loop_detected: false,
        degraded_cycles: 0,
        critical: false,
        check_only: options.check_only,
      },
    })
  }

  /// Records a transition, and appends it to the audit log.
  fn step(
    &mut self,
    from: RecoveryState,
    to: RecoveryState,
    source: Option<RecoverySource>,
    detail: &str,
  ) -> Result<()> {
    if let Some(audit) = &self.audit {
      let details = json!({
        "from": from.as_str(),
        "to": to.as_str(),
        "source": source.map(RecoverySource::as_str),
        "detail": detail,
      });
      audit.append(&AuditEvent {
        action: format!("recovery.{}", to.as_str()),
        actor: Actor::System,
        details: Some(details),
      })?;
    }
    self.outcome.transitions.push(Transition { from, to, source, detail: detail.to_string() });
    Ok(())
  }

  /// Moves staging directories of interrupted runs aside: such a directory holds either a
  /// restore that was never swapped in, or (after a crash right after the exchange) the
  /// grimoire it replaced. Which one cannot be told safely, so neither is deleted.
  fn move_leftovers(&mut self, parent: &StateDir, live: &OsString, parent_rel: &Path) -> Result<()> {
    let prefix = source::marked(live, source::STAGING_MARK);
    for entry in parent.entries()? {
      use std::os::unix::ffi::OsStrExt;
      if !entry.is_dir() || !entry.name.as_bytes().starts_with(prefix.as_bytes()) {
        continue;
      }
      let to = source::free_name(parent, live, source::LEFTOVER_MARK)?;
      parent.rename(&entry.name, &to)?;
      parent.sync()?;
      self.outcome.evidence.push(parent_rel.join(&to).to_string_lossy().into_owned());
      self.leftovers.push(to);
    }
    Ok(())
  }

  /// The grimoire is gone and a leftover of an interrupted run verifies against the pinned keys:
  /// the run was stopped between the two renames of a swap without `RENAME_EXCHANGE` (live
  /// moved to evidence, the verified copy not yet in place). The swap is completed with that
  /// copy, verified again here, instead of restoring from scratch. `None` when no leftover
  /// verifies.
  fn complete_interrupted_swap(
    &mut self,
    parent: &StateDir,
    live: &OsString,
    parent_rel: &Path,
  ) -> Result<Option<(RecoveryState, Trust)>> {
    for name in self.leftovers.clone().iter().rev() {
      let Some(dir) = parent.subdir(name)? else { continue };
      if self.verify_staged(&dir, RecoverySource::Mount).is_err() {
        continue;
      }
      let detail = "the grimoire is missing and a verified copy of an interrupted swap is beside it";
      self.step(RecoveryState::CheckIntegrity, RecoveryState::Restore, None, detail)?;
      parent.rename(name, live)?;
      parent.sync()?;
      let shown = parent_rel.join(name).to_string_lossy().into_owned();
      self.outcome.evidence.retain(|e| *e != shown);
      self.leftovers.retain(|l| l != name);
      self.step(RecoveryState::Restore, RecoveryState::Running, None, "interrupted swap completed (verified)")?;
      return Ok(Some((RecoveryState::Running, Trust::Signed)));
    }
    Ok(None)
  }

  /// Removes the oldest evidence and leftover directories beyond `max_evidence` (bounded
  /// retention: each holds a whole grimoire), each removal an audit event.
  fn prune_evidence(&mut self, parent: &StateDir, live: &OsString, parent_rel: &Path) -> Result<()> {
    let kept = source::kept_aside(parent, live)?;
    let excess = kept.len().saturating_sub(self.options.max_evidence);
    for name in &kept[..excess] {
      let shown = parent_rel.join(name).to_string_lossy().into_owned();
      if let Some(audit) = &self.audit {
        audit.append(&AuditEvent {
          action: "recovery.evidence_removed".into(),
          actor: Actor::System,
          details: Some(json!({ "path": shown, "keep": self.options.max_evidence })),
        })?;
      }
      parent.remove_tree(name)?;
      parent.sync()?;
      self.outcome.evidence.retain(|e| *e != shown);
      self.outcome.evidence_removed.push(shown);
    }
    Ok(())
  }

  /// Tries the configured sources in order; see the module docs for when the template may be
  /// used.
  fn restore(
    &mut self,
    parent: &StateDir,
    live: &OsString,
    parent_rel: &Path,
    tampered: bool,
  ) -> Result<(RecoveryState, Trust)> {
    let limits = source::Limits { max_file_bytes: self.options.max_file_bytes, max_files: self.options.max_files };
    let why = if tampered { "the grimoire does not verify" } else { "files are missing" };
    // Where the machine is: a failed source leaves it in RESTORE for the next one.
    let mut at = RecoveryState::CheckIntegrity;
    for &src in &self.options.sources.clone() {
      if src == RecoverySource::Template {
        continue; // only after every trusted source failed
      }
      if src == RecoverySource::Replica && self.options.replica.is_none() {
        continue; // a workspace that does not replicate has no replica to try
      }
      self.step(at, RecoveryState::Restore, Some(src), why)?;
      at = RecoveryState::Restore;
      match self.try_source(parent, live, src, limits) {
        Ok(evidence) => {
          self.note_evidence(parent_rel, evidence);
          self.outcome.restored_from = Some(src);
          self.step(RecoveryState::Restore, RecoveryState::Running, Some(src), "restored, verified and swapped in")?;
          return Ok((RecoveryState::Running, Trust::Signed));
        }
        Err(e) => self.outcome.source_failures.push(format!("{}: {} ({})", src.as_str(), e, e.code())),
      }
    }
    if self.options.sources.contains(&RecoverySource::Template) && !self.options.template.is_empty() {
      let src = RecoverySource::Template;
      let detail = if tampered {
        "no trusted source restored: the tampered grimoire is moved aside as evidence"
      } else {
        "files are missing and no trusted source restored them"
      };
      self.step(at, RecoveryState::Restore, Some(src), detail)?;
      at = RecoveryState::Restore;
      match self.try_source(parent, live, src, limits) {
        Ok(evidence) => {
          self.note_evidence(parent_rel, evidence);
          self.outcome.restored_from = Some(src);
          let to = if tampered { RecoveryState::Degraded } else { RecoveryState::Running };
          self.step(RecoveryState::Restore, to, Some(src), "template restored (trust: template)")?;
          return Ok((to, Trust::Template));
        }
        Err(e) => self.outcome.source_failures.push(format!("template: {} ({})", e, e.code())),
      }
    }
    self.step(at, RecoveryState::Degraded, None, "no source restored the grimoire")?;
    Ok((RecoveryState::Degraded, Trust::None))
  }

  fn note_evidence(&mut self, parent_rel: &Path, evidence: Option<OsString>) {
    if let Some(name) = evidence {
      self.outcome.evidence.push(parent_rel.join(name).to_string_lossy().into_owned());
    }
  }

  /// Stage, verify, swap. On any failure the staging directory is removed and the live
  /// grimoire is as it was.
  fn try_source(
    &mut self,
    parent: &StateDir,
    live: &OsString,
    src: RecoverySource,
    limits: source::Limits,
  ) -> Result<Option<OsString>> {
    let options = self.options;
    let staging_name = source::staging_name(live);
    let staging = parent.create_subdir(&staging_name)?;
    let result = (|| {
      match src {
        RecoverySource::Mount => {
          let mount =
            options.mount_dir.as_ref().ok_or_else(|| LoaError::InvalidArgument("no `mountDir` configured".into()))?;
          source::stage_mount(mount, &staging, limits)?;
        }
        RecoverySource::Replica => {
          let replica =
            options.replica.as_ref().ok_or_else(|| LoaError::InvalidArgument("no replica source configured".into()))?;
          source::stage_replica(replica, &options.workspace_dir, &staging, limits)?;
        }
        RecoverySource::Git => {
          let git = options.git.as_ref().ok_or_else(|| LoaError::InvalidArgument("no git source configured".into()))?;
          let state = StateDir::open_root(&options.workspace_dir)?
            .descend(Path::new(&options.state_dir), true)?
            .expect("created");
          let scratch_name = format!("{GIT_SCRATCH_PREFIX}{}", std::process::id());
          state.remove_tree(&scratch_name)?;
          let candidates = source::grimoire_candidates(&options.workspace_dir, &options.grimoire_dir);
          let scratch = state.child_path(&scratch_name);
          let staged = source::stage_git(git, &candidates, &options.manifest_name, &scratch, &staging, limits);
          state.remove_tree(&scratch_name)?;
          staged?;
        }
        RecoverySource::Template => {
          source::stage_template(&options.template, &staging)?;
        }
      }
      self.verify_staged(&staging, src)?;
      source::swap_in(parent, live, &staging_name)
    })();
    match result {
      Ok(swapped) => Ok(swapped.evidence),
      Err(e) => {
        // The staging directory holds nothing anyone relies on; if even its removal fails,
        // the next run moves it aside as a leftover.
        let _ = parent.remove_tree(&staging_name).and_then(|_| parent.sync());
        Err(e)
      }
    }
  }

  fn verify_staged(&self, staging: &StateDir, src: RecoverySource) -> Result<()> {
    if src == RecoverySource::Template {
      return if matches_template(staging, &self.options.template, self.options.max_file_bytes)? {
        Ok(())
      } else {
        Err(LoaError::Internal("the staged template differs from the template".into()))
      };
    }
    let manifest = &self.options.manifest_name;
    // Errors name the file in the source, never the staging directory (an internal name the
    // caller cannot act on).
    if staging.kind_of(manifest)?.is_none() {
      return Err(LoaError::SignatureInvalid(format!(
        "the {} source holds no `{manifest}` at the grimoire's root: nothing to verify",
        src.as_str()
      )));
    }
    let root = staging.path().to_path_buf();
    let value = read_manifest(&root.join(manifest)).map_err(|e| match e {
      LoaError::StateCorrupt { reason, .. } => {
        LoaError::StateCorrupt { path: format!("{} ({} source)", manifest, src.as_str()), reason }
      }
      LoaError::Io { source, .. } => {
        LoaError::Io { context: format!("read `{manifest}` of the {} source", src.as_str()), source }
      }
      e => e,
    })?;
    let v = verify_manifest(&root, &value, &self.options.trusted_keys, Some(1))?;
    if !v.ok {
      let first = v.problems.first().map(|p| format!("{}: {}", p.path, problem_kind(p.kind))).unwrap_or_default();
      return Err(LoaError::SignatureInvalid(format!(
        "the restored copy does not verify against the pinned keys ({} problem(s), first {first})",
        v.problems.len()
      )));
    }
    Ok(())
  }
}

#[cfg(test)]
pub(crate) mod tests;
