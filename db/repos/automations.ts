/** Stored automations and custom agents (one table; `automation_type` tells them apart). */
import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Db } from '../connect';
import type { AutomationsTable, Job } from '../schema';
import { offsetOf, type PageRequest } from '../../lib/pagination';

export type AutomationRow = Selectable<AutomationsTable>;

export function findAutomation(db: Db, id: string): Promise<AutomationRow | undefined> {
  return db.selectFrom('automations').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The user's automation of this type, or undefined (another user's id or another type is not found). */
export function findUserAutomation(
  db: Db,
  key: { userId: string; id: string; type: AutomationRow['automation_type'] },
): Promise<AutomationRow | undefined> {
  return db
    .selectFrom('automations')
    .selectAll()
    .where('id', '=', key.id)
    .where('user_id', '=', key.userId)
    .where('automation_type', '=', key.type)
    .executeTakeFirst();
}

/** One page of the user's automations, newest first, and how many there are. */
export async function listAutomations(
  db: Db,
  userId: string,
  page: PageRequest,
): Promise<{ rows: AutomationRow[]; total: number }> {
  const [rows, count] = await Promise.all([
    db
      .selectFrom('automations')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .limit(page.pageSize)
      .offset(offsetOf(page))
      .execute(),
    countAutomations(db, userId),
  ]);
  return { rows, total: count };
}

export async function countAutomations(db: Db, userId: string): Promise<number> {
  const { n } = await db
    .selectFrom('automations')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(n);
}

export function insertAutomation(db: Db, values: Insertable<AutomationsTable>): Promise<AutomationRow> {
  return db.insertInto('automations').values(values).returningAll().executeTakeFirstOrThrow();
}

export function updateAutomation(db: Db, id: string, changes: Updateable<AutomationsTable>): Promise<AutomationRow> {
  return db.updateTable('automations').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

/** The latest runs (jobs) each of these automations started, newest first, at most `perAutomation` each. */
export async function listLatestAutomationRuns(
  db: Db,
  userId: string,
  automationIds: readonly string[],
  perAutomation: number,
): Promise<Map<string, Job[]>> {
  const runs = new Map<string, Job[]>(automationIds.map((id) => [id, []]));
  await Promise.all(
    automationIds.map(async (id) => {
      const rows = await db
        .selectFrom('jobs')
        .selectAll()
        .where('user_id', '=', userId)
        .where(sql<string>`request->>'automationId'`, '=', id)
        .orderBy('created_at', 'desc')
        .orderBy('id')
        .limit(perAutomation)
        .execute();
      runs.set(id, rows);
    }),
  );
  return runs;
}
