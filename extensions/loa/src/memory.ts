// Where the hooks meet @loa/core: one MemoryStore per (state root, session), a retry queue for
// captures, consolidation when a session ends or its context is compacted.
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, open, readFile } from 'node:fs/promises'
import { isAbsolute, join } from 'node:path'

import { MemoryStore, isLoaError, redact, writeFileAtomic, type MemoryEntry, type MemoryStoreOptions } from '@loa/core'

import type { AgentContext, AgentEndEvent, PluginLogger, PromptBuildResult, SessionContext } from './adapter.ts'
import { CaptureQueue, describeError } from './capture-queue.ts'
import type { LoaPluginConfig } from './config.ts'
import { lastText } from './messages.ts'

/** A WAL session id from OpenClaw's session key (`agent:main:main` has characters the WAL refuses). */
export function walSessionId(key: string): string {
  const safe = key.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[.-]+/, '').slice(0, 100)
  if (safe === key) return key
  const digest = createHash('sha256').update(key).digest('hex').slice(0, 10)
  return `${safe || 'session'}-${digest}`
}

interface Session {
  root: string
  id: string
}

export class LoaMemory {
  private readonly stores = new Map<string, Promise<MemoryStore>>()
  /** State root last seen for a session key: session hooks get no workspaceDir from OpenClaw. */
  private readonly roots = new Map<string, string>()
  private readonly queue: CaptureQueue
  private readonly keys = new Map<string, Promise<Buffer>>()

  constructor(
    private readonly config: LoaPluginConfig,
    private readonly logger: PluginLogger,
  ) {
    this.queue = new CaptureQueue({
      attempts: config.retry.attempts,
      baseDelayMs: config.retry.baseDelayMs,
      writeDeadLetter: (entry) => this.writeDeadLetter(String(entry.root), entry),
      warn: (message) => this.logger.warn(`[loa] ${message}`),
    })
  }

  /** `before_prompt_build`: what the agent should remember, within budget. */
  async recall(ctx: AgentContext): Promise<PromptBuildResult | undefined> {
    const session = this.session(ctx)
    const store = await this.store(session)
    const configured = this.config.contextTokenBudget
    // OpenClaw's contextTokenBudget is its budget for the whole prompt: it caps ours.
    const budget = Math.max(1, Math.min(configured, ctx.contextTokenBudget ?? configured))
    const built = store.buildContext({ budget })
    return built.text ? { prependContext: built.text } : undefined
  }

  /** `agent_end`: queue what is worth remembering of the turn. Resolves once stored or dead-lettered. */
  capture(event: AgentEndEvent, ctx: AgentContext): Promise<void> {
    const session = this.session(ctx)
    const entries: MemoryEntry[] = []
    const base = { ...(ctx.agentId ? { agentId: ctx.agentId } : {}), timestamp: new Date().toISOString() }
    const user = lastText(event.messages, 'user')
    const assistant = lastText(event.messages, 'assistant')
    if (user) entries.push({ ...base, type: 'interaction', content: user, tags: ['user'] })
    if (assistant) entries.push({ ...base, type: 'interaction', content: assistant, tags: ['assistant'] })
    if (!event.success && event.error) entries.push({ ...base, type: 'error', content: `The run failed: ${event.error}` })
    return Promise.all(entries.map((entry, i) => this.queue.enqueue(this.captureJob(session, entry, `${session.id}#${i}`)))).then(() => undefined)
  }

  /** `session_end` / `before_compaction`: store everything pending, then consolidate. */
  async settle(ctx: AgentContext | SessionContext, { close }: { close: boolean }): Promise<void> {
    await this.queue.drain()
    const session = this.session(ctx)
    const key = storeKey(session)
    const pending = this.stores.get(key)
    const store = pending ? await pending : undefined
    if (store) {
      await store.consolidate()
      if (close) {
        this.stores.delete(key)
        store.close()
      }
    } else {
      // Nothing opened for this session in this process: still make its captures visible.
      const { consolidateMemory } = await import('@loa/core')
      await consolidateMemory({ workspaceDir: session.root, ...this.layout() })
    }
  }

  /** Plugin stop: nothing captured is left behind, every store is closed. */
  async stop(): Promise<void> {
    await this.queue.drain()
    for (const [key, pending] of this.stores) {
      this.stores.delete(key)
      try {
        const store = await pending
        await store.consolidate()
        store.close()
      } catch (err) {
        const { code, message } = describeError(err)
        this.logger.warn(`[loa] consolidation at stop failed: ${code}: ${message}`)
      }
    }
  }

