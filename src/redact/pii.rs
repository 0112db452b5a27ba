//! Personal data: e-mail addresses, phone numbers, payment cards (IIN ranges of every major
//! network, Luhn), IBANs (mod-97), national identifiers with check digits (US SSN, UK NINO and
//! NHS number, Canadian SIN, Aadhaar, CPF, CNPJ), IPv4 and IPv6 addresses.
//!
//! Numbers: at each number that starts at a word boundary (the engine's single pass over the
//! text finds them) the shapes are tried in order of specificity (national identifiers, IPv4,
//! card, SSN, phone) and the first that validates claims the bytes. Shapes that are as often a
//! count or an id as personal data (a 12-digit Luhn-valid number, a 7-digit phone number, a bare
//! SIN) count only where a word on the line names them (`card`, `phone`, `SIN`), looked at in a
//! bounded window before the number. Short isolated numbers (the vast majority) leave after
//! two byte comparisons. Dates, versions, UUIDs, 10-digit and millisecond timestamps do not fit
//! any accepted shape and stay.

use std::net::Ipv6Addr;

use super::ctx::{Ctx, P_CARD, P_EMAIL, P_IBAN, P_IP, P_SSN};
use super::intl;
use super::phone;
use super::text::{
  at, before, digit_at, is_word, keyword_before, skip, skip_back, word_at, word_before, work, WordSet,
};

// ---------------------------------------------------------------------------------------------
// E-mail

/// Called for every `@`.
pub fn email_at(ctx: &mut Ctx, c: usize) {
  let t = ctx.t;
  if c < ctx.email_until {
    return;
  }
  let a = intl::local_start(t, c, 64);
  let a = skip(t, a, c - a, |b| matches!(b, b'.' | b'-' | b'+'));
  if a == c || t[c - 1] == b'.' {
    return;
  }
  let e = intl::domain_end(t, c + 1, 253);
  let e = skip_back(t, e, e - (c + 1), |b| b == b'.' || b == b'-');
  // A word byte right after the domain makes it something else (`a@b.c_d`), unless the domain
  // ends in another script (`例子.中国abc`: the script change ends it).
  if !valid_domain(&t[c + 1..e]) || (word_at(t, e) && before(t, e).is_some_and(|b| b.is_ascii())) {
    return;
  }
  // `scheme://user:password@host`: the URL detector owns userinfo. Asked after the domain (the
  // `@` of most URLs' userinfo is followed by no domain, and the domain is the cheaper test).
  if matches!(before(t, a), Some(b':' | b'/')) && ctx.url_for_emails.inside_url(t, a) {
    return;
  }
  ctx.email_until = e;
  ctx.push(a, e, "email", "pattern", P_EMAIL);
}

fn valid_domain(d: &[u8]) -> bool {
  work::add(d.len());
  let mut labels = d.split(|&b| b == b'.');
  if !d.contains(&b'.') || labels.any(|l| l.is_empty() || l.len() > 63 || l[0] == b'-' || l[l.len() - 1] == b'-') {
    return false;
  }
  let first = d.split(|&b| b == b'.').next().unwrap_or_default();
  let tld = d.rsplit(|&b| b == b'.').next().unwrap_or_default();
  // `icon@2x.png`: retina image names, not addresses.
  if first.len() <= 2 && first[0].is_ascii_digit() && first[first.len() - 1] == b'x' {
    return false;
  }
  (tld.len() >= 2 && tld.iter().all(|b| b.is_ascii_alphabetic()))
    || (tld.len() > 4 && tld[..4].eq_ignore_ascii_case(b"xn--") && tld[4..].iter().all(|b| b.is_ascii_alphanumeric()))
    || intl::is_unicode_tld(tld)
}

// ---------------------------------------------------------------------------------------------
// Numbers

static VERSION_WORDS: WordSet = WordSet::new(&["version", "ver ", "ver.", "release", "build", "firmware", "v."]);

/// The number starting at digit `p` (digits `p..q`): tries the shapes and returns where
/// number scanning continues. Called by the engine's single pass over the text for every digit
/// run it meets (`engine::scan_runs`). The two commonest cases, digits inside a word (hex ids,
/// hashes) and a short number standing alone, are decided here inline.
#[inline]
pub fn number_run(ctx: &mut Ctx, p: usize, q: usize) -> usize {
  let t = ctx.t;
  let prev = before(t, p);
  let attached = prev.is_some_and(is_word);
  let quick = if attached {
    // Only an IBAN starts with letters: two capitals right before its check digits.
    !(p >= 2 && t[p - 1].is_ascii_uppercase() && t[p - 2].is_ascii_uppercase() && !word_before(t, p - 2))
  } else {
    // What `number_at` leaves at once: a short isolated number.
    q - p < 9 && !matches!(prev, Some(b'+' | b'(')) && !number_continues(t, q)
  };
  if quick {
    return skip_run(t, q);
  }
  number_run_slow(ctx, p, q)
}

#[inline(never)]
fn number_run_slow(ctx: &mut Ctx, p: usize, q: usize) -> usize {
  let t = ctx.t;
  let mut end = None;
  if word_before(t, p) {
    // `DE89 3704 ...`: an IBAN starts with two capitals right before its check digits.
    if p >= 2 && t[p - 1].is_ascii_uppercase() && t[p - 2].is_ascii_uppercase() && !word_before(t, p - 2) {
      end = iban_at(ctx, p - 2).or_else(|| nino_at(ctx, p - 2, false));
      if end.is_none() && iban_length(&t[p - 2..p]).is_some() {
        // An IBAN with a bad checksum is not a phone number either.
        end = Some(skip_iban_like(t, p));
      }
    }
  } else {
    end = number_at(ctx, p, q);
  }
  // Nothing matched: skip the rest of this run of like-separated digit groups, so that no
  // shape is found in the middle of a longer number (`0044 0532 0130 01`).
  end.unwrap_or_else(|| skip_run(t, q))
}

