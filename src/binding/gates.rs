//! `evaluateGates` and `contentHash`, plus the argument readers the memory binding shares.

use std::collections::HashSet;

use napi::bindgen_prelude::*;
use napi::{Env, Unknown};
use napi_derive::napi;

use super::args::{self, optional_f64, required_object, wrong};
use super::{guard, to_napi};
use crate::error::Result;
use crate::gates::GateOverrides;
use crate::gates::{self as core, Candidate, GateConfig};

/// The five kinds of memory.
#[napi(string_enum)]
#[allow(non_camel_case_types, dead_code)] // a TypeScript union; values are read as strings
pub enum MemoryType {
  interaction,
  decision,
  learning,
  error,
  milestone,
}

/// The six quality gates, in the order they run.
#[napi(string_enum)]
#[allow(non_camel_case_types, dead_code)] // a TypeScript union; values are written as strings
pub enum GateName {
  temporal,
  speculation,
  instruction,
  confidence,
  content,
  duplicate,
}

/// A memory candidate for `evaluateGates`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field
pub struct GateCandidate {
  pub content: String,
  #[napi(js_name = "type", ts_type = "MemoryType")]
  pub memory_type: Option<String>,
  /// 0..1. Without one the candidate counts as 0.6: enough for the `confidence` gate, not for a
  /// hedged statement.
  pub confidence: Option<f64>,
  /// RFC 3339 with any offset (`2026-01-02T10:00:00+02:00`); used by the `temporal` gate.
  pub timestamp: Option<String>,
  pub session_id: Option<String>,
  pub tags: Option<Vec<String>>,
}

/// Thresholds of the quality gates. Defaults are those of `.loa.config.yaml`
/// (`memory.quality_gates`): 0.5, 0.7, 10, 0.3, 10, no maximum age, boost 0.2.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field
pub struct GateOptions {
  /// `confidence` gate: below this fails. 0..1, default 0.5.
  pub min_confidence: Option<f64>,
  /// `speculation` gate: a hedged statement needs at least this confidence. Default 0.7.
  pub speculation_min_confidence: Option<f64>,
  /// `content` gate: fewer characters than this (after trimming) fails. Default 10.
  pub min_content_length: Option<u32>,
  /// `content` gate: a unique-word ratio below this fails as repetitive. Default 0.3.
  pub repetition_min_unique_ratio: Option<f64>,
  /// The repetition check applies above this many words. Default 10.
  pub repetition_min_words: Option<u32>,
  /// `temporal` gate: older than this fails. Default: no limit (the gate passes).
  pub max_age_ms: Option<f64>,
  /// Added to the score of instructions and preferences. 0..1, default 0.2.
  pub instruction_boost: Option<f64>,
}

/// What the `duplicate` and `temporal` gates of `evaluateGates` compare against (its options are
/// `GateOptions & GateComparisonOptions`).
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field
pub struct GateComparisonOptions {
  /// `contentHash` values of stored memories; the `duplicate` gate fails on a match.
  pub known_hashes: Option<Vec<String>>,
  /// The reference time of the `temporal` gate (RFC 3339). Default: now.
  pub now: Option<String>,
}

/// One gate's verdict.
#[napi(object)]
pub struct GateResult {
  #[napi(ts_type = "GateName")]
  pub name: String,
  pub pass: bool,
  /// Why, in words; reported for passing gates too.
  pub reason: String,
}

/// The verdict of all six gates.
#[napi(object)]
pub struct GateEvaluation {
  /// True when every gate passed.
  pub pass: bool,
  /// Importance 0..1: confidence (0.6 when not given), -0.1 if hedged, + the instruction boost.
  pub score: f64,
  /// Always six, in order: temporal, speculation, instruction, confidence, content, duplicate.
  pub gates: Vec<GateResult>,
  /// The candidate's tags plus `instruction`, `preference`, `speculative` as found.
  pub tags: Vec<String>,
}

