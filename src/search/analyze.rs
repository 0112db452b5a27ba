//! Text analysis: how a memory's text and a query become the terms the index counts.
//!
//! Documents and queries go through the same [`Analyzer`], so a query word matches a memory word
//! exactly when both analyse to the same term. The steps, in order:
//!
//! 1. **NFKC normalisation** (`unicode-normalization`), only when the text is not already NFKC:
//!    composed and decomposed accents, full-width Latin (`ＡＢＣ`) and half-width katakana become
//!    one form.
//! 2. **Word segmentation** by Unicode's default word boundaries, UAX #29
//!    (`unicode-segmentation`): spaces and punctuation separate words, `don't`, `3.14` and
//!    `config.yaml` stay single words.
//! 3. **Scripts written without spaces** (Han, Hiragana, Katakana, Hangul, Bopomofo, Thai, Lao,
//!    Khmer, Myanmar) have no word boundaries UAX #29 can find without a dictionary, so each run
//!    of their characters becomes **overlapping character bigrams** (`東京都` -> `東京`, `京都`; a
//!    run of one character is that character). This is what Lucene's CJK analyser does: no
//!    dictionary to ship, and recall close to a dictionary segmenter for short queries.
//! 4. Other words are split at `_`, `.` and `:` (`snake_case`, `config.yaml`, `std::fs` match
//!    their parts), **lowercased** (full Unicode lowercasing), and typographic apostrophes become
//!    `'`.
//! 5. **Stop words**: a short list of English function words (`the`, `of`, `what`, ...; see
//!    [`is_stop_word`]) is dropped. They carry no meaning a memory can be found by, and they are
//!    the longest posting lists, so dropping them keeps every query fast. `not`, `no`, `never`
//!    and `always` are kept: instructions turn on them.
//! 6. **Stemming** (when enabled, the default): words made of ASCII letters (and apostrophes) go
//!    through the Snowball English stemmer (`rust-stemmers`), so `deployed`, `deploying` and
//!    `deployments` all become `deploy`. Words in other alphabets are kept as lowercased: one
//!    language's stemmer would mangle another's words, and no language detection is attempted.
//!    Numbers and mixed words (`v2`, `e2e`, `2026`) are kept as they are.
//! 7. A term longer than [`MAX_TERM_BYTES`] is cut there (on a character boundary), so a pasted
//!    key or base64 blob cannot make the vocabulary huge; queries are cut the same way.
//!
//! Every step is linear in the text's length.
//!
//! **Speaker labels.** A memory whose text starts like a transcript line, `Name: text` (one to
//! three words of letters before a colon and a space, see [`speaker_label`]), also gets one
//! term per word of its label, written `@` + the term (`@zoe`). No text analyses to a term with
//! `@` (it is punctuation), so a label term is never a word of any memory or query; it does not
//! count in the memory's BM25 length either. The ranking uses it to tell whose turn a memory is
//! when a query names a speaker (see [`super::rank`]).

use std::borrow::Cow;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};
use unicode_segmentation::UnicodeSegmentation;

/// Longest term kept, in bytes (longer ones are cut at a character boundary).
pub const MAX_TERM_BYTES: usize = 64;

/// Version of the analysis steps. Bumped whenever a change would give a different term for any
/// text; an index built by another version is rebuilt, never read with mismatched terms.
/// Version 2: a memory indexes at most `MAX_TERMS_PER_DOCUMENT` distinct terms (an index of
/// version 1 may hold far more for one memory, and is rebuilt so that it no longer does).
/// Version 3: speaker label terms (`@name`, see the module docs).
/// Version 4: related-word terms (`~term`, see [`super::related`]).
/// Version 5: is-a terms (`^term`, see [`super::isa`]); a change of the is-a table changes them
/// too (and the word ids their postings hold), so it bumps this version as well.
/// Version 6: is-a words by how a word is written (a name inside a sentence, see
/// `index::written_as_name`), none for a speaker label; the table gained `+` entries.
/// Version 7: a speaker label whose first name tells a woman or a man also indexes
/// `speaker::FEMALE_SPEAKER` or `speaker::MALE_SPEAKER`.
pub const ANALYZER_VERSION: u32 = 7;

/// What starts a speaker label term (see the module docs).
pub const SPEAKER_MARK: char = '@';

/// Longest speaker label, in bytes, before its colon.
pub const MAX_SPEAKER_LABEL_BYTES: usize = 40;

