// The plugin's configuration (`plugins.entries.loa.config`), already validated by OpenClaw against
// `configSchema` in openclaw.plugin.json; here it only gets its defaults.

export interface LoaPluginConfig {
  /** Tokens of memory prepended to a prompt. */
  contextTokenBudget: number
  /** Relative: the grimoire inside the workspace. Absolute: the root of all plugin state. */
  grimoiresDir?: string
  walDir?: string
  redaction: { allowlist: string[]; pseudonymize: boolean }
  gates: { minConfidence?: number; speculationMinConfidence?: number; minContentLength?: number; maxAgeMs?: number }
  retry: { attempts: number; baseDelayMs: number }
  /** Longest wait for the ledger checkpoint in `before_compaction` / `before_reset` / `session_end`. */
  checkpointTimeoutMs: number
}

export const DEFAULT_CONTEXT_TOKEN_BUDGET = 2000
/** Under OpenClaw's 30 s limit for `before_compaction`. */
export const DEFAULT_CHECKPOINT_TIMEOUT_MS = 20_000

export function resolveConfig(raw: Record<string, unknown> | undefined): LoaPluginConfig {
  const given = (raw ?? {}) as Partial<LoaPluginConfig> & { redaction?: Partial<LoaPluginConfig['redaction']>; retry?: Partial<LoaPluginConfig['retry']> }
  return {
    contextTokenBudget: given.contextTokenBudget ?? DEFAULT_CONTEXT_TOKEN_BUDGET,
    ...(given.grimoiresDir !== undefined ? { grimoiresDir: given.grimoiresDir } : {}),
    ...(given.walDir !== undefined ? { walDir: given.walDir } : {}),
    redaction: { allowlist: given.redaction?.allowlist ?? [], pseudonymize: given.redaction?.pseudonymize ?? false },
    gates: { ...(given.gates ?? {}) },
    retry: { attempts: given.retry?.attempts ?? 3, baseDelayMs: given.retry?.baseDelayMs ?? 250 },
    checkpointTimeoutMs: given.checkpointTimeoutMs ?? DEFAULT_CHECKPOINT_TIMEOUT_MS,
  }
}
