// Ledger synthesis benchmark: event files -> current.md for 1,000, 10,000 and 100,000 events
// (target: 10,000 in under 1 s, growing linearly), and the hostile YAML shapes of the largest
// event allowed (each must take time proportional to its size).
//
//   node bench/synth.bench.mjs          full run: 1k / 10k / 100k events, 5 / 5 / 3 rounds
//   node bench/synth.bench.mjs --quick  smoke run: 1k / 10k, 1 round
//
// Event files are made here in the documented format (docs/synthesis.md), written without fsync:
// what is measured is synthesis (list, bounded reads, decode, merge, render, atomic write of
// current.md), with the files in the page cache. Each round removes current.md first so that it
// is written every time.
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'

import { writeReport } from './lib.mjs'

const require = createRequire(import.meta.url)
const core = require('../index.js')

const QUICK = process.argv.includes('--quick')
const SIZES = QUICK ? [1000, 10000] : [1000, 10000, 100000]
const rounds = (n) => (QUICK ? 1 : n >= 100000 ? 3 : 5)
const now = () => performance.now()
const fmt = (x, digits = 0) => x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

const AGENTS = ['toast', 'waffle', 'crisp', 'bagel', 'scone', 'pretzel', 'muffin', 'crumpet']

/** The i-th event: about 600 bytes, items drawn from pools so that sets deduplicate. */
function eventText(i) {
  const agent = AGENTS[i % AGENTS.length]
  const ts = new Date(Date.UTC(2026, 0, 1) + i * 7919).toISOString()
  return [
    '---',
    'v: 1',
    `ts: ${ts}`,
    `agent: ${agent}`,
    `branch: feat/work-${i % 37}`,
    'type: session_end',
    'reason: clear',
    '---',
    '',
    `now: Working on task ${i % 101} of the migration plan, step ${i}`,
    'this_session:',
    `- Ported module ${i % 997} to the new storage layer`,
    `- Reviewed pull request ${i % 311}`,
    `- Ran the integration suite for shard ${i % 17}`,
    'decisions:',
    `  storage_${i % 53}: Use the write-ahead log for shard ${i % 17} (event ${i})`,
    `  retry_${i % 7}: Exponential backoff, ${i % 5 + 2} attempts`,
    'checkpoints:',
    `- phase: ${i % 12}`,
    `  status: step-${i}`,
    'open_questions:',
    `- Should shard ${i % 29} move before the freeze?`,
    '',
  ].join('\n')
}

function makeEvents(dir, n) {
  const events = path.join(dir, 'events')
  fs.mkdirSync(events, { recursive: true })
  for (let i = 0; i < n; i++) {
    const agent = AGENTS[i % AGENTS.length]
    const ts = new Date(Date.UTC(2026, 0, 1) + i * 7919).toISOString().replace(/[-:.]/g, '')
    fs.writeFileSync(path.join(events, `${ts}_${agent}.md`), eventText(i))
  }
}

function timeSynth(dir, n) {
  const times = []
  let report
  for (let r = 0; r < rounds(n); r++) {
    fs.rmSync(path.join(dir, 'current.md'), { force: true })
    const t0 = now()
    report = core.synthesizeLedgerSync(dir)
    times.push(now() - t0)
  }
  if (report.eventCount !== n || report.skipped.length) throw new Error(`expected ${n} events, got ${report.eventCount} (${report.skipped.length} skipped)`)
  return { ms: median(times), bytes: Buffer.byteLength(report.text) }
}

/** The largest event allowed in each shape a YAML parser may find hard. */
function hostileShapes() {
  const max = 256 * 1024 - 200
  const head = '---\nts: 2026-01-10T10:00:00Z\nagent: a\ntype: x\n---\n'
  let nested = 'now:\n'
  for (let d = 0; d < 700; d++) nested += `${' '.repeat(d)}- \n`
  return [
    ['flow nesting 32 deep, then 128k items', `now: ${'['.repeat(32)}${'a,'.repeat(max / 2 - 32)}`],
    ['flow nesting past the bound (refused)', `now: ${'['.repeat(max)}`],
    ['256 KiB of list items', `this_session:\n${'- x\n'.repeat(max / 4)}`],
    ['alias fan-out', `this_session: &a [x]\nopen_questions: [${'*a,'.repeat(max / 3)}]`],
    ['escapes in one string', `now: "${'\\u0041'.repeat(max / 6)}"`],
    ['block nesting 700 deep', nested],
  ].map(([name, body]) => [name, head + body + '\n'])
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'loa-bench-synth-'))
const rows = []
try {
  for (const n of SIZES) {
    const dir = path.join(tmp, `n${n}`)
    makeEvents(dir, n)
    const { ms, bytes } = timeSynth(dir, n)
    rows.push({ n, ms, perEvent: (ms * 1000) / n, bytes })
    console.log(`${fmt(n)} events: ${fmt(ms, 1)} ms (${fmt((ms * 1000) / n, 1)} µs/event), current.md ${fmt(bytes)} bytes`)
  }
  const hostile = []
  for (const [name, text] of hostileShapes()) {
    const dir = path.join(tmp, `hostile-${hostile.length}`)
    fs.mkdirSync(path.join(dir, 'events'), { recursive: true })
    fs.writeFileSync(path.join(dir, 'events', 'e.md'), text)
    const times = []
    for (let r = 0; r < (QUICK ? 1 : 3); r++) {
      fs.rmSync(path.join(dir, 'current.md'), { force: true })
      const t0 = now()
      core.synthesizeLedgerSync(dir)
      times.push(now() - t0)
    }
    hostile.push({ name, ms: median(times) })
    console.log(`hostile: ${name}: ${fmt(median(times), 1)} ms`)
  }
  const base = rows[0]
  const report = [
    '# Ledger synthesis',
    '',
    `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${QUICK ? 'quick run' : 'full run'}; the build in index.js as loaded (use a release build: npm run build).`,
    '',
    '| events | synthesis (median) | per event | vs 1k per event | current.md |',
    '|---:|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${fmt(r.n)} | ${fmt(r.ms, 1)} ms | ${fmt(r.perEvent, 1)} µs | ${fmt(r.perEvent / base.perEvent, 2)}x | ${fmt(r.bytes)} B |`),
    '',
    'Target: 10,000 events in under 1 s, per-event time flat (linear growth).',
    '',
    '| hostile event (256 KiB) | synthesis |',
    '|---|---:|',
    ...hostile.map((h) => `| ${h.name} | ${fmt(h.ms, 1)} ms |`),
    '',
  ].join('\n')
  writeReport('synth', report)
  const ten = rows.find((r) => r.n === 10000)
  if (ten && ten.ms >= 1000) {
    console.error(`10,000 events took ${fmt(ten.ms)} ms: over the 1 s target`)
    process.exitCode = 1
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true })
}
