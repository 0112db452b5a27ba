//! Recovery against real directories, a real bare git repository and real child processes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;
use crate::fsutil::faults;
use crate::sign::keys::{KeyPolicy, KeyRing};
use crate::sign::manifest::{create_manifest, sign_manifest, write_manifest, ManifestOptions};

/// Test-only hooks compiled into the library's test build.
pub(crate) mod hooks {
  /// Variable naming a directory: a process with it set stops right before the swap, after
  /// writing `paused` there, until it is killed.
  pub const PAUSE_DIR: &str = "LOA_TEST_RECOVERY_PAUSE_DIR";

  /// Variable naming a directory: a process with it set stops between the two renames of the
  /// swap without `RENAME_EXCHANGE`, after writing `paused` there, until it is killed.
  pub const FALLBACK_PAUSE_DIR: &str = "LOA_TEST_RECOVERY_FALLBACK_PAUSE_DIR";

  pub fn between_fallback_renames() {
    if let Some(dir) = std::env::var_os(FALLBACK_PAUSE_DIR) {
      std::fs::write(std::path::Path::new(&dir).join("paused"), b"1").unwrap();
      loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
      }
    }
  }

  pub fn before_swap() {
    if let Some(dir) = std::env::var_os(PAUSE_DIR) {
      std::fs::write(std::path::Path::new(&dir).join("paused"), b"1").unwrap();
      loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
      }
    }
  }
}

const NOTES: &str = "# NOTES\n\n## Decision Log\n- kept\n";
const CHILD_VAR: &str = "LOA_RECOVERY_TEST_CHILD";
/// Set in a child: its file system "lacks" `RENAME_EXCHANGE` (the swap takes the two-rename path).
const NO_EXCHANGE_VAR: &str = "LOA_RECOVERY_TEST_NO_EXCHANGE";

struct Fixture {
  _tmp: tempfile::TempDir,
  ws: PathBuf,
  /// The pinned key lives here, outside the workspace.
  ring: KeyRing,
  mount: PathBuf,
  bare: PathBuf,
}

impl Fixture {
  fn grimoire(&self) -> PathBuf {
    self.ws.join("grimoires/loa")
  }

  fn options(&self) -> RecoveryOptions {
    RecoveryOptions {
      workspace_dir: self.ws.clone(),
      trusted_keys: TrustedKey::from_ring(&self.ring).unwrap(),
      mount_dir: Some(self.mount.clone()),
      git: Some(GitSource {
        remote: self.bare.display().to_string(),
        branch: "main".into(),
        path: Some("grimoires/loa".into()),
      }),
      ..Default::default()
    }
  }
}

fn write(path: &Path, text: &str) {
  std::fs::create_dir_all(path.parent().unwrap()).unwrap();
  std::fs::write(path, text).unwrap();
}

/// A key ring with an active key.
fn ring_at(dir: &Path) -> KeyRing {
  let ring = KeyRing::with_seed(dir, KeyPolicy::default(), None).unwrap();
  ring.generate().unwrap();
  ring
}

/// Signs `dir` (a grimoire) with `ring`, the manifest excluding itself.
fn sign_dir(dir: &Path, ring: &KeyRing) {
  let options = ManifestOptions { exclude: vec!["manifest.json".into()], ..Default::default() };
  let m = create_manifest(dir, &options, &mut |_| Ok(())).unwrap();
  write_manifest(&dir.join("manifest.json"), &sign_manifest(&m.to_value(), ring).unwrap()).unwrap();
}

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

/// A workspace with a signed grimoire, a mount copy of it and a bare git repository holding it.
fn fixture() -> Fixture {
  let tmp = tempfile::tempdir().unwrap();
  let ws = tmp.path().join("ws");
  let ring = ring_at(&tmp.path().join("pinned-keys"));
  let work = tmp.path().join("work");
  let g = work.join("grimoires/loa");
  write(&g.join("NOTES.md"), NOTES);
  write(&g.join("a2a/trajectory/t.jsonl"), "{\"step\":1}\n");
  sign_dir(&g, &ring);
  // The workspace, the mount and the git branch all hold the same signed grimoire.
  copy_tree(&g, &ws.join("grimoires/loa"));
  let mount = tmp.path().join("mount");
  copy_tree(&g, &mount);
  let bare = tmp.path().join("remote.git");
  std::fs::create_dir_all(&bare).unwrap();
  git(&bare, &["init", "-q", "--bare"]);
  git(&work, &["init", "-q"]);
  git(&work, &["add", "-A"]);
  git(&work, &["commit", "-q", "-m", "state"]);
  git(&work, &["push", "-q", bare.to_str().unwrap(), "HEAD:refs/heads/main"]);
  Fixture { _tmp: tmp, ws, ring, mount, bare }
}

fn copy_tree(from: &Path, to: &Path) {
  std::fs::create_dir_all(to).unwrap();
  for e in std::fs::read_dir(from).unwrap() {
    let e = e.unwrap();
    if e.file_type().unwrap().is_dir() {
      copy_tree(&e.path(), &to.join(e.file_name()));
    } else {
      std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
  }
}

/// Every file below `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
  let mut out = BTreeMap::new();
  let mut stack = vec![dir.to_path_buf()];
  while let Some(d) = stack.pop() {
    for e in std::fs::read_dir(&d).unwrap() {
      let e = e.unwrap();
      if e.file_type().unwrap().is_dir() {
        stack.push(e.path());
      } else {
        out.insert(e.path().strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(e.path()).unwrap());
      }
    }
  }
  out
}

