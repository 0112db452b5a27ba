//! The inverted index in memory: for each term, the memories holding it and how often.
//!
//! No I/O here: [`super::SearchIndex`] keeps one of these in step with the files, and tools
//! (the relevance evaluation) use it alone. Adding a memory costs time in its own length only:
//! it gets the next ordinal, so every posting list stays sorted by being appended to. Adding a
//! memory whose id is already indexed replaces it: the old ordinal is marked dead (skipped by
//! every query, counted by nothing) until [`MemoryIndex::compact`] drops it. Removal compacts at
//! once, so that afterwards no term of the removed memory that no other memory holds is left in
//! the vocabulary.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{invalid, LoaError, Result};
use crate::memory::MemoryKind;

use super::analyze::{after_speaker_label, speaker_label, Analyzer, AnalyzerConfig, MAX_TERM_BYTES, SPEAKER_MARK};
use super::base::{BaseParts, MappedBase, Rows};
use super::isa::{self, ISA_MARK};
use super::mood::Mood;
use super::related::{self, RELATED_MARK};
use super::speaker::{label_pronoun_term, speaks_only_to_the_listener};

/// Longest memory text indexed, in bytes (`E_TOO_LARGE` beyond): a memory's content is at most
/// 1 MiB; the rest leaves room for what a caller adds to it (tags).
pub const MAX_DOCUMENT_BYTES: usize = 2 * 1024 * 1024;
/// Longest memory id and agent id, in bytes.
pub const MAX_ID_BYTES: usize = 256;
/// Most distinct terms one memory adds to the index: those it repeats most (the first
/// written among equals). With terms of at most [`super::MAX_TERM_BYTES`], what a capture
/// adds to the vocabulary, the posting lists and the log is bounded whatever the text, so the
/// index's size and the time to open it grow no faster than its memories. Prose of a few
/// thousand words has fewer distinct terms and is indexed whole.
pub const MAX_TERMS_PER_DOCUMENT: usize = 4096;

/// A memory as the index sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
  /// The memory's id (the memory store's is the sha256 of its content). At most
  /// [`MAX_ID_BYTES`].
  pub id: String,
  /// The text searched (redacted content, as stored).
  pub text: String,
  pub kind: MemoryKind,
  /// The agent the memory belongs to; `None`: the whole workspace's.
  pub agent_id: Option<String>,
  /// When it was captured, in milliseconds since the Unix epoch.
  pub timestamp_ms: i64,
  /// Tagged `instruction` by the quality gates (a user instruction or preference).
  pub instruction: bool,
  /// The session it was captured in. Memories captured one after the other in one session (the
  /// turns of a conversation) are each other's context when ranking (see [`super::rank`]);
  /// `None`: no session, no context.
  pub session: Option<String>,
}

impl Document {
  /// The searchable form of a stored memory record.
  pub fn from_record(record: &crate::memory::MemoryRecord) -> Document {
    Document {
      id: record.id.clone(),
      text: record.content.clone(),
      kind: record.kind,
      agent_id: record.agent_id.clone(),
      timestamp_ms: crate::timestamp::parse_rfc3339_ms(&record.timestamp, "timestamp").unwrap_or(0),
      instruction: record.tags.iter().any(|t| t == "instruction"),
      session: Some(record.session_id.clone()),
    }
  }

  /// Checks sizes. Messages name the field, never its value.
  pub fn validate(&self) -> Result<()> {
    if self.id.is_empty() || self.id.len() > MAX_ID_BYTES {
      return invalid(format!("a document `id` must be 1 to {MAX_ID_BYTES} bytes"));
    }
    if self.agent_id.as_ref().is_some_and(|a| a.is_empty() || a.len() > MAX_ID_BYTES) {
      return invalid(format!("`agentId` must be 1 to {MAX_ID_BYTES} bytes"));
    }
    if self.text.len() > MAX_DOCUMENT_BYTES {
      return Err(LoaError::TooLarge {
        what: "document text".into(),
        size: self.text.len() as u64,
        limit: MAX_DOCUMENT_BYTES as u64,
      });
    }
    Ok(())
  }
}

/// A document after analysis: what the index and its log store (terms, never the text).
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyzedDoc {
  pub id: String,
  pub agent_id: Option<String>,
  pub kind: MemoryKind,
  pub instruction: bool,
  /// What its text does: states, asks, wishes (see [`super::mood`]).
  pub mood: Mood,
  pub timestamp_ms: i64,
  /// [`session_tag`] of its session.
  pub session_tag: u16,
  /// Distinct terms with their counts, in first-occurrence order: at most
  /// [`MAX_TERMS_PER_DOCUMENT`], then its speaker label terms (at most three, see
  /// [`super::analyze::speaker_label`], and one for the kind of person it names, see
  /// [`super::speaker`]).
  pub terms: Vec<(String, u32)>,
}

