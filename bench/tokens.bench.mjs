// Token-counting and context-building benchmark.
//
// 1. Counting a 10 MB mixed corpus (English, code, CJK, emoji, keys; bench/tokens-corpus.mjs)
//    with o200k_base: @loa/core's countTokens (one call per document) and countTokensBatch (one
//    call for all) against js-tiktoken (pure JS), tiktoken (WASM) and gpt-tokenizer (pure JS).
//    Every implementation must give the same count for every document, or the run fails.
//    Target: countTokensBatch at least 3x the fastest of the three. Also countTokensBatch with
//    cl100k_base, whose counts must equal tiktoken's (WASM) where it is installed. "first load" is
//    the first call's cost in a fresh process: @loa/core expands its table of that encoding then.
// 2. estimateTokens: throughput and its error per kind of text on the same corpus.
// 3. buildContext with 100,000 candidates (50,000 sessions, 50,000 learnings) and budget 2000.
//    Target: under 20 ms per call.
//
//   node bench/tokens.bench.mjs          full run (3 interleaved rounds; about a minute)
//   node bench/tokens.bench.mjs --quick  smoke run (1 MB corpus, 1 round)
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'

import { writeReport } from './lib.mjs'

import { candidates, corpus, KINDS } from './tokens-corpus.mjs'

const require = createRequire(import.meta.url)
const core = require('../index.js')

// Peers are dev dependencies; one that is not installed is left out (and said so).
const requirePeer = (name) => require(name)

const QUICK = process.argv.includes('--quick')
const CORPUS_BYTES = QUICK ? 1_000_000 : 10_000_000
const ROUNDS = QUICK ? 1 : 3
const CONTEXT_CANDIDATES = 100_000
const CONTEXT_CALLS = QUICK ? 5 : 50

const now = () => performance.now()
// ms of the first countTokens call of each encoding, in a fresh process (the table's expansion).
const loaLoad = { o200k_base: 0, cl100k_base: 0 }
const fmt = (x, digits = 0) => x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

function peers() {
  // Each peer's `load` requires and builds it, so that "first load" includes reading its
  // vocabulary; a peer that is not installed is left out.
  const all = [
    {
      name: 'js-tiktoken (JS)',
      pkg: 'js-tiktoken',
      load: () => {
        const { Tiktoken } = requirePeer('js-tiktoken/lite')
        const ranks = requirePeer('js-tiktoken/ranks/o200k_base')
        return new Tiktoken(ranks.default ?? ranks)
      },
      count: (enc, docs) => docs.map((d) => enc.encode(d, [], []).length),
    },
    {
      name: 'tiktoken (WASM)',
      pkg: 'tiktoken',
      load: () => requirePeer('tiktoken').get_encoding('o200k_base'),
      count: (enc, docs) => docs.map((d) => enc.encode_ordinary(d).length),
    },
    {
      name: 'gpt-tokenizer (JS)',
      pkg: 'gpt-tokenizer',
      load: () => requirePeer('gpt-tokenizer/encoding/o200k_base'),
      count: (enc, docs) => docs.map((d) => enc.countTokens(d)),
    },
  ]
  const installed = (p) => {
    try {
      require.resolve(p.pkg)
      return true
    } catch {
      return false
    }
  }
  return { peers: all.filter(installed), missing: all.filter((p) => !installed(p)).map((p) => p.pkg) }
}

function machine() {
  const cpus = os.cpus()
  return [
    `- date: ${new Date().toISOString()}`,
    `- cpu: ${cpus[0]?.model ?? 'unknown'}, ${cpus.length} cores`,
    `- node: ${process.version}, ${os.platform()} ${os.release()}`,
    `- mode: ${QUICK ? 'quick' : 'full'}; ${ROUNDS} interleaved round(s) per case, median reported`,
  ]
}

