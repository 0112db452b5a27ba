//! JavaScript values in, and the core's results out. Every argument of every export is
//! converted here, by napi-rs's own conversion of the declared shape, and every failure becomes
//! one `E_INVALID_ARGUMENT` that names the argument and the field (`options.gates.minConfidence`,
//! `items[3].tokens`) and never a value.
//!
//! How the pieces fit:
//!
//! - A JS shape is declared once, as a `#[napi(object)]` struct: its doc comments are the JSDoc,
//!   and napi-rs's generated `FromNapiValue` is the parser. Its fields are the small types of
//!   this module ([`Str`], [`Int`], [`Bytes`], [`Json`], ...), each of which applies one rule of
//!   ours and says what it expected; the struct converts into the part's own type with one
//!   `From`/`TryFrom` (checks that need the crate error live there), reading each optional field
//!   with [`Given::given`]. A result shape is filled from the core's type by one `From`, written
//!   with [`js_from!`].
//! - Exports take `Unknown` and declare the TypeScript argument with `ts_args_type`; inside the
//!   panic guard they call [`object`] / [`opt_object`] (a shape and its conversion into the
//!   core's type) or [`arg`] / [`opt_arg`] (a single value). A typed parameter would be converted by
//!   napi-rs's wrapper before our code runs, failing with napi-rs's status and message, and a
//!   promise-returning export would throw instead of rejecting. napi-rs names a field type by
//!   its Rust name, so fields of these types carry `ts_type`.
//! - napi-rs decorates a failed field with ` on Struct.field`, and [`List`] adds ` at [i]`.
//!   [`refusal`] reads the path back from those decorations (names from our declarations) and
//!   keeps nothing else of napi-rs's message, which may quote the caller's value; the problem
//!   stated comes from the field type of this module that refused, marked as ours.
//! - An optional field is `Option<Option<T>>`: napi-rs gives `undefined` as the outer `None`
//!   and hands `null` to the inner `Option`, so both are absent (`.flatten()`), as they always
//!   were. (A plain `Option<T>` field refuses `null`.)
//! - napi-rs reads the fields of anything it is given (a number is boxed and has none): [`Obj`]
//!   first checks for an object that is not an array.
//! - Values are hostile: each field is read once, by one property get; a getter or Proxy trap
//!   that throws fails that read, and [`refusal`] discards the pending exception (its message
//!   is the caller's). No conversion here runs caller code otherwise: strings are checked to be
//!   strings before napi-rs reads them (its string conversion of an object calls
//!   `JSON.stringify` on it), and string unions go through [`Choice`] for the same reason.

use std::ffi::CStr;
use std::ptr;

use napi::bindgen_prelude::*;
use napi::{sys, JsValue, Unknown, ValueType};
use serde_json::Value;

use super::strings::{self, Surrogates};
use crate::error::{LoaError, Result};

// ---------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------

/// The argument `value` (named `name` in errors) converted as `T`.
pub fn arg<T: FromNapiValue>(value: Unknown, name: &str) -> Result<T> {
  convert(value, name, Naming::Argument)
}

/// An optional argument: absent, `undefined` and `null` are `None`.
pub fn opt_arg<T: FromNapiValue>(value: Option<Unknown>, name: &str) -> Result<Option<T>> {
  Ok(value.map(|v| arg::<Option<T>>(v, name)).transpose()?.flatten())
}

/// The object argument `value` read as the JS shape `J` and converted into `T` (its one
/// `From`/`TryFrom`).
pub fn object<J: FromNapiValue, T: TryFrom<J>>(value: Unknown, name: &str) -> Result<T>
where
  LoaError: From<T::Error>,
{
  Ok(T::try_from(arg::<Obj<J>>(value, name)?.0)?)
}

