// `loa report`: the page a person opens, tested as a person would, in a real headless Chromium
// (__test__/browser.mjs): what the rendered page shows must equal what the CLI's JSON says for
// the same workspace, a hostile memory must render as text, and the page must make no request.
// The command itself is a read: it writes only --out, and never inside the workspace's state.
import test from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync, readdirSync, statSync, symlinkSync, mkdirSync, existsSync } from 'node:fs'
import { join, relative } from 'node:path'
import { core, tempDir, runCli } from './helpers.mjs'
import { openFile } from './browser.mjs'

/** Every file under `dir` with its bytes, but `skip` (relative paths). */
function tree(dir, skip = []) {
  const out = {}
  for (const name of readdirSync(dir, { recursive: true })) {
    const p = join(dir, name)
    if (skip.includes(relative(dir, p)) || !statSync(p).isFile()) continue
    out[name] = readFileSync(p).toString('base64')
  }
  return out
}

async function json(args) {
  const run = await runCli([...args, '--json'])
  assert.ok(run.code === 0 || run.code === 1, `loa ${args.join(' ')}: ${run.stderr}`)
  return JSON.parse(run.stdout)
}

/** The numbers and words the rendered page shows, read from the DOM after layout. */
async function shown(page) {
  return page.evaluate(() => {
    const one = (id) => {
      const el = document.querySelector(`[data-testid="${id}"]`)
      if (!el) return null
      return { text: el.textContent.trim(), count: el.dataset.count === undefined ? null : Number(el.dataset.count), visible: el.getBoundingClientRect().height > 0 }
    }
    const ids = ['memories-total', 'memories-pending', 'wal-sessions', 'wal-segments', 'wal-records', 'wal-last-seq', 'dead-letters', 'quarantined', 'tombstones', 'manifest-state', 'recovery-state', 'audit-entries']
    return {
      summary: Object.fromEntries(ids.map((id) => [id, one(id)])),
      memories: [...document.querySelectorAll('article[data-testid="memory"]')].map((a) => ({ id: a.id, type: a.dataset.type, content: a.querySelector('.content')?.textContent ?? null })),
      scripts: document.scripts.length,
      images: document.images.length,
      links: document.querySelectorAll('a[href], area[href]').length,
      svgs: document.querySelectorAll('svg').length,
      bodyText: document.body.innerText,
    }
  })
}

