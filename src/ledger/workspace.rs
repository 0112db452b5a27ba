//! [`Ledger`]: the ledger's files of one workspace, at the paths the configuration gives.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{LoaError, Result};
use crate::fsutil::{relative_components, StateDir};
use crate::lock::lock_in;
use crate::memory::MemoryStore;
use crate::memory::{DEFAULT_GRIMOIRE_DIR, DEFAULT_WAL_DIR, NOTES_LOCK_FILE};
use crate::redact::RedactOptions;
use crate::tokens::TokenEncoding;

use super::beads::Beads;
use super::grounding::{evaluate, evaluate_with, guarded, GroundingReport};
use super::identifier::{Identifier, Resolved};
use super::notes::{NotesDoc, NotesFile};
use super::options::{EddConfig, GroundingConfig};
use super::persistence::{
  overflow_summary, recover, AppendOutcome, L1Store, LineKind, MemoryLine, MemoryMd, Resolution, WorkflowState,
  DEFAULT_MAX_ENTRIES,
};
use super::recall::{level1, level2, level3, Level2, Recalled};
use super::status::Status;
use super::trajectory::Trajectory;

/// Where the ledger's files are and how it behaves. Paths are relative to the workspace (no
/// `..`, not absolute: `E_PATH_OUTSIDE_ROOT`). The defaults are those of an absent
/// `.loa.config.yaml`.
#[derive(Debug, Clone)]
pub struct LedgerOptions {
  pub workspace_dir: PathBuf,
  /// NOTES.md (`grimoires/loa/NOTES.md`).
  pub notes_path: String,
  /// The WAL directory, whose consolidation lock also guards NOTES.md (`.loa/wal`).
  pub wal_dir: String,
  /// Trajectory files (`grimoires/loa/a2a/trajectory`).
  pub trajectory_dir: String,
  /// Bead files (`.beads`).
  pub beads_dir: String,
  /// L1 state files (`.loa/state`).
  pub state_dir: String,
  /// L2 MEMORY.md (`grimoires/loa/MEMORY.md`).
  pub memory_path: String,
  /// The ledger's lines MEMORY.md keeps before moving the oldest to the Decision Log.
  pub memory_max_entries: usize,
  /// Newest-wins staleness warning threshold (5 minutes).
  pub stale_after_ms: u64,
  pub lock_timeout: Duration,
  pub level1_tokens: u64,
  pub level2_tokens: u64,
  /// The exact tokenizer of level budgets.
  pub encoding: TokenEncoding,
  pub grounding: GroundingConfig,
  pub edd: EddConfig,
  /// How every text the ledger is given is redacted before it reaches a file (NOTES.md's
  /// regions, beads, the trajectory, L1 state data, MEMORY.md lines, and the decision
  /// memories of a store the ledger opens itself). Default: the defaults of [`redact`]
  /// (placeholders, no allowlist, the process key).
  ///
  /// [`redact`]: crate::redact::redact
  pub redaction: RedactOptions,
}

impl Default for LedgerOptions {
  fn default() -> Self {
    LedgerOptions {
      workspace_dir: PathBuf::new(),
      notes_path: format!("{DEFAULT_GRIMOIRE_DIR}/NOTES.md"),
      wal_dir: DEFAULT_WAL_DIR.into(),
      trajectory_dir: format!("{DEFAULT_GRIMOIRE_DIR}/a2a/trajectory"),
      beads_dir: super::beads::DEFAULT_DIR.into(),
      state_dir: ".loa/state".into(),
      memory_path: format!("{DEFAULT_GRIMOIRE_DIR}/MEMORY.md"),
      memory_max_entries: DEFAULT_MAX_ENTRIES,
      stale_after_ms: 300_000,
      lock_timeout: Duration::from_secs(5),
      level1_tokens: super::options::DEFAULT_LEVEL1_TOKENS,
      level2_tokens: 500,
      encoding: TokenEncoding::O200kBase,
      grounding: GroundingConfig::default(),
      edd: EddConfig::default(),
      redaction: RedactOptions::default(),
    }
  }
}

/// One workspace's ledger.
#[derive(Debug, Clone)]
pub struct Ledger {
  pub options: LedgerOptions,
}

/// `relative` split into its directory and file name, checked.
fn split_file(relative: &str) -> Result<(PathBuf, String)> {
  let mut parts = relative_components(Path::new(relative))?;
  let name = parts.pop().expect("relative_components is never empty");
  Ok((parts.into_iter().collect(), name.to_string_lossy().into_owned()))
}

