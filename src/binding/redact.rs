//! `redact`, `redactAsync`, `redactBatch`, `redactionKinds`: PII and secret redaction.

use napi::bindgen_prelude::*;
use napi::{sys, Env, Unknown};
use napi_derive::napi;

use super::convert::{arg, opt_fields, type_name, Bool, Bytes, Given, List, Obj, Text};
use super::{glue, guard, strings, to_napi, CoreTask, RawJs};
use crate::redact as core;

/// Options of `redact`.
#[napi(object, object_to_js = false)]
pub struct RedactOptions {
  /// Exact values that are never redacted, e.g. a project's public contact address.
  #[napi(ts_type = "Array<string>")]
  pub allowlist: Option<Option<List<Text>>>,
  /// Key of the fingerprint (HMAC-SHA256), e.g. 32 random bytes kept with the workspace. Without
  /// one, a random key per process is used, so fingerprints only compare within one process.
  #[napi(ts_type = "Buffer | Uint8Array | string")]
  pub key: Option<Option<Bytes>>,
  /// Replace each value by a stable pseudonym derived from `key` (`[EMAIL_3f2a9c1d]`: the same
  /// value always gets the same placeholder) instead of `[REDACTED:EMAIL]`. Default false.
  #[napi(ts_type = "boolean")]
  pub pseudonymize: Option<Option<Bool>>,
}

impl TryFrom<RedactOptions> for core::RedactOptions {
  type Error = crate::LoaError;

  fn try_from(o: RedactOptions) -> crate::Result<core::RedactOptions> {
    let key = o.key.flatten().map(|k| k.0);
    if key.as_ref().is_some_and(|k| k.is_empty()) {
      return crate::error::invalid("`key` must not be empty");
    }
    // Allowed values are compared with the text, which is read with lone surrogates as U+FFFD.
    let allowlist = o.allowlist.given().unwrap_or_default();
    Ok(core::RedactOptions { allowlist, key, pseudonymize: o.pseudonymize.given().unwrap_or(false) })
  }
}

/// The options of a call; its fields are named on their own in errors (`allowlist[1]`).
fn parse_options(options: Option<Unknown>) -> crate::Result<core::RedactOptions> {
  opt_fields::<Obj<RedactOptions>>(options, "options")?.map_or_else(|| Ok(Default::default()), |o| o.0.try_into())
}

/// A `Redaction` on its way to JavaScript. With thousands of findings, creating each object
/// through N-API (about 100 ns per property) cost more than finding them: the findings cross as
/// one typed array and one string of fingerprints, and a JavaScript helper (`redact_glue.js`)
/// builds the objects. A large ASCII text is handed to V8 without a copy (an external string).
pub struct FastRedaction(core::Redaction);

type_name!(FastRedaction, "Redaction", Object);

impl ToNapiValue for FastRedaction {
  unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
    // SAFETY: napi-rs calls this on the JS thread with its env.
    unsafe { redaction_to_js(&Env::from_raw(env), val.0) }.map_err(|e| napi::Error::from_reason(e.to_string()))
  }
}

const GLUE: glue::Script = glue::Script { name: "redact", source: include_str!("redact_glue.js") };

/// # Safety
/// On the JS thread with its env: every N-API call here needs it (the contract of each
/// `unsafe fn` of this file).
unsafe fn js_string(env: sys::napi_env, s: &str) -> crate::Result<sys::napi_value> {
  let mut v = std::ptr::null_mut();
  let status = if s.is_ascii() {
    sys::napi_create_string_latin1(env, s.as_ptr().cast(), s.len() as isize, &mut v)
  } else {
    sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut v)
  };
  glue::check(status, "create string")?;
  Ok(v)
}

/// ASCII texts at least this long become external strings (V8 reads our buffer in place);
/// shorter ones are copied, which costs less than a finalizer.
const EXTERNAL_MIN: usize = 256 * 1024;

/// `node_api_create_external_string_latin1` (Node >= 20.4; N-API 10), looked up at run time so
/// that the addon still loads, and copies, where it is missing.
type CreateExternalLatin1 = unsafe extern "C" fn(
  sys::napi_env,
  *const std::ffi::c_char,
  isize,
  Option<unsafe extern "C" fn(sys::napi_env, *mut std::ffi::c_void, *mut std::ffi::c_void)>,
  *mut std::ffi::c_void,
  *mut sys::napi_value,
  *mut bool,
) -> sys::napi_status;

