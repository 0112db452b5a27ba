//! Manifests: every file of a state directory (relative path, size, sha256), signed with Ed25519
//! over the canonical JSON of the whole manifest.
//!
//! The originals signed `JSON.stringify(manifest, sortedTopLevelKeys)`, which dropped the file
//! list from what was signed: any file could be changed and the manifest still verified. Here
//! the signature covers `MANIFEST_DOMAIN || JCS(manifest without "signature")`: every entry,
//! every field, and the include/exclude patterns, which verification re-applies to find files
//! that should not be there.
//!
//! ```json
//! { "version": 1, "createdAt": "2026-11-22T08:15:00.123Z", "include": ["**"], "exclude": [],
//!   "files": [{ "path": "NOTES.md", "size": 812, "sha256": "…" }],
//!   "signature": { "algorithm": "ed25519", "keyId": "…", "value": "…128 hex…" } }
//! ```
//!
//! Paths are `/`-separated, relative, without `.`/`..` components; a path that is absolute,
//! climbs out with `..` or resolves outside the root through a symlink is refused on creation
//! (`E_PATH_OUTSIDE_ROOT`) and reported (kind `path`) on verification. Symlinks to files inside
//! the root are covered by their content; symlinked directories are not followed (their files
//! are covered under their real path), which also rules out cycles.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::glob;
use super::keys::{KeyRing, KeyStatus};
use super::{key_id, sign_with_domain, verify_with_domain, MANIFEST_DOMAIN};
use crate::error::{scrub_quoted, LoaError, Result};
use crate::fsutil::write_file_atomic;
use crate::jcs;

/// The manifest format version this code writes and reads.
pub const VERSION: u32 = 1;
/// Size of each read while hashing.
const CHUNK: usize = 256 * 1024;
/// A manifest file larger than this is refused (1,000,000 entries is about 150 MB).
const MAX_MANIFEST_BYTES: u64 = 256 * 1024 * 1024;

/// One covered file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
  pub path: String,
  pub size: u64,
  pub sha256: String,
}

/// An unsigned manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
  pub version: u32,
  pub created_at: String,
  pub include: Vec<String>,
  pub exclude: Vec<String>,
  pub files: Vec<FileEntry>,
}

/// Options of [`create_manifest`] and [`verify_manifest`].
#[derive(Debug, Clone, Default)]
pub struct ManifestOptions {
  /// Globs of files to cover (see [`glob`]); empty means `["**"]`, everything.
  pub include: Vec<String>,
  /// Globs of files to leave out, e.g. the manifest itself when it lives inside the root.
  pub exclude: Vec<String>,
  /// Hashing threads; `None` = one per core, at most 8.
  pub threads: Option<usize>,
}

/// Progress of hashing, reported every 100 ms or so from the calling thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
  pub files_done: u64,
  pub files_total: u64,
  pub bytes_done: u64,
  pub bytes_total: u64,
}

/// What is wrong with one path (or, for `Signature`, with the manifest as a whole).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProblemKind {
  /// Listed, not on disk.
  Missing,
  /// Listed, but its size or sha256 differs (or it is no longer a readable regular file).
  Modified,
  /// On disk and covered by the patterns, but not listed.
  Unexpected,
  /// Missing, malformed or invalid signature, unknown/revoked/expired key, malformed manifest.
  Signature,
  /// A path that is absolute, contains `..`, or resolves outside the root.
  Path,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
  /// The relative path concerned; empty for problems of the manifest as a whole.
  pub path: String,
  pub kind: ProblemKind,
  /// Why, for humans.
  pub detail: String,
}

/// A public key a verifier trusts.
#[derive(Debug, Clone)]
pub struct TrustedKey {
  pub public_key: [u8; 32],
  pub key_id: String,
}

impl TrustedKey {
  /// From a hex public key; the id is derived, never taken on trust.
  pub fn from_hex(public_key: &str) -> Result<TrustedKey> {
    let bytes: [u8; 32] = hex::decode(public_key)
      .ok()
      .and_then(|b| b.try_into().ok())
      .ok_or_else(|| LoaError::InvalidArgument("`publicKey` must be 64 hex characters".into()))?;
    Ok(TrustedKey { key_id: key_id(&bytes), public_key: bytes })
  }

