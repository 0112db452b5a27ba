// The Lossless Ledger from JavaScript: a real workspace, real files (docs/ledger.md).
import test from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync, readFileSync, symlinkSync, rmSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { core, tempDir } from './helpers.mjs'

const AT = '2026-01-15T14:30:00.000Z'
const NOTES = 'grimoires/loa/NOTES.md'
const TRAJECTORY = 'grimoires/loa/a2a/trajectory'

function workspace(t) {
  const ws = tempDir(t, 'loa-ledger-')
  mkdirSync(join(ws, 'src'))
  writeFileSync(join(ws, 'src', 'jwt.ts'), 'export function isTokenExpired(token, graceMs = 900000) {\n  return Date.now() > token.exp + graceMs\n}\n')
  return ws
}

const decision = (text = 'Use sliding window expiration with a 15-minute grace period') => ({
  decision: text,
  rationale: 'Balances security with UX',
  evidence: [{ identifier: '${PROJECT_ROOT}/src/jwt.ts:1', quote: 'export function isTokenExpired(token, graceMs = 900000)' }],
  testScenarios: ['Token expires at the boundary -> grace applies', 'Token past grace -> rejected', 'No exp -> rejected'],
})

test('checkpoint persists decisions, context, questions, identifiers, bead and handoff; L1 and L2 bring them back', async (t) => {
  const ws = workspace(t)
  const ledger = core.Ledger.open({ workspaceDir: ws })
  assert.equal(ledger.workspaceDir, ws)
  const store = core.MemoryStore.open({ workspaceDir: ws, sessionId: 'sess-1' })
  t.after(() => store.close())
  const report = await ledger.checkpoint(
    {
      sessionId: 'sess-1',
      beadId: 'bd-x7y8',
      decisions: [decision()],
      activeContext: [{ key: 'Reasoning State', value: 'validating token expiry' }],
      identifiers: [
        { identifier: '${PROJECT_ROOT}/src/jwt.ts:1-3', purpose: 'Token validation' },
        { identifier: '${PROJECT_ROOT}/../outside.ts:1', purpose: 'escape' },
      ],
      pendingQuestions: [{ text: 'Should grace period be configurable per-client?' }],
      nextSteps: ['Make grace configurable'],
      at: AT,
    },
    store,
  )
  assert.equal(report.exitCode, 0, JSON.stringify(report.steps))
  assert.equal(report.grounding.status, 'pass')
  assert.equal(report.grounding.ratio, undefined)
  assert.equal(report.eddVerified, true)
  assert.deepEqual(report.steps.map((s) => s.step), [1, 2, 3, 4, 5, 6, 7])
  const identifiers = report.steps.find((s) => s.name === 'identifiers')
  assert.equal(identifiers.status, 'warn')
  assert.deepEqual(identifiers.messages, ['identifier not kept (E_PATH_OUTSIDE_ROOT)'])

  const notes = ledger.readNotes()
  assert.ok(notes.sessionContinuity.includes('validating token expiry'))
  assert.deepEqual(
    notes.activeContext.map((c) => c.key),
    ['Current Bead', 'Reasoning State', 'Last Checkpoint'],
  )
  assert.deepEqual(notes.identifiers.map((r) => r.identifier), ['${PROJECT_ROOT}/src/jwt.ts:1-3'])
  assert.deepEqual(notes.pendingQuestions, [{ text: 'Should grace period be configurable per-client?', done: false }])
  assert.equal(notes.decisions.length, 1)
  assert.equal(notes.decisions[0].rationale, 'Balances security with UX')
  assert.equal(notes.decisions[0].testScenarios.length, 3)

  const l1 = ledger.recallSync({ level: 1 })
  assert.equal(l1.found, true)
  // Within the default level1_tokens (250), and the view carries content, not markers.
  assert.ok(l1.tokens <= 250)
  assert.ok(l1.text.startsWith('## Session Continuity'))
  assert.ok(!l1.text.includes('<!--'), l1.text)
  assert.ok(l1.text.includes('**Decision**: Use sliding window expiration'), l1.text)
  const small = await ledger.recall({ level: 1, tokens: 10 })
  assert.ok(small.tokens <= 10 && small.truncated)
  const l2 = await ledger.recall({ level: 2, query: 'token expiry grace period', k: 3 })
  assert.equal(l2.hits.length, 1)
  assert.ok(l2.hits[0].score > 0 && l2.hits[0].score <= 1)
  assert.ok(l2.text.includes('sliding window'))
  assert.ok(!l2.text.includes('<!--'), 'a region marker is not part of a decision')
  const l3 = ledger.recallSync({ level: 3 })
  assert.equal(l3.text, readFileSync(join(ws, NOTES), 'utf8'))

  assert.deepEqual(ledger.listBeads(), ['bd-x7y8'])
  const bead = ledger.readBead('bd-x7y8')
  assert.equal(bead.decisions[0].evidence[0].path, '${PROJECT_ROOT}/src/jwt.ts')
  assert.equal(bead.handoffs[0].sessionId, 'sess-1')
  assert.deepEqual(bead.nextSteps, ['Make grace configurable'])
  assert.equal(bead.testScenarios.length, 3)

  const trajectory = ledger.readTrajectory({ at: AT })
  assert.deepEqual(trajectory.records.map((r) => r.record.phase), ['grounding_check', 'session_handoff'])
  const handoff = trajectory.records[1].record
  assert.equal(handoff.session_id, 'sess-1')
  assert.equal(handoff.next_session_ready, true)
  assert.equal(trajectory.damaged.length, 0)
})

