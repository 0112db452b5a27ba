//! The Lossless Ledger: clear the context, don't compact it, and lose nothing (seed 000, with
//! the persistence protocol of seed 004).
//!
//! The context window is disposable; what the agent knew lives in ledgers outside it, which this
//! module reads, writes and checks. `docs/ledger.md` describes the file formats and the choices
//! made where the seeds are silent.
//!
//! - [`notes`]: NOTES.md's Session Continuity section, edited by heading, foreign text kept
//!   byte for byte; [`decision`]: the Decision Log entry format.

pub mod beads;
pub mod decision;
pub mod grounding;
pub mod identifier;
pub mod notes;
pub mod options;
pub mod persistence;
pub mod recall;
pub mod status;
pub mod trajectory;
