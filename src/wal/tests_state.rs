//! The sharded consolidation state (version 2): migration from version 1, a run cut short
//! between its steps, and hostile files where the state belongs.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::consolidate::{consolidate, ConsolidateOptions, Consolidation, SHARD_DIR, STATE_FILE};
use super::{AppendRequest, Wal, WalOptions};

fn wal(dir: &Path, session: &str) -> Wal {
  Wal::open(dir, WalOptions { session_id: session.into(), ..Default::default() }).unwrap()
}

fn write(path: &str, data: &[u8]) -> AppendRequest {
  AppendRequest { op: "write".into(), path: Some(path.into()), meta: None, data: Some(data.to_vec()) }
}

fn run(dir: &Path, target: &Path) -> Consolidation {
  consolidate(dir, target, &ConsolidateOptions::default()).unwrap()
}

fn shard_files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
  match fs::read_dir(dir.join(SHARD_DIR)) {
    Ok(entries) => entries.map(|e| e.unwrap().path()).map(|p| (p.clone(), fs::read(p).unwrap())).collect(),
    Err(_) => BTreeMap::new(),
  }
}

fn mkfifo(path: &Path) {
  rustix::fs::mknodat(rustix::fs::CWD, path, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o600), 0)
    .unwrap();
}

fn applied(c: &Consolidation) -> Vec<(String, bool)> {
  c.applied_paths.iter().map(|p| (p.path.clone(), p.replaced)).collect()
}

#[test]
fn a_version_1_state_is_migrated_and_its_winners_still_win() {
  let (dir, target) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
  {
    let w = wal(dir.path(), "late");
    w.append(write("notes/a.md", b"late but old")).unwrap();
  }
  // What version 1 wrote: every path's winner in one file. `notes/a.md` was won at a time far
  // in the future, so the record above (ts now) must lose to it after the migration.
  let v1 = serde_json::json!({
    "version": 1,
    "sessions": { "gone": 3 },
    "paths": {
      "notes/a.md": { "sessionId": "gone", "seq": 3, "ts": 4102444800000i64, "op": "write", "hash": "00" },
      "notes/b.md": { "sessionId": "gone", "seq": 2, "ts": 1, "op": "write", "hash": "11" }
    }
  });
  fs::write(dir.path().join(STATE_FILE), serde_json::to_vec_pretty(&v1).unwrap()).unwrap();
  let c = run(dir.path(), target.path());
  assert_eq!(c.watermarks_before.get("gone"), Some(&3), "the version 1 watermarks are read");
  assert_eq!(c.applied, 0, "the newer winner from version 1 keeps the path");
  assert_eq!(c.conflicts.len(), 1);
  assert!(!target.path().join("notes/a.md").exists());
  let head: serde_json::Value = serde_json::from_slice(&fs::read(dir.path().join(STATE_FILE)).unwrap()).unwrap();
  assert_eq!(head["version"], 2);
  assert!(head.get("paths").is_none(), "the head no longer holds the paths");
  let shards = shard_files(dir.path());
  assert_eq!(shards.len(), 2, "one shard per path here (different hashes)");
  let all: String = shards.values().map(|b| String::from_utf8(b.clone()).unwrap()).collect();
  assert!(all.contains("notes/a.md") && all.contains("notes/b.md"));

  // A later record for b.md wins over its migrated winner and is a replacement.
  {
    let w = wal(dir.path(), "late");
    w.append(write("notes/b.md", b"new b")).unwrap();
  }
  let c = run(dir.path(), target.path());
  assert_eq!(applied(&c), [("notes/b.md".to_string(), true)]);
  assert_eq!(fs::read(target.path().join("notes/b.md")).unwrap(), b"new b");
}

