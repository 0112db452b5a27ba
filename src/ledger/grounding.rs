//! The grounding check and negative grounding (seed 000 §4.2 steps 1-2, §4.5).
//!
//! **Grounding ratio.** The trajectory is parsed (never grepped: the original counted the
//! substring `"phase":"cite"` in JSON and crashed on zero counts, and its checkpoint then read
//! the crash as a pass). Over the `cite` records: `ratio = grounded / total`, where a claim is
//! grounded when it says `grounding: citation` and its evidence has a non-empty quote and an
//! identifier that parses ([`super::identifier`]); with a project root to check against, the
//! identifier must also resolve and its lines must contain the quote (whitespace runs compared
//! as one space). `assumption` claims count in the total and are never grounded. A `cite` record
//! without `evidence` may carry its citation inside the claim in the seed's format (seed 000
//! §4.5: `` `quote` [${PROJECT_ROOT}/path:45] ``), checked the same way.
//!
//! A `grounding_check` line (the outcome of an earlier check, as the seed's framework also
//! writes it, with its own `grounding_ratio` and `total_claims`) is read but never counted nor
//! trusted: the ratio is always recomputed from the `cite` records, so a recorded `pass` cannot
//! stand in for claims that are not grounded, and a log holding only such lines has zero claims.
//!
//! | case | status | exit |
//! |---|---|---|
//! | `disabled` | `disabled` (nothing read) | 0 |
//! | no trajectory file, or no `cite` record (zero claims) | `pass`, ratio `None` | 0 |
//! | ratio >= threshold | `pass` | 0 |
//! | ratio < threshold, `warn` | `warn` | 0 |
//! | ratio < threshold, `strict` | `fail` | 1 (blocks) |
//! | any error: unreadable file, damaged line, an empty file, a panic | `error` | 2 (blocks) |
//!
//! An empty trajectory file (no byte but whitespace) is an error, not zero claims: the library
//! never writes one, so it means a truncation. Errors block in every mode but `disabled`.
//!
//! **Negative grounding** (ghost features). A claimed absence ("there is no rate limiter") holds
//! only when at least two *different* queries (their analysed terms differ, so a reworded copy
//! does not count) each find no hit scoring at or above the threshold. The score is the search
//! module's BM25 relevance over the project's text, normalised to [0, 1] by the most a document
//! could score for that query (`bm25 / bm25_max`, see [`crate::search::rank`]): a short chunk
//! holding the one rare word of a one-word query scores about 0.5, so the default threshold 0.4
//! counts it as found. [`CodeIndex`] indexes the project in chunks of [`CHUNK_LINES`] lines, each
//! named by the lightweight identifier of its lines, so a hit says where the "ghost" lives.

use std::path::Path;

use crate::error::{invalid, LoaError, Result};
use crate::fsutil::StateDir;
use crate::memory::MemoryKind;
use crate::redact::{redact, RedactOptions};
use crate::search::{Document, MemoryIndex, RankConfig, SearchOptions};

use super::identifier::Identifier;
use super::options::GroundingEnforcement;
use super::trajectory::{Event, Grounding, TrajectoryRead};

/// What the check decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroundingStatus {
  Pass,
  Warn,
  Fail,
  Disabled,
  Error,
}

impl GroundingStatus {
  /// The status as written in the trajectory.
  pub fn as_str(self) -> &'static str {
    match self {
      GroundingStatus::Pass => "pass",
      GroundingStatus::Warn => "warn",
      GroundingStatus::Fail => "fail",
      GroundingStatus::Disabled => "disabled",
      GroundingStatus::Error => "error",
    }
  }

  /// The pre-clear contract: 0 permit, 1 block, 2 error (which also blocks).
  pub fn exit_code(self) -> i32 {
    match self {
      GroundingStatus::Pass | GroundingStatus::Warn | GroundingStatus::Disabled => 0,
      GroundingStatus::Fail => 1,
      GroundingStatus::Error => 2,
    }
  }
}

/// A claim that did not count as grounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ungrounded {
  /// Its line in the trajectory.
  pub line: u64,
  pub reason: String,
}

