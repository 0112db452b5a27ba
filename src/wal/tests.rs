use super::*;
use std::fs;
use std::time::Instant;

use reader::session_dir;

fn options(session: &str) -> WalOptions {
  WalOptions { session_id: session.into(), ..Default::default() }
}

fn write(path: &str, data: &[u8]) -> AppendRequest {
  AppendRequest { op: "write".into(), path: Some(path.into()), meta: None, data: Some(data.to_vec()) }
}

/// Segment files of a session, oldest first, listed the plain way (tests look, they do not trust).
fn segment_paths(dir: &Path, session: &str) -> Vec<PathBuf> {
  let mut paths: Vec<PathBuf> = fs::read_dir(session_dir(dir, session))
    .unwrap()
    .map(|e| e.unwrap().path())
    .filter(|p| p.extension().is_some_and(|x| x == "wal"))
    .collect();
  paths.sort();
  paths
}

fn newest_segment(dir: &Path, session: &str) -> PathBuf {
  segment_paths(dir, session).pop().unwrap()
}

/// Returns once the wall clock, which stamps records, has moved past `at` (ms): a wait for that
/// condition itself, never for a guessed number of milliseconds.
fn wait_for_clock_past(at: i64) {
  while now_ms() <= at {
    std::thread::sleep(Duration::from_millis(1));
  }
}

