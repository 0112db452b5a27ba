//! Forgetting (by id, by query with confirm, by expiry) and incremental consolidation.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::Path;

use super::*;

fn open(ws: &Path, session: &str) -> MemoryStore {
  MemoryStore::open(StoreOptions { workspace_dir: ws.to_path_buf(), session_id: session.into(), ..Default::default() })
    .unwrap()
}

fn entry(kind: MemoryKind, content: &str) -> Entry {
  Entry { confidence: Some(0.9), ..Entry::new(kind, content) }
}

/// Every file under `dir` but empty lock files, symlinks not followed (relative path ->
/// bytes). Compare with [`same`]: never print these.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
  let mut out = BTreeMap::new();
  let mut stack = vec![dir.to_path_buf()];
  while let Some(d) = stack.pop() {
    for e in fs::read_dir(&d).unwrap() {
      let e = e.unwrap();
      let p = e.path();
      let t = e.file_type().unwrap();
      if t.is_dir() {
        stack.push(p);
      } else if t.is_file() {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if (name.ends_with(".lock") || name == "LOCK") && fs::metadata(&p).unwrap().len() == 0 {
          continue;
        }
        out.insert(p.strip_prefix(dir).unwrap().display().to_string(), fs::read(&p).unwrap());
      }
    }
  }
  out
}

/// Asserts two snapshots are equal, naming the files that differ (never their bytes).
fn same(a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>, what: &str) {
  let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
  let differ: Vec<&&String> = names.iter().filter(|n| a.get(**n) != b.get(**n)).collect();
  assert!(differ.is_empty(), "{what}: these files differ: {differ:?}");
}

/// Files under `dir` holding `needle` (case-insensitively for text).
fn holders(files: &BTreeMap<String, Vec<u8>>, needle: &str) -> Vec<String> {
  let lower = needle.to_lowercase();
  files
    .iter()
    .filter(|(_, bytes)| {
      let text = String::from_utf8_lossy(bytes).to_lowercase();
      text.contains(&lower) || memchr::memmem::find(bytes, needle.as_bytes()).is_some()
    })
    .map(|(name, _)| name.clone())
    .collect()
}

const SECRET: &str =
  "Always keep the zorblax quintessence in vault nineteen. Flimwaddle approved the snorkeltree plan.";
const UNIQUE: [&str; 5] = ["zorblax", "quintessence", "flimwaddle", "snorkeltree", "nineteen"];

