use super::*;

const SAMPLES: &str = include_str!("../../__test__/fixtures/token-samples.json");

/// (category, text) for every sample of the shared fixture (also used by the JS tests against
/// js-tiktoken).
fn samples() -> Vec<(String, String)> {
  let v: serde_json::Value = serde_json::from_str(SAMPLES).unwrap();
  let mut out = Vec::new();
  for (kind, list) in v.as_object().unwrap() {
    for s in list.as_array().unwrap() {
      out.push((kind.clone(), s.as_str().unwrap().to_string()));
    }
  }
  out
}

const BOTH: [TokenEncoding; 2] = [TokenEncoding::O200kBase, TokenEncoding::Cl100kBase];

#[test]
fn calibration_table() {
  // Prints, per kind of text, exact counts and the estimate's error (run with --nocapture).
  let mut by_kind: std::collections::BTreeMap<String, (usize, usize, usize, usize, usize)> = Default::default();
  for (kind, text) in samples() {
    let e = by_kind.entry(kind).or_default();
    e.0 += text.chars().count();
    e.1 += text.len();
    e.2 += count_tokens(&text, TokenEncoding::O200kBase);
    e.3 += count_tokens(&text, TokenEncoding::Cl100kBase);
    e.4 += estimate_tokens(&text);
    for enc in BOTH {
      let exact = count_tokens(&text, enc);
      if estimate_tokens(&text) < exact {
        println!("UNDER {enc:?} {} < {exact}: {:?}", estimate_tokens(&text), text.chars().take(60).collect::<String>());
      }
    }
  }
  for (kind, (chars, bytes, o, c, est)) in by_kind {
    let naive = ((chars as f64 / 4.0).ceil() * 1.3).ceil();
    println!(
      "{kind:10} chars {chars:6} bytes {bytes:6} o200k {o:5} cl100k {c:5} est {est:5} est/o {:.2} est/c {:.2} naive/o {:.2} naive/c {:.2}",
      est as f64 / o as f64,
      est as f64 / c as f64,
      naive / o as f64,
      naive / c as f64
    );
  }
}

#[test]
fn counts_match_tiktoken() {
  // Reference counts from js-tiktoken 1.0.21 (`encode(text, [], []).length`); the JS suite
  // compares every fixture sample against it.
  let cases: [(&str, usize, usize); 8] = [
    ("hello world", 2, 2),
    ("The quick brown fox jumps over the lazy dog.", 10, 10),
    ("中文内容测试", 3, 4),
    ("👨‍👩‍👧‍👦", 11, 18),
    ("<|endoftext|>", 7, 7),
    ("sha256:b5fd4da6901078530ad0b1f776a46799", 20, 20),
    ("    indented\n\n\n", 4, 4),
    ("I'm they're", 2, 4),
  ];
  for (text, o200k, cl100k) in cases {
    assert_eq!(count_tokens(text, TokenEncoding::O200kBase), o200k, "{text:?}");
    assert_eq!(count_tokens(text, TokenEncoding::Cl100kBase), cl100k, "{text:?}");
  }
  assert_eq!(count_tokens("", TokenEncoding::O200kBase), 0);
}

#[test]
fn the_piece_cache_never_changes_a_count() {
  let texts: Vec<String> = samples().into_iter().map(|(_, t)| t).collect();
  for enc in BOTH {
    let first = count_tokens_batch(&texts, enc);
    let again = count_tokens_batch(&texts, enc);
    CACHES.with(|c| c.borrow_mut()[enc.slot()].clear());
    let cold = count_tokens_batch(&texts, enc);
    assert_eq!(first, again);
    assert_eq!(first, cold);
    // Without the cache at all: the pieces counted one by one.
    let e = encoder(enc);
    let plain: Vec<usize> =
      texts.iter().map(|t| e.splitter.split(t).map(|p| e.vocabulary.count(p.as_bytes())).sum()).collect();
    assert_eq!(first, plain);
  }
}

#[test]
fn pieces_are_never_empty_and_make_up_the_text() {
  let mut texts: Vec<String> = samples().into_iter().map(|(_, t)| t).collect();
  texts
    .extend(["a   b", "a \n\n  b", "   ", "x  \t\u{3000}y", "\u{3000}\u{3000}", "1 2  3", "'s'S'll"].map(String::from));
  for enc in BOTH {
    let splitter = &encoder(enc).splitter;
    for text in &texts {
      let pieces: Vec<&str> = splitter.split(text).collect();
      assert!(pieces.iter().all(|p| !p.is_empty()), "{enc:?} {text:?}");
      assert_eq!(pieces.concat(), *text, "{enc:?}");
    }
  }
  // Whitespace before a word leaves its last character to the word (tiktoken's `\s+(?!\S)`).
  let o200k = &encoder(TokenEncoding::O200kBase).splitter;
  assert_eq!(o200k.split("a   b").collect::<Vec<_>>(), ["a", "  ", " b"]);
  assert_eq!(o200k.split("a   ").collect::<Vec<_>>(), ["a", "   "]);
  assert_eq!(o200k.split("a \u{3000}b").collect::<Vec<_>>(), ["a", " ", "\u{3000}b"]);
}

