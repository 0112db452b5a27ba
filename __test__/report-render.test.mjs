// The rendering layer of `loa report` (bin/lib/report/): every string of the model is text on the
// page, whatever it holds; the page has no script, no link, no inline style and one hashed
// stylesheet; counts, grouping and charts come out right and finite. Pure JavaScript: no addon.
import test from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { html, escapeHtml, joinHtml, isSafeHtml, toHtmlString } = require('../bin/lib/report/html.js')
const { perDayChart, tokensByTypeChart, attentionChart, tokenBar } = require('../bin/lib/report/svg.js')
const { renderReport } = require('../bin/lib/report/render.js')
const { exampleModel } = require('../bin/lib/report/example.js')

const HOSTILE = [
  '<script>alert(1)</script>',
  '</style><script>alert(2)</script>',
  '"><img src=x onerror=alert(1)>',
  "' onmouseover='x",
  'javascript:alert(1)',
  '</textarea></pre></title>',
  '<!--',
  ']]>',
  'paid \u202Eexe.txt',
  'a\u2066b\u2067c\u2068d\u2069e',
  'nul\u0000 bel\u0007 esc\u001b[31m del\u007f nel\u0085 cr\r',
  'lone \uD800 high and \uDC00 low',
  '\u200E\u200F\u061C\u202A\u202B\u202C\u202D',
  `${'x'.repeat(100 * 1024)}<script>`,
]

// What each hostile string must look like on the page (escaped, controls made visible).
const ESCAPED = [
  '&lt;script&gt;alert(1)&lt;/script&gt;',
  '&lt;/style&gt;&lt;script&gt;alert(2)&lt;/script&gt;',
  '&quot;&gt;&lt;img src=x onerror=alert(1)&gt;',
  '&#39; onmouseover=&#39;x',
  'javascript:alert(1)',
  '&lt;/textarea&gt;&lt;/pre&gt;&lt;/title&gt;',
  '&lt;!--',
  ']]&gt;',
  'paid [U+202E]exe.txt',
  'a[U+2066]b[U+2067]c[U+2068]d[U+2069]e',
  'nul[U+0000] bel[U+0007] esc[U+001B][31m del[U+007F] nel[U+0085] cr[U+000D]',
  'lone \uFFFD high and \uFFFD low',
  '[U+200E][U+200F][U+061C][U+202A][U+202B][U+202C][U+202D]',
  `${'x'.repeat(100 * 1024)}&lt;script&gt;`,
]

const ELEMENTS = new Set([
  'html', 'head', 'meta', 'title', 'style', 'body', 'header', 'main', 'footer', 'section', 'div', 'h1', 'h2', 'h3', 'h4', 'p',
  'span', 'strong', 'time', 'dl', 'dt', 'dd', 'ul', 'li', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'article', 'pre',
  'svg', 'rect', 'line', 'text',
])
const ATTRIBUTES = new Set([
  'lang', 'http-equiv', 'content', 'charset', 'name', 'class', 'id', 'role', 'aria-label', 'viewBox', 'width', 'height',
  'x', 'y', 'x1', 'y1', 'x2', 'y2', 'rx', 'fill', 'stroke', 'stroke-width', 'font-size', 'text-anchor', 'transform',
])

/**
 * Every `<` of the page starts the doctype, a comment-free closing tag or an opening tag of an
 * allowed element whose attributes are allowed names with double-quoted values. Data escaped as it
 * should be has no `<` and no `"`, so any escaping fault shows here as an unknown tag or attribute.
 */
