//! Tampering with any field of any entry (nested details included), deleting or reordering
//! lines, removing segments, torn tails, rotation, keys.

use std::fs::{self, OpenOptions};
use std::io::Write;

use serde_json::json;

use super::*;

fn event(i: u64) -> AuditEvent {
  AuditEvent {
    action: format!("test.event{}", i % 3),
    actor: [Actor::System, Actor::User, Actor::Automated][(i % 3) as usize],
    details: Some(json!({ "i": i, "nested": { "deep": [1, { "x": format!("v{i}") }], "flag": i.is_multiple_of(2) } })),
  }
}

fn small(key: Option<&[u8]>) -> AuditOptions {
  AuditOptions { max_segment_bytes: 1024, hmac_key: key.map(|k| Zeroizing::new(k.to_vec())), ..Default::default() }
}

fn kinds(v: &AuditVerification) -> Vec<String> {
  v.problems.iter().map(|p| p.kind.clone()).collect()
}

fn lines_of(dir: &Path) -> Vec<(PathBuf, Vec<String>)> {
  list_segments(dir)
    .unwrap()
    .into_iter()
    .map(|(_, p)| {
      let text = fs::read_to_string(&p).unwrap();
      (p, text.lines().map(str::to_owned).collect())
    })
    .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
  let mut text = lines.join("\n");
  if !lines.is_empty() {
    text.push('\n');
  }
  fs::write(path, text).unwrap();
}

