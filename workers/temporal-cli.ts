import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** Where scripts/setup.sh builds the Temporal CLI: outside the clone, so fresh clones reuse it. */
export const TEMPORAL_CLI_CACHE = path.join(
  process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'),
  'scrape-platform',
  'bin',
  'temporal',
);

export function findTemporalCli(): string {
  const candidates = [process.env.TEMPORAL_CLI_PATH, TEMPORAL_CLI_CACHE].filter((p): p is string => !!p);
  for (const candidate of candidates) if (existsSync(candidate)) return candidate;
  try {
    return execFileSync('sh', ['-c', 'command -v temporal'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(
      'The Temporal CLI was not found. Run `npm run setup` (builds it with Go into ~/.cache/scrape-platform/bin) or put `temporal` on PATH.',
    );
  }
}

/** A port the dev server was asked to listen on is already taken (by anything: another dev server, any program). */
export class PortInUseError extends Error {
  constructor(
    readonly port: number,
    readonly role: 'frontend' | 'ui',
  ) {
    super(
      `port ${port} on 127.0.0.1 (the Temporal dev server's ${role === 'frontend' ? 'frontend' : 'Web UI'}) is already in use`,
    );
  }
}

/** True when something accepts connections on 127.0.0.1:port, or holds it so that it cannot be bound. */
export async function portInUse(port: number): Promise<boolean> {
  const accepts = await new Promise<boolean>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
  if (accepts) return true;
  return new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(true));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => server.close(() => resolve(false)));
  });
}

/** Throws PortInUseError for the first of the dev server's ports that is taken. */
export async function assertDevServerPortsFree(options: { port: number; uiPort: number | null }): Promise<void> {
  if (await portInUse(options.port)) throw new PortInUseError(options.port, 'frontend');
  if (options.uiPort !== null && (await portInUse(options.uiPort))) throw new PortInUseError(options.uiPort, 'ui');
}

/**
 * The dynamic config the dev server runs with; docker-compose's Temporal loads the same keys and values
 * (test/platform/config.test.ts holds them together, docs/operations.md tells other servers).
 */
export const DEV_SERVER_DYNAMIC_CONFIG = {
  // Eager activity execution (off by default in the server): an activity a workflow task schedules on
  // its own task queue comes back in the task's completion response, skipping a trip through matching.
  'system.enableActivityEagerExecution': true,
  // Reads of the history shard's transfer queue (the queue that hands every new workflow task and
  // non-eager activity to matching) are rate-limited per shard, 20 reads a second by default. The dev
  // server has one shard, so at a few workflow tasks in flight every new task waited for the limiter:
  // 28-35 ms between a workflow task's schedule and its start, two per agent tool call (bench:tools,
  // docs/benchmarks.md "Dispatch"). Each read still takes up to a batch of tasks.
  'history.transferProcessorMaxPollRPS': 1000,
} as const;

export interface DevServer {
  address: string;
  uiUrl: string | null;
  /** Its Prometheus metrics (the Go runtime's memory and goroutines among them), as it printed them; null if it did not. */
  metricsUrl: string | null;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts `temporal server start-dev`, persisting to a SQLite file when `dbFile` is given. Ready when this
 * child says it serves (its `Server: host:port` line), never because something else answers on the port:
 * a taken port is a PortInUseError before the start, and a child that cannot bind exits with its reason.
 */
export async function startTemporalDevServer(options: {
  port: number;
  uiPort: number | null;
  dbFile?: string;
  namespace?: string;
}): Promise<DevServer> {
  await assertDevServerPortsFree(options);
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--log-level',
    'error',
    '--namespace',
    options.namespace ?? 'default',
  ];
  for (const [key, value] of Object.entries(DEV_SERVER_DYNAMIC_CONFIG))
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  if (options.uiPort === null) args.push('--headless');
  else args.push('--ui-port', String(options.uiPort));
  if (options.dbFile) {
    mkdirSync(path.dirname(options.dbFile), { recursive: true });
    args.push('--db-filename', options.dbFile);
  }
  const child = spawn(findTemporalCli(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout = (stdout + chunk).slice(-4000)));
  child.stderr!.on('data', (chunk) => (stderr = (stderr + chunk).slice(-4000)));
  const serving = new RegExp(`^Server:\\s+\\S+:${options.port}\\s*$`, 'm');
  const deadline = Date.now() + 60_000;
  while (!serving.test(stdout)) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(
        `temporal server start-dev exited (${child.exitCode ?? child.signalCode}): ${stderr.trim() || stdout.trim()}`,
      );
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(
        `temporal server start-dev did not serve on port ${options.port} within 60s: ${stderr.trim() || stdout.trim()}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  // The metrics line follows the server's (the CLI prints both at once); a CLI that prints none gets null.
  const metricsLine = /^Metrics:\s+(http:\/\/\S+)\s*$/m;
  for (const until = Date.now() + 1000; !metricsLine.test(stdout) && Date.now() < until;)
    await new Promise((r) => setTimeout(r, 50));
  return {
    address: `127.0.0.1:${options.port}`,
    metricsUrl: metricsLine.exec(stdout)?.[1] ?? null,
    uiUrl: options.uiPort === null ? null : `http://127.0.0.1:${options.uiPort}`,
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
  };
}
