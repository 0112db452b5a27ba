//! `attentionLevel` and the `AttentionTracker` class.

use napi::bindgen_prelude::*;
use napi::{sys, Env, Unknown, ValueType};
use napi_derive::napi;

use super::convert::{arg, js_from, member, on, opt_object, refuse, type_of, Given, Int};
use super::sync;
use crate::attention::{self as core, AttentionBudgetConfig, BudgetLevel};
use crate::error::{invalid, LoaError, Result};

/// A level as `BudgetLevel | number`: its tokens (a `BudgetLevel`'s `fraction` is recomputed
/// from them and the window).
pub struct Level(u64);

impl FromNapiValue for Level {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    match type_of(env, value)? {
      ValueType::Number => Int::from_napi_value(env, value).map(|n| Level(n.0)),
      ValueType::Object => match member::<Int>(env, value, "BudgetLevel", c"tokens")? {
        Some(Int(tokens)) => Ok(Level(tokens)),
        None => Err(on(refuse("must be a non-negative integer"), "BudgetLevel", "tokens")),
      },
      _ => Err(refuse("must be a token count or a level ({ tokens, fraction })")),
    }
  }
}

/// The attention budget as `attentionLevel` and `AttentionTracker` take it: the `attentionBudget`
/// of `loadConfig()`, or any part of it (the rest is default), with levels as `{ tokens, fraction }`
/// or plain token counts. Levels are compared in tokens.
#[napi(object, object_to_js = false)]
pub struct AttentionBudgetInput {
  #[napi(ts_type = "number")]
  pub context_window_tokens: Option<Option<Int>>,
  #[napi(ts_type = "BudgetLevel | number")]
  pub single_search: Option<Option<Level>>,
  #[napi(ts_type = "BudgetLevel | number")]
  pub yellow: Option<Option<Level>>,
  #[napi(ts_type = "BudgetLevel | number")]
  pub orange: Option<Option<Level>>,
  #[napi(ts_type = "BudgetLevel | number")]
  pub red: Option<Option<Level>>,
  #[napi(ts_type = "BudgetLevel | number")]
  pub compact: Option<Option<Level>>,
}

impl TryFrom<AttentionBudgetInput> for AttentionBudgetConfig {
  type Error = LoaError;

  fn try_from(i: AttentionBudgetInput) -> Result<AttentionBudgetConfig> {
    let mut c = AttentionBudgetConfig::default();
    if let Some(window) = i.context_window_tokens.given() {
      if window == 0 {
        return invalid("`contextWindowTokens` must be at least 1");
      }
      c.context_window_tokens = window;
    }
    let window = c.context_window_tokens;
    for (level, slot) in [
      (i.single_search, &mut c.single_search),
      (i.yellow, &mut c.yellow),
      (i.orange, &mut c.orange),
      (i.red, &mut c.red),
      (i.compact, &mut c.compact),
    ] {
      if let Some(Level(tokens)) = level.flatten() {
        *slot = BudgetLevel::of_tokens(tokens, window);
      }
    }
    Ok(c)
  }
}

fn budget(config: Option<Unknown>) -> Result<AttentionBudgetConfig> {
  opt_object::<AttentionBudgetInput, _>(config, "config")
}

/// Where a token count stands on the attention budget (advisory, never blocking).
#[napi(object, object_from_js = false, use_nullable = true)]
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
  pub next_threshold: Option<f64>,
}

js_from!(|s: core::AttentionStatus| AttentionStatus {
  level = s.level.as_str().into(),
  action = s.action.as_str().into(),
  message => into,
  tokens_used: f64,
  threshold: f64,
  next_threshold: Option<f64>,
});

/// What `AttentionTracker.add` reports.
#[napi(object, object_from_js = false)]
pub struct AttentionUpdate {
  /// Where the total stands now.
  pub status: AttentionStatus,
  /// Levels entered for the first time since construction or `reset()`, lowest first (several
  /// when one addition jumps over a level). A yellow entry asks for a delta sync.
  pub crossed: Vec<AttentionStatus>,
  /// This addition alone was over the per-operation limit (`singleSearch`, default 2000).
  pub over_operation_limit: bool,
}

js_from!(|u: core::AttentionUpdate| AttentionUpdate { status => into, crossed => each, over_operation_limit });

/// The attention level of `tokensUsed` (seed 000 §4.3): green below yellow (default 5000),
/// yellow from 5000 (delta sync), orange from 10000 (recommend `/clear`), red from 15000.
/// `config` is the `attentionBudget` of `loadConfig()` (levels resolved from tokens, fractions of
/// the window or the seeds' other spellings), or any part of it; the rest is default. Throws
/// `E_INVALID_ARGUMENT` if the levels do not increase.
#[napi(ts_args_type = "tokensUsed: number, config?: AttentionBudgetInput")]
pub fn attention_level(env: Env, tokens_used: Unknown, config: Option<Unknown>) -> napi::Result<AttentionStatus> {
  sync(&env, || core::attention_level(arg::<Int>(tokens_used, "tokensUsed")?.0, &budget(config)?)).map(Into::into)
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
    sync(&env, || core::AttentionTracker::new(&budget(config)?)).map(|inner| AttentionTracker { inner })
  }

  /// Adds the tokens of one operation (a tool result, a search, a message); reports the levels
  /// entered for the first time.
  #[napi(ts_args_type = "tokens: number")]
  pub fn add(&mut self, env: Env, tokens: Unknown) -> napi::Result<AttentionUpdate> {
    sync(&env, || Ok(self.inner.add(arg::<Int>(tokens, "tokens")?.0))).map(Into::into)
  }

  /// Back to 0 tokens after the context was cleared; every level will be reported again.
  #[napi]
  pub fn reset(&mut self) {
    self.inner.reset();
  }

  /// Where the total stands.
  #[napi]
  pub fn status(&self) -> AttentionStatus {
    self.inner.status().into()
  }

  /// Tokens added since construction or the last `reset()`.
  #[napi(getter)]
  pub fn tokens_used(&self) -> f64 {
    self.inner.tokens_used() as f64
  }
}
