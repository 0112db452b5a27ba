//! What a workspace's memory holds, listed for a person to look at (`loa report`): every memory
//! visible to a reader, newest first, whether it is consolidated yet, and the counts around
//! them (tombstones of forgotten memories, quarantined files). A read: nothing is created,
//! locked or written, so it runs beside any writer and on a read-only disk.

use std::collections::{BTreeMap, HashSet};

use crate::error::{invalid, Result};
use crate::timestamp::now_ms;

use super::layout::Layout;
use super::types::MemoryRecord;
use super::view::{pending_records, read_records};

/// The most memories one listing returns; the counts still cover every memory.
pub const MAX_LISTED: usize = 100_000;

/// What [`inventory`] lists.
#[derive(Debug, Clone, Default)]
pub struct InventoryOptions {
  /// Only the memories this agent may see (its own, those `memory.sharing` shares with it, the
  /// workspace's); `None`: every memory.
  pub agent_id: Option<String>,
  /// Most memories in [`Inventory::memories`], 1 to [`MAX_LISTED`].
  pub limit: usize,
}

/// One memory of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedMemory {
  pub record: MemoryRecord,
  /// Its record file is in the grimoire; false while it is only in the WAL.
  pub consolidated: bool,
}

/// A workspace's memory at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Inventory {
  /// Newest first (ties by id), at most `limit`; expired memories are never listed.
  pub memories: Vec<ListedMemory>,
  /// Every visible memory that has not expired, listed or not.
  pub total: u64,
  /// Of `total`, those only in the WAL so far.
  pub pending: u64,
  /// Of `total`, per agent (`None`: the workspace's) and type.
  pub by_agent: BTreeMap<Option<String>, BTreeMap<super::types::MemoryKind, u64>>,
  /// Memories forgotten here (tombstones hold keyed ids only, so this is a count).
  pub tombstones: u64,
  /// Quarantined files below the workspace's state directories, workspace-relative.
  pub quarantined: Vec<String>,
}

/// Lists the memory of the workspace `layout` names (see [`Inventory`]). Unreadable record
/// files and damaged parts of a log are skipped, as every read skips them (`loa wal verify`
/// and consolidation report them).
pub(super) fn inventory(layout: &Layout, options: &InventoryOptions) -> Result<Inventory> {
  if options.limit == 0 || options.limit > MAX_LISTED {
    return invalid(format!("`limit` must be an integer from 1 to {MAX_LISTED}"));
  }
  let visible = match &options.agent_id {
    Some(agent) => {
      super::search::check_agent_id(agent)?;
      layout.sharing.visible_to(agent)
    }
    None => None,
  };
  let now = now_ms();
  let mut listed: Vec<ListedMemory> = Vec::new();
  let mut ids = HashSet::new();
  if let Some(dir) = layout.memory_dir()? {
    for record in read_records(&dir, false)? {
      ids.insert(record.id.clone());
      listed.push(ListedMemory { record, consolidated: true });
    }
  }
  if layout.dir(&layout.wal, false)?.is_some() {
    for record in pending_records(&layout.wal_path())? {
      if ids.insert(record.id.clone()) {
        listed.push(ListedMemory { record, consolidated: false });
      }
    }
  }
  listed.retain(|m| {
    !m.record.is_expired(now)
      && match (&visible, m.record.agent_id.as_deref()) {
        (Some(agents), Some(owner)) => agents.iter().any(|a| a == owner),
        _ => true,
      }
  });
  let mut by_agent: BTreeMap<Option<String>, BTreeMap<_, u64>> = BTreeMap::new();
  for m in &listed {
    *by_agent.entry(m.record.agent_id.clone()).or_default().entry(m.record.kind).or_default() += 1;
  }
  let total = listed.len() as u64;
  let pending = listed.iter().filter(|m| !m.consolidated).count() as u64;
  // Times parsed once, not in every comparison.
  let mut keyed: Vec<(i64, ListedMemory)> = listed.into_iter().map(|m| (m.record.ts_ms(), m)).collect();
  keyed.sort_by(|(ta, a), (tb, b)| tb.cmp(ta).then_with(|| a.record.id.cmp(&b.record.id)));
  keyed.truncate(options.limit);
  let root = layout.root()?;
  let tombstones = match layout.dir(&layout.grimoire, false)? {
    Some(grimoire) => super::tombstone::all(&grimoire)?.len() as u64,
    None => 0,
  };
  Ok(Inventory {
    memories: keyed.into_iter().map(|(_, m)| m).collect(),
    total,
    pending,
    by_agent,
    tombstones,
    quarantined: super::traces::quarantined_files(layout, &root)?,
  })
}
