import Router from '@koa/router';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { AgenticScraperRequest, type AgenticScraperRequestBody } from '../../lib/schemas/agentscraper';
import { startAgentScrape } from '../services/jobs/agent-scrape';
import { parseBodyAs } from '../validation';
import { addJobStatusRoute } from './job-status';

export function agentScraperRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();

  router.post('/agentscraper', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBodyAs<AgenticScraperRequestBody>(AgenticScraperRequest, ctx.state.body);
    const job = await startAgentScrape(deps, user, body, ctx.get('idempotency-key'));
    ctx.status = 202;
    ctx.body = { jobId: job.id, status: 'pending' };
  });

  addJobStatusRoute(router, deps, '/agentscraper/status', 'agentic', 'Agentic job');

  return router;
}
