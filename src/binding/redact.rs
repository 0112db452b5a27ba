//! `redact`, `redactAsync`, `redactBatch`, `redactionKinds`: PII and secret redaction.

use napi::bindgen_prelude::*;
use napi::{check_status, sys, Env, Unknown};
use napi_derive::napi;

use super::fs::CoreTask;
use super::{args, guard, to_napi};
use crate::redact as core;

/// Options of `redact`.
#[napi(object, js_name = "RedactOptions")]
#[allow(dead_code)] // declares the TypeScript shape; read field by field in `args`
pub struct JsRedactOptions {
  /// Exact values that are never redacted, e.g. a project's public contact address.
  pub allowlist: Option<Vec<String>>,
  /// Key of the fingerprint (HMAC-SHA256), e.g. 32 random bytes kept with the workspace. Without
  /// one, a random key per process is used, so fingerprints only compare within one process.
  #[napi(ts_type = "Buffer | Uint8Array | string")]
  pub key: Option<Buffer>,
  /// Replace each value by a stable pseudonym derived from `key` (`[EMAIL_3f2a9c1d]`: the same
  /// value always gets the same placeholder) instead of `[REDACTED:EMAIL]`. Default false.
  pub pseudonymize: Option<bool>,
}

/// One redacted span. Never holds the value or any part of it.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; `FastRedaction` builds the JS objects
pub struct Finding {
  /// What was found, snake_case: `email`, `phone`, `credit_card`, `iban`, `us_ssn`, `ipv4`,
  /// `ipv6`, `url_credentials`, `jwt`, `private_key`, `password`, `secret`, `high_entropy`,
  /// `aws_access_key_id`, `aws_secret_access_key`, `github_token`, `slack_token`, `stripe_key`,
  /// ... (`redactionKinds()` lists them all).
  pub kind: String,
  /// Start of the value in the input, in UTF-16 code units (a JavaScript string index).
  pub start: u32,
  /// End of the value (exclusive), in UTF-16 code units: `input.slice(start, end)` is the value.
  pub end: u32,
  /// How it was found: a known format (`pattern`), a checksum (`checksum`: Luhn, mod-97), a
  /// keyword such as `password=` or `Bearer` (`keyword`), or randomness (`entropy`).
  #[napi(ts_type = "'pattern' | 'checksum' | 'keyword' | 'entropy'")]
  pub method: String,
  /// 16 hex characters of HMAC-SHA256(key, value): equal fingerprints mean the same value was
  /// seen again (under the same key).
  pub fingerprint: String,
}

/// The result of `redact`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; `FastRedaction` builds the JS objects
pub struct Redaction {
  /// The input with every finding replaced by a placeholder such as `[REDACTED:EMAIL]` (or
  /// `[EMAIL_3f2a9c1d]` when pseudonymizing). Contains no part of any finding's value.
  pub text: String,
  /// What was replaced, in order of position; overlapping detections are merged into one.
  pub findings: Vec<Finding>,
  /// True when the text must not be stored at all (it contains a private key); `text` is still
  /// redacted.
  pub blocked: bool,
}

/// A provider token pattern, for comparing engines.
#[napi(object)]
pub struct RedactionPattern {
  pub kind: String,
  /// Regular expression source, valid in JavaScript and Rust.
  pub source: String,
  /// `RegExp` flags: `'g'` or `'gi'`.
  pub flags: String,
}

fn parse_options(options: Option<Unknown>) -> crate::Result<core::RedactOptions> {
  let mut out = core::RedactOptions::default();
  if let Some(o) = args::optional_object(options, "options")? {
    out.allowlist = args::optional_string_array(&o, "allowlist")?.unwrap_or_default();
    out.key = args::optional_bytes(&o, "key")?;
    if out.key.as_ref().is_some_and(|k| k.is_empty()) {
      return crate::error::invalid("`key` must not be empty");
    }
    out.pseudonymize = args::optional_bool(&o, "pseudonymize")?.unwrap_or(false);
  }
  Ok(out)
}

/// A `Redaction` converted to JS by hand: with thousands of findings, creating each object
/// through generic property setters (a new key string per property, a new string per `kind`)
/// cost more than finding them. Keys and the few distinct `kind` / `method` strings are made
/// once per call; the text is created as Latin-1 when it is ASCII (a plain copy in V8).
pub struct FastRedaction(core::Redaction);

fn to_js(r: core::Redaction) -> FastRedaction {
  FastRedaction(r)
}

impl TypeName for FastRedaction {
  fn type_name() -> &'static str {
    "Redaction"
  }
  fn value_type() -> napi::ValueType {
    napi::ValueType::Object
  }
}

impl ValidateNapiValue for FastRedaction {}

