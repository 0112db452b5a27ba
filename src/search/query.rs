//! The query API: what a search is asked ([`SearchOptions`]), how a query is checked and
//! bounded, and what comes back ([`SearchResults`]).
//!
//! A query is literal words, analysed like the memories (see [`super::analyze`]): `.*`, `(a|b)`
//! and every other regex or query-language syntax is punctuation, never an operator. Hostile
//! queries get an answer in time linear in their size:
//!
//! - an empty or blank query is `E_INVALID_ARGUMENT`; one that analyses to no term (only
//!   punctuation or stop words) finds nothing;
//! - a query over [`MAX_QUERY_BYTES`] is `E_TOO_LARGE`;
//! - only the first [`MAX_QUERY_TERMS`] distinct terms are used, in query order (the rest are
//!   counted in [`SearchResults::dropped_terms`]); which terms are kept never depends on the
//!   index, so it cannot reveal anything about memories the caller may not see;
//! - agent ids nobody has used match nothing; option values out of range are
//!   `E_INVALID_ARGUMENT` naming the option, never repeating caller data.
//!
//! Memories are scoped by agent: [`SearchOptions::agents`] is the set of agents whose memories
//! the caller may see (its own, plus those configuration shares with it). Everything BM25
//! counts (`N`, document frequencies, the average length) is counted inside that scope.

use rustc_hash::FxHashSet;

use crate::error::{invalid, LoaError, Result};
use crate::memory::MemoryKind;

use super::analyze::SPEAKER_MARK;
use super::index::{isa_decode, MemoryIndex, Postings, MAX_ID_BYTES};
use super::isa::{self, ISA_MARK};
use super::mood::{asks_about_wishes, Mood};
use super::period::period_in;
use super::rank::{Explain, MatchedTerm, RankConfig};
use super::related::RELATED_MARK;
use super::speaker::{possessive_relations, pronoun_term};

/// Largest query accepted, in bytes (`E_TOO_LARGE` beyond). A prompt used as a query should be
/// cut to its last part by the caller.
pub const MAX_QUERY_BYTES: usize = 32 * 1024;
/// Distinct query terms used; later ones are dropped (and counted).
pub const MAX_QUERY_TERMS: usize = 64;
/// Largest `limit`.
pub const MAX_LIMIT: usize = 1000;
/// `limit` unless told otherwise.
pub const DEFAULT_LIMIT: usize = 10;
/// Most agent ids in one query's scope.
pub const MAX_SCOPE_AGENTS: usize = 1024;

/// What a search is asked besides its words.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOptions {
  /// Most hits returned, 1 to [`MAX_LIMIT`]. Default [`DEFAULT_LIMIT`].
  pub limit: usize,
  /// Hits scoring below this are left out; scores are in [0, 1] (see [`super::rank`]).
  /// Default 0.
  pub min_score: f64,
  /// Only memories of these kinds; `None`: every kind. An empty list is refused.
  pub kinds: Option<Vec<MemoryKind>>,
  /// The agents whose memories are visible; `None`: every memory (for tools that act for the
  /// whole workspace). Unknown ids match nothing.
  pub agents: Option<Vec<String>>,
  /// With `agents` set: whether memories captured without an agent id (the workspace's) are
  /// visible too. Default true.
  pub include_unassigned: bool,
  /// Only memories captured at or after this time (ms since the Unix epoch).
  pub since_ms: Option<i64>,
  /// The time recency is measured from (ms since the Unix epoch). Ranking never reads the clock.
  pub now_ms: i64,
  pub rank: RankConfig,
}

impl SearchOptions {
  /// The defaults, with recency measured from `now_ms`.
  pub fn new(now_ms: i64) -> SearchOptions {
    SearchOptions {
      limit: DEFAULT_LIMIT,
      min_score: 0.0,
      kinds: None,
      agents: None,
      include_unassigned: true,
      since_ms: None,
      now_ms,
      rank: RankConfig::default(),
    }
  }

