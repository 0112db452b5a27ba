//! `push`, `pull` and `status`: what each reads, writes and reports.

mod forgotten;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use loa_core::config::{store_options, MemoryOverrides};
use loa_core::fsutil::StateDir;
use loa_core::lock::{lock_in, LockGuard};
use loa_core::memory::{forget_records, ForgetOptions, TOMBSTONE_OP};
use loa_core::sign::manifest::{parse_manifest, verify_signature, TrustedKey};
use loa_core::synth::event::MAX_EVENT_BYTES;
use loa_core::{LoaError, Result};
use serde::{Deserialize, Serialize};

use crate::index::{blob_key, event_key, index_key, EventEntry, GrimoireEntry, Index, MAX_INDEX_BYTES};
use crate::local::{self, NoSnapshot, Snapshot};
use crate::remote::{Created, Remote};
use crate::segments::{self, check_downloaded, encode_segment, mirror_session, sha256_hex, write_segment};
use crate::settings::{valid_origin, Settings, STATE_DIR};

mod checkpoint;
mod mirrors;
mod requests;

use mirrors::{mirror_by_name, recorded_mirrors, Mirrors};

/// Most origins one pull reads.
const MAX_ORIGINS: usize = 10_000;
/// What pull remembers having fetched from other origins.
const PULLED_FILE: &str = "pulled.json";
const MAX_PULLED_BYTES: u64 = 64 * 1024 * 1024;
const LOCK_FILE: &str = "replicate.lock";

/// Progress lines on stderr for long transfers (a terminal, or `--progress`).
pub struct Progress {
  pub enabled: bool,
}

impl Progress {
  fn say(&self, text: impl FnOnce() -> String) {
    if self.enabled {
      eprintln!("loa replicate: {}", text());
    }
  }
}

/// Everything a command needs: the settings, the bucket, the workspace's root directory.
pub struct Context {
  pub settings: Settings,
  pub remote: Remote,
  pub root: StateDir,
  /// The workspace as given (`root` is its open handle): the core's memory settings are
  /// resolved from it.
  pub workspace: PathBuf,
  pub progress: Progress,
}

impl Context {
  fn wal_dir(&self) -> PathBuf {
    PathBuf::from(&self.settings.config.wal.dir)
  }

  fn grimoire_dir(&self) -> PathBuf {
    PathBuf::from(self.settings.config.grimoires_dir.trim_end_matches('/'))
  }

  fn synth_dir(&self) -> PathBuf {
    PathBuf::from(&self.settings.config.synthesis.dir)
  }

  /// One push or pull at a time per workspace.
  fn lock(&self) -> Result<(StateDir, LockGuard)> {
    let dir =
      self.root.descend(Path::new(STATE_DIR), true)?.ok_or_else(|| LoaError::Internal("no state dir".into()))?;
    let guard = lock_in(&dir, LOCK_FILE, Duration::from_secs(5), "the replication lock")?;
    Ok((dir, guard))
  }

  /// The plain origin names under `origins/` in the bucket.
  async fn origin_names(&self) -> Result<BTreeSet<String>> {
    Ok(self.remote.child_dirs("origins", MAX_ORIGINS).await?.into_iter().filter(|o| valid_origin(o)).collect())
  }

  /// What pull recorded of the mirrors it wrote here (`state_dir`: the replicate state
  /// directory, when there is one), read without moving a damaged record aside (pull does
  /// that, and rebuilds it): see [`mirrors`].
  async fn mirrors(&self, state_dir: Option<&StateDir>, problems: &mut Vec<String>) -> Result<Mirrors> {
    let Some(bytes) = state_dir.map(|d| d.read(PULLED_FILE, MAX_PULLED_BYTES)).transpose()?.flatten() else {
      return Ok(Mirrors::default());
    };
    match serde_json::from_slice::<Pulled>(&bytes) {
      Ok(p) if p.version == 1 => Ok(Mirrors::recorded(recorded_mirrors(p.segments.keys(), &self.settings.origin))),
      _ => {
        problems.push(format!(
          "{PULLED_FILE} is unreadable: sessions named like mirrors of an origin in the bucket are held back until a pull rebuilds it"
        ));
        Ok(Mirrors::unknown(self.origin_names().await?))
      }
    }
  }

  /// The index of `origin`; `None` when it has none yet.
  async fn read_index(&self, origin: &str) -> Result<Option<Index>> {
    let key = index_key(origin);
    match self.remote.get_bounded(&key, MAX_INDEX_BYTES).await? {
      None => Ok(None),
      Some(bytes) => Index::parse(&bytes, origin, &self.remote.full_key(&key)).map(Some),
    }
  }

  /// Downloads `key` and checks it is exactly `size` bytes with digest `sha256`.
  async fn fetch_checked(&self, key: &str, size: u64, sha256: &str) -> Result<Vec<u8>> {
    let corrupt = |reason: &str| LoaError::ReplicaCorrupt { key: self.remote.full_key(key), reason: reason.into() };
    let bytes =
      self.remote.get_bounded(key, size).await?.ok_or_else(|| corrupt("missing, though the index lists it"))?;
    if bytes.len() as u64 != size {
      return Err(corrupt("size differs from the index"));
    }
    if sha256_hex(&bytes) != sha256 {
      return Err(corrupt("sha256 differs from the index"));
    }
    Ok(bytes)
  }
}

