use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;

use super::merge::event_id;
use super::*;
use crate::sign::keys::{KeyPolicy, KeyRing};

fn event(ts: &str, agent: &str) -> Event {
  Event { ts: ts.into(), agent: agent.into(), kind: "session_end".into(), ..Event::default() }
}

fn state_of(file: &str, e: &Event) -> State {
  let bytes = e.encode().unwrap();
  let decoded = Event::decode(&bytes, false).unwrap();
  let ts = decoded.validate().unwrap();
  State::of_event(event_id(file, &bytes), file, ts, &decoded)
}

fn read(dir: &Path) -> String {
  std::fs::read_to_string(dir.join(CURRENT_FILE)).unwrap()
}

#[test]
fn the_seed_example_reads_and_round_trips() {
  let text = "---\nts: 2026-01-10T13:03:52Z\nagent: toast\nbranch: feat/fix-hooks-path-spaces\ntype: session_end\nreason: clear\n---\n\nnow: Create PR from carmandale:fix/hooks-path-spaces to parcadei:main\n\nthis_session:\n- Forked parcadei/Continuous-Claude-v3\n- Wrapped 25 hooks in bash -c for spaced path support\n\ndecisions:\n  bash_c_wrapper: \"Use bash -c '...' for shell quoting\"\n  single_quotes_outer: \"Single quotes outside, double inside\"\n\ncheckpoints:\n- phase: 5\n  status: validated\n  updated: 2026-01-10T13:00:00Z\n";
  let e = Event::decode(text.as_bytes(), false).unwrap();
  assert_eq!(e.agent, "toast");
  assert_eq!(e.branch.as_deref(), Some("feat/fix-hooks-path-spaces"));
  assert_eq!(e.this_session.len(), 2);
  assert_eq!(e.decisions["bash_c_wrapper"], "Use bash -c '...' for shell quoting");
  assert_eq!(e.checkpoints[0].phase, "5");
  let again = Event::decode(&e.encode().unwrap(), false).unwrap();
  assert_eq!(again.decisions, e.decisions);
  assert_eq!(again.checkpoints, e.checkpoints);
  assert_eq!(again.now, e.now);
}

#[test]
fn malformed_events_say_why_without_their_text() {
  let secret = "hunter2-very-secret";
  let cases: Vec<(String, &str)> = vec![
    (format!("no front matter {secret}"), "no front matter"),
    (format!("---\nts: {secret}\nagent: a\ntype: x\n---\n"), "RFC 3339"),
    (format!("---\nts: 2026-01-01T00:00:00Z\nagent: {secret}/x\ntype: x\n---\n"), "`agent`"),
    (format!("---\nts: 2026-01-01T00:00:00Z\nagent: a\ntype: x\n---\nnow: [{secret}\n"), "the body"),
    (format!("---\nv: 2\nts: 2026-01-01T00:00:00Z\nagent: a\ntype: x\n---\n{secret}"), "version 2"),
    (format!("---\nts: 2026-01-01T00:00:00Z\nagent: a\ntype: x\n{secret}"), "closing"),
  ];
  for (text, expect) in cases {
    let reason = Event::decode(text.as_bytes(), false).unwrap_err();
    assert!(reason.contains(expect), "{reason}");
    assert!(!reason.contains(secret), "{reason}");
  }
  assert!(Event::decode(&[0xff, 0xfe], false).unwrap_err().contains("UTF-8"));
}

#[test]
fn timestamps_are_instants_and_now_is_last_writer_by_instant() {
  // As strings "10:00+02:00" sorts after "09:30Z"; as instants it is 30 minutes earlier.
  let mut early = event("2026-01-02T10:00:00+02:00", "zed");
  early.now = Some("the earlier one".into());
  let mut late = event("2026-01-02T08:30:00Z", "amy");
  late.now = Some("the later one".into());
  let mut s = state_of("a.md", &early);
  s.merge(&state_of("b.md", &late));
  assert_eq!(s.now.unwrap().value, "the later one");
}