/// Does a separator and another group follow the digits ending at `q`?
#[inline]
fn number_continues(t: &[u8], q: usize) -> bool {
  matches!(at(t, q), Some(b' ' | b'-' | b'.' | b')')) && matches!(at(t, q + 1), Some(b'0'..=b'9' | b'('))
}

/// End of an IBAN-shaped run (`NL91 ABNA 0417 1643 01`) starting at `p`.
fn skip_iban_like(t: &[u8], mut i: usize) -> usize {
  let iban_char = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
  let mut count = 0;
  // Each turn moves `i` on; a separator must be followed by a character, so two turns out of
  // three at most are separators.
  while count < 34 {
    if iban_char(at(t, i)) {
      count += 1;
      i += 1;
    } else if matches!(at(t, i), Some(b' ' | b'-')) && iban_char(at(t, i + 1)) {
      i += 1;
    } else {
      break;
    }
  }
  i
}

/// End of the digit groups joined to the group ending at `q` by the separator that follows it.
fn skip_run(t: &[u8], q: usize) -> usize {
  let sep = at(t, q);
  if !matches!(sep, Some(b' ' | b'-' | b'.')) {
    return q;
  }
  let mut i = q;
  // Each turn moves past a separator and at least one digit.
  while at(t, i) == sep && digit_at(t, i + 1) {
    i += 1 + digits_at(t, i + 1);
  }
  i
}

/// Tries the numeric shapes at a number starting at `p` (digits `p..q`). Returns where
/// scanning continues, or `None` when nothing matched.
fn number_at(ctx: &mut Ctx, p: usize, q: usize) -> Option<usize> {
  let t = ctx.t;
  let prev = before(t, p);
  let next = at(t, q);
  let g1 = q - p;
  if prev == Some(b'+') && !word_before(t, p - 1) {
    return phone::intl(ctx, p - 1);
  }
  let continues = number_continues(t, q);
  if g1 < 9 && !continues && prev != Some(b'(') {
    return None; // a short isolated number: the common case
  }
  if matches!(prev, Some(b'.' | b'-' | b'#' | b'$')) {
    return None; // a fraction, a range, an issue number, an amount
  }
  // Dates (`2024-01-15`, `15.01.2024`) are the commonest separated numbers in logs.
  if g1 == 4 && next == Some(b'-') && digits_at(t, q + 1) == 2 && at(t, q + 3) == Some(b'-') && digits_at(t, q + 4) == 2
  {
    return Some(q + 6);
  }
  if g1 == 2
    && matches!(next, Some(b'.' | b'/'))
    && digits_at(t, q + 1) == 2
    && at(t, q + 4) == next
    && digits_at(t, q + 5) == 4
  {
    return Some(q + 9);
  }
  // One look at the digit groups that follow decides for most separated numbers in logs and
  // prose (`22.456` of a timestamp, `2.13.6`): every shape below needs seven digits or more, or
  // four groups (IPv4), except the NINO's letters before a two-digit group.
  if !(g1 == 2 && prev == Some(b' ')) && too_few_digits(t, q, g1) {
    return None;
  }
  if let Some(e) = national_id_at(ctx, p, q) {
    return Some(e);
  }
  if g1 == 2 && prev == Some(b' ') && p >= 3 {
    if let Some(e) = nino_at(ctx, p - 3, true) {
      return Some(e);
    }
  }
  if !continues && g1 >= 9 {
    // Nine or more digits standing alone: a card (13-19), an SSN (9) or a phone number the line
    // names; the grouped shapes need a separator.
    if g1 >= 12 {
      if let Some(e) = card_at(ctx, p, q) {
        return Some(e);
      }
    }
    // A number the line calls a phone is read as one before it is read as an SSN.
    if g1 == 9 && phone::named_before(t, p) && phone::bare(ctx, p, q) {
      return Some(q);
    }
    if let Some(e) = ssn_at(ctx, p, q) {
      return Some(e);
    }
    return phone::bare(ctx, p, q).then_some(q);
  }
  if g1 <= 3 && next == Some(b'.') {
    if let Some(e) = ipv4_at(ctx, p) {
      return Some(e);
    }
  }
  if let Some(e) = card_at(ctx, p, q) {
    return Some(e);
  }
  if let Some(e) = ssn_at(ctx, p, q) {
    return Some(e);
  }
  let start = if prev == Some(b'(') && !word_before(t, p - 1) { p - 1 } else { p };
  if let Some(e) = phone::national(ctx, start) {
    return Some(e);
  }
  if !continues && (7..=15).contains(&g1) && phone::bare(ctx, p, q) {
    return Some(q);
  }
  None
}

/// Fewer than seven digits in fewer than four groups, counting the first group (`g1` digits,
/// ending at `q`) and the groups after it joined by one to three bytes of ` -./()`: a superset of
/// every join the number shapes read (a single separator, `/` of a CNPJ, `) `, ` (` and `) (`
/// around a parenthesised group), so no shape can fit. Looks at three groups at most.
fn too_few_digits(t: &[u8], q: usize, g1: usize) -> bool {
  let joint = |b: u8| matches!(b, b' ' | b'-' | b'.' | b'/' | b'(' | b')');
  let (mut total, mut groups, mut i) = (g1, 1, q);
  // Each turn moves `i` past a joint and at least one digit, or stops.
  while total < 7 && groups < 4 {
    let j = skip(t, i, 3, joint);
    let d = digits_at(t, j);
    if j == i || d == 0 {
      return true;
    }
    total += d;
    groups += 1;
    i = j + d;
  }
  false
}

