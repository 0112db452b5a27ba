//! Secrets: private key blocks, JWTs, credentials in URLs and `curl -u`, `Bearer` tokens,
//! `password=` / `token:` style assignments, and generic high-entropy tokens.

use super::engine::{Ctx, P_ENTROPY, P_JWT, P_PASSWORD, P_PRIVATE_KEY, P_SECRET, P_URL_CRED};
use super::rules::{is_known_public, PROVIDER_WORDS};
use super::text::*;

// ---------------------------------------------------------------------------------------------
// Private keys

/// Called at every `-----BEGIN` (any case). A private key block (RSA, EC, DSA, OpenSSH, PKCS#8,
/// encrypted, PGP) with a real body is redacted whole, from its BEGIN line to its END line, and
/// blocks the text; without an END line everything to the end of the text goes. Public blocks
/// (certificates, public keys, signatures) are remembered so that the entropy scan leaves their
/// base64 alone.
pub fn pem_at(ctx: &mut Ctx, k: usize) {
  let t = ctx.t;
  if k < ctx.pem_until {
    return;
  }
  let h = k + 10; // after "-----BEGIN"
  let label_end = match memchr::memmem::find(&t[h..(h + 100).min(t.len())], b"-----") {
    Some(x) => h + x,
    None => return,
  };
  let label = &t[h..label_end];
  if !label.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b' ' | b'_' | b'-')) {
    return;
  }
  let header_end = label_end + 5;
  let limit = (header_end + (1 << 20)).min(t.len());
  let end_marker = find_ci(&t[header_end..limit], b"-----end").map(|x| header_end + x);
  let block_end = end_marker.map(|m| {
    // "-----END <label>-----"
    let after = m + 8;
    match memchr::memmem::find(&t[after..(after + 100).min(t.len())], b"-----") {
      Some(x) => after + x + 5,
      None => line_end(t, m, 200),
    }
  });
  if !contains_ci(label, b"private") {
    ctx.public_zones.push((k, block_end.unwrap_or(header_end)));
    ctx.pem_until = block_end.unwrap_or(header_end);
    return;
  }
  let body = &t[header_end..end_marker.unwrap_or(limit)];
  let b64 = body.iter().filter(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')).count();
  if b64 < 40 {
    return; // `-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----` in documentation
  }
  let end = block_end.unwrap_or(t.len());
  ctx.pem_until = end;
  ctx.blocked = true;
  ctx.push(k, end, "private_key", "pattern", P_PRIVATE_KEY);
}

fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
  if hay.len() < needle.len() {
    return None;
  }
  let upper: Vec<u8> = needle.to_ascii_uppercase();
  let f = memchr::memmem::find(hay, needle);
  let g = memchr::memmem::find(hay, &upper);
  match (f, g) {
    (Some(a), Some(b)) => Some(a.min(b)),
    (a, b) => a.or(b),
  }
}

/// PuTTY private key files (`PuTTY-User-Key-File-2: ssh-rsa` ... `Private-MAC: ...`).
pub fn putty_at(ctx: &mut Ctx, k: usize) {
  let t = ctx.t;
  let limit = (k + (1 << 16)).min(t.len());
  let Some(lines) = memchr::memmem::find(&t[k..limit], b"Private-Lines:") else { return };
  let mac = memchr::memmem::find(&t[k..limit], b"Private-MAC:").map(|x| line_end(t, k + x, 200));
  let _ = lines;
  let end = mac.unwrap_or(t.len());
  ctx.blocked = true;
  ctx.push(k, end, "private_key", "pattern", P_PRIVATE_KEY);
}

// ---------------------------------------------------------------------------------------------
// JWT

fn b64url_run(t: &[u8], mut i: usize) -> usize {
  let s = i;
  while i < t.len() && (t[i].is_ascii_alphanumeric() || t[i] == b'_' || t[i] == b'-') {
    i += 1;
  }
  i - s
}

/// Called at every `eyJ` (exact case): `header.payload.signature`, signature possibly empty.
pub fn jwt_at(ctx: &mut Ctx, k: usize) {
  let t = ctx.t;
  if k < ctx.jwt_until || is_word(before(t, k)) || before(t, k) == b'-' {
    return;
  }
  let h = b64url_run(t, k);
  if h < 12 || at(t, k + h) != b'.' {
    return;
  }
  let p0 = k + h + 1;
  if !(at(t, p0) == b'e' && at(t, p0 + 1) == b'y') {
    return;
  }
  let pl = b64url_run(t, p0);
  if pl < 12 || at(t, p0 + pl) != b'.' {
    return;
  }
  let s0 = p0 + pl + 1;
  let mut end = s0 + b64url_run(t, s0);
  while at(t, end) == b'=' && end < t.len() {
    end += 1;
  }
  ctx.jwt_until = end;
  ctx.push(k, end, "jwt", "pattern", P_JWT);
}

