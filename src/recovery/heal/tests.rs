use super::*;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) {
  let status = Command::new("git")
    .current_dir(dir)
    .env("GIT_CONFIG_NOSYSTEM", "1")
    .env("GIT_CONFIG_GLOBAL", "/dev/null")
    .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"])
    .args(args)
    .status()
    .unwrap();
  assert!(status.success(), "git {args:?}");
}

fn write(path: &Path, text: &str) {
  std::fs::create_dir_all(path.parent().unwrap()).unwrap();
  std::fs::write(path, text).unwrap();
}

fn options(ws: &Path) -> HealOptions {
  HealOptions { workspace_dir: ws.to_path_buf(), ..Default::default() }
}

/// A workspace that is a git repository with the state zone committed.
fn committed() -> tempfile::TempDir {
  let tmp = tempfile::tempdir().unwrap();
  let ws = tmp.path();
  write(&ws.join("grimoires/loa/NOTES.md"), "# committed notes\n");
  write(&ws.join(".beads/b-1.yaml"), "id: b-1\n");
  write(&ws.join("grimoires/loa/a2a/trajectory/impl-2026-11-26.jsonl"), "{\"v\":1}\n");
  git(ws, &["init", "-q"]);
  git(ws, &["add", "-A"]);
  git(ws, &["commit", "-q", "-m", "state"]);
  tmp
}

fn froms(r: &HealReport) -> Vec<(String, Option<HealSource>)> {
  r.items.iter().map(|i| (i.path.clone(), i.from)).collect()
}

#[test]
fn missing_files_come_back_from_git_head_and_check_only_writes_nothing() {
  let tmp = committed();
  let ws = tmp.path();
  std::fs::remove_file(ws.join("grimoires/loa/NOTES.md")).unwrap();
  std::fs::remove_dir_all(ws.join(".beads")).unwrap();
  std::fs::remove_file(ws.join("grimoires/loa/a2a/trajectory/impl-2026-11-26.jsonl")).unwrap();
  let mut check = options(ws);
  check.check_only = true;
  let r = heal(&check).unwrap();
  assert!(r.git_available);
  assert_eq!(r.exit_code(), 1);
  let expected = vec![
    ("grimoires/loa/NOTES.md".to_string(), Some(HealSource::Git)),
    (".beads".to_string(), None),
    (".beads/b-1.yaml".to_string(), Some(HealSource::Git)),
    ("grimoires/loa/a2a/trajectory".to_string(), None),
    ("grimoires/loa/a2a/trajectory/impl-2026-11-26.jsonl".to_string(), Some(HealSource::Git)),
  ];
  assert_eq!(froms(&r), expected);
  assert!(!ws.join("grimoires/loa/NOTES.md").exists() && !ws.join(".beads").exists(), "check-only wrote");

  let r = heal(&options(ws)).unwrap();
  assert_eq!((r.exit_code(), froms(&r)), (1, expected));
  assert_eq!(std::fs::read_to_string(ws.join("grimoires/loa/NOTES.md")).unwrap(), "# committed notes\n");
  assert_eq!(std::fs::read_to_string(ws.join(".beads/b-1.yaml")).unwrap(), "id: b-1\n");
  assert_eq!(heal(&options(ws)).unwrap().exit_code(), 0);
}

#[test]
fn a_non_empty_file_is_never_overwritten_and_an_empty_one_is_healed() {
  let tmp = committed();
  let ws = tmp.path();
  write(&ws.join("grimoires/loa/NOTES.md"), "# newer, uncommitted\n");
  write(&ws.join(".beads/b-1.yaml"), "");
  let r = heal(&options(ws)).unwrap();
  assert_eq!(std::fs::read_to_string(ws.join("grimoires/loa/NOTES.md")).unwrap(), "# newer, uncommitted\n");
  assert_eq!(std::fs::read_to_string(ws.join(".beads/b-1.yaml")).unwrap(), "id: b-1\n");
  assert_eq!(r.items[0].from, None);
  assert!(r.items.iter().any(|i| i.path == ".beads/b-1.yaml" && i.from == Some(HealSource::Git)));
}

#[test]
fn without_git_the_template_heals() {
  let tmp = tempfile::tempdir().unwrap();
  let ws = tmp.path();
  let r = heal(&options(ws)).unwrap();
  assert!(!r.git_available);
  assert_eq!(
    froms(&r),
    vec![
      ("grimoires/loa/NOTES.md".to_string(), Some(HealSource::Template)),
      (".beads".to_string(), Some(HealSource::Template)),
      ("grimoires/loa/a2a/trajectory".to_string(), Some(HealSource::Template)),
    ]
  );
  assert_eq!(std::fs::read_to_string(ws.join("grimoires/loa/NOTES.md")).unwrap(), crate::memory::notes::TEMPLATE);
  assert!(ws.join(".beads").is_dir() && ws.join("grimoires/loa/a2a/trajectory").is_dir());
  assert_eq!(heal(&options(ws)).unwrap().exit_code(), 0);
}

#[test]
fn a_symlink_in_place_of_notes_is_an_error_and_its_target_is_untouched() {
  let tmp = tempfile::tempdir().unwrap();
  let ws = tmp.path().join("ws");
  std::fs::create_dir_all(ws.join("grimoires/loa")).unwrap();
  let outside = tmp.path().join("outside.md");
  std::fs::write(&outside, "").unwrap();
  std::os::unix::fs::symlink(&outside, ws.join("grimoires/loa/NOTES.md")).unwrap();
  let r = heal(&options(&ws)).unwrap();
  assert_eq!(r.exit_code(), 2);
  assert!(r.items[0].error.as_deref().unwrap().starts_with("E_NOT_REGULAR_FILE"), "{:?}", r.items[0]);
  assert_eq!(std::fs::read(&outside).unwrap(), b"");
}
