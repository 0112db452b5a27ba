//! WAL segments as they are shipped and restored.
//!
//! What is shipped of a segment is its header and its complete, checksum-valid records: the
//! bytes up to the scan's `valid_len`. For the active (newest) segment of a session that cuts
//! off a torn tail (a write in progress or interrupted) and the zeros the writer allocates ahead;
//! a record acknowledged later is shipped by a later push, as a longer object. A sealed segment
//! must scan clean; a damaged one is reported and not shipped.
//!
//! What is written back is checked first: digest and size as the index recorded, a header whose
//! first seq is the entry's, records all of the entry's session, in order, ending at its last
//! seq, nothing after them. Only then is anything written, atomically, through the core's file
//! layer.

use std::collections::HashMap;
use std::path::Path;

use loa_core::fsutil::{OpenMode, StateDir};
use loa_core::wal::format::{encode_header, encode_record, scan_segment, Record, SegmentHeader, Tail};
use loa_core::wal::reader::{read_segment_file, segment_file_name, segments_in, session_ids, SESSIONS_DIR};
use loa_core::{LoaError, Result};
use sha2::{Digest, Sha256};

use crate::index::SegmentEntry;

/// A local segment ready to ship.
pub struct Shippable {
  pub entry: SegmentEntry,
  pub bytes: Vec<u8>,
}

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
  hex::encode(Sha256::digest(bytes))
}

/// The sessions of the WAL at `wal_dir` (relative to `root`), each with its segment files,
/// oldest first; empty when there is no WAL.
pub fn local_sessions(root: &StateDir, wal_dir: &Path) -> Result<Vec<(String, StateDir, Vec<String>)>> {
  let Some(wal) = crate::local::below(root, wal_dir, false)? else { return Ok(Vec::new()) };
  let Some(sessions) = wal.subdir(SESSIONS_DIR)? else { return Ok(Vec::new()) };
  let mut out = Vec::new();
  for id in session_ids(&sessions)? {
    let sdir = sessions.subdir(&id)?.ok_or_else(|| LoaError::Internal("a listed session vanished".into()))?;
    let names = segments_in(&sdir)?
      .into_iter()
      .map(|s| if s.is_regular() { Ok(s.name) } else { Err(s.not_regular()) })
      .collect::<Result<Vec<_>>>()?;
    out.push((id, sdir, names));
  }
  Ok(out)
}

/// Reads one segment and cuts it to what may be shipped: `Ok(None)` when it vanished (retention)
/// or holds no complete record yet; `Err` with a reason when it is damaged (a sealed segment
/// that does not scan clean, or damage anywhere but a torn tail).
pub fn shippable(session: &str, sdir: &StateDir, name: &str, sealed: bool) -> Result<Option<Shippable>, String> {
  let file = match sdir.open_file_if_exists(name, OpenMode::READ) {
    Ok(Some(f)) => f,
    Ok(None) => return Ok(None),
    Err(e) => return Err(format!("{}: {e}", e.code())),
  };
  // The core's segment reader: a write in progress in the live segment is a torn tail, never
  // damage, however the kernel splits the read.
  let (bytes, scan) = read_segment_file(&file).map_err(|e| format!("{}: {e}", e.code()))?;
  match (&scan.tail, sealed) {
    (Tail::Clean, _) => {}
    (Tail::Torn { .. }, false) => {}
    (Tail::Torn { offset, .. }, true) => return Err(format!("sealed segment ends in a torn record at byte {offset}")),
    (Tail::Corrupt { offset, reason }, _) => return Err(format!("damaged at byte {offset}: {reason}")),
  }
  let (Some(header), Some(first), Some(last)) = (scan.header, scan.records.first(), scan.records.last()) else {
    return Ok(None);
  };
  if scan.records.iter().any(|r| r.session_id != session) {
    return Err("holds a record of another session".into());
  }
  let mut bytes = bytes;
  bytes.truncate(scan.valid_len as usize);
  let entry = SegmentEntry {
    session: session.to_string(),
    first_seq: header.first_seq.min(first.seq),
    last_seq: last.seq,
    sealed,
    size: bytes.len() as u64,
    sha256: sha256_hex(&bytes),
    rewritten: false,
  };
  Ok(Some(Shippable { entry, bytes }))
}

