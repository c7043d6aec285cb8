import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../lib/config';
import { openDatabase } from '../db/connect';
import { networkPolicyFromConfig } from '../lib/net/policy';
import { createWorkers } from './worker-set';
import { configureLogging, log } from '../lib/log';
import { installWorkerRuntime, serveProcessMetrics } from './telemetry';

/** Production worker process (`npm run worker`): polls the platform and browser task queues. */
async function main() {
  const config = loadConfig();
  configureLogging({ level: config.log.level, format: config.log.format ?? 'json' });
  installWorkerRuntime(config);
  const metricsServer = await serveProcessMetrics(config);
  if (!config.databaseUrl || !config.temporalAddress) {
    throw new Error('npm run worker needs DATABASE_URL and TEMPORAL_ADDRESS (use npm start for the embedded setup)');
  }
  const queues = (process.env.WORKER_QUEUES ?? 'platform,browser').split(',').map((q) => q.trim()) as (
    'platform' | 'browser'
  )[];
  const db = await openDatabase(config);
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const workers = await createWorkers({
    db,
    config,
    policy: networkPolicyFromConfig(config),
    connection,
    namespace: config.temporalNamespace,
    queues,
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void workers.shutdown());
  log().info(
    { queues, temporalAddress: config.temporalAddress },
    `worker polling ${queues.join(', ')} on ${config.temporalAddress}`,
  );
  await workers.run();
  metricsServer?.close();
  await connection.close();
  await db.destroy();
}

main().catch((err) => {
  log().fatal({ err }, err instanceof Error ? err.message : String(err));
  process.exit(1);
});
