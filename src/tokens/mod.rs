//! Token counting: exact BPE counts with OpenAI's public encodings, and a fast estimate.
//!
//! The vocabularies (`o200k_base`, `cl100k_base`) are compiled into the library as compressed
//! tables (`tables.rs`, 3.8 MB for both) and counted with the `bpe` crate (GitHub's linear-time
//! BPE, output identical to `tiktoken`), so counting never downloads anything. Each encoding is
//! expanded on its first use (tens of milliseconds) and then shared by every thread.
//!
//! Text is split into pieces by the encoding's pre-tokenization regex (`split.rs`) and each piece
//! is encoded on its own (as tiktoken does), so the count of a text is the sum of the counts of
//! its pieces. Short pieces repeat a lot (words, punctuation, indentation), so their counts are
//! memoized in a small per-thread cache; the cache only saves work, it never changes a result.
//!
//! Special-token text such as `<|endoftext|>` is counted as ordinary text (tiktoken's
//! `encode_ordinary`): memory content is data, never control tokens.
//!
//! Claude 3 and later use a tokenizer that is not public. For those models count with a public
//! encoding and add a safety margin ([`with_margin`]); see the README for guidance.

use std::cell::RefCell;
use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::error::{invalid, Result};

mod split;
mod tables;

use split::Splitter;
use tables::Vocabulary;

/// BPE encoding used to count tokens; `o200k_base` unless said otherwise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TokenEncoding {
  /// `o200k_base` (GPT-4o family and later).
  #[default]
  #[serde(rename = "o200k_base")]
  O200kBase,
  /// `cl100k_base` (GPT-4 / GPT-3.5 family).
  #[serde(rename = "cl100k_base")]
  Cl100kBase,
}

/// Pieces up to this many bytes have their counts memoized.
const MAX_CACHED_PIECE: usize = 32;
/// The per-thread cache of an encoding is emptied when it reaches this many pieces.
const CACHE_CAPACITY: usize = 1 << 16;

type PieceCache = FxHashMap<Box<[u8]>, u32>;

thread_local! {
  static CACHES: RefCell<[PieceCache; 2]> = RefCell::new([PieceCache::default(), PieceCache::default()]);
}

impl TokenEncoding {
  /// The name used by tiktoken and in the configuration (`o200k_base`).
  pub fn as_str(self) -> &'static str {
    match self {
      TokenEncoding::O200kBase => "o200k_base",
      TokenEncoding::Cl100kBase => "cl100k_base",
    }
  }

  /// Parses an encoding name; `E_INVALID_ARGUMENT` for anything else.
  pub fn parse(name: &str) -> Result<TokenEncoding> {
    match name {
      "o200k_base" => Ok(TokenEncoding::O200kBase),
      "cl100k_base" => Ok(TokenEncoding::Cl100kBase),
      other => invalid(format!("`encoding` must be 'o200k_base' or 'cl100k_base', got {}", crate::error::shown(other))),
    }
  }

  fn slot(self) -> usize {
    match self {
      TokenEncoding::O200kBase => 0,
      TokenEncoding::Cl100kBase => 1,
    }
  }
}

/// One loaded encoding.
pub struct Encoder {
  vocabulary: Vocabulary,
  splitter: Splitter,
  encoding: TokenEncoding,
  /// Length in bytes of the longest token of the vocabulary (128 for both encodings): a text of
  /// `n` bytes has at least `n / max_token_bytes` tokens.
  max_token_bytes: usize,
}

/// The encoder of `encoding`, loaded on first use.
pub fn encoder(encoding: TokenEncoding) -> &'static Encoder {
  static O200K: OnceLock<Encoder> = OnceLock::new();
  static CL100K: OnceLock<Encoder> = OnceLock::new();
  let cell = match encoding {
    TokenEncoding::O200kBase => &O200K,
    TokenEncoding::Cl100kBase => &CL100K,
  };
  cell.get_or_init(|| {
    // The table is part of the library: if it is damaged, so is the installation.
    let vocabulary = tables::load(tables::stored(encoding))
      .unwrap_or_else(|e| panic!("the built-in {} table is damaged ({e}); reinstall @loa/core", encoding.as_str()));
    let max_token_bytes = (0..vocabulary.num_tokens() as u32).map(|t| vocabulary.token_len(t)).max().unwrap_or(1);
    Encoder { vocabulary, splitter: Splitter::new(encoding), encoding, max_token_bytes }
  })
}

