// redact() from JavaScript: the shared regression file, UTF-16 offsets around astral characters,
// options, batch/async twins, coded errors, the CLI, and a property test that a planted secret
// never survives. Failure messages name cases, never the (fake) secrets in them.
import test from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { setFlagsFromString } from 'node:v8'
import { join } from 'node:path'
import { core, fixture, runCli, startChild, root, tempDir, WATCHDOG_MS } from './helpers.mjs'

const { redact, redactAsync, redactBatch, redactionKinds, isLoaError } = core
const KEY = Buffer.from('test-key')
// `gc()` for the test that checks external strings survive (and are freed by) collections.
setFlagsFromString('--expose-gc')
const { cases } = JSON.parse(readFileSync(fixture('redact-regressions.json'), 'utf8'))
// Fake secrets live in fixture files, not in test sources.
const samples = JSON.parse(readFileSync(fixture('redact-samples.json'), 'utf8'))

test('regression file: every case redacts what it must and keeps what it must', () => {
  const failures = []
  for (const c of cases) {
    const r = redact(c.text, { key: KEY, allowlist: c.allowlist ?? [] })
    for (const [kind, value] of c.redact ?? []) {
      const start = c.text.indexOf(value)
      const end = start + value.length
      if (r.text.includes(value)) failures.push(`${c.name}: a ${kind} value survived`)
      if (!r.findings.some((f) => f.start <= start && f.end >= end && (kind === '*' || f.kind === kind))) {
        failures.push(`${c.name}: no ${kind} finding covers it (${r.findings.map((f) => f.kind).join(',')})`)
      }
      if (value.length >= 8 && JSON.stringify(r.findings).includes(value.slice(0, 8))) failures.push(`${c.name}: a finding holds a prefix`)
    }
    for (const [i, keep] of (c.keep ?? []).entries()) if (!r.text.includes(keep)) failures.push(`${c.name}: keep #${i} was redacted`)
    if (c.blocked !== undefined && r.blocked !== c.blocked) failures.push(`${c.name}: blocked should be ${c.blocked}`)
  }
  assert.ok(failures.length === 0, failures.join('\n'))
})

test('offsets are UTF-16 indices: input.slice(start, end) is the value, around emoji and CJK', () => {
  const text = '😀 日本語 é mail bob@example.com, ☎ +44 20 7946 0958 🎉 done'
  const r = redact(text, { key: KEY })
  assert.deepEqual(
    r.findings.map((f) => [f.kind, text.slice(f.start, f.end)]),
    [
      ['email', 'bob@example.com'],
      ['phone', '+44 20 7946 0958'],
    ],
  )
  assert.equal(r.text, '😀 日本語 é mail [REDACTED:EMAIL], ☎ [REDACTED:PHONE] 🎉 done')
  for (const f of r.findings) {
    assert.equal(f.method, 'pattern')
    assert.match(f.fingerprint, /^[0-9a-f]{16}$/)
  }
})

test('fingerprints are keyed; pseudonyms are stable per value; the allowlist keeps exact values', () => {
  const a = redact('x bob@example.com', { key: KEY }).findings[0].fingerprint
  assert.equal(redact('other text bob@example.com', { key: 'test-key' }).findings[0].fingerprint, a) // string key = its UTF-8
  assert.equal(redact('bob@example.com', { key: new Uint8Array(KEY) }).findings[0].fingerprint, a)
  assert.notEqual(redact('bob@example.com', { key: Buffer.from('other') }).findings[0].fingerprint, a)
  const p = redact('bob@example.com met amy@example.org; bob@example.com left', { key: KEY, pseudonymize: true }).text
  const names = p.match(/\[EMAIL_[0-9a-f]{8}\]/g)
  assert.equal(names.length, 3)
  assert.equal(names[0], names[2])
  assert.notEqual(names[0], names[1])
  const kept = redact('write to security@acme.test or bob@acme.test', { allowlist: ['security@acme.test'] }).text
  assert.equal(kept, 'write to security@acme.test or [REDACTED:EMAIL]')
})