  /// The keys of a ring that verify now (active, or retired within the overlap).
  pub fn from_ring(ring: &KeyRing) -> Result<Vec<TrustedKey>> {
    ring
      .verification_keys()?
      .iter()
      .filter(|k| matches!(k.status, KeyStatus::Active | KeyStatus::Retired))
      .map(|k| TrustedKey::from_hex(&k.public_key))
      .collect()
  }
}

/// The result of [`verify_manifest`] / [`verify_signature`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
  pub ok: bool,
  pub problems: Vec<Problem>,
  /// Entries in the manifest.
  pub files: u64,
  /// Id of the key whose signature verified.
  pub signed_by: Option<String>,
}

fn problem(path: &str, kind: ProblemKind, detail: impl Into<String>) -> Problem {
  Problem { path: path.to_string(), kind, detail: detail.into() }
}

/// A file found by the walk.
struct Found {
  rel: String,
  abs: PathBuf,
  size: u64,
}

/// Lists the covered files under `root` (already canonical). In `strict` mode (creation) the
/// first path problem is an error; otherwise problems are collected.
fn walk(
  root: &Path,
  include: &[String],
  exclude: &[String],
  strict: bool,
  problems: &mut Vec<Problem>,
) -> Result<Vec<Found>> {
  let mut found = Vec::new();
  let mut stack: Vec<(PathBuf, String)> = vec![(root.to_path_buf(), String::new())];
  while let Some((dir, prefix)) = stack.pop() {
    let entries = fs::read_dir(&dir).map_err(|e| LoaError::io("list", &dir, e))?;
    for entry in entries {
      let entry = entry.map_err(|e| LoaError::io("list", &dir, e))?;
      let abs = entry.path();
      let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
        let shown = format!("{prefix}{}", entry.file_name().to_string_lossy());
        if strict {
          return Err(LoaError::InvalidArgument(format!("file name {shown:?} is not valid UTF-8")));
        }
        problems.push(problem(&shown, ProblemKind::Path, "file name is not valid UTF-8"));
        continue;
      };
      let rel = format!("{prefix}{name}");
      let file_type = entry.file_type().map_err(|e| LoaError::io("stat", &abs, e))?;
      if file_type.is_dir() {
        if !exclude.iter().any(|p| glob::matches(p, &rel)) {
          stack.push((abs, format!("{rel}/")));
        }
        continue;
      }
      if !glob::covered(include, exclude, &rel) {
        continue;
      }
      if file_type.is_symlink() {
        let target = match fs::canonicalize(&abs) {
          Ok(t) => t,
          Err(e) => {
            if strict {
              return Err(LoaError::io("resolve symlink", &abs, e));
            }
            problems.push(problem(&rel, ProblemKind::Path, format!("symlink does not resolve: {e}")));
            continue;
          }
        };
        if !target.starts_with(root) {
          if strict {
            return Err(LoaError::PathOutsideRoot(format!("{rel} is a symlink to {}", target.display())));
          }
          problems.push(problem(&rel, ProblemKind::Path, "symlink resolves outside the root"));
          continue;
        }
        let meta = fs::metadata(&target).map_err(|e| LoaError::io("stat", &target, e))?;
        if meta.is_file() {
          found.push(Found { rel, abs, size: meta.len() });
        }
        // Symlinked directories are not followed (see the module docs).
        continue;
      }
      if file_type.is_file() {
        let size = entry.metadata().map_err(|e| LoaError::io("stat", &abs, e))?.len();
        found.push(Found { rel, abs, size });
      } else if strict {
        return Err(LoaError::InvalidArgument(format!("{rel} is not a regular file (exclude it)")));
      } else {
        problems.push(problem(&rel, ProblemKind::Unexpected, "not a regular file"));
      }
    }
  }
  found.sort_by(|a, b| a.rel.cmp(&b.rel));
  Ok(found)
}

/// The bytes read and the SHA-256 of one file.
pub type FileHash = io::Result<(u64, [u8; 32])>;

/// Streams one file through SHA-256; returns the bytes read and the digest.
fn hash_file(path: &Path, buffer: &mut [u8], done: &AtomicU64, cancel: &AtomicBool) -> io::Result<(u64, [u8; 32])> {
  let mut file = File::open(path)?;
  let mut hasher = Sha256::new();
  let mut total = 0u64;
  loop {
    if cancel.load(Ordering::Relaxed) {
      return Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled"));
    }
    let n = match file.read(buffer) {
      Ok(0) => break,
      Ok(n) => n,
      Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
      Err(e) => return Err(e),
    };
    hasher.update(&buffer[..n]);
    total += n as u64;
    done.fetch_add(n as u64, Ordering::Relaxed);
  }
  Ok((total, hasher.finalize().into()))
}

