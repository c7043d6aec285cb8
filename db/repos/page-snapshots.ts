import { sql } from 'kysely';
import type { Db } from '../connect';
import { logsWith } from './jobs';
import type { RenderedWith } from '../schema';
import type { ConvertedPage } from '../../lib/page/convert';

/** Saves the converted page; `jobLog` lines are appended to the job's log by the same statement. */
export async function saveSnapshot(
  db: Db,
  jobId: string,
  page: ConvertedPage & { finalUrl: string; statusCode: number; renderedWith: RenderedWith },
  jobLog: readonly string[] = [],
  now = new Date(),
): Promise<void> {
  const values = {
    final_url: page.finalUrl,
    status_code: page.statusCode,
    rendered_with: page.renderedWith,
    markdown: page.markdown,
    metadata: JSON.stringify(page.metadata),
  };
  await db
    .with('saved', (qb) =>
      qb
        .insertInto('page_snapshots')
        .values({ job_id: jobId, ...values })
        .onConflict((oc) => oc.column('job_id').doUpdateSet(values))
        .returning('job_id'),
    )
    .updateTable('jobs')
    .set({ logs: logsWith(jobLog, now), updated_at: now })
    .where('id', '=', jobId)
    .where(sql<boolean>`${jobLog.length}::int > 0`)
    .execute();
}

/** Stores the data extracted from the job's page, and appends `jobLog` to the job's log, in one statement. */
export async function saveExtractedData(
  db: Db,
  jobId: string,
  data: unknown,
  jobLog: string,
  now = new Date(),
): Promise<void> {
  await db
    .with('saved', (qb) =>
      qb
        .updateTable('page_snapshots')
        .set({ data: JSON.stringify(data) })
        .where('job_id', '=', jobId)
        .returning('job_id'),
    )
    .updateTable('jobs')
    .set({ logs: logsWith([jobLog], now), updated_at: now })
    .where('id', '=', jobId)
    .execute();
}

/** The job's stored page (converted, and extracted once extraction ran). */
export function getPageSnapshot(db: Db, jobId: string) {
  return db.selectFrom('page_snapshots').selectAll().where('job_id', '=', jobId).executeTakeFirstOrThrow();
}

/** Whether the job's page was already fetched and converted without a browser. */
export async function hasHttpSnapshot(db: Db, jobId: string): Promise<boolean> {
  return !!(await db
    .selectFrom('page_snapshots')
    .select('job_id')
    .where('job_id', '=', jobId)
    .where('rendered_with', '=', 'http')
    .executeTakeFirst());
}
