import type { WorkflowStart } from '../temporal/start';

/** The workflow id of a market run (one workflow per run, visible in the Temporal UI). */
export const marketRunWorkflowId = (runId: string) => `market-run-${runId}`;

export interface OwedMarketRun {
  id: string;
  consumerId: string;
  expiresAt: Date;
}

/**
 * A market run's workflow (workflows/market-run.ts), started with startOnce (lib/temporal/start.ts): one workflow
 * per run, ever, so a second start (two dispatchers, a retried pass) finds the first. It is delayed until the run's
 * token expires (the workflow still sleeps out any rest, e.g. after a clock skew): the server holds the first
 * workflow task until then instead of a worker running one now only to set a timer, and the execution is visible
 * in the UI from the start. Started by the platform workers' dispatcher (workers/market-run-dispatcher.ts) for
 * every opened run, never by the call that opened it: a call is served in-process and must not wait for, or share
 * its process with, the workflow engine.
 */
export function marketRunStart(taskQueue: string, run: OwedMarketRun, now = Date.now()): WorkflowStart {
  return {
    workflowType: 'marketRunWorkflow',
    workflowId: marketRunWorkflowId(run.id),
    taskQueue,
    args: [{ runId: run.id, expiresAt: run.expiresAt.toISOString() }],
    startDelayMs: run.expiresAt.getTime() - now,
    userId: run.consumerId,
    kind: 'market-run',
  };
}