// ---------------------------------------------------------------------------------------------
// URLs with credentials, curl -u, Bearer

/// Called at every `://`: `scheme://user:password@host` (database connection strings, git
/// remotes, proxies). The password is redacted; a token used as the user name is too.
pub fn url_at(ctx: &mut Ctx, k: usize) {
  let t = ctx.t;
  let mut s = k;
  while s > 0 && k - s < 32 && (t[s - 1].is_ascii_alphanumeric() || matches!(t[s - 1], b'+' | b'.' | b'-')) {
    s -= 1;
  }
  if s == k || !t[s].is_ascii_alphabetic() {
    return;
  }
  let a = k + 3;
  let mut e = a;
  let limit = (a + 512).min(t.len());
  while e < limit && !t[e].is_ascii_whitespace() && !matches!(t[e], b'"' | b'\'' | b'<' | b'>' | b'`') {
    e += 1;
  }
  let seg = &t[a..e];
  let Some(at_pos) = memchr::memrchr(b'@', seg) else { return };
  let userinfo = &seg[..at_pos];
  let host_first = at(seg, at_pos + 1);
  if !(host_first.is_ascii_alphanumeric() || host_first == b'[') {
    return;
  }
  match memchr::memchr(b':', userinfo) {
    Some(colon) => {
      let user = &userinfo[..colon];
      if user.contains(&b'/') || user.contains(&b'?') {
        return;
      }
      let pass = &userinfo[colon + 1..];
      if pass.is_empty() || is_placeholder(pass) || is_non_secret_word(pass) {
        return;
      }
      ctx.push(a + colon + 1, a + at_pos, "url_credentials", "pattern", P_URL_CRED);
    }
    None => {
      if userinfo.contains(&b'/') {
        return;
      }
      let p = profile(userinfo);
      if userinfo.len() >= 16 && p.digit > 0 && entropy(userinfo) >= 3.5 && !is_placeholder(userinfo) {
        ctx.push(a, a + at_pos, "url_credentials", "pattern", P_URL_CRED);
      }
    }
  }
}

/// Called at every `curl`: `-u user:password` / `--user user:password` on the command line
/// (including backslash-continued lines).
pub fn curl_at(ctx: &mut Ctx, k: usize) {
  let t = ctx.t;
  if is_word(before(t, k)) || !matches!(at(t, k + 4), b' ' | b'\t') {
    return;
  }
  // The command: this line plus up to 6 backslash-continued ones.
  let mut end = line_end(t, k, 4096);
  for _ in 0..6 {
    let mut j = end;
    while j > k && matches!(t[j - 1], b' ' | b'\t') {
      j -= 1;
    }
    if j > k && t[j - 1] == b'\\' && end < t.len() {
      let next = if t[end] == b'\r' && at(t, end + 1) == b'\n' { end + 2 } else { end + 1 };
      end = line_end(t, next.min(t.len()), 4096);
    } else {
      break;
    }
  }
  let mut i = k + 4;
  while i < end {
    let flag_len = if t[i..end].starts_with(b"-u") && !is_word(at(t, i + 2)) && at(t, i + 2) != b'-' {
      2
    } else if t[i..end].starts_with(b"--user") && !is_word(at(t, i + 6)) && at(t, i + 6) != b'-' {
      6
    } else {
      i += 1;
      continue;
    };
    if !matches!(before(t, i), b' ' | b'\t') {
      i += 1;
      continue;
    }
    let mut v = i + flag_len;
    if at(t, v) == b'=' {
      v += 1;
    }
    while v < end && matches!(t[v], b' ' | b'\t') {
      v += 1;
    }
    // The argument: up to the next unquoted space.
    let mut e = v;
    let mut quote = 0u8;
    while e < end {
      let b = t[e];
      if quote != 0 {
        if b == quote {
          quote = 0;
        }
      } else if is_quote(b) {
        quote = b;
      } else if b == b' ' || b == b'\t' {
        break;
      }
      e += 1;
    }
    curl_credential(ctx, v, e);
    i = e.max(i + 1);
  }
}

fn curl_credential(ctx: &mut Ctx, v: usize, e: usize) {
  let t = ctx.t;
  let arg = &t[v..e];
  if matches!(trim_quotes(arg).first(), Some(b'<' | b'[' | b'{' | b'$')) {
    return;
  }
  let Some(colon) = arg.iter().position(|&b| b == b':') else { return };
  let (user, pass) = (&arg[..colon], &arg[colon + 1..]);
  let pass_clean = trim_quotes(pass);
  let user_clean = trim_quotes(user);
  let (s, x) = if !pass_clean.is_empty() {
    let off = pass.iter().take_while(|&&b| is_quote(b)).count();
    (v + colon + 1 + off, v + colon + 1 + off + pass_clean.len())
  } else if !user_clean.is_empty() {
    let off = user.iter().take_while(|&&b| is_quote(b)).count();
    (v + off, v + off + user_clean.len())
  } else {
    return;
  };
  let secret = &t[s..x];
  if is_placeholder(secret) || is_non_secret_word(secret) || is_placeholder(user_clean) && pass_clean.is_empty() {
    return;
  }
  if secret.starts_with(b"$") || secret.contains(&b'{') {
    return;
  }
  ctx.push(s, x, "password", "keyword", P_PASSWORD);
}

