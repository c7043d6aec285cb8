export interface BoundedCacheOptions {
  /** The least recently used entry is dropped to make room beyond this. */
  maxEntries: number;
  /** An entry unused for this long is dropped. */
  idleMs?: number;
  /** An entry is dropped this long after it was set, however often it is used. */
  ttlMs?: number;
  now?: () => number;
}

interface Entry<V> {
  value: V;
  setAt: number;
  usedAt: number;
}

/**
 * The one in-memory cache of the codebase: least recently used entries are dropped beyond `maxEntries`, and entries
 * expire when idle (`idleMs`) and/or a fixed time after they were set (`ttlMs`), so a long-lived process's cache
 * cannot grow without end nor serve a value older than it should.
 */
export class BoundedCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly now: () => number;

  constructor(private readonly options: BoundedCacheOptions) {
    if (!(options.maxEntries >= 1)) throw new RangeError('maxEntries must be at least 1');
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string, now = this.now()): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (this.expired(entry, now)) return undefined;
    entry.usedAt = now;
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V, now = this.now()): void {
    this.entries.delete(key);
    this.entries.set(key, { value, setAt: now, usedAt: now });
    this.evict(now);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  private expired(entry: Entry<V>, now: number): boolean {
    const { idleMs, ttlMs } = this.options;
    return (idleMs !== undefined && now - entry.usedAt > idleMs) || (ttlMs !== undefined && now - entry.setAt > ttlMs);
  }

  private evict(now: number): void {
    for (const [key, entry] of this.entries) {
      if (this.entries.size <= this.options.maxEntries && !this.expired(entry, now)) break;
      this.entries.delete(key);
    }
  }
}

/**
 * A short-lived memory of values read from the database, for reads made on every request (the API key check,
 * the hosted market endpoint's live entry and credential keys), over the one BoundedCache. A value is kept for
 * `ttlMs`; a change made through this process bumps `generation()`, which drops everything remembered before it
 * (and keeps a read that overlapped the change from being remembered); a change made by another process takes
 * effect within the TTL. Misses (null) are never remembered. `scope` separates databases (tests and the embedded
 * setup run several in one process).
 */
export function createGenerationCache<V>(options: { ttlMs: number; maxEntries: number; generation: () => number }) {
  const entries = new BoundedCache<{ scope: unknown; value: V; generation: number }>({
    maxEntries: options.maxEntries,
    ttlMs: options.ttlMs,
  });
  return async (scope: unknown, key: string, load: () => Promise<V | null>, now = Date.now()): Promise<V | null> => {
    const generation = options.generation();
    const hit = entries.get(key, now);
    if (hit && hit.scope === scope && hit.generation === generation) return hit.value;
    const value = await load();
    if (value !== null && generation === options.generation()) entries.set(key, { scope, value, generation }, now);
    else entries.delete(key);
    return value;
  };
}
