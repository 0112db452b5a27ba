use super::*;

fn part(id: &str, target: &str, tokens: u64, turn: u64) -> ContextPart {
  ContextPart { id: id.into(), target: target.into(), tokens, turn, phase: None, artifact: None }
}

/// A 1000-token window with the threshold at 80 % (800 tokens).
fn small_policy() -> CompactionPolicy {
  CompactionPolicy { context_window_tokens: 1000, ..CompactionPolicy::default() }
}

fn ids(plan: &CompactionPlan) -> Vec<&str> {
  plan.clear.iter().map(|c| c.id.as_str()).collect()
}

#[test]
fn clears_in_priority_order_until_under_the_threshold() {
  let parts = [
    part("debug-1", "verbose_debug", 100, 1),
    part("read-1", "superseded_file_reads", 100, 1),
    part("tool-2", "stale_tool_results", 100, 2),
    part("tool-1", "stale_tool_results", 100, 1),
    part("user-1", "user_message", 300, 1),
    part("inter-1", "intermediate_outputs", 100, 3),
    part("now", "user_message", 50, 10),
  ];
  let plan = plan_compaction(&parts, &small_policy()).unwrap();
  assert_eq!(plan.tokens_before, 850);
  assert_eq!(plan.threshold_tokens, 800);
  assert!(plan.needed);
  // Lowest priority first, oldest turn first within a target; stop once below 800.
  assert_eq!(ids(&plan), ["tool-1"]);
  assert_eq!((plan.tokens_freed, plan.tokens_after), (100, 750));
  assert!(plan.under_threshold);
  assert_eq!(plan.signal.as_deref(), Some("COMPACTION_COMPLETE"));

  let policy = CompactionPolicy { compact_threshold_percent: 30.0, ..small_policy() };
  let plan = plan_compaction(&parts, &policy).unwrap();
  assert_eq!(ids(&plan), ["tool-1", "tool-2", "read-1", "inter-1", "debug-1"]);
  assert_eq!(plan.tokens_after, 350);
  assert!(!plan.under_threshold, "the user message and the recent turn are never cleared");
  assert_eq!(plan.signal.as_deref(), Some("CONTEXT_NEAR_LIMIT"));
  assert!(plan.message.contains("still over"), "{}", plan.message);

  // The clearing order is the policy's.
  let policy =
    CompactionPolicy { clear_targets: vec![ClearTarget::VerboseDebug, ClearTarget::IntermediateOutputs], ..policy };
  let plan = plan_compaction(&parts, &policy).unwrap();
  assert_eq!(ids(&plan), ["debug-1", "inter-1"]);
  assert!(plan.protected.iter().any(|k| k.id == "tool-1" && k.reason == KeepReason::NotAClearTarget));
}

#[test]
fn nothing_needed_below_the_threshold() {
  let plan = plan_compaction(&[part("a", "stale_tool_results", 799, 1)], &small_policy()).unwrap();
  assert!(!plan.needed && plan.under_threshold && plan.clear.is_empty());
  assert_eq!(plan.signal, None);
  let plan = plan_compaction(&[part("a", "stale_tool_results", 800, 1)], &small_policy()).unwrap();
  assert!(plan.needed, "reaching the threshold is enough");
  let plan = plan_compaction(&[], &small_policy()).unwrap();
  assert_eq!((plan.tokens_before, plan.needed), (0, false));
}

#[test]
fn never_clears_preserved_artifacts_or_recent_turns() {
  let mut parts = vec![
    part("traj", "stale_tool_results", 400, 1),
    part("gate", "quality_gate_results", 200, 1),
    part("cov", "intermediate_outputs", 100, 1),
    part("tool-new", "stale_tool_results", 300, 8),
    part("tool-old", "stale_tool_results", 100, 3),
  ];
  parts[0].artifact = Some("trajectory_events".into());
  parts[2].artifact = Some("coverage_data".into());
  let policy = CompactionPolicy {
    compact_threshold_percent: 10.0,
    preserve_artifacts: vec!["coverage_data".into()],
    ..small_policy()
  };
  let plan = plan_compaction(&parts, &policy).unwrap();
  // Current turn 8, 5 recent turns: 4..=8 are preserved; turn 3 is not.
  assert_eq!(ids(&plan), ["tool-old"]);
  assert!(!plan.under_threshold);
  let reasons: Vec<(&str, KeepReason)> = plan.protected.iter().map(|k| (k.id.as_str(), k.reason)).collect();
  assert_eq!(
    reasons,
    [
      ("traj", KeepReason::PreservedArtifact),
      ("gate", KeepReason::PreservedArtifact), // its target names an artifact
      ("cov", KeepReason::PreservedArtifact),
      ("tool-new", KeepReason::RecentTurn),
    ]
  );
  assert_eq!(plan.protected_tokens, 1000);

  // The five mandatory artifacts stay preserved even if a policy leaves them out.
  let policy = CompactionPolicy { preserve_artifacts: vec![], preserve_recent_turns: 0, ..policy };
  let plan = plan_compaction(&parts, &policy).unwrap();
  assert!(!ids(&plan).contains(&"traj"));
  assert!(ids(&plan).contains(&"tool-new") && ids(&plan).contains(&"cov"));

  // An explicit current turn moves the window of recent turns.
  let policy = CompactionPolicy { current_turn: Some(20), ..small_policy() };
  let plan = plan_compaction(&[part("t", "stale_tool_results", 900, 8)], &policy).unwrap();
  assert_eq!(ids(&plan), ["t"]);
}

