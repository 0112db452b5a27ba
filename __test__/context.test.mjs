// buildContext: the budget holds for any input, output is deterministic, shares flow, cuts are
// marked, every drop is reported.
import test from 'node:test'
import assert from 'node:assert/strict'
import { core, rng } from './helpers.mjs'

const { buildContext, countTokens, isLoaError } = core
const HEADER = '## Session Context (from LOA memory)\n\n'
const MARKER = '… [truncated]'

/** Every invariant of a result. */
function check(input, r) {
  const budget = input.budget ?? 2000
  const margin = input.safetyMargin ?? 0
  const encoding = input.encoding ?? 'o200k_base'
  assert.equal(r.limit, Math.floor(budget * (1 - margin) + 1e-9))
  if (r.text === null) {
    assert.equal(r.tokens, 0)
    assert.equal(r.included.length, 0)
  } else {
    assert.equal(r.tokens, countTokens(r.text, { encoding }), 'tokens is the exact count of text')
    assert.ok(r.tokens <= r.limit, `${r.tokens} > ${r.limit}`)
    assert.ok(r.text.startsWith(HEADER) && r.text.endsWith('\n'))
    assert.equal(r.tokens, countTokens(HEADER, { encoding }) + r.included.reduce((a, i) => a + i.tokens, 0))
  }
  const seen = new Map()
  for (const { kind, index } of [...r.included, ...r.dropped.map((d) => d.item)]) {
    const key = `${kind}:${index}`
    assert.ok(!seen.has(key), `${key} reported twice`)
    seen.set(key, true)
  }
  assert.equal(seen.size, input.sessions.length + input.learnings.length, 'every candidate is included or dropped')
  for (const d of r.dropped) assert.ok(['empty', 'does_not_fit', 'budget_full', 'no_budget'].includes(d.reason), d.reason)
}

test('sessions newest first (parsed, any offset), then learnings; the seed format', () => {
  const input = {
    sessions: [
      { timestamp: '2025-01-01T10:00:00+02:00', summary: 'written at 08:00Z' },
      { timestamp: '2025-01-01T09:00:00Z', summary: 'written at 09:00Z\nsecond line' },
      { timestamp: '2024-12-31T23:30:00-10:00', summary: 'written at 09:30Z', importance: 1 },
    ],
    learnings: [
      { trigger: 'tests hang', solution: 'check the LOCK file', importance: 0.5 },
      { trigger: 'CI cache', solution: 'key it on Cargo.lock', importance: 0.9, lastUsed: '2025-01-01T00:00:00Z' },
    ],
  }
  const r = buildContext(input)
  check(input, r)
  assert.equal(
    r.text,
    HEADER +
      '- [2024-12-31T23:30:00-10:00] written at 09:30Z\n' +
      '- [2025-01-01T09:00:00Z] written at 09:00Z\n  second line\n' +
      '- [2025-01-01T10:00:00+02:00] written at 08:00Z\n' +
      '- CI cache: key it on Cargo.lock\n' +
      '- tests hang: check the LOCK file\n',
  )
  assert.deepEqual(
    r.included.map((i) => [i.kind, i.index, i.truncated]),
    [['session', 2, false], ['session', 1, false], ['session', 0, false], ['learning', 1, false], ['learning', 0, false]],
  )
  assert.deepEqual(r.dropped, [])
})

test('nothing to inject is null', () => {
  assert.deepEqual(JSON.parse(JSON.stringify(buildContext({ sessions: [], learnings: [] }))), { text: null, tokens: 0, limit: 2000, included: [], dropped: [] })
  const r = buildContext({ sessions: [{ timestamp: '2025-01-01T00:00:00Z', summary: '  ' }], learnings: [], budget: 500 })
  assert.equal(r.text, null)
  assert.deepEqual(r.dropped, [{ item: { kind: 'session', index: 0 }, reason: 'empty' }])
})

test('the same input gives byte-identical output', () => {
  const input = generated(rng(7), 40)
  const a = buildContext(input)
  const b = buildContext(structuredClone(input))
  assert.equal(a.text, b.text)
  assert.deepEqual(JSON.parse(JSON.stringify(a)), JSON.parse(JSON.stringify(b)))
})

