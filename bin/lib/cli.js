'use strict'
// What every `loa` command shares: the one error format, exit statuses, and reading the files and
// directories a caller names without hanging on a FIFO or following it into a device.
//
// Every failure is one line on stderr, `loa: E_CODE: message`, and exit status 2 (1 is kept for
// "a check found problems", 0 for success). Codes are those of @loa/core (`E_IO`,
// `E_NOT_REGULAR_FILE`, `E_WAL_LOCKED`, ...) plus `E_USAGE` for a bad command line. Messages name
// paths the caller gave and OS error names, never file contents, secrets or other caller text.

const fs = require('node:fs')

const EXIT_OK = 0
const EXIT_PROBLEMS = 1
const EXIT_FAILURE = 2

/** A failure with a stable code, reported as `loa: <code>: <message>`. */
class CliError extends Error {
  constructor(code, message) {
    super(message)
    this.code = code
  }
}

const usage = (message) => new CliError('E_USAGE', `${message} (see loa --help)`)

/** Control characters (a newline in a path, say) shown escaped, so a message stays one line. */
function oneLine(text) {
  return String(text).replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/**
 * A word the caller typed (a command, an action, an option name), quoted when it looks like one;
 * anything else (a pasted token, a sentence) is not repeated.
 */
function shown(word, pattern = /^-{0,2}[a-z][a-z0-9-]{0,39}$/) {
  return typeof word === 'string' && pattern.test(word) ? `'${word}'` : '(not shown)'
}

/** Node's errno names for errors Node raises without a `code` we recognise. */
function isSystemError(err) {
  return typeof err?.code === 'string' && /^E[A-Z0-9]+$/.test(err.code) && (typeof err.syscall === 'string' || typeof err.errno === 'number')
}

/** Any thrown value as a CliError: core errors keep their code, OS errors become `E_IO`. */
function toCliError(err, core) {
  if (err instanceof CliError) return err
  if (core?.isLoaError?.(err)) return new CliError(err.code, err.message)
  if (isSystemError(err)) {
    const where = err.path ? ` ${err.path}` : ''
    return new CliError('E_IO', `${err.syscall ?? 'io'}${where}: ${err.code}`)
  }
  if (typeof err?.code === 'string' && err.code.startsWith('ERR_PARSE_ARGS_')) return parseArgsError(err)
  // A bug in loa: its message could quote input (JSON.parse does), so only its kind is shown.
  const kind = typeof err?.name === 'string' && /^[A-Za-z]{1,40}$/.test(err.name) ? err.name : typeof err
  return new CliError('E_INTERNAL', `unexpected ${kind} inside loa (a bug; please report it with the command that caused it)`)
}

/** Node's `parseArgs` errors, rephrased without repeating option values. */
function parseArgsError(err) {
  const option = /'(-{1,2}[^' ]*)/.exec(err.message ?? '')?.[1]
  switch (err.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return usage(`unknown option ${shown(option)}`)
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return /does not take an argument/.test(err.message) ? usage(`${shown(option)} takes no value`) : usage(`${shown(option)} needs a value`)
    default:
      return usage('the command line cannot be read')
  }
}

/** Writes the one error line and returns the exit status. */
function report(err, core) {
  const e = toCliError(err, core)
  process.stderr.write(`loa: ${e.code}: ${oneLine(e.message)}\n`)
  return EXIT_FAILURE
}

/** What kind of thing `stat` found, named as @loa/core names it. */
function kindOf(stat) {
  if (stat.isFile()) return 'file'
  if (stat.isDirectory()) return 'directory'
  if (stat.isSymbolicLink()) return 'symlink'
  if (stat.isFIFO()) return 'fifo'
  if (stat.isSocket()) return 'socket'
  if (stat.isCharacterDevice()) return 'character device'
  if (stat.isBlockDevice()) return 'block device'
  return 'unknown file type'
}

const notRegular = (path, stat) => new CliError('E_NOT_REGULAR_FILE', `${path} is a ${kindOf(stat)}, not a regular file`)

/**
 * An existing directory the caller named (symlinks in the path followed: the caller chose it).
 * Missing or not a directory: `E_IO` with the OS error name.
 */
function requireDir(path, what) {
  let stat
  try {
    stat = fs.statSync(path)
  } catch (err) {
    throw new CliError('E_IO', `${what} ${path}: ${err.code ?? 'unreadable'}`)
  }
  if (!stat.isDirectory()) throw new CliError('E_IO', `${what} ${path}: ENOTDIR (a ${kindOf(stat)}, not a directory)`)
  return path
}

/**
 * A directory that may not exist yet (a key ring before its first key): absent is fine (returns
 * false), anything there but a directory is `E_IO`, as in `requireDir`.
 */
function directoryIfExists(path, what) {
  try {
    fs.lstatSync(path)
  } catch (err) {
    if (err.code === 'ENOENT') return false
    throw new CliError('E_IO', `${what} ${path}: ${err.code ?? 'unreadable'}`)
  }
  requireDir(path, what)
  return true
}

