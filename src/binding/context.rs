//! `buildContext`: the binding of [`crate::context::build_context_from`].
//!
//! The candidates stay JavaScript objects: a small JavaScript helper (`context_glue.js`) checks
//! them and passes what ordering needs in bulk, and the native side reads a summary, trigger or
//! solution only when that item's turn comes, and only as many bytes of it as could be used. So
//! 100,000 candidates cost one JavaScript loop, not 100,000 conversions.

use std::ffi::CStr;
use std::ptr;

use napi::bindgen_prelude::*;
use napi::sys;
use napi::{Env, JsValue, Unknown};
use napi_derive::napi;

use super::glue::{self, call, check, get, napi_failed};
use super::{args, guard, js_error, strings};
use crate::context::{
  self as core, ContextOptions, ContextSource, DropReason, ItemKind, LearningKey, SessionKey, Text,
};
use crate::error::{LoaError, Result};
use crate::tokens::{self, TokenEncoding};

/// A recent session offered to `buildContext`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape
pub struct ContextSessionInput {
  /// When it happened: RFC 3339 with any offset (`2025-11-21T10:00:00+01:00`); newest first.
  pub timestamp: String,
  pub summary: String,
  /// Breaks ties between equal timestamps (higher first). Default (or `null`) 0.
  #[napi(ts_type = "number | null")]
  pub importance: Option<f64>,
}

/// An active learning offered to `buildContext`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape
pub struct ContextLearningInput {
  pub trigger: String,
  pub solution: String,
  /// Higher first. Default (or `null`) 0.
  #[napi(ts_type = "number | null")]
  pub importance: Option<f64>,
  /// RFC 3339; among equal importance, more recently used first; never used (or `null`) last.
  #[napi(ts_type = "string | null")]
  pub last_used: Option<String>,
}

/// Input of `buildContext`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field
pub struct BuildContextInput {
  pub sessions: Vec<ContextSessionInput>,
  pub learnings: Vec<ContextLearningInput>,
  /// Tokens for everything in `text` (header, items, line breaks). Default 2000.
  pub budget: Option<f64>,
  /// Share of the room after the header that sessions get first, 0..1; learnings get the
  /// rest, and a share one kind does not need flows to the other. Default 0.7.
  pub session_share: Option<f64>,
  /// Encoding tokens are counted in. Default `'o200k_base'`.
  #[napi(ts_type = "TokenEncoding")]
  pub encoding: Option<String>,
  /// Fraction of the budget kept free, for models whose tokenizer is not public: `text` holds
  /// at most `floor(budget * (1 - safetyMargin))` tokens. 0 (default) up to, not including, 1.
  pub safety_margin: Option<f64>,
  /// An item that does not fit whole is cut at a token boundary (ending in `… [truncated]`)
  /// only if at least this many of its tokens remain; otherwise it is dropped. Default 32.
  pub min_truncated_tokens: Option<f64>,
}

/// Which input list an item came from, and where in it.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; built by context_glue.js
pub struct ContextItemRef {
  #[napi(ts_type = "'session' | 'learning'")]
  pub kind: String,
  /// Position in `sessions` or `learnings`.
  pub index: u32,
}

/// An item that is in the text.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; built by context_glue.js
pub struct ContextItem {
  #[napi(ts_type = "'session' | 'learning'")]
  pub kind: String,
  /// Position in `sessions` or `learnings`.
  pub index: u32,
  /// Exact tokens of its line(s), line break included.
  pub tokens: u32,
  /// Whether it was cut to fit (it then ends with `… [truncated]`).
  pub truncated: bool,
}

/// An item that is not in the text, and why: `empty` (nothing to show), `does_not_fit` (next in
/// line but too large, and too little room left to keep `minTruncatedTokens` of it),
/// `budget_full` (the room was used up before its turn), `no_budget` (the budget cannot even
/// hold the header).
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; built by context_glue.js
pub struct ContextDrop {
  pub item: ContextItemRef,
  #[napi(ts_type = "'empty' | 'does_not_fit' | 'budget_full' | 'no_budget'")]
  pub reason: String,
}

/// What `buildContext` built.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; built by context_glue.js
pub struct BuiltContext {
  /// The text to prepend, or `null` when nothing fits (or there is nothing).
  #[napi(ts_type = "string | null")]
  pub text: String,
  /// Exact tokens of `text` (0 when `null`); never above `limit`.
  pub tokens: u32,
  /// `floor(budget * (1 - safetyMargin))`.
  pub limit: f64,
  /// In text order: sessions (newest first), then learnings.
  pub included: Vec<ContextItem>,
  /// Every other candidate: sessions in input order, then learnings in input order.
  pub dropped: Vec<ContextDrop>,
}

