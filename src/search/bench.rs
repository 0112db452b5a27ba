//! Measurements of the search: relevance on the labelled set in `bench/recall/` and speed on
//! 100,000 generated memories (`bench/search-corpus.mjs`). The reports are ignored tests that
//! print numbers and assert nothing about time; run them in release builds:
//!
//! ```text
//! cargo test --release --lib search::bench -- --ignored --nocapture --test-threads=1
//! ```
//!
//! One test is not ignored: the full ranking must keep its recall on the labelled set, so a
//! change to the analyser or the formula that loses answers fails `cargo test`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Deserialize;

use super::*;
use crate::fsutil::StateDir;
use crate::memory::MemoryKind;
use crate::timestamp::parse_rfc3339_ms;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Memory {
  id: String,
  agent_id: Option<String>,
  kind: String,
  instruction: bool,
  timestamp: String,
  text: String,
}

impl Memory {
  fn doc(&self) -> Document {
    Document {
      id: self.id.clone(),
      text: self.text.clone(),
      kind: MemoryKind::parse(&self.kind).expect("a memory kind"),
      agent_id: self.agent_id.clone(),
      timestamp_ms: parse_rfc3339_ms(&self.timestamp, "timestamp").expect("a timestamp"),
      instruction: self.instruction,
      session: None,
    }
  }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LabelledQuery {
  category: String,
  query: String,
  agent_ids: Option<Vec<String>>,
  include_unassigned: bool,
  now: String,
  expected: Vec<String>,
}

fn jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Vec<T> {
  let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
  text.lines().filter(|l| !l.is_empty()).map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
}

fn repo(rel: &str) -> PathBuf {
  Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn recall_set() -> (Vec<Document>, Vec<LabelledQuery>) {
  let memories: Vec<Memory> = jsonl(&repo("bench/recall/memories.jsonl"));
  (memories.iter().map(Memory::doc).collect(), jsonl(&repo("bench/recall/queries.jsonl")))
}

fn build(docs: &[Document], stem: bool) -> MemoryIndex {
  let mut index = MemoryIndex::new(AnalyzerConfig { stem });
  for d in docs {
    index.add(d).expect("indexable");
  }
  index
}

/// recall@5 and MRR@10 per category (and `all`).
fn evaluate(index: &MemoryIndex, queries: &[LabelledQuery], rank: &RankConfig) -> BTreeMap<String, (f64, f64)> {
  let mut sums: BTreeMap<String, (f64, f64, usize)> = BTreeMap::new();
  for q in queries {
    let options = SearchOptions {
      limit: 10,
      agents: q.agent_ids.clone(),
      include_unassigned: q.include_unassigned,
      rank: rank.clone(),
      ..SearchOptions::new(parse_rfc3339_ms(&q.now, "now").expect("a timestamp"))
    };
    let hits = index.search(&q.query, &options).expect("a valid query").hits;
    let at5 = hits.iter().take(5).any(|h| q.expected.contains(&h.id));
    let rr = hits.iter().position(|h| q.expected.contains(&h.id)).map_or(0.0, |p| 1.0 / (p + 1) as f64);
    for key in [q.category.as_str(), "all"] {
      let e = sums.entry(key.to_string()).or_default();
      e.0 += f64::from(u8::from(at5));
      e.1 += rr;
      e.2 += 1;
    }
  }
  sums.into_iter().map(|(k, (r, m, n))| (k, (r / n as f64, m / n as f64))).collect()
}

#[test]
fn the_full_ranking_keeps_its_recall_on_the_labelled_set() {
  let (docs, queries) = recall_set();
  assert!(queries.len() >= 200 && docs.len() >= 2000);
  let scores = evaluate(&build(&docs, true), &queries, &RankConfig::default());
  let (recall, mrr) = scores["all"];
  assert!(recall >= 0.95 && mrr >= 0.8, "recall@5 {recall:.3}, MRR@10 {mrr:.3}");
}

#[test]
#[ignore = "a report: cargo test --release --lib search::bench -- --ignored --nocapture"]
fn recall_report() {
  let (docs, queries) = recall_set();
  let (stemmed, plain) = (build(&docs, true), build(&docs, false));
  let full = RankConfig::default();
  let variants: Vec<(String, &MemoryIndex, RankConfig)> = vec![
    ("full (stemming, recency, importance)".into(), &stemmed, full.clone()),
    ("without stemming".into(), &plain, full.clone()),
    ("without recency".into(), &stemmed, RankConfig { recency: None, ..full.clone() }),
    ("without importance".into(), &stemmed, RankConfig { importance: None, ..full.clone() }),
    ("without is-a words".into(), &stemmed, RankConfig { isa: 0.0, ..full.clone() }),
    ("without related or is-a words".into(), &stemmed, RankConfig { isa: 0.0, related: 0.0, ..full.clone() }),
    ("BM25 + stemming".into(), &stemmed, RankConfig::bm25_only()),
    ("plain BM25 (no stemming, recency, importance)".into(), &plain, RankConfig::bm25_only()),
  ];
  let mut grid = Vec::new();
  for days in [30u64, 90, 365] {
    for floor in [0.5, 0.7, 0.8, 0.9] {
      let recency = Some(Recency { half_life_ms: days * DAY_MS, floor });
      grid.push((
        format!("recency half-life {days} d, floor {floor}"),
        &stemmed,
        RankConfig { recency, ..full.clone() },
      ));
    }
  }
  println!("\n{} memories, {} queries (bench/recall)\n", docs.len(), queries.len());
  for (title, rows) in [("Each factor", variants), ("Recency settings (with stemming and importance)", grid)] {
    let mut table = Vec::new();
    for (name, index, rank) in &rows {
      table.push((name.clone(), evaluate(index, &queries, rank)));
    }
    let categories: Vec<String> = table[0].1.keys().filter(|k| *k != "all").cloned().collect();
    println!("{title}:\n");
    println!("| ranking | recall@5 | MRR@10 |{}", categories.iter().map(|c| format!(" {c} |")).collect::<String>());
    println!("|---|---|---|{}", "---|".repeat(categories.len()));
    for (name, scores) in table {
      let (r, m) = scores["all"];
      let cells: String = categories.iter().map(|c| format!(" {:.2} / {:.2} |", scores[c].0, scores[c].1)).collect();
      println!("| {name} | {r:.3} | {m:.3} |{cells}");
    }
    println!("\n(category cells: recall@5 / MRR@10)\n");
  }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpeedQuery {
  query: String,
  agent_ids: Option<Vec<String>>,
}

/// `NOW` of bench/search-corpus.mjs.
const CORPUS_NOW: i64 = 1_780_272_000_000;

fn corpus_dir() -> PathBuf {
  std::env::var_os("LOA_SEARCH_CORPUS").map_or_else(|| repo("target/search-corpus"), PathBuf::from)
}

fn corpus() -> (Vec<Document>, Vec<SpeedQuery>) {
  let dir = corpus_dir();
  if !dir.join("memories.jsonl").exists() {
    panic!("no corpus in {}: run `node bench/search-corpus.mjs` first", dir.display());
  }
  let memories: Vec<Memory> = jsonl(&dir.join("memories.jsonl"));
  // All in one session, as bench/search.bench.mjs captures them: the worst case for context
  // from neighbours (every memory has two).
  let docs = memories.iter().map(|m| Document { session: Some("bench".into()), ..m.doc() }).collect();
  (docs, jsonl(&dir.join("queries.jsonl")))
}

/// VmRSS, VmHWM, RssAnon (copies: the heap) and RssFile (pages of mapped files: the index's
/// base, and this binary's code) of this process, in KiB.
fn rss_kib() -> (u64, u64, u64, u64) {
  let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
  let field = |name: &str| {
    status
      .lines()
      .find_map(|l| l.strip_prefix(name))
      .and_then(|v| v.split_whitespace().next())
      .and_then(|v| v.parse().ok())
      .unwrap_or(0)
  };
  (field("VmRSS:"), field("VmHWM:"), field("RssAnon:"), field("RssFile:"))
}

fn percentiles(mut micros: Vec<f64>) -> String {
  micros.sort_by(f64::total_cmp);
  let at = |p: f64| micros[((micros.len() - 1) as f64 * p).round() as usize];
  let mean = micros.iter().sum::<f64>() / micros.len() as f64;
  format!(
    "p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms, mean {:.3} ms ({} samples)",
    at(0.5) / 1e3,
    at(0.9) / 1e3,
    at(0.99) / 1e3,
    at(1.0) / 1e3,
    mean / 1e3,
    micros.len()
  )
}

fn options_for(q: &SpeedQuery) -> SearchOptions {
  SearchOptions { agents: q.agent_ids.clone(), ..SearchOptions::new(CORPUS_NOW) }
}

fn open_dir(dir: &Path, sync: bool) -> SearchIndex {
  SearchIndex::open(StateDir::open_root(dir).unwrap(), IndexOptions { sync, ..IndexOptions::default() }).unwrap()
}

/// Child of `speed_report`: opens the index in `LOA_SEARCH_BENCH_DIR` and reports this process's
/// memory before and after, and after running every query once.
#[test]
#[ignore = "child process of speed_report"]
fn speed_child_memory() {
  let Some(dir) = std::env::var_os("LOA_SEARCH_BENCH_DIR") else { return };
  let queries: Vec<SpeedQuery> = jsonl(&corpus_dir().join("queries.jsonl"));
  // Code pages of this (large, debug) binary are resident file pages too: warm the paths first
  // on an empty index, so that the figures below are the index's own.
  let warm = tempfile::tempdir().unwrap();
  open_dir(warm.path(), false).search("warm up", &SearchOptions::new(CORPUS_NOW)).unwrap();
  let before = rss_kib();
  let started = Instant::now();
  let index = open_dir(Path::new(&dir), true);
  let opened = started.elapsed();
  let first = index.search(&queries[0].query, &options_for(&queries[0])).unwrap();
  let first_ms = started.elapsed().as_secs_f64() * 1e3;
  drop(first);
  let again = Instant::now();
  index.search(&queries[0].query, &options_for(&queries[0])).unwrap();
  let again_ms = again.elapsed().as_secs_f64() * 1e3;
  let after_open = rss_kib();
  let mut micros = Vec::with_capacity(queries.len());
  for q in &queries {
    let started = Instant::now();
    index.search(&q.query, &options_for(q)).unwrap();
    micros.push(started.elapsed().as_secs_f64() * 1e6);
  }
  let after = rss_kib();
  println!("LATENCY first pass over the queries after open: {}", percentiles(micros));
  let mib = |a: u64, b: u64| (a as f64 - b as f64) / 1024.0;
  println!(
    "MEMORY open {:.2} ms, open + first search {first_ms:.2} ms (the same search again: {again_ms:.2} ms); RSS +{:.1} MiB after open and one search (anonymous +{:.1}, file +{:.1}), +{:.1} MiB after {} queries (anonymous +{:.1}, file +{:.1}), peak {} KiB; heap estimate {:.1} MiB",
    opened.as_secs_f64() * 1e3,
    mib(after_open.0, before.0),
    mib(after_open.2, before.2),
    mib(after_open.3, before.3),
    mib(after.0, before.0),
    queries.len(),
    mib(after.2, before.2),
    mib(after.3, before.3),
    after.1,
    index.status().unwrap().heap_bytes as f64 / (1 << 20) as f64,
  );
}

#[test]
#[ignore = "a report: node bench/search-corpus.mjs, then cargo test --release --lib search::bench -- --ignored --nocapture"]
fn speed_report() {
  let (docs, queries) = corpus();
  let n = docs.len();
  println!("\ncorpus: {n} memories, {} queries ({})\n", queries.len(), corpus_dir().display());
  let tmp = tempfile::tempdir().unwrap();
  let main = tmp.path().join("main");
  std::fs::create_dir(&main).unwrap();

  let index = open_dir(&main, true);
  let started = Instant::now();
  index.rebuild(docs.iter().cloned()).unwrap();
  println!("rebuild of {n}: {:.2} s", started.elapsed().as_secs_f64());
  let status = index.status().unwrap();
  let text_bytes: usize = docs.iter().map(|d| d.text.len()).sum();
  println!(
    "on disk: base {:.2} MB, log {} B ({} distinct terms; the texts themselves are {:.2} MB)",
    status.base_bytes as f64 / 1e6,
    status.log_bytes,
    status.terms,
    text_bytes as f64 / 1e6
  );

  // Queries: one warm-up pass, then each query timed.
  for q in &queries {
    index.search(&q.query, &options_for(q)).unwrap();
  }
  let mut micros = Vec::new();
  let mut hits = 0usize;
  for q in &queries {
    let started = Instant::now();
    let r = index.search(&q.query, &options_for(q)).unwrap();
    micros.push(started.elapsed().as_secs_f64() * 1e6);
    hits += r.hits.len();
  }
  println!("search (limit 10, default ranking, half the queries scoped to an agent): {}", percentiles(micros));
  println!("  average hits per query: {:.1}", hits as f64 / queries.len() as f64);
  let mut micros = Vec::new();
  for q in &queries {
    let o = SearchOptions { agents: None, ..options_for(q) };
    let started = Instant::now();
    index.search(&q.query, &o).unwrap();
    micros.push(started.elapsed().as_secs_f64() * 1e6);
  }
  println!("search, every query unscoped: {}", percentiles(micros));

  let child = std::process::Command::new(std::env::current_exe().unwrap())
    .args(["--exact", "search::bench::speed_child_memory", "--ignored", "--nocapture", "--test-threads=1"])
    .env("LOA_SEARCH_BENCH_DIR", &main)
    .output()
    .unwrap();
  let out = String::from_utf8_lossy(&child.stdout);
  match out.lines().find_map(|l| l.find("MEMORY ").map(|at| &l[at + 7..])) {
    Some(line) => println!("reopen in a fresh process: {line}"),
    None => println!("the memory child failed: {out}\n{}", String::from_utf8_lossy(&child.stderr)),
  }

  let started = Instant::now();
  assert_eq!(index.remove([docs[n / 2].id.as_str()]).unwrap(), 1);
  println!("remove one memory at {n} (base rewritten): {:.1} ms", started.elapsed().as_secs_f64() * 1e3);
  let started = Instant::now();
  index.compact().unwrap();
  println!("compact at {n}: {:.1} ms", started.elapsed().as_secs_f64() * 1e3);
  drop(index);

  // One more memory at 1k, 10k and all: the cost must not grow with the index.
  let extra: Vec<Document> =
    docs.iter().take(300).map(|d| Document { id: format!("extra-{}", d.id), ..d.clone() }).collect();
  for size in [1_000, 10_000, n] {
    for sync in [true, false] {
      let dir = tmp.path().join(format!("add-{size}-{sync}"));
      std::fs::create_dir(&dir).unwrap();
      let index = open_dir(&dir, sync);
      index.rebuild(docs[..size].iter().cloned()).unwrap();
      let mut micros = Vec::new();
      for d in &extra {
        let started = Instant::now();
        index.add(d).unwrap();
        micros.push(started.elapsed().as_secs_f64() * 1e6);
      }
      println!("add one at {size} ({}): {}", if sync { "fsync" } else { "no fsync" }, percentiles(micros));
    }
  }
}

/// Open time and resident memory of a fresh process at the corpus's size: the index is built in
/// a directory, then opened and queried in a child (`speed_child_memory`), so the figures are
/// those of a process that never held the index before. Debug builds give the shape (constant or
/// linear in the number of memories), release builds the figures.
#[test]
#[ignore = "a report: node bench/search-corpus.mjs N DIR, then LOA_SEARCH_CORPUS=DIR cargo test --lib search::bench::open_report -- --ignored --nocapture"]
fn open_report() {
  let (docs, _) = corpus();
  let tmp = tempfile::tempdir().unwrap();
  // LOA_SEARCH_BENCH_KEEP=DIR: build there and keep it (for a profiler run of the child).
  let dir = std::env::var_os("LOA_SEARCH_BENCH_KEEP").map_or_else(|| tmp.path().join("index"), PathBuf::from);
  std::fs::create_dir_all(&dir).unwrap();
  let index = open_dir(&dir, false);
  index.rebuild(docs.iter().cloned()).unwrap();
  let status = index.status().unwrap();
  drop(index);
  println!("\n{} memories: base {:.2} MiB on disk", docs.len(), status.base_bytes as f64 / (1 << 20) as f64);
  let (_, decoded) =
    format::decode_base(&std::fs::read(dir.join(BASE_FILE)).unwrap(), AnalyzerConfig::default()).unwrap();
  let sizes = decoded.base.as_ref().unwrap().section_sizes();
  println!(
    "sections: {}",
    sizes.iter().map(|(n, b)| format!("{n} {:.1} KiB", *b as f64 / 1024.0)).collect::<Vec<_>>().join(", ")
  );
  for _ in 0..3 {
    let child = std::process::Command::new(std::env::current_exe().unwrap())
      .args(["--exact", "search::bench::speed_child_memory", "--ignored", "--nocapture", "--test-threads=1"])
      .env("LOA_SEARCH_BENCH_DIR", &dir)
      .output()
      .unwrap();
    let out = String::from_utf8_lossy(&child.stdout);
    match out.lines().find_map(|l| l.find("MEMORY ").map(|at| &l[at + 7..])) {
      Some(line) => println!("fresh process: {line}"),
      None => println!("the memory child failed: {out}\n{}", String::from_utf8_lossy(&child.stderr)),
    }
    if let Some(line) = out.lines().find_map(|l| l.find("LATENCY ").map(|at| &l[at + 8..])) {
      println!("  {line}");
    }
  }
}
