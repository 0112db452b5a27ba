//! The crate's one way into and out of YAML: `.loa.config.yaml` ([`crate::config`], through
//! [`crate::settings`]), beads ([`crate::ledger::beads`]), a skill's `SKILL.md` frontmatter
//! ([`crate::compaction`]) and synthesis event files ([`crate::synth`]) are all read by
//! [`from_str`] (or [`deserialize_seed`]), and written by [`to_string`].
//!
//! The parser is `serde_norway` (the maintained fork of the deprecated `serde_yaml`), which runs
//! `unsafe-libyaml-norway`, a Rust translation of libyaml. Two things about it make YAML cost
//! more than it weighs, and this module bounds both before `serde_norway` is given the text:
//!
//! - **Nesting.** libyaml's scanner walks its whole stack of open flow collections (`[`, `{`) at
//!   every token, and `serde_norway` has every event of the document parsed before it looks at
//!   any (its own limit of 128 levels is applied only then), so `x: [[[[...]]]]` costs time in
//!   size times depth: 128 KiB of it took seconds. Here the document's events are read one by
//!   one from the same libyaml and the read stops at the first collection nested deeper than
//!   [`Limits::max_depth`] (block and flow alike): what is read up to there costs at most that
//!   depth per token, so the check is linear, and a document that passes it is parsed by
//!   `serde_norway` in linear time too. Reading the events, rather than counting brackets in
//!   the text, sees what libyaml sees: a `]` inside a quoted string closes nothing.
//! - **Aliases.** An alias (`*name`) stands for a whole copy of the node its anchor names, so a
//!   few bytes can stand for megabytes. The same read adds up the size the document has once
//!   every alias is expanded (one per node plus the bytes of each scalar, an alias counting as
//!   the size of its anchor's node), in constant time per event, and stops once it passes
//!   [`Limits::expansion_limit`] of the text's length. An alias of a node still open (which
//!   would expand forever) is refused at once.
//!
//! Every bound refuses the whole document with a reason that names the bound, never the text.

use std::collections::HashMap;
use std::fmt;
use std::mem::MaybeUninit;

use serde::de::{DeserializeOwned, DeserializeSeed};
use serde::Serialize;
use unsafe_libyaml_norway as unsafe_yaml;

/// Deepest nesting of collections (mappings and lists, block or flow) a document may have.
/// Settings, beads, frontmatter and events are a few levels deep.
pub const MAX_DEPTH: usize = 32;

/// Largest YAML text read, in bytes: the largest file any reader reads (a bead, 4 MiB). Each
/// reader has its own smaller bound on its file besides.
pub const MAX_YAML_BYTES: usize = 4 * 1024 * 1024;

/// The bounds a document is read under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
  /// Largest text, in bytes.
  pub max_bytes: usize,
  /// Deepest nesting of collections.
  pub max_depth: usize,
  /// The expanded document may be this many times the text's length ...
  pub expansion_factor: u64,
  /// ... plus this many nodes and bytes.
  pub expansion_slack: u64,
}

impl Limits {
  /// Settings, beads and frontmatter: aliases and merge keys (`<<: *base`) are how people share
  /// settings between sections, so the expanded document may be four times the text plus 64 KiB.
  pub const SETTINGS: Limits =
    Limits { max_bytes: MAX_YAML_BYTES, max_depth: MAX_DEPTH, expansion_factor: 4, expansion_slack: 65_536 };

  /// How many nodes plus scalar bytes a text of `text_len` bytes may expand to. A document
  /// without aliases never comes near it: each node takes at least one byte of text.
  pub fn expansion_limit(&self, text_len: usize) -> u64 {
    self.expansion_factor.saturating_mul(text_len as u64).saturating_add(self.expansion_slack)
  }
}

