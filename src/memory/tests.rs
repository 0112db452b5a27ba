use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::*;
use crate::gates;
use crate::redact::{redact, RedactOptions};

fn open(ws: &Path, session: &str) -> MemoryStore {
  MemoryStore::open(StoreOptions { workspace_dir: ws.to_path_buf(), session_id: session.into(), ..Default::default() })
    .unwrap()
}

fn entry(kind: &str, content: &str) -> Entry {
  Entry { confidence: Some(0.9), ..Entry::new(MemoryKind::parse(kind).unwrap(), content) }
}

fn at(kind: &str, content: &str, ts: &str) -> Entry {
  Entry { timestamp: Some(ts.into()), ..entry(kind, content) }
}

/// Every file under `dir` (relative path -> bytes).
pub(super) fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
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
  assert_eq!(sessions[0].kinds.get(&MemoryKind::Decision), Some(&1));
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
  // At the same moment: neither gate sees the other's memory yet.
  assert!(
    super::store::racing(|| b.capture(entry("learning", "deploys  happen on fridays at noon."))).unwrap().accepted
  );
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
  // Consolidation is incremental: it reads the records of its run only. A record damaged
  // later is found when the summary is rebuilt from every record (here: it is gone).
  assert_eq!(store.consolidate().unwrap().memories, 1, "not read: nothing new");
  fs::remove_file(ws.path().join("grimoires/loa").join(consolidate::SUMMARY_FILE)).unwrap();
  assert_eq!(store.consolidate().unwrap_err().code(), "E_STATE_CORRUPT");
  assert!(!path.exists());
  // The learning derived from it earlier is still in the store.
  assert_eq!(store.consolidate().unwrap().learnings_total, 1);
}

#[test]
fn a_memory_record_of_another_version_is_refused_in_place_never_read_as_this_one() {
  let ws = tempfile::tempdir().unwrap();
  let store = open(ws.path(), "s");
  let id = store.capture(entry("learning", "Logs are shipped to the central collector")).unwrap().id.unwrap();
  store.consolidate().unwrap();
  let path = ws.path().join(format!("grimoires/loa/memory/{id}.json"));
  let text = fs::read_to_string(&path).unwrap();
  let newer = text.replacen("\"version\": 1,", "\"version\": 99,", 1);
  assert_ne!(newer, text, "{text}");
  fs::write(&path, &newer).unwrap();
  // Incremental consolidation reads it again when the summary is rebuilt from every record.
  fs::remove_file(ws.path().join("grimoires/loa").join(consolidate::SUMMARY_FILE)).unwrap();
  let err = store.consolidate().unwrap_err();
  assert_eq!(err.code(), "E_STATE_CORRUPT");
  assert!(err.to_string().contains("version 99"), "{err}");
  assert_eq!(fs::read_to_string(&path).unwrap(), newer, "left in place, not moved aside");
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
    Entry { timestamp: Some(secret.into()), ..entry("learning", secret) },
    Entry { tags: vec![secret.repeat(20)], ..entry("learning", secret) },
  ] {
    let err = store.capture(bad).unwrap_err();
    assert_eq!(err.code(), "E_INVALID_ARGUMENT");
    assert!(!err.to_string().contains("hunter2"), "{err}");
  }
  let err = MemoryKind::parse(secret).unwrap_err();
  assert_eq!(err.code(), "E_INVALID_ARGUMENT");
  assert!(!err.to_string().contains("hunter2"), "{err}");
  let big = Entry::new(MemoryKind::Learning, "x".repeat(MAX_CONTENT_BYTES + 1));
  assert_eq!(store.capture(big).unwrap_err().code(), "E_TOO_LARGE");
}

#[test]
fn same_session_waits_for_the_lock() {
  let ws = tempfile::tempdir().unwrap();
  let first = open(ws.path(), "same");
  let opts = StoreOptions {
    workspace_dir: ws.path().to_path_buf(),
    session_id: "same".into(),
    wal: crate::wal::WalOptions { lock_timeout: std::time::Duration::from_millis(50), ..Default::default() },
    ..Default::default()
  };
  assert_eq!(MemoryStore::open(opts.clone()).err().unwrap().code(), "E_WAL_LOCKED");
  first.close().unwrap();
  assert!(MemoryStore::open(opts).is_ok());
}

