//! The detection engine. One pass over the runs of token characters does almost everything:
//! at each word start a keyword prefilter (bit sets of the keywords' first four bytes, then an anchored Aho-Corasick
//! automaton over all keywords: token prefixes, `-----BEGIN`, `eyJ`, `Bearer`, `curl`) decides
//! which provider rules run; numbers go to the number shapes; long runs to the entropy check;
//! identifiers followed by an assignment operator (and containing `pass`, `token`, `key`, ... per
//! a second Aho-Corasick set) to the assignment detector. A second pass visits the rare bytes
//! `@`, `:` and `~` with memchr. Everything works on UTF-8 bytes and reports byte spans; `mod.rs`
//! merges them and maps offsets to UTF-16.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, Anchored, Input, MatchKind, StartKind};
use regex_automata::meta::Regex;
use regex_automata::util::syntax;

use super::ctx::{Ctx, P_PRIVATE_KEY, P_TOKEN};
use super::placeholder::is_placeholder_in_format;
use super::rules::{is_known_public, token_rules, End, TokenRule, Trigger};
use super::text::{at, before, entropy, is_ident, is_quote, is_word, skip, skip_back, work, WordSet, TOKEN_CHAR};
use super::{pii, secrets};

#[derive(Clone, Copy, Debug)]
enum Action {
  /// Provider token rule `rule`, triggered by its keyword number `kw`.
  Rule {
    rule: u16,
    kw: u8,
  },
  Pem,
  Putty,
  Jwt,
  Bearer,
  Curl,
  Netrc,
  K8sSecret,
}

struct CompiledRule {
  rule: TokenRule,
  regex: OnceLock<Compiled>,
}

struct Compiled {
  regex: Regex,
  /// Literals one of which every match starts with (`None`: not known), checked at the keyword
  /// before the regex runs: a keyword that merely starts a rule's prefix (`ZXlK` of the JWT rule
  /// without what must follow) then costs a comparison, not a search.
  prefixes: Option<Vec<Vec<u8>>>,
  /// Longest possible match: the rule's bound, or the pattern's own when it is shorter.
  max_len: usize,
}

impl CompiledRule {
  fn compiled(&self) -> &Compiled {
    self.regex.get_or_init(|| {
      let r = &self.rule;
      let regex = Regex::builder()
        .syntax(syntax::Config::new().unicode(false).utf8(false).case_insensitive(r.ci))
        .build(r.pattern)
        .unwrap_or_else(|e| panic!("token rule {} does not compile: {e}", r.kind));
      let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .case_insensitive(r.ci)
        .build()
        .parse(r.pattern)
        .unwrap_or_else(|e| panic!("token rule {} does not parse: {e}", r.kind));
      let max_len = hir.properties().maximum_len().map_or(r.max_len, |m| m.min(r.max_len));
      let seq = regex_syntax::hir::literal::Extractor::new().extract(&hir);
      let prefixes = seq
        .literals()
        .filter(|lits| !lits.is_empty() && lits.iter().all(|l| !l.as_bytes().is_empty()))
        .map(|lits| lits.iter().map(|l| l.as_bytes().to_vec()).collect());
      Compiled { regex, prefixes, max_len }
    })
  }
}

