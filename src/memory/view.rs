//! Reading a workspace's memory without opening a session: no lock taken, nothing written,
//! nothing created. Records still only in the WAL are read too, so a capture is visible before
//! it is consolidated.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::context::ContextConfig;
use crate::error::{LoaError, Result};
use crate::fsutil::{OpenMode, StateDir};
use crate::timestamp::{format_ms, parse_rfc3339_ms};
use crate::wal;
use crate::wal::reader::{list_sessions, read_session};

use super::layout::Layout;
use super::learnings;
use super::markdown::{self, MarkdownRead, ReadOptions};
use super::notes;
use super::types::{
  record_name_hash, ContextRequest, Learning, MemoryKind, MemoryRecord, SessionEntry, SessionSource, StoreOptions,
  MAX_NOTES_BYTES, MAX_RECORD_BYTES, MEMORY_DIR, RECORD_VERSION,
};

/// Read access to a workspace's memory: what `MemoryStore` reads through, and what tools such
/// as `loa context` use directly.
#[derive(Debug, Clone)]
pub struct MemoryView {
  layout: Layout,
  /// The defaults of [`build_context`](Self::build_context).
  context: ContextConfig,
  /// The memory records of each session's segments as last read, with what identified the
  /// segments then: a context built before every prompt reads a session's log again only when
  /// it changed.
  segments: Arc<Mutex<HashMap<String, SessionCache>>>,
}

/// What identifies a session's segments (name, inode, size, mtime in ns), and the memory records
/// they held, with their seqs.
type SessionCache = (Vec<(String, u64, u64, i128)>, Arc<Vec<(u64, MemoryRecord)>>);

impl MemoryView {
  /// The memory of the workspace `options` names (the session id is not used). Creates
  /// nothing.
  pub fn open(options: &StoreOptions) -> Result<MemoryView> {
    Ok(MemoryView { layout: Layout::resolve(options)?, context: options.context.clone(), segments: Default::default() })
  }

  pub(super) fn from_layout(layout: Layout, context: ContextConfig) -> MemoryView {
    MemoryView { layout, context, segments: Default::default() }
  }

  /// Memory records of all sessions: consolidated ones, plus those still only in the WAL,
  /// split into those not expired at `now` and those expired (never shown, whatever
  /// consolidation has removed yet). Unreadable record files are skipped here (consolidation
  /// reports them).
  fn all_records(&self, now: i64) -> Result<(Vec<MemoryRecord>, Vec<MemoryRecord>)> {
    let mut records = match self.layout.memory_dir()? {
      Some(dir) => read_records(&dir, false)?,
      None => Vec::new(),
    };
    let mut ids: HashSet<String> = records.iter().map(|r| r.id.clone()).collect();
    // The WAL directory must be inside the workspace too (checked, never created here).
    if self.layout.dir(&self.layout.wal, false)?.is_some() {
      for record in pending_records(&self.layout.wal_path())? {
        if ids.insert(record.id.clone()) {
          records.push(record);
        }
      }
    }
    Ok(records.into_iter().partition(|r| !r.is_expired(now)))
  }

  /// NOTES.md, if it exists and can be read as a regular UTF-8 file of at most
  /// [`MAX_NOTES_BYTES`]; anything else is no notes here (consolidation reports it).
  fn notes_text(&self) -> Option<String> {
    let dir = self.layout.dir(&self.layout.notes.dir, false).ok()??;
    let bytes = dir.read(&self.layout.notes.name, MAX_NOTES_BYTES).ok()??;
    String::from_utf8(bytes).ok()
  }

