// Search benchmark: @loa/core's MemoryStore.search beside SQLite FTS5 (better-sqlite3, bm25())
// on the same texts and the same queries, in one run.
//
//   node bench/search.bench.mjs          full run: 100,000 memories (several minutes on 2 cores)
//   node bench/search.bench.mjs --quick  smoke run: 5,000 memories
//   --total N     another corpus size (steps 1k, 10k up to N, then N)
//   --store-only  only the store's own figures (capture + consolidation, open, buildContext):
//                 no FTS5 (better-sqlite3 not needed) and no relevance run
//
// What it reports (bench/results/search.md):
// - search latency p50/p99 over 2,000 queries (1 to 6 words, half scoped to one agent), loa and
//   FTS5, top 5; index size on disk; resident memory of the process before and after the store
//   (and its index) is open;
// - capture of one more memory, and the consolidation after it, at 1k, 10k and all memories
//   already consolidated (the cost must stay flat);
// - buildContext({ query, agentId }) at all memories (what runs before every prompt);
// - recall@5 and MRR on the labelled set in bench/recall/ (224 queries over 3,010 memories),
//   loa and FTS5.
// Memories are captured through the real pipeline (redaction, gates, WAL). Building the corpus
// runs with `wal.sync: none` to save time; every measured capture runs with the default
// (`always`: fsynced before it returns).
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { ACCEPT_ALL_GATES, CORPUS_FTS_TABLE, captureEntry, dirBytes, ftsQuery, mib, ms, now, quantile, writeReport } from './lib.mjs'
import { memories as corpusMemories, queries as corpusQueries } from './search-corpus.mjs'

const require = createRequire(import.meta.url)
const { MemoryStore } = require('../index.js')

const QUICK = process.argv.includes('--quick')
const STORE_ONLY = process.argv.includes('--store-only')
const totalAt = process.argv.indexOf('--total')
const TOTAL = totalAt > 0 ? Number(process.argv[totalAt + 1]) : QUICK ? 5_000 : 100_000
const STEPS = [...[1_000, 10_000].filter((n) => n < TOTAL), TOTAL]
const QUERIES = QUICK ? 300 : 2_000
const CONTEXT_QUERIES = QUICK ? 50 : 300
const REPEAT = 5 // captures + consolidations measured at each step (median reported)
const here = path.dirname(fileURLToPath(import.meta.url))

const median = (xs) => quantile([...xs].sort((a, b) => a - b), 0.5)


function workspace(name, sync) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `loa-bench-${name}-`))
  setSync(dir, sync)
  return dir
}

function setSync(dir, sync) {
  fs.writeFileSync(path.join(dir, '.loa.config.yaml'), `wal:\n  sync: ${sync}\n`)
}

const open = (dir, sessionId) => MemoryStore.open({ workspaceDir: dir, sessionId, gates: ACCEPT_ALL_GATES })

function fts(dbPath, mems) {
  const Database = require('better-sqlite3')
  const db = new Database(dbPath)
  db.pragma('journal_mode = WAL')
  db.exec(CORPUS_FTS_TABLE)
  const insert = db.prepare('INSERT INTO m (text, agent, id) VALUES (?, ?, ?)')
  db.transaction(() => {
    for (const x of mems) insert.run(x.text, x.agentId, x.id)
  })()
  const any = db.prepare('SELECT id FROM m WHERE m MATCH ? ORDER BY bm25(m) LIMIT ?')
  const scoped = db.prepare('SELECT id FROM m WHERE m MATCH ? AND (agent = ? OR agent IS NULL) ORDER BY bm25(m) LIMIT ?')
  return {
    search(query, agentId, limit) {
      const match = ftsQuery(query)
      if (!match) return []
      return (agentId ? scoped.all(match, agentId, limit) : any.all(match, limit)).map((r) => r.id)
    },
    close: () => db.close(),
  }
}

