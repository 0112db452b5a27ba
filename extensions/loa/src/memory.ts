// Where the hooks meet @loa/core: one MemoryStore per (state root, session), a retry queue for
// captures, the dead-letter queue for captures that still fail (replayed when the plugin starts
// on a state root and when a session starts), consolidation when a session ends or its context
// is compacted.
import { createHash } from 'node:crypto'
import { isAbsolute, join, resolve } from 'node:path'

import {
  KeyRing,
  MemoryStore,
  appendDeadLetter,
  consolidateMemory,
  isLoaError,
  loadConfig,
  loadRedactionKey,
  redact,
  replayDeadLetters,
  type MemoryConsolidation,
  type MemoryEntry,
  type MemoryRedactionOptions,
  type MemoryStoreOptions,
} from '@loa/core'

import type { AgentContext, AgentEndEvent, PluginLogger, PromptBuildResult, SessionContext } from './adapter.ts'
import { CaptureQueue, describeError, type CaptureJob } from './capture-queue.ts'
import type { LoaPluginConfig } from './config.ts'
import { lastText } from './messages.ts'
import { inside } from './recovery.ts'

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
  /** The agent workspace OpenClaw named, when it did (where MEMORY.md lives). */
  workspaceDir?: string
}

/** What the plugin needs to know of a hook's or tool's context to find the session's store. */
export interface StoreContext {
  sessionKey?: string | undefined
  sessionId?: string | undefined
  agentId?: string | undefined
  workspaceDir?: string | undefined
}

/** Context put before the search hits, given the state root and the whole budget. */
export type Lead = (root: string, budget: number) => { text: string; tokens: number } | undefined

/** Longest prompt searched at `before_prompt_build`, in UTF-16 units (the core takes 32 KiB). */
const MAX_PROMPT_QUERY = 8000

export class LoaMemory {
  private readonly stores = new Map<string, Promise<MemoryStore>>()
  /** State root last seen for a session key: session hooks get no workspaceDir from OpenClaw. */
  private readonly roots = new Map<string, string>()
  private readonly queue: CaptureQueue
  private readonly keys = new Map<string, Promise<Buffer>>()
  /** The replay of each state root's dead letters when the plugin first meets it (its start). */
  private readonly firstReplays = new Map<string, Promise<void>>()
  /** The import of each workspace's memory-core files, once per process. */
  private readonly imports = new Map<string, Promise<void>>()

  constructor(
    private readonly config: LoaPluginConfig,
    private readonly logger: PluginLogger,
  ) {
    this.queue = new CaptureQueue({
      attempts: config.retry.attempts,
      baseDelayMs: config.retry.baseDelayMs,
      maxHeld: config.retry.maxHeld,
      warn: (message) => this.logger.warn(`[loa] ${message}`),
      info: (message) => this.logger.info(`[loa] ${message}`),
    })
  }

  /**
   * `before_prompt_build`: the memories that best answer this prompt (searched with its words,
   * within the agent's scope), packed into the budget, each quoted as untrusted data. A prompt
   * with no words to search recalls nothing.
   */
  async recall(prompt: unknown, ctx: AgentContext, lead?: Lead): Promise<PromptBuildResult | undefined> {
    const session = this.session(ctx)
    const store = await this.store(session)
    const configured = this.config.contextTokenBudget
    // OpenClaw's contextTokenBudget is its budget for the whole prompt: it caps ours.
    const budget = Math.max(1, Math.min(configured, ctx.contextTokenBudget ?? configured))
    // What goes first (the ledger's level 1 after a checkpoint) takes its share of the one
    // budget; the search fills the rest. A lead that fails leaves the whole budget to the search.
    let first: { text: string; tokens: number } | undefined
    try {
      first = lead?.(session.root, budget)
    } catch (err) {
      const { code, message } = describeError(err)
      this.logger.warn(`[loa] the ledger could not be recalled: ${code}: ${message}`)
    }
    // The blank line between the two parts is one token, counted.
    const rest = first ? budget - first.tokens - 1 : budget
    const query = typeof prompt === 'string' ? cutQuery(prompt) : ''
    const built = query.trim() && rest >= 1 ? store.buildContext({ budget: rest, query, ...(ctx.agentId ? { agentId: ctx.agentId } : {}) }) : undefined
    const parts = [first?.text, built?.text].filter((t): t is string => typeof t === 'string' && t.length > 0)
    return parts.length ? { prependContext: parts.join('\n\n') } : undefined
  }

