// Type-checked (tsc --strict, never run) the way extensions/loa imports the package: by its
// published name, through package.json "exports" and the generated index.d.ts.
import {
  AttentionTracker,
  Wal,
  attentionLevel,
  buildContext,
  consolidateWal,
  countTokens,
  countTokensBatch,
  estimateTokens,
  isLoaError,
  loadConfig,
  planCompaction,
  readSkillContextPolicy,
  readWal,
  verifyWal,
  writeFileAtomic,
  type AttentionStatus,
  type BuiltContext,
  type CompactionPlan,
  type CompactionPolicy,
  type ContextPart,
  type LoaConfig,
  type LoaError,
  type LoaErrorCode,
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
