import type { Client } from '@temporalio/client';

import { log } from '../../../lib/log';
import { startOnce, startOrJoin, waitBounded, type Waited, type WorkflowStart } from '../../../lib/temporal/start';
import { ApiError } from '../../errors';

export interface WaitBound {
  /** How long the request waits for the result (0: not at all). */
  waitMs: number;
  /** Cancel the workflow when the bound passes (work nobody waits for any more); by default it keeps running. */
  cancelOnTimeout?: boolean;
  /** The answer for a workflow that failed (the ApiError to throw), or undefined to rethrow the failure. */
  failure?: (err: unknown) => ApiError | undefined;
  /** Join a still-running workflow of the same id instead of starting the workflow once per id (startOnce). */
  join?: boolean;
}

export type WorkflowCallOutcome<T> = Waited<T> & { workflowId: string; runId: string | undefined };

/**
 * The one way a request starts a workflow and waits for its answer: started once per id (or joined), waited for
 * within a bound, and what goes wrong mapped to the API's answers: the engine unreachable at the start is 503
 * service_unavailable; a failed workflow is what `failure` says; the bound passing is `finished: false` (the
 * caller answers 202 or 504), after the workflow is cancelled if asked.
 */
export async function startAndWait<T>(
  client: Client,
  start: WorkflowStart,
  bound: WaitBound,
): Promise<WorkflowCallOutcome<T>> {
  let runId: string | undefined;
  try {
    if (bound.join) runId = (await startOrJoin(client, start)).firstExecutionRunId;
    else await startOnce(client, start);
  } catch (err) {
    log().error({ err, workflowId: start.workflowId }, 'could not start the workflow');
    throw new ApiError(503, 'service_unavailable', 'The workflow engine is unavailable; try again', undefined, {
      'Retry-After': '5',
    });
  }
  let waited: Waited<T>;
  try {
    waited = await waitBounded<T>(client, start.workflowId, bound.waitMs);
  } catch (err) {
    throw bound.failure?.(err) ?? err;
  }
  if (!waited.finished && bound.cancelOnTimeout)
    await client.workflow
      .getHandle(start.workflowId)
      .cancel()
      .catch(() => undefined);
  return { ...waited, workflowId: start.workflowId, runId };
}
