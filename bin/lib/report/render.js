'use strict'
// The page of `loa report`: one self-contained HTML file showing what an agent's memory keeps.
//
// It is built only from `html` templates (html.js), so every string of the model, each of which
// may be hostile (a memory is whatever an agent was told), is text on the page. The page has no
// script, no link and loads nothing: its Content-Security-Policy allows nothing but the one
// <style> element, by hash, so even a rendering bug could not run or fetch anything. Charts are
// inline SVG (svg.js). Every part of the model may be missing, null, of the wrong type, or an
// `{ error: { code, message } }` object when gather.js could not read it: each section says so
// and the rest of the page still renders.
//
// Element ids and `data-testid` attributes are stable: the browser test reads the rendered page.

const crypto = require('node:crypto')
const { html, escapeHtml } = require('./html.js')
const { perDayChart, tokensByTypeChart, attentionChart, tokenBar, formatNumber } = require('./svg.js')

// The one stylesheet. It holds no quote, `<`, `>` or `&`, so it is the same text escaped or not
// (checked below), and no `url(`: the page loads nothing.
const CSS = `
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #f5f6f8; color: #1f2430; font: 14px/1.5 system-ui, -apple-system, Segoe UI, Roboto, Helvetica Neue, Arial, sans-serif; }
main { max-width: 1200px; margin: 0 auto; padding: 24px 32px 48px; }
header.page { background: #ffffff; border-bottom: 1px solid #dde1e7; }
header.page .inner { max-width: 1200px; margin: 0 auto; padding: 20px 32px 16px; }
h1 { font-size: 22px; margin: 0 0 10px; }
h2 { font-size: 18px; margin: 0 0 12px; padding-bottom: 6px; border-bottom: 1px solid #e3e6eb; }
h3 { font-size: 16px; margin: 18px 0 8px; }
h4 { font-size: 14px; margin: 14px 0 6px; color: #3d4554; text-transform: capitalize; }
section.part { background: #ffffff; border: 1px solid #dde1e7; border-radius: 8px; padding: 18px 22px; margin: 18px 0; }
dl.meta { display: grid; grid-template-columns: repeat(4, minmax(0, 1fr)); gap: 4px 24px; margin: 0; }
dl.meta dt, dl.kv dt { font-size: 12px; color: #5b6472; }
dl.meta dd { margin: 0; font-weight: 600; overflow-wrap: anywhere; }
.cards { display: grid; grid-template-columns: repeat(6, minmax(0, 1fr)); gap: 10px; }
.card { border: 1px solid #e3e6eb; border-radius: 6px; padding: 10px 12px; background: #fafbfc; }
.big { display: block; font-size: 26px; font-weight: 650; line-height: 1.2; font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
.caption { font-size: 12px; color: #5b6472; }
.unknown { color: #8a93a3; }
.badge { display: inline-block; white-space: nowrap; padding: 0 8px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #eef1f5; color: #3d4554; }
.good { background: #e3f4e8; color: #1f6b3a; }
.warn { background: #fdf3d7; color: #7a5a00; }
.bad { background: #fbe3e3; color: #9b1c1c; }
.pending { background: #e6eefc; color: #234a9c; }
.error { color: #9b1c1c; background: #fbe3e3; padding: 6px 10px; border-radius: 6px; overflow-wrap: anywhere; }
.note { color: #5b6472; }
article.memory { border: 1px solid #e3e6eb; border-left: 4px solid #5b8def; border-radius: 6px; padding: 8px 12px; margin: 8px 0; background: #ffffff; break-inside: avoid; }
article.memory.is-pending { border-left-color: #e2b93b; }
.memory-head { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 12px; color: #5b6472; }
.anchor { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; color: #3d4554; }
p.content { white-space: pre-wrap; overflow-wrap: anywhere; margin: 6px 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f7f9; border: 1px solid #e3e6eb; border-radius: 6px; padding: 10px 12px; font: 12px/1.5 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
dl.facts { display: flex; flex-wrap: wrap; gap: 2px 18px; margin: 4px 0 0; font-size: 12px; }
dl.facts div, dl.kv div { display: flex; gap: 6px; }
dl.facts dt { color: #5b6472; }
dl.facts dd, dl.kv dd { margin: 0; overflow-wrap: anywhere; }
dl.kv { display: grid; grid-template-columns: repeat(auto-fit, minmax(200px, 1fr)); gap: 4px 24px; margin: 6px 0; }
ul.inline { display: inline; list-style: none; margin: 0; padding: 0; }
ul.inline li { display: inline-block; margin: 0 4px 2px 0; padding: 0 6px; border-radius: 4px; background: #eef1f5; }
.warn-text { color: #7a5a00; }
.bad-text { color: #9b1c1c; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 12px; font-size: 13px; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-bottom: 1px solid #e3e6eb; overflow-wrap: anywhere; }
th { font-size: 12px; color: #5b6472; font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.health-grid { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 0 28px; }
.chart { display: block; max-width: 100%; height: auto; margin: 6px 0 16px; }
.chart text { fill: #1f2430; font-family: system-ui, -apple-system, Segoe UI, Roboto, Helvetica Neue, Arial, sans-serif; }
footer { color: #5b6472; font-size: 12px; text-align: center; padding: 12px; }
@media print {
  body { background: #ffffff; }
  main { padding: 0; max-width: none; }
  section.part { border: none; padding: 0; margin: 12px 0; break-inside: auto; }
  h2 { break-after: avoid; }
}
`

