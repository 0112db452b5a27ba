// `npm start` (loa demo): the main job end to end on a fresh workspace.
import test from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir, runCli } from './helpers.mjs'

test('loa demo captures, rejects, consolidates, builds context, signs and detects tampering', async (t) => {
  const workspace = tempDir(t)
  const run = await runCli(['demo', '--workspace', workspace])
  assert.equal(run.code, 0, run.stderr)
  const out = run.stdout
  assert.match(out, /rejected {2}"ok thanks": content/)
  assert.match(out, /died by SIGKILL after \d+ acknowledged appends; reopened: 0 lost/)
  assert.match(out, /consolidating again changes nothing: NOTES\.md unchanged/)
  assert.match(out, /\d+ tokens \(exact, o200k_base\) of 400/)
  assert.match(out, /none of the planted personal data or secrets is anywhere in the grimoire/)
  assert.ok(!/dana\.whitfield@example\.com|7946 0958|DEMO4c0ffee/.test(out), 'the demo never prints a planted value')
  assert.match(out, /verify: OK/)
  assert.match(out, /detected: modified NOTES\.md/)
  assert.ok(existsSync(join(workspace, 'grimoires', 'loa', 'NOTES.md')), 'the workspace is left on disk')
  assert.match(readFileSync(join(workspace, 'grimoires', 'loa', 'NOTES.md'), 'utf8'), /nightly backup/)
})
