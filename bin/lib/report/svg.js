'use strict'
// The report's charts, drawn as inline SVG by `loa report` itself (no library, no script): the
// page is one file that must open anywhere, offline, under a Content-Security-Policy that allows
// no script and only the one hashed <style> element. So colours and sizes are SVG presentation
// attributes (`fill`, `stroke`, `font-size`) or classes styled by that element, never `style="..."`.
//
// Each chart says what it shows in words (`role="img"`, `aria-label` and `<title>`), and every
// number it draws is also written as text. Every label goes through `html`, so a hostile day, type
// or level name is text. Inputs come from a JSON model: every number is checked to be finite, every
// division has a non-zero divisor, so the output never holds NaN or Infinity.

const { html } = require('./html.js')

const WIDTH = 760
const DAY_MS = 86_400_000
/** More bars than this and a day-per-bar chart is unreadable: days are grouped into weeks or months. */
const MAX_BARS = 90

/** A finite number, or `fallback`. */
function finite(value, fallback = 0) {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback
}

/** A count for drawing: finite and not negative. */
function amount(value) {
  return Math.max(0, finite(value))
}

/** Text of a label that should be a string; numbers are shown, anything else is empty. */
function label(value) {
  if (typeof value === 'string') return value
  if (typeof value === 'number' && Number.isFinite(value)) return String(value)
  return ''
}

/** A coordinate rounded to a tenth of a pixel (always finite). */
function px(value) {
  const n = finite(value)
  return Math.round(n * 10) / 10
}

/**
 * A number as people read it: thousands separated, at most two decimals; not finite is `0`.
 * @param {unknown} value
 * @returns {string}
 */
function formatNumber(value) {
  const n = finite(value)
  // Integers are most of what is shown, thousands of times on a large page: grouped by hand, as
  // the locale formatter costs ten microseconds a call.
  if (Number.isSafeInteger(n)) return String(n).replace(/\B(?=(\d{3})+$)/g, ',')
  return n.toLocaleString('en-US', { maximumFractionDigits: 2 })
}

/** A sum that stays finite however large the counts a model claims. */
const add = (a, b) => Math.min(Number.MAX_VALUE, a + b)

/** A whole percentage of `part` in `whole`, or null when it has no finite value. */
function percentOf(part, whole) {
  const p = whole > 0 ? Math.round((part / whole) * 100) : NaN
  return Number.isFinite(p) ? p : null
}

const plural = (n, one, many) => `${formatNumber(n)} ${n === 1 ? one : many}`

/** The frame every chart shares: its description as `aria-label` and `<title>`, its size. */
function frame(testid, height, description, body) {
  const h = px(height)
  return html`<svg class="chart" data-testid="${testid}" viewBox="0 0 ${WIDTH} ${h}" width="${WIDTH}" height="${h}" role="img" aria-label="${description}"><title>${description}</title>${body}</svg>`
}

/** A short chart that says there is nothing to draw (rather than axes scaled on nothing). */
function noData(testid, description) {
  return frame(testid, 40, description, html`<rect class="empty" x="0.5" y="0.5" width="${WIDTH - 1}" height="39" rx="4" fill="#f6f7f9" stroke="#d5d9e0"></rect><text x="${WIDTH / 2}" y="25" text-anchor="middle" font-size="13" fill="#5b6472">${description}</text>`)
}

const ISO_DAY = /^\d{4}-\d{2}-\d{2}$/

/** Milliseconds of a `YYYY-MM-DD` day at UTC midnight, or NaN. */
function dayTime(day) {
  return ISO_DAY.test(day) ? Date.parse(`${day}T00:00:00Z`) : NaN
}

/** The bucket a day falls in: itself, the Monday starting its week, or its `YYYY-MM` month. */
function bucketOf(day, unit) {
  if (unit === 'day') return day
  const t = dayTime(day)
  // A day that is not a date keeps a bucket of its own rather than vanishing from the totals.
  if (Number.isNaN(t)) return day
  if (unit === 'month') return day.slice(0, 7)
  const sinceMonday = (new Date(t).getUTCDay() + 6) % 7
  return new Date(t - sinceMonday * DAY_MS).toISOString().slice(0, 10)
}

/** Day, week or month: the finest that keeps the chart at about MAX_BARS bars. */
function chooseUnit(days) {
  if (days.length <= MAX_BARS) return 'day'
  let first = Infinity
  let last = -Infinity
  for (const d of days) {
    const t = dayTime(d.day)
    if (Number.isNaN(t)) continue
    if (t < first) first = t
    if (t > last) last = t
  }
  const span = last >= first ? (last - first) / DAY_MS + 1 : days.length
  return span <= MAX_BARS * 7 ? 'week' : 'month'
}

