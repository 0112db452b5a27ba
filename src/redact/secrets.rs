//! Secrets: private key blocks, JWTs, credentials in URLs and `curl -u`, `Bearer` tokens,
//! `password=` / `token:` style assignments (also `<add key="..." value="..."/>`), the
//! configuration files whose secrets follow no operator (`.netrc`, Kubernetes `kind: Secret`
//! manifests), and generic high-entropy tokens.

use super::catalogue::{
  fits_shape, may_name_provider_in, provider_span, providers, providers_named, IDENT_WORDS_MAX, MAX_KEYWORD,
};
use super::ctx::{Ctx, P_ENTROPY, P_JWT, P_PASSWORD, P_PRIVATE_KEY, P_SECRET, P_URL_CRED};
use super::engine::{ident_key, ident_slot};
use super::letters::{is_random_letters, MIN_RANDOM_LETTERS};
use super::placeholder::{is_non_secret_word, is_placeholder, is_placeholder_in_format};
use super::rules::{is_known_public, token_prefix_len};
use super::text::{
  at, before, entropy, has_version, is_ident, is_path_like, is_quote, is_uuid, is_wordy, keyword_before, line_end,
  line_start, profile, skip, skip_back, trim_quotes, word_at, word_before, work, Lexicon, Profile, WordSet,
};

// ---------------------------------------------------------------------------------------------
// Private keys

/// How far after a BEGIN line its END line is looked for.
const PEM_MAX: usize = 1 << 20;

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
  let Some(label_end) = find_within(t, h, 100, b"-----") else { return };
  let label = &t[h..label_end];
  if !label.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b' ' | b'_' | b'-')) {
    return;
  }
  let header_end = label_end + 5;
  let limit = (header_end + PEM_MAX).min(t.len());
  // The first END marker after the header (upper or lower case), from the memos: a text of many
  // BEGIN lines without END lines searches its tail once, not once per BEGIN.
  let upper = ctx.pem_end_upper.find(t, header_end);
  let lower = ctx.pem_end_lower.find(t, header_end);
  let end_marker = upper.into_iter().chain(lower).min().filter(|&m| m + 8 <= limit);
  let block_end = end_marker.map(|m| {
    // "-----END <label>-----"
    match find_within(t, m + 8, 100, b"-----") {
      Some(x) => x + 5,
      None => line_end(t, m, 200),
    }
  });
  if !contains_private(label) {
    let end = block_end.unwrap_or(header_end);
    ctx.add_public_zone(k, end);
    ctx.pem_until = end;
    return;
  }
  // A real body has base64 (`-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----` in
  // documentation does not); counting stops at 40.
  let body = &t[header_end..end_marker.unwrap_or(limit)];
  let mut b64 = 0;
  let scanned = body
    .iter()
    .position(|&b| {
      b64 += (b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')) as usize;
      b64 >= 40
    })
    .map_or(body.len(), |x| x + 1);
  work::add(scanned);
  if b64 < 40 {
    return;
  }
  let end = block_end.unwrap_or(t.len());
  ctx.pem_until = end;
  ctx.blocked = true;
  ctx.push(k, end, "private_key", "pattern", P_PRIVATE_KEY);
}

fn contains_private(label: &[u8]) -> bool {
  label.windows(7).any(|w| w.eq_ignore_ascii_case(b"private"))
}

/// Start of the first `needle` that lies within `max` bytes from `from`.
fn find_within(t: &[u8], from: usize, max: usize, needle: &[u8]) -> Option<usize> {
  let from = from.min(t.len());
  let window = &t[from..from.saturating_add(max).min(t.len())];
  work::add(window.len());
  memchr::memmem::find(window, needle).map(|x| from + x)
}

/// PuTTY private key files (`PuTTY-User-Key-File-2: ssh-rsa` ... `Private-MAC: ...`).
pub fn putty_at(ctx: &mut Ctx, k: usize) {
  let t = ctx.t;
  if k < ctx.putty_until {
    return;
  }
  let limit = (k + (1 << 16)).min(t.len());
  let within = |found: Option<usize>, len: usize| found.filter(|&x| x + len <= limit);
  if within(ctx.putty_lines.find(t, k), 14).is_none() {
    return; // no `Private-Lines:`
  }
  let mac = within(ctx.putty_mac.find(t, k), 12).map(|x| line_end(t, x, 200));
  let end = mac.unwrap_or(t.len());
  ctx.putty_until = end;
  ctx.blocked = true;
  ctx.push(k, end, "private_key", "pattern", P_PRIVATE_KEY);
}

// ---------------------------------------------------------------------------------------------
// JWT

