//! `buildContext`: the binding of [`crate::context::build_context_from`].
//!
//! The candidates stay JavaScript objects: a small JavaScript helper (`context_glue.js`) checks
//! them and passes what ordering needs in bulk, and the native side reads a summary, trigger or
//! solution only when that item's turn comes, and only as many bytes of it as could be used. So
//! 100,000 candidates cost one JavaScript loop, not 100,000 conversions. For the same reason the
//! candidates' shapes (`ContextSessionInput`, `ContextLearningInput`) and the result's
//! (`BuiltContext`, built by the helper from typed arrays) are declared in TypeScript, in
//! `header.d.ts`, next to the helper's checks of them; the options are a `#[napi(object)]`.
//!
//! Safety: every `unsafe fn` of this module takes raw N-API handles and has one contract: it is
//! called on the JS thread, with the env of the current call and handles of that call's scope.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::CStr;
use std::ptr;

use napi::bindgen_prelude::*;
use napi::{sys, Env, Unknown};
use napi_derive::napi;

use super::convert::{object, Choice, Given, Int, Num};
use super::glue::{self, call, check, get, napi_failed};
use super::tokens::TokenEncoding;
use super::{strings, sync, RawJs};
use crate::context::{
  self as core, ContextOptions, ContextSource, DropReason, ItemKind, LearningKey, SessionKey, Text,
};
use crate::error::{LoaError, Result};
use crate::tokens;

/// A list of candidates, handed as it is to the JavaScript helper that checks it.
type Candidates = RawJs;

/// Input of `buildContext`.
#[napi(object, object_to_js = false)]
pub struct BuildContextInput {
  #[napi(ts_type = "Array<ContextSessionInput>")]
  pub sessions: Candidates,
  #[napi(ts_type = "Array<ContextLearningInput>")]
  pub learnings: Candidates,
  /// Tokens for everything in `text` (header, items, line breaks). Default 2000.
  #[napi(ts_type = "number")]
  pub budget: Option<Option<Int>>,
  /// Share of the room after the header that sessions get first, 0..1; learnings get the
  /// rest, and a share one kind does not need flows to the other. Default 0.7.
  #[napi(ts_type = "number")]
  pub session_share: Option<Option<Num>>,
  /// Encoding tokens are counted in. Default `'o200k_base'`.
  #[napi(ts_type = "TokenEncoding")]
  pub encoding: Option<Option<Choice<TokenEncoding>>>,
  /// Fraction of the budget kept free, for models whose tokenizer is not public: `text` holds
  /// at most `floor(budget * (1 - safetyMargin))` tokens. 0 (default) up to, not including, 1.
  #[napi(ts_type = "number")]
  pub safety_margin: Option<Option<Num>>,
  /// An item that does not fit whole is cut at a token boundary (ending in `… [truncated]`)
  /// only if at least this many of its tokens remain; otherwise it is dropped. Default 32.
  #[napi(ts_type = "number")]
  pub min_truncated_tokens: Option<Option<Int>>,
}

/// The options, and the session and learning candidates.
impl TryFrom<BuildContextInput> for (ContextOptions, Candidates, Candidates) {
  type Error = LoaError;

