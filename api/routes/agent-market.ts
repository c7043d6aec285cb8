import Router from '@koa/router';
import { iconBelongsTo } from '../../db/repos/market-icons';
import {
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
  purchaseAgent,
  recordAgentRun,
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
  checkRunInputs,
  fillTemplate,
  prepareAgentSubmission,
  type PreparedAgentSubmission,
} from '../../lib/market/agent-submission';
import { commissionOf, ratePpm } from '../../lib/market/commission';
import { MarketRuleError } from '../../lib/market/errors';
import { maskValues } from '../../lib/market/listing';
import { transition } from '../../lib/market/review-state';
import { microsToUsd, usdToWholeMicros } from '../../lib/money';
import { sealRequestSecrets } from '../../lib/request-secrets';
import {
  AgentMarketListQuery,
  AgentMarketSubmissionRequest,
  MarketAgentRunRequest,
  type AgentMarketSubmissionBody,
  type MarketAgentRunBody,
} from '../../lib/schemas/agent-market';
import { SubmissionsQuery } from '../../lib/schemas/market';
import type { AgentWorkflowInput } from '../../workflows/agent';
import type { UserContext, UserState } from '../context';
import type { ApiDeps } from '../deps';
import { ApiError, notFound } from '../errors';
import { idempotencyKeyOf, startMeteredJob } from '../services/jobs';
import { assertLlmModel } from '../services/llm-model';
import { preflightUrl } from '../services/url-preflight';
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
  const commissionPpm = ratePpm(deps.config.market.commissionRate);
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
    const body = parseBody<AgentMarketSubmissionBody>(AgentMarketSubmissionRequest, ctx.state.body);
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

  addRevisionRoute(router, deps, 'agent', hooks);
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
    if (agent.ownerId === user.userId)
      throw new MarketRuleError(409, 'own_agent', 'This is your own agent: you run it without buying it');
    if (agent.priceMicros === 0)
      throw new MarketRuleError(409, 'free_agent', 'This agent is free: run it without buying it');
    const result = await purchaseAgent(deps.db, {
      agent,
      consumerId: user.userId,
      commissionMicros: commissionOf(agent.priceMicros, commissionPpm),
      agentName: `agent-market:${agent.slug}`,
    });
    if (result.outcome === 'insufficient_funds') {
      throw new ApiError(
        402,
        'insufficient_funds',
        `The available balance (balance minus the amounts held for running work) does not cover the price of ${microsToUsd(agent.priceMicros)} USD`,
      );
    }
    ctx.status = result.outcome === 'created' ? 201 : 200;
    ctx.body = purchaseView(result.purchase);
  });

  router.post('/agents/:agentId/run', async (ctx) => {
    const user = ctx.state.user;
    const agent = await liveAgent(ctx);
    const body = parseBody<MarketAgentRunBody>(MarketAgentRunRequest, ctx.state.body);
    if (!(await mayRun(agent, user.userId))) {
      throw new ApiError(
        402,
        'purchase_required',
        `This agent costs ${microsToUsd(agent.priceMicros)} USD: buy it first (POST /agent-market/agents/${agent.listingId}/purchase)`,
      );
    }
    const inputs = body.inputs ?? {};
    if (agent.runMode === 'task') {
      if (!body.task)
        throw new ApiError(400, 'task_required', 'This agent runs a task you give: send task', [
          { path: 'body/task', message: 'is required for a task agent' },
        ]);
      if (Object.keys(inputs).length) checkRunInputs(agent.inputSchema, inputs);
    } else {
      if (body.task !== undefined && !agent.allowTaskOverride) {
        throw new ApiError(400, 'task_not_allowed', 'This template agent does not accept a task; send inputs only', [
          { path: 'body/task', message: 'not accepted by this agent' },
        ]);
      }
      checkRunInputs(agent.inputSchema, inputs);
    }
    if (body.max_total_usd !== undefined && usdToWholeMicros(body.max_total_usd) === null) {
      throw new ApiError(400, 'validation_failed', 'max_total_usd must be an amount in whole micro-USD', [
        { path: 'body/max_total_usd', message: 'is not a whole number of micro-USD' },
      ]);
    }
    const llm = {
      llm_provider: body.llm_provider ?? agent.suggestedLlmProvider,
      llm_model: body.llm_model ?? agent.suggestedLlmModel,
    };
    assertLlmModel(deps.config.modelPrices, llm);
    if (body.webhook_url)
      preflightUrl('webhook_url', body.webhook_url, deps.policy, { requireHttps: true }, 'insecure_webhook_url');
    await checkMarketSelections(agent.mcpSelections, approvedTools, 'mcpSelections', 409);

    const secrets = unsealAgentSecrets(deps.config.masterKey, agent);
    const task =
      agent.runMode === 'task'
        ? body.task!
        : [fillTemplate(secrets.promptTemplate ?? '', inputs), body.task].filter(Boolean).join('\n\n');
    // What the run record shows: the consumer's own request and the listing's public settings. The
    // task the model sees, the provider's prompt, skills and selections are sealed into the job and
    // unsealed only by the activities that call the model or the tools.
    const request = {
      agentId: agent.listingId,
      ...(body.inputs !== undefined && { inputs }),
      ...(body.task !== undefined && { task: body.task }),
      ...llm,
      headless: body.headless,
      ...(body.webhook_url && { webhook_url: body.webhook_url }),
      // The consumer's cap on each market tool of the run (activities/tools/market.ts selectionCapMicros).
      ...(body.max_total_usd !== undefined && { max_total_usd: body.max_total_usd }),
      ...(agent.structuredOutput && { structured_output: agent.structuredOutput }),
      vision_mode: 'auto',
      vision_detail_level: 'auto',
      optimization_mode: 'balanced',
      max_actions_per_step: 5,
    };
    const agentName = `agent-market:${agent.slug}`;
    const job = await startMeteredJob(deps, {
      user,
      kind: 'agent-market',
      request,
      webhookUrl: body.webhook_url ?? null,
      idempotencyKey: idempotencyKeyOf(ctx.get('idempotency-key')),
      sealSecrets: (jobId) =>
        sealRequestSecrets(deps.config.masterKey, jobId, {
          task,
          agent_instructions: secrets.systemPrompt,
          ...(secrets.promptTemplate && { agent_template: secrets.promptTemplate }),
          ...(agent.skills && { skills: agent.skills }),
          agent_selections: {
            market: agent.mcpSelections.map((s, i) => ({ ...s, params: secrets.selectionParams.market[i] ?? {} })),
            custom: agent.customMcpSelections.map((s, i) => ({
              ...s,
              params: secrets.selectionParams.custom[i] ?? {},
            })),
          },
        }),
      workflowType: 'agentWorkflow',
      workflowArgs: (j) => [
        {
          jobId: j.id,
          browserTaskQueue: deps.config.taskQueues.browser,
          hasWebhook: !!body.webhook_url,
          taskCount: 1,
          maxSteps: deps.config.agent.maxSteps,
          deadlineMs: deps.config.agent.deadlineMs,
          historyEventsLimit: deps.config.agent.historyEventsLimit,
          agentName,
          selectionTools: agent.mcpSelections.length + agent.customMcpSelections.length > 0,
        } satisfies AgentWorkflowInput,
      ],
    });
    await recordAgentRun(deps.db, { jobId: job.id, agent, consumerId: user.userId });
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
