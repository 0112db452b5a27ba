//! The memory context prepended to a prompt: recent sessions and active learnings packed into a
//! token budget.
//!
//! [`build_context`] is a pure function of its input: the same sessions, learnings and options
//! always give byte-identical text. The text is
//!
//! ```text
//! ## Session Context (from LOA memory)
//!
//! - [2025-11-21T10:00:00+01:00] newest session summary
//! - [2025-11-20T18:30:00Z] older session summary
//! - learning trigger: learning solution
//! ```
//!
//! with one line per item (line breaks inside an item become indented continuation lines).
//!
//! # How the budget is spent
//!
//! - The limit is `floor(budget * (1 - safety_margin))` exact tokens of the chosen encoding, and
//!   it covers everything in the text: header, items, line breaks. `tokens` is the exact count of
//!   the returned text and never exceeds the limit.
//! - Sessions are taken newest first (timestamps are parsed as RFC 3339, any offset, never
//!   compared as strings), ties by importance, then input order. Learnings are taken by
//!   importance, then most recently used (`last_used`; none counts as oldest), then input order.
//! - Sessions get `session_share` of what is left after the header, learnings the rest. A share
//!   the other kind does not need flows to it: learnings first claim what they can use of their
//!   share, sessions take everything else, then learnings take what sessions left.
//! - Within a kind, items are added whole while they fit. The first one that does not fit is cut
//!   at a token boundary and ends with [`TRUNCATION_MARKER`] if at least `min_truncated_tokens`
//!   tokens of it would remain; otherwise it is dropped (`does_not_fit`). The items after it are
//!   dropped unread (`budget_full`). Every dropped item is reported with its reason.
//! - Work grows with what is included, not with the number of candidates: candidates are
//!   ordered with a heap (linear to build) and taken one by one; a text is read and counted only
//!   when its turn comes, counting stops at the room left, and a text longer than the room could
//!   ever hold (at most 128 bytes per token) is not counted at all.
//!
//! The count of the whole text is the sum of the counts of the header and of each item with its
//! line break: every item starts with `- ` after a line break, where the pre-tokenizers of both
//! encodings always split. The final text is counted again anyway, and the invariant enforced.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

use serde::Serialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::error::{invalid, Result};
use crate::settings::{count, fraction, uint};
use crate::tokens::{self, Encoder, TokenEncoding};

/// First line of the context text (followed by a blank line).
pub const HEADER: &str = "## Session Context (from LOA memory)\n\n";
/// Appended to an item that was cut to fit.
pub const TRUNCATION_MARKER: &str = "… [truncated]";
/// Longest accepted timestamp string, in bytes.
pub const MAX_TIMESTAMP_LEN: usize = 64;

/// A recent session, as the memory store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
  /// When the session happened: RFC 3339 with any offset, e.g. `2025-11-21T10:00:00+01:00`.
  pub timestamp: String,
  pub summary: String,
  /// Breaks ties between sessions with the same timestamp (higher first). Default 0.
  pub importance: Option<f64>,
}

/// An active learning.
#[derive(Debug, Clone, PartialEq)]
pub struct Learning {
  pub trigger: String,
  pub solution: String,
  /// Higher first. Default 0.
  pub importance: Option<f64>,
  /// RFC 3339; more recently used first among equal importance. None sorts as oldest.
  pub last_used: Option<String>,
}

/// Context injection settings of a workspace (YAML section `context`); the memory view reads
/// sessions and learnings by them and packs with [`ContextOptions::from_config`].
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(default, rename_all(serialize = "camelCase"))]
pub struct ContextConfig {
  /// Maximum tokens of memory context prepended to a prompt. Default 2000 (seed 002 FR-8.1).
  /// 0 injects nothing. Also read from the flat key `context_token_budget`.
  #[serde(deserialize_with = "count")]
  pub token_budget: u64,
  /// Share of the budget reserved for learnings; recent sessions get the rest. 0..1, default 0.3
  /// (seed 002: sessions stop at 70 %).
  #[serde(deserialize_with = "fraction")]
  pub learnings_share: f64,
  /// Tokenizer used to count tokens: `o200k_base` (default) or `cl100k_base`.
  pub encoding: TokenEncoding,
  /// How many recent sessions are considered. Default 5 (seed 002 FR-4.2).
  #[serde(deserialize_with = "uint::<_, _, 0, 1000>")]
  pub recent_sessions: u64,
  /// How many active learnings are considered. Default 3 (seed 002 FR-4.3).
  #[serde(deserialize_with = "uint::<_, _, 0, 1000>")]
  pub active_learnings: u64,
  /// Fraction of the budget kept free, for models whose tokenizer is not public (Claude 3 and
  /// later): the context holds at most `token_budget * (1 - safety_margin)` exact tokens of
  /// `encoding`. 0 (default) up to, not including, 1.
  #[serde(deserialize_with = "margin")]
  pub safety_margin: f64,
  /// An item that does not fit whole is cut (with a visible marker) only if at least this many
  /// of its tokens remain; otherwise it is dropped. Default 32.
  #[serde(deserialize_with = "count")]
  pub min_truncated_tokens: u64,
}

