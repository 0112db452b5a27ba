use std::fs;
use std::path::{Path, PathBuf};

use super::*;
use crate::fsutil::StateDir;
use crate::memory::MemoryKind;

const NOW: i64 = 1_780_000_000_000;

fn doc(id: &str, text: &str) -> Document {
  Document {
    id: id.into(),
    text: text.into(),
    kind: MemoryKind::Interaction,
    agent_id: None,
    timestamp_ms: NOW - DAY_MS as i64,
    instruction: false,
    session: None,
  }
}

fn with(mut d: Document, f: impl FnOnce(&mut Document)) -> Document {
  f(&mut d);
  d
}

fn opts() -> SearchOptions {
  SearchOptions::new(NOW)
}

fn ids(results: &SearchResults) -> Vec<&str> {
  results.hits.iter().map(|h| h.id.as_str()).collect()
}

fn mem(docs: &[Document]) -> MemoryIndex {
  let mut index = MemoryIndex::new(AnalyzerConfig::default());
  for d in docs {
    index.add(d).unwrap();
  }
  index
}

fn corpus() -> Vec<Document> {
  vec![
    doc("billing", "We deployed the billing service to staging after the migration"),
    doc("pg", "The database is PostgreSQL 16 on the primary cluster"),
    doc("lunch", "Lunch was a sandwich; nothing about services here"),
    doc("tabs", "Formatting uses two spaces, the linter complains about tabs"),
    doc("cjk", "東京都の会議は火曜日に移動しました"),
  ]
}

fn tmp() -> (tempfile::TempDir, PathBuf) {
  let t = tempfile::tempdir().unwrap();
  let p = t.path().join("index");
  fs::create_dir(&p).unwrap();
  (t, p)
}

fn open(dir: &Path) -> SearchIndex {
  SearchIndex::open(StateDir::open_root(dir).unwrap(), IndexOptions::default()).unwrap()
}

/// [`open`] without fsync, for tests that add thousands of memories.
fn open_unsynced(dir: &Path) -> SearchIndex {
  SearchIndex::open(StateDir::open_root(dir).unwrap(), IndexOptions { sync: false, ..IndexOptions::default() }).unwrap()
}

/// Every file under `dir`, temp files included, as (name, bytes).
fn all_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
  let mut out = Vec::new();
  for e in fs::read_dir(dir).unwrap() {
    let e = e.unwrap();
    out.push((e.file_name().to_string_lossy().into_owned(), fs::read(e.path()).unwrap()));
  }
  out
}

fn holds(dir: &Path, needle: &str) -> Vec<String> {
  all_files(dir)
    .into_iter()
    .filter(|(_, bytes)| memchr::memmem::find(bytes, needle.as_bytes()).is_some())
    .map(|(name, _)| name)
    .collect()
}

/// The terms of the base in `dir`: its vocabulary is an fst, whose bytes do not hold a term in
/// one piece, so a search of the file's bytes cannot tell whether it holds one.
fn vocabulary(dir: &Path) -> Vec<String> {
  let (_, index) = format::decode_base(&fs::read(dir.join(BASE_FILE)).unwrap(), AnalyzerConfig::default()).unwrap();
  index.base.as_ref().unwrap().all_postings().unwrap().into_iter().map(|(t, _)| t.to_string()).collect()
}

// ---- ranking and the query API (in memory) ----

#[test]
fn stemming_finds_other_forms_and_explain_adds_up() {
  let index = mem(&corpus());
  let r = index.search("deployment of billing services", &opts()).unwrap();
  assert_eq!(r.hits[0].id, "billing");
  let hit = &r.hits[0];
  let e = &hit.explain;
  let words: Vec<(&str, &str)> = e.matched.iter().map(|m| (m.term.as_str(), m.query_word.as_str())).collect();
  assert_eq!(words, [("deploy", "deployment"), ("bill", "billing"), ("servic", "services")]);
  let sum: f64 = e.matched.iter().map(|m| m.bm25).sum();
  assert!((sum - e.bm25).abs() < 1e-9);
  assert!((e.relevance - e.bm25 / e.bm25_max).abs() < 1e-12);
  assert!((hit.score - e.relevance * e.recency * e.importance).abs() < 1e-12);
  assert!(e.relevance > 0.0 && e.relevance < 1.0);
  assert_eq!(e.age_ms, DAY_MS as i64);
  assert_eq!(e.importance, ImportanceWeights::default().interaction);
  // "services" also matches the lunch memory, and `bill` the tabs memory as an is-a word (a
  // tab is a bill), ranked below.
  assert_eq!(ids(&r), ["billing", "lunch", "tabs"]);
  assert_eq!(r.terms.iter().map(|t| t.term.as_str()).collect::<Vec<_>>(), ["deploy", "bill", "servic"]);
  // Without stemming the other forms do not match.
  let mut plain = MemoryIndex::new(AnalyzerConfig { stem: false });
  for d in corpus() {
    plain.add(&d).unwrap();
  }
  // (Related words off: `deploy`'s related words include `deployment`.)
  let words_only = SearchOptions { rank: RankConfig { related: 0.0, ..RankConfig::default() }, ..opts() };
  assert!(plain.search("deployment", &words_only).unwrap().hits.is_empty());
}

#[test]
fn cjk_queries_match_by_bigrams() {
  let index = mem(&corpus());
  assert_eq!(ids(&index.search("東京の会議", &opts()).unwrap()), ["cjk"]);
}

#[test]
fn recency_orders_equal_matches_newest_first_and_is_relative_to_now() {
  let old =
    with(doc("old", "The staging database password rotates weekly"), |d| d.timestamp_ms = NOW - 200 * DAY_MS as i64);
  let new = with(doc("new", "The staging database password rotates monthly"), |d| d.timestamp_ms = NOW - DAY_MS as i64);
  let index = mem(&[old, new]);
  let r = index.search("staging database password", &opts()).unwrap();
  assert_eq!(ids(&r), ["new", "old"]);
  assert!(r.hits[0].score > r.hits[1].score);
  assert!(r.hits[1].explain.recency >= Recency::default().floor);
  // Seen from before both were written, both count as new: equal scores.
  let before = SearchOptions { now_ms: NOW - 300 * DAY_MS as i64, ..opts() };
  let r = index.search("staging database password", &before).unwrap();
  assert_eq!(r.hits[0].score, r.hits[1].score);
  assert_eq!(r.hits[0].explain.recency, 1.0);
}

#[test]
fn a_strong_old_match_still_beats_a_weak_new_one() {
  let old = with(doc("old", "Kubernetes ingress certificates renew through cert-manager"), |d| {
    d.timestamp_ms = NOW - 400 * DAY_MS as i64
  });
  let new = doc("new", "Somebody mentioned kubernetes at lunch today while talking about weekend plans and hiking");
  let r = mem(&[old, new]).search("kubernetes ingress certificates", &opts()).unwrap();
  assert_eq!(ids(&r), ["old", "new"]);
}

#[test]
fn decisions_and_instructions_rank_above_interactions() {
  let talk = doc("talk", "Talked about using Redis for the session cache");
  let decision = with(doc("decision", "Use Redis for the session cache"), |d| d.kind = MemoryKind::Decision);
  let index = mem(&[talk.clone(), decision]);
  let r = index.search("redis session cache", &opts()).unwrap();
  assert_eq!(ids(&r), ["decision", "talk"]);
  assert_eq!(r.hits[0].explain.importance, 1.0);
  let instr = with(doc("instr", "Talked about using Redis for the session cache"), |d| d.instruction = true);
  let index = mem(&[talk, instr]);
  assert_eq!(ids(&index.search("redis session cache", &opts()).unwrap())[0], "instr");
  // Plain BM25: equal texts score alike.
  let r = index.search("redis session cache", &SearchOptions { rank: RankConfig::bm25_only(), ..opts() }).unwrap();
  assert_eq!(r.hits[0].score, r.hits[1].score);
}

#[test]
fn agents_see_only_their_scope_and_scores_do_not_depend_on_other_agents() {
  let a = with(doc("a1", "The deploy key for alpha lives in the vault"), |d| d.agent_id = Some("alpha".into()));
  // `zqx`: a word of beta's alone (`beta` itself is a related word of alpha's `alpha`).
  let b = with(doc("b1", "The deploy key for zqx lives in the vault"), |d| d.agent_id = Some("beta".into()));
  let shared = doc("w1", "Vault tokens expire after one hour");
  let index = mem(&[a.clone(), b.clone(), shared.clone()]);
  let scoped = |agents: &[&str], unassigned: bool| SearchOptions {
    agents: Some(agents.iter().map(|s| s.to_string()).collect()),
    include_unassigned: unassigned,
    ..opts()
  };
  assert_eq!(ids(&index.search("vault deploy key", &scoped(&["alpha"], true)).unwrap()), ["a1", "w1"]);
  assert_eq!(ids(&index.search("vault deploy key", &scoped(&["alpha"], false)).unwrap()), ["a1"]);
  let both = index.search("vault deploy key", &scoped(&["alpha", "beta"], false)).unwrap();
  assert_eq!(both.hits.len(), 2);
  assert!(index.search("vault deploy key", &scoped(&["nobody"], false)).unwrap().hits.is_empty());
  assert_eq!(index.search("vault", &opts()).unwrap().hits.len(), 3, "no scope: the whole workspace");
  // What alpha sees scores exactly as if beta's memories did not exist.
  let alone = mem(&[a, shared]);
  let with_beta = index.search("vault deploy key zqx", &scoped(&["alpha"], true)).unwrap();
  let without = alone.search("vault deploy key zqx", &scoped(&["alpha"], true)).unwrap();
  assert_eq!(with_beta.hits, without.hits);
  assert_eq!(with_beta.terms, without.terms);
  assert_eq!(with_beta.terms.iter().find(|t| t.term == "zqx").unwrap().df, 0);
}

#[test]
fn filters_limit_and_min_score() {
  let docs: Vec<Document> = (0..30)
    .map(|i| {
      with(doc(&format!("d{i:02}"), &format!("release checklist item {i} for the release train")), |d| {
        d.timestamp_ms = NOW - i64::from(i) * DAY_MS as i64;
        d.kind = if i % 3 == 0 { MemoryKind::Decision } else { MemoryKind::Interaction };
      })
    })
    .collect();
  let index = mem(&docs);
  let r = index.search("release checklist", &SearchOptions { limit: 5, ..opts() }).unwrap();
  assert_eq!(r.hits.len(), 5);
  assert!(r.hits.windows(2).all(|w| w[0].score >= w[1].score));
  let r = index.search("release", &SearchOptions { kinds: Some(vec![MemoryKind::Decision]), limit: 100, ..opts() });
  assert_eq!(r.unwrap().hits.len(), 10);
  let since = SearchOptions { since_ms: Some(NOW - 4 * DAY_MS as i64), limit: 100, ..opts() };
  assert_eq!(ids(&index.search("release", &since).unwrap()).len(), 5);
  let all = index.search("release checklist", &SearchOptions { limit: 100, ..opts() }).unwrap();
  let cut = all.hits[10].score;
  let r = index.search("release checklist", &SearchOptions { limit: 100, min_score: cut, ..opts() }).unwrap();
  assert!(r.hits.iter().all(|h| h.score >= cut));
  assert!(r.hits.len() >= 11 && r.hits.len() < 30);
}

