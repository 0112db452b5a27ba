//! On-disk format of WAL segments.
//!
//! A segment is a 32-byte header followed by records:
//!
//! ```text
//! header:  magic "LOAWAL\0\x01" | created_ms i64 | first_seq u64 | reserved u32 | crc32c u32
//! record:  magic u32 | payload_len u32 | crc32c u32 | payload
//! payload: seq u64 | ts_ms i64 | flags u8 | session u16+bytes | op u16+bytes
//!          | [path u32+bytes] | [meta u32+json] | [data u32+bytes]
//! ```
//!
//! All integers are little-endian. The record checksum (CRC32C, hardware accelerated through the
//! `crc32c` crate) covers the length field and the payload, so a flipped bit in the length is
//! caught like any other. Every record carries its own seq: after a crash the next seq is
//! derived from the records themselves, never from a counter kept elsewhere. The per-record magic
//! lets a scanner tell a torn tail (nothing valid follows the damage) from corruption in the middle
//! of a log (valid records follow the damage).

use crate::error::{invalid, LoaError, Result};

pub const SEGMENT_MAGIC: [u8; 8] = *b"LOAWAL\0\x01";
/// The segment format version this library writes and reads: the last byte of the magic. A
/// segment of another version is refused as corrupt and never repaired: its records may be framed
/// in a way this version cannot tell from a torn tail, and truncating it would destroy them.
pub const SEGMENT_VERSION: u8 = SEGMENT_MAGIC[7];
pub const SEGMENT_HEADER_LEN: usize = 32;
pub const RECORD_MAGIC: u32 = 0x5241_4f4c; // "LOAR" little-endian
pub const FRAME_HEADER_LEN: usize = 12;

/// Largest payload of one record. Bounded so that a corrupted length can never make a reader
/// allocate gigabytes, and so that one record always fits a default 10 MiB segment.
pub const MAX_PAYLOAD_BYTES: usize = 8 * 1024 * 1024;
pub const MAX_OP_BYTES: usize = 256;
pub const MAX_PATH_BYTES: usize = 4096;
pub const MAX_SESSION_ID_BYTES: usize = 128;

const FLAG_PATH: u8 = 1;
const FLAG_META: u8 = 2;
const FLAG_DATA: u8 = 4;

/// One WAL record as stored and as returned by readers.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
  pub seq: u64,
  /// Milliseconds since the Unix epoch; never decreases within a session.
  pub ts_ms: i64,
  pub session_id: String,
  pub op: String,
  pub path: Option<String>,
  /// JSON text of the caller's `meta` object.
  pub meta: Option<String>,
  pub data: Option<Vec<u8>>,
}

/// Segment header fields.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SegmentHeader {
  pub created_ms: i64,
  pub first_seq: u64,
}

pub fn encode_header(header: &SegmentHeader) -> [u8; SEGMENT_HEADER_LEN] {
  let mut out = [0u8; SEGMENT_HEADER_LEN];
  out[0..8].copy_from_slice(&SEGMENT_MAGIC);
  out[8..16].copy_from_slice(&header.created_ms.to_le_bytes());
  out[16..24].copy_from_slice(&header.first_seq.to_le_bytes());
  let crc = crc32c::crc32c(&out[0..28]);
  out[28..32].copy_from_slice(&crc.to_le_bytes());
  out
}

pub fn decode_header(bytes: &[u8]) -> Option<SegmentHeader> {
  if bytes.len() < SEGMENT_HEADER_LEN || bytes[0..8] != SEGMENT_MAGIC {
    return None;
  }
  if crc32c::crc32c(&bytes[0..28]) != u32_at(bytes, 28) {
    return None;
  }
  Some(SegmentHeader { created_ms: i64_at(bytes, 8), first_seq: u64_at(bytes, 16) })
}

