use super::*;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};

fn mkfifo(path: &Path) {
  rustix::fs::mknodat(rustix::fs::CWD, path, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
}

#[test]
fn atomic_write_replaces_and_leaves_no_temp() {
  let dir = tempfile::tempdir().unwrap();
  let target = dir.path().join("state.json");
  write_file_atomic(&target, b"one", None).unwrap();
  write_file_atomic(&target, b"two", Some(0o600)).unwrap();
  assert_eq!(fs::read(&target).unwrap(), b"two");
  assert_eq!(fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o600);
  let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
  assert_eq!(names, vec![OsString::from("state.json")]);
}

#[test]
fn atomic_write_into_missing_directory_is_io_error_and_target_untouched() {
  let dir = tempfile::tempdir().unwrap();
  let err = write_file_atomic(&dir.path().join("nope/x"), b"x", None).unwrap_err();
  assert_eq!(err.code(), "E_IO");
}

#[test]
fn temp_names_fit_name_max_whatever_the_target() {
  let dir = tempfile::tempdir().unwrap();
  for len in [1usize, 64, 200, 236, 250, 255] {
    let name = "n".repeat(len);
    write_file_atomic(&dir.path().join(&name), b"x", None).unwrap();
    assert_eq!(fs::read(dir.path().join(&name)).unwrap(), b"x", "{len}");
  }
  // A multi-byte character is never cut in half in the temp name.
  let name = "é".repeat(127);
  let temp = temp_name(OsStr::new(&name));
  assert!(temp.len() <= 105 && std::str::from_utf8(temp.as_bytes()).is_ok());
  assert_eq!(temp_owner(&temp), Some(std::process::id()));
  let long = "x".repeat(256);
  assert_eq!(write_file_atomic(&dir.path().join(long), b"x", None).unwrap_err().code(), "E_INVALID_ARGUMENT");
}

#[test]
fn temp_names_are_recognised_and_nothing_else_is() {
  for (name, owner) in [
    (".NOTES.md.loa-tmp-123-4", Some(123)),
    (".NOTES.md.tmp-99-0", Some(99)),
    ("NOTES.md.loa-tmp-1-2", None),
    (".x.loa-tmp-1-", None),
    (".x.loa-tmp-a-1", None),
    ("NOTES.md", None),
  ] {
    assert_eq!(temp_owner(OsStr::new(name)), owner, "{name}");
  }
}

#[test]
fn relative_paths_cannot_escape() {
  let root = Path::new("/r");
  assert_eq!(join_relative(root, "a/./b").unwrap(), Path::new("/r/a/b"));
  for bad in ["../x", "a/../../x", "/etc/passwd", "a/..", "."] {
    assert_eq!(join_relative(root, bad).unwrap_err().code(), "E_PATH_OUTSIDE_ROOT", "{bad}");
  }
  assert_eq!(join_relative(root, "").unwrap_err().code(), "E_INVALID_ARGUMENT");
  assert_eq!(join_relative(root, &"a".repeat(256)).unwrap_err().code(), "E_INVALID_ARGUMENT");
  assert_eq!(join_relative(root, "a\0b").unwrap_err().code(), "E_INVALID_ARGUMENT");
}

#[test]
fn quarantine_keeps_bytes_and_never_replaces() {
  let dir = tempfile::tempdir().unwrap();
  let path = dir.path().join("learnings.json");
  fs::write(&path, b"{bad").unwrap();
  let first = quarantine(&path).unwrap();
  assert!(!path.exists());
  assert_eq!(fs::read(&first).unwrap(), b"{bad");
  assert!(first.file_name().unwrap().to_str().unwrap().starts_with("learnings.json.corrupt-"));
  fs::write(&path, b"{worse").unwrap();
  let second = quarantine(&path).unwrap();
  assert_ne!(first, second);
  assert_eq!(fs::read(&first).unwrap(), b"{bad");
  assert_eq!(fs::read(&second).unwrap(), b"{worse");
}

#[test]
fn symlink_escape_is_detected() {
  let root = tempfile::tempdir().unwrap();
  let elsewhere = tempfile::tempdir().unwrap();
  symlink(elsewhere.path(), root.path().join("link")).unwrap();
  let err = ensure_inside(root.path(), &root.path().join("link")).unwrap_err();
  assert_eq!(err.code(), "E_PATH_OUTSIDE_ROOT");
  ensure_inside(root.path(), root.path()).unwrap();
}

#[test]
fn non_regular_files_are_refused_and_never_written_through() {
  let root = tempfile::tempdir().unwrap();
  let outside = tempfile::tempdir().unwrap();
  let victim = outside.path().join("victim");
  fs::write(&victim, b"keep me").unwrap();
  let dir = StateDir::open_root(root.path()).unwrap();
  symlink(&victim, root.path().join("link")).unwrap();
  symlink(outside.path().join("missing"), root.path().join("dangling")).unwrap();
  symlink("loop", root.path().join("loop")).unwrap();
  mkfifo(&root.path().join("fifo"));
  fs::create_dir(root.path().join("dir")).unwrap();
  for (name, kind) in
    [("link", "symlink"), ("dangling", "symlink"), ("loop", "symlink"), ("fifo", "fifo"), ("dir", "directory")]
  {
    for how in [OpenMode::READ, OpenMode::READ_WRITE, OpenMode::CREATE, OpenMode::APPEND] {
      let err = dir.open_file(name, how).unwrap_err();
      assert_eq!(err.code(), "E_NOT_REGULAR_FILE", "{name} {how:?}: {err}");
      assert!(matches!(err, LoaError::NotRegularFile { kind: k, .. } if k == kind), "{name}: {err}");
    }
    assert_eq!(dir.read(name, 10).unwrap_err().code(), "E_NOT_REGULAR_FILE", "{name}");
    assert_eq!(dir.write_atomic(name, b"x", None).unwrap_err().code(), "E_NOT_REGULAR_FILE", "{name}");
    assert_eq!(dir.quarantine(name).unwrap_err().code(), "E_NOT_REGULAR_FILE", "{name}");
  }
  assert_eq!(fs::read(&victim).unwrap(), b"keep me");
  assert!(!outside.path().join("missing").exists());
  // The CREATE_NEW of a temp file never lands on a planted symlink either.
  assert_eq!(dir.open_file("dangling", OpenMode::CREATE_NEW).unwrap_err().code(), "E_IO");
}

#[test]
fn directories_below_the_root_are_never_symlinks_and_nothing_is_created_outside() {
  let root = tempfile::tempdir().unwrap();
  let outside = tempfile::tempdir().unwrap();
  symlink(outside.path(), root.path().join("sub")).unwrap();
  let dir = StateDir::open_root(root.path()).unwrap();
  assert_eq!(dir.descend(Path::new("sub/deeper/deepest"), true).unwrap_err().code(), "E_PATH_OUTSIDE_ROOT");
  assert_eq!(dir.subdir("sub").unwrap_err().code(), "E_PATH_OUTSIDE_ROOT");
  assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0, "nothing created outside");
  mkfifo(&root.path().join("pipe"));
  assert_eq!(dir.descend(Path::new("pipe/x"), true).unwrap_err().code(), "E_NOT_REGULAR_FILE");
  fs::write(root.path().join("plain"), b"a file where a directory belongs").unwrap();
  let err = dir.descend(Path::new("plain/x"), true).unwrap_err();
  assert_eq!((err.code(), err.os_error_name()), ("E_IO", Some("ENOTDIR")));
  let made = dir.descend(Path::new("a/b/c"), true).unwrap().unwrap();
  assert_eq!(made.path(), root.path().join("a/b/c"));
  assert!(dir.descend(Path::new("x/y"), false).unwrap().is_none());
  assert_eq!(dir.descend(Path::new("../x"), true).unwrap_err().code(), "E_PATH_OUTSIDE_ROOT");
}