#[test]
fn sets_dedupe_by_normalised_text_and_decisions_are_lww_per_key() {
  let mut a = event("2026-01-02T10:00:00Z", "a");
  a.this_session = vec!["Fixed  the\nbug".into(), "x".into()];
  a.decisions = BTreeMap::from([("db".into(), "postgres".into()), ("cache".into(), "redis".into())]);
  let mut b = event("2026-01-02T11:00:00Z", "b");
  b.this_session = vec!["Fixed the bug".into()];
  b.decisions = BTreeMap::from([("db".into(), "sqlite".into())]);
  b.checkpoints = vec![CheckpointItem { phase: "2".into(), status: "done".into(), updated: None }];
  let mut c = event("2026-01-02T09:00:00Z", "c");
  c.checkpoints = vec![
    CheckpointItem { phase: "10".into(), status: "started".into(), updated: None },
    CheckpointItem { phase: "2".into(), status: "started".into(), updated: None },
  ];
  let mut s = state_of("a.md", &a);
  s.merge(&state_of("b.md", &b));
  s.merge(&state_of("c.md", &c));
  assert_eq!(s.this_session.len(), 2);
  assert_eq!(s.decisions["db"].value, "sqlite");
  assert_eq!(s.decisions["cache"].value, "redis");
  assert_eq!(s.checkpoints["2"].status, "done");
  let text = s.render();
  assert!(text.find("- phase 2: done").unwrap() < text.find("- phase 10: started").unwrap(), "{text}");
  assert!(text.contains("event_count: 3\n  latest_ts: 2026-01-02T11:00:00.000Z"), "{text}");
}

#[test]
fn names_never_collide_in_one_millisecond() {
  let dir = tempfile::tempdir().unwrap();
  let e = event("2026-01-02T10:00:00.123Z", "toast");
  let names: Vec<String> = (0..5).map(|_| write_event(dir.path(), &e).unwrap().file).collect();
  assert_eq!(names[0], "20260102T100000123Z_toast.md");
  assert_eq!(names[1], "20260102T100000123Z_toast~2.md");
  let report = synthesize(dir.path(), &SynthOptions::default()).unwrap();
  assert_eq!(report.event_count, 5);
  // No temp file is left behind.
  let left: Vec<_> = std::fs::read_dir(dir.path().join(EVENTS_DIR)).unwrap().map(|e| e.unwrap().file_name()).collect();
  assert_eq!(left.len(), 5);
}

#[test]
fn synthesis_is_byte_identical_and_check_detects_staleness() {
  let dir = tempfile::tempdir().unwrap();
  let mut a = event("2026-01-02T10:00:00Z", "a");
  a.now = Some("ship it".into());
  write_event(dir.path(), &a).unwrap();
  let first = synthesize(dir.path(), &SynthOptions::default()).unwrap();
  assert!(first.changed);
  let bytes = read(dir.path());
  let second = synthesize(dir.path(), &SynthOptions { now_ms: 0, ..SynthOptions::default() }).unwrap();
  assert!(!second.changed);
  assert_eq!(read(dir.path()), bytes);
  let check = SynthOptions { check: true, ..SynthOptions::default() };
  assert!(!synthesize(dir.path(), &check).unwrap().stale);
  write_event(dir.path(), &event("2026-01-03T10:00:00Z", "b")).unwrap();
  let stale = synthesize(dir.path(), &check).unwrap();
  assert!(stale.stale);
  assert_eq!(read(dir.path()), bytes, "check writes nothing");
}

#[test]
fn hostile_files_are_skipped_and_reported_never_followed() {
  let dir = tempfile::tempdir().unwrap();
  write_event(dir.path(), &event("2026-01-02T10:00:00Z", "a")).unwrap();
  let events = dir.path().join(EVENTS_DIR);
  let outside = tempfile::tempdir().unwrap();
  let victim = outside.path().join("victim.md");
  std::fs::write(&victim, "---\nts: 2026-01-05T00:00:00Z\nagent: evil\ntype: x\n---\nnow: followed\n").unwrap();
  std::os::unix::fs::symlink(&victim, events.join("link.md")).unwrap();
  std::fs::create_dir(events.join("dir.md")).unwrap();
  std::fs::write(events.join("big.md"), vec![b'a'; event::MAX_EVENT_BYTES as usize + 1]).unwrap();
  std::fs::write(events.join("junk.md"), "password=swordfish\n").unwrap();
  std::fs::write(events.join("notes.txt"), "ignored").unwrap();
  let report = synthesize(dir.path(), &SynthOptions::default()).unwrap();
  assert_eq!(report.event_count, 1);
  let files: Vec<&str> = report.skipped.iter().map(|s| s.file.as_str()).collect();
  assert_eq!(files, ["big.md", "dir.md", "junk.md", "link.md"], "{:?}", report.skipped);
  assert!(!report.text.contains("followed"));
  assert!(!format!("{:?}", report.skipped).contains("swordfish"));
}

