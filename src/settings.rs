//! Typed settings from YAML: the one way `.loa.config.yaml` ([`crate::config`]) and the
//! frontmatter of a skill's `SKILL.md` ([`crate::compaction`]) become Rust values.
//!
//! The parts own their settings types (a part never imports `config`); those types derive
//! `serde::Deserialize` and use the field deserialisers below for ranges and paths. This module
//! gives both readers the same guarantees:
//!
//! - **Bounded.** The text is read by the crate's one YAML reader ([`crate::yaml`], with
//!   [`Limits::SETTINGS`]): at most 4 MiB, nested at most [`crate::yaml::MAX_DEPTH`] levels,
//!   and its aliases may expand it to at most [`expansion_limit`] (four times the text plus
//!   64 KiB), all checked event by event before any value is built, so nesting and alias bombs
//!   cost linear time and memory.
//! - **Errors name the key.** Every problem is `E_CONFIG_INVALID` whose `key` is the dotted path of
//!   the value (`memory.quality_gates.min_confidence`, `context_editing.clear_targets[2]`), or
//!   `<yaml>` for the document itself, and the message gives the line when the key is written in
//!   the text (not when it only arrives through a merge key).
//! - **Unknown keys are warnings** naming their dotted path, never errors.
//! - **No secret in a message.** A value appears in a message only through [`describe`], which
//!   shows just the kind of value for keys whose name looks secret (key, token, password, ...).
//!   The deserialisers here never put the value into their messages, and serde's own messages are
//!   cut down to what they expected.
//! - `key:` with no value (null) means "the default", like an absent key. YAML merge keys
//!   (`<<: *anchor`) are applied.

use std::cell::Cell;
use std::fmt;
use std::path::{Component, Path};

use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, Visitor};
use serde::Deserialize;
use serde_norway::Value;

use crate::error::{LoaError, Result};
use crate::yaml::Limits;

/// Largest integer JavaScript represents exactly (`Number.MAX_SAFE_INTEGER`); no integer setting
/// may exceed it, so that values reach JS unchanged.
pub const MAX_SAFE: u64 = (1 << 53) - 1;

/// The error key of the document as a whole.
pub const DOCUMENT_KEY: &str = "<yaml>";

/// A parsed YAML document, with its text kept for the line numbers of errors.
pub struct Document<'a> {
  text: &'a str,
  /// The document with merge keys applied.
  pub root: Value,
}

/// A value that did not deserialise: its dotted path and why (value included when it may be
/// shown). Turn it into the crate error with [`Document::error`], after renaming the key if the
/// value was read under another spelling.
#[derive(Debug)]
pub struct Invalid {
  pub key: String,
  pub reason: String,
}

/// How many nodes and scalar bytes a document of `text_len` bytes may expand to through its
/// aliases. A document without aliases never comes near it.
pub fn expansion_limit(text_len: usize) -> u64 {
  Limits::SETTINGS.expansion_limit(text_len)
}

impl<'a> Document<'a> {
  /// Parses `text` (a leading byte-order mark is ignored). An empty document is null.
  pub fn parse(text: &'a str) -> Result<Document<'a>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut root: Value = crate::yaml::from_str(text, &Limits::SETTINGS).map_err(yaml_error)?;
    root.apply_merge().map_err(syntax_error)?;
    Ok(Document { text, root })
  }

  /// The value at dotted `path` (`a.b[1]`), unless absent or null.
  pub fn get(&self, path: &str) -> Option<&Value> {
    lookup(&self.root, path)
  }

