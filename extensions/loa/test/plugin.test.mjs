// The plugin in OpenClaw's real plugin loader (no gateway, no model, no network), run by the Node
// 24 binary OpenClaw needs: manifests checked, the TypeScript entry loaded by OpenClaw itself, hooks
// fired through OpenClaw's global hook runner, state on real disk.
import test from 'node:test'
import assert from 'node:assert/strict'
import { cpSync, mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { randomBytes } from 'node:crypto'

const here = dirname(fileURLToPath(import.meta.url))
const sourceDir = resolve(here, '..')
const require = createRequire(import.meta.url)
const core = require('@loa/core')

// OpenClaw writes under HOME / OPENCLAW_STATE_DIR: keep it inside a scratch directory.
const scratch = mkdtempSync(join(tmpdir(), 'loa-openclaw-'))
process.env.HOME = join(scratch, 'home')
process.env.OPENCLAW_STATE_DIR = join(scratch, 'state')
mkdirSync(process.env.HOME, { recursive: true })
test.after(() => rmSync(scratch, { recursive: true, force: true }))

// Installed the way a user installs it: the plugin directory copied into an OpenClaw setup, and
// @loa/core as npm would install it there (its published files plus the native addon). Linking
// the repository instead would make OpenClaw capture the whole checkout as a dependency.
const setup = join(scratch, 'openclaw-setup')
const pluginDir = join(setup, 'extensions', 'loa')
cpSync(sourceDir, pluginDir, { recursive: true, filter: (src) => !src.startsWith(join(sourceDir, 'test')) })
const coreRoot = dirname(require.resolve('@loa/core/package.json'))
const installedCore = join(setup, 'node_modules', '@loa', 'core')
const published = JSON.parse(readFileSync(join(coreRoot, 'package.json'), 'utf8')).files
for (const file of ['package.json', ...published, ...readdirSync(coreRoot).filter((f) => f.endsWith('.node'))]) {
  cpSync(join(coreRoot, file), join(installedCore, file), { recursive: true })
}

// The loader and hook runner are not in openclaw's exports map: import them by path.
const openclawRoot = resolve(dirname(require.resolve('openclaw')), '..')
const { loadOpenClawPlugins } = await import(pathToFileURL(join(openclawRoot, 'dist/plugins/loader.js')).href)
const { getGlobalHookRunner } = await import(pathToFileURL(join(openclawRoot, 'dist/plugins/hook-runner-global.js')).href)

const REQUIRED = ['agent_end', 'before_compaction', 'before_prompt_build', 'session_end']

function workspace() {
  const dir = join(scratch, `ws-${randomBytes(4).toString('hex')}`)
  mkdirSync(dir, { recursive: true })
  return dir
}

function load({ access = true, pluginConfig = {}, workspaceDir = workspace() } = {}) {
  const logs = []
  const logger = Object.fromEntries(['debug', 'info', 'warn', 'error'].map((level) => [level, (msg) => logs.push({ level, msg: String(msg) })]))
  const config = {
    plugins: {
      allow: ['loa'],
      load: { paths: [pluginDir] },
      entries: { loa: { enabled: true, ...(access ? { hooks: { allowConversationAccess: true } } : {}), config: pluginConfig } },
    },
  }
  const registry = loadOpenClawPlugins({ config, workspaceDir, onlyPluginIds: ['loa'], logger })
  return { registry, logs, runner: getGlobalHookRunner(), workspaceDir }
}

const agentCtx = (workspaceDir, session) => ({
  agentId: 'main',
  sessionKey: `agent:main:${session}`,
  sessionId: session,
  runId: `run-${session}`,
  workspaceDir,
})
const sessionCtx = (session) => ({ agentId: 'main', sessionKey: `agent:main:${session}`, sessionId: session })

/** Every file under `dir`, as text, for "this never reached the disk" checks. */
function allFiles(dir) {
  const out = []
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) out.push(...allFiles(path))
    else out.push({ path, text: readFileSync(path, 'latin1') })
  }
  return out
}

