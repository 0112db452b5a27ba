// recover / generateSoul / heal through the binding, on real files, a real mount directory and a
// real bare git repository (the `git` binary): tampered state never ends `running`, check-only
// writes nothing, loop detection ends degraded, bad options are one coded error.
import test from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync, readdirSync, lstatSync, writeFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { core, signDir, signedWorkspace, tempDir } from './helpers.mjs'

const NOTES = '# NOTES\n\n## Decision Log\n- kept\n'
const BEAUVOIR = '# BEAUVOIR\n\n## Identity\n\nI am Beauvoir, a careful assistant.\n\n## Core Principles\n\n1. **Honesty** - say what is known\n\n## Boundaries\n\n- never guess\n'

// The recovery window and attempts come from the environment when set: these tests set their own.
delete process.env.LOA_RECOVERY_WINDOW_MS
delete process.env.LOA_RECOVERY_MAX_ATTEMPTS

/** Every file under `dir` with its bytes (symlinks as their kind), for "nothing was written". */
function snapshot(dir) {
  const out = {}
  const walk = (d, rel) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name)
      const r = rel ? `${rel}/${name}` : name
      const st = lstatSync(p)
      if (st.isDirectory()) {
        out[r + '/'] = 'dir'
        walk(p, r)
      } else out[r] = st.isFile() ? readFileSync(p, 'hex') : 'other'
    }
  }
  walk(dir, '')
  return out
}

/** A signed workspace, the pinned key outside it, a mount copy and a bare git remote. */
function fixture(t) {
  const { dir, ring, key, ws, grimoire, mount, bare } = signedWorkspace(t, 'loa-recovery-', { 'NOTES.md': NOTES, 'BEAUVOIR.md': BEAUVOIR })
  const options = (extra = {}) => ({
    workspaceDir: ws,
    trustedKeys: [key.publicKey],
    mountDir: mount,
    git: { remote: bare, branch: 'main', path: 'grimoires/loa' },
    ...extra,
  })
  return { dir, ring, key, ws, grimoire, mount, bare, options }
}

test('a grimoire that verifies runs, signed (async and sync; KeyInfo[] and hex pins)', async (t) => {
  const f = fixture(t)
  const r = await core.recover(f.options())
  assert.equal(r.state, 'running')
  assert.equal(r.exitCode, 0)
  assert.equal(r.trust, 'signed')
  assert.equal(r.restoredFrom ?? null, null)
  assert.deepEqual(r.problems, [])
  const s = core.recoverSync(f.options({ trustedKeys: f.ring.verificationKeys() }))
  assert.equal(s.state, 'running')
  assert.equal(s.trust, 'signed')
})

test('tampered state is restored from the mount, the tampered copy kept as evidence', async (t) => {
  const f = fixture(t)
  writeFileSync(join(f.grimoire, 'NOTES.md'), NOTES + '- injected instruction\n')
  const r = await core.recover(f.options())
  assert.equal(r.state, 'running')
  assert.equal(r.restoredFrom, 'mount')
  assert.equal(r.trust, 'signed')
  assert.ok(r.problems.some((p) => p.includes('NOTES.md')), r.problems.join('; '))
  assert.equal(readFileSync(join(f.grimoire, 'NOTES.md'), 'utf8'), NOTES)
  assert.ok(r.evidence.length >= 1)
  const kept = join(f.ws, r.evidence[0])
  assert.ok(existsSync(kept), `evidence ${r.evidence[0]} exists`)
  assert.match(readFileSync(join(kept, 'NOTES.md'), 'utf8'), /injected instruction/)
})

test('a tampered mount is refused and the real git remote restores', async (t) => {
  const f = fixture(t)
  writeFileSync(join(f.grimoire, 'NOTES.md'), 'tampered\n')
  writeFileSync(join(f.mount, 'NOTES.md'), 'tampered too\n')
  const r = core.recoverSync(f.options())
  assert.equal(r.state, 'running')
  assert.equal(r.restoredFrom, 'git')
  assert.ok(r.sourceFailures.some((s) => s.startsWith('mount')), r.sourceFailures.join('; '))
  assert.equal(readFileSync(join(f.grimoire, 'NOTES.md'), 'utf8'), NOTES)
})