const GLUE: glue::Script = glue::Script { name: "context", source: include_str!("context_glue.js") };

unsafe fn typed_array<'a, T>(env: sys::napi_env, value: sys::napi_value) -> Result<&'a [T]> {
  let mut kind = 0;
  let mut len = 0usize;
  let mut data = ptr::null_mut();
  let mut buffer = ptr::null_mut();
  let mut offset = 0usize;
  check(
    sys::napi_get_typedarray_info(env, value, &mut kind, &mut len, &mut data, &mut buffer, &mut offset),
    "typed array",
  )?;
  Ok(if len == 0 || data.is_null() { &[] } else { std::slice::from_raw_parts(data as *const T, len) })
}

/// Timestamps as the glue joined them: one flat string (join() made it), read in one call.
unsafe fn read_timestamps(env: sys::napi_env, value: sys::napi_value) -> Result<String> {
  Ok(strings::read_prefix(env, value, usize::MAX, "timestamps")?.0)
}

unsafe fn read_string(env: sys::napi_env, value: sys::napi_value) -> Result<String> {
  strings::read_string(env, value, strings::Surrogates::Replace, &|| "glue".into())
}

/// The glue's verdict on an input list: `{ bad, expected }` becomes `E_INVALID_ARGUMENT`.
unsafe fn checked(env: sys::napi_env, verdict: sys::napi_value) -> Result<sys::napi_value> {
  let bad = get(env, verdict, c"bad")?;
  if strings::is_string(env, bad) {
    let name = read_string(env, bad)?;
    let expected = read_string(env, get(env, verdict, c"expected")?)?;
    return Err(LoaError::InvalidArgument(format!("`{name}` must be {expected}")));
  }
  Ok(verdict)
}

/// The candidates' texts, read on demand from the candidate objects the glue checked (its
/// `items` copies, plain arrays). Each text property is read from the caller's object once: an
/// item may be formatted more than once (offered more room, then cut), and a getter answering
/// differently each time must not make the text differ between those reads (JS strings are
/// immutable, so reading the kept string again is safe).
struct JsSource {
  env: sys::napi_env,
  sessions: sys::napi_value,
  learnings: sys::napi_value,
  /// (key, index) -> the string read for it.
  read: std::cell::RefCell<std::collections::HashMap<(u8, usize), sys::napi_value>>,
}

/// `object[key]` of a caller's object: a throw (a getter, a Proxy trap) is `E_INVALID_ARGUMENT`
/// naming it.
unsafe fn read_field(
  env: sys::napi_env,
  object: sys::napi_value,
  key: &CStr,
  name: &dyn Fn() -> String,
) -> Result<sys::napi_value> {
  let mut value = ptr::null_mut();
  if sys::napi_get_named_property(env, object, key.as_ptr(), &mut value) != sys::Status::napi_ok {
    return Err(args::unreadable(env, &name()));
  }
  Ok(value)
}

impl JsSource {
  fn text(
    &self,
    list: sys::napi_value,
    list_name: &str,
    index: usize,
    key: &CStr,
    slot: u8,
    max_bytes: usize,
  ) -> Result<Text<'static>> {
    let name = || format!("{list_name}[{index}].{}", key.to_str().unwrap_or("?"));
    unsafe {
      let cached = self.read.borrow().get(&(slot, index)).copied();
      let value = match cached {
        Some(value) => value,
        None => {
          let mut item = ptr::null_mut();
          check(sys::napi_get_element(self.env, list, index as u32, &mut item), "get element")?;
          let value = read_field(self.env, item, key, &name)?;
          if !strings::is_string(self.env, value) {
            return Err(LoaError::InvalidArgument(format!("`{}` must be a string", name())));
          }
          self.read.borrow_mut().insert((slot, index), value);
          value
        }
      };
      let (text, complete) = strings::read_prefix(self.env, value, max_bytes, &name())?;
      Ok(Text { text: text.into(), complete })
    }
  }
}

impl ContextSource for JsSource {
  fn summary(&self, index: usize, max_bytes: usize) -> Result<Text<'_>> {
    self.text(self.sessions, "sessions", index, c"summary", 0, max_bytes)
  }
  fn trigger(&self, index: usize, max_bytes: usize) -> Result<Text<'_>> {
    self.text(self.learnings, "learnings", index, c"trigger", 1, max_bytes)
  }
  fn solution(&self, index: usize, max_bytes: usize) -> Result<Text<'_>> {
    self.text(self.learnings, "learnings", index, c"solution", 2, max_bytes)
  }
}