impl Default for ContextConfig {
  fn default() -> Self {
    ContextConfig {
      token_budget: 2000,
      learnings_share: 0.3,
      encoding: TokenEncoding::O200kBase,
      recent_sessions: 5,
      active_learnings: 3,
      safety_margin: 0.0,
      min_truncated_tokens: 32,
    }
  }
}

fn margin<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<f64, D::Error> {
  let m: f64 = fraction(d)?;
  if m >= 1.0 {
    return Err(serde::de::Error::custom("must be below 1 (1 would leave no budget)"));
  }
  Ok(m)
}

/// Options of [`build_context`].
#[derive(Debug, Clone, PartialEq)]
pub struct ContextOptions {
  /// Tokens for the whole text. Default 2000.
  pub budget: u64,
  /// Share of the room after the header that sessions get first, 0..=1. Default 0.7.
  pub session_share: f64,
  /// Encoding tokens are counted in. Default `o200k_base`.
  pub encoding: TokenEncoding,
  /// Fraction of the budget kept free for a model whose tokenizer is not public, 0..1. Default 0.
  pub safety_margin: f64,
  /// An item that does not fit whole is cut only if at least this many tokens of it remain.
  /// Default 32.
  pub min_truncated_tokens: u64,
  /// The text's first lines; `None`: [`HEADER`]. Counted in the budget like everything else.
  pub header: Option<String>,
}

impl Default for ContextOptions {
  fn default() -> Self {
    ContextOptions {
      budget: 2000,
      session_share: 0.7,
      encoding: TokenEncoding::O200kBase,
      safety_margin: 0.0,
      min_truncated_tokens: 32,
      header: None,
    }
  }
}

impl ContextOptions {
  /// The options the workspace configuration (`context` section) asks for.
  pub fn from_config(config: &ContextConfig) -> Self {
    ContextOptions {
      budget: config.token_budget,
      session_share: 1.0 - config.learnings_share,
      encoding: config.encoding,
      safety_margin: config.safety_margin,
      min_truncated_tokens: config.min_truncated_tokens,
      header: None,
    }
  }

  fn check(&self) -> Result<()> {
    if !(self.session_share.is_finite() && (0.0..=1.0).contains(&self.session_share)) {
      return invalid(format!("`sessionShare` must be a fraction from 0 to 1, got {}", self.session_share));
    }
    tokens::check_margin(self.safety_margin, "safetyMargin")?;
    Ok(())
  }
}

/// Which list an item came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemKind {
  Session,
  Learning,
}

impl ItemKind {
  pub fn as_str(self) -> &'static str {
    match self {
      ItemKind::Session => "session",
      ItemKind::Learning => "learning",
    }
  }
}

/// An item that is in the text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IncludedItem {
  pub kind: ItemKind,
  /// Position in the input list of its kind.
  pub index: usize,
  /// Exact tokens of its line(s) in the text, line break included.
  pub tokens: u64,
  /// Whether it was cut to fit (and ends with the marker).
  pub truncated: bool,
}

/// Why an item is not in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
  /// Nothing to show: the summary (or both trigger and solution) is empty or blank.
  Empty,
  /// It was next in line but larger than the room left, and the room left was too small to
  /// keep `min_truncated_tokens` of it.
  DoesNotFit,
  /// The room was used up before its turn.
  BudgetFull,
  /// The limit cannot even hold the header.
  NoBudget,
}