function checkMarkup(page) {
  const tag = /<(\/?)([a-zA-Z][a-zA-Z0-9]*)((?:\s+[a-zA-Z][a-zA-Z0-9:-]*="[^"<>]*")*)\s*>/y
  const attribute = /\s+([a-zA-Z][a-zA-Z0-9:-]*)="([^"<>]*)"/g
  const counts = new Map()
  assert.ok(page.startsWith('<!doctype html>\n'), 'the page starts with its doctype')
  for (let at = page.indexOf('<', 1); at !== -1; at = page.indexOf('<', at + 1)) {
    tag.lastIndex = at
    const m = tag.exec(page)
    assert.ok(m, `markup at ${at} is a tag: ${JSON.stringify(page.slice(at, at + 60))}`)
    const name = m[2]
    assert.ok(ELEMENTS.has(name), `element <${name}> is allowed`)
    if (m[1]) {
      assert.equal(m[3], '', 'a closing tag has no attributes')
      continue
    }
    counts.set(name, (counts.get(name) ?? 0) + 1)
    for (const [, attr, value] of m[3].matchAll(attribute)) {
      assert.ok(ATTRIBUTES.has(attr) || /^data-[a-z][a-z-]*$/.test(attr), `attribute ${attr} on <${name}> is allowed`)
      // A hostile `javascript:` may be shown, or kept in an inert data attribute or description; no
      // attribute here takes a URL, and none but those may hold one.
      if (/javascript:/i.test(value)) assert.ok(attr.startsWith('data-') || attr === 'aria-label', `javascript: in ${attr}`)
    }
  }
  return counts
}

/** The stylesheet's text and the hash the page's Content-Security-Policy allows it by. */
function checkPolicy(page) {
  const head = page.slice(page.indexOf('<head>') + '<head>'.length).trimStart()
  const csp = /^<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'sha256-([A-Za-z0-9+/=]+)'; img-src data:; base-uri 'none'; form-action 'none'">/.exec(head)
  assert.ok(csp, 'the first element of <head> is the Content-Security-Policy')
  const style = /<style>([^<]*)<\/style>/.exec(page)
  assert.ok(style, 'one <style> element')
  assert.equal(createHash('sha256').update(style[1], 'utf8').digest('base64'), csp[1], 'the policy allows exactly the page stylesheet')
  assert.ok(page.includes('<meta charset="utf-8">'))
  assert.ok(page.includes('<meta name="referrer" content="no-referrer">'))
}

