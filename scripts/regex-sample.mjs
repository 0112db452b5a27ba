// Random strings matching a regex, for the scripts that write redaction test data from rule sets'
// regexes (scripts/redact-holdout.mjs, scripts/redact-gitleaks-rest.mjs). The subset gitleaks'
// rules use: literals, escapes, `\d`, `\w`, classes, groups with `|`, `?`, `*`, `+`, `{m,n}`;
// `(?i)`, `\b`, `^` and `$` are dropped.

/** `generate(re)` drawing with `int(n)` (an integer below `n`): a seeded caller gets the same strings. */
export function regexSampler(int) {
  return (re) => generate(re, int)
}

function generate(re, int) {
  re = re.replace(/\(\?i\)|\(\?-i:|\\b|\^|\$/g, (m) => (m === '(?-i:' ? '(?:' : ''))
  let i = 0
  const members = (body) => {
    const out = []
    for (let k = 0; k < body.length; k++) {
      let c = body[k]
      if (c === '\\') {
        c = body[++k]
        if (c === 'd') out.push(...'0123456789')
        else if (c === 'w') out.push(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_')
        else out.push(c)
      } else if (body[k + 1] === '-' && k + 2 < body.length) {
        for (let x = c.charCodeAt(0); x <= body.charCodeAt(k + 2); x++) out.push(String.fromCharCode(x))
        k += 2
      } else out.push(c)
    }
    return out
  }
  function alternation() {
    const alts = [[]]
    while (i < re.length && re[i] !== ')') {
      if (re[i] === '|') {
        alts.push([])
        i++
      } else alts[alts.length - 1].push(atom())
    }
    return alts
  }
  function atom() {
    let gen
    const c = re[i]
    if (c === '(') {
      i += re.startsWith('(?:', i) ? 3 : 1
      const alts = alternation()
      i++
      gen = () => alts[int(alts.length)].map((g) => g()).join('')
    } else if (c === '[') {
      let close = i + 1
      while (re[close] !== ']' || re[close - 1] === '\\') close++
      const m = members(re.slice(i + 1, close))
      i = close + 1
      gen = () => m[int(m.length)]
    } else if (c === '\\') {
      const m = members(re.slice(i, i + 2))
      i += 2
      gen = () => m[int(m.length)]
    } else {
      i++
      gen = () => c
    }
    let min = 1
    let max = 1
    if (re[i] === '?') [min, max, i] = [0, 1, i + 1]
    else if (re[i] === '*') [min, max, i] = [0, 8, i + 1]
    else if (re[i] === '+') [min, max, i] = [1, 8, i + 1]
    else if (re[i] === '{') {
      const m = re.slice(i).match(/^\{(\d+)(?:(,)(\d*))?\}/)
      min = Number(m[1])
      max = m[2] ? (m[3] ? Number(m[3]) : min + 40) : min
      i += m[0].length
    }
    return () => {
      let s = ''
      const n = min + int(max - min + 1)
      for (let k = 0; k < n; k++) s += gen()
      return s
    }
  }
  const alts = alternation()
  return alts[int(alts.length)].map((g) => g()).join('')
}