/// The outcome of a grounding check.
#[derive(Debug, Clone, PartialEq)]
pub struct GroundingReport {
  pub status: GroundingStatus,
  pub total_claims: u64,
  pub grounded_claims: u64,
  pub assumptions: u64,
  /// `None` with zero claims (and when not computed).
  pub ratio: Option<f64>,
  pub threshold: f64,
  pub ungrounded: Vec<Ungrounded>,
  /// Why the status is `error` (damaged lines by number, the failing operation's code).
  pub errors: Vec<String>,
}

impl GroundingReport {
  /// The pre-clear exit code.
  pub fn exit_code(&self) -> i32 {
    self.status.exit_code()
  }

  fn error(threshold: f64, errors: Vec<String>) -> GroundingReport {
    GroundingReport {
      status: GroundingStatus::Error,
      total_claims: 0,
      grounded_claims: 0,
      assumptions: 0,
      ratio: None,
      threshold,
      ungrounded: Vec::new(),
      errors,
    }
  }
}

fn squash(text: &str) -> String {
  text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Why a cited claim is not grounded, or `None` when it is.
fn check_citation(
  grounding: Grounding,
  evidence: Option<&super::trajectory::Evidence>,
  root: Option<&Path>,
  redaction: &RedactOptions,
) -> Option<String> {
  match grounding {
    Grounding::Assumption => return Some("marked as an assumption".into()),
    Grounding::None => return Some("no grounding".into()),
    Grounding::Citation => {}
  }
  let Some(evidence) = evidence else { return Some("cited without evidence".into()) };
  if evidence.quote.trim().is_empty() {
    return Some("evidence without a quote".into());
  }
  let id = match Identifier::parse(&evidence.identifier, root.unwrap_or(Path::new("/nonexistent"))) {
    Ok(id) => id,
    Err(e) => return Some(format!("evidence identifier refused ({})", e.code())),
  };
  let root = root?;
  match id.resolve(root) {
    Ok(resolved) => {
      let code = resolved.lines.join("\n");
      let quote = squash(&evidence.quote);
      // The trajectory keeps quotes redacted: a quote of code that holds an address or a key
      // is compared with the code redacted alike.
      let found = squash(&code).contains(&quote) || squash(&redact(&code, redaction).text).contains(&quote);
      (!found).then(|| format!("the quote is not at {id}"))
    }
    Err(e) => Some(format!("evidence identifier does not resolve ({})", e.code())),
  }
}

/// Computes the report from a parsed trajectory (see the module docs). `root`: the project root
/// to check quotes against; `None` checks their shape only.
pub fn evaluate(
  read: &TrajectoryRead,
  enforcement: GroundingEnforcement,
  threshold: f64,
  root: Option<&Path>,
) -> GroundingReport {
  evaluate_with(read, enforcement, threshold, root, &RedactOptions::default())
}

/// [`evaluate`] for a trajectory whose quotes were redacted with `redaction`: a quote also
/// matches the code redacted with the same options.
pub fn evaluate_with(
  read: &TrajectoryRead,
  enforcement: GroundingEnforcement,
  threshold: f64,
  root: Option<&Path>,
  redaction: &RedactOptions,
) -> GroundingReport {
  if enforcement == GroundingEnforcement::Disabled {
    let mut r = GroundingReport::error(threshold, Vec::new());
    r.status = GroundingStatus::Disabled;
    return r;
  }
  if !(threshold.is_finite() && (0.0..=1.0).contains(&threshold)) {
    return GroundingReport::error(threshold, vec!["the threshold must be a number between 0 and 1".into()]);
  }
  let mut errors: Vec<String> =
    read.damaged.iter().map(|d| format!("trajectory line {}: {}", d.line, d.reason)).collect();
  if read.exists && read.records.is_empty() && read.damaged.is_empty() {
    errors.push("the trajectory file is empty (truncated?)".into());
  }
  if !errors.is_empty() {
    return GroundingReport::error(threshold, errors);
  }
  let (mut total, mut grounded, mut assumptions) = (0u64, 0u64, 0u64);
  let mut ungrounded = Vec::new();
  for (line, record) in &read.records {
    if let Event::Cite { claim, grounding, evidence } = &record.event {
      total += 1;
      assumptions += u64::from(*grounding == Grounding::Assumption);
      // The seed writes the citation inside the claim; an `evidence` member wins when present.
      let inline = if evidence.is_none() { super::trajectory::Evidence::from_claim(claim) } else { None };
      match check_citation(*grounding, evidence.as_ref().or(inline.as_ref()), root, redaction) {
        None => grounded += 1,
        Some(reason) => ungrounded.push(Ungrounded { line: *line, reason }),
      }
    }
  }
  let ratio = (total > 0).then(|| grounded as f64 / total as f64);
  let status = match ratio {
    None => GroundingStatus::Pass,
    Some(r) if r >= threshold => GroundingStatus::Pass,
    Some(_) if enforcement == GroundingEnforcement::Warn => GroundingStatus::Warn,
    Some(_) => GroundingStatus::Fail,
  };
  GroundingReport {
    status,
    total_claims: total,
    grounded_claims: grounded,
    assumptions,
    ratio,
    threshold,
    ungrounded,
    errors,
  }
}

/// Runs `f`, turning an error or a panic into an `error` report (exit 2): a check that cannot
/// finish never passes.
pub fn guarded(threshold: f64, f: impl FnOnce() -> Result<GroundingReport>) -> GroundingReport {
  match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
    Ok(Ok(report)) => report,
    Ok(Err(e)) => GroundingReport::error(threshold, vec![format!("{}: {e}", e.code())]),
    Err(_) => GroundingReport::error(threshold, vec!["E_INTERNAL: the grounding check panicked".into()]),
  }
}

