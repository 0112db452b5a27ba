//! The ledger end to end on a real workspace: memory store, NOTES.md, trajectory, beads.

use std::path::Path;

use super::grounding::GhostClaim;
use super::notes::{ContextItem, NotesDoc};
use super::trajectory::{Event, Evidence, Grounding};
use super::*;
use crate::memory::{MemoryStore, StoreOptions};
use crate::timestamp::parse_rfc3339_ms;

/// The random-edit tests' generator (xorshift): no crate, and a failure is reproducible from
/// its seed. `text` joins 1 to `most` pieces drawn from `pieces`.
pub(super) struct Rng {
  state: u64,
  pieces: &'static [&'static str],
  most: u64,
}

impl Rng {
  pub(super) fn new(seed: u64, pieces: &'static [&'static str], most: u64) -> Rng {
    Rng { state: seed, pieces, most }
  }
  pub(super) fn next(&mut self) -> u64 {
    self.state ^= self.state << 13;
    self.state ^= self.state >> 7;
    self.state ^= self.state << 17;
    self.state
  }
  pub(super) fn text(&mut self) -> String {
    let pieces = self.pieces;
    (0..1 + self.next() % self.most).map(|_| pieces[(self.next() % pieces.len() as u64) as usize]).collect()
  }
}

const FOREIGN_NOTES: &str = "# Agent Working Memory (NOTES.md)

Written by a human.

## Session Continuity

### Active Context

### Decision Log

#### 2025-12-01T09:00:00Z - Human decision
**Decision**: Keep the monorepo

### Pending Questions

## Discovered Technical Debt
```text
## not a heading
```
";

fn workspace() -> tempfile::TempDir {
  let tmp = tempfile::tempdir().unwrap();
  std::fs::create_dir_all(tmp.path().join("src/auth")).unwrap();
  std::fs::write(
    tmp.path().join("src/auth/jwt.ts"),
    "import x from 'y';\nexport function isTokenExpired(token, graceMs = 900000) {\n  return false;\n}\n",
  )
  .unwrap();
  std::fs::create_dir_all(tmp.path().join("grimoires/loa")).unwrap();
  std::fs::write(tmp.path().join("grimoires/loa/NOTES.md"), FOREIGN_NOTES).unwrap();
  tmp
}

fn ledger(ws: &Path) -> Ledger {
  Ledger::new(LedgerOptions { workspace_dir: ws.to_path_buf(), level1_tokens: 400, ..Default::default() }).unwrap()
}

fn store(ws: &Path) -> MemoryStore {
  MemoryStore::open(StoreOptions { workspace_dir: ws.to_path_buf(), session_id: "sess-1".into(), ..Default::default() })
    .unwrap()
}

fn cite(l: &Ledger, now: i64, quote: &str) {
  let event = Event::Cite {
    claim: "expiry has a grace period".into(),
    grounding: Grounding::Citation,
    evidence: Some(Evidence { identifier: "${PROJECT_ROOT}/src/auth/jwt.ts:2".into(), quote: quote.into() }),
  };
  l.trajectory().unwrap().append("impl", now, event).unwrap();
}

fn input(now: i64) -> CheckpointInput {
  CheckpointInput {
    agent: "impl".into(),
    session_id: "sess-1".into(),
    bead_id: Some("bd-x7y8".into()),
    decisions: vec![DecisionInput {
      decision: "Use sliding window expiration with a 15-minute grace period".into(),
      rationale: Some("Balances security with UX".into()),
      evidence: vec![EvidenceInput {
        identifier: "${PROJECT_ROOT}/src/auth/jwt.ts:2".into(),
        quote: "export function isTokenExpired(token, graceMs = 900000)".into(),
      }],
      test_scenarios: vec![
        "Token expires exactly at boundary -> grace period applies".into(),
        "Token expires beyond grace -> forced refresh".into(),
        "Refresh token also expired -> full re-authentication".into(),
      ],
    }],
    active_context: vec![ContextItem { key: "Reasoning State".into(), value: "validating token expiry".into() }],
    identifiers: vec![
      IdentifierInput { identifier: "${PROJECT_ROOT}/src/auth/jwt.ts:1-4".into(), purpose: "Token validation".into() },
      IdentifierInput { identifier: "${PROJECT_ROOT}/../etc/passwd:1".into(), purpose: "escape".into() },
    ],
    pending_questions: vec![super::notes::Question {
      text: "Should grace period be configurable per-client?".into(),
      done: false,
    }],
    next_steps: vec!["Implement clock skew tolerance".into()],
    ghosts: vec![GhostClaim {
      feature: "rate limiting".into(),
      queries: vec!["rate limiter".into(), "throttle requests per client".into()],
    }],
    now_ms: now,
  }
}

