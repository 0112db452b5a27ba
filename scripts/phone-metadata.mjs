// Compiles libphonenumber's metadata (resources/PhoneNumberMetadata.xml, Apache-2.0) into the two
// files the redactor and its evaluation read, so that neither the build nor the tests parse XML or
// reach the network:
//
//   src/redact/phone/metadata.tsv      one line per region: country calling code, region id,
//                                      possible national lengths, the national (trunk) prefix as
//                                      the metadata parses it, and the national significant number
//                                      patterns of every number type, joined (validation only)
//   testdata/phone/example_numbers.tsv the metadata's example number of each region and type, with
//                                      the national and international formats the metadata's
//                                      formatting rules give it (evaluation data we did not write)
//
//   node scripts/phone-metadata.mjs path/to/PhoneNumberMetadata.xml "<source description>"
//
// The source (a libphonenumber release) is named in both files' headers; regenerate both together.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const [xmlPath, source] = process.argv.slice(2)
if (!xmlPath || !source) {
  console.error('usage: node scripts/phone-metadata.mjs PhoneNumberMetadata.xml "<source description>"')
  process.exit(2)
}
const xml = readFileSync(xmlPath, 'utf8').replace(/<!--[\s\S]*?-->/g, '')

const TYPES = ['fixedLine', 'mobile', 'tollFree', 'premiumRate', 'sharedCost', 'personalNumber', 'voip', 'pager', 'uan', 'voicemail']
const squeeze = (s) => s.replace(/\s+/g, '')
const attrs = (s) => Object.fromEntries([...s.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2].replace(/&amp;/g, '&')]))
const element = (body, name) => {
  const m = body.match(new RegExp(`<${name}(\\s[^>]*)?(?:/>|>([\\s\\S]*?)</${name}>)`))
  return m ? { attrs: attrs(m[1] ?? ''), body: m[2] ?? '' } : null
}
const text = (body, name) => {
  const e = element(body, name)
  return e ? squeeze(e.body) : null
}

/** "7,9-10" style list of lengths from possibleLengths' national attribute ("[8-10],12"). */
function lengths(spec) {
  const out = new Set()
  for (const part of spec.split(',')) {
    const r = part.match(/^\[(\d+)-(\d+)\]$/)
    if (r) for (let n = +r[1]; n <= +r[2]; n++) out.add(n)
    else if (part !== '' && part !== '-1') out.add(+part)
  }
  return out
}

/**
 * The national prefix as a regex the validator strips (optionally) before the national number:
 * `nationalPrefixForParsing` without the alternatives that only rewrite a local number (`(...)$`),
 * its groups made non-capturing; or the plain `nationalPrefix`.
 */
function prefixPattern(t) {
  const npp = t.nationalPrefixForParsing
  if (npp) {
    const alts = splitTop(squeeze(npp)).filter((a) => !a.endsWith('$'))
    if (alts.length) return alts.join('|').replace(/\((?!\?)/g, '(?:')
    return null
  }
  return t.nationalPrefix || null
}

/** Splits a pattern at its top-level `|`. */
function splitTop(p) {
  const out = []
  let depth = 0
  let cur = ''
  for (let i = 0; i < p.length; i++) {
    const c = p[i]
    if (c === '\\') {
      cur += c + p[++i]
      continue
    }
    if (c === '(' || c === '[') depth++
    if (c === ')' || c === ']') depth--
    if (c === '|' && depth === 0) {
      out.push(cur)
      cur = ''
    } else cur += c
  }
  out.push(cur)
  return out
}

const regions = []
for (const m of xml.matchAll(/<territory\s([^>]*)>([\s\S]*?)<\/territory>/g)) {
  const t = attrs(m[1])
  const body = m[2]
  const types = []
  for (const name of TYPES) {
    const e = element(body, name)
    if (!e) continue
    const pattern = text(e.body, 'nationalNumberPattern')
    if (!pattern) continue
    const pl = element(e.body, 'possibleLengths')
    types.push({ name, pattern, lengths: pl ? lengths(pl.attrs.national ?? '') : new Set(), example: text(e.body, 'exampleNumber') })
  }
  const formats = []
  for (const f of body.matchAll(/<numberFormat\s([^>]*)>([\s\S]*?)<\/numberFormat>/g)) {
    const a = attrs(f[1])
    const leading = [...f[2].matchAll(/<leadingDigits>([\s\S]*?)<\/leadingDigits>/g)].map((x) => squeeze(x[1]))
    formats.push({
      pattern: a.pattern,
      rule: a.nationalPrefixFormattingRule ?? t.nationalPrefixFormattingRule ?? null,
      leading: leading.at(-1) ?? null,
      format: element(f[2], 'format').body.trim(),
      intl: [...f[2].matchAll(/<intlFormat>([\s\S]*?)<\/intlFormat>/g)].map((x) => x[1].trim())[0] ?? null,
    })
  }
  regions.push({ id: t.id, cc: t.countryCode, np: t.nationalPrefix ?? '', prefix: prefixPattern(t), types, formats })
}

// --- the validation table ---------------------------------------------------------------------

const header = [
  `# Phone number metadata compiled by scripts/phone-metadata.mjs from libphonenumber's`,
  `# resources/PhoneNumberMetadata.xml (${source}); Apache License 2.0,`,
  `# Copyright (C) 2009 The Libphonenumber Authors. Facts (lengths, prefixes, number ranges), not code.`,
]
const lines = [
  ...header,
  '# country_code<TAB>region<TAB>national_lengths<TAB>national_prefix_pattern or -<TAB>national_number_pattern',
]
for (const r of regions) {
  if (!r.types.length) continue
  const lens = new Set()
  for (const ty of r.types) for (const n of ty.lengths) lens.add(n)
  const pattern = r.types.map((ty) => ty.pattern).join('|')
  lines.push([r.cc, r.id, [...lens].sort((a, b) => a - b).join(','), r.prefix ?? '-', pattern].join('\t'))
}
mkdirSync(join(root, 'src/redact/phone'), { recursive: true })
writeFileSync(join(root, 'src/redact/phone/metadata.tsv'), lines.join('\n') + '\n')

// --- example numbers, formatted -----------------------------------------------------------------

function formatNsn(r, nsn, international) {
  for (const f of r.formats) {
    if (f.leading && !new RegExp(`^(?:${f.leading})`).test(nsn)) continue
    if (!new RegExp(`^(?:${f.pattern})$`).test(nsn)) continue
    let fmt = f.format
    if (international) {
      if (f.intl === 'NA') return null
      if (f.intl) fmt = f.intl
    } else if (f.rule && r.np) {
      const rule = f.rule.replace('$NP', r.np).replace('$FG', '$1')
      fmt = fmt.replace(/\$1/, rule)
    }
    return nsn.replace(new RegExp(`^(?:${f.pattern})$`), fmt)
  }
  return nsn
}

const ex = [...header, '# region<TAB>country_code<TAB>type<TAB>national_significant_number<TAB>national_format<TAB>international_format']
for (const r of regions) {
  for (const ty of r.types) {
    if (!ty.example) continue
    const national = r.id === '001' ? '-' : formatNsn(r, ty.example, false)
    const intl = formatNsn(r, ty.example, true)
    ex.push([r.id, r.cc, ty.name, ty.example, national ?? '-', intl === null ? '-' : `+${r.cc} ${intl}`].join('\t'))
  }
}
mkdirSync(join(root, 'testdata/phone'), { recursive: true })
writeFileSync(join(root, 'testdata/phone/example_numbers.tsv'), ex.join('\n') + '\n')
console.log(`${regions.length} regions, ${ex.length - header.length - 1} example numbers`)
