use super::*;
use crate::fsutil::StateDir;
use crate::sign::keys::{KeyPolicy, KeyRing};
use crate::sign::manifest::{create_manifest, sign_manifest, write_manifest, ManifestOptions};

const BEAUVOIR: &str = "# BEAUVOIR

## Identity

I am Beauvoir, a careful assistant.

## Core Principles

1. **Honesty** - say what is known and what is not
2. **Care**: check before acting
3. Plain principle without a name

### Restraint

Do less, better.

More text that is not the first paragraph.

## Operational Stance

Measured. Evidence first.

```markdown
## Not A Heading
- not an item
```

## Interaction Style

- Concise
- Direct,
  even when it is uncomfortable

## Boundaries

### Won't Do

- Leak secrets
- Pretend

### Always Do

- Cite sources

## Self-Evolution

Proposes changes to this file; never edits it.

## Recovery Protocol

Fall back to the template identity.

## Unknown Section

ignored
";

#[test]
fn every_section_is_parsed_and_fenced_headings_are_not_headings() {
  let doc = parse_beauvoir(BEAUVOIR);
  assert_eq!(doc.sections, SECTIONS_IN_ORDER);
  assert_eq!(doc.text("Identity"), "I am Beauvoir, a careful assistant.");
  assert_eq!(
    doc.principles,
    vec![
      Principle { name: Some("Honesty".into()), description: "say what is known and what is not".into() },
      Principle { name: Some("Care".into()), description: "check before acting".into() },
      Principle { name: None, description: "Plain principle without a name".into() },
      Principle {
        name: Some("Restraint".into()),
        description: "Do less, better.\n\nMore text that is not the first paragraph.".into()
      },
    ]
  );
  // The fenced `## Not A Heading` stays inside Operational Stance, and is no section.
  assert!(doc.text("Operational Stance").starts_with("Measured. Evidence first."));
  assert!(doc.text("Operational Stance").contains("## Not A Heading"));
  assert_eq!(doc.text("Interaction Style"), "- Concise\n- Direct,\n  even when it is uncomfortable");
  assert_eq!(doc.wont_do, vec!["Leak secrets", "Pretend"]);
  assert_eq!(doc.always_do, vec!["Cite sources"]);
  assert_eq!(doc.text("Self-Evolution"), "Proposes changes to this file; never edits it.");
  assert_eq!(doc.text("Recovery Protocol"), "Fall back to the template identity.");
  assert_eq!(doc.other_sections, vec![OtherSection { title: "Unknown Section".into(), body: "ignored".into() }]);
}

const SECTIONS_IN_ORDER: &[&str] = &[
  "Identity",
  "Core Principles",
  "Operational Stance",
  "Interaction Style",
  "Boundaries",
  "Self-Evolution",
  "Recovery Protocol",
];

#[test]
fn a_fenced_section_heading_does_not_open_a_section() {
  let doc = parse_beauvoir("## Identity\n\nme\n\n```\n## Core Principles\n1. **Fake** - injected\n```\n");
  assert_eq!(doc.sections, vec!["Identity"]);
  assert!(doc.principles.is_empty());
  let doc = parse_beauvoir("~~~\n## Identity\n~~~\n");
  assert!(doc.sections.is_empty());
}

#[test]
fn spellings_of_headings_are_one_key() {
  let doc = parse_beauvoir("## boundaries\n### Will Not Do\n- a\n### ALWAYS DO:\n- b\n## Self Evolution\nx\n");
  assert_eq!(doc.text("Self-Evolution"), "x");
  assert_eq!((doc.wont_do, doc.always_do), (vec!["a".to_string()], vec!["b".to_string()]));
  let doc = parse_beauvoir("## Boundaries\n### Won’t Do\n- curly\n");
  assert_eq!(doc.wont_do, vec!["curly"]);
}

struct Ws {
  _tmp: tempfile::TempDir,
  ws: PathBuf,
}

fn ws() -> Ws {
  let tmp = tempfile::tempdir().unwrap();
  let ws = tmp.path().join("ws");
  std::fs::create_dir_all(ws.join("grimoires/loa")).unwrap();
  std::fs::write(ws.join("grimoires/loa/BEAUVOIR.md"), BEAUVOIR).unwrap();
  Ws { _tmp: tmp, ws }
}