#[test]
fn append_replay_round_trip_and_reopen_continues_seq() {
  let dir = tempfile::tempdir().unwrap();
  let wal = Wal::open(dir.path(), options("s1")).unwrap();
  let binary: Vec<u8> = (0..=255u8).rev().collect();
  assert_eq!(wal.append(write("a.md", b"one")).unwrap(), 1);
  let meta =
    AppendRequest { op: "note".into(), meta: Some(r#"{"x":[1,2]}"#.into()), data: Some(binary.clone()), path: None };
  assert_eq!(wal.append(meta).unwrap(), 2);
  wal.close().unwrap();
  assert_eq!(wal.append(write("a.md", b"late")).unwrap_err().code(), "E_WAL_CLOSED");

  let wal = Wal::open(dir.path(), options("s1")).unwrap();
  assert_eq!(wal.append(write("b.md", b"two")).unwrap(), 3);
  let records = wal.replay(0, None).unwrap();
  assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![1, 2, 3]);
  assert_eq!(records[1].data.as_deref(), Some(&binary[..]));
  assert_eq!(records[1].meta.as_deref(), Some(r#"{"x":[1,2]}"#));
  assert_eq!(wal.replay(1, Some(1)).unwrap()[0].seq, 2);
  assert!(records.windows(2).all(|w| w[0].ts_ms <= w[1].ts_ms));
}

#[test]
fn concurrent_appends_from_threads_get_unique_increasing_seqs() {
  let dir = tempfile::tempdir().unwrap();
  let wal = Arc::new(Wal::open(dir.path(), options("s1")).unwrap());
  let handles: Vec<_> = (0..8)
    .map(|t| {
      let wal = Arc::clone(&wal);
      std::thread::spawn(move || {
        (0..50).map(|i| wal.append(write(&format!("t{t}"), format!("{i}").as_bytes())).unwrap()).collect::<Vec<_>>()
      })
    })
    .collect();
  let mut all = Vec::new();
  for h in handles {
    let seqs = h.join().unwrap();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "one caller's seqs follow its call order");
    all.extend(seqs);
  }
  all.sort();
  assert_eq!(all, (1..=400).collect::<Vec<u64>>());
  // Each thread's records come back in its own append order.
  let records = wal.replay(0, None).unwrap();
  for t in 0..8 {
    let mine: Vec<_> =
      records.iter().filter(|r| r.path.as_deref() == Some(&format!("t{t}"))).map(|r| r.data.clone().unwrap()).collect();
    assert_eq!(mine, (0..50).map(|i| format!("{i}").into_bytes()).collect::<Vec<_>>());
  }
}

#[test]
fn queued_callbacks_answer_in_seq_order() {
  let dir = tempfile::tempdir().unwrap();
  let wal = Wal::open(dir.path(), options("s1")).unwrap();
  let (tx, rx) = mpsc::channel();
  for i in 0..100 {
    let tx = tx.clone();
    wal.append_with(write("p", format!("{i}").as_bytes()), Box::new(move |r| tx.send((i, r.unwrap())).unwrap()));
  }
  drop(tx);
  let answers: Vec<_> = rx.iter().collect();
  assert_eq!(answers, (0..100).map(|i| (i, i as u64 + 1)).collect::<Vec<_>>());
}

#[test]
fn torn_tail_at_every_offset_is_truncated_on_open() {
  let dir = tempfile::tempdir().unwrap();
  {
    let wal = Wal::open(dir.path(), options("s1")).unwrap();
    for i in 0..3 {
      wal.append(write("a", format!("record {i}").as_bytes())).unwrap();
    }
  }
  let segment = newest_segment(dir.path(), "s1");
  let full = fs::read(&segment).unwrap();
  let mut two = format::encode_header(&format::decode_header(&full).unwrap()).to_vec();
  for r in &replay_session(dir.path(), "s1", 0, Some(2)).unwrap() {
    format::encode_record(r, &mut two);
  }
  let last_start = two.len();
  for cut in last_start..full.len() {
    fs::write(&segment, &full[..cut]).unwrap();
    let v = verify_dir(dir.path()).unwrap();
    assert!(v.ok());
    assert_eq!(v.truncated_tails.len(), usize::from(cut > last_start));
    let wal = Wal::open(dir.path(), options("s1")).unwrap();
    let stats = wal.stats().unwrap();
    assert_eq!(
      stats.truncated_tail.as_ref().map(|t| t.offset),
      (cut > last_start).then_some(last_start as u64),
      "cut {cut}"
    );
    assert_eq!(wal.replay(0, None).unwrap().len(), 2, "cut {cut}");
    assert_eq!(fs::metadata(&segment).unwrap().len(), last_start as u64);
    assert_eq!(wal.append(write("a", b"again")).unwrap(), 3, "seq continues after max on disk");
    wal.close().unwrap();
  }
}

#[test]
fn bit_flip_mid_log_is_corruption_and_reading_changes_nothing() {
  let dir = tempfile::tempdir().unwrap();
  {
    let wal = Wal::open(dir.path(), options("s1")).unwrap();
    for i in 0..5 {
      wal.append(write("a", format!("record number {i}").as_bytes())).unwrap();
    }
  }
  let segment = newest_segment(dir.path(), "s1");
  let mut bytes = fs::read(&segment).unwrap();
  let middle = bytes.len() / 2;
  bytes[middle] ^= 0x01;
  fs::write(&segment, &bytes).unwrap();

  let err = replay_session(dir.path(), "s1", 0, None).unwrap_err();
  assert_eq!(err.code(), "E_WAL_CORRUPT");
  assert!(err.to_string().contains(&segment.display().to_string()), "{err}");
  let v = verify_dir(dir.path()).unwrap();
  assert!(!v.ok());
  assert_eq!(v.corrupt.len(), 1);
  assert_eq!(Wal::open(dir.path(), options("s1")).err().unwrap().code(), "E_WAL_CORRUPT");
  assert_eq!(fs::read(&segment).unwrap(), bytes, "nothing on disk was modified");
}

#[test]
fn rotation_by_size_and_age_keeps_seq_order() {
  let dir = tempfile::tempdir().unwrap();
  let opts = WalOptions { segment_max_bytes: 4096, ..options("s1") };
  let wal = Wal::open(dir.path(), opts).unwrap();
  let payload = vec![7u8; 1000];
  for _ in 0..20 {
    wal.append(write("a", &payload)).unwrap();
  }
  let stats = wal.stats().unwrap();
  assert!(stats.segments >= 5, "{} segments", stats.segments);
  assert_eq!(stats.last_seq, 20);
  for s in &segment_paths(dir.path(), "s1") {
    assert!(fs::metadata(s).unwrap().len() <= 4096);
  }
  assert_eq!(wal.replay(0, None).unwrap().iter().map(|r| r.seq).collect::<Vec<_>>(), (1..=20).collect::<Vec<_>>());
  drop(wal);

  let opts = WalOptions { segment_max_age: Duration::from_millis(30), ..options("s2") };
  let wal = Wal::open(dir.path(), opts).unwrap();
  let created_by = now_ms(); // the new segment's creation time is at most this
  wal.append(write("a", b"x")).unwrap();
  wait_for_clock_past(created_by + 30);
  wal.append(write("a", b"y")).unwrap();
  assert_eq!(wal.stats().unwrap().segments, 2);
}

#[test]
fn a_record_larger_than_a_segment_still_fits_alone() {
  let dir = tempfile::tempdir().unwrap();
  let wal = Wal::open(dir.path(), WalOptions { segment_max_bytes: 4096, ..options("s1") }).unwrap();
  wal.append(write("a", b"small")).unwrap();
  wal.append(write("a", &vec![1u8; 10_000])).unwrap();
  wal.append(write("a", b"small again")).unwrap();
  assert_eq!(wal.replay(0, None).unwrap().len(), 3);
  assert_eq!(wal.stats().unwrap().segments, 3);
}

#[test]
fn second_writer_of_a_session_waits_then_gets_locked() {
  let dir = tempfile::tempdir().unwrap();
  let first = Wal::open(dir.path(), options("s1")).unwrap();
  let started = Instant::now();
  let opts = WalOptions { lock_timeout: Duration::from_millis(150), ..options("s1") };
  let err = Wal::open(dir.path(), opts.clone()).err().unwrap();
  assert_eq!(err.code(), "E_WAL_LOCKED");
  assert!(started.elapsed() >= Duration::from_millis(150));
  Wal::open(dir.path(), options("other")).unwrap();
  first.close().unwrap();
  Wal::open(dir.path(), opts).unwrap();
}

#[test]
fn bad_input_is_refused_before_a_seq_is_spent() {
  let dir = tempfile::tempdir().unwrap();
  let wal = Wal::open(dir.path(), options("s1")).unwrap();
  assert_eq!(
    wal.append(AppendRequest { op: "".into(), ..Default::default() }).unwrap_err().code(),
    "E_INVALID_ARGUMENT"
  );
  assert_eq!(wal.append(write("../x", b"")).unwrap_err().code(), "E_PATH_OUTSIDE_ROOT");
  assert_eq!(wal.append(write("/etc/passwd", b"")).unwrap_err().code(), "E_PATH_OUTSIDE_ROOT");
  assert_eq!(wal.append(write("a", &vec![0; format::MAX_PAYLOAD_BYTES])).unwrap_err().code(), "E_TOO_LARGE");
  assert_eq!(wal.append(write("a", b"ok")).unwrap(), 1);
  for bad in ["", "../up", ".hidden", "a/b", "x".repeat(200).as_str()] {
    assert_eq!(Wal::open(dir.path(), options(bad)).err().unwrap().code(), "E_INVALID_ARGUMENT", "{bad:?}");
  }
}

#[test]
fn consolidation_last_write_wins_logs_conflicts_and_prunes_applied_segments() {
  let dir = tempfile::tempdir().unwrap();
  let target = tempfile::tempdir().unwrap();
  let a = Wal::open(dir.path(), WalOptions { segment_max_bytes: 4096, ..options("a") }).unwrap();
  let b = Wal::open(dir.path(), options("b")).unwrap();
  a.append(write("notes/shared.md", b"from a (old)")).unwrap();
  a.append(write("only-a.md", b"a1")).unwrap();
  wait_for_clock_past(now_ms());
  b.append(write("notes/shared.md", b"from b (new)")).unwrap();
  a.append(write("only-a.md", b"a2")).unwrap();
  b.append(AppendRequest { op: "note".into(), path: Some("ignored.md".into()), ..Default::default() }).unwrap();
  b.append(write("gone.md", b"soon deleted")).unwrap();
  b.append(AppendRequest { op: "delete".into(), path: Some("gone.md".into()), ..Default::default() }).unwrap();
  for _ in 0..10 {
    a.append(write("big.bin", &[9u8; 1500])).unwrap();
  }
  let segments_before = a.stats().unwrap().segments;
  assert!(segments_before > 2);

  let result = consolidate(dir.path(), target.path(), &ConsolidateOptions::default()).unwrap();
  assert_eq!(fs::read(target.path().join("notes/shared.md")).unwrap(), b"from b (new)");
  assert_eq!(fs::read(target.path().join("only-a.md")).unwrap(), b"a2");
  assert!(!target.path().join("gone.md").exists());
  assert!(!target.path().join("ignored.md").exists());
  assert_eq!(result.records, 17);
  assert_eq!(result.applied, 4);
  assert_eq!(result.conflicts.len(), 1);
  let conflict = &result.conflicts[0];
  assert_eq!(
    (conflict.path.as_str(), conflict.winner.session_id.as_str(), conflict.overwritten.session_id.as_str()),
    ("notes/shared.md", "b", "a")
  );
  assert_eq!(conflict.overwritten.hash, hex::encode(Sha256Digest::digest(b"from a (old)")));
  let logged = fs::read_to_string(dir.path().join(consolidate::CONFLICT_LOG)).unwrap();
  assert_eq!(logged.lines().count(), 1);
  assert!(logged.contains(&conflict.overwritten.hash));
  assert!(result.pruned_segments >= segments_before - 1 - 1);
  assert_eq!(a.stats().unwrap().segments, segments_before - result.pruned_segments);

  // A late record with an older timestamp than the stored winner loses, even in a later run.
  let late = consolidate::tests_support::late_record_loses(dir.path(), target.path());
  assert_eq!(late.applied, 0);
  assert_eq!(late.conflicts.len(), 1);
  assert_eq!(fs::read(target.path().join("notes/shared.md")).unwrap(), b"from b (new)");

  // Unconsolidated records are never pruned; the next run picks up where the last stopped.
  a.append(write("only-a.md", b"a3")).unwrap();
  let again = consolidate(dir.path(), target.path(), &ConsolidateOptions::default()).unwrap();
  assert_eq!(again.records, 1);
  assert_eq!(fs::read(target.path().join("only-a.md")).unwrap(), b"a3");
}

#[test]
fn consolidation_never_writes_through_a_symlink_and_refuses_corrupt_state() {
  let dir = tempfile::tempdir().unwrap();
  let target = tempfile::tempdir().unwrap();
  let elsewhere = tempfile::tempdir().unwrap();
  std::os::unix::fs::symlink(elsewhere.path(), target.path().join("link")).unwrap();
  let wal = Wal::open(dir.path(), options("s")).unwrap();
  wal.append(write("link/evil.md", b"x")).unwrap();
  wal.append(write("link/sub/deeper.md", b"x")).unwrap();
  wal.append(write("fine.md", b"ok")).unwrap();
  // The records that lead through the symlink are dead letters; the rest is applied.
  let result = consolidate(dir.path(), target.path(), &ConsolidateOptions::default()).unwrap();
  let codes: Vec<_> = result.dead_letters.iter().map(|d| (d.path.as_str(), d.code)).collect();
  assert_eq!(codes, [("link/evil.md", "E_PATH_OUTSIDE_ROOT"), ("link/sub/deeper.md", "E_PATH_OUTSIDE_ROOT")]);
  assert_eq!(result.applied, 1);
  assert_eq!(fs::read(target.path().join("fine.md")).unwrap(), b"ok");
  assert_eq!(fs::read_dir(elsewhere.path()).unwrap().count(), 0, "nothing created outside the target");

  fs::write(dir.path().join(consolidate::STATE_FILE), b"{not json").unwrap();
  let err = consolidate(dir.path(), target.path(), &ConsolidateOptions::default()).unwrap_err();
  assert_eq!(err.code(), "E_STATE_CORRUPT");
  assert_eq!(fs::read(dir.path().join(consolidate::STATE_FILE)).unwrap(), b"{not json");
}

use sha2::Digest as _;
use sha2::Sha256 as Sha256Digest;

#[test]
fn space_written_ahead_is_not_damage_after_a_crash() {
  let dir = tempfile::tempdir().unwrap();
  let wal = Wal::open(dir.path(), options("s1")).unwrap();
  for i in 0..10 {
    wal.append(write("a", format!("record {i}").as_bytes())).unwrap();
  }
  let segment = newest_segment(dir.path(), "s1");
  let on_disk = fs::metadata(&segment).unwrap().len();
  let used = wal.stats().unwrap().bytes;
  assert!(on_disk >= used + PREALLOCATE_CHUNK / 2, "{on_disk} on disk for {used} used");

  // What a crash leaves: the segment with its zero-filled tail, copied while the writer is live.
  let crashed = tempfile::tempdir().unwrap();
  let copy = session_dir(crashed.path(), "s1");
  fs::create_dir_all(&copy).unwrap();
  fs::copy(&segment, copy.join(segment.file_name().unwrap())).unwrap();
  let v = verify_dir(crashed.path()).unwrap();
  assert!(v.ok() && v.truncated_tails.is_empty(), "{v:?}");
  let reopened = Wal::open(crashed.path(), options("s1")).unwrap();
  assert!(reopened.stats().unwrap().truncated_tail.is_none());
  assert_eq!(reopened.append(write("a", b"after")).unwrap(), 11);
  assert_eq!(reopened.replay(0, None).unwrap().len(), 11);
  reopened.close().unwrap();

  // A closed log ends at its last record.
  wal.close().unwrap();
  assert_eq!(fs::metadata(&segment).unwrap().len(), used);
}

#[test]
fn batch_and_none_sync_modes_store_the_same_records() {
  for sync in [SyncMode::Batch, SyncMode::None] {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::open(dir.path(), WalOptions { sync, segment_max_bytes: 4096, ..options("s") }).unwrap();
    let seqs: Vec<u64> = (0..30).map(|i| wal.append(write("p", &[i as u8; 300])).unwrap()).collect();
    assert_eq!(seqs, (1..=30).collect::<Vec<_>>());
    // Batch mode syncs on its own within the interval; wait past it to exercise that path.
    std::thread::sleep(BATCH_SYNC_INTERVAL * 2);
    assert_eq!(wal.stats().unwrap().sync, sync);
    wal.close().unwrap();
    let records = replay_session(dir.path(), "s", 0, None).unwrap();
    assert_eq!(records.len(), 30, "{sync:?}");
    assert!(records.iter().enumerate().all(|(i, r)| r.data.as_deref() == Some(&[i as u8; 300][..])));
    assert!(verify_dir(dir.path()).unwrap().ok());
  }
}

// ---------------------------------------------------------------------------------------------
// Hostile file systems: what sits where a state file belongs is never followed or written.

fn mkfifo(path: &Path) {
  rustix::fs::mknodat(rustix::fs::CWD, path, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o600), 0)
    .unwrap();
}

/// A file outside every root a test uses, whose bytes must never change.
struct Victim {
  _dir: tempfile::TempDir,
  path: PathBuf,
  bytes: Vec<u8>,
}

impl Victim {
  fn new(bytes: &[u8]) -> Victim {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("victim");
    fs::write(&path, bytes).unwrap();
    Victim { _dir: dir, path, bytes: bytes.to_vec() }
  }

  fn dir(&self) -> &Path {
    self.path.parent().unwrap()
  }

  fn assert_untouched(&self) {
    assert_eq!(fs::read(&self.path).unwrap(), self.bytes, "the file outside was modified");
    let names: Vec<_> = fs::read_dir(self.dir()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, [std::ffi::OsString::from("victim")], "something was created outside");
  }
}

/// Bytes that look like a segment with a torn tail: what the old `Wal::open` "repaired" by
/// truncating whatever file a symlink named like a newer segment pointed to.
fn torn_segment_bytes(first_seq: u64) -> Vec<u8> {
  let mut bytes = format::encode_header(&SegmentHeader { created_ms: 1, first_seq }).to_vec();
  let record = Record {
    seq: first_seq,
    ts_ms: 1,
    session_id: "s1".into(),
    op: "write".into(),
    path: Some("a".into()),
    meta: None,
    data: Some(b"outside".to_vec()),
  };
  format::encode_record(&record, &mut bytes);
  bytes.extend_from_slice(&format::RECORD_MAGIC.to_le_bytes());
  bytes.extend_from_slice(b"\x40\0\0\0torn");
  bytes
}

/// How long [`within`] waits before calling a call hung: minutes, because a loaded machine is slow,
/// not hung (and a guard, never what a test passes on).
const WATCHDOG: Duration = Duration::from_secs(300);

/// Runs `f` on another thread and fails the test if it has not returned within `limit` (a FIFO
/// opened for reading blocks until a writer comes: `unblock` plays that writer afterwards so a
/// hung thread does not outlive the test).
fn within<T: Send + 'static>(limit: Duration, unblock: &Path, f: impl FnOnce() -> T + Send + 'static) -> T {
  let (tx, rx) = mpsc::channel();
  std::thread::spawn(move || {
    let _ = tx.send(f());
  });
  match rx.recv_timeout(limit) {
    Ok(value) => value,
    Err(_) => {
      use std::os::unix::fs::OpenOptionsExt;
      let _ = fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(unblock);
      panic!("hung for {limit:?} (blocked in open(2) of a FIFO?)");
    }
  }
}

