//! Any bytes through the ledger's decoders: a trajectory file is read into records and damaged
//! lines that together account for every line, in order; an identifier either parses to a path
//! of plain components below the root or is refused with a coded error; a MEMORY.md line that
//! parses renders back to a line that parses to the same thing; the ledger's NOTES.md regions
//! set twice give the same bytes, and are found again with what was set.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loa_core::ledger::identifier::Identifier;
use loa_core::ledger::notes::{NotesDoc, Question};
use loa_core::ledger::persistence::MemoryLine;
use loa_core::ledger::trajectory::parse;

fuzz_target!(|bytes: &[u8]| {
  let read = parse(bytes);
  let mut lines: Vec<u64> = read.records.iter().map(|r| r.0).chain(read.damaged.iter().map(|d| d.line)).collect();
  lines.sort_unstable();
  assert!(lines.windows(2).all(|w| w[0] < w[1]), "each line is reported once");

  let Ok(text) = std::str::from_utf8(bytes) else { return };
  match Identifier::parse(text, std::path::Path::new("/project")) {
    Ok(id) => {
      assert!(id.path.split('/').all(|c| !c.is_empty() && c != "." && c != ".."), "plain components");
      assert!(id.start <= id.end && id.end - id.start < 100);
    }
    Err(e) => assert!(e.code().starts_with("E_")),
  }
  for line in text.lines() {
    if let Some(parsed) = MemoryLine::parse(line) {
      assert_eq!(MemoryLine::parse(&parsed.render()).map(|l| l.render()), Some(parsed.render()));
    }
  }
  let mut doc = NotesDoc::new(text);
  let questions = vec![Question { text: text.chars().take(64).collect(), done: false }];
  doc.set_pending_questions(&questions);
  let once = doc.clone();
  doc.set_pending_questions(&questions);
  assert_eq!(doc, once, "setting the region twice changes nothing");
});
