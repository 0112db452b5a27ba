// Issue 27, items 5 and 6: every API and command that takes caller text and writes it to a file
// redacts it first (the core, not the plugin), metadata numbers are scanned by their decimal
// text, keys that redact alike keep every entry, and forgetting a decision reaches its bead.
import test from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, lstatSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { core, needsRealRedactor, rng, root, tempDir } from './helpers.mjs'

const LOA = join(root, 'bin', 'loa')
const AT = '2026-01-15T14:30:00.000Z'
const CARD = 4983536331454641
const PHONE = 14155550132

/** A GitHub token of the real shape, built here so that no literal in the source looks live. */
function githubToken(seed) {
  const next = rng(seed)
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWabcdefghijkmnopqrstuvw23456789'
  let body = ''
  for (let i = 0; i < 36; i++) body += alphabet[next(alphabet.length)]
  return 'ghp' + '_' + body
}

const TOKEN = githubToken(2027)
const EMAIL = ['jane', 'doe', '7291'].join('.') + '@' + 'acme-logistics.io'
const SECRETS = [TOKEN, EMAIL, String(CARD), String(PHONE)]

function loa(ws, args, input) {
  const r = spawnSync(process.execPath, [LOA, ...args, '--workspace', ws], { encoding: 'utf8', input, timeout: 120_000 })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

function workspace(t) {
  const ws = tempDir(t, 'loa-redact-all-')
  mkdirSync(join(ws, 'src'))
  writeFileSync(join(ws, 'src', 'a.ts'), 'export const limit = 100\nexport const window = 60\n')
  return ws
}

/** Every regular file below `dir`, as [relative path, bytes]. */
function everyFile(dir, prefix = '') {
  const out = []
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    const rel = prefix ? `${prefix}/${name}` : name
    const st = lstatSync(path)
    if (st.isDirectory()) out.push(...everyFile(path, rel))
    else if (st.isFile()) out.push([rel, readFileSync(path)])
  }
  return out
}

/** Fails naming each file that holds a planted value (never printing the value). */
function assertNothingPlanted(ws) {
  const files = everyFile(ws)
  assert.ok(files.length > 10, `expected the workspace to hold the ledger's files, found ${files.length}`)
  const leaks = []
  for (const [rel, bytes] of files) {
    const text = bytes.toString('latin1')
    SECRETS.forEach((s, i) => {
      if (text.includes(s)) leaks.push(`${rel} holds planted value #${i}`)
    })
  }
  assert.deepEqual(leaks, [])
}

const planted = `${EMAIL} said the key is ${TOKEN}`