#[test]
fn a_symlink_named_like_a_newer_segment_is_never_followed_nor_truncated() {
  let dir = tempfile::tempdir().unwrap();
  {
    let wal = Wal::open(dir.path(), options("s1")).unwrap();
    wal.append(write("a", b"kept")).unwrap();
  }
  let victim = Victim::new(&torn_segment_bytes(99));
  let planted = session_dir(dir.path(), "s1").join(reader::segment_file_name(99));
  std::os::unix::fs::symlink(&victim.path, &planted).unwrap();

  let err = Wal::open(dir.path(), options("s1")).err().unwrap();
  assert_eq!(err.code(), "E_NOT_REGULAR_FILE", "{err}");
  assert!(err.to_string().contains("symlink"), "{err}");
  assert_eq!(read_dir_merged(dir.path()).unwrap_err().code(), "E_NOT_REGULAR_FILE");
  assert_eq!(replay_session(dir.path(), "s1", 0, None).unwrap_err().code(), "E_NOT_REGULAR_FILE");
  let v = verify_dir(dir.path()).unwrap();
  assert!(!v.ok());
  assert_eq!(v.records, 1, "the real segment is still read");
  assert_eq!(
    v.corrupt.iter().map(|p| (p.code, p.segment.clone())).collect::<Vec<_>>(),
    [("E_NOT_REGULAR_FILE", planted)]
  );
  let target = tempfile::tempdir().unwrap();
  assert_eq!(
    consolidate(dir.path(), target.path(), &ConsolidateOptions::default()).unwrap_err().code(),
    "E_NOT_REGULAR_FILE"
  );
  victim.assert_untouched();
}