#[test]
fn a_checkpoint_persists_everything_and_recall_brings_it_back() {
  let tmp = workspace();
  let ws = tmp.path();
  let l = ledger(ws);
  let s = store(ws);
  let now = parse_rfc3339_ms("2026-01-15T14:30:00Z", "t").unwrap();
  cite(&l, now, "export function isTokenExpired(token, graceMs = 900000)");

  let report = checkpoint(&l, Some(&s), &input(now));
  assert_eq!(report.exit_code, 0, "{:#?}", report.steps);
  assert_eq!(report.grounding.ratio, Some(1.0));
  assert!(report.edd_verified && report.ghosts[0].verified);
  assert_eq!(report.steps.iter().map(|s| s.step).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5, 6, 7]);
  assert_eq!(report.steps[5].status, "warn"); // the escaping identifier was not kept

  // NOTES.md: the decision with its fields in consolidation's region, ours in place, the
  // human text kept.
  let notes = std::fs::read_to_string(ws.join("grimoires/loa/NOTES.md")).unwrap();
  assert!(notes.starts_with("# Agent Working Memory (NOTES.md)\n\nWritten by a human.\n"));
  assert!(notes.contains("## Discovered Technical Debt\n```text\n## not a heading\n```\n"));
  let doc = NotesDoc::new(notes.clone());
  let decisions = doc.decisions();
  assert_eq!(decisions.len(), 2, "{notes}");
  let ours = &decisions[1];
  assert_eq!(ours.rationale.as_deref(), Some("Balances security with UX"));
  assert_eq!(ours.test_scenarios.len(), 3);
  assert!(ours.evidence[0].contains("${PROJECT_ROOT}/src/auth/jwt.ts:2"));
  assert_eq!(doc.identifiers().len(), 1);
  assert_eq!(doc.pending_questions().len(), 1);
  assert!(doc.active_context().iter().any(|c| c.key == "Current Bead" && c.value == "bd-x7y8"));

  // Recall after /clear: level 1 carries the active context, level 2 finds the decision.
  let l1 = l.recall_level1().unwrap();
  assert!(l1.found && l1.tokens <= 400);
  assert!(l1.text.contains("validating token expiry"), "{}", l1.text);
  let l2 = l.recall_level2("grace period for token expiry", 3, now).unwrap();
  assert!(l2.hits[0].entry.decision.contains("sliding window"));

  // Bead and trajectory.
  let bead = l.beads().unwrap().read("bd-x7y8").unwrap().unwrap();
  assert_eq!((bead.decisions.len(), bead.handoffs.len(), bead.test_scenarios.len()), (1, 1, 3));
  assert_eq!(bead.test_scenarios[0].expected, "grace period applies");
  let read = l.trajectory().unwrap().read_day("impl", now).unwrap();
  let handoff = &read.records.last().unwrap().1.event;
  assert!(matches!(handoff, Event::SessionHandoff { next_session_ready: true, edd_verified: true, .. }));
  assert!(read
    .records
    .iter()
    .any(|(_, r)| matches!(&r.event, Event::GroundingCheck { status, .. } if status == "pass")));
  assert!(read.damaged.is_empty());

  // A second checkpoint with the same decision changes no decision (duplicate is fine), and one
  // that says less keeps what the first wrote.
  assert_eq!(checkpoint(&l, Some(&s), &input(now + 1000)).exit_code, 0);
  let mut less = input(now + 2000);
  less.active_context.clear();
  less.identifiers.clear();
  less.pending_questions = vec![super::notes::Question { text: "Another question".into(), done: false }];
  assert_eq!(checkpoint(&l, Some(&s), &less).exit_code, 0);
  let doc = l.notes().unwrap();
  assert_eq!(doc.pending_questions().len(), 2);
  assert_eq!(doc.identifiers().len(), 1);
  assert!(doc.active_context().iter().any(|c| c.value == "validating token expiry"));
  assert_eq!(doc.active_context().iter().filter(|c| c.key == "Last Checkpoint").count(), 1);
  assert_eq!(NotesDoc::new(std::fs::read_to_string(ws.join("grimoires/loa/NOTES.md")).unwrap()).decisions().len(), 2);
}