/** What must hold of any rendered page, whatever model it was made from. */
function checkPage(page) {
  const counts = checkMarkup(page)
  assert.equal(counts.get('style'), 1, 'exactly one <style>')
  assert.equal(counts.get('script'), undefined, 'no <script>')
  assert.equal(counts.get('head'), 1)
  assert.equal(counts.get('body'), 1)
  checkPolicy(page)
  // `src=`, `onerror=` and `javascript:` may be on the page as escaped text (a hostile memory says
  // them); checkMarkup saw every attribute, and none of them is one.
  for (const bad of ['<script', '<img', '<a ', 'href=', 'style="', 'url(', 'NaN', 'Infinity']) {
    assert.ok(!page.includes(bad), `the page has no ${JSON.stringify(bad)}`)
  }
  assert.ok(!/[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C\u200B-\u200D\uFEFF]/.test(page), 'no bidi or invisible format character')
  assert.ok(!/[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/.test(page), 'no control character but tab and newline')
  assert.ok(!/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(page), 'no lone surrogate')
  for (const id of ['summary', 'memories', 'health', 'context', 'ledger', 'plots']) assert.ok(page.includes(` id="${id}"`), `section #${id}`)
  for (const attr of page.matchAll(/ data-count="([^"]*)">([^<]*)</g)) assert.equal(attr[1], attr[2], 'data-count holds the number shown')
}

/**
 * The model with every string (and every key of a `byType` map) replaced by a hostile one, each
 * followed by a marker `~N~` naming which string it was. Returns the model and each marker's path.
 */
function hostileModel(base = exampleModel(), samples = HOSTILE) {
  const paths = []
  const next = (path) => {
    paths.push(path)
    return `${samples[(paths.length - 1) % samples.length]}~${paths.length - 1}~`
  }
  const walk = (value, path) => {
    if (typeof value === 'string') return next(path)
    if (Array.isArray(value)) return value.map((v, i) => walk(v, `${path}[${i}]`))
    if (value && typeof value === 'object') {
      const out = {}
      for (const [k, v] of Object.entries(value)) {
        const key = path.endsWith('.byType') ? next(`${path}{key}`) : k
        out[key] = walk(v, `${path}.${k}`)
      }
      return out
    }
    return value
  }
  return { model: walk(base, '$'), paths }
}

// Fields not shown verbatim, by design: a memory's full id (its anchor is shown), a context
// item's memory id and timestamp (the anchor and day are shown), the audit head's full hash
// (shortened).
const NOT_VERBATIM = [/^\$\.memories\.items\[\d+\]\.id$/, /^\$\.context\.items\[\d+\]\.memory\.(id|timestamp)$/, /^\$\.health\.audit\.head\.hash$/]

test('every string of the model is escaped text: no script, no handler, no link, no inline style; the policy hashes the one stylesheet', () => {
  const { model, paths } = hostileModel()
  const page = renderReport(model)
  checkPage(page)
  for (const escaped of ESCAPED) assert.ok(page.includes(escaped), `shown escaped: ${escaped.slice(0, 60)}`)
  assert.ok(page.includes('&lt;script&gt;'))
  // Each hostile string is on the page, with its marker: the test reaches every field it claims to.
  const missing = []
  for (let i = 0; i < paths.length; i++) if (!page.includes(`~${i}~`)) missing.push(paths[i])
  const unexpected = missing.filter((p) => !NOT_VERBATIM.some((re) => re.test(p)))
  assert.deepEqual(unexpected, [], 'every other string field is shown')
  assert.ok(paths.length > 150, `the model has many strings (${paths.length})`)
})

test('hostile strings in every field, each alone (no marker), and as anchors, agents and states', () => {
  for (const sample of HOSTILE) {
    const { model } = hostileModel(exampleModel(), [sample])
    // Without the marker: a field that is exactly the hostile string.
    const bare = JSON.parse(JSON.stringify(model), (k, v) => (typeof v === 'string' ? v.replace(/~\d+~$/, '') : v))
    checkPage(renderReport(bare))
  }
})

test('a section that could not be read says so, escaped, and the rest of the page renders', () => {
  const model = exampleModel()
  const error = (code) => ({ error: { code, message: '<b>disk</b> "gone" \u202E' } })
  model.memories = error('E_IO')
  model.health.wal = error('E_WAL_LOCKED')
  model.health.deadLetters = error('E_DL')
  model.health.quarantined = error('E_Q')
  model.health.tombstones = error('E_T')
  model.health.manifest = error('E_M')
  model.health.audit = error('E_A')
  model.health.recovery = error('E_R')
  model.context = error('E_CTX')
  model.ledger = error('E_LEDGER')
  const page = renderReport(model)
  checkPage(page)
  for (const code of ['E_IO', 'E_WAL_LOCKED', 'E_DL', 'E_Q', 'E_T', 'E_M', 'E_A', 'E_R', 'E_CTX', 'E_LEDGER']) {
    assert.ok(page.includes(`could not read: ${code}: &lt;b&gt;disk&lt;/b&gt; &quot;gone&quot; [U+202E]`), code)
  }
  // Unknown counts are a dash, without a data-count to misread.
  assert.match(page, /data-testid="memories-total" data-unknown="true">—</)
  assert.match(page, /data-testid="wal-records" data-unknown="true">—</)
  const whole = exampleModel()
  whole.health = error('E_HEALTH')
  assert.ok(renderReport(whole).includes('could not read: E_HEALTH: '))
})

test('empty, null and wrongly typed models render a page without NaN or Infinity', () => {
  const odd = [null, 0, -1, 1e308, Number.MAX_SAFE_INTEGER, true, 'text', [], {}, [null], [{}], { error: 'not an object' }]
  const models = [null, undefined, 42, 'model', [], {}, { memories: null, health: null, context: null, ledger: null, charts: null }]
  for (const value of odd) {
    // Every field of the example set to the same odd value, at each depth.
    const walk = (v) => (Array.isArray(v) ? v.map(walk) : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).map((k) => [k, value])) : value)
    const flat = Object.fromEntries(Object.keys(exampleModel()).map((k) => [k, value]))
    const shallow = Object.fromEntries(Object.entries(exampleModel()).map(([k, v]) => [k, walk(v)]))
    models.push(flat, shallow)
  }
  for (const model of models) checkPage(renderReport(model))
  const page = renderReport({})
  assert.match(page, /data-testid="memories-empty"/)
  assert.match(page, /Memories per day: no data/)
})

