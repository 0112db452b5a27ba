//! Ranking: how a memory's score is made from its words, its age and its kind, and the
//! `explain` that shows each part.
//!
//! ```text
//! score      = min(1, relevance + context) × recency × importance × speaker × period × mood
//!                                                                     (in [0, 1])
//! relevance  = bm25 / bm25_max                                        (in [0, 1))
//! context    = c × (bm25 of the memory before + bm25 of the one after) / bm25_max
//! bm25       = Σ over query terms t in the memory:
//!                idf(t) × tf × (k1 + 1) / (tf + k1 × (1 − b + b × len / avg_len))
//! idf(t)     = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//! bm25_max   = Σ over query terms t that occur in any visible memory: idf(t) × (k1 + 1)
//! recency    = floor + (1 − floor) × 0.5 ^ (age / half_life)          (1 without decay)
//! importance = the weight of the memory's kind, or of `instruction` if tagged so and higher
//! ```
//!
//! BM25 is the Robertson–Spärck Jones ranking function with Lucene's non-negative idf. `N`,
//! `df` and `avg_len` are counted over the memories the query may see (its agent scope), never
//! over other agents' memories, so scores do not leak how common a word is in memories the
//! caller cannot read. `bm25_max` is what a memory would score if it held every query term that
//! exists in the scope infinitely often, so `relevance` is the share of the query's attainable
//! weight a memory holds: 1 is unreachable, a short memory holding the one rare word of a
//! one-word query scores about 0.5. That bounded scale is what `min_score` is compared against.
//!
//! Context: a memory captured right before or after another in the same session (the turns of a
//! conversation), both matching the query, lends it `c` (default 0.25) of its BM25. The answer
//! to "what language is Zoe learning?" is often a turn that never says "language" (`Zoe: Three
//! hundred days of Turkish`, which matches only `zoe`) next to one that does (`A foreign
//! language at last!`), or the reply to a question that asked it.
//! On the development set (`bench/conversations/`) this raised recall@5 by about five points
//! (see `docs/search.md`). Context only reorders what the words found: a memory that holds no
//! query word gets none and is never returned.
//!
//! Speaker: when the query names exactly one speaker of the memories it may see (a capitalised
//! word of the query is a speaker label, `Zoe` for memories written `Zoe: ...`, see
//! [`super::analyze::speaker_label`]), memories that are not that speaker's turns get the factor
//! `other_speaker` (default 0.6): "what did Zoe adopt?" is asked about Zoe's turns, and her name
//! is in half the turns of her conversation, too common for BM25 to weigh it. A query that names
//! two speakers changes nothing; one that names none may point at one with `she` or `he` (see
//! [`super::speaker`]). A turn that speaks only to its listener ("you deserved that trip") is
//! not its speaker's turn here: it is about the other.
//!
//! Period: a query that names a month of a year (`in March 2026`) or a year after `in`
//! (`in 2025`) is asked about that time: memories captured outside it (UTC) get the factor
//! `outside_period` (default 0.5). The words stay query words.
//!
//! Mood ([`super::mood`], for interactions only: a decision or an instruction says what it says
//! whatever its grammar): a memory that only asks ("A live concert! Was the band any good?")
//! gets the factor `only_asks` (default 0.7): it shares the question's words, as a reaction to
//! news does, but a question states nothing, and the answer is in the turn it reacts to. One
//! that voices a wish or plan of its speaker ("I want to see a band live this year") gets
//! `wishes` (default 0.6), unless the query asks about wishes or plans itself: what did not
//! happen yet does not answer what happened. See `docs/search.md` for what each did on the
//! development set.
//!
//! Recency is relative to the `now` the caller passes (never the wall clock, so results are
//! reproducible) and never reaches zero: with the floor, an old memory that matches well still
//! beats a new one that matches poorly, while two that match alike are ordered newest first.
//! Importance puts decisions and instructions above plain observations (interactions).

use crate::error::{invalid, Result};
use crate::memory::MemoryKind;

/// One day in milliseconds.
pub const DAY_MS: u64 = 24 * 60 * 60 * 1000;

