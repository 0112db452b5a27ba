//! Beads: the task graph's files `.beads/<id>.yaml`, extended by the ledger with `decisions[]`,
//! `handoffs[]`, `test_scenarios[]` and `next_steps[]` (seed 000 §5.2).
//!
//! Read with the crate's YAML reader ([`crate::settings::Document`] over [`crate::yaml`]:
//! `serde_norway`, nesting and alias expansion bounded), at most [`MAX_BEAD_BYTES`]; validated ([`Bead::validate`]); appended to
//! under `.beads/beads.lock` and written atomically. Fields the ledger does not know (`title`,
//! `status`, `priority`, whatever `bd` adds) are kept as values; YAML comments and key order of
//! a file are not (it is re-serialised). The lists are append-only: an append never removes or
//! reorders an item. A bead whose file does not parse is `E_STATE_CORRUPT` and left untouched.
//!
//! Everything an append adds is redacted first ([`Beads::with_redaction`]; the defaults
//! otherwise), so a decision copied here never holds what its memory was redacted of. The one
//! removal is forgetting: [`forget_memories`] takes out the copies of forgotten decision
//! memories.
//!
//! An id is 1 to 64 of `A-Z a-z 0-9 . _ -`, starting with a letter or digit (`bd-x7y8`), so it
//! is always one plain file name.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_norway::Value;

use crate::error::{invalid, LoaError, Result};
use crate::fsutil::StateDir;
use crate::lock::lock_in;
use crate::redact::{FieldRedactor, RedactOptions};
use crate::timestamp::parse_ms;

use super::identifier::PREFIX;

/// The beads directory below the workspace (the ledger's default; not configurable).
pub const DEFAULT_DIR: &str = ".beads";
/// Largest bead file read.
pub const MAX_BEAD_BYTES: u64 = 4 * 1024 * 1024;
/// The lock file of appends.
pub const LOCK_FILE: &str = "beads.lock";

/// Checks a bead id (see the module docs).
pub fn check_id(id: &str) -> Result<()> {
  let ok = !id.is_empty()
    && id.len() <= 64
    && id.as_bytes()[0].is_ascii_alphanumeric()
    && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
  if ok {
    Ok(())
  } else {
    invalid("a bead id must be 1 to 64 letters, digits, `.`, `_` or `-`, starting with a letter or digit")
  }
}

/// Evidence of a bead decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BeadEvidence {
  /// `${PROJECT_ROOT}/path`.
  pub path: String,
  pub line: u32,
  pub quote: String,
}

/// One entry of `decisions[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BeadDecision {
  /// RFC 3339.
  pub ts: String,
  pub decision: String,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub rationale: Option<String>,
  #[serde(default, skip_serializing_if = "Vec::is_empty")]
  pub evidence: Vec<BeadEvidence>,
  /// The id of the decision memory this entry copies (the checkpoint sets it): forgetting
  /// that memory removes the entry ([`forget_memories`]).
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub memory: Option<String>,
}

/// One entry of `test_scenarios[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestScenario {
  pub name: String,
  /// `happy_path`, `edge_case`, `error_handling`, ...
  #[serde(rename = "type")]
  pub kind: String,
  pub expected: String,
  /// The id of the decision memory whose scenario this is (the checkpoint sets it):
  /// forgetting that memory removes the entry.
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub memory: Option<String>,
}

/// One entry of `handoffs[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handoff {
  pub session_id: String,
  /// RFC 3339.
  pub ended: String,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub notes_ref: Option<String>,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub trajectory_ref: Option<String>,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub grounding_ratio: Option<f64>,
}

/// A bead file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bead {
  pub id: String,
  #[serde(default)]
  pub decisions: Vec<BeadDecision>,
  #[serde(default)]
  pub handoffs: Vec<Handoff>,
  #[serde(default)]
  pub test_scenarios: Vec<TestScenario>,
  #[serde(default)]
  pub next_steps: Vec<String>,
  /// Every other field, kept.
  #[serde(flatten)]
  pub other: BTreeMap<String, Value>,
}

/// What to append to a bead.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BeadAppend {
  pub decisions: Vec<BeadDecision>,
  pub handoffs: Vec<Handoff>,
  pub test_scenarios: Vec<TestScenario>,
  pub next_steps: Vec<String>,
}

fn bad(what: String) -> LoaError {
  LoaError::InvalidArgument(what)
}