/// Why a text was not read.
#[derive(Debug)]
pub enum Error {
  /// Longer than [`Limits::max_bytes`].
  TooLarge { size: usize, limit: usize },
  /// A collection nested deeper than [`Limits::max_depth`], starting at `line` (1-based).
  TooDeep { limit: usize, line: usize },
  /// Its aliases expand it beyond `limit` nodes and bytes.
  Expansion { limit: u64 },
  /// An alias inside the node its anchor names, at `line` (1-based).
  RecursiveAlias { line: usize },
  /// Not YAML, or not the shape `T` wants: `serde_norway`'s error.
  Syntax(serde_norway::Error),
}

impl Error {
  /// The 1-based line the problem was found at, when there is one.
  pub fn line(&self) -> Option<usize> {
    match self {
      Error::TooDeep { line, .. } | Error::RecursiveAlias { line } => Some(*line),
      Error::Syntax(e) => e.location().map(|l| l.line()),
      Error::TooLarge { .. } | Error::Expansion { .. } => None,
    }
  }

  /// True for the bounds of this module (not a syntax or shape error).
  pub fn is_limit(&self) -> bool {
    !matches!(self, Error::Syntax(_))
  }
}

impl fmt::Display for Error {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match self {
      Error::TooLarge { size, limit } => write!(f, "{size} bytes of YAML, over the limit of {limit}"),
      Error::TooDeep { limit, line } => write!(f, "nested deeper than {limit} levels (line {line})"),
      Error::Expansion { limit } => {
        write!(f, "its aliases expand it beyond {limit} nodes and characters; refused")
      }
      Error::RecursiveAlias { line } => write!(f, "an alias inside the node it names (line {line}); refused"),
      Error::Syntax(e) => write!(f, "{e}"),
    }
  }
}

impl std::error::Error for Error {}

/// What [`check`] read: for tests and benchmarks (the work done is linear in `events`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
  /// Parser events read.
  pub events: u64,
  /// Deepest nesting seen.
  pub depth: usize,
  /// Nodes plus scalar bytes, aliases expanded.
  pub expanded: u64,
}

/// Reads `text` as `T` under `limits` (see the module docs).
pub fn from_str<T: DeserializeOwned>(text: &str, limits: &Limits) -> Result<T, Error> {
  check(text, limits)?;
  serde_norway::from_str(text).map_err(Error::Syntax)
}

/// Runs `seed` over `text` under `limits`: for walks that need the parser's positions.
pub fn deserialize_seed<'de, S: DeserializeSeed<'de>>(
  text: &'de str,
  limits: &Limits,
  seed: S,
) -> Result<S::Value, Error> {
  check(text, limits)?;
  seed.deserialize(serde_norway::Deserializer::from_str(text)).map_err(Error::Syntax)
}

/// YAML text of `value`. `serde_norway` writes no anchors or aliases, and block style.
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_norway::Error> {
  serde_norway::to_string(value)
}

/// Checks `text` against `limits` without building anything. A syntax error ends the check
/// without an error: the parse that follows meets the same error at the same place, having
/// read no deeper than the check did.
pub fn check(text: &str, limits: &Limits) -> Result<Stats, Error> {
  if text.len() > limits.max_bytes {
    return Err(Error::TooLarge { size: text.len(), limit: limits.max_bytes });
  }
  let budget = limits.expansion_limit(text.len());
  let mut stats = Stats::default();
  // Expanded size so far; an open node remembers it at its start (its own size is the
  // difference at its end), with its anchor.
  let mut total: u64 = 0;
  let mut open: Vec<(u64, Option<Vec<u8>>)> = Vec::new();
  let mut anchors: HashMap<Vec<u8>, u64> = HashMap::new();
  let mut events = Events::new(text);
  while let Some(event) = events.next() {
    stats.events += 1;
    let line = event.line + 1;
    match event.kind {
      Kind::DocumentStart => anchors.clear(),
      Kind::Open(anchor) => {
        // From here the name means this node (the parser registers an anchor at its start).
        if let Some(name) = &anchor {
          anchors.remove(name);
        }
        total = total.saturating_add(1);
        open.push((total, anchor));
        stats.depth = stats.depth.max(open.len());
        if open.len() > limits.max_depth {
          return Err(Error::TooDeep { limit: limits.max_depth, line });
        }
      }
      Kind::Close => {
        if let Some((start, Some(anchor))) = open.pop() {
          // The node's own count was added at its start, before `start` was taken.
          anchors.insert(anchor, total - start + 1);
        }
      }
      Kind::Scalar(len, anchor) => {
        let size = 1 + len;
        total = total.saturating_add(size);
        if let Some(anchor) = anchor {
          anchors.insert(anchor, size);
        }
      }
      Kind::Alias(name) => match anchors.get(&name) {
        Some(&size) => total = total.saturating_add(size),
        None if open.iter().any(|(_, a)| a.as_ref() == Some(&name)) => return Err(Error::RecursiveAlias { line }),
        // Unknown: `serde_norway` reports it.
        None => {}
      },
      Kind::Other => {}
    }
    if total > budget {
      return Err(Error::Expansion { limit: budget });
    }
  }
  stats.expanded = total;
  Ok(stats)
}