/// Does the number ending at `e` go on (a word character, or `-` `.` `/` and a digit)?
pub(super) fn continues_as_number(t: &[u8], e: usize) -> bool {
  word_at(t, e) || (matches!(at(t, e), Some(b'-' | b'.' | b'/')) && digit_at(t, e + 1))
}

/// The value of a few ASCII digits.
fn decimal(digits: &[u8]) -> u32 {
  digits.iter().fold(0u32, |v, &d| v.saturating_mul(10).saturating_add((d - b'0') as u32))
}

/// Length of the run of digits at `i` (0 past the end).
pub(super) fn digits_at(t: &[u8], i: usize) -> usize {
  skip(t, i, usize::MAX, |b| b.is_ascii_digit()).saturating_sub(i)
}

// --- IPv4 -------------------------------------------------------------------------------------

fn ipv4_at(ctx: &mut Ctx, p: usize) -> Option<usize> {
  let t = ctx.t;
  let mut i = p;
  for k in 0..4 {
    let d = digits_at(t, i);
    if d == 0 || d > 3 {
      return None;
    }
    let v = decimal(&t[i..i + d]);
    if v > 255 {
      return None;
    }
    i += d;
    if k < 3 {
      if at(t, i) != Some(b'.') {
        return None;
      }
      i += 1;
    }
  }
  let next = at(t, i);
  // Five dotted pairs of digits: a phone number (`06.52.65.06.12`), not an address.
  if word_at(t, i) || (next == Some(b'.') && i - p == 11 && digits_at(t, i + 1) == 2) {
    return None;
  }
  // `Chrome/120.0.0.0`, `version 1.2.3.4`: version numbers, not addresses.
  if before(t, p) == Some(b'/') && p >= 2 && t[p - 2].is_ascii_alphabetic() {
    return None;
  }
  if keyword_before(t, p, 16, &VERSION_WORDS) {
    return None;
  }
  let mut e = i;
  if next == Some(b'/') {
    let d = digits_at(t, i + 1);
    if (1..=2).contains(&d) {
      let v = decimal(&t[i + 1..i + 1 + d]);
      if v <= 32 {
        e = i + 1 + d;
      }
    }
  }
  ctx.push(p, e, "ipv4", "pattern", P_IP);
  Some(e)
}

// --- payment cards ----------------------------------------------------------------------------

fn luhn(d: &[u8]) -> bool {
  // A doubled digit's digit sum, by digit: a table instead of a branch per digit.
  const DOUBLED: [u32; 10] = [0, 2, 4, 6, 8, 1, 3, 5, 7, 9];
  let mut sum = 0u32;
  let mut pairs = d.rchunks_exact(2);
  for pair in &mut pairs {
    sum += (pair[1] - b'0') as u32 + DOUBLED[(pair[0] - b'0') as usize];
  }
  if let [first] = pairs.remainder() {
    sum += (first - b'0') as u32;
  }
  sum.is_multiple_of(10)
}

/// A payment card number: an issuer's prefix and length (or, with `context`, a card word just
/// before it: any 12-19 digits), and the Luhn check. A number of one repeated digit is none.
fn card_valid(d: &[u8], context: bool) -> bool {
  let n = d.len();
  if !(12..=19).contains(&n) || d.iter().all(|&c| c == d[0]) {
    return false;
  }
  (card_prefix_ok(d) || context) && luhn(d)
}

/// Issuer prefix (IIN range) and length of every major network, from the networks' published
/// tables as ISO/IEC 7812 registers them: Visa, Mastercard (51-55 and 2221-2720), American
/// Express, Discover (6011, 644-649, 65), JCB (3528-3589 and the older 3088/3096/3112/3158/3337
/// at 16 digits, 1800/2131 at 15), Diners Club (300-305, 3095, 36, 38, 39), UnionPay (62, 81),
/// Maestro (5018, 5020, 5038, 5893, 6304, 6759, 6761-6763, 13-19 digits; its 12-digit numbers
/// need a card word), Mir (2200-2204), RuPay (60, 65, 81, 82, 508, 353, 356), Troy (9792), Verve
/// (506099-506198, 650002-650027), Dankort (5019), InterPayment (636), InstaPayment (637-639),
/// UATP (1, 15 digits). Millisecond timestamps are 13 digits starting with 1: no issuer has that.
fn card_prefix_ok(d: &[u8]) -> bool {
  let n = d.len();
  let num = |k: usize| d[..k].iter().fold(0u32, |v, &c| v * 10 + (c - b'0') as u32);
  let (p2, p3, p4) = (num(2), num(3), num(4));
  if n < 13 {
    return false;
  }
  match d[0] {
    b'4' => matches!(n, 13 | 16 | 19),
    b'1' => n == 15,
    b'2' => {
      ((2221..=2720).contains(&p4) && n == 16)
        || ((2200..=2204).contains(&p4) && (16..=19).contains(&n))
        || (p4 == 2131 && n == 15)
    }
    b'3' => match p2 {
      34 | 37 => n == 15,
      35 => ((3528..=3589).contains(&p4) && (16..=19).contains(&n)) || (matches!(p3, 353 | 356) && n == 16),
      30 => ((p3 <= 305 || p4 == 3095) && (14..=19).contains(&n)) || (matches!(p4, 3088 | 3096) && n == 16),
      36 | 38 | 39 => (14..=19).contains(&n),
      31 | 33 => matches!(p4, 3112 | 3158 | 3337) && n == 16,
      _ => false,
    },
    b'5' => match p2 {
      51..=55 => n == 16,
      50 | 56..=59 => (13..=19).contains(&n),
      _ => false,
    },
    b'6' => (13..=19).contains(&n),
    b'8' => matches!(p2, 81 | 82) && (16..=19).contains(&n),
    b'9' => p4 == 9792 && n == 16,
    _ => false,
  }
}

