// Ledger synthesis (docs/synthesis.md) through the public API and the real `loa` command: real
// files, real child processes.
import test from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { core, fixture, rng, root, startChild, tempDir, waitForLine } from './helpers.mjs'

const LOA = join(root, 'bin', 'loa')
const loa = (args, options = {}) => spawnSync(process.execPath, [LOA, ...args], { encoding: 'utf8', timeout: 120_000, ...options })

/** A varied, deterministic set of events (ties in instant and agent included). */
function events(n, seed = 7) {
  const r = rng(seed)
  const agents = ['toast', 'waffle', 'crisp']
  const offsets = ['Z', '+02:00', '-05:30']
  return Array.from({ length: n }, (_, i) => {
    const hour = 10 + r(3)
    const offset = offsets[r(3)]
    return {
      agent: agents[r(3)],
      ts: `2026-01-1${r(3)}T${hour}:0${r(3)}:00${offset}`,
      type: ['session_end', 'handoff'][r(2)],
      branch: `feat/${r(4)}`,
      now: `doing ${r(5)}`,
      thisSession: [`did ${r(6)}`, `did  ${r(6)}\n`],
      decisions: { [`k${r(3)}`]: `v${r(4)}` },
      checkpoints: [{ phase: String(r(12)), status: `s${r(3)}` }],
      openQuestions: [`q${r(5)}?`],
    }
  })
}

test('the same events in any order, in any process, give byte-identical current.md', async (t) => {
  // One event per instant and agent: names (which break exact ties) then do not depend on order.
  const seen = new Set()
  const list = events(60).filter((e) => {
    const key = `${Date.parse(e.ts)}|${e.agent}`
    return !seen.has(key) && seen.add(key)
  })
  assert.ok(list.length > 20)
  const texts = new Set()
  for (const order of [list, [...list].reverse(), [...list].sort((a, b) => a.now.localeCompare(b.now) || a.agent.localeCompare(b.agent))]) {
    const dir = tempDir(t, 'loa-synth-order-')
    for (const e of order) core.writeLedgerEventSync(dir, e)
    const report = await core.synthesizeLedger(dir)
    assert.equal(report.text, readFileSync(join(dir, 'current.md'), 'utf8'))
    texts.add(report.text)
    // Again, and from another process: the same bytes, nothing rewritten.
    assert.equal(core.synthesizeLedgerSync(dir).changed, false)
    const other = loa(['ledger', 'synth', '--dir', dir, '--workspace', dir, '--json'])
    assert.equal(other.status, 0, other.stderr)
    assert.equal(JSON.parse(other.stdout).changed, false)
    assert.equal(readFileSync(join(dir, 'current.md'), 'utf8'), report.text)
  }
  assert.equal(texts.size, 1)
  const [text] = texts
  // Every date in the output is an event's (in UTC or as written): none is the day it ran,
  // whichever day that is (a check for today's date alone would fail on the events' days).
  const eventDays = new Set(list.flatMap((e) => [e.ts.slice(0, 10), new Date(e.ts).toISOString().slice(0, 10)]))
  const days = text.match(/\d{4}-\d{2}-\d{2}/g) ?? []
  assert.ok(days.length > 0 && days.every((d) => eventDays.has(d)), `no wall-clock date in the output: ${[...new Set(days)]}`)
  assert.match(text, /_synthesized:\n {2}version: 1\n {2}event_count: \d+\n {2}latest_ts: 2026-01-1\dT[\d:.]+Z\n---\n$/)
})

test('two writers in two processes while a third synthesises: nothing lost, nothing torn', async (t) => {
  const dir = tempDir(t, 'loa-synth-procs-')
  const N = 60
  const runner = startChild(process.execPath, [fixture('synth-runner.mjs'), dir])
  const writers = ['toast', 'waffle'].map((agent) => startChild(process.execPath, [fixture('synth-writer.mjs'), dir, agent, String(N)]))
  for (const w of writers) await waitForLine(w, (lines) => lines.includes('done'), 120_000)
  writeFileSync(join(dir, 'stop'), '')
  await waitForLine(runner, (lines) => lines.some((l) => l.startsWith('done')), 120_000)
  await runner.exited
  assert.equal(runner.exit.code, 0, runner.stderr)
  for (const w of writers) {
    await w.exited
    assert.equal(w.exit.code, 0, w.stderr)
  }
  // Every event has its own file (same millisecond, same agent: ~2, ~3, ...).
  const names = writers.flatMap((w) => w.lines.filter((l) => l !== 'done'))
  assert.equal(new Set(names).size, 2 * N)
  assert.ok(names.some((n) => n.includes('~')), 'writes in one millisecond got distinct names')
  assert.deepEqual(readdirSync(join(dir, 'events')).sort(), [...names].sort())
  // The synthesiser saw counts that only grew, and its last run saw every event.
  const counts = runner.lines.filter((l) => /^\d+$/.test(l)).map(Number)
  assert.ok(counts.every((c, i) => i === 0 || c >= counts[i - 1]), counts.join(','))
  assert.equal(counts.at(-1), 2 * N)
  // And the result is the one a fresh synthesis of a copy gives.
  const copy = tempDir(t, 'loa-synth-copy-')
  cpSync(join(dir, 'events'), join(copy, 'events'), { recursive: true })
  assert.equal(core.synthesizeLedgerSync(copy).text, readFileSync(join(dir, 'current.md'), 'utf8'))
})

