//! Redaction of text in every script and spelling (issue 29, "Every script"): invisible
//! characters inside a value, fullwidth digits and letters, composed and decomposed accents,
//! internationalised e-mail addresses; the output keeps the input byte for byte outside the
//! findings; and the property that no spelling of a detected value leaves a piece of it.
//!
//! Assertion messages name cases, never the secrets in them.

use std::collections::HashSet;

use unicode_normalization::UnicodeNormalization;

use super::norm::{is_default_ignorable, DEFAULT_IGNORABLE};
use super::testing::{fake_token, Rng, TOKEN_FORMATS};
use super::{redact, RedactOptions, Redaction};

fn opts() -> RedactOptions {
  RedactOptions { key: Some(b"test-key".to_vec()), ..Default::default() }
}

/// The output rebuilt from the input and the findings: each finding's UTF-16 span replaced by its
/// placeholder, everything else copied. Equal to the output exactly when the output keeps the
/// input byte for byte outside the findings and the findings' offsets are the input's.
fn rebuilt(input: &str, r: &Redaction) -> String {
  let units: Vec<u16> = input.encode_utf16().collect();
  let mut out = String::new();
  let mut at = 0;
  for f in &r.findings {
    out.push_str(&String::from_utf16(&units[at..f.start]).expect("finding starts at a character"));
    out.push_str(&format!("[REDACTED:{}]", f.kind.to_uppercase()));
    at = f.end;
  }
  out.push_str(&String::from_utf16(&units[at..]).expect("finding ends at a character"));
  out
}

/// `text` with `value` in it redacted as one finding of `kind`; the rest of the text kept byte
/// for byte, and a second pass changing nothing.
fn assert_redacted_whole(case: &str, prefix: &str, value: &str, suffix: &str, kind: &str) {
  let text = format!("{prefix}{value}{suffix}");
  let r = redact(&text, &opts());
  let expected = format!("{prefix}[REDACTED:{}]{suffix}", kind.to_uppercase());
  let kinds: Vec<&str> = r.findings.iter().map(|f| f.kind.as_str()).collect();
  assert_eq!(r.text, expected, "{case}: redacted whole (found {kinds:?})");
  assert_eq!(rebuilt(&text, &r), r.text, "{case}: offsets are the input's");
  assert_eq!(redact(&r.text, &opts()).text, r.text, "{case}: a second pass changes nothing");
}

fn fullwidth(s: &str) -> String {
  s.chars()
    .map(|c| if c.is_ascii_alphanumeric() { char::from_u32(c as u32 - 0x21 + 0xFF01).unwrap_or(c) } else { c })
    .collect()
}

// ---------------------------------------------------------------------------------------------
// The cases of the issue

#[test]
fn invisible_characters_inside_a_token_do_not_cut_it() {
  let mut x = 0x5EED_u64;
  let mut next = || {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
  };
  let format = TOKEN_FORMATS.iter().find(|f| f.kind == "github_token").unwrap();
  let token = fake_token(format, &mut next);
  for (name, inv) in [
    ("zero-width space", '\u{200B}'),
    ("soft hyphen", '\u{AD}'),
    ("word joiner", '\u{2060}'),
    ("byte order mark", '\u{FEFF}'),
    ("zero-width non-joiner", '\u{200C}'),
    ("zero-width joiner", '\u{200D}'),
  ] {
    let mut spelled = token.clone();
    spelled.insert(20, inv);
    assert_redacted_whole(name, "my token is ", &spelled, " (rotate it)", "github_token");
    // Several, anywhere in it.
    let mut spelled: String = token.chars().flat_map(|c| [c, inv]).collect();
    spelled.pop();
    assert_redacted_whole(name, "GITHUB_TOKEN=", &spelled, "\n", "github_token");
  }
}

