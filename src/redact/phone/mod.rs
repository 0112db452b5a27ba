//! Phone numbers, validated against libphonenumber's numbering plans (`meta`).
//!
//! Agent text names no region, so what a candidate is validated against depends on how it is
//! written:
//! - `+CC ...` and `00CC` / `011 CC` (an international access code): the calling code must be
//!   assigned, and the digits after it a number of one of its regions (every number type; the
//!   national prefix may follow, `+44 (0)20 ...`). Where several spans are possible the longest
//!   valid one wins; a span whose length is only *possible* for the code (a range the metadata
//!   does not list yet) still counts, as before, when it has 8-15 digits.
//! - National formats: the number shapes read by hand before (groups of like separators that
//!   are a phone number wherever they are written, `(415) 555-0132`, `020 7946 0958`) stay, but
//!   groups with no trunk `0`, parentheses or phone word must also be a number of some region;
//!   what those shapes leave (mixed separators, a lone digit group: `8 (912) 345-67-89`,
//!   `0900 1 234567`) is a phone number when its digits are a valid national number of some
//!   region (trunk prefix optional) *and* either the line names a phone (in one of many
//!   languages, before the number or after it in the same clause) or the writing is one only
//!   phone numbers have (a trunk `0` or a parenthesised area code and 8 digits or more, or three
//!   like-separated groups of 10 digits or more). Validation against every region only rules out
//!   what no plan allows: a short number is valid somewhere almost always, which is why a word
//!   or a shape must vouch.
//! - Extensions (`x123`, `ext. 45`, `extn 6`, `#123`, `;ext=123`) are part of the span.
//!
//! Validation runs only at digit runs the number scanner already stopped at, on at most 17
//! digits, so it costs nothing on text without phone-shaped numbers and a bounded amount per
//! candidate.

mod meta;

use super::ctx::{Ctx, P_PHONE};
use super::pii::{continues_as_number, digits_at};
use super::text::{at, digit_at, keyword_before, skip, word_at, WordSet};
use meta::MAX_DIGITS;

/// Words that name a phone, in the languages agents are written to (lowercase ASCII matches any
/// case; other scripts are listed in the cases they are written in).
static PHONE_WORDS: WordSet = WordSet::new(&[
  "phone",
  "tel",
  "mobile",
  "cell",
  "call",
  "fax",
  "whatsapp",
  "sms",
  "contact",
  "number",
  "numero",
  "n\u{fa}mero",
  "num\u{e9}ro",
  "nummer",
  "telefon",
  "telepono",
  "numara",
  "cep",
  "ph:",
  "ph.",
  "mob",
  "reach",
  "ring",
  "dial",
  "text me",
  "landline",
  "hotline",
  "handy",
  "celular",
  "cellulare",
  "m\u{f3}vil",
  "movil",
  "portable",
  "t\u{e9}l",
  "tlf",
  "extension",
  "ruf",
  "anruf",
  "erreichbar",
  "appel",
  "llam",
  "ll\u{e1}m",
  "tel\u{e9}fon",
  "numer",
  "ligue",
  "liga",
  "chiama",
  "bel me",
  "bellen",
  "zadzwo",
  "\u{442}\u{435}\u{43b}",               // тел (телефон)
  "\u{422}\u{435}\u{43b}",               // Тел
  "\u{43d}\u{43e}\u{43c}\u{435}\u{440}", // номер
  "\u{41d}\u{43e}\u{43c}\u{435}\u{440}", // Номер
  "\u{437}\u{432}\u{43e}\u{43d}",        // звон(ите)
  "\u{417}\u{432}\u{43e}\u{43d}",        // Звон
  "\u{43c}\u{43e}\u{431}",               // моб
  "\u{3c4}\u{3b7}\u{3bb}",               // τηλ
  "\u{5d8}\u{5dc}\u{5e4}\u{5d5}\u{5df}", // טלפון
  "\u{647}\u{627}\u{62a}\u{641}",        // هاتف
  "\u{62c}\u{648}\u{627}\u{644}",        // جوال
  "\u{96fb}\u{8a71}",                    // 電話
  "\u{7535}\u{8bdd}",                    // 电话
  "\u{624b}\u{673a}",                    // 手机
  "\u{643a}\u{5e2f}",                    // 携帯
  "\u{62e8}\u{6253}",                    // 拨打
  "\u{c804}\u{d654}",                    // 전화
  "\u{d578}\u{b4dc}\u{d3f0}",            // 핸드폰
  "\u{e42}\u{e17}\u{e23}",               // โทร
  "\u{92b}\u{93c}\u{94b}\u{928}",        // फ़ोन
  "\u{92b}\u{94b}\u{928}",               // फोन
  "\u{111}i\u{1ec7}n tho\u{1ea1}i",      // điện thoại
]);

