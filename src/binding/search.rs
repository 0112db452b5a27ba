//! The search side of `MemoryStore`: `search`, `get`, `readMarkdown` (the Markdown view of the
//! memories), `forget` and `importMarkdown`, with their sync twins. Kept apart from `memory`
//! (the capture side) because it is a surface of its own, the one OpenClaw's memory slot and
//! `loa search`/`loa forget` stand on. One declaration per JS shape, converted by `convert`: a
//! wrong field is one `E_INVALID_ARGUMENT` naming it; the promise exports reject, never throw.

use std::path::PathBuf;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::{Env, Unknown};
use napi_derive::napi;

use super::convert::{arg, js_from, object, opt_object, path, Binary, Bool, Choice, Given, Int, List, Num, Str, Text};
use super::memory::{seal_request, MemoryStore, MemoryType, SealedGrimoire};
use super::{sync, sync_twin, CoreTask};
use crate::error::{invalid, Result};
use crate::memory as core;

/// What `MemoryStore.search` is asked besides its words.
#[napi(object, object_to_js = false)]
pub struct MemorySearchOptions {
  /// Most hits, 1 to 1000. Default 10.
  #[napi(ts_type = "number")]
  pub limit: Option<Option<Int>>,
  /// Hits scoring below this (0..1) are left out. Default 0.
  #[napi(ts_type = "number")]
  pub min_score: Option<Option<Num>>,
  /// Only memories of these types. Default: every type.
  #[napi(ts_type = "Array<MemoryType>")]
  pub kinds: Option<Option<List<Choice<MemoryType>>>>,
  /// The agent searching: only its memories, those `memory.sharing` shares with it and the
  /// workspace's (captured without `agentId`) are searched, and counted by the ranking; ids
  /// are compared exactly. Default: every memory (tools acting for the whole workspace).
  #[napi(ts_type = "string")]
  pub agent_id: Option<Option<Str>>,
  /// RFC 3339: only memories captured at or after it.
  #[napi(ts_type = "string")]
  pub since: Option<Option<Str>>,
}

impl From<MemorySearchOptions> for core::SearchOptions {
  fn from(o: MemorySearchOptions) -> core::SearchOptions {
    let d = core::SearchOptions::default();
    core::SearchOptions {
      limit: o.limit.given().map_or(d.limit, |n: u64| usize::try_from(n).unwrap_or(usize::MAX)),
      min_score: o.min_score.given().unwrap_or(d.min_score),
      kinds: o.kinds.given(),
      agent_id: o.agent_id.given(),
      since: o.since.given(),
      now_ms: None,
    }
  }
}

/// Why a memory came back: `score = min(1, explain.relevance + explain.context) ×
/// explain.recency × explain.importance × explain.speaker × explain.period × explain.mood`.
#[napi(object, object_from_js = false)]
pub struct SearchExplain {
  /// The BM25 sum over the matched terms.
  pub bm25: f64,
  /// The query's attainable BM25; the same for every hit of a query.
  pub bm25_max: f64,
  /// `bm25 / bm25Max`, in [0, 1).
  pub relevance: f64,
  /// The query terms found in the memory, in query order.
  pub matched: Vec<SearchMatchedTerm>,
  /// What the memories captured right before and after it in its session lent it, when they
  /// matched the query too (a quarter of their BM25, on the scale of `relevance`): the reply to
  /// a question, or the question of an answer, counts for a little. 0 when no neighbour matched.
  pub context: f64,
  /// Ids of the neighbours that lent `context`.
  pub context_from: Vec<String>,
  /// In (0, 1]: `floor + (1 - floor) × 0.5 ^ (age / halfLife)` (`memory.search`).
  pub recency: f64,
  /// Milliseconds since the memory was captured.
  pub age_ms: f64,
  /// In (0, 1]: decisions and instructions 1, learnings and milestones 0.9, errors 0.85,
  /// interactions 0.8.
  pub importance: f64,
  /// 0.6 when the query names one speaker (a capitalised word of it is the label of transcript
  /// lines, `Zoe` for `Zoe: ...`), or points at one with `she` or `he` (a speaker whose first
  /// name is nearly always a woman's or a man's), and this memory is not that speaker's line;
  /// else 1.
  pub speaker: f64,
  /// 0.5 when the query names a month of a year or a year (`in March 2026`, `in 2025`) and this
  /// memory was captured outside it (UTC); else 1.
  pub period: f64,
  /// For an interaction (what someone said): 0.7 when it only asks (it ends with a question
  /// mark and no sentence of it ends with a full stop: "A new job! How does it feel?"), since a
  /// question states nothing; 0.6 when it voices a wish or plan of its speaker ("I want to learn
  /// the violin") and the query asks about none, since what did not happen yet does not answer
  /// what happened. Else 1 (decisions, learnings and instructions say what they say).
  pub mood: f64,
}

