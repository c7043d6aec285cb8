import Router from '@koa/router';
import type { AppState } from '../context';
import type { ApiDeps } from '../deps';

export function healthRoutes(deps: ApiDeps): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/health', async (ctx) => {
    const checks = await deps.readiness();
    const ready = checks.database && checks.temporal && checks.workers;
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ok' : 'starting', checks };
  });
  return router;
}