enum Kind {
  DocumentStart,
  Open(Option<Vec<u8>>),
  Close,
  Scalar(u64, Option<Vec<u8>>),
  Alias(Vec<u8>),
  Other,
}

struct Event {
  kind: Kind,
  /// 0-based.
  line: usize,
}

/// libyaml's parser over a borrowed text, one event at a time; ends at the stream's end or at
/// the first error.
struct Events<'a> {
  parser: Box<MaybeUninit<unsafe_yaml::yaml_parser_t>>,
  /// Initialised (and so to be deleted).
  live: bool,
  done: bool,
  _text: std::marker::PhantomData<&'a str>,
}

impl<'a> Events<'a> {
  fn new(text: &'a str) -> Events<'a> {
    let mut parser = Box::new(MaybeUninit::<unsafe_yaml::yaml_parser_t>::uninit());
    // SAFETY: initialize fills the boxed (so never moved) parser; the input is `text`, which
    // the PhantomData keeps borrowed for as long as the parser lives. Nothing else touches the
    // parser unless it was initialised (`live`).
    let live = unsafe {
      let p = parser.as_mut_ptr();
      if unsafe_yaml::yaml_parser_initialize(p).fail {
        false
      } else {
        unsafe_yaml::yaml_parser_set_encoding(p, unsafe_yaml::YAML_UTF8_ENCODING);
        unsafe_yaml::yaml_parser_set_input_string(p, text.as_ptr(), text.len() as u64);
        true
      }
    };
    Events { parser, live, done: !live, _text: std::marker::PhantomData }
  }

  fn next(&mut self) -> Option<Event> {
    if self.done {
      return None;
    }
    let mut raw = MaybeUninit::<unsafe_yaml::yaml_event_t>::uninit();
    // SAFETY: the parser is initialised (not `done`); a successful parse fills `raw`, whose
    // union member is read only for its type, and which is deleted before returning.
    unsafe {
      let p = self.parser.as_mut_ptr();
      if unsafe_yaml::yaml_parser_parse(p, raw.as_mut_ptr()).fail {
        self.done = true;
        return None;
      }
      let e = raw.as_mut_ptr();
      let line = (*e).start_mark.line as usize;
      let kind = match (*e).type_ {
        unsafe_yaml::YAML_STREAM_END_EVENT => {
          self.done = true;
          Kind::Other
        }
        unsafe_yaml::YAML_DOCUMENT_START_EVENT => Kind::DocumentStart,
        unsafe_yaml::YAML_SEQUENCE_START_EVENT => Kind::Open(name((*e).data.sequence_start.anchor)),
        unsafe_yaml::YAML_MAPPING_START_EVENT => Kind::Open(name((*e).data.mapping_start.anchor)),
        unsafe_yaml::YAML_SEQUENCE_END_EVENT | unsafe_yaml::YAML_MAPPING_END_EVENT => Kind::Close,
        unsafe_yaml::YAML_SCALAR_EVENT => Kind::Scalar((*e).data.scalar.length, name((*e).data.scalar.anchor)),
        unsafe_yaml::YAML_ALIAS_EVENT => Kind::Alias(name((*e).data.alias.anchor).unwrap_or_default()),
        _ => Kind::Other,
      };
      unsafe_yaml::yaml_event_delete(e);
      Some(Event { kind, line })
    }
  }
}

/// An anchor's name from libyaml's NUL-terminated string.
///
/// # Safety
/// `ptr` is null or a NUL-terminated string libyaml allocated for a live event.
unsafe fn name(ptr: *const u8) -> Option<Vec<u8>> {
  if ptr.is_null() {
    return None;
  }
  // SAFETY: as documented above.
  Some(unsafe { std::ffi::CStr::from_ptr(ptr.cast()) }.to_bytes().to_vec())
}

impl Drop for Events<'_> {
  fn drop(&mut self) {
    if self.live {
      // SAFETY: initialised in `new`, deleted once.
      unsafe { unsafe_yaml::yaml_parser_delete(self.parser.as_mut_ptr()) }
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_norway::Value;

  const S: Limits = Limits::SETTINGS;

  fn deep_flow(open: &str, close: &str, size: usize) -> String {
    let n = size / (open.len() + close.len());
    format!("x: {}1{}\n", open.repeat(n), close.repeat(n))
  }

  #[test]
  fn deep_nesting_is_refused_after_reading_only_that_deep() {
    for size in [48 << 10, 128 << 10, 1 << 20] {
      for (open, close) in [("[", "]"), ("{a: ", "}"), ("[\n", "]\n"), ("[{a: ", "}]")] {
        let text = deep_flow(open, close, size);
        let err = check(&text, &S).unwrap_err();
        assert!(matches!(err, Error::TooDeep { limit: MAX_DEPTH, .. }), "{err}");
        // The work done does not depend on the size: the read stops at the first level too deep.
        let read = events_read(&text);
        assert!(read <= 3 * MAX_DEPTH as u64, "{read} events read for {size} bytes");
        assert!(from_str::<Value>(&text, &S).unwrap_err().is_limit());
      }
    }
    // Block nesting counts as well.
    let block: String = (0..40).map(|i| format!("{}k{i}:\n", "  ".repeat(i))).collect();
    assert!(matches!(check(&block, &S), Err(Error::TooDeep { line: 33, .. })));
    // Exactly the limit is fine.
    let ok = deep_flow("[", "]", 2 * MAX_DEPTH - 2);
    assert_eq!(check(&ok, &S).unwrap().depth, MAX_DEPTH);
  }

  /// Events read before `check` stopped, whatever it decided.
  fn events_read(text: &str) -> u64 {
    let mut events = Events::new(text);
    let mut depth = 0usize;
    let mut n = 0;
    while let Some(e) = events.next() {
      n += 1;
      match e.kind {
        Kind::Open(_) => depth += 1,
        Kind::Close => depth -= 1,
        _ => {}
      }
      if depth > MAX_DEPTH {
        break;
      }
    }
    n
  }

  #[test]
  fn brackets_in_strings_neither_open_nor_close() {
    // A bracket count over the text would take each `"]"` for a close and let this through.
    let n = 5000;
    let text = format!("x: {}1{}\n", "[\"]\", ".repeat(n), "]".repeat(n));
    assert!(matches!(check(&text, &S), Err(Error::TooDeep { .. })));
    // And brackets in strings and comments are not nesting.
    let text = format!("a: \"{}\"\nb: '{}' # {}\nc: [1, 2]\n", "[".repeat(100), "{".repeat(100), "[".repeat(100));
    assert_eq!(check(&text, &S).unwrap().depth, 2);
  }

  #[test]
  fn aliases_count_their_expansion() {
    // One anchor of 4,000 characters, referenced a thousand times.
    let big = "y".repeat(4000);
    let text = format!("a: &a {big}\nb: [{}]\n", vec!["*a"; 1000].join(", "));
    assert!(matches!(check(&text, &S), Err(Error::Expansion { .. })));
    // Nested anchors expand multiplicatively; the count follows.
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
      text.push_str(&format!("a{i}: &a{i} [{}]\n", vec![format!("*a{}", i - 1); 10].join(", ")));
    }
    let err = check(&text, &S).unwrap_err();
    assert!(err.to_string().contains("aliases"), "{err}");
    // Modest reuse is counted exactly: the anchor's mapping (1 + 2 scalars of 4 and 1 + 5
    // bytes) three times more.
    let stats = check("base: &b {sync: batch}\nwal: *b\nother: [*b, *b]\n", &S).unwrap();
    let node = 1 + (1 + 4) + (1 + 5);
    assert_eq!(stats.expanded, 1 + (1 + 4) + node + (1 + 3) + node + (1 + 5) + 1 + 2 * node);
    // A redefined anchor counts as its latest node.
    let stats = check("a: &x [1, 2, 3]\nb: &x 1\nc: *x\n", &S).unwrap();
    assert_eq!(stats.expanded, 1 + 2 + (1 + 3 * 2) + 2 + 2 + 2 + 2);
  }

  #[test]
  fn an_alias_inside_its_own_node_is_refused() {
    assert!(matches!(check("a: &a [1, *a]\n", &S), Err(Error::RecursiveAlias { line: 1 })));
    assert!(matches!(check("a: &a\n  b: *a\n", &S), Err(Error::RecursiveAlias { line: 2 })));
  }

  fn value_depth(v: &Value) -> usize {
    match v {
      Value::Sequence(items) => 1 + items.iter().map(value_depth).max().unwrap_or(0),
      Value::Mapping(map) => 1 + map.iter().map(|(k, v)| value_depth(k).max(value_depth(v))).max().unwrap_or(0),
      Value::Tagged(t) => value_depth(&t.value),
      _ => 0,
    }
  }

  proptest::proptest! {
    /// Without aliases, the depth the check counts is the depth of what the parser builds, for
    /// any mix of brackets, quotes, comments, indentation and block indicators.
    #[test]
    fn the_check_counts_the_depth_the_parser_builds(text in "[\\[\\]{}\"' ,:#?|>a\\-\n]{0,60}") {
      let limits = Limits { max_depth: 3, ..S };
      let parsed = serde_norway::from_str::<Value>(&text);
      match check(&text, &limits) {
        Ok(stats) => {
          if let Ok(v) = &parsed {
            proptest::prop_assert!(value_depth(v) <= 3, "{:?}", text);
            proptest::prop_assert_eq!(stats.depth, value_depth(v));
          }
        }
        Err(Error::TooDeep { .. }) => {
          if let Ok(v) = &parsed {
            proptest::prop_assert!(value_depth(v) > 3, "{:?}", text);
          }
        }
        Err(e) => proptest::prop_assert!(false, "{e}"),
      }
    }
  }

  #[test]
  fn size_and_syntax() {
    let small = Limits { max_bytes: 10, ..S };
    assert!(matches!(check("a: 12345678901", &small), Err(Error::TooLarge { size: 14, limit: 10 })));
    // A syntax error is left to the parser, which reports it with its place.
    assert!(check("a: [1, 2\n", &S).is_ok());
    let err = from_str::<Value>("a: [1, 2\n", &S).unwrap_err();
    assert!(matches!(err, Error::Syntax(_)) && err.line().is_some(), "{err}");
    // Several documents are all checked (the parser reads the second to refuse it).
    let text = format!("a: 1\n---\nb: {}1{}\n", "[".repeat(100), "]".repeat(100));
    assert!(matches!(check(&text, &S), Err(Error::TooDeep { line: 3, .. })));
    assert_eq!(from_str::<Value>("", &S).unwrap(), Value::Null);
  }
}