/**
 * Bar chart of memories per day (`[{ day: 'YYYY-MM-DD', count }]`, in the order given). Over 90
 * days are grouped into weeks (Monday first) or months, and the title says so.
 * @param {unknown} perDay
 * @returns {import('./html.js').SafeHtml}
 */
function perDayChart(perDay) {
  const testid = 'chart-per-day'
  const days = []
  if (Array.isArray(perDay)) {
    for (const p of perDay) if (p && typeof p === 'object') days.push({ day: label(p.day), count: amount(p.count) })
  }
  if (days.length === 0) return noData(testid, 'Memories per day: no data')

  const unit = chooseUnit(days)
  const buckets = new Map()
  let total = 0
  for (const d of days) {
    const key = bucketOf(d.day, unit)
    buckets.set(key, add(buckets.get(key) ?? 0, d.count))
    total = add(total, d.count)
  }
  const bars = [...buckets]
  let best = bars[0]
  for (const bar of bars) if (bar[1] > best[1]) best = bar
  const top = best[1]

  const dayCount = plural(days.length, 'day', 'days')
  const where = unit === 'day' ? `most on ${best[0]}` : unit === 'week' ? `most in the week of ${best[0]}` : `most in ${best[0]}`
  const grouped = unit === 'day' ? `Memories per day: ${dayCount}` : `Memories per ${unit} (${dayCount} grouped into ${plural(bars.length, unit, `${unit}s`)})`
  const description = `${grouped}, ${plural(total, 'memory', 'memories')}, ${where} (${formatNumber(top)})`

  const n = bars.length
  const left = 56
  const right = 16
  const plotWidth = WIDTH - left - right
  const slot = plotWidth / n
  const barWidth = Math.max(0.5, slot * 0.8)
  // Counts are written on the bars: across when a bar is wide enough, upright when it is not, and
  // left to each bar's <title> when bars are too thin to carry text at all.
  const across = slot >= 34
  const upright = !across && slot >= 6
  const topPad = upright ? 70 : 26
  const plotHeight = 160
  const base = topPad + plotHeight
  const height = base + 44
  const scale = top > 0 ? plotHeight / top : 0

  const parts = []
  for (let i = 0; i < n; i++) {
    const [key, count] = bars[i]
    const h = count * scale
    const x = left + i * slot + (slot - barWidth) / 2
    const y = base - h
    const cx = x + barWidth / 2
    parts.push(html`<rect class="bar" x="${px(x)}" y="${px(y)}" width="${px(barWidth)}" height="${px(h)}" fill="#5b8def"><title>${key}: ${formatNumber(count)}</title></rect>`)
    if (across) parts.push(html`<text x="${px(cx)}" y="${px(y - 4)}" text-anchor="middle" font-size="11">${formatNumber(count)}</text>`)
    else if (upright) parts.push(html`<text x="${px(cx + 3)}" y="${px(y - 4)}" transform="rotate(-90 ${px(cx + 3)} ${px(y - 4)})" font-size="${slot >= 9 ? 10 : 7}">${formatNumber(count)}</text>`)
  }
  // Every bar is named under it when there is room; otherwise the axis ends are.
  let xLabels
  if (slot >= 80) {
    xLabels = bars.map(([key], i) => html`<text x="${px(left + i * slot + slot / 2)}" y="${base + 18}" text-anchor="middle" font-size="11">${key}</text>`)
  } else {
    xLabels = html`<text x="${left}" y="${base + 18}" font-size="11">${bars[0][0]}</text>${n > 1 ? html`<text x="${WIDTH - right}" y="${base + 18}" text-anchor="end" font-size="11">${bars[n - 1][0]}</text>` : ''}`
  }
  const unitName = unit === 'day' ? 'day' : unit === 'week' ? 'week starting' : 'month'
  return frame(
    testid,
    height,
    description,
    html`<line x1="${left}" y1="${topPad}" x2="${left}" y2="${base}" stroke="#8a93a3"></line><line x1="${left}" y1="${base}" x2="${WIDTH - right}" y2="${base}" stroke="#8a93a3"></line><text x="${left - 6}" y="${base + 4}" text-anchor="end" font-size="11">0</text><text x="${left - 6}" y="${topPad + 4}" text-anchor="end" font-size="11">${formatNumber(top)}</text><text x="12" y="${px(topPad + plotHeight / 2)}" transform="rotate(-90 12 ${px(topPad + plotHeight / 2)})" text-anchor="middle" font-size="11" fill="#5b6472">memories</text>${parts}${xLabels}<text x="${px(left + plotWidth / 2)}" y="${base + 36}" text-anchor="middle" font-size="11" fill="#5b6472">${unitName}</text>`,
  )
}

