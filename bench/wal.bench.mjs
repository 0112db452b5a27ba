// Durable-append benchmark: @loa/core's Wal against the alternatives, in one run, side by side.
// Every case acknowledges a record only once it is fsynced (fdatasync / synchronous=FULL), all
// write to the same filesystem (a temp dir under os.tmpdir()) with the same payload sizes.
//
//   node bench/wal.bench.mjs          full run (3 rounds of ~0.8 s per case, about a minute in total)
//   node bench/wal.bench.mjs --quick  smoke run (a few hundred records per case)
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'

import { writeReport } from './lib.mjs'

const require = createRequire(import.meta.url)
const { Wal } = require('../index.js')
const Database = require('better-sqlite3')
const lockfile = require('proper-lockfile')

const QUICK = process.argv.includes('--quick')
// Each round of a case runs until it has this many records or this much time, whichever first.
const RUN = QUICK ? { records: 300, ms: 1000 } : { records: 30_000, ms: 800 }
// Warm-up (discarded): first-touch costs such as file creation, page cache, JIT.
const WARM = QUICK ? { records: 20, ms: 100 } : { records: 200, ms: 300 }
// The disk is shared with whatever else runs on the machine, and a busy spell of a few hundred
// ms skewed whichever case ran then (ratios near a target flipped between runs). So every case
// runs in several short rounds, interleaved with the others, and the rounds are pooled.
const ROUNDS = QUICK ? 1 : 3
const SIZES = [100, 4096]
const CONCURRENCY = 64
const BATCH = 64

const now = () => performance.now() // ms, sub-microsecond resolution

// A case is setup(dir, payload) -> { step, close }. step() commits one or more records and
// returns (or resolves with) either an array of the submission times of the records it committed
// (batched modes), or anything else, meaning one record submitted when step() was called.
// Either way every record's latency is "acknowledged (step returned) - submitted".
const CASES = [
  {
    name: 'Wal.append, 1 caller',
    setup: (dir, data) => walCase(dir, data, (wal, rec) => wal.append(rec)),
  },
  {
    name: `Wal.append, ${CONCURRENCY} concurrent`,
    concurrency: CONCURRENCY, // group commit: many appends share one fdatasync
    setup: (dir, data) => walCase(dir, data, (wal, rec) => wal.append(rec)),
  },
  {
    // Not a target; shows how much of single-caller latency is the async hop to the writer thread.
    name: 'Wal.appendSync, 1 caller',
    setup: (dir, data) => walCase(dir, data, (wal, rec) => wal.appendSync(rec)),
  },
  {
    name: 'sqlite WAL, 1 record/txn',
    setup: (dir, data) => sqliteCase(dir, data, 1),
  },
  {
    name: `sqlite WAL, ${BATCH} records/txn`,
    setup: (dir, data) => sqliteCase(dir, data, BATCH),
  },
  {
    // What the original TypeScript implementation did: take proper-lockfile's lock around every
    // single append + fsync (the lock is a mkdir/rmdir of `<file>.lock`).
    name: 'appendFileSync+fsync, lockfile/record (original TS)',
    setup: (dir, data) => {
      const file = path.join(dir, 'log')
      fs.writeFileSync(file, '') // proper-lockfile resolves the realpath, so the file must exist
      const fd = fs.openSync(file, 'a')
      const step = () => {
        lockfile.lockSync(file)
        try {
          fs.appendFileSync(fd, data)
          fs.fsyncSync(fd)
        } finally {
          lockfile.unlockSync(file)
        }
      }
      return { step, close: () => fs.closeSync(fd) }
    },
  },
  {
    // The floor: nothing can be durable faster than one write + one fdatasync per record.
    name: 'floor: writeSync+fdatasync',
    setup: (dir, data) => {
      const fd = fs.openSync(path.join(dir, 'log'), 'a')
      const step = () => {
        fs.writeSync(fd, data)
        fs.fdatasyncSync(fd)
      }
      return { step, close: () => fs.closeSync(fd) }
    },
  },
  {
    // The same floor on space zero-filled ahead (512 KiB at a time), as the Wal does: fdatasync
    // then has no file-size change to commit, which on ext4 saves a journal commit per record.
    // The fair floor for the Wal; informational, the targets use the appending floor above.
    name: 'floor, zero-filled ahead: pwrite+fdatasync',
    setup: (dir, data) => {
      const fd = fs.openSync(path.join(dir, 'log'), 'w')
      const chunk = Buffer.alloc(512 * 1024)
      let position = 0
      let allocated = 0
      const step = () => {
        while (position + data.length > allocated) {
          fs.writeSync(fd, chunk, 0, chunk.length, allocated)
          allocated += chunk.length
        }
        fs.writeSync(fd, data, 0, data.length, position)
        position += data.length
        fs.fdatasyncSync(fd)
      }
      return { step, close: () => fs.closeSync(fd) }
    },
  },
]

function walCase(dir, data, append) {
  const wal = Wal.open(dir, { sessionId: 'bench', sync: 'always' })
  const rec = { op: 'write', path: 'p', data }
  return { step: () => append(wal, rec), close: () => wal.close() }
}

