//! RFC 8785 JSON Canonicalization Scheme (JCS): the one byte form of a JSON value that is
//! hashed or signed anywhere in this crate.
//!
//! The originals hashed `JSON.stringify(obj, sortedKeysArray)`; the array form of the replacer is
//! an allow-list applied at every depth, so every nested key not named at the top level was
//! silently dropped and file lists and audit `details` were never covered. Canonical JSON covers
//! the whole value: objects with their members sorted by the UTF-16 code units of their names,
//! no whitespace, strings escaped the way ECMAScript's `JSON.stringify` does, and numbers written
//! as ECMAScript writes an IEEE-754 double (`Number.prototype.toString`).
//!
//! Numbers are the hard part and come from `ryu-js` (the Boa JavaScript engine's shortest
//! round-trip formatter with ECMAScript's exponent rules). Every number is treated as a double,
//! as RFC 8785 requires: an integer over 2^53 in JSON text is rounded exactly as JavaScript's
//! `JSON.parse` would round it (serde_json's `float_roundtrip` feature, enabled in Cargo.toml,
//! makes text-to-double conversion correctly rounded). NaN and the infinities are not JSON and
//! are errors; -0 is written `0`.

use std::cmp::Ordering;

use serde_json::Value;

use crate::error::{LoaError, Result};

/// Objects and arrays nested deeper than this are refused: a cycle, or an attack on the stack
/// (serde_json, which reads state files back, stops at 128 levels; what we write must read back).
pub const MAX_DEPTH: usize = 100;

/// The canonical bytes of `value`.
pub fn to_vec(value: &Value) -> Result<Vec<u8>> {
  let mut out = Vec::with_capacity(256);
  write_value(&mut out, value, 0)?;
  Ok(out)
}

/// The canonical form of `value` as a string (it is always valid UTF-8).
pub fn to_string(value: &Value) -> Result<String> {
  to_vec(value).map(|bytes| String::from_utf8(bytes).expect("canonical JSON is UTF-8"))
}

/// Appends the canonical bytes of `value` to `out`.
pub fn write_value(out: &mut Vec<u8>, value: &Value, depth: usize) -> Result<()> {
  if depth > MAX_DEPTH {
    return Err(LoaError::InvalidArgument(format!("JSON nested deeper than {MAX_DEPTH} levels")));
  }
  match value {
    Value::Null => out.extend_from_slice(b"null"),
    Value::Bool(true) => out.extend_from_slice(b"true"),
    Value::Bool(false) => out.extend_from_slice(b"false"),
    Value::Number(n) => {
      // Every JSON number is an IEEE-754 double to RFC 8785 (and to JavaScript); u64/i64 values
      // over 2^53 round to the nearest double here, exactly as JSON.parse rounds them.
      let f = n.as_f64().ok_or_else(|| LoaError::InvalidArgument(format!("number {n} is not a double")))?;
      write_number(out, f)?;
    }
    Value::String(s) => write_string(out, s),
    Value::Array(items) => {
      out.push(b'[');
      for (i, item) in items.iter().enumerate() {
        if i > 0 {
          out.push(b',');
        }
        write_value(out, item, depth + 1)?;
      }
      out.push(b']');
    }
    Value::Object(map) => write_object(out, map.iter(), depth)?,
  }
  Ok(())
}

/// The canonical bytes of an object without one of its members (e.g. a signature), without
/// copying the object.
pub fn object_to_vec_without(map: &serde_json::Map<String, Value>, skip: &str) -> Result<Vec<u8>> {
  let mut out = Vec::with_capacity(256);
  write_object(&mut out, map.iter().filter(|(k, _)| k.as_str() != skip), 0)?;
  Ok(out)
}

/// True when a name may sort differently by UTF-16 code units than by UTF-8 bytes: only names
/// with characters at or above U+D800 (UTF-8 lead byte 0xED and up) can.
fn needs_utf16_sort(name: &str) -> bool {
  name.bytes().any(|b| b >= 0xed)
}

fn write_object<'a>(
  out: &mut Vec<u8>,
  members: impl Iterator<Item = (&'a String, &'a Value)> + Clone,
  depth: usize,
) -> Result<()> {
  out.push(b'{');
  let mut first = true;
  let mut member = |out: &mut Vec<u8>, name: &str, value: &Value| -> Result<()> {
    if !first {
      out.push(b',');
    }
    first = false;
    write_string(out, name);
    out.push(b':');
    write_value(out, value, depth + 1)
  };
  // serde_json's map iterates in UTF-8 byte order (= code point order), which differs from
  // UTF-16 order only for names with characters above U+FFFF next to ones in U+E000..U+FFFF.
  let ordered = members.clone().map(|(k, _)| k).is_sorted_by(|a, b| utf16_cmp(a, b) != Ordering::Greater)
    && !members.clone().any(|(k, _)| needs_utf16_sort(k));
  if ordered {
    for (name, value) in members {
      member(out, name, value)?;
    }
  } else {
    let mut sorted: Vec<(&String, &Value)> = members.collect();
    sorted.sort_by(|a, b| utf16_cmp(a.0, b.0));
    for (name, value) in sorted {
      member(out, name, value)?;
    }
  }
  out.push(b'}');
  Ok(())
}

