//! Quality gates: which agent output is worth remembering.
//!
//! One set of six gates (SPEC.md, replacing the originals' four conflicting sets), run in this
//! order, every one of them, each reporting pass/fail and a reason:
//!
//! 1. `temporal`: older than `max_age_ms` (when set) fails.
//! 2. `speculation`: hedged statements ("might", "maybe", "I think", "not sure", ...) pass only
//!    with confidence >= `speculation_min_confidence`.
//! 3. `instruction`: user instructions and preferences ("always", "never", "prefer", "remember
//!    that", ...) are kept: the gate always passes, tags them `instruction` and boosts the score.
//! 4. `confidence`: below `min_confidence` fails.
//! 5. `content`: too short, filler ("ok", "thanks") or repetitive fails.
//! 6. `duplicate`: the same normalised content as a stored memory (full sha256) fails.
//!
//! Matching is by whole words over a tokenisation of the text (letters, digits and inner
//! apostrophes), never by substring: "install" does not contain the word "all", and "mighty" does
//! not contain "might". Phrases match as consecutive words.
//!
//! A candidate without a confidence counts as [`DEFAULT_CONFIDENCE`] (0.6): enough for the
//! confidence gate, not enough for a hedged statement.

use std::collections::HashSet;

use sha2::{Digest, Sha256};

use crate::error::{invalid, Result};
use crate::settings::{count, fraction, positive};

/// The six gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Gate {
  Temporal,
  Speculation,
  Instruction,
  Confidence,
  Content,
  Duplicate,
}

impl Gate {
  /// The gates in the order they run.
  pub const ALL: [Gate; 6] =
    [Gate::Temporal, Gate::Speculation, Gate::Instruction, Gate::Confidence, Gate::Content, Gate::Duplicate];

  pub fn as_str(self) -> &'static str {
    match self {
      Gate::Temporal => "temporal",
      Gate::Speculation => "speculation",
      Gate::Instruction => "instruction",
      Gate::Confidence => "confidence",
      Gate::Content => "content",
      Gate::Duplicate => "duplicate",
    }
  }
}
/// Confidence assumed when a candidate gives none.
pub const DEFAULT_CONFIDENCE: f64 = 0.6;
/// Subtracted from the score of a hedged statement (that passed with enough confidence).
pub const SPECULATION_PENALTY: f64 = 0.1;
/// Default score boost of instructions and preferences.
pub const DEFAULT_INSTRUCTION_BOOST: f64 = 0.2;
/// The memory types the pipeline knows.
pub const MEMORY_TYPES: [&str; 5] = ["interaction", "decision", "learning", "error", "milestone"];

/// Hedges: single words and phrases (lower case, as word sequences).
const HEDGES: &[&str] = &[
  "might",
  "maybe",
  "perhaps",
  "possibly",
  "probably",
  "presumably",
  "apparently",
  "seemingly",
  "likely",
  "unsure",
  "uncertain",
  "afaik",
  "iirc",
  "i think",
  "i believe",
  "i guess",
  "i suppose",
  "i assume",
  "not sure",
  "not certain",
  "could be",
  "may be",
  "it seems",
  "seems like",
  "seems to",
  "as far as i know",
  "if i recall",
];

/// Instructions and preferences. Words starting with `prefer` are listed explicitly so that
/// "preferably" (a hedge-like adverb) is not one.
const INSTRUCTIONS: &[&str] = &[
  "always",
  "never",
  "prefer",
  "prefers",
  "preferred",
  "preference",
  "preferences",
  "remember that",
  "remember to",
  "from now on",
  "going forward",
  "make sure to",
  "don't ever",
  "do not ever",
];
const PREFERENCE_WORDS: &[&str] = &["prefer", "prefers", "preferred", "preference", "preferences"];

