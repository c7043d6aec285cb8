import Router from '@koa/router';
import { findApiKeyOwner, listProviderRevenue, loadCallEntry } from '../../db/repos/market-tool-calls';
import { paginationMeta } from '../../db/repos/pagination';
import { issueMcpCredential, paramsSchemaHash } from '../../lib/market/credential';
import { checkUserParams } from '../../lib/market/user-params-schema';
import { microsToUsd, usdToWholeMicros } from '../../lib/money';
import { McpCredentialRequest, ProviderRevenueQuery } from '../../lib/schemas/market-hosted';
import type { SourceParamValues } from '../../lib/tools/types';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { ApiError, notFound, unauthorized } from '../errors';
import { marketMcpUrl } from '../mcp/market';
import { parseBody, parseQuery, parseUuidParam } from '../validation';
import { marketErrors, publicOrigin } from './market-common';

/** The credential's cap per run (maxTotalUsdPerRun, or its deprecated alias maxRunChargeUsd) in whole micro-USD, or null. */
function credentialCapMicros(body: { maxTotalUsdPerRun?: number; maxRunChargeUsd?: number }): number | null {
  const { maxTotalUsdPerRun: cap, maxRunChargeUsd: alias } = body;
  if (cap !== undefined && alias !== undefined && cap !== alias) {
    throw new ApiError(400, 'validation_failed', 'maxRunChargeUsd is a deprecated alias of maxTotalUsdPerRun: send one of them', [{ path: 'body/maxRunChargeUsd', message: 'differs from maxTotalUsdPerRun' }]);
  }
  const usd = cap ?? alias;
  if (usd === undefined) return null;
  const micros = usdToWholeMicros(usd);
  if (micros === null || micros <= 0) {
    const name = cap !== undefined ? 'maxTotalUsdPerRun' : 'maxRunChargeUsd';
    throw new ApiError(400, 'validation_failed', `${name} must be a positive amount in whole micro-USD`, [{ path: `body/${name}`, message: 'is not a whole number of micro-USD' }]);
  }
  return micros;
}

/**
 * The consumer side of the tool market: MCP client credentials for the hosted endpoint; and the
 * provider's revenue view.
 */
export function marketConsumerRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();
  router.use(marketErrors());

  router.post('/mcp-market/mcps/:id/credentials', async (ctx) => {
    const user = ctx.state.user;
    const entryId = parseUuidParam('id', ctx.params.id);
    const body = parseBody<{ params: SourceParamValues; maxTotalUsdPerRun?: number; maxRunChargeUsd?: number }>(McpCredentialRequest, ctx.state.body);
    const entry = await loadCallEntry(deps.db, deps.config.masterKey, entryId);
    if (!entry) throw notFound('Market entry');
    checkUserParams(entry.requiredUserParamsSchema, body.params, 'body/params');
    const capMicros = credentialCapMicros(body);
    const key = await findApiKeyOwner(deps.db, ctx.get('x-api-key'));
    if (!key || key.userId !== user.userId) throw unauthorized();
    const { token, claims } = issueMcpCredential(deps.config.masterKey, {
      entryId: entry.entryId,
      userId: user.userId,
      apiKeyId: key.apiKeyId,
      params: body.params,
      paramsSchemaHash: paramsSchemaHash(entry.requiredUserParamsSchema),
      capMicros,
    });
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = {
      credential: token,
      mcpUrl: marketMcpUrl(deps, publicOrigin(ctx, deps), entry.entryId),
      credentialId: claims.id,
      entryId: entry.entryId,
      maxTotalUsdPerRun: capMicros === null ? null : microsToUsd(capMicros),
      maxRunChargeUsd: capMicros === null ? null : microsToUsd(capMicros),
    };
  });

  router.get('/provider/revenue', async (ctx) => {
    const user = ctx.state.user;
    const page = parseQuery<{ page: number; pageSize: number }>(ProviderRevenueQuery, ctx.query);
    const { totals, runs, total } = await listProviderRevenue(deps.db, user.userId, page);
    ctx.body = { totals, runs, meta: paginationMeta(page, total) };
  });

  return router;
}