#[test]
fn fullwidth_numbers_are_redacted_as_their_ascii_forms() {
  // (case, prefix, value, kind): each ASCII form is redacted today; the fullwidth form must be.
  let cases = [
    ("card", "カード番号: ", "4111 1111 1111 1111", "credit_card"),
    ("japanese mobile", "電話番号：", "090-1234-5678", "phone"),
    ("uk number", "call me on ", "+44 20 7946 0958", "phone"),
    ("iban", "IBAN: ", "DE89 3704 0044 0532 0130 00", "iban"),
  ];
  for (case, prefix, value, kind) in cases {
    assert_redacted_whole(&format!("{case} (ascii)"), prefix, value, " です", kind);
    let wide = fullwidth(value).replace('-', "\u{FF0D}").replace('+', "\u{FF0B}").replace(' ', "\u{3000}");
    assert_redacted_whole(&format!("{case} (fullwidth)"), prefix, &wide, " です", kind);
  }
}

#[test]
fn internationalised_addresses_are_email_addresses() {
  for (case, prefix, value, suffix) in [
    ("utf-8 local part", "schreib an ", "jürgen.müller@gmx.de", " bitte"),
    ("idn domain", "Bestellung: ", "info@müller-bäckerei.de", "."),
    ("cyrillic domain and tld", "пишите на ", "anna.petrova@почта.рф", ", спасибо"),
    ("han", "邮箱：", "用户@例子.中国", "。"),
    ("ascii address in unspaced text", "メールは", "taro@example.co.jp", "まで"),
    ("korean particle", "이메일은 ", "minsu@naver.com", "으로 보내주세요"),
  ] {
    assert_redacted_whole(case, prefix, value, suffix, "email");
    let nfd: String = value.nfd().collect();
    assert_redacted_whole(&format!("{case} (nfd)"), prefix, &nfd, suffix, "email");
  }
}

#[test]
fn composed_and_decomposed_spellings_get_one_decision_and_one_pseudonym() {
  let texts = [
    "Kontakt: jürgen.müller@gmx.de, Tel. +49 30 901820",
    "Ma\u{f1}ana llame al n\u{fa}mero 612 345 678",
    "Café crème: carte 4111 1111 1111 1111, expira 12/29",
    "Ångström note: password = \"Sécurité-Ünïcode-42\"",
  ];
  for text in texts {
    let nfc: String = text.nfc().collect();
    let nfd: String = text.nfd().collect();
    for pseudonymize in [false, true] {
      let o = RedactOptions { pseudonymize, ..opts() };
      let (a, b) = (redact(&nfc, &o), redact(&nfd, &o));
      let kinds =
        |r: &Redaction| r.findings.iter().map(|f| (f.kind.clone(), f.fingerprint.clone())).collect::<Vec<_>>();
      assert_eq!(kinds(&a), kinds(&b), "same findings and fingerprints, {} chars", text.chars().count());
      assert!(!a.findings.is_empty());
      // The outputs differ only in the spelling of what is kept.
      assert_eq!(a.text.nfc().collect::<String>(), b.text.nfc().collect::<String>());
      if !pseudonymize {
        assert_eq!(rebuilt(&nfd, &b), b.text, "offsets are the input's");
      }
    }
  }
}

#[test]
fn text_outside_findings_is_kept_byte_for_byte() {
  // Unusual spellings everywhere but in the findings survive as written.
  let text = "Ｈｅｌｌｏ\u{200B} wo\u{301}rld\u{FE0F} ﬁle №５ — mail bob@example.com, \u{FEFF}call ＋４４ ２０ ７９４６ ０９５８ \
              then e\u{301}e\u{301} ①②③ \u{FDFA} done\u{AD}";
  let r = redact(text, &opts());
  assert_eq!(r.findings.iter().map(|f| f.kind.as_str()).collect::<Vec<_>>(), ["email", "phone"]);
  assert_eq!(rebuilt(text, &r), r.text);
  assert!(r.text.starts_with(
    "Ｈｅｌｌｏ\u{200B} wo\u{301}rld\u{FE0F} ﬁle №５ — mail [REDACTED:EMAIL], \u{FEFF}call [REDACTED:PHONE] "
  ));
  assert_eq!(redact(&r.text, &opts()).text, r.text);
}

