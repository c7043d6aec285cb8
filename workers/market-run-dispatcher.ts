import type { Client } from '@temporalio/client';
import type { Db } from '../db/connect';
import { markRunWorkflowsStarted, runsOwedAWorkflow } from '../db/repos/market-runs';
import type { Config } from '../lib/config';
import { startMarketRunWorkflow } from '../lib/market/run-workflow';
import { log } from '../lib/log';
import { startPeriodicPass, type PeriodicPass } from './periodic-pass';

const BATCH = 200;
/** Starts in flight at once (each is one request to the Temporal frontend). */
const PARALLEL_STARTS = 16;
const MAX_BACKOFF_MS = 30_000;

/**
 * Starts the workflow of every opened market run (lib/market/run-workflow.ts), on a platform worker,
 * every MARKET_RUN_DISPATCH_MS: the runs without one are read from market_runs (migration 0015's
 * outbox), their workflows started, and the runs marked. A call that opens a run — the hosted
 * endpoint's or an agent's — only writes the run, so the workflow engine is never on its path and a
 * crash after the run opened cannot lose the workflow. Every platform worker runs one; a run two
 * workers both start gets one workflow (its id is the run's, duplicates are rejected). A start that
 * fails (Temporal unreachable) is retried on a later pass, with backoff.
 */
export function startMarketRunDispatcher(deps: { db: Db; client: Client; config: Config }): PeriodicPass {
  const taskQueue = deps.config.taskQueues.platform;
  const everyMs = deps.config.market.runDispatchEveryMs;
  // After a failed pass (Temporal or Postgres unreachable) the next ones wait, doubling up to
  // MAX_BACKOFF_MS, so an outage is one warning per attempt instead of several per second.
  let backoffMs = 0;
  let retryAt = 0;
  const failedPass = () => {
    backoffMs = Math.min(MAX_BACKOFF_MS, Math.max(everyMs, backoffMs * 2));
    retryAt = Date.now() + backoffMs;
  };
  return startPeriodicPass('market run dispatch', everyMs, async (stopped) => {
    if (Date.now() < retryAt) return;
    try {
      for (;;) {
        const owed = await runsOwedAWorkflow(deps.db, BATCH);
        if (owed.length === 0) break;
        const started: string[] = [];
        let failed = 0;
        let firstError: unknown = null;
        for (let i = 0; i < owed.length && !stopped(); i += PARALLEL_STARTS) {
          await Promise.all(
            owed.slice(i, i + PARALLEL_STARTS).map((run) =>
              startMarketRunWorkflow(deps.client, taskQueue, run).then(
                () => void started.push(run.id),
                (err) => {
                  failed += 1;
                  firstError ??= err;
                },
              ),
            ),
          );
        }
        await markRunWorkflowsStarted(deps.db, started);
        if (failed) {
          failedPass();
          log().warn({ err: firstError, failed, started: started.length, retryInMs: backoffMs }, 'market run workflows not started; retrying later');
          return;
        }
        if (owed.length < BATCH || stopped()) break;
      }
      backoffMs = 0;
    } catch (err) {
      failedPass();
      throw err;
    }
  });
}
