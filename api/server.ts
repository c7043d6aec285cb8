import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { loadConfig } from '../lib/config';
import { migrateToLatest, openDatabase } from '../db/connect';
import { networkPolicyFromConfig } from '../lib/net/policy';
import { socialPlatformsFromConfig } from '../lib/social/platforms';
import { connectClient } from '../lib/temporal/client';
import { createApp } from './app';
import type { ApiDeps } from './deps';
import { readinessProbe, remoteWorkersReady } from './readiness';
import { configureLogging, log } from '../lib/log';

export function listen(deps: ApiDeps, port: number, host = '0.0.0.0'): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createApp(deps).listen(port, host, () => resolve(server));
    server.once('error', reject);
    // Requests Node's parser refuses before Koa sees them (headers or URL too large, malformed) get
    // the same JSON error body as every other 4xx.
    server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
      if (!socket.writable) return socket.destroy();
      const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
      const [status, reason, message] = tooLarge
        ? [431, 'Request Header Fields Too Large', 'The request line and headers are too large']
        : [400, 'Bad Request', 'The request is malformed'];
      const requestId = randomUUID();
      const body = JSON.stringify({
        error: { code: tooLarge ? 'request_too_large' : 'bad_request', message, requestId },
      });
      socket.end(
        `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nX-Request-Id: ${requestId}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    });
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
  const workersReady = remoteWorkersReady(temporal, config.temporalNamespace, [
    config.taskQueues.platform,
    config.taskQueues.browser,
  ]);
  const server = await listen(
    {
      db,
      temporal,
      config,
      policy: networkPolicyFromConfig(config),
      social: socialPlatformsFromConfig(config),
      readiness: readinessProbe(db, temporal, workersReady),
    },
    config.port,
  );
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
