// How every export reads its arguments (src/binding/convert.rs): `null` is absent wherever a
// member is optional, as `undefined` is; objects must be objects; a refusal is one
// E_INVALID_ARGUMENT naming the argument and the member path, and never the value.
import test from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { core, tempDir } from './helpers.mjs'

const ISO = '2025-01-02T03:04:05Z'
const invalid = (where) => (e) => core.isLoaError(e) && e.code === 'E_INVALID_ARGUMENT' && e.message.includes(`\`${where}\``)

test('null is absent in every optional member, as undefined is', async (t) => {
  const dir = tempDir(t)
  const same = (withNulls, without, label) => assert.deepEqual(withNulls, without, label)

  // Options objects and members of records.
  const wal = core.Wal.open(join(dir, 'wal'), { sessionId: null, lockTimeoutMs: null, segmentMaxBytes: null, segmentMaxAgeMs: null, sync: null })
  t.after(() => wal.close())
  same(wal.stats().sessionId, 'default', 'Wal.open')
  same(wal.appendSync({ op: 'note', path: null, data: null, meta: null }), 1, 'Wal.appendSync')
  same(await wal.append({ op: 'note', path: null, data: null, meta: null }), 2, 'Wal.append')
  same(wal.replay({ sinceSeq: null, limit: null }).map((r) => [r.seq, r.path, r.data, r.meta]), [[1, undefined, undefined, undefined], [2, undefined, undefined, undefined]])
  same(core.consolidateWal(join(dir, 'wal'), join(dir, 'target'), { prune: null, lockTimeoutMs: null }).records, 2, 'consolidateWal')

  same(core.countTokens('hello world', { encoding: null, safetyMargin: null }), core.countTokens('hello world'), 'countTokens')
  same(core.countTokensBatch(['a b'], { encoding: null, safetyMargin: null }), core.countTokensBatch(['a b']), 'countTokensBatch')
  same(core.redact('mail bob@example.com', { allowlist: null, key: null, pseudonymize: null }).text, core.redact('mail bob@example.com').text, 'redact')

  const candidate = { content: 'Always run the tests before merging', type: null, confidence: null, timestamp: null, sessionId: null, tags: null }
  const options = { minConfidence: null, speculationMinConfidence: null, minContentLength: null, repetitionMinUniqueRatio: null, repetitionMinWords: null, maxAgeMs: null, instructionBoost: null, knownHashes: null, now: null }
  same(core.evaluateGates(candidate, options), core.evaluateGates({ content: candidate.content }), 'evaluateGates')

  const ws = join(dir, 'ws')
  mkdirSync(ws)
  const store = core.MemoryStore.open({ workspaceDir: ws, sessionId: 's', grimoiresDir: null, walDir: null, lockTimeoutMs: null, gates: null, redaction: null })
  t.after(() => store.close())
  const entry = { type: 'learning', content: 'The API rate limit is 100 requests per second', agentId: null, confidence: null, tags: null, timestamp: null, metadata: null }
  assert.ok((await store.capture(entry)).accepted, 'capture')
  assert.ok(store.captureSync({ ...entry, content: 'Deploys go out on Tuesdays after the review' }).accepted, 'captureSync')
  const context = { budget: null, sessionShare: null, encoding: null, safetyMargin: null, sessions: null, learnings: null }
  same(store.buildContext(context).text, store.buildContext().text, 'MemoryStore.buildContext')
  same(core.buildMemoryContext({ workspaceDir: ws, grimoiresDir: null, walDir: null, lockTimeoutMs: null }, context).text, store.buildContext().text, 'buildMemoryContext')
  const redaction = { allowlist: null, key: null, pseudonymize: null }
  const deadEntry = { ...entry, content: 'Backups run nightly at two in the morning' }
  const letter = core.appendDeadLetterSync({ workspaceDir: ws, lockTimeoutMs: null, redaction }, { sessionId: 'd', entry: deadEntry, attempts: null, error: null })
  same([letter.attempts, letter.error], [1, undefined], 'appendDeadLetterSync')
  same(core.replayDeadLettersSync({ workspaceDir: ws, grimoiresDir: null, walDir: null, lockTimeoutMs: null, gates: null, redaction }).stored, 1, 'replayDeadLettersSync')

  const built = core.buildContext({ sessions: [], learnings: [], budget: null, sessionShare: null, encoding: null, safetyMargin: null, minTruncatedTokens: null })
  same(built.limit, 2000, 'buildContext')

  const part = { id: 'a', target: 'stale_tool_results', tokens: 10, turn: 1, phase: null, artifact: null }
  const policy = { enabled: null, contextWindowTokens: null, compactThresholdPercent: null, preserveRecentTurns: null, clearTargets: null, preserveArtifacts: null, clearAfterPhases: null, completedPhases: null, currentTurn: null, runtimeSignals: null }
  same(core.planCompaction([part], policy), core.planCompaction([{ id: 'a', target: 'stale_tool_results', tokens: 10, turn: 1 }]), 'planCompaction')
  const skill = join(dir, 'SKILL.md')
  writeFileSync(skill, '---\nname: s\n---\n')
  same(core.readSkillContextPolicy(skill, policy), core.readSkillContextPolicy(skill), 'readSkillContextPolicy')

  const budget = { contextWindowTokens: null, singleSearch: null, yellow: null, orange: null, red: null, compact: null }
  same(core.attentionLevel(7000, budget), core.attentionLevel(7000), 'attentionLevel')
  same(new core.AttentionTracker(budget).add(7000), new core.AttentionTracker().add(7000), 'AttentionTracker')

  const ring = core.KeyRing.open(join(dir, 'keys'), { rotationDays: null, overlapDays: null, maxRetiredKeys: null, useEnv: false })
  ring.generate()
  const root = join(dir, 'root')
  mkdirSync(root)
  writeFileSync(join(root, 'a.txt'), 'a')
  const manifest = core.createManifest(root, { include: null, exclude: null, threads: null, onProgress: null, auditDir: null })
  same(manifest.files, core.createManifest(root).files, 'createManifest')
  const signed = core.signManifest(manifest, ring)
  same(core.verifyManifest(root, signed, ring, { threads: null }).ok, true, 'verifyManifest')

  const log = core.AuditLog.open(join(dir, 'audit'), { maxSegmentBytes: null, hmacKey: null, lockTimeoutMs: null })
  log.append({ action: 'start', actor: 'system' })
  same(core.verifyAuditLog(join(dir, 'audit'), { hmacKey: null, expectedHead: null, keys: null }).ok, true, 'verifyAuditLog')
  same(log.verify({ expectedHead: null, keys: null }).ok, true, 'AuditLog.verify')

  core.writeFileAtomicSync(join(dir, 'f'), 'x', { mode: null })
  // A `null` options object is absent too.
  same(core.countTokens('hello world', null), core.countTokens('hello world'), 'countTokens(text, null)')
})

