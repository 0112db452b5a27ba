// The six quality gates from JavaScript: each gate passing and failing, whole-word matching,
// instruction tagging and boost, every reason reported, thresholds and bad input.
import test from 'node:test'
import assert from 'node:assert/strict'
import { core } from './helpers.mjs'

const { evaluateGates, contentHash, isLoaError } = core
const NAMES = ['temporal', 'speculation', 'instruction', 'confidence', 'content', 'duplicate']
const gate = (result, name) => result.gates.find((g) => g.name === name)

test('all six gates run in order and every reason is reported, failing or not', () => {
  const clean = evaluateGates({ content: 'The release branch is cut every Tuesday', confidence: 0.8 })
  assert.deepEqual(clean.gates.map((g) => g.name), NAMES)
  assert.equal(clean.pass, true)
  assert.ok(clean.gates.every((g) => g.pass && g.reason.length > 0))

  const bad = evaluateGates(
    { content: 'ok maybe', confidence: 0.2, timestamp: '2020-01-01T00:00:00Z' },
    { maxAgeMs: 1000, knownHashes: [contentHash('OK   maybe.')] },
  )
  assert.deepEqual(bad.gates.map((g) => g.name), NAMES)
  assert.equal(bad.pass, false)
  assert.deepEqual(
    bad.gates.filter((g) => !g.pass).map((g) => g.name),
    ['temporal', 'speculation', 'confidence', 'content', 'duplicate'],
    'one failure does not stop the others',
  )
  assert.ok(bad.gates.every((g) => g.reason.length > 0))
})

test('speculation: hedges are whole words or phrases and need confidence >= 0.7', () => {
  for (const hedged of ['The flaky test might be a race', 'I think the cache is cold after deploys', 'Not sure the backup ran last night']) {
    assert.equal(gate(evaluateGates({ content: hedged }), 'speculation').pass, false, hedged)
    assert.equal(gate(evaluateGates({ content: hedged, confidence: 0.69 }), 'speculation').pass, false, hedged)
    assert.equal(gate(evaluateGates({ content: hedged, confidence: 0.7 }), 'speculation').pass, true, hedged)
  }
  // Substrings are not words: "mighty", "thinking about", "ensure".
  const plain = evaluateGates({ content: 'A mighty refactor: thinking about how to ensure idempotence' })
  assert.equal(gate(plain, 'speculation').pass, true)
  assert.equal(gate(plain, 'speculation').reason, 'no hedging words')
  assert.ok(!plain.tags.includes('speculative'))
  assert.ok(evaluateGates({ content: 'Maybe we retry twice', confidence: 0.9 }).tags.includes('speculative'))
  assert.equal(gate(evaluateGates({ content: 'It might rain' }, { speculationMinConfidence: 0.5 }), 'speculation').pass, true)
})

test('instruction: kept, tagged and boosted; whole words only ("install" has no "all", "nevertheless" no "never")', () => {
  const base = evaluateGates({ content: 'Use pnpm in this repository for installs', confidence: 0.6 })
  const instruction = evaluateGates({ content: 'Always use pnpm in this repository for installs', confidence: 0.6 })
  assert.equal(gate(instruction, 'instruction').pass, true)
  assert.match(gate(instruction, 'instruction').reason, /'always'/)
  assert.ok(instruction.tags.includes('instruction'))
  assert.ok(Math.abs(instruction.score - base.score - 0.2) < 1e-9, `${instruction.score} vs ${base.score}`)
  assert.ok(Math.abs(evaluateGates({ content: 'Never push to main directly', confidence: 0.6 }, { instructionBoost: 0.35 }).score - 0.95) < 1e-9)

  const pref = evaluateGates({ content: 'The user prefers British spelling in docs' })
  assert.deepEqual(pref.tags, ['instruction', 'preference'])
  assert.ok(evaluateGates({ content: 'Remember that staging shares the prod database' }).tags.includes('instruction'))

  for (const content of ['Run npm install before the tests', 'Nevertheless the overall result was fine', 'Allowance of the preferably sized buffer']) {
    const r = evaluateGates({ content })
    assert.equal(gate(r, 'instruction').reason, 'no instruction or preference', content)
    assert.ok(!r.tags.includes('instruction'), content)
  }
  // An instruction never fails its own gate, even when other gates reject the candidate.
  const weak = evaluateGates({ content: 'always', confidence: 0.1 })
  assert.equal(gate(weak, 'instruction').pass, true)
  assert.equal(weak.pass, false)
})