  /// Checks every option (`E_INVALID_ARGUMENT` / `E_TOO_LARGE` naming the option).
  pub fn validate(&self) -> Result<()> {
    if self.limit == 0 || self.limit > MAX_LIMIT {
      return invalid(format!("`limit` must be an integer from 1 to {MAX_LIMIT}"));
    }
    if !(self.min_score.is_finite() && (0.0..=1.0).contains(&self.min_score)) {
      return invalid("`minScore` must be a number between 0 and 1");
    }
    if self.kinds.as_ref().is_some_and(Vec::is_empty) {
      return invalid("`kinds` must not be empty (leave it out for every kind)");
    }
    if let Some(agents) = &self.agents {
      if agents.len() > MAX_SCOPE_AGENTS {
        return Err(LoaError::TooLarge {
          what: "`agentIds`".into(),
          size: agents.len() as u64,
          limit: MAX_SCOPE_AGENTS as u64,
        });
      }
      if agents.iter().any(|a| a.is_empty() || a.len() > MAX_ID_BYTES) {
        return invalid(format!("each agent id must be 1 to {MAX_ID_BYTES} bytes"));
      }
    }
    self.rank.validate()
  }
}

/// The answer to a search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResults {
  /// Best first: by score, then newer first, then by id.
  pub hits: Vec<SearchHit>,
  /// The query's terms as used (after analysis, distinct, in query order), each with its
  /// frequency in the visible memories.
  pub terms: Vec<QueryTerm>,
  /// Distinct terms beyond [`MAX_QUERY_TERMS`], not used.
  pub dropped_terms: usize,
}

/// One term of the query.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTerm {
  pub term: String,
  pub query_word: String,
  /// Visible memories holding it (0: it matches nothing the caller may see).
  pub df: u32,
  /// 0 when `df` is 0.
  pub idf: f64,
}

/// One memory found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
  pub id: String,
  /// `min(1, relevance + context) × recency × importance × speaker × period`, in [0, 1].
  pub score: f64,
  pub kind: MemoryKind,
  pub agent_id: Option<String>,
  pub timestamp_ms: i64,
  pub explain: Explain,
}

/// Checks the query text's size and content.
pub fn check_query(query: &str) -> Result<()> {
  if query.len() > MAX_QUERY_BYTES {
    return Err(LoaError::TooLarge { what: "query".into(), size: query.len() as u64, limit: MAX_QUERY_BYTES as u64 });
  }
  if query.trim().is_empty() {
    return invalid("`query` must not be empty");
  }
  Ok(())
}

/// Related-word (or is-a) matches of a query term count only while at most one visible memory in
/// this many holds the term as a related word (as an is-a word; see [`super::related`],
/// [`super::isa`]): such a word says little about any of them, and its list is the longest to
/// read. Each kind is counted and dropped on its own.
const RELATED_MAX_SHARE: u64 = 8;

/// ... and always while at most this many do (a small memory has few memories to share them).
const RELATED_ALWAYS: u64 = 64;

/// Whether a query term held as a related (or is-a) word by `derived_df` of the `n` visible
/// memories is too common for those matches to count (see [`RELATED_MAX_SHARE`]).
fn too_common(derived_df: u32, n: u32) -> bool {
  u64::from(derived_df) > (u64::from(n) / RELATED_MAX_SHARE).max(RELATED_ALWAYS)
}

struct Term<'a> {
  term: String,
  query_word: String,
  /// Its posting list, when the term is in the vocabulary.
  list: Option<std::borrow::Cow<'a, Postings>>,
  /// The memories that hold it as a related word (see [`super::related`]), with its
  /// similarity in hundredths in place of a count.
  related: Option<std::borrow::Cow<'a, Postings>>,
  /// The memories that hold it as an is-a word (see [`super::isa`]), with
  /// [`super::index::isa_code`] in place of a count.
  isa: Option<std::borrow::Cow<'a, Postings>>,
  /// Visible memories holding it, as a word, a related word or an is-a word.
  df: u32,
  idf: f64,
}

