//! PII and secret redaction.
//!
//! Everything an agent says passes through [`redact`] before it is stored. The contract that the
//! memory pipeline relies on:
//! - `text` of the result contains no byte of any matched value; each finding is replaced by a
//!   placeholder (`[REDACTED:EMAIL]`, or `[EMAIL_3f2a9c1d]` when pseudonymizing);
//! - findings never carry the value or a prefix of it, only its kind, UTF-16 offsets into the
//!   input, the detection method and a keyed fingerprint;
//! - `blocked` says the whole text must not be stored (it contains a private key).
//!
//! How: an Aho-Corasick keyword pass decides which detectors run (`engine.rs`), the detectors
//! report byte spans (`pii.rs`, `secrets.rs`, the provider formats of `rules.rs`), overlapping
//! spans are merged into one before anything is replaced, and byte offsets are mapped to UTF-16
//! in one forward pass.

mod engine;
mod pii;
mod rules;
mod secrets;
mod text;

#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::sync::OnceLock;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use engine::{engine, Ctx, Hit};

/// Options of [`redact`].
#[derive(Debug, Clone, Default)]
pub struct RedactOptions {
  /// Exact values never redacted (e.g. a project's public contact address).
  pub allowlist: Vec<String>,
  /// Key of the fingerprint hash (HMAC-SHA256). `None`: a random key per process, so
  /// fingerprints only compare within one process.
  pub key: Option<Vec<u8>>,
  /// Replace each value by a stable pseudonym derived from `key` (`[EMAIL_3f2a9c1d]`) instead of
  /// `[REDACTED:EMAIL]`, so that "the same person as before" survives redaction.
  pub pseudonymize: bool,
}

/// One redacted span.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
  /// snake_case kind: `email`, `phone`, `credit_card`, `aws_access_key_id`, `private_key`, ...
  pub kind: String,
  /// UTF-16 code unit offsets into the input (what JavaScript string indices are).
  pub start: usize,
  pub end: usize,
  /// How it was found: `pattern`, `checksum`, `entropy`, `keyword`.
  pub method: String,
  /// Hex HMAC-SHA256 of the value under the options' key, truncated; never the value.
  pub fingerprint: String,
}

/// The result of [`redact`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Redaction {
  pub text: String,
  pub findings: Vec<Finding>,
  pub blocked: bool,
}

/// Every kind a finding can have.
pub const KINDS: &[&str] = &[
  "email", "phone", "credit_card", "iban", "us_ssn", "ipv4", "ipv6", "url_credentials", "jwt", "private_key",
  "password", "secret", "aws_secret_access_key", "high_entropy", "aws_access_key_id", "aws_bedrock_api_key",
  "github_token", "gitlab_token", "slack_token", "webhook_url", "stripe_key", "openai_api_key", "anthropic_api_key",
  "google_api_key", "google_oauth_secret", "google_oauth_token", "azure_client_secret", "npm_token", "pypi_token",
  "twilio_api_key", "sendgrid_api_key", "mailgun_api_key", "mailchimp_api_key", "sendinblue_api_key", "shopify_token",
  "square_token", "digitalocean_token", "databricks_token", "doppler_token", "dynatrace_token", "fly_io_token",
  "openshift_token", "planetscale_token", "scalingo_token", "heroku_api_key", "hashicorp_tf_token", "vault_token",
  "alibaba_access_key_id", "cloudflare_origin_ca_key", "bitbucket_token", "atlassian_token", "buildkite_token",
  "circleci_token", "docker_hub_token", "octopus_deploy_api_key", "pulumi_token", "sourcegraph_token", "sonar_token",
  "rubygems_token", "nuget_token", "clojars_token", "telegram_bot_token", "flutterwave_key", "shippo_token",
  "easypost_token", "duffel_token", "gocardless_token", "facebook_token", "huggingface_token", "perplexity_api_key",
  "groq_api_key", "replicate_token", "xai_api_key", "langsmith_api_key", "pinecone_api_key", "onepassword_token",
  "onepassword_secret_key", "adobe_client_secret", "age_secret_key", "artifactory_token", "authress_key",
  "clickhouse_api_key", "defined_networking_token", "frameio_token", "grafana_token", "harness_token",
  "infracost_token", "intra42_secret", "linear_api_key", "mapbox_token", "maxmind_license_key", "newrelic_key",
  "notion_token", "postman_token", "prefect_token", "readme_token", "sentry_token", "settlemint_token",
  "typeform_token", "yandex_api_key", "figma_token", "supabase_token", "tailscale_key", "firebase_fcm_key",
  "contentful_token", "netlify_token", "render_token", "airtable_token", "hubspot_token",
];