/// The speaker label `text` starts with, if it reads like a transcript line: at most
/// [`MAX_SPEAKER_LABEL_BYTES`] bytes of one to three capitalised words before the first colon,
/// each word letters (with `.`, `-` or `'` inside: `Dr. Ada`, `Jean-Luc`, `O'Neil`), and the
/// colon followed by a space or the end of the text. `Zoe: hi`, `Ana Lima: ok` and `User: hi`
/// have one; `Standup notes: ...` (a heading, not a name), `10:30 standup`, `https://x` and
/// `Note:x` do not.
pub fn speaker_label(text: &str) -> Option<&str> {
  let head = text.trim_start();
  // Only the first MAX + 1 bytes are looked at: linear in the label, never in the text.
  let colon = head.bytes().take(MAX_SPEAKER_LABEL_BYTES + 1).position(|b| b == b':')?;
  let label = head[..colon].trim_end();
  let after = &head[colon + 1..];
  if label.is_empty() || !(after.is_empty() || after.starts_with(char::is_whitespace)) {
    return None;
  }
  let mut words = 0;
  for word in label.split_whitespace() {
    words += 1;
    let mut chars = word.chars();
    let capital = chars.next().is_some_and(char::is_uppercase);
    if words > 3 || !capital || !chars.all(|c| c.is_alphabetic() || matches!(c, '.' | '-' | '\'' | '’')) {
      return None;
    }
  }
  Some(label)
}

/// What `text` says after its speaker label (see [`speaker_label`]); all of it when it has none.
pub fn after_speaker_label(text: &str) -> &str {
  match speaker_label(text) {
    Some(label) => text.trim_start()[label.len()..].trim_start_matches(|c: char| c == ':' || c.is_whitespace()),
    None => text,
  }
}

/// `word` is `lower` (ASCII lowercase, `'` for an apostrophe), ignoring ASCII case and reading
/// `’` as `'`.
pub fn same_word(word: &str, lower: &str) -> bool {
  let mut a = word.chars().map(|c| if c == '’' { '\'' } else { c.to_ascii_lowercase() });
  let mut b = lower.chars();
  loop {
    match (a.next(), b.next()) {
      (None, None) => return true,
      (Some(x), Some(y)) if x == y => {}
      _ => return false,
    }
  }
}

/// How text is analysed. Recorded in the index files: an index built with other settings is not
/// used (see `docs/search.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnalyzerConfig {
  /// Snowball English stemming of words made of ASCII letters. Default true.
  pub stem: bool,
}

impl Default for AnalyzerConfig {
  fn default() -> Self {
    AnalyzerConfig { stem: true }
  }
}

impl AnalyzerConfig {
  /// The 32-bit id written into the index files: the analyser version and its settings.
  pub fn id(&self) -> u32 {
    (ANALYZER_VERSION << 8) | u32::from(self.stem)
  }
}

/// Turns text into terms (see the module docs).
pub struct Analyzer {
  config: AnalyzerConfig,
  stemmer: Option<Stemmer>,
}

impl std::fmt::Debug for Analyzer {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_struct("Analyzer").field("config", &self.config).finish()
  }
}

impl Analyzer {
  pub fn new(config: AnalyzerConfig) -> Analyzer {
    Analyzer { config, stemmer: config.stem.then(|| Stemmer::create(Algorithm::English)) }
  }

  pub fn config(&self) -> AnalyzerConfig {
    self.config
  }

  /// Calls `emit(term, surface)` for every term of `text`, in text order (repeats included).
  /// `surface` is the normalised text the term came from (a word, a part of one, or a bigram).
  pub fn analyze(&self, text: &str, mut emit: impl FnMut(&str, &str)) {
    let text: Cow<str> = if text.is_ascii() || is_nfkc_quick(text.chars()) == IsNormalized::Yes {
      Cow::Borrowed(text)
    } else {
      Cow::Owned(text.nfkc().collect())
    };
    let mut run = BigramRun::default();
    let mut term = String::new();
    for (start, word) in text.unicode_word_indices() {
      if !run.continues_at(start) {
        run.flush(&mut emit);
      }
      // A word may mix scripts (UAX #29 joins Hangul and Latin letters): split it into pieces
      // that are all in scripts without spaces, or all not.
      let mut piece_start = 0;
      let mut piece_bigram: Option<bool> = None;
      for (i, c) in word.char_indices() {
        let bigram = written_without_spaces(c);
        if piece_bigram.is_some_and(|b| b != bigram) {
          self.piece(
            &word[piece_start..i],
            start + piece_start,
            piece_bigram == Some(true),
            &mut run,
            &mut term,
            &mut emit,
          );
          piece_start = i;
        }
        piece_bigram = Some(bigram);
      }
      self.piece(&word[piece_start..], start + piece_start, piece_bigram == Some(true), &mut run, &mut term, &mut emit);
    }
    run.flush(&mut emit);
  }

