// Keys and signed manifests through the Node binding and the `loa` command: tamper detection of
// every byte, path escapes, LOA_SIGNING_KEY alone (SPEC item 7), and a cross-check of the
// signature with node:crypto.
import test from 'node:test'
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'
import { core, root, runCli, startChild, tempDir } from './helpers.mjs'

const { KeyRing, createManifest, createManifestAsync, signManifest, verifyManifest, verifyManifestAsync, verifyManifestSignature, readManifest, writeManifest, canonicalizeJsonBuffer } = core
const RFC8032_TEST1 = {
  seed: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
  publicKey: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
}

function stateDir(t) {
  const dir = tempDir(t)
  const state = join(dir, 'state')
  mkdirSync(join(state, 'learnings', 'deep'), { recursive: true })
  writeFileSync(join(state, 'NOTES.md'), '# Notes\n- the user prefers tabs\n')
  writeFileSync(join(state, 'learnings', 'a.json'), JSON.stringify({ a: [1, { b: 'c' }] }))
  writeFileSync(join(state, 'learnings', 'deep', 'b.bin'), Buffer.from([0, 1, 2, 255]))
  const ring = KeyRing.open(join(dir, 'keys'), { useEnv: false })
  ring.generate()
  const signed = signManifest(createManifest(state), ring)
  return { dir, state, ring, signed, keys: ring.verificationKeys() }
}

const kinds = (v) => v.problems.map((p) => `${p.kind}:${p.path}`)

test('a key ring: private files 0600 in a 0700 directory, nothing private in what JS sees', (t) => {
  const dir = join(tempDir(t), 'keys')
  const ring = KeyRing.open(dir, { useEnv: false })
  assert.deepEqual(ring.list(), [])
  assert.equal(existsSync(dir), false, 'open creates nothing')
  const key = ring.generate()
  assert.equal(key.status, 'active')
  assert.match(key.publicKey, /^[0-9a-f]{64}$/)
  assert.equal(key.keyId, crypto.createHash('sha256').update(Buffer.from(key.publicKey, 'hex')).digest('hex').slice(0, 32), 'derived from the public key')
  assert.equal(statSync(dir).mode & 0o777, 0o700)
  assert.equal(statSync(join(dir, `${key.keyId}.key`)).mode & 0o777, 0o600)
  assert.throws(() => ring.generate(), { code: 'E_KEY_EXISTS' })
  const seed = ring.exportPrivateKey(key.keyId)
  assert.match(seed, /^[0-9a-f]{64}$/)
  const seen = JSON.stringify([ring.list(), ring.verificationKeys(), readFileSync(join(dir, 'keyring.json'), 'utf8')])
  assert.ok(!seen.includes(seed), 'the seed appears nowhere but in its key file')
  const rotated = ring.rotate()
  assert.deepEqual(ring.list().map((k) => [k.keyId, k.status]), [[rotated.keyId, 'active'], [key.keyId, 'retired']])
  assert.deepEqual(readdirSync(dir).filter((n) => n.endsWith('.key')), [`${rotated.keyId}.key`], 'a retired key keeps no private half')
  assert.throws(() => ring.exportPrivateKey(key.keyId), { code: 'E_KEY_NOT_FOUND' })
  ring.revoke(key.keyId, 'test')
  assert.deepEqual(ring.verificationKeys().map((k) => k.keyId), [rotated.keyId])
  assert.throws(() => ring.revoke('0'.repeat(32), 'x'), { code: 'E_KEY_NOT_FOUND' })
  assert.throws(() => KeyRing.open(dir, { rotationDays: 7, overlapDays: 7 }), { code: 'E_INVALID_ARGUMENT' })
})

