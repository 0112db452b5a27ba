//! `KeyRing`, `createManifest`, `signManifest`, `verifyManifest` and friends.
//!
//! Manifests are signed data: they cross as JSON values, read strictly by `json`'s walker
//! (unknown members are the core's to refuse, nothing is changed on the way) and written back
//! the same way. Their TypeScript shapes (`Manifest`, `SignedManifest`, ...) are therefore
//! declared in `header.d.ts`, not by a Rust struct.

use std::path::PathBuf;
use std::ptr;
use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::{sys, Env, Unknown, ValueType};
use napi_derive::napi;

use super::convert::{
  self, arg, js_from, member, on, opt_object, path, refuse, type_of, Bool, Each, Func, Given, Int, Json, List, Str,
};
use super::{guard, json, sync, sync_twin, CoreTask, RawJs};
use crate::error::{LoaError, Result};
use crate::sign::keys::{self as core_keys, KeyPolicy};
use crate::sign::manifest::{self as core, ManifestOptions, TrustedKey};

/// Options of `KeyRing.open`. Defaults are those of `signing` in `.loa.config.yaml`.
#[napi(object, object_to_js = false)]
pub struct KeyRingOpenOptions {
  /// The active key is due for rotation this many days after creation; `signManifest`
  /// rotates a due key before signing. Default 90.
  #[napi(ts_type = "number")]
  pub rotation_days: Option<Option<Int>>,
  /// A retired key still verifies this many days after rotation. Default 7.
  #[napi(ts_type = "number")]
  pub overlap_days: Option<Option<Int>>,
  /// Retired keys kept in the registry; older ones are dropped. Default 3.
  #[napi(ts_type = "number")]
  pub max_retired_keys: Option<Option<Int>>,
  /// Read `LOA_SIGNING_KEY` (a hex Ed25519 seed) from the environment. Default true.
  #[napi(ts_type = "boolean")]
  pub use_env: Option<Option<Bool>>,
}

/// How a key ring is opened: its policy, and whether `LOA_SIGNING_KEY` is read.
struct Opening {
  policy: KeyPolicy,
  use_env: bool,
}

impl Default for Opening {
  fn default() -> Opening {
    Opening { policy: KeyPolicy::default(), use_env: true }
  }
}

impl TryFrom<KeyRingOpenOptions> for Opening {
  type Error = LoaError;

  fn try_from(o: KeyRingOpenOptions) -> Result<Opening> {
    let d = KeyPolicy::default();
    let days = |n: Option<Option<Int>>, name: &str, default: u32| -> Result<u32> {
      n.given().map_or(Ok(default), |n: u64| {
        u32::try_from(n).map_err(|_| LoaError::InvalidArgument(format!("`{name}` is too large")))
      })
    };
    Ok(Opening {
      policy: KeyPolicy {
        rotation_days: days(o.rotation_days, "rotationDays", d.rotation_days)?,
        overlap_days: days(o.overlap_days, "overlapDays", d.overlap_days)?,
        max_retired_keys: days(o.max_retired_keys, "maxRetiredKeys", d.max_retired_keys)?,
      },
      use_env: o.use_env.given().unwrap_or(true),
    })
  }
}

/// Public information about a key. Never holds private material.
#[napi(object, object_from_js = false)]
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