#[test]
fn phase_details_only_after_their_phase_completed() {
  let mut parts = vec![
    part("setup-log", "completed_phase_details", 300, 1),
    part("impl-log", "completed_phase_details", 300, 1),
    part("review-log", "completed_phase_details", 300, 1),
    part("nophase", "completed_phase_details", 100, 1),
    part("now", "user_message", 10, 10),
  ];
  parts[0].phase = Some("initialization".into());
  parts[1].phase = Some("implementation".into());
  parts[2].phase = Some("review".into()); // completed, but not in clear_after_phases
  let policy = CompactionPolicy {
    compact_threshold_percent: 10.0,
    completed_phases: vec!["initialization".into(), "review".into()],
    ..small_policy()
  };
  let plan = plan_compaction(&parts, &policy).unwrap();
  assert_eq!(ids(&plan), ["setup-log"]);
  let kept: Vec<&str> =
    plan.protected.iter().filter(|k| k.reason == KeepReason::PhaseNotCompleted).map(|k| k.id.as_str()).collect();
  assert_eq!(kept, ["impl-log", "review-log", "nophase"]);
  assert!(plan.protected.iter().any(|k| k.id == "now" && k.reason == KeepReason::RecentTurn));
}

#[test]
fn disabled_editing_clears_nothing_and_says_so() {
  let policy = CompactionPolicy { enabled: false, ..small_policy() };
  let plan = plan_compaction(&[part("a", "stale_tool_results", 900, 1)], &policy).unwrap();
  assert!(plan.clear.is_empty() && !plan.under_threshold);
  assert_eq!(plan.signal.as_deref(), Some("CONTEXT_NEAR_LIMIT"));
  assert!(plan.message.contains("disabled"));
}

#[test]
fn invalid_parts_and_policies() {
  let err = plan_compaction(&[part("a", "x", 1, 1), part("a", "y", 1, 1)], &small_policy()).unwrap_err();
  assert_eq!(err.code(), "E_INVALID_ARGUMENT");
  assert!(err.to_string().contains("items[1].id"), "{err}");
  assert!(plan_compaction(&[part("", "x", 1, 1)], &small_policy()).is_err());
  for p in [0.0, -5.0, 100.5, f64::NAN] {
    let policy = CompactionPolicy { compact_threshold_percent: p, ..small_policy() };
    assert!(plan_compaction(&[], &policy).is_err(), "{p}");
  }
}

// -- SKILL.md ----------------------------------------------------------------------------------

fn skill(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
  let dir = tempfile::tempdir().unwrap();
  let path = dir.path().join("SKILL.md");
  std::fs::write(&path, text).unwrap();
  (dir, path)
}

#[test]
fn reads_the_seed_003_skill_example() {
  let (_d, path) = skill(
    "---\nname: implementing-tasks\ncontext_editing:\n  # Clear after specific phases within this skill\n  clear_after_phases: [setup, coding]\n\n  \
     # Additional artifacts this skill needs preserved\n  preserve_artifacts:\n    - test_results\n    - coverage_data\n---\n\n# Implementing tasks\n\nBody.\n",
  );
  let s = read_skill_context_policy(&path, &CompactionPolicy::default()).unwrap();
  assert_eq!(s.name.as_deref(), Some("implementing-tasks"));
  assert!(s.found && s.warnings.is_empty());
  assert_eq!(s.policy.clear_after_phases, ["setup", "coding"]);
  assert_eq!(s.policy.preserve_artifacts.len(), 7, "added to the five: {:?}", s.policy.preserve_artifacts);
  assert_eq!(s.policy.preserve_recent_turns, 5, "untouched settings keep the base's values");

  // It changes what the planner does.
  let mut cov = part("cov", "intermediate_outputs", 900, 1);
  cov.artifact = Some("coverage_data".into());
  let now = part("now", "user_message", 10, 10);
  let plan =
    plan_compaction(&[cov.clone(), now.clone()], &CompactionPolicy { context_window_tokens: 1000, ..s.policy.clone() })
      .unwrap();
  assert!(plan.clear.is_empty());
  let plan = plan_compaction(&[cov, now], &small_policy()).unwrap();
  assert_eq!(ids(&plan), ["cov"]);
}