test('checkpoint without a store opens the session store for its decisions', async (t) => {
  const ws = workspace(t)
  const ledger = core.Ledger.open({ workspaceDir: ws })
  const report = ledger.checkpointSync({ sessionId: 'cli-1', decisions: [decision('Deploy on Tuesdays only')], at: AT })
  assert.equal(report.exitCode, 0, JSON.stringify(report.steps))
  assert.equal(ledger.readNotes().decisions[0].decision, 'Deploy on Tuesdays only')
  // The store was closed again: the session can be opened now.
  core.MemoryStore.open({ workspaceDir: ws, sessionId: 'cli-1', lockTimeoutMs: 100 }).close()
})

test('grounding: cited claims pass, ungrounded ones block in strict mode, and a crash, an empty file and a malformed line are exit 2', async (t) => {
  const ws = workspace(t)
  const ledger = core.Ledger.open({ workspaceDir: ws })
  const record = ledger.cite({ claim: 'Tokens get a grace period', grounding: 'citation', evidence: { identifier: '${PROJECT_ROOT}/src/jwt.ts:1', quote: 'graceMs = 900000' }, at: AT })
  assert.equal(record.phase, 'cite')
  assert.equal(record.ts, AT)
  let r = await ledger.groundingCheck({ at: AT })
  assert.deepEqual([r.status, r.exitCode, r.totalClaims, r.groundedClaims, r.ratio], ['pass', 0, 1, 1, 1])

  ledger.cite({ claim: 'Refresh tokens rotate', grounding: 'none', at: AT })
  r = ledger.groundingCheckSync({ at: AT })
  assert.deepEqual([r.status, r.exitCode, r.ratio], ['fail', 1, 0.5])
  assert.equal(r.ungrounded[0].line, 2)
  const blocked = await ledger.checkpoint({ sessionId: 's', at: AT })
  assert.equal(blocked.exitCode, 1)

  const file = join(ws, TRAJECTORY, 'main-2026-01-15.jsonl')
  // A malformed line: an error, by line number, never skipped.
  writeFileSync(file, readFileSync(file, 'utf8') + '{"v":1,"phase":\n')
  r = ledger.groundingCheckSync({ at: AT })
  assert.deepEqual([r.status, r.exitCode], ['error', 2])
  // Two more lines came from the blocked checkpoint (its grounding_check and session_handoff).
  assert.deepEqual(r.errors, ['trajectory line 5: not JSON (column 15)'])
  const damaged = ledger.readTrajectory({ at: AT }).damaged
  assert.equal(damaged[0].line, 5)
  const refused = await ledger.checkpoint({ sessionId: 's', at: AT })
  assert.equal(refused.exitCode, 2)
  assert.equal(refused.steps.find((s) => s.name === 'session_handoff').status, 'error')

  // An empty file (truncation).
  writeFileSync(file, '')
  r = await ledger.groundingCheck({ at: AT })
  assert.deepEqual([r.status, r.exitCode], ['error', 2])

  // A "crash": the trajectory cannot be read at all (a FIFO in its place).
  rmSync(file)
  execFileSync('mkfifo', [file])
  r = ledger.groundingCheckSync({ at: AT })
  assert.deepEqual([r.status, r.exitCode], ['error', 2])

  // Zero claims is a defined pass.
  r = ledger.groundingCheckSync({ agent: 'other', at: AT })
  assert.deepEqual([r.status, r.exitCode, r.totalClaims, r.ratio], ['pass', 0, 0, undefined])
})

