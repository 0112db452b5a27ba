'use strict'
// `loa audit verify <dir>`: check the hash chain of an audit log, across all its segments.
// `loa audit checkpoint <dir>`: sign its head with the key ring, so that cut entries show.

const fs = require('node:fs')
const path = require('node:path')
const core = require('../../index.js')

/** The HMAC key: --hmac-key-file (raw bytes), else LOA_AUDIT_HMAC_KEY (hex). */
function hmacKey(values, UsageError) {
  if (values['hmac-key-file']) return fs.readFileSync(path.resolve(values['hmac-key-file']))
  const hex = process.env.LOA_AUDIT_HMAC_KEY
  if (hex) {
    if (!/^([0-9a-fA-F]{2})+$/.test(hex.trim())) throw new UsageError('LOA_AUDIT_HMAC_KEY must be hex')
    return Buffer.from(hex.trim(), 'hex')
  }
  return undefined
}

const DEFAULT_KEYS = '.loa/keys'

function verify(dir, values, UsageError) {
  const keys = values.keys === undefined ? undefined : core.KeyRing.open(path.resolve(values.keys))
  const v = core.verifyAuditLog(dir, { hmacKey: hmacKey(values, UsageError), keys })
  if (values.json) {
    process.stdout.write(JSON.stringify(v, null, 2) + '\n')
  } else {
    for (const p of v.problems) process.stdout.write(`${p.kind.toUpperCase().padEnd(9)} ${p.segment || '(log)'}${p.line ? `:${p.line}` : ''}: ${p.detail}\n`)
    if (v.tornTail) {
      const t = v.tornTail
      process.stdout.write(`torn tail ${t.segment}:${t.line} (${t.bytes} B of an append a crash interrupted; the next writer cuts it)\n`)
    }
    const head = v.head ? `, head seq ${v.head.seq} ${v.head.hash}` : ''
    process.stdout.write(`${v.ok ? 'OK' : 'FAILED'}: ${v.entries} entr${v.entries === 1 ? 'y' : 'ies'} in ${v.segments} segment(s)${head}, ${v.problems.length} problem(s)\n`)
  }
  return v.ok ? 0 : 1
}

function checkpoint(dir, values, UsageError) {
  const ring = core.KeyRing.open(path.resolve(values.keys ?? DEFAULT_KEYS))
  const log = core.AuditLog.open(dir, { hmacKey: hmacKey(values, UsageError) })
  const c = log.checkpoint(ring)
  if (values.json) process.stdout.write(JSON.stringify(c, null, 2) + '\n')
  else process.stdout.write(`checkpoint at seq ${c.seq} ${c.hash}, signed by ${c.signature.keyId}\n`)
  return 0
}

module.exports = {
  help: `  loa audit verify <dir> [--hmac-key-file FILE] [--keys DIR] [--json]
                                 check every entry, the chain across segments and the checkpoint; exit 1 on problems
  loa audit checkpoint <dir> [--keys DIR] [--hmac-key-file FILE] [--json]
                                 sign the log's head (default keys ${DEFAULT_KEYS}); a log later cut shorter fails`,
  optionHelp: `  --hmac-key-file FILE  the audit log's HMAC key (raw bytes; or LOA_AUDIT_HMAC_KEY as hex)`,
  options: { 'hmac-key-file': { type: 'string' }, keys: { type: 'string' } },
  run({ action, target, values, UsageError }) {
    if (action !== 'verify' && action !== 'checkpoint') throw new UsageError(`unknown audit action '${action ?? ''}' (verify, checkpoint)`)
    if (!target) throw new UsageError(`'loa audit ${action}' needs an audit log directory`)
    return action === 'verify' ? verify(path.resolve(target), values, UsageError) : checkpoint(path.resolve(target), values, UsageError)
  },
}