/// Names in the grimoire's parent other than the grimoire.
fn beside(f: &Fixture) -> Vec<String> {
  let mut names: Vec<String> = std::fs::read_dir(f.ws.join("grimoires"))
    .unwrap()
    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
    .filter(|n| n != "loa")
    .collect();
  names.sort();
  names
}

fn audit_actions(f: &Fixture) -> Vec<String> {
  let mut out = Vec::new();
  for (_, seg) in crate::audit::list_segments(&f.ws.join(".loa/audit")).unwrap() {
    for line in std::fs::read_to_string(seg).unwrap().lines() {
      let v: serde_json::Value = serde_json::from_str(line).unwrap();
      out.push(v["action"].as_str().unwrap().to_string());
    }
  }
  out
}

#[test]
fn a_signed_grimoire_runs_and_every_transition_is_audited() {
  let f = fixture();
  let before = snapshot(&f.grimoire());
  let o = recover(&f.options()).unwrap();
  assert_eq!((o.state, o.trust, o.exit_code()), (RecoveryState::Running, Trust::Signed, 0));
  assert_eq!(o.restored_from, None);
  assert_eq!(snapshot(&f.grimoire()), before);
  assert_eq!(audit_actions(&f), vec!["recovery.check_integrity", "recovery.running"]);
  assert!(crate::audit::verify(&f.ws.join(".loa/audit"), None, None).unwrap().ok);
  assert!(!is_degraded(&f.ws, DEFAULT_STATE_DIR).unwrap());
}

#[test]
fn a_tampered_file_is_restored_from_the_mount_and_kept_as_evidence() {
  let f = fixture();
  let signed = snapshot(&f.grimoire());
  write(&f.grimoire().join("NOTES.md"), "# NOTES\n- injected instruction\n");
  let o = recover(&f.options()).unwrap();
  assert_eq!((o.state, o.trust, o.restored_from), (RecoveryState::Running, Trust::Signed, Some(RecoverySource::Mount)));
  assert_eq!(o.problems, vec!["NOTES.md: modified"]);
  assert_eq!(snapshot(&f.grimoire()), signed);
  assert_eq!(o.evidence.len(), 1);
  let evidence = f.ws.join(&o.evidence[0]);
  assert_eq!(std::fs::read_to_string(evidence.join("NOTES.md")).unwrap(), "# NOTES\n- injected instruction\n");
  assert_eq!(beside(&f).len(), 1, "no staging directory is left: {:?}", beside(&f));
  let actions = audit_actions(&f);
  assert_eq!(actions, vec!["recovery.check_integrity", "recovery.restore", "recovery.running"]);
}

#[test]
fn git_restores_from_a_real_bare_repository_when_the_mount_is_gone() {
  let f = fixture();
  let signed = snapshot(&f.grimoire());
  std::fs::remove_dir_all(&f.mount).unwrap();
  std::fs::remove_file(f.grimoire().join("a2a/trajectory/t.jsonl")).unwrap();
  write(&f.grimoire().join("NOTES.md"), "tampered");
  let o = recover(&f.options()).unwrap();
  assert_eq!((o.state, o.restored_from), (RecoveryState::Running, Some(RecoverySource::Git)));
  assert_eq!(o.source_failures.len(), 1, "{:?}", o.source_failures);
  assert!(o.source_failures[0].starts_with("mount:"));
  assert_eq!(snapshot(&f.grimoire()), signed);
  // The scratch repository is gone.
  let left: Vec<_> = std::fs::read_dir(f.ws.join(".loa/recovery")).unwrap().map(|e| e.unwrap().file_name()).collect();
  assert!(left.iter().all(|n| !n.to_string_lossy().starts_with("git-scratch")), "{left:?}");
}

/// A stand-in for `loa-replicate stage`, run as a real child process: copies `from` into the
/// directory after `--out`, or fails the way the binary does.
fn replica_program(f: &Fixture, from: Option<&Path>) -> ReplicaSource {
  use std::os::unix::fs::PermissionsExt;
  let program = f.ws.parent().unwrap().join(if from.is_some() { "replica-ok" } else { "replica-bad" });
  let body = match from {
    Some(dir) => format!("while [ \"$1\" != --out ]; do shift; done\ncp -R '{}'/. \"$2\"/\n", dir.display()),
    None => "echo 'loa: E_REPLICA_CORRUPT: replica object k is unusable: sha256 differs' >&2\nexit 2\n".into(),
  };
  std::fs::write(&program, format!("#!/bin/sh\nset -e\n[ \"$1\" = stage ]\n{body}")).unwrap();
  std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
  ReplicaSource { program }
}

