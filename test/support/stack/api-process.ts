import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from './ports';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/** `api/server.ts` (`npm run api`) as its own process, as deployed; resolves once /health answers. */
export async function startApiProcess(
  env: Record<string, string>,
  nodeArgs: string[] = [],
): Promise<{ child: ChildProcess; baseUrl: string; stop: () => Promise<void> }> {
  // The API resolves the names of user URLs: only through the test's fake DNS (harness env), never the machine's.
  if (!env.DNS_SERVERS) throw new Error('startApiProcess needs DNS_SERVERS in env (pass the harness env: h.env)');
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeArgs, '--require', 'tsx/cjs', 'api/server.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: env.LOG_LEVEL ?? 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output = (output + chunk).slice(-4000)));
  child.stderr!.on('data', (chunk) => (output = (output + chunk).slice(-4000)));
  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode !== null) return;
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  };
  for (const deadline = Date.now() + 90_000; ;) {
    if (child.exitCode !== null) throw new Error(`the API process exited (${child.exitCode}): ${output}`);
    const up = await fetch(`${baseUrl}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return { child, baseUrl, stop };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the API process did not answer /health: ${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