pub struct Engine {
  rules: Vec<CompiledRule>,
  /// The keyword prefilter: an anchored Aho-Corasick automaton over every word-start keyword,
  /// run only where a word's first bytes fit the bit sets below.
  ac: AhoCorasick,
  /// Per keyword: what to run when it matches, including the actions of every shorter keyword
  /// that is a prefix of it (the automaton reports the longest), each with its keyword length.
  actions: Vec<Vec<(Action, u16)>>,
  /// Bucket (1-based, 0 = none) of the lowercased first two bytes of a keyword, and per bucket
  /// the set of possible third bytes: the automaton runs only where three bytes fit.
  first2: Box<[u8; 16384]>,
  third: Vec<u128>,
  /// Bit per first-two-bytes pair that starts a keyword (2 KiB: stays in L1), and the possible
  /// fourth bytes per first three (most English words starting like a keyword stop there).
  first2_bits: Box<[u64; 256]>,
  /// A Bloom filter over the first three bytes (first two as in `first2`, the third as it
  /// stands) of every word start the third-byte test of [`Self::keyword_at`] lets through: one
  /// look rejects the quarter of prose words whose first two bytes start a keyword (`re`, `se`,
  /// `be`) and whose third does not, without the call. 8 KiB, to stay in L1.
  first3_bloom: Box<[u64; 1024]>,
  fourth: rustc_hash::FxHashMap<[u8; 3], u128>,
  /// Rules whose keyword follows a `:`, precedes a `~`, or sits inside a long token.
  colon_rules: Vec<usize>,
  tilde_rules: Vec<usize>,
  /// Rules found at a `|` between a digit and a token character.
  pipe_rules: Vec<usize>,
  /// (rule, shortest run it can be in, a searcher for its keyword built once).
  infix_rules: Vec<(usize, usize, memchr::memmem::Finder<'static>)>,
  /// Per byte, the infix rules (bit `i % 64` for rule `i`) whose keyword starts with it: a long
  /// run searches only for the keywords whose first byte it holds (hashes, UUIDs and most ids
  /// hold none; a URL path's `-` starts only `-us`).
  infix_first: [u64; 256],
}

/// Identifier words that may name a secret in an assignment (`pass` covers password, passwd,
/// passphrase; `cred` credential(s), creds; `auth` authorization, oauth).
const ASSIGN_WORD_LIST: &[&str] =
  &["pass", "pwd", "pw", "secret", "token", "key", "auth", "cred", "sig", "session", "cookie", "bearer"];
static ASSIGN_WORDS: WordSet = WordSet::new(ASSIGN_WORD_LIST);

/// The shortest identifier that [`Engine::assignment`] can hand on: the shortest of
/// [`ASSIGN_WORD_LIST`] (`ends_in_id` and `bundler_host` need 8 and 12 bytes). Shorter ones (the
/// `1` of `1:1:1:`, the `a` of `a://`) are refused before the memo of [`has_assign_word`], whose
/// thread-local look-up was a quarter of the time of a text of such assignments.
const MIN_ASSIGN_IDENT: usize = {
  let mut min = 8;
  let mut i = 0;
  while i < ASSIGN_WORD_LIST.len() {
    if ASSIGN_WORD_LIST[i].len() < min {
      min = ASSIGN_WORD_LIST[i].len();
    }
    i += 1;
  }
  min
};

/// An identifier that ends in `id` (`discord_client_id`, `adobeClientId`): a provider's client or
/// app id counts as a credential half (`secrets::classify_ident` decides). Asked of the last two
/// bytes only, so that ids in general cost nothing more.
#[inline]
fn ends_in_id(ident: &[u8]) -> bool {
  ident.len() >= 8 && ident[ident.len() - 2..].eq_ignore_ascii_case(b"id")
}

/// Identifiers up to this length have their [`ASSIGN_WORDS`] answer remembered.
const MEMO_IDENT: usize = 32;
/// Slots of the memo (a power of two). An API response's keys and short values (every quoted
/// value before a `,` is asked too: `"get",`) outnumber 256 slots across the messages of one
/// caller; with 1,024 (41 KB per thread) the JSON corpus ran 1.05x faster (paired), with 64
/// 0.95x.
const MEMO_SLOTS: usize = 1024;
const _: () = assert!(MEMO_SLOTS.is_power_of_two() && MEMO_SLOTS >= 256);

/// A direct-mapped memo per thread of [`ASSIGN_WORDS`] in an identifier. Keys of JSON, YAML and
/// log lines repeat line after line (`"url":`, `created_at:`, `user=`), and most that share a
/// first byte pair with a word (`co`ntent, `si`te_admin, `cr`eated_at, `to`tal_count) went to
/// the word automaton every time. An identifier is kept as its length and four words that
/// cover all its bytes ([`ident_key`]), so a look-up is a multiply and four comparisons.
struct IdentMemo {
  keys: [(usize, [u64; 4]); MEMO_SLOTS],
  vals: [bool; MEMO_SLOTS],
}

thread_local! {
  static IDENT_MEMO: std::cell::RefCell<IdentMemo> = const {
    // Length 0 marks an empty slot: identifiers are never empty.
    std::cell::RefCell::new(IdentMemo { keys: [(0, [0; 4]); MEMO_SLOTS], vals: [false; MEMO_SLOTS] })
  };
}

/// An identifier of 1 to [`MEMO_IDENT`] bytes as its length and four little-endian words that
/// together hold every byte (overlapping loads from both ends; zero-padded below 8 bytes): for
/// one length, different identifiers give different words.
#[inline]
pub(super) fn ident_key(ident: &[u8]) -> Option<(usize, [u64; 4])> {
  let n = ident.len();
  let load = |i: usize| u64::from_le_bytes(ident[i..i + 8].try_into().expect("8 bytes"));
  match n {
    1..=7 => {
      let mut w = 0u64;
      for (k, &b) in ident.iter().enumerate() {
        w |= (b as u64) << (8 * k);
      }
      Some((n, [w, 0, 0, 0]))
    }
    8..=16 => Some((n, [load(0), load(n - 8), 0, 0])),
    17..=MEMO_IDENT => Some((n, [load(0), load(8), load(n - 16), load(n - 8)])),
    _ => None,
  }
}

/// A slot index (0 to 255) for an [`ident_key`]: one multiply over the words, where hashing the
/// bytes one at a time cost a dependent multiply per byte.
#[inline]
pub(super) fn ident_slot(key: &(usize, [u64; 4])) -> usize {
  (ident_hash(key) >> 56) as usize
}

/// The hash [`ident_slot`] takes its top byte from (memos of more than 256 slots take more).
#[inline]
fn ident_hash(key: &(usize, [u64; 4])) -> u64 {
  let (n, w) = key;
  (w[0] ^ w[1].rotate_left(17) ^ w[2].rotate_left(31) ^ w[3].rotate_left(47) ^ *n as u64)
    .wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// `ASSIGN_WORDS.in_text(ident)`, remembered (it depends on the identifier's bytes only).
fn has_assign_word(ident: &[u8]) -> bool {
  let Some(key) = ident_key(ident) else { return ASSIGN_WORDS.in_text(ident) };
  let slot = (ident_hash(&key) >> (64 - MEMO_SLOTS.trailing_zeros())) as usize;
  IDENT_MEMO.with(|memo| {
    let mut m = memo.borrow_mut();
    if m.keys[slot] == key {
      return m.vals[slot];
    }
    let v = ASSIGN_WORDS.in_text(ident);
    m.keys[slot] = key;
    m.vals[slot] = v;
    v
  })
}

/// Is the operator after the identifier `t[a..b]` (past a closing quote) a `,` right after it,
/// with no quote before the identifier? `secrets::assignment_on` takes a `,` only after a quoted
/// key (`"password", "hunter2"`) or after a CLI flag and a blank, so it stops there: asked first,
/// this spares the word search of the identifier of every quoted URL or path followed by a
/// comma (a JSON string value: `"https://api.github.com/users/x/followers",`).
#[inline]
fn bare_comma_after(t: &[u8], a: usize, b: usize) -> bool {
  let mut p = b;
  if at(t, p).is_some_and(is_quote) {
    p += 1;
  } else if at(t, p) == Some(b'\\') && at(t, p + 1).is_some_and(is_quote) {
    p += 2;
  }
  at(t, p) == Some(b',') && !before(t, a).is_some_and(is_quote)
}

/// Bundler's per-host credentials (`BUNDLE_GEMS__CONTRIBSYS__COM=user:password`).
#[inline]
fn bundler_host(ident: &[u8]) -> bool {
  ident.starts_with(b"BUNDLE_") && ident.ends_with(b"__COM")
}

static ENGINE: OnceLock<Engine> = OnceLock::new();

pub fn engine() -> &'static Engine {
  ENGINE.get_or_init(Engine::new)
}

/// Bit of the first-three-bytes filter for the first-two index `i` and the third byte `c`.
#[inline(always)]
fn bloom3_index(i: usize, c: u8) -> usize {
  ((((i as u32) << 8) | c as u32).wrapping_mul(0x9e37_79b1) >> 16) as usize
}

#[inline]
fn first2_index(b0: u8, b1: u8) -> Option<usize> {
  let (b0, b1) = (b0.to_ascii_lowercase(), b1.to_ascii_lowercase());
  if b0 < 128 && b1 < 128 {
    Some(((b0 as usize) << 7) | b1 as usize)
  } else {
    None
  }
}

impl Engine {
  fn new() -> Engine {
    let rules: Vec<CompiledRule> =
      token_rules().into_iter().map(|rule| CompiledRule { rule, regex: OnceLock::new() }).collect();
    let mut patterns: Vec<String> = Vec::new();
    let mut own: Vec<Vec<Action>> = Vec::new();
    let mut add = |pattern: &str, action: Action| {
      let key = pattern.to_ascii_lowercase();
      let id = match patterns.iter().position(|p| *p == key) {
        Some(id) => id,
        None => {
          patterns.push(key);
          own.push(Vec::new());
          patterns.len() - 1
        }
      };
      own[id].push(action);
    };
    let (mut colon_rules, mut tilde_rules, mut infix_rules) = (Vec::new(), Vec::new(), Vec::new());
    let mut pipe_rules = Vec::new();
    for (i, r) in rules.iter().enumerate() {
      match r.rule.trigger {
        Trigger::WordStart => {
          for (k, kw) in r.rule.keywords.iter().enumerate() {
            add(kw, Action::Rule { rule: i as u16, kw: k as u8 });
          }
        }
        Trigger::Colon => colon_rules.push(i),
        Trigger::Tilde => tilde_rules.push(i),
        Trigger::Pipe => pipe_rules.push(i),
        Trigger::Infix(min) => infix_rules.push((i, min, memchr::memmem::Finder::new(r.rule.keywords[0].as_bytes()))),
      }
    }
    add("-----begin", Action::Pem);
    add("putty-user-key-file-", Action::Putty);
    add("eyj", Action::Jwt);
    add("bearer", Action::Bearer);
    add("curl", Action::Curl);
    add("machine", Action::Netrc);
    add("kind", Action::K8sSecret);
    let mut actions = Vec::with_capacity(patterns.len());
    let mut first2 = Box::new([0u8; 16384]);
    let mut third: Vec<u128> = vec![0];
    let mut first2_bits = Box::new([0u64; 256]);
    let mut fourth: rustc_hash::FxHashMap<[u8; 3], u128> = rustc_hash::FxHashMap::default();
    for p in &patterns {
      let mut list = Vec::new();
      for (q, acts) in patterns.iter().zip(&own) {
        if p.starts_with(q.as_str()) {
          list.extend(acts.iter().map(|&a| (a, q.len() as u16)));
        }
      }
      actions.push(list);
      let b = p.as_bytes();
      let i = first2_index(b[0], b[1]).expect("keywords are ASCII");
      if first2[i] == 0 {
        third.push(0);
        first2[i] = u8::try_from(third.len() - 1).expect("fewer than 256 keyword buckets");
      }
      let bucket = &mut third[first2[i] as usize];
      *bucket |= match b.get(2) {
        Some(&c) if c < 128 => 1u128 << c.to_ascii_lowercase(),
        _ => u128::MAX,
      };
      first2_bits[i >> 6] |= 1 << (i & 63);
      if b.len() >= 3 {
        *fourth.entry([b[0], b[1], b[2]]).or_insert(0) |= match b.get(3) {
          Some(&c) if c < 128 => 1u128 << c.to_ascii_lowercase(),
          _ => u128::MAX,
        };
      }
    }
    // Every (first two, third) the third-byte test passes goes into the filter: a word start it
    // rejects is one `keyword_at` would have returned from.
    let mut first3_bloom = Box::new([0u64; 1024]);
    for (i, &bucket) in first2.iter().enumerate() {
      if bucket == 0 {
        continue;
      }
      for c in 0..128u8 {
        if third[bucket as usize] & (1u128 << c) != 0 {
          let k = bloom3_index(i, c);
          first3_bloom[k >> 6] |= 1 << (k & 63);
        }
      }
    }
    let ac = AhoCorasickBuilder::new()
      .ascii_case_insensitive(true)
      .match_kind(MatchKind::LeftmostLongest)
      .start_kind(StartKind::Anchored)
      .kind(Some(AhoCorasickKind::DFA))
      .build(&patterns)
      .expect("keyword automaton");
    let mut infix_first = [0u64; 256];
    for (i, (_, _, finder)) in infix_rules.iter().enumerate() {
      // (Past 64 rules, bits are shared: a rule may then be searched for without need, never skipped.)
      infix_first[finder.needle()[0] as usize] |= 1 << (i % 64);
    }
    Engine {
      rules,
      ac,
      actions,
      first2,
      third,
      first2_bits,
      first3_bloom,
      fourth,
      colon_rules,
      tilde_rules,
      pipe_rules,
      infix_rules,
      infix_first,
    }
  }

