use std::cell::Cell;

use super::*;
use crate::tokens::count_tokens;

fn session(ts: &str, summary: &str) -> Session {
  Session { timestamp: ts.into(), summary: summary.into(), importance: None }
}

fn learning(trigger: &str, solution: &str, importance: Option<f64>, last_used: Option<&str>) -> Learning {
  Learning { trigger: trigger.into(), solution: solution.into(), importance, last_used: last_used.map(String::from) }
}

fn opts(budget: u64) -> ContextOptions {
  ContextOptions { budget, ..ContextOptions::default() }
}

fn count(text: &str) -> u64 {
  count_tokens(text, TokenEncoding::O200kBase) as u64
}

/// Checks every invariant of a result against its input.
fn check(r: &BuiltContext, n_sessions: usize, n_learnings: usize, options: &ContextOptions) {
  let encoding = options.encoding;
  assert_eq!(r.limit, tokens::budget_limit(options.budget, options.safety_margin));
  match &r.text {
    None => {
      assert_eq!(r.tokens, 0);
      assert!(r.included.is_empty());
    }
    Some(text) => {
      assert_eq!(r.tokens, count_tokens(text, encoding) as u64, "tokens is the exact count");
      assert!(r.tokens <= r.limit, "{} tokens over the limit {}", r.tokens, r.limit);
      let header = count_tokens(HEADER, encoding) as u64;
      let parts: u64 = r.included.iter().map(|i| i.tokens).sum();
      assert_eq!(header + parts, r.tokens, "the count of the text is the sum of its parts");
      assert!(text.starts_with(HEADER) && text.ends_with('\n'));
      assert!(text.matches(TRUNCATION_MARKER).count() >= r.included.iter().filter(|i| i.truncated).count());
      let lines = text[HEADER.len()..].split('\n').filter(|l| l.starts_with("- ")).count();
      assert!(lines >= r.included.len());
    }
  }
  // Every candidate is either included or dropped, exactly once.
  let mut seen = [vec![0u8; n_sessions], vec![0u8; n_learnings]];
  let slot = |k: ItemKind| if k == ItemKind::Session { 0 } else { 1 };
  for i in &r.included {
    seen[slot(i.kind)][i.index] += 1;
  }
  for d in &r.dropped {
    seen[slot(d.kind)][d.index] += 1;
  }
  assert!(seen.iter().flatten().all(|&n| n == 1), "every item reported once");
  // Dropped: sessions then learnings, each in input order.
  let keys: Vec<(usize, usize)> = r.dropped.iter().map(|d| (slot(d.kind), d.index)).collect();
  assert!(keys.windows(2).all(|w| w[0] < w[1]));
  // Included: sessions first; at most one truncated item per kind, and it is the last of its kind.
  let kinds: Vec<usize> = r.included.iter().map(|i| slot(i.kind)).collect();
  assert!(kinds.windows(2).all(|w| w[0] <= w[1]));
  for k in [ItemKind::Session, ItemKind::Learning] {
    let of_kind: Vec<&IncludedItem> = r.included.iter().filter(|i| i.kind == k).collect();
    for (pos, item) in of_kind.iter().enumerate() {
      assert!(!item.truncated || pos == of_kind.len() - 1, "a cut item is the last of its kind");
    }
  }
}

#[test]
fn formats_sessions_then_learnings() {
  let sessions = [
    session("2025-11-20T18:30:00Z", "fixed the CI cache"),
    session("2025-11-21T10:00:00+01:00", "refactored the reader\nand its tests"),
  ];
  let learnings = [learning("tests hang", "check the LOCK file", Some(0.9), None)];
  let r = build_context(&sessions, &learnings, &opts(2000)).unwrap();
  check(&r, 2, 1, &opts(2000));
  assert_eq!(
    r.text.as_deref().unwrap(),
    "## Session Context (from LOA memory)\n\n\
     - [2025-11-21T10:00:00+01:00] refactored the reader\n  and its tests\n\
     - [2025-11-20T18:30:00Z] fixed the CI cache\n\
     - tests hang: check the LOCK file\n"
  );
  assert_eq!(
    r.included.iter().map(|i| (i.kind, i.index)).collect::<Vec<_>>(),
    [(ItemKind::Session, 1), (ItemKind::Session, 0), (ItemKind::Learning, 0)]
  );
  assert!(r.dropped.is_empty());
}