test('LOA_SIGNING_KEY alone: the public key is derived, signing and verifying work, bad values never echo', async (t) => {
  const { state } = stateDir(t)
  const script = `
    const core = require(${JSON.stringify(join(root, 'index.js'))})
    const ring = core.KeyRing.open(${JSON.stringify(join(state, '..', 'no-ring'))})
    const keys = ring.verificationKeys()
    const signed = core.signManifest(core.createManifest(${JSON.stringify(state)}), ring)
    console.log(JSON.stringify({ keys, ok: core.verifyManifest(${JSON.stringify(state)}, signed, keys).ok }))`
  const child = startChild(process.execPath, ['-e', script], { env: { ...process.env, LOA_SIGNING_KEY: RFC8032_TEST1.seed } })
  await child.exited
  assert.equal(child.exit.code, 0, child.stderr)
  const out = JSON.parse(child.lines[0])
  assert.equal(out.keys.length, 1)
  assert.equal(out.keys[0].publicKey, RFC8032_TEST1.publicKey)
  assert.equal(out.keys[0].source, 'env')
  assert.equal(out.ok, true)
  assert.equal(existsSync(join(state, '..', 'no-ring')), false)

  const secret = 'ab'.repeat(31) + 'zz'
  const bad = startChild(process.execPath, ['-e', `try { require(${JSON.stringify(join(root, 'index.js'))}).KeyRing.open('x') } catch (e) { console.log(e.code, e.message) }`], {
    env: { ...process.env, LOA_SIGNING_KEY: secret },
  })
  await bad.exited
  assert.match(bad.lines[0], /^E_KEY_INVALID /)
  assert.ok(!bad.lines.join('\n').includes(secret) && !bad.stderr.includes(secret), 'the value is never echoed')
})

test('the signature is plain Ed25519 over the domain prefix and the RFC 8785 bytes (checked with node:crypto)', (t) => {
  const { signed, keys } = stateDir(t)
  const { signature, ...body } = signed
  const message = Buffer.concat([Buffer.from('loa-core/manifest/v1\0'), canonicalizeJsonBuffer(body)])
  const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(keys[0].publicKey, 'hex')])
  const publicKey = crypto.createPublicKey({ key: spki, format: 'der', type: 'spki' })
  assert.equal(crypto.verify(null, message, publicKey, Buffer.from(signature.value, 'hex')), true)
  assert.equal(signature.keyId, keys[0].keyId)
  assert.deepEqual(Object.keys(signed).sort(), ['createdAt', 'exclude', 'files', 'include', 'signature', 'version'])
})

test('every single-byte change of every covered file is detected', (t) => {
  const { state, signed, keys } = stateDir(t)
  assert.deepEqual(verifyManifest(state, signed, keys), { ok: true, problems: [], files: 3, signedBy: keys[0].keyId })
  for (const { path } of signed.files) {
    const file = join(state, path)
    const original = readFileSync(file)
    for (let i = 0; i < original.length; i++) {
      const bytes = Buffer.from(original)
      bytes[i] ^= 0x01
      writeFileSync(file, bytes)
      assert.deepEqual(kinds(verifyManifest(state, signed, keys, { threads: 1 })), [`modified:${path}`], `${path} byte ${i}`)
    }
    writeFileSync(file, original)
  }
  assert.equal(verifyManifest(state, signed, keys).ok, true)
})

test('every single-byte change of the manifest file and every bit of the signature is detected', (t) => {
  const { dir, state, signed, keys } = stateDir(t)
  const file = join(dir, 'manifest.json')
  writeManifest(file, signed)
  assert.deepEqual(readManifest(file), signed)
  const original = readFileSync(file)
  for (let i = 0; i < original.length; i++) {
    const bytes = Buffer.from(original)
    bytes[i] ^= 0x01
    writeFileSync(file, bytes)
    let value
    try {
      value = readManifest(file)
    } catch (e) {
      assert.equal(e.code, 'E_STATE_CORRUPT', `byte ${i}`)
      continue
    }
    const v = verifyManifest(state, value, keys, { threads: 1 })
    assert.equal(v.ok, false, `byte ${i} undetected`)
    assert.ok(v.problems.some((p) => p.kind === 'signature'), `byte ${i}`)
  }
  const sig = Buffer.from(signed.signature.value, 'hex')
  for (let i = 0; i < sig.length * 8; i++) {
    const flipped = Buffer.from(sig)
    flipped[i >> 3] ^= 1 << (i & 7)
    const forged = { ...signed, signature: { ...signed.signature, value: flipped.toString('hex') } }
    assert.equal(verifyManifestSignature(forged, keys).ok, false, `signature bit ${i}`)
  }
  // Nested fields are covered: the originals' signature did not cover the file list.
  const forged = structuredClone(signed)
  forged.files[0].sha256 = crypto.createHash('sha256').update('forged').digest('hex')
  assert.deepEqual(kinds(verifyManifestSignature(forged, keys)), ['signature:'])
})

