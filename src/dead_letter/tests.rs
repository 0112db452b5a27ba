use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use super::*;
use crate::fsutil::faults;
use crate::memory::StoreOptions;
use crate::wal::reader::{list_sessions, read_session};

fn workspace() -> tempfile::TempDir {
  tempfile::tempdir().unwrap()
}

fn queue(ws: &Path) -> DeadLetterQueue {
  DeadLetterQueue::new(ws, Some(1000))
}

fn store_options(ws: &Path) -> StoreOptions {
  StoreOptions { workspace_dir: ws.to_path_buf(), ..Default::default() }
}

/// What the binding hands `replay`: a store of the workspace per session.
fn stores(ws: &Path) -> impl Fn(&str) -> Result<MemoryStore> + '_ {
  move |session| MemoryStore::open(StoreOptions { session_id: session.into(), ..store_options(ws) })
}

/// An address made at run time, so that no personal-data-shaped literal sits in the repository.
fn planted_email() -> String {
  format!("dana.{}@example.com", std::process::id())
}

fn letter(session: &str, content: &str) -> NewDeadLetter {
  NewDeadLetter {
    session_id: session.into(),
    entry: Entry {
      confidence: Some(0.9),
      timestamp: Some("2026-01-02T10:00:00Z".into()),
      ..Entry::new(MemoryKind::Decision, content)
    },
    attempts: 3,
    error: Some(LetterError { code: "E_IO".into(), message: "write /x: No space left on device".into() }),
  }
}

/// WAL records that carry a memory, per memory path, across every session.
fn memory_writes(ws: &Path) -> BTreeMap<String, usize> {
  let wal = ws.join(".loa/wal");
  let mut out = BTreeMap::new();
  for session in list_sessions(&wal).unwrap() {
    for record in read_session(&wal, &session).unwrap().records {
      if record.op == "write" {
        *out.entry(record.path.clone().unwrap()).or_default() += 1;
      }
    }
  }
  out
}

#[test]
fn append_redacts_every_field_and_list_reads_it_back() {
  let ws = workspace();
  let email = planted_email();
  let mut new = letter("s1", &format!("We always mail the weekly report to {email} on Fridays"));
  new.entry.tags = vec![format!("for:{email}")];
  new.entry.metadata = Some(serde_json::json!({ email.clone(): { "cc": email.clone() } }));
  let stored = queue(ws.path()).append(new.clone(), &RedactOptions::default()).unwrap();
  assert_eq!(stored.version, FORMAT_VERSION);
  assert_eq!(stored.attempts, 3);
  assert!(!stored.blocked);
  assert!(stored.entry.content.as_deref().unwrap().contains("[REDACTED:EMAIL]"));
  assert!(stored.findings.iter().any(|f| f.field == "tags[0]"));
  assert!(stored.findings.iter().any(|f| f.field == "metadata.<key>"));

  let bytes = fs::read(ws.path().join(".loa/dead-letter.jsonl")).unwrap();
  let text = String::from_utf8(bytes).unwrap();
  assert!(!text.contains(&email), "the queue holds the planted address: {text}");
  assert_eq!(text.lines().count(), 1);

  let listing = queue(ws.path()).list().unwrap();
  assert_eq!(listing.letters, vec![stored.clone()]);
  assert!(listing.unreadable.is_empty());

  // The same capture appended again (a retry of the dead-lettering) has the same id and is
  // listed once.
  let again = queue(ws.path()).append(new, &RedactOptions::default()).unwrap();
  assert_eq!(again.id, stored.id);
  assert_eq!(queue(ws.path()).list().unwrap().letters.len(), 1);
}

#[test]
fn list_of_a_workspace_without_a_queue_is_empty_and_creates_nothing() {
  let ws = workspace();
  assert_eq!(queue(ws.path()).list().unwrap(), Listing::default());
  assert_eq!(queue(ws.path()).replay(&stores(ws.path())).unwrap(), ReplayReport::default());
  assert_eq!(fs::read_dir(ws.path()).unwrap().count(), 0);
  // With the directory there but no queue, a replay takes no lock (and makes no lock file).
  fs::create_dir(ws.path().join(DIR)).unwrap();
  assert_eq!(queue(ws.path()).replay(&stores(ws.path())).unwrap(), ReplayReport::default());
  assert_eq!(fs::read_dir(ws.path().join(DIR)).unwrap().count(), 0);
}

