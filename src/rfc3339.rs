//! RFC 3339 timestamps, written in UTC with milliseconds (`2026-11-22T08:15:00.123Z`) and read
//! with any offset. Times are compared as parsed milliseconds, never as strings (SPEC: the
//! originals compared timestamp strings, which breaks as soon as two offsets meet).

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
  SystemTime::now()
    .duration_since(UNIX_EPOCH)
    .map(|d| d.as_millis() as i64)
    .unwrap_or(0)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
  let y = if m <= 2 { y - 1 } else { y };
  let era = y.div_euclid(400);
  let yoe = y - era * 400;
  let mp = (m + 9) % 12;
  let doy = (153 * mp + 2) / 5 + d - 1;
  let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
  let z = z + 719_468;
  let era = z.div_euclid(146_097);
  let doe = z - era * 146_097;
  let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
  let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  let mp = (5 * doy + 2) / 153;
  let d = doy - (153 * mp + 2) / 5 + 1;
  let m = if mp < 10 { mp + 3 } else { mp - 9 };
  (
    if m <= 2 {
      yoe + era * 400 + 1
    } else {
      yoe + era * 400
    },
    m,
    d,
  )
}

/// `ms` since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn format_ms(ms: i64) -> String {
  let days = ms.div_euclid(86_400_000);
  let rest = ms.rem_euclid(86_400_000);
  let (y, m, d) = civil_from_days(days);
  let (h, min, s, milli) = (
    rest / 3_600_000,
    rest / 60_000 % 60,
    rest / 1000 % 60,
    rest % 1000,
  );
  format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
}

/// Parses an RFC 3339 date-time (`T` or space, optional fraction, `Z` or `±HH:MM`) into
/// milliseconds since the epoch (fractions beyond milliseconds are truncated).
pub fn parse_ms(text: &str) -> Option<i64> {
  let b = text.as_bytes();
  let num = |range: std::ops::Range<usize>| -> Option<i64> {
    let part = b.get(range)?;
    if part.iter().all(u8::is_ascii_digit) {
      std::str::from_utf8(part).ok()?.parse().ok()
    } else {
      None
    }
  };
  if b.len() < 20
    || b[4] != b'-'
    || b[7] != b'-'
    || !matches!(b[10], b'T' | b't' | b' ')
    || b[13] != b':'
    || b[16] != b':'
  {
    return None;
  }
  let (y, mo, d, h, mi, s) = (
    num(0..4)?,
    num(5..7)?,
    num(8..10)?,
    num(11..13)?,
    num(14..16)?,
    num(17..19)?,
  );
  let month_days = [
    31,
    if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) {
      29
    } else {
      28
    },
    31,
    30,
    31,
    30,
    31,
    31,
    30,
    31,
    30,
    31,
  ];
  if !(1..=12).contains(&mo)
    || d < 1
    || d > month_days[(mo - 1) as usize]
    || h > 23
    || mi > 59
    || s > 60
  {
    return None;
  }
  let mut i = 19;
  let mut millis = 0;
  if b.get(i) == Some(&b'.') {
    let start = i + 1;
    i = start;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
      i += 1;
    }
    if i == start {
      return None;
    }
    let digits = &text[start..i.min(start + 3)];
    millis = digits.parse::<i64>().ok()? * 10_i64.pow(3 - digits.len() as u32);
  }
  let offset_min = match b.get(i)? {
    b'Z' | b'z' if i + 1 == b.len() => 0,
    sign @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
      let (oh, om) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
      if oh > 23 || om > 59 {
        return None;
      }
      let total = oh * 60 + om;
      if *sign == b'+' {
        total
      } else {
        -total
      }
    }
    _ => return None,
  };
  let days = days_from_civil(y, mo, d);
  Some(((days * 24 + h) * 60 + mi - offset_min) * 60_000 + s.min(59) * 1000 + millis)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn formats_and_parses_round_trip_with_offsets() {
    for ms in [
      0,
      1,
      951_782_400_000,
      1_763_769_600_123,
      -86_400_001,
      4_102_444_800_000,
    ] {
      assert_eq!(parse_ms(&format_ms(ms)), Some(ms), "{}", format_ms(ms));
    }
    assert_eq!(format_ms(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(format_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
    assert_eq!(
      parse_ms("2026-01-01T02:00:00+02:00"),
      parse_ms("2026-01-01T00:00:00Z")
    );
    assert_eq!(
      parse_ms("2025-12-31T23:30:00.5-00:30"),
      Some(parse_ms("2026-01-01T00:00:00.000Z").unwrap() + 500)
    );
    for bad in [
      "2026-02-30T00:00:00Z",
      "2026-01-01",
      "2026-01-01T00:00:00",
      "2026-13-01T00:00:00Z",
      "2026-01-01T00:00:00.Z",
      "x026-01-01T00:00:00Z",
    ] {
      assert_eq!(parse_ms(bad), None, "{bad}");
    }
  }
}
