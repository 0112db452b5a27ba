//! `attentionLevel` and the `AttentionTracker` class.

use napi::bindgen_prelude::*;
use napi::{Env, JsValue, Unknown, ValueType};
use napi_derive::napi;

use super::{args, guard, to_napi};
use crate::attention as core;
use crate::attention::{AttentionBudgetConfig, BudgetLevel};
use crate::error::{invalid, LoaError, Result};

/// Where a token count stands on the attention budget (advisory, never blocking).
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; the value is serialized from the core
pub struct AttentionStatus {
  #[napi(ts_type = "'green' | 'yellow' | 'orange' | 'red'")]
  pub level: String,
  /// `continue`; `delta_sync` at yellow: persist findings to the ledgers now (NOTES.md Decision
  /// Log, active bead); `recommend_clear` at orange; `strongly_recommend_clear` at red.
  #[napi(ts_type = "'continue' | 'delta_sync' | 'recommend_clear' | 'strongly_recommend_clear'")]
  pub action: String,
  /// The seed's wording, e.g. `Context is filling. Consider /clear when ready.`
  pub message: String,
  pub tokens_used: f64,
  /// Tokens at which this level starts (0 for green).
  pub threshold: f64,
  /// Tokens at which the next level starts; `null` at red.
  #[napi(ts_type = "number | null")]
  pub next_threshold: f64,
}

/// What `AttentionTracker.add` reports.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; the value is serialized from the core
pub struct AttentionUpdate {
  /// Where the total stands now.
  pub status: AttentionStatus,
  /// Levels entered for the first time since construction or `reset()`, lowest first (several
  /// when one addition jumps over a level). A yellow entry asks for a delta sync.
  pub crossed: Vec<AttentionStatus>,
  /// This addition alone was over the per-operation limit (`singleSearch`, default 2000).
  pub over_operation_limit: bool,
}

fn level(o: &Object, key: &str, window: u64) -> Result<Option<BudgetLevel>> {
  let Some(v) = args::field(o, key)? else { return Ok(None) };
  let tokens = match v.get_type().ok() {
    Some(ValueType::Number) => args::u64_value(v, key)?,
    Some(ValueType::Object) => {
      let level = unsafe { Object::from_napi_value(v.value().env, v.raw()) }
        .map_err(|_| LoaError::InvalidArgument(format!("`{key}` must be an object")))?;
      args::optional_u64(&level, "tokens")?
        .ok_or_else(|| LoaError::InvalidArgument(format!("`{key}.tokens` must be a non-negative integer")))?
    }
    _ => return invalid(format!("`{key}` must be a token count or a level ({{ tokens, fraction }})")),
  };
  Ok(Some(BudgetLevel { tokens, fraction: tokens as f64 / window as f64 }))
}

/// An attention-budget configuration from JS: the `attentionBudget` of `loadConfig()`, or any
/// part of it (levels as `{ tokens, fraction }` or plain token counts); the rest is default.
pub(crate) fn parse_config(config: Option<Unknown>) -> Result<AttentionBudgetConfig> {
  let mut c = AttentionBudgetConfig::default();
  let Some(o) = args::optional_object(config, "config")? else { return Ok(c) };
  if let Some(w) = args::optional_u64(&o, "contextWindowTokens")? {
    if w == 0 {
      return invalid("`contextWindowTokens` must be at least 1");
    }
    c.context_window_tokens = w;
  }
  let w = c.context_window_tokens;
  for (key, slot) in [
    ("singleSearch", &mut c.single_search),
    ("yellow", &mut c.yellow),
    ("orange", &mut c.orange),
    ("red", &mut c.red),
    ("compact", &mut c.compact),
  ] {
    if let Some(l) = level(&o, key, w)? {
      *slot = l;
    }
  }
  Ok(c)
}

fn to_js<T: serde::Serialize>(value: &T) -> Result<serde_json::Value> {
  serde_json::to_value(value).map_err(|e| LoaError::Internal(e.to_string()))
}

/// The attention level of `tokensUsed` (seed 000 §4.3): green below yellow (default 5000),
/// yellow from 5000 (delta sync), orange from 10000 (recommend `/clear`), red from 15000.
/// `config` is the `attentionBudget` of `loadConfig()` (levels resolved from tokens, fractions of
/// the window or the seeds' other spellings), or any part of it; the rest is default. Throws
/// `E_INVALID_ARGUMENT` if the levels do not increase.
#[napi(ts_args_type = "tokensUsed: number, config?: AttentionBudgetInput", ts_return_type = "AttentionStatus")]
pub fn attention_level(env: Env, tokens_used: Unknown, config: Option<Unknown>) -> napi::Result<serde_json::Value> {
  to_napi(
    &env,
    guard(|| {
      let tokens = args::u64_value(tokens_used, "tokensUsed")?;
      to_js(&core::attention_level(tokens, &parse_config(config)?)?)
    }),
  )
}

/// Follows the tokens a session uses and reports each attention threshold the first time it is
/// crossed, with `delta_sync` at yellow.
///
/// ```ts
/// const tracker = new AttentionTracker(loadConfig(dir).config.attentionBudget)
/// for (const c of tracker.add(countTokens(toolResult)).crossed) {
///   if (c.action === 'delta_sync') await persistFindings()
///   else console.warn(c.message)
/// }
/// // after /clear:
/// tracker.reset()
/// ```
#[napi]
pub struct AttentionTracker {
  inner: core::AttentionTracker,
}

#[napi]
impl AttentionTracker {
  /// A tracker at 0 tokens. Throws `E_INVALID_ARGUMENT` if the levels do not increase.
  #[napi(constructor, ts_args_type = "config?: AttentionBudgetInput")]
  pub fn new(env: Env, config: Option<Unknown>) -> napi::Result<Self> {
    let inner = to_napi(&env, guard(|| core::AttentionTracker::new(&parse_config(config)?)))?;
    Ok(AttentionTracker { inner })
  }

  /// Adds the tokens of one operation (a tool result, a search, a message); reports the levels
  /// entered for the first time.
  #[napi(ts_args_type = "tokens: number", ts_return_type = "AttentionUpdate")]
  pub fn add(&mut self, env: Env, tokens: Unknown) -> napi::Result<serde_json::Value> {
    to_napi(&env, guard(|| to_js(&self.inner.add(args::u64_value(tokens, "tokens")?))))
  }

  /// Back to 0 tokens after the context was cleared; every level will be reported again.
  #[napi]
  pub fn reset(&mut self) {
    self.inner.reset();
  }

  /// Where the total stands.
  #[napi(ts_return_type = "AttentionStatus")]
  pub fn status(&self, env: Env) -> napi::Result<serde_json::Value> {
    to_napi(&env, to_js(&self.inner.status()))
  }

  /// Tokens added since construction or the last `reset()`.
  #[napi(getter)]
  pub fn tokens_used(&self) -> f64 {
    self.inner.tokens_used() as f64
  }
}
