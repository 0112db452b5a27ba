// Crash torture, full disk and cross-process locking, with real child processes killed by
// SIGKILL. These are the WAL's reason to exist: every acknowledged record survives.
import test from 'node:test'
import assert from 'node:assert/strict'
import { core, tempDir, startChild, waitForLine, fixture, recordData, rng, WATCHDOG_MS } from './helpers.mjs'

const { Wal, verifyWal, readWal, isLoaError } = core

function parseAcks(lines) {
  return lines.filter((l) => l.startsWith('ACK ')).map((l) => {
    const [, seq, writer, n] = l.split(' ')
    return { seq: Number(seq), writer, n: Number(n) }
  })
}

test('crash torture: SIGKILLed writers lose no acknowledged record and never reuse a seq', async (t) => {
  const dir = tempDir(t)
  const rounds = Number(process.env.LOA_CRASH_ROUNDS ?? 12)
  // Two writers share session "shared" (the second waits for the first's lock, and gets it when
  // the first is killed); the others have sessions of their own.
  const plan = [
    ['shared', 1],
    ['shared', 1],
    ['solo-a', 8],
    ['solo-b', 32],
  ]
  const acked = new Map() // session -> Map(seq -> expected data)
  // The kill moments are counted in acknowledgements, not milliseconds: a loaded machine slows
  // the writers down but cannot change what a round tests. Seeded, so a failure can be replayed.
  const pick = rng(Number(process.env.LOA_CRASH_SEED ?? 20261128))
  let writer = 0
  let totalAcks = 0
  for (let round = 0; round < rounds; round++) {
    const children = plan.map(([session, inFlight]) => {
      const id = String(writer++)
      const state = startChild(process.execPath, [fixture('wal-writer.mjs'), dir, session, id, '--in-flight', String(inFlight), '--segment-bytes', '8192'])
      return { session, id, state, acks: 3 + pick(48) }
    })
    // Kill each child at its own random moment, while it is busy appending: after it has
    // acknowledged a random number of records (at least 3, so that every round has something to
    // lose), with more appends in flight. The second writer of "shared" only opens its log once
    // the first is killed.
    try {
      await Promise.all(
        children.map(async ({ state, acks }) => {
          await waitForLine(state, (lines) => lines.filter((l) => l.startsWith('ACK ')).length >= acks)
          state.child.kill('SIGKILL')
          await state.exited
        }),
      )
    } finally {
      for (const { state } of children) state.child.kill('SIGKILL')
    }
    for (const { session, id, state } of children) {
      assert.equal(state.exit.signal, 'SIGKILL', `writer ${id} must have been killed, not crashed: ${state.stderr}`)
      const seqs = acked.get(session) ?? new Map()
      acked.set(session, seqs)
      for (const ack of parseAcks(state.lines)) {
        assert.equal(ack.writer, id)
        assert.ok(!seqs.has(ack.seq), `seq ${ack.seq} of ${session} acknowledged twice`)
        seqs.set(ack.seq, recordData(id, ack.n))
        totalAcks++
      }
    }
    // Reading never needs repair; a torn tail at most.
    const verification = verifyWal(dir)
    assert.ok(verification.ok, JSON.stringify(verification.corrupt))
    for (const [session, seqs] of acked) {
      const wal = Wal.open(dir, { sessionId: session })
      const records = wal.replay()
      const bySeq = new Map(records.map((r) => [r.seq, r]))
      assert.equal(bySeq.size, records.length, 'no seq repeats on disk')
      for (let i = 1; i < records.length; i++) assert.ok(records[i].seq > records[i - 1].seq)
      for (const [seq, data] of seqs) {
        const record = bySeq.get(seq)
        assert.ok(record, `round ${round}: acknowledged ${session}#${seq} is missing`)
        assert.ok(record.data.equals(data), `round ${round}: ${session}#${seq} differs`)
      }
      wal.close()
    }
  }
  assert.ok(totalAcks > rounds * 10, `writers made progress (${totalAcks} acks)`)
  // Appends continue after max(seq on disk).
  for (const session of acked.keys()) {
    const wal = Wal.open(dir, { sessionId: session })
    const last = wal.stats().lastSeq
    assert.equal(await wal.append({ op: 'write', path: 'after.txt', data: 'after' }), last + 1)
    wal.close()
  }
  assert.ok(verifyWal(dir).ok)
  assert.ok(readWal(dir).length >= totalAcks)
})

