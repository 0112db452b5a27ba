//! The key ring: Ed25519 signing keys on disk, their rotation, revocation and the set of keys a
//! verifier should trust.
//!
//! On disk (`<dir>`, mode 0700, created on the first `generate`/`rotate`/`revoke`):
//! - `keyring.json`: the registry of public keys and their lifecycle, written atomically;
//! - `<keyId>.key`: the 32-byte seed of the *active* key in hex, mode 0600. A key's private half
//!   is deleted when it is retired or revoked: only the active key ever signs, and retired keys
//!   only need their public half to verify;
//! - `.lock`: `flock`ed around every change, so that two processes rotating at once cannot lose
//!   a key. Under it, temp files of a change that a crash interrupted are removed.
//!
//! The directory itself is the caller's choice (a symlink in its path is followed); the files
//! in it are opened without following symlinks and only as regular files: a symlink, FIFO or
//! directory named like one is `E_NOT_REGULAR_FILE` and is never read, written or locked
//! through. Reads are bounded: `keyring.json` at [`MAX_REGISTRY_BYTES`], a `.key` file at
//! [`MAX_KEY_FILE_BYTES`] (`E_TOO_LARGE` beyond).
//!
//! A key can also come from the environment: `LOA_SIGNING_KEY` holds a 32-byte seed in hex and
//! its public key is derived (the originals required the public key separately, and verification
//! failed on every boot when only the signing key was configured). While it is set it is the
//! signing key, and it verifies unless the registry records it as revoked.
//!
//! Private keys are never logged, never put in an error message and never returned except by the
//! explicit [`KeyRing::export_private_key`]. Seeds in memory are zeroized on drop.

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::error::{LoaError, Result};
use crate::fsutil::{create_dir_durable, sync_dir, OpenMode, StateDir, StateFile};
use crate::lock::lock_file;
use crate::timestamp::{format_ms, now_ms, parse_ms};

/// The environment variable holding a signing seed (64 hex characters).
pub const ENV_SIGNING_KEY: &str = "LOA_SIGNING_KEY";
const REGISTRY: &str = "keyring.json";
const LOCK: &str = ".lock";
const DAY_MS: i64 = 86_400_000;
/// Longest a change waits for another process's change to the same ring.
const LOCK_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest `keyring.json` read (about 4,000 revoked keys with long reasons).
pub const MAX_REGISTRY_BYTES: u64 = 4 * 1024 * 1024;
/// Largest private key file read (64 hex characters and a newline; some slack for whitespace).
pub const MAX_KEY_FILE_BYTES: u64 = 1024;

/// Rotation policy; defaults are those of `signing` in `.loa.config.yaml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyPolicy {
  /// An active key is due for rotation this many days after creation (`signManifest` rotates it).
  pub rotation_days: u32,
  /// A retired key still verifies for this many days after it was retired.
  pub overlap_days: u32,
  /// At most this many retired keys are kept in the registry (the oldest are dropped).
  pub max_retired_keys: u32,
}

impl Default for KeyPolicy {
  fn default() -> Self {
    KeyPolicy { rotation_days: 90, overlap_days: 7, max_retired_keys: 3 }
  }
}

impl KeyPolicy {
  pub fn validate(&self) -> Result<()> {
    if self.rotation_days == 0 {
      return crate::error::invalid("`rotationDays` must be at least 1");
    }
    if self.overlap_days >= self.rotation_days {
      return crate::error::invalid("`overlapDays` must be less than `rotationDays`");
    }
    Ok(())
  }
}

/// Lifecycle state as stored in the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum StoredState {
  Active,
  Retired,
  Revoked,
}

/// One registry entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StoredKey {
  key_id: String,
  public_key: String,
  created_at: String,
  /// Active: when rotation is due. Retired: when it stops verifying.
  expires_at: Option<String>,
  state: StoredState,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  retired_at: Option<String>,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  revoked_at: Option<String>,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  revoked_reason: Option<String>,
  /// True for a key that came from `LOA_SIGNING_KEY` (recorded only to revoke it).
  #[serde(default, skip_serializing_if = "std::ops::Not::not")]
  from_env: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Registry {
  version: u32,
  keys: Vec<StoredKey>,
}

/// A key's status, computed when asked (`expired` depends on the clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyStatus {
  /// The signing key. Verifies, even past `expires_at` (then `rotation_due` is set and the next
  /// `signManifest` rotates it): the newest key never stops verifying just because time passed.
  Active,
  /// Replaced by a newer key; verifies until `expires_at` (the overlap period).
  Retired,
  /// Retired and past its overlap period; no longer verifies.
  Expired,
  /// Revoked: never verifies, never signs.
  Revoked,
}

/// Where a key's private half lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KeySource {
  File,
  Env,
}

/// Public information about a key; never holds private material.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyInfo {
  pub key_id: String,
  /// Ed25519 public key, 64 hex characters.
  pub public_key: String,
  /// RFC 3339 (UTC).
  pub created_at: String,
  /// Active key: when its rotation is due; retired key: when it stops verifying; `None` for a
  /// key from the environment (rotating it is the environment owner's job).
  pub expires_at: Option<String>,
  pub status: KeyStatus,
  pub source: KeySource,
  /// Active and past `expires_at`: the next signature rotates first.
  pub rotation_due: bool,
  pub retired_at: Option<String>,
  pub revoked_at: Option<String>,
  pub revoked_reason: Option<String>,
}