#[test]
fn hostile_queries_get_coded_errors_or_nothing_and_never_echo_the_query() {
  let index = mem(&corpus());
  for q in ["", "   \n\t "] {
    let e = index.search(q, &opts()).unwrap_err();
    assert_eq!(e.code(), "E_INVALID_ARGUMENT");
  }
  let secret_word = "zebrafishsecret";
  let huge = format!("{secret_word} ").repeat(MAX_QUERY_BYTES / 10);
  let e = index.search(&huge, &opts()).unwrap_err();
  assert_eq!(e.code(), "E_TOO_LARGE");
  assert!(!e.to_string().contains(secret_word));
  // Regex and query-language syntax are punctuation: literal words only.
  assert!(index.search(".* | (?i) [^a] \\", &opts()).unwrap().hits.is_empty());
  assert!(index.search("the of what", &opts()).unwrap().hits.is_empty(), "stop words only");
  assert_eq!(ids(&index.search("billing.*service", &opts()).unwrap())[0], "billing");
  assert!(index.search("NOT billing OR lunch", &opts()).unwrap().hits.len() >= 2, "no operators");
  // More distinct terms than used: the first ones in query order, the rest counted.
  let many: String = (0..200).map(|i| format!("word{i} ")).collect::<String>() + "billing";
  let r = index.search(&many, &opts()).unwrap();
  assert_eq!(r.terms.len(), MAX_QUERY_TERMS);
  assert_eq!(r.dropped_terms, 201 - MAX_QUERY_TERMS);
  assert!(r.hits.is_empty(), "billing was past the limit");
  // A query of the largest size is answered, in time linear in its length.
  let big = "deploy billing ".repeat(MAX_QUERY_BYTES / 15);
  assert_eq!(index.search(&big, &opts()).unwrap().hits[0].id, "billing");
}

#[test]
fn bad_options_are_refused_naming_the_option() {
  let index = mem(&corpus());
  let secret = "agent-secret-name";
  let cases = [
    SearchOptions { limit: 0, ..opts() },
    SearchOptions { limit: MAX_LIMIT + 1, ..opts() },
    SearchOptions { min_score: f64::NAN, ..opts() },
    SearchOptions { min_score: 1.5, ..opts() },
    SearchOptions { kinds: Some(vec![]), ..opts() },
    SearchOptions { agents: Some(vec![String::new()]), ..opts() },
    SearchOptions { agents: Some(vec![format!("{secret}{}", "x".repeat(MAX_ID_BYTES))]), ..opts() },
    SearchOptions { rank: RankConfig { b: 2.0, ..RankConfig::default() }, ..opts() },
  ];
  for o in cases {
    let e = index.search("billing", &o).unwrap_err();
    assert_eq!(e.code(), "E_INVALID_ARGUMENT", "{o:?}");
    assert!(!e.to_string().contains(secret));
  }
  let many = SearchOptions { agents: Some(vec!["a".into(); MAX_SCOPE_AGENTS + 1]), ..opts() };
  assert_eq!(index.search("billing", &many).unwrap_err().code(), "E_TOO_LARGE");
  let long = with(doc("x", "text"), |d| d.text = "a".repeat(MAX_DOCUMENT_BYTES + 1));
  assert_eq!(MemoryIndex::new(AnalyzerConfig::default()).add(&long).unwrap_err().code(), "E_TOO_LARGE");
  assert_eq!(
    MemoryIndex::new(AnalyzerConfig::default()).add(&doc("", "text")).unwrap_err().code(),
    "E_INVALID_ARGUMENT"
  );
}

#[test]
fn replacing_and_removing_keep_counts_exact() {
  let mut index = mem(&corpus());
  assert_eq!(index.add(&doc("lunch", "Dinner was pasta")).unwrap(), AddOutcome::Replaced);
  assert_eq!(index.len(), 5);
  assert!(index.search("sandwich", &opts()).unwrap().hits.is_empty());
  assert_eq!(ids(&index.search("pasta", &opts()).unwrap()), ["lunch"]);
  assert!(index.has_garbage());
  index.compact().unwrap();
  assert!(!index.has_garbage());
  assert!(!index.term_ord.contains_key("sandwich"));
  assert_eq!(index.remove(["pg", "nope"]).unwrap(), 1);
  assert!(!index.term_ord.contains_key("postgresql"));
  assert_eq!(index.len(), 4);
  // After removal the statistics are those of an index that never had it.
  let mut fresh = mem(&corpus().into_iter().filter(|d| d.id != "pg" && d.id != "lunch").collect::<Vec<_>>());
  fresh.add(&doc("lunch", "Dinner was pasta")).unwrap();
  let q = "billing service database pasta";
  let (a, b) = (index.search(q, &opts()).unwrap(), fresh.search(q, &opts()).unwrap());
  assert_eq!(
    a.hits.iter().map(|h| (&h.id, h.score)).collect::<Vec<_>>(),
    b.hits.iter().map(|h| (&h.id, h.score)).collect::<Vec<_>>()
  );
}

// ---- the index on disk ----

#[test]
fn adds_survive_reopening_and_append_without_rewriting_the_base() {
  let (_t, dir) = tmp();
  let index = open(&dir);
  let base_before = fs::read(dir.join(BASE_FILE)).unwrap();
  for d in corpus() {
    assert_eq!(index.add(&d).unwrap(), AddOutcome::Added);
  }
  assert_eq!(fs::read(dir.join(BASE_FILE)).unwrap(), base_before, "an add never rewrites the base");
  let status = index.status().unwrap();
  assert_eq!((status.documents, status.log_records), (5, 5));
  assert_eq!(status.log_bytes, fs::metadata(dir.join(LOG_FILE)).unwrap().len());
  let expected = index.search("billing deployment", &opts()).unwrap();
  drop(index);
  let again = open(&dir);
  assert_eq!(again.search("billing deployment", &opts()).unwrap(), expected);
  again.compact().unwrap();
  let status = again.status().unwrap();
  assert_eq!((status.documents, status.log_records), (5, 0));
  drop(again);
  assert_eq!(open(&dir).search("billing deployment", &opts()).unwrap(), expected);
}

#[test]
fn another_handle_sees_adds_removals_and_rewrites() {
  let (_t, dir) = tmp();
  let writer = open(&dir);
  let reader = open(&dir);
  writer.add(&corpus()[0]).unwrap();
  assert_eq!(ids(&reader.search("billing", &opts()).unwrap()), ["billing"]);
  reader.add(&corpus()[1]).unwrap();
  assert_eq!(ids(&writer.search("postgresql", &opts()).unwrap()), ["pg"]);
  writer.remove(["billing"]).unwrap();
  assert!(reader.search("billing", &opts()).unwrap().hits.is_empty());
  reader.compact().unwrap();
  writer.add(&corpus()[2]).unwrap();
  assert_eq!(reader.ids().unwrap(), ["pg", "lunch"]);
  assert!(writer.contains("pg").unwrap() && !writer.contains("billing").unwrap());
}

#[test]
fn remove_leaves_no_file_holding_the_removed_words() {
  let (_t, dir) = tmp();
  let index = open(&dir);
  for d in corpus() {
    index.add(&d).unwrap();
  }
  let forgotten =
    doc("forget-me-7f3a", "The quixotically named zanzibarian courier galloped toward Kraków with 東京タワー");
  index.add(&forgotten).unwrap();
  index.compact().unwrap();
  index.add(&doc("after", "a later memory about billing")).unwrap();
  // Replaced once, so an older version sits in the log too.
  index.add(&with(forgotten.clone(), |d| d.text.push_str(" quixotically again"))).unwrap();
  // A temp file a killed writer left behind, with the words in it.
  fs::write(dir.join(".search-index.base.loa-tmp-999999999-1"), "zanzibarian courier").unwrap();
  assert!(!holds(&dir, "zanzibarian").is_empty());

  assert!(vocabulary(&dir).iter().any(|t| t == "zanzibarian"));
  assert_eq!(index.remove(["forget-me-7f3a"]).unwrap(), 1);
  // Words only it held, their stems, its id and its bigrams: nowhere, temp files included, and
  // not in the base's vocabulary (whose bytes do not hold terms in one piece).
  let gone =
    ["quixotically", "quixot", "zanzibarian", "galloped", "gallop", "kraków", "forget-me-7f3a", "タワ", "京タ"];
  let vocabulary = vocabulary(&dir);
  for word in gone {
    assert!(holds(&dir, word).is_empty(), "{word} still in {:?}", holds(&dir, word));
    assert!(!vocabulary.iter().any(|t| t == word), "{word} still in the vocabulary");
  }
  // Words other memories hold stay.
  assert!(vocabulary.iter().any(|t| t == "bill"));
  assert!(vocabulary.iter().any(|t| t == "東京"));
  assert!(index.search("zanzibarian courier", &opts()).unwrap().hits.is_empty());
  assert_eq!(open(&dir).status().unwrap().documents, 6);
  assert_eq!(index.remove(["forget-me-7f3a"]).unwrap(), 0);
}

#[test]
fn rebuild_replaces_whatever_was_there() {
  let (_t, dir) = tmp();
  let index = open(&dir);
  index.add(&doc("stale", "something that is not in the source any more")).unwrap();
  assert_eq!(index.rebuild(corpus()).unwrap(), 5);
  assert!(!index.contains("stale").unwrap());
  let other = open(&dir);
  assert_eq!(other.status().unwrap().documents, 5);
  assert!(holds(&dir, "source").is_empty());
}

fn damage(path: &Path, at: usize) {
  let mut bytes = fs::read(path).unwrap();
  let at = at.min(bytes.len() - 1);
  bytes[at] ^= 0x55;
  fs::write(path, bytes).unwrap();
}

#[test]
fn a_damaged_base_is_detected_and_rebuilt_never_read() {
  let (_t, dir) = tmp();
  let index = open(&dir);
  for d in corpus() {
    index.add(&d).unwrap();
  }
  index.compact().unwrap();
  drop(index);
  let len = fs::metadata(dir.join(BASE_FILE)).unwrap().len() as usize;
  // In the header and its section table: found at open.
  for at in [0, 10, 20, 37, 45, 100, 177] {
    let copy = tempfile::tempdir().unwrap();
    for (name, bytes) in all_files(&dir) {
      fs::write(copy.path().join(name), bytes).unwrap();
    }
    damage(&copy.path().join(BASE_FILE), at);
    let e = SearchIndex::open(StateDir::open_root(copy.path()).unwrap(), IndexOptions::default()).unwrap_err();
    assert_eq!(e.code(), "E_STATE_CORRUPT", "byte {at}");
    let (rebuilt, how) =
      SearchIndex::open_or_rebuild(StateDir::open_root(copy.path()).unwrap(), IndexOptions::default(), || Ok(corpus()))
        .unwrap();
    assert!(matches!(how, Opened::RebuiltDamaged(_)), "byte {at}: {how:?}");
    assert_eq!(ids(&rebuilt.search("billing", &opts()).unwrap())[0], "billing");
  }
  // In a section: found when that section is read (a query, `verify`), never read as data.
  for at in [format::BASE_HEADER_BYTES + 2, len / 2, len - 1] {
    let copy = tempfile::tempdir().unwrap();
    for (name, bytes) in all_files(&dir) {
      fs::write(copy.path().join(name), bytes).unwrap();
    }
    damage(&copy.path().join(BASE_FILE), at);
    let (index, _) =
      SearchIndex::open_or_rebuild(StateDir::open_root(copy.path()).unwrap(), IndexOptions::default(), || Ok(corpus()))
        .unwrap();
    if at > format::BASE_HEADER_BYTES + 16 {
      // Past the agent table (checked at open): found when read.
      assert_eq!(index.verify().unwrap_err().code(), "E_STATE_CORRUPT", "byte {at}");
    }
    index.rebuild(corpus()).unwrap();
    index.verify().unwrap();
    assert_eq!(ids(&index.search("billing", &opts()).unwrap())[0], "billing");
  }
  // Missing: rebuilt too; intact: loaded.
  let empty = tempfile::tempdir().unwrap();
  let (_, how) =
    SearchIndex::open_or_rebuild(StateDir::open_root(empty.path()).unwrap(), IndexOptions::default(), || Ok(corpus()))
      .unwrap();
  assert_eq!(how, Opened::RebuiltMissing);
  let never = || -> crate::Result<Vec<Document>> { panic!("an intact index is not rebuilt") };
  let (_, how) =
    SearchIndex::open_or_rebuild(StateDir::open_root(&dir).unwrap(), IndexOptions::default(), never).unwrap();
  assert_eq!(how, Opened::Loaded);
}

