//! Any bytes as the search index's files: the base body and a log record payload, each framed
//! with valid checksums so the decoders' own checks are what is exercised (a plain byte string
//! nearly always stops at the checksum). Never a panic; a base that decodes answers a query; log
//! records advance strictly and stay within the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loa_core::search::format::{decode_base, frame, next_record, wrap_base_body, Next};
use loa_core::search::{AnalyzerConfig, SearchOptions};

fuzz_target!(|bytes: &[u8]| {
  let config = AnalyzerConfig::default();
  if let Ok((_, index)) = decode_base(&wrap_base_body(bytes, config.id(), 1), config) {
    index.search("fuzz query words", &SearchOptions::new(0)).unwrap();
  }
  // The raw bytes as a log, and the bytes as one framed payload.
  for log in [bytes.to_vec(), frame(bytes)] {
    let mut at = 0;
    while let Ok(Next::Record { size, .. }) = next_record(&log[at..]) {
      assert!(size > 0 && at + size <= log.len());
      at += size;
    }
  }
});