/// Checks a downloaded segment against its index entry and returns its header and records:
/// `E_REPLICA_CORRUPT` (naming `key`) unless everything matches.
pub fn check_downloaded(bytes: &[u8], entry: &SegmentEntry, key: &str) -> Result<(SegmentHeader, Vec<Record>)> {
  let corrupt = |reason: &str| LoaError::ReplicaCorrupt { key: key.to_string(), reason: reason.to_string() };
  if bytes.len() as u64 != entry.size {
    return Err(corrupt("size differs from the index"));
  }
  if sha256_hex(bytes) != entry.sha256 {
    return Err(corrupt("sha256 differs from the index"));
  }
  let scan = scan_segment(bytes);
  if scan.tail != Tail::Clean || scan.valid_len != bytes.len() as u64 {
    return Err(corrupt("not a clean segment"));
  }
  let header = scan.header.ok_or_else(|| corrupt("bad segment header"))?;
  if header.first_seq != entry.first_seq {
    return Err(corrupt("first seq differs from the index"));
  }
  if scan.records.iter().any(|r| r.session_id != entry.session) {
    return Err(corrupt("holds a record of another session"));
  }
  if scan.records.last().map(|r| r.seq) != Some(entry.last_seq) {
    return Err(corrupt("last seq differs from the index"));
  }
  Ok((header, scan.records))
}

/// A segment of `records` (all re-labelled as `session`) under `header`.
pub fn encode_segment(header: &SegmentHeader, records: &[Record], session: &str) -> Vec<u8> {
  let mut out = encode_header(header).to_vec();
  for record in records {
    if record.session_id == session {
      encode_record(record, &mut out);
    } else {
      let relabelled = Record { session_id: session.to_string(), ..record.clone() };
      encode_record(&relabelled, &mut out);
    }
  }
  out
}

/// The local session id of `origin`'s session `session`: `<origin>.<session>`, or, when that
/// would pass the 128-byte limit, `<origin>.<first 40 hex digits of sha256(session)>`. It can
/// never equal a session id of this machine that has no `.`, and two origins never share one.
pub fn mirror_session(origin: &str, session: &str) -> String {
  let id = format!("{origin}.{session}");
  if id.len() <= loa_core::wal::format::MAX_SESSION_ID_BYTES {
    id
  } else {
    format!("{origin}.{}", &sha256_hex(session.as_bytes())[..40])
  }
}

/// The first seq a segment file's name (`<20 digits>.wal`) gives; `None` for another name.
pub fn first_seq_of(name: &str) -> Option<u64> {
  let digits = name.strip_suffix(".wal")?;
  if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
    return None;
  }
  digits.parse().ok()
}

/// Writes a segment file `sessions/<session>/<first_seq>.wal` below the WAL directory,
/// creating the directories (never through a symlink), atomically.
pub fn write_segment(root: &StateDir, wal_dir: &Path, session: &str, first_seq: u64, bytes: &[u8]) -> Result<()> {
  let wal =
    crate::local::below(root, wal_dir, true)?.ok_or_else(|| LoaError::Internal("descend(create) gave None".into()))?;
  let sessions = wal.create_subdir(SESSIONS_DIR)?;
  let sdir = sessions.create_subdir(session)?;
  sdir.write_atomic(segment_file_name(first_seq), bytes, None)
}

/// The tombstone records (`loa forget` replaced the record at that seq) among the complete
/// records of a local segment (a damaged segment's records before the damage still count);
/// none when it does not exist.
fn tombstone_records(sdir: &StateDir, name: &str) -> Result<Vec<Record>> {
  let Some(file) = sdir.open_file_if_exists(name, OpenMode::READ)? else { return Ok(Vec::new()) };
  let (_, scan) = read_segment_file(&file)?;
  Ok(scan.records.into_iter().filter(|r| r.op == loa_core::memory::TOMBSTONE_OP).collect())
}

