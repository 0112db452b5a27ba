// Every string reader of the binding (src/binding/strings.rs) reads exactly what
// `Buffer.from(s, 'utf8')` holds, whatever V8's representation of the string: one-byte or
// two-byte, flat, concatenated (cons), sliced, external; at every length around the readers'
// buffer sizes. Lone surrogates are refused where a string is stored, named as a file, hashed or
// signed, and read as U+FFFD (as `Buffer.from` does) where text is only counted or redacted.
import test from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync, openSync, closeSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { core, tempDir, requireDev } from './helpers.mjs'

const { countTokens, countTokensBatch, estimateTokens, redact, redactAsync, redactBatch, canonicalizeJson, canonicalizeJsonText, contentHash, isLoaError } = core
const hooks = core[Symbol.for('@loa/core/test-hooks')]
const code = (c) => (err) => isLoaError(err) && err.code === c

// ---------------------------------------------------------------------------------------------
// The corpus: every unit width, lengths around each reader's buffer sizes, boundary mixes.
// ---------------------------------------------------------------------------------------------

const UNITS = { ascii: 'a', latin1: 'é', bmp: '€', pair: '😀', fffd: '\uFFFD', high: '\uD800', low: '\uDC00' }
const UTF8_WIDTH = { ascii: 1, latin1: 2, bmp: 3, pair: 4, fffd: 3, high: 3, low: 3 }
const hasLoneSurrogate = (s) => /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s)

/** Lengths (in repetitions of a unit of `width` UTF-8 bytes) around the readers' sizes. */
function lengths(width) {
  const out = new Set()
  for (let n = 0; n <= 40; n++) out.add(n)
  // read_into starts at 4096 bytes and grows; the JSON reader reuses one buffer; read_string
  // switches to measuring above 16,384 UTF-16 units.
  for (const bytes of [512, 4096, 8192, 16384 * width]) {
    const n = Math.floor(bytes / width)
    for (let d = -4; d <= 4; d++) if (n + d >= 0) out.add(n + d)
  }
  return [...out].sort((a, b) => a - b)
}

/** Plain strings (no representation chosen yet). */
function corpus() {
  const out = []
  for (const [name, unit] of Object.entries(UNITS)) {
    for (const n of lengths(UTF8_WIDTH[name])) out.push(unit.repeat(n))
  }
  // A multi-byte character exactly where a buffer ends: ASCII up to the edge, then each unit.
  for (const edge of [512, 4096, 8192]) {
    for (let k = edge - 6; k <= edge + 1; k++) {
      for (const unit of Object.values(UNITS)) out.push('a'.repeat(k) + unit + 'b')
    }
  }
  // The reported case: one-byte strings over 4096 UTF-8 bytes with non-ASCII characters.
  out.push('é'.repeat(3000), 'x' + 'é'.repeat(2047), ('ab é ').repeat(1000))
  // Mixed widths and pairs split across representations.
  out.push('a😀é€\uD800b'.repeat(700), '😀'.repeat(1) + '\uDC00', '\uD83D' + 'x', 'ok \uFFFD ok')
  return out
}

/** A fresh flat (sequential) copy: JSON round trips keep lone surrogates. */
const flat = (s) => JSON.parse(JSON.stringify(s))

/** `s` in each representation V8 has (external ones need a flag: see the child below). */
const REPRESENTATIONS = {
  flat,
  // V8 makes a cons string of a + b when the result is 13 characters or more.
  cons: (s) => flat(s.slice(0, s.length >> 1)) + flat(s.slice(s.length >> 1)),
  // ... and a sliced string of a slice of 13 or more characters of a flat string.
  sliced: (s) => flat('xy' + s).slice(2),
  // A slice of a two-byte parent is two-byte even when it holds only Latin-1 characters.
  twoByteSliced: (s) => flat('€' + s).slice(1),
}

// ---------------------------------------------------------------------------------------------
// Checking the readers against Buffer.from
// ---------------------------------------------------------------------------------------------

const MODES = ['into', 'intoStrict', 'whole', 'string', 'text', 'json']
const REFUSES = new Set(['intoStrict', 'string', 'json'])