/// How many hashing threads to use.
fn thread_count(requested: Option<usize>, files: usize) -> usize {
  let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
  requested.unwrap_or(cores.min(8)).clamp(1, 64).min(files.max(1))
}

/// Hashes `paths` on `threads` threads, each taking the next file from a shared counter;
/// `progress` is called on this thread about every 100 ms (and once at the end). If it fails,
/// hashing stops and its error is returned.
pub fn hash_files(
  paths: &[PathBuf],
  bytes_total: u64,
  threads: usize,
  progress: &mut dyn FnMut(Progress) -> Result<()>,
) -> Result<Vec<FileHash>> {
  let next = AtomicUsize::new(0);
  let files_done = AtomicU64::new(0);
  let bytes_done = AtomicU64::new(0);
  let cancel = AtomicBool::new(false);
  let snapshot = || Progress {
    files_done: files_done.load(Ordering::Relaxed),
    files_total: paths.len() as u64,
    bytes_done: bytes_done.load(Ordering::Relaxed),
    bytes_total,
  };
  let worker = |tx: mpsc::Sender<Vec<(usize, FileHash)>>| {
    let mut buffer = vec![0u8; CHUNK];
    let mut results = Vec::new();
    loop {
      let i = next.fetch_add(1, Ordering::Relaxed);
      if i >= paths.len() || cancel.load(Ordering::Relaxed) {
        break;
      }
      results.push((i, hash_file(&paths[i], &mut buffer, &bytes_done, &cancel)));
      files_done.fetch_add(1, Ordering::Relaxed);
    }
    let _ = tx.send(results);
  };
  let mut out: Vec<Option<FileHash>> = (0..paths.len()).map(|_| None).collect();
  let mut failure = None;
  std::thread::scope(|scope| {
    let (tx, rx) = mpsc::channel();
    for _ in 0..threads {
      let tx = tx.clone();
      std::thread::Builder::new()
        .name("loa-hash".into())
        .spawn_scoped(scope, || worker(tx))
        .expect("spawn hashing thread");
    }
    drop(tx);
    let mut finished = 0;
    while finished < threads {
      match rx.recv_timeout(Duration::from_millis(100)) {
        Ok(results) => {
          finished += 1;
          for (i, r) in results {
            out[i] = Some(r);
          }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
          if failure.is_none() {
            if let Err(e) = progress(snapshot()) {
              failure = Some(e);
              cancel.store(true, Ordering::Relaxed);
            }
          }
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => break, // a worker panicked; scope re-raises
      }
    }
  });
  if let Some(e) = failure {
    return Err(e);
  }
  progress(snapshot())?;
  out.into_iter().map(|r| r.ok_or_else(|| LoaError::Internal("a file was not hashed".into()))).collect()
}

fn normalized_patterns(options: &ManifestOptions) -> Result<(Vec<String>, Vec<String>)> {
  let include = if options.include.is_empty() { vec!["**".to_string()] } else { options.include.clone() };
  for p in include.iter().chain(&options.exclude) {
    glob::validate(p)?;
  }
  Ok((include, options.exclude.clone()))
}

fn canonical_root(root: &Path) -> Result<PathBuf> {
  let real = fs::canonicalize(root).map_err(|e| LoaError::io("resolve", root, e))?;
  if !real.is_dir() {
    return Err(LoaError::InvalidArgument(format!("{} is not a directory", root.display())));
  }
  Ok(real)
}

/// Lists and hashes every covered file under `root`.
pub fn create_manifest(
  root: &Path,
  options: &ManifestOptions,
  progress: &mut dyn FnMut(Progress) -> Result<()>,
) -> Result<Manifest> {
  let (include, exclude) = normalized_patterns(options)?;
  let real = canonical_root(root)?;
  let found = walk(&real, &include, &exclude, true, &mut Vec::new())?;
  let paths: Vec<PathBuf> = found.iter().map(|f| f.abs.clone()).collect();
  let total = found.iter().map(|f| f.size).sum();
  let hashes = hash_files(&paths, total, thread_count(options.threads, paths.len()), progress)?;
  let files = found
    .into_iter()
    .zip(hashes)
    .map(|(f, h)| {
      let (size, digest) = h.map_err(|e| LoaError::io("hash", &f.abs, e))?;
      Ok(FileEntry { path: f.rel, size, sha256: hex::encode(digest) })
    })
    .collect::<Result<Vec<_>>>()?;
  Ok(Manifest {
    version: VERSION,
    created_at: crate::timestamp::format_ms(crate::timestamp::now_ms()),
    include,
    exclude,
    files,
  })
}

impl Manifest {
  pub fn to_value(&self) -> Value {
    serde_json::to_value(self).expect("a manifest is JSON")
  }
}

/// A manifest borrowed from a JSON value, for validation without copying.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ManifestRef<'a> {
  version: u32,
  #[serde(borrow)]
  created_at: &'a str,
  #[serde(borrow)]
  include: Vec<&'a str>,
  #[serde(borrow)]
  exclude: Vec<&'a str>,
  #[serde(borrow)]
  files: Vec<FileEntryRef<'a>>,
}

