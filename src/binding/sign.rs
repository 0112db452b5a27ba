//! `KeyRing`, `createManifest`, `signManifest`, `verifyManifest` and friends.

use std::path::PathBuf;
use std::ptr;

use napi::bindgen_prelude::*;
use napi::{sys, Env, JsValue, Unknown, ValueType};
use napi_derive::napi;
use serde_json::Value;

use super::fs::CoreTask;
use super::{args, guard, json, to_napi};
use crate::error::{LoaError, Result};
use crate::sign::keys::{self as core_keys, KeyPolicy};
use crate::sign::manifest::{self as core, ManifestOptions, TrustedKey};

/// A JSON value handed to JS as plain objects and arrays (see `json::to_js`).
pub struct JsonOut(pub Value);

impl TypeName for JsonOut {
  fn type_name() -> &'static str {
    "Object"
  }
  fn value_type() -> ValueType {
    ValueType::Object
  }
}

impl ToNapiValue for JsonOut {
  unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
    let env = Env::from_raw(env);
    Ok(json::to_js(&env, &val.0)?.raw())
  }
}

/// Options of `KeyRing.open`. Defaults are those of `signing` in `.loa.config.yaml`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field in `args`
pub struct KeyRingOpenOptions {
  /// The active key is due for rotation this many days after creation; `signManifest`
  /// rotates a due key before signing. Default 90.
  pub rotation_days: Option<u32>,
  /// A retired key still verifies this many days after rotation. Default 7.
  pub overlap_days: Option<u32>,
  /// Retired keys kept in the registry; older ones are dropped. Default 3.
  pub max_retired_keys: Option<u32>,
  /// Read `LOA_SIGNING_KEY` (a hex Ed25519 seed) from the environment. Default true.
  pub use_env: Option<bool>,
}

/// Public information about a key. Never holds private material.
#[napi(object)]
pub struct KeyInfo {
  /// First 16 bytes of SHA-256 of the public key, hex. Derived from the key, never chosen.
  pub key_id: String,
  /// Ed25519 public key, 64 hex characters.
  pub public_key: String,
  /// RFC 3339 (UTC).
  pub created_at: String,
  /// Active key: when rotation is due; retired key: when it stops verifying. Absent for a key
  /// from `LOA_SIGNING_KEY`.
  pub expires_at: Option<String>,
  /// `active` signs and verifies (even past `expiresAt`, see `rotationDue`); `retired`
  /// verifies until `expiresAt`; `expired` and `revoked` never verify.
  #[napi(ts_type = "'active' | 'retired' | 'expired' | 'revoked'")]
  pub status: String,
  /// `file` (in the key ring directory) or `env` (`LOA_SIGNING_KEY`).
  #[napi(ts_type = "'file' | 'env'")]
  pub source: String,
  /// Active and past `expiresAt`: the next `signManifest` rotates first.
  pub rotation_due: bool,
  pub retired_at: Option<String>,
  pub revoked_at: Option<String>,
  pub revoked_reason: Option<String>,
}

fn enum_str<T: serde::Serialize>(value: &T) -> String {
  serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

fn key_to_js(k: core_keys::KeyInfo) -> KeyInfo {
  KeyInfo {
    status: enum_str(&k.status),
    source: enum_str(&k.source),
    key_id: k.key_id,
    public_key: k.public_key,
    created_at: k.created_at,
    expires_at: k.expires_at,
    rotation_due: k.rotation_due,
    retired_at: k.retired_at,
    revoked_at: k.revoked_at,
    revoked_reason: k.revoked_reason,
  }
}

/// Ed25519 signing keys in a directory (mode 0700): the active key's seed in `<keyId>.key`
/// (mode 0600), public keys and their lifecycle in `keyring.json` (written atomically, changes
/// `flock`ed). Private keys never reach JavaScript except through `exportPrivateKey`.
///
/// ```ts
/// const ring = KeyRing.open('.loa/keys')
/// if (ring.list().length === 0) ring.generate()
/// const signed = signManifest(createManifest('grimoires/loa'), ring)
/// ```
#[napi]
pub struct KeyRing {
  pub(crate) inner: core_keys::KeyRing,
}

fn parse_policy(options: Option<Unknown>) -> Result<(KeyPolicy, bool)> {
  let mut policy = KeyPolicy::default();
  let mut use_env = true;
  if let Some(o) = args::optional_object(options, "options")? {
    let small = |key: &str| -> Result<Option<u32>> {
      args::optional_u64(&o, key)?
        .map(|n| u32::try_from(n).map_err(|_| LoaError::InvalidArgument(format!("`{key}` is too large"))))
        .transpose()
    };
    if let Some(n) = small("rotationDays")? {
      policy.rotation_days = n;
    }
    if let Some(n) = small("overlapDays")? {
      policy.overlap_days = n;
    }
    if let Some(n) = small("maxRetiredKeys")? {
      policy.max_retired_keys = n;
    }
    if let Some(b) = args::optional_bool(&o, "useEnv")? {
      use_env = b;
    }
  }
  Ok((policy, use_env))
}

/// A key id argument. Ids are 32 lower-case hex characters (derived from the public key); any
/// other string names no key, and is answered `E_KEY_NOT_FOUND` here so that it never reaches a
/// message (it may be anything the caller holds, a secret included).
fn key_id_arg(value: Unknown) -> Result<String> {
  let id = args::string(value, "keyId")?;
  if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
    return Err(LoaError::KeyNotFound("no key has that id (key ids are 32 lower-case hex characters)".into()));
  }
  Ok(id)
}

