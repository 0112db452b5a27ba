//! The bucket, as `object_store` reaches it: bounded reads, atomic writes, and errors that name
//! the operation and the key but never a credential.
//!
//! Every request is retried by `object_store` itself (5xx answers, connection failures,
//! timeouts) with exponential backoff, for at most [`RETRY_TIMEOUT`]. A single put is atomic on
//! S3 (the object appears whole or not at all); a body over [`MULTIPART_THRESHOLD`] goes up as a
//! multipart upload, which is not visible before it is completed and is aborted on failure.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use loa_core::{LoaError, Result};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{
  BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig,
};

use crate::settings::Settings;

/// How long one request is retried before the push or pull gives up with
/// `E_REPLICA_UNAVAILABLE` (a server restarting within this time is waited for).
pub const RETRY_TIMEOUT: Duration = Duration::from_secs(90);
/// Bodies larger than this are uploaded in parts.
pub const MULTIPART_THRESHOLD: usize = 8 * 1024 * 1024;

/// What a conditional put found.
#[derive(Debug, PartialEq, Eq)]
pub enum Created {
  /// The object was written.
  Written,
  /// An object was already there (nothing written).
  Exists,
}

/// The bucket and the key prefix every key is put under.
pub struct Remote {
  store: Arc<dyn ObjectStore>,
  prefix: String,
  /// Values that must never appear in a message (the secret key and session token as the
  /// environment holds them), replaced before any error leaves this module.
  secrets: Vec<String>,
  /// Seals every body written and opens every body read (`replication.encryption_key_file`).
  sealer: Option<Arc<crate::crypt::Sealer>>,
}

