'use strict'
// A small, realistic report model (the shape gather.js produces), for the renderer's tests and for
// a screenshot of the page: two agents and shared memories, all five types over five days, one
// pending, redactions, a stale manifest, an audit chain with a checkpoint, recovery running, dead
// letters, a query context with explanations, and a ledger. Ids are derived from the content so
// the model is the same on every run.

const crypto = require('node:crypto')

const GATES = ['temporal', 'speculation', 'instruction', 'confidence', 'content', 'duplicate']

// [day, time, agent, type, session, score, tags, redacted, content]
const MEMORIES = [
  ['2026-11-20', '09:12', 'main', 'decision', 's1', 0.82, ['deploy'], [], 'Deploys go out on Tuesdays and Thursdays only; Friday deploys need a second approver.'],
  ['2026-11-20', '09:40', 'main', 'interaction', 's1', 0.41, [], [{ kind: 'EMAIL', count: 2 }], 'Asked [EMAIL] and [EMAIL] for the staging credentials rotation schedule.'],
  ['2026-11-20', '15:05', null, 'learning', 's1', 0.66, ['build'], [], 'The release build needs 6 GiB of memory; the 4 GiB runner fails with a linker OOM.'],
  ['2026-11-21', '10:02', 'reviewer', 'error', 's2', 0.71, ['tests', 'flaky'], [], 'replicate.test.mjs timed out twice on CI when the S3 stub started after the client.'],
  ['2026-11-21', '11:30', 'reviewer', 'interaction', 's2', 0.35, ['review'], [{ kind: 'PHONE', count: 1 }], 'The on-call reviewer can be reached at [PHONE] during the release window.'],
  ['2026-11-22', '08:55', 'main', 'milestone', 's3', 0.9, ['release'], [], 'Version 0.1.0 tagged and published; changelog reviewed by both agents.'],
  ['2026-11-22', '13:20', null, 'decision', 's3', 0.77, ['security'], [{ kind: 'API_KEY', count: 1 }, { kind: 'EMAIL', count: 1 }], 'Rotate the signing key every 90 days; the old key [API_KEY] stays valid for verification only. Contact [EMAIL].'],
  ['2026-11-23', '09:10', 'reviewer', 'learning', 's4', 0.58, ['docs'], [], 'Readers skip the architecture page; link the WAL format from the README instead.'],
  ['2026-11-23', '16:45', 'main', 'error', 's4', 0.63, ['wal'], [], 'A full disk during compaction left a .tmp segment; recovery removed it on the next open.'],
  ['2026-11-24', '10:00', 'reviewer', 'decision', 's5', 0.74, ['deploy', 'friday'], [], 'No deploy on Friday 2026-11-27: the team is offline for the holiday.'],
  ['2026-11-24', '11:15', null, 'interaction', 's5', 0.3, [], [], 'Discussed whether dead letters should be retried automatically; left open.'],
  ['2026-11-24', '17:50', 'main', 'interaction', 's5', 0.44, ['deploy'], [], 'Wrote the Friday deploy checklist into the ledger.'],
]

const PENDING = 11
const TOKENS = { interaction: 410, decision: 520, learning: 260, error: 330, milestone: 120 }

const hex = (text) => crypto.createHash('sha256').update(text).digest('hex')

function items() {
  return MEMORIES.map(([day, time, agent, type, sessionId, score, tags, redacted, content], i) => {
    const id = hex(content)
    return {
      id,
      anchor: `m-${id.slice(0, 12)}`,
      type,
      agent,
      sessionId,
      timestamp: `${day}T${time}:00.000Z`,
      score,
      confidence: type === 'decision' ? 0.9 : null,
      tags,
      gates: GATES,
      redacted,
      pending: i === PENDING,
      expiresAt: null,
      content,
    }
  })
}

/** Counts per agent and type, in the order agents first appear. */
function byAgent(list) {
  const agents = new Map()
  for (const m of list) {
    let entry = agents.get(m.agent)
    if (!entry) agents.set(m.agent, (entry = { agent: m.agent, total: 0, byType: {} }))
    entry.total++
    entry.byType[m.type] = (entry.byType[m.type] ?? 0) + 1
  }
  return [...agents.values()]
}

function perDay(list) {
  const days = new Map()
  for (const m of list) days.set(m.timestamp.slice(0, 10), (days.get(m.timestamp.slice(0, 10)) ?? 0) + 1)
  return [...days].map(([day, count]) => ({ day, count }))
}

/**
 * A fresh copy of the example report model (safe to mutate).
 * @returns {object}
 */