test('hostile event files are skipped and reported without their content; bad arguments are coded', async (t) => {
  const dir = tempDir(t, 'loa-synth-hostile-')
  core.writeLedgerEventSync(dir, { agent: 'ok', ts: '2026-01-10T10:00:00Z', now: 'fine' })
  const ev = join(dir, 'events')
  const secret = ['sk', 'ant', 'api03', 'Zq8x'.repeat(6)].join('-')
  const outside = tempDir(t, 'loa-synth-outside-')
  writeFileSync(join(outside, 'x.md'), '---\nts: 2026-02-01T00:00:00Z\nagent: evil\ntype: x\n---\nnow: through a symlink\n')
  symlinkSync(join(outside, 'x.md'), join(ev, 'link.md'))
  writeFileSync(join(ev, 'secret.md'), `---\nts: 2026-01-10T10:00:00Z\nagent: a\ntype: x\n---\nnow: [${secret}\n`)
  writeFileSync(join(ev, 'badts.md'), `---\nts: ${secret}\nagent: a\ntype: x\n---\n`)
  writeFileSync(join(ev, 'deep.md'), `---\nts: 2026-01-10T10:00:00Z\nagent: a\ntype: x\n---\nnow: ${'['.repeat(100000)}\n`)
  writeFileSync(join(ev, 'alias.md'), '---\nts: 2026-01-10T10:00:00Z\nagent: a\ntype: x\n---\na: &a ["x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e]\n')
  // 17 KiB whose 999 decisions are aliases of one 4,000-character anchor: 3.9 MiB once expanded.
  const fanout = Array.from({ length: 999 }, (_, i) => `  k${i}: *big\n`).join('')
  writeFileSync(join(ev, 'fanout.md'), `---\nts: 2026-01-10T10:00:00Z\nagent: a\ntype: x\n---\nnow: &big ${'y'.repeat(4000)}\ndecisions:\n${fanout}`)
  writeFileSync(join(ev, 'huge.md'), Buffer.alloc(300 * 1024, 'a'))
  mkdirSync(join(ev, 'dir.md'))
  const report = core.synthesizeLedgerSync(dir)
  assert.equal(report.eventCount, 1)
  assert.deepEqual(report.skipped.map((s) => s.file), ['alias.md', 'badts.md', 'deep.md', 'dir.md', 'fanout.md', 'huge.md', 'link.md', 'secret.md'])
  const reason = (file) => report.skipped.find((s) => s.file === file).reason
  assert.equal(reason('fanout.md'), 'the body expands through its aliases beyond its own size')
  assert.equal(reason('deep.md'), 'the body is nested deeper than 32 levels (line 6)')
  assert.ok(report.text.length < 4096)
  assert.ok(!JSON.stringify(report).includes(secret))
  assert.ok(!JSON.stringify(report).includes('Zq8x'))
  assert.ok(!report.text.includes('symlink'))
  // The CLI reports the same, without the secret, and still exits 0 (skipping is not failing).
  const cli = loa(['ledger', 'synth', '--dir', dir, '--workspace', dir])
  assert.equal(cli.status, 0, cli.stderr)
  assert.match(cli.stdout, /skipped secret\.md: the body is not a valid event \(line \d+\)/)
  assert.ok(!cli.stdout.includes('Zq8x') && !cli.stderr.includes('Zq8x'))

  // Arguments: coded, never echoed; the promise rejects (nothing thrown).
  for (const bad of [{ agent: '../etc' }, { agent: 'a', ts: secret }, { agent: 'a', decisions: { k: 1 } }, { agent: 'a', checkpoints: [{ phase: '', status: 'x' }] }]) {
    const err = await core.writeLedgerEvent(dir, bad).then(() => null, (e) => e)
    assert.equal(err?.code, 'E_INVALID_ARGUMENT', JSON.stringify(bad))
    assert.ok(!err.message.includes('Zq8x'))
  }
  assert.equal((await core.writeLedgerEvent(dir, { agent: 'a', now: 'x'.repeat(5000) }).catch((e) => e)).code, 'E_TOO_LARGE')
  assert.throws(() => core.synthesizeLedgerSync(dir, { retentionDays: -1 }), { code: 'E_INVALID_ARGUMENT' })
  // A handoffs directory that is a symlink's target is not followed below it: events/ as a symlink is refused.
  const other = tempDir(t, 'loa-synth-linked-')
  symlinkSync(ev, join(other, 'events'))
  assert.throws(() => core.synthesizeLedgerSync(other), (e) => ['E_PATH_OUTSIDE_ROOT', 'E_NOT_REGULAR_FILE', 'E_IO'].includes(e.code))
})

