//! The attention budget (seed 000 §4.3): advisory levels of how full the context is.
//!
//! | level | from (default) | action | what the agent should do |
//! |---|---|---|---|
//! | green | 0 | `continue` | keep working |
//! | yellow | 5000 tokens | `delta_sync` | persist findings to the ledgers now (NOTES.md Decision Log, active bead), so a crash loses nothing |
//! | orange | 10000 tokens | `recommend_clear` | suggest `/clear` when ready |
//! | red | 15000 tokens | `strongly_recommend_clear` | strongly recommend `/clear` |
//!
//! Levels are advisory, never blocking. Thresholds come from [`AttentionBudgetConfig`], which
//! the configuration loader resolves from any of the seeds' spellings, as tokens or as fractions
//! of the context window. [`AttentionTracker`] follows a session: it adds tokens as they are
//! used, reports each threshold the first time it is crossed (once, until [`reset`] after a
//! clear), and flags single operations over the per-operation limit (`single_search`).
//!
//! [`reset`]: AttentionTracker::reset

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Serialize};

use crate::error::{invalid, Result};
use crate::settings::MAX_SAFE;

/// One attention-budget level, in both units.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BudgetLevel {
  /// The level in tokens.
  pub tokens: u64,
  /// The level as a fraction (0..1] of `contextWindowTokens`.
  pub fraction: f64,
}

impl BudgetLevel {
  /// `tokens` of a window of `window` tokens.
  pub fn of_tokens(tokens: u64, window: u64) -> Self {
    BudgetLevel { tokens, fraction: tokens as f64 / window as f64 }
  }

  /// `fraction` of a window of `window` tokens (at least one token).
  pub fn of_fraction(fraction: f64, window: u64) -> Self {
    BudgetLevel { tokens: ((fraction * window as f64).round() as u64).max(1), fraction }
  }
}

/// A level as written in YAML: a token count (`5000`), a fraction of the window (`0.025`) or a
/// percentage (`"2.5%"`). The window may be set after the level, so the unit that was not
/// written is left 0 until [`BudgetLevel::of_tokens`] or [`BudgetLevel::of_fraction`] resolves
/// it (the configuration loader does).
impl<'de> Deserialize<'de> for BudgetLevel {
  fn deserialize<D: de::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
    struct Level;
    impl Visitor<'_> for Level {
      type Value = BudgetLevel;
      fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a token count (5000), a fraction of the context window (0.8) or a percentage (\"80%\")")
      }
      fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<BudgetLevel, E> {
        if (1..=MAX_SAFE).contains(&v) {
          Ok(BudgetLevel { tokens: v, fraction: 0.0 })
        } else {
          Err(E::custom("a token count must be at least 1 and at most 2^53 - 1"))
        }
      }
      fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<BudgetLevel, E> {
        self.visit_u64(u64::try_from(v).unwrap_or(0))
      }
      fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<BudgetLevel, E> {
        if v > 0.0 && v <= 1.0 {
          Ok(BudgetLevel { tokens: 0, fraction: v })
        } else {
          Err(E::custom(
            "a fraction of the context window must be above 0 and at most 1 (write tokens as a whole number)",
          ))
        }
      }
      fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<BudgetLevel, E> {
        let Some(number) = s.trim().strip_suffix('%') else {
          return Err(E::invalid_type(de::Unexpected::Other("a string"), &self));
        };
        match number.trim().parse::<f64>() {
          Ok(p) if p > 0.0 && p <= 100.0 => Ok(BudgetLevel { tokens: 0, fraction: p / 100.0 }),
          _ => Err(E::custom("a percentage must be above 0 and at most 100")),
        }
      }
    }
    d.deserialize_any(Level)
  }
}

/// The attention-budget levels (YAML section `attention_budget`), in tokens and as fractions of
/// the context window; the loader resolves them from any of the seeds' spellings.
/// `yellow < orange < red <= contextWindowTokens`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct AttentionBudgetConfig {
  /// Size of the model's context window in tokens; fractions are relative to it. Default 200000
  /// (seed 003's example).
  #[serde(deserialize_with = "crate::settings::positive")]
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
      single_search: BudgetLevel::of_tokens(2000, w),
      yellow: BudgetLevel::of_tokens(5000, w),
      orange: BudgetLevel::of_tokens(10_000, w),
      red: BudgetLevel::of_tokens(15_000, w),
      compact: BudgetLevel::of_fraction(0.8, w),
    }
  }
}

/// How full the context is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AttentionLevel {
  Green,
  Yellow,
  Orange,
  Red,
}

