// Redaction throughput from JavaScript on one deterministic mixed text (prose, code, logs with
// planted PII and secrets): @loa/core's `redact` against the npm package `redact-pii` and
// against the same pattern list run with JavaScript `RegExp`. Also counts how many of the planted
// items each engine caught. Then the case the targets are set on (4 KiB agent messages, one call
// each, one thread, side by side with redact-pii: MB/s and the ratio), and the MiB/s of
// adversarial inputs built to make a detector search far from each of many triggers, beside
// ordinary text.
//
//   node bench/redact.bench.mjs          full run: 10 MB text, best of 5 rounds
//   node bench/redact.bench.mjs --quick  smoke run: 1 MB text, 1 round
import { mkdirSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { availableParallelism } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { cutMessages, randomTokens, readCorpus, rng as prng } from './lib.mjs'

const require = createRequire(import.meta.url)
const here = dirname(fileURLToPath(import.meta.url))
const core = require('../index.js')
const { redact, redactBatch } = core
const { redactionPatterns } = core[Symbol.for('@loa/core/test-hooks')]

const QUICK = process.argv.includes('--quick')
const SIZE = QUICK ? 1 << 20 : 10 << 20
const ROUNDS = QUICK ? 1 : 5
// redact-pii is slow; it gets the first 1 MiB of the text and its MB/s is measured on that.
const PII_SLICE = QUICK ? 128 << 10 : 1 << 20
const CHUNK = 4096 // a typical agent message

// ---------------------------------------------------------------------------------------------
// Deterministic corpus


function makeCorpus(size) {
  const rand = prng(20261121)
  const pick = (xs) => xs[Math.floor(rand() * xs.length)]
  const int = (n) => Math.floor(rand() * n)
  const chars = (alphabet, n) => {
    let s = ''
    for (let i = 0; i < n; i++) s += alphabet[int(alphabet.length)]
    return s
  }
  const AL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
  const HEX = '0123456789abcdef'
  const D = '0123456789'
  const luhn = (prefix, len) => {
    const body = prefix + chars(D, len - prefix.length - 1)
    for (let c = 0; c < 10; c++) {
      const s = body + c
      let sum = 0
      for (let i = 0; i < s.length; i++) {
        let v = s.charCodeAt(s.length - 1 - i) - 48
        if (i % 2) v = v * 2 > 9 ? v * 2 - 9 : v * 2
        sum += v
      }
      if (sum % 10 === 0) return s
    }
  }
  const iban = () => {
    const bban = chars(D, 18)
    let rem = 0
    for (const c of bban + '131400') rem = (rem * 10 + Number(c)) % 97
    return `DE${String(98 - rem).padStart(2, '0')}${bban}`
  }
  const planted = []
  // Each generator returns [kind, value]; the value is planted verbatim.
  const SECRETS = [
    () => ['email', `${pick(['ana', 'bob', 'chen', 'dmitri', 'eve', 'farah'])}.${chars('abcdefghijklmnop', 5)}@${pick(['example.com', 'mail.test', 'corp.example.org'])}`],
    () => ['phone', pick([`+1 415 555 ${chars(D, 4)}`, `(212) 555-${chars(D, 4)}`, `+44 20 7946 ${chars(D, 4)}`, `+49 30 ${chars(D, 7)}`])],
    () => ['credit_card', pick([luhn('4', 16), luhn('5', 16)])],
    () => ['iban', iban()],
    () => ['us_ssn', `${100 + int(500)}-${10 + int(89)}-${1000 + int(8999)}`],
    () => ['ipv4', `${11 + int(200)}.${int(255)}.${int(255)}.${1 + int(254)}`],
    () => ['ipv6', `2001:db8:${chars(HEX, 4)}::${chars(HEX, 3)}`],
    () => ['aws_access_key_id', `AKIA${chars('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 16)}`],
    () => ['github_token', `ghp_${chars(AL, 36)}`],
    () => ['slack_token', `xoxb-${chars(D, 11)}-${chars(D, 12)}-${chars(AL, 24)}`],
    () => ['stripe_key', `sk_live_${chars(AL, 24)}`],
    () => ['openai_api_key', `sk-proj-${chars(AL, 120)}`],
    () => ['jwt', `eyJ${chars(AL, 20)}.eyJ${chars(AL, 60)}.${chars(AL, 43)}`],
  ]
  const plant = (gen) => {
    const [kind, value] = gen()
    planted.push({ kind, value })
    return value
  }
  const WORDS = (
    'the agent memory session user asked about deploy pipeline config file build test release note team ' +
    'customer invoice report schedule meeting review change request update status error warning retry ' +
    'database cache queue worker service endpoint latency budget context token window summary decision ' +
    'learning milestone plan next step because however therefore while after before during across'
  ).split(' ')
  const sentence = () => {
    const n = 6 + int(14)
    const w = []
    for (let i = 0; i < n; i++) w.push(pick(WORDS))
    w[0] = w[0][0].toUpperCase() + w[0].slice(1)
    return w.join(' ') + pick(['.', '.', '.', '?', '!'])
  }
  const prose = () => {
    const parts = []
    for (let i = 0; i < 3 + int(5); i++) {
      let s = sentence()
      if (rand() < 0.06) s += ` Contact ${plant(SECRETS[0])} or call ${plant(SECRETS[1])}.`
      if (rand() < 0.015) s += ` Card on file ${plant(SECRETS[2])}, IBAN ${plant(SECRETS[3])}.`
      if (rand() < 0.01) s += ` SSN ${plant(SECRETS[4])}.`
      if (rand() < 0.1) s += ` Version 2.${int(20)}.${int(9)} shipped on 2024-0${1 + int(9)}-1${int(9)} (commit ${chars(HEX, 40)}).`
      parts.push(s)
    }
    return parts.join(' ') + '\n\n'
  }
  const code = () => {
    const lines = [
      `import { ${pick(['readFile', 'createServer', 'join'])} } from 'node:${pick(['fs', 'http', 'path'])}'`,
      `const config = loadConfig(process.env.CONFIG_PATH ?? './config/${pick(['dev', 'prod'])}.yaml')`,
      `export async function handle${pick(['Request', 'Event', 'Job'])}(req, res) {`,
      `  const id = '${chars(HEX, 8)}-${chars(HEX, 4)}-4${chars(HEX, 3)}-a${chars(HEX, 3)}-${chars(HEX, 12)}'`,
      `  const timeoutMs = ${1000 * (1 + int(30))}; let retries = ${int(5)}`,
      `  for (let i = 0; i < items.length; i++) total += items[i].price * items[i].quantity`,
      `  if (!res.ok) throw new Error(\`request failed: \${res.status}\`)`,
      `  return { ok: true, elapsedMs: Date.now() - started, path: '/srv/app/releases/${int(99)}/index.js' }`,
      '}',
    ]
    if (rand() < 0.3) lines.splice(2, 0, `const ${pick(['GITHUB_TOKEN', 'SLACK_BOT_TOKEN', 'STRIPE_KEY', 'AWS_KEY_ID', 'OPENAI_API_KEY'])} = '${plant(pick(SECRETS.slice(7, 12)))}'`)
    if (rand() < 0.08) lines.push(`DATABASE_URL=postgres://app:${plant(() => ['url_credentials', chars(AL, 16)])}@db.internal:5432/app`)
    if (rand() < 0.08) lines.push(`password: "${plant(() => ['password', chars(AL, 10) + '!' + chars(D, 2)])}"`)
    if (rand() < 0.05) lines.push(`headers: { Authorization: 'Bearer ${plant(SECRETS[12])}' }`)
    return lines.join('\n') + '\n\n'
  }
  const logs = () => {
    const out = []
    for (let i = 0; i < 8 + int(8); i++) {
      const ts = `2024-11-${10 + int(20)}T${10 + int(13)}:${10 + int(49)}:${10 + int(49)}.${100 + int(899)}Z`
      let line = `${ts} ${pick(['INFO', 'INFO', 'WARN', 'DEBUG', 'ERROR'])} [${pick(['api', 'worker', 'scheduler'])}] req=${chars(HEX, 16)} took ${int(900)}ms status=${pick([200, 200, 201, 404, 500])}`
      if (rand() < 0.06) line += ` client=${plant(SECRETS[5])}`
      if (rand() < 0.01) line += ` peer=${plant(SECRETS[6])}`
      if (rand() < 0.02) line += ` user=${plant(SECRETS[0])}`
      if (rand() < 0.01) line += ` auth=${plant(pick(SECRETS.slice(7, 13)))}`
      line += ` ts_ms=${1700000000000 + int(1e9)}`
      out.push(line)
    }
    return out.join('\n') + '\n\n'
  }
  let text = ''
  while (text.length < size) text += pick([prose, prose, code, logs])()
  return { text, planted }
}

// ---------------------------------------------------------------------------------------------
// JavaScript RegExp baseline: the provider patterns exported by the core, plus regex forms of
// the hand-written detectors with the same checksums; every regex runs over the whole text,
// then spans are merged and replaced, as the core does.

const luhnOk = (s) => {
  const d = s.replace(/\D/g, '')
  if (d.length < 13 || d.length > 19) return false
  let sum = 0
  for (let i = 0; i < d.length; i++) {
    let v = d.charCodeAt(d.length - 1 - i) - 48
    if (i % 2) v = v * 2 > 9 ? v * 2 - 9 : v * 2
    sum += v
  }
  return sum % 10 === 0
}
const mod97Ok = (s) => {
  const c = s.replace(/[ -]/g, '')
  let rem = 0
  for (const ch of c.slice(4) + c.slice(0, 4)) {
    const v = ch >= 'A' ? String(ch.charCodeAt(0) - 55) : ch
    for (const digit of v) rem = (rem * 10 + Number(digit)) % 97
  }
  return rem === 1
}
const ssnOk = (s) => !/^(000|666|9)/.test(s) && !/^\d{3}-00-/.test(s) && !s.endsWith('0000')
const entropyOk = (s) => {
  const counts = new Map()
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1)
  let h = 0
  for (const c of counts.values()) h -= (c / s.length) * Math.log2(c / s.length)
  return h >= 4.3 && /\d/.test(s) && /[a-z]/.test(s) && /[A-Z]/.test(s)
}
const JS_PATTERNS = [
  ['email', /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g],
  ['phone', /(?:\+\d{1,3}[ .-]?)(?:\(\d{1,4}\)[ .-]?)?\d{1,5}(?:[ .-]\d{2,5}){1,4}|\(\d{3}\) ?\d{3}-\d{4}|\b\d{3}[.-]\d{3}[.-]\d{4}\b/g],
  ['credit_card', /\b(?:\d{4}[ -]?){3}\d{1,7}\b|\b\d{13,19}\b/g, luhnOk],
  ['us_ssn', /\b\d{3}-\d{2}-\d{4}\b/g, ssnOk],
  ['iban', /\b[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]{4}){2,7}(?:[ -]?[A-Z0-9]{1,4})?\b/g, mod97Ok],
  ['ipv4', /\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b/g],
  ['ipv6', /(?<![\w:])(?:[0-9a-fA-F]{1,4}:){1,7}:?(?:[0-9a-fA-F]{1,4})?(?:::?[0-9a-fA-F]{1,4}){0,6}(?![\w:])/g, (s) => s.split(':').length > 2 && /\d/.test(s)],
  ['jwt', /\beyJ[A-Za-z0-9_-]{10,}\.ey[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*/g],
  ['private_key', /-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|$)/g],
  ['url_credentials', /[a-z][a-z0-9+.-]*:\/\/[^\s:@/]+:[^\s@/]+@/gi],
  ['password', /(?:passw(?:or)?d|pwd|secret|token|api[_-]?key)["']?\s*[:=]\s*["']?[^\s"',;]{4,}/gi],
  ['secret', /\bBearer\s+[A-Za-z0-9._~+/-]{8,}=*/g],
  ['high_entropy', /[A-Za-z0-9+/_-]{32,64}/g, entropyOk],
]