test('every API and command that writes caller text redacts it first (no file of the workspace holds the planted values)', needsRealRedactor, async (t) => {
  const ws = workspace(t)
  const outside = tempDir(t, 'loa-redact-all-input-')
  const identifier = '${PROJECT_ROOT}/src/a.ts:1'

  // MemoryStore.capture: content, tags, agent id, metadata (keys, strings, numbers).
  const store = core.MemoryStore.open({ workspaceDir: ws, sessionId: 'sess-1' })
  t.after(() => store.close())
  const captured = await store.capture({
    type: 'learning',
    content: `Customer contact is ${EMAIL}; deploy token ${TOKEN} lives in the vault`,
    confidence: 0.9,
    tags: [EMAIL],
    metadata: { [EMAIL]: TOKEN, cardNumber: CARD, phone: PHONE, list: [CARD, `${EMAIL}`] },
  })
  assert.equal(captured.accepted, true, JSON.stringify(captured.gates))

  const ledger = core.Ledger.open({ workspaceDir: ws })
  // Ledger.checkpoint with the session's store: decision memory, bead, NOTES.md, trajectory.
  const report = await ledger.checkpoint(
    {
      sessionId: 'sess-1',
      beadId: 'bd-1',
      decisions: [
        {
          decision: `Rotate the deploy token ${TOKEN} owned by ${EMAIL} every 30 days`,
          rationale: `Asked by ${EMAIL}`,
          evidence: [{ identifier, quote: 'export const limit = 100' }],
          testScenarios: [`${EMAIL} logs in -> token ${TOKEN} refused`, 'expired -> rotated', 'fresh -> kept'],
        },
      ],
      activeContext: [{ key: `Owner ${EMAIL}`, value: planted }],
      identifiers: [{ identifier, purpose: `limits set by ${EMAIL}` }],
      pendingQuestions: [{ text: `Should ${EMAIL} get ${TOKEN}?` }],
      nextSteps: [`Mail ${EMAIL} about ${TOKEN}`],
      at: AT,
    },
    store,
  )
  assert.equal(report.exitCode, 0, JSON.stringify(report.steps))

  // Ledger.editNotes.
  ledger.editNotes({
    activeContext: [{ key: 'Reasoning State', value: planted }],
    identifiers: [{ identifier, purpose: planted }],
    pendingQuestions: [{ text: `Ask ${EMAIL} for ${TOKEN}` }],
  })
  // Ledger.appendBead.
  ledger.appendBead('bd-2', {
    decisions: [{ decision: planted, rationale: planted, evidence: [{ identifier, quote: `limit ${EMAIL}` }] }],
    testScenarios: [{ name: planted, type: EMAIL, expected: TOKEN }],
    nextSteps: [planted],
  })
  // Ledger.cite (the trajectory).
  ledger.cite({ agent: 'scribe', claim: planted, grounding: 'citation', evidence: { identifier, quote: `${EMAIL} ${TOKEN}` }, at: AT })
  // Ledger.persistState: L1 data and the MEMORY.md line.
  await ledger.persistState(
    { workflow: 'wf-1', status: 'in_progress', data: { owner: EMAIL, token: TOKEN, card: CARD, nested: { phone: PHONE, [EMAIL]: [TOKEN] } }, memory: { kind: 'learning', text: planted }, at: AT },
    store,
  )
  await ledger.persistState({ workflow: 'wf-3', status: 'in_progress', data: { owner: EMAIL }, at: AT }, store)
  await ledger.persistState(
    { workflow: 'wf-3', status: 'completed', data: { owner: EMAIL }, memory: { kind: 'completion', workflowType: 'APEX', context: EMAIL, outcome: TOKEN }, at: AT },
    store,
  )
  // Synthesis events.
  const handoffs = join(ws, 'grimoires', 'loa', 'a2a', 'handoffs')
  await core.writeLedgerEvent(handoffs, {
    agent: 'main',
    ts: AT,
    branch: `fix/${EMAIL}`,
    reason: planted,
    now: planted,
    thisSession: [planted],
    decisions: { [EMAIL]: TOKEN, [`owner ${TOKEN}`]: planted },
    checkpoints: [{ phase: EMAIL, status: TOKEN }],
    openQuestions: [planted],
  })
  // Dead letters.
  await core.appendDeadLetter(
    { workspaceDir: ws },
    { sessionId: 'sess-1', entry: { type: 'learning', content: planted, tags: [EMAIL], metadata: { [EMAIL]: CARD, phone: PHONE } }, error: { code: 'E_IO', message: planted } },
  )
  await store.consolidate()
  store.close()

  // The command line: checkpoint --input (without a store: the ledger opens one), notes edit,
  // beads add, state persist, ledger event, capture.
  const input = join(outside, 'checkpoint.json')
  writeFileSync(
    input,
    JSON.stringify({
      decisions: [{ decision: `Cache ${EMAIL} sessions behind ${TOKEN}`, rationale: planted, evidence: [{ identifier, quote: 'export const limit = 100' }], testScenarios: [planted, 'b -> c', 'c -> d'] }],
      activeContext: [{ key: 'Task', value: planted }],
      pendingQuestions: [{ text: planted }],
      nextSteps: [planted],
    }),
  )
  const runs = [
    ['checkpoint', '--input', input, '--session', 'cli-1', '--bead', 'bd-3', '--at', AT],
    ['notes', 'edit', '--context', `Owner=${planted}`, '--question', planted],
    ['beads', 'add', 'bd-4', '--decision', planted, '--next-step', planted],
    ['state', 'persist', 'wf-2', '--status', 'in_progress', '--state-data', JSON.stringify({ owner: EMAIL, card: CARD }), '--learning', planted],
    ['ledger', 'event', '--agent', 'cli', '--at', AT, '--now', planted, '--decision', `${EMAIL}=${TOKEN}`, '--question', planted],
    ['capture', '--session', 'cli-2', '--type', 'learning', '--content', `The on-call mailbox is ${EMAIL} and the token ${TOKEN}`],
  ]
  for (const args of runs) {
    const r = loa(ws, args)
    assert.equal(r.status, 0, `loa ${args[0]} ${args[1]}: ${r.stderr}${r.stdout}`)
  }

  assertNothingPlanted(ws)
  // What was written is still there, redacted.
  const state = (await ledger.recoverState('wf-1')).state
  assert.deepEqual(state.data, {
    owner: '[REDACTED:EMAIL]',
    token: '[REDACTED:GITHUB_TOKEN]',
    card: '[REDACTED:CREDIT_CARD]',
    nested: { phone: '[REDACTED:PHONE]', '[REDACTED:EMAIL]': ['[REDACTED:GITHUB_TOKEN]'] },
  })
  const bead = ledger.readBead('bd-1')
  assert.match(bead.decisions[0].decision, /^Rotate the deploy token \[REDACTED:GITHUB_TOKEN\] owned by \[REDACTED:EMAIL\] every 30 days$/)
  assert.deepEqual(bead.nextSteps, ['Mail [REDACTED:EMAIL] about [REDACTED:GITHUB_TOKEN]'])
  assert.ok(ledger.readNotes().sessionContinuity.includes('[REDACTED:EMAIL] said the key is [REDACTED:GITHUB_TOKEN]'))
})

