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

/**
 * A key of this step, the same for every attempt of it: a model call recorded under it is charged once, however
 * often the platform retries the step. A retry after a lost worker or a Temporal outage asks the model again at
 * the platform's cost, not the account's: a fault never makes a scrape or an agent step cost more than without
 * it. `what` must name the call within the step (`llm-1`, `decide-0-7`); it stays unique across a run's
 * continue-as-new because it carries the step.
 */
export function stepKey(jobId: string, what: string): string {
  return `${jobId}:${what}:${Context.current().info.activityId}`;
}