/// What to do at a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionAction {
  /// Keep working.
  Continue,
  /// Persist findings to the ledgers now (seed 000's delta synthesis), so a crash or a closed
  /// session loses nothing.
  DeltaSync,
  /// Recommend `/clear` to the user when convenient.
  RecommendClear,
  /// Strongly recommend `/clear` (still advisory).
  StronglyRecommendClear,
}

impl AttentionLevel {
  pub const ALL: [AttentionLevel; 4] =
    [AttentionLevel::Green, AttentionLevel::Yellow, AttentionLevel::Orange, AttentionLevel::Red];

  pub fn as_str(self) -> &'static str {
    match self {
      AttentionLevel::Green => "green",
      AttentionLevel::Yellow => "yellow",
      AttentionLevel::Orange => "orange",
      AttentionLevel::Red => "red",
    }
  }

  pub fn action(self) -> AttentionAction {
    match self {
      AttentionLevel::Green => AttentionAction::Continue,
      AttentionLevel::Yellow => AttentionAction::DeltaSync,
      AttentionLevel::Orange => AttentionAction::RecommendClear,
      AttentionLevel::Red => AttentionAction::StronglyRecommendClear,
    }
  }

  /// The seed's wording.
  pub fn message(self) -> &'static str {
    match self {
      AttentionLevel::Green => "Normal operation. Continue working.",
      AttentionLevel::Yellow => {
        "Attention budget moderate. Persist findings to the ledgers now (delta sync: NOTES.md Decision Log, active bead)."
      }
      AttentionLevel::Orange => "Context is filling. Consider /clear when ready.",
      AttentionLevel::Red => "Attention budget high. Recommend /clear.",
    }
  }

  fn index(self) -> usize {
    self as usize
  }
}

impl AttentionAction {
  pub fn as_str(self) -> &'static str {
    match self {
      AttentionAction::Continue => "continue",
      AttentionAction::DeltaSync => "delta_sync",
      AttentionAction::RecommendClear => "recommend_clear",
      AttentionAction::StronglyRecommendClear => "strongly_recommend_clear",
    }
  }
}

/// Where a token count stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttentionStatus {
  pub level: AttentionLevel,
  pub action: AttentionAction,
  pub message: &'static str,
  pub tokens_used: u64,
  /// Tokens at which this level starts (0 for green).
  pub threshold: u64,
  /// Tokens at which the next level starts; `None` at red.
  pub next_threshold: Option<u64>,
}

/// The thresholds of yellow, orange and red, checked to increase.
fn thresholds(config: &AttentionBudgetConfig) -> Result<[u64; 4]> {
  let t = [0, config.yellow.tokens, config.orange.tokens, config.red.tokens];
  if !(t[1] >= 1 && t[1] < t[2] && t[2] < t[3]) {
    return invalid(format!(
      "attention levels must increase: yellow {} < orange {} < red {} tokens (and yellow at least 1)",
      t[1], t[2], t[3]
    ));
  }
  Ok(t)
}

fn status_of(t: &[u64; 4], tokens_used: u64) -> AttentionStatus {
  let level =
    AttentionLevel::ALL.into_iter().rev().find(|l| tokens_used >= t[l.index()]).unwrap_or(AttentionLevel::Green);
  let i = level.index();
  AttentionStatus {
    level,
    action: level.action(),
    message: level.message(),
    tokens_used,
    threshold: t[i],
    next_threshold: t.get(i + 1).copied(),
  }
}

/// The level of `tokens_used` under `config`. `E_INVALID_ARGUMENT` if the levels do not increase.
pub fn attention_level(tokens_used: u64, config: &AttentionBudgetConfig) -> Result<AttentionStatus> {
  Ok(status_of(&thresholds(config)?, tokens_used))
}

/// What [`AttentionTracker::add`] reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttentionUpdate {
  /// Where the total stands now.
  pub status: AttentionStatus,
  /// Levels entered for the first time since the last reset, lowest first (several when one
  /// addition jumps over a level). Each is reported once; a yellow entry asks for a delta sync.
  pub crossed: Vec<AttentionStatus>,
  /// The addition alone was over the per-operation limit (`single_search`, default 2000).
  pub over_operation_limit: bool,
}

/// Follows the tokens a session has used and reports each threshold crossing once.
#[derive(Debug, Clone)]
pub struct AttentionTracker {
  thresholds: [u64; 4],
  single_operation: u64,
  used: u64,
  /// Highest level already reported.
  reported: AttentionLevel,
}

impl AttentionTracker {
  /// A tracker at 0 tokens. `E_INVALID_ARGUMENT` if the levels do not increase.
  pub fn new(config: &AttentionBudgetConfig) -> Result<Self> {
    Ok(AttentionTracker {
      thresholds: thresholds(config)?,
      single_operation: config.single_search.tokens,
      used: 0,
      reported: AttentionLevel::Green,
    })
  }

