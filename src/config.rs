//! Configuration: `.loa.config.yaml` at the workspace root.
//!
//! [`load_config`] reads the file (an absent file means "all defaults", silently) and returns a
//! fully resolved [`Config`]: every key has a value, paths are normalised workspace-relative
//! strings, and the attention budget is expressed both in tokens and as fractions of the context
//! window. Problems that do not change behaviour (unknown keys, a key spelled two ways with two
//! different values) come back as human-readable `warnings`, unknown keys with their dotted path; a value
//! of the wrong type or out of range is an `E_CONFIG_INVALID` error whose `key` is the dotted path
//! of the offending key (for example `memory.quality_gates.min_confidence`, or
//! `context_editing.clear_targets[2]` inside a list) and whose message gives its line. Values of
//! keys whose name looks secret (key, token, secret, password, ...) are never echoed in messages.
//!
//! The file is a regular file read without following a symlink (`E_NOT_REGULAR_FILE` otherwise),
//! at most 1 MiB (`E_TOO_LARGE`), and parsed with `serde_norway` (the maintained fork of the
//! deprecated `serde_yaml`) through [`crate::settings`] and [`crate::yaml`], which bound nesting
//! (32 levels) and alias expansion before any value is built, apply merge keys
//! (`<<: *anchor`), report unknown keys and name keys in errors. Each section is a
//! type that derives `Deserialize`: the parts own theirs (`wal::SyncMode`, `tokens::TokenEncoding`,
//! `gates::GateConfig`, `context::ContextConfig`, `attention::AttentionBudgetConfig`,
//! `compaction::ContextEditingConfig`, ...), and the sections of parts not built yet are defined
//! here. This module depends on the parts, never the reverse. What derive cannot say is done
//! after deserialising, in [`resolve`]: the seeds' second spellings, defaults that follow another
//! key, and checks across keys.
//!
//! # Keys spelled more than one way
//!
//! The design documents ("seeds") spell some settings in several places. Every spelling below
//! is a supported one, read without a warning: a `.loa.config.yaml` the original framework wrote
//! loads clean. When several are set, the first one present in the list wins and the others are
//! not checked; a warning names a losing spelling only when its value differs (a share written
//! as `0.8` and as `80` percent is the same value):
//!
//! | canonical | also accepted (lower precedence, in order) |
//! |---|---|
//! | `wal.dir` | `wal_dir` (seed 002 `walDir`) |
//! | `context.token_budget` | `context_token_budget` (seed 002 `contextTokenBudget`) |
//! | `attention_budget.yellow` | `attention_budget.yellow_threshold`, `attention_budget.accumulated` (seed 003) |
//! | `attention_budget.orange` | `attention_budget.orange_threshold` |
//! | `attention_budget.red` | `attention_budget.red_threshold`, `attention_budget.session_total` (seed 003) |
//! | `attention_budget.compact` | `context_editing.compact_threshold_percent`, `compact_threshold_percent`, `runtime_signals.signal_threshold_percent` (seed 003) |
//! | `context_editing.clear_after_phases` | `clear_after_phases` (seed 003, top level) |
//! | `context_editing.preserve_artifacts` | `preserve_artifacts` (seed 003, top level) |
//! | `grounding.enforcement` | `grounding_enforcement` (seed 000 §4.5, §5.4) |
//!
//! The `*_percent` spellings hold a number in (0, 100].
//!
//! # Where the seeds disagree, and what this module chose
//!
//! - Attention budget: seed 000 §4.3 has absolute `yellow`/`orange`/`red` = 5000/10000/15000
//!   tokens; seed 003 has `single_search`/`accumulated`/`session_total` = 2000/5000/15000 tokens and
//!   a separate compaction trigger at 80 % of the context window (`compact_threshold_percent`,
//!   `signal_threshold_percent`), with a 200K window as its example. They are normalised into one
//!   [`AttentionBudgetConfig`]: `accumulated` is `yellow`, `session_total` is `red`, the 80 % trigger
//!   is `compact`, and every level is reported as tokens and as a fraction of
//!   `context_window_tokens` (default 200000). A level not written keeps its default in tokens,
//!   except `compact`, which keeps its share of the window.
//! - Recovery loop detection: seed 002's diagram says ">3 in 60s" and its failure matrix "degraded
//!   mode after 3 failures", but its later Flatline decision (SKP-005) made the window and count
//!   configurable with defaults 120000 ms and 5 attempts; the later decision is used. The seed read
//!   `LOA_RECOVERY_WINDOW_MS` / `LOA_RECOVERY_MAX_ATTEMPTS` from the environment; this module reads
//!   only the file (the caller may apply environment overrides).
//! - State zone directory: seed 000 uses `loa-grimoire/`, seed 002 `grimoires/loa`; the latter is
//!   the default of `grimoires_dir`.
//! - SOUL.md: seed 002's diagram puts it in `grimoires/loa/`, its code writes it to the workspace
//!   root, where OpenClaw reads bootstrap files; the workspace root is the default.
//! - Retry: seed 002 waits `2^attempts * 1000` ms and counts the first failure outside the queue;
//!   here `max_attempts` counts every try including the first (SPEC: "3 tries").
//!
//! Quality-gate values come from SPEC.md (one set replacing the seeds' four); WAL segment limits,
//! signing-key rotation and the audit section are not in the seeds and come from the project brief.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_norway::Value;

use crate::attention::{AttentionBudgetConfig, BudgetLevel};
use crate::compaction::{CompactionPolicy, ContextEditingConfig, RuntimeSignalsConfig, ALWAYS_PRESERVED};
use crate::context::ContextConfig;
use crate::error::{LoaError, Result};
use crate::fsutil::StateDir;
use crate::gates::{GateConfig, GateOverrides};
pub use crate::ledger::options::{
  EddConfig, GroundingConfig, GroundingEnforcement, PersistenceConfig, SessionContinuityConfig, TrajectoryConfig,
};
use crate::memory::{check_workspace, RetryConfig, StoreOptions};
use crate::settings::{self, count, drop_repeats, positive, rel_path, text, uint, Document, MAX_SAFE};
use crate::wal::{SyncMode, WalOptions};

/// Name of the configuration file, looked up at the root of the workspace.
pub const CONFIG_FILE_NAME: &str = ".loa.config.yaml";

const MIB: u64 = 1024 * 1024;
/// A configuration file larger than this is refused (`E_TOO_LARGE`) rather than parsed.
pub const MAX_CONFIG_BYTES: u64 = MIB;
const DEFAULT_GRIMOIRES_DIR: &str = crate::memory::DEFAULT_GRIMOIRE_DIR;
const WINDOW_KEY: &str = "attention_budget.context_window_tokens";

// ---------------------------------------------------------------------------------------------
// The resolved configuration
// ---------------------------------------------------------------------------------------------

/// The whole resolved configuration. Every key has a value: the one from `.loa.config.yaml`, or
/// its default. Serialized with camelCase keys (`LoaConfig` in TypeScript); the YAML file uses the
/// snake_case spelling of the same keys (`attention_budget.context_window_tokens` is
/// `attentionBudget.contextWindowTokens`). Paths are relative to the workspace root, with `/`
/// separators, never absolute and never containing `..`. Read it with [`load_config`] or
/// [`parse_config`]: deserialising it directly skips the second spellings and the checks across
/// keys.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct Config {
  /// State-zone directory holding BEAUVOIR.md, NOTES.md, learnings, manifest and trajectory.
  /// YAML `grimoires_dir`, default `grimoires/loa`. Paths of files inside it default to
  /// `<grimoires_dir>/...`, so moving it moves them.
  #[serde(deserialize_with = "rel_path")]
  pub grimoires_dir: String,
  /// Write-ahead log: where it lives, locking, segment rotation and fsync policy.
  pub wal: WalConfig,
  /// Memory pipeline: NOTES.md and learnings paths, quality gates, retry policy.
  pub memory: MemoryConfig,
  /// Context injected before each prompt: token budget, split, tokenizer.
  pub context: ContextConfig,
  /// Advisory attention-budget levels, in tokens and as fractions of the context window.
  pub attention_budget: AttentionBudgetConfig,
  /// Context editing ("clear, don't compact"): what may be cleared, in what order, what never.
  pub context_editing: ContextEditingConfig,
  /// Names of the signals exchanged with the agent runtime around compaction.
  pub runtime_signals: RuntimeSignalsConfig,
  /// Grounding enforcement at the synthesis checkpoint before `/clear`.
  pub grounding: GroundingConfig,
  /// Tiered recovery of the ledger after `/clear`.
  pub session_continuity: SessionContinuityConfig,
  /// Trajectory (JSONL audit of agent reasoning) location and retention.
  pub trajectory: TrajectoryConfig,
  /// Evaluation-driven development requirements checked before a session handoff.
  pub edd: EddConfig,
  /// Identity files: BEAUVOIR.md (source) and SOUL.md (generated from it).
  pub identity: IdentityConfig,
  /// Manifest signing (Ed25519) and signing-key rotation; `signing.keys_dir` is where the CLI and
  /// the plugin keep the key ring.
  pub signing: SigningConfig,
  /// Hash-chained audit log.
  pub audit: AuditConfig,
  /// Boot-time recovery: loop detection, degraded mode, restore sources.
  pub recovery: RecoveryConfig,
  /// Ledger synthesis: per-agent event files merged into `current.md`.
  pub synthesis: SynthesisConfig,
  /// Persistence protocol: L1 JSON state files and L2 MEMORY.md.
  pub persistence: PersistenceConfig,
  /// Replication to S3-compatible object storage (`loa replicate`, docs/replication.md).
  pub replication: ReplicationConfig,
}

impl Default for Config {
  fn default() -> Self {
    Config {
      grimoires_dir: DEFAULT_GRIMOIRES_DIR.to_string(),
      wal: Default::default(),
      memory: Default::default(),
      context: Default::default(),
      attention_budget: Default::default(),
      context_editing: Default::default(),
      runtime_signals: Default::default(),
      grounding: Default::default(),
      session_continuity: Default::default(),
      trajectory: Default::default(),
      edd: Default::default(),
      identity: Default::default(),
      signing: Default::default(),
      audit: Default::default(),
      recovery: Default::default(),
      synthesis: Default::default(),
      persistence: Default::default(),
      replication: Default::default(),
    }
  }
}

