import Router from '@koa/router';
import type { PageRequest } from '../../lib/pagination';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { PaginationQuery } from '../../lib/schemas/common';
import { AutomationCreateRequest } from '../../lib/schemas/automations';
import { createUserAutomation, listUserAutomations } from '../services/automations/user-automations';
import { parseBody, parseQuery } from '../validation';

export function automationRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();

  router.get('/automations', async (ctx) => {
    const user = ctx.state.user;
    const page = parseQuery<PageRequest>(PaginationQuery, ctx.query);
    ctx.body = await listUserAutomations(deps, user.userId, page);
  });

  router.post('/automations', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBody(AutomationCreateRequest, ctx.state.body);
    const created = await createUserAutomation(deps, user, body);
    ctx.status = 201;
    ctx.body = created;
  });

  return router;
}
