//! Any bytes as the search index's files: a base (format 2, read in place), and a log record
//! payload framed with a valid checksum. Never a panic; a base that opens answers queries, lists
//! its ids and verifies, each either correctly or with `E_STATE_CORRUPT`; log records advance
//! strictly and stay within the input.
//!
//! Bases are reached two ways: the input as a whole file (stopped by the header's checksum
//! nearly always), and a real base whose bytes the input changes, then resealed (every checksum
//! recomputed but the two `fst` maps'), so that the row, id, agent and posting decoders are what
//! stands between damage and the index. The maps' checksums are never recomputed: `fst` is
//! only ever handed bytes that match the checksum this crate wrote (see `src/search/base.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use loa_core::memory::MemoryKind;
use loa_core::search::base::reseal;
use loa_core::search::format::{decode_base, encode_base, frame, next_record, Next};
use loa_core::search::{AnalyzerConfig, Document, MemoryIndex, SearchOptions};

fn real_base() -> Vec<u8> {
  let mut index = MemoryIndex::new(AnalyzerConfig::default());
  let texts = [
    "We deployed the billing service to staging after the migration",
    "The database is PostgreSQL 16 on the primary cluster",
    "Formatting uses two spaces, the linter complains about tabs",
    "東京都の会議は火曜日に移動しました",
  ];
  for (i, text) in texts.iter().enumerate() {
    let doc = Document {
      id: format!("memory-{i}"),
      text: text.to_string(),
      kind: MemoryKind::ALL[i % MemoryKind::ALL.len()],
      agent_id: (i % 2 == 1).then(|| format!("agent-{i}")),
      timestamp_ms: 1_780_000_000_000 - i as i64 * 86_400_000,
      instruction: i == 2,
      // Rows carry a session tag: neighbours in one session, and one memory without a session.
      session: (i != 3).then(|| "session".to_string()),
    };
    index.add(&doc).unwrap();
  }
  index.compact().unwrap();
  encode_base(&index, AnalyzerConfig::default().id(), 1)
}

fn exercise(bytes: &[u8]) {
  let config = AnalyzerConfig::default();
  let Ok((_, index)) = decode_base(bytes, config) else { return };
  for query in ["billing service", "postgresql 東京", "tabs linter fuzz"] {
    if let Err(e) = index.search(query, &SearchOptions::new(0)) {
      assert_eq!(e.code(), "E_STATE_CORRUPT");
    }
  }
  if let Err(e) = index.ids() {
    assert_eq!(e.code(), "E_STATE_CORRUPT");
  }
  let _ = index.contains("memory-1");
}

fuzz_target!(|bytes: &[u8]| {
  exercise(bytes);
  // The input as (offset, xor) pairs applied to a real base, then resealed.
  let mut base = real_base();
  for pair in bytes.chunks_exact(3) {
    let at = u16::from_le_bytes([pair[0], pair[1]]) as usize % base.len();
    base[at] ^= pair[2];
  }
  reseal(&mut base);
  exercise(&base);
  // The raw bytes as a log, and the bytes as one framed payload.
  for log in [bytes.to_vec(), frame(bytes)] {
    let mut at = 0;
    while let Ok(Next::Record { size, .. }) = next_record(&log[at..]) {
      assert!(size > 0 && at + size <= log.len());
      at += size;
    }
  }
});
