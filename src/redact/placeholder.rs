//! Placeholders: values that stand for a secret instead of being one (`<your-token>`,
//! `${API_KEY}`, `xxxxxxxx`, `your_api_key_here`, AWS's documented `AKIA…EXAMPLE` key), and the
//! common words that follow `password:` in code without being a password (`string`, `None`).
//!
//! A placeholder is a whole value that is one. A value that merely contains such letters is not:
//! a random token holds `xxxx`, `dummy` or `example` now and then (4 in 200,000 random GitHub
//! tokens did), and a token with a known prefix and shape is a secret whatever letters it holds.
//! So the test is never "contains a placeholder word" but "is made of nothing else": after its
//! known token prefix, every piece of the value must be a placeholder word, a generic word such as
//! `api` or `key`, a mask (`xxxx`, `0000`), a counting run (`1234`, `abcd`) or a short number, and
//! at least one piece must say "placeholder". Besides, a few shapes of the whole value that random
//! text shows with negligible odds mark one too: one character dominating it (with no part
//! without it long enough to be a secret of its own), a counting run of eight, AWS's `EXAMPLE`
//! ending.
//!
//! A value that has the exact shape of a known format (a provider rule's match, or the alphabet
//! and length the named provider's catalogue entry states) is judged without the counting run:
//! there `12345678` is an id inside a real token (`xoxb-123456789012-...`), and the rule sets'
//! own examples of such formats (`12345678-ABCD-ABCD-ABCD-1234567890AB` after `snyk_token`) are
//! what a user writes too. Masks, markers and bracketed hints still make it a placeholder.

use super::rules::{token_prefix_len, PROVIDER_WORDS};
use super::text::{trim_quotes, work};

/// Words that say a value is a stand-in.
const MARKERS: &[&str] = &[
  "your",
  "yours",
  "here",
  "insert",
  "replace",
  "replaceme",
  "placeholder",
  "redacted",
  "masked",
  "hidden",
  "removed",
  "dummy",
  "example",
  "examples",
  "sample",
  "fake",
  "changeme",
  "changeit",
  "notreal",
  "todo",
  "tbd",
  "fixme",
];

/// Words that make up placeholders without saying so themselves (`your_api_key_here`).
const GENERIC: &[&str] = &[
  "a",
  "an",
  "the",
  "my",
  "me",
  "to",
  "for",
  "of",
  "with",
  "and",
  "or",
  "put",
  "paste",
  "enter",
  "add",
  "set",
  "use",
  "go",
  "goes",
  "real",
  "actual",
  "own",
  "not",
  "no",
  "new",
  "some",
  "any",
  "this",
  "that",
  "it",
  "is",
  "change",
  "secret",
  "secrets",
  "token",
  "tokens",
  "key",
  "keys",
  "api",
  "apikey",
  "password",
  "passwords",
  "passwd",
  "pass",
  "pwd",
  "passphrase",
  "access",
  "auth",
  "bearer",
  "client",
  "app",
  "application",
  "private",
  "public",
  "account",
  "user",
  "username",
  "id",
  "value",
  "string",
  "str",
  "live",
  "prod",
  "production",
  "test",
  "testing",
  "dev",
  "demo",
  "org",
  "project",
  "proj",
  "service",
  "webhook",
  "signing",
  "session",
  "refresh",
  "oauth",
  "bot",
  "admin",
  "personal",
  "sk",
  "pk",
  "rk",
  "pat",
  "foo",
  "bar",
  "baz",
  "qux",
  "abc",
  "xyz",
];

/// Longest word of the two lists above and of the provider names.
const LONGEST_WORD: usize = 16;

/// Every word of [`MARKERS`], [`GENERIC`] and the provider names, looked up once per candidate
/// (`true` for a marker), and a bit per word's first two letters: most letter pairs of a random
/// token start no word, so the lookups of all lengths from there are skipped.
struct Vocabulary {
  words: rustc_hash::FxHashMap<&'static [u8], bool>,
  pairs: Box<[u64; 1024]>,
}

fn vocabulary() -> &'static Vocabulary {
  static VOCABULARY: std::sync::OnceLock<Vocabulary> = std::sync::OnceLock::new();
  VOCABULARY.get_or_init(|| {
    let mut words = rustc_hash::FxHashMap::default();
    let mut pairs = Box::new([0u64; 1024]);
    for (list, marker) in [(PROVIDER_WORDS.words(), false), (GENERIC, false), (MARKERS, true)] {
      for w in list {
        let w = w.as_bytes();
        words.insert(w, marker);
        if w.len() >= 2 {
          let i = pair(w[0], w[1]);
          pairs[i >> 6] |= 1 << (i & 63);
        }
      }
    }
    Vocabulary { words, pairs }
  })
}

