//! The compaction planner (seed 003, context editing: "clear, don't compact").
//!
//! [`plan_compaction`] is given the parts of an agent's context (tool results, file reads, phase
//! logs, ...) and a policy, and says which parts to clear, in order, so that the context drops
//! below the compaction threshold (default 80 % of the window). It plans; the runtime clears.
//!
//! - Only parts whose `target` is one of the policy's `clear_targets` are ever cleared, in the
//!   order of that list (seed 003's priority: stale tool results first, verbose debug last),
//!   oldest turn first within a target, then input order.
//! - `completed_phase_details` are cleared only for phases that are both completed and listed
//!   in `clear_after_phases`.
//! - Never cleared, even if the context then stays over the threshold (the plan says so): a part
//!   that is, or whose target is, a preserved artifact (seed 003's five always, plus the
//!   policy's own), and any part of the `preserve_recent_turns` most recent turns.
//! - Clearing stops as soon as the context is below the threshold. The plan's runtime signal is
//!   `COMPACTION_COMPLETE` when it gets there, `CONTEXT_NEAR_LIMIT` when it cannot (or when
//!   context editing is disabled), and none when nothing needed clearing.
//!
//! Per-skill overrides come from the `context_editing` block of a skill's `SKILL.md` YAML
//! frontmatter: [`read_skill_context_policy`]. The file is read as a regular file only (never
//! through a symlink, never a FIFO or device) of at most [`MAX_SKILL_FILE_BYTES`] (1 MiB).

use std::collections::HashSet;
use std::path::Path;

use serde::Serialize;
use serde_norway::Value;

pub use crate::config::ALWAYS_PRESERVED;
use crate::config::{self, ClearTarget, Config, ContextEditingOverride, RuntimeSignalsConfig};
use crate::error::{invalid, LoaError, Result};

/// A `SKILL.md` larger than this is refused (`E_TOO_LARGE`).
pub const MAX_SKILL_FILE_BYTES: u64 = 1024 * 1024;

/// One part of the context.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextPart {
  /// Unique among the parts; what the runtime clears by.
  pub id: String,
  /// What kind of content it is: a [`ClearTarget`] name (`stale_tool_results`, ...) or anything
  /// else (`user_message`, `system_prompt`, ...), which is never cleared.
  pub target: String,
  pub tokens: u64,
  /// The conversation turn it belongs to (higher is more recent).
  pub turn: u64,
  /// The workflow phase it belongs to, for `completed_phase_details`.
  pub phase: Option<String>,
  /// The artifact it carries (`trajectory_events`, `test_results`, ...), if any.
  pub artifact: Option<String>,
}

/// What the planner follows. [`CompactionPolicy::from_config`] gives the workspace's.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionPolicy {
  /// Whether context editing is on; when off nothing is cleared. Default true.
  pub enabled: bool,
  /// Default 200000.
  pub context_window_tokens: u64,
  /// Clear until usage is below this percentage of the window, in (0, 100]. Default 80.
  pub compact_threshold_percent: f64,
  /// Parts of this many most recent turns are never cleared. Default 5.
  pub preserve_recent_turns: u64,
  /// What may be cleared, first cleared first. Default: seed 003's five in its order.
  pub clear_targets: Vec<ClearTarget>,
  /// Never cleared; seed 003's five are always added.
  pub preserve_artifacts: Vec<String>,
  /// Phases whose details may be cleared once they are completed.
  pub clear_after_phases: Vec<String>,
  /// Phases the workflow has completed (runtime state, not configuration). Default none.
  pub completed_phases: Vec<String>,
  /// The current turn; default the highest turn among the parts.
  pub current_turn: Option<u64>,
  /// Names of the signals.
  pub runtime_signals: RuntimeSignalsConfig,
}

impl Default for CompactionPolicy {
  fn default() -> Self {
    CompactionPolicy::from_config(&Config::default())
  }
}