  /// Deserialises the value at dotted `at` ("" for the whole document) into `T`; unknown keys
  /// are pushed to `warnings`. Settings structs are `#[serde(default)]`, so an absent or null
  /// value gives their defaults.
  pub fn deserialize<T: DeserializeOwned>(&self, at: &str, warnings: &mut Vec<String>) -> Result<T, Invalid> {
    // Null reads as an empty mapping, so an absent section is all defaults.
    let mut value = self.get(at).cloned().unwrap_or(Value::Null);
    prune(&mut value, at, warnings);
    let mut ignored = Vec::new();
    let mut note = |path: serde_ignored::Path| ignored.push(ignored_path(at, &path));
    let result = serde_path_to_error::deserialize(serde_ignored::Deserializer::new(&value, &mut note));
    warnings.extend(ignored.into_iter().map(|p| format!("unknown key `{p}` ignored")));
    result.map_err(|e| {
      let path = e.path().to_string();
      value_error(&join_path(at, &path), lookup(&value, &path), &e.inner().to_string())
    })
  }

  /// `E_CONFIG_INVALID` at `key`, with the line of `key` in the text when it is written there.
  pub fn error(&self, key: &str, reason: impl Into<String>) -> LoaError {
    let reason = reason.into();
    match self.line_of(key) {
      Some(line) => invalid(key, format!("{reason} (line {line})")),
      None => invalid(key, reason),
    }
  }

  fn line_of(&self, key: &str) -> Option<usize> {
    let segments = segments(key)?;
    let budget = Cell::new(expansion_limit(self.text.len()));
    let walk = Walk { budget: &budget, target: Some(&segments) };
    match crate::yaml::deserialize_seed(self.text, &Limits::SETTINGS, walk).err()? {
      crate::yaml::Error::Syntax(found) if found.to_string().contains(FOUND) => found.location().map(|l| l.line()),
      _ => None,
    }
  }
}

/// `E_CONFIG_INVALID` at `key`.
pub fn invalid(key: &str, reason: impl Into<String>) -> LoaError {
  LoaError::ConfigInvalid { key: key.to_string(), reason: reason.into() }
}

/// A refusal of the YAML reader as `E_CONFIG_INVALID` of the document (`E_TOO_LARGE` past its
/// size bound).
fn yaml_error(e: crate::yaml::Error) -> LoaError {
  use crate::yaml::Error;
  match e {
    Error::Syntax(e) => syntax_error(e),
    Error::TooLarge { size, limit } => {
      LoaError::TooLarge { what: "YAML text".into(), size: size as u64, limit: limit as u64 }
    }
    Error::Expansion { limit } => invalid(
      DOCUMENT_KEY,
      format!("its aliases expand it beyond {limit} nodes and characters (four times its size); refused"),
    ),
    other => invalid(DOCUMENT_KEY, other.to_string()),
  }
}

fn syntax_error(e: serde_norway::Error) -> LoaError {
  let reason = match e.location() {
    Some(loc) if !e.to_string().contains("line") => {
      format!("YAML syntax error at line {} column {}: {e}", loc.line(), loc.column())
    }
    _ => format!("YAML syntax error: {e}"),
  };
  invalid(DOCUMENT_KEY, reason)
}

/// Whether a dotted key path names something that may hold a secret, in which case its value is
/// never shown in a message.
pub fn secret_ish(path: &str) -> bool {
  let lower = path.to_ascii_lowercase();
  lower.split(|c: char| !c.is_ascii_alphanumeric()).any(|seg| {
    matches!(seg, "key" | "keys" | "token" | "private" | "pat")
      || ["secret", "password", "passwd", "passphrase", "credential", "apikey", "privatekey"]
        .iter()
        .any(|w| seg.contains(w))
  })
}

