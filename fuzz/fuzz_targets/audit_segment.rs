//! Any bytes as an audit log segment: verification never panics, never writes, and reports
//! every damage as a coded problem; opening the log for appending either continues a valid
//! chain (cutting only a torn last line) or refuses with a coded error.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use loa_core::audit::{verify, AuditLog, AuditOptions};

fn scratch() -> &'static std::path::PathBuf {
  static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
  DIR.get_or_init(|| {
    let dir = std::env::temp_dir().join(format!("loa-fuzz-audit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
  })
}

fuzz_target!(|bytes: &[u8]| {
  let dir = scratch();
  for entry in std::fs::read_dir(dir).unwrap() {
    let _ = std::fs::remove_file(entry.unwrap().path());
  }
  let segment = dir.join("00000000000000000001.jsonl");
  std::fs::write(&segment, bytes).unwrap();
  let report = verify(dir, None, None).expect("verification reports damage, it does not fail");
  assert_eq!(std::fs::read(&segment).unwrap(), bytes, "verification never writes");
  for p in &report.problems {
    assert!(!p.kind.is_empty());
  }
  match AuditLog::open(dir, AuditOptions::default()) {
    Ok(log) => {
      let _ = log.head();
    }
    Err(e) => assert!(e.code().starts_with("E_"), "{}", e.code()),
  }
});
