//! `loadConfig` / `parseConfig`: `.loa.config.yaml` as a typed object (`LoadedConfig` in
//! index.d.ts, whose shape a unit test of `config.rs` checks against the serde output).

use std::path::PathBuf;

use napi::{Env, Unknown};
use napi_derive::napi;

use super::{args, guard, to_napi};

fn to_js(env: &Env, loaded: crate::config::LoadedConfig) -> napi::Result<serde_json::Value> {
  to_napi(env, serde_json::to_value(&loaded).map_err(|e| crate::LoaError::Internal(e.to_string())))
}

/// Reads `<workspaceDir>/.loa.config.yaml` into a configuration with a value for every key (the
/// file's, or the default). A missing file gives all defaults. Keys the seeds spell two ways
/// (`grounding_enforcement` and `grounding.enforcement`) are both read, the nested one wins, and
/// `warnings` names the other; unknown keys are warnings too. An invalid value throws
/// `E_CONFIG_INVALID` with `key` set to its dotted name.
#[napi(ts_args_type = "workspaceDir: string", ts_return_type = "LoadedConfig")]
pub fn load_config(env: Env, workspace_dir: Unknown) -> napi::Result<serde_json::Value> {
  let loaded =
    to_napi(&env, guard(|| crate::config::load_config(&PathBuf::from(args::string(workspace_dir, "workspaceDir")?))))?;
  to_js(&env, loaded)
}

/// Same as `loadConfig`, from YAML text (for tools that hold the text already).
#[napi(ts_args_type = "yaml: string", ts_return_type = "LoadedConfig")]
pub fn parse_config(env: Env, yaml: Unknown) -> napi::Result<serde_json::Value> {
  let loaded = to_napi(&env, guard(|| crate::config::parse_config(&args::string(yaml, "yaml")?)))?;
  to_js(&env, loaded)
}