#[test]
fn skill_overrides_replace_and_add() {
  let (_d, path) = skill(
    "---\r\nname: x\r\ncontext_editing:\r\n  enabled: false\r\n  compact_threshold_percent: 50\r\n  preserve_recent_turns: 1\r\n  \
     clear_targets: [verbose_debug, verbose_debug]\r\n  colour: blue\r\n...\r\nbody\r\n",
  );
  let base = CompactionPolicy { preserve_artifacts: vec!["mine".into()], ..CompactionPolicy::default() };
  let s = read_skill_context_policy(&path, &base).unwrap();
  assert!(!s.policy.enabled);
  assert_eq!((s.policy.compact_threshold_percent, s.policy.preserve_recent_turns), (50.0, 1));
  assert_eq!(s.policy.clear_targets, [ClearTarget::VerboseDebug]);
  assert_eq!(s.policy.preserve_artifacts, ["mine"]);
  assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
  assert!(s.warnings[1].contains("context_editing.colour"));
}

/// Frontmatter nested past the YAML reader's bound is refused before the parser has read all of
/// it (its time would grow with size times depth).
#[test]
fn deeply_nested_frontmatter_is_refused() {
  let n = 100_000;
  for deep in [format!("{}1{}", "[".repeat(n), "]".repeat(n)), format!("{}1{}", "{a: ".repeat(n), "}".repeat(n))] {
    let (_d, path) = skill(&format!("---\nname: x\ncontext_editing: {deep}\n---\nbody\n"));
    let err = read_skill_context_policy(&path, &CompactionPolicy::default()).unwrap_err();
    assert!(matches!(err, LoaError::ConfigInvalid { ref key, .. } if key == "<yaml>"), "{err}");
    assert!(err.to_string().contains("nested deeper than 32 levels (line 2)"), "{err}");
  }
}

#[test]
fn skills_without_a_block_keep_the_base() {
  let base = CompactionPolicy::default();
  for text in [
    "# No frontmatter\n",
    "---\nname: plain\n---\nbody\n",
    "---\n---\n",
    "",
    "---\nname: unterminated\n",
    "----\nname: x\n---\n",
  ] {
    let (_d, path) = skill(text);
    let s = read_skill_context_policy(&path, &base).unwrap();
    assert!(!s.found, "{text:?}");
    assert_eq!(s.policy, base);
  }
}

#[test]
fn invalid_skill_files_name_the_key_and_the_file() {
  let (_d, path) = skill("---\ncontext_editing:\n  clear_targets: [stale_tool_results, everything]\n---\n");
  match read_skill_context_policy(&path, &CompactionPolicy::default()).unwrap_err() {
    LoaError::ConfigInvalid { key, reason } => {
      assert_eq!(key, "context_editing.clear_targets[1]");
      assert!(reason.contains("SKILL.md"), "{reason}");
    }
    e => panic!("{e}"),
  }
  for (text, key) in [
    ("---\ncontext_editing: [1]\n---\n", "context_editing"),
    ("---\ncontext_editing:\n  compact_threshold_percent: 150\n---\n", "context_editing.compact_threshold_percent"),
    ("---\ncontext_editing:\n  preserve_recent_turns: -1\n---\n", "context_editing.preserve_recent_turns"),
    ("---\ncontext_editing: {\n---\n", "<yaml>"),
    ("---\n- a list\n---\n", "<yaml>"),
  ] {
    let (_d, path) = skill(text);
    match read_skill_context_policy(&path, &CompactionPolicy::default()).unwrap_err() {
      LoaError::ConfigInvalid { key: k, .. } => assert_eq!(k, key, "{text:?}"),
      e => panic!("{text:?}: {e}"),
    }
  }
  let missing =
    read_skill_context_policy(Path::new("/nonexistent/SKILL.md"), &CompactionPolicy::default()).unwrap_err();
  assert_eq!(missing.code(), "E_IO");
  let (_d, path) = skill(&"x".repeat(MAX_SKILL_FILE_BYTES as usize + 1));
  assert_eq!(read_skill_context_policy(&path, &CompactionPolicy::default()).unwrap_err().code(), "E_TOO_LARGE");
}

#[test]
fn skill_files_are_read_only_as_regular_files() {
  let (dir, path) = skill("---\nname: real\n---\n");
  let outside = dir.path().join("outside.md");
  std::fs::write(&outside, "---\nname: from-outside\n---\n").unwrap();
  let link = dir.path().join("LINKED.md");
  std::os::unix::fs::symlink(&outside, &link).unwrap();
  assert_eq!(read_skill_context_policy(&link, &CompactionPolicy::default()).unwrap_err().code(), "E_NOT_REGULAR_FILE");
  let fifo = dir.path().join("FIFO.md");
  rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o600), 0)
    .unwrap();
  assert_eq!(read_skill_context_policy(&fifo, &CompactionPolicy::default()).unwrap_err().code(), "E_NOT_REGULAR_FILE");
  assert_eq!(
    read_skill_context_policy(dir.path(), &CompactionPolicy::default()).unwrap_err().code(),
    "E_NOT_REGULAR_FILE"
  );
  assert_eq!(read_skill_context_policy(&path, &CompactionPolicy::default()).unwrap().name.as_deref(), Some("real"));
}

#[test]
fn a_repeated_target_keeps_the_place_of_its_first_mention() {
  use ClearTarget::*;
  let targets = ClearTarget::first_mentions([VerboseDebug, StaleToolResults, VerboseDebug, StaleToolResults]);
  assert_eq!(targets, [VerboseDebug, StaleToolResults]);
}
