//! Pre-tokenization: tiktoken cuts a text into pieces with a regular expression per encoding and
//! encodes each piece on its own, so counts match only if the pieces do.
//!
//! tiktoken's patterns end in `\s+(?!\S)|\s+`: a run of whitespace gives up its last character
//! to the word after it. The `regex` crates have no look-ahead, so that alternative is written
//! `\s+\s` as a pattern of its own and its match is cut before its last character, which gives the
//! same pieces (the rewrite `bpe-openai` introduced and checked against tiktoken). Each search is
//! anchored where the previous piece ended and every pattern consumes at least one character, so
//! splitting advances strictly and costs time linear in the text.

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

use super::TokenEncoding;

/// tiktoken's `cl100k_base` pattern without its look-ahead alternatives.
const CL100K_BASE: &str = concat!(
  r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*",
  r"|\s*[\r\n]+|\s+$"
);

/// tiktoken's `o200k_base` pattern without its look-ahead alternatives.
const O200K_BASE: &str = concat!(
  r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+$"
);

/// `\s+(?!\S)`: matched with one whitespace character too many, which is dropped.
const WHITESPACE_BEFORE_WORD: &str = r"\s+\s";
const WHITESPACE: &str = r"\s+";
/// Index of [`WHITESPACE_BEFORE_WORD`] among the patterns.
const LOOKAHEAD_PATTERN: usize = 1;

/// The pre-tokenizer of one encoding; shared by every thread.
pub(super) struct Splitter {
  regex: Regex,
}

impl Splitter {
  pub(super) fn new(encoding: TokenEncoding) -> Splitter {
    let main = match encoding {
      TokenEncoding::O200kBase => O200K_BASE,
      TokenEncoding::Cl100kBase => CL100K_BASE,
    };
    // Patterns in order of preference (leftmost-first, as one alternation would be).
    let regex =
      Regex::new_many(&[main, WHITESPACE_BEFORE_WORD, WHITESPACE]).expect("the pre-tokenizer patterns compile");
    Splitter { regex }
  }

  /// The pieces of `text`, in order; together they are exactly `text`.
  pub(super) fn split<'a>(&'a self, text: &'a str) -> Pieces<'a> {
    Pieces { regex: &self.regex, text, at: 0 }
  }
}

pub(super) struct Pieces<'a> {
  regex: &'a Regex,
  text: &'a str,
  at: usize,
}

impl<'a> Iterator for Pieces<'a> {
  type Item = &'a str;

  fn next(&mut self) -> Option<&'a str> {
    let rest = &self.text[self.at..];
    let first = rest.chars().next()?;
    let end = match self.regex.search(&Input::new(rest).anchored(Anchored::Yes)) {
      Some(m) if m.pattern().as_usize() == LOOKAHEAD_PATTERN => {
        m.end() - rest[..m.end()].chars().next_back().map_or(0, char::len_utf8)
      }
      Some(m) => m.end(),
      None => 0,
    };
    // Every character starts a match of some pattern (letters, numbers, whitespace, anything
    // else), and a look-ahead match has two characters at least, so a piece is never empty; the
    // floor of one character only makes that progress unconditional.
    let end = end.max(first.len_utf8());
    self.at += end;
    Some(&rest[..end])
  }
}