/// How the value at `path` is shown in a message. A value is the caller's data and may be a
/// token pasted in the wrong place, so only short plain values appear as they are: booleans,
/// numbers of at most 12 characters, and strings that are plain names (at most 16 ASCII letters,
/// digits, `_` and `$`, not only digits, like `5s` or `sometimes`). Anything else, and every value
/// of a key whose name looks secret, is shown by its kind.
pub fn describe(path: &str, v: &Value) -> String {
  let kind = match v {
    Value::Null => "null",
    Value::Bool(_) => "a boolean",
    Value::Number(n) if n.is_f64() => "a decimal number",
    Value::Number(_) => "a whole number",
    Value::String(_) => "a string",
    Value::Sequence(_) => "a list",
    Value::Mapping(_) => "a mapping",
    Value::Tagged(_) => "a tagged value",
  };
  if secret_ish(path) {
    return kind.to_string();
  }
  match v {
    Value::Null => "null".into(),
    Value::Bool(b) => b.to_string(),
    Value::Number(n) if n.to_string().len() <= 12 => n.to_string(),
    Value::String(s) if crate::error::is_plain_name(s) => format!("{s:?}"),
    Value::String(s) => format!("a string of {} characters", s.chars().count()),
    _ => kind.to_string(),
  }
}

/// The crate's rule for caller strings that may appear in messages: no known credential format,
/// e-mail address, or phone, card or account number has this shape.
/// The error of `value` at `key` from a deserialiser's `message`: what was expected, then the
/// value as [`describe`] shows it.
pub fn value_error(key: &str, value: Option<&Value>, message: &str) -> Invalid {
  let mut reason = plain_reason(message);
  if let Some(v) = value {
    reason = format!("{reason}, got {}", describe(key, v));
  }
  Invalid { key: key.to_string(), reason }
}

/// serde's messages carry the offending value (`invalid type: string "x", expected u64`); keep
/// only what was expected, in words, so that values reach messages only through [`describe`].
/// Messages of the deserialisers below never hold a value and pass unchanged.
fn plain_reason(message: &str) -> String {
  let Some(at) = message.rfind(", expected ") else {
    return message.to_string();
  };
  let expected = message[at + ", expected ".len()..].replace('`', "");
  let expected = match expected.as_str() {
    e if e.starts_with("struct ") => "a mapping of keys".to_string(),
    "a sequence" => "a list".to_string(),
    _ => expected,
  };
  format!("expected {expected}")
}

/// Drops null entries (they mean "default") and keys that are not strings (which serde would
/// take for field numbers), warning about the latter as unknown keys.
fn prune(value: &mut Value, path: &str, warnings: &mut Vec<String>) {
  match value {
    Value::Mapping(map) => {
      map.retain(|k, v| match k {
        Value::String(_) => !v.is_null(),
        other => {
          warnings.push(format!("unknown key `{}` ignored", join_path(path, &describe("", other))));
          false
        }
      });
      for (k, v) in map.iter_mut() {
        prune(v, &join_path(path, k.as_str().unwrap_or_default()), warnings);
      }
    }
    Value::Sequence(items) => {
      for (i, v) in items.iter_mut().enumerate() {
        prune(v, &format!("{path}[{i}]"), warnings);
      }
    }
    _ => {}
  }
}

fn join_path(prefix: &str, rest: &str) -> String {
  match (prefix.is_empty(), rest) {
    (_, "" | ".") => {
      if prefix.is_empty() {
        DOCUMENT_KEY.to_string()
      } else {
        prefix.to_string()
      }
    }
    (true, _) => rest.to_string(),
    (false, r) if r.starts_with('[') => format!("{prefix}{r}"),
    (false, r) => format!("{prefix}.{r}"),
  }
}

fn ignored_path(prefix: &str, path: &serde_ignored::Path) -> String {
  fn write(path: &serde_ignored::Path, out: &mut String) {
    match path {
      serde_ignored::Path::Root => {}
      serde_ignored::Path::Seq { parent, index } => {
        write(parent, out);
        out.push_str(&format!("[{index}]"));
      }
      serde_ignored::Path::Map { parent, key } => {
        write(parent, out);
        if !out.is_empty() {
          out.push('.');
        }
        out.push_str(key);
      }
      serde_ignored::Path::Some { parent }
      | serde_ignored::Path::NewtypeStruct { parent }
      | serde_ignored::Path::NewtypeVariant { parent } => write(parent, out),
    }
  }
  let mut out = String::new();
  write(path, &mut out);
  join_path(prefix, &out)
}