impl Config {
  /// The compaction planner's policy for this workspace.
  pub fn compaction_policy(&self) -> CompactionPolicy {
    CompactionPolicy::new(&self.context_editing, &self.attention_budget, &self.runtime_signals)
  }

  /// The ledger's options for `workspace`: its paths (NOTES.md, the WAL whose lock guards it,
  /// trajectory, L1 state, MEMORY.md), level budgets in the context's tokenizer, grounding, EDD
  /// and the newest-wins staleness threshold.
  /// The recovery part's options for `workspace` from the `recovery`, `signing`, `audit` and
  /// `grimoires_dir` settings. The trusted keys are not configuration of the workspace (they
  /// are pinned outside it), nor is the git source (a remote written in the workspace could
  /// point anywhere): the caller adds both, and may apply the environment overrides
  /// ([`crate::recovery::RecoveryOptions::apply_env`]).
  pub fn recovery_options(&self, workspace: &Path) -> Result<crate::recovery::RecoveryOptions> {
    let grimoire = self.grimoires_dir.trim_end_matches('/');
    let manifest_name = self.manifest_name()?;
    let r = &self.recovery;
    Ok(crate::recovery::RecoveryOptions {
      workspace_dir: workspace.to_path_buf(),
      grimoire_dir: grimoire.to_string(),
      manifest_name: manifest_name.to_string(),
      audit_dir: Some(self.audit.dir.clone()),
      workspace_keys_dir: Some(self.signing.keys_dir.clone()),
      sources: r.sources.clone(),
      mount_dir: r.mount_dir.as_ref().map(PathBuf::from),
      window_ms: r.window_ms,
      max_attempts: r.max_attempts,
      degraded_alert_cycles: r.degraded_alert_cycles,
      ..Default::default()
    })
  }

  /// The file name of the grimoire's signed manifest (`signing.manifest_path`), which recovery
  /// reads and a sealed consolidation writes: `E_CONFIG_INVALID` unless it lies directly inside
  /// `grimoires_dir`.
  pub fn manifest_name(&self) -> Result<String> {
    let grimoire = self.grimoires_dir.trim_end_matches('/');
    self
      .signing
      .manifest_path
      .strip_prefix(grimoire)
      .and_then(|rest| rest.strip_prefix('/'))
      .filter(|name| !name.is_empty() && !name.contains('/'))
      .map(str::to_string)
      .ok_or_else(|| LoaError::ConfigInvalid {
        key: "signing.manifest_path".into(),
        reason: "the grimoire's manifest must lie directly inside `grimoires_dir`".into(),
      })
  }

  pub fn ledger_options(&self, workspace: &Path) -> crate::ledger::LedgerOptions {
    crate::ledger::LedgerOptions {
      workspace_dir: workspace.to_path_buf(),
      notes_path: self.memory.notes_path.clone(),
      wal_dir: self.wal.dir.clone(),
      trajectory_dir: self.trajectory.dir.clone(),
      state_dir: self.persistence.state_dir.clone(),
      memory_path: self.persistence.memory_path.clone(),
      stale_after_ms: self.persistence.stale_after_ms,
      memory_max_entries: usize::try_from(self.persistence.memory_max_entries).unwrap_or(usize::MAX),
      lock_timeout: Duration::from_millis(self.wal.lock_timeout_ms),
      level1_tokens: self.session_continuity.level1_tokens,
      level2_tokens: self.session_continuity.level2_tokens,
      encoding: self.context.encoding,
      grounding: self.grounding.clone(),
      edd: self.edd.clone(),
      ..Default::default()
    }
  }
}

/// `<grimoires_dir>/name` for the default grimoire.
fn in_grimoire(name: &str) -> String {
  join(DEFAULT_GRIMOIRES_DIR, name)
}

fn join(base: &str, name: &str) -> String {
  if base == "." {
    name.to_string()
  } else {
    format!("{base}/{name}")
  }
}

/// Write-ahead log settings (YAML section `wal`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct WalConfig {
  /// Directory of WAL segments, relative to the workspace. Default `.loa/wal` (seed 002).
  /// Also read from the flat key `wal_dir`.
  #[serde(deserialize_with = "rel_path")]
  pub dir: String,
  /// How long a writer waits for the exclusive segment lock before failing with `E_WAL_LOCKED`,
  /// in milliseconds. Default 5000 (seed 002 §5.2). 0 means try once.
  #[serde(deserialize_with = "count")]
  pub lock_timeout_ms: u64,
  /// A segment is rotated once it reaches this many bytes. Default 10 MiB (10485760).
  #[serde(deserialize_with = "uint::<_, _, 1024, MAX_SAFE>")]
  pub segment_max_bytes: u64,
  /// A segment is rotated once it is this old, in milliseconds. Default 3600000 (one hour).
  #[serde(deserialize_with = "positive")]
  pub segment_max_age_ms: u64,
  /// When appends are fsynced: `always` (before each append returns; default), `batch` (group
  /// commit) or `none` (leave it to the OS; loses recent records on power failure).
  pub sync: SyncMode,
}

impl Default for WalConfig {
  fn default() -> Self {
    WalConfig {
      dir: crate::memory::DEFAULT_WAL_DIR.into(),
      lock_timeout_ms: 5000,
      segment_max_bytes: 10 * MIB,
      segment_max_age_ms: 3_600_000,
      sync: SyncMode::Always,
    }
  }
}

/// Memory pipeline settings (YAML section `memory`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct MemoryConfig {
  /// NOTES.md, the operational memory. Default `<grimoires_dir>/NOTES.md`.
  #[serde(deserialize_with = "rel_path")]
  pub notes_path: String,
  /// Learnings store. Default `<grimoires_dir>/learnings.json`.
  #[serde(deserialize_with = "rel_path")]
  pub learnings_path: String,
  /// Thresholds of the six quality gates a memory candidate must pass.
  pub quality_gates: GateConfig,
  /// Retry policy when capturing a memory fails (the pipeline is fail-open).
  pub retry: RetryConfig,
  /// Ranking of searches: recency half-life and floor.
  pub search: crate::memory::SearchSettings,
  /// Which agents see which other agents' memories (`reader: [owner, ...]`, `*` for all);
  /// by default an agent sees its own memories and those captured without an agent id.
  pub sharing: crate::memory::Sharing,
}

impl Default for MemoryConfig {
  fn default() -> Self {
    MemoryConfig {
      notes_path: in_grimoire("NOTES.md"),
      learnings_path: in_grimoire("learnings.json"),
      quality_gates: GateConfig::default(),
      retry: RetryConfig::default(),
      search: Default::default(),
      sharing: Default::default(),
    }
  }
}

/// Identity files (YAML section `identity`, seed 002 §2.2).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct IdentityConfig {
  /// Identity source, edited by humans. Default `<grimoires_dir>/BEAUVOIR.md`.
  #[serde(deserialize_with = "rel_path")]
  pub beauvoir_path: String,
  /// Generated identity, rewritten whenever BEAUVOIR.md changes. Default `SOUL.md` (workspace
  /// root, where OpenClaw reads it).
  #[serde(deserialize_with = "rel_path")]
  pub soul_path: String,
}

impl Default for IdentityConfig {
  fn default() -> Self {
    IdentityConfig { beauvoir_path: in_grimoire("BEAUVOIR.md"), soul_path: "SOUL.md".into() }
  }
}

/// Manifest signing and key rotation (YAML section `signing`). Private keys are never read from
/// this file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct SigningConfig {
  /// Signed manifest of state files. Default `<grimoires_dir>/manifest.json`.
  #[serde(deserialize_with = "rel_path")]
  pub manifest_path: String,
  /// Directory of the key ring (active and retired keys), relative to the workspace. Default
  /// `.loa/keys`. The CLI and the plugin open the key ring here.
  #[serde(deserialize_with = "rel_path")]
  pub keys_dir: String,
  /// Days after which the signing key is rotated. Default 90.
  #[serde(deserialize_with = "uint::<_, _, 1, 36_500>")]
  pub rotation_days: u64,
  /// Days a retired key still verifies after rotation; less than `rotationDays`. Default 7.
  #[serde(deserialize_with = "uint::<_, _, 0, 36_500>")]
  pub overlap_days: u64,
  /// Retired keys kept for verification of old manifests. Default 3.
  #[serde(deserialize_with = "uint::<_, _, 0, 1000>")]
  pub max_retired_keys: u64,
  /// Timeout of the shared lock taken to read the manifest, in milliseconds. Default 1000 (seed
  /// 002 §5.2).
  #[serde(deserialize_with = "count")]
  pub manifest_lock_timeout_ms: u64,
}

impl Default for SigningConfig {
  fn default() -> Self {
    SigningConfig {
      manifest_path: in_grimoire("manifest.json"),
      keys_dir: crate::memory::DEFAULT_KEYS_DIR.into(),
      rotation_days: 90,
      overlap_days: 7,
      max_retired_keys: 3,
      manifest_lock_timeout_ms: 1000,
    }
  }
}

/// Audit log settings (YAML section `audit`; not in the seeds).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct AuditConfig {
  /// Directory of the hash-chained audit segments. Default `.loa/audit`.
  #[serde(deserialize_with = "rel_path")]
  pub dir: String,
  /// An audit segment is rotated (the chain continues) at this size. Default 10 MiB.
  #[serde(deserialize_with = "uint::<_, _, 1024, MAX_SAFE>")]
  pub segment_max_bytes: u64,
}

impl Default for AuditConfig {
  fn default() -> Self {
    AuditConfig {
      dir: crate::memory::DEFAULT_AUDIT_DIR.into(),
      segment_max_bytes: crate::memory::DEFAULT_AUDIT_SEGMENT_MAX_BYTES,
    }
  }
}

