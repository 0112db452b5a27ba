'use strict'
// `loa replicate push|pull|status`: ships WAL segments, the sealed grimoire and ledger events to
// S3-compatible object storage (docs/replication.md). The work is done by the separate
// `loa-replicate` binary, so that its HTTP/TLS stack never grows the addon; this module finds it
// and runs it with an argument vector (never a shell), its output and exit status passed through.

const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const cli = require('../lib/cli.js')
const { hmacKey } = require('./audit.js')
const { trustedKeys } = require('./recovery.js')

const BINARY = process.platform === 'win32' ? 'loa-replicate.exe' : 'loa-replicate'

/** Whether `file` is an executable regular file. */
function executable(file) {
  try {
    const stat = fs.statSync(file)
    if (!stat.isFile()) return false
    fs.accessSync(file, fs.constants.X_OK)
    return true
  } catch {
    return false
  }
}

/**
 * Where the binary is, first found wins: `LOA_REPLICATE_BIN`; the optional per-platform package
 * `@loa/replicate-<platform>-<arch>[-<libc>]` of a published install (like the addon's); in a
 * checkout, `target/replicate/` (what `npm install` builds), then `target/release/`, then
 * `target/debug/`.
 */
function findBinary() {
  const fromEnv = process.env.LOA_REPLICATE_BIN
  if (fromEnv) {
    const file = path.resolve(fromEnv)
    if (!executable(file)) throw new cli.CliError('E_INVALID_ARGUMENT', 'LOA_REPLICATE_BIN is not an executable file')
    return file
  }
  const libc = process.platform === 'linux' ? (process.report?.getReport?.().header?.glibcVersionRuntime ? '-gnu' : '-musl') : ''
  try {
    const pkg = require.resolve(`@loa/replicate-${process.platform}-${process.arch}${libc}/package.json`)
    const file = path.join(path.dirname(pkg), BINARY)
    if (executable(file)) return file
  } catch {
    // not installed: a checkout, or a platform without a prebuilt binary
  }
  const root = path.join(__dirname, '..', '..')
  for (const profile of ['replicate', 'release', 'debug']) {
    const file = path.join(root, 'target', profile, BINARY)
    if (executable(file)) return file
  }
  throw new cli.CliError(
    'E_INVALID_ARGUMENT',
    'the loa-replicate binary is not installed (install @loa/replicate for this platform, or build it: npm run build:replicate)',
  )
}

const HEX_KEY = /^[0-9a-fA-F]{64}$/

/**
 * The public keys of `--trust` (as `loa recover` reads them: a key, or a file of them) as hex,
 * one `--trust` argument each: revoked and expired KeyInfo entries skipped, as recovery does.
 */
function trustArgs(values) {
  const argv = []
  for (const key of trustedKeys(values)) {
    if (typeof key === 'string') {
      argv.push('--trust', key)
      continue
    }
    if (key === null || typeof key !== 'object' || Array.isArray(key)) throw new cli.CliError('E_INVALID_ARGUMENT', '--trust: a key file entry is not a KeyInfo')
    if (key.status === 'revoked' || key.status === 'expired') continue
    if (typeof key.publicKey !== 'string' || !HEX_KEY.test(key.publicKey)) throw new cli.CliError('E_INVALID_ARGUMENT', '--trust: a KeyInfo publicKey must be 64 hex characters')
    argv.push('--trust', key.publicKey)
  }
  return argv
}

function nonNegativeInteger(text, flag) {
  if (text === undefined) return undefined
  if (!/^[0-9]{1,16}$/.test(text)) throw cli.usage(`${flag} must be a whole number`)
  return text
}

module.exports = {
  help: `  loa replicate push|pull|status [--workspace DIR] [--origin NAME] [--until-seq N] [--trust KEY|FILE...]
              [--hmac-key-file FILE] [--progress] [--json]
                                 ship WAL segments, the sealed grimoire and ledger events to
                                 the bucket of .loa.config.yaml's replication section (push
                                 also rewrites shipped segments pruned here that hold memories
                                 forgotten since), fetch other origins' (and restore this
                                 one's: its sealed grimoire into an empty one only when its
                                 manifest verifies against a --trust key; pull forgets what
                                 they forgot: a keyed audit log needs --hmac-key-file or
                                 LOA_AUDIT_HMAC_KEY); exit 1: problems listed`,
  optionHelp: `  --origin NAME this machine's namespace in the bucket (default: replication.origin, else derived)
  --until-seq N pull: restore this origin's records only up to seq N`,
  options: { origin: { type: 'string' }, 'until-seq': { type: 'string' } },
  accepts: ['json', 'workspace', 'origin', 'until-seq', 'progress', 'hmac-key-file', 'trust'],
  findBinary,
  run({ action, args, values }) {
    if (!['push', 'pull', 'status'].includes(action)) throw cli.badAction('replicate', action, ['push', 'pull', 'status'])
    cli.expectArgs(args, 1, 'replicate')
    if (values['until-seq'] !== undefined && action !== 'pull') throw cli.usage("--until-seq applies to 'loa replicate pull' only")
    if (values['hmac-key-file'] !== undefined && action !== 'pull') throw cli.usage("--hmac-key-file applies to 'loa replicate pull' only")
    if (values.trust !== undefined && action !== 'pull') throw cli.usage("--trust applies to 'loa replicate pull' only")
    if (values.origin === '') throw cli.usage('--origin needs a name')
    if (values.workspace === '') throw cli.usage('--workspace needs a directory')
    const workspace = cli.requireDir(path.resolve(values.workspace ?? '.'), 'workspace')
    const argv = [action, '--workspace', workspace]
    if (values.json) argv.push('--json')
    if (values.progress) argv.push('--progress')
    if (values.origin !== undefined) argv.push('--origin', values.origin)
    const until = nonNegativeInteger(values['until-seq'], '--until-seq')
    if (until !== undefined) argv.push('--until-seq', until)
    // Public keys, not secrets: they may be seen on the argument vector.
    if (action === 'pull') argv.push(...trustArgs(values))
    // The audit log's HMAC key reaches the binary through its environment only (hex), never its
    // argument vector, which every user of the machine can read.
    const env = { ...process.env }
    delete env.LOA_AUDIT_HMAC_KEY
    if (action === 'pull') {
      const key = hmacKey(values)
      if (key) env.LOA_AUDIT_HMAC_KEY = key.toString('hex')
    }
    const child = spawnSync(findBinary(), argv, { stdio: 'inherit', env })
    if (child.error) throw new cli.CliError('E_IO', `cannot run loa-replicate: ${child.error.code ?? 'unknown error'}`)
    if (child.status === null) throw new cli.CliError('E_INTERNAL', `loa-replicate was killed by ${child.signal}`)
    // The binary printed its own error line; status 2 must not print a second one.
    if (child.status === 2) process.exitCode = 2
    return child.status
  },
}
