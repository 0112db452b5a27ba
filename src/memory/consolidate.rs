//! Consolidation: the WAL of every session applied into the grimoire, then the two derived
//! files (learnings.json, then NOTES.md) brought up to date. One run at a time per WAL
//! directory (`memory-consolidate.lock`, `flock`ed).
//!
//! Under that lock, and before anything is applied: temp files that a writer killed in the
//! middle of an atomic write left behind are removed (only those of processes that no longer
//! exist, see [`StateDir::clean_stale_temps`]), the memory record directory is checked to be a
//! real directory inside the workspace, and learnings.json is read and checked, so a state file
//! that cannot be used stops the run before it changes anything.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::error::{LoaError, Result};
use crate::fsutil::{OpenMode, StateDir, StateFile};
use crate::lock::lock_file;
use crate::timestamp::format_ms;
use crate::wal::{self, ConsolidateOptions};

use super::layout::Layout;
use super::learnings;
use super::notes;
use super::types::{
  ConsolidateOutcome, MemoryKind, MemoryRecord, MAX_NOTES_BYTES, MEMORY_DIR, NOTES_MAX_DECISIONS, NOTES_MAX_SESSIONS,
};
use super::view::{aggregate_sessions, read_records};

const LOCK_FILE: &str = "memory-consolidate.lock";

/// Takes the consolidation lock of the WAL directory `wal`: the lock file is opened without
/// following a symlink, so it can never create or lock a file elsewhere.
fn lock(wal: &StateDir, layout: &Layout) -> Result<StateFile> {
  let file = wal.open_file(LOCK_FILE, OpenMode::CREATE)?;
  lock_file(file.file(), layout.lock_timeout, "memory consolidation")?;
  Ok(file)
}

/// Runs one consolidation (see the module docs).
pub(crate) fn run(layout: &Layout) -> Result<ConsolidateOutcome> {
  let root = layout.root()?;
  let dir = |relative, create| -> Result<StateDir> {
    layout.dir_in(&root, relative, create)?.ok_or_else(|| LoaError::Internal("directory vanished".into()))
  };
  let wal_dir = dir(&layout.wal, true)?;
  let _lock = lock(&wal_dir, layout)?;
  let grimoire = dir(&layout.grimoire, true)?;
  let notes_dir = dir(&layout.notes.dir, true)?;
  let learnings_dir = dir(&layout.learnings.dir, true)?;
  let memory_dir = grimoire.subdir(MEMORY_DIR)?;
  for d in [Some(&grimoire), Some(&notes_dir), Some(&learnings_dir), memory_dir.as_ref()].into_iter().flatten() {
    d.clean_stale_temps()?;
  }
  // State files are checked before anything is applied: a corrupt one is moved aside and
  // reported, a refused one left alone and reported, and this run changes nothing else.
  let store = learnings::load(&learnings_dir, &layout.learnings.name, true)?;
  if let Some(kind) = notes_dir.kind_of(&layout.notes.name)? {
    if kind != rustix::fs::FileType::RegularFile {
      return Err(LoaError::NotRegularFile {
        path: notes_dir.child_path(&layout.notes.name).display().to_string(),
        kind: crate::fsutil::kind_name(kind),
      });
    }
  }

  let applied = wal::consolidate(
    &layout.wal_path(),
    &layout.grimoire_path(),
    &ConsolidateOptions { prune: true, lock_timeout: layout.lock_timeout },
  )?;
  let records = match grimoire.subdir(MEMORY_DIR)? {
    Some(memory_dir) => read_records(&memory_dir, true)?,
    None => Vec::new(),
  };

  let mut outcome = ConsolidateOutcome {
    applied: applied.applied,
    conflicts: applied.conflicts.len(),
    memories: records.len(),
    ..Default::default()
  };
  let generated: Vec<Map<String, Value>> =
    records.iter().filter(|r| r.is_learning()).map(MemoryRecord::learning_entry).collect();
  let existed = store.is_some();
  let mut store = store.unwrap_or_default();
  let before = store.to_bytes();
  outcome.learnings = store.merge(&generated);
  outcome.learnings_total = store.entries().len();
  let after = store.to_bytes();
  if after != before || (!existed && !generated.is_empty()) {
    learnings_dir.write_atomic(&layout.learnings.name, &after, None)?;
  }

  // Read after the WAL is applied: a record may have written NOTES.md itself.
  let existing_notes = read_notes(&notes_dir, layout)?;
  if let Some(updated) = render_notes(existing_notes.as_deref(), &records) {
    if existing_notes.as_deref() != Some(updated.as_str()) {
      notes_dir.write_atomic(&layout.notes.name, updated.as_bytes(), None)?;
      outcome.notes_updated = true;
    }
  }
  Ok(outcome)
}

