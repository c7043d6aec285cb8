import Router from '@koa/router';
import { iconBelongsTo } from '../../db/repos/market-icons';
import {
  createRevision,
  createSubmission,
  getOwnSubmission,
  listOwnSubmissions,
  replaceSubmission,
  submitForReview,
} from '../../db/repos/market-submissions';
import {
  agentDetailsWriter,
  agentMarketHooks,
  approvedToolLookup,
  findAgentSubmission,
  findAgentSubmissions,
  findPublicAgent,
  listingStats,
  unsealAgentSecrets,
  type AgentPurchase,
  type AgentSubmission,
} from '../../db/repos/market-agents';
import { paginationMeta } from '../../db/repos/pagination';
import { agentRunExtras } from '../services/agent-run-record';
import { marketToolsViewer } from '../services/agent-market-tools';
import { addJobStatusRoute } from './job-status';
import {
  checkMarketSelections,
  prepareAgentSubmission,
  type PreparedAgentSubmission,
} from '../../lib/market/agent-submission';
import { maskValues } from '../../lib/market/listing';
import { transition } from '../../lib/market/review-state';
import { microsToUsd } from '../../lib/money';
import {
  AgentMarketListQuery,
  AgentMarketSubmissionRequest,
  MarketAgentRunRequest,
} from '../../lib/schemas/agent-market';
import { SubmissionsQuery } from '../../lib/schemas/market';
import type { UserContext, UserState } from '../context';
import type { ApiDeps } from '../deps';
import { notFound } from '../errors';
import { idempotencyKeyOf } from '../services/jobs';
import { buyMarketAgent, runMarketAgent } from '../services/agent-market-orders';
import { agentEntryView, mayRunAgent, searchAgentMarket } from '../services/market-catalog';
import { parseBody, parseQuery, parseUuidParam } from '../validation';
import { addDeleteRoute, addRevisionRoute, iconUrlFor, marketErrors, submissionCoreFields } from './market-common';

const iconOf = (sub: AgentSubmission, iconUrl: (key: string) => string) =>
  sub.iconObjectKey ? iconUrl(sub.iconObjectKey) : sub.iconUrl;

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
  const hooks = agentMarketHooks(deps.config.masterKey);
  const approvedTools = approvedToolLookup(deps.db);
  const { draftSlugTtlMs } = deps.config.market;

  /** AgentMarketSubmission: the owner's view, prompts unsealed for the owner only, selection params masked. */
  async function ownView(ctx: UserContext, id: string) {
    const user = ctx.state.user;
    const sub = await findAgentSubmission(deps.db, id, user.userId);
    if (!sub) throw notFound('Submission');
    const secrets = unsealAgentSecrets(deps.config.masterKey, sub);
    const stats = await listingStats(deps.db, sub.listingId);
    return {
      id: sub.id,
      publicId: sub.listingId,
      live: sub.live,
      slug: sub.slug,
      name: sub.name,
      description: sub.description,
      iconUrl: iconOf(sub, iconUrlFor(ctx, deps)),
      iconObjectKey: sub.iconObjectKey,
      status: sub.status,
      parentEntryId: sub.parentEntryId,
      priceUsd: microsToUsd(sub.priceMicros),
      suggestedLlmProvider: sub.suggestedLlmProvider,
      suggestedLlmModel: sub.suggestedLlmModel,
      runMode: sub.runMode,
      allowTaskOverride: sub.allowTaskOverride,
      systemPrompt: secrets.systemPrompt,
      promptTemplate: secrets.promptTemplate,
      inputSchema: sub.inputSchema,
      structuredOutput: sub.structuredOutput,
      skills: sub.skills,
      mcpSelections: sub.mcpSelections.map((s, i) => ({
        ...s,
        params: maskValues(secrets.selectionParams.market[i] ?? {}),
      })),
      customMcpSelections: sub.customMcpSelections.map((s, i) => ({
        ...s,
        params: maskValues(secrets.selectionParams.custom[i] ?? {}),
      })),
      reviewReason: sub.reviewReason,
      stats: { purchases: stats.purchases, runs: stats.runs, revenueUsd: microsToUsd(stats.revenueMicros) },
      createdAt: sub.createdAt.toISOString(),
      updatedAt: sub.updatedAt.toISOString(),
      submittedAt: sub.submittedAt?.toISOString() ?? null,
      reviewedAt: sub.reviewedAt?.toISOString() ?? null,
    };
  }

  async function prepare(ctx: UserContext): Promise<PreparedAgentSubmission> {
    const user = ctx.state.user;
    const body = parseBody(AgentMarketSubmissionRequest, ctx.state.body);
    const iconOwned = body.iconObjectKey ? await iconBelongsTo(deps.db, user.userId, body.iconObjectKey) : false;
    return prepareAgentSubmission(body, {
      iconOwned,
      prices: deps.config.modelPrices,
      policy: deps.policy,
      approvedTools,
    });
  }

  router.post('/submissions', async (ctx) => {
    const user = ctx.state.user;
    const prepared = await prepare(ctx);
    const id = await createSubmission(deps.db, {
      market: 'agent',
      ownerId: user.userId,
      fields: submissionCoreFields(prepared),
      writeDetails: agentDetailsWriter(deps.config.masterKey, prepared),
      draftSlugTtlMs,
    });
    ctx.status = 201;
    ctx.body = await ownView(ctx, id);
  });

  router.get('/submissions', async (ctx) => {
    const user = ctx.state.user;
    const page = parseQuery<{ page: number; pageSize: number }>(SubmissionsQuery, ctx.query);
    const { rows, total } = await listOwnSubmissions(deps.db, 'agent', user.userId, page);
    const found = await findAgentSubmissions(
      deps.db,
      rows.map((r) => r.id),
    );
    const views = [];
    for (const row of rows) if (found.has(row.id)) views.push(await ownView(ctx, row.id));
    ctx.body = { submissions: views, meta: paginationMeta(page, total) };
  });

  router.get('/submissions/:id', async (ctx) => {
    ctx.body = await ownView(ctx, parseUuidParam('id', ctx.params.id));
  });

  router.put('/submissions/:id', async (ctx) => {
    const user = ctx.state.user;
    const id = parseUuidParam('id', ctx.params.id);
    transition('update', (await getOwnSubmission(deps.db, 'agent', user.userId, id)).status);
    const prepared = await prepare(ctx);
    await replaceSubmission(deps.db, {
      market: 'agent',
      ownerId: user.userId,
      id,
      fields: submissionCoreFields(prepared),
      writeDetails: agentDetailsWriter(deps.config.masterKey, prepared),
      draftSlugTtlMs,
    });
    ctx.body = await ownView(ctx, id);
  });

  router.post('/submissions/:id/submit', async (ctx) => {
    const user = ctx.state.user;
    const id = parseUuidParam('id', ctx.params.id);
    const sub = await findAgentSubmission(deps.db, id, user.userId);
    if (!sub) throw notFound('Submission');
    // The market tools it names must still be approved when it goes to review.
    await checkMarketSelections(sub.mcpSelections, approvedTools, 'mcpSelections');
    await submitForReview(deps.db, 'agent', user.userId, id, { draftSlugTtlMs });
    ctx.body = await ownView(ctx, id);
  });

  addRevisionRoute(router, (userId, id) => createRevision(deps.db, 'agent', userId, id, hooks));
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