#[test]
fn forget_removes_a_memory_from_every_file_wal_included() {
  let ws = tempfile::tempdir().unwrap();
  let a = open(ws.path(), "a");
  let b = open(ws.path(), "b");
  // Both sessions hold the memory in their logs; b's process then ends.
  a.capture(entry(MemoryKind::Decision, "Keep the release plan in the shared vault")).unwrap();
  let id = a.capture(entry(MemoryKind::Decision, SECRET)).unwrap().id.unwrap();
  // Captured by both at the same moment (neither gate sees the other's memory yet).
  assert!(super::store::racing(|| b.capture(entry(MemoryKind::Decision, SECRET))).unwrap().accepted);
  b.capture(entry(MemoryKind::Learning, "The vault rotates its keys every quarter")).unwrap();
  drop(b);
  a.consolidate().unwrap();
  // After consolidation: records after it in the live segment, and one more in the WAL only.
  a.capture(entry(MemoryKind::Interaction, "The user approved the plan for the shared vault")).unwrap();
  let before = snapshot(ws.path());
  assert!(!holders(&before, "zorblax").is_empty());
  assert!(holders(&before, "zorblax").iter().any(|f| f.contains("NOTES.md")));
  assert!(holders(&before, "zorblax").iter().any(|f| f.contains("learnings.json")));
  assert!(holders(&before, "zorblax").iter().any(|f| f.contains("sessions/b/")));

  // A query without confirm changes nothing and says what would go.
  let query = ForgetSelector::Query {
    query: "zorblax vault".into(),
    options: SearchOptions { min_score: 0.2, ..Default::default() },
    confirm: false,
  };
  let dry = a.forget(&query, &ForgetOptions::default()).unwrap();
  assert!(!dry.applied);
  assert_eq!(dry.matched.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), [id.as_str()]);
  same(&snapshot(ws.path()), &before, "nothing changed");

  let ForgetSelector::Query { query: q, options: o, .. } = query else { unreachable!() };
  let done =
    a.forget(&ForgetSelector::Query { query: q, options: o, confirm: true }, &ForgetOptions::default()).unwrap();
  assert!(done.applied);
  assert_eq!(done.tombstones.len(), 1);
  assert_eq!(done.wal_records, 2, "one record in each session's log");
  let tomb = &done.tombstones[0];
  assert_ne!(tomb, &id);
  assert_ne!(tomb, &crate::gates::content_hash(&id), "keyed, not a plain hash");

  let after = snapshot(ws.path());
  let mut needles: Vec<String> = vec![SECRET.into(), id.clone()];
  needles.extend(SECRET.split(". ").map(|s| s.trim_end_matches('.').to_string()));
  needles.extend(UNIQUE.iter().map(|w| w.to_string()));
  // Stemmed forms as the index would hold them.
  needles.extend(["quintess", "snorkeltre"].iter().map(|w| w.to_string()));
  for needle in &needles {
    assert_eq!(holders(&after, needle), Vec::<String>::new(), "{needle:?} is still in a file");
  }
  // The rest is intact and the store keeps working.
  assert!(a.search("zorblax", &SearchOptions::default()).unwrap().hits.is_empty());
  assert_eq!(a.search("vault", &SearchOptions::default()).unwrap().hits.len(), 3);
  assert!(a.capture(entry(MemoryKind::Learning, "After forgetting the log takes appends again")).unwrap().accepted);
  assert!(crate::wal::verify_dir(&ws.path().join(".loa/wal")).unwrap().ok());
  assert!(tombstone_lines(ws.path()).contains(tomb.as_str()));
  let audit = snapshot(&ws.path().join(".loa/audit"));
  let log: String = audit.values().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
  assert!(log.contains("memory.forget") && log.contains(tomb.as_str()));
  let c = a.consolidate().unwrap();
  assert_eq!(c.memories, 4, "{c:?}");
  drop(a);
  let again = open(ws.path(), "a");
  assert!(again.search("zorblax", &SearchOptions::default()).unwrap().hits.is_empty());
  assert_eq!(again.search("vault", &SearchOptions::default()).unwrap().hits.len(), 3);
  assert_eq!(again.search("appends", &SearchOptions::default()).unwrap().hits.len(), 1);
  // Forgetting what does not exist is no error and changes nothing.
  let before = snapshot(ws.path());
  let none = again.forget(&ForgetSelector::Id(id.clone()), &ForgetOptions::default()).unwrap();
  assert!(none.tombstones.is_empty());
  same(&snapshot(ws.path()), &before, "forgetting nothing");
}

fn tombstone_lines(ws: &Path) -> String {
  fs::read_to_string(ws.join("grimoires/loa").join(tombstone::TOMBSTONES_FILE)).unwrap()
}

#[test]
fn forget_fails_with_wal_locked_and_changes_nothing_while_another_session_is_open() {
  let ws = tempfile::tempdir().unwrap();
  let a = open(ws.path(), "a");
  let b = open(ws.path(), "b");
  let id = a.capture(entry(MemoryKind::Learning, SECRET)).unwrap().id.unwrap();
  assert!(super::store::racing(|| b.capture(entry(MemoryKind::Learning, SECRET))).unwrap().accepted);
  let before = snapshot(ws.path());
  let err = a.forget(&ForgetSelector::Id(id.clone()), &ForgetOptions::default()).unwrap_err();
  assert_eq!(err.code(), "E_WAL_LOCKED");
  same(&snapshot(ws.path()), &before, "nothing changed");
  assert!(a.capture(entry(MemoryKind::Learning, "The log of a still takes appends")).unwrap().accepted);
  drop(b);
  let done = a.forget(&ForgetSelector::Id(id), &ForgetOptions::default()).unwrap();
  assert_eq!(done.wal_records, 2);
  assert!(holders(&snapshot(ws.path()), "zorblax").is_empty());
}