impl AnalyzedDoc {
  /// Validates and analyses `doc`.
  pub fn new(analyzer: &Analyzer, doc: &Document) -> Result<AnalyzedDoc> {
    doc.validate()?;
    let mut slots: FxHashMap<String, usize> = FxHashMap::default();
    let mut terms: Vec<(String, u32)> = Vec::new();
    // Its distinct words of English letters, lowercased, each with whether it is written as a
    // name (capitalised inside a sentence): what related and is-a words are looked up by.
    let mut words: Vec<(String, bool)> = Vec::new();
    // ... and its distinct pairs of such words in a row that the is-a table holds (`water_polo`).
    let mut pairs: Vec<String> = Vec::new();
    let mut pairs_seen: FxHashSet<String> = FxHashSet::default();
    let mut previous: Option<String> = None;
    // The words of a speaker label (`John:`, `Dr. Ada Lima:`) name a person: their related and
    // is-a words would say what the name means as a common noun (`john` a toilet, `ada` an
    // enzyme). The label starts the text, so its words are the first the analyser emits. Its
    // terms are indexed marked as well (at most one each; a term must fit where every term fits,
    // a longer one is left out, not cut: a cut one could name another speaker).
    let label = speaker_label(&doc.text);
    let mut label_left = 0usize;
    let mut marked: Vec<String> = Vec::new();
    if let Some(label) = label {
      analyzer.analyze(label, |term, _| {
        label_left += 1;
        let term = format!("{SPEAKER_MARK}{term}");
        if term.len() <= MAX_TERM_BYTES && !marked.contains(&term) {
          marked.push(term);
        }
      });
      // Whom `she` or `he` in a query may point at (see `speaker`'s module docs).
      marked.extend(label_pronoun_term(label).map(str::to_string));
      // A turn that speaks only to its listener is not its speaker's own account: "A proper
      // holiday, you deserved that trip" does not answer where its speaker went on holiday. It
      // is then no one's turn for the speaker factor (the label's words stay words).
      if speaks_only_to_the_listener(after_speaker_label(&doc.text)) {
        marked.clear();
      }
    }
    // Terms first seen in the label: a later word of the text with the same term is looked up.
    let mut label_terms: FxHashSet<String> = FxHashSet::default();
    analyzer.analyze(&doc.text, |term, surface| {
      let in_label = label_left > 0;
      label_left = label_left.saturating_sub(1);
      let word = (!in_label && surface.len() <= 24 && surface.bytes().all(|b| b.is_ascii_alphabetic()))
        .then(|| surface.to_ascii_lowercase());
      if let (Some(first), Some(second)) = (&previous, &word) {
        let pair = format!("{first}_{second}");
        if pairs_seen.insert(pair.clone()) && isa::lookup(&pair).is_some() {
          pairs.push(pair);
        }
      }
      let new_word = match slots.get(term) {
        Some(&i) => {
          terms[i].1 = terms[i].1.saturating_add(1);
          word.is_some() && label_terms.remove(term)
        }
        None => {
          slots.insert(term.to_string(), terms.len());
          terms.push((term.to_string(), 1));
          if in_label {
            label_terms.insert(term.to_string());
          }
          true
        }
      };
      if new_word {
        if let Some(w) = &word {
          words.push((w.clone(), written_as_name(&doc.text, surface)));
        }
      }
      previous = word;
    });
    keep_most_frequent(&mut terms, MAX_TERMS_PER_DOCUMENT);
    let own: FxHashSet<&str> = terms.iter().map(|(t, _)| t.as_str()).collect();
    let related = related_terms(analyzer, words.iter().map(|(w, _)| w.as_str()), &own);
    let written = pairs.iter().map(|p| (p.as_str(), false)).chain(words.iter().map(|(w, n)| (w.as_str(), *n)));
    let isa = isa_terms(analyzer, written, &own, &related);
    terms.extend(marked.into_iter().map(|t| (t, 1)));
    terms.extend(related);
    terms.extend(isa);
    Ok(AnalyzedDoc {
      id: doc.id.clone(),
      agent_id: doc.agent_id.clone(),
      kind: doc.kind,
      instruction: doc.instruction,
      mood: Mood::of_memory(doc.kind, doc.instruction, &doc.text),
      timestamp_ms: doc.timestamp_ms,
      session_tag: doc.session.as_deref().map_or(0, session_tag),
      terms,
    })
  }

