//! Search over memories: which memories answer a query, ranked, with the reason for each.
//!
//! Recall that brings back the most recent memories whatever the prompt is about misses the one
//! memory that answers it; this module finds it by its words. It is a lexical index in plain
//! Rust, small enough to run at every capture and every prompt:
//!
//! - [`analyze`]: how text becomes terms (UAX #29 words, NFKC, lowercase, English stop words,
//!   Snowball English stemming, character bigrams for scripts written without spaces). The same
//!   analysis applies to memories and queries.
//! - [`rank`]: the score, `relevance × recency × importance` and the context, speaker, period
//!   and mood parts, with BM25 as relevance, an exponential recency decay with a floor, relative to
//!   a `now` the caller passes, and weights by kind (decisions and instructions above
//!   interactions). Every hit carries an [`Explain`].
//! - [`period`]: the month or year a query names (`in March 2026`).
//! - [`speaker`]: who a query is about (`Jonas's friend`, `she`), and whose account a turn is.
//! - [`mood`]: whether a memory states, only asks, or voices a wish or plan.
//! - [`query`]: the query API ([`SearchOptions`]: limit, minimum score, kinds, the agents whose
//!   memories are visible, since), and the bounds that make hostile queries cheap.
//! - [`index`]: the inverted index in memory ([`MemoryIndex`]), usable alone.
//! - [`format`], [`base`] and `persist`: the index on disk ([`SearchIndex`]), a base file read in
//!   place (mapped; its vocabulary and ids are `fst` maps, its posting lists and per-memory rows
//!   are read where they lie, each section checksummed), so opening costs the same at any size,
//!   and an append-only log held in memory as a delta over it, updated at each add without
//!   rewriting the rest and folded into the base when it reaches a few MiB; read again by other
//!   processes when it changes, rewritten synchronously when a memory is removed so that no
//!   file holds its words, and rebuilt from the memories themselves when missing or damaged.
//!
//! What it guarantees: a query's cost is linear in its own size plus the posting lists of its
//! terms and of their speaker labels (never a regex, never backtracking); scores never count
//! memories the caller may not see; a damaged index is an error (`E_STATE_CORRUPT`) or a rebuild, never silently wrong
//! results; after [`SearchIndex::remove`] returns, no index file holds a term of the removed
//! memory that no other memory holds. `docs/search.md` describes the formula and the format.

pub mod analyze;
pub mod base;
pub mod format;
pub mod index;
pub mod isa;
pub mod mood;
pub mod period;
mod persist;
pub mod query;
pub mod rank;
pub mod related;
pub mod speaker;

pub use analyze::{Analyzer, AnalyzerConfig, ANALYZER_VERSION, MAX_TERM_BYTES};
pub use format::FORMAT_VERSION;
pub use index::{
  AddOutcome, AnalyzedDoc, Document, MemoryIndex, MAX_DOCUMENT_BYTES, MAX_ID_BYTES, MAX_ISA_PER_DOCUMENT,
  MAX_RELATED_PER_DOCUMENT, MAX_TERMS_PER_DOCUMENT,
};
pub use period::{period_in, Period};
pub use persist::{
  IndexOptions, IndexPosition, IndexStatus, Opened, SearchIndex, SourcesStamp, BASE_FILE, COMPACT_LOG_BYTES,
  DELTA_HEAP_BYTES, LOCK_FILE, LOG_FILE, MAX_BASE_BYTES, MAX_LOG_BYTES, SOURCES_FILE,
};
pub use query::{
  QueryTerm, SearchHit, SearchOptions, SearchResults, DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_BYTES, MAX_QUERY_TERMS,
  MAX_SCOPE_AGENTS,
};
pub use rank::{Explain, ImportanceWeights, MatchedTerm, RankConfig, Recency, DAY_MS};

#[cfg(test)]
mod bench;
#[cfg(test)]
mod tests;
