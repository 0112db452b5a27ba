//! The provider catalogue: every credential provider the public rule sets know (gitleaks' rules,
//! trufflehog's detectors, detect-secrets' plugins), with its token prefixes, alphabet, length,
//! checksum and the words that name it, and where each fact comes from. It is data
//! (`catalogue/providers.tsv`, assembled by `scripts/redact-catalogue.mjs`), compiled in and
//! parsed once.
//!
//! What the redactor takes from it: the provider words of identifiers. A value assigned to an
//! identifier that names a provider (`adafruit_key = ...`, `TWELVE_DATA_API_KEY: ...`,
//! `"lokaliseSecret": "..."`) is judged with that context, for every provider in the catalogue,
//! not only those with a token format of their own (`secrets::classify_ident`). The token
//! formats themselves stay rules of `rules.rs`, found through the one keyword prefilter; the
//! catalogue's tests hold that every prefix it lists is one that prefilter reaches.

use std::sync::OnceLock;

use rustc_hash::FxHashSet;

/// The catalogue as shipped.
const SOURCE: &str = include_str!("catalogue/providers.tsv");

/// Longest identifier word compared with the provider keywords (and longest keyword kept).
pub const MAX_KEYWORD: usize = 40;

/// One provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
  /// Lowercase letters and digits (`newrelic`).
  pub name: &'static str,
  /// The finding kind of its format rules (`github_token`), or `secret` when only the
  /// keyword-introduced value detector finds it.
  pub kind: &'static str,
  /// Literal starts of its token formats (`ghp_`).
  pub prefixes: Vec<&'static str>,
  /// The secret's alphabet as a regex class body (`a-z0-9`), where a rule set states one (the
  /// first of [`Self::shapes`]).
  pub charset: Option<&'static str>,
  /// The secret's length: least and most (`None`: unbounded), where a rule set states one (the
  /// first of [`Self::shapes`]).
  pub length: Option<(usize, Option<usize>)>,
  /// Every shape the rule sets state for the secret after its prefix: alphabet and length.
  pub shapes: Vec<(&'static str, (usize, Option<usize>))>,
  /// A checksum inside the token (`crc32`).
  pub checksum: Option<&'static str>,
  /// Identifier words that name the provider (lowercase letters and digits).
  pub keywords: Vec<&'static str>,
  /// The name is an ordinary word: it is no keyword of its own.
  pub ambiguous: bool,
  /// Where the facts come from: `gitleaks:<rule-id>`, `trufflehog:<detector>`,
  /// `detect-secrets:<plugin>`, `loa:rules`.
  pub sources: Vec<&'static str>,
}