test('renaming, adding and deleting files are detected; directories alone are not files', async (t) => {
  const { state, signed, keys } = stateDir(t)
  renameSync(join(state, 'NOTES.md'), join(state, 'NOTES2.md'))
  assert.deepEqual(kinds(verifyManifest(state, signed, keys)), ['missing:NOTES.md', 'unexpected:NOTES2.md'])
  renameSync(join(state, 'NOTES2.md'), join(state, 'NOTES.md'))
  writeFileSync(join(state, 'learnings', 'deep', 'new'), '')
  assert.deepEqual(kinds(verifyManifest(state, signed, keys)), ['unexpected:learnings/deep/new'])
  unlinkSync(join(state, 'learnings', 'deep', 'new'))
  unlinkSync(join(state, 'learnings', 'a.json'))
  assert.deepEqual(kinds(await verifyManifestAsync(state, signed, keys)), ['missing:learnings/a.json'])
  writeFileSync(join(state, 'learnings', 'a.json'), JSON.stringify({ a: [1, { b: 'c' }] }))
  mkdirSync(join(state, 'empty-dir'))
  assert.equal(verifyManifest(state, signed, keys).ok, true)
  // Keys that do not verify: another ring's, or none at all.
  const other = KeyRing.open(join(state, '..', 'other'), { useEnv: false })
  other.generate()
  assert.deepEqual(kinds(verifyManifest(state, signed, other.verificationKeys())), ['signature:'])
  assert.deepEqual(kinds(verifyManifest(state, signed, [])), ['signature:'])
  assert.deepEqual(kinds(verifyManifest(state, signed, keys.map((k) => ({ ...k, status: 'revoked' })))), ['signature:'])
})

test('paths outside the root are refused: absolute, .., symlink escapes', (t) => {
  const { dir, state, ring, signed, keys } = stateDir(t)
  writeFileSync(join(dir, 'outside'), 'secret')
  symlinkSync(join(dir, 'outside'), join(state, 'escape'))
  assert.throws(() => createManifest(state), { code: 'E_PATH_OUTSIDE_ROOT' })
  assert.deepEqual(kinds(verifyManifest(state, signed, keys)), ['path:escape'])
  unlinkSync(join(state, 'escape'))
  for (const bad of ['../outside', '/etc/passwd', 'learnings/../../outside']) {
    const manifest = structuredClone(signed)
    manifest.files[0].path = bad
    assert.throws(() => signManifest(manifest, ring), { code: 'E_PATH_OUTSIDE_ROOT' }, bad)
    assert.ok(verifyManifest(state, manifest, keys).problems.some((p) => p.kind === 'path' && p.path === bad), bad)
  }
  assert.throws(() => signManifest({ version: 1 }, ring), { code: 'E_INVALID_ARGUMENT' })
  assert.throws(() => signManifest(signed, {}), { code: 'E_INVALID_ARGUMENT' })
  assert.throws(() => createManifest(state, { exclude: ['../x'] }), { code: 'E_INVALID_ARGUMENT' })
})

test('createManifest: patterns, progress, async twin, an exception from onProgress is rethrown', async (t) => {
  const { state } = stateDir(t)
  writeFileSync(join(state, 'x.tmp'), 'scratch')
  const seen = []
  const m = createManifest(state, { exclude: ['*.tmp'], onProgress: (p) => seen.push(p) })
  assert.deepEqual(m.files.map((f) => f.path), ['NOTES.md', 'learnings/a.json', 'learnings/deep/b.bin'])
  assert.deepEqual(seen.at(-1), { filesDone: 3, filesTotal: 3, bytesDone: seen.at(-1).bytesTotal, bytesTotal: seen.at(-1).bytesTotal })
  const m2 = await createManifestAsync(state, { exclude: ['*.tmp'] })
  assert.deepEqual(m2.files, m.files)
  assert.throws(() => createManifest(state, { onProgress: () => { throw new Error('stop here') } }), /stop here/)
  await assert.rejects(createManifestAsync(join(state, 'nope')), { code: 'E_IO' })
})

