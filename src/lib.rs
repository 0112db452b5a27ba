//! `loa-core`: a memory for AI agents that cannot be lost, leaked or forged.
//!
//! Plain Rust, testable with `cargo test`; the Node binding lives in [`binding`] and only
//! converts arguments and errors.

pub mod attention;
pub mod audit;
pub mod compaction;
pub mod config;
pub mod context;
pub mod dead_letter;
pub mod error;
pub mod fsutil;
pub mod gates;
pub mod identity;
pub mod jcs;
pub mod ledger;
pub mod lock;
pub mod memory;
pub mod recovery;
pub mod redact;
pub mod search;
pub mod settings;
pub mod sign;
pub mod synth;
pub mod timestamp;
pub mod tokens;
pub mod wal;
pub mod yaml;

#[cfg(feature = "napi")]
mod binding;

pub use error::{LoaError, Result};