#[test]
fn handoff_records_are_events() {
  let dir = tempfile::tempdir().unwrap();
  std::fs::create_dir_all(dir.path().join(EVENTS_DIR)).unwrap();
  let record = r#"{"v":1,"ts":"2026-01-15T14:30:00+01:00","agent":"impl","phase":"session_handoff","session_id":"sess-002","bead_id":"bd-x7y8","notes_refs":["grimoires/loa/NOTES.md:68-92"],"edd_verified":true,"grounding_ratio":0.97,"test_scenarios":3,"next_session_ready":true}"#;
  std::fs::write(dir.path().join(EVENTS_DIR).join("handoff-1.json"), record).unwrap();
  let report = synthesize(dir.path(), &SynthOptions::default()).unwrap();
  assert!(report.skipped.is_empty(), "{:?}", report.skipped);
  assert_eq!(report.sources[0].kind, "session_handoff");
  assert_eq!(report.latest_ts.as_deref(), Some("2026-01-15T13:30:00.000Z"));
  assert!(report.text.contains("- session sess-002 handed off (bead bd-x7y8)"), "{}", report.text);
}

/// The seed's own `session_handoff` line (no `v`, a `root_span_id`) is an event; a handoff of
/// another version is still skipped.
#[test]
fn the_seeds_handoff_line_without_v_is_an_event() {
  let dir = tempfile::tempdir().unwrap();
  let events = dir.path().join(EVENTS_DIR);
  std::fs::create_dir_all(&events).unwrap();
  let seed = include_str!("../../testdata/seeds/examples/trajectory-implementing-tasks-2024-01-15.jsonl");
  std::fs::write(events.join("handoff-seed.json"), seed.lines().next().unwrap()).unwrap();
  let report = synthesize(dir.path(), &SynthOptions::default()).unwrap();
  assert!(report.skipped.is_empty(), "{:?}", report.skipped);
  assert!(report.text.contains("- session sess-002 handed off (bead bd-x7y8)"), "{}", report.text);
  assert!(report.text.contains("- notes: loa-grimoire/NOTES.md:68-92"), "{}", report.text);
  let v2 = seed.lines().next().unwrap().replacen('{', "{\"v\":2,", 1);
  std::fs::write(events.join("handoff-v2.json"), v2).unwrap();
  let report = synthesize(dir.path(), &SynthOptions::default()).unwrap();
  assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
  assert!(report.skipped[0].reason.contains("version 2"), "{:?}", report.skipped);
}

fn ring(dir: &Path) -> KeyRing {
  let ring = KeyRing::open(dir, KeyPolicy::default(), false).unwrap();
  ring.generate().unwrap();
  ring
}