/// The options of `buildContext` (`budget`, `sessionShare`, `encoding`, `safetyMargin`,
/// `minTruncatedTokens`) from a JS object; also for the memory store's `buildContext(options)`.
pub(crate) fn parse_options(o: &Object) -> Result<ContextOptions> {
  let mut options = ContextOptions::default();
  if let Some(b) = args::optional_u64(o, "budget")? {
    options.budget = b;
  }
  if let Some(s) = args::optional_f64(o, "sessionShare")? {
    options.session_share = s;
  }
  if let Some(e) = args::optional_string(o, "encoding")? {
    options.encoding = TokenEncoding::parse(&e)?;
  }
  if let Some(m) = args::optional_f64(o, "safetyMargin")? {
    options.safety_margin = tokens::check_margin(m, "safetyMargin")?;
  }
  if let Some(m) = args::optional_u64(o, "minTruncatedTokens")? {
    options.min_truncated_tokens = m;
  }
  Ok(options)
}

/// Splits the glue's timestamps (each followed by a line break) into `n` strings, or `None` if
/// one of them contained a line break itself.
fn split_n(joined: &str, n: usize) -> Option<Vec<&str>> {
  let mut parts: Vec<&str> = joined.split('\n').collect();
  if parts.pop() != Some("") || parts.len() != n {
    return if n == 0 && joined.is_empty() { Some(Vec::new()) } else { None };
  }
  Some(parts)
}

/// The first timestamp in the glue's `list` (plain strings, as read once from the caller's
/// objects) that holds a line break: the error when [`split_n`] fails.
unsafe fn line_break_in(env: sys::napi_env, list: sys::napi_value, list_name: &str, field: &str) -> LoaError {
  let mut len = 0u32;
  sys::napi_get_array_length(env, list, &mut len);
  let mut buf = Vec::new();
  for i in 0..len {
    let mut item = ptr::null_mut();
    if sys::napi_get_element(env, list, i, &mut item) != sys::Status::napi_ok {
      break;
    }
    if strings::is_string(env, item) {
      if let Ok(text) = strings::read_into(env, item, &mut buf, strings::Surrogates::Replace, &|| field.to_string()) {
        if text.contains('\n') {
          return LoaError::InvalidArgument(format!(
            "`{list_name}[{i}].{field}` must be an RFC 3339 timestamp string (it holds a line break)"
          ));
        }
      }
    }
  }
  LoaError::InvalidArgument(format!("a `{field}` of `{list_name}` holds a line break"))
}

unsafe fn build(env: &Env, input: Unknown) -> Result<sys::napi_value> {
  let o = args::optional_object(Some(input), "input")?
    .ok_or_else(|| LoaError::InvalidArgument("`input` must be an object".into()))?;
  let options = parse_options(&o)?;
  let raw = env.raw();
  let glue = glue::load(env, &GLUE)?;
  let sessions = read_field(raw, o.raw(), c"sessions", &|| "sessions".into())?;
  let learnings = read_field(raw, o.raw(), c"learnings", &|| "learnings".into())?;

  let s = checked(raw, call(raw, glue, c"sessions", &[sessions])?)?;
  let s_joined = read_timestamps(raw, get(raw, s, c"timestamps")?)?;
  let s_importance: &[f64] = typed_array(raw, get(raw, s, c"importance")?)?;
  let s_timestamps = split_n(&s_joined, s_importance.len())
    .ok_or_else(|| line_break_in(raw, get(raw, s, c"list").unwrap_or(ptr::null_mut()), "sessions", "timestamp"))?;
  let l = checked(raw, call(raw, glue, c"learnings", &[learnings])?)?;
  let l_joined = read_timestamps(raw, get(raw, l, c"lastUsed")?)?;
  let l_used: &[u8] = typed_array(raw, get(raw, l, c"used")?)?;
  let l_importance: &[f64] = typed_array(raw, get(raw, l, c"importance")?)?;
  let l_last_used = split_n(&l_joined, l_used.len())
    .ok_or_else(|| line_break_in(raw, get(raw, l, c"list").unwrap_or(ptr::null_mut()), "learnings", "lastUsed"))?;
  if s_timestamps.len() != s_importance.len() || l_last_used.len() != l_used.len() || l_used.len() != l_importance.len()
  {
    return Err(napi_failed("glue returned inconsistent lists"));
  }

  let session_keys: Vec<SessionKey> =
    s_timestamps.iter().zip(s_importance).map(|(t, i)| SessionKey { timestamp: t, importance: Some(*i) }).collect();
  let learning_keys: Vec<LearningKey> = l_last_used
    .iter()
    .zip(l_used)
    .zip(l_importance)
    .map(|((t, used), i)| LearningKey { importance: Some(*i), last_used: (*used == 1).then_some(*t) })
    .collect();
  let source = JsSource {
    env: raw,
    sessions: get(raw, s, c"items")?,
    learnings: get(raw, l, c"items")?,
    read: Default::default(),
  };
  let built = core::build_context_from(&session_keys, &learning_keys, &source, &options)?;
  built_to_js(env, &built)
}