#[test]
fn replay_stores_once_and_a_second_replay_stores_nothing() {
  let ws = workspace();
  let q = queue(ws.path());
  let a =
    q.append(letter("s1", "We decided to deploy on Fridays after the standup"), &RedactOptions::default()).unwrap();
  let b =
    q.append(letter("s2", "We decided to rotate the staging keys every Monday"), &RedactOptions::default()).unwrap();

  let report = q.replay(&stores(ws.path())).unwrap();
  assert_eq!(report.count(Outcome::Stored), 2, "{report:?}");
  assert_eq!(report.remaining, 0);
  assert_eq!(report.results.iter().map(|r| r.id.clone()).collect::<Vec<_>>(), vec![a.id, b.id]);
  assert!(!ws.path().join(".loa/dead-letter.jsonl").exists(), "an empty queue leaves no file");
  let writes = memory_writes(ws.path());
  assert_eq!(writes.len(), 2);
  assert!(writes.values().all(|&n| n == 1));

  // Each memory keeps the session it was captured in.
  let sessions = list_sessions(&ws.path().join(".loa/wal")).unwrap();
  assert_eq!(sessions, vec!["s1".to_string(), "s2".to_string()]);

  assert_eq!(q.replay(&stores(ws.path())).unwrap(), ReplayReport::default());
  assert_eq!(memory_writes(ws.path()), writes);
}

#[test]
fn a_letter_whose_capture_is_already_stored_is_a_duplicate_and_is_removed() {
  let ws = workspace();
  let email = planted_email();
  let content = format!("Always send the invoice to {email} on the first of the month");
  // The original capture landed after all (or a replay was killed after storing it and before
  // rewriting the queue): the store already holds the memory.
  let store = MemoryStore::open(StoreOptions { session_id: "s1".into(), ..store_options(ws.path()) }).unwrap();
  let original = store.capture(letter("s1", &content).entry).unwrap();
  assert!(original.accepted);
  store.close().unwrap();

  let q = queue(ws.path());
  q.append(letter("s1", &content), &RedactOptions::default()).unwrap();
  let report = q.replay(&stores(ws.path())).unwrap();
  assert_eq!(report.count(Outcome::Duplicate), 1, "{report:?}");
  assert_eq!(report.remaining, 0);
  assert_eq!(memory_writes(ws.path()).values().sum::<usize>(), 1, "stored exactly once");
}

#[test]
fn a_letter_that_still_fails_stays_with_its_attempts_counted_then_is_stored_once_the_cause_is_gone() {
  let ws = workspace();
  let q = queue(ws.path());
  let original =
    q.append(letter("s1", "We decided to move the backups to 02:00 UTC"), &RedactOptions::default()).unwrap();
  // A file where the WAL directory belongs: the disk refuses every capture.
  fs::write(ws.path().join(".loa/wal"), b"not a directory").unwrap();

  let report = q.replay(&stores(ws.path())).unwrap();
  assert_eq!(report.count(Outcome::Failed), 1, "{report:?}");
  assert_eq!(report.remaining, 1);
  let listed = q.list().unwrap().letters;
  assert_eq!(listed.len(), 1);
  assert_eq!(listed[0].id, original.id);
  assert_eq!(listed[0].attempts, 4);
  assert_eq!(listed[0].first_failed_at, original.first_failed_at);
  assert_ne!(listed[0].error.as_ref().unwrap().code, "");

  fs::remove_file(ws.path().join(".loa/wal")).unwrap();
  let report = q.replay(&stores(ws.path())).unwrap();
  assert_eq!(report.count(Outcome::Stored), 1, "{report:?}");
  assert_eq!(report.results[0].attempts, 5);
  assert_eq!(memory_writes(ws.path()).values().sum::<usize>(), 1);
}

