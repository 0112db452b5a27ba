// The `loa` command under bad input: every command and subcommand with bad arguments, missing
// files, directories where files belong (and files where directories belong), symlinks (dangling,
// loops, to FIFOs), FIFOs, sockets and devices. Each failure must be exactly one line
// `loa: E_CODE: message` on stderr, with exit status 2, no stack trace, no caller data; and no
// case may hang (a FIFO opened for reading blocks until a writer comes: the timeout fails it).
import test from 'node:test'
import assert from 'node:assert/strict'
import { spawn, execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, symlinkSync, writeFileSync, existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { core, root, tempDir } from './helpers.mjs'

const LOA = join(root, 'bin', 'loa')
// A guard against a hang, not a speed limit: on a loaded machine one run can take seconds.
const HANG_MS = 120_000

// Planted values, built at run time: no token-shaped literal sits in the repository.
const fakeToken = ['sk', 'live', randomBytes(12).toString('hex')].join('_')
const email = `dana.${randomBytes(3).toString('hex')}@example.com`
const SECRET_TEXT = `Mail ${email} the deploy token ${fakeToken} tonight`

/** Runs `loa args`; a run that outlives HANG_MS is killed and reported as hung. */
function loa(args, { input, env, cwd } = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [LOA, ...args], {
      cwd,
      env: { ...process.env, LOA_AUDIT_HMAC_KEY: '', LOA_SIGNING_KEY: '', ...env },
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (c) => (stdout += c))
    child.stderr.setEncoding('utf8').on('data', (c) => (stderr += c))
    if (input !== undefined) {
      // A command that refuses its input stops reading it: the rest of the write gets EPIPE.
      child.stdin.on('error', () => {})
      child.stdin.end(input)
    }
    let hung = false
    const timer = setTimeout(() => {
      hung = true
      child.kill('SIGKILL')
    }, HANG_MS)
    child.on('close', (status, signal) => {
      clearTimeout(timer)
      resolve({ status, signal, stdout, stderr, hung })
    })
  })
}

const show = (args) => `loa ${args.map((a) => JSON.stringify(a)).join(' ')}`

/** The one failure line: its code, exit status 2, nothing else on stderr, no caller data. */
function assertFails(r, args, code, detail) {
  const label = show(args)
  assert.ok(!r.hung, `${label} hung`)
  assert.equal(r.status, 2, `${label}: status ${r.status}; stderr ${JSON.stringify(r.stderr)}`)
  assert.match(r.stderr, /^loa: E_[A-Z_]+: [^\n]+\n$/, `${label}: not one error line: ${JSON.stringify(r.stderr)}`)
  assert.equal(r.stderr.slice(5, r.stderr.indexOf(':', 5)), code, `${label}: ${r.stderr}`)
  assert.doesNotMatch(r.stderr, /\n\s+at |node:internal|\.js:\d+/, `${label}: a stack trace`)
  for (const planted of [email, fakeToken, 'deploy token']) {
    assert.ok(!r.stderr.includes(planted) && !r.stdout.includes(planted), `${label}: caller data in the output`)
  }
  if (detail) assert.match(r.stderr, detail, label)
}

/** Runs the cases a few at a time (each starts a Node process). */
async function each(cases, check) {
  for (let i = 0; i < cases.length; i += 4) {
    const batch = cases.slice(i, i + 4)
    const results = await Promise.all(batch.map((c) => loa(c.args, c)))
    batch.forEach((c, j) => check(c, results[j]))
  }
}

/** A fixture of every kind of thing a path can name. */
function fixture(t) {
  const fx = tempDir(t, 'loa-cli-')
  const p = (name) => join(fx, name)
  writeFileSync(p('file'), SECRET_TEXT)
  mkdirSync(p('dir'))
  execFileSync('mkfifo', [p('fifo')])
  symlinkSync(p('none'), p('dangling'))
  symlinkSync(p('loop2'), p('loop1'))
  symlinkSync(p('loop1'), p('loop2'))
  symlinkSync(p('fifo'), p('link-fifo'))
  symlinkSync(p('dir'), p('link-dir'))
  symlinkSync(p('file'), p('link-file'))
  return {
    fx,
    p,
    paths: {
      missing: p('missing'),
      file: p('file'),
      dir: p('dir'),
      fifo: p('fifo'),
      sock: p('sock'),
      dangling: p('dangling'),
      loop: p('loop1'),
      'link-fifo': p('link-fifo'),
      'link-dir': p('link-dir'),
      'under-file': join(p('file'), 'x'),
      device: '/dev/null',
    },
  }
}