impl DropReason {
  pub fn as_str(self) -> &'static str {
    match self {
      DropReason::Empty => "empty",
      DropReason::DoesNotFit => "does_not_fit",
      DropReason::BudgetFull => "budget_full",
      DropReason::NoBudget => "no_budget",
    }
  }
}

/// An item that is not in the text, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DroppedItem {
  pub kind: ItemKind,
  pub index: usize,
  pub reason: DropReason,
}

/// What [`build_context`] built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuiltContext {
  /// The text to prepend, or `None` when no item fits (or there are none).
  pub text: Option<String>,
  /// Exact tokens of `text` (0 when there is none); never above `limit`.
  pub tokens: u64,
  /// `floor(budget * (1 - safety_margin))`.
  pub limit: u64,
  /// In text order: sessions, then learnings.
  pub included: Vec<IncludedItem>,
  /// Sessions in input order, then learnings in input order.
  pub dropped: Vec<DroppedItem>,
}

// ---------------------------------------------------------------------------------------------
// Input: plain structs, or any source that can hand out texts lazily
// ---------------------------------------------------------------------------------------------

/// A text handed out by a [`ContextSource`]: all of it, or a prefix when it is longer than asked.
#[derive(Debug, Clone)]
pub struct Text<'a> {
  pub text: Cow<'a, str>,
  /// False when `text` is only a prefix of the item's text.
  pub complete: bool,
}

impl<'a> Text<'a> {
  /// At most `max_bytes` of `s`, cut at a character boundary.
  pub fn prefix(s: &'a str, max_bytes: usize) -> Text<'a> {
    if s.len() <= max_bytes {
      return Text { text: Cow::Borrowed(s), complete: true };
    }
    let mut end = max_bytes;
    while !s.is_char_boundary(end) {
      end -= 1;
    }
    Text { text: Cow::Borrowed(&s[..end]), complete: false }
  }
}

/// Where the texts of the candidates come from. Asked only for the items whose turn comes, and
/// only for as many bytes as could be used: a source backed by JavaScript objects converts
/// only those.
pub trait ContextSource {
  /// Summary of session `index`: all of it, or at least its first `max_bytes` bytes.
  fn summary(&self, index: usize, max_bytes: usize) -> Result<Text<'_>>;
  /// Trigger of learning `index`.
  fn trigger(&self, index: usize, max_bytes: usize) -> Result<Text<'_>>;
  /// Solution of learning `index`.
  fn solution(&self, index: usize, max_bytes: usize) -> Result<Text<'_>>;
}

/// What ordering needs of a session.
#[derive(Debug, Clone, Copy)]
pub struct SessionKey<'a> {
  pub timestamp: &'a str,
  pub importance: Option<f64>,
}

/// What ordering needs of a learning.
#[derive(Debug, Clone, Copy)]
pub struct LearningKey<'a> {
  pub importance: Option<f64>,
  pub last_used: Option<&'a str>,
}

struct Lists<'a> {
  sessions: &'a [Session],
  learnings: &'a [Learning],
}

impl ContextSource for Lists<'_> {
  fn summary(&self, index: usize, max_bytes: usize) -> Result<Text<'_>> {
    Ok(Text::prefix(&self.sessions[index].summary, max_bytes))
  }
  fn trigger(&self, index: usize, max_bytes: usize) -> Result<Text<'_>> {
    Ok(Text::prefix(&self.learnings[index].trigger, max_bytes))
  }
  fn solution(&self, index: usize, max_bytes: usize) -> Result<Text<'_>> {
    Ok(Text::prefix(&self.learnings[index].solution, max_bytes))
  }
}

/// Builds the context from plain sessions and learnings (what the memory store holds).
pub fn build_context(sessions: &[Session], learnings: &[Learning], options: &ContextOptions) -> Result<BuiltContext> {
  let session_keys: Vec<SessionKey> =
    sessions.iter().map(|s| SessionKey { timestamp: &s.timestamp, importance: s.importance }).collect();
  let learning_keys: Vec<LearningKey> =
    learnings.iter().map(|l| LearningKey { importance: l.importance, last_used: l.last_used.as_deref() }).collect();
  build_context_from(&session_keys, &learning_keys, &Lists { sessions, learnings }, options)
}

