import Router from '@koa/router';
import type { AuthenticatedUser } from '../../db/repos/users';
import { findApiKeyOwner, listProviderRevenue, loadCallEntry } from '../../db/repos/market-tool-calls';
import { paginationMeta } from '../../db/repos/pagination';
import { issueMcpCredential, paramsSchemaHash } from '../../lib/market/credential';
import { checkUserParams } from '../../lib/market/user-params-schema';
import { microsToUsd, usdToWholeMicros } from '../../lib/money';
import { McpCredentialRequest, ProviderRevenueQuery } from '../../lib/schemas/market-hosted';
import type { SourceParamValues } from '../../lib/tools/types';
import type { ApiDeps } from '../deps';
import { ApiError, notFound, unauthorized } from '../errors';
import { marketMcpUrl } from '../mcp/market';
import { parseBody, parseQuery, parseUuidParam } from '../validation';
import { marketErrors, publicOrigin } from './market-common';

/**
 * The consumer side of the tool market: MCP client credentials for the hosted endpoint; and the
 * provider's revenue view.
 */
export function marketConsumerRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.use(marketErrors());

  router.post('/mcp-market/mcps/:id/credentials', async (ctx) => {
    const user = ctx.state.user as AuthenticatedUser;
    const entryId = parseUuidParam('id', ctx.params.id);
    const body = parseBody<{ params: SourceParamValues; maxRunChargeUsd?: number }>(McpCredentialRequest, ctx.state.body);
    const entry = await loadCallEntry(deps.db, deps.config.masterKey, entryId);
    if (!entry) throw notFound('Market entry');
    checkUserParams(entry.requiredUserParamsSchema, body.params, 'body/params');
    let capMicros: number | null = null;
    if (body.maxRunChargeUsd !== undefined) {
      capMicros = usdToWholeMicros(body.maxRunChargeUsd);
      if (capMicros === null || capMicros <= 0) throw new ApiError(400, 'validation_failed', 'maxRunChargeUsd must be a positive amount in whole micro-USD', [{ path: 'body/maxRunChargeUsd', message: 'is not a whole number of micro-USD' }]);
    }
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
      maxRunChargeUsd: capMicros === null ? null : microsToUsd(capMicros),
    };
  });

  router.get('/provider/revenue', async (ctx) => {
    const user = ctx.state.user as AuthenticatedUser;
    const page = parseQuery<{ page: number; pageSize: number }>(ProviderRevenueQuery, ctx.query);
    const { totals, runs, total } = await listProviderRevenue(deps.db, user.userId, page);
    ctx.body = { totals, runs, meta: paginationMeta(page, total) };
  });

  return router;
}

