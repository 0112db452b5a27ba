// Type-checked (tsc --strict, never run) the way extensions/loa imports the package: by its
// published name, through package.json "exports" and the generated index.d.ts.
import {
  Wal,
  consolidateWal,
  isLoaError,
  loadConfig,
  readWal,
  verifyWal,
  writeFileAtomic,
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
