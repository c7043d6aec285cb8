import Router from '@koa/router';
import type { ApiDeps } from '../deps';

export function healthRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.get('/health', async (ctx) => {
    const checks = await deps.readiness();
    const ready = checks.database && checks.temporal && checks.workers;
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ok' : 'starting', checks };
  });
  return router;
}