#[napi]
impl KeyRing {
  /// Opens the key ring in `dir` (e.g. `.loa/keys`). Creates nothing until a key is generated,
  /// rotated or revoked. When `LOA_SIGNING_KEY` holds a hex Ed25519 seed, that key signs and its
  /// public key is derived (an invalid value throws `E_KEY_INVALID`, without echoing it).
  #[napi(factory, ts_args_type = "dir: string, options?: KeyRingOpenOptions")]
  pub fn open(env: Env, dir: Unknown, options: Option<Unknown>) -> napi::Result<KeyRing> {
    let inner = to_napi(
      &env,
      guard(|| {
        let dir = PathBuf::from(args::string(dir, "dir")?);
        let (policy, use_env) = parse_policy(options)?;
        core_keys::KeyRing::open(&dir, policy, use_env)
      }),
    )?;
    Ok(KeyRing { inner })
  }

  /// The directory of the ring.
  #[napi(getter)]
  pub fn dir(&self) -> String {
    self.inner.dir().display().to_string()
  }

  /// Creates the first active key. `E_KEY_EXISTS` if there is one already (use `rotate`).
  #[napi]
  pub fn generate(&self, env: Env) -> napi::Result<KeyInfo> {
    to_napi(&env, guard(|| self.inner.generate())).map(key_to_js)
  }

  /// Makes a new active key; the previous one is retired and still verifies for `overlapDays`.
  /// Its private key file is deleted: only the active key signs.
  #[napi]
  pub fn rotate(&self, env: Env) -> napi::Result<KeyInfo> {
    to_napi(&env, guard(|| self.inner.rotate())).map(key_to_js)
  }

  /// Revokes a key (also the one from `LOA_SIGNING_KEY`): it never signs or verifies again, and
  /// its private key file is deleted. `E_KEY_NOT_FOUND` for an unknown id.
  #[napi(ts_args_type = "keyId: string, reason: string")]
  pub fn revoke(&self, env: Env, key_id: Unknown, reason: Unknown) -> napi::Result<()> {
    to_napi(&env, guard(|| self.inner.revoke(&key_id_arg(key_id)?, &args::string(reason, "reason")?)))
  }

  /// Every key: `LOA_SIGNING_KEY`'s first, then the ring's, newest first.
  #[napi]
  pub fn list(&self, env: Env) -> napi::Result<Vec<KeyInfo>> {
    to_napi(&env, guard(|| self.inner.list())).map(|v| v.into_iter().map(key_to_js).collect())
  }

  /// The keys a verifier should trust now: active, and retired within the overlap; never
  /// revoked or expired ones.
  #[napi]
  pub fn verification_keys(&self, env: Env) -> napi::Result<Vec<KeyInfo>> {
    to_napi(&env, guard(|| self.inner.verification_keys())).map(|v| v.into_iter().map(key_to_js).collect())
  }

  /// The hex seed of the active key, e.g. to set `LOA_SIGNING_KEY` in CI. The only way a
  /// private key leaves the library; treat the result as a secret.
  #[napi(ts_args_type = "keyId: string")]
  pub fn export_private_key(&self, env: Env, key_id: Unknown) -> napi::Result<String> {
    to_napi(&env, guard(|| self.inner.export_private_key(&key_id_arg(key_id)?).map(|s| s.to_string())))
  }
}

