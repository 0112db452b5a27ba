//! Mirrors: the local sessions pull writes for other origins (`<origin>.<session>`,
//! [`mirror_session`]). Their records are in the bucket already, under their own origin, so push
//! never ships them under this one; a machine that did (every push before this rule) fed the
//! others copies of copies (`alpha.beta.cli`, `beta.alpha.beta.cli`, ...) without end.
//!
//! **Push** knows a mirror by pull's record of what it fetched (`.loa/replicate/pulled.json`):
//! a local session is a mirror when pull wrote it for another origin, that is when it equals
//! `mirror_session(origin, session)` for a `<origin>/<session>/<first seq>` the record holds,
//! `origin` a plain origin name other than this one. A session whose id merely holds a dot (or
//! even looks like `<origin>.<name>`) but that pull never wrote is this machine's own and is
//! shipped. When the record exists but cannot be read (pull moves it aside and rebuilds it),
//! push cannot tell: it holds back, neither shipping nor marking for retention, every session
//! named like a mirror of an origin in the bucket ([`named_origin`]), lists that as a problem,
//! and ships them once a pull has rebuilt the record. A missing record means pull never wrote a
//! mirror here.
//!
//! **Pull** reads other machines' indexes, which older pushes filled with their mirrors: an
//! entry of origin X's index whose session is named `<o>.<name>`, `o` an origin of the bucket
//! (or this one) other than X, is taken for a mirror ([`mirror_by_name`]) and skipped, since `o`
//! ships the original itself. The same rule keeps pull from restoring such a session from this
//! origin's own index (a deleted workspace): a copy there came from another origin, which pull
//! mirrors directly, and restoring it as a plain session would have push ship it again. Local
//! session ids `<origin>.<name>` naming an origin of the bucket are therefore reserved for
//! mirrors (docs/replication.md).

use std::collections::{BTreeMap, BTreeSet};

use loa_core::wal::reader::validate_session_id;

use crate::segments::mirror_session;
use crate::settings::valid_origin;

/// The origin a session id names as a mirror's: the part before its first `.`, when that is a
/// plain origin name and something follows the dot.
pub(crate) fn named_origin(session: &str) -> Option<&str> {
  let (origin, rest) = session.split_once('.')?;
  (!rest.is_empty() && valid_origin(origin)).then_some(origin)
}

/// Whether `session`, listed in `index_origin`'s index, is by its name a mirror of another
/// origin: one of `known` (the origins in the bucket) or `own`, never `index_origin` itself (an
/// origin never mirrors its own sessions).
pub(crate) fn mirror_by_name(session: &str, index_origin: &str, known: &BTreeSet<String>, own: &str) -> bool {
  named_origin(session).is_some_and(|o| o != index_origin && (o == own || known.contains(o)))
}

/// The local session ids pull wrote as mirrors, each with the origin and session it mirrors,
/// from the keys of its record (`<origin>/<session>/<first seq>`): keys that do not parse, name
/// this origin or hold an invalid session id are ignored (the record is a local file, and
/// nothing else trusts it).
pub(crate) fn recorded_mirrors<'a>(
  keys: impl IntoIterator<Item = &'a String>,
  own: &str,
) -> BTreeMap<String, (String, String)> {
  let mut out = BTreeMap::new();
  for key in keys {
    let Some((origin, rest)) = key.split_once('/') else { continue };
    let Some((session, first)) = rest.rsplit_once('/') else { continue };
    if origin == own
      || !valid_origin(origin)
      || validate_session_id(session).is_err()
      || first.is_empty()
      || !first.bytes().all(|b| b.is_ascii_digit())
    {
      continue;
    }
    out.insert(mirror_session(origin, session), (origin.to_string(), session.to_string()));
  }
  out
}

/// What push and status know of this workspace's mirrors.
#[derive(Debug, Default)]
pub(crate) struct Mirrors {
  /// The sessions pull wrote for other origins: local id -> (origin, session there).
  recorded: BTreeMap<String, (String, String)>,
  /// Set when pull's record could not be read: the bucket's origins, whose name-shaped
  /// sessions are held back.
  unknown: Option<BTreeSet<String>>,
}

impl Mirrors {
  pub(crate) fn recorded(recorded: BTreeMap<String, (String, String)>) -> Self {
    Mirrors { recorded, unknown: None }
  }

  /// Pull's record could not be read; `origins` are the origins in the bucket.
  pub(crate) fn unknown(origins: BTreeSet<String>) -> Self {
    Mirrors { recorded: BTreeMap::new(), unknown: Some(origins) }
  }

