'use strict'
// `loa report`: one self-contained HTML page of what an agent's memory keeps (memories, the
// workspace's health, the next prompt's context, the Lossless Ledger, plots). A read of the
// workspace: the only file written is the page, and never inside the workspace's state.

const fs = require('node:fs')
const path = require('node:path')
const core = require('../../index.js')
const cli = require('../lib/cli.js')

const { workspace, positiveInteger } = cli

const { gatherReport, DEFAULT_LIMIT } = require('../lib/report/gather.js')
const { renderReport } = require('../lib/report/render.js')
const { hmacKey } = require('./audit.js')

/** The longest `--query`: the store's own limit on a query (32 KiB). */
const MAX_QUERY_BYTES = 32 * 1024

/** `dir` with its symlinks resolved when it exists; else its nearest existing parent's, joined. */
function realPath(dir) {
  const rest = []
  let at = dir
  for (;;) {
    try {
      return path.join(fs.realpathSync(at), ...rest.reverse())
    } catch (err) {
      if (err.code !== 'ENOENT' || path.dirname(at) === at) throw err
      rest.push(path.basename(at))
      at = path.dirname(at)
    }
  }
}

const inside = (child, parent) => {
  const rel = path.relative(parent, child)
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))
}

/**
 * Where the page goes: `--out`, else `loa-report.html` in the current directory. Refused inside
 * the grimoire and the other state directories (WAL, key ring, `.loa`), where a page among the
 * state files would be taken for one (and hashed into the next seal), and anywhere but a regular
 * file or a new name.
 */
function outputPath(ws, config, values) {
  if (values.out === '') throw cli.usage('--out needs a file')
  const out = path.resolve(values.out ?? 'loa-report.html')
  const dir = realPath(path.dirname(out))
  const target = path.join(dir, path.basename(out))
  const state = [config.grimoiresDir, config.wal.dir, config.signing.keysDir, '.loa'].map((d) => realPath(path.resolve(ws, d)))
  if (state.some((d) => inside(target, d))) {
    throw new cli.CliError('E_INVALID_ARGUMENT', `--out ${out} is inside the workspace's state (the grimoire, the WAL, the key ring or .loa); write the report elsewhere`)
  }
  cli.requireDir(dir, 'directory of --out')
  // lstat: a symlink where the page goes is refused, not followed.
  let stat
  try {
    stat = fs.lstatSync(target)
  } catch (err) {
    if (err.code !== 'ENOENT') throw new cli.CliError('E_IO', `${out}: ${err.code ?? 'unreadable'}`)
  }
  if (stat && !stat.isFile()) throw new cli.CliError('E_NOT_REGULAR_FILE', `${out} is not a regular file`)
  return target
}

function run({ args, values }) {
  cli.expectArgs(args, 0, 'report')
  const ws = workspace(values)
  if (values.query !== undefined && (values.query.trim() === '' || Buffer.byteLength(values.query) > MAX_QUERY_BYTES)) {
    throw cli.usage('--query needs words (at most 32 KiB)')
  }
  if (values.agent === '') throw cli.usage('--agent needs an id')
  for (const flag of ['manifest', 'keys']) if (values[flag] === '') throw cli.usage(`--${flag} needs a path`)
  const { config } = core.loadConfig(ws)
  const out = values.json ? null : outputPath(ws, config, values)
  const model = gatherReport(ws, {
    agent: values.agent ?? null,
    query: values.query ?? null,
    limit: positiveInteger(values.limit, '--limit') ?? DEFAULT_LIMIT,
    manifest: values.manifest,
    keys: values.keys,
    hmacKey: hmacKey(values),
  })
  if (values.json) {
    cli.printJson(model)
    return cli.EXIT_OK
  }
  core.writeFileAtomicSync(out, renderReport(model))
  process.stdout.write(`${out}\n`)
  return cli.EXIT_OK
}

module.exports = {
  help: `  loa report [--workspace DIR] [--agent ID] [--query TEXT] [--out FILE] [--limit N] [--json]
                                 write one self-contained HTML page of what the memory keeps:
                                 memories, health, the next prompt's context, the ledger, plots
                                 (default ./loa-report.html; never inside the workspace's state);
                                 --json prints the page's data instead`,
  optionHelp: `  --query TEXT  report: the context the next prompt would get for TEXT (default: without a query)
  --limit N     report: memories listed, newest first (default ${DEFAULT_LIMIT}; counts cover all)`,
  options: {
    workspace: { type: 'string' },
    agent: { type: 'string' },
    query: { type: 'string' },
    out: { type: 'string' },
    limit: { type: 'string' },
    manifest: { type: 'string' },
    keys: { type: 'string' },
    'hmac-key-file': { type: 'string' },
  },
  accepts: ['json', 'workspace', 'agent', 'query', 'out', 'limit', 'manifest', 'keys', 'hmac-key-file'],
  run,
  outputPath,
}
