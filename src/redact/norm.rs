//! The normalised view redaction scans, and the way back to the caller's text.
//!
//! Text reaches agents from chat clients, word processors and input methods, which write the same
//! value in many spellings: a token with a zero-width space or a soft hyphen inside, a card number
//! in fullwidth digits (`４１１１…`, as Japanese and Chinese input methods type them), a name with
//! its accents composed (NFC) or decomposed (NFD). The detectors work on ASCII bytes, so each of
//! these spellings used to hide the value, or cut it where the odd character sat and leave the rest
//! in clear.
//!
//! [`View::of`] builds, in one forward pass, the text the detectors scan: Unicode NFKC (UAX #15,
//! the `unicode-normalization` crate) with every Default_Ignorable_Code_Point removed, and a map
//! from each byte of it back to the original. A finding's span in the view maps back to the
//! smallest original span covering it ([`View::start`], [`View::end`]): where a character of the
//! view came from several original ones (a letter and its combining accents, a fullwidth digit) the
//! whole original group is covered, and ignorable characters inside a finding are covered with
//! it. Placeholders are written into the original text, so everything outside the findings stays
//! byte for byte as the user wrote it.
//!
//! Guarantees:
//! - **ASCII costs nothing.** [`View::of`] returns `None` for ASCII text (a SIMD-friendly check)
//!   and for text that is already its own view (NFKC, no ignorable character): most non-English
//!   prose. The detectors then scan the text itself.
//! - **Linear time, bounded memory.** The text is cut into normalisation segments at composition
//!   boundaries (a starter that nothing before it can combine with); each segment is normalised
//!   on its own, which gives the same result as normalising the whole text. A run of combining
//!   marks is cut every [`MAX_SEGMENT`] characters (as UAX #15's stream-safe format does), so no
//!   segment, and no reordering buffer, grows with the input. The map holds one entry per run of
//!   unchanged text and one per changed segment. NFKC expands a character at most 18-fold (U+FDFA),
//!   so the view is at most a constant times the input.

use std::borrow::Cow;

use unicode_normalization::char::{canonical_combining_class, decompose_compatible};
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

use super::text::work;

/// Most characters in one normalisation segment: longer runs of combining marks are cut (UAX #15
/// section 13, stream-safe text format, allows 30 non-starters in a row).
pub const MAX_SEGMENT: usize = 32;

/// Default_Ignorable_Code_Point (Unicode's DerivedCoreProperties.txt; vendored with its licence in
/// `testdata/unicode/`, which a test compares with this table): characters that are invisible
/// unless a renderer chooses to show them, such as the zero-width space and joiners, the soft
/// hyphen, the word joiner, the byte order mark, bidirectional controls, variation selectors and
/// tag characters.
pub const DEFAULT_IGNORABLE: &[(u32, u32)] = &[
  (0x00AD, 0x00AD),
  (0x034F, 0x034F),
  (0x061C, 0x061C),
  (0x115F, 0x1160),
  (0x17B4, 0x17B5),
  (0x180B, 0x180F),
  (0x200B, 0x200F),
  (0x202A, 0x202E),
  (0x2060, 0x206F),
  (0x3164, 0x3164),
  (0xFE00, 0xFE0F),
  (0xFEFF, 0xFEFF),
  (0xFFA0, 0xFFA0),
  (0xFFF0, 0xFFF8),
  (0x1BCA0, 0x1BCA3),
  (0x1D173, 0x1D17A),
  (0xE0000, 0xE0FFF),
];

/// Is `c` a Default_Ignorable_Code_Point?
#[inline]
pub fn is_default_ignorable(c: char) -> bool {
  let c = c as u32;
  if c < 0xAD {
    return false;
  }
  let i = DEFAULT_IGNORABLE.partition_point(|&(_, hi)| hi < c);
  i < DEFAULT_IGNORABLE.len() && DEFAULT_IGNORABLE[i].0 <= c
}

/// How a (non-ASCII) character takes part in normalisation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
  /// Removed from the view.
  Ignorable,
  /// A segment starts here and the character is its own NFKC: it stays as it is unless combining
  /// marks follow.
  Stable,
  /// A segment starts here, but NFKC changes the character (`４` -> `4`, `ﬁ` -> `fi`).
  Changed,
  /// Combines with what precedes it (a combining mark, a Hangul vowel jamo): no segment starts
  /// here.
  Joins,
}

