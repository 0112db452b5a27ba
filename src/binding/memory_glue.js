// JavaScript half of `MemoryStore.capture` (src/binding/memory.rs), compiled once per JS thread.
//
// The retry policy's waits happen here, on the event loop: each try of a capture is one task on
// the libuv thread pool, and between tries no pool thread is held, so a full or failing disk
// never stalls unrelated `fs`, `crypto` or `zlib` work of the process. `setTimeout` is taken
// when this script is compiled, so later replacements of the global (fake timers) do not
// decide when a capture is retried.
;(function () {
  'use strict'
  const later = setTimeout
  // `tryOnce(attempt)` is a promise of one try: it resolves with the answer, with a number (the
  // milliseconds to wait before try `attempt + 1`), or rejects with the final coded error.
  function retry(tryOnce) {
    return new Promise((resolve, reject) => {
      const step = (attempt) => {
        let pending
        try {
          pending = tryOnce(attempt)
        } catch (err) {
          // Only when the environment is shutting down; never thrown out of a timer callback.
          reject(err)
          return
        }
        pending.then((answer) => {
          if (typeof answer === 'number') later(step, answer, attempt + 1)
          else resolve(answer)
        }, reject)
      }
      step(1)
    })
  }
  return { retry }
})()