impl Encoder {
  /// Which encoding this is.
  pub fn encoding(&self) -> TokenEncoding {
    self.encoding
  }

  /// Length in bytes of the longest token.
  pub fn max_token_bytes(&self) -> usize {
    self.max_token_bytes
  }

  /// Runs `f` with this encoding's piece cache (or a throwaway one if the cache is in use).
  fn with_cache<T>(&self, f: impl FnOnce(&mut PieceCache) -> T) -> T {
    CACHES.with(|caches| match caches.try_borrow_mut() {
      Ok(mut caches) => f(&mut caches[self.encoding.slot()]),
      Err(_) => f(&mut PieceCache::default()),
    })
  }

  fn piece_count(&self, piece: &[u8], cache: &mut PieceCache) -> usize {
    if piece.len() <= 1 {
      return piece.len(); // every single byte is a token of both vocabularies
    }
    if piece.len() > MAX_CACHED_PIECE {
      return self.vocabulary.count(piece);
    }
    if let Some(&n) = cache.get(piece) {
      return n as usize;
    }
    let n = self.vocabulary.count(piece);
    if cache.len() >= CACHE_CAPACITY {
      cache.clear();
    }
    cache.insert(piece.into(), n as u32);
    n
  }

  /// The exact number of tokens of `text`.
  pub fn count(&self, text: &str) -> usize {
    if text.is_empty() {
      return 0;
    }
    self.with_cache(|cache| self.splitter.split(text).map(|piece| self.piece_count(piece.as_bytes(), cache)).sum())
  }

  /// The exact number of tokens of `text` if it is at most `limit`, else `None`. Costs time in
  /// proportion to `min(text, limit)`: a text longer than `limit` tokens can hold is rejected
  /// by its length alone, and counting stops as soon as the limit is passed.
  pub fn count_until(&self, text: &str, limit: usize) -> Option<usize> {
    if text.len() > limit.saturating_mul(self.max_token_bytes) {
      return None;
    }
    self.with_cache(|cache| {
      let mut total = 0usize;
      for piece in self.splitter.split(text) {
        total += self.piece_count(piece.as_bytes(), cache);
        if total > limit {
          return None;
        }
      }
      Some(total)
    })
  }

  /// The length in bytes of the longest prefix of `text` made of its first tokens, at most
  /// `max_tokens` of them, that ends on a character boundary. The prefix is cut where the
  /// encoding of the whole text has a token boundary; counted on its own it may come out a
  /// token or two different, so callers that need a guarantee count the result.
  pub fn prefix_len(&self, text: &str, max_tokens: usize) -> usize {
    let base = text.as_ptr() as usize;
    self.with_cache(|cache| {
      let mut used = 0usize;
      let mut end = 0usize;
      for piece in self.splitter.split(text) {
        let start = piece.as_ptr() as usize - base;
        let n = self.piece_count(piece.as_bytes(), cache);
        if used + n <= max_tokens {
          used += n;
          end = start + piece.len();
          if used == max_tokens {
            break;
          }
          continue;
        }
        // Part of this piece: its first tokens, backing off to a character boundary.
        let room = max_tokens - used;
        let vocabulary = &self.vocabulary;
        let tokens = vocabulary.encode(piece.as_bytes());
        let mut offsets = Vec::with_capacity(room);
        let mut at = 0usize;
        for &t in tokens.iter().take(room) {
          at += vocabulary.token_len(t);
          offsets.push(at);
        }
        if let Some(&cut) = offsets.iter().rev().find(|&&cut| piece.is_char_boundary(cut)) {
          end = start + cut;
        }
        break;
      }
      end
    })
  }
}