  get pendingCaptures(): number {
    return this.queue.size
  }

  private session(ctx: AgentContext | SessionContext): Session {
    const key = ctx.sessionKey ?? ctx.sessionId ?? ctx.agentId ?? 'default'
    const fromConfig = this.config.grimoiresDir && isAbsolute(this.config.grimoiresDir) ? this.config.grimoiresDir : undefined
    const fromContext = 'workspaceDir' in ctx && typeof ctx.workspaceDir === 'string' ? ctx.workspaceDir : undefined
    const root = fromConfig ?? fromContext ?? this.roots.get(key)
    if (!root) {
      // Never fall back to process.cwd(): state would land wherever the gateway was started.
      throw Object.assign(new Error(`no workspace known for session ${key}: OpenClaw gave no workspaceDir and grimoiresDir is not absolute`), {
        code: 'E_INVALID_ARGUMENT',
      })
    }
    this.roots.set(key, root)
    return { root, id: walSessionId(key) }
  }

  private layout(): Pick<MemoryStoreOptions, 'grimoiresDir' | 'walDir'> {
    const relativeGrimoire = this.config.grimoiresDir && !isAbsolute(this.config.grimoiresDir) ? this.config.grimoiresDir : undefined
    return { ...(relativeGrimoire ? { grimoiresDir: relativeGrimoire } : {}), ...(this.config.walDir ? { walDir: this.config.walDir } : {}) }
  }

  private store(session: Session): Promise<MemoryStore> {
    const key = storeKey(session)
    let pending = this.stores.get(key)
    if (!pending) {
      pending = this.openStore(session)
      this.stores.set(key, pending)
      // A failed open is not cached: the next hook tries again.
      pending.catch(() => this.stores.get(key) === pending && this.stores.delete(key))
    }
    return pending
  }

  private async openStore(session: Session): Promise<MemoryStore> {
    const { allowlist, pseudonymize } = this.config.redaction
    return MemoryStore.openAsync({
      workspaceDir: session.root,
      sessionId: session.id,
      ...this.layout(),
      gates: this.config.gates,
      redaction: { allowlist, pseudonymize, ...(pseudonymize ? { key: await this.redactionKey(session.root) } : {}) },
    })
  }

  /** The workspace's pseudonymization key: random, created once, readable by its owner only. */
  private redactionKey(root: string): Promise<Buffer> {
    let key = this.keys.get(root)
    if (!key) {
      const path = join(root, '.loa', 'keys', 'redaction.key')
      key = readFile(path).catch(async (err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err
        await mkdir(join(root, '.loa', 'keys'), { recursive: true, mode: 0o700 })
        const fresh = randomBytes(32)
        await writeFileAtomic(path, fresh, { mode: 0o600 })
        return fresh
      })
      this.keys.set(root, key)
    }
    return key
  }

  private captureJob(session: Session, entry: MemoryEntry, label: string) {
    return {
      label,
      run: async () => {
        const store = await this.store(session)
        await store.capture(entry)
      },
      // Only redacted text may reach the dead-letter file; a blocked entry leaves only its kinds.
      deadLetter: async () => {
        const { allowlist, pseudonymize } = this.config.redaction
        const options = { allowlist, pseudonymize, ...(pseudonymize ? { key: await this.redactionKey(session.root) } : {}) }
        const redacted = redact(entry.content, options)
        return {
          root: session.root,
          sessionId: session.id,
          entry: { ...entry, content: redacted.blocked ? null : redacted.text },
          findings: redacted.findings.map((f) => ({ kind: f.kind, fingerprint: f.fingerprint })),
          blocked: redacted.blocked,
        }
      },
    }
  }

  private async writeDeadLetter(root: string, record: Record<string, unknown>): Promise<void> {
    const { root: _root, ...line } = record
    void _root
    await mkdir(join(root, '.loa'), { recursive: true })
    const file = await open(join(root, '.loa', 'dead-letter.jsonl'), 'a', 0o600)
    try {
      await file.appendFile(JSON.stringify(line) + '\n')
      await file.datasync()
    } finally {
      await file.close()
    }
  }
}

function storeKey(session: Session): string {
  return `${session.root}\0${session.id}`
}

export { isLoaError }
