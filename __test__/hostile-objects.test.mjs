// Every export of the package, called with hostile arguments: throwing getters, Proxies whose
// traps throw, revoked Proxies, getters that answer differently on each read, 100,000-deep
// nesting, wrong types, huge strings, lone surrogates, symbols, BigInt, functions, and secrets
// as values and as keys. Each call must leave the process alive and answer with exactly one
// coded outcome: a synchronous `LoaError`, or a promise (a function that returns one never
// throws) that settles, rejecting with a `LoaError`. Never a throw beside a rejected promise,
// never an unhandled rejection, never a pending exception leaking out as the caller's own error,
// never a secret in a message, and no property read twice.
//
// The list of calls is checked against the module itself (its exports, each class's static
// functions, prototype methods and getters), so a new export without a case here fails.
import test from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { core, tempDir } from './helpers.mjs'

const here = fileURLToPath(import.meta.url)

// ---------------------------------------------------------------------------------------------
// The calls: a valid call per export, from which the hostile ones are derived.
// ---------------------------------------------------------------------------------------------

/**
 * name -> spec. `args(ctx, receiver)` gives a valid argument list. `async`: returns a promise.
 * `receiver(ctx, n)`: the instance a method or getter is called on (fresh per case). `paths`:
 * argument positions (`'0'`, `'0.workspaceDir'`) that name files, which messages may name.
 */
