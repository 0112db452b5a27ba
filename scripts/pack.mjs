#!/usr/bin/env node
// `npm run pack:all [-- --out DIR]`: the tarballs of one release, as `npm publish` would upload
// them, in DIR (default target/packages): @loa/core, each platform package whose addon
// `npm run artifacts` put in place, the OpenClaw plugin (compiled to dist/ first), and each
// @loa/replicate-<platform> whose loa-replicate binary `npm run artifacts` put in place. Prints each
// tarball's size and file count. The package tests (__test__/package.test.mjs,
// extensions/loa/test/package.test.mjs) pack with the same functions and install the result.
//
// `npm pack --ignore-scripts`: the root's `prepare` (a release build and the extensions/ install)
// is for checkouts, not for packing what is already built.
import { cpSync, existsSync, mkdirSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { pathToFileURL } from 'node:url'
import { copyArtifacts, copyReplicateArtifacts } from './artifacts.mjs'
import { hostPlatform, npmDir, packages, pluginDir, REPLICATE_BINARY, replicateNpmDir, root, run } from './packages.mjs'

/** Packs the package in `dir` into `destination`; returns npm's own report of the tarball. */
export function packPackage(dir, destination) {
  mkdirSync(destination, { recursive: true })
  const [report] = JSON.parse(run('npm', ['pack', dir, '--ignore-scripts', '--json', '--pack-destination', destination], { cwd: destination }))
  return { ...report, tarball: join(destination, report.filename), files: report.files.map((f) => f.path).sort() }
}

/** Compiles the plugin's TypeScript into extensions/loa/dist (emptied first: no stale modules). */
export function buildPlugin() {
  rmSync(join(pluginDir, 'dist'), { recursive: true, force: true })
  run(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(pluginDir, 'tsconfig.build.json')], { cwd: pluginDir })
}

/** Packs every package of the release that can be packed here into `destination`. */
export function packAll(destination) {
  buildPlugin()
  const { platforms } = packages()
  const reports = [packPackage(root, destination)]
  for (const p of platforms) {
    if (existsSync(join(p.dir, p.addon))) reports.push(packPackage(p.dir, destination))
  }
  reports.push(packPackage(pluginDir, destination))
  for (const p of packages().replicate) {
    if (existsSync(join(p.dir, REPLICATE_BINARY))) reports.push(packPackage(p.dir, destination))
  }
  return reports
}

/**
 * For the package tests: packs @loa/core and this machine's platform package, with the addon
 * built in the repository root (whatever `npm install` or `npm run build*` left there), and the
 * plugin if asked, into `destination`. The platform package is assembled by `npm run artifacts`'
 * own copy step in a copy of npm/ under `destination`, so the checkout is not touched; the glibc
 * baseline is not checked here (a development build may be linked against the machine's glibc),
 * only by the release build and `npm run artifacts`.
 */
export function packForHost(destination, { plugin = false, replicateBinary = null } = {}) {
  const host = hostPlatform()
  if (!host) throw new Error(`no platform package is configured for ${process.platform}-${process.arch}`)
  const npmCopy = join(destination, 'npm')
  cpSync(npmDir, npmCopy, { recursive: true })
  const copied = copyArtifacts({ npmDir: npmCopy, checkGlibc: false }).find((r) => r.name === host.name)
  if (!copied.source) throw new Error(`no ${host.addon} in ${root}: build it first (npm run build)`)
  const tarballs = {
    core: packPackage(root, destination),
    platform: packPackage(join(npmCopy, host.target.platformArchABI), destination),
  }
  if (plugin) {
    buildPlugin()
    tarballs.plugin = packPackage(pluginDir, destination)
  }
  // The host's @loa/replicate-<platform> with the given binary, assembled like the addon's.
  if (replicateBinary) {
    const replicateCopy = join(destination, 'replicate-npm')
    cpSync(replicateNpmDir, replicateCopy, { recursive: true })
    const replicateHost = hostPlatform('replicate')
    copyReplicateArtifacts({ from: join(destination, 'no-builds'), npmDir: replicateCopy, checkGlibc: false, hostBinary: replicateBinary })
    tarballs.replicate = packPackage(join(replicateCopy, replicateHost.target.platformArchABI), destination)
  }
  return { host, ...tarballs }
}

const size = (n) => (n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(2)} MiB`)

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { out: { type: 'string' } } })
  const destination = resolve(values.out ?? join(root, 'target', 'packages'))
  const reports = packAll(destination)
  for (const r of reports) {
    process.stdout.write(`${r.tarball}: ${size(r.size)} packed (${r.size} bytes), ${size(r.unpackedSize)} unpacked, ${r.files.length} files\n`)
  }
  const { platforms } = packages()
  const skipped = [...platforms, ...packages().replicate].filter((p) => !reports.some((r) => r.name === p.name)).map((p) => p.name)
  if (skipped.length > 0) process.stdout.write(`not packed (no addon in npm/<platform> or binary in replicate/npm/<platform>; see npm run artifacts): ${skipped.join(', ')}\n`)
}