/** A Unix socket where a file or directory belongs, listening for the duration of the test. */
async function socketAt(t, path) {
  const server = createServer()
  await new Promise((resolve) => server.listen(path, resolve))
  t.after(() => server.close())
}

// What each kind of bad path gets where a directory belongs, and where a file belongs.
const WHERE_A_DIRECTORY_BELONGS = {
  missing: ['E_IO', /ENOENT/],
  file: ['E_IO', /ENOTDIR/],
  fifo: ['E_IO', /ENOTDIR/],
  sock: ['E_IO', /ENOTDIR/],
  dangling: ['E_IO', /ENOENT/],
  loop: ['E_IO', /ELOOP/],
  'link-fifo': ['E_IO', /ENOTDIR/],
  'under-file': ['E_IO', /ENOTDIR/],
  device: ['E_IO', /ENOTDIR/],
}
const WHERE_A_FILE_BELONGS = {
  missing: ['E_IO', /ENOENT/],
  dir: ['E_NOT_REGULAR_FILE', /directory/],
  'link-dir': ['E_NOT_REGULAR_FILE', /directory/],
  fifo: ['E_NOT_REGULAR_FILE', /fifo/],
  'link-fifo': ['E_NOT_REGULAR_FILE', /fifo/],
  sock: ['E_NOT_REGULAR_FILE', /socket/],
  dangling: ['E_IO', /ENOENT/],
  loop: ['E_IO', /ELOOP/],
  'under-file': ['E_IO', /ENOTDIR/],
  device: ['E_NOT_REGULAR_FILE', /character device/],
}

test('every command that takes a directory refuses each kind of bad path with one coded line', { timeout: 600_000 }, async (t) => {
  const { paths, p } = fixture(t)
  await socketAt(t, paths.sock)
  const dir = p('dir')
  const commands = [
    { make: (x) => ['wal', 'dump', x] },
    { make: (x) => ['wal', 'verify', x] },
    { make: (x) => ['wal', 'stats', x, '--json'] },
    { make: (x) => ['audit', 'verify', x] },
    { make: (x) => ['manifest', 'create', x] },
    { make: (x) => ['manifest', 'verify', x] },
    { make: (x) => ['manifest', 'create', dir, '--out', join(x, 'manifest.json')], skip: ['missing', 'dangling'] },
    { make: (x) => ['manifest', 'verify', dir, '--keys', x], skip: ['missing'] },
    { make: (x) => ['keys', 'list', '--keys', x], skip: ['missing'] }, // a ring not made yet lists empty
    { make: (x) => ['keys', 'generate', '--keys', x], skip: ['missing'] }, // generate makes it
    { make: (x) => ['capture', '--workspace', x, '--content', SECRET_TEXT] },
    { make: (x) => ['context', '--workspace', x] },
    { make: (x) => ['consolidate', '--workspace', x, '--json'] },
    { make: (x) => ['dead-letter', 'list', '--workspace', x] },
    { make: (x) => ['dead-letter', 'replay', '--workspace', x, '--json'] },
    { make: (x) => ['demo', '--workspace', x], skip: ['missing'] }, // a missing one is made
    { make: (x) => ['plugin', 'install', x] },
    { make: (x) => ['notes', 'show', '--workspace', x] },
    { make: (x) => ['notes', 'edit', '--workspace', x, '--question', 'q?'] },
    { make: (x) => ['recall', '--workspace', x] },
    { make: (x) => ['grounding-check', '--workspace', x] },
    { make: (x) => ['checkpoint', '--workspace', x, '--json'] },
    { make: (x) => ['beads', 'list', '--workspace', x] },
    { make: (x) => ['resolve', '${PROJECT_ROOT}/a.ts:1', '--workspace', x] },
  ]
  const cases = []
  for (const { make, skip = [] } of commands) {
    for (const [kind, [code, detail]] of Object.entries(WHERE_A_DIRECTORY_BELONGS)) {
      if (!skip.includes(kind)) cases.push({ args: make(paths[kind]), code, detail, kind })
    }
  }
  await each(cases, (c, r) => assertFails(r, c.args, c.code, c.detail))
  assert.ok(!existsSync(paths.missing), 'a failing command created the missing path')
  assert.equal(readFileSync(paths.file, 'utf8'), SECRET_TEXT, 'a failing command wrote through a file')
})

