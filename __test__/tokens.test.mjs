// countTokens / countTokensBatch / estimateTokens against js-tiktoken, the reference.
import test from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { core, fixture, requireDev, rng } from './helpers.mjs'

const { countTokens, countTokensBatch, estimateTokens, isLoaError } = core
const { getEncoding } = requireDev('js-tiktoken')
const ENCODINGS = ['o200k_base', 'cl100k_base']
const reference = Object.fromEntries(ENCODINGS.map((e) => [e, getEncoding(e)]))
// encode_ordinary: special-token text counts as ordinary text, as in countTokens.
const expected = (text, encoding) => reference[encoding].encode(text, [], []).length

const samples = Object.entries(JSON.parse(readFileSync(fixture('token-samples.json'), 'utf8'))).flatMap(([kind, list]) =>
  list.map((text) => ({ kind, text })),
)

test('exact counts equal js-tiktoken on English, notes, code, CJK, emoji, keys, mixed and edge cases', () => {
  const kinds = new Set(samples.map((s) => s.kind))
  for (const k of ['english', 'notes', 'code', 'chinese', 'japanese', 'korean', 'emoji', 'keys', 'mixed', 'edge']) assert.ok(kinds.has(k), k)
  for (const encoding of ENCODINGS) {
    for (const { kind, text } of samples) {
      assert.equal(countTokens(text, { encoding }), expected(text, encoding), `${encoding} ${kind}: ${JSON.stringify(text.slice(0, 60))}`)
    }
  }
  assert.equal(countTokens('hello world'), 2, 'o200k_base is the default')
})


test('exact counts equal js-tiktoken on generated text, lone surrogates included', () => {
  const r = rng(42)
  const pieces = samples.map((s) => s.text).filter(Boolean)
  const ranges = [[0x20, 0x7e], [0xa0, 0x24f], [0x400, 0x4ff], [0x3040, 0x30ff], [0x4e00, 0x9fff], [0xac00, 0xd7a3], [0x1f300, 0x1faff], [0xd800, 0xdfff]]
  const texts = []
  for (let i = 0; i < 300; i++) {
    let t = ''
    const parts = 1 + r(12)
    for (let j = 0; j < parts; j++) {
      if (r(2)) {
        const p = pieces[r(pieces.length)]
        const start = r(p.length)
        t += p.slice(start, start + 1 + r(80))
      } else {
        const [lo, hi] = ranges[r(ranges.length)]
        for (let k = 0; k < 1 + r(10); k++) t += String.fromCodePoint(lo + r(hi - lo + 1))
      }
      if (r(4) === 0) t += [' ', '\n', '  ', '\t', '\r\n', '. '][r(6)]
    }
    texts.push(t)
  }
  for (const encoding of ENCODINGS) {
    const batch = countTokensBatch(texts, { encoding })
    texts.forEach((t, i) => {
      // js-tiktoken encodes a lone surrogate as U+FFFD, as does the conversion to UTF-8.
      assert.equal(batch[i], expected(t, encoding), `${encoding}: ${JSON.stringify(t)}`)
    })
  }
})

test('countTokensBatch: one call, the same counts as countTokens, in order', () => {
  const texts = samples.map((s) => s.text)
  // A long text and a short one after it: the reused read buffer must not leak between strings.
  texts.push('x'.repeat(100_000), 'ok', '中'.repeat(5000), '')
  for (const encoding of ENCODINGS) {
    assert.deepEqual(
      countTokensBatch(texts, { encoding }),
      texts.map((t) => countTokens(t, { encoding })),
    )
  }
  assert.deepEqual(countTokensBatch([]), [])
})

test('a safety margin scales the count as a budget with that margin would', () => {
  const text = samples.find((s) => s.kind === 'english').text
  const n = countTokens(text)
  assert.equal(countTokens(text, { safetyMargin: 0 }), n)
  assert.equal(countTokens(text, { safetyMargin: 0.2 }), Math.ceil(n / 0.8))
  assert.deepEqual(countTokensBatch([text, ''], { safetyMargin: 0.5 }), [2 * n, 0])
})

test('estimateTokens is above the exact count on every sample, and cheap', () => {
  for (const { kind, text } of samples) {
    const estimate = estimateTokens(text)
    for (const encoding of ENCODINGS) {
      assert.ok(estimate >= countTokens(text, { encoding }), `${kind} ${encoding}: ${estimate} for ${JSON.stringify(text.slice(0, 60))}`)
    }
  }
  assert.equal(estimateTokens(''), 0)
})

test('bad arguments are E_INVALID_ARGUMENT', () => {
  const invalid = (fn, words) => assert.throws(fn, (e) => isLoaError(e) && e.code === 'E_INVALID_ARGUMENT' && words.every((w) => e.message.includes(w)))
  invalid(() => countTokens(42), ['text'])
  invalid(() => countTokens(undefined), ['text'])
  invalid(() => countTokens('x', { encoding: 'p50k_base' }), ['encoding', 'p50k_base'])
  invalid(() => countTokens('x', { encoding: 5 }), ['encoding'])
  invalid(() => countTokens('x', { safetyMargin: 1 }), ['safetyMargin'])
  invalid(() => countTokens('x', { safetyMargin: -0.1 }), ['safetyMargin'])
  invalid(() => countTokensBatch('x'), ['texts'])
  invalid(() => countTokensBatch(['a', 'b', null]), ['texts[2]'])
  invalid(() => estimateTokens({}), ['text'])
})
