import type { Db } from '../../../db/connect';
import { iconBelongsTo } from '../../../db/repos/market-icons';
import {
  createRevision,
  createSubmission,
  getOwnSubmission,
  listOwnSubmissions,
  replaceSubmission,
  submitForReview,
} from '../../../db/repos/market-submissions';
import {
  agentDetailsWriter,
  agentMarketHooks,
  approvedToolLookup,
  findAgentSubmission,
  findAgentSubmissions,
  listingStats,
  unsealAgentSecrets,
  type AgentSubmission,
} from '../../../db/repos/market-agents';
import { paginationMeta, type PageRequest } from '../../../lib/pagination';
import type { Config } from '../../../lib/config';
import {
  checkMarketSelections,
  prepareAgentSubmission,
  type PreparedAgentSubmission,
} from '../../../lib/market/agent-submission';
import { maskValues } from '../../../lib/market/listing';
import { transition } from '../../../lib/market/review-state';
import { microsToUsd } from '../../../lib/money';
import type { NetworkPolicy } from '../../../lib/net/ssrf';
import type { AgentMarketSubmissionBody } from '../../../lib/schemas/agent-market';
import { notFound } from '../../errors';
import { submissionCoreFields } from './submission-fields';

/**
 * A provider's agent listings (the agent market's submissions, /agent-market/submissions): draft, replace,
 * submit for review, revise, and the owner's view. The body is read through `readBody` where the route's
 * order puts it (after the submission's state is checked on a replace).
 */

const iconOf = (sub: AgentSubmission, iconUrl: (key: string) => string) =>
  sub.iconObjectKey ? iconUrl(sub.iconObjectKey) : sub.iconUrl;

export function agentListings(deps: { db: Db; config: Config; policy: NetworkPolicy }) {
  const hooks = agentMarketHooks(deps.config.masterKey);
  const approvedTools = approvedToolLookup(deps.db);
  const { draftSlugTtlMs } = deps.config.market;

  /** AgentMarketSubmission: the owner's view, prompts unsealed for the owner only, selection params masked. */
  async function ownView(userId: string, id: string, iconUrl: (key: string) => string) {
    const sub = await findAgentSubmission(deps.db, id, userId);
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
      iconUrl: iconOf(sub, iconUrl),
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

  async function prepare(userId: string, readBody: () => AgentMarketSubmissionBody): Promise<PreparedAgentSubmission> {
    const body = readBody();
    const iconOwned = body.iconObjectKey ? await iconBelongsTo(deps.db, userId, body.iconObjectKey) : false;
    return prepareAgentSubmission(body, {
      iconOwned,
      prices: deps.config.modelPrices,
      policy: deps.policy,
      approvedTools,
    });
  }

  return {
    ownView,

    async create(userId: string, readBody: () => AgentMarketSubmissionBody): Promise<string> {
      const prepared = await prepare(userId, readBody);
      return createSubmission(deps.db, {
        market: 'agent',
        ownerId: userId,
        fields: submissionCoreFields(prepared),
        writeDetails: agentDetailsWriter(deps.config.masterKey, prepared),
        draftSlugTtlMs,
      });
    },

    async list(userId: string, page: PageRequest, iconUrl: (key: string) => string) {
      const { rows, total } = await listOwnSubmissions(deps.db, 'agent', userId, page);
      const found = await findAgentSubmissions(
        deps.db,
        rows.map((r) => r.id),
      );
      const views = [];
      for (const row of rows) if (found.has(row.id)) views.push(await ownView(userId, row.id, iconUrl));
      return { submissions: views, meta: paginationMeta(page, total) };
    },

    async replace(userId: string, id: string, readBody: () => AgentMarketSubmissionBody): Promise<void> {
      transition('update', (await getOwnSubmission(deps.db, 'agent', userId, id)).status);
      const prepared = await prepare(userId, readBody);
      await replaceSubmission(deps.db, {
        market: 'agent',
        ownerId: userId,
        id,
        fields: submissionCoreFields(prepared),
        writeDetails: agentDetailsWriter(deps.config.masterKey, prepared),
        draftSlugTtlMs,
      });
    },

    async submit(userId: string, id: string): Promise<void> {
      const sub = await findAgentSubmission(deps.db, id, userId);
      if (!sub) throw notFound('Submission');
      // The market tools it names must still be approved when it goes to review.
      await checkMarketSelections(sub.mcpSelections, approvedTools, 'mcpSelections');
      await submitForReview(deps.db, 'agent', userId, id, { draftSlugTtlMs });
    },

    revise: (userId: string, id: string) => createRevision(deps.db, 'agent', userId, id, hooks),
  };
}
