import type { AuthenticatedUser } from '../../../db/repos/users';
import type { Job } from '../../../db/schema';
import { normalizeCookies } from '../../../lib/page/cookies';
import { maskCookies, sealRequestSecrets } from '../../../lib/request-secrets';
import type { ScrapeRequestBody } from '../../../lib/schemas/scrape';
import type { ScrapeWorkflowInput } from '../../../workflows/scrape';
import type { ApiDeps } from '../../deps';
import { badRequest } from '../../errors';
import { assertLlmModel } from '../shared/assert-llm-model';
import { assertStructuredOutput } from '../shared/assert-structured-output';
import { preflightUrl } from '../shared/url-preflight';
import { idempotencyKeyOf, startMeteredJob } from './start-metered-job';

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

/**
 * POST /scrape: what a schema cannot say checked (the URLs at the door, the structured output, the model, the
 * cookies), then the job admitted and its workflow started (startMeteredJob), its cookies sealed apart from the
 * stored request. `idempotencyHeader` is the request's Idempotency-Key ('' for none).
 */
export async function startScrape(
  deps: ApiDeps,
  user: AuthenticatedUser,
  body: ScrapeRequestBody,
  idempotencyHeader: string,
): Promise<Job> {
  checkScrapeSemantics(body, deps);
  return startMeteredJob(deps, {
    user,
    kind: 'scrape',
    request: { ...body, ...(body.cookies !== undefined && { cookies: maskCookies(body.cookies) }) },
    webhookUrl: body.webhook_url ?? null,
    idempotencyKey: idempotencyKeyOf(idempotencyHeader),
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
}