// ---------------------------------------------------------------------------------------------
// Negative grounding
// ---------------------------------------------------------------------------------------------

/// Lines per indexed chunk of a project file.
pub const CHUNK_LINES: usize = 40;
/// Most files indexed by [`CodeIndex::build`].
pub const MAX_FILES: usize = 20_000;
/// Largest file indexed; larger ones are skipped (and counted).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Deepest directory level walked.
pub const MAX_DEPTH: usize = 32;

/// The project's text, searchable.
#[derive(Debug)]
pub struct CodeIndex {
  index: MemoryIndex,
  /// Files skipped: too large, not UTF-8, over [`MAX_FILES`].
  pub skipped: usize,
}

fn skip_dir(name: &str) -> bool {
  name.starts_with('.') || matches!(name, "node_modules" | "target")
}

impl CodeIndex {
  /// An empty index (add documents with [`CodeIndex::add_text`]).
  pub fn new() -> CodeIndex {
    CodeIndex { index: MemoryIndex::new(Default::default()), skipped: 0 }
  }

  /// Adds `text` as the file `path` (relative to the project root), in chunks.
  pub fn add_text(&mut self, path: &str, text: &str) -> Result<()> {
    let lines: Vec<&str> = text.lines().collect();
    for (i, chunk) in lines.chunks(CHUNK_LINES).enumerate() {
      let start = i * CHUNK_LINES + 1;
      let id = Identifier { path: path.to_string(), start: start as u32, end: (start + chunk.len() - 1) as u32 };
      let doc = Document {
        id: id.to_string(),
        text: chunk.join("\n"),
        kind: MemoryKind::Interaction,
        agent_id: None,
        timestamp_ms: 0,
        instruction: false,
        session: None,
      };
      self.index.add(&doc)?;
    }
    Ok(())
  }

  /// Indexes every regular UTF-8 file below `root` (not following symlinks; skipping dot
  /// directories, `node_modules` and `target`).
  pub fn build(root: &Path) -> Result<CodeIndex> {
    let mut out = CodeIndex::new();
    let mut files = 0usize;
    let mut stack: Vec<(StateDir, String, usize)> = vec![(StateDir::open_root(root)?, String::new(), 0)];
    while let Some((dir, prefix, depth)) = stack.pop() {
      for entry in dir.entries()? {
        let Some(name) = entry.name_str() else { continue };
        let path = if prefix.is_empty() { name.to_string() } else { format!("{prefix}/{name}") };
        if entry.is_dir() {
          if depth < MAX_DEPTH && !skip_dir(name) {
            if let Some(sub) = dir.subdir(name)? {
              stack.push((sub, path, depth + 1));
            }
          }
        } else if entry.is_file() {
          files += 1;
          if files > MAX_FILES {
            out.skipped += 1;
            continue;
          }
          match dir.read(name, MAX_FILE_BYTES) {
            Ok(Some(bytes)) => match String::from_utf8(bytes) {
              Ok(text) => out.add_text(&path, &text)?,
              Err(_) => out.skipped += 1,
            },
            Ok(None) => {}
            Err(LoaError::TooLarge { .. }) => out.skipped += 1,
            Err(e) => return Err(e),
          }
        }
      }
    }
    Ok(out)
  }