/// Hex characters of a fingerprint (64 bits): enough to tell "the same value again" apart,
/// short enough not to be a useful offline-guessing oracle for long secrets.
const FINGERPRINT_HEX: usize = 16;
/// Hex characters of a pseudonym (`[EMAIL_3f2a9c1d]`).
const PSEUDONYM_HEX: usize = 8;

type HmacSha256 = Hmac<Sha256>;

/// Texts at least this long are split at line boundaries and scanned on several threads.
const PARALLEL_MIN: usize = 512 * 1024;
/// Smallest piece a thread gets.
const PARALLEL_PIECE: usize = 256 * 1024;

/// Redacts `text`.
pub fn redact(text: &str, options: &RedactOptions) -> Redaction {
  let mut out = String::new();
  let (findings, blocked) = redact_into(text, options, &mut out);
  Redaction { text: out, findings, blocked }
}

/// [`redact`] writing the redacted text into `out` (cleared first), so that a caller redacting
/// large texts again and again can reuse one buffer. Returns the findings and `blocked`.
pub fn redact_into(text: &str, options: &RedactOptions, out: &mut String) -> (Vec<Finding>, bool) {
  let bytes = text.as_bytes();
  let (mut hits, blocked) = detect(bytes);
  if !options.allowlist.is_empty() {
    let allow: HashSet<&[u8]> = options.allowlist.iter().map(|s| s.as_bytes()).collect();
    hits.retain(|h| !allow.contains(&bytes[h.start..h.end]));
  }
  let spans = merge(hits, text);
  (render(text, &spans, options, out), blocked)
}

