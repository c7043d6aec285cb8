import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
  type Client,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import type { Duration, SearchAttributePair } from '@temporalio/common';

import { JobKindSearchAttribute, UserIdSearchAttribute } from './client';

/** A workflow to start: its type, id, queue and arguments, and who it runs for (search attributes for the Temporal UI). */
export interface WorkflowStart {
  workflowType: string;
  workflowId: string;
  taskQueue: string;
  args: unknown[];
  /** The UserId search attribute. */
  userId?: string;
  /** The JobKind search attribute, e.g. `scrape`, `market-run`, `tools-discovery`. */
  kind?: string;
  /** The server holds the first workflow task this long (e.g. until a market run's token expires). */
  startDelayMs?: number;
  /** A bound on the whole execution, e.g. '5m'. */
  executionTimeout?: Duration;
}

function startOptions(start: WorkflowStart) {
  const searchAttributes: SearchAttributePair[] = [
    ...(start.userId === undefined ? [] : [{ key: UserIdSearchAttribute, value: start.userId }]),
    ...(start.kind === undefined ? [] : [{ key: JobKindSearchAttribute, value: start.kind }]),
  ];
  return {
    taskQueue: start.taskQueue,
    workflowId: start.workflowId,
    args: start.args,
    ...(start.startDelayMs === undefined ? {} : { startDelay: Math.max(0, start.startDelayMs) }),
    ...(start.executionTimeout === undefined ? {} : { workflowExecutionTimeout: start.executionTimeout }),
    ...(searchAttributes.length ? { typedSearchAttributes: searchAttributes } : {}),
  };
}

/**
 * Starts the workflow unless one with this id ever ran: the id is derived from what the run is for (a job, a
 * market run, a discovery), duplicates are rejected, so however often this is called (a retried request, the
 * pending-job reconciler, two dispatchers) at most one run exists; `already_started` when one did.
 */
export async function startOnce(client: Client, start: WorkflowStart): Promise<'started' | 'already_started'> {
  try {
    await client.workflow.start(start.workflowType, {
      ...startOptions(start),
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
    });
    return 'started';
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return 'already_started';
    throw err;
  }
}

/** Starts the workflow, or joins the run of this id that is still going (a refresh asked for twice runs once). */
export async function startOrJoin(
  client: Client,
  start: WorkflowStart,
): Promise<WorkflowHandleWithFirstExecutionRunId> {
  return client.workflow.start(start.workflowType, {
    ...startOptions(start),
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
  });
}

export type Waited<T> = { finished: true; result: T } | { finished: false };

/**
 * Waits up to `waitMs` for the workflow's result: `finished: false` when the bound passed first (the workflow
 * keeps running), its failure (WorkflowFailedError, ...) thrown as the client throws it.
 */
export async function waitBounded<T>(client: Client, workflowId: string, waitMs: number): Promise<Waited<T>> {
  if (waitMs <= 0) return { finished: false };
  const signal = AbortSignal.timeout(waitMs);
  try {
    const result = (await client.withAbortSignal(signal, () => client.workflow.getHandle(workflowId).result())) as T;
    return { finished: true, result };
  } catch (err) {
    if (signal.aborted) return { finished: false };
    throw err;
  }
}