  /// The best hit for `query`: its identifier and normalised score, or `None`.
  pub fn best(&self, query: &str) -> Result<Option<(String, f64)>> {
    let mut options = SearchOptions::new(0);
    options.limit = 1;
    options.rank = RankConfig::bm25_only();
    let results = self.index.search(query, &options)?;
    Ok(results.hits.into_iter().next().map(|h| (h.id, h.score)))
  }

  fn terms(&self, query: &str) -> Vec<String> {
    let mut terms = Vec::new();
    self.index.analyzer().analyze(query, |t, _| terms.push(t.to_string()));
    terms.sort();
    terms.dedup();
    terms
  }
}

impl Default for CodeIndex {
  fn default() -> Self {
    CodeIndex::new()
  }
}

/// A feature claimed absent, with the queries that looked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GhostClaim {
  pub feature: String,
  pub queries: Vec<String>,
}

/// One query's best hit.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryOutcome {
  pub query: String,
  /// Normalised score of the best hit, 0 when nothing matched.
  pub score: f64,
  /// Where the best hit is.
  pub hit: Option<String>,
}

/// Whether a claimed absence holds.
#[derive(Debug, Clone, PartialEq)]
pub struct GhostVerdict {
  pub feature: String,
  /// True when at least `min_queries` distinct queries ran and none found a hit at or above
  /// the threshold.
  pub verified: bool,
  pub outcomes: Vec<QueryOutcome>,
  /// Why it is not verified.
  pub reason: Option<String>,
}

