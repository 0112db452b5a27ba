//! `planCompaction` and `readSkillContextPolicy`.

use napi::bindgen_prelude::*;
use napi::{sys, Env, Unknown, ValueType};
use napi_derive::napi;

use super::convert::{
  self, arg, js_from, member, opt_object, refuse, string_union, type_of, Bool, Choice, Given, Int, List, Num, Obj, Str,
};
use super::sync;
use crate::compaction::{self as core, ClearTarget as Target, RuntimeSignalsConfig};

string_union! {
  "Kinds of context items context editing may clear."
  ClearTarget <=> Target {
    stale_tool_results = StaleToolResults,
    completed_phase_details = CompletedPhaseDetails,
    superseded_file_reads = SupersededFileReads,
    intermediate_outputs = IntermediateOutputs,
    verbose_debug = VerboseDebug,
  }
}

/// One part of the agent's context, as the runtime tracks it.
#[napi(object, object_to_js = false)]
pub struct ContextPart {
  /// Unique; what the runtime clears by.
  #[napi(ts_type = "string")]
  pub id: Str,
  /// A clear target (`'stale_tool_results'`, `'completed_phase_details'`,
  /// `'superseded_file_reads'`, `'intermediate_outputs'`, `'verbose_debug'`) or any other kind
  /// (`'user_message'`, `'system_prompt'`, ...), which is never cleared.
  #[napi(ts_type = "ClearTarget | (string & {})")]
  pub target: Str,
  #[napi(ts_type = "number")]
  pub tokens: Int,
  /// Conversation turn it belongs to; higher is more recent.
  #[napi(ts_type = "number")]
  pub turn: Int,
  /// Workflow phase, for `completed_phase_details`.
  #[napi(ts_type = "string")]
  pub phase: Option<Option<Str>>,
  /// Artifact it carries (`'trajectory_events'`, `'test_results'`, ...).
  #[napi(ts_type = "string")]
  pub artifact: Option<Option<Str>>,
}

impl From<ContextPart> for core::ContextPart {
  fn from(p: ContextPart) -> core::ContextPart {
    core::ContextPart {
      id: p.id.0,
      target: p.target.0,
      tokens: p.tokens.0,
      turn: p.turn.0,
      phase: p.phase.given(),
      artifact: p.artifact.given(),
    }
  }
}

/// The names of the runtime signals, as `RuntimeSignalsConfig` (declared with the
/// configuration's types) has them; a name not given keeps its default.
pub struct Signals(RuntimeSignalsConfig);

impl FromNapiValue for Signals {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    if type_of(env, value)? != ValueType::Object {
      return Err(refuse("must be an object"));
    }
    let d = RuntimeSignalsConfig::default();
    let near = member::<Str>(env, value, "RuntimeSignalsConfig", c"contextNearLimit")?;
    let complete = member::<Str>(env, value, "RuntimeSignalsConfig", c"compactionComplete")?;
    Ok(Signals(RuntimeSignalsConfig {
      context_near_limit: near.map_or(d.context_near_limit, |s| s.0),
      compaction_complete: complete.map_or(d.compaction_complete, |s| s.0),
    }))
  }
}

impl ToNapiValue for Signals {
  unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
    let env = Env::from_raw(env);
    let mut object = Object::new(&env)?;
    object.set_named_property("contextNearLimit", val.0.context_near_limit)?;
    object.set_named_property("compactionComplete", val.0.compaction_complete)?;
    Ok(object.raw())
  }
}

