//! What a workspace's memory holds, for a person to look at (`loa report`): `MemoryStore.inventory`
//! lists the memories and the counts around them, and `MemoryStore.buildContextExplained` says
//! what each item of the next prompt's context stands for. Both are reads.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::{Env, Unknown};
use napi_derive::napi;

use super::convert::{opt_object, Given, Int, Str};
use super::memory::MemoryStore;
use super::search::{SearchExplain, StoredMemory};
use super::{guard, sync_twin, to_napi, CoreTask, RawJs};
use crate::error::Result;
use crate::memory::inventory as core;
use crate::memory::MemoryKind;

/// What `MemoryStore.inventory` lists.
#[napi(object, object_to_js = false)]
pub struct MemoryInventoryOptions {
  /// Only the memories this agent may see (its own, those `memory.sharing` shares with it, and
  /// the workspace's); the counts then cover only those too. Default: every memory.
  #[napi(ts_type = "string")]
  pub agent_id: Option<Option<Str>>,
  /// Most memories in `memories` (newest first), 1 to 100000. Default 1000. The counts cover
  /// every memory whatever the limit.
  #[napi(ts_type = "number")]
  pub limit: Option<Option<Int>>,
}

impl From<MemoryInventoryOptions> for core::InventoryOptions {
  fn from(o: MemoryInventoryOptions) -> core::InventoryOptions {
    core::InventoryOptions {
      agent_id: o.agent_id.given(),
      limit: o.limit.given().map_or(1000, |n: u64| usize::try_from(n).unwrap_or(usize::MAX)),
    }
  }
}

/// One memory of an inventory.
#[napi(object, object_from_js = false)]
pub struct ListedMemory {
  pub memory: StoredMemory,
  /// Its record file is in the grimoire; `false` while it is only in the WAL (the next
  /// consolidation applies it).
  pub consolidated: bool,
}

/// How many memories one agent has (or the workspace, `agentId` absent), per type.
#[napi(object, object_from_js = false)]
pub struct AgentMemoryCounts {
  /// Absent for the workspace's memories (captured without an agent; every agent sees them).
  pub agent_id: Option<String>,
  pub total: u32,
  pub interaction: u32,
  pub decision: u32,
  pub learning: u32,
  pub error: u32,
  pub milestone: u32,
}

/// A workspace's memory at one moment, as `MemoryStore.inventory` lists it.
#[napi(object, object_from_js = false)]
pub struct MemoryInventory {
  /// Newest first (ties by id), at most `limit`. Expired memories are never listed.
  pub memories: Vec<ListedMemory>,
  /// Every memory visible to the reader that has not expired, listed or not.
  pub total: u32,
  /// Of `total`, those only in the WAL so far (not yet consolidated).
  pub pending: u32,
  /// `total` per agent and type: the workspace's first, then agents by id.
  pub by_agent: Vec<AgentMemoryCounts>,
  /// Memories forgotten in this workspace. Tombstones hold keyed ids, never content, so this is
  /// a count only.
  pub tombstones: u32,
  /// Quarantined files (`<name>.corrupt-<time>`, kept for a human to look at) below the
  /// workspace's state directories, workspace-relative, sorted.
  pub quarantined: Vec<String>,
}

fn count(n: u64) -> u32 {
  u32::try_from(n).unwrap_or(u32::MAX)
}

impl From<core::Inventory> for MemoryInventory {
  fn from(i: core::Inventory) -> MemoryInventory {
    let by_agent = i
      .by_agent
      .into_iter()
      .map(|(agent_id, kinds)| {
        let of = |k: MemoryKind| count(kinds.get(&k).copied().unwrap_or(0));
        AgentMemoryCounts {
          agent_id,
          total: count(kinds.values().sum()),
          interaction: of(MemoryKind::Interaction),
          decision: of(MemoryKind::Decision),
          learning: of(MemoryKind::Learning),
          error: of(MemoryKind::Error),
          milestone: of(MemoryKind::Milestone),
        }
      })
      .collect();
    MemoryInventory {
      memories: i
        .memories
        .into_iter()
        .map(|m| ListedMemory { memory: m.record.into(), consolidated: m.consolidated })
        .collect(),
      total: count(i.total),
      pending: count(i.pending),
      by_agent,
      tombstones: count(i.tombstones),
      quarantined: i.quarantined,
    }
  }
}

