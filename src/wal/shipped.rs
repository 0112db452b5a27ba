//! What replication has shipped of each session: `.loa/replicate/shipped.json`, written by
//! `loa-replicate push` after the origin's index is in the bucket, read by consolidation's
//! retention, which then removes no segment holding a record above its session's mark (the way
//! Litestream keeps SQLite from checkpointing past what it has shipped).
//!
//! ```text
//! {"version": 1, "sessions": {"<session>": <highest seq such that every record of the session up to it is in the bucket>}}
//! ```
//!
//! The core owns the format; the replicate binary writes it through [`write_shipped`]. A file
//! that cannot be used (missing, damaged, another version, over [`MAX_SHIPPED_BYTES`], not a
//! regular file, below a symlinked directory) means "nothing shipped" to retention: it keeps
//! every segment, and the next push writes the file again.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{LoaError, Result};
use crate::fsutil::StateDir;

/// Where the replicate binary keeps its state in a workspace, relative to it.
pub const REPLICATE_STATE_DIR: &str = ".loa/replicate";
/// The file's name in [`REPLICATE_STATE_DIR`].
pub const SHIPPED_FILE: &str = "shipped.json";
/// The version written and read.
pub const SHIPPED_VERSION: u32 = 1;
/// The largest file read (16 MiB, about 100,000 sessions): `E_TOO_LARGE` beyond.
pub const MAX_SHIPPED_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Shipped {
  version: u32,
  sessions: BTreeMap<String, u64>,
}

fn corrupt(dir: &StateDir, reason: impl Into<String>) -> LoaError {
  LoaError::StateCorrupt { path: dir.child_path(SHIPPED_FILE).display().to_string(), reason: reason.into() }
}

/// The marks in `dir` (the replicate state directory); `None` when there is no file. A file
/// that is not a regular file is `E_NOT_REGULAR_FILE`, over the limit `E_TOO_LARGE`, one that
/// does not parse or has another version `E_STATE_CORRUPT`.
pub fn read_shipped(dir: &StateDir) -> Result<Option<BTreeMap<String, u64>>> {
  let Some(bytes) = dir.read(SHIPPED_FILE, MAX_SHIPPED_BYTES)? else { return Ok(None) };
  let file: Shipped = serde_json::from_slice(&bytes).map_err(|e| corrupt(dir, e.to_string()))?;
  if file.version != SHIPPED_VERSION {
    return Err(corrupt(dir, format!("version {} is not version {SHIPPED_VERSION}", file.version)));
  }
  Ok(Some(file.sessions))
}

/// The marks of the workspace `root` with its replicate state directory `state_dir` (relative),
/// for retention: anything that keeps them from being read is "nothing shipped" (empty).
pub fn shipped_marks(root: &StateDir, state_dir: &Path) -> BTreeMap<String, u64> {
  let dir = if state_dir.as_os_str().is_empty() { root.try_clone().map(Some) } else { root.descend(state_dir, false) };
  match dir {
    Ok(Some(dir)) => read_shipped(&dir).ok().flatten().unwrap_or_default(),
    _ => BTreeMap::new(),
  }
}

/// Replaces the marks in `dir` atomically; a name there that is not a regular file (a symlink,
/// a FIFO) is refused with `E_NOT_REGULAR_FILE`, never written through.
pub fn write_shipped(dir: &StateDir, sessions: &BTreeMap<String, u64>) -> Result<()> {
  let file = Shipped { version: SHIPPED_VERSION, sessions: sessions.clone() };
  let mut bytes = serde_json::to_vec_pretty(&file).map_err(|e| LoaError::Internal(e.to_string()))?;
  bytes.push(b'\n');
  dir.write_atomic(SHIPPED_FILE, &bytes, None)
}

#[cfg(test)]
mod tests {
  use super::*;

  fn state(ws: &Path) -> StateDir {
    let root = StateDir::open_root(ws).unwrap();
    root.descend(Path::new(REPLICATE_STATE_DIR), true).unwrap().unwrap()
  }