/// Redacts many texts with the same options (in input order); large batches are spread over
/// several threads.
pub fn redact_batch<S: AsRef<str> + Sync>(texts: &[S], options: &RedactOptions) -> Vec<Redaction> {
  let total: usize = texts.iter().map(|t| t.as_ref().len()).sum();
  let threads = if total >= PARALLEL_MIN && texts.len() > 1 {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(8).min(total / PARALLEL_PIECE).min(texts.len())
  } else {
    1
  };
  if threads <= 1 {
    return texts.iter().map(|t| redact(t.as_ref(), options)).collect();
  }
  // Contiguous groups of about equal size.
  let mut groups = Vec::with_capacity(threads);
  let (mut start, mut acc) = (0, 0);
  for (i, t) in texts.iter().enumerate() {
    acc += t.as_ref().len();
    if acc * threads >= total * (groups.len() + 1) && groups.len() + 1 < threads {
      groups.push(start..i + 1);
      start = i + 1;
    }
  }
  groups.push(start..texts.len());
  let group = move |g: std::ops::Range<usize>| texts[g].iter().map(|t| redact(t.as_ref(), options)).collect::<Vec<_>>();
  std::thread::scope(|scope| {
    let mut groups = groups.into_iter();
    let first = groups.next().unwrap_or(0..0);
    let workers: Vec<_> = groups.map(|g| scope.spawn(move || group(g))).collect();
    let mut out = group(first);
    for w in workers {
      out.extend(w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
    }
    out
  })
}

/// Runs the detectors: on one thread, or for large texts on several, each over a piece that
/// ends at a line boundary outside any multi-line construct (a private key block, a PuTTY key,
/// a backslash-continued command line). Every detector looks at one line at a time apart from
/// those, so the pieces find exactly what the whole text would.
fn detect(bytes: &[u8]) -> (Vec<Hit>, bool) {
  let threads = if bytes.len() >= PARALLEL_MIN {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(8).min(bytes.len() / PARALLEL_PIECE)
  } else {
    1
  };
  let cuts = if threads > 1 { split_points(bytes, threads) } else { vec![0, bytes.len()] };
  if cuts.len() <= 2 {
    let mut ctx = Ctx::new(bytes);
    engine().detect(&mut ctx);
    return (ctx.hits, ctx.blocked);
  }
  let piece = move |a: usize, b: usize| {
    let mut ctx = Ctx::new(&bytes[a..b]);
    engine().detect(&mut ctx);
    for h in &mut ctx.hits {
      h.start += a;
      h.end += a;
    }
    (ctx.hits, ctx.blocked)
  };
  std::thread::scope(|scope| {
    // The calling thread takes the first piece itself.
    let workers: Vec<_> = cuts.windows(2).skip(1).map(|w| scope.spawn(move || piece(w[0], w[1]))).collect();
    let (mut hits, mut blocked) = piece(cuts[0], cuts[1]);
    for w in workers {
      // A panic in a worker is re-raised here and caught by the binding's guard.
      let (h, b) = w.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
      hits.extend(h);
      blocked |= b;
    }
    (hits, blocked)
  })
}

/// Piece boundaries (`0 = c0 < c1 < ... = len`) near `len * k / parts`, each just after a
/// newline, not after a line ending in `\\`, and not inside a private key block.
fn split_points(t: &[u8], parts: usize) -> Vec<usize> {
  let mut cuts = vec![0];
  for k in 1..parts {
    let target = (t.len() * k / parts).max(*cuts.last().unwrap());
    let Some(mut cut) = next_line_start(t, target) else { break };
    for _ in 0..64 {
      let line_end = cut - 1; // the newline
      let continued = line_end > 0 && (t[line_end - 1] == b'\\' || (t[line_end - 1] == b'\r' && line_end > 1 && t[line_end - 2] == b'\\'));
      let inside = inside_block(t, cut);
      match inside {
        Some(end) => match next_line_start(t, end) {
          Some(c) => cut = c,
          None => return finish(cuts, t.len()),
        },
        None if continued => match next_line_start(t, cut) {
          Some(c) => cut = c,
          None => return finish(cuts, t.len()),
        },
        None => break,
      }
    }
    if cut > *cuts.last().unwrap() && cut < t.len() {
      cuts.push(cut);
    }
  }
  finish(cuts, t.len())
}

fn finish(mut cuts: Vec<usize>, len: usize) -> Vec<usize> {
  cuts.push(len);
  cuts
}

/// Start of the line after position `i` (just past the next newline).
fn next_line_start(t: &[u8], i: usize) -> Option<usize> {
  memchr::memchr(b'\n', &t[i.min(t.len())..]).map(|x| i + x + 1).filter(|&c| c < t.len())
}

/// If `cut` falls inside a `-----BEGIN ... -----END` block or a PuTTY key file, the position
/// of its end marker (the end of the text when it has none).
fn inside_block(t: &[u8], cut: usize) -> Option<usize> {
  let floor = cut.saturating_sub(1 << 20);
  let window = &t[floor..cut];
  let begin = [&b"-----BEGIN"[..], b"-----begin", b"PuTTY-User-Key-File"].iter().filter_map(|m| memchr::memmem::rfind(window, m)).max()?;
  let begin = floor + begin;
  let tail = &t[begin..];
  let end = [&b"-----END"[..], b"-----end", b"Private-MAC:"].iter().filter_map(|m| memchr::memmem::find(tail, m)).min();
  match end {
    Some(e) if begin + e < cut => None,
    Some(e) => Some(begin + e),
    None => Some(t.len()),
  }
}

/// Sorts and merges overlapping hits into disjoint spans; each merged span takes the kind and
/// method of its highest-priority hit (the longest, on a tie). Spans are widened to character
/// boundaries, never narrowed.
fn merge(mut hits: Vec<Hit>, text: &str) -> Vec<Hit> {
  hits.sort_unstable_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
  let mut out: Vec<Hit> = Vec::with_capacity(hits.len());
  for mut h in hits {
    while !text.is_char_boundary(h.start) {
      h.start -= 1;
    }
    while !text.is_char_boundary(h.end) {
      h.end += 1;
    }
    if let Some(last) = out.last_mut() {
      if h.start < last.end {
        let (lp, hp) = (last.prio, h.prio);
        let longer = h.end - h.start > last.end - last.start;
        if hp > lp || (hp == lp && longer) {
          last.kind = h.kind;
          last.method = h.method;
          last.prio = h.prio;
        }
        last.end = last.end.max(h.end);
        continue;
      }
    }
    out.push(h);
  }
  out
}

fn process_key() -> &'static [u8; 32] {
  static KEY: OnceLock<[u8; 32]> = OnceLock::new();
  KEY.get_or_init(|| {
    let mut key = [0u8; 32];
    let filled = std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut key));
    if filled.is_err() {
      // No /dev/urandom: derive from the std hasher's random seed and the clock.
      use std::hash::{BuildHasher, Hasher};
      for (i, chunk) in key.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
        chunk.copy_from_slice(&h.finish().to_le_bytes());
      }
    }
    key
  })
}