/// Index of two lowercase letters in a 32 x 32 table.
fn pair(a: u8, b: u8) -> usize {
  (((a & 31) as usize) << 5) | (b & 31) as usize
}

/// Values that stand for a secret rather than being one: variable references (`$TOKEN`,
/// `${{ secrets.X }}`, `%PASS%`, `{{ .Values.x }}`), bracketed hints (`<token>`, `[PASSWORD]`),
/// masks (`xxxx`, `****`, `####`), AWS's documented example keys (`AKIA…EXAMPLE`), strings
/// dominated by one character, and values made only of placeholder pieces (see the module docs).
pub fn is_placeholder(v: &[u8]) -> bool {
  placeholder(v, true)
}

/// [`is_placeholder`] for a value that has a known format's exact shape (see the module docs):
/// counting runs do not make it one.
pub fn is_placeholder_in_format(v: &[u8]) -> bool {
  placeholder(v, false)
}

fn placeholder(v: &[u8], counting_runs: bool) -> bool {
  let v = trim_quotes(v);
  if v.len() < 3 {
    return true;
  }
  work::add(v.len());
  let first = v[0];
  // Variable references and templates: the whole value names another.
  if first == b'$' && matches!(v[1], b'{' | b'(' | b'_' | b'A'..=b'Z' | b'a'..=b'z') {
    return true;
  }
  if first == b'%' && (v.ends_with(b"%") || v.ends_with(b"s") || v.ends_with(b"d")) {
    return true;
  }
  if matches!(first, b'<' | b'{' | b'[') {
    return true;
  }
  if v.starts_with(b"process.env") || v.starts_with(b"os.environ") || v.starts_with(b"env.") || v.starts_with(b"ENV[") {
    return true;
  }
  if memchr::memmem::find(v, b"${").is_some() || memchr::memmem::find(v, b"{{").is_some() {
    return true;
  }
  // AWS's documented example keys end so (`AKIA` + `IOSFODNN7EXAMPLE`, `…EXAMPLEKEY`); a random
  // base62 token does with odds of 1 in 62^7.
  if v.ends_with(b"EXAMPLE") || v.ends_with(b"EXAMPLEKEY") {
    return true;
  }
  // One character dominates (`aaaaaaa`, `glc_1111111111`, `0000-0000`).
  let mut counts = [0u16; 128];
  let (mut alnum, mut distinct, mut top, mut top_char) = (0usize, 0usize, 0usize, 0u8);
  for &b in v {
    if b.is_ascii_alphanumeric() {
      let c = &mut counts[b as usize];
      *c = c.saturating_add(1);
      alnum += 1;
      distinct += (*c == 1) as usize;
      if *c as usize > top {
        (top, top_char) = (*c as usize, b);
      }
    }
  }
  if alnum == 0 {
    return true;
  }
  if distinct <= 2 && alnum >= 6 && top * 10 >= alnum * 8 {
    return true;
  }
  // ... or a typical mask character makes up most of it (`sntryu_aaaa...`, `AIzaaaaa...`), and
  // no part without it is long enough to be a secret of its own
  // (`xoxa-2-511111111-...-e039d02840a0b9379c` has one: its `1`s are ids).
  if alnum >= 12
    && top * 2 > alnum
    && matches!(top_char, b'x' | b'X' | b'0' | b'1' | b'a' | b'A' | b'9' | b'z' | b'Z')
    && longest_run_without(v, top_char) < 16
  {
    return true;
  }
  // A counting run of 8 (`abcdefgh`, `12345678`, a keyboard-walk example): random text holds one
  // with odds below 1 in 10^10, unlike a short word.
  if counting_runs && longest_ascending_run(v) >= 8 {
    return true;
  }
  made_of_placeholder_pieces(strip_token_prefix(v))
}

/// The longest placeholder this module writes, brackets included (`[REDACTED:` + kind + `]`).
const MAX_OWN_PLACEHOLDER: usize = 64;

/// The spans (byte offsets, sorted, disjoint) of the placeholders [`super::redact`] writes:
/// `[REDACTED:<KIND>]` and the pseudonyms `[<KIND>_<8 lowercase hex>]`, `KIND` one of
/// [`super::KINDS`] in upper case. Text redacted once is often redacted again (a plugin
/// redacts, then the core; a dead letter is captured again): a detection inside one of these is
/// the first pass's own output, not a secret, and is dropped, so a second pass leaves the text
/// as it is. One forward pass over the `[`s, each looked at for a bounded length.
pub fn own_placeholders(t: &[u8]) -> Vec<(usize, usize)> {
  let mut out = Vec::new();
  for at in memchr::memchr_iter(b'[', t) {
    let rest = &t[at + 1..];
    let window = &rest[..rest.len().min(MAX_OWN_PLACEHOLDER)];
    work::add(window.len());
    let Some(close) = memchr::memchr(b']', window) else { continue };
    if is_own(&window[..close]) {
      out.push((at, at + close + 2));
    }
  }
  out
}