#[test]
fn nothing_to_say_is_null() {
  let r = build_context(&[], &[], &opts(2000)).unwrap();
  assert_eq!((r.text, r.tokens, r.limit), (None, 0, 2000));
  let r =
    build_context(&[session("2025-01-01T00:00:00Z", "  \n ")], &[learning("", " ", None, None)], &opts(2000)).unwrap();
  assert_eq!(r.text, None);
  assert_eq!(r.dropped.iter().map(|d| d.reason).collect::<Vec<_>>(), [DropReason::Empty, DropReason::Empty]);
}

#[test]
fn sessions_are_ordered_by_instant_not_by_string() {
  // As strings, "2025-01-01T10:00:00+02:00" sorts after "2025-01-01T09:00:00Z"; as instants it is
  // an hour earlier (08:00Z).
  let sessions = [
    session("2025-01-01T10:00:00+02:00", "a"),
    session("2025-01-01T09:00:00Z", "b"),
    session("2024-12-31T23:30:00-10:00", "c"), // 2025-01-01T09:30Z
    session("2025-01-01T09:00:00.000000001Z", "d"),
  ];
  let r = build_context(&sessions, &[], &opts(2000)).unwrap();
  let order: Vec<usize> = r.included.iter().map(|i| i.index).collect();
  assert_eq!(order, [2, 3, 1, 0]);
}

#[test]
fn ties_are_broken_by_importance_then_input_order() {
  let mut sessions = vec![
    session("2025-01-01T12:00:00+02:00", "first"),
    session("2025-01-01T10:00:00Z", "second"),
    session("2025-01-01T10:00:00Z", "third"),
  ];
  sessions[2].importance = Some(0.5);
  let r = build_context(&sessions, &[], &opts(2000)).unwrap();
  assert_eq!(r.included.iter().map(|i| i.index).collect::<Vec<_>>(), [2, 0, 1]);

  let learnings = [
    learning("a", "x", Some(0.5), None),
    learning("b", "x", Some(0.9), Some("2025-01-01T00:00:00Z")),
    learning("c", "x", Some(0.5), Some("2025-01-02T00:00:00+05:00")),
    learning("d", "x", None, Some("2030-01-01T00:00:00Z")),
    learning("e", "x", Some(0.5), Some("2025-01-02T00:00:00+05:00")),
    learning("f", "x", Some(-0.0), None),
  ];
  let r = build_context(&[], &learnings, &opts(2000)).unwrap();
  // 0.9 first; then the 0.5s: used (c, e: same instant, input order) before never used (a);
  // then importance 0 (d recently used, f never).
  assert_eq!(r.included.iter().map(|i| i.index).collect::<Vec<_>>(), [1, 2, 4, 0, 3, 5]);
}

#[test]
fn same_input_same_bytes() {
  let sessions: Vec<Session> = (0..40)
    .map(|i| {
      session(&format!("2025-02-{:02}T{:02}:00:00+0{}:00", 1 + i % 28, i % 24, i % 9), &"note ".repeat(1 + i * 7))
    })
    .collect();
  let learnings: Vec<Learning> =
    (0..30).map(|i| learning(&format!("t{i}"), &"fix ".repeat(3 + i * 5), Some((i % 4) as f64), None)).collect();
  let a = build_context(&sessions, &learnings, &opts(700)).unwrap();
  let b = build_context(&sessions, &learnings, &opts(700)).unwrap();
  assert_eq!(a, b);
  check(&a, 40, 30, &opts(700));
}