/**
 * Horizontal bar chart of tokens per memory type (`[{ type, tokens }]`, in the order given).
 * @param {unknown} tokensByType
 * @returns {import('./html.js').SafeHtml}
 */
function tokensByTypeChart(tokensByType) {
  const testid = 'chart-tokens-by-type'
  const rows = []
  if (Array.isArray(tokensByType)) {
    for (const r of tokensByType) if (r && typeof r === 'object') rows.push({ type: label(r.type), tokens: amount(r.tokens) })
  }
  if (rows.length === 0) return noData(testid, 'Tokens per memory type: no data')

  let total = 0
  let best = rows[0]
  for (const r of rows) {
    total = add(total, r.tokens)
    if (r.tokens > best.tokens) best = r
  }
  const description = `Tokens per memory type: ${plural(rows.length, 'type', 'types')}, ${plural(total, 'token', 'tokens')}, most in ${best.type || '(unnamed)'} (${formatNumber(best.tokens)})`

  const labelWidth = 150
  const valueWidth = 110
  const rowHeight = 26
  const top = 8
  const barMax = WIDTH - labelWidth - valueWidth - 10
  const scale = best.tokens > 0 ? barMax / best.tokens : 0
  const parts = []
  for (let i = 0; i < rows.length; i++) {
    const { type, tokens } = rows[i]
    const y = top + i * rowHeight
    const w = tokens * scale
    parts.push(
      html`<text x="${labelWidth - 8}" y="${y + 16}" text-anchor="end" font-size="12">${type}</text><rect class="bar" x="${labelWidth}" y="${y + 4}" width="${px(w)}" height="16" fill="#7c6fd6"><title>${type}: ${formatNumber(tokens)} tokens</title></rect><text x="${px(labelWidth + w + 6)}" y="${y + 16}" font-size="12">${formatNumber(tokens)}</text>`,
    )
  }
  const base = top + rows.length * rowHeight
  return frame(
    testid,
    base + 26,
    description,
    html`${parts}<line x1="${labelWidth}" y1="${top}" x2="${labelWidth}" y2="${base}" stroke="#8a93a3"></line><text x="${labelWidth}" y="${base + 16}" font-size="11" fill="#5b6472">0</text><text x="${labelWidth + barMax}" y="${base + 16}" text-anchor="end" font-size="11" fill="#5b6472">${formatNumber(best.tokens)} tokens</text>`,
  )
}

// Maps, not object literals: a level named `constructor` must not pick up Object.prototype's.
const LEVEL_COLOURS = new Map([['yellow', '#d4a514'], ['orange', '#e07b24'], ['red', '#cc3b3b']])
const USAGE_COLOURS = new Map([['none', '#4f9d69'], ['yellow', '#e2b93b'], ['orange', '#e8934a'], ['red', '#d9534f']])

/**
 * The attention budget: a scale from 0 to 1.1 times the larger of the red level (the highest level
 * when none is named red) and the usage, the levels as labelled lines, the usage as a filled bar.
 * @param {unknown} attention `{ windowTokens, levels: [{ name, tokens }], usage, usageLabel }`
 * @returns {import('./html.js').SafeHtml}
 */