/// Whether `inner` (between the brackets) is `REDACTED:<KIND>` or `<KIND>_<8 hex>`.
fn is_own(inner: &[u8]) -> bool {
  let kind = match inner.strip_prefix(b"REDACTED:") {
    Some(kind) => kind,
    None => {
      let Some(split) = inner.len().checked_sub(super::PSEUDONYM_HEX + 1) else { return false };
      let (kind, tail) = inner.split_at(split);
      let hex = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
      if tail[0] != b'_' || !tail[1..].iter().all(hex) {
        return false;
      }
      kind
    }
  };
  static UPPER: std::sync::OnceLock<std::collections::HashSet<Vec<u8>>> = std::sync::OnceLock::new();
  UPPER.get_or_init(|| super::KINDS.iter().map(|k| k.to_ascii_uppercase().into_bytes()).collect()).contains(kind)
}

/// The longest run of letters and digits of `v` that holds no `c`.
fn longest_run_without(v: &[u8], c: u8) -> usize {
  let (mut best, mut run) = (0, 0);
  for &b in v {
    run = if b.is_ascii_alphanumeric() && b != c { run + 1 } else { 0 };
    best = best.max(run);
  }
  best
}

/// Longest run of consecutive ascending letters or digits (`abcd`, `1234`).
fn longest_ascending_run(v: &[u8]) -> usize {
  let mut best = 1;
  let mut run = 1;
  for w in v.windows(2) {
    if w[1] == w[0].wrapping_add(1) && w[0].is_ascii_alphanumeric() {
      run += 1;
      best = best.max(run);
    } else {
      run = 1;
    }
  }
  best
}

/// `v` without the longest known token prefix it starts with (`ghp_`, `sk-ant-`, ...).
fn strip_token_prefix(v: &[u8]) -> &[u8] {
  &v[token_prefix_len(v)..]
}

/// Is every piece of `v` (runs of letters, runs of digits; anything else separates) placeholder
/// material, and does at least one piece say "placeholder"?
fn made_of_placeholder_pieces(v: &[u8]) -> bool {
  let class = |c: u8| {
    if c.is_ascii_alphabetic() {
      1
    } else if c.is_ascii_digit() {
      2
    } else {
      0
    }
  };
  let mut marked = false;
  let mut i = 0;
  while i < v.len() {
    let k = class(v[i]);
    let end = i + v[i..].iter().position(|&c| class(c) != k).unwrap_or(v.len() - i);
    let piece = &v[i..end];
    match k {
      1 => match letters_piece(piece) {
        Some(m) => marked |= m,
        None => return false,
      },
      2 => {
        let masked = piece.len() >= 4 && (repeated(piece) || ascending(piece));
        if !masked && piece.len() > 4 {
          return false;
        }
        marked |= masked;
      }
      // Separators; a run of three or more mask characters (`***`, `###`, `...`) says it too.
      _ => marked |= piece.len() >= 3 && repeated(piece) && matches!(piece[0], b'*' | b'#' | b'.' | b'-' | b'_'),
    }
    i = end; // `end > i`: the piece holds at least `v[i]`
  }
  marked
}

/// Splits a run of letters into placeholder words, masks (`xxxx`) and counting runs (`abcd`):
/// `Some(marked)` when it splits, `None` when some part of it is no such thing.
fn letters_piece(piece: &[u8]) -> Option<bool> {
  // Longer runs of letters are no placeholder words (masks and repeats were told apart before).
  const LONGEST_PIECE: usize = 64;
  let n = piece.len();
  if n > LONGEST_PIECE {
    return None;
  }
  let vocab = vocabulary();
  let mut lower = [0u8; LONGEST_PIECE];
  for (l, &b) in lower.iter_mut().zip(piece) {
    *l = b.to_ascii_lowercase();
  }
  let lower = &lower[..n];
  // reach[i]: the first i letters split; Some(true) when a marker is among the parts.
  let mut reach = [None::<bool>; LONGEST_PIECE + 1];
  reach[0] = Some(false);
  let mut furthest = 0;
  for i in 0..n {
    if i > furthest {
      return None; // nothing reaches past here (a random token fails within a few letters)
    }
    let Some(marked) = reach[i] else { continue };
    let mut mark = |to: usize, m: bool| {
      let r = &mut reach[to];
      *r = Some(r.unwrap_or(false) | marked | m);
      furthest = furthest.max(to);
    };
    let starts_a_word = |a: u8, b: u8| vocab.pairs[pair(a, b) >> 6] & (1 << (pair(a, b) & 63)) != 0;
    let longest = if n - i >= 2 && !starts_a_word(lower[i], lower[i + 1]) {
      1 // no longer word starts with these two letters
    } else {
      LONGEST_WORD.min(n - i)
    };
    for len in 1..=longest {
      if let Some(&marker) = vocab.words.get(&lower[i..i + len]) {
        mark(i + len, marker);
      }
    }
    // A mask (`xxx`) or a counting run (`abcd`) from here.
    let same = lower[i..].iter().take_while(|&&c| c == lower[i]).count();
    if same >= 3 {
      mark(i + same, true);
    }
    let asc = 1 + lower[i..].windows(2).take_while(|w| w[1] == w[0] + 1).count();
    if asc >= 4 {
      mark(i + asc, true);
    }
  }
  reach[n]
}

