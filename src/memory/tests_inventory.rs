//! Listing a workspace's memory for a person (`inventory`) and explaining a built context: both
//! reads, exact about what is consolidated, forgotten and quarantined.

use std::fs;
use std::path::Path;

use super::inventory::InventoryOptions;
use super::*;

fn options(ws: &Path, session: &str) -> StoreOptions {
  StoreOptions { workspace_dir: ws.to_path_buf(), session_id: session.into(), ..Default::default() }
}

fn capture(store: &MemoryStore, kind: MemoryKind, agent: Option<&str>, text: &str, ts: &str) -> String {
  let entry = Entry {
    confidence: Some(0.9),
    agent_id: agent.map(str::to_string),
    timestamp: Some(ts.into()),
    ..Entry::new(kind, text)
  };
  let outcome = store.capture(entry).unwrap();
  assert!(outcome.accepted, "{text}");
  outcome.id.unwrap()
}

fn all(limit: usize) -> InventoryOptions {
  InventoryOptions { agent_id: None, limit }
}

#[test]
fn inventory_lists_newest_first_with_what_is_consolidated_forgotten_and_quarantined() {
  let ws = tempfile::tempdir().unwrap();
  let store = MemoryStore::open(options(ws.path(), "s1")).unwrap();
  let old = capture(
    &store,
    MemoryKind::Decision,
    None,
    "We deploy the billing service on Fridays only",
    "2026-01-02T10:00:00Z",
  );
  let mail = capture(
    &store,
    MemoryKind::Interaction,
    Some("main"),
    "Dana asked to be reached at dana.whitfield@example.com or dana@example.org about the release",
    "2026-01-03T10:00:00Z",
  );
  let gone = capture(
    &store,
    MemoryKind::Learning,
    Some("main"),
    "The staging cluster restarts at midnight UTC",
    "2026-01-04T10:00:00Z",
  );
  store.consolidate().unwrap();
  store.forget(&ForgetSelector::Id(gone.clone()), &ForgetOptions::default()).unwrap();
  let pending = capture(
    &store,
    MemoryKind::Error,
    Some("helper"),
    "The nightly import failed on a malformed CSV header",
    "2026-01-05T10:00:00Z",
  );
  store.close().unwrap();
  let quarantined = ws.path().join("grimoires/loa/learnings.json.corrupt-20260105T100000Z");
  fs::write(&quarantined, b"{").unwrap();

  let before = super::tests::snapshot(ws.path());
  let reader = MemoryStore::open_read_only(options(ws.path(), "s1")).unwrap();
  let inv = reader.inventory(&all(10)).unwrap();
  let ids: Vec<&str> = inv.memories.iter().map(|m| m.record.id.as_str()).collect();
  assert_eq!(ids, vec![pending.as_str(), mail.as_str(), old.as_str()], "newest first, the forgotten one gone");
  assert_eq!(inv.memories.iter().map(|m| m.consolidated).collect::<Vec<_>>(), vec![false, true, true]);
  assert_eq!((inv.total, inv.pending, inv.tombstones), (3, 1, 1));
  assert_eq!(inv.quarantined, vec!["grimoires/loa/learnings.json.corrupt-20260105T100000Z".to_string()]);
  let kinds: Vec<&str> = inv.memories[1].record.redactions.iter().map(|r| r.kind.as_str()).collect();
  assert_eq!(kinds, vec!["email", "email"], "the memory says what was replaced in it");
  let per_agent: Vec<(Option<&str>, u64)> =
    inv.by_agent.iter().map(|(a, k)| (a.as_deref(), k.values().sum::<u64>())).collect();
  assert_eq!(per_agent, vec![(None, 1), (Some("helper"), 1), (Some("main"), 1)]);
  assert_eq!(inv.by_agent[&Some("helper".to_string())][&MemoryKind::Error], 1);

  // The limit cuts the listing, never the counts.
  let first = reader.inventory(&all(1)).unwrap();
  assert_eq!((first.memories.len(), first.total, first.pending), (1, 3, 1));
  // An agent sees its own memories and the workspace's, and is counted alone.
  let main = reader.inventory(&InventoryOptions { agent_id: Some("main".into()), limit: 10 }).unwrap();
  assert_eq!(main.memories.iter().map(|m| m.record.id.as_str()).collect::<Vec<_>>(), vec![mail.as_str(), old.as_str()]);
  assert_eq!((main.total, main.pending), (2, 0));
  for bad in [all(0), all(inventory::MAX_LISTED + 1), InventoryOptions { agent_id: Some("../x".into()), limit: 1 }] {
    assert_eq!(reader.inventory(&bad).unwrap_err().code(), "E_INVALID_ARGUMENT");
  }
  reader.close().unwrap();
  assert_eq!(super::tests::snapshot(ws.path()), before, "listing wrote nothing");
}

#[test]
fn an_expired_memory_is_neither_listed_nor_counted() {
  let ws = tempfile::tempdir().unwrap();
  let store = MemoryStore::open(options(ws.path(), "s1")).unwrap();
  let kept =
    capture(&store, MemoryKind::Decision, None, "Releases are cut from the main branch", "2026-01-02T10:00:00Z");
  let entry =
    Entry { confidence: Some(0.9), ..Entry::new(MemoryKind::Learning, "The temporary VPN password rotates hourly") };
  let expiring = CaptureOptions { expires_at: Some("2026-01-01T00:00:00Z".into()), ..Default::default() };
  assert!(store.capture_with(entry, &expiring).unwrap().accepted);
  let inv = store.inventory(&all(10)).unwrap();
  assert_eq!(inv.memories.iter().map(|m| m.record.id.as_str()).collect::<Vec<_>>(), vec![kept.as_str()]);
  assert_eq!(inv.total, 1);
}

#[test]
fn an_explained_context_names_what_each_item_stands_for() {
  let ws = tempfile::tempdir().unwrap();
  let store = MemoryStore::open(options(ws.path(), "s1")).unwrap();
  let deploy = capture(
    &store,
    MemoryKind::Decision,
    None,
    "We deploy the billing service on Fridays only",
    "2026-01-02T10:00:00Z",
  );
  capture(
    &store,
    MemoryKind::Interaction,
    None,
    "Lunch is at the Italian place on Main Street",
    "2026-01-03T10:00:00Z",
  );
  let request = ContextRequest { query: Some("when do we deploy billing".into()), ..Default::default() };
  let (built, sources) = store.build_context_explained(&request).unwrap();
  assert_eq!(built, store.build_context(&request).unwrap(), "the same context as build_context");
  assert!(sources.sessions.is_empty());
  let first = &built.included[0];
  let source = &sources.learnings[first.index];
  assert_eq!(source.id, deploy, "the included item is the memory hit");
  let explain = source.explain.as_ref().expect("a query's item says why it was found");
  assert!(explain.matched.iter().any(|m| m.query_word == "deploy"), "{explain:?}");

  let (plain, sources) = store.build_context_explained(&ContextRequest::default()).unwrap();
  assert_eq!(sources.sessions, vec!["s1".to_string()]);
  assert!(plain.included.iter().all(|i| match i.kind {
    crate::context::ItemKind::Session => i.index < sources.sessions.len(),
    crate::context::ItemKind::Learning => i.index < sources.learnings.len(),
  }));
}
