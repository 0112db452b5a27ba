// Two builds of the addon timed side by side in one process on every text the redaction targets
// are set on, each cut into 4 KiB messages (one `redact` call each, one thread): the benchmark's
// generated text, the three corpora of real text (seed documents, GitHub API responses, server
// logs) and the random 40-character tokens of the adversarial inputs. `bench/redact-pair.mjs`
// does the same on the generated text alone. Each round times each text with both builds, the
// order alternating, in CPU time, with enough passes for about 8 MB (PAIR_BYTES); the median per-round ratio
// old/new time is the speed-up (on a shared machine it holds still where each build's MB/s does
// not).
//
//   LOA_BENCH_DUMP=/tmp/text.txt node bench/redact.bench.mjs --quick   # once: the benchmark text
//   node bench/redact-pair-corpora.mjs /tmp/text.txt old.node new.node  # ROUNDS=9 by default
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'

import { cutMessages, randomTokens, readCorpus } from './lib.mjs'

const [textFile, ...addons] = process.argv.slice(2)
if (!textFile || addons.length !== 2) {
  console.error('usage: node bench/redact-pair-corpora.mjs <benchmark text> <old.node> <new.node>')
  process.exit(2)
}
const mods = addons.map((f) => {
  const m = { exports: {} }
  process.dlopen(m, resolve(f))
  return m.exports
})

const cut4k = (s) => cutMessages(s, 4096)

const generated = cut4k(readFileSync(textFile, 'utf8')).slice(0, 256)
const sets = [
  ['generated text', generated],
  ['seed documents', cut4k(readCorpus('seeds/documents', '.txt'))],
  ['JSON (API responses)', cut4k(readCorpus('bench/json', '.json'))],
  ['server logs', cut4k(readCorpus('bench/logs', '.log'))],
  ['random tokens', cut4k(randomTokens(256 << 10))],
].map(([name, messages]) => {
  const bytes = messages.reduce((a, c) => a + Buffer.byteLength(c), 0)
  return { name, messages, bytes, passes: Math.max(1, Math.ceil(Number(process.env.PAIR_BYTES ?? 8e6) / bytes)), rounds: [] }
})
const only = process.env.ONLY
const cpu = () => {
  const c = process.cpuUsage()
  return (c.user + c.system) / 1000
}
const timed = (set, redact) => {
  const t0 = cpu()
  for (let k = 0; k < set.passes; k++) for (const x of set.messages) redact(x)
  return (cpu() - t0) / set.passes
}
for (const s of sets) for (const m of mods) timed(s, m.redact) // warm-up
for (let i = 0; i < Number(process.env.ROUNDS ?? 9); i++) {
  for (const s of sets) {
    if (only && !s.name.includes(only)) continue
    const r = [0, 0]
    for (const j of i % 2 ? [1, 0] : [0, 1]) r[j] = timed(s, mods[j].redact)
    s.rounds.push(r)
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
const mbps = (s, ms) => (s.bytes / 1e6 / (ms / 1000)).toFixed(1)
for (const s of sets) {
  if (!s.rounds.length) continue
  const sp = s.rounds.map(([o, n]) => o / n)
  console.log(
    `${s.name.padEnd(22)} old ${mbps(s, med(s.rounds.map((r) => r[0])))} MB/s, new ${mbps(s, med(s.rounds.map((r) => r[1])))} MB/s; ` +
      `new/old speed: median ${med(sp).toFixed(3)} (${Math.min(...sp).toFixed(3)} to ${Math.max(...sp).toFixed(3)}) over ${sp.length} rounds`,
  )
}
