import type Router from '@koa/router';
import type { ApiDeps } from '../../api/deps';
import type { Config } from '../../lib/config';

/**
 * What api/app.ts `createRouter` needs to register its routes, with nothing behind the database,
 * Temporal or the network: a router built from it lists its routes and must never serve a request
 * (registering a route touches none of them).
 */
export function routeListingDeps(config: Config): ApiDeps {
  return {
    config,
    db: {} as ApiDeps['db'],
    temporal: {} as ApiDeps['temporal'],
    policy: {} as ApiDeps['policy'],
    social: {} as ApiDeps['social'],
    readiness: async () => ({ database: false, temporal: false, workers: false }),
  };
}

/**
 * Every route of a koa router as "METHOD /path/{param}": koa-router's `:param` written as OpenAPI's
 * `{param}`, a route for every method (router.all) as "ANY /path", and HEAD (which koa-router adds
 * beside each GET) left out. Middleware layers (router.use) have no methods and are not routes.
 */
export function routerRoutes(router: Router<any>): string[] {
  const routes = router.stack
    .filter((layer) => layer.methods.length > 0)
    .flatMap((layer) => {
      const template = String(layer.path).replace(/:([A-Za-z_]+)/g, '{$1}');
      const methods = layer.methods.filter((m) => m !== 'HEAD');
      return methods.length > 10 ? [`ANY ${template}`] : methods.map((m) => `${m} ${template}`);
    });
  return [...new Set(routes)];
}
