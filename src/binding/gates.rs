//! `evaluateGates` and `contentHash`, and the gate shapes the memory binding shares.

use napi::{Env, Unknown};
use napi_derive::napi;

use super::convert::{arg, js_from, object, opt_object, string_union, Choice, Given, Int, List, Num, Text};
use super::memory::MemoryType;
use super::sync;
use crate::error::{LoaError, Result};
use crate::gates::{self as core, Candidate, Gate, GateConfig, GateOverrides};
use crate::memory::MemoryKind;
use crate::timestamp::parse_rfc3339_ms;

string_union! {
  "The six quality gates, in the order they run."
  GateName <=> Gate {
    temporal = Temporal,
    speculation = Speculation,
    instruction = Instruction,
    confidence = Confidence,
    content = Content,
    duplicate = Duplicate,
  }
}

/// A memory candidate for `evaluateGates`. Its text is only evaluated, never stored: a lone
/// surrogate reads as U+FFFD (`capture`, which stores, refuses one).
#[napi(object, object_to_js = false)]
pub struct GateCandidate {
  #[napi(ts_type = "string")]
  pub content: Text,
  #[napi(js_name = "type", ts_type = "MemoryType")]
  pub memory_type: Option<Option<Choice<MemoryType>>>,
  /// 0..1. Without one the candidate counts as 0.6: enough for the `confidence` gate, not for a
  /// hedged statement.
  #[napi(ts_type = "number")]
  pub confidence: Option<Option<Num>>,
  /// RFC 3339 with any offset (`2026-01-02T10:00:00+02:00`); used by the `temporal` gate.
  #[napi(ts_type = "string")]
  pub timestamp: Option<Option<Text>>,
  #[napi(ts_type = "string")]
  pub session_id: Option<Option<Text>>,
  #[napi(ts_type = "Array<string>")]
  pub tags: Option<Option<List<Text>>>,
}

impl TryFrom<GateCandidate> for Candidate {
  type Error = LoaError;

  fn try_from(c: GateCandidate) -> Result<Candidate> {
    let candidate = Candidate {
      content: c.content.0,
      memory_type: c.memory_type.given().map(|t: MemoryKind| t.as_str().to_string()),
      confidence: c.confidence.given(),
      timestamp_ms: c.timestamp.given().map(|t: String| parse_rfc3339_ms(&t, "timestamp")).transpose()?,
      session_id: c.session_id.given(),
      tags: c.tags.given().unwrap_or_default(),
    };
    candidate.validate()?;
    Ok(candidate)
  }
}

/// Thresholds of the quality gates. Defaults are those of `.loa.config.yaml`
/// (`memory.quality_gates`): 0.5, 0.7, 10, 0.3, 10, no maximum age, boost 0.2.
#[napi(object, object_to_js = false)]
pub struct GateOptions {
  /// `confidence` gate: below this fails. 0..1, default 0.5.
  #[napi(ts_type = "number")]
  pub min_confidence: Option<Option<Num>>,
  /// `speculation` gate: a hedged statement needs at least this confidence. Default 0.7.
  #[napi(ts_type = "number")]
  pub speculation_min_confidence: Option<Option<Num>>,
  /// `content` gate: fewer characters than this (after trimming) fails. Default 10.
  #[napi(ts_type = "number")]
  pub min_content_length: Option<Option<Int>>,
  /// `content` gate: a unique-word ratio below this fails as repetitive. Default 0.3.
  #[napi(ts_type = "number")]
  pub repetition_min_unique_ratio: Option<Option<Num>>,
  /// The repetition check applies above this many words. Default 10.
  #[napi(ts_type = "number")]
  pub repetition_min_words: Option<Option<Int>>,
  /// `temporal` gate: older than this fails. Default: no limit (the gate passes).
  #[napi(ts_type = "number")]
  pub max_age_ms: Option<Option<Int>>,
  /// Added to the score of instructions and preferences. 0..1, default 0.2.
  #[napi(ts_type = "number")]
  pub instruction_boost: Option<Option<Num>>,
}

impl From<GateOptions> for GateOverrides {
  fn from(o: GateOptions) -> GateOverrides {
    GateOverrides {
      min_confidence: o.min_confidence.given(),
      speculation_min_confidence: o.speculation_min_confidence.given(),
      min_content_length: o.min_content_length.given(),
      repetition_min_unique_ratio: o.repetition_min_unique_ratio.given(),
      repetition_min_words: o.repetition_min_words.given(),
      max_age_ms: o.max_age_ms.given(),
      instruction_boost: o.instruction_boost.given(),
    }
  }
}

/// What the `duplicate` and `temporal` gates of `evaluateGates` compare against (its options are
/// `GateOptions & GateComparisonOptions`).
#[napi(object, object_to_js = false)]
pub struct GateComparisonOptions {
  /// `contentHash` values of stored memories; the `duplicate` gate fails on a match.
  #[napi(ts_type = "Array<string>")]
  pub known_hashes: Option<Option<List<Text>>>,
  /// The reference time of the `temporal` gate (RFC 3339). Default: now.
  #[napi(ts_type = "string")]
  pub now: Option<Option<Text>>,
}

/// One gate's verdict.
#[napi(object, object_from_js = false)]
pub struct GateResult {
  pub name: GateName,
  pub pass: bool,
  /// Why, in words; reported for passing gates too.
  pub reason: String,
}

js_from!(|g: core::GateResult| GateResult { name => into, pass, reason });

/// The verdict of all six gates.
#[napi(object, object_from_js = false)]
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

js_from!(|e: core::Evaluation| GateEvaluation { pass, score, gates => each, tags });

/// `(knownHashes, now)`.
impl From<GateComparisonOptions> for (Vec<String>, Option<String>) {
  fn from(c: GateComparisonOptions) -> (Vec<String>, Option<String>) {
    (c.known_hashes.given().unwrap_or_default(), c.now.given())
  }
}

fn evaluate(candidate: Unknown, options: Option<Unknown>) -> Result<core::Evaluation> {
  let candidate: Candidate = object::<GateCandidate, _>(candidate, "candidate")?;
  // One object holds both option shapes; their fields are disjoint, so each is read once.
  let overrides = opt_object::<GateOptions, GateOverrides>(options, "options")?;
  let (known, now) = opt_object::<GateComparisonOptions, (Vec<String>, Option<String>)>(options, "options")?;
  core::evaluate_against(&candidate, &overrides.apply(GateConfig::default()), &known, now.as_deref())
}

/// Runs the six quality gates on a memory candidate: temporal, speculation, instruction,
/// confidence, content, duplicate - every one, in that order, each with its reason. Words are
/// matched whole ("install" does not contain "all"). Instructions and preferences ("always",
/// "never", "prefer", "remember that") always pass, are tagged `instruction` and boosted.
/// Throws `E_INVALID_ARGUMENT` for a bad candidate or threshold.
#[napi(ts_args_type = "candidate: GateCandidate, options?: GateOptions & GateComparisonOptions")]
pub fn evaluate_gates(env: Env, candidate: Unknown, options: Option<Unknown>) -> napi::Result<GateEvaluation> {
  sync(&env, || evaluate(candidate, options)).map(Into::into)
}

/// The key of the `duplicate` gate and the id of a stored memory: full sha256 (hex) of the content
/// lower-cased, with whitespace runs collapsed, trimmed, and trailing `.`, `!`, `?` removed.
#[napi(ts_args_type = "content: string")]
pub fn content_hash(env: Env, content: Unknown) -> napi::Result<String> {
  sync(&env, || Ok(core::content_hash(&arg::<Text>(content, "content")?.0)))
}