#[test]
fn chain_continues_across_rotations_and_segment_names_never_collide() {
  let tmp = tempfile::tempdir().unwrap();
  let log = AuditLog::open(tmp.path(), small(None)).unwrap();
  let mut last = Head { seq: 0, hash: GENESIS.into() };
  for i in 1..=40 {
    last = log.append(&event(i)).unwrap();
    assert_eq!(last.seq, i);
  }
  let segments = list_segments(tmp.path()).unwrap();
  assert!(segments.len() >= 5, "rotated ({} segments)", segments.len());
  for (seq, path) in &segments {
    assert!(fs::metadata(path).unwrap().len() <= 1024);
    let first: Value = serde_json::from_str(fs::read_to_string(path).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(first["seq"], *seq);
  }
  let v = log.verify(Some(&last)).unwrap();
  assert!(v.ok, "{:?}", v.problems);
  assert_eq!((v.entries, v.segments), (40, segments.len() as u64));
  assert_eq!(v.head.as_ref(), Some(&last));
  // A second handle continues the same chain.
  let other = AuditLog::open(tmp.path(), small(None)).unwrap();
  assert_eq!(other.append(&event(41)).unwrap().seq, 41);
  assert_eq!(log.append(&event(42)).unwrap().seq, 42, "the first handle notices the other's append");
  assert!(verify(tmp.path(), None, None).unwrap().ok);
}

#[test]
fn editing_any_field_of_any_entry_is_detected() {
  let tmp = tempfile::tempdir().unwrap();
  let log = AuditLog::open(tmp.path(), small(None)).unwrap();
  for i in 1..=12 {
    log.append(&event(i)).unwrap();
  }
  let edits: Vec<(&str, Value)> = vec![
    ("/seq", json!(99)),
    ("/ts", json!("2001-01-01T00:00:00.000Z")),
    ("/action", json!("something.else")),
    ("/actor", json!("user")),
    ("/details/i", json!(-1)),
    ("/details/nested/deep/1/x", json!("forged")),
    ("/details/nested/flag", json!(null)),
    ("/prev", json!(GENESIS)),
    ("/hash", json!(GENESIS)),
    ("/alg", json!("none")),
  ];
  for (path, original_lines) in lines_of(tmp.path()) {
    for n in 0..original_lines.len() {
      for (pointer, replacement) in &edits {
        let mut entry: Value = serde_json::from_str(&original_lines[n]).unwrap();
        let Some(slot) = entry.pointer_mut(pointer) else {
          continue;
        };
        if slot == replacement {
          continue;
        }
        *slot = replacement.clone();
        let mut lines = original_lines.clone();
        lines[n] = crate::jcs::to_string(&entry).unwrap();
        write_lines(&path, &lines);
        let v = verify(tmp.path(), None, None).unwrap();
        assert!(!v.ok, "{pointer} of {} line {} undetected", path.display(), n + 1);
        assert!(
          v.problems.iter().any(|p| p.line == n as u64 + 1 || p.line == n as u64 + 2),
          "{pointer}: {:?}",
          v.problems
        );
      }
      // Adding a member to details, and removing details altogether.
      let mut entry: Value = serde_json::from_str(&original_lines[n]).unwrap();
      entry["details"]["added"] = json!(true);
      let mut lines = original_lines.clone();
      lines[n] = crate::jcs::to_string(&entry).unwrap();
      write_lines(&path, &lines);
      assert_eq!(kinds(&verify(tmp.path(), None, None).unwrap()), ["hash"]);
      entry.as_object_mut().unwrap().remove("details");
      lines[n] = crate::jcs::to_string(&entry).unwrap();
      write_lines(&path, &lines);
      assert_eq!(kinds(&verify(tmp.path(), None, None).unwrap()), ["hash"]);
    }
    write_lines(&path, &original_lines);
  }
  assert!(verify(tmp.path(), None, None).unwrap().ok);
}

#[test]
fn every_byte_flip_of_a_segment_is_detected() {
  let tmp = tempfile::tempdir().unwrap();
  let log = AuditLog::open(tmp.path(), small(None)).unwrap();
  for i in 1..=3 {
    log.append(&event(i)).unwrap();
  }
  let (path, lines) = lines_of(tmp.path()).remove(0);
  let original = fs::read(&path).unwrap();
  for i in 0..original.len() - 1 {
    let mut bytes = original.clone();
    bytes[i] ^= 0x01;
    fs::write(&path, &bytes).unwrap();
    let v = verify(tmp.path(), None, None).unwrap();
    assert!(!v.ok, "byte {i} of {} undetected", original.len());
  }
  // The final newline: flipping it makes the last line torn (an unacknowledged append), which
  // is reported as such.
  let mut bytes = original.clone();
  *bytes.last_mut().unwrap() ^= 0x01;
  fs::write(&path, &bytes).unwrap();
  let v = verify(tmp.path(), None, None).unwrap();
  assert_eq!(v.torn_tail.as_ref().map(|t| t.line), Some(lines.len() as u64));
  assert_eq!(v.entries, 2);
}

#[test]
fn deleting_reordering_inserting_lines_and_removing_segments_are_detected() {
  let tmp = tempfile::tempdir().unwrap();
  let log = AuditLog::open(tmp.path(), small(None)).unwrap();
  let mut heads = Vec::new();
  for i in 1..=30 {
    heads.push(log.append(&event(i)).unwrap());
  }
  let segments = lines_of(tmp.path());
  let (path, lines) = &segments[1];
  // Delete each line in turn.
  for n in 0..lines.len() {
    let mut edited = lines.clone();
    edited.remove(n);
    write_lines(path, &edited);
    let v = verify(tmp.path(), None, None).unwrap();
    assert!(!v.ok, "deleting line {n}");
    assert!(kinds(&v).contains(&"chain".to_string()) || kinds(&v).contains(&"segment".to_string()), "{:?}", v.problems);
  }
  // Swap neighbours.
  for n in 0..lines.len() - 1 {
    let mut edited = lines.clone();
    edited.swap(n, n + 1);
    write_lines(path, &edited);
    let v = verify(tmp.path(), None, None).unwrap();
    assert!(kinds(&v).contains(&"chain".to_string()), "swapping {n}: {:?}", v.problems);
  }
  // Duplicate a line.
  let mut edited = lines.clone();
  edited.insert(1, lines[0].clone());
  write_lines(path, &edited);
  assert!(kinds(&verify(tmp.path(), None, None).unwrap()).contains(&"seq".to_string()));
  write_lines(path, lines);
  assert!(verify(tmp.path(), None, None).unwrap().ok);
  // Remove the first segment, then a middle one.
  let first = fs::read(&segments[0].0).unwrap();
  fs::remove_file(&segments[0].0).unwrap();
  let v = verify(tmp.path(), None, None).unwrap();
  assert!(v.problems.iter().any(|p| p.kind == "seq" && p.detail.contains("starts at seq")), "{:?}", v.problems);
  fs::write(&segments[0].0, first).unwrap();
  let middle = fs::read(&segments[2].0).unwrap();
  fs::remove_file(&segments[2].0).unwrap();
  assert!(kinds(&verify(tmp.path(), None, None).unwrap()).contains(&"chain".to_string()));
  fs::write(&segments[2].0, middle).unwrap();
  // Cutting entries off the end: invisible to the chain, visible against a remembered head.
  let (last_path, last_lines) = segments.last().unwrap();
  write_lines(last_path, &last_lines[..last_lines.len() - 1]);
  assert!(verify(tmp.path(), None, None).unwrap().ok);
  let v = verify(tmp.path(), None, Some(heads.last().unwrap())).unwrap();
  assert_eq!(kinds(&v), ["head"]);
  assert!(verify(tmp.path(), None, Some(&heads[20])).unwrap().ok, "an older head is still on the chain");
}

#[test]
fn torn_tail_is_cut_on_open_and_reported() {
  let tmp = tempfile::tempdir().unwrap();
  let log = AuditLog::open(tmp.path(), AuditOptions::default()).unwrap();
  log.append(&event(1)).unwrap();
  log.append(&event(2)).unwrap();
  drop(log);
  let (_, path) = list_segments(tmp.path()).unwrap().remove(0);
  let before = fs::metadata(&path).unwrap().len();
  let mut f = OpenOptions::new().append(true).open(&path).unwrap();
  f.write_all(b"{\"action\":\"half a wri").unwrap();
  drop(f);
  let v = verify(tmp.path(), None, None).unwrap();
  assert!(v.ok, "a torn tail is not tampering");
  assert_eq!(v.torn_tail, Some(TornTail { segment: segment_name(1), line: 3, bytes: 21 }));
  assert_eq!(fs::metadata(&path).unwrap().len(), before + 21, "verify never writes");
  let log = AuditLog::open(tmp.path(), AuditOptions::default()).unwrap();
  assert_eq!(log.truncated_tail(), Some(TornTail { segment: segment_name(1), line: 3, bytes: 21 }));
  assert_eq!(fs::metadata(&path).unwrap().len(), before);
  assert_eq!(log.append(&event(3)).unwrap().seq, 3);
  assert!(verify(tmp.path(), None, None).unwrap().ok);
}

#[test]
fn hmac_key_is_required_to_verify_and_to_continue() {
  let tmp = tempfile::tempdir().unwrap();
  let key = b"0123456789abcdef0123456789abcdef";
  let log = AuditLog::open(tmp.path(), small(Some(key))).unwrap();
  for i in 1..=5 {
    log.append(&event(i)).unwrap();
  }
  assert!(verify(tmp.path(), Some(key), None).unwrap().ok);
  let v = verify(tmp.path(), None, None).unwrap();
  assert_eq!(kinds(&v), ["key"]);
  assert!(!verify(tmp.path(), Some(b"another key of 16+ bytes"), None).unwrap().ok);
  assert_eq!(
    AuditLog::open(tmp.path(), small(Some(b"another key of 16+ bytes"))).unwrap_err().code(),
    "E_SIGNATURE_INVALID"
  );
  assert_eq!(AuditLog::open(tmp.path(), small(None)).unwrap_err().code(), "E_SIGNATURE_INVALID");
  // Someone without the key edits an entry and recomputes the plain chain: detected.
  let (path, lines) = lines_of(tmp.path()).remove(0);
  let mut entry: Value = serde_json::from_str(&lines[0]).unwrap();
  entry["details"]["i"] = json!(1000);
  entry["alg"] = json!("sha256");
  let mut body = entry.clone();
  body.as_object_mut().unwrap().remove("hash");
  entry["hash"] = json!(entry_hash(&body, None).unwrap());
  let mut edited = lines.clone();
  edited[0] = crate::jcs::to_string(&entry).unwrap();
  write_lines(&path, &edited);
  let v = verify(tmp.path(), Some(key), None).unwrap();
  assert!(kinds(&v).contains(&"key".to_string()) && kinds(&v).contains(&"chain".to_string()), "{:?}", v.problems);
  assert_eq!(
    AuditOptions { hmac_key: Some(Zeroizing::new(vec![1; 8])), ..Default::default() }.validate().unwrap_err().code(),
    "E_INVALID_ARGUMENT"
  );
}

#[test]
fn a_tampered_last_entry_stops_appends_and_bad_input_is_refused() {
  let tmp = tempfile::tempdir().unwrap();
  let log = AuditLog::open(tmp.path(), AuditOptions::default()).unwrap();
  log.append(&event(1)).unwrap();
  let (path, lines) = lines_of(tmp.path()).remove(0);
  write_lines(&path, &[lines[0].replace("test.event1", "test.eventX")]);
  assert_eq!(log.append(&event(2)).unwrap_err().code(), "E_SIGNATURE_INVALID");
  write_lines(&path, &["not json".to_string()]);
  assert_eq!(log.append(&event(2)).unwrap_err().code(), "E_AUDIT_CORRUPT");
  write_lines(&path, &lines);
  assert_eq!(log.append(&event(2)).unwrap().seq, 2);
  for action in ["", "a\nb", &"x".repeat(257)] {
    let e = AuditEvent { action: action.into(), actor: Actor::User, details: None };
    assert_eq!(log.append(&e).unwrap_err().code(), "E_INVALID_ARGUMENT");
  }
  let big = AuditEvent { action: "big".into(), actor: Actor::User, details: Some(json!("x".repeat(MAX_ENTRY_BYTES))) };
  assert_eq!(log.append(&big).unwrap_err().code(), "E_TOO_LARGE");
  assert_eq!(Actor::parse("root").unwrap_err().code(), "E_INVALID_ARGUMENT");
  assert!(verify(tmp.path(), None, None).unwrap().ok);
}

#[test]
fn an_empty_newest_segment_left_by_a_crash_is_continued() {
  let tmp = tempfile::tempdir().unwrap();
  let log = AuditLog::open(tmp.path(), small(None)).unwrap();
  for i in 1..=3 {
    log.append(&event(i)).unwrap();
  }
  drop(log);
  fs::write(tmp.path().join(segment_name(4)), b"").unwrap();
  let log = AuditLog::open(tmp.path(), small(None)).unwrap();
  assert_eq!(log.append(&event(4)).unwrap().seq, 4);
  let v = verify(tmp.path(), None, None).unwrap();
  assert!(v.ok, "{:?}", v.problems);
  fs::write(tmp.path().join(segment_name(9)), b"").unwrap();
  assert_eq!(AuditLog::open(tmp.path(), small(None)).unwrap_err().code(), "E_AUDIT_CORRUPT");
}

#[test]
fn concurrent_appenders_in_threads_share_one_chain() {
  let tmp = tempfile::tempdir().unwrap();
  std::thread::scope(|s| {
    for t in 0..4 {
      let dir = tmp.path().to_path_buf();
      s.spawn(move || {
        let log = AuditLog::open(&dir, small(None)).unwrap();
        for i in 0..25 {
          log.append(&event(t * 100 + i)).unwrap();
        }
      });
    }
  });
  let v = verify(tmp.path(), None, None).unwrap();
  assert!(v.ok, "{:?}", v.problems);
  assert_eq!(v.entries, 100);
  assert_eq!(v.head.unwrap().seq, 100);
}

#[test]
fn a_segment_symlink_is_refused_and_the_file_it_points_to_is_never_truncated() {
  let tmp = tempfile::tempdir().unwrap();
  let dir = tmp.path().join("audit");
  fs::create_dir_all(&dir).unwrap();
  let outside = tmp.path().join("precious.txt");
  fs::write(&outside, b"precious bytes without a final newline").unwrap();
  std::os::unix::fs::symlink(&outside, dir.join(segment_name(1))).unwrap();
  let err = AuditLog::open(&dir, small(None)).unwrap_err();
  assert_eq!(err.code(), "E_NOT_REGULAR_FILE", "{err}");
  assert_eq!(fs::read(&outside).unwrap(), b"precious bytes without a final newline");
  let v = verify(&dir, None, None).unwrap();
  assert!(!v.ok && v.problems.iter().any(|p| p.kind == "segment"), "{:?}", v.problems);
  // The lock, too, is never created through a symlink.
  fs::remove_file(dir.join(segment_name(1))).unwrap();
  fs::remove_file(dir.join(".lock")).unwrap();
  std::os::unix::fs::symlink(tmp.path().join("lock-outside"), dir.join(".lock")).unwrap();
  assert_eq!(AuditLog::open(&dir, small(None)).unwrap_err().code(), "E_NOT_REGULAR_FILE");
  assert!(!tmp.path().join("lock-outside").exists());
}

#[test]
fn stale_temps_are_cleaned_when_appending() {
  let tmp = tempfile::tempdir().unwrap();
  let log = AuditLog::open(tmp.path(), small(None)).unwrap();
  log.append(&event(1)).unwrap();
  fs::write(tmp.path().join(".checkpoint.json.loa-tmp-2147483646-0"), b"half").unwrap();
  log.append(&event(2)).unwrap();
  assert!(!tmp.path().join(".checkpoint.json.loa-tmp-2147483646-0").exists());
}

#[test]
fn injected_faults_on_append_lose_nothing_acknowledged_and_leave_no_partial_line() {
  let tmp = tempfile::tempdir().unwrap();
  let log = AuditLog::open(tmp.path(), small(None)).unwrap();
  let mut heads = Vec::new();
  for i in 1..=5 {
    heads.push(log.append(&event(i)).unwrap());
  }
  for (op, errno) in [
    (crate::fsutil::faults::Op::Write, libc::EIO),
    (crate::fsutil::faults::Op::Write, libc::ENOSPC),
    (crate::fsutil::faults::Op::Sync, libc::EIO),
    (crate::fsutil::faults::Op::Sync, libc::ENOSPC),
  ] {
    let before = lines_of(tmp.path());
    {
      let _guard = crate::fsutil::faults::inject(tmp.path(), op, errno, 0, 1);
      let err = log.append(&event(99)).unwrap_err();
      assert_eq!(err.code(), "E_IO", "{op:?}");
    }
    assert_eq!(lines_of(tmp.path()), before, "{op:?}: no partial or unacknowledged line is visible");
    heads.push(log.append(&event(6)).unwrap());
    let v = verify(tmp.path(), None, Some(heads.last().unwrap())).unwrap();
    assert!(v.ok, "{op:?}: {:?}", v.problems);
    assert_eq!(v.entries, heads.len() as u64, "{op:?}: every acknowledged entry is there");
  }
}

fn ring(dir: &Path) -> crate::sign::keys::KeyRing {
  let ring = crate::sign::keys::KeyRing::with_seed(dir, Default::default(), None).unwrap();
  ring.generate().unwrap();
  ring
}

/// Cuts the last `n` lines off the newest segment.
fn cut_tail(dir: &Path, n: usize) {
  let (path, lines) = lines_of(dir).pop().unwrap();
  write_lines(&path, &lines[..lines.len() - n]);
}

#[test]
fn a_log_shorter_than_its_signed_checkpoint_is_truncated() {
  let tmp = tempfile::tempdir().unwrap();
  let dir = tmp.path().join("audit");
  let keys = ring(&tmp.path().join("keys"));
  let trusted = crate::sign::manifest::TrustedKey::from_ring(&keys).unwrap();
  let log = AuditLog::open(&dir, AuditOptions::default()).unwrap();
  for i in 1..=6 {
    log.append(&event(i)).unwrap();
  }
  let checkpoint = log.checkpoint(&keys).unwrap();
  assert_eq!((checkpoint.seq, checkpoint.version), (6, 1));
  assert_eq!(checkpoint.hash, log.head().unwrap().hash);
  let text = fs::read_to_string(dir.join(CHECKPOINT_FILE)).unwrap();
  assert_eq!(text, format!("{}\n", jcs::to_string(&serde_json::to_value(&checkpoint).unwrap()).unwrap()));
  let options = VerifyOptions { trusted_keys: Some(trusted.clone()), ..Default::default() };
  let v = verify_with(&dir, &options).unwrap();
  assert!(v.ok, "{:?}", v.problems);
  assert_eq!(v.checkpoint.as_ref(), Some(&checkpoint));
  // Appending past it is fine.
  log.append(&event(7)).unwrap();
  assert!(verify_with(&dir, &options).unwrap().ok);

  // Cut entries off the end: the chain alone is intact, the checkpoint shows the cut.
  cut_tail(&dir, 3);
  let v = verify(&dir, None, None).unwrap();
  assert_eq!(kinds(&v), ["truncated"], "{:?}", v.problems);
  assert!(v.problems[0].detail.contains("E_AUDIT_TRUNCATED"));
  let err = AuditLog::open(&dir, AuditOptions::default()).unwrap_err();
  assert_eq!(err.code(), "E_AUDIT_TRUNCATED", "{err}");
  let err = log.append(&event(8)).unwrap_err();
  assert_eq!(err.code(), "E_AUDIT_TRUNCATED", "nothing is appended to a cut log: {err}");
  assert_eq!(log.checkpoint(&keys).unwrap_err().code(), "E_AUDIT_TRUNCATED", "a cut log is not re-anchored");
}

#[test]
fn a_rewritten_or_forged_checkpoint_is_reported() {
  let tmp = tempfile::tempdir().unwrap();
  let dir = tmp.path().join("audit");
  let keys = ring(&tmp.path().join("keys"));
  let other = ring(&tmp.path().join("other-keys"));
  let log = AuditLog::open(&dir, small(None)).unwrap();
  for i in 1..=4 {
    log.append(&event(i)).unwrap();
  }
  log.checkpoint(&keys).unwrap();
  let original = fs::read(dir.join(CHECKPOINT_FILE)).unwrap();
  let with = |keys: &crate::sign::keys::KeyRing| VerifyOptions {
    trusted_keys: Some(crate::sign::manifest::TrustedKey::from_ring(keys).unwrap()),
    ..Default::default()
  };
  // Signed by a key the verifier does not trust.
  let v = verify_with(&dir, &with(&other)).unwrap();
  assert_eq!(kinds(&v), ["checkpoint"]);
  // Any changed byte: damaged (E_AUDIT_CORRUPT when opening, a problem when verifying).
  for i in 0..original.len() {
    let mut bytes = original.clone();
    bytes[i] ^= 0x01;
    fs::write(dir.join(CHECKPOINT_FILE), &bytes).unwrap();
    let v = verify_with(&dir, &with(&keys)).unwrap();
    assert!(!v.ok, "byte {i} undetected");
    assert!(v.problems.iter().all(|p| matches!(p.kind.as_str(), "checkpoint" | "truncated")), "{:?}", v.problems);
  }
  // An unknown member, even a harmless one, is refused.
  let mut value: Value = serde_json::from_slice(&original).unwrap();
  value["note"] = json!("x");
  fs::write(dir.join(CHECKPOINT_FILE), format!("{}\n", jcs::to_string(&value).unwrap())).unwrap();
  assert_eq!(AuditLog::open(&dir, small(None)).unwrap_err().code(), "E_AUDIT_CORRUPT");
  assert_eq!(kinds(&verify(&dir, None, None).unwrap()), ["checkpoint"]);
  // The entry at the checkpoint's seq rewritten (the chain recomputed): reported.
  fs::write(dir.join(CHECKPOINT_FILE), &original).unwrap();
  let (path, mut lines) = lines_of(&dir).pop().unwrap();
  let mut last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
  last["action"] = json!("rewritten");
  last.as_object_mut().unwrap().remove("hash");
  let hash = entry_hash(&last, None).unwrap();
  last["hash"] = json!(hash);
  *lines.last_mut().unwrap() = jcs::to_string(&last).unwrap();
  write_lines(&path, &lines);
  assert_eq!(kinds(&verify(&dir, None, None).unwrap()), ["checkpoint"]);
  assert_eq!(AuditLog::open(&dir, small(None)).unwrap_err().code(), "E_SIGNATURE_INVALID");
}

#[test]
fn a_failed_checkpoint_write_keeps_the_previous_one() {
  let tmp = tempfile::tempdir().unwrap();
  let dir = tmp.path().join("audit");
  let keys = ring(&tmp.path().join("keys"));
  let log = AuditLog::open(&dir, small(None)).unwrap();
  log.append(&event(1)).unwrap();
  let first = log.checkpoint(&keys).unwrap();
  log.append(&event(2)).unwrap();
  for op in [crate::fsutil::faults::Op::Write, crate::fsutil::faults::Op::Sync, crate::fsutil::faults::Op::Rename] {
    let _guard = crate::fsutil::faults::inject(&dir, op, libc::ENOSPC, 0, 1);
    assert_eq!(log.checkpoint(&keys).unwrap_err().code(), "E_IO", "{op:?}");
    let v = verify(&dir, None, None).unwrap();
    assert_eq!(v.checkpoint.as_ref(), Some(&first), "{op:?}");
    assert!(fs::read_dir(&dir).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().contains("loa-tmp")));
  }
  assert_eq!(log.checkpoint(&keys).unwrap().seq, 2);
}

