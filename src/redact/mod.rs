//! PII and secret redaction (interface; the detectors are being built in issue 3).
//!
//! Everything an agent says passes through [`redact`] before it is stored. The contract that the
//! memory pipeline relies on:
//! - `text` of the result contains no byte of any matched value; each finding is replaced by a
//!   placeholder (`[REDACTED:EMAIL]`, or `[EMAIL_3f2a9c]` when pseudonymizing);
//! - findings never carry the value or a prefix of it, only its kind, UTF-16 offsets into the
//!   input, the detection method and a keyed fingerprint;
//! - `blocked` says the whole text must not be stored (it contains a private key).

/// Options of [`redact`].
#[derive(Debug, Clone, Default)]
pub struct RedactOptions {
  /// Exact values never redacted (e.g. a project's public contact address).
  pub allowlist: Vec<String>,
  /// Key of the fingerprint hash (HMAC-SHA256). `None`: a random key per process, so
  /// fingerprints only compare within one process.
  pub key: Option<Vec<u8>>,
  /// Replace each value by a stable pseudonym derived from `key` (`[EMAIL_3f2a9c]`) instead of
  /// `[REDACTED:EMAIL]`, so that "the same person as before" survives redaction.
  pub pseudonymize: bool,
}

/// One redacted span.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
  /// snake_case kind: `email`, `phone`, `credit_card`, `aws_access_key_id`, `private_key`, ...
  pub kind: String,
  /// UTF-16 code unit offsets into the input (what JavaScript string indices are).
  pub start: usize,
  pub end: usize,
  /// How it was found: `pattern`, `checksum`, `entropy`, `keyword`, ...
  pub method: String,
  /// Hex HMAC-SHA256 of the value under the options' key, truncated; never the value.
  pub fingerprint: String,
}

/// The result of [`redact`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Redaction {
  pub text: String,
  pub findings: Vec<Finding>,
  pub blocked: bool,
}

/// Redacts `text`. Stub until the detectors land: returns the text unchanged.
pub fn redact(text: &str, _options: &RedactOptions) -> Redaction {
  Redaction { text: text.to_string(), findings: Vec::new(), blocked: false }
}
