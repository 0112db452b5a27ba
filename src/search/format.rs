//! The index's two files, byte for byte (format version 2). No I/O here: encoding, decoding and
//! the checks that make damage an error rather than wrong results.
//!
//! **Base** (`search-index.base`), the whole index as of one generation, written atomically and
//! read in place (mapped): its layout is in [`super::base`].
//!
//! **Log** (`search-index.log`), what was added since the base, appended one record per add:
//!
//! ```text
//! 0   magic "LOASRCHL"
//! 8   format version  u32 LE (2; the layout is that of version 1)
//! 12  analyzer id     u32 LE
//! 16  generation      u64 LE (must equal the base's; an older one is stale: ignored, reset)
//! 24  header CRC-32C  u32 LE, over bytes 0..24
//! 28  records: length u32 LE | CRC-32C u32 LE over (length bytes ++ payload) | payload
//!       payload: postcard of the enum LogOp; variant 0 = Add { id: string,
//!       agent_id: option<string>, kind: u8, instruction: bool, mood: u8, timestamp_ms: i64,
//!       session_tag: u16, terms: [(string, u32)] }
//! ```
//!
//! A record that fails its checks and reaches the end of the file is a torn tail (a writer was
//! killed mid-append, or is appending right now): readers stop before it, a writer under the
//! lock cuts it off. One that fails and is followed by more bytes is damage: `E_STATE_CORRUPT`.
//! Every count read is checked against the bytes that remain, so no allocation is sized by a
//! damaged file; decoded content is checked for consistency (ids and terms of bounded size, no
//! term twice in a record, term counts positive). The base's checks are in [`super::base`].

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::memory::MemoryKind;

use super::analyze::MAX_TERM_BYTES;
use super::base::{BaseBytes, MappedBase};
use super::index::{AnalyzedDoc, MemoryIndex, MAX_ID_BYTES};
use super::mood::Mood;

/// The format version written, and the only one read (see `docs/search.md` for the rule on
/// other versions: the index is derived, so it is rebuilt, never misread).
pub const FORMAT_VERSION: u32 = 2;
pub const BASE_MAGIC: &[u8; 8] = b"LOASRCHB";
pub const LOG_MAGIC: &[u8; 8] = b"LOASRCHL";
pub use super::base::BASE_HEADER_BYTES;
pub const LOG_HEADER_BYTES: usize = 28;
/// Largest log record (one memory's terms) written or read.
pub const MAX_LOG_RECORD_BYTES: usize = 16 * 1024 * 1024;

/// Why a file could not be read as an index file. Reasons never hold file content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatError {
  /// Damaged: a checksum, a length or a consistency check failed.
  Damaged(String),
  /// A format version this build does not read.
  Version(u32),
  /// Built by another analyser (version or settings).
  Analyzer(u32),
}

impl std::fmt::Display for FormatError {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match self {
      FormatError::Damaged(reason) => write!(f, "damaged ({reason}); rebuild the index"),
      FormatError::Version(v) => write!(f, "format version {v} is not readable by this version; rebuild the index"),
      FormatError::Analyzer(a) => write!(f, "built by another analyser ({a:#x}); rebuild the index"),
    }
  }
}

fn damaged<T>(reason: impl Into<String>) -> Result<T, FormatError> {
  Err(FormatError::Damaged(reason.into()))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
  u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
  u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

pub(super) fn kind_code(kind: MemoryKind) -> u8 {
  match kind {
    MemoryKind::Interaction => 0,
    MemoryKind::Decision => 1,
    MemoryKind::Learning => 2,
    MemoryKind::Error => 3,
    MemoryKind::Milestone => 4,
  }
}

pub(super) fn kind_of_code(code: u8) -> Result<MemoryKind, FormatError> {
  MemoryKind::ALL.get(code as usize).copied().map_or_else(|| damaged("unknown memory kind"), Ok)
}

// ---- base ----

/// The base file of `index` (see [`super::base`] for its layout). The index must be held in
/// memory and compacted (no dead slots): [`MemoryIndex::compact`] first.
pub fn encode_base(index: &MemoryIndex, analyzer_id: u32, generation: u64) -> Vec<u8> {
  let parts = index.parts();
  debug_assert!(parts.slots.iter().all(|s| s.live), "encode_base needs a compacted index");
  super::base::encode(&parts, analyzer_id, generation)
}

/// The header of a base file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BaseHeader {
  pub analyzer_id: u32,
  pub generation: u64,
}

/// Opens a base file held in memory (a copy of `bytes`) as an index built with `config`: what
/// tests and fuzzers use; the store maps the file instead. Only the header and the agent table
/// are checked here; the rest is checked as queries read it, so damage there is an
/// `E_STATE_CORRUPT` from the query.
pub fn decode_base(
  bytes: &[u8],
  config: super::analyze::AnalyzerConfig,
) -> Result<(BaseHeader, MemoryIndex), FormatError> {
  let base = MappedBase::open(Arc::new(BaseBytes::Owned(bytes.to_vec())), config.id(), "search-index.base".into())?;
  let header = BaseHeader { analyzer_id: base.analyzer_id, generation: base.generation };
  Ok((header, MemoryIndex::over_base(config, Arc::new(base))))
}

// ---- log ----