// ---------------------------------------------------------------------------------------------
// Ordering
// ---------------------------------------------------------------------------------------------

/// Parses an RFC 3339 timestamp into nanoseconds since the Unix epoch (UTC).
pub fn parse_timestamp(s: &str, name: impl FnOnce() -> String) -> Result<i128> {
  let bad = |name: String| invalid(format!("`{name}` must be an RFC 3339 timestamp such as 2025-11-21T10:00:00+01:00"));
  if s.len() > MAX_TIMESTAMP_LEN {
    return bad(name());
  }
  match OffsetDateTime::parse(s, &Rfc3339) {
    Ok(t) => Ok(t.unix_timestamp_nanos()),
    Err(_) => bad(name()),
  }
}

fn importance(value: Option<f64>, name: impl FnOnce() -> String) -> Result<f64> {
  match value {
    None => Ok(0.0),
    Some(v) if v.is_finite() => Ok(v + 0.0), // -0.0 -> 0.0, so that ties stay ties
    Some(v) => invalid(format!("`{}` must be a finite number, got {v}", name())),
  }
}

/// Priority of a session: newer first, then higher importance, then earlier in the input.
#[derive(Clone, Copy)]
struct SessionPriority {
  at: i128,
  importance: f64,
  index: usize,
}

impl Ord for SessionPriority {
  fn cmp(&self, other: &Self) -> Ordering {
    self.at.cmp(&other.at).then(self.importance.total_cmp(&other.importance)).then(other.index.cmp(&self.index))
  }
}
impl PartialOrd for SessionPriority {
  fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
    Some(self.cmp(other))
  }
}
impl PartialEq for SessionPriority {
  fn eq(&self, other: &Self) -> bool {
    self.cmp(other) == Ordering::Equal
  }
}
impl Eq for SessionPriority {}

/// Priority of a learning: higher importance first, then more recently used (never used last),
/// then earlier in the input.
#[derive(Clone, Copy)]
struct LearningPriority {
  importance: f64,
  last_used: Option<i128>,
  index: usize,
}

impl Ord for LearningPriority {
  fn cmp(&self, other: &Self) -> Ordering {
    self
      .importance
      .total_cmp(&other.importance)
      .then(self.last_used.cmp(&other.last_used))
      .then(other.index.cmp(&self.index))
  }
}
impl PartialOrd for LearningPriority {
  fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
    Some(self.cmp(other))
  }
}
impl PartialEq for LearningPriority {
  fn eq(&self, other: &Self) -> bool {
    self.cmp(other) == Ordering::Equal
  }
}
impl Eq for LearningPriority {}

trait Indexed {
  fn index(&self) -> usize;
}
impl Indexed for SessionPriority {
  fn index(&self) -> usize {
    self.index
  }
}
impl Indexed for LearningPriority {
  fn index(&self) -> usize {
    self.index
  }
}

// ---------------------------------------------------------------------------------------------
// Formatting items
// ---------------------------------------------------------------------------------------------

/// Appends `text` as item content: trimmed (only at the start when it is a prefix), line breaks
/// turned into indented continuation lines, blank lines kept blank.
fn push_body(out: &mut String, text: &str, complete: bool) {
  let text = if complete { text.trim() } else { text.trim_start() };
  for (i, line) in text.split('\n').enumerate() {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if i > 0 {
      out.push('\n');
      if line.trim().is_empty() {
        continue;
      }
      out.push_str("  ");
    }
    out.push_str(line.trim_end());
  }
}

/// One item formatted for the text.
struct Formatted {
  /// The item's line(s) without the final line break.
  body: String,
  /// Bytes of `body` that are the fixed head (`- [timestamp] ` or `- `).
  head_len: usize,
  /// False when the item's text was read only in part (it cannot fit whole).
  complete: bool,
}

/// Bytes of text worth reading for an item that may use `room` tokens: anything longer cannot
/// fit whole (a token is at most `max_token_bytes` bytes), and its prefix of this length holds
/// more than `room` tokens for cutting.
fn read_limit(room: u64, max_token_bytes: usize) -> usize {
  usize::try_from(room).unwrap_or(usize::MAX).saturating_mul(max_token_bytes).saturating_add(1)
}

