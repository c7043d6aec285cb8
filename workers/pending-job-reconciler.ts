import type { Client } from '@temporalio/client';
import type { Db } from '../db/connect';
import type { Config } from '../lib/config';
import { reconcilePendingJobs } from '../activities/jobs';
import { log } from '../lib/log';

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
        if (summary.started.length) log().warn({ jobIds: summary.started }, 'pending-job reconciler started jobs left without a workflow');
        if (summary.failed.length) log().warn({ jobIds: summary.failed }, 'pending-job reconciler failed jobs that could not be started');
      })
      .catch((err) => {
        if (!stopped) log().warn({ err }, 'pending-job reconciler pass failed');
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