/// Called at every `bearer`: `Bearer <token>` in headers, logs and prose.
pub fn bearer_at(ctx: &mut Ctx, k: usize) {
  let t = ctx.t;
  if is_word(before(t, k)) {
    return;
  }
  let mut v = k + 6;
  if !matches!(at(t, v), b' ' | b'\t') {
    return;
  }
  while matches!(at(t, v), b' ' | b'\t') {
    v += 1;
  }
  let mut e = v;
  while e < t.len() && (t[e].is_ascii_alphanumeric() || matches!(t[e], b'.' | b'_' | b'~' | b'+' | b'/' | b'-' | b'='))
  {
    e += 1;
  }
  while e > v && t[e - 1] == b'.' {
    e -= 1;
  }
  let tok = &t[v..e];
  if tok.len() < 8 || is_placeholder(tok) || is_non_secret_word(tok) || is_word(at(t, e)) {
    return;
  }
  let p = profile(tok);
  if p.digit == 0 && entropy(tok) < 3.5 {
    return; // `Bearer authentication`, `bearer tokens`
  }
  ctx.push(v, e, "secret", "keyword", P_SECRET);
}

// ---------------------------------------------------------------------------------------------
// Assignments: `password=...`, `"token": "..."`, `--api-key ...`, `<password>...</password>`

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Strength {
  /// `password`, `passwd`, `pwd`, `passphrase`: any non-placeholder value.
  Password,
  /// `secret`, `token`, `api_key`, `authorization`, `credentials`, ...
  Strong,
  /// Only a provider name (`sourcegraph: ...`, `MERAKI_...`).
  Provider,
  /// `key`, `auth`, `sig`, `session`, `cookie`: random-looking values only.
  Weak,
}

struct IdentClass {
  strength: Strength,
  provider: bool,
  aws_secret: bool,
}

/// Words of an identifier, lowercased: `DB_PASSWORD` -> [db, password], `alibabaToken` ->
/// [alibaba, token], `X-Api-Key` -> [x, api, key], `token3` -> [token, 3]. No allocation.
struct Words {
  lower: [u8; 160],
  spans: [(u8, u8); 24],
  n: usize,
}

impl Words {
  fn get(&self, i: usize) -> &[u8] {
    let (s, e) = self.spans[i];
    &self.lower[s as usize..e as usize]
  }
  fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
    (0..self.n).map(|i| self.get(i))
  }
  fn has(&self, set: &[&str]) -> bool {
    self.iter().any(|w| in_set(set, w))
  }
  fn has_any_of(&self, lexicon: &Lexicon) -> bool {
    self.iter().any(|w| lexicon.contains(w))
  }
}

fn in_set(set: &[&str], w: &[u8]) -> bool {
  // The first byte is compared inline: most candidates differ there, and a slice comparison
  // is a library call.
  set.iter().any(|s| s.len() == w.len() && s.as_bytes().first() == w.first() && s.as_bytes() == w)
}

/// Does `v` start with one of `prefixes`? (First byte inline, as in [`in_set`].)
fn starts_with_any(v: &[u8], prefixes: &[&str]) -> bool {
  prefixes.iter().any(|p| p.as_bytes().first() == v.first() && v.starts_with(p.as_bytes()))
}

fn ident_words(ident: &[u8]) -> Words {
  let mut w = Words { lower: [0; 160], spans: [(0, 0); 24], n: 0 };
  let ident = &ident[..ident.len().min(160)];
  let mut start: Option<usize> = None;
  for (i, &b) in ident.iter().enumerate() {
    w.lower[i] = b.to_ascii_lowercase();
    let prev = if i > 0 { ident[i - 1] } else { 0 };
    let next = ident.get(i + 1).copied().unwrap_or(0);
    if !b.is_ascii_alphanumeric() {
      if let Some(s) = start.take() {
        if w.n < 24 {
          w.spans[w.n] = (s as u8, i as u8);
          w.n += 1;
        }
      }
      continue;
    }
    let boundary = start.is_some()
      && ((prev.is_ascii_lowercase() && b.is_ascii_uppercase())
        || (prev.is_ascii_uppercase() && b.is_ascii_uppercase() && next.is_ascii_lowercase())
        || (prev.is_ascii_digit() != b.is_ascii_digit()));
    if boundary {
      let s = start.take().unwrap();
      if w.n < 24 {
        w.spans[w.n] = (s as u8, i as u8);
        w.n += 1;
      }
    }
    if start.is_none() {
      start = Some(i);
    }
  }
  if let Some(s) = start {
    if w.n < 24 {
      w.spans[w.n] = (s as u8, ident.len() as u8);
      w.n += 1;
    }
  }
  w
}

