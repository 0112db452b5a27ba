//! Reading JavaScript arguments with errors that carry `E_INVALID_ARGUMENT` and name the
//! argument, instead of napi-rs's generic conversion errors.
//!
//! Arguments are hostile until read: a property may be a getter that throws, an object may be a
//! Proxy whose traps throw, or a revoked Proxy. Each property is read once (a getter that
//! answers differently on each read cannot make a checked value differ from the used one), and
//! a read that throws becomes `E_INVALID_ARGUMENT` naming the argument, with the JavaScript
//! exception discarded: leaving it pending would throw it beside our error (or instead of it),
//! and its message is the caller's, never ours to repeat. Messages name arguments by the
//! library's own field names and positions; they never quote the caller's values.

use napi::bindgen_prelude::*;
use napi::{Env, JsValue, Unknown, ValueType};

use super::strings::{self, Surrogates};
use crate::error::{LoaError, Result};

pub fn wrong(name: &str, expected: &str) -> LoaError {
  LoaError::InvalidArgument(format!("`{name}` must be {expected}"))
}

/// The error for a read of `name` that threw (a getter, a Proxy trap, a revoked Proxy); discards
/// the pending exception.
pub fn unreadable(env: napi::sys::napi_env, name: &str) -> LoaError {
  super::clear_pending_exception(env);
  LoaError::InvalidArgument(format!("`{name}` could not be read (a getter or Proxy trap threw)"))
}

fn is_absent(value: &Unknown) -> bool {
  matches!(value.get_type(), Ok(ValueType::Undefined | ValueType::Null))
}

fn read_string(value: Unknown, name: &str, surrogates: Surrogates) -> Result<String> {
  if value.get_type().ok() != Some(ValueType::String) {
    return Err(wrong(name, "a string"));
  }
  // SAFETY: on the JS thread with its env; `value` is a string.
  unsafe { strings::read_string(value.value().env, value.raw(), surrogates, &|| name.to_string()) }
}

/// A string that is stored, names a file, or is hashed or signed: a lone surrogate is refused.
pub fn string(value: Unknown, name: &str) -> Result<String> {
  read_string(value, name, Surrogates::Refuse)
}

/// Text that is only analysed (counted, redacted, gated): a lone surrogate reads as U+FFFD.
pub fn text(value: Unknown, name: &str) -> Result<String> {
  read_string(value, name, Surrogates::Replace)
}

pub fn optional_object<'a>(value: Option<Unknown<'a>>, name: &str) -> Result<Option<Object<'a>>> {
  match value {
    None => Ok(None),
    Some(v) if is_absent(&v) => Ok(None),
    Some(v) if v.get_type().ok() == Some(ValueType::Object) && !v.is_array().unwrap_or(false) => {
      Ok(Some(unsafe { Object::from_napi_value(v.value().env, v.raw()) }.map_err(|_| wrong(name, "an object"))?))
    }
    Some(_) => Err(wrong(name, "an object")),
  }
}

/// `object[key]`, read once; `undefined` and `null` as absent.
pub fn field<'a>(object: &Object<'a>, key: &str) -> Result<Option<Unknown<'a>>> {
  let value: Unknown = object.get_named_property(key).map_err(|_| unreadable(object.value().env, key))?;
  Ok(if is_absent(&value) { None } else { Some(value) })
}

pub fn optional_string(object: &Object, key: &str) -> Result<Option<String>> {
  field(object, key)?.map(|v| string(v, key)).transpose()
}

/// [`optional_string`] for analysed text (see [`text`]).
pub fn optional_text(object: &Object, key: &str) -> Result<Option<String>> {
  field(object, key)?.map(|v| text(v, key)).transpose()
}

pub fn optional_bool(object: &Object, key: &str) -> Result<Option<bool>> {
  match field(object, key)? {
    None => Ok(None),
    Some(v) if v.get_type().ok() == Some(ValueType::Boolean) => {
      unsafe { bool::from_napi_value(v.value().env, v.raw()) }.map(Some).map_err(|_| wrong(key, "a boolean"))
    }
    Some(_) => Err(wrong(key, "a boolean")),
  }
}

/// A non-negative integer that fits a JS number exactly.
pub fn optional_u64(object: &Object, key: &str) -> Result<Option<u64>> {
  field(object, key)?.map(|v| u64_value(v, key)).transpose()
}