#[test]
fn reads_are_bounded_even_when_the_file_grows() {
  let root = tempfile::tempdir().unwrap();
  fs::write(root.path().join("big"), vec![b'x'; 1000]).unwrap();
  let dir = StateDir::open_root(root.path()).unwrap();
  assert_eq!(dir.read("big", 1000).unwrap().unwrap().len(), 1000);
  let err = dir.read("big", 999).unwrap_err();
  assert_eq!(err.code(), "E_TOO_LARGE");
  assert!(dir.read("absent", 10).unwrap().is_none());
  // Grows after the size check: the bounded read still stops at max + 1.
  let file = dir.open_file("big", OpenMode::READ).unwrap();
  fs::OpenOptions::new().append(true).open(root.path().join("big")).unwrap().write_all_at_end(&[b'y'; 10]);
  assert_eq!(file.read_to_end_bounded(1005).unwrap_err().code(), "E_TOO_LARGE");
}

trait AppendAll {
  fn write_all_at_end(&mut self, data: &[u8]);
}
impl AppendAll for fs::File {
  fn write_all_at_end(&mut self, data: &[u8]) {
    std::io::Write::write_all(self, data).unwrap();
  }
}

#[test]
fn empty_and_nul_paths_are_refused() {
  assert_eq!(StateDir::open_root(Path::new("")).unwrap_err().code(), "E_INVALID_ARGUMENT");
  assert_eq!(StateDir::create_root(Path::new("")).unwrap_err().code(), "E_INVALID_ARGUMENT");
  assert_eq!(create_dir_durable(Path::new("")).unwrap_err().code(), "E_INVALID_ARGUMENT");
  assert_eq!(write_file_atomic(Path::new(""), b"x", None).unwrap_err().code(), "E_INVALID_ARGUMENT");
}

