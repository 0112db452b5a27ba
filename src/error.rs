//! The one error type of the crate.
//!
//! Every fallible function returns [`LoaError`]. Each variant maps to a stable string
//! [`code`](LoaError::code) that JavaScript callers branch on (`err.code === 'E_WAL_LOCKED'`), so
//! codes are part of the public API: add new ones, never rename or reuse them. Messages are for
//! humans and may change; they never contain record data, only paths, offsets and reasons.

use std::io;
use std::path::Path;

/// Result alias used throughout the crate.
pub type Result<T, E = LoaError> = std::result::Result<T, E>;

/// The one table of error codes: each code and the line that documents it. Everything else is
/// generated from it: [`ERROR_CODES`] and [`ERROR_CODE_DOCS`] here, the binding's `LoaErrorCode`
/// string enum (so the TypeScript union in `index.d.ts`, with these lines as its JSDoc), the
/// run-time list `loaErrorCodes()`, and the error table in `docs/errors.md`, which a test checks
/// (and rewrites with `LOA_BLESS=1 cargo test`). Codes are added, never renamed or reused.
///
/// Call it with the name of a macro that takes `$(CODE => "doc",)*`.
macro_rules! error_code_table {
  ($then:ident) => {
    $then! {
      E_WAL_LOCKED => "Another writer holds a lock past its timeout: a WAL session (`lockTimeoutMs`), WAL consolidation, the key ring, the audit log or a queue; the message names which.",
      E_WAL_CORRUPT => "A WAL segment is damaged somewhere other than its torn tail; `segment` and `offset` say where. Reading never repairs it.",
      E_WAL_CLOSED => "The Wal was closed, or (with `sync: 'batch'`) stopped after a failed background fsync; open it again.",
      E_IO => "The operating system refused a read, write, fsync, rename or lock; `osError` names the cause (`ENOSPC`, `EACCES`, `ENOTDIR`, ...).",
      E_INVALID_ARGUMENT => "An argument has the wrong type or an unacceptable value (also a string with a lone surrogate where text is stored). The message names the argument, never its content.",
      E_TOO_LARGE => "A record, argument or file is over a documented size limit.",
      E_PATH_OUTSIDE_ROOT => "A path is absolute, contains `..`, or goes through a symlink where the library keeps its own directories: it could lead outside its root.",
      E_CONFIG_INVALID => "`.loa.config.yaml` holds an invalid value; `key` names its dotted path (values are shown only when they are plain names).",
      E_STATE_CORRUPT => "A state file kept by the library cannot be read (`path` names it). It is never read as empty nor overwritten: left untouched, or moved aside to `<name>.corrupt-<timestamp>`.",
      E_INTERNAL => "A bug in `@loa/core` (a caught panic, a broken invariant). The process keeps running; please report it.",
      E_SIGNATURE_INVALID => "A signature, MAC or chained hash that must verify before going on does not (e.g. the newest audit entry under the given `hmacKey`, a tampered signed snapshot).",
      E_KEY_NOT_FOUND => "No key with that id in the key ring, or no active signing key.",
      E_KEY_EXISTS => "`KeyRing.generate` when an active key exists (use `rotate`).",
      E_KEY_INVALID => "A private key (a key file or `LOA_SIGNING_KEY`) is malformed, too readable, revoked, or does not match its public key. Key material is never shown.",
      E_AUDIT_CORRUPT => "An audit segment is damaged where an append must continue the chain; `segment` and `line` say where.",
      E_NOT_REGULAR_FILE => "A symlink, FIFO, device, socket or directory sits where the library keeps a regular file of its own; `path` names it and `kind` says what it is. It is never opened, read, truncated or written through.",
      E_AUDIT_TRUNCATED => "The audit log ends before a head that was signed earlier (its checkpoint, or the `auditHead` of a signed manifest): entries were cut off the end. Nothing is appended to it.",
      E_ILLEGAL_TRANSITION => "A status change the persistence state machine forbids (`completed -> in_progress`, anything out of `archived`, ...); `from` and `to` name the two statuses. Nothing is written.",
      E_DEGRADED => "Recovery left the workspace in degraded mode (its state did not verify and no trusted source restored it, or a recovery loop was detected): memory writes are refused until `loa recover` ends RUNNING.",
      E_REPLICA_UNAVAILABLE => "The object store did not answer, or refused a request, after the retries (`loa replicate`); the message names the operation and the object key, never credentials. What a pull wrote before it is complete and checked; run the command again.",
      E_REPLICA_CORRUPT => "An object read from the replica is not what its origin's index recorded (sha256 or size mismatch, an unsafe key or name, an index that does not parse, a body that does not open under the encryption key); nothing local was overwritten with it.",
      E_RECORD_REFUSED => "Memory consolidation did not apply a WAL record (its own or one pulled from another origin): it names a file other than the memory record its own content derives (NOTES.md, an identity or ledger file, another memory's id, a path outside the grimoire), its memory does not parse or check, or its op would delete. It is reported with its session and seq, never its content; nothing is written for it.",
      E_READ_ONLY => "A write (capture, consolidate, forget, import) on a `MemoryStore` opened with `readOnly: true`, which reads and never writes; open one without it to write.",
    }
  };
}
#[cfg(feature = "napi")] // the binding generates its string enum from it
pub(crate) use error_code_table;

