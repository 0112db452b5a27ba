// The dead-letter queue from JavaScript: captures the disk refused are kept (redacted), replayed
// into the session they came from once the cause is gone, and stored exactly once, even when the
// replaying process is killed with SIGKILL half way.
import test from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { core, tempDir, startChild, root, runCli } from './helpers.mjs'

const { appendDeadLetter, appendDeadLetterSync, listDeadLetters, replayDeadLetters, replayDeadLettersSync, readWal, MemoryStore } = core

const queueFile = (ws) => join(ws, '.loa', 'dead-letter.jsonl')
const email = () => `sam.${randomBytes(3).toString('hex')}@example.com`

/** WAL records that carry a memory, per memory path. */
function memoryWrites(ws) {
  const counts = new Map()
  for (const r of readWal(join(ws, '.loa', 'wal'))) {
    if (r.op === 'write' && r.path?.startsWith('memory/')) counts.set(r.path, (counts.get(r.path) ?? 0) + 1)
  }
  return counts
}

function decision(content, extra = {}) {
  return { type: 'decision', content, confidence: 0.9, timestamp: '2026-01-02T10:00:00Z', ...extra }
}

test('a capture the disk refused is dead-lettered redacted, stays while the cause stays, then is stored exactly once', async (t) => {
  const ws = tempDir(t)
  const address = email()
  const entry = decision(`We always send the invoice to ${address} on the first of the month`)
  // A real failure: a file where the WAL directory belongs.
  mkdirSync(join(ws, '.loa'))
  writeFileSync(join(ws, '.loa', 'wal'), 'not a directory')
  const failure = await MemoryStore.openAsync({ workspaceDir: ws, sessionId: 'agent-1' }).then(
    () => assert.fail('the store opened over a file'),
    (err) => err,
  )
  assert.equal(failure.code, 'E_IO')

  const letter = await appendDeadLetter({ workspaceDir: ws }, { sessionId: 'agent-1', entry, attempts: 3, error: failure })
  assert.equal(letter.attempts, 3)
  assert.equal(letter.error.code, 'E_IO')
  assert.match(letter.entry.content, /\[REDACTED:EMAIL\]/)
  assert.equal(letter.id.length, 64)
  assert.ok(!readFileSync(queueFile(ws), 'utf8').includes(address), 'the queue holds the planted address')

  const listed = listDeadLetters({ workspaceDir: ws })
  assert.equal(listed.path, queueFile(ws))
  assert.deepEqual(listed.letters.map((l) => l.id), [letter.id])
  assert.deepEqual(listed.unreadable, [])

  const stillBroken = await replayDeadLetters({ workspaceDir: ws })
  assert.equal(stillBroken.failed, 1)
  assert.equal(stillBroken.remaining, 1)
  assert.equal(stillBroken.results[0].outcome, 'failed')
  assert.equal(stillBroken.results[0].attempts, 4)
  assert.equal(listDeadLetters({ workspaceDir: ws }).letters[0].attempts, 4)

  rmSync(join(ws, '.loa', 'wal'))
  const replayed = await replayDeadLetters({ workspaceDir: ws })
  assert.equal(replayed.stored, 1, JSON.stringify(replayed))
  assert.equal(replayed.remaining, 0)
  assert.equal(replayed.results[0].sessionId, 'agent-1')
  assert.equal(typeof replayed.results[0].memoryId, 'string')
  assert.ok(!existsSync(queueFile(ws)))
  assert.deepEqual([...memoryWrites(ws).values()], [1])

  const again = replayDeadLettersSync({ workspaceDir: ws })
  assert.deepEqual([again.stored, again.duplicates, again.remaining, again.results.length], [0, 0, 0, 0])
  assert.deepEqual([...memoryWrites(ws).values()], [1])

  const store = MemoryStore.open({ workspaceDir: ws, sessionId: 'reader' })
  t.after(() => store.close())
  assert.match(store.buildContext({ budget: 500 }).text, /invoice/)
})

test('a capture that landed after all is answered duplicate, never stored twice', async (t) => {
  const ws = tempDir(t)
  const entry = decision(`Mail the weekly report to ${email()} every Friday`)
  const store = await MemoryStore.openAsync({ workspaceDir: ws, sessionId: 's1' })
  assert.equal((await store.capture(entry)).accepted, true)
  store.close()
  appendDeadLetterSync({ workspaceDir: ws }, { sessionId: 's1', entry, error: { code: 'E_IO', message: 'fsync failed' } })
  const replay = await replayDeadLetters({ workspaceDir: ws })
  assert.equal(replay.duplicates, 1, JSON.stringify(replay))
  assert.deepEqual(replay.results[0].failedGates, ['duplicate'])
  assert.deepEqual([...memoryWrites(ws).values()], [1])
})