static ANTI_WORDS: Lexicon = Lexicon::new(&[
  "public",
  "pub",
  "publishable",
  "csrf",
  "xsrf",
  "authenticity",
  "max",
  "min",
  "num",
  "total",
  "prompt",
  "completion",
  "completions",
  "input",
  "output",
  "cached",
  "reasoning",
  "remaining",
  "usage",
  "count",
  "keyboard",
  "keyword",
  "keywords",
  "keys",
  "tokens",
  "tokenizer",
  "tokenize",
  "tokenized",
  "monkey",
  "hotkey",
  "turkey",
  "author",
  "authors",
  "foreign",
  "primary",
  "sort",
  "partition",
  "cache",
  "idempotency",
  "dedup",
  "lookup",
  "map",
  "dict",
  "next",
  "page",
  "pagination",
  "continuation",
  "cursor",
  "sighash",
  "down",
  "up",
  "left",
  "right",
  "event",
  "press",
  "pressed",
  "board",
  "frame",
  "mesh",
  "meshing",
  "pair",
  "ring",
  "selector",
  "stone",
  "word",
  "alias",
  "keystore",
  "keytab",
  "keyframe",
  "keychain",
  "keyring",
  "turnkey",
]);

static META_WORDS: Lexicon = Lexicon::new(&[
  "id",
  "ids",
  "name",
  "names",
  "type",
  "types",
  "length",
  "len",
  "size",
  "url",
  "uri",
  "urls",
  "endpoint",
  "host",
  "path",
  "file",
  "dir",
  "format",
  "version",
  "policy",
  "rule",
  "rules",
  "field",
  "label",
  "hint",
  "prefix",
  "suffix",
  "header",
  "limit",
  "limits",
  "budget",
  "index",
  "enabled",
  "required",
  "expiry",
  "expires",
  "expiration",
  "ttl",
  "timeout",
  "location",
  "mode",
  "algorithm",
  "alg",
  "kind",
  "ref",
  "regex",
  "pattern",
  "placeholder",
  "schema",
  "list",
  "source",
  "provider",
  "count",
  "usage",
  "method",
  "strategy",
  "store",
  "storage",
  "manager",
  "service",
  "class",
  "handler",
  "validator",
  "strength",
  "rotation",
  "generator",
  "helper",
  "util",
  "utils",
  "config",
  "option",
  "options",
  "param",
  "params",
  "flag",
  "min",
  "max",
  "length",
  "chars",
  "bits",
  "bytes",
  "rounds",
  "iterations",
  "salt",
  "hash",
  "hashed",
  "digest",
  "fingerprint",
  "sha",
  "md5",
  "check",
  "checksum",
  "reset",
  "changed",
  "policy",
]);

const PASSWORD_WORDS: &[&str] = &["password", "passwd", "pwd", "pass", "passphrase", "passcode", "pword", "pw"];
static STRONG_WORDS: Lexicon = Lexicon::new(&[
  "secret",
  "secrets",
  "token",
  "apikey",
  "authorization",
  "credential",
  "credentials",
  "creds",
  "bearer",
  "privatekey",
  "accesskey",
  "secretkey",
  "authtoken",
  "accesstoken",
  "refreshtoken",
  "apitoken",
  "clientsecret",
  "sessiontoken",
  "authkey",
  "masterkey",
  "signingkey",
  "encryptionkey",
  "licensekey",
  "appkey",
  "serverkey",
  "clientkey",
  "accountkey",
  "subscriptionkey",
  "sharedkey",
  "xapikey",
  "webhooksecret",
  "appsecret",
  "oauthtoken",
]);
const KEY_PAIRS: &[&str] = &[
  "api",
  "access",
  "secret",
  "private",
  "auth",
  "master",
  "signing",
  "encryption",
  "account",
  "client",
  "app",
  "license",
  "subscription",
  "shared",
  "server",
  "admin",
  "service",
  "session",
  "write",
  "read",
  "deploy",
  "consumer",
  "storage",
];
const WEAK_WORDS: &[&str] = &["key", "auth", "oauth", "sig", "session", "cookie", "hmac"];

