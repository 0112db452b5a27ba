// Ledger synthesis in the agent's life (docs/synthesis.md, seed 001): every session leaves its
// own event file, and every session starts from the one current.md merged from all of them, so
// agents in parallel worktrees or machines never overwrite each other's continuity.
//
// - `session_end`: one event file in `<workspace>/<synthesis.dir>/events/` from what `agent_end`
//   captured (the last request, the last answer, decisions, open questions), redacted first.
// - `session_start`: current.md is synthesised (same bytes whatever the order of the events) and
//   what was combined is logged: how many events, from which agents, the newest instant. Never
//   their content: the log says where to look, current.md holds the text. OpenClaw's
//   `session_start` carries no workspace; when the session's workspace is not known yet, the
//   synthesis runs at the session's first `before_prompt_build`, which names it.
import { resolve } from 'node:path'

import { loadConfig, redact, synthesizeLedger, writeLedgerEvent, type LedgerEventInput, type LedgerSynthReport } from '@loa/core'

import type { AgentContext, PluginLogger, SessionContext, SessionEndEvent } from './adapter.ts'
import type { LoaPluginConfig } from './config.ts'
import { agentName, scope, sessionKey, type Context, type LoaLedger } from './ledger.ts'
import type { LoaMemory } from './memory.ts'

/** Words of a decision that make its key (the same decision restated keeps one key). */
const KEY_WORDS = 8

/** A decision's key in the LWW map: its first words, lower-cased, as a slug. */
export function decisionKey(decision: string): string {
  const words = decision.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []
  return words.slice(0, KEY_WORDS).join('-') || 'decision'
}

export class LoaSynthesis {
  /** Sessions started before their workspace was known: synthesised at their first prompt. */
  private readonly owed = new Set<string>()

  constructor(
    private readonly config: LoaPluginConfig,
    private readonly logger: PluginLogger,
    private readonly memory: LoaMemory,
    private readonly ledger: LoaLedger,
  ) {}

  /** The handoffs directory and the key ring of the session's workspace. */
  private async where(ctx: Context): Promise<{ dir: string; keysDir: string }> {
    // The store first: it is what knows the session's state root (session hooks carry no workspaceDir).
    await this.memory.storeFor(scope(ctx))
    const root = this.memory.rootOf(scope(ctx))
    const settings = loadConfig(root).config
    return { dir: resolve(root, settings.synthesis.dir), keysDir: resolve(root, settings.signing.keysDir) }
  }

  /** `session_end`: the session's event file. Returns its name. */
  async sessionEnded(event: SessionEndEvent, ctx: SessionContext): Promise<string> {
    const { dir } = await this.where(ctx)
    const seen = this.ledger.seen(ctx)
    const clean = (text: string) => redact(text, { allowlist: this.config.redaction.allowlist }).text
    const reason = (event as { reason?: unknown }).reason
    const input: LedgerEventInput = {
      agent: agentName(ctx.agentId),
      type: 'session_end',
      ...(typeof reason === 'string' && /^[A-Za-z0-9_.-]{1,32}$/.test(reason) ? { reason } : {}),
      ...(seen?.state ? { now: clean(seen.state) } : {}),
      thisSession: seen?.task ? [clean(seen.task)] : [],
      decisions: Object.fromEntries((seen?.decisions ?? []).map((d) => [decisionKey(d.decision), clean(d.rationale ? `${d.decision} (${d.rationale})` : d.decision)])),
      openQuestions: (seen?.questions ?? []).map(clean),
    }
    const written = await writeLedgerEvent(dir, input)
    this.logger.info(`[loa] session_end: ledger event ${written.file} written`)
    return written.file
  }

  /**
   * `session_start`: current.md synthesised from every event, and what was combined logged; or,
   * when the session's workspace is not known yet, owed to its first prompt (undefined then).
   */
  async sessionStarted(ctx: SessionContext): Promise<LedgerSynthReport | undefined> {
    if (!this.memory.knowsRoot(scope(ctx))) {
      this.owed.add(sessionKey(ctx))
      return undefined
    }
    return this.synthesize('session_start', ctx)
  }

  /** `before_prompt_build`: the synthesis a session start owed, now that the workspace is known. */
  async beforePrompt(ctx: AgentContext): Promise<LedgerSynthReport | undefined> {
    const key = sessionKey(ctx)
    if (!this.owed.has(key)) return undefined
    this.owed.delete(key)
    return this.synthesize('session_start', ctx)
  }

  private async synthesize(hook: string, ctx: Context): Promise<LedgerSynthReport> {
    const { dir, keysDir } = await this.where(ctx)
    const report = await synthesizeLedger(dir, { keysDir })
    this.logger.info(`[loa] ${hook}: ${summary(report)}`)
    for (const s of report.skipped) this.logger.warn(`[loa] ${hook}: ledger event ${s.file} skipped: ${s.reason}`)
    return report
  }
}

/** `continuity synthesized from 3 events (toast x2, waffle; latest 2026-01-11T08:00:00.000Z)`. */
export function summary(report: LedgerSynthReport): string {
  const agents = new Map<string, number>()
  for (const s of report.sources) agents.set(s.agent, (agents.get(s.agent) ?? 0) + 1)
  const who = [...agents].map(([agent, n]) => (n > 1 ? `${agent} x${n}` : agent))
  if (report.baseEvents) who.push(`${report.baseEvents} archived`)
  const state = report.changed ? 'current.md updated' : 'current.md unchanged'
  return `continuity synthesized from ${report.eventCount} event(s) (${who.join(', ') || 'none'}; latest ${report.latestTs ?? 'none'}); ${state}`
}