/// What a push did.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PushReport {
  pub origin: String,
  pub segments_uploaded: u64,
  pub segments_skipped: u64,
  pub bytes_uploaded: u64,
  /// `uploaded`, `unchanged`, `none` (nothing sealed) or `stale` (changed since sealed).
  pub grimoire: &'static str,
  /// The WAL checkpoint (consolidation state) shipped with the sealed grimoire: `uploaded`,
  /// `unchanged`, `none` (no sealed grimoire or no state), `stale` (the grimoire changed since
  /// sealed: the index keeps the checkpoint shipped with the last seal).
  pub checkpoint: &'static str,
  pub events_uploaded: u64,
  pub events_skipped: u64,
  /// Objects of this origin no index entry names any more (segments superseded or rewritten
  /// by forgetting, blobs of an older seal), deleted after the index was written.
  pub objects_deleted: u64,
  /// Shipped segments no longer here (pruned) rewritten in the bucket because they held
  /// records of memories forgotten here since.
  pub segments_rewritten: u64,
  /// Records replaced by tombstone records in those segments.
  pub records_forgotten: u64,
  /// Entries of mirror sessions (other origins' sessions pull wrote here) that an older push
  /// put into this origin's index, removed (their objects deleted with the garbage).
  pub mirror_entries_removed: u64,
  /// What could not be shipped and why (damaged segments, event name clashes, ...).
  pub problems: Vec<String>,
}

