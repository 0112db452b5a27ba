//! Read-only verification of a whole audit log, across every segment.
//!
//! Every line is checked on its own merits (canonical bytes, fields, its hash) and against its
//! neighbour (seq + 1, `prev` = the hash before), and every segment's name against its first
//! entry. A broken link is reported where it breaks and checking goes on from the stored values,
//! so one edited entry gives one problem, a deleted line gives a `seq` and a `chain` problem at
//! the line after, and nothing after a problem goes unchecked.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::{alg_name, entry_hash, list_segments, Head, TornTail, GENESIS};
use crate::error::{LoaError, Result};
use crate::jcs;

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
  /// (name does not match its first entry, or an empty segment before the newest), `key` (HMAC
  /// entries without a key, or plain entries where a key is expected), `head` (does not reach
  /// or match the expected head: entries removed from the end).
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
}

/// Verifies every segment of the log in `dir` with `key` (the HMAC key, if the log uses one).
/// Never writes and never throws for damage; an unreadable directory is an error.
pub fn verify(dir: &Path, key: Option<&[u8]>, expected_head: Option<&Head>) -> Result<AuditVerification> {
  let segments = list_segments(dir)?;
  let mut v = AuditVerification {
    ok: false,
    entries: 0,
    segments: segments.len() as u64,
    head: None,
    problems: Vec::new(),
    torn_tail: None,
  };
  let mut report = |segment: &str, line: u64, kind: &str, detail: String| {
    v.problems.push(AuditProblem { segment: segment.to_string(), line, kind: kind.to_string(), detail });
  };
  // The previous entry's (seq, hash) as stored; None after an unparseable line.
  let mut previous: Option<(u64, String)> = Some((0, GENESIS.to_string()));
  let mut head: Option<Head> = None;
  let mut anchor_seen = false;
  let mut unverifiable = 0u64;
  let mut torn_tail = None;
  let mut entries = 0u64;
  for (index, (first_seq, path)) in segments.iter().enumerate() {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let newest = index + 1 == segments.len();
    let bytes = std::fs::read(path).map_err(|e| LoaError::io("read", path, e))?;
    let complete = bytes.iter().rposition(|&b| b == b'\n').map(|i| i + 1).unwrap_or(0);
    if complete == 0 && !newest {
      report(&name, 0, "segment", "empty segment before the newest one".into());
    }
    let mut line_no = 0u64;
    let lines = if complete == 0 { None } else { Some(bytes[..complete - 1].split(|&b| b == b'\n')) };
    for line in lines.into_iter().flatten() {
      line_no += 1;
      entries += 1;
      let parsed = std::str::from_utf8(line).ok().and_then(|t| jcs::parse_strict(t).ok());
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
          o.keys()
            .all(|k| matches!(k.as_str(), "seq" | "ts" | "action" | "actor" | "details" | "alg" | "prev" | "hash"))
        });
      if !fields_ok {
        report(&name, line_no, "malformed", "entry fields are missing, of the wrong type, or unknown".into());
      }
      if jcs::to_vec(&value).ok().as_deref() != Some(line) {
        report(&name, line_no, "format", "entry is not in canonical form (bytes changed)".into());
      }
      if line_no == 1 && seq != *first_seq {
        report(&name, 0, "segment", format!("segment is named for seq {first_seq} but starts at seq {seq}"));
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
      previous = Some((seq, stored_hash.clone()));
      head = Some(Head { seq, hash: stored_hash });
    }
    if complete < bytes.len() {
      let torn = TornTail { segment: name.clone(), line: line_no + 1, bytes: (bytes.len() - complete) as u64 };
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
  if let Some(expected) = expected_head {
    if !anchor_seen && expected.seq > 0 {
      let last = head.as_ref().map(|h| h.seq).unwrap_or(0);
      report(
        "",
        0,
        "head",
        format!("the log ends at seq {last}, before the expected head at seq {}: entries were removed", expected.seq),
      );
    }
  }
  v.entries = entries;
  v.head = head;
  v.torn_tail = torn_tail;
  v.ok = v.problems.is_empty();
  Ok(v)
}