#[test]
fn allowlisted_values_are_allowed_in_every_spelling() {
  let o = RedactOptions { allowlist: vec!["info@müller-bäckerei.de".into()], ..opts() };
  for spelled in [
    "info@müller-bäckerei.de".to_string(),
    "info@müller-bäckerei.de".nfd().collect(),
    fullwidth("info@müller-bäckerei.de"),
  ] {
    let text = format!("write to {spelled} today");
    assert_eq!(redact(&text, &o).text, text);
  }
}

// ---------------------------------------------------------------------------------------------
// The property

/// A text with a value a detector must redact: the labelled corpus's positives (gitleaks' rule
/// samples with their known secret, Presidio's recognizer tests with their spans) and a fake
/// token of every format, in an assignment and in prose.
fn positives() -> Vec<(String, String)> {
  let mut out = Vec::new();
  for line in include_str!("../../testdata/corpus/gitleaks_rule_samples.dev.jsonl").lines() {
    let row: serde_json::Value = serde_json::from_str(line).expect("corpus row");
    if row["label"] != "tp" {
      continue;
    }
    let text = row["text"].as_str().unwrap_or_default();
    for span in row["known_secret_spans"].as_array().into_iter().flatten() {
      if let Some(v) = span["value"].as_str() {
        out.push((text.to_string(), v.to_string()));
      }
    }
  }
  for line in include_str!("../../testdata/corpus/presidio_recognizer_tests.jsonl").lines() {
    let row: serde_json::Value = serde_json::from_str(line).expect("corpus row");
    let text = row["text"].as_str().unwrap_or_default();
    for span in row["spans"].as_array().into_iter().flatten() {
      if let Some(v) = span["value"].as_str() {
        out.push((text.to_string(), v.to_string()));
      }
    }
  }
  let mut rng = Rng(0xF00D_CAFE);
  for (i, f) in TOKEN_FORMATS.iter().enumerate() {
    let token = fake_token(f, &mut || rng.next());
    let text =
      if i % 2 == 0 { format!("export API_KEY=\"{token}\"\n") } else { format!("the key is {token} for prod") };
    out.push((text, token));
  }
  out
}

/// Does the normalised `output` hold the normalised `secret`, or any 8 consecutive characters of
/// it (the whole of a shorter secret)?
fn leaks(output: &str, secret: &str) -> bool {
  let n = |s: &str| s.chars().filter(|&c| !is_default_ignorable(c)).nfkc().collect::<Vec<char>>();
  let (out, sec) = (n(output), n(secret));
  let w = sec.len().min(8);
  if w == 0 || out.len() < w {
    return false;
  }
  let seen: HashSet<&[char]> = out.windows(w).collect();
  sec.windows(w).any(|piece| seen.contains(piece))
}

/// A default-ignorable character: the common ones most often, any of the table otherwise.
fn ignorable(rng: &mut Rng) -> char {
  const COMMON: &[char] =
    &['\u{200B}', '\u{AD}', '\u{2060}', '\u{FEFF}', '\u{200C}', '\u{200D}', '\u{200E}', '\u{FE0F}'];
  if rng.below(2) == 0 {
    return COMMON[rng.below(COMMON.len())];
  }
  let (lo, hi) = DEFAULT_IGNORABLE[rng.below(DEFAULT_IGNORABLE.len())];
  char::from_u32(lo + rng.below((hi - lo + 1) as usize) as u32).unwrap_or('\u{200B}')
}

/// Inserts `c` at a random character boundary of `s[lo..hi]`.
fn insert_at_random(s: &mut String, lo: usize, hi: usize, c: char, rng: &mut Rng) {
  let bounds: Vec<usize> = (lo..=hi).filter(|&i| s.is_char_boundary(i)).collect();
  s.insert(bounds[rng.below(bounds.len())], c);
}

