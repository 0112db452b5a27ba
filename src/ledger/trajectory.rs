//! The trajectory: an append-only JSONL audit of the agent's reasoning under the grimoire
//! (seed 000 §5.3), one file per agent and UTC day: `<dir>/<agent>-<YYYY-MM-DD>.jsonl`.
//!
//! One schema for every line, version 1:
//!
//! ```json
//! {"v":1,"ts":"2026-01-15T14:30:00.000Z","agent":"impl","phase":"cite","claim":"...","grounding":"citation","evidence":{"identifier":"${PROJECT_ROOT}/src/a.rs:12","quote":"fn a()"}}
//! ```
//!
//! `phase` is one of `cite`, `session_handoff`, `delta_sync`, `grounding_check`, `self_heal`,
//! and decides the other fields ([`Event`]). `ts` is RFC 3339 with any offset on input and is
//! parsed, never compared as a string; the library writes the canonical UTC form.
//!
//! **The seed's lines.** The original framework writes the same lines without `v` (seed 000
//! §5.3), so a line without `v` is read as version 1; a `v` with any other value is refused.
//! Members a phase does not define (the seed's `root_span_id`, a newer writer's additions) are
//! kept in [`Record::extra`] and serialised back as top-level members, so a record read and
//! written again loses nothing. Counters and flags of `session_handoff` and `delta_sync` that a
//! line leaves out read as `0`/`false`/empty: they describe, they never decide.
//!
//! Appends take an exclusive `flock` on `trajectory.lock` in the directory, write one line with
//! `O_APPEND` and `fdatasync` before returning. A line cut by a crash is never glued to the next
//! record: when the file does not end in a newline, the append starts with one, so the torn
//! line stays a damaged line of its own. Reading is bounded ([`MAX_FILE_BYTES`],
//! [`MAX_LINE_BYTES`]) and reports every damaged line with its 1-based number and the reason;
//! nothing is skipped silently, and the grounding check treats any damage as an error.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{invalid, LoaError, Result};
use crate::fsutil::{OpenMode, StateDir};
use crate::lock::lock_in;
use crate::redact::{FieldRedactor, RedactOptions};
use crate::timestamp::{format_ms, parse_ms};

/// The version of a trajectory line written and read.
pub const TRAJECTORY_VERSION: u32 = 1;
/// Largest trajectory file read (`E_TOO_LARGE` beyond).
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Longest line accepted, in bytes; a longer one is reported as damaged (and refused on append).
pub const MAX_LINE_BYTES: usize = 1024 * 1024;
/// The lock file taken by appends.
pub const LOCK_FILE: &str = "trajectory.lock";

/// How a claim is grounded (phase `cite`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grounding {
  /// Backed by a word-for-word quote at a lightweight identifier.
  Citation,
  /// Marked `[ASSUMPTION]`: counted, never grounded.
  Assumption,
  /// Neither.
  None,
}

/// The evidence of a cited claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
  /// `${PROJECT_ROOT}/path:45-67`.
  pub identifier: String,
  /// The code quoted word for word.
  pub quote: String,
}

impl Evidence {
  /// The evidence written inline in a claim in the seed's citation format (seed 000 §4.5):
  /// a word-for-word quote in backticks followed by its identifier in brackets,
  /// `` `export function validateToken()` [${PROJECT_ROOT}/src/auth/jwt.ts:45] ``. The last such
  /// citation of the claim is taken; `None` when it has none. One backward scan: linear.
  pub fn from_claim(claim: &str) -> Option<Evidence> {
    let mut end = claim.len();
    while let Some(close) = claim[..end].rfind(']') {
      let open = claim[..close].rfind('[')?;
      let identifier = claim[open + 1..close].trim();
      let before = claim[..open].trim_end();
      if identifier.starts_with("${PROJECT_ROOT}/") {
        if let Some(body) = before.strip_suffix('`') {
          if let Some(start) = body.rfind('`') {
            let quote = &body[start + 1..];
            if !quote.trim().is_empty() {
              return Some(Evidence { identifier: identifier.to_string(), quote: quote.to_string() });
            }
          }
        }
      }
      end = open;
    }
    None
  }
}

