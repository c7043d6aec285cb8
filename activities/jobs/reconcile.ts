import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Db } from '../../db/connect';
import type { Job } from '../../db/schema';
import { abandonJob, appendJobLog, listStalePendingJobs } from '../../db/repos/jobs';
import { startOnce } from '../../lib/temporal/start';

export interface PendingJobsReconciliation {
  /** Jobs whose workflow was missing and is now started. */
  started: string[];
  /** Jobs that could not be started: failed with a clear error, hold released, operation given back. */
  failed: string[];
  /** Jobs whose workflow exists and runs; left alone. */
  running: string[];
}

async function workflowStatus(client: Client, job: Job): Promise<string | null> {
  try {
    return (await client.workflow.getHandle(job.workflow_id).describe()).status.name;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return null;
    throw err;
  }
}

/**
 * Finds jobs left `pending` for longer than `olderThanMs` (a process died between committing the
 * job and starting its workflow, or the start failed and the abandon did not happen) and settles
 * each: a job without a workflow is started from the start stored on its row, or failed when it has
 * none or the start is refused; a job whose workflow ended without taking it up is failed. Safe to
 * run from any number of workers at once: starts are deduplicated by the workflow id and only a
 * still-pending job is failed.
 */
export async function reconcilePendingJobs(
  deps: { db: Db; client: Client },
  options: { olderThanMs: number; limit?: number },
): Promise<PendingJobsReconciliation> {
  const { db, client } = deps;
  const summary: PendingJobsReconciliation = { started: [], failed: [], running: [] };
  const fail = async (job: Job, reason: string) => {
    if (await abandonJob(db, job, reason)) summary.failed.push(job.id);
  };
  for (const job of await listStalePendingJobs(db, options.olderThanMs, options.limit ?? 100)) {
    const status = await workflowStatus(client, job);
    if (status === 'RUNNING') {
      summary.running.push(job.id);
      continue;
    }
    if (status !== null) {
      await fail(
        job,
        `The run's workflow ended (${status.toLowerCase()}) before it took up the job; nothing was charged`,
      );
      continue;
    }
    if (!job.workflow_type || !job.workflow_task_queue || !job.workflow_args) {
      await fail(job, 'The run was accepted but never started, and it cannot be started now; nothing was charged');
      continue;
    }
    try {
      await startOnce(client, {
        workflowId: job.workflow_id,
        workflowType: job.workflow_type,
        taskQueue: job.workflow_task_queue,
        args: job.workflow_args,
        userId: job.user_id,
        kind: job.kind,
      });
      await appendJobLog(
        db,
        job.id,
        'workflow started by the pending-job reconciler (the request that accepted the job did not start it)',
      );
      summary.started.push(job.id);
    } catch (err) {
      await fail(job, `The run could not be started (${(err as Error).message}); nothing was charged`);
    }
  }
  return summary;
}