  /** The state root of the session `ctx` names (as its store is opened). */
  rootOf(ctx: StoreContext): string {
    return this.session(ctx).root
  }

  /** Whether the state root of the session `ctx` names is known yet (session hooks carry no workspaceDir). */
  knowsRoot(ctx: StoreContext): boolean {
    try {
      this.session(ctx)
      return true
    } catch {
      return false
    }
  }

  /** The store of the session a tool runs in (opened as the hooks open it). */
  storeFor(ctx: StoreContext): Promise<MemoryStore> {
    return this.store(this.session(ctx))
  }

  /**
   * Before forgetting: every pending capture is stored, and this process's other stores on the
   * same state root are closed (reopened when next needed; a capture caught in between is
   * retried), so that no session lock of ours keeps the forget from rewriting that session's log.
   */
  async releaseOthers(ctx: StoreContext): Promise<void> {
    await this.queue.drain()
    const session = this.session(ctx)
    const keep = storeKey(session)
    for (const [key, pending] of [...this.stores]) {
      if (key === keep || !key.startsWith(`${session.root}\0`)) continue
      this.stores.delete(key)
      try {
        ;(await pending).close()
      } catch (err) {
        const { code, message } = describeError(err)
        this.logger.warn(`[loa] closing a store before forgetting failed: ${code}: ${message}`)
      }
    }
  }

