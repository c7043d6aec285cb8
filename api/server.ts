import type { Server } from 'node:http';
import { loadConfig } from '../lib/config';
import { migrateToLatest, openDatabase } from '../db/connect';
import { networkPolicyFromConfig } from '../lib/net/policy';
import { socialPlatformsFromConfig } from '../lib/social/platforms';
import { connectClient } from '../lib/temporal';
import { createApp } from './app';
import type { ApiDeps } from './deps';
import { readinessProbe, remoteWorkersReady } from './readiness';
import { configureLogging, log } from '../lib/log';

export function listen(deps: ApiDeps, port: number, host = '0.0.0.0'): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createApp(deps).listen(port, host, () => resolve(server));
    server.once('error', reject);
  });
}

/** Production API process (`npm run api`) against external Postgres and Temporal. */
async function main() {
  const config = loadConfig();
  configureLogging({ level: config.log.level, format: config.log.format ?? 'json' });
  if (!config.databaseUrl || !config.temporalAddress) {
    throw new Error('npm run api needs DATABASE_URL and TEMPORAL_ADDRESS (use npm start for the embedded setup)');
  }
  const db = await openDatabase(config);
  await migrateToLatest(db);
  const temporal = await connectClient(config.temporalAddress, config.temporalNamespace);
  const workersReady = remoteWorkersReady(temporal, config.temporalNamespace, [config.taskQueues.platform, config.taskQueues.browser]);
  const server = await listen({ db, temporal, config, policy: networkPolicyFromConfig(config), social: socialPlatformsFromConfig(config), readiness: readinessProbe(db, temporal, workersReady) }, config.port);
  log().info({ port: config.port }, `API listening on :${config.port}`);
  const stop = () => server.close(() => void db.destroy().then(() => process.exit(0)));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (require.main === module) {
  main().catch((err) => {
    log().fatal({ err }, err instanceof Error ? err.message : String(err));
    process.exit(1);
  });
}
