// Fail-open capture with retries: a capture that fails is tried again with exponential backoff;
// one that exhausts its attempts goes to the workspace's dead-letter queue (@loa/core redacts it
// there and replays it later). Nothing is dropped silently. `enqueue` resolves after the first attempt; `drain()` runs
// every pending retry now (no more waiting) and resolves when each has succeeded or been
// dead-lettered.
//
// When the disk refuses the dead letter too (full, failing, read-only), the capture is held in
// memory, redacted first, in arrival order, at most `maxHeld` of them: beyond that the newest is
// dropped (the oldest have waited longest and are kept), counted in the logs. Held captures are
// tried again on the next capture, at `drain()`, and on an unref'd timer (it never keeps the
// process alive): each is stored if the store takes it now, else written out as a dead letter;
// while neither works they stay. Log lines carry labels and counts, never content.

export interface CaptureJob {
  /** Performs the capture; throws to ask for a retry. */
  run(): Promise<void>
  /** Puts the capture in the dead-letter queue, durably, after every attempt failed. */
  deadLetter(failure: { attempts: number; error: { code: string; message: string } }): Promise<void>
  /**
   * The same capture with its entry redacted, to be held in memory while the disk refuses both
   * the capture and its dead letter. `undefined` when redaction policy blocks it (the store
   * would never take it: nothing to keep).
   */
  hold(): Promise<CaptureJob | undefined>
  /** For log lines: never content. */
  label: string
}

export interface QueueOptions {
  attempts: number
  baseDelayMs: number
  /** Most captures held in memory while no disk write succeeds. */
  maxHeld: number
  warn(message: string): void
  info(message: string): void
}

/** A capture held in memory: neither stored nor dead-lettered yet. */
interface Held {
  job: CaptureJob
  attempts: number
}

/** Longest wait of the timer that retries held captures. */
const MAX_HELD_RETRY_MS = 60_000

interface Pending {
  job: CaptureJob
  attempt: number
  timer?: ReturnType<typeof setTimeout> | undefined
  wake?: (() => void) | undefined
  done: Promise<void>
  /** Resolves what `enqueue` returned (idempotent). */
  attempted: () => void
}

export function describeError(err: unknown): { code: string; message: string } {
  const e = err as { code?: unknown; message?: unknown }
  return { code: typeof e?.code === 'string' ? e.code : 'E_UNKNOWN', message: typeof e?.message === 'string' ? e.message : String(err) }
}

export class CaptureQueue {
  private readonly pending = new Set<Pending>()
  /** Captures the disk refused, dead letter included, oldest first; already redacted. */
  private readonly held: Held[] = []
  /** Captures dropped because `maxHeld` were already held, since the start. */
  private dropped = 0
  private flushing: Promise<void> | undefined
  private heldTimer: ReturnType<typeof setTimeout> | undefined
  /** Flushes in a row that moved nothing: the timer backs off with them. */
  private idleFlushes = 0

  constructor(private readonly options: QueueOptions) {}

  /**
   * Starts the job now. Resolves once its first attempt has finished: stored, or failed and
   * scheduled for retry. Retries and dead-lettering go on in the background (`drain()` waits for
   * them), so a hook never holds the agent's turn, or OpenClaw's plugin stop, through a backoff.
   * Never rejects.
   */
  enqueue(job: CaptureJob): Promise<void> {
    let attempted: () => void = () => {}
    const firstAttempt = new Promise<void>((resolve) => (attempted = resolve))
    const entry: Pending = { job, attempt: 0, done: Promise.resolve(), attempted: () => attempted() }
    entry.done = this.runAttempts(entry)
      .catch((err) => {
        const { code, message } = describeError(err)
        this.options.warn(`capture ${job.label} could not be dead-lettered: ${code}: ${message}`)
      })
      .finally(() => {
        attempted()
        this.pending.delete(entry)
      })
    this.pending.add(entry)
    // A new capture is a sign of life: try what the disk refused earlier too.
    if (this.held.length) void this.flushHeld()
    return firstAttempt
  }

  /** Number of captures not yet stored nor dead-lettered (held in memory included). */
  get size(): number {
    return this.pending.size + this.held.length
  }

  /** Captures held in memory, and how many were dropped because the hold was full. */
  get heldCounts(): { held: number; dropped: number } {
    return { held: this.held.length, dropped: this.dropped }
  }

  /**
   * Retries everything pending immediately, waits for every job to finish, then tries the held
   * captures once (they stay held if the disk still refuses).
   */
  async drain(): Promise<void> {
    for (const entry of this.pending) entry.wake?.()
    await Promise.all([...this.pending].map((e) => e.done))
    if (this.held.length) await this.flushHeld()
  }

  /** Stops the held captures' timer (plugin stop). What is still held is reported, by count. */
  close(): void {
    clearTimeout(this.heldTimer)
    this.heldTimer = undefined
    if (this.held.length || this.dropped) {
      this.options.warn(`${this.held.length} capture(s) still held in memory are lost at stop: the disk never accepted them (${this.dropped} dropped earlier)`)
    }
  }