/// NOTES.md as text; `None` when there is none. Not UTF-8 is `E_STATE_CORRUPT` and the file is
/// left untouched; a symlink or other non-regular file `E_NOT_REGULAR_FILE`; over
/// [`MAX_NOTES_BYTES`] `E_TOO_LARGE`.
fn read_notes(dir: &StateDir, layout: &Layout) -> Result<Option<String>> {
  let Some(bytes) = dir.read(&layout.notes.name, MAX_NOTES_BYTES)? else { return Ok(None) };
  String::from_utf8(bytes).map(Some).map_err(|_| LoaError::StateCorrupt {
    path: dir.child_path(&layout.notes.name).display().to_string(),
    reason: "not valid UTF-8; left untouched".into(),
  })
}

/// The new NOTES.md, or `None` when there is nothing to write and no file yet.
pub(super) fn render_notes(existing: Option<&str>, records: &[MemoryRecord]) -> Option<String> {
  if records.is_empty() && existing.is_none() {
    return None;
  }
  let sessions = aggregate_sessions(records);
  let mut decisions: Vec<&MemoryRecord> = records.iter().filter(|r| r.kind == MemoryKind::Decision).collect();
  decisions.sort_by(|a, b| a.ts_ms().cmp(&b.ts_ms()).then_with(|| a.id.cmp(&b.id)));
  let skip = decisions.len().saturating_sub(NOTES_MAX_DECISIONS);
  let decisions = &decisions[skip..];

  let mut text = existing.unwrap_or(notes::TEMPLATE).to_string();
  let has_region = |text: &str, name| notes::region_body(text, name).is_some();
  if !sessions.is_empty() || has_region(&text, notes::SESSIONS) {
    let body: String = sessions
      .iter()
      .take(NOTES_MAX_SESSIONS)
      .map(|s| {
        let latest =
          s.records.first().map(|r| format!("{}: {}", r.kind, notes::excerpt(&notes::one_line(&r.content), 120)));
        let kinds: BTreeMap<&str, u64> = s.kinds.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        let kinds = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ");
        let line = notes::SessionLine {
          session_id: s.id.clone(),
          started_at: format_ms(s.first),
          last_active_at: format_ms(s.last),
          memories: s.records.len() as u64,
          latest: latest.unwrap_or_default(),
        };
        notes::render_session_line(&line, &kinds)
      })
      .collect();
    text = notes::set_region(&text, notes::SESSIONS, &|_| body.clone());
  }
  if !decisions.is_empty() || has_region(&text, notes::DECISIONS) {
    let render = |level: usize| {
      decisions
        .iter()
        .map(|d| {
          let first_line = d.content.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
          let confidence = d.confidence.map_or("-".to_string(), |c| c.to_string());
          format!(
            "{} {} - {}\n**Decision**: {}\n**Session**: `{}` · **Confidence**: {} · **Id**: `{}`\n",
            "#".repeat(level),
            d.timestamp,
            notes::excerpt(&notes::one_line(first_line), 60),
            notes::one_line(&d.content),
            d.session_id,
            confidence,
            &d.id[..12]
          )
        })
        .collect::<Vec<_>>()
        .join("\n")
    };
    text = notes::set_region(&text, notes::DECISIONS, &render);
  }
  Some(text)
}
