//! Configuration: `.loa.config.yaml` at the workspace root.
//!
//! [`load_config`] reads the file (an absent file means "all defaults", silently) and returns a
//! fully resolved [`Config`]: every key has a value, paths are normalised workspace-relative
//! strings, and the attention budget is expressed both in tokens and as fractions of the context
//! window. Problems that do not change behaviour (unknown keys, a key spelled two ways, deprecated
//! spellings) come back as human-readable `warnings`; a value of the wrong type or out of range is
//! an `E_CONFIG_INVALID` error whose `key` is the dotted path of the offending key (for example
//! `memory.quality_gates.min_confidence`, or `context_editing.clear_targets[2]` inside a list).
//! Values of keys whose name looks secret (key, token, secret, password, ...) are never echoed in
//! messages.
//!
//! The file is parsed with `serde_norway` (the maintained fork of the deprecated `serde_yaml`) into
//! a generic YAML value that is then walked key by key, so that unknown keys are warnings rather
//! than errors and errors name keys precisely. YAML merge keys (`<<: *anchor`) are applied first.
//!
//! # Keys spelled more than one way
//!
//! The design documents ("seeds") spell some settings in several places. All spellings are read;
//! the first one present in the list below wins, a warning names every other spelling that is
//! also set, and a warning says when a non-canonical spelling was the one used:
//!
//! | canonical | also accepted (lower precedence, in order) |
//! |---|---|
//! | `grounding.enforcement` | `grounding_enforcement` (seed 000 §4.5, §5.4) |
//! | `wal.dir` | `wal_dir` (seed 002 `walDir`) |
//! | `context.token_budget` | `context_token_budget` (seed 002 `contextTokenBudget`) |
//! | `context_editing.clear_after_phases` | `clear_after_phases` (seed 003, top level) |
//! | `context_editing.preserve_artifacts` | `preserve_artifacts` (seed 003, top level) |
//! | `attention_budget.yellow` | `attention_budget.yellow_threshold`, `attention_budget.accumulated` (seed 003) |
//! | `attention_budget.orange` | `attention_budget.orange_threshold` |
//! | `attention_budget.red` | `attention_budget.red_threshold`, `attention_budget.session_total` (seed 003) |
//! | `attention_budget.compact` | `context_editing.compact_threshold_percent`, `compact_threshold_percent`, `runtime_signals.signal_threshold_percent` (seed 003) |
//!
//! # Where the seeds disagree, and what this module chose
//!
//! - Attention budget: seed 000 §4.3 has absolute `yellow`/`orange`/`red` = 5000/10000/15000
//!   tokens; seed 003 has `single_search`/`accumulated`/`session_total` = 2000/5000/15000 tokens and
//!   a separate compaction trigger at 80 % of the context window (`compact_threshold_percent`,
//!   `signal_threshold_percent`), with a 200K window as its example. They are normalised into one
//!   [`AttentionBudgetConfig`]: `accumulated` is `yellow`, `session_total` is `red`, the 80 % trigger
//!   is `compact`, and every level is reported as tokens and as a fraction of
//!   `context_window_tokens` (default 200000).
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

use std::fs::File;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use serde::Serialize;
use serde_norway::Value;

use crate::error::{LoaError, Result};

/// Name of the configuration file, looked up at the root of the workspace.
pub const CONFIG_FILE_NAME: &str = ".loa.config.yaml";

/// Largest integer JavaScript represents exactly (`Number.MAX_SAFE_INTEGER`); no integer setting
/// may exceed it, so that values reach JS unchanged.
const MAX_SAFE: u64 = (1 << 53) - 1;
const MIB: u64 = 1024 * 1024;
/// A configuration file larger than this is refused (`E_TOO_LARGE`) rather than parsed.
const MAX_CONFIG_BYTES: u64 = MIB;
const DEFAULT_GRIMOIRES_DIR: &str = "grimoires/loa";
const WINDOW_KEY: &str = "attention_budget.context_window_tokens";
/// Artifacts seed 003 says must never be cleared; always part of `preserve_artifacts`.
pub const ALWAYS_PRESERVED: [&str; 5] =
  ["trajectory_events", "quality_gate_results", "decision_records", "notes_session_continuity", "active_beads"];

// ---------------------------------------------------------------------------------------------
// The resolved configuration
// ---------------------------------------------------------------------------------------------

/// The whole resolved configuration. Every key has a value: the one from `.loa.config.yaml`, or
/// its default. Serialized with camelCase keys (`LoaConfig` in TypeScript); the YAML file uses the
/// snake_case spelling of the same keys (`attention_budget.context_window_tokens` is
/// `attentionBudget.contextWindowTokens`). Paths are relative to the workspace root, with `/`
/// separators, never absolute and never containing `..`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Config {
  /// State-zone directory holding BEAUVOIR.md, NOTES.md, learnings, manifest and trajectory.
  /// YAML `grimoires_dir`, default `grimoires/loa`. Paths of files inside it default to
  /// `<grimoires_dir>/...`, so moving it moves them.
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
  /// Manifest signing (Ed25519) and signing-key rotation.
  pub signing: SigningConfig,
  /// Hash-chained audit log.
  pub audit: AuditConfig,
  /// Boot-time recovery: loop detection, degraded mode, restore sources.
  pub recovery: RecoveryConfig,
  /// Ledger synthesis: per-agent event files merged into `current.md`.
  pub synthesis: SynthesisConfig,
  /// Persistence protocol: L1 JSON state files and L2 MEMORY.md.
  pub persistence: PersistenceConfig,
}

impl Default for Config {
  fn default() -> Self {
    let g = DEFAULT_GRIMOIRES_DIR;
    Config {
      grimoires_dir: g.to_string(),
      wal: WalConfig::default(),
      memory: MemoryConfig::under(g),
      context: ContextConfig::default(),
      attention_budget: AttentionBudgetConfig::default(),
      context_editing: ContextEditingConfig::default(),
      runtime_signals: RuntimeSignalsConfig::default(),
      grounding: GroundingConfig::default(),
      session_continuity: SessionContinuityConfig::default(),
      trajectory: TrajectoryConfig::under(g),
      edd: EddConfig::default(),
      identity: IdentityConfig::under(g),
      signing: SigningConfig::under(g),
      audit: AuditConfig::default(),
      recovery: RecoveryConfig::default(),
      synthesis: SynthesisConfig::default(),
      persistence: PersistenceConfig::under(g),
    }
  }
}

/// Write-ahead log settings (YAML section `wal`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WalConfig {
  /// Directory of WAL segments, relative to the workspace. Default `.loa/wal` (seed 002).
  /// Also read from the flat key `wal_dir`.
  pub dir: String,
  /// How long a writer waits for the exclusive segment lock before failing with `E_WAL_LOCKED`,
  /// in milliseconds. Default 5000 (seed 002 §5.2). 0 means try once.
  pub lock_timeout_ms: u64,
  /// A segment is rotated once it reaches this many bytes. Default 10 MiB (10485760).
  pub segment_max_bytes: u64,
  /// A segment is rotated once it is this old, in milliseconds. Default 3600000 (one hour).
  pub segment_max_age_ms: u64,
  /// When appends are fsynced: `always` (before each append returns; default), `batch` (group
  /// commit) or `none` (leave it to the OS; loses recent records on power failure).
  pub sync: WalSync,
}

impl Default for WalConfig {
  fn default() -> Self {
    WalConfig {
      dir: ".loa/wal".into(),
      lock_timeout_ms: 5000,
      segment_max_bytes: 10 * MIB,
      segment_max_age_ms: 3_600_000,
      sync: WalSync::Always,
    }
  }
}

/// fsync policy of the WAL.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WalSync {
  /// fsync before every append returns.
  Always,
  /// Group commit: concurrent appends share one fsync.
  Batch,
  /// Never fsync explicitly.
  None,
}

/// Memory pipeline settings (YAML section `memory`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemoryConfig {
  /// NOTES.md, the operational memory. Default `<grimoires_dir>/NOTES.md`.
  pub notes_path: String,
  /// Learnings store. Default `<grimoires_dir>/learnings.json`.
  pub learnings_path: String,
  /// Thresholds of the six quality gates a memory candidate must pass.
  pub quality_gates: QualityGatesConfig,
  /// Retry policy when capturing a memory fails (the pipeline is fail-open).
  pub retry: RetryConfig,
}

impl MemoryConfig {
  fn under(g: &str) -> Self {
    MemoryConfig {
      notes_path: join(g, "NOTES.md"),
      learnings_path: join(g, "learnings.json"),
      quality_gates: QualityGatesConfig::default(),
      retry: RetryConfig::default(),
    }
  }
}

