// The letters-only probe of issue 29: for each value shape and each form that introduces a value,
// how many of 100 random values (fixed seed) `redact` leaves in clear. Run after a build:
// `node scripts/letters-probe.mjs`. Values with digits are the control (caught before the change).
import { createRequire } from 'node:module'
import { prng } from './redact-devcorpus.mjs'

const { redact } = createRequire(import.meta.url)('../index.js')

const LOWER = 'abcdefghijklmnopqrstuvwxyz'
const SHAPES = {
  'lowercase, 32': [LOWER, 32],
  'mixed case, 20': [LOWER + LOWER.toUpperCase(), 20],
  'mixed case, 40': [LOWER + LOWER.toUpperCase(), 40],
  'letters and digits, 32': [LOWER + LOWER.toUpperCase() + '0123456789', 32],
  'hex, 32': ['0123456789abcdef', 32],
}
const FORMS = ['api_key: V', 'zendesk_token: V', 'ZENDESK_API_KEY="V"', '{"token": "V"}', 'zendesk token V', 'secret=V']

const rand = prng(29)
const value = ([alphabet, length]) => Array.from({ length }, () => alphabet[Math.floor(rand() * alphabet.length)]).join('')

console.log(`| value | ${FORMS.map((f) => `\`${f}\``).join(' | ')} |`)
console.log(`|---|${FORMS.map(() => '---:').join('|')}|`)
for (const [name, shape] of Object.entries(SHAPES)) {
  const left = FORMS.map((form) => {
    let clear = 0
    for (let i = 0; i < 100; i++) {
      const v = value(shape)
      if (redact(form.replace('V', v)).text.includes(v.slice(4, 12))) clear++
    }
    return clear
  })
  console.log(`| ${name} | ${left.join(' | ')} |`)
}