macro_rules! code_lists {
  ($($code:ident => $doc:literal,)*) => {
    /// Every code an error thrown by `@loa/core` can carry, in table order.
    pub const ERROR_CODES: &[&str] = &[$(stringify!($code)),*];
    /// Each code with the line that documents it.
    pub const ERROR_CODE_DOCS: &[(&str, &str)] = &[$((stringify!($code), $doc)),*];
  };
}
error_code_table!(code_lists);

#[derive(Debug, thiserror::Error)]
pub enum LoaError {
  /// Another writer (this process or another) holds the lock and did not release it in time.
  #[error("{what} is locked by another writer (gave up after {waited_ms} ms)")]
  WalLocked { what: String, waited_ms: u64 },

  /// A WAL segment holds bytes that are neither valid records nor a torn tail.
  #[error("WAL corrupt in {segment} at byte {offset}: {reason}")]
  WalCorrupt { segment: String, offset: u64, reason: String },

  /// The Wal was closed (or poisoned by a failed fsync) and accepts no more appends.
  #[error("WAL is closed: {0}")]
  WalClosed(String),

  /// The operating system refused a read, write, fsync, rename or lock.
  #[error("{context}: {source}")]
  Io {
    context: String,
    #[source]
    source: io::Error,
  },

  /// The caller passed something the API does not accept (wrong type, empty name, ...).
  #[error("invalid argument: {0}")]
  InvalidArgument(String),

  /// A record or file exceeds a documented size limit.
  #[error("{what} is {size} bytes, over the limit of {limit} bytes")]
  TooLarge { what: String, size: u64, limit: u64 },

  /// A path is absolute, contains `..`, or resolves (through a symlink) outside its root.
  #[error("path outside root: {0}")]
  PathOutsideRoot(String),

  /// `.loa.config.yaml` has a value of the wrong type or out of range; `key` is its dotted path.
  #[error("invalid configuration value at `{key}`: {reason}")]
  ConfigInvalid { key: String, reason: String },

  /// A state file (JSON kept by the library) cannot be parsed. It is left untouched, never
  /// overwritten, so that a human can look at it.
  #[error("state file {path} is corrupt: {reason}")]
  StateCorrupt { path: String, reason: String },

  /// A bug: a panic was caught at the boundary, or an invariant did not hold.
  #[error("internal error: {0}")]
  Internal(String),

  /// A signature, MAC or chained hash that must verify before the library goes on does not
  /// (e.g. the newest audit entry under the given HMAC key).
  #[error("signature invalid: {0}")]
  SignatureInvalid(String),

  /// No key with that id in the key ring, or no active signing key.
  #[error("key not found: {0}")]
  KeyNotFound(String),

  /// `generate` on a key ring that already has an active key (use `rotate`).
  #[error("key exists: {0}")]
  KeyExists(String),

  /// A private key (file or `LOA_SIGNING_KEY`) is malformed or does not match its public key.
  /// The message never contains key material.
  #[error("invalid key: {0}")]
  KeyInvalid(String),

  /// An audit segment is damaged where an append must continue the chain (not a torn tail).
  #[error("audit log corrupt in {segment} at line {line}: {reason}")]
  AuditCorrupt { segment: String, line: u64, reason: String },