test('transitionStatus accepts exactly the five arrows and staying put', () => {
  const all = ['created', 'in_progress', 'blocked', 'completed', 'archived']
  const legal = new Set(['created>in_progress', 'in_progress>blocked', 'blocked>in_progress', 'in_progress>completed', 'completed>archived'])
  let refused = 0
  for (const from of all) {
    for (const to of all) {
      if (from === to || legal.has(`${from}>${to}`)) {
        assert.equal(core.transitionStatus(from, to), to)
      } else {
        assert.throws(() => core.transitionStatus(from, to), { code: 'E_ILLEGAL_TRANSITION' }, `${from} -> ${to}`)
        refused++
      }
    }
  }
  assert.equal(refused, 15)
  assert.throws(() => core.transitionStatus('done', 'created'), { code: 'E_INVALID_ARGUMENT' })
})

test('resolveIdentifier reads the lines and refuses every escape', (t) => {
  const ws = workspace(t)
  const outside = tempDir(t, 'loa-outside-')
  writeFileSync(join(outside, 'secret.ts'), 'secret\n')
  symlinkSync(join(outside, 'secret.ts'), join(ws, 'src', 'link.ts'))
  symlinkSync(outside, join(ws, 'linkdir'))
  const ledger = core.Ledger.open({ workspaceDir: ws })
  const r = ledger.resolveIdentifier('${PROJECT_ROOT}/src/jwt.ts:2-3')
  assert.deepEqual([r.path, r.start, r.end, r.lines.length], ['src/jwt.ts', 2, 3, 2])
  assert.equal(ledger.resolveIdentifier(`${join(ws, 'src', 'jwt.ts')}:1`).identifier, '${PROJECT_ROOT}/src/jwt.ts:1')
  for (const id of [
    '${PROJECT_ROOT}/../x.ts:1',
    '${PROJECT_ROOT}/src/../../x.ts:1',
    `${join(outside, 'secret.ts')}:1`,
    '${PROJECT_ROOT}/src/link.ts:1',
    '${PROJECT_ROOT}/linkdir/secret.ts:1',
    '/etc/passwd:1',
  ]) {
    assert.throws(() => ledger.resolveIdentifier(id), { code: 'E_PATH_OUTSIDE_ROOT' }, id)
  }
  assert.throws(() => ledger.resolveIdentifier('src/jwt.ts:1'), { code: 'E_INVALID_ARGUMENT' })
  assert.throws(() => ledger.resolveIdentifier('${PROJECT_ROOT}/src/jwt.ts:1-200'), { code: 'E_TOO_LARGE' })
})

