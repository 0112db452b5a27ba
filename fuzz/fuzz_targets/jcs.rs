//! Any bytes as JSON text through the canonicalizer: never a panic or a stack overflow (deep
//! nesting is refused with a coded error), and what comes out is a fixed point: canonical text
//! parses back and canonicalizes to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loa_core::jcs::canonicalize_text;

fuzz_target!(|bytes: &[u8]| {
  let Ok(text) = std::str::from_utf8(bytes) else { return };
  match canonicalize_text(text) {
    Ok(canonical) => {
      let again = std::str::from_utf8(&canonical).expect("canonical JSON is UTF-8");
      assert_eq!(canonicalize_text(again).expect("canonical JSON parses back"), canonical);
    }
    Err(e) => assert!(e.code().starts_with("E_")),
  }
});