unsafe fn js_string(env: sys::napi_env, s: &str) -> napi::Result<sys::napi_value> {
  let mut v = std::ptr::null_mut();
  if s.is_ascii() {
    check_status!(unsafe { sys::napi_create_string_latin1(env, s.as_ptr().cast(), s.len() as isize, &mut v) })?;
  } else {
    check_status!(unsafe { sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut v) })?;
  }
  Ok(v)
}

unsafe fn js_u32(env: sys::napi_env, n: usize) -> napi::Result<sys::napi_value> {
  let mut v = std::ptr::null_mut();
  check_status!(unsafe { sys::napi_create_uint32(env, n as u32, &mut v) })?;
  Ok(v)
}

unsafe fn set(env: sys::napi_env, obj: sys::napi_value, key: sys::napi_value, value: sys::napi_value) -> napi::Result<()> {
  check_status!(unsafe { sys::napi_set_property(env, obj, key, value) })
}

impl ToNapiValue for FastRedaction {
  unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
    let r = val.0;
    unsafe { redaction_to_js(env, &r.text, &r.findings, r.blocked) }
  }
}

unsafe fn redaction_to_js(env: sys::napi_env, text: &str, found: &[core::Finding], blocked: bool) -> napi::Result<sys::napi_value> {
  unsafe {
    let keys: Vec<sys::napi_value> =
      ["kind", "start", "end", "method", "fingerprint"].iter().map(|k| js_string(env, k)).collect::<napi::Result<_>>()?;
    let mut interned: Vec<(String, sys::napi_value)> = Vec::new();
    let mut intern = |s: &str| -> napi::Result<sys::napi_value> {
      if let Some((_, v)) = interned.iter().find(|(k, _)| k == s) {
        return Ok(*v);
      }
      let v = js_string(env, s)?;
      interned.push((s.to_string(), v));
      Ok(v)
    };
    let mut findings = std::ptr::null_mut();
    check_status!(sys::napi_create_array_with_length(env, found.len(), &mut findings))?;
    for (i, f) in found.iter().enumerate() {
      let mut obj = std::ptr::null_mut();
      check_status!(sys::napi_create_object(env, &mut obj))?;
      set(env, obj, keys[0], intern(&f.kind)?)?;
      set(env, obj, keys[1], js_u32(env, f.start)?)?;
      set(env, obj, keys[2], js_u32(env, f.end)?)?;
      set(env, obj, keys[3], intern(&f.method)?)?;
      set(env, obj, keys[4], js_string(env, &f.fingerprint)?)?;
      check_status!(sys::napi_set_element(env, findings, i as u32, obj))?;
    }
    let mut result = std::ptr::null_mut();
    check_status!(sys::napi_create_object(env, &mut result))?;
    set(env, result, js_string(env, "text")?, js_string(env, text)?)?;
    set(env, result, js_string(env, "findings")?, findings)?;
    let mut b = std::ptr::null_mut();
    check_status!(sys::napi_get_boolean(env, blocked, &mut b))?;
    set(env, result, js_string(env, "blocked")?, b)?;
    Ok(result)
  }
}

thread_local! {
  /// The input and output text of the last `redact` call on this thread, reused: allocating
  /// (and page-faulting in) two fresh buffers per call was a measurable share of the time for
  /// large texts.
  static BUFFERS: std::cell::RefCell<(Vec<u8>, String)> = const { std::cell::RefCell::new((Vec::new(), String::new())) };
}

/// Reads a JS string into `buf` as UTF-8 (V8 writes lone surrogates as U+FFFD, one UTF-16
/// unit like the surrogate, so offsets are unaffected).
fn read_string(env: &Env, value: &Unknown, name: &str, buf: &mut Vec<u8>) -> crate::Result<()> {
  if value.get_type().ok() != Some(napi::ValueType::String) {
    return Err(crate::LoaError::InvalidArgument(format!("`{name}` must be a string")));
  }
  let raw_env = env.raw();
  let raw = value.raw();
  // The UTF-16 length is known to V8 without a pass over the string (the UTF-8 length is not),
  // and UTF-8 needs at most 3 bytes per UTF-16 unit: one copy instead of a measuring pass and a
  // copy.
  let mut units = 0usize;
  let status = unsafe { sys::napi_get_value_string_utf16(raw_env, raw, std::ptr::null_mut(), 0, &mut units) };
  if status != sys::Status::napi_ok {
    return Err(crate::LoaError::InvalidArgument(format!("`{name}` must be a valid string")));
  }
  let len = units * 3;
  buf.clear();
  buf.reserve(len + 1);
  let mut written = 0usize;
  let status = unsafe { sys::napi_get_value_string_utf8(raw_env, raw, buf.as_mut_ptr().cast(), len + 1, &mut written) };
  if status != sys::Status::napi_ok {
    return Err(crate::LoaError::InvalidArgument(format!("`{name}` must be a valid string")));
  }
  // SAFETY: napi wrote `written` bytes into the reserved capacity.
  unsafe { buf.set_len(written) };
  Ok(())
}