#[test]
fn expired_memories_are_forgotten_at_consolidation() {
  let ws = tempfile::tempdir().unwrap();
  let store = open(ws.path(), "s");
  let past = CaptureOptions { expires_at: Some("2020-01-01T00:00:00Z".into()), ..Default::default() };
  store.capture_with(entry(MemoryKind::Decision, SECRET), &past).unwrap();
  let later = CaptureOptions { ttl_ms: Some(3_600_000), ..Default::default() };
  store.capture_with(entry(MemoryKind::Decision, "Keep the release plan in the shared vault"), &later).unwrap();
  let c = store.consolidate().unwrap();
  assert_eq!((c.expired, c.memories), (1, 1), "{c:?}");
  let files = snapshot(ws.path());
  for needle in UNIQUE {
    assert_eq!(holders(&files, needle), Vec::<String>::new(), "{needle}");
  }
  assert!(tombstone_lines(ws.path()).contains("\"reason\":\"expired\""));
  assert_eq!(store.search("vault", &SearchOptions::default()).unwrap().hits.len(), 1);
}

#[test]
fn consolidation_reads_only_new_records_and_rebuilds_a_missing_or_stale_summary() {
  let ws = tempfile::tempdir().unwrap();
  let store = open(ws.path(), "s");
  for i in 0..20 {
    let kind = if i % 3 == 0 { MemoryKind::Decision } else { MemoryKind::Interaction };
    store.capture(entry(kind, &format!("Memory number {i} about topic {}", i * 13))).unwrap();
  }
  let first = store.consolidate().unwrap();
  assert!(first.rebuilt, "first run: no summary yet");
  let grimoire = ws.path().join("grimoires/loa");
  // An old record damaged after it was consolidated is not read again by an incremental run.
  let old = fs::read_dir(grimoire.join("memory")).unwrap().next().unwrap().unwrap().path();
  let old_bytes = fs::read(&old).unwrap();
  fs::write(&old, b"{not read}").unwrap();
  store.capture(entry(MemoryKind::Decision, "One more decision arrives after the first run")).unwrap();
  let second = store.consolidate().unwrap();
  assert!(!second.rebuilt);
  assert_eq!((second.applied, second.memories), (1, 21));
  fs::write(&old, old_bytes).unwrap();
  // NOTES.md from the summary is what a full render of every record gives.
  let notes_text = fs::read_to_string(grimoire.join("NOTES.md")).unwrap();
  let records =
    view::read_records(&crate::fsutil::StateDir::open_root(&grimoire.join("memory")).unwrap(), true).unwrap();
  assert_eq!(consolidate::render_notes(Some(&notes_text), &records).unwrap(), notes_text);
  assert!(notes_text.contains("One more decision arrives"));
  // A missing, damaged, other-version or stale summary is rebuilt, with the same result.
  let summary = grimoire.join(consolidate::SUMMARY_FILE);
  let good = fs::read(&summary).unwrap();
  for bad in [
    None,
    Some(b"{".to_vec()),
    Some(String::from_utf8(good.clone()).unwrap().replacen("\"version\":1", "\"version\":2", 1).into_bytes()),
  ] {
    match bad {
      None => fs::remove_file(&summary).unwrap(),
      Some(bytes) => fs::write(&summary, bytes).unwrap(),
    }
    store
      .capture(entry(
        MemoryKind::Interaction,
        &format!("Filler memory {} for the rebuild", fs::read_dir(&grimoire).unwrap().count()),
      ))
      .unwrap_or_else(|e| panic!("{e}"));
    let c = store.consolidate().unwrap();
    assert!(c.rebuilt);
    let records =
      view::read_records(&crate::fsutil::StateDir::open_root(&grimoire.join("memory")).unwrap(), true).unwrap();
    assert_eq!(c.memories, records.len());
    let notes_text = fs::read_to_string(grimoire.join("NOTES.md")).unwrap();
    assert_eq!(consolidate::render_notes(Some(&notes_text), &records).unwrap(), notes_text);
  }
  let c = store.consolidate().unwrap();
  assert!(!c.rebuilt && c.applied == 0);
}

