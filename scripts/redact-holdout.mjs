// Writes the held-out gitleaks set `testdata/corpus/gitleaks_rule_samples.holdout.jsonl` (issue 29):
// samples of the gitleaks rules that are NOT in the development split
// (`gitleaks_rule_samples.dev.jsonl`), made from the facts of gitleaks' own rules (MIT): each rule's
// secret regex and keywords, transcribed from gitleaks/gitleaks @009e025ad410 config/gitleaks.toml
// into `gitleaks-rules.tsv` (see scripts/redact-catalogue.mjs; default directory /tmp/sources).
//
// True positives: a secret drawn from the rule's regex by a seeded generator, in the six contexts of
// gitleaks' own sample generator (`<id>Token="..."`, `<id>Token = ...`, a JSON key, an .ini line in
// a JSON string). Negatives (`label: fp`): near misses in the same contexts that no scanner should
// flag: a mask of the secret's length, a file path, a variable reference, a version. These
// are generated negatives, not gitleaks' hand-written false-positive samples (which live in Go code
// per rule); the dev split keeps those.
//
// The redactor was never tuned on this file: it is written once and measured by
// `npm run eval:redact` (the held-out section). Run: `node scripts/redact-holdout.mjs [dir]`.
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { prng } from './redact-devcorpus.mjs'
import { regexSampler } from './regex-sample.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const dir = process.argv[2] ?? '/tmp/sources'
const corpus = join(root, 'testdata', 'corpus')
const dev = new Set(
  readFileSync(join(corpus, 'gitleaks_rule_samples.dev.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l).rule_id),
)

const rng = prng(29)
const int = (n) => Math.floor(rng() * n)
const generate = regexSampler(int)


// Rules of other detectors than provider tokens (password fields of config files, a URL's
// credentials), whose secrets these contexts do not fit.
const SKIP = new Set(['database-password', 'hashicorp-tf-password', 'nuget-config-password', 'sidekiq-sensitive-url'])

const contexts = (id, s) => [
  `${id}Token="${s}"`,
  `${id}Token = "${s}"`,
  `${id}Token=${s}`,
  `${id}Token = ${s}`,
  `{\n    "${id}_token": "${s}"\n}`,
  `{"config.ini": "${id.toUpperCase()}_TOKEN=${s}\\nBACKUP_ENABLED=true"}`,
]

const rows = []
const source = 'gitleaks/gitleaks@009e025ad410:config/gitleaks.toml (rule regex; samples generated)'
for (const l of readFileSync(join(dir, 'gitleaks-rules.tsv'), 'utf8').split('\n')) {
  if (!l.trim() || l.startsWith('#')) continue
  const [id, kws, re, mode] = l.split('\t')
  if (dev.has(id) || SKIP.has(id) || re === '-' || re.includes('\\S') || re.includes('[!-~]') || id === 'generic-api-key') continue
  // The identifier: the rule's keyword when a keyword introduces the secret, else its provider.
  const word = mode === 'kw' ? kws.split(',').find((k) => /^[a-z]+$/.test(k)) ?? id.split('-')[0] : id.split('-')[0]
  const secret = generate(re)
  for (const text of contexts(word, secret)) {
    const start = [...text.slice(0, text.indexOf(secret))].length
    rows.push({ rule_id: id, label: 'tp', text, known_secret_spans: [{ start, end: start + [...secret].length }], source })
  }
  const fps = ['x'.repeat(Math.max(8, secret.length)), './keys/service.pem', `\${${word.toUpperCase()}_TOKEN}`, 'v2.14.1']
  for (const v of fps) {
    const ctx = contexts(word, v)
    rows.push({ rule_id: id, label: 'fp', text: ctx[int(ctx.length)], known_secret_spans: [], source })
  }
}
writeFileSync(join(corpus, 'gitleaks_rule_samples.holdout.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n')
console.log(`redact-holdout: ${rows.length} rows from ${new Set(rows.map((r) => r.rule_id)).size} rules`)
