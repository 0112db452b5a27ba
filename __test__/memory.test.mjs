// The memory pipeline from JavaScript, on real files and real child processes: capture ->
// consolidate -> read back, idempotence, NOTES.md ownership, quarantine of corrupt state,
// concurrent sessions, the CLI, and (once the real redactor lands) nothing unredacted on disk.
import test from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync, readdirSync, statSync, lstatSync, mkdirSync, existsSync, symlinkSync, utimesSync } from 'node:fs'
import { join, relative } from 'node:path'
import { core, tempDir, startChild, waitForLine, fixture, runCli, needsRealRedactor } from './helpers.mjs'

const { MemoryStore, buildMemoryContext, consolidateMemory, consolidateMemorySync, contentHash, readWal, isLoaError } = core
const code = (expected) => (err) => isLoaError(err) && err.code === expected

/** Every file under `dir`: relative path -> bytes. */
function snapshot(dir) {
  const out = {}
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name)
      if (statSync(p).isDirectory()) walk(p)
      else out[relative(dir, p)] = readFileSync(p)
    }
  }
  walk(dir)
  return out
}

/** Regular files under `dir` (symlinks not followed) that contain `needle`. */
function onDiskRegular(dir, needle) {
  const hits = []
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name)
      const s = lstatSync(p)
      if (s.isDirectory()) walk(p)
      else if (s.isFile() && readFileSync(p).includes(Buffer.from(needle))) hits.push(relative(dir, p))
    }
  }
  walk(dir)
  return hits
}

/** True when any file under `dir` contains `needle` (as UTF-8 bytes). */
function onDisk(dir, needle) {
  return Object.entries(snapshot(dir)).filter(([, bytes]) => bytes.includes(Buffer.from(needle)))
}

