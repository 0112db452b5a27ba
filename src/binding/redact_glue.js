// JavaScript half of `redact` (src/binding/redact.rs), compiled once per JS thread.
//
// Findings built as objects through N-API cost about 100 ns per property; here a literal with a
// fixed shape costs a few. The native side passes all findings as one string of UTF-16 units,
// 21 per finding: start and end (two units each, low half first), the index of the kind in
// `kinds` | the index of the method in `methods` << 8, and the 16 hex digits of the
// fingerprint; `kinds` and `methods` are arrays made once per thread.
;(function () {
  'use strict'
  const UNITS = 21
  function redaction(text, blocked, data, kinds, methods) {
    const findings = []
    for (let i = 0; i < data.length; i += UNITS) {
      const tag = data.charCodeAt(i + 4)
      findings.push({
        kind: kinds[tag & 0xff],
        start: data.charCodeAt(i) + data.charCodeAt(i + 1) * 65536,
        end: data.charCodeAt(i + 2) + data.charCodeAt(i + 3) * 65536,
        method: methods[tag >>> 8],
        fingerprint: data.slice(i + 5, i + UNITS),
      })
    }
    return { text, findings, blocked }
  }
  return { redaction }
})()