fn options(w: &Ws) -> SoulOptions {
  SoulOptions { workspace_dir: w.ws.clone(), ..Default::default() }
}

#[test]
fn soul_is_generated_with_every_section_and_regenerated_when_beauvoir_changes() {
  let w = ws();
  let r = generate_soul(&options(&w)).unwrap();
  assert_eq!(r.status, SoulStatus::Generated);
  let soul = std::fs::read_to_string(w.ws.join("SOUL.md")).unwrap();
  for needle in [
    "## Identity\n\nI am Beauvoir",
    "## Core Principles\n\n1. **Honesty** - say what is known and what is not\n2. **Care**: check before acting\n3. Plain principle without a name\n\n### Restraint\n\nDo less, better.\n\nMore text that is not the first paragraph.\n",
    "## Operational Stance",
    "## Interaction Style\n\n- Concise\n- Direct,\n  even when it is uncomfortable\n",
    "### Won't Do\n\n- Leak secrets\n- Pretend\n",
    "### Always Do\n\n- Cite sources\n",
    "## Unknown Section\n\nignored\n",
    "## Self-Evolution",
    "## Recovery Protocol",
    &format!("*Checksum: {}*", &r.beauvoir_sha256[..16]),
  ] {
    assert!(soul.contains(needle), "missing {needle:?} in\n{soul}");
  }
  assert_eq!(r.unrecognized_sections, vec!["Unknown Section"]);
  assert_eq!(r.soul_sha256, sha256_hex(soul.as_bytes()));
  // Unchanged: nothing written.
  assert_eq!(generate_soul(&options(&w)).unwrap().status, SoulStatus::UpToDate);
  // An edit of BEAUVOIR.md, Core Principles included, reaches SOUL.md.
  let edited = BEAUVOIR.replace("2. **Care**: check before acting", "2. **Courage**: say no");
  std::fs::write(w.ws.join("grimoires/loa/BEAUVOIR.md"), edited).unwrap();
  let mut check = options(&w);
  check.check_only = true;
  assert_eq!(generate_soul(&check).unwrap().status, SoulStatus::Stale);
  assert_eq!(std::fs::read_to_string(w.ws.join("SOUL.md")).unwrap(), soul, "check-only writes nothing");
  assert_eq!(generate_soul(&options(&w)).unwrap().status, SoulStatus::Generated);
  let soul2 = std::fs::read_to_string(w.ws.join("SOUL.md")).unwrap();
  assert!(soul2.contains("2. **Courage**: say no") && !soul2.contains("Care"));
}

#[test]
fn a_hand_edited_soul_is_reported_and_never_overwritten() {
  let w = ws();
  generate_soul(&options(&w)).unwrap();
  std::fs::write(w.ws.join("SOUL.md"), "# Soul\nmy own words\n").unwrap();
  std::fs::write(w.ws.join("grimoires/loa/BEAUVOIR.md"), BEAUVOIR.replace("careful", "bold")).unwrap();
  let r = generate_soul(&options(&w)).unwrap();
  assert_eq!(r.status, SoulStatus::HandEdited);
  assert_eq!(std::fs::read_to_string(w.ws.join("SOUL.md")).unwrap(), "# Soul\nmy own words\n");
  // A SOUL.md that existed before any generation is not ours either.
  let w = ws();
  std::fs::write(w.ws.join("SOUL.md"), "someone else's").unwrap();
  assert_eq!(generate_soul(&options(&w)).unwrap().status, SoulStatus::HandEdited);
  assert_eq!(std::fs::read_to_string(w.ws.join("SOUL.md")).unwrap(), "someone else's");
}

#[test]
fn a_crash_between_soul_and_record_is_not_a_hand_edit() {
  let w = ws();
  generate_soul(&options(&w)).unwrap();
  std::fs::write(w.ws.join("grimoires/loa/BEAUVOIR.md"), BEAUVOIR.replace("careful", "bold")).unwrap();
  // SOUL.md written, the record not: as if the process died in between.
  let doc = parse_beauvoir(&BEAUVOIR.replace("careful", "bold"));
  let sha = sha256_hex(BEAUVOIR.replace("careful", "bold").as_bytes());
  std::fs::write(w.ws.join("SOUL.md"), render_soul(&doc, &sha).text).unwrap();
  assert_eq!(generate_soul(&options(&w)).unwrap().status, SoulStatus::UpToDate);
  std::fs::write(w.ws.join("grimoires/loa/BEAUVOIR.md"), BEAUVOIR).unwrap();
  assert_eq!(generate_soul(&options(&w)).unwrap().status, SoulStatus::Generated, "the record caught up");
}