/// Quality-gate thresholds (YAML section `memory.quality_gates`; values from SPEC.md).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct QualityGatesConfig {
  /// `confidence` gate: candidates with a confidence below this fail. 0..1, default 0.5.
  pub min_confidence: f64,
  /// `speculation` gate: hedged statements ("might", "maybe", ...) pass only with at least this
  /// confidence. 0..1, default 0.7.
  pub speculation_min_confidence: f64,
  /// `content` gate: content shorter than this many characters (after trimming) fails. Default 10.
  pub min_content_length: u64,
  /// `content` gate: content whose unique-word ratio is below this fails as repetitive. 0..1,
  /// default 0.3.
  pub repetition_min_unique_ratio: f64,
  /// The repetition check applies only to content with more than this many words. Default 10.
  pub repetition_min_words: u64,
  /// `temporal` gate: candidates older than this many milliseconds fail; `null` (default) turns
  /// the gate off.
  pub max_age_ms: Option<u64>,
}

impl Default for QualityGatesConfig {
  fn default() -> Self {
    QualityGatesConfig {
      min_confidence: 0.5,
      speculation_min_confidence: 0.7,
      min_content_length: 10,
      repetition_min_unique_ratio: 0.3,
      repetition_min_words: 10,
      max_age_ms: None,
    }
  }
}

/// Retry policy of failed memory captures (YAML section `memory.retry`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RetryConfig {
  /// Total tries, the first included. Default 3 (seed 002 §6, SPEC). 1 means no retry.
  pub max_attempts: u64,
  /// Exponential backoff: after the n-th failed try, wait `backoffBaseMs * 2^n` ms before the next
  /// (seed 002: 2 s, then 4 s). Default 1000.
  pub backoff_base_ms: u64,
}

impl Default for RetryConfig {
  fn default() -> Self {
    RetryConfig { max_attempts: 3, backoff_base_ms: 1000 }
  }
}

/// Context injection settings (YAML section `context`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContextConfig {
  /// Maximum tokens of memory context prepended to a prompt. Default 2000 (seed 002 FR-8.1).
  /// 0 injects nothing. Also read from the flat key `context_token_budget`.
  pub token_budget: u64,
  /// Share of the budget reserved for learnings; recent sessions get the rest. 0..1, default 0.3
  /// (seed 002: sessions stop at 70 %).
  pub learnings_share: f64,
  /// Tokenizer used to count tokens: `o200k_base` (default) or `cl100k_base`.
  pub encoding: TokenEncoding,
  /// How many recent sessions are considered. Default 5 (seed 002 FR-4.2).
  pub recent_sessions: u64,
  /// How many active learnings are considered. Default 3 (seed 002 FR-4.3).
  pub active_learnings: u64,
  /// Fraction of the budget kept free, for models whose tokenizer is not public (Claude 3 and
  /// later): the context holds at most `token_budget * (1 - safety_margin)` exact tokens of
  /// `encoding`. 0 (default) up to, not including, 1.
  pub safety_margin: f64,
  /// An item that does not fit whole is cut (with a visible marker) only if at least this many
  /// of its tokens remain; otherwise it is dropped. Default 32.
  pub min_truncated_tokens: u64,
}

impl Default for ContextConfig {
  fn default() -> Self {
    ContextConfig {
      token_budget: 2000,
      learnings_share: 0.3,
      encoding: TokenEncoding::O200kBase,
      recent_sessions: 5,
      active_learnings: 3,
      safety_margin: 0.0,
      min_truncated_tokens: 32,
    }
  }
}

/// BPE encoding used to count tokens.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub enum TokenEncoding {
  /// `o200k_base` (GPT-4o family and later).
  #[serde(rename = "o200k_base")]
  O200kBase,
  /// `cl100k_base` (GPT-4 / GPT-3.5 family).
  #[serde(rename = "cl100k_base")]
  Cl100kBase,
}

/// One attention-budget level, in both units. Resolved from whichever unit the file used.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BudgetLevel {
  /// The level in tokens.
  pub tokens: u64,
  /// The level as a fraction (0..1] of `contextWindowTokens`.
  pub fraction: f64,
}

impl BudgetLevel {
  fn tokens(tokens: u64, window: u64) -> Self {
    BudgetLevel { tokens, fraction: tokens as f64 / window as f64 }
  }
}

/// The single attention-budget configuration (YAML section `attention_budget`). Levels are
/// advisory; each may be written in the file as a token count (`5000`), a fraction of the window
/// (`0.025`) or a percentage string (`"2.5%"`), and is reported in both forms. Seed 000's
/// `yellow`/`orange`/`red` (also spelled `yellow_threshold`/`orange_threshold`/`red_threshold`),
/// seed 003's `single_search`/`accumulated`/`session_total` and seed 003's
/// `compact_threshold_percent`/`signal_threshold_percent` are all accepted (see the module docs).
/// `yellow < orange < red <= contextWindowTokens` is enforced.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AttentionBudgetConfig {
  /// Size of the model's context window in tokens; fractions are relative to it. Default 200000
  /// (seed 003's example).
  pub context_window_tokens: u64,
  /// Per-operation limit (one search or tool result). Default 2000 tokens (seed 003).
  pub single_search: BudgetLevel,
  /// Yellow: delta-synthesis trigger, persist findings to the ledgers. Default 5000 tokens (seed
  /// 000; seed 003's `accumulated`).
  pub yellow: BudgetLevel,
  /// Orange: recommend `/clear`. Default 10000 tokens (seed 000).
  pub orange: BudgetLevel,
  /// Red: strongly recommend `/clear`. Default 15000 tokens (seed 000; seed 003's
  /// `session_total`).
  pub red: BudgetLevel,
  /// Compaction trigger: the runtime signals `CONTEXT_NEAR_LIMIT` and context editing clears items
  /// until usage is below it. Default 80 % of the window (seed 003).
  pub compact: BudgetLevel,
}

impl Default for AttentionBudgetConfig {
  fn default() -> Self {
    let w = 200_000;
    AttentionBudgetConfig {
      context_window_tokens: w,
      single_search: BudgetLevel::tokens(2000, w),
      yellow: BudgetLevel::tokens(5000, w),
      orange: BudgetLevel::tokens(10_000, w),
      red: BudgetLevel::tokens(15_000, w),
      compact: BudgetLevel { tokens: 160_000, fraction: 0.8 },
    }
  }
}

/// Context-editing policy (YAML section `context_editing`, seed 003).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContextEditingConfig {
  /// Whether context editing is on. Default true.
  pub enabled: bool,
  /// Number of most recent turns never cleared. Default 5.
  pub preserve_recent_turns: u64,
  /// What may be cleared, in clearing order (first cleared first). Default: all five targets in
  /// seed 003's priority order. The compaction threshold itself is `attentionBudget.compact`.
  pub clear_targets: Vec<ClearTarget>,
  /// Workflow phases after which their details are cleared. Default `initialization`,
  /// `implementation`, `testing`.
  pub clear_after_phases: Vec<String>,
  /// Artifacts never cleared. Always contains seed 003's five (`trajectory_events`,
  /// `quality_gate_results`, `decision_records`, `notes_session_continuity`, `active_beads`);
  /// the file can only add to them.
  pub preserve_artifacts: Vec<String>,
}

impl Default for ContextEditingConfig {
  fn default() -> Self {
    ContextEditingConfig {
      enabled: true,
      preserve_recent_turns: 5,
      clear_targets: ClearTarget::ALL.to_vec(),
      clear_after_phases: vec!["initialization".into(), "implementation".into(), "testing".into()],
      preserve_artifacts: ALWAYS_PRESERVED.iter().map(|s| s.to_string()).collect(),
    }
  }
}

/// Kinds of context items context editing may clear.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ClearTarget {
  /// Old tool outputs no longer needed.
  StaleToolResults,
  /// Verbose logs from finished phases.
  CompletedPhaseDetails,
  /// File reads superseded by a newer read of the same file.
  SupersededFileReads,
  /// Temporary computation results.
  IntermediateOutputs,
  /// Debug logs and tracing.
  VerboseDebug,
}

impl ClearTarget {
  /// All targets in seed 003's clearing order.
  pub const ALL: [ClearTarget; 5] = [
    ClearTarget::StaleToolResults,
    ClearTarget::CompletedPhaseDetails,
    ClearTarget::SupersededFileReads,
    ClearTarget::IntermediateOutputs,
    ClearTarget::VerboseDebug,
  ];
  const NAMES: [(&'static str, ClearTarget); 5] = [
    ("stale_tool_results", ClearTarget::StaleToolResults),
    ("completed_phase_details", ClearTarget::CompletedPhaseDetails),
    ("superseded_file_reads", ClearTarget::SupersededFileReads),
    ("intermediate_outputs", ClearTarget::IntermediateOutputs),
    ("verbose_debug", ClearTarget::VerboseDebug),
  ];
}

/// Signal names exchanged with the runtime (YAML section `runtime_signals`, seed 003). The
/// threshold (`signal_threshold_percent`) is read into `attentionBudget.compact`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeSignalsConfig {
  /// Sent by the runtime when usage reaches the compaction threshold. Default `CONTEXT_NEAR_LIMIT`.
  pub context_near_limit: String,
  /// Sent back once clearing is done. Default `COMPACTION_COMPLETE`.
  pub compaction_complete: String,
}

