'use strict'
// `loa demo` (npm start): the main job on an embedded default, on a fresh workspace left on disk.
// Each step prints what it did so a newcomer can follow what the library guarantees.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn } = require('node:child_process')
const core = require('../../index.js')

const AGENT_TURNS = [
  ['agent-1', 'write', 'NOTES.md', '# Notes\n\n- The user prefers TypeScript over JavaScript.\n'],
  ['agent-1', 'write', 'learnings/build.md', 'Run `npm test` before every commit.\n'],
  ['agent-2', 'write', 'NOTES.md', '# Notes\n\n- The user prefers TypeScript.\n- Deploys happen on Fridays.\n'],
  ['agent-2', 'write', 'scratch.md', 'temporary thoughts\n'],
  ['agent-2', 'delete', 'scratch.md', null],
]

function step(n, title) {
  process.stdout.write(`\n[${n}] ${title}\n`)
}
function say(text) {
  process.stdout.write(`    ${text}\n`)
}

/** A writer in another process, killed with SIGKILL while it is appending. */
function crashingWriter(walDir) {
  const script = `
    const { Wal } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'index.js'))})
    const wal = Wal.open(${JSON.stringify(walDir)}, { sessionId: 'agent-3' })
    let n = 0
    const loop = async () => { for (;;) { const seq = await wal.append({ op: 'write', path: 'crash-test.md', data: 'turn ' + n++ }); process.stdout.write(seq + '\\n') } }
    for (let i = 0; i < 8; i++) loop()`
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (chunk) => {
      out += chunk
      if (out.split('\n').length > 200) child.kill('SIGKILL')
    })
    child.on('close', (code, signal) => {
      const acked = out.split('\n').slice(0, -1).map(Number)
      resolve({ signal, acked })
    })
  })
}

async function runDemo({ workspace } = {}) {
  const started = Date.now()
  const root = path.resolve(workspace ?? fs.mkdtempSync(path.join(os.tmpdir(), 'loa-demo-')))
  fs.mkdirSync(root, { recursive: true })
  process.stdout.write(`@loa/core demo - workspace ${root}\n`)

  step(1, 'Configuration')
  const { config, warnings, source } = core.loadConfig(root)
  say(`${source ? `read ${source}` : 'no .loa.config.yaml: every key at its default'}${warnings.length ? ` (${warnings.length} warning(s))` : ''}`)
  say(`WAL at ${config.wal.dir}, sync '${config.wal.sync}', lock timeout ${config.wal.lockTimeoutMs} ms; state in ${config.grimoiresDir}`)
  const walDir = path.join(root, config.wal.dir)
  const stateDir = path.join(root, config.grimoiresDir)

  step(2, 'Two agent sessions write to the write-ahead log')
  const wals = new Map()
  for (const [session, op, file, text] of AGENT_TURNS) {
    if (!wals.has(session)) wals.set(session, core.Wal.open(walDir, { sessionId: session, sync: config.wal.sync }))
    const seq = await wals.get(session).append({ op, path: file, ...(text === null ? {} : { data: text }) })
    say(`${session}#${seq}  ${op.padEnd(6)} ${file}  (durable: fsynced before this line)`)
    await new Promise((r) => setTimeout(r, 2))
  }
  for (const wal of wals.values()) wal.close()

  step(3, 'A third writer is killed with SIGKILL in the middle of appending')
  const crash = await crashingWriter(walDir)
  say(`writer died by ${crash.signal} after ${crash.acked.length} acknowledged appends`)
  const reopened = core.Wal.open(walDir, { sessionId: 'agent-3' })
  const survivors = new Set(reopened.replay().map((r) => r.seq))
  const lost = crash.acked.filter((seq) => !survivors.has(seq))
  const tail = reopened.stats().truncatedTail
  say(`reopened: ${survivors.size} records on disk, ${lost.length} acknowledged record(s) lost${tail ? `, torn tail of ${tail.bytes} B cut` : ''}`)
  say(`next append continues at seq ${await reopened.append({ op: 'note', data: 'back after the crash' })}`)
  reopened.close()

  step(4, `Consolidate every session into ${path.relative(root, stateDir)}/ (last write wins)`)
  const result = core.consolidateWal(walDir, stateDir)
  say(`${result.records} records read, ${result.applied} files written or deleted, ${result.prunedSegments} applied segment(s) pruned`)
  for (const c of result.conflicts) {
    say(`conflict on ${c.path}: ${c.winner.sessionId}#${c.winner.seq} overwrote ${c.overwritten.sessionId}#${c.overwritten.seq} (sha256 ${c.overwritten.hash.slice(0, 12)}... logged)`)
  }
  say(`NOTES.md now reads: ${JSON.stringify(fs.readFileSync(path.join(stateDir, 'NOTES.md'), 'utf8'))}`)

  step(5, 'Verify the log, then damage a copy of it and verify again')
  const verification = core.verifyWal(walDir)
  say(`${verification.ok ? 'OK' : 'FAILED'}: ${verification.records} records in ${verification.segments} segments`)
  const copy = path.join(root, '.loa', 'wal-damaged-copy')
  fs.cpSync(walDir, copy, { recursive: true })
  const segment = path.join(copy, 'sessions', 'agent-3', fs.readdirSync(path.join(copy, 'sessions', 'agent-3')).find((f) => f.endsWith('.wal')))
  const bytes = fs.readFileSync(segment)
  bytes[40] ^= 0xff // inside the first record, with valid records after it: corruption, not a torn tail
  fs.writeFileSync(segment, bytes)
  const damaged = core.verifyWal(copy)
  for (const c of damaged.corrupt) say(`detected: ${path.relative(root, c.segment)} at byte ${c.offset}: ${c.reason}`)

  process.stdout.write(`\nDone in ${Date.now() - started} ms. Look around: ${root}\n  loa wal dump ${walDir}\n  loa wal verify ${copy}\n`)
  return damaged.ok ? 1 : 0
}

module.exports = {
  help: '  loa demo [--workspace DIR]     run the main job on a fresh workspace (npm start)',
  optionHelp: '  --workspace DIR  where `loa demo` builds its workspace (default: a new temp dir)',
  options: { workspace: { type: 'string' } },
  run: ({ values }) => runDemo({ workspace: values.workspace }),
  runDemo,
}
