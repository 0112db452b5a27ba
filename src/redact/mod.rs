//! PII and secret redaction.
//!
//! Everything an agent says passes through [`redact`] before it is stored. The contract that the
//! memory pipeline relies on:
//! - `text` of the result contains no byte of any matched value; each finding is replaced by a
//!   placeholder (`[REDACTED:EMAIL]`, or `[EMAIL_3f2a9c1d]` when pseudonymizing);
//! - findings never carry the value or a prefix of it, only its kind, UTF-16 offsets into the
//!   input, the detection method and a keyed fingerprint;
//! - `blocked` says the whole text must not be stored (it contains a private key);
//! - it returns, for every input, in time linear in the length of the input: every scanning loop
//!   advances strictly and cannot read past the text (`text.rs`), and no detector searches again
//!   from each of many triggers what an earlier one searched (the memos of `ctx.rs`). The tests
//!   and the fuzzer count the bytes examined to hold this (`testing`, feature `redact-testing`);
//! - a token of a known format is redacted whatever letters it holds; only a value that is a
//!   placeholder as a whole (`<your-token>`, `xxxxxxxx`, `${TOKEN}`) is left (`placeholder.rs`).
//!
//! How: the detectors scan a normalised view of the text (NFKC, default-ignorable characters
//! removed, `norm.rs`; ASCII text is its own view), so that fullwidth digits, zero-width
//! characters inside a token and decomposed accents hide nothing; an Aho-Corasick keyword pass
//! decides which detectors run (`engine.rs`), the detectors report byte spans (`pii.rs`,
//! `secrets.rs`, the provider formats of `rules.rs`) into the per-call state of `ctx.rs`, spans
//! are mapped back to the smallest original spans covering them, overlapping spans are merged
//! into one before anything is replaced, and byte offsets are mapped to UTF-16 in one forward
//! pass. Placeholders replace original bytes: outside the findings the output is the input, byte
//! for byte.

mod catalogue;
mod copies;
mod ctx;
mod engine;
pub mod fields;
mod intl;
mod letters;
mod norm;
mod phone;
mod pii;
mod placeholder;
mod rules;
mod secrets;
mod text;

#[cfg(test)]
mod letters_tests;
#[cfg(test)]
mod rest_tests;
#[cfg(any(test, feature = "redact-testing"))]
pub mod testing;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trufflehog_tests;
#[cfg(test)]
mod unicode_tests;

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::OnceLock;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use ctx::{Ctx, Hit, Needle, Next};
use engine::engine;
pub use fields::{FieldFinding, FieldRedactor};

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

/// A finding as [`redact_into`] returns it: the facts of a [`Finding`] without an allocation
/// (the binding builds its JavaScript objects from these directly).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawFinding {
  /// One of [`KINDS`].
  pub kind: &'static str,
  /// One of [`METHODS`].
  pub method: &'static str,
  /// UTF-16 code unit offsets into the input.
  pub start: usize,
  pub end: usize,
  /// [`Finding::fingerprint`], as ASCII hex digits.
  pub fingerprint: [u8; FINGERPRINT_HEX],
}

impl RawFinding {
  pub fn fingerprint(&self) -> &str {
    std::str::from_utf8(&self.fingerprint).unwrap_or_default()
  }
}

impl From<RawFinding> for Finding {
  fn from(f: RawFinding) -> Self {
    Finding {
      kind: f.kind.to_string(),
      start: f.start,
      end: f.end,
      method: f.method.to_string(),
      fingerprint: f.fingerprint().to_string(),
    }
  }
}

/// The result of [`redact_into`]; the redacted text is in the caller's buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawRedaction {
  pub findings: Vec<RawFinding>,
  pub blocked: bool,
}

/// Every method a finding can have.
pub const METHODS: &[&str] = &["pattern", "checksum", "keyword", "entropy"];