/// A query term found in a memory.
#[napi(object, object_from_js = false)]
pub struct SearchMatchedTerm {
  /// The term as indexed (lowercased, stemmed: `deploy`).
  pub term: String,
  /// The query's word it came from (`deployments`).
  pub query_word: String,
  /// Occurrences in the memory.
  pub tf: u32,
  /// Memories visible to the searcher that hold it.
  pub df: u32,
  pub idf: f64,
  /// Its part of `bm25`.
  pub bm25: f64,
  /// Set when the memory does not hold the word but a related one (`moved` for `relocated`,
  /// see docs/search.md): their similarity, 0 to 1; `tf` is then 0.
  pub related: Option<f64>,
  /// Set when the memory does not hold the word but a word of that kind: the memory's word it
  /// came through (`turkish` for the query word `language`, `water polo` for `sport`; an is-a
  /// match from WordNet's noun hierarchy, see docs/search.md); `tf` is then 0.
  pub isa: Option<String>,
}

/// A query term as searched.
#[napi(object, object_from_js = false)]
pub struct SearchQueryTerm {
  pub term: String,
  pub query_word: String,
  /// Memories visible to the searcher that hold it (0: it matches nothing they may see).
  pub df: u32,
  pub idf: f64,
}

/// One memory found.
#[napi(object, object_from_js = false)]
pub struct MemorySearchHit {
  pub id: String,
  /// In [0, 1]; `explain` shows its factors.
  pub score: f64,
  #[napi(js_name = "type")]
  pub memory_type: MemoryType,
  /// Redacted, as stored.
  pub content: String,
  pub session_id: String,
  pub agent_id: Option<String>,
  /// UTC, RFC 3339.
  pub timestamp: String,
  pub tags: Vec<String>,
  pub expires_at: Option<String>,
  /// Its file in the Markdown view of the memories (`memory/shared/<id>.md`,
  /// `memory/agents/<agent>/<id>.md`), what `readMarkdown` reads.
  pub path: String,
  /// The lines of its content in that file (1-based, inclusive).
  pub start_line: u32,
  pub end_line: u32,
  pub explain: SearchExplain,
}

/// The answer to `MemoryStore.search`.
#[napi(object, object_from_js = false)]
pub struct MemorySearchResults {
  /// Best first.
  pub hits: Vec<MemorySearchHit>,
  /// The query's terms as used.
  pub terms: Vec<SearchQueryTerm>,
  /// Distinct query terms beyond the first 64, not used.
  pub dropped_terms: u32,
}

js_from!(|h: core::MemoryHit| MemorySearchHit {
  id,
  score,
  memory_type = h.kind.into(),
  content,
  session_id,
  agent_id,
  timestamp,
  tags,
  expires_at,
  path,
  start_line: u32,
  end_line: u32,
  explain => into,
});

js_from!(|e: crate::search::Explain| SearchExplain {
  bm25,
  bm25_max,
  relevance,
  matched => each,
  context,
  context_from,
  recency,
  age_ms: f64,
  importance,
  speaker,
  period,
  mood,
});

js_from!(|m: crate::search::MatchedTerm| SearchMatchedTerm { term, query_word, tf, df, idf, bm25, related, isa });

js_from!(|t: crate::search::QueryTerm| SearchQueryTerm { term, query_word, df, idf });