impl Ledger {
  /// Checks every path of `options` before anything is touched.
  pub fn new(options: LedgerOptions) -> Result<Ledger> {
    crate::memory::check_workspace(&options.workspace_dir)?;
    for dir in [&options.wal_dir, &options.trajectory_dir, &options.beads_dir, &options.state_dir] {
      relative_components(Path::new(dir))?;
    }
    split_file(&options.notes_path)?;
    split_file(&options.memory_path)?;
    Ok(Ledger { options })
  }

  /// The project root (the workspace).
  pub fn root(&self) -> &Path {
    &self.options.workspace_dir
  }

  /// The directory `relative` below the workspace, created when missing.
  fn dir(&self, relative: &str) -> Result<StateDir> {
    Ok(self.existing_dir(relative, true)?.expect("descend with create always gives a directory"))
  }

  /// The directory `relative` below the workspace; `None` when missing and `create` is false
  /// (reads never create directories).
  fn existing_dir(&self, relative: &str, create: bool) -> Result<Option<StateDir>> {
    let root = StateDir::open_root(&self.options.workspace_dir)?;
    if relative.is_empty() {
      return Ok(Some(root));
    }
    root.descend(Path::new(relative), create)
  }

  fn notes_file(&self) -> Result<NotesFile> {
    let (dir, name) = split_file(&self.options.notes_path)?;
    Ok(NotesFile::new(self.dir(&dir.to_string_lossy())?, name))
  }

  /// NOTES.md, or the template when there is none (nothing is created).
  pub fn notes(&self) -> Result<NotesDoc> {
    let (dir, name) = split_file(&self.options.notes_path)?;
    match self.existing_dir(&dir.to_string_lossy(), false)? {
      Some(dir) => NotesFile::new(dir, name).load(),
      None => Ok(NotesDoc::template()),
    }
  }

  /// Edits NOTES.md under the lock consolidation takes, writing atomically when it changed.
  pub fn edit_notes(&self, edit: impl FnOnce(&mut NotesDoc)) -> Result<bool> {
    let wal = self.dir(&self.options.wal_dir)?;
    let _guard = lock_in(&wal, NOTES_LOCK_FILE, self.options.lock_timeout, "NOTES.md")?;
    self.notes_file()?.edit(edit)
  }

  /// Level 1 recall.
  pub fn recall_level1(&self) -> Result<Recalled> {
    Ok(level1(&self.notes()?, self.options.level1_tokens, self.options.encoding))
  }

  /// Level 2 recall: the top `k` decisions for `query`.
  pub fn recall_level2(&self, query: &str, k: usize, now_ms: i64) -> Result<Level2> {
    level2(&self.notes()?, query, k, self.options.level2_tokens, self.options.encoding, now_ms)
  }

  /// Level 3 recall: the whole NOTES.md.
  pub fn recall_level3(&self) -> Result<Recalled> {
    Ok(level3(&self.notes()?, self.options.encoding))
  }

  /// The trajectory directory (created when missing).
  pub fn trajectory(&self) -> Result<Trajectory> {
    Ok(
      Trajectory::new(self.dir(&self.options.trajectory_dir)?, self.options.lock_timeout)
        .with_redaction(self.options.redaction.clone()),
    )
  }

  /// The grounding check over `agent`'s trajectory of the UTC day of `day_ms`, quotes checked
  /// against the workspace. Never fails: an error is a report with exit code 2.
  pub fn grounding_check(&self, agent: &str, day_ms: i64) -> GroundingReport {
    let g = &self.options.grounding;
    guarded(g.threshold, || {
      if g.enforcement == super::options::GroundingEnforcement::Disabled {
        return Ok(evaluate(&Default::default(), g.enforcement, g.threshold, None));
      }
      let read = match self.existing_dir(&self.options.trajectory_dir, false)? {
        Some(dir) => Trajectory::new(dir, self.options.lock_timeout).read_day(agent, day_ms)?,
        None => {
          super::trajectory::file_name(agent, day_ms)?;
          Default::default()
        }
      };
      Ok(evaluate_with(&read, g.enforcement, g.threshold, Some(self.root()), &self.options.redaction))
    })
  }

