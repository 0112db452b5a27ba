// Type-checked (tsc --strict, never run): boot-time recovery, identity and healing as a boot
// script uses them.
import {
  KeyRing,
  generateSoul,
  heal,
  healSync,
  recover,
  recoverSync,
  recoveryStatusSync,
  type HealReport,
  type RecoverOptions,
  type RecoveryResult,
  type RecoverySource,
  type RecoveryStatus,
  type SoulReport,
} from '@loa/core'

export async function boot(workspaceDir: string, pinnedHex: string, ring: KeyRing): Promise<number> {
  const options: RecoverOptions = {
    workspaceDir,
    trustedKeys: [pinnedHex, ...ring.verificationKeys()],
    sources: ['mount', 'git', 'template'],
    mountDir: '/mnt/backup',
    git: { remote: 'https://example.com/state.git', branch: 'main' },
    checkOnly: false,
  }
  const r: RecoveryResult = await recover(options)
  const from: RecoverySource | undefined = r.restoredFrom
  void from
  // What a hook asks before it trusts the grimoire: one small file read.
  const status: RecoveryStatus = recoveryStatusSync({ workspaceDir })
  if (status.degraded) return 1
  const removed: string[] = r.evidenceRemoved
  void removed
  if (r.state === 'degraded' && r.critical) return 1
  const soul: SoulReport = await generateSoul({ workspaceDir, trustedKeys: [pinnedHex] })
  // Sections carried as written without being recognised: shown to the user, never dropped.
  const carried: string[] = [...soul.sections, ...soul.unrecognizedSections]
  void carried
  const healed: HealReport = await heal({ workspaceDir, checkOnly: true })
  // @ts-expect-error a source is one of the three names
  recoverSync({ workspaceDir, trustedKeys: [pinnedHex], sources: ['floppy'] })
  // @ts-expect-error the workspace is required
  healSync({ checkOnly: true })
  return soul.status === 'hand_edited' ? 1 : Math.max(r.exitCode, healed.exitCode)
}