/// The seqs of the tombstone records of a local segment; none when it vanished or cannot be
/// read.
pub fn tombstone_seqs(sdir: &StateDir, name: &str) -> Vec<u64> {
  tombstone_records(sdir, name).unwrap_or_default().into_iter().map(|r| r.seq).collect()
}

/// Carries the tombstone records of the local copy of a mirrored segment (session `session`,
/// first seq `first_seq`, below the WAL directory `wal_dir`) into `records`, the newer copy
/// that is about to replace it: a record of `records` at the seq and time of a local tombstone
/// is the record this workspace forgot, and is replaced by that tombstone, so that what was
/// forgotten here never comes back (and push still finds the tombstone for its forget request).
/// A tombstone in `records` already stays as it is. Returns how many records were replaced;
/// `Err` when the local copy exists but cannot be read (then it must not be replaced).
pub fn keep_tombstones(
  root: &StateDir,
  wal_dir: &Path,
  session: &str,
  first_seq: u64,
  records: &mut [Record],
) -> Result<u64> {
  let Some(wal) = crate::local::below(root, wal_dir, false)? else { return Ok(0) };
  let Some(sessions) = wal.subdir(SESSIONS_DIR)? else { return Ok(0) };
  let Some(sdir) = sessions.subdir(session)? else { return Ok(0) };
  let local: HashMap<u64, Record> =
    tombstone_records(&sdir, &segment_file_name(first_seq))?.into_iter().map(|r| (r.seq, r)).collect();
  let mut kept = 0;
  for record in records.iter_mut().filter(|r| r.op != loa_core::memory::TOMBSTONE_OP) {
    // Same seq and time: the record forgotten here (the tombstone keeps both). Another time
    // at that seq is another record (the origin's history forked), which the tombstone is not.
    if let Some(tomb) = local.get(&record.seq).filter(|t| t.ts_ms == record.ts_ms) {
      *record = Record { session_id: record.session_id.clone(), ..tomb.clone() };
      kept += 1;
    }
  }
  Ok(kept)
}

#[cfg(test)]
mod tests {
  use super::*;

  fn record(seq: u64, session: &str) -> Record {
    Record {
      seq,
      ts_ms: 1_700_000_000_000 + seq as i64,
      session_id: session.into(),
      op: "write".into(),
      path: Some(format!("memory/{seq}.json")),
      meta: None,
      data: Some(vec![b'x'; 10]),
    }
  }

  fn entry_of(bytes: &[u8], first: u64, last: u64) -> SegmentEntry {
    SegmentEntry {
      session: "s".into(),
      first_seq: first,
      last_seq: last,
      sealed: true,
      size: bytes.len() as u64,
      sha256: sha256_hex(bytes),
      rewritten: false,
    }
  }