test('shares flow both ways', () => {
  const session = (i) => ({ timestamp: `2025-03-01T00:${String(59 - i).padStart(2, '0')}:00Z`, summary: 'hello '.repeat(40) })
  const learning = (i) => ({ trigger: `trigger ${i}`, solution: 'world '.repeat(40) })
  const sessions = Array.from({ length: 30 }, (_, i) => session(i))
  const learnings = Array.from({ length: 30 }, (_, i) => learning(i))
  const tokensOf = (r, kind) => r.included.filter((i) => i.kind === kind).reduce((a, i) => a + i.tokens, 0)
  const room = 1000 - countTokens(HEADER)
  const base = { budget: 1000, minTruncatedTokens: 100000 } // whole items only

  // Both kinds overflow: each gets its share, give or take the item that did not fit (what a
  // kind leaves unused of its share, even a few tokens, flows to the other).
  const perSession = 57
  const perLearning = 46
  const near = (r, share) => {
    const s = tokensOf(r, 'session')
    const l = tokensOf(r, 'learning')
    assert.ok(s + l <= room, `${s} + ${l} <= ${room}`)
    assert.ok(Math.abs(s - room * share) < perSession + perLearning, `sessions ${s} near ${room * share}`)
    assert.ok(Math.abs(l - room * (1 - share)) < perSession + perLearning, `learnings ${l} near ${room * (1 - share)}`)
  }
  const both = buildContext({ ...base, sessions, learnings })
  assert.equal(both.included.find((i) => i.kind === 'session').tokens, perSession)
  assert.equal(both.included.find((i) => i.kind === 'learning').tokens, perLearning)
  near(both, 0.7)

  // Nothing of the other kind: the whole room goes to the kind there is (the original kept 30 %
  // for learnings that did not exist).
  const onlySessions = buildContext({ ...base, sessions, learnings: [] })
  assert.ok(tokensOf(onlySessions, 'session') > room * 0.9)
  const onlyLearnings = buildContext({ ...base, sessions: [], learnings })
  assert.ok(tokensOf(onlyLearnings, 'learning') > room * 0.9)

  // A few small learnings: sessions take what learnings leave.
  const fewLearnings = buildContext({ ...base, sessions, learnings: learnings.slice(0, 1) })
  assert.ok(tokensOf(fewLearnings, 'session') > room * 0.8)
  assert.equal(fewLearnings.included.filter((i) => i.kind === 'learning').length, 1)
  // A few small sessions: learnings take what sessions leave.
  const fewSessions = buildContext({ ...base, sessions: sessions.slice(0, 1), learnings })
  assert.ok(tokensOf(fewSessions, 'learning') > room * 0.8)

  // sessionShare moves the split.
  const half = buildContext({ ...base, sessions, learnings, sessionShare: 0.5 })
  near(half, 0.5)
  for (const r of [both, onlySessions, onlyLearnings, fewLearnings, fewSessions, half]) assert.ok(r.tokens <= 1000)
})

test('an item larger than what is left is cut at a token boundary with a marker, or dropped', () => {
  const big = 'The quick brown fox jumps over the lazy dog. '.repeat(400)
  const input = {
    sessions: [
      { timestamp: '2025-01-02T00:00:00Z', summary: 'short and new' },
      { timestamp: '2025-01-01T00:00:00Z', summary: big },
      { timestamp: '2024-12-31T00:00:00Z', summary: 'old' },
    ],
    learnings: [],
    budget: 300,
  }
  const r = buildContext(input)
  check(input, r)
  assert.ok(r.text.endsWith(`${MARKER}\n`), r.text)
  assert.deepEqual(r.included.map((i) => [i.index, i.truncated]), [[0, false], [1, true]])
  const cutLine = r.text.split('\n').at(-2)
  assert.ok(`- [2025-01-01T00:00:00Z] ${big.trim()}`.startsWith(cutLine.slice(0, -MARKER.length)))
  assert.ok(r.tokens > 290, `the cut fills the room: ${r.tokens}`)
  assert.deepEqual(r.dropped, [{ item: { kind: 'session', index: 2 }, reason: 'budget_full' }])

  const strict = buildContext({ ...input, minTruncatedTokens: 500 })
  check({ ...input, minTruncatedTokens: 500 }, strict)
  assert.ok(!strict.text.includes(MARKER))
  assert.deepEqual(strict.dropped, [
    { item: { kind: 'session', index: 1 }, reason: 'does_not_fit' },
    { item: { kind: 'session', index: 2 }, reason: 'budget_full' },
  ])
})

test('a budget too small for the header drops everything with no_budget', () => {
  const r = buildContext({ sessions: [{ timestamp: '2025-01-01T00:00:00Z', summary: 'x' }], learnings: [{ trigger: 'a', solution: 'b' }], budget: 5 })
  assert.equal(r.text, null)
  assert.deepEqual(r.dropped.map((d) => d.reason), ['no_budget', 'no_budget'])
})

test('the safety margin lowers the limit', () => {
  const input = generated(rng(3), 30)
  for (const safetyMargin of [0.1, 0.25, 0.5]) {
    const r = buildContext({ ...input, budget: 1000, safetyMargin })
    check({ ...input, budget: 1000, safetyMargin }, r)
    assert.equal(r.limit, Math.floor(1000 * (1 - safetyMargin)))
  }
})

test('a huge item costs what can be used of it, not its size', () => {
  const huge = 'word '.repeat(4_000_000) // 20 MB
  // CPU time, not wall time: other processes on a busy machine stretch the latter, not the
  // former (the call is synchronous, on this thread).
  const started = process.cpuUsage()
  const r = buildContext({ sessions: [{ timestamp: '2025-01-01T00:00:00Z', summary: huge }], learnings: [{ trigger: '中'.repeat(1_000_000), solution: 'x' }] })
  const used = process.cpuUsage(started)
  const ms = (used.user + used.system) / 1000
  assert.ok(r.included[0].truncated && r.tokens <= 2000)
  assert.ok(ms < 1000, `${ms} ms of CPU`)
})