  fn piece(
    &self,
    piece: &str,
    at: usize,
    bigram: bool,
    run: &mut BigramRun,
    term: &mut String,
    emit: &mut impl FnMut(&str, &str),
  ) {
    if piece.is_empty() {
      return;
    }
    if bigram {
      if !run.continues_at(at) {
        run.flush(emit);
      }
      for (i, c) in piece.char_indices() {
        run.push(c, at + i, emit);
      }
      return;
    }
    run.flush(emit);
    for part in piece.split(['_', '.', ':']) {
      let part = part.trim_matches(is_apostrophe);
      if part.is_empty() {
        continue;
      }
      self.word(part, term, emit);
    }
  }

  fn word(&self, word: &str, term: &mut String, emit: &mut impl FnMut(&str, &str)) {
    term.clear();
    for c in word.chars() {
      if is_apostrophe(c) {
        term.push('\'');
      } else {
        term.extend(c.to_lowercase());
      }
    }
    if is_stop_word(term) {
      return;
    }
    let stemmable = term.bytes().all(|b| b.is_ascii_lowercase() || b == b'\'');
    match &self.stemmer {
      Some(stemmer) if stemmable => {
        let stemmed = stemmer.stem(term);
        let stemmed = stemmed.trim_matches('\'');
        if !stemmed.is_empty() {
          emit(cut(stemmed), word);
        }
      }
      _ => emit(cut(term), word),
    }
  }
}

/// A run of characters from scripts written without spaces, turned into bigrams as it grows:
/// each character after the first emits the bigram it ends; a run of one character emits that
/// character when flushed.
#[derive(Default)]
struct BigramRun {
  /// The previous character, where it starts, and where the run ends now.
  last: Option<(char, usize)>,
  end: usize,
  len: usize,
  buf: String,
}

impl BigramRun {
  fn continues_at(&self, at: usize) -> bool {
    self.last.is_some() && self.end == at
  }

  fn push(&mut self, c: char, at: usize, emit: &mut impl FnMut(&str, &str)) {
    if let Some((prev, _)) = self.last {
      self.buf.clear();
      self.buf.push(prev);
      self.buf.push(c);
      emit(&self.buf, &self.buf);
    }
    self.last = Some((c, at));
    self.end = at + c.len_utf8();
    self.len += 1;
  }

  fn flush(&mut self, emit: &mut impl FnMut(&str, &str)) {
    if let (Some((c, _)), 1) = (self.last, self.len) {
      self.buf.clear();
      self.buf.push(c);
      emit(&self.buf, &self.buf);
    }
    self.last = None;
    self.len = 0;
  }
}

fn is_apostrophe(c: char) -> bool {
  matches!(c, '\'' | '\u{2019}' | '\u{02BC}' | '\u{FF07}')
}

/// At most [`MAX_TERM_BYTES`], cut on a character boundary.
fn cut(term: &str) -> &str {
  if term.len() <= MAX_TERM_BYTES {
    return term;
  }
  let mut end = MAX_TERM_BYTES;
  while !term.is_char_boundary(end) {
    end -= 1;
  }
  &term[..end]
}

/// Characters of scripts whose words are not separated by spaces (see the module docs).
fn written_without_spaces(c: char) -> bool {
  matches!(c as u32,
    0x0E00..=0x0EFF // Thai, Lao
    | 0x1000..=0x109F // Myanmar
    | 0x1100..=0x11FF // Hangul Jamo
    | 0x1780..=0x17FF // Khmer
    | 0x3040..=0x30FF // Hiragana, Katakana
    | 0x3100..=0x312F // Bopomofo
    | 0x3130..=0x318F // Hangul compatibility Jamo
    | 0x31F0..=0x31FF // Katakana phonetic extensions
    | 0x3400..=0x4DBF // CJK extension A
    | 0x4E00..=0x9FFF // CJK unified ideographs
    | 0xAC00..=0xD7AF // Hangul syllables
    | 0xF900..=0xFAFF // CJK compatibility ideographs
    | 0xFF66..=0xFF9F // half-width Katakana (NFKC maps most away)
    | 0x20000..=0x3134F // CJK extensions B to G
  )
}