#[test]
fn archiving_folds_into_a_signed_base_and_keeps_the_bytes() {
  let dir = tempfile::tempdir().unwrap();
  let keys = tempfile::tempdir().unwrap();
  ring(keys.path());
  for (i, ts) in ["2026-01-01T10:00:00Z", "2026-01-02T10:00:00Z", "2026-01-20T10:00:00Z"].iter().enumerate() {
    let mut e = event(ts, &format!("agent{i}"));
    e.now = Some(format!("step {i}"));
    e.this_session = vec![format!("did {i}")];
    write_event(dir.path(), &e).unwrap();
  }
  let now = crate::timestamp::parse_ms("2026-01-21T00:00:00Z").unwrap();
  let opts = SynthOptions { now_ms: now, keys_dir: Some(keys.path().to_path_buf()), ..SynthOptions::default() };
  let before = synthesize(dir.path(), &opts).unwrap();
  let archived = synthesize(dir.path(), &SynthOptions { archive: true, ..opts.clone() }).unwrap();
  assert_eq!(archived.archived, 2);
  assert!(!archived.changed);
  assert_eq!(read(dir.path()), before.text);
  assert!(dir.path().join("archive/2026-01-01/20260101T100000000Z_agent0.md").exists());
  let after = synthesize(dir.path(), &opts).unwrap();
  assert_eq!(after.text, before.text);
  assert_eq!(after.base_events, 2);
  assert_eq!(after.sources.len(), 1);

  // Without the key ring the base cannot be trusted.
  let err = synthesize(dir.path(), &SynthOptions { keys_dir: None, ..opts.clone() }).unwrap_err();
  assert_eq!(err.code(), "E_KEY_NOT_FOUND");
  // A tampered base stops synthesis.
  let base = std::fs::read_to_string(dir.path().join(BASE_FILE)).unwrap();
  std::fs::write(dir.path().join(BASE_FILE), base.replace("did 0", "did 9")).unwrap();
  assert_eq!(synthesize(dir.path(), &opts).unwrap_err().code(), "E_SIGNATURE_INVALID");
  // Another key ring's signature is not trusted.
  std::fs::write(dir.path().join(BASE_FILE), &base).unwrap();
  let other = tempfile::tempdir().unwrap();
  ring(other.path());
  let err =
    synthesize(dir.path(), &SynthOptions { keys_dir: Some(other.path().to_path_buf()), ..opts.clone() }).unwrap_err();
  assert_eq!(err.code(), "E_SIGNATURE_INVALID");
}

#[test]
fn an_archive_cut_short_before_the_move_counts_each_event_once() {
  let dir = tempfile::tempdir().unwrap();
  let keys = tempfile::tempdir().unwrap();
  ring(keys.path());
  write_event(dir.path(), &event("2026-01-01T10:00:00Z", "a")).unwrap();
  write_event(dir.path(), &event("2026-01-20T10:00:00Z", "b")).unwrap();
  let now = crate::timestamp::parse_ms("2026-01-21T00:00:00Z").unwrap();
  let opts = SynthOptions { now_ms: now, keys_dir: Some(keys.path().to_path_buf()), ..SynthOptions::default() };
  let before = synthesize(dir.path(), &opts).unwrap().text;
  let name = "20260101T100000000Z_a.md";
  let kept = std::fs::read(dir.path().join(EVENTS_DIR).join(name)).unwrap();
  synthesize(dir.path(), &SynthOptions { archive: true, ..opts.clone() }).unwrap();
  // As if the move had not happened: the event is in the base and still live.
  std::fs::write(dir.path().join(EVENTS_DIR).join(name), kept).unwrap();
  let again = synthesize(dir.path(), &opts).unwrap();
  assert_eq!(again.text, before);
  assert_eq!(again.event_count, 2);
}

#[test]
fn a_second_synthesiser_waits_for_the_lock() {
  let dir = tempfile::tempdir().unwrap();
  write_event(dir.path(), &event("2026-01-01T10:00:00Z", "a")).unwrap();
  let root = crate::fsutil::StateDir::open_root(dir.path()).unwrap();
  let held = lock_in(&root, LOCK_FILE, Duration::ZERO, "test").unwrap();
  let opts = SynthOptions { lock_timeout: Duration::from_millis(20), ..SynthOptions::default() };
  assert_eq!(synthesize(dir.path(), &opts).unwrap_err().code(), "E_WAL_LOCKED");
  assert!(!dir.path().join(CURRENT_FILE).exists());
  drop(held);
  synthesize(dir.path(), &opts).unwrap();
}

#[test]
fn commit_runs_git_without_a_shell() {
  let dir = tempfile::tempdir().unwrap();
  let git = |args: &[&str]| Command::new("git").arg("-C").arg(dir.path()).args(args).output().unwrap();
  if !git(&["init", "-q"]).status.success() {
    return; // no git on this machine
  }
  git(&["config", "user.email", "t@example.com"]);
  git(&["config", "user.name", "t"]);
  // A handoffs directory whose name a shell would run.
  let handoffs = dir.path().join("h; touch pwned");
  write_event(&handoffs, &event("2026-01-01T10:00:00Z", "a")).unwrap();
  let report = synthesize(&handoffs, &SynthOptions { commit: true, ..SynthOptions::default() }).unwrap();
  assert!(report.committed);
  assert!(!dir.path().join("pwned").exists());
  let log = git(&["log", "--oneline"]);
  assert!(String::from_utf8_lossy(&log.stdout).contains("ledger: synthesise current.md"));
  let again = synthesize(&handoffs, &SynthOptions { commit: true, ..SynthOptions::default() }).unwrap();
  assert!(!again.committed);
}

