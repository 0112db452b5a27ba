// SOUL.md generated from identity documents as users write them (issue 28, item 2): the
// original framework's layout (`## Core Principles (Why I Behave This Way)`, `### N. Title`
// principles, `### What I Won't Do`, a verification protocol between the boundary lists) and a
// `## Core Behaviors` bullet layout, through `generateSoul` and the real `loa identity`.
// Expectations are read off the fixtures line by line, not from the parser under test.
import test from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { core, root, tempDir, WATCHDOG_MS } from './helpers.mjs'

const ORIGINAL = readFileSync(join(root, 'testdata', 'identity', 'BEAUVOIR.original-layout.md'), 'utf8')
const BEHAVIORS = readFileSync(join(root, 'testdata', 'identity', 'BEAUVOIR.core-behaviors.md'), 'utf8')
const KNOWN = ['Identity', 'Core Principles', 'Operational Stance', 'Interaction Style', 'Boundaries', 'Self-Evolution', 'Recovery Protocol']

function workspace(t, beauvoir) {
  const ws = tempDir(t, 'loa-identity-')
  mkdirSync(join(ws, 'grimoires', 'loa'), { recursive: true })
  writeFileSync(join(ws, 'grimoires', 'loa', 'BEAUVOIR.md'), beauvoir)
  return ws
}

/** The `## ` headings of SOUL.md outside fences: the sections it actually carries. */
function soulSections(soul) {
  let fenced = false
  const out = []
  for (const line of soul.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced
    else if (!fenced && line.startsWith('## ')) out.push(line.slice(3))
  }
  return out
}

