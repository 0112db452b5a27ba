'use strict'
// `loa dead-letter list|replay`: the captures a workspace's disk refused (`.loa/dead-letter.jsonl`),
// and storing them once the cause is gone. Prints ids, sessions, counts and error codes; never
// what was captured.

const core = require('../../index.js')
const cli = require('../lib/cli.js')

const { workspace } = cli

/** The queue's options: `--dir` is the `deadLetterDir` the writer was given (relative: below the workspace). */
function queue(ws, values) {
  if (values.dir === '') throw cli.usage('--dir needs a directory')
  return { workspaceDir: ws, ...(values.dir !== undefined ? { deadLetterDir: values.dir } : {}) }
}

function list(ws, values) {
  const listing = core.listDeadLetters(queue(ws, values))
  if (values.json) {
    // Content stays out of the JSON too: it is redacted, but it is still what the agent said.
    cli.printJson({
      path: listing.path,
      letters: listing.letters.map(({ entry, ...letter }) => ({ ...letter, type: entry.type, timestamp: entry.timestamp ?? null })),
      unreadable: listing.unreadable,
    })
    return cli.EXIT_OK
  }
  for (const l of listing.letters) {
    const error = l.error ? `${l.error.code}` : '-'
    process.stdout.write(`${l.id.slice(0, 16)}  ${l.sessionId}  ${l.entry.type}${l.blocked ? ' (blocked)' : ''}  ${l.attempts} attempt(s), last ${l.lastAttemptAt}: ${error}\n`)
  }
  for (const u of listing.unreadable) process.stdout.write(`UNREADABLE line ${u.line}: ${u.reason}\n`)
  process.stdout.write(`${listing.letters.length} dead letter(s) in ${listing.path}${listing.unreadable.length ? `, ${listing.unreadable.length} unreadable line(s) kept` : ''}\n`)
  return cli.EXIT_OK
}

async function replay(ws, values) {
  const r = await core.replayDeadLetters(queue(ws, values))
  if (values.json) {
    cli.printJson(r)
  } else {
    for (const x of r.results.filter((x) => x.outcome === 'failed')) {
      process.stdout.write(`FAILED   ${x.id.slice(0, 16)}  ${x.sessionId}  attempt ${x.attempts}: ${x.error?.code ?? '-'}\n`)
    }
    for (const u of r.unreadable) process.stdout.write(`UNREADABLE line ${u.line}: ${u.reason}\n`)
    process.stdout.write(
      `replayed ${r.results.length}: ${r.stored} stored, ${r.duplicates} already stored, ${r.rejected} rejected by the gates, ` +
        `${r.blocked} blocked, ${r.failed} still failing; ${r.remaining} left in the queue\n`,
    )
  }
  return r.failed > 0 ? cli.EXIT_PROBLEMS : cli.EXIT_OK
}

module.exports = {
  help: `  loa dead-letter list|replay [--workspace DIR] [--dir DIR] [--json]
                                 captures the disk refused: list them, or store them now (each at
                                 most once); replay exits 1 when some still fail; --dir: the
                                 queue's directory when not .loa (the deadLetterDir it was written with)`,
  options: { dir: { type: 'string' } },
  accepts: ['json', 'workspace', 'dir'],
  run({ action, args, values }) {
    const run = { __proto__: null, list, replay }[action]
    if (!run) throw cli.badAction('dead-letter', action, ['list', 'replay'])
    cli.expectArgs(args, 1, 'dead-letter')
    return run(workspace(values), values)
  },
}
