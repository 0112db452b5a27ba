// Differential check of two builds of the addon: every input below is redacted by each, and the
// results (text, findings with fingerprints under a fixed key, blocked) are hashed per call. Used
// to show that a speed change leaves detection byte-identical.
//
//   LOA_BENCH_DUMP=/tmp/text.txt node bench/redact.bench.mjs --quick   # once: the benchmark text
//   node bench/redact-diff.mjs /tmp/text.txt old.node new.node         # "identical" or the first
//                                                                      # differing inputs
// (a full run of the benchmark dumps the 10 MiB text the recorded results used; --quick dumps 1 MiB).
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const [textFile, ...addons] = process.argv.slice(2)
if (!textFile || addons.length !== 2) {
  console.error('usage: node bench/redact-diff.mjs <benchmark text> <old.node> <new.node>')
  process.exit(2)
}
const { devCorpus } = await import(join(root, 'scripts', 'redact-devcorpus.mjs'))

const inputs = []
const text = readFileSync(textFile, 'utf8')
for (const size of [4096, 1500, 333]) for (let i = 0; i < 2_000_000 && i < text.length; i += size) inputs.push(text.slice(i, i + size))
for (let i = 0; i < text.length; i += 600_000) inputs.push(text.slice(i, i + 600_000)) // the split path
// The benchmark's corpora of real text (seed documents, API responses, logs), cut as the
// benchmark cuts them and at two other sizes, and each whole, repeated past the split size.
for (const [dir, ext] of [['seeds/documents', '.txt'], ['bench/json', '.json'], ['bench/logs', '.log']]) {
  const d = join(root, 'testdata', dir)
  const real = readdirSync(d)
    .filter((f) => f.endsWith(ext))
    .sort()
    .map((f) => readFileSync(join(d, f), 'utf8'))
    .join('')
  for (const size of [4096, 1500, 333]) for (let i = 0; i < real.length; i += size) inputs.push(real.slice(i, i + size))
  inputs.push(real.repeat(Math.ceil(700_000 / real.length)))
}
const corpus = process.env.LOA_CORPUS_DIR ?? join(root, 'testdata', 'corpus')
for (const f of ['gitleaks_rule_samples.dev.jsonl', 'presidio_recognizer_tests.jsonl'])
  for (const l of readFileSync(join(corpus, f), 'utf8').split('\n')) {
    if (!l.trim()) continue
    inputs.push(l) // the JSON line as text
    for (const v of Object.values(JSON.parse(l))) if (typeof v === 'string' && v.length > 3) inputs.push(v)
  }
for (const seed of [undefined, 1, 7, 23]) for (const r of devCorpus(seed)) inputs.push(r.text)
const fuzz = join(root, 'fuzz', 'corpus', 'redact')
for (const f of readdirSync(fuzz)) inputs.push(readFileSync(join(fuzz, f), 'latin1'))
let s = 12345
const rnd = () => {
  s = (s * 1103515245 + 12345) & 0x7fffffff
  return s / 0x80000000
}
const int = (n) => Math.floor(rnd() * n)
const base = inputs.slice()
// Random splices of the inputs above.
for (let k = 0; k < 30000; k++) {
  let x = ''
  for (let j = 0, n = 1 + int(4); j < n; j++) {
    const a = base[int(base.length)]
    const st = int(a.length)
    x += a.slice(st, st + 1 + int(200)) + [' ', '', '\n', '=', ':', '-'][int(6)]
  }
  inputs.push(x)
}
// Digit groups, separators and context words.
const words = ['card ', 'phone ', 'call ', 'nhs ', 'sin ', 'cpf ', 'cnpj ', 'aadhaar ', 'ssn ', 'version ', 'ni number ', 'tel: ', 'visa ', 'uid ', 'x', 'ext. ', 'AB', 'GB', 'DE', 'QQ', 'T', 'Z', 'ts=', 'req=', 'v', 'Chrome/', ' is ', 'key=']
const seps = [' ', '-', '.', '/', ':', '(', ')', '+', ',', '\n', '#', '$', '_']
for (let k = 0; k < 60000; k++) {
  let x = ''
  for (let j = 0, n = 1 + int(14); j < n; j++) {
    const r = rnd()
    if (r < 0.5) {
      const d = 1 + int(r < 0.1 ? 19 : 5)
      for (let i = 0; i < d; i++) x += int(10) === 0 && k % 2 ? '0' : String(int(10))
    } else if (r < 0.85) x += seps[int(seps.length)]
    else x += words[int(words.length)]
  }
  inputs.push(x)
}
// Hex and token characters.
const alpha = 'abcdefABCDEF0123456789_-+/=.xyzXYZ'
for (let k = 0; k < 20000; k++) {
  let x = words[int(words.length)]
  for (let i = 0, n = int(120); i < n; i++) x += alpha[int(alpha.length)]
  inputs.push(x)
}
// Non-ASCII characters inserted (UTF-16 offsets, characters as separators), and lone surrogates
// (read as U+FFFD by the binding, one UTF-16 unit each).
const uni = ['é', '日本', '😀', '\u00a0', 'ß', '\u2028', 'Ω', '𝒜', ' ', '-', ':', '@', '=', '\ud83d', '\ude00', '─'.repeat(40)]
for (let k = 0; k < 20000; k++) {
  const a = base[int(base.length)]
  const st = int(a.length)
  let x = a.slice(st, st + 1 + int(300))
  for (let i = 0, n = 1 + int(6); i < n; i++) {
    const p = int(x.length + 1)
    x = x.slice(0, p) + uni[int(uni.length)] + x.slice(p)
  }
  inputs.push(x)
}
// Repeated triggers, short and long.
for (const u of ['-----BEGIN ', 'curl -u ', 'Bearer ', 'key=', 'token: key ', 'eyJ-', 'glpat-', 'a://b@', ':x@y.', '1-', '1:', 'PuTTY-User-Key-File-2: ', '2024-11-23T14:35:22.456Z ', 'req=85913f7da8777e7c ', 'ts_ms=1700168357850 '])
  for (const n of [1, 2, 3, 7, 50, 1000]) inputs.push(u.repeat(n))

const KEY = Buffer.alloc(32, 7)
const digests = addons.map((file) => {
  const m = { exports: {} }
  process.dlopen(m, resolve(file))
  return inputs.map((x) => {
    const r = m.exports.redact(x, { key: KEY })
    return createHash('sha256').update(JSON.stringify([r.text, r.findings, r.blocked])).digest('hex')
  })
})
const differ = inputs.map((_, i) => i).filter((i) => digests[0][i] !== digests[1][i])
console.log(`${inputs.length} calls compared: ${differ.length ? `${differ.length} differ (first inputs: ${differ.slice(0, 10).join(', ')})` : 'identical'}`)
process.exit(differ.length ? 1 : 0)