  /// What the last consolidation summarised, when it reflects the WAL's state (no run was cut
  /// short since) and holds no memory expired at `now` (one that expired since that run: its
  /// session's counts and newest memories are then read from the records), with the memory
  /// records the WAL holds beyond it (those expired at `now` left out). `None`: read
  /// everything.
  fn summarised(&self, now: i64) -> Result<Option<Summarised>> {
    let Some(grimoire) = self.layout.dir(&self.layout.grimoire, false)? else { return Ok(None) };
    let Some(summary) = super::consolidate::load_summary(&grimoire) else { return Ok(None) };
    if summary.expiring.iter().any(|(at, _)| *at <= now) {
      return Ok(None);
    }
    let Some(wal_dir) = self.layout.dir(&self.layout.wal, false)? else { return Ok(None) };
    let marks = wal::state::watermarks(&wal_dir)?;
    if marks != summary.watermarks {
      return Ok(None);
    }
    let memory_dir = grimoire.subdir(MEMORY_DIR)?;
    let mut pending = Vec::new();
    let mut ids = HashSet::new();
    let sessions = match wal_dir.subdir(wal::reader::SESSIONS_DIR)? {
      Some(dir) => wal::reader::session_ids(&dir)?.into_iter().map(|id| (id, dir.try_clone())).collect(),
      None => Vec::new(),
    };
    for (session, sessions_dir) in sessions {
      let since = marks.get(&session).copied().unwrap_or(0);
      let records = self.session_records(&sessions_dir?, &session)?;
      for (_, parsed) in records.iter().filter(|(seq, _)| *seq > since) {
        let parsed = parsed.clone();
        // A record file of the same memory is what consolidated reads show.
        let stored = match &memory_dir {
          Some(dir) => dir.kind_of(format!("{}.json", parsed.id))?.is_some(),
          None => false,
        };
        if !stored && ids.insert(parsed.id.clone()) && !parsed.is_expired(now) {
          pending.push(parsed);
        }
      }
    }
    Ok(Some(Summarised { summary, pending, memory_dir }))
  }

  /// The memory records of a session's log (with their seqs), from the cache when its segments
  /// are the ones read last time.
  fn session_records(&self, sessions: &StateDir, session: &str) -> Result<Arc<Vec<(u64, MemoryRecord)>>> {
    use std::os::unix::fs::MetadataExt;
    let Some(sdir) = wal::reader::validate_session_id(session).and_then(|_| sessions.subdir(session)).ok().flatten()
    else {
      return Ok(Arc::default());
    };
    let mut key = Vec::new();
    for segment in wal::reader::segments_in(&sdir)? {
      let Ok(Some(file)) = sdir.open_file_if_exists(&segment.name, OpenMode::READ) else { continue };
      let Ok(meta) = file.file().metadata() else { continue };
      let mtime = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
      key.push((segment.name.clone(), meta.ino(), meta.size(), mtime));
    }
    let mut cache = self.segments.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((known, records)) = cache.get(session) {
      if *known == key {
        return Ok(records.clone());
      }
    }
    let read = wal::reader::read_session_dir(&sdir, session)?;
    let records: Arc<Vec<(u64, MemoryRecord)>> =
      Arc::new(read.records.iter().filter_map(|r| memory_record_of(r).map(|m| (r.seq, m))).collect());
    cache.insert(session.to_string(), (key, records.clone()));
    Ok(records)
  }

