'use strict'
// Ledger synthesis from a terminal, a git hook or CI (docs/synthesis.md): `loa ledger event`
// writes one session's event file, `loa ledger synth` merges every event into current.md
// (`--check`: exit 1 when current.md is stale, for CI). The handoffs directory is `--dir`, else
// the workspace's `synthesis.dir` (default thoughts/shared/handoffs).

const path = require('node:path')
const core = require('../../index.js')
const cli = require('../lib/cli.js')

const { printJson } = cli

/** Largest `--input` JSON read (an event). */
const MAX_INPUT_BYTES = 1024 * 1024

function workspaceOf(values) {
  if (values.workspace === '') throw cli.usage('--workspace needs a directory')
  return cli.requireDir(path.resolve(values.workspace ?? '.'), 'workspace')
}

/** The handoffs directory and the workspace's synthesis settings. */
function handoffs(values) {
  if (values.dir === '') throw cli.usage('--dir needs a directory')
  const workspace = workspaceOf(values)
  const config = core.loadConfig(workspace).config
  const dir = values.dir !== undefined ? path.resolve(values.dir) : path.resolve(workspace, config.synthesis.dir)
  return { dir, config }
}

function nonEmpty(text, flag) {
  if (text !== undefined && text.trim() === '') throw cli.usage(`${flag} needs a value`)
  return text
}

/** `KEY=VALUE` split at the first `=`. */
function pairs(list, flag) {
  return (list ?? []).map((item) => {
    const at = item.indexOf('=')
    if (at < 1 || at === item.length - 1) throw cli.usage(`${flag} takes KEY=VALUE`)
    return [item.slice(0, at), item.slice(at + 1)]
  })
}

/** `--input FILE` (or `-`) as a JSON object (a LedgerEventInput). */
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

async function event({ args, values }) {
  cli.expectArgs(args, 1, 'ledger event')
  const { dir } = handoffs(values)
  const input = inputObject(values)
  const set = (key, value) => {
    if (value !== undefined) input[key] = value
  }
  set('agent', nonEmpty(values.agent, '--agent'))
  set('type', nonEmpty(values.type, '--type'))
  set('ts', nonEmpty(values.at, '--at'))
  set('branch', nonEmpty(values.branch, '--branch'))
  set('reason', nonEmpty(values.reason, '--reason'))
  set('now', nonEmpty(values.now, '--now'))
  if (values.done) input.thisSession = [...(input.thisSession ?? []), ...values.done.map((d) => nonEmpty(d, '--done'))]
  if (values.question) input.openQuestions = [...(input.openQuestions ?? []), ...values.question.map((q) => nonEmpty(q, '--question'))]
  if (values.decision) input.decisions = { ...(input.decisions ?? {}), ...Object.fromEntries(pairs(values.decision, '--decision')) }
  if (values.checkpoint) {
    input.checkpoints = [...(input.checkpoints ?? []), ...pairs(values.checkpoint, '--checkpoint').map(([phase, status]) => ({ phase, status }))]
  }
  if (input.agent === undefined) throw cli.usage("'loa ledger event' needs --agent")
  const written = await core.writeLedgerEvent(dir, input)
  if (values.json) printJson(written)
  else process.stdout.write(`${written.path}\n`)
  return 0
}

function retention(text) {
  if (text === undefined) return undefined
  const n = Number(text)
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < 0 || n > 36500) throw cli.usage('--retention-days must be an integer from 0 to 36500')
  return n
}

async function synth({ args, values }) {
  cli.expectArgs(args, 1, 'ledger synth')
  const { dir, config } = handoffs(values)
  if (values.check && (values.archive || values.commit)) throw cli.usage('--check writes nothing: it does not go with --archive or --commit')
  const options = {
    check: Boolean(values.check),
    archive: Boolean(values.archive),
    commit: Boolean(values.commit),
    retentionDays: retention(values['retention-days']) ?? config.synthesis.retentionDays,
    keysDir: cli.keysDir(values, core),
  }
  const report = await core.synthesizeLedger(dir, options)
  if (values.json) {
    // The text is current.md itself; the JSON report says what went into it.
    const { text, ...rest } = report
    printJson(rest)
  } else {
    const verdict = values.check ? (report.stale ? 'STALE' : 'up to date') : report.changed ? 'written' : 'unchanged'
    process.stdout.write(`${report.currentPath}: ${verdict} (${report.eventCount} event(s), latest ${report.latestTs ?? 'none'})\n`)
    for (const s of report.sources) process.stdout.write(`  ${s.agent} ${s.ts} ${s.type}${s.branch ? ` [${s.branch}]` : ''}\n`)
    if (report.baseEvents) process.stdout.write(`  + ${report.baseEvents} archived event(s) from base.json\n`)
    for (const s of report.skipped) process.stdout.write(`  skipped ${s.file}: ${s.reason}\n`)
    if (report.archived) process.stdout.write(`archived ${report.archived} event(s)\n`)
    if (report.committed) process.stdout.write('committed current.md\n')
  }
  return values.check && report.stale ? 1 : 0
}

const ACTIONS = { event, synth }

const options = {
  workspace: { type: 'string' },
  dir: { type: 'string' },
  keys: { type: 'string' },
  agent: { type: 'string' },
  type: { type: 'string' },
  at: { type: 'string' },
  branch: { type: 'string' },
  reason: { type: 'string' },
  now: { type: 'string' },
  done: { type: 'string', multiple: true },
  decision: { type: 'string', multiple: true },
  checkpoint: { type: 'string', multiple: true },
  question: { type: 'string', multiple: true },
  input: { type: 'string' },
  check: { type: 'boolean' },
  archive: { type: 'boolean' },
  commit: { type: 'boolean' },
  'retention-days': { type: 'string' },
}

const ACCEPTS = {
  event: ['json', 'workspace', 'dir', 'agent', 'type', 'at', 'branch', 'reason', 'now', 'done', 'decision', 'checkpoint', 'question', 'input'],
  synth: ['json', 'workspace', 'dir', 'keys', 'check', 'archive', 'commit', 'retention-days'],
}

module.exports = {
  /** The actions `loa ledger` takes from this file; ledger.js wires them. */
  actions: ACTIONS,
  accepts: ACCEPTS,
  options,
  help: `  loa ledger event --agent ID [--type T] [--at RFC3339] [--branch B] [--reason R] [--now TEXT]
                   [--done TEXT]... [--decision KEY=VALUE]... [--checkpoint PHASE=STATUS]...
                   [--question TEXT]... [--input FILE|-] [--dir DIR] [--workspace DIR] [--json]
                                 write one session's event file into <dir>/events/
  loa ledger synth [--check] [--archive] [--retention-days N] [--commit] [--dir DIR] [--keys DIR]
                   [--workspace DIR] [--json]
                                 merge every event into <dir>/current.md (same bytes in any
                                 order); --check: exit 1 when current.md is stale`,
  optionHelp: `  --dir DIR     ledger: the handoffs directory (default: synthesis.dir of the workspace)`,
  /**
   * Runs `loa ledger <action>` for the actions above, checking the options each accepts;
   * `undefined` for an action this file does not have.
   */
  run(context) {
    const { action, values } = context
    if (!Object.hasOwn(ACTIONS, action ?? '')) return undefined
    for (const name of Object.keys(values)) {
      if (name !== 'help' && !ACCEPTS[action].includes(name)) throw cli.usage(`--${name} does not apply to 'loa ledger ${action}'`)
    }
    return ACTIONS[action](context)
  },
}
