//! The synthesis checkpoint before `/clear` (seed 000 §4.2, §4.7) and its pre-clear contract:
//! exit 0 permit, 1 block, 2 error (which blocks too).
//!
//! The seven steps, in the seed's order:
//!
//! 1. **Grounding** (blocking): [`super::grounding`] over the agent's trajectory of the day;
//!    the outcome is appended as a `grounding_check` record.
//! 2. **Negative grounding** (blocking): each claimed absence checked with two distinct queries
//!    over the workspace ([`super::grounding::verify_absence`]). An unverified ghost blocks in
//!    `strict` mode and warns in `warn` mode.
//! 3. **Decision Log**: each decision captured as a decision memory (redaction, gates, WAL),
//!    then consolidated, which renders it into NOTES.md's Decision Log with its rationale,
//!    evidence and test scenarios; Active Context and Pending Questions written.
//! 4. **Bead**: `decisions[]`, `test_scenarios[]`, `next_steps[]` and a `handoffs[]` entry
//!    appended to the session's bead, when it has one, redacted; each decision and its test
//!    scenarios name the decision memory of step 3 (`memory`), so forgetting it reaches them.
//! 5. **Trajectory**: a `session_handoff` record, unless the trajectory could not be checked
//!    (appending would hide its damage: an empty file would then pass the next check).
//! 6. **Decay to identifiers**: each identifier parsed and resolved below the workspace and
//!    written to Lightweight Identifiers (an identifier that does not resolve is reported, not
//!    written).
//! 7. **EDD**: every decision documents at least `edd.min_test_scenarios` scenarios (and, with
//!    `require_citations`, evidence).
//!
//! Steps 3-7 never block on a judgement (too few scenarios is a warning, recorded as
//! `edd_verified: false`), but an error in any step is exit 2: a ledger that could not be
//! written is exactly what `/clear` must not run past, and a check that could not run never
//! passes. Steps 3-7 run even when 1 or 2 block or fail, so that everything the session knew is
//! persisted whatever the verdict; the handoff record says `next_session_ready: false` then. A
//! decision the quality gates refuse (other than as a duplicate of a stored one) is an error
//! too, since it would otherwise be lost silently. A panic anywhere is exit 2.

use std::collections::{HashMap, HashSet};

use crate::error::{LoaError, Result};
use crate::gates::Gate;
use crate::memory::{Entry, MemoryKind, MemoryStore};
use crate::redact::{FieldRedactor, RedactOptions};
use crate::timestamp::format_ms;

use super::beads::{BeadAppend, BeadDecision, BeadEvidence, Handoff, TestScenario};
use super::decision::DecisionFields;
use super::grounding::{verify_absence, CodeIndex, GhostClaim, GhostVerdict, GroundingReport, GroundingStatus};
use super::identifier::Identifier;
use super::notes::{ContextItem, IdentifierRow, Question};
use super::options::GroundingEnforcement;
use super::trajectory::Event;
use super::workspace::Ledger;
use crate::memory::notes::one_line;

/// Evidence of a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceInput {
  /// `${PROJECT_ROOT}/path:line[-end]`.
  pub identifier: String,
  /// The code, word for word.
  pub quote: String,
}

/// A decision to persist.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecisionInput {
  pub decision: String,
  pub rationale: Option<String>,
  pub evidence: Vec<EvidenceInput>,
  pub test_scenarios: Vec<String>,
}

/// An identifier to keep in Lightweight Identifiers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentifierInput {
  pub identifier: String,
  pub purpose: String,
}

/// What the session hands over.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckpointInput {
  pub agent: String,
  pub session_id: String,
  pub bead_id: Option<String>,
  pub decisions: Vec<DecisionInput>,
  /// Merged into Active Context by key (`Current Bead` and `Last Checkpoint` are set here).
  pub active_context: Vec<ContextItem>,
  pub identifiers: Vec<IdentifierInput>,
  /// Merged into Pending Questions by text; `done: true` marks one answered.
  pub pending_questions: Vec<Question>,
  pub next_steps: Vec<String>,
  pub ghosts: Vec<GhostClaim>,
  /// When the checkpoint runs (ms since the Unix epoch); also the trajectory day checked.
  pub now_ms: i64,
}