/// Words that make a Luhn-valid number of 12-19 digits a card number whatever its prefix
/// (`card`, `credit`, `visa`, `cc:` ...; lowercase, matched inside the line before it).
static CARD_WORDS: WordSet = WordSet::new(&[
  "card",
  "credit",
  "debit",
  "visa",
  "mastercard",
  "master card",
  "amex",
  "american express",
  "maestro",
  "jcb",
  "diners",
  "discover",
  "unionpay",
  "union pay",
  "rupay",
  "cvv",
  "cvc",
  "cc:",
  "cc#",
  "cc ",
  "cc.",
  "pan:",
  "karte",
  "carte",
  "tarjeta",
  "cart\u{e3}o",
  "carta",
  "kaart",
  "kort",
  "pay with",
  "paid with",
  "payment",
]);

/// Is there a card word on the line just before the number `p..e`, or just after it in the same
/// clause (`... (visa card)`)?
fn card_context(t: &[u8], p: usize, e: usize) -> bool {
  let after = skip(t, e, 24, |b| !matches!(b, b'\n' | b'\r' | b';' | b',' | b'.'));
  keyword_before(t, p, 40, &CARD_WORDS) || CARD_WORDS.in_text(&t[e..after])
}

fn card_at(ctx: &mut Ctx, p: usize, q: usize) -> Option<usize> {
  let t = ctx.t;
  let g1 = q - p;
  if (12..=19).contains(&g1) {
    if word_at(t, q) {
      return None;
    }
    let d = &t[p..q];
    // Luhn first: it rejects nine numbers in ten (13-digit millisecond timestamps are common in
    // logs), and the card words are looked for only when no issuer prefix vouches. The same
    // test as `card_valid(d, false) || card_valid(d, card_context(..))`.
    if !(luhn(d) && !d.iter().all(|&c| c == d[0]) && (card_prefix_ok(d) || card_context(t, p, q))) {
      return None;
    }
    ctx.push(p, q, "credit_card", "checksum", P_CARD);
    return Some(q);
  }
  if g1 != 4 {
    return None;
  }
  let sep = at(t, q);
  if !matches!(sep, Some(b' ' | b'-')) {
    return None;
  }
  // Groups of 4 (or Amex/Diners 4-6-5 / 4-6-4) with one separator.
  let mut digits = [0u8; 19];
  digits[..4].copy_from_slice(&t[p..q]);
  let mut len = 4;
  let mut ends = [(0usize, 0usize, 0usize); 8];
  let mut m = 0;
  let mut i = q;
  while at(t, i) == sep && digit_at(t, i + 1) && m < 8 {
    let d = digits_at(t, i + 1);
    if d > 6 || len + d > 19 {
      break;
    }
    digits[len..len + d].copy_from_slice(&t[i + 1..i + 1 + d]);
    len += d;
    i += 1 + d;
    ends[m] = (i, len, d);
    m += 1;
  }
  let mut context = None;
  for k in (0..m).rev() {
    let (e, len, last) = ends[k];
    if len < 12 || word_at(t, e) {
      continue;
    }
    // Group sizes after the first: 4-4-4(-x) or 6-5 / 6-4.
    let inner_ok = ends[..k].iter().all(|x| x.2 == 4);
    let groups_ok = (inner_ok && (1..=4).contains(&last)) || (k == 1 && ends[0].2 == 6 && (4..=5).contains(&last));
    if !groups_ok || !luhn(&digits[..len]) {
      continue;
    }
    // A card word vouches only for the whole run of groups, never for the first few of them.
    let context = k == m - 1 && *context.get_or_insert_with(|| card_context(t, p, e));
    if card_valid(&digits[..len], context) {
      ctx.push(p, e, "credit_card", "checksum", P_CARD);
      return Some(e);
    }
  }
  None
}

// --- US SSN -----------------------------------------------------------------------------------

/// Nine digits collected from a separated SSN (no allocation).
#[derive(Default)]
struct DigitBuf {
  b: [u8; 9],
  n: usize,
}

impl DigitBuf {
  fn extend_from_slice(&mut self, s: &[u8]) {
    let k = s.len().min(9 - self.n);
    self.b[self.n..self.n + k].copy_from_slice(&s[..k]);
    self.n += k;
  }
}

fn ssn_valid(d: &[u8]) -> bool {
  if d.len() != 9 || d.iter().all(|&c| c == d[0]) {
    return false;
  }
  let area = &d[0..3];
  if area == b"000" || area == b"666" || area[0] == b'9' || &d[3..5] == b"00" || &d[5..9] == b"0000" {
    return false;
  }
  // Published or advertised numbers that were never anyone's.
  !matches!(d, b"123456789" | b"078051120" | b"219099999" | b"457555462")
}

fn ssn_at(ctx: &mut Ctx, p: usize, q: usize) -> Option<usize> {
  let t = ctx.t;
  let g1 = q - p;
  let mut d = DigitBuf::default();
  let e = match g1 {
    9 => {
      if matches!(at(t, q), Some(b'.' | b'-')) && digit_at(t, q + 1) {
        return None;
      }
      d.extend_from_slice(&t[p..q]);
      q
    }
    3 => {
      let sep = at(t, q);
      if !matches!(sep, Some(b'-' | b' ' | b'.')) {
        return None;
      }
      let g2 = digits_at(t, q + 1);
      if g2 == 2 && at(t, q + 3) == sep && digits_at(t, q + 4) == 4 {
        d.extend_from_slice(&t[p..q]);
        d.extend_from_slice(&t[q + 1..q + 3]);
        d.extend_from_slice(&t[q + 4..q + 8]);
        q + 8
      } else if g2 == 6 && sep == Some(b'-') {
        d.extend_from_slice(&t[p..q]);
        d.extend_from_slice(&t[q + 1..q + 7]);
        q + 7
      } else {
        return None;
      }
    }
    5 if at(t, q) == Some(b'-') && digits_at(t, q + 1) == 4 => {
      d.extend_from_slice(&t[p..q]);
      d.extend_from_slice(&t[q + 1..q + 5]);
      q + 5
    }
    _ => return None,
  };
  if continues_as_number(t, e) {
    return None;
  }
  if !ssn_valid(&d.b[..d.n]) {
    return None;
  }
  ctx.push(p, e, "us_ssn", "pattern", P_SSN);
  Some(e)
}

