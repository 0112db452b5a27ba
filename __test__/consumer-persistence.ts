// Type-checked (tsc --strict, never run): the persistence protocol as a workflow script uses it.
import {
  Ledger,
  isLoaError,
  type LedgerPersistInput,
  type LedgerPersistReport,
  type LedgerStateRecovery,
  type MemoryStore,
  type WorkflowStatus,
} from '@loa/core'

export async function advance(workspaceDir: string, store?: MemoryStore): Promise<WorkflowStatus | undefined> {
  const ledger = Ledger.open({ workspaceDir })
  const found: LedgerStateRecovery | null = await ledger.recoverState('apex')
  if (found?.staleWarning) console.warn(found.staleWarning)
  const source: 'l1' | 'memory.md' | undefined = found?.source
  void source
  const input: LedgerPersistInput = {
    workflow: 'apex',
    status: 'in_progress',
    data: { milestone: 2, owners: ['ada'] },
    memory: { kind: 'checkpoint', workflowType: 'APEX', completed: 'plan', next: 'implementing', context: 'billing' },
  }
  try {
    const report: LedgerPersistReport = store ? await ledger.persistState(input, store) : ledger.persistStateSync(input)
    if (report.warning) console.warn(report.warning, report.overflowed)
    return report.state.status
  } catch (err) {
    if (isLoaError(err) && err.code === 'E_ILLEGAL_TRANSITION') return found?.status
    throw err
  }
}
