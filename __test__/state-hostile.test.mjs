// The hostile filesystem, for every entry point of the signed and remembered state that takes a
// path: MemoryStore.open/openAsync (and what it reads and writes), buildMemoryContext,
// KeyRing.open, createManifest, verifyManifest, readManifest, writeManifest, AuditLog.open,
// verifyAuditLog and readSkillContextPolicy. Where a state file (or directory) belongs there is
// a symlink to a file, to a directory, a dangling one, a loop, a FIFO, a directory, /dev/zero;
// files grow while they are read. Every call runs in a child process with a timeout, so a hang
// fails the test instead of stopping the suite; every answer is a result or a coded error; and
// nothing outside the test's temp root changes.
import test from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { core, root, tempDir, WATCHDOG_MS } from './helpers.mjs'

const HAZARDS = ['symlink-file', 'symlink-dir', 'dangling', 'loop', 'fifo', 'dir', 'zero']

/** A temp root with `outside/` (a file and a directory that must never change) and `in/`. */
function arena(t) {
  const base = tempDir(t, 'loa-hostile-')
  const outside = join(base, 'outside')
  mkdirSync(join(outside, 'dir'), { recursive: true })
  writeFileSync(join(outside, 'file.txt'), '{"learnings":[],"version":1}\n# outside\nOUTSIDE-BYTES\n')
  mkdirSync(join(base, 'in'))
  return { base, outside, inside: join(base, 'in') }
}

/** Plants `hazard` at `path`. */
function plant(path, hazard, outside) {
  switch (hazard) {
    case 'symlink-file':
      return symlinkSync(join(outside, 'file.txt'), path)
    case 'symlink-dir':
      return symlinkSync(join(outside, 'dir'), path)
    case 'dangling':
      return symlinkSync(join(outside, 'missing'), path)
    case 'loop':
      symlinkSync(`${path}.loop`, path)
      return symlinkSync(path, `${path}.loop`)
    case 'fifo':
      return execFileSync('mkfifo', [path])
    case 'dir':
      return mkdirSync(path)
    case 'zero':
      return symlinkSync('/dev/zero', path)
  }
  throw new Error(`unknown hazard ${hazard}`)
}

/** Every entry under `dir` (not following symlinks): relative path -> type and content. */
function snapshot(dir) {
  const out = {}
  const walk = (d, prefix) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name)
      const s = lstatSync(p)
      const rel = prefix + name
      if (s.isDirectory()) {
        out[rel] = 'dir'
        walk(p, rel + '/')
      } else if (s.isSymbolicLink()) out[rel] = `link:${readlinkSync(p)}`
      else if (s.isFile()) out[rel] = readFileSync(p).toString('base64')
      else out[rel] = 'special'
    }
  }
  walk(dir, '')
  return out
}

const RUNNER = `
const core = require(${JSON.stringify(join(root, 'index.js'))})
const cases = JSON.parse(process.argv[1])
;(async () => {
  for (const c of cases) {
    let line
    try {
      const value = await (new Function('core', 'return (async () => { ' + c.body + ' })()'))(core)
      line = { name: c.name, ok: true, value: value === undefined ? null : value }
    } catch (err) {
      line = { name: c.name, ok: false, code: err && err.code, message: String(err && err.message) }
    }
    process.stdout.write(JSON.stringify(line) + '\\n')
  }
})()
`

/** Runs each `{ name, body }` (an async function body with `core` in scope) in one child process. */
function run(cases, timeoutMs = WATCHDOG_MS) {
  const r = spawnSync(process.execPath, ['-e', RUNNER, JSON.stringify(cases)], { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 << 20 })
  const results = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l))
  const done = new Set(results.map((x) => x.name))
  const hung = cases.filter((c) => !done.has(c.name)).map((c) => c.name)
  assert.deepEqual(hung, [], `hung or crashed (${r.signal ?? r.status}): ${r.stderr.slice(-2000)}`)
  return Object.fromEntries(results.map((x) => [x.name, x]))
}

const q = JSON.stringify