js_from!(|r: core::MemorySearchResults| MemorySearchResults { hits => each, terms => each, dropped_terms: u32 });

/// Who reads: `MemoryStore.get`'s options.
#[napi(object, object_to_js = false)]
pub struct MemoryGetOptions {
  /// The agent reading: a memory it may not see reads as `null`. Default: every memory.
  #[napi(ts_type = "string")]
  pub agent_id: Option<Option<Str>>,
}

/// A stored memory, as `MemoryStore.get` returns it.
#[napi(object, object_from_js = false)]
pub struct StoredMemory {
  /// sha256 of the normalised, redacted content.
  pub id: String,
  #[napi(js_name = "type")]
  pub memory_type: MemoryType,
  /// Redacted.
  pub content: String,
  pub session_id: String,
  pub agent_id: Option<String>,
  /// UTC, RFC 3339.
  pub timestamp: String,
  pub confidence: Option<f64>,
  /// Importance from the gates (0..1).
  pub score: f64,
  pub tags: Vec<String>,
  #[napi(ts_type = "Record<string, unknown>")]
  pub metadata: Option<serde_json::Value>,
  pub expires_at: Option<String>,
  /// Its file in the Markdown view (see `MemorySearchHit.path`).
  pub path: String,
  /// What redaction replaced in it before it was stored: kinds and counts, never values.
  pub redactions: Vec<super::inventory::RedactedKind>,
}

impl From<core::MemoryRecord> for StoredMemory {
  fn from(r: core::MemoryRecord) -> StoredMemory {
    let path = core::markdown::path_of(&r);
    let redactions = super::inventory::redaction_counts(&r.redactions);
    StoredMemory {
      id: r.id,
      memory_type: r.kind.into(),
      content: r.content,
      session_id: r.session_id,
      agent_id: r.agent_id,
      timestamp: r.timestamp,
      confidence: r.confidence,
      score: r.score,
      tags: r.tags,
      metadata: r.metadata,
      expires_at: r.expires_at,
      path,
      redactions,
    }
  }
}

/// Which lines of a Markdown view file `MemoryStore.readMarkdown` reads.
#[napi(object, object_to_js = false)]
pub struct MemoryReadOptions {
  /// First line, 1-based. Default 1.
  #[napi(ts_type = "number")]
  pub from: Option<Option<Int>>,
  /// Most lines. Default 2000.
  #[napi(ts_type = "number")]
  pub lines: Option<Option<Int>>,
  /// The agent reading: a memory it may not see reads as `null`. Default: every memory.
  #[napi(ts_type = "string")]
  pub agent_id: Option<Option<Str>>,
}

impl From<MemoryReadOptions> for core::ReadOptions {
  fn from(o: MemoryReadOptions) -> core::ReadOptions {
    core::ReadOptions { from: o.from.given(), lines: o.lines.given(), agent_id: o.agent_id.given() }
  }
}

/// Lines of a file of the Markdown view.
#[napi(object, object_from_js = false)]
pub struct MemoryMarkdownRead {
  pub path: String,
  /// The lines read, joined by `\n`; empty past the end.
  pub text: String,
  /// The first line read.
  pub from: f64,
  /// How many lines were read.
  pub lines: f64,
  pub total_lines: f64,
  /// The line after the last one read, when there are more.
  pub next_from: Option<f64>,
}

js_from!(|r: core::MarkdownRead| MemoryMarkdownRead {
  path,
  text,
  from: f64,
  lines: f64,
  total_lines: f64,
  next_from: Option<f64>,
});