impl CompactionPolicy {
  /// The policy of a workspace configuration: `context_editing`, the `attention_budget`'s window
  /// and compaction level, and the `runtime_signals` names.
  pub fn from_config(config: &Config) -> Self {
    let e = &config.context_editing;
    CompactionPolicy {
      enabled: e.enabled,
      context_window_tokens: config.attention_budget.context_window_tokens,
      compact_threshold_percent: config.attention_budget.compact.fraction * 100.0,
      preserve_recent_turns: e.preserve_recent_turns,
      clear_targets: e.clear_targets.clone(),
      preserve_artifacts: e.preserve_artifacts.clone(),
      clear_after_phases: e.clear_after_phases.clone(),
      completed_phases: Vec::new(),
      current_turn: None,
      runtime_signals: config.runtime_signals.clone(),
    }
  }

  /// Applies a skill's override: its settings replace the policy's, except `preserve_artifacts`,
  /// which are added ("additional artifacts this skill needs preserved").
  pub fn apply(&mut self, o: &ContextEditingOverride) {
    if let Some(v) = o.enabled {
      self.enabled = v;
    }
    if let Some(v) = o.preserve_recent_turns {
      self.preserve_recent_turns = v;
    }
    if let Some(v) = &o.clear_targets {
      self.clear_targets = v.clone();
    }
    if let Some(v) = &o.clear_after_phases {
      self.clear_after_phases = v.clone();
    }
    if let Some(v) = &o.preserve_artifacts {
      for a in v {
        if !self.preserve_artifacts.contains(a) {
          self.preserve_artifacts.push(a.clone());
        }
      }
    }
    if let Some(v) = o.compact_threshold_percent {
      self.compact_threshold_percent = v;
    }
  }

  /// `floor(window * percent / 100)`.
  pub fn threshold_tokens(&self) -> u64 {
    let t = self.context_window_tokens as f64 * self.compact_threshold_percent / 100.0;
    let r = t.round();
    if (t - r).abs() < 1e-9 {
      r as u64
    } else {
      t.floor() as u64
    }
  }

  fn check(&self) -> Result<()> {
    let p = self.compact_threshold_percent;
    if !(p.is_finite() && p > 0.0 && p <= 100.0) {
      return invalid(format!("`compactThresholdPercent` must be above 0 and at most 100, got {p}"));
    }
    if self.context_window_tokens == 0 {
      return invalid("`contextWindowTokens` must be at least 1");
    }
    Ok(())
  }
}

/// Why a part can never be cleared under the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeepReason {
  /// It is (or its target is) a preserved artifact.
  PreservedArtifact,
  /// It belongs to one of the `preserve_recent_turns` most recent turns.
  RecentTurn,
  /// Its target is not among the policy's `clear_targets`.
  NotAClearTarget,
  /// A `completed_phase_details` part whose phase is not (yet) completed, or not listed in
  /// `clear_after_phases`.
  PhaseNotCompleted,
}

impl KeepReason {
  pub fn as_str(self) -> &'static str {
    match self {
      KeepReason::PreservedArtifact => "preserved_artifact",
      KeepReason::RecentTurn => "recent_turn",
      KeepReason::NotAClearTarget => "not_a_clear_target",
      KeepReason::PhaseNotCompleted => "phase_not_completed",
    }
  }
}

/// A part to clear.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClearStep {
  pub id: String,
  pub target: String,
  pub tokens: u64,
  pub turn: u64,
}

/// A part that can never be cleared under the policy, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptPart {
  pub id: String,
  pub tokens: u64,
  pub reason: KeepReason,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionPlan {
  /// Parts to clear, in this order.
  pub clear: Vec<ClearStep>,
  pub tokens_before: u64,
  pub tokens_freed: u64,
  /// What is left after clearing: `tokens_before - tokens_freed`.
  pub tokens_after: u64,
  /// The compaction threshold in tokens.
  pub threshold_tokens: u64,
  /// Whether usage had reached the threshold.
  pub needed: bool,
  /// Whether `tokens_after` is below the threshold.
  pub under_threshold: bool,
  /// `COMPACTION_COMPLETE` (cleared below the threshold), `CONTEXT_NEAR_LIMIT` (still at or
  /// over it), or none (nothing was needed); names from the policy's `runtime_signals`.
  pub signal: Option<String>,
  /// Every part that can never be cleared under this policy, in input order.
  pub protected: Vec<KeptPart>,
  /// Tokens of `protected`.
  pub protected_tokens: u64,
  /// One line for a human.
  pub message: String,
}

fn clear_target(name: &str) -> Option<ClearTarget> {
  ClearTarget::ALL.into_iter().find(|t| target_name(*t) == name)
}