if (escapeHtml(CSS) !== CSS || CSS.includes('url(')) throw new Error('report CSS must not need escaping nor load anything')

/** Base64 SHA-256 of the page's one stylesheet, as its Content-Security-Policy names it. */
const STYLE_HASH = crypto.createHash('sha256').update(CSS, 'utf8').digest('base64')

const SHARED = 'shared (every agent)'
const TYPE_ORDER = ['decision', 'milestone', 'learning', 'error', 'interaction']
const ANCHOR = /^[A-Za-z][A-Za-z0-9_-]{0,127}$/

// ---------------------------------------------------------------------------------------------
// Reading a model whose every field may be missing or of the wrong type.
// ---------------------------------------------------------------------------------------------

const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v)
const list = (v) => (Array.isArray(v) ? v : [])
const failed = (part) => isObject(part) && isObject(part.error)

/** A string field as text: strings as they are, finite numbers written out, anything else empty. */
function str(v) {
  if (typeof v === 'string') return v
  if (typeof v === 'number' && Number.isFinite(v)) return String(v)
  return ''
}

/** A count: a finite number, or null when the model has none. */
const count = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null)

/** A field shown as text, or a dash when it is empty. */
const shown = (v, none = '—') => str(v) || none

/** A score or ratio with two decimals, or a dash. */
const decimal = (v) => (count(v) === null ? '—' : v.toFixed(2))

/** A number with thousands separators, or a dash. */
const number = (v) => (count(v) === null ? '—' : formatNumber(v))

/** `1 entry`, `12 entries`, `— entries`. */
const counted = (v, one, many) => `${number(v)} ${v === 1 ? one : many}`

/** A ratio as a whole percentage, or a dash. */
function percent(v) {
  const p = count(v) === null ? NaN : Math.round(v * 100)
  return Number.isFinite(p) ? `${p}%` : '—'
}

function errorNote(part, testid) {
  return html`<p class="error" data-testid="${testid}-error">could not read: ${shown(part.error.code, 'E_UNKNOWN')}: ${shown(part.error.message, 'no message')}</p>`
}

/** A state word as one of a few badge classes (never a class name taken from the model). */
function badge(state, testid, good, warn) {
  const s = str(state)
  const tone = good.includes(s) ? 'good' : warn.includes(s) ? 'warn' : s ? 'bad' : ''
  return html`<span class="badge ${tone}" data-testid="${testid}" data-state="${s}">${s || 'unknown'}</span>`
}