/// Which memories `MemoryStore.forget` removes: `{ id }`, one memory (forgotten at once;
/// `confirm: true` may be given too), or
/// `{ query, confirm }`, those a search finds (the other fields as in `MemorySearchOptions`;
/// without `confirm: true` nothing changes and `matched` says what would go).
#[napi(object, object_to_js = false)]
pub struct MemoryForgetSelector {
  /// The memory's id (the sha256 hex of its content, as `capture` and `search` return it).
  #[napi(ts_type = "string")]
  pub id: Option<Option<Str>>,
  /// Words to search for; every memory the search returns is forgotten.
  #[napi(ts_type = "string")]
  pub query: Option<Option<Text>>,
  /// With `query`: `true` forgets; absent or `false` only reports what would go.
  #[napi(ts_type = "boolean")]
  pub confirm: Option<Option<Bool>>,
  // napi-rs objects cannot embed another object's fields, so the search options (documented on
  // `MemorySearchOptions`) are repeated here and handed to it in `try_from` below.
  /// As `MemorySearchOptions.limit`.
  #[napi(ts_type = "number")]
  pub limit: Option<Option<Int>>,
  /// As `MemorySearchOptions.minScore`.
  #[napi(ts_type = "number")]
  pub min_score: Option<Option<Num>>,
  /// As `MemorySearchOptions.kinds`.
  #[napi(ts_type = "Array<MemoryType>")]
  pub kinds: Option<Option<List<Choice<MemoryType>>>>,
  /// As `MemorySearchOptions.agentId`: an agent forgets only what it can see.
  #[napi(ts_type = "string")]
  pub agent_id: Option<Option<Str>>,
  /// As `MemorySearchOptions.since`.
  #[napi(ts_type = "string")]
  pub since: Option<Option<Str>>,
}

impl TryFrom<MemoryForgetSelector> for core::ForgetSelector {
  type Error = crate::error::LoaError;

  fn try_from(s: MemoryForgetSelector) -> Result<core::ForgetSelector> {
    let search_fields = s.limit.is_some_and(|v| v.is_some())
      || s.min_score.is_some_and(|v| v.is_some())
      || s.kinds.as_ref().is_some_and(|v| v.is_some())
      || s.agent_id.as_ref().is_some_and(|v| v.is_some())
      || s.since.as_ref().is_some_and(|v| v.is_some())
      || s.confirm.flatten().is_some_and(|c| !c.0);
    match (s.id.flatten(), s.query.flatten()) {
      (Some(id), None) if !search_fields => Ok(core::ForgetSelector::Id(id.0)),
      (Some(_), None) => invalid("`selector`: `confirm: false` and the search fields go with `query`, not `id`"),
      (None, Some(query)) => Ok(core::ForgetSelector::Query {
        query: query.0,
        confirm: s.confirm.given().unwrap_or(false),
        options: MemorySearchOptions {
          limit: s.limit,
          min_score: s.min_score,
          kinds: s.kinds,
          agent_id: s.agent_id,
          since: s.since,
        }
        .into(),
      }),
      (Some(_), Some(_)) => invalid("`selector` takes `id` or `query`, not both"),
      (None, None) => invalid("`selector` must have `id` or `query`"),
    }
  }
}

/// Options of `MemoryStore.forget`.
#[napi(object, object_to_js = false)]
pub struct MemoryForgetOptions {
  /// The HMAC key of the workspace's audit log (`audit.dir`), when it is keyed.
  #[napi(ts_type = "Buffer | Uint8Array")]
  pub audit_hmac_key: Option<Option<Binary>>,
}

/// What `MemoryStore.forget` did.
#[napi(object, object_from_js = false)]
pub struct ForgetResult {
  /// False for a query without `confirm`: nothing was changed.
  pub applied: bool,
  /// The memories a query selected (without `confirm`: those that would be forgotten).
  pub matched: Vec<MemorySearchHit>,
  /// Keyed ids of the tombstones recorded (HMAC-SHA256 of the memory id under the workspace's
  /// tombstone key): one per forgotten memory. They confirm nothing without the key.
  pub tombstones: Vec<String>,
  /// WAL records replaced by tombstone records.
  pub wal_records: u32,
  /// Derived files changed (record files, learnings.json, NOTES.md, consolidation state, the
  /// manifest).
  pub files_changed: u32,
  /// The grimoire sealed again after the forget, when `sealWith` was given (and the workspace
  /// is not degraded).
  pub sealed: Option<SealedGrimoire>,
  /// True when the grimoire's signed manifest was rewritten without the forgotten memories and
  /// without its signature (no `sealWith`, or a degraded workspace): recovery finds it unsigned
  /// until the next sealed consolidation (`loa consolidate --seal`).
  pub manifest_unsigned: bool,
  /// Copies the project kept that held a forgotten memory and were removed: recovery's
  /// evidence, leftover, staging and git scratch directories, quarantined `*.corrupt-*` files
  /// (workspace-relative paths).
  pub copies_removed: Vec<String>,
  /// Lines of the dead-letter queue (`.loa/dead-letter.jsonl`) removed.
  pub dead_letters: u32,
  /// Markdown files (memory-core's `MEMORY.md`, `memory/*.md`) a forgotten memory was imported
  /// from: its block removed from each, or reported as possibly still there.
  pub imported: Vec<ForgetImportedFile>,
}