#[test]
fn a_run_cut_short_before_its_head_is_written_is_redone_exactly() {
  let (dir, target) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
  {
    let w = wal(dir.path(), "a");
    for i in 0..40 {
      w.append(write(&format!("memory/{i}.json"), format!("first {i}").as_bytes())).unwrap();
    }
  }
  run(dir.path(), target.path());
  let head_before = fs::read(dir.path().join(STATE_FILE)).unwrap();
  let shards_before = shard_files(dir.path());
  {
    let w = wal(dir.path(), "b");
    for i in 0..5 {
      w.append(write(&format!("memory/{i}.json"), format!("second {i}").as_bytes())).unwrap();
    }
    w.append(write("memory/new.json", b"new")).unwrap();
  }
  let options = ConsolidateOptions { prune: false, ..Default::default() };
  let complete = consolidate(dir.path(), target.path(), &options).unwrap();
  let files_after = fs::read_dir(target.path().join("memory")).unwrap().count();
  let shards_after = shard_files(dir.path());
  assert_ne!(shards_after, shards_before);

  // The crash: the shards were written, the head (the commit) was not.
  fs::write(dir.path().join(STATE_FILE), &head_before).unwrap();
  let redo = consolidate(dir.path(), target.path(), &options).unwrap();
  assert_eq!(applied(&redo), applied(&complete), "the same records applied, the same replacements reported");
  assert_eq!(redo.conflicts, complete.conflicts);
  assert_eq!(redo.watermarks_before, complete.watermarks_before);
  assert_eq!(fs::read_dir(target.path().join("memory")).unwrap().count(), files_after);
  assert_eq!(fs::read(target.path().join("memory/3.json")).unwrap(), b"second 3");
  // And nothing is applied twice: the next run finds nothing new.
  let again = consolidate(dir.path(), target.path(), &options).unwrap();
  assert_eq!((again.applied, again.conflicts.len()), (0, 0));

  // A crash before any shard was written (the old shards and head back): redone the same way.
  for (path, bytes) in shard_files(dir.path()) {
    match shards_before.get(&path) {
      Some(old) => fs::write(&path, old).unwrap(),
      None => fs::remove_file(&path).unwrap(),
    }
    let _ = bytes;
  }
  fs::write(dir.path().join(STATE_FILE), &head_before).unwrap();
  let redo = consolidate(dir.path(), target.path(), &options).unwrap();
  assert_eq!(applied(&redo), applied(&complete));
}

#[test]
fn hostile_shard_files_are_refused_with_codes_and_nothing_is_lost() {
  let (dir, target) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
  let outside = tempfile::tempdir().unwrap();
  fs::write(outside.path().join("00.json"), b"{\"version\":2,\"paths\":{}}").unwrap();
  {
    let w = wal(dir.path(), "s");
    w.append(write("x.md", b"x")).unwrap();
  }
  run(dir.path(), target.path());
  let shard = shard_files(dir.path()).into_keys().next().unwrap();
  let good = fs::read(&shard).unwrap();
  let head = fs::read(dir.path().join(STATE_FILE)).unwrap();
  {
    let w = wal(dir.path(), "s");
    w.append(write("x.md", b"x, second version")).unwrap();
  }
  let hazards: [Hazard; 5] = [
    ("symlink", &|p| std::os::unix::fs::symlink(outside.path().join("00.json"), p).unwrap(), "E_NOT_REGULAR_FILE"),
    ("fifo", &|p| mkfifo(p), "E_NOT_REGULAR_FILE"),
    (
      "oversized",
      &|p| fs::File::create(p).unwrap().set_len(super::consolidate::MAX_SHARD_BYTES + 1).unwrap(),
      "E_TOO_LARGE",
    ),
    ("truncated", &|p| fs::write(p, &good[..good.len() / 2]).unwrap(), "E_STATE_CORRUPT"),
    ("another version", &|p| fs::write(p, b"{\"version\":3,\"paths\":{}}").unwrap(), "E_STATE_CORRUPT"),
  ];
  for (name, make, code) in hazards {
    fs::remove_file(&shard).unwrap();
    make(&shard);
    let err = consolidate(dir.path(), target.path(), &ConsolidateOptions::default()).unwrap_err();
    assert_eq!(err.code(), code, "{name}");
    assert_eq!(fs::read(target.path().join("x.md")).unwrap(), b"x", "{name}: nothing applied");
    assert_eq!(fs::read(dir.path().join(STATE_FILE)).unwrap(), head, "{name}: the head is unchanged");
    assert!(fs::symlink_metadata(&shard).is_ok(), "{name}: the hazard is left where it is");
  }
  // The shard directory itself as a symlink.
  fs::remove_file(&shard).unwrap();
  fs::write(&shard, &good).unwrap();
  let shards = dir.path().join(SHARD_DIR);
  let moved = dir.path().join("moved-away");
  fs::rename(&shards, &moved).unwrap();
  std::os::unix::fs::symlink(&moved, &shards).unwrap();
  let err = consolidate(dir.path(), target.path(), &ConsolidateOptions::default()).unwrap_err();
  assert_eq!(err.code(), "E_PATH_OUTSIDE_ROOT");
  assert_eq!(fs::read(target.path().join("x.md")).unwrap(), b"x");
  fs::remove_file(&shards).unwrap();
  fs::rename(&moved, &shards).unwrap();
  // Repaired: the record waiting in the log is applied; nothing was lost.
  let c = run(dir.path(), target.path());
  assert_eq!(applied(&c), [("x.md".to_string(), true)]);
  assert_eq!(fs::read(target.path().join("x.md")).unwrap(), b"x, second version");
  assert_eq!(fs::read(outside.path().join("00.json")).unwrap(), b"{\"version\":2,\"paths\":{}}");
}

/// A name, a way to put the hazard in place, and the code it must get.
type Hazard<'a> = (&'a str, &'a dyn Fn(&Path), &'a str);