  /// `session` is a mirror pull wrote: not shipped, and removed from this origin's index.
  pub(crate) fn is_mirror(&self, session: &str) -> bool {
    self.recorded.contains_key(session)
  }

  /// The origin and session a mirror pull wrote mirrors (`None` for any other session).
  pub(crate) fn source(&self, session: &str) -> Option<(&str, &str)> {
    self.recorded.get(session).map(|(o, s)| (o.as_str(), s.as_str()))
  }

  /// `session` may be a mirror, but pull's record that would tell is unreadable: neither
  /// shipped nor marked until a pull rebuilds it.
  pub(crate) fn held_back(&self, session: &str, own: &str) -> bool {
    self.unknown.as_ref().is_some_and(|known| named_origin(session).is_some_and(|o| o != own && known.contains(o)))
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
  }

  #[test]
  fn named_origins_are_plain_origin_names_before_the_first_dot() {
    assert_eq!(named_origin("beta.cli"), Some("beta"));
    assert_eq!(named_origin("beta.alpha.cli"), Some("beta"));
    assert_eq!(named_origin("m0123abcd.release.v2"), Some("m0123abcd"));
    for plain in
      ["cli", "..", ".", "beta.", ".beta", "Beta.cli", "a_b.cli", "-a.cli", "", &format!("{}.x", "a".repeat(65))]
    {
      assert_eq!(named_origin(plain), None, "{plain}");
    }
  }

  #[test]
  fn pull_takes_for_mirrors_only_sessions_named_after_another_origin_of_the_bucket() {
    let known = set(&["alpha", "beta"]);
    // In alpha's index: beta's and this machine's (gamma's) copies, nested ones too.
    for mirror in ["beta.cli", "beta.alpha.cli", "gamma.cli", &format!("beta.{}", "f".repeat(40))] {
      assert!(mirror_by_name(mirror, "alpha", &known, "gamma"), "{mirror}");
    }
    // Plain ids with dots, an origin's own name, names of no origin in the bucket.
    for own in ["cli", "release.v2", "alpha.notes", "delta.cli", "..", "Beta.cli", &"b.".repeat(64)] {
      assert!(!mirror_by_name(own, "alpha", &known, "gamma"), "{own}");
    }
  }

  #[test]
  fn push_knows_mirrors_from_pulls_record_only() {
    let long = "s".repeat(128);
    let keys: Vec<String> = [
      "beta/cli/1".to_string(),
      "beta/release.v2/00000000000000000007".to_string(),
      format!("beta/{long}/1"),
      // Hostile or foreign keys: ignored.
      "alpha/cli/1".to_string(), // this origin
      "beta/../1".to_string(),
      "beta/.hidden/1".to_string(),
      "Beta/cli/1".to_string(),
      "beta/cli/x1".to_string(),
      "beta/cli/".to_string(),
      "beta//1".to_string(),
      "beta/cli".to_string(),
      "nokey".to_string(),
      format!("beta/{}/1", "s".repeat(129)),
    ]
    .into();
    let recorded = recorded_mirrors(&keys, "alpha");
    let long_mirror = mirror_session("beta", &long);
    assert!(long_mirror.len() <= loa_core::wal::format::MAX_SESSION_ID_BYTES);
    assert_eq!(recorded.keys().cloned().collect::<BTreeSet<_>>(), set(&["beta.cli", "beta.release.v2", &long_mirror]));

    let mirrors = Mirrors::recorded(recorded);
    assert!(mirrors.is_mirror("beta.cli"));
    assert_eq!(mirrors.source("beta.release.v2"), Some(("beta", "release.v2")));
    assert_eq!(mirrors.source(&long_mirror), Some(("beta", long.as_str())));
    assert_eq!(mirrors.source("cli"), None);
    // A plain session with a dot, even one shaped like a mirror, is this machine's own.
    for own in ["cli", "release.v2", "beta.notes", "alpha.cli", "beta.alpha.cli"] {
      assert!(!mirrors.is_mirror(own), "{own}");
      assert!(!mirrors.held_back(own, "alpha"), "{own}");
    }
  }

  #[test]
  fn an_unreadable_record_holds_back_only_sessions_named_after_another_origin_of_the_bucket() {
    let mirrors = Mirrors::unknown(set(&["alpha", "beta"]));
    assert!(mirrors.held_back("beta.cli", "alpha"));
    for own in ["cli", "release.v2", "alpha.cli", "delta.cli", ".."] {
      assert!(!mirrors.held_back(own, "alpha"), "{own}");
    }
    assert!(!mirrors.is_mirror("beta.cli"));
  }
}