test('bad arguments get coded errors that carry no content', async (t) => {
  const ws = tempDir(t)
  const secret = email()
  const cases = [
    [{ workspaceDir: ws }, { sessionId: '../x', entry: decision(`mail ${secret}`) }, 'E_INVALID_ARGUMENT'],
    [{ workspaceDir: ws }, { sessionId: 's', entry: decision(`mail ${secret}`, { type: secret }) }, 'E_INVALID_ARGUMENT'],
    [{ workspaceDir: ws }, { sessionId: 's' }, 'E_INVALID_ARGUMENT'],
    [{ workspaceDir: join(ws, 'missing') }, { sessionId: 's', entry: decision(`mail ${secret}`) }, 'E_IO'],
    [{}, { sessionId: 's', entry: decision(`mail ${secret}`) }, 'E_INVALID_ARGUMENT'],
  ]
  for (const [options, letter, code] of cases) {
    const err = await appendDeadLetter(options, letter).then(() => null, (e) => e)
    assert.equal(err?.code, code, JSON.stringify(letter))
    assert.ok(!err.message.includes(secret), err.message)
    assert.throws(() => appendDeadLetterSync(options, letter), (e) => e.code === code && !e.message.includes(secret))
  }
  assert.throws(() => listDeadLetters({ workspaceDir: 5 }), { code: 'E_INVALID_ARGUMENT' })
  const err = await replayDeadLetters({ workspaceDir: ws, gates: { minConfidence: 'high' } }).then(() => null, (e) => e)
  assert.equal(err?.code, 'E_INVALID_ARGUMENT')
  assert.ok(!existsSync(queueFile(ws)))
})

test('a symlink or FIFO where the queue belongs is refused, never followed and never hangs', { timeout: 30_000 }, async (t) => {
  const ws = tempDir(t)
  const outside = tempDir(t)
  mkdirSync(join(ws, '.loa'))
  writeFileSync(join(outside, 'victim'), 'keep me')
  symlinkSync(join(outside, 'victim'), queueFile(ws))
  const letter = { sessionId: 's', entry: decision('We decided to deploy on Fridays after the standup') }
  await assert.rejects(appendDeadLetter({ workspaceDir: ws }, letter), { code: 'E_NOT_REGULAR_FILE' })
  assert.throws(() => listDeadLetters({ workspaceDir: ws }), { code: 'E_NOT_REGULAR_FILE' })
  assert.equal(readFileSync(join(outside, 'victim'), 'utf8'), 'keep me')
  rmSync(queueFile(ws))
  execFileSync('mkfifo', [queueFile(ws)])
  assert.throws(() => listDeadLetters({ workspaceDir: ws }), { code: 'E_NOT_REGULAR_FILE' })
  await assert.rejects(replayDeadLetters({ workspaceDir: ws }), { code: 'E_NOT_REGULAR_FILE' })
})

