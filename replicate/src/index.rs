//! The per-origin index, `<prefix>/origins/<origin>/index.json`: what an origin has shipped and
//! the SHA-256 of every object, written last by a push. Readers trust an object only through
//! an index entry: they derive its key from the entry's checked fields (never from a listing)
//! and check its size and digest before using a byte of it.
//!
//! Format, version 2 (JSON):
//!
//! ```json
//! { "version": 2, "origin": "m0123456789abcdef",
//!   "segments": [ { "session": "cli", "firstSeq": 1, "lastSeq": 9, "sealed": false,
//!                   "size": 4096, "sha256": "<hex>" } ],
//!   "grimoire": { "manifest": "manifest.json", "manifestSize": 812, "manifestSha256": "<hex>",
//!                 "files": [ { "path": "NOTES.md", "size": 120, "sha256": "<hex>" } ] },
//!   "events": [ { "name": "20260110T130352000Z_agent-a.md", "size": 300, "sha256": "<hex>" } ] }
//! ```
//!
//! **Version 2** adds two optional members, each needed only sometimes:
//!
//! - a segment rewritten in place by forgetting (same seqs, other bytes) carries
//!   `"rewritten": true` and is stored under a key that ends in its sha256 (see
//!   [`SegmentEntry::key`]), so the new object never overwrites the one the previous index names;
//! - `checkpoint`: the WAL checkpoint (the origin's consolidation state) shipped with the sealed
//!   grimoire it describes, each file stored by digest under `checkpoint/<sha256>`:
//!
//! ```json
//! "checkpoint": { "manifestSha256": "<hex of the grimoire manifest it goes with>",
//!                 "head": { "size": 90, "sha256": "<hex>" },
//!                 "shards": [ { "name": "0a3.json", "size": 700, "sha256": "<hex>" } ] }
//! ```
//!
//! - `forgetRequests`: records of other origins whose memories this origin forgot (it had them
//!   from its mirror of that origin's session), each named by the origin, session and seq of
//!   the original record, never by content or memory id; sorted, without duplicates, at most
//!   [`MAX_FORGET_REQUESTS`]. The origin named applies those naming it on its next pull:
//!
//! ```json
//! "forgetRequests": [ { "origin": "beta", "session": "cli", "seq": 7 } ]
//! ```
//!
//! A push writes version 2 when the index has a checkpoint, a rewritten segment or forget
//! requests, and version 1
//! otherwise, so that older readers keep reading indexes that need nothing new. A reader accepts
//! version 1 (which has none of these members; one is an error) and version 2; any other version, an
//! unknown member, a bad name or digest is `E_REPLICA_CORRUPT` for that origin (other origins are
//! still read).

use std::collections::BTreeSet;

use loa_core::wal::reader::validate_session_id;
use loa_core::{LoaError, Result};
use serde::{Deserialize, Serialize};

use crate::settings::valid_origin;

/// The newest index format version, written when the index needs it (else 1).
pub const INDEX_VERSION: u32 = 2;
/// The largest index read (about 300,000 entries).
pub const MAX_INDEX_BYTES: u64 = 64 * 1024 * 1024;
/// The largest grimoire file an index may list (what a segment may be; recovery's own limit
/// is applied on top when staging).
pub const MAX_BLOB_BYTES: u64 = 256 * 1024 * 1024;

/// The most forget requests an index holds.
pub const MAX_FORGET_REQUESTS: usize = 100_000;

/// The index's name in an origin's directory.
pub const INDEX_NAME: &str = "index.json";

/// One shipped WAL segment: its records `firstSeq..=lastSeq`, as the segment's header and
/// complete records (never the torn or preallocated tail of an active segment).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SegmentEntry {
  pub session: String,
  pub first_seq: u64,
  pub last_seq: u64,
  /// A newer segment of the session existed when it was shipped: it will not grow.
  pub sealed: bool,
  pub size: u64,
  pub sha256: String,
  /// Rewritten by forgetting after it was shipped (version 2): its key carries its digest.
  #[serde(default, skip_serializing_if = "std::ops::Not::not")]
  pub rewritten: bool,
}

