// Issue 28, item 3: NOTES.md as the seed writes it (testdata/seeds/examples/NOTES.md, seed 000
// §5.1), read and edited by the real CLI on a copy in a temporary workspace.
import test from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { core, root, tempDir, WATCHDOG_MS } from './helpers.mjs'

const LOA = join(root, 'bin', 'loa')
const SEED = readFileSync(join(root, 'testdata', 'seeds', 'examples', 'NOTES.md'), 'utf8')

function loa(ws, args) {
  const r = spawnSync(process.execPath, [LOA, ...args, '--workspace', ws], { encoding: 'utf8', timeout: WATCHDOG_MS })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

function workspace(t, text = SEED) {
  const ws = tempDir(t, 'loa-notes-seed-')
  mkdirSync(join(ws, 'grimoires', 'loa'), { recursive: true })
  writeFileSync(join(ws, 'grimoires', 'loa', 'NOTES.md'), text)
  mkdirSync(join(ws, 'src', 'auth'), { recursive: true })
  const lines = Array.from({ length: 80 }, (_, i) => `// line ${i + 1}`).join('\n')
  writeFileSync(join(ws, 'src', 'auth', 'jwt.ts'), `${lines}\n`)
  writeFileSync(join(ws, 'src', 'auth', 'refresh.ts'), `${lines}\n`)
  writeFileSync(join(ws, 'src', 'auth', 'session.ts'), `${lines}\n`)
  return ws
}

const notesOf = (ws) => readFileSync(join(ws, 'grimoires', 'loa', 'NOTES.md'), 'utf8')

/** The lines of `after` that differ from `before` (same number of lines expected). */
function changedLines(before, after) {
  const a = before.split('\n')
  const b = after.split('\n')
  assert.equal(b.length, a.length, `line count changed:\n${after}`)
  return a.flatMap((line, i) => (line === b[i] ? [] : [[line, b[i]]]))
}

test('loa notes show --json reads every section of the seed NOTES.md', (t) => {
  const ws = workspace(t)
  const r = loa(ws, ['notes', 'show', '--json'])
  assert.equal(r.status, 0, r.stderr)
  const notes = JSON.parse(r.stdout)
  assert.deepEqual(notes.activeContext, [
    { key: 'Current Bead', value: 'bd-x7y8 (Implementing JWT refresh)' },
    { key: 'Last Checkpoint', value: '2024-01-15T14:30:00Z' },
    { key: 'Reasoning State', value: 'Validating token expiry edge cases' },
  ])
  assert.deepEqual(notes.identifiers, [
    { identifier: '${PROJECT_ROOT}/src/auth/jwt.ts:45-67', purpose: 'Token validation logic', lastVerified: '14:25:00Z' },
    { identifier: '${PROJECT_ROOT}/src/auth/refresh.ts:12-34', purpose: 'Refresh flow', lastVerified: '14:28:00Z' },
  ])
  assert.deepEqual(notes.pendingQuestions, [{ text: 'Should grace period be configurable per-client?', done: false }])
  assert.equal(notes.decisions.length, 1)
  const d = notes.decisions[0]
  assert.equal(d.title, 'Token Expiry Handling')
  assert.equal(d.timestamp, '2024-01-15T14:30:00.000Z')
  assert.equal(d.decision, 'Use sliding window expiration with 15-minute grace period')
  assert.equal(d.rationale, 'Balances security (short expiry) with UX (no mid-session logouts)')
  assert.deepEqual(d.evidence, ['`export function isTokenExpired(token: Token, graceMs = 900000)` [${PROJECT_ROOT}/src/auth/jwt.ts:52]'])
  assert.deepEqual(d.testScenarios, [
    'Token expires exactly at boundary -> grace period applies',
    'Token expires beyond grace -> forced refresh',
    'Refresh token also expired -> full re-authentication',
  ])
  // Reading writes nothing.
  assert.equal(notesOf(ws), SEED)
})

test('loa notes edit --context replaces the seed entry in place and keeps every other byte', (t) => {
  const ws = workspace(t)
  const r = loa(ws, ['notes', 'edit', '--context', 'Current Bead=bd-a1b2'])
  assert.equal(r.status, 0, r.stderr + r.stdout)
  const after = notesOf(ws)
  assert.deepEqual(changedLines(SEED, after), [['- **Current Bead**: bd-x7y8 (Implementing JWT refresh)', '- **Current Bead**: bd-a1b2']])
  assert.equal(after.match(/Current Bead/g).length, 1)
  assert.doesNotMatch(after, /loa:begin/)
  const notes = JSON.parse(loa(ws, ['notes', 'show', '--json']).stdout)
  assert.deepEqual(notes.activeContext.map((c) => [c.key, c.value]), [
    ['Current Bead', 'bd-a1b2'],
    ['Last Checkpoint', '2024-01-15T14:30:00Z'],
    ['Reasoning State', 'Validating token expiry edge cases'],
  ])
  // The same edit again changes nothing.
  const again = loa(ws, ['notes', 'edit', '--context', 'Current Bead=bd-a1b2'])
  assert.equal(again.status, 0, again.stderr)
  assert.equal(notesOf(ws), after)
})

test('loa notes edit on the seed: questions, identifiers and new keys in the section’s own style', (t) => {
  const ws = workspace(t)
  let r = loa(ws, ['notes', 'edit', '--answered', 'Should grace period be configurable per-client?'])
  assert.equal(r.status, 0, r.stderr + r.stdout)
  assert.deepEqual(changedLines(SEED, notesOf(ws)), [['- [ ] Should grace period be configurable per-client?', '- [x] Should grace period be configurable per-client?']])

  r = loa(ws, ['notes', 'edit', '--identifier', '${PROJECT_ROOT}/src/auth/refresh.ts:12-34=Refresh flow, rotated'])
  assert.equal(r.status, 0, r.stderr + r.stdout)
  const changed = changedLines(SEED, notesOf(ws))
  assert.equal(changed.length, 2)
  assert.match(changed[0][1], /^\| \$\{PROJECT_ROOT\}\/src\/auth\/refresh\.ts:12-34 \| Refresh flow, rotated \| \d{4}-\d\d-\d\dT[\d:.]+Z \|$/)

  // New entries go at the end of their section, in its style; nothing else moves.
  const before = notesOf(ws)
  r = loa(ws, ['notes', 'edit', '--context', 'Phase=review', '--question', 'Rotate refresh tokens?', '--identifier', '${PROJECT_ROOT}/src/auth/session.ts:1-3=Session store'])
  assert.equal(r.status, 0, r.stderr + r.stdout)
  const after = notesOf(ws)
  assert.doesNotMatch(after, /loa:begin/)
  const added = after.split('\n').filter((l) => !before.split('\n').includes(l))
  assert.equal(added.length, 3, after)
  assert.ok(after.includes('- **Reasoning State**: Validating token expiry edge cases\n- **Phase**: review\n'), after)
  assert.ok(after.includes('- [x] Should grace period be configurable per-client?\n- [ ] Rotate refresh tokens?\n'), after)
  assert.match(after, /\| Refresh flow, rotated \| [^\n]+ \|\n\| \$\{PROJECT_ROOT\}\/src\/auth\/session\.ts:1-3 \| Session store \| [^|\n]+ \|\n\n### Decision Log/)
  // Removing the added lines gives back the file before the edit.
  assert.equal(after.split('\n').filter((l) => !added.includes(l)).join('\n'), before)
  const notes = JSON.parse(loa(ws, ['notes', 'show', '--json']).stdout)
  assert.equal(notes.activeContext.length, 4)
  assert.equal(notes.identifiers.length, 3)
  assert.deepEqual(notes.pendingQuestions, [
    { text: 'Should grace period be configurable per-client?', done: true },
    { text: 'Rotate refresh tokens?', done: false },
  ])
})

test('a CRLF seed NOTES.md keeps its line ends through an edit', (t) => {
  const crlf = SEED.replace(/\n/g, '\r\n')
  const ws = workspace(t, crlf)
  const r = loa(ws, ['notes', 'edit', '--context', 'Current Bead=bd-a1b2', '--context', 'Phase=review'])
  assert.equal(r.status, 0, r.stderr + r.stdout)
  const after = notesOf(ws)
  assert.equal(after.replace(/\r\n/g, '').includes('\n'), false, 'no bare LF')
  assert.equal(after, crlf.replace('- **Current Bead**: bd-x7y8 (Implementing JWT refresh)', '- **Current Bead**: bd-a1b2').replace('Validating token expiry edge cases\r\n', 'Validating token expiry edge cases\r\n- **Phase**: review\r\n'))
  const notes = JSON.parse(loa(ws, ['notes', 'show', '--json']).stdout)
  assert.equal(notes.activeContext.length, 4)
  assert.equal(notes.identifiers.length, 2)
  assert.equal(notes.pendingQuestions.length, 1)
})

test('a seed entry and a marked-region entry for one key: the region wins, one is shown, an edit leaves one', (t) => {
  // What `loa notes edit` wrote into a seed file before it read the seed's sections.
  const legacy = SEED.replace(
    '- **Reasoning State**: Validating token expiry edge cases\n',
    '- **Reasoning State**: Validating token expiry edge cases\n\n<!-- loa:begin active-context -->\n- **Current Bead**: bd-a1b2\n<!-- loa:end active-context -->\n',
  )
  const ws = workspace(t, legacy)
  let notes = JSON.parse(loa(ws, ['notes', 'show', '--json']).stdout)
  assert.deepEqual(notes.activeContext.filter((c) => c.key === 'Current Bead'), [{ key: 'Current Bead', value: 'bd-a1b2' }])
  assert.equal(notes.activeContext.length, 3)
  const r = loa(ws, ['notes', 'edit', '--context', 'Current Bead=bd-c3d4'])
  assert.equal(r.status, 0, r.stderr + r.stdout)
  const after = notesOf(ws)
  assert.equal(after.match(/Current Bead/g).length, 1, after)
  assert.ok(after.includes('- **Current Bead**: bd-c3d4\n- **Last Checkpoint**'), after)
  notes = JSON.parse(loa(ws, ['notes', 'show', '--json']).stdout)
  assert.deepEqual(notes.activeContext[0], { key: 'Current Bead', value: 'bd-c3d4' })
})

test('the JS API reads and edits the seed NOTES.md the same way (readNotes, editNotes)', (t) => {
  const ws = workspace(t)
  const ledger = core.Ledger.open({ workspaceDir: ws })
  const read = ledger.readNotes()
  assert.equal(read.activeContext.length, 3)
  assert.equal(read.identifiers.length, 2)
  assert.equal(read.pendingQuestions.length, 1)
  assert.equal(read.decisions[0].testScenarios.length, 3)
  const done = ledger.editNotes({ activeContext: [{ key: 'reasoning state', value: 'Refresh rotation' }], pendingQuestions: [{ text: 'Should grace period be configurable per-client?' }] })
  assert.deepEqual(done, { changed: true, refused: [] })
  assert.deepEqual(changedLines(SEED, notesOf(ws)), [['- **Reasoning State**: Validating token expiry edge cases', '- **Reasoning State**: Refresh rotation']])
})

test('loa checkpoint on the seed NOTES.md sets Current Bead and Last Checkpoint in place', (t) => {
  const ws = workspace(t)
  const input = JSON.stringify({ activeContext: [{ key: 'Reasoning State', value: 'Rotation done' }] })
  const r = spawnSync(process.execPath, [LOA, 'checkpoint', '--input', '-', '--session', 'seed-s1', '--bead', 'bd-a1b2', '--at', '2026-01-15T14:30:00.000Z', '--workspace', ws], { encoding: 'utf8', input, timeout: WATCHDOG_MS })
  assert.equal(r.status, 0, r.stderr + r.stdout)
  const after = notesOf(ws)
  assert.deepEqual(changedLines(SEED, after), [
    ['- **Current Bead**: bd-x7y8 (Implementing JWT refresh)', '- **Current Bead**: bd-a1b2'],
    ['- **Last Checkpoint**: 2024-01-15T14:30:00Z', '- **Last Checkpoint**: 2026-01-15T14:30:00.000Z'],
    ['- **Reasoning State**: Validating token expiry edge cases', '- **Reasoning State**: Rotation done'],
  ])
})

// NOTES.md in the layouts the original framework's install and self-heal scripts write
// (testdata/notes/, written for this project after those layouts).
const LAYOUT = (name) => readFileSync(join(root, 'testdata', 'notes', name), 'utf8')

test('loa notes show --json reads the install layout: decision table, session log, sub-goals', (t) => {
  const text = LAYOUT('install-layout.md')
  const ws = workspace(t, text)
  const r = loa(ws, ['notes', 'show', '--json'])
  assert.equal(r.status, 0, r.stderr)
  const notes = JSON.parse(r.stdout)
  assert.deepEqual(notes.decisions.map((d) => [d.timestamp, d.decision, d.rationale]), [
    ['2026-02-02T00:00:00.000Z', 'Keep CLAUDE.md as symlink to AGENTS.md', 'Project uses AGENTS.md for all agent instructions'],
    ['2026-02-02T00:00:00.000Z', 'R2 + Git dual persistence', 'Hot state in R2, cold backup to git for durability'],
  ])
  assert.deepEqual(notes.sessionLog, [
    { timestamp: '2026-02-02', agent: 'claude-opus-4.5', summary: 'Updated Loa v1.7.2 -> v1.16.0, resolved merge conflicts', extra: [] },
  ])
  assert.deepEqual(notes.subGoals, ['**PRD complete**: Loa Cloud Stack v0.2.0', 'Next: `/implement sprint-1` to begin Foundation sprint'])
  assert.deepEqual(notes.technicalDebt, [])
  assert.deepEqual(notes.blockers, [])
  assert.equal(notesOf(ws), text)
})

test('loa notes show --json reads decision blocks and dated bullets with their other keys', (t) => {
  let notes = JSON.parse(loa(workspace(t, LAYOUT('decision-blocks.md')), ['notes', 'show', '--json']).stdout)
  assert.deepEqual(notes.decisions.map((d) => d.decision), ['Follow the plugin registry pattern for the indexer', 'Keep the index on local disk'])
  assert.deepEqual(notes.decisions[0].extra, [
    { name: 'Pattern', value: 'registry keyed by capability name' },
    { name: 'Source', value: 'docs/integrations.md:72-94' },
  ])
  assert.equal(notes.decisions[1].agent, 'platform-agent')
  assert.equal(notes.technicalDebt.length, 2)
  assert.deepEqual(notes.blockers, ["Waiting on the storage team's quota increase"])
  assert.deepEqual(notes.sessionLog, [])
  notes = JSON.parse(loa(workspace(t, LAYOUT('dated-bullets.md')), ['notes', 'show', '--json']).stdout)
  assert.deepEqual(notes.decisions.map((d) => [d.timestamp, d.decision]), [
    ['2026-04-12T00:00:00.000Z', 'Export as JSON Lines, one record per line, so a partial file is still readable'],
    ['2026-04-13T00:00:00.000Z', 'Drop the legacy CSV exporter'],
  ])
  assert.deepEqual(notes.sessionLog[1].extra, [{ name: 'Branch', value: 'feat/export' }])
})

test('a decision checkpointed into a Decision Log table is a row of that table, once', (t) => {
  const text = LAYOUT('install-layout.md')
  const ws = workspace(t, text)
  const input = JSON.stringify({ decisions: [{ decision: 'Serve | reads from the\nreplica', rationale: 'The primary is saturated' }] })
  const run = () => spawnSync(process.execPath, [LOA, 'checkpoint', '--input', '-', '--session', 'real-s1', '--bead', 'bd-a1b2', '--at', '2026-03-01T09:30:00.000Z', '--workspace', ws], { encoding: 'utf8', input, timeout: WATCHDOG_MS })
  let r = run()
  assert.equal(r.status, 0, r.stderr + r.stdout)
  const after = notesOf(ws)
  const log = after.slice(after.indexOf('## Decision Log'))
  assert.match(log, /\| Hot state in R2, cold backup to git for durability \|\n\| 2026-03-01 \| Serve \\\| reads from the replica \| The primary is saturated <!-- loa:decision [0-9a-f]{12} --> \|\n/)
  assert.doesNotMatch(after, /####|loa:begin decisions/)
  // Every line the file had is still there, in order.
  let at = 0
  for (const line of text.split('\n')) {
    const i = after.indexOf(line, at)
    assert.ok(i >= 0, `lost ${JSON.stringify(line)}`)
    at = i + line.length
  }
  const notes = JSON.parse(loa(ws, ['notes', 'show', '--json']).stdout)
  assert.equal(notes.decisions.length, 3)
  assert.equal(notes.decisions[2].decision, 'Serve | reads from the replica')
  assert.equal(notes.decisions[2].rationale, 'The primary is saturated')
  // The same checkpoint again adds no second row.
  r = run()
  assert.equal(r.status, 0, r.stderr + r.stdout)
  assert.equal(notesOf(ws).match(/Serve \\\| reads/g).length, 1)
})