/// Compares two strings by their UTF-16 code units, the order RFC 8785 sorts member names in.
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
  if a.is_ascii() && b.is_ascii() {
    return a.as_bytes().cmp(b.as_bytes());
  }
  a.encode_utf16().cmp(b.encode_utf16())
}

/// Writes a double the way ECMAScript's `Number.prototype.toString` does; NaN and infinities are
/// refused (`E_INVALID_ARGUMENT`).
pub fn write_number(out: &mut Vec<u8>, f: f64) -> Result<()> {
  if !f.is_finite() {
    return Err(LoaError::InvalidArgument(format!("{f} is not a JSON number (RFC 8785 has no NaN or Infinity)")));
  }
  if f == 0.0 {
    out.push(b'0'); // both zeros: ECMAScript writes -0 as "0"
    return Ok(());
  }
  let mut buffer = ryu_js::Buffer::new();
  out.extend_from_slice(buffer.format_finite(f).as_bytes());
  Ok(())
}

/// Writes a JSON string as ECMAScript's `JSON.stringify` does: `"` and `\` escaped, the five
/// short escapes `\b \t \n \f \r`, other control characters as `\u00xx` (lower-case hex), and
/// everything else (U+007F, U+2028, non-ASCII) as raw UTF-8.
pub fn write_string(out: &mut Vec<u8>, s: &str) {
  const HEX: &[u8; 16] = b"0123456789abcdef";
  out.reserve(s.len() + 2);
  out.push(b'"');
  let bytes = s.as_bytes();
  // Most strings need no escape at all: one tight scan, one copy.
  if !bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\') {
    out.extend_from_slice(bytes);
    out.push(b'"');
    return;
  }
  let mut start = 0;
  for (i, &b) in bytes.iter().enumerate() {
    let escape: &[u8] = match b {
      b'"' => b"\\\"",
      b'\\' => b"\\\\",
      0x08 => b"\\b",
      0x09 => b"\\t",
      0x0a => b"\\n",
      0x0c => b"\\f",
      0x0d => b"\\r",
      0x00..=0x1f => &[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 0xf) as usize]],
      _ => continue,
    };
    out.extend_from_slice(&bytes[start..i]);
    out.extend_from_slice(escape);
    start = i + 1;
  }
  out.extend_from_slice(&bytes[start..]);
  out.push(b'"');
}

/// Parses JSON text and returns its canonical bytes (duplicate member names are refused, as
/// I-JSON requires).
pub fn canonicalize_text(text: &str) -> Result<Vec<u8>> {
  let value = parse_strict(text)?;
  to_vec(&value)
}

/// Parses JSON text into a value, refusing duplicate member names (serde_json would keep the
/// last one silently, so two texts that read differently could canonicalize alike).
pub fn parse_strict(text: &str) -> Result<Value> {
  use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
  struct Strict(Value);
  impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
      d.deserialize_any(StrictVisitor).map(Strict)
    }
  }
  struct StrictVisitor;
  impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
      f.write_str("JSON")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
      Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
      Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
      Ok(Value::from(v))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> std::result::Result<Value, E> {
      serde_json::Number::from_f64(v).map(Value::Number).ok_or_else(|| E::custom("number out of range"))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
      Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
      Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
      Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
      let mut items = Vec::new();
      while let Some(Strict(v)) = seq.next_element()? {
        items.push(v);
      }
      Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
      let mut object = serde_json::Map::new();
      while let Some(key) = map.next_key::<String>()? {
        let Strict(v) = map.next_value()?;
        if object.insert(key.clone(), v).is_some() {
          return Err(serde::de::Error::custom(format!("duplicate member name {}", crate::error::shown(&key))));
        }
      }
      Ok(Value::Object(object))
    }
  }
  let mut de = serde_json::Deserializer::from_str(text);
  let Strict(value) =
    Strict::deserialize(&mut de).map_err(|e| LoaError::InvalidArgument(format!("invalid JSON: {e}")))?;
  de.end().map_err(|e| LoaError::InvalidArgument(format!("invalid JSON: {e}")))?;
  Ok(value)
}

#[cfg(test)]
pub(crate) mod tests_support {
  use std::path::PathBuf;

  /// The reference vectors vendored under `testdata/vectors` (provenance and licences in its
  /// README). They are part of the repository, so a fresh clone runs every vector test.
  pub fn vectors() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/vectors")
  }
}

#[cfg(test)]
mod tests {
  use super::tests_support::vectors;
  use super::*;
  use std::path::PathBuf;

