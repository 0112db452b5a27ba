'use strict'
// What `loa report` shows, gathered from a workspace without changing it: every call here is a
// read of @loa/core (a read-only MemoryStore, verifications, listings) that takes no lock a
// writer needs and creates nothing. Each part is gathered on its own, so a part that cannot be
// read (a damaged file, a refused symlink) becomes `{ error: { code, message } }` in the model
// and the rest of the page still shows; messages are @loa/core's, which never carry stored
// content or secrets.

const fs = require('node:fs')
const path = require('node:path')
const core = require('../../../index.js')
const { walStatsOf } = require('../wal-stats.js')

/** The model's version: bump when a field changes meaning. */
const MODEL_VERSION = 1
/** Memories listed in the page by default (the counts always cover every memory). */
const DEFAULT_LIMIT = 2000
/** Beads read for the ledger part: a page, not an archive. */
const MAX_BEADS = 200
/** The grimoire files that the library's own writes (consolidation, forget, the ledger) change between seals. */
const LIBRARY_WRITTEN = [/^NOTES\.md$/, /^learnings\.json$/, /^learnings\.json\.d\//, /^memory-summary\.json$/, /^memory\//, /^search\//]
const NEW_MEMORY_RECORD = /^memory\/[0-9a-f]{64}\.json$/
/**
 * The page stays a page whatever the workspace holds (a memory may be 1 MiB, NOTES.md 64 MiB):
 * each text is shown up to TEXT_SHOWN characters, the memories' texts up to PAGE_TEXT in all
 * (the list stops there, like `--limit`), and each ledger list up to LIST_SHOWN entries.
 */
const TEXT_SHOWN = 16 * 1024
const PAGE_TEXT = 8 * 1024 * 1024
const LIST_SHOWN = 1000

/** Whether anything is at `p` (a symlink counts: what reads it then refuses it with a code). */
function exists(p) {
  try {
    fs.lstatSync(p)
    return true
  } catch (err) {
    if (err.code === 'ENOENT') return false
    throw err
  }
}

/** The WAL part: `loa wal stats`'s figures, with the sessions as rows and the last seq of all. */
function walPart(dir) {
  const stats = walStatsOf(dir)
  const bySession = Object.entries(stats.bySession).map(([id, s]) => ({ id, records: s.records, lastSeq: s.lastSeq, lastWrite: new Date(s.lastTs).toISOString() }))
  return { ...stats, lastSeq: bySession.reduce((max, s) => Math.max(max, s.lastSeq), 0), bySession }
}

/** A part that could not be read, as the page shows it. */
function failed(err) {
  if (core.isLoaError(err)) return { error: { code: err.code, message: err.message } }
  if (typeof err?.code === 'string' && /^E[A-Z0-9]+$/.test(err.code)) return { error: { code: 'E_IO', message: `${err.syscall ?? 'io'}: ${err.code}` } }
  return { error: { code: 'E_INTERNAL', message: 'unexpected failure while reading this part (a bug; please report it)' } }
}

function part(read) {
  try {
    return read()
  } catch (err) {
    return failed(err)
  }
}

const anchorOf = (id) => `m-${id.slice(0, 12)}`

/** `text` cut to `max` characters (never inside a surrogate pair), saying how much was left out. */
function shownText(text, max = TEXT_SHOWN) {
  if (typeof text !== 'string' || text.length <= max) return text
  let end = max
  const last = text.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end -= 1
  return `${text.slice(0, end)}\n… [${text.length - end} more characters not shown]`
}

const firstOf = (list) => list.slice(0, LIST_SHOWN)

function listedItem({ memory: m, consolidated }) {
  return {
    id: m.id,
    anchor: anchorOf(m.id),
    type: m.type,
    agent: m.agentId ?? null,
    sessionId: m.sessionId,
    timestamp: m.timestamp,
    score: m.score,
    confidence: m.confidence ?? null,
    tags: m.tags,
    // A stored memory passed every gate: the gates refuse, they never store with a failure.
    gates: GATES,
    redacted: m.redactions.map(({ kind, count }) => ({ kind, count })),
    pending: !consolidated,
    expiresAt: m.expiresAt ?? null,
    content: shownText(m.content),
  }
}
const GATES = ['temporal', 'speculation', 'instruction', 'confidence', 'content', 'duplicate']

function memoriesPart(inventory, limit) {
  const items = []
  let text = 0
  for (const listed of inventory.memories) {
    if (text >= PAGE_TEXT) break
    const item = listedItem(listed)
    text += item.content.length
    items.push(item)
  }
  return {
    total: inventory.total,
    pending: inventory.pending,
    shown: items.length,
    truncated: items.length < inventory.total,
    limit,
    byAgent: inventory.byAgent.map((a) => ({
      agent: a.agentId ?? null,
      total: a.total,
      byType: { interaction: a.interaction, decision: a.decision, learning: a.learning, error: a.error, milestone: a.milestone },
    })),
    items,
  }
}

/**
 * verified / stale / tampered / absent. The seal cannot tell a consolidation since it from a
 * hand edit (recovery treats both as modified), so "stale" is a reading, said as such on the
 * page: the signature verifies, every difference is in files the library's own writes change,
 * and a memory record was added (a consolidation ran) or only the search index changed.
 */
function manifestPart(ws, config, values) {
  const file = path.resolve(ws, values.manifest ?? config.signing.manifestPath)
  const keysDir = path.resolve(ws, values.keys ?? config.signing.keysDir)
  const shownPath = path.relative(ws, file) || file
  if (!exists(file)) {
    return { state: 'absent', path: shownPath, signedBy: null, files: 0, createdAt: null, problems: [], note: 'no manifest: the grimoire was never sealed (loa consolidate --seal)' }
  }
  let signed
  try {
    signed = core.readManifest(file)
  } catch (err) {
    if (err?.code !== 'E_STATE_CORRUPT') throw err
    return { state: 'tampered', path: shownPath, signedBy: null, files: 0, createdAt: null, problems: [{ kind: 'signature', path: '', detail: `manifest unreadable: ${err.message}` }], note: 'the manifest itself cannot be read' }
  }
  const ring = core.KeyRing.open(keysDir)
  const v = core.verifyManifest(path.resolve(ws, config.grimoiresDir), signed, ring.verificationKeys())
  // Every problem counts for the state; the page lists the first LIST_SHOWN.
  const base = { path: shownPath, signedBy: v.signedBy ?? null, files: v.files, createdAt: signed.createdAt ?? null, problems: firstOf(v.problems), problemCount: v.problems.length }
  if (v.ok) return { ...base, state: 'verified', note: `every file matches the manifest signed by ${v.signedBy}` }
  const signatureOk = v.problems.every((p) => p.kind === 'missing' || p.kind === 'modified' || p.kind === 'unexpected')
  const libraryOnly = v.problems.every((p) => LIBRARY_WRITTEN.some((re) => re.test(p.path)))
  const consolidated = v.problems.some((p) => p.kind === 'unexpected' && NEW_MEMORY_RECORD.test(p.path))
  const indexOnly = v.problems.every((p) => p.path.startsWith('search/'))
  if (signatureOk && libraryOnly && (consolidated || indexOnly)) {
    return { ...base, state: 'stale', note: 'changed since the last seal in files the library writes, with new memory records: a consolidation without the seal, most likely (recovery cannot tell it from tampering; consolidate with --seal)' }
  }
  const why = !signatureOk ? 'the manifest or its signature does not verify' : 'files changed that no consolidation since the seal explains'
  return { ...base, state: 'tampered', note: `${why}: recovery would restore a verified copy` }
}

function auditPart(ws, config, values, hmacKey) {
  const dir = path.resolve(ws, config.audit.dir)
  if (!exists(dir)) return { present: false, ok: true, entries: 0, segments: 0, head: null, checkpoint: null, problems: [] }
  const keys = core.KeyRing.open(path.resolve(ws, values.keys ?? config.signing.keysDir))
  const v = core.verifyAuditLog(dir, { hmacKey, keys })
  return {
    present: true,
    ok: v.ok,
    entries: v.entries,
    segments: v.segments,
    head: v.head ? { seq: v.head.seq, hash: v.head.hash } : null,
    checkpoint: v.checkpoint ? { seq: v.checkpoint.seq, ts: v.checkpoint.ts } : null,
    problems: v.problems.map((p) => ({ kind: p.kind, detail: p.detail })),
  }
}

function recoveryPart(ws) {
  const s = core.recoveryStatusSync({ workspaceDir: ws })
  const state = s.updatedAt === 0 ? 'never run' : s.degraded ? 'degraded' : 'running'
  return { state, trust: s.trust, degradedCycles: s.degradedCycles, degradedSince: s.degradedSince ? new Date(s.degradedSince).toISOString() : null }
}

function ledgerPart(ws, agent) {
  const ledger = core.Ledger.open({ workspaceDir: ws })
  const notes = ledger.readNotes()
  const beads = ledger.listBeads().slice(0, MAX_BEADS).map((id) => {
    const bead = part(() => ledger.readBead(id))
    if (!bead || bead.error) return { id, title: null, status: null, decisions: 0, nextSteps: [], error: bead?.error ?? null }
    const text = (v) => (typeof v === 'string' ? v : null)
    return { id, title: shownText(text(bead.other.title)), status: shownText(text(bead.other.status)), decisions: bead.decisions.length, nextSteps: firstOf(bead.nextSteps).map((n) => shownText(n)) }
  })
  const g = part(() => ledger.groundingCheckSync(agent ? { agent } : {}))
  const grounding = g.error
    ? g
    : { status: g.status, ratio: g.ratio ?? null, totalClaims: g.totalClaims, groundedClaims: g.groundedClaims, threshold: g.threshold, errors: g.errors }
  return {
    activeContext: firstOf(notes.activeContext).map(({ key, value }) => ({ key: shownText(key), value: shownText(value) })),
    decisions: firstOf(notes.decisions).map((d) => ({ date: d.timestamp ? d.timestamp.slice(0, 10) : null, text: shownText(decisionText(d)) })),
    openQuestions: firstOf(notes.pendingQuestions.filter((q) => !q.done)).map((q) => shownText(q.text)),
    beads,
    grounding,
  }
}

/** A Decision Log entry in one line: its decision, after its title when the title says more. */
function decisionText(d) {
  const decision = d.decision || d.text
  // The ledger titles an entry with the decision's first words, cut with an ellipsis.
  const title = (d.title ?? '').replace(/(\.\.\.|\u2026)$/, '')
  return title && !decision.startsWith(title) ? `${d.title}: ${decision}` : decision
}

/** Each included and dropped item, with the memory or session it stands for. */
function contextPart(store, query, agent, byId, config) {
  const { context: c, sessions, learnings } = store.buildContextExplained({ ...(query ? { query } : {}), ...(agent ? { agentId: agent } : {}) })
  const memoryOf = (id) => {
    const m = byId.get(id) ?? store.get(id)
    return m ? { id: m.id, anchor: anchorOf(m.id), type: m.type, timestamp: m.timestamp, agent: m.agentId ?? null } : null
  }
  const label = (item) => {
    if (item.kind === 'session') return { label: `session ${sessions[item.index] ?? '?'}`, memory: null, explain: null }
    const source = learnings[item.index]
    if (!source) return { label: 'learning', memory: null, explain: null }
    if (!query) return { label: `learning ${source.id.slice(0, 12)}`, memory: null, explain: null }
    const e = source.explain
    return {
      label: null,
      memory: memoryOf(source.id),
      explain: e && {
        score: Math.min(1, e.relevance + e.context) * e.recency * e.importance * e.speaker * e.period * e.mood,
        relevance: e.relevance,
        context: e.context,
        recency: e.recency,
        importance: e.importance,
        speaker: e.speaker,
        period: e.period,
        mood: e.mood,
        matched: e.matched.map((t) => t.queryWord),
      },
    }
  }
  return {
    query: query ?? null,
    budget: config.context.tokenBudget,
    limit: c.limit,
    tokens: c.tokens,
    text: c.text,
    items: c.included.map((i) => ({ tokens: i.tokens, truncated: i.truncated, ...label(i) })),
    dropped: c.dropped.map((d) => {
      const l = label(d.item)
      return { label: l.label ?? (l.memory ? `memory #${l.memory.anchor}` : d.item.kind), reason: d.reason }
    }),
  }
}

/** Memories per day and exact tokens per type, over the listed memories. */
function charts(items, config) {
  const perDay = new Map()
  const tokens = new Map()
  const counts = items.length ? core.countTokensBatch(items.map((m) => m.content)) : []
  items.forEach((m, i) => {
    const day = m.timestamp.slice(0, 10)
    perDay.set(day, (perDay.get(day) ?? 0) + 1)
    tokens.set(m.type, (tokens.get(m.type) ?? 0) + counts[i])
  })
  // The newest session's captures: what that session put into its context window.
  const newest = items[0]?.sessionId
  const usage = items.reduce((sum, m, i) => (m.sessionId === newest ? sum + counts[i] : sum), 0)
  const b = config.attentionBudget
  return {
    perDay: [...perDay].sort(([a], [b2]) => (a < b2 ? -1 : 1)).map(([day, count]) => ({ day, count })),
    tokensByType: [...tokens].map(([type, t]) => ({ type, tokens: t })).sort((a, b2) => b2.tokens - a.tokens),
    attention: {
      windowTokens: b.contextWindowTokens,
      levels: [
        { name: 'yellow', tokens: b.yellow.tokens },
        { name: 'orange', tokens: b.orange.tokens },
        { name: 'red', tokens: b.red.tokens },
      ],
      usage,
      usageLabel: newest === undefined ? 'no session yet' : `tokens of session ${newest}'s memories`,
    },
  }
}

/**
 * The report's model for the workspace `ws` (see bin/lib/report/render.js for the page):
 * `{ agent, query, limit, manifest, keys, hmacKey }` as `loa report` takes them.
 */
function gatherReport(ws, { agent = null, query = null, limit = DEFAULT_LIMIT, manifest, keys, hmacKey } = {}) {
  const { config } = core.loadConfig(ws)
  const values = { manifest, keys }
  const store = core.MemoryStore.open({ workspaceDir: ws, sessionId: 'report', readOnly: true })
  try {
    // Read once. A bad --agent or --limit is the caller's error, not a part of the page that
    // failed.
    let inventory
    try {
      inventory = store.inventorySync({ limit, ...(agent ? { agentId: agent } : {}) })
    } catch (err) {
      if (err?.code === 'E_INVALID_ARGUMENT') throw err
      inventory = failed(err)
    }
    const memories = inventory.error ? inventory : memoriesPart(inventory, limit)
    const items = memories.items ?? []
    const byId = new Map((inventory.memories ?? []).map((m) => [m.memory.id, m.memory]))
    const walDir = path.resolve(ws, config.wal.dir)
    return {
      version: MODEL_VERSION,
      generatedAt: new Date().toISOString(),
      workspace: ws,
      agent,
      query,
      memories,
      health: {
        wal: part(() => walPart(walDir)),
        deadLetters: part(() => {
          const l = core.listDeadLetters({ workspaceDir: ws })
          return { count: l.letters.length, unreadable: l.unreadable.length }
        }),
        quarantined: inventory.error ? inventory : inventory.quarantined,
        tombstones: inventory.error ? inventory : inventory.tombstones,
        manifest: part(() => manifestPart(ws, config, values)),
        audit: part(() => auditPart(ws, config, values, hmacKey)),
        recovery: part(() => recoveryPart(ws)),
      },
      context: part(() => contextPart(store, query, agent, byId, config)),
      ledger: part(() => ledgerPart(ws, agent)),
      charts: part(() => charts(items, config)),
    }
  } finally {
    store.close()
  }
}

module.exports = { gatherReport, DEFAULT_LIMIT, MODEL_VERSION }