function jsRedact(text, providerPatterns) {
  const spans = []
  for (const [kind, re, check] of [...providerPatterns, ...JS_PATTERNS]) {
    re.lastIndex = 0
    for (const m of text.matchAll(re)) {
      if (!check || check(m[0])) spans.push([m.index, m.index + m[0].length, kind])
    }
  }
  spans.sort((a, b) => a[0] - b[0] || b[1] - a[1])
  let out = ''
  let at = 0
  let last = null
  const findings = []
  for (const s of spans) {
    if (last && s[0] < last[1]) {
      last[1] = Math.max(last[1], s[1])
      continue
    }
    last = [s[0], s[1], s[2]]
    findings.push(last)
  }
  for (const [s, e, kind] of findings) {
    out += text.slice(at, s) + `[REDACTED:${kind.toUpperCase()}]`
    at = e
  }
  return { text: out + text.slice(at), findings }
}

// ---------------------------------------------------------------------------------------------

function loadRedactPii() {
  // bench/node_modules (`npm run bench` installs the peers there), else the repository's.
  for (const from of [here, join(here, '..')]) {
    try {
      const { SyncRedactor } = createRequire(join(from, 'noop.js'))('redact-pii')
      return { redactor: new SyncRedactor(), from }
    } catch {
      // try the next place
    }
  }
  return null
}