/// Ships what is new: segments (sealed ones and the complete records of active ones), the
/// sealed grimoire, the ledger events; the origin's index last, so that a reader never finds an
/// index entry whose object is not complete.
pub async fn push(cx: &Context) -> Result<PushReport> {
  let (state_dir, _lock) = cx.lock()?;
  let origin = cx.settings.origin.as_str();
  let mut report = PushReport { origin: origin.to_string(), ..Default::default() };
  let previous = match cx.read_index(origin).await {
    Ok(found) => found,
    Err(e @ LoaError::ReplicaCorrupt { .. }) => {
      // Our own index is rebuilt from what is local; nothing is lost that is still here.
      report.problems.push(format!("{}: {e}; rewriting it", e.code()));
      None
    }
    Err(e) => return Err(e),
  };
  let mut index = previous.clone().unwrap_or_else(|| Index::empty(origin));
  let mut superseded = Vec::new();
  // The shipped segments found here as shipped, or shipped from here by this push: what
  // forgetting here already reached.
  let mut here: HashSet<(String, u64)> = HashSet::new();
  // The sealed grimoire and the consolidation state, read together while no consolidation runs,
  // before the segments: every record the state counts as applied is then in a segment read
  // below (or pruned, which needs it shipped before).
  let (captured, snapshot) = checkpoint::capture(cx)?;
  let mut marks = checkpoint::ShippedMarks::default();
  // Mirrors are in the bucket under their own origin: never shipped under this one, and what an
  // older push shipped of them leaves the index (its objects then go with the garbage).
  let mirrors = cx.mirrors(Some(&state_dir), &mut report.problems).await?;
  let before = index.segments.len();
  index.segments.retain(|e| {
    let mirror = mirrors.is_mirror(&e.session);
    if mirror {
      superseded.push(e.key(origin));
    }
    !mirror
  });
  report.mirror_entries_removed = (before - index.segments.len()) as u64;
  // Memories of other origins forgotten here, found in the mirrors: see `requests`.
  let mut requested = BTreeSet::new();

  for (session, sdir, names) in segments::local_sessions(&cx.root, &cx.wal_dir())? {
    if mirrors.is_mirror(&session) {
      requests::find(&mirrors, &session, &sdir, &names, &mut requested);
      // Copies of what the bucket holds under their own origin: retention may remove every
      // sealed one (all but the newest, whose first seq bounds theirs).
      if let Some(first) = names.last().and_then(|n| segments::first_seq_of(n)) {
        marks.shipped(&session, first.saturating_sub(1));
      }
      continue;
    }
    if mirrors.held_back(&session, origin) {
      report
        .problems
        .push(format!("session {session} not shipped: it may be a mirror, and pull's record is unreadable"));
      continue;
    }
    for (i, name) in names.iter().enumerate() {
      let sealed = i + 1 < names.len();
      let ship = match segments::shippable(&session, &sdir, name, sealed) {
        Ok(Some(s)) => s,
        Ok(None) => continue,
        Err(reason) => {
          report.problems.push(format!("segment {session}/{name} not shipped: {reason}"));
          marks.gap(&session);
          continue;
        }
      };
      let at = index.segments.iter().position(|e| e.session == session && e.first_seq == ship.entry.first_seq);
      if let Some(at) = at {
        let old = &index.segments[at];
        // Shipped already, if the object is still there whole (a HEAD; an object lost or cut
        // since is uploaded again).
        if old.sha256 == ship.entry.sha256 && cx.remote.size(&old.key(origin)).await? == Some(old.size) {
          report.segments_skipped += 1;
          here.insert((session.clone(), old.first_seq));
          marks.shipped(&session, old.last_seq);
          continue;
        }
        if old.last_seq > ship.entry.last_seq {
          report.problems.push(format!(
            "segment {session}/{name} is behind the replica (seq {} < {}); kept the replica's",
            ship.entry.last_seq, old.last_seq
          ));
          marks.gap(&session);
          continue;
        }
      }
      let mut ship = ship;
      // The same seqs with other bytes (forgetting rewrote it here): under a key of its own, so
      // the object the index in the bucket names stays until the new index replaces it. The
      // same bytes (an object lost from the bucket) go back under the key they had.
      ship.entry.rewritten = at.is_some_and(|at| {
        let old = &index.segments[at];
        if old.sha256 == ship.entry.sha256 {
          old.rewritten
        } else {
          old.last_seq == ship.entry.last_seq
        }
      });
      let key = ship.entry.key(origin);
      cx.progress.say(|| format!("uploading {key} ({} bytes)", ship.bytes.len()));
      report.bytes_uploaded += ship.bytes.len() as u64;
      cx.remote.put(&key, ship.bytes).await?;
      report.segments_uploaded += 1;
      here.insert((session.clone(), ship.entry.first_seq));
      marks.shipped(&session, ship.entry.last_seq);
      match at {
        Some(at) => {
          let old_key = index.segments[at].key(origin);
          if old_key != key {
            superseded.push(old_key);
          }
          index.segments[at] = ship.entry;
        }
        None => index.segments.push(ship.entry),
      }
    }
  }

  requests::merge(&mut index, requested, &mut report.problems);
  let sweep = forgotten::sweep(cx, &state_dir, &mut index, &here, &mut superseded, &mut report).await?;

  let sealed = snapshot.as_ref().ok().map(|s| s.entry.manifest_sha256.clone());
  report.grimoire = match snapshot {
    Ok(snapshot) if index.grimoire.as_ref().is_some_and(|g| g.manifest_sha256 == snapshot.entry.manifest_sha256) => {
      "unchanged"
    }
    Ok(snapshot) => {
      for (entry, bytes) in snapshot.entry.files.iter().zip(snapshot.files) {
        upload_blob(cx, origin, &entry.sha256, bytes, &mut report).await?;
      }
      upload_blob(cx, origin, &snapshot.entry.manifest_sha256, snapshot.manifest, &mut report).await?;
      index.grimoire = Some(snapshot.entry);
      "uploaded"
    }
    Err(NoSnapshot::Missing) => "none",
    Err(NoSnapshot::Stale(reason)) => {
      report.problems.push(format!("grimoire not shipped: {reason}"));
      "stale"
    }
  };
  report.checkpoint = checkpoint::ship(cx, &mut index, captured, sealed.as_deref(), &mut report.problems).await?;

  for (entry, bytes) in local::local_events(&cx.root, &cx.synth_dir())? {
    if index.events.iter().any(|e| e.name == entry.name && e.sha256 == entry.sha256) {
      report.events_skipped += 1;
      continue;
    }
    let key = event_key(&entry.name);
    // Shared by every origin and immutable: written only where no object is.
    if cx.remote.put_if_absent(&key, bytes).await? == Created::Exists {
      let there = cx.remote.get_bounded(&key, MAX_EVENT_BYTES).await?;
      if there.as_deref().map(sha256_hex).as_deref() != Some(entry.sha256.as_str()) {
        report.problems.push(format!("event {} not shipped: the bucket holds another event of that name", entry.name));
        continue;
      }
      report.events_skipped += 1;
    } else {
      report.events_uploaded += 1;
    }
    index.events.retain(|e| e.name != entry.name);
    index.events.push(entry);
  }

  sweep.check_grimoire(&index, &mut report);

  let bytes = index.to_bytes();
  if previous.map(|p| p.to_bytes()) != Some(bytes.clone()) {
    cx.remote.put(&index_key(origin), bytes).await?;
  }
  // Only now that the index names them may retention remove what was shipped.
  marks.write(&state_dir, &mut report.problems);
  report.objects_deleted = collect_garbage(cx, &index, superseded).await?;
  sweep.commit(&state_dir)?;
  Ok(report)
}

/// Most keys of one origin a push lists when collecting garbage.
const MAX_ORIGIN_KEYS: usize = 1_000_000;

