import type { Db } from '../../../db/connect';
import { listAgentTransactions } from '../../../db/repos/agent-transactions';
import type { PageRequest } from '../../../lib/pagination';
import { listSystemLogs } from '../../../db/repos/system-logs';
import { microsToUsd } from '../../../lib/money';

/** GET /logs: a page of the account's system log. */
export async function accountLogs(db: Db, userId: string, page: PageRequest) {
  const { logs, meta } = await listSystemLogs(db, userId, page);
  return {
    logs: logs.map((l) => ({
      id: l.id,
      userId: l.user_id,
      logMessage: l.log_message,
      executedAt: new Date(l.executed_at).toISOString(),
    })),
    meta,
  };
}

/** GET /transactions: a page of the account's agent transactions. */
export async function accountTransactions(db: Db, userId: string, page: PageRequest) {
  const { transactions, meta } = await listAgentTransactions(db, userId, page);
  return {
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
}