/// [`class_of`], remembered per 256-character page of the Basic Multilingual Plane. Asking the
/// normalisation tables for every non-ASCII character (box drawings, arrows, accented letters)
/// cost about half the time of redacting a markdown document; a page is filled once per process
/// the first time one of its characters is met (256 look-ups, a few microseconds), and a
/// character's class depends on nothing else.
#[inline]
fn class(c: char) -> Class {
  // In the order of the variants, so that `k as u8` indexes it.
  const CLASSES: [Class; 4] = [Class::Ignorable, Class::Stable, Class::Changed, Class::Joins];
  static PAGES: [std::sync::OnceLock<[u8; 256]>; 256] = [const { std::sync::OnceLock::new() }; 256];
  let cp = c as u32;
  if cp > 0xFFFF {
    return class_of(c);
  }
  let page = PAGES[(cp >> 8) as usize].get_or_init(|| {
    let mut classes = [0u8; 256];
    for (low, k) in classes.iter_mut().enumerate() {
      // Surrogate code points are no characters (a page of them is never asked for).
      *k = char::from_u32(cp & 0xFF00 | low as u32).map_or(Class::Stable, class_of) as u8;
    }
    classes
  });
  CLASSES[page[(cp & 0xFF) as usize] as usize]
}

/// How `c` takes part in normalisation, from the Unicode tables.
fn class_of(c: char) -> Class {
  if is_default_ignorable(c) {
    return Class::Ignorable;
  }
  if canonical_combining_class(c) != 0 {
    return Class::Joins;
  }
  match is_nfkc_quick(std::iter::once(c)) {
    IsNormalized::Yes => Class::Stable,
    // May compose with the starter before it.
    IsNormalized::Maybe => Class::Joins,
    IsNormalized::No => {
      // A segment may start here when the decomposition starts with a starter that composes
      // with nothing before it.
      let mut first = None;
      decompose_compatible(c, |d| {
        first.get_or_insert(d);
      });
      let d = first.unwrap_or(c);
      if canonical_combining_class(d) == 0 && is_nfkc_quick(std::iter::once(d)) != IsNormalized::Maybe {
        Class::Changed
      } else {
        Class::Joins
      }
    }
  }
}

/// One run of the view: the view's bytes from `norm` up to the next run's `norm` came from the
/// original bytes `orig..orig_end`. `exact`: they are the same bytes, one to one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
  norm: usize,
  orig: usize,
  orig_end: usize,
  exact: bool,
}

/// The normalised text of a piece of input and the map back to it (see the module docs).
#[derive(Debug)]
pub struct View {
  /// NFKC, without default-ignorable characters (UTF-8).
  pub text: Vec<u8>,
  runs: Vec<Run>,
}

impl View {
  /// The view of `t`, or `None` when it is `t` itself (ASCII text, or text already in NFKC
  /// without ignorable characters).
  pub fn of(t: &str) -> Option<View> {
    let b = t.as_bytes();
    if b.is_ascii() {
      return None;
    }
    let from = first_change(t)?;
    let mut v = View { text: Vec::with_capacity(b.len() + b.len() / 8), runs: Vec::new() };
    v.push_exact(b, 0, from);
    v.build(t, from);
    Some(v)
  }

  /// The original offset where a finding starting at view offset `n` starts.
  pub fn start(&self, n: usize) -> usize {
    let r = self.run_at(n);
    if r.exact {
      r.orig + (n - r.norm)
    } else {
      r.orig
    }
  }

  /// The original offset where a finding ending at view offset `n` (exclusive, `n > 0`) ends.
  pub fn end(&self, n: usize) -> usize {
    let r = self.run_at(n.saturating_sub(1));
    if r.exact {
      r.orig + (n - r.norm)
    } else {
      r.orig_end
    }
  }

  fn run_at(&self, n: usize) -> Run {
    let i = self.runs.partition_point(|r| r.norm <= n);
    self.runs[i.saturating_sub(1)]
  }

