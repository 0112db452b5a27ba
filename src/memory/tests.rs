use std::collections::BTreeMap;

use super::*;

fn open(ws: &Path, session: &str) -> MemoryStore {
  MemoryStore::open(StoreOptions { workspace_dir: ws.to_path_buf(), session_id: session.into(), ..Default::default() })
    .unwrap()
}

fn entry(kind: &str, content: &str) -> Entry {
  Entry { memory_type: kind.into(), content: content.into(), confidence: Some(0.9), ..Default::default() }
}

fn at(kind: &str, content: &str, ts: &str) -> Entry {
  Entry { timestamp: Some(ts.into()), ..entry(kind, content) }
}

/// Every file under `dir` (relative path -> bytes).
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
  let mut out = BTreeMap::new();
  let mut stack = vec![dir.to_path_buf()];
  while let Some(d) = stack.pop() {
    for e in fs::read_dir(&d).unwrap() {
      let p = e.unwrap().path();
      if p.is_dir() {
        stack.push(p);
      } else {
        out.insert(p.strip_prefix(dir).unwrap().display().to_string(), fs::read(&p).unwrap());
      }
    }
  }
  out
}

fn real_redactor() -> bool {
  let real = !redact("a@b.co", &RedactOptions::default()).findings.is_empty();
  if !real {
    eprintln!("redaction stub detected: skipping a test that needs the real redactor");
  }
  real
}

#[test]
fn capture_consolidate_read_back() {
  let ws = tempfile::tempdir().unwrap();
  let store = open(ws.path(), "agent-1");
  let a =
    store.capture(at("learning", "The integration tests need a running Postgres 16", "2026-01-02T10:00:00Z")).unwrap();
  assert!(a.accepted, "{:?}", a.gates);
  assert_eq!(a.seq, Some(1));
  assert_eq!(a.gates.len(), 6);
  let id = a.id.clone().unwrap();
  assert_eq!(id, gates::content_hash("The integration tests need a running Postgres 16"));
  let d = store
    .capture(at("decision", "Use sliding window expiry with a 15 minute grace period", "2026-01-02T11:30:00+01:00"))
    .unwrap();
  assert!(d.accepted);
  let i = store.capture(at("interaction", "Always run cargo fmt before committing", "2026-01-02T10:45:00Z")).unwrap();
  assert!(i.accepted && i.tags.contains(&"instruction".to_string()));
  let rejected = store.capture(entry("interaction", "thanks!")).unwrap();
  assert!(!rejected.accepted && rejected.id.is_none() && !rejected.gates[4].pass);

  // Before consolidation the WAL already answers reads.
  assert_eq!(store.active_learnings(10).unwrap().len(), 2);
  let c = store.consolidate().unwrap();
  assert_eq!((c.applied, c.conflicts, c.memories, c.learnings, c.learnings_total), (3, 0, 3, 2, 2));
  assert!(c.notes_updated);

  let grimoire = ws.path().join("grimoires/loa");
  let record: MemoryRecord =
    serde_json::from_slice(&fs::read(grimoire.join(format!("memory/{id}.json"))).unwrap()).unwrap();
  assert_eq!(record.timestamp, "2026-01-02T10:00:00.000Z");
  assert_eq!(record.session_id, "agent-1");
  let notes_text = fs::read_to_string(grimoire.join("NOTES.md")).unwrap();
  assert!(notes_text.starts_with(notes::TEMPLATE.lines().next().unwrap()));
  assert!(notes_text.contains("**Decision**: Use sliding window expiry with a 15 minute grace period"));
  // 11:30+01:00 is 10:30Z: offsets are instants.
  assert!(notes_text.contains("#### 2026-01-02T10:30:00.000Z - Use sliding window"));
  assert!(notes_text.contains("- **`agent-1`** · 2026-01-02T10:00:00.000Z → 2026-01-02T10:45:00.000Z · 3 memories"));

  let learnings = store.active_learnings(10).unwrap();
  assert_eq!(learnings.len(), 2);
  assert_eq!(learnings[0].content, "Always run cargo fmt before committing", "instruction boost ranks it first");
  assert!(learnings[0].importance > learnings[1].importance);
  let sessions = store.recent_sessions(5).unwrap();
  assert_eq!(sessions.len(), 1);
  assert_eq!(sessions[0].memories, 3);
  assert_eq!(sessions[0].latest[0], "Always run cargo fmt before committing");
  assert_eq!(sessions[0].types.get("decision"), Some(&1));
  store.close().unwrap();
  assert_eq!(store.capture(entry("learning", "after close it is refused")).unwrap_err().code(), "E_WAL_CLOSED");
}

