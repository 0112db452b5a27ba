// RFC 8785 canonical JSON from JavaScript values: every reference vector of testdata/vectors/jcs
// byte for byte, the 10,000 ES6 number cases, UTF-16 member order, and what is not JSON.
import test from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { core, root } from './helpers.mjs'

const { canonicalizeJson, canonicalizeJsonBuffer, canonicalizeJsonText } = core
const VECTORS = join(root, 'testdata', 'vectors', 'jcs')

test('every reference input canonicalizes to its output byte for byte', () => {
  const names = readdirSync(join(VECTORS, 'input'))
  assert.equal(names.length, 6)
  for (const name of names) {
    const input = readFileSync(join(VECTORS, 'input', name), 'utf8')
    const expected = readFileSync(join(VECTORS, 'output', name))
    const hex = readFileSync(join(VECTORS, 'outhex', name.replace('.json', '.txt')), 'utf8').replace(/\s+/g, '')
    assert.equal(expected.toString('hex'), hex, `${name}: output and outhex agree`)
    // From a JS value (JSON.parse of the input) and from the text itself.
    assert.deepEqual(canonicalizeJsonBuffer(JSON.parse(input)), expected, name)
    assert.equal(canonicalizeJson(JSON.parse(input)), expected.toString('utf8'), name)
    assert.equal(canonicalizeJsonText(input), expected.toString('utf8'), name)
  }
})

test('all 10,000 ES6 number cases format exactly; NaN and infinities are refused', () => {
  const lines = readFileSync(join(VECTORS, 'es6_numbers_first10000.csv'), 'utf8').split('\n').filter(Boolean)
  assert.equal(lines.length, 10_000)
  const view = new DataView(new ArrayBuffer(8))
  const numbers = []
  const expected = []
  for (const line of lines) {
    const [bits, text] = line.split(',')
    view.setBigUint64(0, BigInt('0x' + bits))
    numbers.push(view.getFloat64(0))
    expected.push(text)
  }
  // One call per number, and all of them at once in an array.
  for (let i = 0; i < numbers.length; i++) assert.equal(canonicalizeJson(numbers[i]), expected[i], lines[i])
  assert.equal(canonicalizeJson(numbers), `[${expected.join(',')}]`)
  for (const bad of [NaN, Infinity, -Infinity, [1, NaN], { a: { b: Infinity } }]) {
    assert.throws(() => canonicalizeJson(bad), (e) => e.code === 'E_INVALID_ARGUMENT' && /NaN|Infinity/.test(e.message))
  }
})

test('member names sort by UTF-16 code units; -0, large integers and escapes', () => {
  // U+1F600 (D83D DE00) sorts before U+FB01 in UTF-16, after it by code point.
  assert.equal(canonicalizeJson({ '\ufb01': 1, '\u{1f600}': 2, a: 3, 10: 4, 9: 5 }), '{"10":4,"9":5,"a":3,"\u{1f600}":2,"\ufb01":1}')
  assert.equal(canonicalizeJson([-0, 2 ** 53 + 2, 1e21, 1e-7, 0.1 + 0.2]), '[0,9007199254740994,1e+21,1e-7,0.30000000000000004]')
  assert.equal(canonicalizeJson('\u0000\u001f\u007f\u2028"\\\b\f\n\r\t'), '"\\u0000\\u001f\u007f\u2028\\"\\\\\\b\\f\\n\\r\\t"')
  assert.equal(canonicalizeJsonText('[9007199254740993, 1E2, -0.0]'), '[9007199254740992,100,0]')
  assert.throws(() => canonicalizeJsonText('{"a":1,"a":2}'), { code: 'E_INVALID_ARGUMENT' })
  // Nested keys are all covered (the originals' sorted-keys replacer dropped them).
  assert.equal(canonicalizeJson({ z: { y: 1, x: [{ b: 1, a: 2 }] } }), '{"z":{"x":[{"a":2,"b":1}],"y":1}}')
  assert.equal(canonicalizeJson({ a: undefined, b: null }), '{"b":null}', 'undefined members are left out, as JSON.stringify does')
  assert.equal(canonicalizeJson(Object.assign(Object.create(null), { k: 1 })), '{"k":1}')
})

test('values JSON cannot represent are refused with the place they are at', () => {
  const cycle = { a: [] }
  cycle.a.push(cycle)
  class Point { constructor() { this.x = 1 } }
  const cases = [
    [undefined, /`value` is not JSON: undefined/],
    [{ list: [1, undefined] }, /value\.list\[1\].*undefined/],
    [[, 1], /value\[0\]/], // a hole
    [{ f: () => 1 }, /value\.f.*function/],
    [{ n: 10n }, /BigInt/],
    [Symbol('s'), /symbol/],
    [{ s: 'lone \ud800 surrogate' }, /lone surrogate/],
    [{ ['\udc00']: 1 }, /lone surrogate/],
    [{ when: new Date(0) }, /Date.*toISOString/],
    [new Map([[1, 2]]), /instance of a class/],
    [new Set([1]), /instance of a class/],
    [new Point(), /instance of a class/],
    [{ buf: Buffer.from('x') }, /Buffer/],
    [new Uint8Array(2), /typed array/],
    [cycle, /nested deeper than 100/],
  ]
  for (const [value, message] of cases) {
    assert.throws(() => canonicalizeJson(value), (e) => e.code === 'E_INVALID_ARGUMENT' && message.test(e.message), String(message))
  }
  let deep = 1
  for (let i = 0; i < 100; i++) deep = [deep]
  assert.equal(canonicalizeJson(deep).length, 201, '100 levels are fine')
})
