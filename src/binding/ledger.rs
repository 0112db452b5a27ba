//! The Lossless Ledger (`src/ledger/`, docs/ledger.md): the `Ledger` class over one workspace's
//! ledger files, and `transitionStatus`. One declaration per JS shape, converted by `convert`;
//! the promise exports (`recall`, `groundingCheck`, `checkpoint`) reject, never throw, and each
//! has a synchronous twin.

use std::path::PathBuf;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::{sys, Env, Unknown};
use napi_derive::napi;

use super::convert::{
  arg, instance, js_from, object, objects, opt_arg, opt_object, string_union, Bool, Choice, Given, Int, JsonObject,
  List, Obj, Str, Text,
};
use super::memory::{MemoryRedactionOptions, MemoryStore};
use super::{sync, sync_twin, CoreTask};
use crate::error::{LoaError, Result};
use crate::ledger::{self as core, beads, grounding, notes, persistence, trajectory, Status};
use crate::timestamp::{format_ms, now_ms, parse_rfc3339_ms};

string_union! {
  "A workflow's status in the persistence protocol (seed 004)."
  WorkflowStatus <=> Status {
    created = Created,
    in_progress = InProgress,
    blocked = Blocked,
    completed = Completed,
    archived = Archived,
  }
}

string_union! {
  "What a MEMORY.md line records: a `learning` (written when one is found), a `completion` (mandatory when a workflow enters `completed`) or a `checkpoint` (a major phase transition)."
  MemoryLineKind <=> persistence::LineKind {
    learning = Learning,
    completion = Completion,
    checkpoint = Checkpoint,
  }
}

string_union! {
  "The grounding check's verdict: `pass` and `warn` permit (exit 0), `fail` blocks (1), `error` blocks (2), `disabled` checked nothing (0)."
  GroundingStatus <=> grounding::GroundingStatus {
    pass = Pass,
    warn = Warn,
    fail = Fail,
    disabled = Disabled,
    error = Error,
  }
}

string_union! {
  "How a claim of the trajectory is grounded: `citation` (a word-for-word quote at a lightweight identifier), `assumption` (counted, never grounded) or `none`."
  ClaimGrounding <=> trajectory::Grounding {
    citation = Citation,
    assumption = Assumption,
    none = None,
  }
}

/// The statuses `from -> to` may take: exactly `created -> in_progress`,
/// `in_progress -> blocked`, `blocked -> in_progress`, `in_progress -> completed`,
/// `completed -> archived`, and staying put. Returns `to`; anything else throws
/// `E_ILLEGAL_TRANSITION`.
#[napi(ts_args_type = "from: WorkflowStatus, to: WorkflowStatus")]
pub fn transition_status(env: Env, from: Unknown, to: Unknown) -> napi::Result<WorkflowStatus> {
  sync(&env, || {
    let from: Status = arg::<Choice<WorkflowStatus>>(from, "from")?.into();
    let to: Status = arg::<Choice<WorkflowStatus>>(to, "to")?.into();
    core::transition_status(from, to).map(Into::into)
  })
}

// ---------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------

/// Where `Ledger.open` finds the ledger.
#[napi(object, object_to_js = false)]
pub struct LedgerOpenOptions {
  /// The workspace (the project root of lightweight identifiers); its `.loa.config.yaml` gives
  /// every path and setting (docs/ledger.md).
  #[napi(ts_type = "string")]
  pub workspace_dir: Str,
  /// How every text the ledger is given is redacted before it reaches a file: NOTES.md's
  /// regions, beads, the trajectory, L1 state `data` (keys, strings and numbers), MEMORY.md
  /// lines, and the decisions of a store the ledger opens itself. Default: `redact`'s
  /// defaults. Pass the options the workspace's `MemoryStore` uses, so that an allowlisted
  /// address is kept (and a pseudonym is the same) in both.
  #[napi(ts_type = "MemoryRedactionOptions")]
  pub redaction: Option<Option<Obj<MemoryRedactionOptions>>>,
}

/// `Ledger.recall`'s question.
#[napi(object, object_to_js = false)]
pub struct LedgerRecallOptions {
  /// 1: the Session Continuity section, within `session_continuity.level1_tokens`; 2: the
  /// decisions that best answer `query`, within `level2_tokens`; 3: the whole NOTES.md.
  #[napi(ts_type = "1 | 2 | 3")]
  pub level: Int,
  /// Level 2's words (required there).
  #[napi(ts_type = "string")]
  pub query: Option<Option<Text>>,
  /// Level 2: most decisions. Default 5.
  #[napi(ts_type = "number")]
  pub k: Option<Option<Int>>,
  /// The level's token budget instead of the configured one (levels 1 and 2).
  #[napi(ts_type = "number")]
  pub tokens: Option<Option<Int>>,
}

struct Recall {
  level: u64,
  query: Option<String>,
  k: usize,
  tokens: Option<u64>,
}

impl TryFrom<LedgerRecallOptions> for Recall {
  type Error = LoaError;

  fn try_from(o: LedgerRecallOptions) -> Result<Recall> {
    let level = o.level.0;
    let query: Option<String> = o.query.given();
    match (level, &query) {
      (1 | 3, _) => {}
      (2, Some(q)) if !q.trim().is_empty() => {}
      (2, _) => return crate::error::invalid("`options.query` is required at level 2"),
      _ => return crate::error::invalid("`options.level` must be 1, 2 or 3"),
    }
    let k = o.k.given().map_or(5, |k: u64| k.clamp(1, 1000) as usize);
    Ok(Recall { level, query, k, tokens: o.tokens.given() })
  }
}

/// Whose trajectory, and when: `Ledger.groundingCheck`'s and `Ledger.readTrajectory`'s options.
#[napi(object, object_to_js = false)]
pub struct LedgerDayOptions {
  /// The agent (1-64 of `A-Z a-z 0-9 . _ -`). Default `main`.
  #[napi(ts_type = "string")]
  pub agent: Option<Option<Str>>,
  /// RFC 3339: the UTC day read. Default now.
  #[napi(ts_type = "string")]
  pub at: Option<Option<Str>>,
}

/// The agent when none is given: OpenClaw's default agent.
const DEFAULT_AGENT: &str = "main";

struct Day {
  agent: String,
  at_ms: i64,
}

fn at_ms(at: Option<String>, name: &str) -> Result<i64> {
  at.map_or_else(|| Ok(now_ms()), |t| parse_rfc3339_ms(&t, name))
}

impl TryFrom<LedgerDayOptions> for Day {
  type Error = LoaError;

  fn try_from(o: LedgerDayOptions) -> Result<Day> {
    Ok(Day {
      agent: o.agent.given().unwrap_or_else(|| DEFAULT_AGENT.into()),
      at_ms: at_ms(o.at.given(), "options.at")?,
    })
  }
}

impl Default for Day {
  fn default() -> Self {
    Day { agent: DEFAULT_AGENT.into(), at_ms: now_ms() }
  }
}

/// Evidence of a decision: the code quoted word for word at a lightweight identifier.
#[napi(object, object_to_js = false)]
pub struct LedgerEvidence {
  /// `${PROJECT_ROOT}/path:line` or `:start-end`.
  #[napi(ts_type = "string")]
  pub identifier: Str,
  #[napi(ts_type = "string")]
  pub quote: Str,
}

impl From<LedgerEvidence> for core::EvidenceInput {
  fn from(e: LedgerEvidence) -> core::EvidenceInput {
    core::EvidenceInput { identifier: e.identifier.0, quote: e.quote.0 }
  }
}

