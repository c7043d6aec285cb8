/**
 * A per-client token bucket: each client may burst up to `perMinute` requests, and regains
 * `perMinute` requests per minute. Refused requests are told how many seconds to wait.
 */
export interface RateLimiter {
  /** Takes one request from the client's allowance; `retryAfterSeconds` when there is none. */
  take(client: string): { allowed: true } | { allowed: false; retryAfterSeconds: number };
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

const SWEEP_EVERY = 1_000;

export function createRateLimiter(perMinute: number, now: () => number = Date.now): RateLimiter {
  const buckets = new Map<string, Bucket>();
  const refillPerMs = perMinute / 60_000;
  let calls = 0;

  const current = (bucket: Bucket, at: number) =>
    Math.min(perMinute, bucket.tokens + (at - bucket.updatedAt) * refillPerMs);

  /** Forgets clients whose allowance is full again, so the map holds only recent clients. */
  const sweep = (at: number) => {
    for (const [client, bucket] of buckets) if (current(bucket, at) >= perMinute) buckets.delete(client);
  };

  return {
    take(client) {
      const at = now();
      if (++calls % SWEEP_EVERY === 0) sweep(at);
      const bucket = buckets.get(client) ?? { tokens: perMinute, updatedAt: at };
      bucket.tokens = current(bucket, at);
      bucket.updatedAt = at;
      buckets.set(client, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return { allowed: true };
      }
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / refillPerMs / 1000)) };
    },
  };
}
