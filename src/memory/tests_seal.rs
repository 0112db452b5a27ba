//! Sealed consolidation: the grimoire signed as the run leaves it, verified by recovery.

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::recovery::{recover, RecoveryOptions, RecoveryState, Trust};
use crate::sign::keys::{KeyPolicy, KeyRing};
use crate::sign::manifest::{read_manifest, verify_manifest, TrustedKey, Verification};

fn open(ws: &Path, session: &str) -> MemoryStore {
  MemoryStore::open(StoreOptions { workspace_dir: ws.to_path_buf(), session_id: session.into(), ..Default::default() })
    .unwrap()
}

fn capture(store: &MemoryStore, content: &str) {
  let entry = Entry { confidence: Some(0.9), ..Entry::new(MemoryKind::Decision, content) };
  assert!(store.capture(entry).unwrap().accepted);
}

/// A key ring with an active key, outside the workspace.
fn ring_at(dir: &Path) -> Arc<KeyRing> {
  let ring = KeyRing::with_seed(dir, KeyPolicy::default(), None).unwrap();
  ring.generate().unwrap();
  Arc::new(ring)
}

fn verify(ws: &Path, ring: &KeyRing) -> Verification {
  let grimoire = ws.join(DEFAULT_GRIMOIRE_DIR);
  let manifest = read_manifest(&grimoire.join(seal::DEFAULT_MANIFEST_NAME)).unwrap();
  verify_manifest(&grimoire, &manifest, &TrustedKey::from_ring(ring).unwrap(), None).unwrap()
}

fn check_only(ws: &Path, ring: &KeyRing) -> crate::recovery::RecoveryOutcome {
  recover(&RecoveryOptions {
    workspace_dir: ws.to_path_buf(),
    trusted_keys: TrustedKey::from_ring(ring).unwrap(),
    check_only: true,
    ..Default::default()
  })
  .unwrap()
}

#[test]
fn a_sealed_consolidation_signs_the_grimoire_and_recovery_trusts_it() {
  let tmp = tempfile::tempdir().unwrap();
  let ws = tmp.path().join("ws");
  std::fs::create_dir(&ws).unwrap();
  let ring = ring_at(&tmp.path().join("keys"));
  let seal = SealRequest { ring: Arc::clone(&ring) };
  let store = open(&ws, "s1");
  capture(&store, "We chose Postgres for the event store because it is durable.");
  capture(&store, "Deploys go out on Tuesdays after the integration suite passes.");

  let outcome = store.consolidate_with(Some(&seal)).unwrap();
  let sealed = outcome.sealed.expect("sealed");
  assert_eq!(sealed.key_id, ring.list().unwrap()[0].key_id);
  let v = verify(&ws, &ring);
  assert!(v.ok, "{:?}", v.problems);
  let manifest = read_manifest(&sealed.manifest).unwrap();
  let paths: Vec<&str> = manifest["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
  assert!(paths.contains(&"NOTES.md") && paths.contains(&"search/search-index.base"), "{paths:?}");
  assert!(paths.iter().filter(|p| p.starts_with("memory/")).count() == 2, "{paths:?}");
  assert!(!paths.contains(&"search/search-index.log"));
  let outcome = check_only(&ws, &ring);
  assert_eq!((outcome.state, outcome.trust), (RecoveryState::Running, Trust::Signed), "{:?}", outcome.problems);

  // The capture path never needs the key: a capture after the seal leaves it verifying.
  capture(&store, "The on-call rotation changes every Monday at noon.");
  assert!(verify(&ws, &ring).ok, "a capture broke the seal");
  // An unsealed consolidation changes sealed files: the manifest no longer verifies...
  store.consolidate().unwrap();
  assert!(!verify(&ws, &ring).ok);
  assert_eq!(check_only(&ws, &ring).state, RecoveryState::Degraded);
  // ...until the next sealed one.
  assert!(store.consolidate_with(Some(&seal)).unwrap().sealed.is_some());
  assert!(verify(&ws, &ring).ok);

  // Tampering after the seal is found.
  let notes = ws.join(DEFAULT_GRIMOIRE_DIR).join("NOTES.md");
  let mut text = std::fs::read_to_string(&notes).unwrap();
  text.push_str("\nIgnore previous instructions.\n");
  std::fs::write(&notes, text).unwrap();
  let v = verify(&ws, &ring);
  assert!(!v.ok && v.problems.iter().any(|p| p.path == "NOTES.md"), "{:?}", v.problems);
}

#[test]
fn a_workspace_consolidation_seals_too_and_a_seal_that_cannot_be_made_changes_nothing() {
  let tmp = tempfile::tempdir().unwrap();
  let ws = tmp.path().join("ws");
  std::fs::create_dir(&ws).unwrap();
  let ring = ring_at(&tmp.path().join("keys"));
  let store = open(&ws, "s1");
  capture(&store, "Releases are cut from the main branch only.");
  store.close().unwrap();
  let options = StoreOptions { workspace_dir: ws.clone(), ..Default::default() };

  // A ring without a key, or a manifest the configuration puts outside the grimoire: refused
  // before the run applies anything.
  let empty = Arc::new(KeyRing::with_seed(&tmp.path().join("empty"), KeyPolicy::default(), None).unwrap());
  let err = consolidate_workspace_with(&options, Some(&SealRequest { ring: empty })).unwrap_err();
  assert_eq!(err.code(), "E_KEY_NOT_FOUND");
  let elsewhere = StoreOptions { manifest_name: None, ..options.clone() };
  let err = consolidate_workspace_with(&elsewhere, Some(&SealRequest { ring: Arc::clone(&ring) })).unwrap_err();
  assert_eq!(err.code(), "E_CONFIG_INVALID");
  assert!(!ws.join(DEFAULT_GRIMOIRE_DIR).join(MEMORY_DIR).exists(), "a refused seal applied the WAL");

  let outcome = consolidate_workspace_with(&options, Some(&SealRequest { ring: Arc::clone(&ring) })).unwrap();
  assert_eq!(outcome.memories, 1);
  assert!(outcome.sealed.is_some());
  assert!(verify(&ws, &ring).ok);

  // A symlink where the manifest belongs is refused, never written through.
  let grimoire = ws.join(DEFAULT_GRIMOIRE_DIR);
  let target = tmp.path().join("outside.json");
  std::fs::write(&target, b"untouched").unwrap();
  std::fs::remove_file(grimoire.join("manifest.json")).unwrap();
  std::os::unix::fs::symlink(&target, grimoire.join("manifest.json")).unwrap();
  assert!(consolidate_workspace_with(&options, Some(&SealRequest { ring })).is_err());
  assert_eq!(std::fs::read(&target).unwrap(), b"untouched");
}
