//! Expiry whoever holds which lock (a memory expiring in a log another process has open), and
//! agent ids as exact identifiers.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::sign::keys::{KeyPolicy, KeyRing};
use crate::sign::manifest::{read_manifest, verify_manifest, TrustedKey};

fn open(ws: &Path, session: &str) -> MemoryStore {
  MemoryStore::open(StoreOptions { workspace_dir: ws.to_path_buf(), session_id: session.into(), ..Default::default() })
    .unwrap()
}

fn entry(kind: MemoryKind, content: &str) -> Entry {
  Entry { confidence: Some(0.9), ..Entry::new(kind, content) }
}

/// Relative paths of the regular files under `dir` holding `needle` (symlinks not followed).
fn holders(dir: &Path, needle: &str) -> Vec<String> {
  let mut out = Vec::new();
  let mut stack = vec![dir.to_path_buf()];
  while let Some(d) = stack.pop() {
    for e in fs::read_dir(&d).unwrap() {
      let e = e.unwrap();
      let t = e.file_type().unwrap();
      if t.is_dir() {
        stack.push(e.path());
      } else if t.is_file() {
        let bytes = fs::read(e.path()).unwrap();
        if memchr::memmem::find(&bytes, needle.as_bytes()).is_some() {
          out.push(e.path().strip_prefix(dir).unwrap().display().to_string());
        }
      }
    }
  }
  out.sort();
  out
}

const EXPIRED: &str = "The staging password is zorblax until the quintessence audit ends.";
const PAST: &str = "2020-01-01T00:00:00Z";

fn ring_at(dir: &Path) -> Arc<KeyRing> {
  let ring = KeyRing::with_seed(dir, KeyPolicy::default(), None).unwrap();
  ring.generate().unwrap();
  Arc::new(ring)
}

/// Everything a reader can be shown of the workspace, through `store` and through a fresh view.
fn everything_shown(store: &MemoryStore, ws: &Path) -> String {
  let mut shown = String::new();
  let view = MemoryView::open(&StoreOptions { workspace_dir: ws.to_path_buf(), ..Default::default() }).unwrap();
  for query in [None, Some("zorblax staging password".to_string())] {
    let request = ContextRequest { query: query.clone(), ..Default::default() };
    shown += &store.build_context(&request).unwrap().text.unwrap_or_default();
    shown += &view.build_context(&request).unwrap().text.unwrap_or_default();
  }
  for s in store.recent_sessions(50).unwrap().into_iter().chain(view.recent_sessions(50).unwrap()) {
    shown += &s.latest.join("\n");
  }
  for l in store.active_learnings(50).unwrap().into_iter().chain(view.active_learnings(50).unwrap()) {
    shown += &l.content;
  }
  for h in store.search("zorblax staging password", &SearchOptions::default()).unwrap().hits {
    shown += &h.content;
  }
  shown
}