#[derive(PartialEq)]
enum Segment {
  Key(String),
  Index(usize),
}

/// `a.b[1].c` as segments; `None` for the document key or a malformed path.
fn segments(path: &str) -> Option<Vec<Segment>> {
  if path.is_empty() || path == DOCUMENT_KEY {
    return None;
  }
  let mut out = Vec::new();
  for part in path.split('.') {
    let (key, mut rest) = part.split_once('[').map_or((part, ""), |(k, r)| (k, r));
    if !key.is_empty() {
      out.push(Segment::Key(key.to_string()));
    }
    while !rest.is_empty() {
      let (index, after) = rest.split_once(']')?;
      out.push(Segment::Index(index.parse().ok()?));
      rest = after.strip_prefix('[').unwrap_or(after);
    }
  }
  Some(out)
}

fn lookup<'v>(root: &'v Value, path: &str) -> Option<&'v Value> {
  let mut v = root;
  for seg in segments(path).unwrap_or_default() {
    v = match seg {
      Segment::Key(k) => v.as_mapping()?.get(k.as_str())?,
      Segment::Index(i) => v.as_sequence()?.get(i)?,
    };
  }
  (!v.is_null()).then_some(v)
}

// -- Walking the raw text --------------------------------------------------------------------

const FOUND: &str = "loa-settings: key found here";

/// Visits every node of the document, aliases expanded (keys included), and fails once more than
/// `budget` nodes plus scalar bytes have been seen. With a `target` path it also fails with
/// [`FOUND`] at the value there, so that the parser's error carries the value's position. A
/// string node gives its text back, so that mapping keys can be followed.
#[derive(Clone, Copy)]
struct Walk<'a> {
  budget: &'a Cell<u64>,
  target: Option<&'a [Segment]>,
}

type Node = Option<String>;

impl<'a> Walk<'a> {
  fn node<E: de::Error>(self, bytes: usize) -> Result<Node, E> {
    if self.target.is_some_and(|t| t.is_empty()) {
      return Err(E::custom(FOUND));
    }
    let left = self.budget.get().checked_sub(1 + bytes as u64);
    self.budget.set(left.unwrap_or(0));
    match left {
      Some(_) => Ok(None),
      None => Err(E::custom("alias expansion budget exhausted")),
    }
  }

  /// The walk into the child `at`: still after the target if the child is on its path.
  fn child(self, at: &Segment) -> Walk<'a> {
    let target = match (self.target, at) {
      (Some([Segment::Key(k), rest @ ..]), Segment::Key(key)) if k == key => Some(rest),
      (Some([Segment::Index(i), rest @ ..]), Segment::Index(index)) if i == index => Some(rest),
      _ => None,
    };
    Walk { target, ..self }
  }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
  type Value = Node;
  fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
    d.deserialize_any(self)
  }
}

impl<'de> Visitor<'de> for Walk<'_> {
  type Value = Node;
  fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
    f.write_str("any YAML value")
  }
  fn visit_bool<E: de::Error>(self, _: bool) -> Result<Node, E> {
    self.node(0)
  }
  fn visit_i64<E: de::Error>(self, _: i64) -> Result<Node, E> {
    self.node(0)
  }
  fn visit_u64<E: de::Error>(self, _: u64) -> Result<Node, E> {
    self.node(0)
  }
  fn visit_f64<E: de::Error>(self, _: f64) -> Result<Node, E> {
    self.node(0)
  }
  fn visit_str<E: de::Error>(self, s: &str) -> Result<Node, E> {
    self.node(s.len()).map(|_| Some(s.to_string()))
  }
  fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
    self.node(0)
  }
  fn visit_none<E: de::Error>(self) -> Result<Node, E> {
    self.node(0)
  }
  fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
    d.deserialize_any(self)
  }
  fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
    self.node(0)?;
    let mut i = 0;
    while seq.next_element_seed(self.child(&Segment::Index(i)))?.is_some() {
      i += 1;
    }
    Ok(None)
  }
  fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
    self.node(0)?;
    while let Some(key) = map.next_key_seed(Walk { target: None, ..self })? {
      map.next_value_seed(self.child(&Segment::Key(key.unwrap_or_default())))?;
    }
    Ok(None)
  }
  fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<Node, A::Error> {
    use serde::de::VariantAccess;
    self.node(0)?;
    let (_, variant) = data.variant::<IgnoredAny>()?;
    variant.newtype_variant_seed(Walk { target: None, ..self })
  }
}

