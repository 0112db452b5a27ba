'use strict'
// `loa capture` and `loa consolidate`: the memory pipeline from scripts and hooks.

const core = require('../../index.js')
const cli = require('../lib/cli.js')

const { printJson, workspace, positiveInteger } = cli

/** The largest content `capture` takes (the store's limit); stdin beyond it is refused unread. */
const MAX_CONTENT_BYTES = 1024 * 1024

function readContent(values) {
  if (values.content !== undefined) return values.content
  if (process.stdin.isTTY) throw cli.usage("'loa capture' needs --content TEXT or the content on standard input")
  return cli.utf8(cli.readStdin(MAX_CONTENT_BYTES), 'standard input')
}

function parseConfidence(text) {
  if (text === undefined) return undefined
  const n = Number(text)
  // Only the shape here; the range is the store's to check (E_INVALID_ARGUMENT).
  if (text.trim() === '' || !Number.isFinite(n)) throw cli.usage('--confidence must be a number between 0 and 1')
  return n
}

async function capture({ args, values }) {
  cli.expectArgs(args, 0, 'capture')
  if (values.session !== undefined && !values.session) throw cli.usage('--session needs an id')
  const workspaceDir = workspace(values)
  const entry = {
    type: values.type ?? 'interaction',
    content: readContent(values),
    confidence: parseConfidence(values.confidence),
    tags: values.tags ? values.tags.split(',').map((t) => t.trim()).filter(Boolean) : undefined,
    agentId: values.agent,
  }
  const store = await core.MemoryStore.openAsync({ workspaceDir, sessionId: values.session ?? 'cli' })
  let result
  try {
    result = await store.capture(entry)
  } finally {
    store.close()
  }
  if (values.json) {
    printJson(result)
  } else if (result.blocked) {
    const kinds = [...new Set(result.findings.map((f) => f.kind))].join(', ')
    process.stdout.write(`blocked: the entry contains ${kinds}; nothing was stored (only the findings' fingerprints were audited)\n`)
  } else if (result.accepted) {
    const tags = result.tags.length ? `, tags ${result.tags.join(', ')}` : ''
    const redacted = result.findings.length ? `, ${result.findings.length} value(s) redacted` : ''
    process.stdout.write(`accepted ${result.id.slice(0, 12)} (seq ${result.seq}, score ${result.score}${tags}${redacted})\n`)
  } else {
    process.stdout.write('rejected by the quality gates:\n')
    for (const g of result.gates) process.stdout.write(`  ${g.pass ? 'pass' : 'FAIL'}  ${g.name}: ${g.reason}\n`)
  }
  return result.accepted ? 0 : 1
}

async function consolidate({ args, values }) {
  cli.expectArgs(args, 0, 'consolidate')
  if (values.keys !== undefined && !values.seal) throw cli.usage('--keys applies to consolidate --seal only')
  const workspaceDir = workspace(values)
  // The ring is opened only when sealing: without --seal no private key is touched.
  const sealWith = values.seal ? core.KeyRing.open(cli.keysDir(values, core)) : undefined
  const result = await core.consolidateMemory({ workspaceDir }, sealWith)
  if (values.json) {
    printJson(result)
  } else {
    const expired =
      (result.expired ? `; ${result.expired} expired forgotten` : '') +
      (result.pendingRemovals ? `; ${result.pendingRemovals} expired record(s) left in logs other processes hold, removed once free` : '')
    const sealed = result.sealed
      ? `; sealed ${result.sealed.files} file(s) in ${result.sealed.manifest} with key ${result.sealed.keyId}`
      : ''
    const refused = result.refused.length ? `; ${result.refused.length} WAL record(s) refused` : ''
    process.stdout.write(
      `applied ${result.applied} file(s); ${result.memories} memor${result.memories === 1 ? 'y' : 'ies'}; ` +
        `learnings ${result.learnings} new or changed (${result.learningsTotal} in all); ` +
        `NOTES.md ${result.notesUpdated ? 'updated' : 'unchanged'}; ${result.conflicts} conflict(s)${expired}${refused}${sealed}\n`,
    )
  }
  // A refused record is a forgery or damage worth a look even when the run succeeded; the
  // report names it by session and seq, never by what it holds.
  for (const r of result.refused) {
    process.stderr.write(`loa: WAL record ${r.sessionId} #${r.seq} not applied: ${r.code}: ${r.reason}\n`)
  }
  return 0
}

