import { sql } from 'kysely';
import { stopHarness, useHarness, type Harness, type HarnessOptions } from '../test/support/stack/harness';
import type { Db } from '../db/connect';
import { benchTreeGroups, memoryMonitor, printPeakRss, type MemoryGroup } from './proc-memory';

/** Small helpers for closed-loop load: N tasks, at most `concurrency` in flight, bounded by a deadline. */

export interface LoadResult {
  attempted: number;
  succeeded: number;
  failed: number;
  elapsedMs: number;
  /** Latency of every successful task, in milliseconds. */
  latenciesMs: number[];
  firstError: string | null;
}

/**
 * Runs `task(0..count-1)` with `concurrency` workers. A task "fails" when it throws or returns false.
 * No new task starts after `timeLimitMs`; tasks in flight are awaited (each must bound itself).
 */
export async function runClosedLoop(
  count: number,
  concurrency: number,
  timeLimitMs: number,
  task: (index: number) => Promise<boolean>,
): Promise<LoadResult> {
  const result: LoadResult = { attempted: 0, succeeded: 0, failed: 0, elapsedMs: 0, latenciesMs: [], firstError: null };
  const started = performance.now();
  const deadline = started + timeLimitMs;
  let next = 0;
  const worker = async () => {
    while (next < count && performance.now() < deadline) {
      const index = next++;
      result.attempted++;
      const taskStarted = performance.now();
      try {
        if (await task(index)) {
          result.succeeded++;
          result.latenciesMs.push(performance.now() - taskStarted);
        } else {
          result.failed++;
        }
      } catch (err) {
        result.failed++;
        result.firstError ??= err instanceof Error ? err.message : String(err);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  result.elapsedMs = performance.now() - started;
  return result;
}

export function perSecond(result: LoadResult): number {
  return result.elapsedMs > 0 ? (result.succeeded * 1000) / result.elapsedMs : 0;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);

/** The backends of this database (pg_stat_activity), as a memory or CPU group. */
export function postgresBackends(db: Db): MemoryGroup {
  return {
    name: 'Postgres backends (this database; private memory, without shared buffers)',
    privateOnly: true,
    pids: async () =>
      (
        await sql<{ pid: number }>`select pid from pg_stat_activity where datname = current_database()`.execute(db)
      ).rows.map((r) => r.pid),
  };
}

/**
 * Runs a benchmark against the test harness (Postgres database, Temporal dev server, workers, API,
 * fakes): a watchdog bounds it, cleanup always runs (harness plus whatever `onStop` registered),
 * and the process exits 0 on success, 1 on failure, 2 when the watchdog fired. Last, it prints the
 * peak RSS of every process involved (bench/proc-memory.ts: this process, each child process — API,
 * worker, fake servers, the Temporal dev server — and their Chromium, and the database's Postgres
 * backends), sampled every second, and one JSON line `{"peak_rss_mib": …}`.
 */
export async function runHarnessBenchmark(
  watchdogMs: number,
  body: (h: Harness, onStop: (cleanup: () => Promise<void>) => void) => Promise<void>,
  options: HarnessOptions = {},
): Promise<never> {
  const startedAt = Date.now();
  const cleanups: (() => Promise<void>)[] = [];
  let stopping: Promise<void> | null = null;
  const stopAll = () =>
    (stopping ??= (async () => {
      log('stopping the harness');
      for (const cleanup of cleanups) await cleanup().catch(() => undefined);
      await stopHarness();
    })());
  const watchdog = setTimeout(() => {
    log(`watchdog: still running after ${watchdogMs / 1000}s, giving up`);
    setTimeout(() => process.exit(2), 20_000).unref();
    void stopAll().finally(() => process.exit(2));
  }, watchdogMs);
  watchdog.unref();

  let exitCode = 0;
  let memory: ReturnType<typeof memoryMonitor> | null = null;
  try {
    log('starting the harness (Postgres database, Temporal dev server, workers, API, fakes)');
    const h = await useHarness(options);
    const tree = benchTreeGroups();
    memory = memoryMonitor(() => [...tree(), postgresBackends(h.db)]);
    await body(h, (cleanup) => cleanups.push(cleanup));
  } catch (err) {
    console.error('benchmark failed:', err);
    exitCode = 1;
  } finally {
    if (memory) console.log(JSON.stringify({ peak_rss_mib: printPeakRss(await memory.stop()) }));
    await stopAll();
    log(`done in ${Math.round((Date.now() - startedAt) / 1000)}s`);
  }
  // Temporal's native runtime can keep the event loop alive after every connection closed.
  process.exit(exitCode);
}