/// Checks the parts of a record the caller controls, before a seq is spent on it.
pub fn validate_fields(op: &str, path: Option<&str>, meta: Option<&str>, data: Option<&[u8]>) -> Result<()> {
  if op.is_empty() || op.len() > MAX_OP_BYTES {
    return invalid(format!("op must be a non-empty string of at most {MAX_OP_BYTES} bytes"));
  }
  if let Some(path) = path {
    if path.len() > MAX_PATH_BYTES {
      return invalid(format!("path must be at most {MAX_PATH_BYTES} bytes"));
    }
    // Same rule as consolidation applies, checked early so a bad path never enters the log.
    crate::fsutil::join_relative(std::path::Path::new("/"), path)?;
  }
  let size = FRAME_HEADER_LEN
    + 8
    + 8
    + 1
    + 2
    + MAX_SESSION_ID_BYTES
    + 2
    + op.len()
    + path.map_or(0, |p| 4 + p.len())
    + meta.map_or(0, |m| 4 + m.len())
    + data.map_or(0, |d| 4 + d.len());
  if size > MAX_PAYLOAD_BYTES {
    return Err(LoaError::TooLarge { what: "WAL record".into(), size: size as u64, limit: MAX_PAYLOAD_BYTES as u64 });
  }
  Ok(())
}

/// Appends the framed record to `out`.
pub fn encode_record(record: &Record, out: &mut Vec<u8>) {
  let start = out.len();
  out.extend_from_slice(&RECORD_MAGIC.to_le_bytes());
  out.extend_from_slice(&[0u8; 8]); // length and crc, filled in below
  out.extend_from_slice(&record.seq.to_le_bytes());
  out.extend_from_slice(&record.ts_ms.to_le_bytes());
  let flags = (record.path.is_some() as u8 * FLAG_PATH)
    | (record.meta.is_some() as u8 * FLAG_META)
    | (record.data.is_some() as u8 * FLAG_DATA);
  out.push(flags);
  out.extend_from_slice(&(record.session_id.len() as u16).to_le_bytes());
  out.extend_from_slice(record.session_id.as_bytes());
  out.extend_from_slice(&(record.op.len() as u16).to_le_bytes());
  out.extend_from_slice(record.op.as_bytes());
  for field in
    [record.path.as_ref().map(|p| p.as_bytes()), record.meta.as_ref().map(|m| m.as_bytes()), record.data.as_deref()]
      .into_iter()
      .flatten()
  {
    out.extend_from_slice(&(field.len() as u32).to_le_bytes());
    out.extend_from_slice(field);
  }
  let payload_len = (out.len() - start - FRAME_HEADER_LEN) as u32;
  out[start + 4..start + 8].copy_from_slice(&payload_len.to_le_bytes());
  let crc = record_crc(&out[start + 4..start + 8], &out[start + FRAME_HEADER_LEN..]);
  out[start + 8..start + 12].copy_from_slice(&crc.to_le_bytes());
}

fn record_crc(len_bytes: &[u8], payload: &[u8]) -> u32 {
  crc32c::crc32c_append(crc32c::crc32c(len_bytes), payload)
}