#[test]
fn blocked_and_rejected_letters_are_settled_without_storing() {
  let ws = workspace();
  let q = queue(ws.path());
  let body = "MIIEowIBAAKCAQEAuW3nWgTY7xKp0bqZ5uX2cFf0u9fR8JdKz5yQ2VbN7sP0aL3mD4tE6hG8jI1kM";
  let key = format!("-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----");
  let blocked = q.append(letter("s1", &format!("here is the deploy key {key}")), &RedactOptions::default()).unwrap();
  assert!(blocked.blocked);
  assert_eq!(blocked.entry.content, None);
  let text = fs::read_to_string(ws.path().join(".loa/dead-letter.jsonl")).unwrap();
  assert!(!text.contains(&body[..20]), "a blocked value reached the queue");
  q.append(letter("s1", "ok"), &RedactOptions::default()).unwrap(); // too short for the content gate

  let report = q.replay(&stores(ws.path())).unwrap();
  assert_eq!(report.count(Outcome::Blocked), 1, "{report:?}");
  assert_eq!(report.count(Outcome::Rejected), 1, "{report:?}");
  let rejected = report.results.iter().find(|r| r.outcome == Outcome::Rejected).unwrap();
  assert!(rejected.failed_gates.contains(&crate::gates::Gate::Content));
  assert_eq!(report.remaining, 0);
  assert!(memory_writes(ws.path()).is_empty());
}

#[test]
fn unreadable_lines_are_kept_byte_for_byte_and_reported_without_content() {
  let ws = workspace();
  let q = queue(ws.path());
  q.append(letter("s1", "We decided to deploy on Fridays after the standup"), &RedactOptions::default()).unwrap();
  let path = ws.path().join(".loa/dead-letter.jsonl");
  let secretish = "not json: the quick brown fox";
  let newer = r#"{"v":2,"id":"x","future":true}"#;
  let mut text = fs::read_to_string(&path).unwrap();
  text.push_str(&format!("{secretish}\n{newer}\n\n"));
  fs::write(&path, &text).unwrap();
  // A crash cut the next append short: it must stay a line of its own.
  fs::write(&path, format!("{text}{{\"v\":1,\"id\":\"tor")).unwrap();
  q.append(letter("s2", "We decided to rotate the staging keys every Monday"), &RedactOptions::default()).unwrap();

  let listing = q.list().unwrap();
  assert_eq!(listing.letters.len(), 2);
  let lines: Vec<usize> = listing.unreadable.iter().map(|u| u.line).collect();
  assert_eq!(lines, vec![2, 3, 5]);
  assert!(listing.unreadable[1].reason.contains("version 2"));
  for u in &listing.unreadable {
    assert!(!u.reason.contains("quick brown"), "{u:?}");
  }

  let report = q.replay(&stores(ws.path())).unwrap();
  assert_eq!(report.count(Outcome::Stored), 2);
  assert_eq!(report.unreadable.len(), 3);
  let left = fs::read_to_string(&path).unwrap();
  assert_eq!(left, format!("{secretish}\n{newer}\n{{\"v\":1,\"id\":\"tor\n"));
}

#[test]
fn lines_of_the_plugins_earlier_format_are_read_and_replayed() {
  let ws = workspace();
  fs::create_dir(ws.path().join(".loa")).unwrap();
  let legacy = serde_json::json!({
    "sessionId": "agent-main-s1-0123456789",
    "entry": { "agentId": "main", "timestamp": "2026-01-02T10:00:00.000Z", "type": "interaction",
               "content": "We always deploy on Fridays, mail [REDACTED:EMAIL]", "tags": ["user"] },
    "findings": [{ "kind": "email", "fingerprint": "0123abcd" }],
    "blocked": false,
    "attempts": 3,
    "error": { "code": "E_IO", "message": "open directory /w/.loa/wal: Not a directory (os error 20)" },
    "at": "2026-01-02T10:00:01.000Z"
  });
  fs::write(ws.path().join(".loa/dead-letter.jsonl"), format!("{legacy}\n")).unwrap();
  let listing = queue(ws.path()).list().unwrap();
  assert_eq!(listing.letters.len(), 1, "{listing:?}");
  let l = &listing.letters[0];
  assert_eq!((l.attempts, l.first_failed_at.as_str()), (3, "2026-01-02T10:00:01.000Z"));
  assert_eq!(l.findings[0].field, "content");
  let report = queue(ws.path()).replay(&stores(ws.path())).unwrap();
  assert_eq!(report.count(Outcome::Stored), 1, "{report:?}");
}

