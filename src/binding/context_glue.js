// JavaScript half of `buildContext` (src/binding/context.rs), compiled once per JS thread.
//
// Reading 100,000 candidate objects property by property through N-API costs ~100 ns per
// property; the same loop in JavaScript costs a few. So JavaScript validates the input and hands
// the native side what ordering needs in bulk (all timestamps in one string, importances in a
// Float64Array); the native side reads summaries, triggers and solutions itself, and only for the
// items whose turn comes. On the way back, JavaScript builds the result objects from typed arrays.
;(function () {
  'use strict'
  const MAX_TIMESTAMP = 64
  const fail = (field, expected) => ({ bad: field, expected })
  // Checks are written inline: this loop runs once per candidate (100,000 of them in the
  // benchmark), and it touches only what ordering needs. Summaries, triggers and solutions are
  // checked by the native side when it reads them (each costs a cache miss here). A timestamp
  // holding a line break would split in two on the native side, which notices the count
  // mismatch and finds the culprit itself. `v - v !== 0` is true for NaN and the infinities,
  // false for every finite number.

  // Caller objects may have getters that throw, or be Proxies (revoked ones throw on every
  // touch): each list is read inside try/catch, and a throw becomes an ordinary verdict naming
  // where it happened (`i` and `field` track that without building a string per candidate).
  // Each candidate object is read once and handed back in `items`, so that the native side
  // reads its texts from the very object that was checked here.
  const unreadable = 'readable (a getter or Proxy trap threw)'

  function sessions(list) {
    let i = -1
    let field = ''
    try {
      if (!Array.isArray(list)) return fail('sessions', 'an array')
      const n = list.length
      const importance = new Float64Array(n)
      const items = new Array(n)
      // join() builds a flat string in one go; a string built with += is a rope of 2n pieces
      // that costs several ms to flatten when the native side reads it.
      const timestamps = new Array(n + 1)
      for (i = 0; i < n; i++) {
        field = ''
        const s = list[i]
        if (typeof s !== 'object' || s === null) return fail(`sessions[${i}]`, 'an object')
        field = '.timestamp'
        const t = s.timestamp
        if (typeof t !== 'string' || t.length > MAX_TIMESTAMP) return fail(`sessions[${i}].timestamp`, 'an RFC 3339 timestamp string')
        field = '.importance'
        const v = s.importance
        if (v !== undefined && v !== null) {
          if (typeof v !== 'number' || v - v !== 0) return fail(`sessions[${i}].importance`, 'a finite number')
          importance[i] = v
        }
        timestamps[i] = t
        items[i] = s
      }
      timestamps[n] = '' // every timestamp is followed by a line break
      return { timestamps: timestamps.join('\n'), list: timestamps, importance, items }
    } catch {
      return fail(i < 0 ? 'sessions' : `sessions[${i}]${field}`, unreadable)
    }
  }

  function learnings(list) {
    let i = -1
    let field = ''
    try {
      if (!Array.isArray(list)) return fail('learnings', 'an array')
      const n = list.length
      const importance = new Float64Array(n)
      const used = new Uint8Array(n)
      const items = new Array(n)
      const lastUsed = new Array(n + 1)
      for (i = 0; i < n; i++) {
        field = ''
        const l = list[i]
        if (typeof l !== 'object' || l === null) return fail(`learnings[${i}]`, 'an object')
        field = '.importance'
        const v = l.importance
        if (v !== undefined && v !== null) {
          if (typeof v !== 'number' || v - v !== 0) return fail(`learnings[${i}].importance`, 'a finite number')
          importance[i] = v
        }
        field = '.lastUsed'
        const t = l.lastUsed
        if (t === undefined || t === null) {
          lastUsed[i] = ''
        } else {
          if (typeof t !== 'string' || t.length > MAX_TIMESTAMP) return fail(`learnings[${i}].lastUsed`, 'an RFC 3339 timestamp string')
          lastUsed[i] = t
          used[i] = 1
        }
        items[i] = l
      }
      lastUsed[n] = ''
      return { lastUsed: lastUsed.join('\n'), list: lastUsed, used, importance, items }
    } catch {
      return fail(i < 0 ? 'learnings' : `learnings[${i}]${field}`, unreadable)
    }
  }

  function result(text, tokens, limit, kinds, names, included, dropped) {
    // included: [kind codes, indices, tokens, truncated flags]; dropped: [kind codes, indices,
    // reason codes]. `dropped` is built on first read: with many candidates it is most of the
    // work, and the usual caller (prepending `text` to a prompt) never reads it.
    const [ik, ii, it, itr] = included
    const inc = new Array(ii.length)
    for (let i = 0; i < ii.length; i++) {
      inc[i] = { kind: kinds[ik[i]], index: ii[i], tokens: it[i], truncated: itr[i] === 1 }
    }
    const out = { text, tokens, limit, included: inc, dropped: undefined }
    let list = null
    Object.defineProperty(out, 'dropped', {
      enumerable: true,
      configurable: true,
      get() {
        if (list === null) {
          const [dk, di, dr] = dropped
          list = new Array(di.length)
          for (let i = 0; i < di.length; i++) list[i] = { item: { kind: kinds[dk[i]], index: di[i] }, reason: names[dr[i]] }
        }
        return list
      },
      set(value) {
        list = value
      },
    })
    return out
  }

  return { sessions, learnings, result }
})()