test('text redacted once (by a plugin) is stored as given: a second pass changes nothing', needsRealRedactor, async (t) => {
  const ws = workspace(t)
  const ledger = core.Ledger.open({ workspaceDir: ws })
  const once = core.redact(planted).text
  const pseudonyms = core.redact(planted, { pseudonymize: true, key: Buffer.from('k') }).text
  ledger.editNotes({ activeContext: [{ key: 'Once', value: once }, { key: 'Pseudonyms', value: pseudonyms }] })
  const context = ledger.readNotes().sessionContinuity
  assert.ok(context.includes(`- **Once**: ${once}`), context)
  assert.ok(context.includes(`- **Pseudonyms**: ${pseudonyms}`), context)
  const bead = ledger.appendBead('bd-1', { nextSteps: [once, pseudonyms] })
  assert.deepEqual(bead.nextSteps, [once, pseudonyms])
})

test("the ledger redacts with the options it is opened with (an allowlisted address stays)", needsRealRedactor, async (t) => {
  const ws = workspace(t)
  const ledger = core.Ledger.open({ workspaceDir: ws, redaction: { allowlist: [EMAIL] } })
  const bead = ledger.appendBead('bd-1', { nextSteps: [planted] })
  assert.deepEqual(bead.nextSteps, [`${EMAIL} said the key is [REDACTED:GITHUB_TOKEN]`])
})

test('metadata numbers are scanned by their decimal text under their key: redacted to strings, with findings', needsRealRedactor, async (t) => {
  const ws = workspace(t)
  const store = core.MemoryStore.open({ workspaceDir: ws, sessionId: 'sess-1' })
  t.after(() => store.close())
  const r = await store.capture({
    type: 'learning',
    content: 'The billing contact prefers invoices by post',
    confidence: 0.9,
    metadata: { cardNumber: CARD, phone: PHONE, count: 7, ratio: 0.25, nested: { card: CARD }, phones: [PHONE, 3] },
  })
  assert.equal(r.accepted, true, JSON.stringify(r.gates))
  const fields = r.findings.map((f) => `${f.field}:${f.kind}`).sort()
  assert.deepEqual(fields, ['metadata.cardNumber:credit_card', 'metadata.nested.card:credit_card', 'metadata.phone:phone', 'metadata.phones[0]:phone'])
  const stored = store.get(r.id)
  assert.deepEqual(stored.metadata, {
    cardNumber: '[REDACTED:CREDIT_CARD]',
    phone: '[REDACTED:PHONE]',
    count: 7,
    ratio: 0.25,
    nested: { card: '[REDACTED:CREDIT_CARD]' },
    phones: ['[REDACTED:PHONE]', 3],
  })
  store.close()
  for (const [rel, bytes] of everyFile(ws)) {
    const text = bytes.toString('latin1')
    assert.ok(!text.includes(String(CARD)) && !text.includes(String(PHONE)), `${rel} holds a planted number`)
  }
  // The dead-letter queue redacts the same way.
  const letter = await core.appendDeadLetter({ workspaceDir: ws }, { sessionId: 'sess-1', entry: { type: 'learning', content: 'x', metadata: { cardNumber: CARD, count: 7 } } })
  assert.deepEqual(letter.entry.metadata, { cardNumber: '[REDACTED:CREDIT_CARD]', count: 7 })
  assert.deepEqual(letter.findings.map((f) => f.field), ['metadata.cardNumber'])
})