test('confidence and content gates, with configurable thresholds', () => {
  assert.equal(gate(evaluateGates({ content: 'The build takes nine minutes', confidence: 0.49 }), 'confidence').pass, false)
  assert.equal(gate(evaluateGates({ content: 'The build takes nine minutes', confidence: 0.5 }), 'confidence').pass, true)
  assert.equal(gate(evaluateGates({ content: 'The build takes nine minutes', confidence: 0.5 }, { minConfidence: 0.9 }), 'confidence').pass, false)

  assert.match(gate(evaluateGates({ content: '  too short  ' }), 'content').reason, /^too short/)
  assert.equal(gate(evaluateGates({ content: 'short one' }, { minContentLength: 5 }), 'content').pass, true)
  for (const filler of ['Thanks a lot!', 'ok, sounds good', 'Got it, thank you.']) {
    assert.match(gate(evaluateGates({ content: filler }), 'content').reason, /^filler/, filler)
  }
  const spam = 'buy now buy now buy now buy now buy now buy'
  assert.match(gate(evaluateGates({ content: spam }), 'content').reason, /^repetitive/)
  assert.equal(gate(evaluateGates({ content: spam }, { repetitionMinUniqueRatio: 0.1 }), 'content').pass, true)
})

test('duplicate: full sha256 of the normalised content', () => {
  const hash = contentHash('Ship on Fridays.')
  assert.match(hash, /^[0-9a-f]{64}$/)
  assert.equal(contentHash('  ship   ON fridays  '), hash)
  assert.notEqual(contentHash('ship on thursdays'), hash)
  const r = evaluateGates({ content: 'SHIP on Fridays!' }, { knownHashes: [hash] })
  assert.equal(gate(r, 'duplicate').pass, false)
  assert.match(gate(r, 'duplicate').reason, new RegExp(hash.slice(0, 12)))
  assert.equal(gate(evaluateGates({ content: 'Ship on Fridays' }, { knownHashes: ['0'.repeat(64)] }), 'duplicate').pass, true)
})

test('temporal: RFC 3339 with any offset, compared as instants', () => {
  const now = '2026-01-02T12:00:00Z'
  const options = { maxAgeMs: 3_600_000, now }
  // 13:30+02:00 is 11:30Z: 30 minutes old. As strings it would look newer than "now".
  assert.equal(gate(evaluateGates({ content: 'Temporal gate with offsets', timestamp: '2026-01-02T13:30:00+02:00' }, options), 'temporal').pass, true)
  // 06:30-04:00 is 10:30Z: 90 minutes old, although "06:30" < "12:00" says nothing about that.
  const old = gate(evaluateGates({ content: 'Temporal gate with offsets', timestamp: '2026-01-02T06:30:00-04:00' }, options), 'temporal')
  assert.equal(old.pass, false)
  assert.match(old.reason, /5400000 ms old/)
  assert.equal(gate(evaluateGates({ content: 'No limit by default', timestamp: '1999-01-01T00:00:00Z' }), 'temporal').pass, true)
})

test('bad candidates and options are E_INVALID_ARGUMENT', () => {
  const invalid = (err) => isLoaError(err) && err.code === 'E_INVALID_ARGUMENT'
  assert.throws(() => evaluateGates({ content: 'x', confidence: 1.5 }), invalid)
  assert.throws(() => evaluateGates({ content: 'x', type: 'gossip' }), invalid)
  assert.throws(() => evaluateGates({ content: 'x', timestamp: '2026-01-02 10:00' }), invalid)
  assert.throws(() => evaluateGates({ content: 42 }), invalid)
  assert.throws(() => evaluateGates({ content: 'x' }, { minConfidence: -1 }), invalid)
  assert.throws(() => evaluateGates({ content: 'x' }, { knownHashes: 'abc' }), invalid)
  assert.throws(() => evaluateGates('x'), invalid)
})