/// How scores are made. [`Default`] is what `search` uses unless told otherwise;
/// [`RankConfig::bm25_only`] turns recency and importance off.
#[derive(Debug, Clone, PartialEq)]
pub struct RankConfig {
  /// BM25 term-frequency saturation. Default 1.2.
  pub k1: f64,
  /// BM25 length normalisation (0: none, 1: full). Default 0.75.
  pub b: f64,
  /// Recency decay; `None`: every memory counts as new (factor 1).
  pub recency: Option<Recency>,
  /// Importance by kind; `None`: every memory weighs 1.
  pub importance: Option<ImportanceWeights>,
  /// Share of a neighbour's BM25 (the memory captured right before or after, in the same
  /// session, when both match) added to a memory's, 0 to 1; 0: none. Default 0.25.
  pub context: f64,
  /// Factor of a memory that is not the turn of the one speaker the query names, in (0, 1];
  /// 1: speakers are not looked at. Default 0.6.
  pub other_speaker: f64,
  /// Factor of a memory captured outside the month or year the query names, in (0, 1]; 1:
  /// periods are not looked at. Default 0.5.
  pub outside_period: f64,
  /// Factor of a memory that only asks (see [`super::mood::only_asks`]), in (0, 1]; 1: not
  /// looked at. Default 0.7.
  pub only_asks: f64,
  /// Factor of a memory that voices a wish or plan (see [`super::mood::voices_a_wish`]) for a
  /// query that asks about none, in (0, 1]; 1: not looked at. Default 0.6.
  pub wishes: f64,
  /// What a query word counts for in a memory that holds it only as a related word (see
  /// [`super::related`]): the memory counts as holding it `related × similarity` times, 0 to 1;
  /// 0: related words are not looked at. Default 0.5.
  pub related: f64,
  /// What a query word counts for in a memory that holds it only as an is-a word (see
  /// [`super::isa`]: `language` in a memory saying `Turkish`): the memory counts as holding it
  /// this many times, 0 to 1; 0: is-a words are not looked at. Default 0.5.
  pub isa: f64,
}

impl Default for RankConfig {
  fn default() -> Self {
    RankConfig {
      k1: 1.2,
      b: 0.75,
      recency: Some(Recency::default()),
      importance: Some(ImportanceWeights::default()),
      context: 0.25,
      other_speaker: 0.6,
      outside_period: 0.5,
      only_asks: 0.7,
      wishes: 0.6,
      related: 0.5,
      isa: 0.5,
    }
  }
}

impl RankConfig {
  /// Plain BM25: no recency decay, no importance weights, no context from neighbours, no
  /// speaker, period or mood factor.
  pub fn bm25_only() -> RankConfig {
    RankConfig {
      recency: None,
      importance: None,
      context: 0.0,
      other_speaker: 1.0,
      outside_period: 1.0,
      only_asks: 1.0,
      wishes: 1.0,
      related: 0.0,
      isa: 0.0,
      ..RankConfig::default()
    }
  }

  /// Checks every value's range (`E_INVALID_ARGUMENT` naming the field).
  pub fn validate(&self) -> Result<()> {
    if !(self.k1.is_finite() && (0.0..=10.0).contains(&self.k1)) {
      return invalid("`k1` must be a number between 0 and 10");
    }
    if !(self.b.is_finite() && (0.0..=1.0).contains(&self.b)) {
      return invalid("`b` must be a number between 0 and 1");
    }
    if !(self.context.is_finite() && (0.0..=1.0).contains(&self.context)) {
      return invalid("`context` must be a number between 0 and 1");
    }
    if !(self.related.is_finite() && (0.0..=1.0).contains(&self.related)) {
      return invalid("`related` must be a number between 0 and 1");
    }
    if !(self.isa.is_finite() && (0.0..=1.0).contains(&self.isa)) {
      return invalid("`isa` must be a number between 0 and 1");
    }
    for (name, factor) in [
      ("otherSpeaker", self.other_speaker),
      ("outsidePeriod", self.outside_period),
      ("onlyAsks", self.only_asks),
      ("wishes", self.wishes),
    ] {
      if !(factor.is_finite() && factor > 0.0 && factor <= 1.0) {
        return invalid(format!("`{name}` must be a number in (0, 1]"));
      }
    }
    if let Some(r) = &self.recency {
      if r.half_life_ms == 0 {
        return invalid("`halfLifeMs` must be positive");
      }
      if !(r.floor.is_finite() && (0.0..=1.0).contains(&r.floor)) {
        return invalid("`recencyFloor` must be a number between 0 and 1");
      }
    }
    if let Some(w) = &self.importance {
      let all = [w.interaction, w.decision, w.learning, w.error, w.milestone, w.instruction];
      if !all.iter().all(|v| v.is_finite() && *v > 0.0 && *v <= 1.0) {
        return invalid("importance weights must be numbers in (0, 1]");
      }
    }
    Ok(())
  }

  /// The inverse document frequency of a term found in `df` of `n` memories.
  pub fn idf(&self, df: u32, n: u32) -> f64 {
    let (df, n) = (f64::from(df), f64::from(n));
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
  }

