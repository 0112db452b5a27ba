//! Sealing: the grimoire signed as a consolidation leaves it.
//!
//! Recovery trusts the grimoire only when a manifest signed by a pinned key covers every file
//! in it (see `docs/recovery.md`). Consolidation rewrites NOTES.md, the memory records, the
//! summary and the search index, so a manifest signed before it no longer verifies: a
//! consolidation given a key ring therefore ends by *sealing*: it folds the search index's log
//! into its base, hashes every file of the grimoire, signs the manifest and writes it
//! atomically, all under the consolidation lock (which the ledger's NOTES.md edits take too), so
//! no consolidation or ledger edit of this workspace changes a file between hash and signature.
//!
//! The capture path never holds the private key: a capture only appends to the WAL (outside
//! the grimoire) and to the index's log, which the seal leaves out ([`UNSEALED`]) because it is
//! derived state appended between seals and rebuilt from the memory records when damaged. The
//! index's base, which holds everything indexed at the seal, is covered. Anything else written
//! into the grimoire after a seal (a `forget`, a ledger checkpoint, a hand edit) leaves the
//! manifest stale until the next sealed consolidation, and recovery treats a stale manifest as
//! tampering: callers that seal should consolidate (with the key) after those writes.
//!
//! Cost: every file of the grimoire is read and hashed (on all cores, see
//! [`crate::sign::create_manifest`]), so a seal costs time in the grimoire's size, unlike the
//! consolidation before it; it is optional for that reason.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{invalid, LoaError, Result};
use crate::fsutil::relative_components;
use crate::search::SearchIndex;
use crate::sign::keys::KeyRing;
use crate::sign::manifest::{create_manifest, sign_manifest, write_manifest, ManifestOptions};

use super::layout::Layout;
use super::search::{all_documents, index_options, INDEX_DIR};

/// Files of the grimoire a seal leaves out besides the manifest itself: the search index's log
/// (appended by every capture), its lock file, and its sources stamp (rewritten when a store
/// closes; it only says whether the next open may skip reconciling the index).
pub const UNSEALED: [&str; 3] = ["search/search-index.log", "search/search-index.lock", "search/search-index.sources"];

/// The manifest's default file name, directly inside the grimoire (config
/// `signing.manifest_path`, `grimoires/loa/manifest.json`), where recovery looks for it.
pub const DEFAULT_MANIFEST_NAME: &str = "manifest.json";

/// What a consolidation seals with.
#[derive(Clone)]
pub struct SealRequest {
  /// Its signing key (`LOA_SIGNING_KEY` when set, else the ring's active key) signs. For
  /// recovery to trust the result the matching public key must be pinned, and the private key
  /// kept outside the workspace. The manifest's name comes from the store's options
  /// ([`super::StoreOptions::manifest_name`]).
  pub ring: Arc<KeyRing>,
}

impl std::fmt::Debug for SealRequest {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_struct("SealRequest").field("ring", &self.ring.dir()).finish()
  }
}

/// A seal written by a consolidation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
  /// The signed manifest written.
  pub manifest: PathBuf,
  /// The key that signed it.
  pub key_id: String,
  /// Files covered, and their bytes.
  pub files: usize,
  pub bytes: u64,
}

/// The manifest's name, checked as recovery checks it: one plain path component.
fn manifest_name(layout: &Layout) -> Result<&str> {
  let name = layout.manifest_name.as_deref().ok_or_else(|| LoaError::ConfigInvalid {
    key: "signing.manifest_path".into(),
    reason: "a sealed consolidation writes the manifest directly inside `grimoires_dir`".into(),
  })?;
  if relative_components(Path::new(name))?.len() != 1 {
    return invalid("the manifest name must be a plain file name inside the grimoire");
  }
  Ok(name)
}

/// What a seal needs, checked before a consolidation changes anything: a usable manifest name,
/// a signing key in the ring (`E_CONFIG_INVALID`, `E_KEY_NOT_FOUND`, `E_KEY_INVALID`) and a
/// manifest slot the seal can write (`E_NOT_REGULAR_FILE` for a symlink, FIFO or directory
/// there): found only at the end, it would fail the call after the WAL was applied. A
/// workspace recovery left degraded is refused with `E_DEGRADED` (and an unreadable recovery
/// state with its own code): its grimoire failed verification and was not restored, and a seal
/// would sign that content with a pinned key, so that the next recovery trusted it.
pub(crate) fn preflight(layout: &Layout, request: &SealRequest) -> Result<()> {
  let name = manifest_name(layout)?;
  request.ring.signing_key(false)?;
  if crate::recovery::DegradedProbe::default().is_degraded(&layout.root()?, &layout.recovery_state)? {
    return Err(crate::recovery::degraded_error());
  }
  if let Some(grimoire) = layout.dir(&layout.grimoire, false)? {
    // Opened without following a symlink or blocking on a FIFO; only its kind matters here.
    grimoire.open_file_if_exists(name, crate::fsutil::OpenMode::READ)?;
  }
  Ok(())
}

/// Seals the grimoire (see the module docs). The caller holds the consolidation lock. `index`:
/// the store's open index; without one, the workspace's index is opened when it exists.
pub(crate) fn seal(layout: &Layout, index: Option<&SearchIndex>, request: &SealRequest) -> Result<Sealed> {
  let name = manifest_name(layout)?;
  match index {
    Some(index) => index.compact()?,
    None => {
      let grimoire = layout.dir(&layout.grimoire, true)?;
      if let Some(dir) = grimoire.map(|g| g.subdir(INDEX_DIR)).transpose()?.flatten() {
        let (index, _) = SearchIndex::open_or_rebuild(dir, index_options(layout), || all_documents(layout))?;
        index.compact()?;
      }
    }
  }
  let grimoire = layout.grimoire_path();
  let mut exclude = vec![name.to_string()];
  exclude.extend(UNSEALED.iter().map(|p| (*p).to_string()));
  let options = ManifestOptions { exclude, ..Default::default() };
  let manifest = create_manifest(&grimoire, &options, &mut |_| Ok(()))?;
  let (files, bytes) = (manifest.files.len(), manifest.files.iter().map(|f| f.size).sum());
  let signed = sign_manifest(&manifest.to_value(), &request.ring)?;
  let key_id = signed["signature"]["keyId"].as_str().unwrap_or_default().to_string();
  let path = grimoire.join(name);
  write_manifest(&path, &signed)?;
  Ok(Sealed { manifest: path, key_id, files, bytes })
}
