//! Forgetting reaches what was shipped and then pruned here.
//!
//! `loa forget` rewrites the local log (each record of the memory replaced by a tombstone record
//! of the same seq), and push ships the rewritten segments. A segment that retention removed
//! here after it was shipped is out of that path's reach, so push rewrites the bucket's copy
//! itself: for every tombstone not yet swept through this origin's objects, it fetches each
//! shipped segment that is not here (checked as pull checks it: size, sha256, a clean scan, the
//! entry's seqs and session; opened under the key when encrypted), replaces the records of the
//! forgotten memories by the records the local forget writes ([`Forgotten::replace`]: same seq,
//! time and session, op `tombstone`), and uploads the result under a key of its own (the
//! entry's `rewritten` key, ending in the new sha256). The index then names it; the old object
//! is deleted after the index is written, with the rest of the garbage. Another machine's pull
//! sees the new sha256 and the tombstone records, and forgets the memories by the existing
//! mechanism.
//!
//! What was forgotten is read from the workspace's own durable record (`tombstones.jsonl` and
//! the tombstone key, see `loa_core::memory::Forgotten`): a record is matched by its memory's
//! keyed tombstone id, so every record of a forgotten memory is found, whichever session and
//! seq wrote it and whether or not it was the consolidation's winner. A memory written again
//! after it was forgotten (held here now) is left alone.
//!
//! **Bounded.** `.loa/replicate/forgotten.json` (version 1) lists, per bucket, prefix and
//! origin, the tombstones already swept: a push with no new tombstone fetches nothing; a push
//! after a forget fetches each shipped segment missing here once, one at a time. The file is
//! written only after the index and the garbage collection, so a push cut anywhere sweeps again
//! next time (segments rewritten already hold no record of the memory any more and are left as
//! they are). An unreadable file is moved aside and rebuilt: the next push sweeps everything
//! once.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use loa_core::fsutil::StateDir;
use loa_core::memory::Forgotten;
use loa_core::wal::format::{Record, SegmentHeader};
use loa_core::{LoaError, Result};
use serde::{Deserialize, Serialize};

use super::{Context, PushReport};
use crate::index::{Index, SegmentEntry};
use crate::segments::{check_downloaded, encode_segment, sha256_hex};

/// What push remembers having swept: target -> tombstone ids (version 1).
const SWEPT_FILE: &str = "forgotten.json";
const SWEPT_VERSION: u32 = 1;
/// Twice what the tombstones of `tombstones.jsonl`'s largest size could need.
const MAX_SWEPT_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Swept {
  version: u32,
  swept: BTreeMap<String, BTreeSet<String>>,
}

/// The sweep of one push: what was forgotten, and what to record once the index is written.
pub(super) struct Sweep {
  forgotten: Forgotten,
  state: Swept,
  target: String,
  /// Tombstones swept by this push through every object it could read (recorded at commit).
  done: Vec<String>,
  /// Whether every candidate segment was read: only then is the sweep recorded.
  complete: bool,
}

fn read_swept(dir: &StateDir, problems: &mut Vec<String>) -> Result<Swept> {
  let fresh = || Swept { version: SWEPT_VERSION, ..Default::default() };
  let Some(bytes) = dir.read(SWEPT_FILE, MAX_SWEPT_BYTES)? else { return Ok(fresh()) };
  match serde_json::from_slice::<Swept>(&bytes) {
    Ok(s) if s.version == SWEPT_VERSION => Ok(s),
    _ => {
      // Only a record of work done: set aside for a human, and sweep again.
      let moved = dir.quarantine(SWEPT_FILE)?;
      problems.push(format!("{SWEPT_FILE} was unreadable; moved to {}", moved.display()));
      Ok(fresh())
    }
  }
}

/// The records of `records` that `replace` replaces, replaced; `None` when it replaces none.
pub(super) fn rewrite_records(
  records: &[Record],
  replace: impl Fn(&Record) -> Option<Record>,
) -> Option<(Vec<Record>, u64)> {
  let mut replaced = 0;
  let out: Vec<Record> = records
    .iter()
    .map(|r| match replace(r) {
      Some(t) => {
        replaced += 1;
        t
      }
      None => r.clone(),
    })
    .collect();
  (replaced > 0).then_some((out, replaced))
}

