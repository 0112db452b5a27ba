//! Timestamps: parsed as RFC 3339 with any offset, compared as instants, written in one canonical
//! form. The originals compared timestamp strings, so `10:00+02:00` sorted after `09:00Z` although
//! it is an hour earlier; here every comparison is on milliseconds since the Unix epoch.

use std::time::{SystemTime, UNIX_EPOCH};

use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

use crate::error::{LoaError, Result};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
  SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// Parses an RFC 3339 timestamp (`2026-01-02T10:00:00Z`, `2026-01-02T12:00:00.5+02:00`, ...) into
/// milliseconds since the Unix epoch (sub-millisecond digits are truncated). `what` names the
/// value in the `E_INVALID_ARGUMENT` error, which never echoes the input.
pub fn parse_rfc3339_ms(text: &str, what: &str) -> Result<i64> {
  let parsed = OffsetDateTime::parse(text.trim(), &Rfc3339).map_err(|_| {
    LoaError::InvalidArgument(format!("`{what}` must be an RFC 3339 timestamp such as 2026-01-02T10:00:00Z"))
  })?;
  Ok((parsed.unix_timestamp_nanos() / 1_000_000) as i64)
}

/// Same as [`parse_rfc3339_ms`] for callers that report a bad value their own way.
pub fn parse_ms(text: &str) -> Option<i64> {
  parse_rfc3339_ms(text, "timestamp").ok()
}

/// The canonical form of an instant: UTC, millisecond precision, `2026-01-02T10:00:00.000Z`.
/// Canonical strings of instants sort like the instants (for years 0000-9999), but the library
/// never relies on that: it parses before comparing.
pub fn format_ms(ms: i64) -> String {
  let instant = OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
    .unwrap_or(OffsetDateTime::UNIX_EPOCH)
    .to_offset(UtcOffset::UTC);
  format!(
    "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
    instant.year(),
    instant.month() as u8,
    instant.day(),
    instant.hour(),
    instant.minute(),
    instant.second(),
    instant.millisecond()
  )
}

/// A compact form for file names: `20260102T100000123Z`.
pub fn format_ms_compact(ms: i64) -> String {
  format_ms(ms).replace(['-', ':', '.'], "")
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn offsets_are_instants_not_strings() {
    let plus_two = parse_rfc3339_ms("2026-01-02T10:00:00+02:00", "t").unwrap();
    let utc = parse_rfc3339_ms("2026-01-02T09:00:00Z", "t").unwrap();
    // As strings "10:00+02:00" > "09:00Z"; as instants it is an hour earlier.
    assert!(plus_two < utc);
    assert_eq!(utc - plus_two, 3_600_000);
    assert_eq!(
      parse_rfc3339_ms("2026-01-02T04:30:00-05:30", "t").unwrap(),
      parse_rfc3339_ms("2026-01-02T10:00:00.000Z", "t").unwrap()
    );
    assert_eq!(format_ms(plus_two), "2026-01-02T08:00:00.000Z");
    assert_eq!(format_ms(parse_rfc3339_ms("2026-01-02T08:00:00.1239Z", "t").unwrap()), "2026-01-02T08:00:00.123Z");
    assert_eq!(format_ms_compact(utc), "20260102T090000000Z");
  }

  #[test]
  fn garbage_is_invalid_argument_without_echo() {
    for bad in ["yesterday", "2031-07-09", "2031-07-09 10:00:00", "2031-13-09T10:00:00Z", "secret-value"] {
      let err = parse_rfc3339_ms(bad, "timestamp").unwrap_err();
      assert_eq!(err.code(), "E_INVALID_ARGUMENT");
      assert!(!err.to_string().contains(bad), "{err}");
    }
  }
}
