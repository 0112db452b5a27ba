// Recall on the development set of issue 30 (bench/conversations/): @loa/core's
// MemoryStore.search beside SQLite FTS5 bm25() (porter unicode61), on the same turns and the same
// questions, in one run.
//
//   node bench/conversations.bench.mjs          all 16 conversations (1,120 questions)
//   node bench/conversations.bench.mjs --quick  the first 4 conversations (280 questions)
//
// Recall does not depend on the build: the debug addon (`npm run build:debug`) gives the same
// figures as the release one, only the search times differ.
//
// One store per conversation, one turn per memory, captured as the OpenClaw plugin captures a
// message (extensions/loa/src/memory.ts): `type: 'interaction'`, no confidence, no tags (the
// plugin's `user`/`assistant` are roles; two people have none), the default quality gates; the
// content the speaker's name and their words (`Mia: We adopted a little beagle ...`), the
// timestamp the session's date (plus a minute per turn). Each dialogue session is a store
// session (`c01-s03`), as each OpenClaw session is; the store is consolidated at the end. FTS5
// gets the same texts, one row per turn, and every question's words OR-ed (as
// bench/search.bench.mjs queries it).
//
// Reported (bench/results/conversations.md): recall@5, recall@10 and MRR@10 (a hit: any
// answering turn in the top k), overall and per question type and style, both engines; for
// multi-hop also "every answering turn in the top 10"; for loa the share of questions whose
// buildContext({ query, budget: 2000 }) holds an answering turn whole.
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { ftsQuery, writeReport } from './lib.mjs'

const require = createRequire(import.meta.url)
const { MemoryStore } = require('../index.js')
/** FTS5 is the peer: when better-sqlite3 is not installed, its columns say so (`-`). */
const Database = (() => {
  try {
    return require('better-sqlite3')
  } catch {
    console.error('better-sqlite3 is not installed (npm install --prefix bench): FTS5 is left out')
    return null
  }
})()

const QUICK = process.argv.includes('--quick')
const here = path.dirname(fileURLToPath(import.meta.url))
const TYPES = ['single-hop', 'speaker-ref', 'multi-hop', 'temporal', 'open-domain']