impl Default for RuntimeSignalsConfig {
  fn default() -> Self {
    RuntimeSignalsConfig {
      context_near_limit: "CONTEXT_NEAR_LIMIT".into(),
      compaction_complete: "COMPACTION_COMPLETE".into(),
    }
  }
}

/// Grounding enforcement (YAML section `grounding`, seed 000 §4.2, §4.5).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GroundingConfig {
  /// What happens when the grounding ratio is below `threshold` at the synthesis checkpoint:
  /// `strict` (block `/clear`; default, seed 000 "safe defaults"), `warn` (warn, allow) or
  /// `disabled`. Also read from the flat key `grounding_enforcement`; the nested key wins.
  pub enforcement: GroundingEnforcement,
  /// Minimum ratio of grounded (cited) decisions to all decisions. 0..1, default 0.95.
  pub threshold: f64,
  /// Negative grounding: distinct semantic queries that must find nothing before a feature is
  /// declared absent ("ghost"). Default 2.
  pub negative_queries: u64,
  /// Negative grounding: similarity score below which a search hit counts as "nothing found".
  /// 0..1, default 0.4.
  pub negative_threshold: f64,
}

impl Default for GroundingConfig {
  fn default() -> Self {
    GroundingConfig {
      enforcement: GroundingEnforcement::Strict,
      threshold: 0.95,
      negative_queries: 2,
      negative_threshold: 0.4,
    }
  }
}

/// Grounding enforcement level.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum GroundingEnforcement {
  /// Block `/clear` when the ratio is below threshold.
  Strict,
  /// Warn but allow `/clear`.
  Warn,
  /// No enforcement.
  Disabled,
}

/// Tiered ledger recovery after `/clear` (YAML section `session_continuity`, seed 000 §5.4).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SessionContinuityConfig {
  /// Whether recovery loads the ledger in tiers (level 1 first). Default true.
  pub tiered_recovery: bool,
  /// Token budget of level 1 (Session Continuity section only). Default 100.
  pub level1_tokens: u64,
  /// Token budget of level 2 (targeted decision search); at least `level1Tokens`. Default 500.
  pub level2_tokens: u64,
}

impl Default for SessionContinuityConfig {
  fn default() -> Self {
    SessionContinuityConfig { tiered_recovery: true, level1_tokens: 100, level2_tokens: 500 }
  }
}

/// Trajectory log settings (YAML section `trajectory`, seed 000 §5.4).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TrajectoryConfig {
  /// Directory of `{agent}-{date}.jsonl` files. Default `<grimoires_dir>/a2a/trajectory`.
  pub dir: String,
  /// Days a trajectory file stays live before archival. Default 30.
  pub retention_days: u64,
  /// Days an archived file is kept; at least `retentionDays`. Default 365.
  pub archive_days: u64,
  /// gzip level (0-9) of archived files. Default 6.
  pub compression_level: u64,
}

impl TrajectoryConfig {
  fn under(g: &str) -> Self {
    TrajectoryConfig { dir: join(g, "a2a/trajectory"), retention_days: 30, archive_days: 365, compression_level: 6 }
  }
}

/// Evaluation-driven development checks (YAML section `edd`, seed 000 §5.4).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EddConfig {
  /// Whether EDD is verified at the synthesis checkpoint. Default true.
  pub enabled: bool,
  /// Test scenarios a decision must document. Default 3.
  pub min_test_scenarios: u64,
  /// Whether decisions must carry code citations. Default true.
  pub require_citations: bool,
}

impl Default for EddConfig {
  fn default() -> Self {
    EddConfig { enabled: true, min_test_scenarios: 3, require_citations: true }
  }
}

/// Identity files (YAML section `identity`, seed 002 §2.2).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct IdentityConfig {
  /// Identity source, edited by humans. Default `<grimoires_dir>/BEAUVOIR.md`.
  pub beauvoir_path: String,
  /// Generated identity, rewritten whenever BEAUVOIR.md changes. Default `SOUL.md` (workspace
  /// root, where OpenClaw reads it).
  pub soul_path: String,
}

impl IdentityConfig {
  fn under(g: &str) -> Self {
    IdentityConfig { beauvoir_path: join(g, "BEAUVOIR.md"), soul_path: "SOUL.md".into() }
  }
}

/// Manifest signing and key rotation (YAML section `signing`). Private keys are never read from
/// this file.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SigningConfig {
  /// Signed manifest of state files. Default `<grimoires_dir>/manifest.json`.
  pub manifest_path: String,
  /// Directory of the key ring (active and retired public keys). Default `.loa/keys`.
  pub keys_dir: String,
  /// Days after which the signing key is rotated. Default 90.
  pub rotation_days: u64,
  /// Days a retired key still verifies after rotation; less than `rotationDays`. Default 7.
  pub overlap_days: u64,
  /// Retired keys kept for verification of old manifests. Default 3.
  pub max_retired_keys: u64,
  /// Timeout of the shared lock taken to read the manifest, in milliseconds. Default 1000 (seed
  /// 002 §5.2).
  pub manifest_lock_timeout_ms: u64,
}

impl SigningConfig {
  fn under(g: &str) -> Self {
    SigningConfig {
      manifest_path: join(g, "manifest.json"),
      keys_dir: ".loa/keys".into(),
      rotation_days: 90,
      overlap_days: 7,
      max_retired_keys: 3,
      manifest_lock_timeout_ms: 1000,
    }
  }
}

/// Audit log settings (YAML section `audit`; not in the seeds).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuditConfig {
  /// Directory of the hash-chained audit segments. Default `.loa/audit`.
  pub dir: String,
  /// An audit segment is rotated (the chain continues) at this size. Default 10 MiB.
  pub segment_max_bytes: u64,
}

impl Default for AuditConfig {
  fn default() -> Self {
    AuditConfig { dir: ".loa/audit".into(), segment_max_bytes: 10 * MIB }
  }
}

/// Boot-time recovery (YAML section `recovery`, seed 002 §2.5, Flatline SKP-005).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryConfig {
  /// Loop detection window in milliseconds (persisted across restarts). Default 120000.
  pub window_ms: u64,
  /// Recovery attempts within `windowMs` after which the agent enters degraded mode. Default 5.
  pub max_attempts: u64,
  /// Consecutive degraded-mode cycles after which a critical alert is raised. Default 3.
  pub degraded_alert_cycles: u64,
  /// Restore sources in the order tried: `mount` (seed 002's "R2"; `r2` is accepted), `git`,
  /// `template`. Default all three in that order.
  pub sources: Vec<RecoverySource>,
  /// Directory where the `mount` source is mounted (may be absolute); `null` (default) skips it.
  pub mount_dir: Option<String>,
}

impl Default for RecoveryConfig {
  fn default() -> Self {
    RecoveryConfig {
      window_ms: 120_000,
      max_attempts: 5,
      degraded_alert_cycles: 3,
      sources: vec![RecoverySource::Mount, RecoverySource::Git, RecoverySource::Template],
      mount_dir: None,
    }
  }
}

/// A place state files can be restored from.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RecoverySource {
  /// A mounted backup (seed 002's R2 bucket).
  Mount,
  /// The git history of the workspace.
  Git,
  /// The built-in templates (fresh start).
  Template,
}

/// Ledger synthesis (YAML section `synthesis`, seed 001).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SynthesisConfig {
  /// Directory holding `events/`, `archive/` and the generated `current.md`. Default
  /// `thoughts/shared/handoffs` (seed 001).
  pub dir: String,
  /// Days archived events are kept. Default 7 (seed 001).
  pub retention_days: u64,
  /// Minimum interval between commits of `current.md` at checkpoints, in milliseconds. Default
  /// 1800000 (seed 001: "30 min max").
  pub commit_throttle_ms: u64,
}

impl Default for SynthesisConfig {
  fn default() -> Self {
    SynthesisConfig { dir: "thoughts/shared/handoffs".into(), retention_days: 7, commit_throttle_ms: 1_800_000 }
  }
}

/// Persistence protocol (YAML section `persistence`, seed 004).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PersistenceConfig {
  /// L1: directory of JSON state files. Default `.loa/state`.
  pub state_dir: String,
  /// L2: MEMORY.md, one line per learning or checkpoint. Default `<grimoires_dir>/MEMORY.md`.
  pub memory_path: String,
  /// When sources disagree by more than this many milliseconds the newest wins with a staleness
  /// warning. Default 300000 (seed 004: 5 minutes).
  pub stale_after_ms: u64,
}

impl PersistenceConfig {
  fn under(g: &str) -> Self {
    PersistenceConfig { state_dir: ".loa/state".into(), memory_path: join(g, "MEMORY.md"), stale_after_ms: 300_000 }
  }
}

/// Result of loading the configuration.
#[derive(Debug, Clone, Serialize)]
pub struct LoadedConfig {
  /// The resolved configuration.
  pub config: Config,
  /// Human-readable notes about the file: unknown keys, keys set under two spellings, deprecated
  /// spellings. Empty when the file is absent or clean.
  pub warnings: Vec<String>,
  /// The file that was read, or `None` when there was none (all defaults).
  pub source: Option<PathBuf>,
}

