//! Every copy of a value that its context identified as a secret.
//!
//! A value found by a keyword (`zendesk token = '<v>'`, `password: <v>`) is a secret wherever it
//! appears in the text, but only its first spelling has the keyword in front: a log line that
//! prints it again (`... | <v>`), a command that repeats it, or a quoted copy further down would
//! otherwise be stored in clear, next to its own placeholder. A provider token, a JWT or a
//! private key found by its format is searched again too: a copy of it glued into a longer run (`...00000AIza<key>0008`,
//! found by the `redact` fuzz target) has no boundary for its rule to match at, yet is the same
//! secret. Other values found by their shape (checksums, e-mail addresses, random-looking tokens)
//! are not: their copies are found on their own or are no known secret, and a text dense in
//! random tokens would search for each.

use aho_corasick::{AhoCorasick, MatchKind};
use memchr::memmem;
use rustc_hash::FxHashSet;

use super::ctx::{Hit, P_JWT};
use super::text::work;

/// Shortest value whose copies are looked for: a shorter one (`admin`, `1234`) is too likely to
/// occur in the text for another reason.
const MIN_COPY_LEN: usize = 8;

/// Up to this many distinct values are searched one after another with `memchr`'s SIMD search;
/// more (a text full of keyword-introduced values) share one Aho-Corasick pass, so the work stays
/// linear in the text whatever their number.
const SEPARATE_SEARCHES: usize = 4;

/// Adds a hit for every occurrence of a keyword-found value or a provider token, JWT or private
/// key (a priority of [`P_JWT`] or above) that no hit covers yet.
pub(super) fn add_copies(t: &[u8], hits: &mut Vec<Hit>) {
  // Hits may overlap (`a=b=c=...`), so their values' total length is bounded by the text's
  // before anything else is done with them: a value past the budget is still redacted where it
  // was found, only not searched again. Duplicates go by hash, in time linear in that total
  // (sorting values that share long prefixes would compare them over and over).
  let mut budget = t.len();
  let mut seen = FxHashSet::default();
  let originals: Vec<Hit> = hits
    .iter()
    .filter(|h| (h.method == "keyword" || h.prio >= P_JWT) && h.end - h.start >= MIN_COPY_LEN)
    .filter(|h| budget.checked_sub(h.end - h.start).map(|rest| budget = rest).is_some())
    .filter(|h| seen.insert(&t[h.start..h.end]))
    .cloned()
    .collect();
  if originals.is_empty() {
    return;
  }
  // Counted like the detectors' work (the tests and the fuzzer bound it per byte of input): the
  // values hashed, and one pass over the text per separate search or for the shared one.
  let passes = if originals.len() <= SEPARATE_SEARCHES { originals.len() } else { 1 };
  work::add(t.len() - budget + passes * t.len());
  let mut copies = Vec::new();
  let mut add = |which: usize, start: usize, end: usize| {
    let o = &originals[which];
    copies.push(Hit { start, end, kind: o.kind, method: o.method, prio: o.prio, cond: false });
  };
  if originals.len() <= SEPARATE_SEARCHES {
    for (i, h) in originals.iter().enumerate() {
      let needle = &t[h.start..h.end];
      for at in memmem::find_iter(t, needle) {
        add(i, at, at + needle.len());
      }
    }
  } else {
    let patterns = originals.iter().map(|h| &t[h.start..h.end]);
    // Leftmost-longest: where one value contains another, the longer copy is the one to cover.
    let Ok(ac) = AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(patterns) else { return };
    for m in ac.find_iter(t) {
      add(m.pattern().as_usize(), m.start(), m.end());
    }
  }
  // The originals themselves come back from the search: only what no hit covers is new. (By
  // the hits' furthest end up to each start, so that many copies among many hits stay cheap.)
  let mut covered: Vec<(usize, usize)> = hits.iter().map(|h| (h.start, h.end)).collect();
  covered.sort_unstable();
  let mut reach = 0;
  for span in &mut covered {
    reach = reach.max(span.1);
    span.1 = reach;
  }
  copies.retain(|c| {
    let i = covered.partition_point(|&(start, _)| start <= c.start);
    !(i > 0 && covered[i - 1].1 >= c.end)
  });
  hits.extend(copies);
}