/// What a line records, by phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Event {
  /// A claim the agent made, with its grounding.
  Cite {
    claim: String,
    grounding: Grounding,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    evidence: Option<Evidence>,
  },
  /// The synthesis checkpoint handed the session over (written by the checkpoint).
  SessionHandoff {
    session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bead_id: Option<String>,
    #[serde(default)]
    notes_refs: Vec<String>,
    #[serde(default)]
    edd_verified: bool,
    /// `None` when grounding was disabled or there were no claims.
    #[serde(default)]
    grounding_ratio: Option<f64>,
    #[serde(default)]
    test_scenarios: u64,
    #[serde(default)]
    next_session_ready: bool,
  },
  /// A partial persist at the yellow attention threshold.
  DeltaSync {
    tokens: u64,
    #[serde(default)]
    decisions_persisted: u64,
    #[serde(default)]
    bead_updated: bool,
    #[serde(default)]
    notes_updated: bool,
  },
  /// The outcome of a grounding check, as recorded. The grounding check never reads these back:
  /// it recomputes from the `cite` records (a recorded ratio is a claim, not evidence).
  GroundingCheck {
    total_claims: u64,
    grounded_claims: u64,
    assumptions: u64,
    grounding_ratio: Option<f64>,
    threshold: f64,
    status: String,
  },
  /// A state-zone file restored or recreated.
  SelfHeal { file: String, source: String, outcome: String },
}

impl Event {
  /// Every text the caller gave redacted: a claim and its evidence (identifier and quote), a
  /// self-heal record's texts. Ids (session, bead), numbers and the ledger's own fields stay.
  pub fn redact(&mut self, options: &RedactOptions) {
    let mut r = FieldRedactor::new(options);
    match self {
      Event::Cite { claim, evidence, .. } => {
        r.text_mut("claim", claim);
        if let Some(e) = evidence {
          r.text_mut("evidence.identifier", &mut e.identifier);
          r.text_mut("evidence.quote", &mut e.quote);
        }
      }
      Event::SelfHeal { file, source, outcome } => {
        r.text_mut("file", file);
        r.text_mut("source", source);
        r.text_mut("outcome", outcome);
      }
      Event::SessionHandoff { notes_refs, .. } => r.list_mut("notes_refs", notes_refs),
      Event::DeltaSync { .. } | Event::GroundingCheck { .. } => {}
    }
  }

  /// The members `phase` defines (besides `v`, `ts`, `agent`, `phase`), or `None` for a phase
  /// this library does not know. Everything else on a line goes to [`Record::extra`].
  pub fn members(phase: &str) -> Option<&'static [&'static str]> {
    Some(match phase {
      "cite" => &["claim", "grounding", "evidence"],
      "session_handoff" => &[
        "session_id",
        "bead_id",
        "notes_refs",
        "edd_verified",
        "grounding_ratio",
        "test_scenarios",
        "next_session_ready",
      ],
      "delta_sync" => &["tokens", "decisions_persisted", "bead_updated", "notes_updated"],
      "grounding_check" => {
        &["total_claims", "grounded_claims", "assumptions", "grounding_ratio", "threshold", "status"]
      }
      "self_heal" => &["file", "source", "outcome"],
      _ => return None,
    })
  }

  /// The phase name as written.
  pub fn phase(&self) -> &'static str {
    match self {
      Event::Cite { .. } => "cite",
      Event::SessionHandoff { .. } => "session_handoff",
      Event::DeltaSync { .. } => "delta_sync",
      Event::GroundingCheck { .. } => "grounding_check",
      Event::SelfHeal { .. } => "self_heal",
    }
  }
}

/// One line of a trajectory file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
  /// 1 (also for a line written without `v`, as the seed writes them).
  #[serde(default = "version_one")]
  pub v: u32,
  /// RFC 3339.
  pub ts: String,
  pub agent: String,
  #[serde(flatten)]
  pub event: Event,
  /// Members of the line its phase does not define (e.g. the seed's `root_span_id`), kept as
  /// read and serialised back as top-level members. Empty for lines this library writes.
  #[serde(flatten, skip_serializing_if = "serde_json::Map::is_empty")]
  pub extra: serde_json::Map<String, serde_json::Value>,
}

fn version_one() -> u32 {
  TRAJECTORY_VERSION
}

/// A line that could not be read as a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged {
  /// 1-based line number.
  pub line: u64,
  /// Why (never the line's content).
  pub reason: String,
}

/// What a read found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrajectoryRead {
  /// Each record with its 1-based line number.
  pub records: Vec<(u64, Record)>,
  pub damaged: Vec<Damaged>,
  /// Whether the file exists.
  pub exists: bool,
}

