//! `loa-core`: a memory for AI agents that cannot be lost, leaked or forged.
//!
//! Plain Rust, testable with `cargo test`; the Node binding lives in [`binding`] and only
//! converts arguments and errors.

pub mod attention;
pub mod compaction;
pub mod config;
pub mod context;
pub mod error;
pub mod fsutil;
pub mod lock;
pub mod redact;
pub mod tokens;
pub mod wal;

mod binding;

pub use error::{LoaError, Result};
