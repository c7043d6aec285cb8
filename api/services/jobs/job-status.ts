import type { Db } from '../../../db/connect';
import type { Job, JobKind } from '../../../db/schema';
import { findJob, getJob } from '../../../db/repos/jobs';
import { JobWaiters } from '../../../db/job-waiters';
import { waitBounded } from '../../../lib/temporal/start';
import type { ApiDeps } from '../../deps';
import { notFound } from '../../errors';

const waitersByDb = new WeakMap<Db, JobWaiters>();

/** The process's long-poll waiters over this database (one re-read loop for all of them). */
export function jobWaitersFor(db: Db): JobWaiters {
  let waiters = waitersByDb.get(db);
  if (!waiters) waitersByDb.set(db, (waiters = new JobWaiters(db)));
  return waiters;
}

/** A job that will not change any more (its workflow may still deliver the webhook). */
export const isTerminalJobStatus = (status: string) => status === 'completed' || status === 'failed';

/**
 * The caller's own job of a kind (`label` names it in the 404 when it is not theirs), held up to `waitMs` until it
 * is terminal (long polling), then read again: the record a plain read gives at that moment. Undefined when the
 * client went away while waiting (nobody to answer).
 */
export async function ownJobStatus(
  db: Db,
  scope: { userId: string; kind: JobKind; jobId: string },
  label: string,
  waitMs: number,
  gone: AbortSignal,
): Promise<Job | undefined> {
  const job = await findJob(db, scope);
  if (!job) throw notFound(label);
  if (waitMs <= 0 || isTerminalJobStatus(job.status)) return job;
  await jobWaitersFor(db).wait(scope.jobId, waitMs, gone);
  if (gone.aborted) return undefined;
  return (await findJob(db, scope)) ?? job;
}

/**
 * A synchronous scrape's job after it is terminal or SYNC_SCRAPE_TIMEOUT_MS passed (or the client went away):
 * held by the process's long-poll waiters when they have room, else by the workflow's own end; then read.
 */
export async function jobAfterBoundedWait(
  deps: Pick<ApiDeps, 'db' | 'temporal' | 'config'>,
  job: Pick<Job, 'id' | 'workflow_id'>,
  gone: AbortSignal,
): Promise<Job> {
  const waiters = jobWaitersFor(deps.db);
  if (!waiters.hasRoom())
    await waitBounded(deps.temporal, job.workflow_id, deps.config.syncScrapeTimeoutMs).catch(() => undefined);
  else await waiters.wait(job.id, deps.config.syncScrapeTimeoutMs, gone);
  return getJob(deps.db, job.id);
}
