// OpenClaw plugin `loa`: the agent remembers what was worth remembering, redacted, durably, and
// gets it back, within a token budget, before its next prompt.
//
// Failure policy (seed 002 §6.1): memory must never take the agent down. Every hook is fail-open:
// an error is logged (codes and paths, never content) and the agent runs on without memory;
// captures that fail are retried and finally dead-lettered, never dropped, and the dead letters
// are replayed (each stored at most once) when the plugin starts and when a session starts.
import { definePluginEntry, type OpenClawPluginApi } from 'openclaw/plugin-sdk/plugin-entry'

import { checkHost, onDispose } from './src/adapter.ts'
import { describeError } from './src/capture-queue.ts'
import { resolveConfig } from './src/config.ts'
import { LoaMemory } from './src/memory.ts'

export default definePluginEntry({
  id: 'loa',
  name: 'Loa memory',
  description: 'Durable, redacted, token-budgeted agent memory (@loa/core)',
  register(api: OpenClawPluginApi) {
    const host = checkHost(api)
    for (const problem of host.problems) api.logger.error(`[loa] ${problem}`)
    if (typeof api.on !== 'function') return

    const memory = new LoaMemory(resolveConfig(api.pluginConfig), api.logger)
    memory.start()
    const failOpen = (hook: string, err: unknown) => {
      const { code, message } = describeError(err)
      api.logger.error(`[loa] ${hook} failed, continuing without memory: ${code}: ${message}`)
    }

    api.on('before_prompt_build', async (_event, ctx) => {
      try {
        return await memory.recall(ctx)
      } catch (err) {
        failOpen('before_prompt_build', err)
        return undefined
      }
    })
    api.on('agent_end', async (event, ctx) => {
      try {
        await memory.capture(event, ctx)
      } catch (err) {
        failOpen('agent_end', err)
      }
    })
    api.on('session_start', async () => {
      try {
        await memory.sessionStarted()
      } catch (err) {
        failOpen('session_start', err)
      }
    })
    api.on('before_compaction', async (_event, ctx) => {
      try {
        await memory.settle(ctx, { close: false })
      } catch (err) {
        failOpen('before_compaction', err)
      }
    })
    api.on('session_end', async (_event, ctx) => {
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