// -- Field deserialisers -------------------------------------------------------------------------
//
// For `#[serde(deserialize_with = "...")]` on the fields of settings types. Each returns any `T`
// built from its value (`u64` or `Option<u64>`, ...), so one function serves required and
// optional fields. Messages never contain the value.

fn range_text(min: u64, max: u64, v: Option<u64>) -> String {
  match (min, max) {
    (_, MAX_SAFE) if v.is_some_and(|v| v > MAX_SAFE) => {
      format!("must be at most {MAX_SAFE} (the largest integer JavaScript represents exactly)")
    }
    (0, MAX_SAFE) => "must be zero or more".into(),
    (_, MAX_SAFE) => format!("must be at least {min}"),
    _ => format!("must be between {min} and {max}"),
  }
}

struct Whole<const MIN: u64, const MAX: u64>;

impl<'de, const MIN: u64, const MAX: u64> Visitor<'de> for Whole<MIN, MAX> {
  type Value = u64;
  fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
    f.write_str("a whole number")
  }
  fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
    if (MIN..=MAX).contains(&v) {
      Ok(v)
    } else {
      Err(E::custom(range_text(MIN, MAX, Some(v))))
    }
  }
  fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
    match u64::try_from(v) {
      Ok(v) => self.visit_u64(v),
      Err(_) => Err(E::custom(range_text(MIN, MAX, None))),
    }
  }
}

/// A whole number in `MIN..=MAX`.
pub fn uint<'de, D: de::Deserializer<'de>, T: From<u64>, const MIN: u64, const MAX: u64>(d: D) -> Result<T, D::Error> {
  d.deserialize_u64(Whole::<MIN, MAX>).map(T::from)
}

/// A whole number from 0 up to [`MAX_SAFE`].
pub fn count<'de, D: de::Deserializer<'de>, T: From<u64>>(d: D) -> Result<T, D::Error> {
  uint::<D, T, 0, MAX_SAFE>(d)
}

/// A whole number from 1 up to [`MAX_SAFE`].
pub fn positive<'de, D: de::Deserializer<'de>, T: From<u64>>(d: D) -> Result<T, D::Error> {
  uint::<D, T, 1, MAX_SAFE>(d)
}

struct Number;

impl Visitor<'_> for Number {
  type Value = f64;
  fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
    f.write_str("a number")
  }
  fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
    Ok(v)
  }
  fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
    Ok(v as f64)
  }
  fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
    Ok(v as f64)
  }
}

/// A number from 0 to 1.
pub fn fraction<'de, D: de::Deserializer<'de>, T: From<f64>>(d: D) -> Result<T, D::Error> {
  let v = d.deserialize_f64(Number)?;
  if (0.0..=1.0).contains(&v) {
    Ok(T::from(v))
  } else {
    Err(de::Error::custom("must be between 0 and 1"))
  }
}

/// A percentage: a number above 0 and at most 100.
pub fn percent<'de, D: de::Deserializer<'de>, T: From<f64>>(d: D) -> Result<T, D::Error> {
  let v = d.deserialize_f64(Number)?;
  if !(0.0..=100.0).contains(&v) {
    return Err(de::Error::custom("must be between 0 and 100"));
  }
  if v == 0.0 {
    return Err(de::Error::custom("must be above 0"));
  }
  Ok(T::from(v))
}