test('bad input is E_INVALID_ARGUMENT naming the field', () => {
  const ok = { timestamp: '2025-01-01T00:00:00Z', summary: 'fine' }
  const cases = [
    [null, 'input'],
    [{ sessions: 'x', learnings: [] }, '`sessions`'],
    [{ sessions: [], learnings: {} }, '`learnings`'],
    [{ sessions: [ok, null], learnings: [] }, 'sessions[1]'],
    [{ sessions: [ok, { ...ok, timestamp: '2025-01-01' }], learnings: [] }, 'sessions[1].timestamp'],
    [{ sessions: [ok, { ...ok, timestamp: 'yesterday' }], learnings: [] }, 'sessions[1].timestamp'],
    [{ sessions: [{ ...ok, timestamp: '2025-01-01T00:00:00Z\n' }], learnings: [] }, 'sessions[0].timestamp'],
    [{ sessions: [{ ...ok, timestamp: 20250101 }], learnings: [] }, 'sessions[0].timestamp'],
    [{ sessions: [{ ...ok, summary: 42 }], learnings: [] }, 'sessions[0].summary'],
    [{ sessions: [{ ...ok, importance: NaN }], learnings: [] }, 'sessions[0].importance'],
    [{ sessions: [], learnings: [{ trigger: 'a', solution: 'b', lastUsed: 'soon' }] }, 'learnings[0].lastUsed'],
    [{ sessions: [], learnings: [{ trigger: 'a', solution: 'b', importance: Infinity }] }, 'learnings[0].importance'],
    [{ sessions: [], learnings: [{ trigger: 'a', solution: 7 }] }, 'learnings[0].solution'],
    [{ sessions: [], learnings: [], budget: -1 }, 'budget'],
    [{ sessions: [], learnings: [], budget: 1.5 }, 'budget'],
    [{ sessions: [], learnings: [], sessionShare: 2 }, 'sessionShare'],
    [{ sessions: [], learnings: [], safetyMargin: 1 }, 'safetyMargin'],
    [{ sessions: [], learnings: [], encoding: 'gpt2' }, 'encoding'],
  ]
  for (const [input, name] of cases) {
    assert.throws(
      () => buildContext(input),
      (e) => isLoaError(e) && e.code === 'E_INVALID_ARGUMENT' && e.message.includes(name),
      `${name}: ${JSON.stringify(input)}`,
    )
  }
  // Texts are checked when their turn comes: a dropped item's summary is never read.
  const r = buildContext({ sessions: [{ ...ok, summary: 'x '.repeat(3000) }, { ...ok, timestamp: '2020-01-01T00:00:00Z', summary: 42 }], learnings: [], budget: 100 })
  assert.equal(r.dropped[0].reason, 'budget_full')
})

// -- property test ---------------------------------------------------------------------------


const FRAGMENTS = ['the agent fixed the build', ' and then', '中文内容测试', '日本語のテキスト', '한국어 텍스트', '🚀', '👨‍👩‍👧‍👦', '❤️‍🔥', 'a3f9c2e1b7d4', 'sk-ABCdef123XYZ', '\n', '\n\n', '  ', '.', '…', 'e\u0301', '<|endoftext|>', '\r\n', '1234567', '\ud800']
const OFFSETS = ['Z', '+00:00', '+02:00', '-05:30', '+14:00', '-12:00']

function text(r) {
  const n = [0, 3, 10, 30, 2000][r(5)]
  let s = ''
  for (let i = 0; i < r(n + 1); i++) s += FRAGMENTS[r(FRAGMENTS.length)] + (r(3) ? '' : ' ')
  return s
}
function stamp(r) {
  const p = (v) => String(v).padStart(2, '0')
  return `2025-${p(1 + r(12))}-${p(1 + r(28))}T${p(r(24))}:${p(r(60))}:${p(r(60))}${r(3) ? '' : '.' + r(1000)}${OFFSETS[r(OFFSETS.length)]}`
}
function generated(r, max) {
  return {
    sessions: Array.from({ length: r(max) }, () => ({ timestamp: stamp(r), summary: text(r), ...(r(2) ? { importance: r(5) / 4 } : {}) })),
    learnings: Array.from({ length: r(max) }, () => ({
      trigger: text(r),
      solution: text(r),
      ...(r(2) ? { importance: r(3) } : {}),
      ...(r(2) ? { lastUsed: stamp(r) } : {}),
    })),
  }
}

test('no input can make the text exceed the budget (generated inputs with CJK, emoji, huge items)', () => {
  const r = rng(20261122)
  for (let round = 0; round < 150; round++) {
    const input = {
      ...generated(r, 12),
      budget: [0, 5, 13, 20, 50, 100, 300, 1000, 2000][r(9)] + r(7),
      sessionShare: r(11) / 10,
      encoding: r(2) ? 'o200k_base' : 'cl100k_base',
      safetyMargin: [0, 0, 0.1, 0.25, 0.5][r(5)],
      minTruncatedTokens: [0, 1, 8, 32, 200][r(5)],
    }
    const out = buildContext(input)
    check(input, out)
    assert.equal(buildContext(input).text, out.text, 'deterministic')
  }
})