// ---------------------------------------------------------------------------------------------
// Sections.
// ---------------------------------------------------------------------------------------------

function header(model) {
  const agent = str(model.agent)
  const query = str(model.query)
  return html`<header class="page" id="top" data-testid="header"><div class="inner"><h1>Loa memory report</h1><dl class="meta"><div><dt>Workspace</dt><dd data-testid="workspace">${shown(model.workspace)}</dd></div><div><dt>Generated</dt><dd data-testid="generated">${shown(model.generatedAt)}</dd></div><div><dt>Agent</dt><dd data-testid="agent-filter" data-agent="${agent}">${agent || 'every agent'}</dd></div><div><dt>Query</dt><dd data-testid="query">${query || 'none (the most recent session)'}</dd></div></dl></div></header>`
}

/** A big number with `data-count` equal to its text; an unknown count is a dash without `data-count`. */
function countCard(testid, value, caption) {
  const n = count(value)
  const big = n === null
    ? html`<span class="big unknown" data-testid="${testid}" data-unknown="true">—</span>`
    : html`<span class="big" data-testid="${testid}" data-count="${String(n)}">${String(n)}</span>`
  return html`<div class="card">${big}<span class="caption">${caption}</span></div>`
}

function stateCard(testid, state, caption, good, warn) {
  const s = str(state)
  const tone = good.includes(s) ? '' : warn.includes(s) ? ' warn-text' : ' bad-text'
  return html`<div class="card"><span class="big${s ? tone : ' unknown'}" data-testid="${testid}" data-state="${s}">${s || '—'}</span><span class="caption">${caption}</span></div>`
}

/** A part of the model when it was read, or an empty object (its counts then show as unknown). */
const readable = (part) => (isObject(part) && !failed(part) ? part : {})

function summary(model) {
  const memories = readable(model.memories)
  const health = isObject(model.health) ? model.health : {}
  const wal = readable(health.wal)
  const quarantined = Array.isArray(health.quarantined) ? health.quarantined.length : null
  return html`<section class="part" id="summary" data-testid="summary"><h2>Summary</h2><div class="cards">${[
    countCard('memories-total', memories.total, 'memories'),
    countCard('memories-pending', memories.pending, 'pending (not yet consolidated)'),
    countCard('wal-sessions', wal.sessions, 'WAL sessions'),
    countCard('wal-segments', wal.segments, 'WAL segments'),
    countCard('wal-records', wal.records, 'WAL records'),
    countCard('wal-last-seq', wal.lastSeq, 'last WAL sequence'),
    countCard('dead-letters', readable(health.deadLetters).count, 'dead letters'),
    countCard('quarantined', quarantined, 'quarantined files'),
    countCard('tombstones', health.tombstones, 'tombstones'),
    stateCard('manifest-state', readable(health.manifest).state, 'manifest', ['verified'], ['stale', 'absent']),
    stateCard('recovery-state', readable(health.recovery).state, 'recovery', ['running'], ['never run']),
    countCard('audit-entries', readable(health.audit).entries, 'audit entries'),
  ]}</div></section>`
}

/** `EMAIL ×2, PHONE`: kinds and counts only, never what was redacted. */
function redactions(redacted) {
  const parts = []
  for (const r of list(redacted)) {
    if (!isObject(r)) continue
    const n = count(r.count)
    parts.push(n !== null && n !== 1 ? `${str(r.kind) || '?'} ×${formatNumber(n)}` : str(r.kind) || '?')
  }
  return parts.join(', ')
}

