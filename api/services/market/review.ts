import type { Db } from '../../../db/connect';
import {
  getSubmissionForReview,
  listSubmissionsForReview,
  reviewSubmission,
  type MarketDetailsHooks,
  type SubmissionCore,
} from '../../../db/repos/market-submissions';
import { findMcpSubmissions, mcpMarketHooks, type McpSubmission } from '../../../db/repos/market-mcp';
import { findDriftFlags, type DriftFlag } from '../../../db/repos/market-tool-calls';
import { agentMarketHooks, findAgentSubmissions, type AgentSubmission } from '../../../db/repos/market-agents';
import { paginationMeta } from '../../../lib/pagination';
import { findValidationReports } from '../../../db/repos/market-validations';
import { canonicalJson } from '../../../lib/market/canonical-json';
import type { ValidationReport, ValidationStatus } from '../../../lib/market/validation-report';
import { ownerToolDefinition, pricingEventDefinition } from '../../../lib/market/listing';
import { MarketRuleError } from '../../../lib/market/errors';
import type { Market, ReviewAction, SubmissionStatus } from '../../../lib/market/review-state';
import { microsToUsd } from '../../../lib/money';
import { marketToolsViewer, type MarketToolView } from './agent-tools';

/**
 * Operator review of both markets: what a reviewer sees of a submission and the decision itself.
 * The admin REST routes (/admin/market/...) and the console's review queue both call these.
 */

/** What the review screen shows of any market's submission (never secrets, staticConfig or prompts). */
export function coreView(sub: SubmissionCore) {
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

export type CoreReviewView = ReturnType<typeof coreView>;
export type McpReviewView = CoreReviewView & ReturnType<typeof mcpReviewView> & { market: 'mcp' };
export type AgentReviewView = CoreReviewView & ReturnType<typeof agentReviewView> & { market: 'agent' };
export type ReviewView = McpReviewView | AgentReviewView;

interface MarketPlugin {
  hooks: MarketDetailsHooks;
  details(ids: string[]): Promise<Map<string, Record<string, unknown>>>;
}

/** Market-specific parts of the review machinery. */
function marketPlugins(db: Db, masterKey: Buffer): Record<Market, MarketPlugin> {
  return {
    mcp: {
      hooks: mcpMarketHooks(masterKey),
      async details(ids) {
        const [found, drifts] = await Promise.all([findMcpSubmissions(db, ids), findDriftFlags(db, ids)]);
        return new Map([...found].map(([id, sub]) => [id, mcpReviewView(sub, drifts.get(id))]));
      },
    },
    agent: {
      hooks: agentMarketHooks(masterKey),
      async details(ids) {
        const found = await findAgentSubmissions(db, ids);
        const marketTools = marketToolsViewer(db);
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

type ToolDefinition = ReturnType<typeof ownerToolDefinition>;

/** One tool's change between the live entry and its revision: added, removed, or which fields changed (old and new value). */
export interface ToolChange {
  toolName: string;
  change: 'added' | 'removed' | 'changed';
  fields: { field: string; before: unknown; after: unknown }[];
}

const COMPARED_FIELDS = [
  'displayName',
  'description',
  'upstreamDescription',
  'inputSchema',
  'clientPriceUsd',
  'isEnabled',
] as const;

/** The tool-definition diff of a revision against the entry it would replace (unchanged tools are left out). */
export function toolDefinitionDiff(before: ToolDefinition[], after: ToolDefinition[]): ToolChange[] {
  const old = new Map(before.map((t) => [t.toolName, t]));
  const changes: ToolChange[] = [];
  for (const tool of after) {
    const previous = old.get(tool.toolName);
    old.delete(tool.toolName);
    if (!previous) {
      changes.push({ toolName: tool.toolName, change: 'added', fields: [] });
      continue;
    }
    const fields = COMPARED_FIELDS.filter(
      (f) =>
        canonicalJson(previous[f as keyof ToolDefinition] ?? null) !==
        canonicalJson(tool[f as keyof ToolDefinition] ?? null),
    ).map((field) => ({
      field,
      before: previous[field as keyof ToolDefinition] ?? null,
      after: tool[field as keyof ToolDefinition] ?? null,
    }));
    if (fields.length) changes.push({ toolName: tool.toolName, change: 'changed', fields });
  }
  for (const name of old.keys()) changes.push({ toolName: name, change: 'removed', fields: [] });
  return changes;
}

/** What a reviewer weighs beside a tool-market submission: its validation report and, for a revision, what changes. */
export interface McpEvidence {
  validation: { status: ValidationStatus; report: ValidationReport } | null;
  /** Null unless the submission is a revision of a live entry. */
  revisionDiff: ToolChange[] | null;
}

/** The review machinery of both markets, bound to a database and the master key (which seals what submissions hold). */
export function marketReview(deps: { db: Db; config: { masterKey: Buffer } }) {
  const plugins = marketPlugins(deps.db, deps.config.masterKey);
  const withDetails = async (market: Market, rows: SubmissionCore[]): Promise<ReviewView[]> => {
    const details = await plugins[market].details(rows.map((r) => r.id));
    return rows.map((r) => ({ ...coreView(r), ...(details.get(r.id) ?? {}) }) as ReviewView);
  };
  return {
    /** GET /admin/market/{market}/submissions. */
    async list(
      market: Market,
      filter: { status?: SubmissionStatus; nameContains?: string },
      page: { page: number; pageSize: number },
    ) {
      const { rows, total } = await listSubmissionsForReview(deps.db, market, filter, page);
      return { market, submissions: await withDetails(market, rows), meta: paginationMeta(page, total) };
    },
    /** One submission as a reviewer sees it (404 not_found when the market has none with this id). */
    async get(market: Market, id: string): Promise<ReviewView> {
      const [view] = await withDetails(market, [await getSubmissionForReview(deps.db, market, id)]);
      return view!;
    },
    /** The validation reports and revision diffs of these tool-market submissions, by submission id. */
    async mcpEvidence(views: McpReviewView[]): Promise<Map<string, McpEvidence>> {
      const subs = await findMcpSubmissions(
        deps.db,
        views.map((v) => v.id),
      );
      const parentIds = [...subs.values()].map((s) => s.parentEntryId).filter((id): id is string => id !== null);
      const [reports, parents] = await Promise.all([
        findValidationReports(
          deps.db,
          [...subs.values()].map((s) => s.validationId),
        ),
        findMcpSubmissions(deps.db, parentIds),
      ]);
      return new Map(
        [...subs].map(([id, sub]) => {
          const parent = sub.parentEntryId ? parents.get(sub.parentEntryId) : undefined;
          return [
            id,
            {
              validation: reports.get(sub.validationId) ?? null,
              revisionDiff: parent
                ? toolDefinitionDiff(parent.tools.map(ownerToolDefinition), sub.tools.map(ownerToolDefinition))
                : null,
            },
          ];
        }),
      );
    },
    /** POST /admin/market/{market}/submissions/{id}/review: approve, reject (with a reason) or disable. */
    async review(market: Market, id: string, action: ReviewAction, reason?: string | null): Promise<ReviewView> {
      if (action === 'reject' && !reason?.trim())
        throw new MarketRuleError(400, 'reason_required', 'A rejection needs a reason the provider will see');
      await getSubmissionForReview(deps.db, market, id);
      const reviewed = await reviewSubmission(
        deps.db,
        { market, id, action, reason: reason ?? null },
        plugins[market].hooks,
      );
      const [view] = await withDetails(market, [reviewed]);
      return view!;
    },
  };
}