/// Every kind a finding can have: the personal data first ([`PII_KINDS`]), then the secrets.
pub const KINDS: &[&str] = &[
  "email",
  "phone",
  "credit_card",
  "iban",
  "us_ssn",
  "uk_nino",
  "uk_nhs",
  "ca_sin",
  "in_aadhaar",
  "br_cpf",
  "br_cnpj",
  "ipv4",
  "ipv6",
  "url_credentials",
  "jwt",
  "private_key",
  "password",
  "secret",
  "aws_secret_access_key",
  "high_entropy",
  "aws_access_key_id",
  "aws_bedrock_api_key",
  "github_token",
  "gitlab_token",
  "slack_token",
  "webhook_url",
  "stripe_key",
  "openai_api_key",
  "anthropic_api_key",
  "google_api_key",
  "google_oauth_secret",
  "google_oauth_token",
  "azure_client_secret",
  "npm_token",
  "pypi_token",
  "twilio_api_key",
  "sendgrid_api_key",
  "mailgun_api_key",
  "mailchimp_api_key",
  "sendinblue_api_key",
  "shopify_token",
  "square_token",
  "digitalocean_token",
  "databricks_token",
  "doppler_token",
  "dynatrace_token",
  "fly_io_token",
  "openshift_token",
  "planetscale_token",
  "scalingo_token",
  "heroku_api_key",
  "hashicorp_tf_token",
  "vault_token",
  "alibaba_access_key_id",
  "cloudflare_origin_ca_key",
  "bitbucket_token",
  "atlassian_token",
  "buildkite_token",
  "circleci_token",
  "docker_hub_token",
  "octopus_deploy_api_key",
  "pulumi_token",
  "sourcegraph_token",
  "sonar_token",
  "rubygems_token",
  "nuget_token",
  "clojars_token",
  "telegram_bot_token",
  "flutterwave_key",
  "shippo_token",
  "easypost_token",
  "duffel_token",
  "gocardless_token",
  "facebook_token",
  "huggingface_token",
  "perplexity_api_key",
  "groq_api_key",
  "replicate_token",
  "xai_api_key",
  "langsmith_api_key",
  "pinecone_api_key",
  "onepassword_token",
  "onepassword_secret_key",
  "adobe_client_secret",
  "age_secret_key",
  "artifactory_token",
  "authress_key",
  "clickhouse_api_key",
  "defined_networking_token",
  "frameio_token",
  "grafana_token",
  "harness_token",
  "infracost_token",
  "intra42_secret",
  "linear_api_key",
  "mapbox_token",
  "maxmind_license_key",
  "newrelic_key",
  "notion_token",
  "postman_token",
  "prefect_token",
  "readme_token",
  "besttime_api_key",
  "teamwork_token",
  "wakatime_api_key",
  "adafruit_io_key",
  "apify_token",
  "aws_appsync_api_key",
  "sentry_token",
  "settlemint_token",
  "typeform_token",
  "yandex_api_key",
  "figma_token",
  "supabase_token",
  "tailscale_key",
  "firebase_fcm_key",
  "contentful_token",
  "netlify_token",
  "render_token",
  "airtable_token",
  "hubspot_token",
  "tencent_secret_id",
  "amazon_mws_token",
  "azure_devops_token",
  "astra_token",
  "mailersend_token",
  "resend_api_key",
  "discord_token",
  "paypal_token",
  "plaid_token",
  "razorpay_key",
  "openrouter_api_key",
  "nvidia_api_key",
  "elevenlabs_api_key",
  "langfuse_key",
  "dropbox_token",
  "twitter_token",
  "posthog_token",
];

/// The kinds of personal data (the first entries of [`KINDS`], up to `ipv6`); every other kind is
/// a secret.
pub const PII_KINDS: &[&str] = KINDS.split_at(13).0;

/// Hex characters of a fingerprint (64 bits): enough to tell "the same value again" apart,
/// short enough not to be a useful offline-guessing oracle for long secrets.
pub const FINGERPRINT_HEX: usize = 16;
/// Hex characters of a pseudonym (`[EMAIL_3f2a9c1d]`).
const PSEUDONYM_HEX: usize = 8;

type HmacSha256 = Hmac<Sha256>;