#[test]
fn stale_temps_of_dead_processes_are_cleaned_and_live_ones_kept() {
  let root = tempfile::tempdir().unwrap();
  let dir = StateDir::open_root(root.path()).unwrap();
  // A pid far above any pid_max is never alive.
  fs::write(root.path().join(".NOTES.md.loa-tmp-2147483646-0"), b"half").unwrap();
  fs::write(root.path().join(".NOTES.md.tmp-2147483646-1"), b"half").unwrap();
  let mine = format!(".NOTES.md.loa-tmp-{}-7", std::process::id());
  fs::write(root.path().join(&mine), b"in flight").unwrap();
  fs::write(root.path().join("NOTES.md"), b"real").unwrap();
  mkfifo(&root.path().join(".x.loa-tmp-2147483646-2"));
  assert_eq!(dir.clean_stale_temps().unwrap(), 2);
  let mut names: Vec<_> = dir.entries().unwrap().into_iter().map(|e| e.name.into_string().unwrap()).collect();
  names.sort();
  assert_eq!(names, vec![mine, ".x.loa-tmp-2147483646-2".into(), "NOTES.md".into()]);
}

#[test]
fn injected_faults_fail_the_write_and_leave_the_old_file() {
  let root = tempfile::tempdir().unwrap();
  let target = root.path().join("state.json");
  write_file_atomic(&target, b"old", None).unwrap();
  for (op, errno) in [(faults::Op::Write, libc::ENOSPC), (faults::Op::Sync, libc::EIO), (faults::Op::Rename, libc::EIO)]
  {
    let _guard = faults::inject(root.path(), op, errno, 0, 1);
    let err = write_file_atomic(&target, b"new", None).unwrap_err();
    assert_eq!(err.code(), "E_IO", "{op:?}");
    assert_eq!(fs::read(&target).unwrap(), b"old", "{op:?}");
    assert_eq!(fs::read_dir(root.path()).unwrap().count(), 1, "no temp file left after {op:?}");
  }
  write_file_atomic(&target, b"new", None).unwrap();
  assert_eq!(fs::read(&target).unwrap(), b"new");
}

#[test]
fn a_file_mode_is_at_most_0o7777() {
  assert_eq!(file_mode(0o600).unwrap(), 0o600);
  assert_eq!(file_mode(0o7777).unwrap(), 0o7777);
  for bad in [0o10000, u64::from(u32::MAX) + 0o600] {
    assert_eq!(file_mode(bad).unwrap_err().code(), "E_INVALID_ARGUMENT");
  }
}

#[test]
fn remove_tree_removes_below_without_following_symlinks() {
  let tmp = tempfile::tempdir().unwrap();
  let outside = tmp.path().join("outside");
  fs::create_dir_all(outside.join("keep")).unwrap();
  fs::write(outside.join("keep/file"), b"x").unwrap();
  let tree = tmp.path().join("root/tree");
  fs::create_dir_all(tree.join("a/b/c")).unwrap();
  fs::write(tree.join("a/b/c/f"), b"1").unwrap();
  fs::write(tree.join("top"), b"2").unwrap();
  symlink(&outside, tree.join("a/link-dir")).unwrap();
  symlink(outside.join("keep/file"), tree.join("link-file")).unwrap();
  mkfifo(&tree.join("a/fifo"));
  let root = StateDir::open_root(&tmp.path().join("root")).unwrap();
  assert!(root.remove_tree("tree").unwrap());
  assert!(!tree.exists());
  assert_eq!(fs::read(outside.join("keep/file")).unwrap(), b"x", "symlink targets are untouched");
  assert!(!root.remove_tree("tree").unwrap());
  fs::write(tmp.path().join("root/plain"), b"").unwrap();
  assert!(root.remove_tree("plain").is_err(), "a file is not a tree");
  symlink(&outside, tmp.path().join("root/alias")).unwrap();
  assert_eq!(root.remove_tree("alias").unwrap_err().code(), "E_PATH_OUTSIDE_ROOT");
  assert!(outside.join("keep/file").exists());
}

#[test]
fn exchange_swaps_two_directories_in_one_step() {
  let tmp = tempfile::tempdir().unwrap();
  fs::create_dir_all(tmp.path().join("a")).unwrap();
  fs::create_dir_all(tmp.path().join("b")).unwrap();
  fs::write(tmp.path().join("a/f"), b"from a").unwrap();
  fs::write(tmp.path().join("b/f"), b"from b").unwrap();
  let root = StateDir::open_root(tmp.path()).unwrap();
  root.exchange("a", "b").unwrap();
  assert_eq!(fs::read(tmp.path().join("a/f")).unwrap(), b"from b");
  assert_eq!(fs::read(tmp.path().join("b/f")).unwrap(), b"from a");
  assert!(root.exchange("a", "missing").unwrap_err().is_not_found());
}
