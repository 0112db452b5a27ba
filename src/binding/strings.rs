//! Reading JavaScript strings as UTF-8: one reader per use (many small strings into a reused
//! buffer, one large string with one copy, a prefix of a long string, an owned string), each
//! giving exactly the bytes of `Buffer.from(s, 'utf8')` whatever V8's representation of the
//! string (one-byte or two-byte, sequential, sliced, concatenated or external).
//!
//! A lone UTF-16 surrogate (half of a pair) is not Unicode. V8 writes it as U+FFFD, as
//! `Buffer.from` does; [`Surrogates`] says whether a reader accepts that (text that is only
//! analysed: counted, redacted, gated) or refuses the string with `E_INVALID_ARGUMENT` (strings
//! that are stored, name files, or are hashed or signed: a silent replacement would store
//! something other than what the caller gave).
//!
//! Safety: every `unsafe fn` of this module takes raw N-API handles and has one contract: it is
//! called on the JS thread, with the env of the current call and handles of that call's scope.

use std::ptr;

use napi::sys;

use crate::error::{LoaError, Result};

/// What a lone surrogate in a string does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Surrogates {
  /// The string is refused (`E_INVALID_ARGUMENT`).
  Refuse,
  /// Read as U+FFFD (3 bytes of UTF-8, one UTF-16 unit like the surrogate).
  Replace,
}

/// Why a string was not read. The readers do not know the string's name; the caller says it
/// ([`Refusal::named`], or the argument conversion of `convert`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Refusal {
  LoneSurrogate,
  /// N-API refused to read it (not a string after all, or the environment is going away).
  Unreadable,
  /// V8 wrote bytes that are not UTF-8: a bug, not the caller's doing.
  NotUtf8,
}

impl Refusal {
  /// What is wrong, for a message that names the string first.
  pub fn problem(self) -> &'static str {
    match self {
      Refusal::LoneSurrogate => "holds a lone surrogate (half of a UTF-16 pair), which is not Unicode text",
      Refusal::Unreadable => "could not be read as a string",
      Refusal::NotUtf8 => "was written by V8 as invalid UTF-8",
    }
  }

  /// The error for the string named `what`.
  pub fn named(self, what: &str) -> LoaError {
    match self {
      Refusal::NotUtf8 => LoaError::Internal(format!("`{what}` {}", self.problem())),
      _ => LoaError::InvalidArgument(format!("`{what}` {}", self.problem())),
    }
  }
}

type Read<T> = std::result::Result<T, Refusal>;

/// Whether `value` is a JS string.
pub unsafe fn is_string(env: sys::napi_env, value: sys::napi_value) -> bool {
  let mut t = 0;
  sys::napi_typeof(env, value, &mut t) == sys::Status::napi_ok && t == sys::ValueType::napi_string
}

/// `value`, a member or element just read with `status`, checked to be a string; otherwise the
/// `E_INVALID_ARGUMENT` naming it (`what()`): unreadable when the read failed (a getter or Proxy
/// trap threw; the exception, the caller's, is discarded), or not a string.
pub unsafe fn fetched(
  env: sys::napi_env,
  status: sys::napi_status,
  value: sys::napi_value,
  what: impl Fn() -> String,
) -> Result<sys::napi_value> {
  if status != sys::Status::napi_ok {
    super::clear_pending_exception(env);
    return Err(LoaError::InvalidArgument(format!("`{}` could not be read (a getter or Proxy trap threw)", what())));
  }
  if !is_string(env, value) {
    return Err(LoaError::InvalidArgument(format!("`{}` must be a string", what())));
  }
  Ok(value)
}

/// Length of a JS string in UTF-16 code units (constant time).
unsafe fn utf16_len(env: sys::napi_env, value: sys::napi_value) -> Read<usize> {
  let mut units = 0usize;
  if sys::napi_get_value_string_utf16(env, value, ptr::null_mut(), 0, &mut units) != sys::Status::napi_ok {
    return Err(Refusal::Unreadable);
  }
  Ok(units)
}

/// Length of a JS string in UTF-8 bytes (a pass over the string).
unsafe fn utf8_len(env: sys::napi_env, value: sys::napi_value) -> Read<usize> {
  let mut len = 0usize;
  if sys::napi_get_value_string_utf8(env, value, ptr::null_mut(), 0, &mut len) != sys::Status::napi_ok {
    return Err(Refusal::Unreadable);
  }
  Ok(len)
}

/// Writes the string's UTF-8 into the spare capacity of `buf` (cleared first) and sets its
/// length. `cap` must not exceed `buf.capacity()`.
unsafe fn write_utf8(env: sys::napi_env, value: sys::napi_value, buf: &mut Vec<u8>, cap: usize) -> Read<()> {
  debug_assert!(cap <= buf.capacity());
  buf.clear();
  let mut written = 0usize;
  if sys::napi_get_value_string_utf8(env, value, buf.as_mut_ptr().cast(), cap, &mut written) != sys::Status::napi_ok {
    return Err(Refusal::Unreadable);
  }
  // SAFETY: napi wrote `written` (< cap) initialised bytes at the start of the buffer.
  buf.set_len(written);
  Ok(())
}

