import type { Db } from '../../db/connect';
import { settleMarketRun } from '../../db/repos/market-tool-calls';

/** The market run workflow's activity: close at expiry, release the unused hold, record the settlement. */
export function createMarketRunActivities({ db }: { db: Db }) {
  return {
    async settleMarketRun(
      runId: string,
    ): Promise<{ chargedMicros: number; releasedMicros: number; providerRevenueMicros: number } | null> {
      const settled = await settleMarketRun(db, runId);
      return (
        settled && {
          chargedMicros: settled.chargedMicros,
          releasedMicros: settled.releasedMicros,
          providerRevenueMicros: settled.providerRevenueMicros,
        }
      );
    },
  };
}

export type MarketRunActivities = ReturnType<typeof createMarketRunActivities>;