/// A decision to persist.
#[napi(object, object_to_js = false)]
pub struct LedgerDecision {
  /// What was decided (redacted, gated, stored as a decision memory).
  #[napi(ts_type = "string")]
  pub decision: Str,
  #[napi(ts_type = "string")]
  pub rationale: Option<Option<Str>>,
  #[napi(ts_type = "Array<LedgerEvidence>")]
  pub evidence: Option<Option<List<Obj<LedgerEvidence>>>>,
  /// `input -> expected`; EDD wants `edd.min_test_scenarios` (3) of them.
  #[napi(ts_type = "Array<string>")]
  pub test_scenarios: Option<Option<List<Str>>>,
}

impl From<LedgerDecision> for core::DecisionInput {
  fn from(d: LedgerDecision) -> core::DecisionInput {
    core::DecisionInput {
      decision: d.decision.0,
      rationale: d.rationale.given(),
      evidence: objects(d.evidence),
      test_scenarios: d.test_scenarios.given().unwrap_or_default(),
    }
  }
}

/// One `- **Key**: value` line of Active Context.
#[napi(object, object_to_js = false)]
pub struct LedgerContextInput {
  #[napi(ts_type = "string")]
  pub key: Str,
  #[napi(ts_type = "string")]
  pub value: Str,
}

impl From<LedgerContextInput> for notes::ContextItem {
  fn from(c: LedgerContextInput) -> notes::ContextItem {
    notes::ContextItem { key: c.key.0, value: c.value.0 }
  }
}

/// An identifier to keep in Lightweight Identifiers (resolved below the workspace first).
#[napi(object, object_to_js = false)]
pub struct LedgerIdentifierInput {
  #[napi(ts_type = "string")]
  pub identifier: Str,
  #[napi(ts_type = "string")]
  pub purpose: Str,
}

impl From<LedgerIdentifierInput> for core::IdentifierInput {
  fn from(i: LedgerIdentifierInput) -> core::IdentifierInput {
    core::IdentifierInput { identifier: i.identifier.0, purpose: i.purpose.0 }
  }
}

/// A Pending Question (`done: true` marks it answered).
#[napi(object, object_to_js = false)]
pub struct LedgerQuestionInput {
  #[napi(ts_type = "string")]
  pub text: Str,
  #[napi(ts_type = "boolean")]
  pub done: Option<Option<Bool>>,
}

impl From<LedgerQuestionInput> for notes::Question {
  fn from(q: LedgerQuestionInput) -> notes::Question {
    notes::Question { text: q.text.0, done: q.done.given().unwrap_or(false) }
  }
}

/// A feature claimed absent, with the (at least two different) queries that looked for it.
#[napi(object, object_to_js = false)]
pub struct LedgerGhostInput {
  #[napi(ts_type = "string")]
  pub feature: Str,
  #[napi(ts_type = "Array<string>")]
  pub queries: List<Str>,
}

impl From<LedgerGhostInput> for grounding::GhostClaim {
  fn from(g: LedgerGhostInput) -> grounding::GhostClaim {
    grounding::GhostClaim { feature: g.feature.0, queries: g.queries.into() }
  }
}

/// What the session hands over to `Ledger.checkpoint`.
#[napi(object, object_to_js = false)]
pub struct LedgerCheckpointInput {
  /// The session (its handoff record and bead handoff name it; without a `store`, the one
  /// whose memory store is opened for the decisions).
  #[napi(ts_type = "string")]
  pub session_id: Str,
  /// The agent whose trajectory is checked and written. Default `main`.
  #[napi(ts_type = "string")]
  pub agent: Option<Option<Str>>,
  /// The session's bead (`.beads/<id>.yaml`), appended to and named in Active Context.
  #[napi(ts_type = "string")]
  pub bead_id: Option<Option<Str>>,
  #[napi(ts_type = "Array<LedgerDecision>")]
  pub decisions: Option<Option<List<Obj<LedgerDecision>>>>,
  /// Merged into Active Context by key.
  #[napi(ts_type = "Array<LedgerContextInput>")]
  pub active_context: Option<Option<List<Obj<LedgerContextInput>>>>,
  #[napi(ts_type = "Array<LedgerIdentifierInput>")]
  pub identifiers: Option<Option<List<Obj<LedgerIdentifierInput>>>>,
  /// Merged into Pending Questions by text.
  #[napi(ts_type = "Array<LedgerQuestionInput>")]
  pub pending_questions: Option<Option<List<Obj<LedgerQuestionInput>>>>,
  #[napi(ts_type = "Array<string>")]
  pub next_steps: Option<Option<List<Str>>>,
  /// Claimed absences, checked by negative grounding (step 2).
  #[napi(ts_type = "Array<LedgerGhostInput>")]
  pub ghosts: Option<Option<List<Obj<LedgerGhostInput>>>>,
  /// RFC 3339: when the checkpoint runs (the trajectory day checked). Default now.
  #[napi(ts_type = "string")]
  pub at: Option<Option<Str>>,
}

impl TryFrom<LedgerCheckpointInput> for core::CheckpointInput {
  type Error = LoaError;

  fn try_from(i: LedgerCheckpointInput) -> Result<core::CheckpointInput> {
    Ok(core::CheckpointInput {
      agent: i.agent.given().unwrap_or_else(|| DEFAULT_AGENT.into()),
      session_id: i.session_id.0,
      bead_id: i.bead_id.given(),
      decisions: objects(i.decisions),
      active_context: objects(i.active_context),
      identifiers: objects(i.identifiers),
      pending_questions: objects(i.pending_questions),
      next_steps: i.next_steps.given().unwrap_or_default(),
      ghosts: objects(i.ghosts),
      now_ms: at_ms(i.at.given(), "input.at")?,
    })
  }
}

/// `Ledger.editNotes`'s edit of Session Continuity. Items merge into what is there: by key,
/// identifier and question text. An entry the file already has (as the seed writes it) is
/// replaced on its own line in its own style; a new one goes after the section's last entry, or
/// into the ledger's marked region when the section has no list of its own. Nothing else in the
/// file changes.
#[napi(object, object_to_js = false)]
pub struct LedgerNotesEdit {
  #[napi(ts_type = "Array<LedgerContextInput>")]
  pub active_context: Option<Option<List<Obj<LedgerContextInput>>>>,
  /// Each resolved below the workspace; one that does not resolve is left out and reported.
  #[napi(ts_type = "Array<LedgerIdentifierInput>")]
  pub identifiers: Option<Option<List<Obj<LedgerIdentifierInput>>>>,
  #[napi(ts_type = "Array<LedgerQuestionInput>")]
  pub pending_questions: Option<Option<List<Obj<LedgerQuestionInput>>>>,
}

impl From<LedgerNotesEdit> for core::ContinuityEdit {
  fn from(e: LedgerNotesEdit) -> core::ContinuityEdit {
    core::ContinuityEdit {
      active_context: objects(e.active_context),
      identifiers: objects(e.identifiers),
      pending_questions: objects(e.pending_questions),
    }
  }
}

/// A test scenario of a bead.
#[napi(object, object_to_js = false)]
pub struct BeadScenarioInput {
  #[napi(ts_type = "string")]
  pub name: Str,
  /// `happy_path`, `edge_case`, `error_handling`, ... Default `scenario`.
  #[napi(js_name = "type", ts_type = "string")]
  pub kind: Option<Option<Str>>,
  #[napi(ts_type = "string")]
  pub expected: Str,
}

