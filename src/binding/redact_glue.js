// JavaScript half of `redact` (src/binding/redact.rs), compiled once per JS thread.
//
// Thousands of findings built as objects through N-API cost about 100 ns per property; here a
// literal with a fixed shape costs a few. The native side passes each finding as three numbers
// of `packed` (start, end, kind index | method index << 16) and its fingerprint as a slice of one
// flat string.
;(function () {
  'use strict'
  function redaction(text, blocked, kinds, methods, packed, fingerprints) {
    const n = packed.length / 3
    const width = n === 0 ? 0 : fingerprints.length / n
    const findings = []
    for (let i = 0, j = 0; i < n; i++, j += 3) {
      const tag = packed[j + 2]
      findings.push({
        kind: kinds[tag & 0xffff],
        start: packed[j],
        end: packed[j + 1],
        method: methods[tag >>> 16],
        fingerprint: fingerprints.slice(i * width, (i + 1) * width),
      })
    }
    return { text, findings, blocked }
  }
  return { redaction }
})()
