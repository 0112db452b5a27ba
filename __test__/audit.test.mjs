// The audit log through the Node binding and `loa audit verify`: tampering with any field
// (nested details included), deleted and reordered lines, rotation, HMAC, several processes
// appending at once.
import test from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { core, fixture, runCli, startChild, tempDir } from './helpers.mjs'

const { AuditLog, verifyAuditLog, canonicalizeJson, KeyRing, createManifest, signManifest, verifyManifest, verifyManifestSignature, writeManifest } = core

function segments(dir) {
  return readdirSync(dir).filter((n) => n.endsWith('.jsonl')).sort()
}

function lines(dir, name) {
  return readFileSync(join(dir, name), 'utf8').split('\n').filter(Boolean)
}

function put(dir, name, list) {
  writeFileSync(join(dir, name), list.map((l) => l + '\n').join(''))
}

function filled(t, count = 30, options = { maxSegmentBytes: 1024 }) {
  const dir = tempDir(t)
  const log = AuditLog.open(dir, options)
  const heads = []
  for (let i = 1; i <= count; i++) {
    heads.push(log.append({ action: `test.${i % 4}`, actor: ['system', 'user', 'automated'][i % 3], details: { i, nested: { list: [i, { deep: `v${i}` }] } } }))
  }
  return { dir, log, heads }
}

test('appends return seq and hash; the chain continues across rotations with collision-free names', (t) => {
  const { dir, log, heads } = filled(t)
  assert.deepEqual(heads.map((h) => h.seq), Array.from({ length: 30 }, (_, i) => i + 1))
  const names = segments(dir)
  assert.ok(names.length >= 4, `rotated into ${names.length} segments`)
  for (const name of names) assert.equal(JSON.parse(lines(dir, name)[0]).seq, Number(name.slice(0, 20)), 'named by the seq of its first entry')
  const first = JSON.parse(lines(dir, names[1])[0])
  const last = JSON.parse(lines(dir, names[0]).at(-1))
  assert.equal(first.prev, last.hash, 'a segment records the last hash of the one before')
  const v = log.verify({ expectedHead: heads.at(-1) })
  assert.deepEqual({ ok: v.ok, entries: v.entries, segments: v.segments, head: v.head }, { ok: true, entries: 30, segments: names.length, head: heads.at(-1) })
  assert.deepEqual(log.head(), heads.at(-1))
  // Every line is the canonical form of its entry.
  for (const name of names) for (const line of lines(dir, name)) assert.equal(canonicalizeJson(JSON.parse(line)), line)
})

test('editing any field of any entry, nested details included, is detected', (t) => {
  const { dir } = filled(t, 8, {})
  const [name] = segments(dir)
  const original = lines(dir, name)
  const edits = [
    (e) => (e.seq += 100),
    (e) => (e.ts = '2001-01-01T00:00:00.000Z'),
    (e) => (e.action = 'other'),
    (e) => (e.actor = e.actor === 'user' ? 'system' : 'user'),
    (e) => (e.details.i = -1),
    (e) => (e.details.nested.list[1].deep = 'forged'),
    (e) => (e.details.nested.extra = true),
    (e) => delete e.details,
    (e) => (e.prev = '0'.repeat(64)),
    (e) => (e.hash = 'f'.repeat(64)),
  ]
  for (let n = 0; n < original.length; n++) {
    for (const edit of edits) {
      const entry = JSON.parse(original[n])
      edit(entry)
      const changed = [...original]
      changed[n] = canonicalizeJson(entry)
      if (changed[n] === original[n]) continue
      put(dir, name, changed)
      const v = verifyAuditLog(dir)
      assert.equal(v.ok, false, `${edit} on line ${n + 1}`)
      assert.ok(v.problems.some((p) => p.line === n + 1 || p.line === n + 2), `${edit}: ${JSON.stringify(v.problems)}`)
    }
  }
  put(dir, name, original)
  assert.equal(verifyAuditLog(dir).ok, true)
})