function exampleModel() {
  const list = items()
  const ref = (i) => ({ id: list[i].id, anchor: list[i].anchor, type: list[i].type, timestamp: list[i].timestamp, agent: list[i].agent })
  return {
    version: 1,
    generatedAt: '2026-11-29T10:00:00.000Z',
    workspace: '/home/dev/projects/shop-api',
    agent: null,
    query: 'friday deploy',
    memories: { total: 12, pending: 1, shown: 12, truncated: false, byAgent: byAgent(list), items: list },
    health: {
      wal: {
        ok: true,
        sessions: 5,
        segments: 6,
        bytes: 48213,
        records: 31,
        lastSeq: 31,
        bySession: [
          { id: 's1', records: 7, lastSeq: 7, lastWrite: '2026-11-20T15:05:02.114Z' },
          { id: 's2', records: 5, lastSeq: 12, lastWrite: '2026-11-21T11:30:04.870Z' },
          { id: 's3', records: 6, lastSeq: 18, lastWrite: '2026-11-22T13:20:01.006Z' },
          { id: 's4', records: 6, lastSeq: 24, lastWrite: '2026-11-23T16:45:09.551Z' },
          { id: 's5', records: 7, lastSeq: 31, lastWrite: '2026-11-24T17:50:00.312Z' },
        ],
      },
      deadLetters: { count: 2, unreadable: 0 },
      quarantined: ['memory/ab/ab41c07e.json.corrupt-20261123T164512Z'],
      tombstones: 3,
      manifest: {
        state: 'stale',
        path: '.loa/manifest.json',
        signedBy: 'ed25519:7f3a9c2e41b0',
        files: 14,
        createdAt: '2026-11-22T09:00:00.000Z',
        problems: [
          { kind: 'modified', path: 'grimoires/loa/NOTES.md', detail: 'sha256 differs from the manifest' },
          { kind: 'added', path: 'memory/ff/ff02a1.json', detail: 'not covered by the manifest' },
        ],
        note: 'files changed since the manifest was signed; run loa manifest sign',
      },
      audit: {
        present: true,
        ok: true,
        entries: 12,
        segments: 1,
        head: { seq: 12, hash: hex('audit head 12') },
        checkpoint: { seq: 10, ts: '2026-11-24T18:00:00.000Z' },
        problems: [],
      },
      recovery: { state: 'running', trust: 'signed', degradedCycles: 0, degradedSince: null },
    },
    context: {
      query: 'friday deploy',
      budget: 2000,
      limit: 1900,
      tokens: 1234,
      text: [
        '## Memories (friday deploy)',
        `- [decision 2026-11-24] ${list[9].content}`,
        `- [decision 2026-11-20] ${list[0].content}`,
        `- [interaction 2026-11-24] ${list[11].content}`,
        '## Session s5',
        'Wrote the Friday deploy checklist; next: confirm the holiday freeze with the reviewer.',
      ].join('\n'),
      items: [
        { tokens: 412, truncated: false, label: null, memory: ref(9), explain: { score: 0.91, relevance: 0.88, recency: 0.97, importance: 0.74, speaker: 1, period: 1, mood: 1, matched: ['friday', 'deploy'] } },
        { tokens: 356, truncated: false, label: null, memory: ref(0), explain: { score: 0.79, relevance: 0.83, recency: 0.62, importance: 0.82, speaker: 1, period: 0.5, mood: 1, matched: ['friday', 'deploy'] } },
        { tokens: 198, truncated: false, label: null, memory: ref(11), explain: { score: 0.64, relevance: 0.7, recency: 0.97, importance: 0.44, speaker: 1, period: 1, mood: 1, matched: ['deploy'] } },
        { tokens: 268, truncated: true, label: 'session s5', memory: null, explain: null },
      ],
      dropped: [
        { label: `memory #${list[5].anchor}`, reason: 'budget_full' },
        { label: 'session s4', reason: 'budget_full' },
      ],
    },
    ledger: {
      activeContext: [
        { key: 'Current focus', value: 'Friday deploy freeze and checklist' },
        { key: 'Reasoning state', value: 'waiting for the reviewer to confirm the holiday' },
      ],
      decisions: [
        { date: '2026-11-20', text: 'Deploys only on Tuesdays and Thursdays' },
        { date: '2026-11-22', text: 'Rotate the signing key every 90 days' },
        { date: '2026-11-24', text: 'No deploy on Friday 2026-11-27' },
      ],
      openQuestions: ['Should dead letters be retried automatically?', 'Does the 4 GiB runner need replacing before the next release?'],
      beads: [{ id: 'bd-x7y8', title: 'Friday deploy freeze', status: 'in_progress', decisions: 2, nextSteps: ['Confirm the holiday with the reviewer', 'Post the freeze in the release channel'] }],
      grounding: { status: 'warn', ratio: 0.8, totalClaims: 5, groundedClaims: 4, threshold: 0.95, errors: [] },
    },
    charts: {
      perDay: perDay(list),
      tokensByType: Object.entries(TOKENS).map(([type, tokens]) => ({ type, tokens })),
      attention: {
        windowTokens: 200000,
        levels: [
          { name: 'yellow', tokens: 5000 },
          { name: 'orange', tokens: 10000 },
          { name: 'red', tokens: 15000 },
        ],
        usage: 7300,
        usageLabel: 'tokens of session s5 memories',
      },
    },
  }
}

module.exports = { exampleModel }
