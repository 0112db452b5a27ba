'use strict'
// `loa redact [file|-]`: prints the text with personal data and secrets replaced; `--json`
// prints the findings instead (never the values).

const path = require('node:path')
const core = require('../../index.js')
const cli = require('../lib/cli.js')

/** Larger texts are refused unread (`E_TOO_LARGE`) rather than held in memory whole. */
const MAX_INPUT_BYTES = 256 * 1024 * 1024

function readInput(target) {
  if (!target || target === '-') {
    if (process.stdin.isTTY) throw cli.usage("'loa redact' needs a file, or text on stdin ('-')")
    return cli.readStdin(MAX_INPUT_BYTES).toString('utf8')
  }
  // Bytes that are not UTF-8 are read as U+FFFD: a hook scanning any file still gets an answer.
  return cli.readInputFile(path.resolve(target), MAX_INPUT_BYTES).toString('utf8')
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
  accepts: ['json', 'check', 'allow', 'pseudonymize'],
  run({ action, args, values }) {
    cli.expectArgs(args, 1, 'redact')
    const text = readInput(action)
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