#[derive(Deserialize)]
struct FileEntryRef<'a> {
  #[serde(borrow)]
  path: &'a str,
  #[allow(dead_code)] // its type (a non-negative integer) is what is checked
  size: u64,
  #[serde(borrow)]
  sha256: &'a str,
}

/// Checks that `value` is a well-formed manifest (a `signature` member, if any, is ignored):
/// version, timestamp, patterns, entry paths (`E_PATH_OUTSIDE_ROOT` for escaping ones), sizes,
/// digests, no duplicates. Returns the number of entries.
pub fn validate_manifest(value: &Value) -> Result<usize> {
  let manifest = ManifestRef::deserialize(value)
    .map_err(|e| LoaError::InvalidArgument(format!("not a manifest: {}", scrub_quoted(&e.to_string()))))?;
  if manifest.version != VERSION {
    return Err(LoaError::InvalidArgument(format!("unsupported manifest version {}", manifest.version)));
  }
  if crate::timestamp::parse_ms(manifest.created_at).is_none() {
    return Err(LoaError::InvalidArgument("`createdAt` is not an RFC 3339 timestamp".into()));
  }
  for p in manifest.include.iter().chain(&manifest.exclude) {
    glob::validate(p)?;
  }
  let mut seen = std::collections::HashSet::with_capacity(manifest.files.len());
  for f in &manifest.files {
    check_entry_path(f.path)?;
    if f.sha256.len() != 64 || !f.sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
      return Err(LoaError::InvalidArgument(format!("`sha256` of {:?} is not 64 lower-case hex characters", f.path)));
    }
    if !seen.insert(f.path) {
      return Err(LoaError::InvalidArgument(format!("{:?} is listed twice", f.path)));
    }
  }
  Ok(manifest.files.len())
}

/// [`validate_manifest`], then the manifest as an owned value.
pub fn parse_manifest(value: &Value) -> Result<Manifest> {
  validate_manifest(value)?;
  Manifest::deserialize(value)
    .map_err(|e| LoaError::InvalidArgument(format!("not a manifest: {}", scrub_quoted(&e.to_string()))))
}

/// A manifest path must be in the form the walk produces: relative, `/`-separated, no empty,
/// `.` or `..` component (so that one file has exactly one spelling).
fn check_entry_path(path: &str) -> Result<()> {
  if path.is_empty() || path.contains('\0') {
    return Err(LoaError::InvalidArgument("path must be a non-empty string without NUL".into()));
  }
  if path.starts_with('/') || path.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
    return Err(LoaError::PathOutsideRoot(path.to_string()));
  }
  Ok(())
}

fn as_object(value: &Value) -> std::result::Result<&Map<String, Value>, String> {
  value.as_object().ok_or_else(|| "a manifest must be a JSON object".to_string())
}

/// Signs a manifest (a JSON value, e.g. [`Manifest::to_value`]) with the ring's signing key,
/// rotating it first if its rotation is due. An existing signature is replaced.
pub fn sign_manifest(value: &Value, ring: &KeyRing) -> Result<Value> {
  let signature = manifest_signature(value, ring)?;
  let mut signed = as_object(value).map_err(LoaError::InvalidArgument)?.clone();
  signed.insert("signature".into(), signature);
  Ok(Value::Object(signed))
}

