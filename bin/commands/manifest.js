'use strict'
// `loa manifest create|sign|verify`: signed manifests of a state directory.

const fs = require('node:fs')
const path = require('node:path')
const core = require('../../index.js')

const DEFAULT_KEYS = '.loa/keys'

function printJson(value) {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n')
}

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
  const ring = core.KeyRing.open(path.resolve(values.keys ?? DEFAULT_KEYS))
  const signed = core.signManifest(core.readManifest(file), ring)
  core.writeManifest(file, signed)
  if (values.json) printJson({ manifest: file, keyId: signed.signature.keyId, files: signed.files.length })
  else process.stdout.write(`signed ${file} with key ${signed.signature.keyId} (${signed.files.length} file(s))\n`)
  return 0
}

function verify(root, values) {
  const file = manifestPath(root, values)
  const ring = core.KeyRing.open(path.resolve(values.keys ?? DEFAULT_KEYS))
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
  loa manifest sign <file> [--keys DIR]
                                 sign a manifest file with the key ring (default ${DEFAULT_KEYS}, or LOA_SIGNING_KEY)
  loa manifest verify <root> [--manifest FILE] [--keys DIR] [--json]
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
  run({ action, target, values, UsageError }) {
    if (!target) throw new UsageError(`'loa manifest ${action ?? ''}' needs a ${action === 'sign' ? 'manifest file' : 'root directory'}`)
    const resolved = path.resolve(target)
    switch (action) {
      case 'create':
        return create(resolved, values)
      case 'sign':
        return sign(resolved, values)
      case 'verify':
        if (!fs.existsSync(resolved)) throw new UsageError(`no such directory: ${target}`)
        return verify(resolved, values)
      default:
        throw new UsageError(`unknown manifest action '${action}' (create, sign, verify)`)
    }
  },
}