/// One step's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct StepReport {
  /// 1 to 7.
  pub step: u8,
  pub name: &'static str,
  /// `pass`, `warn`, `block`, `error` or `skipped`.
  pub status: &'static str,
  pub messages: Vec<String>,
}

/// The checkpoint's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointReport {
  /// 0 permit, 1 block, 2 error.
  pub exit_code: i32,
  pub steps: Vec<StepReport>,
  pub grounding: GroundingReport,
  pub ghosts: Vec<GhostVerdict>,
  pub edd_verified: bool,
}

fn step(step: u8, name: &'static str, status: &'static str, messages: Vec<String>) -> StepReport {
  StepReport { step, name, status, messages }
}

fn err_text(e: &LoaError) -> String {
  format!("{}: {e}", e.code())
}

/// Runs the checkpoint (see the module docs). `store`: the session's memory store, which step 3
/// needs when there are decisions.
pub fn checkpoint(ledger: &Ledger, store: Option<&MemoryStore>, input: &CheckpointInput) -> CheckpointReport {
  match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(ledger, store, input))) {
    Ok(report) => report,
    Err(_) => CheckpointReport {
      exit_code: 2,
      steps: vec![step(0, "checkpoint", "error", vec!["E_INTERNAL: the checkpoint panicked".into()])],
      grounding: super::grounding::guarded(ledger.options.grounding.threshold, || {
        Err(LoaError::Internal("panic".into()))
      }),
      ghosts: Vec::new(),
      edd_verified: false,
    },
  }
}