/// An optional options argument read as the JS shape `J` and converted into `T`; absent,
/// `undefined` and `null` give `T::default()`.
pub fn opt_object<J: FromNapiValue, T: TryFrom<J> + Default>(value: Option<Unknown>, name: &str) -> Result<T>
where
  LoaError: From<T::Error>,
{
  Ok(opt_arg::<Obj<J>>(value, name)?.map(|o| T::try_from(o.0)).transpose()?.unwrap_or_default())
}

/// A path argument (a string; a lone surrogate is refused).
pub fn path(value: Unknown, name: &str) -> Result<std::path::PathBuf> {
  Ok(arg::<Str>(value, name)?.0.into())
}

/// [`opt_arg`] for an options object whose fields errors name on their own (`allowlist[1]`,
/// not `options.allowlist[1]`), as `redact`'s always have.
pub fn opt_fields<T: FromNapiValue>(value: Option<Unknown>, name: &str) -> Result<Option<T>> {
  Ok(value.map(|v| convert::<Option<T>>(v, name, Naming::Fields)).transpose()?.flatten())
}

/// How a refusal names what it refuses: `options.key` ([`Naming::Argument`]) or `key`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Naming {
  Argument,
  Fields,
}

fn convert<T: FromNapiValue>(value: Unknown, name: &str, naming: Naming) -> Result<T> {
  let env = value.value().env;
  // SAFETY: `value` is a handle of the current call's scope, used on the JS thread.
  unsafe { T::from_napi_value(env, value.raw()) }.map_err(|e| described(env, name, &e, naming))
}

/// Marks a problem stated by a type of this module: `OURS` + sub-path + `OURS` + problem.
const OURS: char = '\u{1}';

/// The error of a value a type of this module refuses; `problem` says what was expected
/// (`must be a string`) and never quotes the value.
pub fn refuse(problem: &str) -> napi::Error {
  refuse_at("", problem)
}

/// [`refuse`] for a place inside the value (`.files[3]`), for types that walk values.
pub fn refuse_at(subpath: &str, problem: &str) -> napi::Error {
  napi::Error::new(Status::InvalidArg, format!("{OURS}{subpath}{OURS}{problem}"))
}

/// The `E_INVALID_ARGUMENT` for a failed conversion of the argument `name` (see the module docs).
pub fn refusal(env: sys::napi_env, name: &str, err: &napi::Error) -> LoaError {
  described(env, name, err, Naming::Argument)
}

fn described(env: sys::napi_env, name: &str, err: &napi::Error, naming: Naming) -> LoaError {
  let threw = super::clear_pending_exception(env);
  let (base, mut path) = split_path(&err.reason);
  let problem = if let Some((subpath, problem)) = base.strip_prefix(OURS).and_then(|b| b.split_once(OURS)) {
    path.push_str(subpath);
    problem
  } else if threw || err.status == Status::PendingException {
    "could not be read (a getter or Proxy trap threw)"
  } else if let Some(field) = missing_field(base) {
    path.push('.');
    path.push_str(field);
    "is required"
  } else {
    "does not have the expected type"
  };
  match path.strip_prefix('.').filter(|_| naming == Naming::Fields) {
    Some(field) => LoaError::InvalidArgument(format!("`{field}` {problem}")),
    None => LoaError::InvalidArgument(format!("`{name}{path}` {problem}")),
  }
}

/// Splits napi-rs's (and [`List`]'s) decorations off the end of a conversion error's reason:
/// the rest, and the path they spell (`.gates.minConfidence`, `[3].tokens`).
fn split_path(reason: &str) -> (&str, String) {
  let mut rest = reason;
  let mut steps = Vec::new();
  loop {
    if let Some(index) = rest.strip_suffix(']').and_then(|r| r.rsplit_once(" at [")).filter(|(_, i)| is_index(i)) {
      steps.push(format!("[{}]", index.1));
      rest = index.0;
    } else if let Some((before, field)) = rest.rsplit_once(" on ").and_then(|(before, tail)| {
      let (structure, field) = tail.split_once('.')?;
      (is_name(structure) && is_name(field)).then_some((before, field))
    }) {
      steps.push(format!(".{field}"));
      rest = before;
    } else {
      break;
    }
  }
  // Found outermost first, which is the order of the path.
  (rest, steps.concat())
}