  /// Number of provider rules (the size of `Ctx::rule_until`).
  pub fn rule_count(&self) -> usize {
    self.rules.len()
  }

  /// Runs every detector over `ctx.t`, leaving raw (unmerged) hits in `ctx.hits`.
  pub fn detect(&self, ctx: &mut Ctx) {
    work::add(ctx.t.len());
    self.scan_runs(ctx);
    self.scan_punctuation(ctx);
    if ctx.hits.iter().any(|h| h.cond) {
      // Conditional hits are kept where they overlap a provider token match; both lists are
      // sorted by start, so one merge-like walk decides (no hit-by-hit search).
      let mut tokens: Vec<(usize, usize)> =
        ctx.hits.iter().filter(|h| h.prio == P_TOKEN).map(|h| (h.start, h.end)).collect();
      tokens.sort_unstable();
      // Longest end among tokens starting before each point, for overlap tests.
      let mut reach = Vec::with_capacity(tokens.len());
      let mut far = 0;
      for &(_, e) in &tokens {
        far = far.max(e);
        reach.push(far);
      }
      ctx.hits.retain(|h| {
        if !h.cond {
          return true;
        }
        // Tokens starting before `h.end`; the farthest of them must end after `h.start`.
        let i = tokens.partition_point(|&(s, _)| s < h.end);
        i > 0 && reach[i - 1] > h.start
      });
    }
  }

