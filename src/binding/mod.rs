//! The Node binding: converts JavaScript arguments in, results and errors out. No logic lives
//! here beyond that; napi types live here and nowhere else.
//!
//! One file per part (`wal.rs` mirrors `src/wal/`), holding only the part's JS shapes (each a
//! `#[napi(object)]` struct, converted into the part's types with one `From`/`TryFrom`) and its
//! exports. Shared machinery: [`convert`] (arguments in: napi-rs's conversion, our rules, one
//! coded error), [`json`] (JSON values in and out, depth-limited), [`strings`] (fast string
//! readers), [`glue`] (JavaScript helpers for bulk results, and `capture`'s waits between
//! tries on the event loop: no task sleeps on the thread pool), [`promises`] (`Wal.append`'s
//! batched promises), and here: the panic guard, the one mapping of a crate error to a JS error,
//! and the async task.
//!
//! Every entry point runs inside [`guard`], so a Rust panic becomes an `E_INTERNAL` error
//! instead of aborting the Node process, and every error is thrown (or a promise rejected) as a
//! real JS `Error` with a stable string `code` built by [`js_error`].
//!
//! A promise-returning export is an `AsyncTask` of [`CoreTask`] ([`CoreTask::after`]) with a
//! synchronous twin ([`sync_twin`]) given the same argument conversion and the same job. Its
//! arguments are converted on the JS thread before the task exists; when that fails, the
//! promise rejects with the coded error (nothing is thrown), so a caller has one error path.
//! napi-rs would reject with an `Error` built from its own `Status` (`code: "GenericFailure"`):
//! the coded JS error is built in `Task::reject` on the JS thread and handed to napi-rs as
//! `napi::Error::from(Unknown)`, which it rejects with verbatim.

#![cfg_attr(test, allow(dead_code))] // napi-derive registers exports only outside `cargo test`

mod attention;
mod audit;
mod compaction;
mod config;
mod context;
mod convert;
mod dead_letter;
mod fs;
mod gates;
mod glue;
mod inventory;
mod json;
mod ledger;
mod memory;
mod promises;
mod recovery;
mod redact;
mod search;
mod sign;
mod strings;
mod synth;
mod testing;
mod tokens;
mod wal;

use std::panic::{catch_unwind, AssertUnwindSafe};

use napi::bindgen_prelude::*;
use napi::{Env, JsValue, Unknown, ValueType};
use napi_derive::napi;

use crate::error::{LoaError, ERROR_CODES};

/// Runs `f`, turning a panic into `E_INTERNAL`.
pub(crate) fn guard<T>(f: impl FnOnce() -> crate::Result<T>) -> crate::Result<T> {
  match catch_unwind(AssertUnwindSafe(f)) {
    Ok(result) => result,
    Err(payload) => {
      let detail = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
      Err(LoaError::Internal(format!("a bug in @loa/core was caught (panic: {detail}); please report it")))
    }
  }
}

/// Discards a JavaScript exception left pending by caller code that ran while we read an
/// argument (a getter, a Proxy trap, a glue helper walking the caller's objects), and says
/// whether there was one. Left pending, it would be thrown beside our coded error, or instead of
/// it; its message is caller data, never repeated.
pub(crate) fn clear_pending_exception(env: napi::sys::napi_env) -> bool {
  let mut pending = false;
  // SAFETY: on the JS thread with its env; both calls only look at the env's exception slot.
  unsafe {
    if napi::sys::napi_is_exception_pending(env, &mut pending) != napi::sys::Status::napi_ok || !pending {
      return false;
    }
    let mut exception = std::ptr::null_mut();
    napi::sys::napi_get_and_clear_last_exception(env, &mut exception);
  }
  true
}

/// Builds the JS `Error` for `err`: `message`, stable `code`, and structured fields that help a
/// program react (`osError`, `segment`, `offset`, `key`). Must run on the JS thread. A pending
/// exception is discarded first (see [`clear_pending_exception`]): the coded error is the one
/// thrown.
pub(crate) fn js_error(env: &Env, err: &LoaError) -> napi::Error {
  clear_pending_exception(env.raw());
  match build_js_error(env, err) {
    Ok(object) => napi::Error::from(object.to_unknown()),
    // Creating an object failed (the environment is shutting down): nothing better to give.
    Err(e) => e,
  }
}

pub(crate) fn build_js_error<'env>(env: &'env Env, err: &LoaError) -> napi::Result<Object<'env>> {
  let mut object = env.create_error(napi::Error::new(Status::GenericFailure, err.to_string()))?;
  object.set_named_property("code", err.code())?;
  match err {
    LoaError::Io { .. } => {
      if let Some(name) = err.os_error_name() {
        object.set_named_property("osError", name)?;
      }
    }
    LoaError::WalCorrupt { segment, offset, .. } => {
      object.set_named_property("segment", segment.as_str())?;
      object.set_named_property("offset", *offset as f64)?;
    }
    LoaError::ConfigInvalid { key, .. } => object.set_named_property("key", key.as_str())?,
    LoaError::StateCorrupt { path, .. } => object.set_named_property("path", path.as_str())?,
    LoaError::AuditCorrupt { segment, line, .. } => {
      object.set_named_property("segment", segment.as_str())?;
      object.set_named_property("line", *line as f64)?;
    }
    LoaError::NotRegularFile { path, kind } => {
      object.set_named_property("path", path.as_str())?;
      object.set_named_property("kind", *kind)?;
    }
    _ => {}
  }
  Ok(object)
}