/// napi-rs's error for a required field that is absent names the field (one of ours).
fn missing_field(reason: &str) -> Option<&str> {
  reason.strip_prefix("Missing field `")?.strip_suffix('`').filter(|f| is_name(f))
}

fn is_name(text: &str) -> bool {
  !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
}

fn is_index(text: &str) -> bool {
  !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

// ---------------------------------------------------------------------------------------------
// Field types: each applies one rule, written once
//
// Their conversions are napi-rs's `unsafe fn`s (`FromNapiValue`, `ToNapiValue`): napi-rs calls
// them on the JS thread with a handle of the current scope, which is what every N-API call in
// them needs; they read the value and create nothing that outlives the call. The private
// `unsafe fn`s below have the same contract.
// ---------------------------------------------------------------------------------------------

/// The type of a JS value (`typeof`, with `null` apart).
///
/// # Safety
/// On the JS thread, with a handle of the current scope.
pub unsafe fn type_of(env: sys::napi_env, value: sys::napi_value) -> napi::Result<ValueType> {
  let mut t = 0;
  check(sys::napi_typeof(env, value, &mut t))?;
  Ok(ValueType::from(t))
}

fn check(status: sys::napi_status) -> napi::Result<()> {
  if status == sys::Status::napi_ok {
    Ok(())
  } else {
    Err(napi::Error::new(Status::from(status), String::new()))
  }
}

/// Implements `TypeName` for a field type (what napi-rs says in its own messages, which ours
/// replace).
macro_rules! type_name {
  ($ty:ident $(<$param:ident>)?, $name:literal, $value_type:ident) => {
    impl$(<$param>)? napi::bindgen_prelude::TypeName for $ty$(<$param>)? {
      fn type_name() -> &'static str {
        $name
      }
      fn value_type() -> napi::ValueType {
        napi::ValueType::$value_type
      }
    }
  };
}
pub(crate) use type_name;

unsafe fn string(env: sys::napi_env, value: sys::napi_value, surrogates: Surrogates) -> napi::Result<String> {
  if type_of(env, value)? != ValueType::String {
    return Err(refuse("must be a string"));
  }
  strings::read_string(env, value, surrogates).map_err(|r| refuse(r.problem()))
}

/// A string that is stored, names a file, or is hashed or signed: a lone surrogate is refused
/// (napi-rs's `String` would silently store U+FFFD instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Str(pub String);
type_name!(Str, "string", String);

impl FromNapiValue for Str {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    string(env, value, Surrogates::Refuse).map(Str)
  }
}

/// Text that is only analysed (counted, redacted, gated): a lone surrogate reads as U+FFFD, as
/// `Buffer.from(text)` and tiktoken read it.
#[derive(Debug, Clone)]
pub struct Text(pub String);
type_name!(Text, "string", String);

impl FromNapiValue for Text {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    string(env, value, Surrogates::Replace).map(Text)
  }
}

/// A non-negative integer that a JS number holds exactly (at most 2^53 - 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int(pub u64);
type_name!(Int, "number", Number);

/// The largest integer a JS number holds exactly.
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

unsafe fn number(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Option<f64>> {
  if type_of(env, value)? != ValueType::Number {
    return Ok(None);
  }
  let mut n = 0f64;
  check(sys::napi_get_value_double(env, value, &mut n))?;
  Ok(Some(n))
}

impl FromNapiValue for Int {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    match number(env, value)? {
      Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= MAX_SAFE => Ok(Int(n as u64)),
      _ => Err(refuse("must be a non-negative integer")),
    }
  }
}