#[test]
fn paths_come_from_options_and_stay_inside() {
  let ws = tempfile::tempdir().unwrap();
  let store = MemoryStore::open(StoreOptions {
    workspace_dir: ws.path().to_path_buf(),
    session_id: "s".into(),
    grimoire_dir: "state/g".into(),
    wal_dir: "state/wal".into(),
    notes_path: "state/g/NOTES.md".into(),
    learnings_path: "state/g/learnings.json".into(),
    ..Default::default()
  })
  .unwrap();
  store.capture(entry("learning", "Custom directories are honoured by the store")).unwrap();
  store.consolidate().unwrap();
  assert!(ws.path().join("state/g/learnings.json").is_file());
  assert!(ws.path().join("state/g/NOTES.md").is_file());
  assert!(ws.path().join("state/wal/sessions/s").is_dir());
  for bad in ["../outside", "/etc"] {
    for options in [
      StoreOptions { grimoire_dir: bad.into(), ..Default::default() },
      StoreOptions { wal_dir: bad.into(), ..Default::default() },
      StoreOptions { notes_path: format!("{bad}/NOTES.md"), ..Default::default() },
    ] {
      let options = StoreOptions { workspace_dir: ws.path().to_path_buf(), session_id: "t".into(), ..options };
      let err = MemoryStore::open(options).err().unwrap();
      assert_eq!(err.code(), "E_PATH_OUTSIDE_ROOT");
    }
  }
  let strict = MemoryStore::open(StoreOptions {
    workspace_dir: ws.path().to_path_buf(),
    session_id: "strict".into(),
    gates: gates::GateConfig { min_confidence: 0.95, ..Default::default() },
    ..Default::default()
  })
  .unwrap();
  assert!(!strict.capture(entry("learning", "The store's thresholds apply to captures")).unwrap().accepted);
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

// ---------------------------------------------------------------------------------------------
// Hostile state files (issue 11, items 4, 5, 9, 10 and the learnings item).
// ---------------------------------------------------------------------------------------------

fn mkfifo(path: &Path) {
  rustix::fs::mknodat(rustix::fs::CWD, path, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o600), 0)
    .unwrap();
}

/// A workspace with one consolidated decision and learning, and a file outside it.
fn workspace_with_outside() -> (tempfile::TempDir, PathBuf, PathBuf) {
  let tmp = tempfile::tempdir().unwrap();
  let ws = tmp.path().join("ws");
  let outside = tmp.path().join("outside");
  fs::create_dir_all(&ws).unwrap();
  fs::create_dir_all(&outside).unwrap();
  (tmp, ws, outside)
}

/// Fails when a regular file under `dir` (symlinks not followed) holds `needle`.
fn no_file_holds(dir: &Path, needle: &str) {
  let mut stack = vec![dir.to_path_buf()];
  while let Some(d) = stack.pop() {
    for e in fs::read_dir(&d).unwrap() {
      let p = e.unwrap().path();
      let meta = fs::symlink_metadata(&p).unwrap();
      if meta.is_dir() {
        stack.push(p);
      } else if meta.is_file() {
        let bytes = fs::read(&p).unwrap();
        assert!(
          !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
          "{} holds data from outside",
          p.display()
        );
      }
    }
  }
}

#[test]
fn symlinked_notes_and_learnings_are_refused_never_read_through() {
  for name in ["NOTES.md", "learnings.json"] {
    let (_tmp, ws, outside) = workspace_with_outside();
    let secret = outside.join("secret.md");
    // What a reader following the symlink would take into the agent's context.
    let text = if name == "NOTES.md" {
      "# Private\n\n<!-- loa:begin sessions -->\n- **`outside-session`** · 2026-01-01T00:00:00.000Z → 2026-01-01T00:00:00.000Z · 1 memory (learning 1) · latest: OUTSIDE-SECRET-TEXT\n<!-- loa:end sessions -->\n".to_string()
    } else {
      r#"{"learnings":[{"id":"x","content":"OUTSIDE-SECRET-TEXT","importance":1}]}"#.to_string()
    };
    fs::write(&secret, &text).unwrap();
    fs::create_dir_all(ws.join("grimoires/loa")).unwrap();
    std::os::unix::fs::symlink(&secret, ws.join("grimoires/loa").join(name)).unwrap();
    let store = open(&ws, "s");
    store.capture(entry("decision", "Adopt the hostile filesystem suite for every entry point")).unwrap();
    store.capture(entry("learning", "Symlinks where state files belong are refused")).unwrap();
    // Reads never follow it: nothing from outside reaches the context.
    if name == "learnings.json" {
      assert_eq!(store.active_learnings(5).unwrap_err().code(), "E_NOT_REGULAR_FILE");
      assert_eq!(store.build_context(&ContextRequest::default()).unwrap_err().code(), "E_NOT_REGULAR_FILE");
    } else {
      let sessions = store.recent_sessions(5).unwrap();
      assert!(sessions.iter().all(|s| s.session_id != "outside-session"), "{name}: {sessions:?}");
      let built = store.build_context(&ContextRequest::default()).unwrap();
      assert!(!built.text.unwrap_or_default().contains("OUTSIDE-SECRET-TEXT"), "{name}: leaked into the context");
    }
    let err = store.consolidate().unwrap_err();
    assert_eq!(err.code(), "E_NOT_REGULAR_FILE", "{name}: {err}");
    assert_eq!(fs::read_to_string(&secret).unwrap(), text, "{name}: the target is untouched");
    assert!(fs::symlink_metadata(ws.join("grimoires/loa").join(name)).unwrap().file_type().is_symlink());
    no_file_holds(&ws, "OUTSIDE-SECRET-TEXT");
  }
}

