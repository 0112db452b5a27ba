// Two builds of the addon timed side by side in one process on the benchmark's agent-message case
// (256 messages of 4 KiB, one `redact` call each, one thread): each round times 5 passes of each,
// in CPU time, the order alternating; the median per-round ratio is the speed-up. On a shared
// machine this ratio holds still where each build's own MB/s does not. redact-pii (from
// bench/node_modules) is timed in each round too, for the ratio the target is set on.
//
//   LOA_BENCH_DUMP=/tmp/text.txt node bench/redact.bench.mjs   # once: the benchmark text
//   node bench/redact-pair.mjs /tmp/text.txt old.node new.node  # ROUNDS=41 for more rounds
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { resolve } from 'node:path'

const [textFile, ...addons] = process.argv.slice(2)
if (!textFile || addons.length !== 2) {
  console.error('usage: node bench/redact-pair.mjs <benchmark text> <old.node> <new.node>')
  process.exit(2)
}
const mods = addons.map((f) => {
  const m = { exports: {} }
  process.dlopen(m, resolve(f))
  return m.exports
})
let pii = null
try {
  pii = new (createRequire(import.meta.url)('redact-pii').SyncRedactor)()
} catch {
  // without redact-pii only the old/new ratio is reported
}
const text = readFileSync(textFile, 'utf8')
const messages = []
for (let i = 0; i < text.length && messages.length < 256; i += 4096) messages.push(text.slice(i, i + 4096))
const bytes = messages.reduce((a, c) => a + Buffer.byteLength(c), 0)
const cpu = () => {
  const c = process.cpuUsage()
  return (c.user + c.system) / 1000
}
const timed = (passes, fn) => {
  const t0 = cpu()
  for (let k = 0; k < passes; k++) for (const x of messages) fn(x)
  return (cpu() - t0) / passes
}
for (const m of mods) {
  m.redact(text.slice(0, 100_000))
  timed(1, m.redact)
}
if (pii) timed(1, (x) => pii.redact(x))
const rounds = []
for (let i = 0; i < Number(process.env.ROUNDS ?? 15); i++) {
  const r = [0, 0]
  for (const j of i % 2 ? [1, 0] : [0, 1]) r[j] = timed(5, mods[j].redact)
  rounds.push({ old: r[0], new: r[1], pii: pii ? timed(1, (x) => pii.redact(x)) : null })
}
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
const mbps = (ms) => (bytes / 1e6 / (ms / 1000)).toFixed(1)
for (const k of ['old', 'new']) {
  const ratio = pii ? `, ${med(rounds.map((r) => r.pii / r[k])).toFixed(1)}x redact-pii` : ''
  console.log(`${k}: ${mbps(med(rounds.map((r) => r[k])))} MB/s${ratio}`)
}
const sp = rounds.map((r) => r.old / r.new)
console.log(`new/old speed: median ${med(sp).toFixed(3)} (${Math.min(...sp).toFixed(3)} to ${Math.max(...sp).toFixed(3)}) over ${rounds.length} rounds`)
