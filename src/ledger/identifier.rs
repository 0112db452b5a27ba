//! Lightweight identifiers: `${PROJECT_ROOT}/src/auth/jwt.ts:45-67` instead of the 23 lines
//! themselves (seed 000 §4.4, JIT retrieval).
//!
//! An identifier names a path below the project root and a line or an inclusive line range.
//! [`Identifier::parse`] checks its shape; [`Identifier::resolve`] reads the lines. Nothing
//! that can leave the root is ever opened:
//!
//! - the path is relative to `${PROJECT_ROOT}` and made of plain components: `..` anywhere,
//!   a `\` or a NUL is `E_PATH_OUTSIDE_ROOT`;
//! - an absolute path is accepted only when it lies lexically inside the root (it is then
//!   rewritten relative to it), anything else absolute is `E_PATH_OUTSIDE_ROOT`;
//! - the file is reached from the root one directory at a time without following a symlink
//!   (`O_NOFOLLOW`): a symlinked directory or file on the way is `E_PATH_OUTSIDE_ROOT`, even if
//!   it points back inside, because what it points to can change between check and use;
//! - a FIFO, device or socket is `E_NOT_REGULAR_FILE`, never opened for reading.
//!
//! A relative identifier without the prefix (`src/a.ts:45`) is `E_INVALID_ARGUMENT`: the seed
//! lists it as invalid, since it means something different in each working directory. At most
//! [`MAX_LINES`] lines are resolved (a wider range is `E_TOO_LARGE`), and reading stops at the
//! range's last line and after [`MAX_RESOLVE_BYTES`] bytes.

use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::error::{invalid, LoaError, Result};
use crate::fsutil::{relative_components, OpenMode, StateDir};

/// The prefix every identifier starts with.
pub const PREFIX: &str = "${PROJECT_ROOT}/";
/// Most lines one identifier may name.
pub const MAX_LINES: u32 = 100;
/// Most bytes read from the file to resolve one identifier (lines before the range included).
pub const MAX_RESOLVE_BYTES: u64 = 4 * 1024 * 1024;
/// Longest identifier accepted, in bytes.
pub const MAX_IDENTIFIER_BYTES: usize = 4096;

/// A parsed identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identifier {
  /// Relative to the project root, `/`-separated, plain components.
  pub path: String,
  /// First line, 1-based.
  pub start: u32,
  /// Last line, inclusive (equal to `start` for a single line).
  pub end: u32,
}

impl fmt::Display for Identifier {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    if self.start == self.end {
      write!(f, "{PREFIX}{}:{}", self.path, self.start)
    } else {
      write!(f, "{PREFIX}{}:{}-{}", self.path, self.start, self.end)
    }
  }
}

/// The lines an identifier names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
  pub identifier: Identifier,
  /// The lines, without their line ends. Fewer than asked when the file ends first.
  pub lines: Vec<String>,
}

fn outside(reason: &str) -> LoaError {
  LoaError::PathOutsideRoot(format!("identifier {reason}"))
}

fn line_number(text: &str) -> Result<u32> {
  if text.is_empty() || text.len() > 9 || !text.bytes().all(|b| b.is_ascii_digit()) {
    return invalid("an identifier's line must be a number from 1 (`path:45` or `path:45-67`)");
  }
  match text.parse::<u32>() {
    Ok(n) if n >= 1 => Ok(n),
    _ => invalid("an identifier's line must be a number from 1 (`path:45` or `path:45-67`)"),
  }
}