test('full disk: E_IO at the file size limit, and the log holds exactly the acknowledged records', async (t) => {
  const dir = tempDir(t)
  // `ulimit -f` (in 1 KiB blocks in bash) makes write() fail with EFBIG; Node ignores SIGXFSZ.
  const state = startChild('bash', ['-c', `ulimit -f 48 && exec "${process.execPath}" "${fixture('wal-writer.mjs')}" "${dir}" full 7 --until-error --segment-bytes 1048576`])
  await state.exited
  assert.equal(state.exit.code, 0, state.stderr)
  const err = state.lines.find((l) => l.startsWith('ERR '))
  assert.equal(err, 'ERR E_IO EFBIG')
  const acks = parseAcks(state.lines)
  assert.ok(acks.length > 10, `${acks.length} records fit before the limit`)

  const wal = Wal.open(dir, { sessionId: 'full' })
  const records = wal.replay()
  assert.deepEqual(records.map((r) => r.seq), acks.map((a) => a.seq))
  for (const [i, ack] of acks.entries()) assert.ok(records[i].data.equals(recordData('7', ack.n)))
  assert.equal(wal.stats().truncatedTail, undefined, 'the failed write was cut back before reopening')
  assert.equal(await wal.append({ op: 'write', path: 'x', data: 'room again' }), acks.at(-1).seq + 1)
  wal.close()
})

test('lock: a second process waits lockTimeoutMs then gets E_WAL_LOCKED; SIGKILL releases it', async (t) => {
  const dir = tempDir(t)
  const holder = startChild(process.execPath, [fixture('wal-holder.mjs'), dir, 'busy'])
  t.after(() => holder.child.kill('SIGKILL'))
  await waitForLine(holder, (lines) => lines.includes('READY'))

  // A monotonic clock (the lock's own): load only lengthens the wait, and a wall-clock step
  // cannot shorten it.
  const started = performance.now()
  assert.throws(
    () => Wal.open(dir, { sessionId: 'busy', lockTimeoutMs: 300 }),
    (err) => isLoaError(err) && err.code === 'E_WAL_LOCKED',
  )
  assert.ok(performance.now() - started >= 299, 'waited for the timeout before giving up')
  await assert.rejects(Wal.openAsync(dir, { sessionId: 'busy', lockTimeoutMs: 300 }), (err) => isLoaError(err) && err.code === 'E_WAL_LOCKED')
  Wal.open(dir, { sessionId: 'other-session', lockTimeoutMs: 0 }).close()

  // The async twin waits off the JS thread: while it waits, the event loop runs the callback
  // that kills the holder, and only that lets the open succeed (a wait that blocked the event
  // loop would instead end in E_WAL_LOCKED when the guard timeout runs out).
  const opening = Wal.openAsync(dir, { sessionId: 'busy', lockTimeoutMs: WATCHDOG_MS })
  let killedWhileWaiting = false
  setImmediate(() => {
    killedWhileWaiting = true
    holder.child.kill('SIGKILL')
  })
  const wal = await opening
  assert.ok(killedWhileWaiting, 'event loop ran while waiting')
  await holder.exited
  assert.equal(holder.exit.signal, 'SIGKILL', 'SIGKILL released the lock')
  assert.equal(await wal.append({ op: 'note' }), 1)
  wal.close()
})

test('readWal and verifyWal racing with consolidation and retention in another process never fail', async (t) => {
  const dir = tempDir(t)
  const target = tempDir(t)
  // The consolidator goes on until told that enough reads were made (its stdin ends), so every
  // read counted below raced with it, however slowly either process runs.
  const consolidator = startChild(process.execPath, [fixture('wal-consolidator.mjs'), dir, target, '40', '--until-stdin-ends'], { stdio: ['pipe', 'pipe', 'pipe'] })
  t.after(() => consolidator.child.kill('SIGKILL'))
  await waitForLine(consolidator, (lines) => lines.length > 0)
  const failures = []
  let reads = 0
  while (!consolidator.exit) {
    try {
      readWal(dir)
      const v = verifyWal(dir)
      if (!v.ok) failures.push(JSON.stringify(v.corrupt))
    } catch (err) {
      failures.push(`${err.code}: ${err.message}`)
    }
    reads++
    if (reads === 11) consolidator.child.stdin.end()
    // Let the child's output in between reads; the reads themselves are synchronous.
    await new Promise((r) => setImmediate(r))
  }
  assert.equal(consolidator.exit.code, 0, consolidator.stderr)
  assert.ok(consolidator.lines.includes('DONE'))
  const pruned = consolidator.lines.filter((l) => l.startsWith('ROUND ')).reduce((n, l) => n + Number(l.split(' ')[2]), 0)
  assert.ok(pruned > 100, `${pruned} segments pruned while reading`)
  assert.ok(reads > 10, `${reads} reads`)
  assert.deepEqual(failures, [], `${failures.length} of ${reads} reads failed`)
})