#[test]
fn fifos_devices_and_directories_where_state_files_belong_never_hang_or_grow_memory() {
  for (name, kind) in
    [("NOTES.md", "fifo"), ("learnings.json", "fifo"), ("NOTES.md", "dir"), ("learnings.json", "zero")]
  {
    let (_tmp, ws, _outside) = workspace_with_outside();
    let grimoire = ws.join("grimoires/loa");
    fs::create_dir_all(&grimoire).unwrap();
    match kind {
      "fifo" => mkfifo(&grimoire.join(name)),
      "dir" => fs::create_dir(grimoire.join(name)).unwrap(),
      _ => std::os::unix::fs::symlink("/dev/zero", grimoire.join(name)).unwrap(),
    }
    let store = open(&ws, "s");
    store.capture(entry("decision", "State files are regular files or nothing at all")).unwrap();
    assert_eq!(store.consolidate().unwrap_err().code(), "E_NOT_REGULAR_FILE", "{name} as {kind}");
    if name == "learnings.json" {
      assert_eq!(store.active_learnings(5).unwrap_err().code(), "E_NOT_REGULAR_FILE", "{name} as {kind}");
    }
    store.build_context(&ContextRequest::default()).ok();
  }
}

#[test]
fn a_symlinked_grimoire_directory_creates_nothing_outside() {
  for (link, target_inside) in [("grimoires", ""), ("grimoires/loa", ""), (".loa", "")] {
    let _ = target_inside;
    let (_tmp, ws, outside) = workspace_with_outside();
    let link_path = ws.join(link);
    fs::create_dir_all(link_path.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&outside, &link_path).unwrap();
    let err =
      MemoryStore::open(StoreOptions { workspace_dir: ws.clone(), session_id: "s".into(), ..Default::default() })
        .err()
        .unwrap();
    assert_eq!(err.code(), "E_PATH_OUTSIDE_ROOT", "{link}: {err}");
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0, "{link}: nothing created outside");
    let err = consolidate_workspace(&StoreOptions { workspace_dir: ws.clone(), ..Default::default() }).unwrap_err();
    assert_eq!(err.code(), "E_PATH_OUTSIDE_ROOT", "{link}");
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0, "{link}: nothing created outside");
  }
  // The memory record directory too (it is written by the WAL consolidation).
  let (_tmp, ws, outside) = workspace_with_outside();
  let store = open(&ws, "s");
  store.capture(entry("learning", "Record directories are never followed through a symlink")).unwrap();
  std::os::unix::fs::symlink(&outside, ws.join("grimoires/loa/memory")).unwrap();
  assert_eq!(store.consolidate().unwrap_err().code(), "E_PATH_OUTSIDE_ROOT");
  assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
}

#[test]
fn notes_ending_in_an_unclosed_fence_gets_one_section_and_stays_byte_identical() {
  let (_tmp, ws, _outside) = workspace_with_outside();
  let grimoire = ws.join("grimoires/loa");
  fs::create_dir_all(&grimoire).unwrap();
  let human = "# Notes\n\n## Session Continuity\n\nSome text.\n\n```rust\nfn unclosed() {\n";
  fs::write(grimoire.join("NOTES.md"), human).unwrap();
  let store = open(&ws, "s");
  store.capture(entry("decision", "Close every code fence the notes file opens")).unwrap();
  store.consolidate().unwrap();
  let first = fs::read(grimoire.join("NOTES.md")).unwrap();
  let second = store.consolidate().unwrap();
  assert!(!second.notes_updated);
  assert_eq!(fs::read(grimoire.join("NOTES.md")).unwrap(), first, "a second run changes nothing");
  let text = String::from_utf8(first).unwrap();
  assert_eq!(text.matches("<!-- loa:begin decisions -->").count(), 1, "{text}");
  assert!(text.contains(human), "foreign text kept");
}

/// The learnings store's head and every shard, as one text.
fn learnings_text(grimoire: &Path) -> String {
  let mut text = fs::read_to_string(grimoire.join("learnings.json")).unwrap();
  let mut shards: Vec<_> =
    fs::read_dir(grimoire.join("learnings.json.d")).unwrap().map(|e| e.unwrap().path()).collect();
  shards.sort();
  for shard in shards {
    text.push_str(&fs::read_to_string(shard).unwrap());
  }
  text
}