impl MemoryIndex {
  /// Runs a query (see the module docs).
  pub fn search(&self, query: &str, options: &SearchOptions) -> Result<SearchResults> {
    check_query(query)?;
    options.validate()?;
    let rank = &options.rank;
    let mut scratch = Scratch::take(self.slot_count());

    let mut seen: FxHashSet<String> = FxHashSet::default();
    let mut terms: Vec<Term> = Vec::new();
    let mut dropped = 0usize;
    self.analyzer.analyze(query, |term, surface| {
      if seen.contains(term) {
        return;
      }
      seen.insert(term.to_string());
      if terms.len() == MAX_QUERY_TERMS {
        dropped += 1;
        return;
      }
      terms.push(Term {
        term: term.to_string(),
        query_word: surface.to_string(),
        list: None,
        related: None,
        isa: None,
        df: 0,
        idf: 0.0,
      });
    });
    // Posting lists are read after the analysis: reading one from a base may fail (damage).
    for t in &mut terms {
      t.list = self.postings_of(&t.term, &mut scratch.b.spare)?;
      if options.rank.related > 0.0 {
        t.related = self.postings_of(&format!("{RELATED_MARK}{}", t.term), &mut scratch.b.spare)?;
      }
      if options.rank.isa > 0.0 {
        t.isa = self.postings_of(&format!("{ISA_MARK}{}", t.term), &mut scratch.b.spare)?;
      }
    }

    // The scope: which agent slots are visible, and BM25's collection statistics over them.
    let mut visible = vec![options.agents.is_none(); self.agents.len() + 1];
    if let Some(agents) = &options.agents {
      visible[0] = options.include_unassigned;
      for a in agents {
        if let Some(&ord) = self.agent_ord.get(a.as_str()) {
          visible[ord as usize] = true;
        }
      }
    }
    let (n, total_len) =
      self.stats.iter().zip(&visible).filter(|(_, v)| **v).fold((0u32, 0u64), |(n, l), (s, _)| (n + s.docs, l + s.len));
    let avg_len = if n > 0 { total_len as f64 / f64::from(n) } else { 0.0 };
    let everything = options.agents.is_none() && self.dead == 0;
    let mut kind_ok = [options.kinds.is_none(); 5];
    for k in options.kinds.iter().flatten() {
      kind_ok[kind_index(*k)] = true;
    }
    let since = options.since_ms.unwrap_or(i64::MIN);
    // Nothing to filter: every posting counts and passes, and only its memory's length is read.
    let unfiltered = everything && options.kinds.is_none() && options.since_ms.is_none();
    let slots = self.slot_reader()?;
    let mut bm25_max = 0.0;
    scratch.b.weights.clear();
    scratch.b.weights.resize(WEIGHTS_TF * WEIGHTS_LEN, f64::NAN);
    // Each list is read once: its document frequency in the scope, and the BM25 weight (before
    // idf, which needs the frequency) of each memory that passes every filter. A term's idf
    // depends on its own frequency only, so its weights are added as soon as its list is read;
    // each memory's sum is still made in query-term order, as before.
    for t in &mut terms {
      // A memory holds a term one way only, as a word, a related word or an is-a word: its
      // frequency counts the three lists, and a related or is-a word's weight is
      // `rank.related_weight` or `rank.isa_weight`.
      if unfiltered {
        let own_df = t.list.as_ref().map_or(0, |l| l.docs.len() as u32);
        let mut related_df = t.related.as_ref().map_or(0, |l| l.docs.len() as u32);
        if too_common(related_df, n) {
          scratch.keep(t.related.take());
          related_df = 0;
        }
        let mut isa_df = t.isa.as_ref().map_or(0, |l| l.docs.len() as u32);
        if too_common(isa_df, n) {
          scratch.keep(t.isa.take());
          isa_df = 0;
        }
        t.df = own_df + related_df + isa_df;
        if t.df == 0 {
          continue;
        }
        t.idf = rank.idf(t.df, n);
        bm25_max += rank.term_max(t.idf);
        let Scratch { b } = &mut scratch;
        if let Some(list) = &t.list {
          for (&d, &tf) in list.docs.iter().zip(&list.tfs) {
            let weight = tf_weight(&mut b.weights, rank, tf, slots.len(d)?, avg_len);
            add(&mut b.acc, &mut b.touched, d, t.idf * weight);
          }
        }
        if let Some(list) = &t.related {
          for (&d, &similarity) in list.docs.iter().zip(&list.tfs) {
            let weight = rank.related_weight(similarity, slots.len(d)?, avg_len);
            add(&mut b.acc, &mut b.touched, d, t.idf * weight);
          }
        }
        if let Some(list) = &t.isa {
          for &d in &list.docs {
            let weight = rank.isa_weight(slots.len(d)?, avg_len);
            add(&mut b.acc, &mut b.touched, d, t.idf * weight);
          }
        }
        continue;
      }
      let mut dfs = [0u32; 3];
      // Where each list's memories start in `pending` (the third's end is its length).
      let mut starts = [0usize; 3];
      let Scratch { b } = &mut scratch;
      b.pending.clear();
      for (i, list) in [&t.list, &t.related, &t.isa].into_iter().enumerate() {
        starts[i] = b.pending.len();
        if let Some(list) = list {
          for (&d, &tf) in list.docs.iter().zip(&list.tfs) {
            let s = slots.get(d)?;
            if s.live && visible[s.agent as usize] {
              dfs[i] += 1;
              if kind_ok[kind_index(s.kind)] && s.timestamp_ms >= since {
                let weight = match i {
                  0 => tf_weight(&mut b.weights, rank, tf, s.len, avg_len),
                  1 => rank.related_weight(tf, s.len, avg_len),
                  _ => rank.isa_weight(s.len, avg_len),
                };
                b.pending.push((d, weight));
              }
            }
          }
        }
      }
      // The is-a list is last: dropping it cuts the end, then the related list its middle.
      let dropped_isa = too_common(dfs[2], n);
      if dropped_isa {
        b.pending.truncate(starts[2]);
        dfs[2] = 0;
      }
      let dropped_related = too_common(dfs[1], n);
      if dropped_related {
        b.pending.drain(starts[1]..starts[2].min(b.pending.len()));
        dfs[1] = 0;
      }
      t.df = dfs[0] + dfs[1] + dfs[2];
      if t.df > 0 {
        t.idf = rank.idf(t.df, n);
        bm25_max += rank.term_max(t.idf);
        let idf = t.idf;
        for &(d, weight) in &b.pending {
          add(&mut b.acc, &mut b.touched, d, idf * weight);
        }
      }
      if dropped_related {
        scratch.keep(t.related.take());
      }
      if dropped_isa {
        scratch.keep(t.isa.take());
      }
    }
    let terms_out = |terms: &[Term]| {
      terms
        .iter()
        .map(|t| QueryTerm { term: t.term.clone(), query_word: t.query_word.clone(), df: t.df, idf: t.idf })
        .collect()
    };
    if bm25_max <= 0.0 {
      let terms_used = terms_out(&terms);
      scratch.keep(terms.into_iter().flat_map(|t| [t.list, t.related, t.isa]).flatten());
      return Ok(SearchResults { hits: Vec::new(), terms: terms_used, dropped_terms: dropped });
    }

    // The one speaker the query names, as the posting list of its label term (see
    // `analyze::speaker_label`): only a label some visible memory carries counts.
    let mut speaker: Option<std::borrow::Cow<Postings>> = None;
    if rank.other_speaker < 1.0 {
      let any_visible = |list: &Postings| -> Result<bool> {
        for &d in &list.docs {
          let s = slots.get(d)?;
          if s.live && visible[s.agent as usize] {
            return Ok(true);
          }
        }
        Ok(false)
      };
      let mut named = 0;
      // Only a capitalised query word names someone (`Zoe`, `Zoe's`): `goal` in "what is the
      // goal" is no speaker, even where memories start `Goal: ...`. `Jonas's friend` asks about
      // someone else than Jonas (see `speaker::possessive_relations`).
      let others = possessive_relations(query);
      for t in terms
        .iter()
        .filter(|t| t.query_word.starts_with(char::is_uppercase) && !others.contains(&t.query_word.as_str()))
      {
        let Some(list) = self.postings_of(&format!("{SPEAKER_MARK}{}", t.term), &mut scratch.b.spare)? else {
          continue;
        };
        if any_visible(&list)? {
          named += 1;
          scratch.keep(speaker.replace(list));
        } else {
          scratch.keep(Some(list));
        }
      }
      if named != 1 {
        scratch.keep(speaker.take());
      }
      // A query that names nobody may still point at someone: "what did she adopt?" in a
      // conversation between Mia and Jonas (see `speaker::pronoun_term`).
      if named == 0 {
        if let Some(term) = pronoun_term(query) {
          if let Some(list) = self.postings_of(term, &mut scratch.b.spare)? {
            if any_visible(&list)? {
              speaker = Some(list);
            } else {
              scratch.keep(Some(list));
            }
          }
        }
      }
    }
    let period = if rank.outside_period < 1.0 { period_in(query) } else { None };
    let speaker_factor = |d: u32| match &speaker {
      Some(list) if list.tf_of(d) == 0 => rank.other_speaker,
      _ => 1.0,
    };
    let period_factor = |timestamp_ms: i64| match period {
      Some(p) if !p.contains(timestamp_ms) => rank.outside_period,
      _ => 1.0,
    };
    let wishes = if asks_about_wishes(query) { 1.0 } else { rank.wishes };
    let mood_factor = |mood: Mood| match mood {
      Mood::States => 1.0,
      Mood::Asks => rank.only_asks,
      Mood::Wishes => wishes,
    };

    // Context: each memory that matched lends `rank.context` of its BM25 to the memories
    // captured right before and right after it in the same session (ordinals are capture order)
    // that matched too. Context reorders what the words found; it never brings back a memory
    // that holds none of them. Two visits per matching memory: linear in the matches.
    // Per matching memory, in `touched` order: its BM25 with what its neighbours lend, and who
    // lends. Read from the accumulators; nothing allocated per memory.
    let count = self.slot_count() as u32;
    let Scratch { b } = &mut scratch;
    let (acc, touched, totals) = (&b.acc, &b.touched, &mut b.totals);
    totals.reserve(touched.len());
    for &d in touched {
      let own = acc[d as usize];
      let mut from = [None, None];
      // A memory that matched passed every filter of the query (scope, kinds, `since`, not
      // forgotten): only those lend and receive. Session tags are read only when a neighbour
      // matched.
      let matched =
        [d.checked_sub(1), d.checked_add(1).filter(|&n| n < count)].map(|n| n.filter(|&n| acc[n as usize] > 0.0));
      let tag = if rank.context > 0.0 && matched.iter().any(Option::is_some) { slots.session_tag(d)? } else { 0 };
      if tag != 0 {
        for (i, n) in matched.into_iter().enumerate() {
          if let Some(n) = n {
            if slots.session_tag(n)? == tag {
              from[i] = Some(n);
            }
          }
        }
      }
      let lent: f64 = from.iter().flatten().map(|&n| acc[n as usize]).sum();
      totals.push((own + rank.context * lent, from));
    }

    // Recency and importance only lower a score (both are in (0, 1]), and never below
    // `lowest` times its BM25: a memory whose BM25 is under `lowest` times the limit-th best
    // BM25 cannot make the list, so its factors are never computed.
    let lowest = rank.recency.as_ref().map_or(1.0, |r| r.floor)
      * rank.importance.as_ref().map_or(1.0, |w| w.lowest())
      * if speaker.is_some() { rank.other_speaker } else { 1.0 }
      * if period.is_some() { rank.outside_period } else { 1.0 }
      * rank.only_asks.min(wishes);
    let mut cutoff = options.min_score * bm25_max;
    // The limit-th best BM25 (with context); none when every memory that matched makes the list.
    let mut kth_total = f64::NEG_INFINITY;
    if touched.len() > options.limit {
      let best = &mut b.best;
      best.extend(totals.iter().map(|t| t.0));
      let at = best.len() - options.limit;
      let (_, kth, _) = best.select_nth_unstable_by(at, f64::total_cmp);
      kth_total = *kth;
      cutoff = cutoff.max(kth_total * lowest);
    }
    let candidate = |d: u32, total: f64, from: [Option<u32>; 2]| -> Result<Option<Candidate>> {
      let bm25 = acc[d as usize];
      let s = slots.get(d)?;
      let relevance = (total / bm25_max).min(1.0);
      let score = relevance
        * rank.recency(s.timestamp_ms, options.now_ms)
        * rank.importance(s.kind, s.instruction)
        * speaker_factor(d)
        * period_factor(s.timestamp_ms)
        * mood_factor(s.mood);
      if score < options.min_score {
        return Ok(None);
      }
      let context = (total - bm25) / bm25_max;
      Ok(Some(Candidate { score, bm25, context, from, doc: d, timestamp_ms: s.timestamp_ms }))
    };
    // Best first: by score, then newer first, then by id. Ids are read last, only for the
    // memories that may still make the list: they decide between equal scores and times only.
    let by_score =
      |a: &Candidate, b: &Candidate| b.score.total_cmp(&a.score).then_with(|| b.timestamp_ms.cmp(&a.timestamp_ms));
    // First the memories whose total is at least the limit-th best (at least `limit` of them):
    // the limit-th best of their scores is a bar for the others. A score is its relevance times
    // factors in (0, 1], and a product of doubles by a factor at most 1 never exceeds what it
    // multiplies, so a memory whose relevance is under that bar scores under it too, below
    // `limit` memories already found: it cannot make the list, and its factors are not computed.
    let mut candidates: Vec<Candidate> = Vec::new();
    for (&d, &(total, from)) in touched.iter().zip(totals.iter()) {
      if total >= cutoff && total >= kth_total {
        candidates.extend(candidate(d, total, from)?);
      }
    }
    let mut bar = f64::NEG_INFINITY;
    if candidates.len() >= options.limit {
      candidates.select_nth_unstable_by(options.limit - 1, by_score);
      bar = candidates[options.limit - 1].score;
    }
    for (&d, &(total, from)) in touched.iter().zip(totals.iter()) {
      if total >= cutoff && total < kth_total && (total / bm25_max).min(1.0) >= bar {
        candidates.extend(candidate(d, total, from)?);
      }
    }
    if candidates.len() > options.limit {
      // Those after the limit-th by score and time are after it whatever their ids.
      candidates.select_nth_unstable_by(options.limit - 1, by_score);
      let last = candidates[options.limit - 1];
      candidates.retain(|c| by_score(c, &last).is_le());
    }
    let mut listed = candidates.into_iter().map(|c| Ok((c, self.slot_id(c.doc)?))).collect::<Result<Vec<_>>>()?;
    let order = |a: &(Candidate, &str), b: &(Candidate, &str)| by_score(&a.0, &b.0).then_with(|| a.1.cmp(b.1));
    if listed.len() > options.limit {
      listed.select_nth_unstable_by(options.limit - 1, order);
      listed.truncate(options.limit);
    }
    listed.sort_unstable_by(order);

    let mut hits = Vec::with_capacity(listed.len());
    for (Candidate { score, bm25, context, from, doc: d, .. }, id) in listed {
      let s = slots.get(d)?;
      let context_from = from.iter().flatten().map(|&n| self.slot_id(n).map(str::to_string)).collect::<Result<_>>()?;
      let matched: Vec<MatchedTerm> = terms
        .iter()
        .filter(|t| t.df > 0)
        .filter_map(|t| {
          let tf = t.list.as_ref().map_or(0, |l| l.tf_of(d));
          let similarity = if tf == 0 { t.related.as_ref().map_or(0, |l| l.tf_of(d)) } else { 0 };
          let isa_code = if tf == 0 && similarity == 0 { t.isa.as_ref().map_or(0, |l| l.tf_of(d)) } else { 0 };
          (tf > 0 || similarity > 0 || isa_code > 0).then(|| MatchedTerm {
            term: t.term.clone(),
            query_word: t.query_word.clone(),
            tf,
            df: t.df,
            idf: t.idf,
            bm25: t.idf
              * if tf > 0 {
                rank.tf_weight(tf, s.len, avg_len)
              } else if similarity > 0 {
                rank.related_weight(similarity, s.len, avg_len)
              } else {
                rank.isa_weight(s.len, avg_len)
              },
            related: (similarity > 0).then(|| f64::from(similarity) / 100.0),
            isa: (isa_code > 0).then(|| isa::lemma(isa_decode(isa_code).0).unwrap_or_default()),
          })
        })
        .collect();
      hits.push(SearchHit {
        id: id.to_string(),
        score,
        kind: s.kind,
        agent_id: (s.agent > 0).then(|| self.agents[s.agent as usize - 1].to_string()),
        timestamp_ms: s.timestamp_ms,
        explain: Explain {
          bm25,
          bm25_max,
          relevance: bm25 / bm25_max,
          matched,
          context,
          context_from,
          recency: rank.recency(s.timestamp_ms, options.now_ms),
          age_ms: options.now_ms.saturating_sub(s.timestamp_ms),
          importance: rank.importance(s.kind, s.instruction),
          speaker: speaker_factor(d),
          period: period_factor(s.timestamp_ms),
          mood: mood_factor(s.mood),
        },
      });
    }
    let terms_used = terms_out(&terms);
    scratch.keep(terms.into_iter().flat_map(|t| [t.list, t.related, t.isa]).flatten().chain(speaker));
    Ok(SearchResults { hits, terms: terms_used, dropped_terms: dropped })
  }
}