// ---------------------------------------------------------------------------------------------
// Filling
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
  Waiting,
  Included,
  Dropped(DropReason),
}

struct Entry {
  index: usize,
  line: String,
  tokens: u64,
  truncated: bool,
}

/// The candidates of one kind, taken in priority order.
struct Lane<P: Ord + Indexed> {
  kind: ItemKind,
  heap: BinaryHeap<P>,
  /// An item taken from the heap that did not fit whole in the room it was offered.
  pending: Option<usize>,
  entries: Vec<Entry>,
  used: u64,
  status: Vec<Status>,
  /// Closed once an item was cut: nothing comes after a cut item.
  closed: bool,
}

struct Builder<'a> {
  encoder: &'static Encoder,
  source: &'a dyn ContextSource,
  sessions: &'a [SessionKey<'a>],
  /// Tokens of the marker plus the line break after it.
  marker_tokens: u64,
  min_truncated_tokens: u64,
}

impl Builder<'_> {
  fn format(&self, kind: ItemKind, index: usize, room: u64) -> Result<Option<Formatted>> {
    let limit = read_limit(room, self.encoder.max_token_bytes());
    let mut body = String::new();
    match kind {
      ItemKind::Session => {
        let summary = self.source.summary(index, limit)?;
        if summary.text.trim().is_empty() && summary.complete {
          return Ok(None);
        }
        body.push_str("- [");
        body.push_str(self.sessions[index].timestamp);
        body.push_str("] ");
        let head_len = body.len();
        body.reserve(summary.text.len());
        push_body(&mut body, &summary.text, summary.complete);
        Ok(Some(Formatted { body, head_len, complete: summary.complete }))
      }
      ItemKind::Learning => {
        body.push_str("- ");
        let head_len = body.len();
        let trigger = self.source.trigger(index, limit)?;
        let trigger_blank = trigger.text.trim().is_empty();
        if !trigger.complete {
          push_body(&mut body, &trigger.text, false);
          return Ok(Some(Formatted { body, head_len, complete: false }));
        }
        let solution = self.source.solution(index, limit.saturating_sub(trigger.text.len()))?;
        let solution_blank = solution.text.trim().is_empty() && solution.complete;
        if trigger_blank && solution_blank {
          return Ok(None);
        }
        if !trigger_blank {
          push_body(&mut body, &trigger.text, true);
          if !solution_blank {
            body.push_str(": ");
          }
        }
        if !solution_blank {
          push_body(&mut body, &solution.text, solution.complete);
        }
        Ok(Some(Formatted { body, head_len, complete: solution.complete }))
      }
    }
  }

  /// Tokens an item's head and the marker take: what a cut item spends on anything but content.
  fn overhead(&self, kind: ItemKind, index: usize) -> u64 {
    let head = match kind {
      ItemKind::Session => self.encoder.count(&format!("- [{}] ", self.sessions[index].timestamp)),
      ItemKind::Learning => self.encoder.count("- "),
    };
    head as u64 + self.marker_tokens
  }

  /// The longest cut of `item` that fits `room` tokens with the marker and line break, with its
  /// exact tokens; `None` when no content would remain.
  fn cut(&self, item: &Formatted, room: u64) -> Option<(String, u64)> {
    let mut keep = room.checked_sub(self.marker_tokens)?;
    // A cut counted on its own may come out a token or two above the tokens it was cut at;
    // shrink until it fits (a few rounds at most).
    for _ in 0..64 {
      if keep == 0 {
        return None;
      }
      let end = self.encoder.prefix_len(&item.body, usize::try_from(keep).unwrap_or(usize::MAX));
      let kept = item.body[..end].trim_end();
      if kept.len() <= item.head_len {
        return None;
      }
      let mut line = String::with_capacity(kept.len() + TRUNCATION_MARKER.len() + 1);
      line.push_str(kept);
      line.push_str(TRUNCATION_MARKER);
      line.push('\n');
      let tokens = self.encoder.count(&line) as u64;
      if tokens <= room {
        return Some((line, tokens));
      }
      keep = keep.saturating_sub((tokens - room).max(1));
    }
    None
  }
}