/// Progress of `createManifest`, reported about every 100 ms while hashing.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; values cross as plain JSON
pub struct ManifestProgress {
  pub files_done: f64,
  pub files_total: f64,
  pub bytes_done: f64,
  pub bytes_total: f64,
}

/// Options of `createManifest`.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; read field by field in `args`
pub struct CreateManifestOptions {
  /// Globs of files to cover, over `/`-separated relative paths: `*` and `?` within a
  /// component, `**` across components; a pattern without `/` matches the file name at any
  /// depth, a leading `./` anchors it at the root. Default `['**']` (everything).
  pub include: Option<Vec<String>>,
  /// Globs of files to leave out, e.g. `['./manifest.json', '*.tmp']`. Kept in the manifest
  /// (and signed), so verification reports files they do not exclude as `unexpected`.
  pub exclude: Option<Vec<String>>,
  /// Hashing threads. Default: one per core, at most 8.
  pub threads: Option<u32>,
  /// Called with progress about every 100 ms while hashing (synchronous `createManifest` only).
  /// An exception thrown by it stops hashing and is rethrown.
  #[napi(ts_type = "(progress: ManifestProgress) => void")]
  pub on_progress: Option<serde_json::Value>,
  /// An audit log directory, relative to `rootDir`, whose head (last seq and hash) the manifest
  /// records as `auditHead`, so that `verifyManifest` can tell when entries are later cut off
  /// the end (`truncated`), even together with the log's own checkpoint. Its directory is added
  /// to `exclude` (the log grows; the anchor covers it). The log must verify.
  pub audit_dir: Option<String>,
}

/// The head of an audit log that a manifest anchors (covered by its signature).
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; values cross as plain JSON
pub struct ManifestAuditHead {
  /// The log's directory, relative to the manifest's root.
  pub dir: String,
  pub seq: f64,
  /// The hash of the entry at `seq`.
  pub hash: String,
}

/// One covered file.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; values cross as plain JSON
pub struct ManifestFile {
  /// Relative, `/`-separated, without `.` or `..` components.
  pub path: String,
  pub size: f64,
  /// SHA-256 of the content, 64 lower-case hex characters.
  pub sha256: String,
}

/// A manifest of every covered file of a directory (unsigned).
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; values cross as plain JSON
pub struct Manifest {
  #[napi(ts_type = "1")]
  pub version: u32,
  /// RFC 3339 (UTC).
  pub created_at: String,
  pub include: Vec<String>,
  pub exclude: Vec<String>,
  /// Sorted by path.
  pub files: Vec<ManifestFile>,
  /// With `auditDir`: the audit log's head when the manifest was made.
  pub audit_head: Option<ManifestAuditHead>,
}

/// Ed25519 over `"loa-core/manifest/v1\0"` + the RFC 8785 bytes of the manifest without its
/// `signature` member.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; values cross as plain JSON
pub struct ManifestSignature {
  #[napi(ts_type = "'ed25519'")]
  pub algorithm: String,
  pub key_id: String,
  /// 64 bytes, 128 lower-case hex characters.
  pub value: String,
}

/// A manifest with its signature; every other member is covered by it. No other member is
/// accepted anywhere (top level, file entries, `signature`): signing throws
/// `E_INVALID_ARGUMENT`, verifying reports a `signature` problem.
#[napi(object)]
#[allow(dead_code)] // declares the TypeScript shape; values cross as plain JSON
pub struct SignedManifest {
  #[napi(ts_type = "1")]
  pub version: u32,
  pub created_at: String,
  pub include: Vec<String>,
  pub exclude: Vec<String>,
  pub files: Vec<ManifestFile>,
  pub audit_head: Option<ManifestAuditHead>,
  pub signature: ManifestSignature,
}

/// One thing wrong found by `verifyManifest`.
#[napi(object)]
pub struct ManifestProblem {
  /// The relative path concerned; `''` for problems of the manifest as a whole.
  pub path: String,
  /// `missing`: listed, not on disk; `modified`: size or sha256 differ, or no longer a regular
  /// file (for `auditHead.dir`: the entry at the anchored seq is another one); `unexpected`: on
  /// disk, covered, not listed, or a FIFO, socket or device (or a symlink to one) where files are
  /// covered; `signature`: unsigned, bad signature, key not trusted, malformed manifest or an
  /// unknown member; `path`: absolute, `..`, or resolving outside the root through a symlink;
  /// `truncated`: the audit log ends before the manifest's `auditHead` (`E_AUDIT_TRUNCATED`).
  #[napi(ts_type = "'missing' | 'modified' | 'unexpected' | 'signature' | 'path' | 'truncated'")]
  pub kind: String,
  /// Why, for humans.
  pub detail: String,
}

