//! `loadConfig` / `parseConfig`: `.loa.config.yaml` as a typed object (`LoadedConfig`, declared
//! in `header.d.ts` with the configuration's other types; a unit test of `config.rs` checks that
//! declaration against the serde output, which crosses through napi-rs's serde support: our own
//! data, nested a few levels deep).

use napi::{Env, Unknown};
use napi_derive::napi;

use super::convert::{arg, path, Str};
use super::sync;
use crate::config::LoadedConfig;
use crate::error::{LoaError, Result};

fn to_js(loaded: LoadedConfig) -> Result<serde_json::Value> {
  serde_json::to_value(&loaded).map_err(|e| LoaError::Internal(e.to_string()))
}

/// Reads `<workspaceDir>/.loa.config.yaml` into a configuration with a value for every key (the
/// file's, or the default). A missing file gives all defaults. Keys the seeds spell two ways
/// (`grounding_enforcement` and `grounding.enforcement`) are both read, the nested one wins, and
/// `warnings` names the other; unknown keys are warnings too. An invalid value throws
/// `E_CONFIG_INVALID` with `key` set to its dotted name.
#[napi(ts_args_type = "workspaceDir: string", ts_return_type = "LoadedConfig")]
pub fn load_config(env: Env, workspace_dir: Unknown) -> napi::Result<serde_json::Value> {
  sync(&env, || to_js(crate::config::load_config(&path(workspace_dir, "workspaceDir")?)?))
}

/// Same as `loadConfig`, from YAML text (for tools that hold the text already).
#[napi(ts_args_type = "yaml: string", ts_return_type = "LoadedConfig")]
pub fn parse_config(env: Env, yaml: Unknown) -> napi::Result<serde_json::Value> {
  sync(&env, || to_js(crate::config::parse_config(&arg::<Str>(yaml, "yaml")?.0)?))
}