/// The name serde gives a unit variant (`KeyStatus::Active` is `active`).
fn name_of<T: serde::Serialize>(value: &T) -> String {
  serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

js_from!(|k: core_keys::KeyInfo| KeyInfo {
  status = name_of(&k.status),
  source = name_of(&k.source),
  key_id,
  public_key,
  created_at,
  expires_at,
  rotation_due,
  retired_at,
  revoked_at,
  revoked_reason,
});

/// A key id argument, checked before it can reach a message (`core_keys::check_key_id`).
fn key_id(value: Unknown) -> Result<String> {
  let id = arg::<Str>(value, "keyId")?.0;
  core_keys::check_key_id(&id)?;
  Ok(id)
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
  inner: Arc<core_keys::KeyRing>,
}

#[napi]
impl KeyRing {
  /// Opens the key ring in `dir` (e.g. `.loa/keys`). Creates nothing until a key is generated,
  /// rotated or revoked. When `LOA_SIGNING_KEY` holds a hex Ed25519 seed, that key signs and its
  /// public key is derived (an invalid value throws `E_KEY_INVALID`, without echoing it).
  #[napi(factory, ts_args_type = "dir: string, options?: KeyRingOpenOptions")]
  pub fn open(env: Env, dir: Unknown, options: Option<Unknown>) -> napi::Result<KeyRing> {
    sync(&env, || {
      let dir = path(dir, "dir")?;
      let o = opt_object::<KeyRingOpenOptions, Opening>(options, "options")?;
      core_keys::KeyRing::open(&dir, o.policy, o.use_env).map(|inner| KeyRing { inner: Arc::new(inner) })
    })
  }

  /// The directory of the ring.
  #[napi(getter)]
  pub fn dir(&self) -> String {
    self.inner.dir().display().to_string()
  }

  /// Creates the first active key. `E_KEY_EXISTS` if there is one already (use `rotate`).
  #[napi]
  pub fn generate(&self, env: Env) -> napi::Result<KeyInfo> {
    sync(&env, || self.inner.generate()).map(Into::into)
  }

  /// Makes a new active key; the previous one is retired and still verifies for `overlapDays`.
  /// Its private key file is deleted: only the active key signs.
  #[napi]
  pub fn rotate(&self, env: Env) -> napi::Result<KeyInfo> {
    sync(&env, || self.inner.rotate()).map(Into::into)
  }

  /// Revokes a key (also the one from `LOA_SIGNING_KEY`): it never signs or verifies again, and
  /// its private key file is deleted. `E_KEY_NOT_FOUND` for an unknown id.
  #[napi(ts_args_type = "keyId: string, reason: string")]
  pub fn revoke(&self, env: Env, key_id: Unknown, reason: Unknown) -> napi::Result<()> {
    sync(&env, || self.inner.revoke(&self::key_id(key_id)?, &arg::<Str>(reason, "reason")?.0))
  }

  /// Every key: `LOA_SIGNING_KEY`'s first, then the ring's, newest first.
  #[napi]
  pub fn list(&self, env: Env) -> napi::Result<Vec<KeyInfo>> {
    sync(&env, || self.inner.list()).map(Each::each)
  }

  /// The keys a verifier should trust now: active, and retired within the overlap; never
  /// revoked or expired ones.
  #[napi]
  pub fn verification_keys(&self, env: Env) -> napi::Result<Vec<KeyInfo>> {
    sync(&env, || self.inner.verification_keys()).map(Each::each)
  }

  /// The hex seed of the active key, e.g. to set `LOA_SIGNING_KEY` in CI. The only way a
  /// private key leaves the library; treat the result as a secret.
  #[napi(ts_args_type = "keyId: string")]
  pub fn export_private_key(&self, env: Env, key_id: Unknown) -> napi::Result<String> {
    sync(&env, || self.inner.export_private_key(&self::key_id(key_id)?).map(|s| s.to_string()))
  }
}

fn redaction_key(dir: &std::path::Path) -> Result<Buffer> {
  core_keys::load_or_create_redaction_key(dir).map(|key| Buffer::from(key.to_vec()))
}

/// The workspace's redaction key, for `redact`'s and `MemoryStoreOptions.redaction`'s `key`:
/// read from `<keysDir>/redaction.key`, or made once of 32 random bytes (mode 0600, in a 0700
/// directory) when missing, so that pseudonyms stay the same across sessions and processes.
/// Pass the workspace's `signing.keysDir` (`.loa/keys` unless configured). A symlink or anything
/// but a regular file there is refused with `E_NOT_REGULAR_FILE` (never followed); an empty
/// file is `E_KEY_INVALID`. Treat the result as a secret.
#[napi(ts_args_type = "keysDir: string", ts_return_type = "Promise<Buffer>")]
pub fn load_redaction_key(env: Env, keys_dir: Unknown) -> AsyncTask<CoreTask<Buffer>> {
  CoreTask::after(&env, || path(keys_dir, "keysDir"), |dir| redaction_key(&dir))
}

/// Synchronous twin of `loadRedactionKey`.
#[napi(ts_args_type = "keysDir: string")]
pub fn load_redaction_key_sync(env: Env, keys_dir: Unknown) -> napi::Result<Buffer> {
  sync_twin(&env, || path(keys_dir, "keysDir"), |dir| redaction_key(&dir))
}

/// A `KeyRing` argument: the ring it wraps ([`convert::instance`]).
pub struct Ring(pub Arc<core_keys::KeyRing>);

impl FromNapiValue for Ring {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    let ring = convert::instance::<KeyRing>(env, value, "must be a KeyRing (from KeyRing.open)")?;
    Ok(Ring(Arc::clone(&ring.inner)))
  }
}

