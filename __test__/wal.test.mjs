// The Wal API from JavaScript: round trips, ordering, bad input, torn tails, corruption,
// rotation, consolidation and retention, on real files.
import test from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync, readdirSync, existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { core, tempDir, runCli, nextMillisecond, WATCHDOG_MS } from './helpers.mjs'

const { Wal, readWal, verifyWal, consolidateWal, isLoaError } = core
const code = (expected) => (err) => isLoaError(err) && err.code === expected

test('append/appendSync/replay round-trip exact bytes, string data and meta', async (t) => {
  const dir = tempDir(t)
  const before = Date.now()
  const wal = Wal.open(dir, { sessionId: 'agent-1' })
  const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => 255 - i))
  assert.equal(await wal.append({ op: 'write', path: 'notes/a.md', data: bytes, meta: { tags: ['x'], n: 1 } }), 1)
  assert.equal(wal.appendSync({ op: 'write', path: 'b.md', data: 'héllo ✓' }), 2)
  assert.equal(await wal.append({ op: 'note', data: new Uint8Array([1, 2, 3]) }), 3)
  const records = wal.replay()
  assert.deepEqual(records.map((r) => r.seq), [1, 2, 3])
  assert.ok(records[0].data.equals(bytes))
  assert.deepEqual(records[0].meta, { tags: ['x'], n: 1 })
  assert.equal(records[1].data.toString('utf8'), 'héllo ✓')
  assert.equal(records[2].path, undefined)
  assert.equal(records[0].sessionId, 'agent-1')
  // Stamped with the wall clock while they were appended, however long that took.
  const after = Date.now()
  assert.ok(records.every((r) => r.ts >= before && r.ts <= after), JSON.stringify([before, records.map((r) => r.ts), after]))
  assert.deepEqual(wal.replay({ sinceSeq: 1, limit: 1 }).map((r) => r.seq), [2])
  const stats = wal.stats()
  assert.equal(stats.lastSeq, 3)
  assert.equal(stats.segments, 1)
  assert.equal(stats.sync, 'always')
  wal.close()
  wal.close()
  assert.equal(wal.closed, true)
  await assert.rejects(wal.append({ op: 'x' }), code('E_WAL_CLOSED'))
  assert.throws(() => wal.appendSync({ op: 'x' }), code('E_WAL_CLOSED'))
})

test('64 concurrent appends keep call order, share fsyncs and leave the event loop free', async (t) => {
  const dir = tempDir(t)
  const wal = Wal.open(dir, { sessionId: 's' })
  let ticks = 0
  let done = false
  const spin = () => {
    ticks++
    if (!done) setImmediate(spin)
  }
  setImmediate(spin)
  const promises = Array.from({ length: 500 }, (_, i) => wal.append({ op: 'write', path: 'p', data: String(i) }))
  const seqs = await Promise.all(promises)
  done = true
  assert.deepEqual(seqs, Array.from({ length: 500 }, (_, i) => i + 1))
  assert.deepEqual(wal.replay().map((r) => r.data.toString()), Array.from({ length: 500 }, (_, i) => String(i)))
  assert.ok(ticks > 0, 'the event loop ran while appends were in flight')
  wal.close()
})

test('bad input is a typed error and stores nothing', async (t) => {
  const dir = tempDir(t)
  const wal = Wal.open(dir, { sessionId: 's' })
  await wal.append({ op: 'write', path: 'keep.md', data: 'kept' })
  const cases = [
    [{ op: 42 }, 'E_INVALID_ARGUMENT'],
    [{}, 'E_INVALID_ARGUMENT'],
    ['not an object', 'E_INVALID_ARGUMENT'],
    [{ op: '' }, 'E_INVALID_ARGUMENT'],
    [{ op: 'write', path: '../escape' }, 'E_PATH_OUTSIDE_ROOT'],
    [{ op: 'write', path: '/etc/passwd' }, 'E_PATH_OUTSIDE_ROOT'],
    [{ op: 'write', data: 12 }, 'E_INVALID_ARGUMENT'],
    [{ op: 'write', meta: [1, 2] }, 'E_INVALID_ARGUMENT'],
    [{ op: 'write', meta: { n: NaN } }, 'E_INVALID_ARGUMENT'],
    [{ op: 'write', meta: { when: new Date() } }, 'E_INVALID_ARGUMENT'],
    [{ op: 'write', data: Buffer.alloc(9 * 1024 * 1024) }, 'E_TOO_LARGE'],
  ]
  for (const [record, expected] of cases) {
    await assert.rejects(wal.append(record), code(expected), JSON.stringify(record).slice(0, 80))
    assert.throws(() => wal.appendSync(record), code(expected))
  }
  assert.throws(() => Wal.open(dir, { sessionId: '../x' }), code('E_INVALID_ARGUMENT'))
  assert.throws(() => Wal.open(dir, { sync: 'sometimes' }), code('E_INVALID_ARGUMENT'))
  assert.throws(() => Wal.open(dir, { lockTimeoutMs: -1 }), code('E_INVALID_ARGUMENT'))
  assert.throws(() => Wal.open(42), code('E_INVALID_ARGUMENT'))
  assert.deepEqual(wal.replay().map((r) => r.data.toString()), ['kept'])
  assert.equal(await wal.append({ op: 'write', path: 'next.md' }), 2, 'no seq was spent on refused input')
  wal.close()
})

