'use strict'
// `loa search`, `loa forget` and `loa import memory-core`: finding, forgetting and bringing in
// memories from a terminal, as the OpenClaw memory slot does for an agent. Output names ids,
// paths, scores and counts; `loa search` prints the memories it finds (that is what was asked),
// `loa forget` never prints what it removed.

const core = require('../../index.js')
const cli = require('../lib/cli.js')

const { printJson, workspace, positiveInteger } = cli

/** The CLI's own WAL session: one store at a time per workspace runs these commands. */
const SESSION = 'cli'

/**
 * Runs `fn` with a store of the workspace; `readOnly` for the commands that only read, so that
 * they work on a full or read-only disk and create nothing (no `cli` session).
 */
async function withStore(values, fn, { readOnly = false } = {}) {
  const store = await core.MemoryStore.openAsync({ workspaceDir: workspace(values), sessionId: SESSION, readOnly })
  try {
    return await fn(store)
  } finally {
    store.close()
  }
}

/** One line of text: a memory's content with its line breaks shown as `⏎`, cut at `max` characters. */
function oneLine(text, max = 160) {
  const flat = text.replace(/\r?\n/g, ' ⏎ ')
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

async function search({ args, values }) {
  if (args.length === 0) throw cli.usage("'loa search' needs a query")
  const query = args.join(' ')
  const limit = positiveInteger(values.limit, '--limit')
  const options = { ...(limit ? { limit } : {}), ...(values.agent !== undefined ? { agentId: values.agent } : {}) }
  const found = await withStore(values, (store) => store.search(query, options), { readOnly: true })
  if (values.json) {
    printJson(found)
    return 0
  }
  if (found.hits.length === 0) {
    process.stdout.write('no memory matches\n')
    return 0
  }
  for (const hit of found.hits) {
    const e = hit.explain
    const why = e.matched.map((m) => m.queryWord).join(', ')
    // The factors that did something, in the order of the score's formula.
    const context = e.context > 0 ? ` + context ${e.context.toFixed(3)}` : ''
    const speaker = e.speaker < 1 ? ` × other speaker ${e.speaker}` : ''
    const period = e.period < 1 ? ` × outside the period ${e.period}` : ''
    // 0.7: it only asks; 0.6: it voices a wish or plan (docs/search.md, "Mood").
    const mood = e.mood < 1 ? ` × mood ${e.mood}` : ''
    process.stdout.write(
      `${hit.score.toFixed(3)}  ${hit.type.padEnd(11)} ${hit.timestamp.slice(0, 10)}  ${hit.id.slice(0, 12)}  ${hit.path}#L${hit.startLine}-L${hit.endLine}\n` +
        `       ${oneLine(hit.content)}\n` +
        `       matched ${why}; relevance ${e.relevance.toFixed(3)}${context} × recency ${e.recency.toFixed(3)} × importance ${e.importance}${speaker}${period}${mood}\n`,
    )
  }
  return 0
}

async function forget({ args, values }) {
  cli.expectArgs(args, 0, 'forget')
  const byId = values.id !== undefined
  const byQuery = values.query !== undefined
  if (byId === byQuery) throw cli.usage("'loa forget' needs exactly one of --id ID and --query TEXT")
  if (byId && !/^[0-9a-f]{64}$/.test(values.id)) throw cli.usage('--id must be a memory id (64 lowercase hex digits, as loa search --json gives it)')
  if (byQuery && values.query.trim() === '') throw cli.usage('--query needs words')
  const limit = positiveInteger(values.limit, '--limit')
  if (byId && (limit || values.agent !== undefined)) throw cli.usage('--limit and --agent go with --query')
  const selector = byId
    ? { id: values.id }
    : { query: values.query, confirm: values.confirm === true, ...(limit ? { limit } : {}), ...(values.agent !== undefined ? { agentId: values.agent } : {}) }
  if (byId && values.confirm !== true) {
    // Forgetting is for good: an id is confirmed too.
    const shown = await withStore(values, (store) => store.get(values.id), { readOnly: true })
    if (values.json) printJson({ applied: false, matched: shown ? [{ id: shown.id, path: shown.path }] : [] })
    else process.stdout.write(shown ? `would forget ${shown.id.slice(0, 12)} (${shown.path}); run again with --confirm\n` : 'no memory with that id\n')
    return shown ? 1 : 0
  }
  if (values.keys !== undefined && !values.seal) throw cli.usage('--keys applies to forget --seal only')
  // The ring is opened only when sealing: without --seal no private key is touched.
  const sealWith = values.seal ? core.KeyRing.open(cli.keysDir(values, core)) : undefined
  // A dry run (--query without --confirm) only reads.
  const result = await withStore(values, (store) => store.forget(selector, {}, sealWith), { readOnly: byQuery && values.confirm !== true })
  const summary = {
    applied: result.applied,
    matched: result.matched.map((h) => ({ id: h.id, path: h.path, score: h.score })),
    tombstones: result.tombstones,
    walRecords: result.walRecords,
    filesChanged: result.filesChanged,
    sealed: result.sealed ?? null,
    manifestUnsigned: result.manifestUnsigned,
    copiesRemoved: result.copiesRemoved,
    deadLetters: result.deadLetters,
    imported: result.imported,
  }
  if (values.json) {
    printJson(summary)
  } else if (!result.applied) {
    process.stdout.write(`would forget ${result.matched.length} memor${result.matched.length === 1 ? 'y' : 'ies'}:\n`)
    for (const h of result.matched) process.stdout.write(`  ${h.id.slice(0, 12)}  ${h.path}\n`)
    process.stdout.write('run again with --confirm to forget them\n')
  } else {
    process.stdout.write(
      `forgot ${result.tombstones.length} memor${result.tombstones.length === 1 ? 'y' : 'ies'}: ${result.walRecords} WAL record(s) replaced by tombstones, ` +
        `${result.filesChanged} file(s) changed, ${result.copiesRemoved.length} kept cop${result.copiesRemoved.length === 1 ? 'y' : 'ies'} removed, ` +
        `${result.deadLetters} dead letter(s) removed\n`,
    )
    for (const c of result.copiesRemoved) process.stdout.write(`  removed ${c}\n`)
    for (const f of result.imported) {
      process.stdout.write(
        f.removed
          ? `  removed from ${f.file} (the block at line ${f.line})\n`
          : `  NOT removed from ${f.file}: the text was not found there (the file changed since the import); it may still hold it\n`,
      )
    }
    if (result.sealed) process.stdout.write(`  sealed ${result.sealed.files} file(s) in ${result.sealed.manifest} with key ${result.sealed.keyId}\n`)
    if (result.manifestUnsigned) {
      process.stdout.write('  the manifest no longer lists them and is unsigned: seal again (loa consolidate --seal) before recovery checks it\n')
    }
  }
  // A preview that found something is "not done yet": exit 1, as a failed check.
  return result.applied || result.matched.length === 0 ? 0 : 1
}

async function importCommand({ action, args, values }) {
  if (action !== 'memory-core') throw cli.badAction('import', action, ['memory-core'])
  cli.expectArgs(args, 1, 'import')
  const report = await withStore(values, (store) => store.importMarkdown(workspace(values), values.agent !== undefined ? { agentId: values.agent } : {}))
  if (values.json) {
    printJson(report)
  } else {
    process.stdout.write(
      `read ${report.files.length} file(s), ${report.blocks} block(s): ${report.imported} imported, ${report.duplicates} already stored, ` +
        `${report.rejected} rejected by the gates, ${report.blocked} blocked, ${report.forgotten} forgotten earlier\n`,
    )
    for (const s of report.skipped) process.stdout.write(`  skipped ${s.file}: ${s.reason}\n`)
  }
  return 0
}

const options = {
  workspace: { type: 'string' },
  agent: { type: 'string' },
  limit: { type: 'string' },
  id: { type: 'string' },
  query: { type: 'string' },
  confirm: { type: 'boolean' },
  seal: { type: 'boolean' },
  keys: { type: 'string' },
}

module.exports = {
  search: {
    help: `  loa search <query> [--workspace DIR] [--agent ID] [--limit N] [--json]
                                 the memories that best answer the query, each with why
                                 (matched words, relevance + context × recency × importance
                                 × speaker × period × mood, the factors below 1 only) and its
                                 path in the Markdown view`,
    optionHelp: `  --agent ID    search, forget, import: as this agent (its memories, the workspace's and
                what memory.sharing shares); capture: the memory's agent
  --limit N     search, forget: most memories (default 10)`,
    options,
    accepts: ['json', 'workspace', 'agent', 'limit'],
    run: search,
  },
  forget: {
    help: `  loa forget --id ID | --query TEXT [--confirm] [--seal [--keys DIR]] [--workspace DIR] [--agent ID] [--limit N] [--json]
                                 forget memories for good, from every file and the WAL itself,
                                 the copies loa keeps (recovery evidence, quarantined files,
                                 dead letters) and the MEMORY.md they were imported from
                                 (without --confirm: list what would go, exit 1); --seal signs
                                 the grimoire again (else its manifest is left unsigned)`,
    optionHelp: `  --confirm     forget: do it (without: a preview)`,
    options,
    accepts: ['json', 'workspace', 'agent', 'limit', 'id', 'query', 'confirm', 'seal', 'keys'],
    run: forget,
  },
  import: {
    help: `  loa import memory-core [--workspace DIR] [--agent ID] [--json]
                                 import OpenClaw memory-core's MEMORY.md and memory/*.md of the
                                 workspace as memories (redacted, gated; again: nothing new)`,
    options,
    accepts: ['json', 'workspace', 'agent'],
    run: importCommand,
  },
}
