#!/usr/bin/env node
// `npm run build:release-linux [-- --target TRIPLE]`: a release addon as published in its
// platform package. The default, x86_64-unknown-linux-gnu, is linked against glibc 2.17 so that it
// loads on every distribution from CentOS 7 / Debian 8 on, not only on one as new as the build
// machine's; the release workflow (.github/workflows/release.yml) runs the same script for the
// other Linux targets, and for macOS on a macOS runner.
//
// `npm run build:release-replicate [-- --target TRIPLE]` (`--replicate`): the same for the
// loa-replicate binary of @loa/replicate-<platform> (docs/replication.md), built once with the
// `replicate` profile (`cargo zigbuild -p loa-replicate --profile replicate`) and copied to
// loa-replicate.<platform> in the repository root, the name `npm run artifacts` looks for there
// and under the release workflow's artifacts/ (as napi leaves loa-core.<platform>.node there).
//
// How: for Linux targets, napi build --cross-compile (or, for loa-replicate, cargo zigbuild) runs
// cargo-zigbuild, which links with zig: against glibc stubs of the version named after the triple
// (x86_64-unknown-linux-gnu.2.17) for gnu targets, against zig's own musl for musl targets; zig
// also compiles the C of the -sys crates (aws-lc-sys, through the cc crate) for that target. Both
// tools come from registries at pinned versions and live in target/release-tools (installed on
// first use, reused after): zig from PyPI's `ziglang` wheel (the zig project's own binaries),
// cargo-zigbuild from crates.io (`cargo install --locked`). Nothing is installed outside target/.
// macOS targets build with plain `napi build` / `cargo build --target` (Apple's linker; no glibc).
//
// Afterwards a gnu addon or binary is checked with readelf: no symbol may need a glibc newer than
// 2.17; an addon is checked against its size goal (scripts/addon-size.mjs). Then `npm run artifacts` moves it into its npm/<platform> (replicate/npm/<platform>)
// package. The Rust standard library of a target other than the host's comes from
// `rustup target add TRIPLE`, which this machine cannot reach: here only x86_64-unknown-linux-gnu
// builds.
import { copyFileSync, existsSync, mkdirSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { GLIBC_BASELINE, checkGlibcBaseline, packages, REPLICATE_BINARY, root, run } from './packages.mjs'
import { checkAddonSize, describe as describeAddonSize } from './addon-size.mjs'

const ZIG_VERSION = '0.15.2'
const CARGO_ZIGBUILD_VERSION = '0.24.1'

const tools = join(root, 'target', 'release-tools')
const zigDir = join(tools, `ziglang-${ZIG_VERSION}`)
const zig = join(zigDir, 'ziglang', 'zig')
const zigbuildRoot = join(tools, `cargo-zigbuild-${CARGO_ZIGBUILD_VERSION}`)
const zigbuild = join(zigbuildRoot, 'bin', 'cargo-zigbuild')

function say(line) {
  process.stderr.write(`build-release: ${line}\n`)
}

function installedVersion(binary, args) {
  if (!existsSync(binary)) return null
  try {
    return run(binary, args).trim()
  } catch {
    return null
  }
}

function ensureZig() {
  if (installedVersion(zig, ['version']) === ZIG_VERSION) return
  say(`installing zig ${ZIG_VERSION} (PyPI ziglang) into ${zigDir}`)
  mkdirSync(tools, { recursive: true })
  const python = process.env.PYTHON ?? 'python3'
  const pip = ['-m', 'pip', 'install', '--disable-pip-version-check', '--root-user-action=ignore', '--no-input', '--no-deps', '--only-binary=:all:', '--upgrade']
  run(python, [...pip, '--target', zigDir, `ziglang==${ZIG_VERSION}`], { stdio: ['ignore', 'ignore', 'inherit'] })
  const got = installedVersion(zig, ['version'])
  if (got !== ZIG_VERSION) throw new Error(`${zig}: expected zig ${ZIG_VERSION}, got ${got ?? 'nothing'}`)
}

function ensureZigbuild() {
  if (installedVersion(zigbuild, ['--version'])?.endsWith(` ${CARGO_ZIGBUILD_VERSION}`)) return
  say(`installing cargo-zigbuild ${CARGO_ZIGBUILD_VERSION} (crates.io) into ${zigbuildRoot}`)
  run('cargo', ['install', '--locked', '--quiet', '--version', CARGO_ZIGBUILD_VERSION, '--root', zigbuildRoot, 'cargo-zigbuild'], { stdio: ['ignore', 'ignore', 'inherit'] })
}

const { values } = parseArgs({
  options: { target: { type: 'string', default: 'x86_64-unknown-linux-gnu' }, replicate: { type: 'boolean', default: false } },
})
const { platforms, replicate } = packages()
const platform = (values.replicate ? replicate : platforms).find((p) => p.target.triple === values.target)
if (!platform) {
  say(`${values.target} is not one of package.json's napi.targets`)
  process.exit(1)
}
const linux = platform.target.platform === 'linux'
if (!linux && platform.target.platform !== process.platform) {
  say(`${values.target} builds on ${platform.target.platform} only`)
  process.exit(1)
}

// What the build runs: napi for the addon, cargo for loa-replicate; for Linux through zig.
let env = process.env
let target = values.target
if (linux) {
  ensureZig()
  ensureZigbuild()
  env = {
    ...process.env,
    PATH: [join(zigDir, 'ziglang'), join(zigbuildRoot, 'bin'), process.env.PATH].join(':'),
    // zig's caches default to ~/.cache/zig: keep them beside the tools.
    ZIG_GLOBAL_CACHE_DIR: join(tools, 'zig-cache'),
    ZIG_LOCAL_CACHE_DIR: join(tools, 'zig-cache'),
  }
  if (platform.glibc) target = `${values.target}.${GLIBC_BASELINE}`
}
const [command, args] = values.replicate
  ? ['cargo', [linux ? 'zigbuild' : 'build', '-p', 'loa-replicate', '--profile', 'replicate', '--target', target]]
  : [join(root, 'node_modules', '.bin', 'napi'), ['build', '--platform', '--release', '--no-const-enum', '--target', target, ...(linux ? ['--cross-compile'] : [])]]
say(`${command === 'cargo' ? 'cargo' : 'napi'} ${args.join(' ')}${linux ? ` (cargo-zigbuild ${CARGO_ZIGBUILD_VERSION}, zig ${ZIG_VERSION})` : ''}`)
const started = Date.now()
try {
  run(command, args, { cwd: root, env, stdio: 'inherit' })
} catch (err) {
  say(`${err.message.split('\n')[0]} (if the target's standard library is missing: rustup target add ${values.target})`)
  process.exit(1)
}
const seconds = Math.round((Date.now() - started) / 1000)

// cargo leaves the binary under target/<triple>/ (cargo-zigbuild drops the glibc suffix there);
// the copy in the root carries the platform in its name, like the addon napi leaves there.
const built = values.replicate ? join(root, platform.artifact) : join(root, platform.addon)
const targetDir = process.env.CARGO_TARGET_DIR ? resolve(root, process.env.CARGO_TARGET_DIR) : join(root, 'target')
if (values.replicate) copyFileSync(join(targetDir, values.target, 'replicate', REPLICATE_BINARY), built)
const needed = platform.glibc ? checkGlibcBaseline(built) : null
// The addon's size goal (scripts/addon-size.mjs): refused here, before it reaches a package.
const sizeCheck = values.replicate ? null : checkAddonSize(built)
const size = statSync(built).size
const dir = values.replicate ? `replicate/npm/${platform.target.platformArchABI}` : `npm/${platform.target.platformArchABI}`
process.stdout.write(
  `${relative(root, built)}: ${(size / 1024 / 1024).toFixed(1)} MiB (${size} bytes), built in ${Math.floor(seconds / 60)} min ${seconds % 60} s` +
    (needed ? `; glibc versions needed: ${needed.join(', ')} (baseline ${GLIBC_BASELINE})` : '') +
    `\nnext: npm run artifacts (moves it into ${dir})\n`,
)
if (sizeCheck) {
  say(describeAddonSize({ ...sizeCheck, path: relative(root, built) }))
  if (!sizeCheck.ok) process.exit(1)
}