#[test]
fn the_replica_restores_between_mount_and_git_and_a_failing_one_passes_to_git() {
  let f = fixture();
  let signed = snapshot(&f.grimoire());
  std::fs::remove_dir_all(&f.mount).unwrap();
  let copy = f.ws.parent().unwrap().join("replica-copy");
  copy_tree(&f.grimoire(), &copy);
  write(&f.grimoire().join("NOTES.md"), "tampered");
  let mut options = f.options();
  options.replica = Some(replica_program(&f, Some(&copy)));
  let o = recover(&options).unwrap();
  assert_eq!((o.state, o.restored_from), (RecoveryState::Running, Some(RecoverySource::Replica)));
  assert_eq!(snapshot(&f.grimoire()), signed);

  // A replica that fails (its code is kept, nothing else it printed) and one whose copy does
  // not verify: both only fail their source; git restores.
  write(&f.grimoire().join("NOTES.md"), "tampered again");
  options.replica = Some(replica_program(&f, None));
  let o = recover(&options).unwrap();
  assert_eq!(o.restored_from, Some(RecoverySource::Git));
  assert!(
    o.source_failures.iter().any(|s| s.starts_with("replica:") && s.contains("E_REPLICA_CORRUPT")),
    "{:?}",
    o.source_failures
  );
  assert!(o.source_failures.iter().all(|s| !s.contains("sha256 differs")), "{:?}", o.source_failures);
  write(&copy.join("NOTES.md"), "# NOTES\n- the replica lies\n");
  write(&f.grimoire().join("NOTES.md"), "tampered a third time");
  options.replica = Some(replica_program(&f, Some(&copy)));
  let o = recover(&options).unwrap();
  assert_eq!(o.restored_from, Some(RecoverySource::Git));
  assert!(
    o.source_failures.iter().any(|s| s.starts_with("replica:") && s.contains("E_SIGNATURE_INVALID")),
    "{:?}",
    o.source_failures
  );
  assert_eq!(snapshot(&f.grimoire()), signed);
}

/// Commits the workspace's signed grimoire into a git repository at `repo` (the workspace or
/// a directory above it) on branch `main`.
fn commit_workspace(repo: &Path) {
  git(repo, &["init", "-q"]);
  git(repo, &["add", "-A"]);
  git(repo, &["commit", "-q", "-m", "state"]);
}

#[test]
fn a_workspace_that_is_its_own_git_repository_restores_without_a_git_path() {
  let f = fixture();
  std::fs::remove_dir_all(&f.mount).unwrap();
  let signed = snapshot(&f.grimoire());
  commit_workspace(&f.ws);
  write(&f.grimoire().join("NOTES.md"), "tampered");
  let mut options = f.options();
  options.sources = vec![RecoverySource::Git];
  options.git = Some(GitSource { remote: f.ws.display().to_string(), branch: "main".into(), path: None });
  let o = recover(&options).unwrap();
  assert_eq!(
    (o.state, o.restored_from),
    (RecoveryState::Running, Some(RecoverySource::Git)),
    "{:?}",
    o.source_failures
  );
  assert_eq!(snapshot(&f.grimoire()), signed);

  // A path that holds no grimoire: a coded failure that says which path works, and names no
  // directory of this machine.
  write(&f.grimoire().join("NOTES.md"), "tampered again");
  options.git = Some(GitSource { remote: f.ws.display().to_string(), branch: "main".into(), path: Some(".".into()) });
  let o = recover(&options).unwrap();
  assert_eq!(o.state, RecoveryState::Degraded);
  let failure = &o.source_failures[0];
  assert!(failure.starts_with("git:") && failure.contains("E_INVALID_ARGUMENT"), "{failure}");
  assert!(failure.contains("`--git-path grimoires/loa` would work"), "{failure}");
  assert!(!failure.contains("staging") && !failure.contains(&*f.ws.to_string_lossy()), "{failure}");
  // Only the first restore's evidence is beside the grimoire: no staging directory is left.
  assert!(beside(&f).iter().all(|n| n.contains("loa-evidence-")), "{:?}", beside(&f));
}

#[test]
fn a_workspace_inside_a_git_repository_restores_from_its_place_in_the_tree() {
  let f = fixture();
  std::fs::remove_dir_all(&f.mount).unwrap();
  // The repository is the directory above: the grimoire sits at `<ws name>/grimoires/loa`.
  let repo = f.ws.parent().unwrap().join("repo");
  let ws = repo.join("agents/one");
  std::fs::create_dir_all(ws.parent().unwrap()).unwrap();
  std::fs::rename(&f.ws, &ws).unwrap();
  let signed = snapshot(&ws.join("grimoires/loa"));
  commit_workspace(&repo);
  write(&ws.join("grimoires/loa/NOTES.md"), "tampered");
  let mut options = f.options();
  options.workspace_dir = ws.clone();
  options.sources = vec![RecoverySource::Git];
  options.git = Some(GitSource { remote: repo.display().to_string(), branch: "main".into(), path: None });
  let o = recover(&options).unwrap();
  assert_eq!(
    (o.state, o.restored_from),
    (RecoveryState::Running, Some(RecoverySource::Git)),
    "{:?}",
    o.source_failures
  );
  assert_eq!(snapshot(&ws.join("grimoires/loa")), signed);

  // A branch with no signed grimoire anywhere says so.
  let empty = f.ws.parent().unwrap().join("empty");
  write(&empty.join("README"), "nothing here\n");
  commit_workspace(&empty);
  write(&ws.join("grimoires/loa/NOTES.md"), "tampered");
  options.git = Some(GitSource { remote: empty.display().to_string(), branch: "main".into(), path: None });
  let o = recover(&options).unwrap();
  assert_eq!(o.state, RecoveryState::Degraded);
  assert!(o.source_failures[0].contains("no `manifest.json` anywhere in that commit"), "{:?}", o.source_failures);
}

