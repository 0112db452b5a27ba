// Reading on a full or read-only disk (issue 32 item 4): `search`, `get`, `buildContext` and the
// CLI's read commands (`loa search`, `loa context`, `loa forget --query` without `--confirm`,
// `loa wal verify|stats`) keep working and write nothing. The loop-mounted ext4 tests (`loopfs.mjs`) need root and skip
// with the reason otherwise; the first test, a read-only store that creates nothing, runs
// everywhere (root ignores file modes, so an unwritable directory proves nothing here: what it
// checks is that nothing is created at all).
import test from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { core, runCli, tempDir } from './helpers.mjs'
import { loopfs } from './loopfs.mjs'

const { MemoryStore } = core

/** Every path below `dir` with its size: what a read must leave exactly as it was. */
function tree(dir) {
  const out = []
  const walk = (d) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name)
      const st = statSync(p)
      out.push(`${relative(dir, p)} ${st.isDirectory() ? 'dir' : st.size}`)
      if (st.isDirectory()) walk(p)
    }
  }
  walk(dir)
  return out
}

function workspaceIn(dir) {
  const ws = join(dir, 'ws')
  mkdirSync(ws)
  writeFileSync(join(ws, '.loa.config.yaml'), 'memory:\n  retry:\n    max_attempts: 1\n    backoff_base_ms: 1\n')
  return ws
}

const deployKey = { type: 'learning', confidence: 0.9, content: 'The deploy key rotates every Tuesday at noon' }

/** search, get and a query context of `store` all return the memory `id`. */
async function readsFind(store, id) {
  const found = await store.search('deploy key rotates')
  assert.deepEqual(
    found.hits.map((h) => h.id),
    [id],
  )
  assert.equal(store.get(id)?.content, deployKey.content)
  const built = await store.buildContext({ query: 'deploy key rotates' })
  assert.match(built.text, /deploy key rotates every Tuesday/)
}

/** `loa search`, `loa context`, a `loa forget --query` dry run, `loa wal verify` and `loa wal stats` work and change no file. */
async function cliReadsWork(ws, id) {
  const before = tree(ws)
  const search = await runCli(['search', 'deploy', 'key', 'rotates', '--workspace', ws, '--json'])
  assert.equal(search.code, 0, search.stderr)
  assert.deepEqual(
    JSON.parse(search.stdout).hits.map((h) => h.id),
    [id],
  )
  const context = await runCli(['context', '--workspace', ws])
  assert.equal(context.code, 0, context.stderr)
  const dryRun = await runCli(['forget', '--query', 'deploy key rotates', '--workspace', ws, '--json'])
  // A preview that found something exits 1 ("not done yet"), as a failed check does.
  assert.equal(dryRun.code, 1, dryRun.stderr)
  assert.deepEqual(
    JSON.parse(dryRun.stdout).matched.map((h) => h.id),
    [id],
  )
  for (const sub of ['verify', 'stats']) {
    const wal = await runCli(['wal', sub, join(ws, '.loa', 'wal'), '--json'])
    assert.equal(wal.code, 0, `loa wal ${sub}: ${wal.stderr}`)
  }
  assert.deepEqual(tree(ws), before, 'the read commands created or changed nothing (no `cli` session)')
}

test('a read-only store creates nothing, takes no session, reads memories still in the WAL and refuses writes with E_READ_ONLY', async (t) => {
  const ws = workspaceIn(tempDir(t))
  const writer = MemoryStore.open({ workspaceDir: ws, sessionId: 'agent-1' })
  const stored = await writer.capture(deployKey)
  // Still open (its WAL lock held): a read-only store opens beside it.
  const before = tree(ws)
  const reader = MemoryStore.open({ workspaceDir: ws, sessionId: 'agent-1', readOnly: true })
  await readsFind(reader, stored.id)
  assert.deepEqual(reader.recentSessions(5).map((s) => s.sessionId), ['agent-1'])
  for (const write of [
    () => reader.capture({ ...deployKey, content: 'Another fact about the staging cluster' }),
    () => reader.consolidate(),
    () => reader.forget({ id: stored.id }),
    () => reader.forget({ query: 'deploy key rotates', confirm: true }),
  ]) {
    await assert.rejects(async () => write(), (e) => e.code === 'E_READ_ONLY')
  }
  // A dry run only reads.
  assert.equal((await reader.forget({ query: 'deploy key rotates' })).applied, false)
  reader.close()
  // Compared before the writer closes: its close stamps what the index holds (the sources
  // stamp beside the index), a write of the writer's, not the reader's.
  const after = tree(ws)
  writer.close()
  assert.deepEqual(after.filter((l) => !l.startsWith('.loa/wal/sessions/agent-1/')), before.filter((l) => !l.startsWith('.loa/wal/sessions/agent-1/')))
  // A workspace no store ever opened: nothing is created in it.
  const empty = workspaceIn(tempDir(t))
  const none = MemoryStore.open({ workspaceDir: empty, sessionId: 'x', readOnly: true })
  assert.deepEqual((await none.search('anything')).hits, [])
  none.close()
  assert.deepEqual(tree(empty), ['.loa.config.yaml 60'])
})

