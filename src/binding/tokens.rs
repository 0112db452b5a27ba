//! `countTokens`, `countTokensBatch`, `estimateTokens`.

use napi::{Env, JsValue, Unknown};
use napi_derive::napi;

use super::{args, guard, strings, to_napi};
use crate::error::LoaError;
use crate::tokens::{self, TokenEncoding};

/// Options of `countTokens` / `countTokensBatch`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field in `args`
pub struct CountTokensOptions {
  /// BPE encoding to count in. Default `'o200k_base'` (GPT-4o and later); `'cl100k_base'` is
  /// GPT-4 / GPT-3.5's.
  #[napi(ts_type = "TokenEncoding")]
  pub encoding: Option<String>,
  /// For models whose tokenizer is not public (Claude 3 and later): returns
  /// `ceil(count / (1 - safetyMargin))`, the count a budget with that margin reserves. A fraction
  /// from 0 (default, the exact count) up to, not including, 1.
  pub safety_margin: Option<f64>,
}

struct Counting {
  encoding: TokenEncoding,
  margin: f64,
}

fn parse_options(options: Option<Unknown>) -> crate::Result<Counting> {
  let mut c = Counting { encoding: TokenEncoding::O200kBase, margin: 0.0 };
  if let Some(o) = args::optional_object(options, "options")? {
    if let Some(e) = args::optional_string(&o, "encoding")? {
      c.encoding = TokenEncoding::parse(&e)?;
    }
    if let Some(m) = args::optional_f64(&o, "safetyMargin")? {
      c.margin = tokens::check_margin(m, "safetyMargin")?;
    }
  }
  Ok(c)
}

/// The exact number of tokens of `text` in a public BPE encoding (default `o200k_base`), the same
/// as tiktoken's `encode_ordinary(text).length`: special-token text such as `<|endoftext|>` counts
/// as ordinary text. The vocabularies are part of the package; nothing is downloaded. With
/// `safetyMargin`, returns `ceil(count / (1 - safetyMargin))` (see the README for models whose
/// tokenizer is not public).
#[napi(ts_args_type = "text: string, options?: CountTokensOptions")]
pub fn count_tokens(env: Env, text: Unknown, options: Option<Unknown>) -> napi::Result<u32> {
  to_napi(
    &env,
    guard(|| {
      // Counted as tiktoken counts it: a lone surrogate is U+FFFD (see the README).
      let text = args::text(text, "text")?;
      let c = parse_options(options)?;
      Ok(tokens::with_margin(tokens::count_tokens(&text, c.encoding), c.margin) as u32)
    }),
  )
}

/// `countTokens` for many strings in one call (one crossing of the JS/native boundary): returns
/// the counts in the same order.
#[napi(ts_args_type = "texts: string[], options?: CountTokensOptions")]
pub fn count_tokens_batch(env: Env, texts: Unknown, options: Option<Unknown>) -> napi::Result<Vec<u32>> {
  to_napi(
    &env,
    guard(|| {
      let c = parse_options(options)?;
      if !texts.is_array().unwrap_or(false) {
        return crate::error::invalid("`texts` must be an array of strings");
      }
      let raw_env = env.raw();
      let array = texts.raw();
      let encoder = tokens::encoder(c.encoding);
      let mut len = 0u32;
      unsafe { napi::sys::napi_get_array_length(raw_env, array, &mut len) };
      let mut out = Vec::with_capacity(len as usize);
      let mut buf = Vec::new();
      for i in 0..len {
        let mut item = std::ptr::null_mut();
        let what = || format!("texts[{i}]");
        unsafe {
          if napi::sys::napi_get_element(raw_env, array, i, &mut item) != napi::sys::Status::napi_ok {
            return Err(args::unreadable(raw_env, &what()));
          }
          if !strings::is_string(raw_env, item) {
            return Err(LoaError::InvalidArgument(format!("`{}` must be a string", what())));
          }
          let text = strings::read_into(raw_env, item, &mut buf, strings::Surrogates::Replace, &what)?;
          out.push(tokens::with_margin(encoder.count(text), c.margin) as u32);
        }
      }
      Ok(out)
    }),
  )
}

/// A fast estimate of the token count of `text` (one pass over the characters, no vocabulary,
/// about 3x faster than `countTokens`), meant as an upper bound for both public encodings. On the
/// benchmark corpus it overestimates `o200k_base` by about 18 % on English, 20 % on keys and
/// hashes, 36 % on code, 60 % on emoji and 89 % on CJK (`cl100k_base`: 11-37 %), and no document
/// was under; see the README for the table. It is not a guarantee: use `countTokens` where a
/// budget must hold.
#[napi(ts_args_type = "text: string")]
pub fn estimate_tokens(env: Env, text: Unknown) -> napi::Result<u32> {
  to_napi(&env, guard(|| Ok(tokens::estimate_tokens(&args::text(text, "text")?) as u32)))
}
