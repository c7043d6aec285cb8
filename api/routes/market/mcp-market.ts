import Router from '@koa/router';
import type { McpSubmission } from '../../../db/repos/market-mcp';
import { paginationMeta } from '../../../lib/pagination';
import type { MonetizationStrategy } from '../../../lib/market/listing';
import {
  MarketCredentialBudgetsRequest,
  MarketCredentialsQuery,
  McpCredentialRequest,
} from '../../../lib/schemas/market-hosted';
import { McpMarketDiscoveryRequest, McpMarketListQuery, SubmissionsQuery } from '../../../lib/schemas/market';
import type { UserContext, UserState } from '../../context';
import type { ApiDeps } from '../../deps';
import { notFound, unauthorized } from '../../errors';
import {
  issueEntryCredential,
  listEntryCredentials,
  revokeEntryCredential,
  updateCredentialBudgets,
} from '../../services/market/credentials';
import { searchToolMarket } from '../../services/market/catalog';
import {
  createListingDraft,
  discoverSource,
  eventVerificationView,
  replaceListingDraft,
  startEventVerification,
  startListingRevision,
  submitListing,
  validateSource,
} from '../../services/market/listing';
import { parseBody, parseQuery, parseUuidParam } from '../../validation';
import {
  addRevisionRoute,
  apiBaseUrl,
  iconUrlFor,
  marketErrors,
  ownerSubmissionView,
  publicEntryView,
  publicOrigin,
} from './common';
import {
  findApiKeyOwner,
  findEventVerification,
  findMcpSubmission,
  findMcpSubmissions,
  findPublicMcpEntry,
  listOwnSubmissions,
} from '../../services/market/reads';

