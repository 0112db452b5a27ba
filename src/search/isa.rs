//! Is-a (hypernym) words, so that a question naming a category finds a memory naming a member:
//! `language` finds `Three hundred days of Turkish`, `sport` finds `the Thursday water polo
//! group`, `bird` finds `A golden eagle crossed the trail`. Related words (see
//! [`super::related`]) cannot bridge these: GloVe puts `turkish` near `greek` and `istanbul`,
//! not near `language`.
//!
//! The table (`isa-words.txt`, made by `scripts/isa-words.mjs` from Princeton WordNet 3.1's noun
//! hierarchy; its licence is in `isa-words.LICENSE`) lists, for about 62,600 noun lemmas of one
//! word or two (`water_polo`), the frequent words among the lemmas of the classes above the
//! lemma's most frequent sense, nearest first, leaving out classes too general to tell anything
//! (measured by how many classes lie below them, not listed by hand); the senses WordNet writes
//! as a name under `+lemma` (see [`lookup_written`]). Packed, 0.65 MB of the library
//! (`build.rs`).
//!
//! The index adds a memory's is-a words as terms of their own (`^` + the term, see [`ISA_MARK`]);
//! a query word that is one of them matches the memory for a share of a real match (see
//! [`super::rank`]). Nothing is computed per query: the table is read once, on first use.

use std::sync::OnceLock;

use super::analyze::Analyzer;
use super::related::TableWords;

/// What starts an is-a term (`^languag`): no text analyses to a term with `^`.
pub const ISA_MARK: char = '^';

/// The table as `build.rs` packs it from `isa-words.txt` (the layout is described there).
const TABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/isa-words.bin"));

#[derive(Default)]
struct Table<'a> {
  /// The lemmas, sorted (their index is the id [`lookup`] gives), each with its list's index.
  lemmas: Vec<(Box<str>, u16)>,
  /// Lists of is-a words, as indexes into `hypernyms`.
  lists: Vec<Vec<u16>>,
  hypernyms: Vec<&'a str>,
}

/// Reads `n` bytes at `*at`, advancing it; `None` past the end.
fn take<'t>(bytes: &'t [u8], at: &mut usize, n: usize) -> Option<&'t [u8]> {
  let slice = bytes.get(*at..at.checked_add(n)?)?;
  *at += n;
  Some(slice)
}

fn parse(bytes: &[u8]) -> Option<Table<'_>> {
  let end = bytes.iter().position(|&b| b == 0)?;
  let hypernyms: Vec<&str> = std::str::from_utf8(&bytes[..end]).ok()?.split_terminator('\n').collect();
  let mut at = end + 1;
  let list_count = u16::from_le_bytes(take(bytes, &mut at, 2)?.try_into().ok()?);
  let mut lists = Vec::with_capacity(usize::from(list_count));
  for _ in 0..list_count {
    let count = take(bytes, &mut at, 1)?[0];
    let ids = take(bytes, &mut at, 2 * usize::from(count))?;
    lists.push(
      ids
        .chunks_exact(2)
        .map(|id| u16::from_le_bytes([id[0], id[1]]))
        .filter(|&id| usize::from(id) < hypernyms.len())
        .collect(),
    );
  }
  let lemma_count = u32::from_le_bytes(take(bytes, &mut at, 4)?.try_into().ok()?);
  // Every lemma takes at least four bytes: the count cannot ask for more than the bytes left.
  let mut lemmas: Vec<(Box<str>, u16)> = Vec::with_capacity((lemma_count as usize).min(bytes.len() / 4));
  let mut previous = String::new();
  for _ in 0..lemma_count {
    let shared = usize::from(take(bytes, &mut at, 1)?[0]);
    let rest_len = bytes.get(at..)?.iter().position(|&b| b == b'\n')?;
    let rest = std::str::from_utf8(take(bytes, &mut at, rest_len)?).ok()?;
    at += 1;
    let list = u16::from_le_bytes(take(bytes, &mut at, 2)?.try_into().ok()?);
    previous.truncate(previous.get(..shared).map_or(0, str::len));
    previous.push_str(rest);
    lemmas.push((previous.as_str().into(), list));
  }
  Some(Table { lemmas, lists, hypernyms })
}