#[test]
fn a_source_without_a_manifest_is_named_by_source_never_by_its_staging_directory() {
  let f = fixture();
  std::fs::remove_file(f.mount.join("manifest.json")).unwrap();
  write(&f.grimoire().join("NOTES.md"), "tampered");
  let mut options = f.options();
  options.sources = vec![RecoverySource::Mount];
  let o = recover(&options).unwrap();
  assert_eq!(o.state, RecoveryState::Degraded);
  let failure = &o.source_failures[0];
  assert!(failure.contains("the mount source holds no `manifest.json`"), "{failure}");
  assert!(!failure.contains("staging") && !failure.contains('/'), "{failure}");
}

#[test]
fn a_git_tree_with_a_symlink_fails_the_source_and_nothing_is_written() {
  let f = fixture();
  std::fs::remove_dir_all(&f.mount).unwrap();
  // A new commit on the branch adds a symlink where state files belong.
  let work = f.ws.parent().unwrap().join("work");
  std::os::unix::fs::symlink("/etc/passwd", work.join("grimoires/loa/link")).unwrap();
  git(&work, &["add", "-A"]);
  git(&work, &["commit", "-q", "-m", "link"]);
  git(&work, &["push", "-q", f.bare.to_str().unwrap(), "HEAD:refs/heads/main"]);
  write(&f.grimoire().join("NOTES.md"), "tampered");
  let before = snapshot(&f.grimoire());
  let mut options = f.options();
  options.sources = vec![RecoverySource::Git];
  let o = recover(&options).unwrap();
  assert_eq!(o.state, RecoveryState::Degraded);
  assert!(
    o.source_failures[0].starts_with("git:") && o.source_failures[0].contains("symlink"),
    "{:?}",
    o.source_failures
  );
  assert_eq!(snapshot(&f.grimoire()), before);
  assert!(beside(&f).is_empty(), "{:?}", beside(&f));
}

#[test]
fn a_source_that_does_not_verify_is_never_swapped_in() {
  let f = fixture();
  // The mount copy is tampered as well (and re-signed with a key planted in the workspace):
  // only the git copy verifies against the pinned key.
  write(&f.mount.join("NOTES.md"), "mount tampered");
  let planted = ring_at(&f.ws.join(".loa/keys"));
  sign_dir(&f.mount, &planted);
  write(&f.grimoire().join("NOTES.md"), "live tampered");
  sign_dir(&f.grimoire(), &planted);
  let o = recover(&f.options()).unwrap();
  assert_eq!((o.state, o.restored_from), (RecoveryState::Running, Some(RecoverySource::Git)));
  assert!(o.problems.iter().any(|p| p.contains("signature")), "{:?}", o.problems);
  assert!(o.source_failures[0].contains("E_SIGNATURE_INVALID"), "{:?}", o.source_failures);
  assert_eq!(std::fs::read_to_string(f.grimoire().join("NOTES.md")).unwrap(), NOTES);
}

#[test]
fn a_tampered_file_with_every_source_removed_never_reaches_running_with_its_content() {
  let f = fixture();
  std::fs::remove_dir_all(&f.mount).unwrap();
  std::fs::remove_dir_all(&f.bare).unwrap();
  write(&f.grimoire().join("NOTES.md"), "tampered");
  // Re-signed with a key from the workspace's own key ring: still not trusted.
  let planted = ring_at(&f.ws.join(".loa/keys"));
  sign_dir(&f.grimoire(), &planted);

  // Without a template: degraded, the live grimoire left as it is, nothing re-signed.
  let mut options = f.options();
  options.sources = vec![RecoverySource::Mount, RecoverySource::Git];
  let tampered = snapshot(&f.grimoire());
  let o = recover(&options).unwrap();
  assert_eq!((o.state, o.trust, o.exit_code()), (RecoveryState::Degraded, Trust::None, 1));
  assert_eq!(o.source_failures.len(), 2);
  assert_eq!(snapshot(&f.grimoire()), tampered);
  assert!(is_degraded(&f.ws, DEFAULT_STATE_DIR).unwrap());
  assert_eq!(ensure_not_degraded(&f.ws, DEFAULT_STATE_DIR).unwrap_err().code(), "E_DEGRADED");

  // With the template: the tampered grimoire goes aside as evidence, the template comes in,
  // and the run is still degraded.
  let o = recover(&f.options()).unwrap();
  assert_eq!(
    (o.state, o.trust, o.restored_from),
    (RecoveryState::Degraded, Trust::Template, Some(RecoverySource::Template))
  );
  assert_eq!(o.degraded_cycles, 2);
  let live = snapshot(&f.grimoire());
  assert!(live.values().all(|b| b != b"tampered"));
  assert_eq!(live.len(), 1);
  assert_eq!(snapshot(&f.ws.join(&o.evidence[0])), tampered, "the evidence is the tampered grimoire, byte for byte");

  // Every later run: never RUNNING with the tampered content.
  let o = recover(&f.options()).unwrap();
  assert_eq!((o.state, o.trust), (RecoveryState::Running, Trust::Template));
  assert!(snapshot(&f.grimoire()).values().all(|b| b != b"tampered"));
  assert!(!is_degraded(&f.ws, DEFAULT_STATE_DIR).unwrap());
}

