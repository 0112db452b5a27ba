'use strict'
// Escaping by construction for `loa report`: markup is only ever written as the literal parts of
// an `html` tagged template, and everything interpolated into one is text, escaped, unless it is
// itself the result of `html`. A memory, a path or a ledger line therefore cannot become markup
// however it is spelled, and a JSON value cannot pass for escaped markup: what marks a fragment as
// escaped is a private class field (`#markup`) of a class private to this module, which no parsed
// or copied object has and no property can imitate.
//
// Attribute values are always written quoted by the template, `name="${value}"`: `escapeHtml`
// escapes both quote characters, so a value cannot end its attribute. Unquoted attribute values are
// never written.

/**
 * A fragment of markup built by `html`: frozen, its text in a private field. Only code of this
 * class can read or set that field, and `#markup in value` is true only of objects this class
 * constructed, so a parsed or copied object can never pass for one.
 */
class SafeHtml {
  #markup
  constructor(markup) {
    this.#markup = markup
    Object.freeze(this)
  }

  /** The markup of a fragment, or undefined for anything else. */
  static markupOf(value) {
    return typeof value === 'object' && value !== null && #markup in value ? value.#markup : undefined
  }

  /** The markup, for joining into a larger document. */
  toString() {
    return this.#markup
  }
}
Object.freeze(SafeHtml.prototype)
Object.freeze(SafeHtml)

const fragment = (text) => new SafeHtml(text)

const ENTITIES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

// One pass over the text: the five markup characters; CRLF (kept as one line break, so Windows
// text is not littered with U+000D marks); C0 controls but tab and newline, DEL and C1; every
// format character (\p{Cf}: the bidirectional embeddings, overrides and isolates, LRM/RLM/ALM,
// zero-width spaces and joiners, the BOM, tag characters); the line and paragraph separators and
// the Hangul fillers, which draw nothing either; lone surrogates (\p{Cs} only matches unpaired
// halves under the u flag).
const SPECIAL = /\r\n|[&<>"']|[\u0000-\u0008\u000B-\u001F\u007F-\u009F]|\p{Cf}|[\u2028\u2029\u115F\u1160\u3164\uFFA0]|\p{Cs}/gu

/** `[U+202E]`: an invisible or reordering character made visible as plain text (valid in attributes too). */
function visibleCodePoint(ch) {
  return `[U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}]`
}

function replaceSpecial(ch) {
  const entity = ENTITIES[ch]
  if (entity !== undefined) return entity
  if (ch === '\r\n') return '\n'
  const code = ch.charCodeAt(0)
  if (ch.length === 1 && code >= 0xd800 && code <= 0xdfff) return '\uFFFD'
  return visibleCodePoint(ch)
}

/**
 * Text as HTML, safe in element content and in a double- or single-quoted attribute value.
 * Escapes `& < > " '`; shows bidirectional controls, other invisible format characters and C0/C1
 * controls (but `\n` and `\t`) as visible `[U+XXXX]`; replaces lone surrogates with U+FFFD.
 * `null` and `undefined` are the empty string; anything else is converted with `String` first
 * (an object that cannot be converted is the empty string).
 * @param {unknown} text
 * @returns {string}
 */
function escapeHtml(text) {
  if (text === null || text === undefined) return ''
  let s
  if (typeof text === 'string') s = text
  else {
    try {
      s = String(text)
    } catch {
      // A parsed object with a `toString` that is not a function, or a symbol: nothing to show.
      return ''
    }
  }
  return s.replace(SPECIAL, replaceSpecial)
}

/** One interpolated value as markup. */
function interpolate(value) {
  if (value === null || value === undefined || value === false) return ''
  if (typeof value === 'object') {
    const known = SafeHtml.markupOf(value)
    if (known !== undefined) return known
    if (Array.isArray(value)) {
      let out = ''
      for (let i = 0; i < value.length; i++) out += interpolate(value[i])
      return out
    }
  }
  return escapeHtml(value)
}

/**
 * Tagged template: `html\`<p class="x">${text}</p>\`` returns a frozen `SafeHtml`. The literal parts
 * are markup; each interpolation is escaped with `escapeHtml` unless it is a `SafeHtml` made here;
 * arrays are joined (each element handled the same way); `null`, `undefined` and `false` are empty;
 * numbers are written with `String`. Attribute values must be written quoted: `name="${value}"`.
 * Calling it other than as a tag (with a plain array of strings) throws: only source code writes markup.
 * @param {TemplateStringsArray} strings
 * @param {...unknown} values
 * @returns {SafeHtml}
 */
function html(strings, ...values) {
  // A template's strings array is frozen and carries `raw`; a parsed or built array is not frozen.
  if (!Array.isArray(strings) || !Object.isFrozen(strings) || !Array.isArray(strings.raw)) {
    throw new TypeError('html must be used as a tagged template')
  }
  // `+=` rather than join: V8 keeps the pieces as a rope and copies the page once, when it is
  // written, instead of once for each level of nesting.
  let out = strings[0]
  for (let i = 0; i < values.length; i++) out += interpolate(values[i]) + strings[i + 1]
  return fragment(out)
}

/**
 * Join fragments (or text, escaped) with a separator that is itself a fragment or text.
 * @param {Iterable<unknown>} items
 * @param {unknown} [separator]
 * @returns {SafeHtml}
 */
function joinHtml(items, separator = '') {
  const sep = interpolate(separator)
  const parts = []
  for (const item of items) parts.push(interpolate(item))
  return fragment(parts.join(sep))
}

/**
 * Whether a value is a fragment made by `html` (not merely shaped like one).
 * @param {unknown} value
 * @returns {boolean}
 */
function isSafeHtml(value) {
  return SafeHtml.markupOf(value) !== undefined
}

/**
 * The markup of a fragment made by `html`, as a string; anything else is escaped as text.
 * @param {unknown} value
 * @returns {string}
 */
function toHtmlString(value) {
  return interpolate(value)
}

module.exports = { html, escapeHtml, joinHtml, isSafeHtml, toHtmlString }