impl<P: Ord + Indexed> Lane<P> {
  fn new(kind: ItemKind, priorities: Vec<P>) -> Self {
    let n = priorities.len();
    Lane {
      kind,
      heap: BinaryHeap::from(priorities),
      pending: None,
      entries: Vec::new(),
      used: 0,
      status: vec![Status::Waiting; n],
      closed: false,
    }
  }

  /// Adds whole items while they fit in `allowance` tokens (for this kind in total).
  fn fill(&mut self, b: &Builder, allowance: u64) -> Result<()> {
    if self.closed {
      return Ok(());
    }
    loop {
      let index = match self.pending.take() {
        Some(i) => i,
        None => match self.heap.pop() {
          Some(p) => p.index(),
          None => return Ok(()),
        },
      };
      let room = allowance.saturating_sub(self.used);
      let Some(item) = b.format(self.kind, index, room)? else {
        self.status[index] = Status::Dropped(DropReason::Empty);
        continue;
      };
      if item.complete {
        let mut line = item.body;
        line.push('\n');
        if let Some(n) = b.encoder.count_until(&line, usize::try_from(room).unwrap_or(usize::MAX)) {
          self.used += n as u64;
          self.status[index] = Status::Included;
          self.entries.push(Entry { index, line, tokens: n as u64, truncated: false });
          continue;
        }
      }
      self.pending = Some(index);
      return Ok(());
    }
  }

  /// Whether the pending item would be cut (rather than dropped) with `allowance`.
  fn would_cut(&self, b: &Builder, allowance: u64) -> bool {
    match self.pending {
      Some(index) if !self.closed => {
        let room = allowance.saturating_sub(self.used);
        room >= b.overhead(self.kind, index).saturating_add(b.min_truncated_tokens)
      }
      _ => false,
    }
  }

  /// Cuts the pending item to the room left of `allowance`, if enough of it would remain.
  fn cut_pending(&mut self, b: &Builder, allowance: u64) -> Result<()> {
    if !self.would_cut(b, allowance) {
      return Ok(());
    }
    let index = self.pending.expect("would_cut checked it");
    let room = allowance.saturating_sub(self.used);
    let Some(item) = b.format(self.kind, index, room)? else {
      return Ok(());
    };
    let overhead = b.overhead(self.kind, index);
    if let Some((line, tokens)) = b.cut(&item, room) {
      if tokens >= overhead.saturating_add(b.min_truncated_tokens) {
        self.pending = None;
        self.closed = true;
        self.used += tokens;
        self.status[index] = Status::Included;
        self.entries.push(Entry { index, line, tokens, truncated: true });
      }
    }
    Ok(())
  }

  /// Marks whatever is left as dropped.
  fn finish(&mut self) {
    if let Some(index) = self.pending.take() {
      self.status[index] = Status::Dropped(DropReason::DoesNotFit);
    }
  }

  /// Removes the last entry (only used if the text's count ever disagreed with the sum of its
  /// parts, which the module docs argue cannot happen).
  fn pop_entry(&mut self) -> Option<u64> {
    let e = self.entries.pop()?;
    self.status[e.index] = Status::Dropped(DropReason::BudgetFull);
    self.used -= e.tokens;
    Some(e.tokens)
  }

  fn dropped(&self, out: &mut Vec<DroppedItem>) {
    for (index, status) in self.status.iter().enumerate() {
      match status {
        Status::Included => {}
        Status::Waiting => out.push(DroppedItem { kind: self.kind, index, reason: DropReason::BudgetFull }),
        Status::Dropped(reason) => out.push(DroppedItem { kind: self.kind, index, reason: *reason }),
      }
    }
  }
}

