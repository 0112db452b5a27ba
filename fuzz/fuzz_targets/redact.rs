//! Any text, with a fake token of a known format planted in it on a line of its own, redacted:
//! redaction returns (a hang is a libFuzzer timeout), its work is linear in the length of the text
//! (counted in bytes examined, never timed), the planted token is gone and covered by a finding,
//! and the findings are valid: UTF-16 offsets in bounds and on character boundaries, sorted, not
//! overlapping, and the redacted text is the input with each finding replaced by its placeholder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loa_core::redact::testing::{fake_token, redact_counting_work, work_bound, Rng, TOKEN_FORMATS};
use loa_core::redact::RedactOptions;

fuzz_target!(|data: &[u8]| {
  if data.len() < 8 {
    return;
  }
  // The first bytes choose the format, the place and the token's characters; the rest is text.
  let (head, rest) = data.split_at(8);
  let text = String::from_utf8_lossy(rest);
  let format = &TOKEN_FORMATS[head[0] as usize % TOKEN_FORMATS.len()];
  let mut rng = Rng(u64::from_le_bytes(head.try_into().unwrap_or_default()));
  let token = fake_token(format, &mut || rng.next());
  let mut cut = u16::from_le_bytes([head[1], head[2]]) as usize % (text.len() + 1);
  while !text.is_char_boundary(cut) {
    cut -= 1;
  }
  let input = format!("{}\n{token}\n{}", &text[..cut], &text[cut..]);

  let options = RedactOptions { key: Some(b"fuzz".to_vec()), ..Default::default() };
  let (r, work) = redact_counting_work(&input, &options);

  assert!(work <= work_bound(input.len()), "work {work} for {} bytes", input.len());

  // Offsets: UTF-16 indices of character boundaries, in order, not overlapping.
  let mut boundaries = vec![0usize];
  for c in input.chars() {
    boundaries.push(boundaries.last().copied().unwrap_or(0) + c.len_utf16());
  }
  let mut last_end = 0;
  for f in &r.findings {
    assert!(f.start < f.end, "empty or reversed finding");
    assert!(f.start >= last_end, "findings overlap or are out of order");
    assert!(boundaries.binary_search(&f.start).is_ok() && boundaries.binary_search(&f.end).is_ok(), "not on a boundary");
    last_end = f.end;
  }

  // The redacted text is the input with each finding replaced.
  let units: Vec<u16> = input.encode_utf16().collect();
  let mut rebuilt = String::new();
  let mut at = 0;
  for f in &r.findings {
    rebuilt.push_str(&String::from_utf16(&units[at..f.start]).expect("a boundary"));
    rebuilt.push_str(&format!("[REDACTED:{}]", f.kind.to_uppercase()));
    at = f.end;
  }
  rebuilt.push_str(&String::from_utf16(&units[at..]).expect("a boundary"));
  assert!(rebuilt == r.text, "the findings do not rebuild the redacted text");

  // The planted token is gone, and a finding covers it.
  let byte = cut + 1;
  let start = input[..byte].encode_utf16().count();
  let end = start + token.len();
  assert!(!r.text.contains(&token), "a planted {} token survived", format.kind);
  assert!(r.findings.iter().any(|f| f.start <= start && f.end >= end), "no finding covers the planted {}", format.kind);
});
