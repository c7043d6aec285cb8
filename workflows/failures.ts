import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/workflow';

/** The user-facing reason a step failed: the activity's own message, not Temporal's wrapper. */
export function describeFailure(err: unknown): string {
  let cause: unknown = err;
  while (cause instanceof ActivityFailure && cause.cause) cause = cause.cause;
  if (cause instanceof ApplicationFailure) return cause.message;
  if (cause instanceof TimeoutFailure)
    return `step timed out (${cause.timeoutType !== undefined ? String(cause.timeoutType) : 'timeout'})`;
  if (cause instanceof CancelledFailure) return 'run was cancelled';
  return cause instanceof Error ? cause.message : String(cause);
}
