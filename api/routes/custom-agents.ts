import Router from '@koa/router';
import { McpDiscoveryRequest } from '../../lib/schemas/tools';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { parseBody, parseBodyAs, parseUuidParam } from '../validation';
import { agentRunExtras } from '../services/agents/run-record';
import { addJobStatusRoute } from './job-status';
import {
  CustomAgentRequest,
  CustomAgentUpdateRequest,
  type CustomAgentBody,
  type CustomAgentUpdateBody,
} from '../../lib/schemas/custom-agents';
import { createCustomAgent, findOwnCustomAgent, updateCustomAgent } from '../services/agents/stored-agents';
import { mergeCustomAgent, unsealedAgent } from '../services/agents/custom-agent-config';
import { startCustomAgentRun } from '../services/agents/custom-agent-run';
import { discoverTools } from '../services/agents/tool-discovery';

/** Custom agents (contract, "Custom agents"): stored (scheduled) agents, single runs, their records, and discovery of tool sources. */
export function customAgentRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();

  router.post('/agents', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBodyAs<CustomAgentBody>(CustomAgentRequest, ctx.state.body);
    const created = await createCustomAgent(deps, user, body);
    ctx.status = 201;
    ctx.body = created;
  });

  router.patch('/agents/:id', async (ctx) => {
    const user = ctx.state.user;
    const id = parseUuidParam('id', ctx.params.id);
    const patch = parseBodyAs<CustomAgentUpdateBody>(CustomAgentUpdateRequest, ctx.state.body);
    const row = await findOwnCustomAgent(deps, user.userId, id);
    const merged = parseBodyAs<CustomAgentBody>(CustomAgentRequest, mergeCustomAgent(unsealedAgent(deps, row), patch));
    ctx.body = await updateCustomAgent(deps, row, merged);
  });

  router.post('/agents/run', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBodyAs<CustomAgentBody>(CustomAgentRequest, ctx.state.body);
    const job = await startCustomAgentRun(deps, user, body, ctx.get('idempotency-key'));
    ctx.status = 202;
    ctx.body = { queued: true, jobId: job.id, status: 'pending' };
  });

  addJobStatusRoute(router, deps, '/agents/runs', 'custom-agent', 'Custom agent run', (job) =>
    agentRunExtras(deps.db, job),
  );

  router.post('/agents/discover-mcp', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBody(McpDiscoveryRequest, ctx.state.body);
    ctx.body = await discoverTools(deps, user, body);
  });

  return router;
}