  /// The main pass: every run of token characters (`[A-Za-z0-9+/_-]`) is looked at once: the
  /// keyword prefilter at each word start in it, numbers in it (which may continue across
  /// separators into later runs), long runs for randomness, and identifiers followed by an
  /// assignment operator for `password=` / `token:` values.
  pub fn scan_runs(&self, ctx: &mut Ctx) {
    let t = ctx.t;
    let n = t.len();
    let mut numbers_until = 0;
    // Runs are found 64 bytes at a time from bitmasks (token, digit and `-/+` bytes). A run that
    // reaches the end of a block is `open` (its start, and whether it holds digits or `-/+` so
    // far, and whether it is digits only) until a later block ends it.
    let mut open: Option<(usize, bool, bool, bool)> = None;
    let mut b = 0;
    'blocks: while b < n {
      let (tm, dm, sm) = masks64(t, b);
      // Token bits not yet looked at, of runs that start in this block.
      let mut rest = tm;
      if let Some((s, digits, seps, all_digits)) = open {
        let stop = !tm;
        if stop == 0 {
          open = Some((s, digits || dm != 0, seps || sm != 0, all_digits && dm == !0));
          b += 64;
          continue;
        }
        let end = stop.trailing_zeros();
        let range = (1u64 << end) - 1;
        open = None;
        let class = Class {
          digit: digits || dm & range != 0,
          sep: seps || sm & range != 0,
          all_digits: all_digits && dm & range == range,
        };
        if let Some(r) = self.run(ctx, s, b + end as usize, class, &mut numbers_until) {
          // The runs up to `r` (after this one, which ends before it) need no look: scanning
          // restarts there, at a byte that is not a token character.
          b = r;
          continue 'blocks;
        }
        rest &= !range;
      }
      // Each turn looks at the run starting at the lowest bit of `rest` and clears the bits up
      // to its end, or leaves the block with the run open.
      while rest != 0 {
        let start = rest.trailing_zeros();
        let from = !0u64 << start;
        let stop = !tm & from;
        if stop == 0 {
          open = Some((b + start as usize, dm & from != 0, sm & from != 0, dm & from == from));
          break;
        }
        let end = stop.trailing_zeros();
        let range = from & !(!0u64 << end);
        let (s, e) = (b + start as usize, b + end as usize);
        let class = Class { digit: dm & range != 0, sep: sm & range != 0, all_digits: dm & range == range };
        if let Some(r) = self.run(ctx, s, e, class, &mut numbers_until) {
          b = r;
          continue 'blocks;
        }
        rest &= !0u64 << end;
      }
      b += 64;
    }
    if let Some((s, digit, sep, all_digits)) = open {
      // A resume point lies past the end of the text here: nothing is left to scan.
      let _ = self.run(ctx, s, n, Class { digit, sep, all_digits }, &mut numbers_until);
    }
  }

  /// One run of token characters `t[s..e]`. Most runs are short words with nothing after them
  /// that looks like an assignment: they only need the keyword check, done here inline.
  /// Returns where scanning may resume when the runs that follow this one need no look (see
  /// [`log_timestamp_end`]).
  #[inline(always)]
  fn run(&self, ctx: &mut Ctx, s: usize, e: usize, class: Class, numbers_until: &mut usize) -> Option<usize> {
    if !class.digit && !class.sep && e - s < 16 {
      self.word_start(ctx, s);
      if assignment_follows(ctx.t, s, e) {
        self.assignment(ctx, s, e);
      }
      None
    } else if class.all_digits && e - s < 16 {
      self.digit_run(ctx, s, e, numbers_until);
      None
    } else {
      self.long_run(ctx, s, e, class.digit, class.sep, numbers_until)
    }
  }

  /// [`Self::long_run`] for a run of fewer than 16 digits (status codes, durations, counts):
  /// one number, whose digits end where the run ends.
  #[inline(never)]
  fn digit_run(&self, ctx: &mut Ctx, s: usize, e: usize, numbers_until: &mut usize) {
    self.word_start(ctx, s);
    if e > *numbers_until {
      let j = s.max(*numbers_until);
      *numbers_until = pii::number_run(ctx, j, e).max(e);
    }
    // Digits alone name no secret (every assignment word holds a letter): only an identifier
    // that goes on before them through a `.` (`config.1:`) can.
    if before(ctx.t, s) == Some(b'.') && assignment_follows(ctx.t, s, e) {
      self.assignment(ctx, s, e);
    }
  }

  #[inline(never)]
  fn long_run(
    &self,
    ctx: &mut Ctx,
    s: usize,
    e: usize,
    has_digit: bool,
    has_sep: bool,
    numbers_until: &mut usize,
  ) -> Option<usize> {
    let t = ctx.t;
    if has_digit && has_sep && e - s == 13 && *numbers_until <= s {
      if let Some(r) = log_timestamp_end(t, s) {
        return Some(r);
      }
    }
    self.word_start(ctx, s);
    if has_sep {
      let stop = e.saturating_sub(2).max(s);
      for (x, &byte) in t[s..stop].iter().enumerate() {
        if matches!(byte, b'-' | b'/' | b'+') {
          self.word_start(ctx, s + x + 1);
        }
      }
    }
    if has_digit && e > *numbers_until {
      let mut j = s.max(*numbers_until);
      // In a run of word bytes only (no `-/+`), a digit group with three word bytes before it
      // and a word byte after it is one `number_run` leaves at once (attached, no IBAN start,
      // nothing joined after it): only the groups near the run's start and its trailing digits
      // need a look. This skips the many groups inside hex ids and hashes.
      let (mid, tail) =
        if has_sep { (e, e) } else { (s + 3, e - t[s..e].iter().rev().take_while(|b| b.is_ascii_digit()).count()) };
      // Each turn moves `j` past at least one byte: past a non-digit, or past the number
      // (`number_run` returns a position after its digits), or on to `tail`, after it.
      while j < e {
        if j >= mid && j < tail {
          j = tail;
        } else if t[j].is_ascii_digit() {
          let q = skip(t, j + 1, usize::MAX, |b| b.is_ascii_digit());
          *numbers_until = pii::number_run(ctx, j, q).max(q);
          j = *numbers_until;
        } else {
          j += 1;
        }
      }
    }
    let len = e - s;
    if len >= 16 {
      let held = if len >= 35 { t[s..e].iter().fold(0u64, |m, &b| m | self.infix_first[b as usize]) } else { 0 };
      if held != 0 {
        for (i, (ri, min, finder)) in self.infix_rules.iter().enumerate() {
          if len >= *min && held & (1 << (i % 64)) != 0 {
            let kw_len = finder.needle().len();
            work::add(len);
            for x in finder.find_iter(&t[s..e]) {
              self.run_rule(ctx, *ri, 0, s + x, s + x + kw_len);
            }
          }
        }
      }
      if has_digit {
        let pe = skip(t, e, 2, |b| b == b'=');
        secrets::token_at(ctx, s, pe);
      } else if !has_sep {
        secrets::letters_at(ctx, s, e);
      }
    }
    if assignment_follows(t, s, e) {
      self.assignment(ctx, s, e);
    }
    None
  }

