//! What every detector shares during one call: the text, the spans found so far with their merge
//! priorities, and the memos that keep each detector linear in the length of the text.
//!
//! Why memos: a detector triggered at many places that then searches far from each one (for the
//! END line of a PEM block, the end of a command line, the `://` of the URL a token sits in) costs
//! its window once per trigger, and a text made of nothing but triggers costs windows times
//! triggers. Each memo answers its question for positions that move forward (the order in which
//! the engine visits the text), searching every byte about once over the whole call.

use super::text::{is_url_break, url_chunk_has_scheme, work, URL_CHUNK_MAX};

// Merge priorities: when spans overlap, the merged span takes the kind of the highest.
pub const P_PRIVATE_KEY: u8 = 100;
pub const P_TOKEN: u8 = 90;
pub const P_JWT: u8 = 85;
pub const P_URL_CRED: u8 = 80;
pub const P_CARD: u8 = 75;
pub const P_IBAN: u8 = 74;
pub const P_SSN: u8 = 70;
pub const P_EMAIL: u8 = 60;
pub const P_PASSWORD: u8 = 55;
pub const P_SECRET: u8 = 50;
pub const P_IP: u8 = 40;
pub const P_PHONE: u8 = 30;
pub const P_ENTROPY: u8 = 10;

/// A detected span, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit {
  pub start: usize,
  pub end: usize,
  pub kind: &'static str,
  pub method: &'static str,
  pub prio: u8,
  /// Kept only if it overlaps a provider token match (a value with a known token prefix: its
  /// format rule decides).
  pub cond: bool,
}

/// Per-call detection state.
pub struct Ctx<'a> {
  pub t: &'a [u8],
  pub hits: Vec<Hit>,
  pub blocked: bool,
  /// Public key / certificate blocks (their base64 is not a secret): disjoint, in order.
  public_zones: Vec<(usize, usize)>,
  /// Where earlier matches of some detectors end: a trigger inside one is not looked at again.
  pub email_until: usize,
  pub jwt_until: usize,
  pub pem_until: usize,
  pub putty_until: usize,
  /// Where the last `curl` command looked at ends: a later `curl` inside it scans only what lies
  /// beyond.
  pub curl_until: usize,
  /// Where the last `.netrc` entry and the last Kubernetes secret looked at end.
  pub netrc_until: usize,
  pub k8s_until: usize,
  /// `ata:` (of `data:` and `stringData:`), for Kubernetes secrets.
  pub k8s_data: Next,
  /// Per provider rule: the end of its last match, accepted or not. Matches of one rule do not
  /// overlap (as with a regex's find-all), so a run of keywords costs one match, not one each.
  /// Allocated when a rule first runs (most short texts run none).
  rule_until: Vec<usize>,
  rules: usize,
  /// `-----END` / `-----end`, `Private-Lines:`, `Private-MAC:`, and line ends.
  pub pem_end_upper: Next,
  pub pem_end_lower: Next,
  pub putty_lines: Next,
  pub putty_mac: Next,
  pub line_end: Next,
  /// Where unquoted assignment values end, and how many values ending there were looked at.
  pub value_end: Next,
  pub value_chain: (usize, u32),
  /// Where the credentials of the last URL redacted end; where URLs end (whitespace, a quote,
  /// `<`, `>`, a backtick); the next `:`, `/`, `?` and the last `@`.
  pub url_until: usize,
  pub url_end: Next,
  pub url_colon: Next,
  pub url_slash: Next,
  pub url_query: Next,
  pub url_at_sign: LastByte,
  /// The next `@`: a URL with none within its longest length has no credentials.
  pub url_next_at: Next,
  /// Is a position inside a URL? One memo per pass over the text (tokens, then e-mails).
  pub url_for_tokens: UrlScan,
  pub url_for_emails: UrlScan,
}