/// Boot-time recovery (YAML section `recovery`, seed 002 §2.5, Flatline SKP-005).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct RecoveryConfig {
  /// Loop detection window in milliseconds (persisted across restarts). Default 120000.
  #[serde(deserialize_with = "positive")]
  pub window_ms: u64,
  /// Recovery attempts within `windowMs` after which the agent enters degraded mode. Default 5.
  #[serde(deserialize_with = "uint::<_, _, 1, 1000>")]
  pub max_attempts: u64,
  /// Consecutive degraded-mode cycles after which a critical alert is raised. Default 3.
  #[serde(deserialize_with = "uint::<_, _, 1, 1000>")]
  pub degraded_alert_cycles: u64,
  /// Restore sources in the order tried: `mount` (seed 002's "R2"; `r2` is accepted),
  /// `replica` (the object store, `loa replicate`), `git`, `template`. Default all four in that
  /// order.
  pub sources: Vec<RecoverySource>,
  /// Directory where the `mount` source is mounted (may be absolute); `null` (default) skips it.
  #[serde(deserialize_with = "text")]
  pub mount_dir: Option<String>,
}

impl Default for RecoveryConfig {
  fn default() -> Self {
    RecoveryConfig {
      window_ms: 120_000,
      max_attempts: 5,
      degraded_alert_cycles: 3,
      sources: vec![RecoverySource::Mount, RecoverySource::Replica, RecoverySource::Git, RecoverySource::Template],
      mount_dir: None,
    }
  }
}

/// A place state files can be restored from (the recovery part's own type).
pub use crate::recovery::RecoverySource;

/// Ledger synthesis (YAML section `synthesis`, seed 001).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct SynthesisConfig {
  /// Directory holding `events/`, `archive/` and the generated `current.md`. Default
  /// `thoughts/shared/handoffs` (seed 001).
  #[serde(deserialize_with = "rel_path")]
  pub dir: String,
  /// Days an event stays live in `events/` before archiving folds it into the signed base
  /// snapshot and moves it to `archive/` (`loa ledger synth --archive`). Default 7 (seed 001).
  #[serde(deserialize_with = "uint::<_, _, 0, 36_500>")]
  pub retention_days: u64,
  /// Minimum interval between commits of `current.md` at checkpoints, in milliseconds. Default
  /// 1800000 (seed 001: "30 min max").
  #[serde(deserialize_with = "count")]
  pub commit_throttle_ms: u64,
}

impl Default for SynthesisConfig {
  fn default() -> Self {
    SynthesisConfig { dir: "thoughts/shared/handoffs".into(), retention_days: 7, commit_throttle_ms: 1_800_000 }
  }
}

/// Replication to S3-compatible object storage (YAML section `replication`), read by the
/// `loa-replicate` binary (docs/replication.md). Nothing here is secret: credentials come only
/// from the environment, as `object_store` reads them (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, web identity, instance metadata); `~/.aws`
/// profiles are not read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct ReplicationConfig {
  /// The bucket; `null` (default) means replication is not configured.
  #[serde(deserialize_with = "text")]
  pub bucket: Option<String>,
  /// Key prefix inside the bucket, so that several workspaces (or other data) share a bucket.
  /// `null` (default) puts everything at the top of the bucket.
  #[serde(deserialize_with = "text")]
  pub prefix: Option<String>,
  /// Endpoint URL of an S3-compatible server (MinIO, R2, s3s, ...); `null` uses AWS, or
  /// `AWS_ENDPOINT` from the environment.
  #[serde(deserialize_with = "text")]
  pub endpoint: Option<String>,
  /// Region; `null` uses `AWS_REGION` / `AWS_DEFAULT_REGION`, else `us-east-1`.
  #[serde(deserialize_with = "text")]
  pub region: Option<String>,
  /// Allow a plain `http://` endpoint (loopback tests). Default false.
  pub allow_http: bool,
  /// This machine's namespace in the bucket (1-64 of `a-z 0-9 -`); `null` (default) derives
  /// one from `/etc/machine-id` (or the host name) and the workspace's absolute path.
  #[serde(deserialize_with = "text")]
  pub origin: Option<String>,
  /// Client-side encryption: a file (outside the workspace, mode 600) holding a 256-bit key as
  /// 64 hex digits; everything shipped is then sealed with XChaCha20-Poly1305. `null`
  /// (default): objects are stored as they are.
  #[serde(deserialize_with = "text")]
  pub encryption_key_file: Option<String>,
}

/// Result of loading the configuration.
#[derive(Debug, Clone, Serialize)]
pub struct LoadedConfig {
  /// The resolved configuration.
  pub config: Config,
  /// Human-readable notes about the file: unknown keys (with their dotted path), keys set under
  /// two spellings of one key set to different values. Empty when the file is absent or clean.
  pub warnings: Vec<String>,
  /// The file that was read, or `None` when there was none (all defaults).
  pub source: Option<PathBuf>,
}