function measure(fn, rounds) {
  let best = Infinity
  let result
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now()
    result = fn()
    best = Math.min(best, performance.now() - t0)
  }
  return { ms: best, result }
}

const caught = (out, planted) => planted.filter((p) => !out.includes(p.value)).length

const { text, planted } = makeCorpus(SIZE)
if (process.env.LOA_BENCH_DUMP) writeFileSync(process.env.LOA_BENCH_DUMP, text) // for profiling
const bytes = Buffer.byteLength(text)
const mb = bytes / (1 << 20)
const chunks = []
for (let i = 0; i < text.length; i += CHUNK) chunks.push(text.slice(i, i + CHUNK))
// Values cut in two by a message boundary, or cut off from what makes them recognisable (the
// `password:` before, the `@host` after), cannot be found by any engine working per message:
// count only values with 24 bytes of their line on both sides inside the same message.
let cursor = 0
const whole = planted.filter((p) => {
  const at = text.indexOf(p.value, cursor)
  if (at < 0) return false
  cursor = at
  return Math.floor((at - 24) / CHUNK) === Math.floor((at + p.value.length + 24) / CHUNK)
})
const providers = redactionPatterns().map((p) => [p.kind, new RegExp(p.source, p.flags)])
redact(text.slice(0, 100_000)) // warm-up: compiles every lazily built rule

