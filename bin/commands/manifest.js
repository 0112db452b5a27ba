'use strict'
// `loa manifest create|sign|verify`: signed manifests of a state directory.

const path = require('node:path')
const core = require('../../index.js')
const cli = require('../lib/cli.js')

const DEFAULT_KEYS = "the workspace's signing.keys_dir, .loa/keys unless configured"
const { printJson } = cli

/** --keys, else the workspace's configured key ring; an existing key ring must be a directory. */
const keysDir = (values) => cli.keysDir(values, core)

const mb = (n) => (n / 1e6).toFixed(1)

/** Progress on stderr for large trees (only on a terminal, or with --progress). */
function progressPrinter(force) {
  if (!force && !process.stderr.isTTY) return undefined
  let shown = false
  const print = (p) => {
    if (!force && p.bytesTotal < 50e6 && p.filesTotal < 5000) return // small trees: stay quiet
    shown = true
    process.stderr.write(`\rhashing ${p.filesDone}/${p.filesTotal} files, ${mb(p.bytesDone)}/${mb(p.bytesTotal)} MB`)
  }
  print.done = () => shown && process.stderr.write('\n')
  return print
}

/** The manifest file: --manifest, else <root>/manifest.json. */
function manifestPath(root, values) {
  return path.resolve(values.manifest ?? path.join(root, 'manifest.json'))
}

/** `./<relative>` when `file` lies inside `root`, so that the manifest does not list itself. */
function selfExclusion(root, file) {
  const rel = path.relative(root, file)
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? './' + rel.split(path.sep).join('/') : null
}

function create(root, values) {
  const out = path.resolve(values.out ?? manifestPath(root, values))
  cli.requireFileIfExists(out)
  cli.requireDir(path.dirname(out), 'directory of --out')
  const exclude = [...(values.exclude ?? [])]
  const self = selfExclusion(root, out)
  if (self && !exclude.includes(self)) exclude.push(self)
  const onProgress = progressPrinter(values.progress)
  const auditDir = values['audit-dir'] === undefined ? undefined : values['audit-dir'].split(path.sep).join('/')
  const manifest = core.createManifest(root, { include: values.include ?? [], exclude, onProgress, auditDir })
  onProgress?.done()
  core.writeManifest(out, manifest)
  const bytes = manifest.files.reduce((sum, f) => sum + f.size, 0)
  if (values.json) printJson({ manifest: out, files: manifest.files.length, bytes })
  else {
    const anchor = manifest.auditHead ? `, audit log ${manifest.auditHead.dir} anchored at seq ${manifest.auditHead.seq}` : ''
    process.stdout.write(`wrote ${out}: ${manifest.files.length} file(s), ${bytes} bytes${anchor} (unsigned; run loa manifest sign)\n`)
  }
  return 0
}

function sign(file, values) {
  cli.requireFile(file)
  const ring = core.KeyRing.open(keysDir(values))
  const signed = core.signManifest(core.readManifest(file), ring)
  core.writeManifest(file, signed)
  if (values.json) printJson({ manifest: file, keyId: signed.signature.keyId, files: signed.files.length })
  else process.stdout.write(`signed ${file} with key ${signed.signature.keyId} (${signed.files.length} file(s))\n`)
  return 0
}

function verify(root, values) {
  const file = manifestPath(root, values)
  const keys = keysDir(values)
  cli.requireFile(file)
  const ring = core.KeyRing.open(keys)
  let result
  try {
    result = core.verifyManifest(root, core.readManifest(file), ring.verificationKeys())
  } catch (err) {
    // A damaged manifest file is a finding, not a failure of the command.
    if (err?.code !== 'E_STATE_CORRUPT') throw err
    result = { ok: false, files: 0, signedBy: null, problems: [{ path: '', kind: 'signature', detail: `manifest unreadable: ${err.message}` }] }
  }
  if (values.json) {
    printJson({ manifest: file, ...result })
  } else {
    for (const p of result.problems) process.stdout.write(`${p.kind.toUpperCase().padEnd(10)} ${p.path || '(manifest)'}: ${p.detail}\n`)
    const by = result.signedBy ? `, signed by ${result.signedBy}` : ''
    process.stdout.write(`${result.ok ? 'OK' : 'FAILED'}: ${result.files} file(s) in ${file}${by}, ${result.problems.length} problem(s)\n`)
  }
  return result.ok ? 0 : 1
}

module.exports = {
  help: `  loa manifest create <root> [--out FILE] [--include GLOB]... [--exclude GLOB]... [--audit-dir DIR] [--progress]
                                 hash every file under <root> into FILE (default <root>/manifest.json)
  loa manifest sign <file> [--keys DIR | --workspace DIR]
                                 sign a manifest file with the key ring (default ${DEFAULT_KEYS}, or LOA_SIGNING_KEY)
  loa manifest verify <root> [--manifest FILE] [--keys DIR | --workspace DIR] [--json]
                                 check signature and files; exit 1 and list each problem`,
  optionHelp: `  --out FILE    where manifest create writes (default <root>/manifest.json, excluded from itself)
  --include/--exclude GLOB  files to cover (repeatable; '*.tmp', 'cache/**', './manifest.json')
  --manifest FILE  the manifest to verify (default <root>/manifest.json)
  --audit-dir DIR  an audit log under <root> whose head the manifest anchors (cut entries are then caught)
  --keys DIR    key ring directory (default ${DEFAULT_KEYS})
  --progress    show hashing progress even when stderr is not a terminal`,
  options: {
    out: { type: 'string' },
    include: { type: 'string', multiple: true },
    exclude: { type: 'string', multiple: true },
    manifest: { type: 'string' },
    keys: { type: 'string' },
    'audit-dir': { type: 'string' },
    progress: { type: 'boolean' },
  },
  accepts: ['json', 'out', 'include', 'exclude', 'manifest', 'keys', 'workspace', 'progress', 'audit-dir'],
  run({ action, target, args, values }) {
    const ACCEPTS = { __proto__: null, create: ['json', 'out', 'include', 'exclude', 'progress', 'audit-dir'], sign: ['json', 'keys', 'workspace'], verify: ['json', 'manifest', 'keys', 'workspace'] }
    if (!ACCEPTS[action]) throw cli.badAction('manifest', action, ['create', 'sign', 'verify'])
    const misplaced = Object.keys(values).find((name) => name !== 'help' && !ACCEPTS[action].includes(name))
    if (misplaced) throw cli.usage(`--${misplaced} does not apply to 'loa manifest ${action}'`)
    if (!target) throw cli.usage(`'loa manifest ${action}' needs a ${action === 'sign' ? 'manifest file' : 'root directory'}`)
    cli.expectArgs(args, 2, `manifest ${action}`)
    for (const flag of ['out', 'manifest']) if (values[flag] === '') throw cli.usage(`--${flag} needs a file`)
    const resolved = path.resolve(target)
    if (action === 'sign') return sign(resolved, values)
    const root = cli.requireDir(resolved, 'root directory')
    return action === 'create' ? create(root, values) : verify(root, values)
  },
}
