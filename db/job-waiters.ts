import type { Db } from './connect';
import { onJobTerminal } from './job-terminal-events';

export interface JobWaitersOptions {
  /** How often the jobs that someone waits for are re-read (one statement for all of them). */
  recheckMs?: number;
  /** At most this many requests wait at once in this process; beyond, a wait answers at once. */
  maxWaiters?: number;
}

interface Waiter {
  jobId: string;
  settle: () => void;
}

/**
 * Long-polling support: `wait(jobId, ms)` resolves as soon as the job is terminal, after `ms`, or
 * when `signal` aborts (the client went away), whichever comes first. A terminal write made by this
 * process (API and worker sharing it, as `npm start` does) wakes the waiter at once through the
 * in-process notifier; a write made by another process (separate worker) is found by a re-read
 * every `recheckMs`, a single `select … where id in (…)` for every waiter of the process, so the cost
 * does not grow with the number of waiting clients. Works the same on Postgres and PGlite.
 */
export class JobWaiters {
  private readonly waiters = new Set<Waiter>();
  private timer: NodeJS.Timeout | null = null;
  private readonly recheckMs: number;
  readonly maxWaiters: number;

  constructor(
    private readonly db: Db,
    options: JobWaitersOptions = {},
  ) {
    this.recheckMs = options.recheckMs ?? 250;
    this.maxWaiters = options.maxWaiters ?? 2000;
  }

  get size(): number {
    return this.waiters.size;
  }

  /** How many requests wait on this job now (what a test waits for before it finishes the job). */
  waitingOn(jobId: string): number {
    let count = 0;
    for (const waiter of this.waiters) if (waiter.jobId === jobId) count++;
    return count;
  }

  /** False when the process already holds `maxWaiters` waits: the caller answers at once. */
  hasRoom(): boolean {
    return this.waiters.size < this.maxWaiters;
  }

  wait(jobId: string, ms: number, signal?: AbortSignal): Promise<void> {
    if (ms <= 0 || signal?.aborted || !this.hasRoom()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const waiter: Waiter = { jobId, settle: () => undefined };
      const timeout = setTimeout(() => waiter.settle(), ms);
      const unsubscribe = onJobTerminal(jobId, () => waiter.settle());
      const onAbort = () => waiter.settle();
      signal?.addEventListener('abort', onAbort, { once: true });
      waiter.settle = () => {
        if (!this.waiters.delete(waiter)) return;
        clearTimeout(timeout);
        unsubscribe();
        signal?.removeEventListener('abort', onAbort);
        if (this.waiters.size === 0) this.stopRechecks();
        resolve();
      };
      this.waiters.add(waiter);
      this.startRechecks();
    });
  }

  private startRechecks(): void {
    if (this.timer) return;
    const tick = async () => {
      this.timer = null;
      if (this.waiters.size === 0) return;
      const ids = [...new Set([...this.waiters].map((w) => w.jobId))];
      try {
        const terminal = await this.db
          .selectFrom('jobs')
          .select('id')
          .where('id', 'in', ids)
          .where('status', 'in', ['completed', 'failed'])
          .execute();
        const done = new Set(terminal.map((row) => row.id));
        for (const waiter of [...this.waiters]) if (done.has(waiter.jobId)) waiter.settle();
      } catch {
        // The database is briefly unreachable: waiters keep waiting until their timeout or the next re-read.
      }
      if (this.waiters.size > 0 && !this.timer) this.timer = setTimeout(() => void tick(), this.recheckMs);
    };
    this.timer = setTimeout(() => void tick(), this.recheckMs);
  }

  private stopRechecks(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