function latencies(run, queries) {
  for (const q of queries.slice(0, 50)) run(q) // warm-up
  const times = []
  let hits = 0
  for (const q of queries) {
    const t = now()
    hits += run(q) > 0 ? 1 : 0
    times.push(now() - t)
  }
  times.sort((a, b) => a - b)
  return { p50: quantile(times, 0.5), p99: quantile(times, 0.99), mean: times.reduce((a, b) => a + b, 0) / times.length, hits }
}

if (process.argv[2] === '--measure-store') {
  const [dir, file] = process.argv.slice(3)
  const { queries: qs, contextQueries: cqs } = JSON.parse(fs.readFileSync(file, 'utf8'))
  const rssBefore = process.memoryUsage().rss
  const t0 = now()
  const store = open(dir, 'bench-search')
  const openMs = now() - t0
  const scope = (q) => (q.agentIds ? { agentId: q.agentIds[0] } : {})
  const loaSpeed = latencies((q) => store.searchSync(q.query, { limit: 5, ...scope(q) }).hits.length, qs)
  const rssAfter = process.memoryUsage().rss
  const contextSpeed = latencies((q) => (store.buildContext({ query: q.query, budget: 2000, ...scope(q) }).text ? 1 : 0), cqs)
  const recentSpeed = latencies(() => (store.buildContext({ budget: 2000 }).text ? 1 : 0), cqs.slice(0, 20))
  store.close()
  process.stdout.write(JSON.stringify({ loaSpeed, contextSpeed, recentSpeed, rssBefore, rssAfter, openMs }))
  process.exit(0)
}

const lines = []
const say = (line = '') => {
  console.log(line)
  lines.push(line)
}

// ---------------------------------------------------------------------------------------------
// 1. Speed at TOTAL memories, and capture + consolidation at each step
// ---------------------------------------------------------------------------------------------
const mems = corpusMemories(TOTAL + STEPS.length * REPEAT)
const corpus = mems.slice(0, TOTAL)
const extra = mems.slice(TOTAL)
const queries = corpusQueries(corpus, QUERIES)
const ws = workspace('speed', 'none')

say(`# Search: ${TOTAL.toLocaleString('en')} memories${QUICK ? ' (quick)' : ''}`)
say()
say(`${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${os.platform()} ${os.release()}`)
say()

const steps = []
let captured = 0
let duplicates = 0
let buildMs = 0
for (const target of STEPS) {
  let store = open(ws, 'bench-build')
  const t = now()
  while (captured < target) {
    const r = store.captureSync(captureEntry(corpus[captured++]))
    if (r.accepted) continue
    // The generator repeats a short template now and then: stored once (content-addressed).
    if (r.gates.some((g) => g.name === 'duplicate' && !g.pass)) duplicates++
    else throw new Error(`memory ${captured} was not accepted: ${JSON.stringify(r.gates.filter((g) => !g.pass))}`)
  }
  store.consolidateSync()
  buildMs += now() - t
  store.close()
  // Measured with the default fsync policy.
  setSync(ws, 'always')
  store = open(ws, `bench-step-${target}`)
  const capture = []
  const consolidate = []
  for (let i = 0; i < REPEAT; i++) {
    const m = { ...extra[steps.length * REPEAT + i] }
    m.text = `${m.text} (measured capture ${steps.length}.${i})`
    let c = now()
    const r = store.captureSync(captureEntry(m))
    capture.push(now() - c)
    if (!r.accepted) throw new Error('the measured capture was not accepted')
    c = now()
    store.consolidateSync()
    consolidate.push(now() - c)
  }
  store.close()
  setSync(ws, 'none')
  steps.push({ existing: target, capture: median(capture), consolidate: median(consolidate) })
  console.error(`step ${target}: capture ${ms(median(capture))}, consolidate ${ms(median(consolidate))}`)
}
setSync(ws, 'always')

