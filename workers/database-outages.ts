import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { isDatabaseUnavailable } from '../db/connect';
import { log } from '../lib/log';

const FIRST_WAIT_MS = 250;
const LONGEST_WAIT_MS = 5_000;
/** Time left for the last run of the activity before its start-to-close timeout. */
const MARGIN_MS = 2_000;

/**
 * Waits out short database outages inside an activity attempt: when the activity fails because
 * Postgres cannot be reached (not because of its query), it runs again after a backoff, until
 * its start-to-close timeout is near; only then does the attempt fail. Retry policies with few
 * attempts (a page fetch gets three) are meant for the page's faults, and a database restart
 * would otherwise use them up and fail the job. Activities are idempotent, as Temporal retries
 * require anyway. Heartbeats while waiting, and stops when the activity is cancelled.
 */
export const waitOutDatabaseOutages: ActivityInterceptorsFactory = (ctx) => ({
  inbound: {
    async execute(input, next) {
      const deadline = Date.now() + ctx.info.startToCloseTimeoutMs - MARGIN_MS;
      for (let wait = FIRST_WAIT_MS, tries = 1; ; wait = Math.min(wait * 2, LONGEST_WAIT_MS), tries++) {
        try {
          return await next(input);
        } catch (err) {
          if (!isDatabaseUnavailable(err) || Date.now() + wait > deadline) throw err;
          log()
            .child({ activityType: ctx.info.activityType, workflowId: ctx.info.workflowExecution?.workflowId })
            .warn(
              { err, tries, retryInMs: wait },
              'the database is unavailable; the activity runs again when it is back',
            );
          if (!ctx.info.isLocal) ctx.heartbeat();
          await ctx.sleep(wait);
        }
      }
    },
  },
});
