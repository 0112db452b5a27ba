// Differential check of two builds of the addon: the same store is searched by each with the
// search benchmark's 2,000 queries, and every answer (hits, order, scores, explain, terms) must
// be the same, bit for bit. Used to show that a speed change of the search leaves its results
// unchanged.
//
//   node bench/search-diff.mjs old.node new.node [store-dir]
//
// The store defaults to the cached 100,000 memories of bench/open.bench.mjs
// (bench/results/open-cache/loa-100000-*); it is copied to a temporary directory first, since
// opening a store writes to it. Each query is asked three ways: unscoped (limit 5, as the
// benchmarks ask), scoped to one agent (the query's own, else one in turn), and with filters
// (limit 20, kinds, since; scoped every other query). Prints "identical" or the first
// differing queries, and exits 1 on any difference.
//
// Recency is measured from the clock, so two answers are comparable only at the same instant:
// the script runs itself again with the wall clock stopped (a small preloaded library, built
// here with the system's C compiler, answers CLOCK_REALTIME and gettimeofday with a fixed instant; the
// monotonic clocks Node's timers use run on).
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { ACCEPT_ALL_GATES } from './lib.mjs'
import { memories as corpusMemories, queries as corpusQueries } from './search-corpus.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const [oldAddon, newAddon, storeArg] = process.argv.slice(2)
if (!oldAddon || !newAddon) {
  console.error('usage: node bench/search-diff.mjs <old.node> <new.node> [store-dir]')
  process.exit(2)
}
const SIZE = 100_000
const AGENTS = ['atlas', 'beacon', 'cobalt']

function cachedStore() {
  const cache = path.join(here, 'results', 'open-cache')
  const name = fs.existsSync(cache) && fs.readdirSync(cache).find((f) => f.startsWith(`loa-${SIZE}-`))
  if (!name || !fs.existsSync(path.join(cache, name, '.complete'))) {
    console.error(`no store of ${SIZE} memories in ${cache}: run node bench/open.bench.mjs --sizes ${SIZE} first, or name one`)
    process.exit(2)
  }
  return path.join(cache, name)
}

// 2026-06-02T00:00:00Z, the day after the corpus's newest memory.
const FROZEN_S = 1_780_358_400
const STOPPED_CLOCK = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <sys/time.h>
#include <time.h>
int gettimeofday(struct timeval *tv, void *tz) {
  (void)tz;
  if (tv != NULL) {
    tv->tv_sec = ${FROZEN_S};
    tv->tv_usec = 0;
  }
  return 0;
}
typedef int (*clock_fn)(clockid_t, struct timespec *);
int clock_gettime(clockid_t id, struct timespec *ts) {
  if (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE) {
    ts->tv_sec = ${FROZEN_S};
    ts->tv_nsec = 0;
    return 0;
  }
  static clock_fn next;
  if (!next) next = (clock_fn)dlsym(RTLD_NEXT, "clock_gettime");
  return next(id, ts);
}
`

const source = path.resolve(storeArg ?? cachedStore())
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'loa-search-diff-'))
if (process.env.LOA_SEARCH_DIFF_CHILD !== '1') {
  const c = path.join(scratch, 'stopped-clock.c')
  const lib = path.join(scratch, 'stopped-clock.so')
  fs.writeFileSync(c, STOPPED_CLOCK)
  const cc = spawnSync('cc', ['-shared', '-fPIC', '-O2', '-o', lib, c, '-ldl'], { stdio: 'inherit' })
  if (cc.status !== 0) {
    console.error('could not build the stopped clock (a C compiler `cc` is needed)')
    process.exit(2)
  }
  const run = spawnSync(process.execPath, process.argv.slice(1), {
    stdio: 'inherit',
    env: { ...process.env, LOA_SEARCH_DIFF_CHILD: '1', LD_PRELOAD: lib },
  })
  fs.rmSync(scratch, { recursive: true, force: true })
  process.exit(run.status ?? 1)
}
if (Date.now() !== FROZEN_S * 1000) {
  console.error('the wall clock is not stopped: the answers could not be compared')
  process.exit(2)
}
const dir = path.join(scratch, 'store')
fs.cpSync(source, dir, { recursive: true })

const queries = corpusQueries(corpusMemories(SIZE), 2_000)
const asks = []
queries.forEach((q, i) => {
  const agentId = q.agentIds?.[0] ?? AGENTS[i % AGENTS.length]
  asks.push([q.query, { limit: 5 }])
  asks.push([q.query, { limit: 5, agentId }])
  const since = `2026-0${1 + (i % 5)}-01T00:00:00Z`
  asks.push([q.query, { limit: 20, kinds: ['decision', 'learning', 'milestone'], since, ...(i % 2 ? { agentId } : {}) }])
})

const stores = [oldAddon, newAddon].map((file, i) => {
  const m = { exports: {} }
  process.dlopen(m, path.resolve(file))
  return m.exports.MemoryStore.open({ workspaceDir: dir, sessionId: `search-diff-${i}`, gates: ACCEPT_ALL_GATES })
})

// Numbers as their exact bits (JSON alone would not tell -0 from 0).
const exact = (_, v) => (typeof v === 'number' ? Buffer.from(new Float64Array([v]).buffer).toString('hex') : v)
const answer = (store, [query, options]) => {
  try {
    return JSON.stringify(store.searchSync(query, options), exact)
  } catch (e) {
    return JSON.stringify({ error: e.code ?? String(e) })
  }
}

const differ = []
let hits = 0
for (let i = 0; i < asks.length; i++) {
  const pair = stores.map((s) => answer(s, asks[i]))
  if (pair[0] !== pair[1]) differ.push(i)
  hits += JSON.parse(pair[0]).hits?.length ?? 0
}
for (const s of stores) s.close()
fs.rmSync(scratch, { recursive: true, force: true })

console.log(
  `${asks.length} searches (${queries.length} queries × unscoped, scoped, filtered) compared, ${hits} hits: ` +
    (differ.length ? `${differ.length} differ (first: ${differ.slice(0, 5).map((i) => JSON.stringify(asks[i])).join('; ')})` : 'identical'),
)
process.exit(differ.length ? 1 : 0)