/// Items of exactly `n` tokens each (with their line break).
fn sized_sessions(count_: usize, words: usize) -> Vec<Session> {
  (0..count_).map(|i| session(&format!("2025-03-01T00:{:02}:00Z", 59 - i), &"hello ".repeat(words))).collect()
}

fn tokens_of(r: &BuiltContext, kind: ItemKind) -> u64 {
  r.included.iter().filter(|i| i.kind == kind).map(|i| i.tokens).sum()
}

#[test]
fn shares_flow_both_ways() {
  let o = ContextOptions { min_truncated_tokens: 10_000, ..opts(1000) }; // no cutting: whole items only
  let room = 1000 - count(HEADER);
  let sessions = sized_sessions(30, 40);
  let learnings: Vec<Learning> =
    (0..30).map(|i| learning(&format!("trigger {i}"), &"world ".repeat(40), None, None)).collect();
  let per_session = count(&format!("- [2025-03-01T00:59:00Z] {}\n", "hello ".repeat(40).trim()));
  let per_learning = count(&format!("- trigger 1: {}\n", "world ".repeat(40).trim()));

  // Both kinds overflow: sessions get their 70 %, learnings the rest.
  let r = build_context(&sessions, &learnings, &o).unwrap();
  check(&r, 30, 30, &o);
  let s = tokens_of(&r, ItemKind::Session);
  let l = tokens_of(&r, ItemKind::Learning);
  let share = (room as f64 * 0.7).floor() as u64;
  // Each kind gets its share, give or take the item that did not fit: what one kind leaves
  // unused of its share, even a few tokens, flows to the other.
  assert!(s.abs_diff(share) < per_session + per_learning, "sessions fill their share: {s} of {share}");
  assert!(s + l <= room && s + l + per_learning.min(per_session) > room, "learnings fill the rest");

  // No learnings: sessions take the whole room (the original reserved 30 % for nothing).
  let r = build_context(&sessions, &[], &o).unwrap();
  let s = tokens_of(&r, ItemKind::Session);
  assert!(s <= room && s + per_session > room, "{s} of {room}");

  // No sessions: learnings take the whole room.
  let r = build_context(&[], &learnings, &o).unwrap();
  let l = tokens_of(&r, ItemKind::Learning);
  assert!(l <= room && l + per_learning > room, "{l} of {room}");

  // Two small learnings: sessions get everything else.
  let r = build_context(&sessions, &learnings[..2], &o).unwrap();
  let l = tokens_of(&r, ItemKind::Learning);
  let s = tokens_of(&r, ItemKind::Session);
  assert_eq!(l, 2 * per_learning);
  assert!(s + l <= room && s + l + per_session > room);

  // Two small sessions: learnings get everything else.
  let r = build_context(&sessions[..2], &learnings, &o).unwrap();
  let s = tokens_of(&r, ItemKind::Session);
  let l = tokens_of(&r, ItemKind::Learning);
  assert_eq!(s, 2 * per_session);
  assert!(s + l <= room && s + l + per_learning > room);

  // session_share 0 and 1 are valid extremes.
  for share in [0.0, 1.0] {
    let o = ContextOptions { session_share: share, ..o.clone() };
    let r = build_context(&sessions, &learnings, &o).unwrap();
    check(&r, 30, 30, &o);
    let first = if share == 0.0 { ItemKind::Learning } else { ItemKind::Session };
    assert!(tokens_of(&r, first) + per_session > room);
  }
}

