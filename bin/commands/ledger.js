'use strict'
// The Lossless Ledger from a terminal, a git hook or a pre-clear hook (docs/ledger.md):
// `loa notes`, `loa recall`, `loa grounding-check`, `loa checkpoint`, `loa beads`,
// `loa resolve`, `loa state` (the persistence protocol of seed 004). `grounding-check` and `checkpoint` exit with the pre-clear contract: 0 permit,
// 1 block, 2 error (which blocks too). `notes show`, `recall` and `resolve` print ledger text:
// that is what was asked.

const path = require('node:path')
const core = require('../../index.js')
const cli = require('../lib/cli.js')

const { printJson, workspace, positiveInteger } = cli

/** Largest `--input` JSON read (a checkpoint or bead input). */
const MAX_INPUT_BYTES = 4 * 1024 * 1024

const open = (values) => core.Ledger.open({ workspaceDir: workspace(values) })

function nonEmpty(text, flag) {
  if (text !== undefined && text.trim() === '') throw cli.usage(`${flag} needs a value`)
  return text
}

/** `--input FILE` (or `-` for standard input) as a JSON object. */
function inputObject(values) {
  if (values.input === undefined) return {}
  if (values.input === '') throw cli.usage('--input needs a file (or - for standard input)')
  const bytes = values.input === '-' ? cli.readStdin(MAX_INPUT_BYTES) : cli.readInputFile(path.resolve(values.input), MAX_INPUT_BYTES)
  let parsed
  try {
    parsed = JSON.parse(cli.utf8(bytes, '--input'))
  } catch (err) {
    if (err instanceof cli.CliError) throw err
    throw new cli.CliError('E_INVALID_ARGUMENT', '--input is not JSON')
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new cli.CliError('E_INVALID_ARGUMENT', '--input must be a JSON object')
  return parsed
}

/** `KEY=VALUE` split at the first `=`. */
function pairs(list, flag) {
  return (list ?? []).map((item) => {
    const at = item.indexOf('=')
    if (at < 1 || at === item.length - 1) throw cli.usage(`${flag} takes KEY=VALUE`)
    return [item.slice(0, at), item.slice(at + 1)]
  })
}

function notes({ action, args, values }) {
  if (action !== 'show' && action !== 'edit') throw cli.badAction('notes', action, ['show', 'edit'])
  cli.expectArgs(args, 1, `notes ${action}`)
  const ledger = open(values)
  if (action === 'show') {
    const read = ledger.readNotes()
    if (values.json) printJson(read)
    else process.stdout.write(read.text.endsWith('\n') ? read.text : `${read.text}\n`)
    return 0
  }
  const edit = {
    activeContext: pairs(values.context, '--context').map(([key, value]) => ({ key, value })),
    identifiers: pairs(values.identifier, '--identifier').map(([identifier, purpose]) => ({ identifier, purpose })),
    pendingQuestions: [
      ...(values.question ?? []).map((text) => ({ text: nonEmpty(text, '--question'), done: false })),
      ...(values.answered ?? []).map((text) => ({ text: nonEmpty(text, '--answered'), done: true })),
    ],
  }
  if (!edit.activeContext.length && !edit.identifiers.length && !edit.pendingQuestions.length) {
    throw cli.usage("'loa notes edit' needs --context, --identifier, --question or --answered")
  }
  const done = ledger.editNotes(edit)
  if (values.json) printJson(done)
  else {
    process.stdout.write(done.changed ? 'NOTES.md updated\n' : 'NOTES.md unchanged\n')
    for (const r of done.refused) process.stdout.write(`  ${r}\n`)
  }
  // An identifier left out is a problem found, as with a check.
  return done.refused.length ? 1 : 0
}

async function recall({ args, values }) {
  const level = Number(values.level ?? '1')
  if (![1, 2, 3].includes(level) || (values.level !== undefined && values.level.trim() === '')) throw cli.usage('--level must be 1, 2 or 3')
  const words = args
  if (level === 2 && words.join(' ').trim() === '') throw cli.usage("'loa recall --level 2' needs a query")
  if (level !== 2 && words.length) throw cli.usage('a query goes with --level 2')
  const tokens = positiveInteger(values.tokens, '--tokens')
  const limit = positiveInteger(values.limit, '--limit')
  const found = await open(values).recall({ level, ...(level === 2 ? { query: words.join(' ') } : {}), ...(tokens ? { tokens } : {}), ...(limit ? { k: limit } : {}) })
  if (values.json) printJson(found)
  else if (level === 1 && !found.found) process.stdout.write('no Session Continuity section\n')
  else if (level === 2 && found.hits.length === 0) process.stdout.write('no decision matches\n')
  else process.stdout.write(found.text.endsWith('\n') ? found.text : `${found.text}\n`)
  return 0
}

function dayOptions(values) {
  return { ...(nonEmpty(values.agent, '--agent') !== undefined ? { agent: values.agent } : {}), ...(nonEmpty(values.at, '--at') !== undefined ? { at: values.at } : {}) }
}

function printGrounding(r) {
  const ratio = r.ratio === undefined || r.ratio === null ? 'n/a' : r.ratio.toFixed(2)
  process.stdout.write(`grounding ${r.status.toUpperCase()}: ratio ${ratio} (${r.groundedClaims} of ${r.totalClaims} claims grounded, ${r.assumptions} assumptions), threshold ${r.threshold}\n`)
  for (const u of r.ungrounded) process.stdout.write(`  line ${u.line}: ${u.reason}\n`)
  for (const e of r.errors) process.stdout.write(`  error: ${e}\n`)
}

async function groundingCheck({ action, values }) {
  if (action !== undefined) throw cli.usage("'loa grounding-check' takes no argument")
  const day = dayOptions(values)
  const report = await open(values).groundingCheck(day)
  if (values.json) printJson(report)
  else printGrounding(report)
  return report.exitCode
}

async function checkpoint({ action, values }) {
  if (action !== undefined) throw cli.usage("'loa checkpoint' takes no argument (the session's input goes in --input FILE)")
  const input = { ...inputObject(values), ...dayOptions(values) }
  if (nonEmpty(values.session, '--session') !== undefined) input.sessionId = values.session
  if (nonEmpty(values.bead, '--bead') !== undefined) input.beadId = values.bead
  if (input.sessionId === undefined) input.sessionId = 'cli'
  const report = await open(values).checkpoint(input)
  if (values.json) printJson(report)
  else {
    const verdict = ['PERMIT', 'BLOCK', 'ERROR'][report.exitCode] ?? 'ERROR'
    process.stdout.write(`checkpoint ${verdict} (exit ${report.exitCode})\n`)
    for (const s of report.steps) {
      process.stdout.write(`  ${s.step}. ${s.name.padEnd(18)} ${s.status}\n`)
      for (const m of s.messages) process.stdout.write(`       ${m}\n`)
    }
  }
  return report.exitCode
}

function beads({ action, args, values }) {
  if (action !== 'list' && action !== 'add') throw cli.badAction('beads', action, ['list', 'add'])
  const ledger = open(values)
  if (action === 'list') {
    cli.expectArgs(args, 1, 'beads list')
    const ids = ledger.listBeads()
    if (values.json) printJson(ids.map((id) => ledger.readBead(id)))
    else if (ids.length === 0) process.stdout.write('no beads\n')
    else {
      for (const id of ids) {
        const b = ledger.readBead(id)
        const title = typeof b.other.title === 'string' ? `  ${b.other.title}` : ''
        process.stdout.write(`${id}${title}  ${b.decisions.length} decision(s), ${b.handoffs.length} handoff(s), ${b.nextSteps.length} next step(s)\n`)
      }
    }
    return 0
  }
  cli.expectArgs(args, 2, 'beads add')
  const id = args[1]
  if (id === undefined) throw cli.usage("'loa beads add' needs a bead id")
  const add = inputObject(values)
  add.decisions = [...(add.decisions ?? []), ...(values.decision ?? []).map((d) => ({ decision: nonEmpty(d, '--decision') }))]
  add.nextSteps = [...(add.nextSteps ?? []), ...(values['next-step'] ?? []).map((s) => nonEmpty(s, '--next-step'))]
  const bead = ledger.appendBead(id, add)
  if (values.json) printJson(bead)
  else process.stdout.write(`${bead.id}: ${bead.decisions.length} decision(s), ${bead.testScenarios.length} test scenario(s), ${bead.nextSteps.length} next step(s)\n`)
  return 0
}

function resolve({ action, args, values }) {
  if (action === undefined) throw cli.usage("'loa resolve' needs an identifier (${PROJECT_ROOT}/path:45-67)")
  cli.expectArgs(args, 1, 'resolve')
  const r = open(values).resolveIdentifier(action)
  if (values.json) printJson(r)
  else r.lines.forEach((line, i) => process.stdout.write(`${String(r.start + i).padStart(6)}  ${line}\n`))
  return 0
}

/** `--state-data` as a JSON object. */
function dataObject(text) {
  if (text === undefined) return undefined
  let parsed
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new cli.CliError('E_INVALID_ARGUMENT', '--state-data is not JSON')
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new cli.CliError('E_INVALID_ARGUMENT', '--state-data must be a JSON object')
  return parsed
}

/** The MEMORY.md line the flags ask for, if any (at most one kind). */
function memoryLine(values) {
  const kinds = [values.learning !== undefined, values.completed !== undefined, values.phase !== undefined].filter(Boolean).length
  if (kinds > 1) throw cli.usage('--learning, --completed and --phase each write a different MEMORY.md line: give one')
  const about = { ...(nonEmpty(values['workflow-type'], '--workflow-type') !== undefined ? { workflowType: values['workflow-type'] } : {}), ...(nonEmpty(values.about, '--about') !== undefined ? { context: values.about } : {}) }
  if (values.learning !== undefined) return { kind: 'learning', text: nonEmpty(values.learning, '--learning') }
  if (values.completed !== undefined) return { kind: 'completion', outcome: nonEmpty(values.completed, '--completed'), ...about }
  if (values.phase !== undefined) return { kind: 'checkpoint', completed: nonEmpty(values.phase, '--phase'), ...(values.next !== undefined ? { next: nonEmpty(values.next, '--next') } : {}), ...about }
  if (values.next !== undefined || Object.keys(about).length) throw cli.usage('--workflow-type, --about and --next go with --completed or --phase')
  return undefined
}

function printRecovery(r) {
  process.stdout.write(`${r.status} (from ${r.source}, last updated ${r.lastUpdated})\n`)
  for (const w of r.warnings) process.stdout.write(`  warning: ${w}\n`)
}

async function state({ action, args, values }) {
  if (action !== 'persist' && action !== 'recover') throw cli.badAction('state', action, ['persist', 'recover'])
  cli.expectArgs(args, 2, `state ${action}`)
  const workflow = args[1]
  if (workflow === undefined) throw cli.usage(`'loa state ${action}' needs a workflow name`)
  const ledger = open(values)
  if (action === 'recover') {
    for (const flag of ['status', 'state-data', 'input', 'at', 'learning', 'completed', 'phase', 'next', 'workflow-type', 'about']) {
      if (values[flag] !== undefined) throw cli.usage(`--${flag} goes with 'loa state persist'`)
    }
    const found = await ledger.recoverState(workflow)
    if (values.json) printJson(found)
    else if (found === null) process.stdout.write(`no state for ${workflow}\n`)
    else printRecovery(found)
    // Nothing known, or sources that disagree by more than the staleness limit: a problem found.
    return found === null || found.warnings.length ? 1 : 0
  }
  const input = { ...inputObject(values), workflow }
  if (nonEmpty(values.status, '--status') !== undefined) input.status = values.status
  if (input.status === undefined) throw cli.usage("'loa state persist' needs --status (created, in_progress, blocked, completed, archived)")
  const data = dataObject(values['state-data'])
  if (data !== undefined) input.data = data
  const line = memoryLine(values)
  if (line !== undefined) input.memory = line
  if (nonEmpty(values.at, '--at') !== undefined) input.at = values.at
  const report = await ledger.persistState(input)
  if (values.json) printJson(report)
  else {
    process.stdout.write(`${workflow}: ${report.state.status} at ${report.state.lastUpdated}${report.memoryWritten ? ', MEMORY.md line written' : ''}${report.overflowed ? `, ${report.overflowed} old line(s) moved to the Decision Log` : ''}\n`)
    if (report.warning) process.stdout.write(`  warning: ${report.warning}\n`)
  }
  // L1 is written; MEMORY.md not (fully): a problem found, not a failure (seed 004 degradation).
  return report.warning ? 1 : 0
}

const options = {
  workspace: { type: 'string' },
  agent: { type: 'string' },
  limit: { type: 'string' },
  session: { type: 'string' },
  level: { type: 'string' },
  tokens: { type: 'string' },
  at: { type: 'string' },
  bead: { type: 'string' },
  input: { type: 'string' },
  context: { type: 'string', multiple: true },
  identifier: { type: 'string', multiple: true },
  question: { type: 'string', multiple: true },
  answered: { type: 'string', multiple: true },
  decision: { type: 'string', multiple: true },
  'next-step': { type: 'string', multiple: true },
  status: { type: 'string' },
  'state-data': { type: 'string' },
  learning: { type: 'string' },
  completed: { type: 'string' },
  phase: { type: 'string' },
  next: { type: 'string' },
  'workflow-type': { type: 'string' },
  about: { type: 'string' },
}

module.exports = {
  notes: {
    help: `  loa notes show [--workspace DIR] [--json]
                                 NOTES.md (--json: Session Continuity parsed, decisions)
  loa notes edit [--context KEY=VALUE]... [--identifier ID=PURPOSE]... [--question TEXT]...
                 [--answered TEXT]... [--workspace DIR] [--json]
                                 merge into Active Context, Lightweight Identifiers and Pending
                                 Questions (every other byte kept; exit 1 if an identifier
                                 was refused)`,
    options,
    accepts: ['json', 'workspace', 'context', 'identifier', 'question', 'answered'],
    run: notes,
  },
  recall: {
    help: `  loa recall [--level 1|2|3] [query] [--tokens N] [--limit K] [--workspace DIR] [--json]
                                 tiered recall: 1 Session Continuity within level1_tokens
                                 (default), 2 the K decisions that best answer the query,
                                 3 all of NOTES.md`,
    optionHelp: `  --level N     recall: 1, 2 or 3
  --tokens N    recall: the level's token budget instead of the configured one`,
    options,
    accepts: ['json', 'workspace', 'level', 'tokens', 'limit'],
    run: recall,
  },
  'grounding-check': {
    help: `  loa grounding-check [--agent ID] [--at RFC3339] [--workspace DIR] [--json]
                                 grounded claims / all claims of the day's trajectory against
                                 grounding.threshold: exit 0 pass, 1 block, 2 error`,
    optionHelp: `  --at TIME     grounding-check, checkpoint: the trajectory day (default now)`,
    options,
    accepts: ['json', 'workspace', 'agent', 'at'],
    run: groundingCheck,
  },
  checkpoint: {
    help: `  loa checkpoint [--input FILE|-] [--session ID] [--bead ID] [--agent ID] [--at RFC3339]
                 [--workspace DIR] [--json]
                                 the synthesis checkpoint before /clear (input: a
                                 LedgerCheckpointInput JSON object): exit 0 permit, 1 block,
                                 2 error`,
    optionHelp: `  --input FILE  checkpoint, beads add: a JSON object (- for standard input)`,
    options,
    accepts: ['json', 'workspace', 'agent', 'at', 'input', 'session', 'bead'],
    run: checkpoint,
  },
  beads: {
    help: `  loa beads list [--workspace DIR] [--json]
  loa beads add <id> [--decision TEXT]... [--next-step TEXT]... [--input FILE|-] [--json]
                                 the beads of .beads/; append to one (created when missing)`,
    options,
    accepts: ['json', 'workspace', 'decision', 'next-step', 'input'],
    run: beads,
  },
  state: {
    help: `  loa state persist <workflow> --status STATUS [--state-data JSON] [--learning TEXT]
                  [--completed OUTCOME | --phase DONE --next VERB] [--workflow-type T]
                  [--about TEXT] [--at RFC3339] [--input FILE|-] [--workspace DIR] [--json]
                                 seed 004's write: L1 state (.loa/state/<workflow>.json, the
                                 status change checked), then one MEMORY.md line; entering
                                 completed needs --completed. Exit 0 written, 1 L1 written
                                 but MEMORY.md not, 2 error (E_ILLEGAL_TRANSITION, ...)
  loa state recover <workflow> [--workspace DIR] [--json]
                                 newest of L1 and MEMORY.md wins: exit 0, 1 when the two are
                                 more than 5 minutes apart or nothing is known, 2 error`,
    optionHelp: `  --status S    state persist: created, in_progress, blocked, completed, archived`,
    options,
    accepts: ['json', 'workspace', 'status', 'state-data', 'input', 'at', 'learning', 'completed', 'phase', 'next', 'workflow-type', 'about'],
    run: state,
  },
  resolve: {
    help: `  loa resolve <identifier> [--workspace DIR] [--json]
                                 the lines of \${PROJECT_ROOT}/path:45-67 (at most 100; escapes
                                 from the workspace refused)`,
    options,
    accepts: ['json', 'workspace'],
    run: resolve,
  },
}

// ---------------------------------------------------------------------------------------------
// `loa ledger <action>`: ledger synthesis (`event`, `synth`) lives in ./synth.js; other actions
// can be added beside it.
// ---------------------------------------------------------------------------------------------
const synthesis = require('./synth.js')

module.exports.ledger = {
  help: synthesis.help,
  optionHelp: synthesis.optionHelp,
  options: synthesis.options,
  accepts: [...new Set(Object.values(synthesis.accepts).flat())],
  run(context) {
    const ran = synthesis.run(context)
    if (ran === undefined) throw cli.badAction('ledger', context.action, Object.keys(synthesis.actions))
    return ran
  },
}