/// The `signature` member for a manifest (any existing `signature` member is not covered and
/// is ignored): `{ algorithm: "ed25519", keyId, value }`.
pub fn manifest_signature(value: &Value, ring: &KeyRing) -> Result<Value> {
  let object = as_object(value).map_err(LoaError::InvalidArgument)?;
  validate_manifest(value)?;
  let canonical = jcs::object_to_vec_without(object, "signature")?;
  let (info, key) = ring.signing_key(true)?;
  let signature = sign_with_domain(&key, MANIFEST_DOMAIN, &canonical);
  Ok(serde_json::json!({ "algorithm": "ed25519", "keyId": info.key_id, "value": hex::encode(signature) }))
}

/// Checks the signature of a signed manifest against `keys` only (no file is read).
pub fn verify_signature(value: &Value, keys: &[TrustedKey]) -> Verification {
  verify_signature_and_parse(value, keys, false).0
}

/// The signature check, the manifest's well-formedness, and (if `owned`) the manifest itself.
fn verify_signature_and_parse(value: &Value, keys: &[TrustedKey], owned: bool) -> (Verification, Option<Manifest>) {
  let mut v = Verification::default();
  match check_signature(value, keys) {
    Ok(id) => v.signed_by = Some(id),
    Err(detail) => v.problems.push(problem("", ProblemKind::Signature, detail)),
  }
  let parsed = as_object(value).map_err(LoaError::InvalidArgument).and_then(|_| {
    if owned {
      parse_manifest(value).map(|m| (m.files.len(), Some(m)))
    } else {
      validate_manifest(value).map(|n| (n, None))
    }
  });
  let manifest = match parsed {
    Ok((files, m)) => {
      v.files = files as u64;
      m
    }
    Err(e) => {
      v.problems.push(problem("", ProblemKind::Signature, format!("malformed manifest: {e}")));
      None
    }
  };
  v.ok = v.problems.is_empty();
  (v, manifest)
}

fn check_signature(value: &Value, keys: &[TrustedKey]) -> std::result::Result<String, String> {
  let object = as_object(value)?;
  let signature = object.get("signature").ok_or("the manifest is not signed")?;
  let field =
    |name: &str| signature.get(name).and_then(Value::as_str).ok_or(format!("signature has no string `{name}`"));
  if field("algorithm")? != "ed25519" {
    return Err(format!("unsupported signature algorithm {}", crate::error::shown(field("algorithm")?)));
  }
  let id = field("keyId")?;
  let value = field("value")?;
  // Lower-case only: `hex` also reads upper case, and a signature must have one spelling (or a
  // changed byte of the manifest file could leave it verifying).
  if !value.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
    return Err("signature value is not lower-case hex".into());
  }
  let bytes = hex::decode(value).map_err(|_| "signature value is not hex".to_string())?;
  let key = keys
    .iter()
    .find(|k| k.key_id == id)
    .ok_or(format!("signed by key {id}, which is not among the verification keys (unknown, expired or revoked)"))?;
  let canonical = jcs::object_to_vec_without(object, "signature").map_err(|e| e.to_string())?;
  verify_with_domain(&key.public_key, MANIFEST_DOMAIN, &canonical, &bytes)
    .map_err(|why| format!("{why} (key {id})"))?;
  Ok(id.to_string())
}