// The store is opened and searched in a fresh process, so that its resident memory is its own
// (this one still holds what building the corpus allocated).
const queryFile = path.join(ws, 'bench-queries.json')
fs.writeFileSync(queryFile, JSON.stringify({ queries, contextQueries: queries.slice(0, CONTEXT_QUERIES) }))
const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--measure-store', ws, queryFile], { encoding: 'utf8', maxBuffer: 1 << 26 })
if (child.status !== 0) throw new Error(`the measuring process failed: ${child.stderr}`)
const measured = JSON.parse(child.stdout)
const { loaSpeed, contextSpeed, recentSpeed, rssBefore, rssAfter, openMs } = measured
const contextQueries = queries.slice(0, CONTEXT_QUERIES)
const indexBytes = dirBytes(path.join(ws, 'grimoires', 'loa', 'search'))

const ftsDir = STORE_ONLY ? null : fs.mkdtempSync(path.join(os.tmpdir(), 'loa-bench-fts-'))
let ftsBuildMs = 0
let ftsSpeed = null
let ftsBytes = 0
if (!STORE_ONLY) {
  const t = now()
  const ftsIndex = fts(path.join(ftsDir, 'fts.db'), corpus)
  ftsBuildMs = now() - t
  ftsSpeed = latencies((q) => ftsIndex.search(q.query, q.agentIds?.[0], 5).length, queries)
  ftsIndex.close()
  ftsBytes = dirBytes(ftsDir)
}

say(`## Search latency (top 5, ${queries.length} queries, half scoped to one agent)`)
say()
say('| engine | p50 | p99 | mean | queries with hits | index on disk |')
say('|---|---|---|---|---|---|')
say(`| loa MemoryStore.searchSync | ${ms(loaSpeed.p50)} | ${ms(loaSpeed.p99)} | ${ms(loaSpeed.mean)} | ${loaSpeed.hits} of ${queries.length} | ${mib(indexBytes)} |`)
if (ftsSpeed) {
  say(`| SQLite FTS5 bm25() (porter unicode61) | ${ms(ftsSpeed.p50)} | ${ms(ftsSpeed.p99)} | ${ms(ftsSpeed.mean)} | ${ftsSpeed.hits} of ${queries.length} | ${mib(ftsBytes)} |`)
  say()
  say(`p50 ratio loa / FTS5: ${(loaSpeed.p50 / ftsSpeed.p50).toFixed(2)}; p99 ratio: ${(loaSpeed.p99 / ftsSpeed.p99).toFixed(2)}`)
}
say(`Resident memory of a fresh process: ${mib(rssBefore)} with the addon loaded, ${mib(rssAfter)} after opening the store and running the searches (+${mib(rssAfter - rssBefore)}); opening took ${ms(openMs)}.`)
say(`Building: loa ${(buildMs / 1000).toFixed(1)} s for ${TOTAL.toLocaleString('en')} captures (${duplicates} repeated texts stored once) and consolidations (wal.sync none)${ftsSpeed ? `; FTS5 ${(ftsBuildMs / 1000).toFixed(1)} s (one transaction)` : ''}.`)
say()
say(`## Capture of one more memory, and the consolidation after it (median of ${REPEAT}, wal.sync always)`)
say()
say('| memories already consolidated | captureSync | consolidateSync |')
say('|---|---|---|')
for (const s of steps) say(`| ${s.existing.toLocaleString('en')} | ${ms(s.capture)} | ${ms(s.consolidate)} |`)
say()
say(`## buildContext before a prompt, at ${TOTAL.toLocaleString('en')} memories (budget 2000 tokens)`)
say()
say('| call | p50 | p99 |')
say('|---|---|---|')
say(`| buildContext({ query, agentId }) (${contextQueries.length} queries) | ${ms(contextSpeed.p50)} | ${ms(contextSpeed.p99)} |`)
say(`| buildContext() without a query (recent sessions, learnings) | ${ms(recentSpeed.p50)} | ${ms(recentSpeed.p99)} |`)
say()

if (STORE_ONLY) {
  fs.rmSync(ws, { recursive: true, force: true })
  writeReport('search-store', lines.join('\n') + '\n')
  process.exit(0)
}