impl Bead {
  /// A bead with only its id.
  pub fn new(id: &str) -> Bead {
    Bead {
      id: id.to_string(),
      decisions: Vec::new(),
      handoffs: Vec::new(),
      test_scenarios: Vec::new(),
      next_steps: Vec::new(),
      other: BTreeMap::new(),
    }
  }

  /// Checks the ledger's fields: id, timestamps (RFC 3339), evidence paths (below
  /// `${PROJECT_ROOT}`, no `..`), ratios in [0, 1], non-empty texts. Messages name the list
  /// and index, never a value.
  pub fn validate(&self) -> Result<()> {
    check_id(&self.id)?;
    for (i, d) in self.decisions.iter().enumerate() {
      if parse_ms(&d.ts).is_none() {
        return Err(bad(format!("decisions[{i}].ts must be an RFC 3339 timestamp")));
      }
      if d.decision.trim().is_empty() {
        return Err(bad(format!("decisions[{i}].decision must not be empty")));
      }
      for (j, e) in d.evidence.iter().enumerate() {
        let rest = e.path.strip_prefix(PREFIX);
        if rest.is_none_or(|r| r.is_empty() || r.starts_with('/') || r.split('/').any(|c| c == "..")) {
          return Err(LoaError::PathOutsideRoot(format!(
            "decisions[{i}].evidence[{j}].path must be `${{PROJECT_ROOT}}/...` without `..`"
          )));
        }
        if e.line == 0 {
          return Err(bad(format!("decisions[{i}].evidence[{j}].line must be 1 or more")));
        }
      }
    }
    for (i, h) in self.handoffs.iter().enumerate() {
      if h.session_id.trim().is_empty() || parse_ms(&h.ended).is_none() {
        return Err(bad(format!("handoffs[{i}] needs a session_id and an RFC 3339 `ended`")));
      }
      if h.grounding_ratio.is_some_and(|r| !(r.is_finite() && (0.0..=1.0).contains(&r))) {
        return Err(bad(format!("handoffs[{i}].grounding_ratio must be between 0 and 1")));
      }
    }
    for (i, t) in self.test_scenarios.iter().enumerate() {
      if t.name.trim().is_empty() || t.expected.trim().is_empty() {
        return Err(bad(format!("test_scenarios[{i}] needs a name and an expected outcome")));
      }
    }
    if let Some(i) = self.next_steps.iter().position(|s| s.trim().is_empty()) {
      return Err(bad(format!("next_steps[{i}] must not be empty")));
    }
    Ok(())
  }
}

impl BeadAppend {
  /// Every text the caller gave redacted: decisions (text, rationale, evidence path and
  /// quote), test scenarios, next steps, and the handoffs' references. Ids, times and memory
  /// ids are the ledger's own and stay.
  fn redact(&mut self, options: &RedactOptions) {
    let mut r = FieldRedactor::new(options);
    for (i, d) in self.decisions.iter_mut().enumerate() {
      r.text_mut(&format!("decisions[{i}].decision"), &mut d.decision);
      r.opt_mut(&format!("decisions[{i}].rationale"), &mut d.rationale);
      for (j, e) in d.evidence.iter_mut().enumerate() {
        r.text_mut(&format!("decisions[{i}].evidence[{j}].path"), &mut e.path);
        r.text_mut(&format!("decisions[{i}].evidence[{j}].quote"), &mut e.quote);
      }
    }
    for (i, t) in self.test_scenarios.iter_mut().enumerate() {
      r.text_mut(&format!("test_scenarios[{i}].name"), &mut t.name);
      r.text_mut(&format!("test_scenarios[{i}].type"), &mut t.kind);
      r.text_mut(&format!("test_scenarios[{i}].expected"), &mut t.expected);
    }
    r.list_mut("next_steps", &mut self.next_steps);
    for (i, h) in self.handoffs.iter_mut().enumerate() {
      r.opt_mut(&format!("handoffs[{i}].notes_ref"), &mut h.notes_ref);
      r.opt_mut(&format!("handoffs[{i}].trajectory_ref"), &mut h.trajectory_ref);
    }
  }
}

/// The `.beads/` directory.
#[derive(Debug)]
pub struct Beads {
  dir: StateDir,
  lock_timeout: Duration,
  redaction: RedactOptions,
}

impl Beads {
  /// The beads kept in `dir`; appends are redacted with the default options.
  pub fn new(dir: StateDir, lock_timeout: Duration) -> Beads {
    Beads { dir, lock_timeout, redaction: RedactOptions::default() }
  }