// Planted values, made at run time so that no secret-looking literal sits in the repository.
const email = `alice.${randomBytes(3).toString('hex')}@example.com`
const apiKey = `ghp_${randomBytes(27).toString('base64').replace(/[^A-Za-z0-9]/g, 'x').slice(0, 36)}`

test('the registry holds our typed hooks and no error diagnostics', () => {
  const { registry } = load()
  const plugin = registry.plugins.find((p) => p.id === 'loa')
  assert.equal(plugin?.status, 'loaded', JSON.stringify(plugin))
  assert.deepEqual(registry.diagnostics.filter((d) => d.level === 'error'), [])
  const hooks = registry.typedHooks.filter((h) => h.pluginId === 'loa').map((h) => h.hookName).sort()
  assert.deepEqual(hooks, REQUIRED)
})

test('what is said in one session comes back, redacted and within budget, in the next', async () => {
  const budget = 300
  const { runner, workspaceDir, logs } = load({ pluginConfig: { contextTokenBudget: budget } })
  const first = agentCtx(workspaceDir, 's1')
  assert.equal(await runner.runBeforePromptBuild({ prompt: 'hi', messages: [] }, first).then((r) => r?.prependContext), undefined)
  const messages = [
    { role: 'user', content: `Remember that we always deploy on Fridays. Mail the report to ${email}; the CI token is ${apiKey}.` },
    { role: 'assistant', content: [{ type: 'text', text: `Noted: deploys always happen on Fridays, and the weekly report goes to ${email}.` }] },
  ]
  await runner.runAgentEnd({ messages, success: true, durationMs: 20 }, first)
  await runner.runSessionEnd({ sessionId: 's1', sessionKey: 'agent:main:s1', messageCount: 2, reason: 'new' }, sessionCtx('s1'))

  const second = { ...agentCtx(workspaceDir, 's2'), contextTokenBudget: 200_000 }
  const result = await runner.runBeforePromptBuild({ prompt: 'When do we deploy?', messages: [] }, second)
  const context = result?.prependContext
  assert.equal(typeof context, 'string', `no context came back; logs: ${JSON.stringify(logs)}`)
  assert.match(context, /Fridays/)
  assert.ok(!context.includes(email) && !context.includes(apiKey), 'context is redacted')
  assert.match(context, /\[REDACTED:EMAIL\]|\[EMAIL_/)
  assert.ok(core.countTokens(context) <= budget, `${core.countTokens(context)} tokens > ${budget}`)
  for (const file of allFiles(workspaceDir)) {
    assert.ok(!file.text.includes(email) && !file.text.includes(apiKey), `${file.path} holds a planted secret`)
  }
  assert.ok(readFileSync(join(workspaceDir, 'grimoires/loa/NOTES.md'), 'utf8').includes('Fridays'), 'consolidated into NOTES.md')
  await runner.runSessionEnd({ sessionId: 's2', sessionKey: 'agent:main:s2', messageCount: 0 }, sessionCtx('s2'))
})

test('a failing capture is retried, then dead-lettered redacted, and the agent carries on', async () => {
  const { runner, workspaceDir, logs } = load({ pluginConfig: { retry: { attempts: 3, baseDelayMs: 5 } } })
  // A file where the write-ahead log's directory should be: every capture attempt fails.
  mkdirSync(join(workspaceDir, '.loa'), { recursive: true })
  writeFileSync(join(workspaceDir, '.loa', 'wal'), 'not a directory')
  const ctx = agentCtx(workspaceDir, 'broken')
  const messages = [{ role: 'assistant', content: `I will always send the invoice to ${email} on the first of the month.` }]
  await runner.runAgentEnd({ messages, success: true }, ctx) // returns after the first attempt
  while (!logs.some((l) => /dead-lettered/.test(l.msg))) await new Promise((r) => setTimeout(r, 5))

  const lines = readFileSync(join(workspaceDir, '.loa', 'dead-letter.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l))
  assert.equal(lines.length, 1)
  const [dead] = lines
  assert.equal(dead.attempts, 3)
  assert.equal(dead.error.code, 'E_IO')
  assert.match(dead.entry.content, /invoice/)
  assert.ok(!JSON.stringify(dead).includes(email), 'dead letter is redacted')
  const attempts = logs.filter((l) => /failed \(attempt \d\/3\)/.test(l.msg))
  assert.equal(attempts.length, 3, JSON.stringify(logs))
  // Fail-open: the next prompt still gets built (without memory), nothing throws.
  assert.equal(await runner.runBeforePromptBuild({ prompt: 'hi', messages: [] }, ctx).then((r) => r?.prependContext), undefined)
  assert.ok(logs.some((l) => l.level === 'error' && /before_prompt_build failed, continuing without memory: E_IO/.test(l.msg)))
})

test('a missing conversation permission is reported as such', () => {
  const { registry, logs } = load({ access: false })
  const hooks = registry.typedHooks.filter((h) => h.pluginId === 'loa').map((h) => h.hookName).sort()
  assert.deepEqual(hooks, ['before_compaction', 'session_end'])
  assert.ok(registry.diagnostics.some((d) => /before_prompt_build.*allowConversationAccess/.test(d.message)))
  const ours = logs.filter((l) => l.level === 'error' && l.msg.startsWith('[loa]'))
  assert.equal(ours.length, 1, JSON.stringify(logs))
  assert.match(ours[0].msg, /plugins\.entries\.loa\.hooks\.allowConversationAccess: true/)
  assert.match(ours[0].msg, /before_prompt_build, agent_end/)
})

test('stopping the plugin runs pending retries at once and stores what they hold', { timeout: 120_000 }, async () => {
  // A retry that would otherwise wait ten minutes: only the plugin's stop can run it in time
  // (the test's timeout is what fails if it does not).
  const { registry, runner, workspaceDir, logs } = load({ pluginConfig: { retry: { attempts: 3, baseDelayMs: 600_000 } } })
  mkdirSync(join(workspaceDir, '.loa'), { recursive: true })
  writeFileSync(join(workspaceDir, '.loa', 'wal'), 'not a directory')
  const ctx = agentCtx(workspaceDir, 'stopping')
  const messages = [{ role: 'assistant', content: `We always rotate the staging certificates on Mondays; questions go to ${email}.` }]
  await runner.runAgentEnd({ messages, success: true }, ctx) // returns after the first attempt
  assert.ok(logs.some((l) => /failed \(attempt 1\/3\)/.test(l.msg)), JSON.stringify(logs))
  rmSync(join(workspaceDir, '.loa', 'wal')) // the disk recovers; the retry is still ten minutes away

  // How OpenClaw stops a plugin instance (reload, uninstall, shutdown): its lifecycle's dispose,
  // which runs what the plugin registered with `api.lifecycle.onDispose`. The loader keeps
  // instances in a process-wide singleton keyed by the plugin's registry record.
  const record = registry.plugins.find((p) => p.id === 'loa')
  const instance = globalThis[Symbol.for('openclaw.pluginInstanceState')]?.records.get(record)?.instance
  assert.equal(typeof instance?.dispose, 'function', 'OpenClaw exposes no dispose for the plugin instance')
  await instance.dispose()

  assert.ok(!logs.some((l) => /dead-lettered/.test(l.msg)), JSON.stringify(logs))
  assert.ok(!readdirSync(join(workspaceDir, '.loa')).includes('dead-letter.jsonl'))
  const notes = readFileSync(join(workspaceDir, 'grimoires/loa/NOTES.md'), 'utf8')
  assert.match(notes, /staging certificates on Mondays/, 'stop consolidated the retried capture')
  assert.ok(!notes.includes(email), 'NOTES.md is redacted')
})
