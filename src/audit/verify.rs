//! Read-only verification of a whole audit log, across every segment.
//!
//! Every line is checked on its own merits (canonical bytes, fields, its hash) and against its
//! neighbour (seq + 1, `prev` = the hash before), and every segment's name against its first
//! entry. A broken link is reported where it breaks and checking goes on from the stored values,
//! so one edited entry gives one problem, a deleted line gives a `seq` and a `chain` problem at
//! the line after, and nothing after a problem goes unchecked.
//!
//! Segments are streamed line by line, each read only up to the size it had when opened (a file
//! that grows meanwhile is not followed forever) and each line up to [`MAX_ENTRY_BYTES`]; memory
//! stays bounded whatever the files hold. Anything named like a segment that is not a regular
//! file is reported (`segment`) and never opened.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use rustix::fs::FileType;
use serde::Serialize;
use serde_json::Value;

use super::checkpoint::{read_checkpoint, Checkpoint};
use super::{alg_name, entry_hash, segment_entries, Head, TornTail, GENESIS, MAX_ENTRY_BYTES};
use crate::error::Result;
use crate::fsutil::{kind_name, OpenMode, StateDir};
use crate::jcs;
use crate::sign::manifest::TrustedKey;

/// One thing wrong with the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditProblem {
  /// File name of the segment (empty for problems of the log as a whole).
  pub segment: String,
  /// 1-based line number (0 for problems of a segment or of the log).
  pub line: u64,
  /// `malformed` (not an entry), `format` (valid entry, not in canonical form), `hash` (the
  /// entry's hash does not verify: edited), `chain` (`prev` is not the hash before: lines
  /// deleted, inserted or reordered), `seq` (not one more than the line before), `segment`
  /// (name does not match its first entry, an empty segment before the newest, or not a regular
  /// file), `key` (HMAC entries without a key, or plain entries where a key is expected), `head`
  /// (does not reach or match the expected head: entries removed from the end), `truncated`
  /// (the log ends before its signed checkpoint: `E_AUDIT_TRUNCATED`), `checkpoint` (the
  /// checkpoint is damaged, its signature does not verify with the given keys, or the entry at
  /// its seq has another hash).
  pub kind: String,
  pub detail: String,
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditVerification {
  /// No problems. A torn tail alone leaves it true: an unacknowledged append that the next
  /// writer cuts off.
  pub ok: bool,
  /// Complete lines read.
  pub entries: u64,
  pub segments: u64,
  /// The last entry's seq and hash, if any.
  pub head: Option<Head>,
  pub problems: Vec<AuditProblem>,
  pub torn_tail: Option<TornTail>,
  /// The log's signed checkpoint, if it has a readable one.
  pub checkpoint: Option<Checkpoint>,
}

/// Options of [`verify_with`].
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions<'a> {
  /// The HMAC key, if the log uses one.
  pub hmac_key: Option<&'a [u8]>,
  /// A head remembered earlier: the chain must still hold that seq with that hash.
  pub expected_head: Option<Head>,
  /// Keys to check the checkpoint's signature with; without them only its seq and hash are
  /// compared with the log.
  pub trusted_keys: Option<Vec<TrustedKey>>,
}

/// Verifies every segment of the log in `dir` with `key` (the HMAC key, if the log uses one).
/// Never writes and never throws for damage; an unreadable directory is an error.
pub fn verify(dir: &Path, key: Option<&[u8]>, expected_head: Option<&Head>) -> Result<AuditVerification> {
  verify_with(dir, &VerifyOptions { hmac_key: key, expected_head: expected_head.cloned(), trusted_keys: None })
}

/// [`verify`] with every option.
pub fn verify_with(dir: &Path, options: &VerifyOptions) -> Result<AuditVerification> {
  verify_in(&StateDir::open_root(dir)?, options)
}

/// One complete line of a segment: its bytes, or how long it was when over the limit.
enum Line {
  Entry(Vec<u8>),
  TooLong(u64),
}