/// The segment `entry` (its `header` and `records`, as checked) with the records `replace`
/// replaces replaced: its bytes and its new index entry (same seqs, `rewritten`), and how many
/// records were replaced; `None` when none is.
pub(super) fn rewrite_segment(
  entry: &SegmentEntry,
  header: &SegmentHeader,
  records: &[Record],
  replace: impl Fn(&Record) -> Option<Record>,
) -> Option<(Vec<u8>, SegmentEntry, u64)> {
  let (records, replaced) = rewrite_records(records, replace)?;
  let bytes = encode_segment(header, &records, &entry.session);
  let new = SegmentEntry { size: bytes.len() as u64, sha256: sha256_hex(&bytes), rewritten: true, ..entry.clone() };
  Some((bytes, new, replaced))
}

/// Rewrites the shipped segments of this origin that are not here (`here`: the (session, first
/// seq) of the segments this push found locally) and hold a record of a memory forgotten since
/// the last sweep. The new objects are uploaded; `index` names them and `superseded` the old
/// ones. Returns what [`commit`] records after the index is written.
pub(super) async fn sweep(
  cx: &Context,
  state_dir: &StateDir,
  index: &mut Index,
  here: &HashSet<(String, u64)>,
  superseded: &mut Vec<String>,
  report: &mut PushReport,
) -> Result<Sweep> {
  let store = loa_core::config::store_options(&cx.workspace, &loa_core::config::MemoryOverrides::default())?;
  let forgotten = Forgotten::load(&store)?;
  let target = format!(
    "{} s3://{}/{}",
    cx.settings.endpoint.as_deref().unwrap_or("aws"),
    cx.settings.bucket,
    cx.remote.full_key(&format!("origins/{}", index.origin))
  );
  let mut sweep = Sweep { forgotten, state: Swept::default(), target, done: Vec::new(), complete: true };
  if sweep.forgotten.tombstones().is_empty() {
    return Ok(sweep);
  }
  sweep.state = read_swept(state_dir, &mut report.problems)?;
  let swept = sweep.state.swept.get(&sweep.target);
  let pending: HashSet<String> =
    sweep.forgotten.tombstones().iter().filter(|t| !swept.is_some_and(|s| s.contains(*t))).cloned().collect();
  if pending.is_empty() {
    return Ok(sweep);
  }
  let origin = index.origin.clone();
  for at in 0..index.segments.len() {
    let entry = &index.segments[at];
    if here.contains(&(entry.session.clone(), entry.first_seq)) {
      continue;
    }
    let key = entry.key(&origin);
    cx.progress.say(|| format!("checking {key} for forgotten memories ({} bytes)", entry.size));
    let checked = match cx.fetch_checked(&key, entry.size, &entry.sha256).await {
      Ok(bytes) => check_downloaded(&bytes, entry, &cx.remote.full_key(&key)),
      Err(e) => Err(e),
    };
    let (header, records) = match checked {
      Ok(found) => found,
      Err(e @ LoaError::ReplicaCorrupt { .. }) => {
        report
          .problems
          .push(format!("segment {key} not checked for forgotten memories: {}: {e}; it may still hold one", e.code()));
        sweep.complete = false;
        continue;
      }
      Err(e) => return Err(e),
    };
    let Some((bytes, new, replaced)) =
      rewrite_segment(entry, &header, &records, |r| sweep.forgotten.replace(r, &pending))
    else {
      continue;
    };
    let new_key = new.key(&origin);
    cx.progress.say(|| format!("uploading {new_key} ({} bytes, {replaced} record(s) forgotten)", bytes.len()));
    report.bytes_uploaded += bytes.len() as u64;
    cx.remote.put(&new_key, bytes).await?;
    report.segments_rewritten += 1;
    report.records_forgotten += replaced;
    superseded.push(key);
    index.segments[at] = new;
  }
  sweep.done = pending.into_iter().collect();
  Ok(sweep)
}

impl Sweep {
  /// Lists a problem when the sealed grimoire `index` names still holds a forgotten memory's
  /// record file: it leaves the bucket only with the next seal and push.
  pub(super) fn check_grimoire(&self, index: &Index, report: &mut PushReport) {
    let Some(g) = &index.grimoire else { return };
    let held = g.files.iter().filter(|f| self.forgotten.is_forgotten_record_file(&f.path)).count();
    if held > 0 {
      report.problems.push(format!(
        "the sealed grimoire in the bucket still holds {held} forgotten memor{}: seal the grimoire again (loa consolidate --seal) and push to replace it",
        if held == 1 { "y" } else { "ies" }
      ));
    }
  }