fn classify_ident(ident: &[u8]) -> Option<IdentClass> {
  let words = ident_words(ident);
  if words.n == 0 || words.has_any_of(&ANTI_WORDS) {
    return None;
  }
  let last = words.get(words.n - 1);
  if META_WORDS.contains(last) {
    return None;
  }
  let provider = words.has_any_of(&PROVIDER_WORDS);
  let pair = |i: usize, a: &[&str], b: &str| in_set(a, words.get(i)) && words.get(i + 1) == b.as_bytes();
  let pairs = |a: &[&str], b: &str| (0..words.n.saturating_sub(1)).any(|i| pair(i, a, b));
  let aws_secret = words.iter().any(|w| w == b"aws") && (words.has(&["secret"]) || pairs(&["access"], "key"));
  let ends_with_any =
    |suffixes: &[&str]| words.iter().any(|w| suffixes.iter().any(|s| w.len() > s.len() && w.ends_with(s.as_bytes())));
  let strength = if words.has(PASSWORD_WORDS) || ends_with_any(&["password", "passwd", "pwd"]) {
    Strength::Password
  } else if words.has_any_of(&STRONG_WORDS)
    || ends_with_any(&["token", "secret"])
    || pairs(KEY_PAIRS, "key")
    || pairs(&["api"], "token")
    || pairs(&["api"], "secret")
  {
    Strength::Strong
  } else if provider {
    Strength::Provider
  } else if words.iter().rev().find(|w| !w.iter().all(|b| b.is_ascii_digit())).is_some_and(|w| in_set(WEAK_WORDS, w)) {
    // `session_key`, `auth`: the weak word must name the thing (`key_down_event` does not).
    Strength::Weak
  } else {
    return None;
  };
  Some(IdentClass { strength, provider, aws_secret })
}

/// Values that are code, not data: `getToken()`, `config.apiKey`, `self.password`.
fn code_like(v: &[u8]) -> bool {
  if v.contains(&b'(') || v.windows(2).any(|w| w == b"->" || w == b"::" || w == b"=>") {
    return true;
  }
  let p = profile(v);
  // A dotted identifier path without digits.
  if p.digit == 0 && v.contains(&b'.') && v.iter().all(|&b| b.is_ascii_alphabetic() || matches!(b, b'.' | b'_' | b'$'))
  {
    return true;
  }
  false
}

const SCHEMES: &[&str] =
  &["bearer", "basic", "token", "bot", "digest", "negotiate", "apikey", "api-key", "key", "sso-key"];

/// Called for an identifier `t[a..b]` that is followed by an assignment operator (`password=`,
/// `"token": "..."`, `--api-key ...`, `<password>...`, `password is ...`): parses the operator
/// and the value and decides by the identifier's words and the value's shape.
pub fn assignment_on(ctx: &mut Ctx, a: usize, b: usize) {
  let t = ctx.t;
  let n = t.len();
  let ident = &t[a..b];
  let key_quoted =
    is_quote(before(t, a)) || (before(t, a) == b'"' || (a >= 2 && t[a - 1] == b'"' && t[a - 2] == b'\\'));
  let xml = before(t, a) == b'<';
  let cli = ident.starts_with(b"-");

  // Operator.
  let mut p = b;
  if is_quote(at(t, p)) {
    p += 1;
  } else if at(t, p) == b'\\' && is_quote(at(t, p + 1)) {
    p += 2;
  }
  let op_start = p;
  while p < n && p - op_start < 8 && matches!(t[p], b' ' | b'\t') {
    p += 1;
  }
  let spaced = p > op_start;
  let mut prose = false;
  match at(t, p) {
    b'=' => {
      p += 1;
      while matches!(at(t, p), b'=' | b'>') {
        p += 1;
      }
    }
    b':' => {
      if at(t, p + 1) == b':' {
        return; // `Token::new`
      }
      p += 1;
      if at(t, p) == b'=' {
        p += 1;
      }
    }
    b'>' if xml => p += 1,
    b',' if key_quoted => p += 1,
    b'?' | b'|' if at(t, p + 1) == b'=' || (at(t, p + 1) == b'|' && at(t, p + 2) == b'=') => {
      while matches!(at(t, p), b'?' | b'|' | b'=') {
        p += 1;
      }
    }
    c if cli && spaced && !matches!(c, b'-' | b'\n' | b'\r') => {}
    _ if spaced && (t[p..].starts_with(b"is ") || t[p..].starts_with(b"was ") || t[p..].starts_with(b"= ")) => {
      prose = true;
      p += if at(t, p) == b'w' { 3 } else { 2 };
    }
    _ => return,
  }
  while p < n && matches!(t[p], b' ' | b'\t' | b'*') && p - op_start < 24 {
    p += 1;
  }
  let Some((mut vs, mut ve, mut quoted)) = value_span(t, p) else { return };
  let mut basic_auth = false;
  // `Authorization: Bearer <token>`, `Authorization: Basic <b64>`, `token ghp_...`
  if !quoted
    && SCHEMES.iter().any(|s| t[vs..ve].eq_ignore_ascii_case(s.as_bytes()))
    && matches!(at(t, ve), b' ' | b'\t')
  {
    basic_auth = t[vs..ve].eq_ignore_ascii_case(b"basic");
    let mut q = ve;
    while matches!(at(t, q), b' ' | b'\t') {
      q += 1;
    }
    match value_span(t, q) {
      Some(v) => (vs, ve, quoted) = v,
      None => return,
    }
  }
  let v = &t[vs..ve];
  // Only now (most keyword hits have no operator and value) look at the identifier's words.
  let Some(class) = classify_ident(ident) else { return };
  let (kind, prio) = match class.strength {
    Strength::Password => ("password", P_PASSWORD),
    _ if class.aws_secret && v.len() == 40 => ("aws_secret_access_key", P_SECRET + 5),
    _ => ("secret", P_SECRET),
  };
  if provider_prefix_mismatch(v) {
    // `token = "xoxp-..."`: the Slack rule decides; if it matched, this widens its span to the
    // whole quoted value.
    if !is_placeholder(v) {
      ctx.push_conditional(vs, ve, kind, "keyword", prio);
    }
    return;
  }
  if basic_auth
    && v.len() >= 8
    && v.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
    && !is_placeholder(v)
  {
    ctx.push(vs, ve, kind, "keyword", prio);
    return;
  }
  if !accept_value(v, quoted, prose, &class, ident) || is_known_public(v) {
    return;
  }
  ctx.push(vs, ve, kind, "keyword", prio);
}