#[cfg(test)]
mod tests {
  use super::super::testing::Rng;
  use super::super::{redact, RedactOptions};

  const LOWER_NUM: &str = "abcdefghijklmnopqrstuvwxyz0123456789";

  fn redacted(text: &str) -> String {
    redact(text, &RedactOptions { key: Some(b"test-key".to_vec()), ..Default::default() }).text
  }

  /// A value only a keyword identifies: lowercase letters and digits, short enough that its shape
  /// alone is no token.
  fn keyword_value(rng: &mut Rng) -> String {
    format!("{}{}", rng.chars("abcdefghijklmnopqrstuvwxyz", 6), rng.digits(4))
  }

  #[test]
  fn every_copy_of_a_keyword_found_value_is_redacted() {
    let mut rng = Rng(0xC0_91E5);
    for case in 0..50 {
      let v = keyword_value(&mut rng);
      for (form, text) in [
        ("after a pipe", format!("password = '{v}' | '{v}'")),
        ("on a later line", format!("DB_PASSWORD={v}\nconnecting with {v} to the primary\n")),
        ("inside a longer run", format!("password: {v}\nurl=https://db.example/?p={v}&x=1")),
        ("before the keyword", format!("echo {v} > /tmp/x; export PASSWORD={v}")),
      ] {
        let out = redacted(&text);
        assert!(!out.contains(&v), "case {case}, {form}: a copy is left in clear");
      }
    }
  }

  #[test]
  fn many_values_share_one_search_and_each_copy_goes() {
    let mut rng = Rng(0xC0_91E6);
    let values: Vec<String> = (0..super::SEPARATE_SEARCHES * 3).map(|_| keyword_value(&mut rng)).collect();
    let mut text: String = values.iter().enumerate().map(|(i, v)| format!("password{i} = {v}\n")).collect();
    for v in values.iter().rev() {
      text.push_str(&format!("retrying with {v}\n"));
    }
    let out = redacted(&text);
    for (i, v) in values.iter().enumerate() {
      assert!(!out.contains(v.as_str()), "value {i}: a copy is left in clear");
    }
  }

  #[test]
  fn many_values_with_one_long_prefix_cost_linear_work() {
    use super::super::testing::{redact_counting_work, work_bound};
    // Thousands of distinct keyword-found values that share a 200-byte prefix: deduplicating
    // them by sorting would compare each prefix again and again.
    let mut rng = Rng(0xC0_91E8);
    let prefix = rng.chars(LOWER_NUM, 200);
    let text: String = (0..3000).map(|i| format!("password{i} = {prefix}{}\n", keyword_value(&mut rng))).collect();
    let opts = RedactOptions { key: Some(b"test-key".to_vec()), ..Default::default() };
    let (r, work) = redact_counting_work(&text, &opts);
    assert!(r.findings.len() >= 3000, "every value is found");
    assert!(work <= work_bound(text.len()), "work {work} for {} bytes", text.len());
  }

  /// Every fake token format, planted on a line of its own and again glued into a longer run of
  /// letters and digits (where its rule finds no boundary): no copy is left (the `redact` fuzz
  /// target found a Google API key's copy left in clear this way).
  #[test]
  fn every_copy_of_a_provider_token_is_redacted() {
    use super::super::testing::{fake_token, TOKEN_FORMATS};
    let mut rng = Rng(0xC0_91E9);
    for format in TOKEN_FORMATS {
      let token = fake_token(format, &mut || rng.next());
      if token.len() < super::MIN_COPY_LEN {
        continue;
      }
      let text = format!("\n{token}\nT@eaareqar00000{token}0008 and then {token}x\n");
      let out = redacted(&text);
      assert!(!out.contains(&token), "a copy of a {} token is left in clear", format.kind);
    }
  }

  #[test]
  fn short_values_and_values_found_by_shape_are_not_searched_again() {
    // `admin` is too short to tell a copy from the word; the text around it stays.
    let out = redacted("password=admin\nlogged in as admin\n");
    assert!(out.ends_with("logged in as admin\n"), "a short value's other occurrences stay");
    let mut rng = Rng(0xC0_91E7);
    let v = rng.chars(LOWER_NUM, 12);
    let text = format!("the build id {v} and nothing else");
    assert_eq!(redacted(&text), text, "no keyword, no copy search");
  }
}