/// What [`read_frame`] found at an offset.
#[derive(Debug)]
pub enum Frame {
  /// A valid record and the offset just past it.
  Record(Record, usize),
  /// The bytes at this offset are not a valid record: `reason` says why.
  Bad(&'static str),
  /// The frame header is valid but the record extends past the end of the data: a write that
  /// was cut short.
  Incomplete,
}

/// Reads the record framed at `offset` of `bytes`.
pub fn read_frame(bytes: &[u8], offset: usize) -> Frame {
  let rest = &bytes[offset..];
  if rest.len() < FRAME_HEADER_LEN {
    return if rest.len() >= 4 && u32_at(rest, 0) != RECORD_MAGIC {
      Frame::Bad("bad record magic")
    } else {
      Frame::Incomplete
    };
  }
  if u32_at(rest, 0) != RECORD_MAGIC {
    return Frame::Bad("bad record magic");
  }
  let len = u32_at(rest, 4) as usize;
  if len > MAX_PAYLOAD_BYTES {
    return Frame::Bad("record length over the limit");
  }
  if rest.len() < FRAME_HEADER_LEN + len {
    return Frame::Incomplete;
  }
  let payload = &rest[FRAME_HEADER_LEN..FRAME_HEADER_LEN + len];
  if record_crc(&rest[4..8], payload) != u32_at(rest, 8) {
    return Frame::Bad("checksum mismatch");
  }
  match decode_payload(payload) {
    Some(record) => Frame::Record(record, offset + FRAME_HEADER_LEN + len),
    None => Frame::Bad("malformed payload"),
  }
}

fn decode_payload(p: &[u8]) -> Option<Record> {
  let mut cursor = Cursor { bytes: p, pos: 0 };
  let seq = u64::from_le_bytes(cursor.take(8)?.try_into().ok()?);
  let ts_ms = i64::from_le_bytes(cursor.take(8)?.try_into().ok()?);
  let flags = cursor.take(1)?[0];
  let session_len = u16::from_le_bytes(cursor.take(2)?.try_into().ok()?) as usize;
  let session_id = String::from_utf8(cursor.take(session_len)?.to_vec()).ok()?;
  let op_len = u16::from_le_bytes(cursor.take(2)?.try_into().ok()?) as usize;
  let op = String::from_utf8(cursor.take(op_len)?.to_vec()).ok()?;
  let mut field = |flag: u8| -> Option<Option<Vec<u8>>> {
    if flags & flag == 0 {
      return Some(None);
    }
    let len = u32::from_le_bytes(cursor.take(4)?.try_into().ok()?) as usize;
    Some(Some(cursor.take(len)?.to_vec()))
  };
  let path = match field(FLAG_PATH)? {
    Some(b) => Some(String::from_utf8(b).ok()?),
    None => None,
  };
  let meta = match field(FLAG_META)? {
    Some(b) => Some(String::from_utf8(b).ok()?),
    None => None,
  };
  let data = field(FLAG_DATA)?;
  if cursor.pos != p.len() || flags & !(FLAG_PATH | FLAG_META | FLAG_DATA) != 0 {
    return None;
  }
  Some(Record { seq, ts_ms, session_id, op, path, meta, data })
}

struct Cursor<'a> {
  bytes: &'a [u8],
  pos: usize,
}