/// Reads the next line of at most [`MAX_ENTRY_BYTES`]; a longer one is skipped to its end.
/// `Ok(None)` at the end; the bytes after the last newline are returned in `torn`.
fn next_line(reader: &mut impl BufRead, torn: &mut u64) -> std::io::Result<Option<Line>> {
  let mut line = Vec::new();
  let n = reader.by_ref().take(MAX_ENTRY_BYTES as u64).read_until(b'\n', &mut line)?;
  if n == 0 {
    return Ok(None);
  }
  if line.last() == Some(&b'\n') {
    line.pop();
    return Ok(Some(Line::Entry(line)));
  }
  if (line.len() as u64) < MAX_ENTRY_BYTES as u64 {
    // The end of the file without a newline: a torn tail.
    *torn = line.len() as u64;
    return Ok(None);
  }
  let mut skipped = line.len() as u64;
  loop {
    let buffer = reader.fill_buf()?;
    if buffer.is_empty() {
      *torn = skipped;
      return Ok(None);
    }
    match memchr::memchr(b'\n', buffer) {
      Some(at) => {
        reader.consume(at + 1);
        return Ok(Some(Line::TooLong(skipped + at as u64)));
      }
      None => {
        let len = buffer.len();
        skipped += len as u64;
        reader.consume(len);
      }
    }
  }
}