/// Deletes this origin's segment and blob objects that `index` no longer names: older versions
/// of a grown segment, segments and grimoire files replaced since (a forgotten memory's
/// included, once the grimoire is sealed again). Only keys below this origin's `wal/` and
/// `grimoire/blobs/` are ever deleted. A pull reading the previous index meanwhile may find an
/// object gone (`E_REPLICA_CORRUPT`, nothing written from it) and succeeds when run again.
async fn collect_garbage(cx: &Context, index: &Index, superseded: Vec<String>) -> Result<u64> {
  let origin = index.origin.as_str();
  let mut keep: BTreeSet<String> = index.segments.iter().map(|s| s.key(origin)).collect();
  if let Some(g) = &index.grimoire {
    keep.insert(blob_key(origin, &g.manifest_sha256));
    keep.extend(g.files.iter().map(|f| blob_key(origin, &f.sha256)));
  }
  keep.extend(checkpoint::keys(index));
  let mut doomed: BTreeSet<String> = superseded.into_iter().collect();
  for dir in [format!("origins/{origin}/wal"), format!("origins/{origin}/grimoire/blobs"), checkpoint::dir(origin)] {
    doomed.extend(
      cx.remote.keys_below(&dir, MAX_ORIGIN_KEYS).await?.into_iter().filter(|k| k.starts_with(&format!("{dir}/"))),
    );
  }
  let mut deleted = 0;
  for key in doomed.difference(&keep) {
    cx.remote.delete(key).await?;
    deleted += 1;
  }
  Ok(deleted)
}

async fn upload_blob(cx: &Context, origin: &str, sha256: &str, bytes: Vec<u8>, report: &mut PushReport) -> Result<()> {
  let key = blob_key(origin, sha256);
  // Stored by digest: an object of the right size there is this content (pull checks it).
  if cx.remote.size(&key).await? == Some(bytes.len() as u64) {
    return Ok(());
  }
  report.bytes_uploaded += bytes.len() as u64;
  cx.remote.put(&key, bytes).await
}

/// What pull fetched from other origins, so that a segment pruned here after consolidation is
/// not fetched again, and so that push knows the mirrors (`mirrors`): `<origin>/<session>/<first
/// seq>` -> sha256 (version 1).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Pulled {
  version: u32,
  segments: BTreeMap<String, String>,
}

fn read_pulled(dir: &StateDir, problems: &mut Vec<String>) -> Result<Pulled> {
  let Some(bytes) = dir.read(PULLED_FILE, MAX_PULLED_BYTES)? else {
    return Ok(Pulled { version: 1, ..Default::default() });
  };
  match serde_json::from_slice::<Pulled>(&bytes) {
    Ok(p) if p.version == 1 => Ok(p),
    _ => {
      // Only a cache of what was fetched: set aside for a human, and fetch again.
      let moved = dir.quarantine(PULLED_FILE)?;
      problems.push(format!("{} was unreadable; moved to {}", PULLED_FILE, moved.display()));
      Ok(Pulled { version: 1, ..Default::default() })
    }
  }
}

/// Options of a pull.
#[derive(Default)]
pub struct PullOptions {
  /// Restore this origin's own segments only up to this seq (records after it are dropped).
  pub until_seq: Option<u64>,
  /// The HMAC key of the workspace's audit log, when it is keyed: the `memory.forget` event of
  /// what another origin forgot is appended to it.
  pub audit_hmac_key: Option<zeroize::Zeroizing<Vec<u8>>>,
  /// The public keys this origin's sealed grimoire must be signed with to be restored (`--trust`):
  /// given by the caller, never taken from the bucket or the workspace. None: no grimoire is
  /// restored (`untrusted`).
  pub trusted_keys: Vec<TrustedKey>,
}

impl std::fmt::Debug for PullOptions {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_struct("PullOptions")
      .field("until_seq", &self.until_seq)
      .field("audit_hmac_key", &self.audit_hmac_key.as_ref().map(|_| "<set>"))
      .field("trusted_keys", &self.trusted_keys.len())
      .finish()
  }
}

/// Why forgetting here failed, with what the user can do about a keyed audit log.
fn forget_failure(e: &LoaError, key_given: bool) -> String {
  let hint = match (e, key_given) {
    (LoaError::SignatureInvalid(_), false) => {
      "; if this workspace's audit log is keyed, pass its HMAC key (loa replicate pull --hmac-key-file FILE, or LOA_AUDIT_HMAC_KEY as hex)"
    }
    (LoaError::SignatureInvalid(_), true) => "; the HMAC key given does not continue this workspace's audit log",
    _ => "",
  };
  format!("{}: {e}{hint}", e.code())
}

