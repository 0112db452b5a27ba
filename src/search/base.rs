//! The base file (format version 2): the whole index of one generation, in sections that are
//! read where they lie (the file is mapped, see `persist`) rather than decoded into memory.
//!
//! Opening a base reads its fixed header and its agent table, nothing else, so it costs the same
//! at 1,000 memories and at 100,000; a query then reads the posting lists of its own terms and
//! the rows of the memories they name. Memory is paged from the file, never copied: what the
//! process holds for the base is the file's pages it touched, at most the file's size.
//!
//! ```text
//! 0    magic "LOASRCHB"
//! 8    format version  u32 LE (2)
//! 12   analyzer id     u32 LE (see AnalyzerConfig::id)
//! 16   generation      u64 LE
//! 24   memories        u32 LE (rows)
//! 28   terms           u32 LE (vocabulary entries)
//! 32   section table: 6 × { offset u64 LE, length u64 LE, CRC-32C u32 LE, 0 u32 }
//! 176  header CRC-32C  u32 LE, over bytes 0..176
//! 180  sections, back to back in this order, the last one ending at the end of the file:
//!   agents    postcard of (unassigned: (docs u32, len u64), agents: [(name string, docs u32, len u64)])
//!             — BM25's N and total length per agent scope, so nothing is counted at open
//!   rows      one 24-byte row per memory, by ordinal: timestamp_ms i64, len u32 (terms counted
//!             with repeats), agent u32 (0 none, else index + 1), id_end u32 (end of its id in
//!             `ids`; it starts where the previous row's ends), kind u8, flags u8 (bit 0 instruction,
//!             bits 1-2 the code of its mood, see `mood::Mood`),
//!             session tag u16 LE (0: none; see `index::session_tag`)
//!   ids       the memories' ids, back to back, UTF-8
//!   id map    fst::Map: id -> ordinal
//!   vocab     fst::Map: term -> offset of its posting list in `postings`
//!   postings  per term: CRC-32C u32 LE over the rest | length u32 LE | postcard of
//!             (ordinal gaps [u32], term counts [u32]) — the first gap is the first ordinal
//! ```
//!
//! **Checks.** The header's checksum covers the section table; the table must tile the file
//! exactly, so every byte is under some checksum. The agent table is checked at open (it is
//! small); rows, ids and both maps are each checked in full on their first use (a CRC-32C pass,
//! about a millisecond for 100,000 memories); each posting list is checked when a query reads
//! it. An `fst::Map` is only ever built over bytes whose checksum matched (the `fst` crate
//! trusts its input and may panic on arbitrary bytes); everything else is bounds-checked, so
//! damage is `E_STATE_CORRUPT`, never a panic or wrong results.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::error::{LoaError, Result};
use crate::memory::MemoryKind;

use super::analyze::MAX_TERM_BYTES;
use super::format::{kind_code, FormatError, BASE_MAGIC, FORMAT_VERSION};
use super::index::{Postings, ScopeStats, Slot, MAX_ID_BYTES};
use super::mood::Mood;

/// Bytes of the fixed header (section table and its checksum included).
pub const BASE_HEADER_BYTES: usize = 180;
const TABLE_AT: usize = 32;
const SECTIONS: usize = 6;
const ROW_BYTES: usize = 24;
const AGENTS: usize = 0;
const ROWS: usize = 1;
const IDS: usize = 2;
const ID_MAP: usize = 3;
const VOCAB: usize = 4;
const POSTINGS: usize = 5;
const NAMES: [&str; SECTIONS] = ["agents", "rows", "ids", "id map", "vocabulary", "postings"];

/// The bytes of a base: a read-only mapping of the file, or a copy (tests, fuzzing, a file
/// system that cannot map).
pub enum BaseBytes {
  Mapped(memmap2::Mmap),
  Owned(Vec<u8>),
}

impl Deref for BaseBytes {
  type Target = [u8];
  fn deref(&self) -> &[u8] {
    match self {
      BaseBytes::Mapped(m) => m,
      BaseBytes::Owned(v) => v,
    }
  }
}

/// One section of a shared base, for `fst::Map` to read in place.
#[derive(Clone)]
struct Part {
  bytes: Arc<BaseBytes>,
  start: usize,
  end: usize,
}

impl AsRef<[u8]> for Part {
  fn as_ref(&self) -> &[u8] {
    &self.bytes[self.start..self.end]
  }
}