function memoryArticle(m, usedIds) {
  const anchor = str(m.anchor)
  // Only a well-formed, unused anchor becomes an id: a page's ids must be unique for #anchors to work.
  const id = ANCHOR.test(anchor) && !usedIds.has(anchor) ? anchor : ''
  if (id) usedIds.add(id)
  const agent = str(m.agent)
  const type = str(m.type)
  const pending = m.pending === true
  const tags = list(m.tags).map(str).filter(Boolean)
  const gates = list(m.gates).map(str).filter(Boolean)
  const redacted = redactions(m.redacted)
  const confidence = count(m.confidence)
  const expires = str(m.expiresAt)
  return html`<article${id ? html` id="${id}"` : ''} class="memory${pending ? ' is-pending' : ''}" data-testid="memory" data-type="${type}" data-agent="${agent}"${pending ? html` data-pending="true"` : ''}><div class="memory-head"><span class="anchor" data-testid="anchor">#${anchor}</span><time>${shown(m.timestamp)}</time><span>${shown(type, 'no type')}</span><span>session ${shown(m.sessionId)}</span><span>score ${decimal(m.score)}</span>${confidence !== null ? html`<span>confidence ${decimal(confidence)}</span>` : ''}${pending ? html`<span class="badge pending" data-testid="pending">pending (not yet consolidated)</span>` : ''}</div><p class="content">${str(m.content)}</p><dl class="facts"><div><dt>tags</dt><dd>${tags.length ? html`<ul class="inline">${tags.map((t) => html`<li>${t}</li>`)}</ul>` : 'none'}</dd></div><div><dt>gates passed</dt><dd data-testid="gates">${gates.length ? html`<ul class="inline">${gates.map((g) => html`<li>${g}</li>`)}</ul>` : 'none'}</dd></div>${redacted ? html`<div><dt>redacted</dt><dd data-testid="redacted">${redacted}</dd></div>` : ''}${expires ? html`<div><dt>expires</dt><dd>${expires}</dd></div>` : ''}</dl></article>`
}

/** Known types first, in a fixed order, then any other in name order. */
function typeRank(a, b) {
  const ia = TYPE_ORDER.indexOf(a)
  const ib = TYPE_ORDER.indexOf(b)
  if (ia !== ib) return (ia === -1 ? TYPE_ORDER.length : ia) - (ib === -1 ? TYPE_ORDER.length : ib) || (a < b ? -1 : a > b ? 1 : 0)
  return a < b ? -1 : a > b ? 1 : 0
}

function typeSummary(byType) {
  if (!isObject(byType)) return ''
  const parts = []
  for (const [type, n] of Object.entries(byType)) if (count(n) !== null) parts.push(`${type} ${formatNumber(n)}`)
  return parts.join(', ')
}

