import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `npm run --silent admin -- ...args` with the given environment, as an operator types it. */
export function runAdmin(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  // Whatever the CLI resolves goes to the test's fake DNS on loopback, never the machine's nameserver.
  if (!env.DNS_SERVERS) throw new Error('runAdmin needs DNS_SERVERS in env (a test/support/fakes/fake-dns.ts server)');
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', 'admin', '--', ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk) => (stdout += chunk));
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Exactly one line of JSON on stdout and exit 0: what every admin command promises. */
export function oneJsonLine(result: CliResult): any {
  assert.equal(result.code, 0, `admin CLI failed (${result.code}): ${result.stderr}`);
  const lines = result.stdout.split('\n');
  assert.equal(lines.length, 2, `expected one line, got ${JSON.stringify(result.stdout.slice(0, 500))}`);
  assert.equal(lines[1], '');
  return JSON.parse(lines[0]);
}