#[test]
fn an_item_too_large_is_cut_with_a_marker_or_dropped() {
  let big = "The quick brown fox jumps over the lazy dog. ".repeat(400); // ~4000 tokens
  let sessions = [
    session("2025-01-02T00:00:00Z", "short and new"),
    session("2025-01-01T00:00:00Z", &big),
    session("2024-12-31T00:00:00Z", "old"),
  ];
  let r = build_context(&sessions, &[], &opts(500)).unwrap();
  check(&r, 3, 0, &opts(500));
  let text = r.text.as_deref().unwrap();
  assert!(text.ends_with(&format!("{TRUNCATION_MARKER}\n")), "{text}");
  assert_eq!(r.included.len(), 2);
  assert!(r.included[1].truncated && r.included[1].index == 1);
  assert!(r.tokens >= 500 - 8, "the cut fills the room: {}", r.tokens);
  assert_eq!(r.dropped, [DroppedItem { kind: ItemKind::Session, index: 2, reason: DropReason::BudgetFull }]);
  // The cut is a prefix of the item, at a token boundary.
  let line = text.lines().nth(3).unwrap();
  let kept = line.strip_suffix(TRUNCATION_MARKER).unwrap();
  assert!(format!("- [2025-01-01T00:00:00Z] {}", big.trim()).starts_with(kept));

  // Below the minimum that is worth keeping, the item is dropped instead.
  let o = ContextOptions { min_truncated_tokens: 1000, ..opts(500) };
  let r = build_context(&sessions, &[], &o).unwrap();
  check(&r, 3, 0, &o);
  assert!(!r.text.as_deref().unwrap().contains(TRUNCATION_MARKER));
  assert_eq!(
    r.dropped,
    [
      DroppedItem { kind: ItemKind::Session, index: 1, reason: DropReason::DoesNotFit },
      DroppedItem { kind: ItemKind::Session, index: 2, reason: DropReason::BudgetFull },
    ]
  );
}

#[test]
fn cuts_respect_characters_of_every_script() {
  for filler in ["中文内容测试，", "日本語のテキスト。", "한국어 텍스트 ", "🚀🔥👨‍👩‍👧‍👦 ", "a3f9c2e1b7", "Résumé naïve "]
  {
    let big = filler.repeat(2000);
    let learnings = [learning("huge", &big, None, None)];
    for budget in [60, 61, 97, 300, 1000] {
      for encoding in [TokenEncoding::O200kBase, TokenEncoding::Cl100kBase] {
        let o = ContextOptions { encoding, min_truncated_tokens: 1, ..opts(budget) };
        let r = build_context(&[], &learnings, &o).unwrap();
        check(&r, 0, 1, &o);
        assert!(r.included[0].truncated, "{filler} {budget}");
      }
    }
  }
}

#[test]
fn a_budget_too_small_for_the_header_drops_everything() {
  let sessions = [session("2025-01-01T00:00:00Z", "x")];
  for budget in [0, 1, count(HEADER)] {
    let r = build_context(&sessions, &[], &opts(budget)).unwrap();
    assert_eq!(r.text, None);
    assert_eq!(r.dropped[0].reason, DropReason::NoBudget);
  }
  let r = build_context(&sessions, &[], &opts(count(HEADER) + 1)).unwrap();
  assert_eq!(r.dropped[0].reason, DropReason::DoesNotFit);
}

#[test]
fn the_safety_margin_lowers_the_limit() {
  let sessions = sized_sessions(60, 30);
  for (budget, margin, limit) in
    [(2000, 0.0, 2000), (2000, 0.2, 1600), (2000, 0.15, 1700), (1001, 0.5, 500), (7, 0.3, 4)]
  {
    let o = ContextOptions { safety_margin: margin, ..opts(budget) };
    let r = build_context(&sessions, &[], &o).unwrap();
    assert_eq!(r.limit, limit);
    check(&r, 60, 0, &o);
  }
}