/// Does the line name a phone just before `start`, or (with `after`) the clause just after `end`
/// (`... 0532 123 45 67 numaralı telefondan`)?
fn phone_named(t: &[u8], start: usize, end: usize, after: bool) -> bool {
  if keyword_before(t, start, 48, &PHONE_WORDS) {
    return true;
  }
  if !after {
    return false;
  }
  let after = skip(t, end, 40, |b| !matches!(b, b'\n' | b'\r' | b';' | b',' | b'.' | b'!' | b'?'));
  PHONE_WORDS.in_text(&t[end.min(after)..after])
}

struct Group {
  digits: usize,
  /// Separator before the group (`0` for the first, `(` for a parenthesised group).
  sep: u8,
  end: usize,
}

impl Group {
  /// The group's digits (inside its parentheses, if any).
  fn bytes<'a>(&self, t: &'a [u8]) -> &'a [u8] {
    let e = if t[self.end - 1] == b')' { self.end - 1 } else { self.end };
    &t[e - self.digits..e]
  }
}

/// Reads `(ddd)` or `ddd` at `i`.
fn read_group(t: &[u8], i: usize) -> Option<(usize, usize, bool)> {
  if at(t, i) == Some(b'(') {
    let d = digits_at(t, i + 1);
    if (1..=5).contains(&d) && at(t, i + 1 + d) == Some(b')') {
      return Some((d, i + 2 + d, true));
    }
    return None;
  }
  let d = digits_at(t, i);
  if d == 0 {
    None
  } else {
    Some((d, i + d, false))
  }
}

/// Up to 8 digit groups (no allocation).
struct Groups {
  g: [Group; 8],
  n: usize,
}

impl std::ops::Deref for Groups {
  type Target = [Group];
  fn deref(&self) -> &[Group] {
    &self.g[..self.n]
  }
}

/// Groups separated by single spaces, dashes or dots (or a parenthesised area code).
fn read_groups(t: &[u8], start: usize, max_digits: usize) -> Groups {
  const EMPTY: Group = Group { digits: 0, sep: 0, end: 0 };
  let mut groups = Groups { g: [EMPTY; 8], n: 0 };
  let Some((d, mut i, paren)) = read_group(t, start) else { return groups };
  groups.g[0] = Group { digits: d, sep: if paren { b'(' } else { 0 }, end: i };
  groups.n = 1;
  let mut total = d;
  let mut after_paren = paren;
  while groups.n < 8 && total <= max_digits {
    let (sep, j) = match at(t, i) {
      Some(c @ (b' ' | b'-' | b'.')) if matches!(at(t, i + 1), Some(b'0'..=b'9' | b'(')) => {
        (if after_paren { b'(' } else { c }, i + 1)
      }
      Some(b'0'..=b'9') if after_paren => (b'(', i),
      // `+49(0)30 ...`: a trunk prefix in parentheses right after the country code.
      Some(b'(') if digit_at(t, i + 1) => (b'(', i),
      _ => break,
    };
    let Some((d, e, paren)) = read_group(t, j) else { break };
    groups.g[groups.n] = Group { digits: d, sep: if paren { b'(' } else { sep }, end: e };
    groups.n += 1;
    total += d;
    i = e;
    after_paren = paren;
  }
  groups
}