function memoriesSection(model) {
  const part = model.memories
  const head = html`<h2>Memories</h2>`
  if (failed(part)) return html`<section class="part" id="memories" data-testid="memories">${head}${errorNote(part, 'memories')}</section>`
  const memories = isObject(part) ? part : {}
  const items = list(memories.items).filter(isObject)

  // Groups keyed by agent (null: shared), then by type; a JSON key cannot collide with the symbol.
  const SHARED_KEY = Symbol('shared')
  const groups = new Map()
  const group = (agent) => {
    const key = agent === null || agent === undefined ? SHARED_KEY : str(agent)
    let g = groups.get(key)
    if (!g) groups.set(key, (g = { agent: key === SHARED_KEY ? null : key, total: null, byType: null, types: new Map() }))
    return g
  }
  for (const entry of list(memories.byAgent)) {
    if (!isObject(entry)) continue
    const g = group(entry.agent)
    g.total = count(entry.total)
    g.byType = entry.byType
  }
  for (const m of items) {
    const g = group(m.agent)
    const type = str(m.type)
    let bucket = g.types.get(type)
    if (!bucket) g.types.set(type, (bucket = []))
    bucket.push({ m, at: str(m.timestamp) })
  }

  const ordered = [...groups.values()].sort((a, b) => (a.agent === null ? -1 : b.agent === null ? 1 : a.agent < b.agent ? -1 : a.agent > b.agent ? 1 : 0))
  const usedIds = new Set()
  const sections = []
  for (const g of ordered) {
    const name = g.agent === null ? SHARED : g.agent || '(unnamed agent)'
    let shownHere = 0
    const typeBlocks = []
    for (const type of [...g.types.keys()].sort(typeRank)) {
      const bucket = g.types.get(type)
      shownHere += bucket.length
      bucket.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0))
      typeBlocks.push(html`<h4 data-testid="type-group" data-type="${type}">${type || 'no type'} <span class="note">(${formatNumber(bucket.length)})</span></h4>${bucket.map((e) => memoryArticle(e.m, usedIds))}`)
    }
    const total = g.total === null ? shownHere : g.total
    const types = typeSummary(g.byType)
    sections.push(
      html`<section class="agent-group" data-testid="agent-group" data-agent="${g.agent ?? ''}"${g.agent === null ? html` data-shared="true"` : ''}><h3>${name} <span class="note">— ${formatNumber(total)} ${total === 1 ? 'memory' : 'memories'}${types ? `: ${types}` : ''}</span></h3>${typeBlocks.length ? typeBlocks : html`<p class="note">none shown</p>`}</section>`,
    )
  }

  const total = count(memories.total)
  const shownCount = count(memories.shown) ?? items.length
  let truncated = ''
  if (memories.truncated === true) {
    const hidden = total === null ? null : Math.max(0, total - shownCount)
    truncated = hidden === null
      ? html`<p class="badge warn" data-testid="memories-truncated">Not every memory is shown (showing ${formatNumber(shownCount)})</p>`
      : html`<p class="badge warn" data-testid="memories-truncated"><strong data-testid="memories-not-shown" data-count="${String(hidden)}">${String(hidden)}</strong> ${hidden === 1 ? 'memory is' : 'memories are'} not shown (showing ${formatNumber(shownCount)} of ${formatNumber(total)})</p>`
  }
  const intro = html`<p class="note">Grouped by agent, then by type, newest first. Each memory's anchor (#m-…) can be appended to this page's address.</p>`
  return html`<section class="part" id="memories" data-testid="memories">${head}${intro}${truncated}${sections.length ? sections : html`<p class="note" data-testid="memories-empty">No memories.</p>`}</section>`
}

function walPart(wal) {
  if (failed(wal)) return errorNote(wal, 'wal')
  if (!isObject(wal)) return html`<p class="note">not reported</p>`
  const rows = list(wal.bySession)
    .filter(isObject)
    .map((s) => html`<tr data-testid="wal-session"><td>${shown(s.id)}</td><td class="num">${number(s.records)}</td><td class="num">${number(s.lastSeq)}</td><td>${shown(s.lastWrite)}</td></tr>`)
  return html`<p>${wal.ok === true ? html`<span class="badge good" data-testid="wal-ok">ok</span>` : wal.ok === false ? html`<span class="badge bad" data-testid="wal-ok">problems</span>` : ''} ${counted(wal.sessions, 'session', 'sessions')}, ${counted(wal.segments, 'segment', 'segments')}, ${counted(wal.bytes, 'byte', 'bytes')}, ${counted(wal.records, 'record', 'records')}, last sequence ${number(wal.lastSeq)}</p>${rows.length ? html`<table data-testid="wal-table"><thead><tr><th>session</th><th class="num">records</th><th class="num">last seq</th><th>last write</th></tr></thead><tbody>${rows}</tbody></table>` : ''}`
}

function deadLettersPart(part) {
  if (failed(part)) return errorNote(part, 'dead-letters')
  if (!isObject(part)) return html`<p class="note">not reported</p>`
  const unreadable = count(part.unreadable)
  return html`<p data-testid="health-dead-letters">${counted(part.count, 'dead letter', 'dead letters')}${unreadable ? html`, ${formatNumber(unreadable)} unreadable` : ''}</p>`
}