/// A memory that may make the list, with what ordering it needs but its id.
#[derive(Clone, Copy)]
struct Candidate {
  score: f64,
  bm25: f64,
  /// What its neighbours lent, on the scale of relevance.
  context: f64,
  /// The neighbours that lent (before, after).
  from: [Option<u32>; 2],
  doc: u32,
  timestamp_ms: i64,
}

/// Posting lists decoded from a base kept for the next query of the thread: enough for the
/// words of an ordinary query; each holds at most one posting per memory.
const SPARE_LISTS: usize = 8;

/// What a query works in, kept per thread between queries so that a query allocates and zeroes
/// nothing in proportion to the index or to its posting lists: the score accumulators (one
/// slot per memory; only the slots a query touched are zeroed again), and the buffers of the
/// lists, weights and totals, emptied but not freed.
#[derive(Default)]
struct Buffers {
  acc: Vec<f64>,
  /// Memories with a score, in the order they got it.
  touched: Vec<u32>,
  /// One list's weights before its idf is known.
  pending: Vec<(u32, f64)>,
  /// Per touched memory: its BM25 with context, and who lent it.
  totals: Vec<(f64, [Option<u32>; 2])>,
  best: Vec<f64>,
  spare: Vec<Postings>,
  /// [`tf_weight`]'s memo.
  weights: Vec<f64>,
}