function attentionChart(attention) {
  const testid = 'chart-attention'
  if (!attention || typeof attention !== 'object') return noData(testid, 'Attention budget: no data')
  const levels = []
  if (Array.isArray(attention.levels)) {
    for (const l of attention.levels) {
      if (l && typeof l === 'object' && typeof l.tokens === 'number' && Number.isFinite(l.tokens) && l.tokens >= 0) levels.push({ name: label(l.name), tokens: l.tokens })
    }
  }
  const usage = amount(attention.usage)
  const usageLabel = label(attention.usageLabel) || 'tokens used'
  let red = 0
  let namedRed = false
  let reached = null
  for (const l of levels) {
    if (l.name === 'red') {
      red = namedRed ? Math.max(red, l.tokens) : l.tokens
      namedRed = true
    } else if (!namedRed) red = Math.max(red, l.tokens)
    if (usage >= l.tokens && (reached === null || l.tokens >= reached.tokens)) reached = l
  }
  const max = Math.min(Number.MAX_VALUE, Math.max(red, usage) * 1.1) || 1

  const window = finite(attention.windowTokens, 0) > 0 ? ` of a ${formatNumber(attention.windowTokens)}-token window` : ''
  const levelWords = levels.length ? levels.map((l) => `${l.name || '(unnamed)'} at ${formatNumber(l.tokens)}`).join(', ') : 'no levels'
  const state = levels.length ? (reached ? `at or past ${reached.name || '(unnamed)'}` : 'below every level') : 'no level to compare'
  const description = `Attention budget: ${formatNumber(usage)} ${usageLabel}${window}; ${levelWords}; ${state}`

  const left = 20
  const plotWidth = WIDTH - 40
  const x = (tokens) => left + (tokens / max) * plotWidth
  const labelRows = Math.max(1, levels.length)
  const barTop = 14 + labelRows * 14
  const barHeight = 26
  const parts = [
    html`<rect class="track" x="${left}" y="${barTop}" width="${plotWidth}" height="${barHeight}" fill="#eef1f5" stroke="#d5d9e0"></rect>`,
    html`<rect class="usage" x="${left}" y="${barTop}" width="${px(x(usage) - left)}" height="${barHeight}" fill="${USAGE_COLOURS.get(reached ? reached.name : 'none') ?? USAGE_COLOURS.get('orange')}"><title>${formatNumber(usage)} ${usageLabel}</title></rect>`,
  ]
  for (let i = 0; i < levels.length; i++) {
    const l = levels[i]
    const lx = x(l.tokens)
    const colour = LEVEL_COLOURS.get(l.name) ?? '#6b7280'
    // Levels close together would print over each other: each has a row of its own.
    const ly = 14 + i * 14
    const anchor = lx > WIDTH - 140 ? 'end' : 'start'
    const tx = anchor === 'end' ? lx - 4 : lx + 4
    parts.push(
      html`<line x1="${px(lx)}" y1="${ly - 8}" x2="${px(lx)}" y2="${barTop + barHeight + 6}" stroke="${colour}" stroke-width="2"></line><text x="${px(tx)}" y="${ly}" text-anchor="${anchor}" font-size="11" fill="${colour}">${l.name} ${formatNumber(l.tokens)}</text>`,
    )
  }
  const axis = barTop + barHeight + 20
  parts.push(
    html`<text x="${left}" y="${axis}" font-size="11" fill="#5b6472">0</text><text x="${left + plotWidth}" y="${axis}" text-anchor="end" font-size="11" fill="#5b6472">${formatNumber(max)}</text><text x="${left}" y="${axis + 18}" font-size="12">${formatNumber(usage)} ${usageLabel}${window}</text>`,
  )
  return frame(testid, axis + 28, description, parts)
}

/**
 * The next prompt's context as one bar: a segment per included item, proportional to its tokens,
 * out of the limit (or of the items' total when they exceed it).
 * @param {unknown} items `[{ tokens, label, memory: { anchor } }]`
 * @param {unknown} limit
 * @returns {import('./html.js').SafeHtml}
 */
function tokenBar(items, limit) {
  const testid = 'token-bar'
  const list = Array.isArray(items) ? items.filter((i) => i && typeof i === 'object') : []
  const cap = amount(limit)
  let used = 0
  for (const item of list) used = add(used, amount(item.tokens))
  const whole = Math.max(cap, used) || 1
  const percent = percentOf(used, cap)
  const description = cap > 0
    ? `Context tokens: ${plural(list.length, 'item', 'items')}, ${formatNumber(used)} of ${formatNumber(cap)} tokens${percent === null ? '' : ` (${percent}%)`}`
    : `Context tokens: ${plural(list.length, 'item', 'items')}, ${formatNumber(used)} tokens, no limit given`

  const left = 0
  const plotWidth = WIDTH
  const parts = [html`<rect class="track" x="0.5" y="0.5" width="${WIDTH - 1}" height="28" fill="#eef1f5" stroke="#d5d9e0"></rect>`]
  let offset = 0
  for (let i = 0; i < list.length; i++) {
    const tokens = amount(list[i].tokens)
    const x = left + (offset / whole) * plotWidth
    const w = (tokens / whole) * plotWidth
    offset += tokens
    const name = list[i].memory && typeof list[i].memory === 'object' && typeof list[i].memory.anchor === 'string' ? `#${list[i].memory.anchor}` : label(list[i].label)
    parts.push(html`<rect class="segment" x="${px(x)}" y="1" width="${px(w)}" height="27" fill="${i % 2 ? '#8fb3f5' : '#5b8def'}" stroke="#ffffff"><title>${i + 1}. ${name}: ${formatNumber(tokens)} tokens</title></rect>`)
    if (w >= 22) parts.push(html`<text x="${px(x + w / 2)}" y="19" text-anchor="middle" font-size="11" fill="#ffffff">${i + 1}</text>`)
  }
  if (cap > 0 && used > cap) {
    const lx = (cap / whole) * plotWidth
    parts.push(html`<line x1="${px(lx)}" y1="0" x2="${px(lx)}" y2="34" stroke="#cc3b3b" stroke-width="2"></line>`)
  }
  parts.push(html`<text x="0" y="46" font-size="12">${description.slice('Context tokens: '.length)}</text>`)
  return frame(testid, 54, description, parts)
}

module.exports = { perDayChart, tokensByTypeChart, attentionChart, tokenBar, formatNumber }