  /// The trajectory directory, or `None` when it does not exist (reads create nothing).
  pub fn existing_trajectory(&self) -> Result<Option<Trajectory>> {
    Ok(self.existing_dir(&self.options.trajectory_dir, false)?.map(|d| Trajectory::new(d, self.options.lock_timeout)))
  }

  /// The beads directory (created when missing).
  pub fn beads(&self) -> Result<Beads> {
    Ok(
      Beads::new(self.dir(&self.options.beads_dir)?, self.options.lock_timeout)
        .with_redaction(self.options.redaction.clone()),
    )
  }

  /// The L1 state directory (created when missing).
  pub fn l1(&self) -> Result<L1Store> {
    Ok(
      L1Store::new(self.dir(&self.options.state_dir)?, self.options.lock_timeout)
        .with_redaction(self.options.redaction.clone()),
    )
  }

  /// MEMORY.md.
  pub fn memory_md(&self) -> Result<MemoryMd> {
    let (dir, name) = split_file(&self.options.memory_path)?;
    Ok(
      MemoryMd::new(
        self.dir(&dir.to_string_lossy())?,
        name,
        self.options.memory_max_entries,
        self.options.lock_timeout,
      )
      .with_redaction(self.options.redaction.clone()),
    )
  }

  /// Parses and resolves a lightweight identifier below the workspace.
  pub fn resolve(&self, identifier: &str) -> Result<Resolved> {
    Identifier::parse(identifier, self.root())?.resolve(self.root())
  }

  /// The write protocol of seed 004 for one state change: L1 first (synchronous, atomic, the
  /// transition checked: an illegal one writes nothing), then `line` (its text redacted) into
  /// MEMORY.md, whose overflow is stored through `store` as one decision memory and
  /// consolidated into the Decision Log before the lines leave MEMORY.md. L1 failing is an
  /// error; L2 failing is a warning in the outcome ("learnings will not persist"), as the
  /// seed's degradation rules say.
  ///
  /// A workflow entering `completed` must bring its completion line (seed 004: the completion
  /// write is mandatory, not conditional): without one nothing is written
  /// (`E_INVALID_ARGUMENT`).
  pub fn persist_state(
    &self,
    store: OverflowStore<'_>,
    name: &str,
    status: Status,
    data: serde_json::Map<String, serde_json::Value>,
    line: Option<&MemoryLine>,
    now_ms: i64,
  ) -> Result<PersistOutcome> {
    // MEMORY.md is memory an agent reads back: no secret or personal data goes there in clear.
    // Redacted here (MEMORY.md redacts again, which changes nothing) so that the size check
    // below sees the line as it will be written.
    let line = line.map(|l| l.redacted(&self.options.redaction));
    let line = line.as_ref();
    // A line MEMORY.md would refuse is refused before L1 is written (only an unavailable
    // MEMORY.md is a warning).
    if let Some(l) = line {
      l.check()?;
    }
    let l1 = self.l1()?;
    if status == Status::Completed && line.is_none_or(|l| l.kind != LineKind::Completion) {
      // Read before the locked write: a racing writer that completes first makes this a
      // repeat of `completed`, which the locked transition check accepts either way.
      if l1.read(name)?.is_none_or(|s| s.status != Status::Completed) {
        return crate::error::invalid(
          "a workflow entering `completed` needs its completion line in MEMORY.md (kind `completion`)",
        );
      }
    }
    let state = l1.write(name, status, data, now_ms)?;
    let mut outcome = PersistOutcome { state, l2: None, l2_warning: None };
    let Some(line) = line else { return Ok(outcome) };
    let mut sink = |lines: &[MemoryLine]| -> Result<()> {
      let decision = super::checkpoint::DecisionInput { decision: overflow_summary(lines), ..Default::default() };
      let record = |store: &MemoryStore| -> Result<()> {
        super::checkpoint::record_decision(store, &decision, now_ms)?;
        store.consolidate().map(|_| ())
      };
      match &store {
        OverflowStore::Given(store) => record(store),
        OverflowStore::Open(options) => {
          let store = MemoryStore::open(options.as_ref().clone())?;
          let recorded = record(&store);
          let closed = store.close();
          recorded.and(closed.map(|_| ()))
        }
        OverflowStore::None => Err(LoaError::InvalidArgument("MEMORY.md overflow needs the memory store".into())),
      }
    };
    match self.memory_md().and_then(|md| md.append(line, &mut sink)) {
      Ok(appended) => {
        if let Some(e) = &appended.overflow_error {
          outcome.l2_warning =
            Some(format!("MEMORY.md is over its cap; its oldest lines stay until they can be moved ({e})"));
        }
        outcome.l2 = Some(appended);
      }
      Err(e) => {
        outcome.l2_warning = Some(format!("Auto-memory unavailable: learnings will not persist ({})", e.code()))
      }
    }
    Ok(outcome)
  }