pub(crate) fn gate_result_to_js(g: core::GateResult) -> GateResult {
  GateResult { name: g.name, pass: g.pass, reason: g.reason }
}

/// The `GateOptions` fields, as `MemoryStore` and `evaluateGates` both read them.
pub(crate) fn parse_gate_overrides(o: &Object) -> Result<GateOverrides> {
  Ok(GateOverrides {
    min_confidence: optional_f64(o, "minConfidence")?,
    speculation_min_confidence: optional_f64(o, "speculationMinConfidence")?,
    min_content_length: args::optional_u64(o, "minContentLength")?,
    repetition_min_unique_ratio: optional_f64(o, "repetitionMinUniqueRatio")?,
    repetition_min_words: args::optional_u64(o, "repetitionMinWords")?,
    max_age_ms: args::optional_u64(o, "maxAgeMs")?,
    instruction_boost: optional_f64(o, "instructionBoost")?,
  })
}

fn evaluate(candidate: Unknown, options: Option<Unknown>) -> Result<core::Evaluation> {
  // A candidate is only evaluated, never stored: its text is read with a lone surrogate as
  // U+FFFD (`capture`, which stores, refuses one).
  let c = required_object(candidate, "candidate")?;
  let timestamp_ms =
    args::optional_text(&c, "timestamp")?.map(|t| crate::timestamp::parse_rfc3339_ms(&t, "timestamp")).transpose()?;
  let candidate = Candidate {
    content: args::optional_text(&c, "content")?.ok_or_else(|| wrong("content", "a string"))?,
    memory_type: args::optional_text(&c, "type")?,
    confidence: optional_f64(&c, "confidence")?,
    timestamp_ms,
    session_id: args::optional_text(&c, "sessionId")?,
    tags: args::optional_text_array(&c, "tags")?.unwrap_or_default(),
  };
  candidate.validate()?;
  let (mut config, mut known, mut now) = (GateConfig::default(), HashSet::new(), crate::timestamp::now_ms());
  if let Some(o) = args::optional_object(options, "options")? {
    config = parse_gate_overrides(&o)?.apply(config);
    known = args::optional_text_array(&o, "knownHashes")?
      .unwrap_or_default()
      .into_iter()
      .map(|h| h.to_ascii_lowercase())
      .collect();
    if let Some(t) = args::optional_text(&o, "now")? {
      now = crate::timestamp::parse_rfc3339_ms(&t, "now")?;
    }
  }
  config.validate()?;
  Ok(core::evaluate(&candidate, &config, &|h| known.contains(h), now))
}

/// Runs the six quality gates on a memory candidate: temporal, speculation, instruction,
/// confidence, content, duplicate - every one, in that order, each with its reason. Words are
/// matched whole ("install" does not contain "all"). Instructions and preferences ("always",
/// "never", "prefer", "remember that") always pass, are tagged `instruction` and boosted.
/// Throws `E_INVALID_ARGUMENT` for a bad candidate or threshold.
#[napi(ts_args_type = "candidate: GateCandidate, options?: GateOptions & GateComparisonOptions")]
pub fn evaluate_gates(env: Env, candidate: Unknown, options: Option<Unknown>) -> napi::Result<GateEvaluation> {
  let e = to_napi(&env, guard(|| evaluate(candidate, options)))?;
  Ok(GateEvaluation {
    pass: e.pass,
    score: e.score,
    gates: e.gates.into_iter().map(gate_result_to_js).collect(),
    tags: e.tags,
  })
}

/// The key of the `duplicate` gate and the id of a stored memory: full sha256 (hex) of the content
/// lower-cased, with whitespace runs collapsed, trimmed, and trailing `.`, `!`, `?` removed.
#[napi(ts_args_type = "content: string")]
pub fn content_hash(env: Env, content: Unknown) -> napi::Result<String> {
  to_napi(&env, guard(|| Ok(core::content_hash(&args::text(content, "content")?))))
}