/// Reads `<workspace>/.loa.config.yaml`. An absent file gives all defaults and no warning; an
/// unreadable one is `E_IO`; invalid YAML or an invalid value is `E_CONFIG_INVALID`.
pub fn load_config(workspace: &Path) -> Result<LoadedConfig> {
  let path = workspace.join(CONFIG_FILE_NAME);
  let file = match File::open(&path) {
    Ok(f) => f,
    Err(e) if e.kind() == io::ErrorKind::NotFound => {
      return Ok(LoadedConfig { config: Config::default(), warnings: Vec::new(), source: None });
    }
    Err(e) => return Err(LoaError::io("open config", &path, e)),
  };
  let mut bytes = Vec::new();
  file.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes).map_err(|e| LoaError::io("read config", &path, e))?;
  if bytes.len() as u64 > MAX_CONFIG_BYTES {
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(bytes.len() as u64);
    return Err(LoaError::TooLarge { what: path.display().to_string(), size, limit: MAX_CONFIG_BYTES });
  }
  let text = String::from_utf8(bytes)
    .map_err(|e| invalid("<yaml>", format!("not valid UTF-8 (at byte {})", e.utf8_error().valid_up_to())))?;
  let mut loaded = parse_config(&text)?;
  loaded.source = Some(path);
  Ok(loaded)
}

/// Parses configuration YAML from a string (same rules as [`load_config`]; `source` is `None`).
/// An empty string gives all defaults.
pub fn parse_config(yaml: &str) -> Result<LoadedConfig> {
  let yaml = yaml.strip_prefix('\u{feff}').unwrap_or(yaml);
  let mut value: Value = serde_norway::from_str(yaml).map_err(yaml_error)?;
  value.apply_merge().map_err(yaml_error)?;
  let mut warnings = Vec::new();
  let config = parse_root(value, &mut warnings)?;
  Ok(LoadedConfig { config, warnings, source: None })
}

// ---------------------------------------------------------------------------------------------
// Walking the YAML value
// ---------------------------------------------------------------------------------------------

fn invalid(key: &str, reason: impl Into<String>) -> LoaError {
  LoaError::ConfigInvalid { key: key.to_string(), reason: reason.into() }
}

fn yaml_error(e: serde_norway::Error) -> LoaError {
  let reason = match e.location() {
    Some(loc) if !e.to_string().contains("line") => {
      format!("YAML syntax error at line {} column {}: {e}", loc.line(), loc.column())
    }
    _ => format!("YAML syntax error: {e}"),
  };
  invalid("<yaml>", reason)
}

fn join(base: &str, name: &str) -> String {
  if base == "." {
    name.to_string()
  } else {
    format!("{base}/{name}")
  }
}

/// Whether a dotted key path names something that may hold a secret, in which case its value is
/// never shown in a message.
fn secret_ish(path: &str) -> bool {
  let lower = path.to_ascii_lowercase();
  lower.split(|c: char| !c.is_ascii_alphanumeric()).any(|seg| {
    matches!(seg, "key" | "keys" | "token" | "private" | "pat")
      || ["secret", "password", "passwd", "passphrase", "credential", "apikey", "privatekey"]
        .iter()
        .any(|w| seg.contains(w))
  })
}

/// How a value is shown in an error message: the value itself, or only its kind for secret-ish
/// keys and containers.
fn describe(path: &str, v: &Value) -> String {
  let kind = match v {
    Value::Null => "null",
    Value::Bool(_) => "a boolean",
    Value::Number(n) if n.is_f64() => "a decimal number",
    Value::Number(_) => "a whole number",
    Value::String(_) => "a string",
    Value::Sequence(_) => "a list",
    Value::Mapping(_) => "a mapping",
    Value::Tagged(_) => "a tagged value",
  };
  if secret_ish(path) {
    return kind.to_string();
  }
  match v {
    Value::Null => "null".into(),
    Value::Bool(b) => b.to_string(),
    Value::Number(n) => n.to_string(),
    // A value is caller data (it may be a token): quoted only when it is a plain name.
    Value::String(s) if crate::error::is_plain_name(s) => format!("{s:?}"),
    Value::String(s) => format!("a string of {} characters", s.chars().count()),
    _ => kind.to_string(),
  }
}

fn range_text(min: u64, max: u64) -> String {
  match (min, max) {
    (0, MAX_SAFE) => "zero or more".into(),
    (_, MAX_SAFE) => format!("at least {min}"),
    _ => format!("between {min} and {max}"),
  }
}

/// One value read from the file, with the dotted path it was read at.
struct Field {
  path: String,
  value: Value,
}

/// A threshold as written in the file, before resolution against the context window.
#[derive(Clone, Copy)]
enum LevelInput {
  Tokens(u64),
  Fraction(f64),
}

impl Field {
  fn err(&self, reason: impl Into<String>) -> LoaError {
    invalid(&self.path, reason)
  }

  fn got(&self) -> String {
    describe(&self.path, &self.value)
  }

  fn uint(&self, min: u64, max: u64) -> Result<u64> {
    match &self.value {
      Value::Number(n) => match (n.as_u64(), n.as_i64()) {
        (Some(u), _) if (min..=max).contains(&u) => Ok(u),
        (Some(_), _) | (None, Some(_)) => {
          Err(self.err(format!("must be {}, got {}", range_text(min, max), self.got())))
        }
        (None, None) => Err(self.err(format!("expected a whole number, got {}", self.got()))),
      },
      _ => Err(self.err(format!("expected a whole number, got {}", self.got()))),
    }
  }

  fn number(&self, min: f64, max: f64) -> Result<f64> {
    let Some(f) = (match &self.value {
      Value::Number(n) => n.as_f64(),
      _ => None,
    }) else {
      return Err(self.err(format!("expected a number, got {}", self.got())));
    };
    if f >= min && f <= max {
      Ok(f)
    } else {
      Err(self.err(format!("must be between {min} and {max}, got {}", self.got())))
    }
  }

  fn fraction(&self) -> Result<f64> {
    self.number(0.0, 1.0)
  }

  fn boolean(&self) -> Result<bool> {
    match &self.value {
      Value::Bool(b) => Ok(*b),
      _ => Err(self.err(format!("expected true or false, got {}", self.got()))),
    }
  }

  fn string(&self) -> Result<String> {
    match &self.value {
      Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
      Value::String(_) => Err(self.err("must not be empty")),
      _ => Err(self.err(format!("expected a string, got {}", self.got()))),
    }
  }

  /// A workspace-relative path, normalised to `/`-separated components without `.`.
  fn rel_path(&self) -> Result<String> {
    let s = self.string()?;
    if s.contains('\0') {
      return Err(self.err("must not contain a NUL character"));
    }
    if s.starts_with('~') {
      return Err(self.err(format!("must be relative to the workspace (`~` is not expanded), got {}", self.got())));
    }
    let mut parts = Vec::new();
    for c in Path::new(&s).components() {
      match c {
        Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
        Component::CurDir => {}
        Component::ParentDir => {
          return Err(self.err(format!("must stay inside the workspace (no `..`), got {}", self.got())));
        }
        Component::RootDir | Component::Prefix(_) => {
          return Err(self.err(format!("must be relative to the workspace, got {}", self.got())));
        }
      }
    }
    Ok(if parts.is_empty() { ".".into() } else { parts.join("/") })
  }

  fn choice<T: Copy>(&self, options: &[(&str, T)]) -> Result<T> {
    let names = options.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
    match &self.value {
      Value::String(s) => {
        let wanted = s.trim().to_ascii_lowercase();
        options
          .iter()
          .find(|(n, _)| *n == wanted)
          .map(|(_, t)| *t)
          .ok_or_else(|| self.err(format!("expected one of {names}, got {}", self.got())))
      }
      _ => Err(self.err(format!("expected one of {names}, got {}", self.got()))),
    }
  }

  fn list(&self) -> Result<Vec<Field>> {
    match &self.value {
      Value::Sequence(items) => Ok(
        items
          .iter()
          .enumerate()
          .map(|(i, v)| Field { path: format!("{}[{i}]", self.path), value: v.clone() })
          .collect(),
      ),
      _ => Err(self.err(format!("expected a list, got {}", self.got()))),
    }
  }

