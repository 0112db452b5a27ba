//! The index on disk: a base file and an append-only log in one directory, shared by every
//! process that opens the directory. The base is mapped read-only and read in place (see
//! [`super::base`]): opening reads its header and agent table only, whatever its size. The log
//! is read whole at open and kept in memory as a [`MemoryIndex`] delta over the base.
//!
//! - **Add** (at capture) appends one checksummed record to the log and fsyncs it: its cost
//!   depends on the memory's length, not on how many memories are indexed. An add that would
//!   grow the log past [`COMPACT_LOG_BYTES`] first folds it into a new base, so what an open
//!   reads stays bounded.
//! - **Remove** (forgetting) and **compact** read the whole index into memory, rewrite the base
//!   from it (the removed memory's terms, and every term only it held, are gone from it), then
//!   replace the log with an empty one; both atomically, before the call returns, and map the
//!   new base. The old files are replaced by rename (never changed in place: a mapping of the
//!   old base stays valid), and temp files of dead writers are removed, so no file in the
//!   directory holds the removed words.
//! - **Rebuild** writes both files from the source memories, whatever state the directory is
//!   in: the index is derived state, rebuilt when missing or damaged, never repaired by guess.
//!
//! Writers take `search-index.lock` (`flock`, waiting up to the lock timeout, then
//! `E_WAL_LOCKED`). Readers take no lock: before each query a process checks the log (identity,
//! generation, size) and reads only what was appended since, or maps the new base and reads the
//! new log when a writer replaced the files. The base is only ever replaced whole, and the log only appended to
//! under the lock or replaced whole, so a reader sees either an old complete state or a new one.
//! A log record that is not whole at the end of the file (a writer killed mid-append, or still
//! writing) is not read; the next writer cuts it off. Damage anywhere else, a checksum that does
//! not match, a base from another format version or analyser: `E_STATE_CORRUPT`, never results
//! from a half-read index (see [`SearchIndex::open_or_rebuild`]).
//!
//! Every file is reached through [`StateDir`]: never through a symlink, regular files only, reads
//! bounded ([`MAX_BASE_BYTES`], [`MAX_LOG_BYTES`]).

use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, SystemTime};

use crate::error::{LoaError, Result};
use crate::fsutil::{OpenMode, StateDir, StateFile};
use crate::lock::lock_in;

use super::analyze::AnalyzerConfig;
use super::base::{BaseBytes, MappedBase, BASE_HEADER_BYTES};
use super::format::{
  decode_log_header, encode_add, encode_base, encode_log_header, next_record, FormatError, Next, LOG_HEADER_BYTES,
  MAX_LOG_RECORD_BYTES,
};
use super::index::{AddOutcome, AnalyzedDoc, Document, MemoryIndex};
use super::query::{SearchOptions, SearchResults};

pub const BASE_FILE: &str = "search-index.base";
pub const LOG_FILE: &str = "search-index.log";
pub const LOCK_FILE: &str = "search-index.lock";
/// What the index was last found in step with (see [`SearchIndex::update_sources_stamp`]).
pub const SOURCES_FILE: &str = "search-index.sources";
/// Largest sources stamp read (a stamp names each WAL session and its segments).
pub const MAX_SOURCES_BYTES: u64 = 16 << 20;
/// Largest base file mapped (`E_TOO_LARGE` beyond). 100,000 memories take about 11 MiB.
pub const MAX_BASE_BYTES: u64 = 1 << 30;
/// Largest log. An add that would grow it past this compacts first.
pub const MAX_LOG_BYTES: u64 = 1 << 30;
/// A log this large is folded into the base: at the next add that would grow it past this,
/// and by [`SearchIndex::compaction_due`]. Opening reads the whole log (the base is mapped, not
/// read), so this bounds the time to open, whatever the number of memories.
pub const COMPACT_LOG_BYTES: u64 = 1 << 20;

/// The memory the log may cost once decoded, at least: a log whose memories hold more (in
/// [`MemoryIndex`]'s count) than this or the index's size on disk (base and log), whichever is
/// larger, is folded into the base at the next add. A log of short memories decodes to about
/// twice its size, but one of memories full of distinct words to 20 times it (each new term is
/// a map entry, a string and a posting list, against its few bytes in the log), so bounding the
/// log's bytes alone does not bound what an open holds. With it, what a process holds for the
/// index is at most the base's pages (at most its size) plus its size on disk (or this): at
/// most twice its size on disk plus this, whatever the memories hold. Folds stay
/// amortised: the base grows by what each fold brings, so they come at geometric intervals.
pub const DELTA_HEAP_BYTES: usize = 1 << 20;