#[test]
fn beauvoir_is_checked_against_the_signed_manifest_before_generation() {
  let w = ws();
  let ring = KeyRing::with_seed(&w._tmp.path().join("pinned"), KeyPolicy::default(), None).unwrap();
  ring.generate().unwrap();
  let g = w.ws.join("grimoires/loa");
  let m =
    create_manifest(&g, &ManifestOptions { exclude: vec!["manifest.json".into()], ..Default::default() }, &mut |_| {
      Ok(())
    })
    .unwrap();
  write_manifest(&g.join("manifest.json"), &sign_manifest(&m.to_value(), &ring).unwrap()).unwrap();
  let mut o = options(&w);
  o.integrity = Integrity::Manifest {
    manifest_path: "grimoires/loa/manifest.json".into(),
    entry: "BEAUVOIR.md".into(),
    keys: TrustedKey::from_ring(&ring).unwrap(),
  };
  assert_eq!(generate_soul(&o).unwrap().status, SoulStatus::Generated);
  std::fs::write(g.join("BEAUVOIR.md"), BEAUVOIR.replace("Leak secrets", "Nothing")).unwrap();
  assert_eq!(generate_soul(&o).unwrap_err().code(), "E_SIGNATURE_INVALID");
  assert!(std::fs::read_to_string(w.ws.join("SOUL.md")).unwrap().contains("Leak secrets"), "SOUL.md untouched");
  // Another key (say one planted in the workspace) is not trusted.
  let other = KeyRing::with_seed(&w.ws.join(".loa/keys"), KeyPolicy::default(), None).unwrap();
  other.generate().unwrap();
  let m =
    create_manifest(&g, &ManifestOptions { exclude: vec!["manifest.json".into()], ..Default::default() }, &mut |_| {
      Ok(())
    })
    .unwrap();
  write_manifest(&g.join("manifest.json"), &sign_manifest(&m.to_value(), &other).unwrap()).unwrap();
  assert_eq!(generate_soul(&o).unwrap_err().code(), "E_SIGNATURE_INVALID");
}

#[test]
fn a_beauvoir_without_sections_or_missing_generates_nothing() {
  let w = ws();
  std::fs::write(w.ws.join("grimoires/loa/BEAUVOIR.md"), "just text\n```\n## Identity\n```\n").unwrap();
  assert_eq!(generate_soul(&options(&w)).unwrap_err().code(), "E_INVALID_ARGUMENT");
  std::fs::remove_file(w.ws.join("grimoires/loa/BEAUVOIR.md")).unwrap();
  assert!(generate_soul(&options(&w)).unwrap_err().is_not_found());
  assert!(!w.ws.join("SOUL.md").exists());
}

const ORIGINAL_LAYOUT: &str = include_str!("../../testdata/identity/BEAUVOIR.original-layout.md");
const CORE_BEHAVIORS: &str = include_str!("../../testdata/identity/BEAUVOIR.core-behaviors.md");

/// `## ` headings of a generated SOUL.md outside fences: what it actually carries.
fn soul_sections(soul: &str) -> Vec<String> {
  let mut fenced = false;
  let mut out = Vec::new();
  for line in soul.lines() {
    if line.starts_with("```") {
      fenced = !fenced;
    } else if !fenced {
      if let Some(h) = line.strip_prefix("## ") {
        out.push(h.to_string());
      }
    }
  }
  out
}

/// Lines of `text` from the heading line `from` up to the next heading of level `level` or
/// higher (by counting `#`, independent of the parser under test).
fn lines_under<'a>(text: &'a str, from: &str, level: usize) -> Vec<&'a str> {
  let mut lines = text.lines().skip_while(|l| *l != from);
  assert!(lines.next().is_some(), "{from} is in the fixture");
  lines
    .take_while(|l| {
      let hashes = l.bytes().take_while(|b| *b == b'#').count();
      hashes == 0 || hashes > level || !l[hashes..].starts_with(' ')
    })
    .collect()
}