/** Mismatches of every reader on `strings` (all of one representation). */
function checkReaders(strings, label) {
  const problems = []
  const expected = strings.map((s) => Buffer.from(s, 'utf8').toString('hex'))
  for (const mode of MODES) {
    if (!REFUSES.has(mode)) {
      // One call for all: readers that reuse a buffer see it grow and shrink.
      const got = hooks.readStrings(mode, strings).bytes
      strings.forEach((s, i) => {
        if (got[i] !== expected[i]) problems.push(`${label}/${mode}: length ${s.length} (${describe(s)})`)
      })
      continue
    }
    const valid = strings.map((s, i) => [s, i]).filter(([s]) => !hasLoneSurrogate(s))
    const got = hooks.readStrings(mode, valid.map(([s]) => s)).bytes
    valid.forEach(([s, i], j) => {
      if (got[j] !== expected[i]) problems.push(`${label}/${mode}: length ${s.length} (${describe(s)})`)
    })
    for (const s of strings.filter(hasLoneSurrogate)) {
      try {
        hooks.readStrings(mode, [s])
        problems.push(`${label}/${mode}: a lone surrogate was accepted (${describe(s)})`)
      } catch (err) {
        if (!code('E_INVALID_ARGUMENT')(err) || !/lone surrogate/.test(err.message)) problems.push(`${label}/${mode}: ${err.code} ${err.message}`)
      }
    }
  }
  // A prefix: a character-boundary prefix of the UTF-8, within 4 bytes of the limit, and
  // `complete` exactly when it is all of it.
  for (const maxBytes of [0, 1, 3, 4, 511, 4095, 4096, 8191]) {
    const { bytes, complete } = hooks.readStrings('prefix', strings, maxBytes)
    strings.forEach((s, i) => {
      const full = expected[i]
      const got = bytes[i]
      const ok = full.startsWith(got) && complete[i] === (got === full) && (complete[i] || (got.length / 2 <= maxBytes && got.length / 2 > maxBytes - 4))
      if (!ok) problems.push(`${label}/prefix(${maxBytes}): length ${s.length} (${describe(s)})`)
    })
  }
  return problems
}

function describe(s) {
  const kinds = Object.entries(UNITS).filter(([, u]) => s.includes(u)).map(([k]) => k)
  return kinds.join('+') || 'empty'
}

// ---------------------------------------------------------------------------------------------
// Child process: external strings (and proof that each representation is what it claims),
// which need V8 flags the test runner does not pass.
// ---------------------------------------------------------------------------------------------

if (process.argv[2] === '--child') {
  const out = process.argv[3]
  // Each sample is labelled so that V8's own description of it can be matched up (DebugPrint
  // writes to stdout through C stdio, so it cannot be interleaved with console.log reliably).
  const debugPrint = new Function('s', '%DebugPrint(s)')
  for (const [name, make] of Object.entries({ ...REPRESENTATIONS, external: (s) => externalized(s) })) {
    for (const [tag, unit] of [['ascii', 'a'], ['latin1', 'é'], ['twobyte', '€']]) debugPrint(make(`KIND_${name}_${tag}_` + unit.repeat(40)))
  }
  const strings = corpus().map(externalized)
  const externalCount = strings.filter((s) => s.length > 0).length
  writeFileSync(out, JSON.stringify({ problems: checkReaders(strings, 'external'), externalCount }))
  process.exit(0)
}