fn delta_budget(base_bytes: u64, log: Option<LogPos>) -> usize {
  let log = log.filter(|l| !l.stale).map_or(0, |l| l.end);
  DELTA_HEAP_BYTES.max(usize::try_from(base_bytes + log).unwrap_or(usize::MAX))
}

/// How an index directory is opened.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexOptions {
  pub analyzer: AnalyzerConfig,
  /// fsync the log after each add. Default true.
  pub sync: bool,
  /// How long a writer waits for another's lock. Default 10 s.
  pub lock_timeout: Duration,
}

impl Default for IndexOptions {
  fn default() -> Self {
    IndexOptions { analyzer: AnalyzerConfig::default(), sync: true, lock_timeout: Duration::from_secs(10) }
  }
}

/// How [`SearchIndex::open_or_rebuild`] found the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
  /// Read from its files.
  Loaded,
  /// The files were missing: built from the source memories.
  RebuiltMissing,
  /// The files were damaged or of another format or analyser (the reason says which, never
  /// with file content): rebuilt from the source memories.
  RebuiltDamaged(String),
}

/// Sizes and counts, for status reports and benchmarks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexStatus {
  pub documents: usize,
  pub terms: usize,
  pub generation: u64,
  pub base_bytes: u64,
  /// Bytes of whole records in the log, header included.
  pub log_bytes: u64,
  pub log_records: u64,
  pub analyzer_id: u32,
  /// Approximate memory held by the index in this process.
  pub heap_bytes: usize,
}

/// Where the index's files stand: the base's generation and how far its log goes. An index at
/// a position with the same generation and log file and a log at least as long holds
/// everything the index held at the first (the log is only appended to under one generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexPosition {
  pub generation: u64,
  /// Device and inode of the log (0, 0: no usable log).
  pub log_dev: u64,
  pub log_ino: u64,
  /// End of the log's whole records.
  pub log_end: u64,
}

impl IndexPosition {
  /// True when the index at `self` holds everything it held at `earlier`.
  pub fn follows(&self, earlier: &IndexPosition) -> bool {
    self.generation == earlier.generation
      && self.log_dev == earlier.log_dev
      && self.log_ino == earlier.log_ino
      && self.log_end >= earlier.log_end
  }
}

/// A stamp of what the index's sources looked like when the index was known to hold exactly
/// them, kept beside the index (see [`SearchIndex::update_sources_stamp`]).
#[derive(Debug, Clone)]
pub struct SourcesStamp {
  /// What the caller recorded.
  pub sources: serde_json::Value,
  /// The stamp file's ctime, in nanoseconds since the epoch: changes to the sources stamped
  /// with a time at or after it may have gone unseen (git's racy-index rule).
  pub written_ns: i128,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct StampFile {
  version: u32,
  index: IndexPosition,
  sources: serde_json::Value,
}

/// The log as this process last read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LogPos {
  dev: u64,
  ino: u64,
  /// The header's generation (0: no whole header; `u64::MAX`: a damaged one).
  generation: u64,
  /// End of the last whole record read (the header's end when none).
  end: u64,
  /// The file's size when last read: bytes past `end` were a torn tail then.
  seen: u64,
  /// Older than the base (a rewrite was cut short between its renames) or cut short while
  /// being created: everything in it is in the base, so it is not read; the next writer
  /// replaces it.
  stale: bool,
}

impl LogPos {
  fn same_file(&self, p: &Probe) -> bool {
    self.dev == p.dev && self.ino == p.ino && self.generation == p.generation
  }
}

struct State {
  index: MemoryIndex,
  generation: u64,
  /// `None`: no log file.
  log: Option<LogPos>,
  base_bytes: u64,
  log_records: u64,
  /// A write failed after memory was changed: reload from the files before anything else.
  reload: bool,
}

/// What a look at the log file shows, without reading its records.
#[derive(Debug, Clone, Copy)]
struct Probe {
  dev: u64,
  ino: u64,
  size: u64,
  /// As in [`LogPos::generation`].
  generation: u64,
}