fn generate(text: &str) -> (SoulReport, String) {
  let w = ws();
  std::fs::write(w.ws.join("grimoires/loa/BEAUVOIR.md"), text).unwrap();
  let r = generate_soul(&options(&w)).unwrap();
  assert_eq!(r.status, SoulStatus::Generated);
  let soul = std::fs::read_to_string(w.ws.join("SOUL.md")).unwrap();
  (r, soul)
}

#[test]
fn an_identity_in_the_originals_layout_reaches_soul_whole() {
  let (r, soul) = generate(ORIGINAL_LAYOUT);
  let has_line = |line: &str| soul.lines().any(|l| l == line);
  // Every principle: its `### N. Title` and each line of its body, `**In practice**:` included.
  let principles: Vec<&str> =
    ORIGINAL_LAYOUT.lines().filter(|l| l.starts_with("### ") && l.as_bytes()[4].is_ascii_digit()).collect();
  assert_eq!(principles.len(), 6);
  for p in &principles {
    assert!(has_line(p), "principle {p:?} missing from\n{soul}");
    let body: Vec<&str> =
      lines_under(ORIGINAL_LAYOUT, p, 3).into_iter().filter(|l| !l.trim().is_empty() && *l != "---").collect();
    assert!(body.iter().any(|l| l.starts_with("**In practice**:")) && body.iter().any(|l| l.contains("**")));
    for line in body {
      assert!(has_line(line), "line {line:?} of {p:?} missing from\n{soul}");
    }
  }
  // Every boundary item, as written, in both lists.
  for list in ["### What I Won't Do", "### What I Always Do"] {
    let items: Vec<&str> =
      lines_under(ORIGINAL_LAYOUT, list, 3).into_iter().filter(|l| l.starts_with(char::is_numeric)).collect();
    assert_eq!(items.len(), 4, "{list}");
    assert!(has_line(list));
    for item in items {
      assert!(item.contains("**") && has_line(item), "{item:?} missing from\n{soul}");
    }
  }
  // The protocol between the lists: its steps, tables and the example's fence, under Boundaries.
  let boundaries = &soul[soul.find("\n## Boundaries\n").unwrap()..soul.find("\n## Self-Evolution\n").unwrap()];
  for line in lines_under(ORIGINAL_LAYOUT, "## Boundaries", 2) {
    if !line.trim().is_empty() && line != "---" {
      assert!(boundaries.lines().any(|l| l == line), "{line:?} missing from Boundaries in\n{soul}");
    }
  }
  assert_eq!(ORIGINAL_LAYOUT.lines().filter(|l| l.starts_with("#### Step")).count(), 4);
  for sub in ["### Concise", "### Opinionated", "### Transparent", "### Resourceful", "### What Makes Me Different"] {
    assert!(has_line(sub), "{sub}");
  }
  // Nothing else is lost either: every line but the title and the separators is in SOUL.md
  // (section headings are written by their canonical names).
  for line in ORIGINAL_LAYOUT.lines().skip(1) {
    if line.trim().is_empty() || line == "---" || line.starts_with("## ") {
      continue;
    }
    assert!(has_line(line), "{line:?} missing from\n{soul}");
  }
  // The report is what SOUL.md carries.
  assert_eq!(r.sections, SECTIONS_IN_ORDER);
  assert!(r.missing_sections.is_empty() && r.unrecognized_sections.is_empty());
  assert_eq!(soul_sections(&soul), SECTIONS_IN_ORDER);
  // The model too: six principles named without their numbers, each with its In practice line.
  let doc = parse_beauvoir(ORIGINAL_LAYOUT);
  let names: Vec<_> = doc.principles.iter().map(|p| p.name.clone().unwrap()).collect();
  assert_eq!(names[0], "Evidence Before Assertion");
  assert_eq!(names.len(), 6);
  assert!(doc.principles.iter().all(|p| p.description.contains("**In practice**:")));
  assert_eq!(doc.wont_do.len(), 4);
  assert_eq!(doc.always_do[0], "**Write decisions down** in NOTES.md");
}