  /// Where the library keeps a regular file of its own there is a symlink, FIFO, device, socket
  /// or directory. It is never opened, read, truncated or written through.
  #[error("{path} is a {kind}, not a regular file; refusing to use it as a state file")]
  NotRegularFile { path: String, kind: &'static str },

  /// The audit log ends before a head that was signed earlier (its checkpoint, or the
  /// `auditHead` of a signed manifest): entries were cut off the end.
  #[error("the audit log ends at seq {log_seq}, before seq {anchored_seq} signed in {anchor}: entries were cut off")]
  AuditTruncated { log_seq: u64, anchored_seq: u64, anchor: String },

  /// A status change the persistence state machine (seed 004) forbids. Nothing is written.
  #[error("illegal status transition from {from} to {to}")]
  IllegalTransition { from: &'static str, to: &'static str },

  /// The workspace is in degraded mode (see [`crate::recovery`]); memory writes are refused.
  #[error("degraded mode: {0}")]
  Degraded(String),

  /// The object store did not answer or refused a request after the retries. The message names
  /// the operation and the key, never credentials.
  #[error("object store unavailable: {0}")]
  ReplicaUnavailable(String),

  /// An object of the replica does not match what its origin's index recorded, or the index
  /// itself is unusable; `key` names the object.
  #[error("replica object {key} is unusable: {reason}")]
  ReplicaCorrupt { key: String, reason: String },

  /// Memory consolidation refused a WAL record: it would write something other than the
  /// memory record its own content derives. The reason says which check failed, never what the
  /// record holds.
  #[error("record refused: {0}")]
  RecordRefused(String),

  /// A write on a store opened read-only.
  #[error("read-only store: {0}")]
  ReadOnly(String),
}

impl LoaError {
  /// The stable code JavaScript sees as `err.code`.
  pub fn code(&self) -> &'static str {
    match self {
      LoaError::WalLocked { .. } => "E_WAL_LOCKED",
      LoaError::WalCorrupt { .. } => "E_WAL_CORRUPT",
      LoaError::WalClosed(_) => "E_WAL_CLOSED",
      LoaError::Io { .. } => "E_IO",
      LoaError::InvalidArgument(_) => "E_INVALID_ARGUMENT",
      LoaError::TooLarge { .. } => "E_TOO_LARGE",
      LoaError::PathOutsideRoot(_) => "E_PATH_OUTSIDE_ROOT",
      LoaError::ConfigInvalid { .. } => "E_CONFIG_INVALID",
      LoaError::StateCorrupt { .. } => "E_STATE_CORRUPT",
      LoaError::Internal(_) => "E_INTERNAL",
      LoaError::SignatureInvalid(_) => "E_SIGNATURE_INVALID",
      LoaError::KeyNotFound(_) => "E_KEY_NOT_FOUND",
      LoaError::KeyExists(_) => "E_KEY_EXISTS",
      LoaError::KeyInvalid(_) => "E_KEY_INVALID",
      LoaError::AuditCorrupt { .. } => "E_AUDIT_CORRUPT",
      LoaError::NotRegularFile { .. } => "E_NOT_REGULAR_FILE",
      LoaError::AuditTruncated { .. } => "E_AUDIT_TRUNCATED",
      LoaError::IllegalTransition { .. } => "E_ILLEGAL_TRANSITION",
      LoaError::Degraded(_) => "E_DEGRADED",
      LoaError::ReplicaUnavailable(_) => "E_REPLICA_UNAVAILABLE",
      LoaError::ReplicaCorrupt { .. } => "E_REPLICA_CORRUPT",
      LoaError::RecordRefused(_) => "E_RECORD_REFUSED",
      LoaError::ReadOnly(_) => "E_READ_ONLY",
    }
  }