  /// Records the tombstones swept (after the index is written and the old objects deleted).
  pub(super) fn commit(mut self, state_dir: &StateDir) -> Result<()> {
    if self.done.is_empty() || !self.complete {
      return Ok(());
    }
    self.state.version = SWEPT_VERSION;
    self.state.swept.entry(self.target).or_default().extend(self.done);
    let bytes = serde_json::to_vec(&self.state).map_err(|e| LoaError::Internal(e.to_string()))?;
    state_dir.write_atomic(SWEPT_FILE, &bytes, None)
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn record(seq: u64, op: &str, data: &str) -> Record {
    Record {
      seq,
      ts_ms: 1_700_000_000_000 + seq as i64,
      session_id: "s".into(),
      op: op.into(),
      path: Some(format!("memory/{seq}.json")),
      meta: None,
      data: Some(data.as_bytes().to_vec()),
    }
  }

  fn tombstone(r: &Record) -> Record {
    Record { op: "tombstone".into(), path: None, data: None, meta: Some("{}".into()), ..r.clone() }
  }

  #[test]
  fn a_rewritten_segment_keeps_its_seqs_and_gets_a_key_of_its_own() {
    let header = SegmentHeader { created_ms: 1, first_seq: 3 };
    let records = vec![record(3, "write", "kept"), record(4, "write", "secret"), record(5, "write", "secret")];
    let bytes = encode_segment(&header, &records, "s");
    let entry = SegmentEntry {
      session: "s".into(),
      first_seq: 3,
      last_seq: 5,
      sealed: true,
      size: bytes.len() as u64,
      sha256: sha256_hex(&bytes),
      rewritten: false,
    };
    let forget = |r: &Record| (r.data.as_deref() == Some(b"secret".as_slice())).then(|| tombstone(r));
    let (new_bytes, new, replaced) = rewrite_segment(&entry, &header, &records, forget).unwrap();
    assert_eq!(replaced, 2);
    assert!(new.rewritten && new.sha256 != entry.sha256);
    assert_eq!((new.first_seq, new.last_seq, new.sealed), (3, 5, true));
    assert_ne!(new.key("o"), entry.key("o"));
    assert!(memchr_free(&new_bytes, b"secret"));
    // What was uploaded checks out as pull checks it, record for record.
    let (h, back) = check_downloaded(&new_bytes, &new, "k").unwrap();
    assert_eq!(h.first_seq, 3);
    assert_eq!(
      back.iter().map(|r| (r.seq, r.op.as_str())).collect::<Vec<_>>(),
      [(3, "write"), (4, "tombstone"), (5, "tombstone")]
    );
    // Nothing to forget: nothing rewritten (a second sweep of the same segment changes nothing).
    assert!(rewrite_segment(&new, &h, &back, forget).is_none());
  }

  fn memchr_free(haystack: &[u8], needle: &[u8]) -> bool {
    !haystack.windows(needle.len()).any(|w| w == needle)
  }

  #[test]
  fn an_unreadable_sweep_record_is_set_aside_and_everything_swept_again() {
    let dir = tempfile::tempdir().unwrap();
    let state = StateDir::open_root(dir.path()).unwrap();
    let mut problems = Vec::new();
    assert!(read_swept(&state, &mut problems).unwrap().swept.is_empty());
    let sweep = Sweep {
      forgotten: Forgotten::load(&loa_core::memory::StoreOptions {
        workspace_dir: dir.path().to_path_buf(),
        ..Default::default()
      })
      .unwrap(),
      state: Swept::default(),
      target: "t".into(),
      done: vec!["a".repeat(64)],
      complete: true,
    };
    sweep.commit(&state).unwrap();
    let read = read_swept(&state, &mut problems).unwrap();
    assert_eq!(read.swept["t"].len(), 1);
    assert!(problems.is_empty());
    std::fs::write(dir.path().join(SWEPT_FILE), b"{\"version\": 2, \"swept\": {}}").unwrap();
    assert!(read_swept(&state, &mut problems).unwrap().swept.is_empty());
    assert_eq!(problems.len(), 1);
    assert!(!dir.path().join(SWEPT_FILE).exists(), "moved aside");
  }
}