js_from!(|o: core::ForgetOutcome| ForgetResult {
  applied,
  matched => each,
  tombstones,
  wal_records: u32,
  files_changed: u32,
  sealed => each,
  manifest_unsigned,
  copies_removed,
  dead_letters: u32,
  imported => each,
});

/// A Markdown file a forgotten memory was imported from (`importMarkdown`).
#[napi(object, object_from_js = false)]
pub struct ForgetImportedFile {
  /// The file: relative to the workspace when it is inside it, else absolute; only the name
  /// the memory recorded (`MEMORY.md`) when the directory it came from is not known.
  pub file: String,
  /// The first line (1-based) of the memory's block in the file, when it was found there.
  pub line: Option<u32>,
  /// True: the block's lines were removed (the file rewritten atomically, every other byte
  /// kept). False: the memory's text could not be located there (the file changed since the
  /// import), so the file may still hold it.
  pub removed: bool,
}

js_from!(|c: core::ImportedCopy| ForgetImportedFile { file, line: Option<u32>, removed });

/// Options of `MemoryStore.importMarkdown`.
#[napi(object, object_to_js = false)]
pub struct MemoryImportOptions {
  /// The agent the imported memories belong to. Default: the workspace (every agent sees them).
  #[napi(ts_type = "string")]
  pub agent_id: Option<Option<Str>>,
  /// Confidence given to imported blocks, 0..1. Default 0.8.
  #[napi(ts_type = "number")]
  pub confidence: Option<Option<Num>>,
}

impl From<MemoryImportOptions> for core::ImportOptions {
  fn from(o: MemoryImportOptions) -> core::ImportOptions {
    let d = core::ImportOptions::default();
    core::ImportOptions { confidence: o.confidence.given().unwrap_or(d.confidence), agent_id: o.agent_id.given() }
  }
}

/// A file an import did not read, and why.
#[napi(object, object_from_js = false)]
pub struct ImportSkip {
  /// Relative to the directory imported.
  pub file: String,
  /// Not a regular file, too large, not UTF-8.
  pub reason: String,
}

/// What `MemoryStore.importMarkdown` did.
#[napi(object, object_from_js = false)]
pub struct ImportReport {
  /// Files read (`MEMORY.md`, `memory/2026-01-02.md`).
  pub files: Vec<String>,
  pub skipped: Vec<ImportSkip>,
  /// List items and paragraphs found.
  pub blocks: u32,
  /// Stored now.
  pub imported: u32,
  /// Already stored (an earlier import, or captured).
  pub duplicates: u32,
  /// Refused by the quality gates.
  pub rejected: u32,
  /// Refused by the redaction policy.
  pub blocked: u32,
  /// Forgotten earlier: not brought back.
  pub forgotten: u32,
}

js_from!(|r: core::ImportReport| ImportReport {
  files,
  skipped = r.skipped.into_iter().map(|(file, reason)| ImportSkip { file, reason }).collect(),
  blocks: u32,
  imported: u32,
  duplicates: u32,
  rejected: u32,
  blocked: u32,
  forgotten: u32,
});

/// The agent reading, if any.
impl From<MemoryGetOptions> for Option<String> {
  fn from(o: MemoryGetOptions) -> Option<String> {
    o.agent_id.given()
  }
}

