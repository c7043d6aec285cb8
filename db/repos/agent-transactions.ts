import type { Db } from '../connect';
import type { AgentTransaction } from '../schema';
import { offsetOf, paginationMeta, type PageRequest, type PaginationMeta } from '../../lib/pagination';

export async function listAgentTransactions(
  db: Db,
  userId: string,
  page: PageRequest,
): Promise<{ transactions: AgentTransaction[]; meta: PaginationMeta }> {
  const [transactions, count] = await Promise.all([
    db
      .selectFrom('agent_transactions')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('id', 'desc')
      .limit(page.pageSize)
      .offset(offsetOf(page))
      .execute(),
    db
      .selectFrom('agent_transactions')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow(),
  ]);
  return { transactions, meta: paginationMeta(page, Number(count.n)) };
}