test('loop-mounted ext4, disk full: after captures fail, search, get and buildContext of the same store work, and the CLI reads create nothing', { timeout: 300_000 }, async (t) => {
  const fs = loopfs(t)
  if (fs.skip) return t.skip(`no loop-mounted ext4 (${fs.skip})`)
  const ws = workspaceIn(fs.dir)
  const store = fs.hold(MemoryStore.open({ workspaceDir: ws, sessionId: 'agent-1' }))
  const stored = await store.capture(deployKey)
  fs.fill()
  // Small captures go on while the last blocks of the WAL segment and of the index log have
  // room; one may be stored while its index update is refused (the index then needs a repair
  // the disk refuses too). The first refused capture ends the loop: the disk is full.
  let refused = null
  for (let i = 0; i < 10_000 && !refused; i++) {
    try {
      await store.capture({ type: 'learning', confidence: 0.9, content: `Fact ${i}: the staging cluster has ${i} spare nodes` })
    } catch (e) {
      refused = e
    }
  }
  assert.equal(refused?.code, 'E_IO', `a capture was refused: ${refused?.message}`)
  await readsFind(store, stored.id)
  await cliReadsWork(ws, stored.id)
  fs.free()
})

test('loop-mounted ext4, read-only: a readOnly store and the CLI reads work; a writable open is E_IO EROFS and says to open read-only', { timeout: 300_000 }, async (t) => {
  const fs = loopfs(t)
  if (fs.skip) return t.skip(`no loop-mounted ext4 (${fs.skip})`)
  const ws = workspaceIn(fs.dir)
  const writer = MemoryStore.open({ workspaceDir: ws, sessionId: 'agent-1' })
  const stored = await writer.capture(deployKey)
  writer.close()
  fs.remountRo()
  assert.equal(fs.readOnly(), true)
  const reader = fs.hold(MemoryStore.open({ workspaceDir: ws, sessionId: 'agent-1', readOnly: true }))
  await readsFind(reader, stored.id)
  await assert.rejects(
    async () => MemoryStore.open({ workspaceDir: ws, sessionId: 'agent-1' }),
    (e) => e.code === 'E_IO' && e.osError === 'EROFS' && /readOnly: true/.test(e.message),
  )
  await cliReadsWork(ws, stored.id)
})

test('loop-mounted ext4 failing (turned read-only by an ext4 error): the open store reads on, and readOnly stores and the CLI reads work', { timeout: 300_000 }, async (t) => {
  const fs = loopfs(t)
  if (fs.skip) return t.skip(`no loop-mounted ext4 (${fs.skip})`)
  const ws = workspaceIn(fs.dir)
  const store = fs.hold(MemoryStore.open({ workspaceDir: ws, sessionId: 'agent-1' }))
  const stored = await store.capture(deployKey)
  fs.failReadOnly()
  assert.equal(fs.readOnly(), true)
  await assert.rejects(
    store.capture({ ...deployKey, content: 'Refused: the filesystem turned read-only' }),
    (e) => e.code === 'E_IO' && e.osError === 'EROFS',
  )
  await readsFind(store, stored.id)
  const reader = fs.hold(MemoryStore.open({ workspaceDir: ws, sessionId: 'agent-2', readOnly: true }))
  await readsFind(reader, stored.id)
  await cliReadsWork(ws, stored.id)
})