#[test]
fn a_memory_expiring_in_a_log_another_process_holds_never_fails_a_sealed_consolidation() {
  let tmp = tempfile::tempdir().unwrap();
  let ws = tmp.path().join("ws");
  fs::create_dir(&ws).unwrap();
  let ring = ring_at(&tmp.path().join("keys"));
  let seal = SealRequest { ring: Arc::clone(&ring) };
  // "b" is another chat, still open: its session lock is held (a real flock) throughout.
  let b = open(&ws, "b");
  let past = CaptureOptions { expires_at: Some(PAST.into()), ..Default::default() };
  let id = b.capture_with(entry(MemoryKind::Learning, EXPIRED), &past).unwrap().id.unwrap();
  b.capture(entry(MemoryKind::Decision, "Deploys go out on Tuesdays after the integration suite passes")).unwrap();
  let a = open(&ws, "a");
  a.capture(entry(MemoryKind::Decision, "We chose Postgres for the event store because it is durable")).unwrap();

  let c = a.consolidate_with(Some(&seal)).unwrap();
  assert_eq!((c.expired, c.pending_removals, c.memories), (1, 1, 2), "{c:?}");
  assert!(c.sealed.is_some());
  let grimoire = ws.join(DEFAULT_GRIMOIRE_DIR);
  let manifest = read_manifest(&grimoire.join(seal::DEFAULT_MANIFEST_NAME)).unwrap();
  let v = verify_manifest(&grimoire, &manifest, &TrustedKey::from_ring(&ring).unwrap(), None).unwrap();
  assert!(v.ok, "{:?}", v.problems);
  // Gone from every file but b's own log, which b holds; shown nowhere, to anyone.
  let left = holders(&ws, "zorblax");
  assert!(left.iter().all(|p| p.starts_with(".loa/wal/sessions/b/")), "{left:?}");
  assert!(!left.is_empty(), "b's log still holds it until b's lock is free");
  for store in [&a, &b] {
    assert!(!everything_shown(store, &ws).contains("zorblax"));
    assert!(store.get(&id, None).unwrap().is_none());
  }
  assert!(fs::read_to_string(grimoire.join("NOTES.md")).unwrap().contains("Postgres"));
  // The pending removal names no content and no plain id.
  let pending = fs::read_to_string(ws.join(".loa/wal/forget-pending.json")).unwrap();
  assert!(!pending.contains(&id) && !pending.contains("zorblax"));

  // Again, b still open: nothing more to forget, the removal still owed, the seal fine.
  let c = a.consolidate_with(Some(&seal)).unwrap();
  assert_eq!((c.expired, c.pending_removals), (0, 1), "{c:?}");
  let a_sees = open(&ws, "a2");
  assert!(!everything_shown(&a_sees, &ws).contains("zorblax"), "a store opened later does not index it again");
  drop(a_sees);

  // b closes while a consolidation runs (its lock held here), so b leaves the removal owed;
  // once b is gone, the next consolidation removes the bytes from its log.
  let consolidating = crate::lock::lock_exclusive(
    &ws.join(".loa/wal/memory-consolidate.lock"),
    std::time::Duration::ZERO,
    "memory consolidation",
  )
  .unwrap();
  drop(b);
  drop(consolidating);
  assert!(!holders(&ws, "zorblax").is_empty());
  let c = a.consolidate().unwrap();
  assert_eq!(c.pending_removals, 0, "{c:?}");
  assert_eq!(holders(&ws, "zorblax"), Vec::<String>::new());
  assert_eq!(holders(&ws, &id), Vec::<String>::new());
  assert!(!ws.join(".loa/wal/forget-pending.json").exists());
  assert!(crate::wal::verify_dir(&ws.join(".loa/wal")).unwrap().ok());
  let b = open(&ws, "b");
  assert!(b.capture(entry(MemoryKind::Learning, "The log of b takes appends after the rewrite")).unwrap().accepted);
  assert_eq!(a.search("tuesdays", &SearchOptions::default()).unwrap().hits.len(), 1);
}

#[test]
fn the_session_holding_an_expired_memory_removes_it_at_its_own_next_consolidation() {
  let ws = tempfile::tempdir().unwrap();
  let b = open(ws.path(), "b");
  let past = CaptureOptions { expires_at: Some(PAST.into()), ..Default::default() };
  b.capture_with(entry(MemoryKind::Decision, EXPIRED), &past).unwrap();
  let a = open(ws.path(), "a");
  assert_eq!(a.consolidate().unwrap().pending_removals, 1);
  // b's own consolidation suspends its log (keeping the lock) and rewrites it.
  let c = b.consolidate().unwrap();
  assert_eq!(c.pending_removals, 0, "{c:?}");
  assert_eq!(holders(ws.path(), "zorblax"), Vec::<String>::new());
  assert!(b.capture(entry(MemoryKind::Learning, "The log of b still takes appends afterwards")).unwrap().accepted);
  // Forgetting on request still refuses a log another process holds, changing nothing.
  let id = b.capture(entry(MemoryKind::Learning, "A memory only b holds in its own open log")).unwrap().id.unwrap();
  assert_eq!(a.forget(&ForgetSelector::Id(id), &ForgetOptions::default()).unwrap_err().code(), "E_WAL_LOCKED");
}

#[test]
fn the_session_holding_an_expired_memory_removes_it_as_it_closes() {
  let ws = tempfile::tempdir().unwrap();
  let b = open(ws.path(), "b");
  let past = CaptureOptions { expires_at: Some(PAST.into()), ..Default::default() };
  b.capture_with(entry(MemoryKind::Decision, EXPIRED), &past).unwrap();
  b.capture(entry(MemoryKind::Decision, "Deploys go out on Tuesdays after the integration suite passes")).unwrap();
  consolidate_workspace(&StoreOptions { workspace_dir: ws.path().to_path_buf(), ..Default::default() }).unwrap();
  assert!(!holders(ws.path(), "zorblax").is_empty());
  b.close().unwrap();
  assert_eq!(holders(ws.path(), "zorblax"), Vec::<String>::new());
  assert!(!ws.path().join(".loa/wal/forget-pending.json").exists());
  assert!(crate::wal::verify_dir(&ws.path().join(".loa/wal")).unwrap().ok());
  let b = open(ws.path(), "b");
  assert_eq!(b.search("tuesdays", &SearchOptions::default()).unwrap().hits.len(), 1);
}