/// Policy of `planCompaction`. Every field is optional (defaults from seed 003), and
/// `{ ...loadConfig(dir).config.contextEditing }` is a valid policy.
#[napi(object)]
pub struct CompactionPolicy {
  /// When false nothing is cleared. Default true.
  #[napi(ts_type = "boolean")]
  pub enabled: Option<Option<Bool>>,
  /// Default 200000.
  #[napi(ts_type = "number")]
  pub context_window_tokens: Option<Option<Int>>,
  /// Clear until usage is below this percentage of the window, in (0, 100]. Default 80.
  #[napi(ts_type = "number")]
  pub compact_threshold_percent: Option<Option<Num>>,
  /// Parts of this many most recent turns are never cleared. Default 5.
  #[napi(ts_type = "number")]
  pub preserve_recent_turns: Option<Option<Int>>,
  /// What may be cleared, first cleared first. Default: seed 003's five in its order.
  #[napi(ts_type = "ClearTarget[]")]
  pub clear_targets: Option<Option<List<Choice<ClearTarget>>>>,
  /// Never cleared. Seed 003's five (`trajectory_events`, `quality_gate_results`,
  /// `decision_records`, `notes_session_continuity`, `active_beads`) always are.
  #[napi(ts_type = "Array<string>")]
  pub preserve_artifacts: Option<Option<List<Str>>>,
  /// Phases whose details may be cleared once completed. Default initialization,
  /// implementation, testing.
  #[napi(ts_type = "Array<string>")]
  pub clear_after_phases: Option<Option<List<Str>>>,
  /// Phases the workflow has completed. Default none.
  #[napi(ts_type = "Array<string>")]
  pub completed_phases: Option<Option<List<Str>>>,
  /// The current turn; default (or `null`) the highest turn among the parts.
  #[napi(ts_type = "number | null")]
  pub current_turn: Option<Option<Int>>,
  /// Signal names. Default `CONTEXT_NEAR_LIMIT` / `COMPACTION_COMPLETE`.
  #[napi(ts_type = "RuntimeSignalsConfig")]
  pub runtime_signals: Option<Option<Signals>>,
}

impl From<CompactionPolicy> for core::CompactionPolicy {
  fn from(p: CompactionPolicy) -> core::CompactionPolicy {
    let d = core::CompactionPolicy::default();
    core::CompactionPolicy {
      enabled: p.enabled.given().unwrap_or(d.enabled),
      context_window_tokens: p.context_window_tokens.given().unwrap_or(d.context_window_tokens),
      compact_threshold_percent: p.compact_threshold_percent.given().unwrap_or(d.compact_threshold_percent),
      preserve_recent_turns: p.preserve_recent_turns.given().unwrap_or(d.preserve_recent_turns),
      clear_targets: p.clear_targets.given().map_or(d.clear_targets, |t: Vec<Target>| Target::first_mentions(t)),
      preserve_artifacts: p.preserve_artifacts.given().unwrap_or(d.preserve_artifacts),
      clear_after_phases: p.clear_after_phases.given().unwrap_or(d.clear_after_phases),
      completed_phases: p.completed_phases.given().unwrap_or(d.completed_phases),
      current_turn: p.current_turn.given().or(d.current_turn),
      runtime_signals: p.runtime_signals.flatten().map_or(d.runtime_signals, |s| s.0),
    }
  }
}

/// Every field set (`Required<CompactionPolicy>`; `currentTurn` is `null` when unset).
impl From<core::CompactionPolicy> for CompactionPolicy {
  fn from(p: core::CompactionPolicy) -> CompactionPolicy {
    let names = |l: Vec<String>| Some(Some(List(l.into_iter().map(Str).collect())));
    CompactionPolicy {
      enabled: Some(Some(Bool(p.enabled))),
      context_window_tokens: Some(Some(Int(p.context_window_tokens))),
      compact_threshold_percent: Some(Some(Num(p.compact_threshold_percent))),
      preserve_recent_turns: Some(Some(Int(p.preserve_recent_turns))),
      clear_targets: Some(Some(List(p.clear_targets.into_iter().map(|t| Choice(t.into())).collect()))),
      preserve_artifacts: names(p.preserve_artifacts),
      clear_after_phases: names(p.clear_after_phases),
      completed_phases: names(p.completed_phases),
      current_turn: Some(p.current_turn.map(Int)),
      runtime_signals: Some(Some(Signals(p.runtime_signals))),
    }
  }
}

/// A part to clear.
#[napi(object, object_from_js = false)]
pub struct CompactionStep {
  pub id: String,
  pub target: String,
  pub tokens: f64,
  pub turn: f64,
}

