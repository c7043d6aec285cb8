import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../lib/config';
import { migrateToLatest, openDatabase } from '../db/connect';
import { networkPolicyFromConfig } from '../lib/net/policy';
import { socialPlatformsFromConfig } from '../lib/social/platforms';
import { connectClient } from '../lib/temporal/client';
import type { DevServer } from './temporal-cli';
import { prepareEmbeddedTemporal } from './embedded-temporal';
import { listen } from '../api/server';
import { readinessProbe } from '../api/readiness';
import { ApiError } from '../api/errors';
import { createWorkers, type WorkerSet } from './worker-set';
import { configureLogging, log } from '../lib/log';
import { installWorkerRuntime } from './telemetry';

/** Started by this process; stopped on every way out, so it never outlives the process that owns it. */
let devServer: DevServer | null = null;

/**
 * `npm start`: everything in one process with embedded defaults. The Temporal dev server (SQLite
 * in DATA_DIR) unless TEMPORAL_ADDRESS is set; PGlite in DATA_DIR unless DATABASE_URL is set.
 * PGlite is a single connection, which is why API and workers share this process.
 */
async function main() {
  const config = loadConfig();
  configureLogging({ level: config.log.level, format: config.log.format ?? 'pretty' });
  installWorkerRuntime(config);
  const policy = networkPolicyFromConfig(config);
  // First, so a taken Temporal port or a DATA_DIR in use stops the start at once, before anything opens.
  const embeddedTemporal = config.temporalAddress ? null : await prepareEmbeddedTemporal(config);
  let workers: WorkerSet | null = null;
  const db = await openDatabase(config);
  await migrateToLatest(db);
  log().info(
    config.databaseUrl
      ? 'database: DATABASE_URL'
      : `database: embedded PGlite in ${path.join(config.dataDir, 'pglite')}`,
  );

  // The API answers /health (503) while Temporal and the workers come up.
  let temporalClient: Awaited<ReturnType<typeof connectClient>> | null = null;
  const server = await listen(
    {
      db,
      get temporal() {
        if (!temporalClient)
          throw new ApiError(
            503,
            'service_unavailable',
            'The service is still starting; retry in a few seconds',
            undefined,
            { 'Retry-After': '5' },
          );
        return temporalClient;
      },
      config,
      policy,
      social: socialPlatformsFromConfig(config),
      readiness: async () => {
        if (!temporalClient) return { database: true, temporal: false, workers: false };
        return readinessProbe(db, temporalClient, () => workers?.isRunning() ?? false)();
      },
    },
    config.port,
  );
  log().info(
    `API listening on http://localhost:${config.port} (docs: /api/v1/docs, health: /health, metrics: /metrics)`,
  );

  let address: string;
  if (embeddedTemporal) {
    devServer = await embeddedTemporal.start();
    address = devServer.address;
    log().info(`Temporal dev server on ${address}; Web UI ${devServer.uiUrl}`);
  } else address = config.temporalAddress!;
  temporalClient = await connectClient(address, config.temporalNamespace);
  const connection = await NativeConnection.connect({ address });
  workers = await createWorkers({ db, config, policy, connection, namespace: config.temporalNamespace });
  const running = workers.run();
  log().info('workers running; ready');

  let stopping = false;
  const stop = async (exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    // Nothing else may hold the event loop open once the workers are gone (Temporal's own signal
    // handling stops them too): without this the process could end before PGlite is closed.
    setInterval(() => undefined, 1_000);
    server.close();
    // Every step runs whatever the one before did, so the database is always closed cleanly.
    const steps: [string, () => Promise<unknown> | undefined][] = [
      ['workers', () => workers?.shutdown()],
      ['the Temporal connection', () => connection.close()],
      ['the Temporal dev server', () => devServer?.stop()],
    ];
    for (const [what, step] of steps) {
      await Promise.resolve()
        .then(step)
        .catch((err) => console.error(`stopping ${what} failed:`, err instanceof Error ? err.message : err));
    }
    await db.destroy();
    process.exit(exitCode);
  };
  // Without its own dev server this process stops too: its workers would otherwise reconnect to whatever
  // listens on the port next, perhaps another instance's server. Exit code 0: it was stopped (a Ctrl-C
  // reaches it directly too), anything else: it failed.
  devServer?.process.once('exit', (code, signal) => {
    if (stopping) return;
    if (code === 0) log().info('the Temporal dev server stopped; stopping');
    else log().fatal(`the Temporal dev server exited (${code ?? signal}); stopping`);
    void stop(code === 0 ? 0 : 1);
  });
  // `on`, not `once`: a terminal's Ctrl-C or a group kill reaches this process twice (directly and
  // relayed by npm). `npm start` runs `node --import tsx`, not the tsx CLI: the CLI relays a signal and
  // SIGKILLs its child unless the child acknowledges it within 30 ms, which a loaded machine misses
  // (PGlite was then killed mid-shutdown).
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  await running.catch(async (err) => {
    log().error({ err }, 'workers stopped');
    await stop(1);
  });
}

main().catch(async (err) => {
  log().fatal({ err }, err instanceof Error ? err.message : String(err));
  await devServer?.stop().catch(() => undefined);
  process.exit(1);
});
