//! Opening a store without reading every memory (`super::sources`): the stamp is trusted only
//! while the memories are as it recorded them, and every way they can change behind the index
//! makes the next open reconcile.

use std::fs;
use std::path::Path;

use super::layout::Layout;
use super::types::record_path;
use super::*;
use crate::search::{LOG_FILE, SOURCES_FILE};
use crate::timestamp::{format_ms, now_ms};
use crate::wal::{AppendRequest, Wal, WalOptions};

fn options(ws: &Path, session: &str) -> StoreOptions {
  StoreOptions { workspace_dir: ws.to_path_buf(), session_id: session.into(), ..Default::default() }
}

fn open(ws: &Path, session: &str) -> MemoryStore {
  MemoryStore::open(options(ws, session)).unwrap()
}

fn capture(store: &MemoryStore, text: &str) -> String {
  let outcome = store.capture(Entry { confidence: Some(0.9), ..Entry::new(MemoryKind::Learning, text) }).unwrap();
  assert!(outcome.accepted, "{text}");
  outcome.id.unwrap()
}

fn found(store: &MemoryStore, query: &str) -> Vec<String> {
  let mut ids: Vec<String> =
    store.search(query, &SearchOptions::default()).unwrap().hits.into_iter().map(|h| h.id).collect();
  ids.sort();
  ids
}

fn indexed(store: &MemoryStore, id: &str) -> bool {
  store.index.as_ref().unwrap().contains(id).unwrap()
}

fn record(session: &str, text: &str) -> MemoryRecord {
  super::tests::record(MemoryKind::Learning, session, text, &format_ms(now_ms()))
}