  fn string_list(&self) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for item in self.list()? {
      let s = item.string()?;
      if !out.contains(&s) {
        out.push(s);
      }
    }
    Ok(out)
  }

  /// An attention level: whole number = tokens, decimal in (0, 1] = fraction, `"N%"` = percent.
  fn level(&self) -> Result<LevelInput> {
    const HELP: &str = "expected a token count (5000), a fraction of the context window (0.8) or a \
                        percentage (\"80%\")";
    match &self.value {
      Value::Number(n) if !n.is_f64() => Ok(LevelInput::Tokens(self.uint(1, MAX_SAFE)?)),
      Value::Number(n) => match n.as_f64() {
        Some(f) if f > 0.0 && f <= 1.0 => Ok(LevelInput::Fraction(f)),
        _ => Err(self.err(format!(
          "a fraction of the context window must be above 0 and at most 1 (write tokens as a \
           whole number), got {}",
          self.got()
        ))),
      },
      Value::String(s) if s.trim().ends_with('%') => {
        let num = s.trim().trim_end_matches('%').trim();
        match num.parse::<f64>() {
          Ok(p) if p > 0.0 && p <= 100.0 => Ok(LevelInput::Fraction(p / 100.0)),
          _ => Err(self.err(format!("a percentage must be above 0 and at most 100, got {}", self.got()))),
        }
      }
      _ => Err(self.err(format!("{HELP}, got {}", self.got()))),
    }
  }

  /// A `*_percent` key (seed 003): a number in (0, 100].
  fn percent(&self) -> Result<LevelInput> {
    let p = self.number(0.0, 100.0)?;
    if p == 0.0 {
      return Err(self.err("must be above 0"));
    }
    Ok(LevelInput::Fraction(p / 100.0))
  }
}

/// A YAML mapping being consumed: keys are removed as they are read, and whatever is left at the
/// end is reported as unknown.
struct Section {
  path: String,
  entries: Vec<(Value, Value)>,
}

impl Section {
  fn new(path: String, field: Option<Field>) -> Result<Section> {
    match field {
      None => Ok(Section { path, entries: Vec::new() }),
      Some(Field { value: Value::Mapping(m), .. }) => Ok(Section { path, entries: m.into_iter().collect() }),
      Some(f) => Err(f.err(format!("expected a mapping of keys, got {}", f.got()))),
    }
  }

  fn child(&self, key: &str) -> String {
    if self.path.is_empty() {
      key.to_string()
    } else {
      format!("{}.{key}", self.path)
    }
  }

  /// Removes `key`; returns it unless absent or null (`key:` with no value means "default").
  fn take(&mut self, key: &str) -> Option<Field> {
    let pos = self.entries.iter().position(|(k, _)| k.as_str() == Some(key))?;
    let (_, value) = self.entries.remove(pos);
    if value.is_null() {
      None
    } else {
      Some(Field { path: self.child(key), value })
    }
  }

  fn section(&mut self, key: &str) -> Result<Section> {
    let field = self.take(key);
    Section::new(self.child(key), field)
  }

  fn get<T>(&mut self, key: &str, default: T, parse: impl FnOnce(&Field) -> Result<T>) -> Result<T> {
    match self.take(key) {
      Some(f) => parse(&f),
      None => Ok(default),
    }
  }

  fn finish(self, warnings: &mut Vec<String>) {
    for (key, _) in &self.entries {
      let name = match key {
        Value::String(s) => s.clone(),
        other => describe("", other),
      };
      warnings.push(format!("unknown key `{}` ignored", self.child(&name)));
    }
  }
}

/// Chooses among the spellings of one setting, listed in precedence order (the first is the
/// canonical one, `canonical`). Returns the index of the spelling used and its field.
fn pick(canonical: &str, candidates: Vec<Option<Field>>, warnings: &mut Vec<String>) -> Option<(usize, Field)> {
  let mut present = candidates.into_iter().enumerate().filter_map(|(i, f)| f.map(|f| (i, f)));
  let (index, winner) = present.next()?;
  for (_, other) in present {
    warnings.push(format!("`{}` is also set; `{}` wins", other.path, winner.path));
  }
  if index != 0 {
    warnings.push(format!("`{}` is deprecated; use `{canonical}`", winner.path));
  }
  Some((index, winner))
}

/// [`pick`] for a nested key and its flat spelling.
fn aliased(canonical: &str, nested: Option<Field>, flat: Option<Field>, warnings: &mut Vec<String>) -> Option<Field> {
  pick(canonical, vec![nested, flat], warnings).map(|(_, f)| f)
}

fn parse_root(value: Value, w: &mut Vec<String>) -> Result<Config> {
  let root_field = match value {
    Value::Null => None,
    v => Some(Field { path: "<yaml>".into(), value: v }),
  };
  let mut root = Section::new(String::new(), root_field)?;
  let grimoires_dir = root.get("grimoires_dir", DEFAULT_GRIMOIRES_DIR.to_string(), |f| f.rel_path())?;
  let g = grimoires_dir.as_str();

  let wal = parse_wal(&mut root, w)?;
  let memory = parse_memory(&mut root, g, w)?;
  let context = parse_context(&mut root, w)?;
  // The compaction threshold may be spelled in three sections; read them together.
  let mut editing = root.section("context_editing")?;
  let mut signals = root.section("runtime_signals")?;
  let attention_budget = parse_attention(&mut root, &mut editing, &mut signals, w)?;
  let context_editing = parse_context_editing(&mut root, editing, w)?;
  let runtime_signals = parse_runtime_signals(signals, w)?;
  let config = Config {
    wal,
    memory,
    context,
    attention_budget,
    context_editing,
    runtime_signals,
    grounding: parse_grounding(&mut root, w)?,
    session_continuity: parse_session_continuity(&mut root, w)?,
    trajectory: parse_trajectory(&mut root, g, w)?,
    edd: parse_edd(&mut root, w)?,
    identity: parse_identity(&mut root, g, w)?,
    signing: parse_signing(&mut root, g, w)?,
    audit: parse_audit(&mut root, w)?,
    recovery: parse_recovery(&mut root, w)?,
    synthesis: parse_synthesis(&mut root, w)?,
    persistence: parse_persistence(&mut root, g, w)?,
    grimoires_dir,
  };
  root.finish(w);
  Ok(config)
}

fn parse_wal(root: &mut Section, w: &mut Vec<String>) -> Result<WalConfig> {
  let d = WalConfig::default();
  let mut s = root.section("wal")?;
  let dir = match aliased("wal.dir", s.take("dir"), root.take("wal_dir"), w) {
    Some(f) => f.rel_path()?,
    None => d.dir,
  };
  let cfg = WalConfig {
    dir,
    lock_timeout_ms: s.get("lock_timeout_ms", d.lock_timeout_ms, |f| f.uint(0, MAX_SAFE))?,
    segment_max_bytes: s.get("segment_max_bytes", d.segment_max_bytes, |f| f.uint(1024, MAX_SAFE))?,
    segment_max_age_ms: s.get("segment_max_age_ms", d.segment_max_age_ms, |f| f.uint(1, MAX_SAFE))?,
    sync: s.get("sync", d.sync, |f| {
      f.choice(&[("always", WalSync::Always), ("batch", WalSync::Batch), ("none", WalSync::None)])
    })?,
  };
  s.finish(w);
  Ok(cfg)
}

fn parse_memory(root: &mut Section, g: &str, w: &mut Vec<String>) -> Result<MemoryConfig> {
  let d = MemoryConfig::under(g);
  let mut s = root.section("memory")?;
  let notes_path = s.get("notes_path", d.notes_path, |f| f.rel_path())?;
  let learnings_path = s.get("learnings_path", d.learnings_path, |f| f.rel_path())?;

  let dq = d.quality_gates;
  let mut q = s.section("quality_gates")?;
  let quality_gates = QualityGatesConfig {
    min_confidence: q.get("min_confidence", dq.min_confidence, Field::fraction)?,
    speculation_min_confidence: q.get("speculation_min_confidence", dq.speculation_min_confidence, Field::fraction)?,
    min_content_length: q.get("min_content_length", dq.min_content_length, |f| f.uint(0, MAX_SAFE))?,
    repetition_min_unique_ratio: q.get(
      "repetition_min_unique_ratio",
      dq.repetition_min_unique_ratio,
      Field::fraction,
    )?,
    repetition_min_words: q.get("repetition_min_words", dq.repetition_min_words, |f| f.uint(0, MAX_SAFE))?,
    max_age_ms: match q.take("max_age_ms") {
      Some(f) => Some(f.uint(1, MAX_SAFE)?),
      None => None,
    },
  };
  q.finish(w);

  let dr = d.retry;
  let mut r = s.section("retry")?;
  let retry = RetryConfig {
    max_attempts: r.get("max_attempts", dr.max_attempts, |f| f.uint(1, 100))?,
    backoff_base_ms: r.get("backoff_base_ms", dr.backoff_base_ms, |f| f.uint(0, 3_600_000))?,
  };
  r.finish(w);
  s.finish(w);
  Ok(MemoryConfig { notes_path, learnings_path, quality_gates, retry })
}