test('the example model gives stable counts, groups and lists', () => {
  const page = renderReport(exampleModel())
  checkPage(page)
  const counts = {}
  for (const [, id, n] of page.matchAll(/data-testid="([a-z-]+)" data-count="(\d+)"/g)) counts[id] = Number(n)
  assert.deepEqual(counts, {
    'memories-total': 12,
    'memories-pending': 1,
    'wal-sessions': 5,
    'wal-segments': 6,
    'wal-records': 31,
    'wal-last-seq': 31,
    'dead-letters': 2,
    quarantined: 1,
    tombstones: 3,
    'audit-entries': 12,
  })
  assert.match(page, /data-testid="manifest-state" data-state="stale">stale</)
  assert.match(page, /data-testid="recovery-state" data-state="running">running</)
  const occurrences = (testid) => page.split(`data-testid="${testid}"`).length - 1
  assert.equal(occurrences('memory'), 12)
  assert.equal(occurrences('pending'), 1)
  assert.equal(occurrences('agent-group'), 3)
  assert.equal(occurrences('wal-session'), 5)
  assert.equal(occurrences('manifest-problem'), 2)
  assert.equal(occurrences('quarantined-file'), 1)
  assert.equal(occurrences('context-item'), 4)
  assert.equal(occurrences('context-dropped'), 2)
  assert.equal(occurrences('ledger-decision'), 3)
  assert.equal(occurrences('ledger-question'), 2)
  assert.equal(occurrences('ledger-bead'), 1)
  assert.equal(occurrences('chart-per-day'), 1)
  assert.equal(occurrences('chart-tokens-by-type'), 1)
  assert.equal(occurrences('chart-attention'), 1)
  assert.equal(occurrences('token-bar'), 1)
  assert.ok(page.includes('>shared (every agent) <'))
  assert.ok(page.includes('redacted</dt><dd data-testid="redacted">EMAIL ×2</dd>'))
  assert.ok(page.includes('API_KEY, EMAIL'))
  assert.ok(page.includes('80% grounded (4 of 5 claims), threshold 95%'))
  assert.ok(page.includes('Memories per day: 5 days, 12 memories, most on 2026-11-20 (3)'))

  // Shared first, then agents by name; within an agent, types in a fixed order; within a type, newest first.
  const articles = [...page.matchAll(/<article id="(m-[0-9a-f]{12})"[^>]*data-type="([^"]*)" data-agent="([^"]*)"[^>]*>.*?<time>([^<]*)<\/time>/g)]
  assert.equal(articles.length, 12)
  const agents = [...new Set(articles.map((a) => a[3]))]
  assert.deepEqual(agents, ['', 'main', 'reviewer'])
  for (let i = 1; i < articles.length; i++) {
    const [prev, cur] = [articles[i - 1], articles[i]]
    if (prev[3] === cur[3] && prev[2] === cur[2]) assert.ok(prev[4] >= cur[4], `newest first: ${prev[4]} then ${cur[4]}`)
  }
  const mainTypes = [...new Set(articles.filter((a) => a[3] === 'main').map((a) => a[2]))]
  assert.deepEqual(mainTypes, ['decision', 'milestone', 'error', 'interaction'])
  // Anchors are ids and text only.
  for (const a of articles) assert.ok(page.includes(`<span class="anchor" data-testid="anchor">#${a[1]}</span>`))
})