#[test]
fn another_version_or_analyser_is_rebuilt_not_misread() {
  let (_t, dir) = tmp();
  let index = open(&dir);
  index.add(&corpus()[0]).unwrap();
  index.compact().unwrap();
  drop(index);
  // Stemming off: the terms on disk were stemmed.
  let plain = IndexOptions { analyzer: AnalyzerConfig { stem: false }, ..IndexOptions::default() };
  let e = SearchIndex::open(StateDir::open_root(&dir).unwrap(), plain.clone()).unwrap_err();
  assert_eq!(e.code(), "E_STATE_CORRUPT");
  assert!(e.to_string().contains("analyser"));
  // A future format version (header checksum recomputed, so only the version differs).
  let base = dir.join(BASE_FILE);
  let mut bytes = fs::read(&base).unwrap();
  bytes[8..12].copy_from_slice(&3u32.to_le_bytes());
  let at = format::BASE_HEADER_BYTES - 4;
  let crc = crc32c::crc32c(&bytes[..at]);
  bytes[at..at + 4].copy_from_slice(&crc.to_le_bytes());
  fs::write(&base, bytes).unwrap();
  let e = SearchIndex::open(StateDir::open_root(&dir).unwrap(), IndexOptions::default()).unwrap_err();
  assert!(e.to_string().contains("format version 3"), "{e}");
  let (index, how) = SearchIndex::open_or_rebuild(StateDir::open_root(&dir).unwrap(), plain, || Ok(corpus())).unwrap();
  assert!(matches!(how, Opened::RebuiltDamaged(_)));
  assert_eq!(ids(&index.search("deployed", &opts()).unwrap()), ["billing"]);
}

#[test]
fn a_torn_log_tail_is_not_read_and_the_next_writer_cuts_it() {
  let (_t, dir) = tmp();
  let index = open(&dir);
  for d in &corpus()[..3] {
    index.add(d).unwrap();
  }
  let log = dir.join(LOG_FILE);
  let whole = fs::metadata(&log).unwrap().len();
  let analyzer = Analyzer::new(AnalyzerConfig::default());
  let record = format::encode_add(&AnalyzedDoc::new(&analyzer, &corpus()[3]).unwrap());
  for cut in [1, 4, 7, 8, 9, record.len() / 2, record.len() - 1] {
    let mut bytes = fs::read(&log).unwrap();
    bytes.truncate(whole as usize);
    bytes.extend_from_slice(&record[..cut]);
    fs::write(&log, &bytes).unwrap();
    let reader = open(&dir);
    assert_eq!(reader.status().unwrap().documents, 3, "cut at {cut}");
    assert!(reader.search("linter tabs", &opts()).unwrap().hits.is_empty());
  }
  // A whole last record with a bad checksum reaches the end too: torn, not read. (Longer than
  // the record appended next, so that only cutting it leaves a log of whole records.)
  let mut bytes = fs::read(&log).unwrap();
  bytes.truncate(whole as usize);
  let long = doc("long", &(0..100).map(|i| format!("word{i} ")).collect::<String>());
  let mut bad = format::encode_add(&AnalyzedDoc::new(&analyzer, &long).unwrap());
  *bad.last_mut().unwrap() ^= 1;
  bytes.extend_from_slice(&bad);
  fs::write(&log, &bytes).unwrap();
  let writer = open(&dir);
  assert_eq!(writer.status().unwrap().documents, 3);
  writer.add(&corpus()[4]).unwrap();
  let added = format::encode_add(&AnalyzedDoc::new(&analyzer, &corpus()[4]).unwrap());
  assert_eq!(fs::metadata(&log).unwrap().len(), whole + added.len() as u64, "the torn tail was cut");
  let again = open(&dir);
  assert_eq!(again.ids().unwrap(), ["billing", "pg", "lunch", "cjk"]);
  // The first handle catches up too.
  assert_eq!(index.ids().unwrap(), ["billing", "pg", "lunch", "cjk"]);
}

#[test]
fn damage_inside_the_log_is_an_error_not_fewer_results() {
  let (_t, dir) = tmp();
  let index = open(&dir);
  for d in corpus() {
    index.add(&d).unwrap();
  }
  let log = dir.join(LOG_FILE);
  damage(&log, format::LOG_HEADER_BYTES + 12);
  let e = SearchIndex::open(StateDir::open_root(&dir).unwrap(), IndexOptions::default()).unwrap_err();
  assert_eq!(e.code(), "E_STATE_CORRUPT");
  assert!(e.to_string().contains(LOG_FILE));
  // And a damaged header.
  let (_t2, dir2) = tmp();
  let index = open(&dir2);
  index.add(&corpus()[0]).unwrap();
  damage(&dir2.join(LOG_FILE), 17);
  assert_eq!(index.search("billing", &opts()).unwrap_err().code(), "E_STATE_CORRUPT");
}

#[test]
fn a_log_older_than_the_base_is_ignored_and_replaced() {
  let (_t, dir) = tmp();
  let index = open(&dir);
  for d in &corpus()[..2] {
    index.add(d).unwrap();
  }
  let old_log = fs::read(dir.join(LOG_FILE)).unwrap();
  index.remove(["pg"]).unwrap();
  // As if the rewrite had been cut short between its two renames: the new base, the old log.
  fs::write(dir.join(LOG_FILE), &old_log).unwrap();
  let reader = open(&dir);
  assert_eq!(reader.ids().unwrap(), ["billing"], "the stale log's records are in the base or removed");
  reader.add(&corpus()[2]).unwrap();
  assert!(holds(&dir, "postgresql").is_empty(), "the next writer replaced the stale log");
  assert_eq!(open(&dir).ids().unwrap(), ["billing", "lunch"]);
}

#[test]
fn state_files_are_never_followed_through_symlinks() {
  let (t, dir) = tmp();
  let outside = t.path().join("outside");
  fs::write(&outside, b"not ours").unwrap();
  std::os::unix::fs::symlink(&outside, dir.join(BASE_FILE)).unwrap();
  let e = SearchIndex::open(StateDir::open_root(&dir).unwrap(), IndexOptions::default()).unwrap_err();
  assert_eq!(e.code(), "E_NOT_REGULAR_FILE");
  let e = SearchIndex::open_or_rebuild(StateDir::open_root(&dir).unwrap(), IndexOptions::default(), || Ok(corpus()))
    .unwrap_err();
  assert_eq!(e.code(), "E_NOT_REGULAR_FILE");
  assert_eq!(fs::read(&outside).unwrap(), b"not ours");
  fs::remove_file(dir.join(BASE_FILE)).unwrap();
  let index = open(&dir);
  fs::remove_file(dir.join(LOG_FILE)).unwrap();
  std::os::unix::fs::symlink(&outside, dir.join(LOG_FILE)).unwrap();
  assert_eq!(index.add(&corpus()[0]).unwrap_err().code(), "E_NOT_REGULAR_FILE");
  assert_eq!(fs::read(&outside).unwrap(), b"not ours");
}

#[test]
fn failed_writes_leave_nothing_half_written_and_a_retry_works() {
  use crate::fsutil::faults::{inject, Op};
  let (_t, dir) = tmp();
  let index = open(&dir);
  index.add(&corpus()[0]).unwrap();
  let size = fs::metadata(dir.join(LOG_FILE)).unwrap().len();
  {
    let _g = inject(&dir, Op::Sync, libc::EIO, 0, 1);
    assert_eq!(index.add(&corpus()[1]).unwrap_err().code(), "E_IO");
  }
  assert_eq!(fs::metadata(dir.join(LOG_FILE)).unwrap().len(), size, "the unsynced record was taken back");
  assert!(!index.contains("pg").unwrap());
  index.add(&corpus()[1]).unwrap();
  // A removal whose base rewrite fails: an error, and the retry removes for real.
  {
    let _g = inject(&dir, Op::Rename, libc::ENOSPC, 0, 1);
    assert_eq!(index.remove(["pg"]).unwrap_err().code(), "E_IO");
  }
  assert!(index.contains("pg").unwrap(), "not removed on disk, so not in memory either");
  assert_eq!(index.remove(["pg"]).unwrap(), 1);
  assert!(holds(&dir, "postgresql").is_empty());
  // The new log fails after the new base is in place: the old log goes, words with it.
  index.add(&corpus()[3]).unwrap();
  {
    let _g = inject(&dir, Op::Rename, libc::ENOSPC, 1, 1);
    assert!(index.remove(["tabs"]).is_err());
  }
  assert!(holds(&dir, "linter").is_empty(), "{:?}", holds(&dir, "linter"));
  assert_eq!(open(&dir).ids().unwrap(), ["billing"]);
  assert_eq!(index.ids().unwrap(), ["billing"]);
}

/// Run as a child by `a_writer_killed_mid_append_loses_no_acknowledged_add`: adds memories
/// forever, printing `ACK <n>` after each returns.
#[test]
#[ignore = "child process of a crash test"]
fn crash_child_writer() {
  let Ok(dir) = std::env::var("LOA_SEARCH_CRASH_DIR") else { return };
  let index = open(Path::new(&dir));
  let filler = "lorem ipsum dolor sit amet consectetur ".repeat(40);
  for n in 0.. {
    index.add(&doc(&format!("crash-{n}"), &format!("uniqueword{n} {filler}"))).unwrap();
    println!("ACK {n}");
  }
}