test('loa keys and loa manifest: create, sign, verify; exit 1 lists each problem', async (t) => {
  const { state } = stateDir(t)
  const keys = join(state, '..', 'cli-keys')
  const gen = await runCli(['keys', 'generate', '--keys', keys, '--json'])
  assert.equal(gen.code, 0, gen.stderr)
  assert.equal((await runCli(['keys', 'generate', '--keys', keys])).code, 2)
  const created = await runCli(['manifest', 'create', state])
  assert.equal(created.code, 0, created.stderr)
  assert.deepEqual(readManifest(join(state, 'manifest.json')).exclude, ['./manifest.json'])
  assert.equal((await runCli(['manifest', 'sign', join(state, 'manifest.json'), '--keys', keys])).code, 0)
  const ok = await runCli(['manifest', 'verify', state, '--keys', keys])
  assert.equal(ok.code, 0, ok.stdout + ok.stderr)
  assert.match(ok.stdout, /^OK: 3 file\(s\)/m)
  writeFileSync(join(state, 'NOTES.md'), 'tampered')
  writeFileSync(join(state, 'added'), 'x')
  const bad = await runCli(['manifest', 'verify', state, '--keys', keys, '--json'])
  assert.equal(bad.code, 1)
  assert.deepEqual(JSON.parse(bad.stdout).problems.map((p) => `${p.kind}:${p.path}`), ['modified:NOTES.md', 'unexpected:added'])
  const manifestFile = join(state, 'manifest.json')
  const original = readFileSync(manifestFile)
  for (const [at, pattern] of [[0, /SIGNATURE .*manifest unreadable/], [10, /SIGNATURE .*signature does not verify/]]) {
    const bytes = Buffer.from(original)
    bytes[at] ^= 0x01 // '{' -> 'z' breaks the JSON; '"createdAt"' -> '"breatedAt"' breaks the signature
    writeFileSync(manifestFile, bytes)
    const damaged = await runCli(['manifest', 'verify', state, '--keys', keys])
    assert.equal(damaged.code, 1)
    assert.match(damaged.stdout, pattern)
  }
  const list = await runCli(['keys', 'list', '--keys', keys, '--json'])
  const [key] = JSON.parse(list.stdout)
  assert.equal((await runCli(['keys', 'revoke', key.keyId, '--keys', keys])).code, 2, 'needs --reason')
  assert.equal((await runCli(['keys', 'revoke', key.keyId, '--reason', 'test', '--keys', keys])).code, 0)
  assert.equal(JSON.parse((await runCli(['keys', 'list', '--keys', keys, '--json'])).stdout)[0].status, 'revoked')
  const key0600 = readdirSync(keys).filter((n) => n.endsWith('.key'))
  assert.deepEqual(key0600, [], 'a revoked key keeps no private half')
  chmodSync(keys, 0o700)
  rmSync(keys, { recursive: true })
})

test('unknown members are refused anywhere in a manifest, inside its signature too', (t) => {
  const { state, ring, signed, keys } = stateDir(t)
  const forged = structuredClone(signed)
  forged.signature.note = 'added after signing: no signature covers it'
  const v = verifyManifest(state, forged, keys)
  assert.equal(v.ok, false)
  assert.ok(v.problems.some((p) => p.kind === 'signature' && /unknown member/.test(p.detail)), JSON.stringify(v.problems))
  const manifest = createManifest(state)
  assert.throws(() => signManifest({ ...manifest, extra: 1 }, ring), { code: 'E_INVALID_ARGUMENT' })
  assert.throws(() => signManifest({ ...manifest, files: [{ ...manifest.files[0], mode: 420 }, ...manifest.files.slice(1)] }, ring), { code: 'E_INVALID_ARGUMENT' })
  assert.equal(verifyManifestSignature({ ...signed, extra: 1 }, keys).ok, false)
})