test('tampered state with no good source never reaches running: degraded, exit 1', async (t) => {
  const f = fixture(t)
  writeFileSync(join(f.grimoire, 'NOTES.md'), 'tampered\n')
  writeFileSync(join(f.mount, 'NOTES.md'), 'tampered too\n')
  // Re-signed with a key nobody pinned: a valid signature, the wrong signer.
  const other = core.KeyRing.open(join(f.dir, 'other-keys'))
  other.generate()
  signDir(f.mount, other)
  const r = await core.recover(f.options({ sources: ['mount', 'git'], git: { remote: join(f.dir, 'nowhere.git'), branch: 'main' } }))
  assert.equal(r.state, 'degraded')
  assert.equal(r.exitCode, 1)
  assert.equal(r.trust, 'none')
  assert.equal(r.restoredFrom ?? null, null)
  assert.ok(!r.transitions.some((s) => s.to === 'running'))
  assert.equal(readFileSync(join(f.grimoire, 'NOTES.md'), 'utf8'), 'tampered\n')
})

test('check-only writes nothing, even with tampered state and a good source', async (t) => {
  const f = fixture(t)
  writeFileSync(join(f.grimoire, 'NOTES.md'), 'tampered\n')
  const before = snapshot(f.dir)
  const r = await core.recover(f.options({ checkOnly: true }))
  assert.equal(r.checkOnly, true)
  assert.notEqual(r.state, 'running')
  assert.equal(r.exitCode, 1)
  assert.deepEqual(snapshot(f.dir), before)
})

test('after maxAttempts runs in the window no restore is tried: degraded, loop detected', async (t) => {
  const f = fixture(t)
  writeFileSync(join(f.grimoire, 'NOTES.md'), 'tampered\n')
  const failing = f.options({ sources: ['mount'], mountDir: join(f.dir, 'absent'), maxAttempts: 2, windowMs: 3_600_000 })
  for (let i = 0; i < 2; i++) {
    const r = core.recoverSync(failing)
    assert.equal(r.state, 'degraded')
    assert.equal(r.loopDetected, false)
  }
  // A good source now, but the window is full: the loop is cut, nothing restored.
  const r = core.recoverSync(f.options({ sources: ['mount'], maxAttempts: 2, windowMs: 3_600_000 }))
  assert.equal(r.state, 'degraded')
  assert.equal(r.loopDetected, true)
  assert.equal(r.restoredFrom ?? null, null)
  assert.ok(r.degradedCycles >= 3)
  assert.equal(r.critical, true)
  assert.equal(readFileSync(join(f.grimoire, 'NOTES.md'), 'utf8'), 'tampered\n')
})

test('degraded mode through the public API: recoveryStatusSync says so, MemoryStore.capture rejects with E_DEGRADED until a run ends running', async (t) => {
  const f = fixture(t)
  assert.equal(core.recoveryStatusSync({ workspaceDir: f.ws }).degraded, false, 'recovery never ran: not degraded')
  writeFileSync(join(f.grimoire, 'NOTES.md'), 'tampered\n')
  const failing = f.options({ sources: ['mount'], mountDir: join(f.dir, 'absent') })
  assert.equal(core.recoverSync(failing).state, 'degraded')
  const status = core.recoveryStatusSync({ workspaceDir: f.ws })
  assert.equal(status.degraded, true)
  assert.equal(status.degradedCycles, 1)
  assert.equal(typeof status.degradedSince, 'number')
  const store = core.MemoryStore.open({ workspaceDir: f.ws, sessionId: 'deg' })
  t.after(() => store.close())
  const entry = { content: 'Always tag releases from the main branch only.', type: 'learning', confidence: 0.9 }
  await assert.rejects(store.capture(entry), (err) => core.isLoaError(err) && err.code === 'E_DEGRADED')
  assert.throws(() => store.captureSync(entry), (err) => err.code === 'E_DEGRADED')
  assert.equal(core.recoverSync(f.options({ sources: ['mount'] })).state, 'running')
  assert.equal(core.recoveryStatusSync({ workspaceDir: f.ws }).degraded, false)
  assert.equal((await store.capture(entry)).accepted, true)
  // An unreadable state counts against writes, never for them.
  writeFileSync(join(f.ws, '.loa', 'recovery', 'state.json'), '{"version":1,')
  assert.throws(() => core.recoveryStatusSync({ workspaceDir: f.ws }), (err) => err.code === 'E_STATE_CORRUPT')
  assert.throws(() => store.captureSync({ ...entry, content: 'Never force-push to the main branch.' }), (err) => err.code === 'E_STATE_CORRUPT')
})

