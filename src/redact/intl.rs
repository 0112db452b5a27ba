//! Internationalised e-mail addresses (RFC 6531 local parts in UTF-8, IDN domains in their
//! Unicode form, non-Latin top-level domains such as `.рф` and `.中国`): where an address that
//! holds non-ASCII letters starts and ends around its `@`.
//!
//! The detectors scan the normalised view (`norm.rs`, NFKC), so an address reads the same in
//! composed and decomposed spellings. A letter of any script, a digit, or a combining mark
//! belongs to an address; punctuation and symbols of every script end it. Scripts written
//! without spaces between words (Han, kana, Hangul with its attached particles, Thai, Lao,
//! Khmer, Myanmar) put an address right against the words around it (`请联系foo@example.com`,
//! `taro@example.co.jpまで`), so where ASCII letters meet one of these scripts, the address ends.

use super::text::work;

#[inline]
fn is_local_ascii(b: u8) -> bool {
  b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-')
}

/// What a character of an address is, for the script-change rule.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
  /// ASCII letter or digit.
  Ascii,
  /// A letter, digit or mark of a script written without spaces.
  Unspaced,
  /// Any other letter, digit or mark; and the ASCII punctuation of addresses (`.`, `-`, ...),
  /// which joins anything.
  Neutral,
}

/// Scripts written without spaces between words, by block.
fn unspaced(c: char) -> bool {
  matches!(c as u32,
    0x0E00..=0x0EFF // Thai, Lao
    | 0x1000..=0x109F // Myanmar
    | 0x1100..=0x11FF // Hangul jamo
    | 0x1780..=0x17FF // Khmer
    | 0x2E80..=0x2FDF // CJK radicals
    | 0x3040..=0x31FF // kana, bopomofo, Hangul compatibility jamo
    | 0x3400..=0x4DBF // CJK extension A
    | 0x4E00..=0x9FFF // CJK unified ideographs
    | 0xA960..=0xA97F // Hangul jamo extended A
    | 0xAC00..=0xD7FF // Hangul syllables, jamo extended B
    | 0xF900..=0xFAFF // CJK compatibility ideographs
    | 0xFF66..=0xFFDC // halfwidth kana and Hangul
    | 0x20000..=0x3FFFF // CJK extensions B and later
  )
}

/// The non-ASCII character ending at `i` (its start), if `t[..i]` ends in one.
fn char_before(t: &[u8], i: usize) -> Option<(char, usize)> {
  let mut s = i.checked_sub(1)?;
  // At most three continuation bytes precede the lead byte.
  while s > 0 && i - s < 4 && t[s] & 0xC0 == 0x80 {
    s -= 1;
  }
  let c = std::str::from_utf8(&t[s..i]).ok()?.chars().next()?;
  Some((c, s))
}

/// The non-ASCII character starting at `i` (its end).
fn char_at(t: &[u8], i: usize) -> Option<(char, usize)> {
  let e = (i + 4).min(t.len());
  let head = match std::str::from_utf8(&t[i..e]) {
    Ok(s) => s,
    Err(err) => std::str::from_utf8(&t[i..i + err.valid_up_to()]).ok()?,
  };
  let c = head.chars().next()?;
  Some((c, i + c.len_utf8()))
}

/// A non-ASCII character that can be part of an address, and its kind.
fn non_ascii_kind(c: char) -> Option<Kind> {
  if !(c.is_alphanumeric() || unicode_normalization::char::is_combining_mark(c)) {
    return None;
  }
  Some(if unspaced(c) { Kind::Unspaced } else { Kind::Neutral })
}

/// Do two neighbouring characters of kinds `a` and `b` belong to one address?
#[inline]
fn joins(a: Option<Kind>, b: Kind) -> bool {
  !matches!((a, b), (Some(Kind::Ascii), Kind::Unspaced) | (Some(Kind::Unspaced), Kind::Ascii))
}