  /// Sessions newest first (by their newest memory), from the memory records (consolidated or
  /// not) and, for sessions only it still lists, from NOTES.md. Reads the consolidation summary
  /// and the records it shows, not every record, when the summary is current.
  /// Memories expired by now are left out (from the moment they expire, whether or not a
  /// consolidation has removed them yet).
  pub fn recent_sessions(&self, limit: usize) -> Result<Vec<SessionEntry>> {
    let now = crate::timestamp::now_ms();
    if let Some(s) = self.summarised(now)? {
      return Ok(self.recent_from_summary(s, limit));
    }
    let (records, expired) = self.all_records(now)?;
    let mut sessions: Vec<(i64, SessionEntry)> = aggregate_sessions(&records)
      .into_iter()
      .map(|s| {
        let last = s.last;
        (last, s.into_entry())
      })
      .collect();
    // A session whose memories have all expired is not listed, not even from NOTES.md (whose
    // line for it may still show an expired memory until the next consolidation).
    let listed: HashSet<String> =
      sessions.iter().map(|(_, s)| s.session_id.clone()).chain(expired.into_iter().map(|r| r.session_id)).collect();
    sessions.extend(self.notes_sessions(&|id| listed.contains(id)));
    sessions.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.session_id.cmp(&b.1.session_id)));
    Ok(sessions.into_iter().take(limit).map(|(_, s)| s).collect())
  }

  /// NOTES.md's session lines (sessions it lists that `known` does not name), as entries.
  fn notes_sessions(&self, known: &dyn Fn(&str) -> bool) -> Vec<(i64, SessionEntry)> {
    let mut out = Vec::new();
    let Some(text) = self.notes_text() else { return out };
    let Some(body) = notes::region_body(&text, notes::SESSIONS) else { return out };
    let mut seen = HashSet::new();
    for line in notes::parse_session_lines(&body) {
      // A session NOTES.md lists twice counts once, as its first line.
      if known(&line.session_id) || !seen.insert(line.session_id.clone()) {
        continue;
      }
      let last = parse_rfc3339_ms(&line.last_active_at, "lastActiveAt").unwrap_or(0);
      out.push((
        last,
        SessionEntry {
          session_id: line.session_id,
          started_at: line.started_at,
          last_active_at: line.last_active_at,
          memories: line.memories,
          kinds: BTreeMap::new(),
          latest: if line.latest.is_empty() { Vec::new() } else { vec![line.latest] },
          source: SessionSource::Notes,
        },
      ));
    }
    out
  }

  /// [`recent_sessions`](Self::recent_sessions) from the summary: the same entries, reading
  /// only the records they show.
  fn recent_from_summary(&self, s: Summarised, limit: usize) -> Vec<SessionEntry> {
    let mut summary = s.summary;
    for r in &s.pending {
      summary.add(r);
    }
    let mut order: Vec<(i64, &String)> = summary.sessions.iter().map(|(id, x)| (x.last, id)).collect();
    let notes = self.notes_sessions(&|id| summary.sessions.contains_key(id));
    order.extend(notes.iter().map(|(last, e)| (*last, &e.session_id)));
    order.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    let pending: BTreeMap<&str, &MemoryRecord> = s.pending.iter().map(|r| (r.id.as_str(), r)).collect();
    let content = |id: &str| -> Option<String> {
      match pending.get(id) {
        Some(r) => Some(r.content.clone()),
        None => s.memory_dir.as_ref().and_then(|d| super::consolidate::read_one(d, id)).map(|r| r.content),
      }
    };
    let mut out = Vec::new();
    for (_, id) in order.into_iter().take(limit) {
      match summary.sessions.get(id) {
        Some(x) => out.push(SessionEntry {
          session_id: id.clone(),
          started_at: format_ms(x.first),
          last_active_at: format_ms(x.last),
          memories: x.count,
          kinds: x.kinds.clone(),
          latest: x.recent.iter().filter_map(|(_, rid)| content(rid)).collect(),
          source: SessionSource::Memory,
        }),
        None => {
          if let Some((_, e)) = notes.iter().find(|(_, e)| &e.session_id == id) {
            out.push(e.clone());
          }
        }
      }
    }
    out
  }

  /// Active learnings (no `status`, or `"active"`), by importance, then recency, then id: from
  /// learnings.json plus learnings still only in the WAL. A corrupt learnings.json fails with
  /// `E_STATE_CORRUPT` and is left in place (consolidation moves it aside); one that is not a
  /// regular file fails with `E_NOT_REGULAR_FILE`.
  pub fn active_learnings(&self, limit: usize) -> Result<Vec<Learning>> {
    let now = crate::timestamp::now_ms();
    // Learnings not in the store yet: only those beyond the last consolidation when its
    // summary is current (and then none it holds has expired), else every record; expired
    // ones are left out, and learnings.json's entries of expired memories skipped.
    let (records, expired) = match self.summarised(now)? {
      Some(s) => (s.pending, HashSet::new()),
      None => {
        let (records, expired) = self.all_records(now)?;
        (records, expired.into_iter().map(|r| r.id).collect::<HashSet<String>>())
      }
    };
    let name = &self.layout.learnings.name;
    let dir = self.layout.dir(&self.layout.learnings.dir, false)?;
    let mut store = match &dir {
      Some(dir) => learnings::Learnings::open(dir, name, false)?,
      None => None,
    };
    let mut out: Vec<(i64, Learning)> = Vec::new();
    let mut ids = HashSet::new();
    if let (Some(store), Some(dir)) = (store.as_mut(), &dir) {
      for learning in store.active(dir, name, limit.saturating_add(expired.len()))? {
        if expired.contains(&learning.id) {
          continue;
        }
        ids.insert(learning.id.clone());
        out.push((parse_rfc3339_ms(&learning.created_at, "createdAt").unwrap_or(0), learning));
      }
    }
    for record in records {
      if !record.is_learning() || ids.contains(&record.id) {
        continue;
      }
      let stored = match (store.as_mut(), &dir) {
        (Some(store), Some(dir)) => store.contains(dir, name, &record.id)?,
        _ => false,
      };
      if !stored && ids.insert(record.id.clone()) {
        out.push((record.ts_ms(), record.as_learning()));
      }
    }
    out.sort_by(|a, b| {
      b.1.importance.total_cmp(&a.1.importance).then_with(|| b.0.cmp(&a.0)).then_with(|| a.1.id.cmp(&b.1.id))
    });
    Ok(out.into_iter().take(limit).map(|(_, l)| l).collect())
  }

  /// The context for the next prompt: the `context.recentSessions` newest sessions and the
  /// `context.activeLearnings` top learnings, packed by [`crate::context::build_context`] within
  /// the configured budget (`options` overrides what it sets; its defaults are the workspace's).
  pub fn build_context(&self, options: &ContextRequest) -> Result<crate::context::BuiltContext> {
    self.build_context_explained(options).map(|(built, _)| built)
  }

  /// [`build_context`](Self::build_context), with what each of its items stands for.
  pub fn build_context_explained(
    &self,
    options: &ContextRequest,
  ) -> Result<(crate::context::BuiltContext, ContextSources)> {
    if let Some(agent) = &options.agent_id {
      super::search::check_agent_id(agent)?;
    }
    if let Some(query) = &options.query {
      return self.query_context(&super::search::Searcher::for_view(&self.layout)?, query, options);
    }
    let settings = &self.context;
    let mut packing = crate::context::ContextOptions::from_config(settings);
    if let Some(budget) = options.budget {
      packing.budget = budget;
    }
    if let Some(share) = options.session_share {
      packing.session_share = share;
    }
    if let Some(encoding) = options.encoding {
      packing.encoding = encoding;
    }
    if let Some(margin) = options.safety_margin {
      packing.safety_margin = margin;
    }
    let sessions_limit = options.sessions.unwrap_or(settings.recent_sessions) as usize;
    let learnings_limit = options.learnings.unwrap_or(settings.active_learnings) as usize;
    let active = self.active_learnings(learnings_limit)?;
    // A memory shown as a learning is not repeated in its session's summary.
    let shown: HashSet<&str> = active.iter().map(|l| l.content.as_str()).collect();
    let mut sources = ContextSources::default();
    let sessions: Vec<crate::context::Session> = self
      .recent_sessions(sessions_limit)?
      .into_iter()
      .filter_map(|s| {
        let latest: Vec<&str> = s.latest.iter().map(String::as_str).filter(|c| !shown.contains(c)).collect();
        if latest.is_empty() {
          return None;
        }
        sources.sessions.push(s.session_id.clone());
        Some(crate::context::Session {
          timestamp: s.last_active_at.clone(),
          summary: latest.join("\n"),
          importance: None,
        })
      })
      .collect();
    let learnings: Vec<crate::context::Learning> = active
      .into_iter()
      .map(|l| {
        sources.learnings.push(ContextLearningSource { id: l.id.clone(), explain: None });
        crate::context::Learning {
          trigger: learning_trigger(&l),
          solution: l.content,
          importance: Some(l.importance),
          last_used: Some(l.created_at),
        }
      })
      .collect();
    Ok((crate::context::build_context(&sessions, &learnings, &packing)?, sources))
  }

  /// See [`super::inventory`].
  pub fn inventory(&self, options: &super::inventory::InventoryOptions) -> Result<super::inventory::Inventory> {
    super::inventory::inventory(&self.layout, options)
  }
}