  #[test]
  fn retention_keeps_segments_above_the_shipped_marks() {
    use crate::wal::format::{encode_header, encode_record, Record, SegmentHeader};
    use crate::wal::{consolidate, ConsolidateOptions};
    // Session `a` with one record per segment, seqs 1..=4 (the newest is never removed).
    let write = |wal: &Path| {
      let dir = wal.join(crate::wal::reader::SESSIONS_DIR).join("a");
      std::fs::create_dir_all(&dir).unwrap();
      for seq in 1..=4u64 {
        let mut bytes = encode_header(&SegmentHeader { created_ms: 1, first_seq: seq }).to_vec();
        let record = Record {
          seq,
          ts_ms: 1_700_000_000_000 + seq as i64,
          session_id: "a".into(),
          op: "write".into(),
          path: Some(format!("notes/{seq}.md")),
          meta: None,
          data: Some(b"x".to_vec()),
        };
        encode_record(&record, &mut bytes);
        std::fs::write(dir.join(crate::wal::reader::segment_file_name(seq)), bytes).unwrap();
      }
      dir
    };
    let left = |shipped: Option<BTreeMap<String, u64>>| {
      let ws = tempfile::tempdir().unwrap();
      let dir = write(&ws.path().join("wal"));
      let options = ConsolidateOptions { shipped, ..Default::default() };
      consolidate(&ws.path().join("wal"), &ws.path().join("t"), &options).unwrap();
      std::fs::read_dir(dir).unwrap().count()
    };
    assert_eq!(left(None), 1);
    assert_eq!(left(Some(BTreeMap::new())), 4);
    assert_eq!(left(Some(BTreeMap::from([("b".to_string(), 9)]))), 4);
    assert_eq!(left(Some(BTreeMap::from([("a".to_string(), 2)]))), 2);
    assert_eq!(left(Some(BTreeMap::from([("a".to_string(), 9)]))), 1);
  }

  #[test]
  fn marks_round_trip_and_missing_is_none() {
    let ws = tempfile::tempdir().unwrap();
    let dir = state(ws.path());
    assert_eq!(read_shipped(&dir).unwrap(), None);
    let marks = BTreeMap::from([("cli".to_string(), 7u64), ("m1.cli".to_string(), 3)]);
    write_shipped(&dir, &marks).unwrap();
    assert_eq!(read_shipped(&dir).unwrap(), Some(marks.clone()));
    let root = StateDir::open_root(ws.path()).unwrap();
    assert_eq!(shipped_marks(&root, Path::new(REPLICATE_STATE_DIR)), marks);
  }

  #[test]
  fn unusable_files_are_coded_errors_and_nothing_shipped() {
    let ws = tempfile::tempdir().unwrap();
    let dir = state(ws.path());
    let file = ws.path().join(REPLICATE_STATE_DIR).join(SHIPPED_FILE);
    let root = StateDir::open_root(ws.path()).unwrap();
    let big = format!("{{\"version\":1,\"sessions\":{{\"a\":1}}{}}}", " ".repeat(MAX_SHIPPED_BYTES as usize));
    let cases: [(&[u8], &str); 5] = [
      (b"{\"version\":1,\"sessions\":{\"cli\":", "E_STATE_CORRUPT"),
      (b"{\"version\":2,\"sessions\":{\"cli\":4}}", "E_STATE_CORRUPT"),
      (b"{\"version\":1,\"sessions\":{\"cli\":-4}}", "E_STATE_CORRUPT"),
      (b"{\"version\":1,\"sessions\":{},\"more\":1}", "E_STATE_CORRUPT"),
      (big.as_bytes(), "E_TOO_LARGE"),
    ];
    for (bytes, code) in cases {
      std::fs::write(&file, bytes).unwrap();
      assert_eq!(read_shipped(&dir).unwrap_err().code(), code);
      assert!(shipped_marks(&root, Path::new(REPLICATE_STATE_DIR)).is_empty());
    }
  }

  #[test]
  fn symlinks_are_never_followed() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let marks = BTreeMap::from([("cli".to_string(), 9u64)]);
    write_shipped(&StateDir::open_root(outside.path()).unwrap(), &marks).unwrap();
    // The file a symlink to a good file elsewhere: refused.
    let dir = state(ws.path());
    std::os::unix::fs::symlink(outside.path().join(SHIPPED_FILE), dir.child_path(SHIPPED_FILE)).unwrap();
    assert_eq!(read_shipped(&dir).unwrap_err().code(), "E_NOT_REGULAR_FILE");
    let root = StateDir::open_root(ws.path()).unwrap();
    assert!(shipped_marks(&root, Path::new(REPLICATE_STATE_DIR)).is_empty());
    // Nor written through: refused, and the file it points at is untouched.
    assert_eq!(write_shipped(&dir, &BTreeMap::new()).unwrap_err().code(), "E_NOT_REGULAR_FILE");
    assert_eq!(read_shipped(&StateDir::open_root(outside.path()).unwrap()).unwrap(), Some(marks.clone()));
    // The state directory a symlink: nothing shipped.
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir(other.path().join(".loa")).unwrap();
    std::os::unix::fs::symlink(outside.path(), other.path().join(REPLICATE_STATE_DIR)).unwrap();
    let root = StateDir::open_root(other.path()).unwrap();
    assert!(shipped_marks(&root, Path::new(REPLICATE_STATE_DIR)).is_empty());
  }
}
