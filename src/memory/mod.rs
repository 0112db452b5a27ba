//! The memory pipeline: from "the agent finished a turn" to "a clean, worthwhile memory is
//! durably stored and can be read back".
//!
//! [`MemoryStore::capture`]: redaction (a blocked entry is refused; only the kinds and
//! fingerprints of its findings are recorded, as an `audit` record in the WAL) -> the six quality
//! gates ([`crate::gates`]) on the redacted text -> one WAL record `write memory/<id>.json`, where
//! `id` is the full sha256 of the normalised content. It returns once the record is durable. Only
//! redacted text is ever written: content, tags and every string (keys too) of `metadata` go
//! through the redactor, and errors never carry content. The agent id is an identifier, not
//! content: checked ([`types::check_agent_id`]) and stored as given, so scoping stays exact.
//!
//! [`MemoryStore::consolidate`]: applies the WAL of every session into the grimoire with
//! [`crate::wal::consolidate_with`] under the memory admission rule (`admit`: a record writes
//! only `memory/<id>.json`, `id` recomputed from its content, the file written from the parsed
//! record; anything else is refused and reported), so memory records are files written
//! atomically, last write wins per path, cross-session overwrites logged; then derives from all
//! memory records the learnings store (`learnings.json`, merged by id, see [`learnings`]) and the
//! two regions of NOTES.md the pipeline owns (see [`notes`]). Derived files are written only when
//! their bytes change, L1 (JSON) before L2 (markdown), each atomically; a second run changes
//! nothing. Because memories are content-addressed, the same normalised content is stored once
//! even when two sessions capture it at the same time.
//!
//! [`MemoryStore::search`] ranks memories for a query (see `search` and [`crate::search`]);
//! [`MemoryStore::forget`] removes one from every file, the WAL included (see `forget`), and
//! from the copies the project keeps beside them (see `traces`);
//! [`MemoryStore::import_markdown`] brings in a workspace's `MEMORY.md` and `memory/*.md`
//! ([`import`]). `docs/search.md` describes all three.
//!
//! Files: [`types`] (what is captured, stored and reported), `store` ([`MemoryStore`]: capture,
//! and the session's handle on everything else), `view` ([`MemoryView`]: reads, no lock, nothing
//! written), `consolidate` (the consolidation run, incremental), `search`, `forget`,
//! `tombstone`, `admit` (which WAL records are memories), [`import`], `layout` (where each
//! state file lives and how it is reached),
//! [`learnings`] and [`notes`] (the two derived files).
//!
//! Layout of a workspace's memory (defaults), each format with its version rule:
//!
//! ```text
//! .loa/wal/sessions/<session>/*.wal   WAL segments (format in crate::wal::format; header magic+version)
//! .loa/wal/consolidation.json         WAL consolidation state head ("version": 2; 1 is migrated)
//! .loa/wal/consolidation/<xxx>.json   its per-path winners, 4,096 shards ("version": 2)
//! .loa/wal/memory-consolidate.lock    one memory consolidation (or forget) at a time
//! .loa/wal/forget-pending.json        expired memories still in logs other processes hold ("version": 1; see pending)
//! .loa/wal/memory-imports.json        directories Markdown was imported from ("version": 1; see import)
//! grimoires/loa/memory/<id>.json      memory records ("version": 1; id = sha256 of content)
//! grimoires/loa/learnings.json        learnings store head ("version": 2; 1 is migrated; see learnings)
//! grimoires/loa/learnings.json.d/     its entries, 256 shards <xx>.json ("version": 2)
//! grimoires/loa/NOTES.md              two regions owned by the pipeline (see notes)
//! grimoires/loa/memory-summary.json   consolidation summary ("version": 2; other versions rebuilt)
//! grimoires/loa/search/               search index (base + log, format 1; other versions rebuilt)
//! grimoires/loa/tombstones.jsonl      keyed tombstones ("v": 1 per line; other versions kept, ignored)
//! .loa/keys/tombstone.key             the tombstones' HMAC key (0600)
//! ```
//!
//! Everything under `grimoires/loa/search/` and `memory-summary.json` is derived state: rebuilt
//! from the records and the WAL when missing, damaged or of another version.
//!
//! State files (NOTES.md, learnings.json, the memory records, the consolidation lock) are
//! reached through [`crate::fsutil::StateDir`]: never through a symlink, only as regular files
//! (anything else is `E_NOT_REGULAR_FILE`, and is never opened, read or written through), every
//! read bounded: NOTES.md and learnings.json at [`MAX_NOTES_BYTES`] and [`MAX_LEARNINGS_BYTES`]
//! (64 MiB each), a memory record at [`MAX_RECORD_BYTES`] (8 MiB); beyond, `E_TOO_LARGE` and the
//! file is left alone. Directories below the workspace are never followed through a symlink and
//! are created only below a handle already known to be inside it (`E_PATH_OUTSIDE_ROOT` before
//! any side effect).
//! A writer killed in the middle of an atomic write leaves a temp file behind; the next
//! consolidation removes those of dead processes under its lock.

mod admit;
mod consolidate;
mod forget;
pub mod import;
pub mod inventory;
mod layout;
pub mod learnings;
pub mod markdown;
pub mod notes;
mod pending;
pub mod seal;
mod search;
mod sources;
mod store;
mod tombstone;
mod traces;
pub mod types;
mod view;

pub use consolidate::checkpoint_with;
/// One NOTES.md writer at a time: consolidation and the ledger's edits share this lock.
pub(crate) use consolidate::LOCK_FILE as NOTES_LOCK_FILE;
pub use forget::TOMBSTONE_OP;
pub use import::{ImportOptions, ImportReport};
pub use layout::check_workspace;
pub use markdown::{MarkdownRead, ReadOptions};
pub use seal::{SealRequest, Sealed};
pub use search::{quote_untrusted, INDEX_DIR, QUERY_HEADER};
pub use store::{consolidate_workspace, consolidate_workspace_with, forget_records, MemoryStore};
pub use tombstone::Forgotten;
pub(crate) use types::RedactedEntry;
pub use types::{
  check_agent_id, CaptureFinding, CaptureOptions, CaptureOutcome, CaptureTry, ConsolidateOutcome, ContextRequest,
  Entry, ForgetOptions, ForgetOutcome, ForgetSelector, ImportedCopy, Learning, MemoryHit, MemoryKind, MemoryRecord,
  MemorySearchResults, RedactionNote, RefusedRecord, RetryConfig, SearchOptions, SearchSettings, SessionEntry,
  SessionSource, Sharing, StoreOptions, DEFAULT_AUDIT_DIR, DEFAULT_AUDIT_SEGMENT_MAX_BYTES, DEFAULT_GRIMOIRE_DIR,
  DEFAULT_KEYS_DIR, DEFAULT_WAL_DIR, MAX_AGENT_ID_BYTES, MAX_CONTENT_BYTES, MAX_LEARNINGS_BYTES, MAX_METADATA_BYTES,
  MAX_NOTES_BYTES, MAX_RECORD_BYTES, MAX_TAGS, MAX_TAG_BYTES, MEMORY_DIR, NOTES_MAX_DECISIONS, NOTES_MAX_SESSIONS,
};
pub use view::{ContextLearningSource, ContextSources, MemoryView};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_expiry;
#[cfg(test)]
mod tests_forgery;
#[cfg(test)]
mod tests_forget;
#[cfg(test)]
mod tests_inventory;
#[cfg(test)]
mod tests_open;
#[cfg(test)]
mod tests_seal;
#[cfg(test)]
mod tests_search;
#[cfg(test)]
mod tests_traces;