#[test]
fn property_no_spelling_of_a_detected_value_leaves_a_piece_of_it() {
  let mut rng = Rng(0x0DD_5CA1E);
  let (mut bases, mut variants) = (0, 0);
  let mut failures = Vec::new();
  for (case, (text, secret)) in positives().into_iter().enumerate() {
    let Some(at) = text.find(&secret) else { continue };
    // Values a detector misses as written are not this property's concern (recall is measured
    // by `npm run eval:redact`): only what is redacted must stay redacted in every spelling.
    if leaks(&redact(&text, &opts()).text, &secret) {
      continue;
    }
    bases += 1;
    let end = at + secret.len();
    let wide = |s: &str| fullwidth(s);
    let mut spellings: Vec<(&str, String)> = Vec::new();
    for k in 0..3 {
      // One ignorable character in the value, then one anywhere, then several in the value.
      let mut s = text.clone();
      let inserts = if k == 2 { 3 } else { 1 };
      for j in 0..inserts {
        let (lo, hi) = if k == 1 { (0, s.len()) } else { (at, (end + j * 4).min(s.len())) };
        let c = ignorable(&mut rng);
        insert_at_random(&mut s, lo, hi, c, &mut rng);
      }
      spellings.push(("ignorable", s));
    }
    spellings.push(("fullwidth value", format!("{}{}{}", &text[..at], wide(&secret), &text[end..])));
    spellings.push(("fullwidth text", wide(&text)));
    let some: String =
      secret.chars().map(|c| if rng.below(2) == 0 { wide(&c.to_string()) } else { c.to_string() }).collect();
    spellings.push(("fullwidth characters", format!("{}{some}{}", &text[..at], &text[end..])));
    let mut both = format!("{}{}{}", &text[..at], wide(&secret), &text[end..]);
    let wide_end = at + wide(&secret).len();
    let c = ignorable(&mut rng);
    insert_at_random(&mut both, at, wide_end, c, &mut rng);
    spellings.push(("fullwidth and ignorable", both));
    for (how, spelled) in spellings {
      variants += 1;
      let out = redact(&spelled, &opts()).text;
      if leaks(&out, &secret) {
        failures.push(format!("positive {case} ({how})"));
      }
    }
  }
  assert!(bases >= 1000, "{bases} positives redacted as written");
  assert!(
    failures.is_empty(),
    "{} of {variants} spellings leaked:\n{}",
    failures.len(),
    failures[..failures.len().min(30)].join("\n")
  );
}

// ---------------------------------------------------------------------------------------------
// Cost and pieces

/// Inputs of about `n` bytes built to make the view, or the detectors on it, costly.
fn hostile(n: usize) -> Vec<(&'static str, String)> {
  let rep = |unit: &str| unit.repeat(n / unit.len() + 1);
  vec![
    ("ignorables", rep("\u{200B}")),
    ("tag characters", rep("\u{E0041}")),
    ("combining marks", format!("a{}", rep("\u{301}"))),
    ("marks out of order", format!("a{}", rep("\u{301}\u{327}\u{316}"))),
    ("marks between ignorables", rep("e\u{200B}\u{301}")),
    ("long expansions", rep("\u{FDFA}")),
    ("parenthesised numbers", rep("\u{2474}")),
    ("fullwidth digits", rep("\u{FF11}")),
    ("fullwidth number groups", rep("\u{FF11}\u{FF0D}")),
    ("fullwidth letters", rep("\u{FF41}")),
    ("token prefix, ignorable", rep("ghp_\u{200B}")),
    ("fullwidth e-mail locals", rep("\u{FF41}.\u{FF42}\u{FF20}")),
    ("utf-8 e-mail locals", rep("ü.ü@")),
    ("han e-mail locals", rep("用@")),
    ("unicode domains", rep("a@ü.")),
    ("hangul jamo", rep("\u{1100}\u{1161}\u{11A8}")),
    ("compatibility jamo", rep("\u{3131}\u{314F}")),
  ]
}

#[test]
fn work_is_linear_on_hostile_unicode() {
  super::testing::assert_linear_work(hostile, &opts());
}