#[test]
fn second_consolidation_is_byte_identical_and_duplicates_are_stored_once() {
  let ws = tempfile::tempdir().unwrap();
  let a = open(ws.path(), "a");
  let b = open(ws.path(), "b");
  // Both sessions capture the same content before either is consolidated.
  assert!(a.capture(entry("learning", "Deploys happen on Fridays at noon")).unwrap().accepted);
  assert!(b.capture(entry("learning", "deploys  happen on fridays at noon.")).unwrap().accepted);
  assert!(b.capture(entry("decision", "Adopt trunk based development for the API repo")).unwrap().accepted);
  // Within one store the duplicate gate sees its own captures.
  let dup = a.capture(entry("learning", "DEPLOYS happen on Fridays at noon")).unwrap();
  assert!(!dup.accepted && !dup.gates[5].pass);
  let first = a.consolidate().unwrap();
  assert_eq!(first.memories, 2, "same normalised content stored once");
  assert_eq!(first.conflicts, 1, "two sessions wrote the same memory: logged");
  assert_eq!(first.learnings_total, 1);
  let before = snapshot(ws.path());
  let second = b.consolidate().unwrap();
  assert_eq!((second.applied, second.learnings, second.conflicts, second.notes_updated), (0, 0, 0, false));
  assert_eq!(snapshot(ws.path()), before, "a second run changes nothing");
  // A new store sees stored memories as duplicates.
  drop(a);
  let again = open(ws.path(), "a");
  assert!(!again.capture(entry("learning", "Deploys happen on Fridays at noon")).unwrap().accepted);
}

#[test]
fn corrupt_learnings_are_quarantined_reported_and_rebuilt() {
  let ws = tempfile::tempdir().unwrap();
  let store = open(ws.path(), "s");
  store.capture(entry("learning", "The staging cluster runs Kubernetes 1.31")).unwrap();
  store.capture(entry("learning", "Feature flags live in the flags service")).unwrap();
  store.consolidate().unwrap();
  let path = ws.path().join("grimoires/loa/learnings.json");
  let mut bytes = fs::read(&path).unwrap();
  let good = bytes.clone();
  bytes[good.len() / 2] = b'\x01';
  fs::write(&path, &bytes).unwrap();

  assert_eq!(store.active_learnings(5).unwrap_err().code(), "E_STATE_CORRUPT", "never read as empty");
  assert_eq!(fs::read(&path).unwrap(), bytes, "reading leaves it in place");
  store.capture(entry("learning", "A third learning arrives meanwhile")).unwrap();
  let err = store.consolidate().unwrap_err();
  assert_eq!(err.code(), "E_STATE_CORRUPT");
  assert!(!path.exists());
  let moved: Vec<_> = fs::read_dir(path.parent().unwrap())
    .unwrap()
    .map(|e| e.unwrap().path())
    .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("learnings.json.corrupt-"))
    .collect();
  assert_eq!(moved.len(), 1);
  assert_eq!(fs::read(&moved[0]).unwrap(), bytes, "the corrupt bytes are kept");
  assert!(err.to_string().contains(moved[0].file_name().unwrap().to_str().unwrap()));

  let c = store.consolidate().unwrap();
  assert_eq!(c.learnings_total, 3, "rebuilt from the memory records: nothing lost");
  assert_eq!(store.active_learnings(5).unwrap().len(), 3);
}

#[test]
fn corrupt_memory_record_is_quarantined() {
  let ws = tempfile::tempdir().unwrap();
  let store = open(ws.path(), "s");
  let id = store.capture(entry("learning", "Logs are shipped to the central collector")).unwrap().id.unwrap();
  store.consolidate().unwrap();
  let path = ws.path().join(format!("grimoires/loa/memory/{id}.json"));
  fs::write(&path, b"{\"truncated").unwrap();
  assert_eq!(store.consolidate().unwrap_err().code(), "E_STATE_CORRUPT");
  assert!(!path.exists());
  // The learning derived from it earlier is still in the store.
  assert_eq!(store.consolidate().unwrap().learnings_total, 1);
}