fn parse_context(root: &mut Section, w: &mut Vec<String>) -> Result<ContextConfig> {
  let d = ContextConfig::default();
  let mut s = root.section("context")?;
  let budget = aliased("context.token_budget", s.take("token_budget"), root.take("context_token_budget"), w);
  let cfg = ContextConfig {
    token_budget: match budget {
      Some(f) => f.uint(0, MAX_SAFE)?,
      None => d.token_budget,
    },
    learnings_share: s.get("learnings_share", d.learnings_share, Field::fraction)?,
    encoding: s.get("encoding", d.encoding, |f| {
      f.choice(&[("o200k_base", TokenEncoding::O200kBase), ("cl100k_base", TokenEncoding::Cl100kBase)])
    })?,
    recent_sessions: s.get("recent_sessions", d.recent_sessions, |f| f.uint(0, 1000))?,
    active_learnings: s.get("active_learnings", d.active_learnings, |f| f.uint(0, 1000))?,
    safety_margin: s.get("safety_margin", d.safety_margin, |f| {
      let m = f.fraction()?;
      if m >= 1.0 {
        return Err(f.err(format!("must be below 1 (1 would leave no budget), got {}", f.got())));
      }
      Ok(m)
    })?,
    min_truncated_tokens: s.get("min_truncated_tokens", d.min_truncated_tokens, |f| f.uint(0, MAX_SAFE))?,
  };
  s.finish(w);
  Ok(cfg)
}

/// An attention level as read: where from (for errors), what, and whether the file set it.
struct LevelSpec {
  path: String,
  input: LevelInput,
  explicit: bool,
}

impl LevelSpec {
  /// `picked` from [`pick`]; candidates at index `percent_from` and later are `*_percent` keys.
  fn read(
    canonical: &str,
    picked: Option<(usize, Field)>,
    percent_from: usize,
    default: LevelInput,
  ) -> Result<LevelSpec> {
    Ok(match picked {
      Some((i, f)) => {
        LevelSpec { input: if i >= percent_from { f.percent()? } else { f.level()? }, path: f.path, explicit: true }
      }
      None => LevelSpec { path: canonical.to_string(), input: default, explicit: false },
    })
  }

  fn resolve(&self, window: u64) -> Result<BudgetLevel> {
    let level = match self.input {
      LevelInput::Tokens(t) => BudgetLevel::tokens(t, window),
      LevelInput::Fraction(f) => BudgetLevel { tokens: ((f * window as f64).round() as u64).max(1), fraction: f },
    };
    if level.tokens > window {
      return Err(if self.explicit {
        invalid(
          &self.path,
          format!("{} tokens is more than the context window (`{WINDOW_KEY}` = {window})", level.tokens),
        )
      } else {
        invalid(
          WINDOW_KEY,
          format!(
            "{window} tokens is less than the default `{}` of {} tokens; set the levels too \
             (fractions such as 0.5 scale with the window)",
            self.path, level.tokens
          ),
        )
      });
    }
    Ok(level)
  }
}

fn parse_attention(
  root: &mut Section,
  editing: &mut Section,
  signals: &mut Section,
  w: &mut Vec<String>,
) -> Result<AttentionBudgetConfig> {
  use LevelInput::{Fraction, Tokens};
  let d = AttentionBudgetConfig::default();
  let mut s = root.section("attention_budget")?;
  let window = s.get("context_window_tokens", d.context_window_tokens, |f| f.uint(1, MAX_SAFE))?;
  let never = usize::MAX;

  let single_key = "attention_budget.single_search";
  let single = pick(single_key, vec![s.take("single_search")], w);
  let single = LevelSpec::read(single_key, single, never, Tokens(2000))?;

  let yellow_key = "attention_budget.yellow";
  let yellow = pick(yellow_key, vec![s.take("yellow"), s.take("yellow_threshold"), s.take("accumulated")], w);
  let yellow = LevelSpec::read(yellow_key, yellow, never, Tokens(5000))?;

  let orange_key = "attention_budget.orange";
  let orange = pick(orange_key, vec![s.take("orange"), s.take("orange_threshold")], w);
  let orange = LevelSpec::read(orange_key, orange, never, Tokens(10_000))?;

  let red_key = "attention_budget.red";
  let red = pick(red_key, vec![s.take("red"), s.take("red_threshold"), s.take("session_total")], w);
  let red = LevelSpec::read(red_key, red, never, Tokens(15_000))?;

  let compact_key = "attention_budget.compact";
  let compact = pick(
    compact_key,
    vec![
      s.take("compact"),
      editing.take("compact_threshold_percent"),
      root.take("compact_threshold_percent"),
      signals.take("signal_threshold_percent"),
    ],
    w,
  );
  let compact = LevelSpec::read(compact_key, compact, 1, Fraction(0.8))?;
  s.finish(w);

  let levels = [&yellow, &orange, &red];
  let resolved = [yellow.resolve(window)?, orange.resolve(window)?, red.resolve(window)?];
  for i in 0..2 {
    let (lo, hi) = (levels[i], levels[i + 1]);
    if resolved[i].tokens >= resolved[i + 1].tokens {
      let blamed = if hi.explicit { hi } else { lo };
      return Err(invalid(
        &blamed.path,
        format!(
          "levels must increase: `{}` is {} tokens but `{}` is {} tokens",
          lo.path,
          resolved[i].tokens,
          hi.path,
          resolved[i + 1].tokens
        ),
      ));
    }
  }
  let cfg = AttentionBudgetConfig {
    context_window_tokens: window,
    single_search: single.resolve(window)?,
    yellow: resolved[0],
    orange: resolved[1],
    red: resolved[2],
    compact: compact.resolve(window)?,
  };
  if cfg.compact.tokens < cfg.red.tokens {
    w.push(format!(
      "`{}` ({} tokens) is below `{}` ({} tokens): compaction will start before the red level",
      compact.path, cfg.compact.tokens, red.path, cfg.red.tokens
    ));
  }
  Ok(cfg)
}

fn parse_context_editing(root: &mut Section, mut s: Section, w: &mut Vec<String>) -> Result<ContextEditingConfig> {
  let d = ContextEditingConfig::default();
  let enabled = s.get("enabled", d.enabled, Field::boolean)?;
  let preserve_recent_turns = s.get("preserve_recent_turns", d.preserve_recent_turns, |f| f.uint(0, 100_000))?;
  let clear_targets = match s.take("clear_targets") {
    None => d.clear_targets,
    Some(f) => clear_target_list(&f, w)?,
  };
  let phases_key = "context_editing.clear_after_phases";
  let clear_after_phases = match aliased(phases_key, s.take("clear_after_phases"), root.take("clear_after_phases"), w) {
    Some(f) => f.string_list()?,
    None => d.clear_after_phases,
  };
  let preserve_key = "context_editing.preserve_artifacts";
  let preserve_artifacts = match aliased(preserve_key, s.take("preserve_artifacts"), root.take("preserve_artifacts"), w)
  {
    None => d.preserve_artifacts,
    Some(f) => {
      let listed = f.string_list()?;
      let missing: Vec<&str> = ALWAYS_PRESERVED.iter().copied().filter(|a| !listed.iter().any(|l| l == a)).collect();
      if !missing.is_empty() {
        w.push(format!(
          "`{}` does not list {}; they are always preserved",
          f.path,
          missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
        ));
      }
      let mut out = d.preserve_artifacts;
      out.extend(listed.into_iter().filter(|l| !ALWAYS_PRESERVED.contains(&l.as_str())));
      out
    }
  };
  s.finish(w);
  Ok(ContextEditingConfig { enabled, preserve_recent_turns, clear_targets, clear_after_phases, preserve_artifacts })
}

/// A list of clear targets in priority order; repeats are ignored with a warning.
fn clear_target_list(f: &Field, w: &mut Vec<String>) -> Result<Vec<ClearTarget>> {
  let mut out = Vec::new();
  for item in f.list()? {
    let target = item.choice(&ClearTarget::NAMES)?;
    if out.contains(&target) {
      w.push(format!("`{}` repeats an earlier target; ignored", item.path));
    } else {
      out.push(target);
    }
  }
  Ok(out)
}

/// A `context_editing` block that overrides part of the workspace's policy: the frontmatter of a
/// skill's `SKILL.md` (seed 003, "Per-Skill Configuration"). Only the keys the block sets are
/// `Some`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContextEditingOverride {
  pub enabled: Option<bool>,
  pub preserve_recent_turns: Option<u64>,
  /// Replaces the clearing order.
  pub clear_targets: Option<Vec<ClearTarget>>,
  /// Replaces the phases after which details are cleared (a skill's own phases).
  pub clear_after_phases: Option<Vec<String>>,
  /// Added to the preserved artifacts ("additional artifacts this skill needs preserved").
  pub preserve_artifacts: Option<Vec<String>>,
  /// `compact_threshold_percent`, in (0, 100].
  pub compact_threshold_percent: Option<f64>,
}

