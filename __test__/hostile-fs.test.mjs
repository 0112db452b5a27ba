// Hostile file systems at every WAL entry point (Wal.open, Wal.openAsync, readWal, verifyWal,
// consolidateWal with both of its directories) and at writeFileAtomic: symlinks (to files, to
// directories, dangling, loops), FIFOs, directories where files belong, read-only files and
// directories, a file that grows while it is read. Every case ends in a coded error or a
// documented outcome, never a hang: the entry points run in a child process (fixtures/
// hostile-probe.mjs) that is killed after a timeout, which fails the test. A victim file outside
// the temp roots is checksummed before and after, and its directory must gain nothing.
import test from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import {
  chmodSync,
  chownSync,
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  appendFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { core, tempDir, startChild, fixture, nextMillisecond, WATCHDOG_MS } from './helpers.mjs'

const { Wal } = core
const SEGMENT_1 = '00000000000000000001.wal'
const MAX_SEGMENT_BYTES = 256 * 1024 * 1024

/** Runs the probe on `plan` ([op, ...args] each) and returns one outcome per op. */
async function probe(plan, { timeoutMs = WATCHDOG_MS, asUser, cwd } = {}) {
  const options = { cwd }
  if (asUser) Object.assign(options, { uid: asUser, gid: asUser })
  const state = startChild(process.execPath, [fixture('hostile-probe.mjs'), JSON.stringify(plan)], options)
  const timer = setTimeout(() => state.child.kill('SIGKILL'), timeoutMs)
  await state.exited
  clearTimeout(timer)
  assert.notEqual(state.exit.signal, 'SIGKILL', `hung: killed after ${timeoutMs} ms running ${plan.map((p) => p[0]).join(', ')}`)
  assert.equal(state.exit.code, 0, state.stderr)
  const line = state.lines.find((l) => l.startsWith('RESULT '))
  assert.ok(line, state.stderr)
  return JSON.parse(line.slice('RESULT '.length))
}

const sha256 = (path) => createHash('sha256').update(readFileSync(path)).digest('hex')

/**
 * A file outside every root under test, shaped like a WAL segment with a torn tail (what the old
 * `Wal.open` "repaired" by truncating), in a directory of its own that must stay as it is.
 */
function victim(t) {
  const scratch = tempDir(t, 'loa-scratch-')
  const wal = Wal.open(scratch, { sessionId: 's1' })
  wal.appendSync({ op: 'write', path: 'a.md', data: 'outside the workspace' })
  wal.close()
  const dir = tempDir(t, 'loa-victim-')
  const path = join(dir, 'victim')
  copyFileSync(join(scratch, 'sessions', 's1', SEGMENT_1), path)
  appendFileSync(path, Buffer.from('4c4f4152400000007475726e', 'hex')) // record magic, length 64, 4 bytes
  const sum = sha256(path)
  return {
    path,
    dir,
    missing: join(dir, 'missing'),
    check(context = '') {
      assert.equal(sha256(path), sum, `${context}: the file outside was modified`)
      assert.deepEqual(readdirSync(dir), ['victim'], `${context}: something was created outside`)
    },
  }
}

/** Plants the hostile thing `kind` at `path`. */
function plant(kind, path, v) {
  switch (kind) {
    case 'symlink to a file':
      return symlinkSync(v.path, path)
    case 'symlink to a directory':
      return symlinkSync(v.dir, path)
    case 'dangling symlink':
      return symlinkSync(v.missing, path)
    case 'symlink loop':
      return symlinkSync(path, path)
    case 'fifo':
      return execFileSync('mkfifo', [path])
    case 'directory':
      return mkdirSync(path)
    default:
      throw new Error(kind)
  }
}
const KINDS = ['symlink to a file', 'symlink to a directory', 'dangling symlink', 'symlink loop', 'fifo', 'directory']

const notRegular = (result) => {
  assert.equal(result.code, 'E_NOT_REGULAR_FILE', JSON.stringify(result))
  return true
}

test('a segment slot holding a symlink, FIFO or directory is refused by every reader and writer, never followed', async (t) => {
  const v = victim(t)
  for (const kind of KINDS) {
    const dir = tempDir(t)
    const target = tempDir(t)
    mkdirSync(join(dir, 'sessions', 's1'), { recursive: true })
    plant(kind, join(dir, 'sessions', 's1', SEGMENT_1), v)
    const [open, openAsync, read, verify, consolidate] = await probe([
      ['open', dir, { sessionId: 's1' }],
      ['openAsync', dir, { sessionId: 's1' }],
      ['readWal', dir],
      ['verifyWal', dir],
      ['consolidateWal', dir, target],
    ])
    for (const result of [open, openAsync, read, consolidate]) notRegular(result)
    assert.deepEqual(verify, { ok: true, value: { ok: false, records: 0, codes: ['E_NOT_REGULAR_FILE'] } }, kind)
    assert.deepEqual(readdirSync(target), [], kind)
    v.check(kind)
  }
})

test('a LOCK slot that is not a regular file is refused; a dangling LOCK symlink creates nothing outside', async (t) => {
  const v = victim(t)
  for (const kind of KINDS) {
    const dir = tempDir(t)
    mkdirSync(join(dir, 'sessions', 's1'), { recursive: true })
    plant(kind, join(dir, 'sessions', 's1', 'LOCK'), v)
    const [open, append] = await probe([
      ['open', dir, { sessionId: 's1', lockTimeoutMs: 0 }],
      ['append', dir, { sessionId: 's1', lockTimeoutMs: 0 }, { op: 'note' }],
    ])
    notRegular(open)
    notRegular(append)
    assert.deepEqual(readdirSync(join(dir, 'sessions', 's1')), ['LOCK'], `${kind}: no segment without the lock`)
    v.check(kind)
  }
})

test('sessions or sessions/<id> as a symlink: E_PATH_OUTSIDE_ROOT and nothing created outside', async (t) => {
  const v = victim(t)
  for (const where of ['sessions', 'sessions/s1']) {
    const dir = tempDir(t)
    const target = tempDir(t)
    if (where !== 'sessions') mkdirSync(join(dir, 'sessions'))
    symlinkSync(v.dir, join(dir, where))
    const results = await probe([
      ['open', dir, { sessionId: 's1' }],
      ['openAsync', dir, { sessionId: 's1' }],
      ['readWal', dir],
      ['verifyWal', dir],
      ['consolidateWal', dir, target],
    ])
    const [open, openAsync, read, verify, consolidate] = results
    for (const result of [open, openAsync, read, consolidate]) assert.equal(result.code, 'E_PATH_OUTSIDE_ROOT', `${where}: ${JSON.stringify(results)}`)
    assert.deepEqual(verify.value.codes, ['E_PATH_OUTSIDE_ROOT'], where)
    v.check(where)
  }
})

test('consolidation.json, conflicts.jsonl, dead-letter.jsonl and consolidate.lock must be regular files: refused before any change', async (t) => {
  const v = victim(t)
  for (const kind of KINDS) {
    const plan = []
    const targets = []
    for (const name of ['consolidation.json', 'conflicts.jsonl', 'dead-letter.jsonl', 'consolidate.lock']) {
      const dir = tempDir(t)
      const target = tempDir(t)
      const wal = Wal.open(dir, { sessionId: 's' })
      wal.appendSync({ op: 'write', path: 'a.md', data: 'a' })
      wal.close()
      plant(kind, join(dir, name), v)
      plan.push(['consolidateWal', dir, target])
      targets.push([name, target])
    }
    const results = await probe(plan)
    for (const [i, [name, target]] of targets.entries()) {
      assert.equal(results[i].code, 'E_NOT_REGULAR_FILE', `${name} as ${kind}: ${JSON.stringify(results[i])}`)
      assert.deepEqual(readdirSync(target), [], `${name} as ${kind}: nothing applied`)
    }
    v.check(kind)
  }
})

test('consolidation target: what cannot be written safely becomes a dead letter, the rest is applied, nothing outside changes', async (t) => {
  const v = victim(t)
  const dir = tempDir(t)
  const target = tempDir(t)
  const hostile = {
    'link-file.md': 'symlink to a file',
    'link-dir': 'symlink to a directory',
    'dangling.md': 'dangling symlink',
    'loop.md': 'symlink loop',
    'fifo.md': 'fifo',
    'a-dir': 'directory',
  }
  for (const [name, kind] of Object.entries(hostile)) plant(kind, join(target, name), v)
  writeFileSync(join(target, 'a-file'), 'plain')
  const wal = Wal.open(dir, { sessionId: 's' })
  const paths = ['link-file.md', 'link-dir/x.md', 'dangling.md', 'loop.md', 'fifo.md', 'a-dir', 'a-file/x.md', 'fine/ok.md']
  for (const path of paths) wal.appendSync({ op: 'write', path, data: `data for ${path}` })
  wal.appendSync({ op: 'delete', path: 'link-dir/gone.md' })
  wal.close()
  const [first, second] = await probe([
    ['consolidateWal', dir, target],
    ['consolidateWal', dir, target],
  ])
  assert.equal(first.value.applied, 1, JSON.stringify(first))
  assert.deepEqual(
    Object.fromEntries(first.value.deadLetters),
    {
      'a-dir': 'E_NOT_REGULAR_FILE',
      'a-file/x.md': 'E_IO',
      'dangling.md': 'E_NOT_REGULAR_FILE',
      'fifo.md': 'E_NOT_REGULAR_FILE',
      'link-dir/gone.md': 'E_PATH_OUTSIDE_ROOT',
      'link-dir/x.md': 'E_PATH_OUTSIDE_ROOT',
      'link-file.md': 'E_NOT_REGULAR_FILE',
      'loop.md': 'E_NOT_REGULAR_FILE',
    },
  )
  assert.deepEqual(second, { ok: true, value: { applied: 0, deadLetters: [] } }, 'handled records are not retried')
  assert.equal(readFileSync(join(target, 'fine', 'ok.md'), 'utf8'), 'data for fine/ok.md')
  assert.equal(readFileSync(join(target, 'a-file'), 'utf8'), 'plain')
  const letters = readFileSync(join(dir, 'dead-letter.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l))
  assert.equal(letters.length, 8)
  const linkFile = letters.find((l) => l.path === 'link-file.md')
  assert.equal(Buffer.from(linkFile.dataHex, 'hex').toString(), 'data for link-file.md', 'the record is kept whole')
  v.check('target')
})

test('the WAL directory or the target directory itself hostile: coded errors, nothing outside', async (t) => {
  const v = victim(t)
  const base = tempDir(t)
  const ok = tempDir(t)
  const wal = Wal.open(ok, { sessionId: 's' })
  wal.appendSync({ op: 'write', path: 'a.md', data: 'a' })
  wal.close()
  const cases = {
    'dangling symlink': join(base, 'dangling'),
    'symlink loop': join(base, 'loop'),
    fifo: join(base, 'fifo'),
    'regular file': join(base, 'file'),
  }
  plant('dangling symlink', cases['dangling symlink'], v)
  plant('symlink loop', cases['symlink loop'], v)
  plant('fifo', cases.fifo, v)
  writeFileSync(cases['regular file'], 'not a directory')
  for (const [kind, path] of Object.entries(cases)) {
    const [open, read, verify, consolidateFrom, consolidateInto] = await probe([
      ['open', path, { sessionId: 's' }],
      ['readWal', path],
      ['verifyWal', path],
      ['consolidateWal', path, tempDir(t)],
      ['consolidateWal', ok, path],
    ])
    const osError = { 'dangling symlink': 'EEXIST', 'symlink loop': 'ELOOP', fifo: 'ENOTDIR', 'regular file': 'ENOTDIR' }[kind]
    assert.deepEqual([open.code, open.osError], ['E_IO', osError], `${kind} open`)
    assert.deepEqual([consolidateInto.code, consolidateInto.osError], ['E_IO', osError], `${kind} as target`)
    if (kind === 'dangling symlink') {
      // Missing, as far as reading goes (documented: a missing WAL directory has no records).
      assert.deepEqual(read, { ok: true, value: [] })
      assert.equal(verify.code, 'E_INVALID_ARGUMENT')
      assert.equal(consolidateFrom.code, 'E_INVALID_ARGUMENT')
    } else if (kind === 'symlink loop') {
      for (const r of [read, verify, consolidateFrom]) assert.deepEqual([r.code, r.osError], ['E_IO', 'ELOOP'], kind)
    } else {
      assert.deepEqual([read.code, read.osError], ['E_IO', 'ENOTDIR'], kind)
      assert.equal(verify.code, 'E_INVALID_ARGUMENT', kind)
      assert.equal(consolidateFrom.code, 'E_INVALID_ARGUMENT', kind)
    }
  }
  assert.equal(readFileSync(cases['regular file'], 'utf8'), 'not a directory')
  v.check('roots')
})

test('writeFileAtomic onto a symlink, FIFO or directory is refused; missing or file parents are E_IO', async (t) => {
  const v = victim(t)
  const dir = tempDir(t)
  const plan = []
  for (const [i, kind] of KINDS.entries()) {
    plant(kind, join(dir, `t${i}`), v)
    plan.push(['writeFileAtomic', join(dir, `t${i}`), 'new'], ['writeFileAtomicSync', join(dir, `t${i}`), 'new'])
  }
  writeFileSync(join(dir, 'file'), 'x')
  plan.push(['writeFileAtomic', join(dir, 'nope', 'x'), 'new'], ['writeFileAtomicSync', join(dir, 'file', 'x'), 'new'])
  const results = await probe(plan)
  for (const [i, kind] of KINDS.entries()) {
    for (const result of results.slice(2 * i, 2 * i + 2)) assert.equal(result.code, 'E_NOT_REGULAR_FILE', `${kind}: ${JSON.stringify(result)}`)
  }
  assert.deepEqual(results.slice(-2).map((r) => [r.code, r.osError]), [['E_IO', 'ENOENT'], ['E_IO', 'ENOTDIR']])
  assert.deepEqual(readdirSync(dir).sort(), ['file', 't0', 't1', 't2', 't3', 't4', 't5'], 'no temp file left behind')
  v.check('writeFileAtomic')
})

// Permission bits do not bind root: when the tests run as root, these cases run in a child
// process as `nobody` (uid 65534), over a tree handed to that user.
const NOBODY = 65534
const asUser = process.getuid?.() === 0 ? NOBODY : undefined
function handOver(...paths) {
  if (asUser === undefined) return
  const walk = (p) => {
    chownSync(p, NOBODY, NOBODY)
    if (statSync(p).isDirectory()) for (const e of readdirSync(p)) walk(join(p, e))
  }
  paths.forEach(walk)
}

test('read-only files and directories: coded E_IO EACCES, nothing lost, and it works once writable again', async (t) => {
  const v = victim(t)
  const dir = tempDir(t)
  const target = tempDir(t)
  const files = tempDir(t)
  const a = Wal.open(dir, { sessionId: 'a' })
  const b = Wal.open(dir, { sessionId: 'b' })
  a.appendSync({ op: 'write', path: 'shared.md', data: 'from a' })
  await nextMillisecond()
  b.appendSync({ op: 'write', path: 'shared.md', data: 'from b' })
  a.close()
  b.close()
  writeFileSync(join(files, 'readonly.txt'), 'old')
  mkdirSync(join(files, 'locked'))
  handOver(dir, target, files)
  chmodSync(join(dir, 'sessions', 'a', SEGMENT_1), 0o444)
  chmodSync(join(dir, 'sessions'), 0o555)
  chmodSync(target, 0o555)
  chmodSync(join(files, 'readonly.txt'), 0o444)
  chmodSync(join(files, 'locked'), 0o555)
  const [openA, openNew, read, verify, consolidate, intoLocked, ontoReadonly] = await probe(
    [
      ['open', dir, { sessionId: 'a' }],
      ['open', dir, { sessionId: 'new' }],
      ['readWal', dir],
      ['verifyWal', dir],
      ['consolidateWal', dir, target],
      ['writeFileAtomicSync', join(files, 'locked', 'x'), 'new'],
      ['writeFileAtomic', join(files, 'readonly.txt'), 'new'],
    ],
    { asUser },
  )
  assert.deepEqual([openA.code, openA.osError], ['E_IO', 'EACCES'], 'a read-only segment is not repaired or appended to')
  assert.deepEqual([openNew.code, openNew.osError], ['E_IO', 'EACCES'])
  assert.deepEqual(read.value, ['a#1', 'b#1'], 'reading needs no write permission')
  assert.deepEqual(verify.value, { ok: true, records: 2, codes: [] })
  assert.deepEqual([consolidate.code, consolidate.osError], ['E_IO', 'EACCES'])
  assert.deepEqual([intoLocked.code, intoLocked.osError], ['E_IO', 'EACCES'])
  // Documented: an atomic write replaces the file by rename, which needs the directory's write
  // permission, not the file's (as `mv` does).
  assert.deepEqual(ontoReadonly, { ok: true, value: 'written' })
  assert.equal(readFileSync(join(files, 'readonly.txt'), 'utf8'), 'new')

  // A read-only conflict log fails the run (the records stay unapplied), then it goes through.
  chmodSync(target, 0o755)
  writeFileSync(join(dir, 'conflicts.jsonl'), '')
  handOver(join(dir, 'conflicts.jsonl'))
  chmodSync(join(dir, 'conflicts.jsonl'), 0o444)
  const [blocked] = await probe([['consolidateWal', dir, target]], { asUser })
  assert.deepEqual([blocked.code, blocked.osError], ['E_IO', 'EACCES'])
  chmodSync(join(dir, 'conflicts.jsonl'), 0o644)
  const [done] = await probe([['consolidateWal', dir, target]], { asUser })
  assert.deepEqual(done, { ok: true, value: { applied: 1, deadLetters: [] } })
  assert.equal(readFileSync(join(target, 'shared.md'), 'utf8'), 'from b')
  assert.equal(readFileSync(join(dir, 'conflicts.jsonl'), 'utf8').trim().split('\n').length, 1)
  v.check('read-only')
})

test('a segment that grows while it is read: every read returns or is E_TOO_LARGE past 256 MiB, never hangs', async (t) => {
  const dir = tempDir(t)
  const wal = Wal.open(dir, { sessionId: 's' })
  wal.appendSync({ op: 'write', path: 'a.md', data: 'kept' })
  wal.close()
  const segment = join(dir, 'sessions', 's', SEGMENT_1)
  // Grows the file (sparse: zeros, no disk space) past the limit in steps while the probe reads.
  const grower = startChild(process.execPath, [
    '-e',
    `const fs = require('node:fs')
     const fd = fs.openSync(${JSON.stringify(segment)}, 'r+')
     let size = fs.fstatSync(fd).size
     const step = () => {
       size += 16 * 1024 * 1024
       fs.ftruncateSync(fd, size)
       if (size > ${MAX_SEGMENT_BYTES + 32 * 1024 * 1024}) return console.log('DONE')
       setTimeout(step, 100)
     }
     step()`,
  ])
  const [verifies, reads] = await probe([
    ['repeat', 12, 'verifyWal', dir],
    ['repeat', 12, 'readWal', dir],
  ])
  await grower.exited
  assert.deepEqual(grower.lines, ['DONE'], grower.stderr)
  for (const outcome of verifies.value) {
    assert.ok(
      (outcome.ok && outcome.value.records === 1 && outcome.value.codes.length === 0) || outcome.value?.codes?.[0] === 'E_TOO_LARGE',
      JSON.stringify(outcome),
    )
  }
  for (const outcome of reads.value) {
    assert.ok((outcome.ok && outcome.value.join() === 's#1') || outcome.code === 'E_TOO_LARGE', JSON.stringify(outcome))
  }
  // Past the limit now, for good: every entry point says so, and nothing was cut.
  const [open, read, verify] = await probe([
    ['open', dir, { sessionId: 's' }],
    ['readWal', dir],
    ['verifyWal', dir],
  ])
  assert.equal(open.code, 'E_TOO_LARGE')
  assert.equal(read.code, 'E_TOO_LARGE')
  assert.deepEqual(verify.value.codes, ['E_TOO_LARGE'])
  assert.ok(statSync(segment).size > MAX_SEGMENT_BYTES)
})
