import type Router from '@koa/router';
import type { Context } from 'koa';
import type { JobKind } from '../../db/schema';
import { findJob } from '../../db/repos/jobs';
import type { AuthenticatedUser } from '../../db/repos/users';
import { toJobRecord } from '../../db/job-record';
import type { ApiDeps } from '../deps';
import { notFound } from '../errors';
import { parseUuidParam } from '../validation';

/** `GET <path>/:jobId`: the caller's own job of this kind as the contract shapes it; anything else is a 404. */
export function addJobStatusRoute(router: Router, deps: ApiDeps, path: string, kind: JobKind, label: string): void {
  router.get(`${path}/:jobId`, async (ctx: Context) => {
    const user = ctx.state.user as AuthenticatedUser;
    const jobId = parseUuidParam('jobId', ctx.params.jobId);
    const job = await findJob(deps.db, { userId: user.userId, kind, jobId });
    if (!job) throw notFound(label);
    ctx.body = toJobRecord(job);
  });
}
