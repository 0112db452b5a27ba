// `npm run bench`: runs every bench/*.bench.mjs in turn (one concern each), passing the
// arguments through (`--quick` for a smoke run). Each prints its table and writes
// bench/results/<name>.md. Sequential on purpose: benchmarks sharing two cores would measure
// each other.
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const only = process.argv.slice(2).filter((a) => !a.startsWith('--'))
const flags = process.argv.slice(2).filter((a) => a.startsWith('--'))
const benches = readdirSync(here)
  .filter((f) => f.endsWith('.bench.mjs'))
  .filter((f) => only.length === 0 || only.some((name) => f.startsWith(name)))
  .sort()
let failed = 0
for (const file of benches) {
  console.log(`\n=== ${file} ===`)
  const { status } = spawnSync(process.execPath, [join(here, file), ...flags], { stdio: 'inherit' })
  if (status !== 0) failed++
}
process.exitCode = failed ? 1 : 0
