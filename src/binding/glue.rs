//! Small JavaScript helpers compiled once per JS thread and called from the binding.
//!
//! N-API costs about 100 ns per property read or write; the same work in JavaScript costs a
//! few. Where a call moves thousands of small objects across the boundary (`buildContext`'s
//! candidates, `redact`'s findings), the binding hands JavaScript typed arrays and one flat
//! string, and a helper builds or checks the objects there.
//!
//! Safety: every `unsafe fn` of this module takes raw N-API handles and has one contract: it is
//! called on the JS thread, with the env of the current call and handles of that call's scope.

use std::cell::RefCell;
use std::ffi::CStr;
use std::ptr;

use napi::{sys, Env, JsValue, Unknown};

use crate::error::{LoaError, Result};

/// A helper script: its source evaluates to an object of functions.
pub struct Script {
  pub name: &'static str,
  pub source: &'static str,
}

thread_local! {
  /// Per compiled script: (name, owning env, reference). A JS thread has one environment, and a
  /// worker's dies with its thread.
  static COMPILED: RefCell<Vec<(&'static str, usize, sys::napi_ref)>> = const { RefCell::new(Vec::new()) };
}

pub fn napi_failed(what: &str) -> LoaError {
  LoaError::Internal(format!("N-API call failed: {what}"))
}

pub fn check(status: sys::napi_status, what: &str) -> Result<()> {
  if status == sys::Status::napi_ok {
    Ok(())
  } else {
    Err(napi_failed(what))
  }
}

/// The object of functions `script` evaluates to, compiled on first use in this environment.
pub unsafe fn load(env: &Env, script: &Script) -> Result<sys::napi_value> {
  let raw = env.raw();
  let cached = COMPILED
    .with_borrow(|c| c.iter().find(|(name, owner, _)| *name == script.name && *owner == raw as usize).map(|e| e.2));
  if let Some(reference) = cached {
    let mut value = ptr::null_mut();
    check(sys::napi_get_reference_value(raw, reference, &mut value), "glue reference")?;
    if !value.is_null() {
      return Ok(value);
    }
  }
  let compiled: Unknown =
    env.run_script(script.source).map_err(|e| LoaError::Internal(format!("{} glue: {e}", script.name)))?;
  let mut reference = ptr::null_mut();
  check(sys::napi_create_reference(raw, compiled.raw(), 1, &mut reference), "glue reference")?;
  COMPILED.with_borrow_mut(|c| {
    c.retain(|(name, _, _)| *name != script.name);
    c.push((script.name, raw as usize, reference));
  });
  Ok(compiled.raw())
}

pub unsafe fn get(env: sys::napi_env, object: sys::napi_value, key: &CStr) -> Result<sys::napi_value> {
  let mut value = ptr::null_mut();
  check(sys::napi_get_named_property(env, object, key.as_ptr(), &mut value), "get property")?;
  Ok(value)
}

/// Calls `object[name](...argv)`.
pub unsafe fn call(
  env: sys::napi_env,
  object: sys::napi_value,
  name: &CStr,
  argv: &[sys::napi_value],
) -> Result<sys::napi_value> {
  let f = get(env, object, name)?;
  let mut out = ptr::null_mut();
  check(sys::napi_call_function(env, object, f, argv.len(), argv.as_ptr(), &mut out), "call glue")?;
  Ok(out)
}
