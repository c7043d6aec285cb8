import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

/** Starts `workers/worker.ts` as its own process and resolves once it polls. */
export function startWorkerProcess(env: Record<string, string>): Promise<ChildProcess> {
  // A worker resolves the names of user URLs: only through the test's fake DNS (harness env), never the machine's.
  if (!env.DNS_SERVERS) throw new Error('startWorkerProcess needs DNS_SERVERS in env (pass the harness env: h.env)');
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', 'workers/worker.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`worker did not start: ${output}`)), 90_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      if (/worker polling/.test(output)) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`worker exited (${code}): ${output}`)));
  });
}

