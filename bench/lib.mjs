// Shared by the *.bench.mjs files and the corpus generators: where reports go, the PRNG.
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
