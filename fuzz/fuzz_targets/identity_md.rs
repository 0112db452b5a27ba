//! Any text as BEAUVOIR.md: parsing and rendering never panic, are deterministic, stay within
//! the size SOUL.md is read back at (well under twice the source), and the report names only
//! known sections, each once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loa_core::identity::{parse_beauvoir, render_soul, SECTIONS};

fuzz_target!(|bytes: &[u8]| {
  let Ok(text) = std::str::from_utf8(bytes) else { return };
  let doc = parse_beauvoir(text);
  let soul = render_soul(&doc, "0000000000000000");
  assert_eq!(soul, render_soul(&parse_beauvoir(text), "0000000000000000"), "deterministic");
  assert!(soul.text.len() <= 2 * text.len() + 1024, "{} bytes from {}", soul.text.len(), text.len());
  for (i, s) in soul.sections.iter().enumerate() {
    assert!(SECTIONS.contains(&s.as_str()) && !soul.sections[..i].contains(s), "{s:?}");
  }
});