/// A search index kept in a directory (see the module docs). Safe to share between threads.
pub struct SearchIndex {
  dir: StateDir,
  options: IndexOptions,
  state: RwLock<State>,
  writer: Mutex<()>,
}

impl std::fmt::Debug for SearchIndex {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_struct("SearchIndex").field("dir", &self.dir.path()).finish()
  }
}

fn corrupt(dir: &StateDir, name: &str, e: FormatError) -> LoaError {
  LoaError::StateCorrupt { path: dir.child_path(name).display().to_string(), reason: e.to_string() }
}

fn next_generation(prev: u64) -> u64 {
  let micros = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64);
  micros.max(prev + 1)
}

impl SearchIndex {
  /// Opens the index kept in `dir`, creating an empty one when there is none. A damaged index,
  /// or one written by another format version or analyser, is `E_STATE_CORRUPT` (see
  /// [`open_or_rebuild`](Self::open_or_rebuild), which rebuilds it instead).
  pub fn open(dir: StateDir, options: IndexOptions) -> Result<SearchIndex> {
    if let Some(state) = load(&dir, &options)? {
      return Ok(SearchIndex::with_state(dir, options, state));
    }
    let index = SearchIndex::with_state(dir, options.clone(), empty_state(options.analyzer));
    index.write(|index, st| {
      // Another process may have created it meanwhile; `sync_state` has loaded it then.
      if st.base_bytes == 0 {
        index.rewrite(st)?;
      }
      Ok(())
    })?;
    Ok(index)
  }

  /// Opens the index kept in `dir`; when it is missing or cannot be used (damaged, another
  /// format version or analyser), builds it from `docs()` (the source memories) instead.
  pub fn open_or_rebuild<I>(
    dir: StateDir,
    options: IndexOptions,
    docs: impl FnOnce() -> Result<I>,
  ) -> Result<(SearchIndex, Opened)>
  where
    I: IntoIterator<Item = Document>,
  {
    let opened = match load(&dir, &options) {
      Ok(Some(state)) => return Ok((SearchIndex::with_state(dir, options, state), Opened::Loaded)),
      Ok(None) => Opened::RebuiltMissing,
      Err(LoaError::StateCorrupt { reason, .. }) => Opened::RebuiltDamaged(reason),
      Err(e) => return Err(e),
    };
    let index = SearchIndex::with_state(dir, options.clone(), empty_state(options.analyzer));
    index.rebuild(docs()?)?;
    Ok((index, opened))
  }

  fn with_state(dir: StateDir, options: IndexOptions, state: State) -> SearchIndex {
    SearchIndex { dir, options, state: RwLock::new(state), writer: Mutex::new(()) }
  }

  /// The directory the index lives in.
  pub fn dir(&self) -> &StateDir {
    &self.dir
  }

