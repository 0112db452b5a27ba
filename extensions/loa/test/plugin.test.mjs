// The plugin in OpenClaw's real plugin loader (no gateway, no model, no network), run by the Node
// 24 binary OpenClaw needs: manifests checked, the TypeScript entry loaded by OpenClaw itself, hooks
// fired through OpenClaw's global hook runner, state on real disk.
import test from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createHash, randomBytes } from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { loopfs } from '../../../__test__/loopfs.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const sourceDir = resolve(here, '..')
const repo = resolve(sourceDir, '..', '..')
const require = createRequire(import.meta.url)
const core = require('@loa/core')

// OpenClaw writes under HOME / OPENCLAW_STATE_DIR: keep it inside a scratch directory.
const scratch = mkdtempSync(join(tmpdir(), 'loa-openclaw-'))
process.env.HOME = join(scratch, 'home')
process.env.OPENCLAW_STATE_DIR = join(scratch, 'state')
mkdirSync(process.env.HOME, { recursive: true })
test.after(() => rmSync(scratch, { recursive: true, force: true }))

// Installed from the checkout as the plugin's README says: `loa plugin install <extensions dir>`
// (the plugin, with @loa/core and its addon inside it as npm would install them), then the
// README's configuration with `plugins.load.paths` naming the installed copy. Loading the
// checkout's extensions/loa in place is what OpenClaw refuses (see bin/commands/plugin.js). The
// published package, installed by OpenClaw's own installer, is package.test.mjs's.
const setup = join(scratch, 'openclaw-setup')
const extensionsDir = join(setup, 'extensions')
mkdirSync(extensionsDir, { recursive: true })
const loaCli = (args) => spawnSync(process.execPath, [join(repo, 'bin', 'loa'), ...args], { encoding: 'utf8', timeout: 120_000 })
const installed = loaCli(['plugin', 'install', extensionsDir])
assert.equal(installed.status, 0, installed.stderr)
const pluginDir = join(extensionsDir, 'loa')

// The loader and hook runner are not in openclaw's exports map: import them by path.
const openclawRoot = resolve(dirname(require.resolve('openclaw')), '..')
const { loadOpenClawPlugins } = await import(pathToFileURL(join(openclawRoot, 'dist/plugins/loader.js')).href)
const { getGlobalHookRunner } = await import(pathToFileURL(join(openclawRoot, 'dist/plugins/hook-runner-global.js')).href)
// The memory slot's host side: the active memory search manager and the prompt section. Imported
// here, before any test is declared: a top-level await between tests lets node:test finish the
// tests declared so far and run the file's after hook (removing the scratch directory).
const { getActiveMemorySearchManager } = await import(pathToFileURL(join(openclawRoot, 'dist/plugin-sdk/memory-host-search.js')).href)
const { buildMemoryPromptSection } = await import(pathToFileURL(join(openclawRoot, 'dist/plugins/memory-state.js')).href)

const REQUIRED = ['agent_end', 'before_compaction', 'before_prompt_build', 'before_reset', 'session_end', 'session_start']

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
      slots: { memory: 'loa' },
      entries: { loa: { enabled: true, ...(access ? { hooks: { allowConversationAccess: true } } : {}), config: pluginConfig } },
    },
  }
  const registry = loadOpenClawPlugins({ config, workspaceDir, onlyPluginIds: ['loa'], logger })
  return { registry, logs, runner: getGlobalHookRunner(), workspaceDir, config }
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

// "Clear, don't compact" (issue 14): what a session decided survives compaction and /clear.
const ledgerTurn = (decision) => [
  { role: 'user', content: 'How should we rate limit the public API?' },
  {
    role: 'assistant',
    content: [{ type: 'text', text: `Decision: ${decision}\nRationale: it protects the database\nThe limit lives at \${PROJECT_ROOT}/src/limits.ts:1\nOpen question: should admins be exempt?` }],
  },
]

function ledgerWorkspace(yaml = '') {
  const dir = workspace()
  mkdirSync(join(dir, 'src'))
  writeFileSync(join(dir, 'src', 'limits.ts'), 'export const REQUESTS_PER_MINUTE = 100\n')
  if (yaml) writeFileSync(join(dir, '.loa.config.yaml'), yaml)
  return dir
}

function trajectoryRecords(dir) {
  const trajectory = join(dir, 'grimoires/loa/a2a/trajectory')
  return readdirSync(trajectory)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) => readFileSync(join(trajectory, f), 'utf8').trim().split('\n').map((l) => JSON.parse(l)))
}

