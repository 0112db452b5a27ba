// Opening benchmark: what it costs to open a store of N memories and answer its first query,
// @loa/core's MemoryStore beside SQLite FTS5 (better-sqlite3) holding the same texts, at 1,000,
// 10,000 and 100,000 memories; then search latency at each size.
//
//   node bench/open.bench.mjs            1k, 10k, 100k (the 100k store is built once, then cached)
//   node bench/open.bench.mjs --quick    1k and 5k
//   --sizes 1000,20000                   other sizes
//   LOA_ADDON=/path/to/index.js          measure another build of the addon on the same stores
//
// Each figure comes from a fresh process (so its resident memory is the store's own): it loads
// the library and warms its code on an empty store or database, then opens the real one and
// runs one query (open, first query and the resident memory they added are reported), then
// 500 more (p50 / p99). Twice per size: the first open after the store was built, and the next.
//
// Building a store captures every memory through the real pipeline (redaction, gates, WAL,
// index; `wal.sync: none`) and consolidates: minutes at 100,000 on two cores. The built stores
// and FTS5 databases are kept in bench/results/open-cache/ (gitignored), keyed by the corpus
// generator's parameters and the package version; delete it after changing an on-disk format.
import { spawnSync } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { ACCEPT_ALL_GATES, CORPUS_FTS_TABLE, captureEntry, dirBytes, ftsQuery, mib, ms, now, quantile, writeReport } from './lib.mjs'
import { memories as corpusMemories, queries as corpusQueries } from './search-corpus.mjs'

const require = createRequire(import.meta.url)
const here = path.dirname(fileURLToPath(import.meta.url))
const ADDON = process.env.LOA_ADDON ?? path.join(here, '..', 'index.js')
const QUICK = process.argv.includes('--quick')
const sizesAt = process.argv.indexOf('--sizes')
const SIZES = sizesAt > 0 ? process.argv[sizesAt + 1].split(',').map(Number) : QUICK ? [1_000, 5_000] : [1_000, 10_000, 100_000]
const QUERIES = QUICK ? 200 : 500
const SEED = 4242
const QUERY_SEED = 99
const SESSION = 'bench-open'


function latencies(run, queries) {
  const times = []
  for (const q of queries) {
    const t = now()
    run(q)
    times.push(now() - t)
  }
  times.sort((a, b) => a - b)
  return { p50: quantile(times, 0.5), p99: quantile(times, 0.99) }
}

// ---------------------------------------------------------------------------------------------
// Children: one measurement each, in a process of its own.
// ---------------------------------------------------------------------------------------------
if (process.argv[2] === '--child') {
  const [, , , engine, target, queryFile] = process.argv
  const queries = JSON.parse(fs.readFileSync(queryFile, 'utf8'))
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'loa-bench-open-warm-'))
  let open
  let search
  if (engine === 'loa') {
    const { MemoryStore } = require(ADDON)
    open = (dir) => MemoryStore.open({ workspaceDir: dir, sessionId: SESSION, gates: ACCEPT_ALL_GATES })
    search = (store, q) => store.searchSync(q.query, { limit: 5, ...(q.agentIds ? { agentId: q.agentIds[0] } : {}) }).hits.length
  } else {
    const Database = require('better-sqlite3')
    open = (file) => {
      const db = new Database(file)
      const any = db.prepare('SELECT id FROM m WHERE m MATCH ? ORDER BY bm25(m) LIMIT 5')
      const scoped = db.prepare('SELECT id FROM m WHERE m MATCH ? AND (agent = ? OR agent IS NULL) ORDER BY bm25(m) LIMIT 5')
      return { db, any, scoped, close: () => db.close() }
    }
    search = (h, q) => {
      const match = ftsQuery(q.query)
      return match ? (q.agentIds ? h.scoped.all(match, q.agentIds[0]) : h.any.all(match)).length : 0
    }
  }
  // Warm the code paths on an empty store (database), so that what is measured next is the data's.
  if (engine === 'loa') {
    const warm = open(scratch)
    search(warm, queries[0])
    warm.close()
  } else {
    const file = path.join(scratch, 'warm.db')
    const Database = require('better-sqlite3')
    const db = new Database(file)
    db.exec(CORPUS_FTS_TABLE)
    db.close()
    const warm = open(file)
    search(warm, queries[0])
    warm.close()
  }
  globalThis.gc?.()
  const rss0 = process.memoryUsage().rss
  let t = now()
  const handle = open(target)
  const openMs = now() - t
  t = now()
  search(handle, queries[1])
  const firstMs = now() - t
  const rss1 = process.memoryUsage().rss
  const speed = latencies((q) => search(handle, q), queries.slice(2))
  const rss2 = process.memoryUsage().rss
  handle.close()
  fs.rmSync(scratch, { recursive: true, force: true })
  process.stdout.write(JSON.stringify({ openMs, firstMs, rssOpen: rss1 - rss0, rssQueries: rss2 - rss0, ...speed }))
  process.exit(0)
}

function child(engine, target, queryFile) {
  const out = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--child', engine, target, queryFile], {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  })
  if (out.status !== 0) throw new Error(`the ${engine} measuring process failed: ${out.stderr}`)
  return JSON.parse(out.stdout)
}