impl From<BeadScenarioInput> for beads::TestScenario {
  fn from(t: BeadScenarioInput) -> beads::TestScenario {
    beads::TestScenario {
      name: t.name.0,
      kind: t.kind.given().unwrap_or_else(|| "scenario".into()),
      expected: t.expected.0,
      memory: None,
    }
  }
}

/// What `Ledger.appendBead` adds to a bead (created when missing).
#[napi(object, object_to_js = false)]
pub struct BeadAddInput {
  /// Recorded with the time of the call; evidence whose identifier does not parse is left out.
  #[napi(ts_type = "Array<LedgerDecision>")]
  pub decisions: Option<Option<List<Obj<LedgerDecision>>>>,
  #[napi(ts_type = "Array<BeadScenarioInput>")]
  pub test_scenarios: Option<Option<List<Obj<BeadScenarioInput>>>>,
  #[napi(ts_type = "Array<string>")]
  pub next_steps: Option<Option<List<Str>>>,
}

struct BeadAdd {
  decisions: Vec<core::DecisionInput>,
  test_scenarios: Vec<beads::TestScenario>,
  next_steps: Vec<String>,
}

impl From<BeadAddInput> for BeadAdd {
  fn from(b: BeadAddInput) -> BeadAdd {
    BeadAdd {
      decisions: objects(b.decisions),
      test_scenarios: objects(b.test_scenarios),
      next_steps: b.next_steps.given().unwrap_or_default(),
    }
  }
}

/// A `cite` record: a claim the agent made and how it is grounded.
#[napi(object, object_to_js = false)]
pub struct TrajectoryCiteInput {
  /// Default `main`.
  #[napi(ts_type = "string")]
  pub agent: Option<Option<Str>>,
  #[napi(ts_type = "string")]
  pub claim: Str,
  #[napi(ts_type = "ClaimGrounding")]
  pub grounding: Choice<ClaimGrounding>,
  /// Required for a `citation` to count as grounded.
  #[napi(ts_type = "LedgerEvidence")]
  pub evidence: Option<Option<Obj<LedgerEvidence>>>,
  /// RFC 3339. Default now.
  #[napi(ts_type = "string")]
  pub at: Option<Option<Str>>,
}

struct Cite {
  agent: String,
  at_ms: i64,
  event: trajectory::Event,
}

impl TryFrom<TrajectoryCiteInput> for Cite {
  type Error = LoaError;

  fn try_from(c: TrajectoryCiteInput) -> Result<Cite> {
    Ok(Cite {
      agent: c.agent.given().unwrap_or_else(|| DEFAULT_AGENT.into()),
      at_ms: at_ms(c.at.given(), "record.at")?,
      event: trajectory::Event::Cite {
        claim: c.claim.0,
        grounding: c.grounding.into(),
        evidence: c
          .evidence
          .flatten()
          .map(|e| trajectory::Evidence { identifier: e.0.identifier.0, quote: e.0.quote.0 }),
      },
    })
  }
}

/// The MEMORY.md line of a state change, in seed 004's wording.
#[napi(object, object_to_js = false)]
pub struct LedgerMemoryLineInput {
  /// `learning`: `text` as it is. `completion`:
  /// `Completed {workflowType} for {context}: {outcome}`. `checkpoint`:
  /// `Active {workflowType} workflow: {completed} completed, {next} {context}`.
  #[napi(ts_type = "MemoryLineKind")]
  pub kind: Choice<MemoryLineKind>,
  /// A learning's text (required for `learning`; at most 2 KiB, never cut).
  #[napi(ts_type = "string")]
  pub text: Option<Option<Str>>,
  /// `APEX`, `DEBUG`, ... (completion and checkpoint).
  #[napi(ts_type = "string")]
  pub workflow_type: Option<Option<Str>>,
  /// What the workflow is about (completion and checkpoint).
  #[napi(ts_type = "string")]
  pub context: Option<Option<Str>>,
  /// How it ended (completion).
  #[napi(ts_type = "string")]
  pub outcome: Option<Option<Str>>,
  /// The phase just completed (checkpoint), `plan`.
  #[napi(ts_type = "string")]
  pub completed: Option<Option<Str>>,
  /// What comes next, as a verb (checkpoint), `implementing`.
  #[napi(ts_type = "string")]
  pub next: Option<Option<Str>>,
}

/// One state change for `Ledger.persistState`.
#[napi(object, object_to_js = false)]
pub struct LedgerPersistInput {
  /// The workflow's state name: 1-64 of `a-z 0-9 . _ -`, starting with a letter or digit
  /// (`<persistence.state_dir>/<workflow>.json`).
  #[napi(ts_type = "string")]
  pub workflow: Str,
  /// The new status; the change from the stored one is checked (`transitionStatus`).
  #[napi(ts_type = "WorkflowStatus")]
  pub status: Choice<WorkflowStatus>,
  /// The state's data (JSON; the whole file at most 4 MiB). Default `{}`.
  #[napi(ts_type = "Record<string, unknown>")]
  pub data: Option<Option<JsonObject>>,
  /// The MEMORY.md line (L2) written after the state; required when entering `completed`.
  #[napi(ts_type = "LedgerMemoryLineInput")]
  pub memory: Option<Option<Obj<LedgerMemoryLineInput>>>,
  /// RFC 3339: the state's `lastUpdated` and the line's time. Default now.
  #[napi(ts_type = "string")]
  pub at: Option<Option<Str>>,
}

struct Persist {
  name: String,
  status: Status,
  data: serde_json::Map<String, serde_json::Value>,
  line: Option<persistence::MemoryLine>,
  now_ms: i64,
}

fn required(value: Option<String>, field: &str, kind: &str) -> Result<String> {
  match value {
    Some(v) if !v.trim().is_empty() => Ok(v),
    _ => crate::error::invalid(format!("`input.memory.{field}` is required for a `{kind}` line")),
  }
}

impl TryFrom<LedgerPersistInput> for Persist {
  type Error = LoaError;

  fn try_from(i: LedgerPersistInput) -> Result<Persist> {
    let name = i.workflow.0;
    let status: Status = i.status.into();
    let now_ms = at_ms(i.at.given(), "input.at")?;
    let line = match i.memory.flatten().map(|m| m.0) {
      None => None,
      Some(m) => {
        let kind: persistence::LineKind = m.kind.into();
        let workflow_type = || required(m.workflow_type.clone().given(), "workflowType", kind.as_str());
        let context = || required(m.context.clone().given(), "context", kind.as_str());
        Some(match kind {
          persistence::LineKind::Learning => persistence::MemoryLine {
            ts_ms: now_ms,
            kind,
            name: Some(name.clone()),
            status: Some(status),
            text: required(m.text.given(), "text", kind.as_str())?,
          },
          persistence::LineKind::Completion => persistence::MemoryLine::completion(
            now_ms,
            &name,
            &workflow_type()?,
            &context()?,
            &required(m.outcome.given(), "outcome", kind.as_str())?,
          ),
          persistence::LineKind::Checkpoint => persistence::MemoryLine::checkpoint(
            now_ms,
            &name,
            status,
            &workflow_type()?,
            &required(m.completed.given(), "completed", kind.as_str())?,
            &required(m.next.given(), "next", kind.as_str())?,
            &context()?,
          ),
        })
      }
    };
    Ok(Persist { name, status, data: i.data.flatten().map(|d| d.0).unwrap_or_default(), line, now_ms })
  }
}

