import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../lib/config';
import { log } from '../lib/log';
import {
  assertDevServerPortsFree,
  portInUse,
  PortInUseError,
  startTemporalDevServer,
  type DevServer,
} from './temporal-cli';

/**
 * The Temporal dev server of `npm start`: state in DATA_DIR/temporal.db, ports TEMPORAL_DEV_PORT and
 * TEMPORAL_UI_PORT. It is always this instance's own server: a taken port stops the start with an error
 * naming the variable (a second instance never joins the first one's server and takes its tasks).
 *
 * DATA_DIR/temporal-dev.json records the running dev server (its pid and the pid of the `npm start` that
 * owns it). A dev server of this DATA_DIR whose owner died (killed without a chance to stop it) is stopped
 * and replaced at the next start, so restarting the same checkout keeps working; one whose owner still
 * runs means DATA_DIR is in use by another instance.
 */
export interface EmbeddedTemporal {
  start(): Promise<DevServer>;
}

interface Ownership {
  pid: number;
  ownerPid: number;
}

export async function prepareEmbeddedTemporal(config: Config): Promise<EmbeddedTemporal> {
  const dbFile = path.join(config.dataDir, 'temporal.db');
  const recordFile = path.join(config.dataDir, 'temporal-dev.json');
  const ports = { port: config.temporalDevPorts.frontend, uiPort: config.temporalDevPorts.ui };

  if (await stopLeftover(recordFile, dbFile, config.dataDir)) {
    // The stopped server's sockets may outlive it for a moment (seen in CI): its ports get a few seconds.
    for (const until = Date.now() + 10_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100)))
      if (!(await portInUse(ports.port)) && (ports.uiPort === null || !(await portInUse(ports.uiPort)))) break;
  }
  await explained(() => assertDevServerPortsFree(ports));
  return {
    async start() {
      const server = await explained(() =>
        startTemporalDevServer({ ...ports, dbFile, namespace: config.temporalNamespace }),
      );
      writeFileSync(
        recordFile,
        JSON.stringify({ pid: server.process.pid!, ownerPid: process.pid } satisfies Ownership),
      );
      return {
        ...server,
        stop: async () => {
          await server.stop();
          rmSync(recordFile, { force: true });
        },
      };
    },
  };
}

/** A taken port as an error that says which variable moves it. */
async function explained<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (!(err instanceof PortInUseError)) throw err;
    const variable = err.role === 'frontend' ? 'TEMPORAL_DEV_PORT' : 'TEMPORAL_UI_PORT';
    throw new Error(
      `${variable}=${err.port}: ${err.message} — by another npm start's Temporal dev server or another program. ` +
        'Each npm start on one machine needs its own TEMPORAL_DEV_PORT and TEMPORAL_UI_PORT (and PORT and DATA_DIR): set free ones, ' +
        'or set TEMPORAL_ADDRESS to use a Temporal server you run.',
    );
  }
}

/** Stops the dev server an earlier npm start of this DATA_DIR left running; true when it stopped one. */
async function stopLeftover(recordFile: string, dbFile: string, dataDir: string): Promise<boolean> {
  const record = readRecord(recordFile);
  if (!record) return false;
  const serverProcess = processInfo(record.pid);
  // Gone, or the pid now belongs to something else: nothing of ours is running.
  if (!serverProcess || !serverProcess.command.includes('start-dev') || !serverProcess.command.includes(dbFile)) {
    rmSync(recordFile, { force: true });
    return false;
  }
  if (serverProcess.parentPid === record.ownerPid && processInfo(record.ownerPid)) {
    throw new Error(
      `DATA_DIR ${dataDir} is in use by another npm start (pid ${record.ownerPid}, its Temporal dev server pid ${record.pid}): give each instance its own DATA_DIR (and ports).`,
    );
  }
  log().warn(
    `stopping the Temporal dev server (pid ${record.pid}) that an earlier npm start of this DATA_DIR left running`,
  );
  await terminate(record.pid);
  rmSync(recordFile, { force: true });
  return true;
}

function readRecord(file: string): Ownership | null {
  if (!existsSync(file)) return null;
  try {
    const value = JSON.parse(readFileSync(file, 'utf8')) as Partial<Ownership>;
    return Number.isInteger(value.pid) && Number.isInteger(value.ownerPid) ? (value as Ownership) : null;
  } catch {
    return null;
  }
}

/** The command line and parent of a running process, or null when there is none with this pid (a zombie is none). */
function processInfo(pid: number): { command: string; parentPid: number } | null {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return null;
  }
  try {
    let state: string;
    let parentPid: number;
    let command: string;
    if (process.platform === 'linux') {
      // /proc/<pid>/stat: "pid (name) state ppid ..."; the name may hold spaces and parentheses.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      [state, parentPid] = [fields[0] ?? '', Number(fields[1])];
      command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
    } else {
      const [stat, parent, ...words] = execFileSync('ps', ['-o', 'stat=,ppid=,command=', '-p', String(pid)], {
        encoding: 'utf8',
      })
        .trim()
        .split(/\s+/);
      [state, parentPid, command] = [stat ?? '', Number(parent), words.join(' ')];
    }
    return state.startsWith('Z') ? null : { command, parentPid };
  } catch {
    return null;
  }
}

async function terminate(pid: number): Promise<void> {
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(pid, name);
    } catch {
      /* already gone */
    }
  };
  signal('SIGTERM');
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    if (!processInfo(pid)) return;
  }
  signal('SIGKILL');
  for (const deadline = Date.now() + 5_000; Date.now() < deadline && processInfo(pid);)
    await new Promise((r) => setTimeout(r, 100));
}