#[derive(Debug, Clone, Copy)]
struct Section {
  start: usize,
  end: usize,
  crc: u32,
}

fn damaged<T>(reason: impl Into<String>) -> std::result::Result<T, FormatError> {
  Err(FormatError::Damaged(reason.into()))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
  u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
  u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[derive(Serialize, Deserialize)]
struct AgentsSection {
  unassigned: (u32, u64),
  agents: Vec<(String, u32, u64)>,
}

/// One memory's row, as read from the file.
#[derive(Debug, Clone, Copy)]
pub(super) struct Row {
  pub timestamp_ms: i64,
  pub len: u32,
  pub agent: u32,
  pub kind: MemoryKind,
  pub instruction: bool,
  pub mood: Mood,
  pub session_tag: u16,
}

/// The checked row table of a base.
pub(super) struct Rows<'a> {
  bytes: &'a [u8],
  agents: usize,
  base: &'a MappedBase,
}

impl Rows<'_> {
  /// The row of memory `ord`.
  #[inline]
  pub fn get(&self, ord: u32) -> Result<Row> {
    let at = ord as usize * ROW_BYTES;
    let row: Option<&[u8; ROW_BYTES]> = self.bytes.get(at..at + ROW_BYTES).and_then(|r| r.try_into().ok());
    let Some(&row) = row else { return Err(self.base.corrupt("row out of range")) };
    // Destructured, so that no field read is bounds-checked again.
    let [t0, t1, t2, t3, t4, t5, t6, t7, l0, l1, l2, l3, a0, a1, a2, a3, _, _, _, _, kind, flags, s0, s1] = row;
    let agent = u32::from_le_bytes([a0, a1, a2, a3]);
    // No code a version writes has a bit above the mood's: `from_code` refuses them.
    match (MemoryKind::ALL.get(kind as usize), Mood::from_code(flags >> 1)) {
      (Some(&kind), Some(mood)) if agent as usize <= self.agents => Ok(Row {
        timestamp_ms: i64::from_le_bytes([t0, t1, t2, t3, t4, t5, t6, t7]),
        len: u32::from_le_bytes([l0, l1, l2, l3]),
        agent,
        kind,
        instruction: flags & 1 != 0,
        mood,
        session_tag: u16::from_le_bytes([s0, s1]),
      }),
      _ => Err(self.base.corrupt("bad row")),
    }
  }

  /// The BM25 length of memory `ord` alone: what the loop over a query's postings reads when
  /// the query filters nothing (the table's checksum was checked when it was opened).
  #[inline]
  pub fn len(&self, ord: u32) -> Result<u32> {
    let at = ord as usize * ROW_BYTES + 8;
    match self.bytes.get(at..at + 4) {
      Some(&[l0, l1, l2, l3]) => Ok(u32::from_le_bytes([l0, l1, l2, l3])),
      _ => Err(self.base.corrupt("row out of range")),
    }
  }

  /// The session tag of memory `ord` alone (context from neighbours reads nothing else).
  #[inline]
  pub fn session_tag(&self, ord: u32) -> Result<u16> {
    let at = ord as usize * ROW_BYTES + 22;
    match self.bytes.get(at..at + 2) {
      Some(&[s0, s1]) => Ok(u16::from_le_bytes([s0, s1])),
      _ => Err(self.base.corrupt("row out of range")),
    }
  }
}

/// Reads a varint `u32` as postcard writes it (LEB128, at most 5 bytes, the fifth holding the
/// top 4 bits) at `*at`, advancing it; `None` when the bytes end or the varint is too long.
#[inline]
fn varint(b: &[u8], at: &mut usize) -> Option<u32> {
  // Most gaps and term counts fit in one byte.
  let first = *b.get(*at)?;
  if first < 0x80 {
    *at += 1;
    return Some(u32::from(first));
  }
  varint_long(b, at)
}

/// [`varint`] of two bytes or more.
fn varint_long(b: &[u8], at: &mut usize) -> Option<u32> {
  let mut value = 0u32;
  let mut shift = 0;
  loop {
    let byte = *b.get(*at)?;
    *at += 1;
    if shift == 28 && byte > 0x0F {
      return None;
    }
    value |= u32::from(byte & 0x7F) << shift;
    if byte & 0x80 == 0 {
      return Some(value);
    }
    shift += 7;
  }
}

