//! Any text as `.loa.config.yaml`: either a configuration or a coded error (`E_CONFIG_INVALID`,
//! `E_TOO_LARGE`), never a panic, a hang or unbounded memory (YAML alias bombs included).
#![no_main]

use libfuzzer_sys::fuzz_target;
use loa_core::config::parse_config;

fuzz_target!(|bytes: &[u8]| {
  let Ok(text) = std::str::from_utf8(bytes) else { return };
  if let Err(e) = parse_config(text) {
    assert!(e.code().starts_with("E_"), "{}", e.code());
  }
});
