// Type-checked (tsc --strict, never run): the dead-letter queue as the plugin and scripts use it.
import {
  appendDeadLetter,
  appendDeadLetterSync,
  listDeadLetters,
  replayDeadLetters,
  replayDeadLettersSync,
  type DeadLetter,
  type DeadLetterReplay,
  type DeadLetterReplayResult,
} from '@loa/core'

export async function strand(workspaceDir: string, err: unknown): Promise<string> {
  const error = err instanceof Error ? err : { code: 'E_UNKNOWN', message: String(err) }
  const letter: DeadLetter = await appendDeadLetter(
    { workspaceDir, redaction: { allowlist: ['support@example.com'], pseudonymize: false } },
    { sessionId: 'agent-1', entry: { type: 'decision', content: 'Deploy on Fridays', confidence: 0.9 }, attempts: 3, error },
  )
  const blocked: boolean = letter.blocked
  const content: string | null | undefined = letter.entry.content
  void blocked
  void content
  appendDeadLetterSync({ workspaceDir }, { sessionId: 'agent-1', entry: { type: 'learning', content: 'x' } })
  // @ts-expect-error a dead letter needs the session it came from
  appendDeadLetterSync({ workspaceDir }, { entry: { type: 'learning', content: 'x' } })
  return letter.id
}

export async function recover(workspaceDir: string): Promise<number> {
  const { letters, unreadable } = listDeadLetters({ workspaceDir })
  const attempts = letters.map((l) => l.attempts + (l.error?.code.length ?? 0))
  void attempts
  void unreadable.map((u) => `${u.line}: ${u.reason}`)
  const r: DeadLetterReplay = await replayDeadLetters({ workspaceDir, walDir: '.loa/wal', gates: { minConfidence: 0.5 }, lockTimeoutMs: 0 })
  const outcomes: Array<DeadLetterReplayResult['outcome']> = r.results.map((x) => x.outcome)
  const settled = outcomes.filter((o) => o !== 'failed').length
  // @ts-expect-error outcomes are a closed set
  const impossible: DeadLetterReplayResult['outcome'] = 'lost'
  void impossible
  return settled + replayDeadLettersSync({ workspaceDir }).stored
}