/// An open key ring (a directory that may not exist yet).
pub struct KeyRing {
  dir: PathBuf,
  policy: KeyPolicy,
  /// The seed from `LOA_SIGNING_KEY`, if set when the ring was opened.
  env_key: Option<SigningKey>,
  /// The registry and the active private key as last read, with the file identity they were
  /// read from: signing many manifests does not re-read and re-parse them each time, and any
  /// change by another process (a new mtime, size or inode) is seen.
  cache: std::sync::Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
  registry: Option<(Stamp, Registry)>,
  private: Option<(String, Stamp, SigningKey)>,
}

/// What identifies one version of a file.
type Stamp = (u64, u64, Option<std::time::SystemTime>, std::time::SystemTime);

fn stamp_of(file: &StateFile) -> Result<Stamp> {
  file.file().metadata().map(|m| stamp(&m)).map_err(|e| LoaError::io("stat", file.path(), e))
}

fn stamp(meta: &fs::Metadata) -> Stamp {
  use std::os::unix::fs::MetadataExt;
  (
    meta.ino(),
    meta.len(),
    meta.modified().ok(),
    std::time::UNIX_EPOCH + Duration::new(meta.ctime().max(0) as u64, meta.ctime_nsec().clamp(0, 999_999_999) as u32),
  )
}

impl std::fmt::Debug for KeyRing {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    // Never the seed, only whether there is one.
    f.debug_struct("KeyRing")
      .field("dir", &self.dir)
      .field("policy", &self.policy)
      .field("env_key", &self.env_key.is_some())
      .finish()
  }
}

/// Parses a hex seed (64 hex characters, surrounding whitespace allowed). `what` names its
/// origin in the error, which never contains the text itself.
pub fn parse_seed(text: &str, what: &str) -> Result<SigningKey> {
  let trimmed = text.trim();
  if trimmed.len() != 64 {
    return Err(LoaError::KeyInvalid(format!(
      "{what} must be 64 hex characters (a 32-byte Ed25519 seed), got {} characters",
      trimmed.len()
    )));
  }
  let mut seed = Zeroizing::new([0u8; 32]);
  hex::decode_to_slice(trimmed, seed.as_mut_slice())
    .map_err(|_| LoaError::KeyInvalid(format!("{what} is not hexadecimal")))?;
  Ok(SigningKey::from_bytes(&seed))
}

fn info_of(key: &StoredKey, now: i64) -> KeyInfo {
  let expires = key.expires_at.as_deref().and_then(parse_ms);
  let status = match key.state {
    StoredState::Revoked => KeyStatus::Revoked,
    StoredState::Active => KeyStatus::Active,
    StoredState::Retired if expires.is_some_and(|e| now >= e) => KeyStatus::Expired,
    StoredState::Retired => KeyStatus::Retired,
  };
  KeyInfo {
    key_id: key.key_id.clone(),
    public_key: key.public_key.clone(),
    created_at: key.created_at.clone(),
    expires_at: key.expires_at.clone(),
    status,
    source: if key.from_env { KeySource::Env } else { KeySource::File },
    rotation_due: status == KeyStatus::Active && !key.from_env && expires.is_some_and(|e| now >= e),
    retired_at: key.retired_at.clone(),
    revoked_at: key.revoked_at.clone(),
    revoked_reason: key.revoked_reason.clone(),
  }
}

impl KeyRing {
  /// Opens the ring in `dir` without creating anything. Reads `LOA_SIGNING_KEY` when
  /// `use_env` (an invalid value is `E_KEY_INVALID`).
  pub fn open(dir: &Path, policy: KeyPolicy, use_env: bool) -> Result<KeyRing> {
    policy.validate()?;
    let env_key = match (use_env, std::env::var(ENV_SIGNING_KEY)) {
      (true, Ok(text)) if !text.trim().is_empty() => Some(parse_seed(&Zeroizing::new(text), ENV_SIGNING_KEY)?),
      (true, Err(std::env::VarError::NotUnicode(_))) => {
        return Err(LoaError::KeyInvalid(format!("{ENV_SIGNING_KEY} is not hexadecimal")))
      }
      _ => None,
    };
    Ok(KeyRing { dir: dir.to_path_buf(), policy, env_key, cache: Default::default() })
  }

  /// Opens a ring with an explicit seed instead of the environment (tests, embedding).
  pub fn with_seed(dir: &Path, policy: KeyPolicy, seed: Option<SigningKey>) -> Result<KeyRing> {
    policy.validate()?;
    Ok(KeyRing { dir: dir.to_path_buf(), policy, env_key: seed, cache: Default::default() })
  }

  pub fn dir(&self) -> &Path {
    &self.dir
  }

  pub fn policy(&self) -> KeyPolicy {
    self.policy
  }

  /// The ring's directory, or `None` when it does not exist yet.
  fn open_dir(&self) -> Result<Option<StateDir>> {
    match StateDir::open_root(&self.dir) {
      Ok(dir) => Ok(Some(dir)),
      Err(e) if e.is_not_found() => Ok(None),
      Err(e) => Err(e),
    }
  }

  fn read_registry(&self) -> Result<Registry> {
    match self.open_dir()? {
      Some(dir) => self.read_registry_in(&dir),
      None => Ok(Registry { version: 1, keys: Vec::new() }),
    }
  }

  fn read_registry_in(&self, dir: &StateDir) -> Result<Registry> {
    let Some(file) = dir.open_file_if_exists(REGISTRY, OpenMode::READ)? else {
      return Ok(Registry { version: 1, keys: Vec::new() });
    };
    let current = stamp_of(&file)?;
    let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((seen, registry)) = &cache.registry {
      if &current == seen {
        return Ok(registry.clone());
      }
    }
    let registry = self.parse_registry(&file.read_to_end_bounded(MAX_REGISTRY_BYTES)?, file.path())?;
    cache.registry = Some((current, registry.clone()));
    Ok(registry)
  }

