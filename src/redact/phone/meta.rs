//! libphonenumber's numbering plans, compiled by `scripts/phone-metadata.mjs` into
//! `metadata.tsv` (one line per region: country calling code, possible national lengths, the
//! national prefix as the metadata parses it, the national number patterns of every number type)
//! and read here on first use.
//!
//! Two questions are answered, both on a string of ASCII digits a detector has already cut out:
//! is `+CC NSN` a number of one of CC's regions, and is a nationally written number (trunk prefix
//! optional) a number of any region. Each is one anchored match of a lazily built automaton over
//! at most 17 bytes, so validation costs the same whatever the text around it, and nothing is
//! built until a text holds a phone-shaped candidate.

use std::sync::OnceLock;

use regex_automata::meta::Regex;
use regex_automata::nfa::thompson::WhichCaptures;
use regex_automata::util::syntax;

use crate::redact::text::work;

const TABLE: &str = include_str!("metadata.tsv");

/// The most digits a number has (E.164: 15) plus room for a trunk or access prefix.
pub const MAX_DIGITS: usize = 17;

struct Region {
  cc: u16,
  /// Bit `n`: a national significant number of `n` digits is possible.
  lengths: u32,
  geographic: bool,
  prefix: Option<&'static str>,
  pattern: &'static str,
}

/// The regions sharing one country calling code.
pub struct Code {
  cc: u16,
  digits: usize,
  lengths: u32,
  regions: std::ops::Range<usize>,
  regex: OnceLock<Regex>,
}

struct Meta {
  regions: Vec<Region>,
  /// Sorted by `cc`.
  codes: Vec<Code>,
  national: OnceLock<Regex>,
}

fn meta() -> &'static Meta {
  static META: OnceLock<Meta> = OnceLock::new();
  META.get_or_init(|| {
    let mut regions: Vec<Region> = TABLE
      .lines()
      .filter(|l| !l.starts_with('#') && !l.is_empty())
      .map(|l| {
        let f: Vec<&str> = l.split('\t').collect();
        assert_eq!(f.len(), 5, "phone metadata line: {l}");
        let lengths =
          f[2].split(',').filter_map(|n| n.parse::<u32>().ok()).filter(|&n| n < 32).fold(0, |m, n| m | 1 << n);
        Region {
          cc: f[0].parse().expect("country code"),
          lengths,
          geographic: f[1] != "001",
          prefix: (f[3] != "-").then_some(f[3]),
          pattern: f[4],
        }
      })
      .collect();
    regions.sort_by_key(|r| r.cc);
    let mut codes: Vec<Code> = Vec::new();
    for (i, r) in regions.iter().enumerate() {
      match codes.last_mut() {
        Some(c) if c.cc == r.cc => {
          c.regions.end = i + 1;
          c.lengths |= r.lengths;
        }
        _ => codes.push(Code {
          cc: r.cc,
          digits: r.cc.to_string().len(),
          lengths: r.lengths,
          regions: i..i + 1,
          regex: OnceLock::new(),
        }),
      }
    }
    Meta { regions, codes, national: OnceLock::new() }
  })
}

/// `^(?:alternatives)$` over the regions, each its national number pattern after an optional
/// national prefix (libphonenumber strips the prefix when the rest is still a number).
fn build<'a>(regions: impl Iterator<Item = &'a Region>) -> Regex {
  let mut p = String::from("^(?:");
  for (k, r) in regions.enumerate() {
    if k > 0 {
      p.push('|');
    }
    match r.prefix {
      Some(np) => p.push_str(&format!("(?:{np})?(?:{})", r.pattern)),
      None => p.push_str(&format!("(?:{})", r.pattern)),
    }
  }
  p.push_str(")$");
  // Only "does it match": no capture groups, no prefilter (literal extraction over hundreds of
  // alternatives costs more than it saves on 17 bytes), and of the engines only the lazy DFA
  // (built per state on use) and the PikeVM.
  Regex::builder()
    .syntax(syntax::Config::new().unicode(false).utf8(false))
    .configure(
      Regex::config()
        .which_captures(WhichCaptures::None)
        .onepass(false)
        .backtrack(false)
        .dfa(false)
        .auto_prefilter(false),
    )
    .build(&p)
    .unwrap_or_else(|e| panic!("phone metadata pattern does not compile: {e}"))
}

/// The country calling code `digits` starts with (calling codes are prefix-free).
pub fn country_code(digits: &[u8]) -> Option<&'static Code> {
  let m = meta();
  (1..=3).filter(|&n| n <= digits.len()).find_map(|n| {
    let v = digits[..n].iter().fold(0u16, |v, &d| v * 10 + (d - b'0') as u16);
    if digits[0] == b'0' {
      return None;
    }
    m.codes.binary_search_by_key(&v, |c| c.cc).ok().map(|i| &m.codes[i]).filter(|c| c.digits == n)
  })
}

impl Code {
  /// Number of digits of the calling code.
  pub fn len(&self) -> usize {
    self.digits
  }

  /// Can one of this code's regions have a national number of `n` digits?
  pub fn possible(&self, n: usize) -> bool {
    n < 32 && self.lengths & (1 << n) != 0
  }

  /// Is `nsn` (the digits after the calling code, a national prefix allowed) a number of one of
  /// this code's regions, of any type?
  pub fn valid(&self, nsn: &[u8]) -> bool {
    if nsn.is_empty() || nsn.len() > MAX_DIGITS {
      return false;
    }
    work::add(nsn.len());
    let m = meta();
    self.regex.get_or_init(|| build(m.regions[self.regions.clone()].iter())).is_match(nsn)
  }
}

/// Is `digits`, as written inside a country (national prefix optional), a number of any
/// geographic region?
pub fn valid_national(digits: &[u8]) -> bool {
  if digits.is_empty() || digits.len() > MAX_DIGITS {
    return false;
  }
  work::add(digits.len());
  let m = meta();
  m.national.get_or_init(|| build(m.regions.iter().filter(|r| r.geographic))).is_match(digits)
}

#[cfg(test)]
mod tests {
  use super::*;

  fn intl(d: &str) -> bool {
    let d = d.as_bytes();
    country_code(d).is_some_and(|c| c.valid(&d[c.len()..]))
  }

  #[test]
  fn calling_codes_and_validation() {
    assert_eq!(country_code(b"14155550132").map(|c| c.len()), Some(1));
    assert_eq!(country_code(b"442079460958").map(|c| c.len()), Some(2));
    assert_eq!(country_code(b"35312345678").map(|c| c.len()), Some(3));
    assert!(country_code(b"28012345").is_none(), "+28x is unassigned");
    assert!(intl("442079460958"));
    assert!(intl("4402079460958"), "a national prefix after the calling code is stripped");
    assert!(intl("16502530000"));
    assert!(!intl("11234567890"), "NANP area codes do not start with 1");
    assert!(intl("6837012"), "Niue: four-digit numbers");
    assert!(valid_national(b"02079460958"));
    assert!(valid_national(b"0612345678"));
    assert!(valid_national(b"89123456789"), "Russia's trunk prefix 8");
    assert!(!valid_national(b"0000000000"));
  }
}