/// Converts a core result for a synchronous entry point.
pub(crate) fn to_napi<T>(env: &Env, result: crate::Result<T>) -> napi::Result<T> {
  result.map_err(|e| js_error(env, &e))
}

/// A synchronous export: `f` inside the panic guard, its error thrown as a coded JS error.
pub(crate) fn sync<T>(env: &Env, f: impl FnOnce() -> crate::Result<T>) -> napi::Result<T> {
  to_napi(env, guard(f))
}

/// The synchronous twin of a promise export ([`CoreTask::after`]): the same arguments and job,
/// run on this thread, the error thrown.
pub(crate) fn sync_twin<A, T>(
  env: &Env,
  args: impl FnOnce() -> crate::Result<A>,
  job: impl FnOnce(A) -> crate::Result<T>,
) -> napi::Result<T> {
  sync(env, || job(args()?))
}

/// A JS value of the current call, passed through as it is: made by a helper script or raw
/// N-API calls and returned (its TypeScript type is the export's `ts_return_type`), or taken
/// from the caller for a helper script to check.
pub struct RawJs(pub napi::sys::napi_value);

convert::type_name!(RawJs, "Object", Object);

impl FromNapiValue for RawJs {
  unsafe fn from_napi_value(_env: napi::sys::napi_env, value: napi::sys::napi_value) -> napi::Result<Self> {
    Ok(RawJs(value))
  }
}

impl ToNapiValue for RawJs {
  unsafe fn to_napi_value(_env: napi::sys::napi_env, val: Self) -> napi::Result<napi::sys::napi_value> {
    Ok(val.0)
  }
}

type Job<T> = Box<dyn FnOnce() -> crate::Result<T> + Send>;

/// Runs a core function on the libuv thread pool; a panic inside becomes `E_INTERNAL`, and a
/// failure rejects with a coded `LoaError` (see the module docs).
pub struct CoreTask<T> {
  job: Option<Job<T>>,
  failure: Option<LoaError>,
}

impl<T> CoreTask<T> {
  pub fn new(job: impl FnOnce() -> crate::Result<T> + Send + 'static) -> Self {
    CoreTask { job: Some(Box::new(job)), failure: None }
  }

  /// The promise of an export: `job(args)` on the thread pool once `args` (converted on the JS
  /// thread, inside the panic guard, before this) were converted, or a rejection with their
  /// error.
  pub fn after<A: Send + 'static>(
    env: &Env,
    args: impl FnOnce() -> crate::Result<A>,
    job: impl FnOnce(A) -> crate::Result<T> + Send + 'static,
  ) -> AsyncTask<Self>
  where
    Self: Task,
  {
    let args = guard(args);
    clear_pending_exception(env.raw());
    AsyncTask::new(match args {
      Ok(args) => CoreTask::new(move || job(args)),
      Err(e) => CoreTask::new(move || Err(e)),
    })
  }
}

impl<T: ToNapiValue + TypeName + Send + 'static> Task for CoreTask<T> {
  type Output = T;
  type JsValue = T;

  fn compute(&mut self) -> napi::Result<T> {
    let job = self.job.take().ok_or_else(|| napi::Error::from_reason("task ran twice"))?;
    guard(job).map_err(|e| {
      let reason = e.to_string();
      self.failure = Some(e);
      napi::Error::from_reason(reason)
    })
  }

  fn resolve(&mut self, _env: Env, output: T) -> napi::Result<T> {
    Ok(output)
  }

  fn reject(&mut self, env: Env, err: napi::Error) -> napi::Result<T> {
    match self.failure.take() {
      Some(failure) => Err(js_error(&env, &failure)),
      None => Err(err),
    }
  }
}

macro_rules! js_error_codes {
  ($($code:ident => $doc:literal,)*) => {
    /// Every `code` an error from `@loa/core` can carry. Stable: codes are added, never renamed.
    #[napi(string_enum)]
    #[allow(non_camel_case_types)]
    pub enum LoaErrorCode {
      $(#[doc = $doc] $code,)*
    }
  };
}
crate::error::error_code_table!(js_error_codes);

/// The list of every error code, at run time (the `LoaErrorCode` type is its compile-time twin).
#[napi(ts_return_type = "LoaErrorCode[]")]
pub fn loa_error_codes() -> Vec<&'static str> {
  ERROR_CODES.to_vec()
}

/// True when `err` is an `Error` thrown by `@loa/core`, narrowing it to `LoaError` so that
/// `err.code` is typed.
///
/// ```ts
/// try { wal.appendSync(rec) } catch (err) {
///   if (isLoaError(err) && err.code === 'E_WAL_LOCKED') retryLater()
///   else throw err
/// }
/// ```
#[napi(ts_args_type = "err: unknown", ts_return_type = "err is LoaError")]
pub fn is_loa_error(env: Env, err: Unknown) -> bool {
  // Never throws: a `code` getter that throws, or a Proxy, is simply not one of ours.
  let answer = (|| -> napi::Result<bool> {
    if err.get_type()? != ValueType::Object || !err.is_error()? {
      return Ok(false);
    }
    // Coercing an object to an object, or a string to a string, is the identity: no caller code.
    let code: Unknown = err.coerce_to_object()?.get_named_property("code")?;
    if code.get_type()? != ValueType::String {
      return Ok(false);
    }
    Ok(ERROR_CODES.contains(&code.coerce_to_string()?.into_utf8()?.as_str()?))
  })();
  clear_pending_exception(env.raw());
  answer.unwrap_or(false)
}