#[test]
fn a_writer_killed_mid_append_loses_no_acknowledged_add() {
  use std::io::{BufRead, BufReader};
  use std::process::{Command, Stdio};
  let (_t, dir) = tmp();
  drop(open(&dir));
  let mut acked = 0;
  for round in 0..4 {
    let mut child = Command::new(std::env::current_exe().unwrap())
      .args(["--exact", "search::tests::crash_child_writer", "--ignored", "--nocapture", "--test-threads=1"])
      .env("LOA_SEARCH_CRASH_DIR", &dir)
      .stdout(Stdio::piped())
      .stderr(Stdio::null())
      .spawn()
      .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut last = None;
    let want = 5 + round * 7;
    for line in lines.by_ref() {
      let line = line.unwrap();
      if let Some(n) = line.strip_prefix("ACK ") {
        last = Some(n.parse::<u64>().unwrap());
        if last.unwrap() + 1 >= want {
          break;
        }
      }
    }
    // SIGKILL while it is appending the next ones.
    std::thread::sleep(std::time::Duration::from_millis(3 * round));
    child.kill().unwrap();
    child.wait().unwrap();
    let last = last.expect("the child acknowledged adds");
    let index = open(&dir);
    let ids = index.ids().unwrap();
    for n in 0..=last {
      assert!(ids.contains(&format!("crash-{n}")), "acknowledged add {n} lost in round {round}");
      let hits = index.search(&format!("uniqueword{n}"), &opts()).unwrap();
      assert_eq!(hits.hits.len(), 1);
    }
    acked += last + 1;
    // The next writer cuts any torn tail; the log then ends on a whole record.
    index.add(&doc(&format!("after-{round}"), "after the crash")).unwrap();
    let status = index.status().unwrap();
    assert_eq!(status.log_bytes, fs::metadata(dir.join(LOG_FILE)).unwrap().len());
    index.remove(ids.iter().map(String::as_str)).unwrap();
  }
  assert!(acked > 0);
}

#[test]
fn damaged_bytes_never_panic_the_decoders() {
  // Every single-byte change and every truncation of a real base and a real log: an error or a
  // consistent index, never a panic (the fuzz target `search_index` explores further).
  let mut index = mem(&corpus());
  index.compact().unwrap();
  let base = format::encode_base(&index, AnalyzerConfig::default().id(), 7);
  let analyzer = Analyzer::new(AnalyzerConfig::default());
  let log: Vec<u8> =
    corpus().iter().flat_map(|d| format::encode_add(&AnalyzedDoc::new(&analyzer, d).unwrap())).collect();
  let check_base = |bytes: &[u8]| {
    if let Ok((_, decoded)) = format::decode_base(bytes, AnalyzerConfig::default()) {
      for q in ["billing", "postgresql tabs", "東京", "nothing"] {
        let _ = decoded.search(q, &opts());
      }
      let _ = decoded.ids();
      let _ = decoded.contains("pg");
    }
  };
  let check_log = |bytes: &[u8]| {
    let mut at = 0;
    while let Ok(format::Next::Record { size, .. }) = format::next_record(&bytes[at..]) {
      assert!(size > 0 && at + size <= bytes.len());
      at += size;
    }
  };
  // Past the checksums: every section but the two fst maps resealed after the change, so the
  // decoders' own checks are what stands between damage and the index.
  let resealed_base = |b: &[u8]| {
    let mut b = b.to_vec();
    base::reseal(&mut b);
    check_base(&b);
  };
  let first = format::encode_add(&AnalyzedDoc::new(&analyzer, &corpus()[0]).unwrap())[8..].to_vec();
  let rewrap_log = |b: &[u8]| check_log(&format::frame(b));
  type Check<'a> = &'a dyn Fn(&[u8]);
  let cases: [(&Vec<u8>, Check); 4] =
    [(&base, &check_base), (&log, &check_log), (&base, &resealed_base), (&first, &rewrap_log)];
  for (bytes, check) in cases {
    for at in 0..bytes.len() {
      for flip in [0x01u8, 0x80, 0xff] {
        let mut b = bytes.clone();
        b[at] ^= flip;
        check(&b);
      }
      check(&bytes[..at]);
    }
  }
  assert!(format::decode_base(&base, AnalyzerConfig::default()).is_ok());
}

#[test]
fn a_log_record_or_base_row_with_an_unknown_mood_is_damage() {
  let analyzer = Analyzer::new(AnalyzerConfig::default());
  let d = AnalyzedDoc::new(&analyzer, &doc("a", "Zoe: I want to learn the violin")).unwrap();
  assert_eq!(d.mood, super::mood::Mood::Wishes);
  // postcard: variant 0, id "a" (length 1), no agent, kind, instruction, mood.
  let payload = format::encode_add(&d)[8..].to_vec();
  assert_eq!(payload[..7], [0, 1, b'a', 0, payload[4], 0, 2]);
  for (mood, ok) in [(0u8, true), (1, true), (2, true), (3, false), (0xff, false)] {
    let mut p = payload.clone();
    p[6] = mood;
    let read = format::next_record(&format::frame(&p));
    assert_eq!(matches!(read, Ok(format::Next::Record { .. })), ok, "mood {mood}");
  }
  // A base row's flags byte: bit 0 instruction, bits 1-2 the mood; mood code 3 is damage.
  let mut index = mem(&[doc("a", "Zoe: I want to learn the violin"), doc("b", "Zoe: done?")]);
  index.compact().unwrap();
  let base = format::encode_base(&index, AnalyzerConfig::default().id(), 7);
  let (_, decoded) = format::decode_base(&base, AnalyzerConfig::default()).unwrap();
  let r = decoded.search("violin", &opts()).unwrap();
  assert_eq!(r.hits[0].explain.mood, 0.6);
  // The rows section is the second of the header's table (24 bytes per entry from byte 32); a
  // row's flags byte is its 22nd (after timestamp, length, agent, id end and kind).
  let rows = u64::from_le_bytes(base[56..64].try_into().unwrap()) as usize;
  let at = [rows + 21];
  assert_eq!(base[at[0]], 2 << 1, "the wish's row: mood code 2, no instruction");
  let mut bad = base.clone();
  bad[at[0]] = 6;
  base::reseal(&mut bad);
  let read = format::decode_base(&bad, AnalyzerConfig::default()).map(|(_, i)| i.search("violin", &opts()));
  assert!(matches!(read, Err(_) | Ok(Err(_))), "a bad mood code must not read");
}

/// What the fuzz target `search_index` does, with a fixed generator: a real base changed at a
/// few random places, resealed (every checksum recomputed but the fst maps'), then opened,
/// queried, listed and verified. Never a panic; an error is `E_STATE_CORRUPT`.
#[test]
fn a_resealed_base_changed_at_random_places_never_panics() {
  let mut index = mem(&corpus());
  index.add(&with(doc("agent-a", "billing notes of one agent"), |d| d.agent_id = Some("a".into()))).unwrap();
  index.compact().unwrap();
  let base = format::encode_base(&index, AnalyzerConfig::default().id(), 7);
  let mut state = 0x2545_F491_4F6C_DD1Du64;
  let mut next = move || {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    state
  };
  let corrupt_or_ok = |r: crate::Result<()>| {
    if let Err(e) = r {
      assert_eq!(e.code(), "E_STATE_CORRUPT");
    }
  };
  for _ in 0..3000 {
    let mut b = base.clone();
    for _ in 0..1 + next() % 6 {
      let at = (next() % b.len() as u64) as usize;
      b[at] ^= (next() % 255 + 1) as u8;
    }
    base::reseal(&mut b);
    let Ok((_, decoded)) = format::decode_base(&b, AnalyzerConfig::default()) else { continue };
    for q in ["billing service", "postgresql 東京", "tabs linter notes"] {
      corrupt_or_ok(decoded.search(q, &opts()).map(|_| ()));
      let scoped = SearchOptions { agents: Some(vec!["a".into()]), ..opts() };
      corrupt_or_ok(decoded.search(q, &scoped).map(|_| ()));
    }
    corrupt_or_ok(decoded.ids().map(|_| ()));
    corrupt_or_ok(decoded.contains("pg").map(|_| ()));
    corrupt_or_ok(decoded.verify());
    corrupt_or_ok(decoded.term_count().map(|_| ()));
  }
}

/// Every byte of a small base flipped, one at a time: opening fails, or every query either
/// fails (`E_STATE_CORRUPT`) or answers exactly what the intact base answers. Never a panic,
/// never other hits.
#[test]
fn every_flipped_byte_of_a_base_is_an_error_or_changes_nothing() {
  let mut index = mem(&corpus());
  index.add(&with(doc("agent-a", "billing notes of one agent"), |d| d.agent_id = Some("a".into()))).unwrap();
  index.compact().unwrap();
  let base = format::encode_base(&index, AnalyzerConfig::default().id(), 7);
  let queries = ["billing service", "postgresql", "東京 会議", "linter tabs sandwich", "notes agent"];
  let scoped = SearchOptions { agents: Some(vec!["a".into()]), ..opts() };
  let answers = |index: &MemoryIndex| -> Vec<crate::Result<SearchResults>> {
    let mut out = Vec::new();
    for q in queries {
      out.push(index.search(q, &opts()));
      out.push(index.search(q, &scoped));
    }
    out
  };
  let (_, intact) = format::decode_base(&base, AnalyzerConfig::default()).unwrap();
  let expected: Vec<SearchResults> = answers(&intact).into_iter().map(Result::unwrap).collect();
  let expected_ids: Vec<String> = intact.ids().unwrap().into_iter().map(String::from).collect();
  let (mut opened, mut errors) = (0, 0);
  for at in 0..base.len() {
    let mut b = base.clone();
    b[at] ^= 0x20;
    let Ok((_, decoded)) = format::decode_base(&b, AnalyzerConfig::default()) else { continue };
    opened += 1;
    for (got, want) in answers(&decoded).into_iter().zip(&expected) {
      match got {
        Ok(got) => assert_eq!(&got, want, "byte {at}"),
        Err(e) => {
          assert_eq!(e.code(), "E_STATE_CORRUPT", "byte {at}");
          errors += 1;
        }
      }
    }
    match decoded.ids() {
      Ok(ids) => assert_eq!(ids, expected_ids, "byte {at}"),
      Err(e) => assert_eq!(e.code(), "E_STATE_CORRUPT"),
    }
  }
  // Damage past the header is found when it is read, not at open.
  assert!(opened > base.len() / 2 && errors > 0, "{opened} {errors}");
}

