// @loa/core as a user gets it from npm: the published tarballs, installed into a fresh project
// outside the repository, with nothing of the checkout in reach. The main package and this
// machine's platform package are packed exactly as `npm publish` would pack them (scripts/pack.mjs,
// `npm pack --ignore-scripts`), installed with `npm install --offline` from the tarball files (no
// registry), and then used: require and import, redaction, a WAL round trip, the `loa` command, and
// a strict TypeScript consumer compiled against the installed index.d.ts and run.
//
// The addon packed is the one built in the repository root: the release build of `npm install` in
// CI, whatever `npm run build*` left in a development checkout.
import test from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, readdirSync, realpathSync, statSync, writeFileSync, mkdirSync } from 'node:fs'
import { join, relative, resolve, sep } from 'node:path'
import { randomBytes } from 'node:crypto'
import { tempDir, WATCHDOG_MS } from './helpers.mjs'
import { checkGlibcBaseline, glibcVersionsNeeded, hostPlatform, packages, pluginDir, readJson, root } from '../scripts/packages.mjs'
import { packForHost } from '../scripts/pack.mjs'

function listFiles(dir, base = dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? listFiles(join(dir, d.name), base) : [relative(base, join(dir, d.name)).split(sep).join('/')],
  )
}

test('every package of a release carries the one version of the root package.json', () => {
  const { core, version, platforms } = packages()
  const names = platforms.map((p) => p.name).sort()

  assert.deepEqual(readdirSync(join(root, 'npm')).sort(), platforms.map((p) => p.target.platformArchABI).sort(), 'npm/ holds one directory per napi target')
  for (const p of platforms) {
    const pkg = readJson(join(p.dir, 'package.json'))
    assert.equal(pkg.name, p.name)
    assert.equal(pkg.version, version, `${p.name} version`)
    assert.deepEqual(pkg.os, [p.target.platform], `${p.name} os`)
    assert.deepEqual(pkg.cpu, [p.target.arch], `${p.name} cpu`)
    const libc = { gnu: ['glibc'], musl: ['musl'] }[p.target.abi]
    assert.deepEqual(pkg.libc, libc, `${p.name} libc`)
    assert.equal(pkg.main, p.addon)
    assert.deepEqual(pkg.files, [p.addon], `${p.name} publishes its addon and nothing else`)
    assert.equal(pkg.license, core.license)
    assert.deepEqual(pkg.engines, core.engines)
  }

  // The loa-replicate binary's packages: one per platform, the binary and nothing else, and not
  // optional dependencies of @loa/core (most installs never replicate; docs/releasing.md).
  const { replicate } = packages()
  assert.deepEqual(readdirSync(join(root, 'replicate', 'npm')).sort(), platforms.map((p) => p.target.platformArchABI).sort())
  for (const p of replicate) {
    const pkg = readJson(join(p.dir, 'package.json'))
    assert.equal(pkg.name, `@loa/replicate-${p.target.platformArchABI}`)
    assert.equal(pkg.version, version, `${p.name} version`)
    assert.deepEqual([pkg.os, pkg.cpu, pkg.libc], [[p.target.platform], [p.target.arch], { gnu: ['glibc'], musl: ['musl'] }[p.target.abi]], `${p.name} os/cpu/libc`)
    assert.deepEqual(pkg.files, ['loa-replicate'], `${p.name} publishes its binary and nothing else`)
    assert.equal(pkg.license, core.license)
    assert.match(readFileSync(join(p.dir, 'README.md'), 'utf8'), new RegExp(`npm install ${p.name}`))
  }

  const exact = Object.fromEntries(names.map((n) => [n, version]))
  assert.deepEqual(core.optionalDependencies, exact, 'the root names every platform package at exactly its own version')
  const lock = readJson(join(root, 'package-lock.json'))
  assert.equal(lock.version, version)
  assert.equal(lock.packages[''].version, version)
  assert.deepEqual(lock.packages[''].optionalDependencies, exact, 'package-lock.json agrees with package.json')
  const extensionsLock = readJson(join(root, 'extensions', 'package-lock.json'))
  assert.equal(extensionsLock.packages['..'].version, version)
  assert.deepEqual(extensionsLock.packages['..'].optionalDependencies, exact, 'extensions/package-lock.json agrees')

  const plugin = readJson(join(pluginDir, 'package.json'))
  assert.equal(plugin.version, version, 'the plugin is released with the core')
  assert.equal(plugin.private, undefined, 'the plugin is publishable')
  assert.deepEqual(plugin.dependencies, { [core.name]: version }, 'the plugin depends on exactly this @loa/core')
  assert.deepEqual(plugin.openclaw.install.requiredPlatformPackages, names, 'OpenClaw checks the platform package npm installed')

  // napi's loader refuses a platform package of another version (NAPI_RS_ENFORCE_VERSION_CHECK).
  const loader = readFileSync(join(root, 'index.js'), 'utf8')
  const expected = [...loader.matchAll(/bindingPackageVersion !== '([^']*)'/g)].map((m) => m[1])
  assert.ok(expected.length >= platforms.length, 'index.js checks the platform package versions')
  assert.deepEqual([...new Set(expected)], [version], 'index.js expects this version of every platform package')
})