#[test]
fn the_checkpoint_blocks_on_a_crash_an_empty_file_and_a_malformed_line() {
  let now = parse_rfc3339_ms("2026-01-15T14:30:00Z", "t").unwrap();
  let day_file = "grimoires/loa/a2a/trajectory/impl-2026-01-15.jsonl";
  let mut no_decisions = input(now);
  no_decisions.decisions.clear();
  no_decisions.ghosts.clear();

  // Ungrounded: the quote is not in the file -> block (1).
  let tmp = workspace();
  let l = ledger(tmp.path());
  cite(&l, now, "function thatDoesNotExist()");
  let r = checkpoint(&l, None, &no_decisions);
  assert_eq!(r.exit_code, 1, "{:#?}", r.steps);
  // Written anyway, flagged as not ready.
  let read = l.trajectory().unwrap().read_day("impl", now).unwrap();
  assert!(matches!(read.records.last().unwrap().1.event, Event::SessionHandoff { next_session_ready: false, .. }));

  // An empty file -> error (2).
  let tmp = workspace();
  let l = ledger(tmp.path());
  std::fs::create_dir_all(tmp.path().join("grimoires/loa/a2a/trajectory")).unwrap();
  std::fs::write(tmp.path().join(day_file), "").unwrap();
  assert_eq!(checkpoint(&l, None, &no_decisions).exit_code, 2);
  // Nothing was appended to it, so the next run blocks again instead of passing.
  assert_eq!(std::fs::read(tmp.path().join(day_file)).unwrap(), b"");
  assert_eq!(checkpoint(&l, None, &no_decisions).exit_code, 2);

  // A malformed line -> error (2), in warn mode too.
  let tmp = workspace();
  let mut l = ledger(tmp.path());
  cite(&l, now, "export function isTokenExpired(token, graceMs = 900000)");
  let path = tmp.path().join(day_file);
  let mut text = std::fs::read_to_string(&path).unwrap();
  text.push_str("{\"v\":1,\"phase\":\"cite\",\"grounding\":\"citation\"\n");
  std::fs::write(&path, text).unwrap();
  l.options.grounding.enforcement = options::GroundingEnforcement::Warn;
  let r = checkpoint(&l, None, &no_decisions);
  assert_eq!(r.exit_code, 2);
  assert!(r.grounding.errors[0].starts_with("trajectory line 2:"), "{:?}", r.grounding.errors);

  // A crash of the check (the trajectory is a directory) -> error (2).
  let tmp = workspace();
  let l = ledger(tmp.path());
  std::fs::create_dir_all(tmp.path().join(day_file)).unwrap();
  assert_eq!(checkpoint(&l, None, &no_decisions).exit_code, 2);

  // Decisions without a store cannot be persisted -> error (2), never a silent loss.
  let tmp = workspace();
  let l = ledger(tmp.path());
  cite(&l, now, "export function isTokenExpired(token, graceMs = 900000)");
  let mut with_decisions = input(now);
  with_decisions.ghosts.clear();
  assert_eq!(checkpoint(&l, None, &with_decisions).exit_code, 2);
}

