// Type-checked (tsc --strict, never run) the way extensions/loa imports the package: by its
// published name, through package.json "exports" and the generated index.d.ts.
import {
  attentionLevel,
  AttentionTracker,
  AuditLog,
  buildContext,
  canonicalizeJson,
  consolidateMemory,
  consolidateWal,
  contentHash,
  countTokens,
  countTokensBatch,
  createManifest,
  estimateTokens,
  evaluateGates,
  isLoaError,
  KeyRing,
  loadConfig,
  MemoryStore,
  planCompaction,
  readManifest,
  readSkillContextPolicy,
  readWal,
  redact,
  redactAsync,
  redactBatch,
  redactionKinds,
  signManifest,
  verifyAuditLog,
  verifyManifest,
  verifyWal,
  Wal,
  writeFileAtomic,
  writeManifest,
  type AttentionStatus,
  type AuditHead,
  type AuditVerification,
  type BuiltContext,
  type CaptureResult,
  type CompactionPlan,
  type CompactionPolicy,
  type ContextPart,
  type Finding,
  type GateEvaluation,
  type GateName,
  type KeyInfo,
  type Learning,
  type LoaConfig,
  type LoaError,
  type LoaErrorCode,
  type Manifest,
  type ManifestProblem,
  type ManifestVerification,
  type MemoryConsolidation,
  type Redaction,
  type RedactOptions,
  type SessionEntry,
  type SignedManifest,
  type WalRecord,
} from '@loa/core'

export async function remember(dir: string, sessionId: string, text: string): Promise<number | undefined> {
  const config: LoaConfig = loadConfig(dir).config
  const wal = Wal.open(config.wal.dir, {
    sessionId,
    lockTimeoutMs: config.wal.lockTimeoutMs,
    sync: config.wal.sync,
  })
  try {
    const seq: number = await wal.append({ op: 'write', path: 'NOTES.md', data: text, meta: { source: 'agent_end' } })
    const records: WalRecord[] = wal.replay({ sinceSeq: seq - 1 })
    const first: Buffer | undefined = records[0]?.data
    void first
    return seq
  } catch (err: unknown) {
    if (isLoaError(err)) {
      const narrowed: LoaError = err
      const code: LoaErrorCode = narrowed.code
      if (code === 'E_WAL_LOCKED') return undefined
      // @ts-expect-error a code that does not exist is a type error
      if (code === 'E_NOT_A_CODE') return undefined
    }
    throw err
  } finally {
    wal.close()
  }
}

export function check(dir: string, target: string): boolean {
  const { ok, corrupt } = verifyWal(dir)
  const { applied, conflicts } = consolidateWal(dir, target, { prune: true })
  const hashes: string[] = conflicts.map((c) => c.overwritten.hash)
  void writeFileAtomic(`${target}/summary.json`, JSON.stringify({ applied, hashes }))
  return ok && corrupt.length === 0 && readWal(dir).length >= 0
}

export async function captureTurn(workspaceDir: string, sessionId: string, text: string): Promise<string[]> {
  const verdict: GateEvaluation = evaluateGates(
    { content: text, type: 'interaction', confidence: 0.8, timestamp: new Date().toISOString() },
    { maxAgeMs: 60_000, knownHashes: [contentHash(text)] },
  )
  const failed: GateName[] = verdict.gates.filter((g) => !g.pass).map((g) => g.name)
  // @ts-expect-error not a memory type
  evaluateGates({ content: text, type: 'gossip' })
  const store = await MemoryStore.openAsync({ workspaceDir, sessionId, gates: { minConfidence: 0.6 }, redaction: { key: 'k', allowlist: [] } })
  try {
    const result: CaptureResult = await store.capture({ type: 'learning', content: text, tags: ['x'], metadata: { turn: 1 } })
    if (result.blocked) return result.findings.map((f) => `${f.field}:${f.kind}:${f.fingerprint}`)
    const seq: number | undefined = result.seq
    void seq
    const done: MemoryConsolidation = await store.consolidate()
    const sessions: SessionEntry[] = store.recentSessions(3)
    const learnings: Learning[] = store.activeLearnings(done.learningsTotal)
    const again: MemoryConsolidation = await consolidateMemory({ workspaceDir })
    void again
    return [...failed, ...sessions.map((s) => s.lastActiveAt), ...learnings.map((l) => `${l.type}:${l.importance}`)]
  } catch (err: unknown) {
    if (isLoaError(err) && err.code === 'E_STATE_CORRUPT') return [err.path ?? '']
    throw err
  } finally {
    store.close()
  }
}

