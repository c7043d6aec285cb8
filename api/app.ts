import Koa from 'koa';
import Router from '@koa/router';
import type { AppState, UserState } from './context';
import type { ApiDeps } from './deps';
import { errorHandler } from './middleware/errors';
import { requestId } from './middleware/request-id';
import { requestLog } from './middleware/request-log';
import { jsonBody } from './middleware/json-body';
import { requireApiKey } from './middleware/auth';
import { mcpEndpoint } from './mcp/endpoint';
import { DOCS_MCP_PATH, docsMcpEndpoint } from './mcp/docs';
import { marketMcpEndpoint } from './mcp/market';
import { buildOpenApiDocument } from './openapi/document';
import { buildDocsSite } from './docs/site';
import { loadDocSources } from './docs/load';
import { accountRoutes } from './routes/account';
import { adminRoutes } from './routes/admin';
import { agentMarketRoutes } from './routes/market/agent-market';
import { agentScraperRoutes } from './routes/agentscraper';
import { automationRoutes } from './routes/automations';
import { customAgentRoutes } from './routes/custom-agents';
import { docsRoutes } from './routes/docs';
import { healthRoutes } from './routes/health';
import { logRoutes } from './routes/logs';
import { marketIconRoutes, publicMarketIconRoutes } from './routes/market/icons';
import { mcpMarketRoutes } from './routes/market/mcp-market';
import { metricsRoutes } from './routes/metrics';
import { providerRoutes } from './routes/market/provider';
import { scrapeRoutes } from './routes/scrape';
import { skillsRoutes } from './routes/skills';
import { socialAccountRoutes } from './routes/social-accounts';
import { webPages } from '../web/app';
import { createOAuthServer, type OAuthServer } from './services/oauth/authorization-server';
import { protectedResourceRoutes } from './routes/oauth';

export function createApp(deps: ApiDeps): Koa {
  // X-Forwarded-* are believed only from the proxies the operator says are there (TRUST_PROXY).
  const app = new Koa({ proxy: deps.config.trustProxyHops > 0, maxIpsCount: deps.config.trustProxyHops });
  app.use(requestId());
  app.use(requestLog());
  app.use(errorHandler());
  // The pages (web/): /, /market…, /console…, /assets…, /oauth/interaction…; every other path is the API's.
  // The authorization server of the hosted MCP endpoints (/oauth…, /.well-known/oauth-authorization-server,
  // each endpoint's /.well-known/oauth-protected-resource/mcp/{entryId}); its consent pages are web/'s.
  const oauth = createOAuthServer(deps);
  app.use(webPages(deps, oauth));
  app.use(oauth.middleware);
  app.use(protectedResourceRoutes(deps, oauth).routes());
  const root = createRouter(deps, oauth);
  app.use(root.routes());
  // 405 and OPTIONS for every route of the API, once (the routers below are merged into root's stack).
  app.use(root.allowedMethods());
  return app;
}

/**
 * Every route of the API (all but the pages): the MCP endpoints, health, the operator's routes,
 * metrics, the docs, the market's icons and the user API under /api/v1. Its `stack` is the list of
 * what the service answers (the embedded-start suite requires a request to each).
 *
 * @koa/router merges a mounted router's routes and middleware into the parent's stack, and every
 * request runs each middleware whose path prefix it matches (composed anew per request). So
 * nothing here mounts a router's allowedMethods(): the app's one root.allowedMethods() answers 405
 * and OPTIONS from every matched route (a router's own would only repeat it on every request).
 */
export function createRouter(deps: ApiDeps, oauth: OAuthServer = createOAuthServer(deps)): Router<AppState> {
  const docsSite = buildDocsSite({ ...loadDocSources(), openapi: buildOpenApiDocument() });
  const root = new Router<AppState>();
  // The MCP endpoints, tried first: the SDK reads the request body itself and answers every method.
  root.all(DOCS_MCP_PATH, mcpEndpoint(docsMcpEndpoint(docsSite, deps.config))); //   /docs-mcp
  root.all('/mcp/:entryId', mcpEndpoint(marketMcpEndpoint(deps, oauth))); //             /mcp/{entryId}

  // Without an API key: health, the operator's routes, metrics, the docs and the market's icons.
  const health = healthRoutes(deps); //                  /health
  root.use(health.routes());
  const admin = adminRoutes(deps); //                    /admin (ADMIN_TOKEN), with /admin/skills and /admin/market
  root.use(admin.routes());
  root.use(metricsRoutes(deps).routes()); //             /metrics
  const docs = docsRoutes(docsSite, deps.config); //     /api/v1/openapi.json, /api/v1/docs
  root.use('/api/v1', docs.routes());
  const icons = publicMarketIconRoutes(deps); //         /api/v1/market/icons/:key.png
  root.use(icons.routes());

  // Bodies are read only after the caller is authenticated (the admin routes do the same with their token).
  const v1 = new Router<UserState>({ prefix: '/api/v1' });
  v1.use(requireApiKey(deps.db), jsonBody());
  // One router per URL prefix (api/routes/<prefix>.ts), in the order they are tried.
  const userRouters = [
    scrapeRoutes(deps), //          /scrape, /scrape/status
    agentScraperRoutes(deps), //    /agentscraper
    socialAccountRoutes(deps), //   /social-accounts
    automationRoutes(deps), //      /automations
    logRoutes(deps), //             /logs, /transactions
    accountRoutes(deps), //         /account
    skillsRoutes(deps), //          /skills/directory
    customAgentRoutes(deps), //     /agents
    mcpMarketRoutes(deps), //       /mcp-market
    agentMarketRoutes(deps), //     /agent-market
    marketIconRoutes(deps), //      /market/icons
    providerRoutes(deps), //        /provider
  ];
  for (const routes of userRouters) v1.use(routes.routes());
  root.use(v1.routes());
  return root;
}