#[test]
fn anything_but_a_regular_file_named_like_a_segment_is_refused_without_opening_it() {
  let victim = Victim::new(&torn_segment_bytes(7));
  type Plant<'a> = (&'a str, &'a dyn Fn(&Path));
  let plant: [Plant; 5] = [
    ("symlink to a directory", &|p| std::os::unix::fs::symlink(victim.dir(), p).unwrap()),
    ("dangling symlink", &|p| std::os::unix::fs::symlink(victim.dir().join("missing"), p).unwrap()),
    ("symlink loop", &|p| std::os::unix::fs::symlink(p, p).unwrap()),
    ("directory", &|p| fs::create_dir(p).unwrap()),
    ("fifo", &|p| mkfifo(p)),
  ];
  for (what, make) in plant {
    let dir = tempfile::tempdir().unwrap();
    {
      let wal = Wal::open(dir.path(), options("s1")).unwrap();
      wal.append(write("a", b"kept")).unwrap();
    }
    let planted = session_dir(dir.path(), "s1").join(reader::segment_file_name(7));
    make(&planted);
    let root = dir.path().to_path_buf();
    let v = within(WATCHDOG, &planted, move || verify_dir(&root).map(|v| (v.ok(), v.corrupt)));
    let (ok, corrupt) = v.unwrap();
    assert!(!ok, "{what}");
    assert_eq!(corrupt[0].code, "E_NOT_REGULAR_FILE", "{what}");
    let root = dir.path().to_path_buf();
    let opened = within(WATCHDOG, &planted, move || Wal::open(&root, options("s1")).err());
    assert_eq!(opened.unwrap().code(), "E_NOT_REGULAR_FILE", "{what}");
    let root = dir.path().to_path_buf();
    let read = within(WATCHDOG, &planted, move || read_dir_merged(&root).map(|r| r.len()));
    assert_eq!(read.unwrap_err().code(), "E_NOT_REGULAR_FILE", "{what}");
    // Another session of the same directory is unaffected.
    Wal::open(dir.path(), options("s2")).unwrap().append(write("b", b"x")).unwrap();
  }
  victim.assert_untouched();
}

#[test]
fn symlinked_sessions_or_session_directory_is_refused_and_nothing_is_created_outside() {
  let outside = tempfile::tempdir().unwrap();
  // `sessions` itself a symlink.
  let dir = tempfile::tempdir().unwrap();
  std::os::unix::fs::symlink(outside.path(), dir.path().join(reader::SESSIONS_DIR)).unwrap();
  assert_eq!(Wal::open(dir.path(), options("s1")).err().unwrap().code(), "E_PATH_OUTSIDE_ROOT");
  assert_eq!(read_dir_merged(dir.path()).unwrap_err().code(), "E_PATH_OUTSIDE_ROOT");
  let v = verify_dir(dir.path()).unwrap();
  assert_eq!(v.corrupt.iter().map(|p| p.code).collect::<Vec<_>>(), ["E_PATH_OUTSIDE_ROOT"]);
  let target = tempfile::tempdir().unwrap();
  assert_eq!(
    consolidate(dir.path(), target.path(), &ConsolidateOptions::default()).unwrap_err().code(),
    "E_PATH_OUTSIDE_ROOT"
  );
  // `sessions/<id>` a symlink (to a directory holding a real session of another log).
  let dir = tempfile::tempdir().unwrap();
  Wal::open(outside.path(), options("s1")).unwrap().append(write("a", b"elsewhere")).unwrap();
  let before: Vec<_> = segment_paths(outside.path(), "s1").iter().map(|p| fs::read(p).unwrap()).collect();
  fs::create_dir(dir.path().join(reader::SESSIONS_DIR)).unwrap();
  std::os::unix::fs::symlink(session_dir(outside.path(), "s1"), session_dir(dir.path(), "s1")).unwrap();
  assert_eq!(Wal::open(dir.path(), options("s1")).err().unwrap().code(), "E_PATH_OUTSIDE_ROOT");
  assert_eq!(read_dir_merged(dir.path()).unwrap_err().code(), "E_PATH_OUTSIDE_ROOT");
  assert_eq!(verify_dir(dir.path()).unwrap().corrupt[0].code, "E_PATH_OUTSIDE_ROOT");
  let after: Vec<_> = segment_paths(outside.path(), "s1").iter().map(|p| fs::read(p).unwrap()).collect();
  assert_eq!(before, after);
  assert_eq!(fs::read_dir(session_dir(outside.path(), "s1")).unwrap().count(), 2, "a segment and LOCK, nothing new");
}

#[test]
fn a_lock_file_that_is_not_a_regular_file_is_refused() {
  let victim = Victim::new(b"not a lock");
  for what in ["symlink", "fifo", "directory"] {
    let dir = tempfile::tempdir().unwrap();
    let sdir = session_dir(dir.path(), "s1");
    fs::create_dir_all(&sdir).unwrap();
    let lock = sdir.join(LOCK_FILE);
    match what {
      "symlink" => std::os::unix::fs::symlink(&victim.path, &lock).unwrap(),
      "fifo" => mkfifo(&lock),
      _ => fs::create_dir(&lock).unwrap(),
    }
    let root = dir.path().to_path_buf();
    let err = within(WATCHDOG, &lock, move || Wal::open(&root, options("s1")).err()).unwrap();
    assert_eq!(err.code(), "E_NOT_REGULAR_FILE", "{what}: {err}");
    assert_eq!(segment_paths(dir.path(), "s1").len(), 0, "{what}: nothing written without the lock");
  }
  victim.assert_untouched();
}