#[test]
fn an_identity_with_core_behaviors_bullets_reaches_soul_whole() {
  let (r, soul) = generate(CORE_BEHAVIORS);
  let has_line = |line: &str| soul.lines().any(|l| l == line);
  for line in CORE_BEHAVIORS.lines().skip(1) {
    if line.trim().is_empty() || line.starts_with("## ") {
      continue;
    }
    assert!(has_line(line), "{line:?} missing from\n{soul}");
  }
  assert_eq!(r.sections, vec!["Identity", "Core Principles", "Boundaries"]);
  assert_eq!(soul_sections(&soul), r.sections);
  assert!(soul.contains("## Boundaries\n\n### Never:\n\n- Rewrite history"), "{soul}");
  let doc = parse_beauvoir(CORE_BEHAVIORS);
  assert_eq!(doc.principles.len(), 4);
  assert_eq!(doc.principles[1].description, "Every statement names the note it came from.");
  assert_eq!(doc.wont_do, vec!["Rewrite history in the ledger", "Delete a note without a tombstone"]);
}

#[test]
fn the_report_lists_only_what_soul_carries() {
  // The original listed a section as found whenever its heading was there, though SOUL.md
  // held nothing of it (its Boundaries lists had other headings; its principles were empty).
  let (r, soul) = generate(
    "## Identity\n\nme\n\n## Boundaries\n\n### Hard Rules\n\n- never fabricate\n\n## Core Principles\n\n---\n\n## Recovery Protocol\n",
  );
  assert_eq!(r.sections, vec!["Identity", "Boundaries"]);
  assert_eq!(soul_sections(&soul), r.sections);
  assert!(soul.contains("### Hard Rules\n\n- never fabricate"), "{soul}");
  assert!(r.missing_sections.contains(&"Core Principles".to_string()));
  assert!(r.missing_sections.contains(&"Recovery Protocol".to_string()));
}

#[test]
fn unrecognised_sections_are_carried_and_named() {
  let (r, soul) = generate("## Identity\n\nme\n\n## Favourite Tools\n\n- a hammer\n\n### Why\n\nit works\n");
  assert_eq!(r.unrecognized_sections, vec!["Favourite Tools"]);
  assert!(soul.contains("## Favourite Tools\n\n- a hammer\n\n### Why\n\nit works\n"), "{soul}");
  assert_eq!(soul_sections(&soul), vec!["Identity", "Favourite Tools"]);
}

#[test]
fn layout_variants_are_read_alike() {
  let canonical = parse_beauvoir(
    "## Identity\n\nme\n\n## Core Principles\n\n- **Care** - check\n\n## Boundaries\n\n### Won't Do\n\n- lie\n\n### Always Do\n\n- cite\n",
  );
  for variant in [
    // `#` sections under no title, CRLF, `*` bullets, bold colon inside, trailing spaces.
    "# Identity  \r\n\r\nme\r\n\r\n# Core Principles:\r\n\r\n* **Care:** check\r\n\r\n# Boundaries\r\n\r\n## What I Will Not Do\r\n\r\n1) lie\r\n\r\n## What I Always Do\r\n\r\n- cite\r\n",
    // Setext headings, lists as sections of their own, a numbered section heading, an em dash.
    "Who I Am\n========\n\nme\n\nPrinciples — why\n================\n\n1. **Care**: check\n\nNever\n=====\n\n+ lie\n\nAlways\n======\n\n- cite\n",
    // A byte order mark, conjunctions, a bold heading, an emoji, `Don't` spelt with a curly quote.
    "\u{feff}## Identity and Purpose\n\nme\n\n## 🧭 Values & Principles\n\n- **Care** — check\n\n## **Boundaries / Limits**\n\n### Don’t\n\n- lie\n\n### Always, always\n\n- cite\n",
    // Deeper levels under a title, separators, parenthetical suffixes.
    "# Me\n\n### Identity (short)\n\nme\n\n---\n\n### CORE VALUES\n\n- __Care__ — check\n\n### Boundaries\n\n#### Don't\n\n- lie\n\n#### Always:\n\n- cite\n",
  ] {
    let doc = parse_beauvoir(variant);
    assert_eq!(doc.text("Identity"), "me", "{variant:?}");
    assert_eq!(doc.principles, canonical.principles, "{variant:?}");
    assert_eq!((&doc.wont_do, &doc.always_do), (&canonical.wont_do, &canonical.always_do), "{variant:?}");
    let soul = render_soul(&doc, "00").text;
    assert_eq!(soul_sections(&soul), vec!["Identity", "Core Principles", "Boundaries"], "{variant:?}\n{soul}");
    for needle in ["me", "Care", "lie", "cite"] {
      assert!(soul.contains(needle), "{needle} in {soul}");
    }
  }
}