/// An opened base (see the module docs). Cheap to share: queries read it in place.
pub struct MappedBase {
  bytes: Arc<BaseBytes>,
  /// Where it came from, for errors (a path, never content).
  label: String,
  pub(super) analyzer_id: u32,
  pub(super) generation: u64,
  pub(super) docs: u32,
  pub(super) terms: u32,
  sections: [Section; SECTIONS],
  /// Agent names (index + 1 is the agent number) and per-scope statistics (0: no agent).
  pub(super) agents: Vec<Arc<str>>,
  pub(super) stats: Vec<ScopeStats>,
  checked: [OnceLock<bool>; SECTIONS],
  id_map: OnceLock<Option<fst::Map<Part>>>,
  vocab: OnceLock<Option<fst::Map<Part>>>,
}

impl std::fmt::Debug for MappedBase {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_struct("MappedBase").field("label", &self.label).field("docs", &self.docs).finish()
  }
}

impl MappedBase {
  /// Reads the header and the agent table of a base; everything else is checked on first use.
  /// `label` names the file in errors.
  pub fn open(bytes: Arc<BaseBytes>, analyzer_id: u32, label: String) -> std::result::Result<MappedBase, FormatError> {
    let b: &[u8] = &bytes;
    if b.len() < BASE_HEADER_BYTES || &b[..8] != BASE_MAGIC {
      // A version 1 header is 40 bytes: say which version it is when its own checks hold.
      if b.len() >= 40 && &b[..8] == BASE_MAGIC && u32_at(b, 8) != FORMAT_VERSION {
        return Err(FormatError::Version(u32_at(b, 8)));
      }
      return damaged("not an index base file");
    }
    let version = u32_at(b, 8);
    if version != FORMAT_VERSION {
      // Another version's header has another size: its version is all we read.
      return Err(FormatError::Version(version));
    }
    if crc32c::crc32c(&b[..BASE_HEADER_BYTES - 4]) != u32_at(b, BASE_HEADER_BYTES - 4) {
      return damaged("header checksum mismatch");
    }
    let found_analyzer = u32_at(b, 12);
    if found_analyzer != analyzer_id {
      return Err(FormatError::Analyzer(found_analyzer));
    }
    let generation = u64_at(b, 16);
    let docs = u32_at(b, 24);
    let terms = u32_at(b, 28);
    let mut sections = [Section { start: 0, end: 0, crc: 0 }; SECTIONS];
    let mut at = BASE_HEADER_BYTES as u64;
    for (i, s) in sections.iter_mut().enumerate() {
      let entry = TABLE_AT + i * 24;
      let (offset, len) = (u64_at(b, entry), u64_at(b, entry + 8));
      if offset != at || len > b.len() as u64 - at {
        return damaged("section table does not tile the file");
      }
      *s = Section { start: offset as usize, end: (offset + len) as usize, crc: u32_at(b, entry + 16) };
      at += len;
    }
    if at != b.len() as u64 {
      return damaged("section table does not tile the file");
    }
    if (sections[ROWS].end - sections[ROWS].start) as u64 != u64::from(docs) * ROW_BYTES as u64 {
      return damaged("row table size does not match the number of memories");
    }
    let agents_bytes = &b[sections[AGENTS].start..sections[AGENTS].end];
    if crc32c::crc32c(agents_bytes) != sections[AGENTS].crc {
      return damaged("agents checksum mismatch");
    }
    let parsed: AgentsSection = postcard::from_bytes(agents_bytes).or_else(|_| damaged("agents do not decode"))?;
    let mut stats = vec![ScopeStats { docs: parsed.unassigned.0, len: parsed.unassigned.1 }];
    let mut agents = Vec::with_capacity(parsed.agents.len());
    let mut seen = rustc_hash::FxHashSet::default();
    let mut total = u64::from(parsed.unassigned.0);
    for (name, n, len) in parsed.agents {
      if name.is_empty() || name.len() > MAX_ID_BYTES || n == 0 || !seen.insert(name.clone()) {
        return damaged("bad agent table");
      }
      total += u64::from(n);
      agents.push(Arc::from(name));
      stats.push(ScopeStats { docs: n, len });
    }
    if total != u64::from(docs) {
      return damaged("agent counts do not add up to the memories");
    }
    drop(seen);
    Ok(MappedBase {
      bytes,
      label,
      analyzer_id,
      generation,
      docs,
      terms,
      sections,
      agents,
      stats,
      checked: Default::default(),
      id_map: OnceLock::new(),
      vocab: OnceLock::new(),
    })
  }

