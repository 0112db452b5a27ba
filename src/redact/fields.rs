//! Redaction of structured values: the one walk every write path of the crate uses for what a
//! caller gives it (a memory's metadata, a dead letter's entry, the ledger's texts, L1 state
//! data, synthesis events).
//!
//! What it guarantees, beyond [`redact`] on each text:
//! - **Every scalar is scanned, in the context of its key.** Strings as they are, numbers by
//!   their decimal text as JSON prints it (`4983536331454641`, `0.5`, `1e21`), each as it
//!   reads after its key (`phone: 14155550132`: a bare 11-digit number is not a phone number,
//!   one under `phone` is). A number whose text redacts is replaced by the redacted *string*
//!   (`"[REDACTED:CREDIT_CARD]"`): its type changes, because no number can stand for a
//!   placeholder. Booleans and `null` hold nothing to find.
//! - **Keys are redacted too**, and two keys that redact to the same text never collapse into
//!   one: a key that was not changed by redaction keeps its place, and a redacted key that
//!   meets a key already taken gets the first free suffix `~2`, `~3`, ... (`[REDACTED:EMAIL]`,
//!   `[REDACTED:EMAIL]~2`). Suffixes are counted per text, so the walk stays linear in the
//!   number of keys whatever the input.
//! - **Idempotent.** A placeholder (`[REDACTED:EMAIL]`, `[EMAIL_3f2a9c1d]`) survives a second
//!   pass unchanged, so text redacted once (by a plugin, by an earlier write) is stored as it
//!   was given.
//!
//! Findings name the field they came from (`metadata.customer.email`, `metadata.<key>`,
//! `decisions[0].rationale`) and never the value.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value};

use super::{redact, Finding, RedactOptions};

/// How much of a key (its last bytes) a value is scanned after: enough for the words that
/// tell what a value is (`phone`, `password`, `api_key`), and a bound that keeps the walk
/// linear however long the keys and however many items an array under one holds.
pub const KEY_CONTEXT_BYTES: usize = 64;

/// A finding and the field it was found in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldFinding {
  /// `content`, `tags[2]`, `metadata.customer.email`, `metadata.<key>`, ...
  pub field: String,
  pub finding: Finding,
}

/// Redacts the texts and values of one write, collecting what it found (see the module docs).
#[derive(Debug)]
pub struct FieldRedactor<'o> {
  options: &'o RedactOptions,
  /// Every finding, in the order the fields were visited.
  pub findings: Vec<FieldFinding>,
  /// Whether any text held something redaction policy refuses to store whole (a private key).
  /// The texts returned have it replaced by a placeholder either way.
  pub blocked: bool,
}

