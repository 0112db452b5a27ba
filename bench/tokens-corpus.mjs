// A deterministic mixed corpus for the token benchmarks: English prose and agent notes, code,
// Chinese/Japanese/Korean, emoji, keys and hashes, and mixed lines, in documents of 100 B to
// 8 KB. The same seed always gives the same corpus, byte for byte. Keys and hashes are random,
// so they never repeat (no tokenizer cache gets them for free); words repeat as in real text.
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { rng } from './lib.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const samples = JSON.parse(readFileSync(join(here, '..', '__test__', 'fixtures', 'token-samples.json'), 'utf8'))

const WORDS = (
  'the of and to a in is that for it as was with be by on not he this are or his from at which but have an they you were her she ' +
  'there would their we him been has when who will more no if out so said what up its about into than them can only other new some ' +
  'could time these two may then do first any my now such like our over man me even most made after also did many before must through ' +
  'back years where much your way well down should because each just those people how too little state good very make world still own ' +
  'see men work long get here between both life being under never day same another know while last might us great old year off come ' +
  'since against go came right used take three agent memory session budget token context learning summary decision ledger commit ' +
  'refactor reader writer segment crash recovery signature manifest review deploy release pipeline retry backoff timeout lock ' +
  'checksum consolidation workspace config threshold compaction artifact trajectory grounding citation handoff identity'
).split(' ')
const CAPS = ['TODO', 'NOTE', 'API', 'CI', 'WAL', 'JSON', 'HTTP', 'README', 'Loa', 'OpenClaw', 'Rust', 'Node']
const CODE = [
  'fn {w}(&self, {w}: usize) -> Result<{W}> {\n    let {w} = self.{w}.get({w}).ok_or(Error::NotFound)?;\n    Ok({w}.clone())\n}\n',
  'export async function {w}({w}: string): Promise<number> {\n  const {w} = await load({w}, { timeout: {n} })\n  return {w}.length\n}\n',
  'if ({w} != null && {w}.{w} >= {n}) {\n  throw new Error(`{w} failed: ${{w}}`)\n}\n',
  '{"{w}": {n}, "{w}": "{w}", "items": [{n}, {n}, {n}], "ok": true}\n',
  'SELECT {w}, COUNT(*) FROM {w}s WHERE {w}_id = {n} GROUP BY {w};\n',
  '    for (i, {w}) in {w}s.iter().enumerate() {\n        if i % {n} == 0 { println!("{} {}", i, {w}); }\n    }\n',
  '# {W}\n\n- [x] {w} the {w}\n- [ ] {w} {w} ({n} ms)\n',
]
const EMOJI = ['🚀', '🔥', '✨', '🎉', '👍🏽', '❤️', '✅', '❌', '⚠️', '🐛', '📦', '🧪', '👨‍👩‍👧‍👦', '🇯🇵', '😀', '🤔', '🙏', '💡', '🔒', '⏳']
const CJK = [...samples.chinese, ...samples.japanese, ...samples.korean].flatMap((s) => s.split(/(?<=[。，、！？.,])/u)).filter(Boolean)

export const KINDS = ['english', 'code', 'cjk', 'emoji', 'keys', 'mixed']
// Share of the corpus, by bytes, of each kind.
const MIX = { english: 0.45, code: 0.2, cjk: 0.15, emoji: 0.05, keys: 0.1, mixed: 0.05 }

function generator(random) {
  const int = (n) => Math.floor(random() * n)
  const pick = (list) => list[int(list.length)]
  const hex = (n) => Array.from({ length: n }, () => '0123456789abcdef'[int(16)]).join('')
  const alnum = (n) => Array.from({ length: n }, () => 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'[int(62)]).join('')
  const word = () => (random() < 0.04 ? pick(CAPS) : pick(WORDS))
  const sentence = () => {
    const n = 6 + int(18)
    const w = Array.from({ length: n }, word)
    w[0] = w[0][0].toUpperCase() + w[0].slice(1)
    return w.join(' ') + pick(['.', '.', '.', '?', '!', ':', ';']) + ' '
  }
  const fill = (template) => template.replace(/\{w\}/g, () => pick(WORDS)).replace(/\{W\}/g, () => pick(CAPS)).replace(/\{n\}/g, () => String(int(100000)))
  return {
    english: () => (random() < 0.3 ? `- [${2024 + int(2)}-${String(1 + int(12)).padStart(2, '0')}-1${int(10)}] ` : '') + sentence() + (random() < 0.2 ? '\n' : ''),
    code: () => fill(pick(CODE)),
    cjk: () => pick(CJK) + (random() < 0.1 ? '\n' : ''),
    emoji: () => pick(EMOJI) + (random() < 0.3 ? ' ' + pick(WORDS) + ' ' : ''),
    keys: () =>
      pick([
        () => `sha256:${hex(64)} `,
        () => `AKIA${alnum(16).toUpperCase()} `,
        () => `ghp_${alnum(36)}\n`,
        () => `${hex(8)}-${hex(4)}-${hex(4)}-${hex(4)}-${hex(12)} `,
        () => `eyJ${alnum(40)}.${alnum(60)} `,
      ])(),
    mixed: () => `${pick(EMOJI)} ${pick(WORDS)} ${pick(CJK).slice(0, 8)} key=${hex(12)} ${int(1e6)} ${pick(WORDS)}\n`,
  }
}

/**
 * `{ docs, kinds, bytes }`: about `totalBytes` of UTF-8 text in documents of 100 B to 8 KB, each
 * of one kind (`kinds[i]`).
 */
export function corpus(totalBytes, seed = 20261122) {
  const random = rng(seed)
  const gen = generator(random)
  const docs = []
  const kinds = []
  let bytes = 0
  const budget = Object.fromEntries(KINDS.map((k) => [k, MIX[k] * totalBytes]))
  while (bytes < totalBytes) {
    const open = KINDS.filter((k) => budget[k] > 0)
    const kind = open.length ? open[Math.floor(random() * open.length)] : 'english'
    const size = 100 + Math.floor(random() ** 2 * 8000)
    let doc = ''
    while (Buffer.byteLength(doc) < size) doc += gen[kind]()
    const n = Buffer.byteLength(doc)
    docs.push(doc)
    kinds.push(kind)
    bytes += n
    budget[kind] -= n
  }
  return { docs, kinds, bytes }
}

/** `n` candidate sessions and learnings for buildContext, with summaries of 50-400 characters. */
export function candidates(n, seed = 7) {
  const random = rng(seed)
  const gen = generator(random)
  const int = (k) => Math.floor(random() * k)
  const text = (min) => {
    let s = ''
    while (s.length < min) s += random() < 0.15 ? gen.cjk() : gen.english()
    return s.trim()
  }
  const offsets = ['Z', '+00:00', '+01:00', '-05:00', '+09:00', '+05:30']
  const stamp = () => {
    const d = new Date(Date.UTC(2024, 0, 1) + int(700 * 86400) * 1000)
    return d.toISOString().slice(0, 19) + pick(offsets)
  }
  const pick = (list) => list[int(list.length)]
  const sessions = Array.from({ length: Math.ceil(n / 2) }, () => ({ timestamp: stamp(), summary: text(50 + int(350)), importance: int(5) / 4 }))
  const learnings = Array.from({ length: Math.floor(n / 2) }, () => ({
    trigger: text(20 + int(60)),
    solution: text(50 + int(300)),
    importance: int(10) / 10,
    ...(random() < 0.7 ? { lastUsed: stamp() } : {}),
  }))
  return { sessions, learnings }
}