// The check the release build and `npm run artifacts` apply to linux-gnu addons, on a binary known
// to need a newer glibc than 2.17: Node itself (official builds since Node 18 need 2.28).
test('the glibc baseline check names what needs a newer glibc', { skip: process.platform !== 'linux' && 'ELF only' }, () => {
  const needed = [...glibcVersionsNeeded(process.execPath)]
  assert.ok(needed.length > 1, 'Node needs several glibc versions')
  assert.throws(() => checkGlibcBaseline(process.execPath), (err) => {
    assert.match(err.message, /needs glibc .*newer than the 2\.17 baseline: \S+@GLIBC_2\.\d+/)
    return true
  })
  const newest = needed.at(-1)[0]
  assert.ok(checkGlibcBaseline(process.execPath, newest).includes(newest), 'accepted against its own newest version')
})

test('packed and installed outside the repository, @loa/core works as a user gets it', async (t) => {
  const scratch = tempDir(t, 'loa-package-')
  assert.ok(relative(root, realpathSync(scratch)).startsWith('..'), 'the project is outside the repository')
  // The replication binary built here, if any (the CI's npm test builds the debug one first): a
  // release build in the root (npm run build:release-replicate, the release workflow's) before
  // the checkout's own builds.
  const releaseReplicate = join(root, hostPlatform('replicate')?.artifact ?? 'loa-replicate.none')
  const replicateBinary = [process.env.LOA_REPLICATE_BIN, releaseReplicate, ...['replicate', 'release', 'debug'].map((p) => join(root, 'target', p, 'loa-replicate'))]
    .filter(Boolean)
    .map((f) => resolve(f))
    .find((f) => existsSync(f))
  const { host, core, platform, replicate } = packForHost(join(scratch, 'tarballs'), { replicateBinary })

  // Only what a user needs: the loader, the types, the command, and the documentation the README
  // links to; the addon comes separately.
  const expectedCore = [
    'CHANGELOG.md', 'README.md', 'index.d.ts', 'index.js', 'package.json',
    ...listFiles(join(root, 'bin')).map((f) => `bin/${f}`),
    ...listFiles(join(root, 'docs')).map((f) => `docs/${f}`),
  ]
  assert.deepEqual(core.files, expectedCore.sort())
  for (const file of core.files) {
    assert.doesNotMatch(file, /(^|\/)(__test__|test|tests|src|target|npm|extensions|bench|fuzz|scripts|node_modules)\/|\.node$|\.test\.|\.rs$|\.map$/, file)
  }
  assert.deepEqual(platform.files, ['README.md', host.addon, 'package.json'].sort())
  if (replicate) {
    assert.deepEqual(replicate.files, ['README.md', 'loa-replicate', 'package.json'])
    t.diagnostic(`${replicate.filename}: ${replicate.size} bytes, packed from ${relative(root, replicateBinary)}`)
  } else t.diagnostic('no loa-replicate binary built here: its package is not packed')
  t.diagnostic(`${core.filename}: ${core.size} bytes; ${platform.filename}: ${platform.size} bytes (${platform.unpackedSize} unpacked)`)

  // What the README tells a user to run is what this installs (from the tarballs, before a release).
  assert.match(readFileSync(join(root, 'README.md'), 'utf8'), /^npm install @loa\/core +#/m)
  const project = join(scratch, 'project')
  mkdirSync(project)
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }))
  const env = { ...process.env, npm_config_cache: join(scratch, 'npm-cache'), npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' }
  delete env.LOA_REPLICATE_BIN
  const tarballs = [core.tarball, platform.tarball, ...(replicate ? [replicate.tarball] : [])]
  const install = spawnSync('npm', ['install', '--offline', ...tarballs], { cwd: project, env, encoding: 'utf8', timeout: 300_000 })
  assert.equal(install.status, 0, install.stderr)
  const installed = join(project, 'node_modules', '@loa', 'core')
  assert.deepEqual(listFiles(installed).sort(), core.files, 'npm installed the packed files')
  // The README's links into docs/ and the CHANGELOG resolve in the installed package (the
  // plugin's README is in its own package, @loa/openclaw-plugin).
  const links = [...readFileSync(join(installed, 'README.md'), 'utf8').matchAll(/\]\(([^)#:\s]+)(#[^)]*)?\)/g)].map((m) => m[1])
  assert.ok(links.filter((l) => l.startsWith('docs/')).length >= 10, 'the README links into docs/')
  for (const link of links.filter((l) => !l.startsWith('extensions/'))) {
    assert.ok(existsSync(join(installed, link)), `README link ${link} resolves in the installed package`)
  }

  const node = (file, args = []) => spawnSync(process.execPath, [file, ...args], { cwd: project, env, encoding: 'utf8', timeout: WATCHDOG_MS })
  const email = `erin.${randomBytes(3).toString('hex')}@example.com`
  const payload = `note ${randomBytes(4).toString('hex')}`

  // CommonJS: require resolves into the project, and the addon comes from the platform package.
  writeFileSync(
    join(project, 'check.cjs'),
    `const core = require('@loa/core')
const dir = require('node:path').join(__dirname, 'wal')
const wal = core.Wal.open(dir, { sessionId: 's1' })
const seq = wal.appendSync({ op: 'write', path: 'NOTES.md', data: process.argv[3] })
wal.close()
const [record] = core.readWal(dir)
console.log(JSON.stringify({
  resolved: require.resolve('@loa/core'),
  addons: Object.keys(require.cache).filter((f) => f.endsWith('.node')),
  redacted: core.redact(process.argv[2]).text,
  seq, data: record.data.toString('utf8'), op: record.op, path: record.path,
}))
`,
  )
  const cjs = node('check.cjs', [`write to ${email}`, payload])
  assert.equal(cjs.status, 0, cjs.stderr)
  const got = JSON.parse(cjs.stdout)
  assert.equal(got.resolved, join(installed, 'index.js'))
  assert.deepEqual(got.addons, [join(project, 'node_modules', host.name, host.addon)], 'the addon of the platform package')
  assert.equal(got.redacted, 'write to [REDACTED:EMAIL]')
  assert.deepEqual([got.seq, got.op, got.path, got.data], [1, 'write', 'NOTES.md', payload])

  // ESM: named imports (napi's loader is CommonJS; Node finds its exports) and the default export.
  writeFileSync(
    join(project, 'check.mjs'),
    `import core, { redact, readWal, Wal } from '@loa/core'
console.log(JSON.stringify({ same: core.redact === redact && core.Wal === Wal, redacted: redact(process.argv[2]).text, records: readWal('wal').length }))
`,
  )
  const esm = node('check.mjs', [`mail ${email}`])
  assert.equal(esm.status, 0, esm.stderr)
  assert.deepEqual(JSON.parse(esm.stdout), { same: true, redacted: 'mail [REDACTED:EMAIL]', records: 1 })

  // The `loa` command, as npm linked it into the project.
  const npx = (args) => spawnSync('npx', ['--offline', 'loa', ...args], { cwd: project, env, encoding: 'utf8', timeout: WATCHDOG_MS })
  const help = npx(['--help'])
  assert.equal(help.status, 0, help.stderr)
  assert.match(help.stdout, /^loa - inspect and verify @loa\/core agent memory/)
  const dump = npx(['wal', 'dump', 'wal', '--data', '--json'])
  assert.equal(dump.status, 0, dump.stderr)
  const [dumped] = JSON.parse(dump.stdout)
  assert.deepEqual([dumped.sessionId, dumped.seq, dumped.data.text], ['s1', 1, payload], 'loa reads back what the library wrote')
  const verify = npx(['wal', 'verify', 'wal'])
  assert.equal(verify.status, 0, verify.stderr + verify.stdout)
  if (replicate) {
    // `loa replicate` finds the installed package's binary, which runs and answers for itself: a
    // workspace without a bucket is its E_CONFIG_INVALID (the lookup's failure would be
    // E_INVALID_ARGUMENT "not installed").
    const ws = join(project, 'ws')
    mkdirSync(ws)
    const status = npx(['replicate', 'status', '--workspace', ws])
    assert.equal(status.status, 2, status.stderr)
    assert.match(status.stderr, /^loa: E_CONFIG_INVALID: .*replication\.bucket/m)
  }

  // TypeScript under strict, against the installed index.d.ts; compiled, then run.
  writeFileSync(
    join(project, 'consumer.ts'),
    `import { isLoaError, redact, readWal, Wal, type LoaErrorCode, type Redaction, type WalRecord } from '@loa/core'

const result: Redaction = redact(process.argv[2] ?? '')
const records: WalRecord[] = readWal('wal')
const first: Buffer | undefined = records[0]?.data
let code: LoaErrorCode | undefined
try {
  Wal.open('')
} catch (err) {
  if (isLoaError(err)) code = err.code
}
// Never called, only type-checked: redact takes a string. Were the types missing (or any), the
// directive itself would be the error ("Unused '@ts-expect-error' directive").
export function misuse(): void {
  // @ts-expect-error
  redact(42)
}
console.log(JSON.stringify({ text: result.text, findings: result.findings.length, data: first?.toString('utf8'), code }))
`,
  )
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        skipLibCheck: false,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        outDir: 'build',
        // Node's own types, from the repository (a user project has its own @types/node).
        typeRoots: [join(root, 'node_modules', '@types')],
        types: ['node'],
      },
      files: ['consumer.ts'],
    }),
  )
  const tsc = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project], { cwd: project, encoding: 'utf8', timeout: 120_000 })
  assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr)
  assert.ok(statSync(join(project, 'build', 'consumer.js')).isFile())
  const ts = node(join('build', 'consumer.js'), [`call ${email}`])
  assert.equal(ts.status, 0, ts.stderr)
  assert.deepEqual(JSON.parse(ts.stdout), { text: 'call [REDACTED:EMAIL]', findings: 1, data: payload, code: 'E_INVALID_ARGUMENT' })
})
