//! Reading JavaScript strings as UTF-8 without napi-rs's two-call conversion, and reading only a
//! prefix of a long string.

use std::ptr;

use napi::sys;

use crate::error::{LoaError, Result};

fn failed(what: &str) -> LoaError {
  LoaError::InvalidArgument(format!("`{what}` could not be read as a string"))
}

/// Whether `value` is a JS string.
pub unsafe fn is_string(env: sys::napi_env, value: sys::napi_value) -> bool {
  let mut t = 0;
  sys::napi_typeof(env, value, &mut t) == sys::Status::napi_ok && t == sys::ValueType::napi_string
}

/// Length of a JS string in UTF-16 code units (constant time).
unsafe fn utf16_len(env: sys::napi_env, value: sys::napi_value, what: &str) -> Result<usize> {
  let mut units = 0usize;
  if sys::napi_get_value_string_utf16(env, value, ptr::null_mut(), 0, &mut units) != sys::Status::napi_ok {
    return Err(failed(what));
  }
  Ok(units)
}

/// Converts what V8 wrote (valid UTF-8 except, in theory, a cut last character) into a String.
fn into_string(mut bytes: Vec<u8>) -> String {
  match String::from_utf8(bytes) {
    Ok(s) => s,
    Err(e) => {
      let valid = e.utf8_error().valid_up_to();
      bytes = e.into_bytes();
      bytes.truncate(valid);
      String::from_utf8(bytes).unwrap_or_default()
    }
  }
}

/// Reads the JS string `value` into `buf` (reused between calls) and returns it. One N-API call
/// when the buffer is large enough, which it soon is when reading many strings.
pub unsafe fn read_into<'b>(
  env: sys::napi_env,
  value: sys::napi_value,
  buf: &'b mut Vec<u8>,
  what: &str,
) -> Result<&'b str> {
  if buf.capacity() < 4096 {
    buf.reserve(4096);
  }
  let mut written = 0usize;
  let cap = buf.capacity();
  if sys::napi_get_value_string_utf8(env, value, buf.as_mut_ptr().cast(), cap, &mut written) != sys::Status::napi_ok {
    return Err(failed(what));
  }
  if written + 1 >= cap {
    // Possibly cut: ask for the exact length and read again.
    let mut len = 0usize;
    if sys::napi_get_value_string_utf8(env, value, ptr::null_mut(), 0, &mut len) != sys::Status::napi_ok {
      return Err(failed(what));
    }
    buf.reserve(len + 1);
    let cap = buf.capacity();
    if sys::napi_get_value_string_utf8(env, value, buf.as_mut_ptr().cast(), cap, &mut written) != sys::Status::napi_ok {
      return Err(failed(what));
    }
  }
  buf.set_len(written);
  match std::str::from_utf8(buf) {
    Ok(s) => Ok(s),
    Err(e) => {
      let valid = e.valid_up_to();
      Ok(std::str::from_utf8(&buf[..valid]).unwrap_or_default())
    }
  }
}

/// Reads the whole JS string `value` into `buf` (reused between calls) with one copy: the UTF-16
/// length is known to V8 without a pass over the string (the UTF-8 length is not), and UTF-8
/// needs at most 3 bytes per UTF-16 unit, so no measuring pass is needed. For large strings
/// (`redact`'s input); [`read_into`] suits many small ones. V8 writes a lone surrogate as
/// U+FFFD, one UTF-16 unit like the surrogate, so UTF-16 offsets computed on the result match
/// the JS string's.
pub unsafe fn read_whole_into<'b>(
  env: sys::napi_env,
  value: sys::napi_value,
  buf: &'b mut Vec<u8>,
  what: &str,
) -> Result<&'b str> {
  let cap = utf16_len(env, value, what)?.saturating_mul(3) + 1;
  buf.clear();
  buf.reserve(cap);
  let mut written = 0usize;
  if sys::napi_get_value_string_utf8(env, value, buf.as_mut_ptr().cast(), cap, &mut written) != sys::Status::napi_ok {
    return Err(failed(what));
  }
  // SAFETY: napi wrote `written` bytes into the reserved capacity.
  buf.set_len(written);
  std::str::from_utf8(buf).map_err(|_| failed(what))
}

/// At least the first `max_bytes` UTF-8 bytes of the JS string `value` (cut at a character
/// boundary), converting no more than about that much of it; and whether that is all of it.
pub unsafe fn read_prefix(
  env: sys::napi_env,
  value: sys::napi_value,
  max_bytes: usize,
  what: &str,
) -> Result<(String, bool)> {
  let units = utf16_len(env, value, what)?;
  // A UTF-16 unit is at most 3 UTF-8 bytes (a surrogate pair, 2 units, is 4).
  let whole = units.saturating_mul(3) <= max_bytes;
  let cap = if whole { units * 3 + 1 } else { max_bytes + 1 };
  let mut buf: Vec<u8> = Vec::with_capacity(cap);
  let mut written = 0usize;
  if sys::napi_get_value_string_utf8(env, value, buf.as_mut_ptr().cast(), cap, &mut written) != sys::Status::napi_ok {
    return Err(failed(what));
  }
  buf.set_len(written);
  let text = into_string(buf);
  let complete = whole || text.chars().map(char::len_utf16).sum::<usize>() == units;
  Ok((text, complete))
}