  fn parse_registry(&self, bytes: &[u8], path: &Path) -> Result<Registry> {
    let corrupt = |reason: String| LoaError::StateCorrupt { path: path.display().to_string(), reason };
    let registry: Registry = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    if registry.version != 1 {
      return Err(corrupt(format!("unsupported version {}", registry.version)));
    }
    for key in &registry.keys {
      let public: [u8; 32] = hex::decode(&key.public_key)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| corrupt(format!("key {} has a malformed public key", key.key_id)))?;
      if super::key_id(&public) != key.key_id {
        return Err(corrupt(format!("key id {} does not match its public key", key.key_id)));
      }
      if parse_ms(&key.created_at).is_none() || key.expires_at.as_deref().is_some_and(|e| parse_ms(e).is_none()) {
        return Err(corrupt(format!("key {} has a malformed timestamp", key.key_id)));
      }
    }
    if registry.keys.iter().filter(|k| k.state == StoredState::Active).count() > 1 {
      return Err(corrupt("more than one active key".into()));
    }
    Ok(registry)
  }

  fn env_info(&self, registry: &Registry, now: i64) -> Option<KeyInfo> {
    let key = self.env_key.as_ref()?;
    let public = key.verifying_key().to_bytes();
    let id = super::key_id(&public);
    if let Some(stored) = registry.keys.iter().find(|k| k.key_id == id && k.state == StoredState::Revoked) {
      return Some(KeyInfo { source: KeySource::Env, ..info_of(stored, now) });
    }
    Some(KeyInfo {
      key_id: id,
      public_key: hex::encode(public),
      created_at: format_ms(now),
      expires_at: None,
      status: KeyStatus::Active,
      source: KeySource::Env,
      rotation_due: false,
      retired_at: None,
      revoked_at: None,
      revoked_reason: None,
    })
  }

  /// Every key: the environment's first (if any), then the registry's, newest first.
  pub fn list(&self) -> Result<Vec<KeyInfo>> {
    let registry = self.read_registry()?;
    let now = now_ms();
    let mut out: Vec<KeyInfo> = self.env_info(&registry, now).into_iter().collect();
    let env_id = out.first().map(|k| k.key_id.clone());
    // Newest first; keys made within one millisecond (a rotation right after a generation)
    // keep the registry's order, which is the order they were made in, newest last.
    let mut stored: Vec<(usize, &StoredKey)> =
      registry.keys.iter().enumerate().filter(|(_, k)| Some(&k.key_id) != env_id.as_ref()).collect();
    stored.sort_by_key(|&(position, k)| std::cmp::Reverse((parse_ms(&k.created_at), position)));
    out.extend(stored.into_iter().map(|(_, k)| info_of(k, now)));
    Ok(out)
  }

  /// Keys a verifier should trust now: active and retired within their overlap; never revoked
  /// or expired ones.
  pub fn verification_keys(&self) -> Result<Vec<KeyInfo>> {
    Ok(self.list()?.into_iter().filter(|k| matches!(k.status, KeyStatus::Active | KeyStatus::Retired)).collect())
  }

  /// Creates the ring's first active key. `E_KEY_EXISTS` when it has one (use [`rotate`]).
  ///
  /// [`rotate`]: KeyRing::rotate
  pub fn generate(&self) -> Result<KeyInfo> {
    self.change(|ring, dir, registry, now| {
      if let Some(active) = registry.keys.iter().find(|k| k.state == StoredState::Active) {
        return Err(LoaError::KeyExists(format!(
          "key ring {} already has an active key ({}); rotate it instead",
          ring.dir.display(),
          active.key_id
        )));
      }
      ring.add_active(dir, registry, now)
    })
  }

  /// Makes a new active key; the previous one is retired and verifies for `overlap_days` more.
  /// Works on a ring without an active key too (then it is `generate`).
  pub fn rotate(&self) -> Result<KeyInfo> {
    self.change(|ring, dir, registry, now| {
      let overlap = now + i64::from(ring.policy.overlap_days) * DAY_MS;
      for key in registry.keys.iter_mut().filter(|k| k.state == StoredState::Active) {
        key.state = StoredState::Retired;
        key.retired_at = Some(format_ms(now));
        key.expires_at = Some(format_ms(overlap));
      }
      ring.add_active(dir, registry, now)
    })
  }

  /// Revokes a key (active, retired, or the environment's): it never signs or verifies again.
  /// Revoking the active key leaves the ring without one until `generate`. `key_id` must have
  /// passed [`check_key_id`] (an unknown id is echoed in the error).
  pub fn revoke(&self, key_id: &str, reason: &str) -> Result<()> {
    if reason.trim().is_empty() || reason.len() > 1024 {
      return crate::error::invalid("`reason` must be a non-empty string of at most 1024 bytes");
    }
    self.change(|ring, _, registry, now| {
      let stamp = Some(format_ms(now));
      if let Some(key) = registry.keys.iter_mut().find(|k| k.key_id == key_id) {
        if key.state != StoredState::Revoked {
          key.state = StoredState::Revoked;
          key.revoked_at = stamp;
          key.revoked_reason = Some(reason.to_string());
        }
        return Ok(());
      }
      match &ring.env_key {
        Some(env) if super::key_id(&env.verifying_key().to_bytes()) == key_id => {
          registry.keys.push(StoredKey {
            key_id: key_id.to_string(),
            public_key: hex::encode(env.verifying_key().to_bytes()),
            created_at: format_ms(now),
            expires_at: None,
            state: StoredState::Revoked,
            retired_at: None,
            revoked_at: stamp,
            revoked_reason: Some(reason.to_string()),
            from_env: true,
          });
          Ok(())
        }
        _ => Err(LoaError::KeyNotFound(format!("no key {key_id:?} in {}", ring.dir.display()))),
      }
    })
  }

  /// The key that signs now: `LOA_SIGNING_KEY` if set (refused if revoked), else the ring's
  /// active key, rotated first when `auto_rotate` and its rotation is due. `E_KEY_NOT_FOUND`
  /// when there is none.
  pub fn signing_key(&self, auto_rotate: bool) -> Result<(KeyInfo, SigningKey)> {
    let registry = self.read_registry()?;
    let now = now_ms();
    if let Some(info) = self.env_info(&registry, now) {
      if info.status == KeyStatus::Revoked {
        return Err(LoaError::KeyInvalid(format!("{ENV_SIGNING_KEY} holds key {}, which is revoked", info.key_id)));
      }
      return Ok((info, self.env_key.clone().expect("env_info implies env_key")));
    }
    let active = registry.keys.iter().find(|k| k.state == StoredState::Active).ok_or_else(|| {
      LoaError::KeyNotFound(format!("key ring {} has no active key (generate one)", self.dir.display()))
    })?;
    let info = info_of(active, now);
    if info.rotation_due && auto_rotate {
      self.rotate()?;
      return self.signing_key(false);
    }
    let key = self.read_private(&info)?;
    Ok((info, key))
  }

  /// The hex seed of a key whose private half is on disk (the active key), for moving it into
  /// `LOA_SIGNING_KEY` elsewhere. The only way a private key leaves the library.
  pub fn export_private_key(&self, key_id: &str) -> Result<Zeroizing<String>> {
    let registry = self.read_registry()?;
    let key =
      registry.keys.iter().find(|k| k.key_id == key_id && k.state == StoredState::Active && !k.from_env).ok_or_else(
        || LoaError::KeyNotFound(format!("no active key {key_id:?} with a private key in {}", self.dir.display())),
      )?;
    let signing = self.read_private(&info_of(key, now_ms()))?;
    Ok(Zeroizing::new(hex::encode(signing.to_bytes())))
  }

  fn key_name(key_id: &str) -> String {
    format!("{key_id}.key")
  }

  fn read_private(&self, info: &KeyInfo) -> Result<SigningKey> {
    let missing = || LoaError::KeyNotFound(format!("private key file of {} is missing", info.key_id));
    let dir = self.open_dir()?.ok_or_else(missing)?;
    let file = dir.open_file_if_exists(Self::key_name(&info.key_id), OpenMode::READ)?.ok_or_else(missing)?;
    let path = file.path().to_path_buf();
    let meta = file.file().metadata().map_err(|e| LoaError::io("stat", &path, e))?;
    let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777;
    if mode & 0o077 != 0 {
      return Err(LoaError::KeyInvalid(format!(
        "{} is accessible by others (mode {mode:o}); chmod 600 it",
        path.display()
      )));
    }
    let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((id, seen, key)) = &cache.private {
      if id == &info.key_id && seen == &stamp(&meta) {
        return Ok(key.clone());
      }
    }
    let bytes = Zeroizing::new(file.read_to_end_bounded(MAX_KEY_FILE_BYTES)?);
    let text = std::str::from_utf8(&bytes)
      .map_err(|_| LoaError::KeyInvalid(format!("private key file {} is not hexadecimal", path.display())))?;
    let key = parse_seed(text, &format!("private key file {}", path.display()))?;
    if hex::encode(key.verifying_key().to_bytes()) != info.public_key {
      return Err(LoaError::KeyInvalid(format!(
        "private key file {} does not match the registered public key",
        path.display()
      )));
    }
    cache.private = Some((info.key_id.clone(), stamp(&meta), key.clone()));
    Ok(key)
  }

  fn ensure_dir(&self) -> Result<StateDir> {
    ensure_private_dir(&self.dir)
  }

  /// Runs a change under the ring's lock: read, change, write the registry atomically, then
  /// delete private keys that no longer sign (after the registry that says so is durable).
  fn change<T>(&self, f: impl FnOnce(&KeyRing, &StateDir, &mut Registry, i64) -> Result<T>) -> Result<T> {
    let dir = self.ensure_dir()?;
    let lock = dir.open_file(LOCK, OpenMode::CREATE.with_mode(0o600))?;
    lock_file(lock.file(), LOCK_TIMEOUT, "key ring")?;
    dir.clean_stale_temps()?;
    let mut registry = self.read_registry_in(&dir)?;
    registry.version = 1;
    let now = now_ms();
    let result = f(self, &dir, &mut registry, now)?;
    // Keep at most `max_retired_keys` retired keys (the newest); revoked keys stay listed so
    // that a manifest signed by one is reported as such.
    // Retirements within one millisecond are ordered by registry position (the order of
    // creation), never by the random key id.
    let mut retired: Vec<(i64, usize, String)> = registry
      .keys
      .iter()
      .enumerate()
      .filter(|(_, k)| k.state == StoredState::Retired)
      .map(|(position, k)| (k.retired_at.as_deref().and_then(parse_ms).unwrap_or(0), position, k.key_id.clone()))
      .collect();
    retired.sort_by(|a, b| b.cmp(a));
    let dropped: Vec<String> =
      retired.into_iter().skip(self.policy.max_retired_keys as usize).map(|(_, _, id)| id).collect();
    registry.keys.retain(|k| !dropped.contains(&k.key_id));
    let mut text = serde_json::to_vec_pretty(&registry).map_err(|e| LoaError::Internal(e.to_string()))?;
    text.push(b'\n');
    dir.write_atomic(REGISTRY, &text, Some(0o600))?;
    // Private halves of anything not active (and orphans of an interrupted change) go; a
    // symlink or FIFO named like one is removed itself, never followed.
    let active: Option<String> =
      registry.keys.iter().find(|k| k.state == StoredState::Active).map(|k| Self::key_name(&k.key_id));
    let mut removed = false;
    for entry in dir.entries()? {
      let Some(name) = entry.name_str() else { continue };
      if is_private_key_name(name) && !entry.is_dir() && Some(name) != active.as_deref() {
        removed |= dir.remove_file(&entry.name)?;
      }
    }
    if removed {
      dir.sync()?;
    }
    drop(lock);
    Ok(result)
  }

  /// Creates a key: the private file first (0600, atomic), then the registry names it.
  fn add_active(&self, dir: &StateDir, registry: &mut Registry, now: i64) -> Result<KeyInfo> {
    let mut seed = Zeroizing::new([0u8; 32]);
    getrandom::fill(seed.as_mut_slice()).map_err(|e| LoaError::Internal(format!("no randomness from the OS: {e}")))?;
    let key = SigningKey::from_bytes(&seed);
    let public = key.verifying_key().to_bytes();
    let id = super::key_id(&public);
    let mut text = Zeroizing::new(hex::encode(seed.as_slice()));
    text.push('\n');
    dir.write_atomic(Self::key_name(&id), text.as_bytes(), Some(0o600))?;
    let stored = StoredKey {
      key_id: id,
      public_key: hex::encode(public),
      created_at: format_ms(now),
      expires_at: Some(format_ms(now + i64::from(self.policy.rotation_days) * DAY_MS)),
      state: StoredState::Active,
      retired_at: None,
      revoked_at: None,
      revoked_reason: None,
      from_env: false,
    };
    let info = info_of(&stored, now);
    registry.keys.push(stored);
    Ok(info)
  }
}