/// What `verifyManifest` / `verifyManifestSignature` found.
#[napi(object)]
pub struct ManifestVerification {
  /// True when there is no problem at all.
  pub ok: bool,
  pub problems: Vec<ManifestProblem>,
  /// Entries in the manifest.
  pub files: f64,
  /// Key id of the verified signature.
  pub signed_by: Option<String>,
  /// Temp files of the library's own atomic writes that a crash left under the root (relative
  /// paths), present only when there are some. Neither covered nor a problem: the rename that
  /// would have made one a real file never happened, and the next writer of that directory
  /// removes it.
  pub temp_files: Option<Vec<String>>,
}

fn verification_to_js(v: core::Verification) -> ManifestVerification {
  ManifestVerification {
    ok: v.ok,
    problems: v
      .problems
      .into_iter()
      .map(|p| ManifestProblem { kind: enum_str(&p.kind), path: p.path, detail: p.detail })
      .collect(),
    files: v.files as f64,
    signed_by: v.signed_by,
    temp_files: (!v.temp_files.is_empty()).then_some(v.temp_files),
  }
}

fn string_array(object: &Object, key: &str) -> Result<Vec<String>> {
  Ok(args::optional_string_array(object, key)?.unwrap_or_default())
}

fn parse_manifest_options(options: Option<Unknown>) -> Result<(ManifestOptions, Option<sys::napi_value>)> {
  let mut parsed = ManifestOptions::default();
  let mut callback = None;
  if let Some(o) = args::optional_object(options, "options")? {
    parsed.include = string_array(&o, "include")?;
    parsed.exclude = string_array(&o, "exclude")?;
    parsed.threads = args::optional_u64(&o, "threads")?.map(|n| n as usize);
    parsed.audit_dir = args::optional_string(&o, "auditDir")?;
    if parsed.threads == Some(0) {
      return crate::error::invalid("`threads` must be at least 1");
    }
    match args::field(&o, "onProgress")? {
      None => {}
      Some(progress) if progress.get_type().ok() == Some(ValueType::Function) => callback = Some(progress.raw()),
      Some(_) => return crate::error::invalid("`onProgress` must be a function"),
    }
  }
  Ok((parsed, callback))
}

/// Lists and hashes (SHA-256, streaming, on several threads) every file under `rootDir` that
/// the patterns cover. Symlinks to files inside the root are covered by content; symlinked
/// directories are not followed; a symlink leading outside the root throws
/// `E_PATH_OUTSIDE_ROOT`; a special file (FIFO, socket, device), or a symlink to one, throws
/// `E_NOT_REGULAR_FILE` (exclude it) and is never opened. Temp files of the library's own
/// interrupted atomic writes are left out. Each file is read at most to the size it had when
/// opened. Blocks until done; see `createManifestAsync`.
#[napi(ts_args_type = "rootDir: string, options?: CreateManifestOptions", ts_return_type = "Manifest")]
pub fn create_manifest(env: Env, root_dir: Unknown, options: Option<Unknown>) -> napi::Result<JsonOut> {
  let mut thrown: Option<sys::napi_value> = None;
  let result = guard(|| {
    let root = PathBuf::from(args::string(root_dir, "rootDir")?);
    let (options, callback) = parse_manifest_options(options)?;
    let mut progress = |p: core::Progress| -> Result<()> {
      let Some(function) = callback else { return Ok(()) };
      let arg = json::to_js(&env, &serde_json::to_value(p).expect("progress is JSON"))
        .map_err(|e| LoaError::Internal(e.to_string()))?
        .raw();
      unsafe {
        let mut undefined = ptr::null_mut();
        sys::napi_get_undefined(env.raw(), &mut undefined);
        let mut ignored = ptr::null_mut();
        if sys::napi_call_function(env.raw(), undefined, function, 1, &arg, &mut ignored) != sys::Status::napi_ok {
          let mut exception = ptr::null_mut();
          sys::napi_get_and_clear_last_exception(env.raw(), &mut exception);
          thrown = Some(exception);
          return Err(LoaError::InvalidArgument("onProgress threw".into()));
        }
      }
      Ok(())
    };
    core::create_manifest(&root, &options, &mut progress).map(|m| m.to_value())
  });
  if let Some(exception) = thrown {
    return Err(napi::Error::from(unsafe { Unknown::from_raw_unchecked(env.raw(), exception) }));
  }
  to_napi(&env, result).map(JsonOut)
}