/// The digits of `gs`, and after each group how many digits so far; `None` past `MAX_DIGITS`.
fn collect(t: &[u8], gs: &[Group]) -> Option<([u8; MAX_DIGITS], usize)> {
  let mut buf = [0u8; MAX_DIGITS];
  let mut n = 0;
  for g in gs {
    let d = g.bytes(t);
    if n + d.len() > MAX_DIGITS {
      return None;
    }
    buf[n..n + d.len()].copy_from_slice(d);
    n += d.len();
  }
  Some((buf, n))
}

/// `+` and digits at `plus`: an international number.
pub fn intl(ctx: &mut Ctx, plus: usize) -> Option<usize> {
  let t = ctx.t;
  let groups = read_groups(t, plus + 1, MAX_DIGITS);
  let e = intl_end(t, &groups, 0)?;
  ctx.push(plus, e, "phone", "pattern", P_PHONE);
  Some(e)
}

/// The end of the international number in `groups`, whose digits start with `skip_digits` digits
/// of an access code (`00`, `011`) before the calling code.
fn intl_end(t: &[u8], groups: &Groups, skip_digits: usize) -> Option<usize> {
  let last = groups.last()?.end;
  // The digits of every prefix of the groups; the calling code starts them.
  let mut buf = [0u8; MAX_DIGITS];
  let mut ends = [(0usize, 0usize); 8];
  let mut n = 0;
  let mut m = 0;
  for g in groups.iter() {
    let d = g.bytes(t);
    if n + d.len() > MAX_DIGITS {
      break;
    }
    buf[n..n + d.len()].copy_from_slice(d);
    n += d.len();
    ends[m] = (g.end, n);
    m += 1;
  }
  let code = meta::country_code(&buf[skip_digits.min(n)..n])?;
  let nsn_from = skip_digits + code.len();
  // A span ends at a group's end, not inside a longer number or word.
  let end_at = |e: usize| -> Option<usize> {
    if e == last {
      if let Some(x) = extension(t, e) {
        return Some(x);
      }
    }
    let continues = e == last && matches!(at(t, e), Some(b'-' | b'.')) && digit_at(t, e + 1);
    (!(word_at(t, e) || continues)).then_some(e)
  };
  let valid = ends[..m].iter().rev().find_map(|&(e, k)| {
    let total = k - skip_digits;
    (k > nsn_from && total >= 7 && code.valid(&buf[nsn_from..k])).then(|| end_at(e)).flatten()
  });
  // Not valid: the longest span of a possible length for the code, else (a number from a range
  // the metadata does not know yet, or mistyped) the longest of 8-15 digits: after a `+`
  // grouped digits are a phone number, validation only chooses where one ends.
  let lenient = |need_possible: bool| {
    ends[..m].iter().rev().find_map(|&(e, k)| {
      let total = k.saturating_sub(skip_digits);
      let nsn = k.saturating_sub(nsn_from);
      let trunk = buf.get(nsn_from) == Some(&b'0');
      let possible = code.possible(nsn) || (trunk && nsn > 0 && code.possible(nsn - 1));
      ((8..=15).contains(&total) && (possible || !need_possible)).then(|| end_at(e)).flatten()
    })
  };
  valid.or_else(|| lenient(true)).or_else(|| lenient(false))
}