/// Builds the context from sort keys and a source of texts. [`build_context`] is this over
/// plain structs; the Node binding uses it over JavaScript arrays, converting only the texts
/// that are used.
pub fn build_context_from(
  sessions: &[SessionKey],
  learnings: &[LearningKey],
  source: &dyn ContextSource,
  options: &ContextOptions,
) -> Result<BuiltContext> {
  options.check()?;
  let mut session_priorities = Vec::with_capacity(sessions.len());
  for (index, s) in sessions.iter().enumerate() {
    session_priorities.push(SessionPriority {
      at: parse_timestamp(s.timestamp, || format!("sessions[{index}].timestamp"))?,
      importance: importance(s.importance, || format!("sessions[{index}].importance"))?,
      index,
    });
  }
  let mut learning_priorities = Vec::with_capacity(learnings.len());
  for (index, l) in learnings.iter().enumerate() {
    learning_priorities.push(LearningPriority {
      importance: importance(l.importance, || format!("learnings[{index}].importance"))?,
      last_used: match l.last_used {
        Some(t) => Some(parse_timestamp(t, || format!("learnings[{index}].lastUsed"))?),
        None => None,
      },
      index,
    });
  }

  let encoder = tokens::encoder(options.encoding);
  let limit = tokens::budget_limit(options.budget, options.safety_margin);
  let b = Builder {
    encoder,
    source,
    sessions,
    marker_tokens: encoder.count(&format!("{TRUNCATION_MARKER}\n")) as u64,
    min_truncated_tokens: options.min_truncated_tokens,
  };
  let mut s_lane = Lane::new(ItemKind::Session, session_priorities);
  let mut l_lane = Lane::new(ItemKind::Learning, learning_priorities);

  let header = options.header.as_deref().unwrap_or(HEADER);
  let header_tokens = encoder.count(header) as u64;
  if limit <= header_tokens {
    let dropped = (0..sessions.len())
      .map(|index| DroppedItem { kind: ItemKind::Session, index, reason: DropReason::NoBudget })
      .chain((0..learnings.len()).map(|index| DroppedItem {
        kind: ItemKind::Learning,
        index,
        reason: DropReason::NoBudget,
      }))
      .collect();
    return Ok(BuiltContext { text: None, tokens: 0, limit, included: Vec::new(), dropped });
  }
  let room = limit - header_tokens;
  let session_share = ((room as f64) * options.session_share).floor().min(room as f64) as u64;
  let learning_share = room - session_share;

  // Learnings claim what they can use of their share (all of it if they would cut an item
  // into it), sessions take the rest, then learnings take whatever sessions left.
  l_lane.fill(&b, learning_share)?;
  let learnings_claim = if l_lane.would_cut(&b, learning_share) { learning_share } else { l_lane.used };
  let session_allowance = room - learnings_claim;
  s_lane.fill(&b, session_allowance)?;
  s_lane.cut_pending(&b, session_allowance)?;
  let learning_allowance = room - s_lane.used;
  l_lane.fill(&b, learning_allowance)?;
  l_lane.cut_pending(&b, learning_allowance)?;
  s_lane.finish();
  l_lane.finish();

  // Assemble, and check the count of the whole against the limit.
  let assemble = |s: &Lane<SessionPriority>, l: &Lane<LearningPriority>| -> Option<String> {
    if s.entries.is_empty() && l.entries.is_empty() {
      return None;
    }
    let len = header.len() + s.entries.iter().chain(&l.entries).map(|e| e.line.len()).sum::<usize>();
    let mut text = String::with_capacity(len);
    text.push_str(header);
    for e in s.entries.iter().chain(&l.entries) {
      text.push_str(&e.line);
    }
    Some(text)
  };
  let mut text = assemble(&s_lane, &l_lane);
  let mut tokens = text.as_deref().map_or(0, |t| encoder.count(t) as u64);
  debug_assert!(
    text.is_none() || tokens == header_tokens + s_lane.used + l_lane.used,
    "the text's count ({tokens}) is not the sum of its parts ({})",
    header_tokens + s_lane.used + l_lane.used
  );
  while tokens > limit {
    // Defensive: never return a text over the limit, whatever happened above.
    if l_lane.pop_entry().is_none() && s_lane.pop_entry().is_none() {
      break;
    }
    text = assemble(&s_lane, &l_lane);
    tokens = text.as_deref().map_or(0, |t| encoder.count(t) as u64);
  }

  let included = s_lane
    .entries
    .iter()
    .map(|e| (ItemKind::Session, e))
    .chain(l_lane.entries.iter().map(|e| (ItemKind::Learning, e)))
    .map(|(kind, e)| IncludedItem { kind, index: e.index, tokens: e.tokens, truncated: e.truncated })
    .collect();
  let mut dropped = Vec::new();
  s_lane.dropped(&mut dropped);
  l_lane.dropped(&mut dropped);
  Ok(BuiltContext { text, tokens, limit, included, dropped })
}

#[cfg(test)]
mod tests;