fn create_external_latin1() -> Option<CreateExternalLatin1> {
  static FOUND: std::sync::OnceLock<Option<CreateExternalLatin1>> = std::sync::OnceLock::new();
  *FOUND.get_or_init(|| {
    #[cfg(unix)]
    {
      // SAFETY: dlsym with RTLD_DEFAULT searches the loaded objects (node itself); the symbol,
      // when present, has the signature above (js_native_api.h).
      let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"node_api_create_external_string_latin1".as_ptr()) };
      (!found.is_null()).then(|| unsafe { std::mem::transmute::<*mut std::ffi::c_void, CreateExternalLatin1>(found) })
    }
    #[cfg(not(unix))]
    {
      None
    }
  })
}

/// Frees the buffer of an external string: `hint` is the boxed `Vec` that owned it.
unsafe extern "C" fn free_external(_env: sys::napi_env, _data: *mut std::ffi::c_void, hint: *mut std::ffi::c_void) {
  // SAFETY: `hint` came from `Box::into_raw` in `owned_js_string`, and V8 calls this once.
  drop(unsafe { Box::from_raw(hint.cast::<Vec<u8>>()) });
}

/// `text` as a JS string, moved to V8 without a copy when it is long and ASCII. Safety: as
/// [`js_string`].
unsafe fn owned_js_string(env: sys::napi_env, text: String) -> crate::Result<sys::napi_value> {
  if text.len() >= EXTERNAL_MIN && text.is_ascii() {
    if let Some(create) = create_external_latin1() {
      let owner = Box::new(text.into_bytes());
      let (data, len) = (owner.as_ptr(), owner.len());
      let hint = Box::into_raw(owner);
      let mut v = std::ptr::null_mut();
      let mut copied = false;
      // SAFETY: `data` stays valid until `free_external` runs: V8 calls it when the string
      // dies, or before returning when it copied (`copied`, e.g. under a V8 sandbox). On failure
      // it is not called and V8 keeps no reference.
      let status = create(env, data.cast(), len as isize, Some(free_external), hint.cast(), &mut v, &mut copied);
      if status == sys::Status::napi_ok {
        return Ok(v);
      }
      // SAFETY: not created, so the finalizer will not run: the buffer is ours again; copy it.
      let bytes = *Box::from_raw(hint);
      let text = String::from_utf8(bytes).map_err(|_| glue::napi_failed("external string"))?;
      return js_string(env, &text);
    }
  }
  js_string(env, &text)
}

/// A `Redaction` from the results of a background thread (`redactAsync`, `redactBatch`).
unsafe fn redaction_to_js(env: &Env, r: core::Redaction) -> crate::Result<sys::napi_value> {
  let packed =
    pack(r.findings.iter().map(|f| (f.kind.as_str(), f.method.as_str(), f.start, f.end, f.fingerprint.as_bytes())))?;
  let text = owned_js_string(env.raw(), r.text)?;
  findings_to_js(env, text, r.blocked, &packed)
}

/// Units per finding in [`pack`]'s string (`redact_glue.js` reads 21).
const PACKED_UNITS: usize = 5 + core::FINGERPRINT_HEX;
const _: () = assert!(PACKED_UNITS == 21);

/// The findings as one string of UTF-16 units, [`PACKED_UNITS`] each: start and end (two units
/// each, low half first), the index of the kind in `KINDS` | the index of the method in
/// `METHODS` << 8, then the fingerprint's hex digits. One string costs V8 one allocation; a typed
/// array cost an external buffer to track, finalize and sweep, and arrays of names per call more.
fn pack<'f>(findings: impl Iterator<Item = (&'f str, &'f str, usize, usize, &'f [u8])>) -> crate::Result<Vec<u16>> {
  let mut packed = Vec::with_capacity(findings.size_hint().0 * PACKED_UNITS);
  for (kind, method, start, end, fingerprint) in findings {
    let (Some(k), Some(m)) = (kind_index(kind), core::METHODS.iter().position(|x| *x == method)) else {
      return Err(crate::LoaError::Internal(format!("unlisted finding kind {kind} or method {method}")));
    };
    let (start, end) = (start as u32, end as u32);
    packed.extend([start as u16, (start >> 16) as u16, end as u16, (end >> 16) as u16, k as u16 | (m as u16) << 8]);
    packed.extend(fingerprint.iter().map(|&b| b as u16));
  }
  Ok(packed)
}

/// Index of `kind` in `KINDS`.
fn kind_index(kind: &str) -> Option<usize> {
  static INDEX: std::sync::OnceLock<rustc_hash::FxHashMap<&'static str, usize>> = std::sync::OnceLock::new();
  INDEX.get_or_init(|| core::KINDS.iter().enumerate().map(|(i, k)| (*k, i)).collect()).get(kind).copied()
}