impl<'a> Ctx<'a> {
  pub fn new(t: &'a [u8], rules: usize) -> Self {
    Ctx {
      t,
      hits: Vec::new(),
      blocked: false,
      public_zones: Vec::new(),
      email_until: 0,
      jwt_until: 0,
      pem_until: 0,
      putty_until: 0,
      curl_until: 0,
      netrc_until: 0,
      k8s_until: 0,
      k8s_data: Next::new(Needle::Str(b"ata:")),
      rule_until: Vec::new(),
      rules,
      pem_end_upper: Next::new(Needle::Str(b"-----END")),
      pem_end_lower: Next::new(Needle::Str(b"-----end")),
      putty_lines: Next::new(Needle::Str(b"Private-Lines:")),
      putty_mac: Next::new(Needle::Str(b"Private-MAC:")),
      line_end: Next::new(Needle::LineEnd),
      value_end: Next::new(Needle::ValueStop),
      value_chain: (usize::MAX, 0),
      url_until: 0,
      url_end: Next::new(Needle::UrlBreak),
      url_colon: Next::new(Needle::Byte(b':')),
      url_slash: Next::new(Needle::Byte(b'/')),
      url_query: Next::new(Needle::Byte(b'?')),
      url_at_sign: LastByte::new(b'@'),
      url_next_at: Next::new(Needle::Byte(b'@')),
      url_for_tokens: UrlScan::default(),
      url_for_emails: UrlScan::default(),
    }
  }

  /// Where the last match of rule `ri` ended (0: none yet).
  #[inline]
  pub fn rule_until(&self, ri: usize) -> usize {
    self.rule_until.get(ri).copied().unwrap_or(0)
  }

  pub fn set_rule_until(&mut self, ri: usize, end: usize) {
    if self.rule_until.is_empty() {
      self.rule_until = vec![0; self.rules];
    }
    self.rule_until[ri] = self.rule_until[ri].max(end);
  }

  pub fn push(&mut self, start: usize, end: usize, kind: &'static str, method: &'static str, prio: u8) {
    if end > start {
      self.hits.push(Hit { start, end, kind, method, prio, cond: false });
    }
  }

  pub fn push_conditional(&mut self, start: usize, end: usize, kind: &'static str, method: &'static str, prio: u8) {
    if end > start {
      self.hits.push(Hit { start, end, kind, method, prio, cond: true });
    }
  }

  /// Records a public block `start..end`; blocks come in order and do not overlap (the PEM
  /// detector skips what a block covers).
  pub fn add_public_zone(&mut self, start: usize, end: usize) {
    debug_assert!(self.public_zones.last().is_none_or(|&(_, e)| e <= start));
    self.public_zones.push((start, end));
  }

  /// Is `pos` inside a public block? (Binary search: a text of many small certificates has many.)
  pub fn in_public_zone(&self, pos: usize) -> bool {
    let i = self.public_zones.partition_point(|&(s, _)| s <= pos);
    i > 0 && pos < self.public_zones[i - 1].1
  }

  /// End of the line containing `pos` (exclusive).
  pub fn next_line_end(&mut self, pos: usize) -> usize {
    self.line_end.find(self.t, pos).unwrap_or(self.t.len())
  }
}

