import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/**
 * Starts a TypeScript entry point of this repository as its own Node process; resolves when its output matches
 * `ready`. `nodeArgs` follow tsx's loader, so a `--require` of a TypeScript module works.
 */
export function spawnNode(
  script: string,
  env: Record<string, string>,
  ready: RegExp,
  label: string,
  nodeArgs: string[] = [],
  startTimeoutMs = 90_000,
): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', ...nodeArgs, script], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    let started = false;
    const timer = setTimeout(() => reject(new Error(`${label} did not start: ${output}`)), startTimeoutMs);
    const onData = (chunk: Buffer) => {
      if (started) return; // keep draining the pipe, nothing more
      output = (output + chunk).slice(-8000);
      const match = ready.exec(output);
      if (match) {
        started = true;
        clearTimeout(timer);
        resolve({ child, match });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${label} exited (${code}): ${output}`)));
  });
}

/** Stops a child process (SIGTERM, then SIGKILL after 20 s). */
export function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 20_000).unref();
  });
}
