// Errors reaching JavaScript: real Error objects with stable codes, sync and async, and panics
// that never take the process down.
import test from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { core, root, tempDir, startChild } from './helpers.mjs'

const { isLoaError, loaErrorCodes, writeFileAtomic, writeFileAtomicSync } = core
const hooks = core[Symbol.for('@loa/core/test-hooks')]

test('test hooks are not part of the public API: not exported by name, not declared, not enumerable', () => {
  const dts = readFileSync(join(root, 'index.d.ts'), 'utf8')
  const js = readFileSync(join(root, 'index.js'), 'utf8')
  for (const name of ['__panicForTesting', '__redactionPatterns', '__readStrings', 'RedactionPattern']) {
    assert.ok(!dts.includes(name), `${name} is declared in index.d.ts`)
    assert.ok(!js.includes(name), `${name} is exported by index.js`)
    assert.equal(core[name], undefined, name)
  }
  assert.deepEqual(Object.keys(core).filter((k) => k.startsWith('__') && k !== '__napiBindingTarget'), [])
  assert.deepEqual(Object.keys(hooks).sort(), ['panic', 'readStrings', 'redactionPatterns'])
  assert.equal(Object.getOwnPropertyDescriptor(core, Symbol.for('@loa/core/test-hooks')).enumerable, false)
})

test('isLoaError never throws, whatever it is given', () => {
  const throwingCode = Object.defineProperty(new Error('x'), 'code', { get() { throw new Error('getter') } })
  const revoked = Proxy.revocable(new Error('x'), {})
  revoked.revoke()
  const values = [throwingCode, revoked.proxy, new Proxy(new Error('x'), { get() { throw new Error('trap') } }), Symbol('s'), 10n, () => 1]
  for (const value of values) assert.equal(isLoaError(value), false)
  // ... and leaves nothing pending: the next call works.
  assert.ok(isLoaError(Object.assign(new Error('x'), { code: 'E_IO' })))
})

test('the LoaErrorCode union in index.d.ts, the run-time list and docs/errors.md agree', () => {
  const dts = readFileSync(join(root, 'index.d.ts'), 'utf8')
  const union = dts.match(/export type LoaErrorCode = ([^\n]+)/)[1]
  const declared = [...union.matchAll(/'([A-Z_]+)'/g)].map((m) => m[1])
  assert.deepEqual(declared, loaErrorCodes())
  assert.ok(declared.includes('E_WAL_LOCKED') && declared.includes('E_IO') && declared.includes('E_INVALID_ARGUMENT'))
  const documented = [...readFileSync(join(root, 'docs', 'errors.md'), 'utf8').matchAll(/^\| `(E_[A-Z_]+)` \|/gm)].map((m) => m[1])
  assert.deepEqual(documented, loaErrorCodes())
})

test('isLoaError narrows only errors from the library', async (t) => {
  const syncError = (() => {
    try {
      writeFileAtomicSync(42, 'x')
    } catch (err) {
      return err
    }
  })()
  assert.ok(syncError instanceof Error)
  assert.equal(syncError.code, 'E_INVALID_ARGUMENT')
  assert.ok(isLoaError(syncError))

  const asyncError = await writeFileAtomic(join(tempDir(t), 'missing-dir', 'f'), 'x').catch((e) => e)
  assert.ok(asyncError instanceof Error, 'async rejections are Error objects too')
  assert.equal(asyncError.code, 'E_IO')
  assert.equal(asyncError.osError, 'ENOENT')
  assert.ok(isLoaError(asyncError))

  const lookalike = Object.assign(new Error('x'), { code: 'ENOENT' })
  for (const value of [lookalike, { code: 'E_IO', message: 'plain object' }, 'E_IO', null, undefined, 42]) {
    assert.equal(isLoaError(value), false, String(value))
  }
})

test('a Rust panic becomes E_INTERNAL, sync and async, and the process lives on', async () => {
  assert.throws(() => hooks.panic('sync'), (err) => isLoaError(err) && err.code === 'E_INTERNAL')
  await assert.rejects(hooks.panic('async'), (err) => isLoaError(err) && err.code === 'E_INTERNAL')
  // Still alive and working after both.
  assert.ok(loaErrorCodes().length > 0)
})

test('a panic in a child process leaves it exiting normally', async () => {
  const script = `
    const hooks = require(${JSON.stringify(join(root, 'index.js'))})[Symbol.for('@loa/core/test-hooks')]
    try { hooks.panic('sync') } catch (e) { console.log('caught', e.code) }
    hooks.panic('async').catch((e) => console.log('rejected', e.code))`
  const child = startChild(process.execPath, ['-e', script], { env: { ...process.env, RUST_BACKTRACE: '0' } })
  await child.exited
  assert.equal(child.exit.code, 0, child.stderr)
  assert.deepEqual(child.lines.filter(Boolean), ['caught E_INTERNAL', 'rejected E_INTERNAL'])
})
