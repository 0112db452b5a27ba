// MemoryStore.buildContext and buildMemoryContext: the context for the next prompt, built from
// what the workspace remembers, within budget; and `loa context`.
import test from 'node:test'
import assert from 'node:assert/strict'
import { core, tempDir, runCli } from './helpers.mjs'

const { MemoryStore, buildMemoryContext, countTokens } = core

async function seed(workspaceDir) {
  const store = await MemoryStore.openAsync({ workspaceDir, sessionId: 'first' })
  try {
    assert.ok((await store.capture({ type: 'learning', content: 'Always run the linter before committing code.', confidence: 0.9 })).accepted)
    assert.ok((await store.capture({ type: 'decision', content: 'We moved the staging database to eu-west-1 last week.', confidence: 0.9 })).accepted)
    await store.consolidate()
  } finally {
    store.close()
  }
  const later = await MemoryStore.openAsync({ workspaceDir, sessionId: 'second' })
  try {
    assert.ok((await later.capture({ type: 'interaction', content: 'The release checklist now includes a rollback drill.', confidence: 0.9 })).accepted)
  } finally {
    later.close()
  }
}

test('a store builds the next prompt context from sessions and learnings, newest first, within budget', async (t) => {
  const workspaceDir = tempDir(t)
  await seed(workspaceDir)
  const store = await MemoryStore.openAsync({ workspaceDir, sessionId: 'third' })
  t.after(() => store.close())
  const built = store.buildContext()
  assert.ok(built.text.startsWith('## Session Context'))
  const lines = built.text.split('\n').filter((l) => l.startsWith('- '))
  assert.match(lines[0], /rollback drill/, 'the newest session (not yet consolidated) comes first')
  assert.match(lines[1], /eu-west-1/)
  assert.match(built.text, /instruction: Always run the linter/)
  assert.equal(built.text.match(/Always run the linter/g).length, 1, 'a learning is not repeated in its session')
  assert.equal(built.tokens, countTokens(built.text))
  for (const budget of [20, 35, 60, 2000]) {
    const small = store.buildContext({ budget })
    assert.ok(small.tokens <= budget, `${small.tokens} > ${budget}`)
    if (small.text !== null) assert.equal(small.tokens, countTokens(small.text))
  }
  assert.deepEqual(store.buildContext({ budget: 60 }), store.buildContext({ budget: 60 }), 'deterministic')
  assert.equal(store.buildContext({ sessions: 0, learnings: 0 }).text, null)
  assert.throws(() => store.buildContext({ encoding: 'p50k' }), (err) => err.code === 'E_INVALID_ARGUMENT')
})

test('buildMemoryContext reads a workspace without a session; loa context prints it', async (t) => {
  const workspaceDir = tempDir(t)
  await seed(workspaceDir)
  const built = buildMemoryContext({ workspaceDir }, { budget: 80 })
  assert.ok(built.tokens <= 80 && built.text.includes('rollback drill'))
  const cli = await runCli(['context', '--workspace', workspaceDir, '--budget', '80'])
  assert.equal(cli.code, 0, cli.stderr)
  assert.equal(cli.stdout.trimEnd(), built.text.trimEnd())
  assert.match(cli.stderr, /tokens \(header \d+\); budget 80/)
  const json = JSON.parse((await runCli(['context', '--workspace', workspaceDir, '--json'])).stdout)
  assert.equal(json.tokens, countTokens(json.text))
  const empty = await runCli(['context', '--workspace', tempDir(t)])
  assert.match(empty.stdout, /nothing to remember yet/)
  assert.equal((await runCli(['context', '--workspace', workspaceDir, '--budget', 'lots'])).code, 2)
})
