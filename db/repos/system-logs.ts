import type { Db } from '../connect';
import type { SystemLog } from '../schema';
import { offsetOf, paginationMeta, type PageRequest, type PaginationMeta } from '../../lib/pagination';

export async function writeSystemLog(
  db: Db,
  entry: { userId: string | null; jobId?: string | null; message: string },
): Promise<void> {
  await db
    .insertInto('system_logs')
    .values({ user_id: entry.userId, job_id: entry.jobId ?? null, log_message: entry.message })
    .execute();
}

export async function listSystemLogs(
  db: Db,
  userId: string,
  page: PageRequest,
): Promise<{ logs: SystemLog[]; meta: PaginationMeta }> {
  const [logs, count] = await Promise.all([
    db
      .selectFrom('system_logs')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('id', 'desc')
      .limit(page.pageSize)
      .offset(offsetOf(page))
      .execute(),
    db
      .selectFrom('system_logs')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow(),
  ]);
  return { logs, meta: paginationMeta(page, Number(count.n)) };
}