test('every command that takes a file refuses each kind of bad path with one coded line, and never hangs on a FIFO', { timeout: 600_000 }, async (t) => {
  const { paths, p } = fixture(t)
  await socketAt(t, paths.sock)
  const dir = p('dir')
  const commands = [
    { make: (x) => ['redact', x] },
    { make: (x) => ['redact', x, '--check'] },
    { make: (x) => ['audit', 'verify', dir, '--hmac-key-file', x] },
    { make: (x) => ['manifest', 'sign', x] },
    { make: (x) => ['manifest', 'verify', dir, '--manifest', x] },
    // A missing --out is created; anything else there but a regular file is refused.
    { make: (x) => ['manifest', 'create', dir, '--out', x], skip: ['missing'], dangling: ['E_NOT_REGULAR_FILE', /symlink/] },
  ]
  const cases = []
  for (const { make, skip = [], ...overrides } of commands) {
    for (const [kind, expected] of Object.entries(WHERE_A_FILE_BELONGS)) {
      if (skip.includes(kind)) continue
      const [code, detail] = overrides[kind] ?? expected
      cases.push({ args: make(paths[kind]), code, detail, kind })
    }
  }
  await each(cases, (c, r) => assertFails(r, c.args, c.code, c.detail))
  assert.equal(readFileSync(paths.file, 'utf8'), SECRET_TEXT)
})

test('bad command lines are E_USAGE, one line, without repeating what was typed', { timeout: 300_000 }, async (t) => {
  const { p } = fixture(t)
  const [dir, file] = [p('dir'), p('file')]
  const usage = [
    ['nope'],
    [fakeToken],
    ['--bogus'],
    [`--${fakeToken}`],
    ['--content'],
    ['wal'],
    ['wal', 'frob', dir],
    ['wal', 'dump'],
    ['wal', 'dump', dir, 'extra'],
    ['wal', 'verify', dir, '--data'],
    ['wal', 'stats', dir, '--session', 's'],
    ['wal', 'dump', dir, '--budget', '3'],
    ['wal', 'dump', dir, '--session'],
    ['wal', 'dump', dir, '--json=yes'],
    ['capture', 'extra'],
    ['capture', '--content', SECRET_TEXT, '--confidence', 'high'],
    ['capture', '--content', SECRET_TEXT, '--session', ''],
    ['capture', '--content', SECRET_TEXT, '--workspace', ''],
    ['capture', '--content', SECRET_TEXT, '--out', 'x'],
    ['context', '--budget', '0'],
    ['context', '--budget', 'lots'],
    ['context', 'extra'],
    ['consolidate', 'extra'],
    ['consolidate', '--budget', '3'],
    ['dead-letter'],
    ['dead-letter', 'frob'],
    ['dead-letter', 'list', 'extra'],
    ['dead-letter', 'replay', '--budget', '3'],
    ['manifest'],
    ['manifest', 'create'],
    ['manifest', 'frob', dir],
    ['manifest', 'sign', file, '--out', 'x'],
    ['manifest', 'verify', dir, '--progress'],
    ['manifest', 'create', dir, '--out', ''],
    ['manifest', 'create', dir, 'extra'],
    ['keys'],
    ['keys', 'frob'],
    ['keys', 'revoke'],
    ['keys', 'revoke', 'abc'],
    ['keys', 'list', '--reason', 'because'],
    ['keys', 'list', 'extra'],
    ['keys', 'list', '--keys', ''],
    ['audit'],
    ['audit', 'verify'],
    ['audit', 'frob', dir],
    ['audit', 'verify', dir, 'extra'],
    ['audit', 'verify', dir, '--hmac-key-file', ''],
    ['redact', file, 'extra'],
    ['redact', file, '--budget', '3'],
    ['demo', 'extra'],
    ['demo', '--json'],
    ['demo', '--workspace', ''],
    ['plugin'],
    ['plugin', 'frob'],
    ['plugin', 'install'],
    ['plugin', 'install', dir, 'extra'],
    ['notes'],
    ['notes', 'frob'],
    ['notes', 'edit', '--workspace', dir],
    ['notes', 'edit', '--workspace', dir, '--context', 'novalue'],
    ['notes', 'show', '--level', '1'],
    ['recall', '--level', '4'],
    ['recall', '--level', '2', '--workspace', dir],
    ['recall', 'words', '--workspace', dir],
    ['recall', '--tokens', '0'],
    ['grounding-check', 'extra'],
    ['grounding-check', '--agent', ''],
    ['checkpoint', 'extra'],
    ['checkpoint', '--input', ''],
    ['beads'],
    ['beads', 'frob'],
    ['beads', 'add', '--workspace', dir],
    ['resolve'],
    ['resolve', 'a', 'b'],
  ]
  await each(usage.map((args) => ({ args })), (c, r) => assertFails(r, c.args, 'E_USAGE', /see loa --help/))
  const help = await loa([])
  assert.equal(help.status, 0)
  for (const line of ['Exit status:', 'E_USAGE', 'E_IO', 'E_NOT_REGULAR_FILE', 'loa dead-letter list|replay', 'loa plugin install', 'loa checkpoint', 'loa grounding-check', 'loa recall', 'loa notes show', 'loa beads list', 'loa resolve']) {
    assert.ok(help.stdout.includes(line), `--help lacks ${line}`)
  }
})