test('`null` is recorded where it is a value: audit details', (t) => {
  const log = core.AuditLog.open(join(tempDir(t), 'audit'))
  const withNull = log.append({ action: 'a', actor: 'system', details: null })
  const without = log.append({ action: 'a', actor: 'system' })
  assert.notEqual(withNull.hash, without.hash)
})

test('refusals name the argument and the member path, never the value', async (t) => {
  const dir = tempDir(t)
  const secret = 'gh' + 'p_' + 'Z'.repeat(36)
  assert.throws(() => core.Wal.open(join(dir, 'w'), 42), invalid('options'), 'an options object that is a number')
  assert.throws(() => core.Wal.open(join(dir, 'w'), []), invalid('options'), 'an options object that is an array')
  assert.throws(() => core.Wal.open(join(dir, 'w'), { lockTimeoutMs: -1 }), invalid('options.lockTimeoutMs'))
  assert.throws(() => core.Wal.open(join(dir, 'w'), { sync: secret }), (e) => invalid('options.sync')(e) && !e.message.includes(secret))
  assert.throws(() => core.MemoryStore.open({ workspaceDir: dir, sessionId: 's', gates: { minConfidence: secret } }), invalid('options.gates.minConfidence'))
  assert.throws(() => core.MemoryStore.open({ workspaceDir: dir, sessionId: 's', gates: 42 }), invalid('options.gates'))
  assert.throws(() => core.MemoryStore.open({ sessionId: 's' }), invalid('options.workspaceDir'))
  assert.throws(() => core.planCompaction([{ id: 'a', target: 'x', tokens: 1 }]), invalid('items[0].turn'))
  assert.throws(() => core.planCompaction([], { clearTargets: ['stale_tool_results', 5] }), invalid('policy.clearTargets[1]'))
  assert.throws(() => core.attentionLevel(1, { yellow: { fraction: 0.1 } }), invalid('config.yellow.tokens'))
  assert.throws(() => core.verifyManifestSignature({}, [{ publicKey: secret }]), (e) => invalid('keys[0].publicKey')(e) && !e.message.includes(secret))
  const wal = core.Wal.open(join(dir, 'w'))
  t.after(() => wal.close())
  await assert.rejects(wal.append({ op: 'x', meta: { list: [1, NaN] } }), invalid('record.meta.list[1]'))
  await assert.rejects(wal.append({ op: 'x', meta: { [secret]: NaN } }), (e) => invalid('record.meta.<key #1>')(e) && !e.message.includes(secret))
})