/// The snake_case name of a clear target.
pub fn target_name(t: ClearTarget) -> &'static str {
  match t {
    ClearTarget::StaleToolResults => "stale_tool_results",
    ClearTarget::CompletedPhaseDetails => "completed_phase_details",
    ClearTarget::SupersededFileReads => "superseded_file_reads",
    ClearTarget::IntermediateOutputs => "intermediate_outputs",
    ClearTarget::VerboseDebug => "verbose_debug",
  }
}

/// Plans what to clear. `E_INVALID_ARGUMENT` for an empty or repeated id or an invalid policy.
pub fn plan_compaction(parts: &[ContextPart], policy: &CompactionPolicy) -> Result<CompactionPlan> {
  policy.check()?;
  let mut ids = HashSet::with_capacity(parts.len());
  for (i, p) in parts.iter().enumerate() {
    if p.id.is_empty() {
      return invalid(format!("`items[{i}].id` must not be empty"));
    }
    if !ids.insert(p.id.as_str()) {
      return invalid(format!("`items[{i}].id` repeats {}; ids must be unique", crate::error::shown(&p.id)));
    }
  }

  let preserved = |name: &str| ALWAYS_PRESERVED.contains(&name) || policy.preserve_artifacts.iter().any(|a| a == name);
  let current = policy.current_turn.unwrap_or_else(|| parts.iter().map(|p| p.turn).max().unwrap_or(0));
  let recent_from = current.saturating_add(1).saturating_sub(policy.preserve_recent_turns); // turns >= this are recent

  let mut protected = Vec::new();
  let mut candidates = Vec::new(); // (priority rank, turn, index)
  for (index, p) in parts.iter().enumerate() {
    let rank = clear_target(&p.target).and_then(|t| policy.clear_targets.iter().position(|c| *c == t));
    let reason = if p.artifact.as_deref().is_some_and(preserved) || preserved(&p.target) {
      Some(KeepReason::PreservedArtifact)
    } else if policy.preserve_recent_turns > 0 && p.turn >= recent_from {
      Some(KeepReason::RecentTurn)
    } else if rank.is_none() {
      Some(KeepReason::NotAClearTarget)
    } else if p.target == "completed_phase_details"
      && !p
        .phase
        .as_ref()
        .is_some_and(|ph| policy.completed_phases.contains(ph) && policy.clear_after_phases.contains(ph))
    {
      Some(KeepReason::PhaseNotCompleted)
    } else {
      None
    };
    match (reason, rank) {
      (Some(reason), _) => protected.push(KeptPart { id: p.id.clone(), tokens: p.tokens, reason }),
      (None, Some(rank)) => candidates.push((rank, p.turn, index)),
      (None, None) => unreachable!("no rank means NotAClearTarget"),
    }
  }
  candidates.sort_unstable();

  let tokens_before = parts.iter().fold(0u64, |a, p| a.saturating_add(p.tokens));
  let protected_tokens = protected.iter().fold(0u64, |a, p| a.saturating_add(p.tokens));
  let threshold = policy.threshold_tokens();
  let needed = tokens_before >= threshold;
  let mut clear = Vec::new();
  let mut after = tokens_before;
  if needed && policy.enabled {
    for &(_, _, index) in &candidates {
      if after < threshold {
        break;
      }
      let p = &parts[index];
      if p.tokens == 0 {
        continue;
      }
      after -= p.tokens.min(after);
      clear.push(ClearStep { id: p.id.clone(), target: p.target.clone(), tokens: p.tokens, turn: p.turn });
    }
  }
  let under = after < threshold;
  let signals = &policy.runtime_signals;
  let (signal, message) = if !needed {
    (None, format!("{tokens_before} tokens is below the compaction threshold of {threshold}; nothing to clear"))
  } else if !policy.enabled {
    (
      Some(signals.context_near_limit.clone()),
      format!("{tokens_before} tokens reached the threshold of {threshold}, but context editing is disabled"),
    )
  } else if under {
    (
      Some(signals.compaction_complete.clone()),
      format!(
        "clear {} part(s) to free {} tokens: {tokens_before} -> {after}, below the threshold of {threshold}",
        clear.len(),
        tokens_before - after
      ),
    )
  } else {
    (
      Some(signals.context_near_limit.clone()),
      format!(
        "still over the threshold after clearing everything allowed: {tokens_before} -> {after} tokens, threshold {threshold}; \
         {protected_tokens} tokens are preserved artifacts, recent turns or not clearable"
      ),
    )
  };
  Ok(CompactionPlan {
    clear,
    tokens_before,
    tokens_freed: tokens_before - after,
    tokens_after: after,
    threshold_tokens: threshold,
    needed,
    under_threshold: under,
    signal,
    protected,
    protected_tokens,
    message,
  })
}

