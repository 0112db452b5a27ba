//! The memory pipeline: from "the agent finished a turn" to "a clean, worthwhile memory is
//! durably stored and can be read back".
//!
//! [`MemoryStore::capture`]: redaction (a blocked entry is refused; only the kinds and
//! fingerprints of its findings are recorded, as an `audit` record in the WAL) -> the six quality
//! gates ([`crate::gates`]) on the redacted text -> one WAL record `write memory/<id>.json`, where
//! `id` is the full sha256 of the normalised content. It returns once the record is durable. Only
//! redacted text is ever written: content, tags, agent id and every string (keys too) of
//! `metadata` go through the redactor, and errors never carry content.
//!
//! [`MemoryStore::consolidate`]: applies the WAL of every session into the grimoire with
//! [`crate::wal::consolidate`] (so memory records are files `memory/<id>.json`, written
//! atomically, last write wins per path, cross-session overwrites logged), then derives from all
//! memory records the learnings store (`learnings.json`, merged by id, see [`learnings`]) and the
//! two regions of NOTES.md the pipeline owns (see [`notes`]). Derived files are written only when
//! their bytes change, L1 (JSON) before L2 (markdown), each atomically; a second run changes
//! nothing. Because memories are content-addressed, the same normalised content is stored once
//! even when two sessions capture it at the same time.
//!
//! Files: [`types`] (what is captured, stored and reported), `store` ([`MemoryStore`]: capture,
//! and the session's handle on everything else), `view` ([`MemoryView`]: reads, no lock, nothing
//! written), `consolidate` (the consolidation run), `layout` (where each state file lives and how
//! it is reached), [`learnings`] and [`notes`] (the two derived files).
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

mod consolidate;
mod layout;
pub mod learnings;
pub mod notes;
mod store;
pub mod types;
mod view;

pub use layout::check_workspace;
pub use store::{consolidate_workspace, MemoryStore};
pub use types::{
  CaptureFinding, CaptureOutcome, ConsolidateOutcome, ContextRequest, Entry, Learning, MemoryKind, MemoryRecord,
  RedactionNote, RetryConfig, SessionEntry, SessionSource, StoreOptions, DEFAULT_GRIMOIRE_DIR, DEFAULT_WAL_DIR,
  MAX_CONTENT_BYTES, MAX_LEARNINGS_BYTES, MAX_METADATA_BYTES, MAX_NOTES_BYTES, MAX_RECORD_BYTES, MAX_TAGS,
  MAX_TAG_BYTES, MEMORY_DIR, NOTES_MAX_DECISIONS, NOTES_MAX_SESSIONS,
};
pub use view::MemoryView;

#[cfg(test)]
mod tests;