const rows = []
const add = (name, input, ms, out, findings, plantedIn) =>
  rows.push({ name, input, ms, mbps: input / (1 << 20) / (ms / 1000), findings, caught: caught(out, plantedIn), planted: plantedIn.length })

{
  const { ms, result } = measure(() => redact(text), ROUNDS)
  add('@loa/core redact (whole text, one call)', bytes, ms, result.text, result.findings.length, planted)
}
{
  const { ms, result } = measure(() => redactBatch(chunks), ROUNDS)
  const out = result.map((r) => r.text).join('')
  add(`@loa/core redactBatch (${CHUNK / 1024} KiB messages)`, bytes, ms, out, result.reduce((a, r) => a + r.findings.length, 0), whole)
}
{
  const { ms, result } = measure(() => chunks.map((c) => redact(c)), ROUNDS)
  add(`@loa/core redact per ${CHUNK / 1024} KiB message`, bytes, ms, result.map((r) => r.text).join(''), result.reduce((a, r) => a + r.findings.length, 0), whole)
}
{
  const { ms, result } = measure(() => jsRedact(text, providers), Math.min(ROUNDS, 3))
  add('same pattern list, JavaScript RegExp', bytes, ms, result.text, result.findings.length, planted)
}
const pii = loadRedactPii()
if (pii) {
  const slice = text.slice(0, PII_SLICE)
  const inSlice = planted.filter((p) => slice.includes(p.value))
  pii.redactor.redact(slice.slice(0, 32 << 10)) // warm-up (JIT), as for the others
  const { ms, result } = measure(() => pii.redactor.redact(slice), QUICK ? 1 : 3)
  add(`redact-pii 3.x SyncRedactor (first ${PII_SLICE >> 10} KiB)`, Buffer.byteLength(slice), ms, result, null, inSlice)
}

// ---------------------------------------------------------------------------------------------
// The agent-message case the targets are set on: 4 KiB messages, one `redact` call each, one
// thread (a 4 KiB text is never split), against redact-pii on the very same messages. The two
// are measured side by side: each round times both, and the median round counts (for each
// engine, and for the ratio of the two within a round). Time is the process's CPU time: on a
// machine shared with other work, wall time measures the neighbours (this single-threaded work
// gets a varying share of a core), CPU time the work itself; wall time is shown beside it.

