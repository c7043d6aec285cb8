import Router from '@koa/router';
import { normalizeCookies } from '../../lib/page/cookies';
import type { ScrapeWorkflowInput } from '../../workflows/scrape';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { badRequest } from '../errors';
import { ScrapeRequest, type ScrapeRequestBody } from '../../lib/schemas/scrape';
import { idempotencyKeyOf, startMeteredJob } from '../services/jobs/start-metered-job';
import { preflightUrl } from '../services/shared/url-preflight';
import { assertStructuredOutput } from '../services/shared/assert-structured-output';
import { assertLlmModel } from '../services/shared/assert-llm-model';
import { parseBody } from '../validation';
import { isTerminalJobStatus, jobAfterBoundedWait } from '../services/jobs/job-status';
import { addJobStatusRoute, untilClientGone } from './job-status';
import { maskCookies, sealRequestSecrets } from '../../lib/request-secrets';

function checkScrapeSemantics(body: ScrapeRequestBody, deps: ApiDeps): void {
  preflightUrl('url', body.url, deps.policy);
  if (body.webhook_url) preflightUrl('webhook_url', body.webhook_url, deps.policy);
  assertStructuredOutput(body.structured_output);
  assertLlmModel(deps.config.modelPrices, body);
  if (body.cookies !== undefined) {
    try {
      normalizeCookies(body.cookies, body.url);
    } catch (err) {
      throw badRequest('cookies are invalid', [{ path: 'body/cookies', message: (err as Error).message }]);
    }
  }
  body.mobile_proxy_country = body.mobile_proxy_country.toUpperCase();
}

export function scrapeRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();

  router.post('/scrape', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBody<ScrapeRequestBody>(ScrapeRequest, ctx.state.body);
    checkScrapeSemantics(body, deps);
    const job = await startMeteredJob(deps, {
      user,
      kind: 'scrape',
      request: { ...body, ...(body.cookies !== undefined && { cookies: maskCookies(body.cookies) }) },
      webhookUrl: body.webhook_url ?? null,
      idempotencyKey: idempotencyKeyOf(ctx.get('idempotency-key')),
      sealSecrets:
        body.cookies === undefined
          ? undefined
          : (jobId) => sealRequestSecrets(deps.config.masterKey, jobId, { cookies: body.cookies }),
      workflowType: 'scrapeWorkflow',
      workflowArgs: (j) => [
        {
          jobId: j.id,
          browserTaskQueue: deps.config.taskQueues.browser,
          hasWebhook: !!body.webhook_url,
        } satisfies ScrapeWorkflowInput,
      ],
    });
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