  fn corrupt(&self, reason: impl Into<String>) -> LoaError {
    LoaError::StateCorrupt { path: self.label.clone(), reason: FormatError::Damaged(reason.into()).to_string() }
  }

  /// A whole section, its checksum checked on first use.
  fn section(&self, i: usize) -> Result<&[u8]> {
    let s = self.sections[i];
    let bytes = &self.bytes[s.start..s.end];
    if *self.checked[i].get_or_init(|| crc32c::crc32c(bytes) == s.crc) {
      Ok(bytes)
    } else {
      Err(self.corrupt(format!("{} checksum mismatch", NAMES[i])))
    }
  }

  fn map(&self, i: usize) -> Result<&fst::Map<Part>> {
    let cell = if i == ID_MAP { &self.id_map } else { &self.vocab };
    if cell.get().is_none() {
      // Checked first: `fst` is only ever handed bytes this process wrote.
      self.section(i)?;
      let s = self.sections[i];
      let _ = cell.set(fst::Map::new(Part { bytes: self.bytes.clone(), start: s.start, end: s.end }).ok());
    }
    cell.get().and_then(Option::as_ref).ok_or_else(|| self.corrupt(format!("{} does not decode", NAMES[i])))
  }

  /// The row of memory `ord` (< `docs`).
  pub(super) fn row(&self, ord: u32) -> Result<Row> {
    self.rows()?.get(ord)
  }

  /// The row table, checked: for reading many rows in a loop (a query reads one per posting).
  pub(super) fn rows(&self) -> Result<Rows<'_>> {
    Ok(Rows { bytes: self.section(ROWS)?, agents: self.agents.len(), base: self })
  }

  /// The id of memory `ord` (< `docs`).
  pub(super) fn id(&self, ord: u32) -> Result<&str> {
    let rows = self.section(ROWS)?;
    let ids = self.section(IDS)?;
    let end_of = |o: usize| u32_at(rows, o * ROW_BYTES + 16) as usize;
    let o = ord as usize;
    if (o + 1) * ROW_BYTES > rows.len() {
      return Err(self.corrupt("row out of range"));
    }
    let (start, end) = (if o == 0 { 0 } else { end_of(o - 1) }, end_of(o));
    if start >= end || end > ids.len() || end - start > MAX_ID_BYTES {
      return Err(self.corrupt("bad id offsets"));
    }
    std::str::from_utf8(&ids[start..end]).map_err(|_| self.corrupt("id is not UTF-8"))
  }

  /// The ordinal of the memory with this id.
  pub(super) fn find(&self, id: &str) -> Result<Option<u32>> {
    match self.map(ID_MAP)?.get(id) {
      None => Ok(None),
      Some(ord) if ord < u64::from(self.docs) => Ok(Some(ord as u32)),
      Some(_) => Err(self.corrupt("id map out of range")),
    }
  }

  /// Whether the vocabulary holds `term`.
  pub(super) fn has_term(&self, term: &str) -> Result<bool> {
    Ok(self.map(VOCAB)?.contains_key(term))
  }

  /// The posting list of `term`, checked, into `into` (whose buffers a query reuses); false
  /// when the vocabulary does not hold it.
  pub(super) fn postings_into(&self, term: &str, into: &mut Postings) -> Result<bool> {
    match self.map(VOCAB)?.get(term) {
      None => Ok(false),
      Some(offset) => self.postings_at(offset, into).map(|()| true),
    }
  }

  fn postings_at(&self, offset: u64, into: &mut Postings) -> Result<()> {
    let s = self.sections[POSTINGS];
    let all = &self.bytes[s.start..s.end];
    let at = usize::try_from(offset).ok().filter(|&a| a <= all.len().saturating_sub(8));
    let at = at.ok_or_else(|| self.corrupt("posting offset out of range"))?;
    let len = u32_at(all, at + 4) as usize;
    let body = all.get(at + 8..(at + 8).saturating_add(len)).ok_or_else(|| self.corrupt("posting list truncated"))?;
    if crc32c::crc32c_append(crc32c::crc32c(&all[at + 4..at + 8]), body) != u32_at(all, at) {
      return Err(self.corrupt("posting list checksum mismatch"));
    }
    // postcard's encoding of (gaps, counts), read by a loop of our own: this runs for every
    // posting a query reads, where serde's generic path costs several times more.
    self.decode_postings(body, into).ok_or_else(|| self.corrupt("bad posting list"))
  }

  /// Decodes and checks a posting list's body into `into` (cleared first): ordinals strictly
  /// increasing and in range, term counts positive, every byte used. Allocations are bounded by
  /// the body's length.
  fn decode_postings(&self, body: &[u8], into: &mut Postings) -> Option<()> {
    let mut at = 0usize;
    let n = varint(body, &mut at)? as usize;
    if n == 0 || n > body.len() - at {
      return None;
    }
    let Postings { docs, tfs } = into;
    docs.clear();
    tfs.clear();
    docs.reserve(n);
    tfs.reserve(n);
    let mut ord = 0u64;
    for i in 0..n {
      let gap = varint(body, &mut at)?;
      if i > 0 && gap == 0 {
        return None;
      }
      ord += u64::from(gap);
      if ord >= u64::from(self.docs) {
        return None;
      }
      docs.push(ord as u32);
    }
    if varint(body, &mut at)? as usize != n {
      return None;
    }
    for _ in 0..n {
      let tf = varint(body, &mut at)?;
      if tf == 0 {
        return None;
      }
      tfs.push(tf);
    }
    (at == body.len()).then_some(())
  }

  /// Each section's name and size in bytes, for reports.
  pub fn section_sizes(&self) -> Vec<(&'static str, usize)> {
    self.sections.iter().zip(NAMES).map(|(s, name)| (name, s.end - s.start)).collect()
  }

  /// Reads and checks everything: every section's checksum, every row, id and posting list.
  /// Linear in the file's size.
  pub(super) fn verify(&self) -> Result<()> {
    for ord in 0..self.docs {
      self.row(ord)?;
      if self.find(self.id(ord)?)? != Some(ord) {
        return Err(self.corrupt("id map does not match the ids"));
      }
    }
    let lists = self.all_postings()?;
    if lists.len() != self.terms as usize {
      return Err(self.corrupt("vocabulary size does not match the header"));
    }
    Ok(())
  }

  /// Every term with its posting list, in byte order: for rewriting the index.
  pub(super) fn all_postings(&self) -> Result<Vec<(Arc<str>, Postings)>> {
    use fst::Streamer;
    let map = self.map(VOCAB)?;
    let mut out = Vec::with_capacity(map.len());
    let mut stream = map.stream();
    while let Some((term, offset)) = stream.next() {
      let term = std::str::from_utf8(term).map_err(|_| self.corrupt("term is not UTF-8"))?;
      if term.is_empty() || term.len() > MAX_TERM_BYTES {
        return Err(self.corrupt("bad term"));
      }
      let mut list = Postings::default();
      self.postings_at(offset, &mut list)?;
      out.push((Arc::from(term), list));
    }
    Ok(out)
  }
}