function quarantinedPart(part) {
  if (failed(part)) return errorNote(part, 'quarantined')
  const paths = list(part).map(str)
  if (!paths.length) return html`<p class="note" data-testid="health-quarantined">none</p>`
  return html`<ul data-testid="health-quarantined">${paths.map((p) => html`<li data-testid="quarantined-file">${p}</li>`)}</ul>`
}

function manifestPart(part) {
  if (failed(part)) return errorNote(part, 'manifest')
  if (!isObject(part)) return html`<p class="note">not reported</p>`
  const problems = list(part.problems)
    .filter(isObject)
    .map((p) => html`<tr data-testid="manifest-problem"><td>${shown(p.kind)}</td><td>${shown(p.path)}</td><td>${shown(p.detail)}</td></tr>`)
  return html`<p>${badge(part.state, 'health-manifest-state', ['verified'], ['stale', 'absent'])} ${shown(part.path, 'no manifest file')}</p><dl class="kv"><div><dt>signed by</dt><dd>${shown(part.signedBy, 'unsigned')}</dd></div><div><dt>files</dt><dd>${number(part.files)}</dd></div><div><dt>created</dt><dd>${shown(part.createdAt)}</dd></div></dl>${str(part.note) ? html`<p class="note">${str(part.note)}</p>` : ''}${problems.length ? html`<table><thead><tr><th>problem</th><th>path</th><th>detail</th></tr></thead><tbody>${problems}</tbody></table>` : html`<p class="note">no problems</p>`}`
}

/** A hash shortened for reading; the full value is not needed to recognise it. */
const shortHash = (h) => (str(h).length > 16 ? `${str(h).slice(0, 16)}…` : shown(h))

function auditPart(part) {
  if (failed(part)) return errorNote(part, 'audit')
  if (!isObject(part)) return html`<p class="note">not reported</p>`
  if (part.present === false) return html`<p class="note" data-testid="health-audit">no audit chain in this workspace</p>`
  const head = isObject(part.head) ? part.head : null
  const checkpoint = isObject(part.checkpoint) ? part.checkpoint : null
  const problems = list(part.problems)
    .filter(isObject)
    .map((p) => html`<li data-testid="audit-problem">${shown(p.kind)}: ${shown(p.detail)}</li>`)
  return html`<p data-testid="health-audit">${part.ok === true ? html`<span class="badge good">intact</span>` : part.ok === false ? html`<span class="badge bad">broken</span>` : ''} ${counted(part.entries, 'entry', 'entries')} in ${counted(part.segments, 'segment', 'segments')}</p><dl class="kv"><div><dt>head</dt><dd>${head ? html`seq ${number(head.seq)} <span class="anchor">${shortHash(head.hash)}</span>` : 'none'}</dd></div><div><dt>checkpoint</dt><dd>${checkpoint ? html`seq ${number(checkpoint.seq)} at ${shown(checkpoint.ts)}` : 'none'}</dd></div></dl>${problems.length ? html`<ul>${problems}</ul>` : html`<p class="note">no problems</p>`}`
}

function recoveryPart(part) {
  if (failed(part)) return errorNote(part, 'recovery')
  if (!isObject(part)) return html`<p class="note">not reported</p>`
  const cycles = count(part.degradedCycles)
  return html`<p>${badge(part.state, 'health-recovery-state', ['running'], ['never run'])} trust: ${shown(part.trust)}</p>${cycles || str(part.degradedSince) ? html`<p class="note">degraded for ${counted(cycles, 'cycle', 'cycles')} since ${shown(part.degradedSince)}</p>` : ''}`
}

function tombstonesPart(part) {
  if (failed(part)) return errorNote(part, 'tombstones')
  return html`<p data-testid="health-tombstones">${counted(part, 'tombstone', 'tombstones')}</p>`
}

