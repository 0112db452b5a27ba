#!/usr/bin/env node
// `npm run test:plugin`: the plugin tests in OpenClaw's real loader, under Node >= 24.16 (what
// OpenClaw needs) while the core itself is tested on the Node that runs npm (>= 20).
//
// The Node 24 binary comes from the npm registry as an optional dependency of extensions/
// (`node-<os>-<cpu>`; npm installs the one matching this machine). Where the registry has none
// (macOS on arm64 has no package past Node 18), the Node running this script is used if it is
// new enough, or the one named by LOA_NODE24; otherwise the tests fail with a message saying so.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const MINIMUM = [24, 16]

function versionOf(node) {
  const result = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' })
  if (result.status !== 0) return null
  return result.stdout.trim().split('.').map(Number)
}

function newEnough(version) {
  return version && (version[0] > MINIMUM[0] || (version[0] === MINIMUM[0] && version[1] >= MINIMUM[1]))
}

function findNode() {
  const candidates = []
  if (process.env.LOA_NODE24) candidates.push(process.env.LOA_NODE24)
  const packaged = join(root, 'extensions', 'node_modules', `node-${process.platform}-${process.arch}`, 'bin', 'node')
  candidates.push(packaged, process.execPath)
  for (const node of candidates) {
    if (existsSync(node) && newEnough(versionOf(node))) return node
  }
  return null
}

const node = findNode()
if (!node) {
  process.stderr.write(
    `test:plugin: no Node >= ${MINIMUM.join('.')} found (the npm registry has no node-${process.platform}-${process.arch} ` +
      'package of that version); install one and set LOA_NODE24 to its binary\n',
  )
  process.exit(1)
}
const testDir = join(root, 'extensions', 'loa', 'test')
const files = readdirSync(testDir)
  .filter((f) => f.endsWith('.test.mjs'))
  .sort()
  .map((f) => join(testDir, f))
const result = spawnSync(node, ['--test', '--test-concurrency=1', ...files], { stdio: 'inherit', cwd: root })
process.exitCode = result.status ?? 1