/// A nationally written number starting at `start` (a digit or `(`).
pub fn national(ctx: &mut Ctx, start: usize) -> Option<usize> {
  let t = ctx.t;
  let groups = read_groups(t, start, MAX_DIGITS);
  // Every candidate has at least 7 digits: fewer in all groups together (`10:20:30.123`,
  // `2.13.6`) decide at once.
  let total: usize = groups.iter().map(|g| g.digits).sum();
  if groups.len() < 2 || total < 7 {
    return None;
  }
  // Stop where the separator changes (`415-555-0132 5 times`).
  let mut cut = groups.len();
  let mut sep_type = 0u8;
  for (k, g) in groups.iter().enumerate().skip(1) {
    if g.sep == b'(' {
      continue;
    }
    if sep_type == 0 {
      sep_type = g.sep;
    } else if g.sep != sep_type {
      cut = k;
      break;
    }
  }
  // Candidates: the groups up to the separator change, or fewer when the next group is long
  // (`415 555 0132 1700000000123`); never a cut inside a run of like groups.
  let found = (2..=cut).rev().find_map(|k| {
    if k < cut && groups[k].digits < 6 {
      return None;
    }
    phone_candidate(t, start, &groups[..k], sep_type)
  });
  let found = found
    .or_else(|| phone_short(t, start, &groups[..cut], sep_type))
    .or_else(|| access_coded(t, start, &groups))
    .or_else(|| validated(t, start, &groups));
  found.inspect(|&e| ctx.push(start, e, "phone", "pattern", P_PHONE))
}

/// `00 44 20 7946 0958`, `011 49 30 1234567`: an international access code, then a number
/// validated as after `+`.
fn access_coded(t: &[u8], start: usize, groups: &Groups) -> Option<usize> {
  let first = groups[0].bytes(t);
  let skip_digits = if first.starts_with(b"00") && first.get(2) != Some(&b'0') {
    2
  } else if first.starts_with(b"011") {
    3
  } else {
    return None;
  };
  // The access code stands apart or with the calling code only (`0044 20 ...`, `00 44 20 ...`);
  // `001332-1234567` is an identifier.
  if t[start] == b'(' || first.len() > skip_digits + 3 || groups.len() < 3 {
    return None;
  }
  intl_end(t, groups, skip_digits)
}

/// The groups read at `start` as one nationally written number: valid in some region, and named
/// or written as only phone numbers are.
fn validated(t: &[u8], start: usize, groups: &Groups) -> Option<usize> {
  let (digits, total) = collect(t, groups)?;
  if !(7..=15).contains(&total) {
    return None;
  }
  let mut size_buf = [0usize; 8];
  for (k, g) in groups.iter().enumerate() {
    size_buf[k] = g.digits;
  }
  let sizes = &size_buf[..groups.len()];
  // Dates, SSNs and ranges keep their meaning whatever a plan allows.
  let range = sizes == [4, 4] && groups[1].sep == b'-';
  if range || matches!(sizes, [3, 2, 4] | [4, 2, 2] | [2, 2, 4] | [2, 2, 2, 2, 2, 2]) || sizes.iter().any(|&s| s > 10) {
    return None;
  }
  // Dotted groups are versions, addresses and identifiers (`476.767.255-43`); a dotted phone
  // number is read above, with like separators throughout.
  if groups.iter().any(|g| g.sep == b'.') {
    return None;
  }
  let paren = t[start] == b'(' || groups.iter().any(|g| g.sep == b'(');
  let trunk = digits[0] == b'0' || (paren && groups[0].digits == 1 && matches!(digits[0], b'8' | b'1'));
  let ones = sizes.iter().filter(|&&s| s == 1).count();
  // A single leading digit is a trunk prefix (`8 (912) ...`, `1 800 ...`) only before a
  // parenthesised area code or a whole national number; `1 658 865` is an amount.
  let single_lead = sizes[0] == 1 && !(paren || total >= 10);
  let e = groups[groups.len() - 1].end;
  let end = match extension(t, e) {
    Some(x) => x,
    None if continues_as_number(t, e) || matches!(at(t, e), Some(b'/' | b':' | b',')) && digit_at(t, e + 1) => {
      return None
    }
    None => e,
  };
  // Written as only phone numbers are: like separators (or a parenthesised area code), area
  // code and inner groups of at most five digits, and a trunk prefix or area code in
  // parentheses (8 digits or more) or three groups of ten digits or more. Nine digits in three
  // groups are as often a SIN, a TFN or a company number (`812 345 678`): a word must name them.
  let last = sizes[sizes.len() - 1];
  let like = groups.iter().skip(1).all(|g| g.sep == groups[1].sep || g.sep == b'(' || groups[1].sep == b'(');
  let written = !single_lead
    && ones <= usize::from(trunk)
    && (like || paren)
    && (2..=8).contains(&last)
    && sizes[..sizes.len() - 1].iter().all(|&s| s <= 5)
    && (((trunk || paren) && total >= 8) || (sizes.len() >= 3 && total >= 10 && sizes[0] >= 2));
  // Named: any grouping but a range (`1234-5678` needs the word) or an amount (`1 658 865`).
  let named_ok = ones <= 1 + usize::from(trunk) && !(single_lead && total < 8) && phone_named(t, start, end, true);
  if !(written || named_ok) {
    return None;
  }
  meta::valid_national(&digits[..total]).then_some(end)
}

