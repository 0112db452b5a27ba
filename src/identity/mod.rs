//! The agent's identity: BEAUVOIR.md (written by humans) parsed as Markdown, and SOUL.md (what
//! the agent reads at bootstrap) generated from it.
//!
//! Guarantees (SPEC item 13, issue 15):
//!
//! - **Structure, not text.** Headings are found by a CommonMark parser (`pulldown-cmark`), so a
//!   `## ` line inside a code fence is not a heading. The sections read are Identity, Core
//!   Principles, Operational Stance, Interaction Style, Boundaries (with its Won't Do and Always
//!   Do lists), Self-Evolution and Recovery Protocol, recognised by meaning
//!   (`## Core Principles (Why I Behave This Way)`, `### What I Won't Do`, `## Core Behaviors`;
//!   [`SYNONYMS`]), at whatever heading level the document uses (issue 28).
//! - **Nothing dropped.** Each section reaches SOUL.md as the Markdown it was written in,
//!   sub-headings, tables and fences included; a section not recognised is carried too, under its
//!   own heading, and named in the report (`unrecognized_sections`). The report's `sections` is
//!   what SOUL.md carries, never what was merely expected (the original reported sections it had
//!   dropped).
//! - **Never stale.** SOUL.md is regenerated whenever BEAUVOIR.md's SHA-256 differs from the one
//!   recorded at the last generation (not only when SOUL.md is missing), written atomically.
//! - **Integrity first.** Before anything is generated, BEAUVOIR.md is checked against the signed
//!   manifest under the caller's pinned keys ([`Integrity::Manifest`]): signature, and its entry's
//!   SHA-256. A BEAUVOIR.md that does not verify generates nothing (`E_SIGNATURE_INVALID`).
//! - **Hand edits are reported, not overwritten.** The SHA-256 of what was generated is recorded
//!   (`<state_dir>/soul.json`); a SOUL.md whose bytes are neither that nor what would be generated
//!   now was edited by someone: it is left alone and reported ([`SoulStatus::HandEdited`]).

mod parse;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{scrub_quoted, LoaError, Result};
use crate::fsutil::{relative_components, StateDir};
use crate::sign::manifest::{read_manifest, verify_signature, TrustedKey};

pub use parse::{heading_key, parse_beauvoir, IdentityDocument, OtherSection, Principle, SECTIONS, SYNONYMS};

/// Largest BEAUVOIR.md / SOUL.md read.
pub const MAX_IDENTITY_BYTES: u64 = 1024 * 1024;
/// Largest SOUL.md read back: what is generated from a BEAUVOIR.md of at most
/// [`MAX_IDENTITY_BYTES`] (every byte carried once, a heading at most a few bytes longer, so well
/// under twice the source).
pub const MAX_SOUL_BYTES: u64 = 4 * MAX_IDENTITY_BYTES;
/// Version of the generation record this code writes and reads.
pub const SOUL_STATE_VERSION: u32 = 1;
/// The generation record's file name in the state directory.
pub const SOUL_STATE_FILE: &str = "soul.json";

/// How BEAUVOIR.md is checked before generation.
#[derive(Debug, Clone)]
pub enum Integrity {
  /// The signed manifest (workspace-relative path) must verify under `keys` (pinned outside
  /// the workspace), list BEAUVOIR.md under `entry` (its path relative to the manifest's root),
  /// and give it the SHA-256 of the bytes read.
  Manifest { manifest_path: String, entry: String, keys: Vec<TrustedKey> },
  /// No check: for a template identity or tests, chosen explicitly by the caller.
  Unchecked,
}

/// Options of [`generate_soul`].
#[derive(Debug, Clone)]
pub struct SoulOptions {
  pub workspace_dir: PathBuf,
  /// Workspace-relative BEAUVOIR.md (`grimoires/loa/BEAUVOIR.md`).
  pub beauvoir_path: String,
  /// Workspace-relative SOUL.md (`SOUL.md`).
  pub soul_path: String,
  /// Where the generation record is kept (`.loa/identity`).
  pub state_dir: String,
  pub integrity: Integrity,
  /// Report what would happen, write nothing.
  pub check_only: bool,
}

impl Default for SoulOptions {
  fn default() -> Self {
    SoulOptions {
      workspace_dir: PathBuf::new(),
      beauvoir_path: "grimoires/loa/BEAUVOIR.md".into(),
      soul_path: "SOUL.md".into(),
      state_dir: ".loa/identity".into(),
      integrity: Integrity::Unchecked,
      check_only: false,
    }
  }
}

