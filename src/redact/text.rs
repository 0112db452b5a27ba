//! Byte-level helpers shared by the detectors: reading the text, character classes, Shannon
//! entropy and small context look-ups. Everything works on UTF-8 bytes; only ASCII bytes are ever
//! classified as anything but "other", so multi-byte characters act as separators.
//!
//! Reading past either end of the text is impossible by construction: [`at`] and [`before`]
//! return `None` there, which no byte pattern matches, and runs are measured with [`skip`] and
//! [`skip_back`], whose loop is an iterator over a slice that ends where the text (or the window)
//! ends. A scanning loop built from them cannot stall at an edge.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

/// A set of words matched as ASCII-case-insensitive substrings in one pass (built on first use).
///
/// Most texts a set is asked about contain none of its words (the assignment detector asks
/// about every identifier followed by `=`, `:` or `,`), so a table of the words' first two
/// bytes rejects them before the automaton runs: a text holding a word holds its first pair.
pub struct WordSet {
  words: &'static [&'static str],
  ac: OnceLock<AhoCorasick>,
  /// Bit per folded byte pair ([`pair_index`]) that starts a word.
  first_pairs: [u64; 256],
  /// A one-byte word: the table cannot decide.
  unfiltered: bool,
}

impl WordSet {
  pub const fn new(words: &'static [&'static str]) -> Self {
    let mut first_pairs = [0u64; 256];
    let mut unfiltered = false;
    let mut i = 0;
    while i < words.len() {
      let w = words[i].as_bytes();
      if w.len() < 2 {
        unfiltered = true;
      } else {
        let pair = pair_index(w[0], w[1]);
        first_pairs[pair >> 6] |= 1 << (pair & 63);
      }
      i += 1;
    }
    WordSet { words, ac: OnceLock::new(), first_pairs, unfiltered }
  }

  fn ac(&self) -> &AhoCorasick {
    self.ac.get_or_init(|| {
      AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::LeftmostFirst)
        .build(self.words)
        .expect("word set")
    })
  }

  /// Does `hay` contain one of the words?
  pub fn in_text(&self, hay: &[u8]) -> bool {
    if hay.is_empty() {
      return false;
    }
    work::add(hay.len());
    if !self.unfiltered && !hay.windows(2).any(|w| self.starts_a_word(w[0], w[1])) {
      return false;
    }
    self.ac().is_match(hay)
  }

  #[inline]
  fn starts_a_word(&self, b0: u8, b1: u8) -> bool {
    let pair = pair_index(b0, b1);
    self.first_pairs[pair >> 6] & (1 << (pair & 63)) != 0
  }
}

/// Index of a byte pair in a 128 x 128 bit table. The folding (`| 0x20`, low seven bits) maps
/// an ASCII letter's two cases to one index, as the case-insensitive match treats them; that it
/// also merges some other bytes only lets more texts through to the automaton.
#[inline]
const fn pair_index(b0: u8, b1: u8) -> usize {
  (((b0 | 0x20) as usize & 127) << 7) | ((b1 | 0x20) as usize & 127)
}

/// A set of lowercase words looked up whole (an identifier's words against a list of a hundred):
/// a hash set built on first use instead of a scan of the list.
pub struct Lexicon {
  words: &'static [&'static str],
  set: OnceLock<rustc_hash::FxHashSet<&'static [u8]>>,
}

impl Lexicon {
  pub const fn new(words: &'static [&'static str]) -> Self {
    Lexicon { words, set: OnceLock::new() }
  }

  pub fn contains(&self, word: &[u8]) -> bool {
    self.set.get_or_init(|| self.words.iter().map(|w| w.as_bytes()).collect()).contains(word)
  }

  pub fn words(&self) -> &'static [&'static str] {
    self.words
  }
}

/// `[A-Za-z0-9_]`
#[inline]
pub fn is_word(b: u8) -> bool {
  b.is_ascii_alphanumeric() || b == b'_'
}

