// YAML reading time per MiB, ordinary files beside adversarial ones, through every public reader
// of the crate's one YAML entry point (src/yaml.rs): `parseConfig`, `Ledger.readBead`,
// `readSkillContextPolicy` and ledger synthesis (event files). Adversarial inputs are deep flow
// nesting (`[[[[...]]]]`, `{a: {a: ...}}`) at 47 KiB, 128 KiB and 1 MiB (refused as soon as the
// reader meets level 33), nesting at the bound repeated over the whole text (accepted: the slowest
// shape a reader must parse), alias fan-out within and past the budget, and long block nesting.
// Time must stay linear: MiB/s of each adversarial input should be of the order of ordinary
// YAML's (within a small factor), and a refusal should cost no more than the text's length.
//
//   node bench/yaml.bench.mjs          full run: best of 5
//   node bench/yaml.bench.mjs --quick  smoke run: best of 1
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'

import { writeReport } from './lib.mjs'

const require = createRequire(import.meta.url)
const core = require('../index.js')

const QUICK = process.argv.includes('--quick')
const ROUNDS = QUICK ? 1 : 5
const MIB = 1 << 20
const fmt = (x, digits = 1) => x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

/** Repeats `unit` (a function of the index or a string) until the text is about `size` bytes. */
function fill(head, unit, size, tail = '') {
  const parts = [head]
  let n = head.length + tail.length
  for (let i = 0; n < size; i++) {
    const u = typeof unit === 'function' ? unit(i) : unit
    parts.push(u)
    n += u.length
  }
  parts.push(tail)
  return parts.join('')
}
const nest = (open, close, depth, inner = '1') => open.repeat(depth) + inner + close.repeat(depth)
const deep = (open, close, size) => {
  const n = Math.floor((size - 32) / (open.length + close.length))
  return nest(open, close, n)
}

// ---------------------------------------------------------------------------------------------
// Inputs. Each returns the YAML text of a config (a document whose top level is a mapping).

const ordinaryConfig = (size) =>
  fill(
    'wal:\n  sync: batch\nmemory:\n  quality_gates:\n    min_confidence: 0.5\nx_notes:\n',
    (i) => `  - key: note-${i}\n    text: "The release train leaves on Tuesday, shard ${i % 17}"\n    tags: [release, shard-${i % 17}]\n`,
    size,
  )
const CONFIG_INPUTS = [
  ['ordinary config', () => ordinaryConfig(MIB)],
  ['flow nesting at the bound (31 levels), repeated', () => fill('x_notes:\n', `  - ${nest('[', ']', 30)}\n`, MIB)],
  ['mapping nesting at the bound, repeated', () => fill('x_notes:\n', `  - ${nest('{a: ', '}', 30)}\n`, MIB)],
  ['flow nesting at the bound, one line', () => fill('x_notes: [', `${nest('[', ']', 30)}, `, MIB, '1]\n')],
  ['block nesting at the bound, repeated', () => fill('x_notes:\n', (i) => Array.from({ length: 30 }, (_, d) => `${'  '.repeat(d + 1)}k${i}_${d}:\n`).join('') + `${'  '.repeat(31)}v\n`, MIB)],
  ['alias fan-out within the budget', () => fill('x_base: &b {sync: batch, dir: x}\nx_notes:\n', '  - *b\n', MIB)],
  ['alias fan-out past the budget (refused)', () => fill(`x_big: &b "${'y'.repeat(4000)}"\nx_notes:\n`, '  - *b\n', MIB)],
  ['nested alias bomb (refused)', () => {
    let t = 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n'
    for (let i = 1; i < 10; i++) t += `a${i}: &a${i} [${Array(10).fill(`*a${i - 1}`).join(', ')}]\n`
    return t
  }],
]
for (const size of [47 * 1024, 128 * 1024, MIB]) {
  const kib = size === MIB ? '1 MiB' : `${size >> 10} KiB`
  CONFIG_INPUTS.push([`\`[[[[...]]]]\` ${kib} (refused)`, () => `x: ${deep('[', ']', size)}\n`])
  CONFIG_INPUTS.push([`\`{a: {a: ...}}\` ${kib} (refused)`, () => `x: ${deep('{a: ', '}', size)}\n`])
  CONFIG_INPUTS.push([`\`["]", ["]", ...\` ${kib} (refused)`, () => `x: ${deep('["]", ', ']', size)}\n`])
}
CONFIG_INPUTS.push(['block nesting past the bound, 1 MiB (refused)', () => fill('', (d) => `${' '.repeat(d)}k:\n`, MIB)])

function bestOf(rounds, f) {
  let best = Infinity
  let outcome = ''
  for (let r = 0; r < rounds; r++) {
    const start = performance.now()
    try {
      f()
      outcome = 'read'
    } catch (e) {
      outcome = `${e.code}: ${String(e.message).replace(/\s+/g, ' ').slice(0, 60)}`
    }
    best = Math.min(best, performance.now() - start)
  }
  return { ms: best, outcome }
}

const rows = []
function row(reader, name, bytes, { ms, outcome }) {
  rows.push({ reader, name, bytes, ms, mibps: bytes / MIB / (ms / 1000), outcome })
  console.error(`${reader}: ${name}: ${fmt(ms)} ms`)
}

for (const [name, make] of CONFIG_INPUTS) {
  const text = make()
  row('parseConfig', name, Buffer.byteLength(text), bestOf(ROUNDS, () => core.parseConfig(text)))
}