/// Content that is filler when it consists only of these words and phrases.
const FILLER: &[&str] = &[
  "ok",
  "okay",
  "k",
  "kk",
  "oh",
  "ah",
  "well",
  "yes",
  "yeah",
  "yep",
  "yup",
  "no",
  "nope",
  "sure",
  "thanks",
  "thank you",
  "thx",
  "ty",
  "cheers",
  "great",
  "cool",
  "nice",
  "good",
  "fine",
  "alright",
  "right",
  "perfect",
  "awesome",
  "got it",
  "sounds good",
  "makes sense",
  "no problem",
  "np",
  "you're welcome",
  "welcome",
  "will do",
  "noted",
  "ack",
  "done",
  "hmm",
  "hm",
  "lol",
  "of course",
  "very",
  "so",
  "much",
  "a lot",
  "again",
  "all good",
  "understood",
  "i see",
];

/// Thresholds of the gates (YAML section `memory.quality_gates`; values from SPEC.md).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct GateConfig {
  /// `confidence` gate: candidates with a confidence below this fail. 0..1, default 0.5.
  #[serde(deserialize_with = "fraction")]
  pub min_confidence: f64,
  /// `speculation` gate: hedged statements ("might", "maybe", ...) pass only with at least this
  /// confidence. 0..1, default 0.7.
  #[serde(deserialize_with = "fraction")]
  pub speculation_min_confidence: f64,
  /// `content` gate: content shorter than this many characters (after trimming) fails. Default 10.
  #[serde(deserialize_with = "count")]
  pub min_content_length: u64,
  /// `content` gate: content whose unique-word ratio is below this fails as repetitive. 0..1,
  /// default 0.3.
  #[serde(deserialize_with = "fraction")]
  pub repetition_min_unique_ratio: f64,
  /// The repetition check applies only to content with more than this many words. Default 10.
  #[serde(deserialize_with = "count")]
  pub repetition_min_words: u64,
  /// `temporal` gate: candidates older than this many milliseconds fail; `None` (default) turns
  /// the gate off.
  #[serde(deserialize_with = "positive")]
  pub max_age_ms: Option<u64>,
  /// Score boost of instructions and preferences. Not a configuration key.
  #[serde(skip)]
  pub instruction_boost: f64,
}

impl Default for GateConfig {
  fn default() -> Self {
    GateConfig {
      min_confidence: 0.5,
      speculation_min_confidence: 0.7,
      min_content_length: 10,
      repetition_min_unique_ratio: 0.3,
      repetition_min_words: 10,
      max_age_ms: None,
      instruction_boost: DEFAULT_INSTRUCTION_BOOST,
    }
  }
}

/// Threshold overrides of the gates (a caller's `GateOptions`); `None` keeps the base value.
#[derive(Debug, Clone, Default)]
pub struct GateOverrides {
  pub min_confidence: Option<f64>,
  pub speculation_min_confidence: Option<f64>,
  pub min_content_length: Option<u64>,
  pub repetition_min_unique_ratio: Option<f64>,
  pub repetition_min_words: Option<u64>,
  pub max_age_ms: Option<u64>,
  pub instruction_boost: Option<f64>,
}

impl GateOverrides {
  /// `base` with the overridden thresholds replaced (check the result with
  /// [`GateConfig::validate`]).
  pub fn apply(&self, mut base: GateConfig) -> GateConfig {
    base.min_confidence = self.min_confidence.unwrap_or(base.min_confidence);
    base.speculation_min_confidence = self.speculation_min_confidence.unwrap_or(base.speculation_min_confidence);
    base.min_content_length = self.min_content_length.unwrap_or(base.min_content_length);
    base.repetition_min_unique_ratio = self.repetition_min_unique_ratio.unwrap_or(base.repetition_min_unique_ratio);
    base.repetition_min_words = self.repetition_min_words.unwrap_or(base.repetition_min_words);
    base.max_age_ms = self.max_age_ms.or(base.max_age_ms);
    base.instruction_boost = self.instruction_boost.unwrap_or(base.instruction_boost);
    base
  }
}