#[inline]
pub fn is_hex(b: u8) -> bool {
  b.is_ascii_hexdigit()
}

#[inline]
pub fn is_quote(b: u8) -> bool {
  matches!(b, b'"' | b'\'' | b'`')
}

/// Characters of an identifier such as `DB_PASSWORD`, `api-key`, `config.token`.
#[inline]
pub fn is_ident(b: u8) -> bool {
  IDENT_CHAR[b as usize]
}

/// [`is_ident`] as a table: the identifier walks before each token candidate go a byte at a time,
/// and one load per byte is cheaper than the range tests.
static IDENT_CHAR: [bool; 256] = {
  let mut t = [false; 256];
  let mut i = 0;
  while i < 256 {
    let b = i as u8;
    t[i] = b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.');
    i += 1;
  }
  t
};

/// Characters of base64 / base64url / most API token alphabets.
pub static TOKEN_CHAR: [bool; 256] = {
  let mut t = [false; 256];
  let mut i = 0;
  while i < 256 {
    let b = i as u8;
    t[i] = b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'_' || b == b'-';
    i += 1;
  }
  t
};

/// The byte at `i`; `None` past the end.
#[inline]
pub fn at(t: &[u8], i: usize) -> Option<u8> {
  t.get(i).copied()
}

/// The byte before `i`; `None` at the start (and past the end).
#[inline]
pub fn before(t: &[u8], i: usize) -> Option<u8> {
  if i == 0 {
    None
  } else {
    t.get(i - 1).copied()
  }
}

/// Is there a word byte (`[A-Za-z0-9_]`) at `i`? (Not at an edge.)
#[inline]
pub fn word_at(t: &[u8], i: usize) -> bool {
  at(t, i).is_some_and(is_word)
}

/// Is there a word byte just before `i`? (Not at the start.)
#[inline]
pub fn word_before(t: &[u8], i: usize) -> bool {
  before(t, i).is_some_and(is_word)
}

/// Is there an ASCII digit at `i`?
#[inline]
pub fn digit_at(t: &[u8], i: usize) -> bool {
  at(t, i).is_some_and(|b| b.is_ascii_digit())
}

/// End of the run of bytes matching `pred` that starts at `i`, looking at most `max` bytes
/// ahead: never before `i` (clamped to the text), never past the end.
#[inline]
pub fn skip(t: &[u8], i: usize, max: usize, pred: impl Fn(u8) -> bool) -> usize {
  let s = i.min(t.len());
  let window = &t[s..s.saturating_add(max).min(t.len())];
  let n = window.iter().position(|&b| !pred(b)).unwrap_or(window.len());
  work::add(n + 1);
  s + n
}

/// Start of the run of bytes matching `pred` that ends at `i`, looking at most `max` bytes back.
#[inline]
pub fn skip_back(t: &[u8], i: usize, max: usize, pred: impl Fn(u8) -> bool) -> usize {
  let e = i.min(t.len());
  let window = &t[e.saturating_sub(max)..e];
  let n = window.iter().rev().position(|&b| !pred(b)).unwrap_or(window.len());
  work::add(n + 1);
  e - n
}

/// Work accounting, for the tests and the fuzzer that check that redaction time is linear in the
/// input: the number of bytes the detectors examined on this thread, counted by the helpers that
/// scan ([`skip`], [`skip_back`], window searches, value checks, regex windows). Counted only with
/// the `redact-testing` feature (and in tests); otherwise `add` compiles to nothing.
pub mod work {
  #[cfg(any(test, feature = "redact-testing"))]
  thread_local! {
    static WORK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
  }

  #[inline(always)]
  pub fn add(n: usize) {
    #[cfg(any(test, feature = "redact-testing"))]
    WORK.with(|w| w.set(w.get() + n as u64));
    #[cfg(not(any(test, feature = "redact-testing")))]
    let _ = n;
  }