#[test]
fn foreign_learnings_values_are_kept_exactly() {
  let (_tmp, ws, _outside) = workspace_with_outside();
  let grimoire = ws.join("grimoires/loa");
  fs::create_dir_all(&grimoire).unwrap();
  let foreign = r#"{"learnings":[{"id":"foreign-1","content":"kept as it is","big":123456789012345678901234567890,"huge":1e400,"exact":0.1000000000000000055511151231257827,"nested":{"n":18446744073709551617,"list":[1.0,2e-400]},"status":"retired"}],"owner":{"id":99999999999999999999},"version":1}"#;
  fs::write(grimoire.join("learnings.json"), foreign).unwrap();
  let store = open(&ws, "s");
  store.capture(entry("learning", "Foreign numbers survive a consolidation unchanged")).unwrap();
  let c = store.consolidate().unwrap();
  assert_eq!(c.learnings_total, 2);
  // Migrated to version 2: the head and its shards hold every byte of the foreign values.
  let text = learnings_text(&grimoire);
  assert!(fs::read_to_string(grimoire.join("learnings.json")).unwrap().contains("\"version\": 2"));
  for kept in [
    "123456789012345678901234567890",
    "1e400",
    "0.1000000000000000055511151231257827",
    "18446744073709551617",
    "2e-400",
    "99999999999999999999",
    "1.0",
  ] {
    assert!(text.contains(kept), "{kept} changed: {text}");
  }
  let again = store.consolidate().unwrap();
  assert_eq!(again.learnings, 0);
  assert_eq!(learnings_text(&grimoire), text, "stable");
  assert!(store.active_learnings(10).unwrap().iter().all(|l| l.id != "foreign-1"), "retired stays retired");
}