  fn read_state(&self) -> RwLockReadGuard<'_, State> {
    self.state.read().unwrap_or_else(|p| p.into_inner())
  }

  fn write_state(&self) -> RwLockWriteGuard<'_, State> {
    self.state.write().unwrap_or_else(|p| p.into_inner())
  }

  /// Runs a query against the index as it is on disk now (see [`super::query`]).
  pub fn search(&self, query: &str, options: &SearchOptions) -> Result<SearchResults> {
    // Bad arguments are answered before any file is looked at.
    super::query::check_query(query)?;
    options.validate()?;
    self.refresh()?;
    self.read_state().index.search(query, options)
  }

  /// Whether a memory with this id is indexed (as on disk now).
  pub fn contains(&self, id: &str) -> Result<bool> {
    self.refresh()?;
    self.read_state().index.contains(id)
  }

  /// Reads and checks the whole index (every checksum, every posting list): `E_STATE_CORRUPT`
  /// when any of it is damaged. Opening and searching check only what they read; this is for
  /// tools and tests that want to know about the rest. Linear in the index's size.
  pub fn verify(&self) -> Result<()> {
    self.refresh()?;
    self.read_state().index.verify()
  }

  /// Of `ids`, those not indexed, and how many memories are indexed, from one look at the files
  /// (for reconciling the index with its source: one lookup per id in the id map, no copy of
  /// every indexed id).
  pub fn not_indexed<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> Result<(Vec<&'a str>, usize)> {
    self.refresh()?;
    let st = self.read_state();
    let mut missing = Vec::new();
    for id in ids {
      if st.index.find(id)?.is_none() {
        missing.push(id);
      }
    }
    Ok((missing, st.index.len()))
  }

  /// The ids of every indexed memory (as on disk now), oldest first: for reconciling the index
  /// with its source after a crash.
  pub fn ids(&self) -> Result<Vec<String>> {
    self.refresh()?;
    Ok(self.read_state().index.ids()?.into_iter().map(str::to_string).collect())
  }

  /// Sizes and counts (as on disk now).
  pub fn status(&self) -> Result<IndexStatus> {
    self.refresh()?;
    let st = self.read_state();
    Ok(IndexStatus {
      documents: st.index.len(),
      terms: st.index.term_count()?,
      generation: st.generation,
      base_bytes: st.base_bytes,
      log_bytes: st.log.filter(|l| !l.stale).map_or(0, |l| l.end),
      log_records: st.log_records,
      analyzer_id: self.options.analyzer.id(),
      heap_bytes: st.index.heap_bytes(),
    })
  }

  /// Where the index's files stand now.
  pub fn position(&self) -> Result<IndexPosition> {
    self.refresh()?;
    Ok(position_of(&self.read_state()))
  }

  /// The sources stamp, when the index still holds everything it held when the stamp was
  /// written (same base generation and log, the log no shorter; a rewrite of the base carries a
  /// stamp over). `None`: no stamp, a stamp that does not parse, or an index that lost or
  /// replaced what it held since (a log removed or replaced, a base of another generation).
  pub fn sources_stamp(&self) -> Result<Option<SourcesStamp>> {
    self.refresh()?;
    let st = self.read_state();
    if st.reload {
      return Ok(None);
    }
    self.valid_stamp(&st)
  }

  /// The stamp, when it is valid for `st`. A stamp that cannot be read as one (not a regular
  /// file, too large, unreadable, another version) is no stamp: it only ever saves work.
  fn valid_stamp(&self, st: &State) -> Result<Option<SourcesStamp>> {
    let read = || -> Result<Option<(StampFile, i128)>> {
      let Some(file) = self.dir.open_file_if_exists(SOURCES_FILE, OpenMode::READ)? else { return Ok(None) };
      let stat = rustix::fs::fstat(file.file()).map_err(|e| LoaError::io("stat", file.path(), e.into()))?;
      let bytes = file.read_to_end_bounded(MAX_SOURCES_BYTES)?;
      let written_ns = i128::from(stat.st_ctime) * 1_000_000_000 + i128::from(stat.st_ctime_nsec);
      Ok(serde_json::from_slice::<StampFile>(&bytes).ok().map(|stamp| (stamp, written_ns)))
    };
    let Ok(Some((stamp, written_ns))) = read() else { return Ok(None) };
    if stamp.version != 1 || !position_of(st).follows(&stamp.index) {
      return Ok(None);
    }
    Ok(Some(SourcesStamp { sources: stamp.sources, written_ns }))
  }

  /// Under the index's lock, replaces the sources stamp by what `update` returns (given the
  /// current one, when still valid: see [`sources_stamp`](Self::sources_stamp)), recorded at the
  /// index's position now; `None` leaves it as it is. The caller vouches that the index holds
  /// exactly the sources it describes.
  pub fn update_sources_stamp(
    &self,
    update: impl FnOnce(Option<SourcesStamp>) -> Option<serde_json::Value>,
  ) -> Result<()> {
    self.write(|index, st| {
      let current = if st.reload { None } else { index.valid_stamp(st)? };
      if let Some(sources) = update(current) {
        index.write_stamp(position_of(st), sources)?;
      }
      Ok(())
    })
  }

  /// Removes the sources stamp: the next reader reconciles the index with its sources.
  pub fn forget_sources_stamp(&self) -> Result<()> {
    self.dir.remove_file(SOURCES_FILE).map(drop)
  }

  fn write_stamp(&self, index: IndexPosition, sources: serde_json::Value) -> Result<()> {
    let bytes = serde_json::to_vec(&StampFile { version: 1, index, sources })
      .map_err(|e| LoaError::Internal(format!("sources stamp: {e}")))?;
    self.dir.write_atomic(SOURCES_FILE, &bytes, None)
  }

  /// True when the log has grown to half the size (or its decoded memories to half the
  /// memory) at which an add folds it into the base, or replaced memories left garbage: for a
  /// consolidation to fold it, so that a capture seldom has to.
  pub fn compaction_due(&self) -> Result<bool> {
    self.refresh()?;
    let st = self.read_state();
    let log = st.log.filter(|l| !l.stale).map_or(0, |l| l.end);
    Ok(
      log >= COMPACT_LOG_BYTES / 2
        || st.index.added_heap >= delta_budget(st.base_bytes, st.log) / 2
        || st.index.has_garbage(),
    )
  }

  /// Adds one memory (replacing an indexed memory with the same id): one log record, fsynced
  /// unless [`IndexOptions::sync`] is off.
  pub fn add(&self, doc: &Document) -> Result<AddOutcome> {
    let analyzed = AnalyzedDoc::new(&Analyzer::new(self.options.analyzer), doc)?;
    let record = encode_add(&analyzed);
    if record.len() - 8 > MAX_LOG_RECORD_BYTES {
      return Err(LoaError::TooLarge {
        what: "search index record".into(),
        size: record.len() as u64,
        limit: MAX_LOG_RECORD_BYTES as u64,
      });
    }
    self.write(|index, st| {
      // The log stays small enough to read at every open: past the bound, it is folded into
      // the base first (the base is written whole, then mapped again).
      if st.log.is_some_and(|l| l.end > LOG_HEADER_BYTES as u64 && l.end + record.len() as u64 > COMPACT_LOG_BYTES) {
        index.rewrite(st)?;
      }
      let pos = st.log.expect("write() leaves a usable log");
      let file = index.dir.open_file(LOG_FILE, OpenMode::READ_WRITE)?;
      let written =
        file.write_all_at(&record, pos.end).and_then(|()| if index.options.sync { file.sync_data() } else { Ok(()) });
      if let Err(e) = written {
        // Nothing half-written may stay for a reader to stumble on; if even this fails, the
        // torn bytes are cut by the next writer.
        let _ = file.set_len(pos.end);
        return Err(e);
      }
      let outcome = st.index.insert(&analyzed);
      let end = pos.end + record.len() as u64;
      st.log = Some(LogPos { end, seen: end, ..pos });
      st.log_records += 1;
      if outcome.is_err() {
        st.reload = true;
      }
      // So is the log whose decoded form (what every open holds) outgrew the index: memories
      // of many distinct words cost far more in memory than in the log. Folded now, with this
      // add in it, so that no reader holds more. The add is durable either way: a failed fold
      // reloads from the files at the next call.
      if outcome.is_ok() && st.index.added_heap > delta_budget(st.base_bytes, st.log) {
        let _ = index.rewrite(st);
      }
      outcome
    })
  }

  /// Removes the memories with these ids. Before it returns, the base is rewritten without them
  /// and the log emptied, so that no file of the index holds a term of theirs that no other
  /// memory holds (their ids included). Returns how many were indexed; when none was, nothing
  /// is written.
  pub fn remove<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> Result<usize> {
    let ids: Vec<&str> = ids.into_iter().collect();
    self.write(|index, st| {
      let removed = match st.index.remove(ids.iter().copied()) {
        Ok(removed) => removed,
        Err(e) => {
          st.reload = true;
          return Err(e);
        }
      };
      if removed > 0 {
        index.rewrite(st)?;
      }
      Ok(removed)
    })
  }

  /// Rewrites the base from memory and empties the log: what `open` then reads is one file.
  pub fn compact(&self) -> Result<()> {
    self.write(|index, st| index.rewrite(st))
  }

  /// Replaces the whole index with one built from `docs` (the source memories), whatever the
  /// files held (damaged ones included). Documents are analysed before the lock is taken.
  pub fn rebuild(&self, docs: impl IntoIterator<Item = Document>) -> Result<usize> {
    let mut fresh = MemoryIndex::new(self.options.analyzer);
    for doc in docs {
      fresh.add(&doc)?;
    }
    fresh.compact()?;
    let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
    let _lock = lock_in(&self.dir, LOCK_FILE, self.options.lock_timeout, "the search index")?;
    let mut st = self.write_state();
    // Whatever the old files held, the generation must move past what readers may have seen
    // (`next_generation` also never goes below the clock's microseconds).
    let mut generation = st.generation;
    if let Ok(Some(p)) = self.probe() {
      if p.generation != u64::MAX {
        generation = generation.max(p.generation);
      }
    }
    *st = State { index: fresh, generation, ..empty_state(self.options.analyzer) };
    // Built from the memories as they are now, not from what a stamp describes.
    self.dir.remove_file(SOURCES_FILE)?;
    let result = self.rewrite(&mut st);
    if result.is_err() {
      st.reload = true;
    }
    result.map(|()| st.index.len())
  }

  /// Runs a write under both locks, with the state brought up to date with the files and a log
  /// that can be appended to (created or reset when missing or stale, torn tail cut).
  fn write<R>(&self, op: impl FnOnce(&SearchIndex, &mut State) -> Result<R>) -> Result<R> {
    let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
    let _lock = lock_in(&self.dir, LOCK_FILE, self.options.lock_timeout, "the search index")?;
    let mut st = self.write_state();
    self.sync_state(&mut st)?;
    if st.base_bytes > 0 {
      match st.log {
        None => self.reset_log(&mut st)?,
        Some(pos) if pos.stale => self.reset_log(&mut st)?,
        Some(pos) if pos.seen > pos.end => {
          // A torn tail, and no writer can be appending now: cut it.
          let file = self.dir.open_file(LOG_FILE, OpenMode::READ_WRITE)?;
          file.set_len(pos.end)?;
          file.sync_data()?;
          st.log = Some(LogPos { seen: pos.end, ..pos });
        }
        Some(_) => {}
      }
    }
    op(self, &mut st)
  }

  /// Writes a new empty log for the current generation.
  fn reset_log(&self, st: &mut State) -> Result<()> {
    let header = encode_log_header(self.options.analyzer.id(), st.generation);
    self.dir.write_atomic(LOG_FILE, &header, None)?;
    let probe = self.probe()?.ok_or_else(|| LoaError::Internal("search index log vanished".into()))?;
    let end = LOG_HEADER_BYTES as u64;
    st.log = Some(LogPos { dev: probe.dev, ino: probe.ino, generation: st.generation, end, seen: end, stale: false });
    st.log_records = 0;
    Ok(())
  }

  /// Compacts in memory, writes the base of a new generation, then an empty log for it, and
  /// maps the new base (so that what this process holds is paged from the file again).
  fn rewrite(&self, st: &mut State) -> Result<()> {
    // A stamp valid before the rewrite describes the new base as well: it holds the same
    // memories. Read before anything changes; written once the new files are in place.
    let stamp = if st.reload { None } else { self.valid_stamp(st).ok().flatten() };
    if let Err(e) = st.index.materialize().and_then(|()| st.index.compact()) {
      st.reload = true;
      return Err(e);
    }
    let generation = next_generation(st.generation);
    let base = encode_base(&st.index, self.options.analyzer.id(), generation);
    if base.len() as u64 > MAX_BASE_BYTES {
      st.reload = true;
      return Err(LoaError::TooLarge { what: "search index".into(), size: base.len() as u64, limit: MAX_BASE_BYTES });
    }
    if let Err(e) = self.dir.write_atomic(BASE_FILE, &base, None) {
      st.reload = true;
      return Err(e);
    }
    st.generation = generation;
    st.base_bytes = base.len() as u64;
    if let Err(e) = self.reset_log(st) {
      // The old log may hold removed terms: take it away rather than leave it.
      let _ = self.dir.remove_file(LOG_FILE);
      let _ = self.dir.sync();
      st.reload = true;
      return Err(e);
    }
    // Best effort: a stamp left behind names the old generation, so it is not valid any more.
    if let Some(stamp) = stamp {
      let _ = self.write_stamp(position_of(st), stamp.sources);
    }
    self.dir.clean_stale_temps()?;
    // Nobody else writes while we hold the lock: the file is the one just written. Should it
    // not map, the index in memory is the same index.
    if let Ok(Some((base, _))) = map_base(&self.dir, &self.options) {
      if base.generation == generation {
        st.index = MemoryIndex::over_base(self.options.analyzer, Arc::new(base));
      }
    }
    Ok(())
  }

  /// Looks at the log file: identity, size and header.
  fn probe(&self) -> Result<Option<Probe>> {
    let Some(file) = self.dir.open_file_if_exists(LOG_FILE, OpenMode::READ)? else { return Ok(None) };
    probe_file(&file).map(Some)
  }

  /// Brings this process's view up to date with the files, when they changed.
  fn refresh(&self) -> Result<()> {
    let probe = self.probe()?;
    {
      let st = self.read_state();
      if !st.reload && unchanged(&st, probe.as_ref()) {
        return Ok(());
      }
    }
    let mut st = self.write_state();
    self.sync_state(&mut st)
  }

  fn sync_state(&self, st: &mut State) -> Result<()> {
    let probe = self.probe()?;
    if !st.reload && unchanged(st, probe.as_ref()) {
      return Ok(());
    }
    if !st.reload && st.base_bytes > 0 {
      if let (Some(pos), Some(p)) = (st.log, probe) {
        if !pos.stale && pos.same_file(&p) && p.size >= pos.end {
          return self.read_tail(st, pos);
        }
      }
    }
    match load(&self.dir, &self.options)? {
      Some(fresh) => *st = fresh,
      // Created by `open` a moment ago and not written yet, or removed by hand.
      None if st.base_bytes == 0 => {}
      None => {
        return Err(LoaError::StateCorrupt {
          path: self.dir.child_path(BASE_FILE).display().to_string(),
          reason: "the base file is missing; rebuild the index".into(),
        })
      }
    }
    Ok(())
  }

  /// Applies the records appended to the log since `pos`.
  fn read_tail(&self, st: &mut State, pos: LogPos) -> Result<()> {
    let Some(file) = self.dir.open_file_if_exists(LOG_FILE, OpenMode::READ)? else { return Ok(()) };
    let probe = probe_file(&file)?;
    if !pos.same_file(&probe) {
      st.reload = true;
      return self.sync_state(st);
    }
    let (end, records) = read_records(&self.dir, &file, pos.end, probe.size, &mut st.index)?;
    st.log = Some(LogPos { end, seen: probe.size, ..pos });
    st.log_records += records;
    Ok(())
  }
}