  /// The run `t[s..e]`, followed by an assignment operator, as the end of an identifier naming
  /// a secret (`DB_PASSWORD=`, `config.token:`).
  #[inline(never)]
  fn assignment(&self, ctx: &mut Ctx, s: usize, e: usize) {
    let t = ctx.t;
    let a = skip_back(t, s, 64, is_ident);
    let b = skip_back(t, e, e - s, |b| b == b'.');
    if b >= a + MIN_ASSIGN_IDENT
      && b - a <= 128
      && !bare_comma_after(t, a, b)
      && (ends_in_id(&t[a..b]) || bundler_host(&t[a..b]) || has_assign_word(&t[a..b]))
    {
      secrets::assignment_on(ctx, a, b);
    }
  }

  /// The keyword prefilter at a word start: four bytes of bit sets, then the anchored automaton.
  /// The first test (can a keyword start with these two bytes?) rejects most words, inline.
  /// Every keyword has two bytes at least, so a word start at the last byte has none.
  #[inline(always)]
  fn word_start(&self, ctx: &mut Ctx, j: usize) {
    let t = ctx.t;
    let Some(i) = at(t, j + 1).and_then(|b1| first2_index(t[j], b1)) else { return };
    let pass = match at(t, j + 2) {
      Some(c) => {
        let k = bloom3_index(i, c.to_ascii_lowercase());
        self.first3_bloom[k >> 6] & (1 << (k & 63)) != 0
      }
      None => self.first2_bits[i >> 6] & (1 << (i & 63)) != 0,
    };
    if pass {
      self.keyword_at(ctx, j, i);
    }
  }

  /// [`Self::word_start`] past its first test: `i` is the index of the first two bytes.
  #[inline(never)]
  fn keyword_at(&self, ctx: &mut Ctx, j: usize, i: usize) {
    let t = ctx.t;
    let bucket = self.first2[i];
    // The third and fourth bytes, when the text has them (a shorter keyword may end before).
    if let Some(c) = at(t, j + 2).map(|c| c.to_ascii_lowercase()) {
      if c >= 128 || self.third[bucket as usize] & (1u128 << c) == 0 {
        return;
      }
      if let Some(&f) = self.fourth.get(&[t[j].to_ascii_lowercase(), t[j + 1].to_ascii_lowercase(), c]) {
        if let Some(d) = at(t, j + 3).map(|d| d.to_ascii_lowercase()) {
          if d >= 128 || f & (1u128 << d) == 0 {
            return;
          }
        }
      }
    }
    work::add(32); // the automaton stops within the longest keyword
    let input = Input::new(t).range(j..).anchored(Anchored::Yes);
    let Ok(Some(m)) = self.ac.try_find(input) else { return };
    for &(action, len) in &self.actions[m.pattern().as_usize()] {
      let (s, e) = (j, j + len as usize);
      match action {
        Action::Rule { rule, kw } => self.run_rule(ctx, rule as usize, kw as usize, s, e),
        Action::Pem => secrets::pem_at(ctx, s),
        Action::Putty => secrets::putty_at(ctx, s),
        Action::Jwt => {
          if &t[s..e] == b"eyJ" {
            secrets::jwt_at(ctx, s)
          }
        }
        Action::Bearer => secrets::bearer_at(ctx, s),
        Action::Curl => secrets::curl_at(ctx, s),
        Action::Netrc => secrets::netrc_at(ctx, s),
        Action::K8sSecret => secrets::k8s_secret_at(ctx, s),
      }
    }
  }

  /// `@` (e-mail), `:` (IPv6, `scheme://` credentials, `:A` Telegram and `:APA91b` Firebase
  /// tokens), `~` (Azure client secrets) and `|` after a digit (Facebook app tokens): found with
  /// memchr, they are rare in prose.
  fn scan_punctuation(&self, ctx: &mut Ctx) {
    let t = ctx.t;
    for c in memchr::memchr_iter(b'@', t) {
      pii::email_at(ctx, c);
    }
    let mut v6_from = 0;
    for c in memchr::memchr_iter(b':', t) {
      if t[c + 1..].starts_with(b"//") {
        secrets::url_at(ctx, c);
        continue;
      }
      if t[c + 1..].starts_with(b"A") && before(t, c).is_some_and(|b| b.is_ascii_digit()) {
        for &ri in &self.colon_rules {
          let kw = self.rules[ri].rule.keywords[0].as_bytes();
          if t[c..].starts_with(kw) {
            self.run_rule(ctx, ri, 0, c, c + kw.len());
          }
        }
      }
      if c >= v6_from {
        // The first `:` of a log line's `THH:MM:SS`: the address it could start is glued to the
        // `T` before it, which `ipv6_at` refuses once it has measured the run, without a finding.
        v6_from = if c >= 3 && t[c - 3] == b'T' && t[c - 2].is_ascii_digit() && t[c - 1].is_ascii_digit() {
          pii::v6_run_end(t, c)
        } else {
          pii::ipv6_at(ctx, c)
        };
      }
    }
    for c in memchr::memchr_iter(b'~', t) {
      if before(t, c) == Some(b'Q') {
        for &ri in &self.tilde_rules {
          self.run_rule(ctx, ri, 0, c - 1, c + 1);
        }
      }
    }
    for c in memchr::memchr_iter(b'|', t) {
      if before(t, c).is_some_and(|b| b.is_ascii_digit()) && at(t, c + 1).is_some_and(|b| TOKEN_CHAR[b as usize]) {
        for &ri in &self.pipe_rules {
          self.run_rule(ctx, ri, 0, c, c + 1);
        }
      }
    }
  }