#[test]
fn missing_state_starts_from_the_template_and_stays_there() {
  let f = fixture();
  std::fs::remove_dir_all(f.ws.join("grimoires")).unwrap();
  let mut options = f.options();
  options.sources = vec![RecoverySource::Template];
  let o = recover(&options).unwrap();
  assert_eq!(
    (o.state, o.trust, o.restored_from),
    (RecoveryState::Running, Trust::Template, Some(RecoverySource::Template))
  );
  assert_eq!(std::fs::read_to_string(f.grimoire().join("NOTES.md")).unwrap(), crate::memory::notes::TEMPLATE);
  assert!(o.evidence.is_empty());
  let o = recover(&options).unwrap();
  assert_eq!((o.state, o.trust, o.restored_from), (RecoveryState::Running, Trust::Template, None));
  // A template grimoire that was then edited is no longer a template, nor signed.
  write(&f.grimoire().join("NOTES.md"), "edited");
  options.sources = vec![RecoverySource::Mount];
  std::fs::remove_dir_all(&f.mount).unwrap();
  assert_eq!(recover(&options).unwrap().state, RecoveryState::Degraded);
}

#[test]
fn a_failure_between_staging_and_swap_leaves_the_live_state_untouched() {
  let f = fixture();
  write(&f.grimoire().join("NOTES.md"), "tampered");
  let before = snapshot(&f.grimoire());
  let mut options = f.options();
  options.sources = vec![RecoverySource::Mount, RecoverySource::Git];
  let o = {
    // The exchange (and any rename onto the live name) fails: every source stages and verifies,
    // then cannot swap.
    let _fault = faults::inject(&f.grimoire(), faults::Op::Rename, libc::EIO, 0, u32::MAX);
    recover(&options).unwrap()
  };
  assert_eq!(o.state, RecoveryState::Degraded);
  assert_eq!(o.source_failures.len(), 2, "{:?}", o.source_failures);
  assert!(o.source_failures.iter().all(|s| s.contains("E_IO")), "{:?}", o.source_failures);
  assert_eq!(snapshot(&f.grimoire()), before);
  assert!(beside(&f).is_empty(), "staging removed: {:?}", beside(&f));
  // Without the fault the next run restores.
  let o = recover(&options).unwrap();
  assert_eq!((o.state, o.restored_from), (RecoveryState::Running, Some(RecoverySource::Mount)));
}

/// Runs this test binary's `child_entry` as a separate process recovering `f`'s workspace.
fn child(f: &Fixture, extra: &[(&str, &str)]) -> Command {
  let mut cmd = Command::new(std::env::current_exe().unwrap());
  cmd
    .args(["--exact", "recovery::tests::child_entry", "--ignored", "--nocapture", "--test-threads=1"])
    .env(CHILD_VAR, "1")
    .env("LOA_TEST_WS", &f.ws)
    .env("LOA_TEST_KEY", TrustedKey::from_ring(&f.ring).unwrap()[0].public_key.map(|b| format!("{b:02x}")).concat())
    .env("LOA_TEST_MOUNT", &f.mount)
    .env("LOA_TEST_BARE", &f.bare);
  for (k, v) in extra {
    cmd.env(k, v);
  }
  cmd
}

fn child_outcome(cmd: &mut Command) -> serde_json::Value {
  let out = cmd.output().unwrap();
  let stdout = String::from_utf8_lossy(&out.stdout);
  let line = stdout
    .lines()
    .find_map(|l| l.split_once("LOA_OUTCOME ").map(|(_, json)| json))
    .unwrap_or_else(|| panic!("no outcome: {stdout}"));
  serde_json::from_str(line).unwrap()
}

/// The body of the child processes above. Ignored in a plain test run (it is no test of its own:
/// reported as ignored, never as passed), and run explicitly (`--ignored --exact`) by
/// [`child`]; run by hand without the child's variables, it fails.
#[test]
#[ignore = "the body of the child processes the recovery tests spawn"]
fn child_entry() {
  assert!(std::env::var_os(CHILD_VAR).is_some(), "child_entry runs only as a child process of the recovery tests");
  let var = |k: &str| std::env::var(k).unwrap();
  let mut options = RecoveryOptions {
    workspace_dir: var("LOA_TEST_WS").into(),
    trusted_keys: vec![TrustedKey::from_hex(&var("LOA_TEST_KEY")).unwrap()],
    mount_dir: Some(var("LOA_TEST_MOUNT").into()),
    git: Some(GitSource { remote: var("LOA_TEST_BARE"), branch: "main".into(), path: Some("grimoires/loa".into()) }),
    sources: vec![RecoverySource::Mount, RecoverySource::Git],
    ..Default::default()
  };
  options.apply_env().unwrap();
  // A file system without RENAME_EXCHANGE: the exchange onto the grimoire answers EINVAL once.
  let _fault = std::env::var_os(NO_EXCHANGE_VAR)
    .map(|_| faults::inject(&options.workspace_dir.join("grimoires/loa"), faults::Op::Rename, libc::EINVAL, 0, 1));
  let o = recover(&options).unwrap();
  println!("LOA_OUTCOME {}", serde_json::to_string(&o).unwrap());
}