const ISO = '2025-01-02T03:04:05Z'
const manifestFiles = (ctx) => ctx.manifest
const recoverOptions = (ctx) => ({
  workspaceDir: ctx.ws,
  trustedKeys: [...ctx.keyInfos, ctx.keyInfos[0].publicKey],
  grimoireDir: 'g',
  stateDir: '.r',
  sources: ['mount', 'git', 'template'],
  mountDir: join(ctx.dir, 'no-mount'),
  git: { remote: join(ctx.dir, 'no-remote.git'), branch: 'main', path: '.' },
  windowMs: 60000,
  maxAttempts: 3,
  degradedAlertCycles: 2,
  checkOnly: true,
  lockTimeoutMs: 100,
  maxEvidence: 4,
})
const recoverPaths = ['0.workspaceDir', '0.mountDir', '0.git.remote']
const soulOptions = (ctx) => {
  const dir = join(ctx.ws, 'soul')
  if (!ctx.soulSigned) {
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'B.md'), '# BEAUVOIR\n\n## Identity\n\nCareful.\n')
    core.writeManifest(join(dir, 'm.json'), core.signManifest(core.createManifest(dir, { exclude: ['./m.json'] }), ctx.ring))
    ctx.soulSigned = true
  }
  return { workspaceDir: ctx.ws, beauvoirPath: 'soul/B.md', soulPath: 'S.md', stateDir: '.i', trustedKeys: ctx.keyInfos, manifestPath: 'soul/m.json', manifestEntry: 'B.md', checkOnly: true }
}
const soulPaths = ['0.workspaceDir', '0.beauvoirPath', '0.soulPath', '0.stateDir', '0.manifestPath']
const ledgerEvent = () => ({
  agent: 'toast',
  type: 'session_end',
  ts: ISO,
  branch: 'feat/x',
  reason: 'clear',
  now: 'ship it',
  thisSession: ['did a'],
  decisions: { db: 'postgres' },
  checkpoints: [{ phase: '5', status: 'validated', updated: ISO }],
  openQuestions: ['why?'],
})
const synthOptions = (ctx) => ({ check: false, archive: false, retentionDays: 7, keysDir: join(ctx.dir, 'no-keys'), commit: false, lockTimeoutMs: 100 })
const SPECS = {
  appendDeadLetter: {
    async: true,
    args: (ctx) => [{ workspaceDir: ctx.ws, lockTimeoutMs: 100 }, { sessionId: 's', entry: { type: 'learning', content: 'Always run the tests' }, attempts: 2, error: { code: 'E_IO', message: 'disk full' } }],
    paths: ['0.workspaceDir'],
  },
  appendDeadLetterSync: {
    args: (ctx) => [{ workspaceDir: ctx.ws, lockTimeoutMs: 100 }, { sessionId: 's', entry: { type: 'learning', content: 'Always run the tests' }, attempts: 2, error: { code: 'E_IO', message: 'disk full' } }],
    paths: ['0.workspaceDir'],
  },
  listDeadLetters: { args: (ctx) => [{ workspaceDir: ctx.ws, lockTimeoutMs: 100 }], paths: ['0.workspaceDir'] },
  replayDeadLetters: { async: true, args: (ctx) => [{ workspaceDir: ctx.ws, grimoiresDir: 'g', walDir: 'w', lockTimeoutMs: 100, gates: { minConfidence: 0.5 } }], paths: ['0.workspaceDir', '0.grimoiresDir', '0.walDir'] },
  replayDeadLettersSync: { args: (ctx) => [{ workspaceDir: ctx.ws, grimoiresDir: 'g', walDir: 'w', lockTimeoutMs: 100, gates: { minConfidence: 0.5 } }], paths: ['0.workspaceDir', '0.grimoiresDir', '0.walDir'] },
  attentionLevel: { args: () => [7000, { contextWindowTokens: 200000, yellow: 5000, orange: { tokens: 10000, fraction: 0.05 } }] },
  buildContext: {
    args: () => [
      {
        sessions: [{ timestamp: ISO, summary: 'Deployed the staging API', importance: 1 }],
        learnings: [{ trigger: 'rate limits', solution: 'back off', importance: 0.5, lastUsed: ISO }],
        budget: 200,
        sessionShare: 0.5,
        encoding: 'o200k_base',
        safetyMargin: 0.1,
        minTruncatedTokens: 8,
      },
    ],
  },
  buildMemoryContext: { args: (ctx) => [{ workspaceDir: ctx.ws, grimoiresDir: 'g', walDir: 'w' }, { budget: 100, sessions: 2 }], paths: ['0.workspaceDir', '0.grimoiresDir', '0.walDir'] },
  canonicalizeJson: { args: () => [{ a: [1, 'x', { b: null, c: true }] }] },
  canonicalizeJsonBuffer: { args: () => [{ a: [1, 'x', { b: null }] }] },
  canonicalizeJsonText: { args: () => ['{"a":[1,"x"]}'] },
  consolidateMemory: { async: true, args: (ctx) => [{ workspaceDir: ctx.ws, lockTimeoutMs: 100 }], paths: ['0.workspaceDir', '0.grimoiresDir', '0.walDir'] },
  consolidateMemorySync: { args: (ctx) => [{ workspaceDir: ctx.ws, lockTimeoutMs: 100 }], paths: ['0.workspaceDir', '0.grimoiresDir', '0.walDir'] },
  consolidateWal: { args: (ctx) => [ctx.walRead, join(ctx.dir, 'target'), { prune: false, lockTimeoutMs: 100 }], paths: ['0', '1'] },
  contentHash: { args: () => ['Always run the tests first'] },
  countTokens: { args: () => ['hello world', { encoding: 'o200k_base', safetyMargin: 0.1 }] },
  countTokensBatch: { args: () => [['hello', 'world'], { encoding: 'cl100k_base' }] },
  createManifest: { args: (ctx) => [ctx.manifestRoot, { include: ['**'], exclude: ['*.tmp'], threads: 1, onProgress: () => {} }], paths: ['0'] },
  createManifestAsync: { async: true, args: (ctx) => [ctx.manifestRoot, { include: ['**'], exclude: ['*.tmp'], threads: 1 }], paths: ['0'] },
  estimateTokens: { args: () => ['hello world'] },
  evaluateGates: {
    args: () => [
      { content: 'Always run the tests before merging', type: 'learning', confidence: 0.9, timestamp: ISO, sessionId: 's', tags: ['t'] },
      { minConfidence: 0.5, maxAgeMs: 1e12, knownHashes: ['ab'], now: ISO },
    ],
  },
  isLoaError: { args: () => [Object.assign(new Error('x'), { code: 'E_IO' })], neverThrows: true },
  loadConfig: { args: (ctx) => [ctx.ws], paths: ['0'] },
  loadRedactionKey: { async: true, args: (ctx, _, n) => [join(ctx.dir, `redaction-keys-${n}`)], paths: ['0'] },
  loadRedactionKeySync: { args: (ctx, _, n) => [join(ctx.dir, `redaction-keys-${n}`)], paths: ['0'] },
  loaErrorCodes: { args: () => [] },
  parseConfig: { args: () => ['context:\n  token_budget: 100\n'] },
  planCompaction: {
    args: () => [
      [{ id: 'a', target: 'stale_tool_results', tokens: 90, turn: 1, phase: 'testing', artifact: 'x' }],
      { contextWindowTokens: 100, compactThresholdPercent: 50, preserveRecentTurns: 0, clearTargets: ['stale_tool_results'], currentTurn: 9, runtimeSignals: { contextNearLimit: 'NEAR' } },
    ],
  },
  readManifest: { args: (ctx) => [ctx.manifestFile], paths: ['0'] },
  readSkillContextPolicy: { args: (ctx) => [ctx.skillFile, { enabled: true, preserveArtifacts: ['x'] }], paths: ['0'] },
  readWal: { args: (ctx) => [ctx.walRead], paths: ['0'] },
  redact: { args: () => ['mail bob@example.com', { allowlist: ['x'], key: 'k'.repeat(32), pseudonymize: true }] },
  redactAsync: { async: true, args: () => ['mail bob@example.com', { allowlist: ['x'], key: Buffer.alloc(32, 1), pseudonymize: false }] },
  redactBatch: { args: () => [['a', 'mail bob@example.com'], { allowlist: ['x'] }] },
  redactionKinds: { args: () => [] },
  recover: { async: true, args: (ctx) => [recoverOptions(ctx)], paths: recoverPaths },
  recoverSync: { args: (ctx) => [recoverOptions(ctx)], paths: recoverPaths },
  recoveryStatusSync: { args: (ctx) => [{ workspaceDir: ctx.ws, stateDir: '.r' }], paths: ['0.workspaceDir'] },
  generateSoul: { async: true, args: (ctx) => [soulOptions(ctx)], paths: soulPaths },
  generateSoulSync: { args: (ctx) => [soulOptions(ctx)], paths: soulPaths },
  heal: { async: true, args: (ctx) => [{ workspaceDir: ctx.ws, checkOnly: true, notesPath: 'n/NOTES.md', beadsDir: 'b', trajectoryDir: 't' }], paths: ['0.workspaceDir'] },
  healSync: { args: (ctx) => [{ workspaceDir: ctx.ws, checkOnly: true, notesPath: 'n/NOTES.md', beadsDir: 'b', trajectoryDir: 't' }], paths: ['0.workspaceDir'] },
  signManifest: { args: (ctx) => [manifestFiles(ctx), ctx.ring], paths: ['0.files.0.path', '0.files.1.path'] },
  verifyAuditLog: { args: (ctx) => [ctx.auditDir, { expectedHead: ctx.auditHead }], paths: ['0'] },
  verifyManifest: { args: (ctx) => [ctx.manifestRoot, ctx.signed, ctx.keyInfos, { threads: 1 }], paths: ['0', '1.files.0.path', '1.files.1.path'] },
  verifyManifestAsync: { async: true, args: (ctx) => [ctx.manifestRoot, ctx.signed, ctx.keyInfos, { threads: 1 }], paths: ['0', '1.files.0.path', '1.files.1.path'] },
  verifyManifestSignature: { args: (ctx) => [ctx.signed, ctx.keyInfos], paths: ['0.files.0.path', '0.files.1.path'] },
  verifyWal: { args: (ctx) => [ctx.walRead], paths: ['0'] },
  writeFileAtomic: { async: true, args: (ctx) => [join(ctx.dir, 'atomic.txt'), 'data', { mode: 0o600 }], paths: ['0'] },
  writeFileAtomicSync: { args: (ctx) => [join(ctx.dir, 'atomic.txt'), Buffer.from('data'), { mode: 0o600 }], paths: ['0'] },
  writeManifest: { args: (ctx) => [join(ctx.dir, 'written.json'), ctx.signed], paths: ['0', '1.files.0.path', '1.files.1.path'] },

  AttentionTracker: { construct: true, args: () => [{ contextWindowTokens: 200000, yellow: 5000, red: { tokens: 15000, fraction: 0.075 } }] },
  'AttentionTracker.prototype.add': { receiver: () => new core.AttentionTracker(), args: () => [100] },
  'AttentionTracker.prototype.reset': { receiver: () => new core.AttentionTracker(), args: () => [] },
  'AttentionTracker.prototype.status': { receiver: () => new core.AttentionTracker(), args: () => [] },
  'AttentionTracker.prototype.tokensUsed': { receiver: () => new core.AttentionTracker(), getter: true },

  'AuditLog.open': { args: (ctx, _, n) => [join(ctx.dir, `audit-${n}`), { maxSegmentBytes: 4096, hmacKey: Buffer.alloc(32, 7), lockTimeoutMs: 100 }], paths: ['0'] },
  'AuditLog.prototype.dir': { receiver: auditLog, getter: true },
  'AuditLog.prototype.truncatedTail': { receiver: auditLog, getter: true },
  'AuditLog.prototype.append': { receiver: auditLog, args: () => [{ action: 'manifest.sign', actor: 'system', details: { keyId: 'k', n: [1, { v: 'x' }] } }] },
  'AuditLog.prototype.head': { receiver: auditLog, args: () => [] },
  'AuditLog.prototype.verify': { receiver: auditLog, args: (ctx, log) => [{ expectedHead: log.head() }] },
  'AuditLog.prototype.checkpoint': { receiver: auditLog, args: (ctx) => [ctx.ring] },

  'KeyRing.open': { args: (ctx, _, n) => [join(ctx.dir, `keys-${n}`), { rotationDays: 90, overlapDays: 7, maxRetiredKeys: 3, useEnv: false }], paths: ['0'] },
  'KeyRing.prototype.dir': { receiver: keyRing, getter: true },
  'KeyRing.prototype.generate': { receiver: (ctx, n) => core.KeyRing.open(join(ctx.dir, `empty-keys-${n}`), { useEnv: false }), args: () => [] },
  'KeyRing.prototype.rotate': { receiver: keyRing, args: () => [] },
  'KeyRing.prototype.revoke': { receiver: keyRing, args: (ctx, ring) => [ring.list()[0].keyId, 'compromised'] },
  'KeyRing.prototype.list': { receiver: keyRing, args: () => [] },
  'KeyRing.prototype.verificationKeys': { receiver: keyRing, args: () => [] },
  'KeyRing.prototype.exportPrivateKey': { receiver: keyRing, args: (ctx, ring) => [ring.list()[0].keyId] },

  'MemoryStore.open': { args: (ctx, _, n) => [storeOptions(ctx, n)], paths: ['0.workspaceDir', '0.grimoiresDir', '0.walDir'] },
  'MemoryStore.openAsync': { async: true, args: (ctx, _, n) => [storeOptions(ctx, n)], paths: ['0.workspaceDir', '0.grimoiresDir', '0.walDir'] },
  'MemoryStore.prototype.capture': { async: true, receiver: memoryStore, args: () => [memoryEntry(), { expiresAt: '2999-01-01T00:00:00Z', ttlMs: 60000 }] },
  'MemoryStore.prototype.captureSync': { receiver: memoryStore, args: () => [memoryEntry(), { expiresAt: '2999-01-01T00:00:00Z', ttlMs: 60000 }] },
  'MemoryStore.prototype.search': { async: true, receiver: memoryStore, args: () => ['run the tests', searchOptions()] },
  'MemoryStore.prototype.searchSync': { receiver: memoryStore, args: () => ['run the tests', searchOptions()] },
  'MemoryStore.prototype.get': { receiver: memoryStore, args: () => ['a'.repeat(64), { agentId: 'agent' }] },
  'MemoryStore.prototype.readMarkdown': { receiver: memoryStore, args: () => [`memory/agents/agent/${'a'.repeat(64)}.md`, { from: 1, lines: 5, agentId: 'agent' }], paths: ['0'] },
  'MemoryStore.prototype.forget': { async: true, receiver: memoryStore, args: () => [{ query: 'run the tests', confirm: false, ...searchOptions() }, { auditHmacKey: Buffer.alloc(32, 7) }] },
  'MemoryStore.prototype.forgetSync': { receiver: memoryStore, args: () => [{ query: 'run the tests', confirm: false, ...searchOptions() }, { auditHmacKey: Buffer.alloc(32, 7) }] },
  'MemoryStore.prototype.importMarkdown': { async: true, receiver: memoryStore, args: (ctx) => [ctx.ws, { agentId: 'agent', confidence: 0.8 }], paths: ['0'] },
  'MemoryStore.prototype.importMarkdownSync': { receiver: memoryStore, args: (ctx) => [ctx.ws, { agentId: 'agent', confidence: 0.8 }], paths: ['0'] },
  'MemoryStore.prototype.consolidate': { async: true, receiver: memoryStore, args: () => [] },
  'MemoryStore.prototype.consolidateSync': { receiver: memoryStore, args: () => [] },
  'MemoryStore.prototype.buildContext': { receiver: memoryStore, args: () => [{ budget: 100, sessionShare: 0.5, encoding: 'o200k_base', safetyMargin: 0.1, sessions: 2, learnings: 2, query: 'run the tests', agentId: 'agent' }] },
  'MemoryStore.prototype.buildContextExplained': { receiver: memoryStore, args: () => [{ budget: 100, sessionShare: 0.5, encoding: 'o200k_base', safetyMargin: 0.1, sessions: 2, learnings: 2, query: 'run the tests', agentId: 'agent' }] },
  'MemoryStore.prototype.inventory': { async: true, receiver: memoryStore, args: () => [{ agentId: 'agent', limit: 10 }] },
  'MemoryStore.prototype.inventorySync': { receiver: memoryStore, args: () => [{ agentId: 'agent', limit: 10 }] },
  'MemoryStore.prototype.recentSessions': { receiver: memoryStore, args: () => [3] },
  'MemoryStore.prototype.activeLearnings': { receiver: memoryStore, args: () => [3] },
  'MemoryStore.prototype.sessionId': { receiver: memoryStore, getter: true },
  'MemoryStore.prototype.closed': { receiver: memoryStore, getter: true },
  'MemoryStore.prototype.close': { receiver: memoryStore, args: () => [] },

  'Ledger.open': { args: (ctx) => [{ workspaceDir: ctx.ws }], paths: ['0.workspaceDir'] },
  'Ledger.prototype.workspaceDir': { receiver: ledger, getter: true },
  'Ledger.prototype.readNotes': { receiver: ledger, args: () => [] },
  'Ledger.prototype.editNotes': { receiver: ledger, args: () => [{ activeContext: [{ key: 'k', value: 'v' }], identifiers: [{ identifier: '${PROJECT_ROOT}/ledger.txt:1', purpose: 'p' }], pendingQuestions: [{ text: 'q?', done: false }] }] },
  'Ledger.prototype.recall': { async: true, receiver: ledger, args: () => [{ level: 2, query: 'tests', k: 3, tokens: 50 }] },
  'Ledger.prototype.recallSync': { receiver: ledger, args: () => [{ level: 1, tokens: 50 }] },
  'Ledger.prototype.groundingCheck': { async: true, receiver: ledger, args: () => [{ agent: 'main', at: ISO }] },
  'Ledger.prototype.groundingCheckSync': { receiver: ledger, args: () => [{ agent: 'main', at: ISO }] },
  'Ledger.prototype.checkpoint': { async: true, receiver: ledger, args: () => [ledgerCheckpoint()] },
  'Ledger.prototype.checkpointSync': { receiver: ledger, args: () => [ledgerCheckpoint()] },
  'Ledger.prototype.resolveIdentifier': { receiver: ledger, args: () => ['${PROJECT_ROOT}/ledger.txt:1'] },
  'Ledger.prototype.listBeads': { receiver: ledger, args: () => [] },
  'Ledger.prototype.readBead': { receiver: ledger, args: () => ['bd-1'] },
  'Ledger.prototype.appendBead': { receiver: ledger, args: () => ['bd-1', { decisions: [{ decision: 'Use JWT', rationale: 'r', evidence: [{ identifier: '${PROJECT_ROOT}/ledger.txt:1', quote: 'line' }], testScenarios: ['a -> b'] }], testScenarios: [{ name: 'n', type: 'edge_case', expected: 'e' }], nextSteps: ['s'] }] },
  'Ledger.prototype.cite': { receiver: ledger, args: () => [{ agent: 'main', claim: 'c', grounding: 'citation', evidence: { identifier: '${PROJECT_ROOT}/ledger.txt:1', quote: 'line' }, at: ISO }] },
  'Ledger.prototype.readTrajectory': { receiver: ledger, args: () => [{ agent: 'main', at: ISO }] },
  // Staying `in_progress` is always legal, so every case of the valid call can write again.
  'Ledger.prototype.persistState': { async: true, receiver: ledger, args: () => [ledgerPersist()] },
  'Ledger.prototype.persistStateSync': { receiver: ledger, args: () => [ledgerPersist()] },
  'Ledger.prototype.recoverState': { async: true, receiver: ledger, args: () => ['apex'] },
  'Ledger.prototype.recoverStateSync': { receiver: ledger, args: () => ['apex'] },
  transitionStatus: { args: () => ['created', 'in_progress'] },
  writeLedgerEvent: { async: true, args: (ctx) => [join(ctx.dir, 'handoffs'), ledgerEvent()], paths: ['0'] },
  writeLedgerEventSync: { args: (ctx) => [join(ctx.dir, 'handoffs'), ledgerEvent()], paths: ['0'] },
  synthesizeLedger: { async: true, args: (ctx) => [join(ctx.dir, 'handoffs'), synthOptions(ctx)], paths: ['0', '1.keysDir'] },
  synthesizeLedgerSync: { args: (ctx) => [join(ctx.dir, 'handoffs'), synthOptions(ctx)], paths: ['0', '1.keysDir'] },

  'Wal.open': { args: (ctx, _, n) => [join(ctx.dir, `wal-${n}`), walOptions()], paths: ['0'] },
  'Wal.openAsync': { async: true, args: (ctx, _, n) => [join(ctx.dir, `wal-${n}`), walOptions()], paths: ['0'] },
  'Wal.prototype.append': { async: true, receiver: wal, args: () => [walRecord()] },
  'Wal.prototype.appendSync': { receiver: wal, args: () => [walRecord()] },
  'Wal.prototype.replay': { receiver: wal, args: () => [{ sinceSeq: 0, limit: 10 }] },
  'Wal.prototype.stats': { receiver: wal, args: () => [] },
  'Wal.prototype.closed': { receiver: wal, getter: true },
  'Wal.prototype.close': { receiver: wal, args: () => [] },
}

