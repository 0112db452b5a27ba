//! `loa-replicate`: ships a workspace's WAL segments, sealed grimoire and ledger events to
//! S3-compatible object storage and fetches them back (docs/replication.md). `loa replicate`
//! runs it; it is a separate binary so that its HTTP/TLS stack never reaches the Node addon.
//!
//! Usage: `loa-replicate push|pull|status [--workspace DIR] [--json] [--origin NAME]
//! [--until-seq N] [--trust KEY]... [--progress]`; `loa-replicate stage --workspace DIR --out DIR [--max-files N]
//! [--max-file-bytes N]` is recovery's object store source (`src/recovery`). Exit status: 0 done, 1 done with problems (listed), 2 failure
//! (one line on stderr, `loa: E_CODE: message`). Pull reads the audit log's HMAC key, when the
//! workspace's audit log is keyed, from the environment (`LOA_AUDIT_HMAC_KEY`, hex), never from
//! the command line, which other users of the machine can read. Pull's `--trust` (repeatable)
//! is a public key (64 hex digits) the sealed grimoire must be signed with to be restored: not
//! secret, and never read from the bucket or the workspace, which whoever forged a grimoire
//! could write too.

mod crypt;
mod index;
mod local;
mod ops;
mod remote;
mod segments;
mod settings;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use loa_core::sign::manifest::TrustedKey;
use loa_core::{LoaError, Result};
use serde::Serialize;

const USAGE: &str = "usage: loa-replicate push|pull|status [--workspace DIR] [--json] [--origin NAME] [--until-seq N] [--trust KEY]... [--progress]";

/// The parsed command line.
#[derive(Debug, Default)]
struct Args {
  command: String,
  workspace: Option<PathBuf>,
  json: bool,
  origin: Option<String>,
  until_seq: Option<u64>,
  /// Pull: the public keys this origin's sealed grimoire must be signed with to be restored.
  trust: Vec<TrustedKey>,
  progress: bool,
  /// `stage` (recovery's object store source): the directory to fill, and its limits.
  out: Option<PathBuf>,
  max_files: Option<u64>,
  max_file_bytes: Option<u64>,
}

fn usage(reason: &str) -> LoaError {
  LoaError::InvalidArgument(format!("{reason}\n{USAGE}"))
}

fn parse_args(mut argv: impl Iterator<Item = String>) -> Result<Args> {
  let mut args = Args::default();
  while let Some(arg) = argv.next() {
    let mut value = |flag: &str| argv.next().ok_or_else(|| usage(&format!("{flag} needs a value")));
    match arg.as_str() {
      "--workspace" => args.workspace = Some(PathBuf::from(value("--workspace")?)),
      "--origin" => args.origin = Some(value("--origin")?),
      "--until-seq" => {
        let text = value("--until-seq")?;
        args.until_seq = Some(text.parse().map_err(|_| usage("--until-seq must be a whole number"))?);
      }
      "--trust" => args.trust.push(
        TrustedKey::from_hex(&value("--trust")?).map_err(|_| usage("--trust must be a public key (64 hex digits)"))?,
      ),
      "--out" => args.out = Some(PathBuf::from(value("--out")?)),
      "--max-files" => {
        args.max_files = Some(value("--max-files")?.parse().map_err(|_| usage("--max-files must be a whole number"))?)
      }
      "--max-file-bytes" => {
        args.max_file_bytes =
          Some(value("--max-file-bytes")?.parse().map_err(|_| usage("--max-file-bytes must be a whole number"))?)
      }
      "--json" => args.json = true,
      "--progress" => args.progress = true,
      "push" | "pull" | "status" | "stage" if args.command.is_empty() => args.command = arg,
      _ => return Err(usage("unknown argument")),
    }
  }
  if args.command.is_empty() {
    return Err(usage("no command"));
  }
  if args.until_seq.is_some() && args.command != "pull" {
    return Err(usage("--until-seq applies to pull only"));
  }
  if !args.trust.is_empty() && args.command != "pull" {
    return Err(usage("--trust applies to pull only"));
  }
  if (args.command == "stage") != args.out.is_some() {
    return Err(usage("stage needs --out, and --out applies to stage only"));
  }
  Ok(args)
}

fn print<T: Serialize>(json: bool, report: &T, text: impl FnOnce(&T) -> String) {
  let out = if json { serde_json::to_string_pretty(report).expect("reports serialise") } else { text(report) };
  let _ = writeln!(std::io::stdout(), "{}", out.trim_end());
}

/// The environment variable holding the audit log's HMAC key (hex) for pull.
const AUDIT_KEY_VAR: &str = "LOA_AUDIT_HMAC_KEY";

/// The audit log's HMAC key from [`AUDIT_KEY_VAR`]; `None` when unset or empty. Its value is
/// never part of an error.
fn audit_key_from_env() -> Result<Option<zeroize::Zeroizing<Vec<u8>>>> {
  let Some(value) = std::env::var_os(AUDIT_KEY_VAR) else { return Ok(None) };
  let value = zeroize::Zeroizing::new(value.into_encoded_bytes());
  let text = std::str::from_utf8(&value).map(str::trim).unwrap_or("\u{0}");
  if text.is_empty() {
    return Ok(None);
  }
  let key = zeroize::Zeroizing::new(
    hex::decode(text).map_err(|_| LoaError::InvalidArgument(format!("{AUDIT_KEY_VAR} must be hex")))?,
  );
  loa_core::audit::check_hmac_key(Some(&key)).map_err(|_| {
    LoaError::InvalidArgument(format!(
      "{AUDIT_KEY_VAR} must hold at least {} bytes",
      loa_core::audit::MIN_HMAC_KEY_BYTES
    ))
  })?;
  Ok(Some(key))
}

