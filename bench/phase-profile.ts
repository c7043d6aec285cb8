import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Session } from 'node:inspector/promises';

/**
 * BENCH_CPU_PROF=<dir>: a CPU profile of this process (the API in it and the benchmark's clients)
 * during one phase only, written to <dir>/<name>.cpuprofile (summarize it with
 * bench/cpu-profile-summary.ts). Without the variable the phase just runs.
 */
export async function profiledPhase<T>(name: string, run: () => Promise<T>): Promise<T> {
  const dir = process.env.BENCH_CPU_PROF;
  if (!dir) return run();
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
    try {
      return await run();
    } finally {
      const { profile } = await session.post('Profiler.stop');
      mkdirSync(dir, { recursive: true });
      const file = path.join(dir, `${name}.cpuprofile`);
      writeFileSync(file, JSON.stringify(profile));
      process.stderr.write(`[bench] CPU profile of the ${name} phase: ${file}\n`);
    }
  } finally {
    session.disconnect();
  }
}