/// What a pull did.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PullReport {
  pub origin: String,
  /// Every origin found in the bucket (this one included, if it pushed).
  pub origins: Vec<String>,
  /// This origin's segments written back (sessions missing here).
  pub segments_restored: u64,
  /// Other origins' segments written as local sessions `<origin>.<session>`.
  pub segments_mirrored: u64,
  pub segments_skipped: u64,
  /// Segments of mirror sessions an older push shipped under its origin (named
  /// `<origin>.<name>` after another origin of the bucket, or this one): not fetched, since
  /// their origin ships the originals.
  pub mirrors_skipped: u64,
  /// Records left out by `--until-seq`.
  pub records_dropped: u64,
  /// Memories forgotten here because another origin forgot them (its segment came back with
  /// tombstone records where this workspace had applied or mirrored the memory's record).
  pub memories_forgotten: u64,
  /// Memories of this workspace's own sessions forgotten because another origin forgot them
  /// from its mirror and asked this one to (its index's forget requests).
  pub forget_requests_applied: u64,
  /// Records of a mirrored segment this workspace had forgotten (tombstone records here) that
  /// the newer copy fetched still held: kept as tombstones, not taken back.
  pub tombstones_kept: u64,
  /// `restored`, `kept` (a local grimoire exists), `untrusted` (not restored: no `--trust` key
  /// given, or its signed manifest does not verify against them; listed as a problem, nothing
  /// of it written), or `none` (nothing shipped).
  pub grimoire: &'static str,
  /// This origin's WAL checkpoint: `restored` (with the grimoire, into a workspace that had no
  /// WAL), `kept` (this workspace has a WAL, a consolidation state or a grimoire of its own),
  /// `skipped` (taken after `--until-seq`, not the shipped grimoire's, or that grimoire was
  /// `untrusted`), `none` (none shipped).
  pub checkpoint: &'static str,
  pub events_written: u64,
  pub events_skipped: u64,
  pub problems: Vec<String>,
}