impl<'a> Cursor<'a> {
  fn take(&mut self, n: usize) -> Option<&'a [u8]> {
    let end = self.pos.checked_add(n)?;
    let slice = self.bytes.get(self.pos..end)?;
    self.pos = end;
    Some(slice)
  }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
  u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
  u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn i64_at(b: &[u8], at: usize) -> i64 {
  i64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The end state of a segment scan.
#[derive(Debug, Clone, PartialEq)]
pub enum Tail {
  /// Every byte after the header belongs to a valid record, or to an all-zero tail that the
  /// writer filled ahead of use (`valid_len` says where records end).
  Clean,
  /// From `offset` to the end there is nothing but an unfinished write (no valid record
  /// follows). Safe to truncate in the newest segment of a session.
  Torn { offset: u64, bytes: u64 },
  /// Damage at `offset` with valid records after it, or a bad header: never skipped.
  Corrupt { offset: u64, reason: String },
}

/// Result of scanning one segment's bytes.
#[derive(Debug)]
pub struct SegmentScan {
  pub header: Option<SegmentHeader>,
  pub records: Vec<Record>,
  pub tail: Tail,
  /// Offset just past the last valid record (where a writer continues).
  pub valid_len: u64,
}

/// Parses a whole segment. Never fails: damage is described in `tail`.
pub fn scan_segment(bytes: &[u8]) -> SegmentScan {
  if bytes.len() >= SEGMENT_MAGIC.len() && bytes[..7] == SEGMENT_MAGIC[..7] && bytes[7] != SEGMENT_VERSION {
    let reason =
      format!("segment format version {} is not version {SEGMENT_VERSION}, the one this library reads", bytes[7]);
    return SegmentScan { header: None, records: Vec::new(), tail: Tail::Corrupt { offset: 0, reason }, valid_len: 0 };
  }
  let Some(header) = decode_header(bytes) else {
    // A header is written and fsynced before any record, so a short or invalid header with no
    // records behind it is a segment whose creation was interrupted.
    let tail = if find_record_after(bytes, 0) {
      Tail::Corrupt { offset: 0, reason: "bad segment header".into() }
    } else {
      Tail::Torn { offset: 0, bytes: bytes.len() as u64 }
    };
    return SegmentScan { header: None, records: Vec::new(), tail, valid_len: 0 };
  };
  let mut records = Vec::new();
  let mut offset = SEGMENT_HEADER_LEN;
  let tail = loop {
    if offset == bytes.len() {
      break Tail::Clean;
    }
    match read_frame(bytes, offset) {
      Frame::Record(record, next) => {
        let expected_min = records.last().map_or(header.first_seq, |r: &Record| r.seq + 1);
        if record.seq < expected_min {
          break Tail::Corrupt { offset: offset as u64, reason: format!("seq {} out of order", record.seq) };
        }
        records.push(record);
        offset = next;
      }
      Frame::Incomplete => break classify(bytes, offset, "record cut short"),
      Frame::Bad(reason) => break classify(bytes, offset, reason),
    }
  };
  SegmentScan { header: Some(header), records, tail, valid_len: offset as u64 }
}

fn classify(bytes: &[u8], offset: usize, reason: &str) -> Tail {
  if bytes[offset..].iter().all(|&b| b == 0) {
    return Tail::Clean; // space written ahead by the writer, not yet used
  }
  if find_record_after(bytes, offset + 1) {
    Tail::Corrupt { offset: offset as u64, reason: reason.to_string() }
  } else {
    Tail::Torn { offset: offset as u64, bytes: (bytes.len() - offset) as u64 }
  }
}

/// How many payload bytes a search for records in damaged bytes may checksum: twice the input
/// and one largest payload. Each record magic found is a candidate whose checksum covers the
/// length its header claims, and candidates overlap: damage (or a hostile file) with a magic and
/// a long length every few bytes would otherwise cost the square of its size (a 10 MiB segment:
/// hours). Real damage has a few candidates; records found are stepped over whole, so a search
/// that stays in the budget reads each byte a bounded number of times.
fn checksum_budget(bytes: &[u8]) -> usize {
  bytes.len().saturating_mul(2).saturating_add(MAX_PAYLOAD_BYTES)
}

/// The payload bytes [`read_frame`] would checksum for a candidate at `offset` (0 when it stops
/// before: a header cut short, a length over the limit or past the end).
fn checksum_cost(bytes: &[u8], offset: usize) -> usize {
  let rest = &bytes[offset..];
  if rest.len() < FRAME_HEADER_LEN {
    return 0;
  }
  let len = u32_at(rest, 4) as usize;
  if len > MAX_PAYLOAD_BYTES || rest.len() < FRAME_HEADER_LEN + len {
    0
  } else {
    len
  }
}

#[cfg(test)]
thread_local! {
  /// Payload bytes the record searches checksummed on this thread (tests bound the work).
  static CHECKSUMMED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Candidate record starts at or after `from`: calls `found` with each frame read, in order,
/// until it returns false, the bytes end or the checksum budget is spent (then `Err(())`).
fn search_records(bytes: &[u8], from: usize, mut found: impl FnMut(Frame) -> bool) -> Result<(), ()> {
  let magic = RECORD_MAGIC.to_le_bytes();
  let budget = checksum_budget(bytes);
  let mut spent = 0usize;
  let mut at = from;
  while at + FRAME_HEADER_LEN <= bytes.len() {
    let Some(rel) = bytes[at..].windows(4).position(|w| w == magic) else { break };
    let candidate = at + rel;
    let cost = checksum_cost(bytes, candidate);
    spent = spent.saturating_add(cost);
    if spent > budget {
      return Err(());
    }
    #[cfg(test)]
    CHECKSUMMED.with(|c| c.set(c.get() + cost));
    let frame = read_frame(bytes, candidate);
    // A record is stepped over whole; anything else moves one byte on.
    let next = match &frame {
      Frame::Record(_, next) => *next,
      _ => candidate + 1,
    };
    if !found(frame) {
      break;
    }
    at = next;
  }
  Ok(())
}

/// The end of the last complete, checksum-valid record that starts at or after `from`, if
/// there is one. A record found is stepped over whole, so the bytes are gone through once; past
/// the checksum budget (see [`checksum_budget`]) the search stops with what it found so far, so
/// a caller sees less of the segment as settled, never more.
pub fn last_record_end(bytes: &[u8], from: usize) -> Option<usize> {
  let mut end = None;
  let _ = search_records(bytes, from, |frame| {
    if let Frame::Record(_, next) = frame {
      end = Some(next);
    }
    true
  });
  end
}

/// Whether any complete, checksum-valid record starts at or after `from`. Past the checksum
/// budget the answer is yes: damage too dense to search is called corruption, never a torn tail.
fn find_record_after(bytes: &[u8], from: usize) -> bool {
  let mut any = false;
  let searched = search_records(bytes, from, |frame| {
    any = matches!(frame, Frame::Record(..));
    !any
  });
  any || searched.is_err()
}

#[cfg(test)]
mod tests {
  use super::*;

  /// Damage with a record magic and a length reaching near the end every 12 bytes: each is a
  /// candidate whose checksum covers most of what follows. Both searches stay linear (before the
  /// budget, 1 MiB of it checksummed about 45 GB), and a hostile tail is corruption.
  #[test]
  fn dense_fake_record_headers_cost_linear_work() {
    let n = 1 << 20;
    let mut bytes = vec![0u8; n];
    let mut at = 0;
    while at + FRAME_HEADER_LEN <= n {
      let claimed = (n - at - FRAME_HEADER_LEN) as u32;
      bytes[at..at + 4].copy_from_slice(&RECORD_MAGIC.to_le_bytes());
      bytes[at + 4..at + 8].copy_from_slice(&claimed.to_le_bytes());
      bytes[at + 8..at + 12].copy_from_slice(&[0xAB; 4]);
      at += FRAME_HEADER_LEN;
    }
    let checksummed = || CHECKSUMMED.with(std::cell::Cell::get);
    let before = checksummed();
    assert_eq!(last_record_end(&bytes, 0), None);
    assert!(find_record_after(&bytes, 0), "too dense to search: corruption");
    let spent = checksummed() - before;
    assert!(spent <= 2 * checksum_budget(&bytes), "{spent} bytes checksummed for {n}");
    // A real record after a little damage is still found, and its end.
    let mut segment = vec![0x55u8; 40];
    let start = segment.len();
    encode_record(&record(7, b"after the damage"), &mut segment);
    assert!(find_record_after(&segment, 0));
    assert_eq!(last_record_end(&segment, 0), Some(segment.len()));
    assert_eq!(last_record_end(&segment, start + 1), None);
  }

  fn record(seq: u64, data: &[u8]) -> Record {
    Record {
      seq,
      ts_ms: 1_700_000_000_000 + seq as i64,
      session_id: "s1".into(),
      op: "write".into(),
      path: Some("notes/a.md".into()),
      meta: Some("{\"k\":1}".into()),
      data: Some(data.to_vec()),
    }
  }

  fn segment(records: &[Record]) -> Vec<u8> {
    let mut out = encode_header(&SegmentHeader { created_ms: 1, first_seq: 1 }).to_vec();
    for r in records {
      encode_record(r, &mut out);
    }
    out
  }

  #[test]
  fn round_trip_exact_bytes() {
    let all_bytes: Vec<u8> = (0..=255u8).collect();
    let records =
      vec![record(1, b"hello"), record(2, &all_bytes), Record { path: None, meta: None, data: None, ..record(3, b"") }];
    let scan = scan_segment(&segment(&records));
    assert_eq!(scan.tail, Tail::Clean);
    assert_eq!(scan.records, records);
  }

  #[test]
  fn every_truncation_of_the_last_record_is_a_torn_tail() {
    let records = vec![record(1, b"first"), record(2, b"second record")];
    let full = segment(&records);
    let last_start = segment(&records[..1]).len();
    for cut in last_start..full.len() {
      let scan = scan_segment(&full[..cut]);
      assert_eq!(scan.records, records[..1], "cut at {cut}");
      if cut == last_start {
        assert_eq!(scan.tail, Tail::Clean);
      } else {
        assert_eq!(
          scan.tail,
          Tail::Torn { offset: last_start as u64, bytes: (cut - last_start) as u64 },
          "cut at {cut}"
        );
      }
    }
  }

  #[test]
  fn damage_followed_by_valid_records_is_corruption() {
    let records = vec![record(1, b"one"), record(2, b"two"), record(3, b"three")];
    let clean = segment(&records);
    let second = segment(&records[..1]).len();
    for bit_at in second..segment(&records[..2]).len() {
      let mut bytes = clean.clone();
      bytes[bit_at] ^= 0x10;
      let scan = scan_segment(&bytes);
      match scan.tail {
        Tail::Corrupt { offset, .. } => assert_eq!(offset, second as u64, "flip at {bit_at}"),
        other => panic!("flip at {bit_at}: {other:?}"),
      }
    }
  }

  /// What a reader overtaken by the writer sees: records, zeros where the next one goes, then a
  /// record written after the zeros were read. `last_record_end` finds where the bytes a second
  /// read must settle end; it steps over whole records and ignores zeros and torn bytes.
  #[test]
  fn last_record_end_finds_the_end_of_the_last_valid_record() {
    let records = vec![record(1, b"one"), record(2, b"two"), record(3, b"three")];
    let one = segment(&records[..1]).len();
    let full = segment(&records);
    let mut seen = full.clone();
    seen[one..one + 2].fill(0); // the start of record 2, read before it was written
    seen.extend_from_slice(&[0u8; 100]); // space written ahead
    assert!(matches!(scan_segment(&seen).tail, Tail::Corrupt { offset, .. } if offset == one as u64));
    assert_eq!(last_record_end(&seen, one), Some(full.len()));
    assert_eq!(last_record_end(&seen, full.len()), None);
    let mut torn = full.clone();
    torn.extend_from_slice(&segment(&[record(4, b"four")])[SEGMENT_HEADER_LEN..][..9]);
    assert_eq!(last_record_end(&torn, one), Some(full.len()), "a torn record after it is not one");
    assert_eq!(last_record_end(&full[..full.len() - 1], one), Some(segment(&records[..2]).len()));
  }

  #[test]
  fn header_damage() {
    let bytes = segment(&[record(1, b"x")]);
    let mut bad = bytes.clone();
    bad[3] ^= 1;
    assert!(matches!(scan_segment(&bad).tail, Tail::Corrupt { offset: 0, .. }));
    assert!(matches!(scan_segment(&bytes[..10]).tail, Tail::Torn { offset: 0, bytes: 10 }));
  }

  /// Random damage (flips, cuts, inserted and deleted bytes) never panics and never produces a
  /// record that was not written: whatever a scan returns is a prefix of the original records.
  #[test]
  fn random_damage_never_invents_records() {
    let records: Vec<Record> = (1..=12).map(|i| record(i, &vec![i as u8; (i as usize * 13) % 70])).collect();
    let clean = segment(&records);
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = |bound: usize| {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      (state % bound as u64) as usize
    };
    for _ in 0..3000 {
      let mut bytes = clean.clone();
      for _ in 0..1 + next(3) {
        match next(4) {
          0 => {
            let at = next(bytes.len());
            bytes[at] ^= 1 << next(8);
          }
          1 => bytes.truncate(next(bytes.len() + 1)),
          2 => {
            let at = next(bytes.len() + 1);
            bytes.insert(at, next(256) as u8);
          }
          _ if !bytes.is_empty() => {
            bytes.remove(next(bytes.len()));
          }
          _ => {}
        }
      }
      let scan = scan_segment(&bytes);
      assert!(scan.records.len() <= records.len());
      assert_eq!(scan.records[..], records[..scan.records.len()]);
    }
  }

  #[test]
  fn oversized_fields_are_refused() {
    assert_eq!(validate_fields("", None, None, None).unwrap_err().code(), "E_INVALID_ARGUMENT");
    assert_eq!(validate_fields("w", Some("../x"), None, None).unwrap_err().code(), "E_PATH_OUTSIDE_ROOT");
    let big = vec![0u8; MAX_PAYLOAD_BYTES];
    assert_eq!(validate_fields("w", None, None, Some(&big)).unwrap_err().code(), "E_TOO_LARGE");
  }
}
