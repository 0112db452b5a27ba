//! Any bytes on disk, scanned as a WAL segment: never a panic, never an out-of-bounds read, and
//! the scan's own invariants hold (records in seq order, valid length within the input, every
//! returned record re-encodes to exactly the bytes it was read from).
#![no_main]

use libfuzzer_sys::fuzz_target;
use loa_core::wal::format::{encode_record, scan_segment, Tail, SEGMENT_HEADER_LEN};

fuzz_target!(|bytes: &[u8]| {
  let scan = scan_segment(bytes);
  assert!(scan.valid_len as usize <= bytes.len());
  assert!(scan.records.windows(2).all(|w| w[0].seq < w[1].seq));
  if scan.header.is_some() {
    let mut reencoded = bytes[..SEGMENT_HEADER_LEN].to_vec();
    for record in &scan.records {
      encode_record(record, &mut reencoded);
    }
    assert_eq!(&reencoded[..], &bytes[..scan.valid_len as usize]);
  }
  match scan.tail {
    Tail::Torn { offset, bytes: cut } => assert_eq!(offset + cut, bytes.len() as u64),
    Tail::Corrupt { offset, .. } => assert!((offset as usize) < bytes.len()),
    Tail::Clean => {}
  }
});
