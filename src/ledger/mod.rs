//! The Lossless Ledger: clear the context, don't compact it, and lose nothing (seed 000, with
//! the persistence protocol of seed 004).
//!
//! The context window is disposable; what the agent knew lives in ledgers outside it, which this
//! module reads, writes and checks. `docs/ledger.md` describes the file formats and the choices
//! made where the seeds are silent.
//!
//! - [`notes`]: NOTES.md's Session Continuity section, edited by heading, foreign text kept
//!   byte for byte; [`decision`]: the Decision Log entry format; [`notes_log`]: the layouts the
//!   original framework's scripts write (Decision Log tables, blocks and dated bullets, the
//!   session log, the sub-goal, debt and blocker lists).
//! - [`recall`]: tiered recall (L1 by heading within `level1_tokens`, L2 ranked decisions, L3).
//! - [`trajectory`]: the JSONL audit trail; [`grounding`]: the grounding check and negative
//!   grounding; [`identifier`]: lightweight identifiers.
//! - [`status`], [`persistence`]: the persistence protocol of seed 004.
//! - [`beads`]: `.beads/<id>.yaml`; [`checkpoint`]: the synthesis checkpoint before `/clear`.
//! - [`options`]: the ledger's configuration sections.
//!
//! [`Ledger`] ties them to one workspace's paths. Every file is reached through
//! [`crate::fsutil::StateDir`] (no symlink followed below the workspace, regular files only,
//! reads bounded, whole-file writes atomic).

pub mod beads;
pub mod checkpoint;
pub mod decision;
pub mod grounding;
pub mod identifier;
mod layout;
pub mod notes;
pub mod notes_log;
pub mod options;
pub mod persistence;
pub mod recall;
pub mod status;
pub mod trajectory;
mod workspace;

pub use checkpoint::{
  checkpoint, update_continuity, CheckpointInput, CheckpointReport, ContinuityEdit, ContinuityOutcome, DecisionInput,
  EvidenceInput, IdentifierInput,
};
pub use status::{transition_status, Status};
pub use workspace::{Ledger, LedgerOptions, OverflowStore, PersistOutcome, Recovered};

#[cfg(test)]
mod tests;