#[test]
fn an_empty_path_is_an_invalid_argument_everywhere() {
  let cwd_before: Vec<_> = fs::read_dir(".").unwrap().map(|e| e.unwrap().file_name()).collect();
  let dir = tempfile::tempdir().unwrap();
  assert_eq!(Wal::open(Path::new(""), options("s1")).err().unwrap().code(), "E_INVALID_ARGUMENT");
  assert_eq!(read_dir_merged(Path::new("")).unwrap_err().code(), "E_INVALID_ARGUMENT");
  assert_eq!(verify_dir(Path::new("")).unwrap_err().code(), "E_INVALID_ARGUMENT");
  let opts = ConsolidateOptions::default();
  assert_eq!(consolidate(Path::new(""), dir.path(), &opts).unwrap_err().code(), "E_INVALID_ARGUMENT");
  assert_eq!(consolidate(dir.path(), Path::new(""), &opts).unwrap_err().code(), "E_INVALID_ARGUMENT");
  let cwd_after: Vec<_> = fs::read_dir(".").unwrap().map(|e| e.unwrap().file_name()).collect();
  assert_eq!(cwd_before, cwd_after, "nothing was written into the current directory");
  assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn segments_are_read_at_most_max_segment_bytes() {
  let dir = tempfile::tempdir().unwrap();
  {
    let wal = Wal::open(dir.path(), options("s1")).unwrap();
    wal.append(write("a", b"kept")).unwrap();
  }
  // A sparse file: no disk space, but over the limit.
  let segment = newest_segment(dir.path(), "s1");
  fs::OpenOptions::new().write(true).open(&segment).unwrap().set_len(MAX_SEGMENT_BYTES + 1).unwrap();
  assert_eq!(Wal::open(dir.path(), options("s1")).err().unwrap().code(), "E_TOO_LARGE");
  assert_eq!(read_dir_merged(dir.path()).unwrap_err().code(), "E_TOO_LARGE");
  assert_eq!(verify_dir(dir.path()).unwrap().corrupt[0].code, "E_TOO_LARGE");
  assert_eq!(fs::metadata(&segment).unwrap().len(), MAX_SEGMENT_BYTES + 1, "nothing was cut");
  // And no writer makes one that large.
  let too_big = WalOptions { segment_max_bytes: MAX_SEGMENT_BYTES + 1, ..options("s2") };
  assert_eq!(Wal::open(dir.path(), too_big).err().unwrap().code(), "E_INVALID_ARGUMENT");
  Wal::open(dir.path(), WalOptions { segment_max_bytes: MAX_SEGMENT_BYTES, ..options("s3") }).unwrap();
}

/// Issue 11 item 11: a segment removed by pruning between a reader's listing and its open was
/// consolidated, and is skipped, never an `E_IO` ENOENT. Real threads, real unlinks.
#[test]
fn readers_racing_with_consolidation_and_pruning_never_fail() {
  let dir = tempfile::tempdir().unwrap();
  let target = tempfile::tempdir().unwrap();
  use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
  let stop = Arc::new(AtomicBool::new(false));
  let done: Arc<[AtomicU32; 2]> = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
  let readers: Vec<_> = (0..2)
    .map(|i| {
      let (dir, stop, done) = (dir.path().to_path_buf(), Arc::clone(&stop), Arc::clone(&done));
      std::thread::spawn(move || {
        let mut reads = 0u32;
        while !stop.load(Ordering::Relaxed) {
          if i == 0 {
            read_dir_merged(&dir).unwrap_or_else(|e| panic!("readWal after {reads} reads: {e}"));
          } else {
            let v = verify_dir(&dir).unwrap_or_else(|e| panic!("verifyWal after {reads} reads: {e}"));
            assert!(v.ok(), "{:?}", v.corrupt);
          }
          reads += 1;
          done[i].store(reads, Ordering::Relaxed);
        }
        reads
      })
    })
    .collect();
  let wal =
    Wal::open(dir.path(), WalOptions { segment_max_bytes: 4096, sync: SyncMode::None, ..options("s") }).unwrap();
  let mut pruned = 0;
  // 25 rounds at least, and on until each reader has finished a read that raced with them (a
  // reader thread that a busy machine scheduled late would otherwise see no round at all).
  let before: Vec<u32> = done.iter().map(|d| d.load(Ordering::Relaxed)).collect();
  let mut round = 0;
  while round < 25 || done.iter().zip(&before).any(|(d, &b)| d.load(Ordering::Relaxed) <= b) {
    round += 1;
    for i in 0..600 {
      wal.append(write(&format!("f{}", i % 7), format!("round {round} record {i}").as_bytes())).unwrap();
    }
    pruned += consolidate(dir.path(), target.path(), &ConsolidateOptions::default()).unwrap().pruned_segments;
  }
  stop.store(true, Ordering::Relaxed);
  let reads: Vec<u32> = readers.into_iter().map(|r| r.join().unwrap()).collect();
  assert!(pruned >= 100, "{pruned} segments pruned");
  assert!(reads.iter().all(|&n| n > 0), "{reads:?}");
}

/// Why a reader once called a healthy live segment corrupt (`bad record magic` mid-segment):
/// a `read` is not atomic against a concurrent `write`, and the kernel may answer it in parts
/// (a page fault on the buffer, a preemption). Here the reader's read is split right after it
/// took the first two (still zero) bytes where the next record goes, and the real writer appends
/// two records before it reads on: the bytes it got are zeros, then the rest of one record, then
/// a whole valid one. Every reader of a live segment must see the records, never damage. The
/// split is deterministic (a seam in `fsutil`), no timing involved.
#[test]
fn a_read_overtaken_by_appends_is_a_write_in_progress_never_corruption() {
  let dir = tempfile::tempdir().unwrap();
  let target = tempfile::tempdir().unwrap();
  let wal = Arc::new(Wal::open(dir.path(), WalOptions { sync: SyncMode::None, ..options("s") }).unwrap());
  wal.append(write("a.md", b"first")).unwrap();
  let segment = newest_segment(dir.path(), "s");
  let mut appended = 1;
  let readers: [(&str, &dyn Fn() -> Result<usize>); 5] = [
    ("readWal", &|| read_dir_merged(dir.path()).map(|r| r.len())),
    ("replay", &|| replay_session(dir.path(), "s", 0, None).map(|r| r.len())),
    ("Wal.replay", &|| wal.replay(0, None).map(|r| r.len())),
    ("verifyWal", &|| {
      let v = verify_dir(dir.path())?;
      assert!(v.ok() && v.truncated_tails.is_empty(), "{v:?}");
      Ok(v.records)
    }),
    ("consolidateWal", &|| {
      let options = ConsolidateOptions { prune: false, ..Default::default() };
      consolidate(dir.path(), target.path(), &options).map(|c| c.records)
    }),
  ];
  for (name, read) in readers {
    let end = wal.stats().unwrap().bytes;
    let writer = Arc::clone(&wal);
    let _split = faults::split_read(
      &segment,
      end + 2,
      Box::new(move || {
        writer.append(write("b.md", b"appended while a reader reads")).unwrap();
        writer.append(write("c.md", b"and one more")).unwrap();
      }),
    );
    let seen = read().unwrap_or_else(|e| panic!("{name}: {} {e}", e.code()));
    appended += 2;
    // Both records were whole before the reader finished reading: it returns them.
    assert_eq!(seen, appended, "{name}");
    let mut on_disk = fs::read(&segment).unwrap();
    on_disk.truncate(wal.stats().unwrap().bytes as usize);
    assert_eq!(format::scan_segment(&on_disk).records.len(), appended, "{name}: the log itself is whole");
  }
}

/// Damage in the middle of the segment a writer is appending to is still reported, by every
/// reader, with its offset: the second look a reader takes at a suspicious range sees the same
/// bad bytes, and bytes a writer finished never change.
#[test]
fn damage_in_the_middle_of_a_live_segment_is_still_corruption_with_its_offset() {
  let dir = tempfile::tempdir().unwrap();
  let wal = Wal::open(dir.path(), WalOptions { sync: SyncMode::None, ..options("s") }).unwrap();
  wal.append(write("a.md", b"first")).unwrap();
  let second = wal.stats().unwrap().bytes;
  wal.append(write("b.md", b"second")).unwrap();
  wal.append(write("c.md", b"third")).unwrap();
  let segment = newest_segment(dir.path(), "s");
  // Flip one payload bit of the second record through another handle, while the writer holds
  // the segment open.
  use std::os::unix::fs::FileExt;
  let file = fs::OpenOptions::new().read(true).write(true).open(&segment).unwrap();
  let mut byte = [0u8; 1];
  file.read_exact_at(&mut byte, second + 20).unwrap();
  file.write_all_at(&[byte[0] ^ 0x04], second + 20).unwrap();

  let err = read_dir_merged(dir.path()).unwrap_err();
  assert_eq!(err.code(), "E_WAL_CORRUPT");
  assert!(err.to_string().contains(&format!("at byte {second}:")), "{err}");
  let v = verify_dir(dir.path()).unwrap();
  assert_eq!(v.corrupt.len(), 1, "{v:?}");
  assert_eq!((v.corrupt[0].offset, v.corrupt[0].reason.as_str()), (second, "checksum mismatch"));
  assert_eq!(wal.replay(0, None).unwrap_err().code(), "E_WAL_CORRUPT");
}

/// One 300-byte path component (appended by an older version, before paths were checked on
/// append), a target that is a directory, a parent that is a file, a FIFO where a file goes: each
/// record goes to the dead-letter file, the rest is applied, and the next run does not retry.
#[test]
fn records_that_cannot_be_applied_become_dead_letters_and_consolidation_goes_on() {
  let dir = tempfile::tempdir().unwrap();
  let target = tempfile::tempdir().unwrap();
  let long = "x".repeat(300);
  // Appending such a path is refused now...
  let wal = Wal::open(dir.path(), options("s")).unwrap();
  let err = wal.append(write(&format!("notes/{long}"), b"x")).unwrap_err();
  assert_eq!(err.code(), "E_INVALID_ARGUMENT");
  wal.append(write("first.md", b"1")).unwrap();
  wal.close().unwrap();
  // ... but an older log may hold one.
  let sdir = session_dir(dir.path(), "old");
  fs::create_dir_all(&sdir).unwrap();
  let mut bytes = format::encode_header(&SegmentHeader { created_ms: 1, first_seq: 1 }).to_vec();
  let old = |seq: u64, path: &str, data: &[u8]| Record {
    seq,
    ts_ms: now_ms(),
    session_id: "old".into(),
    op: "write".into(),
    path: Some(path.into()),
    meta: Some(r#"{"k":"v"}"#.into()),
    data: Some(data.to_vec()),
  };
  fs::create_dir_all(target.path().join("is-a-dir/child")).unwrap();
  fs::write(target.path().join("a-file"), b"plain").unwrap();
  mkfifo(&target.path().join("a-fifo"));
  for (seq, path) in
    [(1, format!("notes/{long}")), (2, "is-a-dir".into()), (3, "a-file/below.md".into()), (4, "a-fifo".into())]
  {
    format::encode_record(&old(seq, &path, b"dead data"), &mut bytes);
  }
  format::encode_record(&old(5, "second.md", b"2"), &mut bytes);
  fs::write(sdir.join(reader::segment_file_name(1)), bytes).unwrap();

  let root = dir.path().to_path_buf();
  let into = target.path().to_path_buf();
  let result =
    within(WATCHDOG, &target.path().join("a-fifo"), move || consolidate(&root, &into, &ConsolidateOptions::default()))
      .unwrap();
  assert_eq!(result.applied, 2);
  assert_eq!(fs::read(target.path().join("first.md")).unwrap(), b"1");
  assert_eq!(fs::read(target.path().join("second.md")).unwrap(), b"2");
  let letters: Vec<_> = result.dead_letters.iter().map(|d| (d.session_id.as_str(), d.seq, d.code)).collect();
  assert_eq!(
    letters,
    [
      ("old", 4, "E_NOT_REGULAR_FILE"),
      // A file where a directory belongs: ENOTDIR.
      ("old", 3, "E_IO"),
      ("old", 2, "E_NOT_REGULAR_FILE"),
      ("old", 1, "E_INVALID_ARGUMENT")
    ]
  );
  for letter in &result.dead_letters {
    assert!(!letter.reason.contains("dead data") && !letter.reason.contains("\"k\""), "{}", letter.reason);
  }
  assert_eq!(fs::read(target.path().join("a-file")).unwrap(), b"plain");
  assert!(fs::metadata(target.path().join("is-a-dir/child")).unwrap().is_dir());
  // The dead-letter file holds the whole record, so nothing is lost once its segment is pruned.
  let text = fs::read_to_string(dir.path().join(consolidate::DEAD_LETTER_LOG)).unwrap();
  let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
  assert_eq!(lines.len(), 4);
  assert_eq!(lines[3]["path"], format!("notes/{long}"));
  assert_eq!(lines[3]["dataHex"], hex::encode(b"dead data"));
  assert_eq!(lines[3]["metaJson"], r#"{"k":"v"}"#);
  assert_eq!(lines[3]["code"], "E_INVALID_ARGUMENT");

  // Handled: the next runs neither retry nor fail.
  let again = consolidate(dir.path(), target.path(), &ConsolidateOptions::default()).unwrap();
  assert_eq!((again.records, again.dead_letters.len()), (0, 0));
  let wal = Wal::open(dir.path(), options("s")).unwrap();
  wal.append(write("third.md", b"3")).unwrap();
  let third = consolidate(dir.path(), target.path(), &ConsolidateOptions::default()).unwrap();
  assert_eq!((third.applied, third.dead_letters.len()), (1, 0));
  assert_eq!(fs::read_to_string(dir.path().join(consolidate::DEAD_LETTER_LOG)).unwrap(), text);
}

#[test]
fn consolidation_state_files_that_are_not_regular_files_stop_it_before_any_change() {
  let victim = Victim::new(br#"{"version":1,"sessions":{},"paths":{}}"#);
  for name in [consolidate::STATE_FILE, consolidate::CONFLICT_LOG, consolidate::DEAD_LETTER_LOG, "consolidate.lock"] {
    for what in ["symlink", "fifo", "directory"] {
      let dir = tempfile::tempdir().unwrap();
      let target = tempfile::tempdir().unwrap();
      let wal = Wal::open(dir.path(), options("s")).unwrap();
      wal.append(write("a.md", b"a")).unwrap();
      let planted = dir.path().join(name);
      match what {
        "symlink" => std::os::unix::fs::symlink(&victim.path, &planted).unwrap(),
        "fifo" => mkfifo(&planted),
        _ => fs::create_dir(&planted).unwrap(),
      }
      let (root, into) = (dir.path().to_path_buf(), target.path().to_path_buf());
      let err =
        within(WATCHDOG, &planted, move || consolidate(&root, &into, &ConsolidateOptions::default()).err()).unwrap();
      assert_eq!(err.code(), "E_NOT_REGULAR_FILE", "{name} as {what}: {err}");
      assert_eq!(fs::read_dir(target.path()).unwrap().count(), 0, "{name} as {what}: nothing applied");
    }
  }
  victim.assert_untouched();
  // consolidation.json is read at most MAX_STATE_BYTES.
  let dir = tempfile::tempdir().unwrap();
  let target = tempfile::tempdir().unwrap();
  let state = fs::File::create(dir.path().join(consolidate::STATE_FILE)).unwrap();
  state.set_len(consolidate::MAX_STATE_BYTES + 1).unwrap();
  let err = consolidate(dir.path(), target.path(), &ConsolidateOptions::default()).unwrap_err();
  assert_eq!(err.code(), "E_TOO_LARGE");
}

#[test]
fn consolidation_removes_stale_temp_files_of_dead_processes_from_what_it_writes() {
  let dir = tempfile::tempdir().unwrap();
  let target = tempfile::tempdir().unwrap();
  // A process id that cannot be alive (above the kernel's pid_max limit of 2^22).
  let dead = ".NOTES.md.loa-tmp-4999999-0";
  let live = format!(".NOTES.md.loa-tmp-{}-999999", std::process::id());
  fs::create_dir_all(target.path().join("notes")).unwrap();
  for place in [target.path(), &target.path().join("notes"), dir.path(), &target.path().join("untouched")] {
    fs::create_dir_all(place).unwrap();
    fs::write(place.join(dead), b"half").unwrap();
    fs::write(place.join(&live), b"in progress").unwrap();
  }
  let wal = Wal::open(dir.path(), options("s")).unwrap();
  wal.append(write("top.md", b"t")).unwrap();
  wal.append(write("notes/a.md", b"a")).unwrap();
  consolidate(dir.path(), target.path(), &ConsolidateOptions::default()).unwrap();
  for place in [target.path(), &target.path().join("notes"), dir.path()] {
    assert!(!place.join(dead).exists(), "{}", place.display());
    assert!(place.join(&live).exists(), "a temp file of a live process is left alone");
  }
  assert!(target.path().join("untouched").join(dead).exists(), "only directories written are cleaned");
}

// ---------------------------------------------------------------------------------------------
// Fault injection: the disk refuses (EIO, ENOSPC) on every write path.

use crate::fsutil::faults::{self, Op};

fn fault_name(errno: i32) -> &'static str {
  if errno == libc::EIO {
    "EIO"
  } else {
    "ENOSPC"
  }
}

/// Checks that an error from a faulty disk is coded: the fault itself as `E_IO` with its
/// `osError`, or, with `sync: 'batch'` only, `E_WAL_CLOSED` once a failed background fsync
/// (of records already acknowledged) stopped the log. A durable append never meets a closed log
/// because of the disk.
fn assert_coded(err: &LoaError, errno: i32, context: &str, sync: SyncMode) {
  assert!(crate::error::ERROR_CODES.contains(&err.code()), "{context}: {err}");
  match err.code() {
    "E_IO" => assert_eq!(err.os_error_name(), Some(fault_name(errno)), "{context}: {err}"),
    "E_WAL_CLOSED" if sync != SyncMode::Always => {}
    other => panic!("{context}: unexpected {other}: {err}"),
  }
}

/// Appends while `op` fails `times` times after `skip` successes, then reopens: every
/// acknowledged record is there with its bytes, every record there is one that was appended
/// whole, and the log verifies and takes appends again.
fn appends_survive(ops: &[Op], errno: i32, skip: u32, times: u32, sync: SyncMode) -> usize {
  let context = format!("{ops:?} {} skip {skip} x{times} {sync:?}", fault_name(errno));
  let dir = tempfile::tempdir().unwrap();
  let opts = WalOptions { segment_max_bytes: 4096, sync, ..options("f") };
  let wal = Wal::open(dir.path(), opts.clone()).unwrap();
  let mut acked = BTreeMap::new();
  let mut tried = std::collections::HashSet::new();
  let mut failures = 0;
  {
    let _guards: Vec<_> = ops.iter().map(|&op| faults::inject(dir.path(), op, errno, skip, times)).collect();
    for i in 0..60usize {
      let data = format!("record {i};").repeat(1 + (i * 7) % 50).into_bytes();
      tried.insert(data.clone());
      match wal.append(write("p", &data)) {
        Ok(seq) => assert!(acked.insert(seq, data).is_none(), "{context}: seq {seq} twice"),
        Err(e) => {
          assert_coded(&e, errno, &context, sync);
          failures += 1;
        }
      }
    }
    let _ = wal.close();
  }
  drop(wal);
  let reopened = Wal::open(dir.path(), opts).unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
  let records = reopened.replay(0, None).unwrap_or_else(|e| panic!("{context}: replay: {e}"));
  let found: BTreeMap<u64, Vec<u8>> = records.iter().map(|r| (r.seq, r.data.clone().unwrap())).collect();
  for (seq, data) in &acked {
    assert_eq!(found.get(seq), Some(data), "{context}: acknowledged seq {seq} lost");
  }
  for (seq, data) in &found {
    assert!(tried.contains(data), "{context}: seq {seq} holds bytes never appended");
  }
  assert!(verify_dir(dir.path()).unwrap().ok(), "{context}");
  let next = reopened.append(write("p", b"after")).unwrap();
  assert!(next > found.keys().copied().max().unwrap_or(0), "{context}: seq reused");
  failures
}

#[test]
fn faults_on_every_append_path_lose_nothing_acknowledged() {
  for errno in [libc::EIO, libc::ENOSPC] {
    for ops in [
      &[Op::Write][..],
      &[Op::Sync],
      &[Op::Truncate],
      &[Op::SyncDir],
      &[Op::Write, Op::Truncate],
      &[Op::Sync, Op::Truncate],
    ] {
      let mut failures = 0;
      for skip in [0, 1, 2, 3, 5, 8, 13, 21] {
        for sync in [SyncMode::Always, SyncMode::Batch] {
          failures += appends_survive(ops, errno, skip, 2, sync);
        }
      }
      failures += appends_survive(ops, errno, 4, u32::MAX, SyncMode::Always);
      assert!(failures > 0, "{ops:?}: no fault was ever hit");
    }
  }
}

/// A failed fsync fails the records it covered with the disk's own error, and the same `Wal`
/// takes appends again once the disk does: after the last durable record, in a new segment,
/// with nothing that was refused ever showing up (also when cutting it off failed at first).
#[test]
fn a_failed_fsync_is_the_disks_error_and_the_next_append_reopens_the_log() {
  for (errno, name) in [(libc::EIO, "EIO"), (libc::ENOSPC, "ENOSPC"), (libc::EROFS, "EROFS")] {
    for truncate_failures in [0, 1, 2] {
      let context = format!("errno {errno}, {truncate_failures} failed truncates");
      let dir = tempfile::tempdir().unwrap();
      let wal = Wal::open(dir.path(), options("s")).unwrap();
      let first = wal.append(write("a", b"one")).unwrap();
      {
        // The append's fsync fails, then the reopen's on the next append, and cutting the
        // refused record off fails `truncate_failures` times (the first with the append itself).
        let _sync = faults::inject(dir.path(), Op::Sync, errno, 0, 2);
        let _cut = faults::inject(dir.path(), Op::Truncate, errno, 0, truncate_failures);
        for attempt in 0..2 + truncate_failures.saturating_sub(1) {
          let err = wal.append(write("a", format!("refused {attempt}").as_bytes())).unwrap_err();
          assert_eq!(err.code(), "E_IO", "{context}: {err}");
          assert_eq!(err.os_error_name(), Some(name), "{context}");
        }
      }
      assert!(!wal.is_closed(), "{context}");
      let next = wal.append(write("a", b"two")).unwrap();
      assert_eq!(next, first + 1, "{context}: the seq after the last durable record");
      assert_eq!(segment_paths(dir.path(), "s").len(), 2, "{context}: continued in a new segment");
      let expected = vec![(first, b"one".to_vec()), (next, b"two".to_vec())];
      let seen = |w: &Wal| -> Vec<(u64, Vec<u8>)> {
        w.replay(0, None).unwrap().into_iter().map(|r| (r.seq, r.data.unwrap())).collect()
      };
      assert_eq!(seen(&wal), expected, "{context}");
      drop(wal);
      assert!(verify_dir(dir.path()).unwrap().ok(), "{context}");
      let reopened = Wal::open(dir.path(), options("s")).unwrap();
      assert!(reopened.stats().unwrap().truncated_tail.is_none(), "{context}: nothing left to cut");
      assert_eq!(seen(&reopened), expected, "{context}");
      assert_eq!(reopened.append(write("a", b"three")).unwrap(), next + 1, "{context}");
    }
  }
}

#[test]
fn faults_while_repairing_on_open_change_nothing_acknowledged() {
  for errno in [libc::EIO, libc::ENOSPC] {
    for op in [Op::Truncate, Op::Sync, Op::Write] {
      let dir = tempfile::tempdir().unwrap();
      {
        let wal = Wal::open(dir.path(), options("s")).unwrap();
        wal.append(write("a", b"one")).unwrap();
        wal.append(write("a", b"two")).unwrap();
      }
      let segment = newest_segment(dir.path(), "s");
      let mut bytes = fs::read(&segment).unwrap();
      bytes.extend_from_slice(&format::RECORD_MAGIC.to_le_bytes());
      bytes.extend_from_slice(b"\x20\0\0\0half");
      fs::write(&segment, &bytes).unwrap();
      // A segment whose creation was cut short (header missing) needs a header write on open.
      let second = session_dir(dir.path(), "t");
      fs::create_dir_all(&second).unwrap();
      fs::write(second.join(reader::segment_file_name(1)), b"LOAW").unwrap();
      {
        let _guard = faults::inject(dir.path(), op, errno, 0, u32::MAX);
        for session in ["s", "t"] {
          match Wal::open(dir.path(), options(session)) {
            Ok(wal) => drop(wal),
            Err(e) => assert_coded(&e, errno, &format!("{op:?} open {session}"), SyncMode::Always),
          }
        }
      }
      let wal = Wal::open(dir.path(), options("s")).unwrap();
      let data: Vec<_> = wal.replay(0, None).unwrap().into_iter().map(|r| r.data.unwrap()).collect();
      assert_eq!(data, [b"one".to_vec(), b"two".to_vec()], "{op:?}");
      assert_eq!(wal.append(write("a", b"three")).unwrap(), 3);
      assert_eq!(Wal::open(dir.path(), options("t")).unwrap().append(write("b", b"x")).unwrap(), 1);
    }
  }
}

/// Consolidation under faults: every error is coded, no target file is ever partial, nothing
/// unapplied is pruned, and the next run without faults reaches exactly the fault-free result.
#[test]
fn faults_during_consolidation_leave_no_partial_file_and_lose_nothing() {
  let build = |dir: &Path| {
    let a = Wal::open(dir, WalOptions { segment_max_bytes: 4096, ..options("a") }).unwrap();
    let b = Wal::open(dir, options("b")).unwrap();
    a.append(write("shared.md", b"from a")).unwrap();
    wait_for_clock_past(now_ms());
    b.append(write("shared.md", b"from b")).unwrap();
    for i in 0..12u8 {
      a.append(write(&format!("dir/sub/{i}.bin"), &[i; 900])).unwrap();
    }
    b.append(write("deleted.md", b"gone")).unwrap();
    b.append(AppendRequest { op: "delete".into(), path: Some("deleted.md".into()), ..Default::default() }).unwrap();
    b.append(write("is-a-dir", b"dead letter")).unwrap();
  };
  let snapshot = |target: &Path| -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![target.to_path_buf()];
    while let Some(dir) = stack.pop() {
      for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
          stack.push(path.clone());
          out.insert(path.strip_prefix(target).unwrap().to_path_buf(), b"<dir>".to_vec());
        } else {
          out.insert(path.strip_prefix(target).unwrap().to_path_buf(), fs::read(&path).unwrap());
        }
      }
    }
    out
  };
  let expected = {
    let (dir, target) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    build(dir.path());
    fs::create_dir(target.path().join("is-a-dir")).unwrap();
    consolidate(dir.path(), target.path(), &ConsolidateOptions::default()).unwrap();
    snapshot(target.path())
  };
  for errno in [libc::EIO, libc::ENOSPC] {
    // (Truncate only ever runs after a failed append here, and then only as a best effort.)
    for op in [Op::Write, Op::Sync, Op::Rename, Op::SyncDir] {
      let mut failed_runs = 0;
      for skip in [0, 1, 2, 4, 7, 11, 16] {
        let context = format!("{op:?} {} skip {skip}", fault_name(errno));
        let (dir, target) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        build(dir.path());
        fs::create_dir(target.path().join("is-a-dir")).unwrap();
        let records_before = read_dir_merged(dir.path()).unwrap().len();
        let failed = {
          let _g1 = faults::inject(dir.path(), op, errno, skip, 1);
          let _g2 = faults::inject(target.path(), op, errno, skip, 1);
          consolidate(dir.path(), target.path(), &ConsolidateOptions::default()).err()
        };
        if let Some(e) = &failed {
          assert_coded(e, errno, &context, SyncMode::Always);
          failed_runs += 1;
        }
        for (path, bytes) in snapshot(target.path()) {
          assert_eq!(expected.get(&path), Some(&bytes), "{context}: {} is partial or unexpected", path.display());
        }
        if failed.is_some() {
          // Whatever was not recorded as applied is still in the log.
          let state = fs::read(dir.path().join(consolidate::STATE_FILE)).ok();
          if state.is_none() {
            assert_eq!(read_dir_merged(dir.path()).unwrap().len(), records_before, "{context}");
          }
        }
        consolidate(dir.path(), target.path(), &ConsolidateOptions::default())
          .unwrap_or_else(|e| panic!("{context}: retry: {e}"));
        assert_eq!(snapshot(target.path()), expected, "{context}");
        let conflicts = fs::read_to_string(dir.path().join(consolidate::CONFLICT_LOG)).unwrap();
        assert!(conflicts.lines().all(|l| serde_json::from_str::<Conflict>(l).is_ok()), "{context}: {conflicts}");
        let letters = fs::read_to_string(dir.path().join(consolidate::DEAD_LETTER_LOG)).unwrap();
        assert!(
          !letters.is_empty() && letters.lines().all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()),
          "{context}"
        );
      }
      assert!(failed_runs >= 3, "{op:?}: only {failed_runs} runs met the fault");
    }
  }
}