  /// Reads workflow `name` in the documented priority and resolves a disagreement newest-wins
  /// (see [`super::persistence`]). When MEMORY.md is newer than L1 with another status, L1 is
  /// brought up to it (the transition checked; an illegal one is a warning and L1 stays).
  ///
  /// MEMORY.md that cannot be read (a symlink, FIFO, oversized or not UTF-8) is a warning when
  /// L1 holds the workflow, and the error otherwise.
  ///
  /// Reads create nothing: a missing state directory or MEMORY.md directory is a layer that
  /// knows nothing (the state directory is created only to bring L1 up to MEMORY.md).
  pub fn recover_state(&self, name: &str) -> Result<Option<Recovered>> {
    let lock_timeout = self.options.lock_timeout;
    let l1 = self
      .existing_dir(&self.options.state_dir, false)?
      .map(|d| L1Store::new(d, lock_timeout).with_redaction(self.options.redaction.clone()));
    let (md_dir, md_name) = split_file(&self.options.memory_path)?;
    let md = self
      .existing_dir(&md_dir.to_string_lossy(), false)?
      .map(|d| MemoryMd::new(d, md_name, self.options.memory_max_entries, lock_timeout));
    // MEMORY.md failing is a warning on the read as on the write (seed 004's degradation
    // rule): one symlinked or oversized MEMORY.md must not hide every workflow's L1 state. With
    // nothing in L1 its error stands, so "nothing known" is never said of an unread layer.
    let md_error = md.as_ref().and_then(|m| m.lines().err());
    let md = if md_error.is_some() { None } else { md };
    let Some(resolution) = recover(l1.as_ref(), md.as_ref(), name, self.options.stale_after_ms)? else {
      return match md_error {
        Some(e) => Err(e),
        None => Ok(None),
      };
    };
    let mut warnings: Vec<String> = resolution.warning.iter().cloned().collect();
    if let Some(e) = md_error {
      warnings.push(format!("MEMORY.md unavailable ({}): recovered from the L1 state alone", e.code()));
    }
    let mut state = l1.as_ref().map(|l1| l1.read(name)).transpose()?.flatten();
    if resolution.winner.source != "l1" && state.as_ref().map(|c| c.status) != Some(resolution.winner.status) {
      let data = state.as_ref().map(|c| c.data.clone()).unwrap_or_default();
      let l1 = match l1 {
        Some(l1) => l1,
        None => self.l1()?,
      };
      match l1.write(name, resolution.winner.status, data, resolution.winner.updated_ms) {
        Ok(written) => state = Some(written),
        Err(e) => warnings.push(format!("L1 not updated to the newer MEMORY.md state ({})", e.code())),
      }
    }
    Ok(Some(Recovered { resolution, warnings, state }))
  }
}

/// What [`Ledger::persist_state`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct PersistOutcome {
  /// The L1 state written.
  pub state: WorkflowState,
  /// The MEMORY.md append, when it happened.
  pub l2: Option<AppendOutcome>,
  /// Why MEMORY.md was not (fully) written.
  pub l2_warning: Option<String>,
}

/// What [`Ledger::recover_state`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
  pub resolution: Resolution,
  /// The staleness warning, and any problem bringing L1 up to date.
  pub warnings: Vec<String>,
  /// L1 after recovery (`None` when only MEMORY.md knows the workflow and L1 could not be
  /// written).
  pub state: Option<WorkflowState>,
}

/// Where [`Ledger::persist_state`] stores MEMORY.md lines past the cap (as one decision memory).
#[derive(Clone)]
pub enum OverflowStore<'a> {
  /// Nowhere: the lines stay in MEMORY.md, over the cap, and the outcome says why.
  None,
  /// The caller's open store.
  Given(&'a MemoryStore),
  /// A store opened with these options when an overflow happens (rare), closed after.
  Open(Box<crate::memory::StoreOptions>),
}