fn list(cell: &'static str) -> Vec<&'static str> {
  if cell == "-" {
    Vec::new()
  } else {
    cell.split(',').collect()
  }
}

fn opt(cell: &'static str) -> Option<&'static str> {
  (cell != "-").then_some(cell)
}

fn is_name(s: &str) -> bool {
  !s.is_empty() && s.len() <= MAX_KEYWORD && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// Parses a catalogue: `#` lines are comments, every other line one provider of nine
/// tab-separated columns. The error names the line (1-based) and what is wrong with it.
pub fn parse(text: &'static str) -> Result<Vec<Provider>, String> {
  let mut out = Vec::new();
  for (n, line) in text.lines().enumerate() {
    if line.is_empty() || line.starts_with('#') {
      continue;
    }
    let bad = |what: &str| format!("catalogue line {}: {what}", n + 1);
    let cells: Vec<&'static str> = line.split('\t').collect();
    let [name, kind, prefixes, charset, length, checksum, keywords, flags, sources] = cells[..] else {
      return Err(bad(&format!("{} columns, not 9", cells.len())));
    };
    if !is_name(name) {
      return Err(bad("the name is not lowercase letters and digits"));
    }
    if kind.is_empty() || !kind.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
      return Err(bad("the kind is not snake_case"));
    }
    // Shapes: alphabets and lengths, several separated by `|`, one length per alphabet.
    let mut shapes = Vec::new();
    if let (Some(cs), Some(ls)) = (opt(charset), opt(length)) {
      let (cs, ls): (Vec<&'static str>, Vec<&'static str>) = (cs.split('|').collect(), ls.split('|').collect());
      if cs.len() != ls.len() {
        return Err(bad("charset and length list different numbers of shapes"));
      }
      for (c, l) in cs.into_iter().zip(ls) {
        let num = |s: &str| s.parse::<usize>().map_err(|_| bad("the length is not `n`, `n-m` or `n-`"));
        let len = match l.split_once('-') {
          None => (num(l)?, Some(num(l)?)),
          Some((a, "")) => (num(a)?, None),
          Some((a, b)) => (num(a)?, Some(num(b)?)),
        };
        shapes.push((c, len));
      }
    } else if opt(charset).is_some() != opt(length).is_some() {
      return Err(bad("a charset without a length, or a length without a charset"));
    }
    let length = shapes.first().map(|s| s.1);
    let keywords = list(keywords);
    if let Some(k) = keywords.iter().find(|k| !is_name(k)) {
      return Err(bad(&format!("keyword of {} characters is not lowercase letters and digits", k.len())));
    }
    let sources = list(sources);
    if sources.is_empty() {
      return Err(bad("no source"));
    }
    let ambiguous = match flags {
      "-" => false,
      "ambiguous" => true,
      _ => return Err(bad("unknown flag")),
    };
    out.push(Provider {
      name,
      kind,
      prefixes: list(prefixes),
      charset: shapes.first().map(|s| s.0),
      length,
      shapes,
      checksum: opt(checksum),
      keywords,
      ambiguous,
      sources,
    });
  }
  Ok(out)
}

/// The shipped catalogue (parsed on first use; its tests hold that it parses).
pub fn providers() -> &'static [Provider] {
  static PROVIDERS: OnceLock<Vec<Provider>> = OnceLock::new();
  PROVIDERS.get_or_init(|| parse(SOURCE).unwrap_or_else(|e| panic!("{e}")))
}

/// Every provider keyword, for identifier words.
fn keyword_set() -> &'static FxHashSet<&'static [u8]> {
  static SET: OnceLock<FxHashSet<&'static [u8]>> = OnceLock::new();
  SET.get_or_init(|| providers().iter().flat_map(|p| p.keywords.iter().map(|k| k.as_bytes())).collect())
}

/// Is `word` (lowercase letters and digits) a word that names a provider?
pub fn is_provider_word(word: &[u8]) -> bool {
  word.len() >= 3 && word.len() <= MAX_KEYWORD && keyword_set().contains(word)
}

/// The providers a keyword names (indices into [`providers`]).
pub fn providers_named(word: &[u8]) -> &'static [usize] {
  static MAP: OnceLock<rustc_hash::FxHashMap<&'static [u8], Vec<usize>>> = OnceLock::new();
  let map = MAP.get_or_init(|| {
    let mut map: rustc_hash::FxHashMap<&'static [u8], Vec<usize>> = rustc_hash::FxHashMap::default();
    for (i, p) in providers().iter().enumerate() {
      for k in &p.keywords {
        map.entry(k.as_bytes()).or_default().push(i);
      }
    }
    map
  });
  map.get(word).map_or(&[], |v| v.as_slice())
}

/// Does `v` have one of the shapes the rule sets state for provider `p` (after one of its
/// prefixes, if it starts with one)? Letters match in either case: the rule sets write most
/// alphabets in one case for case-insensitive rules.
pub fn fits_shape(p: &Provider, v: &[u8]) -> bool {
  let v = p.prefixes.iter().find(|pre| v.starts_with(pre.as_bytes())).map_or(v, |pre| &v[pre.len()..]);
  p.shapes.iter().any(|&(class, (lo, hi))| {
    v.len() >= lo && hi.is_none_or(|hi| v.len() <= hi) && {
      let allowed = class_bytes(class);
      v.iter().all(|&b| {
        b < 128
          && (allowed[b as usize]
            || allowed[b.to_ascii_lowercase() as usize]
            || allowed[b.to_ascii_uppercase() as usize])
      })
    }
  })
}

