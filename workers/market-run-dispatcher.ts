import type { Client } from '@temporalio/client';
import type { Db } from '../db/connect';
import { markRunWorkflowsStarted, runsOwedAWorkflow } from '../db/repos/market-runs';
import type { Config } from '../lib/config';
import { marketRunStart, type OwedMarketRun } from '../lib/market/run-workflow';
import { startOnce } from '../lib/temporal/start';
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

  /** Starts these runs' workflows, PARALLEL_STARTS at a time, and marks the ones started; returns the refused starts. */
  const dispatch = async (owed: OwedMarketRun[], stopped: () => boolean): Promise<PromiseRejectedResult[]> => {
    const started: string[] = [];
    const refused: PromiseRejectedResult[] = [];
    for (let i = 0; i < owed.length && !stopped(); i += PARALLEL_STARTS) {
      const batch = owed.slice(i, i + PARALLEL_STARTS);
      const outcomes = await Promise.allSettled(
        batch.map((run) =>
          startOnce(deps.client, marketRunStart(taskQueue, run, Date.now(), deps.config.market.runWindowIdleMs)),
        ),
      );
      outcomes.forEach((outcome, j) =>
        outcome.status === 'fulfilled' ? started.push(batch[j].id) : refused.push(outcome),
      );
    }
    await markRunWorkflowsStarted(deps.db, started);
    return refused;
  };

  // After a failed pass (Temporal or Postgres unreachable) the next ones wait, doubling up to
  // MAX_BACKOFF_MS, so an outage is one warning per attempt instead of several per second.
  let backoffMs = 0;
  let retryAt = 0;
  return startPeriodicPass('market run dispatch', everyMs, async (stopped) => {
    if (Date.now() < retryAt) return;
    const fail = () => {
      backoffMs = Math.min(MAX_BACKOFF_MS, Math.max(everyMs, backoffMs * 2));
      retryAt = Date.now() + backoffMs;
    };
    let owed: OwedMarketRun[];
    let refused: PromiseRejectedResult[];
    try {
      do {
        owed = await runsOwedAWorkflow(deps.db, BATCH);
        refused = await dispatch(owed, stopped);
      } while (refused.length === 0 && owed.length === BATCH && !stopped());
    } catch (err) {
      fail();
      throw err;
    }
    if (refused.length) {
      fail();
      log().warn(
        { err: refused[0].reason, refused: refused.length, retryInMs: backoffMs },
        'market run workflows not started; retrying later',
      );
      return;
    }
    backoffMs = 0;
  });
}
