// loadConfig from JavaScript: defaults, both spellings, warnings, E_CONFIG_INVALID with the key.
import test from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'
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

test('unknown keys are warnings with their dotted path, in the order of the file', () => {
  const { warnings } = parseConfig('colour: blue\nwal:\n  sync: none\n  compresion: true\nmemory:\n  quality_gates:\n    min_confidance: 0.4\n')
  assert.deepEqual(warnings, [
    'unknown key `colour` ignored',
    'unknown key `wal.compresion` ignored',
    'unknown key `memory.quality_gates.min_confidance` ignored',
  ])
})

test('an error names the key, its line and the value only when it is short and plain', () => {
  assert.throws(
    () => parseConfig('# a comment\nwal:\n  dir: .loa/wal\n  sync: sometimes\n'),
    (err) => err.code === 'E_CONFIG_INVALID' && err.key === 'wal.sync' && /line 4/.test(err.message) && err.message.includes('sometimes'),
  )
  assert.throws(
    () => parseConfig("context_editing:\n  clear_targets: [stale_tool_results, 'everything']\n"),
    (err) => err.key === 'context_editing.clear_targets[1]' && /line 2/.test(err.message),
  )
  // A value read under a second spelling is named by the spelling the file uses.
  assert.throws(() => parseConfig('grounding_enforcement: lax\n'), (err) => err.key === 'grounding_enforcement')
  // A token pasted where a path belongs is never echoed (built at run time: no token literal here).
  const token = `gh${'p'}_${'a1B2'.repeat(9)}`
  for (const yaml of [`wal:\n  dir: /${token}\n`, `signing:\n  keys_dir: ../${token}\n`, `wal:\n  sync: ${token}\n`]) {
    assert.throws(
      () => parseConfig(yaml),
      (err) => err.code === 'E_CONFIG_INVALID' && !err.message.includes(token) && !err.message.includes('a1B2'),
      yaml,
    )
  }
})

test('the file is read without following a symlink, bounded in size', (t) => {
  const dir = tempDir(t)
  const outside = join(tempDir(t), 'elsewhere.yaml')
  writeFileSync(outside, 'wal:\n  sync: batch\n')
  symlinkSync(outside, join(dir, '.loa.config.yaml'))
  assert.throws(() => loadConfig(dir), (err) => isLoaError(err) && err.code === 'E_NOT_REGULAR_FILE')

  const asDir = tempDir(t)
  mkdirSync(join(asDir, '.loa.config.yaml'))
  assert.throws(() => loadConfig(asDir), (err) => err.code === 'E_NOT_REGULAR_FILE')

  const fifo = tempDir(t)
  execFileSync('mkfifo', [join(fifo, '.loa.config.yaml')])
  assert.throws(() => loadConfig(fifo), (err) => err.code === 'E_NOT_REGULAR_FILE')

  const big = tempDir(t)
  writeFileSync(join(big, '.loa.config.yaml'), '#'.repeat(1024 * 1024) + '\nwal:\n  sync: batch\n')
  assert.throws(() => loadConfig(big), (err) => err.code === 'E_TOO_LARGE')
})

test('YAML aliases cannot blow a small file up: expansion is bounded before any value is built', () => {
  const refused = (err) => err.code === 'E_CONFIG_INVALID' && err.key === '<yaml>' && /aliases/.test(err.message)
  // Nested references: 10^9 nodes once expanded.
  let nested = 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n'
  for (let i = 1; i < 10; i++) nested += `a${i}: &a${i} [${Array(10).fill(`*a${i - 1}`).join(', ')}]\n`
  assert.throws(() => parseConfig(nested), refused)
  // One large anchor referenced many times: quadratic in the size of the file (a 1 MiB file
  // would expand to tens of billions of nodes).
  const big = `big: &big [${Array(2000).fill('y').join(', ')}]\nrefs: [${Array(2000).fill('*big').join(', ')}]\n`
  assert.throws(() => parseConfig(big), refused)
  // Modest reuse of an anchor (merge keys) is fine.
  assert.equal(parseConfig('base: &b\n  sync: batch\nwal:\n  <<: *b\n').config.wal.sync, 'batch')
})

test('deep nesting is refused as soon as it is met, not after the whole file is parsed', (t) => {
  // 1 MiB (the largest config) of `[[[[...]]]]` or `{a: {a: ...}}`: the YAML parser's time grows
  // with size times depth; read unbounded, such a file took minutes.
  const deep = (open, close) => {
    const n = Math.floor((1024 * 1024 - 64) / (open.length + close.length))
    return `wal:\n  sync: ${open.repeat(n)}1${close.repeat(n)}\n`
  }
  const refused = (err) =>
    err.code === 'E_CONFIG_INVALID' && err.key === '<yaml>' && /nested deeper than 32 levels \(line 2\)/.test(err.message)
  for (const [open, close] of [['[', ']'], ['{a: ', '}'], ['["]", ', ']']]) {
    const dir = tempDir(t)
    writeFileSync(join(dir, '.loa.config.yaml'), deep(open, close))
    assert.throws(() => loadConfig(dir), refused, open)
  }
  // Block nesting counts as well.
  let block = ''
  for (let i = 0; i < 40; i++) block += `${'  '.repeat(i)}k${i}:\n`
  assert.throws(() => parseConfig(block), (err) => err.code === 'E_CONFIG_INVALID' && /nested deeper than 32 levels \(line 33\)/.test(err.message))
  // Brackets inside strings and comments are not nesting.
  const quoted = `wal:\n  dir: "${'['.repeat(100)}" # ${'{'.repeat(100)}\n`
  assert.equal(parseConfig(quoted).config.wal.dir, '['.repeat(100))
})

test('signing.keysDir says where the key ring lives', () => {
  assert.equal(parseConfig('').config.signing.keysDir, '.loa/keys')
  assert.equal(parseConfig('signing:\n  keys_dir: ./secrets/ring/\n').config.signing.keysDir, 'secrets/ring')
})