#[test]
fn a_symlink_fifo_or_directory_where_the_queue_belongs_is_refused_and_never_followed() {
  let ws = workspace();
  let outside = workspace();
  let target = outside.path().join("victim");
  fs::write(&target, b"keep me").unwrap();
  fs::create_dir(ws.path().join(".loa")).unwrap();
  let file = ws.path().join(".loa/dead-letter.jsonl");
  let q = queue(ws.path());
  let new = || letter("s1", "We decided to deploy on Fridays after the standup");

  symlink(&target, &file).unwrap();
  for err in [q.append(new(), &RedactOptions::default()).unwrap_err(), q.list().unwrap_err()] {
    assert_eq!(err.code(), "E_NOT_REGULAR_FILE", "{err}");
  }
  assert_eq!(q.replay(&stores(ws.path())).unwrap_err().code(), "E_NOT_REGULAR_FILE");
  assert_eq!(fs::read(&target).unwrap(), b"keep me");
  fs::remove_file(&file).unwrap();

  rustix::fs::mknodat(rustix::fs::CWD, &file, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o600), 0)
    .unwrap();
  assert_eq!(q.list().unwrap_err().code(), "E_NOT_REGULAR_FILE");
  assert_eq!(q.append(new(), &RedactOptions::default()).unwrap_err().code(), "E_NOT_REGULAR_FILE");
  fs::remove_file(&file).unwrap();

  fs::create_dir(&file).unwrap();
  assert_eq!(q.list().unwrap_err().code(), "E_NOT_REGULAR_FILE");
  fs::remove_dir(&file).unwrap();

  // The directory itself as a symlink: nothing is created outside.
  fs::remove_dir_all(ws.path().join(".loa")).unwrap();
  symlink(outside.path(), ws.path().join(".loa")).unwrap();
  assert_eq!(q.append(new(), &RedactOptions::default()).unwrap_err().code(), "E_PATH_OUTSIDE_ROOT");
  assert_eq!(q.list().unwrap_err().code(), "E_PATH_OUTSIDE_ROOT");
  assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 1);
}

#[test]
fn a_failed_append_leaves_no_partial_line() {
  let ws = workspace();
  let q = queue(ws.path());
  q.append(letter("s1", "We decided to deploy on Fridays after the standup"), &RedactOptions::default()).unwrap();
  let path = ws.path().join(".loa/dead-letter.jsonl");
  let before = fs::read(&path).unwrap();
  for (op, errno) in [(faults::Op::Write, libc::ENOSPC), (faults::Op::Sync, libc::EIO)] {
    let _guard = faults::inject(&ws.path().join(".loa"), op, errno, 0, 1);
    let err =
      q.append(letter("s2", "We decided to rotate the keys every Monday"), &RedactOptions::default()).unwrap_err();
    assert_eq!(err.code(), "E_IO", "{op:?}");
    assert_eq!(fs::read(&path).unwrap(), before, "{op:?}");
  }
}

#[test]
fn the_queue_never_grows_past_what_can_be_read_back() {
  let ws = workspace();
  fs::create_dir(ws.path().join(".loa")).unwrap();
  let path = ws.path().join(".loa/dead-letter.jsonl");
  fs::File::create(&path).unwrap().set_len(MAX_FILE_BYTES - 10).unwrap();
  let q = queue(ws.path());
  let err =
    q.append(letter("s1", "We decided to deploy on Fridays after the standup"), &RedactOptions::default()).unwrap_err();
  assert_eq!(err.code(), "E_TOO_LARGE");
  assert_eq!(fs::metadata(&path).unwrap().len(), MAX_FILE_BYTES - 10);
  fs::File::options().write(true).open(&path).unwrap().set_len(MAX_FILE_BYTES + 1).unwrap();
  assert_eq!(q.list().unwrap_err().code(), "E_TOO_LARGE");
}

