//! `writeFileAtomic` / `writeFileAtomicSync` (`crate::fsutil::write_file_atomic`).

use std::path::PathBuf;

use napi::bindgen_prelude::*;
use napi::{Env, Unknown};
use napi_derive::napi;

use super::convert::{self, arg, opt_object, Bytes, Given, Int};
use super::{sync_twin, CoreTask};
use crate::error::Result;

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

/// The permission mode, if given.
impl TryFrom<WriteFileAtomicOptions> for Option<u32> {
  type Error = crate::LoaError;

  fn try_from(o: WriteFileAtomicOptions) -> Result<Option<u32>> {
    o.mode.given().map(crate::fsutil::file_mode).transpose()
  }
}

fn write_args(path: Unknown, data: Unknown, options: Option<Unknown>) -> Result<Write> {
  Ok(Write {
    path: convert::path(path, "path")?,
    data: arg::<Bytes>(data, "data")?.0,
    mode: opt_object::<WriteFileAtomicOptions, _>(options, "options")?,
  })
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
  sync_twin(&env, || write_args(path, data, options), write)
}