/// Texts at least this long are split at line boundaries and scanned on several threads.
const PARALLEL_MIN: usize = 512 * 1024;
/// Smallest piece a thread gets.
const PARALLEL_PIECE: usize = 256 * 1024;

/// Redacts `text`.
///
/// Texts of [`PARALLEL_MIN`] bytes or more are cut at line boundaries into pieces that are
/// redacted on several threads (detection, merging, fingerprints and writing the output); every
/// detector looks at one line at a time apart from multi-line constructs, which no cut falls
/// inside, so the pieces find exactly what one pass over the whole text would.
pub fn redact(text: &str, options: &RedactOptions) -> Redaction {
  let mut out = Vec::new();
  let r = redact_into(text, options, &mut out);
  Redaction { text: into_text(out), findings: r.findings.into_iter().map(Finding::from).collect(), blocked: r.blocked }
}

/// [`redact`] that writes the redacted text (UTF-8) into `out`, replacing what it held, and
/// returns findings that need no allocation each: for callers that redact many texts and reuse
/// one buffer (the Node binding).
pub fn redact_into(text: &str, options: &RedactOptions, out: &mut Vec<u8>) -> RawRedaction {
  let bytes = text.as_bytes();
  let cuts =
    if bytes.len() >= PARALLEL_MIN { split_points(bytes, parallelism(bytes.len())) } else { vec![0, bytes.len()] };
  redact_pieces(text, options, &cuts, out)
}

/// [`redact_into`] over the pieces between `cuts` (`0 = c0 < c1 < ... = len`, at line starts
/// outside multi-line constructs), one thread per piece.
fn redact_pieces(text: &str, options: &RedactOptions, cuts: &[usize], out: &mut Vec<u8>) -> RawRedaction {
  out.clear();
  let shared = Shared::new(options);
  if cuts.len() <= 2 {
    let piece = analyse(text, &shared);
    out.reserve(piece.out_len);
    write_piece(text, &piece, options, &mut |b| out.extend_from_slice(b));
    assert_eq!(out.len(), piece.out_len, "redacted piece length");
    return RawRedaction { findings: piece.findings, blocked: piece.blocked };
  }
  let texts: Vec<&str> = cuts.windows(2).map(|w| &text[w[0]..w[1]]).collect();
  let shared = &shared;
  let pieces: Vec<Piece> = std::thread::scope(|scope| {
    // The calling thread takes the first piece itself.
    let workers: Vec<_> = texts[1..].iter().map(|&t| scope.spawn(move || analyse(t, shared))).collect();
    let mut pieces = vec![analyse(texts[0], shared)];
    // A panic in a worker is re-raised here and caught by the binding's guard.
    pieces.extend(workers.into_iter().map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p))));
    pieces
  });
  // Each piece writes its own region of the output, in parallel. (A large zeroed allocation
  // usually comes as fresh pages, already zero, so `resize` on an empty buffer rarely costs a
  // pass over it.)
  out.resize(pieces.iter().map(|p| p.out_len).sum(), 0);
  std::thread::scope(|scope| {
    let mut rest: &mut [u8] = out;
    let mut regions = Vec::with_capacity(pieces.len());
    for p in &pieces {
      let (region, tail) = std::mem::take(&mut rest).split_at_mut(p.out_len);
      regions.push(region);
      rest = tail;
    }
    let mut jobs = texts.iter().zip(&pieces).zip(regions);
    let first = jobs.next();
    let workers: Vec<_> =
      jobs.map(|((&t, p), region)| scope.spawn(move || write_region(t, p, options, region))).collect();
    if let Some(((&t, p), region)) = first {
      write_region(t, p, options, region);
    }
    for w in workers {
      w.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
    }
  });
  let mut findings = Vec::with_capacity(pieces.iter().map(|p| p.findings.len()).sum());
  let (mut base, mut blocked) = (0, false);
  for (p, t) in pieces.into_iter().zip(&texts) {
    findings.extend(p.findings.into_iter().map(|f| RawFinding { start: f.start + base, end: f.end + base, ..f }));
    base += if t.is_ascii() { t.len() } else { utf16_len(t.as_bytes()) };
    blocked |= p.blocked;
  }
  RawRedaction { findings, blocked }
}

