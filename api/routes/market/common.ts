import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import { MarketRuleError } from '../../../lib/market/errors';
import { maskValues, ownerToolDefinition, pricingEventDefinition } from '../../../lib/market/listing';
import type { McpSubmission } from '../../../db/repos/market-mcp';
import type { SubmissionCore } from '../../../db/repos/market-submissions';
import type { Market } from '../../../lib/market/review-state';
import type { UserState } from '../../context';
import type { ApiDeps } from '../../deps';
import { ApiError } from '../../errors';
import { parseUuidParam } from '../../validation';
import { toolEntryView } from '../../services/market/catalog';
import { publicOrigin as originOf } from '../../services/shared/public-urls';
import { deleteSubmission, unsealStaticConfig } from '../../services/market/reads';

/** Market rule violations (MarketRuleError) become the API's error body with the rule's status and code. */
export function marketErrors() {
  return async (_ctx: Context, next: Next) => {
    try {
      await next();
    } catch (err) {
      if (err instanceof MarketRuleError) throw new ApiError(err.status, err.code, err.message, err.details);
      throw err;
    }
  };
}

/** The origin clients reach the API at: PUBLIC_API_URL, else the request's own (X-Forwarded-Host/-Proto only with TRUST_PROXY). */
export const publicOrigin = (ctx: Context, deps: ApiDeps): string => originOf(ctx, deps.config);

export const apiBaseUrl = (ctx: Context, deps: ApiDeps) => `${publicOrigin(ctx, deps)}/api/v1`;

export const iconUrlFor = (ctx: Context, deps: ApiDeps) => (key: string) =>
  `${apiBaseUrl(ctx, deps)}/market/icons/${key}.png`;

/**
 * POST /submissions/:id/revisions of a market's router: a revision of the caller's live approved
 * submission (201, its id), made by `revise` (the market's service, or createRevision with its hooks).
 */
export function addRevisionRoute(
  router: Router<UserState>,
  revise: (userId: string, submissionId: string) => Promise<string>,
): void {
  router.post('/submissions/:id/revisions', async (ctx) => {
    const id = parseUuidParam('id', ctx.params.id);
    ctx.status = 201;
    ctx.body = { id: await revise(ctx.state.user.userId, id) };
  });
}

/** DELETE /submissions/:id of a market's router: the caller deletes a draft or rejected submission (204), releasing its slug. */
export function addDeleteRoute(router: Router<UserState>, deps: ApiDeps, market: Market): void {
  router.delete('/submissions/:id', async (ctx) => {
    const user = ctx.state.user;
    await deleteSubmission(deps.db, market, user.userId, parseUuidParam('id', ctx.params.id));
    ctx.status = 204;
  });
}

function iconUrlOf(sub: SubmissionCore, iconUrl: (key: string) => string): string | null {
  return sub.iconObjectKey ? iconUrl(sub.iconObjectKey) : sub.iconUrl;
}

/** McpMarketPublicEntry: what anyone with an API key sees of a live approved entry. */
export const publicEntryView = toolEntryView;

/** McpMarketSubmission: the owner's view (staticConfig masked). */
export function ownerSubmissionView(sub: McpSubmission, deps: ApiDeps, iconUrl: (key: string) => string) {
  return {
    id: sub.id,
    publicId: sub.listingId,
    live: sub.live,
    slug: sub.slug,
    type: sub.type,
    name: sub.name,
    description: sub.description,
    iconUrl: iconUrlOf(sub, iconUrl),
    iconObjectKey: sub.iconObjectKey,
    status: sub.status,
    parentEntryId: sub.parentEntryId,
    remoteMcpUrl: sub.remoteMcpUrl,
    openapiBaseUrl: sub.openapiBaseUrl,
    openapiSpec: sub.openapiSpec,
    staticConfig: maskValues(unsealStaticConfig(deps.config.masterKey, sub)),
    requiredUserParamsSchema: sub.requiredUserParamsSchema,
    monetizationStrategy: sub.monetizationStrategy,
    pricingEvents: sub.pricingEvents.map(pricingEventDefinition),
    tools: sub.tools.map(ownerToolDefinition),
    sourceFingerprint: sub.sourceFingerprint,
    validationId: sub.validationId,
    eventVerificationId: sub.eventVerificationId,
    discoveryCache: sub.discoveryCache,
    reviewReason: sub.reviewReason,
    approvedToolsHash: sub.approvedToolsHash,
    createdAt: sub.createdAt.toISOString(),
    updatedAt: sub.updatedAt.toISOString(),
    submittedAt: sub.submittedAt?.toISOString() ?? null,
    reviewedAt: sub.reviewedAt?.toISOString() ?? null,
  };
}