fn run(ledger: &Ledger, store: Option<&MemoryStore>, input: &CheckpointInput) -> CheckpointReport {
  let o = &ledger.options;
  let mut steps = Vec::new();
  let mut blocked = false;
  let mut errored = false;

  // 1. Grounding.
  let grounding = ledger.grounding_check(&input.agent, input.now_ms);
  let status = match grounding.status {
    GroundingStatus::Pass => "pass",
    GroundingStatus::Disabled => "skipped",
    GroundingStatus::Warn => "warn",
    GroundingStatus::Fail => "block",
    GroundingStatus::Error => "error",
  };
  let mut messages = grounding.errors.clone();
  if let Some(r) = grounding.ratio {
    messages.push(format!(
      "grounding ratio {r:.2} ({} of {} claims), threshold {}",
      grounding.grounded_claims, grounding.total_claims, grounding.threshold
    ));
  }
  if grounding.status == GroundingStatus::Fail {
    messages.push(format!(
      "Cannot clear: {} claims lack evidence; add evidence or mark them [ASSUMPTION]",
      grounding.total_claims - grounding.grounded_claims
    ));
  }
  blocked |= grounding.status == GroundingStatus::Fail;
  errored |= grounding.status == GroundingStatus::Error;
  let checked = !matches!(grounding.status, GroundingStatus::Error | GroundingStatus::Disabled);
  if checked {
    let record = Event::GroundingCheck {
      total_claims: grounding.total_claims,
      grounded_claims: grounding.grounded_claims,
      assumptions: grounding.assumptions,
      grounding_ratio: grounding.ratio,
      threshold: grounding.threshold,
      status: grounding.status.as_str().into(),
    };
    if let Err(e) = ledger.trajectory().and_then(|t| t.append(&input.agent, input.now_ms, record)) {
      errored = true;
      messages.push(err_text(&e));
    }
  }
  steps.push(step(1, "grounding", if errored { "error" } else { status }, messages));

  // 2. Negative grounding.
  let mut ghosts = Vec::new();
  if input.ghosts.is_empty() || o.grounding.enforcement == GroundingEnforcement::Disabled {
    steps.push(step(2, "negative_grounding", "skipped", Vec::new()));
  } else {
    let verdicts = CodeIndex::build(ledger.root()).and_then(|index| {
      input
        .ghosts
        .iter()
        .map(|g| verify_absence(g, &index, o.grounding.negative_threshold, o.grounding.negative_queries as usize))
        .collect::<Result<Vec<_>>>()
    });
    match verdicts {
      Ok(v) => {
        let unverified: Vec<String> = v
          .iter()
          .filter(|g| !g.verified)
          .map(|g| format!("[UNVERIFIED GHOST] {}: {}", g.feature, g.reason.as_deref().unwrap_or("")))
          .collect();
        let status = match (unverified.is_empty(), o.grounding.enforcement) {
          (true, _) => "pass",
          (false, GroundingEnforcement::Strict) => {
            blocked = true;
            "block"
          }
          (false, _) => "warn",
        };
        steps.push(step(2, "negative_grounding", status, unverified));
        ghosts = v;
      }
      Err(e) => {
        errored = true;
        steps.push(step(2, "negative_grounding", "error", vec![err_text(&e)]));
      }
    }
  }

  // 7 (computed first: the handoff record carries it).
  let edd = &o.edd;
  let mut edd_messages = Vec::new();
  if edd.enabled {
    for (i, d) in input.decisions.iter().enumerate() {
      if (d.test_scenarios.len() as u64) < edd.min_test_scenarios {
        edd_messages.push(format!(
          "decision {} documents {} test scenarios; {} required",
          i + 1,
          d.test_scenarios.len(),
          edd.min_test_scenarios
        ));
      }
      if edd.require_citations && d.evidence.is_empty() {
        edd_messages.push(format!("decision {} has no evidence", i + 1));
      }
    }
  }
  let edd_verified = edd.enabled && edd_messages.is_empty();

  // 3. Decision Log and Session Continuity.
  let mut messages = Vec::new();
  let mut failed = false;
  // The memory each decision became: the bead's copy names it, so that forgetting the memory
  // reaches the copy.
  let mut memory_ids: Vec<Option<String>> = vec![None; input.decisions.len()];
  if !input.decisions.is_empty() {
    match store {
      None => {
        failed = true;
        messages.push("E_INVALID_ARGUMENT: decisions need the session's memory store".into());
      }
      Some(store) => {
        for (i, d) in input.decisions.iter().enumerate() {
          match record_decision(store, d, input.now_ms) {
            Ok(id) => memory_ids[i] = Some(id),
            Err(e) => {
              failed = true;
              messages.push(format!("decision {}: {}", i + 1, err_text(&e)));
            }
          }
        }
        if let Err(e) = store.consolidate() {
          failed = true;
          messages.push(err_text(&e));
        }
      }
    }
  }
  // 6 is folded in here: identifiers are checked now and written in the same NOTES.md edit.
  let mut context = input.active_context.clone();
  let set_here = |key: &str| same(key, "Last Checkpoint") || (input.bead_id.is_some() && same(key, "Current Bead"));
  context.retain(|c| !set_here(&c.key));
  if let Some(bead) = &input.bead_id {
    context.insert(0, ContextItem { key: "Current Bead".into(), value: bead.clone() });
  }
  context.push(ContextItem { key: "Last Checkpoint".into(), value: format_ms(input.now_ms) });
  let continuity = ContinuityEdit {
    active_context: context,
    identifiers: input.identifiers.clone(),
    pending_questions: input.pending_questions.clone(),
  };
  let (edit, id_messages) = match update_continuity(ledger, &continuity, input.now_ms) {
    Ok(done) => (Ok(done.changed), done.refused),
    Err(e) => (Err(e), Vec::new()),
  };
  if let Err(e) = edit {
    failed = true;
    messages.push(err_text(&e));
  }
  errored |= failed;
  steps.push(step(3, "decision_log", if failed { "error" } else { "pass" }, messages));

  // 4. Bead.
  match &input.bead_id {
    None => steps.push(step(4, "bead", "skipped", Vec::new())),
    Some(id) => {
      let add = BeadAppend {
        decisions: input
          .decisions
          .iter()
          .zip(&memory_ids)
          .map(|(d, id)| bead_decision(ledger, d, input.now_ms, id.clone()))
          .collect(),
        test_scenarios: input
          .decisions
          .iter()
          .zip(&memory_ids)
          .flat_map(|(d, id)| d.test_scenarios.iter().map(move |t| (t, id)))
          .map(|(t, id)| {
            // "input -> expected", as NOTES.md writes them; the whole text when there is no arrow.
            let (name, expected) = t.split_once("->").map_or((t.as_str(), t.as_str()), |(a, b)| (a.trim(), b.trim()));
            TestScenario { name: name.into(), kind: "scenario".into(), expected: expected.into(), memory: id.clone() }
          })
          .collect(),
        next_steps: input.next_steps.clone(),
        handoffs: vec![Handoff {
          session_id: input.session_id.clone(),
          ended: format_ms(input.now_ms),
          notes_ref: Some(ledger.options.notes_path.clone()),
          trajectory_ref: super::trajectory::file_name(&input.agent, input.now_ms).ok(),
          grounding_ratio: grounding.ratio,
        }],
      };
      match ledger.beads().and_then(|b| b.append(id, add)) {
        Ok(_) => steps.push(step(4, "bead", "pass", Vec::new())),
        Err(e) => {
          errored = true;
          steps.push(step(4, "bead", "error", vec![err_text(&e)]));
        }
      }
    }
  }

  // 5. Trajectory handoff.
  let event = Event::SessionHandoff {
    session_id: input.session_id.clone(),
    bead_id: input.bead_id.clone(),
    notes_refs: vec![ledger.options.notes_path.clone()],
    edd_verified,
    grounding_ratio: grounding.ratio,
    test_scenarios: input.decisions.iter().map(|d| d.test_scenarios.len() as u64).sum(),
    next_session_ready: !(blocked || errored),
  };
  if grounding.status == GroundingStatus::Error {
    // Appending to a trajectory that could not be checked would hide its damage (an empty,
    // truncated file would pass the next check): it stays as it is until someone looks.
    steps.push(step(5, "session_handoff", "error", vec!["not written: the trajectory could not be checked".into()]));
  } else {
    match ledger.trajectory().and_then(|t| t.append(&input.agent, input.now_ms, event)) {
      Ok(_) => steps.push(step(5, "session_handoff", "pass", Vec::new())),
      Err(e) => {
        errored = true;
        steps.push(step(5, "session_handoff", "error", vec![err_text(&e)]));
      }
    }
  }

  steps.push(step(6, "identifiers", if id_messages.is_empty() { "pass" } else { "warn" }, id_messages));
  let edd_status = if !edd.enabled {
    "skipped"
  } else if edd_verified {
    "pass"
  } else {
    "warn"
  };
  steps.push(step(7, "edd", edd_status, edd_messages));

  let exit_code = if errored {
    2
  } else if blocked {
    1
  } else {
    0
  };
  CheckpointReport { exit_code, steps, grounding, ghosts, edd_verified }
}