  /// The BM25 weight of one term occurring `tf` times in a memory of `len` terms, without idf.
  pub fn tf_weight(&self, tf: u32, len: u32, avg_len: f64) -> f64 {
    let tf = f64::from(tf);
    let norm = if avg_len > 0.0 { 1.0 - self.b + self.b * f64::from(len) / avg_len } else { 1.0 };
    tf * (self.k1 + 1.0) / (tf + self.k1 * norm)
  }

  /// [`tf_weight`](Self::tf_weight) of a memory holding the term only as a related word of
  /// this similarity (in hundredths): it counts as `related × similarity` occurrences.
  pub fn related_weight(&self, similarity: u32, len: u32, avg_len: f64) -> f64 {
    let tf = self.related * f64::from(similarity.min(100)) / 100.0;
    let norm = if avg_len > 0.0 { 1.0 - self.b + self.b * f64::from(len) / avg_len } else { 1.0 };
    tf * (self.k1 + 1.0) / (tf + self.k1 * norm)
  }

  /// [`tf_weight`](Self::tf_weight) of a memory holding the term only as an is-a word: it counts
  /// as `isa` occurrences.
  pub fn isa_weight(&self, len: u32, avg_len: f64) -> f64 {
    let tf = self.isa;
    let norm = if avg_len > 0.0 { 1.0 - self.b + self.b * f64::from(len) / avg_len } else { 1.0 };
    tf * (self.k1 + 1.0) / (tf + self.k1 * norm)
  }

  /// The most one term of weight `idf` can add (`tf` → ∞).
  pub fn term_max(&self, idf: f64) -> f64 {
    idf * (self.k1 + 1.0)
  }

  /// The recency factor of a memory written at `timestamp_ms`, seen at `now_ms`.
  pub fn recency(&self, timestamp_ms: i64, now_ms: i64) -> f64 {
    match &self.recency {
      None => 1.0,
      Some(r) => {
        let age = now_ms.saturating_sub(timestamp_ms).max(0) as f64;
        r.floor + (1.0 - r.floor) * 0.5f64.powf(age / r.half_life_ms as f64)
      }
    }
  }

  /// The importance factor of a memory of `kind`, tagged `instruction` or not.
  pub fn importance(&self, kind: MemoryKind, instruction: bool) -> f64 {
    match &self.importance {
      None => 1.0,
      Some(w) => {
        let by_kind = w.of(kind);
        if instruction {
          by_kind.max(w.instruction)
        } else {
          by_kind
        }
      }
    }
  }
}

/// Exponential decay with age, never below `floor`.
#[derive(Debug, Clone, PartialEq)]
pub struct Recency {
  /// Age at which the decaying part has halved. Default 365 days.
  pub half_life_ms: u64,
  /// What a very old memory keeps of its score. Default 0.7.
  pub floor: f64,
}

/// The defaults make recency a tie-breaker, not a filter: a memory a year old keeps 85% of its
/// score, a very old one 70%. Agents are asked about old turns as often as about new ones; on
/// the labelled set (`bench/recall/`) a 30-day half-life with a floor of 0.6 lost more answers
/// that were old than it gained on knowledge updates (see `docs/search.md` for the table).
impl Default for Recency {
  fn default() -> Self {
    Recency { half_life_ms: 365 * DAY_MS, floor: 0.7 }
  }
}

/// Weight of each kind of memory, in (0, 1]. Instructions and decisions are what an agent was
/// told or settled, so they weigh most; interactions (observations of a turn) least.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportanceWeights {
  /// Default 0.8.
  pub interaction: f64,
  /// Default 1.
  pub decision: f64,
  /// Default 0.9.
  pub learning: f64,
  /// Default 0.85.
  pub error: f64,
  /// Default 0.9.
  pub milestone: f64,
  /// Memories the quality gates tagged `instruction` (user instructions and preferences), of
  /// any kind: the higher of this and the kind's weight. Default 1.
  pub instruction: f64,
}

impl Default for ImportanceWeights {
  fn default() -> Self {
    ImportanceWeights { interaction: 0.8, decision: 1.0, learning: 0.9, error: 0.85, milestone: 0.9, instruction: 1.0 }
  }
}

impl ImportanceWeights {
  /// The smallest weight.
  pub fn lowest(&self) -> f64 {
    [self.interaction, self.decision, self.learning, self.error, self.milestone, self.instruction]
      .into_iter()
      .fold(1.0, f64::min)
  }

  pub fn of(&self, kind: MemoryKind) -> f64 {
    match kind {
      MemoryKind::Interaction => self.interaction,
      MemoryKind::Decision => self.decision,
      MemoryKind::Learning => self.learning,
      MemoryKind::Error => self.error,
      MemoryKind::Milestone => self.milestone,
    }
  }
}