/// Reads a `context_editing` block (already parsed YAML) with the same rules and error keys as
/// `.loa.config.yaml` (`context_editing.clear_targets[1]`); unknown keys are warnings.
pub fn parse_context_editing_override(value: Value) -> Result<(ContextEditingOverride, Vec<String>)> {
  let mut w = Vec::new();
  let path = "context_editing".to_string();
  let mut s = Section::new(path.clone(), Some(Field { path, value }))?;
  let out = ContextEditingOverride {
    enabled: s.take("enabled").map(|f| f.boolean()).transpose()?,
    preserve_recent_turns: s.take("preserve_recent_turns").map(|f| f.uint(0, 100_000)).transpose()?,
    clear_targets: s.take("clear_targets").map(|f| clear_target_list(&f, &mut w)).transpose()?,
    clear_after_phases: s.take("clear_after_phases").map(|f| f.string_list()).transpose()?,
    preserve_artifacts: s.take("preserve_artifacts").map(|f| f.string_list()).transpose()?,
    compact_threshold_percent: match s.take("compact_threshold_percent") {
      None => None,
      Some(f) => {
        f.percent()?; // the same checks (and messages) as in .loa.config.yaml
        Some(f.number(0.0, 100.0)?)
      }
    },
  };
  s.finish(&mut w);
  Ok((out, w))
}

fn parse_runtime_signals(mut s: Section, w: &mut Vec<String>) -> Result<RuntimeSignalsConfig> {
  let d = RuntimeSignalsConfig::default();
  let cfg = RuntimeSignalsConfig {
    context_near_limit: s.get("context_near_limit", d.context_near_limit, Field::string)?,
    compaction_complete: s.get("compaction_complete", d.compaction_complete, Field::string)?,
  };
  s.finish(w);
  Ok(cfg)
}

fn parse_grounding(root: &mut Section, w: &mut Vec<String>) -> Result<GroundingConfig> {
  let d = GroundingConfig::default();
  let mut s = root.section("grounding")?;
  let enforcement = aliased("grounding.enforcement", s.take("enforcement"), root.take("grounding_enforcement"), w);
  let cfg = GroundingConfig {
    enforcement: match enforcement {
      Some(f) => f.choice(&[
        ("strict", GroundingEnforcement::Strict),
        ("warn", GroundingEnforcement::Warn),
        ("disabled", GroundingEnforcement::Disabled),
      ])?,
      None => d.enforcement,
    },
    threshold: s.get("threshold", d.threshold, Field::fraction)?,
    negative_queries: s.get("negative_queries", d.negative_queries, |f| f.uint(1, 100))?,
    negative_threshold: s.get("negative_threshold", d.negative_threshold, Field::fraction)?,
  };
  s.finish(w);
  Ok(cfg)
}

fn parse_session_continuity(root: &mut Section, w: &mut Vec<String>) -> Result<SessionContinuityConfig> {
  let d = SessionContinuityConfig::default();
  let mut s = root.section("session_continuity")?;
  let tiered_recovery = s.get("tiered_recovery", d.tiered_recovery, Field::boolean)?;
  let level1_tokens = s.get("level1_tokens", d.level1_tokens, |f| f.uint(1, MAX_SAFE))?;
  let level2 = s.take("level2_tokens");
  let level2_tokens = match &level2 {
    Some(f) => f.uint(1, MAX_SAFE)?,
    None => d.level2_tokens.max(level1_tokens),
  };
  if level2_tokens < level1_tokens {
    return Err(invalid(
      "session_continuity.level2_tokens",
      format!("must be at least `session_continuity.level1_tokens` ({level1_tokens})"),
    ));
  }
  s.finish(w);
  Ok(SessionContinuityConfig { tiered_recovery, level1_tokens, level2_tokens })
}

fn parse_trajectory(root: &mut Section, g: &str, w: &mut Vec<String>) -> Result<TrajectoryConfig> {
  let d = TrajectoryConfig::under(g);
  let mut s = root.section("trajectory")?;
  let dir = s.get("dir", d.dir, |f| f.rel_path())?;
  let retention_days = s.get("retention_days", d.retention_days, |f| f.uint(1, 36_500))?;
  let archive = s.take("archive_days");
  let archive_days = match &archive {
    Some(f) => f.uint(0, 36_500)?,
    None => d.archive_days.max(retention_days),
  };
  if archive_days < retention_days {
    return Err(invalid(
      "trajectory.archive_days",
      format!("must be at least `trajectory.retention_days` ({retention_days})"),
    ));
  }
  let compression_level = s.get("compression_level", d.compression_level, |f| f.uint(0, 9))?;
  s.finish(w);
  Ok(TrajectoryConfig { dir, retention_days, archive_days, compression_level })
}

fn parse_edd(root: &mut Section, w: &mut Vec<String>) -> Result<EddConfig> {
  let d = EddConfig::default();
  let mut s = root.section("edd")?;
  let cfg = EddConfig {
    enabled: s.get("enabled", d.enabled, Field::boolean)?,
    min_test_scenarios: s.get("min_test_scenarios", d.min_test_scenarios, |f| f.uint(0, 1000))?,
    require_citations: s.get("require_citations", d.require_citations, Field::boolean)?,
  };
  s.finish(w);
  Ok(cfg)
}

fn parse_identity(root: &mut Section, g: &str, w: &mut Vec<String>) -> Result<IdentityConfig> {
  let d = IdentityConfig::under(g);
  let mut s = root.section("identity")?;
  let cfg = IdentityConfig {
    beauvoir_path: s.get("beauvoir_path", d.beauvoir_path, |f| f.rel_path())?,
    soul_path: s.get("soul_path", d.soul_path, |f| f.rel_path())?,
  };
  s.finish(w);
  Ok(cfg)
}

fn parse_signing(root: &mut Section, g: &str, w: &mut Vec<String>) -> Result<SigningConfig> {
  let d = SigningConfig::under(g);
  let mut s = root.section("signing")?;
  let manifest_path = s.get("manifest_path", d.manifest_path, |f| f.rel_path())?;
  let keys_dir = s.get("keys_dir", d.keys_dir, |f| f.rel_path())?;
  let rotation_days = s.get("rotation_days", d.rotation_days, |f| f.uint(1, 36_500))?;
  let overlap_days = s.get("overlap_days", d.overlap_days, |f| f.uint(0, 36_500))?;
  if overlap_days >= rotation_days {
    return Err(invalid(
      "signing.overlap_days",
      format!("must be less than `signing.rotation_days` ({rotation_days})"),
    ));
  }
  let cfg = SigningConfig {
    manifest_path,
    keys_dir,
    rotation_days,
    overlap_days,
    max_retired_keys: s.get("max_retired_keys", d.max_retired_keys, |f| f.uint(0, 1000))?,
    manifest_lock_timeout_ms: s.get("manifest_lock_timeout_ms", d.manifest_lock_timeout_ms, |f| f.uint(0, MAX_SAFE))?,
  };
  s.finish(w);
  Ok(cfg)
}

fn parse_audit(root: &mut Section, w: &mut Vec<String>) -> Result<AuditConfig> {
  let d = AuditConfig::default();
  let mut s = root.section("audit")?;
  let cfg = AuditConfig {
    dir: s.get("dir", d.dir, |f| f.rel_path())?,
    segment_max_bytes: s.get("segment_max_bytes", d.segment_max_bytes, |f| f.uint(1024, MAX_SAFE))?,
  };
  s.finish(w);
  Ok(cfg)
}

fn parse_recovery(root: &mut Section, w: &mut Vec<String>) -> Result<RecoveryConfig> {
  let d = RecoveryConfig::default();
  let mut s = root.section("recovery")?;
  let window_ms = s.get("window_ms", d.window_ms, |f| f.uint(1, MAX_SAFE))?;
  let max_attempts = s.get("max_attempts", d.max_attempts, |f| f.uint(1, 1000))?;
  let degraded_alert_cycles = s.get("degraded_alert_cycles", d.degraded_alert_cycles, |f| f.uint(1, 1000))?;
  let sources = match s.take("sources") {
    None => d.sources,
    Some(f) => {
      let mut out = Vec::new();
      for item in f.list()? {
        let source = item.choice(&[
          ("mount", RecoverySource::Mount),
          ("r2", RecoverySource::Mount),
          ("git", RecoverySource::Git),
          ("template", RecoverySource::Template),
        ])?;
        if out.contains(&source) {
          return Err(item.err("repeats an earlier source"));
        }
        out.push(source);
      }
      if out.is_empty() {
        return Err(f.err("must list at least one source"));
      }
      out
    }
  };
  let mount_dir = match s.take("mount_dir") {
    Some(f) => Some(f.string()?),
    None => None,
  };
  s.finish(w);
  Ok(RecoveryConfig { window_ms, max_attempts, degraded_alert_cycles, sources, mount_dir })
}

fn parse_synthesis(root: &mut Section, w: &mut Vec<String>) -> Result<SynthesisConfig> {
  let d = SynthesisConfig::default();
  let mut s = root.section("synthesis")?;
  let cfg = SynthesisConfig {
    dir: s.get("dir", d.dir, |f| f.rel_path())?,
    retention_days: s.get("retention_days", d.retention_days, |f| f.uint(0, 36_500))?,
    commit_throttle_ms: s.get("commit_throttle_ms", d.commit_throttle_ms, |f| f.uint(0, MAX_SAFE))?,
  };
  s.finish(w);
  Ok(cfg)
}