use super::analyze::Analyzer;

fn position_of(st: &State) -> IndexPosition {
  match st.log.filter(|l| !l.stale) {
    Some(l) => IndexPosition { generation: st.generation, log_dev: l.dev, log_ino: l.ino, log_end: l.end },
    None => IndexPosition { generation: st.generation, log_dev: 0, log_ino: 0, log_end: 0 },
  }
}

fn empty_state(config: AnalyzerConfig) -> State {
  State { index: MemoryIndex::new(config), generation: 0, log: None, base_bytes: 0, log_records: 0, reload: false }
}

/// True when the log looks as it did when this state last read it.
fn unchanged(st: &State, probe: Option<&Probe>) -> bool {
  match (st.log, probe) {
    (None, None) => st.base_bytes > 0,
    (Some(pos), Some(p)) => pos.same_file(p) && p.size == pos.seen,
    _ => false,
  }
}

fn probe_file(file: &StateFile) -> Result<Probe> {
  let stat = rustix::fs::fstat(file.file()).map_err(|e| LoaError::io("stat", file.path(), e.into()))?;
  let size = stat.st_size as u64;
  if size > MAX_LOG_BYTES {
    return Err(LoaError::TooLarge { what: file.path().display().to_string(), size, limit: MAX_LOG_BYTES });
  }
  let mut head = [0u8; LOG_HEADER_BYTES];
  let n = file.read_at(&mut head, 0)?;
  let generation = match decode_log_header(&head[..n]) {
    Ok(h) => h.map_or(0, |h| h.generation),
    // Damage is reported when the log is read for its records.
    Err(_) => u64::MAX,
  };
  Ok(Probe { dev: stat.st_dev as u64, ino: stat.st_ino as u64, size, generation })
}

