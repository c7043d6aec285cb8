import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { startTemporalDevServer, type DevServer } from '../../workers/temporal-cli';
import { freePort } from '../support/stack/ports';

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * `npm start`'s process (node --import tsx workers/dev.ts) in a process group of its own, with its output
 * collected: `exited` resolves with its exit code.
 */
interface Instance {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function startInstance(env: Record<string, string>): Instance {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name, value]) => value !== undefined && !['DATABASE_URL', 'TEMPORAL_ADDRESS', 'ADMIN_URL'].includes(name),
    ),
  ) as Record<string, string>;
  const child = spawn(process.execPath, ['--import', 'tsx', 'workers/dev.ts'], {
    cwd: ROOT,
    env: { ...inherited, ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

function killGroup(instance: Instance | undefined): void {
  if (!instance?.child.pid) return;
  try {
    process.kill(-instance.child.pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

/** A process with this pid runs (a zombie waiting to be reaped does not). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function until<T>(
  what: string,
  probe: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  timeoutMs = 240_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function instanceEnv(dataDir: string): Promise<Record<string, string>> {
  const [port, temporalPort, uiPort] = [await freePort(), await freePort(), await freePort()];
  return {
    DATA_DIR: dataDir,
    PORT: String(port),
    TEMPORAL_DEV_PORT: String(temporalPort),
    TEMPORAL_UI_PORT: String(uiPort),
    NETWORK_ALLOWLIST: '127.0.0.1',
  };
}

describe('npm start: the embedded Temporal dev server is its own', function () {
  this.timeout(300_000);
  const dataDirs: string[] = [];
  const instances: Instance[] = [];
  const newDataDir = () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'embedded-temporal-'));
    dataDirs.push(dir);
    return dir;
  };
  const start = (env: Record<string, string>) => {
    const instance = startInstance(env);
    instances.push(instance);
    return instance;
  };

  after(function () {
    for (const instance of instances) killGroup(instance);
    for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
  });

  describe('a taken port stops the start with an error naming the variable that moves it', function () {
    let other: DevServer;
    let listener: Server;
    let listenerPort: number;

    before(async function () {
      // Another instance's dev server, and an unrelated program holding a port.
      other = await startTemporalDevServer({ port: await freePort(), uiPort: null });
      listener = createServer((socket) => socket.destroy());
      await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
      listenerPort = (listener.address() as { port: number }).port;
    });

    after(async function () {
      await other?.stop();
      await new Promise((resolve) => listener?.close(resolve));
    });

    it("TEMPORAL_DEV_PORT on another instance's dev server: the start fails, and nothing polls that server", async function () {
      const otherPort = Number(other.address.split(':')[1]);
      const env: Record<string, string> = {
        ...(await instanceEnv(newDataDir())),
        TEMPORAL_DEV_PORT: String(otherPort),
      };
      const instance = start(env);
      assert.equal(await instance.exited, 1, instance.output());
      assert.match(
        instance.output(),
        new RegExp(`TEMPORAL_DEV_PORT=${otherPort}: port ${otherPort} on 127\\.0\\.0\\.1 .* is already in use`),
      );
      assert.ok(!existsSync(path.join(env.DATA_DIR!, 'temporal.db')), 'no dev server of its own was started');
      const connection = await Connection.connect({ address: other.address });
      try {
        for (const name of ['platform', 'browser']) {
          const queue = await connection.workflowService.describeTaskQueue({
            namespace: 'default',
            taskQueue: { name },
          });
          assert.deepEqual(queue.pollers, [], `something polled ${name} on the other server`);
        }
      } finally {
        await connection.close();
      }
    });

    it('TEMPORAL_DEV_PORT on any other program: the start fails naming it', async function () {
      const instance = start({ ...(await instanceEnv(newDataDir())), TEMPORAL_DEV_PORT: String(listenerPort) });
      assert.equal(await instance.exited, 1, instance.output());
      assert.match(instance.output(), new RegExp(`TEMPORAL_DEV_PORT=${listenerPort}: .*already in use`));
    });

    it('TEMPORAL_UI_PORT taken: the start fails naming it', async function () {
      const instance = start({ ...(await instanceEnv(newDataDir())), TEMPORAL_UI_PORT: String(listenerPort) });
      assert.equal(await instance.exited, 1, instance.output());
      assert.match(
        instance.output(),
        new RegExp(
          `TEMPORAL_UI_PORT=${listenerPort}: port ${listenerPort} on 127\\.0\\.0\\.1 \\(the Temporal dev server's Web UI\\) is already in use`,
        ),
      );
    });
  });

  it('restarts over the dev server a killed instance left running, and refuses a second instance on the same DATA_DIR', async function () {
    const env = await instanceEnv(newDataDir());
    const record = () =>
      JSON.parse(readFileSync(path.join(env.DATA_DIR, 'temporal-dev.json'), 'utf8')) as {
        pid: number;
        ownerPid: number;
      };
    const serving = (instance: Instance) =>
      until('the dev server to serve', () =>
        instance.output().includes(`Temporal dev server on 127.0.0.1:${env.TEMPORAL_DEV_PORT}`),
      );

    const first = start(env);
    await serving(first);
    const firstServer = record().pid;
    assert.equal(record().ownerPid, first.child.pid);

    // Another instance on the same DATA_DIR (its own ports) while the first runs: refused before it opens anything.
    const second = start({ ...(await instanceEnv(env.DATA_DIR)), DATA_DIR: env.DATA_DIR });
    assert.equal(await second.exited, 1, second.output());
    assert.match(
      second.output(),
      new RegExp(
        `DATA_DIR ${env.DATA_DIR.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by another npm start \\(pid ${first.child.pid}`,
      ),
    );
    assert.ok(running(firstServer), "the first instance's dev server was left alone");

    // The first instance dies without a chance to stop its dev server, which keeps its port.
    process.kill(first.child.pid!, 'SIGKILL');
    await first.exited;
    assert.ok(running(firstServer), 'the dev server outlived its owner');

    const restarted = start(env);
    await serving(restarted);
    assert.match(
      restarted.output(),
      new RegExp(
        `stopping the Temporal dev server \\(pid ${firstServer}\\) that an earlier npm start of this DATA_DIR left running`,
      ),
    );
    assert.ok(!running(firstServer), 'the leftover dev server is gone');
    assert.notEqual(record().pid, firstServer);
    assert.equal(record().ownerPid, restarted.child.pid);
    const restartedServer = record().pid;

    await until('the restarted instance to be ready', () => restarted.output().includes('workers running; ready'));
    process.kill(restarted.child.pid!, 'SIGTERM');
    assert.equal(await restarted.exited, 0, restarted.output().slice(-4000));
    assert.ok(!running(restartedServer), 'its dev server stopped with it');
    assert.ok(!existsSync(path.join(env.DATA_DIR, 'temporal-dev.json')), 'the record is removed on a clean stop');
  });
});
