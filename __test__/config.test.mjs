// loadConfig from JavaScript: defaults, both spellings, warnings, E_CONFIG_INVALID with the key.
import test from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { core, tempDir } from './helpers.mjs'

const { loadConfig, parseConfig, isLoaError } = core

test('a workspace without .loa.config.yaml gets every default', (t) => {
  const loaded = loadConfig(tempDir(t))
  assert.equal(loaded.source, null)
  assert.deepEqual(loaded.warnings, [])
  assert.equal(loaded.config.wal.lockTimeoutMs, 5000)
  assert.equal(loaded.config.wal.sync, 'always')
  assert.equal(loaded.config.context.tokenBudget, 2000)
  assert.equal(loaded.config.memory.qualityGates.minConfidence, 0.5)
})

test('nested spelling wins over the flat one, with a warning naming the other; unknown keys warn', (t) => {
  const dir = tempDir(t)
  writeFileSync(
    join(dir, '.loa.config.yaml'),
    'grounding_enforcement: warn\ngrounding:\n  enforcement: disabled\nwal:\n  sync: batch\nmystery_key: 1\n',
  )
  const loaded = loadConfig(dir)
  assert.equal(loaded.source, join(dir, '.loa.config.yaml'))
  assert.equal(loaded.config.grounding.enforcement, 'disabled')
  assert.equal(loaded.config.wal.sync, 'batch')
  assert.ok(loaded.warnings.some((w) => w.includes('grounding_enforcement')), loaded.warnings.join('; '))
  assert.ok(loaded.warnings.some((w) => w.includes('mystery_key')), loaded.warnings.join('; '))
})

test('an invalid value is E_CONFIG_INVALID naming the key', () => {
  for (const [yaml, key] of [
    ['wal:\n  sync: sometimes\n', 'wal.sync'],
    ['context:\n  token_budget: -5\n', 'context.token_budget'],
    ['wal: [1, 2]\n', 'wal'],
  ]) {
    assert.throws(
      () => parseConfig(yaml),
      (err) => isLoaError(err) && err.code === 'E_CONFIG_INVALID' && err.key === key && err.message.includes(key),
      yaml,
    )
  }
  assert.throws(() => parseConfig('wal: {sync: [unclosed'), (err) => err.code === 'E_CONFIG_INVALID')
})
