// The plugin as a user installs it: the README's `openclaw plugins install @loa/openclaw-plugin`,
// run by the real OpenClaw CLI, then loaded by OpenClaw's real loader from where that installed it.
//
// The three tarballs of a release are packed as `npm publish` would pack them (scripts/pack.mjs):
// @loa/openclaw-plugin (compiled to dist/), @loa/core, and this machine's platform package, and
// served by this test as an npm registry on 127.0.0.1 (the protocol npm speaks: a packument per
// name, then the tarball), since nothing is published yet. OpenClaw resolves the plugin there,
// creates its managed npm project, runs npm in it, checks `openclaw.install.requiredPlatformPackages`,
// scans the package, links its `openclaw` peer and records the install. npm reaches the platform
// package only through @loa/core's optionalDependencies: the registry knows all six, and npm must
// take the host's and skip the others by their os, cpu and libc without downloading them. Any
// other name gets a 404, and no other host is reachable (the proxy variables point nowhere).
// Then the loader finds the plugin through the install record (origin "global", where OpenClaw
// requires compiled JavaScript), and a conversation goes through its hooks on the addon of the
// installed platform package.
import test from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { basename, dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { packForHost } from '../../../scripts/pack.mjs'
import { packages as releasePackages, readJson } from '../../../scripts/packages.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const pluginSource = resolve(here, '..')
const require = createRequire(import.meta.url)

// OpenClaw keeps its state and its managed npm projects under OPENCLAW_STATE_DIR: a scratch one,
// set before its modules load.
const scratch = mkdtempSync(join(tmpdir(), 'loa-openclaw-package-'))
process.env.HOME = join(scratch, 'home')
process.env.OPENCLAW_STATE_DIR = join(scratch, 'state')
mkdirSync(process.env.HOME, { recursive: true })
if (!process.env.LOA_KEEP_TMP) test.after(() => rmSync(scratch, { recursive: true, force: true }))

const openclawRoot = resolve(dirname(require.resolve('openclaw')), '..')

/**
 * Serves packages the way an npm registry does: a packument per name, then the tarball. `tarballs`
 * are served whole; `manifests` (the other platforms' package.json) only as packuments whose
 * tarballs 404, so that npm must skip them by their os/cpu/libc. Records every path asked for.
 */
async function startRegistry(tarballs, manifests) {
  const packages = new Map()
  for (const tarball of tarballs) {
    const manifest = JSON.parse(spawnSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8', maxBuffer: 1 << 20 }).stdout)
    const data = readFileSync(tarball)
    packages.set(manifest.name, { manifest, data, file: basename(tarball) })
  }
  for (const manifest of manifests) {
    if (!packages.has(manifest.name)) packages.set(manifest.name, { manifest, data: null, file: `${manifest.name.split('/').pop()}-${manifest.version}.tgz` })
  }
  const requests = []
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://registry').pathname).slice(1)
    requests.push(path)
    const tarball = [...packages.values()].find((p) => path === `${p.manifest.name}/-/${p.file}`)
    if (tarball?.data) {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': tarball.data.length })
      return res.end(tarball.data)
    }
    const pkg = packages.get(path)
    if (!pkg) {
      res.writeHead(404, { 'content-type': 'application/json' })
      return res.end('{"error":"Not found"}')
    }
    const { manifest, data, file } = pkg
    const published = '2026-01-01T00:00:00.000Z'
    // A stand-in digest for a tarball never served: npm checks it only when it downloads.
    const bytes = data ?? Buffer.from(file)
    const packument = {
      name: manifest.name,
      'dist-tags': { latest: manifest.version },
      time: { created: published, modified: published, [manifest.version]: published },
      versions: {
        [manifest.version]: {
          ...manifest,
          _id: `${manifest.name}@${manifest.version}`,
          dist: {
            tarball: `http://${req.headers.host}/${manifest.name}/-/${file}`,
            shasum: createHash('sha1').update(bytes).digest('hex'),
            integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
          },
        },
      },
    }
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(packument))
  })
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok))
  return { url: `http://127.0.0.1:${server.address().port}/`, requests, close: () => new Promise((ok) => server.close(ok)) }
}