/// A string that is not blank.
#[derive(Debug, Clone, PartialEq)]
pub struct Text(pub String);

impl<'de> Deserialize<'de> for Text {
  fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
    let s = String::deserialize(d)?;
    if s.trim().is_empty() {
      return Err(de::Error::custom("must not be empty"));
    }
    Ok(Text(s))
  }
}

/// A string that is not blank.
pub fn text<'de, D: de::Deserializer<'de>, T: From<String>>(d: D) -> Result<T, D::Error> {
  Text::deserialize(d).map(|t| T::from(t.0))
}

/// A list of non-blank strings; repeats are dropped (in linear time: a set of those seen).
pub fn text_list<'de, D: de::Deserializer<'de>, T: From<Vec<String>>>(d: D) -> Result<T, D::Error> {
  let mut seen = std::collections::HashSet::new();
  let out: Vec<String> =
    Vec::<Text>::deserialize(d)?.into_iter().map(|t| t.0).filter(|s| seen.insert(s.clone())).collect();
  Ok(T::from(out))
}

/// A path relative to the workspace, normalised to `/`-separated components without `.`
/// (`"."` for the workspace itself). Absolute paths, `..`, `~` and NUL are refused.
pub fn rel_path<'de, D: de::Deserializer<'de>, T: From<String>>(d: D) -> Result<T, D::Error> {
  let Text(s) = Text::deserialize(d)?;
  let fail = |why: &str| Err(de::Error::custom(why));
  if s.contains('\0') {
    return fail("must not contain a NUL character");
  }
  if s.starts_with('~') {
    return fail("must be relative to the workspace (`~` is not expanded)");
  }
  let mut parts = Vec::new();
  for c in Path::new(&s).components() {
    match c {
      Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
      Component::CurDir => {}
      Component::ParentDir => return fail("must stay inside the workspace (no `..`)"),
      Component::RootDir | Component::Prefix(_) => return fail("must be relative to the workspace"),
    }
  }
  Ok(T::from(if parts.is_empty() { ".".into() } else { parts.join("/") }))
}

