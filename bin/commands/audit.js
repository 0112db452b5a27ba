'use strict'
// `loa audit verify <dir>`: check the hash chain of an audit log, across all its segments.

const path = require('node:path')
const core = require('../../index.js')
const cli = require('../lib/cli.js')

/** An HMAC key is a few dozen bytes; anything this large is the wrong file. */
const MAX_KEY_BYTES = 64 * 1024

/** The HMAC key: --hmac-key-file (raw bytes), else LOA_AUDIT_HMAC_KEY (hex). Never printed. */
function hmacKey(values) {
  if (values['hmac-key-file'] !== undefined) {
    if (!values['hmac-key-file']) throw cli.usage('--hmac-key-file needs a file')
    return cli.readInputFile(path.resolve(values['hmac-key-file']), MAX_KEY_BYTES)
  }
  const hex = process.env.LOA_AUDIT_HMAC_KEY
  if (hex) {
    if (!/^([0-9a-fA-F]{2})+$/.test(hex.trim())) throw new cli.CliError('E_INVALID_ARGUMENT', 'LOA_AUDIT_HMAC_KEY must be hex')
    return Buffer.from(hex.trim(), 'hex')
  }
  return undefined
}

function verify(dir, values) {
  const v = core.verifyAuditLog(dir, { hmacKey: hmacKey(values) })
  if (values.json) {
    cli.printJson(v)
  } else {
    for (const p of v.problems) process.stdout.write(`${p.kind.toUpperCase().padEnd(9)} ${p.segment || '(log)'}${p.line ? `:${p.line}` : ''}: ${p.detail}\n`)
    if (v.tornTail) {
      const t = v.tornTail
      process.stdout.write(`torn tail ${t.segment}:${t.line} (${t.bytes} B of an append a crash interrupted; the next writer cuts it)\n`)
    }
    const head = v.head ? `, head seq ${v.head.seq} ${v.head.hash}` : ''
    process.stdout.write(`${v.ok ? 'OK' : 'FAILED'}: ${v.entries} entr${v.entries === 1 ? 'y' : 'ies'} in ${v.segments} segment(s)${head}, ${v.problems.length} problem(s)\n`)
  }
  return v.ok ? cli.EXIT_OK : cli.EXIT_PROBLEMS
}

module.exports = {
  help: `  loa audit verify <dir> [--hmac-key-file FILE] [--json]
                                 check every entry and the chain across segments; exit 1 on problems`,
  optionHelp: `  --hmac-key-file FILE  the audit log's HMAC key (raw bytes; or LOA_AUDIT_HMAC_KEY as hex)`,
  options: { 'hmac-key-file': { type: 'string' } },
  accepts: ['json', 'hmac-key-file'],
  run({ action, target, args, values }) {
    if (action !== 'verify') throw cli.badAction('audit', action, ['verify'])
    if (!target) throw cli.usage(`'loa audit verify' needs an audit log directory`)
    cli.expectArgs(args, 2, 'audit verify')
    const dir = cli.requireDir(path.resolve(target), 'audit log directory')
    return verify(dir, values)
  },
}
