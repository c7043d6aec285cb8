import Router from '@koa/router';
import { maskCookies, maskSensitiveData, sealRequestSecrets } from '../../lib/request-secrets';
import type { AgentWorkflowInput } from '../../workflows/agent';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { badRequest } from '../errors';
import { AgenticScraperRequest, type AgenticScraperRequestBody } from '../../lib/schemas/agentscraper';
import { idempotencyKeyOf, startMeteredJob } from '../services/jobs/start-metered-job';
import { preflightUrl } from '../services/shared/url-preflight';
import { assertStructuredOutput } from '../services/shared/assert-structured-output';
import { assertLlmModel } from '../services/shared/assert-llm-model';
import { parseBody } from '../validation';
import { addJobStatusRoute } from './job-status';

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

export function agentScraperRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();

  router.post('/agentscraper', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBody<AgenticScraperRequestBody>(AgenticScraperRequest, ctx.state.body);
    checkAgentSemantics(body, deps);
    const hasSecrets = body.cookies !== undefined || (body.sensitive_data?.length ?? 0) > 0;
    const job = await startMeteredJob(deps, {
      user,
      kind: 'agentic',
      request: {
        ...body,
        ...(body.cookies !== undefined && { cookies: maskCookies(body.cookies) }),
        ...(body.sensitive_data && { sensitive_data: maskSensitiveData(body.sensitive_data) }),
      },
      webhookUrl: body.webhook_url ?? null,
      idempotencyKey: idempotencyKeyOf(ctx.get('idempotency-key')),
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
    ctx.status = 202;
    ctx.body = { jobId: job.id, status: 'pending' };
  });

  addJobStatusRoute(router, deps, '/agentscraper/status', 'agentic', 'Agentic job');

  return router;
}