/// Whether V8 may have stopped writing early: it writes whole characters only (at most 4 bytes
/// of UTF-8 each) and keeps one byte of `cap` for a NUL, so a result that ends more than 4 bytes
/// before the end is complete. One-byte (Latin-1) strings with non-ASCII characters stop 1 byte
/// short of a 2-byte character, which a `written + 1 == cap` test misses.
fn maybe_cut(written: usize, cap: usize) -> bool {
  written + 4 >= cap
}

/// `utf8` as a `str`, after checking it for lone surrogates when `surrogates` refuses them.
unsafe fn finish(env: sys::napi_env, value: sys::napi_value, utf8: &[u8], surrogates: Surrogates) -> Read<&str> {
  let text = std::str::from_utf8(utf8).map_err(|_| Refusal::NotUtf8)?;
  if surrogates == Surrogates::Refuse && has_lone_surrogate(env, value, utf8)? {
    return Err(Refusal::LoneSurrogate);
  }
  Ok(text)
}

/// Whether the string whose UTF-8 (as V8 wrote it) is `utf8` holds a lone surrogate. Only a
/// string whose UTF-8 holds U+FFFD can: it is then read again as UTF-16 to tell a real U+FFFD
/// from a replaced surrogate.
unsafe fn has_lone_surrogate(env: sys::napi_env, value: sys::napi_value, utf8: &[u8]) -> Read<bool> {
  if memchr::memmem::find(utf8, "\u{FFFD}".as_bytes()).is_none() {
    return Ok(false);
  }
  let len = utf16_len(env, value)?;
  let mut units: Vec<u16> = Vec::with_capacity(len + 1);
  let mut written = 0usize;
  if sys::napi_get_value_string_utf16(env, value, units.as_mut_ptr(), len + 1, &mut written) != sys::Status::napi_ok {
    return Err(Refusal::Unreadable);
  }
  // SAFETY: napi wrote `written` units.
  units.set_len(written);
  Ok(char::decode_utf16(units.iter().copied()).any(|c| c.is_err()))
}

/// Reads the JS string `value` into `buf` (reused between calls) and returns it: one N-API call
/// when the buffer is large enough, which it soon is when reading many strings.
pub unsafe fn read_into(
  env: sys::napi_env,
  value: sys::napi_value,
  buf: &mut Vec<u8>,
  surrogates: Surrogates,
) -> Read<&str> {
  const MIN: usize = 4096;
  if buf.capacity() < MIN {
    buf.clear();
    buf.reserve(MIN);
  }
  let cap = buf.capacity();
  write_utf8(env, value, buf, cap)?;
  if maybe_cut(buf.len(), cap) {
    let len = utf8_len(env, value)?;
    if len > buf.len() {
      buf.clear();
      buf.reserve(len + 1);
      let cap = buf.capacity();
      write_utf8(env, value, buf, cap)?;
    }
  }
  finish(env, value, buf, surrogates)
}

/// Reads the whole JS string `value` into `buf` (reused between calls). A lone surrogate is read
/// as U+FFFD, one UTF-16 unit like the surrogate, so UTF-16 offsets computed on the result match
/// the JS string's. `what` names the string in errors. For large strings (`redact`'s input);
/// [`read_into`] suits many small ones.
///
/// Up to [`UTF16_READ_MAX`] units the string is copied out as UTF-16 and encoded here: V8 copies
/// UTF-16 at memory speed, while its UTF-8 writer goes a character at a time (about 3 µs for
/// 4 KiB of ASCII, a tenth of redacting it). Longer strings are written by V8 as UTF-8 (no
/// second buffer of their size): their UTF-16 length is known without a pass, and UTF-8 needs at
/// most 3 bytes per UTF-16 unit, so one copy is enough.
pub unsafe fn read_whole_into<'b>(
  env: sys::napi_env,
  value: sys::napi_value,
  buf: &'b mut Vec<u8>,
  what: &str,
) -> Result<&'b str> {
  let units = utf16_len(env, value).map_err(|r| r.named(what))?;
  if units <= UTF16_READ_MAX {
    return UNITS
      .with(|cell| {
        let mut scratch = cell.borrow_mut();
        read_utf16(env, value, units, &mut scratch)?;
        Ok(encode_utf8(&scratch, buf))
      })
      .map_err(|r: Refusal| r.named(what));
  }
  let cap = units.saturating_mul(3) + 1;
  buf.clear();
  buf.reserve(cap);
  write_utf8(env, value, buf, cap).map_err(|r| r.named(what))?;
  finish(env, value, buf, Surrogates::Replace).map_err(|r| r.named(what))
}

/// Longest string [`read_whole_into`] reads as UTF-16 (its scratch buffer, kept per thread, is
/// twice this in bytes).
const UTF16_READ_MAX: usize = 1 << 20;