  #[test]
  fn a_torn_active_segment_ships_its_complete_records_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = StateDir::open_root(dir.path()).unwrap();
    let header = SegmentHeader { created_ms: 1, first_seq: 1 };
    let mut bytes = encode_segment(&header, &[record(1, "s"), record(2, "s")], "s");
    let good_len = bytes.len();
    let mut torn = Vec::new();
    encode_record(&record(3, "s"), &mut torn);
    bytes.extend_from_slice(&torn[..torn.len() - 3]);
    write_segment(&root, Path::new("wal"), "s", 1, &bytes).unwrap();
    let sessions = local_sessions(&root, Path::new("wal")).unwrap();
    let (_, sdir, names) = &sessions[0];
    let shipped = shippable("s", sdir, &names[0], false).unwrap().unwrap();
    assert_eq!(shipped.bytes.len(), good_len);
    assert_eq!((shipped.entry.first_seq, shipped.entry.last_seq), (1, 2));
    // Sealed, the same bytes are damage, never shipped.
    assert!(shippable("s", sdir, &names[0], true).is_err());
    // And what was shipped checks out when it comes back.
    let (h, records) = check_downloaded(&shipped.bytes, &shipped.entry, "k").unwrap();
    assert_eq!((h.first_seq, records.len()), (1, 2));
  }

  #[test]
  fn downloads_that_differ_from_the_index_are_refused() {
    let header = SegmentHeader { created_ms: 1, first_seq: 1 };
    let bytes = encode_segment(&header, &[record(1, "s"), record(2, "s")], "s");
    let entry = entry_of(&bytes, 1, 2);
    let mut flipped = bytes.clone();
    flipped[40] ^= 1;
    let other = encode_segment(&header, &[record(1, "t")], "t");
    for (bad, e) in [
      (flipped.clone(), entry.clone()),
      (flipped.clone(), entry_of(&flipped, 1, 2)),
      (bytes.clone(), SegmentEntry { last_seq: 3, ..entry.clone() }),
      (bytes.clone(), SegmentEntry { first_seq: 2, ..entry.clone() }),
      (other.clone(), entry_of(&other, 1, 1)),
    ] {
      assert_eq!(check_downloaded(&bad, &e, "k").unwrap_err().code(), "E_REPLICA_CORRUPT");
    }
  }

  #[test]
  fn a_newer_copy_of_a_mirrored_segment_keeps_the_tombstones_of_the_local_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = StateDir::open_root(dir.path()).unwrap();
    let wal = Path::new("wal");
    let header = SegmentHeader { created_ms: 1, first_seq: 1 };
    let tomb = |r: &Record| Record {
      op: loa_core::memory::TOMBSTONE_OP.into(),
      path: None,
      data: None,
      meta: Some(r#"{"tombstone":"t"}"#.into()),
      ..r.clone()
    };
    // Nothing here yet: nothing to keep.
    let mut fetched: Vec<Record> = (1..=4).map(|s| record(s, "b.s")).collect();
    assert_eq!(keep_tombstones(&root, wal, "b.s", 1, &mut fetched).unwrap(), 0);
    // Here: records 1..3, the user forgot 2 and 3.
    let local = [record(1, "b.s"), tomb(&record(2, "b.s")), tomb(&record(3, "b.s"))];
    write_segment(&root, wal, "b.s", 1, &encode_segment(&header, &local, "b.s")).unwrap();
    // The origin's grown copy: 1..4, its record 3 of another time (a forked history), and
    // record 1 forgotten there.
    let mut fetched: Vec<Record> = (1..=4).map(|s| record(s, "b.s")).collect();
    fetched[0] = tomb(&fetched[0]);
    fetched[2].ts_ms += 1;
    let before = fetched.clone();
    assert_eq!(keep_tombstones(&root, wal, "b.s", 1, &mut fetched).unwrap(), 1);
    assert_eq!(fetched[1], local[1]);
    for i in [0, 2, 3] {
      assert_eq!(fetched[i], before[i]);
    }
    // Another segment of the session, or another session: nothing of this one applies.
    let mut other: Vec<Record> = (1..=4).map(|s| record(s, "b.s")).collect();
    assert_eq!(keep_tombstones(&root, wal, "b.s", 2, &mut other).unwrap(), 0);
    assert_eq!(keep_tombstones(&root, wal, "c.s", 1, &mut other).unwrap(), 0);
  }

  #[test]
  fn mirror_sessions_stay_valid_session_ids() {
    assert_eq!(mirror_session("m1", "cli"), "m1.cli");
    let long = mirror_session("m1", &"a".repeat(128));
    assert!(loa_core::wal::reader::validate_session_id(&long).is_ok());
    assert_ne!(long, mirror_session("m1", &"b".repeat(128)));
  }

  #[test]
  fn segment_names_give_their_first_seq() {
    assert_eq!(first_seq_of(&segment_file_name(7)), Some(7));
    for bad in ["7.wal", "00000000000000000007", "0000000000000000000x.wal", "../00000000000000000007.wal"] {
      assert_eq!(first_seq_of(bad), None, "{bad}");
    }
  }
}
