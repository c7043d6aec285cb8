import type { Client } from '@temporalio/client';
import type { Db } from '../db/connect';
import type { Config } from '../lib/config';
import { reconcilePendingJobs } from '../activities/jobs';
import { log } from '../lib/log';
import { startPeriodicPass, type PeriodicPass } from './periodic-pass';

/**
 * Runs the pending-job reconciler at start and every PENDING_JOB_CHECK_EVERY_MS on a platform
 * worker: jobs pending for longer than PENDING_JOB_RECONCILE_AFTER_MS without a workflow are
 * started or failed (see activities/jobs/reconcile). Every platform worker runs one; they agree.
 */
export function startPendingJobReconciler(deps: { db: Db; client: Client; config: Config }): PeriodicPass {
  const { reconcileAfterMs, checkEveryMs } = deps.config.pendingJobs;
  return startPeriodicPass('pending-job reconciler', checkEveryMs, async () => {
    const summary = await reconcilePendingJobs(deps, { olderThanMs: reconcileAfterMs });
    if (summary.started.length)
      log().warn({ jobIds: summary.started }, 'pending-job reconciler started jobs left without a workflow');
    if (summary.failed.length)
      log().warn({ jobIds: summary.failed }, 'pending-job reconciler failed jobs that could not be started');
  });
}
