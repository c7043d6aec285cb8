import Router from '@koa/router';
import type { Middleware, Next } from 'koa';
import type { WebContext, WebState } from './context';
import { isDatabaseUnavailable } from '../db/connect';
import { log } from '../lib/log';
import { assetRoutes } from './assets';
import type { WebDeps } from './deps';
import { marketRoutes } from './market/routes/market';
import { consoleRoutes } from './routes/console';
import { oauthRoutes } from './routes/oauth';
import type { OAuthServer } from '../api/services/oauth/authorization-server';
import { providerRoutes } from './market/routes/provider';
import { providerWizardRoutes } from './market/routes/provider-wizard';
import { tryRoutes } from './market/routes/try';
import { agentOrderRoutes } from './market/routes/agent-orders';
import { PageError, pageNotFound, sendPage, setSecurityHeaders } from './page';
import { ErrorPage } from './pages/error';

/** The addresses the pages own; everything else (the API, MCP endpoints, health, admin) is not theirs. */
export function isPagePath(path: string): boolean {
  return path === '/' || /^\/(market|console|assets)(\/|$)/.test(path) || path.startsWith('/oauth/interaction/');
}

/** An error as the page to show: a PageError as it is, a status-carrying API error by its status, anything else 500. */
function pageFor(err: unknown): PageError {
  if (err instanceof PageError) return err;
  if (isDatabaseUnavailable(err))
    return new PageError(503, 'Temporarily unavailable', 'The database is unavailable; try again in a few seconds.');
  const status = (err as { status?: unknown }).status;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new PageError(status, status === 404 ? 'Page not found' : 'Request refused', (err as Error).message);
  }
  return new PageError(
    500,
    'Something went wrong',
    'An unexpected error occurred; the request id below identifies it in the server log.',
  );
}

/**
 * The server-rendered pages (public market pages, the console, their assets), served by the API's
 * Koa process beside the API. Every answer gets the pages' security headers; failures become HTML
 * error pages (the API keeps its JSON error body: these paths are not the API's).
 */
export function webPages(deps: WebDeps, oauth?: OAuthServer): Middleware {
  const router = new Router<WebState>();
  router.get('/', (ctx) => ctx.redirect('/market'));
  const pages = [
    marketRoutes(deps),
    tryRoutes(deps),
    agentOrderRoutes(deps),
    consoleRoutes(deps),
    providerRoutes(deps),
    providerWizardRoutes(deps),
    assetRoutes(),
    ...(oauth ? [oauthRoutes(deps, oauth)] : []),
  ];
  for (const routes of pages) router.use(routes.routes());
  // The router's own middleware, run here rather than in the app's chain (so that an unmatched page path ends here).
  // Called here with the app's context (not a router's): the router adds its params and router fields itself.
  const routes = router.routes() as unknown as Middleware<WebState>;
  const allowed = router.allowedMethods() as unknown as Middleware<WebState>;

  return async (ctx: WebContext, next: Next) => {
    if (!isPagePath(ctx.path)) return next();
    setSecurityHeaders(ctx);
    try {
      await allowed(ctx, () => routes(ctx, async () => undefined));
      if (ctx.status === 405 || ctx.status === 501)
        throw new PageError(405, 'Method not allowed', `${ctx.method} is not allowed here.`);
      if (ctx.status === 404 && ctx.body === undefined) throw pageNotFound();
    } catch (err) {
      const page = pageFor(err);
      if (page.status >= 500) {
        const logger = ctx.state.log ?? log();
        logger.error(
          { err, requestId: ctx.state.requestId, method: ctx.method },
          'page failed with an unexpected error',
        );
      }
      await sendPage(
        ctx,
        <ErrorPage status={page.status} title={page.title} message={page.message} requestId={ctx.state.requestId} />,
        {
          status: page.status,
          private: true,
        },
      );
    }
  };
}