// Signed state: keys, manifests, audit log, canonical JSON.
export function sealState(stateDir: string, keysDir: string, auditDir: string, hmacKey: Buffer): boolean {
  const ring: KeyRing = KeyRing.open(keysDir, { rotationDays: 90, overlapDays: 7 })
  if (ring.list().every((k: KeyInfo) => k.status !== 'active')) ring.generate()
  const manifest: Manifest = createManifest(stateDir, { exclude: ['./manifest.json'], onProgress: (p) => void p.bytesDone })
  const signed: SignedManifest = signManifest(manifest, ring)
  writeManifest(`${stateDir}/manifest.json`, signed)
  const check: ManifestVerification = verifyManifest(stateDir, readManifest(`${stateDir}/manifest.json`), ring.verificationKeys())
  const kinds: ManifestProblem['kind'][] = check.problems.map((p) => p.kind)
  const log = AuditLog.open(auditDir, { hmacKey, maxSegmentBytes: 1 << 20 })
  const head: AuditHead = log.append({ action: 'manifest.sign', actor: 'system', details: { keyId: signed.signature.keyId, kinds } })
  const audit: AuditVerification = verifyAuditLog(auditDir, { hmacKey, expectedHead: head })
  const text: string = canonicalizeJson({ head, ok: check.ok })
  // @ts-expect-error actors are a closed set
  log.append({ action: 'x', actor: 'root' })
  try {
    ring.revoke(signed.signature.keyId, 'rotated out')
  } catch (err: unknown) {
    if (isLoaError(err) && (err.code === 'E_KEY_NOT_FOUND' || err.code === 'E_SIGNATURE_INVALID' || err.code === 'E_AUDIT_CORRUPT')) return false
  }
  return check.ok && audit.ok && text.length > 0
}

// What the plugin's before_prompt_build hook does with the context API.
export function prependContext(dir: string, sessions: { timestamp: string; summary: string }[]): string | undefined {
  const { context, attentionBudget, contextEditing } = loadConfig(dir).config
  const built: BuiltContext = buildContext({
    sessions,
    learnings: [{ trigger: 'tests hang', solution: 'check the LOCK file', importance: 0.9, lastUsed: '2025-11-21T10:00:00Z' }],
    budget: context.tokenBudget,
    sessionShare: 1 - context.learningsShare,
    encoding: context.encoding,
    safetyMargin: context.safetyMargin,
    minTruncatedTokens: context.minTruncatedTokens,
  })
  for (const drop of built.dropped) {
    const reason: 'empty' | 'does_not_fit' | 'budget_full' | 'no_budget' = drop.reason
    void [drop.item.kind, drop.item.index, reason]
  }
  const perItem: number[] = built.included.map((i) => i.tokens)
  const total: number = countTokens(built.text ?? '', { encoding: 'cl100k_base', safetyMargin: 0.2 })
  const counts: number[] = countTokensBatch(['a', 'b'])
  void [perItem, total, counts, estimateTokens('x')]

  const tracker = new AttentionTracker(attentionBudget)
  for (const crossed of tracker.add(built.tokens).crossed) {
    if (crossed.action === 'delta_sync') void crossed.message
  }
  const status: AttentionStatus = attentionLevel(tracker.tokensUsed, { yellow: 4000 })
  const level: 'green' | 'yellow' | 'orange' | 'red' = status.level
  void level

  const parts: ContextPart[] = [{ id: 't1', target: 'stale_tool_results', tokens: 1200, turn: 3 }, { id: 'u1', target: 'user_message', tokens: 40, turn: 9 }]
  const policy: CompactionPolicy = { ...contextEditing, contextWindowTokens: attentionBudget.contextWindowTokens, completedPhases: ['initialization'] }
  const plan: CompactionPlan = planCompaction(parts, policy)
  const skill = readSkillContextPolicy(`${dir}/SKILL.md`, policy)
  const again: CompactionPlan = planCompaction(parts, skill.policy)
  // @ts-expect-error an unknown clear target is a type error
  planCompaction(parts, { clearTargets: ['everything'] })
  void again
  return plan.signal === 'COMPACTION_COMPLETE' ? (built.text ?? undefined) : undefined
}

export async function scrub(text: string, key: Buffer): Promise<string | null> {
  const options: RedactOptions = { key, pseudonymize: true, allowlist: ['support@example.com'] }
  const r: Redaction = redact(text, options)
  if (r.blocked) return null
  const spans: Array<[string, number, number]> = r.findings.map((f: Finding) => [f.kind, f.start, f.end])
  const method: 'pattern' | 'checksum' | 'keyword' | 'entropy' | undefined = r.findings[0]?.method
  void spans
  void method
  const [again]: Redaction[] = redactBatch([r.text], { key: new Uint8Array(key) })
  const later: Redaction = await redactAsync(text)
  // @ts-expect-error the key is bytes or a string, not a number
  redact(text, { key: 42 })
  return again && later && redactionKinds().includes('email') ? again.text : null
}