#[test]
fn sub_headings_move_with_their_section() {
  // `#` sections: their `##` sub-headings sit at `###` under SOUL.md's `##` sections.
  let doc =
    parse_beauvoir("# Identity\n\nme\n\n## What Makes Me Me\n\nsure\n\n# Interaction Style\n\nSub\n---\n\n- brief\n");
  assert_eq!(doc.text("Identity"), "me\n\n### What Makes Me Me\n\nsure");
  assert_eq!(doc.text("Interaction Style"), "### Sub\n\n- brief");
}

#[test]
fn a_soul_generated_by_the_previous_version_is_regenerated_not_hand_edited() {
  let w = ws();
  // What the previous version wrote (principles as one-line items, no Unknown Section) and
  // recorded: SOUL.md's bytes are the ones the record vouches for, so they are ours.
  let old = "# Soul\n\nYou embody the following identity and principles.\n\n## Identity\n\nI am Beauvoir, a careful assistant.\n\n## Core Principles\n\n1. **Honesty** - say what is known and what is not\n\n---\n*Generated by LOA from BEAUVOIR.md - DO NOT EDIT*\n*Checksum: 0000000000000000*\n";
  std::fs::write(w.ws.join("SOUL.md"), old).unwrap();
  let state = StateDir::open_root(&w.ws).unwrap().descend(Path::new(".loa/identity"), true).unwrap().unwrap();
  write_state(&state, &sha256_hex(BEAUVOIR.as_bytes()), &sha256_hex(old.as_bytes())).unwrap();
  let mut check = options(&w);
  check.check_only = true;
  assert_eq!(generate_soul(&check).unwrap().status, SoulStatus::Stale);
  assert_eq!(generate_soul(&options(&w)).unwrap().status, SoulStatus::Generated);
  assert!(std::fs::read_to_string(w.ws.join("SOUL.md")).unwrap().contains("### Restraint"));
}

#[test]
fn the_largest_beauvoir_generates_a_soul_that_is_read_back() {
  // Sub-headings are the only bytes that grow (a setext `a\n-` becomes `### a`): the
  // generated SOUL.md must still be within what is read back, or every later run would fail.
  let mut text = String::from("Identity\n========\n\n");
  while text.len() + 5 <= MAX_IDENTITY_BYTES as usize {
    text.push_str("a\n-\n\n");
  }
  let w = ws();
  std::fs::write(w.ws.join("grimoires/loa/BEAUVOIR.md"), &text).unwrap();
  assert_eq!(generate_soul(&options(&w)).unwrap().status, SoulStatus::Generated);
  let len = std::fs::metadata(w.ws.join("SOUL.md")).unwrap().len();
  assert!(len > MAX_IDENTITY_BYTES && len <= MAX_SOUL_BYTES, "{len}");
  assert_eq!(generate_soul(&options(&w)).unwrap().status, SoulStatus::UpToDate);
}

#[test]
fn deeply_nested_headings_cost_linear_time() {
  // 100,000 headings in every nesting order: a quadratic scan would not finish.
  let mut text = String::from("## Identity\n\n");
  for i in 0..100_000 {
    text.push_str(&format!("{} h\n", "#".repeat(3 + i % 4)));
  }
  text.push_str("## Boundaries\n\n");
  for i in 0..100_000 {
    text.push_str(&format!("{} Never\n- x\n", "#".repeat(6 - i % 4)));
  }
  let doc = parse_beauvoir(&text);
  assert_eq!(doc.sections, vec!["Identity", "Boundaries"]);
  assert_eq!(doc.wont_do.len(), 100_000);
}