#[test]
fn an_expired_memory_is_hidden_from_every_read_before_any_consolidation() {
  let ws = tempfile::tempdir().unwrap();
  let s = open(ws.path(), "s");
  s.capture(entry(MemoryKind::Learning, "The integration suite needs Chrome 120 or newer")).unwrap();
  s.consolidate().unwrap();
  // Only in the WAL, beyond the summary; then with no summary at all.
  let past = CaptureOptions { expires_at: Some(PAST.into()), ..Default::default() };
  let id = s.capture_with(entry(MemoryKind::Learning, EXPIRED), &past).unwrap().id.unwrap();
  let other = open(ws.path(), "other");
  other.capture_with(entry(MemoryKind::Interaction, "The zorblax password was read out in the chat"), &past).unwrap();
  assert!(!everything_shown(&s, ws.path()).contains("zorblax"));
  assert!(s.get(&id, None).unwrap().is_none());
  fs::remove_file(ws.path().join(DEFAULT_GRIMOIRE_DIR).join("memory-summary.json")).unwrap();
  assert!(!everything_shown(&s, ws.path()).contains("zorblax"));
  let sessions: Vec<String> = s.recent_sessions(10).unwrap().into_iter().map(|e| e.session_id).collect();
  assert_eq!(sessions, ["s"], "a session whose memories all expired is not listed");
}

fn by(agent: &str, content: &str) -> Entry {
  Entry { agent_id: Some(agent.into()), ..entry(MemoryKind::Learning, content) }
}

#[test]
fn agent_ids_are_exact_identifiers_never_redacted_nor_pooled() {
  let ws = tempfile::tempdir().unwrap();
  let s = open(ws.path(), "s");
  let agents = ["alice@corp.example.com", "bob@corp.example.com", "10.0.0.1", "10.0.0.2"];
  let words = ["amber", "cobalt", "crimson", "olive"];
  let word = |agent: &str| words[agents.iter().position(|a| *a == agent).unwrap()];
  let mut ids = BTreeMap::new();
  for agent in agents {
    let r = s.capture(by(agent, &format!("The {} cache notes say keys expire hourly", word(agent)))).unwrap();
    assert!(r.accepted);
    assert!(r.findings.iter().all(|f| f.field != "agentId"), "{agent}: not content");
    ids.insert(agent, r.id.unwrap());
  }
  s.capture(entry(MemoryKind::Learning, "Workspace note: the cache runs on Redis 7")).unwrap();
  for round in 0..2 {
    for agent in agents {
      let options = SearchOptions { agent_id: Some(agent.into()), limit: 50, ..Default::default() };
      let hits = s.search("cache", &options).unwrap().hits;
      let owners: Vec<Option<String>> = hits.iter().map(|h| h.agent_id.clone()).collect();
      assert_eq!(owners.len(), 2, "{agent} (round {round}): its own and the workspace's: {owners:?}");
      assert!(owners.contains(&Some(agent.to_string())) && owners.contains(&None));
      let own = s.get(&ids[agent], Some(agent)).unwrap().expect("its own memory");
      assert_eq!(own.agent_id.as_deref(), Some(agent));
      let path = &hits.iter().find(|h| h.agent_id.is_some()).unwrap().path;
      let read = s.read_markdown(path, &ReadOptions { agent_id: Some(agent.into()), ..Default::default() }).unwrap();
      assert!(read.is_some(), "{agent} reads its own view path");
      for other in agents.iter().filter(|o| **o != agent) {
        assert!(s.get(&ids[other], Some(agent)).unwrap().is_none(), "{agent} does not see {other}'s");
        let theirs = s.search("cache", &SearchOptions { agent_id: Some((*other).into()), ..Default::default() });
        assert!(!theirs.unwrap().hits.iter().any(|h| h.path == *path), "one view path per agent");
      }
      let context = ContextRequest { query: Some("cache".into()), agent_id: Some(agent.into()), ..Default::default() };
      let text = s.build_context(&context).unwrap().text.unwrap_or_default();
      for other in agents.iter().filter(|o| **o != agent) {
        assert!(!text.contains(word(other)), "{agent}'s context holds no memory of {other}");
      }
    }
    s.consolidate().unwrap();
  }
}

