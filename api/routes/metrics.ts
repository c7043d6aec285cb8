import Router from '@koa/router';
import type { Context, Next } from 'koa';
import { constantTimeEquals } from '../../lib/crypto';
import { log } from '../../lib/log';
import type { AppState } from '../context';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { metricsText } from '../services/metrics/platform-metrics';

/** Scrapers authenticate with `Authorization: Bearer <METRICS_TOKEN>` (the admin token when METRICS_TOKEN is unset). */
function requireMetricsToken(token: string) {
  return async (ctx: Context, next: Next) => {
    const header = ctx.get('authorization');
    const given = header.startsWith('Bearer ') ? header.slice(7) : '';
    if (!given || !constantTimeEquals(given, token)) {
      throw new ApiError(
        401,
        'unauthorized',
        'Missing or invalid metrics token (send Authorization: Bearer <METRICS_TOKEN, or ADMIN_TOKEN when unset>)',
        undefined,
        {
          'WWW-Authenticate': 'Bearer realm="metrics"',
        },
      );
    }
    await next();
  };
}

/** GET /metrics: Prometheus text format; this process's series plus the platform state from Postgres. */
export function metricsRoutes(deps: ApiDeps): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/metrics', requireMetricsToken(deps.config.metrics.token ?? deps.config.adminToken), async (ctx) => {
    const { contentType, body } = await metricsText(deps.db, ctx.state.log ?? log());
    ctx.type = contentType;
    ctx.body = body;
  });
  return router;
}