/// The backbone of the on-disk format: the index read in place (a mapped base and the log as a
/// delta over it), through adds, replacements, removals, compactions and reopenings, answers
/// exactly what the same operations give in memory: the same ids, the same scores to the bit,
/// the same `explain`, for scoped and unscoped queries.
#[test]
fn the_index_on_disk_answers_exactly_what_the_index_in_memory_answers() {
  let (_t, dir) = tmp();
  let disk = open(&dir);
  let mut memory = MemoryIndex::new(AnalyzerConfig::default());
  let words = distinct_words(400, 7);
  let agents = [None, Some("alice"), Some("bob"), Some("carol")];
  let kinds = MemoryKind::ALL;
  // A deterministic generator (xorshift), so a failure is reproducible.
  let mut state = 0x9E37_79B9_7F4A_7C15u64;
  let mut next = move |n: usize| {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    (state % n as u64) as usize
  };
  let mut docs: Vec<Document> = Vec::new();
  let make = |i: usize, next: &mut dyn FnMut(usize) -> usize| {
    let len = 3 + next(25);
    // Zipf-like: low word numbers are common, so document frequencies vary.
    let text: Vec<&str> = (0..len)
      .map(|_| {
        let upto = 1 + next(words.len());
        words[next(upto)].as_str()
      })
      .collect();
    Document {
      id: format!("m{i:05}"),
      // Every fifth only asks, every fifth voices a wish: the mood goes through the log and the
      // base as well.
      text: text.join(" ")
        + if i.is_multiple_of(7) { " billing deploy" } else { "" }
        + match i % 5 {
          3 => "?",
          4 => " I want to",
          _ => "",
        },
      kind: kinds[next(kinds.len())],
      agent_id: agents[next(agents.len())].map(String::from),
      timestamp_ms: NOW - (next(400) as i64) * DAY_MS as i64 / 3,
      instruction: next(5) == 0,
      // Runs of memories in one session, so that neighbours add context on both paths.
      session: (!i.is_multiple_of(11)).then(|| format!("s{}", i / 6)),
    }
  };
  let queries: Vec<String> = (0..40)
    .map(|i| {
      let n = 1 + i % 5;
      let mut q: Vec<String> = (0..n).map(|k| words[(i * 37 + k * 101) % 60].clone()).collect();
      if i.is_multiple_of(4) {
        q.push("billing".into());
      }
      q.join(" ")
    })
    .collect();
  let option_sets = [
    opts(),
    SearchOptions { agents: Some(vec!["alice".into()]), ..opts() },
    SearchOptions { agents: Some(vec!["bob".into(), "carol".into()]), include_unassigned: false, ..opts() },
    SearchOptions { limit: 3, kinds: Some(vec![MemoryKind::Decision, MemoryKind::Interaction]), ..opts() },
    SearchOptions { rank: RankConfig::bm25_only(), since_ms: Some(NOW - 60 * DAY_MS as i64), ..opts() },
  ];
  let compare = |disk: &SearchIndex, memory: &MemoryIndex, step: &str| {
    for q in &queries {
      for o in &option_sets {
        let (a, b) = (disk.search(q, o).unwrap(), memory.search(q, o).unwrap());
        // SearchResults' equality compares every f64 with ==; to the bit as well:
        let bits = |r: &SearchResults| -> Vec<(String, u64, u64, Vec<u64>)> {
          r.hits
            .iter()
            .map(|h| {
              let e = &h.explain;
              (h.id.clone(), h.score.to_bits(), e.bm25.to_bits(), e.matched.iter().map(|m| m.bm25.to_bits()).collect())
            })
            .collect()
        };
        assert_eq!(bits(&a), bits(&b), "{step}: {q}");
        assert_eq!(a, b, "{step}: {q}");
      }
    }
    assert_eq!(disk.ids().unwrap(), memory.ids().unwrap(), "{step}");
    assert_eq!(disk.status().unwrap().documents, memory.len(), "{step}");
  };
  let mut i = 0;
  for round in 0..6u32 {
    for _ in 0..120 {
      let d = if !docs.is_empty() && next(4) == 0 {
        // Replace a memory: same id, new text.
        let at = next(docs.len());
        let fresh = make(i, &mut next);
        Document { id: docs[at].id.clone(), ..fresh }
      } else {
        make(i, &mut next)
      };
      i += 1;
      assert_eq!(disk.add(&d).unwrap(), memory.add(&d).unwrap());
      match docs.iter().position(|x| x.id == d.id) {
        Some(at) => docs[at] = d,
        None => docs.push(d),
      }
    }
    compare(&disk, &memory, &format!("round {round}, base and log"));
    let gone: Vec<String> = (0..5).map(|_| docs[next(docs.len())].id.clone()).collect();
    let gone_refs: Vec<&str> = gone.iter().map(String::as_str).collect();
    assert_eq!(disk.remove(gone_refs.iter().copied()).unwrap(), memory.remove(gone_refs.iter().copied()).unwrap());
    docs.retain(|d| !gone.contains(&d.id));
    compare(&disk, &memory, &format!("round {round}, after removal"));
    // Another process's view: reopened from the files.
    compare(&open(&dir), &memory, &format!("round {round}, reopened"));
    if !round.is_multiple_of(2) {
      disk.compact().unwrap();
      memory.compact().unwrap();
      compare(&disk, &memory, &format!("round {round}, compacted"));
    }
  }
  assert!(disk.status().unwrap().documents > 400);
}

/// Forgetting a memory rewrites the base: afterwards no byte of any index file holds a term
/// only it had (nor its id), while an index that merely replaced it still answers from the
/// mapped base plus the log.
#[test]
fn the_new_base_holds_no_term_of_a_forgotten_memory() {
  let (_t, dir) = tmp();
  let index = open(&dir);
  for d in corpus() {
    index.add(&d).unwrap();
  }
  index.add(&doc("forgotten-id-9c1e", "xylophonist quarterbacks vellichor billing")).unwrap();
  index.compact().unwrap();
  // In the mapped base now (its id in one piece; its terms in the fst vocabulary).
  assert!(memchr::memmem::find(&fs::read(dir.join(BASE_FILE)).unwrap(), b"forgotten-id-9c1e").is_some());
  assert!(vocabulary(&dir).iter().any(|t| t == "vellichor"));
  assert_eq!(ids(&index.search("vellichor", &opts()).unwrap()), ["forgotten-id-9c1e"]);
  assert_eq!(index.remove(["forgotten-id-9c1e"]).unwrap(), 1);
  let base = fs::read(dir.join(BASE_FILE)).unwrap();
  let vocabulary = vocabulary(&dir);
  for word in ["vellichor", "xylophonist", "quarterback", "forgotten-id-9c1e"] {
    assert!(!vocabulary.iter().any(|t| t == word), "{word} is still in the vocabulary");
    assert!(memchr::memmem::find(&base, word.as_bytes()).is_none(), "{word} is still in the base");
    assert!(holds(&dir, word).is_empty(), "{word} still in {:?}", holds(&dir, word));
  }
  // Every term of the new base is a term some remaining memory holds.
  let mut expected = MemoryIndex::new(AnalyzerConfig::default());
  for d in corpus() {
    expected.add(&d).unwrap();
  }
  let mut want: Vec<String> = expected.terms.iter().map(|t| t.to_string()).collect();
  want.sort();
  assert_eq!(vocabulary, want);
  assert!(index.search("vellichor xylophonist", &opts()).unwrap().hits.is_empty());
  assert_eq!(open(&dir).status().unwrap().documents, 5);
}

/// A base of format version 1 (the whole index decoded into memory at open) is not read: it is
/// rebuilt from the memories, like a damaged one.
#[test]
fn a_version_1_base_is_rebuilt() {
  let (_t, dir) = tmp();
  // The version 1 header: magic, version 1, analyser, generation, body length and checksum,
  // header checksum; then a body.
  let body = b"\x00\x00\x00";
  let mut v1 = Vec::new();
  v1.extend_from_slice(b"LOASRCHB");
  v1.extend_from_slice(&1u32.to_le_bytes());
  v1.extend_from_slice(&AnalyzerConfig::default().id().to_le_bytes());
  v1.extend_from_slice(&5u64.to_le_bytes());
  v1.extend_from_slice(&(body.len() as u64).to_le_bytes());
  v1.extend_from_slice(&crc32c::crc32c(body).to_le_bytes());
  let crc = crc32c::crc32c(&v1);
  v1.extend_from_slice(&crc.to_le_bytes());
  v1.extend_from_slice(body);
  fs::write(dir.join(BASE_FILE), &v1).unwrap();
  let e = SearchIndex::open(StateDir::open_root(&dir).unwrap(), IndexOptions::default()).unwrap_err();
  assert_eq!(e.code(), "E_STATE_CORRUPT");
  assert!(e.to_string().contains("format version 1"), "{e}");
  let (index, how) =
    SearchIndex::open_or_rebuild(StateDir::open_root(&dir).unwrap(), IndexOptions::default(), || Ok(corpus())).unwrap();
  assert!(matches!(how, Opened::RebuiltDamaged(_)), "{how:?}");
  assert_eq!(ids(&index.search("billing", &opts()).unwrap())[0], "billing");
  assert_eq!(&fs::read(dir.join(BASE_FILE)).unwrap()[8..12], &format::FORMAT_VERSION.to_le_bytes());
}

/// Opening reads the base's header and agent table, nothing in proportion to its memories: what
/// the process holds afterwards is the same for 100 memories and for 3,000, and a query reads
/// only its own posting lists (the base's pages, not copies).
#[test]
fn opening_holds_nothing_in_proportion_to_the_base() {
  let mut held = Vec::new();
  for n in [100usize, 3000] {
    let (_t, dir) = tmp();
    let words = distinct_words(2 * n, 3);
    let docs: Vec<Document> = (0..n)
      .map(|i| {
        let d = doc(&format!("{i:064x}"), &format!("{} {} billing", words[2 * i], words[2 * i + 1]));
        with(d, |d| d.agent_id = (i % 3 > 0).then(|| format!("agent-{}", i % 3)))
      })
      .collect();
    open(&dir).rebuild(docs).unwrap();
    let index = open(&dir);
    let status = index.status().unwrap();
    assert_eq!(status.documents, n);
    held.push((status.heap_bytes, status.base_bytes));
    assert_eq!(index.search("billing", &opts()).unwrap().hits.len(), 10);
    assert_eq!(index.status().unwrap().heap_bytes, status.heap_bytes, "a query copies nothing into the index");
  }
  let ((small, small_disk), (large, large_disk)) = (held[0], held[1]);
  assert!(large_disk > 20 * small_disk, "{small_disk} {large_disk}");
  assert_eq!(small, large, "held after open: {small} bytes at 100 memories, {large} at 3,000");
  assert!(large < 4096, "{large}");
}

/// The log is folded into the base once it reaches [`COMPACT_LOG_BYTES`], so what an open reads
/// (the log; the base is mapped) stays bounded however many memories are added.
#[test]
fn the_log_stays_bounded() {
  let (_t, dir) = tmp();
  let index = open_unsynced(&dir);
  let words = distinct_words(3000, 11);
  let (mut folds, mut records) = (0, 0);
  // About 800 bytes of log per memory: 2,000 of them would make a 1.6 MiB log.
  let n = 2_000;
  for i in 0..n {
    let text = words[(i * 50) % 2900..(i * 50) % 2900 + 100].join(" ") + &format!(" w{i}x");
    index.add(&doc(&format!("d{i}"), &text)).unwrap();
    let log = fs::metadata(dir.join(LOG_FILE)).unwrap().len();
    assert!(log <= COMPACT_LOG_BYTES, "{log}");
    let now = index.status().unwrap().log_records;
    if now < records {
      folds += 1;
    }
    records = now;
  }
  // Also folded when its decoded memories outgrow the index (at first, while the base is
  // small): at geometric intervals, a handful of times.
  assert!((1..=10).contains(&folds), "{folds}");
  let again = open(&dir);
  assert_eq!(again.status().unwrap().documents, n);
  assert_eq!(ids(&again.search(&format!("w{}x", n - 1), &opts()).unwrap()), [format!("d{}", n - 1)]);
  assert_eq!(ids(&again.search("w7x", &opts()).unwrap()), ["d7"]);
}

/// `n` distinct words of 4 to 6 characters that no analysis step merges (a letter then base-36
/// digits: mixed words are neither stemmed nor stop words).
fn distinct_words(n: usize, from: usize) -> Vec<String> {
  (from..from + n)
    .map(|i| {
      let mut w = String::from("q");
      let mut v = i + 36 * 36 * 36;
      while v > 0 {
        w.push(char::from_digit((v % 36) as u32, 36).unwrap());
        v /= 36;
      }
      w
    })
    .collect()
}