test('metadata keys that redact to the same text keep every entry (numbered suffixes)', needsRealRedactor, async (t) => {
  const ws = workspace(t)
  const store = core.MemoryStore.open({ workspaceDir: ws, sessionId: 'sess-1' })
  t.after(() => store.close())
  const other = ['john', 'roe'].join('.') + '@' + 'acme-logistics.io'
  const r = await store.capture({
    type: 'learning',
    content: 'Two people approved the migration plan today',
    confidence: 0.9,
    metadata: { approvers: { [EMAIL]: 'approved', [other]: 'approved with changes' } },
  })
  assert.equal(r.accepted, true, JSON.stringify(r.gates))
  assert.deepEqual(store.get(r.id).metadata, {
    // Keys are visited in their sorted order: jane.doe... before john.roe...
    approvers: { '[REDACTED:EMAIL]': 'approved', '[REDACTED:EMAIL]~2': 'approved with changes' },
  })
  assert.deepEqual(r.findings.map((f) => f.field), ['metadata.approvers.<key>', 'metadata.approvers.<key>'])
})

test('forgetting a decision memory removes its copy (and its test scenarios) from the bead', async (t) => {
  const ws = workspace(t)
  const store = core.MemoryStore.open({ workspaceDir: ws, sessionId: 'sess-1' })
  t.after(() => store.close())
  const ledger = core.Ledger.open({ workspaceDir: ws })
  const kept = { decision: 'Keep the rate limiter in memory for now', rationale: 'Simple', evidence: [{ identifier: '${PROJECT_ROOT}/src/a.ts:1', quote: 'export const limit = 100' }], testScenarios: ['a -> b', 'b -> c', 'c -> d'] }
  const gone = { decision: 'Move the sliding window to Redis next quarter', rationale: 'Scales across nodes', evidence: [{ identifier: '${PROJECT_ROOT}/src/a.ts:2', quote: 'export const window = 60' }], testScenarios: ['two nodes -> one window', 'redis down -> fail open', 'window end -> reset'] }
  const report = await ledger.checkpoint({ sessionId: 'sess-1', beadId: 'bd-1', decisions: [kept, gone], at: AT }, store)
  assert.equal(report.exitCode, 0, JSON.stringify(report.steps))
  const before = ledger.readBead('bd-1')
  assert.equal(before.decisions.length, 2)
  const goneEntry = before.decisions.find((d) => d.decision === gone.decision)
  assert.match(goneEntry.memory ?? '', /^[0-9a-f]{64}$/)
  assert.equal(before.testScenarios.filter((s) => s.memory === goneEntry.memory).length, 3)
  assert.ok(store.get(goneEntry.memory), 'the bead names the decision memory')

  const forgot = await store.forget({ id: goneEntry.memory })
  assert.equal(forgot.applied, true)
  const after = ledger.readBead('bd-1')
  assert.deepEqual(after.decisions.map((d) => d.decision), [kept.decision])
  assert.deepEqual(after.testScenarios.map((s) => s.name), ['a', 'b', 'c'])
  const file = readFileSync(join(ws, '.beads', 'bd-1.yaml'), 'utf8')
  for (const text of [gone.decision, gone.rationale, 'two nodes', goneEntry.memory]) assert.ok(!file.includes(text), 'the bead still holds the forgotten decision')
  // What else the bead holds stays: the handoff and the other decision.
  assert.equal(after.handoffs.length, 1)
})

test('`loa forget` reaches a decision copied into a bead by `loa checkpoint`', async (t) => {
  const ws = workspace(t)
  const outside = tempDir(t, 'loa-redact-all-input-')
  const input = join(outside, 'checkpoint.json')
  const decision = 'Serve stale cache entries for five minutes after an origin failure'
  writeFileSync(input, JSON.stringify({ decisions: [{ decision, rationale: 'Availability first', evidence: [{ identifier: '${PROJECT_ROOT}/src/a.ts:1', quote: 'export const limit = 100' }], testScenarios: ['a -> b', 'b -> c', 'c -> d'] }] }))
  const r = loa(ws, ['checkpoint', '--input', input, '--session', 'cli-1', '--bead', 'bd-9', '--at', AT])
  assert.equal(r.status, 0, r.stderr + r.stdout)
  const ledger = core.Ledger.open({ workspaceDir: ws })
  const id = ledger.readBead('bd-9').decisions[0].memory
  assert.match(id ?? '', /^[0-9a-f]{64}$/)
  const f = loa(ws, ['forget', '--id', id, '--confirm'])
  assert.equal(f.status, 0, f.stderr + f.stdout)
  assert.deepEqual(ledger.readBead('bd-9').decisions, [])
  assert.ok(!readFileSync(join(ws, '.beads', 'bd-9.yaml'), 'utf8').includes(decision))
})
