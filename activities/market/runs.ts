import type { Db } from '../../db/connect';
import { marketRunIdleIn } from '../../db/repos/market-runs';
import { settleMarketRun } from '../../db/repos/market-tool-calls';

/** What the market-run workflow returns: the run's settlement, or null when there was no run to settle. */
export type MarketRunSettlement = {
  chargedMicros: number;
  releasedMicros: number;
  providerRevenueMicros: number;
} | null;

/** The market run workflow's activities: close the run once idle (or expired), release the unused hold, record the settlement. */
export function createMarketRunActivities({ db }: { db: Db }) {
  const settle = async (runId: string): Promise<MarketRunSettlement> => {
    const settled = await settleMarketRun(db, runId);
    return (
      settled && {
        chargedMicros: settled.chargedMicros,
        releasedMicros: settled.releasedMicros,
        providerRevenueMicros: settled.providerRevenueMicros,
      }
    );
  };
  return {
    /** Closes and settles the run (the workflow's path before the patch `market-run-settles-when-idle`). */
    settleMarketRun: settle,
    /**
     * Settles the run if it is idle — no longer active (market_run_active): no call uses it and the grace
     * after its last call is over, or it expired, or it was closed — else says when to look again (at the
     * latest `busyCheckMs` from now while a call uses the run, BUSY_RUN_CHECK_MS when not given) and
     * whether a call uses it. A run that stopped being active never becomes active again, so closing it
     * after this check loses no call.
     */
    async settleMarketRunWhenIdle(
      runId: string,
      busyCheckMs?: number,
    ): Promise<
      { idle: true; settlement: MarketRunSettlement } | { idle: false; checkAgainInMs: number; busy?: boolean }
    > {
      const idleIn = await marketRunIdleIn(db, runId, busyCheckMs);
      if (idleIn !== null) return { idle: false, checkAgainInMs: idleIn.inMs, busy: idleIn.busy };
      return { idle: true, settlement: await settle(runId) };
    },
  };
}

export type MarketRunActivities = ReturnType<typeof createMarketRunActivities>;