/** /mcp-market: the tool market's provider side, its public catalogue and consumers' MCP client credentials (issue table in README "Selling tools"). */
export function mcpMarketRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>({ prefix: '/mcp-market' });
  router.use(marketErrors());

  router.post('/discover', async (ctx) => {
    const body = parseBody(McpMarketDiscoveryRequest, ctx.state.body);
    ctx.body = await discoverSource(deps, ctx.state.user.userId, body);
  });

  router.post('/validate', async (ctx) => {
    const body = parseBody(McpMarketDiscoveryRequest, ctx.state.body);
    ctx.body = await validateSource(deps, ctx.state.user.userId, body);
  });

  router.post('/event-verifications', async (ctx) => {
    ctx.body = await startEventVerification(deps, ctx.state.user.userId, ctx.state.body, apiBaseUrl(ctx, deps));
    ctx.status = 201;
  });

  router.get('/event-verifications/:id', async (ctx) => {
    const user = ctx.state.user;
    const verification = await findEventVerification(deps.db, user.userId, parseUuidParam('id', ctx.params.id));
    if (!verification) throw notFound('Event verification');
    ctx.body = eventVerificationView(verification, apiBaseUrl(ctx, deps));
  });

  const ownView = async (ctx: UserContext, id: string) => {
    const user = ctx.state.user;
    const submission = await findMcpSubmission(deps.db, id, user.userId);
    if (!submission) throw notFound('Submission');
    return ownerSubmissionView(submission, deps, iconUrlFor(ctx, deps));
  };

  router.post('/submissions', async (ctx) => {
    const id = await createListingDraft(deps, ctx.state.user.userId, ctx.state.body, iconUrlFor(ctx, deps));
    ctx.status = 201;
    ctx.body = await ownView(ctx, id);
  });

  router.get('/submissions', async (ctx) => {
    const user = ctx.state.user;
    const page = parseQuery<{ page: number; pageSize: number }>(SubmissionsQuery, ctx.query);
    const { rows, total } = await listOwnSubmissions(deps.db, 'mcp', user.userId, page);
    const details = await findMcpSubmissions(
      deps.db,
      rows.map((r) => r.id),
    );
    const iconUrl = iconUrlFor(ctx, deps);
    ctx.body = {
      submissions: rows
        .map((r) => details.get(r.id))
        .filter((s): s is McpSubmission => !!s)
        .map((s) => ownerSubmissionView(s, deps, iconUrl)),
      meta: paginationMeta(page, total),
    };
  });

  router.get('/submissions/:id', async (ctx) => {
    ctx.body = await ownView(ctx, parseUuidParam('id', ctx.params.id));
  });

  router.put('/submissions/:id', async (ctx) => {
    const id = parseUuidParam('id', ctx.params.id);
    await replaceListingDraft(deps, ctx.state.user.userId, id, ctx.state.body, iconUrlFor(ctx, deps));
    ctx.body = await ownView(ctx, id);
  });

  router.post('/submissions/:id/submit', async (ctx) => {
    const id = parseUuidParam('id', ctx.params.id);
    await submitListing(deps, ctx.state.user.userId, id);
    ctx.body = await ownView(ctx, id);
  });

  addRevisionRoute(router, (userId, id) => startListingRevision(deps, userId, id));

  router.get('/mcps', async (ctx) => {
    const query = parseQuery<{
      q?: string;
      monetizationStrategy?: MonetizationStrategy;
      page: number;
      pageSize: number;
    }>(McpMarketListQuery, ctx.query);
    const { rows, total } = await searchToolMarket(
      deps.db,
      { q: query.q, monetizationStrategy: query.monetizationStrategy },
      query,
    );
    const iconUrl = iconUrlFor(ctx, deps);
    ctx.body = { mcps: rows.map((row) => publicEntryView(row, iconUrl)), meta: paginationMeta(query, total) };
  });

  router.get('/mcps/:id', async (ctx) => {
    const entry = await findPublicMcpEntry(deps.db, parseUuidParam('id', ctx.params.id));
    if (!entry) throw notFound('Market entry');
    ctx.body = publicEntryView(entry, iconUrlFor(ctx, deps));
  });

  /** MCP client credentials for the hosted endpoint of a live entry (the consumer side). */
  router.post('/mcps/:id/credentials', async (ctx) => {
    const user = ctx.state.user;
    const entryId = parseUuidParam('id', ctx.params.id);
    const body = parseBody(McpCredentialRequest, ctx.state.body);
    const issued = await issueEntryCredential(deps, {
      userId: user.userId,
      entryId,
      params: body.params,
      maxTotalUsdPerRun: body.maxTotalUsdPerRun,
      maxRunChargeUsd: body.maxRunChargeUsd,
      label: body.label,
      budgetTotalUsd: body.budgetTotalUsd,
      budgetMonthlyUsd: body.budgetMonthlyUsd,
      apiOrigin: publicOrigin(ctx, deps),
      apiKeyId: async () => {
        const key = await findApiKeyOwner(deps.db, ctx.get('x-api-key'));
        if (!key || key.userId !== user.userId) throw unauthorized();
        return key.apiKeyId;
      },
    });
    if (!issued) throw notFound('Market entry');
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = issued;
  });

  /** The account's credentials (no token, no params) and revoking one of them. */
  router.get('/credentials', async (ctx) => {
    const page = parseQuery<{ page: number; pageSize: number }>(MarketCredentialsQuery, ctx.query);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = await listEntryCredentials(deps.db, ctx.state.user.userId, page);
  });

  /** A credential's budgets (its total, and per calendar month): the next call made with it is bounded by them. */
  router.patch('/credentials/:credentialId', async (ctx) => {
    const credentialId = parseUuidParam('credentialId', ctx.params.credentialId);
    const body = parseBody(MarketCredentialBudgetsRequest, ctx.state.body);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = await updateCredentialBudgets(deps.db, ctx.state.user.userId, credentialId, body);
  });

  router.delete('/credentials/:credentialId', async (ctx) => {
    const credentialId = parseUuidParam('credentialId', ctx.params.credentialId);
    const revoked = await revokeEntryCredential(deps, ctx.state.user.userId, credentialId);
    ctx.body = { id: credentialId, ...revoked };
  });

  return router;
}