// ---------------------------------------------------------------------------------------------
// SKILL.md
// ---------------------------------------------------------------------------------------------

/// What [`read_skill_context_policy`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillContextPolicy {
  /// The skill's `name` from its frontmatter, if any.
  pub name: Option<String>,
  /// Whether the frontmatter has a `context_editing` block.
  pub found: bool,
  /// The base policy with the block applied.
  pub policy: CompactionPolicy,
  /// Unknown keys in the block, repeated targets.
  pub warnings: Vec<String>,
}

/// The YAML frontmatter of a Markdown file: the lines between a first line `---` and the next
/// `---` (or `...`) line. `None` when the file does not start with one.
pub fn frontmatter(text: &str) -> Option<&str> {
  let text = text.strip_prefix('\u{feff}').unwrap_or(text);
  let mut lines = text.split_inclusive('\n');
  let first = lines.next()?;
  if first.trim_end() != "---" {
    return None;
  }
  let start = first.len();
  let mut at = start;
  for line in lines {
    let t = line.trim_end();
    if t == "---" || t == "..." {
      return Some(&text[start..at]);
    }
    at += line.len();
  }
  None
}

/// Reads the per-skill context-editing override from the frontmatter of the `SKILL.md` at `path`
/// and applies it to `base`. A file without frontmatter or without a `context_editing` block
/// gives `base` unchanged. `E_IO` if the file cannot be read, `E_TOO_LARGE` over 1 MiB,
/// `E_NOT_REGULAR_FILE` for a symlink, FIFO, device or directory,
/// `E_CONFIG_INVALID` (with the dotted key, e.g. `context_editing.clear_targets[1]`) for invalid
/// YAML or values.
pub fn read_skill_context_policy(path: &Path, base: &CompactionPolicy) -> Result<SkillContextPolicy> {
  // Never through a symlink in its last component and only as a regular file (a FIFO would
  // block the read, `/dev/zero` would never end): `E_NOT_REGULAR_FILE` otherwise.
  let bytes = crate::fsutil::read_file_bounded(path, MAX_SKILL_FILE_BYTES)?
    .ok_or_else(|| LoaError::io("cannot open", path, std::io::ErrorKind::NotFound.into()))?;
  let in_file = |e: LoaError| match e {
    LoaError::ConfigInvalid { key, reason } => {
      LoaError::ConfigInvalid { key, reason: format!("{reason} (in {})", path.display()) }
    }
    other => other,
  };
  let text = String::from_utf8(bytes)
    .map_err(|_| in_file(LoaError::ConfigInvalid { key: "<yaml>".into(), reason: "the file is not UTF-8".into() }))?;
  let mut out = SkillContextPolicy { name: None, found: false, policy: base.clone(), warnings: Vec::new() };
  let Some(yaml) = frontmatter(&text) else {
    return Ok(out);
  };
  let value: Value = serde_norway::from_str(yaml).map_err(|e| {
    in_file(LoaError::ConfigInvalid {
      key: "<yaml>".into(),
      reason: format!("YAML syntax error in the frontmatter: {e}"),
    })
  })?;
  let Value::Mapping(map) = value else {
    if value.is_null() {
      return Ok(out);
    }
    return Err(in_file(LoaError::ConfigInvalid {
      key: "<yaml>".into(),
      reason: "the frontmatter must be a mapping of keys".into(),
    }));
  };
  if let Some(Value::String(name)) = map.get("name") {
    out.name = Some(name.clone());
  }
  match map.get("context_editing") {
    None | Some(Value::Null) => {}
    Some(block) => {
      let (o, warnings) = config::parse_context_editing_override(block.clone()).map_err(in_file)?;
      out.policy.apply(&o);
      out.found = true;
      out.warnings = warnings;
    }
  }
  Ok(out)
}

#[cfg(test)]
mod tests;
