//! `writeFileAtomic` / `writeFileAtomicSync` (`crate::fsutil::write_file_atomic`).

use std::path::PathBuf;

use napi::bindgen_prelude::*;
use napi::{Env, Unknown};
use napi_derive::napi;

use super::convert::{arg, opt_arg, Bytes, Int, Obj, Str};
use super::{sync, CoreTask};
use crate::error::{invalid, Result};

/// Options of `writeFileAtomic`.
#[napi(object, object_to_js = false)]
pub struct WriteFileAtomicOptions {
  /// Permission bits of the new file, e.g. `0o600` for secrets. Default `0o644` (before umask).
  #[napi(ts_type = "number")]
  pub mode: Option<Option<Int>>,
}

struct Write {
  path: PathBuf,
  data: Vec<u8>,
  mode: Option<u32>,
}

fn write_args(path: Unknown, data: Unknown, options: Option<Unknown>) -> Result<Write> {
  let path = PathBuf::from(arg::<Str>(path, "path")?.0);
  let data = arg::<Bytes>(data, "data")?.0;
  let options = opt_arg::<Obj<WriteFileAtomicOptions>>(options, "options")?;
  let mode = match options.and_then(|o| o.0.mode.flatten()) {
    Some(Int(mode)) if mode > 0o7777 => return invalid("`mode` must be a permission mode such as 0o600"),
    mode => mode.map(|m| m.0 as u32),
  };
  Ok(Write { path, data, mode })
}

fn write(w: Write) -> Result<()> {
  crate::fsutil::write_file_atomic(&w.path, &w.data, w.mode)
}

/// Replaces the file at `path` with `data` so that, even after a crash or power loss, it holds
/// either the old content or the new, never a mixture: writes a temporary file in the same
/// directory, fsyncs it, renames it over `path` and fsyncs the directory. The directory must
/// exist. Resolves once the new content is durable.
#[napi(
  ts_args_type = "path: string, data: Buffer | Uint8Array | string, options?: WriteFileAtomicOptions",
  ts_return_type = "Promise<unknown>"
)]
pub fn write_file_atomic(env: Env, path: Unknown, data: Unknown, options: Option<Unknown>) -> AsyncTask<CoreTask<()>> {
  CoreTask::after(&env, || write_args(path, data, options), write)
}

/// Synchronous twin of `writeFileAtomic`: blocks until the new content is durable.
#[napi(ts_args_type = "path: string, data: Buffer | Uint8Array | string, options?: WriteFileAtomicOptions")]
pub fn write_file_atomic_sync(env: Env, path: Unknown, data: Unknown, options: Option<Unknown>) -> napi::Result<()> {
  sync(&env, || write(write_args(path, data, options)?))
}
