// `loa notes|recall|grounding-check|checkpoint|beads|resolve`: the real CLI on a real workspace.
import test from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { root, tempDir, WATCHDOG_MS } from './helpers.mjs'

const LOA = join(root, 'bin', 'loa')
const AT = '2026-01-15T14:30:00.000Z'

function loa(ws, args, input) {
  const r = spawnSync(process.execPath, [LOA, ...args, '--workspace', ws], { encoding: 'utf8', input, timeout: WATCHDOG_MS })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

function workspace(t) {
  const ws = tempDir(t, 'loa-cli-ledger-')
  mkdirSync(join(ws, 'src'))
  writeFileSync(join(ws, 'src', 'a.ts'), 'export const limit = 100\nexport const window = 60\n')
  return ws
}

const checkpointInput = {
  decisions: [{ decision: 'Rate limit the API at 100 requests per minute', rationale: 'Protects the database', evidence: [{ identifier: '${PROJECT_ROOT}/src/a.ts:1', quote: 'export const limit = 100' }], testScenarios: ['101st request -> 429', 'new window -> allowed', 'burst -> queued'] }],
  activeContext: [{ key: 'Reasoning State', value: 'tuning the limiter' }],
  identifiers: [{ identifier: '${PROJECT_ROOT}/src/a.ts:1-2', purpose: 'limits' }],
  pendingQuestions: [{ text: 'Per-tenant limits?' }],
}

test('loa checkpoint persists the session; recall, notes, beads and resolve read it back', (t) => {
  const ws = workspace(t)
  let r = loa(ws, ['checkpoint', '--input', '-', '--session', 'cli-s1', '--bead', 'bd-9', '--at', AT, '--json'], JSON.stringify(checkpointInput))
  assert.equal(r.status, 0, r.stderr + r.stdout)
  const report = JSON.parse(r.stdout)
  assert.equal(report.exitCode, 0)
  assert.equal(report.eddVerified, true)

  r = loa(ws, ['recall'])
  assert.equal(r.status, 0, r.stderr)
  assert.ok(r.stdout.startsWith('## Session Continuity'), r.stdout)
  r = loa(ws, ['recall', '--level', '2', 'rate', 'limit', '--json'])
  assert.equal(r.status, 0, r.stderr)
  assert.equal(JSON.parse(r.stdout).hits[0].entry.decision, 'Rate limit the API at 100 requests per minute')
  r = loa(ws, ['recall', '--level', '3'])
  assert.equal(r.stdout, readFileSync(join(ws, 'grimoires/loa/NOTES.md'), 'utf8'))

  r = loa(ws, ['notes', 'show', '--json'])
  const notes = JSON.parse(r.stdout)
  assert.deepEqual(notes.pendingQuestions, [{ text: 'Per-tenant limits?', done: false }])
  assert.equal(notes.activeContext.find((c) => c.key === 'Current Bead').value, 'bd-9')
  r = loa(ws, ['notes', 'edit', '--answered', 'Per-tenant limits?', '--context', 'Phase=review', '--identifier', '${PROJECT_ROOT}/../x.ts:1=escape'])
  assert.equal(r.status, 1, 'a refused identifier is a problem found')
  assert.match(r.stdout, /E_PATH_OUTSIDE_ROOT/)
  assert.doesNotMatch(r.stdout, /x\.ts/)
  const after = JSON.parse(loa(ws, ['notes', 'show', '--json']).stdout)
  assert.deepEqual(after.pendingQuestions, [{ text: 'Per-tenant limits?', done: true }])
  assert.equal(after.activeContext.find((c) => c.key === 'Phase').value, 'review')

  r = loa(ws, ['beads', 'list', '--json'])
  const [bead] = JSON.parse(r.stdout)
  assert.equal(bead.id, 'bd-9')
  assert.equal(bead.handoffs[0].sessionId, 'cli-s1')
  r = loa(ws, ['beads', 'add', 'bd-9', '--next-step', 'ship it', '--decision', 'Keep the window at 60 seconds'])
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /bd-9: 2 decision\(s\), 3 test scenario\(s\), 1 next step\(s\)/)

  r = loa(ws, ['resolve', '${PROJECT_ROOT}/src/a.ts:2', '--json'])
  assert.deepEqual(JSON.parse(r.stdout).lines, ['export const window = 60'])
  r = loa(ws, ['resolve', '${PROJECT_ROOT}/src/../../etc/passwd:1'])
  assert.equal(r.status, 2)
  assert.match(r.stderr, /^loa: E_PATH_OUTSIDE_ROOT: /)
})

test('loa grounding-check and loa checkpoint: 0 permit, 1 block, 2 error (a malformed line, an empty file)', (t) => {
  const ws = workspace(t)
  const dir = join(ws, 'grimoires/loa/a2a/trajectory')
  mkdirSync(dir, { recursive: true })
  const file = join(dir, 'main-2026-01-15.jsonl')
  const cite = (claim, grounding, evidence) => JSON.stringify({ v: 1, ts: AT, agent: 'main', phase: 'cite', claim, grounding, ...(evidence ? { evidence } : {}) }) + '\n'
  writeFileSync(file, cite('limit is 100', 'citation', { identifier: '${PROJECT_ROOT}/src/a.ts:1', quote: 'limit = 100' }))
  let r = loa(ws, ['grounding-check', '--at', AT])
  assert.equal(r.status, 0, r.stdout + r.stderr)
  assert.match(r.stdout, /^grounding PASS: ratio 1\.00/)

  writeFileSync(file, readFileSync(file, 'utf8') + cite('the cache is warm', 'none'))
  r = loa(ws, ['grounding-check', '--at', AT, '--json'])
  assert.equal(r.status, 1)
  assert.equal(JSON.parse(r.stdout).status, 'fail')
  r = loa(ws, ['checkpoint', '--at', AT])
  assert.equal(r.status, 1, r.stdout + r.stderr)
  assert.match(r.stdout, /^checkpoint BLOCK \(exit 1\)/)

  writeFileSync(file, readFileSync(file, 'utf8') + '{"v":1,\n')
  r = loa(ws, ['grounding-check', '--at', AT])
  assert.equal(r.status, 2)
  assert.match(r.stdout, /grounding ERROR/)
  r = loa(ws, ['checkpoint', '--at', AT, '--json'])
  assert.equal(r.status, 2)
  assert.equal(JSON.parse(r.stdout).exitCode, 2)

  writeFileSync(file, '')
  r = loa(ws, ['grounding-check', '--at', AT])
  assert.equal(r.status, 2)
})
