// Expiry whoever holds which lock: a memory expires in the log of a session another process
// still has open (another chat). The sealed consolidation of this process succeeds, the grimoire
// verifies, the expired text is shown nowhere; the bytes leave the other log once it is free.
// And agent ids: identifiers kept exactly (never redacted), scoping exact, bad ones refused.
import test from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { core, root, tempDir } from './helpers.mjs'

const { MemoryStore } = core
const SECRET = 'The staging password is zorblax until the quintessence audit ends.'

/** Files under `dir` holding `needle` (symlinks not followed). */
function holders(dir, needle) {
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
  return hits.sort()
}

// The other chat: opens its session, captures a memory whose expiry has passed, says so, and
// holds the session (its WAL lock) until its stdin closes.
const CHILD = `
const core = require(process.env.LOA_CORE)
const store = core.MemoryStore.open({ workspaceDir: process.env.WS, sessionId: 'chat-b' })
const r = store.captureSync({ type: 'learning', content: process.env.SECRET, confidence: 0.9 }, { expiresAt: '2020-01-01T00:00:00Z' })
store.captureSync({ type: 'decision', content: 'Deploys go out on Tuesdays after the integration suite passes', confidence: 0.9 })
process.stdout.write('ready ' + r.id + '\\n')
process.stdin.resume()
process.stdin.on('end', () => { store.close(); process.exit(0) })
`

function startOtherChat(ws) {
  const child = spawn(process.execPath, ['-e', CHILD], {
    env: { ...process.env, LOA_CORE: join(root, 'index.js'), WS: ws, SECRET },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d))
  const exited = new Promise((resolve) => child.on('close', (code) => resolve(code)))
  const ready = new Promise((resolve, reject) => {
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (d) => {
      out += d
      const line = out.split('\n').find((l) => l.startsWith('ready '))
      if (line) resolve(line.slice(6))
    })
    exited.then((code) => reject(new Error(`the other chat exited (${code}) before it was ready: ${stderr}`)))
  })
  return { child, ready, exited, stderr: () => stderr }
}

test('a memory expiring in a session another process holds: the sealed consolidation succeeds and shows it nowhere', async (t) => {
  const dir = tempDir(t, 'loa-expiry-')
  const ws = join(dir, 'ws')
  mkdirSync(ws)
  const ring = core.KeyRing.open(join(dir, 'pinned-keys'))
  const key = ring.generate()
  const other = startOtherChat(ws)
  t.after(() => other.child.kill('SIGKILL'))
  const id = await other.ready

  const store = MemoryStore.open({ workspaceDir: ws, sessionId: 'chat-a' })
  t.after(() => store.close())
  store.captureSync({ type: 'decision', content: 'We chose Postgres for the event store because it is durable', confidence: 0.9 })
  const done = await store.consolidate(ring)
  assert.equal(done.expired, 1)
  assert.equal(done.pendingRemovals, 1)
  assert.equal(done.memories, 2)
  assert.equal(done.sealed.keyId, key.keyId)
  const grimoire = join(ws, 'grimoires', 'loa')
  assert.equal(core.verifyManifest(grimoire, core.readManifest(join(grimoire, 'manifest.json')), [key]).ok, true)
  const check = await core.recover({ workspaceDir: ws, trustedKeys: [key.publicKey], checkOnly: true })
  assert.equal(check.state, 'running')

  // Shown nowhere: NOTES.md, contexts with and without a query, sessions, learnings, search, get.
  assert.ok(readFileSync(join(grimoire, 'NOTES.md'), 'utf8').includes('Postgres'))
  assert.deepEqual(holders(grimoire, 'zorblax'), [])
  const shown = [
    store.buildContext().text,
    store.buildContext({ query: 'zorblax staging password' }).text,
    core.buildMemoryContext({ workspaceDir: ws }).text,
    JSON.stringify(store.recentSessions(50)),
    JSON.stringify(store.activeLearnings(50)),
    JSON.stringify(store.searchSync('zorblax staging password').hits),
  ].join('\n')
  assert.ok(!shown.includes('zorblax'))
  assert.equal(store.get(id), null)
  // Only the other chat's own log, which it holds, still has the bytes.
  assert.deepEqual(holders(ws, 'zorblax').map((p) => p.split('/').slice(0, 4).join('/')), ['.loa/wal/sessions/chat-b'])

  // The other chat's process dies (no close, so nothing of it runs); its lock goes with it, and
  // the next consolidation removes the bytes from its log.
  other.child.kill('SIGKILL')
  await other.exited
  const later = await store.consolidate(ring)
  assert.equal(later.pendingRemovals, 0)
  assert.deepEqual(holders(ws, 'zorblax'), [])
  assert.deepEqual(holders(ws, id), [])
  assert.equal(existsSync(join(ws, '.loa', 'wal', 'forget-pending.json')), false)
  assert.equal(core.verifyManifest(grimoire, core.readManifest(join(grimoire, 'manifest.json')), [key]).ok, true)
  assert.equal(core.verifyWal(join(ws, '.loa', 'wal')).ok, true)
})