  /// A copy for answering several callers with one failure (io::Error is not Clone; the OS
  /// error number and message are kept).
  pub fn duplicate(&self) -> LoaError {
    match self {
      LoaError::WalLocked { what, waited_ms } => LoaError::WalLocked { what: what.clone(), waited_ms: *waited_ms },
      LoaError::WalCorrupt { segment, offset, reason } => {
        LoaError::WalCorrupt { segment: segment.clone(), offset: *offset, reason: reason.clone() }
      }
      LoaError::WalClosed(r) => LoaError::WalClosed(r.clone()),
      LoaError::Io { context, source } => LoaError::Io {
        context: context.clone(),
        source: match source.raw_os_error() {
          Some(errno) => io::Error::from_raw_os_error(errno),
          None => io::Error::new(source.kind(), source.to_string()),
        },
      },
      LoaError::InvalidArgument(r) => LoaError::InvalidArgument(r.clone()),
      LoaError::TooLarge { what, size, limit } => LoaError::TooLarge { what: what.clone(), size: *size, limit: *limit },
      LoaError::PathOutsideRoot(r) => LoaError::PathOutsideRoot(r.clone()),
      LoaError::ConfigInvalid { key, reason } => LoaError::ConfigInvalid { key: key.clone(), reason: reason.clone() },
      LoaError::StateCorrupt { path, reason } => LoaError::StateCorrupt { path: path.clone(), reason: reason.clone() },
      LoaError::Internal(r) => LoaError::Internal(r.clone()),
      LoaError::SignatureInvalid(r) => LoaError::SignatureInvalid(r.clone()),
      LoaError::KeyNotFound(r) => LoaError::KeyNotFound(r.clone()),
      LoaError::KeyExists(r) => LoaError::KeyExists(r.clone()),
      LoaError::KeyInvalid(r) => LoaError::KeyInvalid(r.clone()),
      LoaError::AuditCorrupt { segment, line, reason } => {
        LoaError::AuditCorrupt { segment: segment.clone(), line: *line, reason: reason.clone() }
      }
      LoaError::NotRegularFile { path, kind } => LoaError::NotRegularFile { path: path.clone(), kind },
      LoaError::AuditTruncated { log_seq, anchored_seq, anchor } => {
        LoaError::AuditTruncated { log_seq: *log_seq, anchored_seq: *anchored_seq, anchor: anchor.clone() }
      }
      LoaError::IllegalTransition { from, to } => LoaError::IllegalTransition { from, to },
      LoaError::Degraded(r) => LoaError::Degraded(r.clone()),
      LoaError::ReplicaUnavailable(r) => LoaError::ReplicaUnavailable(r.clone()),
      LoaError::ReplicaCorrupt { key, reason } => LoaError::ReplicaCorrupt { key: key.clone(), reason: reason.clone() },
      LoaError::RecordRefused(r) => LoaError::RecordRefused(r.clone()),
      LoaError::ReadOnly(r) => LoaError::ReadOnly(r.clone()),
    }
  }

  /// Wraps an I/O error with what we were doing and to which path.
  pub fn io(context: impl Into<String>, path: &Path, source: io::Error) -> Self {
    LoaError::Io { context: format!("{} {}", context.into(), path.display()), source }
  }

  /// True for an `E_IO` error whose cause is a missing file or directory.
  pub fn is_not_found(&self) -> bool {
    matches!(self, LoaError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
  }

  /// The OS error name (`ENOSPC`, `EFBIG`, ...) of an `E_IO` error, when there is one.
  pub fn os_error_name(&self) -> Option<&'static str> {
    let LoaError::Io { source, .. } = self else { return None };
    let errno = source.raw_os_error()?;
    Some(match errno {
      1 => "EPERM",
      2 => "ENOENT",
      5 => "EIO",
      6 => "ENXIO",
      9 => "EBADF",
      13 => "EACCES",
      17 => "EEXIST",
      20 => "ENOTDIR",
      21 => "EISDIR",
      22 => "EINVAL",
      24 => "EMFILE",
      27 => "EFBIG",
      28 => "ENOSPC",
      30 => "EROFS",
      36 => "ENAMETOOLONG",
      40 => "ELOOP",
      122 => "EDQUOT",
      _ => return None,
    })
  }
}

/// A conversion that cannot fail (`From` seen as `TryFrom`), so that generic code can take either.
impl From<std::convert::Infallible> for LoaError {
  fn from(never: std::convert::Infallible) -> LoaError {
    match never {}
  }
}

/// Shorthand for `Err(LoaError::InvalidArgument(..))`.
pub fn invalid<T>(message: impl Into<String>) -> Result<T> {
  Err(LoaError::InvalidArgument(message.into()))
}

/// Whether a string the caller gave may appear in an error message as it is. Messages never
/// quote caller data (a metadata key or an option may hold a token), except a short plain name
/// that keeps them useful: at most 16 ASCII letters, digits, `_` and `$`, not only digits, such as
/// the option value `p50k_base`, the member name `files` or the value `5s`. No known credential
/// format, e-mail address, or phone, card or account number has that shape.
pub fn is_plain_name(s: &str) -> bool {
  (1..=16).contains(&s.len())
    && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
    && !s.bytes().all(|b| b.is_ascii_digit())
}