#[test]
fn a_restore_killed_midway_leaves_the_live_state_as_it_was() {
  let f = fixture();
  write(&f.grimoire().join("NOTES.md"), "tampered");
  let before = snapshot(&f.grimoire());
  let pause = f.ws.parent().unwrap().join("pause");
  std::fs::create_dir_all(&pause).unwrap();
  let mut proc =
    child(&f, &[(hooks::PAUSE_DIR, pause.to_str().unwrap())]).stdout(std::process::Stdio::null()).spawn().unwrap();
  // Wait (without a deadline) until the child has staged and verified, right before the swap.
  while !pause.join("paused").exists() {
    if let Some(status) = proc.try_wait().unwrap() {
      panic!("child exited early: {status}");
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
  }
  rustix::process::kill_process(rustix::process::Pid::from_child(&proc), rustix::process::Signal::KILL).unwrap();
  proc.wait().unwrap();
  assert_eq!(snapshot(&f.grimoire()), before, "the live grimoire is as it was");
  let staging = beside(&f);
  assert_eq!(staging.len(), 1, "{staging:?}");
  assert!(staging[0].contains(source::STAGING_MARK));

  // The next run moves the leftover aside and restores.
  let o = recover(&f.options()).unwrap();
  assert_eq!((o.state, o.restored_from), (RecoveryState::Running, Some(RecoverySource::Mount)));
  assert!(o.evidence.iter().any(|e| e.contains(source::LEFTOVER_MARK)), "{:?}", o.evidence);
  assert_eq!(std::fs::read_to_string(f.grimoire().join("NOTES.md")).unwrap(), NOTES);
}

#[test]
fn a_crash_loop_across_processes_reaches_degraded_at_the_threshold_and_leaves_it_when_healthy() {
  let f = fixture();
  // Nothing can restore: every run fails.
  std::fs::rename(&f.mount, f.ws.parent().unwrap().join("mount-away")).unwrap();
  std::fs::rename(&f.bare, f.ws.parent().unwrap().join("bare-away")).unwrap();
  write(&f.grimoire().join("NOTES.md"), "tampered");
  let env = [(ENV_MAX_ATTEMPTS, "3"), (ENV_WINDOW_MS, "3600000")];
  for run in 1..=3u64 {
    let o = child_outcome(&mut child(&f, &env));
    assert_eq!(o["state"], "degraded");
    assert_eq!(o["attemptsInWindow"], run);
    assert_eq!(o["loopDetected"], false, "run {run}");
    assert_eq!(o["sourceFailures"].as_array().unwrap().len(), 2, "run {run}: sources were tried");
  }
  // The fourth process sees three earlier runs in the window: loop detected, no restore tried.
  let o = child_outcome(&mut child(&f, &env));
  assert_eq!((o["state"].as_str(), o["loopDetected"].as_bool()), (Some("degraded"), Some(true)));
  assert_eq!(o["sourceFailures"].as_array().unwrap().len(), 0);
  assert_eq!(o["degradedCycles"], 4);
  assert_eq!(o["critical"], true);
  // Healthy again (a human put the signed state back): the next process leaves degraded mode
  // even inside the loop window, and the attempts are cleared.
  std::fs::remove_dir_all(f.grimoire()).unwrap();
  copy_tree(&f.ws.parent().unwrap().join("mount-away"), &f.grimoire());
  let o = child_outcome(&mut child(&f, &env));
  assert_eq!((o["state"].as_str(), o["trust"].as_str()), (Some("running"), Some("signed")));
  assert_eq!(o["degradedCycles"], 0);
  assert!(!is_degraded(&f.ws, DEFAULT_STATE_DIR).unwrap());
  let o = child_outcome(&mut child(&f, &env));
  assert_eq!(o["attemptsInWindow"], 1);
}

#[test]
fn check_only_writes_nothing() {
  let f = fixture();
  write(&f.grimoire().join("NOTES.md"), "tampered");
  let before = snapshot(f.ws.as_path());
  let mut options = f.options();
  options.check_only = true;
  let o = recover(&options).unwrap();
  assert_eq!((o.state, o.exit_code(), o.check_only), (RecoveryState::Degraded, 1, true));
  assert_eq!(o.problems, vec!["NOTES.md: modified"]);
  assert_eq!(snapshot(f.ws.as_path()), before);
  assert!(!f.ws.join(".loa").exists());
}

#[test]
fn a_corrupt_state_file_is_moved_aside_and_reported() {
  let f = fixture();
  write(&f.ws.join(".loa/recovery/state.json"), "{\"version\":1,\"attempts\":[1,");
  let o = recover(&f.options()).unwrap();
  let moved = o.quarantined_state.expect("reported");
  assert!(moved.contains("state.json.corrupt-"), "{moved}");
  assert_eq!(std::fs::read_to_string(f.ws.join(moved)).unwrap(), "{\"version\":1,\"attempts\":[1,");
  assert_eq!(o.state, RecoveryState::Running);
}

#[test]
fn options_are_checked_and_the_environment_overrides_the_file() {
  let f = fixture();
  let mut o = f.options();
  o.trusted_keys.clear();
  assert_eq!(recover(&o).unwrap_err().code(), "E_INVALID_ARGUMENT");
  for (remote, branch) in
    [("--upload-pack=x", "main"), ("ext::sh -c x", "main"), ("r", "-x"), ("r", "a..b"), ("r", "a b")]
  {
    let mut o = f.options();
    o.git = Some(GitSource { remote: remote.into(), branch: branch.into(), path: Some(".".into()) });
    assert_eq!(recover(&o).unwrap_err().code(), "E_INVALID_ARGUMENT", "{remote} {branch}");
  }
  let mut o = RecoveryOptions::default();
  let env: BTreeMap<&str, &str> = [(ENV_WINDOW_MS, "60000"), (ENV_MAX_ATTEMPTS, "3")].into();
  o.apply_env_from(|k| env.get(k).map(Into::into)).unwrap();
  assert_eq!((o.window_ms, o.max_attempts), (60000, 3));
  for bad in ["0", "x", "-1", ""] {
    let env: BTreeMap<&str, &str> = [(ENV_MAX_ATTEMPTS, bad)].into();
    assert_eq!(o.apply_env_from(|k| env.get(k).map(Into::into)).unwrap_err().code(), "E_INVALID_ARGUMENT");
  }
}

#[test]
fn a_pinned_key_whose_private_key_is_in_the_workspace_anchors_nothing() {
  let f = fixture();
  // The workspace's own ring signs, and its key is pinned: whoever can write the workspace can
  // read that key and re-sign anything, so recovery refuses the pin.
  let inside = ring_at(&f.ws.join(".loa/keys"));
  sign_dir(&f.grimoire(), &inside);
  let mut o = f.options();
  o.trusted_keys = TrustedKey::from_ring(&inside).unwrap();
  assert_eq!(recover(&o).unwrap_err().code(), "E_KEY_INVALID");
  o.workspace_keys_dir = None;
  assert_eq!(recover(&o).unwrap().state, RecoveryState::Running, "the check is what refused it");
  // The pinned outside key still works with the inside ring present.
  sign_dir(&f.grimoire(), &f.ring);
  assert_eq!(recover(&f.options()).unwrap().trust, Trust::Signed);
}

#[test]
fn attempts_outside_the_window_or_in_the_future_are_dropped() {
  let mut s = PersistedState { attempts: vec![10, 500, 900, 1000, 5000], ..Default::default() };
  s.prune(1000, 500);
  assert_eq!(s.attempts, vec![500, 900, 1000]);
  let mut s = PersistedState { attempts: (0..2000).collect(), ..Default::default() };
  s.prune(2000, 10_000);
  assert_eq!(s.attempts.len(), state::MAX_ATTEMPTS_KEPT - 1);
  assert_eq!(s.attempts.last(), Some(&1999));
}

#[test]
fn captures_are_refused_with_e_degraded_while_degraded_and_accepted_once_healthy() {
  use crate::memory::{Entry, MemoryKind, MemoryStore, StoreOptions};
  let f = fixture();
  let away = f.ws.parent().unwrap().join("mount-away");
  std::fs::rename(&f.mount, &away).unwrap();
  write(&f.grimoire().join("NOTES.md"), "tampered");
  let mut options = f.options();
  options.sources = vec![RecoverySource::Mount];
  assert_eq!(recover(&options).unwrap().state, RecoveryState::Degraded);

  let store =
    MemoryStore::open(StoreOptions { workspace_dir: f.ws.clone(), session_id: "s1".into(), ..Default::default() })
      .unwrap();
  let entry = || Entry::new(MemoryKind::Learning, "Always run the full test suite before tagging a release.");
  assert_eq!(store.capture(entry()).unwrap_err().code(), "E_DEGRADED");
  assert_eq!(store.capture(entry()).unwrap_err().code(), "E_DEGRADED", "the cached answer holds");
  let wal = crate::wal::reader::read_session(&f.ws.join(".loa/wal"), "s1").unwrap();
  assert!(wal.records.is_empty(), "nothing was written: {:?}", wal.records.len());

  // The backup comes back: the next run restores and leaves degraded mode; the same open store
  // sees the new state file at its next capture.
  std::fs::rename(&away, &f.mount).unwrap();
  assert_eq!(recover(&options).unwrap().state, RecoveryState::Running);
  assert!(store.capture(entry()).unwrap().accepted);

  // A state file nobody can read refuses writes with its own code, never lets them through.
  write(&f.ws.join(".loa/recovery/state.json"), "{\"version\":1,");
  let other = Entry::new(MemoryKind::Learning, "Never deploy on a Friday afternoon without a rollback plan.");
  assert_eq!(store.capture(other).unwrap_err().code(), "E_STATE_CORRUPT");
}

/// Waits (without a deadline) until a child paused at a test hook, then SIGKILLs it.
fn kill_when_paused(mut proc: std::process::Child, pause: &Path) {
  while !pause.join("paused").exists() {
    if let Some(status) = proc.try_wait().unwrap() {
      panic!("child exited early: {status}");
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
  }
  rustix::process::kill_process(rustix::process::Pid::from_child(&proc), rustix::process::Signal::KILL).unwrap();
  proc.wait().unwrap();
}

#[test]
fn without_rename_exchange_the_swap_takes_two_renames_and_still_restores() {
  let f = fixture();
  let signed = snapshot(&f.grimoire());
  write(&f.grimoire().join("NOTES.md"), "tampered");
  let o = {
    let _fault = faults::inject(&f.grimoire(), faults::Op::Rename, libc::EINVAL, 0, 1);
    recover(&f.options()).unwrap()
  };
  assert_eq!((o.state, o.restored_from), (RecoveryState::Running, Some(RecoverySource::Mount)));
  assert_eq!(snapshot(&f.grimoire()), signed);
  assert_eq!(std::fs::read_to_string(f.ws.join(&o.evidence[0]).join("NOTES.md")).unwrap(), "tampered");
}

#[test]
fn a_process_killed_between_the_two_renames_leaves_a_swap_the_next_run_completes() {
  let f = fixture();
  let signed = snapshot(&f.grimoire());
  write(&f.grimoire().join("NOTES.md"), "tampered");
  let pause = f.ws.parent().unwrap().join("pause-fallback");
  std::fs::create_dir_all(&pause).unwrap();
  let proc = child(&f, &[(NO_EXCHANGE_VAR, "1"), (hooks::FALLBACK_PAUSE_DIR, pause.to_str().unwrap())])
    .stdout(std::process::Stdio::null())
    .spawn()
    .unwrap();
  kill_when_paused(proc, &pause);
  // The half state: no live grimoire, the tampered one as evidence, the verified copy staged.
  assert!(!f.grimoire().exists());
  let names = beside(&f);
  assert_eq!(names.len(), 2, "{names:?}");
  assert!(
    names.iter().any(|n| n.contains(source::STAGING_MARK)) && names.iter().any(|n| n.contains(source::EVIDENCE_MARK))
  );

  // Every source is gone now: the next run completes the swap from the verified copy, it does
  // not fall back to the template.
  std::fs::remove_dir_all(&f.mount).unwrap();
  std::fs::remove_dir_all(&f.bare).unwrap();
  let o = recover(&f.options()).unwrap();
  assert_eq!((o.state, o.trust, o.restored_from), (RecoveryState::Running, Trust::Signed, None));
  assert!(o.source_failures.is_empty(), "{:?}", o.source_failures);
  assert_eq!(snapshot(&f.grimoire()), signed);
  assert!(o.transitions.iter().any(|t| t.detail.contains("interrupted swap completed")), "{:?}", o.transitions);
  assert_eq!(beside(&f).len(), 1, "only the evidence is left: {:?}", beside(&f));

  // A leftover that does not verify is never swapped in: without it the template comes in.
  let mut o2 = f.options();
  std::fs::rename(f.grimoire(), f.ws.join("grimoires/.loa.loa-staging-1-0")).unwrap();
  write(&f.ws.join("grimoires/.loa.loa-staging-1-0/NOTES.md"), "tampered again");
  o2.sources = vec![RecoverySource::Template];
  let o = recover(&o2).unwrap();
  assert_eq!(
    (o.state, o.trust, o.restored_from),
    (RecoveryState::Running, Trust::Template, Some(RecoverySource::Template))
  );
}

#[test]
fn evidence_beyond_max_evidence_is_removed_oldest_first_and_audited() {
  let f = fixture();
  let mut options = f.options();
  options.max_evidence = 2;
  let mut made = Vec::new();
  for i in 0..4 {
    write(&f.grimoire().join("NOTES.md"), &format!("tampered {i}"));
    let o = recover(&options).unwrap();
    assert_eq!(o.state, RecoveryState::Running);
    made.extend(o.evidence.clone());
    if i >= 2 {
      assert_eq!(o.evidence_removed.len(), 1, "run {i}: {:?}", o.evidence_removed);
    }
  }
  assert_eq!(made.len(), 4);
  let left = beside(&f);
  assert_eq!(left.len(), 2, "{left:?}");
  // The newest two are kept: their contents are the last two tamperings.
  let mut kept: Vec<String> =
    left.iter().map(|n| std::fs::read_to_string(f.ws.join("grimoires").join(n).join("NOTES.md")).unwrap()).collect();
  kept.sort();
  assert_eq!(kept, vec!["tampered 2", "tampered 3"]);
  let removed = audit_actions(&f).iter().filter(|a| *a == "recovery.evidence_removed").count();
  assert_eq!(removed, 2);
  assert!(crate::audit::verify(&f.ws.join(".loa/audit"), None, None).unwrap().ok);
}

#[test]
fn a_crash_loop_of_processes_killed_mid_restore_reaches_degraded_at_the_threshold_and_leaves_it_when_healthy() {
  let f = fixture();
  write(&f.grimoire().join("NOTES.md"), "tampered");
  let tampered = snapshot(&f.grimoire());
  let env = [(ENV_MAX_ATTEMPTS, "3"), (ENV_WINDOW_MS, "3600000")];
  // Three processes crash (SIGKILL) in the middle of a restore, right before the swap: each had
  // recorded its attempt on disk before doing anything else.
  for run in 0..3 {
    let pause = f.ws.parent().unwrap().join(format!("pause-{run}"));
    std::fs::create_dir_all(&pause).unwrap();
    let mut extra = env.to_vec();
    extra.push((hooks::PAUSE_DIR, pause.to_str().unwrap()));
    kill_when_paused(child(&f, &extra).stdout(std::process::Stdio::null()).spawn().unwrap(), &pause);
    assert_eq!(snapshot(&f.grimoire()), tampered, "run {run}: a killed restore leaves the live state as it was");
  }
  // The fourth process sees three runs in the window: the loop is cut, no restore is tried.
  let o = child_outcome(&mut child(&f, &env));
  assert_eq!((o["state"].as_str(), o["loopDetected"].as_bool()), (Some("degraded"), Some(true)));
  assert_eq!(o["attemptsInWindow"], 4);
  assert_eq!(o["sourceFailures"].as_array().unwrap().len(), 0);
  assert!(is_degraded(&f.ws, DEFAULT_STATE_DIR).unwrap());
  assert_eq!(snapshot(&f.grimoire()), tampered);
  // Healthy again (a human put the signed state back): the next process leaves degraded mode.
  std::fs::remove_dir_all(f.grimoire()).unwrap();
  copy_tree(&f.mount, &f.grimoire());
  let o = child_outcome(&mut child(&f, &env));
  assert_eq!((o["state"].as_str(), o["trust"].as_str()), (Some("running"), Some("signed")));
  assert!(!is_degraded(&f.ws, DEFAULT_STATE_DIR).unwrap());
  let actions = audit_actions(&f);
  assert!(actions.contains(&"recovery.degraded".to_string()));
  assert_eq!(actions.last().map(String::as_str), Some("recovery.running"));
}
