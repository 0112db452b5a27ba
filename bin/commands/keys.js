'use strict'
// `loa keys generate|rotate|revoke|list`: the Ed25519 key ring. Private keys are never printed.

const path = require('node:path')
const core = require('../../index.js')
const cli = require('../lib/cli.js')

function show(k) {
  const when = k.status === 'active' ? (k.expiresAt ? `rotate by ${k.expiresAt}${k.rotationDue ? ' (DUE)' : ''}` : 'from the environment')
    : k.status === 'retired' ? `verifies until ${k.expiresAt}`
    : k.status === 'revoked' ? `revoked ${k.revokedAt}: ${k.revokedReason}` : `expired ${k.expiresAt}`
  return `${k.keyId}  ${k.status.padEnd(7)}  ${k.source.padEnd(4)}  created ${k.createdAt}  ${when}`
}

function report(values, value, line) {
  if (values.json) process.stdout.write(JSON.stringify(value, null, 2) + '\n')
  else process.stdout.write(line + '\n')
  return 0
}

module.exports = {
  help: `  loa keys generate|rotate|list [--keys DIR | --workspace DIR] [--json]
                                 create the first key, rotate (the old key verifies 7 more days), list
  loa keys revoke <keyId> --reason TEXT [--keys DIR | --workspace DIR]
                                 revoke a key: it never signs or verifies again`,
  optionHelp: `  --reason TEXT why a key is revoked (kept in the key ring)`,
  options: { reason: { type: 'string' } },
  accepts: ['json', 'keys', 'workspace', 'reason'],
  run({ action, target, args, values }) {
    if (!['generate', 'rotate', 'list', 'revoke'].includes(action)) {
      throw cli.badAction('keys', action, ['generate', 'rotate', 'revoke', 'list'])
    }
    cli.expectArgs(args, action === 'revoke' ? 2 : 1, `keys ${action}`)
    if (values.reason !== undefined && action !== 'revoke') throw cli.usage(`--reason applies to 'loa keys revoke' only`)
    // A key ring that does not exist yet lists empty (generate creates it); anything but a
    // directory where it belongs is an error, never created over.
    const dir = cli.keysDir(values, core)
    if (!cli.directoryIfExists(dir, 'key ring') && action === 'list') return report(values, [], `no keys in ${dir} (loa keys generate)`)
    const ring = core.KeyRing.open(dir)
    switch (action) {
      case 'generate': {
        const k = ring.generate()
        return report(values, k, `generated ${show(k)}`)
      }
      case 'rotate': {
        const k = ring.rotate()
        return report(values, k, `rotated: ${show(k)}`)
      }
      case 'list': {
        const keys = ring.list()
        return report(values, keys, keys.length ? keys.map(show).join('\n') : `no keys in ${ring.dir} (loa keys generate)`)
      }
      case 'revoke': {
        if (!target) throw cli.usage(`'loa keys revoke' needs a key id`)
        if (!values.reason) throw cli.usage(`'loa keys revoke' needs --reason`)
        ring.revoke(target, values.reason)
        return report(values, { revoked: target }, `revoked ${target}`)
      }
    }
  },
}
