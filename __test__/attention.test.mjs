// attentionLevel and AttentionTracker: seed 000 §4.3 levels, any spelling of the thresholds.
import test from 'node:test'
import assert from 'node:assert/strict'
import { core } from './helpers.mjs'

const { attentionLevel, AttentionTracker, parseConfig, isLoaError } = core

test('levels and actions follow the seed thresholds (5000 / 10000 / 15000)', () => {
  const at = (n) => attentionLevel(n)
  assert.deepEqual(
    [0, 4999, 5000, 9999, 10000, 14999, 15000, 1e9].map((n) => at(n).level),
    ['green', 'green', 'yellow', 'yellow', 'orange', 'orange', 'red', 'red'],
  )
  assert.deepEqual(at(7000), {
    level: 'yellow',
    action: 'delta_sync',
    message: at(7000).message,
    tokensUsed: 7000,
    threshold: 5000,
    nextThreshold: 10000,
  })
  assert.match(at(7000).message, /delta sync/)
  assert.equal(at(12000).message, 'Context is filling. Consider /clear when ready.')
  assert.equal(at(15000).message, 'Attention budget high. Recommend /clear.')
  assert.equal(at(15000).action, 'strongly_recommend_clear')
  assert.equal(at(20000).nextThreshold, null)
})

test('thresholds from the configuration: tokens, fractions of the window, the seeds\' other spellings', () => {
  const fractions = parseConfig('attention_budget:\n  context_window_tokens: 100000\n  yellow: 0.1\n  orange: "20%"\n  red: 30000\n').config.attentionBudget
  assert.equal(attentionLevel(9999, fractions).level, 'green')
  assert.equal(attentionLevel(10000, fractions).level, 'yellow')
  assert.equal(attentionLevel(20000, fractions).level, 'orange')
  const seed003 = parseConfig('attention_budget:\n  single_search: 2000\n  accumulated: 4000\n  session_total: 12000\n').config.attentionBudget
  assert.equal(attentionLevel(4000, seed003).level, 'yellow')
  assert.equal(attentionLevel(12000, seed003).level, 'red')
  const suffixed = parseConfig('attention_budget:\n  yellow_threshold: 3000\n  orange_threshold: 6000\n  red_threshold: 9000\n')
  assert.equal(attentionLevel(6000, suffixed.config.attentionBudget).level, 'orange')
  // Every spelling the table knows is supported without a warning (issue 28, item 4).
  assert.deepEqual(suffixed.warnings, [])
  // A partial object: plain token counts, the rest default.
  assert.equal(attentionLevel(3000, { yellow: 2500 }).level, 'yellow')
  assert.equal(attentionLevel(12000, { red: { tokens: 12000, fraction: 0.06 } }).level, 'red')
})

test('levels that do not increase, and bad counts, are E_INVALID_ARGUMENT', () => {
  const invalid = (fn) => assert.throws(fn, (e) => isLoaError(e) && e.code === 'E_INVALID_ARGUMENT')
  invalid(() => attentionLevel(1, { yellow: 20000 }))
  invalid(() => attentionLevel(-1))
  invalid(() => attentionLevel(1.5))
  invalid(() => attentionLevel('5000'))
  invalid(() => attentionLevel(1, { orange: 'lots' }))
  invalid(() => new AttentionTracker({ red: 100 }))
})

test('the tracker reports each crossing once, with delta_sync at yellow, until reset', () => {
  const t = new AttentionTracker()
  assert.equal(t.tokensUsed, 0)
  let u = t.add(1500)
  assert.deepEqual(u.crossed, [])
  assert.equal(u.overOperationLimit, false)
  t.add(1500)
  u = t.add(2000)
  assert.deepEqual(u.crossed.map((c) => [c.level, c.action]), [['yellow', 'delta_sync']])
  assert.equal(u.status.level, 'yellow')
  assert.deepEqual(t.add(10).crossed, [], 'reported once')
  // One large result jumps over orange into red: both reported, lowest first; over the
  // per-operation limit (singleSearch, 2000).
  u = t.add(11000)
  assert.deepEqual(u.crossed.map((c) => c.level), ['orange', 'red'])
  assert.equal(u.overOperationLimit, true)
  assert.equal(t.status().level, 'red')
  assert.equal(t.tokensUsed, 16010)
  t.reset()
  assert.equal(t.tokensUsed, 0)
  assert.deepEqual(t.add(5000).crossed.map((c) => c.level), ['yellow'], 'armed again after a clear')
  assert.throws(() => t.add(-5), (e) => e.code === 'E_INVALID_ARGUMENT')
})

test('the tracker takes the workspace configuration', () => {
  const { attentionBudget } = parseConfig('attention_budget:\n  yellow: 100\n  orange: 200\n  red: 300\n  single_search: 50\n').config
  const t = new AttentionTracker(attentionBudget)
  const first = t.add(60)
  assert.equal(first.overOperationLimit, true, '60 tokens in one operation is over single_search 50')
  assert.deepEqual(first.crossed, [])
  assert.deepEqual(t.add(200).crossed.map((c) => c.level), ['yellow', 'orange'])
  assert.deepEqual(t.add(40).crossed.map((c) => c.level), ['red'])
})
