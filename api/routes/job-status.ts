import type Router from '@koa/router';
import type { Context } from 'koa';
import type { Job, JobKind } from '../../db/schema';
import { toJobRecord } from '../../db/job-record';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { badRequest } from '../errors';
import { ownJobStatus } from '../services/jobs/job-status';
import { parseUuidParam } from '../validation';

/** The longest a status request may be held (`?wait=N`, seconds). */
export const MAX_STATUS_WAIT_SECONDS = 30;

/** `?wait=N`: whole seconds 0–30; absent means 0 (answer at once). */
export function parseWaitSeconds(value: string | string[] | undefined): number {
  if (value === undefined) return 0;
  if (Array.isArray(value) || !/^\d{1,6}$/.test(value) || Number(value) > MAX_STATUS_WAIT_SECONDS) {
    throw badRequest(`wait must be a whole number of seconds from 0 to ${MAX_STATUS_WAIT_SECONDS}`, [
      { path: 'query.wait', message: `must be an integer from 0 to ${MAX_STATUS_WAIT_SECONDS}` },
    ]);
  }
  return Number(value);
}

/** Fields a kind adds to the job record (e.g. an agent run's tool calls and usage), read after any wait. */
export type RecordExtension = (job: Job) => Promise<Record<string, unknown>>;

/**
 * `GET <path>/:jobId`: the caller's own job of this kind as the contract shapes it; anything else is
 * a 404. With `?wait=N` a job not yet terminal is held up to N seconds until it is (long polling);
 * the answer is then the same record a plain read gives at that moment.
 */
export function addJobStatusRoute(
  router: Router<UserState>,
  deps: ApiDeps,
  path: string,
  kind: JobKind,
  label: string,
  extend?: RecordExtension,
): void {
  router.get(`${path}/:jobId`, async (ctx) => {
    const user = ctx.state.user;
    const jobId = parseUuidParam('jobId', ctx.params.jobId);
    const waitSeconds = parseWaitSeconds(ctx.query.wait);
    const scope = { userId: user.userId, kind, jobId };
    const job = await untilClientGone(ctx, (gone) => ownJobStatus(deps.db, scope, label, waitSeconds * 1000, gone));
    if (!job) return; // the client went away: nobody to answer
    ctx.body = extend ? { ...toJobRecord(job), ...(await extend(job)) } : toJobRecord(job);
  });
}

/** Runs `work` with a signal that aborts when the client closes the connection (the response's close). */
export async function untilClientGone<T>(ctx: Context, work: (gone: AbortSignal) => Promise<T>): Promise<T> {
  const gone = new AbortController();
  const onClose = () => gone.abort();
  ctx.res.once('close', onClose);
  try {
    return await work(gone.signal);
  } finally {
    ctx.res.off('close', onClose);
  }
}