test('inputs that are wrong in content get their code; secrets and captured text are never repeated', { timeout: 300_000 }, async (t) => {
  const { p, fx } = fixture(t)
  const dir = p('dir')
  const cases = [
    // The HMAC key from the environment must be hex; the value is not echoed.
    { args: ['audit', 'verify', dir], env: { LOA_AUDIT_HMAC_KEY: fakeToken }, code: 'E_INVALID_ARGUMENT' },
    // Captured text larger than the store takes, or not UTF-8, on standard input.
    { args: ['capture', '--workspace', dir], input: Buffer.alloc(1024 * 1024 + 1, 0x61), code: 'E_TOO_LARGE' },
    { args: ['capture', '--workspace', dir], input: Buffer.from([0x61, 0xff, 0xfe, 0x62]), code: 'E_INVALID_ARGUMENT' },
    // The library's own refusals come through with their codes.
    { args: ['capture', '--workspace', dir, '--content', SECRET_TEXT, '--type', fakeToken], code: 'E_INVALID_ARGUMENT' },
    { args: ['capture', '--workspace', dir, '--content', SECRET_TEXT, '--confidence', '2'], code: 'E_INVALID_ARGUMENT' },
    { args: ['capture', '--workspace', dir, '--content', SECRET_TEXT, '--session', `../${fakeToken}`], code: 'E_INVALID_ARGUMENT' },
    // A path with a newline in it is still named on one line.
    { args: ['wal', 'dump', join(fx, 'new\nline')], code: 'E_IO', detail: /new\\u000aline/ },
  ]
  await each(cases, (c, r) => assertFails(r, c.args, c.code, c.detail))
})

test('state the library refuses: coded, one line, nothing followed', { timeout: 300_000 }, async (t) => {
  const ws = tempDir(t, 'loa-cli-ws-')
  const outside = tempDir(t, 'loa-cli-outside-')
  mkdirSync(join(ws, '.loa'))
  execFileSync('mkfifo', [join(ws, '.loa', 'dead-letter.jsonl')])
  for (const action of ['list', 'replay']) {
    const args = ['dead-letter', action, '--workspace', ws]
    assertFails(await loa(args), args, 'E_NOT_REGULAR_FILE', /fifo/)
  }
  const linked = tempDir(t, 'loa-cli-ws-')
  symlinkSync(outside, join(linked, '.loa'))
  for (const action of ['list', 'replay']) {
    const args = ['dead-letter', action, '--workspace', linked]
    assertFails(await loa(args), args, 'E_PATH_OUTSIDE_ROOT')
  }
})

