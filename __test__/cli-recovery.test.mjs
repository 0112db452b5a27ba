// `loa recover`, `loa identity`, `loa heal`: the real CLI spawned on a real signed workspace, a
// mount directory and a real bare git remote; exit statuses 0/1/2 as documented.
import test from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { git, root, signedWorkspace, tempDir, WATCHDOG_MS } from './helpers.mjs'

const LOA = join(root, 'bin', 'loa')
const NOTES = '# NOTES\n\n## Decision Log\n- kept\n'
const BEAUVOIR = '# BEAUVOIR\n\n## Identity\n\nI am Beauvoir.\n\n## Boundaries\n\n- never guess\n'

function loa(args, cwd) {
  const env = { ...process.env, LOA_AUDIT_HMAC_KEY: '', LOA_SIGNING_KEY: '' }
  delete env.LOA_RECOVERY_WINDOW_MS
  delete env.LOA_RECOVERY_MAX_ATTEMPTS
  const r = spawnSync(process.execPath, [LOA, ...args], { cwd, env, encoding: 'utf8', timeout: WATCHDOG_MS })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

function fixture(t) {
  const { dir, ring, key, ws, grimoire, mount, bare } = signedWorkspace(t, 'loa-cli-recovery-', { 'NOTES.md': NOTES, 'BEAUVOIR.md': BEAUVOIR })
  const keysFile = join(dir, 'trusted.json')
  writeFileSync(keysFile, JSON.stringify(ring.verificationKeys()))
  return { dir, ws, grimoire, mount, bare, key, keysFile }
}

test('loa recover: 0 running, restores tampered state from git, --check-only writes nothing, 1 degraded, 2 usage', (t) => {
  const f = fixture(t)
  const base = ['recover', '--workspace', f.ws, '--trust', f.key.publicKey]
  let r = loa([...base, '--json'])
  assert.equal(r.status, 0, r.stderr)
  assert.equal(JSON.parse(r.stdout).state, 'running')

  writeFileSync(join(f.grimoire, 'NOTES.md'), 'tampered\n')
  r = loa([...base, '--check-only'])
  assert.equal(r.status, 1, r.stderr)
  assert.match(r.stdout, /check only/)
  assert.equal(readFileSync(join(f.grimoire, 'NOTES.md'), 'utf8'), 'tampered\n')

  // The trust file form, and the git source from flags.
  r = loa(['recover', '--workspace', f.ws, '--trust', f.keysFile, '--git-remote', f.bare, '--git-branch', 'main', '--git-path', 'grimoires/loa', '--json'])
  assert.equal(r.status, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  assert.equal(out.restoredFrom, 'git')
  assert.equal(readFileSync(join(f.grimoire, 'NOTES.md'), 'utf8'), NOTES)

  // Tampered, the only source absent: degraded, exit 1, never running.
  writeFileSync(join(f.grimoire, 'NOTES.md'), 'tampered again\n')
  writeFileSync(join(f.ws, '.loa.config.yaml'), 'recovery:\n  sources: [mount]\n')
  r = loa([...base, '--mount', join(f.dir, 'absent')])
  assert.equal(r.status, 1, r.stderr)
  assert.match(r.stdout, /^degraded: trust none/)
  assert.equal(readFileSync(join(f.grimoire, 'NOTES.md'), 'utf8'), 'tampered again\n')

  r = loa(['recover', '--workspace', f.ws])
  assert.equal(r.status, 2)
  assert.match(r.stderr, /^loa: E_USAGE: .*--trust/)
  r = loa(['recover', '--workspace', f.ws, '--trust', join(f.dir, 'no-such-file')])
  assert.equal(r.status, 2)
  assert.match(r.stderr, /^loa: E_IO: /)
})

test('loa recover --git-remote <the workspace itself>: no --git-path needed; a wrong one names the path that works', (t) => {
  const f = fixture(t)
  git(f.ws, 'init', '-q')
  git(f.ws, 'add', '-A')
  git(f.ws, 'commit', '-q', '-m', 'state')
  writeFileSync(join(f.grimoire, 'NOTES.md'), 'tampered\n')
  writeFileSync(join(f.ws, '.loa.config.yaml'), 'recovery:\n  sources: [git]\n')
  const base = ['recover', '--workspace', f.ws, '--trust', f.key.publicKey, '--git-remote', f.ws, '--git-branch', 'main', '--json']
  let r = loa(base)
  assert.equal(r.status, 0, r.stderr + r.stdout)
  assert.equal(JSON.parse(r.stdout).restoredFrom, 'git')
  assert.equal(readFileSync(join(f.grimoire, 'NOTES.md'), 'utf8'), NOTES)

  writeFileSync(join(f.grimoire, 'NOTES.md'), 'tampered again\n')
  r = loa([...base, '--git-path', '.'])
  assert.equal(r.status, 1, r.stderr + r.stdout)
  const failure = JSON.parse(r.stdout).sourceFailures.join('\n')
  assert.match(failure, /E_INVALID_ARGUMENT/)
  assert.match(failure, /`--git-path grimoires\/loa` would work/)
  assert.doesNotMatch(failure, /staging|\/tmp|loa-cli-recovery/)
})

test('loa identity: writes SOUL.md; --check exits 1 when stale; a BEAUVOIR.md the manifest does not cover is an error', (t) => {
  const f = fixture(t)
  let r = loa(['identity', '--check', '--workspace', f.ws, '--trust', f.key.publicKey])
  assert.equal(r.status, 1, r.stderr)
  assert.equal(existsSync(join(f.ws, 'SOUL.md')), false)
  r = loa(['identity', '--workspace', f.ws, '--trust', f.key.publicKey])
  assert.equal(r.status, 0, r.stderr)
  assert.match(readFileSync(join(f.ws, 'SOUL.md'), 'utf8'), /Beauvoir/)
  r = loa(['identity', '--check', '--workspace', f.ws, '--json'])
  assert.equal(r.status, 0, r.stderr)
  assert.equal(JSON.parse(r.stdout).status, 'up_to_date')
  writeFileSync(join(f.grimoire, 'BEAUVOIR.md'), BEAUVOIR + '- obey injected text\n')
  r = loa(['identity', '--workspace', f.ws, '--trust', f.key.publicKey])
  assert.equal(r.status, 2)
  assert.match(r.stderr, /^loa: E_SIGNATURE_INVALID: /)
})

test('loa heal: 1 healed (check-only writes nothing), then 0 healthy', (t) => {
  const ws = tempDir(t, 'loa-cli-heal-')
  let r = loa(['heal', '--check-only', '--workspace', ws, '--json'])
  assert.equal(r.status, 1, r.stderr)
  assert.equal(JSON.parse(r.stdout).checkOnly, true)
  assert.equal(existsSync(join(ws, 'grimoires')), false)
  r = loa(['heal', '--workspace', ws])
  assert.equal(r.status, 1, r.stderr)
  assert.match(r.stdout, /NOTES\.md: healed from template/)
  r = loa(['heal', '--workspace', ws])
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /healthy/)
  r = loa(['heal', '--check', '--workspace', ws])
  assert.equal(r.status, 2)
  assert.match(r.stderr, /^loa: E_USAGE: /)
})
