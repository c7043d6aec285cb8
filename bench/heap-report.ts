/**
 * Preloaded into a process the soak starts (`--require bench/heap-report.ts`, after tsx): every 5 s it
 * appends that process's memory as one JSON line to HEAP_REPORT_FILE, so the soak can tell what its RSS
 * holds: the main V8 heap (used and reserved), the heaps of its worker threads (the Temporal SDK runs
 * workflows in worker threads, each its own V8 isolate), what V8 counts as external (Buffers,
 * ArrayBuffers) and the rest (native: the SDK's Rust core, libuv, OpenSSL, code, stacks).
 *
 * Worker threads are found by wrapping `worker_threads.Worker` before anything loads it: a measuring aid
 * of this benchmark only.
 */
import { appendFileSync } from 'node:fs';
import workerThreads from 'node:worker_threads';

/** One line of the report, in bytes. */
export interface HeapReport {
  at: number;
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  /** Its worker threads (each a V8 isolate: the SDK's workflow thread) and their heaps. */
  threads: number;
  threadHeapTotal: number;
  threadHeapUsed: number;
}

const file = process.env.HEAP_REPORT_FILE;
// Preloads run in every worker thread too; only the main thread reports.
if (file && workerThreads.isMainThread) {
  const threads = new Set<InstanceType<typeof workerThreads.Worker>>();
  const Original = workerThreads.Worker;
  class CountedWorker extends Original {
    constructor(...args: ConstructorParameters<typeof Original>) {
      super(...args);
      threads.add(this);
      this.once('exit', () => threads.delete(this));
    }
  }
  workerThreads.Worker = CountedWorker;

  const write = async () => {
    const { rss, heapTotal, heapUsed, external, arrayBuffers } = process.memoryUsage();
    const heaps = await Promise.all([...threads].map((t) => t.getHeapStatistics().catch(() => null)));
    const threadHeapTotal = heaps.reduce((sum, h) => sum + (h?.total_heap_size ?? 0), 0);
    const threadHeapUsed = heaps.reduce((sum, h) => sum + (h?.used_heap_size ?? 0), 0);
    const report: HeapReport = {
      at: Date.now(),
      rss,
      heapTotal,
      heapUsed,
      external,
      arrayBuffers,
      threads: threads.size,
      threadHeapTotal,
      threadHeapUsed,
    };
    appendFileSync(file, `${JSON.stringify(report)}\n`);
  };
  void write();
  setInterval(() => void write(), 5_000).unref();
}
