//! The index's two files, byte for byte (format version 1). No I/O here: encoding, decoding and
//! the checks that make damage an error rather than wrong results.
//!
//! **Base** (`search-index.base`), the whole index as of one generation, written atomically:
//!
//! ```text
//! 0   magic "LOASRCHB"
//! 8   format version  u32 LE (1)
//! 12  analyzer id     u32 LE (see AnalyzerConfig::id)
//! 16  generation      u64 LE
//! 24  body length     u64 LE
//! 32  body CRC-32C    u32 LE
//! 36  header CRC-32C  u32 LE, over bytes 0..36
//! 40  body: postcard (serde's compact varint format, wire format 1.0) of
//!       agents: [string]
//!       docs:   [{ id: string, agent: u32 (0 none, else index + 1), kind: u8,
//!                  instruction: bool, timestamp_ms: i64, len: u32 }]
//!       terms:  [{ term: string, docs: [u32 gaps], tfs: [u32] }]
//! ```
//!
//! **Log** (`search-index.log`), what was added since the base, appended one record per add:
//!
//! ```text
//! 0   magic "LOASRCHL"
//! 8   format version  u32 LE (1)
//! 12  analyzer id     u32 LE
//! 16  generation      u64 LE (must equal the base's; an older one is stale: ignored, reset)
//! 24  header CRC-32C  u32 LE, over bytes 0..24
//! 28  records: length u32 LE | CRC-32C u32 LE over (length bytes ++ payload) | payload
//!       payload: postcard of the enum LogOp; variant 0 = Add { id: string,
//!       agent_id: option<string>, kind: u8, instruction: bool, timestamp_ms: i64,
//!       terms: [(string, u32)] }
//! ```
//!
//! A record that fails its checks and reaches the end of the file is a torn tail (a writer was
//! killed mid-append, or is appending right now): readers stop before it, a writer under the
//! lock cuts it off. One that fails and is followed by more bytes is damage: `E_STATE_CORRUPT`.
//! Every count read is checked against the bytes that remain, so no allocation is sized by a
//! damaged file; decoded content is checked for consistency (ordinals in range and strictly
//! increasing, every memory's length equal to the sum of its term counts, no duplicates).

use std::sync::Arc;

use serde::{Deserialize, Serialize, Serializer};

use crate::memory::MemoryKind;

use super::analyze::MAX_TERM_BYTES;
use super::index::{AnalyzedDoc, MemoryIndex, Postings, Slot, MAX_ID_BYTES};

/// The format version written, and the only one read (see `docs/search.md` for the rule on
/// other versions: the index is derived, so it is rebuilt, never misread).
pub const FORMAT_VERSION: u32 = 1;
pub const BASE_MAGIC: &[u8; 8] = b"LOASRCHB";
pub const LOG_MAGIC: &[u8; 8] = b"LOASRCHL";
pub const BASE_HEADER_BYTES: usize = 40;
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

fn kind_code(kind: MemoryKind) -> u8 {
  match kind {
    MemoryKind::Interaction => 0,
    MemoryKind::Decision => 1,
    MemoryKind::Learning => 2,
    MemoryKind::Error => 3,
    MemoryKind::Milestone => 4,
  }
}

fn kind_of_code(code: u8) -> Result<MemoryKind, FormatError> {
  MemoryKind::ALL.get(code as usize).copied().map_or_else(|| damaged("unknown memory kind"), Ok)
}

// ---- base ----

#[derive(Serialize)]
struct BaseOut<'a> {
  agents: Vec<&'a str>,
  docs: Vec<DocOut<'a>>,
  terms: Vec<TermOut<'a>>,
}

#[derive(Serialize)]
struct DocOut<'a> {
  id: &'a str,
  agent: u32,
  kind: u8,
  instruction: bool,
  timestamp_ms: i64,
  len: u32,
}

#[derive(Serialize)]
struct TermOut<'a> {
  term: &'a str,
  docs: Gaps<'a>,
  tfs: &'a [u32],
}