/// [`verify_with`] on an open directory (also used by manifest verification).
pub(crate) fn verify_in(dir: &StateDir, options: &VerifyOptions) -> Result<AuditVerification> {
  let key = options.hmac_key;
  let expected_head = options.expected_head.as_ref();
  let segments = segment_entries(dir)?;
  let mut v = AuditVerification {
    ok: false,
    entries: 0,
    segments: segments.len() as u64,
    head: None,
    problems: Vec::new(),
    torn_tail: None,
    checkpoint: None,
  };
  let mut problems = Vec::new();
  let mut report = |segment: &str, line: u64, kind: &str, detail: String| {
    problems.push(AuditProblem { segment: segment.to_string(), line, kind: kind.to_string(), detail });
  };
  let checkpoint = match read_checkpoint(dir) {
    Ok(c) => c,
    Err(e) => {
      report(super::CHECKPOINT_FILE, 0, "checkpoint", e.to_string());
      None
    }
  };
  // The previous entry's (seq, hash) as stored; None after an unparseable line.
  let mut previous: Option<(u64, String)> = Some((0, GENESIS.to_string()));
  let mut head: Option<Head> = None;
  let mut anchor_seen = false;
  let mut checkpoint_seen = false;
  let mut unverifiable = 0u64;
  let mut torn_tail = None;
  let mut entries = 0u64;
  for (index, segment) in segments.iter().enumerate() {
    let name = segment.name_lossy();
    let newest = index + 1 == segments.len();
    if segment.file_type != FileType::RegularFile {
      report(&name, 0, "segment", format!("a {}, not a regular file: never opened", kind_name(segment.file_type)));
      previous = None;
      continue;
    }
    let file = dir.open_file(OsStr::new(&segment.name), OpenMode::READ)?;
    let size = file.len()?;
    let mut reader = BufReader::with_capacity(64 * 1024, file.file().take(size));
    let mut line_no = 0u64;
    let mut torn = 0u64;
    loop {
      let line = next_line(&mut reader, &mut torn).map_err(|e| crate::error::LoaError::io("read", file.path(), e))?;
      let Some(line) = line else { break };
      line_no += 1;
      entries += 1;
      let line = match line {
        Line::Entry(bytes) => bytes,
        Line::TooLong(len) => {
          report(&name, line_no, "malformed", format!("a line of {len} bytes, over the limit of {MAX_ENTRY_BYTES}"));
          previous = None;
          continue;
        }
      };
      let parsed = std::str::from_utf8(&line).ok().and_then(|t| jcs::parse_strict(t).ok());
      let Some(value) = parsed else {
        report(&name, line_no, "malformed", "not a JSON entry".into());
        previous = None;
        continue;
      };
      let seq = value.get("seq").and_then(Value::as_u64);
      let stored_hash = value.get("hash").and_then(Value::as_str).map(str::to_owned);
      let prev = value.get("prev").and_then(Value::as_str).map(str::to_owned);
      let (Some(seq), Some(stored_hash), Some(prev)) = (seq, stored_hash, prev) else {
        report(&name, line_no, "malformed", "entry lacks seq, prev or hash".into());
        previous = None;
        continue;
      };
      let fields_ok = value.get("ts").and_then(Value::as_str).and_then(crate::timestamp::parse_ms).is_some()
        && value.get("action").and_then(Value::as_str).is_some_and(|a| !a.is_empty())
        && matches!(value.get("actor").and_then(Value::as_str), Some("system" | "user" | "automated"))
        && value.as_object().is_some_and(|o| {
          o.keys().all(|k| {
            matches!(k.as_str(), "v" | "seq" | "ts" | "action" | "actor" | "details" | "alg" | "prev" | "hash")
          })
        });
      if !super::version_supported(&value) {
        report(&name, line_no, "malformed", format!("entry format version is not {}", super::ENTRY_VERSION));
      }
      if !fields_ok {
        report(&name, line_no, "malformed", "entry fields are missing, of the wrong type, or unknown".into());
      }
      if jcs::to_vec(&value).ok().as_deref() != Some(line.as_slice()) {
        report(&name, line_no, "format", "entry is not in canonical form (bytes changed)".into());
      }
      if line_no == 1 && seq != segment.seq {
        report(&name, 0, "segment", format!("segment is named for seq {} but starts at seq {seq}", segment.seq));
      }
      // Hash.
      let alg = value.get("alg").and_then(Value::as_str).unwrap_or("");
      let mut body = value.clone();
      body.as_object_mut().map(|o| o.remove("hash"));
      match (alg, key) {
        ("hmac-sha256", None) => unverifiable += 1,
        (alg, key) if alg == alg_name(key) => {
          if entry_hash(&body, key).ok().as_deref() != Some(stored_hash.as_str()) {
            report(&name, line_no, "hash", "the entry's hash does not verify (edited)".into());
          }
        }
        ("sha256", Some(_)) => report(&name, line_no, "key", "entry is not authenticated with the HMAC key".into()),
        (other, _) => report(&name, line_no, "malformed", format!("unknown alg {other:?}")),
      }
      // Links.
      match &previous {
        Some((prev_seq, prev_hash)) => {
          if seq != prev_seq + 1 {
            let detail = if *prev_seq == 0 {
              format!("the log starts at seq {seq}: earlier entries or segments are missing")
            } else {
              format!("seq {seq} follows seq {prev_seq}")
            };
            report(&name, line_no, "seq", detail);
          }
          if &prev != prev_hash {
            report(
              &name,
              line_no,
              "chain",
              "prev is not the hash of the entry before (lines deleted, inserted or reordered)".into(),
            );
          }
        }
        None => {
          if seq == 1 && prev != GENESIS {
            report(&name, line_no, "chain", "the first entry does not start from the genesis hash".into());
          }
        }
      }
      if let Some(expected) = expected_head {
        if seq == expected.seq {
          anchor_seen = true;
          if stored_hash != expected.hash {
            report(&name, line_no, "head", format!("seq {seq} does not have the expected hash"));
          }
        }
      }
      if let Some(cp) = &checkpoint {
        if seq == cp.seq {
          checkpoint_seen = true;
          if stored_hash != cp.hash {
            report(
              &name,
              line_no,
              "checkpoint",
              format!("seq {seq} is not the entry its checkpoint signed (rewritten)"),
            );
          }
        }
      }
      previous = Some((seq, stored_hash.clone()));
      head = Some(Head { seq, hash: stored_hash });
    }
    if torn > 0 {
      let torn = TornTail { segment: name.clone(), line: line_no + 1, bytes: torn };
      if newest {
        torn_tail = Some(torn);
      } else {
        report(
          &name,
          line_no + 1,
          "malformed",
          format!("{} bytes without a final newline in a segment that is not the newest", torn.bytes),
        );
      }
    }
  }
  if unverifiable > 0 {
    report("", 0, "key", format!("{unverifiable} entries are authenticated with an HMAC key; verify with that key"));
  }
  let last = head.as_ref().map(|h| h.seq).unwrap_or(0);
  if let Some(expected) = expected_head {
    if !anchor_seen && expected.seq > 0 {
      report(
        "",
        0,
        "head",
        format!("the log ends at seq {last}, before the expected head at seq {}: entries were removed", expected.seq),
      );
    }
  }
  if let Some(cp) = &checkpoint {
    if !checkpoint_seen && cp.seq > last {
      report(
        super::CHECKPOINT_FILE,
        0,
        "truncated",
        format!(
          "E_AUDIT_TRUNCATED: the log ends at seq {last}, before its checkpoint at seq {}: entries were cut off",
          cp.seq
        ),
      );
    }
    if let Some(keys) = &options.trusted_keys {
      if let Err(why) = cp.verify_signature(keys) {
        report(super::CHECKPOINT_FILE, 0, "checkpoint", format!("the checkpoint's signature: {why}"));
      }
    }
  }
  v.problems = problems;
  v.entries = entries;
  v.head = head;
  v.torn_tail = torn_tail;
  v.checkpoint = checkpoint;
  v.ok = v.problems.is_empty();
  Ok(v)
}
