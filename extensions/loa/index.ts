// OpenClaw plugin `loa`, for the memory slot (`plugins.slots.memory: "loa"`): the agent remembers
// what was worth remembering, redacted, durably; before each prompt it gets back the memories that
// answer it, within a token budget; it can search, read and forget them with its memory tools.
//
// Failure policy (seed 002 §6.1): memory must never take the agent down. Every hook is fail-open:
// an error is logged (codes and paths, never content) and the agent runs on without memory;
// captures that fail are retried and finally dead-lettered, never dropped, and the dead letters
// are replayed (each stored at most once) when the plugin starts and when a session starts.
// Identity is the exception, and fail-closed: a SOUL.md that does not verify is never injected
// (the template identity is; src/recovery.ts).
import { definePluginEntry, type OpenClawPluginApi } from 'openclaw/plugin-sdk/plugin-entry'

import { checkHost, onDispose } from './src/adapter.ts'
import { describeError } from './src/capture-queue.ts'
import { resolveConfig } from './src/config.ts'
import { LoaLedger } from './src/ledger.ts'
import { LoaMemory } from './src/memory.ts'
import { LoaRecovery, bootstrapHookProblem, loadRoots } from './src/recovery.ts'
import { memoryCapability, memoryTools } from './src/slot.ts'
import { LoaSynthesis } from './src/synth.ts'

export default definePluginEntry({
  id: 'loa',
  name: 'Loa memory',
  description: 'Durable, redacted, token-budgeted agent memory (@loa/core)',
  register(api: OpenClawPluginApi) {
    const host = checkHost(api)
    for (const problem of host.problems) api.logger.error(`[loa] ${problem}`)
    if (typeof api.on !== 'function') return

    const config = resolveConfig(api.pluginConfig)
    const memory = new LoaMemory(config, api.logger)
    memory.start()
    const ledger = new LoaLedger(config, api.logger, memory)
    // Recovery at load, for every workspace nameable now; the identity at every bootstrap.
    const recovery = new LoaRecovery(config, api.logger)
    const bootstrapProblem = bootstrapHookProblem(api)
    if (bootstrapProblem) api.logger.error(`[loa] ${bootstrapProblem}`)
    if (recovery.anchored) for (const root of loadRoots(api, (ws) => memory.rootFor(ws))) recovery.start(root)
    api.registerHook('agent:bootstrap', (event) => recovery.bootstrap(event.context, (ws) => memory.rootFor(ws)), {
      name: 'loa-identity',
      description: 'SOUL.md generated from a BEAUVOIR.md that verifies, else the template identity (fail-closed)',
    })
    const synthesis = new LoaSynthesis(config, api.logger, memory, ledger)

    // The slot: the host's search manager and prompt guidance, and the agent's memory tools.
    api.registerMemoryCapability(
      memoryCapability(memory, (cfg, agentId) => memory.rootFor(api.runtime.agent.resolveAgentWorkspaceDir(cfg, agentId))),
    )
    api.registerTool((ctx) => memoryTools(memory, ctx), { names: ['memory_search', 'memory_get', 'memory_forget'] })
    const failOpen = (hook: string, err: unknown) => {
      const { code, message } = describeError(err)
      api.logger.error(`[loa] ${hook} failed, continuing without memory: ${code}: ${message}`)
    }

    api.on('before_prompt_build', async (event, ctx) => {
      try {
        await synthesis.beforePrompt(ctx)
      } catch (err) {
        failOpen('session_start (synthesis)', err)
      }
      try {
        // Degraded: nothing from the state that did not verify reaches the prompt.
        if (recovery.degraded(memory.rootOf(ctx))) return undefined
        // After a checkpoint or a session start, the ledger's level 1 goes first.
        return await memory.recall(event.prompt, ctx, (root, budget) => ledger.level1(root, ctx, budget))
      } catch (err) {
        failOpen('before_prompt_build', err)
        return undefined
      }
    })
    api.on('agent_end', async (event, ctx) => {
      try {
        ledger.observe(event.messages, ctx)
        await memory.capture(event, ctx)
      } catch (err) {
        failOpen('agent_end', err)
      }
    })
    api.on('session_start', async (event, ctx) => {
      try {
        ledger.sessionStarted({ sessionId: event.sessionId, ...(event.sessionKey ?? ctx.sessionKey ? { sessionKey: event.sessionKey ?? ctx.sessionKey } : {}) })
        await memory.sessionStarted()
      } catch (err) {
        failOpen('session_start', err)
      }
      try {
        await synthesis.sessionStarted(ctx)
      } catch (err) {
        failOpen('session_start (synthesis)', err)
      }
    })
    // "Clear, don't compact": what the session knew is checkpointed into the ledger before the
    // context goes (each step fail-open: memory never takes the agent down).
    api.on('before_compaction', async (event, ctx) => {
      try {
        await ledger.checkpoint('before_compaction', event.messages, ctx)
      } catch (err) {
        failOpen('before_compaction (ledger)', err)
      }
      try {
        await memory.settle(ctx, { close: false })
      } catch (err) {
        failOpen('before_compaction', err)
      }
    })
    api.on('before_reset', async (event, ctx) => {
      try {
        await ledger.checkpoint('before_reset', event.messages, ctx)
      } catch (err) {
        failOpen('before_reset', err)
      }
      try {
        // The checkpoint edited NOTES.md: sealed again when a signing key ring is configured.
        await memory.reseal(ctx)
      } catch (err) {
        failOpen('before_reset (seal)', err)
      }
    })
    api.on('session_end', async (event, ctx) => {
      try {
        await synthesis.sessionEnded(event, ctx)
      } catch (err) {
        failOpen('session_end (synthesis)', err)
      }
      try {
        await ledger.sessionEnded(ctx)
      } catch (err) {
        failOpen('session_end (ledger)', err)
      }
      try {
        await memory.settle(ctx, { close: true })
      } catch (err) {
        failOpen('session_end', err)
      }
    })
    onDispose(api, async () => {
      try {
        await memory.stop()
      } catch (err) {
        failOpen('stop', err)
      }
    })
  },
})