test('a truncated list says how many memories are not shown; duplicate or malformed anchors are not ids', () => {
  const model = exampleModel()
  model.memories.items = model.memories.items.slice(0, 5)
  model.memories.shown = 5
  model.memories.truncated = true
  model.memories.items[1].anchor = model.memories.items[0].anchor
  model.memories.items[2].anchor = 'm-1 onclick=x'
  // An agent that is not a string is still not "shared": only null is.
  model.memories.items[3].agent = 7
  const page = renderReport(model)
  assert.match(page, /data-testid="agent-group" data-agent="7"><h3>7 /)
  checkPage(page)
  assert.match(page, /data-testid="memories-truncated"><strong data-testid="memories-not-shown" data-count="7">7<\/strong> memories are not shown \(showing 5 of 12\)/)
  assert.equal(page.split(`id="${model.memories.items[0].anchor}"`).length - 1, 1, 'an id appears once')
  assert.ok(!page.includes('id="m-1 onclick=x"'))
  assert.ok(page.includes('#m-1 onclick=x'))
})

test('charts: empty data, one point, 1,000 days, zero tokens, usage above red, huge counts stay finite and described', () => {
  const finite = (svg) => {
    const text = String(svg)
    assert.ok(!/NaN|Infinity/.test(text), text.slice(0, 200))
    assert.ok(!text.includes('style='))
    assert.match(text, /^<svg [^>]*role="img" aria-label="[^"]+"><title>[^<]+<\/title>/)
    return text
  }
  assert.match(finite(perDayChart([])), /Memories per day: no data/)
  assert.match(finite(perDayChart(null)), /no data/)
  assert.match(finite(perDayChart([{ day: '2026-11-20', count: 9 }])), /Memories per day: 1 day, 9 memories, most on 2026-11-20 \(9\)/)
  assert.match(finite(perDayChart([{ day: '2026-11-20', count: 0 }])), /1 day, 0 memories/)

  const days = []
  for (let i = 0; i < 1000; i++) days.push({ day: new Date(Date.UTC(2024, 0, 1) + i * 86_400_000).toISOString().slice(0, 10), count: i === 500 ? 1e6 : i % 5 })
  const long = finite(perDayChart(days))
  assert.match(long, /Memories per month \(1,000 days grouped into 33 months\)/)
  assert.ok(long.split('<rect class="bar"').length - 1 === 33)
  const medium = finite(perDayChart(days.slice(0, 200)))
  assert.match(medium, /Memories per week \(200 days grouped into 29 weeks\)/)
  assert.ok(finite(perDayChart(days.slice(0, 90))).includes('Memories per day: 90 days'))
  // Days that are not dates are kept, each its own bar, and still finite.
  finite(perDayChart(days.map((d, i) => ({ day: `<day ${i}>`, count: d.count }))))
  finite(perDayChart([{ day: 'a', count: 1e308 }, { day: 'b', count: 1e308 }, { day: 'c', count: -5 }, { day: 'd', count: 'x' }]))

  assert.match(finite(tokensByTypeChart([])), /Tokens per memory type: no data/)
  assert.match(finite(tokensByTypeChart([{ type: 'decision', tokens: 0 }, { type: 'error', tokens: 0 }])), /2 types, 0 tokens/)
  assert.match(finite(tokensByTypeChart([{ type: 'decision', tokens: 1234 }])), /most in decision \(1,234\)/)

  const levels = [{ name: 'yellow', tokens: 5000 }, { name: 'orange', tokens: 10000 }, { name: 'red', tokens: 15000 }]
  const above = finite(attentionChart({ windowTokens: 200000, levels, usage: 40000, usageLabel: 'tokens' }))
  assert.match(above, /at or past red/)
  assert.match(above, />44,000</, 'the scale ends at 1.1 times the usage')
  const below = finite(attentionChart({ levels, usage: 100 }))
  assert.match(below, /below every level/)
  assert.match(below, />16,500</, 'the scale ends at 1.1 times the red level')
  for (const name of ['yellow 5,000', 'orange 10,000', 'red 15,000']) assert.ok(below.includes(`>${name}<`), name)
  finite(attentionChart({ levels: [], usage: 0 }))
  finite(attentionChart({ levels: [{ name: 'constructor', tokens: 1e308 }], usage: 1e308 }))
  assert.match(finite(attentionChart(null)), /Attention budget: no data/)

  finite(tokenBar([], 0))
  finite(tokenBar([{ tokens: 0 }], 0))
  assert.match(finite(tokenBar([{ tokens: 1500 }, { tokens: 900 }], 1900)), /2,400 of 1,900 tokens \(126%\)/)
  finite(tokenBar([{ tokens: 1e308 }, { tokens: 1e308 }], 1))
})