// --- national identifiers with check digits ---------------------------------------------------

static NHS_WORDS: WordSet = WordSet::new(&["nhs"]);
static SIN_WORDS: WordSet =
  WordSet::new(&["sin ", "sin:", "sin#", "sin no", "s.i.n", "social insurance", "nas ", "nas:", "assurance sociale"]);
static AADHAAR_WORDS: WordSet = WordSet::new(&["aadhaar", "aadhar", "uidai", "uid"]);
static CPF_WORDS: WordSet = WordSet::new(&["cpf"]);
static CNPJ_WORDS: WordSet = WordSet::new(&["cnpj"]);
static NINO_WORDS: WordSet =
  WordSet::new(&["national insurance", "nino", "ni number", "ni no", "ni:", "insurance number", "nin:"]);

/// Up to 14 digits read from groups of the given sizes joined by the given separators (`0`: none).
struct Digits {
  d: [u8; 14],
  n: usize,
  end: usize,
}

impl Digits {
  fn get(&self) -> &[u8] {
    &self.d[..self.n]
  }
}

/// Reads `sizes[0]` digits at `p`, then for each later size its separator (`seps[k - 1]`, one of
/// those bytes) and that many digits. The number must end there.
fn shaped(t: &[u8], p: usize, sizes: &[usize], seps: &[&[u8]]) -> Option<Digits> {
  let mut out = Digits { d: [0; 14], n: 0, end: p };
  let mut i = p;
  for (k, &size) in sizes.iter().enumerate() {
    if k > 0 {
      if !at(t, i).is_some_and(|b| seps[k - 1].contains(&b)) {
        return None;
      }
      i += 1;
    }
    if digits_at(t, i) != size || out.n + size > 14 {
      return None;
    }
    out.d[out.n..out.n + size].copy_from_slice(&t[i..i + size]);
    out.n += size;
    i += size;
  }
  // Not the first groups of a longer number (`5159 4411 3098 7708`).
  let more = seps.iter().any(|s| at(t, i).is_some_and(|b| s.contains(&b))) && digit_at(t, i + 1);
  if more || continues_as_number(t, i) {
    return None;
  }
  out.end = i;
  Some(out)
}

/// The first of `shapes` that fits at `p`.
fn first_shape(t: &[u8], p: usize, shapes: &[(&[usize], &[&[u8]])]) -> Option<Digits> {
  shapes.iter().find_map(|(sizes, seps)| shaped(t, p, sizes, seps))
}

const SP: &[u8] = b" -";

/// Brazilian CPF and CNPJ, UK NHS numbers, Canadian SINs and Aadhaar numbers: the shape, the
/// check digits, and (unless the printed format is distinctive, as CPF's `123.456.789-09`,
/// CNPJ's `12.345.678/0001-95` and Aadhaar's `3123 4567 8909` are) a word naming the identifier
/// just before it.
fn national_id_at(ctx: &mut Ctx, p: usize, q: usize) -> Option<usize> {
  let t = ctx.t;
  let g1 = q - p;
  // Most separated numbers here are dates, times, versions and addresses: the first separator and
  // the length of the second group rule them out before any shape is read.
  let second = |sep: &[u8], len: usize| at(t, q).is_some_and(|b| sep.contains(&b)) && digits_at(t, q + 1) == len;
  let plausible = match g1 {
    2 => second(b".", 3),
    3 => second(b". -", 3),
    4 => second(b" -", 4),
    9..=12 | 14 => true,
    _ => false,
  };
  if !plausible {
    return None;
  }
  let named = |words: &WordSet| keyword_before(t, p, 40, words);
  let found = match g1 {
    3 => first_shape(t, p, &[(&[3, 3, 3, 2], &[b".", b".", b"-"])])
      .filter(|d| cpf_ok(d.get()))
      .map(|d| (d, "br_cpf"))
      .or_else(|| {
        first_shape(t, p, &[(&[3, 3, 4], &[SP, SP])])
          .filter(|d| nhs_ok(d.get()) && named(&NHS_WORDS))
          .map(|d| (d, "uk_nhs"))
      })
      .or_else(|| {
        first_shape(t, p, &[(&[3, 3, 3], &[SP, SP])])
          .filter(|d| sin_ok(d.get()) && named(&SIN_WORDS))
          .map(|d| (d, "ca_sin"))
      }),
    2 => first_shape(t, p, &[(&[2, 3, 3, 4, 2], &[b".", b".", b"/", b"-"])])
      .filter(|d| cnpj_ok(d.get()))
      .map(|d| (d, "br_cnpj")),
    // Aadhaar's printed form (`3123 4567 8909`) with its Verhoeff check is distinctive enough.
    4 => first_shape(t, p, &[(&[4, 4, 4], &[b" ", b" "]), (&[4, 4, 4], &[b"-", b"-"])])
      .filter(|d| d.get()[0] >= b'2' && verhoeff_ok(d.get()) && (named(&AADHAAR_WORDS) || !card_context(t, p, d.end)))
      .map(|d| (d, "in_aadhaar")),
    9 => shaped(t, p, &[9], &[]).filter(|d| sin_ok(d.get()) && named(&SIN_WORDS)).map(|d| (d, "ca_sin")),
    10 => shaped(t, p, &[10], &[]).filter(|d| nhs_ok(d.get()) && named(&NHS_WORDS)).map(|d| (d, "uk_nhs")),
    11 => shaped(t, p, &[11], &[]).filter(|d| cpf_ok(d.get()) && named(&CPF_WORDS)).map(|d| (d, "br_cpf")),
    12 => shaped(t, p, &[12], &[])
      .filter(|d| d.get()[0] >= b'2' && verhoeff_ok(d.get()) && named(&AADHAAR_WORDS))
      .map(|d| (d, "in_aadhaar")),
    14 => shaped(t, p, &[14], &[]).filter(|d| cnpj_ok(d.get()) && named(&CNPJ_WORDS)).map(|d| (d, "br_cnpj")),
    _ => None,
  };
  let (d, kind) = found?;
  ctx.push(p, d.end, kind, "checksum", P_SSN);
  Some(d.end)
}

