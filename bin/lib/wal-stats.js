'use strict'
// One definition of a WAL directory's statistics, for `loa wal stats` and `loa report`, so that
// the page and the command can never disagree.

const core = require('../../index.js')

/**
 * Sessions, segments, bytes and records of the WAL in `dir` (from `verifyWal`), and per session
 * its records, last seq and first and last write (ms). Per-session figures need every record
 * read, so they are left empty when the log does not verify.
 */
function walStatsOf(dir) {
  const v = core.verifyWal(dir)
  const sessions = {}
  if (v.ok) {
    for (const r of core.readWal(dir)) {
      const s = (sessions[r.sessionId] ??= { records: 0, lastSeq: 0, firstTs: r.ts, lastTs: r.ts })
      s.records += 1
      s.lastSeq = Math.max(s.lastSeq, r.seq)
      s.lastTs = Math.max(s.lastTs, r.ts)
    }
  }
  return { ok: v.ok, sessions: v.sessions, segments: v.segments, bytes: v.bytes, records: v.records, bySession: sessions }
}

module.exports = { walStatsOf }
