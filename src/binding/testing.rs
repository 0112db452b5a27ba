//! Hooks for the test suite and the benchmark, kept out of the public API.
//!
//! They are ordinary exports of the addon with no TypeScript declaration (`skip_typescript`),
//! moved at load time off the module object onto one non-enumerable property keyed by
//! `Symbol.for('@loa/core/test-hooks')`: not in `index.d.ts`, not in `Object.keys`, not a named
//! ESM export, and not something a user finds by accident. Tests reach them with
//!
//! ```js
//! const hooks = require('@loa/core')[Symbol.for('@loa/core/test-hooks')]
//! hooks.panic('sync')
//! ```
//!
//! A separate test build of the addon would keep them out of the shipped binary too, at the
//! price of a second multi-minute build for every test run; none of them can do harm (a panic
//! is caught like any other), so the one build serves both.

use std::ptr;

use napi::bindgen_prelude::*;
use napi::{sys, Env, JsValue, Unknown};
use napi_derive::napi;
use serde_json::{json, Value};

use super::convert::{arg, opt_arg, refusal, Int, Str};
use super::strings::{self, Surrogates};
use super::{sync, CoreTask};

/// The property key of the hooks object, as `Symbol.for` takes it.
const HOOKS_KEY: &str = "@loa/core/test-hooks";

/// Exported name -> name on the hooks object.
const HOOKS: &[(&str, &str)] =
  &[("__panicForTesting", "panic"), ("__redactionPatterns", "redactionPatterns"), ("__readStrings", "readStrings")];

/// Moves the hooks off the module object (see the module docs).
#[napi(module_exports)]
pub fn hide_test_hooks(mut exports: Object, env: Env) -> napi::Result<()> {
  let mut hooks = Object::new(&env)?;
  for (exported, name) in HOOKS {
    let hook: Unknown = exports.get_named_property(exported)?;
    hooks.set_named_property(name, hook)?;
    exports.delete_named_property(exported)?;
  }
  // `Symbol` is a function; as an object it is the same value.
  let symbol = env.get_global()?.get_named_property::<Unknown>("Symbol")?.coerce_to_object()?;
  let symbol_for: Function<&str, Unknown> = symbol.get_named_property("for")?;
  let key = symbol_for.apply(symbol, HOOKS_KEY)?;
  // Not enumerable, not writable, not configurable.
  let property =
    Property::new().with_name(&env, key)?.with_value(&hooks).with_property_attributes(PropertyAttributes::Default);
  exports.define_properties(&[property])
}

/// Panics inside the library, synchronously (`'sync'`) or on a worker thread behind a promise
/// (`'async'`), to prove a panic becomes an `E_INTERNAL` error and never aborts Node.
#[napi(js_name = "__panicForTesting", skip_typescript)]
pub fn panic_for_testing(env: Env, mode: Unknown) -> napi::Result<Option<AsyncTask<CoreTask<()>>>> {
  let mode = sync(&env, || arg::<Str>(mode, "mode"))?.0;
  match mode.as_str() {
    "async" => Ok(Some(AsyncTask::new(CoreTask::new(|| panic!("deliberate panic for testing (async)"))))),
    _ => sync(&env, || -> crate::Result<Option<_>> { panic!("deliberate panic for testing (sync)") }),
  }
}

/// Runs one of the binding's string readers over every string of `strings` (one reused buffer
/// per call where the reader reuses one) and returns what it read, hex-encoded:
/// `{ bytes: string[], complete?: boolean[] }`. Modes: `into`, `intoStrict`, `whole`, `string`,
/// `text`, `prefix` (with `maxBytes`), `json` (the JSON reader's strings). For the property
/// tests that compare each reader with `Buffer.from(s, 'utf8')`.
#[napi(js_name = "__readStrings", skip_typescript)]
pub fn read_strings(env: Env, mode: Unknown, strings: Unknown, max_bytes: Option<Unknown>) -> napi::Result<Value> {
  sync(&env, || {
    let mode = arg::<Str>(mode, "mode")?.0;
    let max_bytes = opt_arg::<Int>(max_bytes, "maxBytes")?.map_or(usize::MAX, |n| n.0 as usize);
    if !strings.is_array().unwrap_or(false) {
      return crate::error::invalid("`strings` must be an array of strings");
    }
    let raw = env.raw();
    let mut len = 0u32;
    // SAFETY: on the JS thread with its env; `strings` is an array.
    unsafe { sys::napi_get_array_length(raw, strings.raw(), &mut len) };
    let mut buf = Vec::new();
    let (mut out, mut complete) = (Vec::new(), Vec::new());
    for i in 0..len {
      let what = || format!("strings[{i}]");
      let mut item = ptr::null_mut();
      // SAFETY: as above; `item` is checked to be a string before any reader sees it.
      unsafe {
        if sys::napi_get_element(raw, strings.raw(), i, &mut item) != sys::Status::napi_ok
          || !strings::is_string(raw, item)
        {
          return Err(crate::LoaError::InvalidArgument(format!("`{}` must be a string", what())));
        }
        let named = |r: strings::Refusal| r.named(&what());
        let bytes: Vec<u8> = match mode.as_str() {
          "into" => strings::read_into(raw, item, &mut buf, Surrogates::Replace).map_err(named)?.into(),
          "intoStrict" => strings::read_into(raw, item, &mut buf, Surrogates::Refuse).map_err(named)?.into(),
          "whole" => strings::read_whole_into(raw, item, &mut buf, "strings[]")?.into(),
          "string" => strings::read_string(raw, item, Surrogates::Refuse).map_err(named)?.into(),
          "text" => strings::read_string(raw, item, Surrogates::Replace).map_err(named)?.into(),
          "prefix" => {
            let (text, whole) = strings::read_prefix(raw, item, max_bytes).map_err(named)?;
            complete.push(whole);
            text.into()
          }
          "json" => match super::json::read(raw, item).map_err(|e| refusal(raw, "strings[]", &e))? {
            Value::String(s) => s.into(),
            _ => return Err(crate::LoaError::Internal("the JSON reader changed a string's type".into())),
          },
          _ => return crate::error::invalid("`mode` must be a reader's name"),
        };
        out.push(hex::encode(bytes));
      }
    }
    Ok(if mode == "prefix" { json!({ "bytes": out, "complete": complete }) } else { json!({ "bytes": out }) })
  })
}

/// For the benchmark: the provider token patterns, to run the same list with JavaScript
/// `RegExp`: `{ kind, source, flags }[]`, `flags` being `'g'` or `'gi'`.
#[napi(js_name = "__redactionPatterns", skip_typescript)]
pub fn redaction_patterns() -> Value {
  crate::redact::token_patterns()
    .into_iter()
    .map(|(kind, source, ci)| json!({ "kind": kind, "source": source, "flags": if ci { "gi" } else { "g" } }))
    .collect()
}