test('private keys block the text; public blocks do not', () => {
  const body = samples.pem_body
  const r = redact(`key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n${body}-----END OPENSSH PRIVATE KEY-----\nthanks`)
  assert.equal(r.blocked, true)
  assert.ok(r.text === 'key:\n[REDACTED:PRIVATE_KEY]\nthanks', 'the whole key block is replaced')
  const pub = redact(`-----BEGIN PUBLIC KEY-----\n${body}-----END PUBLIC KEY-----`)
  assert.equal(pub.blocked, false)
  assert.equal(pub.findings.length, 0)
})

test('redactBatch and redactAsync give the same results as redact', async () => {
  const texts = cases.map((c) => c.text)
  const one = texts.map((t) => redact(t, { key: KEY }))
  assert.deepEqual(redactBatch(texts, { key: KEY }), one)
  assert.deepEqual(await redactAsync(texts[0], { key: KEY }), one[0])
  assert.deepEqual(redactBatch([]), [])
  assert.deepEqual(redact(''), { text: '', findings: [], blocked: false })
})

test('large texts (split over threads; ASCII output handed to V8 uncopied): findings rebuild the text, also after GC', async () => {
  // Rebuilds the redacted text from the input and the findings: checks UTF-16 offsets across
  // the pieces and the text V8 holds. Messages never show the texts (they hold fake secrets).
  const rebuild = (input, findings) => {
    let out = ''
    let at = 0
    for (const f of findings) {
      out += input.slice(at, f.start) + `[REDACTED:${f.kind.toUpperCase()}]`
      at = f.end
    }
    return out + input.slice(at)
  }
  const ascii = cases.map((c) => c.text).filter((t) => /^[\x00-\x7f]*$/.test(t)).join('\n') + '\n'
  const mixed = `😀 naïve café ${ascii}`
  const gc = (await import('node:vm')).runInNewContext('gc', {}, { breakOnSigint: false })
  for (const [name, block] of [['ascii', ascii], ['mixed', mixed]]) {
    const input = block.repeat(Math.ceil((1.5 * 2 ** 20) / block.length))
    const r = redact(input, { key: KEY })
    const one = redact(block, { key: KEY }).findings.length
    assert.ok(r.findings.length >= one, `${name}: findings`)
    assert.ok(r.text === rebuild(input, r.findings), `${name}: the findings do not rebuild the text`)
    // Results that die must free their buffers; results that live must keep them.
    for (let i = 0; i < 3; i++) redact(input, { key: KEY })
    const garbage = []
    for (let i = 0; i < 1e5; i++) garbage.push({ i, s: `x${i}` })
    gc()
    assert.ok(r.text === rebuild(input, r.findings), `${name}: the text changed after GC`)
    assert.ok(r.text.length > 0 && garbage.length > 0)
    assert.deepEqual(await redactAsync(input, { key: KEY }), r, `${name}: redactAsync`)
    assert.deepEqual(redactBatch([block, input], { key: KEY })[1], r, `${name}: redactBatch`)
  }
})

test('every kind reported is listed by redactionKinds()', () => {
  const kinds = new Set(redactionKinds())
  for (const c of cases) for (const f of redact(c.text).findings) assert.ok(kinds.has(f.kind), f.kind)
})

test('bad arguments are E_INVALID_ARGUMENT naming the argument (sync throws, async rejects)', async () => {
  const bad = [
    [() => redact(42), '`text`'],
    [() => redact('x', 'opts'), '`options`'],
    [() => redact('x', { allowlist: 'a' }), '`allowlist`'],
    [() => redact('x', { allowlist: ['a', 1] }), '`allowlist[1]`'],
    [() => redact('x', { key: 5 }), '`key`'],
    [() => redact('x', { key: '' }), '`key`'],
    [() => redact('x', { pseudonymize: 'yes' }), '`pseudonymize`'],
    [() => redactBatch('x'), '`texts`'],
    [() => redactBatch(['a', null]), '`texts[1]`'],
  ]
  for (const [fn, name] of bad) {
    assert.throws(fn, (err) => isLoaError(err) && err.code === 'E_INVALID_ARGUMENT' && err.message.includes(name), name)
  }
  await assert.rejects(redactAsync(null), (err) => isLoaError(err) && err.code === 'E_INVALID_ARGUMENT')
})