function sqliteCase(dir, data, perTxn) {
  const db = new Database(path.join(dir, 'bench.db'))
  const mode = db.pragma('journal_mode = WAL', { simple: true })
  if (mode !== 'wal') throw new Error(`sqlite refused WAL mode (got ${mode})`)
  db.pragma('synchronous = FULL') // fsync the WAL on every commit: same durability as the others
  db.exec('CREATE TABLE log (seq INTEGER PRIMARY KEY, op TEXT, path TEXT, data BLOB)')
  const insert = db.prepare('INSERT INTO log (op, path, data) VALUES (?, ?, ?)')
  const commit = db.transaction(() => {
    const submitted = []
    for (let i = 0; i < perTxn; i++) {
      submitted.push(now())
      insert.run('write', 'p', data)
    }
    return submitted
  })
  return { step: commit, close: () => db.close() }
}

// The one harness every case goes through: `concurrency` loops, each stepping until the phase
// has enough records or time is up, collecting per-record latencies (µs).
async function measure(c, size, root) {
  const dir = fs.mkdtempSync(path.join(root, 'case-'))
  const { step, close } = c.setup(dir, randomBytes(size))
  const phase = async ({ records, ms }) => {
    const lat = []
    const t0 = now()
    const loop = async () => {
      while (lat.length < records && now() - t0 < ms) {
        const start = now()
        let res = step()
        if (res instanceof Promise) res = await res
        const end = now()
        for (const s of Array.isArray(res) ? res : [start]) lat.push((end - s) * 1000)
      }
    }
    await Promise.all(Array.from({ length: c.concurrency ?? 1 }, loop))
    return { lat, secs: (now() - t0) / 1000 }
  }
  try {
    await phase(WARM)
    return await phase(RUN)
  } finally {
    close()
    fs.rmSync(dir, { recursive: true, force: true }) // keep disk use bounded (4 KiB x 30k records)
  }
}

function summarize(c, size, rounds) {
  const sorted = Float64Array.from(rounds.flatMap((r) => r.lat)).sort()
  const secs = rounds.reduce((sum, r) => sum + r.secs, 0)
  const pct = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]
  return { name: c.name, size, n: sorted.length, rps: sorted.length / secs, p50: pct(0.5), p99: pct(0.99) }
}

function machine() {
  let fsType = 'unknown'
  try {
    const out = execFileSync('df', ['-T', os.tmpdir()], { encoding: 'utf8' }).trim().split('\n')
    const cols = out.at(-1).split(/\s+/)
    fsType = `${cols[1]} (${cols[0]} on ${cols.at(-1)})`
  } catch {} // df missing (e.g. Windows): not worth failing the bench for
  const cpus = os.cpus()
  return [
    `- date: ${new Date().toISOString()}`,
    `- cpu: ${cpus[0]?.model ?? 'unknown'}, ${cpus.length} cores`,
    `- node: ${process.version}, ${os.platform()} ${os.release()}`,
    `- tmpdir: ${os.tmpdir()}, filesystem ${fsType}`,
    `- mode: ${QUICK ? 'quick' : 'full'}; per case ${ROUNDS} interleaved round(s) of up to ${RUN.records} records or ${RUN.ms} ms, each after a ${WARM.ms} ms warm-up`,
  ]
}

const fmt = (x) => Math.round(x).toLocaleString('en-US')

async function main() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'loa-bench-'))
  const runs = SIZES.flatMap((size) => CASES.map((c) => ({ c, size, rounds: [] })))
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const run of runs) {
        const r = await measure(run.c, run.size, root)
        run.rounds.push(r)
        const rps = fmt(r.lat.length / r.secs)
        console.error(`  round ${round}: ${run.c.name} @ ${run.size} B: ${rps} rec/s`) // progress only
      }
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
  const results = runs.map(({ c, size, rounds }) => summarize(c, size, rounds))

  const table = [
    '| case | record size | records/s | p50 µs | p99 µs |',
    '|---|---:|---:|---:|---:|',
    ...results.map((r) => `| ${r.name} | ${r.size} B | ${fmt(r.rps)} | ${fmt(r.p50)} | ${fmt(r.p99)} |`),
  ]
  const find = (prefix, size) => results.find((r) => r.name.startsWith(prefix) && r.size === size)
  const ratios = []
  for (const size of SIZES) {
    const lat = find('Wal.append, 1 caller', size).p50 / find('floor:', size).p50
    const thr = find(`Wal.append, ${CONCURRENCY}`, size).rps / find('sqlite WAL, 1 record', size).rps
    const fair = find('Wal.append, 1 caller', size).p50 / find('floor, zero-filled', size).p50
    ratios.push(
      `- ${size} B: Wal 1-caller p50 / floor p50 = ${lat.toFixed(3)} (target <= 1.3) ${lat <= 1.3 ? 'ok' : 'MISSED'}`,
      `- ${size} B: Wal 1-caller p50 / zero-filled floor p50 = ${fair.toFixed(3)} (informational)`,
      `- ${size} B: Wal ${CONCURRENCY}-concurrent rec/s / sqlite 1-record-txn rec/s = ${thr.toFixed(1)} (target >= 10) ${thr >= 10 ? 'ok' : 'MISSED'}`,
    )
  }
  const report = [
    '# @loa/core durable-append benchmark',
    '',
    ...machine(),
    '',
    ...table,
    '',
    '## Ratios',
    '',
    ...ratios,
    '',
  ].join('\n')
  console.log(report)

  writeReport('wal', report)
}

// A benchmark, not a test: missed targets print MISSED but still exit 0.
await main()
