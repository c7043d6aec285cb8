import type { Client } from '@temporalio/client';
import { log } from '../log';
import { JobKindSearchAttribute, UserIdSearchAttribute } from '../temporal';

/** The workflow id of a market run (one workflow per run, visible in the Temporal UI). */
export const marketRunWorkflowId = (runId: string) => `market-run-${runId}`;

/**
 * Starts a market run's workflow (workflows/market-run.ts) without waiting for it, delayed until the
 * run's token expires (the workflow still sleeps out any rest, e.g. after a clock skew): the call that
 * opened the run is served in-process and must not wait for the workflow engine. A failed start is
 * logged; the run's hold stops counting once its token expires either way.
 */
export function marketRunStarter(client: Client, taskQueue: string) {
  return (run: { id: string; expiresAt: Date }, consumerId: string): void => {
    client.workflow
      .start('marketRunWorkflow', {
        taskQueue,
        workflowId: marketRunWorkflowId(run.id),
        args: [{ runId: run.id, expiresAt: run.expiresAt.toISOString() }],
        // Nothing to do before the run's token expires: the server holds the first workflow task until
        // then (start delay) instead of the worker running one now only to set a timer. The execution
        // is visible in the UI from the start.
        startDelay: Math.max(0, run.expiresAt.getTime() - Date.now()),
        typedSearchAttributes: [
          { key: UserIdSearchAttribute, value: consumerId },
          { key: JobKindSearchAttribute, value: 'market-run' },
        ],
      })
      .catch((err) => log().error({ err, runId: run.id }, 'market run workflow not started'));
  };
}