/// A [`core::BuiltContext`] as the `BuiltContext` JavaScript object (what `buildContext`
/// returns). For other entry points that build a context in Rust (the memory store's).
pub(crate) unsafe fn built_to_js(env: &Env, built: &core::BuiltContext) -> Result<sys::napi_value> {
  let raw = env.raw();
  let glue = glue::load(env, &GLUE)?;
  // Typed arrays, turned into objects by the glue.
  let kind_code = |k: ItemKind| if k == ItemKind::Session { 0u8 } else { 1u8 };
  const REASONS: [DropReason; 4] =
    [DropReason::Empty, DropReason::DoesNotFit, DropReason::BudgetFull, DropReason::NoBudget];
  let reason_code = |r: DropReason| REASONS.iter().position(|x| *x == r).unwrap_or(0) as u8;
  let inc = &built.included;
  let included = vec![
    Uint8Array::to_napi_value(raw, Uint8Array::new(inc.iter().map(|i| kind_code(i.kind)).collect())),
    Uint32Array::to_napi_value(raw, Uint32Array::new(inc.iter().map(|i| i.index as u32).collect())),
    Float64Array::to_napi_value(raw, Float64Array::new(inc.iter().map(|i| i.tokens as f64).collect())),
    Uint8Array::to_napi_value(raw, Uint8Array::new(inc.iter().map(|i| i.truncated as u8).collect())),
  ];
  let drop = &built.dropped;
  let dropped = vec![
    Uint8Array::to_napi_value(raw, Uint8Array::new(drop.iter().map(|d| kind_code(d.kind)).collect())),
    Uint32Array::to_napi_value(raw, Uint32Array::new(drop.iter().map(|d| d.index as u32).collect())),
    Uint8Array::to_napi_value(raw, Uint8Array::new(drop.iter().map(|d| reason_code(d.reason)).collect())),
  ];
  let to_js = |r: napi::Result<sys::napi_value>| r.map_err(|e| napi_failed(&e.reason));
  let argv = [
    match &built.text {
      Some(t) => to_js(String::to_napi_value(raw, t.clone()))?,
      None => to_js(Null::to_napi_value(raw, Null))?,
    },
    to_js(f64::to_napi_value(raw, built.tokens as f64))?,
    to_js(f64::to_napi_value(raw, built.limit as f64))?,
    to_js(Vec::<&str>::to_napi_value(raw, vec![ItemKind::Session.as_str(), ItemKind::Learning.as_str()]))?,
    to_js(Vec::<&str>::to_napi_value(raw, REASONS.iter().map(|r| r.as_str()).collect()))?,
    array(raw, included)?,
    array(raw, dropped)?,
  ];
  call(raw, glue, c"result", &argv)
}

/// A JS array of the given values.
unsafe fn array(raw: sys::napi_env, values: Vec<napi::Result<sys::napi_value>>) -> Result<sys::napi_value> {
  let mut out = ptr::null_mut();
  check(sys::napi_create_array_with_length(raw, values.len(), &mut out), "create array")?;
  for (i, v) in values.into_iter().enumerate() {
    let v = v.map_err(|e| napi_failed(&e.reason))?;
    check(sys::napi_set_element(raw, out, i as u32, v), "set element")?;
  }
  Ok(out)
}

/// Packs recent sessions and active learnings into a token budget and returns the text to
/// prepend to a prompt, with what was included and what was dropped and why.
///
/// - `tokens` is the exact count of `text` in `encoding` and never exceeds
///   `floor(budget * (1 - safetyMargin))`, header and line breaks included.
/// - Sessions newest first (timestamps parsed, any offset), then learnings by importance, then
///   most recent `lastUsed`; ties by input order. Same input, byte-identical output.
/// - Sessions get `sessionShare` first, learnings the rest; a share one kind cannot use flows to
///   the other.
/// - An item too large for what is left is cut at a token boundary with a visible
///   `… [truncated]` marker when at least `minTruncatedTokens` of it fit, or dropped.
/// - Only the texts of items whose turn comes are read: the cost grows with what is included,
///   not with the number of candidates.
///
/// Throws `E_INVALID_ARGUMENT` naming the field (`sessions[3].timestamp`) for bad input.
#[napi(ts_args_type = "input: BuildContextInput", ts_return_type = "BuiltContext")]
pub fn build_context<'a>(env: Env, input: Unknown<'a>) -> napi::Result<Unknown<'a>> {
  match guard(|| unsafe { build(&env, input) }) {
    Ok(value) => Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), value) }),
    Err(e) => Err(js_error(&env, &e)),
  }
}