impl GateConfig {
  pub fn validate(&self) -> Result<()> {
    let fraction = |v: f64, name: &str| {
      if (0.0..=1.0).contains(&v) {
        Ok(())
      } else {
        invalid(format!("`{name}` must be between 0 and 1"))
      }
    };
    fraction(self.min_confidence, "minConfidence")?;
    fraction(self.speculation_min_confidence, "speculationMinConfidence")?;
    fraction(self.repetition_min_unique_ratio, "repetitionMinUniqueRatio")?;
    fraction(self.instruction_boost, "instructionBoost")?;
    if self.max_age_ms == Some(0) {
      return invalid("`maxAgeMs` must be positive (leave it out to turn the temporal gate off)");
    }
    Ok(())
  }
}

/// What the gates look at.
#[derive(Debug, Clone, Default)]
pub struct Candidate {
  pub content: String,
  /// One of [`MEMORY_TYPES`], when known.
  pub memory_type: Option<String>,
  /// 0..1; `None` counts as [`DEFAULT_CONFIDENCE`].
  pub confidence: Option<f64>,
  /// Milliseconds since the epoch (parsed from RFC 3339 by the caller); `None` means now.
  pub timestamp_ms: Option<i64>,
  pub session_id: Option<String>,
  pub tags: Vec<String>,
}

impl Candidate {
  pub fn validate(&self) -> Result<()> {
    if let Some(c) = self.confidence {
      if !(0.0..=1.0).contains(&c) {
        return invalid("`confidence` must be a number between 0 and 1");
      }
    }
    if let Some(t) = &self.memory_type {
      if !MEMORY_TYPES.contains(&t.as_str()) {
        return invalid("`type` must be one of 'interaction', 'decision', 'learning', 'error', 'milestone'");
      }
    }
    Ok(())
  }
}

/// One gate's verdict.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GateResult {
  pub name: Gate,
  pub pass: bool,
  pub reason: String,
}

/// The verdict of all six gates.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
  /// True when every gate passed.
  pub pass: bool,
  /// Importance in 0..1: the confidence (or [`DEFAULT_CONFIDENCE`]), minus
  /// [`SPECULATION_PENALTY`] for hedged statements, plus the instruction boost; rounded to 4
  /// decimals. Reported for rejected candidates too.
  pub score: f64,
  /// Always six, in [`Gate::ALL`] order.
  pub gates: Vec<GateResult>,
  /// The candidate's tags followed by those the gates added (`instruction`, `preference`,
  /// `speculative`), without repeats.
  pub tags: Vec<String>,
}

/// Lower-cased words: runs of letters and digits, with apostrophes inside a word kept (`don't`).
pub fn words(text: &str) -> Vec<String> {
  let mut out = Vec::new();
  let mut current = String::new();
  let chars: Vec<char> = text.chars().map(|c| if c == '\u{2019}' { '\'' } else { c }).collect();
  for (i, &c) in chars.iter().enumerate() {
    let inner_apostrophe = c == '\'' && !current.is_empty() && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
    if c.is_alphanumeric() || inner_apostrophe {
      current.extend(c.to_lowercase());
    } else if !current.is_empty() {
      out.push(std::mem::take(&mut current));
    }
  }
  if !current.is_empty() {
    out.push(current);
  }
  out
}

/// The phrases of `list` that occur in `tokens` as whole words, in list order.
fn find_phrases<'a>(tokens: &[String], list: &[&'a str]) -> Vec<&'a str> {
  list
    .iter()
    .copied()
    .filter(|phrase| {
      let parts: Vec<&str> = phrase.split(' ').collect();
      tokens.windows(parts.len()).any(|w| w.iter().zip(&parts).all(|(a, b)| a == b))
    })
    .collect()
}