/// 1 MiB of distinct short words (150,000 terms) adds at most [`MAX_TERMS_PER_DOCUMENT`] terms to
/// the vocabulary and to the log, whatever the text: the index grows with its memories, not with
/// what one capture may hold. The words a memory repeats are the ones kept.
#[test]
fn one_memory_adds_a_bounded_number_of_terms() {
  let mut words = distinct_words(1 << 20, 0);
  let mut text = String::new();
  while let Some(w) = words.pop() {
    if text.len() + w.len() + 1 > (1 << 20) {
      break;
    }
    text.push_str(&w);
    text.push(' ');
  }
  let distinct = text.split(' ').filter(|w| !w.is_empty()).count();
  assert!(distinct > 100_000, "{distinct}");
  text.push_str("billing billing deploy deploy");

  let (_t, dir) = tmp();
  let index = open(&dir);
  let before = index.status().unwrap().log_bytes;
  index.add(&doc("huge", &text)).unwrap();
  let status = index.status().unwrap();
  // Its own words up to the bound, and related words up to theirs.
  let bound = MAX_TERMS_PER_DOCUMENT + MAX_RELATED_PER_DOCUMENT;
  assert!(status.terms > MAX_TERMS_PER_DOCUMENT && status.terms <= bound, "{}", status.terms);
  let per_term = MAX_TERM_BYTES as u64 + 16;
  assert!(status.log_bytes - before <= bound as u64 * per_term, "{}", status.log_bytes);
  assert_eq!(ids(&index.search("billing deploy", &opts()).unwrap()), ["huge"]);
  // Read back from its files, it is the same size.
  assert_eq!(open(&dir).status().unwrap().terms, status.terms);

  // A second such memory adds at most as many again.
  let more: String = distinct_words(200_000, 1 << 21).join(" ");
  index.add(&doc("huge2", &more)).unwrap();
  assert!(index.status().unwrap().terms <= 2 * bound);

  // A memory with fewer distinct terms than the bound is indexed whole.
  let ordinary = distinct_words(MAX_TERMS_PER_DOCUMENT, 1 << 22).join(" ");
  let analysed = AnalyzedDoc::new(&Analyzer::new(AnalyzerConfig::default()), &doc("ordinary", &ordinary)).unwrap();
  assert_eq!(analysed.terms.len(), MAX_TERMS_PER_DOCUMENT);
  assert_eq!(analysed.len() as usize, MAX_TERMS_PER_DOCUMENT);
}

/// Turns of one conversation, captured in order in session `s1`, then one turn of session `s2`.
fn conversation() -> Vec<Document> {
  let turn = |id: &str, text: &str, session: &str| with(doc(id, text), |d| d.session = Some(session.into()));
  vec![
    turn("t1", "Mia: Three hundred days of Turkish on the app", "s1"),
    turn("t2", "Jonas: A foreign language at last! How hard is the grammar?", "s1"),
    turn("t3", "Mia: The supermarket was out of oat milk again", "s1"),
    turn("t4", "Mia: Anyway, how was the concert?", "s2"),
  ]
}

#[test]
fn memories_next_to_a_match_in_their_session_rank_higher_and_say_why() {
  let index = mem(&conversation());
  // Speakers aside (the query names Mia, whose turns the speaker factor would favour; see
  // `a_named_speaker_puts_their_turns_first_and_says_why`), is-a words (`Turkish` is a
  // language: `isa_words_find_a_memory_for_less_than_its_own_words`) and the asking factor (`t2`
  // and `t4` only ask: `a_memory_that_only_asks_or_wishes_ranks_below_one_that_states`).
  let rank = RankConfig { other_speaker: 1.0, isa: 0.0, only_asks: 1.0, ..RankConfig::default() };
  let opts = || SearchOptions { rank: rank.clone(), ..opts() };
  let r = index.search("which language is Mia learning", &opts()).unwrap();
  // `t2` holds the rarest word; `t1`, `t3` and `t4` hold only `mia`, alike. `t1` and `t3` are
  // `t2`'s neighbours in its session and get a quarter of its BM25 each; `t4` follows `t3` in
  // capture order but in another session, and gets nothing.
  assert_eq!(ids(&r)[0], "t2");
  let mut rest: Vec<&str> = ids(&r)[1..3].to_vec();
  rest.sort_unstable();
  assert_eq!(rest, ["t1", "t3"]);
  assert_eq!(ids(&r)[3], "t4");
  let lender = r.hits[0].explain.bm25 / r.hits[0].explain.bm25_max;
  for h in &r.hits[1..3] {
    assert_eq!(h.explain.context_from, ["t2"]);
    assert!((h.explain.context - 0.25 * lender).abs() < 1e-12);
  }
  // `t2` gets from both `t1` and `t3`; `t4` from nobody.
  let mut from = r.hits[0].explain.context_from.clone();
  from.sort_unstable();
  assert_eq!(from, ["t1", "t3"]);
  assert!(r.hits[3].explain.context_from.is_empty() && r.hits[3].explain.context == 0.0);
  for h in &r.hits {
    let e = &h.explain;
    assert!((h.score - (e.relevance + e.context).min(1.0) * e.recency * e.importance).abs() < 1e-12);
    assert_eq!((e.speaker, e.period), (1.0, 1.0));
  }

  // Context reorders what the words found, and brings back nothing else: `t1` and `t3` hold no
  // word of this query, though `t2` does.
  assert_eq!(ids(&index.search("which language", &opts()).unwrap()), ["t2"]);
  // Plain BM25, or a context share of 0: of the three `mia` turns the shortest, `t4`, ranks
  // first (BM25's length normalisation); context is what put `t1` and `t3` above it.
  for rank in [RankConfig::bm25_only(), RankConfig { context: 0.0, isa: 0.0, only_asks: 1.0, ..RankConfig::default() }]
  {
    let r = index.search("which language is Mia learning", &SearchOptions { rank, ..opts() }).unwrap();
    assert_eq!(ids(&r)[..2], ["t2", "t4"]);
    assert!(r.hits.iter().all(|h| h.explain.context == 0.0));
  }
  // Memories without a session lend nothing and get nothing.
  let loose: Vec<Document> = conversation().into_iter().map(|d| with(d, |d| d.session = None)).collect();
  let r = mem(&loose).search("which language is Mia learning", &opts()).unwrap();
  assert!(r.hits.iter().all(|h| h.explain.context == 0.0 && h.explain.context_from.is_empty()));
}

#[test]
fn context_never_comes_from_or_goes_to_a_memory_the_query_may_not_see() {
  // `t2` (the match on the rare word) belongs to another agent: a search scoped to `mia` must
  // not rank her turns by it, or their order would tell what the other agent's memory says.
  // (Is-a words aside: through them `Turkish` in `t1` is a language; and the asking factor, which
  // would put `t4` below the others.)
  let opts = || SearchOptions { rank: RankConfig { isa: 0.0, only_asks: 1.0, ..RankConfig::default() }, ..opts() };
  let docs: Vec<Document> = conversation()
    .into_iter()
    .map(|d| with(d, |d| d.agent_id = Some(if d.id == "t2" { "jonas" } else { "mia" }.into())))
    .collect();
  let index = mem(&docs);
  let scoped = SearchOptions { agents: Some(vec!["mia".into()]), ..opts() };
  let r = index.search("which language is Mia learning", &scoped).unwrap();
  assert_eq!(ids(&r)[0], "t4", "ranked as without context");
  assert!(r.hits.iter().all(|h| h.explain.context == 0.0));
  // The same for the other filters: kinds, `since`, forgotten memories.
  let t2_decision: Vec<Document> = conversation()
    .into_iter()
    .map(|d| with(d, |d| d.kind = if d.id == "t2" { MemoryKind::Decision } else { MemoryKind::Interaction }))
    .collect();
  let only = SearchOptions { kinds: Some(vec![MemoryKind::Interaction]), ..opts() };
  let r = mem(&t2_decision).search("which language is Mia learning", &only).unwrap();
  assert!(r.hits.iter().all(|h| h.explain.context == 0.0), "a kind left out lends nothing");
  let mut index = mem(&conversation());
  index.remove(["t2"]).unwrap();
  let r = index.search("which language is Mia learning", &opts()).unwrap();
  assert!(
    r.hits.iter().all(|h| !h.explain.context_from.contains(&"t2".to_string())),
    "a forgotten memory lends nothing"
  );
  // `t1` and `t3` are next to each other now, and both match: each lends to the other.
  let t1 = r.hits.iter().find(|h| h.id == "t1").unwrap();
  assert_eq!(t1.explain.context_from, ["t3"]);
}

#[test]
fn session_tags_are_stable_and_never_zero() {
  // The tag is stored in index files: it must not change between processes or versions.
  assert_eq!(super::index::session_tag("c01-s03"), super::index::session_tag("c01-s03"));
  assert_ne!(super::index::session_tag("c01-s03"), super::index::session_tag("c01-s04"));
  let tags: std::collections::HashSet<u16> = (0..5000).map(|i| super::index::session_tag(&format!("s{i}"))).collect();
  assert!(!tags.contains(&0));
  assert!(tags.len() > 4900, "{}", tags.len());
}

/// A two-person transcript: each turn `Name: text`, one a day from 2026-03-29 (so the last two
/// fall in April 2026).
fn transcript() -> Vec<Document> {
  let day0 = crate::timestamp::parse_rfc3339_ms("2026-03-29T09:00:00Z", "t").unwrap();
  [
    "Mia: We finally adopted a rescue dog last weekend, a little beagle",
    "Jonas: My brother adopted a dog too",
    "Mia: The dog sleeps all day",
    "Jonas: Did the dog settle in?",
    "Mia: Jonas, the dog chewed my shoes",
  ]
  .iter()
  .enumerate()
  .map(|(i, text)| {
    with(doc(&format!("t{}", i + 1), text), |d| {
      d.timestamp_ms = day0 + i as i64 * DAY_MS as i64;
      d.session = Some("s".into());
    })
  })
  .collect()
}

#[test]
fn a_named_speaker_puts_their_turns_first_and_says_why() {
  let index = mem(&transcript());
  let bm25 = |q: &str| {
    let rank = RankConfig { other_speaker: 1.0, outside_period: 1.0, ..RankConfig::default() };
    index.search(q, &SearchOptions { rank, ..opts() }).unwrap()
  };
  // Without the speaker factor, Jonas's turn about his brother's dog (short, with both words)
  // outranks Mia's own.
  assert_eq!(ids(&bm25("which dog did Mia adopt"))[0], "t2");
  let r = index.search("which dog did Mia adopt", &opts()).unwrap();
  assert_eq!(ids(&r)[0], "t1");
  for h in &r.hits {
    let e = &h.explain;
    let mias = ["t1", "t3", "t5"].contains(&h.id.as_str());
    assert_eq!(e.speaker, if mias { 1.0 } else { 0.6 }, "{}", h.id);
    let score = (e.relevance + e.context).min(1.0) * e.recency * e.importance * e.speaker * e.period * e.mood;
    assert!((h.score - score).abs() < 1e-12);
  }
  // `Mia's` names her too; a label word inside a turn (`Jonas, ...` in t5) is not a label.
  let r = index.search("Mia's dog", &opts()).unwrap();
  assert!(r.hits.iter().all(|h| h.explain.speaker == if h.id == "t2" || h.id == "t4" { 0.6 } else { 1.0 }));
  // Two speakers named, or none, or a name written in lower case (a common word, as `goal` in
  // memories that start `Goal: ...`): no factor.
  for q in ["did Mia or Jonas adopt a dog", "which dog was adopted", "which dog did mia adopt"] {
    assert!(index.search(q, &opts()).unwrap().hits.iter().all(|h| h.explain.speaker == 1.0), "{q}");
  }
  // A speaker only another agent's memories have is no speaker for this caller.
  let mut scoped = MemoryIndex::new(AnalyzerConfig::default());
  for d in transcript() {
    let mine = d.text.starts_with("Mia");
    scoped.add(&with(d, |d| d.agent_id = Some(if mine { "me" } else { "other" }.into()))).unwrap();
  }
  let mine_only = SearchOptions { agents: Some(vec!["me".into()]), include_unassigned: false, ..opts() };
  let r = scoped.search("what did Jonas say about the dog", &mine_only).unwrap();
  assert!(!r.hits.is_empty() && r.hits.iter().all(|h| h.explain.speaker == 1.0));
}