impl From<MemoryForgetOptions> for core::ForgetOptions {
  fn from(o: MemoryForgetOptions) -> core::ForgetOptions {
    core::ForgetOptions { audit_hmac_key: o.audit_hmac_key.flatten().map(|k| k.0), seal: None }
  }
}

fn search_args(query: Unknown, options: Option<Unknown>) -> Result<(String, core::SearchOptions)> {
  Ok((arg::<Text>(query, "query")?.0, opt_object::<MemorySearchOptions, _>(options, "options")?))
}

fn forget_args(
  selector: Unknown,
  options: Option<Unknown>,
  seal_with: Option<Unknown>,
) -> Result<(core::ForgetSelector, core::ForgetOptions)> {
  let mut options: core::ForgetOptions = opt_object::<MemoryForgetOptions, _>(options, "options")?;
  options.seal = seal_request(seal_with)?;
  Ok((object::<MemoryForgetSelector, _>(selector, "selector")?, options))
}

fn import_args(dir: Unknown, options: Option<Unknown>) -> Result<(PathBuf, core::ImportOptions)> {
  Ok((path(dir, "dir")?, opt_object::<MemoryImportOptions, _>(options, "options")?))
}

#[napi]
impl MemoryStore {
  /// The memories that best answer `query`, best first, each with why it came back
  /// (`explain`) and where it lies in the Markdown view (`path`, `startLine`, `endLine`).
  /// Ranked by BM25 over the memories' words × recency × importance (see docs/search.md). A
  /// query is literal words (no operators, no regular expressions); an empty one is
  /// `E_INVALID_ARGUMENT`, one over 32 KiB `E_TOO_LARGE`; a query of only stop words or
  /// punctuation finds nothing. Memories past their `expiresAt` are never returned. With
  /// `agentId`, only the memories that agent may see are searched and counted.
  ///
  /// ```ts
  /// const { hits } = await store.search('when do we deploy?', { limit: 5, agentId: 'main' })
  /// ```
  #[napi(
    ts_args_type = "query: string, options?: MemorySearchOptions",
    ts_return_type = "Promise<MemorySearchResults>"
  )]
  pub fn search(&self, env: Env, query: Unknown, options: Option<Unknown>) -> AsyncTask<CoreTask<MemorySearchResults>> {
    let inner = Arc::clone(&self.inner);
    CoreTask::after(
      &env,
      || search_args(query, options),
      move |(query, options)| inner.search(&query, &options).map(Into::into),
    )
  }

  /// Synchronous twin of `search`.
  #[napi(ts_args_type = "query: string, options?: MemorySearchOptions")]
  pub fn search_sync(&self, env: Env, query: Unknown, options: Option<Unknown>) -> napi::Result<MemorySearchResults> {
    sync_twin(&env, || search_args(query, options), |(q, o)| self.inner.search(&q, &o)).map(Into::into)
  }

  /// The memory `id` (consolidated or still in the WAL), or `null` when there is none, it has
  /// expired, or (with `agentId`) that agent may not see it.
  #[napi(ts_args_type = "id: string, options?: MemoryGetOptions")]
  pub fn get(&self, env: Env, id: Unknown, options: Option<Unknown>) -> napi::Result<Option<StoredMemory>> {
    sync(&env, || {
      let agent: Option<String> = opt_object::<MemoryGetOptions, _>(options, "options")?;
      self.inner.get(&arg::<Str>(id, "id")?.0, agent.as_deref())
    })
    .map(|r| r.map(Into::into))
  }

  /// Lines of a file of the Markdown view of the memories, the files search hits point into:
  /// `memory/shared/<id>.md` (the workspace's memories) and `memory/agents/<agent>/<id>.md`.
  /// The view is derived and read-only: each file is rendered from its memory when read.
  /// `null` when the path is of that shape but names no memory the reader may see (gone,
  /// expired, another agent's); any other path is an error before anything is read:
  /// `E_PATH_OUTSIDE_ROOT` (absolute, `..`, `\`), else `E_INVALID_ARGUMENT`.
  #[napi(ts_args_type = "path: string, options?: MemoryReadOptions")]
  pub fn read_markdown(
    &self,
    env: Env,
    path: Unknown,
    options: Option<Unknown>,
  ) -> napi::Result<Option<MemoryMarkdownRead>> {
    sync(&env, || {
      let path = arg::<Str>(path, "path")?.0;
      self.inner.read_markdown(&path, &opt_object::<MemoryReadOptions, _>(options, "options")?)
    })
    .map(|r| r.map(Into::into))
  }

  /// Forgets memories for good: `{ id }`, or `{ query, confirm: true }` (without `confirm`,
  /// nothing changes and `matched` lists what would go). Removes them from the WAL itself
  /// (segments rewritten atomically; if another process holds a session that holds one,
  /// rejects with `E_WAL_LOCKED` having changed nothing), from every derived file and from the
  /// search index, from the copies the project keeps (recovery's evidence and staging
  /// directories, quarantined files, the dead-letter queue) and from the Markdown files they
  /// were imported from, records a keyed tombstone (no content) and appends a `memory.forget`
  /// audit event. The signed manifest listed them: with `sealWith` the grimoire is sealed again
  /// (as `consolidate(sealWith)` does), without it the manifest is rewritten without them and
  /// unsigned (`manifestUnsigned`). After it resolves, no file under the workspace holds the
  /// text, any sentence of it, a word only it held, or its id. See docs/search.md for what it
  /// cannot reach.
  #[napi(
    ts_args_type = "selector: MemoryForgetSelector, options?: MemoryForgetOptions, sealWith?: KeyRing",
    ts_return_type = "Promise<ForgetResult>"
  )]
  pub fn forget(
    &self,
    env: Env,
    selector: Unknown,
    options: Option<Unknown>,
    seal_with: Option<Unknown>,
  ) -> AsyncTask<CoreTask<ForgetResult>> {
    let inner = Arc::clone(&self.inner);
    CoreTask::after(
      &env,
      || forget_args(selector, options, seal_with),
      move |(selector, options)| inner.forget(&selector, &options).map(Into::into),
    )
  }

  /// Synchronous twin of `forget`.
  #[napi(ts_args_type = "selector: MemoryForgetSelector, options?: MemoryForgetOptions, sealWith?: KeyRing")]
  pub fn forget_sync(
    &self,
    env: Env,
    selector: Unknown,
    options: Option<Unknown>,
    seal_with: Option<Unknown>,
  ) -> napi::Result<ForgetResult> {
    sync_twin(&env, || forget_args(selector, options, seal_with), |(s, o)| self.inner.forget(&s, &o)).map(Into::into)
  }

  /// Imports the Markdown memory of the directory `dir` (OpenClaw memory-core's files:
  /// `MEMORY.md` as learnings, `memory/*.md` as interactions dated by their `YYYY-MM-DD.md`
  /// names), cut into list items and paragraphs, each captured as `capture` would: redacted,
  /// gated, content-addressed, so a second import stores nothing new. Memories forgotten
  /// earlier are not brought back. Symlinks and other non-regular files, files over 8 MiB and
  /// files that are not UTF-8 are skipped and reported.
  #[napi(ts_args_type = "dir: string, options?: MemoryImportOptions", ts_return_type = "Promise<ImportReport>")]
  pub fn import_markdown(&self, env: Env, dir: Unknown, options: Option<Unknown>) -> AsyncTask<CoreTask<ImportReport>> {
    let inner = Arc::clone(&self.inner);
    CoreTask::after(
      &env,
      || import_args(dir, options),
      move |(dir, options)| inner.import_markdown(&dir, &options).map(Into::into),
    )
  }

  /// Synchronous twin of `importMarkdown`.
  #[napi(ts_args_type = "dir: string, options?: MemoryImportOptions")]
  pub fn import_markdown_sync(&self, env: Env, dir: Unknown, options: Option<Unknown>) -> napi::Result<ImportReport> {
    sync_twin(&env, || import_args(dir, options), |(d, o)| self.inner.import_markdown(&d, &o)).map(Into::into)
  }
}
