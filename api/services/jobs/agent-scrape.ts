import type { AuthenticatedUser } from '../../../db/repos/users';
import type { Job } from '../../../db/schema';
import { maskCookies, maskSensitiveData, sealRequestSecrets } from '../../../lib/request-secrets';
import type { AgenticScraperRequestBody } from '../../../lib/schemas/agentscraper';
import type { AgentWorkflowInput } from '../../../workflows/agent';
import type { ApiDeps } from '../../deps';
import { badRequest } from '../../errors';
import { assertLlmModel } from '../shared/assert-llm-model';
import { assertStructuredOutput } from '../shared/assert-structured-output';
import { preflightUrl } from '../shared/url-preflight';
import { idempotencyKeyOf, startMeteredJob } from './start-metered-job';

function checkAgentSemantics(body: AgenticScraperRequestBody, deps: ApiDeps): void {
  if (body.webhook_url) preflightUrl('webhook_url', body.webhook_url, deps.policy);
  assertStructuredOutput(body.structured_output);
  assertLlmModel(deps.config.modelPrices, body);
  const ids = (body.sensitive_data ?? []).map((item) => item.id);
  const duplicate = ids.find((id, i) => ids.indexOf(id) !== i);
  if (duplicate)
    throw badRequest('sensitive_data ids must be unique', [
      { path: 'body/sensitive_data', message: `duplicate id "${duplicate}"` },
    ]);
  if (body.proxy_country) body.proxy_country = body.proxy_country.toUpperCase();
}

/**
 * POST /agentscraper: what a schema cannot say checked, then the browser agent's job admitted and its workflow
 * started (startMeteredJob), its cookies and sensitive data sealed apart from the stored request.
 * `idempotencyHeader` is the request's Idempotency-Key ('' for none).
 */
export async function startAgentScrape(
  deps: ApiDeps,
  user: AuthenticatedUser,
  body: AgenticScraperRequestBody,
  idempotencyHeader: string,
): Promise<Job> {
  checkAgentSemantics(body, deps);
  const hasSecrets = body.cookies !== undefined || (body.sensitive_data?.length ?? 0) > 0;
  return startMeteredJob(deps, {
    user,
    kind: 'agentic',
    request: {
      ...body,
      ...(body.cookies !== undefined && { cookies: maskCookies(body.cookies) }),
      ...(body.sensitive_data && { sensitive_data: maskSensitiveData(body.sensitive_data) }),
    },
    webhookUrl: body.webhook_url ?? null,
    idempotencyKey: idempotencyKeyOf(idempotencyHeader),
    sealSecrets: hasSecrets
      ? (jobId) =>
          sealRequestSecrets(deps.config.masterKey, jobId, {
            cookies: body.cookies,
            sensitive_data: body.sensitive_data,
          })
      : undefined,
    workflowType: 'agentWorkflow',
    workflowArgs: (j) => [
      {
        jobId: j.id,
        browserTaskQueue: deps.config.taskQueues.browser,
        hasWebhook: !!body.webhook_url,
        taskCount: 1 + (body.follow_up_tasks?.length ?? 0),
        maxSteps: deps.config.agent.maxSteps,
        deadlineMs: deps.config.agent.deadlineMs,
        historyEventsLimit: deps.config.agent.historyEventsLimit,
        browserSession: deps.config.agent.browserSession && {
          openWaitMinMs: deps.config.agent.browserSession.openWaitMinMs,
          openHeartbeatTimeoutMs: deps.config.agent.browserSession.openHeartbeatTimeoutMs,
          keeperHeartbeatTimeoutMs: deps.config.agent.browserSession.keeperHeartbeatTimeoutMs,
        },
        agentName: 'browser-agent',
      } satisfies AgentWorkflowInput,
    ],
  });
}