/// A `MemoryStore` argument: the store it wraps ([`instance`]).
pub struct Store(pub Arc<crate::memory::MemoryStore>);

impl FromNapiValue for Store {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    let store = instance::<MemoryStore>(env, value, "must be a MemoryStore (from MemoryStore.open)")?;
    Ok(Store(Arc::clone(&store.inner)))
  }
}

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------

/// One `- **Key**: value` line of Active Context.
#[napi(object, object_from_js = false)]
pub struct LedgerContextItem {
  pub key: String,
  pub value: String,
}

js_from!(|c: notes::ContextItem| LedgerContextItem { key, value });

/// One row of Lightweight Identifiers.
#[napi(object, object_from_js = false)]
pub struct LedgerIdentifierRow {
  pub identifier: String,
  pub purpose: String,
  /// As written: RFC 3339 when the ledger wrote the row, the seed's own text (`14:25:00Z`) when a
  /// person or the original framework did.
  pub last_verified: String,
}

js_from!(|r: notes::IdentifierRow| LedgerIdentifierRow { identifier, purpose, last_verified });

/// One Pending Question.
#[napi(object, object_from_js = false)]
pub struct LedgerQuestion {
  pub text: String,
  /// Answered (`- [x]`).
  pub done: bool,
}

js_from!(|q: notes::Question| LedgerQuestion { text, done });

/// One entry of the Decision Log as read back (the ledger's and the humans').
#[napi(object, object_from_js = false)]
pub struct LedgerDecisionEntry {
  /// `2026-01-15T14:30:00Z - Token Expiry Handling`.
  pub heading: String,
  /// The heading's timestamp (UTC, RFC 3339), when it has one.
  pub timestamp: Option<String>,
  pub title: String,
  pub decision: String,
  pub rationale: Option<String>,
  pub evidence: Vec<String>,
  pub test_scenarios: Vec<String>,
  /// Who decided: a Decision Log table's `Agent` (`Decided By`) column or a block's `Agent`
  /// bullet, as written.
  pub agent: Option<String>,
  /// The table's other columns, or the block's other bullets (`Pattern`, `Source`), as written
  /// and in their order.
  pub extra: Vec<LedgerNotesField>,
  /// The entry's markdown as written (a table row: the row's line).
  pub text: String,
}

js_from!(|d: crate::ledger::decision::DecisionEntry| LedgerDecisionEntry {
  heading,
  timestamp = d.ts_ms.map(format_ms),
  title,
  decision,
  rationale,
  evidence,
  test_scenarios,
  agent,
  extra = fields(d.extra),
  text,
});

/// A column or bullet of NOTES.md that has no field of its own: its header (or key) and value.
#[napi(object, object_from_js = false)]
pub struct LedgerNotesField {
  pub name: String,
  pub value: String,
}

fn fields(pairs: Vec<(String, String)>) -> Vec<LedgerNotesField> {
  pairs.into_iter().map(|(name, value)| LedgerNotesField { name, value }).collect()
}

/// One row of the Session Continuity session log (`| Timestamp | Agent | Summary |`), as
/// written.
#[napi(object, object_from_js = false)]
pub struct LedgerSessionLogRow {
  /// The `Timestamp` (or `Date`) cell, as written (`2026-02-02`).
  pub timestamp: String,
  pub agent: String,
  pub summary: String,
  /// Other columns, in their order.
  pub extra: Vec<LedgerNotesField>,
}

js_from!(|r: crate::ledger::notes_log::SessionLogRow| LedgerSessionLogRow {
  timestamp,
  agent,
  summary,
  extra = fields(r.extra),
});

/// NOTES.md as the ledger reads it.
#[napi(object, object_from_js = false)]
pub struct LedgerNotes {
  /// The whole file (the template when there is none yet).
  pub text: String,
  /// The `## Session Continuity` section, found by heading.
  pub session_continuity: Option<String>,
  /// Active Context, one entry per key: the section's own `- **Key**: value` lines (as the
  /// seed writes them, in file order) and the ledger's marked region (whose value wins for a key
  /// in both).
  pub active_context: Vec<LedgerContextItem>,
  /// Lightweight Identifiers, one row per identifier: the section's own table (columns found by
  /// header name) and the ledger's region.
  pub identifiers: Vec<LedgerIdentifierRow>,
  /// Pending Questions, one per text: `- [ ]` / `- [x]` items and plain bullets (open) of the
  /// section, and the ledger's region.
  pub pending_questions: Vec<LedgerQuestion>,
  /// The Decision Log, in file order: `####` entries, the rows of a decision table (columns
  /// found by name), `**Decision: X**` blocks and dated bullets (`- **2026-04-13:** text`).
  pub decisions: Vec<LedgerDecisionEntry>,
  /// The Session Continuity session-log table's rows, as the original framework's scripts
  /// write it; empty when there is none.
  pub session_log: Vec<LedgerSessionLogRow>,
  /// `## Active Sub-Goals` items, as written after their bullet.
  pub sub_goals: Vec<String>,
  /// `## Discovered Technical Debt` items, as written.
  pub technical_debt: Vec<String>,
  /// `## Blockers & Dependencies` items, as written.
  pub blockers: Vec<String>,
}

impl From<notes::NotesDoc> for LedgerNotes {
  fn from(doc: notes::NotesDoc) -> LedgerNotes {
    use super::convert::Each;
    LedgerNotes {
      session_continuity: doc.session_continuity().map(str::to_string),
      active_context: doc.active_context().each(),
      identifiers: doc.identifiers().each(),
      pending_questions: doc.pending_questions().each(),
      decisions: doc.decisions().each(),
      session_log: doc.session_log().each(),
      sub_goals: doc.sub_goals(),
      technical_debt: doc.technical_debt(),
      blockers: doc.blockers(),
      text: doc.text().to_string(),
    }
  }
}

/// What `Ledger.editNotes` did.
#[napi(object, object_from_js = false)]
pub struct LedgerNotesEdited {
  /// Whether NOTES.md changed.
  pub changed: bool,
  /// One message per identifier left out (its error code, never the identifier).
  pub refused: Vec<String>,
}

js_from!(|o: core::ContinuityOutcome| LedgerNotesEdited { changed, refused });

/// A decision found by level-2 recall.
#[napi(object, object_from_js = false)]
pub struct LedgerDecisionHit {
  /// In [0, 1].
  pub score: f64,
  pub entry: LedgerDecisionEntry,
}

js_from!(|h: crate::ledger::recall::DecisionHit| LedgerDecisionHit { score, entry => into });

/// What `Ledger.recall` found.
#[napi(object, object_from_js = false)]
pub struct LedgerRecall {
  pub level: u32,
  /// At levels 1 and 2, within the budget counted with the exact tokenizer.
  pub text: String,
  pub tokens: u32,
  pub truncated: bool,
  /// Level 1: whether the Session Continuity section exists. Levels 2 and 3: true.
  pub found: bool,
  /// Level 2's decisions, best first; empty at the other levels.
  pub hits: Vec<LedgerDecisionHit>,
}

/// Lines of `${PROJECT_ROOT}/...` that did not ground a claim.
#[napi(object, object_from_js = false)]
pub struct UngroundedClaim {
  /// The claim's line in the trajectory file (1-based).
  pub line: f64,
  pub reason: String,
}

