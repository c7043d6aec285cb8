import type { ToolSource } from '../../lib/tools/source';
import type { ToolSelectionRef } from '.';

/** How long a kept source may wait for the run's next call before it is closed. */
export const RUN_CONNECTION_IDLE_MS = 60_000;
/** At most this many sources are kept on one worker; the one idle longest is closed first. */
export const RUN_CONNECTION_MAX = 200;
/** Runs remembered as ended, so a call that finishes after its run did closes its source. */
const ENDED_REMEMBERED = 1_000;

interface Kept {
  source: ToolSource;
  timer: NodeJS.Timeout;
}

/**
 * The open upstream sources (MCP connections, loaded OpenAPI documents) of agent runs on this worker,
 * kept between a run's calls: one per run and selection, never handed to another run. A call takes
 * its run's source for itself (a call while it is taken opens its own) and gives it back when the
 * source answered; a source that failed a call is closed. Kept sources close after
 * RUN_CONNECTION_IDLE_MS without a call, and when their run ends here (endRun).
 */
export class RunConnections {
  private readonly kept = new Map<string, Kept>();
  private readonly ended = new Set<string>();

  constructor(private readonly options: { idleMs?: number; maxEntries?: number } = {}) {}

  private static key(jobId: string, ref: ToolSelectionRef): string {
    return `${jobId}\u0000${ref.kind}\u0000${ref.index}`;
  }

  /** The run's kept source of this selection, now the caller's alone; undefined when none is kept. */
  take(jobId: string, ref: ToolSelectionRef): ToolSource | undefined {
    const key = RunConnections.key(jobId, ref);
    const entry = this.kept.get(key);
    if (!entry) return undefined;
    this.kept.delete(key);
    clearTimeout(entry.timer);
    return entry.source;
  }

  /** Keeps a source that answered for the run's next call (closed instead when the run ended, or one is kept already). */
  give(jobId: string, ref: ToolSelectionRef, source: ToolSource): void {
    const key = RunConnections.key(jobId, ref);
    if (this.ended.has(jobId) || this.kept.has(key)) {
      void source.close().catch(() => undefined);
      return;
    }
    const timer = setTimeout(() => {
      if (this.kept.get(key)?.source === source) this.kept.delete(key);
      void source.close().catch(() => undefined);
    }, this.options.idleMs ?? RUN_CONNECTION_IDLE_MS);
    timer.unref();
    this.kept.set(key, { source, timer });
    const max = this.options.maxEntries ?? RUN_CONNECTION_MAX;
    for (const [oldest, entry] of this.kept) {
      if (this.kept.size <= max) break;
      this.kept.delete(oldest);
      clearTimeout(entry.timer);
      void entry.source.close().catch(() => undefined);
    }
  }

  /** The run ended: its kept sources close, and a source given back later is closed. */
  async endRun(jobId: string): Promise<void> {
    this.ended.add(jobId);
    if (this.ended.size > ENDED_REMEMBERED) this.ended.delete(this.ended.values().next().value!);
    const prefix = `${jobId}\u0000`;
    const closing: Promise<void>[] = [];
    for (const [key, entry] of this.kept) {
      if (!key.startsWith(prefix)) continue;
      this.kept.delete(key);
      clearTimeout(entry.timer);
      closing.push(entry.source.close().catch(() => undefined));
    }
    await Promise.all(closing);
  }

  /** How many sources are kept (of one run, or all). */
  size(jobId?: string): number {
    if (jobId === undefined) return this.kept.size;
    return [...this.kept.keys()].filter((key) => key.startsWith(`${jobId}\u0000`)).length;
  }

  /** Closes every kept source (the worker stops). */
  async closeAll(): Promise<void> {
    const entries = [...this.kept.values()];
    this.kept.clear();
    for (const entry of entries) clearTimeout(entry.timer);
    await Promise.all(entries.map((entry) => entry.source.close().catch(() => undefined)));
  }
}
