//! The string-keyed argument readers that `redact.rs` still uses (it is being optimised on
//! another branch and will move to `convert` after that merges; nothing else may use these).
//!
//! Arguments are hostile until read: a property may be a getter that throws, an object may be a
//! Proxy whose traps throw, or a revoked Proxy. Each property is read once (a getter that
//! answers differently on each read cannot make a checked value differ from the used one), and
//! a read that throws becomes `E_INVALID_ARGUMENT` naming the argument, with the JavaScript
//! exception discarded: leaving it pending would throw it beside our error (or instead of it),
//! and its message is the caller's, never ours to repeat. Messages name arguments by the
//! library's own field names and positions; they never quote the caller's values.

use napi::bindgen_prelude::*;
use napi::{JsValue, Unknown, ValueType};

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
  unsafe { strings::read_string(value.value().env, value.raw(), surrogates) }.map_err(|r| r.named(name))
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

pub fn optional_bool(object: &Object, key: &str) -> Result<Option<bool>> {
  match field(object, key)? {
    None => Ok(None),
    Some(v) if v.get_type().ok() == Some(ValueType::Boolean) => {
      unsafe { bool::from_napi_value(v.value().env, v.raw()) }.map(Some).map_err(|_| wrong(key, "a boolean"))
    }
    Some(_) => Err(wrong(key, "a boolean")),
  }
}

/// Bytes from a `Buffer`/`Uint8Array` (copied) or a string (UTF-8; a lone surrogate is refused).
pub fn bytes(value: Unknown, name: &str) -> Result<Vec<u8>> {
  let env = value.value().env;
  match value.get_type().ok() {
    Some(ValueType::String) => Ok(read_string(value, name, Surrogates::Refuse)?.into_bytes()),
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

/// An array of strings of analysed text (see [`text`]); `undefined` and `null` as absent.
pub fn optional_text_array(object: &Object, key: &str) -> Result<Option<Vec<String>>> {
  field(object, key)?.map(|v| read_array(v, key, Surrogates::Replace)).transpose()
}

/// An array of strings of analysed text (see [`text`]); elements are named `name[i]`.
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
