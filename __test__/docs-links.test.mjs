// Every relative link of the README and of docs/ leads to a file of the repository, and every
// `#anchor` to a heading of that file (GitHub's anchor rules), so that the README can stay short
// and send its readers to docs/ without sending them nowhere.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const FENCE = /^\s*(```|~~~)/

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

/** The anchors of a Markdown file's headings (outside code blocks), repeats numbered as GitHub does. */
function anchors(file) {
  const seen = new Map()
  const out = new Set()
  let fenced = false
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (FENCE.test(line)) fenced = !fenced
    const heading = !fenced && /^#{1,6}\s+(.*)$/.exec(line)
    if (!heading) continue
    const base = slug(heading[1])
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

/** The relative link targets of a Markdown file, outside code blocks and inline code. */
function links(file) {
  const targets = []
  let fenced = false
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (FENCE.test(line)) fenced = !fenced
    if (fenced) continue
    for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
      if (!/^[a-z][a-z0-9+.-]*:/i.test(m[1])) targets.push(m[1])
    }
  }
  return targets
}

const pages = [
  join(root, 'README.md'),
  join(root, 'CHANGELOG.md'),
  join(root, 'extensions', 'loa', 'README.md'),
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(root, 'docs', f)),
]

test('every relative link and anchor of the README and docs/ resolves', () => {
  const broken = []
  let checked = 0
  for (const page of pages) {
    for (const target of links(page)) {
      checked++
      const [path, anchor] = target.split('#')
      const dest = path ? resolve(dirname(page), decodeURI(path)) : page
      const where = `${relative(root, page)}: ${target}`
      if (!existsSync(dest)) broken.push(`${where} (no such file)`)
      else if (anchor && !(statSync(dest).isFile() && anchors(dest).has(anchor))) broken.push(`${where} (no such heading)`)
    }
  }
  assert.deepEqual(broken, [])
  assert.ok(checked > 50, `only ${checked} links found: the link reader is broken`)
})

test('the anchor rules match GitHub on the headings the README links to', () => {
  assert.equal(slug('The `loa` command'), 'the-loa-command')
  assert.equal(slug('Compaction planner (context editing)'), 'compaction-planner-context-editing')
  assert.equal(slug('Not detected (known gaps)'), 'not-detected-known-gaps')
})