/// The exact number of tokens of `text` in `encoding`.
pub fn count_tokens(text: &str, encoding: TokenEncoding) -> usize {
  encoder(encoding).count(text)
}

/// [`count_tokens`] for many texts.
pub fn count_tokens_batch<S: AsRef<str>>(texts: &[S], encoding: TokenEncoding) -> Vec<usize> {
  let encoder = encoder(encoding);
  texts.iter().map(|t| encoder.count(t.as_ref())).collect()
}

/// Checks a safety margin: a fraction in `[0, 1)`.
pub fn check_margin(margin: f64, name: &str) -> Result<f64> {
  if margin.is_finite() && (0.0..1.0).contains(&margin) {
    Ok(margin + 0.0) // -0.0 -> 0.0
  } else {
    invalid(format!("`{name}` must be a fraction from 0 (inclusive) to 1 (exclusive), got {margin}"))
  }
}

/// What to assume a text of `tokens` exact tokens costs under a tokenizer that may count up to
/// `tokens / (1 - margin)`: `ceil(tokens / (1 - margin))`. A budget `B` with margin `m` holds
/// every text whose exact count is at most `floor(B * (1 - m))`, so both forms agree.
pub fn with_margin(tokens: usize, margin: f64) -> usize {
  if margin <= 0.0 {
    return tokens;
  }
  let scaled = tokens as f64 / (1.0 - margin);
  // Guard against floating-point noise turning an exact integer into the next one.
  let rounded = scaled.round();
  if (scaled - rounded).abs() < 1e-9 {
    rounded as usize
  } else {
    scaled.ceil() as usize
  }
}

/// `floor(budget * (1 - margin))`: the exact-count limit of a budget with a safety margin.
pub fn budget_limit(budget: u64, margin: f64) -> u64 {
  if margin <= 0.0 {
    return budget;
  }
  let scaled = budget as f64 * (1.0 - margin);
  let rounded = scaled.round();
  if (scaled - rounded).abs() < 1e-9 {
    rounded as u64
  } else {
    scaled.floor() as u64
  }
}

// ---------------------------------------------------------------------------------------------
// The estimate
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
  None,
  Word,
  Digits,
  Punct,
  Spaces,
}

/// Whether `c` is a CJK ideograph, kana or Hangul syllable/jamo.
fn is_cjk(c: char) -> bool {
  matches!(c as u32,
    0x1100..=0x11FF | 0x2E80..=0x2FDF | 0x3040..=0x30FF | 0x3100..=0x318F | 0x31A0..=0x31FF
    | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xA960..=0xA97F | 0xAC00..=0xD7FF | 0xF900..=0xFAFF
    | 0xFF66..=0xFF9F | 0x20000..=0x3FFFF)
}

/// Cost class of one character for [`estimate_tokens`].
enum Class {
  Ascii(Run),
  Newline,
  /// A non-ASCII character, priced on its own, in sixths of a token.
  Priced(u64),
}

fn classify(c: char) -> Class {
  if c.is_ascii_alphabetic() {
    Class::Ascii(Run::Word)
  } else if c.is_ascii_digit() {
    Class::Ascii(Run::Digits)
  } else if c == ' ' || c == '\t' {
    Class::Ascii(Run::Spaces)
  } else if c == '\n' || c == '\r' {
    Class::Newline
  } else if c.is_ascii() {
    Class::Ascii(Run::Punct)
  } else if is_cjk(c) {
    Class::Priced(9) // 1.5 tokens
  } else if c.is_alphabetic() {
    Class::Priced(3 * c.len_utf8() as u64) // half a token per byte
  } else {
    // Emoji, symbols, combining marks: 1.5 tokens for 2 or 3 bytes, 3.5 for 4.
    Class::Priced(if c.len_utf8() == 4 { 21 } else { 9 })
  }
}