/// True when the tokens consist only of filler words and phrases.
fn is_filler(tokens: &[String]) -> bool {
  if tokens.is_empty() {
    return true;
  }
  let phrases: Vec<Vec<&str>> = FILLER.iter().map(|p| p.split(' ').collect()).collect();
  let mut at = 0;
  'outer: while at < tokens.len() {
    for parts in &phrases {
      let end = at + parts.len();
      if end <= tokens.len() && tokens[at..end].iter().zip(parts).all(|(a, b)| a == b) {
        at = end;
        continue 'outer;
      }
    }
    return false;
  }
  true
}

/// The normal form used for duplicate detection: lower case, whitespace runs collapsed to one
/// space, trimmed, trailing `.`, `!` and `?` removed.
pub fn normalize_content(content: &str) -> String {
  let lowered = content.to_lowercase();
  let collapsed = lowered.split_whitespace().collect::<Vec<_>>().join(" ");
  collapsed.trim_end_matches(['.', '!', '?']).trim_end().to_string()
}

/// Full sha256 (hex) of the normalised content: the key of the duplicate gate and the id of a
/// stored memory.
pub fn content_hash(content: &str) -> String {
  hex::encode(Sha256::digest(normalize_content(content).as_bytes()))
}

fn quoted(list: &[&str]) -> String {
  list.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(", ")
}

fn round4(v: f64) -> f64 {
  (v * 10_000.0).round() / 10_000.0
}

/// [`evaluate`] with `config` checked, against a list of stored memories' [`content_hash`]es
/// (compared without regard to case), at `now` (RFC 3339; default the current time).
pub fn evaluate_against(
  candidate: &Candidate,
  config: &GateConfig,
  known_hashes: &[String],
  now: Option<&str>,
) -> Result<Evaluation> {
  config.validate()?;
  let known: HashSet<String> = known_hashes.iter().map(|h| h.to_ascii_lowercase()).collect();
  let now = now.map_or_else(|| Ok(crate::timestamp::now_ms()), |t| crate::timestamp::parse_rfc3339_ms(t, "now"))?;
  Ok(evaluate(candidate, config, &|h| known.contains(h), now))
}