#[test]
fn parallel_pieces_of_unusual_spellings_find_what_one_pass_finds() {
  let mut rng = Rng(0x9A7A_11E1);
  let format = TOKEN_FORMATS.iter().find(|f| f.kind == "github_token").unwrap();
  let mut text = String::new();
  let mut i = 0;
  while text.len() < super::PARALLEL_MIN + 65536 {
    let token = fake_token(format, &mut || rng.next());
    let spelled = format!("{}\u{200B}{}", &token[..20], &token[20..]);
    text.push_str(&match i % 4 {
      0 => format!("トークン {spelled} です\n"),
      1 => "電話番号：０９０－１２３４－５６７８、メール jürgen.müller@gmx.de\n".to_string(),
      2 => format!("ju\u{308}rgen {} \u{FDFA}\n", fullwidth("4111 1111 1111 1111")),
      _ => "plain ascii line with bob@example.com\n".to_string(),
    });
    i += 1;
  }
  let cuts = super::split_points(text.as_bytes(), 3);
  assert!(cuts.len() > 2, "the text was not split");
  for options in [opts(), RedactOptions { pseudonymize: true, ..opts() }] {
    let parallel = super::redact_with_cuts(&text, &options, &cuts);
    let sequential = super::redact_with_cuts(&text, &options, &[0, text.len()]);
    assert!(sequential.findings.len() >= i, "every line has a finding");
    assert!(parallel == sequential, "parallel and sequential results differ");
  }
}

#[test]
fn property_any_unicode_soup_keeps_the_contract() {
  // The fuzz target's invariants on text made of what the view changes: findings on character
  // boundaries, in order and disjoint; the output is the input with each finding replaced; a
  // token planted on a line of its own is covered; a second pass changes nothing.
  const PIECES: &[&str] = &[
    "a",
    "Z",
    "7",
    " ",
    "\n",
    ".",
    "@",
    "-",
    ":",
    "/",
    "=",
    "\u{301}",
    "\u{327}",
    "\u{200B}",
    "\u{AD}",
    "\u{FEFF}",
    "\u{200D}",
    "\u{FE0F}",
    "\u{E0041}",
    "\u{FF11}",
    "\u{FF41}",
    "\u{FF20}",
    "\u{FF0D}",
    "\u{3000}",
    "ﬁ",
    "①",
    "²",
    "\u{FDFA}",
    "\u{1100}",
    "\u{1161}",
    "\u{11A8}",
    "\u{3131}",
    "\u{314F}",
    "東",
    "の",
    "ü",
    "\u{308}",
    "é",
    "😀",
    "👩\u{200D}💻",
    "\u{F73}",
    "\u{2474}",
    "ｶ",
    "\u{FF9E}",
    "password=",
    "ghp_",
    "+44 ",
    "4111 ",
    "mail ",
  ];
  let mut rng = Rng(0x500F_5EED);
  for round in 0..1500 {
    let mut soup = String::new();
    for _ in 0..rng.below(120) {
      soup.push_str(PIECES[rng.below(PIECES.len())]);
    }
    let format = &TOKEN_FORMATS[rng.below(TOKEN_FORMATS.len())];
    let token = fake_token(format, &mut || rng.next());
    let mut cut = rng.below(soup.len() + 1);
    while !soup.is_char_boundary(cut) {
      cut -= 1;
    }
    let input = format!("{}\n{token}\n{}", &soup[..cut], &soup[cut..]);
    let r = redact(&input, &opts());
    let mut boundaries = vec![0usize];
    for c in input.chars() {
      boundaries.push(boundaries.last().copied().unwrap_or(0) + c.len_utf16());
    }
    let mut last_end = 0;
    for f in &r.findings {
      assert!(f.start < f.end && f.start >= last_end, "round {round}: findings in order, disjoint");
      assert!(boundaries.binary_search(&f.start).is_ok() && boundaries.binary_search(&f.end).is_ok(), "round {round}");
      last_end = f.end;
    }
    assert_eq!(rebuilt(&input, &r), r.text, "round {round}: the findings rebuild the output");
    let start = input[..cut + 1].encode_utf16().count();
    let end = start + token.len();
    assert!(
      r.findings.iter().any(|f| f.start <= start && f.end >= end),
      "round {round}: the planted {} is covered",
      format.kind
    );
    assert_eq!(redact(&r.text, &opts()).text, r.text, "round {round}: a second pass changes nothing");
  }
}