/// The bytes of a regex class body (`a-z0-9_-`): ranges, single characters, `\`-escapes.
fn class_bytes(class: &str) -> [bool; 128] {
  let c = class.as_bytes();
  let mut out = [false; 128];
  let mut i = 0;
  while i < c.len() {
    let b = if c[i] == b'\\' && i + 1 < c.len() {
      i += 1;
      c[i]
    } else {
      c[i]
    };
    if i + 2 < c.len() && c[i + 1] == b'-' {
      for x in b..=c[i + 2] {
        out[(x & 127) as usize] = true;
      }
      i += 3;
    } else {
      out[(b & 127) as usize] = true;
      i += 1;
    }
  }
  out
}

/// Longest run of words [`may_name_provider`] looks at in one piece.
const SPAN_SCAN: usize = 256;

/// Could some adjacent words of these name a provider? Every name [`provider_span`] finds is a
/// substring of the words written together, so one scan of them for every keyword at once
/// (an Aho-Corasick automaton) rules out most identifiers: a random token's many short words
/// (`x7Kq...` splits at every change of case) cost a hash look-up per one, two and three
/// adjacent words otherwise, a fifth of the time of a text of such tokens.
fn may_name_provider<'a>(n: usize, word: &impl Fn(usize) -> &'a [u8]) -> bool {
  let mut buf = [0u8; SPAN_SCAN];
  let mut len = 0;
  for w in (0..n).map(word) {
    if len + w.len() > SPAN_SCAN {
      return true; // too long to write out: the exact search decides
    }
    buf[len..len + w.len()].copy_from_slice(w);
    len += w.len();
  }
  len >= 3 && provider_keywords().is_match(&buf[..len])
}

/// [`may_name_provider`] asked of an identifier before it is split into words: its letters and
/// digits (lowercased, of its first [`IDENT_WORDS_MAX`] bytes) written together hold every
/// run of its words written together, so no keyword among them rules out every provider name
/// [`provider_span`] could find in its words. Cheaper than the split for the identifiers that
/// name none (a random token before another).
pub fn may_name_provider_in(ident: &[u8]) -> bool {
  const _: () = assert!(IDENT_WORDS_MAX <= SPAN_SCAN);
  let mut buf = [0u8; IDENT_WORDS_MAX];
  let ident = &ident[..ident.len().min(IDENT_WORDS_MAX)];
  // An identifier of letters and digits only (a random token before another, most of those
  // asked) is lowercased whole: the test and the copy go 16 bytes at a time (no branch per
  // byte, which the compiler cannot vectorise), where the filtering loop below cost a tenth of
  // the time of a text of random tokens.
  let len = if ident.iter().fold(true, |all, &b| all & b.is_ascii_alphanumeric()) {
    for (d, &b) in buf.iter_mut().zip(ident) {
      *d = b.to_ascii_lowercase();
    }
    ident.len()
  } else {
    let mut len = 0;
    for &b in ident {
      if b.is_ascii_alphanumeric() {
        buf[len] = b.to_ascii_lowercase();
        len += 1;
      }
    }
    len
  };
  len >= 3 && provider_keywords().is_match(&buf[..len])
}

/// Bytes of an identifier that `secrets::ident_words` splits into words (it ignores the rest).
pub const IDENT_WORDS_MAX: usize = 160;

/// Every provider keyword, for [`may_name_provider`].
fn provider_keywords() -> &'static aho_corasick::AhoCorasick {
  static AC: OnceLock<aho_corasick::AhoCorasick> = OnceLock::new();
  AC.get_or_init(|| {
    let mut keywords: Vec<&[u8]> = keyword_set().iter().copied().collect();
    keywords.sort_unstable();
    // A DFA: with more than a hundred keywords the crate would choose an NFA, whose search
    // cost twice as much per identifier (a text of random tokens asks for one per token).
    aho_corasick::AhoCorasick::builder()
      .kind(Some(aho_corasick::AhoCorasickKind::DFA))
      .build(keywords)
      .expect("provider keywords")
  })
}

/// The words `start..end` of the first provider name in a run of identifier words (lowercased):
/// one of them, or two or three adjacent ones written together (`new relic` -> `newrelic`,
/// `twelve data` -> `twelvedata`), the longest at that start. `word(i)` is the `i`th of `n` words.
pub fn provider_span<'a>(n: usize, word: impl Fn(usize) -> &'a [u8]) -> Option<(usize, usize)> {
  if !may_name_provider(n, &word) {
    return None;
  }
  provider_span_scan(n, word)
}

