'use strict'
// `loa audit verify <dir>`: check the hash chain of an audit log, across all its segments.

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

function verify(dir, values, UsageError) {
  const v = core.verifyAuditLog(dir, { hmacKey: hmacKey(values, UsageError) })
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

module.exports = {
  help: `  loa audit verify <dir> [--hmac-key-file FILE] [--json]
                                 check every entry and the chain across segments; exit 1 on problems`,
  optionHelp: `  --hmac-key-file FILE  the audit log's HMAC key (raw bytes; or LOA_AUDIT_HMAC_KEY as hex)`,
  options: { 'hmac-key-file': { type: 'string' } },
  run({ action, target, values, UsageError }) {
    if (action !== 'verify') throw new UsageError(`unknown audit action '${action ?? ''}' (verify)`)
    if (!target) throw new UsageError(`'loa audit verify' needs an audit log directory`)
    return verify(path.resolve(target), values, UsageError)
  },
}
