import Router from '@koa/router';
import { ProviderEventChargeRequest } from '../../../lib/schemas/market';
import { ProviderRevenueQuery } from '../../../lib/schemas/market-hosted';
import type { UserState } from '../../context';
import type { ApiDeps } from '../../deps';
import { ApiError } from '../../errors';
import { CHARGE_STATUSES, chargeProviderEvent } from '../../services/market/charge';
import { providerRevenue } from '../../services/market/revenue';
import { parseBody, parseQuery, parseUuidParam } from '../../validation';

/** /provider: event charges (verification runs, no money, and market runs, production) and the provider's revenue. */
export function providerRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();

  router.post('/provider/runs/:runId/charge', async (ctx) => {
    const user = ctx.state.user;
    const runId = parseUuidParam('runId', ctx.params.runId);
    const idempotencyKey = ctx.get('idempotency-key');
    if (!idempotencyKey) throw CHARGE_STATUSES.idempotencyKeyRequired();
    if (idempotencyKey.length > 200)
      throw new ApiError(400, 'validation_failed', 'idempotency-key is at most 200 characters', [
        { path: 'header.idempotency-key', message: 'is too long' },
      ]);
    const body = parseBody(ProviderEventChargeRequest, ctx.state.body);
    ctx.body = await chargeProviderEvent(deps, {
      runId,
      callerId: user.userId,
      idempotencyKey,
      chargeToken: ctx.get('x-service-charge-token'),
      body,
    });
  });

  /** The provider's revenue from its market runs. */
  router.get('/provider/revenue', async (ctx) => {
    const user = ctx.state.user;
    const page = parseQuery<{ page: number; pageSize: number }>(ProviderRevenueQuery, ctx.query);
    ctx.body = await providerRevenue(deps.db, user.userId, page);
  });

  return router;
}