/// The check digit of Brazil's CPF and CNPJ: the sum of `digits` times `weights`, mod 11; a
/// remainder `r` below 2 gives 0, any other `11 - r`.
fn mod11_check_digit(digits: &[u8], weights: impl Iterator<Item = usize>) -> u8 {
  let r = digits.iter().zip(weights).map(|(&c, w)| (c - b'0') as usize * w).sum::<usize>() % 11;
  if r < 2 {
    0
  } else {
    (11 - r) as u8
  }
}

/// CPF check digits (weights 10..2, then 11..2).
fn cpf_ok(d: &[u8]) -> bool {
  if d.len() != 11 || d.iter().all(|&c| c == d[0]) {
    return false;
  }
  let dv = |n: usize| mod11_check_digit(&d[..n], (2..=n + 1).rev());
  dv(9) == d[9] - b'0' && dv(10) == d[10] - b'0'
}

/// CNPJ check digits (weights 5..2,9..2 then 6..2,9..2).
fn cnpj_ok(d: &[u8]) -> bool {
  if d.len() != 14 || d.iter().all(|&c| c == d[0]) {
    return false;
  }
  const W: [usize; 13] = [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2];
  let dv = |n: usize| mod11_check_digit(&d[..n], W[13 - n..].iter().copied());
  dv(12) == d[12] - b'0' && dv(13) == d[13] - b'0'
}

/// NHS number: weights 10..2 over the first nine digits, check digit 11 - (sum mod 11), where 11
/// means 0 and 10 is never issued.
fn nhs_ok(d: &[u8]) -> bool {
  if d.len() != 10 || d.iter().all(|&c| c == d[0]) {
    return false;
  }
  let s: usize = d[..9].iter().enumerate().map(|(k, &c)| (c - b'0') as usize * (10 - k)).sum();
  match 11 - s % 11 {
    10 => false,
    11 => d[9] == b'0',
    c => d[9] - b'0' == c as u8,
  }
}

/// Canadian SIN: Luhn over nine digits; none starts with 0 or 8.
fn sin_ok(d: &[u8]) -> bool {
  d.len() == 9 && !matches!(d[0], b'0' | b'8') && luhn(d)
}