  /// Adds the tokens of one operation (a tool result, a search, a message).
  pub fn add(&mut self, tokens: u64) -> AttentionUpdate {
    self.used = self.used.saturating_add(tokens);
    let status = status_of(&self.thresholds, self.used);
    let mut crossed = Vec::new();
    for level in AttentionLevel::ALL {
      if level > self.reported && level <= status.level {
        let i = level.index();
        crossed.push(AttentionStatus {
          level,
          action: level.action(),
          message: level.message(),
          tokens_used: self.used,
          threshold: self.thresholds[i],
          next_threshold: self.thresholds.get(i + 1).copied(),
        });
      }
    }
    if status.level > self.reported {
      self.reported = status.level;
    }
    AttentionUpdate { status, crossed, over_operation_limit: tokens > self.single_operation }
  }

  /// Back to 0 tokens after the context was cleared; every level will be reported again.
  pub fn reset(&mut self) {
    self.used = 0;
    self.reported = AttentionLevel::Green;
  }

  /// Where the total stands.
  pub fn status(&self) -> AttentionStatus {
    status_of(&self.thresholds, self.used)
  }

  pub fn tokens_used(&self) -> u64 {
    self.used
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn defaults() -> AttentionBudgetConfig {
    AttentionBudgetConfig::default()
  }

  #[test]
  fn levels_follow_the_seed_thresholds() {
    let c = defaults();
    let at = |t| attention_level(t, &c).unwrap();
    assert_eq!(at(0).level, AttentionLevel::Green);
    assert_eq!(at(4999).level, AttentionLevel::Green);
    assert_eq!(at(5000).level, AttentionLevel::Yellow);
    assert_eq!(at(5000).action, AttentionAction::DeltaSync);
    assert_eq!(at(9999).level, AttentionLevel::Yellow);
    assert_eq!(at(10_000).level, AttentionLevel::Orange);
    assert_eq!(at(10_000).message, "Context is filling. Consider /clear when ready.");
    assert_eq!(at(15_000).level, AttentionLevel::Red);
    assert_eq!(at(15_000).message, "Attention budget high. Recommend /clear.");
    assert_eq!(at(u64::MAX).level, AttentionLevel::Red);
    assert_eq!((at(7000).threshold, at(7000).next_threshold), (5000, Some(10_000)));
    assert_eq!((at(1).threshold, at(1).next_threshold), (0, Some(5000)));
    assert_eq!(at(20_000).next_threshold, None);
  }

  #[test]
  fn levels_that_do_not_increase_are_refused() {
    let mut bad = defaults();
    bad.orange = BudgetLevel { tokens: 4000, fraction: 0.02 };
    assert_eq!(attention_level(1, &bad).unwrap_err().code(), "E_INVALID_ARGUMENT");
    assert!(AttentionTracker::new(&bad).is_err());
  }

  #[test]
  fn the_tracker_reports_each_crossing_once() {
    let mut t = AttentionTracker::new(&defaults()).unwrap();
    let u = t.add(1500);
    assert!(u.crossed.is_empty() && !u.over_operation_limit);
    assert_eq!(u.status.level, AttentionLevel::Green);
    t.add(1500);
    let u = t.add(2000); // exactly 5000: yellow, with a delta sync
    assert!(!u.over_operation_limit, "2000 is the per-operation limit itself");
    assert_eq!(u.crossed.len(), 1);
    assert_eq!(u.crossed[0].level, AttentionLevel::Yellow);
    assert_eq!(u.crossed[0].action, AttentionAction::DeltaSync);
    assert_eq!(u.crossed[0].threshold, 5000);
    assert!(t.add(100).crossed.is_empty(), "yellow is reported once");
    // One big result jumps over orange into red: both are reported, lowest first.
    let u = t.add(12_000);
    assert_eq!(u.crossed.iter().map(|c| c.level).collect::<Vec<_>>(), [AttentionLevel::Orange, AttentionLevel::Red]);
    assert!(u.over_operation_limit, "12000 tokens in one operation is over single_search (2000)");
    assert_eq!(u.status.tokens_used, 17_100);
    assert!(t.add(1).crossed.is_empty());
    assert_eq!(t.tokens_used(), 17_101);
    // After a clear, every level is armed again.
    t.reset();
    assert_eq!(t.status().level, AttentionLevel::Green);
    assert_eq!(t.tokens_used(), 0);
    let u = t.add(6000);
    assert_eq!(u.crossed.iter().map(|c| c.level).collect::<Vec<_>>(), [AttentionLevel::Yellow]);
    assert_eq!(u.crossed[0].tokens_used, 6000);
    // Adding never overflows.
    t.add(u64::MAX);
    assert_eq!(t.tokens_used(), u64::MAX);
  }
}
