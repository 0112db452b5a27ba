// Shared by the *.bench.mjs files and the corpus generators: where reports go, the PRNG, how
// figures are printed, and what the store and FTS5 benchmarks give both engines.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const resultsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results')

/** Writes `bench/results/<name>.md` (gitignored) and says where on stderr. */
export function writeReport(name, report) {
  fs.mkdirSync(resultsDir, { recursive: true })
  const file = path.join(resultsDir, `${name}.md`)
  fs.writeFileSync(file, report)
  console.error(`written to ${file}`)
}

/** mulberry32: a small deterministic PRNG (every generated corpus of the benchmarks uses it, so
 * that a seed names the same bytes everywhere). */
export function rng(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The repository's `testdata/<dir>` files ending in `ext`, in name order, as one text: the
 * redaction benchmarks' corpora of real text (testdata/bench/README.md). */
export function readCorpus(dir, ext) {
  const at = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'testdata', dir)
  return fs
    .readdirSync(at)
    .filter((f) => f.endsWith(ext))
    .sort()
    .map((f) => fs.readFileSync(path.join(at, f), 'utf8'))
    .join('')
}

/** `text` cut into messages of at most `size` UTF-16 units (a typical agent message: 4 KiB),
 * never between the two halves of a surrogate pair. */
export function cutMessages(text, size = 4096) {
  const out = []
  for (let i = 0; i < text.length; ) {
    let e = Math.min(i + size, text.length)
    if (e < text.length && /[\ud800-\udbff]/.test(text[e - 1])) e--
    out.push(text.slice(i, e))
    i = e
  }
  return out
}

/** The redaction benchmarks' worst adversarial input: random 40-character tokens of letters and
 * digits, each followed by `;`, to at least `size` characters (seed 11). */
export function randomTokens(size) {
  const rand = rng(11)
  const AL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
  let s = ''
  while (s.length < size) {
    for (let i = 0; i < 40; i++) s += AL[Math.floor(rand() * AL.length)]
    s += ';'
  }
  return s
}

export const now = () => performance.now()
/** The `q` quantile of an ascending array. */
export const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
export const ms = (x) => `${x < 1 ? x.toFixed(3) : x < 10 ? x.toFixed(2) : x.toFixed(1)} ms`
export const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`

/** Quality gates that accept every generated memory: the gates judge real conversation, not a
 * generated corpus. */
export const ACCEPT_ALL_GATES = { minConfidence: 0, speculationMinConfidence: 0, minContentLength: 1, repetitionMinUniqueRatio: 0 }

/** The capture entry of a memory of bench/search-corpus.mjs. */
export function captureEntry(m) {
  return {
    type: m.kind,
    content: m.text,
    confidence: 0.9,
    timestamp: m.timestamp,
    ...(m.agentId ? { agentId: m.agentId } : {}),
    ...(m.instruction ? { tags: ['instruction'] } : {}),
  }
}

/** Bytes of the files under `dir`. */
export function dirBytes(dir) {
  let total = 0
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name)
    total += entry.isDirectory() ? dirBytes(p) : fs.statSync(p).size
  }
  return total
}

/** The FTS5 query for plain words: each word a quoted string (no operators), any of them. */
export function ftsQuery(text) {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []
  return [...new Set(words)].map((w) => `"${w}"`).join(' OR ')
}

/** The FTS5 table of bench/search-corpus.mjs's memories, as both store benchmarks create it. */
export const CORPUS_FTS_TABLE = "CREATE VIRTUAL TABLE m USING fts5(text, agent UNINDEXED, id UNINDEXED, tokenize = 'porter unicode61')"