test('loa redact: file and stdin, --json findings without values, --check exit code', async (t) => {
  const dir = tempDir(t)
  const file = join(dir, 'note.txt')
  writeFileSync(file, `ping bob@example.com\nDB_PASSWORD=${samples.password}\n`)
  const out = await runCli(['redact', file])
  assert.equal(out.code, 0, out.stderr)
  assert.ok(out.stdout === 'ping [REDACTED:EMAIL]\nDB_PASSWORD=[REDACTED:PASSWORD]', 'loa redact prints the redacted text')
  const json = await runCli(['redact', file, '--json'])
  const parsed = JSON.parse(json.stdout)
  assert.deepEqual(
    parsed.findings.map((f) => f.kind),
    ['email', 'password'],
  )
  assert.ok(!json.stdout.includes(samples.password.slice(0, 5)) && !json.stdout.includes('bob@'))
  assert.equal((await runCli(['redact', file, '--check'])).code, 1)
  const clean = join(dir, 'clean.txt')
  writeFileSync(clean, 'nothing to see, build 1.2.3 at 2024-01-15\n')
  assert.equal((await runCli(['redact', clean, '--check'])).code, 0)
  // stdin
  const child = startChild(process.execPath, [join(root, 'bin', 'loa'), 'redact', '-'], { stdio: ['pipe', 'pipe', 'pipe'] })
  child.child.stdin.end(`card ${samples.card}\n`)
  await child.exited
  assert.equal(child.exit.code, 0)
  assert.ok(child.lines.length === 1 && child.lines[0] === 'card [REDACTED:CREDIT_CARD]', 'stdin is redacted')
})

test('text ending in a keyword returns (redact, redactBatch, redactAsync, loa redact): a hang fails, it does not block', async () => {
  // Issue 11, item 1: these never returned. They run in child processes that a watchdog kills
  // (after minutes: a loaded machine is slow, not hung), so that a hang fails this test instead
  // of blocking the suite (and a libuv thread).
  const inputs = ['Bearer', 'bearer', 'Bearer ', 'Bearer   ', 'token: key', 'token: key ', 'Authorization: Basic', 'api_key: bot',
    'Authorization: Bearer \t', 'x bearer\t', 'curl -u ', 'password = ', '--password ', '-----BEGIN', 'eyJ']
  const script = `
    const { redact, redactBatch, redactAsync } = require(${JSON.stringify(join(root, 'index.js'))})
    const inputs = JSON.parse(process.argv[1])
    for (const t of inputs) redact(t)
    redactBatch(inputs)
    Promise.all(inputs.map((t) => redactAsync(t))).then(() => console.log('ok'))
  `
  const run = async (command, args, stdin) => {
    const child = startChild(command, args, { stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] })
    if (stdin !== undefined) child.child.stdin.end(stdin)
    const timer = setTimeout(() => child.child.kill('SIGKILL'), WATCHDOG_MS)
    await child.exited
    clearTimeout(timer)
    return child
  }
  const api = await run(process.execPath, ['-e', script, JSON.stringify(inputs)])
  assert.deepEqual(api.exit, { code: 0, signal: null }, `killed by the watchdog, or failed: ${api.stderr}`)
  assert.deepEqual(api.lines, ['ok'])
  for (const input of ['Authorization: Bearer', 'token: key ']) {
    const cli = await run(process.execPath, [join(root, 'bin', 'loa'), 'redact', '-'], input)
    assert.deepEqual(cli.exit, { code: 0, signal: null }, `loa redact: killed by the watchdog, or failed: ${cli.stderr}`)
  }
})

// ---------------------------------------------------------------------------------------------
// Property: a planted secret never survives, whatever surrounds it (deterministic seed).

