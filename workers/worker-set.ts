import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createBrowserPool, type BrowserPool } from '../activities/browser/pool';
import { workflowSource } from './workflow-bundle';
import { browserActivities, platformActivities, sessionActivities, type ActivityDeps } from './activities';
import { createSessionRegistry, type SessionRegistry } from '../activities/agent/session-registry';
import { ensureDisplay } from './virtual-display';
import { ensureSkillsRefreshSchedule } from './schedules';
import { startPendingJobReconciler } from './pending-job-reconciler';
import { startMarketRunDispatcher } from './market-run-dispatcher';
import { startPeriodicPass, type PeriodicPass } from './periodic-pass';
import { pruneExpiredOAuthRecords } from '../db/repos/oauth';
import { pruneRateLimitWindows } from '../db/repos/rate-limits';

const OAUTH_PRUNE_EVERY_MS = 10 * 60_000;
import { waitOutDatabaseOutages } from './database-outages';
import { log } from '../lib/log';

export interface WorkerSet {
  /** True once every worker polls its task queue. */
  isRunning(): boolean;
  /** Resolves when the workers stop (after shutdown or a fatal error). */
  run(): Promise<void>;
  shutdown(): Promise<void>;
}

export interface WorkerOptions extends ActivityDeps {
  connection: NativeConnection;
  namespace: string;
  /** A bundle made beforehand (tests make it once), else WORKFLOW_BUNDLE_PATH's, else workflows/ bundled at start. */
  workflowBundle?: { code: string };
  queues?: ('platform' | 'browser')[];
}

export async function createWorkers(options: WorkerOptions): Promise<WorkerSet> {
  const { config, connection, namespace } = options;
  const queues = options.queues ?? ['platform', 'browser'];
  const workers: Worker[] = [];
  let pool: BrowserPool | null = null;
  let headedPool: BrowserPool | null = null;
  let registry: SessionRegistry | null = null;
  let reconciler: PeriodicPass | null = null;
  let dispatcher: PeriodicPass | null = null;
  let oauthPruner: PeriodicPass | null = null;
  if (queues.includes('platform')) {
    workers.push(
      await Worker.create({
        connection,
        namespace,
        interceptors: { activity: [waitOutDatabaseOutages] },
        taskQueue: config.taskQueues.platform,
        ...workflowSource(options.workflowBundle, config.workflowBundlePath),
        activities: platformActivities(options),
        maxConcurrentActivityTaskExecutions: 50,
      }),
    );
    // The skills directory refresh Schedule (only when SKILLS_GITHUB_REPOS is set); a failure must not stop the workers.
    await ensureSkillsRefreshSchedule(connection, namespace, config).catch((err) =>
      log().warn({ err }, 'skills refresh schedule not set up'),
    );
    const client = new Client({ connection, namespace });
    reconciler = startPendingJobReconciler({ db: options.db, client, config });
    dispatcher = startMarketRunDispatcher({ db: options.db, client, config });
    // Expired OAuth records (codes, tokens, interactions, sessions, unused registrations) and request-limit windows
    // older than 10 minutes are deleted every 10 minutes.
    oauthPruner = startPeriodicPass('oauth record pruning', OAUTH_PRUNE_EVERY_MS, async () => {
      await pruneExpiredOAuthRecords(options.db);
      await pruneRateLimitWindows(options.db, new Date(Date.now() - OAUTH_PRUNE_EVERY_MS));
    });
  }
  if (queues.includes('browser')) {
    const headless = createBrowserPool({
      executablePath: config.chromiumHeadlessPath,
      maxContexts: config.browserConcurrency,
    });
    pool = headless;
    const sessions = createSessionRegistry(
      {
        headless,
        headed: async () => {
          await ensureDisplay();
          headedPool ??= createBrowserPool({
            executablePath: config.chromiumPath,
            maxContexts: config.browserConcurrency,
            headless: false,
          });
          return headedPool;
        },
      },
      { unclaimedSessionMs: config.agent.browserSession?.unclaimedSessionMs },
    );
    registry = sessions;
    workers.push(
      await Worker.create({
        connection,
        namespace,
        interceptors: { activity: [waitOutDatabaseOutages] },
        taskQueue: config.taskQueues.browser,
        activities: browserActivities(options, headless, sessions),
        maxConcurrentActivityTaskExecutions: config.browserConcurrency,
      }),
      await Worker.create({
        connection,
        namespace,
        interceptors: { activity: [waitOutDatabaseOutages] },
        taskQueue: sessions.taskQueue,
        activities: sessionActivities(options, sessions),
        // Never a queue behind busy slots: per session at most its keeper, one step and a close (two pools).
        maxConcurrentActivityTaskExecutions: Math.max(20, 2 * config.browserConcurrency * 3),
      }),
    );
  }
  let running: Promise<void> | null = null;
  return {
    isRunning: () => workers.every((w) => w.getState() === 'RUNNING'),
    run() {
      running ??= Promise.all(workers.map((w) => w.run())).then(async () => {
        await reconciler?.stop();
        await dispatcher?.stop();
        await oauthPruner?.stop();
        await registry?.closeAll();
        await pool?.close();
        await headedPool?.close();
      });
      return running;
    },
    async shutdown() {
      await reconciler?.stop();
      await dispatcher?.stop();
      await oauthPruner?.stop();
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await running;
      await registry?.closeAll();
      await pool?.close();
      await headedPool?.close();
    },
  };
}
