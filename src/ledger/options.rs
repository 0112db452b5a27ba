//! The ledger's settings: the `grounding`, `session_continuity`, `trajectory`, `edd` and
//! `persistence` sections of `.loa.config.yaml`. The ledger owns these types; `crate::config`
//! deserialises into them (and reads the flat spelling `grounding_enforcement`, see its docs).

use serde::{Deserialize, Serialize};

use crate::memory::DEFAULT_GRIMOIRE_DIR;
use crate::settings::{count, fraction, positive, rel_path, uint};

/// `<grimoire>/<name>` with the default grimoire (config moves it with `grimoires_dir`).
fn in_grimoire(name: &str) -> String {
  format!("{DEFAULT_GRIMOIRE_DIR}/{name}")
}

/// Grounding enforcement (YAML section `grounding`, seed 000 §4.2, §4.5).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct GroundingConfig {
  /// What happens when the grounding ratio is below `threshold` at the synthesis checkpoint:
  /// `strict` (block `/clear`; default, seed 000 "safe defaults"), `warn` (warn, allow) or
  /// `disabled`. Also read from the flat key `grounding_enforcement`; the nested key wins.
  pub enforcement: GroundingEnforcement,
  /// Minimum ratio of grounded (cited) decisions to all decisions. 0..1, default 0.95.
  #[serde(deserialize_with = "fraction")]
  pub threshold: f64,
  /// Negative grounding: distinct semantic queries that must find nothing before a feature is
  /// declared absent ("ghost"). Default 2.
  #[serde(deserialize_with = "uint::<_, _, 1, 100>")]
  pub negative_queries: u64,
  /// Negative grounding: similarity score below which a search hit counts as "nothing found".
  /// 0..1, default 0.4.
  #[serde(deserialize_with = "fraction")]
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
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum GroundingEnforcement {
  /// Block `/clear` when the ratio is below threshold.
  Strict,
  /// Warn but allow `/clear`.
  Warn,
  /// No enforcement.
  Disabled,
}

/// Default `session_continuity.level1_tokens` (see [`SessionContinuityConfig::level1_tokens`]).
pub const DEFAULT_LEVEL1_TOKENS: u64 = 250;

/// Tiered ledger recovery after `/clear` (YAML section `session_continuity`, seed 000 §5.4).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct SessionContinuityConfig {
  /// Whether recovery loads the ledger in tiers (level 1 first). Default true.
  pub tiered_recovery: bool,
  /// Token budget of level 1 (Session Continuity section only). Default 250, not the seed's
  /// 100: an RFC 3339 time alone is 24 tokens, and 100 did not carry an Active Context and one
  /// decision (docs/ledger.md, "Recall").
  #[serde(deserialize_with = "positive")]
  pub level1_tokens: u64,
  /// Token budget of level 2 (targeted decision search); at least `level1Tokens`. Default 500,
  /// or `level1Tokens` if that is more.
  #[serde(deserialize_with = "positive")]
  pub level2_tokens: u64,
}

impl Default for SessionContinuityConfig {
  fn default() -> Self {
    SessionContinuityConfig { tiered_recovery: true, level1_tokens: DEFAULT_LEVEL1_TOKENS, level2_tokens: 500 }
  }
}

/// Trajectory log settings (YAML section `trajectory`, seed 000 §5.4).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct TrajectoryConfig {
  /// Directory of `{agent}-{date}.jsonl` files. Default `<grimoires_dir>/a2a/trajectory`.
  #[serde(deserialize_with = "rel_path")]
  pub dir: String,
  /// Days a trajectory file stays live before archival. Default 30.
  #[serde(deserialize_with = "uint::<_, _, 1, 36_500>")]
  pub retention_days: u64,
  /// Days an archived file is kept; at least `retentionDays`. Default 365, or `retentionDays` if
  /// that is more.
  #[serde(deserialize_with = "uint::<_, _, 0, 36_500>")]
  pub archive_days: u64,
  /// gzip level (0-9) of archived files. Default 6.
  #[serde(deserialize_with = "uint::<_, _, 0, 9>")]
  pub compression_level: u64,
}

impl Default for TrajectoryConfig {
  fn default() -> Self {
    TrajectoryConfig { dir: in_grimoire("a2a/trajectory"), retention_days: 30, archive_days: 365, compression_level: 6 }
  }
}

/// Evaluation-driven development checks (YAML section `edd`, seed 000 §5.4).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct EddConfig {
  /// Whether EDD is verified at the synthesis checkpoint. Default true.
  pub enabled: bool,
  /// Test scenarios a decision must document. Default 3.
  #[serde(deserialize_with = "uint::<_, _, 0, 1000>")]
  pub min_test_scenarios: u64,
  /// Whether decisions must carry code citations. Default true.
  pub require_citations: bool,
}

impl Default for EddConfig {
  fn default() -> Self {
    EddConfig { enabled: true, min_test_scenarios: 3, require_citations: true }
  }
}

/// Persistence protocol (YAML section `persistence`, seed 004).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct PersistenceConfig {
  /// L1: directory of JSON state files. Default `.loa/state`.
  #[serde(deserialize_with = "rel_path")]
  pub state_dir: String,
  /// L2: MEMORY.md, one line per learning or checkpoint. Default `<grimoires_dir>/MEMORY.md`.
  #[serde(deserialize_with = "rel_path")]
  pub memory_path: String,
  /// When sources disagree by more than this many milliseconds the newest wins with a staleness
  /// warning. Default 300000 (seed 004: 5 minutes).
  #[serde(deserialize_with = "count")]
  pub stale_after_ms: u64,
  /// The ledger's lines MEMORY.md keeps; past it the oldest are moved into the Decision Log
  /// (never dropped). 1..100000, default 200.
  #[serde(deserialize_with = "uint::<_, _, 1, 100_000>")]
  pub memory_max_entries: u64,
}

impl Default for PersistenceConfig {
  fn default() -> Self {
    PersistenceConfig {
      state_dir: ".loa/state".into(),
      memory_path: in_grimoire("MEMORY.md"),
      stale_after_ms: 300_000,
      memory_max_entries: super::persistence::DEFAULT_MAX_ENTRIES as u64,
    }
  }
}