function externalized(s) {
  const copy = flat(s)
  try {
    externalizeString(copy)
  } catch {
    // V8 refuses some strings (the empty one, read-only ones); they stay flat.
  }
  return copy
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

test('countTokensBatch counts one-byte strings over 4096 UTF-8 bytes exactly (regression)', () => {
  const { getEncoding } = requireDev('js-tiktoken')
  const reference = getEncoding('o200k_base')
  for (const s of ['é'.repeat(3000), 'x' + 'é'.repeat(2047), 'é'.repeat(2049), ('Grüße, señor. ').repeat(400)]) {
    const alone = countTokens(s)
    assert.equal(alone, reference.encode(s).length, `reference, length ${s.length}`)
    assert.deepEqual(countTokensBatch([s]), [alone], `batch, length ${s.length}`)
    assert.deepEqual(countTokensBatch(['short', s, 'é']), [countTokens('short'), alone, countTokens('é')])
  }
})

test('every string reader reads exactly Buffer.from(s, "utf8"): flat, cons, sliced, two-byte sliced', () => {
  const strings = corpus()
  for (const [name, make] of Object.entries(REPRESENTATIONS)) {
    const problems = checkReaders(strings.map(make), name)
    assert.deepEqual(problems.slice(0, 20), [], `${problems.length} mismatches`)
  }
})

test('... and for external strings, one-byte and two-byte; each representation is what it claims', (t) => {
  const dir = tempDir(t)
  const out = join(dir, 'result.json')
  // V8's DebugPrint writes with C stdio: into a pipe (non-blocking under Node) it would drop
  // what does not fit, so it goes to a file.
  const printed = join(dir, 'stdout.txt')
  const fd = openSync(printed, 'w')
  const child = spawnSync(process.execPath, ['--expose-externalize-string', '--allow-natives-syntax', fileURLToPath(import.meta.url), '--child', out], {
    stdio: ['ignore', fd, 'pipe'],
    encoding: 'utf8',
  })
  closeSync(fd)
  assert.equal(child.status, 0, child.stderr)
  // V8's own word on each sample's representation.
  const kinds = {}
  let label = null
  for (const line of readFileSync(printed, 'utf8').split('\n')) {
    const m = line.match(/KIND_([a-zA-Z]+)_(ascii|latin1|twobyte)_/)
    if (m) label = `${m[1]}/${m[2]}`
    const type = line.match(/^ - type: (\w+)/)
    if (type && label) {
      kinds[label] = type[1]
      label = null
    }
  }
  const expected = {
    'flat/ascii': /^(SEQ_)?ONE_BYTE_(INTERNALIZED_)?STRING_TYPE$/,
    'flat/latin1': /^(SEQ_)?ONE_BYTE_(INTERNALIZED_)?STRING_TYPE$/,
    'flat/twobyte': /^(SEQ_)?(TWO_BYTE_)?(INTERNALIZED_)?STRING_TYPE$/,
    'cons/ascii': /^CONS_ONE_BYTE_STRING_TYPE$/,
    'cons/twobyte': /^CONS_STRING_TYPE$/,
    'sliced/latin1': /^SLICED_ONE_BYTE_STRING_TYPE$/,
    'sliced/twobyte': /^SLICED_STRING_TYPE$/,
    'twoByteSliced/ascii': /^SLICED_STRING_TYPE$/,
    'external/latin1': /^EXTERNAL_ONE_BYTE_STRING_TYPE$/,
    'external/twobyte': /^EXTERNAL_STRING_TYPE$/,
  }
  for (const [sample, type] of Object.entries(expected)) assert.match(kinds[sample] ?? 'missing', type, sample)
  const result = JSON.parse(readFileSync(out, 'utf8'))
  assert.ok(result.externalCount > 500, `only ${result.externalCount} external strings`)
  assert.deepEqual(result.problems.slice(0, 20), [], `${result.problems.length} mismatches`)
})

test('Node-made external strings (large Buffer.toString results) are read exactly', () => {
  const latin1 = Buffer.alloc(3 << 20, 0xe9).toString('latin1') // 'é' x 3 Mi, one-byte external
  const ucs2 = Buffer.from('€é😀'.repeat(1 << 18), 'utf16le').toString('utf16le')
  for (const s of [latin1, ucs2]) {
    const expected = Buffer.from(s, 'utf8').toString('hex')
    for (const mode of ['into', 'whole', 'string', 'text']) assert.equal(hooks.readStrings(mode, [s]).bytes[0], expected, mode)
  }
  assert.deepEqual(countTokensBatch([latin1.slice(0, 5000)]), [countTokens(latin1.slice(0, 5000))])
})

test('public entry points agree with the readers: token counts, files, canonical JSON, redaction', (t) => {
  const dir = tempDir(t)
  const strings = corpus().filter((s) => s.length < 20000)
  const file = join(dir, 'f')
  const counts = countTokensBatch(strings)
  strings.forEach((s, i) => {
    const what = `length ${s.length} (${describe(s)})`
    assert.equal(counts[i], countTokens(s), what)
    const replaced = Buffer.from(s, 'utf8').toString('utf8')
    if (i % 7 === 0) assert.equal(redact(s).text, replaced, what)
    if (hasLoneSurrogate(s)) {
      assert.throws(() => core.writeFileAtomicSync(file, s), code('E_INVALID_ARGUMENT'), what)
      assert.throws(() => canonicalizeJson(s), code('E_INVALID_ARGUMENT'), what)
    } else if (i % 3 === 0) {
      core.writeFileAtomicSync(file, s)
      assert.deepEqual(readFileSync(file), Buffer.from(s, 'utf8'), what)
      assert.equal(canonicalizeJson(s), JSON.stringify(s), what)
    }
  })
})

test('lone surrogates: refused where stored, named as a file, hashed or signed (regression)', async (t) => {
  const dir = tempDir(t)
  const lone = 'note \uD800 here'
  const wal = core.Wal.open(join(dir, 'wal'), { sessionId: 's' })
  t.after(() => wal.close())
  for (const record of [
    { op: 'write', path: 'a.md', data: lone },
    { op: `write${'\uDC00'}`, path: 'a.md' },
    { op: 'write', path: `a${'\uD800'}.md`, data: 'x' },
    { op: 'write', path: 'a.md', meta: { note: lone } },
    { op: 'write', path: 'a.md', meta: { [lone]: 1 } },
  ]) {
    assert.throws(() => wal.appendSync(record), code('E_INVALID_ARGUMENT'))
    await assert.rejects(wal.append(record), code('E_INVALID_ARGUMENT'))
  }
  assert.equal(wal.replay().length, 0, 'nothing was stored')

  const store = core.MemoryStore.open({ workspaceDir: dir, sessionId: 's2' })
  t.after(() => store.close())
  for (const entry of [
    { type: 'learning', content: `The limit is 100 rps ${lone}` },
    { type: 'learning', content: 'The limit is 100 rps', tags: [lone] },
    { type: 'learning', content: 'The limit is 100 rps', agentId: lone },
    { type: 'learning', content: 'The limit is 100 rps', metadata: { [lone]: 'x' } },
  ]) {
    await assert.rejects(store.capture(entry), code('E_INVALID_ARGUMENT'))
    assert.throws(() => store.captureSync(entry), code('E_INVALID_ARGUMENT'))
  }
  assert.throws(() => core.writeFileAtomicSync(join(dir, 'f'), lone), code('E_INVALID_ARGUMENT'))
  await assert.rejects(core.writeFileAtomic(join(dir, 'f'), lone), code('E_INVALID_ARGUMENT'))
  assert.throws(() => core.writeFileAtomicSync(join(dir, `f${'\uD800'}`), 'x'), code('E_INVALID_ARGUMENT'))
  assert.throws(() => canonicalizeJsonText(`"${lone}"`), code('E_INVALID_ARGUMENT'))
  const log = core.AuditLog.open(join(dir, 'audit'))
  assert.throws(() => log.append({ action: lone, actor: 'system' }), code('E_INVALID_ARGUMENT'))
  assert.throws(() => log.append({ action: 'a', actor: 'system', details: { [lone]: 1 } }), code('E_INVALID_ARGUMENT'))
  const ring = core.KeyRing.open(join(dir, 'keys'), { useEnv: false })
  const { keyId } = ring.generate()
  assert.throws(() => ring.revoke(keyId, lone), code('E_INVALID_ARGUMENT'))
  assert.equal(ring.list()[0].status, 'active', 'nothing was revoked')
})

test('redact: a text without findings comes back as given in every script; a lone surrogate still as U+FFFD', () => {
  // Without findings the result is the caller's own string when nothing was replaced in reading
  // it; a text holding a lone surrogate must still come back with U+FFFD in its place.
  for (const s of ['plain words only', '\u250c\u2500\u2500\u2510 box \u2502 drawing', 'Gr\u00fc\u00dfe aus \u6771\u4eac \ud83d\ude42', 'a real \ufffd stays', '']) {
    const r = redact(s)
    assert.equal(r.text, s)
    assert.deepEqual(r.findings, [])
  }
  assert.equal(redact('x \uD800 y \u2502').text, 'x \uFFFD y \u2502')
  assert.equal(redact('x \uDC00\uFFFD y').text, 'x \uFFFD\uFFFD y')
  assert.equal(redact('\u2502 \uD83D').text, '\u2502 \uFFFD')
})

test('lone surrogates: read as U+FFFD where text is only counted, redacted or gated', async () => {
  const lone = 'mail bob@example.com \uD800 now'
  const replaced = 'mail bob@example.com \uFFFD now'
  assert.equal(countTokens(lone), countTokens(replaced))
  assert.deepEqual(countTokensBatch([lone]), [countTokens(replaced)])
  assert.equal(estimateTokens(lone), estimateTokens(replaced))
  assert.deepEqual(redact(lone), redact(replaced))
  assert.deepEqual(await redactAsync(lone), redact(replaced))
  assert.deepEqual(redactBatch([lone]), [redact(replaced)])
  assert.equal(redact(lone).findings[0].end, lone.indexOf(' \uD800'), 'offsets are the JS string\'s')
  assert.equal(contentHash(lone), contentHash(replaced))
  assert.equal(core.evaluateGates({ content: `Always use the staging API ${'\uDC00'}` }).pass, true)
})