  /// The same beads, appends redacted with `redaction`.
  pub fn with_redaction(self, redaction: RedactOptions) -> Beads {
    Beads { redaction, ..self }
  }

  /// Ids of every `<id>.yaml` regular file, sorted.
  pub fn list(&self) -> Result<Vec<String>> {
    Ok(
      self
        .dir
        .entries()?
        .into_iter()
        .filter(|e| e.is_file())
        .filter_map(|e| e.name_str()?.strip_suffix(".yaml").map(str::to_string))
        .filter(|id| check_id(id).is_ok())
        .collect(),
    )
  }

  /// The bead `id`, or `None`. A file that does not parse, or whose `id` is not its name, is
  /// `E_STATE_CORRUPT`.
  pub fn read(&self, id: &str) -> Result<Option<Bead>> {
    check_id(id)?;
    let name = format!("{id}.yaml");
    let Some(bytes) = self.dir.read(&name, MAX_BEAD_BYTES)? else { return Ok(None) };
    let path = self.dir.child_path(&name).display().to_string();
    let corrupt = |reason: String| LoaError::StateCorrupt { path: path.clone(), reason };
    let text = String::from_utf8(bytes).map_err(|_| corrupt("not valid UTF-8".into()))?;
    let doc = crate::settings::Document::parse(&text).map_err(|e| corrupt(format!("not YAML: {e}")))?;
    let mut warnings = Vec::new();
    let bead: Bead = doc.deserialize("", &mut warnings).map_err(|e| corrupt(format!("`{}`: {}", e.key, e.reason)))?;
    if bead.id != id {
      return Err(corrupt("its `id` is not its file name".into()));
    }
    bead.validate().map_err(|e| corrupt(e.to_string()))?;
    Ok(Some(bead))
  }

  /// Appends to bead `id` (created with only its id when missing), redacted, validated,
  /// atomically.
  pub fn append(&self, id: &str, mut add: BeadAppend) -> Result<Bead> {
    check_id(id)?;
    add.redact(&self.redaction);
    let _guard = lock_in(&self.dir, LOCK_FILE, self.lock_timeout, "the beads")?;
    let mut bead = self.read(id)?.unwrap_or_else(|| Bead::new(id));
    bead.decisions.extend(add.decisions);
    bead.handoffs.extend(add.handoffs);
    bead.test_scenarios.extend(add.test_scenarios);
    bead.next_steps.extend(add.next_steps);
    bead.validate()?;
    let text = crate::yaml::to_string(&bead).map_err(|e| LoaError::Internal(e.to_string()))?;
    self.dir.write_atomic(format!("{id}.yaml"), text.as_bytes(), None)?;
    Ok(bead)
  }
}

/// Removes from every bead below `root` the copies of the memories `ids`: the decisions and
/// test scenarios whose `memory` is one of them, and the decisions whose text is one of them
/// (a memory's id is the hash of its content). Each bead that changes is rewritten atomically
/// under the beads lock. Returns how many bead files changed. A bead that cannot be read is
/// left as it is (it is reported when read); a workspace without `.beads/` changes nothing.
/// Called by [`crate::memory`]'s forget.
pub fn forget_memories(root: &StateDir, ids: &HashSet<&str>, lock_timeout: Duration) -> Result<usize> {
  let Some(dir) = root.descend(std::path::Path::new(DEFAULT_DIR), false)? else { return Ok(0) };
  let beads = Beads::new(dir, lock_timeout);
  let listed = beads.list()?;
  if listed.is_empty() {
    return Ok(0);
  }
  let _guard = lock_in(&beads.dir, LOCK_FILE, lock_timeout, "the beads")?;
  let copies = |memory: &Option<String>| memory.as_deref().is_some_and(|m| ids.contains(m));
  let mut changed = 0;
  for id in listed {
    let Ok(Some(mut bead)) = beads.read(&id) else { continue };
    let before = (bead.decisions.len(), bead.test_scenarios.len());
    bead.decisions.retain(|d| !copies(&d.memory) && !ids.contains(crate::gates::content_hash(&d.decision).as_str()));
    bead.test_scenarios.retain(|t| !copies(&t.memory));
    if (bead.decisions.len(), bead.test_scenarios.len()) != before {
      let text = serde_norway::to_string(&bead).map_err(|e| LoaError::Internal(e.to_string()))?;
      beads.dir.write_atomic(format!("{id}.yaml"), text.as_bytes(), None)?;
      changed += 1;
    }
  }
  Ok(changed)
}

