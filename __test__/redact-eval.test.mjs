// The redaction targets of `npm run eval:redact` hold: recall and false positives on each public
// rule set's own samples (gitleaks' dev split, its other rules' samples and the generated held-out
// set, trufflehog's detector tests, Presidio's recognizer tests, detect-secrets' negatives), on
// ordinary text and on libphonenumber's example numbers. A detector change that loses a provider
// or starts flagging ordinary text fails here, not only in a report nobody runs. (Figures are
// counts, never timings; failure messages name targets, never samples.)
import test from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { root, WATCHDOG_MS } from './helpers.mjs'

test('every target of eval:redact holds on the vendored public samples', () => {
  const r = spawnSync(process.execPath, [join(root, 'scripts', 'eval-redact.mjs'), '--json'], {
    encoding: 'utf8',
    maxBuffer: 256 << 20,
    timeout: WATCHDOG_MS,
  })
  assert.equal(r.error, undefined)
  const { targets } = JSON.parse(r.stdout)
  for (const name of ['restGitleaksRecall', 'restGitleaksFpRedacted', 'trufflehogHoldoutRecall', 'ordinaryTextFlagged']) {
    assert.ok(name in targets, `target ${name} is measured`)
  }
  const missed = Object.entries(targets)
    .filter(([, t]) => !t.ok)
    .map(([name, t]) => `${name} ${t.value} (goal ${t.target})`)
  assert.deepEqual(missed, [], 'targets missed')
  assert.equal(r.status, 0)
})
