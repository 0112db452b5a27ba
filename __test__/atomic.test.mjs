// writeFileAtomic: whole-file replacement that never leaves a mixture or a temp file behind.
import test from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { core, tempDir } from './helpers.mjs'

const { writeFileAtomic, writeFileAtomicSync, isLoaError } = core

test('writes, replaces and sets the mode, leaving no temporary file', async (t) => {
  const dir = tempDir(t)
  const file = join(dir, 'state.json')
  writeFileSync(file, 'old')
  await writeFileAtomic(file, '{"v":1}')
  assert.equal(readFileSync(file, 'utf8'), '{"v":1}')
  writeFileAtomicSync(file, Buffer.from([0, 255]), { mode: 0o600 })
  assert.deepEqual([...readFileSync(file)], [0, 255])
  assert.equal(statSync(file).mode & 0o777, 0o600)
  assert.deepEqual(readdirSync(dir), ['state.json'])
})

test('a failed write leaves the old content and no debris', async (t) => {
  const dir = tempDir(t)
  const file = join(dir, 'keep.txt')
  writeFileSync(file, 'precious')
  // A directory where the file should go is refused before anything is written.
  const blocked = join(dir, 'blocked')
  const { mkdirSync } = await import('node:fs')
  mkdirSync(join(blocked, 'child'), { recursive: true })
  await assert.rejects(
    writeFileAtomic(blocked, 'x'),
    (err) => isLoaError(err) && err.code === 'E_NOT_REGULAR_FILE' && err.kind === 'directory',
  )
  assert.equal(readFileSync(file, 'utf8'), 'precious')
  assert.deepEqual(readdirSync(dir).sort(), ['blocked', 'keep.txt'])
  assert.throws(() => writeFileAtomicSync(file, 'x', { mode: 'rw' }), (err) => err.code === 'E_INVALID_ARGUMENT')
  await assert.rejects(writeFileAtomic(file, 5), (err) => err.code === 'E_INVALID_ARGUMENT')
  assert.equal(readFileSync(file, 'utf8'), 'precious')
})