fn render(text: &str, spans: &[Hit], options: &RedactOptions, out: &mut String) -> Vec<Finding> {
  let bytes = text.as_bytes();
  let key: &[u8] = options.key.as_deref().unwrap_or(process_key());
  let mac = HmacSha256::new_from_slice(key).expect("HMAC accepts any key length");
  let ascii = bytes.is_ascii();
  out.clear();
  out.reserve(text.len());
  let mut findings = Vec::with_capacity(spans.len());
  let (mut byte_pos, mut u16_pos) = (0usize, 0usize);
  let mut utf16_at = |target: usize| -> usize {
    if !ascii {
      u16_pos += utf16_len(&bytes[byte_pos..target]);
    } else {
      u16_pos += target - byte_pos;
    }
    byte_pos = target;
    u16_pos
  };
  let mut copied = 0;
  for h in spans {
    let start16 = utf16_at(h.start);
    let end16 = utf16_at(h.end);
    let mut m = mac.clone();
    m.update(&bytes[h.start..h.end]);
    let digest = m.finalize().into_bytes();
    let fingerprint = hex::encode(&digest[..FINGERPRINT_HEX / 2]);
    out.push_str(&text[copied..h.start]);
    out.push('[');
    if options.pseudonymize {
      push_upper(out, h.kind);
      out.push('_');
      out.push_str(&fingerprint[..PSEUDONYM_HEX]);
    } else {
      out.push_str("REDACTED:");
      push_upper(out, h.kind);
    }
    out.push(']');
    copied = h.end;
    findings.push(Finding { kind: h.kind.to_string(), start: start16, end: end16, method: h.method.to_string(), fingerprint });
  }
  out.push_str(&text[copied..]);
  findings
}

fn push_upper(out: &mut String, kind: &str) {
  for c in kind.chars() {
    out.push(c.to_ascii_uppercase());
  }
}

/// UTF-16 code units of a UTF-8 byte string: one per character, two for characters outside the
/// BMP (4-byte sequences).
fn utf16_len(b: &[u8]) -> usize {
  b.iter().map(|&x| ((x & 0xC0) != 0x80) as usize + (x >= 0xF0) as usize).sum()
}

/// The provider token patterns (kind, regex source, case-insensitive), for the benchmark's
/// JavaScript `RegExp` baseline.
pub fn token_patterns() -> Vec<(&'static str, &'static str, bool)> {
  engine().patterns()
}