impl Identifier {
  /// Parses `${PROJECT_ROOT}/path:45` or `${PROJECT_ROOT}/path:45-67`; `root` is used only to
  /// accept an absolute path that lies inside it. Errors never quote the input.
  pub fn parse(text: &str, root: &Path) -> Result<Identifier> {
    let text = text.trim();
    if text.len() > MAX_IDENTIFIER_BYTES {
      return Err(LoaError::TooLarge {
        what: "identifier".into(),
        size: text.len() as u64,
        limit: MAX_IDENTIFIER_BYTES as u64,
      });
    }
    let Some((path, lines)) = text.rsplit_once(':') else {
      return invalid("an identifier is `${PROJECT_ROOT}/path:line` or `${PROJECT_ROOT}/path:start-end`");
    };
    let (start, end) = match lines.split_once('-') {
      Some((a, b)) => (line_number(a)?, line_number(b)?),
      None => {
        let n = line_number(lines)?;
        (n, n)
      }
    };
    if end < start {
      return invalid("an identifier's range must not end before it starts");
    }
    if end - start >= MAX_LINES {
      return Err(LoaError::TooLarge {
        what: "identifier line range".into(),
        size: u64::from(end - start) + 1,
        limit: u64::from(MAX_LINES),
      });
    }
    let relative = if let Some(rest) = path.strip_prefix(PREFIX) {
      rest.to_string()
    } else if path.starts_with('/') {
      let root = normalize(root);
      match Path::new(path).strip_prefix(&root) {
        Ok(rest) if !root.as_os_str().is_empty() => rest.to_string_lossy().into_owned(),
        _ => return Err(outside("is an absolute path outside the project root")),
      }
    } else if path.starts_with("${") {
      return invalid("an identifier must start with `${PROJECT_ROOT}/`");
    } else {
      return invalid("an identifier must start with `${PROJECT_ROOT}/` (relative paths are ambiguous)");
    };
    if relative.contains('\\') || relative.contains('\0') {
      return Err(outside("contains `\\` or NUL"));
    }
    if relative.split('/').any(|c| c == "..") || relative.starts_with('/') {
      return Err(outside("contains `..` or a second root"));
    }
    let parts = relative_components(Path::new(&relative))?;
    let path = parts.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>().join("/");
    Ok(Identifier { path, start, end })
  }

  /// Reads the lines below `root` (see the module docs for what is refused).
  pub fn resolve(&self, root: &Path) -> Result<Resolved> {
    let root_dir = StateDir::open_root(root)?;
    let parts = relative_components(Path::new(&self.path))?;
    let (name, dirs) = parts.split_last().expect("relative_components is never empty");
    let mut dir = root_dir;
    for part in dirs {
      dir = dir.subdir(part)?.ok_or_else(|| {
        LoaError::io("open directory", &PathBuf::from(&self.path), std::io::ErrorKind::NotFound.into())
      })?;
    }
    if dir.kind_of(name)? == Some(rustix::fs::FileType::Symlink) {
      return Err(outside("names a symlink"));
    }
    let file = dir.open_file(name, OpenMode::READ)?;
    let mut reader = BufReader::new(file.file()).take(MAX_RESOLVE_BYTES + 1);
    let mut lines = Vec::new();
    let mut buf = Vec::new();
    let mut number = 0u32;
    let mut read = 0u64;
    while number < self.end {
      buf.clear();
      let n = reader.read_until(b'\n', &mut buf).map_err(|e| LoaError::io("read", file.path(), e))?;
      if n == 0 {
        break;
      }
      read += n as u64;
      if read > MAX_RESOLVE_BYTES {
        return Err(LoaError::TooLarge {
          what: "the lines before an identifier's end".into(),
          size: read,
          limit: MAX_RESOLVE_BYTES,
        });
      }
      number += 1;
      if number >= self.start {
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        lines.push(String::from_utf8_lossy(line).into_owned());
      }
    }
    if number < self.start {
      return invalid(format!("the identifier starts at line {} but the file has {number} lines", self.start));
    }
    Ok(Resolved { identifier: self.clone(), lines })
  }
}

/// `root` without `.` components and trailing separators (lexical; `..` is left, and then
/// nothing matches it).
fn normalize(root: &Path) -> PathBuf {
  root.components().filter(|c| !matches!(c, std::path::Component::CurDir)).collect()
}

#[cfg(test)]
mod tests {
  use super::*;
  use std::os::unix::fs::symlink;