/// Reads `<workspace>/.loa.config.yaml`. An absent file (or workspace) gives all defaults and no
/// warning. The file must be a regular file, not a symlink (`E_NOT_REGULAR_FILE`), of at most
/// 1 MiB (`E_TOO_LARGE`); an unreadable one is `E_IO`; invalid YAML or an invalid value is
/// `E_CONFIG_INVALID`.
pub fn load_config(workspace: &Path) -> Result<LoadedConfig> {
  let defaults = || LoadedConfig { config: Config::default(), warnings: Vec::new(), source: None };
  let dir = match StateDir::open_root(workspace) {
    Ok(dir) => dir,
    Err(LoaError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => return Ok(defaults()),
    Err(e) => return Err(e),
  };
  let Some(bytes) = dir.read(CONFIG_FILE_NAME, MAX_CONFIG_BYTES)? else {
    return Ok(defaults());
  };
  let text = String::from_utf8(bytes).map_err(|e| {
    settings::invalid(settings::DOCUMENT_KEY, format!("not valid UTF-8 (at byte {})", e.utf8_error().valid_up_to()))
  })?;
  let mut loaded = parse_config(&text)?;
  loaded.source = Some(workspace.join(CONFIG_FILE_NAME));
  Ok(loaded)
}

/// Parses configuration YAML from a string (same rules as [`load_config`]; `source` is `None`).
/// An empty string gives all defaults.
pub fn parse_config(yaml: &str) -> Result<LoadedConfig> {
  let mut doc = Document::parse(yaml)?;
  let (mut warnings, mut unknown) = (Vec::new(), Vec::new());
  let spellings = Spellings::apply(&mut doc, &mut warnings)?;
  let config = doc.deserialize::<Config>("", &mut unknown).map_err(|e| doc.error(&spellings.key(&e.key), e.reason))?;
  let config = resolve(config, &doc, &spellings, &mut warnings)?;
  warnings.extend(unknown);
  Ok(LoadedConfig { config, warnings, source: None })
}

/// What a caller may override of a workspace's memory settings (the binding's
/// `MemoryStoreOptions`); `None` keeps the configured value.
#[derive(Debug, Clone, Default)]
pub struct MemoryOverrides {
  /// The grimoire, relative to the workspace; NOTES.md and learnings.json then live directly in
  /// it (instead of at `memory.notes_path` / `memory.learnings_path`).
  pub grimoires_dir: Option<String>,
  /// The WAL directory, relative to the workspace.
  pub wal_dir: Option<String>,
  /// How long to wait for a session's WAL lock or a concurrent consolidation.
  pub lock_timeout_ms: Option<u64>,
  pub gates: GateOverrides,
}

/// The memory settings of `workspace`: its `.loa.config.yaml` read (see [`load_config`]) and
/// `overrides` applied. The workspace is checked first (`E_INVALID_ARGUMENT` when empty or not a
/// directory); paths are checked when the store resolves them. The session id and redaction
/// are the caller's to set.
pub fn store_options(workspace: &Path, overrides: &MemoryOverrides) -> Result<StoreOptions> {
  check_workspace(workspace)?;
  Ok(memory_settings(workspace, &load_config(workspace)?.config, overrides))
}

fn memory_settings(workspace: &Path, config: &Config, overrides: &MemoryOverrides) -> StoreOptions {
  let (notes_path, learnings_path) = match &overrides.grimoires_dir {
    Some(dir) => (format!("{dir}/NOTES.md"), format!("{dir}/learnings.json")),
    None => (config.memory.notes_path.clone(), config.memory.learnings_path.clone()),
  };
  let wal = &config.wal;
  StoreOptions {
    workspace_dir: workspace.to_path_buf(),
    session_id: String::new(),
    grimoire_dir: overrides.grimoires_dir.clone().unwrap_or_else(|| config.grimoires_dir.clone()),
    wal_dir: overrides.wal_dir.clone().unwrap_or_else(|| wal.dir.clone()),
    notes_path,
    learnings_path,
    wal: WalOptions {
      session_id: String::new(),
      lock_timeout: Duration::from_millis(overrides.lock_timeout_ms.unwrap_or(wal.lock_timeout_ms)),
      segment_max_bytes: wal.segment_max_bytes,
      segment_max_age: Duration::from_millis(wal.segment_max_age_ms),
      sync: wal.sync,
    },
    gates: overrides.gates.apply(config.memory.quality_gates.clone()),
    retry: config.memory.retry.clone(),
    context: config.context.clone(),
    redaction: Default::default(),
    search: config.memory.search.clone(),
    sharing: config.memory.sharing.clone(),
    keys_dir: config.signing.keys_dir.clone(),
    audit_dir: config.audit.dir.clone(),
    audit_segment_max_bytes: config.audit.segment_max_bytes,
    manifest_name: config.manifest_name().ok(),
    recovery_state_dir: crate::recovery::DEFAULT_STATE_DIR.into(),
    replication_state_dir: config.replication.bucket.as_ref().map(|_| crate::wal::shipped::REPLICATE_STATE_DIR.into()),
  }
}

// ---------------------------------------------------------------------------------------------
// Second spellings
// ---------------------------------------------------------------------------------------------

/// The seeds' second spellings (see the module docs): each canonical key, then its other
/// spellings in precedence order. Spellings ending in `_percent` hold a percentage.
const SPELLINGS: &[(&str, &[&str])] = &[
  ("wal.dir", &["wal_dir"]),
  ("context.token_budget", &["context_token_budget"]),
  ("attention_budget.yellow", &["attention_budget.yellow_threshold", "attention_budget.accumulated"]),
  ("attention_budget.orange", &["attention_budget.orange_threshold"]),
  ("attention_budget.red", &["attention_budget.red_threshold", "attention_budget.session_total"]),
  (
    "attention_budget.compact",
    &[
      "context_editing.compact_threshold_percent",
      "compact_threshold_percent",
      "runtime_signals.signal_threshold_percent",
    ],
  ),
  ("context_editing.clear_after_phases", &["clear_after_phases"]),
  ("context_editing.preserve_artifacts", &["preserve_artifacts"]),
  ("grounding.enforcement", &["grounding_enforcement"]),
];

/// A `*_percent` spelling's number as the canonical key writes a share: `"80%"`.
fn as_percent(value: &Value) -> std::result::Result<Value, serde_norway::Error> {
  let p: f64 = settings::percent(value)?;
  Ok(Value::String(format!("{p}%")))
}

/// Whether two spellings' values say the same: equal, or the same share of the window written
/// as a fraction (`0.8`) and as a percentage (`"80%"`).
fn same_setting(a: &Value, b: &Value) -> bool {
  fn share(v: &Value) -> Option<f64> {
    match v {
      Value::Number(n) => n.as_f64().filter(|f| (0.0..=1.0).contains(f)),
      Value::String(s) => s.trim().strip_suffix('%')?.trim().parse::<f64>().ok().map(|p| p / 100.0),
      _ => None,
    }
  }
  a == b || matches!((share(a), share(b)), (Some(x), Some(y)) if (x - y).abs() < 1e-9)
}

/// Which canonical keys were read from another spelling, so that errors and warnings name the
/// key the file actually holds.
struct Spellings(Vec<(&'static str, String)>);

impl Spellings {
  /// Moves each winning second spelling to its canonical place in the document and removes the
  /// losing ones (unchecked). Every spelling is a supported one: the only warning is for a
  /// losing spelling that is also set with another value.
  fn apply(doc: &mut Document, warnings: &mut Vec<String>) -> Result<Spellings> {
    let mut used = Vec::new();
    for (canonical, others) in SPELLINGS {
      let mut present: Vec<(&str, Value)> = Vec::new();
      if let Some(v) = doc.get(canonical) {
        present.push((canonical, v.clone()));
      }
      for other in *others {
        if let Some(v) = take(&mut doc.root, other) {
          present.push((other, v));
        }
      }
      let mut present = present.into_iter();
      let Some((winner, value)) = present.next() else { continue };
      let value = if winner.ends_with("_percent") {
        as_percent(&value).map_err(|e| {
          let e = settings::value_error(winner, Some(&value), &e.to_string());
          doc.error(&e.key, e.reason)
        })?
      } else {
        value
      };
      for (other, other_value) in present {
        let same = if other.ends_with("_percent") { as_percent(&other_value).ok() } else { Some(other_value) }
          .is_some_and(|v| same_setting(&v, &value));
        if !same {
          warnings.push(format!("`{other}` is also set, to another value; `{winner}` wins"));
        }
      }
      if winner == *canonical {
        continue;
      }
      put(&mut doc.root, canonical, value);
      used.push((*canonical, winner.to_string()));
    }
    Ok(Spellings(used))
  }

  /// `key` as spelled in the file.
  fn key(&self, key: &str) -> String {
    for (canonical, used) in &self.0 {
      if let Some(rest) = key.strip_prefix(canonical) {
        if rest.is_empty() || rest.starts_with(['.', '[']) {
          return format!("{used}{rest}");
        }
      }
    }
    key.to_string()
  }
}

/// Removes and returns the non-null value at dotted `path` (`a` or `a.b`), keeping the order of
/// the other keys (warnings follow the file).
fn take(root: &mut Value, path: &str) -> Option<Value> {
  let (parent, key) = match path.rsplit_once('.') {
    Some((section, key)) => (root.get_mut(section)?, key),
    None => (root, path),
  };
  parent.as_mapping_mut()?.shift_remove(key).filter(|v| !v.is_null())
}

/// Sets dotted `path` (`a.b`) to `value`, creating the section `a` if absent. A section that is
/// not a mapping is left alone (deserialising it fails with its own key).
fn put(root: &mut Value, path: &str, value: Value) {
  let Some((section, key)) = path.split_once('.') else { return };
  let Some(map) = root.as_mapping_mut() else { return };
  let entry = map.entry(Value::String(section.into())).or_insert(Value::Null);
  if entry.is_null() {
    *entry = Value::Mapping(Default::default());
  }
  if let Some(section) = entry.as_mapping_mut() {
    section.insert(Value::String(key.into()), value);
  }
}

// ---------------------------------------------------------------------------------------------
// What derive cannot say
// ---------------------------------------------------------------------------------------------

/// Defaults that follow another key, the attention levels in both units, and checks across keys.
fn resolve(mut c: Config, doc: &Document, spellings: &Spellings, w: &mut Vec<String>) -> Result<Config> {
  let fail = |key: &str, reason: String| doc.error(&spellings.key(key), reason);
  let written = |key: &str| doc.get(key).is_some();

  // Files inside the grimoire move with it unless placed explicitly.
  let g = c.grimoires_dir.clone();
  for (key, path) in [
    ("memory.notes_path", &mut c.memory.notes_path),
    ("memory.learnings_path", &mut c.memory.learnings_path),
    ("trajectory.dir", &mut c.trajectory.dir),
    ("identity.beauvoir_path", &mut c.identity.beauvoir_path),
    ("signing.manifest_path", &mut c.signing.manifest_path),
    ("persistence.memory_path", &mut c.persistence.memory_path),
  ] {
    if let (false, Some(rest)) = (written(key), path.strip_prefix(DEFAULT_GRIMOIRES_DIR)) {
      *path = join(&g, rest.trim_start_matches('/'));
    }
  }

  resolve_attention(&mut c.attention_budget, doc, spellings, w)?;

  let e = &mut c.context_editing;
  drop_repeats(&mut e.clear_targets, "context_editing.clear_targets", "target", w);
  if written("context_editing.preserve_artifacts") {
    let listed = std::mem::take(&mut e.preserve_artifacts);
    let missing: Vec<String> =
      ALWAYS_PRESERVED.iter().filter(|a| !listed.iter().any(|l| l == *a)).map(|m| format!("`{m}`")).collect();
    if !missing.is_empty() {
      w.push(format!(
        "`{}` does not list {}; they are always preserved",
        spellings.key("context_editing.preserve_artifacts"),
        missing.join(", ")
      ));
    }
    e.preserve_artifacts = ALWAYS_PRESERVED.iter().map(|s| s.to_string()).collect();
    e.preserve_artifacts.extend(listed.into_iter().filter(|l| !ALWAYS_PRESERVED.contains(&l.as_str())));
  }

  let s = &mut c.session_continuity;
  if !written("session_continuity.level2_tokens") {
    s.level2_tokens = s.level2_tokens.max(s.level1_tokens);
  }
  if s.level2_tokens < s.level1_tokens {
    let reason = format!("must be at least `session_continuity.level1_tokens` ({})", s.level1_tokens);
    return Err(fail("session_continuity.level2_tokens", reason));
  }

  let t = &mut c.trajectory;
  if !written("trajectory.archive_days") {
    t.archive_days = t.archive_days.max(t.retention_days);
  }
  if t.archive_days < t.retention_days {
    let reason = format!("must be at least `trajectory.retention_days` ({})", t.retention_days);
    return Err(fail("trajectory.archive_days", reason));
  }

  if c.signing.overlap_days >= c.signing.rotation_days {
    let reason = format!("must be less than `signing.rotation_days` ({})", c.signing.rotation_days);
    return Err(fail("signing.overlap_days", reason));
  }

  let sources = &c.recovery.sources;
  if sources.is_empty() {
    return Err(fail("recovery.sources", "must list at least one source".into()));
  }
  if let Some(i) = (1..sources.len()).find(|&i| sources[..i].contains(&sources[i])) {
    return Err(fail(&format!("recovery.sources[{i}]"), "repeats an earlier source".into()));
  }
  Ok(c)
}

/// Resolves each level against the window from the unit it was written in; a level not written
/// keeps its default in tokens, except `compact`, which keeps its share of the window. Levels
/// must increase and fit in the window.
fn resolve_attention(
  a: &mut AttentionBudgetConfig,
  doc: &Document,
  spellings: &Spellings,
  w: &mut Vec<String>,
) -> Result<()> {
  struct Level {
    key: String,
    level: BudgetLevel,
    written: bool,
  }
  let window = a.context_window_tokens;
  let d = AttentionBudgetConfig::default();
  let resolve = |name: &str, level: BudgetLevel, default: BudgetLevel| -> Result<Level> {
    let canonical = format!("attention_budget.{name}");
    let written = doc.get(&canonical).is_some();
    let key = spellings.key(&canonical);
    let level = match (written, name) {
      (true, _) if level.tokens == 0 => BudgetLevel::of_fraction(level.fraction, window),
      (true, _) => BudgetLevel::of_tokens(level.tokens, window),
      (false, "compact") => BudgetLevel::of_fraction(default.fraction, window),
      (false, _) => BudgetLevel::of_tokens(default.tokens, window),
    };
    if level.tokens <= window {
      return Ok(Level { key, level, written });
    }
    Err(if written {
      doc.error(&key, format!("{} tokens is more than the context window (`{WINDOW_KEY}` = {window})", level.tokens))
    } else {
      doc.error(
        WINDOW_KEY,
        format!(
          "{window} tokens is less than the default `{key}` of {} tokens; set the levels too (fractions such as \
           0.5 scale with the window)",
          level.tokens
        ),
      )
    })
  };
  let [yellow, orange, red] =
    [resolve("yellow", a.yellow, d.yellow)?, resolve("orange", a.orange, d.orange)?, resolve("red", a.red, d.red)?];
  for (lo, hi) in [(&yellow, &orange), (&orange, &red)] {
    if lo.level.tokens >= hi.level.tokens {
      let blamed = if hi.written { &hi.key } else { &lo.key };
      return Err(doc.error(
        blamed,
        format!(
          "levels must increase: `{}` is {} tokens but `{}` is {} tokens",
          lo.key, lo.level.tokens, hi.key, hi.level.tokens
        ),
      ));
    }
  }
  let single_search = resolve("single_search", a.single_search, d.single_search)?;
  let compact = resolve("compact", a.compact, d.compact)?;
  if compact.level.tokens < red.level.tokens {
    w.push(format!(
      "`{}` ({} tokens) is below `{}` ({} tokens): compaction will start before the red level",
      compact.key, compact.level.tokens, red.key, red.level.tokens
    ));
  }
  *a = AttentionBudgetConfig {
    context_window_tokens: window,
    single_search: single_search.level,
    yellow: yellow.level,
    orange: orange.level,
    red: red.level,
    compact: compact.level,
  };
  Ok(())
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::attention::{attention_level, AttentionLevel};
  use crate::compaction::ClearTarget;
  use crate::settings::secret_ish;
  use crate::tokens::TokenEncoding;
  use std::collections::{BTreeMap, BTreeSet};

  fn parse(yaml: &str) -> LoadedConfig {
    parse_config(yaml).unwrap_or_else(|e| panic!("parse failed: {e}"))
  }

  /// Parses and expects `E_CONFIG_INVALID` at `key`; returns the reason.
  fn invalid_at(yaml: &str, key: &str) -> String {
    match parse_config(yaml) {
      Err(LoaError::ConfigInvalid { key: k, reason }) => {
        assert_eq!(k, key, "wrong key for {yaml:?} (reason: {reason})");
        reason
      }
      Err(e) => panic!("expected ConfigInvalid at {key}, got {e}"),
      Ok(_) => panic!("expected ConfigInvalid at {key}, parsed fine: {yaml:?}"),
    }
  }

  #[test]
  fn absent_file_gives_defaults_without_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load_config(dir.path()).unwrap();
    assert_eq!(loaded.config, Config::default());
    assert!(loaded.warnings.is_empty());
    assert!(loaded.source.is_none());
  }

  #[test]
  fn empty_and_comment_only_files_give_defaults() {
    for text in ["", "# nothing here\n", "---\n", "\u{feff}# bom\n"] {
      let loaded = parse(text);
      assert_eq!(loaded.config, Config::default(), "{text:?}");
      assert!(loaded.warnings.is_empty());
    }
  }

  #[test]
  fn defaults_match_the_documented_values() {
    let c = Config::default();
    assert_eq!(c.wal.lock_timeout_ms, 5000);
    assert_eq!(c.wal.segment_max_bytes, 10 * 1024 * 1024);
    assert_eq!(c.wal.segment_max_age_ms, 3_600_000);
    assert_eq!(c.wal.sync, SyncMode::Always);
    assert_eq!(c.memory.quality_gates.min_confidence, 0.5);
    assert_eq!(c.memory.quality_gates.speculation_min_confidence, 0.7);
    assert_eq!(c.memory.quality_gates.min_content_length, 10);
    assert_eq!(c.memory.quality_gates.repetition_min_unique_ratio, 0.3);
    assert_eq!(c.memory.quality_gates.max_age_ms, None);
    assert_eq!(c.memory.retry.max_attempts, 3);
    assert_eq!(c.context.token_budget, 2000);
    assert_eq!(c.context.learnings_share, 0.3);
    assert_eq!(c.context.encoding, TokenEncoding::O200kBase);
    assert_eq!(c.context.safety_margin, 0.0);
    assert_eq!(c.context.min_truncated_tokens, 32);
    assert_eq!(c.grounding.enforcement, GroundingEnforcement::Strict);
    assert_eq!(c.grounding.threshold, 0.95);
    assert_eq!(c.signing.rotation_days, 90);
    assert_eq!(c.signing.overlap_days, 7);
    assert_eq!(c.signing.max_retired_keys, 3);
    assert_eq!(c.memory.notes_path, "grimoires/loa/NOTES.md");
    let a = &c.attention_budget;
    assert_eq!((a.yellow.tokens, a.orange.tokens, a.red.tokens), (5000, 10_000, 15_000));
    assert_eq!(a.yellow.fraction, 0.025);
    assert_eq!(a.compact, BudgetLevel { tokens: 160_000, fraction: 0.8 });
  }

  #[test]
  fn loads_a_file_from_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(CONFIG_FILE_NAME), "wal:\n  sync: batch\n").unwrap();
    let loaded = load_config(dir.path()).unwrap();
    assert_eq!(loaded.config.wal.sync, SyncMode::Batch);
    assert_eq!(loaded.source.as_deref(), Some(dir.path().join(CONFIG_FILE_NAME).as_path()));
  }

  #[test]
  fn a_config_that_is_not_a_regular_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(CONFIG_FILE_NAME);
    std::fs::create_dir(&path).unwrap();
    let err = load_config(dir.path()).unwrap_err();
    assert_eq!(err.code(), "E_NOT_REGULAR_FILE", "{err}");
    std::fs::remove_dir(&path).unwrap();

    // A symlink is not followed, wherever it points.
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("outside.yaml");
    std::fs::write(&target, "wal:\n  sync: batch\n").unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    assert_eq!(load_config(dir.path()).unwrap_err().code(), "E_NOT_REGULAR_FILE");
    std::fs::remove_file(&path).unwrap();

    // A FIFO would block a plain open(2) for ever.
    rustix::fs::mknodat(rustix::fs::CWD, &path, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o600), 0)
      .unwrap();
    assert_eq!(load_config(dir.path()).unwrap_err().code(), "E_NOT_REGULAR_FILE");
  }

  #[test]
  fn a_config_over_one_mebibyte_is_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = "# padding\n".repeat((MAX_CONFIG_BYTES as usize) / 10 + 1);
    text.push_str("wal:\n  sync: batch\n");
    std::fs::write(dir.path().join(CONFIG_FILE_NAME), text).unwrap();
    assert_eq!(load_config(dir.path()).unwrap_err().code(), "E_TOO_LARGE");
  }

  #[test]
  fn a_missing_workspace_gives_defaults_and_an_empty_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(load_config(&dir.path().join("absent")).unwrap().config, Config::default());
    assert_eq!(load_config(Path::new("")).unwrap_err().code(), "E_INVALID_ARGUMENT");
  }

  #[test]
  fn non_utf8_file_is_config_invalid() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(CONFIG_FILE_NAME), b"wal:\n  dir: \xff\n").unwrap();
    let err = load_config(dir.path()).unwrap_err();
    assert!(matches!(err, LoaError::ConfigInvalid { ref key, .. } if key == "<yaml>"), "{err}");
  }

  const FULL: &str = r#"