#[test]
fn verification_streams_segments_and_reports_what_is_not_a_file() {
  let tmp = tempfile::tempdir().unwrap();
  let log = AuditLog::open(tmp.path(), small(None)).unwrap();
  for i in 1..=3 {
    log.append(&event(i)).unwrap();
  }
  // A line longer than any entry may be, in the middle: reported, and checking goes on.
  let (path, mut lines) = lines_of(tmp.path()).pop().unwrap();
  lines.insert(1, "x".repeat(MAX_ENTRY_BYTES + 10));
  write_lines(&path, &lines);
  let v = verify(tmp.path(), None, None).unwrap();
  assert!(v.problems.iter().any(|p| p.kind == "malformed" && p.line == 2), "{:?}", v.problems);
  assert_eq!(v.entries, 4);
  // A FIFO named like the next segment: reported, never opened (so never blocks).
  lines.remove(1);
  write_lines(&path, &lines);
  let fifo = tmp.path().join(segment_name(4));
  rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o600), 0)
    .unwrap();
  let v = verify(tmp.path(), None, None).unwrap();
  assert_eq!(kinds(&v), ["segment"], "{:?}", v.problems);
  assert_eq!(AuditLog::open(tmp.path(), small(None)).unwrap_err().code(), "E_NOT_REGULAR_FILE");
}