/// A part that is never cleared under the policy, and why.
#[napi(object, object_from_js = false)]
pub struct CompactionKeptPart {
  pub id: String,
  pub tokens: f64,
  #[napi(ts_type = "'preserved_artifact' | 'recent_turn' | 'not_a_clear_target' | 'phase_not_completed'")]
  pub reason: String,
}

/// What `planCompaction` decided.
#[napi(object, object_from_js = false, use_nullable = true)]
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
  pub signal: Option<String>,
  /// Every part that can never be cleared under this policy, in input order.
  pub protected: Vec<CompactionKeptPart>,
  pub protected_tokens: f64,
  /// One line for a human.
  pub message: String,
}

js_from!(|s: core::ClearStep| CompactionStep { id, target, tokens: f64, turn: f64 });

js_from!(|k: core::KeptPart| CompactionKeptPart { id, tokens: f64, reason = k.reason.as_str().to_string() });

js_from!(|p: core::CompactionPlan| CompactionPlan {
  clear => each,
  tokens_before: f64,
  tokens_freed: f64,
  tokens_after: f64,
  threshold_tokens: f64,
  needed,
  under_threshold,
  signal,
  protected => each,
  protected_tokens: f64,
  message,
});

/// What `readSkillContextPolicy` found.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct SkillContextPolicy {
  /// The skill's `name` from its frontmatter.
  pub name: Option<String>,
  /// Whether the frontmatter has a `context_editing` block.
  pub found: bool,
  /// The base policy with the block applied: its settings replace the base's, its
  /// `preserve_artifacts` are added to the base's.
  #[napi(ts_type = "Required<CompactionPolicy>")]
  pub policy: CompactionPolicy,
  /// Unknown keys in the block, repeated targets.
  pub warnings: Vec<String>,
}

js_from!(|s: core::SkillContextPolicy| SkillContextPolicy { name, found, policy => into, warnings });

/// Plans which parts of the context to clear, in order, to get below the compaction threshold
/// (default 80 % of a 200K window): clear targets in the policy's priority order (stale tool
/// results first), oldest turn first. Never clears a preserved artifact or a part of the
/// `preserveRecentTurns` most recent turns, even if the context then stays over the threshold
/// (`underThreshold: false`, signal `CONTEXT_NEAR_LIMIT`). Throws `E_INVALID_ARGUMENT` for a
/// repeated id or an invalid field (named, e.g. `items[3].tokens`).
#[napi(ts_args_type = "items: ContextPart[], policy?: CompactionPolicy")]
pub fn plan_compaction(env: Env, items: Unknown, policy: Option<Unknown>) -> napi::Result<CompactionPlan> {
  sync(&env, || {
    let parts: Vec<core::ContextPart> =
      arg::<List<Obj<ContextPart>>>(items, "items")?.0.into_iter().map(|p| p.0.into()).collect();
    core::plan_compaction(&parts, &opt_object::<CompactionPolicy, _>(policy, "policy")?)
  })
  .map(Into::into)
}

/// Reads the `context_editing` block of the YAML frontmatter of the `SKILL.md` at `path` and
/// applies it to `base` (default: the seed 003 defaults): its settings replace the base's, its
/// `preserve_artifacts` are added. A file without frontmatter or block gives `base` unchanged
/// (`found: false`). Throws `E_IO` if unreadable, `E_NOT_REGULAR_FILE` for a symlink, FIFO,
/// device or directory at `path` (never read through), `E_TOO_LARGE` over 1 MiB, `E_CONFIG_INVALID`
/// with `key` (e.g. `context_editing.clear_targets[1]`) for invalid YAML or values.
#[napi(ts_args_type = "path: string, base?: CompactionPolicy")]
pub fn read_skill_context_policy(env: Env, path: Unknown, base: Option<Unknown>) -> napi::Result<SkillContextPolicy> {
  sync(&env, || {
    core::read_skill_context_policy(&convert::path(path, "path")?, &opt_object::<CompactionPolicy, _>(base, "base")?)
  })
  .map(Into::into)
}
