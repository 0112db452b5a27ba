// Type-checked (tsc --strict, never run) the way extensions/loa imports the package: by its
// published name, through package.json "exports" and the generated index.d.ts.
import {
  Wal,
  consolidateWal,
  isLoaError,
  loadConfig,
  readWal,
  redact,
  redactAsync,
  redactBatch,
  redactionKinds,
  verifyWal,
  writeFileAtomic,
  type Finding,
  type LoaConfig,
  type RedactOptions,
  type Redaction,
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