grimoires_dir: ./state/loa/
wal:
  dir: .loa/wal2
  lock_timeout_ms: 2500
  segment_max_bytes: 1048576
  segment_max_age_ms: 60000
  sync: batch
memory:
  notes_path: notes/NOTES.md
  quality_gates:
    min_confidence: 0.6
    speculation_min_confidence: 0.8
    min_content_length: 12
    repetition_min_unique_ratio: 0.25
    repetition_min_words: 20
    max_age_ms: 86400000
  retry:
    max_attempts: 4
    backoff_base_ms: 250
context:
  token_budget: 3000
  learnings_share: 0.4
  encoding: cl100k_base
  recent_sessions: 7
  active_learnings: 2
  safety_margin: 0.15
  min_truncated_tokens: 16
attention_budget:
  context_window_tokens: 100000
  single_search: 1000
  yellow: 0.05
  orange: "10%"
  red: 20000
  compact: 0.75
context_editing:
  enabled: false
  preserve_recent_turns: 3
  clear_targets: [verbose_debug, stale_tool_results]
  clear_after_phases: [setup, coding]
  preserve_artifacts: [trajectory_events, quality_gate_results, decision_records,
                       notes_session_continuity, active_beads, test_results]
runtime_signals:
  context_near_limit: NEAR
  compaction_complete: DONE
grounding:
  enforcement: warn
  threshold: 0.9
  negative_queries: 3
  negative_threshold: 0.35
session_continuity:
  tiered_recovery: false
  level1_tokens: 150
  level2_tokens: 600
trajectory:
  retention_days: 14
  archive_days: 90
  compression_level: 9
edd:
  enabled: false
  min_test_scenarios: 2
  require_citations: false
identity:
  beauvoir_path: identity/BEAUVOIR.md
  soul_path: SOUL.md
signing:
  keys_dir: .loa/ring
  rotation_days: 30
  overlap_days: 2
  max_retired_keys: 5
  manifest_lock_timeout_ms: 500
audit:
  dir: .loa/audit2
  segment_max_bytes: 2048
recovery:
  window_ms: 60000
  max_attempts: 3
  degraded_alert_cycles: 2
  sources: [git, r2, template]
  mount_dir: /mnt/r2/loa
synthesis:
  dir: ledger
  retention_days: 14
  commit_throttle_ms: 600000
persistence:
  state_dir: .loa/l1
  stale_after_ms: 60000
  memory_max_entries: 50
replication:
  bucket: team-memory
  prefix: loa/project
  endpoint: https://s3.example.test
  region: eu-west-1
  allow_http: false
  origin: laptop-1
  encryption_key_file: /etc/loa/replica.key
