// Shared test helpers: real temp directories, real child processes.
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { execFileSync, spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

export const require = createRequire(import.meta.url)
export const core = require('../index.js')
export const root = join(dirname(fileURLToPath(import.meta.url)), '..')
export const fixture = (name) => join(root, '__test__', 'fixtures', name)

/** A dev dependency used as a reference (js-tiktoken), with a hint when it is missing. */
export function requireDev(name) {
  try {
    return require(name)
  } catch (err) {
    throw new Error(`dev dependency ${name} is not installed (run npm install): ${err.message}`)
  }
}

/** A fresh directory, removed after the test unless LOA_KEEP_TMP is set. */
export function tempDir(t, prefix = 'loa-test-') {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  if (!process.env.LOA_KEEP_TMP) t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** The data a fixture writer appends as its n-th record: deterministic, varied in size. */
export function recordData(writer, n) {
  const unit = `w${writer}-n${n}|`
  return Buffer.from(unit.repeat(1 + ((n * 37) % 60)))
}

/**
 * Spawns a child process and collects its stdout lines as they arrive. `lines` only holds
 * complete lines, so a child killed mid-write never contributes half a line.
 */
export function startChild(command, args, options = {}) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options })
  // `changed` is called after every new line and at exit: waiters react to events, never poll.
  const state = { child, lines: [], stderr: '', exit: null, changed: new Set() }
  const notify = () => state.changed.forEach((f) => f())
  let partial = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk) => {
    const parts = (partial + chunk).split('\n')
    partial = parts.pop()
    state.lines.push(...parts)
    if (parts.length) notify()
  })
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (chunk) => (state.stderr += chunk))
  state.exited = new Promise((resolve) =>
    child.on('close', (code, signal) => {
      resolve((state.exit = { code, signal }))
      notify()
    }),
  )
  return state
}

/**
 * A last-resort guard against a hang, never a pass condition: on a loaded machine (both cores
 * busy, `nice -n 19`) starting Node and loading the addon alone can take many seconds.
 */
export const WATCHDOG_MS = 600_000

/**
 * Resolves as soon as `predicate(lines)` holds (checked on each line the child prints); rejects
 * when the child exits first, or after `timeoutMs` (a watchdog against a hang).
 */
export function waitForLine(state, predicate, timeoutMs = WATCHDOG_MS) {
  return new Promise((resolve, reject) => {
    const check = () => {
      let fail = null
      if (predicate(state.lines)) fail = false
      else if (state.exit) fail = new Error(`child exited (${JSON.stringify(state.exit)}) before expected output; stderr: ${state.stderr}`)
      if (fail === null) return
      state.changed.delete(check)
      clearTimeout(timer)
      if (fail) reject(fail)
      else resolve()
    }
    const timer = setTimeout(() => {
      state.changed.delete(check)
      reject(new Error(`no expected child output within ${timeoutMs} ms; stderr: ${state.stderr}`))
    }, timeoutMs)
    state.changed.add(check)
    check()
  })
}

export function runCli(args, options = {}) {
  const state = startChild(process.execPath, [join(root, 'bin', 'loa'), ...args], options)
  return state.exited.then(() => ({ code: state.exit.code, stdout: state.lines.join('\n'), stderr: state.stderr }))
}

/**
 * The redaction engine is built in parallel; until it lands, src/redact is a stub that finds
 * nothing. Tests that need real redaction are written to be correct with the real engine and
 * skipped while the stub is in place: `test(name, needsRealRedactor, fn)`.
 */
export const redactorIsStub = typeof core.redact !== 'function' || core.redact('a@b.co').findings.length === 0
export const needsRealRedactor = { skip: redactorIsStub && 'src/redact is still the stub (no findings for a@b.co)' }

/** xorshift32: deterministic generated inputs. `rng(seed)(n)` is an integer in [0, n). */
export function rng(seed) {
  let x = seed >>> 0 || 1
  return (n) => {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    return x % n
  }
}

/**
 * `git` with a throwaway identity, `main` as the default branch and no user or system
 * configuration (a fresh clone's tests must not depend on `commit.gpgsign` or hooks set up
 * there), never a shell.
 */
export function git(cwd, ...args) {
  const env = { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' }
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'init.defaultBranch=main', ...args], { cwd, env, stdio: 'pipe', timeout: WATCHDOG_MS })
}

/** Signs every file of `dir` but the manifest itself into `dir/manifest.json`. */
export function signDir(dir, ring) {
  const m = core.createManifest(dir, { exclude: ['./manifest.json'] })
  core.writeManifest(join(dir, 'manifest.json'), core.signManifest(m, ring))
}

/**
 * A workspace whose grimoire (`files`: name -> text) is signed by a key kept outside it, with
 * the two restore sources recovery reads: a mount copy and a real bare git remote (branch
 * `main`, the grimoire at `grimoires/loa`).
 */
export function signedWorkspace(t, prefix, files) {
  const dir = tempDir(t, prefix)
  const ring = core.KeyRing.open(join(dir, 'pinned-keys'))
  const key = ring.generate()
  const ws = join(dir, 'ws')
  const grimoire = join(ws, 'grimoires', 'loa')
  mkdirSync(grimoire, { recursive: true })
  for (const [name, text] of Object.entries(files)) writeFileSync(join(grimoire, name), text)
  signDir(grimoire, ring)
  const mount = join(dir, 'mount')
  cpSync(grimoire, mount, { recursive: true })
  const src = join(dir, 'src')
  cpSync(grimoire, join(src, 'grimoires', 'loa'), { recursive: true })
  git(src, 'init', '-q')
  git(src, 'add', '-A')
  git(src, 'commit', '-q', '-m', 'grimoire')
  const bare = join(dir, 'bare.git')
  git(dir, 'init', '-q', '--bare', bare)
  git(src, 'push', '-q', bare, 'HEAD:refs/heads/main')
  return { dir, ring, key, ws, grimoire, mount, bare }
}

/**
 * Resolves once `Date.now()` has moved past its value at the call: what a test needs before
 * writing something that must carry a later wall-clock millisecond than what it wrote before
 * (a wait for that condition itself, not for a guessed number of milliseconds).
 */
export async function nextMillisecond() {
  const at = Date.now()
  while (Date.now() <= at) await new Promise((r) => setImmediate(r))
}
