/**
 * A short-lived memory of values read from the database, for reads made on every request (the
 * hosted market endpoint's live entry and credential keys). A value is kept for `ttlMs`; a change
 * made through this process bumps `generation()`, which drops everything remembered before it (and
 * keeps a read that overlapped the change from being remembered); a change made by another process
 * takes effect within the TTL. Misses (null) are never remembered. `scope` separates databases (tests
 * and the embedded setup run several in one process).
 */
export function createGenerationCache<V>(options: { ttlMs: number; maxEntries: number; generation: () => number }) {
  const entries = new Map<string, { scope: unknown; value: V; generation: number; expiresAt: number }>();
  return async (scope: unknown, key: string, load: () => Promise<V | null>, now = Date.now()): Promise<V | null> => {
    const generation = options.generation();
    const hit = entries.get(key);
    if (hit && hit.scope === scope && hit.generation === generation && hit.expiresAt > now) return hit.value;
    const value = await load();
    if (value !== null && generation === options.generation()) {
      if (entries.size >= options.maxEntries) entries.clear();
      entries.set(key, { scope, value, generation, expiresAt: now + options.ttlMs });
    } else {
      entries.delete(key);
    }
    return value;
  };
}