impl MemoryView {
  /// The memory `id`, if it exists, is not expired, and (with `agent_id`) is visible to that
  /// agent (its own, those `memory.sharing` shares with it, and the workspace's).
  pub fn get(&self, id: &str, agent_id: Option<&str>) -> Result<Option<MemoryRecord>> {
    super::search::get_visible(&self.layout, id, agent_id, crate::timestamp::now_ms())
  }

  /// Lines of a file of the Markdown view of the memories (see [`super::markdown`]): `None`
  /// when the path is of the view's shape but names no memory the reader may see (gone,
  /// expired, another agent's); `E_PATH_OUTSIDE_ROOT` or `E_INVALID_ARGUMENT` for any other
  /// path, before anything is read.
  pub fn read_markdown(&self, path: &str, options: &ReadOptions) -> Result<Option<MarkdownRead>> {
    let named = markdown::parse_path(path)?;
    options.validate()?;
    if let Some(agent) = &options.agent_id {
      super::search::check_agent_id(agent)?;
    }
    let Some(record) = self.get(&named.id, options.agent_id.as_deref())? else { return Ok(None) };
    if !markdown::names(&named, &record) {
      return Ok(None);
    }
    Ok(Some(markdown::slice(&markdown::render(&record), options)))
  }

  /// The packing options `options` asks for, over the workspace's `context` settings.
  fn packing(&self, options: &ContextRequest) -> crate::context::ContextOptions {
    let mut packing = crate::context::ContextOptions::from_config(&self.context);
    if let Some(budget) = options.budget {
      packing.budget = budget;
    }
    if let Some(encoding) = options.encoding {
      packing.encoding = encoding;
    }
    if let Some(margin) = options.safety_margin {
      packing.safety_margin = margin;
    }
    packing
  }