/// `s` quoted when it is a plain name (see [`is_plain_name`]), otherwise a description that
/// does not contain it.
pub fn shown(s: &str) -> String {
  if is_plain_name(s) {
    format!("'{s}'")
  } else {
    format!("a string of {} characters", s.chars().count())
  }
}

/// A message from a parser (serde's `invalid type: string "…", expected u32`, `unknown field
/// `…``) with every quoted value that is not a plain name replaced by `…` (after a name between
/// backticks that is not plain, the whole rest of the message): what was wrong stays readable,
/// the caller's data goes.
pub fn scrub_quoted(message: &str) -> String {
  let mut out = String::with_capacity(message.len());
  let mut rest = message;
  while let Some(start) = rest.find(['"', '`']) {
    let quote = rest.as_bytes()[start];
    out.push_str(&rest[..=start]);
    let body = &rest[start + 1..];
    // The closing quote: serde writes strings with Rust escapes (`\"`), names between backticks.
    let mut end = None;
    let mut escaped = false;
    for (i, b) in body.bytes().enumerate() {
      match b {
        b'\\' if quote == b'"' && !escaped => escaped = true,
        b if b == quote && !escaped => {
          end = Some(i);
          break;
        }
        _ => escaped = false,
      }
    }
    let Some(end) = end else {
      out.push('…');
      return out;
    };
    let inner = &body[..end];
    if quote == b'`' && !is_plain_name(inner) {
      // serde writes a name between backticks without escaping it, so a value that holds a
      // backtick itself has no telling end: whatever follows may still be the value.
      out.push('…');
      return out;
    }
    out.push_str(if is_plain_name(inner) { inner } else { "…" });
    out.push(quote as char);
    rest = &body[end + 1..];
    if quote == b'`' && !serde_connective(&rest[..rest.find(['"', '`']).unwrap_or(rest.len())]) {
      // A value holding a backtick closes its quote early (`ss`eiy...`): what follows the
      // first backtick is then the value's rest, not serde's words, unless it is exactly one
      // of the words serde puts after a name.
      out.push('…');
      return out;
    }
  }
  out.push_str(rest);
  out
}

/// Whether `text`, found between a backtick-quoted name and the next quote, is one of the
/// connectives serde writes there (`unknown variant `x`, expected one of `a`, `b` at line 1
/// column 2`), so that it holds nothing of the input.
fn serde_connective(text: &str) -> bool {
  const WORDS: [&str; 7] =
    ["", ", ", " or ", ", expected one of ", ", expected ", ", there are no variants", ", there are no fields"];
  let head = match text.find(" at line ") {
    Some(at) => {
      let position = &text[at + " at line ".len()..];
      let mut parts = position.splitn(2, " column ");
      let numeric = |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
      if !(numeric(parts.next()) && numeric(parts.next())) {
        return false;
      }
      &text[..at]
    }
    None => text,
  };
  WORDS.contains(&head)
}

#[cfg(test)]
mod tests {
  use super::*;

