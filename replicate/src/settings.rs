//! The replication settings of a workspace: the `replication` section of its
//! `.loa.config.yaml` (read by the core's config loader), checked, with the origin resolved.

use std::path::Path;

use loa_core::config::{load_config, Config};
use loa_core::{LoaError, Result};
use sha2::{Digest, Sha256};

/// Where the binary keeps its own state in a workspace (what pull already fetched, the push
/// lock), relative to the workspace.
pub const STATE_DIR: &str = loa_core::wal::shipped::REPLICATE_STATE_DIR;

/// Everything a push, pull or status needs.
#[derive(Debug, Clone)]
pub struct Settings {
  pub bucket: String,
  /// Checked key prefix without leading or trailing `/`; empty for none.
  pub prefix: String,
  pub endpoint: Option<String>,
  pub region: Option<String>,
  pub allow_http: bool,
  /// This machine's namespace.
  pub origin: String,
  /// The cipher of `encryption_key_file`, when set: everything shipped is sealed with it.
  pub sealer: Option<std::sync::Arc<crate::crypt::Sealer>>,
  pub config: Config,
}

fn invalid(key: &str, reason: impl Into<String>) -> LoaError {
  LoaError::ConfigInvalid { key: format!("replication.{key}"), reason: reason.into() }
}

/// A plain name of the bucket: 3-63 of `a-z 0-9 . -` (S3's rule).
fn check_bucket(bucket: &str) -> Result<()> {
  let ok = (3..=63).contains(&bucket.len())
    && bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-');
  if ok {
    Ok(())
  } else {
    Err(invalid("bucket", "must be 3-63 characters of a-z 0-9 . -"))
  }
}

/// A key prefix: `/`-separated components of `A-Z a-z 0-9 . _ -`, none empty, `.` or `..`, at
/// most 256 bytes.
pub fn check_prefix(prefix: &str) -> Result<String> {
  let trimmed = prefix.trim_matches('/');
  if trimmed.is_empty() {
    return Ok(String::new());
  }
  let ok = trimmed.len() <= 256
    && trimmed.split('/').all(|c| {
      !c.is_empty() && c != "." && c != ".." && c.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    });
  if ok {
    Ok(trimmed.to_string())
  } else {
    Err(invalid("prefix", "must be /-separated names of A-Z a-z 0-9 . _ - (no empty, . or .. part), at most 256 bytes"))
  }
}

/// An origin: 1-64 of `a-z 0-9 -`, starting with a letter or digit. Origins are key
/// components and parts of local session ids, so nothing else is allowed.
pub fn valid_origin(origin: &str) -> bool {
  (1..=64).contains(&origin.len())
    && origin.as_bytes()[0].is_ascii_alphanumeric()
    && origin.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The default origin: `m` and 16 hex digits of SHA-256 over the machine id
/// (`/etc/machine-id`, else the host name) and the workspace's absolute path. Stable for one
/// workspace on one machine, different for two workspaces on one machine; a workspace restored
/// at the same path of the same machine gets its old origin back.
pub fn default_origin(workspace: &Path) -> String {
  let machine = std::fs::read_to_string("/etc/machine-id")
    .ok()
    .map(|s| s.trim().to_string())
    .filter(|s| !s.is_empty())
    .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|s| s.trim().to_string()))
    .unwrap_or_default();
  let absolute = std::path::absolute(workspace).unwrap_or_else(|_| workspace.to_path_buf());
  let mut hash = Sha256::new();
  hash.update(b"loa-replicate origin\0");
  hash.update(machine.as_bytes());
  hash.update([0]);
  hash.update(absolute.as_os_str().as_encoded_bytes());
  format!("m{}", &hex::encode(hash.finalize())[..16])
}

impl Settings {
  /// Reads the workspace's configuration; `origin_override` (the `--origin` option) replaces
  /// the configured or derived origin. `E_CONFIG_INVALID` when replication is not configured
  /// (no bucket) or a value is unusable; the encryption key file's errors (see
  /// [`crate::crypt::Sealer::load`]).
  pub fn load(workspace: &Path, origin_override: Option<&str>) -> Result<Settings> {
    let config = load_config(workspace)?.config;
    let r = &config.replication;
    let Some(bucket) = r.bucket.clone() else {
      return Err(invalid("bucket", "is not set: replication is not configured in .loa.config.yaml"));
    };
    check_bucket(&bucket)?;
    let sealer = match &r.encryption_key_file {
      Some(file) => Some(std::sync::Arc::new(crate::crypt::Sealer::load(Path::new(file), workspace)?)),
      None => None,
    };
    let prefix = check_prefix(r.prefix.as_deref().unwrap_or(""))?;
    if let Some(endpoint) = &r.endpoint {
      if !(endpoint.starts_with("https://") || endpoint.starts_with("http://")) {
        return Err(invalid("endpoint", "must be an http:// or https:// URL"));
      }
      if endpoint.starts_with("http://") && !r.allow_http {
        return Err(invalid("endpoint", "is plain http: set replication.allow_http to true to allow it"));
      }
    }
    let origin = match origin_override.map(str::to_string).or_else(|| r.origin.clone()) {
      Some(o) if valid_origin(&o) => o,
      Some(_) => return Err(invalid("origin", "must be 1-64 characters of a-z 0-9 - starting with a letter or digit")),
      None => default_origin(workspace),
    };
    Ok(Settings {
      bucket,
      prefix,
      endpoint: r.endpoint.clone(),
      region: r.region.clone(),
      allow_http: r.allow_http,
      origin,
      sealer,
      config: config.clone(),
    })
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn prefixes_and_origins_are_plain_names() {
    assert_eq!(check_prefix("/a/b/").unwrap(), "a/b");
    assert_eq!(check_prefix("").unwrap(), "");
    for bad in ["a/../b", "a//b", "a/./b", "a b", "ü"] {
      assert!(check_prefix(bad).is_err(), "{bad}");
    }
    assert!(valid_origin("m0123abcd"));
    for bad in ["", "-a", "A", "a.b", "a/b", &"a".repeat(65)] {
      assert!(!valid_origin(bad), "{bad}");
    }
  }

  #[test]
  fn the_default_origin_is_stable_and_differs_by_workspace() {
    let a = default_origin(Path::new("/tmp/ws-a"));
    assert_eq!(a, default_origin(Path::new("/tmp/ws-a")));
    assert_ne!(a, default_origin(Path::new("/tmp/ws-b")));
    assert!(valid_origin(&a));
  }
}