test('archive folds old events into a signed base: same bytes after; a tampered base stops synthesis', async (t) => {
  const dir = tempDir(t, 'loa-synth-archive-')
  const keys = tempDir(t, 'loa-synth-keys-')
  const ring = core.KeyRing.open(keys)
  ring.generate()
  const old = new Date(Date.now() - 30 * 86_400_000).toISOString()
  core.writeLedgerEventSync(dir, { agent: 'old', ts: old, now: 'long ago', thisSession: ['old work'] })
  core.writeLedgerEventSync(dir, { agent: 'new', now: 'today', decisions: { db: 'postgres' } })
  const before = core.synthesizeLedgerSync(dir).text
  const cli = loa(['ledger', 'synth', '--archive', '--dir', dir, '--keys', keys, '--workspace', dir, '--json'])
  assert.equal(cli.status, 0, cli.stderr)
  const report = JSON.parse(cli.stdout)
  assert.equal(report.archived, 1)
  assert.equal(report.changed, false)
  assert.equal(readFileSync(join(dir, 'current.md'), 'utf8'), before)
  assert.equal(readdirSync(join(dir, 'events')).length, 1)
  const check = loa(['ledger', 'synth', '--check', '--dir', dir, '--keys', keys, '--workspace', dir])
  assert.equal(check.status, 0, check.stdout + check.stderr)
  const base = readFileSync(join(dir, 'base.json'), 'utf8')
  writeFileSync(join(dir, 'base.json'), base.replace('old work', 'new work'))
  const tampered = loa(['ledger', 'synth', '--dir', dir, '--keys', keys, '--workspace', dir])
  assert.equal(tampered.status, 2)
  assert.match(tampered.stderr, /^loa: E_SIGNATURE_INVALID: /)
})

test('loa ledger event and synth --check: exit 1 when current.md is stale', (t) => {
  const ws = tempDir(t, 'loa-synth-cli-')
  writeFileSync(join(ws, '.loa.config.yaml'), 'synthesis:\n  dir: ledger/handoffs\n')
  const first = loa(['ledger', 'event', '--agent', 'toast', '--at', '2026-01-10T13:03:52+01:00', '--now', 'Create PR', '--done', 'forked', '--decision', 'wrapper=bash -c', '--checkpoint', '5=validated', '--question', 'why?', '--workspace', ws, '--json'])
  assert.equal(first.status, 0, first.stderr)
  assert.equal(JSON.parse(first.stdout).file, '20260110T120352000Z_toast.md')
  assert.equal(loa(['ledger', 'synth', '--check', '--workspace', ws]).status, 1, 'no current.md yet: stale')
  assert.equal(loa(['ledger', 'synth', '--workspace', ws]).status, 0)
  const text = readFileSync(join(ws, 'ledger', 'handoffs', 'current.md'), 'utf8')
  for (const line of ['> Create PR', '- forked', '- **wrapper**: bash -c', '- phase 5: validated', '- why?']) assert.ok(text.includes(line), text)
  assert.equal(loa(['ledger', 'synth', '--check', '--workspace', ws]).status, 0)
  assert.equal(loa(['ledger', 'event', '--agent', 'waffle', '--workspace', ws]).status, 0)
  const stale = loa(['ledger', 'synth', '--check', '--workspace', ws])
  assert.equal(stale.status, 1)
  assert.match(stale.stdout, /STALE \(2 event\(s\)/)
  assert.equal(loa(['ledger', 'event', '--workspace', ws]).status, 2, '--agent is required')
  assert.equal(loa(['ledger', 'synth', '--check', '--archive', '--workspace', ws]).status, 2)
})
