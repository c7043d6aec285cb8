import type { Db } from '../../../db/connect';
import { paginationMeta, type PageRequest } from '../../../lib/pagination';
import { listProviderRevenue } from '../../../db/repos/market-tool-calls';

/** A provider's revenue from its market runs (GET /provider/revenue, the provider console): totals, runs, page. */
export async function providerRevenue(db: Db, providerId: string, page: PageRequest) {
  const { totals, runs, total } = await listProviderRevenue(db, providerId, page);
  return { totals, runs, meta: paginationMeta(page, total) };
}