js_from!(|u: grounding::Ungrounded| UngroundedClaim { line: f64, reason });

/// The grounding check's verdict (docs/ledger.md).
#[napi(object, object_from_js = false)]
pub struct GroundingReport {
  pub status: GroundingStatus,
  /// 0 permit, 1 block (`fail`), 2 error (blocks too).
  pub exit_code: i32,
  pub total_claims: u32,
  pub grounded_claims: u32,
  pub assumptions: u32,
  /// `groundedClaims / totalClaims`; null without claims (or when disabled or failed).
  pub ratio: Option<f64>,
  pub threshold: f64,
  pub ungrounded: Vec<UngroundedClaim>,
  /// Why the check could not run (damaged lines by number, an empty file, ...).
  pub errors: Vec<String>,
}

impl From<grounding::GroundingReport> for GroundingReport {
  fn from(r: grounding::GroundingReport) -> GroundingReport {
    use super::convert::{Each, JsNumber};
    GroundingReport {
      status: r.status.into(),
      exit_code: r.exit_code(),
      total_claims: r.total_claims.js(),
      grounded_claims: r.grounded_claims.js(),
      assumptions: r.assumptions.js(),
      ratio: r.ratio,
      threshold: r.threshold,
      ungrounded: r.ungrounded.each(),
      errors: r.errors,
    }
  }
}

/// One step of the checkpoint.
#[napi(object, object_from_js = false)]
pub struct CheckpointStep {
  /// 1 to 7 (0: the checkpoint itself failed).
  pub step: u32,
  /// `grounding`, `negative_grounding`, `decision_log`, `bead`, `session_handoff`,
  /// `identifiers`, `edd`.
  pub name: String,
  #[napi(ts_type = "'pass' | 'warn' | 'block' | 'error' | 'skipped'")]
  pub status: String,
  pub messages: Vec<String>,
}

js_from!(|s: crate::ledger::checkpoint::StepReport| CheckpointStep {
  step = u32::from(s.step),
  name = s.name.to_string(),
  status = s.status.to_string(),
  messages,
});

/// One query of a negative-grounding check.
#[napi(object, object_from_js = false)]
pub struct GhostQuery {
  pub query: String,
  /// The best hit's normalised score (0 when nothing matched).
  pub score: f64,
  /// Where the best hit is (a lightweight identifier).
  pub hit: Option<String>,
}

js_from!(|q: grounding::QueryOutcome| GhostQuery { query, score, hit });

/// Whether a claimed absence holds.
#[napi(object, object_from_js = false)]
pub struct GhostVerdict {
  pub feature: String,
  pub verified: bool,
  pub outcomes: Vec<GhostQuery>,
  pub reason: Option<String>,
}

js_from!(|g: grounding::GhostVerdict| GhostVerdict { feature, verified, outcomes => each, reason });

/// The checkpoint's verdict: the pre-clear contract.
#[napi(object, object_from_js = false)]
pub struct CheckpointReport {
  /// 0 permit `/clear`, 1 block, 2 error (blocks too).
  pub exit_code: i32,
  pub steps: Vec<CheckpointStep>,
  pub grounding: GroundingReport,
  pub ghosts: Vec<GhostVerdict>,
  /// Every decision documents enough test scenarios (and evidence when required).
  pub edd_verified: bool,
}

js_from!(|r: core::CheckpointReport| CheckpointReport {
  exit_code,
  steps => each,
  grounding => into,
  ghosts => each,
  edd_verified,
});

/// An L1 state file (`<persistence.state_dir>/<workflow>.json`, version 1).
#[napi(object, object_from_js = false)]
pub struct LedgerWorkflowState {
  pub status: WorkflowStatus,
  /// RFC 3339.
  pub last_updated: String,
  #[napi(ts_type = "Record<string, unknown>")]
  pub data: serde_json::Value,
}

impl From<persistence::WorkflowState> for LedgerWorkflowState {
  fn from(s: persistence::WorkflowState) -> LedgerWorkflowState {
    LedgerWorkflowState {
      status: s.status.into(),
      last_updated: s.last_updated,
      data: serde_json::Value::Object(s.data),
    }
  }
}

/// What `Ledger.persistState` wrote.
#[napi(object, object_from_js = false)]
pub struct LedgerPersistReport {
  /// L1 as written (durable on return).
  pub state: LedgerWorkflowState,
  /// Whether the MEMORY.md line was appended.
  pub memory_written: bool,
  /// MEMORY.md lines past `persistence.memory_max_entries` moved into the Decision Log.
  pub overflowed: u32,
  /// Why MEMORY.md was not (fully) written: unavailable ("learnings will not persist"), or
  /// over its cap because the overflow could not be stored (the lines stay; nothing dropped).
  pub warning: Option<String>,
}

impl From<core::PersistOutcome> for LedgerPersistReport {
  fn from(o: core::PersistOutcome) -> LedgerPersistReport {
    use super::convert::JsNumber;
    LedgerPersistReport {
      state: o.state.into(),
      memory_written: o.l2.is_some(),
      overflowed: o.l2.as_ref().map_or(0, |a| a.overflowed.js()),
      warning: o.l2_warning,
    }
  }
}

/// What `Ledger.recoverState` found: the newest source wins.
#[napi(object, object_from_js = false)]
pub struct LedgerStateRecovery {
  /// The winning status.
  pub status: WorkflowStatus,
  /// Where it came from: `l1` (the state file) or `memory.md`.
  #[napi(ts_type = "'l1' | 'memory.md'")]
  pub source: String,
  /// RFC 3339: when the winner was last updated.
  pub last_updated: String,
  /// Sources older than the winner.
  pub stale: Vec<String>,
  /// The sources are more than `persistence.stale_after_ms` (five minutes) apart: "state may
  /// be stale".
  pub stale_warning: Option<String>,
  /// The staleness warning, MEMORY.md unavailable ("recovered from the L1 state alone"), and
  /// any problem bringing L1 up to the newer MEMORY.md state.
  pub warnings: Vec<String>,
  /// L1 after recovery (brought up to a newer MEMORY.md status), when there is one.
  pub state: Option<LedgerWorkflowState>,
}

impl From<core::Recovered> for LedgerStateRecovery {
  fn from(r: core::Recovered) -> LedgerStateRecovery {
    use super::convert::Each;
    let winner = r.resolution.winner;
    LedgerStateRecovery {
      status: winner.status.into(),
      source: winner.source,
      last_updated: format_ms(winner.updated_ms),
      stale: r.resolution.stale,
      stale_warning: r.resolution.warning,
      warnings: r.warnings,
      state: r.state.each(),
    }
  }
}

/// The lines a lightweight identifier names.
#[napi(object, object_from_js = false)]
pub struct ResolvedIdentifier {
  /// The identifier in its canonical form (`${PROJECT_ROOT}/src/a.ts:3-5`).
  pub identifier: String,
  /// Relative to the workspace.
  pub path: String,
  pub start: u32,
  pub end: u32,
  /// The lines, without their line ends; fewer than asked when the file ends first.
  pub lines: Vec<String>,
}

impl From<crate::ledger::identifier::Resolved> for ResolvedIdentifier {
  fn from(r: crate::ledger::identifier::Resolved) -> ResolvedIdentifier {
    ResolvedIdentifier {
      identifier: r.identifier.to_string(),
      path: r.identifier.path.clone(),
      start: r.identifier.start,
      end: r.identifier.end,
      lines: r.lines,
    }
  }
}