  /// Terms counted with repeats (the BM25 document length); speaker label terms, related words
  /// and is-a words do not count.
  pub fn len(&self) -> u32 {
    self
      .terms
      .iter()
      .filter(|(t, _)| !t.starts_with([SPEAKER_MARK, RELATED_MARK, ISA_MARK]))
      .fold(0u32, |n, (_, tf)| n.saturating_add(*tf))
  }

  pub fn is_empty(&self) -> bool {
    self.terms.is_empty()
  }
}

/// Most related-word terms one memory indexes (the most similar kept).
pub const MAX_RELATED_PER_DOCUMENT: usize = 256;

/// The related-word terms of a memory whose words are `words` and terms `own` (see
/// [`super::related`]): for each word, its [`related::PER_WORD`] nearest related words that
/// analyse to a term the memory does not hold, as `~term` with the highest similarity (in
/// hundredths) in place of a count; sorted by similarity, then term.
fn related_terms<'w>(
  analyzer: &Analyzer,
  words: impl Iterator<Item = &'w str>,
  own: &FxHashSet<&str>,
) -> Vec<(String, u32)> {
  let mut best: FxHashMap<String, u32> = FxHashMap::default();
  for word in words {
    let mut kept = 0;
    for (term, similarity) in related::related(word, analyzer) {
      if kept == related::PER_WORD {
        break;
      }
      let Some(term) = term.filter(|t| !own.contains(t)) else { continue };
      kept += 1;
      let slot = best.entry(format!("{RELATED_MARK}{term}")).or_default();
      *slot = (*slot).max(u32::from(similarity));
    }
  }
  let mut related: Vec<(String, u32)> = best.into_iter().collect();
  related.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
  related.truncate(MAX_RELATED_PER_DOCUMENT);
  related
}

/// Whether `surface`, a word the analyser gave of `text`, is written as a name: capitalised and
/// not the first word of a sentence (nothing before it but spaces, quotes and brackets since the
/// start of the text, a line break or a `.`, `!`, `?`, `:` or `;`). A word of a normalised copy
/// of the text (not a slice of `text`) is taken as not a name.
fn written_as_name(text: &str, surface: &str) -> bool {
  if !surface.starts_with(|c: char| c.is_ascii_uppercase()) {
    return false;
  }
  let (base, at) = (text.as_ptr() as usize, surface.as_ptr() as usize);
  if at < base || at > base + text.len() {
    return false;
  }
  let before = &text[..at - base];
  let kept =
    before.trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '(' | '[' | '*' | '_' | '“' | '‘'));
  if before[kept.len()..].contains('\n') {
    return false;
  }
  !matches!(kept.chars().next_back(), None | Some('.' | '!' | '?' | ':' | ';'))
}

/// Most is-a terms one memory indexes (the nearest kept).
pub const MAX_ISA_PER_DOCUMENT: usize = 64;

/// Is-a terms kept per word of a memory (the nearest).
pub const ISA_PER_WORD: usize = 8;

/// The is-a terms of a memory whose words (and pairs of words, first) are `words`, terms `own`
/// and related-word terms `related` (see [`super::isa`]): for each word, its
/// [`ISA_PER_WORD`] nearest is-a words that analyse to a term the memory holds neither itself nor
/// as a related word (so a memory holds a term one way only), as `^term`. In place of a count,
/// [`isa_code`] of the first word that gave it, so that a hit can say which word it stands for.
/// Sorted nearest first, then by term.
fn isa_terms<'w>(
  analyzer: &Analyzer,
  words: impl Iterator<Item = (&'w str, bool)>,
  own: &FxHashSet<&str>,
  related: &[(String, u32)],
) -> Vec<(String, u32)> {
  let related: FxHashSet<&str> = related.iter().map(|(t, _)| &t[RELATED_MARK.len_utf8()..]).collect();
  let mut found: FxHashMap<String, (usize, u32)> = FxHashMap::default();
  for (word, as_name) in words {
    let Some((id, above)) = isa::lookup_written(word, as_name) else { continue };
    for (rank, term) in above.iter().take(ISA_PER_WORD).map(|&h| isa::term(h, analyzer)).enumerate() {
      let Some(term) = term.filter(|t| !own.contains(t) && !related.contains(t)) else { continue };
      found.entry(format!("{ISA_MARK}{term}")).or_insert((rank, isa_code(id, rank)));
    }
  }
  let mut isa: Vec<(String, (usize, u32))> = found.into_iter().collect();
  isa.sort_unstable_by(|a, b| a.1 .0.cmp(&b.1 .0).then_with(|| a.0.cmp(&b.0)));
  isa.truncate(MAX_ISA_PER_DOCUMENT);
  isa.into_iter().map(|(t, (_, code))| (t, code)).collect()
}