/// Every entry carries its format version; lines written before `v` existed read as version 1,
/// and a version this code does not know is reported and never continued.
#[test]
fn entries_carry_their_format_version_and_older_lines_still_read() {
  let dir = tempfile::tempdir().unwrap();
  let log = AuditLog::open(dir.path(), small(None)).unwrap();
  log.append(&event(1)).unwrap();
  log.append(&event(2)).unwrap();
  drop(log);
  let (path, lines) = lines_of(dir.path()).remove(0);
  for line in &lines {
    assert!(line.starts_with("{\"action\"") && line.contains(",\"v\":1}"), "{line}");
  }
  // The same chain as a version without `v` wrote it: hashes recomputed without the member.
  let mut prev = "0".repeat(64);
  let mut old = Vec::new();
  for line in &lines {
    let mut value: Value = serde_json::from_str(line).unwrap();
    let object = value.as_object_mut().unwrap();
    object.remove("v");
    object.remove("hash");
    object.insert("prev".into(), Value::String(prev.clone()));
    let hash = entry_hash(&value, None).unwrap();
    value.as_object_mut().unwrap().insert("hash".into(), Value::String(hash.clone()));
    old.push(String::from_utf8(jcs::to_vec(&value).unwrap()).unwrap());
    prev = hash;
  }
  write_lines(&path, &old);
  let v = verify(dir.path(), None, None).unwrap();
  assert!(v.ok, "{:?}", v.problems);
  let log = AuditLog::open(dir.path(), small(None)).unwrap();
  log.append(&event(3)).unwrap();
  assert!(verify(dir.path(), None, None).unwrap().ok);
  drop(log);

  // A newer version: reported, and the chain is not continued from it.
  let (path, mut lines) = lines_of(dir.path()).remove(0);
  let last = lines.pop().unwrap();
  let mut value: Value = serde_json::from_str(&last).unwrap();
  value.as_object_mut().unwrap().insert("v".into(), Value::from(2));
  value.as_object_mut().unwrap().remove("hash");
  let hash = entry_hash(&value, None).unwrap();
  value.as_object_mut().unwrap().insert("hash".into(), Value::String(hash));
  lines.push(String::from_utf8(jcs::to_vec(&value).unwrap()).unwrap());
  write_lines(&path, &lines);
  let v = verify(dir.path(), None, None).unwrap();
  assert!(kinds(&v).contains(&"malformed".to_string()), "{:?}", v.problems);
  let err = AuditLog::open(dir.path(), small(None)).and_then(|log| log.append(&event(4))).unwrap_err();
  assert_eq!(err.code(), "E_AUDIT_CORRUPT");
}