  /// The work counted on this thread since the last call (0 without the feature).
  #[cfg_attr(not(any(test, feature = "redact-testing")), allow(dead_code))]
  pub fn take() -> u64 {
    #[cfg(any(test, feature = "redact-testing"))]
    return WORK.with(|w| w.replace(0));
    #[cfg(not(any(test, feature = "redact-testing")))]
    0
  }
}

/// Shannon entropy in bits per byte.
pub fn entropy(v: &[u8]) -> f64 {
  if v.is_empty() {
    return 0.0;
  }
  work::add(v.len());
  let mut counts = [0u16; 256];
  for &b in v {
    counts[b as usize] = counts[b as usize].saturating_add(1);
  }
  // H = log2(n) - (1/n) * sum(c * log2(c)), each distinct byte once.
  let n = v.len() as f64;
  let mut sum = 0.0;
  let table = c_log2_c_table();
  for &b in v {
    let c = counts[b as usize];
    if c > 1 {
      sum += table.get(c as usize).copied().unwrap_or_else(|| c_log2_c(c as usize));
    }
    counts[b as usize] = 0;
  }
  n.log2() - sum / n
}

/// `c * log2(c)` for the counts tokens have, from a table: the entropy test runs on every long
/// run of token characters, and a `log2` per distinct byte was most of its cost. Taken once per
/// run (a look-up of the table per byte showed in profiles of random-token text).
fn c_log2_c_table() -> &'static [f64; 1024] {
  static TABLE: OnceLock<Box<[f64; 1024]>> = OnceLock::new();
  TABLE.get_or_init(|| Box::new(std::array::from_fn(c_log2_c)))
}

fn c_log2_c(c: usize) -> f64 {
  c as f64 * (c as f64).log2()
}

/// Start of the line containing `pos`, looking back at most `max` bytes.
pub fn line_start(t: &[u8], pos: usize, max: usize) -> usize {
  // `skip_back` to the last line break, found by a vectorised search (the context of every token
  // candidate starts here): the same result and the same work count.
  let e = pos.min(t.len());
  let window = &t[e.saturating_sub(max)..e];
  let n = memchr::memrchr2(b'\n', b'\r', window).map_or(window.len(), |x| window.len() - x - 1);
  work::add(n + 1);
  e - n
}

/// End of the line containing `pos` (exclusive), looking ahead at most `max` bytes.
pub fn line_end(t: &[u8], pos: usize, max: usize) -> usize {
  skip(t, pos, max, |b| b != b'\n' && b != b'\r')
}

/// Is one of `words` in the same line within `window` bytes before `pos`?
pub fn keyword_before(t: &[u8], pos: usize, window: usize, words: &WordSet) -> bool {
  let s = line_start(t, pos, window);
  words.in_text(&t[s..pos])
}

pub fn trim_quotes(v: &[u8]) -> &[u8] {
  let mut s = 0;
  let mut e = v.len();
  while s < e && is_quote(v[s]) {
    s += 1;
  }
  while e > s && is_quote(v[e - 1]) {
    e -= 1;
  }
  &v[s..e]
}

/// 8-4-4-4-12 hex with dashes.
pub fn is_uuid(v: &[u8]) -> bool {
  v.len() == 36 && v.iter().enumerate().all(|(i, &b)| if matches!(i, 8 | 13 | 18 | 23) { b == b'-' } else { is_hex(b) })
}

/// Character-class profile of a value.
#[derive(Default, Clone, Copy)]
pub struct Profile {
  pub upper: usize,
  pub lower: usize,
  pub digit: usize,
  pub symbol: usize,
  pub space: usize,
  pub other: usize,
}

pub fn profile(v: &[u8]) -> Profile {
  work::add(v.len());
  let mut p = Profile::default();
  for &b in v {
    match b {
      b'A'..=b'Z' => p.upper += 1,
      b'a'..=b'z' => p.lower += 1,
      b'0'..=b'9' => p.digit += 1,
      b' ' | b'\t' => p.space += 1,
      0x21..=0x7e => p.symbol += 1,
      _ => p.other += 1,
    }
  }
  p
}