test('html: interpolations are escaped unless made by html; look-alike objects are text', () => {
  const bold = html`<b>${'<i>'}</b>`
  assert.ok(isSafeHtml(bold))
  assert.ok(Object.isFrozen(bold))
  assert.equal(String(bold), '<b>&lt;i&gt;</b>')
  assert.equal(String(html`${bold}${[bold, '<', null, undefined, false, 0, 1.5]}`), '<b>&lt;i&gt;</b><b>&lt;i&gt;</b>&lt;01.5')
  assert.equal(String(html`<p title="${'" onmouseover="x'}">`), '<p title="&quot; onmouseover=&quot;x">')

  // Whatever a JSON value or a copy carries, it is not markup.
  const lookAlikes = [
    { __html: '<b>' },
    JSON.parse(JSON.stringify(bold)),
    { ...bold },
    Object.assign(Object.create(Object.getPrototypeOf(bold)), { text: '<b>' }),
    { toString: () => '<b>' },
    { toString: '<b>' },
    ['<b>'],
  ]
  for (const value of lookAlikes) {
    const out = String(html`${value}`)
    assert.ok(!out.includes('<b>'), `${JSON.stringify(value)} → ${out}`)
    assert.ok(!isSafeHtml(value))
  }
  assert.equal(toHtmlString({ __html: '<b>' }), '[object Object]')
  assert.equal(String(joinHtml(['<a>', bold], html`<br>`)), '&lt;a&gt;<br><b>&lt;i&gt;</b>')
  // Only a template can write markup.
  assert.throws(() => html(['<b>']), TypeError)
  assert.throws(() => html(Object.assign(['<b>'], { raw: ['<b>'] })), TypeError)
})

test('escapeHtml: markup characters, bidi and invisible characters, controls, surrogates', () => {
  assert.equal(escapeHtml(`&<>"'`), '&amp;&lt;&gt;&quot;&#39;')
  assert.equal(escapeHtml(null), '')
  assert.equal(escapeHtml(undefined), '')
  assert.equal(escapeHtml(12), '12')
  assert.equal(escapeHtml('a\nb\tc\r\nd'), 'a\nb\tc\nd')
  for (const cp of [0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c, 0x200b, 0xfeff, 0x2028, 0xe0041]) {
    const hex = cp.toString(16).toUpperCase().padStart(4, '0')
    assert.equal(escapeHtml(`x${String.fromCodePoint(cp)}y`), `x[U+${hex}]y`)
  }
  for (let cp = 0; cp < 0xa0; cp++) {
    if (cp === 0x0a || cp === 0x09 || (cp >= 0x20 && cp < 0x7f)) continue
    assert.equal(escapeHtml(String.fromCharCode(cp)), `[U+${cp.toString(16).toUpperCase().padStart(4, '0')}]`)
  }
  assert.equal(escapeHtml('\uD800'), '\uFFFD')
  assert.equal(escapeHtml('\uDC00\uD800'), '\uFFFD\uFFFD')
  assert.equal(escapeHtml('😀é€'), '😀é€')
  const long = `${'<'.repeat(200_000)}\u202E`
  assert.equal(escapeHtml(long), `${'&lt;'.repeat(200_000)}[U+202E]`)
})

test('10,000 memories render into one page with every article', () => {
  const model = exampleModel()
  const base = model.memories.items
  const items = []
  for (let i = 0; i < 10_000; i++) {
    const m = { ...base[i % base.length] }
    m.anchor = `m-${i.toString(16).padStart(12, '0')}`
    m.timestamp = new Date(Date.UTC(2024, 0, 1) + i * 3_600_000).toISOString()
    items.push(m)
  }
  model.memories = { ...model.memories, items, total: 10_000, shown: 10_000 }
  const page = renderReport(model)
  assert.equal(page.split('data-testid="memory"').length - 1, 10_000)
  assert.equal(page.split('<style>').length - 1, 1)
})