  /// Appends original bytes `s..e`, unchanged.
  fn push_exact(&mut self, b: &[u8], s: usize, e: usize) {
    if s == e {
      return;
    }
    if let Some(last) = self.runs.last_mut() {
      if last.exact && last.orig_end == s {
        last.orig_end = e;
        self.text.extend_from_slice(&b[s..e]);
        return;
      }
    }
    self.runs.push(Run { norm: self.text.len(), orig: s, orig_end: e, exact: true });
    self.text.extend_from_slice(&b[s..e]);
  }

  /// Appends the view of original bytes `s..e` (a changed segment).
  fn push_changed(&mut self, b: &[u8], s: usize, e: usize, norm: &str) {
    if norm.as_bytes() == &b[s..e] {
      self.push_exact(b, s, e);
    } else if !norm.is_empty() {
      self.runs.push(Run { norm: self.text.len(), orig: s, orig_end: e, exact: false });
      self.text.extend_from_slice(norm.as_bytes());
    }
  }

  /// Builds the view of `t[from..]`, `from` being a segment boundary.
  fn build(&mut self, t: &str, from: usize) {
    let b = t.as_bytes();
    work::add(b.len() - from);
    let mut seg = Segment::default();
    let mut out = String::new();
    let mut i = from;
    // Each turn moves `i` past at least one character.
    while i < b.len() {
      if b[i] < 0x80 {
        // A run of ASCII: every character starts a segment and stays; the last one may take
        // combining marks that follow, so it opens the next segment.
        let j = next_non_ascii(b, i);
        seg.flush(self, b, &mut out);
        self.push_exact(b, i, j - 1);
        seg.open(j - 1, b[j - 1] as char, j, Class::Stable);
        i = j;
        continue;
      }
      let c = t[i..].chars().next().unwrap_or('\u{FFFD}');
      let next = i + c.len_utf8();
      match class(c) {
        Class::Ignorable => seg.skip(),
        k @ (Class::Stable | Class::Changed) => {
          seg.flush(self, b, &mut out);
          seg.open(i, c, next, k);
        }
        Class::Joins => {
          if seg.chars.is_empty() || seg.chars.len() >= MAX_SEGMENT {
            seg.flush(self, b, &mut out);
            seg.open(i, c, next, Class::Joins);
          } else {
            seg.push(c, next);
          }
        }
      }
      i = next;
    }
    seg.flush(self, b, &mut out);
  }
}

/// The segment being gathered: its characters (ignorable ones left out) and where it lies in the
/// original.
#[derive(Default)]
struct Segment {
  chars: Vec<char>,
  start: usize,
  end: usize,
  /// The characters are the original bytes `start..end`, with nothing left out between them.
  contiguous: bool,
  /// One character, its own NFKC.
  stable: bool,
  /// An ignorable character was met since the last character: it joins the segment only if a
  /// character that belongs to the segment follows.
  skipped: bool,
}

impl Segment {
  fn open(&mut self, start: usize, c: char, end: usize, k: Class) {
    self.chars.clear();
    self.chars.push(c);
    self.start = start;
    self.end = end;
    self.contiguous = true;
    self.stable = k == Class::Stable;
    self.skipped = false;
  }

  fn push(&mut self, c: char, end: usize) {
    self.chars.push(c);
    self.end = end;
    self.contiguous &= !self.skipped;
    self.stable = false;
    self.skipped = false;
  }

  fn skip(&mut self) {
    self.skipped = true;
  }

  /// Writes the segment into the view and empties it.
  fn flush(&mut self, v: &mut View, b: &[u8], out: &mut String) {
    if self.chars.is_empty() {
      return;
    }
    if self.stable && self.contiguous {
      v.push_exact(b, self.start, self.end);
    } else {
      out.clear();
      out.extend(self.chars.iter().copied().nfkc().filter(|&c| !is_default_ignorable(c)));
      work::add(out.len());
      if self.contiguous {
        v.push_changed(b, self.start, self.end, out);
      } else if !out.is_empty() {
        v.runs.push(Run { norm: v.text.len(), orig: self.start, orig_end: self.end, exact: false });
        v.text.extend_from_slice(out.as_bytes());
      }
    }
    self.chars.clear();
    self.skipped = false;
  }
}

