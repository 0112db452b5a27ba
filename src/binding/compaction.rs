//! `planCompaction` and `readSkillContextPolicy`.

use std::path::PathBuf;

use napi::{Env, Unknown};
use napi_derive::napi;
use serde_json::{json, Map, Value};

use super::{args, guard, to_napi};
use crate::compaction::{
  self as core, target_name, ClearTarget, CompactionPolicy as Policy, ContextPart as Part, RuntimeSignalsConfig,
};
use crate::error::{LoaError, Result};

/// One part of the agent's context, as the runtime tracks it.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read as JSON
pub struct ContextPart {
  /// Unique; what the runtime clears by.
  pub id: String,
  /// A clear target (`'stale_tool_results'`, `'completed_phase_details'`,
  /// `'superseded_file_reads'`, `'intermediate_outputs'`, `'verbose_debug'`) or any other kind
  /// (`'user_message'`, `'system_prompt'`, ...), which is never cleared.
  #[napi(ts_type = "ClearTarget | (string & {})")]
  pub target: String,
  pub tokens: f64,
  /// Conversation turn it belongs to; higher is more recent.
  pub turn: f64,
  /// Workflow phase, for `completed_phase_details`.
  pub phase: Option<String>,
  /// Artifact it carries (`'trajectory_events'`, `'test_results'`, ...).
  pub artifact: Option<String>,
}

/// Policy of `planCompaction`. Every field is optional (defaults from seed 003), and
/// `{ ...loadConfig(dir).config.contextEditing }` is a valid policy.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read as JSON
pub struct CompactionPolicy {
  /// When false nothing is cleared. Default true.
  pub enabled: Option<bool>,
  /// Default 200000.
  pub context_window_tokens: Option<f64>,
  /// Clear until usage is below this percentage of the window, in (0, 100]. Default 80.
  pub compact_threshold_percent: Option<f64>,
  /// Parts of this many most recent turns are never cleared. Default 5.
  pub preserve_recent_turns: Option<f64>,
  /// What may be cleared, first cleared first. Default: seed 003's five in its order.
  #[napi(ts_type = "ClearTarget[]")]
  pub clear_targets: Option<Vec<String>>,
  /// Never cleared. Seed 003's five (`trajectory_events`, `quality_gate_results`,
  /// `decision_records`, `notes_session_continuity`, `active_beads`) always are.
  pub preserve_artifacts: Option<Vec<String>>,
  /// Phases whose details may be cleared once completed. Default initialization,
  /// implementation, testing.
  pub clear_after_phases: Option<Vec<String>>,
  /// Phases the workflow has completed. Default none.
  pub completed_phases: Option<Vec<String>>,
  /// The current turn; default (or `null`) the highest turn among the parts.
  #[napi(ts_type = "number | null")]
  pub current_turn: Option<f64>,
  /// Signal names. Default `CONTEXT_NEAR_LIMIT` / `COMPACTION_COMPLETE`.
  #[napi(ts_type = "RuntimeSignalsConfig")]
  pub runtime_signals: Option<Value>,
}

/// A part to clear.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; serialized from the core
pub struct CompactionStep {
  pub id: String,
  pub target: String,
  pub tokens: f64,
  pub turn: f64,
}

/// A part that is never cleared under the policy, and why.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; serialized from the core
pub struct CompactionKeptPart {
  pub id: String,
  pub tokens: f64,
  #[napi(ts_type = "'preserved_artifact' | 'recent_turn' | 'not_a_clear_target' | 'phase_not_completed'")]
  pub reason: String,
}

/// What `planCompaction` decided.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; serialized from the core
pub struct CompactionPlan {
  /// Parts to clear, in this order.
  pub clear: Vec<CompactionStep>,
  pub tokens_before: f64,
  pub tokens_freed: f64,
  /// Tokens left after clearing.
  pub tokens_after: f64,
  /// `floor(contextWindowTokens * compactThresholdPercent / 100)`.
  pub threshold_tokens: f64,
  /// Whether usage had reached the threshold.
  pub needed: bool,
  /// Whether `tokensAfter` is below the threshold. False when preserved artifacts, recent turns
  /// and parts that are not clear targets alone keep the context at or over it.
  pub under_threshold: bool,
  /// `'COMPACTION_COMPLETE'` when clearing gets below the threshold, `'CONTEXT_NEAR_LIMIT'` when
  /// it cannot (or context editing is disabled), `null` when nothing was needed (names from
  /// `runtimeSignals`).
  #[napi(ts_type = "string | null")]
  pub signal: String,
  /// Every part that can never be cleared under this policy, in input order.
  pub protected: Vec<CompactionKeptPart>,
  pub protected_tokens: f64,
  /// One line for a human.
  pub message: String,
}