  /// The context for a query (see [`super::search::query_context`]).
  pub(super) fn query_context(
    &self,
    searcher: &super::search::Searcher,
    query: &str,
    options: &ContextRequest,
  ) -> Result<(crate::context::BuiltContext, ContextSources)> {
    super::search::query_context(&self.layout, searcher, query, options, self.packing(options))
  }
}

/// What the items of a built context stand for, by the `index` its items carry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContextSources {
  /// Items of kind `session`: the session's id.
  pub sessions: Vec<String>,
  /// Items of kind `learning`: without a query, the learning (its id in learnings.json); with a
  /// query, the memory hit (its memory id) and why it was found.
  pub learnings: Vec<ContextLearningSource>,
}

/// One learning-kind item of a built context (see [`ContextSources`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ContextLearningSource {
  pub id: String,
  /// The search's explanation, for a query's context.
  pub explain: Option<crate::search::Explain>,
}

/// What a learning is about, for the `trigger: solution` line: its tags, else its kind.
fn learning_trigger(learning: &Learning) -> String {
  if learning.tags.is_empty() {
    learning.kind.as_str().to_string()
  } else {
    learning.tags.join(", ")
  }
}

/// The consolidation summary and what the WAL holds beyond it.
struct Summarised {
  summary: super::consolidate::Summary,
  /// Memory records after the consolidation's watermarks (no record file yet).
  pending: Vec<MemoryRecord>,
  memory_dir: Option<StateDir>,
}

/// The memory record a WAL record writes, when consolidation would apply it (see
/// [`super::admit`]): a forged record is no memory before consolidation either.
fn memory_record_of(record: &wal::format::Record) -> Option<MemoryRecord> {
  super::admit::memory_of(record)
}

/// Memory records still in the WAL (any session, consolidated or not), read without locking or
/// changing anything; damaged parts of a log are skipped (`loa wal verify` reports them), and
/// so are records consolidation would refuse.
pub(super) fn pending_records(wal_dir: &std::path::Path) -> Result<Vec<MemoryRecord>> {
  let mut out = Vec::new();
  for session in list_sessions(wal_dir)? {
    out.extend(read_session(wal_dir, &session)?.records.iter().filter_map(memory_record_of));
  }
  Ok(out)
}

