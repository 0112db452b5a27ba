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
//!   "auditHead": { "dir": "audit", "seq": 41, "hash": "…" },
//!   "signature": { "algorithm": "ed25519", "keyId": "…", "value": "…128 hex…" } }
//! ```
//!
//! **No unknown members.** A manifest holds exactly these members (`auditHead` optional), each
//! entry exactly `path`, `size`, `sha256`, and the signature exactly `algorithm`, `keyId`,
//! `value`. Anything else is refused when signing (`E_INVALID_ARGUMENT`) and is a `signature`
//! problem when verifying: members inside `signature` are not covered by it, and a member a
//! verifier does not understand would be signed but never checked, so neither is accepted.
//!
//! Paths are `/`-separated, relative, without `.`/`..` components; a path that is absolute,
//! climbs out with `..` or resolves outside the root through a symlink is refused on creation
//! (`E_PATH_OUTSIDE_ROOT`) and reported (kind `path`) on verification. Symlinks to regular files
//! inside the root are covered by their content; symlinked directories are not followed (their
//! files are covered under their real path), which also rules out cycles. Anything covered that
//! is not a regular file (a FIFO, socket or device, or a symlink to one) is never opened: it is
//! `E_NOT_REGULAR_FILE` on creation (exclude it) and an `unexpected` problem on verification.
//! Files are opened through [`StateDir`] (never through a symlink in a directory below the root,
//! never blocking on a FIFO) and read at most to the size they had when opened, so a file that
//! grows while it is hashed cannot keep creation or verification running.
//!
//! Temp files of the library's own atomic writes (named by [`crate::fsutil::is_temp_name`]) are
//! neither covered nor reported as unexpected: a crash in the middle of a write leaves one
//! behind, the rename that would have replaced the real file never happened, and the next
//! writer under that directory's lock removes it. Verification lists them in `temp_files`, so
//! they are visible without failing it.
//!
//! **The audit log's head.** A hash chain cannot show that its tail was cut off. With
//! `audit_dir` (relative to the root), creation records the audit log's current head as
//! `auditHead`, covered by the signature, and excludes the log's directory from `files` (it
//! grows; the anchor covers it). Verification then checks that the log still holds that seq with
//! that hash: a log that ends before it is a `truncated` problem (`E_AUDIT_TRUNCATED`), another
//! entry there is `modified`. The anchor lives in the manifest, away from the log, so deleting
//! entries together with the log's own checkpoint is still detected.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use rustix::fs::FileType;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::glob;
use super::keys::{KeyRing, KeyStatus};
use super::{key_id, sign_with_domain, verify_with_domain, MANIFEST_DOMAIN};
use crate::audit::{self, Head};
use crate::error::{scrub_quoted, LoaError, Result};
use crate::fsutil::{is_temp_name, kind_name, open_parent, OpenMode, StateDir, StateFile};
use crate::jcs;

/// The manifest format version this code writes and reads.
pub const VERSION: u32 = 1;
/// Size of each read while hashing.
const CHUNK: usize = 256 * 1024;
/// A manifest file larger than this is refused (1,000,000 entries is about 150 MB).
pub const MAX_MANIFEST_BYTES: u64 = 256 * 1024 * 1024;

/// One covered file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
  pub path: String,
  pub size: u64,
  pub sha256: String,
}

/// The head of an audit log, as a manifest anchors it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditAnchor {
  /// The log's directory, relative to the manifest's root.
  pub dir: String,
  pub seq: u64,
  pub hash: String,
}