/// Start of the local part that ends at `c` (the `@`), looking back at most `max` bytes.
pub fn local_start(t: &[u8], c: usize, max: usize) -> usize {
  let floor = c.saturating_sub(max);
  let mut i = c;
  let mut right: Option<Kind> = None;
  // Each turn moves `i` back by one character, or stops.
  while i > floor {
    let b = t[i - 1];
    let (k, s) = if b < 0x80 {
      if !is_local_ascii(b) {
        break;
      }
      (if b.is_ascii_alphanumeric() { Kind::Ascii } else { Kind::Neutral }, i - 1)
    } else {
      match char_before(t, i) {
        Some((ch, s)) if s >= floor => match non_ascii_kind(ch) {
          Some(k) => (k, s),
          None => break,
        },
        _ => break,
      }
    };
    if !joins(Some(k), right.unwrap_or(Kind::Neutral)) {
      break;
    }
    right = Some(k);
    i = s;
  }
  work::add(c - i + 1);
  i
}

/// End of the domain that starts at `d` (after the `@`), looking at most `max` bytes ahead.
pub fn domain_end(t: &[u8], d: usize, max: usize) -> usize {
  let stop = d.saturating_add(max).min(t.len());
  let mut i = d;
  let mut left: Option<Kind> = None;
  // Each turn moves `i` on by one character, or stops.
  while i < stop {
    let b = t[i];
    let (k, e) = if b < 0x80 {
      if !(b.is_ascii_alphanumeric() || b == b'-' || b == b'.') {
        break;
      }
      (if b.is_ascii_alphanumeric() { Kind::Ascii } else { Kind::Neutral }, i + 1)
    } else {
      match char_at(t, i) {
        Some((ch, e)) if e <= stop => match non_ascii_kind(ch) {
          Some(k) => (k, e),
          None => break,
        },
        _ => break,
      }
    };
    if !joins(left, k) {
      break;
    }
    left = Some(k);
    i = e;
  }
  work::add(i - d + 1);
  i
}

/// A top-level domain in Unicode form: two or more letters (or marks) of a script other than
/// ASCII (`рф`, `中国`, `ไทย`).
pub fn is_unicode_tld(tld: &[u8]) -> bool {
  let Ok(s) = std::str::from_utf8(tld) else { return false };
  s.chars().count() >= 2
    && s.chars().all(|c| !c.is_ascii() && (c.is_alphabetic() || unicode_normalization::char::is_combining_mark(c)))
}

#[cfg(test)]
mod tests {
  use super::*;

  fn local(s: &str) -> &str {
    let c = s.find('@').unwrap();
    &s[local_start(s.as_bytes(), c, 64)..c]
  }

  fn domain(s: &str) -> &str {
    let c = s.find('@').unwrap() + 1;
    &s[c..domain_end(s.as_bytes(), c, 253)]
  }

  #[test]
  fn addresses_in_every_script() {
    assert_eq!(local("mail jürgen.müller@gmx.de"), "jürgen.müller");
    assert_eq!(domain("info@müller-bäckerei.de."), "müller-bäckerei.de.");
    assert_eq!(local("напишите anna.petrova@почта.рф"), "anna.petrova");
    assert_eq!(domain("anna.petrova@почта.рф, спасибо"), "почта.рф");
    assert_eq!(local("请联系foo@example.com"), "foo");
    assert_eq!(domain("メールはtaro@example.co.jpまで"), "example.co.jp");
    assert_eq!(local("「用户@例子.中国」"), "用户");
    assert_eq!(domain("用户@例子.中国」"), "例子.中国");
    assert_eq!(domain("x@naver.com으로 보내주세요"), "naver.com");
    assert!(is_unicode_tld("рф".as_bytes()) && is_unicode_tld("中国".as_bytes()));
    assert!(!is_unicode_tld("ф".as_bytes()) && !is_unicode_tld("comф".as_bytes()) && !is_unicode_tld(b"com"));
  }

  #[test]
  fn walks_stop_within_their_bound() {
    let long = "ü".repeat(200) + "@" + &"ü".repeat(200);
    let c = long.find('@').unwrap();
    assert!(c - local_start(long.as_bytes(), c, 64) <= 64);
    assert!(domain_end(long.as_bytes(), c + 1, 253) - (c + 1) <= 253);
  }
}