impl Remote {
  /// Builds the S3 client from the settings and the environment (`AWS_ACCESS_KEY_ID`,
  /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_ENDPOINT`, `AWS_REGION`, web identity,
  /// instance metadata); `~/.aws` files are never read.
  pub fn open(settings: &Settings) -> Result<Remote> {
    let retry = RetryConfig {
      backoff: BackoffConfig {
        init_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_secs(2),
        base: 2.0,
      },
      max_retries: 30,
      retry_timeout: RETRY_TIMEOUT,
    };
    let client = ClientOptions::new()
      .with_allow_http(settings.allow_http)
      .with_connect_timeout(Duration::from_secs(5))
      .with_timeout(Duration::from_secs(60));
    let mut builder = AmazonS3Builder::from_env()
      .with_bucket_name(&settings.bucket)
      .with_allow_http(settings.allow_http)
      .with_retry(retry)
      .with_client_options(client);
    if let Some(endpoint) = &settings.endpoint {
      builder = builder.with_endpoint(endpoint);
    }
    if let Some(region) = &settings.region {
      builder = builder.with_region(region);
    }
    let secrets: Vec<String> = ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]
      .iter()
      .filter_map(|name| std::env::var(name).ok())
      .filter(|v| v.len() >= 4)
      .collect();
    let store = builder
      .build()
      .map_err(|e| LoaError::ReplicaUnavailable(format!("configure the client: {}", scrub(&secrets, &e))))?;
    Ok(Remote { store: Arc::new(store), prefix: settings.prefix.clone(), secrets, sealer: settings.sealer.clone() })
  }

  /// The full key of `key` (relative to the prefix).
  pub fn full_key(&self, key: &str) -> String {
    if self.prefix.is_empty() {
      key.to_string()
    } else {
      format!("{}/{key}", self.prefix)
    }
  }

  fn path(&self, key: &str) -> ObjectPath {
    ObjectPath::from(self.full_key(key))
  }

  fn unavailable(&self, op: &str, key: &str, e: &dyn std::fmt::Display) -> LoaError {
    LoaError::ReplicaUnavailable(format!("{op} {}: {}", self.full_key(key), scrub(&self.secrets, e)))
  }

  /// The stored form of `bytes` at `key`: sealed when a key is configured.
  fn body(&self, key: &str, bytes: Vec<u8>) -> Result<Vec<u8>> {
    match &self.sealer {
      Some(s) => s.seal(key, &bytes),
      None => Ok(bytes),
    }
  }

  /// The object at `key` (opened when a key is configured), its plaintext never more than
  /// `max` bytes (`E_REPLICA_CORRUPT` beyond, without reading the rest); `None` when there is
  /// none.
  pub async fn get_bounded(&self, key: &str, max: u64) -> Result<Option<Vec<u8>>> {
    let overhead = if self.sealer.is_some() { crate::crypt::OVERHEAD } else { 0 };
    let Some(stored) = self.get_stored(key, max.saturating_add(overhead)).await? else { return Ok(None) };
    match &self.sealer {
      Some(s) => s.open(key, &self.full_key(key), &stored).map(Some),
      None => Ok(Some(stored)),
    }
  }

  async fn get_stored(&self, key: &str, max: u64) -> Result<Option<Vec<u8>>> {
    let result = match self.store.get(&self.path(key)).await {
      Ok(r) => r,
      Err(object_store::Error::NotFound { .. }) => return Ok(None),
      Err(e) => return Err(self.unavailable("GET", key, &e)),
    };
    let too_large = |size: u64| LoaError::ReplicaCorrupt {
      key: self.full_key(key),
      reason: format!("{size} bytes or more, over the limit of {max} bytes"),
    };
    if result.meta.size > max {
      return Err(too_large(result.meta.size));
    }
    let mut stream = result.into_stream();
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
      let chunk = chunk.map_err(|e| self.unavailable("GET", key, &e))?;
      if (out.len() + chunk.len()) as u64 > max {
        return Err(too_large((out.len() + chunk.len()) as u64));
      }
      out.extend_from_slice(&chunk);
    }
    Ok(Some(out))
  }

  /// Writes `bytes` at `key`, replacing what is there. Atomic: readers see the old object or
  /// the whole new one.
  pub async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
    let bytes = self.body(key, bytes)?;
    if bytes.len() > MULTIPART_THRESHOLD {
      return self.put_multipart(key, bytes).await;
    }
    self.store.put(&self.path(key), PutPayload::from(bytes)).await.map_err(|e| self.unavailable("PUT", key, &e))?;
    Ok(())
  }

  async fn put_multipart(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
    let mut upload =
      self.store.put_multipart(&self.path(key)).await.map_err(|e| self.unavailable("start multipart", key, &e))?;
    let mut parts = Vec::new();
    for chunk in bytes.chunks(MULTIPART_THRESHOLD) {
      parts.push(upload.put_part(PutPayload::from(chunk.to_vec())));
    }
    let mut failed = None;
    for part in parts {
      if let Err(e) = part.await {
        failed = Some(e);
        break;
      }
    }
    if failed.is_none() {
      if let Err(e) = upload.complete().await {
        failed = Some(e);
      }
    }
    match failed {
      None => Ok(()),
      Some(e) => {
        // Parts of an unfinished upload are invisible; aborting frees them (best effort: the
        // bucket's lifecycle rule cleans up what an abort cannot reach).
        let _ = upload.abort().await;
        Err(self.unavailable("multipart PUT", key, &e))
      }
    }
  }

  /// Writes `bytes` at `key` only if no object is there (`If-None-Match: *`). A server that
  /// ignores the condition overwrites; callers use this only for content that is the same
  /// whoever writes it, or check what is there afterwards.
  pub async fn put_if_absent(&self, key: &str, bytes: Vec<u8>) -> Result<Created> {
    let options = PutOptions { mode: PutMode::Create, ..Default::default() };
    let bytes = self.body(key, bytes)?;
    match self.store.put_opts(&self.path(key), PutPayload::from(bytes), options).await {
      Ok(_) => Ok(Created::Written),
      Err(object_store::Error::AlreadyExists { .. }) | Err(object_store::Error::Precondition { .. }) => {
        Ok(Created::Exists)
      }
      Err(e) => Err(self.unavailable("PUT (if absent)", key, &e)),
    }
  }

  /// The size of the plaintext of the object at `key` (as stored, less the encryption's
  /// overhead when a key is configured), `None` when there is none.
  pub async fn size(&self, key: &str) -> Result<Option<u64>> {
    let overhead = if self.sealer.is_some() { crate::crypt::OVERHEAD } else { 0 };
    match self.store.head(&self.path(key)).await {
      Ok(meta) => Ok(Some(meta.size.saturating_sub(overhead))),
      Err(object_store::Error::NotFound { .. }) => Ok(None),
      Err(e) => Err(self.unavailable("HEAD", key, &e)),
    }
  }

  /// Deletes `key` (no error when it is already gone).
  pub async fn delete(&self, key: &str) -> Result<()> {
    match self.store.delete(&self.path(key)).await {
      Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
      Err(e) => Err(self.unavailable("DELETE", key, &e)),
    }
  }

  /// Every key below `dir` (relative to the prefix), at most `max`. Untrusted: the caller only
  /// compares them with keys it derived itself.
  pub async fn keys_below(&self, dir: &str, max: usize) -> Result<Vec<String>> {
    let mut stream = self.store.list(Some(&self.path(dir)));
    let strip = if self.prefix.is_empty() { String::new() } else { format!("{}/", self.prefix) };
    let mut out = Vec::new();
    while let Some(meta) = stream.next().await {
      let meta = meta.map_err(|e| self.unavailable("LIST", dir, &e))?;
      if let Some(key) = meta.location.as_ref().strip_prefix(&strip) {
        out.push(key.to_string());
      }
      if out.len() >= max {
        break;
      }
    }
    Ok(out)
  }

  /// The names directly below `dir` that are "directories" (common prefixes), at most
  /// `max`. Untrusted: the caller validates every name.
  pub async fn child_dirs(&self, dir: &str, max: usize) -> Result<Vec<String>> {
    let prefix = self.path(dir);
    let listed = self.store.list_with_delimiter(Some(&prefix)).await.map_err(|e| self.unavailable("LIST", dir, &e))?;
    Ok(listed.common_prefixes.iter().filter_map(|p| p.filename().map(str::to_string)).take(max).collect())
  }
}

/// `e` as one line with every secret replaced.
fn scrub(secrets: &[String], e: &dyn std::fmt::Display) -> String {
  let mut text = e.to_string().replace(['\n', '\r'], " ");
  for secret in secrets {
    text = text.replace(secret.as_str(), "[redacted]");
  }
  text
}