/// Creates the keys directory `dir` (mode 0700) when missing and makes sure nobody else can
/// read it; returns it opened.
fn ensure_private_dir(dir: &Path) -> Result<StateDir> {
  if !dir.is_dir() {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
      create_dir_durable(parent)?;
    }
    match fs::DirBuilder::new().mode(0o700).create(dir) {
      Ok(()) => sync_dir(dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")))?,
      Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
      Err(e) => return Err(LoaError::io("create directory", dir, e)),
    }
  }
  let opened = StateDir::open_root(dir)?;
  let mode = rustix::fs::fstat(opened.fd()).map_err(|e| LoaError::io("stat", dir, e.into()))?.st_mode;
  if mode & 0o077 != 0 {
    rustix::fs::fchmod(opened.fd(), rustix::fs::Mode::from_raw_mode(0o700))
      .map_err(|e| LoaError::io("chmod 700", dir, e.into()))?;
  }
  Ok(opened)
}

/// Whether `name` is the private half of a ring key (`<keyId>.key`, 32 hex digits), which a
/// change may delete; anything else in the directory (`redaction.key`) is not the ring's.
fn is_private_key_name(name: &str) -> bool {
  name.strip_suffix(".key").is_some_and(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The file of the workspace's redaction key in its keys directory.
pub const REDACTION_KEY_FILE: &str = "redaction.key";

/// Refuses a string that cannot be a key id (32 lower-case hex characters, derived from the
/// public key) with `E_KEY_NOT_FOUND`, so that it never reaches a message: it may be anything the
/// caller holds, a secret included.
pub fn check_key_id(id: &str) -> Result<()> {
  if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
    return Err(LoaError::KeyNotFound("no key has that id (key ids are 32 lower-case hex characters)".into()));
  }
  Ok(())
}

/// The workspace's redaction key: the key of `redact`'s fingerprints and pseudonyms, so that one
/// value gets the same pseudonym in every session and process. Kept as raw bytes in
/// `<dir>/redaction.key` (mode 0600, `dir` 0700 like the ring, whose changes leave it alone).
/// Made once, of 32 random bytes, when missing: under the ring's lock and written atomically, so
/// that processes starting together all get the one key written. The file is opened without
/// following a symlink and only as a regular file (`E_NOT_REGULAR_FILE` otherwise), read at
/// most [`MAX_KEY_FILE_BYTES`] (`E_TOO_LARGE`); an empty one is `E_KEY_INVALID`.
pub fn load_or_create_redaction_key(dir: &Path) -> Result<Zeroizing<Vec<u8>>> {
  let existing = match StateDir::open_root(dir) {
    Ok(opened) => read_redaction_key(&opened)?,
    Err(e) if e.is_not_found() => None,
    Err(e) => return Err(e),
  };
  if let Some(key) = existing {
    return Ok(key);
  }
  let opened = ensure_private_dir(dir)?;
  let lock = opened.open_file(LOCK, OpenMode::CREATE.with_mode(0o600))?;
  lock_file(lock.file(), LOCK_TIMEOUT, "key ring")?;
  if let Some(key) = read_redaction_key(&opened)? {
    return Ok(key);
  }
  let mut key = Zeroizing::new(vec![0u8; 32]);
  getrandom::fill(&mut key).map_err(|e| LoaError::Internal(format!("no randomness from the OS: {e}")))?;
  opened.write_atomic(REDACTION_KEY_FILE, &key, Some(0o600))?;
  Ok(key)
}

fn read_redaction_key(dir: &StateDir) -> Result<Option<Zeroizing<Vec<u8>>>> {
  let Some(file) = dir.open_file_if_exists(REDACTION_KEY_FILE, OpenMode::READ)? else { return Ok(None) };
  let key = Zeroizing::new(file.read_to_end_bounded(MAX_KEY_FILE_BYTES)?);
  if key.is_empty() {
    return Err(LoaError::KeyInvalid(format!("redaction key file {} is empty", file.path().display())));
  }
  Ok(Some(key))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn only_a_key_id_shaped_string_passes_check_key_id() {
    assert!(check_key_id("0123456789abcdef0123456789abcdef").is_ok());
    for bad in ["", "0123456789ABCDEF0123456789ABCDEF", "0123456789abcdef0123456789abcde", "not a key id"] {
      let err = check_key_id(bad).unwrap_err();
      assert_eq!(err.code(), "E_KEY_NOT_FOUND");
      assert!(bad.is_empty() || !err.to_string().contains(bad), "the id is never echoed");
    }
  }
  use std::os::unix::fs::PermissionsExt;

  fn ring(dir: &Path) -> KeyRing {
    KeyRing::with_seed(dir, KeyPolicy::default(), None).unwrap()
  }

  fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
  }

  #[test]
  fn open_creates_nothing_and_generate_makes_private_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("keys");
    let r = ring(&dir);
    assert!(r.list().unwrap().is_empty());
    assert_eq!(r.signing_key(true).unwrap_err().code(), "E_KEY_NOT_FOUND");
    assert!(!dir.exists(), "open and list create nothing");
    let k = r.generate().unwrap();
    assert_eq!(k.status, KeyStatus::Active);
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join(format!("{}.key", k.key_id))), 0o600);
    assert_eq!(mode(&dir.join(REGISTRY)), 0o600);
    assert_eq!(r.generate().unwrap_err().code(), "E_KEY_EXISTS");
    let (info, key) = r.signing_key(true).unwrap();
    assert_eq!(info.key_id, k.key_id);
    assert_eq!(hex::encode(key.verifying_key().to_bytes()), k.public_key);
    let registry = fs::read_to_string(dir.join(REGISTRY)).unwrap();
    let seed = r.export_private_key(&k.key_id).unwrap();
    assert!(!registry.contains(seed.as_str()), "the registry never holds a private key");
    assert!(!format!("{r:?}").contains(seed.as_str()));
  }

  #[test]
  fn keys_made_within_one_millisecond_keep_their_order() {
    // Rotations in a tight loop often share a millisecond; the listing and the pruning of
    // retired keys must then follow the order the keys were made in, not chance.
    let tmp = tempfile::tempdir().unwrap();
    let r = ring(tmp.path());
    let mut ids = vec![r.generate().unwrap().key_id];
    for _ in 0..3 {
      ids.push(r.rotate().unwrap().key_id);
    }
    let path = tmp.path().join(REGISTRY);
    let mut registry: Registry = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    for key in &mut registry.keys {
      key.created_at = "2026-01-01T00:00:00.000Z".into();
      if key.retired_at.is_some() {
        key.retired_at = Some("2026-01-01T00:00:00.000Z".into());
      }
    }
    fs::write(&path, serde_json::to_vec(&registry).unwrap()).unwrap();
    let listed: Vec<String> = r.list().unwrap().into_iter().map(|k| k.key_id).collect();
    assert_eq!(listed, ids.iter().rev().cloned().collect::<Vec<_>>(), "newest first");
    let next = r.rotate().unwrap().key_id;
    let listed: Vec<String> = r.list().unwrap().into_iter().map(|k| k.key_id).collect();
    assert_eq!(listed, vec![next, ids[3].clone(), ids[2].clone(), ids[1].clone()], "the oldest retired key is pruned");
  }

  #[test]
  fn rotation_retires_prunes_and_deletes_private_halves() {
    let tmp = tempfile::tempdir().unwrap();
    let r = ring(tmp.path());
    let first = r.generate().unwrap();
    let mut ids = vec![first.key_id.clone()];
    for _ in 0..5 {
      ids.push(r.rotate().unwrap().key_id);
    }
    let list = r.list().unwrap();
    assert_eq!(list.len(), 4, "active + 3 retired kept");
    assert_eq!(list[0].key_id, ids[5]);
    assert_eq!(list[0].status, KeyStatus::Active);
    assert!(list[1..].iter().all(|k| k.status == KeyStatus::Retired));
    let key_files: Vec<_> = fs::read_dir(tmp.path())
      .unwrap()
      .filter_map(|e| e.unwrap().file_name().into_string().ok())
      .filter(|n| n.ends_with(".key"))
      .collect();
    assert_eq!(key_files, vec![format!("{}.key", ids[5])]);
    assert_eq!(r.verification_keys().unwrap().len(), 4);
    r.revoke(&ids[4], "laptop stolen").unwrap();
    let v = r.verification_keys().unwrap();
    assert!(v.iter().all(|k| k.key_id != ids[4]));
    assert_eq!(r.list().unwrap().iter().find(|k| k.key_id == ids[4]).unwrap().status, KeyStatus::Revoked);
    assert_eq!(r.revoke("nope", "x").unwrap_err().code(), "E_KEY_NOT_FOUND");
    assert_eq!(r.revoke(&ids[5], " ").unwrap_err().code(), "E_INVALID_ARGUMENT");
    r.revoke(&ids[5], "compromised").unwrap();
    assert_eq!(r.signing_key(true).unwrap_err().code(), "E_KEY_NOT_FOUND");
    r.generate().unwrap();
  }

  #[test]
  fn env_seed_derives_public_key_and_can_be_revoked() {
    let tmp = tempfile::tempdir().unwrap();
    // RFC 8032 TEST 1.
    let seed = parse_seed("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", "test").unwrap();
    let r = KeyRing::with_seed(tmp.path(), KeyPolicy::default(), Some(seed)).unwrap();
    let keys = r.verification_keys().unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].public_key, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
    assert_eq!(keys[0].source, KeySource::Env);
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0, "nothing written");
    let id = keys[0].key_id.clone();
    r.revoke(&id, "leaked in CI logs").unwrap();
    assert!(r.verification_keys().unwrap().is_empty());
    assert_eq!(r.signing_key(true).unwrap_err().code(), "E_KEY_INVALID");
    for bad in ["abc", &"zz".repeat(32)] {
      let err = parse_seed(bad, "LOA_SIGNING_KEY").unwrap_err();
      assert_eq!(err.code(), "E_KEY_INVALID");
      assert!(!err.to_string().contains(bad));
    }
  }

  #[test]
  fn tampered_key_files_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let r = ring(tmp.path());
    let k = r.generate().unwrap();
    let path = tmp.path().join(format!("{}.key", k.key_id));
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(r.signing_key(true).unwrap_err().code(), "E_KEY_INVALID");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    fs::write(&path, format!("{}\n", "11".repeat(32))).unwrap();
    let err = r.signing_key(true).unwrap_err();
    assert_eq!(err.code(), "E_KEY_INVALID");
    assert!(!err.to_string().contains(&"11".repeat(32)));
    fs::write(tmp.path().join(REGISTRY), b"{not json").unwrap();
    assert_eq!(r.list().unwrap_err().code(), "E_STATE_CORRUPT");
  }

  #[test]
  fn due_active_key_rotates_on_signing_and_retired_keys_expire() {
    let tmp = tempfile::tempdir().unwrap();
    let r = ring(tmp.path());
    let k = r.generate().unwrap();
    // Age the registry: created 100 days ago, due 10 days ago.
    let now = now_ms();
    let mut reg = r.read_registry().unwrap();
    reg.keys[0].created_at = format_ms(now - 100 * DAY_MS);
    reg.keys[0].expires_at = Some(format_ms(now - 10 * DAY_MS));
    fs::write(tmp.path().join(REGISTRY), serde_json::to_vec(&reg).unwrap()).unwrap();
    assert!(r.list().unwrap()[0].rotation_due);
    assert_eq!(r.verification_keys().unwrap().len(), 1, "an overdue active key still verifies");
    let (info, _) = r.signing_key(true).unwrap();
    assert_ne!(info.key_id, k.key_id, "rotated before signing");
    let old = r.list().unwrap().into_iter().find(|x| x.key_id == k.key_id).unwrap();
    assert_eq!(old.status, KeyStatus::Retired);
    // Past its overlap it no longer verifies.
    let mut reg = r.read_registry().unwrap();
    let entry = reg.keys.iter_mut().find(|x| x.key_id == k.key_id).unwrap();
    entry.expires_at = Some(format_ms(now - 1));
    fs::write(tmp.path().join(REGISTRY), serde_json::to_vec(&reg).unwrap()).unwrap();
    assert_eq!(r.list().unwrap().iter().find(|x| x.key_id == k.key_id).unwrap().status, KeyStatus::Expired);
    assert_eq!(r.verification_keys().unwrap().len(), 1);
  }
  #[test]
  fn symlinks_and_fifos_in_the_key_directory_are_refused_and_nothing_outside_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("keys");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    // A lock that leads outside: never created or opened through.
    fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(outside.join("lock"), dir.join(LOCK)).unwrap();
    let r = ring(&dir);
    assert_eq!(r.generate().unwrap_err().code(), "E_NOT_REGULAR_FILE");
    assert!(!outside.join("lock").exists(), "nothing created outside");
    fs::remove_file(dir.join(LOCK)).unwrap();
    // A registry that leads outside: never read.
    let other = ring(&outside);
    let k = other.generate().unwrap();
    std::os::unix::fs::symlink(outside.join(REGISTRY), dir.join(REGISTRY)).unwrap();
    assert_eq!(r.list().unwrap_err().code(), "E_NOT_REGULAR_FILE");
    assert_eq!(r.generate().unwrap_err().code(), "E_NOT_REGULAR_FILE");
    fs::remove_file(dir.join(REGISTRY)).unwrap();
    // A private key file that leads outside: never read, never deleted through.
    let mine = r.generate().unwrap();
    fs::remove_file(dir.join(format!("{}.key", mine.key_id))).unwrap();
    std::os::unix::fs::symlink(outside.join(format!("{}.key", k.key_id)), dir.join(format!("{}.key", mine.key_id)))
      .unwrap();
    assert_eq!(r.signing_key(false).unwrap_err().code(), "E_NOT_REGULAR_FILE");
    fs::remove_file(dir.join(format!("{}.key", mine.key_id))).unwrap();
    let fifo = dir.join(format!("{}.key", mine.key_id));
    rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o600), 0)
      .unwrap();
    assert_eq!(r.signing_key(false).unwrap_err().code(), "E_NOT_REGULAR_FILE");
    assert!(other.signing_key(false).is_ok(), "the outside ring is intact");
  }

  #[test]
  fn the_redaction_key_is_made_once_private_and_survives_ring_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("keys");
    let key = load_or_create_redaction_key(&dir).unwrap();
    assert_eq!(key.len(), 32);
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join(REDACTION_KEY_FILE)), 0o600);
    assert_eq!(load_or_create_redaction_key(&dir).unwrap(), key, "read back, not made again");
    // Ring changes delete private halves that no longer sign; the redaction key is not one.
    // Other parts keep their keys there too (the memory store's `tombstone.key`).
    fs::write(dir.join("tombstone.key"), b"another part's key").unwrap();
    let r = ring(&dir);
    r.generate().unwrap();
    r.rotate().unwrap();
    assert_eq!(fs::read(dir.join(REDACTION_KEY_FILE)).unwrap(), *key);
    assert_eq!(fs::read(dir.join("tombstone.key")).unwrap(), b"another part's key");
    // A key written by an earlier version (any length of raw bytes) is used as it is.
    fs::write(dir.join(REDACTION_KEY_FILE), b"an older key").unwrap();
    assert_eq!(*load_or_create_redaction_key(&dir).unwrap(), b"an older key");
  }

  #[test]
  fn processes_starting_together_get_one_redaction_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("keys");
    let keys: Vec<_> = std::thread::scope(|s| {
      let workers: Vec<_> = (0..8).map(|_| s.spawn(|| load_or_create_redaction_key(&dir).unwrap())).collect();
      workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert!(keys.iter().all(|k| *k == keys[0]));
    assert_eq!(fs::read(dir.join(REDACTION_KEY_FILE)).unwrap(), *keys[0]);
  }

  #[test]
  fn a_redaction_key_that_is_not_a_regular_file_is_refused_and_nothing_outside_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("keys");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::create_dir_all(&dir).unwrap();
    fs::write(outside.join("secret"), b"not a key").unwrap();
    let link = dir.join(REDACTION_KEY_FILE);
    std::os::unix::fs::symlink(outside.join("secret"), &link).unwrap();
    assert_eq!(load_or_create_redaction_key(&dir).unwrap_err().code(), "E_NOT_REGULAR_FILE");
    fs::remove_file(&link).unwrap();
    // A dangling link is not a missing key: nothing is created through it.
    std::os::unix::fs::symlink(outside.join("new"), &link).unwrap();
    assert_eq!(load_or_create_redaction_key(&dir).unwrap_err().code(), "E_NOT_REGULAR_FILE");
    assert!(!outside.join("new").exists());
    assert_eq!(fs::read(outside.join("secret")).unwrap(), b"not a key");
    fs::remove_file(&link).unwrap();
    fs::create_dir(&link).unwrap();
    assert_eq!(load_or_create_redaction_key(&dir).unwrap_err().code(), "E_NOT_REGULAR_FILE");
    fs::remove_dir(&link).unwrap();
    fs::write(&link, b"").unwrap();
    assert_eq!(load_or_create_redaction_key(&dir).unwrap_err().code(), "E_KEY_INVALID");
    fs::write(&link, vec![7u8; MAX_KEY_FILE_BYTES as usize + 1]).unwrap();
    assert_eq!(load_or_create_redaction_key(&dir).unwrap_err().code(), "E_TOO_LARGE");
  }

  #[test]
  fn stale_temps_are_cleaned_on_the_next_change() {
    let tmp = tempfile::tempdir().unwrap();
    let r = ring(tmp.path());
    r.generate().unwrap();
    for name in [".keyring.json.loa-tmp-2147483646-0", ".abcd.key.tmp-2147483646-1"] {
      fs::write(tmp.path().join(name), b"half").unwrap();
    }
    r.rotate().unwrap();
    let names: Vec<String> =
      fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert!(names.iter().all(|n| !n.contains("tmp-")), "{names:?}");
  }

  #[test]
  fn injected_faults_on_key_and_registry_writes_lose_nothing() {
    use crate::fsutil::faults::{inject, Op};
    let tmp = tempfile::tempdir().unwrap();
    let r = ring(tmp.path());
    let first = r.generate().unwrap();
    let registry_before = fs::read(tmp.path().join(REGISTRY)).unwrap();
    // Every write of a rotation fails in turn: the new key file (skip 0), the registry (skip 1);
    // each fsync and rename too.
    for (op, skip) in [(Op::Write, 0), (Op::Write, 1), (Op::Sync, 0), (Op::Sync, 1), (Op::Rename, 0), (Op::Rename, 1)] {
      for errno in [libc::EIO, libc::ENOSPC] {
        {
          let _guard = inject(tmp.path(), op, errno, skip, 1);
          let err = r.rotate().unwrap_err();
          assert_eq!(err.code(), "E_IO", "{op:?} {skip}");
        }
        assert_eq!(fs::read(tmp.path().join(REGISTRY)).unwrap(), registry_before, "{op:?} {skip}: registry unchanged");
        let (info, _) = r.signing_key(false).unwrap();
        assert_eq!(info.key_id, first.key_id, "{op:?} {skip}: the acknowledged key still signs");
        let names: Vec<String> =
          fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        assert!(names.iter().all(|n| !n.contains(".loa-tmp-")), "{op:?} {skip}: no temp file visible: {names:?}");
      }
    }
    // The next change works and clears any orphan private key of the interrupted ones.
    let second = r.rotate().unwrap();
    let keys: Vec<String> = fs::read_dir(tmp.path())
      .unwrap()
      .map(|e| e.unwrap().file_name().into_string().unwrap())
      .filter(|n| n.ends_with(".key"))
      .collect();
    assert_eq!(keys, vec![format!("{}.key", second.key_id)]);
    assert_eq!(r.list().unwrap().len(), 2);
  }
}