// ---------------------------------------------------------------------------------------------
// 2. Relevance on the labelled set
// ---------------------------------------------------------------------------------------------
const jsonl = (file) => fs.readFileSync(path.join(here, 'recall', file), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
const labelled = jsonl('memories.jsonl')
const labelledQueries = jsonl('queries.jsonl')
const rws = workspace('recall', 'none')
const rstore = open(rws, 'bench-recall')
const loaIdOf = new Map()
const idOfText = new Map()
let refused = 0
const refusedBy = new Map()
for (const m of labelled) {
  const r = rstore.captureSync(captureEntry(m))
  if (r.accepted) {
    loaIdOf.set(m.id, r.id)
    idOfText.set(m.text, r.id)
  } else if (idOfText.has(m.text)) {
    // The same text again: one memory (content-addressed), answering for both labels.
    loaIdOf.set(m.id, idOfText.get(m.text))
    refused++
    refusedBy.set('duplicate', (refusedBy.get('duplicate') ?? 0) + 1)
  } else {
    refused++
    const why = r.blocked ? 'blocked' : r.gates.filter((g) => !g.pass).map((g) => g.name).join('+')
    refusedBy.set(why, (refusedBy.get(why) ?? 0) + 1)
  }
}
const labelsOf = new Map()
for (const [label, id] of loaIdOf) labelsOf.set(id, [...(labelsOf.get(id) ?? []), label])
const rfts = fts(path.join(rws, 'fts.db'), labelled)

function relevance(search) {
  let found = 0
  let reciprocal = 0
  const byCategory = new Map()
  for (const q of labelledQueries) {
    const ids = search(q)
    const rank = ids.findIndex((labels) => [labels].flat().some((label) => q.expected.includes(label)))
    const hit = rank >= 0 && rank < 5
    found += hit ? 1 : 0
    reciprocal += rank >= 0 ? 1 / (rank + 1) : 0
    const c = byCategory.get(q.category) ?? { n: 0, hit: 0 }
    c.n++
    c.hit += hit ? 1 : 0
    byCategory.set(q.category, c)
  }
  return { recall: found / labelledQueries.length, mrr: reciprocal / labelledQueries.length, byCategory }
}
const scope = (q) => (q.agentIds?.length === 1 ? { agentId: q.agentIds[0] } : {})
const loaRel = relevance((q) => rstore.searchSync(q.query, { limit: 10, ...scope(q) }).hits.map((h) => labelsOf.get(h.id) ?? []))
const ftsRel = relevance((q) => rfts.search(q.query, q.agentIds?.length === 1 ? q.agentIds[0] : undefined, 10))
rstore.close()
rfts.close()

const refusals = [...refusedBy].map(([why, n]) => `${n} ${why}`).join(', ')
say(`## Relevance: bench/recall (${labelledQueries.length} queries over ${labelled.length} memories${refused ? `; ${refused} not stored again by loa: ${refusals} (a duplicate answers for its twin)` : ''})`)
say()
say('| engine | recall@5 | MRR (top 10) |')
say('|---|---|---|')
say(`| loa | ${(loaRel.recall * 100).toFixed(1)}% | ${loaRel.mrr.toFixed(3)} |`)
say(`| SQLite FTS5 bm25() | ${(ftsRel.recall * 100).toFixed(1)}% | ${ftsRel.mrr.toFixed(3)} |`)
say()
say('| category | queries | loa recall@5 | FTS5 recall@5 |')
say('|---|---|---|---|')
for (const [category, c] of loaRel.byCategory) {
  const f = ftsRel.byCategory.get(category)
  say(`| ${category} | ${c.n} | ${((c.hit / c.n) * 100).toFixed(0)}% | ${((f.hit / f.n) * 100).toFixed(0)}% |`)
}

fs.rmSync(ws, { recursive: true, force: true })
fs.rmSync(rws, { recursive: true, force: true })
fs.rmSync(ftsDir, { recursive: true, force: true })
writeReport('search', lines.join('\n') + '\n')