  fn try_from(i: BuildContextInput) -> Result<(ContextOptions, Candidates, Candidates)> {
    let d = ContextOptions::default();
    let options = ContextOptions {
      budget: i.budget.given().unwrap_or(d.budget),
      session_share: i.session_share.given().unwrap_or(d.session_share),
      encoding: i.encoding.given().unwrap_or(d.encoding),
      safety_margin: i
        .safety_margin
        .given()
        .map(|m| tokens::check_margin(m, "safetyMargin"))
        .transpose()?
        .unwrap_or(0.0),
      min_truncated_tokens: i.min_truncated_tokens.given().unwrap_or(d.min_truncated_tokens),
      header: None,
    };
    Ok((options, i.sessions, i.learnings))
  }
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

/// A string the helper made (a joined list, a field name): lone surrogates read as U+FFFD.
unsafe fn glue_string(env: sys::napi_env, value: sys::napi_value, what: &str) -> Result<String> {
  strings::read_string(env, value, strings::Surrogates::Replace).map_err(|r| r.named(what))
}

/// The helper's verdict on an input list: `{ bad, expected }` becomes `E_INVALID_ARGUMENT`.
unsafe fn checked(env: sys::napi_env, verdict: sys::napi_value) -> Result<sys::napi_value> {
  let bad = get(env, verdict, c"bad")?;
  if strings::is_string(env, bad) {
    let name = glue_string(env, bad, "glue")?;
    let expected = glue_string(env, get(env, verdict, c"expected")?, "glue")?;
    return Err(LoaError::InvalidArgument(format!("`{name}` must be {expected}")));
  }
  Ok(verdict)
}

/// The candidates' texts, read on demand from the candidate objects the helper checked (its
/// `items` copies, plain arrays). Each text property is read from the caller's object once: an
/// item may be formatted more than once (offered more room, then cut), and a getter answering
/// differently each time must not make the text differ between those reads (JS strings are
/// immutable, so reading the kept string again is safe).
struct JsSource {
  env: sys::napi_env,
  sessions: sys::napi_value,
  learnings: sys::napi_value,
  /// (field, index) -> the string read for it.
  read: RefCell<HashMap<(u8, usize), sys::napi_value>>,
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
    // SAFETY: `buildContext` runs on the JS thread and its handles live until it returns, which
    // is after the core has read every text it needs.
    unsafe {
      let cached = self.read.borrow().get(&(slot, index)).copied();
      let value = match cached {
        Some(value) => value,
        None => {
          let mut item = ptr::null_mut();
          check(sys::napi_get_element(self.env, list, index as u32, &mut item), "get element")?;
          let mut value = ptr::null_mut();
          let status = sys::napi_get_named_property(self.env, item, key.as_ptr(), &mut value);
          let value = strings::fetched(self.env, status, value, name)?;
          self.read.borrow_mut().insert((slot, index), value);
          value
        }
      };
      let (text, complete) = strings::read_prefix(self.env, value, max_bytes).map_err(|r| r.named(&name()))?;
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

/// Splits the helper's timestamps (each followed by a line break) into `n` strings, or `None`
/// if one of them contained a line break itself.
fn split_n(joined: &str, n: usize) -> Option<Vec<&str>> {
  let mut parts: Vec<&str> = joined.split('\n').collect();
  if parts.pop() != Some("") || parts.len() != n {
    return if n == 0 && joined.is_empty() { Some(Vec::new()) } else { None };
  }
  Some(parts)
}

/// The first timestamp in the helper's `list` (plain strings, as read once from the caller's
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
      if let Ok(text) = strings::read_into(env, item, &mut buf, strings::Surrogates::Replace) {
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
  let (options, sessions, learnings) = object::<BuildContextInput, (_, _, _)>(input, "input")?;
  let raw = env.raw();
  let glue = glue::load(env, &GLUE)?;

  let s = checked(raw, call(raw, glue, c"sessions", &[sessions.0])?)?;
  let s_joined = glue_string(raw, get(raw, s, c"timestamps")?, "timestamps")?;
  let s_importance: &[f64] = typed_array(raw, get(raw, s, c"importance")?)?;
  let s_timestamps = split_n(&s_joined, s_importance.len())
    .ok_or_else(|| line_break_in(raw, get(raw, s, c"list").unwrap_or(ptr::null_mut()), "sessions", "timestamp"))?;
  let l = checked(raw, call(raw, glue, c"learnings", &[learnings.0])?)?;
  let l_joined = glue_string(raw, get(raw, l, c"lastUsed")?, "lastUsed")?;
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
/// returns), built by the helper from typed arrays. Also for the memory store's `buildContext`.
///
/// # Safety
/// On the JS thread, with the env of the current call.
pub(crate) unsafe fn built_to_js(env: &Env, built: &core::BuiltContext) -> Result<sys::napi_value> {
  let raw = env.raw();
  let glue = glue::load(env, &GLUE)?;
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
pub fn build_context(env: Env, input: Unknown) -> napi::Result<RawJs> {
  // SAFETY: on the JS thread with its env.
  sync(&env, || unsafe { build(&env, input) }).map(RawJs)
}