function healthSection(model) {
  const head = html`<h2>Workspace health</h2>`
  const health = model.health
  if (failed(health)) return html`<section class="part" id="health" data-testid="health">${head}${errorNote(health, 'health')}</section>`
  const h = isObject(health) ? health : {}
  const block = (id, title, body) => html`<div id="${id}" data-testid="${id}"><h3>${title}</h3>${body}</div>`
  return html`<section class="part" id="health" data-testid="health">${head}<div class="health-grid">${[
    block('health-wal', 'Write-ahead log', walPart(h.wal)),
    block('health-manifest', 'Manifest', manifestPart(h.manifest)),
    block('health-audit-chain', 'Audit chain', auditPart(h.audit)),
    block('health-recovery', 'Recovery', recoveryPart(h.recovery)),
    block('health-dead-letter-queue', 'Dead letters', deadLettersPart(h.deadLetters)),
    block('health-quarantine', 'Quarantined files', quarantinedPart(h.quarantined)),
    block('health-tombstone-count', 'Tombstones', tombstonesPart(h.tombstones)),
  ]}</div></section>`
}

function explainText(e) {
  if (!isObject(e)) return ''
  const parts = []
  for (const key of ['score', 'relevance', 'recency', 'importance', 'speaker', 'period', 'mood']) {
    if (count(e[key]) !== null) parts.push(`${key} ${decimal(e[key])}`)
  }
  const matched = list(e.matched).map(str).filter(Boolean)
  if (matched.length) parts.push(`matched: ${matched.join(', ')}`)
  return parts.join(' · ')
}

function contextItemRow(item, i) {
  const m = isObject(item.memory) ? item.memory : null
  const what = m
    ? html`<span class="anchor">#${str(m.anchor)}</span> ${shown(m.type, 'no type')} ${str(m.timestamp).slice(0, 10)}${typeof m.agent === 'string' ? ` (${m.agent})` : ''}`
    : shown(item.label)
  return html`<tr data-testid="context-item"><td class="num">${i + 1}</td><td class="num" data-testid="context-item-tokens">${number(item.tokens)}</td><td>${item.truncated === true ? html`<span class="badge warn">truncated</span>` : ''}</td><td>${what}</td><td>${explainText(item.explain)}</td></tr>`
}

function contextSection(model) {
  const head = html`<h2>Next prompt's context</h2>`
  const part = model.context
  if (failed(part)) return html`<section class="part" id="context" data-testid="context">${head}${errorNote(part, 'context')}</section>`
  if (!isObject(part)) return html`<section class="part" id="context" data-testid="context">${head}<p class="note">No context was assembled.</p></section>`
  const items = list(part.items).filter(isObject)
  const dropped = list(part.dropped).filter(isObject)
  const query = str(part.query)
  const text = str(part.text)
  return html`<section class="part" id="context" data-testid="context">${head}<p data-testid="context-query">For ${query ? html`the query <strong>${query}</strong>` : 'the most recent session, no query'}.</p><dl class="kv"><div><dt>budget</dt><dd data-testid="context-budget">${number(part.budget)}</dd></div><div><dt>limit</dt><dd data-testid="context-limit">${number(part.limit)}</dd></div><div><dt>tokens used</dt><dd data-testid="context-tokens">${number(part.tokens)}</dd></div></dl>${tokenBar(items, part.limit)}${items.length ? html`<table data-testid="context-items"><thead><tr><th class="num">#</th><th class="num">tokens</th><th></th><th>item</th><th>why</th></tr></thead><tbody>${items.map(contextItemRow)}</tbody></table>` : html`<p class="note">Nothing included.</p>`}<h3>Dropped</h3>${dropped.length ? html`<ul>${dropped.map((d) => html`<li data-testid="context-dropped">${shown(d.label)}: ${shown(d.reason)}</li>`)}</ul>` : html`<p class="note">Nothing dropped.</p>`}<h3>Text</h3>${text ? html`<pre data-testid="context-text">${text}</pre>` : html`<p class="note">No text.</p>`}</section>`
}