fn same(a: &str, b: &str) -> bool {
  one_line(a).eq_ignore_ascii_case(&one_line(b))
}

/// An edit of the Session Continuity regions the ledger owns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContinuityEdit {
  /// Merged into Active Context by key (case-insensitive): a new value replaces the old one.
  pub active_context: Vec<ContextItem>,
  /// Each resolved below the workspace first; one that does not resolve is left out and
  /// reported.
  pub identifiers: Vec<IdentifierInput>,
  /// Merged by text; `done: true` marks one answered.
  pub pending_questions: Vec<Question>,
}

impl ContinuityEdit {
  /// Every text redacted: keys and values of Active Context, identifiers and purposes,
  /// questions.
  pub fn redacted(&self, options: &RedactOptions) -> ContinuityEdit {
    let mut r = FieldRedactor::new(options);
    let mut out = self.clone();
    for (i, c) in out.active_context.iter_mut().enumerate() {
      r.text_mut(&format!("activeContext[{i}].key"), &mut c.key);
      r.text_mut(&format!("activeContext[{i}].value"), &mut c.value);
    }
    for (i, id) in out.identifiers.iter_mut().enumerate() {
      r.text_mut(&format!("identifiers[{i}].identifier"), &mut id.identifier);
      r.text_mut(&format!("identifiers[{i}].purpose"), &mut id.purpose);
    }
    for (i, q) in out.pending_questions.iter_mut().enumerate() {
      r.text_mut(&format!("pendingQuestions[{i}].text"), &mut q.text);
    }
    out
  }
}

/// What [`update_continuity`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContinuityOutcome {
  /// Whether NOTES.md changed.
  pub changed: bool,
  /// One message per identifier left out (its error code only, never the identifier).
  pub refused: Vec<String>,
}