/** Asserts that every case answered `expected` (a code, or 'ok'). */
function expectAll(results, expected) {
  for (const [name, want] of Object.entries(expected)) {
    const got = results[name]
    const summary = got.ok ? 'ok' : got.code
    assert.equal(summary, want, `${name}: ${got.ok ? JSON.stringify(got.value).slice(0, 300) : got.message}`)
    if (!got.ok) assert.match(got.code ?? '', /^E_[A-Z_]+$/, `${name}: a coded error`)
  }
}

/** A child that appends to `path` as fast as it can (at most 256 MiB) until killed. */
function grow(t, path) {
  const child = spawn(process.execPath, ['-e', `const fs=require('fs');const fd=fs.openSync(${q(path)},'a');const b=Buffer.alloc(1<<16,120);for(let n=0;n<4096;n++)fs.writeSync(fd,b)`], { stdio: 'ignore' })
  t.after(() => child.kill('SIGKILL'))
  return child
}

test('MemoryStore: every hazard where NOTES.md, learnings.json, a record or the lock belongs', (t) => {
  const { base, outside, inside } = arena(t)
  const record = `memory/${'a'.repeat(64)}.json`
  const spots = { notes: 'grimoires/loa/NOTES.md', learnings: 'grimoires/loa/learnings.json', record: `grimoires/loa/${record}`, lock: '.loa/wal/memory-consolidate.lock' }
  const cases = []
  const expected = {}
  for (const [spot, rel] of Object.entries(spots)) {
    for (const hazard of HAZARDS) {
      const ws = join(inside, `${spot}-${hazard}`)
      mkdirSync(join(ws, 'grimoires/loa/memory'), { recursive: true })
      mkdirSync(join(ws, '.loa/wal'), { recursive: true })
      plant(join(ws, rel), hazard, outside)
      const name = `${spot}/${hazard}`
      cases.push({ name: `${name}/consolidate`, body: `
        const store = await core.MemoryStore.openAsync({ workspaceDir: ${q(ws)}, sessionId: 's' })
        try {
          await store.capture({ type: 'decision', content: 'A decision that reaches the notes in a hostile workspace' })
          await store.capture({ type: 'learning', content: 'A learning that reaches the store in a hostile workspace' })
          return await store.consolidate()
        } finally { store.close() }` })
      expected[`${name}/consolidate`] = 'E_NOT_REGULAR_FILE'
      cases.push({ name: `${name}/read`, body: `
        const store = core.MemoryStore.open({ workspaceDir: ${q(ws)}, sessionId: 'r' })
        try { return [store.recentSessions(5).length, store.activeLearnings(5).length] } finally { store.close() }` })
      expected[`${name}/read`] = spot === 'learnings' ? 'E_NOT_REGULAR_FILE' : 'ok'
      cases.push({ name: `${name}/context`, body: `return core.buildMemoryContext({ workspaceDir: ${q(ws)} }).tokens` })
      expected[`${name}/context`] = spot === 'learnings' ? 'E_NOT_REGULAR_FILE' : 'ok'
    }
  }
  const before = snapshot(outside)
  expectAll(run(cases), expected)
  assert.deepEqual(snapshot(outside), before, 'nothing outside changed')
  assert.deepEqual(readdirSync(base).sort(), ['in', 'outside'])
})

