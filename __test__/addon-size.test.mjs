// scripts/addon-size.mjs, the check that keeps the release addon within its size goal
// (15,000,000 bytes; docs/releasing.md), run as a child process on files of known sizes: the
// release addon itself is not built by the tests.
import test from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ADDON_SIZE_LIMIT } from '../scripts/addon-size.mjs'

const script = new URL('../scripts/addon-size.mjs', import.meta.url).pathname

// Not helpers.mjs's tempDir: that module loads the addon, which this test does not need.
function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), 'loa-addon-size-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

function sized(dir, name, bytes) {
  const path = join(dir, name)
  writeFileSync(path, '')
  truncateSync(path, bytes)
  return path
}

function check(...files) {
  return spawnSync(process.execPath, [script, ...files], { encoding: 'utf8' })
}

test('an addon at the goal passes, one byte over fails, and the line says by how much', (t) => {
  assert.equal(ADDON_SIZE_LIMIT, 15_000_000)
  const dir = tempDir(t)
  const at = sized(dir, 'at.node', 15_000_000)
  const over = sized(dir, 'over.node', 15_000_001)
  const small = sized(dir, 'small.node', 12_900_000)

  const ok = check(at, small)
  assert.equal(ok.status, 0, ok.stdout + ok.stderr)
  assert.match(ok.stdout, /at\.node: 15\.00 MB \(15000000 bytes\), limit 15\.00 MB: 0\.00 MB under/)
  assert.match(ok.stdout, /small\.node: 12\.90 MB \(12900000 bytes\), limit 15\.00 MB: 2\.10 MB under/)

  // One file over the goal fails the whole check, whichever position it has.
  const failed = check(small, over)
  assert.equal(failed.status, 1, failed.stdout + failed.stderr)
  assert.match(failed.stdout, /over\.node: 15\.00 MB \(15000001 bytes\), limit 15\.00 MB: 0\.00 MB OVER/)
})

test('without a file to check it says how to use it instead of passing', () => {
  const none = check()
  assert.equal(none.status, 2)
  assert.match(none.stderr, /usage: node scripts\/addon-size\.mjs ADDON/)
})