fn repeated(piece: &[u8]) -> bool {
  piece.iter().all(|&c| c == piece[0])
}

fn ascending(piece: &[u8]) -> bool {
  piece.windows(2).all(|w| w[1] == w[0].wrapping_add(1))
}

/// Common words and type names that follow `password:` / `token =` in code without being
/// secrets (`password: string`, `token = None`).
pub fn is_non_secret_word(v: &[u8]) -> bool {
  const WORDS: &[&str] = &[
    "password",
    "passwd",
    "pass",
    "pwd",
    "secret",
    "secrets",
    "token",
    "tokens",
    "key",
    "keys",
    "apikey",
    "api_key",
    "null",
    "none",
    "nil",
    "true",
    "false",
    "undefined",
    "string",
    "str",
    "text",
    "number",
    "int",
    "integer",
    "bool",
    "boolean",
    "bytes",
    "object",
    "any",
    "unknown",
    "void",
    "never",
    "optional",
    "required",
    "test",
    "testing",
    "user",
    "username",
    "default",
    "empty",
    "value",
    "values",
    "env",
    "environment",
    "foo",
    "bar",
    "baz",
    "qux",
    "abc",
    "xyz",
    "hidden",
    "masked",
    "sensitive",
    "secure",
    "encrypted",
    "generated",
    "random",
    "auto",
    "inherit",
    "disabled",
    "enabled",
    "yes",
    "no",
    "on",
    "off",
    "public",
    "private",
    "bearer",
    "basic",
    "token123",
    "secret123",
    "password123",
    "pass123",
    "xxx",
    "yyy",
    "zzz",
    "abc123",
    "123456",
    "12345678",
    "string[]",
    "str]",
    "self",
    "this",
    "data",
    "config",
    "settings",
    "options",
    "input",
    "output",
    "result",
    "response",
    "request",
    "ok",
  ];
  let v = trim_quotes(v);
  WORDS.iter().any(|w| v.eq_ignore_ascii_case(w.as_bytes()))
}

#[cfg(test)]
mod tests {
  use super::is_placeholder;

  #[test]
  fn placeholders() {
    for p in [
      "xxxxxxxx",
      "${DB_PASSWORD}",
      "$TOKEN",
      "<your token>",
      "[PASSWORD]",
      "{{ .Values.x }}",
      concat!("AKIA", "IOSFODNN7EXAMPLE"),
      "%PASS%",
      "aaaaaaaaaaaaaaaaa",
      "glc_111111111111111111111111111",
      "abcdefghijklmnop",
      "****",
      "your_api_key_here",
      "INSERT_TOKEN_HERE",
      "yourApiKeyHere",
      "sk_test_example",
      "<redacted>",
      "REDACTED",
      "sk-proj-****************",
      "my-dummy-secret-123",
      "replace-with-your-key",
      "abc-${ENV}-def",
    ] {
      assert!(is_placeholder(p.as_bytes()), "{p}");
    }
    for (i, s) in super::super::tests::samples("not_placeholders").iter().enumerate() {
      assert!(!is_placeholder(s.as_bytes()), "sample {i}");
    }
  }

  #[test]
  fn random_values_holding_placeholder_letters_are_not_placeholders() {
    // Issue 11, item 7: a random token that contains `dummy`, `example`, `xxxx`, `insert`,
    // `redacted` or `EXAMPLE` somewhere (not at the end) is a token.
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let random: String = (0..36)
      .map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ALNUM[(x % 62) as usize] as char
      })
      .collect();
    let words = [
      "dummy",
      "example",
      "xxxx",
      "insert",
      "redacted",
      "REDACTED",
      "Example",
      "EXAMPLE",
      "placeholder",
      "your_",
      "_here",
    ];
    for word in words {
      for at in [0, 5, 17, random.len() - word.len() - 1] {
        let mut v = random.to_string();
        v.replace_range(at..at + word.len(), word);
        for prefix in ["", "ghp_", "sk_live_", "glpat-"] {
          let value = format!("{prefix}{v}");
          assert!(!is_placeholder(value.as_bytes()), "{prefix}... with {word} at {at}");
        }
      }
    }
  }
}