impl SegmentEntry {
  /// The object key below the origin's directory: `<first>-<last>.wal`, and for a rewritten
  /// segment `<first>-<last>-<sha256>.wal`, so that the rewritten object never overwrites the
  /// one the index in the bucket names until the new index does (a push cut in between leaves
  /// a consistent bucket, and the old object is deleted after the index is written).
  pub fn key(&self, origin: &str) -> String {
    if self.rewritten {
      format!("origins/{origin}/wal/{}/{:020}-{:020}-{}.wal", self.session, self.first_seq, self.last_seq, self.sha256)
    } else {
      format!("origins/{origin}/wal/{}/{:020}-{:020}.wal", self.session, self.first_seq, self.last_seq)
    }
  }
}

/// One file of the sealed grimoire, stored by its digest (`grimoire/blobs/<sha256>`): the
/// manifest's own entry, so the index records exactly what the signed manifest does.
pub use loa_core::sign::manifest::FileEntry;

/// The sealed grimoire: its signed manifest and the files it lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrimoireEntry {
  /// The manifest's file name in the grimoire.
  pub manifest: String,
  pub manifest_size: u64,
  pub manifest_sha256: String,
  pub files: Vec<FileEntry>,
}

/// One ledger event file, shared by every origin under `ledger/events/<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventEntry {
  pub name: String,
  pub size: u64,
  pub sha256: String,
}

/// One object of a checkpoint, stored by digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectEntry {
  pub size: u64,
  pub sha256: String,
}

/// One shard of a checkpoint: its file name in `consolidation/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardEntry {
  pub name: String,
  pub size: u64,
  pub sha256: String,
}

/// The WAL checkpoint: the consolidation state (head and shards) that goes with the sealed
/// grimoire whose manifest has digest `manifest_sha256`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckpointEntry {
  pub manifest_sha256: String,
  pub head: ObjectEntry,
  pub shards: Vec<ShardEntry>,
}

impl CheckpointEntry {
  /// Every object's digest and size: the head first.
  pub fn objects(&self) -> impl Iterator<Item = (&str, u64)> {
    std::iter::once((self.head.sha256.as_str(), self.head.size))
      .chain(self.shards.iter().map(|s| (s.sha256.as_str(), s.size)))
  }
}

/// A record of another origin whose memory this origin forgot: that origin forgets the memory
/// the record wrote when it pulls (version 2). Ordered by origin, session, seq.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForgetRequest {
  pub origin: String,
  pub session: String,
  pub seq: u64,
}

/// An origin's index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Index {
  pub version: u32,
  pub origin: String,
  pub segments: Vec<SegmentEntry>,
  pub grimoire: Option<GrimoireEntry>,
  pub events: Vec<EventEntry>,
  /// Version 2 only.
  #[serde(default, skip_serializing_if = "Option::is_none")]
  pub checkpoint: Option<CheckpointEntry>,
  /// Version 2 only; absent when empty.
  #[serde(default, rename = "forgetRequests", skip_serializing_if = "Option::is_none")]
  pub forget_requests: Option<Vec<ForgetRequest>>,
}

/// The key of a grimoire file (or manifest) stored by digest.
pub fn blob_key(origin: &str, sha256: &str) -> String {
  format!("origins/{origin}/grimoire/blobs/{sha256}")
}

/// The key of a checkpoint object stored by digest.
pub fn checkpoint_key(origin: &str, sha256: &str) -> String {
  format!("origins/{origin}/checkpoint/{sha256}")
}