/// Same as `createManifest` on the libuv thread pool, without blocking the event loop
/// (`onProgress` is not called).
#[napi(ts_args_type = "rootDir: string, options?: CreateManifestOptions", ts_return_type = "Promise<Manifest>")]
pub fn create_manifest_async(env: Env, root_dir: Unknown, options: Option<Unknown>) -> AsyncTask<CoreTask<JsonOut>> {
  let args = guard(|| Ok((PathBuf::from(args::string(root_dir, "rootDir")?), parse_manifest_options(options)?.0)));
  CoreTask::after(&env, args, |(root, options)| {
    core::create_manifest(&root, &options, &mut |_| Ok(())).map(|m| JsonOut(m.to_value()))
  })
}

pub(crate) fn ring_arg<'a>(env: &'a Env, value: &Unknown<'a>, name: &str) -> Result<ClassInstance<'a, KeyRing>> {
  let not_ring = || LoaError::InvalidArgument(format!("`{name}` must be a KeyRing (from KeyRing.open)"));
  if value.get_type().ok() != Some(ValueType::Object) {
    return Err(not_ring());
  }
  // Unwraps and checks the class recorded when the object was created (an object of another
  // class, or one with a spoofed prototype, is refused before any cast).
  unsafe { ClassInstance::<KeyRing>::from_napi_value(env.raw(), value.raw()) }.map_err(|_| not_ring())
}

/// Signs a manifest with the key ring's signing key (`LOA_SIGNING_KEY`, else the ring's active
/// key, rotated first when its rotation is due). Ed25519 over `"loa-core/manifest/v1\0"` + the
/// RFC 8785 bytes of the whole manifest minus any previous `signature`, so every member and every
/// file entry is covered. Refuses malformed manifests (`E_INVALID_ARGUMENT`) and entries that
/// escape the root (`E_PATH_OUTSIDE_ROOT`); `E_KEY_NOT_FOUND` without a signing key.
///
/// Returns `{ ...manifest, signature }`: a new object whose other members are the manifest's
/// own values (nested arrays are shared, as with a spread); changing them afterwards makes the
/// signature fail to verify.
#[napi(ts_args_type = "manifest: Manifest | SignedManifest, keyRing: KeyRing", ts_return_type = "SignedManifest")]
pub fn sign_manifest(env: Env, manifest: Unknown, key_ring: Unknown) -> napi::Result<json::RawJs> {
  let (members, signature) = to_napi(
    &env,
    guard(|| {
      let ring = ring_arg(&env, &key_ring, "keyRing")?;
      let (value, members) = json::from_js_with_members(&env, manifest, "manifest")?;
      Ok((members, core::manifest_signature(&value, &ring.inner)?))
    }),
  )?;
  json::shallow_object(&env, &members, &[("signature", &signature)])
}

/// Trusted keys from `KeyInfo[]` (revoked and expired entries are skipped) or a `KeyRing`.
pub(crate) fn trusted_keys(env: &Env, value: Unknown) -> Result<Vec<TrustedKey>> {
  if let Ok(ring) = ring_arg(env, &value, "keys") {
    return TrustedKey::from_ring(&ring.inner);
  }
  if value.get_type().ok() != Some(ValueType::Object) || !value.is_array().unwrap_or(false) {
    return crate::error::invalid("`keys` must be an array of KeyInfo (keyRing.verificationKeys()) or a KeyRing");
  }
  let array = unsafe { Array::from_napi_value(env.raw(), value.raw()) }
    .map_err(|_| LoaError::InvalidArgument("`keys` must be an array".into()))?;
  let mut out = Vec::new();
  for i in 0..array.len() {
    let name = format!("keys[{i}]");
    let item: Unknown = match array.get(i) {
      Ok(Some(item)) => item,
      Ok(None) => return Err(args::wrong(&name, "a KeyInfo")),
      Err(_) => return Err(args::unreadable(env.raw(), &name)),
    };
    let key = args::optional_object(Some(item), &name)?.ok_or_else(|| args::wrong(&name, "a KeyInfo"))?;
    if matches!(args::optional_string(&key, "status")?.as_deref(), Some("revoked" | "expired")) {
      continue;
    }
    let public =
      args::optional_string(&key, "publicKey")?.ok_or_else(|| args::wrong(&format!("{name}.publicKey"), "a string"))?;
    out.push(TrustedKey::from_hex(&public)?);
  }
  Ok(out)
}

