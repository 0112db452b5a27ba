//! JavaScript values to and from JSON values, faithfully, and `canonicalizeJson`.
//!
//! napi-rs's serde conversion is not faithful enough for anything that is hashed or signed: it
//! turns `undefined` into `null`, NaN into `null`, integral doubles into `i64` (so `1e300`
//! saturates to 9223372036854775807), Buffers into arrays of numbers, a `Date` or a `Map` into
//! `{}`, and lone surrogates into U+FFFD; and it recurses without a depth limit (100,000 nested
//! arrays overflow the stack). This walker reads the value itself (raw N-API calls, one pass)
//! and refuses whatever JSON cannot represent, naming where it is (`value.files[3]`):
//!
//! - `null`, booleans, finite numbers (-0 is 0, as in JSON.stringify), strings, arrays, and
//!   plain objects (prototype `Object.prototype` or `null`) with their own enumerable string keys;
//! - an object property whose value is `undefined` is left out, as `JSON.stringify` does (that
//!   is what the stored, hashed and read-back value then holds);
//! - refused (`E_INVALID_ARGUMENT`): NaN and infinities, `undefined` elsewhere (top level, array
//!   elements and holes), functions, symbols, BigInt (convert to a string or a number first),
//!   strings with lone surrogates, class instances, `Date`, `Map`, `Set`, Buffers and typed
//!   arrays, `toJSON` is never called; cycles and nesting deeper than 100 levels.
//!
//! The value is the caller's and may be hostile: a getter or Proxy trap that throws is
//! `E_INVALID_ARGUMENT` naming where (its exception discarded), each member is read once, and a
//! member name appears in a message only when it is a plain name (a key may be a token): any
//! other is named by its position, `meta.<key #3>`.
//!
//! Arguments and fields reach the walker through `convert::Json` / `convert::JsonObject`; the
//! same `Json` carries a JSON value back to JavaScript, built with plain objects and arrays.
//!
//! Safety: every `unsafe fn` of this module takes raw N-API handles and has one contract: it is
//! called on the JS thread, with the env of the current call and handles of that call's scope.

use std::ptr;

use napi::bindgen_prelude::*;
use napi::{sys, Env, JsValue, Unknown};
use napi_derive::napi;
use serde_json::{Map, Number, Value};

use super::convert::{self, refuse_at, Json, Str};
use super::strings::{self, Surrogates};
use super::{guard, to_napi, RawJs};
use crate::error::Result;
use crate::jcs;

/// One step of the path to a value, for error messages only.
enum Step {
  /// A member: its name and its position among the object's own enumerable string keys.
  Key(String, u32),
  Index(u32),
}

struct Reader {
  env: sys::napi_env,
  object_prototype: sys::napi_value,
  path: Vec<Step>,
  /// Where strings are read (one allocation per call, not per string).
  buf: Vec<u8>,
  /// When set, the top-level object's members are kept here with their JS values.
  keep_members: Option<Vec<(String, sys::napi_value)>>,
}

fn status(code: sys::napi_status, what: &str) -> napi::Result<()> {
  if code == sys::Status::napi_ok {
    Ok(())
  } else {
    Err(napi::Error::new(Status::GenericFailure, format!("N-API call failed while reading a JSON value ({what})")))
  }
}

impl Reader {
  /// # Safety
  /// On the JS thread, with the env of the current call.
  unsafe fn new(env: sys::napi_env) -> napi::Result<Reader> {
    let mut global = ptr::null_mut();
    status(sys::napi_get_global(env, &mut global), "global")?;
    let mut object = ptr::null_mut();
    status(sys::napi_get_named_property(env, global, c"Object".as_ptr(), &mut object), "Object")?;
    let mut prototype = ptr::null_mut();
    status(sys::napi_get_named_property(env, object, c"prototype".as_ptr(), &mut prototype), "Object.prototype")?;
    Ok(Reader { env, object_prototype: prototype, path: Vec::new(), buf: Vec::new(), keep_members: None })
  }