"#;

  #[test]
  fn full_example_file() {
    let loaded = parse(FULL);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let c = loaded.config;
    assert_eq!(c.grimoires_dir, "state/loa");
    assert_eq!(c.wal.dir, ".loa/wal2");
    assert_eq!(c.wal.lock_timeout_ms, 2500);
    assert_eq!(c.wal.sync, SyncMode::Batch);
    assert_eq!(c.memory.notes_path, "notes/NOTES.md");
    assert_eq!(c.memory.learnings_path, "state/loa/learnings.json"); // follows grimoires_dir
    assert_eq!(c.memory.quality_gates.max_age_ms, Some(86_400_000));
    assert_eq!(c.memory.quality_gates.repetition_min_words, 20);
    assert_eq!(c.memory.retry, RetryConfig { max_attempts: 4, backoff_base_ms: 250 });
    assert_eq!(c.context.encoding, TokenEncoding::Cl100kBase);
    assert_eq!(c.context.token_budget, 3000);
    assert_eq!(c.context.safety_margin, 0.15);
    assert_eq!(c.context.min_truncated_tokens, 16);
    let a = &c.attention_budget;
    assert_eq!(a.context_window_tokens, 100_000);
    assert_eq!(a.single_search, BudgetLevel { tokens: 1000, fraction: 0.01 });
    assert_eq!(a.yellow, BudgetLevel { tokens: 5000, fraction: 0.05 });
    assert_eq!(a.orange, BudgetLevel { tokens: 10_000, fraction: 0.1 });
    assert_eq!(a.red, BudgetLevel { tokens: 20_000, fraction: 0.2 });
    assert_eq!(a.compact, BudgetLevel { tokens: 75_000, fraction: 0.75 });
    let e = &c.context_editing;
    assert!(!e.enabled);
    assert_eq!(e.clear_targets, vec![ClearTarget::VerboseDebug, ClearTarget::StaleToolResults]);
    assert_eq!(e.clear_after_phases, vec!["setup", "coding"]);
    assert_eq!(e.preserve_artifacts.len(), 6);
    assert_eq!(e.preserve_artifacts[5], "test_results");
    assert_eq!(c.runtime_signals.compaction_complete, "DONE");
    assert_eq!(c.grounding.enforcement, GroundingEnforcement::Warn);
    assert_eq!(c.grounding.threshold, 0.9);
    assert_eq!(c.session_continuity.level2_tokens, 600);
    assert_eq!(c.trajectory.dir, "state/loa/a2a/trajectory");
    assert_eq!(c.trajectory.compression_level, 9);
    assert!(!c.edd.require_citations);
    assert_eq!(c.identity.beauvoir_path, "identity/BEAUVOIR.md");
    assert_eq!(c.signing.manifest_path, "state/loa/manifest.json");
    assert_eq!(c.signing.keys_dir, ".loa/ring");
    assert_eq!((c.signing.rotation_days, c.signing.overlap_days), (30, 2));
    assert_eq!(c.audit.segment_max_bytes, 2048);
    assert_eq!(c.recovery.sources, vec![RecoverySource::Git, RecoverySource::Mount, RecoverySource::Template]);
    assert_eq!(c.recovery.mount_dir.as_deref(), Some("/mnt/r2/loa"));
    assert_eq!(c.synthesis.dir, "ledger");
    assert_eq!(c.persistence.memory_path, "state/loa/MEMORY.md");
    assert_eq!(c.persistence.stale_after_ms, 60_000);
    assert_eq!(c.persistence.memory_max_entries, 50);
  }

  #[test]
  fn seed_000_reference_config_parses() {
    let yaml = "grounding_enforcement: strict  # strict | warn | disabled\n\
      attention_budget:\n  yellow: 5000\n  orange: 10000\n  red: 15000\n\
      session_continuity:\n  tiered_recovery: true\n  level1_tokens: 100\n  level2_tokens: 500\n\
      trajectory:\n  retention_days: 30\n  archive_days: 365\n  compression_level: 6\n\
      edd:\n  enabled: true\n  min_test_scenarios: 3\n  require_citations: true\n";
    let loaded = parse(yaml);
    // The seed's level 1 budget is below ours (docs/ledger.md says why); the rest is the default.
    let mut expected = Config::default();
    expected.session_continuity.level1_tokens = 100;
    assert_eq!(loaded.config, expected);
    // Every spelling a seed uses is a supported one: no warning.
    assert_eq!(loaded.warnings, Vec::<String>::new());
  }

  /// The seeds' `.loa.config.yaml` examples, as written (testdata/seeds/README.md): no warning,
  /// and every value as the file says.
  #[test]
  fn the_seeds_config_examples_load_without_a_warning() {
    for yaml in [
      include_str!("../testdata/seeds/examples/loa.config.yaml"),
      include_str!("../testdata/seeds/examples/loa.config.complete.yaml"),
    ] {
      let loaded = parse(yaml);
      assert_eq!(loaded.warnings, Vec::<String>::new());
      let c = &loaded.config;
      assert_eq!(c.grounding.enforcement, GroundingEnforcement::Strict);
      let a = &c.attention_budget;
      assert_eq!((a.yellow.tokens, a.orange.tokens, a.red.tokens), (5000, 10_000, 15_000));
      assert_eq!((c.session_continuity.level1_tokens, c.session_continuity.level2_tokens), (100, 500));
      assert_eq!((c.trajectory.retention_days, c.trajectory.archive_days), (30, 365));
      assert_eq!((c.edd.min_test_scenarios, c.edd.require_citations), (3, true));
    }
    let loaded = parse(include_str!("../testdata/seeds/examples/loa.config.context-editing.yaml"));
    assert_eq!(loaded.warnings, Vec::<String>::new());
    let e = &loaded.config.context_editing;
    assert_eq!(e.clear_targets.len(), 5);
    assert_eq!(e.preserve_artifacts, ALWAYS_PRESERVED.map(String::from));
    assert_eq!(loaded.config.attention_budget.compact.fraction, 0.8);
  }

  #[test]
  fn seed_003_threshold_sets_are_normalised() {
    let yaml = "attention_budget:\n  single_search: 2000\n  accumulated: 5000\n  session_total: 15000\n\
      context_editing:\n  enabled: true\n  compact_threshold_percent: 80\n  preserve_recent_turns: 5\n\
      runtime_signals:\n  context_near_limit: CONTEXT_NEAR_LIMIT\n  \
      compaction_complete: COMPACTION_COMPLETE\n  signal_threshold_percent: 80\n";
    let loaded = parse(yaml);
    assert_eq!(loaded.config, Config::default());
    // The seed's spellings, and two of them saying the same (80 and 80): no warning.
    assert_eq!(loaded.warnings, Vec::<String>::new());
    let w =
      parse("context_editing:\n  compact_threshold_percent: 80\nruntime_signals:\n  signal_threshold_percent: 70\n")
        .warnings;
    assert_eq!(
      w,
      vec![
        "`runtime_signals.signal_threshold_percent` is also set, to another value; \
         `context_editing.compact_threshold_percent` wins"
      ]
    );
    let same = parse("attention_budget:\n  compact: 0.8\ncontext_editing:\n  compact_threshold_percent: 80\n");
    assert_eq!(same.warnings, Vec::<String>::new());

    let flat = parse("compact_threshold_percent: 50\n").config.attention_budget.compact;
    assert_eq!(flat, BudgetLevel { tokens: 100_000, fraction: 0.5 });
  }

  #[test]
  fn threshold_suffixed_spellings_are_read() {
    let loaded =
      parse("attention_budget:\n  yellow_threshold: 4000\n  orange_threshold: 0.05\n  red_threshold: '6%'\n");
    let a = &loaded.config.attention_budget;
    assert_eq!((a.yellow.tokens, a.orange.tokens, a.red.tokens), (4000, 10_000, 12_000));
    assert_eq!(loaded.warnings, Vec::<String>::new());
    // The plain spelling wins over the suffixed one, which wins over seed 003's.
    let loaded = parse("attention_budget:\n  yellow: 3000\n  yellow_threshold: 4000\n  accumulated: 4500\n");
    assert_eq!(loaded.config.attention_budget.yellow.tokens, 3000);
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
    let loaded = parse("attention_budget:\n  yellow: 3000\n  yellow_threshold: 3000\n  accumulated: 3000\n");
    assert_eq!(loaded.warnings, Vec::<String>::new());
    let loaded = parse("attention_budget:\n  yellow_threshold: 4000\n  accumulated: 4500\n");
    assert_eq!(loaded.config.attention_budget.yellow.tokens, 4000);
  }

  #[test]
  fn nested_spelling_wins_and_the_flat_one_is_named() {
    let loaded = parse("grounding_enforcement: disabled\ngrounding:\n  enforcement: warn\n");
    assert_eq!(loaded.config.grounding.enforcement, GroundingEnforcement::Warn);
    assert_eq!(
      loaded.warnings,
      vec!["`grounding_enforcement` is also set, to another value; `grounding.enforcement` wins"]
    );

    let loaded = parse("grounding_enforcement: disabled\n");
    assert_eq!(loaded.config.grounding.enforcement, GroundingEnforcement::Disabled);
    assert_eq!(loaded.warnings, Vec::<String>::new());
    let loaded = parse("grounding_enforcement: warn\ngrounding:\n  enforcement: warn\n");
    assert_eq!(loaded.warnings, Vec::<String>::new());

    let loaded = parse("context_token_budget: 900\ncontext:\n  token_budget: 1200\nwal_dir: x\n");
    assert_eq!(loaded.config.context.token_budget, 1200);
    assert_eq!(loaded.config.wal.dir, "x");
    assert_eq!(
      loaded.warnings,
      vec!["`context_token_budget` is also set, to another value; `context.token_budget` wins"]
    );

    // The ignored spelling is not validated; the one used is.
    let loaded = parse("grounding_enforcement: bogus\ngrounding:\n  enforcement: strict\n");
    assert_eq!(loaded.config.grounding.enforcement, GroundingEnforcement::Strict);
    invalid_at("grounding_enforcement: bogus\n", "grounding_enforcement");
  }

  /// The recovery section reaches the recovery part's options; the manifest must sit directly
  /// in the grimoire.
  #[test]
  fn recovery_section_becomes_recovery_options() {
    let loaded = parse(
      "grimoires_dir: g
recovery:
  window_ms: 1000
  max_attempts: 2
  sources: [template, r2]
  mount_dir: /m
",
    );
    let o = loaded.config.recovery_options(Path::new("/ws")).unwrap();
    assert_eq!((o.grimoire_dir.as_str(), o.manifest_name.as_str()), ("g", "manifest.json"));
    assert_eq!((o.window_ms, o.max_attempts), (1000, 2));
    assert_eq!(o.sources, vec![RecoverySource::Template, RecoverySource::Mount]);
    assert_eq!(o.mount_dir.as_deref(), Some(Path::new("/m")));
    assert_eq!(o.audit_dir.as_deref(), Some(".loa/audit"));
    assert!(o.trusted_keys.is_empty() && o.git.is_none());
    let loaded = parse(
      "grimoires_dir: g
signing:
  manifest_path: elsewhere/manifest.json
",
    );
    assert_eq!(loaded.config.recovery_options(Path::new("/ws")).unwrap_err().code(), "E_CONFIG_INVALID");
  }

  /// The ledger's sections reach its options, both spellings of the enforcement included.
  #[test]
  fn ledger_sections_become_ledger_options() {
    let loaded = parse(
      "grimoires_dir: g\ngrounding_enforcement: warn\ngrounding:\n  threshold: 0.8\nsession_continuity:\n  \
       level1_tokens: 150\nedd:\n  min_test_scenarios: 2\npersistence:\n  stale_after_ms: 1000\n",
    );
    let o = loaded.config.ledger_options(Path::new("/ws"));
    assert_eq!(o.grounding.enforcement, GroundingEnforcement::Warn);
    assert_eq!(o.grounding.threshold, 0.8);
    assert_eq!((o.level1_tokens, o.level2_tokens), (150, 500));
    assert_eq!(o.edd.min_test_scenarios, 2);
    assert_eq!(o.stale_after_ms, 1000);
    assert_eq!(
      (o.notes_path.as_str(), o.trajectory_dir.as_str(), o.memory_path.as_str()),
      ("g/NOTES.md", "g/a2a/trajectory", "g/MEMORY.md")
    );
    assert_eq!(o.wal_dir, ".loa/wal");
  }

  #[test]
  fn unknown_keys_warn_with_their_dotted_path() {
    let loaded = parse(
      "colour: blue\nwal:\n  sync: none\n  compresion: true\nmemory:\n  quality_gates:\n    \
       min_confidance: 0.4\n",
    );
    assert_eq!(loaded.config.wal.sync, SyncMode::None);
    assert_eq!(loaded.config.memory.quality_gates.min_confidence, 0.5);
    // In the order of the file.
    assert_eq!(
      loaded.warnings,
      vec![
        "unknown key `colour` ignored",
        "unknown key `wal.compresion` ignored",
        "unknown key `memory.quality_gates.min_confidance` ignored",
      ]
    );
    // Taking out a second spelling keeps the order of the rest.
    let loaded = parse("zeta: 1\nwal_dir: x\nalpha: 2\nomega: 3\n");
    assert_eq!(
      loaded.warnings,
      ["unknown key `zeta` ignored", "unknown key `alpha` ignored", "unknown key `omega` ignored"]
    );
    // Inside lists and under keys that are not strings too.
    let loaded = parse("recovery:\n  sources: [git]\n  7: x\nidentity:\n  soul_path: SOUL.md\n  extra: {deep: 1}\n");
    assert_eq!(loaded.warnings, vec!["unknown key `recovery.7` ignored", "unknown key `identity.extra` ignored"]);
  }

  #[test]
  fn invalid_values_name_their_key() {
    // Wrong type.
    let r = invalid_at("wal:\n  lock_timeout_ms: 5s\n", "wal.lock_timeout_ms");
    assert!(r.contains("\"5s\""), "{r}");
    invalid_at("wal:\n  segment_max_bytes: 1.5\n", "wal.segment_max_bytes");
    invalid_at("edd:\n  enabled: yes\n", "edd.enabled");
    invalid_at("wal: 5\n", "wal");
    invalid_at("context_editing:\n  clear_after_phases: setup\n", "context_editing.clear_after_phases");
    invalid_at("- a\n- b\n", "<yaml>");
    // Negative budget.
    invalid_at("context:\n  token_budget: -1\n", "context.token_budget");
    invalid_at("memory:\n  retry:\n    backoff_base_ms: -5\n", "memory.retry.backoff_base_ms");
    // Fraction above 1.
    let r = invalid_at("memory:\n  quality_gates:\n    min_confidence: 1.5\n", "memory.quality_gates.min_confidence");
    assert!(r.contains("1.5"), "{r}");
    invalid_at("context:\n  learnings_share: 2\n", "context.learnings_share");
    let r = invalid_at("context:\n  safety_margin: 1\n", "context.safety_margin");
    assert!(r.contains("below 1"), "{r}");
    invalid_at("context:\n  safety_margin: -0.1\n", "context.safety_margin");
    invalid_at("attention_budget:\n  compact: 1.2\n", "attention_budget.compact");
    invalid_at("context_editing:\n  compact_threshold_percent: 120\n", "context_editing.compact_threshold_percent");
    // Unknown enum string.
    let r = invalid_at("wal:\n  sync: sometimes\n", "wal.sync");
    assert!(r.contains("always, batch, none") && r.contains("sometimes"), "{r}");
    invalid_at("grounding:\n  enforcement: lax\n", "grounding.enforcement");
    invalid_at("context:\n  encoding: p50k\n", "context.encoding");
    invalid_at(
      "context_editing:\n  clear_targets: [stale_tool_results, everything]\n",
      "context_editing.clear_targets[1]",
    );
    invalid_at("recovery:\n  sources: [git, s3]\n", "recovery.sources[1]");
    // Paths leaving the workspace.
    invalid_at("grimoires_dir: ../elsewhere\n", "grimoires_dir");
    invalid_at("wal:\n  dir: /var/lib/loa\n", "wal.dir");
    // Cross-key constraints.
    invalid_at("attention_budget:\n  orange: 4000\n", "attention_budget.orange");
    invalid_at("attention_budget:\n  yellow: 12000\n", "attention_budget.yellow");
    invalid_at("attention_budget:\n  red: 300000\n", "attention_budget.red");
    invalid_at("attention_budget:\n  context_window_tokens: 8000\n", WINDOW_KEY);
    invalid_at("signing:\n  overlap_days: 90\n", "signing.overlap_days");
    invalid_at("trajectory:\n  archive_days: 10\n", "trajectory.archive_days");
    invalid_at("trajectory:\n  compression_level: 10\n", "trajectory.compression_level");
    // Integers beyond what JavaScript represents exactly.
    invalid_at("wal:\n  segment_max_age_ms: 9007199254740992\n", "wal.segment_max_age_ms");
  }

  #[test]
  fn secret_looking_keys_never_echo_their_value() {
    let r = invalid_at("context:\n  token_budget: -98765\n", "context.token_budget");
    assert!(!r.contains("98765"), "{r}");
    let r = invalid_at("signing:\n  keys_dir: /SECRETVALUE\n", "signing.keys_dir");
    assert!(!r.contains("SECRETVALUE"), "{r}");
    assert!(secret_ish("signing.private_key") && secret_ish("api_token") && secret_ish("db_password"));
    assert!(!secret_ish("attention_budget.context_window_tokens") && !secret_ish("wal.sync"));
  }

  #[test]
  fn null_means_default_and_levels_accept_all_units() {
    let loaded = parse("wal:\n  sync:\nmemory:\ncontext:\n  token_budget: ~\n");
    assert_eq!(loaded.config, Config::default());
    let a = parse("attention_budget:\n  context_window_tokens: 50000\n  yellow: '10%'\n  orange: 0.2\n  red: 15000\n")
      .config
      .attention_budget;
    assert_eq!(a.yellow, BudgetLevel { tokens: 5000, fraction: 0.1 });
    assert_eq!(a.orange, BudgetLevel { tokens: 10_000, fraction: 0.2 });
    assert_eq!(a.red, BudgetLevel { tokens: 15_000, fraction: 0.3 });
    assert_eq!(a.compact.tokens, 40_000);
  }

  #[test]
  fn preserve_artifacts_cannot_drop_the_mandatory_ones() {
    let loaded = parse("preserve_artifacts: [coverage_data]\n");
    let p = &loaded.config.context_editing.preserve_artifacts;
    assert_eq!(p.len(), 6);
    assert_eq!(p[..5], ALWAYS_PRESERVED.map(String::from));
    assert!(loaded.warnings.iter().any(|w| w.contains("`trajectory_events`")), "{:?}", loaded.warnings);
    assert!(!loaded.warnings.iter().any(|w| w.contains("deprecated")), "{:?}", loaded.warnings);
  }

  #[test]
  fn yaml_syntax_error_reports_line_and_column() {
    let r = invalid_at("wal:\n  sync: [always\n", "<yaml>");
    assert!(r.contains("line"), "{r}");
    let r = invalid_at("a: 1\na: 2\n", "<yaml>");
    assert!(r.contains("duplicate"), "{r}");
  }

  #[test]
  fn attention_levels_from_any_spelling_of_the_configuration() {
    // Fractions of a 100K window, and seed 003's names (moved here from src/attention.rs).
    let c = parse("attention_budget:\n  context_window_tokens: 100000\n  accumulated: 0.1\n  orange: '20%'\n  session_total: 30000\n")
      .config
      .attention_budget;
    assert_eq!(attention_level(9_999, &c).unwrap().level, AttentionLevel::Green);
    assert_eq!(attention_level(10_000, &c).unwrap().level, AttentionLevel::Yellow);
    assert_eq!(attention_level(20_000, &c).unwrap().level, AttentionLevel::Orange);
    assert_eq!(attention_level(30_000, &c).unwrap().level, AttentionLevel::Red);
  }

  #[test]
  fn the_workspace_configuration_gives_the_compaction_policy() {
    // Moved here from src/compaction/tests.rs.
    let c = parse_config(
      "attention_budget:\n  context_window_tokens: 100000\ncontext_editing:\n  compact_threshold_percent: 60\n  preserve_recent_turns: 2\n  \
       clear_targets: [verbose_debug]\n  preserve_artifacts: [test_results]\nruntime_signals:\n  compaction_complete: DONE\n",
    )
    .unwrap()
    .config;
    let p = c.compaction_policy();
    assert_eq!((p.context_window_tokens, p.threshold_tokens(), p.preserve_recent_turns), (100_000, 60_000, 2));
    assert_eq!(p.clear_targets, [ClearTarget::VerboseDebug]);
    assert!(p.preserve_artifacts.contains(&"test_results".to_string()) && p.preserve_artifacts.len() == 6);
    assert_eq!(p.runtime_signals.compaction_complete, "DONE");
    let d = CompactionPolicy::default();
    assert_eq!((d.context_window_tokens, d.threshold_tokens(), d.preserve_recent_turns), (200_000, 160_000, 5));
    assert_eq!(d, Config::default().compaction_policy());
  }

  #[test]
  fn the_module_docs_list_every_second_spelling() {
    let docs: Vec<&str> = include_str!("config.rs").lines().take_while(|l| l.starts_with("//!")).collect();
    for (canonical, others) in SPELLINGS {
      let row = docs.iter().find(|l| l.starts_with(&format!("//! | `{canonical}` |"))).expect(canonical);
      for other in *others {
        assert!(row.contains(&format!("`{other}`")), "{other} missing from the row of {canonical}");
      }
    }
  }

  #[test]
  fn merge_keys_are_applied() {
    let c = parse("base: &b\n  sync: batch\nwal:\n  <<: *b\n").config;
    assert_eq!(c.wal.sync, SyncMode::Batch);
  }

  // -- the memory settings of a workspace --------------------------------------------------------

  #[test]
  fn store_options_without_a_file_are_the_stores_defaults() {
    let ws = tempfile::tempdir().unwrap();
    let options = store_options(ws.path(), &MemoryOverrides::default()).unwrap();
    let d = StoreOptions::default();
    assert_eq!(options.workspace_dir, ws.path());
    assert_eq!(
      (&options.grimoire_dir, &options.wal_dir, &options.notes_path, &options.learnings_path),
      (&d.grimoire_dir, &d.wal_dir, &d.notes_path, &d.learnings_path)
    );
    assert_eq!(format!("{:?}", options.wal), format!("{:?}", WalOptions { session_id: String::new(), ..d.wal }));
    assert_eq!((&options.gates, &options.retry, &options.context), (&d.gates, &d.retry, &d.context));
    assert_eq!(
      (&options.keys_dir, &options.audit_dir, options.audit_segment_max_bytes),
      (&d.keys_dir, &d.audit_dir, d.audit_segment_max_bytes)
    );
    assert_eq!((&options.sharing, &options.search), (&d.sharing, &d.search));
  }

  #[test]
  fn store_options_apply_the_file_then_the_overrides() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
      ws.path().join(CONFIG_FILE_NAME),
      "grimoires_dir: state/g\nwal:\n  lock_timeout_ms: 70\n  sync: batch\nmemory:\n  quality_gates:\n    min_confidence: 0.95\n  retry:\n    max_attempts: 5\ncontext:\n  token_budget: 300\n",
    )
    .unwrap();
    let configured = store_options(ws.path(), &MemoryOverrides::default()).unwrap();
    assert_eq!(configured.grimoire_dir, "state/g");
    assert_eq!(configured.notes_path, "state/g/NOTES.md", "files inside the grimoire move with it");
    assert_eq!((configured.wal.lock_timeout, configured.wal.sync), (Duration::from_millis(70), SyncMode::Batch));
    assert_eq!((configured.gates.min_confidence, configured.retry.max_attempts), (0.95, 5));
    assert_eq!(configured.context.token_budget, 300);
    let overrides = MemoryOverrides {
      grimoires_dir: Some("mine".into()),
      wal_dir: Some("w".into()),
      lock_timeout_ms: Some(9),
      gates: GateOverrides { min_confidence: Some(0.2), ..Default::default() },
    };
    let overridden = store_options(ws.path(), &overrides).unwrap();
    assert_eq!((overridden.grimoire_dir.as_str(), overridden.wal_dir.as_str()), ("mine", "w"));
    assert_eq!(
      (overridden.notes_path.as_str(), overridden.learnings_path.as_str()),
      ("mine/NOTES.md", "mine/learnings.json")
    );
    assert_eq!((overridden.wal.lock_timeout, overridden.gates.min_confidence), (Duration::from_millis(9), 0.2));
    assert_eq!(overridden.gates.speculation_min_confidence, GateConfig::default().speculation_min_confidence);
    for bad in [std::path::PathBuf::new(), ws.path().join(CONFIG_FILE_NAME)] {
      assert_eq!(store_options(&bad, &overrides).unwrap_err().code(), "E_INVALID_ARGUMENT");
    }
  }

  // -- config.d.ts stays in sync with the serialized form -------------------------------------

  const DTS: &str = include_str!("binding/header.d.ts");
  /// The generated declarations, for the string unions the binding declares (`WalSync`, ...).
  const GENERATED_DTS: &str = include_str!("../index.d.ts");

  struct Dts {
    interfaces: BTreeMap<String, Vec<(String, String)>>,
    aliases: BTreeMap<String, String>,
  }

  fn parse_dts() -> Dts {
    let mut interfaces = BTreeMap::new();
    let mut aliases = BTreeMap::new();
    let mut current: Option<(String, Vec<(String, String)>)> = None;
    let mut alias = String::new();
    // The generated aliases are one line each, without a `;`.
    let generated = GENERATED_DTS.lines().filter(|l| l.starts_with("export type ")).map(|l| format!("{l};"));
    for line in DTS.lines().map(String::from).chain(generated) {
      let t = line.trim();
      if !alias.is_empty() || t.starts_with("export type ") {
        // Type aliases may span lines; collect up to the `;`.
        alias.push(' ');
        alias.push_str(t);
        if t.ends_with(';') {
          let rest = alias.trim().trim_start_matches("export type ").trim_end_matches(';');
          let (name, ty) = rest.split_once('=').unwrap();
          let ty = ty.trim().trim_start_matches('|').trim();
          aliases.insert(name.trim().to_string(), ty.to_string());
          alias.clear();
        }
      } else if let Some(rest) = t.strip_prefix("export interface ") {
        current = Some((rest.trim_end_matches('{').trim().to_string(), Vec::new()));
      } else if t == "}" {
        if let Some((name, fields)) = current.take() {
          interfaces.insert(name, fields);
        }
      } else if let Some((_, fields)) = current.as_mut() {
        if t.is_empty() || t.starts_with("/**") || t.starts_with('*') || t.starts_with("//") {
          continue;
        }
        let (name, ty) = t.trim_end_matches(';').split_once(':').expect(t);
        let name = name.trim().trim_start_matches("readonly ").trim_end_matches('?');
        fields.push((name.to_string(), ty.trim().to_string()));
      }
    }
    Dts { interfaces, aliases }
  }

  fn type_ok(dts: &Dts, ty: &str, v: &serde_json::Value, path: &str) -> bool {
    ty.split('|').map(str::trim).any(|alt| {
      if let Some(elem) = alt.strip_suffix("[]") {
        return v.as_array().is_some_and(|items| {
          items.iter().enumerate().all(|(i, item)| type_ok(dts, elem, item, &format!("{path}[{i}]")))
        });
      }
      if let Some(lit) = alt.strip_prefix('\'').and_then(|a| a.strip_suffix('\'')) {
        return v.as_str() == Some(lit);
      }
      if let Some(value_type) = alt.strip_prefix("Record<string, ").and_then(|a| a.strip_suffix('>')) {
        return v
          .as_object()
          .is_some_and(|map| map.iter().all(|(key, item)| type_ok(dts, value_type, item, &format!("{path}.{key}"))));
      }
      match alt {
        "null" => v.is_null(),
        "number" => v.is_number(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        name if dts.aliases.contains_key(name) => type_ok(dts, &dts.aliases[name], v, path),
        name if dts.interfaces.contains_key(name) => {
          check_interface(dts, name, v, path);
          true
        }
        other => panic!("config.d.ts: unknown type {other} at {path}"),
      }
    })
  }

  fn check_interface(dts: &Dts, name: &str, v: &serde_json::Value, path: &str) {
    let fields = &dts.interfaces[name];
    let obj = v.as_object().unwrap_or_else(|| panic!("{path}: expected an object for {name}"));
    let json_keys: BTreeSet<&str> = obj.keys().map(String::as_str).collect();
    let ts_keys: BTreeSet<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(json_keys, ts_keys, "keys of `{path}` differ between serde and interface {name}");
    for (field, ty) in fields {
      let p = format!("{path}.{field}");
      assert!(type_ok(dts, ty, &obj[field], &p), "{p}: value {} is not a {ty}", obj[field]);
    }
  }

  #[test]
  fn serialized_default_matches_config_d_ts() {
    let dts = parse_dts();
    let loaded = LoadedConfig {
      config: Config::default(),
      warnings: vec!["w".into()],
      source: Some("/ws/.loa.config.yaml".into()),
    };
    let json = serde_json::to_value(&loaded).unwrap();
    check_interface(&dts, "LoadedConfig", &json, "loaded");
    // Top-level keys, spelled out (the list users see first).
    let top: Vec<&str> = json["config"].as_object().unwrap().keys().map(String::as_str).collect();
    let expected = [
      "grimoiresDir",
      "wal",
      "memory",
      "context",
      "attentionBudget",
      "contextEditing",
      "runtimeSignals",
      "grounding",
      "sessionContinuity",
      "trajectory",
      "edd",
      "identity",
      "signing",
      "audit",
      "recovery",
      "synthesis",
      "persistence",
      "replication",
    ];
    assert_eq!(top.iter().copied().collect::<BTreeSet<_>>(), expected.into_iter().collect());
    // Optional values also match when set, and every enum variant is in its union type.
    let full = serde_json::to_value(parse(FULL).config).unwrap();
    check_interface(&dts, "LoaConfig", &full, "config");
    let variants = serde_json::json!({
      "WalSync": [SyncMode::Always, SyncMode::Batch, SyncMode::None],
      "TokenEncoding": [TokenEncoding::O200kBase, TokenEncoding::Cl100kBase],
      "GroundingEnforcement": [GroundingEnforcement::Strict, GroundingEnforcement::Warn,
                               GroundingEnforcement::Disabled],
      "ClearTarget": ClearTarget::ALL,
      "RecoverySource": [RecoverySource::Mount, RecoverySource::Replica, RecoverySource::Git, RecoverySource::Template],
    });
    for (alias, values) in variants.as_object().unwrap() {
      for v in values.as_array().unwrap() {
        assert!(type_ok(&dts, alias, v, alias), "{v} missing from type {alias}");
      }
    }
  }
}