impl Buffers {
  const fn new() -> Buffers {
    Buffers {
      acc: Vec::new(),
      touched: Vec::new(),
      pending: Vec::new(),
      totals: Vec::new(),
      best: Vec::new(),
      spare: Vec::new(),
      weights: Vec::new(),
    }
  }
}

thread_local! {
  static BUFFERS: std::cell::RefCell<Buffers> = const { std::cell::RefCell::new(Buffers::new()) };
}

/// One query's buffers, handed back to the thread (accumulators zeroed) when dropped, also on
/// unwinding and on errors.
struct Scratch {
  b: Buffers,
}

impl Scratch {
  fn take(slots: usize) -> Scratch {
    let mut b = BUFFERS.with(|a| std::mem::take(&mut *a.borrow_mut()));
    if b.acc.len() < slots {
      b.acc.resize(slots, 0.0);
    }
    Scratch { b }
  }

  /// Keeps decoded lists' buffers for the next query.
  fn keep<'a>(&mut self, lists: impl IntoIterator<Item = std::borrow::Cow<'a, Postings>>) {
    for list in lists {
      if let std::borrow::Cow::Owned(list) = list {
        if self.b.spare.len() < SPARE_LISTS {
          self.b.spare.push(list);
        }
      }
    }
  }
}

/// Term counts (1 to this) and memory lengths (below [`WEIGHTS_LEN`]) whose BM25 weights a
/// query remembers.
const WEIGHTS_TF: usize = 4;
const WEIGHTS_LEN: usize = 256;