/// A finite number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Num(pub f64);
type_name!(Num, "number", Number);

impl FromNapiValue for Num {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    match number(env, value)? {
      Some(n) if n.is_finite() => Ok(Num(n)),
      Some(_) => Err(refuse("must be a finite number")),
      None => Err(refuse("must be a number")),
    }
  }
}

/// A boolean (nothing else is truthy or falsy here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bool(pub bool);
type_name!(Bool, "boolean", Boolean);

impl FromNapiValue for Bool {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    if type_of(env, value)? != ValueType::Boolean {
      return Err(refuse("must be a boolean"));
    }
    bool::from_napi_value(env, value).map(Bool)
  }
}

/// The bytes of a `Buffer` or a `Uint8Array` (copied), or `None` when `value` is neither.
unsafe fn binary(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Option<Vec<u8>>> {
  let (mut is_buffer, mut is_typed) = (false, false);
  check(sys::napi_is_buffer(env, value, &mut is_buffer))?;
  if is_buffer {
    return BufferSlice::from_napi_value(env, value).map(|b| Some(b.to_vec()));
  }
  check(sys::napi_is_typedarray(env, value, &mut is_typed))?;
  if is_typed {
    // Another kind of typed array is refused by the conversion.
    return Ok(Uint8Array::from_napi_value(env, value).ok().map(|a| a.to_vec()));
  }
  Ok(None)
}

/// `Buffer | Uint8Array | string`, as bytes: a copy of the buffer, or the string's UTF-8 (a
/// lone surrogate is refused).
#[derive(Debug, Clone)]
pub struct Bytes(pub Vec<u8>);
type_name!(Bytes, "Buffer", Object);

impl FromNapiValue for Bytes {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    const EXPECTED: &str = "must be a Buffer, Uint8Array or string";
    match type_of(env, value)? {
      ValueType::String => string(env, value, Surrogates::Refuse).map(|s| Bytes(s.into_bytes())),
      ValueType::Object => binary(env, value)?.map(Bytes).ok_or_else(|| refuse(EXPECTED)),
      _ => Err(refuse(EXPECTED)),
    }
  }
}

/// Key material: a `Buffer` or `Uint8Array` only (a string key would be easy to get wrong:
/// hex? UTF-8?), wiped from memory when dropped.
pub struct Binary(pub zeroize::Zeroizing<Vec<u8>>);
type_name!(Binary, "Buffer", Object);

impl FromNapiValue for Binary {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    match type_of(env, value)? {
      ValueType::String => Err(refuse("must be a Buffer or Uint8Array (not a string)")),
      ValueType::Object => match binary(env, value)? {
        Some(bytes) => Ok(Binary(zeroize::Zeroizing::new(bytes))),
        None => Err(refuse("must be a Buffer or Uint8Array")),
      },
      _ => Err(refuse("must be a Buffer or Uint8Array")),
    }
  }
}

/// A JS function, to be called during the current call only (the handle dies with it).
pub struct Func(pub sys::napi_value);
type_name!(Func, "Function", Function);

impl FromNapiValue for Func {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    match type_of(env, value)? {
      ValueType::Function => Ok(Func(value)),
      _ => Err(refuse("must be a function")),
    }
  }
}

/// An object (not `null`, not an array) converted as `T`, usually a `#[napi(object)]` struct.
pub struct Obj<T>(pub T);
type_name!(Obj<T>, "object", Object);

/// Whether `value` is an object that is not an array (an array is refused where an options
/// object belongs, as it always was).
unsafe fn is_plain_object(env: sys::napi_env, value: sys::napi_value) -> napi::Result<bool> {
  if type_of(env, value)? != ValueType::Object {
    return Ok(false);
  }
  let mut is_array = false;
  // A revoked Proxy throws here: the conversion fails as unreadable.
  check(sys::napi_is_array(env, value, &mut is_array))?;
  Ok(!is_array)
}