/// Opens the base file and maps it (see [`MappedBase`]: only its header and agent table are read
/// now); `None` when there is none. Returns the base and its size.
fn map_base(dir: &StateDir, options: &IndexOptions) -> Result<Option<(MappedBase, u64)>> {
  let Some(file) = dir.open_file_if_exists(BASE_FILE, OpenMode::READ)? else { return Ok(None) };
  let size = file.len()?;
  if size > MAX_BASE_BYTES {
    return Err(LoaError::TooLarge { what: file.path().display().to_string(), size, limit: MAX_BASE_BYTES });
  }
  let bytes = if size < BASE_HEADER_BYTES as u64 {
    BaseBytes::Owned(file.read_to_end_bounded(MAX_BASE_BYTES)?)
  } else {
    // SAFETY: the mapping is read-only and `file` is a regular file reached without following
    // symlinks (`StateDir`). Our writers never change a base in place: they write a new file
    // and rename it over the old one, so the mapped bytes never change under us. Another
    // process truncating the file in place would make reads past its new end fault (SIGBUS);
    // docs/security.md says so.
    match unsafe { memmap2::Mmap::map(file.file()) } {
      Ok(map) => BaseBytes::Mapped(map),
      // A file system that cannot map: read it.
      Err(_) => BaseBytes::Owned(file.read_to_end_bounded(MAX_BASE_BYTES)?),
    }
  };
  let size = bytes.len() as u64;
  let label = dir.child_path(BASE_FILE).display().to_string();
  let base = MappedBase::open(Arc::new(bytes), options.analyzer.id(), label).map_err(|e| corrupt(dir, BASE_FILE, e))?;
  Ok(Some((base, size)))
}