/// Evidence as a bead records it.
#[napi(object, object_from_js = false)]
pub struct BeadEvidence {
  /// `${PROJECT_ROOT}/path`.
  pub path: String,
  pub line: u32,
  pub quote: String,
}

js_from!(|e: beads::BeadEvidence| BeadEvidence { path, line, quote });

/// A decision of a bead.
#[napi(object, object_from_js = false)]
pub struct BeadDecision {
  /// RFC 3339.
  pub ts: String,
  pub decision: String,
  pub rationale: Option<String>,
  pub evidence: Vec<BeadEvidence>,
  /// The id of the decision memory this entry copies (`checkpoint` sets it): forgetting that
  /// memory removes the entry from the bead.
  pub memory: Option<String>,
}

js_from!(|d: beads::BeadDecision| BeadDecision { ts, decision, rationale, evidence => each, memory });

/// A session handed over, as a bead records it.
#[napi(object, object_from_js = false)]
pub struct BeadHandoff {
  pub session_id: String,
  /// RFC 3339.
  pub ended: String,
  pub notes_ref: Option<String>,
  pub trajectory_ref: Option<String>,
  pub grounding_ratio: Option<f64>,
}

js_from!(|h: beads::Handoff| BeadHandoff { session_id, ended, notes_ref, trajectory_ref, grounding_ratio });

/// A test scenario of a bead.
#[napi(object, object_from_js = false)]
pub struct BeadScenario {
  pub name: String,
  #[napi(js_name = "type")]
  pub kind: String,
  pub expected: String,
  /// The id of the decision memory whose scenario this is (`checkpoint` sets it): forgetting
  /// that memory removes the entry from the bead.
  pub memory: Option<String>,
}

js_from!(|t: beads::TestScenario| BeadScenario { name, kind, expected, memory });

/// A bead (`.beads/<id>.yaml`).
#[napi(object, object_from_js = false)]
pub struct Bead {
  pub id: String,
  pub decisions: Vec<BeadDecision>,
  pub handoffs: Vec<BeadHandoff>,
  pub test_scenarios: Vec<BeadScenario>,
  pub next_steps: Vec<String>,
  /// Every other field of the file (`title`, `status`, ...), kept as values.
  #[napi(ts_type = "Record<string, unknown>")]
  pub other: serde_json::Value,
}

impl TryFrom<beads::Bead> for Bead {
  type Error = LoaError;

  fn try_from(b: beads::Bead) -> Result<Bead> {
    use super::convert::Each;
    // A YAML value JSON cannot hold (a mapping with non-string keys) is refused, not changed.
    let other = serde_json::to_value(&b.other).map_err(|_| LoaError::StateCorrupt {
      path: format!("{}.yaml", b.id),
      reason: "a field JSON cannot hold".into(),
    })?;
    Ok(Bead {
      id: b.id,
      decisions: b.decisions.each(),
      handoffs: b.handoffs.each(),
      test_scenarios: b.test_scenarios.each(),
      next_steps: b.next_steps,
      other,
    })
  }
}

/// One line of a trajectory file, as written (docs/ledger.md: `v`, `ts`, `agent`, `phase` and
/// the phase's members, snake_case as on disk). A line written without `v` (the original
/// framework's) has `v: 1`; members its phase does not define (`root_span_id`, ...) are here
/// as the line held them.
#[napi(object, object_from_js = false)]
pub struct TrajectoryLine {
  /// 1-based.
  pub line: f64,
  #[napi(
    ts_type = "{ v: number; ts: string; agent: string; phase: 'cite' | 'session_handoff' | 'delta_sync' | 'grounding_check' | 'self_heal'; [member: string]: unknown }"
  )]
  pub record: serde_json::Value,
}

/// A line of a trajectory file that could not be read.
#[napi(object, object_from_js = false)]
pub struct TrajectoryDamage {
  /// 1-based.
  pub line: f64,
  /// Why (never the line's content).
  pub reason: String,
}

js_from!(|d: trajectory::Damaged| TrajectoryDamage { line: f64, reason });

/// A trajectory file read: every record, and every damaged line by number.
#[napi(object, object_from_js = false)]
pub struct TrajectoryRead {
  pub records: Vec<TrajectoryLine>,
  pub damaged: Vec<TrajectoryDamage>,
  /// Whether the file exists.
  pub exists: bool,
}

fn record_json(record: &trajectory::Record) -> Result<serde_json::Value> {
  serde_json::to_value(record).map_err(|e| LoaError::Internal(e.to_string()))
}

impl TryFrom<trajectory::TrajectoryRead> for TrajectoryRead {
  type Error = LoaError;

  fn try_from(r: trajectory::TrajectoryRead) -> Result<TrajectoryRead> {
    use super::convert::Each;
    Ok(TrajectoryRead {
      records: r
        .records
        .iter()
        .map(|(line, record)| Ok(TrajectoryLine { line: *line as f64, record: record_json(record)? }))
        .collect::<Result<_>>()?,
      damaged: r.damaged.each(),
      exists: r.exists,
    })
  }
}

// ---------------------------------------------------------------------------------------------
// The class
// ---------------------------------------------------------------------------------------------

impl TryFrom<LedgerOpenOptions> for core::Ledger {
  type Error = LoaError;

  fn try_from(options: LedgerOpenOptions) -> Result<core::Ledger> {
    let dir = PathBuf::from(options.workspace_dir.0);
    let loaded = crate::config::load_config(&dir)?;
    let redaction = options.redaction.flatten().map(|r| r.0.into()).unwrap_or_default();
    core::Ledger::new(core::LedgerOptions { redaction, ..loaded.config.ledger_options(&dir) })
  }
}

fn recall(ledger: &core::Ledger, r: Recall) -> Result<LedgerRecall> {
  let mut ledger = ledger.clone();
  if let Some(tokens) = r.tokens {
    match r.level {
      1 => ledger.options.level1_tokens = tokens,
      _ => ledger.options.level2_tokens = tokens,
    }
  }
  let (level, recalled, hits) = match r.level {
    1 => (1, ledger.recall_level1()?, Vec::new()),
    3 => (3, ledger.recall_level3()?, Vec::new()),
    _ => {
      let l2 = ledger.recall_level2(r.query.as_deref().unwrap_or(""), r.k, now_ms())?;
      let recalled =
        crate::ledger::recall::Recalled { text: l2.text, tokens: l2.tokens, truncated: l2.truncated, found: true };
      (2, recalled, l2.hits)
    }
  };
  let crate::ledger::recall::Recalled { text, tokens, truncated, found } = recalled;
  Ok(LedgerRecall {
    level,
    text,
    tokens: tokens as u32,
    truncated,
    found,
    hits: hits.into_iter().map(Into::into).collect(),
  })
}

/// Runs the checkpoint with `store`, or with the session's own store opened (and closed) for
/// it when the input has decisions.
fn run_checkpoint(
  ledger: &core::Ledger,
  input: core::CheckpointInput,
  store: Option<Store>,
) -> Result<CheckpointReport> {
  if store.is_some() || input.decisions.is_empty() {
    return Ok(core::checkpoint(ledger, store.as_ref().map(|s| &*s.0), &input).into());
  }
  let options = crate::config::store_options(ledger.root(), &Default::default())?;
  let store = crate::memory::MemoryStore::open(crate::memory::StoreOptions {
    session_id: input.session_id.clone(),
    redaction: ledger.options.redaction.clone(),
    ..options
  })?;
  let report = core::checkpoint(ledger, Some(&store), &input);
  store.close()?;
  Ok(report.into())
}