/// What one `learning` item of an explained context stands for.
#[napi(object, object_from_js = false)]
pub struct ContextLearningSource {
  /// Without a query, the learning's id in learnings.json; with one, the id of the memory hit
  /// (what `get` takes).
  pub id: String,
  /// Why the search found it, for a query's context.
  pub explain: Option<SearchExplain>,
}

/// `MemoryStore.buildContextExplained`'s answer: the context, and what each of its items (by
/// `index`, included or dropped) stands for.
#[napi(object, object_from_js = false)]
pub struct ExplainedContext {
  #[napi(ts_type = "BuiltContext")]
  pub context: RawJs,
  /// Items of kind `session`: the session's id (none for a query's context).
  pub sessions: Vec<String>,
  /// Items of kind `learning`: the learning, or for a query's context the memory hit.
  pub learnings: Vec<ContextLearningSource>,
}

fn inventory_args(options: Option<Unknown>) -> Result<core::InventoryOptions> {
  opt_object::<MemoryInventoryOptions, _>(options, "options")
}

#[napi]
impl MemoryStore {
  /// Every memory visible to the reader, newest first, with whether it is consolidated yet, and
  /// the counts a person checks: per agent and type, not yet consolidated, forgotten
  /// (tombstones), quarantined files. A read: takes no lock and writes nothing (a `readOnly`
  /// store will do). Memory content is redacted, as stored; each memory's `redactions` says
  /// what was replaced in it (kinds and counts, never values).
  #[napi(ts_args_type = "options?: MemoryInventoryOptions", ts_return_type = "Promise<MemoryInventory>")]
  pub fn inventory(&self, env: Env, options: Option<Unknown>) -> AsyncTask<CoreTask<MemoryInventory>> {
    let inner = Arc::clone(&self.inner);
    CoreTask::after(&env, || inventory_args(options), move |o| inner.inventory(&o).map(Into::into))
  }

  /// Synchronous twin of `inventory`.
  #[napi(ts_args_type = "options?: MemoryInventoryOptions")]
  pub fn inventory_sync(&self, env: Env, options: Option<Unknown>) -> napi::Result<MemoryInventory> {
    sync_twin(&env, || inventory_args(options), |o| self.inner.inventory(&o)).map(Into::into)
  }

  /// `buildContext`, with what each item stands for: the session of each `session` item, and
  /// the learning, or for a query the memory hit and its `explain`, of each `learning` item
  /// (by the items' `index`, included and dropped alike). For showing a person why the next
  /// prompt holds what it holds.
  #[napi(ts_args_type = "options?: MemoryContextOptions", ts_return_type = "ExplainedContext")]
  pub fn build_context_explained(&self, env: Env, options: Option<Unknown>) -> napi::Result<ExplainedContext> {
    let (built, sources) =
      to_napi(&env, guard(|| self.inner.build_context_explained(&super::memory::context_request(options)?)))?;
    let context = super::memory::built_to_js(&env, Ok(built))?;
    Ok(ExplainedContext {
      context,
      sessions: sources.sessions,
      learnings: sources
        .learnings
        .into_iter()
        .map(|l| ContextLearningSource { id: l.id, explain: l.explain.map(Into::into) })
        .collect(),
    })
  }
}

/// The kinds redacted in a memory and how often, sorted by kind; never values or fingerprints.
pub(super) fn redaction_counts(notes: &[crate::memory::types::RedactionNote]) -> Vec<RedactedKind> {
  let mut counts = std::collections::BTreeMap::<&str, u32>::new();
  for n in notes {
    *counts.entry(n.kind.as_str()).or_default() += 1;
  }
  counts.into_iter().map(|(kind, count)| RedactedKind { kind: kind.to_string(), count }).collect()
}

/// One kind of value redaction replaced in a memory, and how many times.
#[napi(object, object_from_js = false)]
pub struct RedactedKind {
  /// `email`, `phone`, ... (see `redactionKinds()`).
  pub kind: String,
  pub count: u32,
}