function auditLog(ctx, n) {
  const log = core.AuditLog.open(join(ctx.dir, `log-${n}`), { lockTimeoutMs: 100 })
  log.append({ action: 'start', actor: 'system' })
  return log
}
function keyRing(ctx, n) {
  const ring = core.KeyRing.open(join(ctx.dir, `ring-${n}`), { useEnv: false })
  ring.generate()
  return ring
}
function memoryStore(ctx, n) {
  return core.MemoryStore.open({ workspaceDir: ctx.ws, sessionId: `r${n}`, lockTimeoutMs: 100 })
}
function ledger(ctx) {
  writeFileSync(join(ctx.ws, 'ledger.txt'), 'line one\n')
  return core.Ledger.open({ workspaceDir: ctx.ws })
}
// Small on purpose: every field multiplies the cases, and each case runs a whole checkpoint
// (the other fields' shapes are the same `List<Obj<...>>` conversions, covered by editNotes).
const ledgerCheckpoint = () => ({
  sessionId: 's',
  agent: 'main',
  activeContext: [{ key: 'k', value: 'v' }],
  at: ISO,
})
const ledgerPersist = () => ({
  workflow: 'apex',
  status: 'in_progress',
  data: { step: 2, tags: ['a', { b: null }] },
  memory: { kind: 'checkpoint', workflowType: 'APEX', completed: 'plan', next: 'implementing', context: 'billing' },
  at: ISO,
})
function wal(ctx, n) {
  return core.Wal.open(join(ctx.dir, `w-${n}`), { sessionId: 's', lockTimeoutMs: 100, sync: 'none' })
}
const walOptions = () => ({ sessionId: 's', lockTimeoutMs: 100, segmentMaxBytes: 8192, segmentMaxAgeMs: 60000, sync: 'none' })
const walRecord = () => ({ op: 'write', path: 'notes/a.md', data: 'text', meta: { k: [1, { v: 'x' }] } })
const storeOptions = (ctx, n) => ({
  workspaceDir: ctx.ws,
  sessionId: `o${n}`,
  lockTimeoutMs: 100,
  grimoiresDir: 'g',
  walDir: 'w',
  gates: { minConfidence: 0.5, minContentLength: 5 },
  redaction: { allowlist: ['x'], key: 'k'.repeat(32), pseudonymize: false },
})
const searchOptions = () => ({ limit: 5, minScore: 0, kinds: ['learning', 'decision'], agentId: 'agent', since: '2000-01-01T00:00:00Z' })
const memoryEntry = () => ({
  type: 'learning',
  content: 'Always run the tests before merging',
  agentId: 'agent',
  confidence: 0.9,
  tags: ['testing'],
  timestamp: new Date().toISOString(),
  metadata: { source: 'chat', refs: [1, { v: 'x' }] },
})