  /**
   * The store the memory slot's search manager reads through for `agentId` in `root`: a WAL
   * session of its own, so that a host query never waits on a conversation's session lock.
   */
  slotStore(root: string, agentId: string): Promise<MemoryStore> {
    return this.store({ root, id: walSessionId(`memory-slot:${agentId}`) })
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
      try {
        await this.consolidate(session.root, (seal) => store.consolidate(seal))
      } finally {
        if (close) {
          this.stores.delete(key)
          store.close()
        }
      }
    } else {
      // Nothing opened for this session in this process: still make its captures visible.
      await this.consolidate(session.root, (seal) => consolidateMemory({ workspaceDir: session.root, ...this.layout() }, seal))
    }
  }

  /**
   * Runs a consolidation of `root`, sealed when a signing ring is configured. The core never
   * seals a degraded workspace (`E_DEGRADED`: its grimoire did not verify); then nothing is
   * consolidated until recovery ends running again, and the captures wait in the WAL.
   */
  private async consolidate(root: string, run: (seal: KeyRing | undefined) => Promise<MemoryConsolidation | undefined>): Promise<void> {
    const seal = this.sealWith(root)
    try {
      const done = await run(seal)
      // WAL records naming any file but their memory's record (a forgery, by a local process or
      // another origin of the replica) were not applied: worth a warning, never their content.
      for (const r of done?.refused ?? []) {
        this.logger.warn(`[loa] ${root}: WAL record ${r.sessionId} #${r.seq} not applied: ${r.code}: ${r.reason}`)
      }
    } catch (err) {
      if (!seal || !isLoaError(err) || err.code !== 'E_DEGRADED') throw err
      this.logger.warn(`[loa] ${root} is degraded: neither consolidated nor sealed until recovery ends running`)
    }
  }

  /**
   * After a write into the grimoire outside consolidation (a forget, a ledger checkpoint): seal
   * it again when a signing key ring is configured, so the next integrity check verifies it.
   */
  async reseal(ctx: StoreContext | SessionContext): Promise<void> {
    if (this.config.recovery.signingKeysDir === undefined) return
    const root = this.session(ctx).root
    await this.consolidate(root, async (seal) => (seal ? consolidateMemory({ workspaceDir: root, ...this.layout() }, seal) : undefined))
  }

  /**
   * The key ring that seals `root`'s grimoire at consolidation (`recovery.signingKeysDir`), if
   * configured and usable. It must lie outside the workspace (whoever can write the workspace
   * must not hold the key recovery trusts); otherwise the consolidation runs unsealed and the
   * error is logged (the captures matter more than the seal).
   */
  private sealWith(root: string): KeyRing | undefined {
    const dir = this.config.recovery.signingKeysDir
    if (dir === undefined) return undefined
    try {
      if (!isAbsolute(dir)) throw Object.assign(new Error('recovery.signingKeysDir must be an absolute path outside the workspace'), { code: 'E_KEY_INVALID' })
      if (inside(root, dir)) {
        throw Object.assign(new Error(`recovery.signingKeysDir lies inside the workspace ${root}: keep the signing key outside it`), { code: 'E_KEY_INVALID' })
      }
      return KeyRing.open(dir)
    } catch (err) {
      const { code, message } = describeError(err)
      this.logger.error(`[loa] the grimoire of ${root} is not sealed (the next integrity check will fail): ${code}: ${message}`)
      return undefined
    }
  }

  /** Plugin stop: nothing captured is left behind, every store is closed. */
  async stop(): Promise<void> {
    await this.queue.drain()
    this.queue.close()
    for (const [key, pending] of this.stores) {
      this.stores.delete(key)
      try {
        const store = await pending
        try {
          await this.consolidate(key.slice(0, key.indexOf('\0')), (seal) => store.consolidate(seal))
        } finally {
          store.close()
        }
      } catch (err) {
        const { code, message } = describeError(err)
        this.logger.warn(`[loa] consolidation at stop failed: ${code}: ${message}`)
      }
    }
  }

  /**
   * Plugin start: replays the dead letters of the state root the configuration names (an
   * absolute `grimoiresDir`). Roots that come from OpenClaw's workspaces are replayed when the
   * plugin first meets them, before their first store opens.
   */
  start(): void {
    const root = this.configuredRoot()
    if (root) void this.firstReplay(root)
  }

  /**
   * `session_start`: replays the dead letters of every state root this plugin knows, so that a
   * capture stranded by a disk that has since recovered is stored without waiting for a
   * restart. Sessions whose store this process holds open are left for later (their letters
   * stay queued).
   */
  async sessionStarted(): Promise<void> {
    const roots = new Set([...this.roots.values(), ...[this.configuredRoot()].filter((r): r is string => r !== undefined)])
    await Promise.all([...roots].map(async (root) => {
      await this.firstReplay(root)
      await this.replay(root, 'session start', 0)
    }))
  }

  get pendingCaptures(): number {
    return this.queue.size
  }

  /** Captures held in memory because the disk refused them and their dead letters. */
  get heldCaptures(): { held: number; dropped: number } {
    return this.queue.heldCounts
  }

  /**
   * Where `root`'s dead letters are kept (`deadLetterDir`), as @loa/core takes it: relative is
   * below the root; absolute is shared by every root, so each root gets a directory of its own
   * there (letters carry a session id, not a root: one queue per root keeps replays apart).
   */
  private deadLetterDir(root: string): { deadLetterDir?: string } {
    const dir = this.config.deadLetterDir
    if (dir === undefined) return {}
    if (!isAbsolute(dir)) return { deadLetterDir: dir }
    return { deadLetterDir: join(dir, createHash('sha256').update(resolve(root)).digest('hex').slice(0, 16)) }
  }

  /** The state root for an agent workspace: the configured absolute root, else the workspace. */
  rootFor(workspaceDir: string | undefined): string | undefined {
    return this.configuredRoot() ?? (workspaceDir && workspaceDir.trim() ? workspaceDir : undefined)
  }

  private configuredRoot(): string | undefined {
    return this.config.grimoiresDir && isAbsolute(this.config.grimoiresDir) ? this.config.grimoiresDir : undefined
  }

  private session(ctx: AgentContext | SessionContext | StoreContext): Session {
    const key = ctx.sessionKey ?? ctx.sessionId ?? ctx.agentId ?? 'default'
    const fromConfig = this.configuredRoot()
    const fromContext = 'workspaceDir' in ctx && typeof ctx.workspaceDir === 'string' ? ctx.workspaceDir : undefined
    const root = fromConfig ?? fromContext ?? this.roots.get(key)
    if (!root) {
      // Never fall back to process.cwd(): state would land wherever the gateway was started.
      throw Object.assign(new Error(`no workspace known for session ${key}: OpenClaw gave no workspaceDir and grimoiresDir is not absolute`), {
        code: 'E_INVALID_ARGUMENT',
      })
    }
    this.roots.set(key, root)
    return { root, id: walSessionId(key), ...(fromContext ? { workspaceDir: fromContext } : {}) }
  }

  private layout(): Pick<MemoryStoreOptions, 'grimoiresDir' | 'walDir'> {
    const relativeGrimoire = this.config.grimoiresDir && !isAbsolute(this.config.grimoiresDir) ? this.config.grimoiresDir : undefined
    return { ...(relativeGrimoire ? { grimoiresDir: relativeGrimoire } : {}), ...(this.config.walDir ? { walDir: this.config.walDir } : {}) }
  }

  private store(session: Session): Promise<MemoryStore> {
    const key = storeKey(session)
    let pending = this.stores.get(key)
    if (!pending) {
      // The root's stranded captures go in first, and in their own sessions; then what
      // memory-core left in the workspace comes in, once per process.
      pending = this.firstReplay(session.root)
        .then(() => this.openStore(session))
        .then(async (store) => {
          if (session.workspaceDir) await this.importMemoryCore(session.workspaceDir, store)
          return store
        })
      this.stores.set(key, pending)
      // A failed open is not cached: the next hook tries again.
      pending.catch(() => this.stores.get(key) === pending && this.stores.delete(key))
    }
    return pending
  }

  private async openStore(session: Session): Promise<MemoryStore> {
    return MemoryStore.openAsync({
      workspaceDir: session.root,
      sessionId: session.id,
      ...this.layout(),
      gates: this.config.gates,
      redaction: await this.redaction(session.root),
    })
  }

  /** How captures are redacted in `root`: by the stores, and by the dead-letter queue. */
  private async redaction(root: string): Promise<MemoryRedactionOptions> {
    const { allowlist, pseudonymize } = this.config.redaction
    return { allowlist, pseudonymize, ...(pseudonymize ? { key: await this.redactionKey(root) } : {}) }
  }

  /**
   * Imports the workspace's `MEMORY.md` and `memory/*.md` (memory-core's files) as memories of
   * the whole workspace, redacted and gated, the first time this process meets the workspace.
   * Idempotent (content-addressed: a second import stores nothing) and never bringing back a
   * forgotten memory. Fail-open: logged, and tried again by the next process.
   */
  private importMemoryCore(workspaceDir: string, store: MemoryStore): Promise<void> {
    let done = this.imports.get(workspaceDir)
    if (!done) {
      done = store
        .importMarkdown(workspaceDir)
        .then((r) => {
          if (r.imported + r.rejected + r.blocked + r.skipped.length === 0) return
          this.logger.info(
            `[loa] imported memory-core files of ${workspaceDir}: ${r.imported} imported, ${r.duplicates} already stored, ${r.rejected} rejected by the gates, ` +
              `${r.blocked} blocked, ${r.forgotten} forgotten earlier, ${r.skipped.length} file(s) skipped`,
          )
        })
        .catch((err: unknown) => {
          const { code, message } = describeError(err)
          this.logger.warn(`[loa] memory-core files of ${workspaceDir} could not be imported: ${code}: ${message}`)
        })
      this.imports.set(workspaceDir, done)
    }
    return done
  }

  /** The first replay of `root`'s dead letters in this process; never rejects. */
  private firstReplay(root: string): Promise<void> {
    let replay = this.firstReplays.get(root)
    if (!replay) {
      replay = this.replay(root, 'start')
      this.firstReplays.set(root, replay)
    }
    return replay
  }

  /**
   * Replays `root`'s dead letters when there are any, logging counts (never content). Fail-open:
   * a replay that cannot run is logged and the letters stay for the next one. `lockTimeoutMs`
   * 0 skips sessions another store holds instead of waiting for them.
   */
  private async replay(root: string, when: string, lockTimeoutMs?: number): Promise<void> {
    try {
      // On a worker thread, and answered at once when there is no queue: nothing here reads the
      // queue on the event loop.
      const r = await replayDeadLetters({
        workspaceDir: root,
        ...this.layout(),
        ...this.deadLetterDir(root),
        gates: this.config.gates,
        redaction: await this.redaction(root),
        ...(lockTimeoutMs !== undefined ? { lockTimeoutMs } : {}),
      })
      if (r.results.length === 0 && r.unreadable.length === 0) return
      const counts =
        `${r.stored} stored, ${r.duplicates} already stored, ${r.rejected} rejected by the gates, ${r.blocked} blocked, ` +
        `${r.failed} still failing (${r.remaining} left)`
      const codes = [...new Set(r.results.flatMap((x) => (x.error ? [x.error.code] : [])))]
      const unreadable = r.unreadable.length ? `; ${r.unreadable.length} unreadable line(s) kept (loa dead-letter list)` : ''
      if (r.failed > 0 || unreadable) this.logger.warn(`[loa] dead letters in ${root} replayed at ${when}: ${counts}; ${codes.join(', ')}${unreadable}`)
      else this.logger.info(`[loa] dead letters in ${root} replayed at ${when}: ${counts}`)
    } catch (err) {
      const { code, message } = describeError(err)
      this.logger.warn(`[loa] dead letters in ${root} could not be replayed at ${when}: ${code}: ${message}`)
    }
  }

  /**
   * The workspace's pseudonymization key, `redaction.key` in its `signing.keysDir` (`.loa/keys`
   * unless `.loa.config.yaml` says otherwise): random, created once, readable by its owner only,
   * never read through a symlink (the core's `loadRedactionKey`). A failed load is not cached.
   */
  private redactionKey(root: string): Promise<Buffer> {
    let key = this.keys.get(root)
    if (!key) {
      const pending = (async () => loadRedactionKey(resolve(root, loadConfig(root).config.signing.keysDir)))()
      pending.catch(() => this.keys.get(root) === pending && this.keys.delete(root))
      this.keys.set(root, (key = pending))
    }
    return key
  }

  private captureJob(session: Session, entry: MemoryEntry, label: string): CaptureJob {
    return {
      label,
      run: async () => {
        const store = await this.store(session)
        await store.capture(entry)
      },
      // The queue redacts the entry (as the store would) before anything reaches the disk.
      deadLetter: async ({ attempts, error }: { attempts: number; error: { code: string; message: string } }) => {
        await appendDeadLetter(
          { workspaceDir: session.root, ...this.deadLetterDir(session.root), redaction: await this.redaction(session.root) },
          { sessionId: session.id, entry, attempts, error },
        )
      },
      // Redacted as the store would (content and tags; the agent id is an identifier the store
      // keeps as given, and the plugin's entries carry no metadata), so that nothing unredacted
      // sits in memory; the store and the dead-letter queue redact it again, which changes nothing.
      hold: async () => {
        const options = await this.redaction(session.root)
        let blocked = false
        const clean = (text: string) => {
          const r = redact(text, options)
          blocked ||= r.blocked
          return r.text
        }
        const redacted: MemoryEntry = {
          ...entry,
          ...(entry.content !== undefined ? { content: clean(entry.content) } : {}),
          ...(entry.tags ? { tags: entry.tags.map(clean) } : {}),
        }
        return blocked ? undefined : this.captureJob(session, redacted, label)
      },
    }
  }
}

function storeKey(session: Session): string {
  return `${session.root}\0${session.id}`
}

/** `prompt` cut to what `before_prompt_build` searches, never inside a surrogate pair. */
function cutQuery(prompt: string): string {
  if (prompt.length <= MAX_PROMPT_QUERY) return prompt
  const end = /[\uD800-\uDBFF]/.test(prompt[MAX_PROMPT_QUERY - 1] ?? '') ? MAX_PROMPT_QUERY - 1 : MAX_PROMPT_QUERY
  return prompt.slice(0, end)
}

export { isLoaError }