  private async runAttempts(entry: Pending): Promise<void> {
    const { attempts, baseDelayMs } = this.options
    let lastError: unknown
    for (entry.attempt = 1; entry.attempt <= attempts; entry.attempt++) {
      try {
        await entry.job.run()
        return
      } catch (err) {
        lastError = err
        const { code, message } = describeError(err)
        this.options.warn(`capture ${entry.job.label} failed (attempt ${entry.attempt}/${attempts}): ${code}: ${message}`)
      }
      entry.attempted()
      if (entry.attempt < attempts) await this.backoff(entry, baseDelayMs * 2 ** (entry.attempt - 1))
    }
    try {
      await entry.job.deadLetter({ attempts, error: describeError(lastError) })
    } catch (err) {
      await this.hold(entry.job, attempts, err)
      return
    }
    this.options.warn(`capture ${entry.job.label} dead-lettered after ${attempts} attempts`)
  }

  /**
   * Keeps a capture whose dead letter the disk refused, redacted, if there is room. Redacted
   * first: the room is checked and taken in one synchronous step afterwards, so that captures
   * refused at the same time never hold more than `maxHeld` between them.
   */
  private async hold(job: CaptureJob, attempts: number, err: unknown): Promise<void> {
    const { code, message } = describeError(err)
    const drop = (why: string) => {
      this.dropped++
      this.options.warn(`capture ${job.label} could not be dead-lettered (${code}: ${message}) and is dropped: ${why} (${this.dropped} dropped)`)
    }
    if (this.held.length >= this.options.maxHeld) return drop(`${this.held.length} captures already held in memory`)
    let redacted: CaptureJob | undefined
    try {
      redacted = await job.hold()
    } catch (why) {
      // Nothing unredacted is ever kept: without its redaction the capture cannot wait.
      const e = describeError(why)
      return drop(`it could not be redacted to wait in memory (${e.code}: ${e.message})`)
    }
    if (!redacted) {
      this.options.warn(`capture ${job.label} could not be dead-lettered (${code}: ${message}); redaction policy blocks it, nothing to keep`)
      return
    }
    if (this.held.length >= this.options.maxHeld) return drop(`${this.held.length} captures already held in memory`)
    this.held.push({ job: redacted, attempts })
    this.options.warn(
      `capture ${job.label} could not be dead-lettered (${code}: ${message}): held in memory until the disk accepts a write (${this.held.length} held, ${this.dropped} dropped)`,
    )
    this.scheduleHeld()
  }

  /** Tries the held captures now (one run at a time); never rejects. */
  private flushHeld(): Promise<void> {
    if (!this.flushing) {
      clearTimeout(this.heldTimer)
      this.heldTimer = undefined
      this.flushing = this.flushOnce()
        .catch((err) => {
          const { code, message } = describeError(err)
          this.options.warn(`held captures could not be retried: ${code}: ${message}`)
        })
        .finally(() => {
          this.flushing = undefined
          if (this.held.length) this.scheduleHeld()
        })
    }
    return this.flushing
  }

  /**
   * Oldest first: stored if the store takes it, else written out as a dead letter; the first
   * that fits neither ends the round (the disk still refuses), and it stays first.
   */
  private async flushOnce(): Promise<void> {
    let stored = 0
    let deadLettered = 0
    let lastError: { code: string; message: string } | undefined
    while (this.held.length) {
      const first = this.held[0]!
      try {
        await first.job.run()
        stored++
      } catch (err) {
        try {
          await first.job.deadLetter({ attempts: first.attempts + 1, error: describeError(err) })
          deadLettered++
        } catch (again) {
          first.attempts++
          lastError = describeError(again)
          break
        }
      }
      this.held.shift()
    }
    this.idleFlushes = stored + deadLettered ? 0 : this.idleFlushes + 1
    const counts = `${stored} stored, ${deadLettered} dead-lettered, ${this.held.length} still held in memory, ${this.dropped} dropped`
    if (stored + deadLettered) this.options.info(`held captures retried: ${counts}`)
    else if (lastError) this.options.warn(`held captures retried, the disk still refuses (${lastError.code}): ${counts}`)
  }

  private scheduleHeld(): void {
    if (this.heldTimer || this.flushing) return
    const delay = Math.min(Math.max(this.options.baseDelayMs, 1) * 2 ** Math.min(this.idleFlushes, 16), MAX_HELD_RETRY_MS)
    this.heldTimer = setTimeout(() => {
      this.heldTimer = undefined
      void this.flushHeld()
    }, delay)
    this.heldTimer.unref?.()
  }

  private backoff(entry: Pending, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(entry.timer)
        entry.wake = undefined
        resolve()
      }
      entry.wake = wake
      entry.timer = setTimeout(wake, ms)
      entry.timer.unref?.()
    })
  }
}