#[test]
fn invalid_agent_ids_are_refused_with_a_code_and_never_echoed() {
  let ws = tempfile::tempdir().unwrap();
  let s = open(ws.path(), "s");
  let long = "a".repeat(MAX_AGENT_ID_BYTES + 1);
  for bad in
    ["", "a/b", "../etc", "a..b", "tab\there", "line\nbreak", "-flag", ".hidden", "[REDACTED:EMAIL]", "café", &long]
  {
    let errors = [
      s.capture(by(bad, "The deploy checklist lives in the ops wiki")).unwrap_err(),
      s.search("deploy", &SearchOptions { agent_id: Some(bad.into()), ..Default::default() }).unwrap_err(),
      s.get(&"0".repeat(64), Some(bad)).unwrap_err(),
      s.build_context(&ContextRequest { agent_id: Some(bad.into()), ..Default::default() }).unwrap_err(),
      s.import_markdown(ws.path(), &ImportOptions { agent_id: Some(bad.into()), ..Default::default() }).unwrap_err(),
    ];
    for e in errors {
      assert_eq!(e.code(), "E_INVALID_ARGUMENT", "{bad:?}");
      assert!(bad.len() < 2 || !e.to_string().contains(bad), "the id is not echoed");
    }
  }
  assert!(check_agent_id(&"a".repeat(MAX_AGENT_ID_BYTES)).is_ok());
  assert!(check_agent_id("agent:main+review_2.x-y@host").is_ok());
}

#[test]
fn records_of_an_earlier_version_with_a_redacted_agent_id_still_read() {
  let ws = tempfile::tempdir().unwrap();
  let s = open(ws.path(), "s");
  let id = s.capture(entry(MemoryKind::Learning, "The billing export runs at midnight UTC")).unwrap().id.unwrap();
  s.consolidate().unwrap();
  drop(s);
  // As an earlier version stored an e-mail-like agent id: its redaction placeholder.
  let file = ws.path().join(DEFAULT_GRIMOIRE_DIR).join(MEMORY_DIR).join(format!("{id}.json"));
  let mut record: serde_json::Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
  record["agentId"] = "[REDACTED:EMAIL]".into();
  fs::write(&file, serde_json::to_vec_pretty(&record).unwrap()).unwrap();
  fs::remove_dir_all(ws.path().join(DEFAULT_GRIMOIRE_DIR).join(INDEX_DIR)).unwrap();
  let s = open(ws.path(), "s");
  let hits = s.search("billing", &SearchOptions::default()).unwrap().hits;
  assert_eq!(hits.len(), 1);
  assert_eq!(hits[0].agent_id.as_deref(), Some("[REDACTED:EMAIL]"));
  assert!(s.get(&id, None).unwrap().is_some());
  let read = s.read_markdown(&hits[0].path, &ReadOptions::default()).unwrap();
  assert!(read.is_some_and(|r| r.text.contains("billing")));
  // Its owner is unknown: no agent id can name it, so it is the workspace tools'.
  let alice = SearchOptions { agent_id: Some("alice@corp.example.com".into()), ..Default::default() };
  assert!(s.search("billing", &alice).unwrap().hits.is_empty());
  s.consolidate().unwrap();
}

#[test]
fn sharing_names_agents_exactly_and_refuses_what_no_agent_id_can_be() {
  let ws = tempfile::tempdir().unwrap();
  let config = ws.path().join(".loa.config.yaml");
  fs::write(&config, "memory:\n  sharing:\n    'alice@corp.example.com': ['10.0.0.1']\n").unwrap();
  let options = crate::config::store_options(ws.path(), &Default::default()).unwrap();
  let s = MemoryStore::open(StoreOptions { session_id: "s".into(), ..options }).unwrap();
  s.capture(by("10.0.0.1", "The amber cache notes say keys expire hourly")).unwrap();
  s.capture(by("10.0.0.2", "The cobalt cache notes say keys expire hourly")).unwrap();
  let seen = |agent: &str| -> Vec<String> {
    let options = SearchOptions { agent_id: Some(agent.into()), ..Default::default() };
    let mut v: Vec<String> = s.search("cache", &options).unwrap().hits.into_iter().filter_map(|h| h.agent_id).collect();
    v.sort();
    v
  };
  assert_eq!(seen("alice@corp.example.com"), ["10.0.0.1"]);
  assert_eq!(seen("bob@corp.example.com"), Vec::<String>::new());
  for bad in ["'a/b': [x]", "x: ['../y']", "'[REDACTED:EMAIL]': ['*']"] {
    fs::write(&config, format!("memory:\n  sharing:\n    {bad}\n")).unwrap();
    let err = crate::config::store_options(ws.path(), &Default::default()).unwrap_err();
    assert_eq!(err.code(), "E_CONFIG_INVALID", "{bad}");
  }
}