#[test]
fn markdown_memory_is_imported_redacted_gated_and_idempotently() {
  let ws = tempfile::tempdir().unwrap();
  let src = tempfile::tempdir().unwrap();
  let email = format!("{}@{}.com", "jane.doe", "example");
  fs::write(
    src.path().join("MEMORY.md"),
    format!(
      "# Memory\n\n- The user prefers tabs over spaces in Go code\n- Contact for billing questions is {email} on weekdays\n- ok\n\nThe deploy pipeline runs on GitHub Actions with a manual approval step.\n\n```sh\n# not a heading\nmake deploy\n```\n"
    ),
  )
  .unwrap();
  fs::create_dir(src.path().join("memory")).unwrap();
  fs::write(
    src.path().join("memory/2026-01-02.md"),
    "## Notes\n\n1. Discussed the zorblax migration plan with the team\n",
  )
  .unwrap();
  std::os::unix::fs::symlink("/etc/passwd", src.path().join("memory/evil.md")).unwrap();
  let store = open(ws.path(), "import");
  let first = store.import_markdown(src.path(), &ImportOptions::default()).unwrap();
  assert_eq!(first.files, ["MEMORY.md", "memory/2026-01-02.md"]);
  assert_eq!(first.skipped.len(), 1, "{:?}", first.skipped);
  assert_eq!(first.skipped[0].0, "memory/evil.md");
  assert_eq!((first.blocks, first.imported, first.rejected), (6, 5, 1), "{first:?}");
  let hit = &store.search("billing contact", &SearchOptions::default()).unwrap().hits[0];
  assert!(!hit.content.contains(&email), "redacted");
  let dated = &store.search("zorblax migration", &SearchOptions::default()).unwrap().hits[0];
  assert_eq!((dated.kind, dated.timestamp.as_str()), (MemoryKind::Interaction, "2026-01-02T00:00:00.000Z"));
  assert!(store
    .search("make deploy", &SearchOptions::default())
    .unwrap()
    .hits
    .iter()
    .any(|h| h.content.contains("```sh")));
  // Again: nothing new. After forgetting one, it is not brought back.
  let again = store.import_markdown(src.path(), &ImportOptions::default()).unwrap();
  assert_eq!((again.imported, again.duplicates), (0, 5), "{again:?}");
  let done = store.forget(&ForgetSelector::Id(dated.id.clone()), &ForgetOptions::default()).unwrap();
  // Its block went from the file it came from, too; memory-core writes it back.
  assert!(done.imported.len() == 1 && done.imported[0].removed, "{:?}", done.imported);
  assert_eq!(fs::read_to_string(src.path().join("memory/2026-01-02.md")).unwrap(), "## Notes\n\n");
  fs::write(
    src.path().join("memory/2026-01-02.md"),
    "## Notes\n\n1. Discussed the zorblax migration plan with the team\n",
  )
  .unwrap();
  let third = store.import_markdown(src.path(), &ImportOptions::default()).unwrap();
  assert_eq!((third.imported, third.duplicates, third.forgotten), (0, 4, 1), "{third:?}");
  assert!(store.search("zorblax", &SearchOptions::default()).unwrap().hits.is_empty());
}