  /// Where the reader is, relative to the value read (`.files[3].size`). A member is named by
  /// its name only when that is a plain name (`crate::error::is_plain_name`); any other name,
  /// which may be caller data (a token used as a key), is named by position: `.<key #3>` is the
  /// third of `Object.keys(...)`.
  fn where_(&self) -> String {
    let mut out = String::new();
    // A cycle's path is as long as the depth limit: show its start and end only.
    let shown: Vec<Option<&Step>> = if self.path.len() > 12 {
      self.path[..4].iter().map(Some).chain([None]).chain(self.path[self.path.len() - 4..].iter().map(Some)).collect()
    } else {
      self.path.iter().map(Some).collect()
    };
    for step in shown {
      match step {
        None => out.push('…'),
        Some(Step::Key(k, _)) if crate::error::is_plain_name(k) && !k.starts_with(|c: char| c.is_ascii_digit()) => {
          out.push('.');
          out.push_str(k);
        }
        Some(Step::Key(_, i)) => out.push_str(&format!(".<key #{}>", i + 1)),
        Some(Step::Index(i)) => out.push_str(&format!("[{i}]")),
      }
    }
    out
  }

  fn refuse<T>(&self, what: &str) -> napi::Result<T> {
    Err(refuse_at(&self.where_(), &format!("is not JSON: {what}")))
  }

  /// An N-API call on the caller's value: one that failed because caller code threw (a getter,
  /// a Proxy trap, a revoked Proxy) is refused naming where, with the exception discarded (see
  /// `super::clear_pending_exception`).
  fn call(&self, code: sys::napi_status, what: &str) -> napi::Result<()> {
    if code != sys::Status::napi_ok && super::clear_pending_exception(self.env) {
      return Err(refuse_at(&self.where_(), "could not be read (a getter or Proxy trap threw)"));
    }
    status(code, what)
  }

  unsafe fn type_of(&self, value: sys::napi_value) -> napi::Result<sys::napi_valuetype> {
    let mut t = 0;
    status(sys::napi_typeof(self.env, value, &mut t), "typeof")?;
    Ok(t)
  }

  /// A string, refused when it holds a lone surrogate (it is not Unicode).
  unsafe fn string(&mut self, value: sys::napi_value) -> napi::Result<String> {
    let mut buf = std::mem::take(&mut self.buf);
    let read = strings::read_into(self.env, value, &mut buf, Surrogates::Refuse).map(str::to_owned);
    self.buf = buf;
    read.map_err(|r| refuse_at(&self.where_(), r.problem()))
  }

  /// Reads `value`; `None` for an `undefined` the caller may drop (object members only).
  unsafe fn read(&mut self, value: sys::napi_value, depth: usize) -> napi::Result<Option<Value>> {
    if depth > jcs::MAX_DEPTH {
      return self.refuse(&format!("nested deeper than {} levels (a cycle?)", jcs::MAX_DEPTH));
    }
    let env = self.env;
    match self.type_of(value)? {
      sys::ValueType::napi_undefined => Ok(None),
      sys::ValueType::napi_null => Ok(Some(Value::Null)),
      sys::ValueType::napi_boolean => {
        let mut b = false;
        status(sys::napi_get_value_bool(env, value, &mut b), "boolean")?;
        Ok(Some(Value::Bool(b)))
      }
      sys::ValueType::napi_number => {
        let mut f = 0f64;
        status(sys::napi_get_value_double(env, value, &mut f), "number")?;
        if !f.is_finite() {
          return self.refuse(&format!("{f} (RFC 8785 has no NaN or Infinity)"));
        }
        Ok(Some(Value::Number(number(f))))
      }
      sys::ValueType::napi_string => Ok(Some(Value::String(self.string(value)?))),
      sys::ValueType::napi_bigint => self.refuse("a BigInt (convert it to a string or a number first)"),
      sys::ValueType::napi_symbol => self.refuse("a symbol"),
      sys::ValueType::napi_function => self.refuse("a function"),
      sys::ValueType::napi_object => self.object(value, depth).map(Some),
      _ => self.refuse("an external value"),
    }
  }