/// The `input` argument (the JS shape `J` converted into `T`), and the optional `store`.
fn with_store<J: FromNapiValue, T: TryFrom<J>>(input: Unknown, store: Option<Unknown>) -> Result<(T, Option<Store>)>
where
  LoaError: From<T::Error>,
{
  Ok((object::<J, T>(input, "input")?, opt_arg::<Store>(store, "store")?))
}

fn bead_id(id: Unknown) -> Result<String> {
  let id = arg::<Str>(id, "id")?.0;
  beads::check_id(&id)?;
  Ok(id)
}

/// The write protocol with `store` for MEMORY.md's overflow, or a store of the workspace opened
/// only when an overflow happens.
fn run_persist(ledger: &core::Ledger, p: Persist, store: Option<Store>) -> Result<LedgerPersistReport> {
  let overflow = match &store {
    Some(s) => core::OverflowStore::Given(&s.0),
    None => core::OverflowStore::Open(Box::new(crate::memory::StoreOptions {
      session_id: OVERFLOW_SESSION.into(),
      redaction: ledger.options.redaction.clone(),
      ..crate::config::store_options(ledger.root(), &Default::default())?
    })),
  };
  Ok(ledger.persist_state(overflow, &p.name, p.status, p.data, p.line.as_ref(), p.now_ms)?.into())
}

/// The session MEMORY.md's overflow is recorded under when no store is given.
const OVERFLOW_SESSION: &str = "loa-persistence";

fn workflow(name: Unknown) -> Result<String> {
  arg::<Str>(name, "workflow").map(|s| s.0)
}

fn run_recover(ledger: &core::Ledger, name: &str) -> Result<Option<LedgerStateRecovery>> {
  Ok(ledger.recover_state(name)?.map(Into::into))
}

/// One workspace's Lossless Ledger: NOTES.md's Session Continuity, tiered recall, the
/// trajectory, the grounding check, beads, lightweight identifiers and the synthesis checkpoint
/// before `/clear` (docs/ledger.md). Paths and settings come from `.loa.config.yaml`.
///
/// ```ts
/// const ledger = Ledger.open({ workspaceDir: '.' })
/// const report = await ledger.checkpoint({ sessionId: 's1', decisions: [{ decision: 'Use JWT' }] }, store)
/// if (report.exitCode !== 0) refuseToClear(report)
/// const { text } = ledger.recallSync({ level: 1 })
/// ```
#[napi]
pub struct Ledger {
  inner: Arc<core::Ledger>,
}

#[napi]
impl Ledger {
  /// Reads `.loa.config.yaml` and checks every ledger path (inside the workspace:
  /// `E_PATH_OUTSIDE_ROOT`). Touches no file.
  #[napi(factory, ts_args_type = "options: LedgerOpenOptions")]
  pub fn open(env: Env, options: Unknown) -> napi::Result<Ledger> {
    sync(&env, || object::<LedgerOpenOptions, core::Ledger>(options, "options")).map(|l| Ledger { inner: Arc::new(l) })
  }

  /// The workspace (the project root of lightweight identifiers).
  #[napi(getter)]
  pub fn workspace_dir(&self) -> String {
    self.inner.root().to_string_lossy().into_owned()
  }

  /// NOTES.md read: its text, the Session Continuity section (found by heading) and its parts,
  /// and the Decision Log's entries. The template when there is no file (nothing is created).
  /// A NOTES.md that is not UTF-8 throws `E_STATE_CORRUPT`.
  #[napi]
  pub fn read_notes(&self, env: Env) -> napi::Result<LedgerNotes> {
    sync(&env, || self.inner.notes()).map(Into::into)
  }

  /// Merges `edit` into the regions of Session Continuity the ledger owns (Active Context,
  /// Lightweight Identifiers, Pending Questions), under the consolidation lock, atomically;
  /// every other byte of NOTES.md is kept. The Decision Log is written only by consolidation
  /// (see `checkpoint`).
  #[napi(ts_args_type = "edit: LedgerNotesEdit")]
  pub fn edit_notes(&self, env: Env, edit: Unknown) -> napi::Result<LedgerNotesEdited> {
    sync(&env, || {
      let edit: core::ContinuityEdit = object::<LedgerNotesEdit, _>(edit, "edit")?;
      core::update_continuity(&self.inner, &edit, now_ms())
    })
    .map(Into::into)
  }

  /// Tiered recall: level 1 the Session Continuity section within `level1_tokens` (found by
  /// heading, never by line count), level 2 the decisions that best answer `query` within
  /// `level2_tokens`, level 3 the whole NOTES.md.
  #[napi(ts_args_type = "options: LedgerRecallOptions", ts_return_type = "Promise<LedgerRecall>")]
  pub fn recall(&self, env: Env, options: Unknown) -> AsyncTask<CoreTask<LedgerRecall>> {
    let inner = Arc::clone(&self.inner);
    CoreTask::after(&env, || object::<LedgerRecallOptions, Recall>(options, "options"), move |r| recall(&inner, r))
  }

  /// Synchronous twin of `recall`.
  #[napi(ts_args_type = "options: LedgerRecallOptions")]
  pub fn recall_sync(&self, env: Env, options: Unknown) -> napi::Result<LedgerRecall> {
    sync_twin(&env, || object::<LedgerRecallOptions, Recall>(options, "options"), |r| recall(&self.inner, r))
  }

  /// The grounding check over the agent's trajectory of the day: parsed, never grepped. Never
  /// rejects on a ledger problem: a damaged line, an empty or unreadable file is a report with
  /// `status: 'error'` and `exitCode: 2` (it blocks; it never passes). Rejects only for a bad
  /// argument.
  #[napi(ts_args_type = "options?: LedgerDayOptions", ts_return_type = "Promise<GroundingReport>")]
  pub fn grounding_check(&self, env: Env, options: Option<Unknown>) -> AsyncTask<CoreTask<GroundingReport>> {
    let inner = Arc::clone(&self.inner);
    CoreTask::after(
      &env,
      || opt_object::<LedgerDayOptions, Day>(options, "options"),
      move |d| Ok(inner.grounding_check(&d.agent, d.at_ms).into()),
    )
  }

  /// Synchronous twin of `groundingCheck`.
  #[napi(ts_args_type = "options?: LedgerDayOptions")]
  pub fn grounding_check_sync(&self, env: Env, options: Option<Unknown>) -> napi::Result<GroundingReport> {
    sync_twin(
      &env,
      || opt_object::<LedgerDayOptions, Day>(options, "options"),
      |d| Ok(self.inner.grounding_check(&d.agent, d.at_ms).into()),
    )
  }

