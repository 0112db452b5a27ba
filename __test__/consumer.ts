// Type-checked (tsc --strict, never run) the way extensions/loa imports the package: by its
// published name, through package.json "exports" and the generated index.d.ts.
import {
  AuditLog,
  KeyRing,
  Wal,
  canonicalizeJson,
  createManifest,
  readManifest,
  signManifest,
  verifyAuditLog,
  verifyManifest,
  writeManifest,
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
  type AuditHead,
  type AuditVerification,
  type KeyInfo,
  type Manifest,
  type ManifestProblem,
  type ManifestVerification,
  type SignedManifest,
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