thread_local! {
  static UNITS: std::cell::RefCell<Vec<u16>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The string's `units` UTF-16 code units, into `out` (replacing what it held).
unsafe fn read_utf16(env: sys::napi_env, value: sys::napi_value, units: usize, out: &mut Vec<u16>) -> Read<()> {
  out.clear();
  out.reserve(units + 1);
  let mut written = 0usize;
  if sys::napi_get_value_string_utf16(env, value, out.as_mut_ptr(), units + 1, &mut written) != sys::Status::napi_ok {
    return Err(Refusal::Unreadable);
  }
  // SAFETY: napi wrote `written` (<= units) initialised units at the start of the buffer.
  out.set_len(written.min(units));
  Ok(())
}

/// UTF-16 `units` as UTF-8 in `out` (replacing what it held), each lone surrogate as U+FFFD
/// (what V8's own UTF-8 writer does), returned as the `str` it is. ASCII (most texts) is one
/// vectorised test and one narrowing copy; anything else is converted by `encoding_rs` into a
/// `&mut str`, so the bytes need no validating pass afterwards (one took a sixth of `redact`'s
/// time on text with box drawing or accents, and the former character-at-a-time encoder more).
fn encode_utf8<'o>(units: &[u16], out: &'o mut Vec<u8>) -> &'o str {
  out.clear();
  if units.iter().fold(0u16, |a, &u| a | u) < 0x80 {
    out.extend(units.iter().map(|&u| u as u8));
    // ASCII: checked at memory speed.
    return std::str::from_utf8(out).expect("narrowed ASCII is UTF-8");
  }
  // A UTF-16 unit is at most 3 bytes of UTF-8 (a surrogate pair, two units, is 4); zeros are
  // UTF-8, so the buffer is a `str` before the converter overwrites it.
  out.resize(units.len() * 3, 0);
  let dst = std::str::from_utf8_mut(out).expect("zeros are UTF-8");
  let written = encoding_rs::mem::convert_utf16_to_str(units, dst);
  &dst[..written]
}

/// The JS string `value` as an owned `String`.
pub unsafe fn read_string(env: sys::napi_env, value: sys::napi_value, surrogates: Surrogates) -> Read<String> {
  let units = utf16_len(env, value)?;
  // Short strings: room for the worst case (3 bytes per unit), no measuring pass. Long ones:
  // measured first, so that a large ASCII string does not take three times its size.
  let cap = if units <= 16 * 1024 { units * 3 + 1 } else { utf8_len(env, value)? + 1 };
  let mut buf = Vec::with_capacity(cap);
  write_utf8(env, value, &mut buf, cap)?;
  finish(env, value, &buf, surrogates)?;
  // SAFETY: `finish` checked that the bytes are UTF-8.
  Ok(String::from_utf8_unchecked(buf))
}

/// At least the first `max_bytes` UTF-8 bytes of the JS string `value` (cut at a character
/// boundary), converting no more than about that much of it; and whether that is all of it. A
/// lone surrogate is read as U+FFFD.
pub unsafe fn read_prefix(env: sys::napi_env, value: sys::napi_value, max_bytes: usize) -> Read<(String, bool)> {
  let units = utf16_len(env, value)?;
  // A UTF-16 unit is at most 3 UTF-8 bytes (a surrogate pair, 2 units, is 4).
  let whole = units.saturating_mul(3) <= max_bytes;
  let cap = if whole { units * 3 + 1 } else { max_bytes + 1 };
  let mut buf: Vec<u8> = Vec::with_capacity(cap);
  write_utf8(env, value, &mut buf, cap)?;
  let text = String::from(finish(env, value, &buf, Surrogates::Replace)?);
  let complete = whole || text.chars().map(char::len_utf16).sum::<usize>() == units;
  Ok((text, complete))
}

#[cfg(test)]
mod tests {
  use super::encode_utf8;

  #[test]
  fn utf16_is_encoded_as_v8_writes_utf8() {
    // Lone surrogates of both halves, pairs, every UTF-8 length, and ASCII runs longer and
    // shorter than the 16-unit chunk, at every offset of the non-ASCII unit.
    let pieces: Vec<Vec<u16>> = vec![
      "a".encode_utf16().collect(),
      "é".encode_utf16().collect(),
      "─".encode_utf16().collect(),
      "😀".encode_utf16().collect(),
      vec![0xD83D],
      vec![0xDE00],
      vec![0xDE00, 0xD83D],
      vec![0x7F, 0x80, 0x7FF, 0x800, 0xFFFF],
    ];
    let mut out = Vec::new();
    for p in &pieces {
      for before in 0..40 {
        for after in [0, 1, 15, 16, 17] {
          let mut units: Vec<u16> = "x".repeat(before).encode_utf16().collect();
          units.extend(p);
          units.extend("y".repeat(after).encode_utf16());
          assert_eq!(encode_utf8(&units, &mut out), String::from_utf16_lossy(&units), "{units:x?}");
        }
      }
    }
  }
}
