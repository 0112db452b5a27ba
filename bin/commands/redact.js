'use strict'
// `loa redact [file|-]`: prints the text with personal data and secrets replaced; `--json`
// prints the findings instead (never the values).

const fs = require('node:fs')
const core = require('../../index.js')

function readInput(target, UsageError) {
  if (!target || target === '-') {
    if (process.stdin.isTTY) throw new UsageError("'loa redact' needs a file, or text on stdin ('-')")
    return fs.readFileSync(0, 'utf8')
  }
  try {
    return fs.readFileSync(target, 'utf8')
  } catch (err) {
    throw new UsageError(`cannot read ${target}: ${err.code ?? err.message}`)
  }
}

function options(values) {
  const key = process.env.LOA_REDACT_KEY
  if (values.pseudonymize && !key) {
    process.stderr.write('loa: --pseudonymize without LOA_REDACT_KEY: pseudonyms are stable only within this run\n')
  }
  return {
    allowlist: values.allow ?? [],
    ...(key ? { key } : {}),
    pseudonymize: Boolean(values.pseudonymize),
  }
}

module.exports = {
  help: `  loa redact [file|-] [--json] [--check] [--allow VALUE]... [--pseudonymize]
                                 print the text with personal data and secrets redacted
                                 (--json: the findings, without values)`,
  optionHelp: `  --check       redact: exit 1 when anything was found (for hooks); prints nothing else
  --allow VALUE redact: never redact this exact value (repeatable)
  --pseudonymize redact: [EMAIL_3f2a9c1d] instead of [REDACTED:EMAIL] (key: LOA_REDACT_KEY)`,
  options: { check: { type: 'boolean' }, allow: { type: 'string', multiple: true }, pseudonymize: { type: 'boolean' } },
  run({ action, values, UsageError }) {
    const text = readInput(action, UsageError)
    const result = core.redact(text, options(values))
    if (values.check) {
      if (result.findings.length) {
        const kinds = {}
        for (const f of result.findings) kinds[f.kind] = (kinds[f.kind] ?? 0) + 1
        const summary = Object.entries(kinds).map(([k, n]) => `${n} ${k}`).join(', ')
        process.stderr.write(`loa: found ${summary}${result.blocked ? ' (blocked: private key)' : ''}\n`)
      }
      return result.findings.length ? 1 : 0
    }
    if (values.json) {
      process.stdout.write(JSON.stringify({ findings: result.findings, blocked: result.blocked }, null, 2) + '\n')
    } else {
      process.stdout.write(result.text)
    }
    return 0
  },
}