/// What [`generate_soul`] found or did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SoulStatus {
  /// SOUL.md was (re)written.
  Generated,
  /// SOUL.md already is what BEAUVOIR.md generates.
  UpToDate,
  /// Check only: SOUL.md is missing or stale and would be written.
  Stale,
  /// SOUL.md holds bytes we did not generate: left alone.
  HandEdited,
}

/// The report of [`generate_soul`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SoulReport {
  pub status: SoulStatus,
  pub beauvoir_sha256: String,
  /// SHA-256 of the SOUL.md content generated from the current BEAUVOIR.md.
  pub soul_sha256: String,
  /// Known sections SOUL.md carries with their content, by canonical name, in SOUL.md's order.
  pub sections: Vec<String>,
  /// Known sections SOUL.md does not carry (absent or empty in BEAUVOIR.md).
  pub missing_sections: Vec<String>,
  /// Headings of BEAUVOIR.md's sections that are none of the known ones: carried into SOUL.md
  /// as written, after the known ones.
  pub unrecognized_sections: Vec<String>,
}

/// The generation record (`soul.json`), canonical JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SoulState {
  version: u32,
  beauvoir_sha256: String,
  soul_sha256: String,
}

fn sha256_hex(bytes: &[u8]) -> String {
  hex::encode(Sha256::digest(bytes))
}

/// Opens the directory holding the workspace-relative file `rel`, and its name.
fn parent_of(workspace: &StateDir, rel: &str, create: bool) -> Result<(Option<StateDir>, std::ffi::OsString)> {
  let parts = relative_components(Path::new(rel))?;
  let (name, dirs) = parts.split_last().expect("non-empty");
  if dirs.is_empty() {
    return Ok((Some(workspace.try_clone()?), name.clone()));
  }
  Ok((workspace.descend(&dirs.iter().collect::<PathBuf>(), create)?, name.clone()))
}

fn check_integrity(workspace_dir: &Path, bytes: &[u8], integrity: &Integrity) -> Result<()> {
  let Integrity::Manifest { manifest_path, entry, keys } = integrity else { return Ok(()) };
  if keys.is_empty() {
    return crate::error::invalid("the identity integrity check needs at least one pinned key");
  }
  relative_components(Path::new(manifest_path))?;
  let value = read_manifest(&workspace_dir.join(manifest_path))?;
  let v = verify_signature(&value, keys);
  if !v.ok {
    return Err(LoaError::SignatureInvalid(
      "the manifest covering BEAUVOIR.md does not verify against the pinned keys".into(),
    ));
  }
  let listed = value
    .get("files")
    .and_then(Value::as_array)
    .and_then(|files| files.iter().find(|f| f.get("path").and_then(Value::as_str) == Some(entry.as_str())))
    .and_then(|f| f.get("sha256").and_then(Value::as_str))
    .ok_or_else(|| LoaError::SignatureInvalid("BEAUVOIR.md is not covered by the signed manifest".into()))?;
  if listed != sha256_hex(bytes) {
    return Err(LoaError::SignatureInvalid("BEAUVOIR.md differs from the signed manifest".into()));
  }
  Ok(())
}