// ---------------------------------------------------------------------------------------------
// Properties: the merge is a join, so order and grouping never change a byte.
// ---------------------------------------------------------------------------------------------

fn arb_event() -> impl Strategy<Value = (String, Event)> {
  // Few instants, agents and words: ties and duplicates are the interesting cases.
  let ts = prop::sample::select(vec![
    "2026-01-01T10:00:00Z",
    "2026-01-01T12:00:00+02:00",
    "2026-01-01T10:00:00.001Z",
    "2026-01-02T00:00:00-05:00",
  ]);
  let agent = prop::sample::select(vec!["a", "b", "c"]);
  let word = prop::sample::select(vec!["x", "y", "z", " x ", "X", "y\n"]);
  let words = prop::collection::vec(word.clone(), 0..3);
  (
    ts,
    agent,
    0u32..1000,
    prop::option::of(word.clone()),
    words.clone(),
    prop::collection::btree_map(prop::sample::select(vec!["k1", "k2"]), word.clone(), 0..2),
    prop::collection::vec((prop::sample::select(vec!["1", "2", "10"]), word.clone()), 0..2),
    words,
  )
    .prop_map(|(ts, agent, n, now, items, decisions, checkpoints, questions)| {
      let e = Event {
        ts: ts.into(),
        agent: agent.into(),
        kind: "session_end".into(),
        now: now.map(String::from),
        this_session: items.into_iter().map(String::from).collect(),
        decisions: decisions.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        checkpoints: checkpoints
          .into_iter()
          .map(|(p, s)| CheckpointItem { phase: p.into(), status: s.into(), updated: None })
          .collect(),
        open_questions: questions.into_iter().map(String::from).collect(),
        ..Event::default()
      };
      (format!("f{n}_{agent}.md"), e)
    })
}

fn states(events: &[(String, Event)]) -> Vec<State> {
  events.iter().map(|(f, e)| state_of(f, e)).collect()
}

fn fold(states: &[State]) -> State {
  let mut out = State::default();
  for s in states {
    out.merge(s);
  }
  out
}

proptest! {
  #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

  #[test]
  fn merge_is_commutative(a in arb_event(), b in arb_event()) {
    let [a, b]: [State; 2] = states(&[a, b]).try_into().unwrap();
    let mut ab = a.clone();
    ab.merge(&b);
    let mut ba = b.clone();
    ba.merge(&a);
    prop_assert_eq!(ab.render(), ba.render());
    prop_assert_eq!(ab, ba);
  }

  #[test]
  fn merge_is_associative(a in arb_event(), b in arb_event(), c in arb_event()) {
    let [a, b, c]: [State; 3] = states(&[a, b, c]).try_into().unwrap();
    let mut left = a.clone();
    left.merge(&b);
    left.merge(&c);
    let mut bc = b.clone();
    bc.merge(&c);
    let mut right = a.clone();
    right.merge(&bc);
    prop_assert_eq!(left, right);
  }

  #[test]
  fn merge_is_idempotent(events in prop::collection::vec(arb_event(), 1..6)) {
    let s = fold(&states(&events));
    let mut twice = s.clone();
    twice.merge(&s);
    prop_assert_eq!(&twice, &s);
    let mut again = s.clone();
    for one in states(&events) {
      again.merge(&one);
    }
    prop_assert_eq!(again, s);
  }

  #[test]
  fn any_order_and_any_batching_gives_the_same_bytes(
    events in prop::collection::vec(arb_event(), 0..12),
    shuffle in any::<u64>(),
    cuts in prop::collection::vec(any::<usize>(), 0..4),
  ) {
    let all = states(&events);
    let expected = fold(&all).render();
    // A permutation from the seed (Fisher-Yates with a small LCG: deterministic, no rand crate).
    let mut order: Vec<usize> = (0..all.len()).collect();
    let mut x = shuffle | 1;
    for i in (1..order.len()).rev() {
      x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
      order.swap(i, (x >> 33) as usize % (i + 1));
    }
    let permuted: Vec<State> = order.iter().map(|&i| all[i].clone()).collect();
    prop_assert_eq!(fold(&permuted).render(), expected.clone());
    // Batches: merge each part on its own, then the parts.
    let mut bounds: Vec<usize> = cuts.iter().map(|c| if permuted.is_empty() { 0 } else { c % (permuted.len() + 1) }).collect();
    bounds.extend([0, permuted.len()]);
    bounds.sort_unstable();
    let parts: Vec<State> = bounds.windows(2).map(|w| fold(&permuted[w[0]..w[1]])).collect();
    prop_assert_eq!(fold(&parts).render(), expected);
  }
}

