// What the release scripts (versions, artifacts, build-release, pack) and the package tests share:
// where each published package lives, what it is called, and the one version all of them carry.
//
// The packages released together, always at the same version:
//   @loa/core                 the repository root: index.js (napi's loader), index.d.ts, bin/
//   @loa/core-<platform>      npm/<platform>/: one prebuilt addon each, with os, cpu and libc set
//                             so that npm installs only the one matching the machine
//   @loa/openclaw-plugin      extensions/loa: the OpenClaw plugin, compiled to dist/
//   @loa/replicate-<platform> replicate/npm/<platform>/: the loa-replicate binary of `loa replicate`
//                             (docs/replication.md), os/cpu/libc set like the addon's; not an
//                             optional dependency of @loa/core (most installs never replicate),
//                             installed by whoever needs it
// The platforms are the root package.json's `napi.targets` (napi-rs's own configuration).
import { spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseTriple } from '@napi-rs/cli'

export const root = join(dirname(fileURLToPath(import.meta.url)), '..')
export const pluginDir = join(root, 'extensions', 'loa')
export const npmDir = join(root, 'npm')
export const replicateNpmDir = join(root, 'replicate', 'npm')
/** The replication binary's file name in its package. */
export const REPLICATE_BINARY = 'loa-replicate'

/** The oldest glibc the linux-*-gnu addons may need (that of CentOS 7 / RHEL 7, Rust's own floor). */
export const GLIBC_BASELINE = '2.17'

export function readJson(file) {
  return JSON.parse(readFileSync(file, 'utf8'))
}

/** Writes JSON the way npm itself does (two spaces, final newline), so that diffs stay small. */
export function writeJson(file, value) {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`)
}

/** The root package.json and its napi configuration, with one entry per platform package. */
export function packages() {
  const core = readJson(join(root, 'package.json'))
  const binaryName = core.napi.binaryName
  const platforms = core.napi.targets.map((triple) => {
    const target = parseTriple(triple)
    return {
      target,
      name: `${core.name}-${target.platformArchABI}`,
      dir: join(npmDir, target.platformArchABI),
      addon: `${binaryName}.${target.platformArchABI}.node`,
      // napi-rs names glibc targets `gnu`; only those have a glibc baseline to keep.
      glibc: target.platform === 'linux' && target.abi === 'gnu',
    }
  })
  const scope = core.name.split('/')[0]
  const replicate = platforms.map((p) => ({
    target: p.target,
    name: `${scope}/replicate-${p.target.platformArchABI}`,
    dir: join(replicateNpmDir, p.target.platformArchABI),
    // What the release workflow names each target's build, so that one directory can hold all.
    artifact: `${REPLICATE_BINARY}.${p.target.platformArchABI}`,
    glibc: p.glibc,
  }))
  return { core, version: core.version, binaryName, platforms, replicate }
}

/** Runs a command, inheriting stderr; throws with its output when it fails. */
export function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options })
  if (result.error) throw result.error
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited with ${result.status}\n${result.stdout ?? ''}${result.stderr ?? ''}`)
  }
  return result.stdout
}

function compareVersions(a, b) {
  const x = a.split('.').map(Number)
  const y = b.split('.').map(Number)
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0)
    if (d !== 0) return d
  }
  return 0
}

/**
 * Every glibc symbol version a shared object needs, read with binutils' readelf (which reads ELF
 * files of any architecture): the dynamic symbols' versions and the version references the
 * dynamic loader checks before it runs anything. Weak references count too: a version the loader
 * cannot find fails the load whether or not the symbol is weak. Returns the versions and, per
 * version, the symbols that need it.
 */
export function glibcVersionsNeeded(file) {
  const text = run('readelf', ['-W', '--dyn-syms', '--version-info', file])
  const versions = new Map()
  for (const match of text.matchAll(/GLIBC_(\d+(?:\.\d+)+)/g)) if (!versions.has(match[1])) versions.set(match[1], [])
  for (const match of text.matchAll(/ UND (\S+)@GLIBC_(\d+(?:\.\d+)+)/g)) versions.get(match[2]).push(match[1])
  return new Map([...versions].sort(([a], [b]) => compareVersions(a, b)))
}

/** Throws unless `file` loads on glibc `baseline`, naming each symbol that needs a newer one. */
export function checkGlibcBaseline(file, baseline = GLIBC_BASELINE) {
  const needed = glibcVersionsNeeded(file)
  if (needed.size === 0) throw new Error(`${file}: no glibc symbol versions found; is it a linux-gnu shared object or executable?`)
  const tooNew = [...needed].filter(([v]) => compareVersions(v, baseline) > 0)
  if (tooNew.length > 0) {
    const symbols = tooNew.flatMap(([v, names]) => names.map((name) => `${name}@GLIBC_${v}`))
    throw new Error(
      `${file} needs glibc ${tooNew.map(([v]) => v).join(', ')}, newer than the ${baseline} baseline: ${symbols.join(', ')}. ` +
        'Build it with npm run build:release-linux (the addon) or npm run build:release-replicate (loa-replicate): cargo-zigbuild against glibc 2.17.',
    )
  }
  return [...needed.keys()]
}

/**
 * The platform package npm would install on this machine (null where none is configured); with
 * `kind` 'replicate', the replication binary's package for it.
 */
export function hostPlatform(kind = 'addon') {
  const musl = process.platform === 'linux' && !process.report.getReport().header.glibcVersionRuntime
  const { platforms, replicate } = packages()
  return (
    (kind === 'replicate' ? replicate : platforms).find(
      (p) =>
        p.target.platform === process.platform &&
        p.target.arch === process.arch &&
        (process.platform !== 'linux' || p.target.abi === (musl ? 'musl' : 'gnu')),
    ) ?? null
  )
}
