//! Any bytes as `learnings.json` written by another tool: either a store or `E_STATE_CORRUPT`,
//! never a panic; and what is read is kept exactly: writing a store back and reading it again
//! gives the same bytes (foreign values, big integers and `1e400` included).
#![no_main]

use libfuzzer_sys::fuzz_target;
use loa_core::memory::learnings::decode;

fuzz_target!(|bytes: &[u8]| {
  match decode(bytes) {
    Ok(store) => {
      let written = store.to_bytes();
      let again = decode(&written).expect("a store we wrote reads back");
      assert_eq!(again.to_bytes(), written, "writing is a fixed point");
    }
    Err(e) => assert_eq!(e.code(), "E_STATE_CORRUPT"),
  }
});