/// The first non-ASCII byte at or after `i` (the length of `b` if none), eight bytes at a time:
/// mostly-ASCII text with a few accents or dashes is read at the speed of the ASCII check.
#[inline]
fn next_non_ascii(b: &[u8], mut i: usize) -> usize {
  while let Some(word) = b.get(i..i + 8) {
    let w = u64::from_le_bytes(word.try_into().unwrap_or([0x80; 8]));
    let high = w & 0x8080_8080_8080_8080;
    if high != 0 {
      return i + (high.trailing_zeros() / 8) as usize;
    }
    i += 8;
  }
  while i < b.len() && b[i] < 0x80 {
    i += 1;
  }
  i
}

/// Where the view of `t` first differs from `t`, moved back to the segment boundary before it;
/// `None` when it never does. Looks only at non-ASCII characters.
fn first_change(t: &str) -> Option<usize> {
  let b = t.as_bytes();
  let mut i = 0;
  // The start of the last character seen that starts a segment.
  let mut boundary = 0;
  while i < b.len() {
    if b[i] < 0x80 {
      let j = next_non_ascii(b, i);
      boundary = j - 1;
      i = j;
      continue;
    }
    let c = t[i..].chars().next().unwrap_or('\u{FFFD}');
    let w = c.len_utf8();
    match class(c) {
      Class::Stable => {
        // Box drawings and rules repeat one character (`──────`): its copies are as stable,
        // and each starts a segment, without decoding and looking each up again.
        let mut j = i + w;
        while b.get(j..j + w) == Some(&b[i..i + w]) {
          j += w;
        }
        boundary = j - w;
        i = j;
        continue;
      }
      Class::Changed => return Some(i),
      Class::Ignorable | Class::Joins => return Some(boundary),
    }
  }
  work::add(b.len());
  None
}