const MESSAGES = QUICK ? 64 : 256 // 256 KiB / 1 MiB of messages
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

// Times `redact` (several passes a round, so that a round of @loa/core is not a few ms) and
// redact-pii (one pass) over the same messages, round after round; medians of CPU time.
function sideBySide(msgs, rounds) {
  const bytes = msgs.reduce((a, c) => a + Buffer.byteLength(c), 0)
  const passes = Math.max(5, Math.ceil((1 << 20) / bytes))
  const timed = (n, fn) => {
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    for (let k = 0; k < n; k++) fn()
    const wall = (performance.now() - t0) / n
    const c = process.cpuUsage(c0)
    return { cpu: (c.user + c.system) / 1000 / n, wall }
  }
  const loaRound = () =>
    timed(passes, () => {
      for (const m of msgs) redact(m)
    })
  const piiRound = pii
    ? () =>
        timed(1, () => {
          for (const m of msgs) pii.redactor.redact(m)
        })
    : null
  loaRound() // warm-up
  if (piiRound) piiRound()
  const mibps = (ms) => bytes / (1 << 20) / (ms / 1000)
  const rs = []
  for (let i = 0; i < rounds; i++) rs.push({ loa: loaRound(), pii: piiRound ? piiRound() : null })
  const loaCpu = median(rs.map((r) => r.loa.cpu))
  return {
    bytes,
    loa: mibps(loaCpu),
    loaWall: mibps(Math.min(...rs.map((r) => r.loa.wall))),
    pii: piiRound ? mibps(median(rs.map((r) => r.pii.cpu))) : null,
    piiWall: piiRound ? mibps(Math.min(...rs.map((r) => r.pii.wall))) : null,
    ratio: piiRound ? median(rs.map((r) => r.pii.cpu / r.loa.cpu)) : null,
    perCallUs: (loaCpu * 1000) / msgs.length,
    rounds: rs.length,
  }
}

const messages = chunks.slice(0, MESSAGES)
const messageBytes = messages.reduce((a, c) => a + Buffer.byteLength(c), 0)
const agent = sideBySide(messages, QUICK ? 3 : 9)

// ---------------------------------------------------------------------------------------------
// The same case on text this benchmark did not write: the project's seed documents (markdown,
// YAML, code, tables), recorded GitHub API responses (JSON, as tool calls return them) and
// server logs of open-source test fixtures (testdata/bench/README.md gives sources and
// licences). Each corpus is its files one after another, cut into 4 KiB messages (never inside
// a surrogate pair).

const cut4k = (s) => cutMessages(s, CHUNK)
const CORPORA = [
  ['seed documents (markdown, YAML, code, tables)', 'seeds/documents', '.txt'],
  ['GitHub API responses (JSON)', 'bench/json', '.json'],
  ['server logs (syslog, nginx, kafka, postgres, ...)', 'bench/logs', '.log'],
]
const corpora = []
for (const [name, dir, ext] of CORPORA) {
  const msgs = cut4k(readCorpus(dir, ext))
  const findings = msgs.reduce((a, m) => a + redact(m).findings.length, 0)
  corpora.push({ name, messages: msgs.length, findings, ...sideBySide(msgs, QUICK ? 3 : 9) })
}

// ---------------------------------------------------------------------------------------------
// Adversarial inputs: each repeats what used to make one detector restart a search from every
// candidate (quadratic time), or look far around each. Time must stay linear: the MiB/s here
// should be of the order of ordinary text's.

