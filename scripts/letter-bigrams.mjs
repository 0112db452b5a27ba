// Builds the letter-bigram table of `src/redact/letters.rs` and reports how the measure built on it
// separates random letters from words. Run: `node scripts/letter-bigrams.mjs [--write]`.
//
// Tuning set: the words of the project's own prose (docs/*.md) and seed documents
// (testdata/seeds/), the project's licence. Check set, never used to build the table or pick the
// threshold: the letters-only runs of js-yaml (testdata/corpus/ordinary/js-yaml.umd.min.js, MIT),
// its words joined four at a time (all lowercase and in camel case), and random values of another
// seed. Random values come from a fixed-seed generator.
import fs from 'node:fs'
import path from 'node:path'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const read = (p) => fs.readFileSync(path.join(root, p), 'utf8')
const walk = (d) =>
  fs.readdirSync(path.join(root, d), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)],
  )

const tuneText = [...walk('docs'), ...walk('testdata/seeds')]
  .filter((f) => /\.(md|txt|ya?ml|json|toml)$/.test(f) || !path.extname(f))
  .map(read)
  .join('\n')

// Letter bigram counts over words (lowercased; a bigram never spans two words).
const counts = new Map()
let total = 0
for (const w of tuneText.toLowerCase().match(/[a-z]{2,}/g)) {
  for (let i = 0; i + 1 < w.length; i++) {
    const k = w.slice(i, i + 2)
    counts.set(k, (counts.get(k) || 0) + 1)
    total++
  }
}
// A bigram is common when it makes up at least 1 in COMMON_PER of the text's bigrams.
const COMMON_PER = Number(process.env.COMMON_PER || 10000)
const THRESHOLD = Number(process.env.THRESHOLD || 0.2)
const common = new Set([...counts].filter(([, c]) => c * COMMON_PER >= total).map(([k]) => k))

// The docs change over time, so the table built from them now may differ by a pair or two from the
// one that ships (built at commit 331d492): the figures below are those of the shipped table in
// src/redact/letters.rs, unless --write asks for a new one.
const built = []
for (let a = 0; a < 26; a++) {
  let mask = 0
  for (let b = 0; b < 26; b++) {
    if (common.has(String.fromCharCode(97 + a, 97 + b))) mask |= 1 << b
  }
  built.push(mask >>> 0)
}
const shipped = read('src/redact/letters.rs').match(/COMMON_PAIRS: \[u32; 26\] = \[([^\]]*)\]/)[1].match(/0x[0-9a-f]+/g).map(Number)
const rows = process.argv.includes('--write') ? built : shipped

// The measure (as in letters.rs): a value is random when more than THRESHOLD of its judged letter
// pairs are rare, with at least 10 judged; in camel case (a capital at most every fourth letter)
// the pair across a hump is not judged; a run of the alphabet (`abcdef...`) is no random value.
const isRandom = (v) => {
  const camel = (v.match(/[A-Z]/g) || []).length * 4 <= v.length
  let rare = 0, judged = 0, steps = 0
  for (let i = 0; i + 1 < v.length; i++) {
    const a = v[i].toLowerCase().charCodeAt(0) - 97, b = v[i + 1].toLowerCase().charCodeAt(0) - 97
    if (b === a + 1) steps++
    if (camel && /[a-z]/.test(v[i]) && /[A-Z]/.test(v[i + 1])) continue
    judged++
    if (!((rows[a] >>> b) & 1)) rare++
  }
  return steps * 2 < v.length - 1 && rare > THRESHOLD * judged && judged >= 10
}

let seed = 0
const rnd = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648
}
const gen = (cs, n) => Array.from({ length: n }, () => cs[Math.floor(rnd() * cs.length)]).join('')
const L = 'abcdefghijklmnopqrstuvwxyz'
const randoms = (s) => {
  seed = s
  const out = []
  for (const [cs, n] of [[L, 16], [L, 20], [L, 32], [L + L.toUpperCase(), 16], [L + L.toUpperCase(), 20], [L + L.toUpperCase(), 40]]) {
    for (let i = 0; i < 2000; i++) out.push(gen(cs, n))
  }
  return out
}
// Words: letters-only runs of 16+ letters (what the checks see), and joined runs of words.
const wordsOf = (text) => [...new Set(text.match(/[A-Za-z]{16,}/g) || [])]
const joined = (text) => {
  const ws = (text.toLowerCase().match(/[a-z]{3,}/g) || [])
  const out = []
  for (let i = 0; i + 3 < ws.length; i += 3) {
    const j = ws.slice(i, i + 4).join('')
    if (j.length >= 16) out.push(j, ws[i] + ws.slice(i + 1, i + 4).map((w) => w[0].toUpperCase() + w.slice(1)).join(''))
  }
  return out
}
const jsYaml = read('testdata/corpus/ordinary/js-yaml.umd.min.js')
const sets = {
  tune: { words: [...wordsOf(tuneText), ...joined(tuneText)], random: randoms(1) },
  check: { words: [...wordsOf(jsYaml), ...joined(jsYaml)], random: randoms(7) },
}
for (const [name, { words, random }] of Object.entries(sets)) {
  const fp = words.filter(isRandom)
  const miss = random.filter((w) => !isRandom(w))
  console.log(
    `${name}: words ${words.length}, taken for random ${fp.length} (${(fp.length / words.length).toFixed(4)}); random ${random.length}, taken for words ${miss.length} (${(miss.length / random.length).toFixed(4)})`,
  )
  const byLen = {}; for (const w of miss) byLen[w.length + (w === w.toLowerCase() ? "l" : "m")] = (byLen[w.length + (w === w.toLowerCase() ? "l" : "m")] || 0) + 1; console.log("  misses per shape (of 2000):", JSON.stringify(byLen))
  if (process.env.VERBOSE) console.log(' fp:', fp.slice(0, 30).join(' '), '\n miss:', miss.slice(0, 10).join(' '))
}
console.log(`common pairs: ${rows.reduce((n, r) => n + r.toString(2).split('1').length - 1, 0)} of 676 (${process.argv.includes('--write') ? `built now: 1 in ${COMMON_PER} of ${total} pairs` : 'shipped table'})`)
if (process.argv.includes('--write')) console.log(rows.map((r) => `0x${r.toString(16).padStart(7, '0')}`).join(', '))