test('editNotes keeps foreign text byte for byte over a hundred edits', (t) => {
  const ws = workspace(t)
  const foreign = '# Agent Working Memory\n\nWritten by a human. <!-- loa:begin nothing -->\n\n## Session Continuity\n\n### Decision Log\n\n#### 2025-12-01T09:00:00Z - Human decision\n**Decision**: Keep the monorepo\n\n## Technical Debt\n```text\n## not a heading\n### Active Context\n```\n- keep me | exactly\n'
  mkdirSync(join(ws, 'grimoires', 'loa'), { recursive: true })
  writeFileSync(join(ws, NOTES), foreign)
  const ledger = core.Ledger.open({ workspaceDir: ws })
  const hostile = ['<!-- loa:end active-context -->', '## Heading', '| a | b |', '\n\n### Pending Questions', 'ok']
  for (let i = 0; i < 100; i++) {
    const text = `${hostile[i % hostile.length]} ${i}`
    const done = ledger.editNotes({
      activeContext: [{ key: `k${i % 7}`, value: text }],
      pendingQuestions: [{ text: `q${i % 5} ${hostile[(i + 1) % hostile.length]}`, done: i % 3 === 0 }],
      identifiers: i % 10 === 0 ? [{ identifier: '${PROJECT_ROOT}/src/jwt.ts:1', purpose: text }] : [],
    })
    assert.equal(typeof done.changed, 'boolean')
  }
  const after = readFileSync(join(ws, NOTES), 'utf8')
  // Everything outside the ledger's regions (and the sub-section headings it adds) is kept.
  const regions = /\n*(### (Active Context|Lightweight Identifiers|Pending Questions)\n+)?<!-- loa:begin (active-context|identifiers|pending-questions) -->[\s\S]*?<!-- loa:end \3 -->\n*/g
  const strip = (s) => s.replace(regions, '\n').replace(/\n+/g, '\n')
  assert.equal(strip(after), strip(foreign))
  assert.ok(after.startsWith('# Agent Working Memory\n\nWritten by a human. <!-- loa:begin nothing -->\n'))
  assert.ok(after.includes('```text\n## not a heading\n### Active Context\n```\n- keep me | exactly\n'))
  const notes = ledger.readNotes()
  assert.equal(notes.activeContext.length, 7)
  assert.equal(notes.pendingQuestions.length, 5)
  assert.equal(notes.decisions[0].title, 'Human decision')
})

test('beads: append creates, validates and keeps other fields', (t) => {
  const ws = workspace(t)
  const ledger = core.Ledger.open({ workspaceDir: ws })
  assert.deepEqual(ledger.listBeads(), [])
  assert.equal(ledger.readBead('bd-1'), null)
  mkdirSync(join(ws, '.beads'), { recursive: true })
  writeFileSync(join(ws, '.beads', 'bd-1.yaml'), 'id: bd-1\ntitle: Auth\nstatus: open\n')
  const bead = ledger.appendBead('bd-1', {
    decisions: [decision()],
    testScenarios: [{ name: 'boundary', type: 'edge_case', expected: 'grace applies' }],
    nextSteps: ['ship'],
  })
  assert.deepEqual(bead.other, { title: 'Auth', status: 'open' })
  assert.equal(bead.testScenarios[0].type, 'edge_case')
  assert.equal(ledger.readBead('bd-1').decisions.length, 1)
  assert.throws(() => ledger.appendBead('../x', {}), { code: 'E_INVALID_ARGUMENT' })
  writeFileSync(join(ws, '.beads', 'bd-2.yaml'), 'id: other\n')
  assert.throws(() => ledger.readBead('bd-2'), { code: 'E_STATE_CORRUPT' })
})

test('arguments: one coded error, promises reject and never throw', async (t) => {
  const ws = workspace(t)
  const ledger = core.Ledger.open({ workspaceDir: ws })
  assert.throws(() => core.Ledger.open({}), { code: 'E_INVALID_ARGUMENT', message: /workspaceDir/ })
  assert.throws(() => core.Ledger.open({ workspaceDir: join(ws, 'missing') }), (e) => typeof e.code === 'string')
  let p
  assert.doesNotThrow(() => (p = ledger.recall({ level: 4 })))
  await assert.rejects(p, { code: 'E_INVALID_ARGUMENT', message: /level/ })
  await assert.rejects(ledger.recall({ level: 2 }), { code: 'E_INVALID_ARGUMENT', message: /query/ })
  await assert.rejects(ledger.checkpoint({ sessionId: 's' }, {}), { code: 'E_INVALID_ARGUMENT', message: /store/ })
  await assert.rejects(ledger.groundingCheck({ at: 'yesterday' }), { code: 'E_INVALID_ARGUMENT' })
  // A bad agent name is a check that could not run: exit 2, never a pass.
  const bad = await ledger.groundingCheck({ agent: '../x' })
  assert.deepEqual([bad.status, bad.exitCode], ['error', 2])
  const trap = new Proxy({}, { get() { throw new Error('secret') } })
  await assert.rejects(ledger.checkpoint(trap), (e) => e.code === 'E_INVALID_ARGUMENT' && !e.message.includes('secret'))
  assert.throws(() => ledger.cite({ claim: 'x', grounding: 'maybe' }), { code: 'E_INVALID_ARGUMENT', message: /grounding/ })
})