use crate::error::LoaError;
use std::collections::BTreeMap;

#[test]
fn a_segment_or_state_of_another_format_version_is_refused_and_never_repaired() {
  let dir = tempfile::tempdir().unwrap();
  {
    let wal = Wal::open(dir.path(), options("s1")).unwrap();
    wal.append(write("a", b"kept")).unwrap();
  }
  let segment = newest_segment(dir.path(), "s1");
  // A future writer's segment: same magic, version byte 2, records framed in a way this
  // version cannot parse (here: garbage after the header), which used to look like a torn tail.
  for tail in [&b""[..], &[0xAB; 57][..]] {
    let mut bytes = fs::read(&segment).unwrap()[..format::SEGMENT_HEADER_LEN].to_vec();
    bytes[7] = 2;
    bytes.extend_from_slice(tail);
    fs::write(&segment, &bytes).unwrap();
    assert_eq!(Wal::open(dir.path(), options("s1")).err().unwrap().code(), "E_WAL_CORRUPT");
    assert_eq!(replay_session(dir.path(), "s1", 0, None).unwrap_err().code(), "E_WAL_CORRUPT");
    assert!(!verify_dir(dir.path()).unwrap().ok());
    assert_eq!(fs::read(&segment).unwrap(), bytes, "the segment is left exactly as it was");
  }

  let other = tempfile::tempdir().unwrap();
  let target = tempfile::tempdir().unwrap();
  {
    let wal = Wal::open(other.path(), options("s")).unwrap();
    wal.append(write("x.md", b"x")).unwrap();
  }
  consolidate(other.path(), target.path(), &ConsolidateOptions::default()).unwrap();
  let state_path = other.path().join(consolidate::STATE_FILE);
  let state = fs::read_to_string(&state_path).unwrap();
  assert!(state.contains("\"version\": 2,"), "{state}");
  let newer = state.replace("\"version\": 2,", "\"version\": 99,");
  fs::write(&state_path, &newer).unwrap();
  let err = consolidate(other.path(), target.path(), &ConsolidateOptions::default()).unwrap_err();
  assert_eq!(err.code(), "E_STATE_CORRUPT");
  assert!(err.to_string().contains("version 99"), "{err}");
  assert_eq!(fs::read_to_string(&state_path).unwrap(), newer, "left untouched");
}