// ---- writing ----

/// The tables of a compacted in-memory index, borrowed for writing it out.
pub(super) struct BaseParts<'a> {
  pub agents: &'a [Arc<str>],
  pub stats: &'a [ScopeStats],
  pub slots: &'a [Slot],
  pub terms: &'a [Arc<str>],
  pub postings: &'a [Postings],
}

/// The base file of `parts` (a compacted index: no dead slots).
pub(super) fn encode(parts: &BaseParts<'_>, analyzer_id: u32, generation: u64) -> Vec<u8> {
  let BaseParts { agents, stats, slots, terms, postings } = *parts;
  let agents_section = AgentsSection {
    unassigned: (stats[0].docs, stats[0].len),
    agents: agents.iter().zip(&stats[1..]).map(|(a, s)| (a.to_string(), s.docs, s.len)).collect(),
  };
  let agents_bytes = postcard::to_allocvec(&agents_section).expect("serialising to memory cannot fail");

  let mut rows = Vec::with_capacity(slots.len() * ROW_BYTES);
  let mut ids = Vec::new();
  for s in slots {
    ids.extend_from_slice(s.id.as_bytes());
    rows.extend_from_slice(&s.timestamp_ms.to_le_bytes());
    rows.extend_from_slice(&s.len.to_le_bytes());
    rows.extend_from_slice(&s.agent.to_le_bytes());
    rows.extend_from_slice(&(ids.len() as u32).to_le_bytes());
    rows.extend_from_slice(&[kind_code(s.kind), u8::from(s.instruction) | s.mood.code() << 1]);
    rows.extend_from_slice(&s.session_tag.to_le_bytes());
  }

  let mut by_id: Vec<(&str, u32)> = slots.iter().enumerate().map(|(i, s)| (&*s.id, i as u32)).collect();
  by_id.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
  let mut id_map = fst::MapBuilder::memory();
  for (id, ord) in by_id {
    id_map.insert(id, u64::from(ord)).expect("ids are distinct and sorted");
  }
  let id_map = id_map.into_inner().expect("writing to memory cannot fail");

  let mut order: Vec<usize> = (0..terms.len()).collect();
  order.sort_unstable_by(|&a, &b| terms[a].as_bytes().cmp(terms[b].as_bytes()));
  let mut vocab = fst::MapBuilder::memory();
  let mut lists = Vec::new();
  for t in order {
    vocab.insert(&*terms[t], lists.len() as u64).expect("terms are distinct and sorted");
    let p = &postings[t];
    let mut prev = 0u32;
    let gaps: Vec<u32> = p
      .docs
      .iter()
      .map(|&d| {
        let gap = d - prev;
        prev = d;
        gap
      })
      .collect();
    let body = postcard::to_allocvec(&(gaps, &p.tfs)).expect("serialising to memory cannot fail");
    let len = (body.len() as u32).to_le_bytes();
    lists.extend_from_slice(&crc32c::crc32c_append(crc32c::crc32c(&len), &body).to_le_bytes());
    lists.extend_from_slice(&len);
    lists.extend_from_slice(&body);
  }
  let vocab = vocab.into_inner().expect("writing to memory cannot fail");

  let sections: [&[u8]; SECTIONS] = [&agents_bytes, &rows, &ids, &id_map, &vocab, &lists];
  let total: usize = BASE_HEADER_BYTES + sections.iter().map(|s| s.len()).sum::<usize>();
  let mut out = Vec::with_capacity(total);
  out.extend_from_slice(BASE_MAGIC);
  out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
  out.extend_from_slice(&analyzer_id.to_le_bytes());
  out.extend_from_slice(&generation.to_le_bytes());
  out.extend_from_slice(&(slots.len() as u32).to_le_bytes());
  out.extend_from_slice(&(terms.len() as u32).to_le_bytes());
  let mut at = BASE_HEADER_BYTES as u64;
  for (i, s) in sections.iter().enumerate() {
    out.extend_from_slice(&at.to_le_bytes());
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    // Posting lists carry their own checksums, checked one by one as queries read them.
    let crc = if i == POSTINGS { 0 } else { crc32c::crc32c(s) };
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    at += s.len() as u64;
  }
  let header_crc = crc32c::crc32c(&out);
  out.extend_from_slice(&header_crc.to_le_bytes());
  debug_assert_eq!(out.len(), BASE_HEADER_BYTES);
  for s in sections {
    out.extend_from_slice(s);
  }
  out
}