test('SIGKILL during replay never loses nor duplicates a letter', { timeout: 300_000 }, async (t) => {
  const ws = tempDir(t)
  const total = Number(process.env.LOA_DEAD_LETTER_TOTAL ?? 120)
  const expected = new Set()
  for (let i = 0; i < total; i++) {
    const content = `We decided that service ${i} rotates its keys every Monday at 0${i % 10}:00`
    expected.add(content)
    appendDeadLetterSync({ workspaceDir: ws }, { sessionId: `agent-${i % 3}`, entry: decision(content), error: { code: 'E_IO', message: 'disk full' } })
  }
  const script = `require(${JSON.stringify(join(root, 'index.js'))}).replayDeadLettersSync({ workspaceDir: ${JSON.stringify(ws)} }); console.log('DONE')`
  let kills = 0
  let duplicates = 0
  for (let round = 0; round < 20 && existsSync(queueFile(ws)); round++) {
    const before = [...memoryWrites(ws).values()].reduce((a, b) => a + b, 0)
    const child = startChild(process.execPath, ['-e', script])
    // Kill it once it has stored something more, while the queue still lists what it stored.
    const deadline = Date.now() + 60_000
    while (!child.exit && Date.now() < deadline) {
      let now = before
      try {
        now = [...memoryWrites(ws).values()].reduce((a, b) => a + b, 0)
      } catch {
        // A segment being written can be read half way; try again.
      }
      if (now >= before + 1 + (round % 5) * 7) break
      await new Promise((r) => setTimeout(r, 2))
    }
    if (!child.exit) {
      child.child.kill('SIGKILL')
      kills++
    }
    const exit = await child.exited
    assert.ok(exit.signal === 'SIGKILL' || exit.code === 0, `${JSON.stringify(exit)} ${child.stderr}`)
    // What is in the queue plus what is stored is everything, always.
    const stored = memoryWrites(ws)
    assert.ok([...stored.values()].every((n) => n === 1), 'a memory was stored twice')
    const queued = existsSync(queueFile(ws)) ? listDeadLetters({ workspaceDir: ws }).letters.length : 0
    assert.ok(queued + stored.size >= total, `lost: ${total - queued - stored.size}`)
    if (existsSync(queueFile(ws))) {
      // The next replay meets letters whose memory a killed replay already stored.
      const peek = listDeadLetters({ workspaceDir: ws }).letters.length
      duplicates += Math.max(0, peek + stored.size - total)
    }
  }
  const last = replayDeadLettersSync({ workspaceDir: ws })
  assert.equal(last.remaining, 0)
  assert.ok(kills > 0, 'no replay was ever killed: the test proved nothing')
  assert.ok(duplicates > 0, 'no kill fell between storing and rewriting the queue')
  const stored = memoryWrites(ws)
  assert.equal(stored.size, total)
  assert.ok([...stored.values()].every((n) => n === 1))
  const store = MemoryStore.open({ workspaceDir: ws, sessionId: 'check' })
  t.after(() => store.close())
  await store.consolidate()
  const memories = readMemories(ws)
  assert.deepEqual(new Set(memories), expected)
})

/** Contents of the consolidated memory records. */
function readMemories(ws) {
  const dir = join(ws, 'grimoires', 'loa', 'memory')
  return readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')).content)
}

test('deadLetterDir keeps the queue elsewhere (absolute, or below the workspace without symlinks), and `loa dead-letter --dir` reads and replays it', async (t) => {
  const ws = tempDir(t)
  const elsewhere = tempDir(t, 'loa-letters-')
  const address = email()
  const far = join(elsewhere, 'letters')
  const letter = (i) => ({ sessionId: 'agent-1', entry: decision(`Decision ${i}: we deploy the ${i}th service from ${address} on Tuesdays`), attempts: 3 })
  await appendDeadLetter({ workspaceDir: ws, deadLetterDir: far }, letter(1))
  appendDeadLetterSync({ workspaceDir: ws, deadLetterDir: 'state/letters' }, letter(2))
  assert.equal(existsSync(queueFile(ws)), false)
  assert.equal(listDeadLetters({ workspaceDir: ws, deadLetterDir: far }).path, join(far, 'dead-letter.jsonl'))
  assert.ok(!readFileSync(join(far, 'dead-letter.jsonl'), 'utf8').includes(address), 'redacted')
  assert.equal(listDeadLetters({ workspaceDir: ws, deadLetterDir: 'state/letters' }).letters.length, 1)
  // A relative deadLetterDir never goes through a symlink, nor out of the workspace.
  symlinkSync(elsewhere, join(ws, 'link'))
  for (const deadLetterDir of ['link/letters', '../letters']) {
    assert.throws(() => appendDeadLetterSync({ workspaceDir: ws, deadLetterDir }, letter(3)), { code: 'E_PATH_OUTSIDE_ROOT' })
  }
  const listed = await runCli(['dead-letter', 'list', '--workspace', ws, '--dir', far, '--json'])
  assert.equal(listed.code, 0, listed.stderr)
  assert.equal(JSON.parse(listed.stdout).letters.length, 1)
  const replayed = await runCli(['dead-letter', 'replay', '--workspace', ws, '--dir', far, '--json'])
  assert.equal(replayed.code, 0, replayed.stderr)
  assert.equal(JSON.parse(replayed.stdout).stored, 1)
  assert.equal((await replayDeadLetters({ workspaceDir: ws, deadLetterDir: 'state/letters' })).stored, 1)
  assert.equal(replayDeadLettersSync({ workspaceDir: ws, deadLetterDir: far }).results.length, 0)
  assert.deepEqual([...memoryWrites(ws).values()], [1, 1], 'each stored exactly once')
})
