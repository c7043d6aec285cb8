import Router from '@koa/router';
import { listAgentTransactions } from '../../db/repos/agent-transactions';
import { listSystemLogs } from '../../db/repos/system-logs';
import type { PageRequest } from '../../db/repos/pagination';
import { microsToUsd } from '../../lib/money';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { PaginationQuery } from '../../lib/schemas/common';
import { parseQuery } from '../validation';

export function logRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();

  router.get('/logs', async (ctx) => {
    const user = ctx.state.user;
    const page = parseQuery<PageRequest>(PaginationQuery, ctx.query);
    const { logs, meta } = await listSystemLogs(deps.db, user.userId, page);
    ctx.body = {
      logs: logs.map((l) => ({
        id: l.id,
        userId: l.user_id,
        logMessage: l.log_message,
        executedAt: new Date(l.executed_at).toISOString(),
      })),
      meta,
    };
  });

  router.get('/transactions', async (ctx) => {
    const user = ctx.state.user;
    const page = parseQuery<PageRequest>(PaginationQuery, ctx.query);
    const { transactions, meta } = await listAgentTransactions(deps.db, user.userId, page);
    ctx.body = {
      transactions: transactions.map((t) => ({
        id: t.id,
        jobId: t.job_id,
        userId: t.user_id,
        agentName: t.agent_name,
        result: t.result,
        payload: t.payload,
        cost: microsToUsd(t.cost_micros),
        executedAt: new Date(t.executed_at).toISOString(),
      })),
      meta,
    };
  });

  return router;
}