/// Removes entries of `list` equal to an earlier one, warning with the index of each
/// (`` `key[2]` repeats an earlier target; ignored ``). For lists of a few distinct values
/// (enums): each entry is compared with those kept.
pub fn drop_repeats<T: PartialEq>(list: &mut Vec<T>, key: &str, noun: &str, warnings: &mut Vec<String>) {
  let mut kept: Vec<T> = Vec::with_capacity(list.len());
  for (i, item) in std::mem::take(list).into_iter().enumerate() {
    if kept.contains(&item) {
      warnings.push(format!("`{key}[{i}]` repeats an earlier {noun}; ignored"));
    } else {
      kept.push(item);
    }
  }
  *list = kept;
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn alias_bombs_are_refused_in_linear_time() {
    // Nine levels of ten references each: 10^9 nodes once expanded, from a few hundred bytes.
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
      let refs = vec![format!("*a{}", i - 1); 10].join(", ");
      text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    let err = Document::parse(&text).err().expect("refused");
    assert!(matches!(err, LoaError::ConfigInvalid { ref key, .. } if key == DOCUMENT_KEY), "{err}");
    assert!(err.to_string().contains("aliases"), "{err}");

    // One large anchor referenced many times: linear in references but quadratic in size.
    let anchor = vec!["y"; 2000].join(", ");
    let text = format!("big: &big [{anchor}]\nrefs: [{}]\n", vec!["*big"; 2000].join(", "));
    assert!(Document::parse(&text).err().expect("refused").to_string().contains("aliases"));

    // Aliases used as keys count as well.
    let keys: String = (0..2000).map(|i| format!("? *big\n: {i}\n")).collect();
    let text = format!("big: &big [{anchor}]\nm:\n{}", keys.lines().map(|l| format!("  {l}\n")).collect::<String>());
    assert!(Document::parse(&text).err().expect("refused").to_string().contains("aliases"));

    // Modest reuse of an anchor is fine.
    let doc = Document::parse("base: &b {sync: batch}\nwal:\n  <<: *b\nother: [*b, *b]\n").unwrap();
    assert_eq!(doc.get("wal.sync").and_then(Value::as_str), Some("batch"));
  }

  #[test]
  fn deep_nesting_is_refused_with_its_line() {
    let n = 50_000;
    for deep in [format!("{}1{}", "[".repeat(n), "]".repeat(n)), format!("{}1{}", "{a: ".repeat(n), "}".repeat(n))] {
      let err = Document::parse(&format!("wal:\n  sync: {deep}\n")).err().expect("refused");
      assert!(matches!(err, LoaError::ConfigInvalid { ref key, .. } if key == DOCUMENT_KEY), "{err}");
      assert!(err.to_string().contains("nested deeper than 32 levels (line 2)"), "{err}");
    }
  }

  #[test]
  fn lines_are_found_for_written_keys_only() {
    let doc = Document::parse("a:\n  b: 1\n  c:\n    - x\n    - y\nm: &m {k: 2}\nn:\n  <<: *m\n").unwrap();
    assert_eq!(doc.line_of("a.b"), Some(2));
    assert_eq!(doc.line_of("a.c[1]"), Some(5));
    assert_eq!(doc.line_of("a.d"), None);
    assert_eq!(doc.line_of("n.k"), None, "only merged in");
    assert_eq!(doc.line_of(DOCUMENT_KEY), None);
    assert!(doc.error("a.c[1]", "bad").to_string().contains("(line 5)"));
  }

  #[test]
  fn serde_messages_lose_their_values() {
    assert_eq!(
      plain_reason("invalid type: string \"SECRET, expected x\", expected a whole number"),
      "expected a whole number"
    );
    assert_eq!(plain_reason("unknown variant `SECRET`, expected one of `a`, `b`"), "expected one of a, b");
    assert_eq!(plain_reason("invalid type: integer `5`, expected struct WalConfig"), "expected a mapping of keys");
    assert_eq!(plain_reason("must be between 0 and 1"), "must be between 0 and 1");
  }

  #[test]
  fn values_appear_only_when_short_and_plain() {
    let v = |yaml: &str| serde_norway::from_str::<Value>(yaml).unwrap();
    assert_eq!(describe("wal.sync", &v("sometimes")), "\"sometimes\"");
    assert_eq!(describe("a.b", &v("1.5")), "1.5");
    assert_eq!(describe("a.b", &v("[1]")), "a list");
    // Token shapes built at run time (no token-shaped literal in the source).
    let ghp = format!("gh{}_{}", 'p', "a1B2".repeat(9));
    for secret in [ghp.as_str(), "bob@example.com", "../elsewhere", "4111111111111111"] {
      let shown = describe("wal.dir", &Value::String(secret.into()));
      assert!(!shown.contains(secret) && shown.starts_with("a string of"), "{shown}");
    }
    assert_eq!(describe("a.b", &v("4111111111111111")), "a whole number");
    assert_eq!(describe("signing.keys_dir", &v("x")), "a string");
    assert_eq!(describe("api_token", &v("12")), "a whole number");
  }

  #[test]
  fn paths_split_into_segments() {
    let s = segments("a.b[2][3].c").unwrap();
    assert_eq!(s.len(), 5);
    assert!(matches!(&s[3], Segment::Index(3)));
    assert!(segments("a[x]").is_none());
    assert_eq!(join_path("", "."), DOCUMENT_KEY);
    assert_eq!(join_path("ctx", "[1]"), "ctx[1]");
    assert_eq!(join_path("ctx", "a[1]"), "ctx.a[1]");
  }
}