/// Why a memory came back: every factor of its score.
#[derive(Debug, Clone, PartialEq)]
pub struct Explain {
  /// The BM25 sum over the matched terms.
  pub bm25: f64,
  /// The query's attainable BM25 (see the module docs); the same for every hit of a query.
  pub bm25_max: f64,
  /// `bm25 / bm25_max`, in [0, 1).
  pub relevance: f64,
  /// The query terms found in the memory, in query order.
  pub matched: Vec<MatchedTerm>,
  /// What its neighbours in its session lent it, on the scale of `relevance` (see the module
  /// docs): `score = min(1, relevance + context) × recency × importance`.
  pub context: f64,
  /// The ids of the neighbours that lent it `context` (none, one or two).
  pub context_from: Vec<String>,
  /// The recency factor, in (0, 1].
  pub recency: f64,
  /// `now - timestamp` in milliseconds (negative for a memory dated after `now`, which counts
  /// as new).
  pub age_ms: i64,
  /// The importance factor, in (0, 1].
  pub importance: f64,
  /// The speaker factor: `other_speaker` when the query names one speaker and this memory is
  /// not that speaker's turn, else 1.
  pub speaker: f64,
  /// The period factor: `outside_period` when the query names a month or year and this memory
  /// was captured outside it, else 1.
  pub period: f64,
  /// The mood factor: `only_asks` when this memory only asks, `wishes` when it voices a wish or
  /// plan and the query asks about none (see [`super::mood`]), else 1.
  pub mood: f64,
}

/// One query term found in a memory.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchedTerm {
  /// The term as indexed (lowercased, stemmed: `deploy`).
  pub term: String,
  /// The query's word it came from (`deployments`).
  pub query_word: String,
  /// Occurrences in the memory.
  pub tf: u32,
  /// Visible memories holding the term.
  pub df: u32,
  pub idf: f64,
  /// This term's part of `bm25`.
  pub bm25: f64,
  /// When the memory holds the term only as a related word (see [`super::related`]): its
  /// similarity, 0 to 1 (`tf` is then 0).
  pub related: Option<f64>,
  /// When the memory holds the term only as an is-a word (see [`super::isa`]): the memory's word
  /// it stands for (`turkish` for the query word `language`; `tf` is then 0). Empty when that
  /// word is unknown to this build's table (an index from damaged bytes).
  pub isa: Option<String>,
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn idf_is_positive_and_falls_with_df() {
    let r = RankConfig::default();
    assert!(r.idf(1, 100) > r.idf(10, 100));
    assert!(r.idf(100, 100) > 0.0);
  }

  #[test]
  fn tf_weight_saturates_and_penalises_length() {
    let r = RankConfig::default();
    assert!((r.tf_weight(1, 10, 10.0) - 1.0).abs() < 1e-12);
    assert!(r.tf_weight(100, 10, 10.0) < r.k1 + 1.0);
    assert!(r.tf_weight(1, 40, 10.0) < r.tf_weight(1, 5, 10.0));
  }

  #[test]
  fn recency_halves_the_decaying_part_and_keeps_the_floor() {
    let r = RankConfig::default();
    let Recency { half_life_ms, floor } = Recency::default();
    let h = half_life_ms as i64;
    assert_eq!(r.recency(1000, 1000), 1.0);
    assert_eq!(r.recency(2000, 1000), 1.0, "a memory from the future counts as new");
    assert!((r.recency(0, h) - (floor + (1.0 - floor) * 0.5)).abs() < 1e-12);
    assert!((r.recency(0, 2 * h) - (floor + (1.0 - floor) * 0.25)).abs() < 1e-12);
    assert!(r.recency(i64::MIN, i64::MAX) >= floor);
    assert_eq!(RankConfig::bm25_only().recency(0, h * 10), 1.0);
  }

  #[test]
  fn instructions_and_decisions_weigh_more_than_interactions() {
    let r = RankConfig::default();
    assert!(r.importance(MemoryKind::Decision, false) > r.importance(MemoryKind::Interaction, false));
    assert!(r.importance(MemoryKind::Interaction, true) > r.importance(MemoryKind::Interaction, false));
    assert_eq!(RankConfig::bm25_only().importance(MemoryKind::Interaction, false), 1.0);
  }

  #[test]
  fn validate_names_the_bad_field() {
    let bad = RankConfig { k1: f64::NAN, ..RankConfig::default() };
    assert!(bad.validate().unwrap_err().to_string().contains("k1"));
    let bad = RankConfig { recency: Some(Recency { half_life_ms: 0, floor: 0.5 }), ..RankConfig::default() };
    assert_eq!(bad.validate().unwrap_err().code(), "E_INVALID_ARGUMENT");
    assert!(RankConfig::default().validate().is_ok());
  }
}
