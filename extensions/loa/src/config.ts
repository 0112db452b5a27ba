// The plugin's configuration (`plugins.entries.loa.config`), already validated by OpenClaw against
// `configSchema` in openclaw.plugin.json; here it only gets its defaults.

export interface LoaPluginConfig {
  /** Tokens of memory prepended to a prompt. */
  contextTokenBudget: number
  /** Relative: the grimoire inside the workspace. Absolute: the root of all plugin state. */
  grimoiresDir?: string
  walDir?: string
  /**
   * Where captures the disk refused wait (the dead-letter queue), instead of `.loa` in the state
   * root. Relative: below the state root. Absolute: e.g. on another filesystem, so that a full
   * or read-only workspace disk does not refuse the dead letters too (one directory per root
   * is made in it).
   */
  deadLetterDir?: string
  redaction: { allowlist: string[]; pseudonymize: boolean }
  gates: { minConfidence?: number; speculationMinConfidence?: number; minContentLength?: number; maxAgeMs?: number }
  /** `maxHeld`: captures kept in memory while the disk refuses them and their dead letters. */
  retry: { attempts: number; baseDelayMs: number; maxHeld: number }
  /** Longest wait for the ledger checkpoint in `before_compaction` / `before_reset` / `session_end`. */
  checkpointTimeoutMs: number
  /** Boot-time recovery and the identity check at bootstrap (src/recovery.ts). */
  recovery: RecoveryPluginConfig
}

/**
 * The trust anchor and restore sources of recovery. They live in OpenClaw's configuration (or a
 * key file outside the workspace), never in the workspace: whoever can write the workspace must
 * not be able to choose what is trusted.
 */
export interface RecoveryPluginConfig {
  /** Public keys (64 hex digits) the grimoire's manifest must be signed with. */
  trustedKeys: string[]
  /** An absolute path outside the workspace: hex keys one a line, or `loa keys list --json` output. */
  trustedKeysFile?: string
  /** A mounted backup holding a signed copy of the grimoire. */
  mountDir?: string
  /** A git branch holding a signed copy of the grimoire. */
  git?: { remote: string; branch: string; path?: string }
  /** Sources in the order tried (default: the workspace's `recovery.sources`). */
  sources?: Array<'mount' | 'git' | 'template'>
  /**
   * An absolute path outside the workspace: a key ring (`loa keys generate --keys DIR`) whose
   * signing key (or `LOA_SIGNING_KEY`) seals the grimoire at each consolidation, so that the
   * workspace's own writes verify at the next start. Its public key belongs in `trustedKeys`.
   * Without it, anything the plugin writes into the grimoire fails the next integrity check.
   */
  signingKeysDir?: string
}

export const DEFAULT_CONTEXT_TOKEN_BUDGET = 2000
/** Captures held in memory while no disk write succeeds (each at most the core's 64 KiB of content). */
export const DEFAULT_MAX_HELD = 1000
/** Under OpenClaw's 30 s limit for `before_compaction`. */
export const DEFAULT_CHECKPOINT_TIMEOUT_MS = 20_000

export function resolveConfig(raw: Record<string, unknown> | undefined): LoaPluginConfig {
  const given = (raw ?? {}) as Partial<LoaPluginConfig> & {
    redaction?: Partial<LoaPluginConfig['redaction']>
    retry?: Partial<LoaPluginConfig['retry']>
    recovery?: Partial<RecoveryPluginConfig>
  }
  const r: Partial<RecoveryPluginConfig> = given.recovery ?? {}
  return {
    contextTokenBudget: given.contextTokenBudget ?? DEFAULT_CONTEXT_TOKEN_BUDGET,
    ...(given.grimoiresDir !== undefined ? { grimoiresDir: given.grimoiresDir } : {}),
    ...(given.walDir !== undefined ? { walDir: given.walDir } : {}),
    ...(given.deadLetterDir !== undefined ? { deadLetterDir: given.deadLetterDir } : {}),
    redaction: { allowlist: given.redaction?.allowlist ?? [], pseudonymize: given.redaction?.pseudonymize ?? false },
    gates: { ...(given.gates ?? {}) },
    retry: {
      attempts: given.retry?.attempts ?? 3,
      baseDelayMs: given.retry?.baseDelayMs ?? 250,
      maxHeld: given.retry?.maxHeld ?? DEFAULT_MAX_HELD,
    },
    checkpointTimeoutMs: given.checkpointTimeoutMs ?? DEFAULT_CHECKPOINT_TIMEOUT_MS,
    recovery: {
      trustedKeys: r.trustedKeys ?? [],
      ...(r.trustedKeysFile !== undefined ? { trustedKeysFile: r.trustedKeysFile } : {}),
      ...(r.mountDir !== undefined ? { mountDir: r.mountDir } : {}),
      ...(r.git !== undefined ? { git: r.git } : {}),
      ...(r.sources !== undefined ? { sources: r.sources } : {}),
      ...(r.signingKeysDir !== undefined ? { signingKeysDir: r.signingKeysDir } : {}),
    },
  }
}
