// A deterministic corpus of agent memories for the search benchmarks: memories of 10 to 80 words
// (chatter about services, people and tools, plus free text whose words follow Zipf's law over a
// vocabulary of about 30,000 words, as real text does), spread over three agents and a year, and
// queries of 1 to 6 words, most of them taken from some memory's words so they have answers.
// The same seed gives the same corpus, byte for byte, so loa's search and SQLite FTS5 are timed
// on the same texts and the same queries.
//
// As a script: node bench/search-corpus.mjs [count] [out-dir]   (default 100000 target/search-corpus)
// writes memories.jsonl and queries.jsonl there (the Rust speed report reads them).
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { rng } from './lib.mjs'

export const NOW = Date.UTC(2026, 5, 1)
const AGENTS = ['atlas', 'beacon', 'cobalt']
const COMMON = (
  'the of and to a in is that for it as was with be by on not this are or from at which but have an they you were ' +
  'we been has when who will more no if out so what up about into than them can only other new some could time these ' +
  'two may then do first any now such like our over even most made after also did many before must through back ' +
  'where much way well down should because each just those how too little good very make still own see work long get ' +
  'here between both being under never day same another know while last might great old year off come since against ' +
  'go came right used take three agent memory session budget token context learning summary decision ledger commit ' +
  'refactor reader writer segment crash recovery signature manifest review deploy release pipeline retry backoff ' +
  'timeout lock checksum consolidation workspace config threshold compaction artifact trajectory grounding citation ' +
  'handoff identity user prompt tool call result error warning test build branch merge issue ticket customer ' +
  'request response latency cache database query index schema migration service cluster region cost budget plan ' +
  'estimate deadline meeting standup review approve reject prefer always remember note fix bug patch version ' +
  'upgrade rollback incident alert page monitor metric dashboard log trace span queue worker job schedule cron'
).split(' ')
const SERVICES = (
  'billing checkout inventory payments onboarding analytics gateway scheduler notifications reporting auth catalog ' +
  'shipping pricing recommendations telemetry ingest exporter webhooks mailer importer renderer indexer crawler'
).split(' ')
const PEOPLE = 'Alice Bruno Chen Dana Emeka Farah Gustav Hana Ivan Jonas Keiko Lena Marco Nadia Omar Priya Quinn Rosa'.split(' ')
const TOOLS = 'Postgres Redis Kafka RabbitMQ ClickHouse Terraform Helm Grafana Prometheus Sentry Vite Jest Playwright pnpm Tokio gRPC'.split(' ')
const SYLLABLES = 'ka ro mi ten sul vor pa li dra ne qu ist zo bel man fir tro gen sha lo ver cap un dis ex pol'.split(' ')

function generator(seed) {
  const random = rng(seed)
  const int = (n) => Math.floor(random() * n)
  const pick = (list) => list[int(list.length)]
  // The rare tail: pseudo-words of 2 to 4 syllables, 30,000 of them, drawn by Zipf's law.
  const vocabulary = []
  const seen = new Set()
  while (vocabulary.length < 30_000) {
    const w = Array.from({ length: 2 + int(3) }, () => pick(SYLLABLES)).join('')
    if (!seen.has(w)) {
      seen.add(w)
      vocabulary.push(w)
    }
  }
  const zipf = () => vocabulary[Math.min(vocabulary.length - 1, Math.floor(Math.exp(random() * Math.log(vocabulary.length + 1)) - 1))]
  const word = () => (random() < 0.55 ? pick(COMMON) : zipf())
  const templates = [
    () => `${pick(PEOPLE)} asked about the ${pick(SERVICES)} dashboard during standup`,
    () => `deployed ${pick(SERVICES)} with ${pick(TOOLS)} ${1 + int(20)}.${int(10)} to the ${pick(['eu', 'us', 'ap'])} cluster`,
    () => `the ${pick(SERVICES)} tests were flaky again after the ${pick(TOOLS)} upgrade`,
    () => `${pick(PEOPLE)} prefers ${pick(TOOLS)} for ${pick(SERVICES)} and asked to remember it`,
    () => `decided to move ${pick(SERVICES)} jobs from ${pick(TOOLS)} to ${pick(TOOLS)}`,
    () => `latency of ${pick(SERVICES)} went up to ${10 + int(900)} ms at p99`,
    () => `${pick(PEOPLE)} reviewed the ${pick(SERVICES)} migration plan with ${pick(PEOPLE)}`,
    () => `incident ${1000 + int(9000)}: ${pick(SERVICES)} returned errors for ${1 + int(60)} minutes`,
  ]
  const sentence = () => {
    if (random() < 0.4) return pick(templates)()
    return Array.from({ length: 6 + int(10) }, word).join(' ')
  }
  const memory = (i) => {
    const target = 10 + int(71)
    let words = []
    while (words.length < target) words = words.concat(sentence().split(' '))
    words = words.slice(0, target)
    words[0] = words[0][0].toUpperCase() + words[0].slice(1)
    const kinds = ['interaction', 'interaction', 'interaction', 'interaction', 'decision', 'learning', 'error', 'milestone']
    return {
      id: `mem-${String(i).padStart(7, '0')}`,
      agentId: random() < 0.1 ? null : pick(AGENTS),
      kind: pick(kinds),
      instruction: random() < 0.05,
      timestamp: new Date(NOW - int(365 * 86_400) * 1000).toISOString(),
      text: words.join(' ') + '.',
    }
  }
  return { random, int, pick, word, memory }
}

/** `count` memories. */
export function memories(count, seed = 4242) {
  const g = generator(seed)
  return Array.from({ length: count }, (_, i) => g.memory(i))
}

/** `count` queries over `mems`: 1 to 6 words, three in four taken from one memory's words. */
export function queries(mems, count, seed = 99) {
  const g = generator(seed)
  const out = []
  for (let i = 0; i < count; i++) {
    const n = 1 + g.int(6)
    const from = mems[g.int(mems.length)].text.replace(/[.:,]/g, '').split(' ')
    const words = Array.from({ length: n }, () => (g.random() < 0.75 ? from[g.int(from.length)] : g.word()))
    out.push({ query: words.join(' '), agentIds: g.random() < 0.5 ? [g.pick(AGENTS)] : null })
  }
  return out
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const count = Number(process.argv[2] ?? 100_000)
  const out = resolve(process.argv[3] ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'target', 'search-corpus'))
  mkdirSync(out, { recursive: true })
  const mems = memories(count)
  writeFileSync(join(out, 'memories.jsonl'), mems.map((m) => JSON.stringify(m)).join('\n') + '\n')
  writeFileSync(join(out, 'queries.jsonl'), queries(mems, 2000).map((q) => JSON.stringify(q)).join('\n') + '\n')
  console.log(`${count} memories and 2000 queries written to ${out}`)
}