#[test]
fn markdown_blocks_are_items_and_paragraphs() {
  let text =
    "# H\n- one\n  continued\n- two\n\npara line 1\npara line 2\n\n1. first\n2) second\n```\n- not an item\n\n```\n";
  assert_eq!(
    import::blocks(text),
    ["one\n  continued", "two", "para line 1\npara line 2", "1. first", "2) second\n```\n- not an item\n\n```"]
  );
  assert!(import::blocks("").is_empty());
  assert_eq!(import::blocks(&"x\n".repeat(1000)).len(), 1);
}

#[test]
fn a_new_session_after_another_one_closed_consolidates_incrementally() {
  let ws = tempfile::tempdir().unwrap();
  for round in 0..3 {
    let store = open(ws.path(), &format!("s{round}"));
    for i in 0..3 {
      let kind = if i == 1 { MemoryKind::Learning } else { MemoryKind::Interaction };
      store.capture(entry(kind, &format!("Round {round} memory {i} about the weather"))).unwrap();
      let c = store.consolidate().unwrap();
      assert_eq!(c.rebuilt, round == 0 && i == 0, "round {round}, capture {i}: only the very first run rebuilds");
      assert_eq!(c.memories, round * 3 + i + 1);
    }
    let _ = store.build_context(&ContextRequest::default()).unwrap();
    store.close().unwrap();
  }
}

#[test]
fn forget_records_forgets_what_mirrored_records_wrote_in_the_log_or_consolidated_and_pruned() {
  let ws = tempfile::tempdir().unwrap();
  let opts = StoreOptions { workspace_dir: ws.path().to_path_buf(), ..Default::default() };
  // A mirrored session: written by pull in a real workspace, by a store here.
  let mirror = open(ws.path(), "m1.s");
  let kept = mirror.capture(entry(MemoryKind::Decision, "Keep the release plan in the shared vault")).unwrap();
  let gone = mirror.capture(entry(MemoryKind::Decision, SECRET)).unwrap();
  drop(mirror);
  let seqs: HashSet<u64> = [gone.seq.unwrap()].into();

  // Still in the log only (not consolidated): the record is found there.
  let pending = tempfile::tempdir().unwrap();
  copy_tree(ws.path(), pending.path());
  let p_opts = StoreOptions { workspace_dir: pending.path().to_path_buf(), ..Default::default() };
  let done = forget_records(&p_opts, "m1.s", &seqs, &ForgetOptions::default()).unwrap();
  assert_eq!((done.tombstones.len(), done.wal_records), (1, 1));
  assert!(holders(&snapshot(pending.path()), "zorblax").is_empty());

  // Consolidated, and the segment gone since (as retention prunes it): found in the state.
  consolidate_workspace(&opts).unwrap();
  fs::remove_dir_all(ws.path().join(".loa/wal/sessions/m1.s")).unwrap();
  let other = open(ws.path(), "b");
  assert_eq!(other.search("zorblax", &SearchOptions::default()).unwrap().hits.len(), 1);
  drop(other);
  assert!(!holders(&snapshot(ws.path()), "zorblax").is_empty());
  // Seqs that wrote no memory, and another session's seqs, change nothing.
  let before = snapshot(ws.path());
  let none = forget_records(&opts, "m1.s", &[99].into(), &ForgetOptions::default()).unwrap();
  assert!(none.tombstones.is_empty());
  forget_records(&opts, "m2.s", &seqs, &ForgetOptions::default()).unwrap();
  same(&snapshot(ws.path()), &before, "nothing to forget");

  let done = forget_records(&opts, "m1.s", &seqs, &ForgetOptions::default()).unwrap();
  assert_eq!(done.tombstones.len(), 1);
  let after = snapshot(ws.path());
  for needle in UNIQUE.iter().copied().chain([SECRET, gone.id.as_deref().unwrap()]) {
    assert_eq!(holders(&after, needle), Vec::<String>::new(), "{needle:?} is still in a file");
  }
  let view = open(ws.path(), "b");
  assert!(view.search("zorblax", &SearchOptions::default()).unwrap().hits.is_empty());
  assert!(view.get(kept.id.as_deref().unwrap(), None).unwrap().is_some(), "the other memory stays");
  let audit = snapshot(&ws.path().join(".loa/audit"));
  assert!(audit.values().any(|b| String::from_utf8_lossy(b).contains("memory.forget")));
}

