//! `countTokens`, `countTokensBatch`, `estimateTokens`.

use napi::{sys, Env, JsValue, Unknown};
use napi_derive::napi;

use super::convert::{arg, opt_object, string_union, Choice, Given, Num, Text};
use super::{strings, sync};
use crate::error::{LoaError, Result};
use crate::tokens::{self, TokenEncoding as Encoding};

string_union! {
  "BPE encoding used to count tokens."
  TokenEncoding <=> Encoding {
    o200k_base = O200kBase,
    cl100k_base = Cl100kBase,
  }
}

/// Options of `countTokens` / `countTokensBatch`.
#[napi(object, object_to_js = false)]
pub struct CountTokensOptions {
  /// BPE encoding to count in. Default `'o200k_base'` (GPT-4o and later); `'cl100k_base'` is
  /// GPT-4 / GPT-3.5's.
  #[napi(ts_type = "TokenEncoding")]
  pub encoding: Option<Option<Choice<TokenEncoding>>>,
  /// For models whose tokenizer is not public (Claude 3 and later): returns
  /// `ceil(count / (1 - safetyMargin))`, the count a budget with that margin reserves. A fraction
  /// from 0 (default, the exact count) up to, not including, 1.
  #[napi(ts_type = "number")]
  pub safety_margin: Option<Option<Num>>,
}

/// How to count: the encoding and the safety margin (checked).
#[derive(Default)]
struct Counting {
  encoding: Encoding,
  margin: f64,
}

impl TryFrom<CountTokensOptions> for Counting {
  type Error = LoaError;

  fn try_from(o: CountTokensOptions) -> Result<Counting> {
    Ok(Counting {
      encoding: o.encoding.given().unwrap_or_default(),
      margin: o.safety_margin.given().map(|m| tokens::check_margin(m, "safetyMargin")).transpose()?.unwrap_or(0.0),
    })
  }
}

fn counting(options: Option<Unknown>) -> Result<Counting> {
  opt_object::<CountTokensOptions, _>(options, "options")
}

/// The exact number of tokens of `text` in a public BPE encoding (default `o200k_base`), the same
/// as tiktoken's `encode_ordinary(text).length`: special-token text such as `<|endoftext|>` counts
/// as ordinary text. The vocabularies are part of the package; nothing is downloaded. With
/// `safetyMargin`, returns `ceil(count / (1 - safetyMargin))` (see the README for models whose
/// tokenizer is not public).
#[napi(ts_args_type = "text: string, options?: CountTokensOptions")]
pub fn count_tokens(env: Env, text: Unknown, options: Option<Unknown>) -> napi::Result<u32> {
  sync(&env, || {
    // Counted as tiktoken counts it: a lone surrogate is U+FFFD (see the README).
    let text = arg::<Text>(text, "text")?.0;
    let c = counting(options)?;
    Ok(tokens::with_margin(tokens::count_tokens(&text, c.encoding), c.margin) as u32)
  })
}

/// `countTokens` for many strings in one call (one crossing of the JS/native boundary): returns
/// the counts in the same order.
#[napi(ts_args_type = "texts: string[], options?: CountTokensOptions")]
pub fn count_tokens_batch(env: Env, texts: Unknown, options: Option<Unknown>) -> napi::Result<Vec<u32>> {
  sync(&env, || {
    let c = counting(options)?;
    if !texts.is_array().unwrap_or(false) {
      return crate::error::invalid("`texts` must be an array of strings");
    }
    // Each string is read into one reused buffer and counted there: no `String` per text.
    let encoder = tokens::encoder(c.encoding);
    let (raw, array) = (env.raw(), texts.raw());
    let mut len = 0u32;
    let mut buf = Vec::new();
    // SAFETY: on the JS thread with its env; `array` is an array of this call, each element is
    // checked to be a string before it is read.
    unsafe {
      sys::napi_get_array_length(raw, array, &mut len);
      let mut out = Vec::with_capacity(len as usize);
      for i in 0..len {
        let what = || format!("texts[{i}]");
        let mut item = std::ptr::null_mut();
        let status = sys::napi_get_element(raw, array, i, &mut item);
        let item = strings::fetched(raw, status, item, what)?;
        let text =
          strings::read_into(raw, item, &mut buf, strings::Surrogates::Replace).map_err(|r| r.named(&what()))?;
        out.push(tokens::with_margin(encoder.count(text), c.margin) as u32);
      }
      Ok(out)
    }
  })
}

/// A fast estimate of the token count of `text` (one pass over the characters, no vocabulary,
/// about 3x faster than `countTokens`), meant as an upper bound for both public encodings. On the
/// benchmark corpus it overestimates `o200k_base` by about 18 % on English, 20 % on keys and
/// hashes, 36 % on code, 60 % on emoji and 89 % on CJK (`cl100k_base`: 11-37 %), and no document
/// was under; see the README for the table. It is not a guarantee: use `countTokens` where a
/// budget must hold.
#[napi(ts_args_type = "text: string")]
pub fn estimate_tokens(env: Env, text: Unknown) -> napi::Result<u32> {
  sync(&env, || Ok(tokens::estimate_tokens(&arg::<Text>(text, "text")?.0) as u32))
}