/// Fetches what others shipped into this workspace, and restores what this origin shipped and
/// is missing here. Every object is checked against its index entry before a byte of it is
/// used; a mismatch stops the pull with `E_REPLICA_CORRUPT` (what was written before it was
/// checked too). Nothing that exists here is overwritten, except the mirrored sessions of
/// other origins, which only pull writes.
pub async fn pull(cx: &Context, options: &PullOptions) -> Result<PullReport> {
  let (state_dir, _lock) = cx.lock()?;
  let own = cx.settings.origin.as_str();
  let mut report = PullReport { origin: own.to_string(), grimoire: "none", checkpoint: "none", ..Default::default() };
  let mut pulled = read_pulled(&state_dir, &mut report.problems)?;

  let mut indexes = Vec::new();
  // Every origin in the bucket, whether or not its index can be read: a session named after
  // one of them is its mirror (see `mirrors`).
  let mut known = BTreeSet::new();
  for origin in cx.remote.child_dirs("origins", MAX_ORIGINS).await? {
    if !valid_origin(&origin) {
      report.problems.push("a name under origins/ is not a plain origin name; skipped".into());
      continue;
    }
    known.insert(origin.clone());
    match cx.read_index(&origin).await {
      Ok(Some(index)) => {
        report.origins.push(origin);
        indexes.push(index);
      }
      Ok(None) => {}
      // One origin's broken index does not keep the others' work from this machine; this
      // origin's own must be sound to restore from it.
      Err(e @ LoaError::ReplicaCorrupt { .. }) if origin != own => {
        report.problems.push(format!("origin {origin} skipped: {}: {e}", e.code()));
      }
      Err(e) => return Err(e),
    }
  }

  let wal_dir = cx.wal_dir();
  let local_sessions: BTreeSet<String> = segments::local_sessions(&cx.root, &wal_dir)?
    .into_iter()
    .filter(|(_, _, names)| !names.is_empty())
    .map(|(id, _, _)| id)
    .collect();

  // A mirror written is recorded even when the pull then fails: push knows a mirror only by
  // this record, and would ship one it does not list as this origin's own.
  let fetched: Result<()> = async {
    for index in &indexes {
      let origin = index.origin.as_str();
      let mine = origin == own;
      for entry in &index.segments {
        // A copy an older push shipped of another origin's session (or of this one's): that
        // origin ships the original, and mirroring or restoring the copy would nest it again.
        if mirror_by_name(&entry.session, origin, &known, own) {
          report.mirrors_skipped += 1;
          continue;
        }
        let state_key = format!("{origin}/{}/{}", entry.session, entry.first_seq);
        if mine && local_sessions.contains(&entry.session) {
          report.segments_skipped += 1;
          continue;
        }
        if !mine && pulled.segments.get(&state_key) == Some(&entry.sha256) {
          report.segments_skipped += 1;
          continue;
        }
        let key = entry.key(origin);
        cx.progress.say(|| format!("downloading {key} ({} bytes)", entry.size));
        let bytes = cx.fetch_checked(&key, entry.size, &entry.sha256).await?;
        let (header, mut records) = check_downloaded(&bytes, entry, &cx.remote.full_key(&key))?;
        if mine {
          let before = records.len();
          if let Some(until) = options.until_seq {
            records.retain(|r| r.seq <= until);
          }
          report.records_dropped += (before - records.len()) as u64;
          if records.is_empty() {
            continue;
          }
          // Written back byte for byte unless --until-seq cut it.
          let out = if records.len() == before { bytes } else { encode_segment(&header, &records, &entry.session) };
          write_segment(&cx.root, &wal_dir, &entry.session, entry.first_seq, &out)?;
          report.segments_restored += 1;
        } else {
          let session = mirror_session(origin, &entry.session);
          // The origin forgot memories (its segment came back with tombstone records): forgotten
          // here too, from every file, before the mirrored copy is replaced. When that cannot be
          // done now (a live session here holds the memory too), the segment is left as it was
          // and the next pull tries again.
          let tombstones: HashSet<u64> = records.iter().filter(|r| r.op == TOMBSTONE_OP).map(|r| r.seq).collect();
          if !tombstones.is_empty() {
            let store = store_options(&cx.workspace, &MemoryOverrides::default())?;
            let forget = ForgetOptions { audit_hmac_key: options.audit_hmac_key.clone(), ..Default::default() };
            match forget_records(&store, &session, &tombstones, &forget) {
              Ok(done) => report.memories_forgotten += done.tombstones.len() as u64,
              Err(e) => {
                report.problems.push(format!(
                  "segment {key} not mirrored: the memories its origin forgot could not be forgotten here: {}",
                  forget_failure(&e, options.audit_hmac_key.is_some())
                ));
                continue;
              }
            }
          }
          // Memories the user here forgot from the mirror: the newer copy (its origin grew the
          // segment since) still holds their records, which stay tombstones here, so that
          // nothing forgotten comes back and the next push still asks the origin to forget.
          match segments::keep_tombstones(&cx.root, &wal_dir, &session, entry.first_seq, &mut records) {
            Ok(kept) => report.tombstones_kept += kept,
            Err(e) => {
              report.problems.push(format!(
                "segment {key} not mirrored: the local copy it would replace cannot be read for what was forgotten here: {}",
                e.code()
              ));
              continue;
            }
          }
          let out = encode_segment(&header, &records, &session);
          write_segment(&cx.root, &wal_dir, &session, entry.first_seq, &out)?;
          pulled.segments.insert(state_key, entry.sha256.clone());
          report.segments_mirrored += 1;
        }
      }
      if !mine {
        state_dir.write_atomic(PULLED_FILE, &serde_json::to_vec(&pulled).expect("serialises"), None)?;
      }
    }
    Ok(())
  }
  .await;
  if let Err(e) = fetched {
    let _ = state_dir.write_atomic(PULLED_FILE, &serde_json::to_vec(&pulled).expect("serialises"), None);
    return Err(e);
  }

  if let Some(g) = indexes.iter().find(|i| i.origin == own).and_then(|i| i.grimoire.as_ref()) {
    report.grimoire = if !local::grimoire_is_empty(&cx.root, &cx.grimoire_dir())? {
      "kept"
    } else if options.trusted_keys.is_empty() {
      report.problems.push(UNTRUSTED_GRIMOIRE.into());
      "untrusted"
    } else {
      match fetch_snapshot(cx, own, g, Some(&options.trusted_keys)).await {
        Ok(snapshot) => {
          local::restore_snapshot(&cx.root, &cx.grimoire_dir(), &snapshot)?;
          "restored"
        }
        Err(e @ LoaError::SignatureInvalid(_)) => {
          report.problems.push(format!("{}: {e}", e.code()));
          "untrusted"
        }
        Err(e) => return Err(e),
      }
    };
  }
  let own_index = indexes.iter().find(|i| i.origin == own);
  let fresh = local_sessions.is_empty() && report.grimoire == "restored";
  report.checkpoint = if report.grimoire == "untrusted" && own_index.is_some_and(|i| i.checkpoint.is_some()) {
    // It counts records as applied to the grimoire that was not restored: consolidation would
    // then never apply them.
    "skipped"
  } else {
    checkpoint::restore(cx, own_index, fresh, options.until_seq, &mut report.problems).await?
  };

  // What other origins forgot of this one's records, after any restore above wrote them.
  let sessions: BTreeSet<String> =
    segments::local_sessions(&cx.root, &wal_dir)?.into_iter().map(|(id, _, _)| id).collect();
  let mirrors = Mirrors::recorded(recorded_mirrors(pulled.segments.keys(), own));
  requests::apply(cx, &indexes, own, &sessions, &mirrors, options, &mut report)?;

  // Events: the union of every origin's, one object per name.
  let mut wanted: BTreeMap<&str, &EventEntry> = BTreeMap::new();
  let mut clashes = BTreeSet::new();
  for e in indexes.iter().flat_map(|i| &i.events) {
    match wanted.get(e.name.as_str()) {
      Some(w) if w.sha256 != e.sha256 => {
        clashes.insert(e.name.clone());
      }
      _ => {
        wanted.insert(&e.name, e);
      }
    }
  }
  for name in &clashes {
    wanted.remove(name.as_str());
    report.problems.push(format!("event {name} not fetched: origins shipped different contents under that name"));
  }
  let here: BTreeMap<String, String> =
    local::local_events(&cx.root, &cx.synth_dir())?.into_iter().map(|(e, _)| (e.name, e.sha256)).collect();
  for (name, entry) in wanted {
    match here.get(name) {
      Some(sha) if *sha == entry.sha256 => {
        report.events_skipped += 1;
        continue;
      }
      Some(_) => {
        report.problems.push(format!("event {name} not fetched: a different local event has that name"));
        continue;
      }
      None => {}
    }
    let bytes = cx.fetch_checked(&event_key(name), entry.size, &entry.sha256).await?;
    if local::write_event(&cx.root, &cx.synth_dir(), name, &bytes)? {
      report.events_written += 1;
    } else {
      report.problems.push(format!("event {name} not written: the name was taken meanwhile"));
    }
  }
  Ok(report)
}