/// What `readSkillContextPolicy` found.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; serialized
pub struct SkillContextPolicy {
  /// The skill's `name` from its frontmatter.
  #[napi(ts_type = "string | null")]
  pub name: String,
  /// Whether the frontmatter has a `context_editing` block.
  pub found: bool,
  /// The base policy with the block applied: its settings replace the base's, its
  /// `preserve_artifacts` are added to the base's.
  #[napi(ts_type = "Required<CompactionPolicy>")]
  pub policy: Value,
  /// Unknown keys in the block, repeated targets.
  pub warnings: Vec<String>,
}

fn wrong(path: &str, expected: &str) -> LoaError {
  LoaError::InvalidArgument(format!("`{path}` must be {expected}"))
}

fn uint(v: &Value, path: &str) -> Result<u64> {
  match v.as_u64() {
    Some(n) if n < (1 << 53) => Ok(n),
    _ => match v.as_f64() {
      Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= 9_007_199_254_740_991.0 => Ok(f as u64),
      _ => Err(wrong(path, "a non-negative integer")),
    },
  }
}

fn string(v: &Value, path: &str) -> Result<String> {
  v.as_str().map(String::from).ok_or_else(|| wrong(path, "a string"))
}

fn strings(v: &Value, path: &str) -> Result<Vec<String>> {
  let list = v.as_array().ok_or_else(|| wrong(path, "an array of strings"))?;
  list.iter().enumerate().map(|(i, s)| string(s, &format!("{path}[{i}]"))).collect()
}

/// `Some(value)` unless absent or null.
fn opt<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
  o.get(key).filter(|v| !v.is_null())
}

fn parse_parts(items: &Value) -> Result<Vec<Part>> {
  let list = items.as_array().ok_or_else(|| wrong("items", "an array"))?;
  let mut parts = Vec::with_capacity(list.len());
  for (i, item) in list.iter().enumerate() {
    let p = |k: &str| format!("items[{i}].{k}");
    let o = item.as_object().ok_or_else(|| wrong(&format!("items[{i}]"), "an object"))?;
    let required = |k: &str| {
      opt(o, k)
        .ok_or_else(|| wrong(&p(k), if k == "id" || k == "target" { "a string" } else { "a non-negative integer" }))
    };
    parts.push(Part {
      id: string(required("id")?, &p("id"))?,
      target: string(required("target")?, &p("target"))?,
      tokens: uint(required("tokens")?, &p("tokens"))?,
      turn: uint(required("turn")?, &p("turn"))?,
      phase: opt(o, "phase").map(|v| string(v, &p("phase"))).transpose()?,
      artifact: opt(o, "artifact").map(|v| string(v, &p("artifact"))).transpose()?,
    });
  }
  Ok(parts)
}

pub(crate) fn parse_policy(value: Option<&Value>, name: &str) -> Result<Policy> {
  let mut policy = Policy::default();
  let Some(value) = value.filter(|v| !v.is_null()) else { return Ok(policy) };
  let o = value.as_object().ok_or_else(|| wrong(name, "an object"))?;
  let p = |k: &str| format!("{name}.{k}");
  if let Some(v) = opt(o, "enabled") {
    policy.enabled = v.as_bool().ok_or_else(|| wrong(&p("enabled"), "a boolean"))?;
  }
  if let Some(v) = opt(o, "contextWindowTokens") {
    policy.context_window_tokens = uint(v, &p("contextWindowTokens"))?;
  }
  if let Some(v) = opt(o, "compactThresholdPercent") {
    policy.compact_threshold_percent = v.as_f64().ok_or_else(|| wrong(&p("compactThresholdPercent"), "a number"))?;
  }
  if let Some(v) = opt(o, "preserveRecentTurns") {
    policy.preserve_recent_turns = uint(v, &p("preserveRecentTurns"))?;
  }
  if let Some(v) = opt(o, "clearTargets") {
    let names = strings(v, &p("clearTargets"))?;
    let mut targets = Vec::new();
    for (i, n) in names.iter().enumerate() {
      let t = ClearTarget::ALL.into_iter().find(|t| target_name(*t) == n).ok_or_else(|| {
        wrong(
          &format!("{}[{i}]", p("clearTargets")),
          &format!("one of {}", ClearTarget::ALL.map(target_name).join(", ")),
        )
      })?;
      if !targets.contains(&t) {
        targets.push(t);
      }
    }
    policy.clear_targets = targets;
  }
  if let Some(v) = opt(o, "preserveArtifacts") {
    policy.preserve_artifacts = strings(v, &p("preserveArtifacts"))?;
  }
  if let Some(v) = opt(o, "clearAfterPhases") {
    policy.clear_after_phases = strings(v, &p("clearAfterPhases"))?;
  }
  if let Some(v) = opt(o, "completedPhases") {
    policy.completed_phases = strings(v, &p("completedPhases"))?;
  }
  if let Some(v) = opt(o, "currentTurn") {
    policy.current_turn = Some(uint(v, &p("currentTurn"))?);
  }
  if let Some(v) = opt(o, "runtimeSignals") {
    let s = v.as_object().ok_or_else(|| wrong(&p("runtimeSignals"), "an object"))?;
    let d = RuntimeSignalsConfig::default();
    policy.runtime_signals = RuntimeSignalsConfig {
      context_near_limit: opt(s, "contextNearLimit")
        .map(|v| string(v, &p("runtimeSignals.contextNearLimit")))
        .transpose()?
        .unwrap_or(d.context_near_limit),
      compaction_complete: opt(s, "compactionComplete")
        .map(|v| string(v, &p("runtimeSignals.compactionComplete")))
        .transpose()?
        .unwrap_or(d.compaction_complete),
    };
  }
  Ok(policy)
}

