// redact() on text as chat clients, word processors and input methods write it (issue 29, "Every
// script"): invisible characters inside a value, fullwidth digits and letters, composed and
// decomposed accents, internationalised e-mail addresses. Outside the findings the output is the
// input byte for byte, and findings' offsets are the input's UTF-16 indices. Failure messages name
// cases, never the (fake) secrets in them.
import test from 'node:test'
import assert from 'node:assert/strict'
import { core } from './helpers.mjs'
import { devCorpus, prng } from '../scripts/redact-devcorpus.mjs'

const { redact } = core
const KEY = Buffer.from('test-key')

// Every default-ignorable code point, as the JavaScript engine's own Unicode data has them: an
// independent source for the table the core carries.
const IGNORABLE = []
for (let cp = 0; cp <= 0x10ffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue
  if (/\p{Default_Ignorable_Code_Point}/u.test(String.fromCodePoint(cp))) IGNORABLE.push(String.fromCodePoint(cp))
}
const normalised = (s) => s.replace(/\p{Default_Ignorable_Code_Point}/gu, '').normalize('NFKC')
const fullwidth = (s) => s.replace(/[0-9A-Za-z]/g, (c) => String.fromCodePoint(c.codePointAt(0) - 0x21 + 0xff01))

/** The output rebuilt from the input and the findings' UTF-16 spans. */
function rebuilt(input, r) {
  let out = ''
  let at = 0
  for (const f of r.findings) {
    out += input.slice(at, f.start) + `[REDACTED:${f.kind.toUpperCase()}]`
    at = f.end
  }
  return out + input.slice(at)
}

function assertWhole(name, prefix, value, suffix, kind) {
  const text = prefix + value + suffix
  const r = redact(text, { key: KEY })
  assert.equal(r.text, `${prefix}[REDACTED:${kind.toUpperCase()}]${suffix}`, `${name}: found ${r.findings.map((f) => f.kind)}`)
  assert.equal(rebuilt(text, r), r.text, `${name}: offsets are the input's`)
  assert.equal(redact(r.text, { key: KEY }).text, r.text, `${name}: a second pass changes nothing`)
}

test('a token with any default-ignorable character inside is redacted whole', () => {
  const rand = prng(29)
  const AL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
  const token = 'ghp_' + Array.from({ length: 36 }, () => AL[Math.floor(rand() * AL.length)]).join('')
  assert.ok(IGNORABLE.length >= 4000, 'the engine knows the property')
  // Every one of them (4,000 and more), after the 20th character.
  const failures = []
  for (const inv of IGNORABLE) {
    const text = `token ${token.slice(0, 20)}${inv}${token.slice(20)} end`
    const r = redact(text, { key: KEY })
    if (r.text !== 'token [REDACTED:GITHUB_TOKEN] end') failures.push(`U+${inv.codePointAt(0).toString(16).toUpperCase()}`)
  }
  assert.deepEqual(failures, [])
  for (const [name, inv] of [['soft hyphen', '\u00ad'], ['word joiner', '\u2060'], ['BOM', '\ufeff'], ['ZWNJ', '\u200c']]) {
    assertWhole(name, 'GITHUB_TOKEN=', token.split('').join(inv), '\n', 'github_token')
  }
})

test('numbers typed in fullwidth digits are redacted as their ASCII forms', () => {
  for (const [name, prefix, value, kind] of [
    ['card', 'カード番号: ', '４１１１ １１１１ １１１１ １１１１', 'credit_card'],
    ['japanese mobile', '電話番号：', '０９０－１２３４－５６７８', 'phone'],
    ['uk number', 'call me on ', '＋４４ ２０ ７９４６ ０９５８', 'phone'],
    ['iban', 'IBAN: ', 'ＤＥ８９ ３７０４ ００４４ ０５３２ ０１３０ ００', 'iban'],
  ]) {
    assertWhole(name, prefix, value, ' です', kind)
    assertWhole(`${name} (ascii)`, prefix, value.normalize('NFKC'), ' です', kind)
  }
})

test('internationalised addresses are e-mail addresses, composed or decomposed', () => {
  for (const [name, prefix, value, suffix] of [
    ['utf-8 local part', 'schreib an ', 'jürgen.müller@gmx.de', ' bitte'],
    ['idn domain', 'Bestellung: ', 'info@müller-bäckerei.de', '.'],
    ['cyrillic', 'пишите на ', 'anna.petrova@почта.рф', ', спасибо'],
    ['ascii address in japanese', 'メールは', 'taro@example.co.jp', 'まで'],
  ]) {
    assertWhole(name, prefix, value, suffix, 'email')
    assertWhole(`${name} (NFD)`, prefix, value.normalize('NFD'), suffix, 'email')
  }
  // One person, one pseudonym, however the name is spelled.
  const p = (s) => redact(`mail ${s}`, { key: KEY, pseudonymize: true }).text
  assert.equal(p('jürgen.müller@gmx.de'), p('jürgen.müller@gmx.de'.normalize('NFD')))
  assert.equal(p('jürgen.müller@gmx.de'), p(fullwidth('jürgen.müller@gmx.de')))
})

test('outside the findings the output keeps the input byte for byte', () => {
  const text = 'Ｈｅｌｌｏ\u200b wo\u0301rld\ufe0f ﬁle №５ — 😀 mail bob@example.com, \ufeffcall ＋４４ ２０ ７９４６ ０９５８ then ①② \ufdfa done\u00ad'
  const r = redact(text, { key: KEY })
  assert.deepEqual(r.findings.map((f) => f.kind), ['email', 'phone'])
  assert.equal(rebuilt(text, r), r.text)
  assert.equal(text.slice(r.findings[1].start, r.findings[1].end), '＋４４ ２０ ７９４６ ０９５８')
})

test('property: no spelling of a generated positive leaves a piece of it', () => {
  const rand = prng(0x5ca1e)
  const int = (n) => Math.floor(rand() * n)
  const leaks = (out, secret) => {
    const o = [...normalised(out)]
    const s = [...normalised(secret)]
    const w = Math.min(8, s.length)
    const seen = new Set()
    for (let i = 0; i + w <= o.length; i++) seen.add(o.slice(i, i + w).join(''))
    for (let i = 0; i + w <= s.length; i++) if (seen.has(s.slice(i, i + w).join(''))) return true
    return false
  }
  let bases = 0
  const failures = []
  for (const [n, row] of devCorpus().entries()) {
    if (row.label !== 'pos' || row.spans.length !== 1) continue
    const [a, b] = row.spans[0]
    const [pre, secret, post] = [row.text.slice(0, a), row.text.slice(a, b), row.text.slice(b)]
    if (leaks(redact(row.text, { key: KEY }).text, secret)) continue
    bases++
    const inv = () => IGNORABLE[int(IGNORABLE.length)]
    // At a code point boundary (an astral ignorable is two code units).
    const withInv = (s) => {
      const cps = [...s]
      cps.splice(int(cps.length + 1), 0, inv())
      return cps.join('')
    }
    const spellings = {
      ignorable: pre + withInv(withInv(secret)) + post,
      fullwidth: pre + fullwidth(secret) + post,
      'fullwidth text': fullwidth(row.text),
      'fullwidth and ignorable': pre + withInv(fullwidth(secret)) + post,
    }
    for (const [how, text] of Object.entries(spellings)) {
      if (leaks(redact(text, { key: KEY }).text, secret)) failures.push(`row ${n} (${row.rule}, ${how})`)
    }
  }
  assert.ok(bases >= 1000, `${bases} positives`)
  assert.deepEqual(failures.slice(0, 30), [])
})
