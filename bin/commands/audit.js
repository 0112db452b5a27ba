'use strict'
// `loa audit verify <dir>`: check the hash chain of an audit log, across all its segments.
// `loa audit checkpoint <dir>`: sign its head with the key ring, so that cut entries show.

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
  // Without --keys (or --workspace) the checkpoint's seq and hash are compared, not its signature.
  const given = values.keys !== undefined || values.workspace !== undefined
  const keys = given ? core.KeyRing.open(cli.keysDir(values, core)) : undefined
  const v = core.verifyAuditLog(dir, { hmacKey: hmacKey(values), keys })
  if (values.json) {
    cli.printJson(v)
  } else {
    for (const p of v.problems) process.stdout.write(`${p.kind.toUpperCase().padEnd(9)} ${p.segment || '(log)'}${p.line ? `:${p.line}` : ''}: ${p.detail}\n`)
    if (v.tornTail) {
      process.stdout.write(`TORN      ${v.tornTail.segment}: ${v.tornTail.bytes} byte(s) of an unfinished append (cut on the next open)\n`)
    }
    const head = v.head ? `, head seq ${v.head.seq} ${v.head.hash}` : ''
    process.stdout.write(`${v.ok ? 'OK' : 'FAILED'}: ${v.entries} entr${v.entries === 1 ? 'y' : 'ies'} in ${v.segments} segment(s)${head}, ${v.problems.length} problem(s)\n`)
  }
  return v.ok ? cli.EXIT_OK : cli.EXIT_PROBLEMS
}

function checkpoint(dir, values) {
  const ring = core.KeyRing.open(cli.keysDir(values, core))
  const log = core.AuditLog.open(dir, { hmacKey: hmacKey(values) })
  const c = log.checkpoint(ring)
  if (values.json) cli.printJson(c)
  else process.stdout.write(`checkpoint at seq ${c.seq} ${c.hash}, signed by ${c.signature.keyId}\n`)
  return cli.EXIT_OK
}

module.exports = {
  help: `  loa audit verify <dir> [--hmac-key-file FILE] [--keys DIR | --workspace DIR] [--json]
                                 check every entry, the chain across segments and the checkpoint; exit 1 on problems
  loa audit checkpoint <dir> [--keys DIR | --workspace DIR] [--hmac-key-file FILE] [--json]
                                 sign the log's head (keys: the workspace's signing.keys_dir); a log later cut shorter fails`,
  optionHelp: `  --hmac-key-file FILE  the audit log's HMAC key (raw bytes; or LOA_AUDIT_HMAC_KEY as hex): loa audit,
                and loa replicate pull when the workspace's audit log is keyed`,
  options: { 'hmac-key-file': { type: 'string' } },
  accepts: ['json', 'hmac-key-file', 'keys', 'workspace'],
  hmacKey,
  run({ action, target, args, values }) {
    if (action !== 'verify' && action !== 'checkpoint') throw cli.badAction('audit', action, ['verify', 'checkpoint'])
    if (!target) throw cli.usage(`'loa audit ${action}' needs an audit log directory`)
    cli.expectArgs(args, 2, `audit ${action}`)
    const dir = cli.requireDir(path.resolve(target), 'audit log directory')
    return action === 'verify' ? verify(dir, values) : checkpoint(dir, values)
  },
}