/** When `path` exists, it must be a regular file (`E_NOT_REGULAR_FILE` otherwise). */
function requireFileIfExists(path) {
  let stat
  try {
    stat = fs.statSync(path)
  } catch (err) {
    if (err.code === 'ENOENT') return false
    throw new CliError('E_IO', `${path}: ${err.code ?? 'unreadable'}`)
  }
  if (!stat.isFile()) throw notRegular(path, stat)
  return true
}

/** An existing regular file the caller named. */
function requireFile(path) {
  if (!requireFileIfExists(path)) throw new CliError('E_IO', `${path}: ENOENT`)
  return path
}

/**
 * Reads a regular file the caller named, at most `max` bytes: opened non-blocking (a FIFO cannot
 * hang the open) and checked before a byte is read (a FIFO, socket, device or directory is
 * `E_NOT_REGULAR_FILE`; too large is `E_TOO_LARGE`).
 */
function readInputFile(path, max) {
  let fd
  try {
    fd = fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY)
  } catch (err) {
    // A socket cannot be opened at all (ENXIO): say what is there rather than the errno.
    let stat
    try {
      stat = fs.statSync(path)
    } catch {
      throw err
    }
    if (!stat.isFile()) throw notRegular(path, stat)
    throw err
  }
  try {
    const stat = fs.fstatSync(fd)
    if (!stat.isFile()) throw notRegular(path, stat)
    if (stat.size > max) throw new CliError('E_TOO_LARGE', `${path} is ${stat.size} bytes, over the limit of ${max} bytes`)
    return readBounded(fd, path, max)
  } finally {
    fs.closeSync(fd)
  }
}

function readBounded(fd, what, max) {
  const chunks = []
  let total = 0
  const buffer = Buffer.alloc(64 * 1024)
  for (;;) {
    let n
    try {
      n = fs.readSync(fd, buffer, 0, buffer.length, null)
    } catch (err) {
      // A non-blocking pipe on standard input with nothing in it yet: wait a little.
      if (err.code === 'EAGAIN') {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10)
        continue
      }
      throw err
    }
    if (n === 0) break
    total += n
    if (total > max) throw new CliError('E_TOO_LARGE', `${what} is over the limit of ${max} bytes`)
    chunks.push(Buffer.from(buffer.subarray(0, n)))
  }
  return Buffer.concat(chunks, total)
}

/** Standard input, at most `max` bytes (`E_TOO_LARGE` beyond). */
function readStdin(max) {
  return readBounded(0, 'standard input', max)
}

/** Parses `text` as a UTF-8 string, refusing bytes that are not (`E_INVALID_ARGUMENT`). */
function utf8(buffer, what) {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(buffer)
  } catch {
    throw new CliError('E_INVALID_ARGUMENT', `${what} is not valid UTF-8`)
  }
}

/** The usage error for a missing or unknown action of `loa <group>`. */
function badAction(group, action, actions) {
  const list = actions.join(', ')
  return action === undefined ? usage(`'loa ${group}' needs an action (${list})`) : usage(`unknown ${group} action ${shown(action)} (${list})`)
}

/**
 * Checks the positional arguments after the command: at most `max` of them (`E_USAGE` naming the
 * first extra one's position, not its text).
 */
function expectArgs(args, max, command) {
  if (args.length > max) throw usage(`'loa ${command}' takes ${max === 0 ? 'no' : `at most ${max}`} argument${max === 1 ? '' : 's'}; got ${args.length}`)
}

/** `--workspace` (default: the current directory), which must be an existing directory. */
function workspace(values) {
  if (values.workspace === '') throw usage('--workspace needs a directory')
  return requireDir(require('node:path').resolve(values.workspace ?? '.'), 'workspace')
}

/** A positive integer option (`--budget 400`), or undefined when not given. */
function positiveInteger(text, flag) {
  if (text === undefined) return undefined
  const n = Number(text)
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < 1) throw usage(`${flag} must be a positive integer`)
  return n
}

function printJson(value) {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n')
}

/**
 * The key ring directory: `--keys`, else the `signing.keys_dir` of the workspace's
 * `.loa.config.yaml` (default `.loa/keys`) under `--workspace` (default: the current directory).
 * A key ring that exists must be a directory.
 */
function keysDir(values, core) {
  if (values.keys === '') throw usage('--keys needs a directory')
  if (values.workspace === '') throw usage('--workspace needs a directory')
  let dir
  if (values.keys !== undefined) {
    dir = require('node:path').resolve(values.keys)
  } else {
    const workspace = require('node:path').resolve(values.workspace ?? '.')
    requireDir(workspace, 'workspace')
    dir = require('node:path').resolve(workspace, core.loadConfig(workspace).config.signing.keysDir)
  }
  directoryIfExists(dir, 'key ring')
  return dir
}

module.exports = {
  EXIT_OK,
  EXIT_PROBLEMS,
  EXIT_FAILURE,
  CliError,
  usage,
  oneLine,
  shown,
  toCliError,
  report,
  requireDir,
  directoryIfExists,
  requireFile,
  requireFileIfExists,
  readInputFile,
  readStdin,
  utf8,
  expectArgs,
  badAction,
  printJson,
  keysDir,
  workspace,
  positiveInteger,
}
