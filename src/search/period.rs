//! The time a query asks about: `in March 2026`, `March 2026`, `in 2025`.
//!
//! Questions about a conversation often name when ("Which city did Mia visit in March 2026?"),
//! and the turn that answers never does: its date is when it was captured. A query that names a
//! month of a year, or a year after `in`/`during`, gives a [`Period`] (UTC) that ranking prefers
//! (see [`super::rank`]). Nothing else is read as time: "march" alone is a word, `2026` alone a
//! number, and relative expressions ("last week") are not interpreted, since a query's "now"
//! and the conversation's may differ.
//!
//! No crate finds a time expression inside free text (date parsers read a whole string); this
//! is a scan over the query's words, linear in the query, with the calendar arithmetic done by
//! the `time` crate.

use time::{Date, Month, PrimitiveDateTime, Time};
use unicode_segmentation::UnicodeSegmentation;

/// A span of time, in milliseconds since the Unix epoch: `start_ms` included, `end_ms` not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
  pub start_ms: i64,
  pub end_ms: i64,
}

impl Period {
  pub fn contains(&self, ms: i64) -> bool {
    (self.start_ms..self.end_ms).contains(&ms)
  }
}

/// Years read as years (outside: a number, not a time).
const YEARS: std::ops::RangeInclusive<i32> = 1900..=2199;

/// The period the query names, if exactly one (see the module docs). Two different ones ("in
/// March 2026 or in 2025") name none: ranking then prefers no time.
pub fn period_in(query: &str) -> Option<Period> {
  let mut found: Option<Period> = None;
  let mut previous = "";
  let mut month: Option<Month> = None;
  for word in query.unicode_words() {
    let year = year_of(word);
    let period = match (year, month) {
      (Some(y), Some(m)) => month_period(y, m),
      (Some(y), None) if previous.eq_ignore_ascii_case("in") || previous.eq_ignore_ascii_case("during") => {
        year_period(y)
      }
      _ => None,
    };
    if let Some(p) = period {
      if found.is_some_and(|f| f != p) {
        return None;
      }
      found = Some(p);
    }
    month = month_of(word);
    previous = word;
  }
  found
}

fn year_of(word: &str) -> Option<i32> {
  if word.len() != 4 || !word.bytes().all(|b| b.is_ascii_digit()) {
    return None;
  }
  word.parse().ok().filter(|y| YEARS.contains(y))
}

/// A month's English name in any case, read by the `time` crate (which takes `March`).
fn month_of(word: &str) -> Option<Month> {
  if !(3..=9).contains(&word.len()) || !word.is_ascii() {
    return None;
  }
  let mut name = word.to_ascii_lowercase();
  name[..1].make_ascii_uppercase();
  name.parse().ok()
}

fn first_of(year: i32, month: Month) -> Option<i64> {
  let day = Date::from_calendar_date(year, month, 1).ok()?;
  let at = PrimitiveDateTime::new(day, Time::MIDNIGHT).assume_utc();
  i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok()
}

fn month_period(year: i32, month: Month) -> Option<Period> {
  let start_ms = first_of(year, month)?;
  Some(Period { start_ms, end_ms: start_ms + i64::from(month.length(year)) * super::DAY_MS as i64 })
}

fn year_period(year: i32) -> Option<Period> {
  Some(Period { start_ms: first_of(year, Month::January)?, end_ms: first_of(year + 1, Month::January)? })
}

#[cfg(test)]
mod tests {
  use super::*;

  fn ms(rfc3339: &str) -> i64 {
    crate::timestamp::parse_rfc3339_ms(rfc3339, "t").unwrap()
  }

  #[test]
  fn a_month_of_a_year_is_that_month_in_utc() {
    let p = period_in("Which city did Mia visit in March 2026?").unwrap();
    assert_eq!(p, Period { start_ms: ms("2026-03-01T00:00:00Z"), end_ms: ms("2026-04-01T00:00:00Z") });
    assert!(p.contains(ms("2026-03-31T23:59:59.999Z")));
    assert!(!p.contains(ms("2026-04-01T00:00:00Z")));
    let december = period_in("what happened in DECEMBER 2025").unwrap();
    assert_eq!(december.end_ms, ms("2026-01-01T00:00:00Z"));
    assert_eq!(period_in("february 2024").unwrap().end_ms, ms("2024-03-01T00:00:00Z"));
  }

  #[test]
  fn a_year_counts_only_after_in_or_during() {
    let p = period_in("Where did Jonas travel in 2025?").unwrap();
    assert_eq!(p, Period { start_ms: ms("2025-01-01T00:00:00Z"), end_ms: ms("2026-01-01T00:00:00Z") });
    assert_eq!(period_in("what did we decide during 2024").unwrap().start_ms, ms("2024-01-01T00:00:00Z"));
    assert_eq!(period_in("error 2025 in the logs"), None);
    assert_eq!(period_in("in 20255"), None);
    assert_eq!(period_in("in 1200"), None);
  }

  #[test]
  fn words_alone_and_two_periods_name_none() {
    assert_eq!(period_in("we march on"), None);
    assert_eq!(period_in("May I ask what happened?"), None);
    assert_eq!(period_in("in March 2026 or in April 2026"), None);
    assert!(period_in("in March 2026, yes, March 2026").is_some());
    assert_eq!(period_in(""), None);
  }

  #[test]
  fn hostile_queries_cost_one_pass() {
    let long = "march 2026 ".repeat(3000);
    assert!(period_in(&long).is_some());
    let mixed = "in 2025 in 2026 ".repeat(2000);
    assert_eq!(period_in(&mixed), None);
  }
}