/** Appends `count` records and returns the segment path and the byte offset of each record. */
function writeRecords(dir, session, count) {
  const wal = Wal.open(dir, { sessionId: session })
  const offsets = []
  for (let i = 0; i < count; i++) {
    offsets.push(wal.stats().bytes)
    wal.appendSync({ op: 'write', path: `r${i}.md`, data: `record ${i} `.repeat(3) })
  }
  const segment = wal.stats().activeSegment
  wal.close()
  return { segment, offsets }
}

test('torn write: cutting the last record at every byte offset loses only that record', async (t) => {
  const dir = tempDir(t)
  const { segment, offsets } = writeRecords(dir, 's', 3)
  const full = readFileSync(segment)
  const lastStart = offsets[2]
  for (let cut = lastStart; cut < full.length; cut++) {
    writeFileSync(segment, full.subarray(0, cut))
    const verification = verifyWal(dir)
    assert.ok(verification.ok)
    assert.equal(verification.truncatedTails.length, cut > lastStart ? 1 : 0)
    const wal = Wal.open(dir, { sessionId: 's' })
    assert.deepEqual(wal.replay().map((r) => r.seq), [1, 2], `cut at ${cut}`)
    assert.equal(wal.stats().truncatedTail?.offset, cut > lastStart ? lastStart : undefined)
    assert.equal(statSync(segment).size, lastStart)
    assert.equal(wal.appendSync({ op: 'note' }), 3)
    wal.close()
  }
})

test('bit flip mid-log: E_WAL_CORRUPT with the location, nothing modified, loa wal verify exits 1', async (t) => {
  const dir = tempDir(t)
  const { segment, offsets } = writeRecords(dir, 's', 4)
  const bytes = readFileSync(segment)
  bytes[offsets[1] + 20] ^= 0x04
  writeFileSync(segment, bytes)

  for (const read of [() => readWal(dir), () => Wal.open(dir, { sessionId: 's' })]) {
    assert.throws(read, (err) => {
      assert.equal(err.code, 'E_WAL_CORRUPT')
      assert.equal(err.segment, segment)
      assert.equal(err.offset, offsets[1])
      assert.match(err.message, new RegExp(`at byte ${offsets[1]}`))
      return true
    })
  }
  const verification = verifyWal(dir)
  assert.equal(verification.ok, false)
  assert.deepEqual(verification.corrupt.map((c) => [c.segment, c.offset]), [[segment, offsets[1]]])
  assert.ok(readFileSync(segment).equals(bytes), 'reading did not modify the log')

  const cli = await runCli(['wal', 'verify', dir])
  assert.equal(cli.code, 1)
  assert.match(cli.stdout, /CORRUPT/)
  assert.match(cli.stdout, new RegExp(`at byte ${offsets[1]}`))
  const json = await runCli(['wal', 'verify', dir, '--json'])
  assert.equal(json.code, 1)
  assert.equal(JSON.parse(json.stdout).corrupt[0].offset, offsets[1])
})