/// A short national number (7-9 digits: `555 1234`, `612 345 678`, `12-34-56-78`,
/// `(11) 234-567`, `1234 5678`) is as often a count, a range or an id as a phone number: it is
/// one only when the line names a phone just before it. Groups of 2-4 digits, one separator
/// (space or dash; a dot is a version or a date), not a date or an SSN.
fn phone_short(t: &[u8], start: usize, gs: &[Group], sep_type: u8) -> Option<usize> {
  let total: usize = gs.iter().map(|g| g.digits).sum();
  if !(7..=9).contains(&total) || gs.len() < 2 || gs.len() > 4 || sep_type == b'.' {
    return None;
  }
  if !gs.iter().all(|g| (2..=4).contains(&g.digits)) {
    return None;
  }
  let sizes: ([usize; 4], usize) = gs.iter().enumerate().fold(([0; 4], 0), |(mut a, _), (k, g)| {
    a[k] = g.digits;
    (a, k + 1)
  });
  match &sizes.0[..sizes.1] {
    [3, 2, 4] | [4, 2, 2] | [2, 2, 4] | [2, 2, 2] => return None,
    [4, 4] if sep_type == b'-' => return None, // a range
    _ => {}
  }
  let e = gs[gs.len() - 1].end;
  let e = match extension(t, e) {
    Some(x) => x,
    None if continues_as_number(t, e) => return None,
    None => e,
  };
  keyword_before(t, start, 40, &PHONE_WORDS).then_some(e)
}

/// The end of an extension right after a phone number ending at `e`: `x123`, ` x123`,
/// ` ext. 123`, ` ext 123`, `ext.123`, ` extn 12`, ` extension 123`, ` #123`, `;ext=123`,
/// `, ext. 12` (1-6 digits).
fn extension(t: &[u8], e: usize) -> Option<usize> {
  let mut i = e;
  if at(t, i) == Some(b',') && at(t, i + 1) == Some(b' ') {
    i += 1;
  }
  i = skip(t, i, 1, |b| b == b' ');
  let rest = &t[i.min(t.len())..];
  let word = [&b";ext="[..], b"extension", b"extn.", b"extn", b"ext.", b"ext:", b"ext", b"x", b"#"]
    .into_iter()
    .find(|w| rest.len() >= w.len() && rest[..w.len()].eq_ignore_ascii_case(w))?;
  // A comma belongs to the number only before a spelled-out extension (`, ext. 12`), not
  // before `x` or `#` (`, x2` is a new item).
  if t.get(e) == Some(&b',') && !word.starts_with(b"ext") {
    return None;
  }
  i += word.len();
  i = skip(t, i, 1, |b| b == b' ');
  let d = digits_at(t, i);
  if !(1..=6).contains(&d) || word_at(t, i + d) {
    return None;
  }
  Some(i + d)
}

