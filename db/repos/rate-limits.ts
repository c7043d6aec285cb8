import { sql } from 'kysely';
import type { Db } from '../connect';

/**
 * Request limits shared by every API process (migration 0029): a fixed-window counter per key in
 * `rate_limit_windows`, taken in one statement (an upsert adding one), so that two processes — or two
 * replicas — count the same requests. Old windows are removed by pruneRateLimitWindows.
 */
export type RateVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** Takes one request from `key`'s allowance of `limit` per `windowMs`; refused once the window's count passes it. */
export async function takeRateLimit(
  db: Db,
  key: string,
  limit: number,
  windowMs = 60_000,
  now = new Date(),
): Promise<RateVerdict> {
  const start = Math.floor(now.getTime() / windowMs) * windowMs;
  const row = await db
    .insertInto('rate_limit_windows')
    .values({ key: key.slice(0, 512), window_start: new Date(start), count: 1 })
    .onConflict((oc) => oc.columns(['key', 'window_start']).doUpdateSet({ count: sql`rate_limit_windows.count + 1` }))
    .returning('count')
    .executeTakeFirstOrThrow();
  if (Number(row.count) <= limit) return { allowed: true };
  return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((start + windowMs - now.getTime()) / 1000)) };
}

/** Removes windows that ended before `before`; returns how many. */
export async function pruneRateLimitWindows(db: Db, before: Date): Promise<number> {
  const result = await db.deleteFrom('rate_limit_windows').where('window_start', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