/// Checks a claimed absence (see the module docs). `min_queries` is at least 2.
pub fn verify_absence(
  claim: &GhostClaim,
  index: &CodeIndex,
  threshold: f64,
  min_queries: usize,
) -> Result<GhostVerdict> {
  if !(threshold.is_finite() && (0.0..=1.0).contains(&threshold)) {
    return invalid("the negative grounding threshold must be a number between 0 and 1");
  }
  let min_queries = min_queries.max(2);
  let mut distinct: Vec<Vec<String>> = Vec::new();
  let mut outcomes = Vec::new();
  for query in &claim.queries {
    let terms = index.terms(query);
    if terms.is_empty() || distinct.contains(&terms) {
      continue;
    }
    distinct.push(terms);
    let best = index.best(query)?;
    outcomes.push(QueryOutcome {
      query: query.clone(),
      score: best.as_ref().map_or(0.0, |b| b.1),
      hit: best.map(|b| b.0),
    });
  }
  let found = outcomes.iter().find(|o| o.score >= threshold);
  let reason = if let Some(o) = found {
    Some(format!("a query found {} (score {:.2} >= {threshold})", o.hit.as_deref().unwrap_or("?"), o.score))
  } else if outcomes.len() < min_queries {
    Some(format!("{} distinct queries ran; {min_queries} are required", outcomes.len()))
  } else {
    None
  };
  Ok(GhostVerdict { feature: claim.feature.clone(), verified: reason.is_none(), outcomes, reason })
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::ledger::trajectory::{parse, Evidence, Record};

  fn line(event: Event) -> String {
    serde_json::to_string(&Record {
      v: 1,
      ts: "2026-01-01T00:00:00Z".into(),
      agent: "a".into(),
      event,
      extra: Default::default(),
    })
    .unwrap()
  }

  fn cite(grounding: Grounding, identifier: &str, quote: &str) -> String {
    line(Event::Cite {
      claim: "c".into(),
      grounding,
      evidence: Some(Evidence { identifier: identifier.into(), quote: quote.into() }),
    })
  }

  fn check(text: &str, enforcement: GroundingEnforcement, root: Option<&Path>) -> GroundingReport {
    evaluate(&parse(text.as_bytes()), enforcement, 0.95, root)
  }

  #[test]
  fn ratio_against_threshold_in_each_mode() {
    let good = cite(Grounding::Citation, "${PROJECT_ROOT}/a.rs:1", "fn a()");
    let mut text: String = (0..19).map(|_| format!("{good}\n")).collect();
    text.push_str(&format!("{}\n", cite(Grounding::Assumption, "${PROJECT_ROOT}/a.rs:1", "x")));
    let r = check(&text, GroundingEnforcement::Strict, None);
    assert_eq!((r.total_claims, r.grounded_claims, r.assumptions), (20, 19, 1));
    assert_eq!(r.ratio, Some(0.95));
    assert_eq!(r.exit_code(), 0);
    text.push_str(&format!("{}\n", cite(Grounding::Citation, "src/relative.rs:1", "x")));
    let r = check(&text, GroundingEnforcement::Strict, None);
    assert_eq!((r.status, r.exit_code()), (GroundingStatus::Fail, 1));
    assert_eq!(r.ungrounded.last().unwrap().line, 21);
    assert_eq!(check(&text, GroundingEnforcement::Warn, None).status, GroundingStatus::Warn);
    assert_eq!(check(&text, GroundingEnforcement::Disabled, None).exit_code(), 0);
  }

  #[test]
  fn seed_style_cites_without_v_count_and_recorded_checks_are_not_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("src")).unwrap();
    std::fs::write(tmp.path().join("src/jwt.ts"), "// jwt\nexport function validateToken() {\n  return true\n}\n")
      .unwrap();
    let lines = [
      // Evidence as a member, no `v`.
      r#"{"ts":"2024-01-15T14:25:00Z","agent":"implementing-tasks","phase":"cite","claim":"validation is exported","grounding":"citation","evidence":{"identifier":"${PROJECT_ROOT}/src/jwt.ts:2","quote":"export function validateToken()"},"root_span_id":"span-abc"}"#,
      // The citation written in the claim, as seed 000 §4.5 formats it.
      r#"{"ts":"2024-01-15T14:26:00Z","agent":"implementing-tasks","phase":"cite","claim":"It returns true: `return true` [${PROJECT_ROOT}/src/jwt.ts:3]","grounding":"citation"}"#,
      r#"{"ts":"2024-01-15T14:27:00Z","agent":"implementing-tasks","phase":"cite","claim":"`export function validateToken()` [${PROJECT_ROOT}/src/jwt.ts:2-3]","grounding":"citation"}"#,
      // The seed's own grounding_check record, claiming a pass.
      r#"{"ts":"2024-01-15T14:29:00Z","agent":"implementing-tasks","phase":"grounding_check","total_claims":20,"grounded_claims":19,"assumptions":1,"grounding_ratio":0.95,"threshold":0.95,"status":"pass"}"#,
    ];
    let text = lines.join("\n") + "\n";
    let r = check(&text, GroundingEnforcement::Strict, Some(tmp.path()));
    assert_eq!(r.errors, Vec::<String>::new());
    assert_eq!((r.total_claims, r.grounded_claims, r.status), (3, 3, GroundingStatus::Pass), "{:?}", r.ungrounded);
    // A quote that is not there, cited inline: ungrounded, and the recorded `pass` does not help.
    let wrong = r#"{"ts":"2024-01-15T14:28:00Z","agent":"implementing-tasks","phase":"cite","claim":"`fn forged()` [${PROJECT_ROOT}/src/jwt.ts:2]","grounding":"citation"}"#;
    let text = format!("{wrong}\n{}\n", lines[3]);
    let r = check(&text, GroundingEnforcement::Strict, Some(tmp.path()));
    assert_eq!((r.total_claims, r.grounded_claims, r.status), (1, 0, GroundingStatus::Fail));
  }

  #[test]
  fn inline_citations_are_found_in_linear_time() {
    let e = Evidence::from_claim("a `q` [${PROJECT_ROOT}/a.rs:1] then `r` [${PROJECT_ROOT}/b.rs:2]").unwrap();
    assert_eq!((e.quote.as_str(), e.identifier.as_str()), ("r", "${PROJECT_ROOT}/b.rs:2"));
    for none in
      ["", "no citation", "[${PROJECT_ROOT}/a.rs:1]", "`` [${PROJECT_ROOT}/a.rs:1]", "`q` [src/a.rs:1]", "]]]["]
    {
      assert_eq!(Evidence::from_claim(none), None, "{none}");
    }
    let hostile = "[]`".repeat(200_000);
    assert_eq!(Evidence::from_claim(&hostile), None);
  }

  #[test]
  fn zero_claims_pass_and_every_error_blocks_with_exit_2() {
    let sync = line(Event::DeltaSync { tokens: 1, decisions_persisted: 0, bead_updated: false, notes_updated: false });
    let r = check(&format!("{sync}\n"), GroundingEnforcement::Strict, None);
    assert_eq!((r.status, r.ratio, r.exit_code()), (GroundingStatus::Pass, None, 0));
    let missing = evaluate(&TrajectoryRead::default(), GroundingEnforcement::Strict, 0.95, None);
    assert_eq!(missing.exit_code(), 0);
    // An empty file, a malformed line, a crash: exit 2, in warn mode too.
    for mode in [GroundingEnforcement::Strict, GroundingEnforcement::Warn] {
      assert_eq!(check("", mode, None).exit_code(), 2);
      assert_eq!(check("\n \n", mode, None).exit_code(), 2);
      let malformed = check(&format!("{sync}\n{{\"v\":1,\"phase\":\"cite\"\n"), mode, None);
      assert_eq!(malformed.exit_code(), 2);
      assert!(malformed.errors[0].starts_with("trajectory line 2:"), "{:?}", malformed.errors);
    }
    assert_eq!(guarded(0.95, || panic!("boom")).exit_code(), 2);
    assert_eq!(guarded(0.95, || Err(LoaError::Internal("x".into()))).exit_code(), 2);
    assert_eq!(evaluate(&TrajectoryRead::default(), GroundingEnforcement::Strict, f64::NAN, None).exit_code(), 2);
  }

  #[test]
  fn quotes_are_checked_against_the_code() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.rs"), "pub fn   a() {}\nfn b() {}\n").unwrap();
    let text = format!(
      "{}\n{}\n{}\n",
      cite(Grounding::Citation, "${PROJECT_ROOT}/a.rs:1", "pub fn a()"),
      cite(Grounding::Citation, "${PROJECT_ROOT}/a.rs:1", "fn b()"),
      cite(Grounding::Citation, "${PROJECT_ROOT}/missing.rs:1", "x")
    );
    let r = check(&text, GroundingEnforcement::Strict, Some(tmp.path()));
    assert_eq!(r.grounded_claims, 1);
    assert_eq!(r.ungrounded.iter().map(|u| u.line).collect::<Vec<_>>(), vec![2, 3]);
  }

  #[test]
  fn ghosts_need_two_distinct_queries_that_find_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("src")).unwrap();
    std::fs::create_dir_all(tmp.path().join("node_modules/x")).unwrap();
    std::fs::write(tmp.path().join("src/auth.rs"), "fn refresh_token() {}\n// rotate the session cookie\n").unwrap();
    std::fs::write(tmp.path().join("node_modules/x/limiter.js"), "rate limiter throttle\n").unwrap();
    let index = CodeIndex::build(tmp.path()).unwrap();
    let ghost =
      GhostClaim { feature: "rate limiting".into(), queries: vec!["rate limiter".into(), "throttle requests".into()] };
    let v = verify_absence(&ghost, &index, 0.4, 2).unwrap();
    assert!(v.verified, "{v:?}");
    // The same query twice (reworded only by case and stop words) is one query.
    let same = GhostClaim { feature: "x".into(), queries: vec!["rate limiter".into(), "the RATE limiter".into()] };
    assert!(!verify_absence(&same, &index, 0.4, 2).unwrap().verified);
    let present =
      GhostClaim { feature: "cookies".into(), queries: vec!["session cookie".into(), "rotate cookie".into()] };
    let v = verify_absence(&present, &index, 0.4, 2).unwrap();
    assert!(!v.verified);
    assert!(v.outcomes.iter().any(|o| o.hit.as_deref() == Some("${PROJECT_ROOT}/src/auth.rs:1-2")), "{v:?}");
  }
}
