import Router from '@koa/router';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { ScrapeRequest } from '../../lib/schemas/scrape';
import { startScrape } from '../services/jobs/scrape';
import { parseBody } from '../validation';
import { isTerminalJobStatus, jobAfterBoundedWait } from '../services/jobs/job-status';
import { addJobStatusRoute, untilClientGone } from './job-status';

export function scrapeRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();

  router.post('/scrape', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBody(ScrapeRequest, ctx.state.body);
    const job = await startScrape(deps, user, body, ctx.get('idempotency-key'));
    if (body.async) {
      ctx.status = 202;
      ctx.body = { jobId: job.id, status: 'pending' };
      return;
    }
    // The job's workflow was started once (startMeteredJob); the request waits, within a bound, for the job to
    // end (not for the workflow: it goes on delivering the webhook, with retries, after the job ended).
    const current = await untilClientGone(ctx, (gone) => jobAfterBoundedWait(deps, job, gone));
    const finished = isTerminalJobStatus(current.status);
    ctx.status = 200;
    if (current.status === 'completed' && current.result) {
      ctx.body = current.result;
    } else {
      const waited = Math.round(deps.config.syncScrapeTimeoutMs / 1000);
      ctx.body = {
        jobId: current.id,
        status: current.status,
        error:
          current.error ??
          (finished
            ? 'the run ended without a result'
            : `not finished after ${waited}s; poll GET /api/v1/scrape/status/${current.id}`),
      };
    }
  });

  addJobStatusRoute(router, deps, '/scrape/status', 'scrape', 'Scrape job');

  return router;
}
