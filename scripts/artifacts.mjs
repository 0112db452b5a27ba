#!/usr/bin/env node
// `npm run artifacts [-- --from DIR] [-- --all]`: puts each built addon into its platform
// package, npm/<platform>/<binary>.<platform>.node, after bringing every version in step
// (scripts/versions.mjs). Then `npm pack npm/<platform>` (or scripts/pack.mjs) packs it.
//
// --from DIR   where the built addons are: `napi build --platform` leaves them in the repository
//              root (the default); the release workflow downloads each job's into artifacts/<job>/
//              (one directory level below DIR is searched too)
// --all        every platform of napi.targets must have its addon (the release workflow); without
//              it, platforms with no addon are listed and skipped (a local build has one)
//
// The same for the loa-replicate binary's packages, replicate/npm/<platform>/loa-replicate: a
// build named `loa-replicate.<platform>` under DIR (what `npm run build:release-replicate` leaves
// in the root, and what the release workflow names each target's build), and for this machine's
// platform, when DIR is the root and no such build is there, `target/replicate/loa-replicate`
// (what `npm run build:replicate` leaves, linked against this machine's glibc). --all: every
// platform must have its binary too.
//
// A linux-*-gnu addon (or binary) that needs a glibc newer than the 2.17 baseline is refused (see
// scripts/build-release.mjs). An addon left in a platform package by an earlier run, with no
// new one to replace it, is removed rather than shipped with the new version.
import { chmodSync, copyFileSync, existsSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { pathToFileURL } from 'node:url'
import { checkGlibcBaseline, hostPlatform, npmDir as defaultNpmDir, packages, REPLICATE_BINARY, replicateNpmDir as defaultReplicateDir, root } from './packages.mjs'
import { syncVersions } from './versions.mjs'

function findAddon(from, name) {
  const direct = join(from, name)
  if (existsSync(direct)) return direct
  const found = readdirSync(from, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(from, d.name, name)))
    .map((d) => join(from, d.name, name))
  if (found.length > 1) throw new Error(`${name}: found more than once under ${from}: ${found.join(', ')}`)
  return found[0] ?? null
}

/**
 * Copies the addons found under `from` into `npmDir`/<platform>/. Returns one entry per platform:
 * `{ name, addon, source, bytes }`, with `source` null where none was found.
 */
export function copyArtifacts({ from = root, npmDir = defaultNpmDir, requireAll = false, checkGlibc = true } = {}) {
  const { platforms } = packages()
  const results = platforms.map((p) => ({ platform: p, source: findAddon(from, p.addon) }))
  const missing = results.filter((r) => !r.source).map((r) => r.platform.addon)
  if (requireAll && missing.length > 0) throw new Error(`no addon under ${from} for: ${missing.join(', ')}`)
  for (const { platform, source } of results) {
    if (source && platform.glibc && checkGlibc) checkGlibcBaseline(source)
  }
  return results.map(({ platform, source }) => {
    const destination = join(npmDir, platform.target.platformArchABI, platform.addon)
    if (source) copyFileSync(source, destination)
    else rmSync(destination, { force: true })
    return { name: platform.name, addon: destination, source, bytes: source ? statSync(destination).size : 0 }
  })
}

/**
 * Copies the loa-replicate builds found under `from` into `npmDir`/<platform>/loa-replicate
 * (mode 0755). Returns one entry per platform: `{ name, binary, source, bytes }`, `source` null
 * where none was found.
 */
export function copyReplicateArtifacts({ from = root, npmDir = defaultReplicateDir, requireAll = false, checkGlibc = true, hostBinary } = {}) {
  const { replicate } = packages()
  const host = hostPlatform('replicate')
  const fallback = hostBinary ?? (from === root ? join(root, 'target', 'replicate', REPLICATE_BINARY) : null)
  const results = replicate.map((p) => {
    let source = existsSync(from) ? findAddon(from, p.artifact) : null
    if (!source && host?.name === p.name && fallback && existsSync(fallback)) source = fallback
    return { platform: p, source }
  })
  const missing = results.filter((r) => !r.source).map((r) => r.platform.artifact)
  if (requireAll && missing.length > 0) throw new Error(`no loa-replicate build under ${from} for: ${missing.join(', ')}`)
  for (const { platform, source } of results) {
    if (source && platform.glibc && checkGlibc) checkGlibcBaseline(source)
  }
  return results.map(({ platform, source }) => {
    const destination = join(npmDir, platform.target.platformArchABI, REPLICATE_BINARY)
    if (source) {
      copyFileSync(source, destination)
      chmodSync(destination, 0o755)
    } else rmSync(destination, { force: true })
    return { name: platform.name, binary: destination, source, bytes: source ? statSync(destination).size : 0 }
  })
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { from: { type: 'string' }, all: { type: 'boolean' } } })
  try {
    const { version } = await syncVersions()
    const results = copyArtifacts({ from: values.from ? resolve(values.from) : root, requireAll: values.all })
    const replicate = copyReplicateArtifacts({ from: values.from ? resolve(values.from) : root, requireAll: values.all })
    for (const r of [...results, ...replicate]) {
      process.stdout.write(r.source ? `${r.name}@${version}: ${r.source} (${(r.bytes / 1024 / 1024).toFixed(1)} MiB)\n` : `${r.name}@${version}: nothing built here, skipped\n`)
    }
  } catch (err) {
    process.stderr.write(`artifacts: ${err.message}\n`)
    process.exitCode = 1
  }
}