#[test]
fn bad_letters_are_refused_with_codes_that_carry_no_content() {
  let ws = workspace();
  let q = queue(ws.path());
  let email = planted_email();
  let mut bad_session = letter("../s1", "We decided to deploy on Fridays");
  bad_session.entry.content = format!("mail {email}");
  let err = q.append(bad_session, &RedactOptions::default()).unwrap_err();
  assert_eq!(err.code(), "E_INVALID_ARGUMENT");
  // A kind is an enum by the time it reaches the queue; naming one that does not exist fails
  // where the text is parsed, without repeating it.
  let err2 = MemoryKind::parse(&email).unwrap_err();
  assert_eq!(err2.code(), "E_INVALID_ARGUMENT");
  for e in [err, err2] {
    assert!(!e.to_string().contains(&email), "{e}");
  }
  assert!(!ws.path().join(".loa/dead-letter.jsonl").exists());
}

#[test]
fn ids_are_stable_and_tampered_ids_are_not_trusted() {
  let a = letter_id(
    "s1",
    &LetterEntry {
      memory_type: "decision".into(),
      content: Some("x".into()),
      tags: vec![],
      agent_id: None,
      confidence: Some(0.9),
      timestamp: Some("2026-01-02T10:00:00.000Z".into()),
      metadata: None,
    },
  )
  .unwrap();
  assert_eq!(a.len(), 64);
  let ws = workspace();
  let q = queue(ws.path());
  let stored =
    q.append(letter("s1", "We decided to deploy on Fridays after the standup"), &RedactOptions::default()).unwrap();
  let path = ws.path().join(".loa/dead-letter.jsonl");
  let text = fs::read_to_string(&path).unwrap().replace(&stored.id, &"0".repeat(64));
  fs::write(&path, text).unwrap();
  let listing = q.list().unwrap();
  assert!(listing.letters.is_empty());
  assert_eq!(listing.unreadable.len(), 1);
}

#[test]
fn a_first_append_the_disk_refuses_leaves_no_queue_file_behind() {
  let ws = workspace();
  let q = queue(ws.path());
  let path = ws.path().join(".loa/dead-letter.jsonl");
  for (op, errno) in [(faults::Op::Write, libc::ENOSPC), (faults::Op::Sync, libc::EIO)] {
    let _guard = faults::inject(&ws.path().join(".loa"), op, errno, 0, 1);
    let err =
      q.append(letter("s1", "We decided to rotate the keys every Monday"), &RedactOptions::default()).unwrap_err();
    assert_eq!(err.code(), "E_IO", "{op:?}");
    assert!(!path.exists(), "{op:?}: no empty queue file left behind");
    assert_eq!(q.list().unwrap(), Listing::default());
  }
  q.append(letter("s1", "We decided to rotate the keys every Monday"), &RedactOptions::default()).unwrap();
  assert_eq!(q.list().unwrap().letters.len(), 1);
}

#[test]
fn a_queue_in_another_directory_is_appended_listed_and_replayed_there() {
  let ws = workspace();
  let elsewhere = tempfile::tempdir().unwrap();
  let far = elsewhere.path().join("letters");
  let q = queue(ws.path()).in_dir(Some(far.clone()));
  assert_eq!(q.list().unwrap(), Listing::default());
  q.append(letter("s1", "We decided to deploy on Fridays after the standup"), &RedactOptions::default()).unwrap();
  assert!(far.join(FILE_NAME).is_file());
  assert_eq!(q.path(), far.join(FILE_NAME));
  assert!(!ws.path().join(".loa/dead-letter.jsonl").exists());
  let report = q.replay(&stores(ws.path())).unwrap();
  assert_eq!(report.count(Outcome::Stored), 1);
  assert!(!far.join(FILE_NAME).exists());

  // Relative: below the workspace, never through a symlink.
  let rel = queue(ws.path()).in_dir(Some("state/letters".into()));
  rel.append(letter("s1", "We decided to keep the runbook in the repository"), &RedactOptions::default()).unwrap();
  assert!(ws.path().join("state/letters").join(FILE_NAME).is_file());
  symlink(elsewhere.path(), ws.path().join("link")).unwrap();
  let linked = queue(ws.path()).in_dir(Some("link/letters".into()));
  let err = linked.append(letter("s1", "x".repeat(40).as_str()), &RedactOptions::default()).unwrap_err();
  assert_eq!(err.code(), "E_PATH_OUTSIDE_ROOT");
  let up = queue(ws.path()).in_dir(Some("../letters".into()));
  assert_eq!(up.list().unwrap_err().code(), "E_PATH_OUTSIDE_ROOT");
}
