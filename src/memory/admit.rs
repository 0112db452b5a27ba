//! Which WAL records memory consolidation applies, and what it writes for each.
//!
//! A WAL segment is a file any process of the user can append to, and a pulled segment is
//! whatever another origin of the bucket shipped; neither is trusted to name the file it
//! writes. Memory consolidation therefore never writes a path taken from a record. A record
//! names a memory by its kind and content (the whole [`MemoryRecord`] in its data); the memory's
//! id is recomputed from that content exactly as capture computes it, and the only file written
//! for the record is `memory/<that id>.json`, with the bytes of the record as parsed and
//! serialised again (so nothing the checks did not see reaches the file). Everything else is
//! refused with `E_RECORD_REFUSED` and reported, its content never:
//!
//! - a `write` whose path is not exactly the record file of its memory: NOTES.md, SOUL.md,
//!   BEAUVOIR.md, a ledger file, another memory's id, `..`, an absolute path;
//! - a `write` whose data is not a memory (over [`MAX_RECORD_BYTES`], not JSON of a
//!   [`MemoryRecord`], another record version, an id that is not its content's hash, fields
//!   capture could not have written: see [`MemoryRecord::check`]);
//! - a `delete` (forgetting, the only way a memory leaves, writes tombstone records instead),
//!   and any other op that names a path.
//!
//! Records that write nothing (capture's `audit` records, `tombstone` records, any other op
//! without a path) are left alone, as the generic consolidation leaves them.
//! The same rule decides which WAL records count as memories for every other reader of the
//! log (the duplicate gate, reads before consolidation, forgetting, replication's tombstones):
//! see [`memory_of`].

use crate::error::LoaError;
use crate::wal::format::Record;
use crate::wal::Admission;

use super::types::{record_path, MemoryRecord, MAX_RECORD_BYTES};

/// The memory a WAL record writes, checked as consolidation checks it, or why it is refused.
/// `Ok(None)`: a record that writes nothing (an op other than `write` and `delete`, without a
/// path).
pub(super) fn checked(record: &Record) -> Result<Option<MemoryRecord>, &'static str> {
  match record.op.as_str() {
    "write" => {}
    "delete" => return Err("a delete: memories leave only through forget"),
    _ if record.path.is_none() => return Ok(None),
    _ => return Err("its op is neither write nor delete, yet it names a path"),
  }
  let data = record.data.as_deref().ok_or("a write without data")?;
  if data.len() as u64 > MAX_RECORD_BYTES {
    return Err("its data is over the memory record size limit");
  }
  let memory = serde_json::from_slice::<MemoryRecord>(data).map_err(|_| "its data is not a memory record")?;
  memory.check()?;
  if record.path.as_deref() != Some(record_path(&memory.id).as_str()) {
    return Err("its path is not the record file of the memory its content derives");
  }
  Ok(Some(memory))
}

/// The memory a WAL record writes when consolidation would apply it; `None` for every other
/// record (refused or writing nothing).
pub(super) fn memory_of(record: &Record) -> Option<MemoryRecord> {
  checked(record).ok().flatten()
}

/// The memory id a WAL record writes when consolidation would apply it.
pub(super) fn memory_id_of(record: &Record) -> Option<String> {
  memory_of(record).map(|m| m.id)
}

/// The id of the memory whose text a `write` record holds, whatever path it names: what
/// forgetting looks for, so that no record holding a forgotten memory's text stays in the log,
/// a refused one included. Knowing the id takes knowing the text, so this lets nobody forget a
/// memory they could not name.
pub(super) fn content_id_of(record: &Record) -> Option<String> {
  let data = record.data.as_deref().filter(|d| record.op == "write" && d.len() as u64 <= MAX_RECORD_BYTES)?;
  let memory = serde_json::from_slice::<MemoryRecord>(data).ok()?;
  Some(crate::gates::content_hash(&memory.content))
}

/// The admission rule memory consolidation gives [`crate::wal::consolidate_with`].
pub(super) fn admit(record: Record) -> Admission {
  match checked(&record) {
    Ok(None) => Admission::Skip,
    Ok(Some(memory)) => match memory.file_bytes() {
      Ok(bytes) => Admission::Apply(Record { path: Some(record_path(&memory.id)), data: Some(bytes), ..record }),
      Err(e) => Admission::Refuse(record, e),
    },
    Err(reason) => Admission::Refuse(record, LoaError::RecordRefused(reason.into())),
  }
}