/// How far back a URL is looked for (see [`url_chunk_has_scheme`]).
pub const URL_CHUNK_MAX: usize = 2048;

/// Bytes that end the chunk of text a URL can be part of.
#[inline]
pub fn is_url_break(b: u8) -> bool {
  b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'<' | b'>' | b'(' | b')' | b'`')
}

/// Does the chunk of text before `pos` (back to a break, at most [`URL_CHUNK_MAX`] bytes) hold a
/// `://`, i.e. does `pos` belong to a URL? Detectors ask through `ctx::UrlScan`, which remembers
/// what it saw; this bounded look-back answers its out-of-order questions.
pub fn url_chunk_has_scheme(t: &[u8], pos: usize) -> bool {
  let pos = pos.min(t.len());
  let i = skip_back(t, pos, URL_CHUNK_MAX, |b| !is_url_break(b));
  work::add(pos - i);
  memchr::memmem::find(&t[i..pos], b"://").is_some()
}

/// Looks like a file-system path or URL path rather than a token (`/usr/lib/x86_64-linux-gnu`,
/// `src/redact/mod`): separated by `/` into several pieces that are mostly letters.
pub fn is_path_like(v: &[u8]) -> bool {
  work::add(v.len());
  let slashes = v.iter().filter(|&&b| b == b'/' || b == b'\\').count();
  if slashes == 0 {
    return false;
  }
  if v.starts_with(b"/") || v.starts_with(b"./") || v.starts_with(b"../") || v.starts_with(b"~/") {
    return true;
  }
  let wordy = v.split(|&b| b == b'/' || b == b'\\').filter(|seg| seg.len() >= 3 && is_word_like(seg)).count();
  wordy >= 2 || (slashes >= 2 && wordy >= 1)
}

/// Letters (and `-_.`) in one case, or capitalised: `local`, `LICENSE`, `Makefile`, `site-packages`.
pub fn is_word_like(seg: &[u8]) -> bool {
  if !seg.iter().all(|b| b.is_ascii_alphabetic() || matches!(b, b'-' | b'_' | b'.')) {
    return false;
  }
  let rest = &seg[1..];
  !(rest.iter().any(|b| b.is_ascii_uppercase()) && rest.iter().any(|b| b.is_ascii_lowercase()))
}

/// Does the value read like words (`jetbrains.mps.v8_elimination`, `BlindKeySignatures`,
/// `NRG0-Hermes-INTERNAL-API`) rather than random characters? Splits at non-letters and camel
/// humps; pronounceable pieces of 4+ letters must hold 75% of the letters: at least two pieces
/// between separators, or three camel-case pieces (random tokens rarely manage either).
pub fn is_wordy(v: &[u8]) -> bool {
  work::add(v.len());
  let letters = v.iter().filter(|b| b.is_ascii_alphabetic()).count();
  if letters < 8 {
    return false;
  }
  let mut in_words = 0;
  let mut word_vowels = 0;
  let mut pieces = 0;
  let mut humps = 0;
  let mut i = 0;
  while i < v.len() {
    if !v[i].is_ascii_alphabetic() {
      i += 1;
      continue;
    }
    // One piece: an optional capital then lowercase, or a run of capitals.
    let s = i;
    if v[i].is_ascii_uppercase() {
      i += 1;
      if i < v.len() && v[i].is_ascii_lowercase() {
        while i < v.len() && v[i].is_ascii_lowercase() {
          i += 1;
        }
      } else {
        while i < v.len() && v[i].is_ascii_uppercase() && !(i + 1 < v.len() && v[i + 1].is_ascii_lowercase()) {
          i += 1;
        }
      }
      if s > 0 && v[s - 1].is_ascii_lowercase() {
        humps += 1;
      }
    } else {
      while i < v.len() && v[i].is_ascii_lowercase() {
        i += 1;
      }
    }
    let piece = &v[s..i];
    // Letters right after a digit are no word of their own (`z7kwecm6` of a random token); a
    // word with digits after it is one (`password123`).
    if piece.len() >= 4 && !(s > 0 && v[s - 1].is_ascii_digit()) {
      let vowels = piece.iter().filter(|b| matches!(b.to_ascii_lowercase(), b'a' | b'e' | b'i' | b'o' | b'u')).count();
      let ratio = vowels as f64 / piece.len() as f64;
      if (0.15..=0.75).contains(&ratio) {
        in_words += piece.len();
        word_vowels += vowels;
        pieces += 1;
      }
    }
  }
  let separators = v.iter().filter(|&&b| matches!(b, b'.' | b'_' | b'-' | b'/' | b':' | b' ')).count();
  // English-like pieces have about 40% vowels; random letters about 23%.
  in_words * 4 >= letters * 3
    && word_vowels * 10 >= in_words * 3
    && ((separators > 0 && pieces >= 2) || (humps >= 2 && pieces >= 3))
}