/// Checks an agent name used in a file name: 1 to 64 of `A-Z a-z 0-9 . _ -`, starting with a
/// letter or digit.
pub fn check_agent(agent: &str) -> Result<()> {
  let ok = !agent.is_empty()
    && agent.len() <= 64
    && agent.as_bytes()[0].is_ascii_alphanumeric()
    && agent.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
  if ok {
    Ok(())
  } else {
    invalid("`agent` must be 1 to 64 letters, digits, `.`, `_` or `-`, starting with a letter or digit")
  }
}

/// The file name of `agent`'s trajectory on the UTC day of `ts_ms`.
pub fn file_name(agent: &str, ts_ms: i64) -> Result<String> {
  check_agent(agent)?;
  Ok(format!("{agent}-{}.jsonl", &format_ms(ts_ms)[..10]))
}

/// A trajectory directory.
#[derive(Debug)]
pub struct Trajectory {
  dir: StateDir,
  lock_timeout: Duration,
  redaction: RedactOptions,
}

/// Reads one record (a line without its newline, or a whole JSON object): the version rule and
/// the members kept of the module docs. The error is the reason, never the content.
pub fn parse_record(bytes: &[u8]) -> std::result::Result<Record, String> {
  if bytes.len() > MAX_LINE_BYTES {
    return Err(format!("line is {} bytes, over the limit of {MAX_LINE_BYTES}", bytes.len()));
  }
  let text = std::str::from_utf8(bytes).map_err(|_| "not valid UTF-8".to_string())?;
  let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON (column {})", e.column()))?;
  let serde_json::Value::Object(object) = value else { return Err("not a JSON object".into()) };
  match object.get("v") {
    // The seed's format: no version member, read as version 1.
    None => {}
    Some(v) if v.as_u64() == Some(u64::from(TRAJECTORY_VERSION)) => {}
    Some(v) => {
      let v = v.as_u64().map_or_else(|| "`v` that is not a number".to_string(), |n| format!("version {n}"));
      return Err(format!("{v} is not one this library reads ({TRAJECTORY_VERSION})"));
    }
  }
  let members = match object.get("phase") {
    None => return Err("not a trajectory record: no `phase`".into()),
    Some(serde_json::Value::String(p)) => Event::members(p).ok_or("not a trajectory record: unknown `phase`")?,
    Some(_) => return Err("not a trajectory record: `phase` is not a string".into()),
  };
  let (known, extra): (serde_json::Map<_, _>, serde_json::Map<_, _>) = object
    .into_iter()
    .partition(|(k, _)| matches!(k.as_str(), "v" | "ts" | "agent" | "phase") || members.contains(&k.as_str()));
  let mut record: Record = serde_json::from_value(serde_json::Value::Object(known))
    .map_err(|e| format!("not a trajectory record: {}", crate::error::scrub_quoted(&e.to_string())))?;
  record.extra = extra;
  if parse_ms(&record.ts).is_none() {
    return Err("`ts` is not an RFC 3339 timestamp".into());
  }
  Ok(record)
}

impl Trajectory {
  /// The trajectory kept in `dir`; appends are redacted with the default options.
  pub fn new(dir: StateDir, lock_timeout: Duration) -> Trajectory {
    Trajectory { dir, lock_timeout, redaction: RedactOptions::default() }
  }

  /// The same trajectory, appends redacted with `redaction`.
  pub fn with_redaction(self, redaction: RedactOptions) -> Trajectory {
    Trajectory { redaction, ..self }
  }

  /// Appends `event` for `agent` at `ts_ms` (see the module docs), its texts redacted
  /// ([`Event::redact`]), durable on return.
  pub fn append(&self, agent: &str, ts_ms: i64, mut event: Event) -> Result<Record> {
    let name = file_name(agent, ts_ms)?;
    event.redact(&self.redaction);
    let record = Record {
      v: TRAJECTORY_VERSION,
      ts: format_ms(ts_ms),
      agent: agent.to_string(),
      event,
      extra: Default::default(),
    };
    let mut line = serde_json::to_vec(&record).map_err(|e| LoaError::Internal(e.to_string()))?;
    if line.len() > MAX_LINE_BYTES {
      return Err(LoaError::TooLarge {
        what: "trajectory record".into(),
        size: line.len() as u64,
        limit: MAX_LINE_BYTES as u64,
      });
    }
    line.push(b'\n');
    let _guard = lock_in(&self.dir, LOCK_FILE, self.lock_timeout, "the trajectory")?;
    let mut file = self.dir.open_file(&name, OpenMode::APPEND)?;
    let len = file.len()?;
    if len > 0 {
      let mut last = [0u8; 1];
      file.read_at(&mut last, len - 1)?;
      if last[0] != b'\n' {
        // A torn line from a crash: keep it as its own (damaged) line.
        line.insert(0, b'\n');
      }
    }
    file.write_all(&line)?;
    file.sync_data()?;
    Ok(record)
  }