/// [`provider_span`] without the scan that rules most identifiers out.
fn provider_span_scan<'a>(n: usize, word: impl Fn(usize) -> &'a [u8]) -> Option<(usize, usize)> {
  let mut buf = [0u8; MAX_KEYWORD];
  for i in 0..n {
    let mut len = 0;
    let mut found = None;
    for (j, w) in (i..n.min(i + 3)).map(|j| (j, word(j))) {
      if len + w.len() > MAX_KEYWORD {
        break;
      }
      buf[len..len + w.len()].copy_from_slice(w);
      len += w.len();
      if is_provider_word(&buf[..len]) {
        found = Some((i, j + 1));
      }
    }
    if found.is_some() {
      return found;
    }
  }
  None
}

#[cfg(test)]
mod tests {
  use super::IDENT_WORDS_MAX;
  use super::{
    keyword_set, may_name_provider_in, parse, provider_keywords, provider_span, provider_span_scan, providers,
  };
  use crate::redact::testing::Rng;

  /// The whole-identifier lowercasing of `may_name_provider_in` (letters and digits only)
  /// answers as the filtering definition, on identifiers with and without other bytes, around
  /// `IDENT_WORDS_MAX`, and holding keywords.
  #[test]
  fn alphanumeric_identifiers_are_asked_as_the_filtered_ones() {
    let definition = |ident: &[u8]| {
      let kept: Vec<u8> = ident[..ident.len().min(IDENT_WORDS_MAX)]
        .iter()
        .filter(|b| b.is_ascii_alphanumeric())
        .map(|b| b.to_ascii_lowercase())
        .collect();
      kept.len() >= 3 && provider_keywords().is_match(&kept)
    };
    let keywords: Vec<&[u8]> = keyword_set().iter().copied().collect();
    let mut rng = Rng(29);
    let (mut named, mut total) = (0, 0);
    for alphabet in ["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "abcXYZ019_-.:"] {
      for _ in 0..4000 {
        let len = rng.below(IDENT_WORDS_MAX + 20);
        let mut ident = rng.chars(alphabet, len).into_bytes();
        if rng.below(3) == 0 {
          let kw = rng.pick(&keywords).to_ascii_uppercase();
          let at = rng.below(ident.len() + 1);
          ident.splice(at..at, kw);
        }
        let expected = definition(&ident);
        assert_eq!(may_name_provider_in(&ident), expected, "{}", String::from_utf8_lossy(&ident));
        named += expected as usize;
        total += 1;
      }
    }
    assert!(named > 500 && named < total - 500, "{named} of {total}");
  }

  /// The scan that rules identifiers out answers as the look-ups alone, on runs of words made of
  /// every provider keyword cut in up to three pieces among random and keyword words.
  #[test]
  fn ruling_out_keeps_every_provider_name() {
    let mut keywords: Vec<&[u8]> = keyword_set().iter().copied().collect();
    keywords.sort_unstable();
    let mut rng = Rng(0x5ca9);
    let mut found = 0;
    for (k, keyword) in keywords.iter().enumerate() {
      for _ in 0..4 {
        let mut words: Vec<Vec<u8>> = Vec::new();
        for _ in 0..rng.below(3) {
          let n = 1 + rng.below(6);
          words.push(rng.chars("abcdefghijklmnopqrstuvwxyz0123456789", n).into_bytes());
        }
        // The keyword in one, two or three pieces, or a neighbour's keyword, or a near miss.
        match rng.below(4) {
          0 => words.push(keyword[..keyword.len() - 1].to_vec()),
          1 => words.push(keywords[(k + 1) % keywords.len()].to_vec()),
          _ => {
            let cut1 = rng.below(keyword.len());
            let cut2 = cut1 + rng.below(keyword.len() - cut1);
            words.extend(
              [&keyword[..cut1], &keyword[cut1..cut2], &keyword[cut2..]]
                .into_iter()
                .filter(|p| !p.is_empty())
                .map(<[u8]>::to_vec),
            );
          }
        }
        for _ in 0..rng.below(3) {
          let n = 1 + rng.below(6);
          words.push(rng.chars("abcdefghijklmnopqrstuvwxyz0123456789", n).into_bytes());
        }
        let span = provider_span(words.len(), |i| &words[i]);
        assert_eq!(span, provider_span_scan(words.len(), |i| &words[i]), "{words:?}");
        found += span.is_some() as usize;
      }
    }
    assert!(found > keywords.len(), "{found} of {} found", keywords.len() * 4);
  }
  use crate::redact::engine::engine;