/// The race of [`a_read_overtaken_by_appends_is_a_write_in_progress_never_corruption`] in the
/// wild, for a loaded machine, run by hand (it proves nothing on an idle one, so it is not part of
/// the suite): `cargo test --lib stress_readers_of_live_segments -- --ignored --nocapture` while
/// other work keeps every core busy. One writer appends 60,000 small records as fast as it can
/// (256 KiB segments) while two readers read the whole log `STRESS_READS` times (150) each.
/// Before readers settled suspicious ranges, 2 runs of 12 on two busy cores failed with `bad
/// record magic`; none of 8 since.
#[test]
#[ignore = "stress test, run by hand on a loaded machine"]
fn stress_readers_of_live_segments() {
  use std::sync::atomic::{AtomicBool, Ordering};
  let dir = tempfile::tempdir().unwrap();
  let wal = Arc::new(
    Wal::open(dir.path(), WalOptions { segment_max_bytes: 256 * 1024, sync: SyncMode::None, ..options("s") }).unwrap(),
  );
  let stop = Arc::new(AtomicBool::new(false));
  let writer = {
    let (wal, stop) = (Arc::clone(&wal), Arc::clone(&stop));
    std::thread::spawn(move || {
      let mut i = 0u64;
      while !stop.load(Ordering::Relaxed) && i < 60_000 {
        wal.append(write("f", format!("record {i}").as_bytes())).unwrap();
        i += 1;
      }
      i
    })
  };
  let reads: u32 = std::env::var("STRESS_READS").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
  let readers: Vec<_> = (0..2)
    .map(|k| {
      let dir = dir.path().to_path_buf();
      std::thread::spawn(move || {
        let mut failures = Vec::new();
        for _ in 0..reads {
          if k == 0 {
            if let Err(e) = read_dir_merged(&dir) {
              failures.push(e.to_string());
            }
          } else {
            let v = verify_dir(&dir).unwrap();
            if !v.ok() {
              failures.push(format!("{:?}", v.corrupt[0].reason));
            }
          }
        }
        failures
      })
    })
    .collect();
  let failures: Vec<String> = readers.into_iter().flat_map(|r| r.join().unwrap()).collect();
  stop.store(true, Ordering::Relaxed);
  let appended = writer.join().unwrap();
  eprintln!("STRESS appended={appended} failures={} {:?}", failures.len(), failures.first());
  assert!(failures.is_empty());
}