/// Verifies a signed manifest against `keys` and the files under `root`. Never throws for damage
/// (everything wrong is a problem) and never writes; only bad arguments and an unreadable root
/// are errors.
pub fn verify_manifest(
  root: &Path,
  value: &Value,
  keys: &[TrustedKey],
  threads: Option<usize>,
) -> Result<Verification> {
  let (mut v, parsed) = verify_signature_and_parse(value, keys, true);
  let manifest = match parsed.ok_or(()) {
    Ok(m) => m,
    Err(_) => {
      // The malformed-manifest problem is already reported; entries may still be checkable.
      let Some(files) = value.get("files").and_then(Value::as_array) else {
        return Ok(v);
      };
      let include = vec!["**".to_string()];
      let entries = files
        .iter()
        .filter_map(|f| {
          Some(FileEntry {
            path: f.get("path")?.as_str()?.to_string(),
            size: f.get("size")?.as_u64()?,
            sha256: f.get("sha256")?.as_str()?.to_string(),
          })
        })
        .collect();
      Manifest { version: VERSION, created_at: String::new(), include, exclude: Vec::new(), files: entries }
    }
  };
  let real = canonical_root(root)?;
  let mut problems = Vec::new();
  let found = walk(&real, &manifest.include, &manifest.exclude, false, &mut problems)?;

  let mut to_hash: Vec<(&FileEntry, PathBuf)> = Vec::new();
  let mut listed = BTreeSet::new();
  for entry in &manifest.files {
    listed.insert(entry.path.as_str());
    if let Err(e) = check_entry_path(&entry.path) {
      problems.push(problem(&entry.path, ProblemKind::Path, e.to_string()));
      continue;
    }
    let abs = real.join(&entry.path);
    match fs::canonicalize(&abs) {
      Err(e) if e.kind() == io::ErrorKind::NotFound => {
        problems.push(problem(&entry.path, ProblemKind::Missing, "not on disk"))
      }
      Err(e) => problems.push(problem(&entry.path, ProblemKind::Modified, format!("unreadable: {e}"))),
      Ok(target) if !target.starts_with(&real) => {
        problems.push(problem(&entry.path, ProblemKind::Path, "resolves outside the root through a symlink"))
      }
      Ok(target) if !target.is_file() => {
        problems.push(problem(&entry.path, ProblemKind::Modified, "no longer a regular file"))
      }
      Ok(_) => to_hash.push((entry, abs)),
    }
  }
  for f in &found {
    if !listed.contains(f.rel.as_str()) {
      problems.push(problem(&f.rel, ProblemKind::Unexpected, "on disk but not in the manifest"));
    }
  }

  let paths: Vec<PathBuf> = to_hash.iter().map(|(_, p)| p.clone()).collect();
  let total = to_hash.iter().map(|(e, _)| e.size).sum();
  let hashes = hash_files(&paths, total, thread_count(threads, paths.len()), &mut |_| Ok(()))?;
  for ((entry, _), result) in to_hash.iter().zip(hashes) {
    match result {
      Ok((size, digest)) if size == entry.size && hex::encode(digest) == entry.sha256 => {}
      Ok((size, _)) if size != entry.size => {
        problems.push(problem(&entry.path, ProblemKind::Modified, format!("size {size}, manifest says {}", entry.size)))
      }
      Ok(_) => problems.push(problem(&entry.path, ProblemKind::Modified, "sha256 differs")),
      Err(e) if e.kind() == io::ErrorKind::NotFound => {
        problems.push(problem(&entry.path, ProblemKind::Missing, "not on disk"))
      }
      Err(e) => problems.push(problem(&entry.path, ProblemKind::Modified, format!("unreadable: {e}"))),
    }
  }
  problems.sort_by(|a, b| (a.path.as_str(), a.kind).cmp(&(b.path.as_str(), b.kind)));
  problems.dedup_by(|a, b| a.path == b.path && a.kind == b.kind);
  v.problems.extend(problems);
  v.files = manifest.files.len() as u64;
  v.ok = v.problems.is_empty();
  Ok(v)
}

/// Reads a manifest file. It must hold exactly the canonical JSON of its value (plus an optional
/// final newline), as [`write_manifest`] writes it, so that any changed byte is detectable
/// even where JSON would not care (whitespace). Otherwise `E_STATE_CORRUPT`.
pub fn read_manifest(path: &Path) -> Result<Value> {
  let corrupt = |reason: String| LoaError::StateCorrupt { path: path.display().to_string(), reason };
  let size = fs::metadata(path).map_err(|e| LoaError::io("stat", path, e))?.len();
  if size > MAX_MANIFEST_BYTES {
    return Err(LoaError::TooLarge { what: path.display().to_string(), size, limit: MAX_MANIFEST_BYTES });
  }
  let bytes = fs::read(path).map_err(|e| LoaError::io("read", path, e))?;
  let text = std::str::from_utf8(&bytes).map_err(|_| corrupt("not UTF-8".into()))?;
  let value = jcs::parse_strict(text).map_err(|e| corrupt(e.to_string()))?;
  let canonical = jcs::to_vec(&value).map_err(|e| corrupt(e.to_string()))?;
  let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
  if body != canonical.as_slice() {
    return Err(corrupt("not in canonical form (changed after it was written?)".into()));
  }
  Ok(value)
}

/// Writes a manifest (signed or not) atomically as canonical JSON and a newline.
pub fn write_manifest(path: &Path, value: &Value) -> Result<()> {
  let mut bytes = jcs::to_vec(value)?;
  bytes.push(b'\n');
  write_file_atomic(path, &bytes, None)
}

#[cfg(test)]
mod tests;