/// The value starting at `p`: a quoted string (also `\"...\"` inside JSON strings) or a run up
/// to whitespace or a delimiter. Returns (start, end, quoted).
fn value_span(t: &[u8], p: usize) -> Option<(usize, usize, bool)> {
  let n = t.len();
  let q = at(t, p);
  if p >= n {
    return None;
  }
  let escaped = q == b'\\' && is_quote(at(t, p + 1));
  if is_quote(q) || escaped {
    let (quote, s) = if escaped { (at(t, p + 1), p + 2) } else { (q, p + 1) };
    let limit = (s + 1024).min(n);
    let mut e = s;
    while e < limit {
      let b = t[e];
      if b == b'\n' || b == b'\r' {
        break;
      }
      if b == quote && !(escaped && t[e - 1] != b'\\') {
        let end = if escaped { e - 1 } else { e };
        return if end > s { Some((s, end, true)) } else { None };
      }
      if !escaped && b == b'\\' && e + 1 < limit {
        e += 2;
        continue;
      }
      e += 1;
    }
    // No closing quote: fall through and read it unquoted after the quote.
    return unquoted(t, s).map(|(s, e)| (s, e, false));
  }
  unquoted(t, p).map(|(s, e)| (s, e, false))
}

fn unquoted(t: &[u8], s: usize) -> Option<(usize, usize)> {
  let n = t.len();
  let limit = (s + 1024).min(n);
  let mut e = s;
  while e < limit {
    let b = t[e];
    if b.is_ascii_whitespace()
      || matches!(b, b'"' | b'\'' | b'`' | b',' | b';' | b'&' | b'|' | b'<' | b'>' | b')' | b']' | b'}')
    {
      break;
    }
    if b == b'\\' && matches!(at(t, e + 1), b'n' | b'r' | b't' | b'"' | b'\'' | b'\\') {
      break;
    }
    e += 1;
  }
  while e > s && matches!(t[e - 1], b'.' | b':') {
    e -= 1;
  }
  if e > s {
    Some((s, e))
  } else {
    None
  }
}

/// Known token prefixes: a value that starts with one but fails that format's check is left
/// to the format's rule (`xoxp-1234567890`, `sm_sat_om1ut2e75f`, `dapi...g5`).
const PREFIXES: &[&str] = &[
  "ghp_",
  "gho_",
  "ghu_",
  "ghs_",
  "ghr_",
  "github_pat_",
  "glpat-",
  "xoxb-",
  "xoxp-",
  "xoxa-",
  "xoxr-",
  "xoxs-",
  "xoxo-",
  "xoxe",
  "xapp-",
  "sk_live_",
  "sk_test_",
  "rk_live_",
  "rk_test_",
  "sk-ant-",
  "sk-proj-",
  "AKIA",
  "ASIA",
  "AIza",
  "npm_",
  "pypi-",
  "SG.",
  "shpat_",
  "shpss_",
  "shpca_",
  "shppa_",
  "dop_v1_",
  "doo_v1_",
  "dor_v1_",
  "dapi",
  "sm_sat_",
  "sm_pat_",
  "sm_aat_",
  "sntryu_",
  "sntrys_",
  "glc_",
  "glsa_",
  "hvs.",
  "hvb.",
  "pul-",
  "rdme_",
  "rubygems_",
  "pplx-",
  "lin_api_",
  "ntn_",
  "PMAK-",
  "pnu_",
  "dckr_pat_",
  "figd_",
  "sbp_",
  "fo1_",
  "sha256~",
  "GR1348941",
  "AKCp",
  "EZAK",
  "EZTK",
  "ops_eyJ",
  "sk-",
  "ABSK",
  "glcbt-",
  "glrt-",
  "glptt-",
  "gldt-",
  "glft-",
  "glimt-",
  "gloas-",
];