test('the other chat closing removes what its log still owed, without another consolidation', async (t) => {
  const ws = tempDir(t, 'loa-expiry-')
  const other = startOtherChat(ws)
  t.after(() => other.child.kill('SIGKILL'))
  const id = await other.ready
  const done = await core.consolidateMemory({ workspaceDir: ws })
  assert.deepEqual([done.expired, done.pendingRemovals], [1, 1])
  assert.deepEqual(holders(ws, 'zorblax').map((p) => p.split('/').slice(0, 4).join('/')), ['.loa/wal/sessions/chat-b'])
  other.child.stdin.end()
  assert.equal(await other.exited, 0, other.stderr())
  assert.deepEqual(holders(ws, 'zorblax'), [])
  assert.deepEqual(holders(ws, id), [])
  assert.equal(existsSync(join(ws, '.loa', 'wal', 'forget-pending.json')), false)
  assert.equal(core.verifyWal(join(ws, '.loa', 'wal')).ok, true)
})

test('agent ids: e-mail-like and IP-like ids find and get their own memories, are never pooled, bad ones refused', async (t) => {
  const ws = tempDir(t)
  const store = MemoryStore.open({ workspaceDir: ws, sessionId: 's' })
  t.after(() => store.close())
  const agents = { 'alice@corp.example.com': 'amber', 'bob@corp.example.com': 'cobalt', '10.0.0.1': 'crimson', '10.0.0.2': 'olive' }
  const ids = {}
  for (const [agentId, word] of Object.entries(agents)) {
    const r = await store.capture({ type: 'learning', content: `The ${word} cache notes say keys expire hourly`, confidence: 0.9, agentId })
    assert.equal(r.accepted, true)
    assert.ok(!r.findings.some((f) => f.field === 'agentId'))
    ids[agentId] = r.id
  }
  for (const round of ['before', 'after']) {
    for (const [agentId, word] of Object.entries(agents)) {
      const hits = (await store.search('cache', { agentId })).hits
      assert.deepEqual(hits.map((h) => h.agentId), [agentId], `${agentId} ${round} consolidation`)
      assert.ok(hits[0].content.includes(word))
      assert.equal(store.get(ids[agentId], { agentId }).agentId, agentId)
      assert.ok(store.readMarkdown(hits[0].path, { agentId }).text.includes(word))
      for (const other of Object.keys(agents).filter((a) => a !== agentId)) {
        assert.equal(store.get(ids[other], { agentId }), null, `${agentId} does not see ${other}'s`)
        assert.equal(store.readMarkdown(hits[0].path, { agentId: other }), null)
      }
    }
    await store.consolidate()
  }
  const code = (c) => (err) => err.code === c && !String(err.message).includes('evil')
  for (const bad of ['', 'evil/x', '../evil', 'evil..x', 'evil\nx', '-evil', '[REDACTED:EMAIL]', 'é'.repeat(2), 'e'.repeat(129)]) {
    assert.throws(() => store.captureSync({ type: 'learning', content: 'The deploy checklist lives in the ops wiki', agentId: bad }), code('E_INVALID_ARGUMENT'), JSON.stringify(bad))
    assert.throws(() => store.searchSync('deploy', { agentId: bad }), code('E_INVALID_ARGUMENT'))
    assert.throws(() => store.get(ids['10.0.0.1'], { agentId: bad }), code('E_INVALID_ARGUMENT'))
    assert.throws(() => store.buildContext({ query: 'deploy', agentId: bad }), code('E_INVALID_ARGUMENT'))
  }
})