function ledgerSection(model) {
  const head = html`<h2>Lossless Ledger</h2>`
  const part = model.ledger
  if (failed(part)) return html`<section class="part" id="ledger" data-testid="ledger">${head}${errorNote(part, 'ledger')}</section>`
  if (!isObject(part)) return html`<section class="part" id="ledger" data-testid="ledger">${head}<p class="note">No ledger.</p></section>`
  const none = html`<p class="note">none</p>`
  const active = list(part.activeContext).filter(isObject)
  const decisions = list(part.decisions).filter(isObject)
  const questions = list(part.openQuestions).map(str)
  const beads = list(part.beads).filter(isObject)
  const g = isObject(part.grounding) ? part.grounding : null
  const groundingErrors = g ? list(g.errors).map(str).filter(Boolean) : []
  return html`<section class="part" id="ledger" data-testid="ledger">${head}<h3>Active context</h3>${active.length ? html`<dl class="kv" data-testid="ledger-active">${active.map((a) => html`<div><dt>${shown(a.key)}</dt><dd>${shown(a.value)}</dd></div>`)}</dl>` : none}<h3>Decisions</h3>${decisions.length ? html`<ul>${decisions.map((d) => html`<li data-testid="ledger-decision"><time>${shown(d.date, 'undated')}</time>: ${str(d.text)}</li>`)}</ul>` : none}<h3>Open questions</h3>${questions.length ? html`<ul>${questions.map((q) => html`<li data-testid="ledger-question">${q}</li>`)}</ul>` : none}<h3>Beads</h3>${beads.length ? beads.map((b) => {
    const steps = list(b.nextSteps).map(str)
    return html`<div data-testid="ledger-bead"><p><span class="anchor">${shown(b.id)}</span>${str(b.title) ? html` ${str(b.title)}` : ''}${str(b.status) ? html` <span class="badge">${str(b.status)}</span>` : ''} <span class="note">${counted(b.decisions, 'decision', 'decisions')}</span></p>${steps.length ? html`<ul>${steps.map((s) => html`<li>${s}</li>`)}</ul>` : ''}</div>`
  }) : none}<h3>Grounding of the day</h3>${g ? html`<p data-testid="grounding" data-status="${str(g.status)}">${badge(g.status, 'grounding-status', ['pass'], ['warn', 'disabled'])} ${percent(g.ratio)} grounded (${number(g.groundedClaims)} of ${number(g.totalClaims)} claims), threshold ${percent(g.threshold)}</p>${groundingErrors.length ? html`<ul>${groundingErrors.map((e) => html`<li>${e}</li>`)}</ul>` : ''}` : none}</section>`
}

function plotsSection(model) {
  const charts = isObject(model.charts) ? model.charts : {}
  return html`<section class="part" id="plots" data-testid="plots"><h2>Plots</h2><h3>Memories per day</h3>${perDayChart(charts.perDay)}<h3>Tokens per memory type</h3>${tokensByTypeChart(charts.tokensByType)}<h3>Attention budget</h3>${attentionChart(charts.attention)}</section>`
}

/**
 * The whole report page for a model built by gather.js (see example.js for its shape): one HTML
 * document with no script and no link, its one stylesheet allowed by hash in its
 * Content-Security-Policy. Any field may be missing, null or hostile.
 * @param {unknown} model
 * @returns {string}
 */
function renderReport(model) {
  const m = isObject(model) ? model : {}
  const version = count(m.version)
  const page = html`<!doctype html>
<html lang="en">
<head>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'sha256-${STYLE_HASH}'; img-src data:; base-uri 'none'; form-action 'none'">
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Loa memory report</title>
<style>${CSS}</style>
</head>
<body>
${header(m)}
<main>
${summary(m)}
${memoriesSection(m)}
${healthSection(m)}
${contextSection(m)}
${ledgerSection(m)}
${plotsSection(m)}
</main>
<footer>Made by loa report${version !== null ? ` (model version ${version})` : ''}. This page runs no script and loads nothing.</footer>
</body>
</html>
`
  return String(page)
}

module.exports = { renderReport, STYLE_HASH }