// ---------------------------------------------------------------------------------------------
// The module's callables, enumerated at run time.
// ---------------------------------------------------------------------------------------------

function callables(module) {
  const out = []
  for (const [name, value] of Object.entries(module)) {
    if (typeof value !== 'function') continue // string enums, the binding target marker
    if (!/^[A-Z]/.test(name)) {
      out.push(name)
      continue
    }
    const statics = Object.getOwnPropertyNames(value).filter((k) => !['length', 'name', 'prototype'].includes(k) && typeof value[k] === 'function')
    const members = Object.getOwnPropertyNames(value.prototype).filter((k) => k !== 'constructor')
    // A class without a constructor of its own (napi-rs refuses `new`) is made by its factories.
    if (statics.length === 0) out.push(name)
    for (const s of statics) out.push(`${name}.${s}`)
    for (const m of members) out.push(`${name}.prototype.${m}`)
  }
  return out.sort()
}

// ---------------------------------------------------------------------------------------------
// Hostile values
// ---------------------------------------------------------------------------------------------

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
const random = (n, alphabet = ALNUM) => [...randomBytes(n)].map((b) => alphabet[b % alphabet.length]).join('')
/** Fake credentials of real shapes, made at run time (no token-shaped literal in the source). */
function makeSecrets() {
  return [
    'gh' + 'p_' + random(36),
    'sk-' + 'ant-' + 'api03-' + random(40) + '-' + random(20),
    'AK' + 'IA' + random(16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'),
    'xox' + 'b-' + random(12, '0123456789') + '-' + random(24),
    `jane.${random(6, 'abcdefghij')}@example.org`,
    random(40, '0123456789abcdef'),
  ]
}

function deepArray(depth) {
  let v = []
  for (let i = 0; i < depth; i++) v = [v]
  return v
}
function deepObject(depth) {
  let v = {}
  for (let i = 0; i < depth; i++) v = { a: v }
  return v
}

const TRAPS = ['get', 'has', 'ownKeys', 'getOwnPropertyDescriptor', 'getPrototypeOf']

function isPlain(v) {
  if (v === null || typeof v !== 'object') return false
  if (Array.isArray(v)) return true
  const proto = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null
}

/** A deep copy of plain objects and arrays (anything else shared). */
function clone(v) {
  if (!isPlain(v)) return v
  if (Array.isArray(v)) return v.map(clone)
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, clone(x)]))
}