#[test]
fn duplicate_keys_in_learnings_are_refused_by_path_and_the_file_left_alone() {
  for (doc, path) in [
    (r#"{"learnings":[],"owner":"a","owner":"b"}"#, "owner"),
    (r#"{"learnings":[{"id":"a","status":"retired","status":"active"}]}"#, "learnings[0].status"),
    (r#"{"learnings":[],"learnings":[{"id":"a"}]}"#, "learnings"),
  ] {
    let (_tmp, ws, _outside) = workspace_with_outside();
    let grimoire = ws.join("grimoires/loa");
    fs::create_dir_all(&grimoire).unwrap();
    fs::write(grimoire.join("learnings.json"), doc).unwrap();
    let store = open(&ws, "s");
    store.capture(entry("learning", "Duplicate keys are refused with the key's path")).unwrap();
    let err = store.consolidate().unwrap_err();
    assert_eq!(err.code(), "E_STATE_CORRUPT", "{doc}");
    assert!(err.to_string().contains(&format!("`{path}`")), "{err}");
    assert_eq!(fs::read_to_string(grimoire.join("learnings.json")).unwrap(), doc, "left in place, unchanged");
    let names: Vec<_> = fs::read_dir(&grimoire).unwrap().map(|e| e.unwrap().file_name()).collect();
    // The search index (derived state) is the only other entry.
    assert_eq!(names.len(), 2, "nothing moved aside, nothing applied: {doc}: {names:?}");
    assert!(names.iter().any(|n| n == INDEX_DIR));
    assert_eq!(store.active_learnings(5).unwrap_err().code(), "E_STATE_CORRUPT");
  }
}

#[test]
fn stale_temps_of_dead_writers_are_cleaned_by_consolidation() {
  let (_tmp, ws, _outside) = workspace_with_outside();
  let grimoire = ws.join("grimoires/loa");
  fs::create_dir_all(grimoire.join("memory")).unwrap();
  // A pid far above any pid_max is never alive.
  let stale = [".NOTES.md.tmp-2147483646-0", ".NOTES.md.loa-tmp-2147483646-3", ".learnings.json.loa-tmp-2147483646-1"];
  for name in stale {
    fs::write(grimoire.join(name), b"half a file").unwrap();
  }
  fs::write(grimoire.join("memory/.aaaa.json.loa-tmp-2147483646-9"), b"half").unwrap();
  let live = format!(".NOTES.md.loa-tmp-{}-999999", std::process::id());
  fs::write(grimoire.join(&live), b"in flight").unwrap();
  let store = open(&ws, "s");
  store.capture(entry("learning", "Stale temp files are removed under the lock")).unwrap();
  store.consolidate().unwrap();
  for name in stale {
    assert!(!grimoire.join(name).exists(), "{name} removed");
  }
  assert!(!grimoire.join("memory/.aaaa.json.loa-tmp-2147483646-9").exists());
  assert!(grimoire.join(&live).exists(), "a live writer's temp file is kept");
}

/// xorshift32: deterministic generated inputs.
struct Rng(u32);

impl Rng {
  fn below(&mut self, n: usize) -> usize {
    self.0 ^= self.0 << 13;
    self.0 ^= self.0 >> 17;
    self.0 ^= self.0 << 5;
    self.0 as usize % n
  }
}

pub(super) fn record(kind: MemoryKind, session: &str, content: &str, ts: &str) -> MemoryRecord {
  MemoryRecord {
    version: 1,
    id: gates::content_hash(content),
    kind,
    content: content.into(),
    session_id: session.into(),
    agent_id: None,
    timestamp: ts.into(),
    confidence: Some(0.8),
    score: 0.8,
    tags: Vec::new(),
    metadata: None,
    redactions: Vec::new(),
    expires_at: None,
  }
}

/// True when every byte of `small` appears in `big`, in order.
fn is_subsequence(small: &[u8], big: &[u8]) -> bool {
  let mut it = big.iter();
  small.iter().all(|b| it.any(|c| c == b))
}

#[test]
fn notes_rendering_is_idempotent_over_random_foreign_markdown() {
  // Fragments of hostile markdown: unclosed fences of both kinds, headings inside fences, our
  // section titles and markers inside foreign text, setext headings, every HTML block kind
  // (some run to the end of the document when unclosed), containers, CRLF, no final newline.
  const FRAGMENTS: &[&str] = &[
    "# Agent Working Memory\n",
    "## Session Continuity\n",
    "### Decision Log\n",
    "## Decision Log ##\n",
    "Session Continuity\n==================\n",
    "Decision Log\n---\n",
    "### Active Context\n",
    "### Pending Questions\n",
    "```\n",
    "```rust\n",
    "~~~\n",
    "````md\n",
    "  ```\n",
    "    indented code line\n",
    "<div>\n",
    "</div>\n",
    "<!-- a comment that goes on\n",
    "-->\n",
    "<!-- loa:begin sessions -->\n",
    "<!-- loa:end sessions -->\n",
    "<!-- loa:begin decisions -->\n",
    "<!-- loa:end decisions -->\n",
    "<script>\n",
    "</script>\n",
    "<pre>\n",
    "<?php\n",
    "<![CDATA[\n",
    "<!DOCTYPE x\n",
    "> quoted\n",
    "> ## Decision Log\n",
    "- item\n",
    "- ## Session Continuity\n",
    "  continued\n",
    "1. first\n",
    "\n",
    "\n",
    "plain text with `code` and <b>inline html</b>\n",
    "| a | b |\n|---|---|\n",
    "[ref]: http://example.com\n",
    "***\n",
    "#### 2024-01-15T14:30:00Z - Human entry\n**Decision**: keep\n",
    "- **`agent-9`** · 2026-01-01T00:00:00.000Z → 2026-01-01T00:00:00.000Z · 1 memory (learning 1) · latest: x\n",
    "no final newline",
  ];
  let records = [
    record(MemoryKind::Decision, "a", "Use the fallback region when the fence stays open", "2026-01-02T10:00:00.000Z"),
    record(MemoryKind::Learning, "b", "Foreign markdown is never rewritten", "2026-01-02T11:00:00.000Z"),
    record(MemoryKind::Decision, "b", "Keep ```fences``` and <!-- markers --> inert", "2026-01-02T12:00:00.000Z"),
  ];
  let mut rng = Rng(0x9e37_79b9);
  for case in 0..4000 {
    let n = rng.below(14);
    let mut text = String::new();
    for _ in 0..n {
      text.push_str(FRAGMENTS[rng.below(FRAGMENTS.len())]);
    }
    match rng.below(4) {
      0 => text = text.replace('\n', "\r\n"),
      1 => text = text.replacen('\n', "\r\n", 1),
      _ => {}
    }
    let with = if rng.below(5) == 0 { &records[..0] } else { &records[..] };
    let Some(once) = super::consolidate::render_notes(Some(&text), with) else { panic!("case {case}: no text") };
    let twice = super::consolidate::render_notes(Some(&once), with).unwrap();
    assert_eq!(twice, once, "case {case}: a second run changed the notes; input {text:?}");
    // Every byte outside the regions the input already had (which are ours to replace) is kept.
    let owned = notes::region_ranges(&text);
    let foreign: Vec<u8> =
      text.bytes().enumerate().filter(|(i, _)| !owned.iter().any(|r| r.contains(i))).map(|(_, b)| b).collect();
    assert!(is_subsequence(&foreign, once.as_bytes()), "case {case}: foreign bytes lost; input {text:?}");
    if !with.is_empty() {
      for name in [notes::SESSIONS, notes::DECISIONS] {
        assert!(notes::region_body(&once, name).is_some(), "case {case}: no {name} region; input {text:?}\n{once}");
      }
    }
  }
}

#[test]
fn injected_faults_on_notes_and_learnings_writes_lose_nothing() {
  use crate::fsutil::faults::{inject, Op};
  let (_tmp, ws, _outside) = workspace_with_outside();
  // NOTES.md and learnings.json in directories of their own, so that faults hit only them.
  let store = MemoryStore::open(StoreOptions {
    workspace_dir: ws.clone(),
    session_id: "s".into(),
    notes_path: "notes/NOTES.md".into(),
    learnings_path: "learn/learnings.json".into(),
    ..Default::default()
  })
  .unwrap();
  store.capture(entry("decision", "The first decision is acknowledged and stays")).unwrap();
  store.capture(entry("learning", "The first learning is acknowledged and stays")).unwrap();
  store.consolidate().unwrap();
  let notes_path = ws.join("notes/NOTES.md");
  let learnings_path = ws.join("learn/learnings.json");
  let mut round = 0;
  for (dir, op) in [
    ("learn", Op::Write),
    ("learn", Op::Sync),
    ("learn", Op::Rename),
    ("notes", Op::Write),
    ("notes", Op::Sync),
    ("notes", Op::Rename),
  ] {
    for errno in [libc::EIO, libc::ENOSPC] {
      round += 1;
      let notes_before = fs::read(&notes_path).unwrap();
      let learnings_before = fs::read(&learnings_path).unwrap();
      store.capture(entry("decision", &format!("Decision number {round} arrives while the disk fails"))).unwrap();
      store.capture(entry("learning", &format!("Learning number {round} arrives while the disk fails"))).unwrap();
      {
        let _guard = inject(&ws.join(dir), op, errno, 0, 1);
        let err = store.consolidate().unwrap_err();
        assert_eq!(err.code(), "E_IO", "{dir} {op:?}");
      }
      // The failed file is as it was, whole; no temp file is visible; nothing acknowledged lost.
      let (failed, before) =
        if dir == "learn" { (&learnings_path, &learnings_before) } else { (&notes_path, &notes_before) };
      assert_eq!(&fs::read(failed).unwrap(), before, "{dir} {op:?}: the old file, whole");
      for d in ["notes", "learn"] {
        let names: Vec<String> =
          fs::read_dir(ws.join(d)).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        assert!(names.iter().all(|n| !n.contains("loa-tmp")), "{dir} {op:?}: {names:?}");
      }
      let c = store.consolidate().unwrap();
      assert_eq!(c.learnings_total, round + 1, "{dir} {op:?}");
      let notes_text = fs::read_to_string(&notes_path).unwrap();
      assert!(notes_text.contains(&format!("Decision number {round} arrives")), "{dir} {op:?}");
      assert!(notes_text.contains("The first decision is acknowledged and stays"));
    }
  }
}

#[test]
fn hostile_learnings_shards_get_coded_errors_and_nothing_is_lost() {
  let ws = tempfile::tempdir().unwrap();
  let outside = tempfile::tempdir().unwrap();
  fs::write(outside.path().join("shard.json"), br#"{"learnings":[],"version":2}"#).unwrap();
  let store = open(ws.path(), "s");
  store.capture(entry("learning", "Shards of the learnings store are regular files")).unwrap();
  store.capture(entry("learning", "A second learning in the store for good measure")).unwrap();
  assert_eq!(store.consolidate().unwrap().learnings_total, 2);
  let shards = ws.path().join("grimoires/loa/learnings.json.d");
  let shard = fs::read_dir(&shards).unwrap().next().unwrap().unwrap().path();
  let good = fs::read(&shard).unwrap();
  let fifo = |p: &Path| {
    rustix::fs::mknodat(rustix::fs::CWD, p, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o600), 0)
      .unwrap()
  };
  let hazards: [Hazard; 4] = [
    ("symlink", &|p| std::os::unix::fs::symlink(outside.path().join("shard.json"), p).unwrap(), "E_NOT_REGULAR_FILE"),
    ("fifo", &fifo, "E_NOT_REGULAR_FILE"),
    ("oversized", &|p| fs::File::create(p).unwrap().set_len(MAX_LEARNINGS_BYTES + 1).unwrap(), "E_TOO_LARGE"),
    ("truncated", &|p| fs::write(p, &good[..good.len() / 2]).unwrap(), "E_STATE_CORRUPT"),
  ];
  for (i, (name, make, code)) in hazards.into_iter().enumerate() {
    fs::remove_file(&shard).unwrap();
    make(&shard);
    assert_eq!(store.active_learnings(5).unwrap_err().code(), code, "{name}: read");
    store.capture(entry("learning", &format!("Learning number {i} arrives while a shard is {name}"))).unwrap();
    assert_eq!(store.consolidate().unwrap_err().code(), code, "{name}: consolidate");
    if name == "truncated" {
      // Moved aside (its bytes kept) like a corrupt learnings.json, then derived again.
      assert!(fs::symlink_metadata(&shard).is_err(), "moved aside");
      let kept = fs::read_dir(&shards)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().contains(".corrupt-"));
      assert_eq!(fs::read(kept.unwrap()).unwrap(), &good[..good.len() / 2]);
    } else {
      assert!(fs::symlink_metadata(&shard).is_ok(), "{name}: left where it is");
      fs::remove_file(&shard).unwrap();
      fs::write(&shard, &good).unwrap();
      // The stat no longer matches what the head recorded: the shard is read again.
    }
    let c = store.consolidate().unwrap();
    assert_eq!(c.learnings_total, 3 + i, "{name}: every learning is there");
    assert_eq!(store.active_learnings(50).unwrap().len(), 3 + i, "{name}");
  }
  assert_eq!(fs::read(outside.path().join("shard.json")).unwrap(), br#"{"learnings":[],"version":2}"#);
}

#[test]
fn learnings_beyond_the_top_list_and_human_edits_to_shards_are_ranked_exactly() {
  let ws = tempfile::tempdir().unwrap();
  let store = open(ws.path(), "s");
  for i in 0..(learnings::TOP_KEEP + 20) {
    let e = Entry {
      confidence: Some(0.5 + (i % 40) as f64 / 100.0),
      ..entry("learning", &format!("Ranked learning number {i} of many"))
    };
    store.capture(e).unwrap();
  }
  store.consolidate().unwrap();
  let full_order = |store: &MemoryStore| store.active_learnings(1000).unwrap();
  let all = full_order(&store);
  assert_eq!(all.len(), learnings::TOP_KEEP + 20);
  assert_eq!(store.active_learnings(5).unwrap(), all[..5].to_vec(), "the top list agrees with a full read");
  // A human retires the best learning in its shard: the next read sees it at once.
  let best = all[0].id.clone();
  let shards = ws.path().join("grimoires/loa/learnings.json.d");
  let path = shards.join(format!("{}.json", &best[..2]));
  let text = fs::read_to_string(&path).unwrap();
  let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
  for e in doc["learnings"].as_array_mut().unwrap() {
    if e["id"] == best.as_str() {
      e["status"] = "retired".into();
    }
  }
  fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
  let now = store.active_learnings(5).unwrap();
  assert_eq!(now, all[1..6].to_vec());
  store.consolidate().unwrap();
  assert_eq!(store.active_learnings(5).unwrap(), all[1..6].to_vec(), "and after a consolidation");
}

/// A name, a way to put the hazard in place, and the code it must get.
type Hazard<'a> = (&'a str, &'a dyn Fn(&Path), &'a str);

/// The disk refuses a capture's fsync (full, failing, read-only): each try is answered at once
/// with the retry policy's delay (nothing sleeps), the last with the disk's `E_IO` and
/// `osError`, and the same store captures again once the disk takes writes: every acknowledged
/// memory is stored exactly once, nothing refused is.
#[test]
fn a_refused_fsync_is_e_io_and_the_same_store_captures_again_once_the_disk_recovers() {
  use crate::fsutil::faults::{inject, Op};
  use std::time::Duration;
  const HOUR_MS: u64 = 3_600_000; // a try that slept would hang the test, not pass it
  for (errno, name) in [(libc::ENOSPC, "ENOSPC"), (libc::EIO, "EIO"), (libc::EROFS, "EROFS")] {
    let ws = tempfile::tempdir().unwrap();
    let store = MemoryStore::open(StoreOptions {
      workspace_dir: ws.path().to_path_buf(),
      session_id: "s".into(),
      retry: RetryConfig { max_attempts: 3, backoff_base_ms: HOUR_MS },
      ..Default::default()
    })
    .unwrap();
    let none = CaptureOptions::default();
    let kept = store.capture(entry("learning", "Acknowledged before the disk filled up")).unwrap();
    let refused = entry("learning", "Refused while the disk is full, stored once it recovers");
    {
      let _fault = inject(&ws.path().join(".loa/wal"), Op::Sync, errno, 0, u32::MAX);
      for attempt in 1..=2 {
        let answer = store.try_capture(&refused, &none, attempt).unwrap();
        assert_eq!(answer, CaptureTry::RetryAfter(Duration::from_millis(HOUR_MS << attempt)), "{name}");
      }
      let err = store.try_capture(&refused, &none, 3).unwrap_err();
      assert_eq!((err.code(), err.os_error_name()), ("E_IO", Some(name)), "{err}");
      assert!(!err.to_string().contains("Refused"), "no content in errors: {err}");
    }
    assert!(!store.is_closed());
    let CaptureTry::Done(stored) = store.try_capture(&refused, &none, 1).unwrap() else {
      panic!("{name}: the disk takes writes again, the first try stores")
    };
    assert!(stored.accepted, "{name}");
    assert_eq!(stored.seq, Some(kept.seq.unwrap() + 1), "{name}: the seq after the last durable record");
    let writes = crate::wal::reader::read_session(&ws.path().join(".loa/wal"), "s").unwrap().records;
    assert_eq!(writes.iter().filter(|r| r.op == "write").count(), 2, "{name}: each memory once in the log");
    store.consolidate().unwrap();
    let memory = ws.path().join("grimoires/loa/memory");
    let mut ids: Vec<String> =
      fs::read_dir(&memory).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    ids.sort();
    let mut expected = vec![format!("{}.json", kept.id.unwrap()), format!("{}.json", stored.id.unwrap())];
    expected.sort();
    assert_eq!(ids, expected, "{name}");
  }
}

/// The disk refuses the search index's writes (full, read-only) after a capture was stored: the
/// search that would repair the index first does not fail for it, it answers from an index built
/// in memory, and repairs the files once the disk takes writes again.
#[test]
fn a_refused_index_repair_is_not_a_failed_search() {
  use crate::fsutil::faults::{inject, Op};
  for (errno, name) in [(libc::ENOSPC, "ENOSPC"), (libc::EROFS, "EROFS")] {
    let ws = tempfile::tempdir().unwrap();
    let store = open(ws.path(), "s");
    let kept = store.capture(entry("learning", "The deploy key rotates every Tuesday at noon")).unwrap();
    let index_dir = ws.path().join("grimoires/loa/search");
    let late = {
      let _fault = inject(&index_dir, Op::Write, errno, 0, u32::MAX);
      let late = store.capture(entry("learning", "The deploy pipeline pauses on Fridays")).unwrap();
      assert!(late.accepted, "{name}: the memory is durable, its index update is what failed");
      for _ in 0..2 {
        let found = store.search("deploy", &SearchOptions::default()).unwrap();
        let mut ids: Vec<String> = found.hits.into_iter().map(|h| h.id).collect();
        ids.sort();
        let mut expected = vec![kept.id.clone().unwrap(), late.id.clone().unwrap()];
        expected.sort();
        assert_eq!(ids, expected, "{name}: both memories found while the repair is refused");
      }
      let built =
        store.build_context(&ContextRequest { query: Some("pipeline pauses".into()), ..Default::default() }).unwrap();
      assert!(built.text.unwrap_or_default().contains("pauses on Fridays"), "{name}");
      late
    };
    store.search("deploy", &SearchOptions::default()).unwrap();
    assert!(
      store.index.as_ref().unwrap().contains(&late.id.unwrap()).unwrap(),
      "{name}: repaired on disk once it can be"
    );
  }
}

/// A read-only store creates nothing (no session, no lock, no index files), reads memories that
/// are only in another session's WAL while that session is open, and refuses every write with
/// `E_READ_ONLY` before touching anything.
#[test]
fn a_read_only_store_writes_nothing_and_refuses_writes() {
  let ws = tempfile::tempdir().unwrap();
  let writer = open(ws.path(), "agent-1");
  let stored = writer.capture(entry("learning", "The deploy key rotates every Tuesday at noon")).unwrap();
  let before = snapshot(ws.path());
  let reader = MemoryStore::open_read_only(StoreOptions {
    workspace_dir: ws.path().to_path_buf(),
    session_id: "agent-1".into(),
    ..Default::default()
  })
  .unwrap();
  assert!(reader.is_read_only());
  let found = reader.search("deploy key", &SearchOptions::default()).unwrap();
  assert_eq!(found.hits.iter().map(|h| h.id.clone()).collect::<Vec<_>>(), vec![stored.id.clone().unwrap()]);
  assert!(reader.get(stored.id.as_deref().unwrap(), None).unwrap().is_some());
  let refused = [
    reader.capture(entry("learning", "Another fact about the staging cluster")).unwrap_err(),
    reader.consolidate().unwrap_err(),
    reader.forget(&ForgetSelector::Id(stored.id.clone().unwrap()), &ForgetOptions::default()).unwrap_err(),
  ];
  for e in refused {
    assert_eq!(e.code(), "E_READ_ONLY", "{e}");
  }
  reader.close().unwrap();
  assert!(reader.is_closed());
  assert_eq!(snapshot(ws.path()), before, "nothing written");
  let empty = tempfile::tempdir().unwrap();
  let none =
    MemoryStore::open_read_only(StoreOptions { workspace_dir: empty.path().to_path_buf(), ..Default::default() })
      .unwrap();
  assert!(none.search("anything", &SearchOptions::default()).unwrap().hits.is_empty());
  assert_eq!(fs::read_dir(empty.path()).unwrap().count(), 0, "nothing created");
}