/// A fast estimate of the token count of `text`, meant as an upper bound for both public
/// encodings: one pass over the characters that mimics the pre-tokenizer, with a fixed price per
/// kind of run, in tokens:
///
/// | run | price |
/// |---|---|
/// | plain word (`[A-Z]?[a-z]+`, a vowel at least every 4 letters) | 1 up to 6 letters, then 1 per started 4 |
/// | other letters (ALLCAPS, camelCase, next to digits as in keys and hashes) | 1 per 1.2 letters |
/// | digits | 1 per started 3 |
/// | ASCII punctuation | 1 per started 2 |
/// | 2 or more spaces or tabs | 1 per started 8 |
/// | one space | 0 (it joins the next word), 1 before digits or at the end |
/// | line breaks | 1 per started 12 |
/// | CJK character (ideograph, kana, Hangul) | 1.5 |
/// | other non-ASCII letter | 0.5 per byte |
/// | emoji and other non-ASCII symbols | 1.5 (3.5 for 4-byte characters) |
/// | any non-empty text | 1 more |
///
/// The measured error per kind of text is in the README. It is an estimate, not a guarantee
/// (only `text.len()` bytes is one); use [`count_tokens`] where a budget must hold.
pub fn estimate_tokens(text: &str) -> usize {
  struct State {
    sixths: u64,
    run: Run,
    len: u64,
    consonants: u32,
    irregular: bool,
    newlines: u64,
  }
  impl State {
    fn end_run(&mut self) {
      let len = self.len;
      self.sixths += match self.run {
        Run::None => 0,
        Run::Word if self.irregular => 5 * len,
        Run::Word => 6 * (1 + len.saturating_sub(6).div_ceil(4)),
        Run::Digits => 6 * len.div_ceil(3),
        Run::Punct => 6 * len.div_ceil(2),
        Run::Spaces if len >= 2 => 6 * len.div_ceil(8),
        Run::Spaces => 0, // a single space belongs to the next piece
      };
      self.run = Run::None;
      self.len = 0;
      self.consonants = 0;
      self.irregular = false;
    }
    fn end_newlines(&mut self) {
      self.sixths += 6 * self.newlines.div_ceil(12);
      self.newlines = 0;
    }
  }
  let mut s = State { sixths: 0, run: Run::None, len: 0, consonants: 0, irregular: false, newlines: 0 };
  for c in text.chars() {
    match classify(c) {
      Class::Newline => {
        s.end_run();
        s.newlines += 1;
      }
      Class::Priced(cost) => {
        s.end_run();
        s.end_newlines();
        s.sixths += cost;
      }
      Class::Ascii(run) => {
        s.end_newlines();
        if run != s.run {
          if run == Run::Digits && s.run == Run::Spaces && s.len == 1 {
            s.sixths += 6; // digits do not take the space before them
          }
          // Letters touching digits are a key, a hash or an identifier, not a word.
          let touching = (run == Run::Digits && s.run == Run::Word) || (run == Run::Word && s.run == Run::Digits);
          if touching {
            s.irregular = true;
          }
          s.end_run();
          s.run = run;
          s.irregular = touching;
        }
        s.len += 1;
        if run == Run::Word {
          // A plain word is `[A-Z]?[a-z]+` with a vowel at least every 4 letters; anything else
          // (ALLCAPS, camelCase, random letters of a key) is priced as irregular.
          if c.is_ascii_uppercase() && s.len > 1 {
            s.irregular = true;
          }
          if matches!(c.to_ascii_lowercase(), 'a' | 'e' | 'i' | 'o' | 'u' | 'y') {
            s.consonants = 0;
          } else {
            s.consonants += 1;
            if s.consonants >= 4 {
              s.irregular = true;
            }
          }
        }
      }
    }
  }
  if s.run == Run::Spaces && s.len == 1 {
    s.sixths += 6; // a space at the very end is a token of its own
  }
  s.end_run();
  s.end_newlines();
  if s.sixths > 0 {
    s.sixths += 6; // one token of slack: short texts have no average to hide a word split in three
  }
  s.sixths.div_ceil(6) as usize
}

#[cfg(test)]
mod tests;