  /// Reads `agent`'s file of the UTC day of `ts_ms`.
  pub fn read_day(&self, agent: &str, ts_ms: i64) -> Result<TrajectoryRead> {
    self.read_file(&file_name(agent, ts_ms)?)
  }

  /// Reads one trajectory file by name (bounded; damaged lines reported, see the module docs).
  pub fn read_file(&self, name: &str) -> Result<TrajectoryRead> {
    let Some(bytes) = self.dir.read(name, MAX_FILE_BYTES)? else { return Ok(TrajectoryRead::default()) };
    Ok(parse(&bytes))
  }
}

/// Parses a whole trajectory file.
pub fn parse(bytes: &[u8]) -> TrajectoryRead {
  let mut out = TrajectoryRead { exists: true, ..Default::default() };
  // A byte order mark some editors put first is not part of the first line.
  let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
  let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
  if body.is_empty() {
    return out;
  }
  for (i, raw) in body.split(|&b| b == b'\n').enumerate() {
    let line = (i + 1) as u64;
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    if raw.iter().all(u8::is_ascii_whitespace) {
      out.damaged.push(Damaged { line, reason: "empty line".into() });
      continue;
    }
    match parse_record(raw) {
      Ok(record) => out.records.push((line, record)),
      Err(reason) => out.damaged.push(Damaged { line, reason }),
    }
  }
  out
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::timestamp::parse_rfc3339_ms;

  fn cite(claim: &str) -> Event {
    Event::Cite {
      claim: claim.into(),
      grounding: Grounding::Citation,
      evidence: Some(Evidence { identifier: "${PROJECT_ROOT}/a.rs:1".into(), quote: "fn a()".into() }),
    }
  }

  #[test]
  fn appends_read_back_and_torn_lines_are_reported_by_number() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Trajectory::new(StateDir::open_root(tmp.path()).unwrap(), Duration::from_secs(5));
    let ts = parse_rfc3339_ms("2026-01-15T23:30:00-02:00", "t").unwrap();
    t.append("impl", ts, cite("one")).unwrap();
    let path = tmp.path().join("impl-2026-01-16.jsonl");
    assert!(path.exists());
    // A crash mid-line, then another append.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(b"{\"v\":1,\"ts\":\"2026");
    std::fs::write(&path, &bytes).unwrap();
    t.append(
      "impl",
      ts,
      Event::DeltaSync { tokens: 5000, decisions_persisted: 3, bead_updated: true, notes_updated: true },
    )
    .unwrap();
    let read = t.read_day("impl", ts).unwrap();
    assert_eq!(read.records.len(), 2);
    assert_eq!(read.records[1].0, 3);
    assert_eq!(read.damaged, vec![Damaged { line: 2, reason: "not JSON (column 17)".into() }]);
    assert_eq!(read.records[0].1.event.phase(), "cite");
    assert_eq!(read.records[0].1.ts, "2026-01-16T01:30:00.000Z");
  }

  #[test]
  fn every_kind_of_damage_is_reported() {
    let good = serde_json::to_string(&Record {
      v: 1,
      ts: "2026-01-01T00:00:00+01:00".into(),
      agent: "a".into(),
      event: cite("x"),
      extra: Default::default(),
    })
    .unwrap();
    let lines: Vec<Vec<u8>> = vec![
      good.clone().into_bytes(),
      b"".to_vec(),
      br#"{"v":2,"phase":"cite"}"#.to_vec(),
      br#"{"phase":"cite"}"#.to_vec(),
      br#"{"v":1,"ts":"yesterday","agent":"a","phase":"cite","claim":"c","grounding":"citation"}"#.to_vec(),
      br#"{"v":1,"ts":"2026-01-01T00:00:00Z","agent":"a","phase":"gossip"}"#.to_vec(),
      b"\xff".to_vec(),
      b"[1,2]".to_vec(),
      good.into_bytes(),
    ];
    let mut bytes = lines.join(&b'\n');
    bytes.push(b'\n');
    let read = parse(&bytes);
    assert_eq!(read.records.iter().map(|r| r.0).collect::<Vec<_>>(), vec![1, 9]);
    assert_eq!(read.damaged.iter().map(|d| d.line).collect::<Vec<_>>(), vec![2, 3, 4, 5, 6, 7, 8]);
    assert!(read.damaged.iter().all(|d| !d.reason.contains("yesterday")), "{:?}", read.damaged);
    assert_eq!(parse(b"").records.len(), 0);
  }

  #[test]
  fn the_seeds_lines_without_v_are_version_1_and_keep_unknown_members() {
    let bytes = include_bytes!("../../testdata/seeds/examples/trajectory-implementing-tasks-2024-01-15.jsonl");
    let read = parse(bytes);
    assert_eq!(read.damaged, vec![]);
    let phases: Vec<&str> = read.records.iter().map(|(_, r)| r.event.phase()).collect();
    assert_eq!(phases, ["session_handoff", "delta_sync", "grounding_check"]);
    assert!(read.records.iter().all(|(_, r)| r.v == 1));
    // The same file saved by an editor that adds a byte order mark and CRLF line ends.
    let crlf =
      [b"\xEF\xBB\xBF".as_slice(), &bytes.split(|&b| b == b'\n').collect::<Vec<_>>().join(&b"\r\n"[..])].concat();
    let again = parse(&crlf);
    assert_eq!((again.records.len(), again.damaged.len()), (3, 0), "{:?}", again.damaged);
    let handoff = &read.records[0].1;
    assert_eq!(handoff.extra.get("root_span_id"), Some(&serde_json::json!("span-def")));
    assert!(matches!(&handoff.event, Event::SessionHandoff { notes_refs, bead_id: Some(b), .. }
      if notes_refs == &["loa-grimoire/NOTES.md:68-92"] && b == "bd-x7y8"));
    // A round trip keeps every member of every line (and adds `v`).
    for ((_, record), line) in read.records.iter().zip(bytes.split(|&b| b == b'\n')) {
      let mut original: serde_json::Value = serde_json::from_slice(line).unwrap();
      original["v"] = serde_json::json!(1);
      assert_eq!(serde_json::to_value(record).unwrap(), original);
      assert_eq!(parse(&serde_json::to_vec(record).unwrap()).records[0].1, *record);
    }
  }

  #[test]
  fn members_lists_exactly_what_each_phase_writes() {
    let full = [
      cite("c"),
      Event::SessionHandoff {
        session_id: "s".into(),
        bead_id: Some("b".into()),
        notes_refs: vec![],
        edd_verified: true,
        grounding_ratio: Some(1.0),
        test_scenarios: 3,
        next_session_ready: true,
      },
      Event::DeltaSync { tokens: 1, decisions_persisted: 0, bead_updated: false, notes_updated: false },
      Event::GroundingCheck {
        total_claims: 1,
        grounded_claims: 1,
        assumptions: 0,
        grounding_ratio: Some(1.0),
        threshold: 0.95,
        status: "pass".into(),
      },
      Event::SelfHeal { file: "f".into(), source: "git".into(), outcome: "restored".into() },
    ];
    for event in full {
      let value = serde_json::to_value(&event).unwrap();
      let mut written: Vec<&str> =
        value.as_object().unwrap().keys().map(String::as_str).filter(|k| *k != "phase").collect();
      let mut listed = Event::members(event.phase()).unwrap().to_vec();
      written.sort_unstable();
      listed.sort_unstable();
      assert_eq!(written, listed, "{}", event.phase());
    }
  }

  #[test]
  fn a_version_other_than_1_is_still_refused() {
    let line = |v: &str| format!(r#"{{{v}"ts":"2026-01-01T00:00:00Z","agent":"a","phase":"delta_sync","tokens":1}}"#);
    assert_eq!(parse(line("").as_bytes()).records.len(), 1);
    assert_eq!(parse(line(r#""v":1,"#).as_bytes()).records.len(), 1);
    for bad in [r#""v":2,"#, r#""v":"1","#, r#""v":null,"#, r#""v":1.5,"#, r#""v":0,"#] {
      let read = parse(line(bad).as_bytes());
      assert_eq!(read.records.len(), 0, "{bad}");
      assert!(read.damaged[0].reason.contains("is not one this library reads"), "{:?}", read.damaged);
    }
  }

  #[test]
  fn agent_names_are_checked() {
    for bad in ["", "../x", ".hidden", "a/b", &"a".repeat(65)] {
      assert_eq!(file_name(bad, 0).unwrap_err().code(), "E_INVALID_ARGUMENT");
    }
    assert_eq!(file_name("implementing-tasks", 0).unwrap(), "implementing-tasks-1970-01-01.jsonl");
  }
}