#[test]
fn a_pronoun_points_at_the_speaker_of_its_kind_and_says_why() {
  let index = mem(&transcript());
  let speaker_of = |q: &str| -> Vec<(String, f64)> {
    index.search(q, &opts()).unwrap().hits.into_iter().map(|h| (h.id, h.explain.speaker)).collect()
  };
  // "she" is Mia (a woman's name in the table), "he" Jonas: the other's turns get the factor.
  let hits = speaker_of("which dog did she adopt");
  assert_eq!(hits[0].0, "t1");
  for (id, factor) in &hits {
    assert_eq!(*factor, if ["t1", "t3", "t5"].contains(&id.as_str()) { 1.0 } else { 0.6 }, "{id}");
  }
  let hits = speaker_of("did his dog settle in");
  assert!(hits.iter().all(|(id, f)| *f == if ["t2", "t4"].contains(&id.as_str()) { 1.0 } else { 0.6 }));
  // Both kinds of pronoun, or a name that says whom: the pronoun is not read.
  assert!(speaker_of("did he give her a dog").iter().all(|(_, f)| *f == 1.0));
  assert!(speaker_of("which dog did Jonas say she adopted")
    .iter()
    .all(|(id, f)| *f == if ["t2", "t4"].contains(&id.as_str()) { 1.0 } else { 0.6 }));
  // Speakers whose names tell nothing (given to both, or to no one counted) are no one's `she`.
  let unknown: Vec<Document> = transcript()
    .into_iter()
    .map(|d| with(d, |d| d.text = d.text.replacen("Mia:", "Robin:", 1).replacen("Jonas:", "Xq:", 1)))
    .collect();
  let index = mem(&unknown);
  assert!(index.search("which dog did she adopt", &opts()).unwrap().hits.iter().all(|h| h.explain.speaker == 1.0));
}

#[test]
fn a_turn_that_speaks_only_to_its_listener_is_not_its_speakers_account() {
  let docs = [
    doc("own", "Tariq: Finished my first race today, the Lakeside 10K, with blisters on my feet"),
    doc("to-her", "Tariq: A race finished, you deserved that medal"),
    doc("hers", "Leila: I finished my first race, a 5K"),
  ];
  let index = mem(&docs);
  for q in ["which race did Tariq finish", "which race did he finish"] {
    let r = index.search(q, &opts()).unwrap();
    assert_eq!(ids(&r)[0], "own", "{q}");
    for h in &r.hits {
      assert_eq!(h.explain.speaker, if h.id == "own" { 1.0 } else { 0.6 }, "{q} {}", h.id);
    }
  }
  // Its label's words are still words of it.
  assert!(ids(&index.search("tariq medal", &opts()).unwrap()).contains(&"to-her"));
}

#[test]
fn a_memory_that_only_asks_or_wishes_ranks_below_one_that_states() {
  let docs = [
    doc("asks", "Zoe: A new job! How does the new job feel?"),
    doc("wishes", "Zoe: I want to find a new job, any new job"),
    doc("states", "Zoe: My new job starts Monday."),
  ];
  let index = mem(&docs);
  let r = index.search("new job", &opts()).unwrap();
  assert_eq!(ids(&r), ["states", "asks", "wishes"]);
  // A decision says what it says, whatever its grammar: moods are read in interactions only.
  let decided = mem(&[with(doc("d", "We should use Postgres for billing"), |d| d.kind = MemoryKind::Decision)]);
  assert_eq!(decided.search("postgres billing", &opts()).unwrap().hits[0].explain.mood, 1.0);
  let factor = |r: &SearchResults, id: &str| r.hits.iter().find(|h| h.id == id).unwrap().explain.mood;
  assert_eq!([factor(&r, "states"), factor(&r, "asks"), factor(&r, "wishes")], [1.0, 0.7, 0.6]);
  // A query about wishes or plans is answered by one: no factor for it then.
  let r = index.search("which new job does Zoe want", &opts()).unwrap();
  assert_eq!(ids(&r)[0], "wishes");
  assert_eq!(factor(&r, "wishes"), 1.0);
  // Without the factors the two that repeat `job` are first.
  let off = SearchOptions { rank: RankConfig { only_asks: 1.0, wishes: 1.0, ..RankConfig::default() }, ..opts() };
  let r = index.search("new job", &off).unwrap();
  assert_eq!(ids(&r)[2], "states");
  assert!(r.hits.iter().all(|h| h.explain.mood == 1.0));
  for bad in
    [RankConfig { only_asks: 0.0, ..RankConfig::default() }, RankConfig { wishes: 1.5, ..RankConfig::default() }]
  {
    let bad = SearchOptions { rank: bad, ..opts() };
    assert_eq!(index.search("new job", &bad).unwrap_err().code(), "E_INVALID_ARGUMENT");
  }
}

#[test]
fn speaker_labels_are_terms_of_their_own_and_do_not_count_in_lengths() {
  let analyzer = Analyzer::new(AnalyzerConfig::default());
  let d = AnalyzedDoc::new(&analyzer, &doc("a", "Dr. Ada Lima: the deploy failed")).unwrap();
  let terms: Vec<&str> = d.terms.iter().map(|(t, _)| t.as_str()).filter(|t| !t.starts_with(['~', '^'])).collect();
  // `@:she`: Ada is a woman's name (see `speaker::label_pronoun_term`).
  assert_eq!(terms, ["dr", "ada", "lima", "deploy", "fail", "@dr", "@ada", "@lima", "@:she"]);
  assert_eq!(d.len(), 5);
  for text in
    ["10:30 standup moved", "https://example.com: down", "Note:x", "One Two Three Four: x", ": x", "Standup notes: x"]
  {
    let d = AnalyzedDoc::new(&analyzer, &doc("b", text)).unwrap();
    assert!(d.terms.iter().all(|(t, _)| !t.starts_with('@')), "{text}");
  }
  // No query word is a label term: `@mia` in a query is the word `mia`.
  let index = mem(&transcript());
  let r = index.search("@mia", &opts()).unwrap();
  assert_eq!(r.terms.iter().map(|t| t.term.as_str()).collect::<Vec<_>>(), ["mia"]);
}

#[test]
fn a_named_month_prefers_what_was_captured_then() {
  let index = mem(&transcript());
  // t4 and t5 are from April 2026, the rest from March.
  let r = index.search("what did the dog chew in April 2026", &opts()).unwrap();
  for h in &r.hits {
    let april = h.id == "t4" || h.id == "t5";
    assert_eq!(h.explain.period, if april { 1.0 } else { 0.5 }, "{}", h.id);
  }
  assert_eq!(ids(&r)[0], "t5");
  let r = index.search("the dog in March 2026", &opts()).unwrap();
  assert!(r.hits.iter().all(|h| h.explain.period == if h.id == "t4" || h.id == "t5" { 0.5 } else { 1.0 }));
  let off = RankConfig { outside_period: 1.0, ..RankConfig::default() };
  let r = index.search("the dog in March 2026", &SearchOptions { rank: off, ..opts() }).unwrap();
  assert!(r.hits.iter().all(|h| h.explain.period == 1.0));
  // Out-of-range factors are refused, naming the option.
  let bad = RankConfig { outside_period: 0.0, ..RankConfig::default() };
  let err = index.search("dog", &SearchOptions { rank: bad, ..opts() }).unwrap_err();
  assert!(err.to_string().contains("outsidePeriod"));
}

/// What the log costs once decoded is bounded by the index's size, whatever the memories hold:
/// memories of distinct words cost 15 to 20 times their log bytes in memory (each new term is a
/// map entry, a string and a posting list), so the log is also folded when its decoded form
/// reaches the index's size on disk (or [`DELTA_HEAP_BYTES`]). Six memories of 4,096 distinct words each
/// (what a 1 MiB capture of distinct words keeps) used to leave 240 KiB of log that decoded to
/// about 5 MiB at every open.
#[test]
fn the_decoded_log_stays_bounded_whatever_the_memories_hold() {
  let (_t, dir) = tmp();
  let index = open_unsynced(&dir);
  let per_memory = MAX_TERMS_PER_DOCUMENT;
  for i in 0..12 {
    let text = distinct_words(per_memory, i * per_memory).join(" ");
    index.add(&doc(&format!("d{i}"), &text)).unwrap();
    // A reader opening the files now holds the log decoded.
    let reader = open(&dir);
    let status = reader.status().unwrap();
    let on_disk = (status.base_bytes + status.log_bytes) as f64;
    let bound = (DELTA_HEAP_BYTES as f64).max(on_disk);
    assert!(status.heap_bytes as f64 <= bound, "memory {i}: {} held, {on_disk} on disk", status.heap_bytes);
  }
  assert_eq!(index.status().unwrap().documents, 12);
  assert_eq!(ids(&open(&dir).search(&distinct_words(1, 5 * per_memory + 7)[0], &opts()).unwrap()), ["d5"]);
}

/// A consolidation folds the log half-way to the bound at which an add would (`compaction_due`),
/// so that captures seldom pay for the rewrite of the base.
#[test]
fn compaction_is_due_half_way_to_the_fold() {
  let (_t, dir) = tmp();
  let index = open_unsynced(&dir);
  let words = distinct_words(3000, 11);
  let mut i = 0;
  while index.status().unwrap().log_bytes < COMPACT_LOG_BYTES / 2 {
    let text = words[(i * 50) % 2900..(i * 50) % 2900 + 100].join(" ");
    index.add(&doc(&format!("d{i}"), &text)).unwrap();
    i += 1;
  }
  assert!(index.compaction_due().unwrap());
  index.compact().unwrap();
  assert!(!index.compaction_due().unwrap());
  assert_eq!(index.status().unwrap().documents, i);
}

