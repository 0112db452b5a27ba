//! The WAL checkpoint (this origin's consolidation state) as push ships it with the sealed
//! grimoire and pull restores it, and the shipped marks (`.loa/replicate/shipped.json`) that
//! keep retention from removing what push has not shipped (docs/replication.md).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use loa_core::config::{store_options, MemoryOverrides};
use loa_core::fsutil::StateDir;
use loa_core::wal::checkpoint::{restore_checkpoint, Checkpoint, Restored};
use loa_core::wal::shipped::write_shipped;
use loa_core::{LoaError, Result};

use loa_core::memory::checkpoint_with;

use super::Context;
use crate::index::{checkpoint_key, CheckpointEntry, Index, ObjectEntry, ShardEntry};
use crate::local::{self, NoSnapshot, Snapshot};
use crate::segments::sha256_hex;

/// What push records of each session, for retention: the last seq of the run of segments,
/// from the oldest one still here, that are all in the bucket. A segment that could not be
/// shipped (damaged, behind the replica) ends the run for its session.
#[derive(Debug, Default)]
pub(super) struct ShippedMarks {
  marks: BTreeMap<String, u64>,
  stopped: BTreeSet<String>,
}

impl ShippedMarks {
  /// A segment of `session` up to `last_seq` is in the bucket (shipped now or before).
  pub(super) fn shipped(&mut self, session: &str, last_seq: u64) {
    if !self.stopped.contains(session) {
      self.marks.insert(session.to_string(), last_seq);
    }
  }

  /// A segment of `session` is not in the bucket: later ones do not count.
  pub(super) fn gap(&mut self, session: &str) {
    self.stopped.insert(session.to_string());
  }

  /// Writes `shipped.json` into the replicate state directory. A failure keeps the previous
  /// file (retention then keeps more) and is listed as a problem.
  pub(super) fn write(self, state_dir: &StateDir, problems: &mut Vec<String>) {
    if let Err(e) = write_shipped(state_dir, &self.marks) {
      problems.push(format!("what was shipped could not be recorded for retention: {}: {e}", e.code()));
    }
  }
}

/// The consolidation state (or why it could not be read) and the sealed grimoire (or why there
/// is none to ship), read together.
pub(super) type Captured = (Result<Option<Checkpoint>>, std::result::Result<Snapshot, NoSnapshot>);

/// The consolidation state and the sealed grimoire, read together while no consolidation of the
/// workspace runs (its consolidation lock held).
pub(super) fn capture(cx: &Context) -> Result<Captured> {
  let store = store_options(&cx.workspace, &MemoryOverrides::default())?;
  let manifest_name = cx.settings.config.manifest_name()?;
  checkpoint_with(&store, || local::read_snapshot(&cx.root, &cx.grimoire_dir(), &manifest_name))
}

/// The directory of this origin's checkpoint objects.
pub(super) fn dir(origin: &str) -> String {
  format!("origins/{origin}/checkpoint")
}

/// The keys of the checkpoint objects `index` names.
pub(super) fn keys(index: &Index) -> Vec<String> {
  index.checkpoint.iter().flat_map(|c| c.objects().map(|(sha, _)| checkpoint_key(&index.origin, sha))).collect()
}

