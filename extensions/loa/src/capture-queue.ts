// Fail-open capture with retries: a capture that fails is tried again with exponential backoff;
// one that exhausts its attempts goes to the workspace's dead-letter queue (@loa/core redacts it
// there and replays it later). Nothing is dropped silently. `enqueue` resolves after the first attempt; `drain()` runs
// every pending retry now (no more waiting) and resolves when each has succeeded or been
// dead-lettered.

export interface CaptureJob {
  /** Performs the capture; throws to ask for a retry. */
  run(): Promise<void>
  /** Puts the capture in the dead-letter queue, durably, after every attempt failed. */
  deadLetter(failure: { attempts: number; error: { code: string; message: string } }): Promise<void>
  /** For log lines: never content. */
  label: string
}

export interface QueueOptions {
  attempts: number
  baseDelayMs: number
  warn(message: string): void
}

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
    return firstAttempt
  }

  /** Number of captures not yet stored nor dead-lettered. */
  get size(): number {
    return this.pending.size
  }

  /** Retries everything pending immediately and waits for every job to finish. */
  async drain(): Promise<void> {
    for (const entry of this.pending) entry.wake?.()
    await Promise.all([...this.pending].map((e) => e.done))
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
    await entry.job.deadLetter({ attempts, error: describeError(lastError) })
    this.options.warn(`capture ${entry.job.label} dead-lettered after ${attempts} attempts`)
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