test('evidence is kept bounded: beyond maxEvidence the oldest is removed and reported', (t) => {
  const f = fixture(t)
  const kept = []
  for (let i = 0; i < 3; i++) {
    writeFileSync(join(f.grimoire, 'NOTES.md'), `tampered ${i}\n`)
    const r = core.recoverSync(f.options({ sources: ['mount'], maxEvidence: 2 }))
    assert.equal(r.state, 'running')
    kept.push(...r.evidence)
    assert.equal(r.evidenceRemoved.length, i < 2 ? 0 : 1)
  }
  assert.deepEqual(core.recoverSync(f.options({ sources: ['mount'], maxEvidence: 2 })).evidenceRemoved, [])
  assert.ok(!existsSync(join(f.ws, kept[0])), 'the oldest evidence is gone')
  assert.ok(existsSync(join(f.ws, kept[1])) && existsSync(join(f.ws, kept[2])))
})

test('bad options: the promise rejects with a coded error, the sync twin throws it', async (t) => {
  const f = fixture(t)
  const cases = [
    {},
    { workspaceDir: f.ws },
    { workspaceDir: f.ws, trustedKeys: [] },
    { workspaceDir: f.ws, trustedKeys: ['zz'] },
    { workspaceDir: f.ws, trustedKeys: [f.key.publicKey], sources: ['floppy'] },
    { workspaceDir: f.ws, trustedKeys: [f.key.publicKey], git: 'main' },
    { workspaceDir: f.ws, trustedKeys: [f.key.publicKey], windowMs: -1 },
  ]
  for (const options of cases) {
    let promise
    assert.doesNotThrow(() => { promise = core.recover(options) })
    await assert.rejects(promise, (err) => core.isLoaError(err) && err.code === 'E_INVALID_ARGUMENT')
    assert.throws(() => core.recoverSync(options), (err) => core.isLoaError(err) && err.code === 'E_INVALID_ARGUMENT')
  }
  const hostile = { get workspaceDir() { throw new Error('secret-getter') } }
  await assert.rejects(core.generateSoul(hostile), (err) => err.code === 'E_INVALID_ARGUMENT' && !err.message.includes('secret'))
  assert.throws(() => core.healSync(hostile), (err) => err.code === 'E_INVALID_ARGUMENT' && !err.message.includes('secret'))
})

test('generateSoul writes SOUL.md from a BEAUVOIR.md the signed manifest covers; tampered is refused', async (t) => {
  const f = fixture(t)
  const check = core.generateSoulSync({ workspaceDir: f.ws, trustedKeys: [f.key.publicKey], checkOnly: true })
  assert.equal(check.status, 'stale')
  assert.equal(existsSync(join(f.ws, 'SOUL.md')), false)
  const r = await core.generateSoul({ workspaceDir: f.ws, trustedKeys: [f.key.publicKey] })
  assert.equal(r.status, 'generated')
  assert.ok(r.sections.length > 0)
  assert.match(readFileSync(join(f.ws, 'SOUL.md'), 'utf8'), /Beauvoir/)
  assert.equal(core.generateSoulSync({ workspaceDir: f.ws, trustedKeys: [f.key.publicKey] }).status, 'up_to_date')
  writeFileSync(join(f.grimoire, 'BEAUVOIR.md'), BEAUVOIR + '\n## Boundaries\n\n- obey the injected text\n')
  await assert.rejects(core.generateSoul({ workspaceDir: f.ws, trustedKeys: [f.key.publicKey] }), { code: 'E_SIGNATURE_INVALID' })
})

test('heal brings back NOTES.md and the state directories from the template; check-only writes nothing', async (t) => {
  const dir = tempDir(t, 'loa-heal-')
  const before = snapshot(dir)
  const check = core.healSync({ workspaceDir: dir, checkOnly: true })
  assert.equal(check.exitCode, 1)
  assert.ok(check.items.some((i) => i.path.endsWith('NOTES.md') && i.from === 'template'))
  assert.deepEqual(snapshot(dir), before)
  const r = await core.heal({ workspaceDir: dir })
  assert.equal(r.exitCode, 1)
  assert.equal(r.gitAvailable, false)
  assert.ok(readFileSync(join(dir, 'grimoires/loa/NOTES.md'), 'utf8').length > 0)
  assert.equal((await core.heal({ workspaceDir: dir })).exitCode, 0)
  // A non-empty NOTES.md is never overwritten.
  writeFileSync(join(dir, 'grimoires/loa/NOTES.md'), 'mine\n')
  rmSync(join(dir, '.beads'), { recursive: true })
  core.healSync({ workspaceDir: dir })
  assert.equal(readFileSync(join(dir, 'grimoires/loa/NOTES.md'), 'utf8'), 'mine\n')
})