/// Merges `edit` into NOTES.md's Active Context, Lightweight Identifiers and Pending Questions
/// (under the consolidation lock, written atomically). Every text of `edit` is redacted first
/// (with the ledger's options), and everything after sees only the redacted text: an
/// identifier whose path redaction changes no longer resolves and is refused. Nothing written
/// earlier is dropped: items merge by key, identifier and question text, and what `edit` says
/// replaces what was there under the same key.
pub fn update_continuity(ledger: &Ledger, edit: &ContinuityEdit, now_ms: i64) -> Result<ContinuityOutcome> {
  let edit = &edit.redacted(&ledger.options.redaction);
  let mut rows = Vec::new();
  let mut refused = Vec::new();
  for item in &edit.identifiers {
    match ledger.resolve(&item.identifier) {
      Ok(r) => rows.push(IdentifierRow {
        identifier: r.identifier.to_string(),
        purpose: item.purpose.clone(),
        last_verified: format_ms(now_ms),
      }),
      Err(e) => refused.push(format!("identifier not kept ({})", e.code())),
    }
  }
  // Sets of keys, so that a long NOTES.md and a long edit cost linear time, not their product.
  let norm = |s: &str| one_line(s).to_ascii_lowercase();
  let changed = ledger.edit_notes(|doc| {
    let new_keys: HashSet<String> = edit.active_context.iter().map(|c| norm(&c.key)).collect();
    let mut all_context = doc.active_context();
    all_context.retain(|old| !new_keys.contains(&norm(&old.key)));
    all_context.extend(edit.active_context.iter().cloned());
    doc.set_active_context(&all_context);
    let new_ids: HashSet<&str> = rows.iter().map(|r| r.identifier.as_str()).collect();
    let mut all_rows = doc.identifiers();
    all_rows.retain(|old| !new_ids.contains(old.identifier.as_str()));
    all_rows.extend(rows.iter().cloned());
    doc.set_identifiers(&all_rows);
    let mut questions = doc.pending_questions();
    let mut at: HashMap<String, usize> = questions.iter().enumerate().map(|(i, q)| (norm(&q.text), i)).collect();
    for q in &edit.pending_questions {
      match at.get(&norm(&q.text)) {
        Some(&i) => questions[i].done = q.done,
        None => {
          at.insert(norm(&q.text), questions.len());
          questions.push(q.clone());
        }
      }
    }
    doc.set_pending_questions(&questions);
  })?;
  Ok(ContinuityOutcome { changed, refused })
}

/// Captures one decision as a decision memory and returns the memory's id (that of the stored
/// one when it is a duplicate). A refusal by a gate other than `duplicate` (already stored) is
/// an error.
pub fn record_decision(store: &MemoryStore, d: &DecisionInput, now_ms: i64) -> Result<String> {
  let fields = DecisionFields {
    rationale: d.rationale.clone(),
    evidence: d.evidence.iter().map(|e| format!("`{}` [{}]", e.quote, e.identifier)).collect(),
    test_scenarios: d.test_scenarios.clone(),
  };
  let mut entry = Entry::new(MemoryKind::Decision, d.decision.clone());
  entry.confidence = Some(1.0);
  entry.timestamp = Some(format_ms(now_ms));
  entry.metadata = Some(fields.to_metadata());
  // One try: the caller's retry policy acts when the disk refuses, and the thread running the
  // checkpoint (a shared pool's, under Node) never sleeps.
  let outcome = store.capture_once(&entry, &Default::default())?;
  if outcome.accepted {
    return Ok(outcome.id.unwrap_or_else(|| store.memory_id_of(&d.decision)));
  }
  if outcome.blocked {
    return Err(LoaError::InvalidArgument("the decision was blocked by redaction".into()));
  }
  let failed: Vec<&str> = outcome.gates.iter().filter(|g| !g.pass).map(|g| g.name.as_str()).collect();
  if failed == [Gate::Duplicate.as_str()] {
    return Ok(store.memory_id_of(&d.decision));
  }
  Err(LoaError::InvalidArgument(format!("the decision was refused by the quality gates: {}", failed.join(", "))))
}

/// A decision as a bead records it: evidence whose identifier does not parse is left out.
/// `memory`: the decision memory it copies, if any. The bead redacts it when it is appended.
pub fn bead_decision(ledger: &Ledger, d: &DecisionInput, now_ms: i64, memory: Option<String>) -> BeadDecision {
  BeadDecision {
    memory,
    ts: format_ms(now_ms),
    decision: d.decision.clone(),
    rationale: d.rationale.clone(),
    evidence: d
      .evidence
      .iter()
      .filter_map(|e| {
        let id = Identifier::parse(&e.identifier, ledger.root()).ok()?;
        Some(BeadEvidence {
          path: format!("{}{}", super::identifier::PREFIX, id.path),
          line: id.start,
          quote: e.quote.clone(),
        })
      })
      .collect(),
  }
}
