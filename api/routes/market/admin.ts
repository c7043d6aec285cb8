import type Router from '@koa/router';
import type { Context } from 'koa';
import { MARKETS, type Market, type SubmissionStatus } from '../../../lib/market/review-state';
import { AdminMarketReviewRequest, AdminMarketSubmissionsQuery } from '../../../lib/schemas/market';
import type { AppState } from '../../context';
import type { ApiDeps } from '../../deps';
import { ApiError } from '../../errors';
import { marketReview } from '../../services/market/review';
import { parseBody, parseQuery, parseUuidParam } from '../../validation';
import { marketErrors } from './common';

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
 * GET  /admin/market/{mcp|agent}/submissions?status=&q=&page=&pageSize=  (q: name or slug contains, or the id or listing id)
 * POST /admin/market/{mcp|agent}/submissions/{id}/review  {action: approve|reject|disable, reason?}
 * (the console's review queue calls the same service, api/services/market/review.ts).
 */
export function registerMarketAdminRoutes(router: Router<AppState>, deps: ApiDeps): void {
  const review = marketReview(deps);
  router.use('/market', marketErrors());

  router.get('/market/:market/submissions', async (ctx) => {
    const market = marketParam(ctx);
    const query = parseQuery<{ status?: SubmissionStatus; q?: string; page: number; pageSize: number }>(
      AdminMarketSubmissionsQuery,
      ctx.query,
    );
    ctx.body = await review.list(market, { status: query.status, nameContains: query.q }, query);
  });

  router.post('/market/:market/submissions/:id/review', async (ctx) => {
    const market = marketParam(ctx);
    const id = parseUuidParam('id', ctx.params.id);
    const body = parseBody(AdminMarketReviewRequest, ctx.state.body);
    ctx.body = await review.review(market, id, body.action, body.reason);
  });
}
