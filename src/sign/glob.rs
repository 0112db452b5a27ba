//! The include/exclude patterns of a manifest: small globs over `/`-separated relative paths.
//!
//! - `*` matches any run of characters within one path component, `?` one character;
//! - a component `**` matches any number of components (zero included);
//! - a pattern without `/` is matched against the last component only, at any depth
//!   (`*.tmp`, `node_modules`), as in `.gitignore`; a leading `./` anchors it at the root
//!   (`./manifest.json` is that one file only);
//! - no character classes, no negation; patterns may not be absolute or contain `..`.
//!
//! Kept in the manifest itself (and so covered by its signature), so that verification applies
//! exactly the patterns the manifest was made with.

use crate::error::{LoaError, Result};

/// Checks a pattern for use; the error names it.
pub fn validate(pattern: &str) -> Result<()> {
  let bad = |why: &str| Err(LoaError::InvalidArgument(format!("pattern {pattern:?} {why}")));
  if pattern.is_empty() || pattern.contains('\0') {
    return bad("is empty or contains NUL");
  }
  if pattern.starts_with('/') {
    return bad("is absolute (patterns are relative to the root)");
  }
  if pattern.split('/').any(|c| c == "..") {
    return bad("contains `..`");
  }
  if pattern.strip_prefix("./").unwrap_or(pattern).split('/').any(|c| c.is_empty() || c == ".") {
    return bad("has an empty component (`//` or a trailing `/`)");
  }
  Ok(())
}

/// True when `path` (relative, `/`-separated) matches `pattern`.
pub fn matches(pattern: &str, path: &str) -> bool {
  if let Some(anchored) = pattern.strip_prefix("./") {
    return components_match(&anchored.split('/').collect::<Vec<_>>(), &path.split('/').collect::<Vec<_>>());
  }
  if !pattern.contains('/') {
    let name = path.rsplit('/').next().unwrap_or(path);
    return component_matches(pattern.as_bytes(), name.as_bytes());
  }
  let pattern: Vec<&str> = pattern.split('/').collect();
  let path: Vec<&str> = path.split('/').collect();
  components_match(&pattern, &path)
}

fn components_match(pattern: &[&str], path: &[&str]) -> bool {
  match pattern.split_first() {
    None => path.is_empty(),
    Some((&"**", rest)) => (0..=path.len()).any(|skip| components_match(rest, &path[skip..])),
    Some((first, rest)) => match path.split_first() {
      Some((name, path_rest)) => {
        component_matches(first.as_bytes(), name.as_bytes()) && components_match(rest, path_rest)
      }
      None => false,
    },
  }
}

/// `*` / `?` matching within one component, by characters (not bytes), iterative with
/// backtracking to the last `*` (linear in practice, never exponential).
fn component_matches(pattern: &[u8], name: &[u8]) -> bool {
  let pattern: Vec<char> = String::from_utf8_lossy(pattern).chars().collect();
  let name: Vec<char> = String::from_utf8_lossy(name).chars().collect();
  let (mut p, mut n) = (0, 0);
  let mut star: Option<(usize, usize)> = None;
  while n < name.len() {
    if p < pattern.len() && (pattern[p] == '?' || pattern[p] == name[n]) {
      p += 1;
      n += 1;
    } else if p < pattern.len() && pattern[p] == '*' {
      star = Some((p, n));
      p += 1;
    } else if let Some((sp, sn)) = star {
      p = sp + 1;
      n = sn + 1;
      star = Some((sp, sn + 1));
    } else {
      return false;
    }
  }
  pattern[p..].iter().all(|&c| c == '*')
}

/// A file is covered when some include pattern matches and no exclude pattern does.
pub fn covered(include: &[String], exclude: &[String], path: &str) -> bool {
  include.iter().any(|p| matches(p, path)) && !exclude.iter().any(|p| matches(p, path))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn globs() {
    assert!(matches("**", "a/b/c"));
    assert!(matches("*.md", "deep/dir/NOTES.md"));
    assert!(!matches("*.md", "NOTES.mdx"));
    assert!(matches("cache/**", "cache/x/y"));
    assert!(!matches("cache/**", "other/cache/x"));
    assert!(matches("**/cache/*", "other/cache/x"));
    assert!(matches("a/*/c", "a/b/c"));
    assert!(!matches("a/*/c", "a/b/b/c"));
    assert!(matches("a/**/c", "a/c"));
    assert!(matches("f?le.json", "dir/file.json"));
    assert!(matches("*a*b*c*", "xxaxxbxxcxx"));
    assert!(!matches("*a*b*c*d", "xxaxxbxxcxx"));
    assert!(matches("é*", "éte"));
    assert!(matches("./manifest.json", "manifest.json"));
    assert!(!matches("./manifest.json", "sub/manifest.json"));
    assert!(matches("manifest.json", "sub/manifest.json"));
    for bad in ["", "/abs", "../x", "a/../b", "a//b", "a/", "./", "a/./b"] {
      assert_eq!(validate(bad).unwrap_err().code(), "E_INVALID_ARGUMENT", "{bad}");
    }
    let inc = vec!["**".to_string()];
    let exc = vec!["*.tmp".to_string(), "manifest.json".to_string()];
    assert!(covered(&inc, &exc, "NOTES.md"));
    assert!(!covered(&inc, &exc, "a/x.tmp"));
    assert!(!covered(&inc, &exc, "manifest.json"));
  }
}