/// English function words dropped from documents and queries. Our own short list: articles,
/// pronouns, auxiliaries, prepositions and question words, the words that occur in nearly every
/// memory and every question. Negations and `always` are not in it.
pub fn is_stop_word(word: &str) -> bool {
  matches!(
    word,
    "a"
      | "an"
      | "and"
      | "are"
      | "as"
      | "at"
      | "be"
      | "been"
      | "but"
      | "by"
      | "can"
      | "could"
      | "did"
      | "do"
      | "does"
      | "for"
      | "from"
      | "had"
      | "has"
      | "have"
      | "he"
      | "her"
      | "his"
      | "how"
      | "i"
      | "if"
      | "in"
      | "into"
      | "is"
      | "it"
      | "its"
      | "it's"
      | "me"
      | "my"
      | "of"
      | "on"
      | "or"
      | "our"
      | "she"
      | "so"
      | "than"
      | "that"
      | "the"
      | "their"
      | "them"
      | "then"
      | "there"
      | "these"
      | "they"
      | "this"
      | "those"
      | "to"
      | "us"
      | "was"
      | "we"
      | "were"
      | "what"
      | "when"
      | "where"
      | "which"
      | "who"
      | "will"
      | "with"
      | "would"
      | "you"
      | "your"
  )
}

#[cfg(test)]
mod tests {
  use super::*;

  fn terms(config: AnalyzerConfig, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    Analyzer::new(config).analyze(text, |t, _| out.push(t.to_string()));
    out
  }

  fn stemmed(text: &str) -> Vec<String> {
    terms(AnalyzerConfig::default(), text)
  }

  #[test]
  fn english_words_are_lowercased_stemmed_and_stop_words_dropped() {
    assert_eq!(stemmed("The Deployments were deployed"), ["deploy", "deploy"]);
    assert_eq!(stemmed("What is the billing service?"), ["bill", "servic"]);
    assert_eq!(terms(AnalyzerConfig { stem: false }, "Deployments deployed"), ["deployments", "deployed"]);
    // Negations stay: instructions turn on them.
    assert_eq!(stemmed("never use tabs"), ["never", "use", "tab"]);
  }

  #[test]
  fn identifiers_split_into_parts_and_numbers_stay() {
    assert_eq!(stemmed("edit config.yaml in snake_case"), ["edit", "config", "yaml", "snake", "case"]);
    assert_eq!(stemmed("v2 e2e 2026"), ["v2", "e2e", "2026"]);
    assert_eq!(stemmed("std::fs::File"), ["std", "fs", "file"]);
  }

  #[test]
  fn apostrophes_are_unified() {
    assert_eq!(stemmed("user’s"), stemmed("user's"));
    assert_eq!(stemmed("user's"), ["user"]);
  }

  #[test]
  fn scripts_without_spaces_become_bigrams() {
    assert_eq!(stemmed("東京都に住む"), ["東京", "京都", "都に", "に住", "住む"]);
    assert_eq!(stemmed("東"), ["東"]);
    // A run stops at a space or a Latin word.
    assert_eq!(stemmed("東京 大阪"), ["東京", "大阪"]);
    assert_eq!(stemmed("東京abc大阪"), ["東京", "abc", "大阪"]);
    assert_eq!(stemmed("서울에서"), ["서울", "울에", "에서"]);
  }

  #[test]
  fn other_alphabets_are_lowercased_not_stemmed() {
    assert_eq!(stemmed("Москва Häuser ΑΘΗΝΑ"), ["москва", "häuser", "αθηνα"]);
  }

  #[test]
  fn normalisation_makes_forms_match() {
    // Decomposed e + combining acute, and full-width Latin.
    assert_eq!(stemmed("cafe\u{301}"), stemmed("café"));
    assert_eq!(stemmed("ＡＢＣ"), ["abc"]);
  }

  #[test]
  fn long_terms_are_cut_and_regex_syntax_is_just_punctuation() {
    let long = "x".repeat(500);
    let t = stemmed(&long);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].len(), MAX_TERM_BYTES);
    let cjk_long = "é".repeat(100);
    assert!(stemmed(&cjk_long)[0].len() <= MAX_TERM_BYTES);
    assert_eq!(stemmed(".*(a|b)+[^x]\\d{3}"), ["b", "x", "d", "3"]);
    assert!(stemmed("  ... ??? !!! ").is_empty());
  }

  #[test]
  fn config_id_records_version_and_stemming() {
    assert_ne!(AnalyzerConfig { stem: true }.id(), AnalyzerConfig { stem: false }.id());
    assert_eq!(AnalyzerConfig::default().id() >> 8, ANALYZER_VERSION);
  }
}