test('capture -> consolidate -> read back', async (t) => {
  const ws = tempDir(t)
  const store = await MemoryStore.openAsync({ workspaceDir: ws, sessionId: 'agent-1' })
  t.after(() => store.close())
  assert.equal(store.sessionId, 'agent-1')

  const learning = await store.capture({ type: 'learning', content: 'The e2e suite needs Chrome 120 or newer', confidence: 0.9, tags: ['ci'], timestamp: '2026-03-01T09:00:00Z' })
  assert.equal(learning.accepted, true)
  assert.equal(learning.seq, 1)
  assert.equal(learning.id, contentHash('The e2e suite needs Chrome 120 or newer'))
  assert.deepEqual(learning.gates.map((g) => g.pass), [true, true, true, true, true, true])
  const decision = store.captureSync({ type: 'decision', content: 'Use SQLite for the local cache', confidence: 0.8, agentId: 'planner', timestamp: '2026-03-01T11:00:00+01:00' })
  assert.equal(decision.accepted, true)
  const instruction = await store.capture({ type: 'interaction', content: 'Never force-push to the release branch', confidence: 0.8, timestamp: '2026-03-01T10:30:00Z' })
  assert.ok(instruction.accepted && instruction.tags.includes('instruction'))
  const noise = await store.capture({ type: 'interaction', content: 'Thanks, sounds good!' })
  assert.equal(noise.accepted, false)
  assert.equal(noise.id, undefined)
  assert.match(noise.gates.find((g) => g.name === 'content').reason, /^filler/)
  const again = await store.capture({ type: 'learning', content: 'the e2e suite needs chrome 120 or newer.' })
  assert.equal(again.accepted, false, 'duplicate of a captured memory')

  const result = await store.consolidate()
  assert.deepEqual(result, { applied: 3, notesUpdated: true, learnings: 2, conflicts: 0, memories: 3, learningsTotal: 2, expired: 0, pendingRemovals: 0, rebuilt: true, refused: [] })

  const grimoire = join(ws, 'grimoires', 'loa')
  const record = JSON.parse(readFileSync(join(grimoire, 'memory', `${learning.id}.json`), 'utf8'))
  assert.equal(record.content, 'The e2e suite needs Chrome 120 or newer')
  assert.deepEqual(record.tags, ['ci'])
  const notes = readFileSync(join(grimoire, 'NOTES.md'), 'utf8')
  assert.match(notes, /^## Session Continuity$/m)
  assert.match(notes, /#### 2026-03-01T10:00:00\.000Z - Use SQLite for the local cache\n\*\*Decision\*\*: Use SQLite for the local cache\n/)
  assert.match(notes, /- \*\*`agent-1`\*\* · 2026-03-01T09:00:00\.000Z → 2026-03-01T10:30:00\.000Z · 3 memories \(decision 1, interaction 1, learning 1\)/)
  assert.equal(JSON.parse(readFileSync(join(grimoire, 'learnings.json'), 'utf8')).version, 2)
  const learnings = learningShards(grimoire).flatMap((text) => JSON.parse(text).learnings)
  assert.deepEqual(learnings.map((l) => l.content).sort(), ['Never force-push to the release branch', 'The e2e suite needs Chrome 120 or newer'])

  const active = store.activeLearnings(10)
  assert.deepEqual(active.map((l) => l.content), ['Never force-push to the release branch', 'The e2e suite needs Chrome 120 or newer'], 'by importance: the instruction boost (0.8 + 0.2) outranks 0.9')
  assert.equal(active[1].confidence, 0.9)
  assert.equal(store.activeLearnings(1).length, 1)
  const sessions = store.recentSessions(5)
  assert.equal(sessions.length, 1)
  assert.deepEqual(sessions[0].types, { decision: 1, interaction: 1, learning: 1 })
  assert.equal(sessions[0].latest[0], 'Never force-push to the release branch')
  assert.equal(sessions[0].source, 'memory')

  store.close()
  assert.equal(store.closed, true)
  await assert.rejects(store.capture({ type: 'learning', content: 'after close nothing is stored' }), code('E_WAL_CLOSED'))
})

test('captures are readable before consolidation, and sessions sort by instant, not by string', async (t) => {
  const ws = tempDir(t)
  const a = MemoryStore.open({ workspaceDir: ws, sessionId: 'early' })
  const b = MemoryStore.open({ workspaceDir: ws, sessionId: 'late' })
  t.after(() => (a.close(), b.close()))
  // "09:00-05:00" (14:00Z) is later than "12:00+00:00" although it sorts first as a string.
  await a.capture({ type: 'milestone', content: 'Milestone one of the migration is done', timestamp: '2026-05-01T12:00:00+00:00' })
  await b.capture({ type: 'milestone', content: 'Milestone two of the migration is done', timestamp: '2026-05-01T09:00:00-05:00' })
  assert.deepEqual(a.recentSessions(10).map((s) => s.sessionId), ['late', 'early'])
  assert.equal(b.recentSessions(10)[0].lastActiveAt, '2026-05-01T14:00:00.000Z')
})

test('a second consolidation changes nothing: byte-identical, derived files not even rewritten', async (t) => {
  const ws = tempDir(t)
  const store = MemoryStore.open({ workspaceDir: ws, sessionId: 's' })
  t.after(() => store.close())
  for (let i = 0; i < 5; i++) await store.capture({ type: i % 2 ? 'decision' : 'learning', content: `Idempotence check number ${i} for the pipeline` })
  await store.consolidate()
  const before = snapshot(ws)
  const notes = join(ws, 'grimoires/loa/NOTES.md')
  const learnings = join(ws, 'grimoires/loa/learnings.json')
  // Dated in the past rather than waiting for the clock to move on: a rewrite would date them
  // now (and give them new inodes), however fast it came.
  const past = new Date('2001-01-01T00:00:00Z')
  for (const f of [notes, learnings]) utimesSync(f, past, past)
  const stamps = () => [notes, learnings].map((f) => [statSync(f).mtimeMs, statSync(f).ino])
  const mtimes = stamps()
  assert.deepEqual(mtimes.map(([ms]) => ms), [past.getTime(), past.getTime()])
  const second = await store.consolidate()
  assert.deepEqual(second, { applied: 0, notesUpdated: false, learnings: 0, conflicts: 0, memories: 5, learningsTotal: 3, expired: 0, pendingRemovals: 0, rebuilt: false, refused: [] })
  assert.deepEqual(snapshot(ws), before)
  assert.deepEqual(stamps(), mtimes)
  assert.deepEqual(consolidateMemorySync({ workspaceDir: ws }), second)
})

const HUMAN_NOTES = `# Agent Working Memory (NOTES.md)

## Session Continuity
<!-- CRITICAL: Load this section FIRST after /clear (~100 tokens) -->

### Active Context
- **Current Bead**: bd-x7y8 (Implementing JWT refresh)
- **Reasoning State**: Validating token expiry edge cases   

### Lightweight Identifiers
| Identifier | Purpose | Last Verified |
|------------|---------|---------------|
| \${PROJECT_ROOT}/src/auth/jwt.ts:45-67 | Token validation logic | 14:25:00Z |

~~~markdown
## Decision Log
<!-- loa:begin decisions -->
an example inside a code fence: not a heading, not a region
<!-- loa:end decisions -->
~~~

### Decision Log
<!-- Decisions survive context wipes - permanent record -->

#### 2024-01-15T14:30:00Z - Token Expiry Handling
**Decision**: Use sliding window expiration with 15-minute grace period
**Evidence**:
- \`export function isTokenExpired(token: Token, graceMs = 900000)\` [\${PROJECT_ROOT}/src/auth/jwt.ts:52]

### Pending Questions
- [ ] Should grace period be configurable per-client?

## Active Sub-Goals
<!-- Current objectives being pursued -->

## Blockers & Dependencies
Ünïcödé and trailing spaces stay   
`

/** NOTES.md without the two regions the pipeline owns (a fenced example of them stays). */
function stripOwned(text) {
  const fenceStart = text.indexOf('~~~markdown')
  const fenceEnd = text.indexOf('~~~\n', fenceStart + 3)
  return text.replace(/<!-- loa:begin (sessions|decisions) -->\n[\s\S]*?<!-- loa:end \1 -->\n\n?/g, (m, name, offset) =>
    fenceStart !== -1 && offset > fenceStart && offset < fenceEnd ? m : '',
  )
}

test('NOTES.md: every section and byte the pipeline does not own is kept, across runs', async (t) => {
  const ws = tempDir(t)
  mkdirSync(join(ws, 'grimoires/loa'), { recursive: true })
  const path = join(ws, 'grimoires/loa/NOTES.md')
  writeFileSync(path, HUMAN_NOTES)
  const store = MemoryStore.open({ workspaceDir: ws, sessionId: 'notes' })
  t.after(() => store.close())
  await store.capture({ type: 'decision', content: 'Refresh tokens rotate on every use', confidence: 0.9 })
  await store.capture({ type: 'learning', content: 'Clock skew between pods reaches two seconds' })
  assert.equal((await store.consolidate()).notesUpdated, true)
  const first = readFileSync(path, 'utf8')
  assert.equal(stripOwned(first), HUMAN_NOTES)
  // Regions sit where their headings say: sessions before "### Active Context", decisions at the
  // end of the real Decision Log (after the human entry, before "### Pending Questions").
  assert.ok(first.indexOf('<!-- loa:begin sessions -->') < first.indexOf('### Active Context'))
  const decisions = first.lastIndexOf('<!-- loa:begin decisions -->')
  assert.ok(decisions > first.indexOf('[${PROJECT_ROOT}/src/auth/jwt.ts:52]') && decisions < first.indexOf('### Pending Questions'))
  assert.match(first, /<!-- loa:begin decisions -->\n#### \S+ - Refresh tokens rotate on every use\n/)

  // A human edits a foreign section between runs; more captures arrive.
  const edited = first.replace('- [ ] Should grace period', '- [x] Decided: no\n- [ ] Should grace period')
  writeFileSync(path, edited)
  await store.capture({ type: 'decision', content: 'Grace period stays fixed at fifteen minutes', confidence: 0.9 })
  await store.consolidate()
  const second = readFileSync(path, 'utf8')
  assert.equal(stripOwned(second), stripOwned(edited))
  assert.match(second, /Grace period stays fixed/)
  assert.equal((await store.consolidate()).notesUpdated, false)
})

test('a corrupt learnings.json is moved aside, reported with E_STATE_CORRUPT, and rebuilt: nothing lost', async (t) => {
  const ws = tempDir(t)
  const store = MemoryStore.open({ workspaceDir: ws, sessionId: 's' })
  t.after(() => store.close())
  await store.capture({ type: 'learning', content: 'Redis evicts keys with the LRU policy here' })
  await store.capture({ type: 'learning', content: 'The queue worker pool has eight workers' })
  await store.consolidate()
  const path = join(ws, 'grimoires/loa/learnings.json')
  const corrupt = readFileSync(path)
  corrupt[Math.floor(corrupt.length / 2)] = 0x00 // one bad byte
  writeFileSync(path, corrupt)

  assert.throws(() => store.activeLearnings(10), (err) => code('E_STATE_CORRUPT')(err) && err.path === path)
  assert.deepEqual(readFileSync(path), corrupt, 'a read never moves or rewrites it')
  await store.capture({ type: 'learning', content: 'A third learning arrives while it is corrupt' })
  const err = await store.consolidate().catch((e) => e)
  assert.ok(code('E_STATE_CORRUPT')(err), String(err))
  assert.equal(err.path, path)
  assert.equal(existsSync(path), false)
  const moved = readdirSync(join(ws, 'grimoires/loa')).filter((n) => n.startsWith('learnings.json.corrupt-'))
  assert.equal(moved.length, 1)
  assert.match(err.message, new RegExp(moved[0]))
  assert.deepEqual(readFileSync(join(ws, 'grimoires/loa', moved[0])), corrupt, 'the damaged bytes are kept for a human')

  const rebuilt = await store.consolidate()
  assert.equal(rebuilt.learningsTotal, 3)
  assert.equal(store.activeLearnings(10).length, 3)
})

test('two processes, different sessions, capture at once: nothing lost', async (t) => {
  const ws = tempDir(t)
  const writers = ['a', 'b'].map((w) => startChild(process.execPath, [fixture('memory-capturer.mjs'), ws, `session-${w}`, w, '25']))
  await Promise.all(writers.map((w) => w.exited))
  const acks = []
  for (const w of writers) {
    assert.equal(w.exit.code, 0, w.stderr)
    acks.push(...w.lines.filter((l) => l.startsWith('ACK ')).map((l) => l.split(' ')[1]))
  }
  assert.equal(acks.length, 50)
  const result = await consolidateMemory({ workspaceDir: ws })
  assert.equal(result.memories, 50)
  assert.equal(result.learningsTotal, 50)
  assert.equal(result.conflicts, 0)
  const stored = new Set(readdirSync(join(ws, 'grimoires/loa/memory')).map((n) => n.replace('.json', '')))
  for (const id of acks) assert.ok(stored.has(id), `acknowledged memory ${id} is stored`)
  const store = MemoryStore.open({ workspaceDir: ws, sessionId: 'reader' })
  t.after(() => store.close())
  assert.deepEqual(store.recentSessions(10).map((s) => [s.sessionId, s.memories]).sort(), [['session-a', 25], ['session-b', 25]])
})

test('two processes, same session: the second waits for the lock, then both are stored', async (t) => {
  const ws = tempDir(t)
  // The first holds the session until told to let go (its stdin ends), and is told only once
  // the second has started asking for it: a handshake, however slowly either process runs.
  const first = startChild(process.execPath, [fixture('memory-capturer.mjs'), ws, 'shared', 'one', '10', '--hold-until-stdin-ends'], { stdio: ['pipe', 'pipe', 'pipe'] })
  t.after(() => first.child.kill('SIGKILL'))
  await waitForLine(first, (lines) => lines.includes('HOLDING'))
  const second = startChild(process.execPath, [fixture('memory-capturer.mjs'), ws, 'shared', 'two', '10'])
  t.after(() => second.child.kill('SIGKILL'))
  await waitForLine(second, (lines) => lines.some((l) => l.startsWith('START ')))
  first.child.stdin.end()
  await Promise.all([first.exited, second.exited])
  assert.equal(first.exit.code, 0, first.stderr)
  assert.equal(second.exit.code, 0, second.stderr)
  // Nanoseconds of the system's monotonic clock, comparable between the two processes.
  const at = (w, tag) => BigInt(w.lines.find((l) => l.startsWith(tag + ' ')).split(' ')[1])
  assert.ok(at(second, 'START') < at(first, 'CLOSING'), 'the second asked for the session while the first held it')
  assert.ok(at(second, 'OPEN') >= at(first, 'CLOSING'), 'the second session handle opened only after the first let go')
  const seqs = [first, second].flatMap((w) => w.lines.filter((l) => l.startsWith('ACK ')).map((l) => Number(l.split(' ')[2])))
  assert.deepEqual(seqs.sort((x, y) => x - y), Array.from({ length: 20 }, (_, i) => i + 1), 'one log, seqs never reused')
  assert.equal((await consolidateMemory({ workspaceDir: ws })).memories, 20)
})

test('errors never carry the content, and a refused entry writes nothing', async (t) => {
  const ws = tempDir(t)
  const store = MemoryStore.open({ workspaceDir: ws, sessionId: 's' })
  t.after(() => store.close())
  const marker = 'PRIVATE-MARKER-7f3a'
  const attempts = [
    { type: 'learning', content: `x ${marker}`, confidence: 3 },
    { type: marker, content: `x ${marker}` },
    { type: 'learning', content: `x ${marker}`, timestamp: marker },
    { type: 'learning', content: `x ${marker}`, tags: [marker.repeat(40)] },
  ]
  for (const entry of attempts) {
    const err = await store.capture(entry).catch((e) => e)
    assert.ok(code('E_INVALID_ARGUMENT')(err), String(err))
    assert.ok(!err.message.includes(marker), err.message)
  }
  await assert.rejects(store.capture({ type: 'learning', content: 'x'.repeat(1024 * 1024 + 1) }), code('E_TOO_LARGE'))
  assert.deepEqual(onDisk(ws, marker), [])
  assert.equal(readWal(join(ws, '.loa/wal')).length, 0)
})

test('full disk: capture retries E_IO with backoff, then rejects without content; acknowledged memories survive', async (t) => {
  const ws = tempDir(t)
  writeFileSync(join(ws, '.loa.config.yaml'), 'memory:\n  retry:\n    max_attempts: 3\n    backoff_base_ms: 50\n')
  // `ulimit -f` (1 KiB blocks) makes write() fail with EFBIG; Node ignores SIGXFSZ.
  const child = startChild('bash', ['-c', `ulimit -f 64 && exec "${process.execPath}" "${fixture('memory-fill.mjs')}" "${ws}" fill`])
  await child.exited
  assert.equal(child.exit.code, 0, child.stderr)
  const acks = child.lines.filter((l) => l.startsWith('ACK ')).map((l) => l.split(' ')[1])
  const [, errCode, osError, ms, leaked] = child.lines.find((l) => l.startsWith('ERR ')).split(' ')
  assert.deepEqual([errCode, osError, leaked], ['E_IO', 'EFBIG', 'false'])
  assert.ok(Number(ms) >= 300, `two backoffs of 100 and 200 ms before giving up (took ${ms} ms)`)
  assert.ok(acks.length >= 3, `${acks.length} memories fit`)
  const result = await consolidateMemory({ workspaceDir: ws })
  assert.equal(result.memories, acks.length, 'exactly the acknowledged memories are stored')
  assert.deepEqual(onDisk(ws, `FILL-MARKER-${acks.length} `), [], 'the failed capture left nothing behind, in the WAL either')
})

test('options: directories inside the workspace only, gate overrides, config thresholds', async (t) => {
  const ws = tempDir(t)
  for (const grimoiresDir of ['../elsewhere', '/tmp']) {
    assert.throws(() => MemoryStore.open({ workspaceDir: ws, sessionId: 's', grimoiresDir }), code('E_PATH_OUTSIDE_ROOT'))
  }
  assert.throws(() => MemoryStore.open({ workspaceDir: ws, sessionId: '../x' }), code('E_INVALID_ARGUMENT'))
  assert.throws(() => MemoryStore.open({ workspaceDir: ws, sessionId: 's', gates: { minConfidence: 2 } }), code('E_INVALID_ARGUMENT'))
  const strict = MemoryStore.open({ workspaceDir: ws, sessionId: 'strict', gates: { minContentLength: 60 }, grimoiresDir: 'g', walDir: 'w' })
  t.after(() => strict.close())
  assert.equal((await strict.capture({ type: 'learning', content: 'Long enough for the defaults only' })).accepted, false)
  writeFileSync(join(ws, '.loa.config.yaml'), 'memory:\n  quality_gates:\n    min_confidence: 0.95\n')
  const configured = MemoryStore.open({ workspaceDir: ws, sessionId: 'configured' })
  t.after(() => configured.close())
  const r = await configured.capture({ type: 'learning', content: 'Config thresholds apply to captures', confidence: 0.9 })
  assert.equal(r.accepted, false)
  assert.match(r.gates.find((g) => g.name === 'confidence').reason, /below 0\.95/)
})

test('loa capture and loa consolidate, human and --json', async (t) => {
  const ws = tempDir(t)
  let r = await runCli(['capture', '--workspace', ws, '--type', 'learning', '--content', 'Cron jobs run in UTC on every host', '--tags', 'ops,time'])
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /^accepted [0-9a-f]{12} \(seq 1, score 0\.6, tags ops, time\)$/)
  r = await runCli(['capture', '--workspace', ws, '--session', 'cli-2', '--content', 'thanks!', '--json'])
  assert.equal(r.code, 1)
  const json = JSON.parse(r.stdout)
  assert.equal(json.accepted, false)
  assert.equal(json.gates.length, 6)
  r = await runCli(['capture', '--workspace', ws, '--type', 'decision', '--content', 'Keep cron in UTC', '--confidence', '2'])
  assert.equal(r.code, 2)
  assert.match(r.stderr, /E_INVALID_ARGUMENT/)
  r = await runCli(['consolidate', '--workspace', ws])
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /^applied 1 file\(s\); 1 memory; learnings 1 new or changed \(1 in all\); NOTES.md updated; 0 conflict\(s\)$/)
  r = await runCli(['consolidate', '--workspace', ws, '--json'])
  assert.deepEqual(JSON.parse(r.stdout), { applied: 0, notesUpdated: false, learnings: 0, conflicts: 0, memories: 1, learningsTotal: 1, expired: 0, pendingRemovals: 0, rebuilt: false, refused: [] })
  assert.ok(!existsSync(join(ws, '.loa/wal/sessions/cli-consolidate')), 'consolidating opens no session')
})

test('redaction: an e-mail address never reaches disk, in content, tags or metadata; an agent id is an identifier, kept as given', needsRealRedactor, async (t) => {
  const ws = tempDir(t)
  const email = 'jane.roe@example.org'
  const agentId = 'ops-bot@agents.example.net'
  const store = MemoryStore.open({ workspaceDir: ws, sessionId: 's', redaction: { key: 'test-key' } })
  t.after(() => store.close())
  const r = await store.capture({
    type: 'learning',
    content: `Invoices for the Roe account go to ${email} on the first of each month`,
    tags: [`owner:${email}`],
    agentId,
    metadata: { contact: email, nested: [{ cc: email }] },
  })
  assert.equal(r.accepted, true)
  assert.ok(r.findings.some((f) => f.field === 'content' && f.kind === 'email'))
  assert.ok(r.findings.some((f) => f.field.startsWith('metadata')))
  assert.ok(!r.findings.some((f) => f.field === 'agentId'), 'the agent id is not content')
  assert.ok(!JSON.stringify(r.findings).includes(email), 'findings never carry the value')
  assert.equal(store.get(r.id, { agentId }).agentId, agentId)
  await store.consolidate()
  store.close()
  assert.deepEqual(onDisk(ws, email).map(([p]) => p), [])
})

test('redaction: a private key blocks the entry; only fingerprints are audited', needsRealRedactor, async (t) => {
  const ws = tempDir(t)
  const body = 'MIIEowIBAAKCAQEAuW3nWgTY7xKp0bqZ5uX2cFf0u9fR8JdKz5yQ2VbN7sP0aL3mD4tE6hG8jI1kM'
  const key = `-----BEGIN RSA PRIVATE KEY-----\n${body}\n-----END RSA PRIVATE KEY-----`
  const store = MemoryStore.open({ workspaceDir: ws, sessionId: 's' })
  t.after(() => store.close())
  const r = await store.capture({ type: 'learning', content: `Deploy key for the build box:\n${key}` })
  assert.equal(r.blocked, true)
  assert.equal(r.accepted, false)
  assert.deepEqual(r.gates, [])
  assert.ok(r.findings.some((f) => f.kind === 'private_key'))
  await store.consolidate()
  store.close()
  assert.deepEqual(onDisk(ws, body.slice(0, 20)).map(([p]) => p), [])
  const audit = readWal(join(ws, '.loa/wal')).filter((rec) => rec.op === 'audit')
  assert.equal(audit.length, 1)
  assert.equal(audit[0].meta.event, 'memory_blocked')
  assert.deepEqual(audit[0].meta.findings.map((f) => f.fingerprint), r.findings.map((f) => f.fingerprint))
  assert.equal(readdirSync(join(ws, 'grimoires/loa')).includes('memory'), false, 'no memory stored')
})

test('NOTES.md and learnings.json are never read or written through a symlink', async (t) => {
  for (const name of ['NOTES.md', 'learnings.json']) {
    const dir = tempDir(t)
    const ws = join(dir, 'ws')
    const grimoire = join(ws, 'grimoires', 'loa')
    mkdirSync(grimoire, { recursive: true })
    const outside = join(dir, 'outside.txt')
    // What a reader following the symlink would take into the agent's context.
    const secret = name === 'NOTES.md'
      ? '# Private\n\n<!-- loa:begin sessions -->\n- **`outside-session`** · 2026-01-01T00:00:00.000Z → 2026-01-01T00:00:00.000Z · 1 memory (learning 1) · latest: OUTSIDE-SECRET\n<!-- loa:end sessions -->\n'
      : '{"learnings":[{"id":"x","content":"OUTSIDE-SECRET","importance":1}]}'
    writeFileSync(outside, secret)
    symlinkSync(outside, join(grimoire, name))
    const store = MemoryStore.open({ workspaceDir: ws, sessionId: 's' })
    t.after(() => store.close())
    await store.capture({ type: 'decision', content: 'Symlinked state files are refused, never followed' })
    if (name === 'learnings.json') {
      assert.throws(() => store.activeLearnings(5), code('E_NOT_REGULAR_FILE'))
      assert.throws(() => buildMemoryContext({ workspaceDir: ws }), code('E_NOT_REGULAR_FILE'))
    } else {
      assert.ok(store.recentSessions(5).every((s) => s.sessionId !== 'outside-session'))
      assert.ok(!(buildMemoryContext({ workspaceDir: ws }).text ?? '').includes('OUTSIDE-SECRET'), 'nothing from outside in the context')
    }
    await assert.rejects(store.consolidate(), code('E_NOT_REGULAR_FILE'), name)
    assert.throws(() => consolidateMemorySync({ workspaceDir: ws }), code('E_NOT_REGULAR_FILE'), name)
    assert.equal(readFileSync(outside, 'utf8'), secret, 'the target is untouched')
    assert.ok(lstatSync(join(grimoire, name)).isSymbolicLink())
    assert.deepEqual(onDiskRegular(ws, 'OUTSIDE-SECRET'), [], `${name}: nothing from outside was copied in`)
  }
})

test('a symlinked grimoire directory creates nothing outside the workspace', async (t) => {
  const dir = tempDir(t)
  const ws = join(dir, 'ws')
  const outside = join(dir, 'outside')
  mkdirSync(ws)
  mkdirSync(outside)
  symlinkSync(outside, join(ws, 'grimoires'))
  assert.throws(() => MemoryStore.open({ workspaceDir: ws, sessionId: 's' }), code('E_PATH_OUTSIDE_ROOT'))
  await assert.rejects(MemoryStore.openAsync({ workspaceDir: ws, sessionId: 's' }), code('E_PATH_OUTSIDE_ROOT'))
  assert.throws(() => consolidateMemorySync({ workspaceDir: ws }), code('E_PATH_OUTSIDE_ROOT'))
  assert.deepEqual(readdirSync(outside), [], 'no directory was created through the symlink')
})

test('NOTES.md ending in an unclosed code fence: one generated section, and a second run changes nothing', async (t) => {
  const ws = tempDir(t)
  const grimoire = join(ws, 'grimoires', 'loa')
  mkdirSync(grimoire, { recursive: true })
  const human = '# Notes\r\n\r\n## Session Continuity\r\n\r\n~~~js\r\nconst unclosed = true\r\n## Decision Log\r\n'
  writeFileSync(join(grimoire, 'NOTES.md'), human)
  const store = MemoryStore.open({ workspaceDir: ws, sessionId: 's' })
  t.after(() => store.close())
  await store.capture({ type: 'decision', content: 'Generated sections never land inside an open fence' })
  assert.equal((await store.consolidate()).notesUpdated, true)
  const first = readFileSync(join(grimoire, 'NOTES.md'))
  for (let i = 0; i < 3; i++) assert.equal((await store.consolidate()).notesUpdated, false)
  assert.deepEqual(readFileSync(join(grimoire, 'NOTES.md')), first)
  const text = first.toString('utf8')
  assert.equal(text.split('<!-- loa:begin decisions -->').length, 2)
  assert.ok(text.includes(human), 'the foreign text is kept')
  assert.equal(store.recentSessions(5)[0].sessionId, 's')
})

test('learnings.json from another tool: foreign values kept exactly, duplicate keys refused by path', async (t) => {
  const ws = tempDir(t)
  const grimoire = join(ws, 'grimoires', 'loa')
  mkdirSync(grimoire, { recursive: true })
  const path = join(grimoire, 'learnings.json')
  writeFileSync(path, '{"learnings":[{"id":"tool-1","content":"from a tool","rank":123456789012345678901234567890,"weight":1e400,"status":"active"}],"version":1}')
  const store = MemoryStore.open({ workspaceDir: ws, sessionId: 's' })
  t.after(() => store.close())
  await store.capture({ type: 'learning', content: 'Values another tool wrote are never rounded' })
  assert.equal((await store.consolidate()).learningsTotal, 2)
  // Migrated to version 2: the entries live in the shards, every foreign byte kept.
  const text = learningShards(grimoire).join('')
  assert.match(text, /"rank": 123456789012345678901234567890,/)
  assert.match(text, /"weight": 1e400/)
  assert.deepEqual(store.activeLearnings(5).map((l) => l.id).sort(), [contentHash('Values another tool wrote are never rounded'), 'tool-1'].sort())

  const duplicate = '{"learnings":[{"id":"tool-1","status":"retired","status":"active"}]}'
  writeFileSync(path, duplicate)
  await assert.rejects(store.consolidate(), (err) => code('E_STATE_CORRUPT')(err) && err.message.includes('`learnings[0].status`') && err.path === path)
  assert.throws(() => store.activeLearnings(5), code('E_STATE_CORRUPT'))
  assert.equal(readFileSync(path, 'utf8'), duplicate, 'left in place, unchanged')
  assert.deepEqual(readdirSync(grimoire).filter((n) => n.includes('corrupt')), [])
})

test('SIGKILL in the middle of rewriting NOTES.md: the old file stays whole, the temp file is cleaned and never tampering', async (t) => {
  const ws = tempDir(t)
  const grimoire = join(ws, 'grimoires', 'loa')
  mkdirSync(grimoire, { recursive: true })
  // Large enough that writing and fsyncing it takes a while.
  const foreign = '# Notes\n\n' + 'A line of foreign notes that the pipeline keeps as it is.\n'.repeat(140_000)
  writeFileSync(join(grimoire, 'NOTES.md'), foreign)
  const { createManifest, signManifest, verifyManifest, KeyRing } = core
  let temp = null
  for (let round = 0; round < 20 && !temp; round++) {
    const child = startChild(process.execPath, [fixture('notes-consolidator.mjs'), ws, `kill-${round}`])
    await waitForLine(child, (lines) => lines.includes('CONSOLIDATING'))
    // Until the temp file shows or the child is done (it always ends: no deadline needed).
    while (!temp && child.exit === null) {
      temp = readdirSync(grimoire).find((n) => n.startsWith('.NOTES.md.loa-tmp-')) ?? null
      if (!temp) await new Promise((r) => setImmediate(r))
    }
    if (temp) {
      child.child.kill('SIGKILL')
      await child.exited
      assert.equal(child.exit.signal, 'SIGKILL')
      if (!existsSync(join(grimoire, temp))) temp = null // renamed just before the kill: try again
    } else {
      await child.exited
    }
    // Put the foreign notes back, so that every round rewrites the same large file.
    if (!temp) writeFileSync(join(grimoire, 'NOTES.md'), foreign)
  }
  assert.ok(temp, 'caught a child in the middle of an atomic write')
  assert.equal(readFileSync(join(grimoire, 'NOTES.md'), 'utf8'), foreign, 'the old NOTES.md is whole')
  // A manifest neither covers the temp file nor calls it tampering.
  const ring = KeyRing.open(join(tempDir(t), 'keys'), { useEnv: false })
  ring.generate()
  const manifest = createManifest(grimoire)
  assert.ok(manifest.files.every((f) => !f.path.includes('loa-tmp')))
  writeFileSync(join(grimoire, `.learnings.json.loa-tmp-2147483646-0`), 'planted by a dead writer')
  const v = verifyManifest(grimoire, signManifest(manifest, ring), ring)
  assert.equal(v.ok, true, JSON.stringify(v.problems))
  assert.deepEqual(v.tempFiles.sort(), [temp, '.learnings.json.loa-tmp-2147483646-0'].sort())
  // The next consolidation, under the lock, removes what dead writers left.
  await consolidateMemory({ workspaceDir: ws })
  assert.deepEqual(readdirSync(grimoire).filter((n) => n.includes('loa-tmp')), [])
  assert.match(readFileSync(join(grimoire, 'NOTES.md'), 'utf8'), /Rewrite the notes in round/)
})

test('an unknown memory type is E_INVALID_ARGUMENT and never echoed', async (t) => {
  const store = MemoryStore.open({ workspaceDir: tempDir(t), sessionId: 's' })
  t.after(() => store.close())
  for (const type of ['note', 'LEARNING', '', 'hunter2-secret-type']) {
    await assert.rejects(store.capture({ type, content: 'A memory of an unknown kind is refused' }), (err) => code('E_INVALID_ARGUMENT')(err) && !err.message.includes('hunter2'))
  }
  const learning = store.captureSync({ type: 'learning', content: 'Kinds come back as the same strings' })
  assert.equal(store.activeLearnings(1)[0].type, 'learning', learning.id)
})

/** The texts of the learnings store's shards (version 2: `learnings.json.d/<xx>.json`). */
function learningShards(grimoire) {
  const dir = join(grimoire, 'learnings.json.d')
  return readdirSync(dir).sort().map((name) => readFileSync(join(dir, name), 'utf8'))
}