/// What an is-a posting holds in place of a count: the id of the memory's word in the is-a
/// table and how near the is-a word is to it (0: nearest), never 0.
pub(super) fn isa_code(word_id: u32, rank: usize) -> u32 {
  word_id.saturating_mul(ISA_PER_WORD as u32).saturating_add(rank.min(ISA_PER_WORD - 1) as u32).saturating_add(1)
}

/// The word id and nearness [`isa_code`] wrote.
pub(super) fn isa_decode(code: u32) -> (u32, u32) {
  let c = code.saturating_sub(1);
  (c / ISA_PER_WORD as u32, c % ISA_PER_WORD as u32)
}

/// A 16-bit tag of a session id, never 0 (0: no session). Two memories next to each other in
/// capture order are neighbours when their tags are equal: a row has room for 16 bits, not for
/// the id. Two different sessions share a tag with probability 1 in 65,535, and then only their
/// memories captured back to back count as neighbours; that costs a little ranking, never a
/// wrong hit. CRC-32C, so that every process and every version computes the same tag.
pub fn session_tag(session: &str) -> u16 {
  let crc = crc32c::crc32c(session.as_bytes());
  match (crc ^ (crc >> 16)) as u16 {
    0 => 1,
    tag => tag,
  }
}

/// Keeps the `max` terms counted most often (the first seen among equal counts), in their
/// order. The BM25 length of the memory is then that of the terms kept.
fn keep_most_frequent(terms: &mut Vec<(String, u32)>, max: usize) {
  if terms.len() <= max {
    return;
  }
  let mut order: Vec<usize> = (0..terms.len()).collect();
  order.sort_unstable_by(|&a, &b| terms[b].1.cmp(&terms[a].1).then(a.cmp(&b)));
  let mut keep = vec![false; terms.len()];
  for &i in &order[..max] {
    keep[i] = true;
  }
  let mut i = 0;
  terms.retain(|_| {
    i += 1;
    keep[i - 1]
  });
}

/// What [`MemoryIndex::add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddOutcome {
  Added,
  /// A memory with this id was indexed; it was replaced.
  Replaced,
}

/// One memory's slot: what queries filter and rank on.
#[derive(Debug, Clone)]
pub(super) struct Slot {
  pub id: Arc<str>,
  pub timestamp_ms: i64,
  /// Terms counted with repeats.
  pub len: u32,
  /// 0: no agent; otherwise index + 1 into `agents`.
  pub agent: u32,
  pub kind: MemoryKind,
  pub instruction: bool,
  /// What its text does: states, asks, wishes (see [`super::mood`]).
  pub mood: Mood,
  /// [`session_tag`] of its session (0: none).
  pub session_tag: u16,
  pub live: bool,
}

/// The memories of one posting list, sorted by ordinal, with their term counts.
#[derive(Debug, Clone, Default)]
pub(super) struct Postings {
  pub docs: Vec<u32>,
  pub tfs: Vec<u32>,
}

impl Postings {
  pub fn tf_of(&self, doc: u32) -> u32 {
    self.docs.binary_search(&doc).map_or(0, |i| self.tfs[i])
  }
}

/// Count and total length of the live memories of one agent scope (or of memories without an
/// agent): BM25's `N` and average length for a query are sums of these.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ScopeStats {
  pub docs: u32,
  pub len: u64,
}

/// What a query reads of one memory.
#[derive(Debug, Clone, Copy)]
pub(super) struct SlotView {
  pub timestamp_ms: i64,
  pub len: u32,
  pub agent: u32,
  pub kind: MemoryKind,
  pub instruction: bool,
  pub mood: Mood,
  pub live: bool,
}

/// Reads what queries need of each memory, from the base's rows or from memory.
pub(super) struct SlotReader<'a> {
  rows: Option<Rows<'a>>,
  base_len: u32,
  dead: &'a FxHashSet<u32>,
  slots: &'a [Slot],
}