impl<T: FromNapiValue> FromNapiValue for Obj<T> {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    if !is_plain_object(env, value)? {
      return Err(refuse("must be an object"));
    }
    T::from_napi_value(env, value).map(Obj)
  }
}

/// An instance of the `#[napi]` class `C`, else a refusal saying what was `expected`. napi-rs
/// checks the class recorded when the object was made, so an object of another class, or one
/// with a spoofed prototype, is refused.
///
/// # Safety
/// On the JS thread, with a handle of the current scope.
pub unsafe fn instance<'v, C: 'v + MaybeTypeTag>(
  env: sys::napi_env,
  value: sys::napi_value,
  expected: &str,
) -> napi::Result<ClassInstance<'v, C>> {
  if type_of(env, value)? != ValueType::Object {
    return Err(refuse(expected));
  }
  ClassInstance::<C>::from_napi_value(env, value).map_err(|_| refuse(expected))
}

/// An array converted element by element; a failure names the element (` at [i]`).
pub struct List<T>(pub Vec<T>);
type_name!(List<T>, "Array", Object);

impl<T: FromNapiValue> FromNapiValue for List<T> {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    let mut is_array = false;
    check(sys::napi_is_array(env, value, &mut is_array))?;
    let mut len = 0u32;
    if !is_array || sys::napi_get_array_length(env, value, &mut len) != sys::Status::napi_ok {
      return Err(refuse("must be an array"));
    }
    let mut out = Vec::with_capacity(len as usize);
    for i in 0..len {
      let at = |mut e: napi::Error| {
        e.reason = format!("{} at [{i}]", e.reason);
        e
      };
      let mut item = ptr::null_mut();
      check(sys::napi_get_element(env, value, i, &mut item)).map_err(at)?;
      out.push(T::from_napi_value(env, item).map_err(at)?);
    }
    Ok(List(out))
  }
}

impl<T: ToNapiValue> ToNapiValue for List<T> {
  unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
    Vec::<T>::to_napi_value(env, val.0)
  }
}

/// Unwraps a field type into the core's value (`Int` into `u64`, `Str` into `String`, ...), and
/// converts it to JS as that value (as a JS number, for `Int`) where a shape goes both ways
/// (`AuditHead`, `CompactionPolicy`).
macro_rules! unwrap_into {
  ($($ty:ident => $core:ty $(, to JS $(as $js:ty)?)?;)*) => {$(
    impl From<$ty> for $core {
      fn from(v: $ty) -> $core {
        v.0
      }
    }
    $(
      impl ToNapiValue for $ty {
        unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
          ToNapiValue::to_napi_value(env, val.0 $(as $js)?)
        }
      }
    )?
  )*};
}
unwrap_into! {
  Str => String, to JS;
  Text => String;
  Int => u64, to JS as f64;
  Num => f64, to JS;
  Bool => bool, to JS;
}

/// The elements converted, e.g. `List<Str>` into `Vec<String>`.
impl<T, U: From<T>> From<List<T>> for Vec<U> {
  fn from(list: List<T>) -> Vec<U> {
    list.0.into_iter().map(U::from).collect()
  }
}

/// An optional field of a JS shape (`Option<Option<T>>`: absent, `undefined` and `null` are all
/// `None`) as the core's value.
pub trait Given<T>: Sized {
  fn given(self) -> Option<T>;

  /// Overwrites `slot` (a default) with the field's value when it was given.
  fn set(self, slot: &mut T) {
    if let Some(value) = self.given() {
      *slot = value;
    }
  }
}

impl<F: Into<T>, T> Given<T> for Option<Option<F>> {
  fn given(self) -> Option<T> {
    self.flatten().map(Into::into)
  }
}

/// An optional list of objects as the core's values, each converted with its `From`; absent,
/// `undefined` and `null` are an empty list.
pub fn objects<J, T: From<J>>(list: Option<Option<List<Obj<J>>>>) -> Vec<T> {
  list.flatten().map_or_else(Vec::new, |l| l.0.into_iter().map(|o| T::from(o.0)).collect())
}