/// A sorted ordinal list written as gaps (the first as it is), so postcard's varints stay short.
struct Gaps<'a>(&'a [u32]);

impl Serialize for Gaps<'_> {
  fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
    let mut prev = 0u32;
    s.collect_seq(self.0.iter().map(|&d| {
      let gap = d - prev;
      prev = d;
      gap
    }))
  }
}

#[derive(Deserialize)]
struct BaseIn {
  agents: Vec<String>,
  docs: Vec<DocIn>,
  terms: Vec<TermIn>,
}

#[derive(Deserialize)]
struct DocIn {
  id: String,
  agent: u32,
  kind: u8,
  instruction: bool,
  timestamp_ms: i64,
  len: u32,
}

#[derive(Deserialize)]
struct TermIn {
  term: String,
  docs: Vec<u32>,
  tfs: Vec<u32>,
}

/// The base file of `index` (which must be compacted: no dead slots).
pub fn encode_base(index: &MemoryIndex, analyzer_id: u32, generation: u64) -> Vec<u8> {
  let super::index::Parts { agents, slots, terms, postings } = index.parts();
  debug_assert!(slots.iter().all(|s| s.live), "encode_base needs a compacted index");
  let body = BaseOut {
    agents: agents.iter().map(|a| &**a).collect(),
    docs: slots
      .iter()
      .map(|s| DocOut {
        id: &s.id,
        agent: s.agent,
        kind: kind_code(s.kind),
        instruction: s.instruction,
        timestamp_ms: s.timestamp_ms,
        len: s.len,
      })
      .collect(),
    terms: terms.iter().zip(postings).map(|(t, p)| TermOut { term: t, docs: Gaps(&p.docs), tfs: &p.tfs }).collect(),
  };
  let body = postcard::to_allocvec(&body).expect("serialising to memory cannot fail");
  wrap_base_body(&body, analyzer_id, generation)
}

/// A base file around `body` (header and checksums): what [`encode_base`] writes, and what tests
/// and fuzzers use to reach the body's decoder past the checksums.
pub fn wrap_base_body(body: &[u8], analyzer_id: u32, generation: u64) -> Vec<u8> {
  let mut out = Vec::with_capacity(BASE_HEADER_BYTES + body.len());
  out.extend_from_slice(BASE_MAGIC);
  out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
  out.extend_from_slice(&analyzer_id.to_le_bytes());
  out.extend_from_slice(&generation.to_le_bytes());
  out.extend_from_slice(&(body.len() as u64).to_le_bytes());
  out.extend_from_slice(&crc32c::crc32c(body).to_le_bytes());
  let header_crc = crc32c::crc32c(&out);
  out.extend_from_slice(&header_crc.to_le_bytes());
  out.extend_from_slice(body);
  out
}

/// The body of a base file (what follows the header), for tests and fuzzers.
pub fn base_body(bytes: &[u8]) -> &[u8] {
  &bytes[BASE_HEADER_BYTES.min(bytes.len())..]
}

/// The header of a base file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BaseHeader {
  pub analyzer_id: u32,
  pub generation: u64,
}

/// Reads a base file back into an index built with `config`.
pub fn decode_base(
  bytes: &[u8],
  config: super::analyze::AnalyzerConfig,
) -> Result<(BaseHeader, MemoryIndex), FormatError> {
  if bytes.len() < BASE_HEADER_BYTES || &bytes[..8] != BASE_MAGIC {
    return damaged("not an index base file");
  }
  if crc32c::crc32c(&bytes[..36]) != u32_at(bytes, 36) {
    return damaged("header checksum mismatch");
  }
  let version = u32_at(bytes, 8);
  if version != FORMAT_VERSION {
    return Err(FormatError::Version(version));
  }
  let header = BaseHeader { analyzer_id: u32_at(bytes, 12), generation: u64_at(bytes, 16) };
  if header.analyzer_id != config.id() {
    return Err(FormatError::Analyzer(header.analyzer_id));
  }
  let body = &bytes[BASE_HEADER_BYTES..];
  if u64_at(bytes, 24) != body.len() as u64 {
    return damaged("body length mismatch");
  }
  if crc32c::crc32c(body) != u32_at(bytes, 32) {
    return damaged("body checksum mismatch");
  }
  let parsed: BaseIn = match postcard::from_bytes(body) {
    Ok(p) => p,
    Err(_) => return damaged("body does not decode"),
  };
  Ok((header, build(parsed, config)?))
}