impl SlotReader<'_> {
  #[inline]
  pub fn get(&self, ord: u32) -> Result<SlotView> {
    if let (Some(rows), true) = (&self.rows, ord < self.base_len) {
      let r = rows.get(ord)?;
      return Ok(SlotView {
        timestamp_ms: r.timestamp_ms,
        len: r.len,
        agent: r.agent,
        kind: r.kind,
        instruction: r.instruction,
        mood: r.mood,
        live: self.dead.is_empty() || !self.dead.contains(&ord),
      });
    }
    let s = &self.slots[(ord - self.base_len) as usize];
    Ok(SlotView {
      timestamp_ms: s.timestamp_ms,
      len: s.len,
      agent: s.agent,
      kind: s.kind,
      instruction: s.instruction,
      mood: s.mood,
      live: s.live,
    })
  }

  /// The BM25 length of memory `ord` alone, for a query that filters nothing (no scope, no
  /// kinds, no `since`, no dead memories).
  #[inline]
  pub fn len(&self, ord: u32) -> Result<u32> {
    match &self.rows {
      Some(rows) if ord < self.base_len => rows.len(ord),
      _ => Ok(self.slots[(ord - self.base_len) as usize].len),
    }
  }

  /// The session tag of memory `ord` alone.
  #[inline]
  pub fn session_tag(&self, ord: u32) -> Result<u16> {
    match &self.rows {
      Some(rows) if ord < self.base_len => rows.session_tag(ord),
      _ => Ok(self.slots[(ord - self.base_len) as usize].session_tag),
    }
  }
}

/// An inverted index held in memory (see the module docs), or a delta in memory over a base
/// read in place from its file (what [`super::SearchIndex`] opens): ordinals below the base's
/// count are the base's memories, the rest are `slots`.
#[derive(Debug)]
pub struct MemoryIndex {
  pub(super) analyzer: Analyzer,
  /// The base this index extends; `None`: everything is in memory.
  pub(super) base: Option<Arc<MappedBase>>,
  /// Memories of the base replaced since (dead: skipped by every query, counted by nothing).
  pub(super) base_dead: FxHashSet<u32>,
  /// The memories added over the base (all of them without one), ordinal `base_len() + i`.
  pub(super) slots: Vec<Slot>,
  /// Live memories of `slots` by id (the base's are found in its id map).
  pub(super) by_id: FxHashMap<Arc<str>, u32>,
  pub(super) agents: Vec<Arc<str>>,
  pub(super) agent_ord: FxHashMap<Arc<str>, u32>,
  /// Indexed like `Slot::agent`: 0 is memories without an agent.
  pub(super) stats: Vec<ScopeStats>,
  /// Terms of `slots` (the base's are in its vocabulary); their posting lists hold only
  /// ordinals of `slots`.
  pub(super) term_ord: FxHashMap<Arc<str>, u32>,
  pub(super) terms: Vec<Arc<str>>,
  pub(super) postings: Vec<Postings>,
  /// Slots marked dead by a replacement, not yet compacted away.
  pub(super) dead: u32,
  /// Bytes of memory the memories added since [`MemoryIndex::new`] or
  /// [`over_base`](Self::over_base) hold, as counted by [`insert`](Self::insert): what the
  /// index's log costs once decoded (see [`super::persist::DELTA_HEAP_BYTES`]).
  pub(super) added_heap: usize,
}

/// What [`MemoryIndex::insert`] counts per memory and per posting and new term, beside the
/// bytes of the id and the term: the allocations, map entries and vector slack they bring.
const SLOT_HEAP: usize = std::mem::size_of::<Slot>() + 16 + 32;
const POSTING_HEAP: usize = 16;
const TERM_HEAP: usize = 16 + 16 + 32 + std::mem::size_of::<Postings>() + 2 * 32;

impl MemoryIndex {
  pub fn new(config: AnalyzerConfig) -> MemoryIndex {
    MemoryIndex {
      analyzer: Analyzer::new(config),
      base: None,
      base_dead: FxHashSet::default(),
      slots: Vec::new(),
      by_id: FxHashMap::default(),
      agents: Vec::new(),
      agent_ord: FxHashMap::default(),
      stats: vec![ScopeStats::default()],
      term_ord: FxHashMap::default(),
      terms: Vec::new(),
      postings: Vec::new(),
      dead: 0,
      added_heap: 0,
    }
  }

  pub fn analyzer(&self) -> &Analyzer {
    &self.analyzer
  }

  /// An index over `base`, with nothing added yet: reads nothing but what `base` already has.
  pub(super) fn over_base(config: AnalyzerConfig, base: Arc<MappedBase>) -> MemoryIndex {
    let mut index = MemoryIndex::new(config);
    index.agents = base.agents.clone();
    index.agent_ord = index.agents.iter().enumerate().map(|(i, a)| (a.clone(), i as u32 + 1)).collect();
    index.stats = base.stats.clone();
    index.base = Some(base);
    index
  }

  /// Memories in the base (dead ones included).
  pub(super) fn base_len(&self) -> u32 {
    self.base.as_ref().map_or(0, |b| b.docs)
  }

  /// Slots, dead ones included: one past the highest ordinal.
  pub(super) fn slot_count(&self) -> usize {
    self.base_len() as usize + self.slots.len()
  }