/// `v` as the view spells it: NFKC without ignorable characters (the value a fingerprint is
/// taken of, so that every spelling of a value gets the same fingerprint and pseudonym).
pub fn normalize(v: &str) -> Cow<'_, str> {
  match View::of(v) {
    None => Cow::Borrowed(v),
    Some(view) => Cow::Owned(String::from_utf8(view.text).unwrap_or_default()),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn view(s: &str) -> String {
    match View::of(s) {
      None => s.to_string(),
      Some(v) => String::from_utf8(v.text).unwrap(),
    }
  }

  #[test]
  fn remembered_classes_are_the_tables_classes() {
    // Every code point, asked twice (the second time from the filled page).
    for _ in 0..2 {
      for c in (0..=0x10FFFFu32).step_by(1).filter_map(char::from_u32).filter(|&c| !c.is_ascii()) {
        assert_eq!(class(c), class_of(c), "U+{:04X}", c as u32);
      }
    }
  }

  #[test]
  fn ignorable_table_matches_the_unicode_data_file() {
    let file = include_str!("../../testdata/unicode/default-ignorable.txt");
    let mut ranges = Vec::new();
    for line in file.lines() {
      let line = line.split('#').next().unwrap_or("").trim();
      if line.is_empty() {
        continue;
      }
      let (cps, prop) = line.split_once(';').unwrap();
      assert_eq!(prop.trim(), "Default_Ignorable_Code_Point");
      let cps = cps.trim();
      let (lo, hi) = cps.split_once("..").unwrap_or((cps, cps));
      let lo = u32::from_str_radix(lo, 16).unwrap();
      let hi = u32::from_str_radix(hi, 16).unwrap();
      // Adjacent ranges of the file are one range of the table.
      match ranges.last_mut() {
        Some((_, h)) if *h + 1 == lo => *h = hi,
        _ => ranges.push((lo, hi)),
      }
    }
    assert_eq!(ranges, DEFAULT_IGNORABLE);
    let total: u32 = ranges.iter().map(|(l, h)| h - l + 1).sum();
    assert_eq!(total, 4174);
    for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
      let expected = ranges.iter().any(|&(l, h)| (l..=h).contains(&(c as u32)));
      assert_eq!(is_default_ignorable(c), expected, "U+{:04X}", c as u32);
    }
  }

  #[test]
  fn the_view_is_nfkc_without_ignorables() {
    assert!(View::of("plain ascii").is_none());
    assert!(View::of("déjà vu — 東京 Ελλάδα").is_none(), "NFC text without ignorables is its own view");
    assert_eq!(view("ghp_\u{200b}abc\u{ad}d\u{2060}e\u{feff}f\u{200c}"), "ghp_abcdef");
    assert_eq!(view("０９０－１２３４"), "090-1234");
    assert_eq!(view("ju\u{308}rgen"), "jürgen");
    assert_eq!(view("\u{fb01}le"), "file");
    assert_eq!(view("\u{fdfa}").chars().count(), 18);
    // Hangul: a compatibility jamo vowel composes with the syllable before it once decomposed.
    assert_eq!(view("\u{1100}\u{1161}"), "\u{ac00}");
    // A mark after an ignorable still joins the letter before.
    assert_eq!(view("e\u{200b}\u{301}"), "é");
  }

  #[test]
  fn the_view_equals_nfkc_of_the_whole_text() {
    // Segment by segment gives what the whole text gives (short runs of marks).
    let pieces = [
      "a", "e", "\u{301}", "\u{327}", "\u{308}", "Å", "ﬁ", "４", "－", "\u{1100}", "\u{1161}", "\u{11a8}", "가",
      "\u{3131}", "\u{314f}", "東", "ｶ", "\u{ff9e}", " ", "\u{200b}", "\u{ad}", "ü", "\u{f73}", "\u{fdfa}", "①", "²",
    ];
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..5000 {
      let mut s = String::new();
      for _ in 0..(x % 12) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(pieces[(x % pieces.len() as u64) as usize]);
      }
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      let expected: String = s.chars().filter(|&c| !is_default_ignorable(c)).nfkc().collect();
      assert_eq!(view(&s), expected, "{:?}", s.escape_unicode().to_string());
    }
  }

  #[test]
  fn spans_map_back_to_the_smallest_original_span() {
    let s = "ab\u{200b}cd ４５ e\u{301}f";
    let v = View::of(s).unwrap();
    let text = std::str::from_utf8(&v.text).unwrap();
    assert_eq!(text, "abcd 45 éf");
    // `bc` covers the ignorable between them; `c` alone does not.
    assert_eq!((v.start(1), v.end(3)), (1, 6));
    assert_eq!((v.start(2), v.end(3)), (5, 6));
    // `5` is the second fullwidth digit, whole.
    let five = text.find('5').unwrap();
    assert_eq!(&s[v.start(five)..v.end(five + 1)], "５");
    // `é` is the letter and its mark.
    let e = text.find('é').unwrap();
    assert_eq!(&s[v.start(e)..v.end(e + 'é'.len_utf8())], "e\u{301}");
    // A span ending in the middle of a changed character covers all of it.
    let l = "\u{fdfa}".nfkc().next().unwrap().len_utf8();
    let v = View::of("x\u{fdfa}y").unwrap();
    assert_eq!((v.start(1), v.end(1 + l)), (1, 4));
  }

  #[test]
  fn the_next_non_ascii_byte_is_found_at_every_offset() {
    let s = "abcdefghijklmnopqrstuvwxyzé0123456789—end".as_bytes();
    for i in 0..=s.len() {
      let expected = i + s[i..].iter().position(|&x| x >= 0x80).unwrap_or(s.len() - i);
      assert_eq!(next_non_ascii(s, i), expected, "from {i}");
    }
  }

  #[test]
  fn hostile_runs_stay_linear() {
    for s in [
      "a".to_string() + &"\u{301}".repeat(100_000),
      "\u{200b}".repeat(100_000),
      "\u{fdfa}".repeat(30_000),
      "x\u{200b}\u{301}".repeat(30_000),
      "\u{ff10}".repeat(100_000),
    ] {
      work::take();
      let v = View::of(&s).unwrap();
      let w = work::take();
      assert!(w <= 40 * s.len() as u64, "work {w} for {} bytes", s.len());
      assert!(v.runs.len() <= s.len() && v.text.len() <= 12 * s.len());
      // A span of the view between character boundaries maps inside the text, between
      // character boundaries.
      let text = std::str::from_utf8(&v.text).unwrap();
      for (n, c) in text.char_indices().step_by(97) {
        let (a, e) = (v.start(n), v.end(n + c.len_utf8()));
        assert!(a < e && e <= s.len() && s.is_char_boundary(a) && s.is_char_boundary(e));
      }
    }
  }
}