const ADV_SIZE = QUICK ? 256 << 10 : 1 << 20
const repeatTo = (unit, size) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size) + '\nend.\n'
const certBody = (() => {
  const rand = prng(7)
  const AL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
  let s = ''
  for (let i = 0; i < 64; i++) s += AL[Math.floor(rand() * AL.length)]
  return s
})()
const ADVERSARIAL = [
  ['ordinary text (the corpus above)', () => text.slice(0, ADV_SIZE)],
  ['`-----BEGIN ` repeated', () => repeatTo('-----BEGIN ', ADV_SIZE)],
  ['small certificate blocks', () => repeatTo(`-----BEGIN CERTIFICATE-----\n${certBody}\n-----END CERTIFICATE-----\n`, ADV_SIZE / 2)],
  ['`-----BEGIN PRIVATE KEY-----` repeated', () => repeatTo('-----BEGIN PRIVATE KEY-----', ADV_SIZE)],
  ['`curl -u ` repeated', () => repeatTo('curl -u ', ADV_SIZE)],
  ['`curl` then `-u a:b ` repeated, one line', () => 'curl ' + repeatTo('-u a:b ', ADV_SIZE)],
  ['`PuTTY-User-Key-File-2: ` repeated', () => repeatTo('PuTTY-User-Key-File-2: ', ADV_SIZE)],
  ['`Bearer ` repeated', () => repeatTo('Bearer ', ADV_SIZE)],
  ['`key=` repeated (assignment chains)', () => repeatTo('key=', ADV_SIZE)],
  ['`token: key ` repeated', () => repeatTo('token: key ', ADV_SIZE)],
  ['`eyJ-` repeated (JWT starts)', () => repeatTo('eyJ-', ADV_SIZE)],
  ['`glpat-` repeated (one long token run)', () => repeatTo('glpat-', ADV_SIZE)],
  ['`a://b@` repeated (URL credentials)', () => repeatTo('a://b@', ADV_SIZE)],
  ['`x@y.` repeated (e-mail)', () => repeatTo(':x@y.', ADV_SIZE)],
  ['`1-` repeated (number groups)', () => repeatTo('1-', ADV_SIZE)],
  ['`::` repeated (IPv6)', () => repeatTo('1:', ADV_SIZE)],
  ['random tokens, no spaces', () => randomTokens(ADV_SIZE)],
]
// Each input is timed in one call (split over threads past 512 KiB, as ordinary text is) and as
// 4 KiB messages on one thread (CPU time), each against ordinary text measured the same way.
const cpuMs = (fn) => {
  const c0 = process.cpuUsage()
  fn()
  const c = process.cpuUsage(c0)
  return (c.user + c.system) / 1000
}
const adversarial = []
for (const [name, make] of ADVERSARIAL) {
  const input = make()
  const size = Buffer.byteLength(input)
  redact(input.slice(0, 4096))
  const { ms } = measure(() => redact(input), QUICK ? 1 : 3)
  const msgs = cut4k(input)
  let best = Infinity
  for (let i = 0; i < (QUICK ? 1 : 3); i++) {
    best = Math.min(
      best,
      cpuMs(() => {
        for (const m of msgs) redact(m)
      }),
    )
  }
  adversarial.push({ name, size, ms, mbps: size / (1 << 20) / (ms / 1000), mbps4k: size / (1 << 20) / (best / 1000) })
}
const ordinary = adversarial[0]
for (const a of adversarial) {
  a.slow = ordinary.mbps / a.mbps
  a.slow4k = ordinary.mbps4k / a.mbps4k
}