proptest! {
  #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

  /// Through the files: any order of writing, and archiving at any point, gives the same bytes.
  #[test]
  fn files_in_any_order_give_the_same_current_md(events in prop::collection::vec(arb_event(), 1..8), reverse in any::<bool>()) {
    let one = tempfile::tempdir().unwrap();
    let two = tempfile::tempdir().unwrap();
    for (_, e) in &events {
      write_event(one.path(), e).unwrap();
    }
    let mut reversed = events.clone();
    if reverse {
      reversed.reverse();
    }
    for (_, e) in &reversed {
      write_event(two.path(), e).unwrap();
    }
    let a = synthesize(one.path(), &SynthOptions::default()).unwrap();
    let b = synthesize(two.path(), &SynthOptions::default()).unwrap();
    prop_assert_eq!(a.event_count as usize, events.len());
    // Names differ when two events share an instant and agent (the `~n` suffix follows the
    // writing order), and names break `now` ties: compare everything but such ties.
    let distinct: std::collections::BTreeSet<(Option<i64>, String)> =
      events.iter().map(|(_, e)| (crate::timestamp::parse_ms(&e.ts), e.agent.clone())).collect();
    if distinct.len() == events.len() {
      prop_assert_eq!(a.text, b.text);
    }
  }
}

/// Inputs that make a YAML parser slow (deep flow nesting, long runs of one indicator, alias
/// fans, deep block nesting), each as large as an event may be: decoded or refused with a reason.
/// Nesting past [`event::MAX_FLOW_DEPTH`] is refused as soon as the YAML reader meets it (the
/// parser's time grows with size times flow depth; unbounded, the first body took minutes).
/// The time of each shape is measured in bench/synth.bench.mjs, not asserted here.
#[test]
fn hostile_yaml_shapes_are_decoded_or_refused() {
  let max = event::MAX_EVENT_BYTES as usize - 200;
  let head = "---\nts: 2026-01-10T10:00:00Z\nagent: a\ntype: x\n---\n";
  let deep =
    [format!("now: {}", "[".repeat(max)), format!("now: {}", "{".repeat(max)), format!("now: {}", "[{".repeat(33))];
  for body in deep {
    let reason = Event::decode(format!("{head}{body}\n").as_bytes(), false).unwrap_err();
    assert_eq!(reason, format!("the body is nested deeper than {} levels (line 6)", event::MAX_FLOW_DEPTH));
  }
  // A `]` in a string closes nothing: a bracket count over the text would let this through.
  let quoted = format!("now: {}1{}", "[\"]\", ".repeat(max / 8), "]".repeat(max / 8));
  let reason = Event::decode(format!("{head}{quoted}\n").as_bytes(), false).unwrap_err();
  assert!(reason.starts_with("the body is nested deeper than"), "{reason}");
  let ok = Event::decode(format!("{head}now: \"{}\"\n", "[".repeat(event::MAX_FLOW_DEPTH)).as_bytes(), false).unwrap();
  assert_eq!(ok.now.unwrap().len(), event::MAX_FLOW_DEPTH);
  let mut bodies = vec![
    format!("now: {}", "[".repeat(60) + &"a,".repeat(max / 2)),
    format!("this_session:\n{}", "- x\n".repeat(max / 4)),
    format!("now: \"{}\"", "\\u0041".repeat(max / 6)),
    format!("now: {}", "- ".repeat(max / 2)),
    format!("now: {}", "? ".repeat(max / 2)),
    format!("now: {}", "&a ".repeat(max / 3)),
    format!("this_session: &a [x]\nopen_questions: [{}]", "*a,".repeat(max / 3)),
  ];
  let mut nested = String::from("now:\n");
  for depth in 0..700 {
    nested.push_str(&" ".repeat(depth));
    nested.push_str("- \n");
  }
  bodies.push(nested);
  for body in bodies {
    let _ = Event::decode(format!("{head}{body}\n").as_bytes(), false);
  }
}