#[test]
fn reads_create_nothing() {
  let tmp = tempfile::tempdir().unwrap();
  let l = ledger(tmp.path());
  assert!(!l.recall_level1().unwrap().text.is_empty());
  assert_eq!(l.grounding_check("impl", 0).exit_code(), 0);
  assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn a_ghost_that_exists_blocks_in_strict_mode() {
  let tmp = workspace();
  let l = ledger(tmp.path());
  let now = parse_rfc3339_ms("2026-01-15T14:30:00Z", "t").unwrap();
  let mut i = input(now);
  i.decisions.clear();
  i.ghosts =
    vec![GhostClaim { feature: "token expiry".into(), queries: vec!["isTokenExpired".into(), "grace ms".into()] }];
  let r = checkpoint(&l, None, &i);
  assert_eq!(r.exit_code, 1, "{:#?}", r.steps);
  assert!(r.steps[1].messages[0].starts_with("[UNVERIFIED GHOST]"));
}

#[test]
fn memory_md_overflow_lands_in_the_decision_log() {
  use super::persistence::{overflow_summary, LineKind, MemoryLine};
  let tmp = workspace();
  let ws = tmp.path();
  let l = Ledger::new(LedgerOptions { workspace_dir: ws.to_path_buf(), memory_max_entries: 2, ..Default::default() })
    .unwrap();
  let s = store(ws);
  let md = l.memory_md().unwrap();
  for i in 0..3 {
    let line = MemoryLine {
      ts_ms: 1_000 * i,
      kind: LineKind::Completion,
      name: Some("apex".into()),
      status: Some(Status::Completed),
      text: format!("Completed APEX workflow number {i} for the billing service: shipped"),
    };
    md.append(&line, &mut |lines| {
      let d = DecisionInput { decision: overflow_summary(lines), ..Default::default() };
      checkpoint::record_decision(&s, &d, 5_000)?;
      s.consolidate().map(|_| ())
    })
    .unwrap();
  }
  assert_eq!(md.lines().unwrap().len(), 2);
  let notes = l.notes().unwrap();
  assert!(notes.decisions().iter().any(|d| d.decision.contains("workflow number 0")), "{}", notes.text());
}

/// The properties of the `ledger` fuzz target (fuzz/fuzz_targets/ledger.rs), on its seeds and
/// a few hostile inputs, so that they hold in every `cargo test` run too.
#[test]
fn fuzz_properties_hold_on_the_seeds() {
  use super::identifier::Identifier;
  use super::notes::Question;
  use super::persistence::MemoryLine;
  use super::trajectory::parse;
  let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/ledger");
  let mut inputs: Vec<Vec<u8>> =
    std::fs::read_dir(&dir).unwrap().map(|e| std::fs::read(e.unwrap().path()).unwrap()).collect();
  inputs.extend([
    b"\n\n\xff\n".to_vec(),
    b"${PROJECT_ROOT}/a/../b:1".to_vec(),
    b"## Pending Questions\n```\n".to_vec(),
  ]);
  for bytes in inputs {
    let read = parse(&bytes);
    let mut lines: Vec<u64> = read.records.iter().map(|r| r.0).chain(read.damaged.iter().map(|d| d.line)).collect();
    lines.sort_unstable();
    assert!(lines.windows(2).all(|w| w[0] < w[1]));
    let Ok(text) = std::str::from_utf8(&bytes) else { continue };
    match Identifier::parse(text, Path::new("/project")) {
      Ok(id) => assert!(id.path.split('/').all(|c| !c.is_empty() && c != "." && c != "..")),
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
    assert_eq!(doc, once);
  }
}

#[test]
fn the_write_protocol_writes_l1_then_l2_and_recovery_brings_l1_up_to_date() {
  use super::persistence::MemoryLine;
  let tmp = workspace();
  let ws = tmp.path();
  let l = ledger(ws);
  let s = store(ws);
  let line = MemoryLine::checkpoint(1_000, "apex", Status::InProgress, "APEX", "plan", "implementing", "billing");
  let out = l
    .persist_state(OverflowStore::Given(&s), "apex", Status::InProgress, Default::default(), Some(&line), 1_000)
    .unwrap();
  assert_eq!(out.state.status, Status::InProgress);
  assert!(out.l2_warning.is_none());
  // An illegal transition writes neither layer.
  let done = MemoryLine::completion(2_000, "apex", "APEX", "billing", "shipped");
  assert_eq!(
    l.persist_state(OverflowStore::Given(&s), "apex", Status::Archived, Default::default(), Some(&done), 2_000)
      .unwrap_err()
      .code(),
    "E_ILLEGAL_TRANSITION"
  );
  assert_eq!(l.memory_md().unwrap().lines().unwrap().len(), 1);
  // L2 unavailable (MEMORY.md is a directory): a warning, L1 still written.
  let md_path = ws.join("grimoires/loa/MEMORY.md");
  let saved = std::fs::read(&md_path).unwrap();
  std::fs::remove_file(&md_path).unwrap();
  std::fs::create_dir(&md_path).unwrap();
  let out =
    l.persist_state(OverflowStore::None, "apex", Status::Blocked, Default::default(), Some(&line), 3_000).unwrap();
  assert!(out.l2_warning.unwrap().starts_with("Auto-memory unavailable"));
  std::fs::remove_dir(&md_path).unwrap();
  std::fs::write(&md_path, saved).unwrap();
  // MEMORY.md newer than L1 by more than five minutes: it wins, L1 follows, with a warning.
  let later =
    MemoryLine::checkpoint(3_000 + 600_000, "apex", Status::InProgress, "APEX", "unblock", "implementing", "billing");
  l.memory_md().unwrap().append(&later, &mut |_| Ok(())).unwrap();
  let r = l.recover_state("apex").unwrap().unwrap();
  assert_eq!((r.resolution.winner.source.as_str(), r.resolution.winner.status), ("memory.md", Status::InProgress));
  assert!(r.warnings[0].contains("stale"));
  assert_eq!(l.l1().unwrap().read("apex").unwrap().unwrap().status, Status::InProgress);
  assert!(l.recover_state("other").unwrap().is_none());
}

#[test]
fn completion_needs_its_line_and_overflow_reaches_the_decision_log_through_an_opened_store() {
  use super::persistence::MemoryLine;
  let tmp = workspace();
  let ws = tmp.path();
  let mut options = LedgerOptions { workspace_dir: ws.to_path_buf(), memory_max_entries: 2, ..Default::default() };
  options.level1_tokens = 400;
  let l = Ledger::new(options).unwrap();
  let open = || {
    OverflowStore::Open(Box::new(StoreOptions {
      workspace_dir: ws.to_path_buf(),
      session_id: "persist".into(),
      ..Default::default()
    }))
  };
  let none = Default::default;
  l.persist_state(open(), "apex", Status::InProgress, none(), None, 1_000).unwrap();
  // Entering `completed` without the completion line writes nothing.
  let learning = MemoryLine {
    ts_ms: 2_000,
    kind: super::persistence::LineKind::Learning,
    name: None,
    status: None,
    text: "x".into(),
  };
  for line in [None, Some(&learning)] {
    let err = l.persist_state(open(), "apex", Status::Completed, none(), line, 2_000).unwrap_err();
    assert_eq!(err.code(), "E_INVALID_ARGUMENT");
  }
  assert_eq!(l.l1().unwrap().read("apex").unwrap().unwrap().status, Status::InProgress);
  for (i, ctx) in ["alpha billing", "beta invoices", "gamma refunds"].iter().enumerate() {
    let ts = 3_000 + i as i64;
    let line = MemoryLine::checkpoint(ts, "apex", Status::InProgress, "APEX", "plan", "implementing", ctx);
    let out = l.persist_state(open(), "apex", Status::InProgress, none(), Some(&line), ts).unwrap();
    assert!(out.l2_warning.is_none(), "{:?}", out.l2_warning);
  }
  let done = MemoryLine::completion(9_000, "apex", "APEX", "billing", "shipped");
  let out = l.persist_state(open(), "apex", Status::Completed, none(), Some(&done), 9_000).unwrap();
  assert_eq!((out.state.status, out.l2.unwrap().overflowed), (Status::Completed, 1));
  // Staying completed needs no second completion line.
  l.persist_state(open(), "apex", Status::Completed, none(), None, 9_500).unwrap();
  // Two lines stay; the two oldest went to the Decision Log, every word kept.
  assert_eq!(l.memory_md().unwrap().lines().unwrap().len(), 2);
  let notes = std::fs::read_to_string(ws.join("grimoires/loa/NOTES.md")).unwrap();
  assert!(notes.contains("MEMORY.md overflow") && notes.contains("implementing alpha billing"), "{notes}");
  assert!(notes.contains("implementing beta invoices"), "{notes}");
  // A state the reader would refuse is never written.
  let mut big = serde_json::Map::new();
  big.insert("x".into(), serde_json::Value::String("y".repeat(super::persistence::MAX_STATE_BYTES as usize)));
  assert_eq!(l.persist_state(open(), "big", Status::Created, big, None, 1).unwrap_err().code(), "E_TOO_LARGE");
  assert!(!ws.join(".loa/state/big.json").exists());
}

#[test]
fn a_redacted_quote_of_code_holding_an_address_still_grounds() {
  let tmp = workspace();
  let ws = tmp.path();
  std::fs::write(ws.join("src/owners.ts"), "// owner: ops@acme-logistics.io\nexport const owner = 'ops'\n").unwrap();
  let l = ledger(ws);
  let now = parse_rfc3339_ms("2026-01-15T14:30:00Z", "t").unwrap();
  let event = Event::Cite {
    claim: "ops@acme-logistics.io owns the module".into(),
    grounding: Grounding::Citation,
    evidence: Some(Evidence {
      identifier: "${PROJECT_ROOT}/src/owners.ts:1".into(),
      quote: "// owner: ops@acme-logistics.io".into(),
    }),
  };
  let record = l.trajectory().unwrap().append("impl", now, event).unwrap();
  let Event::Cite { claim, evidence, .. } = &record.event else { panic!("{record:?}") };
  assert_eq!(claim, "[REDACTED:EMAIL] owns the module");
  assert_eq!(evidence.as_ref().unwrap().quote, "// owner: [REDACTED:EMAIL]");
  let file = std::fs::read_to_string(ws.join("grimoires/loa/a2a/trajectory/impl-2026-01-15.jsonl")).unwrap();
  assert!(!file.contains("acme-logistics"), "{file}");
  let report = l.grounding_check("impl", now);
  assert_eq!((report.grounded_claims, report.total_claims), (1, 1), "{:?}", report.ungrounded);
}