  /// The synthesis checkpoint before `/clear`: the seven steps of docs/ledger.md, and the
  /// pre-clear contract in `exitCode` (0 permit, 1 block, 2 error). Decisions are captured as
  /// decision memories through `store` (the session's open `MemoryStore`) and consolidated into
  /// the Decision Log; without `store`, a store for `input.sessionId` is opened for them (it
  /// waits for another open store of that session). Resolves with the report whatever the
  /// verdict; rejects only for a bad argument or a store that cannot be opened.
  #[napi(
    ts_args_type = "input: LedgerCheckpointInput, store?: MemoryStore",
    ts_return_type = "Promise<CheckpointReport>"
  )]
  pub fn checkpoint(&self, env: Env, input: Unknown, store: Option<Unknown>) -> AsyncTask<CoreTask<CheckpointReport>> {
    let inner = Arc::clone(&self.inner);
    CoreTask::after(
      &env,
      || with_store::<LedgerCheckpointInput, _>(input, store),
      move |(i, s)| run_checkpoint(&inner, i, s),
    )
  }

  /// Synchronous twin of `checkpoint`.
  #[napi(ts_args_type = "input: LedgerCheckpointInput, store?: MemoryStore")]
  pub fn checkpoint_sync(&self, env: Env, input: Unknown, store: Option<Unknown>) -> napi::Result<CheckpointReport> {
    sync_twin(&env, || with_store::<LedgerCheckpointInput, _>(input, store), |(i, s)| run_checkpoint(&self.inner, i, s))
  }

  /// Parses a lightweight identifier (`${PROJECT_ROOT}/path:45-67`) and reads its lines (at most
  /// 100). Anything that leaves the workspace (`..`, a symlink on the way, an absolute path
  /// elsewhere) throws `E_PATH_OUTSIDE_ROOT`.
  #[napi(ts_args_type = "identifier: string")]
  pub fn resolve_identifier(&self, env: Env, identifier: Unknown) -> napi::Result<ResolvedIdentifier> {
    sync(&env, || self.inner.resolve(&arg::<Str>(identifier, "identifier")?.0)).map(Into::into)
  }

  /// The ids of the beads (`.beads/<id>.yaml`), sorted.
  #[napi]
  pub fn list_beads(&self, env: Env) -> napi::Result<Vec<String>> {
    sync(&env, || self.inner.beads()?.list())
  }

  /// The bead `id`, or `null` when there is none. A file that does not parse, or whose `id` is
  /// not its name, throws `E_STATE_CORRUPT` (and is left as it is).
  #[napi(ts_args_type = "id: string")]
  pub fn read_bead(&self, env: Env, id: Unknown) -> napi::Result<Option<Bead>> {
    sync(&env, || self.inner.beads()?.read(&bead_id(id)?)?.map(Bead::try_from).transpose())
  }

  /// Appends decisions, test scenarios and next steps to the bead `id` (created when missing),
  /// validated, under the beads lock, atomically. Returns the bead as written.
  #[napi(ts_args_type = "id: string, add: BeadAddInput")]
  pub fn append_bead(&self, env: Env, id: Unknown, add: Unknown) -> napi::Result<Bead> {
    sync(&env, || {
      let id = bead_id(id)?;
      let add: BeadAdd = object::<BeadAddInput, _>(add, "add")?;
      let now = now_ms();
      let append = beads::BeadAppend {
        decisions: add
          .decisions
          .iter()
          .map(|d| crate::ledger::checkpoint::bead_decision(&self.inner, d, now, None))
          .collect(),
        test_scenarios: add.test_scenarios,
        next_steps: add.next_steps,
        handoffs: Vec::new(),
      };
      self.inner.beads()?.append(&id, append)?.try_into()
    })
  }

  /// Appends a `cite` record (a claim and its grounding) to the agent's trajectory of the day:
  /// under lock, one write, fsynced. Returns the record as written.
  #[napi(
    ts_args_type = "record: TrajectoryCiteInput",
    ts_return_type = "{ v: number; ts: string; agent: string; phase: 'cite'; [member: string]: unknown }"
  )]
  pub fn cite(&self, env: Env, record: Unknown) -> napi::Result<serde_json::Value> {
    sync(&env, || {
      let c: Cite = object::<TrajectoryCiteInput, _>(record, "record")?;
      record_json(&self.inner.trajectory()?.append(&c.agent, c.at_ms, c.event)?)
    })
  }

  /// The agent's trajectory of the day: every record with its line number, and every damaged
  /// line by number and reason (never skipped silently). Creates nothing.
  #[napi(ts_args_type = "options?: LedgerDayOptions")]
  pub fn read_trajectory(&self, env: Env, options: Option<Unknown>) -> napi::Result<TrajectoryRead> {
    sync(&env, || {
      let d: Day = opt_object::<LedgerDayOptions, _>(options, "options")?;
      let read = match self.inner.existing_trajectory()? {
        Some(t) => t.read_day(&d.agent, d.at_ms)?,
        None => {
          trajectory::file_name(&d.agent, d.at_ms)?;
          Default::default()
        }
      };
      read.try_into()
    })
  }

  /// The persistence protocol's write (seed 004, docs/ledger.md): L1 first, synchronous and
  /// atomic, the status change checked (`E_ILLEGAL_TRANSITION` writes nothing), then the
  /// MEMORY.md line (redacted). MEMORY.md keeps `persistence.memory_max_entries` lines; the
  /// oldest past it are stored as one decision memory through `store` (else a store of the
  /// workspace opened for it) and consolidated into the Decision Log before they leave
  /// MEMORY.md, never dropped. Entering `completed` needs a `completion` line. MEMORY.md
  /// unavailable is a `warning`, not an error (L1 is what must persist).
  #[napi(
    ts_args_type = "input: LedgerPersistInput, store?: MemoryStore",
    ts_return_type = "Promise<LedgerPersistReport>"
  )]
  pub fn persist_state(
    &self,
    env: Env,
    input: Unknown,
    store: Option<Unknown>,
  ) -> AsyncTask<CoreTask<LedgerPersistReport>> {
    let inner = Arc::clone(&self.inner);
    CoreTask::after(&env, || with_store::<LedgerPersistInput, _>(input, store), move |(p, s)| run_persist(&inner, p, s))
  }

  /// Synchronous twin of `persistState`.
  #[napi(ts_args_type = "input: LedgerPersistInput, store?: MemoryStore")]
  pub fn persist_state_sync(
    &self,
    env: Env,
    input: Unknown,
    store: Option<Unknown>,
  ) -> napi::Result<LedgerPersistReport> {
    sync_twin(&env, || with_store::<LedgerPersistInput, _>(input, store), |(p, s)| run_persist(&self.inner, p, s))
  }

  /// The persistence protocol's read (seed 004): L1, then MEMORY.md's newest line naming the
  /// workflow; the newest wins (on a tie L1), with `staleWarning` when the two are more than
  /// `persistence.stale_after_ms` (five minutes) apart. A newer MEMORY.md status is written
  /// back to L1 (transition checked). `null` when neither knows the workflow. A state file that
  /// does not parse is moved aside and throws `E_STATE_CORRUPT`; a symlink or FIFO in its place
  /// is refused, never followed or read. MEMORY.md unreadable is a `warnings` entry when L1
  /// holds the workflow, and the error otherwise.
  #[napi(ts_args_type = "workflow: string", ts_return_type = "Promise<LedgerStateRecovery | null>")]
  pub fn recover_state(&self, env: Env, workflow: Unknown) -> AsyncTask<CoreTask<Option<LedgerStateRecovery>>> {
    let inner = Arc::clone(&self.inner);
    CoreTask::after(&env, || self::workflow(workflow), move |name| run_recover(&inner, &name))
  }

  /// Synchronous twin of `recoverState`.
  #[napi(ts_args_type = "workflow: string")]
  pub fn recover_state_sync(&self, env: Env, workflow: Unknown) -> napi::Result<Option<LedgerStateRecovery>> {
    sync_twin(&env, || self::workflow(workflow), |name| run_recover(&self.inner, &name))
  }
}