#[test]
fn invalid_input_names_the_field() {
  let msg = |r: Result<BuiltContext>| match r {
    Err(e) => {
      assert_eq!(e.code(), "E_INVALID_ARGUMENT");
      e.to_string()
    }
    Ok(_) => panic!("accepted"),
  };
  for bad in ["2025-01-01", "2025-01-01T10:00:00", "yesterday", "2025-13-01T00:00:00Z", "2025-02-30T00:00:00Z", ""] {
    let m = msg(build_context(&[session("2025-01-01T00:00:00Z", "ok"), session(bad, "x")], &[], &opts(100)));
    assert!(m.contains("`sessions[1].timestamp`"), "{m}");
  }
  let m = msg(build_context(&[], &[learning("a", "b", None, Some("soon"))], &opts(100)));
  assert!(m.contains("`learnings[0].lastUsed`"), "{m}");
  let m = msg(build_context(&[], &[learning("a", "b", Some(f64::NAN), None)], &opts(100)));
  assert!(m.contains("`learnings[0].importance`"), "{m}");
  let m = msg(build_context(&[], &[], &ContextOptions { session_share: 1.5, ..opts(100) }));
  assert!(m.contains("sessionShare"), "{m}");
  let m = msg(build_context(&[], &[], &ContextOptions { safety_margin: 1.0, ..opts(100) }));
  assert!(m.contains("safetyMargin"), "{m}");
}

/// A source that counts what it was asked for, over generated texts.
struct Counting<'a> {
  lists: Lists<'a>,
  reads: Cell<usize>,
  bytes_asked: Cell<usize>,
}

impl ContextSource for Counting<'_> {
  fn summary(&self, index: usize, max_bytes: usize) -> Result<Text<'_>> {
    self.reads.set(self.reads.get() + 1);
    self.bytes_asked.set(self.bytes_asked.get().max(max_bytes));
    self.lists.summary(index, max_bytes)
  }
  fn trigger(&self, index: usize, max_bytes: usize) -> Result<Text<'_>> {
    self.reads.set(self.reads.get() + 1);
    self.lists.trigger(index, max_bytes)
  }
  fn solution(&self, index: usize, max_bytes: usize) -> Result<Text<'_>> {
    self.lists.solution(index, max_bytes)
  }
}

#[test]
fn work_grows_with_what_is_included_not_with_the_candidates() {
  let n = 100_000;
  let sessions: Vec<Session> = (0..n)
    .map(|i| {
      session(&format!("2025-01-01T00:00:00.{:09}Z", (i * 7919) % 1_000_000_000), &format!("session {i} did things"))
    })
    .collect();
  let keys: Vec<SessionKey> =
    sessions.iter().map(|s| SessionKey { timestamp: &s.timestamp, importance: None }).collect();
  let source =
    Counting { lists: Lists { sessions: &sessions, learnings: &[] }, reads: Cell::new(0), bytes_asked: Cell::new(0) };
  let r = build_context_from(&keys, &[], &source, &opts(2000)).unwrap();
  assert!(r.included.len() > 50 && r.included.len() < 300, "{}", r.included.len());
  assert!(
    source.reads.get() <= r.included.len() + 3,
    "{} texts read for {} included",
    source.reads.get(),
    r.included.len()
  );
  assert_eq!(r.dropped.len(), n - r.included.len());

  // A huge item is read only as far as it could be used.
  let huge = "x".repeat(20_000_000);
  let sessions = [session("2025-01-01T00:00:00Z", &huge)];
  let keys = [SessionKey { timestamp: &sessions[0].timestamp, importance: None }];
  let source =
    Counting { lists: Lists { sessions: &sessions, learnings: &[] }, reads: Cell::new(0), bytes_asked: Cell::new(0) };
  let started = thread_cpu_time();
  let r = build_context_from(&keys, &[], &source, &opts(2000)).unwrap();
  assert!(r.included[0].truncated);
  assert!(source.bytes_asked.get() <= 2000 * 128 + 1, "{}", source.bytes_asked.get());
  let used = thread_cpu_time() - started;
  assert!(used.as_secs_f64() < 2.0, "{used:?} of CPU");
}

/// This thread's CPU time: what the work itself costs. Wall time also counts the time other
/// processes of a busy machine ran, which says nothing about the work.
fn thread_cpu_time() -> std::time::Duration {
  let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
  std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

// -- property test ---------------------------------------------------------------------------

/// xorshift64*: small, deterministic, good enough to generate inputs.
struct Rng(u64);

impl Rng {
  fn next(&mut self) -> u64 {
    self.0 ^= self.0 >> 12;
    self.0 ^= self.0 << 25;
    self.0 ^= self.0 >> 27;
    self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
  }
  fn below(&mut self, n: u64) -> u64 {
    self.next() % n.max(1)
  }
  fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
    items[self.below(items.len() as u64) as usize]
  }
}