// Beads, frontmatter and events read files: the same shapes through their readers.
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'loa-yaml-bench-'))
try {
  const beads = path.join(tmp, '.beads')
  fs.mkdirSync(beads)
  const ledger = core.Ledger.open({ workspaceDir: tmp })
  const beadInputs = [
    ['ordinary bead', fill('id: bd-1\ntitle: Implement the release train\nnext_steps:\n', (i) => `- Port module ${i} to the new storage layer\n`, MIB)],
    ['flow nesting at the bound, repeated', fill('id: bd-1\nnotes:\n', `  - ${nest('[', ']', 30)}\n`, MIB)],
    ['`[[[[...]]]]` 1 MiB (refused)', `id: bd-1\nnotes: ${deep('[', ']', MIB)}\n`],
  ]
  for (const [name, text] of beadInputs) {
    fs.writeFileSync(path.join(beads, 'bd-1.yaml'), text)
    row('Ledger.readBead', name, text.length, bestOf(ROUNDS, () => ledger.readBead('bd-1')))
  }

  const skill = path.join(tmp, 'SKILL.md')
  const skillInputs = [
    ['ordinary frontmatter', fill('---\nname: x\ncontext_editing:\n  preserve_artifacts:\n', (i) => `    - notes/file-${i}.md\n`, MIB - 1024, '---\nbody\n')],
    ['`{a: {a: ...}}` 1 MiB (refused)', `---\nname: x\ncontext_editing: ${deep('{a: ', '}', MIB - 64)}\n---\nbody\n`],
  ]
  for (const [name, text] of skillInputs) {
    fs.writeFileSync(skill, text)
    row('readSkillContextPolicy', name, text.length, bestOf(ROUNDS, () => core.readSkillContextPolicy(skill)))
  }

  // One event of about the largest size allowed (256 KiB) in an otherwise empty ledger. An
  // event's sections hold text only, so nesting at the bound is read whole and then skipped as
  // not an event: what it measures is the parse.
  const EVENT = 256 * 1024 - 512
  const head = '---\nv: 1\nts: 2026-01-10T10:00:00Z\nagent: a\ntype: session_end\n---\n'
  const item = (i) => `Ported module ${i} to the new storage layer and checked it against shard ${i % 17}; `.repeat(2)
  const ordinaryEvent = [head, 'this_session:\n']
  for (let i = 0, n = head.length; i < 1000 && n < EVENT - 300; i++) {
    ordinaryEvent.push(`- ${item(i)}\n`)
    n += item(i).length + 3
  }
  const eventInputs = [
    ['ordinary event', ordinaryEvent.join('')],
    ['flow nesting at the bound, repeated (not an event)', fill(`${head}now: x\nopen_questions:\n`, `- ${nest('[', ']', 30, '"q"')}\n`, EVENT)],
    ['alias fan-out (skipped)', fill(`${head}now: &big ${'y'.repeat(4000)}\ndecisions:\n`, (i) => `  k${i}: *big\n`, 17 * 1024)],
    ['`[[[[...]]]]` 256 KiB (skipped)', `${head}now: ${deep('[', ']', EVENT)}\n`],
  ]
  for (const [i, [name, text]] of eventInputs.entries()) {
    const dir = path.join(tmp, `synth-${i}`)
    fs.mkdirSync(path.join(dir, 'events'), { recursive: true })
    fs.writeFileSync(path.join(dir, 'events', 'e.md'), text)
    const result = bestOf(ROUNDS, () => {
      fs.rmSync(path.join(dir, 'current.md'), { force: true })
      const report = core.synthesizeLedgerSync(dir)
      if (report.skipped.length) throw Object.assign(new Error(report.skipped[0].reason), { code: 'skipped' })
    })
    row('synthesizeLedgerSync', name, text.length, result)
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true })
}

const lines = [
  `Best of ${ROUNDS}; Node ${process.version}, ${os.availableParallelism()} CPU(s). MiB/s is the text's size over the`,
  'time of the whole call (parse, settings or event checks, and for synthesis the file reads and current.md).',
  'Refused inputs stop where the reader meets level 33 or the alias budget; their MiB/s says how little of',
  'the text that cost.',
  '',
  '| reader | input | size | time ms | MiB/s | outcome |',
  '|---|---|---:|---:|---:|---|',
  ...rows.map((r) => `| ${r.reader} | ${r.name} | ${fmt(r.bytes / 1024, 0)} KiB | ${fmt(r.ms)} | ${fmt(r.mibps)} | ${r.outcome} |`),
]
const accepted = rows.filter((r) => r.outcome === 'read')
const ordinary = new Map(rows.filter((r) => r.name.startsWith('ordinary')).map((r) => [r.reader, r.mibps]))
const worst = accepted
  .filter((r) => !r.name.startsWith('ordinary'))
  .map((r) => ({ ...r, factor: ordinary.get(r.reader) / r.mibps }))
  .sort((a, b) => b.factor - a.factor)[0]
if (worst) {
  lines.push('')
  lines.push(`Slowest accepted adversarial input per MiB: ${worst.reader} "${worst.name}", ${fmt(worst.factor)}x the time per MiB of ordinary YAML.`)
}
const report = lines.join('\n')
console.log(report)
writeReport('yaml', `# YAML benchmark\n\n${report}\n`)