#[test]
fn rendering_is_bounded_and_names_each_known_section_once() {
  // The invariants of the `identity_md` fuzz target, on the fixtures and hostile shapes.
  let inputs = [
    BEAUVOIR.to_string(),
    ORIGINAL_LAYOUT.to_string(),
    CORE_BEHAVIORS.to_string(),
    "a\n-\n".repeat(10_000),
    format!("# Identity\n\n{}", "b\n-\nc\n=\n".repeat(5_000)),
    "## Never\n\n## Always\n\n## Boundaries\n\n## Identity\n\n## Identity\n\nx\n".into(),
    "## Identity\n\n```\n## Boundaries\n- open fence\n".into(),
    "> ## Identity\n\n- ## Boundaries\n".into(),
    String::new(),
  ];
  for text in &inputs {
    let soul = render_soul(&parse_beauvoir(text), "0000000000000000");
    assert!(soul.text.len() <= 2 * text.len() + 1024, "{} from {}", soul.text.len(), text.len());
    for (i, s) in soul.sections.iter().enumerate() {
      assert!(SECTIONS.contains(&s.as_str()) && !soul.sections[..i].contains(s), "{s:?}");
    }
  }
  // An empty list section adds nothing; a section written twice is joined.
  let doc = parse_beauvoir("## Never\n\n## Identity\n\none\n\n## Identity\n\ntwo\n");
  let soul = render_soul(&doc, "00");
  assert_eq!(soul.sections, vec!["Identity"]);
  assert_eq!(doc.text("Identity"), "one\n\ntwo");
  // Headings in block quotes and list items are text, not sections.
  assert!(parse_beauvoir("> ## Identity\n\n- ## Boundaries\n").sections.is_empty());
}

mod soup {
  use super::*;
  use proptest::prelude::*;

  const TOKENS: &[&str] = &[
    "# ",
    "## ",
    "### ",
    "#### ",
    "\n",
    "\r\n",
    "\n\n",
    "---",
    "===",
    "- ",
    "* ",
    "1. ",
    "2) ",
    "> ",
    "```",
    "~~~",
    "**",
    "__",
    "Identity",
    "Core Principles (Why)",
    "What I Won’t Do",
    "Always",
    "Never:",
    "Boundaries",
    "Tone & Voice",
    "x",
    "é",
    "🧭",
    "\u{feff}",
    "|a|b|",
    "(",
    ")",
    " — ",
    ":",
    "    ",
    "\t",
    "<!--",
    "-->",
    "[x]: /y",
  ];

  proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
    /// Any soup of Markdown pieces: no panic, deterministic, bounded, each known section once.
    #[test]
    fn any_token_soup_renders(picks in proptest::collection::vec(0..TOKENS.len(), 0..80)) {
      let text: String = picks.iter().map(|i| TOKENS[*i]).collect();
      let soul = render_soul(&parse_beauvoir(&text), "00");
      prop_assert_eq!(&soul, &render_soul(&parse_beauvoir(&text), "00"));
      prop_assert!(soul.text.len() <= 2 * text.len() + 1024);
      for (i, s) in soul.sections.iter().enumerate() {
        prop_assert!(SECTIONS.contains(&s.as_str()) && !soul.sections[..i].contains(s));
      }
    }
  }
}

#[test]
fn numbering_is_not_part_of_a_name() {
  for (title, name) in [
    ("1. Understand Before Acting", "Understand Before Acting"),
    ("2) Understand", "Understand"),
    ("3 - Understand", "Understand"),
    ("(4) Understand", "Understand"),
    ("IV. Understand", "Understand"),
    ("ii) Understand", "Understand"),
    ("10: Understand", "Understand"),
    ("2026 Goals", "2026 Goals"),
    ("Ivy League", "Ivy League"),
    ("1.", "1."),
  ] {
    let doc = parse_beauvoir(&format!("## Principles\n\n### {title}\n\ntext\n"));
    assert_eq!(doc.principles[0].name.as_deref(), Some(name), "{title}");
  }
  let doc = parse_beauvoir("# II. Identity\n\nme\n\n# III) Core Values\n\n- care\n");
  assert_eq!(doc.sections, vec!["Identity", "Core Principles"]);
}