/// [`redact`] with the given cuts (tests: the parallel path against one pass).
#[cfg(any(test, feature = "redact-testing"))]
fn redact_with_cuts(text: &str, options: &RedactOptions, cuts: &[usize]) -> Redaction {
  let mut out = Vec::new();
  let r = redact_pieces(text, options, cuts, &mut out);
  Redaction { text: into_text(out), findings: r.findings.into_iter().map(Finding::from).collect(), blocked: r.blocked }
}

/// What every piece of one call shares: the allowlist and the keyed hash.
struct Shared<'o> {
  /// The allowlist's values as given and as the normalised view spells them.
  allow: HashSet<Cow<'o, [u8]>>,
  mac: HmacSha256,
  pseudonymize: bool,
}

impl<'o> Shared<'o> {
  fn new(options: &'o RedactOptions) -> Self {
    Shared {
      allow: options
        .allowlist
        .iter()
        .flat_map(|s| {
          let spelled = match norm::normalize(s) {
            Cow::Owned(n) => Some(Cow::Owned(n.into_bytes())),
            Cow::Borrowed(_) => None,
          };
          std::iter::once(Cow::Borrowed(s.as_bytes())).chain(spelled)
        })
        .collect(),
      mac: keyed_mac(options.key.as_deref()),
      pseudonymize: options.pseudonymize,
    }
  }
}

/// The HMAC keyed with `key` (the process key when `None`). Keying hashes the key twice, which
/// cost more than redacting a short message: the keyed state is kept (per thread, for the last
/// key used) and cloned.
fn keyed_mac(key: Option<&[u8]>) -> HmacSha256 {
  thread_local! {
    static LAST: std::cell::RefCell<Option<(Option<Vec<u8>>, HmacSha256)>> = const { std::cell::RefCell::new(None) };
  }
  LAST.with(|last| {
    let mut last = last.borrow_mut();
    if let Some((k, mac)) = last.as_ref() {
      if k.as_deref() == key {
        return mac.clone();
      }
    }
    let mac = HmacSha256::new_from_slice(key.unwrap_or(process_key())).expect("HMAC accepts any key length");
    *last = Some((key.map(|k| k.to_vec()), mac.clone()));
    mac
  })
}

/// One piece of the input, analysed: its merged spans (byte offsets into the piece), findings
/// (UTF-16 offsets into the piece), and the size of its output. (Its UTF-16 length, needed only
/// to place the findings of later pieces, is counted by the caller that splits: a pass over a
/// non-ASCII text costs a sixth of redacting it, for nothing when it is one piece.)
struct Piece {
  spans: Vec<Hit>,
  findings: Vec<RawFinding>,
  blocked: bool,
  out_len: usize,
}

