// The persistence protocol (seed 004) from JavaScript and the command line: L1 state files,
// MEMORY.md lines, the status state machine, newest-wins recovery; and the checkpoint's ghost
// claims given hostile shapes. Real workspaces, real files (docs/ledger.md).
import test from 'node:test'
import assert from 'node:assert/strict'
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { execFileSync, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { core, root, tempDir } from './helpers.mjs'

const STATE = '.loa/state'
const MEMORY = 'grimoires/loa/MEMORY.md'
const NOTES = 'grimoires/loa/NOTES.md'
const T0 = Date.parse('2026-03-01T10:00:00.000Z')
const at = (ms) => new Date(ms).toISOString()
const STATUSES = ['created', 'in_progress', 'blocked', 'completed', 'archived']
const LEGAL = new Set(['created>in_progress', 'in_progress>blocked', 'blocked>in_progress', 'in_progress>completed', 'completed>archived'])

function workspace(t, yaml) {
  const ws = tempDir(t, 'loa-persist-')
  if (yaml) writeFileSync(join(ws, '.loa.config.yaml'), yaml)
  return ws
}

const completion = { kind: 'completion', workflowType: 'APEX', context: 'billing', outcome: 'shipped' }
/** The line a persist to `status` needs (a completion line to enter `completed`). */
const lineFor = (status) => (status === 'completed' ? completion : { kind: 'checkpoint', workflowType: 'APEX', completed: 'plan', next: 'implementing', context: 'billing' })
/** The shortest legal path from `created` to each status. */
const PATH = {
  created: ['created'],
  in_progress: ['created', 'in_progress'],
  blocked: ['created', 'in_progress', 'blocked'],
  completed: ['created', 'in_progress', 'completed'],
  archived: ['created', 'in_progress', 'completed', 'archived'],
}

test('persistState writes L1 then the MEMORY.md line; recoverState reads them back', async (t) => {
  const ws = workspace(t)
  const ledger = core.Ledger.open({ workspaceDir: ws })
  assert.equal(await ledger.recoverState('apex'), null)
  // A read creates nothing.
  assert.deepEqual(readdirSync(ws), [])

  const r = await ledger.persistState({ workflow: 'apex', status: 'created', data: { milestone: 1, owner: { name: 'ada' } }, at: at(T0) })
  assert.deepEqual(r, { state: { status: 'created', lastUpdated: at(T0), data: { milestone: 1, owner: { name: 'ada' } } }, memoryWritten: false, overflowed: 0 })
  const file = JSON.parse(readFileSync(join(ws, STATE, 'apex.json'), 'utf8'))
  assert.deepEqual(file, { version: 1, status: 'created', lastUpdated: at(T0), data: { milestone: 1, owner: { name: 'ada' } } })

  const s = ledger.persistStateSync({ workflow: 'apex', status: 'in_progress', memory: lineFor('in_progress'), at: at(T0 + 1000) })
  assert.equal(s.memoryWritten, true)
  const md = readFileSync(join(ws, MEMORY), 'utf8')
  assert.ok(md.startsWith('# MEMORY.md\n'), md)
  assert.ok(md.includes(`- ${at(T0 + 1000)} [checkpoint:apex:in_progress] Active APEX workflow: plan completed, implementing billing\n`), md)
  // Data not given is `{}`: a state write replaces the state.
  assert.deepEqual(s.state.data, {})

  // A learning line is redacted before it reaches MEMORY.md.
  const email = `ops.${Date.now()}@example.com`
  await ledger.persistState({ workflow: 'apex', status: 'in_progress', memory: { kind: 'learning', text: `Mail the release notes to ${email}` }, at: at(T0 + 2000) })
  const redacted = readFileSync(join(ws, MEMORY), 'utf8')
  assert.ok(!redacted.includes(email) && redacted.includes('[learning:apex:in_progress] Mail the release notes to'), redacted)

  const back = await ledger.recoverState('apex')
  assert.deepEqual([back.status, back.source, back.lastUpdated, back.stale, back.staleWarning, back.warnings], ['in_progress', 'l1', at(T0 + 2000), [], undefined, []])
  assert.deepEqual(back.state, { status: 'in_progress', lastUpdated: at(T0 + 2000), data: {} })
  assert.deepEqual(ledger.recoverStateSync('apex'), back)

  // Entering completed needs its completion line (seed 004: mandatory); nothing is written without.
  await assert.rejects(ledger.persistState({ workflow: 'apex', status: 'completed', at: at(T0 + 3000) }), { code: 'E_INVALID_ARGUMENT', message: /completion/ })
  assert.throws(() => ledger.persistStateSync({ workflow: 'apex', status: 'completed', memory: { kind: 'learning', text: 'x' } }), { code: 'E_INVALID_ARGUMENT' })
  assert.equal(JSON.parse(readFileSync(join(ws, STATE, 'apex.json'), 'utf8')).status, 'in_progress')
  const done = await ledger.persistState({ workflow: 'apex', status: 'completed', memory: completion, at: at(T0 + 4000) })
  assert.equal(done.state.status, 'completed')
  assert.ok(readFileSync(join(ws, MEMORY), 'utf8').includes(`- ${at(T0 + 4000)} [completion:apex:completed] Completed APEX for billing: shipped\n`))
})

test('the state machine: every illegal transition is E_ILLEGAL_TRANSITION and writes neither layer', async (t) => {
  const ws = workspace(t)
  const ledger = core.Ledger.open({ workspaceDir: ws })
  let refused = 0
  let n = 0
  for (const from of STATUSES) {
    for (const to of STATUSES) {
      const workflow = `wf-${n++}`
      let ms = T0
      for (const step of PATH[from]) ledger.persistStateSync({ workflow, status: step, memory: lineFor(step), at: at(ms++) })
      const l1 = readFileSync(join(ws, STATE, `${workflow}.json`))
      const md = readFileSync(join(ws, MEMORY))
      const input = { workflow, status: to, memory: lineFor(to), at: at(T0 + 60_000) }
      if (from === to || LEGAL.has(`${from}>${to}`)) {
        assert.equal((await ledger.persistState(input)).state.status, to, `${from} -> ${to}`)
        continue
      }
      refused++
      await assert.rejects(ledger.persistState(input), { code: 'E_ILLEGAL_TRANSITION', message: `illegal status transition from ${from} to ${to}` }, `${from} -> ${to}`)
      assert.throws(() => ledger.persistStateSync(input), { code: 'E_ILLEGAL_TRANSITION' })
      assert.deepEqual(readFileSync(join(ws, STATE, `${workflow}.json`)), l1, `${from} -> ${to} changed L1`)
      assert.deepEqual(readFileSync(join(ws, MEMORY)), md, `${from} -> ${to} changed MEMORY.md`)
    }
  }
  assert.equal(refused, 15)
})

test('newest wins: MEMORY.md newer by more than five minutes wins with a warning and L1 follows', async (t) => {
  const ws = workspace(t)
  const ledger = core.Ledger.open({ workspaceDir: ws })
  await ledger.persistState({ workflow: 'apex', status: 'in_progress', data: { keep: true }, memory: lineFor('in_progress'), at: at(T0) })
  // Another session (or a human) wrote a later line; L1 was not updated.
  const line = (ms, status) => `- ${at(ms)} [checkpoint:apex:${status}] Active APEX workflow: review completed, fixing billing\n`
  appendFileSync(join(ws, MEMORY), line(T0 + 5 * 60_000, 'in_progress'))
  let r = await ledger.recoverState('apex')
  // Exactly five minutes apart: the newer wins (here the same status), no warning.
  assert.deepEqual([r.source, r.status, r.staleWarning, r.warnings], ['memory.md', 'in_progress', undefined, []])
  appendFileSync(join(ws, MEMORY), line(T0 + 5 * 60_000 + 1, 'blocked'))
  r = await ledger.recoverState('apex')
  assert.deepEqual([r.source, r.status, r.stale], ['memory.md', 'blocked', ['l1']])
  assert.match(r.staleWarning, /state may be stale: l1 was last updated 5 min before memory\.md/)
  assert.deepEqual(r.warnings, [r.staleWarning])
  // L1 brought up to the newer status, its data kept.
  assert.deepEqual(r.state, { status: 'blocked', lastUpdated: at(T0 + 5 * 60_000 + 1), data: { keep: true } })
  assert.equal(JSON.parse(readFileSync(join(ws, STATE, 'apex.json'), 'utf8')).status, 'blocked')
  // Now both agree: L1 wins the tie, no warning.
  r = ledger.recoverStateSync('apex')
  assert.deepEqual([r.source, r.staleWarning, r.warnings], ['l1', undefined, []])
  // A newer MEMORY.md status L1 cannot move to: a warning, L1 stays.
  appendFileSync(join(ws, MEMORY), line(T0 + 20 * 60_000, 'archived'))
  r = await ledger.recoverState('apex')
  assert.equal(r.status, 'archived')
  assert.ok(r.warnings.some((w) => /L1 not updated.*E_ILLEGAL_TRANSITION/.test(w)), JSON.stringify(r.warnings))
  assert.equal(r.state.status, 'blocked')
})

test('MEMORY.md over its cap: the oldest lines move into the Decision Log, never dropped', async (t) => {
  const ws = workspace(t, 'persistence:\n  memory_max_entries: 3\n')
  writeFileSync(join(ws, 'grimoires-keep.txt'), '')
  const ledger = core.Ledger.open({ workspaceDir: ws })
  mkdirSync(join(ws, 'grimoires/loa'), { recursive: true })
  writeFileSync(join(ws, MEMORY), '# Our memory\n\nA line a human wrote.\n')
  const contexts = ['alpha billing', 'beta invoices', 'gamma refunds', 'delta taxes', 'epsilon payouts']
  let moved = 0
  for (const [i, context] of contexts.entries()) {
    const r = await ledger.persistState({ workflow: 'apex', status: i ? 'in_progress' : 'created', memory: { kind: 'checkpoint', workflowType: 'APEX', completed: `step ${i}`, next: 'implementing', context }, at: at(T0 + i * 1000) })
    assert.equal(r.warning, undefined, r.warning)
    moved += r.overflowed
  }
  assert.equal(moved, 2)
  const md = readFileSync(join(ws, MEMORY), 'utf8')
  assert.ok(md.startsWith('# Our memory\n\nA line a human wrote.\n'), md)
  assert.equal(md.split('\n').filter((l) => l.startsWith('- ')).length, 3)
  assert.ok(!md.includes('alpha billing') && !md.includes('beta invoices') && md.includes('epsilon payouts'))
  // Every word of the moved lines is in the Decision Log.
  const notes = readFileSync(join(ws, NOTES), 'utf8')
  assert.ok(notes.includes('MEMORY.md overflow') && notes.includes('implementing alpha billing') && notes.includes('implementing beta invoices'), notes)
  const entries = ledger.readNotes().decisions.filter((d) => d.decision.includes('MEMORY.md overflow'))
  assert.equal(entries.length, 2)

  // The overflow cannot be stored (the WAL directory is a file): nothing leaves MEMORY.md, the
  // report says why, L1 is written anyway.
  rmSync(join(ws, '.loa/wal'), { recursive: true, force: true })
  writeFileSync(join(ws, '.loa/wal'), 'not a directory')
  const r = await ledger.persistState({ workflow: 'apex', status: 'in_progress', memory: { kind: 'learning', text: 'zeta ledgers' }, at: at(T0 + 9000) })
  assert.equal(r.state.lastUpdated, at(T0 + 9000))
  assert.equal(r.overflowed, 0)
  assert.match(r.warning, /MEMORY\.md is over its cap; its oldest lines stay/)
  const after = readFileSync(join(ws, MEMORY), 'utf8')
  assert.equal(after.split('\n').filter((l) => l.startsWith('- ')).length, 4)
  assert.ok(after.includes('gamma refunds') && after.includes('zeta ledgers'))
})

test('state files: symlinks, FIFOs and damaged files are refused, never followed or overwritten', async (t) => {
  const ws = workspace(t)
  const outside = tempDir(t, 'loa-outside-')
  const ledger = core.Ledger.open({ workspaceDir: ws })
  await ledger.persistState({ workflow: 'real', status: 'created' })
  const dir = join(ws, STATE)

  // A symlink where a state file belongs, pointing out of the workspace.
  const target = join(outside, 'victim.json')
  writeFileSync(target, JSON.stringify({ version: 1, status: 'created', lastUpdated: at(T0), data: {} }))
  symlinkSync(target, join(dir, 'linked.json'))
  await assert.rejects(ledger.recoverState('linked'), (e) => ['E_NOT_REGULAR_FILE', 'E_PATH_OUTSIDE_ROOT'].includes(e.code) && !e.message.includes('victim'))
  await assert.rejects(ledger.persistState({ workflow: 'linked', status: 'in_progress' }), (e) => ['E_NOT_REGULAR_FILE', 'E_PATH_OUTSIDE_ROOT'].includes(e.code))
  assert.equal(JSON.parse(readFileSync(target, 'utf8')).status, 'created', 'the target was written through the link')

  // A FIFO: refused without blocking on it.
  execFileSync('mkfifo', [join(dir, 'pipe.json')])
  assert.throws(() => ledger.recoverStateSync('pipe'), { code: 'E_NOT_REGULAR_FILE' })
  assert.throws(() => ledger.persistStateSync({ workflow: 'pipe', status: 'created' }), { code: 'E_NOT_REGULAR_FILE' })

  // A symlinked state directory is refused too.
  const ws2 = workspace(t)
  mkdirSync(join(ws2, '.loa'))
  symlinkSync(outside, join(ws2, STATE))
  const other = core.Ledger.open({ workspaceDir: ws2 })
  assert.throws(() => other.persistStateSync({ workflow: 'x', status: 'created' }), (e) => typeof e.code === 'string' && e.code.startsWith('E_'))
  assert.equal(existsSync(join(outside, 'x.json')), false)

  // A MEMORY.md symlink: L1 is written, MEMORY.md unavailable is a warning, nothing written through it.
  mkdirSync(join(ws, 'grimoires/loa'), { recursive: true })
  const mdTarget = join(outside, 'MEMORY.md')
  writeFileSync(mdTarget, 'theirs\n')
  symlinkSync(mdTarget, join(ws, MEMORY))
  const r = await ledger.persistState({ workflow: 'real', status: 'in_progress', memory: { kind: 'learning', text: 'a lesson' } })
  assert.equal(r.state.status, 'in_progress')
  assert.equal(r.memoryWritten, false)
  assert.match(r.warning, /Auto-memory unavailable: learnings will not persist \(E_/)
  assert.equal(readFileSync(mdTarget, 'utf8'), 'theirs\n')

  // A damaged file is moved aside and reported, never read as empty nor overwritten.
  writeFileSync(join(dir, 'broken.json'), '{"version":1,"status":')
  await assert.rejects(ledger.recoverState('broken'), { code: 'E_STATE_CORRUPT' })
  const aside = readdirSync(dir).filter((f) => f.startsWith('broken.json.corrupt-'))
  assert.equal(aside.length, 1)
  assert.equal(readFileSync(join(dir, aside[0]), 'utf8'), '{"version":1,"status":')
  // A file of another version is left as it is.
  writeFileSync(join(dir, 'future.json'), JSON.stringify({ version: 2, status: 'created', lastUpdated: at(T0) }))
  assert.throws(() => ledger.persistStateSync({ workflow: 'future', status: 'in_progress' }), { code: 'E_STATE_CORRUPT' })
  assert.equal(JSON.parse(readFileSync(join(dir, 'future.json'), 'utf8')).version, 2)
})

test('hostile persist and recover arguments: one coded error each; promises reject and never throw', async (t) => {
  const ws = workspace(t)
  const ledger = core.Ledger.open({ workspaceDir: ws })
  const secret = 'gh' + 'p_' + 'x'.repeat(36)
  const trap = new Proxy({}, { get() { throw new Error(secret) } })
  const getter = (key, valid) => Object.defineProperty({ ...valid }, key, { enumerable: true, get() { throw new Error(secret) } })
  const valid = { workflow: 'apex', status: 'created' }
  const cases = [
    [undefined, /input/],
    [null, /input/],
    ['apex', /input/],
    [[valid], /input/],
    [trap, /input/],
    [getter('workflow', valid), /`input` could not be read/],
    [getter('status', valid), /`input` could not be read/],
    [getter('data', valid), /`input` could not be read/],
    [getter('memory', valid), /`input` could not be read/],
    [{ ...valid, memory: getter('kind', { kind: 'learning', text: 'x' }) }, /`input\.memory` could not be read/],
    [{ ...valid, workflow: 42 }, /input\.workflow/],
    [{ ...valid, workflow: '../escape' }, /state name/],
    [{ ...valid, workflow: 'A'.repeat(65) }, /state name/],
    [{ ...valid, status: 'done' }, /input\.status/],
    [{ ...valid, status: { toString: () => 'created' } }, /input\.status/],
    [{ ...valid, data: [] }, /input\.data/],
    [{ ...valid, data: 'x' }, /input\.data/],
    [{ ...valid, data: { n: 10n } }, /input\.data/],
    [{ ...valid, data: new Proxy({}, { ownKeys() { throw new Error(secret) } }) }, /input\.data/],
    [{ ...valid, memory: { kind: 'poem', text: 'x' } }, /input\.memory\.kind/],
    [{ ...valid, memory: { kind: 'learning' } }, /input\.memory\.text/],
    [{ ...valid, memory: { kind: 'completion', workflowType: 'A', context: 'c' } }, /input\.memory\.outcome/],
    [{ ...valid, memory: { kind: 'checkpoint', workflowType: 'A', completed: 'p', context: 'c' } }, /input\.memory\.next/],
    [{ ...valid, memory: { kind: 'learning', text: 'x'.repeat(3000) } }, /2048|too large|MEMORY\.md line/i],
    [{ ...valid, memory: 'a line' }, /input\.memory/],
    [{ ...valid, at: 'yesterday' }, /input\.at/],
  ]
  for (const [input, message] of cases) {
    let p
    assert.doesNotThrow(() => (p = ledger.persistState(input)), `${message}: persistState threw`)
    await assert.rejects(p, (e) => core.isLoaError(e) && /^E_(INVALID_ARGUMENT|TOO_LARGE)$/.test(e.code) && message.test(e.message) && !e.message.includes(secret), `${message}`)
    assert.throws(() => ledger.persistStateSync(input), (e) => core.isLoaError(e) && /^E_(INVALID_ARGUMENT|TOO_LARGE)$/.test(e.code) && !e.message.includes(secret), `${message} (sync)`)
  }
  assert.equal(existsSync(join(ws, STATE, 'apex.json')), false, 'a refused input wrote a state')
  assert.equal(existsSync(join(ws, MEMORY)), false, 'a refused input wrote MEMORY.md')
  await assert.rejects(ledger.persistState(valid, {}), { code: 'E_INVALID_ARGUMENT', message: /store/ })
  for (const name of [undefined, 42, '', '../x', trap, 'x'.repeat(100)]) {
    let p
    assert.doesNotThrow(() => (p = ledger.recoverState(name)))
    await assert.rejects(p, (e) => e.code === 'E_INVALID_ARGUMENT' && !e.message.includes(secret))
    assert.throws(() => ledger.recoverStateSync(name), { code: 'E_INVALID_ARGUMENT' })
  }
  // A state too large to read back is never written.
  await assert.rejects(ledger.persistState({ ...valid, data: { big: 'x'.repeat(4 * 1024 * 1024) } }), { code: 'E_TOO_LARGE' })
  assert.equal(existsSync(join(ws, STATE, 'apex.json')), false)
})

test('checkpoint ghosts: wrong types, huge arrays and throwing getters are coded errors; nothing is written', async (t) => {
  const ws = workspace(t)
  const ledger = core.Ledger.open({ workspaceDir: ws })
  const secret = 'gh' + 'p_' + 'y'.repeat(36)
  const throwing = (key) => Object.defineProperty({ feature: 'rate limiter', queries: ['rate limit', 'throttle'] }, key, { enumerable: true, get() { throw new Error(secret) } })
  const huge = Array.from({ length: 200_000 }, () => ({ feature: 'f', queries: 'not an array' }))
  const hugeQueries = Array.from({ length: 200_000 }, (_, i) => (i === 199_999 ? 42 : 'q'))
  const cases = [
    ['ghosts is a string', 'rate limiter', /input\.ghosts/],
    ['ghosts is an object', { feature: 'x', queries: ['a', 'b'] }, /input\.ghosts/],
    ['a ghost is a number', [42], /input\.ghosts\[0\]/],
    ['a ghost is null', [{ feature: 'a', queries: ['a', 'b'] }, null], /input\.ghosts\[1\]/],
    ['feature missing', [{ queries: ['a', 'b'] }], /input\.ghosts\[0\]\.feature/],
    ['feature a number', [{ feature: 1, queries: ['a', 'b'] }], /input\.ghosts\[0\]\.feature/],
    ['queries a string', [{ feature: 'f', queries: 'a b' }], /input\.ghosts\[0\]\.queries/],
    ['a query a number', [{ feature: 'f', queries: ['a', 7] }], /input\.ghosts\[0\]\.queries\[1\]/],
    ['a query a lone surrogate', [{ feature: 'f', queries: ['a', 'x\uD800'] }], /input\.ghosts\[0\]\.queries\[1\]/],
    ['a throwing feature getter', [throwing('feature')], /`input\.ghosts\[0\]` could not be read/],
    ['a throwing queries getter', [throwing('queries')], /`input\.ghosts\[0\]` could not be read/],
    ['a Proxy ghost', [new Proxy({}, { get() { throw new Error(secret) } })], /input\.ghosts\[0\]/],
    ['a Proxy ghost list', new Proxy([], { get() { throw new Error(secret) } }), /input\.ghosts/],
    ['200,000 bad ghosts', huge, /input\.ghosts\[0\]\.queries/],
    ['200,000 queries, the last bad', [{ feature: 'f', queries: hugeQueries }], /input\.ghosts\[0\]\.queries\[199999\]/],
  ]
  for (const [what, ghosts, message] of cases) {
    const input = { sessionId: 's', ghosts }
    let p
    assert.doesNotThrow(() => (p = ledger.checkpoint(input)), `${what}: checkpoint threw`)
    await assert.rejects(p, (e) => e.code === 'E_INVALID_ARGUMENT' && message.test(e.message) && !e.message.includes(secret), what)
    assert.throws(() => ledger.checkpointSync(input), (e) => e.code === 'E_INVALID_ARGUMENT' && message.test(e.message) && !e.message.includes(secret), `${what} (sync)`)
  }
  assert.equal(existsSync(join(ws, NOTES)), false, 'a refused checkpoint wrote NOTES.md')
  assert.equal(existsSync(join(ws, 'grimoires/loa/a2a')), false, 'a refused checkpoint wrote the trajectory')
  // Well-formed ghosts with one query (or the same query twice) are a checkpoint verdict, not an
  // argument error: negative grounding refuses the claim and the checkpoint blocks.
  for (const queries of [['rate limiter'], ['rate limiter', 'Rate  LIMITER']]) {
    const r = await ledger.checkpoint({ sessionId: 's', ghosts: [{ feature: 'rate limiter', queries }] })
    assert.equal(r.exitCode, 1, JSON.stringify(r.steps))
    assert.equal(r.ghosts[0].verified, false)
  }
})

test('loa state persist|recover: --json, exit 0 written, 1 warning or nothing known, 2 error', (t) => {
  const ws = workspace(t)
  const loa = (...args) => spawnSync(process.execPath, [join(root, 'bin', 'loa'), ...args, '--workspace', ws], { encoding: 'utf8' })
  let r = loa('state', 'recover', 'apex', '--json')
  assert.deepEqual([r.status, JSON.parse(r.stdout)], [1, null])
  r = loa('state', 'persist', 'apex', '--status', 'created', '--state-data', '{"owner":"ada"}', '--at', at(T0), '--json')
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout).state, { status: 'created', lastUpdated: at(T0), data: { owner: 'ada' } })
  r = loa('state', 'persist', 'apex', '--status', 'in_progress', '--phase', 'plan', '--next', 'implementing', '--workflow-type', 'APEX', '--about', 'billing', '--at', at(T0 + 1000))
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /^apex: in_progress at .*, MEMORY\.md line written\n$/)
  assert.ok(readFileSync(join(ws, MEMORY), 'utf8').includes('[checkpoint:apex:in_progress] Active APEX workflow: plan completed, implementing billing'))
  // Illegal: exit 2, one coded line on stderr.
  r = loa('state', 'persist', 'apex', '--status', 'archived')
  assert.equal(r.status, 2)
  assert.equal(r.stderr, 'loa: E_ILLEGAL_TRANSITION: illegal status transition from in_progress to archived\n')
  r = loa('state', 'persist', 'apex', '--status', 'completed')
  assert.equal(r.status, 2)
  assert.match(r.stderr, /^loa: E_INVALID_ARGUMENT: .*completion/)
  r = loa('state', 'persist', 'apex', '--status', 'completed', '--completed', 'shipped', '--workflow-type', 'APEX', '--about', 'billing', '--json')
  assert.equal(r.status, 0, r.stderr)
  r = loa('state', 'recover', 'apex', '--json')
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual([JSON.parse(r.stdout).status, JSON.parse(r.stdout).source], ['completed', 'l1'])
  // Sources more than five minutes apart: exit 1 with the warning.
  appendFileSync(join(ws, MEMORY), `- ${at(Date.now() + 3_600_000)} [checkpoint:apex:archived] archived by hand\n`)
  r = loa('state', 'recover', 'apex')
  assert.equal(r.status, 1, r.stderr)
  assert.match(r.stdout, /^archived \(from memory\.md, last updated .*\)\n  warning: state may be stale: l1 was last updated \d+ min before memory\.md\n$/)
  // MEMORY.md unavailable: L1 written, exit 1.
  rmSync(join(ws, MEMORY))
  mkdirSync(join(ws, MEMORY))
  r = loa('state', 'persist', 'other', '--status', 'created', '--learning', 'a lesson')
  assert.equal(r.status, 1, r.stderr)
  assert.match(r.stdout, /warning: Auto-memory unavailable/)
  assert.ok(existsSync(join(ws, STATE, 'other.json')))
  // Usage errors: exit 2.
  for (const args of [['state'], ['state', 'persist'], ['state', 'persist', 'x'], ['state', 'persist', 'x', '--status', 'created', '--state-data', '[1]'], ['state', 'persist', 'x', '--status', 'created', '--learning', 'a', '--completed', 'b'], ['state', 'recover', 'x', '--status', 'created'], ['state', 'drop', 'x']]) {
    r = loa(...args)
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stdout}`)
    assert.match(r.stderr, /^loa: E_(USAGE|INVALID_ARGUMENT): /, args.join(' '))
  }
})

test('an unreadable MEMORY.md never hides L1: recoverState warns, and errors only when L1 knows nothing; MEMORY.md is never written past what its reader takes', async (t) => {
  const ws = workspace(t)
  const outside = tempDir(t, 'loa-outside-')
  const ledger = core.Ledger.open({ workspaceDir: ws })
  await ledger.persistState({ workflow: 'real', status: 'created' })
  mkdirSync(join(ws, 'grimoires/loa'), { recursive: true })
  const target = join(outside, 'MEMORY.md')
  writeFileSync(target, '- 2030-01-01T00:00:00.000Z [checkpoint:real:blocked] not ours\n')
  symlinkSync(target, join(ws, MEMORY))
  for (const found of [await ledger.recoverState('real'), ledger.recoverStateSync('real')]) {
    assert.equal(found.status, 'created')
    assert.equal(found.source, 'l1')
    assert.ok(found.warnings.some((w) => /MEMORY\.md unavailable \(E_NOT_REGULAR_FILE\)/.test(w)), found.warnings.join('; '))
    assert.ok(!found.warnings.join(' ').includes(outside))
  }
  // L1 knows nothing: the unread layer's error, never "nothing known".
  await assert.rejects(ledger.recoverState('absent'), { code: 'E_NOT_REGULAR_FILE' })
  assert.throws(() => ledger.recoverStateSync('absent'), { code: 'E_NOT_REGULAR_FILE' })
  assert.equal(readFileSync(target, 'utf8').includes('not ours'), true)

  // MEMORY.md a line short of its limit: the line is refused (a warning), the file stays readable.
  rmSync(join(ws, MEMORY))
  const theirs = '# theirs\n' + 'x'.repeat(4 * 1024 * 1024 - 100) + '\n'
  writeFileSync(join(ws, MEMORY), theirs)
  const r = ledger.persistStateSync({ workflow: 'real', status: 'in_progress', memory: { kind: 'learning', text: 'y'.repeat(2000) } })
  assert.equal(r.memoryWritten, false)
  assert.match(r.warning, /Auto-memory unavailable: learnings will not persist \(E_TOO_LARGE\)/)
  assert.equal(readFileSync(join(ws, MEMORY), 'utf8'), theirs)
  const back = ledger.recoverStateSync('real')
  assert.equal(back.status, 'in_progress')
  assert.deepEqual(back.warnings, [])
})