/// A memory is found by a word it does not use but a related one (`relocated` for `moved`),
/// for less than the word itself would count, and explain says which match was related.
#[test]
fn related_words_find_a_memory_for_less_than_its_own_words() {
  let analyzer = Analyzer::new(AnalyzerConfig::default());
  let moved = doc("moved", "My colleague Sunita just packed up and moved to Melbourne");
  let analysed = AnalyzedDoc::new(&analyzer, &moved).unwrap();
  let related: Vec<(&str, u32)> =
    analysed.terms.iter().filter(|(t, _)| t.starts_with('~')).map(|(t, s)| (t.as_str(), *s)).collect();
  assert!(related.iter().any(|(t, s)| *t == "~reloc" && (60..=100).contains(s)), "{related:?}");
  assert!(related.iter().all(|(t, _)| !analysed.terms.iter().any(|(own, _)| *own == t[1..])), "never a word it holds");
  let own: u32 = analysed.terms.iter().filter(|(t, _)| !t.starts_with(['~', '^'])).map(|(_, n)| n).sum();
  assert!(own > 0 && !related.is_empty());
  assert_eq!(analysed.len(), own, "related words do not count in its length");

  let relocated = doc("relocated", "Sunita relocated to Melbourne last spring");
  let index = mem(&[moved, relocated, doc("lunch", "Lunch at the canteen was fine")]);
  let r = index.search("who relocated", &opts()).unwrap();
  assert_eq!(ids(&r), ["relocated", "moved"], "the word itself first, then the related one");
  let m = &r.hits[1].explain.matched;
  assert_eq!(m.len(), 1);
  assert_eq!((m[0].term.as_str(), m[0].tf), ("reloc", 0));
  let similarity = m[0].related.expect("a related match says so");
  assert!((0.6..=1.0).contains(&similarity), "{similarity}");
  assert_eq!(r.hits[0].explain.matched[0].related, None);
  assert_eq!(r.terms[0].df, 2, "df counts memories holding it either way");
  // Off, only the word itself finds.
  let words_only = SearchOptions { rank: RankConfig { related: 0.0, ..RankConfig::default() }, ..opts() };
  assert_eq!(ids(&index.search("who relocated", &words_only).unwrap()), ["relocated"]);
  // No text analyses to a related-word term: `~reloc` in a query is the word `reloc`.
  let r = index.search("~reloc", &opts()).unwrap();
  assert_eq!(r.terms.iter().map(|t| t.term.as_str()).collect::<Vec<_>>(), ["reloc"]);
}

/// A word related to more than one memory in eight (and to more than 64) counts only as itself:
/// it says little about any of them, and its list would be the longest to read.
#[test]
fn a_related_word_of_too_many_memories_does_not_count() {
  let moved = |n: usize| -> Vec<Document> {
    (0..n).map(|i| doc(&format!("m{i}"), &format!("Colleague number {i} packed up and moved abroad"))).collect()
  };
  let few = mem(&moved(50));
  assert_eq!(few.search("relocated", &opts()).unwrap().hits.len(), 10, "50 memories: related words count");
  let many = mem(&moved(100));
  let r = many.search("relocated", &opts()).unwrap();
  assert!(r.hits.is_empty(), "100 memories sharing it: only the word itself counts");
  assert_eq!(r.terms[0].df, 0);
}

/// A memory is found by a category its words belong to (`language` for `Turkish`, WordNet's
/// is-a), below a memory holding the word itself, and explain says which word it came through.
#[test]
fn isa_words_find_a_memory_for_less_than_its_own_words() {
  let analyzer = Analyzer::new(AnalyzerConfig::default());
  let turkish = doc("turkish", "Zoe: Three hundred days of Turkish on the app now");
  let analysed = AnalyzedDoc::new(&analyzer, &turkish).unwrap();
  let isa: Vec<&str> = analysed.terms.iter().filter(|(t, _)| t.starts_with('^')).map(|(t, _)| t.as_str()).collect();
  assert!(isa.contains(&"^languag"), "{isa:?}");
  assert!(isa.iter().all(|t| !analysed.terms.iter().any(|(own, _)| *own == t[1..])), "never a word it holds");
  let own: u32 = analysed.terms.iter().filter(|(t, _)| !t.starts_with(['^', '~', '@'])).map(|(_, n)| n).sum();
  assert_eq!(analysed.len(), own, "is-a words do not count in its length");

  let index = mem(&[
    turkish,
    doc("language", "Zoe: Learning a language takes patience"),
    doc("lunch", "Lunch at the canteen was fine"),
  ]);
  let r = index.search("which language", &opts()).unwrap();
  assert_eq!(ids(&r), ["language", "turkish"], "the word itself first, then the member of its kind");
  let m = &r.hits[1].explain.matched;
  assert_eq!(m.len(), 1);
  assert_eq!((m[0].term.as_str(), m[0].tf, m[0].related), ("languag", 0, None));
  assert_eq!(m[0].isa.as_deref(), Some("turkish"), "explain names the memory's word");
  assert_eq!(r.hits[0].explain.matched[0].isa, None);
  assert!(m[0].bm25 < r.hits[0].explain.matched[0].bm25);
  assert_eq!(r.terms[0].df, 2, "df counts memories holding it either way");
  // Off, only the word itself finds.
  let words_only = SearchOptions { rank: RankConfig { isa: 0.0, ..RankConfig::default() }, ..opts() };
  assert_eq!(ids(&index.search("which language", &words_only).unwrap()), ["language"]);
  // No text analyses to an is-a term: `^languag` in a query is the word `languag`.
  let r = index.search("^languag", &opts()).unwrap();
  assert_eq!(r.terms.iter().map(|t| t.term.as_str()).collect::<Vec<_>>(), ["languag"]);
}

/// Two words in a row that WordNet lists as one lemma (`water polo`) get its is-a words, and
/// plurals find their singular's.
#[test]
fn isa_words_of_two_word_lemmas_and_plurals() {
  let index = mem(&[
    doc("polo", "I joined the Thursday water polo group"),
    doc("eagles", "Two eagles crossed the trail"),
    doc("lunch", "Lunch at the canteen was fine"),
  ]);
  let r = index.search("sport", &opts()).unwrap();
  assert_eq!(ids(&r), ["polo"]);
  assert_eq!(r.hits[0].explain.matched[0].isa.as_deref(), Some("water polo"));
  let r = index.search("bird", &opts()).unwrap();
  assert_eq!(ids(&r), ["eagles"]);
  assert_eq!(r.hits[0].explain.matched[0].isa.as_deref(), Some("eagle"));
}

/// A speaker label's words name a person, not a thing: `John:` gets no is-a or related words
/// (WordNet's first `john` is a toilet, a room); the same word later in the text does.
#[test]
fn a_speaker_label_gets_no_isa_or_related_words() {
  let index = mem(&[
    doc("label", "John: the weather was lovely today"),
    doc("label-again", "John: we finally fixed the john"),
    doc("no-label", "the john is broken again"),
  ]);
  let r = index.search("room", &opts()).unwrap();
  let mut found = ids(&r);
  found.sort_unstable();
  assert_eq!(found, ["label-again", "no-label"]);
  for hit in &r.hits {
    assert!(
      hit.explain.matched.iter().any(|m| m.isa.as_deref() == Some("john")),
      "{}: {:?}",
      hit.id,
      hit.explain.matched
    );
  }
  // Nor by a related word of the name (GloVe's neighbours of `john` are other names).
  assert!(!ids(&index.search("paul", &opts()).unwrap()).contains(&"label"));
}

/// A word capitalised inside a sentence is a name: read only by the senses WordNet writes as a
/// name (`Turkish` a language), never as the common noun (`John` a toilet, a room) or an acronym
/// (`SAM` a missile). Starting a sentence, a capital says nothing (`Eagles ...` are birds).
#[test]
fn a_name_inside_a_sentence_is_not_read_as_a_common_noun() {
  let index = mem(&[
    doc("names", "Yesterday I had lunch with John and Sam downtown"),
    doc("turkish", "Three hundred days of Turkish on the app"),
    doc("eagles", "Eagles crossed the trail"),
    doc("john", "the john is broken again"),
  ]);
  assert_eq!(ids(&index.search("room", &opts()).unwrap()), ["john"]);
  assert!(ids(&index.search("weapon", &opts()).unwrap()).is_empty());
  assert_eq!(ids(&index.search("language", &opts()).unwrap()), ["turkish"]);
  assert_eq!(ids(&index.search("bird", &opts()).unwrap()), ["eagles"]);
}

/// A memory indexes at most `MAX_ISA_PER_DOCUMENT` is-a terms, at most `ISA_PER_WORD` per word.
#[test]
fn isa_words_are_capped_per_word_and_per_memory() {
  let analyzer = Analyzer::new(AnalyzerConfig::default());
  let one = AnalyzedDoc::new(&analyzer, &doc("one", "beagle")).unwrap();
  let per_word = one.terms.iter().filter(|(t, _)| t.starts_with('^')).count();
  assert!(per_word > 0 && per_word <= index::ISA_PER_WORD, "{per_word}");
  let nouns = "violin guitar eagle salmon beagle tennis kayak pumpkin sedan turkish spanish cathedral \
    hammer diamond tuberculosis hurricane lawyer surgeon carpenter mortgage sonnet telescope volcano \
    glacier cinnamon broccoli chess jazz ballet penicillin bicycle tractor submarine parrot oak tulip";
  let many = AnalyzedDoc::new(&analyzer, &doc("many", nouns)).unwrap();
  let isa = many.terms.iter().filter(|(t, _)| t.starts_with('^')).count();
  assert_eq!(isa, MAX_ISA_PER_DOCUMENT, "the cap holds, and these nouns reach it");
}

/// An is-a word of more than one visible memory in eight (and of more than 64) counts only as
/// itself: the query's reading of its list stays bounded.
#[test]
fn an_isa_word_of_too_many_memories_does_not_count() {
  let violins = |n: usize| -> Vec<Document> {
    (0..n).map(|i| doc(&format!("m{i}"), &format!("Player number {i} practised the violin"))).collect()
  };
  let few = mem(&violins(50));
  assert_eq!(few.search("instrument", &opts()).unwrap().hits.len(), 10, "50 memories: is-a words count");
  let many = mem(&violins(100));
  let r = many.search("instrument", &opts()).unwrap();
  assert!(r.hits.is_empty(), "100 memories sharing it: only the word itself counts");
  assert_eq!(r.terms[0].df, 0);
  // The same through the filtered path (a scope), which reads the lists one memory at a time.
  let scoped = SearchOptions { kinds: Some(vec![MemoryKind::Interaction]), ..opts() };
  assert!(many.search("instrument", &scoped).unwrap().hits.is_empty());
  assert_eq!(few.search("instrument", &scoped).unwrap().hits.len(), 10);
}

/// Forgetting a memory removes its is-a terms with it, from the files too.
#[test]
fn forgetting_removes_isa_terms() {
  let (_t, dir) = tmp();
  let index = open(&dir);
  index.add(&doc("keep", "We talked about lunch")).unwrap();
  index.compact().unwrap();
  let isa_terms = |dir: &Path| vocabulary(dir).into_iter().filter(|t| t.starts_with('^')).collect::<Vec<_>>();
  let before = isa_terms(&dir);
  index.add(&doc("gone", "I practised the violin")).unwrap();
  index.compact().unwrap();
  assert!(isa_terms(&dir).iter().any(|t| t == "^instrument"), "{:?}", isa_terms(&dir));
  assert_eq!(ids(&index.search("instrument", &opts()).unwrap()), ["gone"]);
  assert_eq!(index.remove(["gone"]).unwrap(), 1);
  assert_eq!(isa_terms(&dir), before, "only the kept memory's is-a terms are left");
  assert!(index.search("instrument", &opts()).unwrap().hits.is_empty());
}