/// Runs all six gates. `is_known(hash)` says whether a memory with that content hash is stored;
/// `now_ms` is the reference time of the temporal gate.
pub fn evaluate(
  candidate: &Candidate,
  config: &GateConfig,
  is_known: &dyn Fn(&str) -> bool,
  now_ms: i64,
) -> Evaluation {
  let tokens = words(&candidate.content);
  let confidence = candidate.confidence.unwrap_or(DEFAULT_CONFIDENCE);
  let confidence_text = if candidate.confidence.is_some() {
    format!("confidence {confidence}")
  } else {
    format!("no confidence given (counts as {DEFAULT_CONFIDENCE})")
  };
  let mut gates = Vec::with_capacity(6);
  let mut added_tags: Vec<&str> = Vec::new();

  // 1. temporal
  gates.push(match (config.max_age_ms, candidate.timestamp_ms) {
    (None, _) => GateResult { name: Gate::Temporal, pass: true, reason: "no maximum age set".into() },
    (Some(_), None) => GateResult { name: Gate::Temporal, pass: true, reason: "no timestamp: taken as now".into() },
    (Some(max), Some(ts)) => {
      let age = now_ms - ts;
      if age > max as i64 {
        GateResult { name: Gate::Temporal, pass: false, reason: format!("{age} ms old, over maxAgeMs {max}") }
      } else if age < 0 {
        GateResult { name: Gate::Temporal, pass: true, reason: format!("{} ms in the future", -age) }
      } else {
        GateResult { name: Gate::Temporal, pass: true, reason: format!("{age} ms old, within maxAgeMs {max}") }
      }
    }
  });

  // 2. speculation
  let hedges = find_phrases(&tokens, HEDGES);
  gates.push(if hedges.is_empty() {
    GateResult { name: Gate::Speculation, pass: true, reason: "no hedging words".into() }
  } else {
    added_tags.push("speculative");
    let pass = confidence >= config.speculation_min_confidence;
    let verdict = if pass { "at least" } else { "below" };
    GateResult {
      name: Gate::Speculation,
      pass,
      reason: format!(
        "hedged ({}); {confidence_text} is {verdict} {}",
        quoted(&hedges),
        config.speculation_min_confidence
      ),
    }
  });

  // 3. instruction
  let instructions = find_phrases(&tokens, INSTRUCTIONS);
  gates.push(if instructions.is_empty() {
    GateResult { name: Gate::Instruction, pass: true, reason: "no instruction or preference".into() }
  } else {
    added_tags.push("instruction");
    if instructions.iter().any(|w| PREFERENCE_WORDS.contains(w)) {
      added_tags.push("preference");
    }
    GateResult {
      name: Gate::Instruction,
      pass: true,
      reason: format!(
        "instruction or preference ({}): kept, tagged, score +{}",
        quoted(&instructions),
        config.instruction_boost
      ),
    }
  });

  // 4. confidence
  gates.push(GateResult {
    name: Gate::Confidence,
    pass: confidence >= config.min_confidence,
    reason: format!(
      "{confidence_text} is {} {}",
      if confidence >= config.min_confidence { "at least" } else { "below" },
      config.min_confidence
    ),
  });

  // 5. content
  let length = candidate.content.trim().chars().count() as u64;
  let unique = tokens.iter().collect::<HashSet<_>>().len();
  let ratio = if tokens.is_empty() { 0.0 } else { unique as f64 / tokens.len() as f64 };
  gates.push(if length < config.min_content_length {
    GateResult {
      name: Gate::Content,
      pass: false,
      reason: format!("too short: {length} characters after trimming, fewer than {}", config.min_content_length),
    }
  } else if is_filler(&tokens) {
    GateResult { name: Gate::Content, pass: false, reason: "filler: only acknowledgements and pleasantries".into() }
  } else if tokens.len() as u64 > config.repetition_min_words && ratio < config.repetition_min_unique_ratio {
    GateResult {
      name: Gate::Content,
      pass: false,
      reason: format!(
        "repetitive: {unique} unique of {} words (ratio {:.2}, below {})",
        tokens.len(),
        ratio,
        config.repetition_min_unique_ratio
      ),
    }
  } else {
    GateResult {
      name: Gate::Content,
      pass: true,
      reason: format!("{length} characters, {} words, unique-word ratio {:.2}", tokens.len(), ratio),
    }
  });

  // 6. duplicate
  let hash = content_hash(&candidate.content);
  gates.push(if is_known(&hash) {
    GateResult {
      name: Gate::Duplicate,
      pass: false,
      reason: format!("same normalised content as stored memory {}", &hash[..12]),
    }
  } else {
    GateResult { name: Gate::Duplicate, pass: true, reason: "no stored memory has the same normalised content".into() }
  });

  let mut score = confidence;
  if !hedges.is_empty() {
    score -= SPECULATION_PENALTY;
  }
  if !instructions.is_empty() {
    score += config.instruction_boost;
  }
  let mut tags: Vec<String> = Vec::new();
  for tag in candidate.tags.iter().map(String::as_str).chain(added_tags) {
    if !tags.iter().any(|t| t == tag) {
      tags.push(tag.to_string());
    }
  }
  Evaluation { pass: gates.iter().all(|g| g.pass), score: round4(score.clamp(0.0, 1.0)), gates, tags }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn cand(content: &str) -> Candidate {
    Candidate { content: content.into(), ..Default::default() }
  }
  fn run(c: &Candidate) -> Evaluation {
    evaluate(c, &GateConfig::default(), &|_| false, 1_000_000)
  }
  fn gate<'a>(e: &'a Evaluation, name: &str) -> &'a GateResult {
    e.gates.iter().find(|g| g.name.as_str() == name).unwrap()
  }

  #[test]
  fn all_six_run_in_order_and_all_reasons_are_reported() {
    let c = Candidate { content: "ok".into(), confidence: Some(0.1), ..Default::default() };
    let e = evaluate(&c, &GateConfig { max_age_ms: Some(10), ..Default::default() }, &|_| true, 1_000_000);
    assert_eq!(e.gates.iter().map(|g| g.name).collect::<Vec<_>>(), Gate::ALL);
    assert!(!e.pass);
    // Several gates fail at once, and every one says why.
    assert!(!gate(&e, "confidence").pass && !gate(&e, "content").pass && !gate(&e, "duplicate").pass);
    assert!(e.gates.iter().all(|g| !g.reason.is_empty()));
  }

  #[test]
  fn known_hashes_match_without_regard_to_case_and_now_is_parsed() {
    let c = cand("The deploy script needs the staging token refreshed weekly");
    let known = [content_hash(&c.content).to_ascii_uppercase()];
    let e = evaluate_against(&c, &GateConfig::default(), &known, Some("2026-01-02T10:00:00+02:00")).unwrap();
    assert!(!gate(&e, "duplicate").pass);
    let err = evaluate_against(&c, &GateConfig::default(), &[], Some("yesterday")).unwrap_err();
    assert_eq!(err.code(), "E_INVALID_ARGUMENT");
    let bad = GateConfig { min_confidence: 2.0, ..Default::default() };
    assert_eq!(evaluate_against(&c, &bad, &[], None).unwrap_err().code(), "E_INVALID_ARGUMENT");
  }

  #[test]
  fn words_are_whole() {
    assert_eq!(words("Don’t install it, ALL-right? x2"), vec!["don't", "install", "it", "all", "right", "x2"]);
    // "install" contains the letters "all"; "mighty" contains "might"; neither is the word.
    let e = run(&cand("The mighty installer finished the deployment step"));
    assert!(gate(&e, "speculation").pass);
    assert_eq!(gate(&e, "speculation").reason, "no hedging words");
    let e = run(&cand("Reinstall the package; nevertheless alwaysOn stays"));
    assert_eq!(gate(&e, "instruction").reason, "no instruction or preference");
    assert!(!e.tags.contains(&"instruction".to_string()));
  }

  #[test]
  fn speculation_needs_confidence() {
    let hedged = "The cache might be stale after a deploy";
    let e = run(&cand(hedged));
    assert!(!gate(&e, "speculation").pass, "no confidence counts as 0.6 < 0.7");
    assert!(gate(&e, "speculation").reason.contains("'might'"));
    assert!(e.tags.contains(&"speculative".into()));
    let e = run(&Candidate { confidence: Some(0.7), ..cand(hedged) });
    assert!(gate(&e, "speculation").pass && e.pass);
    let e = run(&Candidate { confidence: Some(0.9), ..cand("I think the retry loop double counts failures") });
    assert!(gate(&e, "speculation").reason.contains("'i think'"));
    assert!(run(&cand("I'm not sure the migration ran on staging")).gates[1].reason.contains("'not sure'"));
    // "think" alone, or "sure" alone, is not a hedge.
    assert!(gate(&run(&cand("Think about making sure tests are green")), "speculation").pass);
  }

  #[test]
  fn instructions_are_kept_tagged_and_boosted() {
    let plain = run(&Candidate { confidence: Some(0.6), ..cand("Use tabs in the Makefile of this repo") });
    let e = run(&Candidate { confidence: Some(0.6), ..cand("Always use tabs in the Makefile of this repo") });
    assert!(e.pass && gate(&e, "instruction").pass);
    assert!(e.tags.contains(&"instruction".into()));
    assert!((e.score - plain.score - DEFAULT_INSTRUCTION_BOOST).abs() < 1e-9, "{} vs {}", e.score, plain.score);
    let e = run(&cand("The user prefers short answers without emoji"));
    assert_eq!(e.tags, vec!["instruction", "preference"]);
    let e = run(&Candidate {
      tags: vec!["style".into(), "instruction".into()],
      ..cand("Remember that deploys happen on Fridays")
    });
    assert_eq!(e.tags, vec!["style", "instruction"]);
    assert!(gate(&e, "instruction").reason.contains("'remember that'"));
    // Never rejected, whatever else happens.
    let e = run(&Candidate { confidence: Some(0.0), ..cand("never") });
    assert!(gate(&e, "instruction").pass && !e.pass);
  }

  #[test]
  fn confidence_gate() {
    assert!(
      !gate(&run(&Candidate { confidence: Some(0.49), ..cand("The build takes ten minutes") }), "confidence").pass
    );
    assert!(gate(&run(&Candidate { confidence: Some(0.5), ..cand("The build takes ten minutes") }), "confidence").pass);
    assert!(gate(&run(&cand("The build takes ten minutes")), "confidence").reason.contains("no confidence given"));
  }

  #[test]
  fn content_gate() {
    assert!(gate(&run(&cand("   short    ")), "content").reason.starts_with("too short"));
    assert!(gate(&run(&cand("0123456789")), "content").pass, "exactly 10 characters is enough");
    for filler in ["Thanks so much!", "ok, sounds good, thank you", "Got it. Will do!", "okay okay okay okay"] {
      assert!(gate(&run(&cand(filler)), "content").reason.starts_with("filler"), "{filler}");
    }
    assert!(gate(&run(&cand("Thanks: the staging DB password rotates monthly")), "content").pass);
    let repetitive = "spam spam spam spam spam spam spam spam eggs spam spam";
    assert!(gate(&run(&cand(repetitive)), "content").reason.starts_with("repetitive"));
    // Ten words or fewer are never judged repetitive.
    assert!(gate(&run(&cand("spam spam spam spam spam spam spam spam spam spam")), "content").pass);
  }

  #[test]
  fn duplicate_gate_uses_full_normalised_hash() {
    let stored = content_hash("Deploys  happen on FRIDAYS.");
    assert_eq!(stored.len(), 64);
    assert_eq!(stored, content_hash("deploys happen on fridays"));
    assert_ne!(stored, content_hash("deploys happen on mondays"));
    let known = |h: &str| h == stored;
    let e = evaluate(&cand("Deploys happen on Fridays!"), &GateConfig::default(), &known, 0);
    assert!(!gate(&e, "duplicate").pass);
    assert!(gate(&e, "duplicate").reason.contains(&stored[..12]));
  }

  #[test]
  fn temporal_gate() {
    let config = GateConfig { max_age_ms: Some(1000), ..Default::default() };
    let at = |ts| Candidate { timestamp_ms: Some(ts), ..cand("The build takes ten minutes") };
    assert!(!evaluate(&at(0), &config, &|_| false, 1001).gates[0].pass);
    assert!(evaluate(&at(1), &config, &|_| false, 1001).gates[0].pass);
    assert!(evaluate(&at(5000), &config, &|_| false, 1001).gates[0].reason.contains("future"));
    assert!(evaluate(&at(0), &GateConfig::default(), &|_| false, i64::MAX / 2).gates[0].pass, "off by default");
  }

  #[test]
  fn bad_thresholds_and_candidates_are_invalid() {
    assert!(GateConfig { min_confidence: 1.5, ..Default::default() }.validate().is_err());
    assert!(GateConfig { max_age_ms: Some(0), ..Default::default() }.validate().is_err());
    assert!(Candidate { confidence: Some(-0.1), ..cand("x") }.validate().is_err());
    assert!(Candidate { memory_type: Some("gossip".into()), ..cand("x") }.validate().is_err());
  }
}
