import { randomUUID } from 'node:crypto';
import Router from '@koa/router';
import { WorkflowFailedError } from '@temporalio/client';
import type { AuthenticatedUser } from '../../db/repos/users';
import { McpDiscoveryRequest, type McpDiscoveryRequestBody } from '../../lib/schemas/tools';
import { sealDiscoveryParams } from '../../lib/tools/discovery-request';
import { sourceErrorStatus, ToolSourceError, type ToolSourceErrorCode } from '../../lib/tools/errors';
import { parseSourceUrl, preflightSourceUrl } from '../../lib/tools/network';
import type { DiscoverToolsInput, DiscoveryOutcome } from '../../workflows/tools-discovery';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { ApiError, badRequest } from '../errors';
import { parseBody, parseUuidParam } from '../validation';
import { agentRunExtras } from '../services/agents/run-record';
import { addJobStatusRoute } from './job-status';
import { sealRequestSecrets } from '../../lib/request-secrets';
import {
  CustomAgentRequest,
  CustomAgentUpdateRequest,
  type CustomAgentBody,
  type CustomAgentUpdateBody,
} from '../../lib/schemas/custom-agents';
import type { CustomAgentWorkflowInput } from '../../workflows/custom-agent';
import { splitSecrets } from '../services/automations/create-and-schedule';
import { createCustomAgent, findOwnCustomAgent, updateCustomAgent } from '../services/agents/stored-agents';
import {
  agentRunBounds,
  checkCustomAgent,
  mergeCustomAgent,
  unsealedAgent,
} from '../services/agents/custom-agent-config';
import { idempotencyKeyOf, startMeteredJob } from '../services/jobs/start-metered-job';
import { startAndWait } from '../services/shared/start-and-wait';

/** How long POST /agents/discover-mcp waits for its discovery workflow before answering 504. */
const DISCOVERY_WAIT_MS = 60_000;

/** Custom agents (contract, "Custom agents"): stored (scheduled) agents, single runs, their records, and discovery of tool sources. */
export function customAgentRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();

  router.post('/agents', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBody<CustomAgentBody>(CustomAgentRequest, ctx.state.body);
    const created = await createCustomAgent(deps, user, body);
    ctx.status = 201;
    ctx.body = created;
  });

  router.patch('/agents/:id', async (ctx) => {
    const user = ctx.state.user;
    const id = parseUuidParam('id', ctx.params.id);
    const patch = parseBody<CustomAgentUpdateBody>(CustomAgentUpdateRequest, ctx.state.body);
    const row = await findOwnCustomAgent(deps, user.userId, id);
    const merged = parseBody<CustomAgentBody>(CustomAgentRequest, mergeCustomAgent(unsealedAgent(deps, row), patch));
    ctx.body = await updateCustomAgent(deps, row, merged);
  });

  router.post('/agents/run', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBody<CustomAgentBody>(CustomAgentRequest, ctx.state.body);
    await checkCustomAgent(deps, body);
    const { cron: _cron, timezone: _timezone, ...runBody } = body;
    const { payload } = splitSecrets(runBody);
    const job = await startMeteredJob(deps, {
      user,
      kind: 'custom-agent',
      request: payload,
      webhookUrl: body.webhook_url ?? null,
      idempotencyKey: idempotencyKeyOf(ctx.get('idempotency-key')),
      sealSecrets: (jobId) =>
        sealRequestSecrets(deps.config.masterKey, jobId, {
          custom_mcps_params: body.custom_mcps.map((c) => c.params),
          market_mcps_params: body.market_mcps.map((m) => m.params),
        }),
      workflowType: 'customAgentWorkflow',
      workflowArgs: (j) => [
        { jobId: j.id, hasWebhook: !!body.webhook_url, ...agentRunBounds(deps) } satisfies CustomAgentWorkflowInput,
      ],
    });
    ctx.status = 202;
    ctx.body = { queued: true, jobId: job.id, status: 'pending' };
  });

  addJobStatusRoute(router, deps, '/agents/runs', 'custom-agent', 'Custom agent run', (job) =>
    agentRunExtras(deps.db, job),
  );

  router.post('/agents/discover-mcp', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBody<McpDiscoveryRequestBody>(McpDiscoveryRequest, ctx.state.body);
    const workflowId = `tools-discovery-${randomUUID()}`;
    const input = discoveryInput(body, deps, workflowId);
    const outcome = await runDiscovery(deps, user, workflowId, input);
    if (!outcome.ok) throw discoveryError(outcome.code, outcome.message);
    ctx.body = outcome.discovery;
  });

  return router;
}

/** Checks what the schema cannot, refuses forbidden destinations before any work starts, and seals the params. */
function discoveryInput(body: McpDiscoveryRequestBody, deps: ApiDeps, workflowId: string): DiscoverToolsInput {
  const inline = [body.spec, body.specText].filter((value) => value !== undefined && value !== null).length;
  if (body.type === 'remote_mcp') {
    if (!body.url)
      throw badRequest('A remote_mcp source needs url', [
        { path: 'body/url', message: 'is required for type remote_mcp' },
      ]);
    if (inline > 0 || body.openapiBaseUrl)
      throw badRequest('spec, specText and openapiBaseUrl are for type openapi', [
        { path: 'body/type', message: 'is remote_mcp' },
      ]);
  } else if (inline + (body.url ? 1 : 0) !== 1) {
    throw badRequest('An openapi source needs exactly one of url (the document URL), specText or spec', [
      { path: 'body', message: 'give exactly one of url, specText, spec' },
    ]);
  }
  for (const [field, value] of [
    ['url', body.url],
    ['openapiBaseUrl', body.openapiBaseUrl],
  ] as const) {
    if (!value) continue;
    try {
      preflightSourceUrl(parseSourceUrl(value, field), deps.policy);
    } catch (error) {
      if (error instanceof ToolSourceError)
        throw new ApiError(sourceErrorStatus(error.code), error.code, error.message, [
          { path: `body/${field}`, message: error.message },
        ]);
      throw error;
    }
  }
  const params = body.params ?? {};
  return {
    type: body.type,
    ...(body.url && { url: body.url }),
    ...(body.spec && { spec: body.spec }),
    ...(body.specText !== undefined && { specText: body.specText }),
    ...(body.openapiBaseUrl && { baseUrl: body.openapiBaseUrl }),
    ...(Object.keys(params).length > 0 && {
      sealedParams: sealDiscoveryParams(deps.config.masterKey, workflowId, params),
    }),
  };
}

async function runDiscovery(
  deps: ApiDeps,
  user: AuthenticatedUser,
  workflowId: string,
  input: DiscoverToolsInput,
): Promise<DiscoveryOutcome> {
  const outcome = await startAndWait<DiscoveryOutcome>(
    deps.temporal,
    {
      workflowType: 'discoverToolsWorkflow',
      workflowId,
      taskQueue: deps.config.taskQueues.platform,
      args: [input],
      executionTimeout: '5m',
      userId: user.userId,
      kind: 'tools-discovery',
    },
    {
      waitMs: DISCOVERY_WAIT_MS,
      cancelOnTimeout: true,
      failure: (error) =>
        error instanceof WorkflowFailedError
          ? new ApiError(502, 'discovery_failed', 'The discovery failed unexpectedly; try again')
          : undefined,
    },
  );
  if (!outcome.finished)
    throw new ApiError(504, 'discovery_timeout', `The discovery did not finish within ${DISCOVERY_WAIT_MS / 1000} s`);
  return outcome.result;
}

function discoveryError(code: ToolSourceErrorCode, message: string): ApiError {
  return new ApiError(sourceErrorStatus(code), code, message);
}
