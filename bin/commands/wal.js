'use strict'
// `loa wal dump|verify|stats <dir>`: read-only views of a WAL directory.

const path = require('node:path')
const core = require('../../index.js')
const cli = require('../lib/cli.js')

const { printJson } = cli
const { walStatsOf } = require('../lib/wal-stats.js')

function showData(buffer) {
  const text = buffer.toString('utf8')
  return Buffer.from(text, 'utf8').equals(buffer) ? { encoding: 'utf8', text } : { encoding: 'base64', text: buffer.toString('base64') }
}

function walDump(dir, { json, data, session }) {
  const records = core.readWal(dir).filter((r) => !session || r.sessionId === session)
  if (json) {
    printJson(
      records.map(({ data: bytes, ...rest }) => ({
        ...rest,
        time: new Date(rest.ts).toISOString(),
        dataBytes: bytes ? bytes.length : null,
        ...(data && bytes ? { data: showData(bytes) } : {}),
      })),
    )
    return 0
  }
  for (const r of records) {
    const size = r.data ? `${r.data.length} B` : '-'
    const meta = r.meta ? ' ' + JSON.stringify(r.meta) : ''
    process.stdout.write(`${new Date(r.ts).toISOString()}  ${r.sessionId}#${r.seq}  ${r.op}  ${r.path ?? '-'}  ${size}${meta}\n`)
    if (data && r.data) {
      const shown = showData(r.data)
      process.stdout.write(`    ${shown.encoding}: ${shown.text.replace(/\n/g, '\n    ')}\n`)
    }
  }
  process.stdout.write(`${records.length} record(s)\n`)
  return 0
}

function walVerify(dir, { json }) {
  const v = core.verifyWal(dir)
  if (json) {
    printJson(v)
  } else {
    for (const c of v.corrupt) process.stdout.write(`CORRUPT  ${c.segment} at byte ${c.offset}: ${c.reason}\n`)
    for (const t of v.truncatedTails) {
      process.stdout.write(`torn tail ${t.segment} at byte ${t.offset} (${t.bytes} B of an unfinished write; the next writer cuts it)\n`)
    }
    process.stdout.write(
      `${v.ok ? 'OK' : 'FAILED'}: ${v.records} record(s) in ${v.segments} segment(s) of ${v.sessions} session(s), ${v.corrupt.length} corrupt\n`,
    )
  }
  return v.ok ? 0 : 1
}

function walStats(dir, { json }) {
  const stats = walStatsOf(dir)
  if (json) {
    printJson(stats)
  } else {
    process.stdout.write(`${stats.sessions} session(s), ${stats.segments} segment(s), ${stats.bytes} bytes, ${stats.records} record(s)${stats.ok ? '' : ' (CORRUPT: run loa wal verify)'}\n`)
    for (const [id, s] of Object.entries(stats.bySession)) {
      process.stdout.write(`  ${id}: ${s.records} record(s), last seq ${s.lastSeq}, last write ${new Date(s.lastTs).toISOString()}\n`)
    }
  }
  return stats.ok ? 0 : 1
}

module.exports = {
  help: `  loa wal dump <dir> [--session ID] [--data] [--json]
                                 print records of every session (merged by time)
  loa wal verify <dir> [--json]  check every segment; exit 1 on corruption
  loa wal stats <dir> [--json]   sessions, segments, bytes, records, last seq`,
  optionHelp: `  --data        include record data in dump (UTF-8 text, or base64 when binary)
  --session ID  only this session`,
  options: { data: { type: 'boolean' }, session: { type: 'string' } },
  accepts: ['json', 'data', 'session'],
  run({ action, target, args, values }) {
    const run = { __proto__: null, dump: walDump, verify: walVerify, stats: walStats }[action]
    if (!run) throw cli.badAction('wal', action, ['dump', 'verify', 'stats'])
    if (!target) throw cli.usage(`'loa wal ${action}' needs a WAL directory`)
    cli.expectArgs(args, 2, 'wal')
    if ((values.data || values.session !== undefined) && action !== 'dump') throw cli.usage(`--data and --session apply to 'loa wal dump' only`)
    const dir = cli.requireDir(path.resolve(target), 'WAL directory')
    return run(dir, values)
  },
}