/// The public key of a `KeyInfo`, or `None` for a revoked or expired one (never trusted). Only
/// `status` and `publicKey` are read: a verifier needs nothing else of it.
pub(super) struct PublicKey(pub(super) Option<TrustedKey>);

impl FromNapiValue for PublicKey {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    if type_of(env, value)? != ValueType::Object {
      return Err(refuse("must be a KeyInfo"));
    }
    let status = member::<Str>(env, value, "KeyInfo", c"status")?;
    if matches!(status.as_ref().map(|s| s.0.as_str()), Some("revoked" | "expired")) {
      return Ok(PublicKey(None));
    }
    let Some(Str(hex)) = member::<Str>(env, value, "KeyInfo", c"publicKey")? else {
      return Err(on(refuse("must be a string"), "KeyInfo", "publicKey"));
    };
    let key =
      TrustedKey::from_hex(&hex).map_err(|_| on(refuse("must be 64 hex characters"), "KeyInfo", "publicKey"))?;
    Ok(PublicKey(Some(key)))
  }
}

/// The keys a verifier trusts: `KeyInfo[]` (revoked and expired entries skipped) or a `KeyRing`
/// (its verification keys, read when the verification runs).
pub enum Keys {
  Ring(Arc<core_keys::KeyRing>),
  Listed(Vec<TrustedKey>),
}

impl FromNapiValue for Keys {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    if let Ok(Ring(ring)) = Ring::from_napi_value(env, value) {
      return Ok(Keys::Ring(ring));
    }
    let mut is_array = false;
    if sys::napi_is_array(env, value, &mut is_array) != sys::Status::napi_ok || !is_array {
      return Err(refuse("must be an array of KeyInfo (keyRing.verificationKeys()) or a KeyRing"));
    }
    let listed = List::<PublicKey>::from_napi_value(env, value)?;
    Ok(Keys::Listed(listed.0.into_iter().filter_map(|k| k.0).collect()))
  }
}

impl Keys {
  pub fn trusted(self) -> Result<Vec<TrustedKey>> {
    match self {
      Keys::Ring(ring) => TrustedKey::from_ring(&ring),
      Keys::Listed(keys) => Ok(keys),
    }
  }
}

/// Progress of `createManifest`, reported about every 100 ms while hashing.
#[napi(object, object_from_js = false)]
pub struct ManifestProgress {
  pub files_done: f64,
  pub files_total: f64,
  pub bytes_done: f64,
  pub bytes_total: f64,
}

js_from!(|p: core::Progress| ManifestProgress { files_done: f64, files_total: f64, bytes_done: f64, bytes_total: f64 });

/// Options of `createManifest`.
#[napi(object, object_to_js = false)]
pub struct CreateManifestOptions {
  /// Globs of files to cover, over `/`-separated relative paths: `*` and `?` within a
  /// component, `**` across components; a pattern without `/` matches the file name at any
  /// depth, a leading `./` anchors it at the root. Default `['**']` (everything).
  #[napi(ts_type = "Array<string>")]
  pub include: Option<Option<List<Str>>>,
  /// Globs of files to leave out, e.g. `['./manifest.json', '*.tmp']`. Kept in the manifest
  /// (and signed), so verification reports files they do not exclude as `unexpected`.
  #[napi(ts_type = "Array<string>")]
  pub exclude: Option<Option<List<Str>>>,
  /// Hashing threads. Default: one per core, at most 8.
  #[napi(ts_type = "number")]
  pub threads: Option<Option<Int>>,
  /// Called with progress about every 100 ms while hashing (synchronous `createManifest` only).
  /// An exception thrown by it stops hashing and is rethrown.
  #[napi(ts_type = "(progress: ManifestProgress) => void")]
  pub on_progress: Option<Option<Func>>,
  /// An audit log directory, relative to `rootDir`, whose head (last seq and hash) the manifest
  /// records as `auditHead`, so that `verifyManifest` can tell when entries are later cut off
  /// the end (`truncated`), even together with the log's own checkpoint. Its directory is added
  /// to `exclude` (the log grows; the anchor covers it). The log must verify.
  #[napi(ts_type = "string")]
  pub audit_dir: Option<Option<Str>>,
}

