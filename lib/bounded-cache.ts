export interface BoundedCacheOptions {
  /** The least recently used entry is dropped to make room beyond this. */
  maxEntries: number;
  /** An entry unused for this long is dropped. */
  idleMs: number;
  now?: () => number;
}

/** A small in-memory LRU cache whose entries also expire when idle, so a long-lived worker's cache cannot grow without end. */
export class BoundedCache<V> {
  private readonly entries = new Map<string, { value: V; usedAt: number }>();
  private readonly now: () => number;

  constructor(private readonly options: BoundedCacheOptions) {
    if (!(options.maxEntries >= 1)) throw new RangeError('maxEntries must be at least 1');
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (this.now() - entry.usedAt > this.options.idleMs) return undefined;
    entry.usedAt = this.now();
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, { value, usedAt: this.now() });
    this.evict();
  }

  private evict(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) {
      if (this.entries.size <= this.options.maxEntries && now - entry.usedAt <= this.options.idleMs) break;
      this.entries.delete(key);
    }
  }
}