  /// Live memories.
  pub fn len(&self) -> usize {
    self.base_len() as usize - self.base_dead.len() + self.by_id.len()
  }

  pub fn is_empty(&self) -> bool {
    self.len() == 0
  }

  /// Distinct terms in the vocabulary (terms of replaced memories included until compaction).
  pub fn term_count(&self) -> Result<usize> {
    let Some(base) = &self.base else { return Ok(self.terms.len()) };
    let mut n = base.terms as usize;
    for t in &self.terms {
      if !base.has_term(t)? {
        n += 1;
      }
    }
    Ok(n)
  }

  /// Whether a live memory has this id. Damage found in a base read in place is
  /// `E_STATE_CORRUPT`.
  pub fn contains(&self, id: &str) -> Result<bool> {
    self.find(id).map(|o| o.is_some())
  }

  /// The ordinal of the live memory with this id.
  pub(super) fn find(&self, id: &str) -> Result<Option<u32>> {
    if let Some(&ord) = self.by_id.get(id) {
      return Ok(Some(ord));
    }
    let Some(base) = &self.base else { return Ok(None) };
    Ok(base.find(id)?.filter(|ord| !self.base_dead.contains(ord)))
  }

  /// The ids of the live memories, in the order they were added.
  pub fn ids(&self) -> Result<Vec<&str>> {
    let mut out = Vec::with_capacity(self.len());
    if let Some(base) = &self.base {
      for ord in 0..base.docs {
        if !self.base_dead.contains(&ord) {
          out.push(base.id(ord)?);
        }
      }
    }
    out.extend(self.slots.iter().filter(|s| s.live).map(|s| &*s.id));
    Ok(out)
  }