/// The header of a new, empty log of `generation`.
pub fn encode_log_header(analyzer_id: u32, generation: u64) -> Vec<u8> {
  let mut out = Vec::with_capacity(LOG_HEADER_BYTES);
  out.extend_from_slice(LOG_MAGIC);
  out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
  out.extend_from_slice(&analyzer_id.to_le_bytes());
  out.extend_from_slice(&generation.to_le_bytes());
  let crc = crc32c::crc32c(&out);
  out.extend_from_slice(&crc.to_le_bytes());
  out
}

/// A log header: its analyser id and generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogHeader {
  pub analyzer_id: u32,
  pub generation: u64,
}

/// Reads a log header; `Ok(None)` when fewer than [`LOG_HEADER_BYTES`] bytes are there (a log
/// whose creation was cut short: it holds no record).
pub fn decode_log_header(bytes: &[u8]) -> Result<Option<LogHeader>, FormatError> {
  if bytes.len() < LOG_HEADER_BYTES {
    return Ok(None);
  }
  if &bytes[..8] != LOG_MAGIC {
    return damaged("not an index log file");
  }
  if crc32c::crc32c(&bytes[..24]) != u32_at(bytes, 24) {
    return damaged("log header checksum mismatch");
  }
  let version = u32_at(bytes, 8);
  if version != FORMAT_VERSION {
    return Err(FormatError::Version(version));
  }
  Ok(Some(LogHeader { analyzer_id: u32_at(bytes, 12), generation: u64_at(bytes, 16) }))
}

#[derive(Serialize)]
enum LogOpOut<'a> {
  Add(AddOut<'a>),
}

#[derive(Serialize)]
struct AddOut<'a> {
  id: &'a str,
  agent_id: Option<&'a str>,
  kind: u8,
  instruction: bool,
  mood: u8,
  timestamp_ms: i64,
  session_tag: u16,
  terms: &'a [(String, u32)],
}

#[derive(Deserialize)]
enum LogOpIn {
  Add(AddIn),
}

#[derive(Deserialize)]
struct AddIn {
  id: String,
  agent_id: Option<String>,
  kind: u8,
  instruction: bool,
  mood: u8,
  timestamp_ms: i64,
  session_tag: u16,
  terms: Vec<(String, u32)>,
}

/// One framed log record adding `doc`.
pub fn encode_add(doc: &AnalyzedDoc) -> Vec<u8> {
  let op = LogOpOut::Add(AddOut {
    id: &doc.id,
    agent_id: doc.agent_id.as_deref(),
    kind: kind_code(doc.kind),
    instruction: doc.instruction,
    mood: doc.mood.code(),
    timestamp_ms: doc.timestamp_ms,
    session_tag: doc.session_tag,
    terms: &doc.terms,
  });
  let payload = postcard::to_allocvec(&op).expect("serialising to memory cannot fail");
  frame(&payload)
}

/// One log record around `payload` (length and checksum).
pub fn frame(payload: &[u8]) -> Vec<u8> {
  let len = (payload.len() as u32).to_le_bytes();
  let crc = crc32c::crc32c_append(crc32c::crc32c(&len), payload);
  let mut out = Vec::with_capacity(8 + payload.len());
  out.extend_from_slice(&len);
  out.extend_from_slice(&crc.to_le_bytes());
  out.extend_from_slice(payload);
  out
}

/// What the next bytes of a log hold.
#[derive(Debug)]
pub enum Next {
  /// A valid record of `size` bytes (frame included).
  Record { doc: AnalyzedDoc, size: usize },
  /// Nothing more.
  End,
  /// A record that is not whole (or fails its checks) and reaches the end: a torn tail.
  Torn,
}

/// Reads the record at the start of `rest` (the log from some record boundary to its end).
pub fn next_record(rest: &[u8]) -> Result<Next, FormatError> {
  if rest.is_empty() {
    return Ok(Next::End);
  }
  if rest.len() < 8 {
    return Ok(Next::Torn);
  }
  let len = u32_at(rest, 0) as usize;
  let end = 8usize.saturating_add(len);
  if end > rest.len() {
    return Ok(Next::Torn);
  }
  let payload = &rest[8..end];
  let crc = crc32c::crc32c_append(crc32c::crc32c(&rest[..4]), payload);
  if len == 0 || len > MAX_LOG_RECORD_BYTES || crc != u32_at(rest, 4) {
    return if end == rest.len() { Ok(Next::Torn) } else { damaged("log record checksum mismatch") };
  }
  let op: LogOpIn = match postcard::from_bytes(payload) {
    Ok(op) => op,
    Err(_) => return damaged("log record does not decode"),
  };
  let LogOpIn::Add(add) = op;
  if add.id.is_empty()
    || add.id.len() > MAX_ID_BYTES
    || add.agent_id.as_ref().is_some_and(|a| a.is_empty() || a.len() > MAX_ID_BYTES)
  {
    return damaged("bad log record");
  }
  let mut seen = rustc_hash::FxHashSet::default();
  for (term, tf) in &add.terms {
    if term.is_empty() || term.len() > MAX_TERM_BYTES || *tf == 0 || !seen.insert(term.as_str()) {
      return damaged("bad log record term");
    }
  }
  let doc = AnalyzedDoc {
    id: add.id,
    agent_id: add.agent_id,
    kind: kind_of_code(add.kind)?,
    instruction: add.instruction,
    mood: match Mood::from_code(add.mood) {
      Some(mood) => mood,
      None => return damaged("unknown mood"),
    },
    timestamp_ms: add.timestamp_ms,
    session_tag: add.session_tag,
    terms: add.terms,
  };
  Ok(Next::Record { doc, size: end })
}