  #[test]
  fn every_entry_has_a_source_and_a_unique_name() {
    let all = providers();
    assert!(all.len() >= 800, "{} providers", all.len());
    let mut names = std::collections::HashSet::new();
    for p in all {
      assert!(!p.sources.is_empty(), "{}", p.name);
      for s in &p.sources {
        let (set, what) = s.split_once(':').unwrap_or(("", ""));
        assert!(
          matches!(set, "gitleaks" | "trufflehog" | "detect-secrets" | "secrets-patterns-db" | "loa")
            && !what.is_empty(),
          "{}: source {s}",
          p.name
        );
      }
      assert!(names.insert(p.name), "duplicate {}", p.name);
      if !p.ambiguous {
        assert!(p.keywords.contains(&p.name) || p.name.len() < 3, "{} is not its own keyword", p.name);
      } else {
        assert!(!p.keywords.contains(&p.name), "ambiguous {} is a keyword", p.name);
      }
    }
    // The four public rule sets all contributed.
    for set in ["gitleaks:", "trufflehog:", "detect-secrets:", "secrets-patterns-db:"] {
      assert!(all.iter().any(|p| p.sources.iter().any(|s| s.starts_with(set))), "{set}");
    }
  }

  /// A token with a catalogue prefix reaches a format rule: some keyword of the prefilter
  /// starts it (or it starts a keyword, the rest of which is fixed text of the format).
  #[test]
  fn every_prefix_is_reachable_by_the_prefilter() {
    let keywords: Vec<String> = engine().keywords().iter().map(|k| k.to_ascii_lowercase()).collect();
    let mut n = 0;
    for p in providers() {
      for prefix in &p.prefixes {
        let lp = prefix.to_ascii_lowercase();
        assert!(
          keywords.iter().any(|k| lp.starts_with(k.as_str()) || k.starts_with(lp.as_str())),
          "{}: prefix {prefix} has no keyword",
          p.name
        );
        n += 1;
      }
      if !p.prefixes.is_empty() {
        assert_ne!(p.kind, "secret", "{} has prefixes but no kind of its own", p.name);
      }
      assert!(crate::redact::KINDS.contains(&p.kind), "{}: kind {} is no finding kind", p.name, p.kind);
    }
    assert!(n >= 80, "{n} prefixes");
  }

  #[test]
  fn provider_words_alone_and_joined() {
    let yes = |ws: &[&str]| provider_span(ws.len(), |i| ws[i].as_bytes()).is_some();
    assert!(yes(&["adafruit", "key"]));
    assert!(yes(&["new", "relic", "api", "key"]));
    assert!(yes(&["my", "twelve", "data", "token"]));
    assert!(yes(&["lokalise", "token"]));
    assert!(!yes(&["user", "key"]));
    assert!(!yes(&["float", "key"]));
    assert!(!yes(&["secret", "key"]));
    assert!(!yes(&["api", "token"]));
    assert!(!yes(&["db", "password"]));
    assert_eq!(provider_span(4, |i| [&b"x"[..], b"new", b"relic", b"key"][i]), Some((1, 3)));
  }

  #[test]
  fn malformed_lines_are_refused_with_their_number() {
    let e = parse("# c\nx\tsecret\t-\t-\t-\t-\tx\t-\n").unwrap_err();
    assert!(e.contains("line 2") && e.contains("8 columns"), "{e}");
    let e = parse("x\tsecret\t-\t-\t-\t-\tx\t-\t-\n").unwrap_err();
    assert!(e.contains("no source"), "{e}");
    let e = parse("X\tsecret\t-\t-\t-\t-\tx\t-\tloa:rules\n").unwrap_err();
    assert!(e.contains("name"), "{e}");
    let e = parse("x\tsecret\t-\t-\t4-z\t-\tx\t-\tloa:rules\n").unwrap_err();
    assert!(e.contains("length"), "{e}");
    let ok = parse("x\tsecret\tab_\ta-z\t4-\t-\tx,xy\t-\tloa:rules\n").unwrap();
    assert_eq!(ok[0].length, Some((4, None)));
    assert_eq!(ok[0].keywords, ["x", "xy"]);
  }