/// Aadhaar's Verhoeff check (dihedral group D5).
fn verhoeff_ok(d: &[u8]) -> bool {
  const MUL: [[u8; 10]; 10] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
    [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
    [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
    [4, 0, 1, 2, 3, 9, 5, 6, 7, 8],
    [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
    [6, 5, 9, 8, 7, 1, 0, 4, 3, 2],
    [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
    [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
    [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
  ];
  const PERM: [[u8; 10]; 8] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
    [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
    [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
    [9, 4, 5, 3, 1, 2, 6, 8, 7, 0],
    [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
    [2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
    [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
  ];
  let mut c = 0u8;
  for (i, &b) in d.iter().rev().enumerate() {
    c = MUL[c as usize][PERM[i % 8][(b - b'0') as usize] as usize];
  }
  c == 0 && !d.iter().all(|&x| x == d[0])
}

/// UK National Insurance number at `s` (two letters, six digits, a suffix A-D; HMRC's
/// NIM39110 rules for the prefix letters): spaced (`AB 12 34 56 C`) always, unspaced
/// (`AB123456C`) where the line names it.
fn nino_at(ctx: &mut Ctx, s: usize, spaced: bool) -> Option<usize> {
  let t = ctx.t;
  let (l1, l2) = (t[s], t[s + 1]);
  if !l1.is_ascii_uppercase() || !l2.is_ascii_uppercase() || word_before(t, s) {
    return None;
  }
  if b"DFIQUV".contains(&l1) || b"DFIOQUV".contains(&l2) {
    return None;
  }
  if matches!(&[l1, l2], b"BG" | b"GB" | b"KN" | b"NK" | b"NT" | b"TN" | b"ZZ") {
    return None;
  }
  let (digits_end, sep) = if spaced {
    let d = shaped_pairs(t, s + 3)?;
    (d, true)
  } else {
    if digits_at(t, s + 2) != 6 {
      return None;
    }
    (s + 8, false)
  };
  let suffix = if sep { digits_end + 1 } else { digits_end };
  if sep && at(t, digits_end) != Some(b' ') {
    return None;
  }
  if !at(t, suffix).is_some_and(|b| matches!(b, b'A'..=b'D')) || word_at(t, suffix + 1) {
    return None;
  }
  if !sep && !keyword_before(t, s, 40, &NINO_WORDS) {
    return None;
  }
  ctx.push(s, suffix + 1, "uk_nino", "pattern", P_SSN);
  Some(suffix + 1)
}

/// `12 34 56` at `i`: where it ends.
fn shaped_pairs(t: &[u8], i: usize) -> Option<usize> {
  (digits_at(t, i) == 2
    && at(t, i + 2) == Some(b' ')
    && digits_at(t, i + 3) == 2
    && at(t, i + 5) == Some(b' ')
    && digits_at(t, i + 6) == 2)
    .then_some(i + 8)
}

// --- IBAN -------------------------------------------------------------------------------------

fn iban_length(cc: &[u8]) -> Option<usize> {
  const TABLE: &[(&[u8; 2], usize)] = &[
    (b"AD", 24),
    (b"AE", 23),
    (b"AL", 28),
    (b"AT", 20),
    (b"AZ", 28),
    (b"BA", 20),
    (b"BE", 16),
    (b"BG", 22),
    (b"BH", 22),
    (b"BI", 27),
    (b"BR", 29),
    (b"BY", 28),
    (b"CH", 21),
    (b"CR", 22),
    (b"CY", 28),
    (b"CZ", 24),
    (b"DE", 22),
    (b"DJ", 27),
    (b"DK", 18),
    (b"DO", 28),
    (b"EE", 20),
    (b"EG", 29),
    (b"ES", 24),
    (b"FI", 18),
    (b"FK", 18),
    (b"FO", 18),
    (b"FR", 27),
    (b"GB", 22),
    (b"GE", 22),
    (b"GI", 23),
    (b"GL", 18),
    (b"GR", 27),
    (b"GT", 28),
    (b"HN", 28),
    (b"HR", 21),
    (b"HU", 28),
    (b"IE", 22),
    (b"IL", 23),
    (b"IQ", 23),
    (b"IS", 26),
    (b"IT", 27),
    (b"JO", 30),
    (b"KW", 30),
    (b"KZ", 20),
    (b"LB", 28),
    (b"LC", 32),
    (b"LI", 21),
    (b"LT", 20),
    (b"LU", 20),
    (b"LV", 21),
    (b"LY", 25),
    (b"MC", 27),
    (b"MD", 24),
    (b"ME", 22),
    (b"MK", 19),
    (b"MN", 20),
    (b"MR", 27),
    (b"MT", 31),
    (b"MU", 30),
    (b"NI", 28),
    (b"NL", 18),
    (b"NO", 15),
    (b"OM", 23),
    (b"PK", 24),
    (b"PL", 28),
    (b"PS", 29),
    (b"PT", 25),
    (b"QA", 29),
    (b"RO", 24),
    (b"RS", 22),
    (b"RU", 33),
    (b"SA", 24),
    (b"SC", 31),
    (b"SD", 18),
    (b"SE", 24),
    (b"SI", 19),
    (b"SK", 24),
    (b"SM", 27),
    (b"SO", 23),
    (b"ST", 25),
    (b"SV", 28),
    (b"TL", 23),
    (b"TN", 24),
    (b"TR", 26),
    (b"UA", 29),
    (b"VA", 22),
    (b"VG", 24),
    (b"XK", 20),
    (b"YE", 30),
    // Countries whose banks issue IBANs outside the SWIFT registry (the "experimental" list
    // published by Nordea and the IBAN.com registry).
    (b"AO", 25),
    (b"BF", 28),
    (b"BJ", 28),
    (b"CF", 27),
    (b"CG", 27),
    (b"CI", 28),
    (b"CM", 27),
    (b"CV", 25),
    (b"DZ", 26),
    (b"GA", 27),
    (b"GQ", 27),
    (b"GW", 25),
    (b"IR", 26),
    (b"KM", 27),
    (b"MA", 28),
    (b"MG", 27),
    (b"ML", 28),
    (b"MZ", 25),
    (b"NE", 28),
    (b"SN", 28),
    (b"TD", 27),
    (b"TG", 28),
  ];
  TABLE.iter().find(|(c, _)| &c[..] == cc).map(|&(_, n)| n)
}

fn iban_checksum_ok(chars: &[u8]) -> bool {
  let mut rem: u32 = 0;
  for &c in chars[4..].iter().chain(chars[..4].iter()) {
    if c.is_ascii_digit() {
      rem = (rem * 10 + (c - b'0') as u32) % 97;
    } else {
      let v = (c - b'A') as u32 + 10;
      rem = (rem * 100 + v) % 97;
    }
  }
  rem == 1
}

/// `s` points at the country code.
fn iban_at(ctx: &mut Ctx, s: usize) -> Option<usize> {
  let t = ctx.t;
  let len = iban_length(&t[s..s + 2])?;
  if !(digit_at(t, s + 2) && digit_at(t, s + 3)) {
    return None;
  }
  let iban_char = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit();
  let mut chars = [0u8; 34];
  let mut n = 0;
  let mut sep = None;
  let mut i = s;
  // Each turn takes a character or a separator (followed by a character), or gives up.
  while n < len {
    match at(t, i) {
      Some(b) if iban_char(b) => {
        chars[n] = b;
        n += 1;
      }
      Some(b @ (b' ' | b'-')) if n % 4 == 0 && sep.is_none_or(|s| s == b) => {
        if !at(t, i + 1).is_some_and(iban_char) {
          return None;
        }
        sep = Some(b);
      }
      _ => return None,
    }
    i += 1;
  }
  if word_at(t, i) || !iban_checksum_ok(&chars[..n]) {
    return None;
  }
  ctx.push(s, i, "iban", "checksum", P_IBAN);
  Some(i)
}

// ---------------------------------------------------------------------------------------------
// IPv6

#[inline]
fn v6_char(b: u8) -> bool {
  b.is_ascii_hexdigit() || b == b':' || b == b'.'
}

/// What [`ipv6_at`] returns at a `:` with two digits before it and a word byte that is no hex
/// digit before those (`T14:35:22`): the end of the address characters after it, as far as
/// an address starting at the digits could reach.
pub fn v6_run_end(t: &[u8], c: usize) -> usize {
  skip(t, c + 1, 64 - 3, v6_char)
}

static V6_CONTEXT: WordSet =
  WordSet::new(&["ip", "addr", "unspecified", "listen", "bind", "host", "src", "dst", "route", "gateway", "any"]);

/// An IPv6 address around the `:` at `c`. Returns the position before which later colons need
/// not be looked at (the end of the hex/colon run).
pub fn ipv6_at(ctx: &mut Ctx, c: usize) -> usize {
  let t = ctx.t;
  let hex_or_colon = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_hexdigit() || b == b':');
  if !(hex_or_colon(before(t, c)) || hex_or_colon(at(t, c + 1))) {
    return c + 1;
  }
  let a = skip_back(t, c, 45, v6_char);
  let b = skip(t, c + 1, 64 - (c + 1 - a), v6_char);
  let a = skip(t, a, c - a, |b| b == b'.');
  let lead = before(t, a);
  if word_before(t, a) || lead == Some(b'.') || word_at(t, b) {
    return b;
  }
  let mut e = skip_back(t, b, b - a, |b| b == b'.');
  let mut ok = parse_v6(&t[a..e]);
  if !ok && e >= a + 2 && t[e - 1] == b':' && t[e - 2] != b':' {
    e -= 1;
    ok = parse_v6(&t[a..e]);
  }
  if !ok {
    return b;
  }
  let cand = &t[a..e];
  let mut end = e;
  // Zone (`fe80::1%eth0`) and prefix length (`2001:db8::/32`, only when valid).
  if at(t, end) == Some(b'%') && at(t, end + 1).is_some_and(|b| b.is_ascii_alphanumeric()) {
    end = skip(t, end + 1, usize::MAX, |b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
  }
  let mut prefixed = false;
  if at(t, end) == Some(b'/') {
    let d = digits_at(t, end + 1);
    if (1..=3).contains(&d) && !word_at(t, end + 1 + d) {
      let v = decimal(&t[end + 1..end + 1 + d]);
      if v <= 128 {
        end += 1 + d;
        prefixed = true;
      }
    }
  }
  if !cand.iter().any(|b| b.is_ascii_digit()) {
    // `::` alone (and hex-letter-only forms like `a::b`) is an address only in context.
    let bare = cand == b"::";
    let context = prefixed || matches!(lead, Some(b'=' | b'[')) || keyword_before(t, a, 24, &V6_CONTEXT);
    if !(bare && context) {
      return b;
    }
  }
  ctx.push(a, end, "ipv6", "pattern", P_IP);
  b.max(end)
}

fn parse_v6(s: &[u8]) -> bool {
  // Without `::` an address spells all eight groups (seven colons, or six before a dotted IPv4
  // tail): times of day (`14:35:22`) and other short colon lists are refused before the parser,
  // which cost more than the rest of a log line's scan.
  let colons = s.iter().filter(|&&b| b == b':').count();
  colons >= 2
    && (colons >= 6 || memchr::memmem::find(s, b"::").is_some())
    && std::str::from_utf8(s).ok().and_then(|s| s.parse::<Ipv6Addr>().ok()).is_some()
}

#[cfg(test)]
mod tests {
  use super::{luhn, parse_v6};
  use std::net::Ipv6Addr;

  /// The paired table form of Luhn agrees with the check as written (every other digit from
  /// the right doubled, nines cast out) on every length the callers use.
  #[test]
  fn luhn_agrees_with_its_definition() {
    let plain = |d: &[u8]| {
      let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &c)| {
          let v = (c - b'0') as u32 * if i % 2 == 1 { 2 } else { 1 };
          if v > 9 {
            v - 9
          } else {
            v
          }
        })
        .sum();
      sum.is_multiple_of(10)
    };
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let (mut valid, mut invalid) = (0, 0);
    for len in 1..=20usize {
      for _ in 0..2000 {
        let d: Vec<u8> = (0..len)
          .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b'0' + (x % 10) as u8
          })
          .collect();
        assert_eq!(luhn(&d), plain(&d), "{}", String::from_utf8_lossy(&d));
        if plain(&d) {
          valid += 1
        } else {
          invalid += 1
        }
      }
    }
    assert!(valid > 1000 && invalid > 1000);
    assert!(luhn(b"4111111111111111") && !luhn(b"4111111111111112") && luhn(b"79927398713"));
  }

  /// The colon count that `parse_v6` checks before parsing refuses nothing the parser accepts.
  #[test]
  fn v6_precheck_agrees_with_the_parser() {
    let parses = |s: &str| s.matches(':').count() >= 2 && s.parse::<Ipv6Addr>().is_ok();
    let mut cases: Vec<String> = [
      "1:2:3:4:5:6:7:8",
      "1:2:3:4:5:6:1.2.3.4",
      "::1",
      "1::",
      "::",
      "fe80::1:2",
      "::ffff:1.2.3.4",
      "14:35:22",
      "1:2:3:4:5:6:7",
      "1:2:3:4:5:1.2.3.4",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Every list of one to nine groups, each a hex group, an empty group or a dotted quad.
    let parts = ["1", "ab", "", "1.2.3.4", "12345"];
    for n in 1..=9usize {
      for k in 0..parts.len().pow(n.min(5) as u32) {
        let (mut k, mut groups) = (k, Vec::new());
        for _ in 0..n {
          groups.push(parts[k % parts.len()]);
          k /= parts.len();
        }
        cases.push(groups.join(":"));
      }
    }
    for s in &cases {
      assert_eq!(parse_v6(s.as_bytes()), parses(s), "{s}");
    }
    assert!(parse_v6(b"1:2:3:4:5:6:1.2.3.4") && parse_v6(b"::1") && !parse_v6(b"14:35:22"));
  }
}