fn table() -> &'static (Table<'static>, TableWords) {
  static PARSED: OnceLock<(Table<'static>, TableWords)> = OnceLock::new();
  PARSED.get_or_init(|| {
    let table = parse(TABLE).unwrap_or_default();
    let words = TableWords::new(table.hypernyms.clone());
    (table, words)
  })
}

/// The is-a words of a lemma (lowercase; two words joined by `_`), nearest first, with the
/// lemma's id (for [`lemma`]); `None` when the table does not hold it.
fn exact(lemma: &str) -> Option<(u32, &'static [u16])> {
  let (t, _) = table();
  let i = t.lemmas.binary_search_by(|(l, _)| l.as_ref().cmp(lemma)).ok()?;
  let list = t.lists.get(usize::from(t.lemmas[i].1))?;
  Some((i as u32, list.as_slice()))
}

/// The is-a words of a word as written (lowercase: `eagles`, `water_polo`), nearest first, as
/// ids for [`term`] and [`hypernym`], with the id of the lemma found: the word itself, or else
/// its singular by the regular English plural (`eagles`, `boxes`, `ponies`), which is what
/// WordNet lists.
pub fn lookup(word: &str) -> Option<(u32, &'static [u16])> {
  exact(word).or_else(|| {
    let singulars = [
      word.strip_suffix("ies").map(|stem| format!("{stem}y")),
      word.strip_suffix("es").map(str::to_string),
      word.strip_suffix('s').filter(|stem| !stem.ends_with('s')).map(str::to_string),
    ];
    singulars.into_iter().flatten().find_map(|s| exact(&s))
  })
}

/// Marks the table's entries of the senses WordNet writes as a name (`+turkish`: `Turkish`).
const NAME_SENSES: char = '+';

/// [`lookup`] for a word as the text writes it (lowercased in `word`). Capitalised inside a
/// sentence (`as_name`), it is read only by the senses WordNet writes the same way and that are
/// not a single person or place: `Turkish` is a language, but `Sam` is no missile (`SAM`),
/// `John` no toilet (`john`) and `Sarah` no wife. Otherwise by its common senses, or else by
/// those (`turkish` typed in lowercase, `Turkish` starting a sentence).
pub fn lookup_written(word: &str, as_name: bool) -> Option<(u32, &'static [u16])> {
  let named = || lookup(&format!("{NAME_SENSES}{word}"));
  if as_name {
    named()
  } else {
    lookup(word).or_else(named)
  }
}

/// The lemma of an id [`lookup`] gave (`water polo` for `water_polo`); `None` for any other
/// number (an index from damaged bytes may hold anything).
pub fn lemma(id: u32) -> Option<String> {
  table().0.lemmas.get(id as usize).map(|(l, _)| l.trim_start_matches(NAME_SENSES).replace('_', " "))
}

/// An is-a word of a list [`lookup`] gave (`language`).
pub fn hypernym(id: u16) -> Option<&'static str> {
  table().1.word(id)
}

/// The term `analyzer` makes of an is-a word of a list [`lookup`] gave (`languag`), computed
/// once per process.
pub fn term(id: u16, analyzer: &Analyzer) -> Option<&'static str> {
  table().1.term(id, analyzer)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn the_table_names_categories_of_members() {
    let above =
      |w: &str| lookup(w).map(|(_, h)| h.iter().filter_map(|&id| hypernym(id)).collect::<Vec<_>>()).unwrap_or_default();
    assert!(above("+turkish").contains(&"language"), "{:?}", above("+turkish"));
    assert!(above("violin").contains(&"instrument"), "{:?}", above("violin"));
    assert!(above("eagles").contains(&"bird"), "{:?}", above("eagles"));
    assert!(above("water_polo").contains(&"sport"), "{:?}", above("water_polo"));
    assert!(above("zzzz").is_empty());
    // A name is read by the senses WordNet writes as a name, and only those.
    let written = |w: &str, as_name: bool| {
      lookup_written(w, as_name)
        .map(|(_, h)| h.iter().filter_map(|&id| hypernym(id)).collect::<Vec<_>>())
        .unwrap_or_default()
    };
    assert!(written("turkish", true).contains(&"language"));
    assert!(written("turkish", false).contains(&"language"), "lowercase falls back to the named senses");
    assert!(written("john", false).contains(&"room"));
    assert!(written("john", true).is_empty(), "{:?}", written("john", true));
    assert!(written("sam", true).is_empty(), "{:?}", written("sam", true));
    assert!(written("sarah", true).is_empty(), "{:?}", written("sarah", true));
    assert!(written("eagle", true).is_empty());
    assert_eq!(lookup_written("turkish", true).and_then(|(id, _)| lemma(id)).as_deref(), Some("turkish"));
    let (id, _) = lookup("eagles").unwrap();
    assert_eq!(lemma(id).as_deref(), Some("eagle"));
    assert_eq!(lemma(lookup("water_polo").unwrap().0).as_deref(), Some("water polo"));
    assert_eq!(lemma(u32::MAX), None);
  }

  #[test]
  fn damaged_tables_read_as_far_as_they_are_whole_and_never_panic() {
    let mut bytes = TABLE.to_vec();
    for cut in [0, 1, 10, bytes.len() / 3, bytes.len() / 2, bytes.len() - 1] {
      let _ = parse(&bytes[..cut]);
    }
    for i in (0..bytes.len()).step_by(bytes.len() / 50 + 1) {
      bytes[i] ^= 0xff;
      let _ = parse(&bytes);
    }
  }
}