fn build(parsed: BaseIn, config: super::analyze::AnalyzerConfig) -> Result<MemoryIndex, FormatError> {
  let mut agents: Vec<Arc<str>> = Vec::with_capacity(parsed.agents.len());
  let mut agent_set = rustc_hash::FxHashSet::default();
  for a in parsed.agents {
    if a.is_empty() || a.len() > MAX_ID_BYTES || !agent_set.insert(a.clone()) {
      return damaged("bad agent table");
    }
    agents.push(Arc::from(a));
  }
  let mut slots = Vec::with_capacity(parsed.docs.len());
  let mut ids = rustc_hash::FxHashSet::default();
  for d in parsed.docs {
    if d.id.is_empty() || d.id.len() > MAX_ID_BYTES || d.agent as usize > agents.len() {
      return damaged("bad document entry");
    }
    let id: Arc<str> = Arc::from(d.id);
    if !ids.insert(id.clone()) {
      return damaged("duplicate document id");
    }
    slots.push(Slot {
      id,
      timestamp_ms: d.timestamp_ms,
      len: d.len,
      agent: d.agent,
      kind: kind_of_code(d.kind)?,
      instruction: d.instruction,
      live: true,
    });
  }
  let n = slots.len() as u64;
  let mut sums = vec![0u64; slots.len()];
  let mut terms: Vec<Arc<str>> = Vec::with_capacity(parsed.terms.len());
  let mut postings = Vec::with_capacity(parsed.terms.len());
  let mut term_set = rustc_hash::FxHashSet::default();
  for t in parsed.terms {
    if t.term.is_empty() || t.term.len() > MAX_TERM_BYTES || t.docs.is_empty() || t.docs.len() != t.tfs.len() {
      return damaged("bad term entry");
    }
    let mut docs = t.docs;
    let mut at = 0u64;
    for (i, gap) in docs.iter_mut().enumerate() {
      if i > 0 && *gap == 0 {
        return damaged("posting list not increasing");
      }
      at += u64::from(*gap);
      if at >= n {
        return damaged("posting out of range");
      }
      *gap = at as u32;
    }
    for (d, tf) in docs.iter().zip(&t.tfs) {
      if *tf == 0 {
        return damaged("zero term count");
      }
      sums[*d as usize] += u64::from(*tf);
    }
    let term: Arc<str> = Arc::from(t.term);
    if !term_set.insert(term.clone()) {
      return damaged("duplicate term");
    }
    terms.push(term);
    postings.push(Postings { docs, tfs: t.tfs });
  }
  if slots.iter().zip(&sums).any(|(s, sum)| u64::from(s.len) != *sum) {
    return damaged("document length does not match its postings");
  }
  Ok(MemoryIndex::from_parts(config, agents, slots, terms, postings))
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
  timestamp_ms: i64,
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
  timestamp_ms: i64,
  terms: Vec<(String, u32)>,
}

/// One framed log record adding `doc`.
pub fn encode_add(doc: &AnalyzedDoc) -> Vec<u8> {
  let op = LogOpOut::Add(AddOut {
    id: &doc.id,
    agent_id: doc.agent_id.as_deref(),
    kind: kind_code(doc.kind),
    instruction: doc.instruction,
    timestamp_ms: doc.timestamp_ms,
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
    timestamp_ms: add.timestamp_ms,
    terms: add.terms,
  };
  Ok(Next::Record { doc, size: end })
}
