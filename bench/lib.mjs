// Shared by the *.bench.mjs files: where reports go.
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
