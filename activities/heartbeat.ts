import { Context } from '@temporalio/activity';

/** Heartbeats while `work` runs, so a dead worker is noticed within the heartbeat timeout. */
export async function withHeartbeat<T>(work: () => Promise<T>, everyMs = 2000): Promise<T> {
  const context = Context.current();
  context.heartbeat();
  const timer = setInterval(() => context.heartbeat(), everyMs);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/** A key unique to this activity attempt: usage recorded under it is recorded once, however often the write is retried. */
export function attemptKey(jobId: string, what: string): string {
  const info = Context.current().info;
  return `${jobId}:${what}:${info.activityId}:${info.attempt}`;
}