  #[test]
  fn every_reference_input_canonicalizes_byte_for_byte() {
    let dir = vectors();
    let mut seen = 0;
    for entry in std::fs::read_dir(dir.join("jcs/input")).unwrap() {
      let path = entry.unwrap().path();
      let name = path.file_name().unwrap().to_owned();
      let input = std::fs::read_to_string(&path).unwrap();
      let expected = std::fs::read(dir.join("jcs/output").join(&name)).unwrap();
      let hex_name = PathBuf::from(&name).with_extension("txt");
      let hex_text = std::fs::read_to_string(dir.join("jcs/outhex").join(hex_name)).unwrap();
      let expected_hex = hex::decode(hex_text.split_whitespace().collect::<String>()).unwrap();
      assert_eq!(expected, expected_hex, "{name:?}: output and outhex disagree");
      let got = canonicalize_text(&input).unwrap();
      assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&expected), "{name:?}");
      assert_eq!(got, expected, "{name:?}");
      // Canonical form is a fixed point.
      assert_eq!(canonicalize_text(std::str::from_utf8(&got).unwrap()).unwrap(), got);
      seen += 1;
    }
    assert_eq!(seen, 6);
  }

  #[test]
  fn every_es6_number_case_formats_exactly() {
    let dir = vectors();
    let text = std::fs::read_to_string(dir.join("jcs/es6_numbers_first10000.csv")).unwrap();
    let mut count = 0;
    for line in text.lines().filter(|l| !l.is_empty()) {
      let (hex_bits, expected) = line.split_once(',').unwrap();
      let f = f64::from_bits(u64::from_str_radix(hex_bits, 16).unwrap());
      let mut out = Vec::new();
      write_number(&mut out, f).unwrap();
      assert_eq!(std::str::from_utf8(&out).unwrap(), expected, "bits {hex_bits}");
      // And through JSON text: parsing the expected form gives back the same double.
      let parsed: Value = parse_strict(expected).unwrap();
      assert_eq!(to_string(&parsed).unwrap(), expected, "text {expected}");
      count += 1;
    }
    assert_eq!(count, 10_000);
    for (bits, expected) in [
      ("4340000000000001", "9007199254740994"),
      ("4340000000000002", "9007199254740996"),
      ("444b1ae4d6e2ef50", "1e+21"),
      ("3eb0c6f7a0b5ed8d", "0.000001"),
      ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
      ("8000000000000000", "0"),
    ] {
      let mut out = Vec::new();
      write_number(&mut out, f64::from_bits(u64::from_str_radix(bits, 16).unwrap())).unwrap();
      assert_eq!(std::str::from_utf8(&out).unwrap(), expected);
    }
    for bits in ["7fffffffffffffff", "7ff0000000000000", "fff0000000000000"] {
      let err = write_number(&mut Vec::new(), f64::from_bits(u64::from_str_radix(bits, 16).unwrap())).unwrap_err();
      assert_eq!(err.code(), "E_INVALID_ARGUMENT");
    }
  }

  #[test]
  fn member_names_sort_by_utf16_code_units_not_code_points() {
    // U+1F600 (surrogates D83D DE00) sorts before U+FB01 in UTF-16, after it in UTF-8.
    let v: Value = parse_strict("{\"\u{fb01}\":1,\"\u{1f600}\":2,\"a\":3}").unwrap();
    assert_eq!(to_string(&v).unwrap(), "{\"a\":3,\"\u{1f600}\":2,\"\u{fb01}\":1}");
  }

  #[test]
  fn large_integers_round_like_javascript_and_duplicates_are_refused() {
    assert_eq!(canonicalize_text("[9007199254740993, -0, -0.0, 1E400]").unwrap_err().code(), "E_INVALID_ARGUMENT");
    assert_eq!(
      canonicalize_text("[9007199254740993,-0,-0.0,1e21,18446744073709551616]").unwrap(),
      b"[9007199254740992,0,0,1e+21,18446744073709552000]"
    );
    assert_eq!(canonicalize_text(r#"{"a":1,"a":2}"#).unwrap_err().code(), "E_INVALID_ARGUMENT");
    assert_eq!(
      canonicalize_text("\"\\u0000\\u001f\\u007f\u{2028}\"").unwrap(),
      "\"\\u0000\\u001f\u{7f}\u{2028}\"".as_bytes()
    );
    assert_eq!(canonicalize_text("1 2").unwrap_err().code(), "E_INVALID_ARGUMENT");
  }

  #[test]
  fn deep_nesting_is_refused_not_a_stack_overflow() {
    let mut v = Value::Null;
    for _ in 0..(MAX_DEPTH + 2) {
      v = Value::Array(vec![v]);
    }
    assert_eq!(to_vec(&v).unwrap_err().code(), "E_INVALID_ARGUMENT");
  }
}
