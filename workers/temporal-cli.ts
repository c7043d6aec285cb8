import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** Where scripts/setup.sh builds the Temporal CLI: outside the clone, so fresh clones reuse it. */
export const TEMPORAL_CLI_CACHE = path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'scrape-platform', 'bin', 'temporal');

export function findTemporalCli(): string {
  const candidates = [process.env.TEMPORAL_CLI_PATH, TEMPORAL_CLI_CACHE].filter((p): p is string => !!p);
  for (const candidate of candidates) if (existsSync(candidate)) return candidate;
  try {
    return execFileSync('sh', ['-c', 'command -v temporal'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('The Temporal CLI was not found. Run `npm run setup` (builds it with Go into ~/.cache/scrape-platform/bin) or put `temporal` on PATH.');
  }
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

export interface DevServer {
  address: string;
  uiUrl: string | null;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `temporal server start-dev`, persisting to a SQLite file when `dbFile` is given, and waits for its port. */
export async function startTemporalDevServer(options: { port: number; uiPort: number | null; dbFile?: string; namespace?: string }): Promise<DevServer> {
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(options.port), '--log-level', 'error', '--namespace', options.namespace ?? 'default'];
  // Eager activity execution (off by default in the server): an activity a workflow task schedules on
  // its own task queue comes back in the task's completion response, skipping a trip through matching.
  args.push('--dynamic-config-value', 'system.enableActivityEagerExecution=true');
  if (options.uiPort === null) args.push('--headless');
  else args.push('--ui-port', String(options.uiPort));
  if (options.dbFile) {
    mkdirSync(path.dirname(options.dbFile), { recursive: true });
    args.push('--db-filename', options.dbFile);
  }
  const child = spawn(findTemporalCli(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr = (stderr + chunk).slice(-4000)));
  const deadline = Date.now() + 60_000;
  while (!(await portOpen(options.port))) {
    if (child.exitCode !== null) throw new Error(`temporal server start-dev exited (${child.exitCode}): ${stderr}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`temporal server start-dev did not open port ${options.port} within 60s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    address: `127.0.0.1:${options.port}`,
    uiUrl: options.uiPort === null ? null : `http://127.0.0.1:${options.uiPort}`,
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
  };
}