/// Contains a dotted version such as `0.11.2` or `1.2.3`.
pub fn has_version(v: &[u8]) -> bool {
  work::add(v.len());
  let mut i = 0;
  while i < v.len() {
    if v[i].is_ascii_digit() && (i == 0 || !v[i - 1].is_ascii_alphanumeric()) {
      let mut parts = 1;
      let mut j = i;
      loop {
        while j < v.len() && v[j].is_ascii_digit() {
          j += 1;
        }
        if j + 1 < v.len() && v[j] == b'.' && v[j + 1].is_ascii_digit() && j - i < 12 {
          parts += 1;
          j += 1;
        } else {
          break;
        }
      }
      if parts >= 3 {
        return true;
      }
      i = j.max(i + 1);
    } else {
      i += 1;
    }
  }
  false
}

#[cfg(test)]
mod tests {
  use super::{entropy, has_version, is_ident, is_path_like, is_uuid, is_wordy, line_start, skip_back};

  /// The table and the vectorised search give what the byte-wise definitions give, at every
  /// position and window of a text with both line breaks, at both ends too.
  #[test]
  fn line_start_and_is_ident_match_their_definitions() {
    for b in 0..=255u8 {
      assert_eq!(is_ident(b), b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'), "{b}");
    }
    let t = b"ab\ncd\r\nef gh\n\nij\rk";
    for pos in 0..=t.len() + 2 {
      for max in [0, 1, 2, 3, 5, 64, usize::MAX] {
        let want = skip_back(t, pos, max, |b| b != b'\n' && b != b'\r');
        assert_eq!(line_start(t, pos, max), want, "pos {pos} max {max}");
      }
    }
  }

  #[test]
  fn entropy_bounds() {
    assert_eq!(entropy(b"aaaa"), 0.0);
    assert!((entropy(b"0123456789abcdef") - 4.0).abs() < 1e-9);
  }

  #[test]
  fn wordy_values() {
    for w in [
      "jetbrains.mps.v8_elimination",
      "id-Gost28147-89-None-KeyMeshing",
      "Ed25519.BlindKeySignatures",
      "getUserAccountSettings2",
    ] {
      assert!(is_wordy(w.as_bytes()), "{w}");
    }
    for r in [
      "Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB",
      "zljgtkp1v2zc9jwlk9nm0cdkehd82b",
      "2u51ruzincun_09u-nsdn1varkjouk10zqsgoswz",
      "6iwh9vssso7hj5fv60lwqp5yfr17lzvf3tqpjtez",
    ] {
      assert!(!is_wordy(r.as_bytes()), "{r}");
    }
    assert!(has_version(b"jjwt-jackson-0.11.2") && !has_version(b"a1.2b") && !has_version(b"192.168"));
  }

  #[test]
  fn shapes() {
    assert!(is_uuid(b"550e8400-e29b-41d4-a716-446655440000"));
    assert!(is_path_like(b"/usr/local/lib"));
    assert!(is_path_like(b"src/redact/mod"));
    assert!(!is_path_like(b"wJalrXUtnFEMI/K7MDENG/bPxRfiCY"));
  }
}