  unsafe fn object(&mut self, value: sys::napi_value, depth: usize) -> napi::Result<Value> {
    let env = self.env;
    let mut is_array = false;
    self.call(sys::napi_is_array(env, value, &mut is_array), "isArray")?;
    if is_array {
      let mut len = 0u32;
      status(sys::napi_get_array_length(env, value, &mut len), "array length")?;
      let mut items = Vec::with_capacity(len as usize);
      for i in 0..len {
        let mut item = ptr::null_mut();
        self.path.push(Step::Index(i));
        self.call(sys::napi_get_element(env, value, i, &mut item), "element")?;
        match self.read(item, depth + 1)? {
          Some(v) => items.push(v),
          None => return self.refuse("undefined (or a hole) in an array"),
        }
        self.path.pop();
      }
      return Ok(Value::Array(items));
    }
    let mut prototype = ptr::null_mut();
    self.call(sys::napi_get_prototype(env, value, &mut prototype), "prototype")?;
    let plain = self.type_of(prototype)? == sys::ValueType::napi_null || {
      let mut same = false;
      status(sys::napi_strict_equals(env, prototype, self.object_prototype, &mut same), "prototype check")?;
      same
    };
    if !plain {
      let (mut is_date, mut is_buffer, mut is_typed) = (false, false, false);
      status(sys::napi_is_date(env, value, &mut is_date), "isDate")?;
      status(sys::napi_is_buffer(env, value, &mut is_buffer), "isBuffer")?;
      status(sys::napi_is_typedarray(env, value, &mut is_typed), "isTypedArray")?;
      return self.refuse(if is_date {
        "a Date (use date.toISOString())"
      } else if is_buffer || is_typed {
        "a Buffer or typed array (encode it as a string, e.g. base64 or hex)"
      } else {
        "an instance of a class (only plain objects, arrays and primitives are JSON)"
      });
    }
    let mut names = ptr::null_mut();
    self.call(
      sys::napi_get_all_property_names(
        env,
        value,
        sys::KeyCollectionMode::own_only,
        sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
        sys::KeyConversion::numbers_to_strings,
        &mut names,
      ),
      "property names",
    )?;
    let mut count = 0u32;
    status(sys::napi_get_array_length(env, names, &mut count), "property count")?;
    let mut map = Map::new();
    for i in 0..count {
      let mut key = ptr::null_mut();
      status(sys::napi_get_element(env, names, i, &mut key), "property name")?;
      self.path.push(Step::Key(String::new(), i));
      let name = self.string(key)?;
      self.path.pop();
      let mut member = ptr::null_mut();
      self.path.push(Step::Key(name, i));
      self.call(sys::napi_get_property(env, value, key, &mut member), "property")?;
      let read = self.read(member, depth + 1)?;
      let Some(Step::Key(name, _)) = self.path.pop() else { unreachable!() };
      if let Some(v) = read {
        if depth == 0 {
          if let Some(kept) = self.keep_members.as_mut() {
            kept.push((name.clone(), member));
          }
        }
        map.insert(name, v);
      }
    }
    Ok(Value::Object(map))
  }
}

/// A JSON number for a finite double: integral values that fit are stored as integers (so they
/// print without a fraction everywhere), -0 as 0.
fn number(f: f64) -> Number {
  if f == 0.0 {
    return Number::from(0u64);
  }
  if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
    return if f > 0.0 { Number::from(f as u64) } else { Number::from(f as i64) };
  }
  Number::from_f64(f).expect("finite")
}

/// Reads a JS value as JSON (the conversion of `convert::Json`); a refusal names the place
/// relative to the value.
///
/// # Safety
/// On the JS thread, with a handle of the current scope.
pub unsafe fn read(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Value> {
  let mut reader = Reader::new(env)?;
  reader.read(value, 0)?.map_or_else(|| Err(refuse_at("", "is not JSON: undefined")), Ok)
}

/// Reads a JS plain object as JSON and also returns its members' JS values (those that are
/// not `undefined`), for building a shallow copy without re-creating every nested value.
pub fn read_with_members(value: Unknown, name: &str) -> Result<(Value, Vec<(String, sys::napi_value)>)> {
  let env = value.value().env;
  // SAFETY: `value` is a handle of the current call's scope, read on the JS thread.
  let read = unsafe {
    Reader::new(env).and_then(|mut reader| {
      reader.keep_members = Some(Vec::new());
      match reader.read(value.raw(), 0)? {
        Some(v @ Value::Object(_)) => Ok((v, reader.keep_members.take().unwrap_or_default())),
        _ => Err(convert::refuse("must be a plain object")),
      }
    })
  };
  read.map_err(|e| convert::refusal(env, name, &e))
}

impl ToNapiValue for Json {
  unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
    build(env, &val.0)
  }
}

fn built(code: sys::napi_status) -> napi::Result<()> {
  if code == sys::Status::napi_ok {
    Ok(())
  } else {
    Err(napi::Error::new(Status::GenericFailure, format!("N-API call failed building a value (status {code})")))
  }
}