test('deleting, reordering and duplicating lines are detected; a torn tail is cut on open', (t) => {
  const { dir } = filled(t, 6, {})
  const [name] = segments(dir)
  const original = lines(dir, name)
  for (let n = 0; n < original.length - 1; n++) {
    const deleted = original.filter((_, i) => i !== n)
    put(dir, name, deleted)
    assert.ok(verifyAuditLog(dir).problems.some((p) => p.kind === 'chain' || p.kind === 'seq'), `deleting line ${n + 1}`)
    const swapped = [...original]
    ;[swapped[n], swapped[n + 1]] = [swapped[n + 1], swapped[n]]
    put(dir, name, swapped)
    assert.ok(verifyAuditLog(dir).problems.some((p) => p.kind === 'chain'), `swapping lines ${n + 1} and ${n + 2}`)
  }
  put(dir, name, [...original.slice(0, 3), original[2], ...original.slice(3)])
  assert.ok(verifyAuditLog(dir).problems.some((p) => p.kind === 'seq'))
  // Removing the last entry is only visible against a remembered head.
  put(dir, name, original.slice(0, -1))
  assert.equal(verifyAuditLog(dir).ok, true)
  const lastHead = { seq: 6, hash: JSON.parse(original[5]).hash }
  assert.deepEqual(verifyAuditLog(dir, { expectedHead: lastHead }).problems.map((p) => p.kind), ['head'])
  // A torn tail: reported by verify (ok stays true, nothing written), cut by the next open.
  put(dir, name, original)
  writeFileSync(join(dir, name), readFileSync(join(dir, name), 'utf8') + '{"seq":7,"ts":"20')
  const v = verifyAuditLog(dir)
  assert.equal(v.ok, true)
  assert.deepEqual(v.tornTail, { segment: name, line: 7, bytes: 17 })
  const log = AuditLog.open(dir)
  assert.deepEqual(log.truncatedTail, { segment: name, line: 7, bytes: 17 })
  assert.equal(log.append({ action: 'after.crash', actor: 'system' }).seq, 7)
  assert.equal(verifyAuditLog(dir).ok, true)
})

test('an HMAC key: needed to verify and to continue; a plain recomputed chain does not pass', (t) => {
  const key = Buffer.from('0123456789abcdef0123456789abcdef')
  const { dir } = filled(t, 5, { hmacKey: key })
  assert.equal(verifyAuditLog(dir, { hmacKey: key }).ok, true)
  assert.deepEqual(verifyAuditLog(dir).problems.map((p) => p.kind), ['key'])
  assert.equal(verifyAuditLog(dir, { hmacKey: Buffer.from('another key, 16+ bytes') }).ok, false)
  assert.throws(() => AuditLog.open(dir, { hmacKey: Buffer.from('another key, 16+ bytes') }), { code: 'E_SIGNATURE_INVALID' })
  assert.throws(() => AuditLog.open(dir, { hmacKey: Buffer.from('short') }), { code: 'E_INVALID_ARGUMENT' })
  assert.throws(() => AuditLog.open(dir, { hmacKey: 'a string key' }), { code: 'E_INVALID_ARGUMENT' })
})

test('bad events are refused and nothing is written', (t) => {
  const { dir, log } = filled(t, 1, {})
  for (const event of [{ action: '', actor: 'user' }, { action: 'x', actor: 'root' }, { action: 'x', actor: 'user', details: { n: NaN } }, { action: 'x', actor: 'user', details: { d: new Date() } }, null]) {
    assert.throws(() => log.append(event), { code: 'E_INVALID_ARGUMENT' }, JSON.stringify(event))
  }
  assert.equal(verifyAuditLog(dir).entries, 1)
})

test('four processes appending at once share one chain, across rotations', async (t) => {
  const dir = tempDir(t)
  const writers = [0, 1, 2, 3].map((id) => startChild(process.execPath, [fixture('audit-appender.mjs'), dir, String(id), '40', '2048']))
  await Promise.all(writers.map((w) => w.exited))
  for (const w of writers) assert.equal(w.exit.code, 0, w.stderr)
  const seqs = writers.flatMap((w) => w.lines.map(Number)).sort((a, b) => a - b)
  assert.deepEqual(seqs, Array.from({ length: 160 }, (_, i) => i + 1), 'every seq handed out exactly once')
  const v = verifyAuditLog(dir)
  assert.equal(v.ok, true, JSON.stringify(v.problems))
  assert.equal(v.entries, 160)
  assert.ok(v.segments > 4)
  const seen = new Set()
  for (const name of segments(dir)) for (const line of lines(dir, name)) seen.add(`${JSON.parse(line).details.writer}/${JSON.parse(line).details.i}`)
  assert.equal(seen.size, 160)
})

test('loa audit verify: exit 0 when intact, 1 listing each problem', async (t) => {
  const { dir } = filled(t, 12)
  const ok = await runCli(['audit', 'verify', dir])
  assert.equal(ok.code, 0, ok.stderr)
  assert.match(ok.stdout, /^OK: 12 entries in \d+ segment\(s\)/m)
  const [name] = segments(dir)
  const list = lines(dir, name)
  put(dir, name, list.reverse())
  const bad = await runCli(['audit', 'verify', dir, '--json'])
  assert.equal(bad.code, 1)
  assert.ok(JSON.parse(bad.stdout).problems.length >= 2)
  assert.equal((await runCli(['audit', 'verify', join(dir, 'nope')])).code, 2)
})