/// A finite number.
pub fn optional_f64(object: &Object, key: &str) -> Result<Option<f64>> {
  match field(object, key)? {
    None => Ok(None),
    Some(v) if v.get_type().ok() == Some(ValueType::Number) => {
      let n = unsafe { f64::from_napi_value(v.value().env, v.raw()) }.map_err(|_| wrong(key, "a number"))?;
      if n.is_finite() {
        Ok(Some(n))
      } else {
        Err(wrong(key, "a finite number"))
      }
    }
    Some(_) => Err(wrong(key, "a number")),
  }
}

/// A non-negative integer that fits a JS number exactly, as a positional argument.
pub fn u64_value(value: Unknown, name: &str) -> Result<u64> {
  if value.get_type().ok() == Some(ValueType::Number) {
    let n = unsafe { f64::from_napi_value(value.value().env, value.raw()) }.map_err(|_| wrong(name, "a number"))?;
    if n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_991.0 {
      return Ok(n as u64);
    }
  }
  Err(wrong(name, "a non-negative integer"))
}

/// Bytes from a `Buffer`/`Uint8Array` (copied) or a string (UTF-8; a lone surrogate is refused).
pub fn bytes(value: Unknown, name: &str) -> Result<Vec<u8>> {
  let env = value.value().env;
  match value.get_type().ok() {
    Some(ValueType::String) => Ok(string(value, name)?.into_bytes()),
    Some(ValueType::Object) if value.is_buffer().unwrap_or(false) => {
      let slice = unsafe { BufferSlice::from_napi_value(env, value.raw()) }.map_err(|_| wrong(name, "a Buffer"))?;
      Ok(slice.to_vec())
    }
    Some(ValueType::Object) if value.is_typedarray().unwrap_or(false) => {
      let array = unsafe { Uint8Array::from_napi_value(env, value.raw()) }
        .map_err(|_| wrong(name, "a Buffer, Uint8Array or string"))?;
      Ok(array.to_vec())
    }
    _ => Err(wrong(name, "a Buffer, Uint8Array or string")),
  }
}

pub fn optional_bytes(object: &Object, key: &str) -> Result<Option<Vec<u8>>> {
  field(object, key)?.map(|v| bytes(v, key)).transpose()
}

/// A plain JSON object, returned as JSON text. Read strictly (see `json::from_js`): values JSON
/// cannot hold (`NaN`, a `Date`, a function) are refused instead of silently changed.
pub fn optional_json_object(env: &Env, object: &Object, key: &'static str) -> Result<Option<String>> {
  let Some(value) = field(object, key)? else { return Ok(None) };
  if value.get_type().ok() != Some(ValueType::Object) || value.is_array().unwrap_or(false) {
    return Err(wrong(key, "a plain object"));
  }
  let json = super::json::from_js(env, value, key)?;
  serde_json::to_string(&json).map(Some).map_err(|_| wrong(key, "JSON-serialisable"))
}

/// An array of strings (`undefined`/`null` as absent).
pub fn optional_string_array(object: &Object, key: &str) -> Result<Option<Vec<String>>> {
  field(object, key)?.map(|v| string_array(v, key)).transpose()
}

/// [`optional_string_array`] for analysed text (see [`text`]).
pub fn optional_text_array(object: &Object, key: &str) -> Result<Option<Vec<String>>> {
  field(object, key)?.map(|v| read_array(v, key, Surrogates::Replace)).transpose()
}

/// An array of strings; elements are named `name[i]` in errors.
pub fn string_array(value: Unknown, name: &str) -> Result<Vec<String>> {
  read_array(value, name, Surrogates::Refuse)
}

/// [`string_array`] for analysed text (see [`text`]).
pub fn text_array(value: Unknown, name: &str) -> Result<Vec<String>> {
  read_array(value, name, Surrogates::Replace)
}

fn read_array(value: Unknown, name: &str, surrogates: Surrogates) -> Result<Vec<String>> {
  if !value.is_array().unwrap_or(false) {
    return Err(wrong(name, "an array of strings"));
  }
  let env = value.value().env;
  let array = unsafe { Array::from_napi_value(env, value.raw()) }.map_err(|_| wrong(name, "an array of strings"))?;
  let mut out = Vec::with_capacity(array.len() as usize);
  for i in 0..array.len() {
    let item_name = || format!("{name}[{i}]");
    let item: Unknown = match array.get(i) {
      Ok(Some(item)) => item,
      Ok(None) => return Err(wrong(&item_name(), "a string")),
      Err(_) => return Err(unreadable(env, &item_name())),
    };
    out.push(read_string(item, &item_name(), surrogates)?);
  }
  Ok(out)
}

/// An object, required.
pub fn required_object<'a>(value: Unknown<'a>, name: &str) -> Result<Object<'a>> {
  optional_object(Some(value), name)?.ok_or_else(|| wrong(name, "an object"))
}
