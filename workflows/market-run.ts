import { patched, proxyActivities, sleep } from '@temporalio/workflow';
import type { MarketRunActivities, MarketRunSettlement } from '../activities/market/runs';

const runs = proxyActivities<MarketRunActivities>({
  startToCloseTimeout: '1m',
  // Settlement must happen: retried (with backoff up to a minute) until the database takes it.
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

export interface MarketRunWorkflowInput {
  runId: string;
  /** When the run's charge token expires (ISO 8601). */
  expiresAt: string;
}

/**
 * One market run: a window of a credential's hosted calls to one entry, a credential's provider_event
 * calls, or an agent execution's market selection. Started by the platform workers' dispatcher after the
 * run opens (workers/market-run-dispatcher.ts), never by a call. It waits until the run is idle — no call
 * uses it and the grace after its last call (the run's idle time: MARKET_RUN_WINDOW_IDLE_SECONDS for a
 * window, MARKET_RUN_IDLE_GRACE_SECONDS otherwise) is over — or its token expired, then closes the run
 * (no call joins and no charge is accepted afterwards), releases the unused hold and records the
 * settlement, with durable retries. Operators see every market run in the Temporal UI.
 *
 * Runs begun before the patch `market-run-settles-when-idle` slept until the token expired and then
 * settled; their histories replay on that path (test/market/run-window.test.ts).
 */
export async function marketRunWorkflow(input: MarketRunWorkflowInput): Promise<MarketRunSettlement> {
  if (patched('market-run-settles-when-idle')) {
    for (;;) {
      const next = await runs.settleMarketRunWhenIdle(input.runId);
      if (next.idle) return next.settlement;
      await sleep(next.checkAgainInMs);
    }
  }
  const waitMs = new Date(input.expiresAt).getTime() - Date.now();
  if (waitMs > 0) await sleep(waitMs);
  return runs.settleMarketRun(input.runId);
}
