// The SDK adapter: the one place that knows OpenClaw's plugin API. It checks at registration that
// the host offers what the plugin needs (typed hooks, the hook names, the permission to see the
// conversation) and reports precisely what is missing, instead of letting the host drop hooks
// with a warning nobody reads.
import type { OpenClawPluginApi } from 'openclaw/plugin-sdk/plugin-entry'

// The SDK exports no names for hook events and contexts; derive them from `api.on`.
declare const sampleApi: OpenClawPluginApi
export type HookName = Parameters<OpenClawPluginApi['on']>[0]
export type PromptBuildEvent = Parameters<Parameters<typeof sampleApi.on<'before_prompt_build'>>[1]>[0]
export type AgentContext = Parameters<Parameters<typeof sampleApi.on<'before_prompt_build'>>[1]>[1]
export type PromptBuildResult = Awaited<ReturnType<Parameters<typeof sampleApi.on<'before_prompt_build'>>[1]>>
export type AgentEndEvent = Parameters<Parameters<typeof sampleApi.on<'agent_end'>>[1]>[0]
export type SessionEndEvent = Parameters<Parameters<typeof sampleApi.on<'session_end'>>[1]>[0]
export type SessionContext = Parameters<Parameters<typeof sampleApi.on<'session_end'>>[1]>[1]
export type CompactionEvent = Parameters<Parameters<typeof sampleApi.on<'before_compaction'>>[1]>[0]
export type ResetEvent = Parameters<Parameters<typeof sampleApi.on<'before_reset'>>[1]>[0]
export type PluginLogger = OpenClawPluginApi['logger']

/**
 * Hooks the plugin needs, checked against this OpenClaw's types at compile time (`satisfies`):
 * a renamed hook (as `before_agent_start` was) fails the type check, not silently at run time.
 */
export const REQUIRED_HOOKS = ['before_prompt_build', 'agent_end', 'session_start', 'session_end', 'before_compaction', 'before_reset'] as const satisfies readonly HookName[]

/** Hooks OpenClaw only lets a non-bundled plugin register with `hooks.allowConversationAccess`. */
export const CONVERSATION_HOOKS = ['before_prompt_build', 'agent_end'] as const satisfies readonly HookName[]

export interface HostCheck {
  ok: boolean
  /** Required hooks this host will not run for us, with the reason. */
  missingHooks: { hook: string; reason: string }[]
  /** Human-readable problems, each naming what to change. */
  problems: string[]
}

interface EntryPolicy {
  hooks?: { allowConversationAccess?: boolean; allowPromptInjection?: boolean }
}

/** Checks the host before any hook is registered. */
export function checkHost(api: OpenClawPluginApi): HostCheck {
  const missingHooks: HostCheck['missingHooks'] = []
  const problems: string[] = []
  if (typeof api.on !== 'function') {
    for (const hook of REQUIRED_HOOKS) missingHooks.push({ hook, reason: 'this OpenClaw has no typed hooks (api.on)' })
    problems.push(`OpenClaw ${api.runtime?.version ?? ''} has no api.on(); @loa needs OpenClaw >= 2026.9 typed hooks`.replace('  ', ' '))
    return { ok: false, missingHooks, problems }
  }
  const entries = (api.config?.plugins?.entries ?? {}) as Record<string, EntryPolicy | undefined>
  const policy = entries[api.id]?.hooks ?? {}
  if (policy.allowConversationAccess !== true) {
    for (const hook of CONVERSATION_HOOKS) missingHooks.push({ hook, reason: 'blocked: conversation access not granted' })
    problems.push(
      `conversation hooks (${CONVERSATION_HOOKS.join(', ')}) are blocked: set plugins.entries.${api.id}.hooks.allowConversationAccess: true ` +
        'in the OpenClaw configuration, or memory is neither captured nor recalled',
    )
  }
  if (policy.allowPromptInjection === false) {
    missingHooks.push({ hook: 'before_prompt_build', reason: 'blocked: allowPromptInjection is false' })
    problems.push(`before_prompt_build is blocked by plugins.entries.${api.id}.hooks.allowPromptInjection: false; memory cannot be recalled`)
  }
  return { ok: missingHooks.length === 0, missingHooks, problems }
}

/** Runs `fn` when the plugin is unloaded, on hosts that say when. */
export function onDispose(api: OpenClawPluginApi, fn: () => Promise<void> | void): void {
  const lifecycle = (api as { lifecycle?: { onDispose?: (f: () => Promise<void> | void) => void } }).lifecycle
  lifecycle?.onDispose?.(fn)
}