/** Runs the OpenClaw CLI (asynchronously: the registry answers from this process meanwhile). */
function openclaw(args, env) {
  return new Promise((ok) => {
    const child = spawn(process.execPath, [join(openclawRoot, 'openclaw.mjs'), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (c) => (output += c))
    child.stderr.setEncoding('utf8').on('data', (c) => (output += c))
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000)
    child.on('close', (status, signal) => {
      clearTimeout(timer)
      ok({ status, signal, output })
    })
  })
}

function sourceFiles(dir, prefix = '') {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? sourceFiles(dir, join(prefix, d.name)) : d.name.endsWith('.ts') ? [join(prefix, d.name)] : [],
  )
}

test('published, installed by `openclaw plugins install @loa/openclaw-plugin`, loaded by OpenClaw from there', async (t) => {
  const { host, core, platform, plugin } = packForHost(join(scratch, 'tarballs'), { plugin: true })

  // The compiled plugin, its manifest and README; no TypeScript source, tests or tsconfig.
  const compiled = ['index.ts', ...sourceFiles(pluginSource, 'src')].map((f) => `dist/${f.replace(/\.ts$/, '.js')}`)
  assert.deepEqual(plugin.files, ['README.md', 'openclaw.plugin.json', 'package.json', ...compiled].sort())
  t.diagnostic(`${plugin.filename}: ${plugin.size} bytes; ${core.filename}: ${core.size}; ${platform.filename}: ${platform.size}`)

  const others = releasePackages().platforms.filter((p) => p.name !== host.name)
  const registry = await startRegistry([plugin.tarball, core.tarball, platform.tarball], others.map((p) => readJson(join(p.dir, 'package.json'))))
  t.after(registry.close)
  const env = {
    ...process.env,
    npm_config_registry: registry.url,
    npm_config_cache: join(scratch, 'npm-cache'),
    npm_config_update_notifier: 'false',
    HTTP_PROXY: 'http://127.0.0.1:9',
    HTTPS_PROXY: 'http://127.0.0.1:9',
    NO_PROXY: '127.0.0.1',
  }
  // --force and --accept-capabilities answer OpenClaw's two questions (a source outside ClawHub,
  // the plugin's capabilities) without a terminal.
  const readme = readFileSync(join(pluginSource, 'README.md'), 'utf8')
  assert.match(readme, /^openclaw plugins install @loa\/openclaw-plugin$/m, 'the README gives this command')
  const installed = await openclaw(['plugins', 'install', '@loa/openclaw-plugin', '--force', '--accept-capabilities'], env)
  assert.equal(installed.status, 0, installed.output)
  assert.match(installed.output, /Installed plugin: loa/)
  assert.ok(registry.requests.includes(`@loa/openclaw-plugin/-/${plugin.filename}`), 'npm fetched the plugin')
  assert.ok(registry.requests.includes(`@loa/core/-/${core.filename}`), 'npm fetched @loa/core')
  assert.ok(registry.requests.includes(`${host.name}/-/${platform.filename}`), `npm fetched ${host.name}`)
  for (const p of others) {
    assert.ok(registry.requests.includes(p.name), `npm read ${p.name}'s manifest`)
    assert.ok(!registry.requests.some((r) => r.startsWith(`${p.name}/-/`)), `npm skipped ${p.name} by its os/cpu/libc`)
  }

  // OpenClaw's managed npm project: the plugin, @loa/core and the host's addon, as npm put them.
  const projects = join(process.env.OPENCLAW_STATE_DIR, 'npm', 'projects')
  const [project, ...moreProjects] = readdirSync(projects).filter((d) => !d.startsWith('.'))
  assert.deepEqual(moreProjects, [])
  const modules = join(projects, project, 'node_modules')
  assert.ok(existsSync(join(modules, host.name, host.addon)), 'the platform package holds the addon')
  const lock = JSON.parse(readFileSync(join(projects, project, 'package-lock.json'), 'utf8'))
  const locked = lock.packages[`node_modules/${host.name}`]
  assert.equal(locked?.optional, true, 'installed as an optional, platform-specific dependency')
  assert.deepEqual(locked.cpu, [process.arch])

  // OpenClaw's real loader, with the configuration the plugin's README gives (no load path: the
  // install record says where the plugin is).
  const { loadOpenClawPlugins } = await import(pathToFileURL(join(openclawRoot, 'dist/plugins/loader.js')).href)
  const { getGlobalHookRunner } = await import(pathToFileURL(join(openclawRoot, 'dist/plugins/hook-runner-global.js')).href)
  const workspaceDir = join(scratch, 'workspace')
  mkdirSync(workspaceDir)
  const logs = []
  const logger = Object.fromEntries(['debug', 'info', 'warn', 'error'].map((level) => [level, (msg) => logs.push({ level, msg: String(msg) })]))
  const config = { plugins: { allow: ['loa'], slots: { memory: 'loa' }, entries: { loa: { enabled: true, hooks: { allowConversationAccess: true } } } } }
  const registryOfPlugins = loadOpenClawPlugins({ config, workspaceDir, onlyPluginIds: ['loa'], logger })
  const loaded = registryOfPlugins.plugins.find((p) => p.id === 'loa')
  assert.equal(loaded?.status, 'loaded', JSON.stringify({ loaded, diagnostics: registryOfPlugins.diagnostics }))
  assert.equal(loaded.origin, 'global')
  assert.equal(loaded.source, join(modules, '@loa', 'openclaw-plugin', 'dist', 'index.js'), 'the compiled entry of the installed package')
  assert.deepEqual(registryOfPlugins.diagnostics.filter((d) => d.level === 'error'), [])
  const hooks = registryOfPlugins.typedHooks.filter((h) => h.pluginId === 'loa').map((h) => h.hookName).sort()
  assert.deepEqual(hooks, ['agent_end', 'before_compaction', 'before_prompt_build', 'before_reset', 'session_end', 'session_start'])

  // One conversation through the hooks, on the installed addon.
  const runner = getGlobalHookRunner()
  const email = `frank.${randomBytes(3).toString('hex')}@example.com`
  const ctx = (session) => ({ agentId: 'main', sessionKey: `agent:main:${session}`, sessionId: session, runId: `run-${session}`, workspaceDir })
  const messages = [
    { role: 'user', content: `Remember that we always deploy on Fridays; the report goes to ${email}.` },
    { role: 'assistant', content: 'Noted: deploys always happen on Fridays.' },
  ]
  await runner.runAgentEnd({ messages, success: true, durationMs: 10 }, ctx('s1'))
  await runner.runSessionEnd({ sessionId: 's1', sessionKey: 'agent:main:s1', messageCount: 2, reason: 'new' }, { agentId: 'main', sessionKey: 'agent:main:s1', sessionId: 's1' })
  const result = await runner.runBeforePromptBuild({ prompt: 'When do we deploy?', messages: [] }, ctx('s2'))
  assert.match(result?.prependContext ?? '', /Fridays/, JSON.stringify(logs))
  assert.ok(!result.prependContext.includes(email), 'redacted')
  await runner.runSessionEnd({ sessionId: 's2', sessionKey: 'agent:main:s2', messageCount: 0 }, { agentId: 'main', sessionKey: 'agent:main:s2', sessionId: 's2' })

  // The addon that ran is the platform package's, from OpenClaw's copy of the installed tree.
  const addons = Object.keys(require.cache).filter((f) => f.endsWith('.node'))
  assert.equal(addons.length, 1, addons.join(', '))
  assert.ok(addons[0].endsWith(join('node_modules', host.name, host.addon)), addons[0])
  assert.ok(!relative(realpathSync(process.env.OPENCLAW_STATE_DIR), realpathSync(addons[0])).startsWith('..'), `${addons[0]} is under the OpenClaw state, not the checkout`)
})
