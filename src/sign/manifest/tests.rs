//! Tamper detection of signed manifests: every single-byte change of a covered file, of the
//! manifest file and of the signature; renames, additions, deletions; escaping paths.

use std::fs;
use std::os::unix::fs::symlink;

use super::*;
use crate::sign::keys::KeyPolicy;

struct Fixture {
  _tmp: tempfile::TempDir,
  root: PathBuf,
  ring: KeyRing,
  signed: Value,
  keys: Vec<TrustedKey>,
}

fn fixture() -> Fixture {
  let tmp = tempfile::tempdir().unwrap();
  let root = tmp.path().join("state");
  fs::create_dir_all(root.join("learnings/deep")).unwrap();
  fs::write(root.join("NOTES.md"), "# Notes\n- remember the milk\n").unwrap();
  fs::write(root.join("learnings/a.json"), r#"{"a":[1,2,{"b":"c"}]}"#).unwrap();
  fs::write(root.join("learnings/deep/b.bin"), [0u8, 1, 2, 255, 254]).unwrap();
  fs::write(root.join("empty"), b"").unwrap();
  let ring = KeyRing::with_seed(&tmp.path().join("keys"), KeyPolicy::default(), None).unwrap();
  ring.generate().unwrap();
  let manifest = create_manifest(&root, &ManifestOptions::default(), &mut |_| Ok(())).unwrap();
  let signed = sign_manifest(&manifest.to_value(), &ring).unwrap();
  let keys = TrustedKey::from_ring(&ring).unwrap();
  Fixture { _tmp: tmp, root, ring, signed, keys }
}

fn kinds(v: &Verification) -> Vec<(String, ProblemKind)> {
  v.problems.iter().map(|p| (p.path.clone(), p.kind)).collect()
}

#[test]
fn clean_tree_verifies_and_lists_every_file() {
  let f = fixture();
  let v = verify_manifest(&f.root, &f.signed, &f.keys, None).unwrap();
  assert!(v.ok, "{:?}", v.problems);
  assert_eq!(v.files, 4);
  let paths: Vec<&str> = f.signed["files"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
  assert_eq!(paths, ["NOTES.md", "empty", "learnings/a.json", "learnings/deep/b.bin"]);
  assert_eq!(f.signed["files"][1]["sha256"], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert_eq!(v.signed_by.as_deref(), Some(f.keys[0].key_id.as_str()));
}

#[test]
fn every_byte_flip_of_every_covered_file_is_detected() {
  let f = fixture();
  for entry in f.signed["files"].as_array().unwrap() {
    let rel = entry["path"].as_str().unwrap();
    let path = f.root.join(rel);
    let original = fs::read(&path).unwrap();
    for i in 0..original.len() {
      for mask in [0x01u8, 0x80, 0xff] {
        let mut bytes = original.clone();
        bytes[i] ^= mask;
        fs::write(&path, &bytes).unwrap();
        let v = verify_manifest(&f.root, &f.signed, &f.keys, Some(1)).unwrap();
        assert_eq!(kinds(&v), vec![(rel.to_string(), ProblemKind::Modified)], "{rel} byte {i} ^ {mask:#x}");
      }
    }
    // Appending or truncating is a change of size.
    fs::write(&path, [original.as_slice(), b"x"].concat()).unwrap();
    assert_eq!(
      kinds(&verify_manifest(&f.root, &f.signed, &f.keys, None).unwrap()),
      vec![(rel.to_string(), ProblemKind::Modified)]
    );
    fs::write(&path, &original).unwrap();
  }
  assert!(verify_manifest(&f.root, &f.signed, &f.keys, None).unwrap().ok);
}

#[test]
fn every_byte_flip_of_the_manifest_file_and_of_the_signature_is_detected() {
  let f = fixture();
  let file = f.root.parent().unwrap().join("manifest.json");
  write_manifest(&file, &f.signed).unwrap();
  let original = fs::read(&file).unwrap();
  assert_eq!(read_manifest(&file).unwrap(), f.signed);
  let mut detected_by_parse = 0;
  for i in 0..original.len() {
    for mask in [0x01u8, 0x20, 0xff] {
      let mut bytes = original.clone();
      bytes[i] ^= mask;
      fs::write(&file, &bytes).unwrap();
      match read_manifest(&file) {
        Err(e) => {
          assert_eq!(e.code(), "E_STATE_CORRUPT");
          detected_by_parse += 1;
        }
        Ok(value) => {
          let v = verify_manifest(&f.root, &value, &f.keys, Some(1)).unwrap();
          assert!(!v.ok, "byte {i} ^ {mask:#x} undetected");
          assert!(v.problems.iter().any(|p| p.kind == ProblemKind::Signature), "byte {i}: {:?}", v.problems);
        }
      }
    }
  }
  assert!(detected_by_parse > 0 && detected_by_parse < original.len() * 3, "both paths exercised");
  // Every bit of the 64 signature bytes, directly on the value.
  let sig_hex = f.signed["signature"]["value"].as_str().unwrap().to_string();
  let sig = hex::decode(&sig_hex).unwrap();
  for i in 0..64 {
    for bit in 0..8 {
      let mut s = sig.clone();
      s[i] ^= 1 << bit;
      let mut forged = f.signed.clone();
      forged["signature"]["value"] = Value::String(hex::encode(&s));
      let v = verify_signature(&forged, &f.keys);
      assert!(!v.ok && v.problems[0].kind == ProblemKind::Signature, "signature byte {i} bit {bit}");
    }
  }
}

#[test]
fn nested_fields_are_covered_by_the_signature() {
  // The originals' sorted-keys replacer dropped `files[*].*`; here a changed digest, size or
  // path inside the list breaks the signature.
  let f = fixture();
  for (pointer, replacement) in [
    ("/files/0/sha256", Value::String("0".repeat(64))),
    ("/files/0/size", Value::from(1)),
    ("/files/2/path", Value::String("learnings/z.json".into())),
    ("/exclude", serde_json::json!(["*.md"])),
    ("/createdAt", Value::String("2020-01-01T00:00:00.000Z".into())),
  ] {
    let mut forged = f.signed.clone();
    *forged.pointer_mut(pointer).unwrap() = replacement;
    let v = verify_signature(&forged, &f.keys);
    assert!(!v.ok, "{pointer} not covered");
  }
  let mut forged = f.signed.clone();
  forged["files"].as_array_mut().unwrap().pop();
  assert!(!verify_signature(&forged, &f.keys).ok);
  let mut unsigned = f.signed.clone();
  unsigned.as_object_mut().unwrap().remove("signature");
  assert_eq!(verify_signature(&unsigned, &f.keys).problems[0].detail, "the manifest is not signed");
  // Another ring's key does not verify.
  let other = KeyRing::with_seed(&f.root.parent().unwrap().join("other"), KeyPolicy::default(), None).unwrap();
  other.generate().unwrap();
  assert!(!verify_signature(&f.signed, &TrustedKey::from_ring(&other).unwrap()).ok);
  // A revoked key no longer verifies.
  f.ring.revoke(&f.keys[0].key_id, "test").unwrap();
  assert!(!verify_signature(&f.signed, &TrustedKey::from_ring(&f.ring).unwrap()).ok);
}

#[test]
fn renames_additions_deletions_are_detected() {
  let f = fixture();
  fs::rename(f.root.join("learnings/a.json"), f.root.join("learnings/a2.json")).unwrap();
  let v = verify_manifest(&f.root, &f.signed, &f.keys, None).unwrap();
  assert_eq!(
    kinds(&v),
    [("learnings/a.json".into(), ProblemKind::Missing), ("learnings/a2.json".into(), ProblemKind::Unexpected)]
  );
  fs::rename(f.root.join("learnings/a2.json"), f.root.join("learnings/a.json")).unwrap();
  fs::write(f.root.join("learnings/deep/new"), "x").unwrap();
  let v = verify_manifest(&f.root, &f.signed, &f.keys, None).unwrap();
  assert_eq!(kinds(&v), [("learnings/deep/new".into(), ProblemKind::Unexpected)]);
  fs::remove_file(f.root.join("learnings/deep/new")).unwrap();
  fs::remove_file(f.root.join("empty")).unwrap();
  let v = verify_manifest(&f.root, &f.signed, &f.keys, None).unwrap();
  assert_eq!(kinds(&v), [("empty".into(), ProblemKind::Missing)]);
  // An empty directory is not a file: creating one changes nothing.
  fs::write(f.root.join("empty"), b"").unwrap();
  fs::create_dir(f.root.join("newdir")).unwrap();
  assert!(verify_manifest(&f.root, &f.signed, &f.keys, None).unwrap().ok);
}

#[test]
fn escaping_paths_are_refused_on_creation_and_reported_on_verification() {
  let f = fixture();
  let outside = f.root.parent().unwrap().join("outside");
  fs::write(&outside, "secret").unwrap();
  symlink(&outside, f.root.join("link")).unwrap();
  let err = create_manifest(&f.root, &ManifestOptions::default(), &mut |_| Ok(())).unwrap_err();
  assert_eq!(err.code(), "E_PATH_OUTSIDE_ROOT");
  let v = verify_manifest(&f.root, &f.signed, &f.keys, None).unwrap();
  assert_eq!(kinds(&v), [("link".into(), ProblemKind::Path)]);
  // Excluding it makes creation work; a symlink to a file inside the root is covered by content.
  fs::remove_file(f.root.join("link")).unwrap();
  symlink(f.root.join("NOTES.md"), f.root.join("notes-link")).unwrap();
  symlink(f.root.join("learnings"), f.root.join("dir-link")).unwrap();
  let m = create_manifest(&f.root, &ManifestOptions::default(), &mut |_| Ok(())).unwrap();
  let paths: Vec<&str> = m.files.iter().map(|e| e.path.as_str()).collect();
  assert!(paths.contains(&"notes-link") && !paths.iter().any(|p| p.starts_with("dir-link")));
  // Entries that climb out are refused when signing and reported when verifying.
  for bad in ["../outside", "/etc/passwd", "a/../../outside", "./NOTES.md", "a//b"] {
    let mut value = m.to_value();
    value["files"][0]["path"] = Value::String(bad.into());
    let code = sign_manifest(&value, &f.ring).unwrap_err().code();
    assert!(code == "E_PATH_OUTSIDE_ROOT" || code == "E_INVALID_ARGUMENT", "{bad}: {code}");
    let mut forged = f.signed.clone();
    forged["files"][0]["path"] = Value::String(bad.into());
    let v = verify_manifest(&f.root, &forged, &f.keys, None).unwrap();
    assert!(v.problems.iter().any(|p| p.path == bad && p.kind == ProblemKind::Path), "{bad}: {:?}", v.problems);
  }
  // A listed path that now resolves outside through a symlinked directory.
  fs::remove_file(f.root.join("learnings/a.json")).unwrap();
  symlink(&outside, f.root.join("learnings/a.json")).unwrap();
  let v = verify_manifest(&f.root, &f.signed, &f.keys, None).unwrap();
  assert!(v.problems.iter().any(|p| p.path == "learnings/a.json" && p.kind == ProblemKind::Path), "{:?}", v.problems);
}

#[test]
fn patterns_are_kept_and_reapplied() {
  let f = fixture();
  fs::write(f.root.join("scratch.tmp"), "x").unwrap();
  let options = ManifestOptions {
    include: vec![],
    exclude: vec!["*.tmp".into(), "./manifest.json".into()],
    threads: Some(2),
    ..Default::default()
  };
  let m = create_manifest(&f.root, &options, &mut |_| Ok(())).unwrap();
  assert!(m.files.iter().all(|e| !e.path.ends_with(".tmp")));
  let signed = sign_manifest(&m.to_value(), &f.ring).unwrap();
  write_manifest(&f.root.join("manifest.json"), &signed).unwrap();
  fs::write(f.root.join("other.tmp"), "y").unwrap();
  assert!(verify_manifest(&f.root, &signed, &f.keys, None).unwrap().ok);
  fs::write(f.root.join("sub.json"), "y").unwrap();
  assert_eq!(
    kinds(&verify_manifest(&f.root, &signed, &f.keys, None).unwrap()),
    [("sub.json".into(), ProblemKind::Unexpected)]
  );
}

#[test]
fn progress_is_reported_and_a_failing_callback_stops_hashing() {
  let f = fixture();
  let mut last = Progress::default();
  create_manifest(&f.root, &ManifestOptions::default(), &mut |p| {
    last = p;
    Ok(())
  })
  .unwrap();
  assert_eq!((last.files_done, last.files_total), (4, 4));
  assert_eq!(last.bytes_done, last.bytes_total);
  let err =
    create_manifest(&f.root, &ManifestOptions::default(), &mut |_| Err(LoaError::InvalidArgument("stop".into())))
      .unwrap_err();
  assert_eq!(err.to_string(), "invalid argument: stop");
}

#[test]
fn env_key_alone_signs_and_verifies() {
  // SPEC item 7: with only a signing key configured, the public key is derived and boot
  // verification succeeds.
  let f = fixture();
  let seed = crate::sign::keys::parse_seed(&"42".repeat(32), "test").unwrap();
  let ring =
    KeyRing::with_seed(&f.root.parent().unwrap().join("no-such-dir"), KeyPolicy::default(), Some(seed)).unwrap();
  let m = create_manifest(&f.root, &ManifestOptions::default(), &mut |_| Ok(())).unwrap();
  let signed = sign_manifest(&m.to_value(), &ring).unwrap();
  assert!(verify_manifest(&f.root, &signed, &TrustedKey::from_ring(&ring).unwrap(), None).unwrap().ok);
  assert!(!f.root.parent().unwrap().join("no-such-dir").exists());
}

fn mkfifo(path: &Path) {
  rustix::fs::mknodat(rustix::fs::CWD, path, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o600), 0)
    .unwrap();
}

#[test]
fn unknown_members_anywhere_are_refused() {
  let f = fixture();
  // Inside the signature object: not covered by the signature, so never accepted.
  let mut forged = f.signed.clone();
  forged["signature"]["note"] = Value::String("added later".into());
  let v = verify_manifest(&f.root, &forged, &f.keys, None).unwrap();
  assert!(!v.ok && v.problems.iter().any(|p| p.kind == ProblemKind::Signature), "{:?}", v.problems);
  assert!(!verify_signature(&forged, &f.keys).ok);
  // Top level and entries: refused when signing and when verifying.
  let m = create_manifest(&f.root, &ManifestOptions::default(), &mut |_| Ok(())).unwrap();
  for pointer in ["", "/files/0"] {
    let mut value = m.to_value();
    value.pointer_mut(pointer).unwrap().as_object_mut().unwrap().insert("extra".into(), Value::from(1));
    assert_eq!(sign_manifest(&value, &f.ring).unwrap_err().code(), "E_INVALID_ARGUMENT", "{pointer}");
    let mut forged = f.signed.clone();
    forged.pointer_mut(pointer).unwrap().as_object_mut().unwrap().insert("extra".into(), Value::from(1));
    assert!(!verify_signature(&forged, &f.keys).ok, "{pointer}");
  }
}

#[test]
fn fifos_and_symlinks_to_them_are_reported_never_skipped_and_never_hang() {
  let f = fixture();
  mkfifo(&f.root.join("learnings/pipe"));
  symlink(f.root.join("learnings/pipe"), f.root.join("pipe-link")).unwrap();
  let err = create_manifest(&f.root, &ManifestOptions::default(), &mut |_| Ok(())).unwrap_err();
  assert_eq!(err.code(), "E_NOT_REGULAR_FILE", "{err}");
  let v = verify_manifest(&f.root, &f.signed, &f.keys, None).unwrap();
  assert_eq!(
    kinds(&v),
    [("learnings/pipe".into(), ProblemKind::Unexpected), ("pipe-link".into(), ProblemKind::Unexpected)]
  );
  // Only the symlink (the FIFO itself excluded): still reported.
  let options = ManifestOptions { exclude: vec!["pipe".into()], ..Default::default() };
  let err = create_manifest(&f.root, &options, &mut |_| Ok(())).unwrap_err();
  assert_eq!(err.code(), "E_NOT_REGULAR_FILE", "{err}");
  // A listed file replaced by a FIFO is modified, and verifying does not block on it.
  fs::remove_file(f.root.join("pipe-link")).unwrap();
  fs::remove_file(f.root.join("learnings/pipe")).unwrap();
  fs::remove_file(f.root.join("NOTES.md")).unwrap();
  mkfifo(&f.root.join("NOTES.md"));
  let v = verify_manifest(&f.root, &f.signed, &f.keys, None).unwrap();
  assert_eq!(kinds(&v), [("NOTES.md".into(), ProblemKind::Modified)]);
  fs::remove_file(f.root.join("NOTES.md")).unwrap();
  symlink(f.root.join("learnings/pipe"), f.root.join("NOTES.md")).unwrap();
  mkfifo(&f.root.join("learnings/pipe"));
  let v = verify_manifest(&f.root, &f.signed, &f.keys, None).unwrap();
  assert!(v.problems.iter().any(|p| p.path == "NOTES.md" && p.kind == ProblemKind::Modified), "{:?}", v.problems);
}

#[test]
fn our_own_temp_files_are_neither_covered_nor_tampering() {
  let f = fixture();
  fs::write(f.root.join(".NOTES.md.tmp-2147483646-0"), "half").unwrap();
  fs::write(f.root.join("learnings/.a.json.loa-tmp-2147483646-4"), "half").unwrap();
  let v = verify_manifest(&f.root, &f.signed, &f.keys, None).unwrap();
  assert!(v.ok, "{:?}", v.problems);
  let m = create_manifest(&f.root, &ManifestOptions::default(), &mut |_| Ok(())).unwrap();
  assert_eq!(m.files.len(), 4, "temp files are not covered");
  // A name that merely looks similar is a file like any other.
  fs::write(f.root.join(".NOTES.md.tmp-x-0"), "not ours").unwrap();
  let v = verify_manifest(&f.root, &f.signed, &f.keys, None).unwrap();
  assert_eq!(kinds(&v), [(".NOTES.md.tmp-x-0".into(), ProblemKind::Unexpected)]);
}

#[test]
fn manifest_files_are_read_and_written_only_as_regular_files() {
  let f = fixture();
  let dir = f.root.parent().unwrap();
  let file = dir.join("manifest.json");
  write_manifest(&file, &f.signed).unwrap();
  symlink(&file, dir.join("link.json")).unwrap();
  assert_eq!(read_manifest(&dir.join("link.json")).unwrap_err().code(), "E_NOT_REGULAR_FILE");
  assert_eq!(write_manifest(&dir.join("link.json"), &f.signed).unwrap_err().code(), "E_NOT_REGULAR_FILE");
  assert_eq!(read_manifest(dir).unwrap_err().code(), "E_NOT_REGULAR_FILE");
  assert_eq!(read_manifest(&file).unwrap(), f.signed);
}

#[test]
fn the_signed_manifest_anchors_the_audit_log_head() {
  use crate::audit::{Actor, AuditEvent, AuditLog, AuditOptions, CHECKPOINT_FILE};
  let f = fixture();
  let audit_dir = f.root.join("audit");
  let log = AuditLog::open(&audit_dir, AuditOptions::default()).unwrap();
  let event = |i: u64| AuditEvent { action: format!("test.{i}"), actor: Actor::System, details: None };
  for i in 1..=5 {
    log.append(&event(i)).unwrap();
  }
  log.checkpoint(&f.ring).unwrap();
  let options = ManifestOptions { audit_dir: Some("audit".into()), ..Default::default() };
  let m = create_manifest(&f.root, &options, &mut |_| Ok(())).unwrap();
  let anchor = m.audit_head.clone().unwrap();
  assert_eq!((anchor.dir.as_str(), anchor.seq), ("audit", 5));
  assert_eq!(anchor.hash, log.head().unwrap().hash);
  assert!(m.exclude.contains(&"./audit/**".to_string()), "the growing log is left to the anchor");
  assert!(m.files.iter().all(|e| !e.path.starts_with("audit/")));
  let signed = sign_manifest(&m.to_value(), &f.ring).unwrap();
  // The anchor is covered by the signature.
  let mut forged = signed.clone();
  forged["auditHead"]["seq"] = Value::from(2);
  assert!(!verify_signature(&forged, &f.keys).ok);
  // The log grows: still fine.
  log.append(&event(6)).unwrap();
  assert!(verify_manifest(&f.root, &signed, &f.keys, None).unwrap().ok);

  // Cut entries off the end and delete the checkpoint with them: the manifest still knows.
  let segment = crate::audit::list_segments(&audit_dir).unwrap().pop().unwrap().1;
  let text = fs::read_to_string(&segment).unwrap();
  let kept: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
  fs::write(&segment, kept).unwrap();
  fs::remove_file(audit_dir.join(CHECKPOINT_FILE)).unwrap();
  assert!(crate::audit::verify(&audit_dir, None, None).unwrap().ok, "the chain alone cannot tell");
  let v = verify_manifest(&f.root, &signed, &f.keys, None).unwrap();
  assert_eq!(kinds(&v), [("audit".into(), ProblemKind::Truncated)], "{:?}", v.problems);
  assert!(v.problems[0].detail.contains("E_AUDIT_TRUNCATED"));
  // The whole log deleted: truncated as well.
  fs::remove_dir_all(&audit_dir).unwrap();
  let v = verify_manifest(&f.root, &signed, &f.keys, None).unwrap();
  assert_eq!(kinds(&v), [("audit".into(), ProblemKind::Truncated)]);
  // A log rewritten from the start (same length, other entries): modified.
  let log = AuditLog::open(&audit_dir, AuditOptions::default()).unwrap();
  for i in 11..=16 {
    log.append(&event(i)).unwrap();
  }
  let v = verify_manifest(&f.root, &signed, &f.keys, None).unwrap();
  assert_eq!(kinds(&v), [("audit".into(), ProblemKind::Modified)], "{:?}", v.problems);
  // Anchoring a log that does not verify, or one behind a symlink, is refused.
  let escaped = ManifestOptions { audit_dir: Some("../audit".into()), ..Default::default() };
  assert_eq!(create_manifest(&f.root, &escaped, &mut |_| Ok(())).unwrap_err().code(), "E_PATH_OUTSIDE_ROOT");
  symlink(&audit_dir, f.root.join("audit-link")).unwrap();
  let linked = ManifestOptions { audit_dir: Some("audit-link".into()), ..Default::default() };
  assert_eq!(create_manifest(&f.root, &linked, &mut |_| Ok(())).unwrap_err().code(), "E_PATH_OUTSIDE_ROOT");
}
