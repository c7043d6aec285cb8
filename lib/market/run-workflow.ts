import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import { JobKindSearchAttribute, UserIdSearchAttribute } from '../temporal';

/** The workflow id of a market run (one workflow per run, visible in the Temporal UI). */
export const marketRunWorkflowId = (runId: string) => `market-run-${runId}`;

export interface OwedMarketRun {
  id: string;
  consumerId: string;
  expiresAt: Date;
}

/**
 * Starts a market run's workflow (workflows/market-run.ts), delayed until the run's token expires
 * (the workflow still sleeps out any rest, e.g. after a clock skew). Started by the platform workers'
 * dispatcher (workers/market-run-dispatcher.ts) for every opened run, never by the call that opened
 * it: a call is served in-process and must not wait for, or share its process with, the workflow
 * engine. Starting a run's workflow twice is harmless (`already_started`).
 */
export async function startMarketRunWorkflow(client: Client, taskQueue: string, run: OwedMarketRun): Promise<'started' | 'already_started'> {
  try {
    await client.workflow.start('marketRunWorkflow', {
      taskQueue,
      workflowId: marketRunWorkflowId(run.id),
      // One workflow per run, ever: a second start (two dispatchers, a retried pass) finds the first.
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      args: [{ runId: run.id, expiresAt: run.expiresAt.toISOString() }],
      // Nothing to do before the run's token expires: the server holds the first workflow task until
      // then (start delay) instead of the worker running one now only to set a timer. The execution
      // is visible in the UI from the start.
      startDelay: Math.max(0, run.expiresAt.getTime() - Date.now()),
      typedSearchAttributes: [
        { key: UserIdSearchAttribute, value: run.consumerId },
        { key: JobKindSearchAttribute, value: 'market-run' },
      ],
    });
    return 'started';
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return 'already_started';
    throw err;
  }
}
