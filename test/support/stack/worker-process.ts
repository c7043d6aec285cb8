import type { ChildProcess } from 'node:child_process';
import { spawnNode } from './node-process';

/** Starts `workers/worker-process.ts` as its own process and resolves once it polls. */
export async function startWorkerProcess(env: Record<string, string>): Promise<ChildProcess> {
  // A worker resolves the names of user URLs: only through the test's fake DNS (harness env), never the machine's.
  if (!env.DNS_SERVERS) throw new Error('startWorkerProcess needs DNS_SERVERS in env (pass the harness env: h.env)');
  return (await spawnNode('workers/worker-process.ts', env, /worker polling/, 'worker')).child;
}
