import Koa from 'koa';
import Router from '@koa/router';
import type { AppState, UserState } from './context';
import type { ApiDeps } from './deps';
import { errorHandler } from './middleware/errors';
import { requestId } from './middleware/request-id';
import { requestLog } from './middleware/request-log';
import { jsonBody } from './middleware/json-body';
import { requireApiKey } from './middleware/auth';
import { scrapeRoutes } from './routes/scrape';
import { agentScraperRoutes } from './routes/agentscraper';
import { socialAccountRoutes } from './routes/social-accounts';
import { automationRoutes } from './routes/automations';
import { logRoutes } from './routes/logs';
import { accountRoutes } from './routes/account';
import { adminRoutes } from './routes/admin';
import { docsRoutes } from './routes/docs';
import { healthRoutes } from './routes/health';
import { skillsRoutes } from './routes/skills';
import { mcpEndpoint } from './mcp/endpoint';
import { docsMcpEndpoint } from './mcp/docs';
import { marketMcpEndpoint } from './mcp/market';
import { buildOpenApiDocument } from './openapi';
import { buildDocsSite } from './docs/site';
import { loadDocSources } from './docs/load';
import { customAgentRoutes } from './routes/custom-agents';
import { mcpMarketRoutes } from './routes/mcp-market';
import { agentMarketRoutes } from './routes/agent-market';
import { marketIconRoutes, publicMarketIconRoutes } from './routes/market-icons';
import { providerRoutes } from './routes/provider';
import { metricsRoutes } from './routes/metrics';
import { marketConsumerRoutes } from './routes/market-consumer';

export function createApp(deps: ApiDeps): Koa {
  // X-Forwarded-* are believed only from the proxies the operator says are there (TRUST_PROXY).
  const app = new Koa({ proxy: deps.config.trustProxyHops > 0, maxIpsCount: deps.config.trustProxyHops });
  app.use(requestId());
  app.use(requestLog());
  app.use(errorHandler());
  const docsSite = buildDocsSite({ ...loadDocSources(), openapi: buildOpenApiDocument() });
  app.use(mcpEndpoint(docsMcpEndpoint(docsSite, deps.config)));
  app.use(mcpEndpoint(marketMcpEndpoint(deps)));

  const root = new Router<AppState>();
  const health = healthRoutes(deps);
  root.use(health.routes());
  const admin = adminRoutes(deps);
  root.use(admin.routes(), admin.allowedMethods());
  root.use(metricsRoutes(deps).routes());

  const docs = docsRoutes(docsSite, deps.config);
  root.use('/api/v1', docs.routes());
  const icons = publicMarketIconRoutes(deps);
  root.use(icons.routes(), icons.allowedMethods());

  // Bodies are read only after the caller is authenticated (the admin routes do the same with their token).
  const v1 = new Router<UserState>({ prefix: '/api/v1' });
  v1.use(requireApiKey(deps.db), jsonBody());
  for (const routes of [scrapeRoutes(deps), agentScraperRoutes(deps), socialAccountRoutes(deps), automationRoutes(deps), logRoutes(deps), accountRoutes(deps), skillsRoutes(deps), customAgentRoutes(deps), mcpMarketRoutes(deps), agentMarketRoutes(deps), marketIconRoutes(deps), providerRoutes(deps), marketConsumerRoutes(deps)]) {
    v1.use(routes.routes(), routes.allowedMethods());
  }
  root.use(v1.routes(), v1.allowedMethods());

  app.use(root.routes());
  app.use(root.allowedMethods());
  return app;
}