/// A string union of the API (a `#[napi(string_enum)]` declared with [`string_union!`]): the
/// value must be one of its strings.
pub trait Union: Sized {
  /// Its strings, in declaration order.
  const NAMES: &'static [&'static str];
}

/// A member of the string union `E`. napi-rs's own conversion of a string enum would first
/// `JSON.stringify` a non-string value (caller code); this checks for a string before.
pub struct Choice<E>(pub E);

type_name!(Choice<E>, "string", String);

impl<E: Union + FromNapiValue> FromNapiValue for Choice<E> {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    let expected = format!("must be one of '{}'", E::NAMES.join("', '"));
    if type_of(env, value)? != ValueType::String {
      return Err(refuse(&expected));
    }
    let name = strings::read_string(env, value, Surrogates::Replace).map_err(|r| refuse(r.problem()))?;
    if !E::NAMES.contains(&name.as_str()) {
      // A plain name is shown (`p50k_base`), anything else described (see `shown`).
      return Err(refuse(&format!("{expected}, got {}", crate::error::shown(&name))));
    }
    E::from_napi_value(env, value).map(Choice).map_err(|_| refuse(&expected))
  }
}

impl<E: ToNapiValue> ToNapiValue for Choice<E> {
  unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
    E::to_napi_value(env, val.0)
  }
}

/// Declares a string union of the API as a `#[napi(string_enum)]` (its TypeScript type, and the
/// object of its strings at run time), with its doc (a string literal first), its [`Union`]
/// names and the conversions from and to the part's own enum.
macro_rules! string_union {
  ($doc:literal $name:ident <=> $core:ty { $($variant:ident = $core_variant:ident,)* }) => {
    // A doc comment passed through `macro_rules!` reaches napi-derive as a raw string literal,
    // which it copies into the JSDoc with its `r"`: the doc is a plain literal instead.
    #[doc = $doc]
    #[napi_derive::napi(string_enum)]
    #[allow(non_camel_case_types)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum $name {
      $($variant,)*
    }

    impl $crate::binding::convert::Union for $name {
      const NAMES: &'static [&'static str] = &[$(stringify!($variant)),*];
    }

    impl From<$name> for $core {
      fn from(value: $name) -> $core {
        match value {
          $($name::$variant => <$core>::$core_variant,)*
        }
      }
    }

    impl From<$crate::binding::convert::Choice<$name>> for $core {
      fn from(value: $crate::binding::convert::Choice<$name>) -> $core {
        value.0.into()
      }
    }

    impl From<$core> for $name {
      fn from(value: $core) -> $name {
        match value {
          $(<$core>::$core_variant => $name::$variant,)*
        }
      }
    }
  };
}
pub(crate) use string_union;

/// A JSON value, read faithfully and strictly by [`super::json`] (depth-limited; what JSON
/// cannot hold is refused, never changed): for values that are stored, hashed or signed.
pub struct Json(pub Value);
type_name!(Json, "unknown", Unknown);

impl FromNapiValue for Json {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    super::json::read(env, value).map(Json)
  }
}

/// [`Json`] that must be a plain object (`Record<string, unknown>`).
pub struct JsonObject(pub serde_json::Map<String, Value>);
type_name!(JsonObject, "object", Object);

impl FromNapiValue for JsonObject {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    if !is_plain_object(env, value)? {
      return Err(refuse("must be a plain object"));
    }
    match Json::from_napi_value(env, value)?.0 {
      Value::Object(map) => Ok(JsonObject(map)),
      _ => Err(refuse("must be a plain object")),
    }
  }
}

/// `err` decorated as napi-rs decorates the error of a field (` on Shape.field`), for the field
/// types that read members themselves.
pub fn on(mut err: napi::Error, shape: &str, field: &str) -> napi::Error {
  err.reason = format!("{} on {shape}.{field}", err.reason);
  err
}