test('MemoryStore.open/openAsync, consolidateMemory and buildMemoryContext: hostile workspaces and directories', (t) => {
  const { outside, inside } = arena(t)
  const cases = []
  const expected = {}
  const open = (ws) => [
    ['open', `core.MemoryStore.open({ workspaceDir: ${q(ws)}, sessionId: 's' }).close()`],
    ['openAsync', `(await core.MemoryStore.openAsync({ workspaceDir: ${q(ws)}, sessionId: 's' })).close()`],
    ['consolidate', `return core.consolidateMemorySync({ workspaceDir: ${q(ws)} })`],
    ['context', `return core.buildMemoryContext({ workspaceDir: ${q(ws)} }).tokens`],
  ]
  // The workspace itself is the caller's choice: a symlink to a directory is followed; anything
  // that is not a directory is refused.
  for (const hazard of HAZARDS) {
    const ws = join(inside, `ws-${hazard}`)
    plant(ws, hazard, outside)
    for (const [what, body] of open(ws)) {
      cases.push({ name: `workspace ${hazard}/${what}`, body })
      expected[`workspace ${hazard}/${what}`] = hazard === 'symlink-dir' || hazard === 'dir' ? 'ok' : 'E_INVALID_ARGUMENT'
    }
  }
  // Directories below it are never followed, and nothing is created through them.
  for (const rel of ['grimoires', 'grimoires/loa', '.loa', '.loa/wal']) {
    for (const hazard of HAZARDS.filter((h) => h !== 'dir')) {
      const ws = join(inside, `${rel.replace(/[/.]/g, '_')}-${hazard}`)
      mkdirSync(join(ws, rel, '..'), { recursive: true })
      plant(join(ws, rel), hazard, outside)
      for (const [what, body] of open(ws)) {
        const name = `${rel} ${hazard}/${what}`
        cases.push({ name, body })
        // The view reads without creating: a missing part of the WAL path is no memory there.
        expected[name] = hazard === 'fifo' ? 'E_NOT_REGULAR_FILE' : 'E_PATH_OUTSIDE_ROOT'
      }
    }
  }
  // A regular file where a directory belongs.
  const ws = join(inside, 'file-grimoire')
  mkdirSync(ws)
  writeFileSync(join(ws, 'grimoires'), 'not a directory')
  for (const [what, body] of open(ws)) {
    cases.push({ name: `grimoires file/${what}`, body })
    expected[`grimoires file/${what}`] = 'E_IO' // ENOTDIR, as the OS says
  }
  const before = snapshot(outside)
  const results = run(cases)
  // A symlinked workspace that is itself `outside/dir` is the caller's choice: it was written to.
  const after = snapshot(outside)
  for (const key of Object.keys(after)) if (key.startsWith('dir/')) delete after[key]
  expectAll(results, expected)
  assert.deepEqual(after, before, 'nothing outside changed but the workspace the caller chose')
})