test('the commands above work on good input (the failures are not all there is)', { timeout: 300_000 }, async (t) => {
  const ws = tempDir(t, 'loa-cli-ws-')
  const run = async (args, status = 0, options) => {
    const r = await loa(args, options)
    assert.equal(r.status, status, `${show(args)}: ${r.stderr}`)
    assert.equal(r.stderr.includes('loa: E_'), false, `${show(args)}: ${r.stderr}`)
    return r
  }
  await run(['capture', '--workspace', ws, '--type', 'decision', '--confidence', '0.9', '--content', `We decided to mail the report to ${email} on Fridays`])
  await run(['capture', '--workspace', ws], 0, { input: 'We always deploy on Fridays after the standup meeting' })
  await run(['consolidate', '--workspace', ws])
  const context = await run(['context', '--workspace', ws, '--budget', '300'])
  assert.match(context.stdout, /Fridays/)
  await run(['wal', 'stats', join(ws, '.loa', 'wal')])
  await run(['wal', 'verify', join(ws, '.loa', 'wal'), '--json'])
  await run(['dead-letter', 'list', '--workspace', ws])
  await run(['dead-letter', 'replay', '--workspace', ws])
  await run(['keys', 'list', '--keys', join(ws, 'no-ring-yet')])
  assert.ok(!existsSync(join(ws, 'no-ring-yet')), 'listing made the key ring')
  const redacted = await run(['redact', '-'], 0, { input: SECRET_TEXT })
  assert.ok(!redacted.stdout.includes(email))
  await run(['redact', '-', '--check'], 1, { input: SECRET_TEXT })
})

test('a reader that closes the pipe early gets no error and no stack trace', { timeout: 120_000 }, async (t) => {
  const ws = tempDir(t, 'loa-cli-ws-')
  const wal = core.Wal.open(join(ws, 'wal'), { sessionId: 's' })
  for (let i = 0; i < 3000; i++) wal.appendSync({ op: 'note', data: `record ${i} `.repeat(20) })
  wal.close()
  const child = spawn(process.execPath, [LOA, 'wal', 'dump', join(ws, 'wal'), '--data'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (c) => (stderr += c))
  child.stdout.once('data', () => child.stdout.destroy())
  const status = await new Promise((resolve) => child.on('close', (code) => resolve(code)))
  assert.equal(stderr, '')
  assert.equal(status, 0)
})

test("key commands honour the workspace's signing.keys_dir (.loa.config.yaml)", async (t) => {
  const ws = tempDir(t)
  writeFileSync(join(ws, '.loa.config.yaml'), 'signing:\n  keys_dir: secrets/ring\n')
  const generated = await loa(['keys', 'generate', '--workspace', ws, '--json'])
  assert.equal(generated.status, 0, generated.stderr)
  const key = JSON.parse(generated.stdout)
  assert.ok(existsSync(join(ws, 'secrets', 'ring', `${key.keyId}.key`)), 'the key lives in the configured directory')
  assert.ok(!existsSync(join(ws, '.loa', 'keys')), 'not in the default one')
  // The same workspace signs and verifies a manifest with that ring, from another directory.
  mkdirSync(join(ws, 'state'))
  writeFileSync(join(ws, 'state', 'NOTES.md'), '# notes\n')
  assert.equal((await loa(['manifest', 'create', join(ws, 'state')])).status, 0)
  const signed = await loa(['manifest', 'sign', join(ws, 'state', 'manifest.json'), '--workspace', ws])
  assert.equal(signed.status, 0, signed.stderr)
  const verified = await loa(['manifest', 'verify', join(ws, 'state'), '--workspace', ws, '--json'], { cwd: tempDir(t) })
  assert.equal(verified.status, 0, verified.stderr)
  assert.equal(JSON.parse(verified.stdout).signedBy, key.keyId)
  // Without --workspace the current directory is the workspace: its default ring has no key.
  const elsewhere = await loa(['manifest', 'verify', join(ws, 'state')], { cwd: tempDir(t) })
  assert.equal(elsewhere.status, 1)
})