/// Recomputes every checksum of a base except the two maps' (which `fst` must only ever read
/// as written): for fuzzers and tests that reach the decoders past the checksums.
pub fn reseal(bytes: &mut [u8]) {
  if bytes.len() < BASE_HEADER_BYTES {
    return;
  }
  let mut sections = Vec::new();
  for i in 0..SECTIONS {
    let entry = TABLE_AT + i * 24;
    let (offset, len) = (u64_at(bytes, entry) as usize, u64_at(bytes, entry + 8) as usize);
    sections.push((entry, offset, offset.saturating_add(len)));
  }
  for (i, &(entry, start, end)) in sections.iter().enumerate() {
    if start > end || end > bytes.len() || i == ID_MAP || i == VOCAB {
      continue;
    }
    if i == POSTINGS {
      let mut at = start;
      while at + 8 <= end {
        let len = u32_at(bytes, at + 4) as usize;
        let Some(stop) = (at + 8).checked_add(len).filter(|&s| s <= end) else { break };
        let crc = crc32c::crc32c_append(crc32c::crc32c(&bytes[at + 4..at + 8]), &bytes[at + 8..stop]);
        bytes[at..at + 4].copy_from_slice(&crc.to_le_bytes());
        at = stop;
      }
      continue;
    }
    let crc = crc32c::crc32c(&bytes[start..end]);
    bytes[entry + 16..entry + 20].copy_from_slice(&crc.to_le_bytes());
  }
  let crc = crc32c::crc32c(&bytes[..BASE_HEADER_BYTES - 4]);
  bytes[BASE_HEADER_BYTES - 4..BASE_HEADER_BYTES].copy_from_slice(&crc.to_le_bytes());
}
