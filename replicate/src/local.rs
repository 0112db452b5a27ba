//! The workspace side of a sealed grimoire snapshot and of the ledger events: what push reads
//! and what pull writes, always through the core's file layer (no symlink followed, bounded
//! reads, atomic writes).

use std::path::{Path, PathBuf};

use loa_core::fsutil::StateDir;
use loa_core::sign::manifest::{parse_manifest, MAX_MANIFEST_BYTES};
use loa_core::synth::event::MAX_EVENT_BYTES;
use loa_core::synth::EVENTS_DIR;
use loa_core::{LoaError, Result};

use crate::index::{valid_event_name, EventEntry, GrimoireEntry};
use crate::segments::sha256_hex;

/// A sealed grimoire as it is on disk: the manifest's bytes and every file it lists, each
/// read and found exactly as the manifest records it.
pub struct Snapshot {
  pub entry: GrimoireEntry,
  pub manifest: Vec<u8>,
  /// The bytes of each file of `entry.files`, in the same order.
  pub files: Vec<Vec<u8>>,
}

/// Why no snapshot can be shipped (not an error: a workspace that never sealed has none).
pub enum NoSnapshot {
  /// No grimoire or no manifest in it.
  Missing,
  /// The grimoire changed since it was sealed, or the manifest is not signed.
  Stale(String),
}

/// The directory `relative` below `dir` (`dir` itself when empty), created when `create`.
pub(crate) fn below(dir: &StateDir, relative: &Path, create: bool) -> Result<Option<StateDir>> {
  if relative.as_os_str().is_empty() {
    return dir.try_clone().map(Some);
  }
  dir.descend(relative, create)
}

fn split(path: &str) -> (PathBuf, &str) {
  match path.rsplit_once('/') {
    Some((dir, name)) => (PathBuf::from(dir), name),
    None => (PathBuf::new(), path),
  }
}

/// Reads the sealed grimoire at `grimoire` (relative to `root`) whose signed manifest is
/// `manifest_name`.
pub fn read_snapshot(
  root: &StateDir,
  grimoire: &Path,
  manifest_name: &str,
) -> Result<std::result::Result<Snapshot, NoSnapshot>> {
  let Some(gdir) = below(root, grimoire, false)? else { return Ok(Err(NoSnapshot::Missing)) };
  let Some(manifest) = gdir.read(manifest_name, MAX_MANIFEST_BYTES)? else { return Ok(Err(NoSnapshot::Missing)) };
  let Ok(value) = serde_json::from_slice::<serde_json::Value>(&manifest) else {
    return Ok(Err(NoSnapshot::Stale("the manifest is not JSON".into())));
  };
  if value.get("signature").is_none() {
    return Ok(Err(NoSnapshot::Stale("the manifest is not signed (run loa consolidate --seal)".into())));
  }
  let parsed = match parse_manifest(&value) {
    Ok(m) => m,
    Err(e) => return Ok(Err(NoSnapshot::Stale(format!("the manifest does not parse ({})", e.code())))),
  };
  let mut files = Vec::with_capacity(parsed.files.len());
  for f in &parsed.files {
    let (dir, name) = split(&f.path);
    let changed =
      || Ok(Err(NoSnapshot::Stale("the grimoire changed since it was sealed (run loa consolidate --seal)".into())));
    let Some(fdir) = below(&gdir, &dir, false)? else { return changed() };
    let bytes = match fdir.read(name, f.size) {
      Ok(Some(b)) => b,
      Ok(None) => return changed(),
      Err(LoaError::TooLarge { .. }) => return changed(),
      Err(e) => return Err(e),
    };
    if bytes.len() as u64 != f.size || sha256_hex(&bytes) != f.sha256 {
      return changed();
    }
    files.push(bytes);
  }
  let entry = GrimoireEntry {
    manifest: manifest_name.to_string(),
    manifest_size: manifest.len() as u64,
    manifest_sha256: sha256_hex(&manifest),
    files: parsed.files,
  };
  Ok(Ok(Snapshot { entry, manifest, files }))
}

/// Whether the grimoire is missing or an empty directory: only then does pull restore it.
pub fn grimoire_is_empty(root: &StateDir, grimoire: &Path) -> Result<bool> {
  Ok(match below(root, grimoire, false)? {
    None => true,
    Some(dir) => dir.entries()?.is_empty(),
  })
}

/// Writes a checked snapshot as the grimoire: every file into a staging directory beside it
/// (same parent, so the same file system), the manifest last, then one rename puts it in
/// place. A failure before the rename leaves no grimoire and a staging directory that the next
/// pull replaces.
pub fn restore_snapshot(root: &StateDir, grimoire: &Path, snapshot: &Snapshot) -> Result<()> {
  let name = grimoire
    .file_name()
    .and_then(|n| n.to_str())
    .ok_or_else(|| LoaError::InvalidArgument("grimoires_dir must name a directory".into()))?;
  let parent_rel = grimoire.parent().unwrap_or(Path::new(""));
  let parent = below(root, parent_rel, true)?.ok_or_else(|| LoaError::Internal("descend(create) gave None".into()))?;
  let staging = format!(".{name}.loa-replica-staging");
  parent.remove_tree(&staging)?;
  let sdir = parent.create_subdir(&staging)?;
  write_snapshot_files(&sdir, snapshot)?;
  // An empty grimoire directory (created by a store that never wrote) gives way.
  if parent.kind_of(name)?.is_some() {
    parent.remove_tree(name)?;
  }
  parent.rename(&staging, name)?;
  parent.sync()
}

/// Writes every file of a checked snapshot below `dir`, the manifest last, each atomically,
/// then fsyncs `dir`.
pub fn write_snapshot_files(dir: &StateDir, snapshot: &Snapshot) -> Result<()> {
  for (entry, bytes) in snapshot.entry.files.iter().zip(&snapshot.files) {
    let (sub, file) = split(&entry.path);
    let fdir = below(dir, &sub, true)?.ok_or_else(|| LoaError::Internal("descend(create) gave None".into()))?;
    fdir.write_atomic(file, bytes, None)?;
  }
  dir.write_atomic(&snapshot.entry.manifest, &snapshot.manifest, None)?;
  dir.sync()
}

/// The ledger event files of the handoffs directory `synth_dir` (relative to `root`): plain
/// names, regular files, at most the synthesis part's event size. Others are skipped.
pub fn local_events(root: &StateDir, synth_dir: &Path) -> Result<Vec<(EventEntry, Vec<u8>)>> {
  let Some(dir) = below(root, synth_dir, false)? else { return Ok(Vec::new()) };
  let Some(events) = dir.subdir(EVENTS_DIR)? else { return Ok(Vec::new()) };
  let mut out = Vec::new();
  for e in events.entries()? {
    let Some(name) = e.name_str() else { continue };
    if !e.is_file() || !valid_event_name(name) {
      continue;
    }
    let Some(bytes) = events.read(name, MAX_EVENT_BYTES)? else { continue };
    out.push((EventEntry { name: name.to_string(), size: bytes.len() as u64, sha256: sha256_hex(&bytes) }, bytes));
  }
  Ok(out)
}

/// Writes an event file that is not there yet (an existing file is never replaced): `false`
/// when the name was taken.
pub fn write_event(root: &StateDir, synth_dir: &Path, name: &str, bytes: &[u8]) -> Result<bool> {
  let dir = below(root, synth_dir, true)?.ok_or_else(|| LoaError::Internal("descend(create) gave None".into()))?;
  let events = dir.create_subdir(EVENTS_DIR)?;
  Ok(events.write_new([name], bytes, None)?.is_some())
}