#[cfg(test)]
mod tests {
  use super::*;

  const SEED: &str = "# Extended Bead schema
id: bd-x7y8
title: \"Implement JWT refresh token rotation\"
type: feature
status: in_progress
priority: 1
created: 2024-01-15T10:00:00Z
assignee: null
decisions:
  - ts: 2024-01-15T10:30:00Z
    decision: \"Use rotating refresh tokens\"
    rationale: \"Prevents token theft replay attacks\"
    evidence:
      - path: ${PROJECT_ROOT}/src/auth/refresh.ts
        line: 12
        quote: \"export async function rotateRefreshToken()\"
test_scenarios:
  - name: \"Token expires at boundary\"
    type: edge_case
    expected: \"Grace period applies, no forced logout\"
handoffs:
  - session_id: \"sess-001\"
    ended: 2024-01-15T12:00:00Z
    notes_ref: \"loa-grimoire/NOTES.md:45-67\"
    trajectory_ref: \"trajectory/impl-2024-01-15.jsonl:span-abc\"
    grounding_ratio: 0.97
next_steps:
  - \"Implement clock skew tolerance\"
blockers: []
questions:
  - \"Should grace period be configurable per-client?\"
";

  fn beads(tmp: &tempfile::TempDir) -> Beads {
    Beads::new(StateDir::open_root(tmp.path()).unwrap(), Duration::from_secs(5))
  }