fn parse_persistence(root: &mut Section, g: &str, w: &mut Vec<String>) -> Result<PersistenceConfig> {
  let d = PersistenceConfig::under(g);
  let mut s = root.section("persistence")?;
  let cfg = PersistenceConfig {
    state_dir: s.get("state_dir", d.state_dir, |f| f.rel_path())?,
    memory_path: s.get("memory_path", d.memory_path, |f| f.rel_path())?,
    stale_after_ms: s.get("stale_after_ms", d.stale_after_ms, |f| f.uint(0, MAX_SAFE))?,
  };
  s.finish(w);
  Ok(cfg)
}

#[cfg(test)]
mod tests {
  use super::*;
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
    assert_eq!(c.wal.sync, WalSync::Always);
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
    assert_eq!(loaded.config.wal.sync, WalSync::Batch);
    assert_eq!(loaded.source.as_deref(), Some(dir.path().join(CONFIG_FILE_NAME).as_path()));
  }

  #[test]
  fn unreadable_file_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(CONFIG_FILE_NAME)).unwrap();
    let err = load_config(dir.path()).unwrap_err();
    assert_eq!(err.code(), "E_IO", "{err}");
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
"#;

  #[test]
  fn full_example_file() {
    let loaded = parse(FULL);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let c = loaded.config;
    assert_eq!(c.grimoires_dir, "state/loa");
    assert_eq!(c.wal.dir, ".loa/wal2");
    assert_eq!(c.wal.lock_timeout_ms, 2500);
    assert_eq!(c.wal.sync, WalSync::Batch);
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
  }

  #[test]
  fn seed_000_reference_config_parses() {
    let yaml = "grounding_enforcement: strict  # strict | warn | disabled\n\
      attention_budget:\n  yellow: 5000\n  orange: 10000\n  red: 15000\n\
      session_continuity:\n  tiered_recovery: true\n  level1_tokens: 100\n  level2_tokens: 500\n\
      trajectory:\n  retention_days: 30\n  archive_days: 365\n  compression_level: 6\n\
      edd:\n  enabled: true\n  min_test_scenarios: 3\n  require_citations: true\n";
    let loaded = parse(yaml);
    assert_eq!(loaded.config, Config::default());
    assert_eq!(loaded.warnings, vec!["`grounding_enforcement` is deprecated; use `grounding.enforcement`"]);
  }

  #[test]
  fn seed_003_threshold_sets_are_normalised() {
    let yaml = "attention_budget:\n  single_search: 2000\n  accumulated: 5000\n  session_total: 15000\n\
      context_editing:\n  enabled: true\n  compact_threshold_percent: 80\n  preserve_recent_turns: 5\n\
      runtime_signals:\n  context_near_limit: CONTEXT_NEAR_LIMIT\n  \
      compaction_complete: COMPACTION_COMPLETE\n  signal_threshold_percent: 80\n";
    let loaded = parse(yaml);
    assert_eq!(loaded.config, Config::default());
    let w = loaded.warnings.join("\n");
    assert!(w.contains("`attention_budget.accumulated` is deprecated; use `attention_budget.yellow`"), "{w}");
    assert!(w.contains("`attention_budget.session_total` is deprecated"), "{w}");
    assert!(
      w.contains(
        "`runtime_signals.signal_threshold_percent` is also set; \
         `context_editing.compact_threshold_percent` wins"
      ),
      "{w}"
    );

    let flat = parse("compact_threshold_percent: 50\n").config.attention_budget.compact;
    assert_eq!(flat, BudgetLevel { tokens: 100_000, fraction: 0.5 });
  }

  #[test]
  fn threshold_suffixed_spellings_are_read() {
    let loaded =
      parse("attention_budget:\n  yellow_threshold: 4000\n  orange_threshold: 0.05\n  red_threshold: '6%'\n");
    let a = &loaded.config.attention_budget;
    assert_eq!((a.yellow.tokens, a.orange.tokens, a.red.tokens), (4000, 10_000, 12_000));
    assert_eq!(loaded.warnings.len(), 3, "{:?}", loaded.warnings);
    assert!(
      loaded.warnings[0].contains("`attention_budget.yellow_threshold` is deprecated; use `attention_budget.yellow`")
    );
    // The plain spelling wins over the suffixed one, which wins over seed 003's.
    let loaded = parse("attention_budget:\n  yellow: 3000\n  yellow_threshold: 4000\n  accumulated: 4500\n");
    assert_eq!(loaded.config.attention_budget.yellow.tokens, 3000);
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
    let loaded = parse("attention_budget:\n  yellow_threshold: 4000\n  accumulated: 4500\n");
    assert_eq!(loaded.config.attention_budget.yellow.tokens, 4000);
  }

  #[test]
  fn nested_spelling_wins_and_the_flat_one_is_named() {
    let loaded = parse("grounding_enforcement: disabled\ngrounding:\n  enforcement: warn\n");
    assert_eq!(loaded.config.grounding.enforcement, GroundingEnforcement::Warn);
    assert_eq!(loaded.warnings, vec!["`grounding_enforcement` is also set; `grounding.enforcement` wins"]);

    let loaded = parse("grounding_enforcement: disabled\n");
    assert_eq!(loaded.config.grounding.enforcement, GroundingEnforcement::Disabled);
    assert_eq!(loaded.warnings.len(), 1);
    assert!(loaded.warnings[0].contains("deprecated"));

    let loaded = parse("context_token_budget: 900\ncontext:\n  token_budget: 1200\nwal_dir: x\n");
    assert_eq!(loaded.config.context.token_budget, 1200);
    assert_eq!(loaded.config.wal.dir, "x");
    assert_eq!(
      loaded.warnings,
      vec!["`wal_dir` is deprecated; use `wal.dir`", "`context_token_budget` is also set; `context.token_budget` wins",]
    );

    // The ignored spelling is not validated; the one used is.
    let loaded = parse("grounding_enforcement: bogus\ngrounding:\n  enforcement: strict\n");
    assert_eq!(loaded.config.grounding.enforcement, GroundingEnforcement::Strict);
    invalid_at("grounding_enforcement: bogus\n", "grounding_enforcement");
  }

  #[test]
  fn unknown_keys_warn_with_their_dotted_path() {
    let loaded = parse(
      "colour: blue\nwal:\n  sync: none\n  compresion: true\nmemory:\n  quality_gates:\n    \
       min_confidance: 0.4\n",
    );
    assert_eq!(loaded.config.wal.sync, WalSync::None);
    assert_eq!(loaded.config.memory.quality_gates.min_confidence, 0.5);
    assert_eq!(
      loaded.warnings,
      vec![
        "unknown key `wal.compresion` ignored",
        "unknown key `memory.quality_gates.min_confidance` ignored",
        "unknown key `colour` ignored",
      ]
    );
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
    assert!(loaded.warnings.iter().any(|w| w.contains("`preserve_artifacts` is deprecated")));
  }

  #[test]
  fn yaml_syntax_error_reports_line_and_column() {
    let r = invalid_at("wal:\n  sync: [always\n", "<yaml>");
    assert!(r.contains("line"), "{r}");
    let r = invalid_at("a: 1\na: 2\n", "<yaml>");
    assert!(r.contains("duplicate"), "{r}");
  }

  #[test]
  fn merge_keys_are_applied() {
    let c = parse("base: &b\n  sync: batch\nwal:\n  <<: *b\n").config;
    assert_eq!(c.wal.sync, WalSync::Batch);
  }

  // -- config.d.ts stays in sync with the serialized form -------------------------------------

  const DTS: &str = include_str!("binding/header.d.ts");

  struct Dts {
    interfaces: BTreeMap<String, Vec<(String, String)>>,
    aliases: BTreeMap<String, String>,
  }

  fn parse_dts() -> Dts {
    let mut interfaces = BTreeMap::new();
    let mut aliases = BTreeMap::new();
    let mut current: Option<(String, Vec<(String, String)>)> = None;
    let mut alias = String::new();
    for line in DTS.lines() {
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
    ];
    assert_eq!(top.iter().copied().collect::<BTreeSet<_>>(), expected.into_iter().collect());
    // Optional values also match when set, and every enum variant is in its union type.
    let full = serde_json::to_value(parse(FULL).config).unwrap();
    check_interface(&dts, "LoaConfig", &full, "config");
    let variants = serde_json::json!({
      "WalSync": [WalSync::Always, WalSync::Batch, WalSync::None],
      "TokenEncoding": [TokenEncoding::O200kBase, TokenEncoding::Cl100kBase],
      "GroundingEnforcement": [GroundingEnforcement::Strict, GroundingEnforcement::Warn,
                               GroundingEnforcement::Disabled],
      "ClearTarget": ClearTarget::ALL,
      "RecoverySource": [RecoverySource::Mount, RecoverySource::Git, RecoverySource::Template],
    });
    for (alias, values) in variants.as_object().unwrap() {
      for v in values.as_array().unwrap() {
        assert!(type_ok(&dts, alias, v, alias), "{v} missing from type {alias}");
      }
    }
  }
}