/** Every path (array of keys) to a member of a plain value, to `depth` levels. */
function memberPaths(v, depth = 3, prefix = []) {
  if (!isPlain(v) || depth === 0) return []
  const out = []
  for (const k of Object.keys(v)) {
    out.push([...prefix, k])
    out.push(...memberPaths(v[k], depth - 1, [...prefix, k]))
  }
  return out
}

function parentAt(root, path) {
  let v = root
  for (const k of path.slice(0, -1)) v = v[k]
  return v
}

// ---------------------------------------------------------------------------------------------
// Child process: runs every case of one spec, reports violations.
// ---------------------------------------------------------------------------------------------

async function runChild(name) {
  const spec = SPECS[name]
  const dir = process.cwd()
  const secrets = makeSecrets()
  // What throwing getters and traps throw: never to be seen in a message.
  const marker = 'gh' + 'p_' + random(36)
  const violations = []
  const hide = (text) => [...secrets, marker].reduce((t, s) => t.split(s).join('<secret>'), String(text))
  const report = (label, what) => violations.push(hide(`${label}: ${what}`))
  let current = 'setup'
  process.on('unhandledRejection', (err) => report(current, `unhandled rejection: ${err?.code} ${err?.message}`))
  process.on('uncaughtException', (err) => report(current, `uncaught exception: ${err?.code} ${err?.message}`))

  // Fixtures.
  const ctx = { dir, ws: join(dir, 'ws') }
  mkdirSync(ctx.ws)
  ctx.manifestRoot = join(dir, 'root')
  mkdirSync(join(ctx.manifestRoot, 'sub'), { recursive: true })
  writeFileSync(join(ctx.manifestRoot, 'a.txt'), 'a')
  writeFileSync(join(ctx.manifestRoot, 'sub', 'b.txt'), 'b')
  ctx.ring = core.KeyRing.open(join(dir, 'keys'), { useEnv: false })
  ctx.ring.generate()
  ctx.keyInfos = ctx.ring.verificationKeys()
  ctx.manifest = core.createManifest(ctx.manifestRoot)
  ctx.signed = core.signManifest(ctx.manifest, ctx.ring)
  ctx.manifestFile = join(dir, 'manifest.json')
  core.writeManifest(ctx.manifestFile, ctx.signed)
  ctx.skillFile = join(dir, 'SKILL.md')
  writeFileSync(ctx.skillFile, '---\nname: s\ncontext_editing:\n  preserve_recent_turns: 2\n---\nbody\n')
  ctx.walRead = join(dir, 'wal-read')
  const w = core.Wal.open(ctx.walRead, { sessionId: 'fixture', sync: 'none' })
  w.appendSync({ op: 'write', path: 'x.md', data: 'x' })
  w.close()
  ctx.auditDir = join(dir, 'audit')
  const log = core.AuditLog.open(ctx.auditDir)
  ctx.auditHead = log.append({ action: 'start', actor: 'system' })

  const isMethod = name.includes('.prototype.')
  const parts = name.split('.')
  const className = parts[0]
  const member = parts[parts.length - 1]
  const isStatic = !isMethod && name.includes('.')
  const hugeString = 'x'.repeat((1 << 20) + 1)
  const deepA = deepArray(100_000)
  const deepO = deepObject(100_000)
  const lone = 'lone \uD800 surrogate'

  /** Read counts of counting getters, and the paths they stand for. */
  let n = 0
  const close = async (value) => {
    try {
      const v = await value
      if (v && typeof v.close === 'function' && (v instanceof core.Wal || v instanceof core.MemoryStore)) v.close()
    } catch {}
  }

  /** One call: classifies its outcome. `secretAt`: the path a secret was put at, if any. */
  async function run(label, makeArgs, { secretAt = null, counters = null } = {}) {
    current = label
    n++
    console.log(`CASE ${n} ${label}`)
    let receiver = null
    try {
      receiver = isMethod ? spec.receiver(ctx, n) : null
    } catch (err) {
      report(label, `receiver could not be made: ${err.code} ${err.message}`)
      return
    }
    let argsList
    try {
      argsList = makeArgs(spec.args ? spec.args(ctx, receiver, n) : [])
    } catch (err) {
      report(label, `arguments could not be built: ${err.message}`)
      return
    }
    const allowed = secretAt !== null && (spec.paths ?? []).some((p) => secretAt === p || secretAt.startsWith(p + '.'))
    const check = (err, how) => {
      if (!core.isLoaError(err) || typeof err.code !== 'string' || !err.code.startsWith('E_')) {
        report(label, `${how} that is not a LoaError: ${err?.code} ${err?.message}`)
        return
      }
      if (err.code === 'E_INTERNAL') report(label, `${how} E_INTERNAL: ${err.message}`)
      const message = String(err.message) + JSON.stringify(Object.assign({}, err))
      if (message.includes(marker) || secrets.some((s) => message.includes(s) && !allowed)) report(label, `a secret in a message (${how}): ${err.message}`)
    }
    let result
    let threw = false
    let failed = false
    try {
      if (spec.getter) result = receiver[member]
      else if (isMethod) result = receiver[member](...argsList)
      else if (spec.construct) result = new core[name](...argsList)
      else if (isStatic) result = core[className][member](...argsList)
      else result = core[name](...argsList)
    } catch (err) {
      threw = true
      failed = true
      if (spec.async || spec.neverThrows) report(label, `threw synchronously (${err?.code}) instead of returning a rejected promise`)
      check(err, 'throw')
    }
    if (!threw && result && typeof result.then === 'function') {
      if (!spec.async) report(label, 'returned a promise but is not declared async')
      try {
        result = await result
      } catch (err) {
        check(err, 'rejection')
        failed = true
        result = null
      }
    } else if (!threw && spec.async) {
      report(label, 'did not return a promise')
    }
    if (counters) {
      for (const [path, count] of counters) if (count() > 1) report(label, `${path} was read ${count()} times`)
    }
    await close(result)
    await close(receiver)
    // Let rejections that nobody handles surface while this case is current.
    await new Promise((resolve) => setImmediate(resolve))
    return { failed }
  }

  // 1. The valid call works.
  const baseline = await run('valid call', (args) => args)
  if (!baseline || baseline.failed) report('valid call', 'the valid call failed: the spec is wrong')
  if (spec.getter) return finish()

  // 2. Each argument (and one past the end) replaced by each hostile value.
  const sample = isMethod ? spec.receiver(ctx, 0) : null
  const validArgs = spec.args(ctx, sample, 0)
  await close(sample)
  const positionValues = (valid) => {
    const values = [
      ['undefined', () => undefined],
      ['null', () => null],
      ['42', () => 42],
      ['-1', () => -1],
      ['1.5', () => 1.5],
      ['NaN', () => NaN],
      ['Infinity', () => Infinity],
      ['true', () => true],
      ['empty string', () => ''],
      ['a string', () => 'string'],
      ['a symbol', () => Symbol('s')],
      ['a BigInt', () => 10n],
      ['a function', () => () => 1],
      ['[]', () => []],
      ['{}', () => ({})],
      ['a Date', () => new Date(0)],
      ['a Map', () => new Map([[1, 2]])],
      ['a Buffer', () => Buffer.from('x')],
      ['a huge string', () => hugeString],
      ['a lone surrogate', () => lone],
      ['a 100,000-deep array', () => deepA],
      ['a 100,000-deep object', () => deepO],
      ['an object of throwing getters', () => throwingGetters(valid)],
      ['a revoked Proxy', () => revoked(valid)],
      ...TRAPS.map((trap) => [`a Proxy whose ${trap} trap throws`, () => throwingProxy(valid, trap)]),
    ]
    secrets.forEach((s, i) => values.push([`secret #${i}`, () => s, true]))
    return values
  }
  const throwingGetters = (valid) => {
    const o = {}
    const keys = isPlain(valid) && !Array.isArray(valid) ? Object.keys(valid) : ['x']
    for (const k of keys) Object.defineProperty(o, k, { enumerable: true, get() { throw new Error(marker) } })
    return o
  }
  const revoked = (valid) => {
    const r = Proxy.revocable(typeof valid === 'object' && valid !== null ? valid : {}, {})
    r.revoke()
    return r.proxy
  }
  const throwingProxy = (valid, trap) =>
    new Proxy(typeof valid === 'object' && valid !== null ? clone(valid) : {}, {
      [trap]() {
        throw new Error(marker)
      },
    })
  for (let i = 0; i <= validArgs.length; i++) {
    for (const [what, make, isSecret] of positionValues(validArgs[i])) {
      await run(`argument ${i} = ${what}`, (args) => {
        const out = [...args]
        out[i] = make()
        return out
      }, { secretAt: isSecret ? String(i) : null })
    }
  }

  // 3. Inside each object argument: each member replaced, made a throwing getter, read counted;
  // secrets added as keys; the object wrapped in throwing Proxies.
  const memberValues = [
    ['undefined', () => undefined],
    ['null', () => null],
    ['42', () => 42],
    ['NaN', () => NaN],
    ['-1', () => -1],
    ['a string', () => 'string'],
    ['a symbol', () => Symbol('s')],
    ['a BigInt', () => 10n],
    ['a function', () => () => 1],
    ['{}', () => ({})],
    ['[]', () => []],
    ['a lone surrogate', () => lone],
    ['a huge string', () => hugeString],
    ['a 100,000-deep array', () => deepA],
    ['a 100,000-deep object', () => deepO],
    ['a revoked Proxy', () => revoked({})],
    ['a Proxy whose get trap throws', () => throwingProxy({}, 'get')],
  ]
  for (let i = 0; i < validArgs.length; i++) {
    if (!isPlain(validArgs[i])) continue
    for (const path of memberPaths(validArgs[i])) {
      const where = `argument ${i}.${path.join('.')}`
      const at = [String(i), ...path].join('.')
      const mutate = (fn) => (args) => {
        const out = args.map(clone)
        const parent = parentAt(out[i], path)
        fn(parent, path[path.length - 1])
        return out
      }
      for (const [what, make] of memberValues) await run(`${where} = ${what}`, mutate((p, k) => (p[k] = make())))
      for (const [j, s] of secrets.entries()) await run(`${where} = secret #${j}`, mutate((p, k) => (p[k] = s)), { secretAt: at })
      await run(`${where} is a throwing getter`, mutate((p, k) => Object.defineProperty(p, k, { enumerable: true, get() { throw new Error(marker) } })))
      // A getter that answers differently on each read: valid first, hostile after.
      await run(`${where} changes on each read`, mutate((p, k) => {
        const first = p[k]
        let reads = 0
        Object.defineProperty(p, k, { enumerable: true, get: () => (reads++ === 0 ? first : reads % 2 ? lone : NaN) })
      }))
    }
    // Read counts: every member a getter that counts.
    const counters = []
    await run(`argument ${i}: every member read at most once`, (args) => {
      const out = args.map(clone)
      // Deepest first: installing a getter must not read through one installed before.
      for (const path of memberPaths(out[i]).sort((a, b) => b.length - a.length)) {
        const parent = parentAt(out[i], path)
        const k = path[path.length - 1]
        const value = parent[k]
        let reads = 0
        counters.push([`argument ${i}.${path.join('.')}`, () => reads])
        Object.defineProperty(parent, k, { enumerable: true, configurable: true, get: () => (reads++, value) })
      }
      return out
    }, { counters })
    // Secrets as keys, with values that are refused, at every level.
    for (const container of [[], ...memberPaths(validArgs[i]).filter((p) => isPlain(parentAt(validArgs[i], [...p, '_'])))]) {
      for (const [what, make] of [['NaN', () => NaN], ['a lone surrogate', () => lone], ['a secret', (s) => s]]) {
        for (const [j, s] of secrets.entries()) {
          await run(`argument ${i}${container.map((k) => '.' + k).join('')} gets secret #${j} as a key, = ${what}`, (args) => {
            const out = args.map(clone)
            const target = container.length ? parentAt(out[i], [...container, '_']) : out[i]
            if (Array.isArray(target)) target.push({ [s]: make(s) })
            else target[s] = make(s)
            return out
          })
        }
      }
    }
    for (const trap of TRAPS) {
      await run(`argument ${i} in a Proxy whose ${trap} trap throws`, (args) => {
        const out = [...args]
        out[i] = throwingProxy(args[i], trap)
        return out
      })
    }
  }
  return finish()

  function finish() {
    console.log('RESULT ' + JSON.stringify({ cases: n, violations }))
  }
}