test('FIFOs and symlinks to them are reported, never skipped, and never block', (t) => {
  const { state, signed, keys } = stateDir(t)
  execFileSync('mkfifo', [join(state, 'learnings', 'pipe')])
  symlinkSync(join(state, 'learnings', 'pipe'), join(state, 'pipe-link'))
  assert.throws(() => createManifest(state), { code: 'E_NOT_REGULAR_FILE' })
  assert.throws(() => createManifest(state, { exclude: ['pipe'] }), { code: 'E_NOT_REGULAR_FILE' }, 'the symlink alone is reported too')
  assert.deepEqual(kinds(verifyManifest(state, signed, keys)), ['unexpected:learnings/pipe', 'unexpected:pipe-link'])
  assert.equal(createManifest(state, { exclude: ['pipe', 'pipe-link'] }).files.length, 3)
})

test('temp files of interrupted atomic writes are neither covered nor tampering', (t) => {
  const { state, signed, keys } = stateDir(t)
  writeFileSync(join(state, '.NOTES.md.loa-tmp-2147483646-0'), 'half a file')
  const v = verifyManifest(state, signed, keys)
  assert.equal(v.ok, true, JSON.stringify(v.problems))
  assert.deepEqual(v.tempFiles, ['.NOTES.md.loa-tmp-2147483646-0'])
  assert.equal(createManifest(state).files.length, 3)
})

test('readManifest and writeManifest use regular files only, never a symlink or a FIFO', (t) => {
  const { dir, signed } = stateDir(t)
  const file = join(dir, 'manifest.json')
  writeManifest(file, signed)
  const outside = join(dir, 'outside.json')
  writeFileSync(outside, 'precious')
  symlinkSync(outside, join(dir, 'link.json'))
  execFileSync('mkfifo', [join(dir, 'pipe.json')])
  for (const name of ['link.json', 'pipe.json']) {
    assert.throws(() => readManifest(join(dir, name)), { code: 'E_NOT_REGULAR_FILE' }, name)
    assert.throws(() => writeManifest(join(dir, name), signed), { code: 'E_NOT_REGULAR_FILE' }, name)
  }
  assert.equal(readFileSync(outside, 'utf8'), 'precious')
  assert.deepEqual(readManifest(file), signed)
})

test('loadRedactionKey: made once in the keys directory (0600), the same sync and async, kept by ring changes', async (t) => {
  const dir = join(tempDir(t), 'keys')
  const key = await core.loadRedactionKey(dir)
  assert.ok(Buffer.isBuffer(key) && key.length === 32)
  assert.equal(statSync(join(dir, 'redaction.key')).mode & 0o777, 0o600)
  assert.equal(statSync(dir).mode & 0o777, 0o700)
  assert.deepEqual(core.loadRedactionKeySync(dir), key)
  const ring = KeyRing.open(dir, { useEnv: false })
  ring.generate()
  ring.rotate()
  assert.deepEqual(await core.loadRedactionKey(dir), key, 'rotation leaves the redaction key alone')
})

test('loadRedactionKey: a symlink where the key belongs is refused with E_NOT_REGULAR_FILE, never followed', async (t) => {
  const base = tempDir(t)
  const dir = join(base, 'keys')
  mkdirSync(dir)
  writeFileSync(join(base, 'elsewhere'), 'not a key')
  symlinkSync(join(base, 'elsewhere'), join(dir, 'redaction.key'))
  const refused = (err) => core.isLoaError(err) && err.code === 'E_NOT_REGULAR_FILE' && err.kind === 'symlink'
  await assert.rejects(core.loadRedactionKey(dir), refused)
  assert.throws(() => core.loadRedactionKeySync(dir), refused)
  unlinkSync(join(dir, 'redaction.key'))
  symlinkSync(join(base, 'made-through-the-link'), join(dir, 'redaction.key'))
  await assert.rejects(core.loadRedactionKey(dir), refused)
  assert.ok(!existsSync(join(base, 'made-through-the-link')), 'nothing is created through a dangling link')
  assert.equal(readFileSync(join(base, 'elsewhere'), 'utf8'), 'not a key')
})