function countingBench() {
  const { docs, kinds, bytes } = corpus(CORPUS_BYTES)
  const mb = bytes / 1e6
  console.error(`corpus: ${docs.length} documents, ${fmt(mb, 1)} MB`)
  const { peers: others, missing } = peers()
  const warm = docs.slice(0, 50)
  const cl100k = { encoding: 'cl100k_base' }
  const cases = [
    { name: '@loa/core countTokensBatch', load: () => null, count: (_, d) => core.countTokensBatch(d) },
    { name: '@loa/core countTokens', load: () => null, count: (_, d) => d.map((x) => core.countTokens(x)) },
    ...others,
    {
      name: '@loa/core countTokensBatch (cl100k_base)',
      encoding: 'cl100k_base',
      load: () => null,
      count: (_, d) => core.countTokensBatch(d, cl100k),
    },
  ].map((c) => {
    const t = now()
    const enc = c.load()
    const init = c.name.startsWith('@loa') ? loaLoad[c.encoding ?? 'o200k_base'] : now() - t
    c.count(enc, warm)
    return { ...c, enc, init, times: [], counts: null }
  })
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of cases) {
      const t = now()
      const counts = c.count(c.enc, docs)
      c.times.push(now() - t)
      c.counts ??= counts
      console.error(`  round ${round + 1}: ${c.name}: ${fmt(c.times.at(-1))} ms`)
    }
  }
  // Identical counts, document by document.
  const reference = cases[0].counts
  const same = (c, expected, of) => {
    const bad = c.counts.findIndex((n, i) => n !== expected[i])
    if (bad !== -1) throw new Error(`${c.name} counts ${c.counts[bad]} tokens for document ${bad}, ${of} ${expected[bad]}: counts differ`)
  }
  for (const c of cases.filter((c) => !c.encoding)) same(c, reference, '@loa/core')
  const clCase = cases.find((c) => c.encoding === 'cl100k_base')
  let clChecked = false
  if (others.some((p) => p.pkg === 'tiktoken')) {
    const enc = requirePeer('tiktoken').get_encoding('cl100k_base')
    same(clCase, docs.map((d) => enc.encode_ordinary(d).length), 'tiktoken (WASM) cl100k_base')
    enc.free()
    clChecked = true
  }
  const tokens = reference.reduce((a, b) => a + b, 0)
  const rows = cases.map((c) => ({ name: c.name, ms: median(c.times), init: c.init, mbps: mb / (median(c.times) / 1000) }))

  // The estimate: speed and error per kind of text.
  const estTimes = []
  let estimates
  for (let round = 0; round < ROUNDS; round++) {
    const t = now()
    estimates = docs.map((d) => core.estimateTokens(d))
    estTimes.push(now() - t)
  }
  rows.push({ name: '@loa/core estimateTokens (not exact)', ms: median(estTimes), init: 0, mbps: mb / (median(estTimes) / 1000) })
  const errors = KINDS.map((kind) => {
    let exact = 0
    let est = 0
    let naive = 0
    let under = 0
    docs.forEach((d, i) => {
      if (kinds[i] !== kind) return
      exact += reference[i]
      est += estimates[i]
      naive += Math.ceil(Math.ceil(d.length / 4) * 1.3)
      if (estimates[i] < reference[i]) under++
    })
    return { kind, exact, est, naive, under }
  })
  return { rows, tokens, mb, docs: docs.length, errors, missing, clChecked }
}

function contextBench() {
  // Loaded the way a memory store loads them (JSON), so strings are flat as in real use.
  const { sessions, learnings } = JSON.parse(JSON.stringify(candidates(CONTEXT_CANDIDATES)))
  const input = { sessions, learnings, budget: 2000 }
  const first = core.buildContext(input)
  const again = core.buildContext(input)
  if (first.text !== again.text) throw new Error('buildContext is not deterministic')
  if (first.tokens > 2000 || core.countTokens(first.text) !== first.tokens) throw new Error('buildContext broke its budget')
  for (let i = 0; i < 5; i++) core.buildContext(input) // warm-up
  const times = []
  for (let i = 0; i < CONTEXT_CALLS; i++) {
    const t = now()
    core.buildContext(input)
    times.push(now() - t)
  }
  // The everyday case: 5 sessions and 3 learnings.
  const small = { sessions: sessions.slice(0, 5), learnings: learnings.slice(0, 3), budget: 2000 }
  for (let i = 0; i < 200; i++) core.buildContext(small)
  const smallTimes = []
  for (let i = 0; i < 2000; i++) {
    const t = now()
    core.buildContext(small)
    smallTimes.push(now() - t)
  }
  return {
    ms: median(times),
    p90: [...times].sort((a, b) => a - b)[Math.floor(times.length * 0.9)],
    included: first.included.length,
    dropped: first.dropped.length,
    tokens: first.tokens,
    smallUs: median(smallTimes) * 1000,
  }
}