  fn root() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("src/auth")).unwrap();
    let body: String = (1..=200).map(|i| format!("line {i}\n")).collect();
    std::fs::write(tmp.path().join("src/auth/jwt.ts"), body).unwrap();
    tmp
  }

  #[test]
  fn parses_resolves_and_prints() {
    let tmp = root();
    let id = Identifier::parse("${PROJECT_ROOT}/src/auth/jwt.ts:45-67", tmp.path()).unwrap();
    assert_eq!(id, Identifier { path: "src/auth/jwt.ts".into(), start: 45, end: 67 });
    assert_eq!(id.to_string(), "${PROJECT_ROOT}/src/auth/jwt.ts:45-67");
    let r = id.resolve(tmp.path()).unwrap();
    assert_eq!(r.lines.len(), 23);
    assert_eq!(r.lines[0], "line 45");
    assert_eq!(r.lines[22], "line 67");
    let one = Identifier::parse("${PROJECT_ROOT}/./src/auth/jwt.ts:200", tmp.path()).unwrap();
    assert_eq!(one.to_string(), "${PROJECT_ROOT}/src/auth/jwt.ts:200");
    assert_eq!(one.resolve(tmp.path()).unwrap().lines, vec!["line 200"]);
    // Past the end: fewer lines, or an error when it starts past it.
    let tail = Identifier::parse("${PROJECT_ROOT}/src/auth/jwt.ts:190-250", tmp.path()).unwrap();
    assert_eq!(tail.resolve(tmp.path()).unwrap().lines.len(), 11);
    let past = Identifier::parse("${PROJECT_ROOT}/src/auth/jwt.ts:201", tmp.path()).unwrap();
    assert_eq!(past.resolve(tmp.path()).unwrap_err().code(), "E_INVALID_ARGUMENT");
    // An absolute path inside the root is accepted and rewritten.
    let abs = format!("{}/src/auth/jwt.ts:1-2", tmp.path().display());
    assert_eq!(Identifier::parse(&abs, tmp.path()).unwrap().path, "src/auth/jwt.ts");
  }

  #[test]
  fn escapes_are_refused_with_a_code() {
    let tmp = root();
    let outside_dir = tempfile::tempdir().unwrap();
    std::fs::write(outside_dir.path().join("secret"), "s3cret\n").unwrap();
    symlink(outside_dir.path().join("secret"), tmp.path().join("link")).unwrap();
    symlink(outside_dir.path(), tmp.path().join("linkdir")).unwrap();
    symlink(tmp.path().join("src"), tmp.path().join("inside-link")).unwrap();
    for bad in [
      "${PROJECT_ROOT}/../etc/passwd:1",
      "${PROJECT_ROOT}/src/../../etc/passwd:1",
      "${PROJECT_ROOT}//etc/passwd:1",
      "${PROJECT_ROOT}/src\\..\\x:1",
      "/etc/passwd:1",
      "${PROJECT_ROOT}/a\0b:1",
    ] {
      let err = Identifier::parse(bad, tmp.path()).unwrap_err();
      assert_eq!(err.code(), "E_PATH_OUTSIDE_ROOT", "{bad:?}: {err}");
      assert!(!err.to_string().contains("passwd"), "{err}");
    }
    for through in
      ["${PROJECT_ROOT}/link:1", "${PROJECT_ROOT}/linkdir/secret:1", "${PROJECT_ROOT}/inside-link/auth/jwt.ts:1"]
    {
      let id = Identifier::parse(through, tmp.path()).unwrap();
      assert_eq!(id.resolve(tmp.path()).unwrap_err().code(), "E_PATH_OUTSIDE_ROOT", "{through}");
    }
    for bad in [
      "src/auth/jwt.ts:45",
      "./src/a.ts:4",
      "${HOME}/x:1",
      "${PROJECT_ROOT}/x",
      "${PROJECT_ROOT}/x:0",
      "${PROJECT_ROOT}/x:5-4",
      "${PROJECT_ROOT}/x:a-b",
    ] {
      assert_eq!(Identifier::parse(bad, tmp.path()).unwrap_err().code(), "E_INVALID_ARGUMENT", "{bad:?}");
    }
    assert_eq!(Identifier::parse("${PROJECT_ROOT}/x:1-101", tmp.path()).unwrap_err().code(), "E_TOO_LARGE");
    assert!(Identifier::parse("${PROJECT_ROOT}/x:1-100", tmp.path()).is_ok());
  }

  #[test]
  fn non_regular_files_are_refused() {
    let tmp = root();
    rustix::fs::mknodat(
      rustix::fs::CWD,
      tmp.path().join("fifo"),
      rustix::fs::FileType::Fifo,
      rustix::fs::Mode::from_raw_mode(0o600),
      0,
    )
    .unwrap();
    let id = Identifier::parse("${PROJECT_ROOT}/fifo:1", tmp.path()).unwrap();
    assert_eq!(id.resolve(tmp.path()).unwrap_err().code(), "E_NOT_REGULAR_FILE");
  }
}
