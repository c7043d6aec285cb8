import { createServer, type Server } from 'node:http';
import {
  Runtime,
  type Logger as TemporalLogger,
  type LogLevel as TemporalLogLevel,
  type LogMetadata,
} from '@temporalio/worker';
import type { Config } from '../lib/config';
import { log, type Logger } from '../lib/log';
import { processMetrics } from '../lib/metrics';

const JOB_WORKFLOW_ID =
  /^(?:scrape|agentic|automation)-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;
const TEMPORAL_LEVELS: Record<TemporalLogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * Temporal's worker, workflow and activity logs as pino lines; a job's workflow id also gives its jobId.
 * The SDK logs every activity and workflow start and end at debug: a line below the configured level
 * is dropped before any work, and the child logger is made once per process logger, not per line
 * (both showed in the worker's CPU profile under load).
 */
class PinoTemporalLogger implements TemporalLogger {
  private child: { parent: Logger; logger: Logger } | null = null;
  constructor(
    private readonly parent: () => Logger,
    private readonly bindings: Record<string, string>,
  ) {}
  private target(): Logger {
    const parent = this.parent();
    if (this.child?.parent !== parent) this.child = { parent, logger: parent.child(this.bindings) };
    return this.child.logger;
  }
  log(level: TemporalLogLevel, message: string, meta: LogMetadata = {}): void {
    const pinoLevel = TEMPORAL_LEVELS[level] ?? 'info';
    const logger = this.target();
    if (!logger.isLevelEnabled(pinoLevel)) return;
    const { error, ...rest } = meta as LogMetadata & { error?: unknown };
    const jobId = typeof rest.workflowId === 'string' ? JOB_WORKFLOW_ID.exec(rest.workflowId)?.[1] : undefined;
    logger[pinoLevel]({ ...rest, ...(jobId && { jobId }), ...(error !== undefined && { err: error }) }, message);
  }
  trace = (message: string, meta?: LogMetadata) => this.log('TRACE', message, meta);
  debug = (message: string, meta?: LogMetadata) => this.log('DEBUG', message, meta);
  info = (message: string, meta?: LogMetadata) => this.log('INFO', message, meta);
  warn = (message: string, meta?: LogMetadata) => this.log('WARN', message, meta);
  error = (message: string, meta?: LogMetadata) => this.log('ERROR', message, meta);
}

/**
 * Installs the Temporal runtime of a worker process (once, before any connection): its logs go
 * through pino, and with WORKER_METRICS_PORT its own metrics (workers, task slots, polls,
 * workflow and activity latencies) are served in Prometheus format on WORKER_METRICS_HOST:PORT.
 */
export function installWorkerRuntime(config: Config): void {
  const { workerHost, workerPort } = config.metrics;
  Runtime.install({
    logger: new PinoTemporalLogger(log, { component: 'temporal' }),
    telemetryOptions:
      workerPort === null ? {} : { metrics: { prometheus: { bindAddress: `${workerHost}:${workerPort}` } } },
  });
  if (workerPort !== null)
    log().info({ bindAddress: `${workerHost}:${workerPort}` }, 'Temporal worker metrics exported');
}

/** `npm run worker`'s own series (lib/metrics) on WORKER_APP_METRICS_PORT, when set. */
export function serveProcessMetrics(config: Config): Promise<Server | null> {
  const { workerHost, workerAppPort } = config.metrics;
  if (workerAppPort === null) return Promise.resolve(null);
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    processMetrics.metrics().then(
      (text) => res.writeHead(200, { 'content-type': processMetrics.contentType }).end(text),
      (err) => {
        log().error({ err }, 'metrics collection failed');
        res.writeHead(500).end();
      },
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(workerAppPort, workerHost, () => {
      log().info({ address: `${workerHost}:${workerAppPort}` }, 'worker process metrics served at /metrics');
      resolve(server);
    });
  });
}