/// `object[key]` converted as `T` (`undefined` and `null` are `None`), for the few field types
/// that read one or two members of a shape declared elsewhere (`BudgetLevel`, `KeyInfo`), where a
/// struct of their own would add a type to the API. A failure names the member.
///
/// # Safety
/// On the JS thread, with `object` a handle of the current scope.
pub unsafe fn member<T: FromNapiValue>(
  env: sys::napi_env,
  object: sys::napi_value,
  shape: &str,
  key: &CStr,
) -> napi::Result<Option<T>> {
  let decorate = |e: napi::Error| on(e, shape, key.to_str().unwrap_or("?"));
  let mut value = ptr::null_mut();
  check(sys::napi_get_named_property(env, object, key.as_ptr(), &mut value)).map_err(decorate)?;
  Option::<T>::from_napi_value(env, value).map_err(decorate)
}

// ---------------------------------------------------------------------------------------------
// Results out: each result shape is a `#[napi(object)]` struct filled from the core's type by
// one `From`, which [`js_from!`] writes for the fields that only move or widen.
// ---------------------------------------------------------------------------------------------

/// A count or size of the core as the JS number type of a result field: `f64` (counts stay far
/// below 2^53, where a JS number is exact) or `u32`, saturating.
pub trait JsNumber<T> {
  fn js(self) -> T;
}

macro_rules! js_number {
  ($($from:ty),*) => {$(
    impl JsNumber<f64> for $from {
      fn js(self) -> f64 {
        self as f64
      }
    }

    impl JsNumber<u32> for $from {
      fn js(self) -> u32 {
        u32::try_from(self).unwrap_or(u32::MAX)
      }
    }
  )*};
}
js_number!(u32, u64, usize);

impl JsNumber<f64> for i64 {
  fn js(self) -> f64 {
    self as f64
  }
}

impl<A: JsNumber<B>, B> JsNumber<Option<B>> for Option<A> {
  fn js(self) -> Option<B> {
    self.map(A::js)
  }
}

/// Each element of a list, or the value of an option, converted with `Into`.
pub trait Each<T> {
  fn each(self) -> T;
}

impl<A: Into<B>, B> Each<Vec<B>> for Vec<A> {
  fn each(self) -> Vec<B> {
    self.into_iter().map(Into::into).collect()
  }
}

impl<A: Into<B>, B> Each<Option<B>> for Option<A> {
  fn each(self) -> Option<B> {
    self.map(Into::into)
  }
}

/// `js_from!(|v: core::X| X { a, b: f64, c => into, d => each, e = expr })` implements
/// `From<core::X> for X`: `a` moves the core's field of that name, `b: f64` widens a count to a
/// JS number ([`JsNumber`]), `c => into` converts it with `Into`, `d => each` converts the
/// elements of a list or option ([`Each`]), and `e = expr` computes it from `v`.
macro_rules! js_from {
  (|$v:ident: $core:ty| $js:ident {
    $($field:ident $(: $num:ty)? $(=> $conv:ident)? $(= $value:expr)?),* $(,)?
  }) => {
    impl From<$core> for $js {
      fn from($v: $core) -> $js {
        $js { $($field: $crate::binding::convert::js_from!(@ [$($num)?] [$($conv)?] [$($value)?] $v.$field)),* }
      }
    }
  };
  (@ [] [] [] $e:expr) => { $e };
  (@ [$num:ty] [] [] $e:expr) => { $crate::binding::convert::JsNumber::<$num>::js($e) };
  (@ [] [into] [] $e:expr) => { ($e).into() };
  (@ [] [each] [] $e:expr) => { $crate::binding::convert::Each::each($e) };
  (@ [] [] [$value:expr] $e:expr) => { $value };
}
pub(crate) use js_from;