/// The options, and the progress callback (for the synchronous call).
impl From<CreateManifestOptions> for (ManifestOptions, Option<Func>) {
  fn from(o: CreateManifestOptions) -> (ManifestOptions, Option<Func>) {
    let options = ManifestOptions {
      include: o.include.given().unwrap_or_default(),
      exclude: o.exclude.given().unwrap_or_default(),
      threads: o.threads.given().map(|n: u64| n as usize),
      audit_dir: o.audit_dir.given(),
    };
    (options, o.on_progress.flatten())
  }
}

fn manifest_args(root_dir: Unknown, options: Option<Unknown>) -> Result<(PathBuf, ManifestOptions, Option<Func>)> {
  let (options, progress) = opt_object::<CreateManifestOptions, (_, _)>(options, "options")?;
  Ok((path(root_dir, "rootDir")?, options, progress))
}

/// Lists and hashes (SHA-256, streaming, on several threads) every file under `rootDir` that
/// the patterns cover. Symlinks to files inside the root are covered by content; symlinked
/// directories are not followed; a symlink leading outside the root throws
/// `E_PATH_OUTSIDE_ROOT`; a special file (FIFO, socket, device), or a symlink to one, throws
/// `E_NOT_REGULAR_FILE` (exclude it) and is never opened. Temp files of the library's own
/// interrupted atomic writes are left out. Each file is read at most to the size it had when
/// opened. Blocks until done; see `createManifestAsync`.
#[napi(ts_args_type = "rootDir: string, options?: CreateManifestOptions", ts_return_type = "Manifest")]
pub fn create_manifest(env: Env, root_dir: Unknown, options: Option<Unknown>) -> napi::Result<Json> {
  let raw = env.raw();
  let mut thrown: Option<sys::napi_value> = None;
  let result = guard(|| {
    let (root, options, callback) = manifest_args(root_dir, options)?;
    let mut progress = |p: core::Progress| -> Result<()> {
      let Some(Func(function)) = callback else { return Ok(()) };
      // SAFETY: on the JS thread, during this call: `function` is a handle of it, and the
      // progress object is made here.
      unsafe {
        let arg = ManifestProgress::to_napi_value(raw, p.into()).map_err(|e| LoaError::Internal(e.reason))?;
        let mut undefined = ptr::null_mut();
        sys::napi_get_undefined(raw, &mut undefined);
        let mut ignored = ptr::null_mut();
        if sys::napi_call_function(raw, undefined, function, 1, &arg, &mut ignored) != sys::Status::napi_ok {
          // Rethrown as it is, below: the caller's own error.
          let mut exception = ptr::null_mut();
          sys::napi_get_and_clear_last_exception(raw, &mut exception);
          thrown = Some(exception);
          return Err(LoaError::InvalidArgument("onProgress threw".into()));
        }
      }
      Ok(())
    };
    core::create_manifest(&root, &options, &mut progress).map(|m| Json(m.to_value()))
  });
  if let Some(exception) = thrown {
    // SAFETY: the exception was taken from this env in this call.
    return Err(napi::Error::from(unsafe { Unknown::from_raw_unchecked(raw, exception) }));
  }
  super::to_napi(&env, result)
}