  /// Runs rule `ri`, whose keyword number `kw` was found at `ks..ke`.
  ///
  /// Matches of one rule never overlap (as with a regex's find-all): a keyword inside the last
  /// match of its rule, accepted or not, is skipped, so a run of keywords costs one match. The
  /// search is anchored at the keyword for rules whose match starts there (most), so it stops
  /// where the pattern stops matching instead of scanning its whole window.
  fn run_rule(&self, ctx: &mut Ctx, ri: usize, kw: usize, ks: usize, ke: usize) {
    let t = ctx.t;
    let cr = &self.rules[ri];
    let r = &cr.rule;
    if ks < ctx.rule_until(ri) || (r.exact && &t[ks..ke] != r.keywords[kw].as_bytes()) {
      return;
    }
    if r.tail > 0 && skip(t, ke, r.tail, |b| TOKEN_CHAR[b as usize]) - ke < r.tail {
      return;
    }
    let compiled = cr.compiled();
    if r.back == 0 {
      if let Some(prefixes) = &compiled.prefixes {
        work::add(prefixes.len());
        if !prefixes.iter().any(|p| t[ks..].starts_with(p)) {
          return;
        }
      }
    }
    let ws = ks.saturating_sub(r.back).max(ctx.rule_until(ri));
    let we = (ks + compiled.max_len + 1).min(t.len());
    let re = &compiled.regex;
    let mut pos = ws;
    // Each turn moves `pos` past the start of the match it looked at.
    while pos <= ks {
      let mut input = regex_automata::Input::new(t).range(pos..we);
      if r.back == 0 {
        input = input.anchored(regex_automata::Anchored::Yes);
      }
      work::add(we - pos);
      let Some(m) = re.search(&input) else { return };
      if m.start() > ks {
        return;
      }
      let (ms, mut me) = (m.start(), m.end());
      if me == we && we < t.len() {
        // The window cut the match: take it whole. Anchored at its start, the search ends where
        // the pattern stops matching.
        let whole = regex_automata::Input::new(t).range(ms..).anchored(regex_automata::Anchored::Yes);
        match re.search(&whole) {
          Some(full) => me = full.end(),
          None => return,
        }
        work::add(me - ms);
      }
      ctx.set_rule_until(ri, me);
      if me >= ke && self.accept(ctx, r, ms, me) {
        ctx.push(ms, me, r.kind, "pattern", if r.blocks { P_PRIVATE_KEY } else { P_TOKEN });
        if r.blocks {
          ctx.blocked = true;
        }
        return;
      }
      pos = ms + 1;
    }
  }

  fn accept(&self, ctx: &Ctx, r: &TokenRule, ms: usize, me: usize) -> bool {
    let t = ctx.t;
    let v = &t[ms..me];
    let next = at(t, me);
    // The end of the text counts as a delimiter.
    let end_ok = match r.end {
      End::Any => true,
      End::NotAlnum => !next.is_some_and(|c| c.is_ascii_alphanumeric()),
      End::NotToken => !next.is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-')),
      End::Delim => next.is_none_or(|c| {
        c.is_ascii_whitespace()
          || matches!(c, b'"' | b'\'' | b'`' | b';' | b',' | b')' | b']' | b'}' | b'>' | b'<' | b'&' | b'|' | b'\\')
          || (c == b'.' && at(t, me + 1).is_none_or(|d| d.is_ascii_whitespace()))
      }),
    };
    if !end_ok {
      return false;
    }
    if r.left_delim && before(t, ms).is_some_and(|c| is_word(c) || matches!(c, b'-' | b'~' | b'.')) {
      return false;
    }
    if r.placeholder && is_placeholder_in_format(v) {
      return false;
    }
    if r.min_entropy > 0.0 && entropy(v) < r.min_entropy {
      return false;
    }
    !is_known_public(v)
  }

  /// The token rules, for the benchmark's JavaScript baseline: (kind, pattern, case-insensitive).
  pub fn patterns(&self) -> Vec<(&'static str, &'static str, bool)> {
    self.rules.iter().map(|r| (r.rule.kind, r.rule.pattern, r.rule.ci)).collect()
  }

  /// Every keyword that makes a detector run (tests).
  #[cfg(test)]
  pub fn keywords(&self) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = self.rules.iter().flat_map(|r| r.rule.keywords.iter().copied()).collect();
    out.extend(["-----BEGIN", "PuTTY-User-Key-File-", "eyJ", "Bearer", "curl", "machine", "kind"]);
    out
  }

  /// Compiles every rule now (tests, warm-up).
  #[cfg_attr(not(test), allow(dead_code))]
  pub fn compile_all(&self) {
    for r in &self.rules {
      r.compiled();
    }
  }
}

/// What the masks say of a run: does it hold a digit, a `-` `/` `+`, nothing but digits?
#[derive(Clone, Copy)]
struct Class {
  digit: bool,
  sep: bool,
  all_digits: bool,
}