thread_local! {
  /// Per environment of this thread: `KINDS` and `METHODS` as JS arrays of strings, made once
  /// (findings cross as indices into them).
  static NAMES: std::cell::RefCell<Vec<(usize, sys::napi_ref, sys::napi_ref)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The two arrays of [`NAMES`] for `env`.
unsafe fn names(env: sys::napi_env) -> crate::Result<(sys::napi_value, sys::napi_value)> {
  let deref = |r: sys::napi_ref| -> crate::Result<sys::napi_value> {
    let mut v = std::ptr::null_mut();
    glue::check(sys::napi_get_reference_value(env, r, &mut v), "names reference")?;
    Ok(v)
  };
  if let Some((_, k, m)) = NAMES.with_borrow(|n| n.iter().find(|e| e.0 == env as usize).copied()) {
    let (k, m) = (deref(k)?, deref(m)?);
    if !k.is_null() && !m.is_null() {
      return Ok((k, m));
    }
  }
  let array = |list: &[&str]| -> crate::Result<sys::napi_ref> {
    let mut array = std::ptr::null_mut();
    glue::check(sys::napi_create_array_with_length(env, list.len(), &mut array), "create array")?;
    for (i, s) in list.iter().enumerate() {
      glue::check(sys::napi_set_element(env, array, i as u32, js_string(env, s)?), "set element")?;
    }
    let mut reference = std::ptr::null_mut();
    glue::check(sys::napi_create_reference(env, array, 1, &mut reference), "names reference")?;
    Ok(reference)
  };
  let (k, m) = (array(core::KINDS)?, array(core::METHODS)?);
  NAMES.with_borrow_mut(|n| {
    n.retain(|e| e.0 != env as usize);
    n.push((env as usize, k, m));
  });
  Ok((deref(k)?, deref(m)?))
}

/// `{ text, findings, blocked }`, built by the glue from the packed findings.
unsafe fn findings_to_js(
  env: &Env,
  text: sys::napi_value,
  blocked: bool,
  packed: &[u16],
) -> crate::Result<sys::napi_value> {
  let raw = env.raw();
  let mut blocked_value = std::ptr::null_mut();
  glue::check(sys::napi_get_boolean(raw, blocked, &mut blocked_value), "create boolean")?;
  let mut data = std::ptr::null_mut();
  glue::check(sys::napi_create_string_utf16(raw, packed.as_ptr(), packed.len() as isize, &mut data), "create string")?;
  let (kinds, methods) = names(raw)?;
  let helpers = glue::load(env, &GLUE)?;
  glue::call(raw, helpers, c"redaction", &[text, blocked_value, data, kinds, methods])
}

/// Buffers of the `redact` calls on this thread, reused: allocating (and page-faulting in) fresh
/// ones per call was a measurable share of the time, for large texts and for short ones alike.
#[derive(Default)]
struct Buffers {
  /// The UTF-8 copy of the input.
  input: Vec<u8>,
  /// The redacted text.
  output: Vec<u8>,
}

thread_local! {
  static BUFFERS: std::cell::RefCell<Buffers> = std::cell::RefCell::new(Buffers::default());
}

/// Finds personal data and secrets in `text` and replaces each with a placeholder: e-mail
/// addresses, phone numbers, payment cards (Luhn), IBANs (mod-97), US SSNs, IP addresses,
/// private keys (which also set `blocked`), JWTs, provider tokens (AWS, GitHub, GitLab, Slack,
/// Stripe, OpenAI, Anthropic, Google, Azure, npm, PyPI, Twilio, SendGrid and about a hundred
/// more), credentials in URLs, `password=` / `token:` / `Bearer` values and random-looking
/// tokens. Git SHAs, UUIDs, versions, dates, timestamps, file paths and placeholders such as
/// AWS's documentation example key (`AKIA…EXAMPLE`) or `xxxx` are left alone.
///
/// Values are found in every spelling: with zero-width or other invisible characters inside,
/// in fullwidth digits and letters, with accents composed or decomposed, in e-mail addresses of
/// any script (`jürgen.müller@gmx.de`, `anna.petrova@почта.рф`). Each placeholder replaces the
/// value as written; everything else in `text` is kept exactly, and `start`/`end` index `text`.
///
/// ```ts
/// const { text, findings, blocked } = redact('mail bob@example.com or call +44 20 7946 0958')
/// // text: 'mail [REDACTED:EMAIL] or call [REDACTED:PHONE]'
/// // findings[0]: { kind: 'email', start: 5, end: 20, method: 'pattern', fingerprint: '9c1d...' }
/// ```
#[napi(ts_args_type = "text: string, options?: RedactOptions", ts_return_type = "Redaction")]
pub fn redact<'a>(env: &'a Env, text: Unknown<'a>, options: Option<Unknown<'a>>) -> napi::Result<RawJs> {
  to_napi(
    env,
    guard(|| {
      if text.get_type().ok() != Some(napi::ValueType::String) {
        return Err(crate::LoaError::InvalidArgument("`text` must be a string".into()));
      }
      // Options first: their getters may call `redact` themselves, which must not find the
      // buffers borrowed.
      let options = parse_options(options)?;
      BUFFERS.with(|cell| {
        let mut buffers = cell.try_borrow_mut().map_err(|_| crate::LoaError::Internal("re-entrant redact".into()))?;
        let Buffers { input, output } = &mut *buffers;
        // SAFETY: called on the JS thread with its env; `text` is a string.
        let input_text = unsafe { strings::read_whole_into(env.raw(), text.raw(), input, "text")? };
        let r = core::redact_into(input_text, &options, output);
        let packed = pack(r.findings.iter().map(|f| (f.kind, f.method, f.start, f.end, &f.fingerprint[..])))?;
        // An ASCII input gives an ASCII output (placeholders are ASCII).
        let ascii = input_text.is_ascii();
        // Nothing replaced: the text is the input, which JavaScript already holds, unless a lone
        // surrogate was read as U+FFFD (the only way the UTF-8 read differs from the string).
        // Creating it again from UTF-8 cost a tenth of a call on non-ASCII text.
        let unchanged = r.findings.is_empty() && (ascii || !input_text.contains('\u{FFFD}'));
        let text_value = if unchanged {
          text.raw()
        } else if output.len() >= EXTERNAL_MIN {
          let owned = String::from_utf8(std::mem::take(output)).map_err(|_| glue::napi_failed("redacted text"))?;
          // SAFETY: called on the JS thread with its env.
          unsafe { owned_js_string(env.raw(), owned)? }
        } else if ascii {
          let mut v = std::ptr::null_mut();
          // SAFETY: called on the JS thread with its env; `output` is ASCII, so Latin-1.
          let status =
            unsafe { sys::napi_create_string_latin1(env.raw(), output.as_ptr().cast(), output.len() as isize, &mut v) };
          glue::check(status, "create string")?;
          v
        } else {
          let s = std::str::from_utf8(output).map_err(|_| glue::napi_failed("redacted text"))?;
          // SAFETY: called on the JS thread with its env.
          unsafe { js_string(env.raw(), s)? }
        };
        for buffer in [input, output] {
          if buffer.capacity() > 64 << 20 {
            // Do not keep a huge buffer around after an exceptional call.
            *buffer = Vec::new();
          }
        }
        // SAFETY: called on the JS thread with its env.
        unsafe { findings_to_js(env, text_value, r.blocked, &packed) }
      })
    }),
  )
  .map(RawJs)
}