if (process.argv[2] === '--child') {
  await runChild(process.argv[3])
  process.exitCode = 0
} else {
  test('every export, factory, method and getter has hostile cases (none slips through)', () => {
    assert.deepEqual(callables(core), Object.keys(SPECS).sort())
  })

  test('classes without a constructor refuse `new`, and methods refuse a foreign `this`, without harm', () => {
    // These errors come from napi-rs and V8 before any of our code runs (no `code`); what
    // matters is a plain synchronous throw and a process that lives on.
    for (const name of ['AuditLog', 'KeyRing', 'Ledger', 'MemoryStore', 'Wal']) assert.throws(() => new core[name](), Error, name)
    for (const name of callables(core).filter((n) => n.includes('.prototype.'))) {
      const [cls, , member] = name.split('.')
      const descriptor = Object.getOwnPropertyDescriptor(core[cls].prototype, member)
      const call = descriptor.get ? () => descriptor.get.call({}) : () => descriptor.value.call({}, {})
      assert.throws(call, Error, name)
    }
    assert.ok(core.loaErrorCodes().length > 0)
  })

  test('hostile arguments: one coded outcome per call, no crash, no leaked exception, no secret, no double read', async (t) => {
    const names = Object.keys(SPECS).sort()
    const failures = []
    const runOne = async (name) => {
      const dir = tempDir(t, 'loa-hostile-')
      const child = spawn(process.execPath, [here, '--child', name], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      let err = ''
      child.stdout.setEncoding('utf8').on('data', (d) => (out += d))
      child.stderr.setEncoding('utf8').on('data', (d) => (err += d))
      const timer = setTimeout(() => child.kill('SIGKILL'), 300_000)
      const [status, signal] = await new Promise((resolve) => child.on('close', (c, s) => resolve([c, s])))
      clearTimeout(timer)
      const lines = out.split('\n')
      const last = [...lines].reverse().find((l) => l.startsWith('CASE ')) ?? '(none)'
      const result = lines.find((l) => l.startsWith('RESULT '))
      if (status !== 0 || signal || !result) {
        failures.push(`${name}: child exited with ${status ?? signal} during ${last}; stderr: ${err.slice(-2000)}`)
        return
      }
      const { cases, violations } = JSON.parse(result.slice(7))
      if (cases < 1) failures.push(`${name}: no case ran`)
      for (const v of violations) failures.push(`${name}: ${v}`)
    }
    // Two at a time.
    const queue = [...names]
    await Promise.all([0, 1].map(async () => {
      while (queue.length) await runOne(queue.shift())
    }))
    if (process.env.LOA_HOSTILE_REPORT) writeFileSync(process.env.LOA_HOSTILE_REPORT, failures.join('\n'))
    assert.deepEqual(failures.slice(0, 40), [], `${failures.length} violations`)
  })
}