/// Why pull restores no grimoire without `--trust`: whoever can write this origin's prefix in the
/// bucket (every origin, when it is encrypted; anyone who can write it, when not) can put a
/// sealed grimoire there, and only a key the caller pins tells the origin's own from theirs.
const UNTRUSTED_GRIMOIRE: &str = "grimoire not restored: nothing given to verify it against (anyone who can write this origin's prefix in the bucket can put a sealed grimoire there); pull again with the public key it was sealed with, pinned outside the bucket and the workspace: loa replicate pull --trust KEY|FILE";

/// Downloads `origin`'s sealed grimoire as `g` records it, every object checked (the manifest
/// must list exactly the files the index does). With `trusted`, the manifest must also be where
/// this workspace's configuration has it (`signing.manifest_path`) and its signature must verify
/// against one of those keys (`E_SIGNATURE_INVALID`), before any other object is fetched; the
/// digests then tie every file to what was signed. Without, the caller verifies what it gets
/// (recovery's `stage`).
async fn fetch_snapshot(
  cx: &Context,
  origin: &str,
  g: &GrimoireEntry,
  trusted: Option<&[TrustedKey]>,
) -> Result<Snapshot> {
  let manifest = cx.fetch_checked(&blob_key(origin, &g.manifest_sha256), g.manifest_size, &g.manifest_sha256).await?;
  let manifest_key = cx.remote.full_key(&blob_key(origin, &g.manifest_sha256));
  let corrupt = |reason: &str| LoaError::ReplicaCorrupt { key: manifest_key.clone(), reason: reason.into() };
  let value: serde_json::Value = serde_json::from_slice(&manifest).map_err(|_| corrupt("the manifest is not JSON"))?;
  let parsed = parse_manifest(&value).map_err(|e| corrupt(&format!("the manifest does not parse ({})", e.code())))?;
  if parsed.files != g.files {
    return Err(corrupt("the manifest lists other files than the index"));
  }
  if let Some(keys) = trusted {
    let refused =
      |why: &str| LoaError::SignatureInvalid(format!("grimoire not restored: {why}; nothing of it was written"));
    if g.manifest != cx.settings.config.manifest_name()? {
      // A manifest under another name would land on a file of the grimoire, and none of this
      // workspace's checks would read it.
      return Err(refused("the index names another manifest file than this workspace's signing.manifest_path"));
    }
    // The core's signature check; what it says is not repeated, since the key id it names is
    // the bucket's data.
    if !verify_signature(&value, keys).ok {
      return Err(refused("its signed manifest does not verify against the keys given with --trust"));
    }
  }
  let mut files = Vec::with_capacity(g.files.len());
  for f in &g.files {
    cx.progress.say(|| format!("downloading grimoire file {} ({} bytes)", f.path, f.size));
    files.push(cx.fetch_checked(&blob_key(origin, &f.sha256), f.size, &f.sha256).await?);
  }
  Ok(Snapshot { entry: g.clone(), manifest, files })
}

/// Limits of `stage`, as recovery passes them.
#[derive(Debug, Clone, Copy)]
pub struct StageLimits {
  pub max_files: u64,
  pub max_file_bytes: u64,
}

/// Recovery's object store source: writes this origin's sealed grimoire, every object checked,
/// into `out` (an empty directory recovery made), within `limits`; recovery then verifies it
/// against its pinned keys. Nothing else in the workspace is touched.
pub async fn stage(cx: &Context, out: &Path, limits: StageLimits) -> Result<u64> {
  let origin = cx.settings.origin.as_str();
  let index = cx.read_index(origin).await?;
  let Some(g) = index.as_ref().and_then(|i| i.grimoire.as_ref()) else {
    return Err(LoaError::ReplicaUnavailable(format!("origin {origin} has shipped no sealed grimoire")));
  };
  if g.files.len() as u64 + 1 > limits.max_files {
    return Err(LoaError::TooLarge {
      what: "the replica's grimoire (files)".into(),
      size: g.files.len() as u64 + 1,
      limit: limits.max_files,
    });
  }
  if let Some(big) = g.files.iter().map(|f| f.size).chain([g.manifest_size]).find(|&s| s > limits.max_file_bytes) {
    return Err(LoaError::TooLarge {
      what: "a file of the replica's grimoire".into(),
      size: big,
      limit: limits.max_file_bytes,
    });
  }
  let snapshot = fetch_snapshot(cx, origin, g, None).await?;
  let dir = StateDir::open_root(out)?;
  if !dir.entries()?.is_empty() {
    return Err(LoaError::InvalidArgument("the staging directory is not empty".into()));
  }
  local::write_snapshot_files(&dir, &snapshot)?;
  Ok(g.files.len() as u64 + 1)
}