/// An unsigned manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
  pub version: u32,
  pub created_at: String,
  pub include: Vec<String>,
  pub exclude: Vec<String>,
  pub files: Vec<FileEntry>,
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub audit_head: Option<AuditAnchor>,
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
  /// An audit log directory (relative to the root) whose head the manifest anchors (see the
  /// module docs).
  pub audit_dir: Option<String>,
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
  /// Listed, but its size or sha256 differs (or it is no longer a readable regular file); for
  /// the audit log: the entry at the anchored seq is another one.
  Modified,
  /// On disk and covered by the patterns, but not listed (or not a regular file).
  Unexpected,
  /// Missing, malformed or invalid signature, unknown/revoked/expired key, malformed manifest.
  Signature,
  /// A path that is absolute, contains `..`, or resolves outside the root.
  Path,
  /// The audit log ends before the head the manifest anchors (`E_AUDIT_TRUNCATED`).
  Truncated,
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
  /// Temp files of interrupted atomic writes found under the root (relative paths): neither
  /// covered nor a problem (see the module docs).
  pub temp_files: Vec<String>,
}

fn problem(path: &str, kind: ProblemKind, detail: impl Into<String>) -> Problem {
  Problem { path: path.to_string(), kind, detail: detail.into() }
}

/// The root of a manifest: opened, and its canonical path (to tell where symlinks lead).
struct Root {
  dir: StateDir,
  real: PathBuf,
}

impl Root {
  fn open(root: &Path) -> Result<Root> {
    let real = std::fs::canonicalize(root).map_err(|e| LoaError::io("resolve", root, e))?;
    if !real.is_dir() {
      return Err(LoaError::InvalidArgument(format!("{} is not a directory", root.display())));
    }
    Ok(Root { dir: StateDir::open_root(&real)?, real })
  }

  /// The directory holding `rel` (relative, `/`-separated) and its last component, reached
  /// without following a symlink. `None` when a directory on the way is missing.
  fn parent_of<'a>(&self, rel: &'a str) -> Result<Option<(StateDir, &'a str)>> {
    match rel.rsplit_once('/') {
      Some((parent, name)) => Ok(self.dir.descend(Path::new(parent), false)?.map(|d| (d, name))),
      None => Ok(Some((self.dir.try_clone()?, rel))),
    }
  }

  /// Where the content of `rel` is: `rel` itself, or for a symlink the relative path of the
  /// regular file it resolves to inside the root. Errors: missing (`E_IO` ENOENT), outside the
  /// root (`E_PATH_OUTSIDE_ROOT`), a symlink to something that is not a regular file
  /// (`E_NOT_REGULAR_FILE`).
  fn content_of(&self, rel: &str) -> Result<String> {
    let not_found = || LoaError::io("open", &self.real.join(rel), std::io::ErrorKind::NotFound.into());
    let (dir, name) = self.parent_of(rel)?.ok_or_else(not_found)?;
    match dir.kind_of(name)? {
      None => Err(not_found()),
      Some(FileType::Symlink) => self.symlink_target(rel).map(|(target, _)| target),
      Some(_) => Ok(rel.to_string()),
    }
  }

  /// The regular file a symlink at `rel` leads to, relative to the root, and its size.
  fn symlink_target(&self, rel: &str) -> Result<(String, u64)> {
    let abs = self.real.join(rel);
    let target = std::fs::canonicalize(&abs).map_err(|e| LoaError::io("resolve symlink", &abs, e))?;
    let inside = target
      .strip_prefix(&self.real)
      .map_err(|_| LoaError::PathOutsideRoot(format!("{rel} is a symlink to {}", target.display())))?;
    let meta = std::fs::symlink_metadata(&target).map_err(|e| LoaError::io("stat", &target, e))?;
    let kind = FileType::from_raw_mode(std::os::unix::fs::MetadataExt::mode(&meta));
    if kind != FileType::RegularFile {
      return Err(LoaError::NotRegularFile { path: format!("{rel} (a symlink)"), kind: kind_name(kind) });
    }
    let inside = inside
      .to_str()
      .ok_or_else(|| LoaError::InvalidArgument(format!("the target of {rel} is not valid UTF-8")))?
      .to_string();
    Ok((inside, meta.len()))
  }

  /// Opens the regular file at `rel` (already resolved by [`content_of`](Self::content_of)).
  fn open_file(&self, rel: &str) -> Result<StateFile> {
    let not_found = || LoaError::io("open", &self.real.join(rel), std::io::ErrorKind::NotFound.into());
    let (dir, name) = self.parent_of(rel)?.ok_or_else(not_found)?;
    dir.open_file(name, OpenMode::READ)
  }
}