function context({ args, values }) {
  cli.expectArgs(args, 0, 'context')
  const budget = positiveInteger(values.budget, '--budget')
  const built = core.buildMemoryContext({ workspaceDir: workspace(values) }, budget ? { budget } : {})
  if (values.json) {
    printJson({ text: built.text, tokens: built.tokens, included: built.included, dropped: built.dropped })
    return 0
  }
  if (built.text === null) {
    process.stdout.write('nothing to remember yet (no sessions or learnings)\n')
  } else {
    process.stdout.write(built.text.endsWith('\n') ? built.text : built.text + '\n')
  }
  // A per-item table on stderr, so that stdout stays exactly what would be prepended.
  const rows = built.included.map((i) => [String(i.tokens), i.kind, i.truncated ? 'cut' : '', `#${i.index}`])
  const itemTokens = built.included.reduce((sum, i) => sum + i.tokens, 0)
  process.stderr.write(`\n${built.tokens} tokens (header ${built.tokens - itemTokens}); budget ${budget ?? 'from .loa.config.yaml'}\n`)
  process.stderr.write('tokens  kind      note  item\n')
  for (const [tokens, kind, note, item] of rows) process.stderr.write(`${tokens.padStart(6)}  ${kind.padEnd(8)}  ${note.padEnd(4)}  ${item}\n`)
  for (const d of built.dropped) process.stderr.write(`     -  ${d.item.kind.padEnd(8)}  drop  ${d.item.index}: ${d.reason}\n`)
  return 0
}

const options = {
  budget: { type: 'string' },
  workspace: { type: 'string' },
  type: { type: 'string' },
  content: { type: 'string' },
  confidence: { type: 'string' },
  tags: { type: 'string' },
  agent: { type: 'string' },
  session: { type: 'string' },
  seal: { type: 'boolean' },
  keys: { type: 'string' },
}

module.exports = {
  context: {
    help: `  loa context [--workspace DIR] [--budget N] [--json]
                                 print what would be prepended to the next prompt, with a
                                 per-item token table (on stderr)`,
    optionHelp: '  --budget N    context: tokens for the whole text (default: context.token_budget)',
    options,
    accepts: ['json', 'workspace', 'budget'],
    run: context,
  },
  capture: {
    help: `  loa capture [--workspace DIR] [--session ID] [--type TYPE] [--content TEXT] [--confidence N]
              [--tags a,b] [--agent ID] [--json]
                                 redact, gate and durably store one memory (content from stdin
                                 without --content); exit 1 when rejected or blocked`,
    optionHelp: `  --workspace DIR  capture, consolidate, context, dead-letter: the workspace (default: the
                current directory)
  --session ID  capture: the session to capture as (default 'cli')
  --type TYPE   capture: interaction (default), decision, learning, error, milestone`,
    options,
    accepts: ['json', 'workspace', 'session', 'type', 'content', 'confidence', 'tags', 'agent'],
    run: capture,
  },
  consolidate: {
    help: `  loa consolidate [--workspace DIR] [--seal [--keys DIR]] [--json]
                                 apply every session's WAL to the grimoire: memory records,
                                 learnings.json, NOTES.md (idempotent; a record naming any
                                 other file is refused and listed on stderr); --seal then signs the
                                 grimoire's manifest for recovery (LOA_SIGNING_KEY, else the
                                 ring in --keys, default the workspace's signing.keys_dir)`,
    options,
    accepts: ['json', 'workspace', 'seal', 'keys'],
    run: consolidate,
  },
}