/// One session's state in `status`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatus {
  pub session: String,
  pub segments: u64,
  /// The last complete record here.
  pub last_seq: Option<u64>,
  /// The last record the replica holds.
  pub shipped_seq: Option<u64>,
}

/// Another origin as its index describes it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OriginStatus {
  pub origin: String,
  pub segments: u64,
  pub sessions: u64,
  pub grimoire: bool,
  /// A checkpoint was shipped with the grimoire.
  pub checkpoint: bool,
  pub events: u64,
}

/// What `status` shows: local against shipped.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
  pub origin: String,
  pub bucket: String,
  pub prefix: String,
  /// This workspace's own sessions (mirrors left out).
  pub sessions: Vec<SessionStatus>,
  /// Local sessions pull wrote for other origins (mirrors), which push does not ship.
  pub mirrors: u64,
  /// Segments (or grown active segments) a push would upload.
  pub segments_pending: u64,
  /// `shipped`, `pending` (sealed here, not yet shipped), `stale`, `none`.
  pub grimoire: &'static str,
  pub events_local: u64,
  pub events_pending: u64,
  pub origins: Vec<OriginStatus>,
  pub problems: Vec<String>,
}

/// Compares what is here with what this origin shipped, and lists the other origins.
pub async fn status(cx: &Context) -> Result<StatusReport> {
  let own = cx.settings.origin.as_str();
  let mut problems = Vec::new();
  let index = match cx.read_index(own).await {
    Ok(i) => i.unwrap_or_else(|| Index::empty(own)),
    Err(e @ LoaError::ReplicaCorrupt { .. }) => {
      problems.push(format!("{}: {e}", e.code()));
      Index::empty(own)
    }
    Err(e) => return Err(e),
  };
  let mut sessions = Vec::new();
  let mut pending = 0;
  let mut mirrored = 0;
  let state_dir = cx.root.descend(Path::new(STATE_DIR), false)?;
  let mirrors = cx.mirrors(state_dir.as_ref(), &mut problems).await?;
  for (session, sdir, names) in segments::local_sessions(&cx.root, &cx.wal_dir())? {
    if mirrors.is_mirror(&session) {
      mirrored += 1;
      continue;
    }
    let mut last_seq = None;
    for (i, name) in names.iter().enumerate() {
      match segments::shippable(&session, &sdir, name, i + 1 < names.len()) {
        Ok(Some(s)) => {
          last_seq = Some(s.entry.last_seq);
          let shipped = index.segments.iter().any(|e| e.session == session && e.sha256 == s.entry.sha256);
          if !shipped {
            pending += 1;
          }
        }
        Ok(None) => {}
        Err(reason) => problems.push(format!("segment {session}/{name}: {reason}")),
      }
    }
    let shipped_seq = index.segments.iter().filter(|e| e.session == session).map(|e| e.last_seq).max();
    sessions.push(SessionStatus { session, segments: names.len() as u64, last_seq, shipped_seq });
  }
  let grimoire = match local::read_snapshot(&cx.root, &cx.grimoire_dir(), &cx.settings.config.manifest_name()?)? {
    Ok(s) if index.grimoire.as_ref().is_some_and(|g| g.manifest_sha256 == s.entry.manifest_sha256) => "shipped",
    Ok(_) => "pending",
    Err(NoSnapshot::Missing) => "none",
    Err(NoSnapshot::Stale(_)) => "stale",
  };
  let events = local::local_events(&cx.root, &cx.synth_dir())?;
  let events_pending =
    events.iter().filter(|(e, _)| !index.events.iter().any(|s| s.name == e.name && s.sha256 == e.sha256)).count();
  let mut origins = Vec::new();
  for origin in cx.remote.child_dirs("origins", MAX_ORIGINS).await? {
    if !valid_origin(&origin) {
      continue;
    }
    match cx.read_index(&origin).await {
      Ok(Some(i)) => origins.push(OriginStatus {
        segments: i.segments.len() as u64,
        sessions: i.segments.iter().map(|s| &s.session).collect::<BTreeSet<_>>().len() as u64,
        grimoire: i.grimoire.is_some(),
        checkpoint: i.checkpoint.is_some(),
        events: i.events.len() as u64,
        origin,
      }),
      Ok(None) => {}
      Err(e @ LoaError::ReplicaCorrupt { .. }) => problems.push(format!("{}: {e}", e.code())),
      Err(e) => return Err(e),
    }
  }
  Ok(StatusReport {
    origin: own.to_string(),
    bucket: cx.settings.bucket.clone(),
    prefix: cx.settings.prefix.clone(),
    sessions,
    mirrors: mirrored,
    segments_pending: pending,
    grimoire,
    events_local: events.len() as u64,
    events_pending: events_pending as u64,
    origins,
    problems,
  })
}
