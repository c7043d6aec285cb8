import Koa from 'koa';
import Router from '@koa/router';
import type { ApiDeps } from './deps';
import { errorHandler } from './middleware/errors';
import { requestId } from './middleware/request-id';
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

export function createApp(deps: ApiDeps): Koa {
  const app = new Koa();
  app.proxy = true;
  app.use(requestId());
  app.use(errorHandler());

  const root = new Router();
  const health = healthRoutes(deps);
  root.use(health.routes());
  const admin = adminRoutes(deps);
  root.use(admin.routes(), admin.allowedMethods());

  const docs = docsRoutes();
  root.use('/api/v1', docs.routes());

  // Bodies are read only after the caller is authenticated (the admin routes do the same with their token).
  const v1 = new Router({ prefix: '/api/v1' });
  v1.use(requireApiKey(deps.db), jsonBody());
  for (const routes of [scrapeRoutes(deps), agentScraperRoutes(deps), socialAccountRoutes(deps), automationRoutes(deps), logRoutes(deps), accountRoutes(deps), skillsRoutes(deps)]) {
    v1.use(routes.routes(), routes.allowedMethods());
  }
  root.use(v1.routes(), v1.allowedMethods());

  app.use(root.routes());
  app.use(root.allowedMethods());
  return app;
}