test('MemoryStore: read-only state files are replaced atomically; files that grow while read are bounded', async (t) => {
  const { outside, inside } = arena(t)
  const ws = join(inside, 'ro')
  mkdirSync(join(ws, 'grimoires/loa'), { recursive: true })
  writeFileSync(join(ws, 'grimoires/loa/NOTES.md'), '# Read-only notes\n')
  chmodSync(join(ws, 'grimoires/loa/NOTES.md'), 0o444)
  const growing = join(inside, 'growing')
  mkdirSync(join(growing, 'grimoires/loa'), { recursive: true })
  writeFileSync(join(growing, 'grimoires/loa/learnings.json'), '{"learnings":[')
  const consolidate = (dir) => `
    const store = core.MemoryStore.open({ workspaceDir: ${q(dir)}, sessionId: 's' })
    try { await store.capture({ type: 'decision', content: 'Decisions reach read-only and growing notes alike' }); return await store.consolidate() } finally { store.close() }`
  const appender = grow(t, join(growing, 'grimoires/loa/learnings.json'))
  const before = snapshot(outside)
  const results = run([
    { name: 'read-only', body: consolidate(ws) },
    { name: 'growing', body: consolidate(growing) },
  ])
  appender.kill('SIGKILL')
  assert.equal(results['read-only'].ok, true, results['read-only'].message)
  assert.match(readFileSync(join(ws, 'grimoires/loa/NOTES.md'), 'utf8'), /^# Read-only notes\n[^]*Decisions reach read-only/)
  assert.ok(['E_STATE_CORRUPT', 'E_TOO_LARGE'].includes(results.growing.code), JSON.stringify(results.growing))
  assert.deepEqual(snapshot(outside), before)
})

test('KeyRing: hazards where the lock, the registry, a private key or the directory belong', (t) => {
  const { outside, inside } = arena(t)
  const cases = []
  const expected = {}
  for (const hazard of HAZARDS) {
    for (const spot of ['.lock', 'keyring.json']) {
      const dir = join(inside, `${spot}-${hazard}`)
      mkdirSync(dir, { mode: 0o700 })
      plant(join(dir, spot), hazard, outside)
      const name = `${spot} ${hazard}`
      cases.push({ name: `${name}/generate`, body: `return core.KeyRing.open(${q(dir)}, { useEnv: false }).generate().status` })
      expected[`${name}/generate`] = 'E_NOT_REGULAR_FILE'
      if (spot === 'keyring.json') {
        cases.push({ name: `${name}/list`, body: `return core.KeyRing.open(${q(dir)}, { useEnv: false }).list()` })
        expected[`${name}/list`] = 'E_NOT_REGULAR_FILE'
      }
    }
    // The active key's private half replaced by the hazard.
    const dir = join(inside, `key-${hazard}`)
    const ring = core.KeyRing.open(dir, { useEnv: false })
    const key = ring.generate()
    execFileSync('rm', [join(dir, `${key.keyId}.key`)])
    plant(join(dir, `${key.keyId}.key`), hazard, outside)
    cases.push({ name: `key ${hazard}/sign`, body: `
      const ring = core.KeyRing.open(${q(dir)}, { useEnv: false })
      return core.signManifest(core.createManifest(${q(outside)}), ring).signature.keyId` })
    expected[`key ${hazard}/sign`] = 'E_NOT_REGULAR_FILE'
    cases.push({ name: `key ${hazard}/export`, body: `return core.KeyRing.open(${q(dir)}, { useEnv: false }).exportPrivateKey(${q(key.keyId)}).length` })
    expected[`key ${hazard}/export`] = 'E_NOT_REGULAR_FILE'
    // The ring's directory itself (the caller's choice): opening creates nothing, using it is coded.
    const ringDir = join(inside, `ringdir-${hazard}`)
    plant(ringDir, hazard, outside)
    cases.push({ name: `dir ${hazard}/list`, body: `return core.KeyRing.open(${q(ringDir)}, { useEnv: false }).list().length` })
    expected[`dir ${hazard}/list`] = ['symlink-dir', 'dir', 'dangling'].includes(hazard) ? 'ok' : 'E_IO'
  }
  const before = snapshot(outside)
  expectAll(run(cases), expected)
  assert.deepEqual(snapshot(outside), before, 'nothing outside changed')
})

test('createManifest and verifyManifest: hazards inside the root, a file that grows while hashed', async (t) => {
  const { outside, inside } = arena(t)
  const ring = core.KeyRing.open(join(inside, 'keys'), { useEnv: false })
  ring.generate()
  const cases = []
  const expected = {}
  const created = { 'symlink-file': 'E_PATH_OUTSIDE_ROOT', 'symlink-dir': 'E_PATH_OUTSIDE_ROOT', dangling: 'E_IO', loop: 'E_IO', fifo: 'E_NOT_REGULAR_FILE', dir: 'ok', zero: 'E_PATH_OUTSIDE_ROOT' }
  const verified = { 'symlink-file': 'path:x', 'symlink-dir': 'path:x', dangling: 'path:x', loop: 'path:x,path:x.loop', fifo: 'unexpected:x', dir: '', zero: 'path:x' }
  for (const hazard of HAZARDS) {
    const state = join(inside, `state-${hazard}`)
    mkdirSync(state)
    writeFileSync(join(state, 'NOTES.md'), '# notes\n')
    const signed = core.signManifest(core.createManifest(state), ring)
    plant(join(state, 'x'), hazard, outside)
    cases.push({ name: `${hazard}/create`, body: `return core.createManifest(${q(state)}).files.length` })
    expected[`${hazard}/create`] = created[hazard]
    cases.push({ name: `${hazard}/createAsync`, body: `return (await core.createManifestAsync(${q(state)})).files.length` })
    expected[`${hazard}/createAsync`] = created[hazard]
    cases.push({ name: `${hazard}/verify`, body: `
      const ring = core.KeyRing.open(${q(join(inside, 'keys'))}, { useEnv: false })
      const v = core.verifyManifest(${q(state)}, ${q(signed)}, ring)
      if (v.problems.map((p) => p.kind + ':' + p.path).join() !== ${q(verified[hazard])}) throw Object.assign(new Error(JSON.stringify(v.problems)), { code: 'E_WRONG' })` })
    expected[`${hazard}/verify`] = 'ok'
    // A listed file replaced by the hazard.
    const listed = join(inside, `listed-${hazard}`)
    mkdirSync(listed)
    writeFileSync(join(listed, 'NOTES.md'), '# notes\n')
    const listedSigned = core.signManifest(core.createManifest(listed), ring)
    execFileSync('rm', [join(listed, 'NOTES.md')])
    plant(join(listed, 'NOTES.md'), hazard, outside)
    cases.push({ name: `${hazard}/verify-listed`, body: `
      const ring = core.KeyRing.open(${q(join(inside, 'keys'))}, { useEnv: false })
      const v = await core.verifyManifestAsync(${q(listed)}, ${q(listedSigned)}, ring)
      if (v.ok || !v.problems.some((p) => p.path === 'NOTES.md') || v.problems.some((p) => !p.path.startsWith('NOTES.md'))) throw Object.assign(new Error(JSON.stringify(v.problems)), { code: 'E_WRONG' })` })
    expected[`${hazard}/verify-listed`] = 'ok'
    // The root itself.
    const rootHazard = join(inside, `root-${hazard}`)
    plant(rootHazard, hazard, outside)
    cases.push({ name: `root ${hazard}/create`, body: `return core.createManifest(${q(rootHazard)}).files.length` })
    expected[`root ${hazard}/create`] = ['symlink-dir', 'dir'].includes(hazard) ? 'ok' : hazard === 'dangling' || hazard === 'loop' ? 'E_IO' : 'E_INVALID_ARGUMENT'
  }
  const grown = join(inside, 'grown')
  mkdirSync(grown)
  writeFileSync(join(grown, 'big.log'), 'x'.repeat(1 << 20))
  const appender = grow(t, join(grown, 'big.log'))
  cases.push({ name: 'growing/create', body: `return core.createManifest(${q(grown)}).files[0].size > 0` })
  expected['growing/create'] = 'ok'
  const before = snapshot(outside)
  const results = run(cases)
  appender.kill('SIGKILL')
  // A symlinked root is the caller's choice: it was read, never written.
  expectAll(results, expected)
  assert.deepEqual(snapshot(outside), before, 'nothing outside changed')
})

test('readManifest and writeManifest: every hazard at the path, and read-only files', (t) => {
  const { outside, inside } = arena(t)
  const ring = core.KeyRing.open(join(inside, 'keys'), { useEnv: false })
  ring.generate()
  mkdirSync(join(inside, 'state'))
  const signed = core.signManifest(core.createManifest(join(inside, 'state')), ring)
  const cases = []
  const expected = {}
  for (const hazard of HAZARDS) {
    const path = join(inside, `manifest-${hazard}.json`)
    plant(path, hazard, outside)
    cases.push({ name: `${hazard}/read`, body: `return core.readManifest(${q(path)})` })
    cases.push({ name: `${hazard}/write`, body: `core.writeManifest(${q(path)}, ${q(signed)})` })
    expected[`${hazard}/read`] = 'E_NOT_REGULAR_FILE'
    expected[`${hazard}/write`] = 'E_NOT_REGULAR_FILE'
  }
  const readOnly = join(inside, 'read-only.json')
  core.writeManifest(readOnly, signed)
  chmodSync(readOnly, 0o444)
  cases.push({ name: 'read-only/write', body: `core.writeManifest(${q(readOnly)}, ${q({ ...signed, exclude: ['x'] })})` })
  cases.push({ name: 'read-only/read', body: `return core.readManifest(${q(readOnly)}).exclude` })
  cases.push({ name: 'missing/read', body: `return core.readManifest(${q(join(inside, 'nope.json'))})` })
  cases.push({ name: 'missing-dir/write', body: `core.writeManifest(${q(join(inside, 'nope', 'm.json'))}, ${q(signed)})` })
  Object.assign(expected, { 'read-only/write': 'ok', 'read-only/read': 'ok', 'missing/read': 'E_IO', 'missing-dir/write': 'E_IO' })
  const before = snapshot(outside)
  const results = run(cases)
  expectAll(results, expected)
  assert.deepEqual(results['read-only/read'].value, ['x'])
  assert.deepEqual(snapshot(outside), before, 'nothing outside changed')
})

test('AuditLog.open and verifyAuditLog: hazards where a segment, the lock or the checkpoint belong; a growing segment', (t) => {
  const { outside, inside } = arena(t)
  const cases = []
  const expected = {}
  for (const hazard of HAZARDS) {
    for (const spot of ['00000000000000000001.jsonl', '.lock', 'checkpoint.json']) {
      const dir = join(inside, `${spot}-${hazard}`)
      mkdirSync(dir)
      plant(join(dir, spot), hazard, outside)
      const name = `${spot} ${hazard}`
      cases.push({ name: `${name}/open`, body: `core.AuditLog.open(${q(dir)}).append({ action: 'x', actor: 'system' })` })
      expected[`${name}/open`] = 'E_NOT_REGULAR_FILE'
      cases.push({ name: `${name}/verify`, body: `
        const v = core.verifyAuditLog(${q(dir)})
        return v.problems.map((p) => p.kind)` })
      expected[`${name}/verify`] = 'ok'
    }
    // The directory itself (the caller's choice).
    const dir = join(inside, `auditdir-${hazard}`)
    plant(dir, hazard, outside)
    cases.push({ name: `dir ${hazard}/verify`, body: `return core.verifyAuditLog(${q(dir)}).ok` })
    expected[`dir ${hazard}/verify`] = ['symlink-dir', 'dir'].includes(hazard) ? 'ok' : 'E_IO'
  }
  const growing = join(inside, 'growing')
  const log = core.AuditLog.open(growing)
  log.append({ action: 'first', actor: 'system' })
  const appender = grow(t, join(growing, '00000000000000000001.jsonl'))
  cases.push({ name: 'growing/verify', body: `return core.verifyAuditLog(${q(growing)}).ok` })
  expected['growing/verify'] = 'ok'
  const before = snapshot(outside)
  const results = run(cases)
  appender.kill('SIGKILL')
  expectAll(results, expected)
  for (const hazard of HAZARDS) {
    assert.ok(results[`00000000000000000001.jsonl ${hazard}/verify`].value.includes('segment'), hazard)
    assert.deepEqual(results[`checkpoint.json ${hazard}/verify`].value, ['checkpoint'], hazard)
  }
  // Only the caller-chosen symlinked directory may have gained a log.
  const after = snapshot(outside)
  for (const key of Object.keys(after)) if (key.startsWith('dir/')) delete after[key]
  assert.deepEqual(after, before, 'nothing outside changed')
})

test('readSkillContextPolicy: every hazard at the path, and a SKILL.md that grows while read', (t) => {
  const { outside, inside } = arena(t)
  const cases = []
  const expected = {}
  for (const hazard of HAZARDS) {
    const path = join(inside, `SKILL-${hazard}.md`)
    plant(path, hazard, outside)
    cases.push({ name: hazard, body: `return core.readSkillContextPolicy(${q(path)})` })
    expected[hazard] = 'E_NOT_REGULAR_FILE'
  }
  const growing = join(inside, 'GROWING.md')
  writeFileSync(growing, '---\nname: growing\n---\n')
  const appender = grow(t, growing)
  cases.push({ name: 'growing', body: `return core.readSkillContextPolicy(${q(growing)})` })
  const before = snapshot(outside)
  const results = run(cases)
  appender.kill('SIGKILL')
  expectAll(results, expected)
  assert.ok(results.growing.ok || results.growing.code === 'E_TOO_LARGE', JSON.stringify(results.growing))
  assert.deepEqual(snapshot(outside), before)
})