/// An event whose values are aliases of one large anchor would expand into megabytes of
/// current.md (17 KiB of text: 999 decisions of 4,000 characters each). Event files come from
/// other machines: their aliases may add at most 4 KiB, so the file is skipped with a reason.
#[test]
fn an_event_cannot_expand_through_aliases() {
  let dir = tempfile::tempdir().unwrap();
  write_event(dir.path(), &event("2026-01-02T10:00:00Z", "a")).unwrap();
  let mut text =
    format!("---\nts: 2026-01-10T10:00:00Z\nagent: b\ntype: x\n---\nnow: &big {}\ndecisions:\n", "y".repeat(4000));
  for i in 0..999 {
    text.push_str(&format!("  k{i}: *big\n"));
  }
  assert!(text.len() < 17 * 1024, "{}", text.len());
  std::fs::write(dir.path().join(EVENTS_DIR).join("alias.md"), &text).unwrap();
  let report = synthesize(dir.path(), &SynthOptions::default()).unwrap();
  assert_eq!(report.event_count, 1);
  assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
  assert_eq!(report.skipped[0].reason, "the body expands through its aliases beyond its own size");
  assert!(report.text.len() < 4096, "{}", report.text.len());
  // A few small aliases stay readable.
  let small = "---\nts: 2026-01-10T10:00:00Z\nagent: b\ntype: x\n---\nnow: &n working\nthis_session: [*n, *n]\n";
  assert_eq!(Event::decode(small.as_bytes(), false).unwrap().this_session, ["working", "working"]);
}

/// Enough files to be decoded on several threads: the result is the one-thread merge.
#[test]
fn many_files_decoded_in_parallel_give_the_sequential_result() {
  let dir = tempfile::tempdir().unwrap();
  let events = dir.path().join(EVENTS_DIR);
  std::fs::create_dir_all(&events).unwrap();
  let mut sequential = State::default();
  for i in 0..(PARALLEL_FROM * 2 + 7) {
    let mut e = event(&format!("2026-01-{:02}T10:00:{:02}Z", 1 + i % 28, i % 60), ["a", "b", "c"][i % 3]);
    e.now = Some(format!("now {i}"));
    e.this_session = vec![format!("item {}", i % 50)];
    e.decisions = BTreeMap::from([(format!("k{}", i % 7), format!("v{i}"))]);
    let file = format!("{i:05}_{}.md", e.agent);
    let bytes = e.encode().unwrap();
    std::fs::write(events.join(&file), &bytes).unwrap();
    sequential.merge(&State::of_event(event_id(&file, &bytes), &file, e.validate().unwrap(), &e));
  }
  std::fs::write(events.join("00003_bad.md"), "not an event").unwrap();
  let report = synthesize(dir.path(), &SynthOptions::default()).unwrap();
  assert_eq!(report.text, sequential.render());
  assert_eq!(report.skipped.len(), 1);
  assert_eq!(report.sources.len(), PARALLEL_FROM * 2 + 7);
}

/// Found by the synth_event fuzz target: a handoff whose `phase` holds a backtick made serde's
/// message (which quotes the value between backticks, unescaped) end the quote early, and part of
/// the value came back in the reason.
#[test]
fn a_handoff_reason_never_carries_a_value_that_holds_backticks() {
  let long = "ess_a_value_long_enough_to_notice";
  let record =
    format!(r#"{{"v":1,"ts":"2026-01-15T14:30:00Z","agent":"a","phase":"`{long}`x","next_session_ready":true}}"#);
  let reason = Event::decode(record.as_bytes(), true).unwrap_err();
  assert!(!reason.contains(long), "{reason}");
  assert!(reason.starts_with("not a trajectory record"), "{reason}");
}
