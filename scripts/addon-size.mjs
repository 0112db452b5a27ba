#!/usr/bin/env node
// `node scripts/addon-size.mjs ADDON...`: fails (exit 1) when a release addon is larger than the
// size goal, 15,000,000 bytes (decimal MB, as npm shows package sizes), e.g.
// `node scripts/addon-size.mjs loa-core.linux-x64-gnu.node` after `npm run build`.
// `scripts/build-release.mjs` runs the same check on the addon it builds, so a release cannot ship
// one over the goal. Not part of `npm test`, which builds no release addon; and the addon in the
// root may be a debug build (`npm run build:debug` leaves it under the same name, many times
// larger), so the files to check are always named.
import { statSync } from 'node:fs'
import { relative } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The size goal of a release addon, in bytes (docs/releasing.md). */
export const ADDON_SIZE_LIMIT = 15_000_000

/** `{ path, bytes, ok }` for one addon file. */
export function checkAddonSize(path, limit = ADDON_SIZE_LIMIT) {
  const bytes = statSync(path).size
  return { path, bytes, limit, ok: bytes <= limit }
}

/** One line saying how the addon stands against the goal. */
export function describe({ path, bytes, limit, ok }) {
  const mb = (n) => (n / 1e6).toFixed(2)
  const verdict = ok ? `${mb(limit - bytes)} MB under` : `${mb(bytes - limit)} MB OVER`
  return `${path}: ${mb(bytes)} MB (${bytes} bytes), limit ${mb(limit)} MB: ${verdict}`
}

function main() {
  const files = process.argv.slice(2)
  if (files.length === 0) {
    process.stderr.write('usage: node scripts/addon-size.mjs ADDON... (a release build, e.g. loa-core.linux-x64-gnu.node after npm run build)\n')
    process.exit(2)
  }
  let failed = false
  for (const file of files) {
    const result = checkAddonSize(file)
    const shown = relative(process.cwd(), file)
    process.stdout.write(describe({ ...result, path: shown.startsWith('..') ? file : shown }) + '\n')
    failed ||= !result.ok
  }
  process.exit(failed ? 1 : 0)
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main()
