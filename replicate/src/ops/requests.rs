//! Forget requests: forgetting a memory that came from another origin reaches that origin.
//!
//! When the user here forgets a memory that a mirror holds (`loa forget` replaces the mirrored
//! record by a tombstone record of the same seq), the memory is gone here, but the origin that
//! wrote it, and its objects in the bucket, still hold it, and every other machine would get it
//! from there. **Push** finds the tombstone records of this workspace's mirror sessions and
//! lists each in this origin's index as a request naming the original record (origin, session
//! in that origin, seq): no content, no memory id. Requests of the previous index are kept (the
//! mirrored segment may have been pruned here since; a newer copy from its origin keeps the
//! tombstones, see `segments::keep_tombstones`), up to [`MAX_FORGET_REQUESTS`]. **Pull** on the origin named forgets the memories
//! those records of its own sessions wrote, through the core's forget path, as it does for a
//! mirrored tombstone; its next push ships the rewritten segment (or, for a segment pruned
//! there, rewrites the bucket's copy), and every other machine forgets it by the tombstone
//! records. A record already forgotten, or a session or seq that does not exist there, is a
//! no-op, so a request applied before costs nothing but the look.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use loa_core::config::{store_options, MemoryOverrides};
use loa_core::fsutil::StateDir;
use loa_core::memory::{forget_records, ForgetOptions};
use loa_core::Result;

use super::mirrors::Mirrors;
use super::{forget_failure, Context, PullOptions, PullReport};
use crate::index::{ForgetRequest, Index, MAX_FORGET_REQUESTS};
use crate::segments;

/// Adds to `found` a request for each tombstone record in the segments `names` of the local
/// mirror session `session` (in `sdir`), naming the original record.
pub(super) fn find(
  mirrors: &Mirrors,
  session: &str,
  sdir: &StateDir,
  names: &[String],
  found: &mut BTreeSet<ForgetRequest>,
) {
  let Some((origin, original)) = mirrors.source(session) else { return };
  for name in names {
    for seq in segments::tombstone_seqs(sdir, name) {
      found.insert(ForgetRequest { origin: origin.to_string(), session: original.to_string(), seq });
    }
  }
}

/// The requests `index` ships: those of the previous index and those `found` now, sorted,
/// without duplicates, at most [`MAX_FORGET_REQUESTS`] (the rest listed as a problem).
pub(super) fn merge(index: &mut Index, found: BTreeSet<ForgetRequest>, problems: &mut Vec<String>) {
  let mut all: BTreeSet<ForgetRequest> = index.forget_requests.take().unwrap_or_default().into_iter().collect();
  all.extend(found);
  if all.len() > MAX_FORGET_REQUESTS {
    problems.push(format!("{} forget requests for other origins; only {MAX_FORGET_REQUESTS} are shipped", all.len()));
  }
  let kept: Vec<ForgetRequest> = all.into_iter().take(MAX_FORGET_REQUESTS).collect();
  index.forget_requests = (!kept.is_empty()).then_some(kept);
}

/// Forgets here what other origins' indexes ask this origin (`own`) to forget: records of this
/// workspace's own sessions (`sessions`, mirrors left out). A failure (a live session holds
/// the memory, a keyed audit log without its key) is listed as a problem; the request stays in
/// the other index, so the next pull tries again.
pub(super) fn apply(
  cx: &Context,
  indexes: &[Index],
  own: &str,
  sessions: &BTreeSet<String>,
  mirrors: &Mirrors,
  options: &PullOptions,
  report: &mut PullReport,
) -> Result<()> {
  let mut wanted: BTreeMap<&str, HashSet<u64>> = BTreeMap::new();
  for index in indexes.iter().filter(|i| i.origin != own) {
    for r in index.forget_requests.iter().flatten().filter(|r| r.origin == own) {
      // Only this workspace's own records: never a mirror of a third origin.
      if sessions.contains(&r.session) && !mirrors.is_mirror(&r.session) {
        wanted.entry(r.session.as_str()).or_default().insert(r.seq);
      }
    }
  }
  if wanted.is_empty() {
    return Ok(());
  }
  let store = store_options(&cx.workspace, &MemoryOverrides::default())?;
  let forget = ForgetOptions { audit_hmac_key: options.audit_hmac_key.clone(), ..Default::default() };
  for (session, seqs) in wanted {
    match forget_records(&store, session, &seqs, &forget) {
      Ok(done) => report.forget_requests_applied += done.tombstones.len() as u64,
      Err(e) => report.problems.push(format!(
        "session {session}: memories another origin asked to forget could not be forgotten here: {}",
        forget_failure(&e, options.audit_hmac_key.is_some())
      )),
    }
  }
  Ok(())
}