fn copy_tree(from: &Path, to: &Path) {
  for e in fs::read_dir(from).unwrap() {
    let e = e.unwrap();
    let target = to.join(e.file_name());
    if e.file_type().unwrap().is_dir() {
      fs::create_dir_all(&target).unwrap();
      copy_tree(&e.path(), &target);
    } else if e.file_type().unwrap().is_file() {
      fs::copy(e.path(), &target).unwrap();
    }
  }
}

#[test]
fn forgotten_rewrites_a_copy_of_the_log_exactly_as_forget_rewrote_the_local_one() {
  let ws = tempfile::tempdir().unwrap();
  let opts = StoreOptions { workspace_dir: ws.path().to_path_buf(), ..Default::default() };
  assert!(Forgotten::load(&opts).unwrap().tombstones().is_empty(), "nothing forgotten, nothing created");
  assert!(!ws.path().join(".loa/keys").exists());
  let a = open(ws.path(), "a");
  let b = open(ws.path(), "b");
  a.capture(entry(MemoryKind::Decision, "Keep the release plan in the shared vault")).unwrap();
  let gone = a.capture(entry(MemoryKind::Decision, SECRET)).unwrap();
  a.capture(entry(MemoryKind::Learning, "The vault rotates its keys every quarter")).unwrap();
  // The same memory written again by another session: both records are its, one not the winner.
  assert!(super::store::racing(|| b.capture(entry(MemoryKind::Decision, SECRET))).unwrap().accepted);
  drop(b);
  a.consolidate().unwrap();
  let wal = ws.path().join(".loa/wal");
  let log = |wal: &Path| -> Vec<crate::wal::format::Record> {
    ["a", "b"].iter().flat_map(|s| crate::wal::reader::read_session(wal, s).unwrap().records).collect()
  };
  // The copy kept elsewhere: the log as it was before forgetting.
  let copy = log(&wal);
  a.forget(&ForgetSelector::Id(gone.id.clone().unwrap()), &ForgetOptions::default()).unwrap();
  let local = log(&wal);

  let forgotten = Forgotten::load(&opts).unwrap();
  assert_eq!(forgotten.tombstones().len(), 1);
  let all = forgotten.tombstones().clone();
  let rewritten: Vec<_> = copy.iter().map(|r| forgotten.replace(r, &all).unwrap_or_else(|| r.clone())).collect();
  assert_eq!(rewritten, local, "the copy is rewritten record for record as the local log was");
  assert_eq!(rewritten.iter().filter(|r| r.op == TOMBSTONE_OP).count(), 2);
  // Only tombstones among those asked for are applied.
  assert!(copy.iter().all(|r| forgotten.replace(r, &HashSet::new()).is_none()));
  let id = gone.id.clone().unwrap();
  assert!(forgotten.is_forgotten_record_file(&format!("memory/{id}.json")));
  assert!(!forgotten.is_forgotten_record_file(&format!("other/{id}.json")));

  // Written again after it was forgotten: held here, so its records elsewhere stay.
  assert!(a.capture(entry(MemoryKind::Decision, SECRET)).unwrap().accepted);
  let again = Forgotten::load(&opts).unwrap();
  assert!(copy.iter().all(|r| again.replace(r, &all).is_none()));
  assert!(!again.is_forgotten_record_file(&format!("memory/{id}.json")));
}