function rng(seed) {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let x = Math.imul(s ^ (s >>> 15), 1 | s)
    x ^= x + Math.imul(x ^ (x >>> 7), 61 | x)
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

test('property: planted secrets never survive and their UTF-16 range is always covered', () => {
  const rand = rng(0xc0ffee)
  const pick = (xs) => xs[Math.floor(rand() * xs.length)]
  const chars = (alphabet, n) => Array.from({ length: n }, () => pick(alphabet)).join('')
  const AL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
  const luhn = (prefix, len) => {
    const body = prefix + chars('0123456789', len - prefix.length - 1)
    for (let c = 0; c < 10; c++) {
      const s = body + c
      const sum = [...s].reverse().reduce((a, ch, i) => {
        let v = Number(ch)
        if (i % 2) v = v * 2 > 9 ? v * 2 - 9 : v * 2
        return a + v
      }, 0)
      if (sum % 10 === 0) return s
    }
  }
  const gens = [
    () => ['{}', `ghp_${chars(AL, 36)}`],
    () => ['{}', `AKIA${chars('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 16)}`],
    () => ['{}', `xoxb-${chars('0123456789', 11)}-${chars('0123456789', 12)}-${chars(AL, 24)}`],
    () => ['{}', `sk-ant-api03-${chars(AL, 93)}AA`],
    () => ['{}', `eyJ${chars(AL, 24)}.eyJ${chars(AL, 40)}.${chars(AL, 43)}`],
    () => ['{}', `${chars('abcdefgh', 6)}@${chars('ijklmnop', 7)}.org`],
    () => ['{}', luhn('5', 16)],
    () => ['{}', `+33 1 ${chars('0123456789', 2)} ${chars('0123456789', 2)} ${chars('0123456789', 2)} ${chars('0123456789', 2)}`],
    () => ['{}', `2001:db8:${chars('0123456789abcdef', 4)}::${1 + Math.floor(rand() * 9)}`],
    () => [pick(['password: "{}"', 'PASSWORD={}', '--password {}']), `${chars(AL, 10)}#${chars('0123456789', 3)}`],
    () => [pick(['api_key = "{}"', 'client_secret: {}', 'Authorization: Bearer {}']), chars(AL, 32)],
    () => ['mysql://app:{}@db.internal/prod', `${chars(AL, 12)}9`],
  ]
  const fill = ['😀', '日本語', 'é', 'the', 'memory', '2024-01-15', 'v1.2.3', '1700000000123', 'a1b2c3d', '→', '🎉🎉', 'ok', '42', '—']
  const before = [' ', '\n', '\t', '"', "'", '(', '[', ': ', ', ', '`']
  const after = [' ', '\n', '\t', '"', "'", ')', ']', ', ', '. ', '`']
  const filler = () => Array.from({ length: Math.floor(rand() * 8) }, () => pick(fill) + pick([' ', '\n', ', '])).join('')
  let failures = 0
  for (let i = 0; i < 1500; i++) {
    const [template, secret] = pick(gens)()
    const pre = filler() + pick(before)
    const text = pre + template.replace('{}', secret) + pick(after) + filler()
    const start = pre.length + template.indexOf('{}')
    const end = start + secret.length
    const r = redact(text, { key: KEY })
    const covered = r.findings.some((f) => f.start <= start && f.end >= end)
    const leaked = r.text.includes(secret) || (secret.length >= 16 && r.text.includes(secret.slice(-8)))
    if (!covered || leaked) failures++
  }
  assert.equal(failures, 0, `${failures} planted secrets survived or were not covered`)
})

test('random tokens holding placeholder words (dummy, example, xxxx, insert, redacted) are still redacted', () => {
  // Issue 11, item 7: a token with a known prefix and shape is a secret whatever letters its
  // random part holds; only a whole value that is a placeholder is one.
  const rand = rng(0x5eed7)
  const pick = (xs) => xs[Math.floor(rand() * xs.length)]
  const AL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
  const chars = (n, alphabet = AL) => Array.from({ length: n }, () => pick(alphabet)).join('')
  // [prefix, random part]: the word goes over a random place of the random part.
  const formats = [
    () => ['ghp_', chars(36)],
    () => ['sk_live_', chars(24)],
    () => ['npm_', chars(36)],
    () => ['glpat-', chars(20)],
    () => [`xoxb-${chars(11, '0123456789')}-${chars(12, '0123456789')}-`, chars(24)],
  ]
  const words = ['dummy', 'example', 'Example', 'xxxx', 'insert', 'redacted', 'REDACTED']
  let survived = 0
  for (let i = 0; i < 2000; i++) {
    const [prefix, body] = pick(formats)()
    const word = pick(words)
    const at = Math.floor(rand() * (body.length - word.length - 1))
    const token = prefix + body.slice(0, at) + word + body.slice(at + word.length)
    const r = redact(`${pick(['', 'token: ', 'export KEY='])}${token} done`, { key: KEY })
    if (r.text.includes(token)) survived++
  }
  assert.equal(survived, 0, `${survived} of 2000 tokens survived`)
})