/// Ships the checkpoint with the sealed grimoire whose manifest digest is `sealed` (the one the
/// index now names): each object stored by digest, uploaded unless the previous index names it
/// or an object of that size is there. Without a grimoire as sealed, the index keeps the
/// checkpoint shipped with the grimoire it names, and only that one.
pub(super) async fn ship(
  cx: &Context,
  index: &mut Index,
  captured: Result<Option<Checkpoint>>,
  sealed: Option<&str>,
  problems: &mut Vec<String>,
) -> Result<&'static str> {
  let named = index.grimoire.as_ref().map(|g| g.manifest_sha256.as_str());
  if index.checkpoint.as_ref().is_some_and(|c| Some(c.manifest_sha256.as_str()) != named) {
    index.checkpoint = None;
  }
  let Some(manifest) = sealed.filter(|&m| Some(m) == named) else {
    return Ok(if index.checkpoint.is_some() { "stale" } else { "none" });
  };
  let checkpoint = match captured {
    Ok(Some(c)) => c,
    Ok(None) => {
      index.checkpoint = None;
      return Ok("none");
    }
    Err(e) => {
      problems.push(format!("checkpoint not shipped: {}: {e}", e.code()));
      index.checkpoint = None;
      return Ok("none");
    }
  };
  let entry = CheckpointEntry {
    manifest_sha256: manifest.to_string(),
    head: ObjectEntry { size: checkpoint.head.len() as u64, sha256: sha256_hex(&checkpoint.head) },
    shards: checkpoint
      .shards
      .iter()
      .map(|(name, bytes)| ShardEntry { name: name.clone(), size: bytes.len() as u64, sha256: sha256_hex(bytes) })
      .collect(),
  };
  if index.checkpoint.as_ref() == Some(&entry) {
    return Ok("unchanged");
  }
  let known: BTreeSet<String> =
    index.checkpoint.iter().flat_map(|c| c.objects().map(|(sha, _)| sha.to_string())).collect();
  let origin = index.origin.clone();
  let bodies = std::iter::once(checkpoint.head).chain(checkpoint.shards.into_iter().map(|(_, bytes)| bytes));
  let mut done = BTreeSet::new();
  for ((sha, size), bytes) in entry.objects().zip(bodies) {
    if known.contains(sha) || !done.insert(sha.to_string()) {
      continue;
    }
    let key = checkpoint_key(&origin, sha);
    // Stored by digest: an object of the right size there is this content (pull checks it).
    if cx.remote.size(&key).await? == Some(size) {
      continue;
    }
    cx.progress.say(|| format!("uploading {key} ({size} bytes)"));
    cx.remote.put(&key, bytes).await?;
  }
  index.checkpoint = Some(entry);
  Ok("uploaded")
}

/// Restores this origin's checkpoint into a workspace that had no WAL and got its grimoire
/// from this pull (`fresh`): every object checked against the index (size, sha256), then by the
/// core ([`Checkpoint`]: versions, names, paths), then written only where there is no
/// consolidation state, its watermarks lowered to what the restored WAL holds. With
/// `--until-seq N`, a checkpoint that counts a record of this origin after N as applied is not
/// restored: consolidation then applies the restored records as before checkpoints existed.
pub(super) async fn restore(
  cx: &Context,
  index: Option<&Index>,
  fresh: bool,
  until_seq: Option<u64>,
  problems: &mut Vec<String>,
) -> Result<&'static str> {
  let Some((index, entry)) = index.and_then(|i| i.checkpoint.as_ref().map(|c| (i, c))) else { return Ok("none") };
  if index.grimoire.as_ref().map(|g| g.manifest_sha256.as_str()) != Some(entry.manifest_sha256.as_str()) {
    problems.push("checkpoint not restored: it does not go with the grimoire the index names".into());
    return Ok("skipped");
  }
  if !fresh {
    return Ok("kept");
  }
  let origin = index.origin.as_str();
  let head_key = checkpoint_key(origin, &entry.head.sha256);
  let full_key = cx.remote.full_key(&head_key);
  // What the core refuses in the bucket's objects is the replica's corruption, not this state's.
  let corrupt = |e: LoaError| match e {
    LoaError::StateCorrupt { reason, .. } => LoaError::ReplicaCorrupt { key: full_key.clone(), reason },
    other => other,
  };
  let head = cx.fetch_checked(&head_key, entry.head.size, &entry.head.sha256).await?;
  if let Some(until) = until_seq {
    let own: BTreeSet<&str> = index.segments.iter().map(|s| s.session.as_str()).collect();
    let applied = Checkpoint { head: head.clone(), shards: Vec::new() }.sessions().map_err(corrupt)?;
    if applied.iter().any(|(session, &seq)| seq > until && own.contains(session.as_str())) {
      return Ok("skipped");
    }
  }
  let mut shards = Vec::with_capacity(entry.shards.len());
  for s in &entry.shards {
    let key = checkpoint_key(origin, &s.sha256);
    cx.progress.say(|| format!("downloading {key} ({} bytes)", s.size));
    shards.push((s.name.clone(), cx.fetch_checked(&key, s.size, &s.sha256).await?));
  }
  let checkpoint = Checkpoint { head, shards };
  let wal = local::below(&cx.root, &cx.wal_dir(), true)?
    .ok_or_else(|| LoaError::Internal("descend(create) gave None".into()))?;
  let timeout = Duration::from_millis(cx.settings.config.wal.lock_timeout_ms);
  match restore_checkpoint(&wal, &checkpoint, timeout).map_err(corrupt)? {
    Restored::StateExists => Ok("kept"),
    Restored::Written { lowered } => {
      if !lowered.is_empty() {
        problems.push(format!(
          "checkpoint restored with {} session(s) counted as applied only as far as the replica's WAL goes",
          lowered.len()
        ));
      }
      Ok("restored")
    }
  }
}