const FRAGMENTS: [&str; 24] = [
  "the agent fixed the build",
  " and then",
  "refactored the WAL reader",
  "中文内容测试",
  "日本語のテキスト",
  "한국어 텍스트",
  "🚀",
  "👨‍👩‍👧‍👦",
  "❤️‍🔥",
  "a3f9c2e1b7d4",
  "sk-ABCdef123XYZ",
  "\n",
  "\n\n",
  "  ",
  "\t",
  ".",
  "!!!",
  "…",
  " - ",
  ": ",
  "e\u{301}",
  "<|endoftext|>",
  "\r\n",
  "1234567",
];

fn gen_text(rng: &mut Rng) -> String {
  let mut s = String::new();
  let pieces = match rng.below(10) {
    0 => 0,
    1 => 500 + rng.below(3000), // huge
    _ => rng.below(40),
  };
  for _ in 0..pieces {
    s.push_str(rng.pick(&FRAGMENTS));
    if rng.below(3) == 0 {
      s.push(' ');
    }
  }
  s
}

fn gen_timestamp(rng: &mut Rng) -> String {
  let offsets = ["Z", "+00:00", "+02:00", "-05:30", "+14:00", "-12:00"];
  let frac = if rng.below(3) == 0 { format!(".{}", rng.below(1_000_000)) } else { String::new() };
  format!(
    "2025-{:02}-{:02}T{:02}:{:02}:{:02}{frac}{}",
    1 + rng.below(12),
    1 + rng.below(28),
    rng.below(24),
    rng.below(60),
    rng.below(60),
    offsets[rng.below(offsets.len() as u64) as usize]
  )
}

#[test]
fn no_input_can_exceed_the_budget() {
  let mut rng = Rng(0x5eed_cafe_f00d_beef);
  for round in 0..300 {
    let sessions: Vec<Session> = (0..rng.below(12))
      .map(|_| Session {
        timestamp: gen_timestamp(&mut rng),
        summary: gen_text(&mut rng),
        importance: if rng.below(2) == 0 { None } else { Some(rng.below(5) as f64 / 4.0) },
      })
      .collect();
    let learnings: Vec<Learning> = (0..rng.below(12))
      .map(|_| Learning {
        trigger: gen_text(&mut rng),
        solution: gen_text(&mut rng),
        importance: if rng.below(2) == 0 { None } else { Some(rng.below(3) as f64) },
        last_used: if rng.below(2) == 0 { None } else { Some(gen_timestamp(&mut rng)) },
      })
      .collect();
    let options = ContextOptions {
      budget: [0, 5, 12, 13, 20, 50, 100, 300, 1000, 2000, 5000][rng.below(11) as usize] + rng.below(7),
      session_share: rng.below(11) as f64 / 10.0,
      encoding: if rng.below(2) == 0 { TokenEncoding::O200kBase } else { TokenEncoding::Cl100kBase },
      safety_margin: [0.0, 0.0, 0.1, 0.25, 0.5, 0.9][rng.below(6) as usize],
      min_truncated_tokens: [0, 1, 8, 32, 200][rng.below(5) as usize],
      header: None,
    };
    let r = build_context(&sessions, &learnings, &options).unwrap_or_else(|e| panic!("round {round}: {e}"));
    check(&r, sessions.len(), learnings.len(), &options);
    assert_eq!(r, build_context(&sessions, &learnings, &options).unwrap(), "deterministic");
    // Sessions appear newest first.
    let instants: Vec<i128> = r
      .included
      .iter()
      .filter(|i| i.kind == ItemKind::Session)
      .map(|i| parse_timestamp(&sessions[i.index].timestamp, String::new).unwrap())
      .collect();
    assert!(instants.windows(2).all(|w| w[0] >= w[1]), "round {round}");
  }
}