/// Detects, merges and fingerprints the spans of `text` (one thread).
fn analyse(text: &str, shared: &Shared) -> Piece {
  let bytes = text.as_bytes();
  // The detectors scan the normalised view; `None`: the text is its own view.
  let view = norm::View::of(text);
  let scanned = view.as_ref().map_or(bytes, |v| &v.text[..]);
  let engine = engine();
  let mut ctx = Ctx::new(scanned, engine.rule_count());
  engine.detect(&mut ctx);
  let (mut hits, blocked) = (ctx.hits, ctx.blocked);
  copies::add_copies(scanned, &mut hits);
  // Our own placeholders are never secrets: a second pass leaves them as they are. (Looked for
  // only when there is something to keep out: every `[` of a log line or a JSON array cost a
  // look, for nothing in most texts.)
  let own = if hits.is_empty() { Vec::new() } else { placeholder::own_placeholders(scanned) };
  if !own.is_empty() {
    // A hit that reaches into a placeholder (`password=x[REDACTED:IPV6]`: a value that the first
    // pass cut short with another finding) is no new detection either: redacting it would cut
    // the placeholder, and every further pass would change the text again.
    hits.retain(|h| {
      let i = own.partition_point(|&(start, _)| start <= h.start);
      let from_before = i > 0 && own[i - 1].1 > h.start;
      let into_next = own.get(i).is_some_and(|&(start, _)| start < h.end);
      !(from_before || into_next)
    });
  }
  if !shared.allow.is_empty() {
    hits.retain(|h| !shared.allow.contains(&scanned[h.start..h.end]));
  }
  if let Some(v) = &view {
    for h in &mut hits {
      (h.start, h.end) = (v.start(h.start), v.end(h.end));
    }
  }
  let spans = merge(hits, text);
  // (Asked only when some offset needs converting.)
  let ascii = spans.is_empty() || bytes.is_ascii();
  let mut findings = Vec::with_capacity(spans.len());
  let (mut byte_pos, mut u16_pos) = (0usize, 0usize);
  let mut utf16_at = |target: usize| -> usize {
    u16_pos += if ascii { target - byte_pos } else { utf16_len(&bytes[byte_pos..target]) };
    byte_pos = target;
    u16_pos
  };
  let mut out_len = text.len();
  for h in &spans {
    let (start, end) = (utf16_at(h.start), utf16_at(h.end));
    let mut m = shared.mac.clone();
    // Every spelling of a value (composed or not, fullwidth, with invisible characters) gets one
    // fingerprint and one pseudonym.
    match &bytes[h.start..h.end] {
      v if v.is_ascii() => m.update(v),
      _ => m.update(norm::normalize(&text[h.start..h.end]).as_bytes()),
    }
    let fingerprint = to_hex(&m.finalize().into_bytes()[..FINGERPRINT_HEX / 2]);
    out_len = out_len - (h.end - h.start) + placeholder_len(h.kind, shared.pseudonymize);
    findings.push(RawFinding { kind: h.kind, start, end, method: h.method, fingerprint });
  }
  Piece { spans, findings, blocked, out_len }
}

/// Lowercase hex of `FINGERPRINT_HEX / 2` bytes.
fn to_hex(bytes: &[u8]) -> [u8; FINGERPRINT_HEX] {
  const DIGITS: &[u8; 16] = b"0123456789abcdef";
  let mut out = [0u8; FINGERPRINT_HEX];
  for (i, &b) in bytes.iter().take(FINGERPRINT_HEX / 2).enumerate() {
    out[2 * i] = DIGITS[(b >> 4) as usize];
    out[2 * i + 1] = DIGITS[(b & 15) as usize];
  }
  out
}

/// `[REDACTED:EMAIL]` or `[EMAIL_3f2a9c1d]`.
fn placeholder_len(kind: &str, pseudonymize: bool) -> usize {
  if pseudonymize {
    kind.len() + 3 + PSEUDONYM_HEX
  } else {
    kind.len() + 11
  }
}

/// Writes the redacted `text` of `piece` into `out`, which has exactly `piece.out_len` bytes.
fn write_region(text: &str, piece: &Piece, options: &RedactOptions, out: &mut [u8]) {
  let mut w = 0;
  write_piece(text, piece, options, &mut |b| {
    out[w..w + b.len()].copy_from_slice(b);
    w += b.len();
  });
  assert_eq!(w, out.len(), "redacted piece length");
}

/// Hands the redacted `text` of `piece` to `put`, in order.
fn write_piece(text: &str, piece: &Piece, options: &RedactOptions, put: &mut impl FnMut(&[u8])) {
  let bytes = text.as_bytes();
  let mut copied = 0;
  for (h, f) in piece.spans.iter().zip(&piece.findings) {
    put(&bytes[copied..h.start]);
    put(b"[");
    if options.pseudonymize {
      put_upper(put, h.kind);
      put(b"_");
      put(&f.fingerprint[..PSEUDONYM_HEX]);
    } else {
      put(b"REDACTED:");
      put_upper(put, h.kind);
    }
    put(b"]");
    copied = h.end;
  }
  put(&bytes[copied..]);
}