#[test]
fn notes_foreign_text_is_kept_byte_for_byte() {
  let ws = tempfile::tempdir().unwrap();
  let human = "# My notes\n\nFree text.\n\n## Session Continuity\n\n### Decision Log\n\n#### 2024-01-15T14:30:00Z - Human entry\n**Decision**: keep\n\n## Blockers\n- none\n";
  fs::create_dir_all(ws.path().join("grimoires/loa")).unwrap();
  fs::write(ws.path().join("grimoires/loa/NOTES.md"), human).unwrap();
  let store = open(ws.path(), "s");
  store.capture(entry("decision", "Pin openclaw to an exact version")).unwrap();
  store.consolidate().unwrap();
  let text = fs::read_to_string(ws.path().join("grimoires/loa/NOTES.md")).unwrap();
  let strip = |t: &str, name: &str| {
    let begin = t.find(&format!("<!-- loa:begin {name} -->")).unwrap();
    let end_marker = format!("<!-- loa:end {name} -->\n");
    let mut end = t.find(&end_marker).unwrap() + end_marker.len();
    if t[end..].starts_with('\n') {
      end += 1;
    }
    format!("{}{}", &t[..begin], &t[end..])
  };
  assert_eq!(strip(&strip(&text, "sessions"), "decisions"), human);
}

#[test]
fn errors_never_carry_content() {
  let ws = tempfile::tempdir().unwrap();
  let store = open(ws.path(), "s");
  let secret = "hunter2-very-private-value";
  for bad in [
    Entry { confidence: Some(2.0), ..entry("learning", secret) },
    Entry { memory_type: secret.into(), ..entry("learning", secret) },
    Entry { timestamp: Some(secret.into()), ..entry("learning", secret) },
    Entry { tags: vec![secret.repeat(20)], ..entry("learning", secret) },
  ] {
    let err = store.capture(bad).unwrap_err();
    assert_eq!(err.code(), "E_INVALID_ARGUMENT");
    assert!(!err.to_string().contains("hunter2"), "{err}");
  }
  let big = Entry { content: "x".repeat(MAX_CONTENT_BYTES + 1), ..Default::default() };
  assert_eq!(store.capture(Entry { memory_type: "learning".into(), ..big }).unwrap_err().code(), "E_TOO_LARGE");
}

#[test]
fn same_session_waits_for_the_lock() {
  let ws = tempfile::tempdir().unwrap();
  let first = open(ws.path(), "same");
  let opts = StoreOptions {
    workspace_dir: ws.path().to_path_buf(),
    session_id: "same".into(),
    lock_timeout_ms: Some(50),
    ..Default::default()
  };
  assert_eq!(MemoryStore::open(opts.clone()).err().unwrap().code(), "E_WAL_LOCKED");
  first.close().unwrap();
  assert!(MemoryStore::open(opts).is_ok());
}

#[test]
fn paths_come_from_options_and_config_and_stay_inside() {
  let ws = tempfile::tempdir().unwrap();
  let store = MemoryStore::open(StoreOptions {
    workspace_dir: ws.path().to_path_buf(),
    session_id: "s".into(),
    grimoires_dir: Some("state/g".into()),
    wal_dir: Some("state/wal".into()),
    ..Default::default()
  })
  .unwrap();
  store.capture(entry("learning", "Custom directories are honoured by the store")).unwrap();
  store.consolidate().unwrap();
  assert!(ws.path().join("state/g/learnings.json").is_file());
  assert!(ws.path().join("state/g/NOTES.md").is_file());
  assert!(ws.path().join("state/wal/sessions/s").is_dir());
  for bad in ["../outside", "/etc"] {
    let err = MemoryStore::open(StoreOptions {
      workspace_dir: ws.path().to_path_buf(),
      session_id: "t".into(),
      grimoires_dir: Some(bad.into()),
      ..Default::default()
    })
    .err()
    .unwrap();
    assert_eq!(err.code(), "E_PATH_OUTSIDE_ROOT");
  }
  fs::write(ws.path().join(".loa.config.yaml"), "memory:\n  quality_gates:\n    min_confidence: 0.95\n").unwrap();
  let strict = open(ws.path(), "strict");
  assert!(!strict.capture(entry("learning", "Configured thresholds apply to captures")).unwrap().accepted);
}

#[test]
fn redacted_values_never_reach_disk() {
  if !real_redactor() {
    return;
  }
  let ws = tempfile::tempdir().unwrap();
  let store = open(ws.path(), "s");
  let email = "jane.roe@example.org";
  let mut e = entry("learning", &format!("Invoices for the Roe account go to {email} every month"));
  e.metadata = Some(serde_json::json!({ "contact": email }));
  e.tags = vec![format!("owner {email}")];
  let outcome = store.capture(e).unwrap();
  assert!(outcome.accepted);
  assert!(outcome.findings.iter().any(|f| f.field == "content" && f.kind == "email"));
  assert!(outcome.findings.iter().all(|f| !f.fingerprint.contains(email)));
  store.consolidate().unwrap();
  for (path, bytes) in snapshot(ws.path()) {
    assert!(!bytes.windows(email.len()).any(|w| w == email.as_bytes()), "{path} holds the address");
  }
}
