#!/usr/bin/env node
// `npm run version:sync`: puts the root package.json's version everywhere a released package
// names it, so that the packages of one release always agree. `npm version <new>` runs it (the
// `version` lifecycle script) and `npm run artifacts` runs it first; __test__/package.test.mjs
// fails if anything disagrees. What it writes:
//   - npm/<platform>/package.json and README.md, one per `napi.targets` entry, by napi-rs's own
//     generator (`napi create-npm-dirs`): name, version, os, cpu, libc, main, files
//   - the root's optionalDependencies: every platform package at exactly this version (npm
//     installs the one whose os/cpu/libc match and skips the others)
//   - the root entries of package-lock.json and extensions/package-lock.json (extensions/
//     depends on the root through file:..), as npm would record them
//   - extensions/loa/package.json: the plugin's version, its dependency on @loa/core (exact), and
//     openclaw.install.requiredPlatformPackages (the platform packages OpenClaw's installer
//     checks npm really installed for the host)
//   - index.js: the version napi's loader expects of the platform package it loads
//   - replicate/npm/<platform>/package.json and README.md: the loa-replicate binary's packages,
//     written here (napi-rs knows only the addon's): name, version, os, cpu, libc, files
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { NapiCli } from '@napi-rs/cli'
import { packages, pluginDir, readJson, REPLICATE_BINARY, root, writeJson } from './packages.mjs'

/** The replication binary's package of each platform: its package.json and README.md. */
function writeReplicatePackages({ core, version, replicate }) {
  for (const p of replicate) {
    mkdirSync(p.dir, { recursive: true })
    const libc = { gnu: ['glibc'], musl: ['musl'] }[p.target.abi]
    writeJson(join(p.dir, 'package.json'), {
      name: p.name,
      version,
      description: `The loa-replicate binary of \`loa replicate\` (${core.name}) for ${p.target.platformArchABI}`,
      os: [p.target.platform],
      cpu: [p.target.arch],
      ...(libc ? { libc } : {}),
      files: [REPLICATE_BINARY],
      license: core.license,
      engines: core.engines,
    })
    writeFileSync(
      join(p.dir, 'README.md'),
      `# \`${p.name}\`\n\nThe **${p.target.triple}** build of \`${REPLICATE_BINARY}\`, the program behind ` +
        `\`loa replicate push|pull|status\` of \`${core.name}\` (replication on S3-compatible object storage). ` +
        `Install it beside \`${core.name}\` (\`npm install ${p.name}\`), at the same version; \`loa\` finds it.\n`,
    )
  }
}

/** Returns `entry` with `key` set to `value`, placed after `after` if the key is new. */
function withKey(entry, key, value, after) {
  if (Object.hasOwn(entry, key)) return { ...entry, [key]: value }
  const out = {}
  for (const [k, v] of Object.entries(entry)) {
    out[k] = v
    if (k === after) out[key] = value
  }
  if (!Object.hasOwn(out, key)) out[key] = value
  return out
}

// npm records a package's own optionalDependencies last in its lock entry: written the same way,
// the next `npm install` changes nothing.
function updateLockRoot(file, key, version, optionalDependencies) {
  const lock = readJson(file)
  const { optionalDependencies: _old, ...entry } = lock.packages[key]
  lock.packages[key] = { ...entry, version, optionalDependencies }
  if (key === '') lock.version = version
  writeJson(file, lock)
}

export async function syncVersions() {
  const { core, version, platforms } = packages()
  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) throw new Error(`package.json: version ${version} is not a plain semver version`)

  await new NapiCli().createNpmDirs({ cwd: root })
  writeReplicatePackages(packages())

  // Sorted by name, as npm sorts dependencies when it saves them.
  const names = platforms.map((p) => p.name).sort()
  const optionalDependencies = Object.fromEntries(names.map((name) => [name, version]))
  writeJson(join(root, 'package.json'), withKey(core, 'optionalDependencies', optionalDependencies, 'devDependencies'))
  updateLockRoot(join(root, 'package-lock.json'), '', version, optionalDependencies)
  updateLockRoot(join(root, 'extensions', 'package-lock.json'), '..', version, optionalDependencies)

  const pluginFile = join(pluginDir, 'package.json')
  const plugin = readJson(pluginFile)
  plugin.version = version
  plugin.dependencies = { ...plugin.dependencies, [core.name]: version }
  plugin.openclaw = {
    ...plugin.openclaw,
    install: { ...plugin.openclaw?.install, requiredPlatformPackages: names },
  }
  writeJson(pluginFile, plugin)

  // napi build writes these two lines per platform with the version of the moment; a version bump
  // without a rebuild must not leave the loader expecting the old one.
  const loaderFile = join(root, 'index.js')
  const loader = readFileSync(loaderFile, 'utf8')
    .replace(/(bindingPackageVersion !== ')[^']*(')/g, `$1${version}$2`)
    .replace(/(expected )\S+( but got \$\{bindingPackageVersion\})/g, `$1${version}$2`)
  writeFileSync(loaderFile, loader)
  return { version, packages: [core.name, ...platforms.map((p) => p.name), plugin.name, ...packages().replicate.map((p) => p.name)] }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { version, packages: names } = await syncVersions()
  process.stdout.write(`${names.join(', ')}: ${version}\n`)
}
