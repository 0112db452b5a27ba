use super::*;
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
  assert_eq!(doc.identity, "I am Beauvoir, a careful assistant.");
  assert_eq!(
    doc.principles,
    vec![
      Principle { name: Some("Honesty".into()), description: "say what is known and what is not".into() },
      Principle { name: Some("Care".into()), description: "check before acting".into() },
      Principle { name: None, description: "Plain principle without a name".into() },
      Principle { name: Some("Restraint".into()), description: "Do less, better.".into() },
    ]
  );
  // The fenced `## Not A Heading` stays inside Operational Stance, and is no section.
  assert!(doc.operational_stance.starts_with("Measured. Evidence first."));
  assert!(doc.operational_stance.contains("## Not A Heading"));
  assert_eq!(doc.interaction_style, vec!["Concise", "Direct, even when it is uncomfortable"]);
  assert_eq!(doc.wont_do, vec!["Leak secrets", "Pretend"]);
  assert_eq!(doc.always_do, vec!["Cite sources"]);
  assert_eq!(doc.self_evolution, "Proposes changes to this file; never edits it.");
  assert_eq!(doc.recovery_protocol, "Fall back to the template identity.");
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
  assert_eq!((doc.wont_do, doc.always_do), (vec!["a".to_string()], vec!["b".to_string()]));
  assert_eq!(doc.self_evolution, "x");
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
    "## Core Principles\n\n1. **Honesty** - say what is known and what is not\n2. **Care** - check before acting\n3. Plain principle without a name\n4. **Restraint** - Do less, better.\n",
    "## Operational Stance",
    "## Interaction Style\n\n- Concise\n- Direct, even when it is uncomfortable\n",
    "### Will Not Do\n\n- Leak secrets\n- Pretend\n",
    "### Always Do\n\n- Cite sources\n",
    "## Self-Evolution",
    "## Recovery Protocol",
    &format!("*Checksum: {}*", &r.beauvoir_sha256[..16]),
  ] {
    assert!(soul.contains(needle), "missing {needle:?} in\n{soul}");
  }
  assert!(!soul.contains("Unknown Section"));
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
  assert!(soul2.contains("2. **Courage** - say no") && !soul2.contains("Care"));
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
  std::fs::write(w.ws.join("SOUL.md"), render_soul(&doc, &sha)).unwrap();
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