test('the demo workspace: the rendered page shows what the CLI reports, offline, with its plots', async (t) => {
  const ws = tempDir(t)
  const demo = await runCli(['demo', '--workspace', ws])
  assert.equal(demo.code, 0, demo.stderr)
  assert.match(demo.stdout, new RegExp(`report: ${join(ws, 'loa-report.html').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), 'npm start ends by writing the report and printing its path')
  const out = join(tempDir(t), 'report.html')
  const manifest = join(ws, '.loa', 'manifest.json')
  const keys = join(ws, '.loa', 'keys')
  const common = ['--workspace', ws, '--manifest', manifest, '--keys', keys, '--query', 'backup']
  const before = tree(ws)
  const made = await runCli(['report', ...common, '--out', out])
  assert.equal(made.code, 0, made.stderr)
  assert.equal(made.stdout.trim(), out, 'prints the path it wrote')
  assert.deepEqual(tree(ws), before, 'the workspace is unchanged: the report is a read')

  const model = await json(['report', ...common])
  const wal = await json(['wal', 'stats', join(ws, '.loa', 'wal')])
  const verify = await json(['manifest', 'verify', join(ws, 'grimoires', 'loa'), '--manifest', manifest, '--keys', keys])
  const letters = await json(['dead-letter', 'list', '--workspace', ws])

  const browser = await openFile(out)
  t.after(() => browser.close())
  const page = await shown(browser.page)
  const s = page.summary
  for (const [id, field] of Object.entries(s)) assert.ok(field?.visible, `${id} is on the page and visible`)
  const count = (id) => {
    assert.equal(s[id].count, Number(s[id].text.replace(/[^0-9]/g, '')), `${id}: the number shown is the one in data-count`)
    return s[id].count
  }
  assert.equal(count('wal-sessions'), wal.sessions)
  assert.equal(count('wal-segments'), wal.segments)
  assert.equal(count('wal-records'), wal.records)
  assert.equal(count('wal-last-seq'), Math.max(...Object.values(wal.bySession).map((x) => x.lastSeq)))
  assert.equal(count('dead-letters'), letters.letters.length)
  assert.equal(count('memories-total'), model.memories.total)
  assert.equal(count('memories-pending'), model.memories.pending)
  assert.equal(count('tombstones'), model.health.tombstones)
  assert.equal(count('quarantined'), model.health.quarantined.length)
  assert.equal(count('audit-entries'), model.health.audit.entries)
  assert.equal(model.memories.total, 3, 'the demo stores three memories')
  // The demo edited NOTES.md behind the agent's back after signing: the CLI and the page agree.
  assert.equal(verify.ok, false)
  assert.ok(verify.problems.some((p) => p.kind === 'modified' && p.path === 'NOTES.md'))
  assert.match(s['manifest-state'].text, /tampered/)
  assert.match(page.bodyText, /NOTES\.md/)
  assert.match(s['recovery-state'].text, new RegExp(model.health.recovery.state))

  assert.equal(page.memories.length, model.memories.shown)
  assert.deepEqual(page.memories.map((m) => m.id).sort(), model.memories.items.map((m) => m.anchor).sort())
  for (const m of model.memories.items) {
    const seen = page.memories.find((p) => p.id === m.anchor)
    assert.equal(seen.content.trim(), m.content.trim(), 'each memory shows its stored (redacted) text')
  }
  assert.ok(!/dana\.whitfield@example\.com|7946 0958|DEMO4c0ffee/.test(page.bodyText), 'no planted value is on the page')
  assert.match(page.bodyText, /email/i, 'what redaction replaced is named')
  assert.ok(model.context.items.length > 0, 'the query finds the backup decision')
  assert.match(page.bodyText, /nightly backup/)
  assert.equal(page.svgs >= 3, true, 'the three plots are inline SVG')
  assert.equal(page.scripts, 0)
  assert.equal(page.links, 0, 'anchors, never links')
  assert.deepEqual(browser.requests, [], 'the page made no network request')
  assert.deepEqual(browser.console.filter((m) => /Content Security Policy/.test(m)), [])

  const png = join(tempDir(t), 'report.png')
  await browser.page.screenshot({ path: png, fullPage: true })
  const bytes = readFileSync(png)
  assert.equal(bytes.subarray(1, 4).toString(), 'PNG')
  assert.ok(bytes.length > 20_000, `a screenshot with content (${bytes.length} bytes)`)
})

test('hostile memories render as text: no script runs, no element is injected, no request is made', async (t) => {
  const ws = tempDir(t)
  const hostile = [
    '<script>window.__pwned = 1</script> remember the deploy window',
    '</style><script>window.__pwned = 2</script> the staging database moved',
    '"><img src=x onerror="window.__pwned=3"> the release checklist changed',
    "' onmouseover='window.__pwned=4' autofocus onfocus='window.__pwned=5' the on-call rotation changed",
    'javascript:window.__pwned=6 is where the runbook link pointed before the migration',
    'The invoice total is \u202Egnp.exe\u202C and the \u2066isolate\u2069 text came from a chat client',
    '</pre></textarea></title><!-- <svg onload=window.__pwned=7> --> the cache keys rotate weekly',
  ]
  const store = core.MemoryStore.open({ workspaceDir: ws, sessionId: 'hostile' })
  try {
    for (const [i, content] of hostile.entries()) {
      const r = store.captureSync({ type: 'decision', content, confidence: 0.9, agentId: i % 2 ? 'main' : undefined, tags: ['<b>tag</b>'] })
      assert.ok(r.accepted, `captured: ${r.gates?.filter((g) => !g.pass).map((g) => g.name)}`)
    }
  } finally {
    store.close()
  }
  const out = join(tempDir(t), 'hostile.html')
  const made = await runCli(['report', '--workspace', ws, '--out', out, '--query', '<script>window.__pwned=8</script> deploy'])
  assert.equal(made.code, 0, made.stderr)
  const html = readFileSync(out, 'utf8')
  assert.ok(!/<script/i.test(html), 'no script element in the page source')
  assert.ok(!/[\u202A-\u202E\u2066-\u2069]/.test(html), 'bidirectional controls are shown escaped, never raw')

  const browser = await openFile(out)
  t.after(() => browser.close())
  const page = await shown(browser.page)
  assert.equal(await browser.page.evaluate(() => window.__pwned), undefined, 'no injected code ran')
  // Focus and hover handlers would need an element carrying them: there is none.
  assert.equal(await browser.page.evaluate(() => document.querySelectorAll('[onerror],[onmouseover],[onfocus],[onload],[autofocus]').length), 0)
  assert.equal(page.scripts, 0)
  assert.equal(page.images, 0)
  assert.equal(page.links, 0)
  assert.equal(page.memories.length, hostile.length)
  for (const text of ['<script>window.__pwned = 1</script>', '"><img src=x onerror="window.__pwned=3">', 'javascript:window.__pwned=6', '</pre></textarea></title><!--']) {
    assert.ok(page.memories.some((m) => m.content.includes(text)), `shown as text: ${text}`)
  }
  assert.ok(page.bodyText.includes('<script>window.__pwned=8</script> deploy'), 'the query is shown as text')
  assert.deepEqual(browser.requests, [], 'no request: the onerror image never loaded')
})

test('loa report writes only --out, never inside the workspace state, and refuses bad arguments with a code', async (t) => {
  const ws = tempDir(t)
  const store = core.MemoryStore.open({ workspaceDir: ws, sessionId: 's1' })
  store.captureSync({ type: 'decision', content: 'Releases are cut from the main branch on Thursdays', confidence: 0.9 })
  store.close()
  const before = tree(ws)
  const refusals = [
    [['--out', join(ws, 'grimoires', 'loa', 'report.html')], 'E_INVALID_ARGUMENT'],
    [['--out', join(ws, '.loa', 'wal', 'report.html')], 'E_INVALID_ARGUMENT'],
    [['--out', join(ws, '.loa', 'report.html')], 'E_INVALID_ARGUMENT'],
    [['--agent', '../etc', '--json'], 'E_INVALID_ARGUMENT'],
    [['--limit', '0', '--json'], 'E_USAGE'],
    [['--limit', '100001', '--json'], 'E_INVALID_ARGUMENT'],
    [['--query', '   ', '--json'], 'E_USAGE'],
    [['--out', ''], 'E_USAGE'],
  ]
  // Through a symlinked directory into the grimoire: the real path decides.
  const outside = tempDir(t)
  symlinkSync(join(ws, 'grimoires', 'loa'), join(outside, 'via-link'))
  refusals.push([['--out', join(outside, 'via-link', 'report.html')], 'E_INVALID_ARGUMENT'])
  // A symlink where the page goes is refused, not followed.
  const target = join(outside, 'elsewhere.txt')
  writeFileSync(target, 'keep me')
  symlinkSync(target, join(outside, 'link.html'))
  refusals.push([['--out', join(outside, 'link.html')], 'E_NOT_REGULAR_FILE'])
  mkdirSync(join(outside, 'dir.html'))
  refusals.push([['--out', join(outside, 'dir.html')], 'E_NOT_REGULAR_FILE'])
  for (const [args, code] of refusals) {
    const run = await runCli(['report', '--workspace', ws, ...args])
    assert.equal(run.code, 2, `${args.join(' ')}: ${run.stdout}`)
    assert.match(run.stderr, new RegExp(`^loa: ${code}: `), args.join(' '))
    assert.equal(run.stderr.trim().split('\n').length, 1)
  }
  assert.equal(readFileSync(target, 'utf8'), 'keep me')
  assert.ok(!existsSync(join(ws, 'grimoires', 'loa', 'report.html')))
  assert.deepEqual(tree(ws), before, 'nothing in the workspace changed')

  // In the workspace but outside its state is where a user may well want it.
  const ok = await runCli(['report', '--workspace', ws, '--out', join(ws, 'report.html')])
  assert.equal(ok.code, 0, ok.stderr)
  assert.deepEqual(tree(ws, ['report.html']), before)
  const model = await json(['report', '--workspace', ws])
  assert.equal(model.memories.total, 1)
  assert.equal(model.health.manifest.state, 'absent')
})

test('a page stays a page: a 1 MiB memory is shown in part, saying how much is left out', async (t) => {
  const ws = tempDir(t)
  const store = core.MemoryStore.open({ workspaceDir: ws, sessionId: 'big' })
  const words = ['deploy', 'billing', 'cluster', 'rotate', 'staging', 'release', 'window', 'backup']
  for (let n = 0; n < 2; n++) {
    let text = `Note ${n}:`
    for (let i = 0; text.length < 1024 * 1024 - 16; i++) text += ` ${words[(i * 7 + n) % words.length]}${i}`
    const r = store.captureSync({ type: 'learning', content: text, confidence: 0.9 })
    assert.ok(r.accepted)
  }
  store.close()
  const out = join(tempDir(t), 'big.html')
  const made = await runCli(['report', '--workspace', ws, '--out', out])
  assert.equal(made.code, 0, made.stderr)
  const size = statSync(out).size
  assert.ok(size < 512 * 1024, `the page is ${size} bytes for 2 MiB of memories`)
  assert.match(readFileSync(out, 'utf8'), /more characters not shown/)
  const model = await json(['report', '--workspace', ws])
  assert.equal(model.memories.total, 2)
  assert.equal(model.memories.shown, 2)
})