#[test]
fn the_tables_hold_tiktokens_vocabularies() {
  use base64::prelude::*;
  use sha2::{Digest, Sha256};
  // The SHA-256 tiktoken checks its downloaded rank files against (`base64-token rank` lines), of
  // the rank file rebuilt from the expanded table: the same tokens with the same ids.
  let published = [
    (TokenEncoding::O200kBase, 199_998, "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
    (TokenEncoding::Cl100kBase, 100_256, "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
  ];
  for (enc, tokens, digest) in published {
    let vocabulary = &encoder(enc).vocabulary;
    assert_eq!(vocabulary.num_tokens(), tokens, "{enc:?}");
    let mut rank_file = Sha256::new();
    for id in 0..tokens as u32 {
      rank_file.update(format!("{} {id}\n", BASE64_STANDARD.encode(vocabulary.token_bytes(id))));
    }
    assert_eq!(hex::encode(rank_file.finalize()), digest, "{enc:?}: the tokens are not tiktoken's");
  }
}

#[test]
fn every_token_encodes_to_itself() {
  // Exercises every part of a table (tokens, automaton, merge and prefix tables): a token's own
  // bytes are that one token in BPE.
  for enc in BOTH {
    let vocabulary = &encoder(enc).vocabulary;
    for id in 0..vocabulary.num_tokens() as u32 {
      assert_eq!(vocabulary.encode(vocabulary.token_bytes(id)), [id], "{enc:?} token {id}");
    }
  }
}

#[test]
fn a_damaged_table_is_refused() {
  for enc in BOTH {
    let stored = tables::stored(enc);
    assert!(tables::load(stored).is_ok());
    let with = |at: usize, f: fn(u8) -> u8| {
      let mut copy = stored.to_vec();
      copy[at] = f(copy[at]);
      tables::load(&copy).err()
    };
    // Header, declared size, checksum, compressed bytes (early, middle and last).
    for at in [0, 9, 13, stored.len() / 2, stored.len() - 1, 40] {
      let error = with(at, |b| b ^ 0x20).unwrap_or_else(|| panic!("{enc:?}: byte {at} changed, table accepted"));
      assert!(!error.is_empty());
    }
    assert!(with(11, |_| 0xff).is_some_and(|e| e.contains("more than a table holds")));
    for len in [0, 8, 16, stored.len() - 1] {
      assert!(tables::load(&stored[..len]).is_err(), "{enc:?}: cut at {len}, table accepted");
    }
  }
}

#[test]
fn count_until_stops_at_the_limit() {
  let e = encoder(TokenEncoding::O200kBase);
  for (_, text) in samples() {
    let n = e.count(&text);
    assert_eq!(e.count_until(&text, n), Some(n));
    assert_eq!(e.count_until(&text, n + 5), Some(n));
    if n > 0 {
      assert_eq!(e.count_until(&text, n - 1), None);
    }
  }
  // Too long to fit is known from the length alone.
  let long = "a".repeat(129);
  assert_eq!(e.count_until(&long, 1), None);
  assert_eq!(e.max_token_bytes(), 128);
}

#[test]
fn prefixes_end_on_token_and_character_boundaries() {
  for enc in BOTH {
    let e = encoder(enc);
    for (_, text) in samples() {
      let n = e.count(&text);
      let mut last = 0;
      for k in 0..=n.min(60) {
        let end = e.prefix_len(&text, k);
        assert!(text.is_char_boundary(end));
        assert!(end >= last, "prefixes grow with k");
        last = end;
        let prefix = &text[..end];
        // The prefix is made of the text's first tokens, so on its own it counts about k.
        assert!(e.count(prefix) <= k + 2, "{enc:?} k={k} {prefix:?}");
      }
      assert_eq!(e.prefix_len(&text, n), text.len());
    }
  }
}

#[test]
fn the_estimate_is_above_the_exact_count_on_every_sample() {
  for (kind, text) in samples() {
    for enc in BOTH {
      let exact = count_tokens(&text, enc);
      let estimate = estimate_tokens(&text);
      assert!(estimate >= exact, "{kind} {enc:?}: estimate {estimate} < exact {exact} for {text:?}");
    }
  }
  assert_eq!(estimate_tokens(""), 0);
}

#[test]
fn margins() {
  assert_eq!(with_margin(100, 0.0), 100);
  assert_eq!(with_margin(80, 0.2), 100);
  assert_eq!(with_margin(81, 0.2), 102);
  assert_eq!(with_margin(70, 0.3), 100);
  assert_eq!(budget_limit(2000, 0.0), 2000);
  assert_eq!(budget_limit(2000, 0.3), 1400);
  assert_eq!(budget_limit(1001, 0.5), 500);
  assert_eq!(budget_limit(10, 0.7), 3);
  for m in [0.0, 0.1, 0.25, 0.3, 0.7] {
    for b in [1u64, 7, 100, 1999, 2000] {
      let limit = budget_limit(b, m) as usize;
      assert!(with_margin(limit, m) <= b as usize, "b={b} m={m}");
    }
  }
  assert!(check_margin(1.0, "m").is_err() && check_margin(-0.1, "m").is_err() && check_margin(f64::NAN, "m").is_err());
  assert!(TokenEncoding::parse("p50k_base").is_err());
  assert_eq!(TokenEncoding::parse("cl100k_base").unwrap().as_str(), "cl100k_base");
}