  /// `docs/errors.md` holds the table generated from [`error_code_table`] between two markers;
  /// `LOA_BLESS=1 cargo test` rewrites it.
  #[test]
  fn the_documented_table_is_the_code_table() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/errors.md");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let (start, end) = ("<!-- error-codes:start -->\n", "<!-- error-codes:end -->");
    let mut table = String::from("| code | when |\n|---|---|\n");
    for (code, doc) in ERROR_CODE_DOCS {
      table.push_str(&format!("| `{code}` | {} |\n", doc.replace('|', "\\|")));
    }
    let found = text.find(start).zip(text.find(end)).map(|(a, b)| &text[a + start.len()..b]);
    if found != Some(table.as_str()) {
      if std::env::var_os("LOA_BLESS").is_some() {
        let (a, b) = (text.find(start).unwrap(), text.find(end).unwrap());
        std::fs::write(&path, format!("{}{start}{table}{}", &text[..a], &text[b..])).unwrap();
      } else {
        panic!("docs/errors.md is not the generated error table; run LOA_BLESS=1 cargo test");
      }
    }
  }

  #[test]
  fn only_plain_names_are_shown() {
    for name in ["files", "p50k_base", "$ref", "_x", "abcdefghijklmnop", "5s"] {
      assert_eq!(shown(name), format!("'{name}'"));
    }
    // Token shapes built at run time (no token-shaped literal in the source).
    let ghp = format!("gh{}_{}", 'p', "a1B2".repeat(9));
    let akia = format!("AK{}{}", "IA", "Z7".repeat(8));
    for secret in [ghp.as_str(), akia.as_str(), "bob@example.com", "4111111111111111", "abcdefghijklmnopq", "a-b"] {
      assert!(!shown(secret).contains(secret), "{secret}");
      let message = format!("invalid type: string {secret:?}, expected u32; unknown field `{secret}`");
      assert!(!scrub_quoted(&message).contains(secret), "{secret}");
    }
    assert_eq!(
      scrub_quoted(r#"invalid type: string "a\"b c", expected `createdAt`, got `x y` and "#),
      r#"invalid type: string "…", expected `createdAt`…"#
    );
    // A value whose backtick closes the quote early, after a plain name (found by the
    // synth_event fuzz target): what follows is not serde's, and none of it stays.
    for value in [
      "ss`eiyyyyyyyyyyyyyyyyyyyyyyyyyyzyyyyyyon_handoff",
      "ss` eiyyyyyyyyyyyyyyyyyyyyyy",
      "ss`, eiyyyyyyyyyyyyyyyyyyyyyy",
    ] {
      let scrubbed =
        scrub_quoted(&format!("unknown variant `{value}`, expected one of `session_handoff`, `x` at line 1 column 9"));
      assert!(!scrubbed.contains("eiyyy"), "{scrubbed}");
    }
    assert_eq!(
      scrub_quoted("unknown variant `sx`, expected one of `session_handoff`, `x` at line 1 column 9"),
      "unknown variant `sx`, expected one of `session_handoff`, `x` at line 1 column 9"
    );
    assert_eq!(scrub_quoted("unknown field `x`, there are no fields"), "unknown field `x`, there are no fields");
    // A value holding backticks (found by the synth_event fuzz target): no part of it stays.
    let value = "`ess_a_long_value_of_the_caller`";
    let scrubbed = scrub_quoted(&format!("unknown variant `{value}`, expected one of `session_handoff`, `x`"));
    assert!(!scrubbed.contains("ess_a_long_value_of_the_caller"), "{scrubbed}");
    assert_eq!(scrubbed, "unknown variant `…");
    assert_eq!(scrub_quoted("missing field `version`"), "missing field `version`");
    assert_eq!(scrub_quoted("cut \"short"), "cut \"…");
  }

  #[test]
  fn every_variant_code_is_listed() {
    let samples = [
      LoaError::WalLocked { what: "s".into(), waited_ms: 1 },
      LoaError::WalCorrupt { segment: "s".into(), offset: 0, reason: "r".into() },
      LoaError::WalClosed("x".into()),
      LoaError::io("write", Path::new("/x"), io::Error::from_raw_os_error(28)),
      LoaError::InvalidArgument("x".into()),
      LoaError::TooLarge { what: "x".into(), size: 2, limit: 1 },
      LoaError::PathOutsideRoot("x".into()),
      LoaError::ConfigInvalid { key: "k".into(), reason: "r".into() },
      LoaError::StateCorrupt { path: "p".into(), reason: "r".into() },
      LoaError::Internal("x".into()),
      LoaError::SignatureInvalid("x".into()),
      LoaError::KeyNotFound("x".into()),
      LoaError::KeyExists("x".into()),
      LoaError::KeyInvalid("x".into()),
      LoaError::AuditCorrupt { segment: "s".into(), line: 1, reason: "r".into() },
      LoaError::NotRegularFile { path: "p".into(), kind: "fifo" },
      LoaError::AuditTruncated { log_seq: 1, anchored_seq: 2, anchor: "checkpoint.json".into() },
      LoaError::IllegalTransition { from: "archived", to: "created" },
      LoaError::Degraded("x".into()),
      LoaError::ReplicaUnavailable("x".into()),
      LoaError::ReplicaCorrupt { key: "k".into(), reason: "r".into() },
      LoaError::RecordRefused("r".into()),
      LoaError::ReadOnly("x".into()),
    ];
    for e in &samples {
      assert!(ERROR_CODES.contains(&e.code()), "{} missing from ERROR_CODES", e.code());
      assert_eq!(e.duplicate().code(), e.code());
    }
    assert_eq!(samples.len(), ERROR_CODES.len());
    assert_eq!(samples[3].os_error_name(), Some("ENOSPC"));
  }
}