/// Where scanning may resume after a log line's timestamp `YYYY-MM-DDTHH:MM:SS[.f]Z` (a
/// fraction of one to four digits) whose first run `YYYY-MM-DDTHH` starts at `s`: the byte after
/// the `Z`, which is no token character. Every detector of the main pass leaves such a
/// timestamp without a finding whatever its digits, as long as nothing before it joins it: no
/// word keyword starts with two digits (nor with a digit and `Z`), the date is one shape and the
/// time's groups too few digits for any other (`number_at`), and what precedes an `=` or `:` in
/// it holds no letter but `T` and `Z` (the assignment words need more). The byte before must
/// not make it part of something else: not a word byte or `.` (an identifier, a version), `+`
/// or `(` (a phone number), which the callers' condition (a run starts at `s`, and no number
/// from before reaches into it) and the list below ensure. (The `:` of the time are the
/// punctuation pass's, which looks at them on its own.)
#[inline]
fn log_timestamp_end(t: &[u8], s: usize) -> Option<usize> {
  if !before(t, s).is_none_or(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'"' | b'\'' | b'[' | b'=' | b'`')) {
    return None;
  }
  let x = t.get(s..s + 19)?;
  let d = |i: usize| x[i].is_ascii_digit();
  let shape = d(0) && d(1) && d(2) && d(3) && x[4] == b'-' && d(5) && d(6) && x[7] == b'-' && d(8) && d(9);
  if !(shape && x[10] == b'T' && d(11) && d(12) && x[13] == b':' && d(14) && d(15) && x[16] == b':' && d(17) && d(18)) {
    return None;
  }
  let mut i = s + 19;
  if at(t, i) == Some(b'.') {
    let f = skip(t, i + 1, 5, |b| b.is_ascii_digit()) - (i + 1);
    if !(1..=4).contains(&f) {
      return None;
    }
    i += 1 + f;
  }
  if at(t, i) != Some(b'Z') || at(t, i + 1).is_some_and(|b| TOKEN_CHAR[b as usize]) {
    return None;
  }
  Some(i + 1)
}

/// Bitmasks of 64 bytes starting at `b` (bits past the end are 0): token characters
/// (`[A-Za-z0-9+/_-]`), digits, and `-` `/` `+`.
#[inline]
fn masks64(t: &[u8], b: usize) -> (u64, u64, u64) {
  if b + 64 <= t.len() {
    #[cfg(target_arch = "x86_64")]
    {
      let (mut tm, mut dm, mut sm) = (0u64, 0u64, 0u64);
      for k in 0..4 {
        let (x, y, z) = sse2::classify16(&t[b + 16 * k..b + 16 * k + 16]);
        tm |= (x as u64) << (16 * k);
        dm |= (y as u64) << (16 * k);
        sm |= (z as u64) << (16 * k);
      }
      return (tm, dm, sm);
    }
  }
  let (mut tm, mut dm, mut sm) = (0u64, 0u64, 0u64);
  for (k, &c) in t[b..(b + 64).min(t.len())].iter().enumerate() {
    tm |= (TOKEN_CHAR[c as usize] as u64) << k;
    dm |= (c.is_ascii_digit() as u64) << k;
    sm |= (matches!(c, b'-' | b'/' | b'+') as u64) << k;
  }
  (tm, dm, sm)
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
  use std::arch::x86_64::{
    __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8,
    _mm_or_si128, _mm_set1_epi8,
  };

  /// (token, digit, separator) masks of 16 bytes. SSE2 is part of every x86_64 CPU.
  #[inline(always)]
  pub fn classify16(chunk: &[u8]) -> (u32, u32, u32) {
    assert!(chunk.len() >= 16);
    // SAFETY: the load reads 16 bytes, which the assert guarantees; SSE2 is always available
    // on x86_64.
    unsafe {
      let v = _mm_loadu_si128(chunk.as_ptr() as *const __m128i);
      let lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
      let alpha = _mm_and_si128(_mm_cmpgt_epi8(lower, _mm_set1_epi8(0x60)), _mm_cmplt_epi8(lower, _mm_set1_epi8(0x7b)));
      let digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(0x2f)), _mm_cmplt_epi8(v, _mm_set1_epi8(0x3a)));
      let sep = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'-' as i8)), _mm_cmpeq_epi8(v, _mm_set1_epi8(b'/' as i8))),
        _mm_cmpeq_epi8(v, _mm_set1_epi8(b'+' as i8)),
      );
      let under = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'_' as i8));
      let token = _mm_or_si128(_mm_or_si128(alpha, digit), _mm_or_si128(sep, under));
      (
        _mm_movemask_epi8(token) as u32 & 0xffff,
        _mm_movemask_epi8(digit) as u32 & 0xffff,
        _mm_movemask_epi8(sep) as u32 & 0xffff,
      )
    }
  }
}

/// Cheap look at what follows an identifier: `=`, `:` (not `::`), `>` (XML), `,` (quoted
/// keys), `?=` / `||=`, a space then a value (CLI flags `--password x`), or ` is ` / ` was `.
/// The assignment detector then parses it properly.
#[inline(always)]
fn assignment_follows(t: &[u8], s: usize, e: usize) -> bool {
  // Most words are followed by punctuation that starts no operator, or by a blank and another
  // word: decided from one or two bytes.
  match at(t, e) {
    None => return false,
    Some(b' ' | b'\t') => {
      if at(t, e + 1).is_some_and(|c| c.is_ascii_alphanumeric() && c != b'i' && c != b'w') && t[s] != b'-' {
        return false;
      }
    }
    Some(c) if !matches!(c, b'"' | b'\'' | b'`' | b'\\' | b'=' | b'>' | b',' | b'?' | b'|' | b':') => return false,
    Some(_) => {}
  }
  let mut p = e;
  if at(t, p).is_some_and(is_quote) {
    p += 1;
  } else if at(t, p) == Some(b'\\') && at(t, p + 1).is_some_and(is_quote) {
    p += 2;
  }
  let op = p;
  let p = skip(t, op, 8, |b| b == b' ' || b == b'\t');
  match at(t, p) {
    Some(b'=' | b'>' | b',' | b'?' | b'|') => true,
    Some(b':') => at(t, p + 1) != Some(b':') || t[p..].starts_with(b"::=") || t[p..].starts_with(b":::="),
    Some(b'i' | b'w') => p > op && (t[p..].starts_with(b"is ") || t[p..].starts_with(b"was ")),
    Some(c) => p > op && t[s] == b'-' && !c.is_ascii_whitespace(),
    None => false,
  }
}

#[cfg(test)]
mod tests {
  use super::{
    bundler_host, ends_in_id, has_assign_word, ident_key, log_timestamp_end, masks64, ASSIGN_WORDS, MEMO_IDENT,
    MEMO_SLOTS, MIN_ASSIGN_IDENT, TOKEN_CHAR,
  };

