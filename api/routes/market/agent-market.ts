import Router from '@koa/router';
import type { AgentPurchase, AgentSubmission } from '../../../db/repos/market-agents';
import { paginationMeta } from '../../../lib/pagination';
import { agentRunExtras } from '../../services/agents/run-record';
import { marketToolsViewer } from '../../services/market/agent-tools';
import { addJobStatusRoute } from '../job-status';
import { microsToUsd } from '../../../lib/money';
import {
  AgentMarketListQuery,
  AgentMarketSubmissionRequest,
  MarketAgentRunRequest,
} from '../../../lib/schemas/agent-market';
import { SubmissionsQuery } from '../../../lib/schemas/market';
import type { UserContext, UserState } from '../../context';
import type { ApiDeps } from '../../deps';
import { notFound } from '../../errors';
import { idempotencyKeyOf } from '../../services/jobs/start-metered-job';
import { agentListings } from '../../services/market/agent-listing';
import { buyMarketAgent, runMarketAgent } from '../../services/market/agent-orders';
import { agentEntryView, mayRunAgent, searchAgentMarket } from '../../services/market/catalog';
import { findPublicAgent } from '../../services/market/reads';
import { parseBody, parseQuery, parseUuidParam } from '../../validation';
import { addDeleteRoute, addRevisionRoute, iconUrlFor, marketErrors } from './common';

/** AgentMarketPublicEntry: what any caller sees of a live approved agent. */
export const publicAgentView = agentEntryView;

const purchaseView = (p: AgentPurchase) => ({
  purchaseId: p.id,
  priceUsd: microsToUsd(Number(p.price_micros)),
  agentId: p.listing_id,
  createdAt: new Date(p.created_at).toISOString(),
});

/**
 * The agent market (docs/agent-market.md): providers' submissions (the shared review machinery of
 * market-submissions), the public catalogue, purchases and runs on the shared browser-agent runtime.
 */
export function agentMarketRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>({ prefix: '/agent-market' });
  router.use(marketErrors());

  const listings = agentListings(deps);
  const ownView = (ctx: UserContext, id: string) => listings.ownView(ctx.state.user.userId, id, iconUrlFor(ctx, deps));
  const readBody = (ctx: UserContext) => () => parseBody(AgentMarketSubmissionRequest, ctx.state.body);

  router.post('/submissions', async (ctx) => {
    const id = await listings.create(ctx.state.user.userId, readBody(ctx));
    ctx.status = 201;
    ctx.body = await ownView(ctx, id);
  });

  router.get('/submissions', async (ctx) => {
    const page = parseQuery<{ page: number; pageSize: number }>(SubmissionsQuery, ctx.query);
    ctx.body = await listings.list(ctx.state.user.userId, page, iconUrlFor(ctx, deps));
  });

  router.get('/submissions/:id', async (ctx) => {
    ctx.body = await ownView(ctx, parseUuidParam('id', ctx.params.id));
  });

  router.put('/submissions/:id', async (ctx) => {
    const id = parseUuidParam('id', ctx.params.id);
    await listings.replace(ctx.state.user.userId, id, readBody(ctx));
    ctx.body = await ownView(ctx, id);
  });

  router.post('/submissions/:id/submit', async (ctx) => {
    const id = parseUuidParam('id', ctx.params.id);
    await listings.submit(ctx.state.user.userId, id);
    ctx.body = await ownView(ctx, id);
  });

  addRevisionRoute(router, listings.revise);
  addDeleteRoute(router, deps, 'agent');

  /** Whether the caller may run the agent: their own, free, or bought. */
  const mayRun = (agent: AgentSubmission, userId: string) => mayRunAgent(deps.db, agent, userId);

  const liveAgent = async (ctx: UserContext) => {
    const agent = await findPublicAgent(deps.db, parseUuidParam('agentId', ctx.params.agentId));
    if (!agent) throw notFound('Agent');
    return agent;
  };

  router.get('/agents', async (ctx) => {
    const user = ctx.state.user;
    const query = parseQuery<{ q?: string; page: number; pageSize: number }>(AgentMarketListQuery, ctx.query);
    const { rows, total } = await searchAgentMarket(deps.db, { q: query.q }, query);
    const iconUrl = iconUrlFor(ctx, deps);
    const marketTools = marketToolsViewer(deps.db);
    const agents = [];
    for (const row of rows)
      agents.push(publicAgentView(row, iconUrl, await mayRun(row, user.userId), await marketTools(row.mcpSelections)));
    ctx.body = { agents, meta: paginationMeta(query, total) };
  });

  router.get('/agents/:agentId', async (ctx) => {
    const user = ctx.state.user;
    const agent = await liveAgent(ctx);
    ctx.body = publicAgentView(
      agent,
      iconUrlFor(ctx, deps),
      await mayRun(agent, user.userId),
      await marketToolsViewer(deps.db)(agent.mcpSelections),
    );
  });

  router.post('/agents/:agentId/purchase', async (ctx) => {
    const user = ctx.state.user;
    const agent = await liveAgent(ctx);
    const result = await buyMarketAgent(deps, user, agent);
    ctx.status = result.outcome === 'created' ? 201 : 200;
    ctx.body = purchaseView(result.purchase);
  });

  router.post('/agents/:agentId/run', async (ctx) => {
    const user = ctx.state.user;
    const agent = await liveAgent(ctx);
    const body = parseBody(MarketAgentRunRequest, ctx.state.body);
    const job = await runMarketAgent(deps, user, agent, body, idempotencyKeyOf(ctx.get('idempotency-key')));
    ctx.status = 202;
    ctx.body = { jobId: job.id, status: 'pending' };
  });

  /** The run record: the job record plus agentId, toolCalls and usage; the caller's own runs only (long polling with ?wait=N). */
  addJobStatusRoute(router, deps, '/runs', 'agent-market', 'Agent-market run', async (job) => ({
    agentId: (job.request as { agentId: string }).agentId,
    ...(await agentRunExtras(deps.db, job)),
  }));

  return router;
}