const fmt = (n, d = 1) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d })
const lines = []
lines.push(
  `Text: ${fmt(mb)} MiB of prose, code and logs (deterministic), ${planted.length.toLocaleString('en-US')} planted values; ` +
    `best of ${ROUNDS} round(s) after a warm-up (redact-pii: best of ${QUICK ? 1 : 3}); Node ${process.version}, ` +
    `${availableParallelism()} CPU(s).`,
)
lines.push('')
lines.push('| engine | input | time ms | MiB/s | findings | planted values removed |')
lines.push('|---|---:|---:|---:|---:|---:|')
for (const r of rows) {
  lines.push(`| ${r.name} | ${fmt(r.input / (1 << 20), 2)} MiB | ${fmt(r.ms)} | ${fmt(r.mbps)} | ${r.findings === null ? '-' : r.findings.toLocaleString('en-US')} | ${r.caught}/${r.planted} |`)
}
const loa = rows[0]
const js = rows.find((r) => r.name.startsWith('same pattern'))
lines.push('')
lines.push(
  `Agent messages: ${messages.length} messages of 4 KiB (${fmt(messageBytes / (1 << 20), 2)} MiB), one \`redact\` call each, ` +
    `one thread, side by side with redact-pii on the same messages (median of ${agent.rounds} rounds that time both, in CPU time; ` +
    'wall time: best round):',
)
lines.push('')
lines.push('| engine | MiB/s (CPU time) | MB/s (CPU time) | MiB/s (wall, best) |')
lines.push('|---|---:|---:|---:|')
lines.push(
  `| @loa/core redact, one call per 4 KiB message (${fmt(agent.perCallUs)} µs per call) | ${fmt(agent.loa)} | ${fmt(agent.loa * 1.048576)} | ${fmt(agent.loaWall)} |`,
)
if (agent.pii !== null) {
  lines.push(`| redact-pii 3.x SyncRedactor, same messages | ${fmt(agent.pii, 2)} | ${fmt(agent.pii * 1.048576, 2)} | ${fmt(agent.piiWall, 2)} |`)
}
lines.push('')
lines.push('Targets (4 KiB messages, one thread): at least 100 MB/s and at least 40x redact-pii.')
lines.push('')
const mbs = agent.loa * 1.048576
lines.push(`- @loa/core redact: ${fmt(mbs)} MB/s of CPU time (target >= 100 MB/s) ${mbs >= 100 ? 'ok' : 'MISSED'}`)
if (agent.ratio !== null) {
  lines.push(`- @loa/core / redact-pii: ${fmt(agent.ratio)}x (median of the per-round ratios of CPU time; target >= 40) ${agent.ratio >= 40 ? 'ok' : 'MISSED'}`)
} else {
  lines.push('- redact-pii not installed (`npm run bench` installs the peers into bench/node_modules): ratio not measured')
}
lines.push(`- whole ${fmt(mb)} MiB text in one call (split over threads): ${fmt(loa.mbps)} MiB/s`)
lines.push(`- @loa/core / same patterns in JS RegExp (whole text): ${fmt(loa.mbps / js.mbps)}x (informational)`)
lines.push('')
lines.push(
  'Text this benchmark did not write, in 4 KiB messages, one `redact` call each, one thread, side by side with ' +
    `redact-pii on the same messages (median of ${corpora[0].rounds} rounds, CPU time; sources: testdata/bench/README.md):`,
)
lines.push('')
lines.push('| corpus | size | messages | findings | @loa/core MB/s | µs per call | redact-pii MB/s | ratio | targets (>= 100 MB/s, >= 40x) |')
lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---|')
const corpusRows = [{ name: 'generated text above (prose, code, logs)', messages: messages.length, findings: null, ...agent }, ...corpora]
for (const c of corpusRows) {
  const cmbs = c.loa * 1.048576
  const ok = cmbs >= 100 && (c.ratio === null || c.ratio >= 40)
  lines.push(
    `| ${c.name} | ${fmt(c.bytes / 1024, 0)} KiB | ${c.messages} | ${c.findings === null ? '-' : c.findings} | ${fmt(cmbs)} | ${fmt(c.perCallUs)} | ` +
      `${c.pii === null ? '-' : fmt(c.pii * 1.048576, 2)} | ${c.ratio === null ? '-' : fmt(c.ratio) + 'x'} | ${ok ? 'ok' : 'MISSED'} |`,
  )
}
lines.push('')
lines.push(
  `Adversarial inputs (${fmt(ADV_SIZE / (1 << 20), 2)} MiB each unless said): one \`redact\` call (best of ${QUICK ? 1 : 3}, wall time), ` +
    'and the same text as 4 KiB messages on one thread (CPU time); slowdown = ordinary text\'s MiB/s / the input\'s (target <= 3):',
)
lines.push('')
lines.push('| input | size | one call: ms | MiB/s | slowdown | 4 KiB messages: MiB/s | slowdown |')
lines.push('|---|---:|---:|---:|---:|---:|---:|')
for (const a of adversarial) {
  lines.push(
    `| ${a.name} | ${fmt(a.size / (1 << 20), 2)} MiB | ${fmt(a.ms)} | ${fmt(a.mbps)} | ${fmt(a.slow, 2)} | ${fmt(a.mbps4k)} | ${fmt(a.slow4k, 2)} |`,
  )
}
const worst = Math.max(...adversarial.map((a) => Math.max(a.slow, a.slow4k)))
lines.push('')
lines.push(`- worst adversarial slowdown: ${fmt(worst, 2)} (target <= 3) ${worst <= 3 ? 'ok' : 'MISSED'}`)
const report = lines.join('\n')
console.log(report)
mkdirSync(join(here, 'results'), { recursive: true })
writeFileSync(join(here, 'results', 'redact.md'), `# Redaction benchmark\n\n${report}\n`)