/// A file found by the walk.
struct Found {
  /// Its path in the manifest.
  rel: String,
  /// Where its content is read from (differs for a symlink).
  content: String,
  size: u64,
}

/// What the walk finds besides files.
#[derive(Default)]
struct Walked {
  found: Vec<Found>,
  temp_files: Vec<String>,
}

/// Lists the covered files under the root. In `strict` mode (creation) the first path problem
/// is an error; otherwise problems are collected.
fn walk(
  root: &Root,
  include: &[String],
  exclude: &[String],
  strict: bool,
  problems: &mut Vec<Problem>,
) -> Result<Walked> {
  let mut out = Walked::default();
  let mut stack: Vec<(StateDir, String)> = vec![(root.dir.try_clone()?, String::new())];
  let fail = |e: LoaError, rel: &str, kind: ProblemKind, problems: &mut Vec<Problem>| -> Result<()> {
    if strict {
      return Err(e);
    }
    problems.push(problem(rel, kind, e.to_string()));
    Ok(())
  };
  while let Some((dir, prefix)) = stack.pop() {
    for entry in dir.entries()? {
      let Some(name) = entry.name_str().map(str::to_owned) else {
        let shown = format!("{prefix}{}", entry.name.to_string_lossy());
        if strict {
          return Err(LoaError::InvalidArgument(format!("file name {shown:?} is not valid UTF-8")));
        }
        problems.push(problem(&shown, ProblemKind::Path, "file name is not valid UTF-8"));
        continue;
      };
      let rel = format!("{prefix}{name}");
      match entry.file_type {
        FileType::Directory => {
          if !exclude.iter().any(|p| glob::matches(p, &rel)) {
            match dir.subdir(&entry.name) {
              Ok(Some(sub)) => stack.push((sub, format!("{rel}/"))),
              Ok(None) => {} // removed since listing
              Err(e) => fail(e, &rel, ProblemKind::Path, problems)?,
            }
          }
          continue;
        }
        FileType::RegularFile if is_temp_name(&entry.name) => {
          out.temp_files.push(rel);
          continue;
        }
        _ => {}
      }
      if !glob::covered(include, exclude, &rel) {
        continue;
      }
      match entry.file_type {
        FileType::RegularFile => {
          let size = rustix::fs::statat(dir.fd(), &entry.name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
            .map(|s| s.st_size as u64)
            .unwrap_or(0);
          out.found.push(Found { content: rel.clone(), rel, size });
        }
        FileType::Symlink => match root.symlink_target(&rel) {
          Ok((content, size)) => out.found.push(Found { rel, content, size }),
          // Symlinked directories are not followed (see the module docs).
          Err(LoaError::NotRegularFile { kind: "directory", .. }) => {}
          Err(e @ LoaError::NotRegularFile { .. }) => fail(e, &rel, ProblemKind::Unexpected, problems)?,
          Err(e) => fail(e, &rel, ProblemKind::Path, problems)?,
        },
        other => {
          let e = LoaError::NotRegularFile { path: format!("{rel} (exclude it)"), kind: kind_name(other) };
          fail(e, &rel, ProblemKind::Unexpected, problems)?;
        }
      }
    }
  }
  out.found.sort_by(|a, b| a.rel.cmp(&b.rel));
  out.temp_files.sort();
  Ok(out)
}

/// The bytes read and the SHA-256 of one file.
type FileHash = Result<(u64, [u8; 32])>;
/// Hashes the file of an index with a buffer, counting bytes and watching for cancellation.
type HashOne<'a> = dyn Fn(usize, &mut [u8], &AtomicU64, &AtomicBool) -> FileHash + Sync + 'a;

/// Streams `file` through SHA-256, reading at most `limit` bytes.
fn hash_file(file: &StateFile, limit: u64, buffer: &mut [u8], done: &AtomicU64, cancel: &AtomicBool) -> FileHash {
  let mut hasher = Sha256::new();
  let mut total = 0u64;
  while total < limit {
    if cancel.load(Ordering::Relaxed) {
      return Err(LoaError::Internal("cancelled".into()));
    }
    let want = (limit - total).min(buffer.len() as u64) as usize;
    let n = file.read_at(&mut buffer[..want], total)?;
    if n == 0 {
      break;
    }
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

/// Hashes `count` files on `threads` threads, each taking the next index from a shared counter
/// and calling `hash_one(index, buffer, bytes_done, cancel)`; `progress` is called on this
/// thread about every 100 ms (and once at the end). If it fails, hashing stops and its error is
/// returned.
fn hash_files(
  count: usize,
  bytes_total: u64,
  threads: usize,
  hash_one: &HashOne,
  progress: &mut dyn FnMut(Progress) -> Result<()>,
) -> Result<Vec<FileHash>> {
  let next = AtomicUsize::new(0);
  let files_done = AtomicU64::new(0);
  let bytes_done = AtomicU64::new(0);
  let cancel = AtomicBool::new(false);
  let snapshot = || Progress {
    files_done: files_done.load(Ordering::Relaxed),
    files_total: count as u64,
    bytes_done: bytes_done.load(Ordering::Relaxed),
    bytes_total,
  };
  let worker = |tx: mpsc::Sender<Vec<(usize, FileHash)>>| {
    let mut buffer = vec![0u8; CHUNK];
    let mut results = Vec::new();
    loop {
      let i = next.fetch_add(1, Ordering::Relaxed);
      if i >= count || cancel.load(Ordering::Relaxed) {
        break;
      }
      results.push((i, hash_one(i, &mut buffer, &bytes_done, &cancel)));
      files_done.fetch_add(1, Ordering::Relaxed);
    }
    let _ = tx.send(results);
  };
  let mut out: Vec<Option<FileHash>> = (0..count).map(|_| None).collect();
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
  let mut exclude = options.exclude.clone();
  if let Some(dir) = &options.audit_dir {
    check_entry_path(dir)?;
    let pattern = format!("./{dir}/**");
    if !exclude.contains(&pattern) {
      exclude.push(pattern);
    }
  }
  for p in include.iter().chain(&exclude) {
    glob::validate(p)?;
  }
  Ok((include, exclude))
}

/// The head of the audit log in `dir` below the root, for anchoring. The log must verify (an
/// HMAC-keyed log's entries are checked for their links only).
fn audit_anchor(root: &Root, dir: &str) -> Result<AuditAnchor> {
  let log = root
    .dir
    .descend(Path::new(dir), false)?
    .ok_or_else(|| LoaError::io("open audit log", &root.real.join(dir), std::io::ErrorKind::NotFound.into()))?;
  let v = audit::verify_in(&log, &audit::VerifyOptions::default())?;
  if let Some(p) = v.problems.iter().find(|p| p.kind != "key") {
    return Err(LoaError::AuditCorrupt {
      segment: p.segment.clone(),
      line: p.line,
      reason: format!("the audit log does not verify ({}: {}); run `loa audit verify`", p.kind, p.detail),
    });
  }
  let head = v.head.unwrap_or(Head { seq: 0, hash: audit::GENESIS.into() });
  Ok(AuditAnchor { dir: dir.to_string(), seq: head.seq, hash: head.hash })
}

/// Lists and hashes every covered file under `root` (and anchors the audit log's head when
/// `options.audit_dir` is given).
pub fn create_manifest(
  root: &Path,
  options: &ManifestOptions,
  progress: &mut dyn FnMut(Progress) -> Result<()>,
) -> Result<Manifest> {
  if options.threads == Some(0) {
    return crate::error::invalid("`threads` must be at least 1");
  }
  let (include, exclude) = normalized_patterns(options)?;
  let root = Root::open(root)?;
  let audit_head = options.audit_dir.as_deref().map(|dir| audit_anchor(&root, dir)).transpose()?;
  let found = walk(&root, &include, &exclude, true, &mut Vec::new())?.found;
  let total = found.iter().map(|f| f.size).sum();
  // Each file is read at most to the size it had when opened.
  let hash_one = |i: usize, buffer: &mut [u8], done: &AtomicU64, cancel: &AtomicBool| -> FileHash {
    let file = root.open_file(&found[i].content)?;
    hash_file(&file, file.len()?, buffer, done, cancel)
  };
  let hashes = hash_files(found.len(), total, thread_count(options.threads, found.len()), &hash_one, progress)?;
  let files = found
    .into_iter()
    .zip(hashes)
    .map(|(f, h)| {
      let (size, digest) = h?;
      Ok(FileEntry { path: f.rel, size, sha256: hex::encode(digest) })
    })
    .collect::<Result<Vec<_>>>()?;
  Ok(Manifest {
    version: VERSION,
    created_at: crate::timestamp::format_ms(crate::timestamp::now_ms()),
    include,
    exclude,
    files,
    audit_head,
  })
}

impl Manifest {
  pub fn to_value(&self) -> Value {
    serde_json::to_value(self).expect("a manifest is JSON")
  }
}

/// A manifest borrowed from a JSON value, for validation without copying. Unknown members are
/// refused at every level (see the module docs).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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
  #[serde(default, borrow)]
  audit_head: Option<AuditAnchorRef<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEntryRef<'a> {
  #[serde(borrow)]
  path: &'a str,
  #[allow(dead_code)] // its type (a non-negative integer) is what is checked
  size: u64,
  #[serde(borrow)]
  sha256: &'a str,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditAnchorRef<'a> {
  #[serde(borrow)]
  dir: &'a str,
  #[allow(dead_code)] // its type (a non-negative integer) is what is checked
  seq: u64,
  #[serde(borrow)]
  hash: &'a str,
}

fn is_hex(text: &str, len: usize) -> bool {
  text.len() == len && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Checks that `value` is a well-formed manifest: version, timestamp, patterns, entry paths
/// (`E_PATH_OUTSIDE_ROOT` for escaping ones), sizes, digests, no duplicates, the audit anchor,
/// no unknown member. Its `signature`, if any, is checked by the signature check. Returns the
/// number of entries.
pub fn validate_manifest(value: &Value) -> Result<usize> {
  let object = as_object(value).map_err(LoaError::InvalidArgument)?;
  // The signature's members are checked by the signature check.
  let mut without_signature = object.clone();
  without_signature.remove("signature");
  let value = Value::Object(without_signature);
  let manifest = ManifestRef::deserialize(&value)
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
    if !is_hex(f.sha256, 64) {
      return Err(LoaError::InvalidArgument(format!("`sha256` of {:?} is not 64 lower-case hex characters", f.path)));
    }
    if !seen.insert(f.path) {
      return Err(LoaError::InvalidArgument(format!("{:?} is listed twice", f.path)));
    }
  }
  if let Some(anchor) = &manifest.audit_head {
    check_entry_path(anchor.dir)?;
    if !is_hex(anchor.hash, 64) {
      return Err(LoaError::InvalidArgument("`auditHead.hash` is not 64 lower-case hex characters".into()));
    }
  }
  Ok(manifest.files.len())
}

/// [`validate_manifest`], then the manifest as an owned value.
pub fn parse_manifest(value: &Value) -> Result<Manifest> {
  validate_manifest(value)?;
  let mut object = as_object(value).map_err(LoaError::InvalidArgument)?.clone();
  object.remove("signature");
  Manifest::deserialize(Value::Object(object))
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
  let parsed = if owned {
    parse_manifest(value).map(|m| (m.files.len(), Some(m)))
  } else {
    validate_manifest(value).map(|n| (n, None))
  };
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
  let members = signature.as_object().ok_or("`signature` is not an object")?;
  if let Some(extra) = members.keys().find(|k| !matches!(k.as_str(), "algorithm" | "keyId" | "value")) {
    // Nothing inside `signature` is signed, so nothing unknown may ride along in it.
    return Err(format!("`signature` has an unknown member {:?}, which no signature covers", shown_member(extra)));
  }
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

/// A member name as shown in a message: at most 64 characters, control characters replaced.
fn shown_member(name: &str) -> String {
  name.chars().take(64).map(|c| if c.is_control() { '?' } else { c }).collect()
}

/// Checks the anchored audit head against the log under the root.
fn check_audit_anchor(root: &Root, anchor: &AuditAnchor, problems: &mut Vec<Problem>) {
  let truncated = |last: u64| {
    problem(
      &anchor.dir,
      ProblemKind::Truncated,
      format!(
        "E_AUDIT_TRUNCATED: the audit log ends at seq {last}, before seq {} that the manifest anchors: entries were cut off",
        anchor.seq
      ),
    )
  };
  let log = match check_entry_path(&anchor.dir).and_then(|()| root.dir.descend(Path::new(&anchor.dir), false)) {
    Ok(Some(log)) => log,
    Ok(None) if anchor.seq == 0 => return,
    Ok(None) => return problems.push(truncated(0)),
    Err(e) => return problems.push(problem(&anchor.dir, ProblemKind::Path, e.to_string())),
  };
  let expected = Head { seq: anchor.seq, hash: anchor.hash.clone() };
  let options = audit::VerifyOptions { expected_head: Some(expected), ..Default::default() };
  let v = match audit::verify_in(&log, &options) {
    Ok(v) => v,
    Err(e) => return problems.push(problem(&anchor.dir, ProblemKind::Modified, format!("unreadable: {e}"))),
  };
  let last = v.head.as_ref().map_or(0, |h| h.seq);
  if last < anchor.seq {
    return problems.push(truncated(last));
  }
  if v.problems.iter().any(|p| p.kind == "head") {
    problems.push(problem(
      &anchor.dir,
      ProblemKind::Modified,
      format!("the audit entry at seq {} is not the one the manifest anchors: the log was rewritten", anchor.seq),
    ));
  }
  // The log's own damage, other than what needs its HMAC key or its checkpoint's keys.
  let damage: Vec<&audit::AuditProblem> =
    v.problems.iter().filter(|p| !matches!(p.kind.as_str(), "key" | "head")).collect();
  if let Some(first) = damage.first() {
    problems.push(problem(
      &anchor.dir,
      ProblemKind::Modified,
      format!(
        "the audit log does not verify: {} problem(s), first {} at {}:{} (run `loa audit verify`)",
        damage.len(),
        first.kind,
        first.segment,
        first.line
      ),
    ));
  }
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
  let manifest = match parsed {
    Some(m) => m,
    None => {
      // The malformed-manifest problem is already reported; entries may still be checkable.
      let Some(files) = value.get("files").and_then(Value::as_array) else {
        return Ok(v);
      };
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
      Manifest {
        version: VERSION,
        created_at: String::new(),
        include: vec!["**".to_string()],
        exclude: Vec::new(),
        files: entries,
        audit_head: None,
      }
    }
  };
  let root = Root::open(root)?;
  let mut problems = Vec::new();
  let walked = walk(&root, &manifest.include, &manifest.exclude, false, &mut problems)?;

  let mut to_hash: Vec<(&FileEntry, String)> = Vec::new();
  let mut listed = BTreeSet::new();
  for entry in &manifest.files {
    listed.insert(entry.path.as_str());
    if let Err(e) = check_entry_path(&entry.path) {
      problems.push(problem(&entry.path, ProblemKind::Path, e.to_string()));
      continue;
    }
    match root.content_of(&entry.path) {
      Ok(content) => to_hash.push((entry, content)),
      Err(e) => problems.push(entry_problem(&entry.path, &e)),
    }
  }
  // A listed file that is now a FIFO or other special file is reported once, as modified.
  problems.retain(|p| p.kind != ProblemKind::Unexpected || !listed.contains(p.path.as_str()));
  for f in &walked.found {
    if !listed.contains(f.rel.as_str()) {
      problems.push(problem(&f.rel, ProblemKind::Unexpected, "on disk but not in the manifest"));
    }
  }

  // Each file is read at most one byte past the size the manifest gives it.
  let total = to_hash.iter().map(|(e, _)| e.size).sum();
  let hash_one = |i: usize, buffer: &mut [u8], done: &AtomicU64, cancel: &AtomicBool| -> FileHash {
    let (entry, content) = &to_hash[i];
    hash_file(&root.open_file(content)?, entry.size.saturating_add(1), buffer, done, cancel)
  };
  let hashes = hash_files(to_hash.len(), total, thread_count(threads, to_hash.len()), &hash_one, &mut |_| Ok(()))?;
  for ((entry, _), result) in to_hash.iter().zip(hashes) {
    match result {
      Ok((size, digest)) if size == entry.size && hex::encode(digest) == entry.sha256 => {}
      Ok((size, _)) if size > entry.size => problems.push(problem(
        &entry.path,
        ProblemKind::Modified,
        format!("larger than the {} bytes the manifest says", entry.size),
      )),
      Ok((size, _)) if size != entry.size => {
        problems.push(problem(&entry.path, ProblemKind::Modified, format!("size {size}, manifest says {}", entry.size)))
      }
      Ok(_) => problems.push(problem(&entry.path, ProblemKind::Modified, "sha256 differs")),
      Err(e) => problems.push(entry_problem(&entry.path, &e)),
    }
  }
  if let Some(anchor) = &manifest.audit_head {
    check_audit_anchor(&root, anchor, &mut problems);
  }
  problems.sort_by(|a, b| (a.path.as_str(), a.kind).cmp(&(b.path.as_str(), b.kind)));
  problems.dedup_by(|a, b| a.path == b.path && a.kind == b.kind);
  v.problems.extend(problems);
  v.files = manifest.files.len() as u64;
  v.temp_files = walked.temp_files;
  v.ok = v.problems.is_empty();
  Ok(v)
}

/// The problem of a listed entry that cannot be hashed.
fn entry_problem(path: &str, e: &LoaError) -> Problem {
  match e {
    e if e.is_not_found() => problem(path, ProblemKind::Missing, "not on disk"),
    LoaError::PathOutsideRoot(_) => {
      problem(path, ProblemKind::Path, "resolves outside the root, or a directory on its path is a symlink")
    }
    LoaError::NotRegularFile { kind, .. } => {
      problem(path, ProblemKind::Modified, format!("no longer a regular file (a {kind})"))
    }
    e => problem(path, ProblemKind::Modified, format!("unreadable: {e}")),
  }
}

/// Reads a manifest file, never through a symlink and only as a regular file of at most
/// [`MAX_MANIFEST_BYTES`]. It must hold exactly the canonical JSON of its value (plus an optional
/// final newline), as [`write_manifest`] writes it, so that any changed byte is detectable
/// even where JSON would not care (whitespace). Otherwise `E_STATE_CORRUPT`.
pub fn read_manifest(path: &Path) -> Result<Value> {
  let corrupt = |reason: String| LoaError::StateCorrupt { path: path.display().to_string(), reason };
  let (dir, name) = open_parent(path)?;
  let bytes = dir
    .read(OsStr::new(&name), MAX_MANIFEST_BYTES)?
    .ok_or_else(|| LoaError::io("read", path, std::io::ErrorKind::NotFound.into()))?;
  let text = std::str::from_utf8(&bytes).map_err(|_| corrupt("not UTF-8".into()))?;
  let value = jcs::parse_strict(text).map_err(|e| corrupt(e.to_string()))?;
  let canonical = jcs::to_vec(&value).map_err(|e| corrupt(e.to_string()))?;
  let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
  if body != canonical.as_slice() {
    return Err(corrupt("not in canonical form (changed after it was written?)".into()));
  }
  Ok(value)
}

/// Writes a manifest (signed or not) atomically as canonical JSON and a newline; an existing
/// symlink or other non-regular file at `path` is refused, never written through.
pub fn write_manifest(path: &Path, value: &Value) -> Result<()> {
  let mut bytes = jcs::to_vec(value)?;
  bytes.push(b'\n');
  crate::fsutil::write_file_atomic(path, &bytes, None)
}

#[cfg(test)]
mod tests;