// At the default configuration (no .loa.config.yaml, no plugin config): level 1 at its default
// budget carries the Active Context and the decision made before compaction.
test('decisions made before compaction come back first in the next prompt, within the one budget, at the default config', async () => {
  const budget = 2000 // the plugin's default contextTokenBudget
  const level1Tokens = core.loadConfig(scratch).config.sessionContinuity.level1Tokens
  const workspaceDir = ledgerWorkspace()
  const { runner, logs } = load({ workspaceDir })
  const ctx = agentCtx(workspaceDir, 'ledger-1')
  const decision = 'Rate limit the public API at 100 requests per minute per token'
  const messages = ledgerTurn(decision)
  await runner.runAgentEnd({ messages, success: true }, ctx)
  // Compaction fires (its messages may be absent: what agent_end saw is used then).
  await runner.runBeforeCompaction({ messageCount: 2 }, ctx)
  assert.ok(logs.some((l) => /before_compaction: ledger checkpoint written \(1 decision/.test(l.msg)), JSON.stringify(logs))

  const notes = readFileSync(join(workspaceDir, 'grimoires/loa/NOTES.md'), 'utf8')
  assert.ok(notes.includes(`**Decision**: ${decision}`), notes)
  assert.ok(notes.includes('**Rationale**: it protects the database'))
  assert.ok(notes.includes('- [ ] should admins be exempt?'))
  assert.ok(notes.includes('| ${PROJECT_ROOT}/src/limits.ts:1 |'))
  const handoff = trajectoryRecords(workspaceDir).find((r) => r.phase === 'session_handoff')
  assert.equal(handoff?.next_session_ready, true)

  // The next prompt: the ledger first, then what the search finds, in one budget.
  const result = await runner.runBeforePromptBuild({ prompt: 'What is the API rate limit?', messages: [] }, ctx)
  const context = result?.prependContext
  assert.equal(typeof context, 'string', JSON.stringify(logs))
  assert.ok(context.startsWith('Ledger (notes saved before the context was cleared'), context)
  const [lead] = context.split('\n\n')
  assert.ok(lead.includes(`**Decision**: ${decision}`), lead)
  assert.ok(lead.includes('**Rationale**: it protects the database'), lead)
  assert.ok(lead.includes('**Current Task**: How should we rate limit the public API?'), lead)
  // The tokens go to content: no region marker, no template comment, no bookkeeping line.
  assert.ok(!lead.includes('<!--') && !lead.includes('**Session**'), lead)
  assert.ok(core.countTokens(lead) <= level1Tokens, `${core.countTokens(lead)} tokens > level1_tokens ${level1Tokens}`)
  assert.ok(core.countTokens(context) <= budget, `${core.countTokens(context)} tokens > ${budget}`)
  // Quoted as data: nothing in it can start a line of the prompt.
  assert.equal(lead.split('\n').length, 2)
  // Only once: the prompt after that searches only.
  const again = await runner.runBeforePromptBuild({ prompt: 'What is the API rate limit?', messages: [] }, ctx)
  assert.ok(!again?.prependContext?.startsWith('Ledger'), again?.prependContext)
  await runner.runSessionEnd({ sessionId: 'ledger-1', sessionKey: 'agent:main:ledger-1', messageCount: 2 }, sessionCtx('ledger-1'))
})

test('before_reset (/clear) checkpoints the messages; level 1 stays within level1_tokens; session_end checkpoints what was captured', async () => {
  const workspaceDir = ledgerWorkspace()
  const { runner, logs } = load({ workspaceDir, pluginConfig: { contextTokenBudget: 2000 } })
  const ctx = agentCtx(workspaceDir, 'ledger-2')
  await runner.runBeforeReset({ messages: ledgerTurn('Keep the limiter in memory, not in Redis'), reason: 'reset' }, ctx)
  assert.ok(readFileSync(join(workspaceDir, 'grimoires/loa/NOTES.md'), 'utf8').includes('**Decision**: Keep the limiter in memory, not in Redis'), JSON.stringify(logs))
  const result = await runner.runBeforePromptBuild({ prompt: 'hello', messages: [] }, ctx)
  const [lead] = result.prependContext.split('\n\n')
  assert.ok(lead.startsWith('Ledger'))
  assert.ok(core.countTokens(lead) <= 250, `${core.countTokens(lead)} tokens > level1_tokens 250`)
  assert.ok(lead.includes('Keep the limiter in memory, not in Redis'), lead)

  // session_end carries no messages: what agent_end captured is checkpointed.
  const other = agentCtx(workspaceDir, 'ledger-3')
  await runner.runAgentEnd({ messages: ledgerTurn('Return 429 with a Retry-After header'), success: true }, other)
  await runner.runSessionEnd({ sessionId: 'ledger-3', sessionKey: 'agent:main:ledger-3', messageCount: 2, reason: 'new' }, sessionCtx('ledger-3'))
  assert.ok(readFileSync(join(workspaceDir, 'grimoires/loa/NOTES.md'), 'utf8').includes('**Decision**: Return 429 with a Retry-After header'))
  assert.equal(trajectoryRecords(workspaceDir).filter((r) => r.phase === 'session_handoff').length, 2)
  // A session start owes the next prompt the ledger too.
  await runner.runSessionStart({ sessionId: 'ledger-4', sessionKey: 'agent:main:ledger-4' }, sessionCtx('ledger-4'))
  const fresh = await runner.runBeforePromptBuild({ prompt: 'hello', messages: [] }, agentCtx(workspaceDir, 'ledger-4'))
  assert.ok(fresh?.prependContext?.startsWith('Ledger'), fresh?.prependContext)
  assert.ok(!logs.some((l) => l.level === 'error'), JSON.stringify(logs.filter((l) => l.level === 'error')))
})

test('a failing capture is retried, then dead-lettered redacted, and the agent carries on', async () => {
  const { runner, workspaceDir, logs } = load({ pluginConfig: { retry: { attempts: 3, baseDelayMs: 5 } } })
  // A file where the write-ahead log's directory should be: every capture attempt fails.
  mkdirSync(join(workspaceDir, '.loa'), { recursive: true })
  writeFileSync(join(workspaceDir, '.loa', 'wal'), 'not a directory')
  const ctx = agentCtx(workspaceDir, 'broken')
  const messages = [{ role: 'assistant', content: `I will always send the invoice to ${email} on the first of the month.` }]
  await runner.runAgentEnd({ messages, success: true }, ctx) // returns after the first attempt
  await until(() => logs.some((l) => /dead-lettered/.test(l.msg)), 'the dead letter')

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
  assert.deepEqual(hooks, ['before_compaction', 'before_reset', 'session_end', 'session_start'])
  assert.ok(registry.diagnostics.some((d) => /before_prompt_build.*allowConversationAccess/.test(d.message)))
  const ours = logs.filter((l) => l.level === 'error' && l.msg.startsWith('[loa]'))
  assert.equal(ours.length, 1, JSON.stringify(logs))
  assert.match(ours[0].msg, /plugins\.entries\.loa\.hooks\.allowConversationAccess: true/)
  assert.match(ours[0].msg, /before_prompt_build, agent_end/)
})

test('stopping the plugin runs pending retries at once and stores what they hold', { timeout: 600_000 }, async () => {
  // A retry that would otherwise wait an hour: only the plugin's stop can run it in time (the
  // test's timeout, ten minutes to leave a loaded machine room, is what fails if it does not).
  const { registry, runner, workspaceDir, logs } = load({ pluginConfig: { retry: { attempts: 3, baseDelayMs: 3_600_000 } } })
  mkdirSync(join(workspaceDir, '.loa'), { recursive: true })
  writeFileSync(join(workspaceDir, '.loa', 'wal'), 'not a directory')
  const ctx = agentCtx(workspaceDir, 'stopping')
  const messages = [{ role: 'assistant', content: `We always rotate the staging certificates on Mondays; questions go to ${email}.` }]
  await runner.runAgentEnd({ messages, success: true }, ctx) // returns after the first attempt
  assert.ok(logs.some((l) => /failed \(attempt 1\/3\)/.test(l.msg)), JSON.stringify(logs))
  rmSync(join(workspaceDir, '.loa', 'wal')) // the disk recovers; the retry is still an hour away

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

/** The WAL session id the plugin uses for an OpenClaw session key (as src/memory.ts derives it). */
function walSessionId(key) {
  const safe = key.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[.-]+/, '').slice(0, 100)
  return safe === key ? key : `${safe || 'session'}-${createHash('sha256').update(key).digest('hex').slice(0, 10)}`
}

/** WAL records that carry a memory, per memory path, across every session of a workspace. */
function memoryWrites(workspaceDir) {
  const counts = new Map()
  for (const r of core.readWal(join(workspaceDir, '.loa', 'wal'))) {
    if (r.op === 'write' && r.path?.startsWith('memory/')) counts.set(r.path, (counts.get(r.path) ?? 0) + 1)
  }
  return counts
}

// The deadline is a guard against a hang (minutes: a loaded machine is slow, not hung).
const until = async (predicate, what, ms = 600_000) => {
  const started = performance.now()
  while (!predicate()) {
    if (performance.now() - started > ms) assert.fail(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

test('the README is what this test does: loa plugin install, then plugins.load.paths at the installed copy', () => {
  const readme = readFileSync(join(sourceDir, 'README.md'), 'utf8')
  assert.match(readme, /loa plugin install ~\/\.openclaw\/extensions/)
  assert.match(readme, /load: \{ paths: \["~\/\.openclaw\/extensions\/loa"\] \}/)
  assert.match(readme, /slots: \{ memory: "loa" \}/, 'the README sets the memory slot, as load() does')
  assert.match(installed.stdout, /^installed the loa plugin in .*openclaw-setup\/extensions\/loa \(@loa\/core /)
  for (const file of ['index.ts', 'openclaw.plugin.json', 'package.json', 'src/memory.ts', 'node_modules/@loa/core/index.js', 'node_modules/@loa/core/package.json']) {
    assert.ok(existsSync(join(pluginDir, file)), `${file} was not installed`)
  }
  assert.ok(readdirSync(join(pluginDir, 'node_modules/@loa/core')).some((f) => f.endsWith('.node')), 'no native addon installed')
  assert.ok(!existsSync(join(pluginDir, 'test')), 'the tests were installed')

  // Installing again replaces the earlier install (and only an install of this plugin).
  writeFileSync(join(pluginDir, 'stale-file'), 'from the earlier install')
  const again = loaCli(['plugin', 'install', extensionsDir, '--json'])
  assert.equal(again.status, 0, again.stderr)
  assert.equal(JSON.parse(again.stdout).replaced, true)
  assert.ok(!existsSync(join(pluginDir, 'stale-file')))
  const foreign = join(scratch, 'foreign-extensions')
  mkdirSync(join(foreign, 'loa'), { recursive: true })
  writeFileSync(join(foreign, 'loa', 'mine.txt'), 'not a plugin')
  const refused = loaCli(['plugin', 'install', foreign])
  assert.equal(refused.status, 2)
  assert.match(refused.stderr, /^loa: E_IO: .*EEXIST.*\n$/)
  assert.equal(readFileSync(join(foreign, 'loa', 'mine.txt'), 'utf8'), 'not a plugin')
  // The checkout's own extensions directory is the one place it must never install into.
  const self = loaCli(['plugin', 'install', join(repo, 'extensions')])
  assert.equal(self.status, 2)
  assert.match(self.stderr, /^loa: E_USAGE: /)
  assert.ok(existsSync(join(sourceDir, 'index.ts')))

  // And the installed copy loads.
  const { registry } = load()
  assert.equal(registry.plugins.find((p) => p.id === 'loa')?.status, 'loaded')
})

test('a capture the disk refused is dead-lettered, and stored exactly once at the next plugin start', async () => {
  const workspaceDir = workspace()
  const first = load({ workspaceDir, pluginConfig: { retry: { attempts: 2, baseDelayMs: 5 } } })
  // A real refusal: a file where the write-ahead log's directory belongs.
  mkdirSync(join(workspaceDir, '.loa'), { recursive: true })
  writeFileSync(join(workspaceDir, '.loa', 'wal'), 'not a directory')
  const messages = [{ role: 'assistant', content: `We always rotate the staging certificates on Mondays; questions go to ${email}.` }]
  await first.runner.runAgentEnd({ messages, success: true }, agentCtx(workspaceDir, 'lost'))
  await until(() => first.logs.some((l) => /dead-lettered/.test(l.msg)), 'the dead letter')
  const queued = core.listDeadLetters({ workspaceDir })
  assert.equal(queued.letters.length, 1)
  assert.equal(queued.letters[0].sessionId, walSessionId('agent:main:lost'))
  assert.equal(queued.letters[0].attempts, 2)
  assert.ok(!readFileSync(queued.path, 'utf8').includes(email), 'the dead letter is redacted')

  // The disk recovers. The plugin starts again: before its first store opens, the letter is
  // stored, in the session it came from, and the next prompt already remembers it.
  rmSync(join(workspaceDir, '.loa', 'wal'))
  const second = load({ workspaceDir })
  const recalled = await second.runner.runBeforePromptBuild({ prompt: 'When do certificates rotate?', messages: [] }, agentCtx(workspaceDir, 'next'))
  assert.match(recalled?.prependContext ?? '', /staging certificates on Mondays/, JSON.stringify(second.logs))
  assert.ok(second.logs.some((l) => /dead letters in .* replayed at start: 1 stored, 0 already stored/.test(l.msg)), JSON.stringify(second.logs))
  assert.deepEqual(core.listDeadLetters({ workspaceDir }).letters, [])
  assert.deepEqual([...memoryWrites(workspaceDir).values()], [1])
  for (const l of second.logs) assert.ok(!l.msg.includes('certificates') && !l.msg.includes(email), `content in a log line: ${l.msg}`)

  // Starting once more, and replaying by hand, store nothing more.
  const third = load({ workspaceDir })
  await third.runner.runBeforePromptBuild({ prompt: 'hi', messages: [] }, agentCtx(workspaceDir, 'third'))
  assert.ok(!third.logs.some((l) => /replayed/.test(l.msg)), JSON.stringify(third.logs))
  assert.equal(core.replayDeadLettersSync({ workspaceDir }).results.length, 0)
  assert.deepEqual([...memoryWrites(workspaceDir).values()], [1])
  for (const { runner, session } of [
    { runner: second.runner, session: 'next' },
    { runner: third.runner, session: 'third' },
  ]) {
    await runner.runSessionEnd({ sessionId: session, sessionKey: `agent:main:${session}`, messageCount: 0 }, sessionCtx(session))
  }
})

test('a session start replays what the disk refused earlier in the same run', async () => {
  const workspaceDir = workspace()
  const { runner, logs } = load({ workspaceDir, pluginConfig: { retry: { attempts: 1, baseDelayMs: 1 } } })
  assert.equal(typeof runner.runSessionStart, 'function', 'OpenClaw has no session_start runner')
  // The plugin meets the workspace while all is well.
  await runner.runBeforePromptBuild({ prompt: 'hi', messages: [] }, agentCtx(workspaceDir, 'a'))
  // Then one session's log directory is refused: a file where it belongs.
  const blocked = join(workspaceDir, '.loa', 'wal', 'sessions', walSessionId('agent:main:b'))
  mkdirSync(dirname(blocked), { recursive: true })
  writeFileSync(blocked, 'not a directory')
  const messages = [{ role: 'user', content: 'Remember that the on-call rotation changes every Thursday at noon.' }]
  await runner.runAgentEnd({ messages, success: true }, agentCtx(workspaceDir, 'b'))
  await until(() => logs.some((l) => /dead-lettered/.test(l.msg)), 'the dead letter')
  assert.equal(core.listDeadLetters({ workspaceDir }).letters.length, 1)

  // A session start while the cause is still there: the letter stays, its attempts counted.
  await runner.runSessionStart({ sessionId: 'c', sessionKey: 'agent:main:c' }, sessionCtx('c'))
  assert.ok(logs.some((l) => l.level === 'warn' && /replayed at session start: 0 stored.*1 still failing/.test(l.msg)), JSON.stringify(logs))
  assert.equal(core.listDeadLetters({ workspaceDir }).letters[0].attempts, 2)

  rmSync(blocked)
  await runner.runSessionStart({ sessionId: 'd', sessionKey: 'agent:main:d' }, sessionCtx('d'))
  assert.ok(logs.some((l) => /replayed at session start: 1 stored/.test(l.msg)), JSON.stringify(logs))
  assert.deepEqual(core.listDeadLetters({ workspaceDir }).letters, [])
  assert.equal(memoryWrites(workspaceDir).size, 1)
  await runner.runSessionEnd({ sessionId: 'a', sessionKey: 'agent:main:a', messageCount: 0 }, sessionCtx('a'))
  assert.match(readFileSync(join(workspaceDir, 'grimoires/loa/NOTES.md'), 'utf8'), /on-call rotation changes every Thursday/)
})

test('pseudonyms use redaction.key in the configured signing.keysDir, which is never read through a symlink', async () => {
  const { runner, workspaceDir, logs } = load({ pluginConfig: { redaction: { pseudonymize: true } } })
  writeFileSync(join(workspaceDir, '.loa.config.yaml'), 'signing:\n  keys_dir: secrets/keys\n')
  const ctx = agentCtx(workspaceDir, 'pseudo')
  const messages = [{ role: 'user', content: `Remember that the weekly report always goes to ${email}.` }]
  await runner.runAgentEnd({ messages, success: true }, ctx)
  await runner.runSessionEnd({ sessionId: 'pseudo', sessionKey: 'agent:main:pseudo', messageCount: 1, reason: 'new' }, sessionCtx('pseudo'))
  const keyFile = join(workspaceDir, 'secrets', 'keys', 'redaction.key')
  assert.ok(existsSync(keyFile), `no key in the configured directory; logs: ${JSON.stringify(logs)}`)
  assert.equal(statSync(keyFile).mode & 0o777, 0o600)
  assert.ok(!existsSync(join(workspaceDir, '.loa', 'keys')), 'nothing in the default directory')
  const key = readFileSync(keyFile)
  const pseudonym = core.redact(email, { key, pseudonymize: true }).text
  const context = (await runner.runBeforePromptBuild({ prompt: 'Where does the weekly report go?', messages: [] }, { ...agentCtx(workspaceDir, 'pseudo-2'), contextTokenBudget: 200_000 }))?.prependContext
  assert.ok(typeof context === 'string' && context.includes(pseudonym), 'the stored pseudonym is the one of that key')

  // A symlink where the key belongs: refused, the file it points to neither read nor changed.
  const other = load({ pluginConfig: { redaction: { pseudonymize: true } } })
  const keys = join(other.workspaceDir, '.loa', 'keys')
  mkdirSync(keys, { recursive: true })
  const outside = join(scratch, `outside-${randomBytes(4).toString('hex')}`)
  writeFileSync(outside, 'not a key')
  symlinkSync(outside, join(keys, 'redaction.key'))
  assert.equal(await other.runner.runBeforePromptBuild({ prompt: 'hi', messages: [] }, agentCtx(other.workspaceDir, 'linked')).then((r) => r?.prependContext), undefined)
  assert.ok(other.logs.some((l) => l.level === 'error' && /E_NOT_REGULAR_FILE/.test(l.msg)), JSON.stringify(other.logs))
  assert.equal(readFileSync(outside, 'utf8'), 'not a key')
})

// ---------------------------------------------------------------------------------------------
// The memory slot: plugins.slots.memory = "loa"
// ---------------------------------------------------------------------------------------------


/** The plugin's tools as OpenClaw's registry builds them for one agent turn. */
function tools(registry, ctx) {
  const registrations = registry.tools.filter((t) => t.pluginId === 'loa')
  assert.equal(registrations.length, 1)
  const built = [registrations[0].factory(ctx)].flat()
  const byName = Object.fromEntries(built.map((t) => [t.name, t]))
  let call = 0
  const run = async (name, params) => (await byName[name].execute(`call-${++call}`, params)).details
  return { names: built.map((t) => t.name).sort(), run }
}

/** Files under `dir` whose bytes hold `needle` (WAL segments, temp files and the index included). */
function filesHolding(dir, needle) {
  return allFiles(dir).filter((f) => f.text.includes(needle)).map((f) => f.path)
}

test('in the memory slot: captured in one session, found by memory_search and by the next prompt in another, read by memory_get, forgotten everywhere', async () => {
  const { registry, runner, workspaceDir, config, logs } = load()
  const plugin = registry.plugins.find((p) => p.id === 'loa')
  assert.equal(plugin?.status, 'loaded', JSON.stringify({ plugins: registry.plugins.map((p) => [p.id, p.status, p.error]), diagnostics: registry.diagnostics, logs }))
  assert.equal(plugin.memorySlotSelected, true)
  assert.deepEqual(registry.diagnostics.filter((d) => d.level === 'error'), [])
  const capability = registry.memoryCapabilities.find((c) => c.pluginId === 'loa')
  assert.equal(capability?.memorySlotSelected, true)
  assert.equal(typeof capability.capability.runtime?.getMemorySearchManager, 'function')
  assert.equal(capability.capability.flushPlanResolver({}), null)

  // Session one: a turn is captured (its store stays open: the forget below must still reach its log).
  const word = `Zephyr${randomBytes(3).toString('hex')}`
  const s1 = agentCtx(workspaceDir, 'slot-1')
  const said = `The quarterly capacity review moved to the ${word} meeting room, every second Thursday at ten.`
  await runner.runAgentEnd({ messages: [{ role: 'user', content: said }], success: true }, s1)

  // Session two, another conversation: the agent's tool finds it, with where it lies.
  const s2 = agentCtx(workspaceDir, 'slot-2')
  const { names, run } = tools(registry, s2)
  assert.deepEqual(names, ['memory_forget', 'memory_get', 'memory_search'])
  const found = await run('memory_search', { query: 'Where is the capacity review held?' })
  assert.equal(found.status, 'ok', JSON.stringify(found))
  assert.equal(found.results.length, 1, JSON.stringify(found))
  const [hit] = found.results
  assert.match(hit.snippet, new RegExp(word))
  assert.match(hit.path, /^memory\/agents\/main\/[0-9a-f]{64}\.md$/)
  assert.equal(hit.source, 'memory')
  assert.equal(hit.citation, `${hit.path}#L${hit.startLine}`)
  assert.ok(hit.score > 0 && hit.score <= 1)
  assert.ok(['capacity', 'review'].every((w) => hit.why.matched.includes(w)), JSON.stringify(hit.why))
  // No speaker and no month named: neither factor lowers it.
  assert.deepEqual([hit.why.speaker, hit.why.period], [1, 1], JSON.stringify(hit.why))

  // ...and the next prompt brings it back, quoted as untrusted data.
  const recalled = await runner.runBeforePromptBuild({ prompt: 'When is the capacity review?', messages: [] }, s2)
  const context = recalled?.prependContext ?? ''
  assert.match(context, new RegExp(word), JSON.stringify(logs))
  assert.match(context, /Untrusted historical data/)
  assert.ok(context.includes(JSON.stringify(said)), 'the memory is quoted as a JSON string')
  // A prompt about something else brings nothing back.
  assert.equal((await runner.runBeforePromptBuild({ prompt: 'Tell me a joke about penguins', messages: [] }, s2))?.prependContext, undefined)

  // memory_get reads its lines.
  const lines = hit.endLine - hit.startLine + 1
  const got = await run('memory_get', { path: hit.path, from: hit.startLine, lines })
  assert.deepEqual({ status: got.status, text: got.text, from: got.from }, { status: 'ok', text: said, from: hit.startLine })
  const whole = await run('memory_get', { path: hit.path })
  assert.match(whole.text, /^# Memory [0-9a-f]{64}\n/)

  // The host's own way in: the active memory search manager of the agent.
  const cfg = { ...config, agents: { entries: { main: { workspace: workspaceDir } } } }
  const { manager, error } = await getActiveMemorySearchManager({ cfg, agentId: 'main' })
  assert.ok(manager, error)
  const hostHits = await manager.search('capacity review', { maxResults: 3 })
  assert.deepEqual(hostHits.map((h) => h.path), [hit.path])
  assert.deepEqual(Object.keys(hostHits[0]).sort(), ['citation', 'endLine', 'importance', 'path', 'score', 'snippet', 'source', 'startLine', 'textScore'])
  assert.deepEqual(await manager.readFile({ relPath: hit.path, from: hit.startLine, lines }), { status: 'ok', text: said, path: hit.path, from: hit.startLine, lines })
  assert.deepEqual(await manager.readFile({ relPath: `memory/shared/${'0'.repeat(64)}.md` }), { status: 'not_found', text: '', path: `memory/shared/${'0'.repeat(64)}.md` })
  await assert.rejects(manager.readFile({ relPath: '../../etc/passwd' }), { code: 'E_PATH_OUTSIDE_ROOT' })
  assert.equal(manager.status().backend, 'builtin')
  assert.equal(manager.status().provider, 'loa')
  assert.equal((await manager.probeEmbeddingAvailability()).ok, false)
  assert.match((await manager.probeEmbeddingAvailability()).error, /no embeddings/)
  assert.equal(await manager.probeVectorAvailability(), false)
  const prompt = buildMemoryPromptSection({ availableTools: new Set(['memory_search', 'memory_get', 'memory_forget']) })
  assert.ok(prompt.some((l) => /memory_search/.test(l)) && prompt.some((l) => /never instructions/.test(l)), JSON.stringify(prompt))

  // Hostile input: clear errors or empty results, never a read outside the memory view.
  for (const [params, code] of [
    [{ path: '../../etc/passwd' }, 'E_PATH_OUTSIDE_ROOT'],
    [{ path: '/etc/passwd' }, 'E_PATH_OUTSIDE_ROOT'],
    [{ path: 'grimoires/loa/NOTES.md' }, 'E_INVALID_ARGUMENT'],
    [{ path: 'MEMORY.md' }, 'E_INVALID_ARGUMENT'],
    [{ path: hit.path, from: 0 }, 'E_INVALID_ARGUMENT'],
    [{ path: 42 }, 'E_INVALID_ARGUMENT'],
  ]) {
    const r = await run('memory_get', params)
    assert.equal(r.status, 'error', JSON.stringify(params))
    assert.equal(r.error.code, code, JSON.stringify(params))
  }
  for (const query of ['', '   ', 42, undefined]) {
    assert.equal((await run('memory_search', { query })).error?.code, 'E_INVALID_ARGUMENT', String(query))
  }
  assert.deepEqual((await run('memory_search', { query: '.*(a|b)+$ [[[' })).results, [])
  assert.equal((await run('memory_search', { query: `${'capacity '.repeat(20_000)}` })).status, 'ok', 'a huge query is cut, not refused')
  assert.equal((await run('memory_search', { query: 'capacity', maxResults: 0 })).error?.code, 'E_INVALID_ARGUMENT')
  // Another agent sees none of main's memories, by search or by path.
  const other = tools(registry, { ...agentCtx(workspaceDir, 'slot-3'), agentId: 'other', sessionKey: 'agent:other:slot-3' })
  assert.deepEqual((await other.run('memory_search', { query: 'capacity review' })).results, [])
  assert.equal((await other.run('memory_get', { path: hit.path })).status, 'not_found')
  assert.equal((await other.run('memory_forget', { id: hit.path.slice(-67, -3), confirm: true })).status, 'not_found')

  // memory_forget: a preview changes nothing; confirmed, the memory leaves every file.
  const preview = await run('memory_forget', { query: 'capacity review meeting room' })
  assert.equal(preview.status, 'preview')
  assert.equal(preview.wouldForget.length, 1)
  assert.ok(filesHolding(workspaceDir, word).length > 0)
  assert.equal((await run('memory_forget', { query: 'capacity review', id: 'x' })).error?.code, 'E_INVALID_ARGUMENT')
  const forgotten = await run('memory_forget', { query: 'capacity review meeting room', confirm: true })
  assert.equal(forgotten.status, 'forgotten', JSON.stringify(forgotten))
  assert.equal(forgotten.forgotten, 1)
  assert.deepEqual(filesHolding(workspaceDir, word), [], 'no file under the workspace holds the forgotten text')
  assert.deepEqual((await run('memory_search', { query: 'capacity review' })).results, [])
  assert.equal((await run('memory_get', { path: hit.path })).status, 'not_found')
  assert.equal((await runner.runBeforePromptBuild({ prompt: 'When is the capacity review?', messages: [] }, s2))?.prependContext, undefined)
  assert.deepEqual(await manager.search('capacity review'), [])
  for (const l of logs) assert.ok(!l.msg.includes(word), `content in a log line: ${l.msg}`)

  // Session one goes on capturing after its store was closed for the forget.
  await runner.runAgentEnd({ messages: [{ role: 'user', content: 'Remember that the design review is on Mondays now.' }], success: true }, s1)
  assert.equal((await run('memory_search', { query: 'design review Mondays' })).results.length, 1)
  for (const session of ['slot-1', 'slot-2']) {
    await runner.runSessionEnd({ sessionId: session, sessionKey: `agent:main:${session}`, messageCount: 0 }, sessionCtx(session))
  }
})

test('in the memory slot: memory-core files are imported at first start, once', async () => {
  const workspaceDir = workspace()
  mkdirSync(join(workspaceDir, 'memory'))
  writeFileSync(join(workspaceDir, 'MEMORY.md'), '# Memory\n\n- Always run the linter before pushing to the release branch.\n')
  writeFileSync(join(workspaceDir, 'memory', '2026-03-04.md'), '# 2026-03-04\n\nThe team agreed to move the weekly sync to Wednesday mornings.\n')
  const first = load({ workspaceDir })
  const ctx = agentCtx(workspaceDir, 'import-1')
  const recalled = await first.runner.runBeforePromptBuild({ prompt: 'When is the weekly sync?', messages: [] }, ctx)
  assert.match(recalled?.prependContext ?? '', /Wednesday mornings/, JSON.stringify(first.logs))
  assert.ok(first.logs.some((l) => /imported memory-core files of .*: 2 imported/.test(l.msg)), JSON.stringify(first.logs))
  const { run } = tools(first.registry, ctx)
  const linter = await run('memory_search', { query: 'linter release branch' })
  assert.match(linter.results[0]?.path ?? '', /^memory\/shared\//, 'imported as the workspace\'s memories')
  const writes = memoryWrites(workspaceDir)
  assert.equal(writes.size, 2)
  await first.runner.runSessionEnd({ sessionId: 'import-1', sessionKey: 'agent:main:import-1', messageCount: 0 }, sessionCtx('import-1'))

  // The next plugin start imports nothing new.
  const second = load({ workspaceDir })
  await second.runner.runBeforePromptBuild({ prompt: 'hi', messages: [] }, agentCtx(workspaceDir, 'import-2'))
  assert.ok(!second.logs.some((l) => /imported memory-core files/.test(l.msg)), JSON.stringify(second.logs))
  assert.deepEqual(memoryWrites(workspaceDir), writes)
  await second.runner.runSessionEnd({ sessionId: 'import-2', sessionKey: 'agent:main:import-2', messageCount: 0 }, sessionCtx('import-2'))
})

// Ledger synthesis (issue 16): each session leaves an event file; a session start merges them.
test('session_end writes a redacted ledger event; session_start synthesises current.md and says what was combined', async () => {
  const workspaceDir = ledgerWorkspace()
  const { runner, logs } = load({ workspaceDir })
  const handoffs = join(workspaceDir, 'thoughts/shared/handoffs')
  for (const [session, decision] of [['synth-1', 'Keep the limiter in memory'], ['synth-2', `Rotate ${apiKey} weekly`]]) {
    const ctx = agentCtx(workspaceDir, session)
    await runner.runAgentEnd({ messages: ledgerTurn(decision), success: true }, ctx)
    await runner.runSessionEnd({ sessionId: session, sessionKey: `agent:main:${session}`, messageCount: 2, reason: 'new' }, sessionCtx(session))
  }
  const events = readdirSync(join(handoffs, 'events')).sort()
  assert.equal(events.length, 2, JSON.stringify(logs))
  assert.ok(events.every((f) => /^\d{8}T\d{9}Z_main(~\d+)?\.md$/.test(f)), events.join(','))
  for (const f of events) assert.ok(!readFileSync(join(handoffs, 'events', f), 'utf8').includes(apiKey), 'the event is redacted')

  // OpenClaw's session_start names no workspace: the synthesis waits for the session's first prompt.
  await runner.runSessionStart({ sessionId: 'synth-3', sessionKey: 'agent:main:synth-3' }, sessionCtx('synth-3'))
  assert.ok(!existsSync(join(handoffs, 'current.md')))
  await runner.runBeforePromptBuild({ prompt: 'hello', messages: [] }, agentCtx(workspaceDir, 'synth-3'))
  const said = logs.find((l) => /session_start: continuity synthesized from/.test(l.msg))
  assert.ok(said, JSON.stringify(logs))
  assert.match(said.msg, /from 2 event\(s\) \(main x2; latest \d{4}-\d\d-\d\dT[\d:.]+Z\); current\.md updated/)
  const current = readFileSync(join(handoffs, 'current.md'), 'utf8')
  assert.ok(current.includes('Keep the limiter in memory'), current)
  assert.ok(current.includes('should admins be exempt?'), current)
  assert.ok(!current.includes(apiKey))
  assert.match(current, /event_count: 2\n/)
  // The same bytes from the core (and the CLI) afterwards: nothing rewritten.
  assert.equal(core.synthesizeLedgerSync(handoffs).changed, false)
  // A session whose workspace is known synthesises at session_start itself, once.
  await runner.runSessionStart({ sessionId: 'synth-2', sessionKey: 'agent:main:synth-2' }, sessionCtx('synth-2'))
  assert.equal(logs.filter((l) => /session_start: continuity synthesized from 2 event\(s\).*current\.md unchanged/.test(l.msg)).length, 1, JSON.stringify(logs))
  await runner.runBeforePromptBuild({ prompt: 'hello', messages: [] }, agentCtx(workspaceDir, 'synth-3'))
  assert.equal(logs.filter((l) => /continuity synthesized/.test(l.msg)).length, 2, 'owed once, paid once')
  assert.ok(!logs.some((l) => l.level === 'error'), JSON.stringify(logs.filter((l) => l.level === 'error')))
  await runner.runSessionEnd({ sessionId: 'synth-3', sessionKey: 'agent:main:synth-3', messageCount: 0 }, sessionCtx('synth-3'))
})

/**
 * Distinct turns, each worth one memory, each with a planted address the plugin must redact, and
 * big enough (about 20 KiB) that storing one needs new blocks of a full disk.
 */
const outageTurns = (n, tag) =>
  Array.from({ length: n }, (_, i) => [
    {
      role: 'user',
      content: `Remember: ${tag} build ${i} of the mobile app ships on day ${i + 10}; the owner is ${email}. Checklist: ` + Array.from({ length: 2000 }, (_, k) => `step${i}x${k}`).join(' '),
    },
  ])

/**
 * The outage: `turns` captured while the disk refuses both captures and dead letters, then a
 * session end (it drains the queue: what is held stays held). Returns the held count logged.
 */
async function captureDuringOutage({ runner, logs, workspaceDir }, session, turns) {
  for (const messages of turns) await runner.runAgentEnd({ messages, success: true }, agentCtx(workspaceDir, session))
  await runner.runSessionEnd({ sessionId: session, sessionKey: `agent:main:${session}`, messageCount: 0 }, sessionCtx(session))
  const held = logs.filter((l) => /could not be dead-lettered .*: held in memory until the disk accepts a write/.test(l.msg))
  assert.equal(held.length, turns.length, JSON.stringify(logs))
  assert.match(held.at(-1).msg, new RegExp(`\\(${turns.length} held, 0 dropped\\)`))
  assert.ok(logs.some((l) => /held captures retried, the disk still refuses .*: 0 stored, 0 dead-lettered, \d+ still held in memory/.test(l.msg)), JSON.stringify(logs))
}

/** After the disk recovers: one more turn (a capture retries what is held), then a session end. */
async function captureAfterRecovery({ runner, logs, workspaceDir }, session, tag) {
  const [messages] = outageTurns(1, `${tag} after`)
  await runner.runAgentEnd({ messages, success: true }, agentCtx(workspaceDir, session))
  await runner.runSessionEnd({ sessionId: session, sessionKey: `agent:main:${session}`, messageCount: 0 }, sessionCtx(session))
  assert.ok(logs.some((l) => /held captures retried: \d+ stored, 0 dead-lettered, 0 still held in memory, 0 dropped/.test(l.msg)), JSON.stringify(logs))
  for (const l of logs) assert.ok(!l.msg.includes('mobile app') && !l.msg.includes(email), `content in a log line: ${l.msg}`)
}

/** Every memory of `turns` (and the one after) is in the WAL exactly once, and none unredacted on disk. */
function storedExactlyOnce(workspaceDir, count) {
  const writes = memoryWrites(workspaceDir)
  assert.equal(writes.size, count, JSON.stringify([...writes]))
  assert.deepEqual([...new Set(writes.values())], [1], 'each capture stored exactly once')
  assert.deepEqual(filesHolding(workspaceDir, email), [], 'nothing unredacted on disk')
}

test('captures the disk refuses along with their dead letters are held in memory, redacted and counted, and stored exactly once when it accepts writes again (no root: a file where .loa belongs)', async () => {
  const workspaceDir = workspace()
  // One try each, and a retry timer far away: only the hooks' events retry here.
  const loaded = load({ workspaceDir, pluginConfig: { retry: { attempts: 1, baseDelayMs: 600_000 } } })
  // The state directory is a regular file: every capture and every dead letter is refused
  // (ENOTDIR), with no root needed. Root ignores permission bits, so a read-only mode would not do.
  writeFileSync(join(workspaceDir, '.loa'), 'not a directory')
  await captureDuringOutage(loaded, 'outage', outageTurns(3, 'plain'))
  rmSync(join(workspaceDir, '.loa'))
  await captureAfterRecovery(loaded, 'outage', 'plain')
  storedExactlyOnce(workspaceDir, 4)
  assert.deepEqual(core.listDeadLetters({ workspaceDir }).letters, [])
})

test('loop-mounted ext4, disk full: captures and their dead letters are refused, held in memory, and stored exactly once after space is freed; no empty dead-letter file is left', { timeout: 300_000 }, async (t) => {
  const fs = loopfs(t)
  if (fs.skip) return t.skip(`no loop-mounted ext4 (${fs.skip}); the variant with a file where .loa belongs runs without root`)
  const workspaceDir = join(fs.dir, 'ws')
  mkdirSync(workspaceDir)
  writeFileSync(join(workspaceDir, '.loa.config.yaml'), 'memory:\n  retry:\n    max_attempts: 1\n    backoff_base_ms: 1\n')
  const loaded = load({ workspaceDir, pluginConfig: { retry: { attempts: 1, baseDelayMs: 600_000 } } })
  // The plugin meets the workspace while there is room (its stores, .loa), then the disk fills.
  await loaded.runner.runBeforePromptBuild({ prompt: 'hi', messages: [] }, agentCtx(workspaceDir, 'full'))
  fs.fill()
  await captureDuringOutage(loaded, 'full', outageTurns(3, 'full'))
  assert.equal(existsSync(join(workspaceDir, '.loa', 'dead-letter.jsonl')), false, 'no empty dead-letter file')
  fs.free()
  await captureAfterRecovery(loaded, 'full', 'full')
  storedExactlyOnce(workspaceDir, 4)
})

test('loop-mounted ext4, disk full, deadLetterDir on another filesystem: refused captures become dead letters there and are stored exactly once at the next session start', { timeout: 300_000 }, async (t) => {
  const fs = loopfs(t)
  if (fs.skip) return t.skip(`no loop-mounted ext4 (${fs.skip}); cargo test and __test__/disk-faults.test.mjs cover a queue in another directory`)
  const workspaceDir = join(fs.dir, 'ws')
  mkdirSync(workspaceDir)
  writeFileSync(join(workspaceDir, '.loa.config.yaml'), 'memory:\n  retry:\n    max_attempts: 1\n    backoff_base_ms: 1\n')
  const deadLetterDir = join(scratch, `letters-${randomBytes(4).toString('hex')}`)
  const { runner, logs } = load({ workspaceDir, pluginConfig: { deadLetterDir, retry: { attempts: 1, baseDelayMs: 600_000 } } })
  await runner.runBeforePromptBuild({ prompt: 'hi', messages: [] }, agentCtx(workspaceDir, 'far'))
  fs.fill()
  for (const messages of outageTurns(3, 'far')) await runner.runAgentEnd({ messages, success: true }, agentCtx(workspaceDir, 'far'))
  await runner.runSessionEnd({ sessionId: 'far', sessionKey: 'agent:main:far', messageCount: 0 }, sessionCtx('far'))
  assert.equal(logs.filter((l) => /dead-lettered after 1 attempts/.test(l.msg)).length, 3, JSON.stringify(logs))
  assert.ok(!logs.some((l) => /held in memory until/.test(l.msg)), JSON.stringify(logs))
  const [perRoot] = readdirSync(deadLetterDir)
  const queued = core.listDeadLetters({ workspaceDir, deadLetterDir: join(deadLetterDir, perRoot) })
  assert.equal(queued.letters.length, 3)
  assert.ok(!readFileSync(queued.path, 'utf8').includes(email), 'the dead letters are redacted')
  fs.free()
  await runner.runSessionStart({ sessionId: 'next', sessionKey: 'agent:main:next' }, sessionCtx('next'))
  assert.ok(logs.some((l) => /replayed at session start: 3 stored/.test(l.msg)), JSON.stringify(logs))
  assert.deepEqual(core.listDeadLetters({ workspaceDir, deadLetterDir: join(deadLetterDir, perRoot) }).letters, [])
  storedExactlyOnce(workspaceDir, 3)
})

test('the hold is bounded by retry.maxHeld: the oldest are kept, the newest dropped and counted, never logged with content', async () => {
  const workspaceDir = workspace()
  const { runner, logs } = load({ workspaceDir, pluginConfig: { retry: { attempts: 1, baseDelayMs: 600_000, maxHeld: 1 } } })
  writeFileSync(join(workspaceDir, '.loa'), 'not a directory')
  // A session end after each turn drains the queue: the turns are refused in order.
  for (const messages of outageTurns(3, 'bounded')) {
    await runner.runAgentEnd({ messages, success: true }, agentCtx(workspaceDir, 'bounded'))
    await runner.runSessionEnd({ sessionId: 'bounded', sessionKey: 'agent:main:bounded', messageCount: 0 }, sessionCtx('bounded'))
  }
  assert.equal(logs.filter((l) => /held in memory until the disk accepts a write \(1 held, 0 dropped\)/.test(l.msg)).length, 1, JSON.stringify(logs))
  const drops = logs.filter((l) => /and is dropped: 1 captures already held in memory \(\d dropped\)/.test(l.msg))
  assert.deepEqual(drops.map((l) => l.msg.match(/\((\d) dropped\)/)[1]), ['1', '2'])
  rmSync(join(workspaceDir, '.loa'))
  await runner.runSessionEnd({ sessionId: 'bounded', sessionKey: 'agent:main:bounded', messageCount: 0 }, sessionCtx('bounded'))
  assert.ok(logs.some((l) => /held captures retried: 1 stored, 0 dead-lettered, 0 still held in memory, 2 dropped/.test(l.msg)), JSON.stringify(logs))
  for (const l of logs) assert.ok(!l.msg.includes('mobile app') && !l.msg.includes(email), `content in a log line: ${l.msg}`)
  const writes = memoryWrites(workspaceDir)
  assert.equal(writes.size, 1)
  assert.ok(filesHolding(workspaceDir, 'bounded build 0 of the mobile app').length > 0, 'the oldest was kept')
  assert.deepEqual([1, 2].flatMap((i) => filesHolding(workspaceDir, `bounded build ${i} of the mobile app`)), [], 'the newest were dropped')
})