const jsonl = (file) =>
  fs
    .readFileSync(path.join(here, 'conversations', file), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
const allTurns = jsonl('turns.jsonl')
const conversations = [...new Set(allTurns.map((t) => t.conversation))].slice(0, QUICK ? 4 : undefined)
const turns = allTurns.filter((t) => conversations.includes(t.conversation))
const questions = jsonl('questions.jsonl').filter((q) => conversations.includes(q.conversation))

/** What a turn becomes as a memory's text, for both engines. */
const contentOf = (turn) => `${turn.speaker}: ${turn.text}`

/** Per engine: for each question, the turn ids of its top 10 (a memory may stand for several). */
const ranked = { loa: new Map(), fts: new Map() }
const contextHolds = new Map()
const dumped = new Map() // question id -> loa's top 30 and their scores (LOA_BENCH_RANKS)
const refusedBy = new Map()
const answeringRefused = new Set()
let loaSearchMs = 0
let ftsSearchMs = 0
const t0 = performance.now()

for (const conv of conversations) {
  const convTurns = turns.filter((t) => t.conversation === conv)
  const convQuestions = questions.filter((q) => q.conversation === conv)
  const answering = new Set(convQuestions.flatMap((q) => q.evidence))

  // loa, through the real pipeline (redaction, gates, WAL), a store session per dialogue session.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `loa-bench-conv-${conv}-`))
  fs.writeFileSync(path.join(dir, '.loa.config.yaml'), 'wal:\n  sync: none\n')
  const turnsOf = new Map() // memory id -> turn ids
  const idOfContent = new Map()
  for (const session of new Set(convTurns.map((t) => t.session))) {
    const store = MemoryStore.open({ workspaceDir: dir, sessionId: `${conv}-s${String(session).padStart(2, '0')}` })
    for (const turn of convTurns.filter((t) => t.session === session)) {
      const content = contentOf(turn)
      const r = store.captureSync({ type: 'interaction', content, timestamp: turn.date })
      // A repeated text (small talk) is stored once, content-addressed: it stands for both turns.
      const id = r.accepted ? r.id : idOfContent.get(content)
      if (r.accepted) idOfContent.set(content, r.id)
      if (id) turnsOf.set(id, [...(turnsOf.get(id) ?? []), turn.id])
      if (!r.accepted) {
        const why = r.blocked ? 'blocked' : r.gates.filter((g) => !g.pass).map((g) => g.name).join('+')
        refusedBy.set(why, (refusedBy.get(why) ?? 0) + 1)
        if (!id && answering.has(turn.id)) answeringRefused.add(turn.id)
      }
    }
    store.close()
  }
  const store = MemoryStore.open({ workspaceDir: dir, sessionId: `${conv}-questions` })
  store.consolidateSync()
  for (const q of convQuestions) {
    const t = performance.now()
    const hits = store.searchSync(q.question, { limit: 10 }).hits
    loaSearchMs += performance.now() - t
    ranked.loa.set(q.id, hits.map((h) => turnsOf.get(h.id) ?? []))
    if (process.env.LOA_BENCH_RANKS) {
      const deep = store.searchSync(q.question, { limit: 30 }).hits
      dumped.set(q.id, deep.map((h) => ({ turns: turnsOf.get(h.id) ?? [], score: h.score })))
    }
    const text = store.buildContext({ query: q.question, budget: 2000 }).text ?? ''
    // Each memory is quoted as a JSON string; the last may be cut to fit: only whole ones count.
    contextHolds.set(q.id, q.evidence.some((id) => text.includes(JSON.stringify(contentOf(convTurns.find((t) => t.id === id))))))
  }
  store.close()
  fs.rmSync(dir, { recursive: true, force: true })
  console.error(`${conv}: ${convTurns.length} turns, ${convQuestions.length} questions`)

  // FTS5 on the same texts.
  if (!Database) continue
  const db = new Database(':memory:')
  db.exec("CREATE VIRTUAL TABLE m USING fts5(text, id UNINDEXED, tokenize = 'porter unicode61')")
  const insert = db.prepare('INSERT INTO m (text, id) VALUES (?, ?)')
  db.transaction(() => {
    for (const turn of convTurns) insert.run(contentOf(turn), turn.id)
  })()
  const top = db.prepare('SELECT id FROM m WHERE m MATCH ? ORDER BY bm25(m) LIMIT 10')
  for (const q of convQuestions) {
    const t = performance.now()
    const match = ftsQuery(q.question)
    const ids = match ? top.all(match).map((r) => [r.id]) : []
    ftsSearchMs += performance.now() - t
    ranked.fts.set(q.id, ids)
  }
  db.close()
}

/**
 * Recall@5, recall@10, MRR@10 and (multi-hop) all-in-top-10 over `qs` for one engine, `null`
 * for an engine that did not run.
 */
function score(engine, qs) {
  if (ranked[engine].size === 0) return null
  let at5 = 0
  let at10 = 0
  let rr = 0
  let all10 = 0
  for (const q of qs) {
    const lists = ranked[engine].get(q.id)
    const rank = lists.findIndex((ids) => ids.some((id) => q.evidence.includes(id)))
    if (rank >= 0 && rank < 5) at5++
    if (rank >= 0) {
      at10++
      rr += 1 / (rank + 1)
    }
    const found = new Set(lists.flat())
    if (q.evidence.every((id) => found.has(id))) all10++
  }
  const n = qs.length || 1
  return { n: qs.length, at5: at5 / n, at10: at10 / n, mrr: rr / n, all10: all10 / n }
}

const lines = []
const say = (line = '') => {
  console.log(line)
  lines.push(line)
}
const f3 = (x) => (x === undefined ? '-' : x.toFixed(3))
const pct = (x) => (x === undefined ? '-' : `${(x * 100).toFixed(1)}%`)

say(`# Recall on conversations: the development set of issue 30${QUICK ? ' (quick)' : ''}`)
say()
say(
  `${conversations.length} conversations, ${turns.length.toLocaleString('en')} turns (one memory each), ${questions.length.toLocaleString('en')} questions; ` +
    `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}. A hit: any answering turn in the top k.`,
)
say()
const refused = [...refusedBy].map(([why, n]) => `${n} ${why}`).join(', ')
say(`loa did not store ${[...refusedBy.values()].reduce((a, b) => a + b, 0)} turns (${refused || 'none'}); answering turns among them, not stored at all: ${answeringRefused.size}.`)
say()
say('| engine | recall@5 | recall@10 | MRR@10 |')
say('|---|---:|---:|---:|')
for (const [engine, label] of [
  ['fts', 'SQLite FTS5 bm25() (porter unicode61)'],
  ['loa', '`MemoryStore.search`'],
]) {
  const s = score(engine, questions) ?? {}
  say(`| ${label} | ${f3(s.at5)} | ${f3(s.at10)} | ${f3(s.mrr)} |`)
}
say()
say(`\`buildContext({ query, budget: 2000 })\` holds an answering turn (whole) for ${pct([...contextHolds.values()].filter(Boolean).length / questions.length)} of the questions.`)
say()
say('## By question type (loa / FTS5)')
say()
say('| type | questions | recall@5 | recall@10 | MRR@10 | context holds one (loa) |')
say('|---|---:|---:|---:|---:|---:|')
for (const type of TYPES) {
  const qs = questions.filter((q) => q.type === type)
  const [l, f] = [score('loa', qs), score('fts', qs) ?? {}]
  const held = qs.filter((q) => contextHolds.get(q.id)).length / (qs.length || 1)
  say(`| ${type} | ${qs.length} | ${f3(l.at5)} / ${f3(f.at5)} | ${f3(l.at10)} / ${f3(f.at10)} | ${f3(l.mrr)} / ${f3(f.mrr)} | ${pct(held)} |`)
}
const multi = questions.filter((q) => q.type === 'multi-hop')
say()
say(`Multi-hop, both answering turns in the top 10: loa ${pct(score('loa', multi).all10)}, FTS5 ${pct(score('fts', multi)?.all10)}.`)
say()
say('## By style (loa / FTS5)')
say()
say('| type | style | questions | recall@5 | MRR@10 |')
say('|---|---|---:|---:|---:|')
for (const type of TYPES) {
  for (const style of new Set(questions.filter((q) => q.type === type).map((q) => q.style))) {
    const qs = questions.filter((q) => q.type === type && q.style === style)
    const [l, f] = [score('loa', qs), score('fts', qs) ?? {}]
    say(`| ${type} | ${style} | ${qs.length} | ${f3(l.at5)} / ${f3(f.at5)} | ${f3(l.mrr)} / ${f3(f.mrr)} |`)
  }
}
say()
say(`Search time over the questions (top 10): loa ${loaSearchMs.toFixed(0)} ms, FTS5 ${ftsSearchMs.toFixed(0)} ms; whole run ${((performance.now() - t0) / 1000).toFixed(1)} s.`)
writeReport('conversations', lines.join('\n') + '\n')

// For looking at misses while developing: LOA_BENCH_RANKS=/tmp/ranks.jsonl writes, per question,
// the rank of its first answering turn in loa's top 10 (-1: none) and loa's top 30 with scores.
if (process.env.LOA_BENCH_RANKS) {
  const turnById = new Map(turns.map((t) => [t.id, t]))
  const out = questions.map((q) => {
    const lists = ranked.loa.get(q.id)
    const rank = lists.findIndex((ids) => ids.some((id) => q.evidence.includes(id)))
    const answer = q.evidence.map((id) => contentOf(turnById.get(id)))
    const top = dumped.get(q.id).map((h) => ({ ...h, text: contentOf(turnById.get(h.turns[0])) }))
    return JSON.stringify({ id: q.id, type: q.type, style: q.style, question: q.question, evidence: q.evidence, rank, answer, top })
  })
  fs.writeFileSync(process.env.LOA_BENCH_RANKS, out.join('\n') + '\n')
}