// ---------------------------------------------------------------------------------------------
// Stores and databases, built once per size and kept.
// ---------------------------------------------------------------------------------------------
const version = JSON.parse(fs.readFileSync(path.join(here, '..', 'package.json'), 'utf8')).version
const key = (n) =>
  crypto.createHash('sha256').update(JSON.stringify({ generator: 'search-corpus', seed: SEED, n, version, layout: 1 })).digest('hex').slice(0, 16)
const cacheDir = path.join(here, 'results', 'open-cache')

/** The store of the first `n` memories: from the cache, or captured and consolidated now. */
function store(n, mems) {
  const dir = path.join(cacheDir, `loa-${n}-${key(n)}`)
  if (fs.existsSync(path.join(dir, '.complete'))) return { dir, built: false }
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, '.loa.config.yaml'), 'wal:\n  sync: none\n')
  const { MemoryStore } = require(ADDON)
  const s = MemoryStore.open({ workspaceDir: dir, sessionId: 'bench-build', gates: ACCEPT_ALL_GATES })
  const t = now()
  for (let i = 0; i < n; i++) {
    const r = s.captureSync(captureEntry(mems[i]))
    if (!r.accepted && !r.gates.some((g) => g.name === 'duplicate' && !g.pass)) throw new Error(`memory ${i} was not accepted`)
    if (i % 5_000 === 4_999) s.consolidateSync()
  }
  s.consolidateSync()
  s.close()
  fs.writeFileSync(path.join(dir, '.loa.config.yaml'), 'wal:\n  sync: always\n')
  fs.writeFileSync(path.join(dir, '.complete'), '')
  console.error(`built the store of ${n.toLocaleString('en')} memories in ${((now() - t) / 1000).toFixed(1)} s`)
  return { dir, built: true }
}

function ftsDb(n, mems) {
  const file = path.join(cacheDir, `fts-${n}-${key(n)}.db`)
  if (fs.existsSync(file)) return file
  const Database = require('better-sqlite3')
  const tmp = `${file}.partial`
  fs.rmSync(tmp, { force: true })
  const db = new Database(tmp)
  db.exec(CORPUS_FTS_TABLE)
  const insert = db.prepare('INSERT INTO m (text, agent, id) VALUES (?, ?, ?)')
  db.transaction(() => {
    for (const x of mems.slice(0, n)) insert.run(x.text, x.agentId, x.id)
  })()
  db.close()
  fs.renameSync(tmp, file)
  return file
}

// ---------------------------------------------------------------------------------------------
// The run.
// ---------------------------------------------------------------------------------------------
fs.mkdirSync(cacheDir, { recursive: true })
const largest = Math.max(...SIZES)
const mems = corpusMemories(largest, SEED)
const lines = []
const say = (line = '') => {
  console.log(line)
  lines.push(line)
}
say(`# Opening a store: ${SIZES.map((n) => n.toLocaleString('en')).join(' / ')} memories${QUICK ? ' (quick)' : ''}`)
say()
say(`${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${os.platform()} ${os.release()}; addon ${path.relative(process.cwd(), ADDON) || ADDON}`)
say()
say('Open: `MemoryStore.open` (loa) or `new Database(file)` and its two statements prepared (FTS5); first query: one search right after. Resident: what the process gained over both (then after the other queries), measured in a fresh process after warming the code on an empty store. Each size twice: the first open after the store was built (or taken from the cache), and the next.')
say()
say('| memories | engine | on disk | open | first query | resident after first query | after all queries | p50 | p99 |')
say('|---:|---|---:|---:|---:|---:|---:|---:|---:|')
for (const n of SIZES) {
  const { dir } = store(n, mems)
  const db = ftsDb(n, mems)
  const queryFile = path.join(cacheDir, `queries-${n}-${key(n)}.json`)
  fs.writeFileSync(queryFile, JSON.stringify(corpusQueries(mems.slice(0, n), QUERIES + 2, QUERY_SEED)))
  const indexBytes = dirBytes(path.join(dir, 'grimoires', 'loa', 'search'))
  const rows = [
    ['loa (first open)', child('loa', dir, queryFile), indexBytes],
    ['loa (next open)', child('loa', dir, queryFile), indexBytes],
    ['FTS5 (first open)', child('fts', db, queryFile), fs.statSync(db).size],
    ['FTS5 (next open)', child('fts', db, queryFile), fs.statSync(db).size],
  ]
  for (const [engine, r, bytes] of rows) {
    say(`| ${n.toLocaleString('en')} | ${engine} | ${mib(bytes)} | ${ms(r.openMs)} | ${ms(r.firstMs)} | +${mib(r.rssOpen)} | +${mib(r.rssQueries)} | ${ms(r.p50)} | ${ms(r.p99)} |`)
  }
}
say()
say('loa "on disk" is the search index (`grimoires/loa/search/`); the memories themselves (record files, WAL) are not counted, as FTS5 holds only the index and the texts.')
writeReport(QUICK ? 'open-quick' : 'open', lines.join('\n') + '\n')