/// Same as `createManifest` on the libuv thread pool, without blocking the event loop
/// (`onProgress` is not called).
#[napi(ts_args_type = "rootDir: string, options?: CreateManifestOptions", ts_return_type = "Promise<Manifest>")]
pub fn create_manifest_async(env: Env, root_dir: Unknown, options: Option<Unknown>) -> AsyncTask<CoreTask<Json>> {
  let args = || manifest_args(root_dir, options).map(|(root, options, _)| (root, options));
  CoreTask::after(&env, args, |(root, options)| {
    core::create_manifest(&root, &options, &mut |_| Ok(())).map(|m| Json(m.to_value()))
  })
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
pub fn sign_manifest(env: Env, manifest: Unknown, key_ring: Unknown) -> napi::Result<RawJs> {
  let (members, signature) = sync(&env, || {
    let ring = arg::<Ring>(key_ring, "keyRing")?.0;
    let (value, members) = json::read_with_members(manifest, "manifest")?;
    Ok((members, core::manifest_signature(&value, &ring)?))
  })?;
  json::shallow_object(&env, &members, &[("signature", &signature)])
}

/// The inline `{ threads?: number }` options of `verifyManifest` (a `#[napi(object)]` of its own
/// would add a type to the API).
#[derive(Default)]
struct VerifyOptions {
  /// At least 1.
  threads: Option<usize>,
}

impl FromNapiValue for VerifyOptions {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    let threads = member::<Int>(env, value, "VerifyOptions", c"threads")?;
    Ok(VerifyOptions { threads: threads.map(|n| n.0.max(1) as usize) })
  }
}

struct Verify {
  root: PathBuf,
  signed: serde_json::Value,
  keys: Keys,
  threads: Option<usize>,
}

fn verify_args(root_dir: Unknown, signed: Unknown, keys: Unknown, options: Option<Unknown>) -> Result<Verify> {
  Ok(Verify {
    root: path(root_dir, "rootDir")?,
    signed: arg::<Json>(signed, "signed")?.0,
    keys: arg::<Keys>(keys, "keys")?,
    threads: opt_object::<VerifyOptions, VerifyOptions>(options, "options")?.threads,
  })
}

fn verify(v: Verify) -> Result<ManifestVerification> {
  core::verify_manifest(&v.root, &v.signed, &v.keys.trusted()?, v.threads).map(Into::into)
}

/// One thing wrong found by `verifyManifest`.
#[napi(object, object_from_js = false)]
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
#[napi(object, object_from_js = false)]
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

js_from!(|p: core::Problem| ManifestProblem { kind = name_of(&p.kind), path, detail });

js_from!(|v: core::Verification| ManifestVerification {
  ok,
  problems => each,
  files: f64,
  signed_by,
  temp_files = (!v.temp_files.is_empty()).then_some(v.temp_files),
});

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
  sync_twin(&env, || verify_args(root_dir, signed, keys, options), verify)
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
  CoreTask::after(&env, || verify_args(root_dir, signed, keys, options), verify)
}

/// Checks only the signature of a signed manifest (no file is read), e.g. before restoring
/// from a backup. Same result shape as `verifyManifest`.
#[napi(ts_args_type = "signed: SignedManifest, keys: KeyInfo[] | KeyRing", ts_return_type = "ManifestVerification")]
pub fn verify_manifest_signature(env: Env, signed: Unknown, keys: Unknown) -> napi::Result<ManifestVerification> {
  sync(&env, || {
    let value = arg::<Json>(signed, "signed")?.0;
    let keys = arg::<Keys>(keys, "keys")?.trusted()?;
    Ok(core::verify_signature(&value, &keys).into())
  })
}

/// Reads a manifest file written by `writeManifest`. It must hold exactly the canonical JSON of
/// its content (plus a final newline), so any changed byte is caught: otherwise
/// `E_STATE_CORRUPT` (the file is left untouched). A symlink, FIFO or directory at `path` is
/// `E_NOT_REGULAR_FILE` (never read through); over 256 MiB `E_TOO_LARGE`.
#[napi(ts_args_type = "path: string", ts_return_type = "SignedManifest")]
pub fn read_manifest(env: Env, path: Unknown) -> napi::Result<Json> {
  sync(&env, || core::read_manifest(&convert::path(path, "path")?).map(Json))
}

/// Writes a manifest (signed or not) atomically as its RFC 8785 canonical JSON and a newline.
/// A symlink or other non-regular file at `path` is `E_NOT_REGULAR_FILE`, never written through.
#[napi(ts_args_type = "path: string, manifest: Manifest | SignedManifest")]
pub fn write_manifest(env: Env, path: Unknown, manifest: Unknown) -> napi::Result<()> {
  sync(&env, || {
    let path = convert::path(path, "path")?;
    core::write_manifest(&path, &arg::<Json>(manifest, "manifest")?.0)
  })
}