impl<'o> FieldRedactor<'o> {
  pub fn new(options: &'o RedactOptions) -> FieldRedactor<'o> {
    FieldRedactor { options, findings: Vec::new(), blocked: false }
  }

  /// `text` redacted; its findings recorded under `field`.
  pub fn text(&mut self, field: &str, text: &str) -> String {
    let r = redact(text, self.options);
    self.blocked |= r.blocked;
    self.findings.extend(r.findings.into_iter().map(|finding| FieldFinding { field: field.to_string(), finding }));
    r.text
  }

  /// `text` redacted in place.
  pub fn text_mut(&mut self, field: &str, text: &mut String) {
    *text = self.text(field, text);
  }

  /// An optional text redacted in place.
  pub fn opt_mut(&mut self, field: &str, text: &mut Option<String>) {
    if let Some(t) = text {
      self.text_mut(field, t);
    }
  }

  /// Each text of `list` redacted in place (fields `<field>[i]`).
  pub fn list_mut(&mut self, field: &str, list: &mut [String]) {
    for (i, t) in list.iter_mut().enumerate() {
      self.text_mut(&format!("{field}[{i}]"), t);
    }
  }

  /// `value` with every string and number redacted, keys included (see the module docs).
  pub fn value(&mut self, field: &str, value: &Value) -> Value {
    self.value_under(field, None, value)
  }

  /// [`value`](Self::value) for a value found under `key` (the items of an array are under
  /// the array's key).
  fn value_under(&mut self, field: &str, key: Option<&str>, value: &Value) -> Value {
    match value {
      Value::String(s) => Value::String(self.scalar(field, key, s)),
      Value::Number(n) => {
        let decimal = n.to_string();
        let redacted = self.scalar(field, key, &decimal);
        if redacted == decimal {
          value.clone()
        } else {
          Value::String(redacted)
        }
      }
      Value::Array(items) => Value::Array(
        items.iter().enumerate().map(|(i, v)| self.value_under(&format!("{field}[{i}]"), key, v)).collect(),
      ),
      Value::Object(map) => {
        let redacted = self.keys(field, map.iter().map(|(k, v)| (k.clone(), v)));
        let mut out = Map::new();
        for (key, v) in redacted {
          let v = self.value_under(&format!("{field}.{key}"), Some(&key), v);
          out.insert(key, v);
        }
        Value::Object(out)
      }
      Value::Bool(_) | Value::Null => value.clone(),
    }
  }

  /// A scalar's text redacted as it reads under its key (`phone: 14155550132`,
  /// `password: hunter2`): what a bare value does not say, its key does. The text is scanned
  /// after the key's last [`KEY_CONTEXT_BYTES`] bytes and `: `; when a finding reaches into
  /// that prefix (the key itself holds something), the text is redacted alone instead.
  /// Findings are offsets into the text.
  fn scalar(&mut self, field: &str, key: Option<&str>, text: &str) -> String {
    if let Some(key) = key {
      let mut from = key.len().saturating_sub(KEY_CONTEXT_BYTES);
      while !key.is_char_boundary(from) {
        from += 1;
      }
      let prefix = format!("{}: ", &key[from..]);
      let prefix_units = prefix.encode_utf16().count();
      let r = redact(&format!("{prefix}{text}"), self.options);
      if r.findings.iter().all(|f| f.start >= prefix_units) && r.text.starts_with(&prefix) {
        self.blocked |= r.blocked;
        self.findings.extend(r.findings.into_iter().map(|f| FieldFinding {
          field: field.to_string(),
          finding: Finding { start: f.start - prefix_units, end: f.end - prefix_units, ..f },
        }));
        return r.text[prefix.len()..].to_string();
      }
    }
    self.text(field, text)
  }

  /// A map whose keys are redacted without losing an entry (see the module docs). Keys that
  /// redaction leaves as they are come first and keep their text; redacted keys then take
  /// their text, or the first free `~<n>` suffix of it, in the order given. The values are not
  /// touched.
  pub fn keys<V>(&mut self, field: &str, entries: impl IntoIterator<Item = (String, V)>) -> BTreeMap<String, V> {
    let key_field = format!("{field}.<key>");
    let mut kept = BTreeMap::new();
    let mut changed = Vec::new();
    for (key, v) in entries {
      let clean = self.text(&key_field, &key);
      if clean == key {
        kept.insert(key, v);
      } else {
        changed.push((clean, v));
      }
    }
    let mut taken: HashSet<String> = kept.keys().cloned().collect();
    // The next suffix to try per redacted text: each try either succeeds or skips a key that
    // exists, so the tries in all are at most the keys plus the collisions.
    let mut next: HashMap<String, u64> = HashMap::new();
    for (clean, v) in changed {
      let key = if taken.contains(&clean) {
        let n = next.entry(clean.clone()).or_insert(2);
        loop {
          let candidate = format!("{clean}~{n}");
          *n += 1;
          if !taken.contains(&candidate) {
            break candidate;
          }
        }
      } else {
        clean
      };
      taken.insert(key.clone());
      kept.insert(key, v);
    }
    kept
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  fn opts() -> RedactOptions {
    RedactOptions::default()
  }

  #[test]
  fn numbers_are_scanned_by_their_decimal_text() {
    let o = opts();
    let mut r = FieldRedactor::new(&o);
    let v = r.value(
      "metadata",
      &json!({ "cardNumber": 4983536331454641u64, "phone": 14155550132u64, "count": 3, "ratio": 0.25, "ok": true }),
    );
    assert_eq!(v["cardNumber"], json!("[REDACTED:CREDIT_CARD]"));
    assert!(v["phone"].as_str().is_some_and(|s| s.starts_with("[REDACTED:")), "{v}");
    assert_eq!((&v["count"], &v["ratio"], &v["ok"]), (&json!(3), &json!(0.25), &json!(true)));
    let fields: Vec<&str> = r.findings.iter().map(|f| f.field.as_str()).collect();
    assert_eq!(fields, ["metadata.cardNumber", "metadata.phone"]);
    assert!(!format!("{:?}", r.findings).contains("4983536331454641"));
  }

  #[test]
  fn keys_that_redact_alike_keep_every_entry() {
    let o = opts();
    let mut r = FieldRedactor::new(&o);
    let v = r.value(
      "metadata",
      &json!({ "alice@example.com": 1, "bob@example.org": 2, "carol@example.net": 3, "[REDACTED:EMAIL]~2": 4 }),
    );
    let map = v.as_object().unwrap();
    assert_eq!(map.len(), 4, "{v}");
    let mut values: Vec<i64> = map.values().map(|x| x.as_i64().unwrap()).collect();
    values.sort();
    assert_eq!(values, [1, 2, 3, 4]);
    // The key that was already clean keeps its text and its value.
    assert_eq!(map["[REDACTED:EMAIL]~2"], json!(4));
    assert!(map.contains_key("[REDACTED:EMAIL]") && map.contains_key("[REDACTED:EMAIL]~3"), "{v}");
    assert!(map.contains_key("[REDACTED:EMAIL]~4"), "{v}");
  }

  #[test]
  fn many_colliding_keys_stay_linear() {
    let o = opts();
    let mut r = FieldRedactor::new(&o);
    let entries: Vec<(String, u32)> = (0..2000).map(|i| (format!("user{i}@example.com"), i)).collect();
    let out = r.keys("m", entries);
    assert_eq!(out.len(), 2000);
    assert!(out.contains_key("[REDACTED:EMAIL]~2000"));
  }

  /// The placeholders of a text, as a sorted list of their texts.
  fn placeholders(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> =
      super::super::placeholder::own_placeholders(text.as_bytes()).into_iter().map(|(a, b)| &text[a..b]).collect();
    out.sort_unstable();
    out
  }

  /// Every text of the labelled corpus (`testdata/corpus/`), redacted once, keeps every
  /// placeholder of the first pass through a second one, with `[REDACTED:...]` and with
  /// pseudonyms: what a plugin redacted is stored as it was given. (The second pass may find
  /// what the first did not, in a context the first pass's placeholder changed; the corpus has
  /// two such texts, a phone number after another one, and they are counted, not failed.)
  #[test]
  fn a_second_pass_over_the_corpus_keeps_every_placeholder() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/corpus");
    let options = [opts(), RedactOptions { pseudonymize: true, key: Some(b"corpus".to_vec()), ..opts() }];
    let (mut texts, mut placeholders_seen, mut found_more) = (0, 0, 0);
    let mut changed = Vec::new();
    for file in ["gitleaks_rule_samples.dev.jsonl", "presidio_recognizer_tests.jsonl"] {
      for line in std::fs::read_to_string(dir.join(file)).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let Some(text) = v["text"].as_str() else { continue };
        texts += 1;
        for o in &options {
          let once = redact(text, o).text;
          let twice = redact(&once, o).text;
          let (before, after) = (placeholders(&once), placeholders(&twice));
          placeholders_seen += before.len();
          let mut left = after.clone();
          let kept = before.iter().all(|p| left.iter().position(|q| q == p).map(|i| left.remove(i)).is_some());
          if !kept || twice.matches("[[").count() > once.matches("[[").count() {
            changed.push(format!("{file}: {once:?} -> {twice:?}"));
          } else if twice != once {
            found_more += 1;
          }
        }
      }
    }
    assert!(texts > 1000 && placeholders_seen > 1000, "{texts} texts, {placeholders_seen} placeholders");
    assert!(changed.is_empty(), "{} texts lose a placeholder on a second pass:\n{}", changed.len(), changed.join("\n"));
    assert!(found_more <= 4, "{found_more} texts gain a finding on a second pass");
  }

  #[test]
  fn a_second_pass_changes_nothing() {
    let once_options = [opts(), RedactOptions { pseudonymize: true, key: Some(b"k".to_vec()), ..opts() }];
    let token = crate::redact::tests::sample("github_token");
    let value = json!({
      "a@b.example.com": { "card": 4983536331454641u64, "note": format!("mail a@b.example.com token {token}") },
      "list": ["+44 20 7946 0958", 14155550132u64, "password = hunter2hunter2"],
    });
    for o in &once_options {
      let once = FieldRedactor::new(o).value("m", &value);
      let mut second = FieldRedactor::new(o);
      assert_eq!(second.value("m", &once), once, "{once}");
      assert!(second.findings.is_empty(), "{:?}", second.findings);
      // Placeholders of the other style survive too.
      let other = FieldRedactor::new(&opts()).value("m", &once);
      assert_eq!(other, once);
    }
  }
}
