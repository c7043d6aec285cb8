import type { Db } from '../../db/connect';
import type { RenderedWith } from '../../db/schema';
import type { ConvertedPage } from '../../lib/page/convert';

export async function saveSnapshot(
  db: Db,
  jobId: string,
  page: ConvertedPage & { finalUrl: string; statusCode: number; renderedWith: RenderedWith },
): Promise<void> {
  const values = {
    final_url: page.finalUrl,
    status_code: page.statusCode,
    rendered_with: page.renderedWith,
    markdown: page.markdown,
    metadata: JSON.stringify(page.metadata),
  };
  await db
    .insertInto('page_snapshots')
    .values({ job_id: jobId, ...values })
    .onConflict((oc) => oc.column('job_id').doUpdateSet(values))
    .execute();
}