  /// SplitMix64: a fixed seed gives the same providers and values on every run.
  fn rng(mut state: u64) -> impl FnMut() -> u64 {
    move || {
      state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
      let mut z = state;
      z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
      z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
      z ^ (z >> 31)
    }
  }

  /// A random value of `n` base62 characters with a digit and both cases (the shape of a key).
  fn value(next: &mut impl FnMut() -> u64, n: usize) -> String {
    const B62: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut v: Vec<u8> = (0..n).map(|_| B62[(next() % 62) as usize]).collect();
    v[0] = b'A' + (next() % 26) as u8;
    v[1] = b'a' + (next() % 26) as u8;
    v[2] = b'0' + (next() % 10) as u8;
    String::from_utf8(v).unwrap()
  }

  /// For providers drawn from the whole catalogue (fixed seed), a value introduced by an
  /// identifier or words naming the provider is redacted whatever its length from 12 up, and a
  /// placeholder, a path or a version in the same place is left.
  #[test]
  fn keyword_introduced_values_of_any_provider() {
    use crate::redact::{redact, RedactOptions};
    let named: Vec<&super::Provider> = providers().iter().filter(|p| !p.ambiguous && p.name.len() >= 3).collect();
    let mut next = rng(29);
    let mut missed = Vec::new();
    let mut altered = Vec::new();
    for _ in 0..120 {
      let p = named[(next() % named.len() as u64) as usize];
      let n = p.name;
      let upper = n.to_ascii_uppercase();
      let len = 12 + (next() % 29) as usize;
      let v = value(&mut next, len);
      let positives = [
        format!("{n}_api_key = {v}"),
        format!("{upper}_API_TOKEN: {v}"),
        format!("{{\"{n}Secret\": \"{v}\"}}"),
        format!("{n}_key={v}"),
        format!("{n} token = '{v}'"),
        format!("{n} api key: {v}"),
      ];
      for (i, text) in positives.iter().enumerate() {
        let r = redact(text, &RedactOptions::default());
        if r.text.contains(&v) {
          missed.push(format!("{n} form {i} (value of {len})"));
        }
      }
      let negatives =
        [format!("{n}_api_key = example"), format!("{n}_key_path = ./keys/a.pem"), format!("{upper}_API_KEY=v2.14.1")];
      for (i, text) in negatives.iter().enumerate() {
        let r = redact(text, &RedactOptions::default());
        if !r.findings.is_empty() {
          altered.push(format!("{n} negative {i}"));
        }
      }
    }
    assert!(missed.is_empty(), "missed: {missed:?}");
    assert!(altered.is_empty(), "altered: {altered:?}");
  }

  /// The words of a provider's name are its name: `1password` names no password and `page` of
  /// `page2images` is no pagination word, so the identifier is judged by its other words.
  #[test]
  fn words_of_a_provider_name_are_not_secret_or_anti_words() {
    use crate::redact::{redact, RedactOptions};
    let mut next = rng(7);
    let v = value(&mut next, 24);
    for text in ["1passwordToken = \"v2.14.1\"", "1PASSWORD_TOKEN=./keys/op.pem", "\"1password_secret\": \"example\""] {
      let r = redact(text, &RedactOptions::default());
      assert!(r.findings.is_empty(), "{text}");
    }
    for text in [format!("1passwordToken = \"{v}\""), format!("page2images_api_key={v}")] {
      let r = redact(&text, &RedactOptions::default());
      assert!(!r.text.contains(&v), "a value of {} characters", v.len());
      assert!(
        r.findings.iter().all(|f| f.kind == "secret"),
        "kinds {:?}",
        r.findings.iter().map(|f| &f.kind).collect::<Vec<_>>()
      );
    }
  }
}