test('a signed checkpoint shows entries cut off the end: E_AUDIT_TRUNCATED', (t) => {
  const { dir, log } = filled(t, 10, {})
  const ring = KeyRing.open(join(tempDir(t), 'keys'), { useEnv: false })
  ring.generate()
  const checkpoint = log.checkpoint(ring)
  assert.deepEqual({ version: checkpoint.version, seq: checkpoint.seq, hash: checkpoint.hash, alg: checkpoint.alg }, { version: 1, seq: 10, hash: log.head().hash, alg: 'sha256' })
  assert.equal(readFileSync(join(dir, 'checkpoint.json'), 'utf8'), canonicalizeJson(checkpoint) + '\n')
  assert.equal(verifyAuditLog(dir, { keys: ring }).ok, true)
  assert.deepEqual(verifyAuditLog(dir).checkpoint, checkpoint)
  assert.throws(() => log.checkpoint({}), { code: 'E_INVALID_ARGUMENT' })
  // Another ring's keys do not vouch for it.
  const stranger = KeyRing.open(join(tempDir(t), 'other'), { useEnv: false })
  stranger.generate()
  assert.deepEqual(verifyAuditLog(dir, { keys: stranger.verificationKeys() }).problems.map((p) => p.kind), ['checkpoint'])

  const [name] = segments(dir)
  put(dir, name, lines(dir, name).slice(0, 7))
  const v = verifyAuditLog(dir)
  assert.equal(v.ok, false)
  assert.deepEqual(v.problems.map((p) => p.kind), ['truncated'])
  assert.match(v.problems[0].detail, /E_AUDIT_TRUNCATED/)
  assert.throws(() => AuditLog.open(dir), { code: 'E_AUDIT_TRUNCATED' })
  assert.throws(() => log.append({ action: 'after.cut', actor: 'system' }), { code: 'E_AUDIT_TRUNCATED' })
  assert.equal(lines(dir, name).length, 7, 'nothing appended to a cut log')
})

test('the head anchored in a signed manifest survives deleting the log with its checkpoint', async (t) => {
  const root = tempDir(t)
  const auditDir = join(root, 'audit')
  const log = AuditLog.open(auditDir)
  for (let i = 1; i <= 6; i++) log.append({ action: `test.${i}`, actor: 'system' })
  const ring = KeyRing.open(join(tempDir(t), 'keys'), { useEnv: false })
  ring.generate()
  log.checkpoint(ring)
  writeFileSync(join(root, 'NOTES.md'), '# notes\n')
  const manifest = createManifest(root, { auditDir: 'audit' })
  assert.deepEqual(manifest.auditHead, { dir: 'audit', seq: 6, hash: log.head().hash })
  assert.deepEqual(manifest.files.map((f) => f.path), ['NOTES.md'])
  const signed = signManifest(manifest, ring)
  assert.equal(verifyManifest(root, signed, ring).ok, true)
  log.append({ action: 'later', actor: 'system' })
  assert.equal(verifyManifest(root, signed, ring).ok, true, 'a log that grows still reaches its anchor')
  assert.equal(verifyManifestSignature({ ...signed, auditHead: { ...signed.auditHead, seq: 1 } }, ring).ok, false, 'covered by the signature')

  // Cut the tail and delete the checkpoint with it: the chain is intact, the manifest knows.
  const [name] = segments(auditDir)
  put(auditDir, name, lines(auditDir, name).slice(0, 4))
  rmSync(join(auditDir, 'checkpoint.json'))
  assert.equal(verifyAuditLog(auditDir).ok, true, 'the chain alone cannot tell')
  const v = verifyManifest(root, signed, ring)
  assert.deepEqual(v.problems.map((p) => `${p.kind}:${p.path}`), ['truncated:audit'])
  assert.match(v.problems[0].detail, /E_AUDIT_TRUNCATED/)
  // The CLI says so too.
  const file = join(tempDir(t), 'manifest.json')
  writeManifest(file, signed)
  const cli = await runCli(['manifest', 'verify', root, '--manifest', file, '--keys', ring.dir])
  assert.equal(cli.code, 1, cli.stdout + cli.stderr)
  assert.match(cli.stdout, /TRUNCATED/)
})

test('loa audit checkpoint signs the head; loa audit verify reports a cut log', async (t) => {
  const { dir } = filled(t, 5, {})
  const keys = join(tempDir(t), 'keys')
  KeyRing.open(keys, { useEnv: false }).generate()
  const made = await runCli(['audit', 'checkpoint', dir, '--keys', keys, '--json'], { env: { ...process.env, LOA_SIGNING_KEY: '' } })
  assert.equal(made.code, 0, made.stderr)
  assert.equal(JSON.parse(made.stdout).seq, 5)
  const [name] = segments(dir)
  put(dir, name, lines(dir, name).slice(0, 2))
  const bad = await runCli(['audit', 'verify', dir, '--keys', keys])
  assert.equal(bad.code, 1)
  assert.match(bad.stdout, /^TRUNCATED/m)
})