/// A shard file name as consolidation writes them: three lowercase hex digits, `.json`.
fn valid_shard_name(name: &str) -> bool {
  name.len() == 8
    && name.ends_with(".json")
    && name[..3].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The shared key of a ledger event.
pub fn event_key(name: &str) -> String {
  format!("ledger/events/{name}")
}

/// The index's key.
pub fn index_key(origin: &str) -> String {
  format!("origins/{origin}/{INDEX_NAME}")
}

fn is_sha256(s: &str) -> bool {
  s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A ledger event name as the synthesis part writes them (`<ts>_<agent>.md`, `~<n>` suffixes,
/// `.json` session handoffs): one plain file name, never a path, never hidden.
pub fn valid_event_name(name: &str) -> bool {
  (1..=255).contains(&name.len())
    && !name.starts_with('.')
    && (name.ends_with(".md") || name.ends_with(".json"))
    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-~".contains(&b))
}

/// A grimoire path as a manifest lists it: relative, `/`-separated, no empty, `.` or `..`
/// part, no NUL.
fn valid_relative_path(path: &str) -> bool {
  !path.is_empty()
    && path.len() <= 4096
    && !path.contains('\0')
    && !path.starts_with('/')
    && path.split('/').all(|c| !c.is_empty() && c != "." && c != ".." && c.len() <= 255)
}

impl Index {
  /// An empty index of `origin`.
  pub fn empty(origin: &str) -> Index {
    Index {
      version: INDEX_VERSION,
      origin: origin.to_string(),
      segments: Vec::new(),
      grimoire: None,
      events: Vec::new(),
      checkpoint: None,
      forget_requests: None,
    }
  }

  /// Parses and checks an index read from `key`, which must be the index of `origin`.
  pub fn parse(bytes: &[u8], origin: &str, key: &str) -> Result<Index> {
    let corrupt = |reason: String| LoaError::ReplicaCorrupt { key: key.to_string(), reason };
    let index: Index =
      serde_json::from_slice(bytes).map_err(|e| corrupt(format!("not an index: {}", e.classify_name())))?;
    if index.version != 1 && index.version != INDEX_VERSION {
      return Err(corrupt(format!("index version {} is not version 1 or {INDEX_VERSION}", index.version)));
    }
    if index.version == 1 && index.segments.iter().any(|s| s.rewritten) {
      return Err(corrupt("a version 1 index names a rewritten segment".into()));
    }
    if let Some(c) = &index.checkpoint {
      let mut names = BTreeSet::new();
      let bad_shard = |s: &ShardEntry| {
        !valid_shard_name(&s.name) || !is_sha256(&s.sha256) || s.size > loa_core::wal::state::MAX_SHARD_BYTES
      };
      if index.version == 1
        || !is_sha256(&c.manifest_sha256)
        || !is_sha256(&c.head.sha256)
        || c.head.size > loa_core::wal::state::MAX_STATE_BYTES
        || c.shards.iter().any(|s| bad_shard(s) || !names.insert(s.name.as_str()))
      {
        return Err(corrupt("the checkpoint entry is malformed (or in a version 1 index)".into()));
      }
    }
    if index.origin != origin || !valid_origin(&index.origin) {
      return Err(corrupt("the index names another origin".into()));
    }
    if let Some(requests) = &index.forget_requests {
      let bad = |r: &ForgetRequest| {
        !valid_origin(&r.origin) || r.origin == index.origin || validate_session_id(&r.session).is_err()
      };
      if index.version == 1
        || requests.len() > MAX_FORGET_REQUESTS
        || requests.iter().any(bad)
        || requests.windows(2).any(|w| w[0] >= w[1])
      {
        return Err(corrupt("the forget requests are malformed, unsorted, too many (or in a version 1 index)".into()));
      }
    }
    let mut seen = BTreeSet::new();
    for s in &index.segments {
      if validate_session_id(&s.session).is_err() {
        return Err(corrupt("a segment's session is not a plain session id".into()));
      }
      if !is_sha256(&s.sha256) || s.last_seq < s.first_seq || s.size > loa_core::wal::MAX_SEGMENT_BYTES {
        return Err(corrupt(format!("segment {} of a session is malformed", s.first_seq)));
      }
      if !seen.insert((s.session.as_str(), s.first_seq)) {
        return Err(corrupt(format!("segment {} of a session is listed twice", s.first_seq)));
      }
    }
    if let Some(g) = &index.grimoire {
      let plain = !g.manifest.contains('/') && valid_relative_path(&g.manifest);
      if !plain || !is_sha256(&g.manifest_sha256) || g.manifest_size > loa_core::sign::manifest::MAX_MANIFEST_BYTES {
        return Err(corrupt("the grimoire's manifest entry is malformed".into()));
      }
      let mut paths = BTreeSet::new();
      for f in &g.files {
        let bad = !valid_relative_path(&f.path) || !is_sha256(&f.sha256) || f.size > MAX_BLOB_BYTES;
        if bad || !paths.insert(f.path.as_str()) {
          return Err(corrupt("a grimoire file entry is malformed or listed twice".into()));
        }
      }
    }
    let mut names = BTreeSet::new();
    for e in &index.events {
      let bad = !valid_event_name(&e.name) || !is_sha256(&e.sha256) || e.size > loa_core::synth::event::MAX_EVENT_BYTES;
      if bad || !names.insert(e.name.as_str()) {
        return Err(corrupt("an event entry is malformed or listed twice".into()));
      }
    }
    Ok(index)
  }

  /// The index as stored (pretty JSON, entries sorted so that equal indexes are equal bytes),
  /// as the lowest version that holds it.
  pub fn to_bytes(&self) -> Vec<u8> {
    let mut sorted = self.clone();
    sorted.segments.sort_by(|a, b| (&a.session, a.first_seq).cmp(&(&b.session, b.first_seq)));
    sorted.events.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(c) = &mut sorted.checkpoint {
      c.shards.sort_by(|a, b| a.name.cmp(&b.name));
    }
    if let Some(requests) = &mut sorted.forget_requests {
      requests.sort();
      requests.dedup();
    }
    if sorted.forget_requests.as_ref().is_some_and(Vec::is_empty) {
      sorted.forget_requests = None;
    }
    // Version 1 while nothing needs version 2, so older readers keep reading it.
    let needs_2 =
      sorted.checkpoint.is_some() || sorted.forget_requests.is_some() || sorted.segments.iter().any(|s| s.rewritten);
    sorted.version = if needs_2 { INDEX_VERSION } else { 1 };
    let mut out = serde_json::to_vec_pretty(&sorted).expect("an index always serialises");
    out.push(b'\n');
    out
  }
}

trait ClassifyName {
  fn classify_name(&self) -> &'static str;
}

impl ClassifyName for serde_json::Error {
  /// The kind of a parse error without its text (which can quote the untrusted input).
  fn classify_name(&self) -> &'static str {
    match self.classify() {
      serde_json::error::Category::Io => "read error",
      serde_json::error::Category::Syntax => "JSON syntax error",
      serde_json::error::Category::Data => "unexpected or missing member",
      serde_json::error::Category::Eof => "cut short",
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn sample() -> Index {
    let sha = "a".repeat(64);
    Index {
      version: 1,
      origin: "m1".into(),
      segments: vec![SegmentEntry {
        session: "cli".into(),
        first_seq: 1,
        last_seq: 3,
        sealed: true,
        size: 100,
        sha256: sha.clone(),
        rewritten: false,
      }],
      grimoire: Some(GrimoireEntry {
        manifest: "manifest.json".into(),
        manifest_size: 10,
        manifest_sha256: sha.clone(),
        files: vec![FileEntry { path: "memory/x.json".into(), size: 3, sha256: sha.clone() }],
      }),
      events: vec![EventEntry { name: "20260110T130352000Z_a.md".into(), size: 3, sha256: sha }],
      checkpoint: None,
      forget_requests: None,
    }
  }

  fn with_checkpoint() -> Index {
    let sha = "b".repeat(64);
    Index {
      version: 2,
      checkpoint: Some(CheckpointEntry {
        manifest_sha256: sha.clone(),
        head: ObjectEntry { size: 50, sha256: sha.clone() },
        shards: vec![ShardEntry { name: "0a3.json".into(), size: 70, sha256: sha }],
      }),
      ..sample()
    }
  }

  #[test]
  fn an_index_round_trips() {
    let index = sample();
    assert_eq!(Index::parse(&index.to_bytes(), "m1", "k").unwrap(), index);
  }

  #[test]
  fn rewritten_segments_have_their_own_keys_and_need_version_2() {
    let plain = &sample().segments[0];
    let rewritten = SegmentEntry { rewritten: true, sha256: "b".repeat(64), ..plain.clone() };
    assert_eq!(plain.key("m1"), format!("origins/m1/wal/cli/{:020}-{:020}.wal", 1, 3));
    assert_eq!(rewritten.key("m1"), format!("origins/m1/wal/cli/{:020}-{:020}-{}.wal", 1, 3, "b".repeat(64)));
    let mut index = sample();
    index.segments[0] = rewritten;
    index.version = INDEX_VERSION;
    let text = String::from_utf8(index.to_bytes()).unwrap();
    assert!(text.contains("\"version\": 2"), "a rewritten segment needs version 2");
    assert_eq!(Index::parse(text.as_bytes(), "m1", "k").unwrap(), index);
    let plain_text = String::from_utf8(sample().to_bytes()).unwrap();
    assert!(plain_text.contains("\"version\": 1") && !plain_text.contains("rewritten"), "absent unless set");
  }

  /// Every case is refused as a corrupt index (the failing case's number in the message).
  fn assert_all_corrupt(cases: &[String]) {
    for (i, case) in cases.iter().enumerate() {
      let err = Index::parse(case.as_bytes(), "m1", "k").unwrap_err();
      assert_eq!(err.code(), "E_REPLICA_CORRUPT", "case {i}");
    }
  }

  #[test]
  fn versions_one_and_two_are_read_and_the_lowest_that_fits_is_written() {
    let v1 = sample();
    assert!(String::from_utf8(v1.to_bytes()).unwrap().contains("\"version\": 1"));
    let v2 = with_checkpoint();
    let text = String::from_utf8(v2.to_bytes()).unwrap();
    assert!(text.contains("\"version\": 2") && text.contains("\"manifestSha256\""));
    assert_eq!(Index::parse(text.as_bytes(), "m1", "k").unwrap(), v2);
    // A version 2 index without a checkpoint is read too (and written back as version 1).
    let plain = String::from_utf8(v1.to_bytes()).unwrap().replace("\"version\": 1", "\"version\": 2");
    assert_eq!(Index::parse(plain.as_bytes(), "m1", "k").unwrap().checkpoint, None);
  }

  #[test]
  fn hostile_checkpoint_entries_are_refused() {
    let text = String::from_utf8(with_checkpoint().to_bytes()).unwrap();
    let cases = [
      text.replace("\"version\": 2", "\"version\": 1"),
      text.replace("0a3.json", "../0a3.json"),
      text.replace("0a3.json", "0A3.json"),
      text.replace("0a3.json", "0a3.js"),
      text.replace("\"size\": 70", "\"size\": 99999999999"),
      text.replace("\"size\": 50", "\"size\": 999999999999"),
      text.replace("\"manifestSha256\"", "\"extra\": 1, \"manifestSha256\""),
    ];
    assert_all_corrupt(&cases);
  }

  #[test]
  fn hostile_indexes_are_refused() {
    let text = String::from_utf8(sample().to_bytes()).unwrap();
    let cases = [
      text.replace("\"cli\"", "\"../x\""),
      text.replace("memory/x.json", "../../etc/passwd"),
      text.replace("memory/x.json", "/etc/passwd"),
      text.replace("20260110T130352000Z_a.md", "../a.md"),
      text.replace("\"manifest.json\"", "\"a/manifest.json\""),
      text.replace("\"version\": 1", "\"version\": 3"),
      // A member of version 2 in a version 1 index.
      text.replace("\"sealed\"", "\"rewritten\": true, \"sealed\""),
      text.replace("\"origin\": \"m1\"", "\"origin\": \"m2\""),
      text.replace(&"a".repeat(64), &"A".repeat(64)),
      text.replace("\"firstSeq\": 1", "\"firstSeq\": 4"),
      text.replace("\"sealed\"", "\"extra\": 1, \"sealed\""),
      // Sizes that would make a bounded read unbounded.
      text.replace("\"size\": 3,\n      \"sha256\"", "\"size\": 9999999999,\n      \"sha256\""),
      "[]".into(),
    ];
    assert_all_corrupt(&cases);
  }

  fn with_requests() -> Index {
    let request =
      |origin: &str, session: &str, seq| ForgetRequest { origin: origin.into(), session: session.into(), seq };
    Index {
      version: 2,
      forget_requests: Some(vec![request("beta", "cli", 7), request("beta", "cli", 9), request("gamma", "s.1", 2)]),
      ..sample()
    }
  }

  #[test]
  fn forget_requests_need_version_2_and_are_written_sorted_without_duplicates() {
    let index = with_requests();
    let text = String::from_utf8(index.to_bytes()).unwrap();
    assert!(text.contains("\"version\": 2") && text.contains("\"forgetRequests\""), "{text}");
    assert_eq!(Index::parse(text.as_bytes(), "m1", "k").unwrap(), index);
    let mut shuffled = index.clone();
    let requests = shuffled.forget_requests.as_mut().unwrap();
    requests.reverse();
    requests.push(requests[0].clone());
    assert_eq!(shuffled.to_bytes(), index.to_bytes());
    // None left: the member goes, and with it the need for version 2.
    let empty = Index { forget_requests: Some(Vec::new()), ..sample() };
    let text = String::from_utf8(empty.to_bytes()).unwrap();
    assert!(text.contains("\"version\": 1") && !text.contains("forgetRequests"), "{text}");
  }

  #[test]
  fn hostile_forget_requests_are_refused() {
    let text = String::from_utf8(with_requests().to_bytes()).unwrap();
    let too_many = {
      let mut index = with_requests();
      index.forget_requests = Some(
        (0..=MAX_FORGET_REQUESTS as u64)
          .map(|seq| ForgetRequest { origin: "beta".into(), session: "cli".into(), seq })
          .collect(),
      );
      String::from_utf8(index.to_bytes()).unwrap()
    };
    let cases = [
      // A version 2 member in a version 1 index, even empty.
      text.replace("\"version\": 2", "\"version\": 1"),
      String::from_utf8(sample().to_bytes()).unwrap().replace("\"events\"", "\"forgetRequests\": [],\n  \"events\""),
      text.replace("\"gamma\"", "\"../x\""),
      text.replace("\"gamma\"", "\"Gamma\""),
      text.replace("\"gamma\"", "\"\""),
      // The index's own origin.
      text.replace("\"gamma\"", "\"m1\""),
      text.replace("\"s.1\"", "\"../s\""),
      text.replace("\"s.1\"", "\"a/b\""),
      text.replace("\"s.1\"", "\"\""),
      text.replace("\"s.1\"", &format!("\"{}\"", "s".repeat(200))),
      text.replace("\"seq\": 2", "\"seq\": -2"),
      text.replace("\"seq\": 2", "\"seq\": \"2\""),
      text.replace("\"seq\": 2", "\"seq\": 2, \"content\": \"x\""),
      // Unsorted and duplicated.
      text.replace("\"seq\": 9", "\"seq\": 5"),
      text.replace("\"seq\": 9", "\"seq\": 7"),
      text.replace("\"forgetRequests\": [", "\"forgetRequests\": {").replace("\n  ]\n}", "\n  }\n}"),
      too_many,
    ];
    assert_all_corrupt(&cases);
  }

  #[test]
  fn event_names_are_plain_file_names() {
    assert!(valid_event_name("20260110T130352000Z_agent-a~2.md"));
    assert!(valid_event_name("handoff_1.json"));
    for bad in ["", ".x.md", "a/b.md", "a.txt", "..md/x", "a b.md"] {
      assert!(!valid_event_name(bad), "{bad}");
    }
  }
}