/** Lines after the heading line `from` up to the next heading of `level` or higher. */
function linesUnder(text, from, level) {
  const lines = text.split('\n')
  const start = lines.indexOf(from)
  assert.ok(start >= 0, from)
  const out = []
  for (const line of lines.slice(start + 1)) {
    const m = /^(#+) /.exec(line)
    if (m && m[1].length <= level) break
    out.push(line)
  }
  return out
}

function checkOriginalLayout(soul, report) {
  const lines = new Set(soul.split('\n'))
  const principles = ORIGINAL.split('\n').filter((l) => /^### \d+\. /.test(l))
  assert.equal(principles.length, 6)
  for (const p of principles) {
    assert.ok(lines.has(p), `principle ${p} missing`)
    const body = linesUnder(ORIGINAL, p, 3).filter((l) => l.trim() && l !== '---')
    assert.ok(body.some((l) => l.startsWith('**In practice**:')), p)
    for (const line of body) assert.ok(lines.has(line), `${JSON.stringify(line)} of ${p} missing`)
  }
  for (const list of ["### What I Won't Do", '### What I Always Do']) {
    const items = linesUnder(ORIGINAL, list, 3).filter((l) => /^\d+\. \*\*/.test(l))
    assert.equal(items.length, 4, list)
    assert.ok(lines.has(list), list)
    for (const item of items) assert.ok(lines.has(item), `${item} missing`)
  }
  const steps = ORIGINAL.split('\n').filter((l) => l.startsWith('#### Step '))
  assert.equal(steps.length, 4)
  const boundaries = soul.slice(soul.indexOf('\n## Boundaries\n'), soul.indexOf('\n## Self-Evolution\n'))
  for (const step of steps) assert.ok(boundaries.includes(`\n${step}\n`), `${step} missing under Boundaries`)
  for (const line of linesUnder(ORIGINAL, '## Boundaries', 2)) {
    if (line.trim() && line !== '---') assert.ok(boundaries.split('\n').includes(line), `${JSON.stringify(line)} missing under Boundaries`)
  }
  for (const sub of ['### Concise', '### Opinionated', '### Transparent', '### Resourceful']) assert.ok(lines.has(sub), sub)
  // Every line but the title, the separators and the section headings (written canonically).
  for (const line of ORIGINAL.split('\n').slice(1)) {
    if (line.trim() && line !== '---' && !line.startsWith('## ')) assert.ok(lines.has(line), `${JSON.stringify(line)} missing`)
  }
  assert.deepEqual(report.sections, KNOWN)
  assert.deepEqual(soulSections(soul), report.sections)
  assert.deepEqual(report.missingSections, [])
  assert.deepEqual(report.unrecognizedSections, [])
}

test("generateSoul carries every principle, boundary and protocol step of the original's layout", async (t) => {
  const ws = workspace(t, ORIGINAL)
  const report = await core.generateSoul({ workspaceDir: ws })
  assert.equal(report.status, 'generated')
  checkOriginalLayout(readFileSync(join(ws, 'SOUL.md'), 'utf8'), report)
  assert.equal(core.generateSoulSync({ workspaceDir: ws }).status, 'up_to_date')
})

test("loa identity --json on the original's layout: SOUL.md whole, the report is what it carries", (t) => {
  const ws = workspace(t, ORIGINAL)
  const r = spawnSync(process.execPath, [join(root, 'bin', 'loa'), 'identity', '--workspace', ws, '--json'], { encoding: 'utf8', timeout: WATCHDOG_MS })
  assert.equal(r.status, 0, r.stderr)
  checkOriginalLayout(readFileSync(join(ws, 'SOUL.md'), 'utf8'), JSON.parse(r.stdout))
})

test('a Core Behaviors bullet layout, a Never: section and the text under the title reach SOUL.md', async (t) => {
  const ws = workspace(t, BEHAVIORS)
  const report = await core.generateSoul({ workspaceDir: ws })
  const soul = readFileSync(join(ws, 'SOUL.md'), 'utf8')
  const lines = new Set(soul.split('\n'))
  for (const line of BEHAVIORS.split('\n').slice(1)) {
    if (line.trim() && !line.startsWith('## ')) assert.ok(lines.has(line), `${JSON.stringify(line)} missing from\n${soul}`)
  }
  assert.deepEqual(report.sections, ['Identity', 'Core Principles', 'Boundaries'])
  assert.deepEqual(soulSections(soul), report.sections)
})

test('a section is reported present only when SOUL.md carries it; unknown sections are carried and named', async (t) => {
  // The original's bug: Boundaries written without the exact list headings was reported found
  // while SOUL.md held nothing of it; an empty Core Principles was reported found too.
  const ws = workspace(t, '## Identity\n\nme\n\n## Boundaries\n\n- never guess\n\n## Core Principles\n\n## Favourite Tools\n\n- a hammer\n')
  const report = await core.generateSoul({ workspaceDir: ws })
  const soul = readFileSync(join(ws, 'SOUL.md'), 'utf8')
  assert.match(soul, /\n## Boundaries\n\n- never guess\n/)
  assert.match(soul, /\n## Favourite Tools\n\n- a hammer\n/)
  assert.deepEqual(report.sections, ['Identity', 'Boundaries'])
  assert.ok(report.missingSections.includes('Core Principles'))
  assert.deepEqual(report.unrecognizedSections, ['Favourite Tools'])
  assert.deepEqual(soulSections(soul), [...report.sections, ...report.unrecognizedSections])
  // The command line says both, so a misspelt heading is seen.
  const r = spawnSync(process.execPath, [join(root, 'bin', 'loa'), 'identity', '--workspace', ws], { encoding: 'utf8', timeout: WATCHDOG_MS })
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /^SOUL\.md is up to date\n/)
  assert.match(r.stdout, /lacks: Core Principles, Operational Stance/)
  assert.match(r.stdout, /carried as written \(not a known section\): Favourite Tools\n/)
})

test('a SOUL.md the previous version generated (and recorded) is regenerated, not reported as hand-edited', async (t) => {
  // The bytes and the record loa-core wrote from this fixture before issue 28 (commit 6b229cf):
  // no Core Principles, no Boundaries, though its report listed Boundaries.
  const previous = join(root, 'testdata', 'identity', 'previous-version')
  const ws = workspace(t, ORIGINAL)
  const oldSoul = readFileSync(join(previous, 'SOUL.md'), 'utf8')
  writeFileSync(join(ws, 'SOUL.md'), oldSoul)
  mkdirSync(join(ws, '.loa', 'identity'), { recursive: true })
  writeFileSync(join(ws, '.loa', 'identity', 'soul.json'), readFileSync(join(previous, 'soul.json')))
  assert.equal(core.generateSoulSync({ workspaceDir: ws, checkOnly: true }).status, 'stale')
  assert.equal(readFileSync(join(ws, 'SOUL.md'), 'utf8'), oldSoul, 'check only writes nothing')
  const report = await core.generateSoul({ workspaceDir: ws })
  assert.equal(report.status, 'generated')
  checkOriginalLayout(readFileSync(join(ws, 'SOUL.md'), 'utf8'), report)
  // A hand edit of the new SOUL.md is still seen as one.
  writeFileSync(join(ws, 'SOUL.md'), oldSoul)
  assert.equal(core.generateSoulSync({ workspaceDir: ws }).status, 'hand_edited')
})