/// What [`Next`] looks for.
#[derive(Clone, Copy, Debug)]
pub enum Needle {
  Str(&'static [u8]),
  Byte(u8),
  /// Whitespace, a quote, `<`, `>` or a backtick: where a URL ends.
  UrlBreak,
  /// `\n` or `\r`.
  LineEnd,
  /// The end of an unquoted value: whitespace, a quote, one of `, ; & | < > ) ] }`, or an escape
  /// sequence (`\n`, `\"`, ...) as written inside a string literal.
  ValueStop,
}

impl Needle {
  /// The first occurrence starting in `from..stop` (an occurrence may extend past `stop`).
  fn search(self, t: &[u8], from: usize, stop: usize) -> Option<usize> {
    let found = match self {
      Needle::Str(s) => memchr::memmem::find(&t[from..(stop + s.len() - 1).min(t.len())], s),
      Needle::Byte(b) => memchr::memchr(b, &t[from..stop]),
      Needle::LineEnd => memchr::memchr2(b'\n', b'\r', &t[from..stop]),
      Needle::UrlBreak => t[from..stop].iter().position(|&b| STOPS[b as usize] & URL_BREAK != 0),
      Needle::ValueStop => t[from..stop].iter().enumerate().position(|(i, &b)| {
        STOPS[b as usize] & VALUE_STOP != 0
          || (b == b'\\' && matches!(t.get(from + i + 1), Some(b'n' | b'r' | b't' | b'"' | b'\'' | b'\\')))
      }),
    };
    work::add(found.map_or(stop - from, |x| x + 1));
    found.map(|x| from + x)
  }
}

/// Bytes that end a URL ([`Needle::UrlBreak`]) and an unquoted value ([`Needle::ValueStop`], but
/// for its escapes), as a table: both searches go a byte at a time over what follows each URL
/// and each assignment, and one load per byte is cheaper than the comparisons.
const URL_BREAK: u8 = 1;
const VALUE_STOP: u8 = 2;
static STOPS: [u8; 256] = {
  let mut t = [0u8; 256];
  let mut i = 0;
  while i < 256 {
    let b = i as u8;
    if b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'<' | b'>' | b'`') {
      t[i] |= URL_BREAK;
    }
    if b.is_ascii_whitespace()
      || matches!(b, b'"' | b'\'' | b'`' | b',' | b';' | b'&' | b'|' | b'<' | b'>' | b')' | b']' | b'}')
    {
      t[i] |= VALUE_STOP;
    }
    i += 1;
  }
  t
};

/// The next occurrence of a needle at or after a position. Knows that no occurrence starts in
/// `lo..found` (`lo..` to the end when `found` is `None`), so forward-moving questions search
/// each byte once; a question before `lo` searches only the part before `lo`.
#[derive(Debug)]
pub struct Next {
  needle: Needle,
  lo: usize,
  found: Option<usize>,
  known: bool,
}

impl Next {
  pub const fn new(needle: Needle) -> Self {
    Next { needle, lo: 0, found: None, known: false }
  }

  pub fn find(&mut self, t: &[u8], from: usize) -> Option<usize> {
    let from = from.min(t.len());
    if self.known && from >= self.lo && self.found.is_none_or(|f| from <= f) {
      return self.found;
    }
    if self.known && from < self.lo {
      // Only what starts before `lo` is new.
      let stop = self.lo.min(t.len());
      if let Some(x) = self.needle.search(t, from, stop) {
        self.found = Some(x);
      }
      self.lo = from;
      return self.found;
    }
    self.found = self.needle.search(t, from, t.len());
    self.lo = from;
    self.known = true;
    self.found
  }
}

/// The last occurrence of a byte before a position (and not before a floor), for positions that
/// move forward: each byte is searched once; a question out of order searches its window.
#[derive(Debug)]
pub struct LastByte {
  byte: u8,
  upto: usize,
  last: Option<usize>,
}

impl LastByte {
  pub const fn new(byte: u8) -> Self {
    LastByte { byte, upto: 0, last: None }
  }

  /// The last `byte` in `floor..end`.
  pub fn find(&mut self, t: &[u8], floor: usize, end: usize) -> Option<usize> {
    let end = end.min(t.len());
    let floor = floor.min(end);
    if end < self.upto {
      work::add(end - floor);
      return memchr::memrchr(self.byte, &t[floor..end]).map(|x| floor + x);
    }
    let from = self.upto.max(floor);
    work::add(end - from);
    if let Some(x) = memchr::memrchr(self.byte, &t[from..end]) {
      self.last = Some(from + x);
    }
    self.upto = end;
    self.last.filter(|&x| x >= floor)
  }
}

/// "Is `pos` inside a URL?": does the chunk of text before `pos` (back to whitespace, a quote, a
/// bracket, or [`URL_CHUNK_MAX`] bytes) hold a `://`? The answer is read backwards from `pos` to
/// the nearest break (a few bytes in prose); for positions that move forward it stops where the
/// last question's look ended and takes the rest from what it remembers, so a text without breaks
/// is not read again for every question.
#[derive(Debug, Default)]
pub struct UrlScan {
  /// Bytes before `upto` have been looked at; the last break among them, and the last `://`
  /// wholly before `upto` that starts after that break.
  upto: usize,
  last_break: Option<usize>,
  last_scheme: Option<usize>,
}

