import Router from '@koa/router';
import type { Selectable } from 'kysely';
import type { AutomationsTable } from '../../db/schema';
import { listAutomations } from '../../db/repos/automations';
import { paginationMeta, type PageRequest } from '../../db/repos/pagination';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { badRequest } from '../errors';
import { PaginationQuery } from '../../lib/schemas/common';
import { AutomationCreateRequest, type AutomationCreateBody } from '../../lib/schemas/automations';
import { checkAccountSelection, checkSchedule, createAutomation, scheduleState } from '../services/automations/create-and-schedule';
import { checkMarketMcps } from '../services/market-selections';
import { preflightUrl } from '../services/shared/url-preflight';
import { assertStructuredOutput } from '../services/shared/assert-structured-output';
import { assertLlmModel } from '../services/shared/assert-llm-model';
import { parseBody, parseQuery } from '../validation';

function toAutomation(row: Selectable<AutomationsTable>, state: { isPaused: boolean }) {
  return {
    id: row.id,
    userId: row.user_id,
    name: row.name,
    cron: row.cron,
    timezone: row.timezone,
    payload: row.payload,
    status: state.isPaused ? 'paused' : 'active',
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
    isPaused: state.isPaused,
  };
}

export function automationRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();

  router.get('/automations', async (ctx) => {
    const user = ctx.state.user;
    const page = parseQuery<PageRequest>(PaginationQuery, ctx.query);
    const { rows, total } = await listAutomations(deps.db, user.userId, page);
    const states = await Promise.all(rows.map((row) => scheduleState(deps, row.schedule_id)));
    ctx.body = { automations: rows.map((row, i) => toAutomation(row, states[i])), meta: paginationMeta(page, total) };
  });

  router.post('/automations', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBody<AutomationCreateBody>(AutomationCreateRequest, ctx.state.body);
    if (body.automation_type === 'microblog-agent' && body.forum) {
      throw badRequest('A microblog-agent automation takes a "microblog" selection, not "forum"', [
        { path: 'body/forum', message: 'not allowed here' },
      ]);
    }
    if (body.automation_type === 'forum-agent' && body.microblog) {
      throw badRequest('A forum-agent automation takes a "forum" selection, not "microblog"', [
        { path: 'body/microblog', message: 'not allowed here' },
      ]);
    }
    assertStructuredOutput(body.structured_output);
    assertLlmModel(deps.config.modelPrices, body);
    if (body.webhook_url) preflightUrl('webhook_url', body.webhook_url, deps.policy);
    if (body.proxy_country) body.proxy_country = body.proxy_country.toUpperCase();
    const temporalCron = checkSchedule(body, deps.config.automations.minIntervalMinutes);
    await checkAccountSelection(deps, user, body);
    await checkMarketMcps(deps, body.market_mcps);
    const row = await createAutomation(deps, user, body, temporalCron);
    ctx.status = 201;
    ctx.body = { automation: toAutomation(row, await scheduleState(deps, row.schedule_id)) };
  });

  return router;
}