/// `rank.tf_weight(tf, len, avg_len)`, remembered in `memo` (NaN: not yet known) for the
/// common small counts and lengths: a query reads tens of thousands of postings, and their
/// weights repeat. The same function on the same values, so the same bits.
#[inline]
fn tf_weight(memo: &mut [f64], rank: &RankConfig, tf: u32, len: u32, avg_len: f64) -> f64 {
  let (tf_at, len_at) = (tf as usize, len as usize);
  if tf_at == 0 || tf_at > WEIGHTS_TF || len_at >= WEIGHTS_LEN {
    return rank.tf_weight(tf, len, avg_len);
  }
  let Some(slot) = memo.get_mut((tf_at - 1) * WEIGHTS_LEN + len_at) else { return rank.tf_weight(tf, len, avg_len) };
  if slot.is_nan() {
    *slot = rank.tf_weight(tf, len, avg_len);
  }
  *slot
}

#[inline]
fn add(acc: &mut [f64], touched: &mut Vec<u32>, doc: u32, weight: f64) {
  let slot = &mut acc[doc as usize];
  if *slot == 0.0 {
    touched.push(doc);
  }
  *slot += weight;
}

impl Drop for Scratch {
  fn drop(&mut self) {
    let mut b = std::mem::take(&mut self.b);
    for &d in &b.touched {
      b.acc[d as usize] = 0.0;
    }
    b.touched.clear();
    b.pending.clear();
    b.totals.clear();
    b.best.clear();
    BUFFERS.with(|a| *a.borrow_mut() = b);
  }
}

fn kind_index(kind: MemoryKind) -> usize {
  match kind {
    MemoryKind::Interaction => 0,
    MemoryKind::Decision => 1,
    MemoryKind::Learning => 2,
    MemoryKind::Error => 3,
    MemoryKind::Milestone => 4,
  }
}