  /// Reads slots in a loop (a query reads one per posting): the base's row table is checked
  /// once here.
  pub(super) fn slot_reader(&self) -> Result<SlotReader<'_>> {
    let rows = match &self.base {
      Some(base) => Some(base.rows()?),
      None => None,
    };
    Ok(SlotReader { rows, base_len: self.base_len(), dead: &self.base_dead, slots: &self.slots })
  }

  /// The id of memory `ord`.
  pub(super) fn slot_id(&self, ord: u32) -> Result<&str> {
    let b = self.base_len();
    match &self.base {
      Some(base) if ord < b => base.id(ord),
      _ => Ok(&self.slots[(ord - b) as usize].id),
    }
  }

  /// The posting list of `term`: the base's, then the memories added over it. A list read
  /// from the base is decoded into a buffer of `spare` (a query's, handed back when it ends), so
  /// that a query does not allocate its lists anew.
  pub(super) fn postings_of(
    &self,
    term: &str,
    spare: &mut Vec<Postings>,
  ) -> Result<Option<std::borrow::Cow<'_, Postings>>> {
    use std::borrow::Cow;
    let added = self.term_ord.get(term).map(|&t| &self.postings[t as usize]);
    let Some(base) = &self.base else { return Ok(added.map(Cow::Borrowed)) };
    let mut list = spare.pop().unwrap_or_default();
    if !base.postings_into(term, &mut list)? {
      spare.push(list);
      return Ok(added.map(Cow::Borrowed));
    }
    if let Some(a) = added {
      list.docs.extend_from_slice(&a.docs);
      list.tfs.extend_from_slice(&a.tfs);
    }
    Ok(Some(Cow::Owned(list)))
  }

  /// Checks every byte of the base this index reads in place (nothing to check without one).
  pub(super) fn verify(&self) -> Result<()> {
    self.base.as_ref().map_or(Ok(()), |b| b.verify())
  }

  /// Reads the whole base into memory, so that the index no longer depends on it: before a
  /// rewrite (compaction, removal). Linear in the size of the index.
  pub(super) fn materialize(&mut self) -> Result<()> {
    let Some(base) = self.base.clone() else { return Ok(()) };
    let mut slots = Vec::with_capacity(base.docs as usize + self.slots.len());
    let mut by_id = FxHashMap::default();
    for ord in 0..base.docs {
      let r = base.row(ord)?;
      let id: Arc<str> = Arc::from(base.id(ord)?);
      let live = !self.base_dead.contains(&ord);
      if live && by_id.insert(id.clone(), ord).is_some() {
        return Err(LoaError::StateCorrupt {
          path: "search-index.base".into(),
          reason: "duplicate memory id; rebuild the index".into(),
        });
      }
      slots.push(Slot {
        id,
        timestamp_ms: r.timestamp_ms,
        len: r.len,
        agent: r.agent,
        kind: r.kind,
        instruction: r.instruction,
        mood: r.mood,
        session_tag: r.session_tag,
        live,
      });
    }
    let mut terms = Vec::new();
    let mut postings = Vec::new();
    let mut term_ord = FxHashMap::default();
    for (term, list) in base.all_postings()? {
      term_ord.insert(term.clone(), terms.len() as u32);
      terms.push(term);
      postings.push(list);
    }
    for (term, added) in std::mem::take(&mut self.terms).into_iter().zip(std::mem::take(&mut self.postings)) {
      match term_ord.get(&term) {
        // Ordinals added over the base all come after the base's.
        Some(&t) => {
          let list: &mut Postings = &mut postings[t as usize];
          list.docs.extend_from_slice(&added.docs);
          list.tfs.extend_from_slice(&added.tfs);
        }
        None => {
          term_ord.insert(term.clone(), terms.len() as u32);
          terms.push(term);
          postings.push(added);
        }
      }
    }
    slots.append(&mut self.slots);
    by_id.extend(self.by_id.drain());
    self.slots = slots;
    self.by_id = by_id;
    self.terms = terms;
    self.postings = postings;
    self.term_ord = term_ord;
    self.base = None;
    self.base_dead.clear();
    Ok(())
  }

  /// Analyses and adds `doc` (replacing a memory with the same id).
  pub fn add(&mut self, doc: &Document) -> Result<AddOutcome> {
    let analyzed = AnalyzedDoc::new(&self.analyzer, doc)?;
    self.insert(&analyzed)
  }

  /// Adds an analysed document (replacing a memory with the same id).
  pub fn insert(&mut self, doc: &AnalyzedDoc) -> Result<AddOutcome> {
    if self.slot_count() >= (u32::MAX - 1) as usize {
      return Err(LoaError::TooLarge {
        what: "search index".into(),
        size: self.slot_count() as u64,
        limit: u64::from(u32::MAX - 1),
      });
    }
    let outcome = match self.find(doc.id.as_str())? {
      Some(old) => {
        self.kill(old)?;
        self.dead += 1;
        AddOutcome::Replaced
      }
      None => AddOutcome::Added,
    };
    let ord = self.slot_count() as u32;
    let agent = match &doc.agent_id {
      None => 0,
      Some(a) => self.intern_agent(a),
    };
    let id: Arc<str> = Arc::from(doc.id.as_str());
    let len = doc.len();
    self.added_heap += SLOT_HEAP + id.len() + doc.terms.len() * POSTING_HEAP;
    for (term, tf) in &doc.terms {
      let t = match self.term_ord.get(term.as_str()) {
        Some(&t) => t,
        None => {
          self.added_heap += TERM_HEAP + term.len();
          let t = self.terms.len() as u32;
          let text: Arc<str> = Arc::from(term.as_str());
          self.term_ord.insert(text.clone(), t);
          self.terms.push(text);
          self.postings.push(Postings::default());
          t
        }
      };
      let list = &mut self.postings[t as usize];
      list.docs.push(ord);
      list.tfs.push(*tf);
    }
    self.by_id.insert(id.clone(), ord);
    self.slots.push(Slot {
      id,
      timestamp_ms: doc.timestamp_ms,
      len,
      agent,
      kind: doc.kind,
      instruction: doc.instruction,
      mood: doc.mood,
      session_tag: doc.session_tag,
      live: true,
    });
    let stats = &mut self.stats[agent as usize];
    stats.docs += 1;
    stats.len += u64::from(len);
    Ok(outcome)
  }

  fn intern_agent(&mut self, agent: &str) -> u32 {
    if let Some(&a) = self.agent_ord.get(agent) {
      return a;
    }
    let name: Arc<str> = Arc::from(agent);
    self.agents.push(name.clone());
    let a = self.agents.len() as u32;
    self.agent_ord.insert(name, a);
    self.stats.push(ScopeStats::default());
    a
  }

  /// Marks a slot dead and takes it out of the id map and the statistics.
  fn kill(&mut self, ord: u32) -> Result<()> {
    let b = self.base_len();
    if ord < b {
      let row = self.base.as_ref().expect("ordinals below base_len are the base's").row(ord)?;
      self.base_dead.insert(ord);
      // Saturating: the statistics of a damaged base must not underflow.
      let stats = &mut self.stats[row.agent as usize];
      stats.docs = stats.docs.saturating_sub(1);
      stats.len = stats.len.saturating_sub(u64::from(row.len));
      return Ok(());
    }
    let slot = &mut self.slots[(ord - b) as usize];
    slot.live = false;
    let stats = &mut self.stats[slot.agent as usize];
    stats.docs -= 1;
    stats.len -= u64::from(slot.len);
    let id = slot.id.clone();
    self.by_id.remove(&id);
    Ok(())
  }

  /// Removes the memories with these ids and compacts, so that no term only they held stays in
  /// the vocabulary. Returns how many were indexed.
  pub fn remove<'a>(&mut self, ids: impl IntoIterator<Item = &'a str>) -> Result<usize> {
    let mut removed = 0;
    for id in ids {
      if let Some(ord) = self.find(id)? {
        self.kill(ord)?;
        self.dead += 1;
        removed += 1;
      }
    }
    if removed > 0 {
      self.compact()?;
    }
    Ok(removed)
  }

  /// True when replaced memories left dead slots behind.
  pub fn has_garbage(&self) -> bool {
    self.dead > 0 || self.stats.iter().skip(1).any(|s| s.docs == 0)
  }

  /// Drops dead slots, the terms only they held, and agents without memories; renumbers what
  /// is left in the same order. Linear in the size of the index (a base read in place is read
  /// into memory first).
  pub fn compact(&mut self) -> Result<()> {
    if !self.has_garbage() {
      return Ok(());
    }
    self.materialize()?;
    let mut new_ord = vec![u32::MAX; self.slots.len()];
    let mut next = 0u32;
    for (i, slot) in self.slots.iter().enumerate() {
      if slot.live {
        new_ord[i] = next;
        next += 1;
      }
    }
    // Agents that still have memories, renumbered.
    let mut agent_map = vec![0u32; self.agents.len() + 1];
    let mut agents = Vec::new();
    let mut stats = vec![self.stats[0]];
    for (i, name) in self.agents.iter().enumerate() {
      if self.stats[i + 1].docs > 0 {
        agents.push(name.clone());
        stats.push(self.stats[i + 1]);
        agent_map[i + 1] = agents.len() as u32;
      }
    }
    let slots: Vec<Slot> = std::mem::take(&mut self.slots)
      .into_iter()
      .filter(|s| s.live)
      .map(|mut s| {
        s.agent = agent_map[s.agent as usize];
        s
      })
      .collect();
    let mut terms = Vec::new();
    let mut postings = Vec::new();
    for (term, list) in std::mem::take(&mut self.terms).into_iter().zip(std::mem::take(&mut self.postings)) {
      let mut kept = Postings::default();
      for (doc, tf) in list.docs.iter().zip(&list.tfs) {
        let to = new_ord[*doc as usize];
        if to != u32::MAX {
          kept.docs.push(to);
          kept.tfs.push(*tf);
        }
      }
      if !kept.docs.is_empty() {
        kept.docs.shrink_to_fit();
        kept.tfs.shrink_to_fit();
        terms.push(term);
        postings.push(kept);
      }
    }
    self.by_id = slots.iter().enumerate().map(|(i, s)| (s.id.clone(), i as u32)).collect();
    self.agent_ord = agents.iter().enumerate().map(|(i, a)| (a.clone(), i as u32 + 1)).collect();
    self.term_ord = terms.iter().enumerate().map(|(i, t)| (Arc::clone(t), i as u32)).collect();
    self.slots = slots;
    self.agents = agents;
    self.stats = stats;
    self.terms = terms;
    self.postings = postings;
    self.dead = 0;
    Ok(())
  }

  /// The analysed form of every memory, for writing the index out (ordinals as they are
  /// after [`compact`](Self::compact)). The index must be held in memory
  /// ([`materialize`](Self::materialize)).
  pub(super) fn parts(&self) -> BaseParts<'_> {
    debug_assert!(self.base.is_none(), "parts() of an index over a base");
    BaseParts {
      agents: &self.agents,
      stats: &self.stats,
      slots: &self.slots,
      terms: &self.terms,
      postings: &self.postings,
    }
  }

  /// Approximate bytes of memory the index holds (posting lists, slots, vocabulary, maps); a
  /// base read in place is not counted: its pages belong to the file (page cache), at most its
  /// size, and only those a query touched.
  pub fn heap_bytes(&self) -> usize {
    let postings: usize = self.postings.iter().map(|p| p.docs.capacity() * 4 + p.tfs.capacity() * 4 + 48).sum();
    let terms: usize = self.terms.iter().map(|t| t.len() + 16 + 24).sum();
    let slots = self.slots.capacity() * std::mem::size_of::<Slot>()
      + self.slots.iter().map(|s| s.id.len() + 16).sum::<usize>()
      + self.by_id.capacity() * 24;
    let agents: usize = self.agents.iter().map(|a| a.len() + 16 + 24).sum::<usize>()
      + self.agent_ord.capacity() * 24
      + self.stats.capacity() * std::mem::size_of::<ScopeStats>();
    postings + terms + slots + agents + self.term_ord.capacity() * 24 + self.base_dead.capacity() * 8
  }
}