fn problems_text(problems: &[String]) -> String {
  problems.iter().map(|p| format!("\nproblem: {p}")).collect()
}

fn run(mut args: Args) -> Result<i32> {
  let workspace = args.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
  let settings = settings::Settings::load(&workspace, args.origin.as_deref())?;
  let root = loa_core::fsutil::StateDir::open_root(&workspace)?;
  let remote = remote::Remote::open(&settings)?;
  let progress = ops::Progress { enabled: args.progress || (std::io::stderr().is_terminal() && !args.json) };
  let cx = ops::Context { settings, remote, root, workspace, progress };
  let runtime = tokio::runtime::Builder::new_current_thread()
    .enable_all()
    .build()
    .map_err(|e| LoaError::Internal(format!("no async runtime: {e}")))?;
  let problems = match args.command.as_str() {
    "push" => {
      let r = runtime.block_on(ops::push(&cx))?;
      print(args.json, &r, |r| {
        format!(
          "pushed as origin {}: {} segment(s) uploaded ({} bytes), {} already shipped; {} shipped segment(s) no longer here rewritten ({} record(s) of forgotten memories replaced); grimoire {}; checkpoint {}; {} event(s) uploaded, {} already shipped; {} mirror segment(s) an older push shipped removed from the index; {} old object(s) deleted{}",
          r.origin, r.segments_uploaded, r.bytes_uploaded, r.segments_skipped, r.segments_rewritten, r.records_forgotten, r.grimoire, r.checkpoint, r.events_uploaded, r.events_skipped, r.mirror_entries_removed, r.objects_deleted, problems_text(&r.problems)
        )
      });
      r.problems.len()
    }
    "pull" => {
      let options = ops::PullOptions {
        until_seq: args.until_seq,
        audit_hmac_key: audit_key_from_env()?,
        trusted_keys: std::mem::take(&mut args.trust),
      };
      let r = runtime.block_on(ops::pull(&cx, &options))?;
      print(args.json, &r, |r| {
        format!(
          "pulled as origin {} from {} origin(s): {} segment(s) restored, {} mirrored, {} already here, {} copied mirror(s) left to their origin; {} record(s) dropped by --until-seq; {} memor(ies) forgotten as another origin forgot them, {} as another origin asked; grimoire {}; checkpoint {}; {} event(s) written, {} already here{}",
          r.origin, r.origins.len(), r.segments_restored, r.segments_mirrored, r.segments_skipped, r.mirrors_skipped, r.records_dropped, r.memories_forgotten, r.forget_requests_applied, r.grimoire, r.checkpoint, r.events_written, r.events_skipped, problems_text(&r.problems)
        )
      });
      r.problems.len()
    }
    "stage" => {
      let out = args.out.as_deref().expect("checked");
      let limits = ops::StageLimits {
        max_files: args.max_files.unwrap_or(100_000),
        max_file_bytes: args.max_file_bytes.unwrap_or(64 << 20),
      };
      let files = runtime.block_on(ops::stage(&cx, out, limits))?;
      print(args.json, &serde_json::json!({ "staged": files }), |_| format!("staged {files} file(s)"));
      0
    }
    _ => {
      let r = runtime.block_on(ops::status(&cx))?;
      print(args.json, &r, |r| {
        let mut out = format!("origin {} in bucket {} (prefix {:?})\n", r.origin, r.bucket, r.prefix);
        for s in &r.sessions {
          let fmt = |v: Option<u64>| v.map_or("-".to_string(), |n| n.to_string());
          out += &format!(
            "  session {}: {} segment(s), last seq {}, shipped up to {}\n",
            s.session,
            s.segments,
            fmt(s.last_seq),
            fmt(s.shipped_seq)
          );
        }
        out += &format!(
          "  {} mirrored session(s), not pushed; {} segment(s) to push; grimoire {}; {} event(s), {} to push\n",
          r.mirrors, r.segments_pending, r.grimoire, r.events_local, r.events_pending
        );
        for o in &r.origins {
          out += &format!(
            "  origin {}: {} segment(s) in {} session(s), grimoire {}, checkpoint {}, {} event(s)\n",
            o.origin,
            o.segments,
            o.sessions,
            if o.grimoire { "yes" } else { "no" },
            if o.checkpoint { "yes" } else { "no" },
            o.events
          );
        }
        out + &problems_text(&r.problems)
      });
      r.problems.len()
    }
  };
  Ok(if problems == 0 { 0 } else { 1 })
}

fn main() {
  let status = match parse_args(std::env::args().skip(1)).and_then(run) {
    Ok(status) => status,
    Err(e) => {
      let message = e.to_string().replace('\n', " ");
      let _ = writeln!(std::io::stderr(), "loa: {}: {message}", e.code());
      2
    }
  };
  std::process::exit(status);
}

#[cfg(test)]
mod tests {
  use super::*;

  fn parse(args: &[&str]) -> Result<Args> {
    parse_args(args.iter().map(|a| a.to_string()))
  }

  #[test]
  fn trust_is_pull_only_and_a_public_key() {
    let key = "ab".repeat(32);
    let args = parse(&["pull", "--trust", &key, "--trust", &"cd".repeat(32)]).unwrap();
    assert_eq!(args.trust.len(), 2);
    assert_eq!(args.trust[0].public_key, [0xab; 32]);
    for bad in [vec!["pull", "--trust", "abc"], vec!["pull", "--trust"], vec!["push", "--trust", key.as_str()]] {
      let e = parse(&bad).unwrap_err();
      assert_eq!(e.code(), "E_INVALID_ARGUMENT", "{bad:?}");
      assert!(e.to_string().contains("--trust"), "{bad:?}: {e}");
    }
  }
}
