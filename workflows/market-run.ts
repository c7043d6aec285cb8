import { proxyActivities, sleep } from '@temporalio/workflow';
import type { MarketRunActivities } from '../activities/market/runs';

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
 * One market run (a hosted-endpoint tool call, or an agent execution's market selection). Started
 * by the platform workers' dispatcher right after the run opens (workers/market-run-dispatcher.ts),
 * never by the call, with a start delay until the run's charge token expires; it then closes the
 * run (no charge accepted afterwards), releases the unused hold and records the settlement, with
 * durable retries. Operators see every market run in the Temporal UI.
 */
export async function marketRunWorkflow(
  input: MarketRunWorkflowInput,
): Promise<{ chargedMicros: number; releasedMicros: number; providerRevenueMicros: number } | null> {
  const waitMs = new Date(input.expiresAt).getTime() - Date.now();
  if (waitMs > 0) await sleep(waitMs);
  return runs.settleMarketRun(input.runId);
}