/// Every record file `memory/<id>.json`, sorted by (timestamp, id). Each is read as a regular
/// file of at most [`MAX_RECORD_BYTES`]. With `strict` (consolidation), a file that does not
/// parse, whose id is not its name or that is too large is corrupt: it is moved aside and the
/// call fails with `E_STATE_CORRUPT`; a non-regular file named like a record fails with
/// `E_NOT_REGULAR_FILE`, and a record of another version fails with `E_STATE_CORRUPT`, left in
/// place. Without `strict` (reads), all of those are skipped.
pub(super) fn read_records(dir: &StateDir, strict: bool) -> Result<Vec<MemoryRecord>> {
  let mut records = Vec::new();
  for entry in dir.entries()? {
    let Some(hash) = entry.name_str().and_then(record_name_hash) else { continue };
    let opened = dir.open_file_if_exists(&entry.name, OpenMode::READ);
    let file = match opened {
      Ok(Some(file)) => file,
      Ok(None) => continue, // removed since listing
      Err(e) if strict => return Err(e),
      Err(_) => continue,
    };
    let parsed = match file.read_to_end_bounded(MAX_RECORD_BYTES) {
      Ok(bytes) => serde_json::from_slice::<MemoryRecord>(&bytes).map_err(|e| e.to_string()),
      Err(LoaError::TooLarge { size, limit, .. }) => Err(format!("{size} bytes, over the limit of {limit}")),
      Err(e) if strict => return Err(e),
      Err(_) => continue,
    };
    let parsed = parsed.and_then(|r| if r.id == hash { Ok(r) } else { Err("its id is not its file name".into()) });
    if let Ok(record) = &parsed {
      if record.version != RECORD_VERSION {
        // Written by another version of the library: left where it is (not moved aside as
        // damage), and consolidation stops rather than derive state from what it cannot read.
        if strict {
          return Err(LoaError::StateCorrupt {
            path: dir.child_path(&entry.name).display().to_string(),
            reason: format!(
              "record version {} is not version {RECORD_VERSION}, the one this library reads",
              record.version
            ),
          });
        }
        continue;
      }
    }
    match parsed {
      Ok(record) => records.push(record),
      Err(reason) if strict => return Err(learnings::corrupt(dir, &entry.name, reason, true)),
      Err(_) => {}
    }
  }
  records.sort_by(MemoryRecord::capture_order);
  Ok(records)
}

pub(super) struct SessionAgg<'a> {
  pub id: String,
  pub first: i64,
  pub last: i64,
  pub kinds: BTreeMap<MemoryKind, u64>,
  /// Newest first.
  pub records: Vec<&'a MemoryRecord>,
}

impl SessionAgg<'_> {
  fn into_entry(self) -> SessionEntry {
    SessionEntry {
      session_id: self.id,
      started_at: format_ms(self.first),
      last_active_at: format_ms(self.last),
      memories: self.records.len() as u64,
      kinds: self.kinds,
      latest: self.records.iter().take(3).map(|r| r.content.clone()).collect(),
      source: SessionSource::Memory,
    }
  }
}

/// Sessions of `records`, newest first (ties by session id).
pub(super) fn aggregate_sessions(records: &[MemoryRecord]) -> Vec<SessionAgg<'_>> {
  let mut by_id: BTreeMap<&str, SessionAgg> = BTreeMap::new();
  let mut sorted: Vec<&MemoryRecord> = records.iter().collect();
  sorted.sort_by(|a, b| b.ts_ms().cmp(&a.ts_ms()).then_with(|| a.id.cmp(&b.id)));
  for r in sorted {
    let ts = r.ts_ms();
    let agg = by_id.entry(&r.session_id).or_insert_with(|| SessionAgg {
      id: r.session_id.clone(),
      first: ts,
      last: ts,
      kinds: BTreeMap::new(),
      records: Vec::new(),
    });
    agg.first = agg.first.min(ts);
    agg.last = agg.last.max(ts);
    *agg.kinds.entry(r.kind).or_default() += 1;
    agg.records.push(r);
  }
  let mut sessions: Vec<SessionAgg> = by_id.into_values().collect();
  sessions.sort_by(|a, b| b.last.cmp(&a.last).then_with(|| a.id.cmp(&b.id)));
  sessions
}