fn phone_candidate(t: &[u8], start: usize, gs: &[Group], sep_type: u8) -> Option<usize> {
  if gs.len() < 2 {
    return None;
  }
  let e = gs[gs.len() - 1].end;
  let total: usize = gs.iter().map(|g| g.digits).sum();
  let first_digit = t[if t[start] == b'(' { start + 1 } else { start }];
  let has_paren = gs.iter().any(|g| g.sep == b'(');
  let mut size_buf = [0usize; 8];
  for (k, g) in gs.iter().enumerate() {
    size_buf[k] = g.digits;
  }
  let sizes = &size_buf[..gs.len()];
  // `001-415-555-0132`: the international access code, then up to 13 digits.
  let access_code =
    sizes[0] <= 4 && t[start..].starts_with(b"00") && digit_at(t, start + 2) && t[start + 2] != b'0' && total >= 10;
  let ok_total = (10..=12).contains(&total) || (total == 9 && first_digit == b'0') || (access_code && total <= 15);
  let last = *sizes.last().unwrap();
  let ones = sizes.iter().filter(|&&s| s == 1).count();
  let shape_ok = last >= 2
    && ones <= 1
    && (ones == 0 || sizes[0] == 1)
    && sizes[..sizes.len() - 1].iter().all(|&s| s <= 5)
    && (last <= 5 || sizes.len() <= 3);
  if !ok_total || !shape_ok {
    return None;
  }
  // Two groups without a trunk `0` or an area code in parentheses (`97084 31159`) only where the
  // line names a phone; three or more (`2024 01 15 10 30` is a date) only when some region's
  // plan has the number.
  let named = || keyword_before(t, start, 40, &PHONE_WORDS);
  if !(first_digit == b'0' || has_paren || access_code || named()) {
    if sizes.len() <= 2 {
      return None;
    }
    let (digits, n) = collect(t, gs)?;
    if !meta::valid_national(&digits[..n]) {
      return None;
    }
  }
  if sep_type == b'.' && (gs.len() < 3 || (gs.len() == 4 && sizes.iter().all(|&s| s <= 3))) {
    return None;
  }
  if matches!(sizes, [3, 2, 4] | [4, 2, 2] | [2, 2, 4]) {
    return None; // SSN and date shapes
  }
  match extension(t, e) {
    Some(x) => Some(x),
    None if continues_as_number(t, e) => None,
    None => Some(e),
  }
}

/// A run of digits standing alone is a phone number only when the line names a phone
/// (`call 4155550132`, `My CN number is 13812345678`, `電話番号は09012345678です`): 9-12 digits
/// of the lengths national numbers have (10-digit timestamps start with 1 and fail), or 7-15
/// digits that are a valid national number of some region.
pub fn bare(ctx: &mut Ctx, p: usize, q: usize) -> bool {
  let t = ctx.t;
  let d = &t[p..q];
  let shaped = match d.len() {
    9 => d[0] == b'0',
    10 => d[0] != b'1',
    11 => d[0] == b'0' || d[0] == b'1',
    12 => d[0] != b'0',
    _ => false,
  };
  // Ten digits starting with 1 are an epoch (`called at 1700000000`), whatever a plan allows.
  let plan = (9..=12).contains(&d.len()) && !(d.len() == 10 && d[0] == b'1');
  let e = extension(t, q).unwrap_or(q);
  // Written against a word of another script (`電話番号は09012345678です`): still alone.
  if word_at(t, e) || !(shaped || plan) || !phone_named(t, p, e, false) {
    return false;
  }
  if shaped || meta::valid_national(d) {
    ctx.push(p, e, "phone", "pattern", P_PHONE);
    return true;
  }
  false
}

/// Does the line name a phone just before `p`? (A 9-digit number is then read as a phone number
/// before it is read as an SSN.)
pub fn named_before(t: &[u8], p: usize) -> bool {
  phone_named(t, p, p, false) && !keyword_before(t, p, 48, &SSN_WORDS)
}

static SSN_WORDS: WordSet = WordSet::new(&["ssn", "social security", "social sec"]);

#[cfg(test)]
mod tests;