  #[test]
  fn the_seed_bead_reads_appends_and_keeps_other_fields() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("bd-x7y8.yaml"), SEED).unwrap();
    let b = beads(&tmp);
    assert_eq!(b.list().unwrap(), vec!["bd-x7y8"]);
    let bead = b.read("bd-x7y8").unwrap().unwrap();
    assert_eq!(bead.decisions[0].evidence[0].line, 12);
    assert_eq!(bead.handoffs[0].grounding_ratio, Some(0.97));
    let after = b
      .append(
        "bd-x7y8",
        BeadAppend {
          next_steps: vec!["Add refresh token blacklist".into()],
          decisions: vec![BeadDecision {
            ts: "2024-01-15T14:30:00+01:00".into(),
            decision: "Grace period".into(),
            rationale: None,
            evidence: vec![],
            memory: None,
          }],
          ..Default::default()
        },
      )
      .unwrap();
    assert_eq!(after.next_steps.len(), 2);
    let again = b.read("bd-x7y8").unwrap().unwrap();
    assert_eq!(again, after);
    assert_eq!(again.decisions[0], bead.decisions[0]);
    assert_eq!(again.other.get("title").and_then(Value::as_str), Some("Implement JWT refresh token rotation"));
    assert!(again.other.contains_key("questions") && again.other.contains_key("blockers"));
  }

  #[test]
  fn appends_are_redacted_and_forgetting_a_memory_removes_its_copies() {
    let tmp = tempfile::tempdir().unwrap();
    let root = StateDir::open_root(tmp.path()).unwrap();
    let b = Beads::new(root.descend(std::path::Path::new(DEFAULT_DIR), true).unwrap().unwrap(), Duration::from_secs(5));
    let decision = |text: &str, memory: Option<&str>| BeadDecision {
      ts: "2026-01-01T00:00:00Z".into(),
      decision: text.into(),
      rationale: Some("asked by ops@acme-logistics.io".into()),
      evidence: vec![],
      memory: memory.map(str::to_string),
    };
    let scenario = |name: &str, memory: Option<&str>| TestScenario {
      name: name.into(),
      kind: "scenario".into(),
      expected: "ok".into(),
      memory: memory.map(str::to_string),
    };
    let by_id = "a".repeat(64);
    let by_text = "Keep the queue bounded at ten thousand";
    let add = BeadAppend {
      decisions: vec![decision("Use a sliding window", Some(&by_id)), decision(by_text, None), decision("Stay", None)],
      test_scenarios: vec![scenario("window end", Some(&by_id)), scenario("burst", None)],
      next_steps: vec!["mail ops@acme-logistics.io".into()],
      ..Default::default()
    };
    let written = b.append("bd-1", add).unwrap();
    assert_eq!(written.decisions[0].rationale.as_deref(), Some("asked by [REDACTED:EMAIL]"));
    assert_eq!(written.next_steps, ["mail [REDACTED:EMAIL]"]);
    b.append("bd-2", BeadAppend { next_steps: vec!["untouched".into()], ..Default::default() }).unwrap();
    let before_2 = std::fs::read(tmp.path().join(".beads/bd-2.yaml")).unwrap();
    std::fs::write(tmp.path().join(".beads/bd-3.yaml"), "id: [unclosed\n").unwrap();

    let text_id = crate::gates::content_hash(by_text);
    let ids: HashSet<&str> = [by_id.as_str(), text_id.as_str()].into();
    assert_eq!(forget_memories(&root, &ids, Duration::from_secs(5)).unwrap(), 1);
    let after = b.read("bd-1").unwrap().unwrap();
    assert_eq!(after.decisions.iter().map(|d| d.decision.as_str()).collect::<Vec<_>>(), ["Stay"]);
    assert_eq!(after.test_scenarios.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["burst"]);
    assert_eq!(after.next_steps, written.next_steps);
    assert_eq!(std::fs::read(tmp.path().join(".beads/bd-2.yaml")).unwrap(), before_2);
    assert_eq!(std::fs::read_to_string(tmp.path().join(".beads/bd-3.yaml")).unwrap(), "id: [unclosed\n");
    // Nothing left to forget changes nothing; no beads directory is no error.
    assert_eq!(forget_memories(&root, &ids, Duration::from_secs(5)).unwrap(), 0);
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(forget_memories(&StateDir::open_root(empty.path()).unwrap(), &ids, Duration::from_secs(5)).unwrap(), 0);
  }

  #[test]
  fn bad_ids_files_and_appends_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let b = beads(&tmp);
    for id in ["", "../x", ".x", "a/b", "x y"] {
      assert_eq!(b.read(id).unwrap_err().code(), "E_INVALID_ARGUMENT", "{id:?}");
    }
    assert!(b.read("bd-none").unwrap().is_none());
    std::fs::write(tmp.path().join("bd-1.yaml"), "id: bd-2\n").unwrap();
    assert_eq!(b.read("bd-1").unwrap_err().code(), "E_STATE_CORRUPT");
    std::fs::write(tmp.path().join("bd-3.yaml"), "id: [unclosed\n").unwrap();
    assert_eq!(b.append("bd-3", BeadAppend::default()).unwrap_err().code(), "E_STATE_CORRUPT");
    assert_eq!(std::fs::read_to_string(tmp.path().join("bd-3.yaml")).unwrap(), "id: [unclosed\n");
    let escape = BeadDecision {
      ts: "2026-01-01T00:00:00Z".into(),
      decision: "d".into(),
      rationale: None,
      evidence: vec![BeadEvidence { path: "${PROJECT_ROOT}/../etc/passwd".into(), line: 1, quote: "q".into() }],
      memory: None,
    };
    let err = b.append("bd-4", BeadAppend { decisions: vec![escape], ..Default::default() }).unwrap_err();
    assert_eq!(err.code(), "E_PATH_OUTSIDE_ROOT");
    assert!(!tmp.path().join("bd-4.yaml").exists());
    let bad_ts =
      BeadDecision { ts: "yesterday".into(), decision: "d".into(), rationale: None, evidence: vec![], memory: None };
    assert_eq!(
      b.append("bd-4", BeadAppend { decisions: vec![bad_ts], ..Default::default() }).unwrap_err().code(),
      "E_INVALID_ARGUMENT"
    );
    let created = b.append("bd-5", BeadAppend { next_steps: vec!["n".into()], ..Default::default() }).unwrap();
    assert_eq!(created.id, "bd-5");
  }

  /// A bead may be 4 MiB; nesting that deep would cost the YAML parser time in size times depth.
  /// It is refused once the reader meets it, and an append leaves the file as it was.
  #[test]
  fn deeply_nested_beads_are_corrupt_and_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let b = beads(&tmp);
    let n = 200_000;
    let text = format!("id: bd-6\ntitle: {}x{}\n", "[\"]\", ".repeat(n), "]".repeat(n));
    std::fs::write(tmp.path().join("bd-6.yaml"), &text).unwrap();
    let err = b.read("bd-6").unwrap_err();
    assert_eq!(err.code(), "E_STATE_CORRUPT");
    assert!(err.to_string().contains("nested deeper than 32 levels (line 2)"), "{err}");
    assert_eq!(b.append("bd-6", BeadAppend::default()).unwrap_err().code(), "E_STATE_CORRUPT");
    assert_eq!(std::fs::read_to_string(tmp.path().join("bd-6.yaml")).unwrap(), text);
  }
}