/// `redact` on the libuv thread pool, for large texts: the event loop keeps running.
#[napi(ts_args_type = "text: string, options?: RedactOptions", ts_return_type = "Promise<Redaction>")]
pub fn redact_async(env: Env, text: Unknown, options: Option<Unknown>) -> AsyncTask<CoreTask<FastRedaction>> {
  let args = || Ok((arg::<Text>(text, "text")?.0, parse_options(options)?));
  CoreTask::after(&env, args, |(text, options)| Ok(FastRedaction(core::redact(&text, &options))))
}

/// `redact` for many texts with the same options, in one call (saves a crossing of the
/// JS/Rust boundary per text). Results are in input order.
#[napi(ts_args_type = "texts: string[], options?: RedactOptions", ts_return_type = "Redaction[]")]
pub fn redact_batch(env: Env, texts: Unknown, options: Option<Unknown>) -> napi::Result<Vec<FastRedaction>> {
  to_napi(
    &env,
    guard(|| {
      let texts: Vec<String> = arg::<List<Text>>(texts, "texts")?.into();
      let options = parse_options(options)?;
      Ok(core::redact_batch(&texts, &options).into_iter().map(FastRedaction).collect())
    }),
  )
}

/// Every `kind` a finding can have.
#[napi]
pub fn redaction_kinds() -> Vec<&'static str> {
  core::KINDS.to_vec()
}