test('rotation by size, consolidation last-write-wins with conflicts, retention after apply', async (t) => {
  const dir = tempDir(t)
  const target = tempDir(t)
  const a = Wal.open(dir, { sessionId: 'a', segmentMaxBytes: 4096 })
  const b = Wal.open(dir, { sessionId: 'b' })
  await a.append({ op: 'write', path: 'NOTES.md', data: 'from a' })
  await nextMillisecond()
  await b.append({ op: 'write', path: 'NOTES.md', data: 'from b, later' })
  await b.append({ op: 'write', path: 'doomed.md', data: 'x' })
  await b.append({ op: 'delete', path: 'doomed.md' })
  for (let i = 0; i < 12; i++) await a.append({ op: 'write', path: 'log/a.bin', data: Buffer.alloc(1000, i) })
  const segmentsBefore = a.stats().segments
  assert.ok(segmentsBefore >= 4, `rotated into ${segmentsBefore} segments`)

  const result = consolidateWal(dir, target)
  assert.equal(readFileSync(join(target, 'NOTES.md'), 'utf8'), 'from b, later')
  assert.ok(readFileSync(join(target, 'log/a.bin')).equals(Buffer.alloc(1000, 11)))
  assert.equal(existsSync(join(target, 'doomed.md')), false)
  assert.equal(result.records, 16)
  assert.equal(result.conflicts.length, 1)
  const [conflict] = result.conflicts
  assert.equal(conflict.path, 'NOTES.md')
  assert.equal(conflict.winner.sessionId, 'b')
  assert.equal(conflict.overwritten.sessionId, 'a')
  assert.match(conflict.overwritten.hash, /^[0-9a-f]{64}$/)
  const logged = readFileSync(join(dir, 'conflicts.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l))
  assert.deepEqual(logged, [conflict])

  // Retention: every sealed, applied segment of `a` is gone; the active one stays.
  assert.equal(result.prunedSegments, segmentsBefore - 1)
  assert.equal(a.stats().segments, 1)
  // Nothing unconsolidated is ever pruned, and seqs continue.
  const seq = await a.append({ op: 'write', path: 'NOTES.md', data: 'from a, latest' })
  assert.equal(seq, 14)
  const again = consolidateWal(dir, target)
  assert.equal(again.records, 1)
  assert.equal(readFileSync(join(target, 'NOTES.md'), 'utf8'), 'from a, latest')
  assert.deepEqual(readdirSync(target).sort(), ['NOTES.md', 'log'])
  a.close()
  b.close()
})

test('consolidation never writes through a symlink: such records are dead letters, the rest is applied', async (t) => {
  const dir = tempDir(t)
  const target = tempDir(t)
  const elsewhere = tempDir(t)
  const { symlinkSync } = await import('node:fs')
  symlinkSync(elsewhere, join(target, 'link'))
  const wal = Wal.open(dir, { sessionId: 's' })
  await wal.append({ op: 'write', path: 'link/evil.md', data: 'x' })
  await wal.append({ op: 'write', path: 'good.md', data: 'fine' })
  const result = consolidateWal(dir, target)
  assert.deepEqual(result.deadLetters.map((d) => [d.path, d.sessionId, d.seq, d.code]), [['link/evil.md', 's', 1, 'E_PATH_OUTSIDE_ROOT']])
  assert.equal(result.applied, 1)
  assert.equal(readFileSync(join(target, 'good.md'), 'utf8'), 'fine')
  assert.deepEqual(readdirSync(elsewhere), [])
  wal.close()
})

test('a path component over 255 bytes is refused at append; a record that cannot be applied never blocks consolidation', async (t) => {
  const dir = tempDir(t)
  const target = tempDir(t)
  const wal = Wal.open(dir, { sessionId: 's' })
  const long = 'n'.repeat(300)
  for (const path of [`notes/${long}`, long, 'a\0b', '', 'a//../../b']) {
    await assert.rejects(wal.append({ op: 'write', path, data: 'x' }), (err) => isLoaError(err) && ['E_INVALID_ARGUMENT', 'E_PATH_OUTSIDE_ROOT'].includes(err.code), JSON.stringify(path.slice(0, 20)))
  }
  await assert.rejects(wal.append({ op: 'write', path: `notes/${long}`, data: 'x' }), code('E_INVALID_ARGUMENT'))
  assert.equal(await wal.append({ op: 'write', path: `notes/${'n'.repeat(255)}`, data: 'longest name' }), 1)
  // A record whose target is a directory cannot be applied: dead letter, and the others go on.
  const { mkdirSync } = await import('node:fs')
  mkdirSync(join(target, 'blocked', 'child'), { recursive: true })
  await wal.append({ op: 'write', path: 'blocked', data: 'secret-ish payload', meta: { k: 'v' } })
  await wal.append({ op: 'write', path: 'after.md', data: 'after' })
  const first = consolidateWal(dir, target)
  assert.equal(first.applied, 2)
  assert.deepEqual(first.deadLetters.map((d) => [d.path, d.seq, d.code]), [['blocked', 2, 'E_NOT_REGULAR_FILE']])
  assert.ok(!JSON.stringify(first).includes('secret-ish'), 'the report carries no record data')
  assert.equal(readFileSync(join(target, 'after.md'), 'utf8'), 'after')
  assert.equal(readFileSync(join(target, 'notes', 'n'.repeat(255)), 'utf8'), 'longest name')
  const [letter] = readFileSync(join(dir, 'dead-letter.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l))
  assert.deepEqual(
    [letter.path, letter.sessionId, letter.seq, letter.code, Buffer.from(letter.dataHex, 'hex').toString(), letter.metaJson],
    ['blocked', 's', 2, 'E_NOT_REGULAR_FILE', 'secret-ish payload', '{"k":"v"}'],
  )
  // Handled: later runs go on without retrying it, for ever.
  await wal.append({ op: 'write', path: 'later.md', data: 'later' })
  const second = consolidateWal(dir, target)
  assert.deepEqual([second.records, second.applied, second.deadLetters.length], [1, 1, 0])
  assert.equal(readFileSync(join(target, 'later.md'), 'utf8'), 'later')
  wal.close()
})

test('an empty path is E_INVALID_ARGUMENT for every WAL entry point and writes nothing into the current directory', async (t) => {
  const cwd = tempDir(t)
  const other = tempDir(t)
  const { startChild, fixture } = await import('./helpers.mjs')
  const state = startChild(process.execPath, [fixture('hostile-probe.mjs'), JSON.stringify([
    ['open', '', { sessionId: 's' }],
    ['openAsync', '', { sessionId: 's' }],
    ['append', '', { sessionId: 's' }, { op: 'note' }],
    ['readWal', ''],
    ['verifyWal', ''],
    ['consolidateWal', '', other],
    ['consolidateWal', other, ''],
  ])], { cwd })
  const timer = setTimeout(() => state.child.kill('SIGKILL'), WATCHDOG_MS)
  await state.exited
  clearTimeout(timer)
  const results = JSON.parse(state.lines.find((l) => l.startsWith('RESULT ')).slice(7))
  assert.deepEqual(results.map((r) => r.code), Array(7).fill('E_INVALID_ARGUMENT'), JSON.stringify(results))
  assert.deepEqual(readdirSync(cwd), [], 'nothing was written into the current directory')
  assert.deepEqual(readdirSync(other), [])
})

test('loa wal dump and stats', async (t) => {
  const dir = tempDir(t)
  writeRecords(dir, 'cli', 2)
  const dump = await runCli(['wal', 'dump', dir, '--json', '--data'])
  assert.equal(dump.code, 0, dump.stderr)
  const records = JSON.parse(dump.stdout)
  assert.deepEqual(records.map((r) => [r.sessionId, r.seq, r.path]), [['cli', 1, 'r0.md'], ['cli', 2, 'r1.md']])
  assert.equal(records[0].data.text, 'record 0 '.repeat(3))
  const human = await runCli(['wal', 'dump', dir])
  assert.match(human.stdout, /cli#2 {2}write {2}r1\.md/)
  const stats = await runCli(['wal', 'stats', dir, '--json'])
  assert.equal(JSON.parse(stats.stdout).bySession.cli.lastSeq, 2)
  const help = await runCli(['--help'])
  assert.equal(help.code, 0)
  assert.match(help.stdout, /loa wal verify/)
  const bad = await runCli(['wal', 'explode', dir])
  assert.equal(bad.code, 2)
  // A WAL directory that is not there is a mistyped path, not an empty log (issue 11).
  const missing = await runCli(['wal', 'dump', join(dir, 'nope', 'x')])
  assert.equal(missing.code, 2)
  assert.match(missing.stderr, /^loa: E_IO: WAL directory .*: ENOENT\n$/)
})

test('a pending append keeps Node alive until it resolves; an idle Wal does not', async (t) => {
  const dir = tempDir(t)
  const { startChild, root } = await import('./helpers.mjs')
  const script = `
    const { Wal } = require(${JSON.stringify(join(root, 'index.js'))})
    const idle = Wal.open(${JSON.stringify(dir)}, { sessionId: 'idle' })
    const wal = Wal.open(${JSON.stringify(dir)}, { sessionId: 'busy' })
    for (let i = 0; i < 50; i++) wal.append({ op: 'note', data: 'x' + i }).then((seq) => seq === 50 && console.log('resolved', seq))`
  const child = startChild(process.execPath, ['-e', script])
  // A guard against a Wal keeping Node alive for ever; a loaded machine may take long to get
  // through the 50 appends, so a short one could fail a correct run.
  const timer = setTimeout(() => child.child.kill('SIGKILL'), WATCHDOG_MS)
  await child.exited
  clearTimeout(timer)
  assert.equal(child.exit.code, 0, `exited by itself: ${JSON.stringify(child.exit)} ${child.stderr}`)
  assert.deepEqual(child.lines.filter(Boolean), ['resolved 50'])
})