fn put_upper(put: &mut impl FnMut(&[u8]), kind: &str) {
  for &b in kind.as_bytes() {
    put(&[b.to_ascii_uppercase()]);
  }
}

/// The output buffer as a string. Every byte of it was copied from the input at character
/// boundaries (spans are widened to them) or from an ASCII placeholder, so it is valid UTF-8;
/// the check runs anyway (a few GB/s), as the last guard before the text leaves.
fn into_text(out: Vec<u8>) -> String {
  String::from_utf8(out).expect("redacted text is UTF-8")
}

fn parallelism(len: usize) -> usize {
  std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(8).min(len / PARALLEL_PIECE)
}

/// Redacts many texts with the same options (in input order); large batches are spread over
/// several threads.
pub fn redact_batch<S: AsRef<str> + Sync>(texts: &[S], options: &RedactOptions) -> Vec<Redaction> {
  let total: usize = texts.iter().map(|t| t.as_ref().len()).sum();
  let threads = if total >= PARALLEL_MIN && texts.len() > 1 { parallelism(total).min(texts.len()) } else { 1 };
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

/// Piece boundaries (`0 = c0 < c1 < ... = len`) near `len * k / parts`, each just after a
/// newline, not after a line ending in `\\`, and not inside a private key block.
fn split_points(t: &[u8], parts: usize) -> Vec<usize> {
  let zones = no_cut_zones(t);
  let mut cuts = vec![0];
  for k in 1..parts {
    let target = (t.len() * k / parts).max(*cuts.last().unwrap_or(&0));
    let Some(mut cut) = next_line_start(t, target) else { break };
    // Each turn moves the cut to a later line start, or stops.
    loop {
      let line_end = cut - 1; // the newline
      let continued = line_end > 0
        && (t[line_end - 1] == b'\\' || (t[line_end - 1] == b'\r' && line_end > 1 && t[line_end - 2] == b'\\'));
      let from = match zone_around(&zones, cut) {
        Some(end) => end,
        None if continued => cut,
        None => break,
      };
      match next_line_start(t, from) {
        Some(c) => cut = c,
        None => return finish(cuts, t.len()),
      }
    }
    if cut > *cuts.last().unwrap_or(&0) && cut < t.len() {
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

/// Where no cut may fall: from each `-----BEGIN` (any case) or `PuTTY-User-Key-File` to the
/// first end marker after it (`-----END`, `-----end`, `Private-MAC:`), or to the end of the text.
/// Sorted and disjoint; found in one pass per marker (the end markers from forward memos).
fn no_cut_zones(t: &[u8]) -> Vec<(usize, usize)> {
  let mut begins: Vec<usize> = [&b"-----BEGIN"[..], b"-----begin", b"PuTTY-User-Key-File"]
    .iter()
    .flat_map(|m| memchr::memmem::find_iter(t, m))
    .collect();
  begins.sort_unstable();
  let mut ends =
    [Next::new(Needle::Str(b"-----END")), Next::new(Needle::Str(b"-----end")), Next::new(Needle::Str(b"Private-MAC:"))];
  let mut zones: Vec<(usize, usize)> = Vec::new();
  for b in begins {
    // A BEGIN inside the zone before ends where that zone ends (at the first end marker after
    // both).
    if zones.last().is_some_and(|&(_, e)| b < e) {
      continue;
    }
    let e = ends.iter_mut().filter_map(|n| n.find(t, b)).min().unwrap_or(t.len());
    zones.push((b, e));
  }
  zones
}

/// If `cut` falls inside a zone of [`no_cut_zones`], where that zone ends.
fn zone_around(zones: &[(usize, usize)], cut: usize) -> Option<usize> {
  let i = zones.partition_point(|&(b, _)| b < cut);
  (i > 0 && cut <= zones[i - 1].1).then(|| zones[i - 1].1)
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
        h.write_u128(
          std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0),
        );
        chunk.copy_from_slice(&h.finish().to_le_bytes());
      }
    }
    key
  })
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