function main() {
  // Each encoding is expanded on first use; measure that once, in a fresh process.
  for (const encoding of Object.keys(loaLoad)) {
    const started = now()
    core.countTokens('load the encoder', { encoding })
    loaLoad[encoding] = now() - started
  }
  // buildContext first, in a heap not yet filled by the JS tokenizers' vocabularies (their
  // garbage collections would otherwise land in its timings).
  const context = contextBench()
  const counting = countingBench()
  const peersOnly = counting.rows.filter((r) => !r.name.startsWith('@loa'))
  const fastest = peersOnly.reduce((a, b) => (a && a.mbps >= b.mbps ? a : b), null)
  const batch = counting.rows.find((r) => r.name === '@loa/core countTokensBatch')
  const single = counting.rows.find((r) => r.name === '@loa/core countTokens')

  const table = [
    '| implementation (o200k_base unless said) | time | MB/s | first load |',
    '|---|---:|---:|---:|',
    ...counting.rows.map((r) => `| ${r.name} | ${fmt(r.ms)} ms | ${fmt(r.mbps, 1)} | ${r.init ? fmt(r.init) + ' ms' : '-'} |`),
  ]
  const est = [
    '| kind of text | exact tokens | estimateTokens | over by | documents under | chars/4 x 1.3 (original) |',
    '|---|---:|---:|---:|---:|---:|',
    ...counting.errors.map(
      (e) =>
        `| ${e.kind} | ${fmt(e.exact)} | ${fmt(e.est)} | ${fmt((e.est / e.exact - 1) * 100, 1)} % | ${e.under} | ${fmt((e.naive / e.exact - 1) * 100, 1)} % |`,
    ),
  ]
  const ratios = []
  if (fastest) {
    const r = batch.mbps / fastest.mbps
    const s = single.mbps / fastest.mbps
    ratios.push(`- countTokensBatch / fastest peer (${fastest.name}) = ${r.toFixed(2)}x (target >= 3) ${r >= 3 ? 'ok' : 'MISSED'}`)
    ratios.push(`- countTokens, one call per document / fastest peer = ${s.toFixed(2)}x (informational)`)
  } else {
    ratios.push(`- no peer installed (${counting.missing.join(', ')}): the 3x target cannot be checked; run npm run bench, which installs them into bench/node_modules`)
  }
  if (counting.missing.length && fastest) ratios.push(`- not installed, not measured: ${counting.missing.join(', ')}`)
  ratios.push(
    `- buildContext, ${fmt(CONTEXT_CANDIDATES)} candidates, budget 2000: median ${fmt(context.ms, 2)} ms, p90 ${fmt(context.p90, 2)} ms (target < 20 ms) ${context.ms < 20 ? 'ok' : 'MISSED'}`,
  )
  const report = [
    '# @loa/core token benchmark',
    '',
    ...machine(),
    '',
    `## Counting: ${fmt(counting.mb, 1)} MB mixed corpus, ${fmt(counting.docs)} documents, ${fmt(counting.tokens)} tokens`,
    '',
    `Every implementation gave the same count for every document${counting.clChecked ? ' (cl100k_base: the same as tiktoken (WASM) with cl100k_base)' : ''}.`,
    '',
    ...table,
    '',
    '## estimateTokens error per kind of text (o200k_base)',
    '',
    ...est,
    '',
    `## buildContext`,
    '',
    `- ${fmt(CONTEXT_CANDIDATES)} candidates, budget 2000: median ${fmt(context.ms, 2)} ms per call (p90 ${fmt(context.p90, 2)} ms); ${context.included} included, ${fmt(context.dropped)} dropped, ${context.tokens} tokens`,
    `- 5 sessions + 3 learnings, budget 2000: median ${fmt(context.smallUs, 1)} µs per call`,
    '',
    '## Ratios',
    '',
    ...ratios,
    '',
  ].join('\n')
  console.log(report)
  writeReport('tokens', report)
}

// A benchmark, not a test: missed targets print MISSED but still exit 0 (differing counts fail).
main()
