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

use serde::{Deserialize, Serialize};
use serde_norway::Value;

use crate::attention::AttentionBudgetConfig;
use crate::error::{invalid, LoaError, Result};
use crate::settings::{self, drop_repeats, percent, text, text_list, uint, Document};

/// Artifacts seed 003 says must never be cleared; always part of `preserve_artifacts`.
pub const ALWAYS_PRESERVED: [&str; 5] =
  ["trajectory_events", "quality_gate_results", "decision_records", "notes_session_continuity", "active_beads"];

/// Kinds of context items context editing may clear.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
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
  /// `targets` without repeats: a target listed twice is cleared in the place of its first
  /// mention.
  pub fn first_mentions(targets: impl IntoIterator<Item = ClearTarget>) -> Vec<ClearTarget> {
    let mut out: Vec<ClearTarget> = Vec::new();
    for t in targets {
      if !out.contains(&t) {
        out.push(t);
      }
    }
    out
  }

  /// All targets in seed 003's clearing order.
  pub const ALL: [ClearTarget; 5] = [
    ClearTarget::StaleToolResults,
    ClearTarget::CompletedPhaseDetails,
    ClearTarget::SupersededFileReads,
    ClearTarget::IntermediateOutputs,
    ClearTarget::VerboseDebug,
  ];
}

/// Context-editing policy of a workspace (YAML section `context_editing`, seed 003).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct ContextEditingConfig {
  /// Whether context editing is on. Default true.
  pub enabled: bool,
  /// Number of most recent turns never cleared. Default 5.
  #[serde(deserialize_with = "uint::<_, _, 0, 100_000>")]
  pub preserve_recent_turns: u64,
  /// What may be cleared, in clearing order (first cleared first). Default: all five targets in
  /// seed 003's priority order. The compaction threshold itself is `attentionBudget.compact`.
  pub clear_targets: Vec<ClearTarget>,
  /// Workflow phases after which their details are cleared. Default `initialization`,
  /// `implementation`, `testing`.
  #[serde(deserialize_with = "text_list")]
  pub clear_after_phases: Vec<String>,
  /// Artifacts never cleared. Always contains seed 003's five ([`ALWAYS_PRESERVED`]); the file
  /// can only add to them.
  #[serde(deserialize_with = "text_list")]
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

/// Signal names exchanged with the runtime (YAML section `runtime_signals`, seed 003). The
/// threshold (`signal_threshold_percent`) is read into `attentionBudget.compact`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct RuntimeSignalsConfig {
  /// Sent by the runtime when usage reaches the compaction threshold. Default `CONTEXT_NEAR_LIMIT`.
  #[serde(deserialize_with = "text")]
  pub context_near_limit: String,
  /// Sent back once clearing is done. Default `COMPACTION_COMPLETE`.
  #[serde(deserialize_with = "text")]
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

/// A `context_editing` block that overrides part of the workspace's policy: the frontmatter of a
/// skill's `SKILL.md` (seed 003, "Per-Skill Configuration"). Only the keys the block sets are
/// `Some`; values follow the rules of `.loa.config.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ContextEditingOverride {
  pub enabled: Option<bool>,
  #[serde(deserialize_with = "uint::<_, _, 0, 100_000>")]
  pub preserve_recent_turns: Option<u64>,
  /// Replaces the clearing order.
  pub clear_targets: Option<Vec<ClearTarget>>,
  /// Replaces the phases after which details are cleared (a skill's own phases).
  #[serde(deserialize_with = "text_list")]
  pub clear_after_phases: Option<Vec<String>>,
  /// Added to the preserved artifacts ("additional artifacts this skill needs preserved").
  #[serde(deserialize_with = "text_list")]
  pub preserve_artifacts: Option<Vec<String>>,
  /// In (0, 100].
  #[serde(deserialize_with = "percent")]
  pub compact_threshold_percent: Option<f64>,
}

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

/// What the planner follows. [`CompactionPolicy::new`] gives a workspace's from its settings.
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
    CompactionPolicy::new(&Default::default(), &Default::default(), &Default::default())
  }
}

impl CompactionPolicy {
  /// The policy of a workspace's settings: `context_editing`, the `attention_budget`'s window
  /// and compaction level, and the `runtime_signals` names.
  pub fn new(e: &ContextEditingConfig, attention: &AttentionBudgetConfig, signals: &RuntimeSignalsConfig) -> Self {
    CompactionPolicy {
      enabled: e.enabled,
      context_window_tokens: attention.context_window_tokens,
      compact_threshold_percent: attention.compact.fraction * 100.0,
      preserve_recent_turns: e.preserve_recent_turns,
      clear_targets: e.clear_targets.clone(),
      preserve_artifacts: e.preserve_artifacts.clone(),
      clear_after_phases: e.clear_after_phases.clone(),
      completed_phases: Vec::new(),
      current_turn: None,
      runtime_signals: signals.clone(),
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
      // A set, so that a long list costs linear time, not a scan of the list per entry.
      let mut seen: std::collections::HashSet<String> = self.preserve_artifacts.iter().cloned().collect();
      for a in v {
        if seen.insert(a.clone()) {
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
  let doc = Document::parse(yaml).map_err(in_file)?;
  let map = match &doc.root {
    Value::Mapping(map) => map,
    Value::Null => return Ok(out),
    _ => {
      return Err(in_file(LoaError::ConfigInvalid {
        key: settings::DOCUMENT_KEY.into(),
        reason: "the frontmatter must be a mapping of keys".into(),
      }))
    }
  };
  if let Some(Value::String(name)) = map.get("name") {
    out.name = Some(name.clone());
  }
  if doc.get(BLOCK).is_some() {
    let mut unknown = Vec::new();
    let mut o: ContextEditingOverride =
      doc.deserialize(BLOCK, &mut unknown).map_err(|e| in_file(doc.error(&e.key, e.reason)))?;
    if let Some(targets) = &mut o.clear_targets {
      drop_repeats(targets, &format!("{BLOCK}.clear_targets"), "target", &mut out.warnings);
    }
    out.warnings.extend(unknown);
    out.policy.apply(&o);
    out.found = true;
  }
  Ok(out)
}

/// The frontmatter key of a skill's context-editing override.
const BLOCK: &str = "context_editing";

#[cfg(test)]
mod tests;