fn policy_to_js(p: &Policy) -> Value {
  json!({
    "enabled": p.enabled,
    "contextWindowTokens": p.context_window_tokens,
    "compactThresholdPercent": p.compact_threshold_percent,
    "preserveRecentTurns": p.preserve_recent_turns,
    "clearTargets": p.clear_targets.iter().map(|t| target_name(*t)).collect::<Vec<_>>(),
    "preserveArtifacts": p.preserve_artifacts,
    "clearAfterPhases": p.clear_after_phases,
    "completedPhases": p.completed_phases,
    "currentTurn": p.current_turn,
    "runtimeSignals": { "contextNearLimit": p.runtime_signals.context_near_limit, "compactionComplete": p.runtime_signals.compaction_complete },
  })
}

fn from_js(env: &Env, value: Option<Unknown>, name: &'static str) -> Result<Option<Value>> {
  match value {
    Some(v) if v.get_type().ok() != Some(napi::ValueType::Undefined) => {
      super::json::from_js_data(env, v, name).map(Some)
    }
    _ => Ok(None),
  }
}

/// Plans which parts of the context to clear, in order, to get below the compaction threshold
/// (default 80 % of a 200K window): clear targets in the policy's priority order (stale tool
/// results first), oldest turn first. Never clears a preserved artifact or a part of the
/// `preserveRecentTurns` most recent turns, even if the context then stays over the threshold
/// (`underThreshold: false`, signal `CONTEXT_NEAR_LIMIT`). Throws `E_INVALID_ARGUMENT` for a
/// repeated id or an invalid field (named, e.g. `items[3].tokens`).
#[napi(ts_args_type = "items: ContextPart[], policy?: CompactionPolicy", ts_return_type = "CompactionPlan")]
pub fn plan_compaction(env: Env, items: Unknown, policy: Option<Unknown>) -> napi::Result<Value> {
  to_napi(
    &env,
    guard(|| {
      let items = from_js(&env, Some(items), "items")?.unwrap_or(Value::Null);
      let policy = parse_policy(from_js(&env, policy, "policy")?.as_ref(), "policy")?;
      let plan = core::plan_compaction(&parse_parts(&items)?, &policy)?;
      serde_json::to_value(&plan).map_err(|e| LoaError::Internal(e.to_string()))
    }),
  )
}

/// Reads the `context_editing` block of the YAML frontmatter of the `SKILL.md` at `path` and
/// applies it to `base` (default: the seed 003 defaults): its settings replace the base's, its
/// `preserve_artifacts` are added. A file without frontmatter or block gives `base` unchanged
/// (`found: false`). Throws `E_IO` if unreadable, `E_NOT_REGULAR_FILE` for a symlink, FIFO,
/// device or directory at `path` (never read through), `E_TOO_LARGE` over 1 MiB, `E_CONFIG_INVALID`
/// with `key` (e.g. `context_editing.clear_targets[1]`) for invalid YAML or values.
#[napi(ts_args_type = "path: string, base?: CompactionPolicy", ts_return_type = "SkillContextPolicy")]
pub fn read_skill_context_policy(env: Env, path: Unknown, base: Option<Unknown>) -> napi::Result<Value> {
  to_napi(
    &env,
    guard(|| {
      let path = PathBuf::from(args::string(path, "path")?);
      let base = parse_policy(from_js(&env, base, "base")?.as_ref(), "base")?;
      let s = core::read_skill_context_policy(&path, &base)?;
      Ok(json!({ "name": s.name, "found": s.found, "policy": policy_to_js(&s.policy), "warnings": s.warnings }))
    }),
  )
}
