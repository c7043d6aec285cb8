import type { Client } from '@temporalio/client';
import type { Db } from '../db/connect';
import type { Config } from '../lib/config';
import { reconcilePendingJobs } from '../activities/jobs';

export interface PendingJobReconciler {
  stop(): Promise<void>;
}

/**
 * Runs the pending-job reconciler at start and every PENDING_JOB_CHECK_EVERY_MS on a platform
 * worker: jobs pending for longer than PENDING_JOB_RECONCILE_AFTER_MS without a workflow are
 * started or failed (see activities/jobs/reconcile). Every platform worker runs one; they agree.
 */
export function startPendingJobReconciler(deps: { db: Db; client: Client; config: Config }): PendingJobReconciler {
  const { reconcileAfterMs, checkEveryMs } = deps.config.pendingJobs;
  let current: Promise<void> | null = null;
  let stopped = false;
  const tick = () => {
    if (current || stopped) return;
    current = reconcilePendingJobs(deps, { olderThanMs: reconcileAfterMs })
      .then((summary) => {
        if (summary.started.length) console.warn(`pending-job reconciler started ${summary.started.length} job(s) left without a workflow: ${summary.started.join(', ')}`);
        if (summary.failed.length) console.warn(`pending-job reconciler failed ${summary.failed.length} job(s) that could not be started: ${summary.failed.join(', ')}`);
      })
      .catch((err) => {
        if (!stopped) console.warn(`pending-job reconciler: ${(err as Error).message}`);
      })
      .finally(() => {
        current = null;
      });
  };
  const timer = setInterval(tick, checkEveryMs);
  timer.unref();
  tick();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await current;
    },
  };
}
