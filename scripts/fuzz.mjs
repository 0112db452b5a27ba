#!/usr/bin/env node
// `npm run fuzz`: builds every cargo-fuzz target in fuzz/ and runs each for a share of a time
// budget, starting from the committed seeds in fuzz/corpus/<target>/ (read-only) and the corpus
// grown by earlier runs in target/fuzz-corpus/<target>/ (kept between runs, never committed).
//
//   npm run fuzz                          # every target, 240 s of fuzzing in all (what CI runs)
//   npm run fuzz -- --budget 3600         # an hour, shared by every target
//   npm run fuzz -- --target redact --budget 600
//   npm run fuzz -- --build-only
//
// Needs the nightly Rust toolchain (libFuzzer's instrumentation); installs cargo-fuzz from
// crates.io into target/tools on first use. A crash or a failed invariant stops with exit 1 and
// leaves the input in fuzz/artifacts/<target>/ (reproduce: cargo +nightly fuzz run <target> <file>).
'use strict'

import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const CARGO_FUZZ_VERSION = '0.13.2'

const { values } = parseArgs({
  options: {
    budget: { type: 'string', default: '240' },
    target: { type: 'string', multiple: true },
    'build-only': { type: 'boolean', default: false },
  },
})

function run(cmd, args, options = {}) {
  const result = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...options })
  if (result.error) throw result.error
  return result.status
}

function fail(message) {
  process.stderr.write(`fuzz: ${message}\n`)
  process.exit(2)
}

const toolsBin = join(root, 'target', 'tools', 'bin')
const env = { ...process.env, PATH: `${toolsBin}:${process.env.PATH}` }

if (spawnSync('cargo', ['+nightly', '--version'], { env, stdio: 'ignore' }).status !== 0) {
  fail('the nightly Rust toolchain is needed (rustup toolchain install nightly)')
}
if (!existsSync(join(toolsBin, 'cargo-fuzz'))) {
  const status = run('cargo', ['install', 'cargo-fuzz', '--version', CARGO_FUZZ_VERSION, '--locked', '--root', join(root, 'target', 'tools')], { env })
  if (status !== 0) fail('could not install cargo-fuzz')
}

const manifest = readFileSync(join(root, 'fuzz', 'Cargo.toml'), 'utf8')
const all = [...manifest.matchAll(/\[\[bin\]\]\s*\nname\s*=\s*"([^"]+)"/g)].map((m) => m[1])
const targets = values.target ?? all
for (const t of targets) if (!all.includes(t)) fail(`unknown target '${t}' (have: ${all.join(', ')})`)

const started = Date.now()
if (run('cargo', ['+nightly', 'fuzz', 'build', '-O'], { env }) !== 0) fail('the fuzz targets do not build')
process.stdout.write(`fuzz: built ${all.length} targets in ${Math.round((Date.now() - started) / 1000)} s\n`)
if (values['build-only']) process.exit(0)

const budget = Number(values.budget)
if (!Number.isFinite(budget) || budget < targets.length) fail('--budget must be at least one second per target')
const perTarget = Math.floor(budget / targets.length)
for (const target of targets) {
  const grown = join(root, 'target', 'fuzz-corpus', target)
  const seeds = join(root, 'fuzz', 'corpus', target)
  mkdirSync(grown, { recursive: true })
  const dirs = existsSync(seeds) ? [grown, seeds] : [grown]
  process.stdout.write(`fuzz: ${target} for ${perTarget} s\n`)
  const status = run(
    'cargo',
    ['+nightly', 'fuzz', 'run', '-O', target, ...dirs, '--', `-max_total_time=${perTarget}`, '-timeout=20', '-rss_limit_mb=2048', '-print_final_stats=1'],
    { env },
  )
  if (status !== 0) {
    process.stderr.write(`fuzz: ${target} found a failure; the input is in fuzz/artifacts/${target}/\n`)
    process.exit(1)
  }
}
process.stdout.write(`fuzz: ${targets.length} targets ran ${perTarget} s each, no failure\n`)