/// Verifies a signed manifest against `keys` and the files under `rootDir`: the signature
/// (made by one of `keys`, which may be `keyRing.verificationKeys()` or the `KeyRing` itself),
/// then every listed file (size and sha256), then files on disk that the manifest's patterns
/// cover but that it does not list. Never throws for damage: every problem is listed, `ok` is
/// true only when there is none. Never writes.
#[napi(
  ts_args_type = "rootDir: string, signed: SignedManifest, keys: KeyInfo[] | KeyRing, options?: { threads?: number }",
  ts_return_type = "ManifestVerification"
)]
pub fn verify_manifest(
  env: Env,
  root_dir: Unknown,
  signed: Unknown,
  keys: Unknown,
  options: Option<Unknown>,
) -> napi::Result<ManifestVerification> {
  to_napi(
    &env,
    guard(|| {
      let root = PathBuf::from(args::string(root_dir, "rootDir")?);
      let value = json::from_js(&env, signed, "signed")?;
      let keys = trusted_keys(&env, keys)?;
      let threads = match args::optional_object(options, "options")? {
        Some(o) => args::optional_u64(&o, "threads")?.map(|n| n.max(1) as usize),
        None => None,
      };
      core::verify_manifest(&root, &value, &keys, threads)
    }),
  )
  .map(verification_to_js)
}

/// Same as `verifyManifest` on the libuv thread pool.
#[napi(
  ts_args_type = "rootDir: string, signed: SignedManifest, keys: KeyInfo[] | KeyRing, options?: { threads?: number }",
  ts_return_type = "Promise<ManifestVerification>"
)]
pub fn verify_manifest_async(
  env: Env,
  root_dir: Unknown,
  signed: Unknown,
  keys: Unknown,
  options: Option<Unknown>,
) -> AsyncTask<CoreTask<ManifestVerification>> {
  let parsed = guard(|| {
    let threads = match args::optional_object(options, "options")? {
      Some(o) => args::optional_u64(&o, "threads")?.map(|n| n.max(1) as usize),
      None => None,
    };
    Ok((
      PathBuf::from(args::string(root_dir, "rootDir")?),
      json::from_js(&env, signed, "signed")?,
      trusted_keys(&env, keys)?,
      threads,
    ))
  });
  CoreTask::after(&env, parsed, |(root, value, keys, threads)| {
    core::verify_manifest(&root, &value, &keys, threads).map(verification_to_js)
  })
}

/// Checks only the signature of a signed manifest (no file is read), e.g. before restoring
/// from a backup. Same result shape as `verifyManifest`.
#[napi(ts_args_type = "signed: SignedManifest, keys: KeyInfo[] | KeyRing", ts_return_type = "ManifestVerification")]
pub fn verify_manifest_signature(env: Env, signed: Unknown, keys: Unknown) -> napi::Result<ManifestVerification> {
  to_napi(
    &env,
    guard(|| {
      let value = json::from_js(&env, signed, "signed")?;
      let keys = trusted_keys(&env, keys)?;
      Ok(core::verify_signature(&value, &keys))
    }),
  )
  .map(verification_to_js)
}

/// Reads a manifest file written by `writeManifest`. It must hold exactly the canonical JSON of
/// its content (plus a final newline), so any changed byte is caught: otherwise
/// `E_STATE_CORRUPT` (the file is left untouched). A symlink, FIFO or directory at `path` is
/// `E_NOT_REGULAR_FILE` (never read through); over 256 MiB `E_TOO_LARGE`.
#[napi(ts_args_type = "path: string", ts_return_type = "SignedManifest")]
pub fn read_manifest(env: Env, path: Unknown) -> napi::Result<JsonOut> {
  to_napi(&env, guard(|| core::read_manifest(&PathBuf::from(args::string(path, "path")?)))).map(JsonOut)
}

/// Writes a manifest (signed or not) atomically as its RFC 8785 canonical JSON and a newline.
/// A symlink or other non-regular file at `path` is `E_NOT_REGULAR_FILE`, never written through.
#[napi(ts_args_type = "path: string, manifest: Manifest | SignedManifest")]
pub fn write_manifest(env: Env, path: Unknown, manifest: Unknown) -> napi::Result<()> {
  to_napi(
    &env,
    guard(|| {
      let path = PathBuf::from(args::string(path, "path")?);
      let value = json::from_js(&env, manifest, "manifest")?;
      core::write_manifest(&path, &value)
    }),
  )
}
