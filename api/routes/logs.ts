import Router from '@koa/router';
import type { PageRequest } from '../../lib/pagination';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { PaginationQuery } from '../../lib/schemas/common';
import { accountLogs, accountTransactions } from '../services/account/logs-and-transactions';
import { parseQuery } from '../validation';

export function logRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();

  router.get('/logs', async (ctx) => {
    const user = ctx.state.user;
    const page = parseQuery<PageRequest>(PaginationQuery, ctx.query);
    ctx.body = await accountLogs(deps.db, user.userId, page);
  });

  router.get('/transactions', async (ctx) => {
    const user = ctx.state.user;
    const page = parseQuery<PageRequest>(PaginationQuery, ctx.query);
    ctx.body = await accountTransactions(deps.db, user.userId, page);
  });

  return router;
}