/// Finds personal data and secrets in `text` and replaces each with a placeholder: e-mail
/// addresses, phone numbers, payment cards (Luhn), IBANs (mod-97), US SSNs, IP addresses,
/// private keys (which also set `blocked`), JWTs, provider tokens (AWS, GitHub, GitLab, Slack,
/// Stripe, OpenAI, Anthropic, Google, Azure, npm, PyPI, Twilio, SendGrid and about a hundred
/// more), credentials in URLs, `password=` / `token:` / `Bearer` values and random-looking
/// tokens. Git SHAs, UUIDs, versions, dates, timestamps, file paths and placeholders such as
/// AWS's documentation example key (`AKIA…EXAMPLE`) or `xxxx` are left alone.
///
/// ```ts
/// const { text, findings, blocked } = redact('mail bob@example.com or call +44 20 7946 0958')
/// // text: 'mail [REDACTED:EMAIL] or call [REDACTED:PHONE]'
/// // findings[0]: { kind: 'email', start: 5, end: 20, method: 'pattern', fingerprint: '9c1d...' }
/// ```
#[napi(ts_args_type = "text: string, options?: RedactOptions", ts_return_type = "Redaction")]
pub fn redact<'a>(env: &'a Env, text: Unknown<'a>, options: Option<Unknown<'a>>) -> napi::Result<Unknown<'a>> {
  let raw = to_napi(
    env,
    guard(|| {
      BUFFERS.with(|cell| {
        let mut guard = cell.try_borrow_mut().map_err(|_| crate::LoaError::Internal("re-entrant redact".into()))?;
        let (input, output) = &mut *guard;
        read_string(env, &text, "text", input)?;
        let options = parse_options(options)?;
        let text = std::str::from_utf8(input).map_err(|_| crate::LoaError::InvalidArgument("`text` must be a valid string".into()))?;
        let (findings, blocked) = core::redact_into(text, &options, output);
        // SAFETY: called on the JS thread with its env.
        let value = unsafe { redaction_to_js(env.raw(), output, &findings, blocked) }.map_err(|e| crate::LoaError::Internal(e.to_string()))?;
        if input.capacity() > 64 << 20 {
          // Do not keep huge buffers around after an exceptional call.
          *input = Vec::new();
          *output = String::new();
        }
        Ok(value)
      })
    }),
  )?;
  Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), raw) })
}

/// `redact` on the libuv thread pool, for large texts: the event loop keeps running.
#[napi(ts_args_type = "text: string, options?: RedactOptions", ts_return_type = "Promise<Redaction>")]
pub fn redact_async(text: Unknown, options: Option<Unknown>) -> napi::Result<AsyncTask<CoreTask<FastRedaction>>> {
  // Bad arguments reject the promise like any other failure, instead of throwing synchronously.
  Ok(AsyncTask::new(match guard(|| Ok((args::string(text, "text")?, parse_options(options)?))) {
    Ok((text, options)) => CoreTask::new(move || Ok(to_js(core::redact(&text, &options)))),
    Err(e) => CoreTask::new(move || Err(e)),
  }))
}

/// `redact` for many texts with the same options, in one call (saves a crossing of the
/// JS/Rust boundary per text). Results are in input order.
#[napi(ts_args_type = "texts: string[], options?: RedactOptions", ts_return_type = "Redaction[]")]
pub fn redact_batch(env: Env, texts: Unknown, options: Option<Unknown>) -> napi::Result<Vec<FastRedaction>> {
  to_napi(
    &env,
    guard(|| {
      let texts = args::string_array(texts, "texts")?;
      let options = parse_options(options)?;
      Ok(core::redact_batch(&texts, &options).into_iter().map(to_js).collect())
    }),
  )
}

/// Every `kind` a finding can have.
#[napi]
pub fn redaction_kinds() -> Vec<&'static str> {
  core::KINDS.to_vec()
}

/// For the benchmark: the provider token patterns, to run the same list with JavaScript
/// `RegExp`.
#[napi(js_name = "__redactionPatterns")]
pub fn redaction_patterns() -> Vec<RedactionPattern> {
  core::token_patterns()
    .into_iter()
    .map(|(kind, source, ci)| RedactionPattern { kind: kind.into(), source: source.into(), flags: if ci { "gi" } else { "g" }.into() })
    .collect()
}