/// A new plain object with the given members (their JS values as they are) and extra members
/// built from JSON values.
pub fn shallow_object(
  env: &Env,
  members: &[(String, sys::napi_value)],
  extra: &[(&str, &Value)],
) -> napi::Result<RawJs> {
  let env = env.raw();
  // SAFETY: on the JS thread with its env; the member values are handles of the current call.
  unsafe {
    let mut out = ptr::null_mut();
    built(sys::napi_create_object(env, &mut out))?;
    let set = |key: &str, value: sys::napi_value| -> napi::Result<()> {
      let mut name = ptr::null_mut();
      built(sys::napi_create_string_utf8(env, key.as_ptr().cast(), key.len() as isize, &mut name))?;
      built(sys::napi_set_property(env, out, name, value))
    };
    for (key, value) in members {
      if !extra.iter().any(|(k, _)| k == key) {
        set(key, *value)?;
      }
    }
    for (key, value) in extra {
      set(key, build(env, value)?)?;
    }
    Ok(RawJs(out))
  }
}

/// Builds a JS value from a JSON value (plain objects and arrays); our values are nested at
/// most as deep as the JSON we read or wrote.
unsafe fn build(env: sys::napi_env, value: &Value) -> napi::Result<sys::napi_value> {
  let mut out = ptr::null_mut();
  match value {
    Value::Null => built(sys::napi_get_null(env, &mut out))?,
    Value::Bool(b) => built(sys::napi_get_boolean(env, *b, &mut out))?,
    Value::Number(n) => built(sys::napi_create_double(env, n.as_f64().unwrap_or(f64::NAN), &mut out))?,
    Value::String(s) => built(sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut out))?,
    Value::Array(items) => {
      built(sys::napi_create_array_with_length(env, items.len(), &mut out))?;
      for (i, item) in items.iter().enumerate() {
        built(sys::napi_set_element(env, out, i as u32, build(env, item)?))?;
      }
    }
    Value::Object(map) => {
      built(sys::napi_create_object(env, &mut out))?;
      for (key, member) in map {
        let mut name = ptr::null_mut();
        built(sys::napi_create_string_utf8(env, key.as_ptr().cast(), key.len() as isize, &mut name))?;
        built(sys::napi_set_property(env, out, name, build(env, member)?))?;
      }
    }
  }
  Ok(out)
}

/// The RFC 8785 (JCS) canonical JSON of `value`: members sorted by UTF-16 code units, no
/// whitespace, numbers as ECMAScript writes them. What the library hashes and signs.
///
/// Only JSON goes in: `null`, booleans, finite numbers (-0 is written `0`), strings, arrays and
/// plain objects. Object members whose value is `undefined` are left out, as `JSON.stringify`
/// does. Everything else throws `E_INVALID_ARGUMENT` naming where it is: NaN and infinities,
/// `undefined` elsewhere, functions, symbols, BigInt, lone surrogates, class instances, `Date`,
/// `Map`, `Set`, Buffers, cycles and nesting deeper than 100 levels (`toJSON` is never called).
///
/// ```ts
/// canonicalizeJson({ b: [1, 2e21, -0], a: 'é' }) // '{"a":"é","b":[1,2e+21,0]}'
/// ```
#[napi(ts_args_type = "value: unknown")]
pub fn canonicalize_json(env: Env, value: Unknown) -> napi::Result<String> {
  to_napi(&env, guard(|| jcs::to_string(&convert::arg::<Json>(value, "value")?.0)))
}

/// `canonicalizeJson` as UTF-8 bytes (what to hash or sign).
#[napi(ts_args_type = "value: unknown")]
pub fn canonicalize_json_buffer(env: Env, value: Unknown) -> napi::Result<Buffer> {
  to_napi(&env, guard(|| jcs::to_vec(&convert::arg::<Json>(value, "value")?.0))).map(Buffer::from)
}

/// Canonicalizes JSON text (RFC 8785): parses it (duplicate member names and numbers out of
/// double range are `E_INVALID_ARGUMENT`) and writes it canonically. Integers beyond 2^53 are
/// rounded to the nearest double, as `JSON.parse` would.
#[napi(ts_args_type = "text: string")]
pub fn canonicalize_json_text(env: Env, text: Unknown) -> napi::Result<String> {
  to_napi(&env, guard(|| jcs::to_string(&jcs::parse_strict(&convert::arg::<Str>(text, "text")?.0)?)))
}
