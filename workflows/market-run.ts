import { continueAsNew, patched, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { MarketRunActivities, MarketRunSettlement } from '../activities/market/runs';
import { MARKET_RUN_CONTINUES_AS_NEW, MARKET_RUN_SETTLES_WHEN_IDLE } from './patches';

const runs = proxyActivities<MarketRunActivities>({
  startToCloseTimeout: '1m',
  // Settlement must happen: retried (with backoff up to a minute) until the database takes it.
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/** The first wait between two looks at a run a call still uses; doubled on each look that finds it still busy. */
export const BUSY_CHECK_FIRST_MS = 1_000;
/** The longest wait between two looks at a run a call still uses (the default of `busyCheckMaxMs`). */
export const BUSY_CHECK_MAX_MS = 30_000;
/** How many looks one execution takes before it continues as new (the default of `checksPerExecution`). */
export const CHECKS_PER_EXECUTION = 50;

export interface MarketRunWorkflowInput {
  runId: string;
  /** When the run's charge token expires (ISO 8601). */
  expiresAt: string;
  /** The wait before the next look while a call uses the run (carried over a continue-as-new); BUSY_CHECK_FIRST_MS when absent. */
  busyCheckMs?: number;
  /** The longest wait between two looks at a busy run; BUSY_CHECK_MAX_MS when absent (tests set less). */
  busyCheckMaxMs?: number;
  /** Looks at the run per execution before it continues as new; CHECKS_PER_EXECUTION when absent (tests set less). */
  checksPerExecution?: number;
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
 * While a call uses the run, the wait between two looks doubles from 1 s up to 30 s (a run a call keeps
 * busy until its expiry costs a few dozen looks, not one a second), and every `checksPerExecution` looks
 * the workflow continues as new, so its history stays small however long the run lives (runs that
 * record the patch `market-run-continues-as-new`; those begun before keep their command sequence). The
 * back-off only lengthens timers and is computed from activity results, so it replays on any history.
 *
 * Runs begun before the patch `market-run-settles-when-idle` slept until the token expired and then
 * settled; their histories replay on that path (test/market/run-window.test.ts).
 */
export async function marketRunWorkflow(input: MarketRunWorkflowInput): Promise<MarketRunSettlement> {
  if (patched(MARKET_RUN_SETTLES_WHEN_IDLE)) return marketRunUntilIdle(input);
  const waitMs = new Date(input.expiresAt).getTime() - Date.now();
  if (waitMs > 0) await sleep(waitMs);
  return runs.settleMarketRun(input.runId);
}

/**
 * The run's workflow since MARKET_RUN_SETTLES_WHEN_IDLE: looks at the run until it is idle, then settles it.
 * Exported for the replay tests (test/support/fixtures/workflows-market-run-without-patch.ts), which show
 * that runs recorded before the patch do not replay on it.
 */
export async function marketRunUntilIdle(input: MarketRunWorkflowInput): Promise<MarketRunSettlement> {
  const continues = patched(MARKET_RUN_CONTINUES_AS_NEW);
  const maxMs = input.busyCheckMaxMs ?? BUSY_CHECK_MAX_MS;
  const checksPerExecution = input.checksPerExecution ?? CHECKS_PER_EXECUTION;
  let busyCheckMs = Math.min(input.busyCheckMs ?? BUSY_CHECK_FIRST_MS, maxMs);
  for (let checks = 0; ; checks++) {
    if (continues && (checks >= checksPerExecution || workflowInfo().continueAsNewSuggested))
      await continueAsNew<typeof marketRunWorkflow>({ ...input, busyCheckMs });
    const next = await runs.settleMarketRunWhenIdle(input.runId, busyCheckMs);
    if (next.idle) return next.settlement;
    // A look that found no call resets the back-off; histories recorded before it carry no `busy`.
    busyCheckMs = next.busy ? Math.min(busyCheckMs * 2, maxMs) : Math.min(BUSY_CHECK_FIRST_MS, maxMs);
    await sleep(next.checkAgainInMs);
  }
}