impl UrlScan {
  pub fn inside_url(&mut self, t: &[u8], pos: usize) -> bool {
    let pos = pos.min(t.len());
    if pos < self.upto {
      return url_chunk_has_scheme(t, pos); // out of order: the bounded look-back
    }
    let floor = pos.saturating_sub(URL_CHUNK_MAX);
    let stop = self.upto.max(floor);
    // The nearest break before `pos`, looking no further back than `stop`.
    let back = t[stop..pos].iter().rev().position(|&b| is_url_break(b));
    work::add(back.map_or(pos - stop, |x| x + 1));
    let (start, remembered) = match back {
      Some(x) => {
        let b = pos - x - 1;
        self.last_break = Some(b);
        (b + 1, None)
      }
      None if floor >= self.upto => {
        self.last_break = None; // any break lies before the look-back limit
        (floor, None)
      }
      // No break since the last question: its chunk goes on.
      None => (self.last_break.map_or(0, |b| b + 1).max(floor), self.last_scheme),
    };
    // The last `://` wholly inside `start..pos`: in the part not looked at yet (an occurrence may
    // begin up to two bytes before `upto`), else the one remembered.
    let from = start.max(self.upto.saturating_sub(2));
    work::add(pos - from);
    let fresh = last_scheme_sep(&t[from..pos]).map(|x| from + x);
    let scheme = fresh.or(remembered).filter(|&q| q >= start);
    self.upto = pos;
    self.last_scheme = scheme;
    scheme.is_some()
  }
}

/// The last `://` wholly inside `w`. The windows [`UrlScan`] asks about are mostly a few bytes
/// (those since its last question): a plain backward scan costs less there than building a
/// substring searcher per question (5% of the time of a text of short URLs).
fn last_scheme_sep(w: &[u8]) -> Option<usize> {
  w.windows(3).rposition(|x| x == b"://")
}

#[cfg(test)]
mod tests {
  use super::{last_scheme_sep, UrlScan, STOPS, URL_BREAK, VALUE_STOP};

  /// The table of URL breaks and value stops holds the bytes their definitions name, and no other.
  #[test]
  fn stop_table_matches_its_definition() {
    for b in 0..=255u8 {
      let url = b.is_ascii_whitespace() || b"\"'<>`".contains(&b);
      let value = b.is_ascii_whitespace() || b"\"'`,;&|<>)]}".contains(&b);
      assert_eq!(STOPS[b as usize] & URL_BREAK != 0, url, "{b}");
      assert_eq!(STOPS[b as usize] & VALUE_STOP != 0, value, "{b}");
    }
  }

  /// `last_scheme_sep` finds what a substring search from the end finds, and `UrlScan` answers
  /// as the bounded look-back does, on strings dense in `:` and `/`.
  #[test]
  fn scheme_search_matches_the_substring_search() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      x % n
    };
    for _ in 0..3000 {
      let len = next(40) as usize;
      let w: Vec<u8> = (0..len).map(|_| b":/a@ \""[next(6) as usize]).collect();
      assert_eq!(last_scheme_sep(&w), memchr::memmem::rfind(&w, b"://"), "{}", String::from_utf8_lossy(&w));
      // Every position in order, then positions with gaps (a detector asks only where it looks).
      let mut scan = UrlScan::default();
      for pos in 0..=len {
        assert_eq!(scan.inside_url(&w, pos), super::url_chunk_has_scheme(&w, pos), "{pos}");
      }
      let mut scan = UrlScan::default();
      let mut pos = 0;
      while pos <= len {
        assert_eq!(scan.inside_url(&w, pos), super::url_chunk_has_scheme(&w, pos), "{pos}");
        pos += 1 + next(7) as usize;
      }
    }
  }
}
