//! `writeFileAtomic` / `writeFileAtomicSync`, and the generic async task used by every
//! promise-returning function that runs on the libuv thread pool.
//!
//! A function that returns a promise never throws: its arguments are read and checked on the
//! JS thread before the task exists, and when that fails the promise rejects with the coded
//! error (as every other failure does), with any exception a getter or Proxy left pending
//! discarded. So a caller has one error path (`.catch`/`await`), and there is never a thrown
//! error beside a rejected promise.

use std::path::PathBuf;

use napi::bindgen_prelude::*;
use napi::{Env, Unknown};
use napi_derive::napi;

use super::{args, guard, js_error, to_napi};
use crate::error::LoaError;

type Job<T> = Box<dyn FnOnce() -> crate::Result<T> + Send>;

/// Runs a core function on the libuv thread pool; a panic inside becomes `E_INTERNAL`, and a
/// failure rejects with a coded `LoaError` (see the module docs of `binding`).
pub struct CoreTask<T> {
  job: Option<Job<T>>,
  failure: Option<LoaError>,
}

impl<T> CoreTask<T> {
  pub fn new(job: impl FnOnce() -> crate::Result<T> + Send + 'static) -> Self {
    CoreTask { job: Some(Box::new(job)), failure: None }
  }

  /// The promise of an export: `job(args)` on the thread pool once `args` (read on the JS thread
  /// before this) were read, or a rejection with their error.
  pub fn after<A: Send + 'static>(
    env: &Env,
    args: crate::Result<A>,
    job: impl FnOnce(A) -> crate::Result<T> + Send + 'static,
  ) -> AsyncTask<Self>
  where
    Self: Task,
  {
    super::clear_pending_exception(env.raw());
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

/// Options of `writeFileAtomic`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field in `args`
pub struct WriteFileAtomicOptions {
  /// Permission bits of the new file, e.g. `0o600` for secrets. Default `0o644` (before umask).
  pub mode: Option<u32>,
}

fn parse_write_args(
  path: Unknown,
  data: Unknown,
  options: Option<Unknown>,
) -> crate::Result<(PathBuf, Vec<u8>, Option<u32>)> {
  let path = PathBuf::from(args::string(path, "path")?);
  let data = args::bytes(data, "data")?;
  let mode = match args::optional_object(options, "options")? {
    Some(o) => args::optional_u64(&o, "mode")?,
    None => None,
  };
  if mode.is_some_and(|m| m > 0o7777) {
    return crate::error::invalid("`mode` must be a permission mode such as 0o600");
  }
  Ok((path, data, mode.map(|m| m as u32)))
}

/// Replaces the file at `path` with `data` so that, even after a crash or power loss, it holds
/// either the old content or the new, never a mixture: writes a temporary file in the same
/// directory, fsyncs it, renames it over `path` and fsyncs the directory. The directory must
/// exist. Resolves once the new content is durable.
#[napi(ts_args_type = "path: string, data: Buffer | Uint8Array | string, options?: WriteFileAtomicOptions")]
pub fn write_file_atomic(
  env: Env,
  path: Unknown,
  data: Unknown,
  options: Option<Unknown>,
) -> napi::Result<AsyncTask<CoreTask<()>>> {
  Ok(CoreTask::after(&env, guard(|| parse_write_args(path, data, options)), |(path, data, mode)| {
    crate::fsutil::write_file_atomic(&path, &data, mode)
  }))
}

/// Synchronous twin of `writeFileAtomic`: blocks until the new content is durable.
#[napi(ts_args_type = "path: string, data: Buffer | Uint8Array | string, options?: WriteFileAtomicOptions")]
pub fn write_file_atomic_sync(env: Env, path: Unknown, data: Unknown, options: Option<Unknown>) -> napi::Result<()> {
  to_napi(
    &env,
    guard(|| {
      let (path, data, mode) = parse_write_args(path, data, options)?;
      crate::fsutil::write_file_atomic(&path, &data, mode)
    }),
  )
}