/// Checks BEAUVOIR.md, parses it and brings SOUL.md up to date (see the module docs).
pub fn generate_soul(options: &SoulOptions) -> Result<SoulReport> {
  let workspace = StateDir::open_root(&options.workspace_dir)?;
  let (bdir, bname) = parent_of(&workspace, &options.beauvoir_path, false)?;
  let beauvoir = bdir.map(|d| d.read(&bname, MAX_IDENTITY_BYTES)).transpose()?.flatten().ok_or_else(|| {
    LoaError::io("read", &options.workspace_dir.join(&options.beauvoir_path), std::io::ErrorKind::NotFound.into())
  })?;
  check_integrity(&options.workspace_dir, &beauvoir, &options.integrity)?;
  let text =
    std::str::from_utf8(&beauvoir).map_err(|_| LoaError::InvalidArgument("BEAUVOIR.md is not UTF-8".into()))?;
  let doc = parse_beauvoir(text);
  let beauvoir_sha256 = sha256_hex(&beauvoir);
  let rendered = render_soul(&doc, &beauvoir_sha256);
  if rendered.sections.is_empty() {
    return crate::error::invalid(
      "BEAUVOIR.md has none of the identity sections with content (## Identity, ## Core Principles, ...)",
    );
  }
  let soul = rendered.text;
  let soul_sha256 = sha256_hex(soul.as_bytes());
  let mut report = SoulReport {
    status: SoulStatus::UpToDate,
    beauvoir_sha256: beauvoir_sha256.clone(),
    soul_sha256: soul_sha256.clone(),
    missing_sections: SECTIONS
      .iter()
      .filter(|s| !rendered.sections.iter().any(|f| f == *s))
      .map(|s| s.to_string())
      .collect(),
    sections: rendered.sections,
    unrecognized_sections: rendered.unrecognized_sections,
  };

  let (sdir, sname) = parent_of(&workspace, &options.soul_path, !options.check_only)?;
  let current = match &sdir {
    Some(d) => d.read(&sname, MAX_SOUL_BYTES)?,
    None => None,
  };
  let state_dir = workspace.descend(Path::new(&options.state_dir), !options.check_only)?;
  let recorded = match &state_dir {
    Some(d) => read_state(d)?,
    None => None,
  };
  let current_sha = current.as_deref().map(sha256_hex);
  if current_sha.as_deref() == Some(soul_sha256.as_str()) {
    // Already what would be generated (also after a crash between writing SOUL.md and the
    // record): only the record may need catching up.
    if !options.check_only
      && recorded.as_ref().map(|r| (&r.beauvoir_sha256, &r.soul_sha256)) != Some((&beauvoir_sha256, &soul_sha256))
    {
      write_state(state_dir.as_ref().expect("created"), &beauvoir_sha256, &soul_sha256)?;
    }
    return Ok(report);
  }
  let ours = match (&current_sha, &recorded) {
    (None, _) => true,
    (Some(sha), Some(r)) => *sha == r.soul_sha256,
    (Some(_), None) => false,
  };
  if !ours {
    report.status = SoulStatus::HandEdited;
    return Ok(report);
  }
  if options.check_only {
    report.status = SoulStatus::Stale;
    return Ok(report);
  }
  sdir.expect("created").write_atomic(&sname, soul.as_bytes(), None)?;
  write_state(state_dir.as_ref().expect("created"), &beauvoir_sha256, &soul_sha256)?;
  report.status = SoulStatus::Generated;
  Ok(report)
}

/// Reads the generation record; a corrupt one is moved aside and treated as absent (so a SOUL.md
/// it would have vouched for is reported as hand-edited, never overwritten).
fn read_state(dir: &StateDir) -> Result<Option<SoulState>> {
  let Some(bytes) = dir.read(SOUL_STATE_FILE, 64 * 1024)? else { return Ok(None) };
  let parsed = serde_json::from_slice::<SoulState>(&bytes).map_err(|e| scrub_quoted(&e.to_string()));
  match parsed {
    Ok(s) if s.version == SOUL_STATE_VERSION => Ok(Some(s)),
    _ => {
      dir.quarantine(SOUL_STATE_FILE)?;
      Ok(None)
    }
  }
}

fn write_state(dir: &StateDir, beauvoir_sha256: &str, soul_sha256: &str) -> Result<()> {
  let state =
    SoulState { version: SOUL_STATE_VERSION, beauvoir_sha256: beauvoir_sha256.into(), soul_sha256: soul_sha256.into() };
  let mut bytes = crate::jcs::to_vec(&serde_json::to_value(&state).map_err(|e| LoaError::Internal(e.to_string()))?)?;
  bytes.push(b'\n');
  dir.write_atomic(SOUL_STATE_FILE, &bytes, None)
}

/// SOUL.md and what it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedSoul {
  pub text: String,
  /// Known sections written, with content, in order.
  pub sections: Vec<String>,
  /// Titles of the unrecognised sections written.
  pub unrecognized_sections: Vec<String>,
}

/// SOUL.md for `doc`: deterministic (no time in it), the text before the first section, every
/// known section with content in a fixed order, then every other section as written, and the
/// source's hash in the footer. What it lists as carried is read off what it writes.
pub fn render_soul(doc: &IdentityDocument, beauvoir_sha256: &str) -> RenderedSoul {
  let mut text = String::from("# Soul\n\nYou embody the following identity and principles.\n");
  let mut sections = Vec::new();
  let mut unrecognized_sections = Vec::new();
  if !doc.preamble.is_empty() {
    text.push_str(&format!("\n{}\n", doc.preamble));
  }
  for (name, body) in SECTIONS.iter().zip(&doc.texts) {
    if !body.trim().is_empty() {
      text.push_str(&format!("\n## {name}\n\n{body}\n"));
      sections.push(name.to_string());
    }
  }
  for other in &doc.other_sections {
    if !other.body.trim().is_empty() {
      text.push_str(&format!("\n## {}\n\n{}\n", other.title, other.body));
      unrecognized_sections.push(other.title.clone());
    }
  }
  text.push_str(&format!(
    "\n---\n*Generated by LOA from BEAUVOIR.md - DO NOT EDIT*\n*Checksum: {}*\n",
    &beauvoir_sha256[..16.min(beauvoir_sha256.len())]
  ));
  RenderedSoul { text, sections, unrecognized_sections }
}

#[cfg(test)]
mod tests;