/// A memory written to the WAL of `session` as a capture writes it, by a process that died
/// before it added it to the index.
fn written_then_killed(ws: &Path, session: &str, text: &str) -> String {
  let layout = Layout::resolve(&options(ws, session)).unwrap();
  let wal = Wal::open(&layout.wal_path(), WalOptions { session_id: session.into(), ..Default::default() }).unwrap();
  let record = record(session, text);
  let request = AppendRequest {
    op: "write".into(),
    path: Some(record_path(&record.id)),
    meta: Some(r#"{"memory":"learning"}"#.into()),
    data: Some(record.file_bytes().unwrap()),
  };
  wal.append(request).unwrap();
  wal.close().unwrap();
  record.id
}

/// A workspace with a few memories, consolidated, its store closed, and opened once more so
/// that the stamp reflects a quiet workspace.
fn quiet_workspace() -> (tempfile::TempDir, Vec<String>) {
  let ws = tempfile::tempdir().unwrap();
  let store = open(ws.path(), "s");
  let ids = vec![
    capture(&store, "The billing service deploys on Fridays"),
    capture(&store, "Postgres 16 is required by the integration tests"),
  ];
  store.consolidate().unwrap();
  capture(&store, "The nightly backup job needs a larger disk");
  store.close().unwrap();
  (ws, ids)
}

#[test]
fn a_store_opens_without_reading_the_memories_when_nothing_changed() {
  let (ws, ids) = quiet_workspace();
  // The stamp written at the first open, then this session's entry at close and the memory
  // directory's after the consolidation: nothing is left to read.
  let store = open(ws.path(), "s");
  assert!(!store.reconciled_at_open(), "a quiet workspace is not read again");
  assert_eq!(found(&store, "billing fridays"), vec![ids[0].clone()]);
  // Duplicates are still refused (the gate asks the index), new content accepted.
  let again = store
    .capture(Entry {
      confidence: Some(0.9),
      ..Entry::new(MemoryKind::Learning, "The billing service deploys on Fridays")
    })
    .unwrap();
  assert!(!again.accepted);
  capture(&store, "A fourth memory about the release train");
  store.consolidate().unwrap();
  store.close().unwrap();
  // Another session, new to the stamp, is in step while it holds nothing; so is this one.
  let other = open(ws.path(), "t");
  assert!(!other.reconciled_at_open());
  drop(other);
  let store = open(ws.path(), "s");
  assert!(!store.reconciled_at_open());
  assert_eq!(found(&store, "release train").len(), 1);
}

#[test]
fn a_record_written_by_a_process_killed_before_its_index_add_is_found() {
  let (ws, _) = quiet_workspace();
  let id = written_then_killed(ws.path(), "b", "The staging cluster moved to Frankfurt");
  let store = open(ws.path(), "s");
  assert!(store.reconciled_at_open());
  assert!(indexed(&store, &id));
  assert_eq!(found(&store, "staging frankfurt"), vec![id.clone()]);
  // The same in a session the stamp knows: its owner appended after it was stamped.
  drop(store);
  let id = written_then_killed(ws.path(), "s", "The on-call rotation changes every Monday");
  let store = open(ws.path(), "s");
  assert!(store.reconciled_at_open());
  assert_eq!(found(&store, "rotation monday"), vec![id]);
}

#[test]
fn a_record_file_added_by_hand_is_found() {
  let (ws, _) = quiet_workspace();
  let record = record("elsewhere", "The design review moved to Thursday afternoons");
  let dir = ws.path().join("grimoires/loa");
  fs::write(dir.join(record_path(&record.id)), record.file_bytes().unwrap()).unwrap();
  let store = open(ws.path(), "s");
  assert!(store.reconciled_at_open());
  assert_eq!(found(&store, "design review thursday"), vec![record.id]);
}

#[test]
fn a_lost_log_takes_its_memories_out_of_the_index() {
  let (ws, _) = quiet_workspace();
  // Captured by session `b`, never consolidated, indexed; then `b`'s log is lost.
  let b = open(ws.path(), "b");
  let id = capture(&b, "The VPN certificate expires in March");
  b.close().unwrap();
  let store = open(ws.path(), "s");
  assert!(indexed(&store, &id));
  drop(store);
  let layout = Layout::resolve(&options(ws.path(), "s")).unwrap();
  fs::remove_dir_all(layout.wal_path().join("sessions/b")).unwrap();
  let store = open(ws.path(), "s");
  assert!(store.reconciled_at_open());
  assert!(!indexed(&store, &id), "a memory whose every copy is gone is not indexed");
  // Its content is new again for the duplicate gate.
  capture(&store, "The VPN certificate expires in March");
}

#[test]
fn a_lost_or_replaced_index_log_is_reconciled() {
  let (ws, _) = quiet_workspace();
  let b = open(ws.path(), "b");
  let id = capture(&b, "The office wifi password rotates monthly");
  b.close().unwrap();
  let dir = ws.path().join("grimoires/loa/search");
  fs::remove_file(dir.join(LOG_FILE)).unwrap();
  let store = open(ws.path(), "s");
  assert!(store.reconciled_at_open());
  assert!(indexed(&store, &id));
  drop(store);
  // A stamp that does not parse, or none: reconciled too.
  fs::write(dir.join(SOURCES_FILE), b"{ not json").unwrap();
  assert!(open(ws.path(), "s").reconciled_at_open());
  fs::remove_file(dir.join(SOURCES_FILE)).unwrap();
  assert!(open(ws.path(), "s").reconciled_at_open());
  assert!(!open(ws.path(), "s").reconciled_at_open());
}

#[test]
fn another_process_forgetting_or_consolidating_between_opens_is_seen() {
  let (ws, ids) = quiet_workspace();
  let other = open(ws.path(), "b");
  other.forget(&ForgetSelector::Id(ids[0].clone()), &ForgetOptions::default()).unwrap();
  let id = capture(&other, "The retro happens every second Tuesday");
  other.consolidate().unwrap();
  other.close().unwrap();
  let store = open(ws.path(), "s");
  // (The retro memory may match through a related word: `tuesday` is near `friday`.)
  assert!(!found(&store, "billing fridays").contains(&ids[0]));
  assert!(!indexed(&store, &ids[0]));
  assert_eq!(found(&store, "retro tuesday"), vec![id]);
  capture(&store, "The billing service deploys on Fridays");
}

#[test]
fn a_store_that_could_not_index_a_capture_does_not_vouch_for_its_session() {
  let (ws, _) = quiet_workspace();
  let store = open(ws.path(), "s");
  assert!(!store.reconciled_at_open());
  // The index's add fails after the WAL append (a full disk): the next search of this store
  // would repair it; a store closed before that must not stamp its session.
  let id = {
    let _full = crate::fsutil::faults::inject(
      &ws.path().join("grimoires/loa/search"),
      crate::fsutil::faults::Op::Write,
      libc::ENOSPC,
      0,
      u32::MAX,
    );
    capture(&store, "The load balancer drains connections for thirty seconds")
  };
  assert!(!indexed(&store, &id));
  drop(store);
  let store = open(ws.path(), "s");
  assert!(store.reconciled_at_open());
  assert!(indexed(&store, &id));
}

/// The duplicate gate asks the index, which every process keeps in step: content another open
/// store captured since this one opened is a duplicate here too (it used to pass until reopen).
#[test]
fn the_duplicate_gate_sees_what_another_open_store_captured() {
  let ws = tempfile::tempdir().unwrap();
  let a = open(ws.path(), "a");
  let b = open(ws.path(), "b");
  capture(&a, "The staging database is restored every Sunday night");
  let again = b
    .capture(Entry {
      confidence: Some(0.9),
      ..Entry::new(MemoryKind::Learning, "the staging database is restored every sunday night.")
    })
    .unwrap();
  assert!(!again.accepted, "captured by a after b opened");
  // Forgotten there, it is new again here.
  let id = crate::gates::content_hash("The staging database is restored every Sunday night");
  drop(b);
  a.forget(&ForgetSelector::Id(id), &ForgetOptions::default()).unwrap();
  let b = open(ws.path(), "b");
  capture(&b, "The staging database is restored every Sunday night");
}

/// The stamp is a state file like any other: never read through a symlink (a valid stamp put
/// there by a link is no stamp), and one that is not a regular file never fails an open.
#[test]
fn a_stamp_replaced_by_a_symlink_or_a_directory_is_no_stamp() {
  let (ws, _) = quiet_workspace();
  let dir = ws.path().join("grimoires/loa/search");
  let stamp = dir.join(SOURCES_FILE);
  let elsewhere = ws.path().join("stamp-copy");
  fs::copy(&stamp, &elsewhere).unwrap();
  let original = fs::read(&elsewhere).unwrap();
  // Memories the stamp does not know, behind a link to a stamp that would say nothing changed.
  let id = written_then_killed(ws.path(), "b", "The firewall rules are reviewed every quarter");
  fs::remove_file(&stamp).unwrap();
  std::os::unix::fs::symlink(&elsewhere, &stamp).unwrap();
  let store = open(ws.path(), "s");
  assert!(store.reconciled_at_open());
  assert!(indexed(&store, &id));
  drop(store);
  // The link is removed, never written through; the next open stamps anew.
  assert!(fs::symlink_metadata(&stamp).map_or(true, |m| !m.file_type().is_symlink()));
  assert_eq!(fs::read(&elsewhere).unwrap(), original, "the link's target is left as it was");
  let _ = fs::remove_file(&stamp);
  fs::create_dir(&stamp).unwrap();
  let store = open(ws.path(), "s");
  assert!(store.reconciled_at_open());
  assert_eq!(found(&store, "firewall quarter"), vec![id]);
}