  /// The length test that `Engine::assignment` asks first refuses only identifiers that the
  /// three word tests refuse too: every identifier shorter than `MIN_ASSIGN_IDENT`.
  #[test]
  fn identifiers_too_short_to_name_a_secret_are_refused_exactly() {
    assert_eq!(MIN_ASSIGN_IDENT, 2);
    for b in 0..=255u8 {
      let ident = [b];
      assert!(!(ends_in_id(&ident) || bundler_host(&ident) || ASSIGN_WORDS.in_text(&ident)), "{b}");
    }
    assert!(ASSIGN_WORDS.in_text(b"pw") && ASSIGN_WORDS.in_text(b"PW"));
    // `digit_run` hands on digits only when an identifier goes on before them: none of the word
    // tests takes an identifier of digits alone (no word is digits, `id` and `BUNDLE_` are not).
    assert!(super::ASSIGN_WORD_LIST.iter().all(|w| w.bytes().any(|b| b.is_ascii_alphabetic())));
    for ident in ["0", "12", "2024", "1700000000000", "12345678", "00000000000000000000000000000000000000"] {
      let ident = ident.as_bytes();
      assert!(!(ends_in_id(ident) || bundler_host(ident) || ASSIGN_WORDS.in_text(ident)));
    }
  }

  #[test]
  fn remembered_identifiers_answer_as_new_ones() {
    // More identifiers than slots, of every length around the memo's bounds, asked twice in
    // opposite orders: each answer equals the automaton's, whatever was remembered before.
    let mut idents: Vec<Vec<u8>> = ["url", "token", "created_at", "site_admin", "Session", "pw", "x", "followers_url"]
      .iter()
      .map(|s| s.as_bytes().to_vec())
      .collect();
    for i in 0..3 * MEMO_SLOTS {
      let stem = ["node", "secret", "avatar", "KEY", "author", "cookie_jar", "repo"][i % 7];
      let len = 1 + i % (MEMO_IDENT + 8);
      let mut ident: Vec<u8> = format!("{stem}_{i}_").into_bytes().into_iter().cycle().take(len).collect();
      ident[len - 1] = b'a' + (i % 26) as u8;
      idents.push(ident);
    }
    let order: Vec<&Vec<u8>> = idents.iter().chain(idents.iter().rev()).collect();
    for ident in order {
      assert_eq!(has_assign_word(ident), ASSIGN_WORDS.in_text(ident), "{}", String::from_utf8_lossy(ident));
    }
  }

  #[test]
  fn a_bare_comma_after_an_identifier_is_no_assignment() {
    // Where `bare_comma_after` spares the word search, the assignment detector finds nothing
    // either, even for identifiers that name secrets; where it does not, it may.
    let none = [
      // Built in pieces: no token-shaped literal sits in the source.
      concat!("x \"https://api.example.com/v1/token\", \"", "ghp", "_abcdefghij1234567890\""),
      "x /srv/app/password, hunter2secret",
      "path=a/b/secret_key\\\", \"zz9Yq2LmX4vB7nR1\"",
      "list: api.token, session_key, hunter2secret",
    ];
    for text in none {
      let t = text.as_bytes();
      let e = t.iter().position(|&b| b == b',').unwrap();
      let e = if t[e - 1] == b'"' { e - 1 } else { e };
      let e = if t[e - 1] == b'\\' { e - 1 } else { e };
      let a = super::skip_back(t, e, 64, super::is_ident);
      assert!(super::bare_comma_after(t, a, e), "{text}");
      let mut ctx = crate::redact::ctx::Ctx::new(t, super::engine().rule_count());
      super::secrets::assignment_on(&mut ctx, a, e);
      assert!(ctx.hits.is_empty(), "{text}");
    }
    let quoted = br#"["password", "hunter2secret"]"#;
    let a = 2;
    let b = 10;
    assert!(!super::bare_comma_after(quoted, a, b));
    let mut ctx = crate::redact::ctx::Ctx::new(quoted, super::engine().rule_count());
    super::secrets::assignment_on(&mut ctx, a, b);
    assert!(!ctx.hits.is_empty(), "a quoted key before a comma is still an assignment");
  }

  #[test]
  fn identifier_keys_hold_every_byte() {
    // For each length, changing any one byte changes the key: the memo never takes one
    // identifier for another.
    for n in 1..=MEMO_IDENT {
      let base: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
      let key = ident_key(&base).expect("within the memo's bound");
      for i in 0..n {
        let mut other = base.clone();
        other[i] = b'_';
        assert_ne!(ident_key(&other), Some(key), "length {n}, byte {i}");
      }
    }
    assert_eq!(ident_key(b""), None);
    assert_eq!(ident_key(&[b'a'; MEMO_IDENT + 1]), None);
  }

  #[test]
  fn log_timestamps_are_skipped_only_in_their_exact_shape() {
    let ok = |s: &str| log_timestamp_end(s.as_bytes(), 1);
    assert_eq!(ok(" 2024-11-23T14:35:22.456Z INFO"), Some(25));
    assert_eq!(ok("\n2024-11-23T14:35:22Z"), Some(21));
    assert_eq!(ok("=2024-11-23T14:35:22.4Z,"), Some(23));
    for s in [
      ".2024-11-23T14:35:22.456Z",
      "+2024-11-23T14:35:22.456Z",
      "(2024-11-23T14:35:22.456Z",
      " 2024-11-23T14:35:22.45678Z",
      " 2024-11-23T14:35:22.Z",
      " 2024-11-23T14:35:22.456",
      " 2024-11-23T14:35:22.456Zx",
      " 2024-11-23T14:35:22.456Z-",
      " 2024-11-23 14:35:22.456Z",
      " 2024-11-23T14:35",
    ] {
      assert_eq!(ok(s), None, "{s}");
    }
  }

  #[test]
  fn masks_match_the_scalar_classes() {
    let text: Vec<u8> = (0..=255u8).chain(b"ab-/+_09 Z@`{[\x7f".iter().copied()).cycle().take(300).collect();
    for b in [0usize, 64, 128, 192] {
      let (tm, dm, sm) = masks64(&text, b);
      for k in 0..64.min(text.len() - b) {
        let c = text[b + k];
        assert_eq!((tm >> k) & 1 == 1, TOKEN_CHAR[c as usize], "token {c}");
        assert_eq!((dm >> k) & 1 == 1, c.is_ascii_digit(), "digit {c}");
        assert_eq!((sm >> k) & 1 == 1, matches!(c, b'-' | b'/' | b'+'), "sep {c}");
      }
    }
  }
}
