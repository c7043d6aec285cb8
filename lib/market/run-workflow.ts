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
 * per run, ever, so a second start (two dispatchers, a retried pass) finds the first. It is delayed by `firstCheckMs` (the
 * dispatcher passes the window idle time, MARKET_RUN_WINDOW_IDLE_SECONDS), at most until the run's token expires:
 * the server holds the first workflow task until the run may be idle instead of a worker running one now only to
 * set a timer, and the execution is visible in the UI from the start. The workflow then settles the run once it is
 * idle (workflows/market-run.ts). Started by the platform workers' dispatcher (workers/market-run-dispatcher.ts) for
 * every opened run, never by the call that opened it: a call is served in-process and must not wait for, or share
 * its process with, the workflow engine.
 */
export function marketRunStart(
  taskQueue: string,
  run: OwedMarketRun,
  now = Date.now(),
  firstCheckMs = Number.POSITIVE_INFINITY,
): WorkflowStart {
  return {
    workflowType: 'marketRunWorkflow',
    workflowId: marketRunWorkflowId(run.id),
    taskQueue,
    args: [{ runId: run.id, expiresAt: run.expiresAt.toISOString() }],
    startDelayMs: Math.min(run.expiresAt.getTime() - now, firstCheckMs),
    userId: run.consumerId,
    kind: 'market-run',
  };
}
