import type Router from '@koa/router';
import type { Context } from 'koa';
import {
  getSubmissionForReview,
  listSubmissionsForReview,
  reviewSubmission,
  type MarketDetailsHooks,
  type SubmissionCore,
} from '../../db/repos/market-submissions';
import { findMcpSubmissions, mcpMarketHooks, type McpSubmission } from '../../db/repos/market-mcp';
import { findDriftFlags, type DriftFlag } from '../../db/repos/market-tool-calls';
import { agentMarketHooks, findAgentSubmissions, type AgentSubmission } from '../../db/repos/market-agents';
import { ownerToolDefinition, pricingEventDefinition } from '../../lib/market/listing';
import { microsToUsd } from '../../lib/money';
import { paginationMeta } from '../../db/repos/pagination';
import { MarketRuleError } from '../../lib/market/errors';
import { MARKETS, type Market, type ReviewAction, type SubmissionStatus } from '../../lib/market/review-state';
import { AdminMarketReviewRequest, AdminMarketSubmissionsQuery } from '../../lib/schemas/market';
import type { AppState } from '../context';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { marketToolsViewer, type MarketToolView } from '../services/agent-market-tools';
import { parseBody, parseQuery, parseUuidParam } from '../validation';
import { marketErrors } from './market-common';

/** What the review screen shows of any market's submission (never secrets, staticConfig or prompts). */
function coreView(sub: SubmissionCore) {
  return {
    id: sub.id,
    market: sub.market,
    publicId: sub.listingId,
    parentEntryId: sub.parentEntryId,
    live: sub.live,
    status: sub.status,
    slug: sub.slug,
    name: sub.name,
    description: sub.description,
    ownerId: sub.ownerId,
    reviewReason: sub.reviewReason,
    createdAt: sub.createdAt.toISOString(),
    submittedAt: sub.submittedAt?.toISOString() ?? null,
    reviewedAt: sub.reviewedAt?.toISOString() ?? null,
    approvedAt: sub.approvedAt?.toISOString() ?? null,
  };
}

function mcpReviewView(sub: McpSubmission, drift: DriftFlag | undefined) {
  return {
    /** The rug-pull gate's flag: approved tools that changed upstream since approval, per tool (null when none). */
    rugPull: drift ?? null,
    type: sub.type,
    sourceFingerprint: sub.sourceFingerprint,
    remoteMcpUrl: sub.remoteMcpUrl,
    openapiBaseUrl: sub.openapiBaseUrl,
    monetizationStrategy: sub.monetizationStrategy,
    toolNames: sub.tools.map((t) => t.toolName),
    /** What consumers will pay and the provider earn: each tool's price (tool_call_fixed) and the pricing events (provider_event). */
    tools: sub.tools.map(ownerToolDefinition),
    pricingEvents: sub.pricingEvents.map(pricingEventDefinition),
    /** What each consumer will be asked to supply. */
    requiredUserParamsSchema: sub.requiredUserParamsSchema,
    approvedToolsHash: sub.approvedToolsHash,
  };
}

/** The reviewer sees what the agent does and costs; its prompts stay sealed (the owner alone reads them). */
function agentReviewView(sub: AgentSubmission, marketTools: MarketToolView[]) {
  return {
    priceUsd: microsToUsd(sub.priceMicros),
    runMode: sub.runMode,
    allowTaskOverride: sub.allowTaskOverride,
    suggestedLlmProvider: sub.suggestedLlmProvider,
    suggestedLlmModel: sub.suggestedLlmModel,
    inputSchema: sub.inputSchema,
    structuredOutput: sub.structuredOutput,
    mcpSelections: sub.mcpSelections,
    /** The market tools the agent calls, with their prices and the agent's cap per run, as consumers see them. */
    marketTools,
    customToolSources: sub.customMcpSelections.map((s) => ({
      type: s.type,
      name: s.name ?? null,
      source_url: s.source_url ?? null,
    })),
  };
}

/** Market-specific parts of the review machinery. */
function marketPlugins(
  deps: ApiDeps,
): Record<
  Market,
  { hooks: MarketDetailsHooks; details(ids: string[]): Promise<Map<string, Record<string, unknown>>> }
> {
  return {
    mcp: {
      hooks: mcpMarketHooks(deps.config.masterKey),
      async details(ids) {
        const [found, drifts] = await Promise.all([findMcpSubmissions(deps.db, ids), findDriftFlags(deps.db, ids)]);
        return new Map([...found].map(([id, sub]) => [id, mcpReviewView(sub, drifts.get(id))]));
      },
    },
    agent: {
      hooks: agentMarketHooks(deps.config.masterKey),
      async details(ids) {
        const found = await findAgentSubmissions(deps.db, ids);
        const marketTools = marketToolsViewer(deps.db);
        return new Map(
          await Promise.all(
            [...found].map(
              async ([id, sub]) => [id, agentReviewView(sub, await marketTools(sub.mcpSelections))] as const,
            ),
          ),
        );
      },
    },
  };
}

function marketParam(ctx: Context): Market {
  const market = String(ctx.params.market);
  if (!(MARKETS as readonly string[]).includes(market)) {
    throw new ApiError(400, 'validation_failed', `Unknown market "${market}"`, [
      { path: 'path.market', message: `must be one of: ${MARKETS.join(', ')}` },
    ]);
  }
  return market as Market;
}

/**
 * Operator review of both markets, on the admin router (prefix /admin, ADMIN_TOKEN):
 * GET  /admin/market/{mcp|agent}/submissions?status=&page=&pageSize=
 * POST /admin/market/{mcp|agent}/submissions/{id}/review  {action: approve|reject|disable, reason?}
 */
export function registerMarketAdminRoutes(router: Router<AppState>, deps: ApiDeps): void {
  const plugins = marketPlugins(deps);
  router.use('/market', marketErrors());

  router.get('/market/:market/submissions', async (ctx) => {
    const market = marketParam(ctx);
    const query = parseQuery<{ status?: SubmissionStatus; page: number; pageSize: number }>(
      AdminMarketSubmissionsQuery,
      ctx.query,
    );
    const { rows, total } = await listSubmissionsForReview(deps.db, market, { status: query.status }, query);
    const details = await plugins[market].details(rows.map((r) => r.id));
    ctx.body = {
      market,
      submissions: rows.map((r) => ({ ...coreView(r), ...(details.get(r.id) ?? {}) })),
      meta: paginationMeta(query, total),
    };
  });

  router.post('/market/:market/submissions/:id/review', async (ctx) => {
    const market = marketParam(ctx);
    const id = parseUuidParam('id', ctx.params.id);
    const body = parseBody<{ action: ReviewAction; reason?: string }>(AdminMarketReviewRequest, ctx.state.body);
    if (body.action === 'reject' && !body.reason?.trim())
      throw new MarketRuleError(400, 'reason_required', 'A rejection needs a reason the provider will see');
    await getSubmissionForReview(deps.db, market, id);
    const reviewed = await reviewSubmission(
      deps.db,
      { market, id, action: body.action, reason: body.reason ?? null },
      plugins[market].hooks,
    );
    const details = await plugins[market].details([reviewed.id]);
    ctx.body = { ...coreView(reviewed), ...(details.get(reviewed.id) ?? {}) };
  });
}