/// Opens the index from its files (the base mapped, the log read and applied); `None` when the
/// base file does not exist.
fn load(dir: &StateDir, options: &IndexOptions) -> Result<Option<State>> {
  let config = options.analyzer;
  // A writer may replace both files between our reads of them: read again (a few times).
  for _ in 0..8 {
    let Some((base, base_bytes)) = map_base(dir, options)? else { return Ok(None) };
    let generation = base.generation;
    let mut st = State {
      index: MemoryIndex::over_base(config, Arc::new(base)),
      generation,
      log: None,
      base_bytes,
      log_records: 0,
      reload: false,
    };
    let Some(file) = dir.open_file_if_exists(LOG_FILE, OpenMode::READ)? else { return Ok(Some(st)) };
    let probe = probe_file(&file)?;
    let mut head = [0u8; LOG_HEADER_BYTES];
    let n = file.read_at(&mut head, 0)?;
    let stale =
      LogPos { dev: probe.dev, ino: probe.ino, generation: probe.generation, end: 0, seen: probe.size, stale: true };
    let Some(log_header) = decode_log_header(&head[..n]).map_err(|e| corrupt(dir, LOG_FILE, e))? else {
      // Cut short while being created: it holds nothing.
      st.log = Some(stale);
      return Ok(Some(st));
    };
    if log_header.generation > generation {
      // The base was replaced after we read it.
      continue;
    }
    if log_header.generation < generation {
      // Left over from a rewrite cut short between its two renames: everything in it is in the
      // base already.
      st.log = Some(stale);
      return Ok(Some(st));
    }
    if log_header.analyzer_id != config.id() {
      return Err(corrupt(dir, LOG_FILE, FormatError::Analyzer(log_header.analyzer_id)));
    }
    let (end, records) = read_records(dir, &file, LOG_HEADER_BYTES as u64, probe.size, &mut st.index)?;
    st.log = Some(LogPos { end, stale: false, ..stale });
    st.log_records = records;
    return Ok(Some(st));
  }
  Err(LoaError::WalLocked { what: "the search index (rewritten while being read)".into(), waited_ms: 0 })
}

/// Applies the log's records between `from` and `size` to `index`; returns where the whole
/// records end and how many there were. A torn tail stops the reading; damage is an error.
fn read_records(dir: &StateDir, file: &StateFile, from: u64, size: u64, index: &mut MemoryIndex) -> Result<(u64, u64)> {
  if size <= from {
    return Ok((from, 0));
  }
  let mut bytes = vec![0u8; (size - from) as usize];
  let n = file.read_at(&mut bytes, from)?;
  bytes.truncate(n);
  let mut at = 0usize;
  let mut records = 0u64;
  // A torn tail (or the end) stops the reading; damage is an error.
  while let Next::Record { doc, size } = next_record(&bytes[at..]).map_err(|e| corrupt(dir, LOG_FILE, e))? {
    index.insert(&doc)?;
    at += size;
    records += 1;
  }
  Ok((from + at as u64, records))
}