fn provider_prefix_mismatch(v: &[u8]) -> bool {
  starts_with_any(v, PREFIXES)
}

fn accept_value(v: &[u8], quoted: bool, prose: bool, class: &IdentClass, ident: &[u8]) -> bool {
  let len = v.len();
  if !(3..=1000).contains(&len) || v.contains(&b'\n') {
    return false;
  }
  if is_placeholder(v) || is_non_secret_word(v) || provider_prefix_mismatch(v) {
    return false;
  }
  if memchr::memmem::find(v, b"://").is_some() || is_path_like(v) {
    return false;
  }
  let lower_ext = v.to_ascii_lowercase();
  for ext in
    [&b".pem"[..], b".key", b".crt", b".json", b".txt", b".p12", b".pfx", b".env", b".yaml", b".yml", b".pub", b".gpg"]
  {
    if lower_ext.ends_with(ext) {
      return false;
    }
  }
  if !quoted && code_like(v) {
    return false;
  }
  let p = profile(v);
  let h = entropy(v);
  let letters = p.upper + p.lower;
  match class.strength {
    Strength::Password => {
      if len < 4 || (p.space > 0 && !quoted) {
        return false;
      }
      if prose && p.digit == 0 && p.symbol == 0 {
        return false; // "the password is correct"
      }
      if !quoted
        && p.digit == 0
        && p.symbol == 0
        && p.upper > 0
        && p.lower > 0
        && !ident.iter().all(|b| !b.is_ascii_lowercase())
      {
        return false; // `password: userPassword` (a variable)
      }
      true
    }
    Strength::Strong | Strength::Provider | Strength::Weak => {
      if p.space > 0 || p.other > 0 || is_wordy(v) || has_version(v) {
        return false;
      }
      if is_uuid(v) {
        return class.strength != Strength::Weak;
      }
      if letters == 0 {
        // Digits only: an account number or a count, not a token, unless a provider says so.
        return class.provider && p.digit >= 12 && p.symbol == 0;
      }
      let mixed = p.upper > 0 && p.lower > 0;
      let (min_len, min_h) = match class.strength {
        Strength::Strong if class.provider => (10, 2.8),
        Strength::Strong if mixed || p.symbol > 0 => (16, 3.0),
        Strength::Strong => (20, 3.0),
        Strength::Provider => (14, 3.0),
        _ => (20, 3.5),
      };
      if len < min_len || h < min_h {
        return false;
      }
      if p.digit == 0 && !(mixed && len >= 20 && h >= 3.8) && class.strength != Strength::Strong {
        return false;
      }
      // Strong but no digit: needs to look random (mixed case, long, high entropy).
      if p.digit == 0 && p.symbol == 0 && !(mixed && h >= 3.5) {
        return false;
      }
      true
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Generic high-entropy tokens

static ANTI_CONTEXT: WordSet = WordSet::new(&[
  "sha1",
  "sha2",
  "sha3",
  "sha5",
  "hash",
  "commit",
  "digest",
  "checksum",
  "md5",
  "etag",
  "integrity",
  "fingerprint",
  "revision",
  "uuid",
  "guid",
  "csrf",
  "xsrf",
  "authenticity",
  "nonce",
  "trace_id",
  "traceid",
  "trace-id",
  "span_id",
  "spanid",
  "request_id",
  "requestid",
  "request-id",
  "correlation",
  "public",
  "signature",
]);

/// Minimum entropy for a token redacted without any keyword nearby: close to what a random
/// base62/base64 string of that length reaches, so that identifiers and words stay.
/// (About the 5th percentile of random base62 strings of that length.) Longer runs without any
/// keyword are more often encoded data (images, serialized blobs) than credentials.
fn strong_threshold(len: usize) -> f64 {
  match len {
    32..=39 => 4.3,
    40..=47 => 4.5,
    48..=55 => 4.7,
    56..=64 => 4.85,
    _ => f64::INFINITY,
  }
}

/// A run of token characters (`[A-Za-z0-9+/_-]`, plus `=` padding) of 16 bytes or more: is it
/// a random-looking secret? Called by the engine's single pass over the text.
pub fn token_at(ctx: &mut Ctx, s: usize, e: usize) {
  let t = ctx.t;
  let mut a = s;
  let mut b = e;
  while a < b && matches!(t[a], b'-' | b'_' | b'/' | b'+') {
    a += 1;
  }
  while b > a && matches!(t[b - 1], b'-' | b'_' | b'/' | b'+') {
    b -= 1;
  }
  let v = &t[a..b];
  let len = v.len();
  if !(16..=512).contains(&len) {
    return;
  }
  // Cheap tests first: most long runs are identifiers, ids and hashes that fail them.
  let hex = is_single_case_hex(v);
  if hex && len < 20 || is_uuid(v) {
    return; // request ids, short hashes, UUIDs
  }
  let p = profile(v);
  if p.digit == 0 || p.upper + p.lower == 0 {
    return;
  }
  let mixed = p.upper > 0 && p.lower > 0;
  if !(if hex { len >= 20 } else { mixed || len >= 20 }) {
    return;
  }
  let h = entropy(v);
  let strong_shape = !hex && mixed && h >= strong_threshold(len);
  if !strong_shape && h < if hex { 3.0 } else { 3.5 } {
    return;
  }
  if provider_prefix_mismatch(v) || is_known_public(v) || ctx.in_public_zone(a) {
    return;
  }
  // Subresource integrity hashes and SSH public keys.
  if starts_with_any(v, &["sha1-", "sha256-", "sha384-", "sha512-", "AAAAB3Nza", "AAAAC3Nza", "AAAAE2VjZH"]) {
    return;
  }
  let context = match context_before(t, a) {
    Context::Anti => return,
    Context::Secret => true,
    Context::None => false,
  };
  let strong = strong_shape && delimited(t, a, b) && !keyword_before(t, a, 64, &BASE64_URI);
  if !(strong || context) {
    return;
  }
  if is_path_like(v) || is_placeholder(v) || is_wordy(v) || has_version(v) || inside_url(t, a) {
    return;
  }
  ctx.push(a, b, "high_entropy", "entropy", P_ENTROPY);
}

static BASE64_URI: WordSet = WordSet::new(&["base64,"]);

enum Context {
  /// A secret-naming identifier precedes the token (`api key 3f2a...`, `token: ...`).
  Secret,
  /// A hash / id / public identifier precedes it (`commit 3f2a...`, `csrf_token=...`).
  Anti,
  None,
}

/// Looks at up to three identifiers before `a` on its line (within 64 bytes), nearest first.
fn context_before(t: &[u8], a: usize) -> Context {
  let floor = line_start(t, a, 64);
  let mut i = a;
  for _ in 0..3 {
    while i > floor && !is_ident(t[i - 1]) {
      i -= 1;
    }
    let e = i;
    while i > floor && is_ident(t[i - 1]) {
      i -= 1;
    }
    if i == e {
      break;
    }
    let ident = &t[i..e];
    if ANTI_CONTEXT.in_text(ident) {
      return Context::Anti;
    }
    if classify_ident(ident).is_some() {
      return Context::Secret;
    }
  }
  Context::None
}

/// The token stands alone: start of text, whitespace, a quote or an assignment before it;
/// whitespace, a quote, punctuation that ends a value, or the end of the text after it.
fn delimited(t: &[u8], a: usize, b: usize) -> bool {
  let pre = before(t, a);
  let post = at(t, b);
  let pre_ok =
    pre.is_ascii_whitespace() || matches!(pre, b'"' | b'\'' | b'`' | b'=' | b':' | b'(' | b'[' | b'{' | b',' | b'>');
  let post_ok = post.is_ascii_whitespace()
    || matches!(post, b'"' | b'\'' | b'`' | b',' | b';' | b')' | b']' | b'}' | b'<')
    || (post == b'.' && (b + 1 >= t.len() || t[b + 1].is_ascii_whitespace()));
  pre_ok && post_ok
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn words_of_identifiers() {
    let w =
      |i: &str| ident_words(i.as_bytes()).iter().map(|w| String::from_utf8(w.to_vec()).unwrap()).collect::<Vec<_>>();
    assert_eq!(w("DB_PASSWORD"), ["db", "password"]);
    assert_eq!(w("alibabaToken"), ["alibaba", "token"]);
    assert_eq!(w("X-Api-Key"), ["x", "api", "key"]);
    assert_eq!(w("APIKey"), ["api", "key"]);
    assert_eq!(w("token3"), ["token", "3"]);
    assert_eq!(w("new-relicToken"), ["new", "relic", "token"]);
  }

  #[test]
  fn identifier_classes() {
    let s = |i: &str| classify_ident(i.as_bytes()).map(|c| c.strength);
    assert_eq!(s("DB_PASSWORD"), Some(Strength::Password));
    assert_eq!(s("alibabaToken"), Some(Strength::Strong));
    assert_eq!(s("sourcegraph"), Some(Strength::Provider));
    assert_eq!(s("api_key"), Some(Strength::Strong));
    assert_eq!(s("key"), Some(Strength::Weak));
    assert_eq!(s("public_key"), None);
    assert_eq!(s("max_tokens"), None);
    assert_eq!(s("token_type"), None);
    assert_eq!(s("SetSysctl"), None);
    assert_eq!(s("keyboard"), None);
  }
}