/// Length of the run of base64url characters at `i`.
fn b64url_run(t: &[u8], i: usize) -> usize {
  skip(t, i, usize::MAX, |b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') - i
}

/// Called at every `eyJ` (exact case): `header.payload.signature`, signature possibly empty.
pub fn jwt_at(ctx: &mut Ctx, k: usize) {
  let t = ctx.t;
  if k < ctx.jwt_until || word_before(t, k) || before(t, k) == Some(b'-') {
    return;
  }
  let h = b64url_run(t, k);
  if h < 12 || at(t, k + h) != Some(b'.') {
    return;
  }
  let p0 = k + h + 1;
  if !t[p0..].starts_with(b"ey") {
    return;
  }
  let pl = b64url_run(t, p0);
  if pl < 12 || at(t, p0 + pl) != Some(b'.') {
    return;
  }
  let s0 = p0 + pl + 1;
  let sig = s0 + b64url_run(t, s0);
  let end = skip(t, sig, usize::MAX, |b| b == b'=');
  ctx.jwt_until = end;
  ctx.push(k, end, "jwt", "pattern", P_JWT);
}

// ---------------------------------------------------------------------------------------------
// URLs with credentials, curl -u, Bearer

/// Called at every `://`: `scheme://user:password@host` (database connection strings, git
/// remotes, proxies). The password is redacted; a token used as the user name is too.
pub fn url_at(ctx: &mut Ctx, k: usize) {
  let t = ctx.t;
  let s = skip_back(t, k, 32, |b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'));
  let a = k + 3;
  if s == k || !t[s].is_ascii_alphabetic() || a < ctx.url_until {
    return; // no scheme, or inside the credentials of the URL before
  }
  // Most URLs hold no `@`: when the next one lies past the longest URL looked at, the URL's end
  // need not be searched (a memo, so a text of many `://` reads each byte once here too).
  if ctx.url_next_at.find(t, a).is_none_or(|x| x >= a + 512) {
    return;
  }
  // The URL runs to a break, 512 bytes at most; its credentials end at its last `@`. (From the
  // memos: in a text of many `://`, no byte is searched once per URL.)
  let e = ctx.url_end.find(t, a).unwrap_or(t.len()).min(a + 512);
  let Some(at_sign) = ctx.url_at_sign.find(t, a, e) else { return };
  if !(at_sign + 1 < e && (t[at_sign + 1].is_ascii_alphanumeric() || t[at_sign + 1] == b'[')) {
    return; // no host after the `@`
  }
  let before_at = |found: Option<usize>, end: usize| found.is_some_and(|x| x < end);
  match ctx.url_colon.find(t, a).filter(|&c| c < at_sign) {
    Some(colon) => {
      if before_at(ctx.url_slash.find(t, a), colon) || before_at(ctx.url_query.find(t, a), colon) {
        return; // a path or a query before the `:`: not a user name
      }
      let pass = &t[colon + 1..at_sign];
      if pass.is_empty() || is_placeholder(pass) || is_non_secret_word(pass) {
        return;
      }
      // A user name that is itself a key (`https://a1b2c3d4:e5f6a7b8@gems.contribsys.com`, an
      // access key id) goes with the password.
      let user = &t[a..colon];
      let p = profile(user);
      let keyish = user.len() >= 8
        && p.digit > 0
        && p.upper + p.lower > 0
        && user.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !is_wordy(user);
      ctx.url_until = at_sign;
      ctx.push(if keyish { a } else { colon + 1 }, at_sign, "url_credentials", "pattern", P_URL_CRED);
    }
    None => {
      let userinfo = &t[a..at_sign];
      if before_at(ctx.url_slash.find(t, a), at_sign) || userinfo.len() < 16 {
        return;
      }
      let p = profile(userinfo);
      if p.digit > 0 && entropy(userinfo) >= 3.5 && !is_placeholder(userinfo) {
        ctx.url_until = at_sign;
        ctx.push(a, at_sign, "url_credentials", "pattern", P_URL_CRED);
      }
    }
  }
}

/// Called at every `curl`: `-u user:password` / `--user user:password` on the command line
/// (including backslash-continued lines).
pub fn curl_at(ctx: &mut Ctx, k: usize) {
  let t = ctx.t;
  if k < ctx.curl_until || word_before(t, k) || !matches!(at(t, k + 4), Some(b' ' | b'\t')) {
    return; // inside the command of an earlier `curl` (already scanned to its end), or not a command
  }
  // The command: this line and the lines its backslashes continue. Each turn moves to the next
  // line, so the loop ends; the line ends come from a memo, so no byte is searched twice.
  let mut end = ctx.next_line_end(k);
  while end < t.len() {
    let last = skip_back(t, end, end - k, |b| b == b' ' || b == b'\t');
    if last == k || t[last - 1] != b'\\' {
      break;
    }
    let next = if t[end] == b'\r' && at(t, end + 1) == Some(b'\n') { end + 2 } else { end + 1 };
    end = ctx.next_line_end(next);
  }
  ctx.curl_until = end;
  work::add(end - k);
  let mut i = k + 4;
  while i < end {
    let rest = &t[i..end];
    let flag_len = if rest.starts_with(b"-u") && !word_at(t, i + 2) && at(t, i + 2) != Some(b'-') {
      2
    } else if rest.starts_with(b"--user") && !word_at(t, i + 6) && at(t, i + 6) != Some(b'-') {
      6
    } else {
      i += 1;
      continue;
    };
    if !matches!(before(t, i), Some(b' ' | b'\t')) {
      i += 1;
      continue;
    }
    let mut v = i + flag_len;
    if at(t, v) == Some(b'=') {
      v += 1;
    }
    let v = skip(t, v, end.saturating_sub(v), |b| b == b' ' || b == b'\t');
    // The argument: up to the next unquoted blank.
    let mut e = v;
    let mut quote = None;
    while e < end {
      let b = t[e];
      match quote {
        Some(q) if b == q => quote = None,
        Some(_) => {}
        None if is_quote(b) => quote = Some(b),
        None if b == b' ' || b == b'\t' => break,
        None => {}
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
  if word_before(t, k) || !matches!(at(t, k + 6), Some(b' ' | b'\t')) {
    return;
  }
  let v = skip(t, k + 6, usize::MAX, |b| b == b' ' || b == b'\t');
  let e = skip(t, v, usize::MAX, |b| {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'+' | b'/' | b'-' | b'=')
  });
  let e = skip_back(t, e, e - v, |b| b == b'.');
  let tok = &t[v..e];
  if tok.len() < 8 || is_placeholder(tok) || is_non_secret_word(tok) || word_at(t, e) {
    return;
  }
  let p = profile(tok);
  if p.digit == 0 && entropy(tok) < 3.5 {
    return; // `Bearer authentication`, `bearer tokens`
  }
  ctx.push(v, e, "secret", "keyword", P_SECRET);
}

// ---------------------------------------------------------------------------------------------
// Configuration files whose secrets follow no `=` or `:`: `.netrc`, Kubernetes secrets

/// A `.netrc` value that is no secret of its own: empty, a placeholder, a variable.
fn netrc_secret(v: &[u8]) -> bool {
  !(v.is_empty() || v.starts_with(b"$") || is_placeholder(v) || is_non_secret_word(v))
}

/// Called at every `machine`: `.netrc` entries (`machine host login user password secret`, on one
/// line or several). The entry is read token by token up to the next `machine` or `default` (or
/// anything that is not a `.netrc` keyword), and no later trigger reads it again.
pub fn netrc_at(ctx: &mut Ctx, k: usize) {
  let t = ctx.t;
  if k < ctx.netrc_until || word_before(t, k) || !matches!(at(t, k + 7), Some(b' ' | b'\t')) {
    return;
  }
  let limit = (k + 2048).min(t.len());
  let next_token = |i: usize| {
    let s = skip(t, i, limit.saturating_sub(i), |b| b.is_ascii_whitespace());
    (s, skip(t, s, limit.saturating_sub(s), |b| !b.is_ascii_whitespace()))
  };
  let (hs, he) = next_token(k + 7); // the host
  let mut i = he;
  if hs == he {
    return;
  }
  // Each turn moves `i` past a keyword and its value, or stops.
  loop {
    let (ks, ke) = next_token(i);
    let key = &t[ks..ke];
    if !matches!(key, b"login" | b"password" | b"passwd" | b"account" | b"port") {
      // `machine`/`default` starts the next entry: a later trigger takes it from there.
      ctx.netrc_until = if ke > ks { ks } else { ke };
      return;
    }
    let (vs, ve) = next_token(ke);
    if vs == ve {
      ctx.netrc_until = ve;
      return;
    }
    if matches!(key, b"password" | b"passwd") && netrc_secret(&t[vs..ve]) {
      ctx.push(vs, ve, "password", "keyword", P_PASSWORD);
    }
    i = ve;
  }
}

/// Longest Kubernetes secret manifest looked at after its `kind: Secret`.
const K8S_MAX: usize = 1 << 16;

/// Called at every `kind`: a Kubernetes `kind: Secret` manifest (YAML). Every value of its
/// `data:` (base64) and `stringData:` blocks is redacted, block scalars (`key: |`) whole.
pub fn k8s_secret_at(ctx: &mut Ctx, k: usize) {
  let t = ctx.t;
  if k < ctx.k8s_until || word_before(t, k) {
    return;
  }
  let mut i = k + 4;
  if at(t, i).is_some_and(is_quote) {
    i += 1;
  }
  i = skip(t, i, 8, |b| b == b' ' || b == b'\t');
  if at(t, i) != Some(b':') {
    return;
  }
  i = skip(t, i + 1, 8, |b| b == b' ' || b == b'\t');
  if at(t, i).is_some_and(is_quote) {
    i += 1;
  }
  if t[i.min(t.len())..].starts_with(b"Config") && !word_at(t, i + 6) {
    kubeconfig_at(ctx, i + 6);
    return;
  }
  if !t[i.min(t.len())..].starts_with(b"Secret") || word_at(t, i + 6) {
    return;
  }
  let from = i + 6;
  // The `data:` / `stringData:` key (from the memo: many `kind: Secret` without one search the
  // rest of the text once).
  // Each turn looks at a later `ata:` (`metadata:` comes first); no later trigger looks at
  // these again.
  let mut search = from;
  let (d, key_start, line) = loop {
    let Some(d) = ctx.k8s_data.find(t, search).filter(|&d| d < from + K8S_MAX) else { return };
    ctx.k8s_until = d + 4;
    search = d + 1;
    let key_start = if d >= 7 && &t[d - 7..d] == b"stringD" {
      d - 7
    } else if d >= 1 && t[d - 1] == b'd' {
      d - 1
    } else {
      continue;
    };
    let line = line_start(t, key_start, 256);
    if t[line..key_start].iter().all(|&b| b == b' ') && t[d + 4..line_end(t, d + 4, 256)].iter().all(|&b| b == b' ') {
      break (d, key_start, line);
    }
  };
  let indent = key_start - line;
  let limit = (d + K8S_MAX).min(t.len());
  let mut pos = ctx.next_line_end(d + 4);
  // Each turn moves `pos` to the end of a later line.
  while pos < limit {
    let ls = pos + 1 + (t[pos] == b'\r' && at(t, pos + 1) == Some(b'\n')) as usize;
    let le = ctx.next_line_end(ls).min(limit);
    work::add(le - ls);
    let text_start = skip(t, ls, le - ls, |b| b == b' ');
    if text_start == le {
      pos = le; // a blank line
      continue;
    }
    let own = text_start - ls;
    if own <= indent || t[text_start] == b'#' {
      if own <= indent {
        break;
      }
      pos = le;
      continue;
    }
    // `key: value`
    let Some(colon) = t[text_start..le].iter().position(|&b| b == b':').map(|x| text_start + x) else {
      pos = le;
      continue;
    };
    let vs = skip(t, colon + 1, le - colon - 1, |b| b == b' ' || b == b'\t');
    let ve = skip_back(t, le, le - vs, |b| b == b' ' || b == b'\t');
    let v = trim_quotes(&t[vs..ve]);
    if matches!(v.first(), Some(b'|' | b'>')) {
      // A block scalar: the more indented lines after it.
      let mut end = le;
      let mut q = le;
      while q < limit {
        let ns = q + 1 + (t[q] == b'\r' && at(t, q + 1) == Some(b'\n')) as usize;
        let ne = ctx.next_line_end(ns).min(limit);
        work::add(ne - ns);
        let ts = skip(t, ns, ne - ns, |b| b == b' ');
        if ts < ne && ts - ns <= own {
          break;
        }
        if ts < ne {
          end = ne;
        }
        q = ne;
      }
      let body = skip(t, le, end - le, |b| b.is_ascii_whitespace());
      if end > body {
        ctx.push(body, end, "secret", "keyword", P_SECRET);
      }
      pos = end;
      continue;
    }
    let off = t[vs..ve].iter().take_while(|&&b| is_quote(b)).count();
    if !v.is_empty() && !v.starts_with(b"{{") && netrc_secret(v) {
      ctx.push(vs + off, vs + off + v.len(), "secret", "keyword", P_SECRET);
    }
    pos = le;
  }
  ctx.k8s_until = ctx.k8s_until.max(pos);
}

/// The keys of a kubeconfig whose values are credentials whatever their shape: `token`,
/// `password` and the `*-token` keys of auth providers (`id-token`, `refresh-token`,
/// `access-token`). (`client-key-data` is a private key in base64: a rule of `rules.rs`.)
const KUBECONFIG_KEYS: [&[u8]; 2] = [b"token", b"password"];

/// Longest kubeconfig value looked at.
const KUBECONFIG_VALUE: usize = 256;

/// After a kubeconfig's `kind: Config` (YAML or JSON, any order of keys, one line or many): the
/// values of [`KUBECONFIG_KEYS`] in the rest of the document (up to [`K8S_MAX`] bytes), which a
/// short password or token (`token: s3cr3t`) would otherwise pass as too plain to be a secret.
fn kubeconfig_at(ctx: &mut Ctx, from: usize) {
  let t = ctx.t;
  let limit = (from + K8S_MAX).min(t.len());
  ctx.k8s_until = limit;
  work::add(2 * (limit - from));
  for key in KUBECONFIG_KEYS {
    for x in memchr::memmem::find_iter(&t[from..limit], key) {
      let k = from + x;
      if !before(t, k).is_none_or(|b| b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'-' | b'{' | b',')) {
        continue;
      }
      let mut p = k + key.len();
      if at(t, p).is_some_and(is_quote) {
        p += 1;
      }
      p = skip(t, p, 8, |b| b == b' ' || b == b'\t');
      if at(t, p) != Some(b':') {
        continue;
      }
      p = skip(t, p + 1, 8, |b| b == b' ' || b == b'\t');
      // A value is at most [`KUBECONFIG_VALUE`] bytes (longer tokens are JWTs, which the JWT rule
      // finds): each key costs a bounded look, however many keys a line holds.
      let end = (p + KUBECONFIG_VALUE).min(limit);
      let (vs, ve) = match at(t, p) {
        Some(q) if is_quote(q) => {
          let s = p + 1;
          let e = t[s.min(end)..end].iter().position(|&b| b == q || b == b'\n').map_or(end, |x| s + x);
          (s.min(e), e)
        }
        _ => (p, skip(t, p, end.saturating_sub(p), |b| !b.is_ascii_whitespace() && !matches!(b, b',' | b'}' | b'"'))),
      };
      work::add(ve - vs);
      let v = &t[vs..ve];
      if !v.is_empty() && !v.starts_with(b"{{") && netrc_secret(v) {
        ctx.push(vs, ve, "secret", "keyword", P_SECRET);
      }
    }
  }
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

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct IdentClass {
  strength: Strength,
  provider: bool,
  /// The providers the identifier names (indices into the catalogue).
  named: &'static [usize],
  aws_secret: bool,
}

/// Words of an identifier, lowercased: `DB_PASSWORD` -> [db, password], `alibabaToken` ->
/// [alibaba, token], `X-Api-Key` -> [x, api, key], `token3` -> [token, 3]. No allocation.
struct Words {
  lower: [u8; IDENT_WORDS_MAX],
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
  /// These words without the words `s..e`.
  fn without(&self, s: usize, e: usize) -> Words {
    let mut w = Words { lower: self.lower, spans: [(0, 0); 24], n: 0 };
    for i in (0..self.n).filter(|&i| i < s || i >= e) {
      w.spans[w.n] = self.spans[i];
      w.n += 1;
    }
    w
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
  let mut w = Words { lower: [0; IDENT_WORDS_MAX], spans: [(0, 0); 24], n: 0 };
  let ident = &ident[..ident.len().min(IDENT_WORDS_MAX)];
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

/// Pieces one of which every identifier holds (in any case) that names a secret by its words,
/// without naming a provider: each word of [`PASSWORD_WORDS`], [`STRONG_WORDS`] and
/// [`WEAK_WORDS`], the endings [`classify_ident`] looks for and the words of its pairs (`key`,
/// `token`, `secret`) hold one (a test checks the lists).
static SECRET_PIECES: WordSet =
  WordSet::new(&["pw", "pass", "secret", "token", "key", "auth", "cred", "bearer", "sig", "session", "cookie", "hmac"]);

fn classify_ident(ident: &[u8]) -> Option<IdentClass> {
  classify_ident_with(ident, true)
}

/// [`classify_ident`]; `quick` answers `None` at once for an identifier that names no provider
/// and holds none of [`SECRET_PIECES`], as the full classification would (a random token or an
/// ordinary name: most of those asked, and the full one costs a few lexicon look-ups per word).
fn classify_ident_with(ident: &[u8], quick: bool) -> Option<IdentClass> {
  // The quick answer below, asked before the split into words when it can be: most identifiers
  // asked name no provider and hold no secret piece.
  if quick && !is_bundler_auth(ident) && !SECRET_PIECES.in_text(ident) && !may_name_provider_in(ident) {
    return None;
  }
  let all = ident_words(ident);
  if all.n == 0 {
    return None;
  }
  // Any provider of the catalogue, named by a word or by adjacent words (`NEW_RELIC_...`). The
  // words of its name are its name, not secret or anti words (`1password`, `page2images`).
  let span = provider_span(all.n, |i| all.get(i));
  if quick && span.is_none() && !is_bundler_auth(ident) && !SECRET_PIECES.in_text(ident) {
    return None;
  }
  let provider = span.is_some();
  let named = span.map_or(&[][..], |(s, e)| {
    let mut buf = [0u8; MAX_KEYWORD];
    let mut len = 0;
    for i in s..e {
      let w = all.get(i);
      buf[len..len + w.len()].copy_from_slice(w);
      len += w.len();
    }
    providers_named(&buf[..len])
  });
  let aws = all.iter().any(|w| w == b"aws");
  let words = match span {
    Some((s, e)) => all.without(s, e),
    None => all,
  };
  if words.n == 0 {
    return Some(IdentClass { strength: Strength::Provider, provider, named, aws_secret: false });
  }
  if words.has_any_of(&ANTI_WORDS) {
    return None;
  }
  let last = words.get(words.n - 1);
  // A provider's client or app id (`discord_client_id`, `adobeClientId`) is a credential half,
  // unlike ids in general.
  let provider_id = last == b"id"
    && words.n >= 2
    && in_set(&["client", "app", "application", "access"], words.get(words.n - 2))
    && provider;
  if META_WORDS.contains(last) && !provider_id {
    return None;
  }
  let pair = |i: usize, a: &[&str], b: &str| in_set(a, words.get(i)) && words.get(i + 1) == b.as_bytes();
  let pairs = |a: &[&str], b: &str| (0..words.n.saturating_sub(1)).any(|i| pair(i, a, b));
  let aws_secret = aws && (words.has(&["secret"]) || pairs(&["access"], "key"));
  let ends_with_any =
    |suffixes: &[&str]| words.iter().any(|w| suffixes.iter().any(|s| w.len() > s.len() && w.ends_with(s.as_bytes())));
  // `_auth` of `.npmrc` holds base64 of `user:password`; so do Bundler's per-host variables
  // (`BUNDLE_GEMS__CONTRIBSYS__COM`).
  let npm_auth =
    (ident.ends_with(b"_auth") && (ident.len() == 5 || ident.ends_with(b":_auth"))) || is_bundler_auth(ident);
  let strength = if words.has(PASSWORD_WORDS) || ends_with_any(&["password", "passwd", "pwd"]) {
    Strength::Password
  } else if npm_auth
    || words.has_any_of(&STRONG_WORDS)
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
  Some(IdentClass { strength, provider, named, aws_secret })
}

/// Bundler's per-host credential variable (`BUNDLE_GEMS__CONTRIBSYS__COM`).
fn is_bundler_auth(ident: &[u8]) -> bool {
  ident.starts_with(b"BUNDLE_") && ident.ends_with(b"__COM")
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
  indexed_path(v)
}

/// An identifier path indexed by string literals or numbers: `request.json_body['hey']`,
/// `os.environ["TOKEN"]`, `argv[1]` (a password of brackets, `Pa55[w0rd]`, has neither).
fn indexed_path(v: &[u8]) -> bool {
  let Some(open) = v.iter().position(|&b| b == b'[') else { return false };
  let head = &v[..open];
  if !head.first().is_some_and(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'$'))
    || !head.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'$'))
  {
    return false;
  }
  // An unquoted value ends at the index's quote (`request.json_body[`).
  if open + 1 == v.len() {
    return head.iter().any(|&b| matches!(b, b'.' | b'_'));
  }
  // Each turn reads one `[...]` index; the value must be nothing else to its end.
  let mut i = open;
  while i < v.len() {
    if v[i] != b'[' {
      return false;
    }
    let Some(close) = v[i..].iter().position(|&b| b == b']').map(|x| i + x) else { return false };
    let inner = &v[i + 1..close];
    let literal = inner.len() >= 2 && is_quote(inner[0]) && inner[inner.len() - 1] == inner[0];
    if !(literal || (!inner.is_empty() && inner.iter().all(u8::is_ascii_digit))) {
      return false;
    }
    i = close + 1;
  }
  true
}

const SCHEMES: &[&str] =
  &["bearer", "basic", "token", "bot", "digest", "negotiate", "apikey", "api-key", "key", "sso-key"];

/// Called for an identifier `t[a..b]` that is followed by an assignment operator (`password=`,
/// `"token": "..."`, `--api-key ...`, `<password>...`, `password is ...`): parses the operator
/// and the value and decides by the identifier's words and the value's shape.
pub fn assignment_on(ctx: &mut Ctx, a: usize, b: usize) {
  let t = ctx.t;
  let ident = &t[a..b];
  let key_quoted = before(t, a).is_some_and(is_quote);
  let xml = before(t, a) == Some(b'<');
  let cli = ident.starts_with(b"-");

  // Operator.
  let mut p = b;
  if at(t, p).is_some_and(is_quote) {
    p += 1;
  } else if at(t, p) == Some(b'\\') && at(t, p + 1).is_some_and(is_quote) {
    p += 2;
  }
  let op_start = p;
  p = skip(t, p, 8, |b| b == b' ' || b == b'\t');
  let spaced = p > op_start;
  let mut prose = false;
  let Some(op) = at(t, p) else { return };
  match op {
    b'=' => p = skip(t, p + 1, 16, |b| b == b'=' || b == b'>'),
    b':' if t[p..].starts_with(b"::=") || t[p..].starts_with(b":::=") => {
      p = skip(t, p, 3, |b| b == b':') + 1; // make's `::=` and `:::=`
    }
    b':' => {
      if at(t, p + 1) == Some(b':') {
        return; // `Token::new`
      }
      p += 1;
      if at(t, p) == Some(b'=') {
        p += 1;
      }
    }
    b'>' if xml => p += 1,
    b',' if key_quoted => p += 1,
    b'?' | b'|' if at(t, p + 1) == Some(b'=') || t[p + 1..].starts_with(b"|=") => {
      p = skip(t, p, 8, |b| matches!(b, b'?' | b'|' | b'='));
    }
    c if cli && spaced && !matches!(c, b'-' | b'\n' | b'\r') => {}
    _ if spaced && (t[p..].starts_with(b"is ") || t[p..].starts_with(b"was ") || t[p..].starts_with(b"= ")) => {
      prose = true;
      p += if op == b'w' { 3 } else { 2 };
    }
    _ => return,
  }
  p = skip(t, p, 24usize.saturating_sub(p - op_start), |b| matches!(b, b' ' | b'\t' | b'*'));
  let Some((mut vs, mut ve, mut quoted)) = value_span(ctx, p) else { return };
  let mut basic_auth = false;
  // `Authorization: Bearer <token>`, `Authorization: Basic <b64>`, `token ghp_...`
  if !quoted
    && SCHEMES.iter().any(|s| t[vs..ve].eq_ignore_ascii_case(s.as_bytes()))
    && matches!(at(t, ve), Some(b' ' | b'\t'))
  {
    basic_auth = t[vs..ve].eq_ignore_ascii_case(b"basic");
    let q = skip(t, ve, 64, |b| b == b' ' || b == b'\t');
    match value_span(ctx, q) {
      Some(v) => (vs, ve, quoted) = v,
      None => return,
    }
  }
  let mut ident = ident;
  // `<add key="ClearTextPassword" value="..." />` (nuget.config, .NET appSettings): the name is
  // the value of `key`, the secret that of `value` after it.
  if quoted && ident.eq_ignore_ascii_case(b"key") {
    if let Some((xs, xe)) = xml_value_after(ctx, ve + 1) {
      ident = &t[vs..ve];
      (vs, ve) = (xs, xe);
    }
  }
  // `token = ' <value> '`: blanks just inside the quotes are no part of the value.
  if quoted {
    let s = skip(t, vs, ve - vs, |b| b == b' ' || b == b'\t');
    let e = skip_back(t, ve, ve - s, |b| b == b' ' || b == b'\t');
    if e > s {
      (vs, ve) = (s, e);
    }
  }
  let v = &t[vs..ve];
  // A plain word that is no secret (`token: key`, `password = null`) is refused below whatever
  // the identifier says, so it is refused before the identifier's words are read: a text of such
  // assignments cost five times ordinary text. (Not after `Basic`, whose value is taken as it
  // stands, nor when a provider's rule may widen the span; asked of short values starting with a
  // letter only, so that numbers and tokens meet the word list once, in `accept_value`.)
  if !basic_auth
    && v.len() <= 12
    && v.first().is_some_and(u8::is_ascii_alphabetic)
    && is_non_secret_word(v)
    && !provider_prefix_mismatch(v)
  {
    return;
  }
  // Only now (most keyword hits have no operator and value) look at the identifier's words.
  // Remembered per identifier (keys repeat: every record of a JSON array names the same ones).
  let Some(mut class) = context_word(ident).class else { return };
  if !class.provider && ident.as_ptr() == t[a..].as_ptr() {
    // The words before it on the line read with it (`lokalise api key:` is a provider's API key).
    if let Some(c) = provider_before(t, a, b).filter(|c| c.provider) {
      class = c;
    }
  }
  if class.strength == Strength::Weak && !class.provider && provider_named_before(t, a) {
    // `Sending request to the <provider> API` / `Using Key=...`: a bare `key` or `auth` that a
    // provider named just before (on its line or the one above) qualifies.
    class = IdentClass { strength: Strength::Provider, provider: true, named: &[], aws_secret: false };
  }
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

/// `paystack token = '...'`, `Lokalise API key: ...`: the identifier read together with the words
/// before it on its line (up to three, each separated from the next by blanks, within 48 bytes),
/// when there are any.
fn provider_before(t: &[u8], a: usize, b: usize) -> Option<IdentClass> {
  let floor = line_start(t, a, 48);
  let mut s = a;
  // Each turn moves `s` back past one blank-separated word, or stops.
  for _ in 0..3 {
    let e = skip_back(t, s, s - floor, |c| c == b' ' || c == b'\t');
    if e == s {
      break;
    }
    let w = skip_back(t, e, e - floor, |c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
    if w == e {
      break;
    }
    s = w;
  }
  if s == a {
    return None;
  }
  work::add(b - s);
  classify_ident(&t[s..b])
}

/// How far before an identifier [`provider_named_before`] looks (on its line and the one above).
const PROVIDER_BEFORE: usize = 96;

/// Is a provider named, by a word that is nothing but its name, within [`PROVIDER_BEFORE`] bytes
/// before `a`, on `a`'s line or the line above it?
fn provider_named_before(t: &[u8], a: usize) -> bool {
  let mut floor = a.saturating_sub(PROVIDER_BEFORE);
  // Two lines at most: the floor moves up to the start of the line above.
  if let Some(nl) = t[floor..a].iter().rposition(|&b| b == b'\n') {
    if let Some(nl2) = t[floor..floor + nl].iter().rposition(|&b| b == b'\n') {
      floor += nl2 + 1;
    }
  }
  work::add(a - floor);
  let mut i = a;
  // Each turn moves `i` back past one identifier, or stops.
  for _ in 0..16 {
    let e = skip_back(t, i, i - floor, |b| !is_ident(b));
    i = skip_back(t, e, e - floor, is_ident);
    if i == e {
      return false;
    }
    if context_word(&t[i..e]).class.is_some_and(|c| c.provider && c.strength == Strength::Provider) {
      return true;
    }
  }
  false
}

/// The quoted value of a `value="..."` attribute right after position `p` (blanks between).
fn xml_value_after(ctx: &mut Ctx, p: usize) -> Option<(usize, usize)> {
  let t = ctx.t;
  let p = skip(t, p, 8, |b| b == b' ' || b == b'\t');
  if !(t[p.min(t.len())..].len() >= 6 && t[p..p + 6].eq_ignore_ascii_case(b"value=")) {
    return None;
  }
  match value_span(ctx, p + 6) {
    Some((s, e, true)) => Some((s, e)),
    _ => None,
  }
}

/// Longest value looked at.
const VALUE_MAX: usize = 1024;
/// Values of nested assignments that end at one place (`a=b=c=...`) looked at: more are no
/// real text, and each would cost the length of the value again.
const CHAIN_MAX: u32 = 8;

/// The value starting at `p`: a quoted string (also `\"...\"` inside JSON strings) or a run up
/// to whitespace or a delimiter. Returns (start, end, quoted).
fn value_span(ctx: &mut Ctx, p: usize) -> Option<(usize, usize, bool)> {
  let t = ctx.t;
  let q = at(t, p)?;
  let escaped = q == b'\\' && at(t, p + 1).is_some_and(is_quote);
  if !(is_quote(q) || escaped) {
    return unquoted(ctx, p).map(|(s, e)| (s, e, false));
  }
  let (quote, s) = if escaped { (t[p + 1], p + 2) } else { (q, p + 1) };
  let limit = (s + VALUE_MAX).min(t.len());
  let mut e = s;
  // Each turn moves `e` on by one or two bytes.
  while e < limit {
    let b = t[e];
    if b == b'\n' || b == b'\r' {
      break;
    }
    if b == quote && !(escaped && t[e - 1] != b'\\') {
      work::add(e - s);
      let end = if escaped { e - 1 } else { e };
      return if end > s { Some((s, end, true)) } else { None };
    }
    e += if !escaped && b == b'\\' { 2 } else { 1 };
  }
  work::add(e - s);
  // No closing quote: fall through and read it unquoted after the quote.
  unquoted(ctx, s).map(|(s, e)| (s, e, false))
}

/// The unquoted value at `s`: up to whitespace, a delimiter or an escape sequence (from the
/// memo, so the values of nested assignments do not search their common end again), without
/// trailing `.` and `:` (but for the final `.` of an unsigned JWT).
fn unquoted(ctx: &mut Ctx, s: usize) -> Option<(usize, usize)> {
  let t = ctx.t;
  let stop = ctx.value_end.find(t, s).unwrap_or(t.len());
  if stop - s > VALUE_MAX {
    return None; // no value is this long (`accept_value` would refuse it)
  }
  if ctx.value_chain.0 == stop {
    ctx.value_chain.1 += 1;
    if ctx.value_chain.1 > CHAIN_MAX {
      return None;
    }
  } else {
    ctx.value_chain = (stop, 1);
  }
  let mut e = skip_back(t, stop, stop - s, |b| b == b'.' || b == b':');
  // An unsigned JWT (`header.payload.`) ends with its separator: part of the token.
  if e + 1 == stop && t[e] == b'.' && unsigned_jwt(&t[s..stop]) {
    e = stop;
  }
  (e > s).then_some((s, e))
}

/// `ey<base64url>.ey<base64url>.`: two JWT segments and the empty signature.
fn unsigned_jwt(v: &[u8]) -> bool {
  let Some(body) = v.strip_suffix(b".") else { return false };
  let mut parts = body.split(|&b| b == b'.');
  let seg = |p: Option<&[u8]>| {
    p.is_some_and(|p| {
      p.len() >= 10 && p.starts_with(b"ey") && p.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    })
  };
  seg(parts.next()) && seg(parts.next()) && parts.next().is_none()
}

fn provider_prefix_mismatch(v: &[u8]) -> bool {
  token_prefix_len(v) > 0
}

/// `<digits>:A...`, the start of a Telegram bot token (`<bot id>:A<34>`): its rule, run at every
/// `:A` after a digit, finds the token; a value that starts so but that rule refuses (a bot id
/// of 4 or 17 digits, 35 characters or 39 after the `A`) is no token of another kind.
fn colon_token_mismatch(v: &[u8]) -> bool {
  let digits = v.iter().take_while(|b| b.is_ascii_digit()).count();
  (1..=20).contains(&digits) && v[digits..].starts_with(b":A")
}

fn accept_value(v: &[u8], quoted: bool, prose: bool, class: &IdentClass, ident: &[u8]) -> bool {
  let len = v.len();
  work::add(len);
  if !(3..=1000).contains(&len) || v.contains(&b'\n') {
    return false;
  }
  // The cheap tests first (the placeholder test reads the value piece by piece).
  if is_non_secret_word(v) || provider_prefix_mismatch(v) || colon_token_mismatch(v) {
    return false;
  }
  let p = profile(v);
  let h = entropy(v);
  let letters = p.upper + p.lower;
  if class.strength != Strength::Password && !low_entropy_pass(v, &p, h, class) {
    return false;
  }
  // A value in the exact shape the named provider documents is judged as a token of that format.
  let in_format = class.named.iter().any(|&i| fits_shape(&providers()[i], v));
  if if in_format { is_placeholder_in_format(v) } else { is_placeholder(v) } {
    return false;
  }
  if memchr::memmem::find(v, b"://").is_some() || is_path_like(v) {
    return false;
  }
  // A file name (`id_rsa.pub`, `service-account.json`).
  for ext in
    [&b".pem"[..], b".key", b".crt", b".json", b".txt", b".p12", b".pfx", b".env", b".yaml", b".yml", b".pub", b".gpg"]
  {
    if len >= ext.len() && v[len - ext.len()..].eq_ignore_ascii_case(ext) {
      return false;
    }
  }
  if !quoted && code_like(v) {
    return false;
  }
  match class.strength {
    Strength::Password => {
      if len < 4 || (p.space > 0 && !quoted) {
        return false;
      }
      // Random letters are a password, not a word or a variable, however introduced.
      let random_letters = len >= MIN_RANDOM_LETTERS && is_random_letters(v);
      if prose && p.digit == 0 && p.symbol == 0 && !random_letters {
        return false; // "the password is correct"
      }
      if !quoted
        && p.digit == 0
        && p.symbol == 0
        && p.upper > 0
        && p.lower > 0
        && !ident.iter().all(|b| !b.is_ascii_lowercase())
        && !random_letters
      {
        return false; // `password: userPassword` (a variable)
      }
      true
    }
    Strength::Strong | Strength::Provider | Strength::Weak => {
      // Letters only, long enough to tell: the letter-pair measure below decides whether they
      // read as words, not the vowel count of `is_wordy`, which random mixed case can pass.
      let letters_only = len >= MIN_RANDOM_LETTERS && letters == len;
      if p.space > 0 || p.other > 0 || (is_wordy(v) && !letters_only) || has_version(v) {
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
      let (min_len, min_h) = min_len_entropy(&p, class);
      if len < min_len || h < min_h {
        return false;
      }
      // Letters only, long enough to tell: random ones are a key of a letters-only format
      // (`[a-z]{32}`, `[A-Za-z]{40}`), as much a secret as one with digits; words and
      // identifiers (`getElementsByTagName`) are none, whatever their entropy.
      if letters_only {
        return is_random_letters(v);
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

/// The shortest length and lowest entropy [`accept_value`] takes from a value with letters after
/// an identifier of `class` (not a password).
fn min_len_entropy(p: &Profile, class: &IdentClass) -> (usize, f64) {
  let mixed = p.upper > 0 && p.lower > 0;
  match class.strength {
    Strength::Strong if class.provider => (10, 2.8),
    Strength::Strong if mixed || p.symbol > 0 => (16, 3.0),
    Strength::Strong => (20, 3.0),
    Strength::Provider => (12, 3.0),
    _ => (20, 3.5),
  }
}

/// The refusals of [`accept_value`] for a value after a non-password identifier that need only
/// its profile and entropy (blanks, non-ASCII, too short or too even for the identifier), asked
/// before the placeholder, path and code tests: the values of nested assignments that end at one
/// place (`key=key=...`, up to `CHAIN_MAX` of 1,000 bytes each) read as words piece by piece in
/// the placeholder test, a third of the time of such a text, though their entropy refuses them.
/// `false` only where `accept_value` returns `false` later: everything it returns before these
/// tests is `false`, and the two answers it may give before the length and entropy test (a UUID,
/// digits only) are left to it.
fn low_entropy_pass(v: &[u8], p: &Profile, h: f64, class: &IdentClass) -> bool {
  if p.space > 0 || p.other > 0 {
    return false;
  }
  if p.upper + p.lower == 0 || is_uuid(v) {
    return true;
  }
  let (min_len, min_h) = min_len_entropy(p, class);
  v.len() >= min_len && h >= min_h
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
  let sep = |b: u8| matches!(b, b'-' | b'_' | b'/' | b'+');
  let a = skip(t, s, e - s, sep);
  let b = skip_back(t, e, e - a, sep);
  let v = &t[a..b];
  let len = v.len();
  if !(16..=512).contains(&len) {
    return;
  }
  // The part after the colon of a `<digits>:A...` Telegram-shaped value: its rule decides.
  if v[0] == b'A' && before(t, a) == Some(b':') && a >= 2 && t[a - 2].is_ascii_digit() {
    return;
  }
  // Cheap tests first: most long runs are identifiers, ids and hashes that fail them. One pass
  // counts the classes and tells single-case hex apart, from a table: a branch per byte on
  // random-looking runs (hashes, ids) was mispredicted about every other byte.
  let mut acc = 0u64;
  work::add(len);
  for &b in v {
    acc += CLASS_COUNT[b as usize];
  }
  let field = |k: u32| ((acc >> (10 * k)) & 0x3ff) as usize;
  let (upper, lower, digit) = (field(0), field(1), field(2));
  // No byte outside `[0-9a-f]`, or none outside `[0-9A-F]`.
  let (lower_hex, upper_hex) = (field(3) == 0, field(4) == 0);
  let uuid = len == 36 && is_uuid(v);
  // A UUID is hex in groups: judged as hex (its dashes are no alphabet of their own).
  let hex = lower_hex || upper_hex || uuid;
  if hex && len < 20 || (uuid && !uuid_named_secret(t, a)) {
    return; // request ids, short hashes, UUIDs
  }
  if digit == 0 || upper + lower == 0 {
    return;
  }
  let mixed = upper > 0 && lower > 0;
  if !(if hex { len >= 20 } else { mixed || len >= 20 }) {
    return;
  }
  // Hex never has the strong shape: only a secret-naming identifier before it can make it one.
  // Most hex runs are commit hashes and request ids without one, so that is asked first.
  if hex && !matches!(context_before(t, a), Context::Secret) {
    return;
  }
  let h = entropy(v);
  let strong_shape = !hex && mixed && h >= strong_threshold(len);
  if !strong_shape && h < if hex { 3.0 } else { 3.5 } {
    return;
  }
  if provider_prefix_mismatch(v) || is_known_public(v) || ctx.in_public_zone(a) || continues_prefix(t, a) {
    return;
  }
  // Subresource integrity hashes and SSH public keys.
  if starts_with_any(v, &["sha1-", "sha256-", "sha384-", "sha512-", "AAAAB3Nza", "AAAAC3Nza", "AAAAE2VjZH"]) {
    return;
  }
  // A path is never one (and is cheaper to tell than the context).
  if is_path_like(v) {
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
  if is_placeholder(v) || is_wordy(v) || has_version(v) || ctx.url_for_tokens.inside_url(t, a) {
    return;
  }
  // Separators trimmed from the ends belong to the value when the run stands alone (`'-Ab3..'`):
  // a secret character is never left in clear next to its redaction.
  let (a, b) = if delimited(t, s, e) { (s, e) } else { (a, b) };
  ctx.push(a, b, "high_entropy", "entropy", P_ENTROPY);
}

/// A run of letters only (no digit, no `-/+`) of 16 bytes or more: a secret when its letters are
/// random (see `letters.rs`) and a secret-naming identifier precedes it on its line
/// (`zendesk token <letters>`), the prose form [`token_at`] catches for values with digits.
/// Called by the engine's single pass over the text.
pub fn letters_at(ctx: &mut Ctx, s: usize, e: usize) {
  let t = ctx.t;
  let v = &t[s..e];
  if v.len() > 512 || !is_random_letters(v) {
    return;
  }
  if !matches!(context_before(t, s), Context::Secret) {
    return;
  }
  // Not one letter repeated or a pair of letters over and over (`qzqzqz...`).
  if entropy(v) < 3.0
    || is_placeholder(v)
    || is_non_secret_word(v)
    || is_known_public(v)
    || ctx.in_public_zone(s)
    || continues_prefix(t, s)
    || ctx.url_for_tokens.inside_url(t, s)
  {
    return;
  }
  ctx.push(s, e, "high_entropy", "entropy", P_ENTROPY);
}

/// Does the run at `a` continue a known token prefix across a `.` (`dt0c01.<id>.<secret>`,
/// `hvs.<...>`)? Then it is that format's part, and the format's rule decides on it: a malformed
/// token of a known format is no generic secret either.
fn continues_prefix(t: &[u8], a: usize) -> bool {
  if before(t, a) != Some(b'.') {
    return false;
  }
  let w = skip_back(t, a, 80, |b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'~'));
  let n = token_prefix_len(&t[w..]);
  n > 0 && w + n <= a
}

/// Per byte, what [`token_at`] counts, in five 10-bit fields of a `u64`, which a run of at most
/// 512 bytes cannot overflow: uppercase letters, lowercase letters, digits, bytes outside
/// `[0-9a-f]` and bytes outside `[0-9A-F]`.
static CLASS_COUNT: [u64; 256] = {
  let mut c = [0u64; 256];
  let mut i = 0;
  while i < 256 {
    let b = i as u8;
    let (not_lower_hex, not_upper_hex) = (1u64 << 30, 1u64 << 40);
    c[i] = match b {
      b'0'..=b'9' => 1 << 20,
      b'a'..=b'f' => (1 << 10) | not_upper_hex,
      b'g'..=b'z' => (1 << 10) | not_lower_hex | not_upper_hex,
      b'A'..=b'F' => 1 | not_lower_hex,
      b'G'..=b'Z' => 1 | not_lower_hex | not_upper_hex,
      _ => not_lower_hex | not_upper_hex,
    };
    i += 1;
  }
  c
};

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
    let e = skip_back(t, i, i - floor, |b| !is_ident(b));
    i = skip_back(t, e, e - floor, is_ident);
    if i == e {
      break;
    }
    let info = context_word(&t[i..e]);
    if info.anti {
      return Context::Anti;
    }
    if info.class.is_some() {
      return Context::Secret;
    }
  }
  Context::None
}

/// What the token checks ask of an identifier before a candidate: does it name a hash or an id
/// (`commit`, `sha256`), and how does it name a secret.
#[derive(Clone, Copy)]
struct ContextWord {
  anti: bool,
  class: Option<IdentClass>,
}

const WORD_SLOTS: usize = 256;

/// A direct-mapped memo of [`context_word`] per thread: the words before candidates repeat
/// (the same prose and code words line after line), and classifying one costs a few hundred ns
/// (its words split out, several lexicons looked up), several times a hash or a UUID. Keyed
/// like the engine's identifier memo (length and four words, up to 32 bytes): a text of
/// repeated `PuTTY-User-Key-File-2: ` headers asks for four identifiers per header, and hashing
/// them a byte at a time was a fifth of its time.
struct WordCache {
  /// Length 0 marks an empty slot: identifiers are never empty.
  keys: [(usize, [u64; 4]); WORD_SLOTS],
  vals: [ContextWord; WORD_SLOTS],
}

thread_local! {
  static WORD_CACHE: std::cell::RefCell<WordCache> = const {
    std::cell::RefCell::new(WordCache {
      keys: [(0, [0; 4]); WORD_SLOTS],
      vals: [ContextWord { anti: false, class: None }; WORD_SLOTS],
    })
  };
}

/// [`ANTI_CONTEXT`] and [`classify_ident`] of `ident`, remembered (both depend on its bytes only).
fn context_word(ident: &[u8]) -> ContextWord {
  let compute = |ident: &[u8]| {
    let class = classify_ident(ident);
    // A provider's name is no hash or id word even when one is inside it (`nicehash`).
    let name_only = class.is_some_and(|c| c.provider && c.strength == Strength::Provider);
    ContextWord { anti: !name_only && ANTI_CONTEXT.in_text(ident), class }
  };
  let Some(key) = ident_key(ident) else { return compute(ident) };
  let slot = ident_slot(&key) % WORD_SLOTS;
  WORD_CACHE.with(|cache| {
    let mut c = cache.borrow_mut();
    if c.keys[slot] == key {
      return c.vals[slot];
    }
    let v = compute(ident);
    c.keys[slot] = key;
    c.vals[slot] = v;
    v
  })
}

/// A UUID is an id, unless the words just before it on its line name a credential more strongly
/// than `key` alone (`heroku api key <uuid>`, `snyk token <uuid>`; not `request key <uuid>`).
fn uuid_named_secret(t: &[u8], a: usize) -> bool {
  let floor = line_start(t, a, 64);
  let mut i = a;
  let mut weak = false;
  for _ in 0..3 {
    let e = skip_back(t, i, i - floor, |b| !is_ident(b));
    i = skip_back(t, e, e - floor, is_ident);
    if i == e {
      break;
    }
    let ident = &t[i..e];
    let info = context_word(ident);
    if info.anti {
      return false;
    }
    match info.class {
      Some(c) if c.strength != Strength::Weak || c.provider => return true,
      Some(_) => weak = true,
      None if weak && ident.eq_ignore_ascii_case(b"api") => return true,
      None => {}
    }
  }
  false
}

/// The token stands alone: start of text, whitespace, a quote or an assignment before it;
/// whitespace, a quote, punctuation that ends a value, or the end of the text after it.
fn delimited(t: &[u8], a: usize, b: usize) -> bool {
  // The edges of the text count as whitespace.
  let pre_ok = before(t, a).is_none_or(|pre| {
    pre.is_ascii_whitespace() || matches!(pre, b'"' | b'\'' | b'`' | b'=' | b':' | b'(' | b'[' | b'{' | b',' | b'>')
  });
  let post_ok = at(t, b).is_none_or(|post| {
    post.is_ascii_whitespace()
      || matches!(post, b'"' | b'\'' | b'`' | b',' | b';' | b')' | b']' | b'}' | b'<')
      || (post == b'.' && at(t, b + 1).is_none_or(|c| c.is_ascii_whitespace()))
  });
  pre_ok && post_ok
}

#[cfg(test)]
mod tests {
  use super::{classify_ident, code_like, context_word, ident_words, Strength, ANTI_CONTEXT, CLASS_COUNT};
  use super::{
    classify_ident_with, ANTI_WORDS, KEY_PAIRS, META_WORDS, PASSWORD_WORDS, SECRET_PIECES, STRONG_WORDS, WEAK_WORDS,
  };
  use crate::redact::catalogue::providers;
  use crate::redact::testing::Rng;

  /// Every word the classification takes as naming a secret holds one of the pieces its quick
  /// refusal looks for.
  #[test]
  fn every_secret_word_holds_a_piece() {
    let words = PASSWORD_WORDS.iter().chain(STRONG_WORDS.words()).chain(WEAK_WORDS);
    for w in words.chain(&["key", "token", "secret", "password", "passwd", "pwd", "x_auth"]) {
      assert!(SECRET_PIECES.in_text(w.as_bytes()), "{w}");
    }
  }

  /// The quick refusal answers as the full classification on identifiers made of the lists'
  /// words, provider names, random letters and digits, in every case and joined every way.
  #[test]
  fn quick_refusal_answers_as_the_full_classification() {
    let mut pieces: Vec<String> = PASSWORD_WORDS
      .iter()
      .chain(STRONG_WORDS.words())
      .chain(WEAK_WORDS)
      .chain(KEY_PAIRS)
      .chain(ANTI_WORDS.words())
      .chain(META_WORDS.words())
      .chain(&["id", "client", "app", "aws", "api", "BUNDLE", "COM", "auth"])
      .map(|w| w.to_string())
      .collect();
    pieces.extend(providers().iter().step_by(7).flat_map(|p| p.keywords.iter().map(|k| k.to_string())));
    let mut rng = Rng(0x1d3a);
    let (mut some, mut none) = (0, 0);
    for _ in 0..60_000 {
      let mut ident = String::new();
      for k in 0..1 + rng.below(4) {
        if k > 0 {
          let separator: &&str = rng.pick(&["_", "-", ".", "", "__", ":"]);
          ident.push_str(separator);
        }
        let piece = match rng.below(4) {
          0 => {
            let n = 1 + rng.below(40);
            rng.chars("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", n)
          }
          1 => {
            let n = 1 + rng.below(3);
            rng.digits(n)
          }
          _ => rng.pick(&pieces).clone(),
        };
        let piece = match rng.below(3) {
          0 => piece.to_uppercase(),
          1 => piece[..1].to_uppercase() + &piece[1..],
          _ => piece,
        };
        ident.push_str(&piece);
      }
      let full = classify_ident_with(ident.as_bytes(), false);
      assert_eq!(classify_ident_with(ident.as_bytes(), true), full, "{ident}");
      if full.is_some() {
        some += 1;
      } else {
        none += 1;
      }
    }
    // Both answers are common, so the comparison says something.
    assert!(some > 10_000 && none > 10_000, "{some} named, {none} not");
  }

  /// The table `token_at` counts with: its fields hold the longest run it counts (512 bytes) of
  /// any byte without spilling into the next field.
  #[test]
  fn class_count_table() {
    for b in 0..=255u8 {
      let acc = CLASS_COUNT[b as usize] * 512;
      let field = |k: u32| (acc >> (10 * k)) & 0x3ff;
      let expect = [
        b.is_ascii_uppercase(),
        b.is_ascii_lowercase(),
        b.is_ascii_digit(),
        !matches!(b, b'0'..=b'9' | b'a'..=b'f'),
        !matches!(b, b'0'..=b'9' | b'A'..=b'F'),
      ];
      for (k, &e) in expect.iter().enumerate() {
        assert_eq!(field(k as u32), if e { 512 } else { 0 }, "byte {b}, field {k}");
      }
      assert_eq!(acc >> 50, 0, "byte {b}");
    }
  }

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

  /// The per-thread memo answers as the classification itself, also after other identifiers
  /// took the same slots (more identifiers than slots, asked in two orders).
  #[test]
  fn remembered_words_are_classified_as_new_ones() {
    let mut idents: Vec<String> = ["commit", "api_key", "DB_PASSWORD", "sha256", "review", "token", "id", "x"]
      .iter()
      .map(|s| s.to_string())
      .collect();
    idents.extend((0..600).map(|i| format!("{}_{i}", ["key", "note", "secret", "hash", "auth"][i % 5])));
    idents.push("a_very_long_identifier_past_the_memo_token".into());
    let order: Vec<&String> = idents.iter().chain(idents.iter().rev()).collect();
    for ident in order {
      let got = context_word(ident.as_bytes());
      let class = classify_ident(ident.as_bytes());
      assert_eq!(got.anti, ANTI_CONTEXT.in_text(ident.as_bytes()), "{ident}");
      assert_eq!(
        got.class.map(|c| (c.strength, c.provider, c.aws_secret)),
        class.map(|c| (c.strength, c.provider, c.aws_secret)),
        "{ident}"
      );
    }
  }

  #[test]
  fn indexed_paths_are_code() {
    for v in ["request.json_body['hey']", "os.environ[\"TOKEN\"]", "argv[1]", "cfg['a'][0]", "request.json_body["] {
      assert!(code_like(v.as_bytes()), "{v}");
    }
    for v in ["Pa55[w0rd]", "x[", "Pa55[", "[0]", "a[b]", "a['b']c", "9x['b']"] {
      assert!(!code_like(v.as_bytes()), "{v}");
    }
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
